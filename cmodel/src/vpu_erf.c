/* SPDX-License-Identifier: Apache-2.0 */
/* erf(x) (docs/vpu.md, "erf"): a fixed chain of VPU fp32 units, each rounding once (RNE, DAZ,
   FTZ, canonical NaN), with the coefficients from the ERF ROM; odd by construction (the sign
   of x is reattached to the result for |x|). */
#include "tpu/vpu.h"
#include "internals.h"

/* The ROM segment of a = |x| (a normal number < 4): 0 for a < 1/2; 1..2 for [1/2, 1),
   3..6 for [1, 2), 7..14 for [2, 4), each 1/4 wide (a's exponent and top fraction bits). */
static unsigned tpu_i_erf_seg(uint32_t a)
{
    uint32_t e = F32_EXP(a);
    if (e < 126)
        return 0;
    if (e == 126)
        return 1 + ((a >> 22) & 1u);
    if (e == 127)
        return 3 + ((a >> 21) & 3u);
    return 7 + ((a >> 20) & 7u);
}

fp32_t vpu_erf(fp32_t x)
{
    if (fp32_is_nan(x))
        return fp32_from_bits(TPU_FP32_QNAN);
    uint32_t sign = x.v & 0x80000000u;
    uint32_t ab = tpu_i_f32_daz(x.v) & 0x7FFFFFFFu; /* |x|, DAZ */
    if (F32_EXP(ab) >= 129)                           /* |x| >= 4, Inf: erf = 1 in fp32 */
        return fp32_from_bits(sign | VPU_F_ONE);
    fp32_t a = fp32_from_bits(ab);
    unsigned j = tpu_i_erf_seg(ab);
    /* v = a^2 (segment 0) or a - c (exact: c and a are within a factor of 2) */
    fp32_t v = j == 0 ? fp32_mul(a, a) : fp32_sub(a, fp32_from_bits(vpu_rom_erf(j, 7)));
    /* Horner: p = c6; p = p v + c_k for k = 5 .. 0 */
    fp32_t p = fp32_from_bits(vpu_rom_erf(j, VPU_ERF_DEG));
    for (int k = (int)VPU_ERF_DEG - 1; k >= 0; k--)
        p = fp32_add(fp32_mul(p, v), fp32_from_bits(vpu_rom_erf(j, (unsigned)k)));
    /* segment 0: p = erf(a)/a - 1, so erf(a) = a + a p (a is exact: one final rounding),
       evaluated on a' = a 2^64 (exact, < 2^63) so that a p cannot flush to zero for tiny a;
       the result a' + a' p >= a' scales back exactly (>= 2^-126, or +0 for a = 0). */
    fp32_t y = p;
    if (j == 0) {
        fp32_t as = fp32_mul(a, fp32_from_bits(VPU_F_2POW_64));
        y = fp32_mul(fp32_add(as, fp32_mul(as, p)), fp32_from_bits(VPU_F_2POW_M64));
    }
    return fp32_from_bits(y.v | sign);
}
