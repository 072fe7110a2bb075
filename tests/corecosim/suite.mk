# SPDX-License-Identifier: Apache-2.0
# Co-simulation of the generated core against the core's C model (docs/isa.md
# "Co-simulation"; sim/core_tb.cpp, tpu-run, tpu-core-cmp).
#   test-core-cmp        (make test)  tpu-core-cmp on hand-made trace pairs (no RTL)
#   test-core-cosim      (make test)  N = 2, 3, 4, 8: every tpu-mkprog kind, with and without
#                                     AXI back-pressure: traces identical to the model's,
#                                     dumps identical byte for byte, counters side by side
#                                     (DMA_BUSY equal to the model's without back-pressure);
#                                     N = 4 with --axi-data-bits 512: the DMA-heavy kinds
#                                     (tests/corecosim/axi.sh); at stall 0 the model's
#                                     CYCLES within 2 % of the RTL's (sim/core_case.sh), and
#                                     so on the compiler's MLP: inference on core_N4, a
#                                     training step on core_N4 and on the N = 8 2-core ring
#                                     board (tests/corecosim/cycles.sh); a program of 5480
#                                     instructions (more than a 16-bit AXI4-Lite address
#                                     reaches) on core_N4_I8192 (tests/corecosim/longprog.sh);
#                                     loops and index registers on core_N4: a tiled matmul
#                                     (hoisted and re-armed), 4 levels with all seven
#                                     registers and negative strides, errors 2, 10 and 3 in
#                                     a loop, modulo registers (a WMEM ring, wrapping rows and
#                                     host addresses; a reserved k: error 1): traces and all
#                                     counters equal to the model's (tests/corecosim/loops.sh)
#   test-core-cosim-fault (make test) an injected fault is reported at the right instruction;
#                                     bad programs halt with the model's `e <seq> <pc> <code>`; the
#                                     AXI checker also on the 512-bit master of core_N4_A512
#   test-core-cosim-full (make test-full) the other widths: N = 4 with --axi-data-bits 128
#                                     and 256, the same DMA-heavy kinds (axi.sh)
# One verilated core per N (build/sim/core_N<N>, or core_N<N>_A<B> for a non-default AXI data
# width), built once and shared by all the cases (the fault test uses the same two N = 4 cores
# as test-core-cosim). A core's C++ is ~30 files: make -j (all the cores of the machine) builds
# one model in ~0.6 of the time of a serial build.

CORE_COSIM_N := 2 3 4 8
CORE_COSIM_AXI := 4:512
CORE_COSIM_AXI_FULL := 4:128 4:256
CORE_COSIM_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

TEST_SUITES += test-core-cmp test-core-cosim test-core-cosim-fault
FULL_SUITES += test-core-cosim-full

.PHONY: test-core-cmp test-core-cosim test-core-cosim-fault test-core-cosim-full core-cosim-tools

test-core-cmp: $(CORE_CMP) $(TRACE_CMP) $(BOARD_CMP)
	@sh tests/corecosim/cmp.sh

core-cosim-tools:
	@$(MAKE) --no-print-directory $(CORE_CMP) $(TPU_RUN) $(TPU_MKPROG)

# $(1): N values, $(2): N:B pairs. The models are built one at a time, each with make -j (a
# Verilator build uses the whole machine), then run.
core_cosim = \
	@for n in $(1); do \
		$(MAKE) -j$(CORE_COSIM_JOBS) --no-print-directory $(call core_tb,$$n) || exit 1; \
	done; \
	for nb in $(2); do n=$${nb%:*}; b=$${nb\#*:}; \
		$(MAKE) -j$(CORE_COSIM_JOBS) --no-print-directory $(call core_tb,$${n},$$b) || exit 1; \
	done; \
	st=0; for n in $(1); do sh tests/corecosim/cosim.sh $$n || st=1; done; \
	for nb in $(2); do sh tests/corecosim/axi.sh $${nb%:*} $${nb\#*:} || st=1; done; \
	exit $$st

test-core-cosim: core-cosim-tools $(BUILD)/tools/tpu-train $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer
	$(call core_cosim,$(CORE_COSIM_N),$(CORE_COSIM_AXI))
	@BUILD=$(BUILD) sh tests/corecosim/cycles.sh $(BUILD)/tests/corecosim/cycles
	@BUILD=$(BUILD) sh tests/corecosim/loops.sh
	@$(MAKE) -j$(CORE_COSIM_JOBS) --no-print-directory $(SIM_DIR)/core_N4_I8192/core_tb
	@BUILD=$(BUILD) sh tests/corecosim/longprog.sh 4 8192

test-core-cosim-full: core-cosim-tools
	$(call core_cosim,,$(CORE_COSIM_AXI_FULL))

test-core-cosim-fault: core-cosim-tools
	@$(MAKE) -j$(CORE_COSIM_JOBS) --no-print-directory $(call core_tb,4) $(call core_tb,4,512)
	@sh tests/corecosim/fault.sh 4
