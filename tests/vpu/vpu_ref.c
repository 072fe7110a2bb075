/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <string.h>
#include "vpu_ref.h"

const char *const ref_fn_names[REF_NFUNCS] = { "relu", "exp", "tanh", "sigmoid", "gelu", "recip",
                                                 "log", "rsqrt", "erf" };
const vpu_op_t ref_fn_ops[REF_NFUNCS] = { VPU_OP_RELU, VPU_OP_EXP, VPU_OP_TANH,
                                          VPU_OP_SIGMOID, VPU_OP_GELU, VPU_OP_RECIP,
                                          VPU_OP_LOG, VPU_OP_RSQRT, VPU_OP_ERF };

uint32_t ref_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
float ref_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static uint32_t daz(uint32_t x)
{
    return ((x >> 23) & 0xFFu) == 0 ? (x & 0x80000000u) : x;
}

fp32_t ref_model(ref_fn_t fn, fp32_t x)
{
    return vpu_unary(ref_fn_ops[fn], x);
}

/* sigmoid(v) = 1 / (1 + e^-v) into y */
static void sigm(mpfr_t y, const mpfr_t v)
{
    mpfr_t t;
    mpfr_init2(t, REF_PREC);
    mpfr_neg(t, v, MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);
    mpfr_add_ui(t, t, 1, MPFR_RNDN);
    mpfr_ui_div(y, 1, t, MPFR_RNDN);
    mpfr_clear(t);
}

void ref_eval(ref_fn_t fn, uint32_t xb, mpfr_t y)
{
    mpfr_t x, t;
    mpfr_init2(x, 24);
    mpfr_init2(t, REF_PREC);
    xb = daz(xb);
    if (((xb >> 23) & 0xFFu) == 0xFFu && (xb & 0x7FFFFFu))
        mpfr_set_nan(x);
    else
        mpfr_set_flt(x, ref_u2f(xb), MPFR_RNDN); /* exact */
    switch (fn) {
    case REF_RELU:
        if (mpfr_nan_p(x))
            mpfr_set_nan(y);
        else if (mpfr_sgn(x) > 0)
            mpfr_set(y, x, MPFR_RNDN);
        else
            mpfr_set_zero(y, 1);
        break;
    case REF_EXP: mpfr_exp(y, x, MPFR_RNDN); break;
    case REF_TANH: mpfr_tanh(y, x, MPFR_RNDN); break;
    case REF_SIGMOID: sigm(y, x); break;
    case REF_RECIP: mpfr_ui_div(y, 1, x, MPFR_RNDN); break;
    case REF_LOG: /* log(+-0) = -Inf, log(x < 0) = NaN (MPFR's conventions too) */
        mpfr_log(y, x, MPFR_RNDN);
        break;
    case REF_RSQRT: /* the contract: rsqrt(+-0) = +-Inf (MPFR gives +Inf for -0) */
        if (mpfr_zero_p(x))
            mpfr_set_inf(y, mpfr_signbit(x) ? -1 : 1);
        else
            mpfr_rec_sqrt(y, x, MPFR_RNDN);
        break;
    case REF_ERF: mpfr_erf(y, x, MPFR_RNDN); break;
    case REF_GELU:
        /* 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3) */
        if (mpfr_inf_p(x) && mpfr_sgn(x) < 0) {
            mpfr_set_zero(y, -1);
            break;
        }
        mpfr_const_pi(t, MPFR_RNDN);
        mpfr_ui_div(t, 2, t, MPFR_RNDN);
        mpfr_sqrt(t, t, MPFR_RNDN);
        mpfr_mul_ui(t, t, 2, MPFR_RNDN); /* 2 sqrt(2/pi) */
        {
            mpfr_t z, c;
            mpfr_init2(z, REF_PREC);
            mpfr_init2(c, REF_PREC);
            mpfr_set_str(c, "0.044715", 10, MPFR_RNDN);
            mpfr_sqr(z, x, MPFR_RNDN);
            mpfr_mul(z, z, c, MPFR_RNDN);
            mpfr_add_ui(z, z, 1, MPFR_RNDN);
            mpfr_mul(z, z, x, MPFR_RNDN); /* x + 0.044715 x^3 */
            mpfr_mul(z, z, t, MPFR_RNDN);
            sigm(c, z);
            mpfr_mul(y, x, c, MPFR_RNDN);
            if (mpfr_zero_p(y) && !mpfr_zero_p(x)) /* underflow inside MPFR: keep the sign */
                mpfr_set_zero(y, mpfr_sgn(x));
            mpfr_clear(z);
            mpfr_clear(c);
        }
        break;
    default: mpfr_set_nan(y); break;
    }
    mpfr_clear(x);
    mpfr_clear(t);
}

