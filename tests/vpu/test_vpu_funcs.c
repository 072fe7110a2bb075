/* SPDX-License-Identifier: Apache-2.0 */
/* The unary functions: ROM tables and constants regenerated with MPFR, exhaustive bf16
   accuracy and special values, an fp32 sample, exp's scale input. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "vpu_test.h"

/* round(v * 2^scale) as an integer (v > 0) */
static uint64_t mpfr_fixed(const mpfr_t v, int scale)
{
    mpfr_t t;
    mpfr_init2(t, 400);
    mpfr_mul_2si(t, v, scale, MPFR_RNDN);
    mpfr_rint(t, t, MPFR_RNDN);
    uint64_t hi = 0, lo;
    mpfr_t h;
    mpfr_init2(h, 400);
    mpfr_div_2ui(h, t, 32, MPFR_RNDN);
    mpfr_rint_floor(h, h, MPFR_RNDN);
    hi = mpfr_get_ui(h, MPFR_RNDN);
    mpfr_mul_2ui(h, h, 32, MPFR_RNDN);
    mpfr_sub(h, t, h, MPFR_RNDN);
    lo = mpfr_get_ui(h, MPFR_RNDN);
    mpfr_clears(t, h, (mpfr_ptr)0);
    return (hi << 32) | lo;
}

static uint32_t mpfr_flt_bits(const mpfr_t v)
{
    return ref_f2u(mpfr_get_flt(v, MPFR_RNDN));
}

void test_rom_and_constants(void **state)
{
    (void)state;
    mpfr_t v;
    mpfr_init2(v, 300);
    for (unsigned i = 0; i < VPU_ROM_SIZE; i++) {
        mpfr_set_ui(v, i, MPFR_RNDN);
        mpfr_div_2ui(v, v, 8, MPFR_RNDN);
        mpfr_exp2(v, v, MPFR_RNDN);
        assert_int_equal(vpu_rom_exp2(i), mpfr_fixed(v, 31));
        mpfr_set_ui(v, 2 * i + 1, MPFR_RNDN);
        mpfr_div_2ui(v, v, 9, MPFR_RNDN);
        mpfr_add_ui(v, v, 1, MPFR_RNDN);
        mpfr_ui_div(v, 1, v, MPFR_RNDN);
        assert_int_equal(vpu_rom_recip(i), mpfr_fixed(v, 32));
        /* LOG[i] = round(2^40 * -ln(R')), R' = RECIP[i] / 2^32 (x2 for i >= 128); 0 at the
           ends */
        if (i == 0 || i == 255) {
            assert_true(vpu_rom_log(i) == 0);
        } else {
            mpfr_set_ui(v, vpu_rom_recip(i), MPFR_RNDN);
            mpfr_div_2ui(v, v, i >= 128 ? 31 : 32, MPFR_RNDN);
            mpfr_log(v, v, MPFR_RNDN);
            int neg = mpfr_sgn(v) > 0; /* LOG = -ln(R') */
            mpfr_abs(v, v, MPFR_RNDN);
            uint64_t mag = mpfr_fixed(v, 40);
            assert_true(vpu_rom_log(i) == (neg ? -(int64_t)mag : (int64_t)mag));
            assert_true(mag < (UINT64_C(1) << 39));
        }
        /* RSQRT[i] = round(2^32 / sqrt(z_i)) */
        mpfr_set_ui(v, 2 * (i & 127u) + 1, MPFR_RNDN);
        mpfr_div_2ui(v, v, 8, MPFR_RNDN);
        mpfr_add_ui(v, v, 1, MPFR_RNDN);
        mpfr_mul_2ui(v, v, i >> 7, MPFR_RNDN);
        mpfr_rec_sqrt(v, v, MPFR_RNDN);
        assert_int_equal(vpu_rom_rsqrt(i), mpfr_fixed(v, 32));
    }
    mpfr_const_log2(v, MPFR_RNDN);
    assert_int_equal(VPU_K_LN2_Q32, mpfr_fixed(v, 32));
    assert_true(VPU_K_LN2_Q48 == mpfr_fixed(v, 48));
    mpfr_ui_div(v, 1, v, MPFR_RNDN);
    assert_int_equal(VPU_K_LOG2E_Q39, mpfr_fixed(v, 39));
    assert_int_equal(VPU_K_THIRD_Q16, (1u << 16) / 3);
    mpfr_set_si(v, -1, MPFR_RNDN);
    mpfr_div_ui(v, v, 3, MPFR_RNDN);
    assert_int_equal(VPU_F_TANH_C1, mpfr_flt_bits(v));
    mpfr_set_si(v, 2, MPFR_RNDN);
    mpfr_div_ui(v, v, 15, MPFR_RNDN);
    assert_int_equal(VPU_F_TANH_C2, mpfr_flt_bits(v));
    mpfr_set_si(v, -17, MPFR_RNDN);
    mpfr_div_ui(v, v, 315, MPFR_RNDN);
    assert_int_equal(VPU_F_TANH_C3, mpfr_flt_bits(v));
    mpfr_set_str(v, "0.044715", 10, MPFR_RNDN);
    assert_int_equal(VPU_F_GELU_C, mpfr_flt_bits(v));
    mpfr_const_pi(v, MPFR_RNDN);
    mpfr_ui_div(v, 2, v, MPFR_RNDN);
    mpfr_sqrt(v, v, MPFR_RNDN);
    mpfr_mul_ui(v, v, 2, MPFR_RNDN);
    assert_int_equal(VPU_F_GELU_K, mpfr_flt_bits(v));
    mpfr_set_ui_2exp(v, 1, -64, MPFR_RNDN);
    assert_int_equal(VPU_F_2POW_M64, mpfr_flt_bits(v));
    mpfr_clear(v);
}

