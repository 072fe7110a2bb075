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
   - erf: vpu_erf's chain (docs/vpu.md "erf": segment, Horner steps from the ERF ROM, the
     2^64 scaling of segment 0) on host floats under the same MXCSR, where every add and mul
     is fp32_add / fp32_mul; NaN, +-Inf and |x| >= 4 are taken before the chain, so no NaN
     arises in it.
   Loads and stores are vpu_load / vpu_store's (bf16 widened with DAZ and NaN
   canonicalisation; bf16 stores rounded by fp32_to_bf16). */
#include <stdlib.h>
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
/* sign-magnitude order as signed integers: -0 < +0, larger magnitudes outward */
static inline int32_t key(uint32_t v)
{
    return (v & 0x80000000u) ? (int32_t)~(v & 0x7FFFFFFFu) : (int32_t)v;
}

#define ALWAYS_INLINE static inline __attribute__((always_inline))

ALWAYS_INLINE void add_body(size_t n, const uint32_t *a, const uint32_t *b, int op, uint32_t *y)
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

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
/* kept out of line so no floating-point operation moves across the MXCSR writes; an AVX2
   copy of each loop where the host has AVX2 (the same operations, wider) */
static __attribute__((noinline)) void add_rows(size_t n, const uint32_t *a, const uint32_t *b,
                                               int op, uint32_t *y)
{
    add_body(n, a, b, op, y);
}
static __attribute__((noinline, target("avx2"))) void add_rows_avx2(size_t n, const uint32_t *a,
                                                                    const uint32_t *b, int op,
                                                                    uint32_t *y)
{
    add_body(n, a, b, op, y);
}
#endif

ALWAYS_INLINE void load_row(vpu_fmt_t f, size_t n, const uint32_t *x, uint32_t *l)
{
    if (f == VPU_FMT_BF16)
        for (size_t i = 0; i < n; i++) l[i] = ld_bf16(x[i]);
    else
        for (size_t i = 0; i < n; i++) l[i] = x[i];
}

ALWAYS_INLINE int binary_body(vpu_op_t op, size_t n, vpu_fmt_t fa, const uint32_t *a,
                              vpu_fmt_t fb, const uint32_t *b, vpu_fmt_t fy, uint32_t *y,
                              int avx2)
{
    uint32_t la[256], lb[256], r[256];
    if (n > 256) return 0;
    if (op != VPU_OP_MAX && op != VPU_OP_MIN
#if defined(__x86_64__) && defined(__SSE2__)
        && op != VPU_OP_ADD && op != VPU_OP_SUB && op != VPU_OP_MUL
#endif
    )
        return 0;
    load_row(fa, n, a, la);
    load_row(fb, n, b, lb);
    if (op == VPU_OP_MAX || op == VPU_OP_MIN) {
        int mx = op == VPU_OP_MAX;
        for (size_t i = 0; i < n; i++) {
            uint32_t p = daz(la[i]), q = daz(lb[i]);
            int pq = key(p) >= key(q);
            uint32_t v = mx == pq ? p : q;
            r[i] = (is_nan(la[i]) || is_nan(lb[i])) ? TPU_FP32_QNAN : v;
        }
    }
#if defined(__x86_64__) && defined(__SSE2__)
    else {
        unsigned old = _mm_getcsr();
        _mm_setcsr((old & ~0x6000u) | 0x8040u | 0x1F80u); /* RNE, FTZ | DAZ, all masked */
        if (avx2)
            add_rows_avx2(n, la, lb, (int)op, r);
        else
            add_rows(n, la, lb, (int)op, r);
        _mm_setcsr(old);
    }
#endif
    (void)avx2;
    if (fy == VPU_FMT_BF16)
        for (size_t i = 0; i < n; i++) y[i] = st_bf16(r[i]);
    else
        for (size_t i = 0; i < n; i++) y[i] = r[i];
    return 1;
}

