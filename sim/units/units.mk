# SPDX-License-Identifier: Apache-2.0
# Unit harnesses for the arithmetic modules: each is verilated standalone from what gen
# writes now (build/units/rtl), linked with the C model, and compares raw bits.
# Included by tests/gen/suite.mk.

UNITS_DIR  := $(BUILD)/units
UNITS_RTL  := $(UNITS_DIR)/rtl
UNITS_SEED ?= 1
# Verilator runs make inside its --Mdir; at most two jobs (a shared 2-core machine).
UNITS_VFLAGS := --cc --exe --build -j 2 -O3 -Wall --x-assign unique --x-initial unique

# The arithmetic modules do not depend on the configuration; any N gives the same text.
$(UNITS_RTL)/.stamp: $(GEN)
	rm -rf $(UNITS_RTL) && mkdir -p $(UNITS_DIR)
	$(GEN) --mxu 1 --cores 1 -o $(UNITS_RTL)
	@touch $@

# build/units/<unit>/tb: the harness for tpu_<unit>
$(UNITS_DIR)/%/tb: sim/units/tb_%.cpp sim/units/units_common.h $(UNITS_RTL)/.stamp $(CMODEL_LIB)
	$(VERILATOR) $(UNITS_VFLAGS) --top-module tpu_$* --Mdir $(UNITS_DIR)/$* -o tb \
	  -CFLAGS "-O2 -I$(abspath cmodel/include) -I$(abspath sim/units)" \
	  $(UNITS_RTL)/tpu_$*.sv $(abspath sim/units/tb_$*.cpp) $(abspath $(CMODEL_LIB)) \
	  >$(UNITS_DIR)/$*.build.log 2>&1 || { cat $(UNITS_DIR)/$*.build.log; exit 1; }

UNITS_TBS := $(UNITS_DIR)/fp32_add/tb $(UNITS_DIR)/bf16_mul/tb

.PHONY: units test-rtl-units test-rtl-units-exhaustive
units: $(UNITS_TBS)

# A few million random cases per unit plus the hand-picked edge cases.
test-rtl-units: $(UNITS_TBS)
	$(UNITS_DIR)/fp32_add/tb --seed $(UNITS_SEED) --count 4000000
	$(UNITS_DIR)/bf16_mul/tb --seed $(UNITS_SEED) --count 4000000

# All 2^32 bf16 x bf16 products through the verilated multiplier.
test-rtl-units-exhaustive: $(UNITS_DIR)/bf16_mul/tb
	$(UNITS_DIR)/bf16_mul/tb --exhaustive

# ---- tpu_mxu timing and numerics, one verilated model per N ----
# build/units/mxu-n<N>/tb: generated with gen --mxu <N>, driven by tb_mxu.cpp;
# build/units/mxu-n<N>_S<S>/tb: the same with --pe-stages S (sim_gen_args: sim/sim.mk).
$(UNITS_DIR)/mxu-n%/rtl/.stamp: $(GEN)
	rm -rf $(UNITS_DIR)/mxu-n$*/rtl && mkdir -p $(UNITS_DIR)/mxu-n$*
	$(GEN) $(call sim_gen_args,$*) -o $(UNITS_DIR)/mxu-n$*/rtl
	@touch $@

$(UNITS_DIR)/mxu-n%/tb: sim/units/tb_mxu.cpp sim/units/units_common.h $(UNITS_DIR)/mxu-n%/rtl/.stamp $(CMODEL_LIB)
	$(VERILATOR) $(UNITS_VFLAGS) --top-module tpu_mxu --Mdir $(UNITS_DIR)/mxu-n$*/obj -o ../tb \
	  -CFLAGS "-O2 -I$(abspath cmodel/include) -I$(abspath sim/units) -I$(abspath $(UNITS_DIR)/mxu-n$*/rtl)" \
	  $(UNITS_DIR)/mxu-n$*/rtl/tpu_mxu.vlt -F $(UNITS_DIR)/mxu-n$*/rtl/tpu_mxu.f \
	  $(abspath sim/units/tb_mxu.cpp) $(abspath $(CMODEL_LIB)) \
	  >$(UNITS_DIR)/mxu-n$*.build.log 2>&1 || { cat $(UNITS_DIR)/mxu-n$*.build.log; exit 1; }

# Sizes for make test: the corner N = 1 (L = 2, never busy), small odd and even sizes, and
# the default configuration; with the pipelined PEs (N_S<S>), small sizes at S = 2 and 3.
UNITS_MXU_NS := 1 2 3 5 8 16 2_S2 5_S2 1_S3 3_S3 5_S3

