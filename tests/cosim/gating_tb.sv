// SPDX-License-Identifier: Apache-2.0
// test-cosim-gating (tests/cosim/gating.sh): the PEs' clock enables are real.
// Two tpu_mxu instances get the same weights and the same vectors, presented with random
// gaps. In the cycles without a vector (act_valid_i = 0) and without a weight load
// (wl_valid_i = 0) u_x sees X on every data input (act_data_i, act_bank_i, psum_data_i,
// wl_data_i, wl_bank_i, wl_transpose_i) and u_r sees random values. Checked every cycle after reset:
//  1. out_valid_o is the same in both, and out_data_o is the same (!==, X included) in
//     every cycle it is 1: the data of idle cycles never reaches a result;
//  2. from u_x's first result on, out_data_o of u_x holds no X in ANY cycle, valid or
//     not: the bottom row's partial-sum registers never took an idle cycle's X. Without
//     the clock enables a PE registers whatever its inputs are every cycle, so X reaches
//     out_data_o between results (this test fails on the MXU gen wrote before them);
//  3. as many results as vectors, and no X in any result.
// Icarus starts every register at X (no --x-initial), so this also shows that nothing
// observable depends on the state that is not reset (the PEs' valid bits included).
// MXU_N (the generated N) is a macro from gating.sh; plusargs +seed=S, +vectors=V.
`timescale 1ns/1ps
module gating_tb;
  localparam int N = `MXU_N;

  logic            clk_i = 1'b0, rst_ni = 1'b0;
  logic            wl_valid_i = 1'b0, act_valid_i = 1'b0;
  logic            wl_bank_x, wl_bank_r, act_bank_x, act_bank_r, wl_t_x, wl_t_r;
  logic [16*N-1:0] wl_data_x, wl_data_r, act_data_x, act_data_r;
  logic [32*N-1:0] psum_data_x, psum_data_r;
  logic            out_valid_x, out_valid_r;
  logic [32*N-1:0] out_data_x, out_data_r;
  logic [1:0]      busy_x, busy_r;

  tpu_mxu u_x (
    .clk_i, .rst_ni, .wl_valid_i, .wl_bank_i (wl_bank_x), .wl_transpose_i (wl_t_x),
    .wl_data_i (wl_data_x),
    .act_valid_i, .act_bank_i (act_bank_x), .act_data_i (act_data_x),
    .psum_data_i (psum_data_x), .out_valid_o (out_valid_x), .out_data_o (out_data_x),
    .bank_busy_o (busy_x)
  );
  tpu_mxu u_r (
    .clk_i, .rst_ni, .wl_valid_i, .wl_bank_i (wl_bank_r), .wl_transpose_i (wl_t_r),
    .wl_data_i (wl_data_r),
    .act_valid_i, .act_bank_i (act_bank_r), .act_data_i (act_data_r),
    .psum_data_i (psum_data_r), .out_valid_o (out_valid_r), .out_data_o (out_data_r),
    .bank_busy_o (busy_r)
  );

  integer      seed;  // $random's state
  int unsigned vectors;
  int          errs = 0, results = 0, sent = 0;
  bit          seen = 1'b0;  // u_x has given its first result

  // a random word of w bits (w <= 32)
  function automatic logic [31:0] rnd(input int w);
    logic [31:0] v;
    v = $random(seed);
    return w >= 32 ? v : v & ((32'h1 << w) - 32'h1);
  endfunction

  // idle inputs: X for u_x, random for u_r
  task automatic idle;
    wl_valid_i  = 1'b0;
    act_valid_i = 1'b0;
    wl_bank_x   = 1'bx;
    wl_t_x      = 1'bx;
    act_bank_x  = 1'bx;
    wl_data_x   = 'x;
    act_data_x  = 'x;
    psum_data_x = 'x;
    wl_bank_r   = rnd(1);
    wl_t_r      = rnd(1);
    act_bank_r  = rnd(1);
    for (int c = 0; c < N; c++) begin
      wl_data_r[16*c +: 16]   = rnd(16);
      act_data_r[16*c +: 16]  = rnd(16);
      psum_data_r[32*c +: 32] = rnd(32);
    end
  endtask

  // one clock cycle: inputs set now are sampled at the rising edge; outputs are checked
  // in the cycle they are valid (before the edge)
  task automatic cycle;
    #1;
    if (rst_ni) check;  // (in reset, released after four edges: nothing to check yet)
    clk_i = 1'b1;
    #1;
    clk_i = 1'b0;
  endtask

  task automatic check;
    if (out_valid_x !== out_valid_r || out_valid_x === 1'bx) begin
      errs++;
      if (errs < 10) $display("cycle %0t: out_valid_o %b vs %b", $time, out_valid_x, out_valid_r);
    end
    if (out_valid_x === 1'b1) begin
      results++;
      seen = 1'b1;
      if (out_data_x !== out_data_r || ^out_data_x === 1'bx) begin
        errs++;
        if (errs < 10) $display("cycle %0t: result %h vs %h", $time, out_data_x, out_data_r);
      end
    end
    if (seen && ^out_data_x === 1'bx) begin
      errs++;
      if (errs < 10)
        $display("cycle %0t: out_data_o has X between results (%h): %s", $time, out_data_x,
                 "a register loaded an idle cycle's input");
    end
  endtask

  initial begin
    if (!$value$plusargs("seed=%d", seed)) seed = 1;
    if (!$value$plusargs("vectors=%d", vectors)) vectors = 60;
    idle;
    repeat (4) cycle;
    rst_ni = 1'b1;
    repeat (3) cycle;
    // weights: N rows into bank 0, then N rows into bank 1 (a transposed load), with idle
    // cycles between
    for (int b = 0; b < 2; b++) begin
      for (int r = 0; r < N; r++) begin
        idle;
        wl_valid_i = 1'b1;
        wl_bank_x  = b[0];
        wl_bank_r  = b[0];
        wl_t_x     = b[0];
        wl_t_r     = b[0];
        for (int c = 0; c < N; c++) wl_data_x[16*c +: 16] = rnd(16);
        wl_data_r = wl_data_x;
        cycle;
        idle;
        repeat (rnd(2)) cycle;
      end
    end
    // vectors, tagged with either bank, each followed by 0 to 3 idle cycles
    while (sent < vectors) begin
      idle;
      act_valid_i = 1'b1;
      act_bank_x  = rnd(1);
      act_bank_r  = act_bank_x;
      for (int r = 0; r < N; r++) act_data_x[16*r +: 16] = rnd(16);
      for (int c = 0; c < N; c++) psum_data_x[32*c +: 32] = rnd(32);
      act_data_r  = act_data_x;
      psum_data_r = psum_data_x;
      cycle;
      sent++;
      idle;
      repeat (rnd(2)) cycle;
    end
    idle;
    repeat (4 * N + 8) cycle;
    if (results != vectors) begin
      errs++;
      $display("%0d results for %0d vectors", results, vectors);
    end
    if (errs == 0)
      $display("gating N=%0d: %0d vectors, %s, %s", N, vectors,
               "results identical with X or random data in idle cycles",
               "no X on out_data_o after the first result");
    else
      $display("gating N=%0d: FAILED, %0d errors", N, errs);
    $finish;
  end
endmodule