/* 1 when the AVX2 copies run: the host has AVX2 (asked once) and TPU_MODEL_MX_SIMD is not
   "sse2", or as vpu_fast_set_simd last said */
static int simd_state = -1;
static int have_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (simd_state < 0) {
        const char *e = getenv("TPU_MODEL_MX_SIMD");
        __builtin_cpu_init();
        simd_state = __builtin_cpu_supports("avx2") && !(e && strcmp(e, "sse2") == 0) ? 1 : 0;
    }
    return simd_state;
#else
    return 0;
#endif
}

void vpu_fast_set_simd(int avx2)
{
    simd_state = -1;
    if (!avx2 || have_avx2())
        simd_state = avx2 ? 1 : 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The AVX2 copy in one pass, 8 lanes at a time: ld_bf16, the op, st_bf16 as vector
   operations on the same bits (the scalar loops above for the last n % 8 lanes); add, sub and
   mul on host floats under the MXCSR the caller set (out of line, as add_rows) */
#define VF_AVX2 __attribute__((target("avx2"), always_inline)) static inline
VF_AVX2 __m256i vf_daz(__m256i v)
{
    __m256i z = _mm256_cmpeq_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x7F800000)),
                                   _mm256_setzero_si256());
    return _mm256_blendv_epi8(v, _mm256_and_si256(v, _mm256_set1_epi32((int)0x80000000u)), z);
}
VF_AVX2 __m256i vf_nan(__m256i v) /* all ones where v is a NaN */
{
    return _mm256_cmpgt_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x7FFFFFFF)),
                              _mm256_set1_epi32(0x7F800000));
}
VF_AVX2 __m256i vf_ld(int bf, const uint32_t *x)
{
    __m256i w = _mm256_loadu_si256((const __m256i *)(const void *)x);
    if (!bf)
        return w;
    __m256i u = _mm256_slli_epi32(w, 16);
    return _mm256_blendv_epi8(vf_daz(u), _mm256_set1_epi32((int)TPU_FP32_QNAN), vf_nan(u));
}
VF_AVX2 void vf_st(int bf, uint32_t *y, __m256i v)
{
    if (bf) {
        __m256i d = vf_daz(v), e = _mm256_and_si256(d, _mm256_set1_epi32(0x7F800000));
        __m256i sp = _mm256_or_si256(_mm256_cmpeq_epi32(e, _mm256_set1_epi32(0x7F800000)),
                                     _mm256_cmpeq_epi32(e, _mm256_setzero_si256()));
        __m256i rnd = _mm256_add_epi32(_mm256_add_epi32(d, _mm256_set1_epi32(0x7FFF)),
                                       _mm256_and_si256(_mm256_srli_epi32(d, 16), _mm256_set1_epi32(1)));
        __m256i r = _mm256_srli_epi32(_mm256_blendv_epi8(rnd, d, sp), 16);
        v = _mm256_blendv_epi8(r, _mm256_set1_epi32((int)TPU_BF16_QNAN), vf_nan(v));
    }
    _mm256_storeu_si256((__m256i *)(void *)y, v);
}
VF_AVX2 __m256i vf_key(__m256i v)
{
    return _mm256_blendv_epi8(v, _mm256_xor_si256(_mm256_and_si256(v, _mm256_set1_epi32(0x7FFFFFFF)),
                                                  _mm256_set1_epi32(-1)),
                              _mm256_srai_epi32(v, 31));
}

