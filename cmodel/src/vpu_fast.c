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

static inline int is_nan(uint32_t v) { return (v & 0x7FFFFFFFu) > 0x7F800000u; }
static inline uint32_t daz(uint32_t v) { return (v & 0x7F800000u) ? v : (v & 0x80000000u); }

/* bf16_to_fp32 and fp32_to_bf16 inline (the same bits: tests/model/test_vpu_fast.c) */
static inline uint32_t ld_bf16(uint32_t w)
{
    uint32_t u = (w & 0xFFFFu) << 16;
    return is_nan(u) ? TPU_FP32_QNAN : daz(u);
}
static inline uint32_t st_bf16(uint32_t v)
{
    uint32_t d = daz(v), e = d & 0x7F800000u;
    uint32_t r = (e == 0x7F800000u || e == 0) ? d >> 16 : (d + 0x7FFFu + ((d >> 16) & 1u)) >> 16;
    return is_nan(v) ? TPU_BF16_QNAN : r;
}
static inline uint32_t ld(vpu_fmt_t f, uint32_t w)
{
    return f == VPU_FMT_BF16 ? ld_bf16(w) : w;
}

static inline uint32_t st(vpu_fmt_t f, uint32_t v)
{
    return f == VPU_FMT_BF16 ? st_bf16(v) : v;
}
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

/* relu and cvt (fp32_max(x, +0) and vpu_canon, docs/vpu.md) with inline loads and stores */
static inline uint32_t relu_bits(uint32_t v)
{
    return is_nan(v) ? TPU_FP32_QNAN : (v & 0x80000000u) ? 0u : daz(v);
}
static inline uint32_t cvt_bits(uint32_t v) { return is_nan(v) ? TPU_FP32_QNAN : daz(v); }

#define UNARY_LOOP(F, LD, ST)                                                                  \
    for (size_t i = 0; i < n; i++)                                                             \
        y[i] = ST(F(LD(x[i])));
static inline uint32_t id32(uint32_t v) { return v; }

int vpu_vec_unary_fast(vpu_op_t op, size_t n, vpu_fmt_t fx, const uint32_t *x, vpu_fmt_t fy,
                       uint32_t *y)
{
    if (op != VPU_OP_RELU && op != VPU_OP_CVT) return 0;
    int bx = fx == VPU_FMT_BF16, by = fy == VPU_FMT_BF16;
    if (op == VPU_OP_RELU) {
        if (bx && by) { UNARY_LOOP(relu_bits, ld_bf16, st_bf16) }
        else if (bx) { UNARY_LOOP(relu_bits, ld_bf16, id32) }
        else if (by) { UNARY_LOOP(relu_bits, id32, st_bf16) }
        else { UNARY_LOOP(relu_bits, id32, id32) }
    } else {
        if (bx && by) { UNARY_LOOP(cvt_bits, ld_bf16, st_bf16) }
        else if (bx) { UNARY_LOOP(cvt_bits, ld_bf16, id32) }
        else if (by) { UNARY_LOOP(cvt_bits, id32, st_bf16) }
        else { UNARY_LOOP(cvt_bits, id32, id32) }
    }
    return 1;
}
