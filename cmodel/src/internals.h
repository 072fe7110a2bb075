/* SPDX-License-Identifier: Apache-2.0 */
/* Internal helpers of the C model: not part of the public interface. */
#ifndef TPU_INTERNALS_H
#define TPU_INTERNALS_H

#include <stdint.h>
#include "tpu/types.h"

/* internal: field extraction on raw fp32 bits */
#define F32_SIGN(v) ((uint32_t)(v) >> 31)
#define F32_EXP(v) (((uint32_t)(v) >> 23) & 0xFFu)
#define F32_FRAC(v) ((uint32_t)(v) & 0x7FFFFFu)
/* internal: field extraction on raw bf16 bits */
#define BF16_SIGN(v) ((uint32_t)(v) >> 15)
#define BF16_EXP(v) (((uint32_t)(v) >> 7) & 0xFFu)
#define BF16_FRAC(v) ((uint32_t)(v) & 0x7Fu)

/* internal: DAZ on an fp32 pattern (subnormal -> signed zero). */
static inline uint32_t tpu_i_f32_daz(uint32_t v)
{
    return F32_EXP(v) == 0 ? (v & 0x80000000u) : v;
}

#endif
