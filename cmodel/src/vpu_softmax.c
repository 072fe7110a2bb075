/* SPDX-License-Identifier: Apache-2.0 */
/* Softmax over one row (docs/vpu.md, "Softmax"). */
#include <stdlib.h>
#include "tpu/vpu.h"

tpu_status_t vpu_softmax(size_t n, vpu_fmt_t fx, const uint32_t *x, vpu_fmt_t fy,
                         uint32_t *y, unsigned lanes)
{
    if (n == 0 || !x || !y || lanes == 0 || (fy != VPU_FMT_FP32 && fy != VPU_FMT_BF16))
        return TPU_EINVAL;
    fp32_t m, s;
    tpu_status_t st = vpu_reduce(VPU_OP_MAX, n, fx, x, lanes, &m); /* pass 1 */
    if (st != TPU_OK)
        return st;
    uint32_t *e = malloc(n * sizeof *e);
    if (!e)
        return TPU_ENOMEM;
    for (size_t i = 0; i < n; i++) /* pass 2: e_i = exp(x_i - m), s = sum e_i */
        e[i] = vpu_exp(fp32_sub(vpu_load(fx, x[i]), m)).v;
    st = vpu_reduce(VPU_OP_ADD, n, VPU_FMT_FP32, e, lanes, &s);
    if (st == TPU_OK) {
        fp32_t r = vpu_recip(s);
        for (size_t i = 0; i < n; i++) /* pass 3: y_i = e_i * r */
            y[i] = vpu_store(fy, fp32_mul(fp32_from_bits(e[i]), r));
    }
    free(e);
    return st;
}

unsigned vpu_softmax_sum_bound_u(size_t n, unsigned lanes)
{
    unsigned lg = 0;
    while (lanes && (1u << lg) < lanes)
        lg++;
    size_t chunks = lanes ? (n + lanes - 1) / lanes : n;
    return lg + (unsigned)chunks + 3u;
}
