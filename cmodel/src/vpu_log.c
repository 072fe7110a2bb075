/* SPDX-License-Identifier: Apache-2.0 */
/* ln x (docs/vpu.md, "log"). Integer arithmetic only; every shift of a signed value is a
   floor (tpu_i_asr). */
#include "tpu/vpu.h"
#include "internals.h"

/* internal: floor(v / 2^s) for a signed 64-bit v, 0 <= s < 64 */
static int64_t tpu_i_asr(int64_t v, unsigned s)
{
    return v >= 0 ? v >> s : ~((~v) >> s);
}

fp32_t vpu_log(fp32_t a)
{
    if (fp32_is_nan(a))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t x = tpu_i_f32_daz(a.v);
    uint32_t e = F32_EXP(x);
    if (e == 0) /* log(+-0) = -Inf */
        return fp32_from_bits(0xFF800000u);
    if (x >> 31) /* log(x < 0) = NaN */
        return fp32_from_bits(TPU_FP32_QNAN);
    if (e == 0xFFu) /* log(+Inf) = +Inf */
        return fp32_from_bits(0x7F800000u);

    /* Stage 1: x = m * 2^(e-127), m in [1, 2) as Q1.23; i = m's top 8 fraction bits.
       R ~ 1/m: the RECIP ROM word (Q0.32), or exactly 1 (i = 0) / 1/2 (i = 255), so that
       log(x) = k ln2 + LOG[i] + log(1 + r), r = m R - 1 exact, with k = e - 127 + i[7]. */
    uint64_t m = 0x800000u | F32_FRAC(x);
    uint32_t i = (uint32_t)(m >> 15) & 0xFFu;
    int64_t k = (int64_t)e - 127 + (int64_t)(i >> 7);
    uint64_t rr = i == 0 ? UINT64_C(1) << 32 : i == 255 ? UINT64_C(1) << 31 : vpu_rom_recip(i);
    int64_t r = (int64_t)(m * rr) - (INT64_C(1) << 55); /* Q.55, |r| < 2^47 (|r| < 2^-8) */

    /* Stage 2: log(1 + r) = r - r^2/2 + r^3/3 - r^4/4 in Q.56. */
    int64_t r39 = tpu_i_asr(r, 16);                      /* Q.39, |r39| < 2^31 */
    int64_t s2 = (int64_t)((uint64_t)(r39 * r39) >> 22); /* r^2, Q.56, < 2^40 */
    int64_t h = s2 >> 16;                                /* r^2, Q.40, < 2^24 */
    int64_t s3 = tpu_i_asr(h * r39, 23);                 /* r^3, Q.56, |s3| < 2^32 */
    int64_t s4 = (h * h) >> 24;                          /* r^4, Q.56, < 2^24 */
    int64_t t3 = tpu_i_asr(s3 * (int64_t)VPU_K_THIRD_Q16, 16); /* r^3/3 */
    int64_t p = 2 * r - (s2 >> 1) + t3 - (s4 >> 2);

    /* Stage 3: S = k ln2 + LOG[i] + p, Q.56, |S| < 2^62.5. */
    int64_t s = k * (int64_t)VPU_K_LN2_Q48 * 256 + vpu_rom_log(i) * 65536 + p;

    /* Stage 4: normalise |S| and round to 24 bits (RNE on S's own bits). */
    if (s == 0)
        return fp32_from_bits(0); /* log(1) = +0 */
    uint32_t sign = s < 0 ? 0x80000000u : 0u;
    uint64_t mag = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
    int msb = 63;
    while (!(mag >> msb))
        msb--;
    uint64_t mant;
    if (msb > 23) {
        unsigned sh = (unsigned)msb - 23u;
        mant = mag >> sh;
        uint64_t rem = mag & ((UINT64_C(1) << sh) - 1), half = UINT64_C(1) << (sh - 1);
        if (rem > half || (rem == half && (mant & 1u)))
            mant++;
        if (mant >> 24) {
            mant >>= 1;
            msb++;
        }
    } else {
        mant = mag << (23 - msb);
    }
    uint32_t be = (uint32_t)(msb + 71); /* value 2^(msb - 56): biased msb - 56 + 127 */
    return fp32_from_bits(sign | (be << 23) | ((uint32_t)mant & 0x7FFFFFu));
}