VF_AVX2 void vf_rows(vpu_op_t op, size_t n8, int ba, const uint32_t *a, int bb, const uint32_t *b,
                     int by, uint32_t *y)
{
    for (size_t i = 0; i < n8; i += 8) {
        __m256i p = vf_ld(ba, a + i), q = vf_ld(bb, b + i), r;
        if (op == VPU_OP_MAX || op == VPU_OP_MIN) {
            __m256i dp = vf_daz(p), dq = vf_daz(q);
            __m256i pq = _mm256_xor_si256(_mm256_cmpgt_epi32(vf_key(dq), vf_key(dp)),
                                          _mm256_set1_epi32(-1)); /* key(p) >= key(q) */
            r = op == VPU_OP_MAX ? _mm256_blendv_epi8(dq, dp, pq) : _mm256_blendv_epi8(dp, dq, pq);
            r = _mm256_blendv_epi8(r, _mm256_set1_epi32((int)TPU_FP32_QNAN),
                                   _mm256_or_si256(vf_nan(p), vf_nan(q)));
        } else {
            __m256 x = _mm256_castsi256_ps(p), z;
            if (op == VPU_OP_SUB)
                q = _mm256_xor_si256(q, _mm256_set1_epi32((int)0x80000000u));
            z = _mm256_castsi256_ps(q);
            r = _mm256_castps_si256(op == VPU_OP_MUL ? _mm256_mul_ps(x, z) : _mm256_add_ps(x, z));
            r = _mm256_blendv_epi8(r, _mm256_set1_epi32((int)TPU_FP32_QNAN), vf_nan(r));
        }
        vf_st(by, y + i, r);
    }
}

static __attribute__((noinline, target("avx2"))) void
binary_rows_avx2(vpu_op_t op, size_t n8, vpu_fmt_t fa, const uint32_t *a, vpu_fmt_t fb,
                 const uint32_t *b, vpu_fmt_t fy, uint32_t *y)
{
    int ba = fa == VPU_FMT_BF16, bb = fb == VPU_FMT_BF16, by = fy == VPU_FMT_BF16;
    /* one copy of the loop per op and format (the branches above fold away) */
#define VF_CASE(OP)                                                                            \
    if (ba && bb && by) vf_rows(OP, n8, 1, a, 1, b, 1, y);                                     \
    else if (!ba && !bb && !by) vf_rows(OP, n8, 0, a, 0, b, 0, y);                             \
    else vf_rows(OP, n8, ba, a, bb, b, by, y);
    switch (op) {
    case VPU_OP_ADD: VF_CASE(VPU_OP_ADD) break;
    case VPU_OP_SUB: VF_CASE(VPU_OP_SUB) break;
    case VPU_OP_MUL: VF_CASE(VPU_OP_MUL) break;
    case VPU_OP_MAX: VF_CASE(VPU_OP_MAX) break;
    default: VF_CASE(VPU_OP_MIN) break;
    }
#undef VF_CASE
}

static __attribute__((target("avx2"))) int binary_avx2(vpu_op_t op, size_t n, vpu_fmt_t fa,
                                                       const uint32_t *a, vpu_fmt_t fb,
                                                       const uint32_t *b, vpu_fmt_t fy,
                                                       uint32_t *y)
{
    if (n > 256 || (op != VPU_OP_MAX && op != VPU_OP_MIN && op != VPU_OP_ADD &&
                    op != VPU_OP_SUB && op != VPU_OP_MUL))
        return binary_body(op, n, fa, a, fb, b, fy, y, 1);
    size_t n8 = n & ~(size_t)7;
    if (n8) {
        unsigned old = _mm_getcsr();
        if (op != VPU_OP_MAX && op != VPU_OP_MIN)
            _mm_setcsr((old & ~0x6000u) | 0x8040u | 0x1F80u); /* RNE, FTZ | DAZ, all masked */
        binary_rows_avx2(op, n8, fa, a, fb, b, fy, y);
        _mm_setcsr(old);
    }
    if (n8 == n)
        return 1;
    return binary_body(op, n - n8, fa, a + n8, fb, b + n8, fy, y + n8, 1);
}
#endif

int vpu_vec_binary_fast(vpu_op_t op, size_t n, vpu_fmt_t fa, const uint32_t *a, vpu_fmt_t fb,
                        const uint32_t *b, vpu_fmt_t fy, uint32_t *y)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx2())
        return binary_avx2(op, n, fa, a, fb, b, fy, y);
