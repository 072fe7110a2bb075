/* SPDX-License-Identifier: Apache-2.0 */
/* e^x (docs/vpu.md, "exp"). Integer arithmetic only; every shift is a floor. */
#include "tpu/vpu.h"
#include "internals.h"

fp32_t vpu_exp(fp32_t a)
{
    return vpu_exp_scaled(a, 0);
}

fp32_t vpu_exp_scaled(fp32_t a, int scale)
{
    if (fp32_is_nan(a))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t x = tpu_i_f32_daz(a.v);
    uint32_t neg = x >> 31, e = F32_EXP(x);
    if (scale < -64 || scale > 64)
        return fp32_from_bits(TPU_FP32_QNAN);
    if (e == 0) /* +-0 (and DAZ'd subnormals): exactly 2^scale */
        return fp32_from_bits((uint32_t)(127 + scale) << 23);
    if (e >= 135) /* |x| >= 256, or Inf: certain overflow / underflow (|scale| <= 64) */
        return fp32_from_bits(neg ? 0u : 0x7F800000u);

    /* Stage 1: t = x * log2(e) in two's complement Q.32 (|x| * log2e truncated, then
       negated for x < 0). |x| = m * 2^(e-150); m * LOG2E_Q39 < 2^64 carries weight
       2^(e-189), so the Q.32 value is that product >> (157 - e), a shift of 23..63 (or 0). */
    uint64_t m = 0x800000u | F32_FRAC(x);
    uint64_t p = m * VPU_K_LOG2E_Q39;
    uint32_t rsh = 157u - e;
    uint64_t tmag = rsh >= 64 ? 0 : p >> rsh; /* < 2^40.6 */
    uint64_t t = neg ? (uint64_t)0 - tmag : tmag; /* two's complement, 64 bits */

    /* Stage 2: k = floor(t) (integer part), f = t - k in [0, 1) (32 bits). */
    int64_t k = neg ? -(int64_t)((tmag + 0xFFFFFFFFu) >> 32) : (int64_t)(tmag >> 32);
    uint32_t f = (uint32_t)t;
    uint32_t idx = f >> 24;            /* ROM index: f's top 8 bits */
    uint64_t u = f & 0xFFFFFFu;        /* remainder, weight 2^-32, in [0, 2^-8) */

    /* Stage 3: 2^(u) - 1 = v + v^2/2 + v^3/6 with v = u ln2, all Q.40. */
    uint64_t v = (u * VPU_K_LN2_Q32) >> 24;          /* < 2^31.5 */
    uint64_t w = (v * v) >> 41;                      /* v^2/2,  < 2^22.1 */
    uint64_t c = (((w * v) >> 40) * VPU_K_THIRD_Q16) >> 16; /* v^3/6, < 2^11.1 */
    uint64_t q = v + w + c;                          /* < 2^31.5 */

    /* Stage 4: M = 2^f in Q1.31 = T + T*q. */
    uint64_t tv = vpu_rom_exp2(idx);
    uint64_t mm = tv + ((tv * q) >> 40);             /* in [2^31, 2^32] */

    /* Stage 5: round M to 24 bits (RNE), exponent k + scale + 127, overflow / FTZ. */
    k += scale;
    int sh = 8;
    if (mm >> 32) {
        sh = 9;
        k += 1;
    }
    uint64_t mant = mm >> sh;
    uint64_t rem = mm & ((UINT64_C(1) << sh) - 1);
    uint64_t half = UINT64_C(1) << (sh - 1);
    if (rem > half || (rem == half && (mant & 1u)))
        mant++;
    if (mant >> 24) {
        mant >>= 1;
        k += 1;
    }
    int64_t be = k + 127;
    if (be >= 255)
        return fp32_from_bits(0x7F800000u);
    if (be <= 0)
        return fp32_from_bits(0);
    return fp32_from_bits(((uint32_t)be << 23) | ((uint32_t)mant & 0x7FFFFFu));
}
