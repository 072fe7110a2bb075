# SPDX-License-Identifier: Apache-2.0
# Test suites of the generator and the generated RTL.
#   check-rtl                   rtl/ is what gen writes for the default configuration (gen/gen.mk)
#   test-rtl-units              verilated tpu_fp32_add / tpu_bf16_mul against the C model
#   test-mxu-timing             verilated tpu_mxu, N in {1,2,3,5,8,16}: latency, bank busy,
#                               weight load and numerics cycle by cycle against the C model
#   test-rtl-units-exhaustive   (full) all 2^32 bf16 x bf16 products through the RTL
include sim/units/units.mk

TEST_SUITES += check-rtl test-rtl-units test-mxu-timing
FULL_SUITES += test-rtl-units-exhaustive
