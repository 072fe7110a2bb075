/* SPDX-License-Identifier: Apache-2.0 */
/* fp32 x fp32 -> fp32 (docs/vpu.md, "fp32_mul"; declared in tpu/vpu.h until it moves to
   tpu/numerics.h). DAZ inputs, RNE, FTZ with tininess detected after rounding, canonical NaN. */
#include "tpu/vpu.h"
#include "internals.h"

fp32_t fp32_mul(fp32_t a, fp32_t b)
{
    if (fp32_is_nan(a) || fp32_is_nan(b))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t x = tpu_i_f32_daz(a.v), y = tpu_i_f32_daz(b.v);
    uint32_t sign = (x ^ y) & 0x80000000u;
    uint32_t ex = F32_EXP(x), ey = F32_EXP(y);
    int x_inf = ex == 0xFFu, y_inf = ey == 0xFFu;
    if ((x_inf && ey == 0) || (y_inf && ex == 0))
        return fp32_from_bits(TPU_FP32_QNAN);
    if (x_inf || y_inf)
        return fp32_from_bits(sign | 0x7F800000u);
    if (ex == 0 || ey == 0)
        return fp32_from_bits(sign);
    /* Two 24-bit significands: a 48-bit product in [2^46, 2^48). */
    uint64_t p = (uint64_t)(0x800000u | F32_FRAC(x)) * (0x800000u | F32_FRAC(y));
    int32_t be = (int32_t)ex + (int32_t)ey - 127; /* biased exponent if p < 2^47 */
    int sh = 23;
    if (p >> 47) {
        sh = 24;
        be += 1;
    }
    uint64_t mant = p >> sh;
    uint64_t rem = p & ((UINT64_C(1) << sh) - 1);
    uint64_t half = UINT64_C(1) << (sh - 1);
    if (rem > half || (rem == half && (mant & 1u)))
        mant++;
    if (mant >> 24) { /* rounded up to 2.0 */
        mant >>= 1;
        be += 1;
    }
    if (be >= 255)
        return fp32_from_bits(sign | 0x7F800000u);
    if (be <= 0) /* the rounded value (unbounded exponent) is below 2^-126: flush */
        return fp32_from_bits(sign);
    return fp32_from_bits(sign | ((uint32_t)be << 23) | ((uint32_t)mant & 0x7FFFFFu));
}
