/* SPDX-License-Identifier: Apache-2.0 */
/* 1/sqrt(x) (docs/vpu.md, "rsqrt"). Integer arithmetic only; every shift of a signed value
   is a floor (tpu_i_asr). */
#include "tpu/vpu.h"
#include "internals.h"

/* internal: floor(v / 2^s) for a signed 64-bit v, 0 <= s < 64 */
static int64_t tpu_i_asr(int64_t v, unsigned s)
{
    return v >= 0 ? v >> s : ~((~v) >> s);
}

fp32_t vpu_rsqrt(fp32_t a)
{
    if (fp32_is_nan(a))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t x = tpu_i_f32_daz(a.v);
    uint32_t sign = x & 0x80000000u, e = F32_EXP(x);
    if (e == 0) /* rsqrt(+-0) = +-Inf */
        return fp32_from_bits(sign | 0x7F800000u);
    if (sign) /* rsqrt(x < 0) = NaN */
        return fp32_from_bits(TPU_FP32_QNAN);
    if (e == 0xFFu) /* rsqrt(+Inf) = +0 */
        return fp32_from_bits(0);

    /* Stage 1: x = z * 2^(2n), z = m (e odd) or 2m (e even) in [1, 4); the ROM index is the
       exponent's parity and m's top 7 fraction bits; Q ~ 1/sqrt(z) (Q0.32). */
    uint32_t odd = (e & 1u) ^ 1u; /* e - 127 odd */
    uint64_t m = 0x800000u | F32_FRAC(x);
    uint64_t q = vpu_rom_rsqrt((odd << 7) | (F32_FRAC(x) >> 16));
    /* Stage 2: eps = 1 - z Q^2 (Q.62), with Q^2 truncated to Q.40. |eps| < 2^-8. */
    uint64_t q2 = (q * q) >> 24;                  /* Q.40, < 2^40 */
    uint64_t pz = m * q2;                         /* m Q^2, Q.63 */
    int64_t zq = (int64_t)(odd ? pz : pz >> 1);   /* z Q^2, Q.62 */
    int64_t eps = (INT64_C(1) << 62) - zq;        /* Q.62, |eps| < 2^54 */
    /* Stage 3: (1 - eps)^(-1/2) - 1 ~ eps/2 + 3/8 eps^2 + 5/16 eps^3, Q.48. */
    int64_t e39 = tpu_i_asr(eps, 23);                     /* Q.39, |e39| < 2^31 */
    int64_t e2 = (int64_t)((uint64_t)(e39 * e39) >> 30); /* eps^2, Q.48, < 2^32 */
    int64_t e3 = tpu_i_asr((e2 >> 2) * e39, 37);          /* eps^3, Q.48, |e3| < 2^24 */
    int64_t q48 = tpu_i_asr(eps, 15) + ((3 * e2) >> 3) + tpu_i_asr(5 * e3, 4);
    int64_t q38 = tpu_i_asr(q48, 10);                     /* Q.38, |q38| < 2^29.1 */
    /* Stage 4: y = Q (1 + q) ~ 1/sqrt(z), Q0.32, in (2^31, 2^32]. */
    int64_t y = (int64_t)q + tpu_i_asr((int64_t)q * q38, 38);

    /* Stage 5: 2y in (1, 2] as Q1.31: keep 24 bits with RNE; a carry to 2 adds 1 to the
       exponent. Result 2y * 2^(-1 - n): biased 126 - n, n = (e - 127 - odd) / 2. */
    uint64_t mant = (uint64_t)y >> 8, rem = (uint64_t)y & 0xFFu;
    if (rem > 0x80u || (rem == 0x80u && (mant & 1u)))
        mant++;
    int32_t be = 126 - ((int32_t)e - 127 - (int32_t)odd) / 2;
    if (mant >> 24) {
        mant >>= 1;
        be += 1;
    }
    return fp32_from_bits(((uint32_t)be << 23) | ((uint32_t)mant & 0x7FFFFFu));
}
