/* SPDX-License-Identifier: Apache-2.0 */
/* VPU opcodes and elementwise vector operations (docs/vpu.md, "Opcodes"). */
#include "tpu/vpu.h"

static const char *const tpu_i_op_names[VPU_OP_COUNT] = {
    "add", "sub", "mul", "max", "min", "cvt", "relu", "exp", "tanh", "sigmoid", "gelu", "recip",
    "log", "rsqrt", "erf",
};

const char *vpu_op_name(vpu_op_t op)
{
    return ((unsigned)op < VPU_OP_COUNT) ? tpu_i_op_names[op] : NULL;
}

fp32_t vpu_unary(vpu_op_t op, fp32_t x)
{
    switch (op) {
    case VPU_OP_CVT: return vpu_canon(x);
    case VPU_OP_RELU: return vpu_relu(x);
    case VPU_OP_EXP: return vpu_exp(x);
    case VPU_OP_TANH: return vpu_tanh(x);
    case VPU_OP_SIGMOID: return vpu_sigmoid(x);
    case VPU_OP_GELU: return vpu_gelu(x);
    case VPU_OP_RECIP: return vpu_recip(x);
    case VPU_OP_LOG: return vpu_log(x);
    case VPU_OP_RSQRT: return vpu_rsqrt(x);
    case VPU_OP_ERF: return vpu_erf(x);
    default: return fp32_from_bits(TPU_FP32_QNAN);
    }
}

fp32_t vpu_binary(vpu_op_t op, fp32_t a, fp32_t b)
{
    switch (op) {
    case VPU_OP_ADD: return fp32_add(a, b);
    case VPU_OP_SUB: return fp32_sub(a, b);
    case VPU_OP_MUL: return fp32_mul(a, b);
    case VPU_OP_MAX: return fp32_max(a, b);
    case VPU_OP_MIN: return fp32_min(a, b);
    default: return fp32_from_bits(TPU_FP32_QNAN);
    }
}

fp32_t vpu_load(vpu_fmt_t fmt, uint32_t w)
{
    return fmt == VPU_FMT_BF16 ? bf16_to_fp32(bf16_from_bits((uint16_t)w)) : fp32_from_bits(w);
}

uint32_t vpu_store(vpu_fmt_t fmt, fp32_t v)
{
    return fmt == VPU_FMT_BF16 ? fp32_to_bf16(v).v : v.v;
}

static int tpu_i_fmt_ok(vpu_fmt_t f)
{
    return f == VPU_FMT_FP32 || f == VPU_FMT_BF16;
}

tpu_status_t vpu_vec_unary(vpu_op_t op, size_t n, vpu_fmt_t fx, const uint32_t *x,
                           vpu_fmt_t fy, uint32_t *y)
{
    if (!vpu_op_is_unary(op) || !tpu_i_fmt_ok(fx) || !tpu_i_fmt_ok(fy) ||
        (n && (!x || !y)))
        return TPU_EINVAL;
    for (size_t i = 0; i < n; i++)
        y[i] = vpu_store(fy, vpu_unary(op, vpu_load(fx, x[i])));
    return TPU_OK;
}

tpu_status_t vpu_vec_binary(vpu_op_t op, size_t n, vpu_fmt_t fa, const uint32_t *a,
                            vpu_fmt_t fb, const uint32_t *b, vpu_fmt_t fy, uint32_t *y)
{
    if (!vpu_op_is_binary(op) || !tpu_i_fmt_ok(fa) || !tpu_i_fmt_ok(fb) ||
        !tpu_i_fmt_ok(fy) || (n && (!a || !b || !y)))
        return TPU_EINVAL;
    for (size_t i = 0; i < n; i++)
        y[i] = vpu_store(fy, vpu_binary(op, vpu_load(fa, a[i]), vpu_load(fb, b[i])));
    return TPU_OK;
}

tpu_status_t vpu_vec_broadcast(vpu_op_t op, size_t rows, size_t cols, vpu_fmt_t fx,
                               const uint32_t *x, vpu_fmt_t fb, const uint32_t *row,
                               vpu_fmt_t fy, uint32_t *y)
{
    if (!vpu_op_is_binary(op) || !tpu_i_fmt_ok(fx) || !tpu_i_fmt_ok(fb) ||
        !tpu_i_fmt_ok(fy) || (rows && cols && (!x || !row || !y)))
        return TPU_EINVAL;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            y[r * cols + c] = vpu_store(
                fy, vpu_binary(op, vpu_load(fx, x[r * cols + c]), vpu_load(fb, row[c])));
    return TPU_OK;
}
