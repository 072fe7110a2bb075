/* SPDX-License-Identifier: Apache-2.0 */
/* The core model's internal state, shared by core_model.c (run loop, dispatch timing),
   core_trace.c, core_dma.c, core_mx.c and core_vpu.c. Not a public header. */
#ifndef TPU_CORE_INTERNAL_H
#define TPU_CORE_INTERNAL_H
#include <stdint.h>
#include <stdio.h>
#include "tpu/core.h"

#define CORE_NEVER UINT64_MAX

/* An instruction in flight, for the hazard check. */
typedef struct {
    tpu_unit_t unit;
    tpu_footprint_t fp;
    uint64_t done;
} core_inflight_t;

/* The run loop's state between steps (a run stops at each collective when C > 1). */
struct core_run {
    const tpu_insn_t *prog;
    size_t count;
    core_inflight_t *fl;
    size_t nfl, cap;
    uint64_t prev;      /* last dispatch cycle (0: none yet, the first dispatch is in 1) */
    uint64_t all_done;  /* latest completion of anything dispatched */
    uint64_t axi_stop;  /* an AXI error completes: nothing dispatches after it */
    uint32_t axi_pc;
    uint64_t axi_seq;
    uint32_t pc;        /* next instruction */
    tpu_seq_t seq;      /* loops and index registers (docs/isa.md "Loops") */
    uint64_t seqno;     /* dynamic instructions dispatched so far (the trace's key) */
    int err;
    uint32_t err_pc;
    uint64_t err_seq;
    uint64_t end;
    int finished;
    int rc;             /* tpu_core_run's return value once finished */
    tpu_dinsn_t net;    /* the collective waiting for the board (pc: run.pc) */
    uint64_t net_t;     /* its dispatch cycle */
    int link_err;       /* the collective at link_pc stopped on a dead link: error 9 next */
    uint32_t link_pc;
    uint64_t link_seq;
};

struct tpu_core {
    tpu_core_cfg_t cfg;
    unsigned n;
    unsigned rows[TPU_MEM_COUNT];
    uint32_t *mem[TPU_MEM_COUNT];   /* rows[m] * n words */
    uint8_t *written[TPU_MEM_COUNT]; /* per row: ever written */
    uint32_t *bank[2];               /* weights: bank[b][k * n + j] = tile row k, column j */
    uint32_t *lrow[2];               /* vred/softmax: a logical row's chunks (65536 + N words) */
    /* bank b for the host-float matmul (core_mx.c), filled by lw: wf[b][k * wf_stride + j]
       = weight (k, j) widened to a float (0 for j >= N); wrow_zero[b][k], wrow_fin[b][k]:
       all ones when row k is all zeros or subnormals, has no Inf or NaN (else 0) */
    float *wf[2];
    uint32_t *wrow_zero[2], *wrow_fin[2];
    uint8_t *wblk_zero[2];           /* [j / 16]: columns j .. j + 15 all zeros and subnormals */
    uint32_t *wsgn[2];               /* [k * ceil(wf_stride / 32) + q]: bit l = the sign of
                                        weight (k, 32q + l) */
    uint32_t *wneg[2];               /* [q]: bit l = column 32q + l has only negative weights */
    unsigned wemin[2], wemax[2];     /* the smallest and largest biased exponent of a normal
                                        weight (255 and 0 when none) */
    unsigned wf_stride;              /* N rounded up to a multiple of 16 */
    int mx_simd;                     /* the host-float matmul's kernel (core_mx_simd) */
    unsigned integer_mx;             /* 1: matmul rows on fp32_mac and VPU add/sub/max/min on
                                        the integer path only (TPU_MODEL_INTEGER_MX=1
                                        in the environment); 0: the host-float path where the
                                        host has one (the same bits, core_mx.c) */
    /* timing constants */
    uint64_t mxu_lat, mxu_busy, vpu_lat, vpu_red_lat, axi_lat;
    /* per run */
    FILE *trace;
    int trace_err;
    uint8_t *host;
    size_t host_bytes;
    uint32_t pc;          /* the instruction being executed */
    uint64_t seqno;       /* its dynamic index (trace records) */
    tpu_dinsn_t cur;      /* it, resolved (trace retire line) */
    char iter[48];        /* the loop indices it dispatched with */
    tpu_core_result_t *res;
    /* functional MX state */
    int have_lw;
    unsigned next_bank, cur_bank;
    /* timing state */
    uint64_t *acc_last_vec;        /* per ACC row: cycle of the last vector writing it */
    uint64_t mx_last_vec;          /* cycle of the last vector presented (CORE_NEVER: none) */
    uint64_t mm_present_end[2];    /* last vector of the two most recent matmuls */
    uint64_t bank_last_vec[2];     /* last vector presented with bank b */
    uint64_t bank_lw_done[2];      /* completion of the most recent lw into bank b */
    uint64_t unit_done[5];         /* per tpu_unit_t: completion of its last instruction */
    /* what the RTL's sequencer sees of the units (TPU_DISPATCH_RTL, core_model.c) */
    uint64_t *ub_last_vec;         /* per UB row: cycle of the last vector reading it */
    uint64_t acc_mm_last;          /* last vector of the latest accumulating matmul */
    unsigned dma_out, dma_mem;     /* the latest DMA: dma_out?, its memory and rows */
    uint32_t dma_lo, dma_hi;
    uint32_t lw_lo;                /* the latest lw's first WMEM row */
    unsigned cores;                /* C = topo_rows * topo_cols */
    struct core_run run;
};

