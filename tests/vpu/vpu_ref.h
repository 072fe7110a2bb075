/* SPDX-License-Identifier: Apache-2.0 */
/* MPFR references and checks for the VPU functions, shared by tests/vpu and
   bench/vpu_accuracy.c. Test-side code: it may use host float and MPFR freely. */
#ifndef TPU_VPU_REF_H
#define TPU_VPU_REF_H

#include <stdint.h>
#include <mpfr.h>
#include "tpu/vpu.h"

/* The unary functions measured. */
typedef enum { REF_RELU, REF_EXP, REF_TANH, REF_SIGMOID, REF_GELU, REF_RECIP, REF_LOG,
               REF_RSQRT, REF_ERF, REF_NFUNCS } ref_fn_t;

extern const char *const ref_fn_names[REF_NFUNCS];
extern const vpu_op_t ref_fn_ops[REF_NFUNCS];

/* The exact function value at the fp32 input x (DAZ applied first), precision REF_PREC.
   y must be initialised with precision REF_PREC. NaN input -> NaN. */
#define REF_PREC 256
void ref_eval(ref_fn_t fn, uint32_t x, mpfr_t y);

/* Correct rounding of y to prec significant bits (24: fp32, 8: bf16) with RNE and an
   unbounded exponent, then the contract: |r| >= 2^128 -> Inf, |r| < 2^-126 -> signed zero
   (tininess after rounding), NaN -> canonical. Returns the fp32 bit pattern (for prec 8 the
   result is exactly a bf16 value widened; take the top 16 bits). */
uint32_t ref_round(const mpfr_t y, int prec);

/* Distance in units in the last place between two non-NaN values of the given precision
   (8 or 24), counting representable values with FTZ: +0 and -0 are the same point, and
   the step from 0 to the smallest normal counts as one. */
uint64_t ref_ulp_dist(uint32_t a, uint32_t b, int prec);

/* |got - y| / ulp(y) in the precision prec (ulp(y) = 2^(floor(log2|y|) - prec + 1), and
   2^(-126 - prec + 1) below 2^-126). Inf if got or y is Inf and they differ. */
double ref_err_ulps(uint32_t got, const mpfr_t y, int prec);

/* The documented special-value / range rules of docs/vpu.md for fn: 0 if y (the fp32
   output of the model for the fp32 input x) satisfies them all, else a short reason. */
const char *ref_special_violation(ref_fn_t fn, uint32_t x, uint32_t y);

/* The model's function as a pointer. */
fp32_t ref_model(ref_fn_t fn, fp32_t x);

/* fp32 pattern of a host float and back */
uint32_t ref_f2u(float f);
float ref_u2f(uint32_t u);

#endif
