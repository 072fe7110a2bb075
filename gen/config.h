/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration gen is asked for, the limits on it, and the timing it implies. */
#ifndef GEN_CONFIG_H
#define GEN_CONFIG_H

#include "tpu/config.h" /* the defaults, shared with the model, tools and compiler */

#include "tpu/cli.h" /* the limits every tool shares (TPU_LIM_*) */

#define GEN_VERSION "0.1.0"

#define GEN_MXU_MIN 1u
#define GEN_MXU_MAX TPU_LIM_MXU_MAX
#define GEN_MXU_DEFAULT TPU_CFG_MXU_DEFAULT /* tpu/config.h: the TPU's 128 x 128 array */
#define GEN_CORES_MIN 1u
#define GEN_CORES_MAX TPU_LIM_CORES_MAX
#define GEN_CORES_DEFAULT TPU_CFG_CORES_DEFAULT /* a TPU v2 board */
#define GEN_PE_STAGES_MIN 1u
#define GEN_PE_STAGES_MAX TPU_LIM_PE_STAGES_MAX /* 1: MAC in one cycle; 2: + product register; 3: + split adder */
#define GEN_PE_STAGES_DEFAULT 1u
#define GEN_VPU_LANES_MIN 1u
#define GEN_VPU_LANES_MAX TPU_LIM_MXU_MAX /* default: the MXU's N */
#define GEN_FREQ_MHZ_MIN 1u
#define GEN_FREQ_MHZ_MAX 1000u
#define GEN_FREQ_MHZ_DEFAULT 100u /* the clock the constraints ask for (docs/fpga.md) */
#define GEN_LINK_BITS_MIN 32u  /* board links (docs/board.md): the header flit needs 32 bits */
#define GEN_LINK_BITS_MAX 1024u
#define GEN_LINK_BITS_DEFAULT 64u
#define GEN_LINK_LATENCY_MIN 0u
#define GEN_LINK_LATENCY_MAX 16u
#define GEN_LINK_LATENCY_DEFAULT 2u
#define GEN_KIB_MIN 1u
#define GEN_KIB_MAX TPU_LIM_KIB_MAX   /* --ub-kib, --acc-kib, --wmem-kib: checked again as rows */
#define GEN_MEM_ROWS_MAX TPU_LIM_MEM_ROWS_MAX /* rows of UB, ACC, WMEM (16-bit row fields, docs/isa.md) */
#define GEN_IMEM_INSNS_MIN 1u
#define GEN_IMEM_INSNS_MAX TPU_LIM_IMEM_INSNS_MAX /* the PC and ERR_PC (= the size on code 6) fit 16 bits */
#define GEN_IMEM_INSNS_DEFAULT TPU_CFG_IMEM_INSNS_DEFAULT
#define GEN_VPU_LATENCY 26u    /* every VPU opcode (tpu_vpu_lane, docs/vpu.md "RTL") */
#define GEN_AXI_DATA_BITS_MIN 64u  /* the core's AXI4 data master: 64, 128, 256 or 512 bits */
#define GEN_AXI_DATA_BITS_MAX 512u /* default: gen_axi_data_bits_default (docs/isa.md) */

/* What was asked for plus everything derived from it. Emitters read only this. */
struct gen_config {
    unsigned n;         /* array size N (N x N PEs) */
    unsigned cores;     /* cores on the board (recorded now, used later) */
    unsigned pe_stages; /* PE pipeline depth: 1, 2 or 3 (docs/mxu.md, "Timing") */
    unsigned freq_mhz;  /* clock frequency the generated constraints ask for, MHz */
    unsigned torus;        /* board topology (docs/board.md): 0 ring, 1 torus */
    unsigned torus_rows;   /* R x S with R*S = cores; a ring is 1 x cores */
    unsigned torus_cols;
    unsigned link_bits;    /* W: flit width of a board link */
    unsigned link_latency; /* D: pipeline registers per link direction */
    /* derived by gen_config_derive() */
    unsigned mul_stages; /* P: registers between the multiplier and the adder (0 or 1) */
    unsigned add_stages; /* A: cycles a partial sum spends in one PE (the adder's depth) */
    unsigned latency;   /* L: a vector presented in cycle t comes out in cycle t + L */
    unsigned busy;      /* B: bank_busy_o[b] is high in cycles t+1 .. t+B */
    unsigned busy_w;    /* width of the bank-busy counters (0 when B = 0) */
    unsigned vpu_lanes;       /* VPU lanes L (0 before gen_config_derive: the MXU's N) */
    unsigned vpu_leaves;      /* L rounded up to a power of two: leaves of the reduction tree */
    unsigned vpu_levels;      /* log2(vpu_leaves): registered tree levels */
    unsigned vpu_latency;     /* elementwise: valid_i in cycle t -> valid_o in t + this */
    unsigned vpu_red_latency; /* reduction: last_i in cycle t -> red_valid_o in t + this */
    /* the core's memories (docs/isa.md "Memories"); KiB 0 = the default size */
    unsigned ub_kib, acc_kib, wmem_kib;
    unsigned imem_insns; /* instructions in IMEM */
    unsigned axi_data_bits; /* the AXI4 data master's width (0 before gen_config_derive: the
                               default for N) */
    unsigned ub_rows, acc_rows, wmem_rows; /* derived: rows of N elements */
    const char *argv_line; /* the command line as typed, for the headers */
    const char *constraints_rel; /* the constraint files' directory relative to the output
                                    directory, as a file-name prefix: "" (the same directory,
                                    the default) or e.g. "../constraints/" (--constraints-dir) */
};

/* Fills in the derived fields from n and pe_stages: S = 1: P = 0, A = 1; S = 2: P = 1, A = 1;
   S = 3: P = 1, A = 2. */
void gen_config_derive(struct gen_config *cfg);

/* Timing of the array, in cycles after the edge that samples the inputs (docs/mxu.md):
   a vector presented in cycle t reaches PE(r, c) in cycle t + 1 + act_skew(r) + c, and the
   seed of column c reaches PE(0, c)'s adder in cycle t + 1 + seed_skew(c). */
unsigned gen_act_skew(const struct gen_config *cfg, unsigned r);
unsigned gen_seed_skew(const struct gen_config *cfg, unsigned c);
/* Registers after the bottom row for column c so that all columns leave together. */
unsigned gen_out_deskew(const struct gen_config *cfg, unsigned c);
/* The default width of the core's AXI4 data master (docs/isa.md "AXI4 master (data)"): the
   smallest power of two >= 4N, clamped to 64..512 (tpu_axi_data_bits_default in the C model). */
unsigned gen_axi_data_bits_default(unsigned n);
/* Smallest number of bits that holds v (1 for v = 0 or 1). */
unsigned gen_bits_for(unsigned v);

#endif
