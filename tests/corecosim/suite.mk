# SPDX-License-Identifier: Apache-2.0
# Co-simulation of the generated core against the core's C model (docs/isa.md
# "Co-simulation"; sim/core_tb.cpp, tpu-run, tpu-core-cmp).
#   test-core-cmp        (make test)  tpu-core-cmp on hand-made trace pairs (no RTL)
#   test-core-cosim      (make test)  N = 2, 3, 4, 8: every tpu-mkprog kind, with and without
#                                     AXI back-pressure: traces identical to the model's,
#                                     dumps identical byte for byte, counters side by side
#                                     (DMA_BUSY equal to the model's without back-pressure);
#                                     N = 4 with --axi-data-bits 128, 256, 512: the DMA-heavy
#                                     kinds (tests/corecosim/axi.sh)
#   test-core-cosim-fault (make test) an injected fault is reported at the right instruction;
#                                     bad programs halt with the model's `e <pc> <code>`
# One verilated core per N (build/sim/core_N<N>, or core_N<N>_A<B> for a non-default AXI data
# width), built once and shared by all the cases.

CORE_COSIM_N := 2 3 4 8
CORE_COSIM_AXI := 4:128 4:256 4:512

TEST_SUITES += test-core-cmp test-core-cosim test-core-cosim-fault

.PHONY: test-core-cmp test-core-cosim test-core-cosim-fault core-cosim-tools

test-core-cmp: $(CORE_CMP)
	@sh tests/corecosim/cmp.sh

core-cosim-tools:
	@$(MAKE) --no-print-directory $(CORE_CMP) $(TPU_RUN) $(TPU_MKPROG)

# The models are built one at a time (a Verilator build uses the whole machine), then run.
test-core-cosim: core-cosim-tools
	@for n in $(CORE_COSIM_N); do \
		$(MAKE) --no-print-directory $(call core_tb,$$n) || exit 1; \
	done
	@for nb in $(CORE_COSIM_AXI); do \
		$(MAKE) --no-print-directory $(call core_tb,$${nb%:*},$${nb#*:}) || exit 1; \
	done
	@st=0; for n in $(CORE_COSIM_N); do sh tests/corecosim/cosim.sh $$n || st=1; done; \
	for nb in $(CORE_COSIM_AXI); do sh tests/corecosim/axi.sh $${nb%:*} $${nb#*:} || st=1; done; \
	exit $$st

test-core-cosim-fault: core-cosim-tools
	@$(MAKE) --no-print-directory $(call core_tb,4) $(call core_tb,4,128)
	@sh tests/corecosim/fault.sh 4
