/* SPDX-License-Identifier: Apache-2.0 */
/* Row reductions in the fixed order of docs/vpu.md, "Reductions": a pairwise tree over the
   lanes of each chunk (padded to a power of two with the identity), then a sequential
   accumulation of the chunk results in ascending chunk order. */
#include <stdlib.h>
#include "tpu/vpu.h"

/* internal: the identity of a reduction op */
static fp32_t tpu_i_identity(vpu_op_t op)
{
    switch (op) {
    case VPU_OP_MAX: return fp32_from_bits(0xFF800000u); /* -Inf */
    case VPU_OP_MIN: return fp32_from_bits(0x7F800000u); /* +Inf */
    default: return fp32_from_bits(TPU_FP32_NEG_ZERO);   /* -0 */
    }
}

/* internal: tree over v[0..w), w a power of two: op(tree(left half), tree(right half)) */
static fp32_t tpu_i_tree(vpu_op_t op, const fp32_t *v, size_t w)
{
    if (w == 1)
        return v[0];
    return vpu_binary(op, tpu_i_tree(op, v, w / 2), tpu_i_tree(op, v + w / 2, w / 2));
}

tpu_status_t vpu_reduce(vpu_op_t op, size_t n, vpu_fmt_t fx, const uint32_t *x,
                        unsigned lanes, fp32_t *out)
{
    if ((op != VPU_OP_ADD && op != VPU_OP_MAX && op != VPU_OP_MIN) || lanes == 0 || !out ||
        (n && !x) || (fx != VPU_FMT_FP32 && fx != VPU_FMT_BF16))
        return TPU_EINVAL;
    size_t w = 1;
    while (w < lanes)
        w *= 2;
    fp32_t *v = malloc(w * sizeof *v);
    if (!v)
        return TPU_ENOMEM;
    fp32_t id = tpu_i_identity(op), acc = id;
    for (size_t base = 0; base < n; base += lanes) {
        for (size_t j = 0; j < w; j++)
            v[j] = (j < lanes && base + j < n) ? vpu_load(fx, x[base + j]) : id;
        acc = vpu_binary(op, acc, tpu_i_tree(op, v, w));
    }
    free(v);
    *out = acc;
    return TPU_OK;
}
