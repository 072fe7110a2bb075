# SPDX-License-Identifier: Apache-2.0
# Co-simulation of the generated VPU against the C model (sim/vpu_tb.cpp, docs/vpu.md "RTL").
#   make build/sim/vpu_L<L>/vpu_tb   gen --mxu L --vpu-lanes L into build/sim/vpu_L<L>/rtl,
#                                    verilate tpu_vpu, link with the C model
#   make bench-vpu-128               L = 128 co-simulation, for the benchmark (not in make test)
#   make bench-vpu-speed             the default L's exhaustive run: co-simulation vectors/s
# One verilated model per L, shared by every test at that L; ccache (OBJCACHE) makes rebuilding
# an unchanged model cheap.

vpu_tb = $(SIM_DIR)/vpu_L$(1)/vpu_tb

# The lanes share one copy of the verilated lane code (tpu_vpu.vlt; -fno-gate as for the MXU).
# --trace-depth 2: +trace records tpu_vpu's own signals (ports, the lanes' fp32 results, the
# tree's leaves, the accumulator), not the lanes' and units' internals, whose trace code is
# per instance (at L = 8: 2.2 MB of C++ -> 0.3 MB).
VPU_VFLAGS := --cc --exe --trace-fst --trace-depth 2 --assert --x-assign unique \
              --x-initial unique --top-module tpu_vpu -O3 -fno-gate --unroll-count 1024

$(SIM_DIR)/vpu_L%/rtl.stamp: $(GEN)
	@mkdir -p $(SIM_DIR)/vpu_L$*
	@d=$(SIM_DIR)/vpu_L$*; rm -rf $$d/rtl.old; \
	if [ -d $$d/rtl ]; then mv $$d/rtl $$d/rtl.old; fi; \
	if ! $(GEN) --mxu $* --vpu-lanes $* -o $$d/rtl; then \
		rm -rf $$d/rtl; [ -d $$d/rtl.old ] && mv $$d/rtl.old $$d/rtl; exit 1; \
	fi; \
	if [ -d $$d/rtl.old ] && diff -r -q $$d/rtl $$d/rtl.old >/dev/null; then \
		rm -rf $$d/rtl; mv $$d/rtl.old $$d/rtl; \
	else \
		rm -rf $$d/rtl.old; touch $@; echo "gen --mxu $* --vpu-lanes $* -o $$d/rtl"; \
	fi

# Verilate when the generated RTL or these rules change; relink (and
# recompile what changed) when the harness or the C model library does.
$(SIM_DIR)/vpu_L%/obj/Vtpu_vpu.mk: $(SIM_DIR)/vpu_L%/rtl.stamp sim/vpu.mk
	@d=$(SIM_DIR)/vpu_L$*; \
	$(VERILATOR) $(VPU_VFLAGS) --Mdir $$d/obj -o $(abspath $(SIM_DIR)/vpu_L$*/vpu_tb) \
		-F $$d/rtl/tpu_vpu.f $$d/rtl/tpu_vpu.vlt \
		-CFLAGS "$(SIM_CXXFLAGS) -I$(abspath $(SIM_DIR)/vpu_L$*/rtl)" \
		-LDFLAGS "$(abspath $(CMODEL_LIB))" \
		$(abspath sim/vpu_tb.cpp) >$$d/verilator.log 2>&1 || { cat $$d/verilator.log; exit 1; }

$(SIM_DIR)/vpu_L%/vpu_tb: $(SIM_DIR)/vpu_L%/obj/Vtpu_vpu.mk sim/vpu_tb.cpp sim/vl_ports.h $(CMODEL_LIB) \
                          sim/tb_context.h sim/tb_errors.h sim/tb_options.h sim/tb_rng.h \
                          $(wildcard cmodel/include/tpu/*.h)
	@d=$(SIM_DIR)/vpu_L$*; start=$$(date +%s); rm -f $@; \
	$(MAKE) --no-print-directory -s -C $$d/obj -f Vtpu_vpu.mk OBJCACHE="$(OBJCACHE)" \
		OPT_FAST="$(SIM_OPT_FAST)" OPT_SLOW="$(SIM_OPT_SLOW)" OPT_GLOBAL="$(SIM_OPT_GLOBAL)" \
		>$$d/build.log 2>&1 || { cat $$d/build.log; exit 1; }; \
	echo "built $@ in $$(( $$(date +%s) - start )) s"

.PRECIOUS: $(SIM_DIR)/vpu_L%/rtl.stamp $(SIM_DIR)/vpu_L%/obj/Vtpu_vpu.mk $(SIM_DIR)/vpu_L%/vpu_tb

# ---- L = 128, for the benchmark (not in make test) -------------------------------------------
# Both print the co-simulation speed (vectors/s, elements/s) on their PASS/FAIL line.
.PHONY: bench-vpu-128 bench-vpu-speed
bench-vpu-128: $(call vpu_tb,128)
	$(call vpu_tb,128) --mode exhaustive,all --count 2000 --gaps 0 \
		--rtl-trace $(SIM_DIR)/vpu128_rtl.trace --model-trace $(SIM_DIR)/vpu128_model.trace

# make bench (bench/run.sh runs this target when it exists): the co-simulation speed of the
# default configuration's VPU (L = MXU = $(MXU)): the exhaustive unary run, no idle cycles.
bench-vpu-speed: $(call vpu_tb,$(MXU))
	@$(call vpu_tb,$(MXU)) --mode exhaustive --gaps 0 \
		--rtl-trace $(SIM_DIR)/vpubench_rtl.trace --model-trace $(SIM_DIR)/vpubench_model.trace \
		| grep -E '^(PASS|FAIL)'
