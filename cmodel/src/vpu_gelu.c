/* SPDX-License-Identifier: Apache-2.0 */
/* GELU, tanh form (docs/vpu.md, "gelu"):
   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) = x * sigmoid(v),
   v = K z, z = x (1 + C x^2), K = 2 sqrt(2/pi), C = 0.044715, as a fixed chain of fp32
   units. For v < 0 the sigmoid factor e^v/(1+e^v) is carried scaled by 2^64 so that it
   does not flush to zero while x * sigmoid(v) is still a normal number. */
#include "tpu/vpu.h"
#include "internals.h"

fp32_t vpu_gelu(fp32_t x)
{
    if (fp32_is_nan(x))
        return fp32_from_bits(TPU_FP32_QNAN);
    if (x.v == 0xFF800000u) /* -Inf: the limit -0 (the chain would give -Inf * 0) */
        return fp32_from_bits(0x80000000u);
    fp32_t one = fp32_from_bits(VPU_F_ONE), down = fp32_from_bits(VPU_F_2POW_M64);
    fp32_t x2 = fp32_mul(x, x);
    fp32_t t = fp32_mul(fp32_from_bits(VPU_F_GELU_C), x2);
    t = fp32_add(one, t);
    fp32_t z = fp32_mul(x, t);
    fp32_t v = fp32_mul(fp32_from_bits(VPU_F_GELU_K), z);
    /* sigmoid(v) as in vpu_sigmoid, with E' = e^-|v| * 2^64 from the exp unit */
    int neg = (v.v >> 31) != 0;
    fp32_t es = vpu_exp_scaled(fp32_from_bits(v.v | 0x80000000u), 64);
    fp32_t e = fp32_mul(es, down); /* = vpu_exp(-|v|) bit for bit */
    fp32_t r = vpu_recip(fp32_add(one, e));
    if (!neg)
        return fp32_mul(x, r);
    return fp32_mul(fp32_mul(x, fp32_mul(es, r)), down); /* x * (E' R) * 2^-64 */
}