/* Documented bounds (docs/vpu.md, "Measured accuracy"). bf16 I/O: every function within
   1 bf16 ulp of the correctly rounded result and an error below 1 ulp of the exact value;
   fp32 I/O (sample): max error in fp32 ulps of the exact value. */
#define ERF_FP32_BOUND 0.75 /* measured 0.673 (docs/vpu.md, "erf") */
static const double fp32_bound[REF_NFUNCS] = {
    [REF_RELU] = 0.0, [REF_EXP] = 0.52, [REF_TANH] = 5.0, [REF_SIGMOID] = 3.5,
    [REF_GELU] = 4.0, [REF_RECIP] = 0.52, [REF_LOG] = 0.52, [REF_RSQRT] = 0.52,
    [REF_ERF] = ERF_FP32_BOUND,
};
/* gelu, fp32 I/O, x < 0: the relative error of v = K x (1 + C x^2) (a few roundings) is
   amplified by |v| in e^v, so the stated bound there is 8 + 4|v| ulps (docs/vpu.md). */
static double gelu_neg_bound(uint32_t x32)
{
    double x = (double)ref_u2f(x32);
    double v = 1.5957691216057308 * x * (1.0 + 0.044715 * x * x);
    return 8.0 + 4.0 * fabs(v);
}

typedef struct {
    double max_err;
    uint64_t max_dist;
    long n, cr;
} acc_t;

/* error of got (prec bits) against the exact ex; where the contract gives 0 or Inf the
   distance to the correctly rounded value counts */
static void measure(acc_t *a, uint32_t got, mpfr_t ex, int prec, double *err_out)
{
    uint32_t cr = ref_round(ex, prec);
    uint64_t d = ref_ulp_dist(got, cr, prec);
    uint32_t cm = cr & 0x7FFFFFFFu, gm = got & 0x7FFFFFFFu;
    double e = (cm == 0 || cm == 0x7F800000u || gm == 0 || gm == 0x7F800000u)
                   ? (double)d
                   : ref_err_ulps(got, ex, prec);
    a->n++;
    a->cr += got == cr;
    if (d > a->max_dist)
        a->max_dist = d;
    if (e > a->max_err)
        a->max_err = e;
    *err_out = e;
}

