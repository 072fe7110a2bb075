// SPDX-License-Identifier: Apache-2.0
// ice40_wrap: synthesis-only harness for the nextpnr-ice40 Fmax runs (make synth-ice40).
// Not part of the generated design. The MXU has far more ports than an iCE40 has pins
// (N=2: 258 input and 67 output bits), so, as in the prototype, every MXU input comes from
// one long shift register fed by sin_i (one bit per cycle) and every output is captured into
// a second shift register (ld_i = 1: load all outputs; else shift out on sout_o). Every MXU
// input and output bit stays live, the clock is the MXU's own, and the timing paths inside
// the MXU (register to register) are the ones measured. Five pins: clk_i, rst_ni, sin_i,
// ld_i, sout_o. Plain Verilog-2005 so that Yosys 0.23 reads it; MXU_N is a define.
`ifndef MXU_N
`define MXU_N 1
`endif
module ice40_wrap (
  input  wire clk_i,
  input  wire rst_ni,
  input  wire sin_i,
  input  wire ld_i,
  output wire sout_o
);
  localparam N  = `MXU_N;
  localparam IW = 5 + 16 * N + 16 * N + 32 * N;  // wl_valid, wl_bank, act_valid, act_bank, data,
                                                 // wl_transpose
  localparam OW = 1 + 32 * N + 2;                // out_valid, out_data, bank_busy

  reg  [IW-1:0] in_q;
  reg  [OW-1:0] out_q;
  wire [OW-1:0] out_w;

  always @(posedge clk_i) in_q <= {in_q[IW-2:0], sin_i};

  tpu_mxu u_mxu (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .wl_valid_i  (in_q[0]),
    .wl_bank_i   (in_q[1]),
    .wl_transpose_i (in_q[4 + 64 * N]),
    .act_valid_i (in_q[2]),
    .act_bank_i  (in_q[3]),
    .wl_data_i   (in_q[4 +: 16 * N]),
    .act_data_i  (in_q[4 + 16 * N +: 16 * N]),
    .psum_data_i (in_q[4 + 32 * N +: 32 * N]),
    .out_valid_o (out_w[0]),
    .out_data_o  (out_w[1 +: 32 * N]),
    .bank_busy_o (out_w[1 + 32 * N +: 2])
  );

  always @(posedge clk_i) out_q <= ld_i ? out_w : {out_q[OW-2:0], 1'b0};
  assign sout_o = out_q[OW-1];
endmodule
