# SPDX-License-Identifier: Apache-2.0
# Co-simulation of the generated core (sim/core_tb.cpp, docs/isa.md "Co-simulation").
#   make build/sim/tpu-core-cmp        compares two core traces (model vs RTL)
#   make build/sim/core_N<N>/core_tb   gen --mxu N into build/sim/core_N<N>/rtl, verilate
#                                      tpu_core, link with the C model library
#   make build/sim/core_N<N>_A<B>/core_tb   the same with gen --axi-data-bits B (for widths
#                                      other than N's default: $(call core_tb,N,B)); more
#                                      parts _I<imem-insns> _U<ub-kib> _Q<acc-kib> _W<wmem-kib>
#                                      give a core of those sizes (tpu-infer --rtl)
#   make core-run                      the mlp program on the MXU=$(MXU) core: RTL vs model,
#                                      PASS/FAIL with cycles and utilisation
# One verilated model per N, shared by every test at that N; ccache (OBJCACHE) makes
# rebuilding an unchanged model cheap.

CORE_CMP  := $(SIM_DIR)/tpu-core-cmp
TPU_RUN   ?= $(BUILD)/tools/tpu-run
TPU_MKPROG ?= $(BUILD)/tools/tpu-mkprog
core_tb = $(SIM_DIR)/core_N$(1)$(if $(2),_A$(2))/core_tb

$(CORE_CMP): sim/core_cmp.c $(CMODEL_LIB) $(wildcard cmodel/include/tpu/*.h)
	@mkdir -p $(@D)
	$(CC) $(SIM_CFLAGS) -o $@ sim/core_cmp.c $(CMODEL_LIB) -lm

# As for the MXU: -fno-gate so the array's rows and the VPU's lanes share their verilated
# code; --trace-depth 3: +trace records the core's own signals and its units' ports, not the
# PEs' and lanes' internals (their trace code is per instance).
CORE_VFLAGS := --cc --exe --trace-fst --trace-depth 3 --assert --x-assign unique \
               --x-initial unique --top-module tpu_core -O3 -fno-gate --unroll-count 1024

# gen into rtl/ of the model's folder; the stamp changes only when the generated files do.
# The folder's key is N, or N_A<B> for gen --mxu N --axi-data-bits B.
$(SIM_DIR)/core_N%/rtl.stamp: $(GEN)
	@mkdir -p $(SIM_DIR)/core_N$*
	@d=$(SIM_DIR)/core_N$*; rm -rf $$d/rtl.old; args=""; \
	for seg in $$(echo "N$*" | tr '_' ' '); do v=$${seg#?}; case $$seg in \
	N*) args="--mxu $$v" ;; A*) args="$$args --axi-data-bits $$v" ;; \
	I*) args="$$args --imem-insns $$v" ;; U*) args="$$args --ub-kib $$v" ;; \
	Q*) args="$$args --acc-kib $$v" ;; W*) args="$$args --wmem-kib $$v" ;; \
	*) echo "core key N$*: unknown part '$$seg' (A I U Q W)"; exit 1 ;; esac; done; \
	if [ -d $$d/rtl ]; then mv $$d/rtl $$d/rtl.old; fi; \
	if ! $(GEN) $$args -o $$d/rtl; then \
		rm -rf $$d/rtl; [ -d $$d/rtl.old ] && mv $$d/rtl.old $$d/rtl; exit 1; \
	fi; \
	if [ -d $$d/rtl.old ] && [ -f $@ ] && diff -r -q $$d/rtl $$d/rtl.old >/dev/null; then \
		rm -rf $$d/rtl; mv $$d/rtl.old $$d/rtl; \
	else \
		rm -rf $$d/rtl.old; touch $@; echo "gen $$args -o $$d/rtl"; \
	fi

# Verilate when the generated RTL or these rules change.
$(SIM_DIR)/core_N%/obj/Vtpu_core.mk: $(SIM_DIR)/core_N%/rtl.stamp sim/core.mk
	@d=$(SIM_DIR)/core_N$*; echo "verilating the N=$* core"; start=$$(date +%s); \
	test -f $$d/rtl/tpu_core.f || { echo "gen wrote no tpu_core.f for N=$* (the core needs --vpu-lanes N)"; exit 1; }; \
	$(VERILATOR) $(CORE_VFLAGS) --Mdir $$d/obj -o $(abspath $(SIM_DIR)/core_N$*/core_tb) \
		-F $$d/rtl/tpu_core.f $$d/rtl/tpu_core.vlt \
		-CFLAGS "$(SIM_CXXFLAGS) -I$(abspath $(SIM_DIR)/core_N$*/rtl)" \
		-LDFLAGS "$(abspath $(CMODEL_LIB)) -lm" \
		$(abspath sim/core_tb.cpp) >$$d/verilator.log 2>&1 || { cat $$d/verilator.log; exit 1; }; \
	echo "verilated the N=$* core in $$(( $$(date +%s) - start )) s"

# Compile and link (Verilator's makefile tracks the harness's sources); the binary is removed
# first so that a changed library is relinked.
$(SIM_DIR)/core_N%/core_tb: $(SIM_DIR)/core_N%/obj/Vtpu_core.mk sim/core_tb.cpp sim/vl_ports.h \
                            sim/axi_host_mem.h sim/tb_context.h sim/tb_errors.h sim/tb_options.h \
                            sim/tb_rng.h sim/tb_trace.h \
                            $(CMODEL_LIB) $(wildcard cmodel/include/tpu/*.h)
	@d=$(SIM_DIR)/core_N$*; start=$$(date +%s); rm -f $@; \
	$(MAKE) --no-print-directory -s -C $$d/obj -f Vtpu_core.mk OBJCACHE="$(OBJCACHE)" \
		OPT_FAST="$(SIM_OPT_FAST)" OPT_SLOW="$(SIM_OPT_SLOW)" OPT_GLOBAL="$(SIM_OPT_GLOBAL)" \
		>$$d/build.log 2>&1 || { cat $$d/build.log; exit 1; }; \
	echo "built $@ in $$(( $$(date +%s) - start )) s"

.PRECIOUS: $(SIM_DIR)/core_N%/rtl.stamp $(SIM_DIR)/core_N%/obj/Vtpu_core.mk $(SIM_DIR)/core_N%/core_tb

# ---- make core-run: the mlp program on the default core, RTL against the model ----------
.PHONY: core-run
core-run: deps
	@$(MAKE) --no-print-directory -s $(call core_tb,$(MXU)) $(CORE_CMP) $(TPU_RUN) $(TPU_MKPROG)
	@echo "co-simulating the mlp program (tpu-mkprog mlp) on the $(MXU)x$(MXU) core against the model"
	@CORE_TB_ARGS="$(RUN_ARGS)" sh sim/core_case.sh $(MXU) $(SIM_DIR)/core_run 0 mlp --seed 1
