/* SPDX-License-Identifier: Apache-2.0 */
/* The core's C model (docs/isa.md): executes a program on the host memory image and the
   on-chip memories (UB, ACC, WMEM) bit-exactly, writes the core trace ("Trace (core)") and
   predicts the performance counters with a cycle-level model of "Timing". */
#ifndef TPU_CORE_H
#define TPU_CORE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "tpu/isa.h"
#ifdef __cplusplus
extern "C" {
#endif

/* Configuration: the sizes, the MXU's pipeline stages per PE (1..3, 0 means 1; only the
   timing depends on it), the AXI slave's fixed latency (cycles, 0 means the default 4), the
   width of the AXI4 data master (64, 128, 256 or 512 bits, 0 means
   tpu_axi_data_bits_default(N); only the timing depends on it) and the dispatch policy (only
   the timing depends on it). */
typedef struct {
    tpu_core_geom_t geom;
    unsigned pe_stages;
    unsigned axi_latency;
    unsigned axi_data_bits;
    unsigned dispatch; /* the dispatch policy (docs/isa.md "Timing", "Dispatch policy"):
                          TPU_DISPATCH_RTL (0, the default): exactly the conditions of gen's
                          sequencer (tpu_core_seq), so the counters are the RTL's;
                          TPU_DISPATCH_SERIAL: every instruction waits until every unit is
                          idle; TPU_DISPATCH_OVERLAP: the units overlap as the general rules
                          of "Timing" allow (a machine the RTL does not build) */
    /* The board (docs/board.md): this core's id and the board's shape R x S (C = R*S cores;
       a ring is 1 x C). topo_rows/topo_cols 0 mean 1: the defaults (all 0) are a core on its
       own, id 0, 1 x 1, C = 1, where every collective completes at once without a network
       and send/recv are error 8 (like tpu_top). With C > 1 the collectives need the board
       model (tpu/board.h): tpu_core_run alone stops at the first one (TPU_CORE_STUCK). */
    unsigned core_id;
    unsigned topo_rows, topo_cols;
    /* The run-time bound: no instruction dispatches after cycle max_cycles; the run ends with
       TPU_CORE_LIMIT and err_pc the instruction not dispatched (0: no bound). */
    uint64_t max_cycles;
    /* Per-instruction timing for a predictor (NULL: not recorded). When set, each is an array
       of the program's count entries: after instruction pc executes, insn_done[pc] is the
       cycle by which every instruction up to pc has completed, and insn_mxu[pc] the MXU_BUSY
       counter so far (tpu-compile's per-layer report from one run). */
    uint64_t *insn_done;
    uint64_t *insn_mxu;
    /* When set (count entries): insn_disp[pc] is the cycle instruction pc dispatched in
       (the cycle tpu_core_seq's disp_valid_o is high for it; core_tb --disp-cycles). */
    uint64_t *insn_disp;
    /* When set: one line "PC CYCLE" per dispatched instruction, in dispatch order (a pc in a
       loop body once per iteration; core_tb --disp-cycles writes the same lines). */
    FILE *disp_log;
    /* When set (count entries): insn_end[pc] is the cycle instruction pc itself completed
       in (its unit's last busy cycle; the dispatch cycle for nop, sync, halt and collectives)
       -- tpu-compile's report takes each unit's busy span per layer from it. */
    uint64_t *insn_end;
    /* When set: called once per dynamic instruction, in dispatch order, when it has been
       dispatched and its completion is known (a loop body's instructions once per iteration,
       `loop` and `stride` included): its pc, dispatch cycle, its own completion cycle (as
       insn_end), the cycle by which everything up to it has completed (as insn_done) and
       MXU_BUSY so far. A predictor of a looped program attributes cycles per dynamic
       instruction with it, where the per-pc arrays hold only each pc's last execution. */
    void (*on_insn)(void *ctx, uint32_t pc, uint64_t disp, uint64_t end, uint64_t done,
                    uint64_t mxu_busy);
    void *on_insn_ctx;
} tpu_core_cfg_t;

/* tpu_core_cfg_t.dispatch */
enum { TPU_DISPATCH_RTL = 0, TPU_DISPATCH_SERIAL = 1, TPU_DISPATCH_OVERLAP = 2 };

#define TPU_CORE_AXI_LATENCY_DEFAULT 4u
#define TPU_AXI_DATA_BITS_MIN 64u  /* the AXI4 data master: a power of two in 64..512 */
#define TPU_AXI_DATA_BITS_MAX 512u

/* The default width of the AXI4 data master for an N x N array (docs/isa.md "AXI4 master
   (data)"): the smallest power of two >= 4N, clamped to 64..512 -- gen's default
   (--axi-data-bits) for the same N. */
unsigned tpu_axi_data_bits_default(unsigned n);
/* 1 when b is an allowed width (64, 128, 256 or 512), else 0. */
int tpu_axi_data_bits_ok(unsigned b);
#define TPU_CORE_VPU_LATENCY 26u /* TPU_VPU_LATENCY of tpu_params.h */

/* Performance counters (docs/isa.md "Host interface"), index k of register 0x40 + 8k. */
enum {
    TPU_CNT_CYCLES = 0,
    TPU_CNT_MXU_BUSY,
    TPU_CNT_WL_STALL,
    TPU_CNT_DMA_BUSY,
    TPU_CNT_VPU_BUSY,
    TPU_CNT_INSNS,
    TPU_CNT_NET_BUSY, /* a collective in progress, waiting for peers included */
    TPU_CNT_COUNT
};
const char *tpu_core_counter_name(unsigned k); /* "CYCLES", ...; NULL out of range */

/* TPU_CORE_STUCK: the core waits forever at the collective at err_pc (its peers never
   take part: a deadlock, a mismatched collective, or no board); err_code is 0, the trace has
   no line for that instruction and CYCLES counts up to its dispatch. */
/* TPU_CORE_LIMIT: the run reached tpu_core_cfg_t.max_cycles before the instruction at err_pc
   could dispatch (not a core error: the program is not finished). */
typedef enum {
    TPU_CORE_DONE = 1, TPU_CORE_ERROR = 2, TPU_CORE_STUCK = 3, TPU_CORE_LIMIT = 4
} tpu_core_status_t;

typedef struct {
    tpu_core_status_t status;
    int err_code;               /* TPU_ERR_* (0 when done) */
    uint32_t err_pc;            /* the failing instruction (code 6: the IMEM size) */
    uint64_t err_seq;           /* its dynamic index (the trace's `e` line; docs/isa.md) */
    uint64_t counters[TPU_CNT_COUNT];
    uint64_t rows_written[TPU_MEM_COUNT]; /* on-chip row writes per memory */
    uint64_t uninit_reads;      /* rows read that were never written (a program error) */
    uint32_t uninit_pc;         /* the first instruction that read one */
    unsigned uninit_mem, uninit_row;
} tpu_core_result_t;

typedef struct tpu_core tpu_core_t;

/* NULL on a bad configuration (N outside 1..256, a memory size of 0 or > 65536 rows, an IMEM
   size of 0 or > 65536, pe_stages > 3, axi_data_bits not 0, 64, 128, 256 or 512, a board of
   more than 64 cores, core_id >= C) or out of memory. tpu_core_cfg gives the configuration
   with axi_data_bits resolved. The memories start "never written"
   (all bits 0, but reading them counts as an uninitialised read). */
tpu_core_t *tpu_core_new(const tpu_core_cfg_t *cfg);
void tpu_core_free(tpu_core_t *c);
/* The memories back to "never written" and zero, as tpu_core_new leaves them (only the rows
   written since are touched): a core run again after this behaves as a new one (a run
   starts every other part of the state itself). */
void tpu_core_clear(tpu_core_t *c);
const tpu_core_cfg_t *tpu_core_cfg(const tpu_core_t *c);

/* START from pc_start with prog[0..count) in IMEM (instructions count .. IMEM size - 1 read as
   all-zero words, i.e. `nop`). The on-chip memories keep their contents across runs; the
   weight banks' alternation and "lw since START" restart. host[0..host_bytes) is the host
   memory image (a beat outside it is an AXI DECERR, error 7). trace may be NULL. Returns
   TPU_OK, or TPU_EINVAL for bad arguments (count > IMEM size, pc_start >= IMEM size, NULL
   pointers) or TPU_EIO when the trace could not be written. */
int tpu_core_run(tpu_core_t *c, const tpu_insn_t *prog, size_t count, size_t pc_start,
                 uint8_t *host, size_t host_bytes, FILE *trace, tpu_core_result_t *res);

/* Row access for tests and tools: a row is N words (UB/WMEM: bf16 in the low 16 bits). NULL
   when mem or row is out of range. Setting a row marks it written. */
const uint32_t *tpu_core_row(const tpu_core_t *c, unsigned mem, unsigned row);
int tpu_core_set_row(tpu_core_t *c, unsigned mem, unsigned row, const uint32_t *words);

#ifdef __cplusplus
}
#endif
#endif