.PHONY: test-mxu-timing
test-mxu-timing: $(foreach n,$(UNITS_MXU_NS),$(UNITS_DIR)/mxu-n$(n)/tb)
	@set -e; for n in $(UNITS_MXU_NS); do $(UNITS_DIR)/mxu-n$$n/tb --seed $(UNITS_SEED) --count 20000; done
.PRECIOUS: $(UNITS_DIR)/mxu-n%/rtl/.stamp

# ---- tpu_noc: the board interconnect (docs/board.md) under random traffic ----
# build/units/noc-<R>x<S>/tb: gen --cores R*S --topology torus:RxS (ring: 1x<C> with
# --topology ring), tb_noc.cpp; test-noc-units (tests/gen/suite.mk registers it).
UNITS_NOC_SHAPES := ring4 torus2x2 torus2x3
# bench-noc-allreduce: a ring of 8 (C = 8, W = 64, D = 2), S = 1 KiB .. 1 MiB
$(UNITS_DIR)/noc-%/rtl/.stamp: $(GEN)
	rm -rf $(UNITS_DIR)/noc-$*/rtl && mkdir -p $(UNITS_DIR)/noc-$*
	s=$*; case $$s in \
	  ring*) a="--cores $${s#ring} --topology ring";; \
	  torus*) r=$${s#torus}; a="--cores $$(( $${r%x*} * $${r#*x} )) --topology torus:$$r";; \
	esac; $(GEN) --mxu 1 $$a -o $(UNITS_DIR)/noc-$*/rtl
	@touch $@

$(UNITS_DIR)/noc-%/tb: sim/units/tb_noc.cpp sim/units/units_common.h $(UNITS_DIR)/noc-%/rtl/.stamp $(CMODEL_LIB)
	$(VERILATOR) $(UNITS_VFLAGS) --top-module tpu_noc --Mdir $(UNITS_DIR)/noc-$*/obj -o ../tb \
	  -CFLAGS "-O2 -I$(abspath cmodel/include) -I$(abspath sim/units)" \
	  $(UNITS_DIR)/noc-$*/rtl/tpu_noc.vlt -F $(UNITS_DIR)/noc-$*/rtl/tpu_noc.f \
	  $(abspath sim/units/tb_noc.cpp) $(abspath $(CMODEL_LIB)) \
	  >$(UNITS_DIR)/noc-$*.build.log 2>&1 || { cat $(UNITS_DIR)/noc-$*.build.log; exit 1; }

# Lint of tpu_noc at the corners of the options: verilator -Wall and iverilog -g2012 must
# both be silent (no warning, no "sorry").
UNITS_NOC_LINT := "--cores 1" "--cores 2 --topology ring --link-latency 0 --link-bits 32" \
                  "--cores 5 --topology ring" "--cores 8" "--cores 6 --topology torus:3x2" \
                  "--cores 64 --topology torus --link-bits 1024 --link-latency 16" \
                  "--cores 64 --topology torus:1x64" "--cores 64 --topology torus:64x1"

.PHONY: test-noc-units test-noc-lint
test-noc-lint: $(GEN)
	@set -e; t=$$(mktemp -d); trap 'rm -rf "$$t"' EXIT; \
	for a in $(UNITS_NOC_LINT); do \
	  d=$$t/$$(echo "$$a" | tr -dc 'a-z0-9'); $(GEN) --mxu 1 $$a -o $$d; \
	  out=$$(cd $$d && $(VERILATOR) --lint-only -Wall --top-module tpu_noc tpu_noc.vlt -F tpu_noc.f 2>&1; \
	         iverilog -g2012 -o /dev/null -s tpu_noc -c tpu_noc.f 2>&1) || { echo "$$out"; exit 1; }; \
	  if [ -n "$$out" ]; then echo "$$out"; echo "FAIL tpu_noc lint: gen $$a"; exit 1; fi; \
	  echo "tpu_noc lint (verilator -Wall, iverilog -g2012) clean: gen $$a"; done

test-noc-units: test-noc-lint $(foreach s,$(UNITS_NOC_SHAPES),$(UNITS_DIR)/noc-$(s)/tb)
	@set -e; for s in $(UNITS_NOC_SHAPES); do \
	  case $$s in ring*) a="--rows 1 --cols $${s#ring}";; \
	  torus*) r=$${s#torus}; a="--rows $${r%x*} --cols $${r#*x}";; esac; \
	  $(UNITS_DIR)/noc-$$s/tb $$a --seed $(UNITS_SEED); done
.PRECIOUS: $(UNITS_DIR)/noc-%/rtl/.stamp

.PHONY: bench-noc-allreduce
bench-noc-allreduce: $(UNITS_DIR)/noc-ring8/tb
	$(UNITS_DIR)/noc-ring8/tb --rows 1 --cols 8 --allreduce