void test_exhaustive_bf16(void **state)
{
    (void)state;
    mpfr_t ex;
    mpfr_init2(ex, REF_PREC);
    for (int f = 0; f < REF_NFUNCS; f++) {
        acc_t a;
        memset(&a, 0, sizeof a);
        long special = 0;
        for (uint32_t xb = 0; xb < 0x10000u; xb++) {
            uint32_t x32 = xb << 16;
            uint32_t y32 = ref_model((ref_fn_t)f, bf16_to_fp32(bf16_from_bits((uint16_t)xb))).v;
            const char *why = ref_special_violation((ref_fn_t)f, x32, y32);
            if (why) {
                if (special++ < 5)
                    print_error("%s(bf16 %04x) = %08x: %s\n", ref_fn_names[f], xb, y32, why);
                continue;
            }
            if ((xb & 0x7FFFu) > 0x7F80u)
                continue;
            /* odd functions must be exactly odd */
            if ((f == REF_TANH || f == REF_RECIP || f == REF_ERF) && (xb & 0x8000u)) {
                uint32_t yp = ref_model((ref_fn_t)f, bf16_to_fp32(bf16_from_bits(
                                                           (uint16_t)(xb & 0x7FFFu)))).v;
                if (yp != (y32 & 0x7FFFFFFFu)) {
                    print_error("%s(bf16 %04x) not odd\n", ref_fn_names[f], xb);
                    special++;
                }
            }
            ref_eval((ref_fn_t)f, x32, ex);
            if (mpfr_nan_p(ex)) /* log / rsqrt of x < 0: the NaN was checked above */
                continue;
            uint32_t got = (uint32_t)fp32_to_bf16(fp32_from_bits(y32)).v << 16;
            double e;
            measure(&a, got, ex, 8, &e);
            if (e >= 1.0) {
                print_error("%s(bf16 %04x) = %04x: %.3f bf16 ulp\n", ref_fn_names[f], xb,
                            got >> 16, e);
                special++;
            }
        }
        printf("  %-8s bf16: max %llu ulp from CR, max err %.4f ulp, %.3f%% CR, %ld violations\n",
               ref_fn_names[f], (unsigned long long)a.max_dist, a.max_err,
               100.0 * (double)a.cr / (double)a.n, special);
        assert_int_equal(special, 0);
        assert_true(a.max_dist <= 1);
        if (f == REF_ERF) /* measured: erf is correctly rounded for every bf16 input */
            assert_int_equal(a.cr, a.n);
        assert_true(a.max_err < 1.0);
    }
    mpfr_clear(ex);
}

/* bf16 results are monotone: non-decreasing for relu, exp, tanh, sigmoid over all ordered
   non-NaN bf16 inputs; recip non-increasing on each side of zero (gelu is not monotone). */
void test_monotone_bf16(void **state)
{
    (void)state;
    const ref_fn_t fns[6] = { REF_RELU, REF_EXP, REF_TANH, REF_SIGMOID, REF_RECIP, REF_ERF };
    for (int k = 0; k < 6; k++) {
        int64_t prev = 0;
        int have = 0;
        for (int32_t o = -0x7F80; o <= 0x7F80; o++) { /* -Inf .. +Inf in order */
            uint16_t xb = (uint16_t)(o < 0 ? 0x8000 | -o : o);
            if (fns[k] == REF_RECIP && o == 0)
                have = 0; /* the pole */
            uint16_t yb = fp32_to_bf16(ref_model(fns[k], bf16_to_fp32(bf16_from_bits(xb)))).v;
            int64_t y = (yb & 0x8000) ? -(int64_t)(yb & 0x7FFF) : (int64_t)yb;
            if (have && (fns[k] == REF_RECIP ? y > prev : y < prev)) {
                print_error("%s not monotone at bf16 %04x\n", ref_fn_names[fns[k]], xb);
                fail();
            }
            prev = y;
            have = 1;
        }
    }
    /* log non-decreasing and rsqrt non-increasing on [+0, +Inf] (x < 0 gives NaN) */
    for (int k = 0; k < 2; k++) {
        ref_fn_t fn = k ? REF_RSQRT : REF_LOG;
        int64_t prev = 0;
        for (int32_t o = 0; o <= 0x7F80; o++) {
            uint16_t yb = fp32_to_bf16(ref_model(fn, bf16_to_fp32(bf16_from_bits((uint16_t)o)))).v;
            int64_t y = (yb & 0x8000) ? -(int64_t)(yb & 0x7FFF) : (int64_t)yb;
            if (o > 0 && (k ? y > prev : y < prev)) {
                print_error("%s not monotone at bf16 %04x\n", ref_fn_names[fn], (unsigned)o);
                fail();
            }
            prev = y;
        }
    }
}

/* fp32, dense: log on every fp32 in [1 - 2^-7, 1 + 2^-6) (where k ln2 + LOG[i] + log(1 + r)
   could cancel) and on every 61st pattern of [2^-3, 2^3); rsqrt on every 37th pattern of
   [1, 4) (both ROM halves) and the powers of 4 (exact) */
