# SPDX-License-Identifier: Apache-2.0
# make bench-core: the core's MXU utilisation on matmuls with M >= 8N and K, N' >= 4N
# (bench/core_bench.sh; figures in bench/RESULTS.md "Core (issue 4)").
# The matmul phase needs every weight tile resident in WMEM at once, so the RTL is the N=16
# core generated with a 32 KiB WMEM (1024 rows = 64 tiles), verilated with sim/core.mk's flags
# into its own folder (the default build/sim/core_N16 is left alone).
BENCH_CORE_N    := 16
BENCH_CORE_WKIB := 32
BENCH_CORE_DIR  := $(BENCH_DIR)/core_N$(BENCH_CORE_N)_w$(BENCH_CORE_WKIB)

$(BENCH_CORE_DIR)/rtl.stamp: $(GEN) bench/core.mk
	@rm -rf $(BENCH_CORE_DIR)/rtl; mkdir -p $(BENCH_CORE_DIR)
	$(GEN) --mxu $(BENCH_CORE_N) --wmem-kib $(BENCH_CORE_WKIB) -o $(BENCH_CORE_DIR)/rtl >/dev/null
	@touch $@

$(BENCH_CORE_DIR)/obj/Vtpu_core.mk: $(BENCH_CORE_DIR)/rtl.stamp sim/core.mk
	@d=$(BENCH_CORE_DIR); echo "verilating the N=$(BENCH_CORE_N) core with a $(BENCH_CORE_WKIB) KiB WMEM"; \
	$(VERILATOR) $(CORE_VFLAGS) --Mdir $$d/obj -o $(abspath $(BENCH_CORE_DIR)/core_tb) \
		-F $$d/rtl/tpu_core.f $$d/rtl/tpu_core.vlt \
		-CFLAGS "$(SIM_CXXFLAGS) -I$(abspath $(BENCH_CORE_DIR)/rtl)" \
		-LDFLAGS "$(abspath $(CMODEL_LIB)) -lm" \
		$(abspath sim/core_tb.cpp) >$$d/verilator.log 2>&1 || { cat $$d/verilator.log; exit 1; }

$(BENCH_CORE_DIR)/core_tb: $(BENCH_CORE_DIR)/obj/Vtpu_core.mk sim/core_tb.cpp sim/vl_ports.h \
                           sim/axi_host_mem.h sim/tb_context.h sim/tb_errors.h sim/tb_options.h \
                           sim/tb_rng.h $(CMODEL_LIB) $(wildcard cmodel/include/tpu/*.h)
	@d=$(BENCH_CORE_DIR); rm -f $@; \
	$(MAKE) --no-print-directory -s -C $$d/obj -f Vtpu_core.mk OBJCACHE="$(OBJCACHE)" \
		OPT_FAST="$(SIM_OPT_FAST)" OPT_SLOW="$(SIM_OPT_SLOW)" OPT_GLOBAL="$(SIM_OPT_GLOBAL)" \
		>$$d/build.log 2>&1 || { cat $$d/build.log; exit 1; }

.PRECIOUS: $(BENCH_CORE_DIR)/rtl.stamp $(BENCH_CORE_DIR)/obj/Vtpu_core.mk $(BENCH_CORE_DIR)/core_tb

.PHONY: bench-core
bench-core: deps
	@$(MAKE) --no-print-directory -s $(BENCH_CORE_DIR)/core_tb $(CORE_CMP) $(TPU_RUN) $(TPU_MKPROG)
	@CORE_TB=$(BENCH_CORE_DIR)/core_tb WMEM_ROWS=$$(( $(BENCH_CORE_WKIB) * 1024 / (2 * $(BENCH_CORE_N)) )) \
		sh bench/core_bench.sh $(BENCH_DIR)/core
