/* SPDX-License-Identifier: Apache-2.0 */
/* The VPU's add, sub, mul, max and min over a row, faster than vpu_vec_binary's per-element
   integer path and the same bits (tests/model/test_vpu_fast.c compares them on every special
   and millions of random patterns):
   - add/sub on host floats with MXCSR DAZ | FTZ and RNE (docs/numerics.md, fp32_add: both
     inputs are normal or zero after DAZ, so a sum below 2^-126 is exact and the host's FTZ
     gives the contract's signed zero), NaN canonicalised after;
   - mul likewise: fp32_mul is defined as SSE's product under FTZ | DAZ (tininess after
     rounding; docs/numerics.md "fp32 x fp32"), NaN canonicalised after;
   - max/min on the bits: any NaN gives the canonical NaN, DAZ keeps the sign, and -0 < +0 is
     the order of the sign-magnitude bits mapped to two's complement keys.
   Loads and stores are vpu_load / vpu_store's (bf16 widened with DAZ and NaN
   canonicalisation; bf16 stores rounded by fp32_to_bf16). */
#include <string.h>

#include "tpu/numerics.h"
#include "tpu/vpu.h"
#include "vpu_fast.h"

static inline uint32_t ld(vpu_fmt_t f, uint32_t w)
{
    return f == VPU_FMT_BF16 ? bf16_to_fp32(bf16_from_bits((uint16_t)w)).v : w;
}

static inline uint32_t st(vpu_fmt_t f, uint32_t v)
{
    return f == VPU_FMT_BF16 ? fp32_to_bf16(fp32_from_bits(v)).v : v;
}

static inline int is_nan(uint32_t v) { return (v & 0x7FFFFFFFu) > 0x7F800000u; }
static inline uint32_t daz(uint32_t v) { return (v & 0x7F800000u) ? v : (v & 0x80000000u); }
/* sign-magnitude order as signed integers: -0 < +0, larger magnitudes outward */
static inline int32_t key(uint32_t v)
{
    return (v & 0x80000000u) ? (int32_t)~(v & 0x7FFFFFFFu) : (int32_t)v;
}

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
static __attribute__((noinline)) void add_rows(size_t n, const uint32_t *a, const uint32_t *b,
                                               int op, uint32_t *y)
{
    for (size_t i = 0; i < n; i++) {
        float x, z;
        uint32_t bb = op == VPU_OP_SUB ? b[i] ^ 0x80000000u : b[i];
        memcpy(&x, &a[i], 4);
        memcpy(&z, &bb, 4);
        float s = op == VPU_OP_MUL ? x * z : x + z;
        uint32_t u;
        memcpy(&u, &s, 4);
        y[i] = is_nan(u) ? TPU_FP32_QNAN : u;
    }
}
#endif

int vpu_vec_binary_fast(vpu_op_t op, size_t n, vpu_fmt_t fa, const uint32_t *a, vpu_fmt_t fb,
                        const uint32_t *b, vpu_fmt_t fy, uint32_t *y)
{
    uint32_t la[256], lb[256], r[256];
    if (n > 256) return 0;
    if (op != VPU_OP_MAX && op != VPU_OP_MIN
#if defined(__x86_64__) && defined(__SSE2__)
        && op != VPU_OP_ADD && op != VPU_OP_SUB && op != VPU_OP_MUL
#endif
    )
        return 0;
    for (size_t i = 0; i < n; i++) {
        la[i] = ld(fa, a[i]);
        lb[i] = ld(fb, b[i]);
    }
    if (op == VPU_OP_MAX || op == VPU_OP_MIN) {
        for (size_t i = 0; i < n; i++) {
            if (is_nan(la[i]) || is_nan(lb[i])) { r[i] = TPU_FP32_QNAN; continue; }
            uint32_t p = daz(la[i]), q = daz(lb[i]);
            int pq = key(p) >= key(q);
            r[i] = (op == VPU_OP_MAX) == pq ? p : q;
        }
    }
#if defined(__x86_64__) && defined(__SSE2__)
    else {
        unsigned old = _mm_getcsr();
        _mm_setcsr((old & ~0x6000u) | 0x8040u | 0x1F80u); /* RNE, FTZ | DAZ, all masked */
        add_rows(n, la, lb, (int)op, r);
        _mm_setcsr(old);
    }
#endif
    for (size_t i = 0; i < n; i++) y[i] = st(fy, r[i]);
    return 1;
}
