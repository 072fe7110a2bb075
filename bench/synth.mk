# SPDX-License-Identifier: Apache-2.0
# FPGA estimates (docs/fpga.md). One Yosys/nextpnr job at a time: do not run these with -j.
#   make synth-est      Yosys synth_xilinx (xc7, xcup) of the PE (pe: --pe-stages 1; pe_s2,
#                       pe_s3: 2 and 3), the MXU at N = SYNTH_MXU_NS,
#                       the VPU lane: build/synth/<design>_<family>.json, a table on stdout
#                       and in build/synth/report.md, with the MXU extrapolated to large N
#                       and the largest N per FPGA, the core and the board (~70 min on
#                       2 cores; docs/fpga.md)
#   make synth-ice40    nextpnr-ice40 place and route of the 1x1 and 2x2 MXU on UP5K and
#                       HX8K inside a serialising wrapper (bench/synth/ice40_wrap.sv): Fmax
#                       in build/synth/ice40_report.md; SYNTH_ICE40_STAGES="1 2 3" (default
#                       1) for the pipelined PEs too (designs mxu_n<N>_s<S>)
# The generated RTL is read through bench/synth/flatten_packed.py (Yosys 0.23 does not parse
# packed arrays of more than one dimension, unpacked-array ports or `return`);
# test-fpga-flatten proves in Icarus that the rewritten RTL is the same circuit.

SYNTH_DIR    := $(BUILD)/synth
# A configuration is N ("2") or N with the PE depth S ("2_S3"); its N, S and gen arguments.
synth_n    = $(firstword $(subst _S, ,$(1)))
synth_s    = $(or $(word 2,$(subst _S, ,$(1))),1)
synth_args = --mxu $(call synth_n,$(1))$(if $(filter-out 1,$(call synth_s,$(1))), --pe-stages $(call synth_s,$(1)))
SYNTH_MXU_NS ?= 1 2 4
SYNTH_FAMS   := xc7 xcup
SYNTH_TOOLS  := bench/synth/synth_xilinx.sh bench/synth/report.py

.PHONY: synth-est synth-ice40 synth-force

