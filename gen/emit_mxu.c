/* SPDX-License-Identifier: Apache-2.0 */
/* The MXU: tpu_pe, tpu_mxu_row, tpu_mxu, plus the file list, the Verilator configuration and
   the C parameter header. Structure and timing: docs/mxu.md. All numbers that depend on the
   configuration come from struct gen_config (config.c). */
#include <stdio.h>

#include "emit.h"

/* The files of the MXU in dependency order (the .f lists them in this order). */
static const char *const mxu_sources[] = {
    "tpu_bf16_mul.sv", "tpu_fp32_add.sv", "tpu_pe.sv", "tpu_mxu_row.sv", "tpu_mxu.sv",
};

/* ---------------------------------------------------------------------------------------- */
/* tpu_pe                                                                                    */

/* The PE's ports (every depth). */
static const char pe_ports[] =
    "module tpu_pe (\n"
    "  input  logic        clk_i,\n"
    "  input  logic        wl_valid_i,  // shift bank wl_bank_i one PE this cycle: down, or\n"
    "  input  logic        wl_bank_i,\n"
    "  input  logic        wl_transpose_i, // right along the row (a transposed load)\n"
    "  input  logic [15:0] wl0_i,       // bank-0 and bank-1 bf16 weights of the PE above\n"
    "  input  logic [15:0] wl1_i,\n"
    "  input  logic [15:0] wl0_left_i,  // bank-0 and bank-1 weights of the PE to the left\n"
    "  input  logic [15:0] wl1_left_i,\n"
    "  output logic [15:0] wl0_o,       // this PE's bank-0 and bank-1 weights, to the PE below\n"
    "  output logic [15:0] wl1_o,       // and to the PE to the right\n"
    "  input  logic        act_valid_i, // an activation is on act_i (act_bank_i, act_i: data)\n"
    "  input  logic        act_bank_i,  // the weight bank the activation multiplies\n"
    "  input  logic [15:0] act_i,       // bf16 activation from the left\n"
    "  output logic        act_valid_o, // act_valid_i, act_bank_i and act_i one cycle later,\n"
    "  output logic        act_bank_o,  // to the right\n"
    "  output logic [15:0] act_o,\n"
    "  input  logic [31:0] psum_i,      // fp32 partial sum from above\n"
    "  output logic [31:0] psum_o       // fp32 partial sum to the PE below\n"
    ");\n"
    "\n";

/* The PE at depth S = 1, 2, 3 (P = mul_stages product registers, A = add_stages cycles in
   the adder). Every datapath register has a clock enable: it loads only in a cycle whose
   stage holds a valid activation, and the arithmetic is computed inside that `if` by the
   blocks of emit_arith.c, so an idle PE does no arithmetic (in hardware: no toggling; in
   Verilator: the code is skipped, which is what makes a mostly idle MXU cheap to simulate). */
