/* SPDX-License-Identifier: Apache-2.0 */
/* 1/x (docs/vpu.md, "recip"). Integer arithmetic only; every shift of a signed value is a
   floor (tpu_i_asr). */
#include "tpu/vpu.h"
#include "internals.h"

/* internal: floor(v / 2^s) for a signed 64-bit v, 0 <= s < 64 */
static int64_t tpu_i_asr(int64_t v, unsigned s)
{
    return v >= 0 ? v >> s : ~((~v) >> s);
}

fp32_t vpu_recip(fp32_t a)
{
    if (fp32_is_nan(a))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t x = tpu_i_f32_daz(a.v);
    uint32_t sign = x & 0x80000000u, e = F32_EXP(x);
    if (e == 0) /* 1/(+-0) = +-Inf */
        return fp32_from_bits(sign | 0x7F800000u);
    if (e == 0xFFu) /* 1/(+-Inf) = +-0 */
        return fp32_from_bits(sign);
    if (F32_FRAC(x) == 0) { /* a power of two: exact */
        int32_t be = 254 - (int32_t)e;
        return fp32_from_bits(be <= 0 ? sign : sign | ((uint32_t)be << 23));
    }

    /* m in (1, 2) as Q1.23; R ~ 1/(midpoint of m's 1/256 interval), Q0.32. */
    uint64_t m = 0x800000u | F32_FRAC(x);
    uint64_t r = vpu_rom_recip((uint32_t)(m >> 15) & 0xFFu);
    /* Exact residual eps = 1 - m*R (Q.55), |eps| <= 2^-9 + 2^-33. */
    int64_t eps = (int64_t)(UINT64_C(1) << 55) - (int64_t)(m * r);
    int64_t e40 = tpu_i_asr(eps, 15);                 /* Q.40, |e40| <= 2^31 */
    int64_t e2 = tpu_i_asr(e40 * e40, 32);            /* eps^2, Q.48 */
    int64_t e3 = tpu_i_asr(e2 * e40, 40);             /* eps^3, Q.48 */
    int64_t q48 = tpu_i_asr(eps, 7) + e2 + e3;        /* eps + eps^2 + eps^3, Q.48 */
    int64_t q36 = tpu_i_asr(q48, 12);                 /* Q.36, |q36| < 2^27.1 */
    /* y = R (1 + q) ~ 1/m, Q0.32, in (2^31, 2^32). */
    int64_t y = (int64_t)r + tpu_i_asr((int64_t)r * q36, 36);

    /* 2/m in (1, 2): y read as Q1.31; keep 24 bits with RNE. */
    uint64_t mant = (uint64_t)y >> 8;
    uint64_t rem = (uint64_t)y & 0xFFu;
    if (rem > 0x80u || (rem == 0x80u && (mant & 1u)))
        mant++;
    int32_t be = 253 - (int32_t)e;
    if (mant >> 24) { /* cannot happen for m > 1 (2/m < 2 - 2^-22); kept for safety */
        mant >>= 1;
        be += 1;
    }
    if (be <= 0)
        return fp32_from_bits(sign);
    return fp32_from_bits(sign | ((uint32_t)be << 23) | ((uint32_t)mant & 0x7FFFFFu));
}
