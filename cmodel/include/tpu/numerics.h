/* SPDX-License-Identifier: Apache-2.0 */
/* bf16/fp32 arithmetic exactly as docs/numerics.md defines it (integer implementation). */
#ifndef TPU_NUMERICS_H
#define TPU_NUMERICS_H

#include <stddef.h>

#include "tpu/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exact widening; subnormal -> signed zero (DAZ); NaN -> 0x7FC00000. */
fp32_t bf16_to_fp32(bf16_t a);
/* DAZ, then round to nearest even on the top 16 bits; overflow -> Inf; NaN -> 0x7FC0. */
bf16_t fp32_to_bf16(fp32_t a);
/* fp32_to_bf16 of the n fp32 bit patterns src[0 .. n - 1] into dst[0], dst[step], ...
   (dst[i * step]); the same function, one call per run of values */
void fp32_to_bf16_run(const uint32_t *src, uint16_t *dst, size_t n, size_t step);
/* Exact bf16 x bf16 product as fp32; |p| < 2^-126 -> signed zero, |p| >= 2^128 -> Inf. */
fp32_t bf16_mul(bf16_t a, bf16_t b);
/* IEEE addition, round to nearest even, DAZ inputs, FTZ result, canonical NaN. */
fp32_t fp32_add(fp32_t a, fp32_t b);
/* a - b = a + (-b). */
fp32_t fp32_sub(fp32_t a, fp32_t b);
/* Unfused multiply-accumulate: fp32_add(acc, bf16_mul(a, b)). */
fp32_t fp32_mac(fp32_t acc, bf16_t a, bf16_t b);

/* IEEE fp32 x fp32, RNE, DAZ inputs, FTZ result (tininess after rounding), canonical NaN. */
fp32_t fp32_mul(fp32_t a, fp32_t b);
/* Larger / smaller of a and b after DAZ. Any NaN -> canonical NaN;
   max(-0, +0) = +0, min(-0, +0) = -0 (either order). The result is an input (DAZ'd). */
fp32_t fp32_max(fp32_t a, fp32_t b);
fp32_t fp32_min(fp32_t a, fp32_t b);

/* Classification helpers (on raw bits, no DAZ applied). */
static inline int fp32_is_nan(fp32_t a) { return (a.v & 0x7FFFFFFFu) > 0x7F800000u; }
static inline int bf16_is_nan(bf16_t a) { return (a.v & 0x7FFFu) > 0x7F80u; }

#ifdef __cplusplus
}
#endif

#endif
