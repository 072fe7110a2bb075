/* SPDX-License-Identifier: Apache-2.0 */
/* Reductions and softmax against independent oracle loops that follow the documented
   order (docs/vpu.md, "Reductions", "Softmax"), and the softmax sum bound (exact sums in
   MPFR). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vpu_test.h"

static const unsigned lane_set[] = { 1, 2, 3, 4, 5, 7, 8, 16, 32, 128 };
#define NLANES (sizeof lane_set / sizeof lane_set[0])

/* Oracle: bottom-up pairwise tree over the chunk padded to a power of two, then the
   chunk results folded into an accumulator in ascending order. */
static fp32_t oracle_reduce(vpu_op_t op, size_t n, vpu_fmt_t fx, const uint32_t *x,
                            unsigned lanes)
{
    fp32_t id = op == VPU_OP_MAX ? fp32_from_bits(0xFF800000u)
              : op == VPU_OP_MIN ? fp32_from_bits(0x7F800000u)
                                 : fp32_from_bits(0x80000000u);
    size_t w = 1;
    while (w < lanes)
        w <<= 1;
    fp32_t buf[256];
    fp32_t acc = id;
    size_t nchunks = (n + lanes - 1) / lanes;
    for (size_t c = 0; c < nchunks; c++) {
        for (size_t j = 0; j < w; j++) {
            size_t i = c * lanes + j;
            buf[j] = (j < lanes && i < n) ? vpu_load(fx, x[i]) : id;
        }
        for (size_t step = 1; step < w; step <<= 1)
            for (size_t j = 0; j + step < w; j += 2 * step)
                buf[j] = vpu_binary(op, buf[j], buf[j + step]);
        acc = vpu_binary(op, acc, buf[0]);
    }
    return acc;
}

static uint32_t rand_value(int mode)
{
    uint32_t r = vt_rand32();
    switch (mode) {
    case 0: /* moderate magnitudes, both signs: rounding order matters */
        return (r & 0x807FFFFFu) | ((110 + vt_rand32() % 30) << 23);
    case 1: /* anything, including NaN, Inf, subnormals */
        return r;
    default: /* mostly positive, wide exponent range, some zeros */
        if (r % 17 == 0)
            return r & 0x80000000u;
        return (r & 0x007FFFFFu) | ((60 + vt_rand32() % 100) << 23);
    }
}

void test_reduce_order(void **state)
{
    (void)state;
    vt_seed(31);
    uint32_t x[700];
    const vpu_op_t ops[3] = { VPU_OP_ADD, VPU_OP_MAX, VPU_OP_MIN };
    for (int it = 0; it < 3000; it++) {
        size_t n = vt_rand32() % 700;
        int mode = it % 3;
        for (size_t i = 0; i < n; i++)
            x[i] = rand_value(mode);
        unsigned lanes = lane_set[vt_rand32() % NLANES];
        vpu_fmt_t fx = (it & 8) ? VPU_FMT_BF16 : VPU_FMT_FP32;
        for (int o = 0; o < 3; o++) {
            fp32_t got;
            assert_int_equal(vpu_reduce(ops[o], n, fx, x, lanes, &got), TPU_OK);
            fp32_t want = oracle_reduce(ops[o], n, fx, x, lanes);
            if (got.v != want.v) {
                print_error("reduce %s n=%zu lanes=%u: %08x, oracle %08x\n",
                            vpu_op_name(ops[o]), n, lanes, got.v, want.v);
                fail();
            }
        }
    }
    /* the order is observable: with lanes = 1 the sum is the plain sequential loop */
    uint32_t y[4] = { 0x4B800000u /* 2^24 */, 0x3F800000u, 0x3F800000u, 0x3F800000u };
    fp32_t s1, s4;
    assert_int_equal(vpu_reduce(VPU_OP_ADD, 4, VPU_FMT_FP32, y, 1, &s1), TPU_OK);
    assert_int_equal(vpu_reduce(VPU_OP_ADD, 4, VPU_FMT_FP32, y, 4, &s4), TPU_OK);
    assert_int_equal(s1.v, 0x4B800000u); /* ((2^24 + 1) + 1) + 1: every step ties to even */
    assert_int_equal(s4.v, 0x4B800001u); /* (2^24 + 1) + (1 + 1) = 2^24 + 2 */
}

