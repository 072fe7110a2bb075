/* SPDX-License-Identifier: Apache-2.0 */
/* MPFR oracle for docs/numerics.md. Decodes raw bits into MPFR numbers (DAZ on the way
 * in), lets MPFR do the IEEE arithmetic (special cases, signed zeros, rounding, overflow,
 * subnormals), and encodes the result back to bits (FTZ and canonical NaN on the way out).
 * No host floating-point type is used anywhere in this file. */
#include "oracle.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <mpfr.h>

/* MPFR's convention is x = m * 2^e with 1/2 <= m < 1. binary32: smallest subnormal
   2^-149 = 1/2 * 2^-148, largest finite (1 - 2^-24) * 2^128. bfloat16: smallest subnormal
   2^-133 = 1/2 * 2^-132, largest finite (1 - 2^-8) * 2^128. */
#define FP32_EMIN (-148)
#define FP32_EMAX 128
#define BF16_EMIN (-132)
#define BF16_EMAX 128

static _Thread_local mpfr_t va, vb;  /* fp32 operands, precision 24 */
static _Thread_local mpfr_t ha, hb;  /* bf16 operands, precision 8 */
static _Thread_local mpfr_t r24, r8; /* results: binary32, bfloat16 */
static _Thread_local int ready;
static atomic_int n_threads;

static void die(const char *what)
{
    fprintf(stderr, "oracle_mpfr: internal error: %s\n", what);
    abort();
}

int mo_init(void)
{
    if (ready)
        return 0;
    if (atomic_fetch_add(&n_threads, 1) > 0 && !mpfr_buildopt_tls_p())
        return -1; /* the exponent range would be shared between threads */
    /* The binary32 range is this thread's standing state; mo_fp32_to_bf16 switches to the
       bfloat16 range for its one rounding and switches back. */
    if (mpfr_set_emin(FP32_EMIN) || mpfr_set_emax(FP32_EMAX))
        die("mpfr_set_emin/emax");
    mpfr_inits2(24, va, vb, r24, (mpfr_ptr)0);
    mpfr_inits2(8, ha, hb, r8, (mpfr_ptr)0);
    ready = 1;
    return 0;
}

void mo_fini(void)
{
    if (!ready)
        return;
    mpfr_clears(va, vb, r24, ha, hb, r8, (mpfr_ptr)0);
    ready = 0;
}

static void need_binary32_range(void)
{
    if (!ready)
        die("mo_init() was not called in this thread");
    if (mpfr_get_emin() != FP32_EMIN || mpfr_get_emax() != FP32_EMAX)
        die("MPFR exponent range changed behind the oracle's back");
}

/* fp32 bits `v` (or bf16 bits << 16) into x, applying DAZ: a subnormal becomes a zero
   with its sign. NaN and Inf are passed to MPFR as such (MPFR has one NaN). */
static void decode(mpfr_ptr x, uint32_t v)
{
    int neg = (int)(v >> 31);
    uint32_t e = (v >> 23) & 0xFFu, f = v & 0x7FFFFFu;
    if (e == 0xFFu) {
        if (f)
            mpfr_set_nan(x);
        else
            mpfr_set_inf(x, neg ? -1 : 1);
        return;
    }
    if (e == 0) { /* zero, or subnormal under DAZ */
        mpfr_set_zero(x, neg ? -1 : 1);
        return;
    }
    /* value = (2^23 + f) * 2^(e - 150); exact in precision 24 (and in precision 8 when the
       low 16 bits are zero, i.e. a widened bf16) */
    if (mpfr_set_ui_2exp(x, 0x800000ul | f, (mpfr_exp_t)e - 150, MPFR_RNDN) != 0)
        die("inexact decode");
    if (neg)
        mpfr_neg(x, x, MPFR_RNDN);
}

/* An MPFR number already rounded to binary32 (or to bfloat16, which is a subset) into
   fp32 bits, applying the contract's output rules: canonical NaN, FTZ of any nonzero
   magnitude below 2^-126 to a zero with the value's sign. */
