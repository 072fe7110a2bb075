#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-fpga-pe-mac: the PE's fused multiply-accumulate (gen/emit_arith.c, emit_arith_mac) is
# fp32_add(acc, bf16_mul(act, w)) bit for bit, at every PE depth.
#  1. Proof, for --pe-stages 1, 2 and 3: the arithmetic blocks of the generated tpu_pe.sv
#     (u_add; u_mul then u_add; u_mul, u_add, u_add), cut out and joined in one
#     combinational module in the order the pipeline runs them (each pipeline register a
#     plain assignment), against tpu_bf16_mul + tpu_fp32_add (the reference texts) in a
#     Yosys miter; SAT finds no input (acc 32 bits, act 16, w 16) where they differ
#     (~45 s each).
#  2. The generated one-stage tpu_pe itself (clock enable, weight banks) against the C model
#     on random vectors biased to the hard cases (pe_mac_tb.cpp, PE_MAC_VECTORS, default
#     10^6). The pipelined PEs' registers and enables are checked by test-cosim-stages and
#     test-cosim-gating.
#   test_pe_mac.sh GEN WORKDIR
set -eu
gen=$1; work=$2
here=$(dirname "$0")
vectors=${PE_MAC_VECTORS:-1000000}
rm -rf "$work"; mkdir -p "$work"
cat >"$work/pe_ref.sv" <<'SV'
module pe_ref (input logic [31:0] psum_i, input logic [15:0] act_i,
               input logic [15:0] w, output logic [31:0] sum);
  logic [31:0] prod;
  tpu_bf16_mul u_mul (.a_i (act_i), .b_i (w), .p_o (prod));
  tpu_fp32_add u_add (.a_i (psum_i), .b_i (prod), .s_o (sum));
endmodule
SV
for s in 1 2 3; do
  d=$work/s$s
  "$gen" --mxu 1 --vpu-lanes 1 --pe-stages "$s" -o "$d" >/dev/null
  # The blocks u_mul and u_add at six spaces, in the order of the text, as the body of an
  # always_comb (numbered: the two halves of the three-stage adder are both u_add, in two
  # blocks of tpu_pe); after u_mul the product register (prod_q = prod), after the first of
  # two u_add blocks the register between the adder's halves (mid_q = mid).
  awk -v s="$s" 'BEGIN { print "module pe_mac (input logic [31:0] psum_i, input logic [15:0] act_i,";
               print "               input logic [15:0] w, output logic [31:0] sum);";
               print "  logic [26:0] prod, prod_q;";
               print "  logic [40:0] mid, mid_q;";
               print "  always_comb begin" }
       /^      begin : u_(mul|add)$/ { on = 1; kind = $3; blk++
                                      print "      begin : " kind "_" blk; next }
       on { print }
       on && /^      end$/ { on = 0; n++;
                             if (kind == "u_mul") print "      prod_q = prod;";
                             else if (s == 3 && ++adds == 1) print "      mid_q = mid;" }
       END { print "  end"; print "endmodule"; if (n != (s == 1 ? 1 : s)) exit 1 }' \
    "$d/tpu_pe.sv" >"$work/pe_mac_s$s.sv" ||
    { echo "test_pe_mac: --pe-stages $s: not the expected blocks u_mul/u_add in tpu_pe.sv"; exit 1; }
  start=$(date +%s)
  yosys -q -l "$work/sat_s$s.log" -p "read_verilog -sv $d/tpu_bf16_mul.sv $d/tpu_fp32_add.sv \
    $work/pe_ref.sv $work/pe_mac_s$s.sv; proc; flatten; opt_clean; \
    miter -equiv -flatten -make_assert pe_ref pe_mac miter; hierarchy -top miter; \
    sat -verify -prove-asserts miter" >/dev/null 2>&1 || true
  if grep -q "SAT proof finished - no model found: SUCCESS" "$work/sat_s$s.log"; then
    echo "test_pe_mac: SAT: --pe-stages $s: the fused MAC equals tpu_bf16_mul + tpu_fp32_add for every input ($(( $(date +%s) - start )) s)"
  else
    echo "test_pe_mac: SAT: --pe-stages $s: the fused MAC differs from tpu_bf16_mul + tpu_fp32_add (see $work/sat_s$s.log)"
    exit 1
  fi
done
${VERILATOR:-verilator} --cc --exe --build -O3 -Wno-fatal --top-module tpu_pe \
  -Mdir "$work/obj" "$work/s1/tpu_pe.sv" "$(cd "$here" && pwd)/pe_mac_tb.cpp" \
  -CFLAGS "-O1 -I$(pwd)/cmodel/include" -LDFLAGS "$(pwd)/build/cmodel/libtpucmodel.a" \
  -o pe_mac_tb >"$work/verilate.log" 2>&1 || { echo "test_pe_mac: verilator failed (see $work/verilate.log)"; exit 1; }
"$work/obj/pe_mac_tb" "$vectors"