void test_reduce_specials(void **state)
{
    (void)state;
    fp32_t r;
    const uint32_t z[4] = { 0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u };
    assert_int_equal(vpu_reduce(VPU_OP_ADD, 0, VPU_FMT_FP32, NULL, 4, &r), TPU_OK);
    assert_int_equal(r.v, 0x80000000u);
    assert_int_equal(vpu_reduce(VPU_OP_MAX, 0, VPU_FMT_FP32, NULL, 4, &r), TPU_OK);
    assert_int_equal(r.v, 0xFF800000u);
    assert_int_equal(vpu_reduce(VPU_OP_ADD, 3, VPU_FMT_FP32, z, 2, &r), TPU_OK);
    assert_int_equal(r.v, 0x80000000u); /* -0 + -0 + -0 = -0: padding never shows */
    const uint32_t mz[3] = { 0x80000000u, 0x00000000u, 0x80000000u };
    assert_int_equal(vpu_reduce(VPU_OP_MAX, 3, VPU_FMT_FP32, mz, 2, &r), TPU_OK);
    assert_int_equal(r.v, 0);
    assert_int_equal(vpu_reduce(VPU_OP_MIN, 3, VPU_FMT_FP32, mz, 2, &r), TPU_OK);
    assert_int_equal(r.v, 0x80000000u);
    const uint32_t sub[2] = { 0x00000001u, 0xFF800000u };
    assert_int_equal(vpu_reduce(VPU_OP_MAX, 2, VPU_FMT_FP32, sub, 4, &r), TPU_OK);
    assert_int_equal(r.v, 0); /* DAZ */
    const uint32_t nan[5] = { 0x3F800000u, 0x7F800000u, 0xFFC00001u, 0x40000000u, 0 };
    assert_int_equal(vpu_reduce(VPU_OP_MAX, 5, VPU_FMT_FP32, nan, 2, &r), TPU_OK);
    assert_int_equal(r.v, TPU_FP32_QNAN);
    assert_int_equal(vpu_reduce(VPU_OP_ADD, 5, VPU_FMT_FP32, nan, 8, &r), TPU_OK);
    assert_int_equal(r.v, TPU_FP32_QNAN);
    const uint32_t infs[3] = { 0x7F800000u, 0x3F800000u, 0xFF800000u };
    assert_int_equal(vpu_reduce(VPU_OP_ADD, 3, VPU_FMT_FP32, infs, 1, &r), TPU_OK);
    assert_int_equal(r.v, TPU_FP32_QNAN);
    assert_int_equal(vpu_reduce(VPU_OP_MAX, 3, VPU_FMT_FP32, infs, 1, &r), TPU_OK);
    assert_int_equal(r.v, 0x7F800000u);
    assert_int_equal(vpu_reduce(VPU_OP_MUL, 3, VPU_FMT_FP32, infs, 1, &r), TPU_EINVAL);
    assert_int_equal(vpu_reduce(VPU_OP_ADD, 3, VPU_FMT_FP32, infs, 0, &r), TPU_EINVAL);
}

/* oracle softmax: the documented five steps with the oracle reduction */
static void oracle_softmax(size_t n, vpu_fmt_t fx, const uint32_t *x, uint32_t *y,
                           unsigned lanes)
{
    uint32_t *e = malloc(n * sizeof *e);
    assert_non_null(e);
    fp32_t m = oracle_reduce(VPU_OP_MAX, n, fx, x, lanes);
    for (size_t i = 0; i < n; i++)
        e[i] = vpu_exp(fp32_sub(vpu_load(fx, x[i]), m)).v;
    fp32_t s = oracle_reduce(VPU_OP_ADD, n, VPU_FMT_FP32, e, lanes);
    fp32_t r = vpu_recip(s);
    for (size_t i = 0; i < n; i++)
        y[i] = fp32_mul(fp32_from_bits(e[i]), r).v;
    free(e);
}

