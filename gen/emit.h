/* SPDX-License-Identifier: Apache-2.0 */
/* The set of files one gen run produces, built in memory first and written only when all
   of it is complete (outdir.c), so that a failed run writes nothing. */
#ifndef GEN_EMIT_H
#define GEN_EMIT_H

#include <stddef.h>

#include "config.h"
#include "strbuf.h"

#define GEN_MAX_FILES 64
/* The manifest gen writes into each output directory: the names of the other files it wrote
   there (emit.c), read back by the next run to know which files are its own (outdir.c). */
#define GEN_MANIFEST "tpu_manifest.txt"

struct gen_file {
    const char *name; /* file name inside the output directory */
    int constraint;   /* an FPGA constraint file: written into --constraints-dir if given */
    struct strbuf text;
};

struct gen_output {
    struct gen_file files[GEN_MAX_FILES];
    size_t count;
};

void gen_output_init(struct gen_output *out);
void gen_output_free(struct gen_output *out);
/* Adds a file whose text starts with the common header (SPDX line, "generated" line,
   command line, version, parameters) followed by `what` (one line saying what the file
   is); returns the buffer to append the body to, NULL if there are too many files. */
struct strbuf *gen_output_add(struct gen_output *out, const struct gen_config *cfg,
                              const char *name, const char *what);
/* The same for a file whose comments start with `comment` ("#" for Tcl and YAML), after an
   optional first line that must come before any comment (a FuseSoC .core's "CAPI=2:"). */
struct strbuf *gen_output_add_ex(struct gen_output *out, const struct gen_config *cfg,
                                 const char *name, const char *what, const char *comment,
                                 const char *first_line);
/* Nonzero if building any file ran out of memory. */
int gen_output_failed(const struct gen_output *out);
/* Appends one line of static SystemVerilog and a newline; GEN_ITER_MSB in it becomes the
   msb of the loop-index vector, 16 x TPU_LOOP_LEVELS - 1 (tr_disp_iter_o: a number, not a
   package constant, so that every tool reading the ports sees a plain width). */
#define GEN_ITER_MSB "@ITER_MSB@"
void gen_put_line(struct strbuf *sb, const char *line);

/* Emitters: each adds its file(s). emit_arith.c */
int emit_bf16_mul(struct gen_output *out, const struct gen_config *cfg);
int emit_fp32_add(struct gen_output *out, const struct gen_config *cfg);
/* fp32_add(acc, bf16_mul(act, w)), bit for bit, as one smaller block (the PE's
   multiply-accumulate, with the multiplier fused into the adder), or a pipeline stage of it,
   for a module that runs it inside a clock enable (tpu_pe): appends `begin : name` (not
   indented) ... `end` (at `indent`), the text as blocking assignments to variables local to
   the block, reading the io signals and assigning out, which the caller declares; -1 on an
   internal inconsistency. MAC_FULL: out = the whole of it from acc, act, w; MAC_MUL: out = the
   product's classes and fields (MAC_PROD_BITS) from act, w; MAC_ADD: out = the sum from acc
   and prod (a MAC_MUL result); MAC_ADD_ALIGN: out = the adder's first half (MAC_MID_BITS)
   from acc and prod; MAC_ADD_NORM: out = the sum from mid (a MAC_ADD_ALIGN result). Every
   field of io must be a signal name ("" where the part does not read it). */
enum mac_part { MAC_FULL, MAC_MUL, MAC_ADD, MAC_ADD_ALIGN, MAC_ADD_NORM };
#define MAC_PROD_BITS 27
#define MAC_MID_BITS 41
struct mac_io {
    const char *acc, *act, *w, *prod, *mid, *out;
};
int emit_arith_mac(struct strbuf *sb, enum mac_part part, const char *name,
                   const struct mac_io *io, unsigned indent);
/* emit_mxu.c */
int emit_pe(struct gen_output *out, const struct gen_config *cfg);
int emit_mxu_row(struct gen_output *out, const struct gen_config *cfg);
int emit_mxu(struct gen_output *out, const struct gen_config *cfg);
int emit_filelist(struct gen_output *out, const struct gen_config *cfg);
int emit_vlt(struct gen_output *out, const struct gen_config *cfg);
int emit_params_h(struct gen_output *out, const struct gen_config *cfg);
/* emit_vpu_units.c, emit_vpu.c */
int emit_vpu_units(struct gen_output *out, const struct gen_config *cfg);
int emit_vpu(struct gen_output *out, const struct gen_config *cfg);
int emit_vpu_filelist(struct gen_output *out, const struct gen_config *cfg);
int emit_vpu_vlt(struct gen_output *out, const struct gen_config *cfg);
/* The core's host ports (docs/isa.md "Host interface"), in port order, defined once in
   emit_core.c for tpu_core, tpu_top and tpu_board: the AXI4-Lite control slave (s_axil_*) and
   the AXI4 data master (m_axi_*). bits: the width, or GEN_AXI_DATA (the data master's width,
   --axi-data-bits) or GEN_AXI_STRB (its byte strobes). */
