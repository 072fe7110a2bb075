/* SPDX-License-Identifier: Apache-2.0 */
/* test-numerics: the six operations of docs/numerics.md (bf16_to_fp32, fp32_to_bf16,
 * bf16_mul, fp32_add, fp32_sub, fp32_mac) of the C model against two oracles we did not
 * write (MPFR and the host CPU, see oracle.h), on raw bits:
 *   - millions of random inputs from several generators (uniform bits, close exponents,
 *     tiny, huge, special values);
 *   - the named edge cases of the contract, one cmocka test each;
 *   - long MAC chains compared step by step;
 *   - a self-check that the machinery does detect wrong values.
 * Environment: TPU_NUMERICS_SEED (default fixed), TPU_NUMERICS_SCALE (multiplies the
 * random counts, default 1). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"
#include "harness.h"
#include "oracle.h"
#include "tpu/numerics.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define F_PZERO 0x00000000u
#define F_NZERO 0x80000000u
#define F_ONE 0x3F800000u
#define F_MIN 0x00800000u /* 2^-126 */
#define F_MAX 0x7F7FFFFFu
#define F_INF 0x7F800000u
#define F_NINF 0xFF800000u
#define F_QNAN 0x7FC00000u
#define B_ONE 0x3F80u
#define B_NONE 0xBF80u
#define B_INF 0x7F80u
#define B_NINF 0xFF80u
#define B_QNAN 0x7FC0u

static uint64_t g_seed = UINT64_C(0x5450554E554D4552);
static uint64_t g_scale = 1;

static void seed_for(rng_t *r, uint64_t salt) { rng_seed(r, g_seed ^ (salt * UINT64_C(0x9E3779B97F4A7C15))); }

