/* SPDX-License-Identifier: Apache-2.0 */
/* The WL and MX units: lw (a weight tile into the next bank) and matmul (one MXU pass per
   UB row, seeded with the ACC row or -0), with the timing of docs/isa.md "Timing": bank
   alternation, bank-busy B and latency L of tpu_mxu_timing, the accumulate RAW window of
   L + 2 cycles, the ACC write in t + L + 1. */
#include "core_internal.h"
#include "tpu/numerics.h"

uint64_t core_lw_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    unsigned n = c->n, b = c->next_bank;
    for (unsigned k = 0; k < n; k++) {
        const uint32_t *row = core_read_row(c, TPU_MEM_WMEM, d->w_row + k);
        for (unsigned j = 0; j < n; j++)
            c->bank[b][k * n + j] = row[j];
    }
    c->cur_bank = b;
    c->next_bank = b ^ 1u;
    c->have_lw = 1;
    /* Start s: the cycle after dispatch, once no vector of bank b is presented or queued and
       bank_busy_o[b] is 0 (B cycles after its last vector). N WMEM reads in s .. s+N-1, each
       row shifted in the cycle after its read (s+1 .. s+N); done with the N-th shift. */
    uint64_t s = t + 1u;
    if (c->bank_last_vec[b] != CORE_NEVER)
        s = core_max(s, c->bank_last_vec[b] + c->mxu_busy + 1u);
    uint64_t done = s + n;
    c->bank_lw_done[b] = done;
    return done;
}

uint64_t core_matmul_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    unsigned n = c->n, b = c->cur_bank;
    const uint32_t *w = c->bank[b];
    uint32_t out[256];
    uint64_t vt = CORE_NEVER;
    for (unsigned m = 0; m < d->n; m++) {
        unsigned arow = d->acc_row + m;
        const uint32_t *a = core_read_row(c, TPU_MEM_UB, d->ub_row + m);
        const uint32_t *seed = d->accumulate ? core_read_row(c, TPU_MEM_ACC, arow) : NULL;
        for (unsigned j = 0; j < n; j++) {
            fp32_t acc = fp32_from_bits(seed ? seed[j] : 0x80000000u);
            for (unsigned k = 0; k < n; k++)
                acc = fp32_mac(acc, bf16_from_bits((uint16_t)a[k]),
                               bf16_from_bits((uint16_t)w[k * n + j]));
            out[j] = acc.v;
        }
        core_write_row(c, TPU_MEM_ACC, arow, out);
        /* timing of vector m: UB (and ACC) read in vt - 1 >= t + 1 */
        uint64_t ready = t + 2u;
        if (c->mx_last_vec != CORE_NEVER)
            ready = core_max(ready, c->mx_last_vec + 1u);
        if (d->accumulate && c->acc_last_vec[arow] != CORE_NEVER)
            ready = core_max(ready, c->acc_last_vec[arow] + c->mxu_lat + 3u);
        vt = core_max(ready, c->bank_lw_done[b] + 1u);
        c->res->counters[TPU_CNT_WL_STALL] += vt - ready;
        c->res->counters[TPU_CNT_MXU_BUSY]++;
        c->mx_last_vec = vt;
        c->acc_last_vec[arow] = vt;
    }
    c->bank_last_vec[b] = vt;
    c->mm_present_end[0] = c->mm_present_end[1];
    c->mm_present_end[1] = vt;
    return vt + c->mxu_lat + 1u;
}