/* core_model.c: the resumable run loop used by tpu_core_run and the board model.
   core_run_begin starts a run (tpu_core_run's arguments); core_run_step runs until the core
   finishes (CORE_STEP_DONE: res filled, run.rc set) or dispatches a collective on a board of
   C > 1 cores (CORE_STEP_NET: run.net, run.net_t, c->pc = its pc; the board then executes it,
   writing rows with core_write_row, and calls core_net_complete with its completion cycle, or
   core_run_stuck when it can never complete). */
enum { CORE_STEP_DONE = 0, CORE_STEP_NET = 1 };
int core_run_begin(tpu_core_t *c, const tpu_insn_t *prog, size_t count, size_t pc_start,
                   uint8_t *host, size_t host_bytes, FILE *trace, tpu_core_result_t *res);
int core_run_step(tpu_core_t *c); /* CORE_STEP_* or TPU_ENOMEM */
void core_net_complete(tpu_core_t *c, uint64_t done);
void core_run_stuck(tpu_core_t *c);
/* The collective in progress stopped in cycle t because a link of the board is dead: it
   retires (what it wrote stays written) and the core halts with error 9 at its pc, unless
   the next instruction fails its checks (that error was found first: gen's sequencer checks
   it while the collective runs). The board then calls core_run_step, which finishes. */
void core_net_abort(tpu_core_t *c, uint64_t t);

/* core_trace.c */
void core_trace_header(tpu_core_t *c);
void core_trace_write(tpu_core_t *c, unsigned mem, unsigned row, const uint32_t *words);
void core_trace_retire(tpu_core_t *c);
void core_trace_error(tpu_core_t *c, uint64_t seq, uint32_t pc, int code);

/* core_model.c: row access with trace and uninitialised-read bookkeeping. core_read_row and
   core_write_done are inline (they run once per row of every unit); the rare parts, an
   uninitialised read and a trace record, are calls. */
void core_read_uninit(tpu_core_t *c, unsigned mem, unsigned row);
static inline const uint32_t *core_read_row(tpu_core_t *c, unsigned mem, unsigned row)
{
    if (!c->written[mem][row])
        core_read_uninit(c, mem, row);
    return c->mem[mem] + (size_t)row * c->n;
}
void core_write_row(tpu_core_t *c, unsigned mem, unsigned row, const uint32_t *words);
/* a row written in place: fill core_write_dst's N words (16-bit values in UB and WMEM), then
   core_write_done (what core_write_row does after its copy: the flags and the trace) */
static inline uint32_t *core_write_dst(tpu_core_t *c, unsigned mem, unsigned row)
{
    return c->mem[mem] + (size_t)row * c->n;
}
static inline void core_write_done(tpu_core_t *c, unsigned mem, unsigned row)
{
    c->written[mem][row] = 1;
    c->res->rows_written[mem]++;
    if (c->trace)
        core_trace_write(c, mem, row, c->mem[mem] + (size_t)row * c->n);
}

/* The units: each executes one instruction (functional part, writes traced) and returns its
   completion cycle given its dispatch cycle d. */
/* core_dma.c: *axi_err set to 1 on an AXI error response */
uint64_t core_dma_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t, int *axi_err);
/* core_mx.c: lw and matmul */
uint64_t core_lw_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t);
uint64_t core_matmul_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t);
/* the host's kernels for the host-float matmul, CORE_MX_* flags: 0 the SSE2 kernel (a host
   without AVX2, or TPU_MODEL_MX_SIMD=sse2 in the environment); else AVX2 (the skip kernel
   of core_mx.c), with CORE_MX_AVX512 its steps and the dense kernel on AVX-512 (a host with
   AVX-512F), with CORE_MX_DENSE the dense kernel at N <= 32. The default is every flag the
   host allows; TPU_MODEL_MX_SIMD=avx2 drops CORE_MX_AVX512, =skip drops CORE_MX_DENSE,
   =avx2-skip both. */
enum { CORE_MX_AVX2 = 1, CORE_MX_AVX512 = 2, CORE_MX_DENSE = 4 };
int core_mx_simd(void);
/* core_mx_dense.c: rows of a matmul on the dense kernel (N <= 32; MXCSR set by the caller
   as for the other kernels), AVX-512 when avx512 else AVX2; w = wf[b], ws = wf_stride */
void core_mx_dense(int avx512, unsigned n, const float *w, size_t ws, unsigned rows,
                   const uint32_t *const *a, const uint32_t *const *seed, uint32_t *const *out);
/* core_vpu.c: vop, vred, softmax */
uint64_t core_vpu_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t);

static inline uint64_t core_max(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline unsigned core_ceil_div(unsigned a, unsigned b) { return (a + b - 1u) / b; }

#endif
