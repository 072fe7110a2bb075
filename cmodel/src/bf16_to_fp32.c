/* SPDX-License-Identifier: Apache-2.0 */
#include "tpu/numerics.h"
#include "internals.h"

fp32_t bf16_to_fp32(bf16_t a)
{
    if (bf16_is_nan(a))
        return fp32_from_bits(TPU_FP32_QNAN);
    return fp32_from_bits(tpu_i_f32_daz((uint32_t)a.v << 16));
}
