# SPDX-License-Identifier: Apache-2.0
# Test suites of the generator and the generated RTL.
#   test-gen-cli                the command line: bad input, --help/--version, headers,
#                               determinism, N = 1, 3, 256 (tests/gen/test_cli.sh)
#   check-rtl                   rtl/ is what gen writes for the default configuration (gen/gen.mk)
#   test-lint                   verilator --lint-only -Wall and iverilog -g2012, clean, for
#                               N in {1, 2, 3, 4, 8, 16, 32} and, with --pe-stages 2 and 3,
#                               N in {1, 2, 3, 4, 16}, and N = 4 with --axi-data-bits 128,
#                               N = 8 with 512 (tests/gen/test_lint.sh)
#   test-rtl-units              verilated tpu_fp32_add / tpu_bf16_mul against the C model
#   test-mxu-timing             verilated tpu_mxu, N in {1,2,3,5,8,16} (and N = 2, 5 at
#                               --pe-stages 2, N = 1, 3, 5 at 3): latency, bank busy,
#                               weight load and numerics cycle by cycle against the C model
#   test-noc-units              verilated tpu_noc (ring of 4, torus 2x2 and 2x3): random traffic
#                               with backpressure, every packet once, in order, intact; link
#                               utilisation under saturation (sim/units/tb_noc.cpp)
# Full only (make test-full):
#   test-lint-128               the same lint for N = 128 (the TPU's array)
#   test-rtl-units-exhaustive   all 2^32 bf16 x bf16 products through the RTL
include sim/units/units.mk

# test-lint's configurations in two halves of about the same time (~45 s each; N = 32 alone
# is ~35 s), run side by side, one per core (test_lint.sh works in its own temporary folder);
# the first half's report is printed, then the second's.
LINT_NS_A := 32 1 2 3 4 1:2 2:2 4:2
LINT_NS_B := 16 16:2 16:3 8 1:3 2:3 3:3 4:3 4/128 8/512

.PHONY: test-gen-cli test-lint test-lint-128
test-gen-cli: $(GEN)
	sh tests/gen/test_cli.sh $(GEN)

test-lint: $(GEN)
	@t=$$(mktemp -d) || exit 1; trap 'rm -rf "$$t"' EXIT; \
	VERILATOR=$(VERILATOR) sh tests/gen/test_lint.sh $(GEN) $(LINT_NS_A) >$$t/a 2>&1 & a=$$!; \
	VERILATOR=$(VERILATOR) sh tests/gen/test_lint.sh $(GEN) $(LINT_NS_B) >$$t/b 2>&1; b=$$?; \
	wait $$a; a=$$?; cat $$t/a $$t/b; [ $$a -eq 0 ] && [ $$b -eq 0 ]

test-lint-128: $(GEN)
	VERILATOR=$(VERILATOR) sh tests/gen/test_lint.sh $(GEN) 128

TEST_SUITES += test-gen-cli check-rtl test-lint test-rtl-units test-mxu-timing test-noc-units
FULL_SUITES += test-lint-128 test-rtl-units-exhaustive
