/* SPDX-License-Identifier: Apache-2.0 */
/* fp32_mul, fp32_max, fp32_min and the elementwise vector ops. */
#include <stdio.h>
#include <stdlib.h>
#include <xmmintrin.h>
#include "vpu_test.h"

static const uint32_t edges[] = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00400000u, 0x00800000u,
    0x80800000u, 0x00800001u, 0x00FFFFFFu, 0x01000000u, 0x3F800000u, 0xBF800000u,
    0x3F800001u, 0x3F7FFFFFu, 0x3FFFFFFFu, 0x3FC00000u, 0x40000000u, 0x3F000000u,
    0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
    0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x7FBFFFFFu, 0x1F800000u, 0x20000000u,
    0x5F800000u, 0x5F7FFFFFu, 0x1F7FFFFFu, 0x33800000u, 0x4B000000u, 0x3FB504F3u,
    0x3F3504F3u, 0x00B504F3u, 0x1FB504F3u, 0x5FB504F3u, 0x7EFFFFFFu, 0x00FFFFFEu,
};
#define NEDGES (sizeof edges / sizeof edges[0])

static uint32_t daz(uint32_t x)
{
    return ((x >> 23) & 0xFFu) == 0 ? (x & 0x80000000u) : x;
}
static int is_nan(uint32_t x) { return (x & 0x7FFFFFFFu) > 0x7F800000u; }

/* host SSE product with FTZ/DAZ, NaN canonicalised */
static uint32_t host_mul(uint32_t a, uint32_t b)
{
    volatile float fa = ref_u2f(a), fb = ref_u2f(b);
    volatile float p = fa * fb;
    uint32_t r = ref_f2u(p);
    return is_nan(r) ? TPU_FP32_QNAN : r;
}

/* MPFR product, DAZ inputs, then the contract's rounding */
static uint32_t mpfr_mul_ref(uint32_t a, uint32_t b)
{
    if (is_nan(a) || is_nan(b))
        return TPU_FP32_QNAN;
    mpfr_t x, y, p;
    mpfr_inits2(24, x, y, (mpfr_ptr)0);
    mpfr_init2(p, 48);
    mpfr_set_flt(x, ref_u2f(daz(a)), MPFR_RNDN);
    mpfr_set_flt(y, ref_u2f(daz(b)), MPFR_RNDN);
    mpfr_mul(p, x, y, MPFR_RNDN); /* exact */
    uint32_t r = ref_round(p, 24);
    mpfr_clears(x, y, p, (mpfr_ptr)0);
    return r;
}

static void check_mul(uint32_t a, uint32_t b, int with_mpfr)
{
    uint32_t got = fp32_mul(fp32_from_bits(a), fp32_from_bits(b)).v;
    uint32_t h = host_mul(a, b);
    if (got != h) {
        print_error("fp32_mul(%08x, %08x) = %08x, host %08x\n", a, b, got, h);
        fail();
    }
    if (with_mpfr) {
        uint32_t m = mpfr_mul_ref(a, b);
        if (got != m) {
            print_error("fp32_mul(%08x, %08x) = %08x, mpfr %08x\n", a, b, got, m);
            fail();
        }
    }
}

static unsigned saved_csr;
static void ftz_daz_on(void)
{
    saved_csr = _mm_getcsr();
    _mm_setcsr(saved_csr | 0x8040u); /* FTZ | DAZ */
}
static void ftz_daz_off(void) { _mm_setcsr(saved_csr); }

void test_fp32_mul_edges(void **state)
{
    (void)state;
    ftz_daz_on();
    for (size_t i = 0; i < NEDGES; i++)
        for (size_t j = 0; j < NEDGES; j++)
            check_mul(edges[i], edges[j], 1);
    /* the FTZ boundary: products just below / at / above 2^-126, incl. rounding up to it */
    for (uint32_t f = 0x7FFFF0u; f <= 0x7FFFFFu; f++)
        for (uint32_t g = 0x7FFFF0u; g <= 0x7FFFFFu; g++) {
            check_mul((0x3Fu << 23) | f, (0x01u << 23) | g, 1); /* (~2)^-1 x 2^-126 ... */
            check_mul((0x3Eu << 23) | f, (0x02u << 23) | g, 1);
            check_mul((0x7Fu << 23) | f, (0x7Fu << 23) | g, 1); /* overflow edge */
        }
    ftz_daz_off();
}