# gen (--vpu-lanes 1: the lane is what is measured) and the flattened copy for Yosys; the
# stamp is touched only when the generated files change, so a rebuilt gen costs no re-run.
$(SYNTH_DIR)/flat_n%/stamp: $(GEN) bench/synth/flatten_packed.py
	@d=$(SYNTH_DIR)/gen_n$*; mkdir -p $(SYNTH_DIR); rm -rf $$d.new; \
	$(GEN) $(call synth_args,$*) --vpu-lanes 1 -o $$d.new >/dev/null && \
	if [ -f $@ ] && diff -r -q -I '^[/#]* command:' $$d.new $$d >/dev/null 2>&1; then \
		rm -rf $$d.new; \
	else \
		rm -rf $$d $(SYNTH_DIR)/flat_n$*; mv $$d.new $$d; \
		python3 bench/synth/flatten_packed.py $(SYNTH_DIR)/flat_n$* $$d/*.sv && touch $@; \
	fi

# synth_rule NAME N TOP FILELIST FAMILY
define synth_rule
$(SYNTH_DIR)/$(1)_$(5).json: $(SYNTH_DIR)/flat_n$(2)/stamp $(SYNTH_TOOLS)
	sh bench/synth/synth_xilinx.sh $(1) $(5) $(3) $(SYNTH_DIR) \
		`grep -v '^//' $(SYNTH_DIR)/gen_n$(2)/$(4) | sed 's|^|$(SYNTH_DIR)/flat_n$(2)/|'`
SYNTH_JSONS += $(SYNTH_DIR)/$(1)_$(5).json
endef

SYNTH_JSONS :=
$(foreach f,$(SYNTH_FAMS), \
  $(eval $(call synth_rule,pe,1,tpu_pe,tpu_mxu.f,$(f))) \
  $(eval $(call synth_rule,pe_s2,1_S2,tpu_pe,tpu_mxu.f,$(f))) \
  $(eval $(call synth_rule,pe_s3,1_S3,tpu_pe,tpu_mxu.f,$(f))) \
  $(foreach n,$(SYNTH_MXU_NS),$(eval $(call synth_rule,mxu_n$(n),$(n),tpu_mxu,tpu_mxu.f,$(f)))) \
  $(eval $(call synth_rule,vpu_lane,1,tpu_vpu_lane,tpu_vpu.f,$(f))))

# ---- the core and the board (gen's defaults but N; --vpu-lanes N) ----
# A core or board configuration: core_n<N> (gen --mxu N), board_n<N>_c<C> (gen --mxu N
# --cores C --topology ring). Each can be synthesised flattened (<cfg>_<fam>.json: the figures
# of the table, synth_xilinx.sh) and hierarchically (<cfg>_<fam>.hier.json, synth_hier.sh:
# LUT/FF/DSP/BRAM per submodule, the breakdown; no cross-module optimisation).
SYNTH_CORE_NS  ?= 2
SYNTH_BOARDS   ?= n2_c2
synth_cargs = $(if $(filter board_%,$(1)),--mxu $(patsubst n%,%,$(word 2,$(subst _, ,$(1)))) \
	--cores $(patsubst c%,%,$(word 3,$(subst _, ,$(1)))) --topology ring,--mxu $(patsubst core_n%,%,$(1)))

$(SYNTH_DIR)/flatc_%/stamp: $(GEN) bench/synth/flatten_packed.py
	@d=$(SYNTH_DIR)/genc_$*; mkdir -p $(SYNTH_DIR); rm -rf $$d.new; \
	$(GEN) $(call synth_cargs,$*) -o $$d.new >/dev/null && \
	if [ -f $@ ] && diff -r -q -I '^[/#]* command:' $$d.new $$d >/dev/null 2>&1; then \
		rm -rf $$d.new; \
	else \
		rm -rf $$d $(SYNTH_DIR)/flatc_$*; mv $$d.new $$d; \
		python3 bench/synth/flatten_packed.py $(SYNTH_DIR)/flatc_$* $$d/*.sv && touch $@; \
	fi

# synthc_rule CONFIG TOP FILELIST FAMILY
define synthc_rule
$(SYNTH_DIR)/$(1)_$(4).json: $(SYNTH_DIR)/flatc_$(1)/stamp $(SYNTH_TOOLS)
	sh bench/synth/synth_xilinx.sh $(1) $(4) $(2) $(SYNTH_DIR) \
		`grep -v '^//' $(SYNTH_DIR)/genc_$(1)/$(3) | sed 's|^|$(SYNTH_DIR)/flatc_$(1)/|'`
$(SYNTH_DIR)/$(1)_$(4).hier.json: $(SYNTH_DIR)/flatc_$(1)/stamp bench/synth/synth_hier.sh bench/synth/report.py
	sh bench/synth/synth_hier.sh $(1) $(4) $(2) $(SYNTH_DIR) \
		`grep -v '^//' $(SYNTH_DIR)/genc_$(1)/$(3) | sed 's|^|$(SYNTH_DIR)/flatc_$(1)/|'`
endef

# The PE's breakdown (tpu_bf16_mul, tpu_fp32_add, the PE's own registers and weight mux).
# synth_hier_rule NAME CONFIG FAMILY
define synth_hier_rule
$(SYNTH_DIR)/$(1)_$(3).hier.json: $(SYNTH_DIR)/flat_n$(2)/stamp bench/synth/synth_hier.sh bench/synth/report.py
	sh bench/synth/synth_hier.sh $(1) $(3) tpu_pe $(SYNTH_DIR) \
		`grep -v '^//' $(SYNTH_DIR)/gen_n$(2)/tpu_mxu.f | sed 's|^|$(SYNTH_DIR)/flat_n$(2)/|'`
SYNTH_HIER_JSONS += $(SYNTH_DIR)/$(1)_$(3).hier.json
endef

SYNTH_HIER_JSONS :=
$(foreach f,$(SYNTH_FAMS), \
  $(eval $(call synth_hier_rule,pe,1,$(f))) \
  $(eval $(call synth_hier_rule,pe_s3,1_S3,$(f))))
SYNTH_BOARD_FAMS      ?= xc7 xcup
SYNTH_BOARD_HIER_FAMS ?= xc7
SYNTH_CORE_HIER_NS  ?= 4
$(foreach f,$(SYNTH_FAMS), \
  $(foreach n,$(sort $(SYNTH_CORE_NS) $(SYNTH_CORE_HIER_NS)),$(eval $(call synthc_rule,core_n$(n),tpu_core,tpu_core.f,$(f)))) \
  $(foreach b,$(SYNTH_BOARDS),$(eval $(call synthc_rule,board_$(b),tpu_board,tpu_board.f,$(f)))))
# In synth-est: the core flattened for both families; the board (~15-19 min per flattened
# run on 2 cores) flattened for both families (SYNTH_BOARD_FAMS="xc7" to skip the xcup run)
# and hierarchically for xc7 only (SYNTH_BOARD_HIER_FAMS; its breakdown contains the core's);
# the core alone hierarchically for SYNTH_CORE_HIER_NS (default 4: ~2.5 min, the breakdown
# at a second N, which shows how the core's fixed part grows).
SYNTH_JSONS += $(foreach f,$(SYNTH_FAMS),$(foreach n,$(SYNTH_CORE_NS),$(SYNTH_DIR)/core_n$(n)_$(f).json)) \
               $(foreach f,$(SYNTH_BOARD_FAMS),$(foreach b,$(SYNTH_BOARDS),$(SYNTH_DIR)/board_$(b)_$(f).json))
SYNTH_HIER_JSONS += $(foreach n,$(SYNTH_CORE_HIER_NS),$(SYNTH_DIR)/core_n$(n)_xc7.hier.json) \
                    $(foreach f,$(SYNTH_BOARD_HIER_FAMS),$(foreach b,$(SYNTH_BOARDS),$(SYNTH_DIR)/board_$(b)_$(f).hier.json))

synth-est: $(SYNTH_JSONS) $(SYNTH_HIER_JSONS)
	python3 bench/synth/report.py table $(SYNTH_DIR)/report.md $(SYNTH_JSONS) $(SYNTH_HIER_JSONS)
	python3 bench/synth/report.py check $(SYNTH_JSONS)

# ---- nextpnr-ice40: real Fmax of the smallest MXUs through a serialising wrapper ----
SYNTH_ICE40_NS   ?= 1 2
SYNTH_ICE40_DEVS ?= up5k hx8k
SYNTH_ICE40_STAGES ?= 1

# ice40_rule CONFIG DEVICE NAME  (CONFIG: N or N_S<S>; NAME: mxu_n<N> or mxu_n<N>_s<S>)
define ice40_rule
$(SYNTH_DIR)/ice40_$(3)_$(2).json: $(SYNTH_DIR)/flat_n$(1)/stamp bench/synth/ice40.sh bench/synth/ice40_wrap.sv
	sh bench/synth/ice40.sh $(1) $(2) $(SYNTH_DIR) \
		`grep -v '^//' $(SYNTH_DIR)/gen_n$(1)/tpu_mxu.f | sed 's|^|$(SYNTH_DIR)/flat_n$(1)/|'`
SYNTH_ICE40_JSONS += $(SYNTH_DIR)/ice40_$(3)_$(2).json
endef

SYNTH_ICE40_JSONS :=
$(foreach s,$(SYNTH_ICE40_STAGES),$(foreach n,$(SYNTH_ICE40_NS),$(foreach d,$(SYNTH_ICE40_DEVS), \
  $(eval $(call ice40_rule,$(n)$(if $(filter-out 1,$(s)),_S$(s)),$(d),mxu_n$(n)$(if $(filter-out 1,$(s)),_s$(s)))))))

synth-ice40: $(SYNTH_ICE40_JSONS)
	python3 bench/synth/ice40_report.py $(SYNTH_DIR)/ice40_report.md $(SYNTH_ICE40_JSONS)
