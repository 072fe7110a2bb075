# SPDX-License-Identifier: Apache-2.0
# The generated VPU (docs/vpu.md, "RTL") against the C model, and its lint.
#   test-vpu-lint         (make test)      verilator --lint-only -Wall and iverilog -g2012,
#                                          clean, for L in {1, 3, 8, 16}
#   test-vpu-cosim        (make test)      sim/vpu_tb at L = 1, 3, 8, 16: every unary op on all
#                                          65,536 bf16 inputs (bf16 -> fp32 and fp32 -> bf16),
#                                          random binary / unary / broadcast vectors with edge
#                                          values, rsum / rmax / rmin rows, softmax rows whose
#                                          length is not a multiple of L; bit for bit, cycles too
#   test-vpu-cosim-fault  (make test)      a single flipped output bit is caught and reported
#                                          with its vector, lane, op, inputs, expected and got
#   test-vpu-lint-128     (make test-full) the same lint for L = 128
#   test-vpu-cosim-full   (make test-full) L = 2, 5, 32, 64 and seeds 2, 3 at L = 8, 16, with
#                                          ten times the random vectors and rows
#   bench-vpu-128         (sim/vpu.mk)     L = 128 co-simulation, for the benchmark only
# One verilated model per L (build/sim/vpu_L<L>), built one at a time with make -j (all the
# machine's cores), shared by the suites.

VPU_COSIM_LANES := 1 3 8 16
VPU_LINT_LANES  := 1 3 8 16
VPU_COSIM_SEED  ?= 1
VPU_FULL_LANES  := 2 5 32 64
VPU_COSIM_JOBS  ?= $(shell nproc 2>/dev/null || echo 2)

TEST_SUITES += test-vpu-lint test-vpu-cosim test-vpu-cosim-fault
FULL_SUITES += test-vpu-lint-128 test-vpu-cosim-full

.PHONY: test-vpu-lint test-vpu-lint-128 test-vpu-cosim test-vpu-cosim-fault test-vpu-cosim-full

test-vpu-lint: $(GEN)
	VERILATOR=$(VERILATOR) sh tests/vpucosim/lint.sh $(GEN) $(VPU_LINT_LANES)

test-vpu-lint-128: $(GEN)
	VERILATOR=$(VERILATOR) sh tests/vpucosim/lint.sh $(GEN) 128

test-vpu-cosim:
	@for l in $(VPU_COSIM_LANES); do \
		$(MAKE) -j$(VPU_COSIM_JOBS) --no-print-directory $(call vpu_tb,$$l) || exit 1; \
	done
	@sh tests/vpucosim/cosim.sh $(SIM_DIR) $(VPU_COSIM_SEED) $(VPU_COSIM_LANES)

test-vpu-cosim-fault: $(call vpu_tb,8)
	@sh tests/vpucosim/fault.sh $(call vpu_tb,8) $(SIM_DIR)/vpu_L8

test-vpu-cosim-full:
	@for l in $(VPU_FULL_LANES) 8 16; do \
		$(MAKE) -j$(VPU_COSIM_JOBS) --no-print-directory $(call vpu_tb,$$l) || exit 1; \
	done
	@st=0; \
	VPU_COUNT=30000 sh tests/vpucosim/cosim.sh $(SIM_DIR) 1 $(VPU_FULL_LANES) || st=1; \
	for seed in 2 3; do VPU_COUNT=30000 sh tests/vpucosim/cosim.sh $(SIM_DIR) $$seed 8 16 || st=1; done; \
	exit $$st
