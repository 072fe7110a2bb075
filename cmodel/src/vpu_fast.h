/* SPDX-License-Identifier: Apache-2.0 */
/* The VPU's add, sub, max and min over a row on a faster path (vpu_fast.c): 1 when done (the
   bits of vpu_vec_binary), 0 when the op or the host has no fast path (nothing written). */
#ifndef TPU_VPU_FAST_H
#define TPU_VPU_FAST_H
#include <stddef.h>
#include <stdint.h>
#include "tpu/vpu.h"
int vpu_vec_binary_fast(vpu_op_t op, size_t n, vpu_fmt_t fa, const uint32_t *a, vpu_fmt_t fb,
                        const uint32_t *b, vpu_fmt_t fy, uint32_t *y);
/* relu and cvt likewise (the bits of vpu_vec_unary); 0 for any other op */
int vpu_vec_unary_fast(vpu_op_t op, size_t n, vpu_fmt_t fx, const uint32_t *x, vpu_fmt_t fy,
                       uint32_t *y);
/* tests: 1 selects the AVX2 copies of these loops where the host has AVX2, 0 the baseline
   ones (the default: AVX2 where the host has it, unless TPU_MODEL_MX_SIMD=sse2) */
void vpu_fast_set_simd(int avx2);
#endif
