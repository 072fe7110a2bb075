#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-fpga-pe-mac: the one-stage PE's fused multiply-accumulate (gen/emit_arith.c,
# emit_arith_mac) is fp32_add(acc, bf16_mul(act, w)) bit for bit.
#  1. Proof: the block u_add of the generated tpu_pe.sv, cut out as a combinational module,
#     against tpu_bf16_mul + tpu_fp32_add (the reference texts) in a Yosys miter; SAT finds
#     no input (acc 32 bits, act 16, w 16) where they differ (~45 s).
#  2. The generated tpu_pe itself (clock enable, weight banks) against the C model on
#     random vectors biased to the hard cases (pe_mac_tb.cpp, PE_MAC_VECTORS, default 10^6).
#   test_pe_mac.sh GEN WORKDIR
set -eu
gen=$1; work=$2
here=$(dirname "$0")
vectors=${PE_MAC_VECTORS:-1000000}
rm -rf "$work"; mkdir -p "$work"
"$gen" --mxu 1 --vpu-lanes 1 -o "$work/rtl" >/dev/null
# the block u_add ... its end (six spaces), as the body of an always_comb
awk 'BEGIN { print "module pe_mac (input logic [31:0] psum_i, input logic [15:0] act_i,";
             print "               input logic [15:0] w, output logic [31:0] sum);";
             print "  always_comb begin" }
     /^      begin : u_add$/ { on = 1 }
     on { print }
     on && /^      end$/ { on = 0; n++ }
     END { print "  end"; print "endmodule"; if (n != 1) exit 1 }' \
  "$work/rtl/tpu_pe.sv" >"$work/pe_mac.sv" || { echo "test_pe_mac: no block u_add in tpu_pe.sv"; exit 1; }
cat >"$work/pe_ref.sv" <<'SV'
module pe_ref (input logic [31:0] psum_i, input logic [15:0] act_i,
               input logic [15:0] w, output logic [31:0] sum);
  logic [31:0] prod;
  tpu_bf16_mul u_mul (.a_i (act_i), .b_i (w), .p_o (prod));
  tpu_fp32_add u_add (.a_i (psum_i), .b_i (prod), .s_o (sum));
endmodule
SV
start=$(date +%s)
yosys -q -l "$work/sat.log" -p "read_verilog -sv $work/rtl/tpu_bf16_mul.sv $work/rtl/tpu_fp32_add.sv \
  $work/pe_ref.sv $work/pe_mac.sv; proc; flatten; opt_clean; \
  miter -equiv -flatten -make_assert pe_ref pe_mac miter; hierarchy -top miter; \
  sat -verify -prove-asserts miter" >/dev/null 2>&1 || true
if grep -q "SAT proof finished - no model found: SUCCESS" "$work/sat.log"; then
  echo "test_pe_mac: SAT: the fused MAC equals tpu_bf16_mul + tpu_fp32_add for every input ($(( $(date +%s) - start )) s)"
else
  echo "test_pe_mac: SAT: the fused MAC differs from tpu_bf16_mul + tpu_fp32_add (see $work/sat.log)"
  exit 1
fi
${VERILATOR:-verilator} --cc --exe --build -O3 -Wno-fatal --top-module tpu_pe \
  -Mdir "$work/obj" "$work/rtl/tpu_pe.sv" "$(cd "$here" && pwd)/pe_mac_tb.cpp" \
  -CFLAGS "-O1 -I$(pwd)/cmodel/include" -LDFLAGS "$(pwd)/build/cmodel/libtpucmodel.a" \
  -o pe_mac_tb >"$work/verilate.log" 2>&1 || { echo "test_pe_mac: verilator failed (see $work/verilate.log)"; exit 1; }
"$work/obj/pe_mac_tb" "$vectors"