int emit_pe(struct gen_output *out, const struct gen_config *cfg)
{
    if (cfg->pe_stages < 1 || cfg->pe_stages > 3) /* main.c accepts only these depths */
        return -1;
    struct strbuf *sb = gen_output_add(
        out, cfg, "tpu_pe.sv",
        "tpu_pe: processing element, two weight banks, bf16 x bf16 + fp32 MAC");
    if (!sb)
        return -1;
    const unsigned s = cfg->pe_stages;
    static const char *const what[] = {
        "",
        "One pipeline stage (--pe-stages 1). In the cycle an activation is on act_i, the PE\n"
        "// computes fp32_add(psum_i, bf16_mul(act_i, w[act_bank_i])) and registers it in psum_q:\n"
        "// the partial sum leaves through psum_o one cycle later, when the PE below sees the\n"
        "// same activation (it arrives there through the row skew).\n",
        "Two pipeline stages (--pe-stages 2). In the cycle an activation is on act_i, the PE\n"
        "// selects the weight w[act_bank_i] and registers the exact product bf16_mul(act_i, w)\n"
        "// (prod_q). In the next cycle fp32_add(psum_i, prod_q) is computed and registered in\n"
        "// psum_q, on psum_o from the cycle after.\n"
        "// The partial sum thus needs 1 cycle to get through the PE: the activation of the row\n"
        "// below arrives 1 cycle after this one (tpu_mxu's row skew), so its product is ready\n"
        "// when this PE's sum reaches it.\n",
        "Three pipeline stages (--pe-stages 3). In the cycle an activation is on act_i, the PE\n"
        "// selects the weight w[act_bank_i] and registers the exact product bf16_mul(act_i, w)\n"
        "// (prod_q). In the next cycle the first half of the adder (b_align: classes, order,\n"
        "// alignment) takes psum_i and prod_q into mid_q; in the cycle after, its second half\n"
        "// (b_norm: add, normalise, round) ends in psum_q, on psum_o from the next\n"
        "// cycle. The partial sum thus needs 2 cycles to get through the PE: the activation of\n"
        "// the row below arrives 2 cycles after this one (tpu_mxu's row skew), so its product\n"
        "// is ready when this PE's sum reaches it.\n",
    };
    sb_printf(sb, "//\n// %s", what[s]);
    if (s > 1)
        sb_puts(sb,
            "// Every output is still the chain fp32_add(...fp32_add(seed, p0)..., pN-1) down the\n"
            "// column: only the timing changes. The weight is read only in the activation's cycle\n"
            "// (the product register holds the product, not the weight), so the bank rules are\n"
            "// those of the one-stage PE.\n");
    sb_printf(sb,
        "// The activation, its bank tag and its valid bit are passed to the right through one\n"
        "// register.\n"
        "// Clock enables: each datapath register loads only when its stage holds a valid\n"
        "// activation: %s.\n"
        "%s"
        "// holds still: no toggling in hardware, no work in a simulator. The valid bits travel\n"
        "// exactly with the data, and a stage reads the register before it only in the cycle\n"
        "// after that register was loaded for the same activation, so the results are those of\n"
        "// the PE without enables, bit for bit, with the same latency.\n"
        "// Weight load: in a cycle with wl_valid_i, bank wl_bank_i takes the same bank's weight\n"
        "// of the PE above (wl0_i / wl1_i; the load data in row 0), so a column shifts down one\n"
        "// row per load cycle; with wl_transpose_i it takes the weight of the PE to the left\n"
        "// instead (wl0_left_i / wl1_left_i; the load data in column 0), so a row shifts right\n"
        "// one column per load cycle (a transposed load, docs/mxu.md). Each bank has its own\n"
        "// wires (wl0_o, wl1_o, to the PE below and the PE to the right): no multiplexer picks\n"
        "// the bank being shifted; one 16-bit 2:1 multiplexer per bank picks the direction.\n"
        "// Reset: none. The PE holds datapath state (weights, activation, product, partial sums)\n"
        "// and the valid bits of its stages (%s), which only enable\n"
        "// the datapath's registers; none of it is reset. Row r's valid bit comes from\n"
        "// tpu_mxu's reset valid pipe, so PE (r, c)'s valid bits are exact from c + %u cycles\n"
        "// after reset is released, before any vector presented after reset reaches the PE.\n"
        "// Before that, an unknown valid bit can only make a register load a value no valid\n"
        "// activation reads (see above), and out_valid_o comes from the reset valid pipe:\n"
        "// nothing observable depends on this state (docs/mxu.md; test-cosim-gating with\n"
        "// Icarus's X, the co-simulations with --x-initial unique).\n"
        "\n",
        s == 1 ? "act_q and psum_q on act_valid_i"
        : s == 2 ? "act_q and prod_q on act_valid_i, psum_q on act_valid_q"
                 : "act_q and prod_q on act_valid_i, mid_q on act_valid_q,\n// psum_q on mid_valid_q",
        s == 1 ? "// The arithmetic is computed inside that `if`: the block u_add is\n"
                 "// fp32_add(psum_i, bf16_mul(act_i, w)) bit for bit (docs/numerics.md), the multiplier\n"
                 "// fused into the adder to make it smaller (gen/emit_arith.c, docs/fpga.md). An idle PE\n"
               : "// The arithmetic is computed inside those `if`s: the blocks u_mul and u_add are the\n"
                 "// stages of fp32_add(psum_i, bf16_mul(act_i, w)), bit for bit (docs/numerics.md), the\n"
                 "// multiplier fused into the adder as in the one-stage PE and cut after the product\n"
                 "// (gen/emit_arith.c, docs/fpga.md). An idle PE\n",
        s == 3 ? "act_valid_q, mid_valid_q" : "act_valid_q", s == 3 ? 2u : 1u);
    sb_puts(sb, pe_ports);
    sb_puts(sb,
        "  logic [15:0] w0_q, w1_q;  // weight banks 0 and 1\n"
        "  logic        act_valid_q, act_bank_q;\n"
        "  logic [15:0] act_q;\n");
    if (s > 1)
        sb_printf(sb, "  logic [%u:0] prod_q;     // the product's classes and fields (valid: act_valid_q)\n",
                  MAC_PROD_BITS - 1u);
    if (s == 3)
        sb_printf(sb,
            "  logic        mid_valid_q;\n"
            "  logic [%u:0] mid_q;      // the adder's first half (valid: mid_valid_q)\n",
            MAC_MID_BITS - 1u);
    sb_puts(sb,
        "  logic [31:0] psum_q;\n"
        "\n");
    sb_puts(sb,
        "\n"
        "  // ---- Registers: weight banks and the pipeline (one process per PE: Icarus's\n"
        "  // elaboration time grows with the square of the processes on one clock) ----\n"
        "  // Multiply-accumulate unfused: exact product, one rounding in the add.\n");
    sb_puts(sb, s == 1
        ? "  // The block u_add is the arithmetic, fp32_add(psum_i, bf16_mul(act_i, w)) with the\n"
          "  // multiplier fused into the adder (gen/emit_arith.c, where the derivations are;\n"
          "  // docs/fpga.md), as blocking assignments; it is named like the adder instance it\n"
          "  // replaces, so waveform scopes (and the simulators' trace filter *.u_add) keep the\n"
          "  // arithmetic out. Its variables and those of the b_*_en blocks are temporaries of\n"
          "  // this process, each written before it\n"
        : "  // The blocks u_mul and u_add are the arithmetic: the one-stage PE's fused\n"
          "  // multiply-accumulate cut into pipeline stages (gen/emit_arith.c, where the\n"
          "  // derivations are; docs/fpga.md), as blocking assignments; they are named like the\n"
          "  // multiplier and adder instances they replace, so waveform scopes (and the\n"
          "  // simulators' trace filters, *.u_mul, *.u_add) keep the arithmetic out. Their\n"
          "  // variables and those of the b_*_en blocks are temporaries of this process, each\n"
          "  // written before it\n");
    sb_puts(sb,
        "  // is read in the same cycle: none of them is a register.\n"
        "  always_ff @(posedge clk_i) begin\n"
        "    if (wl_valid_i && !wl_bank_i) begin\n"
        "      w0_q <= wl_transpose_i ? wl0_left_i : wl0_i;\n"
        "    end\n"
        "    if (wl_valid_i && wl_bank_i) begin\n"
        "      w1_q <= wl_transpose_i ? wl1_left_i : wl1_i;\n"
        "    end\n"
        "    act_valid_q <= act_valid_i;\n");
    if (s == 3)
        sb_puts(sb, "    mid_valid_q <= act_valid_q;\n");
    int rc = 0;
    /* the multiplier: in the activation's cycle */
    sb_printf(sb,
        "    if (act_valid_i) begin : %s\n"
        "      logic [15:0] w;     // the weight of the activation's bank\n",
        s == 1 ? "b_mac_en" : "b_mul_en");
    if (s == 1)
        sb_puts(sb, "      logic [31:0] sum;   // fp32_add(psum_i, bf16_mul(act_i, w))\n");
    else
        sb_printf(sb, "      logic [%u:0] prod;  // bf16_mul(act_i, w): classes and fields\n",
                  MAC_PROD_BITS - 1u);
    sb_puts(sb,
        "      w = act_bank_i ? w1_q : w0_q;\n"
        "      ");
    if (s > 1) {
        const struct mac_io io = { .acc = "", .act = "act_i", .w = "w", .prod = "", .mid = "",
                                   .out = "prod" };
        rc |= emit_arith_mac(sb, MAC_MUL, "u_mul", &io, 6);
    }
    if (s == 1) {
        const struct mac_io io = { .acc = "psum_i", .act = "act_i", .w = "w", .prod = "",
                                   .mid = "", .out = "sum" };
        rc |= emit_arith_mac(sb, MAC_FULL, "u_add", &io, 6);
        sb_puts(sb,
            "      act_q      <= act_i;\n"
            "      act_bank_q <= act_bank_i;\n"
            "      psum_q     <= sum;\n"
            "    end\n");
    } else {
        sb_puts(sb,
            "      act_q      <= act_i;\n"
            "      act_bank_q <= act_bank_i;\n"
            "      prod_q     <= prod;\n"
            "    end\n");
    }
    /* the adder: the next cycle (S = 2), or its halves in the next two (S = 3) */
    if (s == 2) {
        sb_puts(sb,
            "    if (act_valid_q) begin : b_add_en\n"
            "      logic [31:0] sum;  // fp32_add(psum_i, prod_q)\n"
            "      ");
        const struct mac_io io = { .acc = "psum_i", .act = "", .w = "", .prod = "prod_q",
                                   .mid = "", .out = "sum" };
        rc |= emit_arith_mac(sb, MAC_ADD, "u_add", &io, 6);
        sb_puts(sb,
            "      psum_q <= sum;\n"
            "    end\n");
    } else if (s == 3) {
        sb_printf(sb,
            "    if (act_valid_q) begin : b_align_en\n"
            "      logic [%u:0] mid;  // the first half of fp32_add(psum_i, prod_q)\n"
            "      ",
            MAC_MID_BITS - 1u);
        const struct mac_io al = { .acc = "psum_i", .act = "", .w = "", .prod = "prod_q",
                                   .mid = "", .out = "mid" };
        rc |= emit_arith_mac(sb, MAC_ADD_ALIGN, "u_add", &al, 6);
        sb_puts(sb,
            "      mid_q <= mid;\n"
            "    end\n"
            "    if (mid_valid_q) begin : b_norm_en\n"
            "      logic [31:0] sum;  // the second half: fp32_add(psum_i, prod_q)\n"
            "      ");
        const struct mac_io nm = { .acc = "", .act = "", .w = "", .prod = "", .mid = "mid_q",
                                   .out = "sum" };
        rc |= emit_arith_mac(sb, MAC_ADD_NORM, "u_add", &nm, 6);
        sb_puts(sb,
            "      psum_q <= sum;\n"
            "    end\n");
    }
    if (rc)
        return -1;
    sb_puts(sb,
        "  end\n"
        "\n"
        "  assign wl0_o       = w0_q;\n"
        "  assign wl1_o       = w1_q;\n"
        "  assign act_valid_o = act_valid_q;\n"
        "  assign act_bank_o  = act_bank_q;\n"
        "  assign act_o       = act_q;\n"
        "  assign psum_o      = psum_q;\n"
        "\n"
        "endmodule\n");
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* tpu_mxu_row                                                                               */

/* Arrays of N values between rows are unpacked ([N], fast in Verilator and Icarus at large
   N) except when N = 1: Icarus 11 cannot pass a 1-element unpacked array through a port, so
   there they are packed ([N-1:0][w]). Either way x[c] is element c. */
#define PK (cfg->n == 1 ? "[N-1:0]" : "")
#define UP (cfg->n == 1 ? "" : " [N]")

int emit_mxu_row(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_mxu_row.sv",
                                       "tpu_mxu_row: one row of N processing elements");
    if (!sb)
        return -1;
    sb_puts(sb,
        "//\n"
        "// The activation of this row enters PE 0 and moves right one PE per cycle; weights and\n"
        "// partial sums come from the row above (wl0_i, wl1_i, psum_i) and go to the row below\n"
        "// (wl0_o, wl1_o, psum_o); in a transposed load (wl_transpose_i) the weights enter PE 0\n"
        "// (wl_row_i) and move right one PE per load cycle instead. tpu_mxu.vlt keeps this\n"
        "// module un-inlined in Verilator so that the N rows share one copy of the verilated\n"
        "// code (the PEs inside it are inlined).\n"
        "// Reset: none (datapath and its clock enables only, see tpu_pe).\n"
        "\n");
    sb_printf(sb,
        "module tpu_mxu_row #(\n"
        "  parameter int N = %u  // PEs in the row (the array is N x N)\n"
        ") (\n",
        cfg->n);
    sb_printf(sb,
        "  input  logic        clk_i,\n"
        "  input  logic        wl_valid_i,  // weight load: shift bank wl_bank_i down one row,\n"
        "  input  logic        wl_bank_i,\n"
        "  input  logic        wl_transpose_i, // or right one column (a transposed load)\n"
        "  input  logic [15:0] wl_row_i,    // the transposed load's weight for PE 0 (this row's)\n"
        "  input  logic %s[15:0] wl0_i%s,  // bank-0 weights from the row above, column c at [c]\n"
        "  input  logic %s[15:0] wl1_i%s,  // bank-1 weights from the row above\n"
        "  output logic %s[15:0] wl0_o%s,  // this row's bank-0 weights, to the row below\n"
        "  output logic %s[15:0] wl1_o%s,  // this row's bank-1 weights, to the row below\n"
        "  input  logic        act_valid_i, // the skewed activation of this row: valid bit,\n"
        "  input  logic        act_bank_i,  // bank tag, bf16 value\n"
        "  input  logic [15:0] act_i,\n"
        "  input  logic %s[31:0] psum_i%s,  // partial sums from the row above\n"
        "  output logic %s[31:0] psum_o%s  // partial sums to the row below\n"
        ");\n"
        "\n",
        PK, UP, PK, UP, PK, UP, PK, UP, PK, UP, PK, UP);
    sb_puts(sb,
        "  // The activation chain: PE c takes the row's input (c = 0) or PE c-1's outputs. Each\n"
        "  // column declares its own signals (not arrays [N+1] across the row: Verilator\n"
        "  // localises such an array and clears it element by element on every clock edge,\n"
        "  // measured at 8.7 % of a 32 x 32 core's simulation time); the last PE's outputs\n"
        "  // leave the right edge unused.\n"
        "  logic unused_act;\n"
        "\n"
        "  for (genvar c = 0; c < N; c++) begin : g_col\n"
        "    logic        valid_in, bank_in, valid_out, bank_out;\n"
        "    logic [15:0] act_in, act_out, wl0_left, wl1_left;\n"
        "    if (c == 0) begin : g_first\n"
        "      assign valid_in = act_valid_i;\n"
        "      assign bank_in  = act_bank_i;\n"
        "      assign act_in   = act_i;\n"
        "      assign wl0_left = wl_row_i;  // both banks see the load data; only wl_bank_i takes it\n"
        "      assign wl1_left = wl_row_i;\n"
        "    end else begin : g_next\n"
        "      assign valid_in = g_col[c-1].valid_out;\n"
        "      assign bank_in  = g_col[c-1].bank_out;\n"
        "      assign act_in   = g_col[c-1].act_out;\n"
        "      assign wl0_left = wl0_o[c-1];\n"
        "      assign wl1_left = wl1_o[c-1];\n"
        "    end\n"
        "    tpu_pe u_pe (\n"
        "      .clk_i,\n"
        "      .wl_valid_i,\n"
        "      .wl_bank_i,\n"
        "      .wl_transpose_i,\n"
        "      .wl0_i       (wl0_i[c]),\n"
        "      .wl1_i       (wl1_i[c]),\n"
        "      .wl0_left_i  (wl0_left),\n"
        "      .wl1_left_i  (wl1_left),\n"
        "      .wl0_o       (wl0_o[c]),\n"
        "      .wl1_o       (wl1_o[c]),\n"
        "      .act_valid_i (valid_in),\n"
        "      .act_bank_i  (bank_in),\n"
        "      .act_i       (act_in),\n"
        "      .act_valid_o (valid_out),\n"
        "      .act_bank_o  (bank_out),\n"
        "      .act_o       (act_out),\n"
        "      .psum_i      (psum_i[c]),\n"
        "      .psum_o      (psum_o[c])\n"
        "    );\n"
        "  end\n"
        "\n"
        "  assign unused_act = ^{g_col[N-1].valid_out, g_col[N-1].bank_out, g_col[N-1].act_out};\n"
        "\n"
        "endmodule\n");
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* tpu_mxu                                                                                   */

int emit_mxu(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(
        out, cfg, "tpu_mxu.sv",
        "tpu_mxu: N x N weight-stationary systolic matrix unit (docs/mxu.md)");
    if (!sb)
        return -1;
    const unsigned n = cfg->n;
    static const char *const pe_what[] = { "", "one-stage PEs", "two-stage PEs (product register)",
                                           "three-stage PEs (product register, two-cycle adder)" };
    char act_at[32], seed_at[32];
    snprintf(act_at, sizeof act_at, "%sr + c", cfg->add_stages == 1 ? "" : "2*");
    snprintf(seed_at, sizeof seed_at, "%sc", cfg->mul_stages ? "1 + " : "");
    sb_printf(sb,
        "//\n"
        "// N = %u, %s (--pe-stages %u).\n"
        "// Input registers, activation skew (row r waits AddStages*r = %sr more cycles), N\n"
        "// tpu_mxu_row rows, seed skew (column c waits MulStages + c = %s more cycles), output\n"
        "// de-skew (column c waits N-1-c cycles), a valid pipe and two bank-busy counters. A\n"
        "// partial sum spends AddStages = %u cycle%s in each PE; the product it adds there was\n"
        "// registered MulStages = %u cycle%s before.\n"
        "//\n"
        "// Latency: a vector presented in cycle t (act_valid_i = 1) reaches PE(r, c) in cycle\n"
        "//   t + 1 + %s; column c's seed reaches PE(0, c)'s adder in cycle t + 1 + %s; the N\n"
        "//   results leave together on out_data_o, with out_valid_o = 1, in cycle t + L,\n"
        "//   L = AddStages*N + N + MulStages = %u (TPU_MXU_LATENCY in tpu_params.h).\n"
        "// Throughput: one vector per cycle, every cycle; loading the other weight bank overlaps.\n"
        "// Bank busy: after a vector tagged b is presented in cycle t, bank_busy_o[b] is 1 in\n"
        "//   cycles t+1 .. t+B, B = AddStages*(N-1) + N-1 = %u (TPU_MXU_BUSY_CYCLES)%s.\n"
        "// Weight load: each cycle with wl_valid_i shifts bank wl_bank_i of every column down one\n"
        "//   row; PE(0, c) takes wl_data_i[16c +: 16]. The shift is seen from the next cycle.\n"
        "//   With wl_transpose_i it shifts every row right one column instead; PE(r, 0) takes\n"
        "//   wl_data_i[16r +: 16]. N such cycles presenting tile rows N-1 .. 0 leave PE(r, c)\n"
        "//   holding W[r][c] (down) or W[c][r] (right: the transposed tile).\n"
        "// Reset: rst_ni is active low, asserted asynchronously and released synchronously to\n"
        "//   clk_i (the synchroniser is in the design that contains the MXU). Only control state\n"
        "//   is reset: the valid pipe and the bank-busy counters. Weights, activations and partial\n"
        "//   sums are not, nor the valid bits inside the PEs (clock enables of that datapath,\n"
        "//   exact from c cycles after reset in column c; see tpu_pe); no output depends on them\n"
        "//   before they are written.\n"
        "// Clock enables: row r's activation carries the valid bit valid_q[AddStages*r] (the valid\n"
        "//   pipe delays act_valid_i exactly as the skew delays act_data_i), which travels\n"
        "//   through the row with it; a PE's registers load only for a valid activation.\n"
        "// The driver's rules (not checked here) are in docs/mxu.md.\n"
        "// N is fixed by gen (a localparam, not an overridable parameter): tpu_params.h gives\n"
        "// C code the same N, L and B; run gen --mxu for another size.\n"
        "\n",
        n, pe_what[cfg->pe_stages], cfg->pe_stages, cfg->add_stages == 1 ? "" : "2*", seed_at,
        cfg->add_stages, cfg->add_stages == 1 ? "" : "s", cfg->mul_stages,
        cfg->mul_stages == 1 ? "" : "s", act_at, seed_at, cfg->latency, cfg->busy,
        cfg->busy ? "" : ": never busy");
    sb_printf(sb,
        "module tpu_mxu (\n"
        "  input  logic %-9s clk_i,\n"
        "  input  logic %-9s rst_ni,\n"
        "  input  logic %-9s wl_valid_i,   // shift one weight row into bank wl_bank_i\n"
        "  input  logic %-9s wl_bank_i,\n"
        "  input  logic %-9s wl_transpose_i, // shift right along the rows, not down the columns\n",
        "", "", "", "", "");
    char w16[24], w32[24];
    snprintf(w16, sizeof w16, "[%u:0]", 16u * n - 1u);
    snprintf(w32, sizeof w32, "[%u:0]", 32u * n - 1u);
    sb_printf(sb,
        "  input  logic %-9s wl_data_i,    // N*16: column c at [16c +: 16]\n"
        "  input  logic %-9s act_valid_i,  // an activation vector is presented\n"
        "  input  logic %-9s act_bank_i,   // the weight bank it multiplies\n"
        "  input  logic %-9s act_data_i,   // N*16: row r at [16r +: 16]\n"
        "  input  logic %-9s psum_data_i,  // N*32: seed of column c at [32c +: 32]\n"
        "  output logic %-9s out_valid_o,\n"
        "  output logic %-9s out_data_o,   // N*32: column c at [32c +: 32]\n"
        "  output logic %-9s bank_busy_o   // bit b: bank b must not be loaded\n"
        ");\n"
        "\n",
        w16, "", "", w16, w32, "", w32, "[1:0]");
    sb_printf(sb,
        "  localparam int N          = %u;\n"
        "  localparam int MulStages  = %u;  // product registers per PE\n"
        "  localparam int AddStages  = %u;  // cycles a partial sum spends in one PE\n"
        "  localparam int Latency    = %u;  // L\n",
        n, cfg->mul_stages, cfg->add_stages, cfg->latency);
    if (cfg->busy)
        sb_printf(sb, "  localparam int BusyCycles = %u;  // B\n", cfg->busy);
    sb_puts(sb, "\n");
    sb_printf(sb,
        "  // ---- Valid pipe: valid_q[k] is act_valid_i of k+1 cycles ago ----\n"
        "  logic [Latency-1:0] valid_q;\n"
        "  always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "    if (!rst_ni) begin\n"
        "      valid_q <= '0;\n"
        "    end else begin\n"
        "      valid_q <= {valid_q[Latency-2:0], act_valid_i};\n"
        "    end\n"
        "  end\n"
        "  assign out_valid_o = valid_q[Latency-1];\n"
        "\n"
        "  // ---- Activations: input register, then AddStages*r skew registers for row r ----\n"
        "  // (Shift registers here are packed vectors shifted as a whole, not loops: procedural\n"
        "  // loops longer than 64 iterations are not unrolled by verilator and then fail.)\n"
        "  wire %s[15:0] row_act%s;\n"
        "  wire %s       row_bank%s;\n"
        "  wire %s       row_valid%s;  // the PEs' clock enable: valid_q at the same delay\n"
        "\n"
        "  for (genvar r = 0; r < N; r++) begin : g_act\n"
        "    localparam int Depth = 1 + AddStages * r;\n"
        "    logic [Depth-1:0][16:0] skew_q;  // {bank, activation} per stage; [0]: input register\n"
        "    if (Depth == 1) begin : g_reg\n"
        "      always_ff @(posedge clk_i) begin\n"
        "        skew_q <= {act_bank_i, act_data_i[16*r +: 16]};\n"
        "      end\n"
        "    end else begin : g_shift\n"
        "      always_ff @(posedge clk_i) begin\n"
        "        skew_q <= {skew_q[Depth-2:0], act_bank_i, act_data_i[16*r +: 16]};\n"
        "      end\n"
        "    end\n"
        "    assign row_valid[r] = valid_q[Depth-1];  // act_valid_i of Depth cycles ago\n"
        "    assign row_bank[r]  = skew_q[Depth-1][16];\n"
        "    assign row_act[r]   = skew_q[Depth-1][15:0];\n"
        "  end\n"
        "\n"
        "  // ---- Seeds: input register, then MulStages + c skew registers for column c; ----\n"
        "  // ---- weight-load data                                                         ----\n"
        "  wire %s[31:0] seed%s;\n"
        "  wire %s[15:0] wl_top%s;\n"
        "\n"
        "  for (genvar c = 0; c < N; c++) begin : g_seed\n"
        "    localparam int Depth = 1 + MulStages + c;\n"
        "    logic [Depth-1:0][31:0] skew_q;  // per stage; [0] is the input register\n"
        "    if (Depth == 1) begin : g_reg\n"
        "      always_ff @(posedge clk_i) begin\n"
        "        skew_q <= psum_data_i[32*c +: 32];\n"
        "      end\n"
        "    end else begin : g_shift\n"
        "      always_ff @(posedge clk_i) begin\n"
        "        skew_q <= {skew_q[Depth-2:0], psum_data_i[32*c +: 32]};\n"
        "      end\n"
        "    end\n"
        "    assign seed[c]   = skew_q[Depth-1];\n"
        "    assign wl_top[c] = wl_data_i[16*c +: 16];\n"
        "  end\n"
        "\n"
        "  // ---- The array: row r takes weights and partial sums from row r-1 ----\n"
        "  for (genvar r = 0; r < N; r++) begin : g_row\n"
        "    wire [15:0] wl_row;  // a transposed load's data for this row's PE 0\n"
        "    wire %s[15:0] wl0_in%s;\n"
        "    wire %s[15:0] wl1_in%s;\n"
        "    wire %s[31:0] psum_in%s;\n"
        "    wire %s[15:0] wl0_out%s;\n"
        "    wire %s[15:0] wl1_out%s;\n"
        "    wire %s[31:0] psum_out%s;\n"
        "    if (r == 0) begin : g_top  // both banks see the load data; only wl_bank_i takes it\n"
        "      assign wl0_in  = wl_top;\n"
        "      assign wl1_in  = wl_top;\n"
        "      assign psum_in = seed;\n"
        "    end else begin : g_below\n"
        "      assign wl0_in  = g_row[r-1].wl0_out;\n"
        "      assign wl1_in  = g_row[r-1].wl1_out;\n"
        "      assign psum_in = g_row[r-1].psum_out;\n"
        "    end\n"
        "    assign wl_row = wl_data_i[16*r +: 16];\n"
        "    tpu_mxu_row #(\n"
        "      .N (N)\n"
        "    ) u_row (\n"
        "      .clk_i,\n"
        "      .wl_valid_i,\n"
        "      .wl_bank_i,\n"
        "      .wl_transpose_i,\n"
        "      .wl_row_i    (wl_row),\n"
        "      .wl0_i       (wl0_in),\n"
        "      .wl1_i       (wl1_in),\n"
        "      .wl0_o       (wl0_out),\n"
        "      .wl1_o       (wl1_out),\n"
        "      .act_valid_i (row_valid[r]),\n"
        "      .act_bank_i  (row_bank[r]),\n"
        "      .act_i       (row_act[r]),\n"
        "      .psum_i      (psum_in),\n"
        "      .psum_o      (psum_out)\n"
        "    );\n"
        "  end\n"
        "\n"
        "  // ---- Outputs: column c's result waits N-1-c cycles so that all leave together ----\n"
        "  for (genvar c = 0; c < N; c++) begin : g_out\n"
        "    logic unused_wl;  // the bottom row's weights go nowhere\n"
        "    assign unused_wl = ^{g_row[N-1].wl0_out[c], g_row[N-1].wl1_out[c]};\n"
        "    if (c < N - 1) begin : g_deskew\n"
        "      localparam int Depth = N - 1 - c;\n"
        "      logic [Depth-1:0][31:0] deskew_q;  // per stage\n"
        "      if (Depth == 1) begin : g_reg\n"
        "        always_ff @(posedge clk_i) begin\n"
        "          deskew_q <= g_row[N-1].psum_out[c];\n"
        "        end\n"
        "      end else begin : g_shift\n"
        "        always_ff @(posedge clk_i) begin\n"
        "          deskew_q <= {deskew_q[Depth-2:0], g_row[N-1].psum_out[c]};\n"
        "        end\n"
        "      end\n"
        "      assign out_data_o[32*c +: 32] = deskew_q[Depth-1];\n"
        "    end else begin : g_last\n"
        "      assign out_data_o[32*c +: 32] = g_row[N-1].psum_out[c];\n"
        "    end\n"
        "  end\n"
        "\n"
,
        PK, UP, PK, UP, PK, UP, PK, UP, PK, UP, PK, UP, PK, UP, PK, UP, PK, UP, PK, UP, PK, UP);
    if (cfg->busy == 0) {
        sb_puts(sb,
            "  // ---- Bank busy: B = 0, a bank is free again the cycle after its vector ----\n"
            "  assign bank_busy_o = 2'b00;\n"
            "\n");
    } else {
        const unsigned w = cfg->busy_w;
        sb_printf(sb,
            "  // ---- Bank busy: bank b is in use for B cycles after a vector tagged b ----\n"
            "  for (genvar b = 0; b < 2; b++) begin : g_bank\n"
            "    logic [%u:0] busy_d, busy_q;  // cycles bank b stays busy\n"
            "    always_comb begin\n"
            "      busy_d = busy_q;\n"
            "      if (act_valid_i && act_bank_i == 1'(b)) begin\n"
            "        busy_d = %u'(BusyCycles);\n"
            "      end else if (busy_q != %u'd0) begin\n"
            "        busy_d = busy_q - %u'd1;\n"
            "      end\n"
            "    end\n"
            "    always_ff @(posedge clk_i or negedge rst_ni) begin\n"
            "      if (!rst_ni) begin\n"
            "        busy_q <= %u'd0;\n"
            "      end else begin\n"
            "        busy_q <= busy_d;\n"
            "      end\n"
            "    end\n"
            "    assign bank_busy_o[b] = busy_q != %u'd0;\n"
            "  end\n"
            "\n",
            w - 1u, w, w, w, w, w);
    }
    sb_puts(sb, "endmodule\n");
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* tpu_mxu.f, tpu_mxu.vlt, tpu_params.h                                                      */

int emit_filelist(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb =
        gen_output_add(out, cfg, "tpu_mxu.f", "tpu_mxu.f: the MXU's sources in dependency order");
    if (!sb)
        return -1;
    sb_puts(sb,
        "// Names are relative to this file's directory: Verilator resolves them there with\n"
        "// `-F <dir>/tpu_mxu.f` (and also needs <dir>/tpu_mxu.vlt on its command line);\n"
        "// run `iverilog -g2012 -c tpu_mxu.f` from this directory.\n");
    for (size_t i = 0; i < sizeof mxu_sources / sizeof mxu_sources[0]; i++) {
        sb_printf(sb, "%s\n", mxu_sources[i]);
    }
    return 0;
}

int emit_vlt(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_mxu.vlt",
                                       "tpu_mxu.vlt: Verilator configuration for tpu_mxu");
    if (!sb)
        return -1;
    sb_puts(sb,
        "\n"
        "`verilator_config\n"
        "\n"
        "// Keep each row a module of its own: the N rows then share one copy of the verilated\n"
        "// code, so the model's C++ size and compile time grow with N, not N^2.\n"
        "no_inline -module \"tpu_mxu_row\"\n"
        "\n"
        "// Inline the PE into the row: flat per-row code, no per-PE calls. The PE computes its\n"
        "// arithmetic itself (the text of tpu_bf16_mul and tpu_fp32_add, under its clock\n"
        "// enables); the two modules, used by the VPU's units in tpu_core, are inlined too.\n"
        "inline -module \"tpu_pe\"\n"
        "inline -module \"tpu_bf16_mul\"\n"
        "inline -module \"tpu_fp32_add\"\n");
    sb_puts(sb,
        "\n"
        "// Lint waivers: none needed; `verilator --lint-only -Wall` is clean without any.\n");
    return 0;
}

/* internal: one "#define NAME VALUE  // comment" line, aligned */
static void define_line(struct strbuf *sb, const char *name, const char *value, const char *what)
{
    sb_printf(sb, "#define %-19s %-7s  // %s\n", name, value, what);
}

int emit_params_h(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_params.h",
                                       "tpu_params.h: the generated parameters, for C/C++ code");
    if (!sb)
        return -1;
    char v[5][16];
    snprintf(v[0], sizeof v[0], "%u", cfg->n);
    snprintf(v[1], sizeof v[1], "%u", cfg->latency);
    snprintf(v[2], sizeof v[2], "%u", cfg->busy);
    snprintf(v[3], sizeof v[3], "%u", cfg->cores);
    snprintf(v[4], sizeof v[4], "%u", cfg->pe_stages);
    sb_puts(sb, "#ifndef TPU_PARAMS_H\n#define TPU_PARAMS_H\n\n");
    define_line(sb, "TPU_MXU_N", v[0], "the array is N x N PEs");
    define_line(sb, "TPU_MXU_LATENCY", v[1],
                "L: act_valid_i in cycle t -> out_valid_o in cycle t + L");
    define_line(sb, "TPU_MXU_BUSY_CYCLES", v[2], "B: bank_busy_o[b] is 1 in cycles t+1 .. t+B");
    define_line(sb, "TPU_CORES", v[3], "cores on the board");
    define_line(sb, "TPU_PE_STAGES", v[4], "PE pipeline depth S (docs/mxu.md)");
    define_line(sb, "TPU_GEN_VERSION", "\"" GEN_VERSION "\"", "the gen that wrote this file");
    emit_vpu_params(sb, cfg);
    emit_core_params(sb, cfg);
    sb_puts(sb, "\n#endif\n");
    return 0;
}
