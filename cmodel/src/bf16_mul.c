/* SPDX-License-Identifier: Apache-2.0 */
#include "tpu/numerics.h"
#include "internals.h"

fp32_t bf16_mul(bf16_t a, bf16_t b)
{
    if (bf16_is_nan(a) || bf16_is_nan(b))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t sign = (BF16_SIGN(a.v) ^ BF16_SIGN(b.v)) << 31;
    uint32_t ea = BF16_EXP(a.v), eb = BF16_EXP(b.v);
    int a_zero = ea == 0, b_zero = eb == 0; /* DAZ: subnormals are zeros */
    int a_inf = ea == 0xFFu, b_inf = eb == 0xFFu;
    if ((a_inf && b_zero) || (b_inf && a_zero))
        return fp32_from_bits(TPU_FP32_QNAN);
    if (a_inf || b_inf)
        return fp32_from_bits(sign | 0x7F800000u);
    if (a_zero || b_zero)
        return fp32_from_bits(sign);
    /* (1.fa * 2^7) * (1.fb * 2^7): a 16-bit product in [2^14, 2^16). */
    uint32_t prod = (0x80u | BF16_FRAC(a.v)) * (0x80u | BF16_FRAC(b.v));
    int32_t be = (int32_t)ea + (int32_t)eb - 127; /* biased exponent if prod < 2^15 */
    uint32_t frac;
    if (prod & 0x8000u) {
        be += 1;
        frac = (prod & 0x7FFFu) << 8;
    } else {
        frac = (prod & 0x3FFFu) << 9;
    }
    if (be <= 0) /* |p| < 2^-126: flush to zero */
        return fp32_from_bits(sign);
    if (be >= 255) /* |p| >= 2^128 */
        return fp32_from_bits(sign | 0x7F800000u);
    return fp32_from_bits(sign | ((uint32_t)be << 23) | frac);
}