#endif
    return binary_body(op, n, fa, a, fb, b, fy, y, 0);
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

#if defined(__x86_64__) && defined(__SSE2__)
static inline float f_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t u_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* vpu_erf on n fp32 patterns (loaded: DAZ applied by the MXCSR), rom the ERF ROM as floats;
   run with RNE and FTZ | DAZ set (erf_row) */
static __attribute__((noinline)) void erf_elems(size_t n, const uint32_t *x, const float rom[][8],
                                                uint32_t *r)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t v = x[i], sign = v & 0x80000000u, ab = daz(v) & 0x7FFFFFFFu, e = ab >> 23;
        if (is_nan(v)) { r[i] = TPU_FP32_QNAN; continue; }
        if (e >= 129) { r[i] = sign | 0x3F800000u; continue; }
        unsigned j = e < 126 ? 0u : e == 126 ? 1u + ((ab >> 22) & 1u)
                   : e == 127 ? 3u + ((ab >> 21) & 3u) : 7u + ((ab >> 20) & 7u);
        float a = f_of(ab), vv = j == 0 ? a * a : a - rom[j][7];
        float p = rom[j][6];
        for (int k = 5; k >= 0; k--)
            p = p * vv + rom[j][k];
        if (j == 0) {
            float as = a * f_of(0x5F800000u); /* 2^64 */
            p = (as + as * p) * f_of(0x1F800000u); /* 2^-64 */
        }
        r[i] = u_of(p) | sign;
    }
}

/* vpu_erf over a row: load, the chain under RNE and FTZ | DAZ, store */
static void erf_row(size_t n, vpu_fmt_t fx, const uint32_t *x, vpu_fmt_t fy, uint32_t *y)
{
    float rom[VPU_ERF_SEGS][8];
    uint32_t l[256], r[256];
    for (unsigned j = 0; j < VPU_ERF_SEGS; j++)
        for (unsigned k = 0; k < 8; k++) rom[j][k] = f_of(vpu_rom_erf(j, k));
    for (size_t o = 0; o < n; o += 256) {
        size_t m = n - o < 256 ? n - o : 256;
        load_row(fx, m, x + o, l);
        unsigned old = _mm_getcsr();
        _mm_setcsr((old & ~0x6000u) | 0x8040u | 0x1F80u); /* RNE, FTZ | DAZ, all masked */
        erf_elems(m, l, (const float (*)[8])rom, r);
        _mm_setcsr(old);
        for (size_t i = 0; i < m; i++) y[o + i] = fy == VPU_FMT_BF16 ? st_bf16(r[i]) : r[i];
    }
}
#endif

