/* SPDX-License-Identifier: Apache-2.0 */
/* sigmoid(x) = 1/(1+e^-x) (docs/vpu.md, "sigmoid"): a fixed chain of VPU fp32 units,
   each rounding once (RNE, DAZ, FTZ, canonical NaN). */
#include "tpu/vpu.h"

fp32_t vpu_sigmoid(fp32_t x)
{
    /* E = e^-|x| in [0, 1]; D = 1 + E in [1, 2]; R = 1/D in [1/2, 1].
       x >= 0 (sign bit clear): R.  x < 0 (sign bit set): e^x/(1+e^x) = E * R.
       No subtraction anywhere, so no cancellation. NaN propagates through exp. */
    fp32_t e = vpu_exp(fp32_from_bits(x.v | 0x80000000u));
    fp32_t d = fp32_add(fp32_from_bits(VPU_F_ONE), e);
    fp32_t r = vpu_recip(d);
    fp32_t er = fp32_mul(e, r);
    return (x.v & 0x80000000u) ? er : r;
}
