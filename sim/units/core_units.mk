# SPDX-License-Identifier: Apache-2.0
# Unit harnesses for the core's DMA and register block (docs/isa.md "Host interface"): each
# module is verilated standalone from what gen writes now (build/core-units/rtl), with its
# parameters set by -G (the modules are parameterised; the text gen writes does not depend on
# N), driven by sim/units/tb_core_*.cpp. Included by tests/coreunits/suite.mk.

CORE_UNITS_DIR   := $(BUILD)/core-units
CORE_UNITS_RTL   := $(CORE_UNITS_DIR)/rtl
CORE_UNITS_SEED  ?= 1
CORE_UNITS_VFLAGS := --cc --exe --build -j 2 -O3 -Wall --x-assign unique --x-initial unique
CORE_UNITS_CFLAGS := -O1 -I$(abspath sim/units) -I$(abspath sim)
# DMA sizes: N = 1 (a row is at most one beat), 3 (rows of 1..2 beats), 36 (ACC rows of up
# to 19 beats: split at 16)
CORE_DMA_NS := 1 3 36
# register blocks: N:UbRows:AccRows:WmemRows:ImemInsns (a small IMEM: writes past it; an IMEM
# past what a 16-bit address reaches; the largest IMEM gen allows)
CORE_REGS_CFGS := 3:100:50:24:20 4:64:32:16:5000 2:16:16:16:32768

$(CORE_UNITS_RTL)/.stamp: $(GEN)
	rm -rf $(CORE_UNITS_RTL) && mkdir -p $(CORE_UNITS_DIR)
	$(GEN) --mxu 4 --cores 1 -o $(CORE_UNITS_RTL)
	@touch $@

# build/core-units/dma-n<N>/tb
$(CORE_UNITS_DIR)/dma-n%/tb: sim/units/tb_core_dma.cpp sim/units/units_common.h sim/vl_ports.h $(CORE_UNITS_RTL)/.stamp
	@mkdir -p $(CORE_UNITS_DIR)/dma-n$*
	$(VERILATOR) $(CORE_UNITS_VFLAGS) --top-module tpu_core_dma -GN=$* \
	  --Mdir $(CORE_UNITS_DIR)/dma-n$*/obj -o ../tb -CFLAGS "$(CORE_UNITS_CFLAGS) -DDMA_N=$*" \
	  $(CORE_UNITS_RTL)/tpu_core_dma.sv $(abspath sim/units/tb_core_dma.cpp) \
	  >$(CORE_UNITS_DIR)/dma-n$*.build.log 2>&1 || { cat $(CORE_UNITS_DIR)/dma-n$*.build.log; exit 1; }

# build/core-units/regs-<N>_<UB>_<ACC>_<WMEM>_<IMEM>/tb
core_regs_words = $(subst _, ,$1)
$(CORE_UNITS_DIR)/regs-%/tb: sim/units/tb_core_regs.cpp sim/units/units_common.h sim/vl_ports.h $(CORE_UNITS_RTL)/.stamp
	$(eval w := $(call core_regs_words,$*))
	@mkdir -p $(CORE_UNITS_DIR)/regs-$*
	$(VERILATOR) $(CORE_UNITS_VFLAGS) --top-module tpu_core_regs \
	  -GN=$(word 1,$(w)) -GUbRows=$(word 2,$(w)) -GAccRows=$(word 3,$(w)) \
	  -GWmemRows=$(word 4,$(w)) -GImemInsns=$(word 5,$(w)) \
	  --Mdir $(CORE_UNITS_DIR)/regs-$*/obj -o ../tb \
	  -CFLAGS "$(CORE_UNITS_CFLAGS) -DREGS_N=$(word 1,$(w)) -DREGS_UB=$(word 2,$(w)) -DREGS_ACC=$(word 3,$(w)) -DREGS_WM=$(word 4,$(w)) -DREGS_IM=$(word 5,$(w))" \
	  $(CORE_UNITS_RTL)/tpu_core_regs.sv $(abspath sim/units/tb_core_regs.cpp) \
	  >$(CORE_UNITS_DIR)/regs-$*.build.log 2>&1 || { cat $(CORE_UNITS_DIR)/regs-$*.build.log; exit 1; }

