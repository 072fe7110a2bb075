# SPDX-License-Identifier: Apache-2.0
# Co-simulation of the generated MXU against the C model (sim/mxu_tb, docs/mxu.md).
#   test-cosim        (make test)      N = 1, 3, 4, 8, 16: every distribution, several tiles,
#                                      ragged M, K and N', the edges distribution
#   test-cosim-fault  (make test)      injected faults are caught and reported precisely;
#                                      tpu-trace-cmp on hand-made trace pairs
#   test-cosim-stages (make test)      the pipelined PEs (gen --pe-stages 2, 3): the quick
#                                      cases at N = 1, 3, 4, 8 against the model's schedule
#                                      with that depth's L and B, traces bit for bit
#   test-cosim-gating (make test)      the PEs' clock enables are real: Icarus, X on every
#                                      data input in idle cycles, results unchanged and no X
#                                      on out_data_o after the first (gating.sh, ~2 s)
#   test-cosim-full   (make test-full) N = 2, 5, 32 and more cases at 4, 8, 16; the full
#                                      cases with the pipelined PEs at N = 4, 5
# One verilated model per N (build/sim/mxu_N<N>) or per N and depth S (mxu_N<N>_S<S>),
# built once and shared by all the cases, one at a time with make -j (all the machine's cores:
# the model's C++, the harness and Verilator's runtime compile side by side).

COSIM_QUICK_N := 1 3 4 8 16
COSIM_FULL_N  := 2 5 4 8 16 32
# N_S pairs (cosim.sh's third argument is S)
COSIM_STAGES      := 1_S2 4_S2 8_S2 1_S3 3_S3 4_S3 8_S3
COSIM_STAGES_FULL := 5_S2 4_S2 5_S3 4_S3 16_S3
COSIM_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

TEST_SUITES += test-cosim test-cosim-stages test-cosim-fault test-cosim-gating
FULL_SUITES += test-cosim-full test-cosim-stages-full

.PHONY: test-cosim test-cosim-stages test-cosim-fault test-cosim-gating test-cosim-full \
        test-cosim-stages-full

# The models are built one at a time (a Verilator build uses the whole machine), then run.
test-cosim: $(TRACE_CMP)
	@for n in $(COSIM_QUICK_N); do \
		$(MAKE) -j$(COSIM_JOBS) --no-print-directory $(SIM_DIR)/mxu_N$$n/mxu_tb || exit 1; \
	done
	@st=0; for n in $(COSIM_QUICK_N); do sh tests/cosim/cosim.sh quick $$n || st=1; done; exit $$st

# (The model is built by a sub-make, as above: a prerequisite here would be looked up in
# make's directory cache, stale once test-cosim's sub-makes have built it.)
test-cosim-fault: $(TRACE_CMP)
	@$(MAKE) -j$(COSIM_JOBS) --no-print-directory $(call mxu_tb,4)
	@sh tests/cosim/fault.sh

test-cosim-full: $(TRACE_CMP)
	@for n in $(COSIM_FULL_N); do \
		$(MAKE) -j$(COSIM_JOBS) --no-print-directory $(SIM_DIR)/mxu_N$$n/mxu_tb || exit 1; \
	done
	@st=0; for n in $(COSIM_FULL_N); do sh tests/cosim/cosim.sh full $$n || st=1; done; exit $$st

# $(1): set (quick | full), $(2): N_S pairs
cosim_stages = \
	@for c in $(2); do \
		$(MAKE) -j$(COSIM_JOBS) --no-print-directory $(SIM_DIR)/mxu_N$$c/mxu_tb || exit 1; \
	done; \
	st=0; for c in $(2); do \
		sh tests/cosim/cosim.sh $(1) $${c%_S*} $${c\#*_S} || st=1; \
	done; exit $$st

test-cosim-stages: $(TRACE_CMP)
	$(call cosim_stages,quick,$(COSIM_STAGES))

test-cosim-stages-full: $(TRACE_CMP)
	$(call cosim_stages,full,$(COSIM_STAGES_FULL))

test-cosim-gating: $(GEN)
	@sh tests/cosim/gating.sh $(GEN)
