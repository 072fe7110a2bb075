# SPDX-License-Identifier: Apache-2.0
# FPGA flow tests (docs/fpga.md; the flow is bench/synth.mk).
#   test-fpga-dsp      Yosys synth_xilinx of the PE (--pe-stages 1 and 3) for xc7 and xcup: the
#                      significand multiply maps to exactly one DSP48E1 / DSP48E2 (the PE has
#                      no RAM: the block-RAM half of the check applies to the core and board
#                      runs of synth-est, and tpu_sram alone is test-sram-bram) (~60 s)
#   test-fpga-flatten  the Yosys 0.23 front-end workaround (bench/synth/flatten_packed.py) keeps
#                      the circuit: generated and flattened tpu_mxu (N = 2, 3; N = 2 also with
#                      --pe-stages 2 and 3), tpu_vpu (L = 2), the memories kept as memories
#                      (tpu_sram at 16 x 8, tpu_link's FIFO at depth 4: random addresses
#                      hit written words), declaration lists `logic [1:0][15:0] a, b;`
#                      (tpu_core_mx, tpu_router, tpu_noc), tpu_core and tpu_board (N = 2,
#                      C = 2 ring: random inputs leave these two mostly idle, so they check
#                      that the rewrite of the whole RTL compiles and resets alike, little
#                      more) side by side in Icarus, all outputs identical every cycle, each
#                      simulation done within 120 s (bench/synth/equiv.sh) (~20 s)
#   test-fpga-pe-mac   the PE's fused multiply-accumulate (gen/emit_arith.c) equals
#                      tpu_bf16_mul + tpu_fp32_add: Yosys SAT proof on the generated blocks
#                      for every input at --pe-stages 1, 2 and 3 (the stages joined in
#                      order), then the generated one-stage tpu_pe against the C model on
#                      10^6 biased random vectors (tests/fpga/test_pe_mac.sh, ~60 s)
#   test-fpga-constraints  what gen writes for FPGAs: --freq-mhz, XDC/SDC/PCF naming clk_i and
#                      the reset synchroniser, tpu.core parsing as YAML and listing only files
#                      that exist, tpu_top lint-clean (Verilator -Wall, Icarus), the
#                      synchroniser's behaviour (tests/fpga/test_constraints.sh, ~10 s)
# Full only: synth-est (every estimate and its checks) and synth-ice40 (place and route).

.PHONY: test-fpga-dsp test-fpga-flatten test-fpga-constraints test-fpga-pe-mac
test-fpga-pe-mac: $(GEN) $(CMODEL_LIB)
	VERILATOR=$(VERILATOR) sh tests/fpga/test_pe_mac.sh $(GEN) $(BUILD)/fpga-pe-mac
test-fpga-constraints: $(GEN)
	VERILATOR=$(VERILATOR) sh tests/fpga/test_constraints.sh $(GEN)

# (bench/synth.mk is included after this file: the paths are spelled out)
test-fpga-dsp: $(BUILD)/synth/pe_xc7.json $(BUILD)/synth/pe_xcup.json \
               $(BUILD)/synth/pe_s3_xc7.json $(BUILD)/synth/pe_s3_xcup.json
	python3 bench/synth/report.py check $^

test-fpga-flatten: $(GEN)
	@set -e; d=$(BUILD)/fpga-equiv; mkdir -p $$d; \
	for cfg in "2 2 tpu_mxu.f tpu_mxu 1" "3 2 tpu_mxu.f tpu_mxu 1" "2 2 tpu_vpu.f tpu_vpu 1" \
	           "2 2 tpu_mxu.f tpu_mxu 2" "2 2 tpu_mxu.f tpu_mxu 3"; do \
		set -- $$cfg; g=$$d/gen_$$1_$$2_s$$5; rm -rf $$g; \
		$(GEN) --mxu $$1 --vpu-lanes $$2 --pe-stages $$5 -o $$g >/dev/null; \
		sh bench/synth/equiv.sh $$g $$3 $$4 400 $$d/work_$$1_$$2_$$4_s$$5; \
	done; \
	g=$$d/gen_board_2_2; rm -rf $$g; \
	$(GEN) --mxu 2 --cores 2 --topology ring -o $$g >/dev/null; \
	EQUIV_PARAMS="Width=8 Depth=16 AddrW=4" sh bench/synth/equiv.sh $$g tpu_core.f tpu_sram 400 $$d/work_sram; \
	EQUIV_PARAMS="W=8 Depth=4 CntW=3" sh bench/synth/equiv.sh $$g tpu_noc.f tpu_link 400 $$d/work_link; \
	for t in tpu_core_mx:tpu_core.f tpu_router:tpu_noc.f tpu_noc:tpu_noc.f \
	         tpu_core:tpu_core.f tpu_board:tpu_board.f; do \
		sh bench/synth/equiv.sh $$g $${t#*:} $${t%:*} 400 $$d/work_$${t%:*}; \
	done

TEST_SUITES += test-fpga-dsp test-fpga-flatten test-fpga-constraints test-fpga-pe-mac
FULL_SUITES += synth-est synth-ice40