void test_log_rsqrt_dense(void **state)
{
    (void)state;
    mpfr_t ex;
    mpfr_init2(ex, REF_PREC);
    const struct { ref_fn_t fn; uint32_t lo, hi, step; } scans[] = {
        { REF_LOG, 0x3F7E0000u, 0x3F820000u, 1 },
        { REF_LOG, 0x3E000000u, 0x41000000u, 61 },
        { REF_RSQRT, 0x3F800000u, 0x40800000u, 37 },
    };
    for (size_t k = 0; k < sizeof scans / sizeof scans[0]; k++) {
        acc_t a;
        memset(&a, 0, sizeof a);
        for (uint32_t x32 = scans[k].lo; x32 < scans[k].hi; x32 += scans[k].step) {
            uint32_t y32 = ref_model(scans[k].fn, fp32_from_bits(x32)).v;
            assert_null(ref_special_violation(scans[k].fn, x32, y32));
            ref_eval(scans[k].fn, x32, ex);
            double e;
            measure(&a, y32, ex, 24, &e);
            if (e > fp32_bound[scans[k].fn]) {
                print_error("%s(%08x) = %08x: %.3f fp32 ulp\n", ref_fn_names[scans[k].fn],
                            x32, y32, e);
                fail();
            }
        }
        printf("  %-8s fp32 [%08x, %08x) step %u: max err %.4f ulp, %.3f%% CR\n",
               ref_fn_names[scans[k].fn], scans[k].lo, scans[k].hi, scans[k].step, a.max_err,
               100.0 * (double)a.cr / (double)a.n);
    }
    for (int p = -63; p <= 63; p++) { /* rsqrt(4^p) = 2^-p exactly */
        uint32_t x32 = (uint32_t)(127 + 2 * p) << 23;
        assert_int_equal(vpu_rsqrt(fp32_from_bits(x32)).v, (uint32_t)(127 - p) << 23);
    }
    mpfr_clear(ex);
}

void test_fp32_sample(void **state)
{
    (void)state;
    mpfr_t ex;
    mpfr_init2(ex, REF_PREC);
    vt_seed(21);
    for (int f = 0; f < REF_NFUNCS; f++) {
        acc_t a, aneg;
        memset(&a, 0, sizeof a);
        memset(&aneg, 0, sizeof aneg);
        for (long i = 0; i < 60000; i++) {
            uint32_t x32 = vt_rand32();
            if (i & 1) /* |x| in [2^-20, 2^8) (x > 0 for log and rsqrt) */
                x32 = (x32 & (f == REF_LOG || f == REF_RSQRT ? 0x007FFFFFu : 0x807FFFFFu)) |
                      ((127 - 20 + vt_rand32() % 28) << 23);
            uint32_t y32 = ref_model((ref_fn_t)f, fp32_from_bits(x32)).v;
            const char *why = ref_special_violation((ref_fn_t)f, x32, y32);
            if (why) {
                print_error("%s(%08x) = %08x: %s\n", ref_fn_names[f], x32, y32, why);
                fail();
            }
            if ((x32 & 0x7FFFFFFFu) > 0x7F800000u)
                continue;
            ref_eval((ref_fn_t)f, x32, ex);
            if (mpfr_nan_p(ex))
                continue;
            int gneg = f == REF_GELU && (x32 >> 31);
            double e;
            measure(gneg ? &aneg : &a, y32, ex, 24, &e);
            double bound = gneg ? gelu_neg_bound(x32) : fp32_bound[f];
            if (e > bound) {
                print_error("%s(%08x) = %08x: %.3f fp32 ulp > %.2f\n", ref_fn_names[f], x32,
                            y32, e, bound);
                fail();
            }
        }
        printf("  %-8s fp32 sample: max err %.4f ulp, %.3f%% CR", ref_fn_names[f], a.max_err,
               100.0 * (double)a.cr / (double)a.n);
        if (f == REF_GELU)
            printf(" (x >= 0); x < 0: max err %.2f ulp", aneg.max_err);
        printf("\n");
    }
    mpfr_clear(ex);
}

