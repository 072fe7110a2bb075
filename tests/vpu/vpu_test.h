/* SPDX-License-Identifier: Apache-2.0 */
/* Shared declarations of the test-vpu-model cmocka program. */
#ifndef TPU_VPU_TEST_H
#define TPU_VPU_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "vpu_ref.h"

/* deterministic xorshift generator of the tests */
uint32_t vt_rand32(void);
void vt_seed(uint64_t s);

/* test_vpu_arith.c */
void test_fp32_mul_edges(void **state);
void test_fp32_mul_random(void **state);
void test_fp32_minmax(void **state);
void test_vector_ops(void **state);
/* test_vpu_funcs.c */
void test_rom_and_constants(void **state);
void test_exhaustive_bf16(void **state);
void test_monotone_bf16(void **state);
void test_fp32_sample(void **state);
void test_exp_scaled(void **state);
void test_special_fp32(void **state);
void test_log_rsqrt_dense(void **state);
/* test_vpu_reduce.c */
void test_reduce_order(void **state);
void test_reduce_specials(void **state);
void test_softmax(void **state);
void test_softmax_specials(void **state);

#endif