static uint32_t encode(mpfr_srcptr x)
{
    if (mpfr_nan_p(x))
        return 0x7FC00000u;
    uint32_t s = mpfr_signbit(x) ? 0x80000000u : 0u;
    if (mpfr_inf_p(x))
        return s | 0x7F800000u;
    if (mpfr_zero_p(x))
        return s;
    mpfr_exp_t e = mpfr_get_exp(x); /* 2^(e-1) <= |x| < 2^e */
    /* FTZ. The rule is about the exact result, this is the rounded one; they agree here:
       a sum of two normals below 2^-126 is a multiple of 2^-149, so it is exact; an exact
       product below 2^-126 has at most 16 significant bits, so it is at least 2^-142 below
       2^-126 and cannot round up to it; an underflow to zero keeps the sign. */
    if (e - 1 < -126)
        return s;
    if (e - 1 > 127)
        die("value above the binary32 range");
    /* The significand: x has precision 24 or 8, so it is one limb whose top 24 bits hold
       it, most significant bit set (MPFR's normalised representation). */
    if (mpfr_get_prec(x) > 24)
        die("encode: precision above 24");
    const mp_limb_t *d = mpfr_custom_get_significand(x);
    mp_limb_t top = d[0] >> (GMP_NUMB_BITS - 24);
    if ((d[0] << 24) != 0 || top < 0x800000u || top > 0xFFFFFFu)
        die("encode: significand not 24 bits");
    uint32_t m = (uint32_t)top;
    return s | ((uint32_t)(e + 126) << 23) | (m & 0x7FFFFFu);
}

/* r24 := correctly rounded binary32 of the op whose ternary value is `inex`. */
static uint32_t finish32(int inex)
{
    inex = mpfr_check_range(r24, inex, MPFR_RNDN);
    mpfr_subnormalize(r24, inex, MPFR_RNDN);
    return encode(r24);
}

uint32_t mo_bf16_to_fp32(uint16_t a)
{
    need_binary32_range();
    decode(ha, (uint32_t)a << 16);
    return finish32(mpfr_set(r24, ha, MPFR_RNDN));
}

uint16_t mo_fp32_to_bf16(uint32_t a)
{
    need_binary32_range();
    decode(va, a);
    /* Round into bfloat16 under the bfloat16 exponent range, then restore binary32's. */
    if (mpfr_set_emin(BF16_EMIN) || mpfr_set_emax(BF16_EMAX))
        die("mpfr_set_emin/emax (bf16)");
    int inex = mpfr_set(r8, va, MPFR_RNDN);
    inex = mpfr_check_range(r8, inex, MPFR_RNDN);
    mpfr_subnormalize(r8, inex, MPFR_RNDN);
    if (mpfr_set_emin(FP32_EMIN) || mpfr_set_emax(FP32_EMAX))
        die("mpfr_set_emin/emax (fp32)");
    /* encode() flushes bf16 subnormals too (their magnitude is below 2^-126); NaN gives
       0x7FC00000 whose top half is the canonical bf16 NaN 0x7FC0. */
    uint32_t bits = encode(r8);
    if (bits & 0xFFFFu)
        die("bf16 result with nonzero low half");
    return (uint16_t)(bits >> 16);
}

uint32_t mo_bf16_mul(uint16_t a, uint16_t b)
{
    need_binary32_range();
    decode(ha, (uint32_t)a << 16);
    decode(hb, (uint32_t)b << 16);
    /* The exact product has at most 16 significant bits, so rounding it to precision 24 is
       exact whenever it is inside the binary32 range; MPFR's overflow (to Inf) and
       underflow (to a signed zero or a subnormal, both flushed by encode) handle the rest.
       Inf x 0 and NaN operands give MPFR's NaN. */
    return finish32(mpfr_mul(r24, ha, hb, MPFR_RNDN));
}

uint32_t mo_fp32_add(uint32_t a, uint32_t b)
{
    need_binary32_range();
    decode(va, a);
    decode(vb, b);
    return finish32(mpfr_add(r24, va, vb, MPFR_RNDN));
}

uint32_t mo_fp32_sub(uint32_t a, uint32_t b)
{
    need_binary32_range();
    decode(va, a);
    decode(vb, b);
    return finish32(mpfr_sub(r24, va, vb, MPFR_RNDN));
}

uint32_t mo_fp32_mac(uint32_t acc, uint16_t a, uint16_t b)
{
    /* Unfused: the product is rounded to binary32 (exact), flushed, and then added. */
    return mo_fp32_add(acc, mo_bf16_mul(a, b));
}
