/* SPDX-License-Identifier: Apache-2.0 */
/* test-vpu-model: the VPU numerics of the C model (docs/vpu.md) against MPFR, the host
   FPU and independent oracle loops. */
#include "vpu_test.h"

static uint64_t vt_state = 0x2545F4914F6CDD1Du;

void vt_seed(uint64_t s) { vt_state = s ? s : 1; }

uint32_t vt_rand32(void)
{
    vt_state ^= vt_state << 13;
    vt_state ^= vt_state >> 7;
    vt_state ^= vt_state << 17;
    return (uint32_t)(vt_state >> 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp32_mul_edges),
        cmocka_unit_test(test_fp32_mul_random),
        cmocka_unit_test(test_fp32_minmax),
        cmocka_unit_test(test_vector_ops),
        cmocka_unit_test(test_rom_and_constants),
        cmocka_unit_test(test_exhaustive_bf16),
        cmocka_unit_test(test_monotone_bf16),
        cmocka_unit_test(test_fp32_sample),
        cmocka_unit_test(test_exp_scaled),
        cmocka_unit_test(test_special_fp32),
        cmocka_unit_test(test_log_rsqrt_dense),
        cmocka_unit_test(test_reduce_order),
        cmocka_unit_test(test_reduce_specials),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_softmax_specials),
    };
    return cmocka_run_group_tests_name("vpu-model", tests, NULL, NULL);
}
