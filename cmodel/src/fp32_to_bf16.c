/* SPDX-License-Identifier: Apache-2.0 */
#include "tpu/numerics.h"
#include "internals.h"

bf16_t fp32_to_bf16(fp32_t a)
{
    if (fp32_is_nan(a))
        return bf16_from_bits(TPU_BF16_QNAN);
    uint32_t v = tpu_i_f32_daz(a.v);
    if (F32_EXP(v) == 0xFFu || F32_EXP(v) == 0) /* Inf or zero: exact */
        return bf16_from_bits((uint16_t)(v >> 16));
    /* Round to nearest even on bit 16; a carry into the exponent field is the correct
       result (the next binade, or Inf above the largest finite bf16). */
    v += 0x7FFFu + ((v >> 16) & 1u);
    return bf16_from_bits((uint16_t)(v >> 16));
}
