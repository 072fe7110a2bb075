/* SPDX-License-Identifier: Apache-2.0 */
/* tanh(x) (docs/vpu.md, "tanh"): a fixed chain of VPU fp32 units, each rounding once
   (RNE, DAZ, FTZ, canonical NaN); odd symmetry by construction (the sign is reattached). */
#include "tpu/vpu.h"
#include "internals.h"

fp32_t vpu_tanh(fp32_t x)
{
    if (fp32_is_nan(x))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t sign = x.v & 0x80000000u;
    fp32_t a = fp32_from_bits(tpu_i_f32_daz(x.v) & 0x7FFFFFFFu); /* |x|, DAZ */
    fp32_t one = fp32_from_bits(VPU_F_ONE);
    fp32_t y;
    if (F32_EXP(a.v) < 124) {
        /* |x| < 2^-3: a + a*s*(c1 + s*(c2 + s*c3)), s = a^2 (Taylor to a^7). */
        fp32_t s = fp32_mul(a, a);
        fp32_t p = fp32_mul(fp32_from_bits(VPU_F_TANH_C3), s);
        p = fp32_add(p, fp32_from_bits(VPU_F_TANH_C2));
        p = fp32_mul(p, s);
        p = fp32_add(p, fp32_from_bits(VPU_F_TANH_C1));
        p = fp32_mul(p, s);
        p = fp32_mul(p, a);
        y = fp32_add(a, p);
    } else {
        /* |x| >= 2^-3: E = e^(-2a) (2a exact, or Inf); (1 - E) / (1 + E). */
        fp32_t a2 = fp32_add(a, a);
        fp32_t e = vpu_exp(fp32_from_bits(a2.v | 0x80000000u));
        fp32_t n = fp32_sub(one, e);
        fp32_t d = fp32_add(one, e);
        y = fp32_mul(n, vpu_recip(d));
    }
    return fp32_from_bits(y.v | sign);
}