ALWAYS_INLINE int unary_body(vpu_op_t op, size_t n, vpu_fmt_t fx, const uint32_t *x,
                             vpu_fmt_t fy, uint32_t *y)
{
#if defined(__x86_64__) && defined(__SSE2__)
    if (op == VPU_OP_ERF) {
        erf_row(n, fx, x, fy, y);
        return 1;
    }
#endif
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

#if defined(__x86_64__) && defined(__GNUC__)
/* relu and cvt 8 lanes at a time (vf_ld and vf_st as for the binary ops; relu_bits and
   cvt_bits as vector operations), the scalar loops for the last n % 8 */
VF_AVX2 void vf_unary(int relu, size_t n8, int bx, const uint32_t *x, int by, uint32_t *y)
{
    for (size_t i = 0; i < n8; i += 8) {
        __m256i v = vf_ld(bx, x + i), r = vf_daz(v);
        if (relu)
            r = _mm256_andnot_si256(_mm256_srai_epi32(v, 31), r); /* sign - (or -0): +0 */
        vf_st(by, y + i, _mm256_blendv_epi8(r, _mm256_set1_epi32((int)TPU_FP32_QNAN), vf_nan(v)));
    }
}

static __attribute__((noinline, target("avx2"))) void
unary_rows_avx2(int relu, size_t n8, vpu_fmt_t fx, const uint32_t *x, vpu_fmt_t fy, uint32_t *y)
{
    int bx = fx == VPU_FMT_BF16, by = fy == VPU_FMT_BF16;
    if (relu) {
        if (bx && by) vf_unary(1, n8, 1, x, 1, y);
        else if (!bx && !by) vf_unary(1, n8, 0, x, 0, y);
        else vf_unary(1, n8, bx, x, by, y);
    } else {
        vf_unary(0, n8, bx, x, by, y);
    }
}

static __attribute__((target("avx2"))) int unary_avx2(vpu_op_t op, size_t n, vpu_fmt_t fx,
                                                      const uint32_t *x, vpu_fmt_t fy, uint32_t *y)
{
    if (op == VPU_OP_ERF)
        return unary_body(op, n, fx, x, fy, y);
    if (op != VPU_OP_RELU && op != VPU_OP_CVT)
        return 0;
    size_t n8 = n & ~(size_t)7;
    if (n8)
        unary_rows_avx2(op == VPU_OP_RELU, n8, fx, x, fy, y);
    if (n8 == n)
        return 1;
    return unary_body(op, n - n8, fx, x + n8, fy, y + n8);
}
#endif

int vpu_vec_unary_fast(vpu_op_t op, size_t n, vpu_fmt_t fx, const uint32_t *x, vpu_fmt_t fy,
                       uint32_t *y)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx2())
        return unary_avx2(op, n, fx, x, fy, y);
#endif
    return unary_body(op, n, fx, x, fy, y);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* Whole instructions on AVX-512 (vpu_rows_binary_fast, vpu_rows_unary_fast): the AVX2 loops'
   operations 16 lanes at a time, a row's last n % 16 lanes under a mask (loads of the others
   as zeros, their results not stored), the rows one after the other as the per-row calls
   would go (row r read whole before it is written, rows in order), the MXCSR set once. */
#define VF_512 __attribute__((target("avx512f"), always_inline)) static inline
VF_512 __m512i vz_daz(__m512i v)
{
    __mmask16 z = _mm512_testn_epi32_mask(v, _mm512_set1_epi32(0x7F800000));
    return _mm512_mask_and_epi32(v, z, v, _mm512_set1_epi32((int)0x80000000u));
}
VF_512 __mmask16 vz_nan(__m512i v)
{
    return _mm512_cmpgt_epi32_mask(_mm512_and_si512(v, _mm512_set1_epi32(0x7FFFFFFF)),
                                   _mm512_set1_epi32(0x7F800000));
}
VF_512 __m512i vz_ld(int bf, __mmask16 m, const uint32_t *x)
{
    __m512i w = _mm512_maskz_loadu_epi32(m, x);
    if (!bf)
        return w;
    __m512i u = _mm512_slli_epi32(w, 16);
    return _mm512_mask_mov_epi32(vz_daz(u), vz_nan(u), _mm512_set1_epi32((int)TPU_FP32_QNAN));
}
VF_512 void vz_st(int bf, __mmask16 m, uint32_t *y, __m512i v)
{
    if (bf) {
        __m512i d = vz_daz(v), e = _mm512_and_si512(d, _mm512_set1_epi32(0x7F800000));
        __mmask16 sp = _mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(0x7F800000)) |
                       _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512());
        __m512i rnd = _mm512_add_epi32(_mm512_add_epi32(d, _mm512_set1_epi32(0x7FFF)),
                                       _mm512_and_si512(_mm512_srli_epi32(d, 16), _mm512_set1_epi32(1)));
        __m512i r = _mm512_srli_epi32(_mm512_mask_mov_epi32(rnd, sp, d), 16);
        v = _mm512_mask_mov_epi32(r, vz_nan(v), _mm512_set1_epi32((int)TPU_BF16_QNAN));
    }
    _mm512_mask_storeu_epi32(y, m, v);
}
VF_512 __m512i vz_key(__m512i v)
{
    __mmask16 neg = _mm512_cmplt_epi32_mask(v, _mm512_setzero_si512());
    return _mm512_mask_xor_epi32(v, neg, _mm512_and_si512(v, _mm512_set1_epi32(0x7FFFFFFF)),
                                 _mm512_set1_epi32(-1));
}