/* host-float normal deviate (test side only) */
static double gauss(void)
{
    double u1 = ((double)vt_rand32() + 1.0) / 4294967297.0;
    double u2 = (double)vt_rand32() / 4294967296.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void test_softmax(void **state)
{
    (void)state;
    vt_seed(41);
    enum { NMAX = 1200 };
    uint32_t *x = malloc(NMAX * sizeof *x), *y = malloc(NMAX * sizeof *y),
             *w = malloc(NMAX * sizeof *w), *yb = malloc(NMAX * sizeof *yb);
    assert_true(x && y && w && yb);
    const double scales[] = { 0.01, 1.0, 5.0, 30.0, 300.0 };
    mpfr_t sum, t;
    mpfr_init2(sum, 400);
    mpfr_init2(t, 400);
    double worst = 0.0;
    for (int it = 0; it < 1500; it++) {
        size_t n = 1 + vt_rand32() % (it % 10 == 0 ? NMAX : 200);
        double sc = scales[it % 5];
        double shift = (it & 16) ? 1000.0 * gauss() : 0.0;
        for (size_t i = 0; i < n; i++)
            x[i] = ref_f2u((float)(shift + sc * gauss()));
        vpu_fmt_t fx = (it % 7 == 3) ? VPU_FMT_BF16 : VPU_FMT_FP32;
        if (fx == VPU_FMT_BF16)
            for (size_t i = 0; i < n; i++)
                x[i] = fp32_to_bf16(fp32_from_bits(x[i])).v;
        unsigned lanes = lane_set[vt_rand32() % NLANES];
        assert_int_equal(vpu_softmax(n, fx, x, VPU_FMT_FP32, y, lanes), TPU_OK);
        oracle_softmax(n, fx, x, w, lanes);
        for (size_t i = 0; i < n; i++)
            if (y[i] != w[i]) {
                print_error("softmax n=%zu lanes=%u y[%zu] = %08x, oracle %08x\n", n, lanes,
                            i, y[i], w[i]);
                fail();
            }
        assert_int_equal(vpu_softmax(n, fx, x, VPU_FMT_BF16, yb, lanes), TPU_OK);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(yb[i], fp32_to_bf16(fp32_from_bits(y[i])).v);
        /* |sum y - 1| <= bound * 2^-24, the sum taken exactly */
        mpfr_set_si(sum, -1, MPFR_RNDN);
        for (size_t i = 0; i < n; i++) {
            mpfr_set_flt(t, ref_u2f(y[i]), MPFR_RNDN);
            mpfr_add(sum, sum, t, MPFR_RNDN); /* exact at 400 bits */
        }
        mpfr_abs(sum, sum, MPFR_RNDN);
        mpfr_mul_2si(sum, sum, 24, MPFR_RNDN);
        double dev = mpfr_get_d(sum, MPFR_RNDN);
        unsigned bound = vpu_softmax_sum_bound_u(n, lanes);
        if (dev > (double)bound) {
            print_error("softmax n=%zu lanes=%u: |sum-1| = %.3f * 2^-24 > %u * 2^-24\n", n,
                        lanes, dev, bound);
            fail();
        }
        if (dev / bound > worst)
            worst = dev / bound;
    }
    printf("  softmax: max |sum - 1| / bound = %.3f over 1500 rows\n", worst);
    mpfr_clears(sum, t, (mpfr_ptr)0);
    free(x);
    free(y);
    free(w);
    free(yb);
}

void test_softmax_specials(void **state)
{
    (void)state;
    uint32_t y[6];
    const uint32_t one[1] = { 0xC2000000u };
    assert_int_equal(vpu_softmax(1, VPU_FMT_FP32, one, VPU_FMT_FP32, y, 4), TPU_OK);
    assert_int_equal(y[0], VPU_F_ONE);
    const uint32_t same[3] = { 0x40000000u, 0x40000000u, 0x40000000u };
    assert_int_equal(vpu_softmax(3, VPU_FMT_FP32, same, VPU_FMT_FP32, y, 2), TPU_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(y[i], 0x3EAAAAABu); /* recip(3) */
    const uint32_t ninf[4] = { 0xFF800000u, 0x3F800000u, 0xFF800000u, 0x3F800000u };
    assert_int_equal(vpu_softmax(4, VPU_FMT_FP32, ninf, VPU_FMT_FP32, y, 4), TPU_OK);
    assert_int_equal(y[0], 0);
    assert_int_equal(y[1], 0x3F000000u);
    assert_int_equal(y[2], 0);
    const uint32_t pinf[3] = { 0x7F800000u, 0x3F800000u, 0 };
    assert_int_equal(vpu_softmax(3, VPU_FMT_FP32, pinf, VPU_FMT_FP32, y, 4), TPU_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(y[i], TPU_FP32_QNAN);
    const uint32_t allninf[2] = { 0xFF800000u, 0xFF800000u };
    assert_int_equal(vpu_softmax(2, VPU_FMT_FP32, allninf, VPU_FMT_FP32, y, 4), TPU_OK);
    for (int i = 0; i < 2; i++)
        assert_int_equal(y[i], TPU_FP32_QNAN);
    const uint32_t nan[3] = { 0x3F800000u, 0x7FC00001u, 0 };
    assert_int_equal(vpu_softmax(3, VPU_FMT_FP32, nan, VPU_FMT_FP32, y, 1), TPU_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(y[i], TPU_FP32_QNAN);
    /* huge spread: x_i - m overflows to -Inf, e = 0 */
    const uint32_t spread[2] = { 0x7F7FFFFFu, 0xFF7FFFFFu };
    assert_int_equal(vpu_softmax(2, VPU_FMT_FP32, spread, VPU_FMT_FP32, y, 2), TPU_OK);
    assert_int_equal(y[0], VPU_F_ONE);
    assert_int_equal(y[1], 0);
    assert_int_equal(vpu_softmax(0, VPU_FMT_FP32, one, VPU_FMT_FP32, y, 4), TPU_EINVAL);
    assert_int_equal(vpu_softmax(1, VPU_FMT_FP32, one, VPU_FMT_FP32, y, 0), TPU_EINVAL);
}