uint32_t ref_round(const mpfr_t y, int prec)
{
    if (mpfr_nan_p(y))
        return TPU_FP32_QNAN;
    uint32_t sign = mpfr_signbit(y) ? 0x80000000u : 0u;
    if (mpfr_inf_p(y))
        return sign | 0x7F800000u;
    if (mpfr_zero_p(y))
        return sign;
    mpfr_t r;
    mpfr_init2(r, prec);
    mpfr_set(r, y, MPFR_RNDN); /* default exponent range: effectively unbounded */
    long ex = mpfr_get_exp(r); /* |r| in [2^(ex-1), 2^ex) */
    uint32_t out;
    if (ex - 1 >= 128)
        out = sign | 0x7F800000u;
    else if (ex - 1 < -126)
        out = sign;
    else
        out = ref_f2u(mpfr_get_flt(r, MPFR_RNDN)); /* exact */
    mpfr_clear(r);
    return out;
}

/* monotone index of a non-NaN value of precision prec held as fp32 bits */
static int64_t ord(uint32_t v, int prec)
{
    uint32_t mag = v & 0x7FFFFFFFu;
    int64_t o;
    if (mag < 0x00800000u)
        o = 0;
    else
        o = (int64_t)((mag - 0x00800000u) >> (24 - prec)) + 1;
    return (v >> 31) ? -o : o;
}

uint64_t ref_ulp_dist(uint32_t a, uint32_t b, int prec)
{
    int64_t d = ord(a, prec) - ord(b, prec);
    return (uint64_t)(d < 0 ? -d : d);
}

