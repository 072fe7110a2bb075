/* SPDX-License-Identifier: Apache-2.0 */
/* Vector unit (VPU) numerics: the bit-exact model of every VPU operation.
   The algorithms, widths, tables and special values are defined in docs/vpu.md; the code in
   cmodel/src/vpu_*.c and cmodel/src/fp32_mul.c is that definition in integer arithmetic (no
   host floating point). */
#ifndef TPU_VPU_H
#define TPU_VPU_H

#include <stddef.h>
#include <stdint.h>
#include "tpu/types.h"
#include "tpu/numerics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Unary VPU functions: fp32 in, fp32 out (docs/vpu.md, "Functions") ---------------- */

fp32_t vpu_relu(fp32_t x);    /* fp32_max(x, +0) */
fp32_t vpu_exp(fp32_t x);     /* e^x: fixed-point range reduction, 256-entry 2^(i/256) ROM, cubic */
/* e^x * 2^scale, scale in [-64, 64] (the exp unit's exponent-offset input, used by GELU):
   the same 24-bit significand as vpu_exp, exponent offset before the Inf / FTZ checks.
   Out-of-range scale -> canonical NaN. vpu_exp(x) = vpu_exp_scaled(x, 0). */
fp32_t vpu_exp_scaled(fp32_t x, int scale);
fp32_t vpu_recip(fp32_t x);   /* 1/x: 256-entry ROM, one exact residual, cubic correction */
fp32_t vpu_sigmoid(fp32_t x); /* 1/(1+e^-x) composed from exp, add, recip, mul */
fp32_t vpu_tanh(fp32_t x);    /* (1-e^-2a)/(1+e^-2a), odd polynomial for |x| < 2^-3 */
fp32_t vpu_gelu(fp32_t x);    /* tanh-form GELU, evaluated as x * sigmoid(2u) */
fp32_t vpu_log(fp32_t x);     /* ln x: RECIP ROM reduction, LOG ROM, degree-4 log1p, Q.56 sum */
fp32_t vpu_rsqrt(fp32_t x);   /* 1/sqrt(x): RSQRT ROM, exact-ish residual, cubic correction */
fp32_t vpu_erf(fp32_t x);     /* erf(x): 15 segments of |x|, degree-6 polynomials from a ROM */
fp32_t vpu_canon(fp32_t x);   /* DAZ + canonical NaN (the CVT/MOV op on fp32) */

/* ---- Opcodes ------------------------------------------------------------------------ */
typedef enum {
    /* binary elementwise: y = op(a, b) */
    VPU_OP_ADD = 0,
    VPU_OP_SUB,
    VPU_OP_MUL,
    VPU_OP_MAX,
    VPU_OP_MIN,
    /* unary elementwise: y = op(a) */
    VPU_OP_CVT, /* format conversion / copy: vpu_canon, then the output format's store */
    VPU_OP_RELU,
    VPU_OP_EXP,
    VPU_OP_TANH,
    VPU_OP_SIGMOID,
    VPU_OP_GELU,
    VPU_OP_RECIP,
    VPU_OP_LOG,
    VPU_OP_RSQRT,
    VPU_OP_ERF,
    VPU_OP_COUNT
} vpu_op_t;

static inline int vpu_op_is_binary(vpu_op_t op) { return op <= VPU_OP_MIN; }
static inline int vpu_op_is_unary(vpu_op_t op) { return op >= VPU_OP_CVT && op < VPU_OP_COUNT; }

/* Lower-case name ("add", "exp", ...) or NULL for an invalid opcode. */
const char *vpu_op_name(vpu_op_t op);

/* Scalar forms of the opcodes (fp32 domain). Invalid op -> canonical NaN. */
fp32_t vpu_unary(vpu_op_t op, fp32_t x);
fp32_t vpu_binary(vpu_op_t op, fp32_t a, fp32_t b);

/* ---- Vectors in VPU memory ------------------------------------------------------------
   A vector is an array of raw 32-bit words, one per element, with a format tag:
   VPU_FMT_FP32: the word is the fp32 pattern;
   VPU_FMT_BF16: the low 16 bits are the bf16 pattern (the high 16 bits are ignored on load
                 and written as zero on store).
   Every op loads its inputs into fp32 (bf16_to_fp32 for bf16: exact, DAZ, canonical NaN),
   computes in fp32, and stores with fp32_to_bf16 (RNE) when the output is bf16. */
typedef enum { VPU_FMT_FP32 = 0, VPU_FMT_BF16 = 1 } vpu_fmt_t;

fp32_t vpu_load(vpu_fmt_t fmt, uint32_t w);
uint32_t vpu_store(vpu_fmt_t fmt, fp32_t v);

/* y[i] = op(x[i]) for a unary op. */
tpu_status_t vpu_vec_unary(vpu_op_t op, size_t n, vpu_fmt_t fx, const uint32_t *x,
                           vpu_fmt_t fy, uint32_t *y);
/* y[i] = op(a[i], b[i]) for a binary op. */
tpu_status_t vpu_vec_binary(vpu_op_t op, size_t n, vpu_fmt_t fa, const uint32_t *a,
                            vpu_fmt_t fb, const uint32_t *b, vpu_fmt_t fy, uint32_t *y);
/* Broadcast row: y[r*cols + c] = op(x[r*cols + c], row[c]) for a binary op
   (bias-add is VPU_OP_ADD; also scale rows with VPU_OP_MUL). */