void test_fp32_mul_random(void **state)
{
    (void)state;
    vt_seed(11);
    ftz_daz_on();
    for (long i = 0; i < 2000000; i++) {
        uint32_t a = vt_rand32(), b = vt_rand32();
        int kind = (int)(i % 4);
        if (kind == 1) { /* product exponent near the FTZ boundary */
            uint32_t ea = 1 + vt_rand32() % 126;
            uint32_t eb = (uint32_t)(127 - (int)ea) + (vt_rand32() % 5) - 2 + 1;
            a = (a & 0x807FFFFFu) | (ea << 23);
            b = (b & 0x807FFFFFu) | ((eb & 0xFFu) << 23);
        } else if (kind == 2) { /* near overflow */
            uint32_t ea = 127 + vt_rand32() % 127;
            uint32_t eb = 254 + 127 - ea - 2 + vt_rand32() % 5;
            if (eb > 254)
                eb = 254;
            a = (a & 0x807FFFFFu) | (ea << 23);
            b = (b & 0x807FFFFFu) | (eb << 23);
        } else if (kind == 3) { /* moderate exponents */
            a = (a & 0x807FFFFFu) | ((100 + vt_rand32() % 56) << 23);
            b = (b & 0x807FFFFFu) | ((100 + vt_rand32() % 56) << 23);
        }
        check_mul(a, b, i < 200000);
    }
    ftz_daz_off();
}

static uint32_t mpfr_minmax_ref(uint32_t a, uint32_t b, int want_max)
{
    if (is_nan(a) || is_nan(b))
        return TPU_FP32_QNAN;
    mpfr_t x, y, r;
    mpfr_inits2(24, x, y, r, (mpfr_ptr)0);
    mpfr_set_flt(x, ref_u2f(daz(a)), MPFR_RNDN);
    mpfr_set_flt(y, ref_u2f(daz(b)), MPFR_RNDN);
    if (want_max)
        mpfr_max(r, x, y, MPFR_RNDN);
    else
        mpfr_min(r, x, y, MPFR_RNDN);
    uint32_t out = ref_f2u(mpfr_get_flt(r, MPFR_RNDN));
    mpfr_clears(x, y, r, (mpfr_ptr)0);
    return out;
}

static void check_minmax(uint32_t a, uint32_t b)
{
    uint32_t mx = fp32_max(fp32_from_bits(a), fp32_from_bits(b)).v;
    uint32_t mn = fp32_min(fp32_from_bits(a), fp32_from_bits(b)).v;
    uint32_t rmx = mpfr_minmax_ref(a, b, 1), rmn = mpfr_minmax_ref(a, b, 0);
    if (mx != rmx || mn != rmn) {
        print_error("max/min(%08x, %08x) = %08x/%08x, mpfr %08x/%08x\n", a, b, mx, mn, rmx, rmn);
        fail();
    }
    /* host: ordinary comparison on DAZ'd values where it is unambiguous */
    if (!is_nan(a) && !is_nan(b)) {
        float fa = ref_u2f(daz(a)), fb = ref_u2f(daz(b));
        if (fa > fb)
            assert_int_equal(mx, daz(a));
        if (fa < fb)
            assert_int_equal(mx, daz(b));
    }
}

void test_fp32_minmax(void **state)
{
    (void)state;
    for (size_t i = 0; i < NEDGES; i++)
        for (size_t j = 0; j < NEDGES; j++)
            check_minmax(edges[i], edges[j]);
    assert_int_equal(fp32_max(fp32_from_bits(0x80000000u), fp32_from_bits(0)).v, 0);
    assert_int_equal(fp32_max(fp32_from_bits(0), fp32_from_bits(0x80000000u)).v, 0);
    assert_int_equal(fp32_min(fp32_from_bits(0x80000000u), fp32_from_bits(0)).v, 0x80000000u);
    assert_int_equal(fp32_min(fp32_from_bits(0), fp32_from_bits(0x80000000u)).v, 0x80000000u);
    assert_int_equal(fp32_max(fp32_from_bits(0x7F800001u), fp32_from_bits(0)).v, TPU_FP32_QNAN);
    assert_int_equal(fp32_min(fp32_from_bits(0x3F800000u), fp32_from_bits(0xFFFFFFFFu)).v,
                     TPU_FP32_QNAN);
    vt_seed(12);
    for (long i = 0; i < 300000; i++) {
        uint32_t a = vt_rand32(), b = vt_rand32();
        if (i & 1) /* same exponent often */
            b = (b & 0x807FFFFFu) | (a & 0x7F800000u);
        check_minmax(a, b);
    }
}

