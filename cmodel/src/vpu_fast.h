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
/* relu, cvt and erf likewise (the bits of vpu_vec_unary); 0 for any other op */
int vpu_vec_unary_fast(vpu_op_t op, size_t n, vpu_fmt_t fx, const uint32_t *x, vpu_fmt_t fy,
                       uint32_t *y);
/* A whole instruction's rows at once on AVX-512 (rows r = 0 .. rows - 1: y + r ys from
   a + r as and b + r bs, in order, each row read whole before it is written, as the per-row
   calls): 1 when done (the bits of the per-row calls), 0 when the op, N or the host has no such
   path (nothing written). bs = 0: one b row for all. */
int vpu_rows_binary_fast(vpu_op_t op, size_t rows, size_t n, vpu_fmt_t fa, const uint32_t *a,
                         size_t as, vpu_fmt_t fb, const uint32_t *b, size_t bs, vpu_fmt_t fy,
                         uint32_t *y, size_t ys);
int vpu_rows_unary_fast(vpu_op_t op, size_t rows, size_t n, vpu_fmt_t fx, const uint32_t *x,
                        size_t xs, vpu_fmt_t fy, uint32_t *y, size_t ys);
/* tests: 1 selects the AVX2 copies of these loops where the host has AVX2 (and the AVX-512
   rows where it has AVX-512F), 0 the baseline ones and no AVX-512 rows (the default: AVX2
   where the host has it, unless TPU_MODEL_MX_SIMD=sse2; AVX-512 rows unless it is also avx2 or
   avx2-skip) */
void vpu_fast_set_simd(int avx2);
#endif