# build/core-units/sram-<Width>x<Depth>/tb (a 1-bit row; a wide odd row at a depth that is
# not a power of two)
CORE_SRAM_CFGS := 1x8 96x37
$(CORE_UNITS_DIR)/sram-%/tb: sim/units/tb_core_sram.cpp sim/units/units_common.h sim/vl_ports.h $(CORE_UNITS_RTL)/.stamp
	$(eval w := $(subst x, ,$*))
	@mkdir -p $(CORE_UNITS_DIR)/sram-$*
	$(VERILATOR) $(CORE_UNITS_VFLAGS) --top-module tpu_sram -GWidth=$(word 1,$(w)) -GDepth=$(word 2,$(w)) \
	  --Mdir $(CORE_UNITS_DIR)/sram-$*/obj -o ../tb \
	  -CFLAGS "$(CORE_UNITS_CFLAGS) -DSRAM_W=$(word 1,$(w)) -DSRAM_D=$(word 2,$(w))" \
	  $(CORE_UNITS_RTL)/tpu_sram.sv $(abspath sim/units/tb_core_sram.cpp) \
	  >$(CORE_UNITS_DIR)/sram-$*.build.log 2>&1 || { cat $(CORE_UNITS_DIR)/sram-$*.build.log; exit 1; }

CORE_UNITS_TBS := $(foreach n,$(CORE_DMA_NS),$(CORE_UNITS_DIR)/dma-n$(n)/tb) \
                  $(foreach c,$(CORE_REGS_CFGS),$(CORE_UNITS_DIR)/regs-$(subst :,_,$(c))/tb) \
                  $(foreach c,$(CORE_SRAM_CFGS),$(CORE_UNITS_DIR)/sram-$(c)/tb)

.PHONY: core-units test-core-units test-sram-bram
# test-core-units: lint of the three modules, then the harnesses
core-units: $(CORE_UNITS_TBS)

# 1000 random commands per DMA size (a quarter with the ideal slave: timing checked),
# 200000 cycles of AXI-Lite traffic per register block
test-core-units: $(CORE_UNITS_TBS)
	@set -e; cd $(CORE_UNITS_RTL); for n in 1 3 4 16 256; do \
	  for m in tpu_core_dma tpu_core_regs; do \
	    $(VERILATOR) --lint-only -Wall -GN=$$n $$m.sv; \
	    iverilog -g2012 -P$$m.N=$$n -o /dev/null $$m.sv >$(abspath $(CORE_UNITS_DIR))/iv.log 2>&1; \
	    if [ -s $(abspath $(CORE_UNITS_DIR))/iv.log ]; then cat $(abspath $(CORE_UNITS_DIR))/iv.log; exit 1; fi; \
	  done; done; \
	$(VERILATOR) --lint-only -Wall tpu_sram.sv && iverilog -g2012 -o /dev/null tpu_sram.sv; \
	echo "tpu_core_dma, tpu_core_regs (N = 1, 3, 4, 16, 256), tpu_sram: verilator -Wall and iverilog -g2012 clean"
	@set -e; for n in $(CORE_DMA_NS); do $(CORE_UNITS_DIR)/dma-n$$n/tb --seed $(CORE_UNITS_SEED) --count 1000; done
	@set -e; for c in $(subst :,_,$(CORE_REGS_CFGS)); do $(CORE_UNITS_DIR)/regs-$$c/tb --seed $(CORE_UNITS_SEED) --count 200000; done
	@set -e; for c in $(CORE_SRAM_CFGS); do $(CORE_UNITS_DIR)/sram-$$c/tb --seed $(CORE_UNITS_SEED) --count 100000; done

# tpu_sram maps to block RAM only (Yosys synth_xilinx, ~12 s)
test-sram-bram: $(GEN)
	sh tests/coreunits/test_sram_bram.sh $(GEN)