void test_vector_ops(void **state)
{
    (void)state;
    enum { N = 97, R = 3 };
    uint32_t a[N * R], b[N * R], y[N * R], row[N];
    vt_seed(13);
    for (int i = 0; i < N * R; i++) {
        a[i] = vt_rand32();
        b[i] = vt_rand32();
        if (i % 5 == 0)
            a[i] = edges[(size_t)i % NEDGES];
    }
    for (int i = 0; i < N; i++)
        row[i] = b[i];
    const vpu_fmt_t fmts[2] = { VPU_FMT_FP32, VPU_FMT_BF16 };
    for (int op = 0; op < VPU_OP_COUNT; op++) {
        assert_non_null(vpu_op_name((vpu_op_t)op));
        for (int fa = 0; fa < 2; fa++)
            for (int fb = 0; fb < 2; fb++)
                for (int fy = 0; fy < 2; fy++) {
                    if (vpu_op_is_binary((vpu_op_t)op)) {
                        assert_int_equal(vpu_vec_binary((vpu_op_t)op, N, fmts[fa], a, fmts[fb],
                                                        b, fmts[fy], y), TPU_OK);
                        for (int i = 0; i < N; i++) {
                            fp32_t va = fa ? bf16_to_fp32(bf16_from_bits((uint16_t)a[i]))
                                           : fp32_from_bits(a[i]);
                            fp32_t vb = fb ? bf16_to_fp32(bf16_from_bits((uint16_t)b[i]))
                                           : fp32_from_bits(b[i]);
                            fp32_t r = vpu_binary((vpu_op_t)op, va, vb);
                            uint32_t w = fy ? fp32_to_bf16(r).v : r.v;
                            assert_int_equal(y[i], w);
                        }
                        assert_int_equal(vpu_vec_broadcast((vpu_op_t)op, R, N, fmts[fa], a,
                                                           fmts[fb], row, fmts[fy], y), TPU_OK);
                        for (int r = 0; r < R; r++)
                            for (int c = 0; c < N; c++)
                                assert_int_equal(
                                    y[r * N + c],
                                    vpu_store(fmts[fy],
                                              vpu_binary((vpu_op_t)op,
                                                         vpu_load(fmts[fa], a[r * N + c]),
                                                         vpu_load(fmts[fb], row[c]))));
                    } else if (fb == 0) {
                        assert_int_equal(vpu_vec_unary((vpu_op_t)op, N, fmts[fa], a, fmts[fy], y),
                                         TPU_OK);
                        for (int i = 0; i < N; i++)
                            assert_int_equal(y[i], vpu_store(fmts[fy],
                                                             vpu_unary((vpu_op_t)op,
                                                                       vpu_load(fmts[fa], a[i]))));
                    }
                }
    }
    /* conversions are the contract's: cvt fp32 -> bf16 and bf16 -> fp32 */
    assert_int_equal(vpu_vec_unary(VPU_OP_CVT, N, VPU_FMT_FP32, a, VPU_FMT_BF16, y), TPU_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(y[i], fp32_to_bf16(fp32_from_bits(a[i])).v);
    assert_int_equal(vpu_vec_unary(VPU_OP_CVT, N, VPU_FMT_BF16, a, VPU_FMT_FP32, y), TPU_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(y[i], bf16_to_fp32(bf16_from_bits((uint16_t)a[i])).v);
    /* bias-add is the broadcast add; sub is add of the negation */
    assert_int_equal(vpu_bias_add(R, N, VPU_FMT_FP32, a, VPU_FMT_FP32, row, VPU_FMT_FP32, y),
                     TPU_OK);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < N; c++)
            assert_int_equal(y[r * N + c],
                             fp32_add(fp32_from_bits(a[r * N + c]), fp32_from_bits(row[c])).v);
    /* invalid arguments */
    assert_int_equal(vpu_vec_binary(VPU_OP_EXP, N, 0, a, 0, b, 0, y), TPU_EINVAL);
    assert_int_equal(vpu_vec_unary(VPU_OP_ADD, N, 0, a, 0, y), TPU_EINVAL);
    assert_int_equal(vpu_vec_unary(VPU_OP_EXP, N, (vpu_fmt_t)7, a, 0, y), TPU_EINVAL);
    assert_int_equal(vpu_vec_unary(VPU_OP_EXP, N, 0, NULL, 0, y), TPU_EINVAL);
    assert_null(vpu_op_name(VPU_OP_COUNT));
    assert_int_equal(vpu_unary(VPU_OP_ADD, fp32_from_bits(0)).v, TPU_FP32_QNAN);
}