void test_exp_scaled(void **state)
{
    (void)state;
    const fp32_t down = fp32_from_bits(VPU_F_2POW_M64), up = fp32_from_bits(0x5F800000u);
    vt_seed(22);
    for (long i = 0; i < 400000; i++) {
        uint32_t x32 = i < 65536 ? (uint32_t)i << 16 : vt_rand32();
        fp32_t x = fp32_from_bits(x32);
        fp32_t e = vpu_exp(x);
        assert_int_equal(vpu_exp_scaled(x, 0).v, e.v);
        fp32_t es = vpu_exp_scaled(x, 64);
        /* the scale only moves the exponent: scaling back gives exp bit for bit */
        uint32_t ees = (es.v >> 23) & 0xFFu;
        if (ees != 0 && ees != 0xFFu)
            assert_int_equal(fp32_mul(es, down).v, e.v);
        else if (ees == 0)
            assert_int_equal(e.v, 0);
        else if (!fp32_is_nan(es))
            assert_true((e.v & 0x7FFFFFFFu) >= 0x5F800000u); /* e^x >= 2^64 */
        fp32_t em = vpu_exp_scaled(x, -64);
        if (((em.v >> 23) & 0xFFu) != 0 && ((em.v >> 23) & 0xFFu) != 0xFFu)
            assert_int_equal(fp32_mul(em, up).v, e.v);
    }
    assert_int_equal(vpu_exp_scaled(fp32_from_bits(0), 65).v, TPU_FP32_QNAN);
    assert_int_equal(vpu_exp_scaled(fp32_from_bits(0), -65).v, TPU_FP32_QNAN);
    /* e^-100 * 2^64 is normal although e^-100 is not */
    assert_int_equal(vpu_exp(fp32_from_bits(0xC2C80000u)).v, 0);
    assert_true(vpu_exp_scaled(fp32_from_bits(0xC2C80000u), 64).v > 0x00800000u);
}

