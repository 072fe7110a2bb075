/* SPDX-License-Identifier: Apache-2.0 */
#include "tpu/numerics.h"
#include "internals.h"

/* internal: index of the most significant set bit of a nonzero 64-bit value */
static inline int tpu_i_msb64(uint64_t x)
{
    return 63 - __builtin_clzll(x);
}

fp32_t fp32_add(fp32_t a, fp32_t b)
{
    if (fp32_is_nan(a) || fp32_is_nan(b))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t x = tpu_i_f32_daz(a.v), y = tpu_i_f32_daz(b.v);
    uint32_t ex = F32_EXP(x), ey = F32_EXP(y);
    if (ex == 0xFFu && ey == 0xFFu)
        return fp32_from_bits(x == y ? x : TPU_FP32_QNAN);
    if (ex == 0xFFu)
        return fp32_from_bits(x);
    if (ey == 0xFFu)
        return fp32_from_bits(y);
    if (ex == 0 && ey == 0) /* both zeros: -0 only for (-0) + (-0) */
        return fp32_from_bits(x & y);
    if (ex == 0)
        return fp32_from_bits(y);
    if (ey == 0)
        return fp32_from_bits(x);

    /* Both normal. Order by magnitude so that x is the larger. */
    if ((y & 0x7FFFFFFFu) > (x & 0x7FFFFFFFu)) {
        uint32_t t = x; x = y; y = t;
        ex = F32_EXP(x); ey = F32_EXP(y);
    }
    uint32_t sign = x & 0x80000000u;
    /* 24-bit significands placed 30 bits up: the low bits keep the alignment shift exact
       enough that a sticky bit below them decides every RNE case correctly. */
    uint64_t sx = (uint64_t)(0x800000u | F32_FRAC(x)) << 30;
    uint64_t sy = (uint64_t)(0x800000u | F32_FRAC(y)) << 30;
    uint32_t d = ex - ey;
    if (d > 62) {
        sy = 1; /* only a sticky bit remains */
    } else if (d > 0) {
        uint64_t lost = sy & ((UINT64_C(1) << d) - 1);
        sy = (sy >> d) | (lost != 0);
    }
    uint64_t s = ((x ^ y) & 0x80000000u) ? sx - sy : sx + sy;
    if (s == 0) /* exact cancellation: +0 under RNE */
        return fp32_from_bits(0);

    /* s represents s * 2^(ex - 180). Keep 24 bits, rounding the rest to nearest even. */
    int sh = tpu_i_msb64(s) - 23; /* always >= 6 here, see docs/numerics.md */
    uint64_t mant = s >> sh;
    uint64_t rem = s & ((UINT64_C(1) << sh) - 1);
    uint64_t half = UINT64_C(1) << (sh - 1);
    if (rem > half || (rem == half && (mant & 1u)))
        mant++;
    if (mant == (UINT64_C(1) << 24)) {
        mant >>= 1;
        sh++;
    }
    int32_t be = (int32_t)ex + sh - 30;
    if (be >= 255)
        return fp32_from_bits(sign | 0x7F800000u);
    if (be <= 0) /* below 2^-126: flush, keeping the exact sum's sign */
        return fp32_from_bits(sign);
    return fp32_from_bits(sign | ((uint32_t)be << 23) | ((uint32_t)mant & 0x7FFFFFu));
}

fp32_t fp32_sub(fp32_t a, fp32_t b)
{
    return fp32_add(a, fp32_from_bits(b.v ^ 0x80000000u));
}

fp32_t fp32_mac(fp32_t acc, bf16_t a, bf16_t b)
{
    return fp32_add(acc, bf16_mul(a, b));
}
