/* SPDX-License-Identifier: Apache-2.0 */
/* The WL and MX units: lw (a weight tile into the next bank, transposed or not) and matmul
   (one MXU pass per UB row, seeded with the ACC row or -0), with the timing of docs/isa.md
   "Timing": bank alternation, bank-busy B and latency L of tpu_mxu_timing, the accumulate RAW
   window of L + 2 cycles, the ACC write in t + L + 1. */
#include <string.h>

#include "core_internal.h"
#include "tpu/numerics.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
/* One MXU pass per row on host floats, the same bits as fp32_mac (the argument of
   matmul_fast.c: with MXCSR DAZ | FTZ, RNE, exceptions masked, a bf16 x bf16 product is exact
   or overflows/flushes exactly as bf16_mul does, -ffp-contract=off keeps the add separate, and
   each output's k order stays sequential; a NaN result is canonicalised on the way out).
   Kept out of line so no floating-point operation moves across the MXCSR writes. */
static __attribute__((noinline)) void mx_rows_host(unsigned n, unsigned rows,
                                                   const uint32_t *const *a,
                                                   const uint32_t *const *seed,
                                                   const float *restrict w, uint32_t *out)
{
    float p[256];
    for (unsigned m = 0; m < rows; m++) {
        for (unsigned j = 0; j < n; j++) {
            uint32_t s = seed[m] ? seed[m][j] : 0x80000000u;
            memcpy(&p[j], &s, 4);
        }
        for (unsigned k = 0; k < n; k++) {
            uint32_t xb = (a[m][k] & 0xFFFFu) << 16;
            float x;
            memcpy(&x, &xb, 4);
            const float *restrict wr = w + (size_t)k * n;
            for (unsigned j = 0; j < n; j++) p[j] = p[j] + x * wr[j];
        }
        for (unsigned j = 0; j < n; j++) {
            uint32_t u;
            memcpy(&u, &p[j], 4);
            if ((u & 0x7FFFFFFFu) > 0x7F800000u) u = 0x7FC00000u;
            out[(size_t)m * n + j] = u;
        }
    }
}

/* The rows of one matmul: 1 done on the host path, 0 when it is not available. */
static int mx_host(unsigned n, unsigned rows, const uint32_t *const *a,
                   const uint32_t *const *seed, const uint32_t *bank, uint32_t *out)
{
    static float w[256 * 256];
    for (size_t i = 0; i < (size_t)n * n; i++) {
        uint32_t u = (bank[i] & 0xFFFFu) << 16;
        memcpy(&w[i], &u, 4);
    }
    unsigned old = _mm_getcsr();
    _mm_setcsr((old & ~0x6000u) | 0x8040u | 0x1F80u); /* RNE, FTZ | DAZ, all masked */
    mx_rows_host(n, rows, a, seed, w, out);
    _mm_setcsr(old);
    return 1;
}
#else
static int mx_host(unsigned n, unsigned rows, const uint32_t *const *a,
                   const uint32_t *const *seed, const uint32_t *bank, uint32_t *out)
{
    (void)n; (void)rows; (void)a; (void)seed; (void)bank; (void)out;
    return 0;
}
#endif

uint64_t core_lw_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    unsigned n = c->n, b = c->next_bank;
    /* bank[b][k*n + j] is the weight that multiplies activation element k in output column
       j: WMEM[w+k][j], or WMEM[w+j][k] for a transposed load (the same rows are read, in the
       same order; the array shifts them along its rows instead of its columns). */
    for (unsigned k = 0; k < n; k++) {
        const uint32_t *row = core_read_row(c, TPU_MEM_WMEM, d->w_row + k);
        if (d->transpose)
            for (unsigned j = 0; j < n; j++)
                c->bank[b][j * n + k] = row[j];
        else
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
    c->lw_lo = d->w_row;
    return done;
}

uint64_t core_matmul_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    unsigned n = c->n, b = c->cur_bank;
    const uint32_t *w = c->bank[b];
    uint32_t out[256];
    uint64_t vt = CORE_NEVER;
    /* Rows in groups: the host path computes a group at once (its rows never overlap the
       ones they accumulate onto within the group: each row reads and writes its own ACC row,
       read before any of the group is written -- true when the ACC rows are distinct, which
       they are: acc_row + m for m in the group). */
    enum { GROUP = 64 };
    static uint32_t gout[GROUP * 256];
    const uint32_t *ga[GROUP], *gs[GROUP];
    for (unsigned m0 = 0; m0 < d->n; m0 += GROUP) {
        unsigned gn = d->n - m0 < GROUP ? d->n - m0 : GROUP;
        int host = 0;
        if (!c->integer_mx) {
            for (unsigned i = 0; i < gn; i++) {
                ga[i] = core_read_row(c, TPU_MEM_UB, d->ub_row + m0 + i);
                gs[i] = d->accumulate ? core_read_row(c, TPU_MEM_ACC, d->acc_row + m0 + i) : NULL;
            }
            host = mx_host(n, gn, ga, gs, w, gout);
        }
    for (unsigned m = m0; m < m0 + gn; m++) {
        unsigned arow = d->acc_row + m;
        if (host) {
            core_write_row(c, TPU_MEM_ACC, arow, gout + (size_t)(m - m0) * n);
        } else {
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
        }
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
        c->ub_last_vec[d->ub_row + m] = vt;
    }
    }
    c->bank_last_vec[b] = vt;
    if (d->accumulate)
        c->acc_mm_last = vt;
    c->mm_present_end[0] = c->mm_present_end[1];
    c->mm_present_end[1] = vt;
    return vt + c->mxu_lat + 1u;
}