VF_512 void vz_rows(vpu_op_t op, size_t rows, size_t n, int ba, const uint32_t *a, size_t as,
                    int bb, const uint32_t *b, size_t bs, int by, uint32_t *y, size_t ys)
{
    for (size_t row = 0; row < rows; row++, a += as, b += bs, y += ys)
        for (size_t i = 0; i < n; i += 16) {
            __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFFu : (__mmask16)((1u << (n - i)) - 1u);
            __m512i p = vz_ld(ba, m, a + i), q = vz_ld(bb, m, b + i), r;
            if (op == VPU_OP_MAX || op == VPU_OP_MIN) {
                __m512i dp = vz_daz(p), dq = vz_daz(q);
                /* key(p) >= key(q) */
                __mmask16 pq = (__mmask16)~_mm512_cmpgt_epi32_mask(vz_key(dq), vz_key(dp));
                r = op == VPU_OP_MAX ? _mm512_mask_mov_epi32(dq, pq, dp)
                                     : _mm512_mask_mov_epi32(dp, pq, dq);
                r = _mm512_mask_mov_epi32(r, vz_nan(p) | vz_nan(q),
                                          _mm512_set1_epi32((int)TPU_FP32_QNAN));
            } else {
                __m512 x = _mm512_castsi512_ps(p), z;
                if (op == VPU_OP_SUB)
                    q = _mm512_xor_si512(q, _mm512_set1_epi32((int)0x80000000u));
                z = _mm512_castsi512_ps(q);
                r = _mm512_castps_si512(op == VPU_OP_MUL ? _mm512_mul_ps(x, z) : _mm512_add_ps(x, z));
                r = _mm512_mask_mov_epi32(r, vz_nan(r), _mm512_set1_epi32((int)TPU_FP32_QNAN));
            }
            vz_st(by, m, y + i, r);
        }
}

static __attribute__((noinline, target("avx512f"))) void
binary_rows_512(vpu_op_t op, size_t rows, size_t n, vpu_fmt_t fa, const uint32_t *a, size_t as,
                vpu_fmt_t fb, const uint32_t *b, size_t bs, vpu_fmt_t fy, uint32_t *y, size_t ys)
{
    int ba = fa == VPU_FMT_BF16, bb = fb == VPU_FMT_BF16, by = fy == VPU_FMT_BF16;
#define VZ_CASE(OP)                                                                            \
    if (ba && bb && by) vz_rows(OP, rows, n, 1, a, as, 1, b, bs, 1, y, ys);                    \
    else if (!ba && !bb && !by) vz_rows(OP, rows, n, 0, a, as, 0, b, bs, 0, y, ys);            \
    else if (!ba && !bb && by) vz_rows(OP, rows, n, 0, a, as, 0, b, bs, 1, y, ys);             \
    else vz_rows(OP, rows, n, ba, a, as, bb, b, bs, by, y, ys);
    switch (op) {
    case VPU_OP_ADD: VZ_CASE(VPU_OP_ADD) break;
    case VPU_OP_SUB: VZ_CASE(VPU_OP_SUB) break;
    case VPU_OP_MUL: VZ_CASE(VPU_OP_MUL) break;
    case VPU_OP_MAX: VZ_CASE(VPU_OP_MAX) break;
    default: VZ_CASE(VPU_OP_MIN) break;
    }
#undef VZ_CASE
}

