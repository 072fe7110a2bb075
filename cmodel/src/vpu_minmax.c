/* SPDX-License-Identifier: Apache-2.0 */
/* fp32 max / min and ReLU (docs/vpu.md, "fp32_max / fp32_min"). */
#include "tpu/vpu.h"
#include "internals.h"

/* internal: total-order key of a non-NaN fp32 pattern (-Inf smallest, -0 < +0). */
static int64_t tpu_i_order_key(uint32_t v)
{
    return (v & 0x80000000u) ? -(int64_t)(v & 0x7FFFFFFFu) - 1 : (int64_t)v;
}

fp32_t fp32_max(fp32_t a, fp32_t b)
{
    if (fp32_is_nan(a) || fp32_is_nan(b))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t x = tpu_i_f32_daz(a.v), y = tpu_i_f32_daz(b.v);
    return fp32_from_bits(tpu_i_order_key(x) >= tpu_i_order_key(y) ? x : y);
}

fp32_t fp32_min(fp32_t a, fp32_t b)
{
    if (fp32_is_nan(a) || fp32_is_nan(b))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t x = tpu_i_f32_daz(a.v), y = tpu_i_f32_daz(b.v);
    return fp32_from_bits(tpu_i_order_key(x) <= tpu_i_order_key(y) ? x : y);
}

fp32_t vpu_relu(fp32_t x)
{
    return fp32_max(x, fp32_from_bits(0));
}

fp32_t vpu_canon(fp32_t x)
{
    if (fp32_is_nan(x))
        return fp32_from_bits(TPU_FP32_QNAN);
    return fp32_from_bits(tpu_i_f32_daz(x.v));
}