tpu_status_t vpu_vec_broadcast(vpu_op_t op, size_t rows, size_t cols, vpu_fmt_t fx,
                               const uint32_t *x, vpu_fmt_t fb, const uint32_t *row,
                               vpu_fmt_t fy, uint32_t *y);
static inline tpu_status_t vpu_bias_add(size_t rows, size_t cols, vpu_fmt_t fx,
                                        const uint32_t *x, vpu_fmt_t fb, const uint32_t *bias,
                                        vpu_fmt_t fy, uint32_t *y)
{
    return vpu_vec_broadcast(VPU_OP_ADD, rows, cols, fx, x, fb, bias, fy, y);
}

/* ---- Reductions (docs/vpu.md, "Reductions") -------------------------------------------
   op is VPU_OP_ADD (sum), VPU_OP_MAX or VPU_OP_MIN. The row x[0..n) is cut into chunks of
   `lanes` elements (the last one padded with the identity: -0 for ADD, -Inf for MAX, +Inf
   for MIN); each chunk is reduced by a fixed pairwise tree over the lanes padded to a power
   of two; the chunk results are accumulated sequentially in ascending chunk order into an
   accumulator that starts at the identity. n = 0 gives the identity. lanes >= 1. */
tpu_status_t vpu_reduce(vpu_op_t op, size_t n, vpu_fmt_t fx, const uint32_t *x,
                        unsigned lanes, fp32_t *out);

/* ---- Softmax over one row (docs/vpu.md, "Softmax") ------------------------------------
   m = reduce(MAX); e_i = vpu_exp(fp32_sub(x_i, m)); s = reduce(ADD, e); r = vpu_recip(s);
   y_i = fp32_mul(e_i, r). n >= 1, lanes >= 1. */
tpu_status_t vpu_softmax(size_t n, vpu_fmt_t fx, const uint32_t *x, vpu_fmt_t fy,
                         uint32_t *y, unsigned lanes);
/* The stated bound on |sum_i y_i - 1| (fp32 outputs, no NaN/Inf in the row), in units of
   2^-24: ceil(log2 lanes) + ceil(n / lanes) + 3. */
unsigned vpu_softmax_sum_bound_u(size_t n, unsigned lanes);

/* ---- ROM tables and constants (for gen: emit exactly these) --------------------------- */
#define VPU_ROM_SIZE 256u
/* EXP2[i] = round(2^(i/256) * 2^31), i = 0..255 (32 bits, value in [1, 2) as Q1.31). */
uint32_t vpu_rom_exp2(unsigned i);
/* RECIP[i] = round(2^32 / (1 + (2i+1)/512)) = round(2^41 / (513 + 2i)), i = 0..255
   (32 bits, value in (0.5, 1) as Q0.32). */
uint32_t vpu_rom_recip(unsigned i);

/* LOG[i] = round(2^40 * -ln(R'_i)), R'_i = RECIP[i]/2^32 for i < 128, 2 RECIP[i]/2^32 for
   i >= 128, and LOG[0] = LOG[255] = 0 (signed, |LOG[i]| < 2^39; docs/vpu.md, "log"). */
int64_t vpu_rom_log(unsigned i);
/* RSQRT[i] = round(2^32 / sqrt(z_i)), z_i = (1 + (2j+1)/256) * 2^(i >> 7), j = i & 127
   (32 bits, value in (0.5, 1) as Q0.32; docs/vpu.md, "rsqrt"). */
uint32_t vpu_rom_rsqrt(unsigned i);
/* ERF[j][k], segment j = 0..14 (VPU_ERF_SEGS), word k = 0..7: fp32 patterns; k = 0..6 the
   coefficient of v^k of segment j's polynomial, k = 7 the segment's centre c (docs/vpu.md,
   "erf"; fitted offline by scripts/erf_fit.py). Out-of-range j or k -> 0. */
#define VPU_ERF_SEGS 15u
#define VPU_ERF_DEG 6u
uint32_t vpu_rom_erf(unsigned j, unsigned k);

/* Fixed-point constants (exact integers; tests regenerate them with MPFR). */
#define VPU_K_LOG2E_Q39 UINT64_C(0xB8AA3B295C) /* round(log2(e) * 2^39), 40 bits */
#define VPU_K_LN2_Q32 UINT64_C(0xB17217F8)     /* round(ln(2) * 2^32), 32 bits */
#define VPU_K_THIRD_Q16 UINT64_C(0x5555)       /* floor(2^16 / 3) */
#define VPU_K_LN2_Q48 UINT64_C(0xB17217F7D1CF) /* round(ln(2) * 2^48), 48 bits */

/* fp32 constants of the composed functions (RNE roundings of the exact values). */
#define VPU_F_ONE 0x3F800000u        /* 1 */
#define VPU_F_TANH_C1 0xBEAAAAABu    /* -1/3 */
#define VPU_F_TANH_C2 0x3E088889u    /* 2/15 */
#define VPU_F_TANH_C3 0xBD5D0DD1u    /* -17/315 */
#define VPU_F_GELU_C 0x3D372713u     /* 0.044715 */
#define VPU_F_GELU_K 0x3FCC422Au     /* 2*sqrt(2/pi) */
#define VPU_F_2POW_M64 0x1F800000u   /* 2^-64 (GELU's and erf's scale-back) */
#define VPU_F_2POW_64 0x5F800000u    /* 2^64 (erf's scaling of small |x|) */

#ifdef __cplusplus
}
#endif

#endif