VF_512 void vz_unary(int relu, size_t rows, size_t n, int bx, const uint32_t *x, size_t xs, int by,
                     uint32_t *y, size_t ys)
{
    for (size_t row = 0; row < rows; row++, x += xs, y += ys)
        for (size_t i = 0; i < n; i += 16) {
            __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFFu : (__mmask16)((1u << (n - i)) - 1u);
            __m512i v = vz_ld(bx, m, x + i), r = vz_daz(v);
            if (relu) /* sign - (or -0): +0 */
                r = _mm512_maskz_mov_epi32(_mm512_cmpge_epi32_mask(v, _mm512_setzero_si512()), r);
            vz_st(by, m, y + i, _mm512_mask_mov_epi32(r, vz_nan(v), _mm512_set1_epi32((int)TPU_FP32_QNAN)));
        }
}

static __attribute__((noinline, target("avx512f"))) void
unary_rows_512(int relu, size_t rows, size_t n, vpu_fmt_t fx, const uint32_t *x, size_t xs,
               vpu_fmt_t fy, uint32_t *y, size_t ys)
{
    int bx = fx == VPU_FMT_BF16, by = fy == VPU_FMT_BF16;
    if (relu) {
        if (bx && by) vz_unary(1, rows, n, 1, x, xs, 1, y, ys);
        else if (!bx && by) vz_unary(1, rows, n, 0, x, xs, 1, y, ys);
        else vz_unary(1, rows, n, bx, x, xs, by, y, ys);
    } else {
        vz_unary(0, rows, n, bx, x, xs, by, y, ys);
    }
}

/* 1 when the AVX-512 copies may run: the AVX2 ones do, the host has AVX-512F and
   TPU_MODEL_MX_SIMD is not "avx2" or "avx2-skip" (asked once) */
static int have_avx512(void)
{
    static int st = -1;
    if (!have_avx2())
        return 0;
    if (st < 0) {
        const char *e = getenv("TPU_MODEL_MX_SIMD");
        __builtin_cpu_init();
        st = __builtin_cpu_supports("avx512f") &&
             !(e && (strcmp(e, "avx2") == 0 || strcmp(e, "avx2-skip") == 0));
    }
    return st;
}
#endif

int vpu_rows_binary_fast(vpu_op_t op, size_t rows, size_t n, vpu_fmt_t fa, const uint32_t *a,
                         size_t as, vpu_fmt_t fb, const uint32_t *b, size_t bs, vpu_fmt_t fy,
                         uint32_t *y, size_t ys)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (n == 0 || n > 256 || !have_avx512() ||
        (op != VPU_OP_MAX && op != VPU_OP_MIN && op != VPU_OP_ADD && op != VPU_OP_SUB &&
         op != VPU_OP_MUL))
        return 0;
    unsigned old = _mm_getcsr();
    if (op != VPU_OP_MAX && op != VPU_OP_MIN)
        _mm_setcsr((old & ~0x6000u) | 0x8040u | 0x1F80u); /* RNE, FTZ | DAZ, all masked */
    binary_rows_512(op, rows, n, fa, a, as, fb, b, bs, fy, y, ys);
    _mm_setcsr(old);
    return 1;
#else
    (void)op; (void)rows; (void)n; (void)fa; (void)a; (void)as; (void)fb; (void)b; (void)bs;
    (void)fy; (void)y; (void)ys;
    return 0;
#endif
}

int vpu_rows_unary_fast(vpu_op_t op, size_t rows, size_t n, vpu_fmt_t fx, const uint32_t *x,
                        size_t xs, vpu_fmt_t fy, uint32_t *y, size_t ys)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (n == 0 || n > 256 || !have_avx512() || (op != VPU_OP_RELU && op != VPU_OP_CVT))
        return 0;
    unary_rows_512(op == VPU_OP_RELU, rows, n, fx, x, xs, fy, y, ys);
    return 1;
#else
    (void)op; (void)rows; (void)n; (void)fx; (void)x; (void)xs; (void)fy; (void)y; (void)ys;
    return 0;
#endif
}