void test_special_fp32(void **state)
{
    (void)state;
    /* the special values of docs/vpu.md, spelled out */
    const uint32_t PINF = 0x7F800000u, NINF = 0xFF800000u, NZ = 0x80000000u, ONE = VPU_F_ONE;
    struct { vpu_op_t op; uint32_t x, y; } cases[] = {
        { VPU_OP_EXP, 0, ONE }, { VPU_OP_EXP, NZ, ONE }, { VPU_OP_EXP, 0x00000001u, ONE },
        { VPU_OP_EXP, PINF, PINF }, { VPU_OP_EXP, NINF, 0 },
        { VPU_OP_EXP, 0x42B20000u, PINF }, /* 89 */ { VPU_OP_EXP, 0xC2B00000u, 0 }, /* -88 */
        { VPU_OP_EXP, 0x43000000u, PINF }, { VPU_OP_EXP, 0xC3000000u, 0 },
        { VPU_OP_EXP, 0x7F7FFFFFu, PINF }, { VPU_OP_EXP, 0xFF7FFFFFu, 0 },
        { VPU_OP_TANH, 0, 0 }, { VPU_OP_TANH, NZ, NZ }, { VPU_OP_TANH, 0x80000001u, NZ },
        { VPU_OP_TANH, PINF, ONE }, { VPU_OP_TANH, NINF, 0xBF800000u },
        { VPU_OP_TANH, 0x41200000u, ONE }, { VPU_OP_TANH, 0x2F800000u, 0x2F800000u },
        { VPU_OP_SIGMOID, 0, 0x3F000000u }, { VPU_OP_SIGMOID, NZ, 0x3F000000u },
        { VPU_OP_SIGMOID, PINF, ONE }, { VPU_OP_SIGMOID, NINF, 0 },
        { VPU_OP_SIGMOID, 0x42C80000u, ONE }, { VPU_OP_SIGMOID, 0xC2C80000u, 0 },
        { VPU_OP_GELU, 0, 0 }, { VPU_OP_GELU, NZ, NZ }, { VPU_OP_GELU, PINF, PINF },
        { VPU_OP_GELU, NINF, NZ }, { VPU_OP_GELU, 0xC2C80000u, NZ },
        { VPU_OP_GELU, 0x7F7FFFFFu, 0x7F7FFFFFu }, { VPU_OP_GELU, 0xFF7FFFFFu, NZ },
        { VPU_OP_RECIP, 0, PINF }, { VPU_OP_RECIP, NZ, NINF }, { VPU_OP_RECIP, 0x00000010u, PINF },
        { VPU_OP_RECIP, PINF, 0 }, { VPU_OP_RECIP, NINF, NZ },
        { VPU_OP_RECIP, 0x7E800000u, 0x00800000u }, { VPU_OP_RECIP, 0x7E800001u, 0 },
        { VPU_OP_RECIP, 0xFF7FFFFFu, NZ }, { VPU_OP_RECIP, 0x00800000u, 0x7E800000u },
        { VPU_OP_RECIP, ONE, ONE }, { VPU_OP_RECIP, 0x40400000u, 0x3EAAAAABu },
        { VPU_OP_RELU, NZ, 0 }, { VPU_OP_RELU, NINF, 0 }, { VPU_OP_RELU, PINF, PINF },
        { VPU_OP_RELU, 0x80000001u, 0 }, { VPU_OP_RELU, 0x00000001u, 0 },
        { VPU_OP_RELU, 0xBF800000u, 0 }, { VPU_OP_RELU, ONE, ONE },
        { VPU_OP_CVT, 0x00000001u, 0 }, { VPU_OP_CVT, 0xFFC01234u, TPU_FP32_QNAN },
        { VPU_OP_LOG, 0, NINF }, { VPU_OP_LOG, NZ, NINF }, { VPU_OP_LOG, 0x00000001u, NINF },
        { VPU_OP_LOG, 0x80000001u, NINF }, { VPU_OP_LOG, PINF, PINF },
        { VPU_OP_LOG, NINF, TPU_FP32_QNAN }, { VPU_OP_LOG, 0xBF800000u, TPU_FP32_QNAN },
        { VPU_OP_LOG, 0x80800000u, TPU_FP32_QNAN }, { VPU_OP_LOG, ONE, 0 },
        { VPU_OP_LOG, 0x40000000u, 0x3F317218u }, /* ln 2 */
        { VPU_OP_LOG, 0x3F000000u, 0xBF317218u }, /* ln 1/2 */
        { VPU_OP_LOG, 0x3F800001u, 0x33FFFFFFu }, /* ln(1 + 2^-23) */
        { VPU_OP_LOG, 0x3F7FFFFFu, 0xB3800000u }, /* ln(1 - 2^-24) */
        { VPU_OP_LOG, 0x7F7FFFFFu, 0x42B17218u }, { VPU_OP_LOG, 0x00800000u, 0xC2AEAC50u },
        { VPU_OP_RSQRT, 0, PINF }, { VPU_OP_RSQRT, NZ, NINF }, { VPU_OP_RSQRT, 0x00000001u, PINF },
        { VPU_OP_RSQRT, 0x80000001u, NINF }, { VPU_OP_RSQRT, PINF, 0 },
        { VPU_OP_RSQRT, NINF, TPU_FP32_QNAN }, { VPU_OP_RSQRT, 0xBF800000u, TPU_FP32_QNAN },
        { VPU_OP_RSQRT, ONE, ONE }, { VPU_OP_RSQRT, 0x40800000u, 0x3F000000u },
        { VPU_OP_RSQRT, 0x40000000u, 0x3F3504F3u }, /* 1/sqrt(2) */
        { VPU_OP_RSQRT, 0x00800000u, 0x5F000000u }, { VPU_OP_RSQRT, 0x7F7FFFFFu, 0x1F800000u },
        { VPU_OP_ERF, 0, 0 }, { VPU_OP_ERF, NZ, NZ }, { VPU_OP_ERF, 0x00000001u, 0 },
        { VPU_OP_ERF, 0x80000001u, NZ }, { VPU_OP_ERF, PINF, ONE },
        { VPU_OP_ERF, NINF, 0xBF800000u }, { VPU_OP_ERF, 0x40800000u, ONE },
        { VPU_OP_ERF, 0xC0800000u, 0xBF800000u }, { VPU_OP_ERF, 0x7F7FFFFFu, ONE },
        { VPU_OP_ERF, 0x00800000u, 0x00906EBAu }, /* 2/sqrt(pi) 2^-126 (0.53 ulp) */
        { VPU_OP_ERF, ONE, 0x3F57BB3Du },         /* erf(1) = 0.8427007929... */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t y = vpu_unary(cases[i].op, fp32_from_bits(cases[i].x)).v;
        if (y != cases[i].y) {
            print_error("%s(%08x) = %08x, expected %08x\n", vpu_op_name(cases[i].op),
                        cases[i].x, y, cases[i].y);
            fail();
        }
    }
    /* every NaN pattern class gives the canonical NaN, for every unary op */
    const uint32_t nans[] = { 0x7F800001u, 0x7FC00000u, 0xFFC00000u, 0x7FFFFFFFu, 0xFFFFFFFFu,
                              0xFF800001u };
    for (int op = VPU_OP_CVT; op < VPU_OP_COUNT; op++)
        for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++)
            assert_int_equal(vpu_unary((vpu_op_t)op, fp32_from_bits(nans[i])).v, TPU_FP32_QNAN);
}
