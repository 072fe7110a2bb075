# SPDX-License-Identifier: Apache-2.0
# Co-simulation: the trace compare tool, test matrices, and the Verilator harness of the MXU.
#   make build/sim/tpu-trace-cmp      the trace compare tool (docs/trace.md)
#   make build/sim/mxu_N<N>/mxu_tb    gen --mxu N into build/sim/mxu_N<N>/rtl, verilate, link
#   make build/sim/mxu_N<N>_S<S>/mxu_tb   the same with gen --pe-stages S (S = 2, 3)
#   make run                          the README's main command: co-simulate the default MXU, then the core
#   make cosim-128                    N = 128 co-simulation of a modest matmul (benchmark)
# One verilated model per (N, S), shared by every test at that configuration; ccache
# (OBJCACHE, exported by the top Makefile) makes rebuilding an unchanged model cheap.

SIM_DIR      := $(BUILD)/sim
GEN          ?= $(BUILD)/gen/gen
SIM_CFLAGS   := $(CFLAGS_COMMON) $(CMODEL_INC) -Isim
SIM_HDRS     := sim/matgen.h sim/trace_cmp.h sim/vl_ports.h sim/tb_context.h sim/tb_errors.h sim/tb_trace.h \
                sim/tb_options.h sim/tb_rng.h $(wildcard cmodel/include/tpu/*.h)
SIM_LIB      := $(SIM_DIR)/libtpusim.a
SIM_LIB_OBJS := $(SIM_DIR)/obj/trace_cmp_lib.o
TRACE_CMP    := $(SIM_DIR)/tpu-trace-cmp

# The harness binary for array size N ("4"), or N with PE depth S ("4_S3"; no _S: S = 1).
mxu_tb = $(SIM_DIR)/mxu_N$(1)/mxu_tb
# The N and the S of such a name.
sim_n = $(firstword $(subst _S, ,$(1)))
sim_s = $(or $(word 2,$(subst _S, ,$(1))),1)
# gen's arguments for such a name (S = 1 is gen's default and is not spelt out).
sim_gen_args = --mxu $(call sim_n,$(1))$(if $(filter-out 1,$(call sim_s,$(1))), --pe-stages $(call sim_s,$(1)))

$(SIM_DIR)/obj/%.o: sim/%.c $(SIM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CFLAGS) -c $< -o $@

$(SIM_LIB): $(SIM_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(TRACE_CMP): $(SIM_DIR)/obj/trace_cmp.o $(SIM_LIB) $(CMODEL_LIB)
	$(CC) $(SIM_CFLAGS) -o $@ $^ -lm

# ---- Verilator ------------------------------------------------------------------------------
# --x-assign/--x-initial unique with randReset(2) in the harness: X values are random and
# seeded (+verilator+seed+N), so a design that depends on uninitialised state fails.
# -fno-gate: without it Verilator 5 optimises each row instance on its own and emits one copy
# of the row code per row (N^2 code); with it the rows share the un-inlined tpu_mxu_row class
# (measured at N = 16 with sim/mxu_trace.vlt: 16.8 MB -> 7.3 MB of C++, 61 s -> 54 s of
# compile CPU, simulation speed within noise; the gap grows with N; see sim/README.md).
# The sim/*.vlt files limit what +trace records (the trace code is per traced signal).
SIM_VFLAGS := --cc --exe --trace-fst --assert --x-assign unique --x-initial unique \
              --top-module tpu_mxu -O3 -fno-gate --unroll-count 1024
sim_trace_vlt = $(if $(shell [ $(call sim_n,$(1)) -gt 32 ] && echo large),sim/mxu_trace_large.vlt,sim/mxu_trace.vlt)
# C++ optimisation of the verilated model: -O1 compiles ~15% faster than -O2 for ~15% fewer
# cycles/s (N = 16); builds dominate the test time, so -O1. Override for long runs.
SIM_OPT_FAST   ?= -O1
SIM_OPT_SLOW   ?= -O1
SIM_OPT_GLOBAL ?= -O1
SIM_CXXFLAGS := -std=c++14 -I$(abspath cmodel/include) -I$(abspath sim) -Wno-unused-parameter

# gen into rtl/ of the model's folder; rtl.stamp changes only when the MXU's generated files
# do (those tpu_mxu.f lists, its .vlt and tpu_params.h), so a rebuilt gen whose MXU output is
# unchanged (e.g. only the VPU changed) does not re-verilate.
$(SIM_DIR)/mxu_N%/rtl.stamp: $(GEN)
	@mkdir -p $(SIM_DIR)/mxu_N$*
	@d=$(SIM_DIR)/mxu_N$*; rm -rf $$d/rtl.old; \
	if [ -d $$d/rtl ]; then mv $$d/rtl $$d/rtl.old; fi; \
	if ! $(GEN) $(call sim_gen_args,$*) -o $$d/rtl; then \
		rm -rf $$d/rtl; [ -d $$d/rtl.old ] && mv $$d/rtl.old $$d/rtl; exit 1; \
	fi; \
	same=0; if [ -d $$d/rtl.old ]; then same=1; \
		for f in $$(grep -v '^//' $$d/rtl/tpu_mxu.f) tpu_mxu.f tpu_mxu.vlt tpu_params.h; do \
			cmp -s $$d/rtl/$$f $$d/rtl.old/$$f || same=0; \
		done; \
	fi; \
	if [ $$same = 1 ]; then \
		rm -rf $$d/rtl; mv $$d/rtl.old $$d/rtl; \
	else \
		rm -rf $$d/rtl.old; touch $@; \
		echo "gen $(call sim_gen_args,$*) -o $$d/rtl"; \
	fi

# The Verilator command for array size N. It is recorded in verilate.cmd, rewritten only when
# it changes, so a change of flags re-verilates and nothing else does.
sim_vl_cmd = $(VERILATOR) $(SIM_VFLAGS) --Mdir $(SIM_DIR)/mxu_N$(1)/obj \
	-o $(abspath $(SIM_DIR)/mxu_N$(1)/mxu_tb) \
	-F $(SIM_DIR)/mxu_N$(1)/rtl/tpu_mxu.f $(SIM_DIR)/mxu_N$(1)/rtl/tpu_mxu.vlt \
	$(call sim_trace_vlt,$(1)) \
	-CFLAGS "$(SIM_CXXFLAGS) -I$(abspath $(SIM_DIR)/mxu_N$(1)/rtl)" \
	-LDFLAGS "$(abspath $(SIM_LIB)) $(abspath $(CMODEL_LIB))" \
	$(abspath sim/mxu_tb.cpp)

.PHONY: sim-force
sim-force:

$(SIM_DIR)/mxu_N%/verilate.cmd: sim-force
	@mkdir -p $(@D)
	@echo '$(call sim_vl_cmd,$*)' >$@.new; \
	if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi

# Verilate (the RTL, the flags or the trace scope changed).
$(SIM_DIR)/mxu_N%/obj/Vtpu_mxu.mk: $(SIM_DIR)/mxu_N%/rtl.stamp $(SIM_DIR)/mxu_N%/verilate.cmd \
                                  sim/mxu_trace.vlt sim/mxu_trace_large.vlt
	@echo "verilating N=$*"; start=$$(date +%s); \
	sh $(SIM_DIR)/mxu_N$*/verilate.cmd && \
	echo "verilated N=$* in $$(( $$(date +%s) - start )) s"

# Compile and link with Verilator's makefile (it tracks the harness's sources and headers);
# the binary is removed first so that a changed library is relinked.
$(SIM_DIR)/mxu_N%/mxu_tb: $(SIM_DIR)/mxu_N%/obj/Vtpu_mxu.mk sim/mxu_tb.cpp $(SIM_HDRS) \
                          $(CMODEL_LIB) $(SIM_LIB)
	@rm -f $@; start=$$(date +%s); \
	$(MAKE) --no-print-directory -s -C $(SIM_DIR)/mxu_N$*/obj -f Vtpu_mxu.mk \
		OBJCACHE="$(OBJCACHE)" OPT_FAST="$(SIM_OPT_FAST)" OPT_SLOW="$(SIM_OPT_SLOW)" \
		OPT_GLOBAL="$(SIM_OPT_GLOBAL)" && \
	echo "built $@ (C++) in $$(( $$(date +%s) - start )) s"

# Keep the generated sources and stamps between builds.
.PRECIOUS: $(SIM_DIR)/mxu_N%/rtl.stamp $(SIM_DIR)/mxu_N%/verilate.cmd \
           $(SIM_DIR)/mxu_N%/obj/Vtpu_mxu.mk $(SIM_DIR)/mxu_N%/mxu_tb

.PHONY: sim-tools cosim-128
sim-tools: $(TRACE_CMP) $(SIM_LIB)

# ---- make run: the default MXU on a meaningful matmul (M = 8N, K = N' = 4N), then the default
# core running a whole program (make core-run, sim/core.mk), then the default board of 8 cores
# running a data-parallel training step (make board-run, sim/board.mk) -----------------------
run: deps
	@$(MAKE) --no-print-directory $(call mxu_tb,$(MXU)) $(TRACE_CMP)
	@echo "co-simulating: C = A x W, A $$((8 * $(MXU))) x $$((4 * $(MXU))), W $$((4 * $(MXU))) x $$((4 * $(MXU))), bf16 'uniform', on the $(MXU)x$(MXU) MXU"
	@$(call mxu_tb,$(MXU)) --m $$((8 * $(MXU))) --k $$((4 * $(MXU))) --n $$((4 * $(MXU))) \
		--dist uniform --seed 1 --rtl-trace $(SIM_DIR)/run_rtl.trace \
		--model-trace $(SIM_DIR)/run_model.trace --fst $(SIM_DIR)/run.fst $(RUN_ARGS)
	@echo
	@$(MAKE) --no-print-directory core-run
	@echo
	@$(MAKE) --no-print-directory board-run

# ---- N = 128, for the benchmark (not in make test) -------------------------------------------
cosim-128: $(call mxu_tb,128)
	$(call mxu_tb,128) --m 512 --k 256 --n 256 --dist uniform --seed 1 \
		--rtl-trace $(SIM_DIR)/cosim128_rtl.trace --model-trace $(SIM_DIR)/cosim128_model.trace
# The VPU's co-simulation rules (its own fragment).
include sim/vpu.mk
# The core's co-simulation rules (its own fragment).
include sim/core.mk
include sim/board.mk