double ref_err_ulps(uint32_t got, const mpfr_t y, int prec)
{
    int got_inf = ((got >> 23) & 0xFFu) == 0xFFu;
    if (mpfr_inf_p(y) || got_inf) {
        if (mpfr_inf_p(y) && got_inf && (mpfr_signbit(y) != 0) == ((got >> 31) != 0))
            return 0.0;
        if (!mpfr_inf_p(y) && got_inf) {
            /* measure against the first value past the format's range, 2^128 */
            mpfr_t d;
            mpfr_init2(d, REF_PREC + 64);
            mpfr_set_ui_2exp(d, 1, 128, MPFR_RNDN);
            if (got >> 31)
                mpfr_neg(d, d, MPFR_RNDN);
            mpfr_sub(d, d, y, MPFR_RNDN);
            mpfr_abs(d, d, MPFR_RNDN);
            mpfr_mul_2si(d, d, -(128 - prec), MPFR_RNDN);
            double r = mpfr_get_d(d, MPFR_RNDN);
            mpfr_clear(d);
            return r;
        }
        return INFINITY;
    }
    mpfr_t d;
    mpfr_init2(d, REF_PREC + 64);
    mpfr_set_flt(d, ref_u2f(got), MPFR_RNDN);
    mpfr_sub(d, d, y, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    long e = mpfr_zero_p(y) ? -125 : mpfr_get_exp(y); /* |y| in [2^(e-1), 2^e) */
    if (e - 1 < -126)
        e = -125;
    mpfr_mul_2si(d, d, -((e - 1) - prec + 1), MPFR_RNDN);
    double r = mpfr_get_d(d, MPFR_RNDN);
    mpfr_clear(d);
    return r;
}

const char *ref_special_violation(ref_fn_t fn, uint32_t x, uint32_t y)
{
    int x_nan = (x & 0x7FFFFFFFu) > 0x7F800000u;
    if (x_nan)
        return y == TPU_FP32_QNAN ? 0 : "NaN input must give the canonical NaN";
    if ((fn == REF_LOG || fn == REF_RSQRT) && (daz(x) & 0x80000000u) &&
        (daz(x) & 0x7FFFFFFFu))
        return y == TPU_FP32_QNAN ? 0 : "log / rsqrt of x < 0 must be the canonical NaN";
    if ((y & 0x7FFFFFFFu) > 0x7F800000u)
        return "NaN output for a non-NaN input";
    if (((y >> 23) & 0xFFu) == 0 && (y & 0x7FFFFFu))
        return "subnormal output";
    uint32_t xd = daz(x);
    uint32_t sx = xd >> 31, sy = y >> 31;
    uint32_t ax = xd & 0x7FFFFFFFu, ay = y & 0x7FFFFFFFu;
    int x_zero = ax == 0, x_inf = ax == 0x7F800000u;
    switch (fn) {
    case REF_RELU:
        if (sx || x_zero)
            return y == 0 ? 0 : "relu(x <= 0) must be +0";
        return y == xd ? 0 : "relu(x > 0) must be x";
    case REF_EXP:
        if (x_zero)
            return y == VPU_F_ONE ? 0 : "exp(+-0) must be 1";
        if (x_inf)
            return y == (sx ? 0u : 0x7F800000u) ? 0 : "exp(+Inf) = +Inf, exp(-Inf) = +0";
        if (sy)
            return "exp must not be negative (or -0)";
        if (sx ? ay > VPU_F_ONE : ay < VPU_F_ONE)
            return "exp(x) on the wrong side of 1";
        return 0;
    case REF_TANH:
        if (x_zero)
            return y == xd ? 0 : "tanh(+-0) must be +-0";
        if (x_inf)
            return y == ((sx << 31) | VPU_F_ONE) ? 0 : "tanh(+-Inf) must be +-1";
        if (sy != sx)
            return "tanh must keep the sign of x";
        if (ay > VPU_F_ONE)
            return "|tanh| must be <= 1";
        if (ay > ax)
            return "|tanh(x)| must be <= |x|";
        return 0;
    case REF_SIGMOID:
        if (x_zero)
            return y == 0x3F000000u ? 0 : "sigmoid(+-0) must be 0.5";
        if (x_inf)
            return y == (sx ? 0u : VPU_F_ONE) ? 0 : "sigmoid(+Inf) = 1, sigmoid(-Inf) = +0";
        if (sy || ay > VPU_F_ONE)
            return "sigmoid must be in [+0, 1]";
        if (sx ? ay > 0x3F000000u : ay < 0x3F000000u)
            return "sigmoid(x) on the wrong side of 0.5";
        return 0;
    case REF_GELU:
        if (x_zero)
            return y == xd ? 0 : "gelu(+-0) must be +-0";
        if (x_inf)
            return y == (sx ? 0x80000000u : 0x7F800000u) ? 0 : "gelu(+Inf) = +Inf, gelu(-Inf) = -0";
        if (sy != sx)
            return "gelu must keep the sign of x";
        if (ay > ax)
            return "|gelu(x)| must be <= |x|";
        return 0;
    case REF_RECIP:
        if (x_zero)
            return y == ((sx << 31) | 0x7F800000u) ? 0 : "recip(+-0) must be +-Inf";
        if (x_inf)
            return y == (sx << 31) ? 0 : "recip(+-Inf) must be +-0";
        if (sy != sx)
            return "recip must keep the sign of x";
        if (ax > 0x7E800000u)
            return ay == 0 ? 0 : "recip(|x| > 2^126) must flush to +-0";
        if (ay == 0 || ay == 0x7F800000u)
            return "recip of a normal |x| <= 2^126 must be normal";
        return 0;
    case REF_LOG:
        if (x_zero)
            return y == 0xFF800000u ? 0 : "log(+-0) must be -Inf";
        if (x_inf)
            return y == 0x7F800000u ? 0 : "log(+Inf) must be +Inf";
        if (xd == VPU_F_ONE)
            return y == 0 ? 0 : "log(1) must be +0";
        if (ay == 0 || ay == 0x7F800000u)
            return "log of a positive normal x != 1 must be normal";
        if (sy != (xd < VPU_F_ONE))
            return "log(x) must be < 0 for x < 1 and > 0 for x > 1";
        if (ay > 0x42B17218u) /* ln(2^128) rounded up */
            return "|log(x)| must be < 88.73";
        return 0;
    case REF_RSQRT:
        if (x_zero)
            return y == ((sx << 31) | 0x7F800000u) ? 0 : "rsqrt(+-0) must be +-Inf";
        if (x_inf)
            return y == 0 ? 0 : "rsqrt(+Inf) must be +0";
        if (sy || ay == 0 || ay == 0x7F800000u)
            return "rsqrt of a positive normal x must be a positive normal number";
        if (xd >= VPU_F_ONE ? ay > VPU_F_ONE : ay < VPU_F_ONE)
            return "rsqrt(x) on the wrong side of 1";
        return 0;
    case REF_ERF:
        if (x_zero)
            return y == xd ? 0 : "erf(+-0) must be +-0";
        if (x_inf)
            return y == ((sx << 31) | VPU_F_ONE) ? 0 : "erf(+-Inf) must be +-1";
        if (sy != sx)
            return "erf must keep the sign of x";
        if (ay > VPU_F_ONE)
            return "|erf| must be <= 1";
        return 0;
    default:
        return "unknown function";
    }
}
