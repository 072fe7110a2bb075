/* SPDX-License-Identifier: Apache-2.0 */
/* The core model's internal state, shared by core_model.c (run loop, dispatch timing),
   core_trace.c, core_dma.c, core_mx.c and core_vpu.c. Not a public header. */
#ifndef TPU_CORE_INTERNAL_H
#define TPU_CORE_INTERNAL_H
#include <stdint.h>
#include <stdio.h>
#include "tpu/core.h"

#define CORE_NEVER UINT64_MAX

struct tpu_core {
    tpu_core_cfg_t cfg;
    unsigned n;
    unsigned rows[TPU_MEM_COUNT];
    uint32_t *mem[TPU_MEM_COUNT];   /* rows[m] * n words */
    uint8_t *written[TPU_MEM_COUNT]; /* per row: ever written */
    uint32_t *bank[2];               /* weights: bank[b][k * n + j] = tile row k, column j */
    uint32_t *lrow[2];               /* vred/softmax: a logical row's chunks (65536 + N words) */
    /* timing constants */
    uint64_t mxu_lat, mxu_busy, vpu_lat, vpu_red_lat, axi_lat;
    /* per run */
    FILE *trace;
    int trace_err;
    uint8_t *host;
    size_t host_bytes;
    uint32_t pc;          /* the instruction being executed */
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
};

/* core_trace.c */
void core_trace_header(tpu_core_t *c);
void core_trace_write(tpu_core_t *c, unsigned mem, unsigned row, const uint32_t *words);
void core_trace_retire(tpu_core_t *c, unsigned opcode);
void core_trace_error(tpu_core_t *c, uint32_t pc, int code);

/* core_model.c: row access with trace and uninitialised-read bookkeeping */
const uint32_t *core_read_row(tpu_core_t *c, unsigned mem, unsigned row);
void core_write_row(tpu_core_t *c, unsigned mem, unsigned row, const uint32_t *words);

/* The units: each executes one instruction (functional part, writes traced) and returns its
   completion cycle given its dispatch cycle d. */
/* core_dma.c: *axi_err set to 1 on an AXI error response */
uint64_t core_dma_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t, int *axi_err);
/* core_mx.c: lw and matmul */
uint64_t core_lw_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t);
uint64_t core_matmul_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t);
/* core_vpu.c: vop, vred, softmax */
uint64_t core_vpu_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t);

static inline uint64_t core_max(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline unsigned core_ceil_div(unsigned a, unsigned b) { return (a + b - 1u) / b; }

#endif