#define GEN_AXI_DATA 0x10000u
#define GEN_AXI_STRB 0x10001u
struct gen_axi_port {
    const char *name;
    int out;       /* 1: an output of the core */
    unsigned bits; /* 1 for one bit */
};
#define GEN_AXIL_PORTS 17
/* The AXI4-Lite slave's byte address width, the same for every configuration (docs/isa.md
   "AXI4-Lite slave"): 1 MiB, the smallest power-of-two window that holds the registers and
   the largest IMEM gen allows (0x4000 + 16 * GEN_IMEM_INSNS_MAX = 0x84000 > 2^19). */
#define GEN_AXIL_ADDR_BITS 20u
_Static_assert(0x4000u + 16u * GEN_IMEM_INSNS_MAX <= (1u << GEN_AXIL_ADDR_BITS),
               "the AXI4-Lite window must reach the last instruction of the largest IMEM");
#define GEN_AXI_PORTS 25
extern const struct gen_axi_port gen_axil_ports[GEN_AXIL_PORTS];
extern const struct gen_axi_port gen_axi_ports[GEN_AXI_PORTS];
/* Appends the AXI4-Lite slave's port declarations, "  input  logic [19:0]       name,", the
   width column `col` characters wide; addr_w replaces the address width ("[AddrW-1:0]") unless
   NULL. */
void emit_axil_ports(struct strbuf *sb, const char *addr_w, int col);
/* A host port's width as a Verilog expression: "AxiDataW", "AxiDataW/8", the number of bits,
   or "" for one bit. */
void gen_axi_width(char *buf, size_t n, const struct gen_axi_port *p);

/* emit_fpga.c: the reset synchroniser, the top, its file list, the FPGA constraints
   (tpu_top.xdc, tpu_top.sdc, tpu_top.pcf) and the FuseSoC core file (tpu.core); docs/fpga.md */
int emit_rst_sync(struct gen_output *out, const struct gen_config *cfg);
int emit_top(struct gen_output *out, const struct gen_config *cfg);
int emit_top_filelist(struct gen_output *out, const struct gen_config *cfg);
int emit_constraints(struct gen_output *out, const struct gen_config *cfg);
int emit_fusesoc_core(struct gen_output *out, const struct gen_config *cfg);
/* The core's memories, control registers and DMA (docs/isa.md): tpu_sram.sv (emit_sram.c),
   tpu_core_regs.sv (emit_core_regs.c), tpu_core_dma.sv (emit_core_dma.c) */
int emit_sram(struct gen_output *out, const struct gen_config *cfg);
int emit_core_regs(struct gen_output *out, const struct gen_config *cfg);
int emit_core_dma(struct gen_output *out, const struct gen_config *cfg);
/* The core (emitted when vpu_lanes == n): tpu_core_seq.sv (emit_core_seq.c), tpu_core_mx.sv
   (emit_core_mx.c), tpu_core_vctl.sv (emit_core_vctl.c), tpu_core.sv, tpu_core.f and
   tpu_core.vlt (emit_core.c; the .vlt after tpu_mxu.vlt and tpu_vpu.vlt, whose rules it copies) */
/* tpu_isa_pkg.sv: the ISA's codes from cmodel's tpu/isa.h (emit_isa_pkg.c), first of the
   core's sources */
int emit_isa_pkg(struct gen_output *out, const struct gen_config *cfg);
int emit_core_seq(struct gen_output *out, const struct gen_config *cfg);
int emit_core_mx(struct gen_output *out, const struct gen_config *cfg);
int emit_core_vctl(struct gen_output *out, const struct gen_config *cfg);
/* tpu_core_coll.sv, the core's network unit (docs/board.md), emit_core_coll.c */
int emit_core_coll(struct gen_output *out, const struct gen_config *cfg);
int emit_core(struct gen_output *out, const struct gen_config *cfg);
int emit_core_filelist(struct gen_output *out, const struct gen_config *cfg);
int emit_core_vlt(struct gen_output *out, const struct gen_config *cfg);
/* The core's lines of tpu_params.h (called by emit_params_h; nothing without a core). */
void emit_core_params(struct strbuf *sb, const struct gen_config *cfg);
/* The board interconnect (docs/board.md), emit_noc.c: tpu_link.sv, tpu_router.sv, tpu_noc.sv,
   tpu_noc.f, tpu_noc.vlt */
int emit_link(struct gen_output *out, const struct gen_config *cfg);
int emit_router(struct gen_output *out, const struct gen_config *cfg);
int emit_noc(struct gen_output *out, const struct gen_config *cfg);
int emit_noc_filelist(struct gen_output *out, const struct gen_config *cfg);
int emit_noc_vlt(struct gen_output *out, const struct gen_config *cfg);
/* The board top (docs/board.md "The board top"), emit_board.c: tpu_board_axil.sv,
   tpu_board.sv, tpu_board.f, tpu_board.vlt (after the core's and the NoC's files) */
int emit_board_all(struct gen_output *out, const struct gen_config *cfg);
/* The VPU's lines of tpu_params.h (called by emit_params_h). */
void emit_vpu_params(struct strbuf *sb, const struct gen_config *cfg);

/* Every emitter in order; 0 on success, -1 on failure (out of memory). */
int gen_emit_all(struct gen_output *out, const struct gen_config *cfg);

#endif