static void done(tally_t *t)
{
    h_summary(t);
    assert_true(t->n > 0);
    assert_int_equal(t->bad, 0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint32_t f_exp(uint32_t v) { return (v >> 23) & 0xFFu; }
static uint32_t f_sign(uint32_t v) { return v & 0x80000000u; }

/* The signed value of a normal fp32 with a small exponent, in units of 2^-149. */
static int64_t units149(uint32_t v)
{
    int64_t m = (int64_t)((0x800000u | (v & 0x7FFFFFu))) << (f_exp(v) - 1);
    return f_sign(v) ? -m : m;
}

/* fp32 bits of the exact product of two normal bf16 (no flush/overflow: the caller keeps
   the exponents in range). */
static uint32_t exact_product_bits(uint16_t a, uint16_t b)
{
    uint32_t ma = 0x80u | (a & 0x7Fu), mb = 0x80u | (b & 0x7Fu), p = ma * mb;
    int32_t be = (int32_t)((a >> 7) & 0xFFu) + (int32_t)((b >> 7) & 0xFFu) - 127;
    uint32_t frac = (p & 0x8000u) ? (p & 0x7FFFu) << 8 : (p & 0x3FFFu) << 9;
    be += (p & 0x8000u) ? 1 : 0;
    return (((uint32_t)(a ^ b) & 0x8000u) << 16) | ((uint32_t)be << 23) | frac;
}

/* ------------------------------------------------------------------------------------ */
/* Every operand position                                                                 */

static const uint32_t F_OTHERS[] = {
    0x00000000u, 0x80000000u, 0x3F800000u, 0xBF800000u, 0x00800000u, 0x80800000u,
    0x00800001u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
    0x00000001u, 0x807FFFFFu, 0x40490FDBu, 0xC0490FDBu, 0x33800000u, 0x4B800000u,
    0x0DA24260u, 0xFF800001u,
};
static const uint16_t B_OTHERS[] = {
    0x0000u, 0x8000u, 0x3F80u, 0xBF80u, 0x0080u, 0x8080u, 0x0081u, 0x7F7Fu, 0xFF7Fu,
    0x7F80u, 0xFF80u, 0x7FC0u, 0x0001u, 0x807Fu, 0x4049u, 0xC049u, 0x0B00u, 0x7300u,
    0x1F80u, 0x5F80u, 0xFF81u,
};

/* Puts each fp32 value of fv and each bf16 value of bv in every operand position of every
   operation, with the others from F_OTHERS / B_OTHERS. If nan_result, every result must
   also be the canonical NaN. */
static void all_positions(tally_t *t, const uint32_t *fv, size_t nf, const uint16_t *bv,
                          size_t nb, int nan_result)
{
    uint64_t e32 = nan_result ? F_QNAN : H_NO_EXPECT, e16 = nan_result ? B_QNAN : H_NO_EXPECT;
    for (size_t i = 0; i < nf; i++) {
        uint32_t v = fv[i];
        h_check_with(t, h_model, OP_F2B, A1(v), e16);
        for (size_t j = 0; j < ARRAY_LEN(F_OTHERS); j++) {
            uint32_t o = F_OTHERS[j];
            h_check_with(t, h_model, OP_ADD, A2(v, o), e32);
            h_check_with(t, h_model, OP_ADD, A2(o, v), e32);
            h_check_with(t, h_model, OP_SUB, A2(v, o), e32);
            h_check_with(t, h_model, OP_SUB, A2(o, v), e32);
        }
        for (size_t j = 0; j < ARRAY_LEN(B_OTHERS); j++)
            for (size_t k = 0; k < ARRAY_LEN(B_OTHERS); k++)
                h_check_with(t, h_model, OP_MAC, A3(v, B_OTHERS[j], B_OTHERS[k]), e32);
    }
    for (size_t i = 0; i < nb; i++) {
        uint16_t v = bv[i];
        h_check_with(t, h_model, OP_B2F, A1(v), e32);
        for (size_t j = 0; j < ARRAY_LEN(B_OTHERS); j++) {
            h_check_with(t, h_model, OP_MUL, A2(v, B_OTHERS[j]), e32);
            h_check_with(t, h_model, OP_MUL, A2(B_OTHERS[j], v), e32);
            for (size_t k = 0; k < ARRAY_LEN(F_OTHERS); k++) {
                h_check_with(t, h_model, OP_MAC, A3(F_OTHERS[k], v, B_OTHERS[j]), e32);
                h_check_with(t, h_model, OP_MAC, A3(F_OTHERS[k], B_OTHERS[j], v), e32);
            }
        }
    }
}

static void signed_zero_every_operand(void **state)
{
    (void)state;
    tally_t t = { .name = "signed zero in every operand" };
    static const uint32_t fv[] = { F_PZERO, F_NZERO };
    static const uint16_t bv[] = { 0x0000u, 0x8000u };
    all_positions(&t, fv, ARRAY_LEN(fv), bv, ARRAY_LEN(bv), 0);
    h_expect(&t, OP_B2F, A1(0x8000u), F_NZERO);
    h_expect(&t, OP_B2F, A1(0x0000u), F_PZERO);
    h_expect(&t, OP_F2B, A1(F_NZERO), 0x8000u);
    h_expect(&t, OP_MUL, A2(0x8000u, B_ONE), F_NZERO);
    h_expect(&t, OP_MUL, A2(B_NONE, 0x0000u), F_NZERO);
    h_expect(&t, OP_MUL, A2(0x8000u, 0x8000u), F_PZERO);
    h_expect(&t, OP_MUL, A2(0x8000u, 0x7F7Fu), F_NZERO);
    h_expect(&t, OP_ADD, A2(F_PZERO, F_NZERO), F_PZERO);
    h_expect(&t, OP_ADD, A2(F_NZERO, F_PZERO), F_PZERO);
    h_expect(&t, OP_ADD, A2(F_NZERO, F_NZERO), F_NZERO);
    h_expect(&t, OP_ADD, A2(F_NZERO, F_ONE), F_ONE);
    h_expect(&t, OP_ADD, A2(0xBF800000u, F_PZERO), 0xBF800000u);
    h_expect(&t, OP_SUB, A2(F_NZERO, F_PZERO), F_NZERO);
    h_expect(&t, OP_SUB, A2(F_PZERO, F_PZERO), F_PZERO);
    h_expect(&t, OP_SUB, A2(F_NZERO, F_NZERO), F_PZERO);
    h_expect(&t, OP_SUB, A2(F_PZERO, F_ONE), 0xBF800000u);
    h_expect(&t, OP_MAC, A3(F_NZERO, 0x0000u, B_ONE), F_PZERO);
    h_expect(&t, OP_MAC, A3(F_NZERO, 0x8000u, B_ONE), F_NZERO);
    h_expect(&t, OP_MAC, A3(F_ONE, 0x8000u, B_ONE), F_ONE);
    h_expect(&t, OP_MAC, A3(F_NZERO, B_ONE, B_NONE), 0xBF800000u);
    done(&t);
}

static void subnormal_inputs_daz_every_operand(void **state)
{
    (void)state;
    tally_t t = { .name = "subnormal (DAZ) in every operand" };
    static const uint32_t fv[] = { 0x00000001u, 0x007FFFFFu, 0x00400000u,
                                   0x80000001u, 0x807FFFFFu, 0x80400000u };
    static const uint16_t bv[] = { 0x0001u, 0x007Fu, 0x0040u, 0x8001u, 0x807Fu, 0x8040u };
    all_positions(&t, fv, ARRAY_LEN(fv), bv, ARRAY_LEN(bv), 0);
    h_expect(&t, OP_B2F, A1(0x007Fu), F_PZERO);
    h_expect(&t, OP_B2F, A1(0x807Fu), F_NZERO);
    h_expect(&t, OP_F2B, A1(0x007FFFFFu), 0x0000u); /* would round up to 2^-126 without DAZ */
    h_expect(&t, OP_F2B, A1(0x807FFFFFu), 0x8000u);
    h_expect(&t, OP_MUL, A2(0x007Fu, 0x7F7Fu), F_PZERO); /* ~4 without DAZ */
    h_expect(&t, OP_MUL, A2(0x807Fu, 0x7F7Fu), F_NZERO);
    h_expect(&t, OP_MUL, A2(0x007Fu, B_INF), F_QNAN);   /* Inf x zero */
    h_expect(&t, OP_ADD, A2(0x00000001u, 0x00000001u), F_PZERO);
    h_expect(&t, OP_ADD, A2(0x007FFFFFu, 0x00000001u), F_PZERO); /* 2^-126 without DAZ */
    h_expect(&t, OP_ADD, A2(0x80000001u, 0x80000001u), F_NZERO);
    h_expect(&t, OP_ADD, A2(0x80000001u, 0x00000001u), F_PZERO);
    h_expect(&t, OP_ADD, A2(F_MIN, 0x807FFFFFu), F_MIN);
    h_expect(&t, OP_SUB, A2(F_MIN, 0x007FFFFFu), F_MIN);
    h_expect(&t, OP_MAC, A3(0x007FFFFFu, B_ONE, 0x0080u), F_MIN);
    h_expect(&t, OP_MAC, A3(0x807FFFFFu, 0x8001u, B_ONE), F_NZERO); /* (-0) + (-0) */
    h_expect(&t, OP_MAC, A3(0x807FFFFFu, 0x0001u, B_ONE), F_PZERO); /* (-0) + (+0) */
    done(&t);
}

/* ------------------------------------------------------------------------------------ */
/* Products around 2^-126                                                                 */

enum { P_BELOW, P_AT, P_ABOVE };

/* All significand pairs for several exponent splits of ea + eb = S, S in 126..128: exact
   products in [2^-128, 2^-124). Checks bf16_mul (with the contract's value for the class
   `want`) and fp32_mac with assorted accumulators, for the products of class `want`. */
static void product_grid(tally_t *t, int want)
{
    static const uint32_t accs[] = { F_PZERO, F_NZERO, F_MIN, 0x81000000u, F_ONE, 0x80800000u };
    static const int splits[] = { 1, 2, 63, 64, 100, 125, 126, 127 };
    unsigned k = 0;
    for (int S = 126; S <= 128; S++) {
        for (size_t si = 0; si < ARRAY_LEN(splits); si++) {
            int ea = splits[si], eb = S - ea;
            if (eb < 1 || eb > 254)
                continue;
            for (uint32_t fa = 0; fa < 128; fa++) {
                for (uint32_t fb = 0; fb < 128; fb++, k++) {
                    uint32_t m = (128 + fa) * (128 + fb); /* |p| = m * 2^(S - 268) */
                    int cls = S == 126 ? P_BELOW
                            : S == 127 ? (m < 0x8000u ? P_BELOW : P_ABOVE)
                                       : (m == 0x4000u ? P_AT : P_ABOVE);
                    if (cls != want)
                        continue;
                    uint16_t sa = (uint16_t)((k & 1u) << 15), sb = (uint16_t)((k & 2u) << 14);
                    uint16_t a = (uint16_t)(sa | ((uint32_t)ea << 7) | fa);
                    uint16_t b = (uint16_t)(sb | ((uint32_t)eb << 7) | fb);
                    uint32_t sign = (uint32_t)(sa ^ sb) << 16;
                    if (cls == P_BELOW)
                        h_expect(t, OP_MUL, A2(a, b), sign);
                    else if (cls == P_AT)
                        h_expect(t, OP_MUL, A2(a, b), sign | F_MIN);
                    else
                        h_check(t, OP_MUL, A2(a, b));
                    h_check(t, OP_MAC, A3(accs[k % ARRAY_LEN(accs)], a, b));
                }
            }
        }
    }
    if (want == P_AT) { /* every exponent split of exactly 2^-126, every sign, every acc */
        for (int ea = 1; ea <= 127; ea++) {
            for (uint32_t s = 0; s < 4; s++) {
                uint16_t a = (uint16_t)(((s & 1u) << 15) | ((uint32_t)ea << 7));
                uint16_t b = (uint16_t)(((s & 2u) << 14) | ((uint32_t)(128 - ea) << 7));
                h_expect(t, OP_MUL, A2(a, b), (((uint32_t)(a ^ b) & 0x8000u) << 16) | F_MIN);
                h_expect(t, OP_MUL, A2(b, a), (((uint32_t)(a ^ b) & 0x8000u) << 16) | F_MIN);
                for (size_t i = 0; i < ARRAY_LEN(accs); i++)
                    h_check(t, OP_MAC, A3(accs[i], a, b));
            }
        }
    }
}

static void product_just_below_min_normal(void **state)
{
    (void)state;
    tally_t t = { .name = "product just below 2^-126 (FTZ)" };
    product_grid(&t, P_BELOW);
    done(&t);
}

static void product_at_min_normal(void **state)
{
    (void)state;
    tally_t t = { .name = "product exactly 2^-126" };
    product_grid(&t, P_AT);
    done(&t);
}

static void product_just_above_min_normal(void **state)
{
    (void)state;
    tally_t t = { .name = "product just above 2^-126" };
    product_grid(&t, P_ABOVE);
    done(&t);
}

/* ------------------------------------------------------------------------------------ */
/* Sums that become subnormal                                                             */

static void sum_becomes_subnormal_ftz_with_sign(void **state)
{
    (void)state;
    tally_t t = { .name = "sum below 2^-126 flushes, keeps sign" };
    rng_t r;
    seed_for(&r, 101);
    uint64_t n_pos = 0, n_neg = 0, n_exact_zero = 0;
    for (uint32_t i = 0; i < 200000u; i++) {
        /* two normals with exponents 1..2 and opposite effective signs */
        uint32_t ea = 1 + (i & 1u), eb = 1;
        uint32_t fa = gen_frac(&r, 23), fb = gen_frac(&r, 23);
        if (ea == 2) { /* keep the difference small: a just above 2^-125, b just below */
            fa &= 0x3FFFFFu >> rng_below(&r, 20);
            fb |= 0x7FFFFFu ^ (0x3FFFFFu >> rng_below(&r, 20));
        }
        uint32_t s = gen_sign32(&r);
        uint32_t a = s | (ea << 23) | fa, b = (s ^ 0x80000000u) | (eb << 23) | fb;
        if (i & 2u) { uint32_t tmp = a; a = b; b = tmp; }
        int64_t sum = units149(a) + units149(b);
        int64_t mag = sum < 0 ? -sum : sum;
        if (mag >= (1 << 23))
            continue;
        uint32_t want = sum < 0 ? F_NZERO : F_PZERO; /* also x + (-x) = +0 */
        n_pos += sum > 0;
        n_neg += sum < 0;
        n_exact_zero += sum == 0;
        h_expect(&t, OP_ADD, A2(a, b), want);
        h_expect(&t, OP_SUB, A2(a, b ^ 0x80000000u), want);
    }
    /* fp32_mac: a product in [2^-126, 2^-124) against an accumulator of the other sign */
    for (uint32_t i = 0; i < 200000u; i++) {
        int S = rng_range(&r, 127, 129), ea = rng_range(&r, 1, S - 1);
        uint16_t a = (uint16_t)((rng_u32(&r) & 0x8000u) | ((uint32_t)ea << 7) | gen_frac(&r, 7));
        uint16_t b = (uint16_t)((rng_u32(&r) & 0x8000u) | ((uint32_t)(S - ea) << 7) | gen_frac(&r, 7));
        uint32_t p = exact_product_bits(a, b);
        if (f_exp(p) < 1)
            continue;
        uint32_t mag = (p & 0x7FFFFFFFu) + (uint32_t)rng_range(&r, -(1 << 22), 1 << 22);
        if (f_exp(mag) < 1 || f_exp(mag) > 3)
            continue;
        uint32_t acc = (f_sign(p) ^ 0x80000000u) | mag;
        int64_t sum = units149(acc) + units149(p);
        int64_t am = sum < 0 ? -sum : sum;
        if (am >= (1 << 23))
            continue;
        n_pos += sum > 0;
        n_neg += sum < 0;
        h_expect(&t, OP_MAC, A3(acc, a, b), sum < 0 ? F_NZERO : F_PZERO);
    }
    h_expect(&t, OP_ADD, A2(0x00C00000u, 0x80A00000u), F_PZERO); /* 1.5 - 1.25 (x 2^-126) */
    h_expect(&t, OP_ADD, A2(0x80C00000u, 0x00A00000u), F_NZERO);
    h_expect(&t, OP_SUB, A2(0x00800000u, 0x00800001u), F_NZERO);
    h_expect(&t, OP_SUB, A2(0x01000000u, 0x00FFFFFFu), F_PZERO); /* 2^-125 - (2^-125 - 2^-149) */
    printf("  FTZ sums: %" PRIu64 " positive, %" PRIu64 " negative, %" PRIu64 " exact zero\n",
           n_pos, n_neg, n_exact_zero);
    assert_true(n_pos > 1000 && n_neg > 1000);
    done(&t);
}

/* ------------------------------------------------------------------------------------ */
/* Overflow                                                                               */

static void overflow_product_to_inf(void **state)
{
    (void)state;
    tally_t t = { .name = "product overflow to Inf" };
    static const uint32_t accs[] = { F_PZERO, F_NZERO, F_MAX, 0xFF7FFFFFu, F_INF, F_NINF, F_ONE };
    static const int splits[] = { 127, 128, 200, 254 };
    unsigned k = 0;
    uint64_t n_inf = 0;
    for (int S = 380; S <= 382; S++) {
        for (size_t si = 0; si < ARRAY_LEN(splits); si++) {
            int ea = splits[si], eb = S - ea;
            if (eb < 1 || eb > 254)
                continue;
            for (uint32_t fa = 0; fa < 128; fa++) {
                for (uint32_t fb = 0; fb < 128; fb++, k++) {
                    uint32_t m = (128 + fa) * (128 + fb); /* |p| = m * 2^(S - 268) */
                    uint16_t a = (uint16_t)(((k & 1u) << 15) | ((uint32_t)ea << 7) | fa);
                    uint16_t b = (uint16_t)(((k & 2u) << 14) | ((uint32_t)eb << 7) | fb);
                    uint32_t sign = ((uint32_t)(a ^ b) & 0x8000u) << 16;
                    int inf = S == 382 || (S == 381 && m >= 0x8000u);
                    n_inf += (uint64_t)inf;
                    if (inf)
                        h_expect(&t, OP_MUL, A2(a, b), sign | F_INF);
                    else
                        h_check(&t, OP_MUL, A2(a, b));
                    h_check(&t, OP_MAC, A3(accs[k % ARRAY_LEN(accs)], a, b));
                }
            }
        }
    }
    h_expect(&t, OP_MUL, A2(0x7F7Fu, 0x7F7Fu), F_INF);
    h_expect(&t, OP_MUL, A2(0x7F7Fu, 0xFF7Fu), F_NINF);
    h_expect(&t, OP_MUL, A2(0x7F00u, 0x4000u), F_INF);      /* exactly 2^128 */
    h_expect(&t, OP_MUL, A2(0x7F00u, 0x3FFFu), 0x7F7F0000u); /* bf16 max, no overflow */
    h_expect(&t, OP_MUL, A2(0x5F7Fu, 0x5F7Fu), 0x7F7E0100u); /* (2^63 (2 - 2^-7))^2 < 2^128 */
    assert_true(n_inf > 0);
    done(&t);
}

static void overflow_sum_to_inf(void **state)
{
    (void)state;
    tally_t t = { .name = "sum overflow to Inf" };
    rng_t r;
    seed_for(&r, 102);
    h_expect(&t, OP_ADD, A2(F_MAX, F_MAX), F_INF);
    h_expect(&t, OP_ADD, A2(0xFF7FFFFFu, 0xFF7FFFFFu), F_NINF);
    h_expect(&t, OP_SUB, A2(F_MAX, 0xFF7FFFFFu), F_INF);
    h_expect(&t, OP_SUB, A2(0xFF7FFFFFu, F_MAX), F_NINF);
    h_expect(&t, OP_ADD, A2(0x7F000000u, 0x7F000000u), F_INF); /* 2^127 + 2^127 */
    h_expect(&t, OP_ADD, A2(F_MAX, 0x73800000u), F_INF);       /* max + 1 ulp */
    h_expect(&t, OP_MAC, A3(F_MAX, 0x7F00u, B_ONE), F_INF);
    h_expect(&t, OP_MAC, A3(0xFF7FFFFFu, 0x7F00u, B_NONE), F_NINF);
    for (uint32_t i = 0; i < 100000u; i++) {
        uint32_t s = gen_sign32(&r);
        uint32_t a = s | ((uint32_t)rng_range(&r, 252, 254) << 23) | gen_frac(&r, 23);
        uint32_t b = s | ((uint32_t)rng_range(&r, 252, 254) << 23) | gen_frac(&r, 23);
        if (f_exp(a) == 254 && f_exp(b) == 254)
            h_expect(&t, OP_ADD, A2(a, b), s | F_INF);
        else
            h_check(&t, OP_ADD, A2(a, b));
        h_check(&t, OP_SUB, A2(a, b ^ 0x80000000u));
        uint16_t pa = (uint16_t)((rng_u32(&r) & 0x8000u) | ((uint32_t)rng_range(&r, 190, 254) << 7) | gen_frac(&r, 7));
        uint16_t pb = gen_bf16_exp(&r, 120, 200);
        h_check(&t, OP_MAC, A3(a, pa, pb));
    }
    done(&t);
}

/* ------------------------------------------------------------------------------------ */
/* Inf x 0, Inf - Inf, NaNs                                                               */

static const uint16_t B_ZEROISH[] = { 0x0000u, 0x8000u, 0x0001u, 0x807Fu, 0x0040u };
static const uint32_t F_ACCS[] = { F_PZERO, F_NZERO, F_ONE, F_INF, F_NINF, F_QNAN, F_MAX, 0x00000001u };

static void inf_x_zero(tally_t *t, int inf_first)
{
    static const uint16_t infs[] = { B_INF, B_NINF };
    for (size_t i = 0; i < ARRAY_LEN(infs); i++) {
        for (size_t j = 0; j < ARRAY_LEN(B_ZEROISH); j++) {
            uint16_t a = inf_first ? infs[i] : B_ZEROISH[j], b = inf_first ? B_ZEROISH[j] : infs[i];
            h_expect(t, OP_MUL, A2(a, b), F_QNAN);
            for (size_t k = 0; k < ARRAY_LEN(F_ACCS); k++)
                h_expect(t, OP_MAC, A3(F_ACCS[k], a, b), F_QNAN);
        }
    }
}

static void inf_times_zero(void **state)
{
    (void)state;
    tally_t t = { .name = "Inf x 0" };
    inf_x_zero(&t, 1);
    done(&t);
}

static void zero_times_inf(void **state)
{
    (void)state;
    tally_t t = { .name = "0 x Inf" };
    inf_x_zero(&t, 0);
    done(&t);
}

static void inf_minus_inf(void **state)
{
    (void)state;
    tally_t t = { .name = "Inf - Inf" };
    h_expect(&t, OP_ADD, A2(F_INF, F_NINF), F_QNAN);
    h_expect(&t, OP_ADD, A2(F_NINF, F_INF), F_QNAN);
    h_expect(&t, OP_SUB, A2(F_INF, F_INF), F_QNAN);
    h_expect(&t, OP_SUB, A2(F_NINF, F_NINF), F_QNAN);
    h_expect(&t, OP_ADD, A2(F_INF, F_INF), F_INF);
    h_expect(&t, OP_ADD, A2(F_NINF, F_NINF), F_NINF);
    h_expect(&t, OP_SUB, A2(F_INF, F_NINF), F_INF);
    h_expect(&t, OP_SUB, A2(F_NINF, F_INF), F_NINF);
    h_expect(&t, OP_ADD, A2(F_INF, F_MAX), F_INF);
    h_expect(&t, OP_ADD, A2(0xFF7FFFFFu, F_INF), F_INF);
    h_expect(&t, OP_MAC, A3(F_INF, B_NINF, B_ONE), F_QNAN);
    h_expect(&t, OP_MAC, A3(F_NINF, B_INF, B_INF), F_QNAN);
    h_expect(&t, OP_MAC, A3(F_INF, 0x7F7Fu, 0xFF7Fu), F_QNAN);  /* product overflows to -Inf */
    h_expect(&t, OP_MAC, A3(F_NINF, 0x7F00u, 0x4000u), F_QNAN); /* product is 2^128 -> +Inf */
    h_expect(&t, OP_MAC, A3(F_INF, 0x7F00u, 0x4000u), F_INF);
    h_expect(&t, OP_MAC, A3(F_NINF, B_NINF, B_ONE), F_NINF);
    done(&t);
}

static void quiet_nan_every_operand(void **state)
{
    (void)state;
    tally_t t = { .name = "quiet NaN in every operand" };
    static const uint32_t fv[] = { 0x7FC00000u, 0x7FC00001u, 0x7FFFFFFFu, 0x7FD55555u, 0x7FC08000u };
    static const uint16_t bv[] = { 0x7FC0u, 0x7FC1u, 0x7FFFu, 0x7FD5u };
    all_positions(&t, fv, ARRAY_LEN(fv), bv, ARRAY_LEN(bv), 1);
    done(&t);
}

static void signalling_nan_every_operand(void **state)
{
    (void)state;
    tally_t t = { .name = "signalling NaN in every operand" };
    /* 0x7F800001 and 0x7F807FFF would round to Inf (0x7F80) if fp32_to_bf16 rounded NaNs */
    static const uint32_t fv[] = { 0x7F800001u, 0x7FBFFFFFu, 0x7FA00000u, 0x7F807FFFu, 0x7F808000u };
    static const uint16_t bv[] = { 0x7F81u, 0x7FBFu, 0x7FA0u };
    all_positions(&t, fv, ARRAY_LEN(fv), bv, ARRAY_LEN(bv), 1);
    done(&t);
}

static void negative_nan_every_operand(void **state)
{
    (void)state;
    tally_t t = { .name = "negative NaN in every operand" };
    static const uint32_t fv[] = { 0xFFC00000u, 0xFF800001u, 0xFFFFFFFFu, 0xFFBFFFFFu, 0xFF807FFFu };
    static const uint16_t bv[] = { 0xFFC0u, 0xFF81u, 0xFFFFu, 0xFFBFu };
    all_positions(&t, fv, ARRAY_LEN(fv), bv, ARRAY_LEN(bv), 1);
    done(&t);
}

/* ------------------------------------------------------------------------------------ */
/* Round to nearest even: ties                                                            */

/* 1 if the exact a + b (normal operands, exponents at most 40 apart, no overflow) lies
   exactly half-way between two 24-bit significands; *odd = LSB of the lower one. */
static int add_is_tie(uint32_t a, uint32_t b, int *odd)
{
    if (f_exp(a) < f_exp(b)) { uint32_t t = a; a = b; b = t; }
    uint32_t d = f_exp(a) - f_exp(b);
    if (d > 40)
        return 0;
    uint64_t A = (uint64_t)(0x800000u | (a & 0x7FFFFFu)) << d, B = 0x800000u | (b & 0x7FFFFFu);
    uint64_t S = f_sign(a) == f_sign(b) ? A + B : (A > B ? A - B : B - A);
    if (S == 0)
        return 0;
    int top = 63 - __builtin_clzll(S);
    if (top <= 23)
        return 0;
    int sh = top - 23;
    if ((S & ((UINT64_C(1) << sh) - 1)) != UINT64_C(1) << (sh - 1))
        return 0;
    *odd = (int)((S >> sh) & 1u);
    return 1;
}

static void rne_tie_add(tally_t *t, int want_odd)
{
    rng_t r;
    seed_for(&r, 200 + (uint64_t)want_odd);
    uint64_t found = 0, target = 40000;
    for (uint64_t it = 0; found < target && it < 50 * target; it++) {
        int ea = rng_range(&r, 30, 220), d = rng_range(&r, 0, 26), eb = ea - d;
        uint32_t fa = gen_frac(&r, 23), fb = gen_frac(&r, 23);
        if (d >= 1 && d <= 23)
            fb = (fb & ~((1u << d) - 1u)) | (1u << (d - 1));
        else if (d == 24)
            fb = 0;
        uint32_t a = gen_sign32(&r) | ((uint32_t)ea << 23) | fa;
        uint32_t b = gen_sign32(&r) | ((uint32_t)eb << 23) | fb;
        int odd;
        if (add_is_tie(a, b, &odd) && odd == want_odd) {
            h_check(t, OP_ADD, A2(a, b));
            h_check(t, OP_ADD, A2(b, a));
            h_check(t, OP_SUB, A2(a, b ^ 0x80000000u));
            found++;
        }
    }
    printf("  %" PRIu64 " ties with %s LSB\n", found, want_odd ? "odd" : "even");
    assert_true(found == target);
}

static void rne_tie_add_even_lsb(void **state)
{
    (void)state;
    tally_t t = { .name = "add: RNE tie, even LSB (round down)" };
    h_expect(&t, OP_ADD, A2(F_ONE, 0x33800000u), F_ONE);               /* 1 + 2^-24 */
    h_expect(&t, OP_ADD, A2(0xBF800000u, 0xB3800000u), 0xBF800000u);
    h_expect(&t, OP_ADD, A2(0x3F800002u, 0x33800000u), 0x3F800002u);
    h_expect(&t, OP_SUB, A2(0x3F800002u, 0x33800000u), 0x3F800002u);   /* tie below, even */
    h_expect(&t, OP_ADD, A2(0x4B800000u, F_ONE), 0x4B800000u);        /* 2^24 + 1 */
    rne_tie_add(&t, 0);
    done(&t);
}

static void rne_tie_add_odd_lsb(void **state)
{
    (void)state;
    tally_t t = { .name = "add: RNE tie, odd LSB (round up)" };
    h_expect(&t, OP_ADD, A2(0x3F800001u, 0x33800000u), 0x3F800002u);
    h_expect(&t, OP_ADD, A2(0xBF800001u, 0xB3800000u), 0xBF800002u);
    h_expect(&t, OP_SUB, A2(0x3F800001u, 0x33800000u), 0x3F800000u);   /* tie below: to even */
    h_expect(&t, OP_ADD, A2(0x4B800001u, F_ONE), 0x4B800002u);        /* 2^24 + 2 + 1 */
    h_expect(&t, OP_ADD, A2(0x4B800000u, 0x3FC00000u), 0x4B800001u);   /* not a tie */
    h_expect(&t, OP_ADD, A2(0x4B7FFFFFu, 0x3F000000u), 0x4B800000u);   /* carry into 2^24 */
    rne_tie_add(&t, 1);
    done(&t);
}

static void rne_tie_convert(tally_t *t, uint32_t parity)
{
    for (uint32_t hi = parity; hi <= 0xFFFFu; hi += 2) {
        uint32_t v = (hi << 16) | 0x8000u;
        uint32_t e = f_exp(v);
        uint32_t want = e == 0xFFu ? B_QNAN : e == 0 ? (hi & 0x8000u) : hi + parity;
        h_expect(t, OP_F2B, A1(v), want);
        h_check(t, OP_F2B, A1(v - 1)); /* just below and above the tie */
        h_check(t, OP_F2B, A1(v + 1));
    }
}

static void rne_tie_convert_even_lsb(void **state)
{
    (void)state;
    tally_t t = { .name = "fp32->bf16: RNE tie, even LSB" };
    h_expect(&t, OP_F2B, A1(0x3F808000u), 0x3F80u);
    rne_tie_convert(&t, 0);
    done(&t);
}

static void rne_tie_convert_odd_lsb(void **state)
{
    (void)state;
    tally_t t = { .name = "fp32->bf16: RNE tie, odd LSB" };
    h_expect(&t, OP_F2B, A1(0x3F818000u), 0x3F82u);
    h_expect(&t, OP_F2B, A1(0x3FFF8000u), 0x4000u); /* carry into the exponent */
    rne_tie_convert(&t, 1);
    done(&t);
}

/* ------------------------------------------------------------------------------------ */
/* Max normal rounding to Inf                                                             */

static void max_normal_convert_rounds_to_inf(void **state)
{
    (void)state;
    tally_t t = { .name = "fp32->bf16: max normal rounds to Inf" };
    h_expect(&t, OP_F2B, A1(0x7F7F7FFFu), 0x7F7Fu);
    h_expect(&t, OP_F2B, A1(0x7F7F8000u), 0x7F80u); /* tie, odd LSB: up, to Inf */
    h_expect(&t, OP_F2B, A1(0x7F7F8001u), 0x7F80u);
    h_expect(&t, OP_F2B, A1(0x7F7FFFFFu), 0x7F80u); /* fp32 max normal */
    h_expect(&t, OP_F2B, A1(0xFF7FFFFFu), 0xFF80u);
    h_expect(&t, OP_F2B, A1(0xFF7F8000u), 0xFF80u);
    h_expect(&t, OP_F2B, A1(0xFF7F7FFFu), 0xFF7Fu);
    h_expect(&t, OP_F2B, A1(0x7F7E8000u), 0x7F7Eu); /* tie, even LSB: stays finite */
    h_expect(&t, OP_F2B, A1(0x7F7E8001u), 0x7F7Fu);
    h_expect(&t, OP_F2B, A1(0x7F800000u), 0x7F80u);
    h_expect(&t, OP_F2B, A1(0xFF800000u), 0xFF80u);
    for (uint32_t lo = 0; lo <= 0xFFFFu; lo++) {
        h_check(&t, OP_F2B, A1(0x7F7F0000u | lo));
        h_check(&t, OP_F2B, A1(0xFF7F0000u | lo));
        h_check(&t, OP_F2B, A1(0x7F7E0000u | lo));
    }
    done(&t);
}

static void max_normal_add_rounds_to_inf(void **state)
{
    (void)state;
    tally_t t = { .name = "add: max normal rounds to Inf" };
    /* ulp(max) = 2^104 (0x73800000), half an ulp = 2^103 (0x73000000) */
    h_expect(&t, OP_ADD, A2(F_MAX, 0x73000000u), F_INF); /* tie, odd LSB: up to 2^128 */
    h_expect(&t, OP_ADD, A2(0x73000000u, F_MAX), F_INF);
    h_expect(&t, OP_ADD, A2(F_MAX, 0x72FFFFFFu), F_MAX);
    h_expect(&t, OP_ADD, A2(F_MAX, 0x73000001u), F_INF);
    h_expect(&t, OP_ADD, A2(0x7F7FFFFEu, 0x73000000u), 0x7F7FFFFEu); /* tie, even: down */
    h_expect(&t, OP_ADD, A2(0x7F7FFFFEu, 0x73000001u), F_MAX);
    h_expect(&t, OP_ADD, A2(F_MAX, F_MIN), F_MAX);
    h_expect(&t, OP_ADD, A2(0xFF7FFFFFu, 0xF3000000u), F_NINF);
    h_expect(&t, OP_SUB, A2(F_MAX, 0xF3000000u), F_INF);
    h_expect(&t, OP_SUB, A2(0xFF7FFFFFu, 0x73000000u), F_NINF);
    h_expect(&t, OP_MAC, A3(F_MAX, 0x7300u, B_ONE), F_INF); /* product 2^103 */
    h_expect(&t, OP_MAC, A3(F_MAX, 0x72FFu, B_ONE), F_MAX);
    h_expect(&t, OP_MAC, A3(0xFF7FFFFFu, 0x7300u, B_NONE), F_NINF);
    rng_t r;
    seed_for(&r, 300);
    for (uint32_t i = 0; i < 100000u; i++) {
        uint32_t s = gen_sign32(&r);
        uint32_t a = s | 0x7F7F0000u | (rng_u32(&r) & 0xFFFFu);
        if (i & 1u)
            a = s | F_MAX;
        uint32_t b = s | ((uint32_t)rng_range(&r, 226, 234) << 23) | gen_frac(&r, 23);
        h_check(&t, OP_ADD, A2(a, b));
        h_check(&t, OP_SUB, A2(b, a ^ 0x80000000u));
        h_check(&t, OP_MAC, A3(a, (uint16_t)(0x3F80u | (uint16_t)(rng_u32(&r) & 0x7Fu)),
                               (uint16_t)((s >> 16) | ((uint32_t)rng_range(&r, 226, 234) << 7) | gen_frac(&r, 7))));
    }
    done(&t);
}

/* ------------------------------------------------------------------------------------ */
/* Alignment shifts, cancellation, x + (-x), (-0) + (-0)                                  */

static void alignment_shifts(tally_t *t, int dlo, int dhi, uint32_t per_d)
{
    rng_t r;
    seed_for(&r, 400 + (uint64_t)dlo);
    for (int d = dlo; d <= dhi; d++) {
        for (uint32_t i = 0; i < per_d; i++) {
            int eb = rng_range(&r, 1, 254 - d), ea = eb + d;
            uint32_t a = gen_sign32(&r) | ((uint32_t)ea << 23) | gen_frac(&r, 23);
            uint32_t b = gen_sign32(&r) | ((uint32_t)eb << 23) | gen_frac(&r, 23);
            h_check(t, OP_ADD, A2(a, b));
            h_check(t, OP_ADD, A2(b, a));
            h_check(t, OP_SUB, A2(a, b));
            h_check(t, OP_SUB, A2(b, a));
            /* the MAC: accumulator d binades above or below a normal product */
            int pa = rng_range(&r, 64, 190), pb = rng_range(&r, 64, 190);
            uint16_t x = (uint16_t)((rng_u32(&r) & 0x8000u) | ((uint32_t)pa << 7) | gen_frac(&r, 7));
            uint16_t y = (uint16_t)((rng_u32(&r) & 0x8000u) | ((uint32_t)pb << 7) | gen_frac(&r, 7));
            int pe = (int)f_exp(exact_product_bits(x, y));
            int ae = (i & 1u) ? pe + d : pe - d;
            if (ae >= 1 && ae <= 254)
                h_check(t, OP_MAC, A3(gen_sign32(&r) | ((uint32_t)ae << 23) | gen_frac(&r, 23), x, y));
        }
    }
}

static void alignment_shift_0_to_26(void **state)
{
    (void)state;
    tally_t t = { .name = "add: alignment shift 0..26" };
    alignment_shifts(&t, 0, 26, 4000 * (uint32_t)g_scale);
    done(&t);
}

static void alignment_shift_27_and_above(void **state)
{
    (void)state;
    tally_t t = { .name = "add: alignment shift 27..253" };
    alignment_shifts(&t, 27, 253, 400 * (uint32_t)g_scale);
    done(&t);
}

static void catastrophic_cancellation(void **state)
{
    (void)state;
    tally_t t = { .name = "catastrophic cancellation" };
    rng_t r;
    seed_for(&r, 500);
    for (uint32_t i = 0; i < 100000u; i++) {
        uint32_t a = gen_fp32_exp(&r, 1, 254), b;
        switch (i % 3) {
        case 0: /* same exponent, opposite signs */
            b = (f_sign(a) ^ 0x80000000u) | (a & 0x7F800000u) | gen_frac(&r, 23);
            break;
        case 1: /* -(a +- k ulps), crossing binades when the fraction is near 0 or 1 */
            b = (((a & 0x7FFFFFFFu) + (uint32_t)rng_range(&r, -8, 8)) & 0x7FFFFFFFu) |
                (f_sign(a) ^ 0x80000000u);
            break;
        default: /* a = 2^e (1 + small), b = -2^(e-1) (2 - small) */
            a = (a & 0xFF800000u) | (rng_u32(&r) & (0x7FFFFFu >> rng_below(&r, 23)));
            if (f_exp(a) < 2)
                a |= 2u << 23;
            b = (f_sign(a) ^ 0x80000000u) | ((f_exp(a) - 1) << 23) |
                (0x7FFFFFu ^ (rng_u32(&r) & (0x7FFFFFu >> rng_below(&r, 23))));
            break;
        }
        h_check(&t, OP_ADD, A2(a, b));
        h_check(&t, OP_ADD, A2(b, a));
        h_check(&t, OP_SUB, A2(a, b ^ 0x80000000u));
        /* MAC: accumulator = -(product) +- a few ulps */
        uint16_t x = gen_bf16_exp(&r, 64, 190), y = gen_bf16_exp(&r, 64, 190);
        uint32_t p = exact_product_bits(x, y);
        uint32_t acc = ((p & 0x7FFFFFFFu) + (uint32_t)rng_range(&r, -8, 8)) | (f_sign(p) ^ 0x80000000u);
        h_check(&t, OP_MAC, A3(acc, x, y));
    }
    done(&t);
}

static void x_plus_minus_x_is_plus_zero(void **state)
{
    (void)state;
    tally_t t = { .name = "x + (-x) = +0" };
    rng_t r;
    seed_for(&r, 600);
    for (uint32_t e = 0; e <= 254; e++) {
        for (uint32_t i = 0; i < 200; i++) {
            uint32_t x = gen_sign32(&r) | (e << 23) | gen_frac(&r, 23);
            h_expect(&t, OP_ADD, A2(x, x ^ 0x80000000u), F_PZERO);
            h_expect(&t, OP_SUB, A2(x, x), F_PZERO);
        }
    }
    for (uint32_t i = 0; i < 50000u; i++) {
        uint16_t a = (uint16_t)rng_u32(&r), b = (uint16_t)rng_u32(&r);
        uint32_t p = mo_bf16_mul(a, b);
        if (f_exp(p) == 0xFFu) /* Inf or NaN: no cancellation */
            continue;
        h_expect(&t, OP_MAC, A3(p ^ 0x80000000u, a, b), F_PZERO);
    }
    done(&t);
}

static void neg_zero_plus_neg_zero(void **state)
{
    (void)state;
    tally_t t = { .name = "(-0) + (-0) = -0" };
    h_expect(&t, OP_ADD, A2(F_NZERO, F_NZERO), F_NZERO);
    h_expect(&t, OP_ADD, A2(0x80000001u, F_NZERO), F_NZERO); /* DAZ keeps the sign */
    h_expect(&t, OP_ADD, A2(0x807FFFFFu, 0x807FFFFFu), F_NZERO);
    h_expect(&t, OP_SUB, A2(F_NZERO, F_PZERO), F_NZERO);
    h_expect(&t, OP_SUB, A2(F_NZERO, 0x00000001u), F_NZERO);
    h_expect(&t, OP_ADD, A2(F_NZERO, F_PZERO), F_PZERO);
    h_expect(&t, OP_ADD, A2(F_PZERO, F_NZERO), F_PZERO);
    h_expect(&t, OP_MAC, A3(F_NZERO, 0x0000u, B_NONE), F_NZERO);
    h_expect(&t, OP_MAC, A3(F_NZERO, 0x8000u, B_ONE), F_NZERO);
    h_expect(&t, OP_MAC, A3(F_NZERO, 0x0000u, 0x8000u), F_NZERO); /* MXU padding */
    h_expect(&t, OP_MAC, A3(F_NZERO, 0x8000u, 0x8000u), F_PZERO);
    h_expect(&t, OP_MAC, A3(F_NZERO, 0x0001u, B_NONE), F_NZERO);
    h_expect(&t, OP_MAC, A3(F_NZERO, 0x0080u, 0x8080u), F_NZERO); /* 2^-252 flushes to -0 */
    h_expect(&t, OP_MAC, A3(0x80000001u, 0x0080u, 0x8080u), F_NZERO);
    done(&t);
}

/* ------------------------------------------------------------------------------------ */
/* MAC chains                                                                             */

typedef struct {
    const char *name;
    uint64_t chains, steps, bad_steps_host, bad_steps_mpfr, bad_final;
    int printed;
} chain_tally_t;

/* Runs acc_{k+1} = fp32_mac(acc_k, a[k], b[k]) from `seed` three times, independently:
   model, host loop, MPFR chain; compares model and host at every step, model and MPFR at
   every step and at the end. Returns the model's final value. */
static uint32_t run_chain(chain_tally_t *ct, const uint16_t *a, const uint16_t *b, size_t K,
                          uint32_t seed)
{
    uint32_t m = seed, h = seed, p = seed;
    int first_bad = 1;
    for (size_t k = 0; k < K; k++) {
        m = fp32_mac(fp32_from_bits(m), bf16_from_bits(a[k]), bf16_from_bits(b[k])).v;
        h = ho_fp32_mac(h, a[k], b[k]);
        p = mo_fp32_mac(p, a[k], b[k]);
        ct->steps++;
        ct->bad_steps_host += m != h;
        ct->bad_steps_mpfr += m != p;
        if ((m != h || m != p) && first_bad && ct->printed < 8) {
            ct->printed++;
            first_bad = 0;
            printf("  MISMATCH [%s] chain %" PRIu64 " step %zu (a=0x%04X b=0x%04X): "
                   "model=0x%08" PRIX32 " host=0x%08" PRIX32 " mpfr=0x%08" PRIX32 "\n",
                   ct->name, ct->chains, k, a[k], b[k], m, h, p);
        }
    }
    ct->bad_final += (m != h || m != p);
    ct->chains++;
    return m;
}

static void chain_done(const chain_tally_t *ct)
{
    printf("  %-40s %6" PRIu64 " chains, %9" PRIu64 " steps; mismatching steps: %" PRIu64
           " vs host, %" PRIu64 " vs MPFR; mismatching finals: %" PRIu64 "\n",
           ct->name, ct->chains, ct->steps, ct->bad_steps_host, ct->bad_steps_mpfr, ct->bad_final);
    assert_true(ct->steps > 0);
    assert_int_equal(ct->bad_steps_host, 0);
    assert_int_equal(ct->bad_steps_mpfr, 0);
    assert_int_equal(ct->bad_final, 0);
}

static uint16_t with_sign(uint16_t v, int neg) { return (uint16_t)((v & 0x7FFFu) | (neg ? 0x8000u : 0)); }

static void mac_alternating_sign_chain(void **state)
{
    (void)state;
    chain_tally_t ct = { .name = "MAC chains, alternating signs" };
    enum { K = 8192 };
    static uint16_t a[K], b[K];
    rng_t r;
    seed_for(&r, 700);
    for (int type = 0; type < 4; type++) {
        for (int c = 0; c < 8; c++) {
            size_t n = (c & 1) ? K : 4096;
            for (size_t k = 0; k < n; k++) {
                int neg = (int)(k & 1u);
                switch (type) {
                case 0: /* x0 - x1 + x2 - ... with magnitudes near 1 */
                    a[k] = gen_bf16_exp(&r, 120, 134);
                    b[k] = with_sign(B_ONE, neg ^ (a[k] >> 15));
                    break;
                case 1: /* x - x + y - y ...: exact cancellation every other step */
                    a[k] = (k & 1u) ? a[k - 1] : gen_bf16_exp(&r, 100, 154);
                    b[k] = with_sign(gen_bf16_exp(&r, 127, 127), neg ^ (a[k] >> 15));
                    b[k] = (k & 1u) ? (uint16_t)(b[k - 1] ^ 0x8000u) : b[k];
                    break;
                case 2: /* wide magnitudes, product sign forced to alternate */
                    a[k] = gen_bf16_exp(&r, 60, 190);
                    b[k] = gen_bf16_exp(&r, 60, 190);
                    b[k] = with_sign(b[k], neg ^ (a[k] >> 15));
                    break;
                default: /* slowly shrinking terms: an alternating series */
                    a[k] = (uint16_t)(((uint32_t)(127 - (int)(k / 256)) << 7) | gen_frac(&r, 7));
                    b[k] = with_sign(B_ONE, neg);
                    break;
                }
            }
            run_chain(&ct, a, b, n, (c & 2) ? gen_fp32_exp(&r, 120, 134) : F_NZERO);
        }
    }
    chain_done(&ct);
}

static void mac_very_long_accumulation(void **state)
{
    (void)state;
    chain_tally_t ct = { .name = "MAC chains, long (K >= 4096)" };
    enum { BIG = 1 << 20, K = 1 << 16 };
    uint16_t *a = malloc(BIG * sizeof *a), *b = malloc(BIG * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    rng_t r;
    seed_for(&r, 800);
    double t0 = now_s();
    /* 2^20 positive terms in [1, 2): the sum outgrows the terms, every step rounds */
    for (size_t k = 0; k < BIG; k++) {
        a[k] = B_ONE;
        b[k] = (uint16_t)(0x3F80u | (rng_u32(&r) & 0x7Fu));
    }
    run_chain(&ct, a, b, BIG, F_NZERO);
    /* stagnation: 1.0 added to 2^24 - 2048 is a tie at 2^24 and then never moves */
    for (size_t k = 0; k < K; k++) {
        a[k] = B_ONE;
        b[k] = B_ONE;
    }
    uint32_t last = run_chain(&ct, a, b, K, 0x4B7FF800u);
    assert_int_equal(last, 0x4B800000u);
    /* mixed magnitudes and signs */
    for (size_t k = 0; k < K; k++) {
        a[k] = gen_bf16_exp(&r, 100, 154);
        b[k] = gen_bf16_exp(&r, 100, 154);
    }
    run_chain(&ct, a, b, K, F_NZERO);
    /* products at the FTZ boundary: the sum wanders around 2^-126 and flushes */
    for (size_t k = 0; k < K; k++) {
        int ea = rng_range(&r, 1, 126);
        a[k] = (uint16_t)((rng_u32(&r) & 0x8000u) | ((uint32_t)ea << 7) | gen_frac(&r, 7));
        b[k] = (uint16_t)((rng_u32(&r) & 0x8000u) | ((uint32_t)rng_range(&r, 127 - ea, 129 - ea) << 7) | gen_frac(&r, 7));
    }
    run_chain(&ct, a, b, K, F_NZERO);
    /* growth to +Inf, then a -Inf product: NaN for the rest of the chain */
    for (size_t k = 0; k < K; k++) {
        a[k] = gen_bf16_exp(&r, 200, 254) & 0x7FFFu;
        b[k] = gen_bf16_exp(&r, 150, 180) & 0x7FFFu;
    }
    a[K - 100] = B_NINF;
    b[K - 100] = B_ONE;
    last = run_chain(&ct, a, b, K, F_NZERO);
    assert_int_equal(last, F_QNAN);
    /* MXU padding only: (+0) x (-0) from -0 stays -0 */
    for (size_t k = 0; k < K; k++) {
        a[k] = 0x0000u;
        b[k] = 0x8000u;
    }
    last = run_chain(&ct, a, b, K, F_NZERO);
    assert_int_equal(last, F_NZERO);
    /* many 4096-long chains from random generators, seeded with -0 as in the MXU */
    for (int c = 0; c < 64; c++) {
        for (size_t k = 0; k < 4096; k++)
            gen_bf16_pair(&r, c % GEN_COUNT, &a[k], &b[k]);
        run_chain(&ct, a, b, 4096, F_NZERO);
    }
    printf("  long chains: %.2f s\n", now_s() - t0);
    free(a);
    free(b);
    chain_done(&ct);
}

/* ------------------------------------------------------------------------------------ */
/* Random inputs                                                                          */

static void random_args(rng_t *r, op_t op, int g, args_t *x)
{
    switch (op) {
    case OP_F2B: x->a = gen_fp32_one(r, g); break;
    case OP_MUL: {
        uint16_t a, b;
        gen_bf16_pair(r, g, &a, &b);
        x->a = a;
        x->b = b;
        break;
    }
    case OP_ADD: case OP_SUB: gen_fp32_pair(r, g, &x->a, &x->b); break;
    case OP_MAC: {
        uint16_t a, b;
        gen_mac(r, g, &x->a, &a, &b);
        x->b = a;
        x->c = b;
        break;
    }
    default: x->a = rng_u32(r) & 0xFFFFu; break;
    }
}

#define RANDOM_PER_GEN 1000000u

static void random_op(op_t op)
{
    static char names[GEN_COUNT][64];
    uint64_t bad = 0;
    double t0 = now_s();
    for (int g = 0; g < GEN_COUNT; g++) {
        snprintf(names[g], sizeof names[g], "%s, %s", OP_NAME[op], GEN_NAME[g]);
        tally_t t = { .name = names[g] };
        rng_t r;
        seed_for(&r, 1000 + (uint64_t)op * 16 + (uint64_t)g);
        uint64_t n = (uint64_t)RANDOM_PER_GEN * g_scale;
        for (uint64_t i = 0; i < n; i++) {
            args_t x = { 0, 0, 0 };
            random_args(&r, op, g, &x);
            h_check(&t, op, x);
        }
        h_summary(&t);
        bad += t.bad;
    }
    printf("  %s: %.2f s\n", OP_NAME[op], now_s() - t0);
    assert_int_equal(bad, 0);
}

static void all_bf16_to_fp32(void **state)
{
    (void)state;
    tally_t t = { .name = "bf16_to_fp32, all 65536 inputs" };
    for (uint32_t v = 0; v <= 0xFFFFu; v++)
        h_check(&t, OP_B2F, A1(v));
    done(&t);
}

static void random_fp32_to_bf16(void **state) { (void)state; random_op(OP_F2B); }
static void random_bf16_mul(void **state) { (void)state; random_op(OP_MUL); }
static void random_fp32_add(void **state) { (void)state; random_op(OP_ADD); }
static void random_fp32_sub(void **state) { (void)state; random_op(OP_SUB); }
static void random_fp32_mac(void **state) { (void)state; random_op(OP_MAC); }

/* ------------------------------------------------------------------------------------ */
/* Self-check: the machinery detects wrong values                                         */

static uint32_t mutant_flip_lsb(op_t op, args_t x) { return h_model(op, x) ^ 1u; }

static uint32_t mutant_truncating_convert(op_t op, args_t x)
{
    if (op != OP_F2B || fp32_is_nan(fp32_from_bits(x.a)) || f_exp(x.a) == 0)
        return h_model(op, x);
    return x.a >> 16; /* truncation instead of RNE */
}

static uint32_t mutant_and_zero_sign(op_t op, args_t x)
{
    uint32_t v = h_model(op, x);
    if (op == OP_ADD && v == F_PZERO && (x.a == F_NZERO || x.b == F_NZERO))
        return F_NZERO; /* (+0) + (-0) = -0: wrong */
    return v;
}

static uint32_t mutant_no_ftz_mul(op_t op, args_t x)
{
    uint32_t v = h_model(op, x);
    if (op == OP_MUL && (v & 0x7FFFFFFFu) == 0 && ((x.a >> 7) & 0xFFu) && ((x.b >> 7) & 0xFFu))
        return v | 1u; /* a nonzero "subnormal" where the contract flushes */
    return v;
}

static void self_check_detects_wrong_value(void **state)
{
    (void)state;
    /* 1. comparing against a deliberately wrong value counts a mismatch */
    tally_t t = { .name = "self-check: model ^ 1", .quiet = 1 };
    for (int op = 0; op < OP_COUNT; op++)
        h_check_with(&t, mutant_flip_lsb, (op_t)op, A3(F_ONE, B_ONE, B_ONE), H_NO_EXPECT);
    assert_int_equal(t.bad, OP_COUNT);
    /* a right model with a wrong value written in the test is caught too */
    tally_t te = { .name = "self-check: wrong expectation", .quiet = 1 };
    h_expect(&te, OP_ADD, A2(F_ONE, F_ONE), 0x40000001u);
    assert_int_equal(te.bad, 1);
    /* 2. plausible wrong models are caught by the generators and edge sets */
    tally_t tc = { .name = "self-check: truncating fp32->bf16", .quiet = 1 };
    rng_t r;
    seed_for(&r, 900);
    for (int i = 0; i < 10000; i++)
        h_check_with(&tc, mutant_truncating_convert, OP_F2B, A1(gen_fp32_one(&r, GEN_CLOSE)), H_NO_EXPECT);
    printf("  truncating fp32->bf16: %" PRIu64 " of %" PRIu64 " detected\n", tc.bad, tc.n);
    assert_true(tc.bad > 1000);
    tally_t tz = { .name = "self-check: (+0)+(-0) = -0", .quiet = 1 };
    h_check_with(&tz, mutant_and_zero_sign, OP_ADD, A2(F_PZERO, F_NZERO), H_NO_EXPECT);
    h_check_with(&tz, mutant_and_zero_sign, OP_ADD, A2(F_NZERO, F_PZERO), H_NO_EXPECT);
    assert_int_equal(tz.bad, 2);
    tally_t tf = { .name = "self-check: no FTZ on products", .quiet = 1 };
    for (uint32_t fa = 0; fa < 128; fa++)
        for (uint32_t fb = 0; fb < 128; fb++)
            h_check_with(&tf, mutant_no_ftz_mul, OP_MUL, A2((1u << 7) | fa, (126u << 7) | fb), H_NO_EXPECT);
    printf("  unflushed products: %" PRIu64 " of %" PRIu64 " detected\n", tf.bad, tf.n);
    assert_true(tf.bad > 1000);
    /* 3. the host really runs with FTZ and DAZ (else it is not the contract's oracle) */
    assert_true(ho_mxcsr_ok());
    assert_int_equal(ho_fp32_add(0x00000001u, 0x00000001u), F_PZERO);  /* DAZ */
    assert_int_equal(ho_bf16_mul(0x1F80u, 0x1F00u), F_PZERO);          /* 2^-129: FTZ */
    assert_int_equal(ho_fp32_sub(0x00C00000u, 0x00A00000u), F_PZERO);  /* FTZ */
    /* 4. both oracles see the difference between a tie and a non-tie */
    assert_int_equal(mo_fp32_add(0x3F800001u, 0x33800000u), 0x3F800002u);
    assert_int_equal(ho_fp32_add(0x3F800001u, 0x33800000u), 0x3F800002u);
    assert_int_equal(mo_fp32_add(F_ONE, 0x33800000u), F_ONE);
    assert_int_equal(ho_fp32_add(F_ONE, 0x33800000u), F_ONE);
    printf("  self-check: every deliberate error was detected\n");
}

/* ------------------------------------------------------------------------------------ */

static int group_setup(void **state)
{
    (void)state;
    const char *s = getenv("TPU_NUMERICS_SEED");
    if (s && *s)
        g_seed = strtoull(s, NULL, 0);
    const char *sc = getenv("TPU_NUMERICS_SCALE");
    if (sc && *sc && strtoull(sc, NULL, 0) > 0)
        g_scale = strtoull(sc, NULL, 0);
    printf("test-numerics: seed 0x%016" PRIX64 " (TPU_NUMERICS_SEED), scale %" PRIu64
           " (TPU_NUMERICS_SCALE)\n", g_seed, g_scale);
    return h_init() == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    mo_fini();
    return 0;
}

int main(void)
{
    double t0 = now_s();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(self_check_detects_wrong_value),
        cmocka_unit_test(signed_zero_every_operand),
        cmocka_unit_test(subnormal_inputs_daz_every_operand),
        cmocka_unit_test(product_just_below_min_normal),
        cmocka_unit_test(product_at_min_normal),
        cmocka_unit_test(product_just_above_min_normal),
        cmocka_unit_test(sum_becomes_subnormal_ftz_with_sign),
        cmocka_unit_test(overflow_product_to_inf),
        cmocka_unit_test(overflow_sum_to_inf),
        cmocka_unit_test(inf_times_zero),
        cmocka_unit_test(zero_times_inf),
        cmocka_unit_test(inf_minus_inf),
        cmocka_unit_test(quiet_nan_every_operand),
        cmocka_unit_test(signalling_nan_every_operand),
        cmocka_unit_test(negative_nan_every_operand),
        cmocka_unit_test(rne_tie_add_even_lsb),
        cmocka_unit_test(rne_tie_add_odd_lsb),
        cmocka_unit_test(rne_tie_convert_even_lsb),
        cmocka_unit_test(rne_tie_convert_odd_lsb),
        cmocka_unit_test(max_normal_convert_rounds_to_inf),
        cmocka_unit_test(max_normal_add_rounds_to_inf),
        cmocka_unit_test(alignment_shift_0_to_26),
        cmocka_unit_test(alignment_shift_27_and_above),
        cmocka_unit_test(catastrophic_cancellation),
        cmocka_unit_test(x_plus_minus_x_is_plus_zero),
        cmocka_unit_test(neg_zero_plus_neg_zero),
        cmocka_unit_test(mac_alternating_sign_chain),
        cmocka_unit_test(mac_very_long_accumulation),
        cmocka_unit_test(all_bf16_to_fp32),
        cmocka_unit_test(random_fp32_to_bf16),
        cmocka_unit_test(random_bf16_mul),
        cmocka_unit_test(random_fp32_add),
        cmocka_unit_test(random_fp32_sub),
        cmocka_unit_test(random_fp32_mac),
    };
    int failed = cmocka_run_group_tests_name("numerics", tests, group_setup, group_teardown);
    printf("test-numerics: %.1f s\n", now_s() - t0);
    return failed ? 1 : 0;
}
