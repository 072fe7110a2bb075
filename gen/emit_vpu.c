/* SPDX-License-Identifier: Apache-2.0 */
/* The VPU top level: tpu_vpu (L lanes, the reduction tree and its accumulator), the file list
   tpu_vpu.f, the Verilator configuration tpu_vpu.vlt and the VPU lines of tpu_params.h.
   Structure, ports and timing: docs/vpu.md, "RTL". The lanes and units are in
   emit_vpu_units.c; every number that depends on L comes from struct gen_config. */
#include <stdio.h>

#include "emit.h"

/* The VPU's files in dependency order (tpu_fp32_add.sv is the MXU's adder). */
static const char *const vpu_sources[] = {
    "tpu_fp32_add.sv",     "tpu_fp32_mul.sv",       "tpu_fp32_maxmin.sv",
    "tpu_vpu_delay.sv",    "tpu_vpu_rom_exp2.sv",   "tpu_vpu_rom_recip.sv",
    "tpu_vpu_rom_log.sv",  "tpu_vpu_rom_rsqrt.sv",  "tpu_vpu_rom_erf.sv",
    "tpu_vpu_exp.sv",
    "tpu_vpu_recip.sv",    "tpu_vpu_log.sv",        "tpu_vpu_rsqrt.sv",
    "tpu_vpu_lane.sv",
    "tpu_vpu_red_node.sv", "tpu_vpu.sv",
};

/* internal: the tree levels when L >= 2 */
static void emit_vpu_tree(struct strbuf *sb)
{
    sb_puts(sb,
        "  // ---- Tree: level l = 1..Levels has W >> l nodes; node j of level l combines\n"
        "  // nodes 2j (left operand) and 2j+1 of level l-1; every level is registered ----\n"
        "  for (genvar l = 1; l <= Levels; l++) begin : g_lvl\n"
        "    localparam int Nodes = W >> l;\n"
        "    logic [2*Nodes-1:0][31:0] src;   // level l-1\n"
        "    logic [Nodes-1:0][31:0]   node;\n"
        "    logic [1:0]               op_l;\n"
        "    logic [Nodes-1:0][31:0]   v_q;\n"
        "    logic                     rv_q, first_q, last_q;\n"
        "    logic [1:0]               op_q;\n"
        "    logic                     rv_d;\n"
        "    if (l == 1) begin : g_leaves\n"
        "      assign src  = leaf;\n"
        "      assign op_l = red_op;\n"
        "      assign rv_d = red_rv;\n"
        "      always_ff @(posedge clk_i) begin\n"
        "        op_q    <= red_op;\n"
        "        first_q <= red_first;\n"
        "        last_q  <= red_last;\n"
        "      end\n"
        "    end else begin : g_inner\n"
        "      assign src  = g_lvl[l-1].v_q;\n"
        "      assign op_l = g_lvl[l-1].op_q;\n"
        "      assign rv_d = g_lvl[l-1].rv_q;\n"
        "      always_ff @(posedge clk_i) begin\n"
        "        op_q    <= g_lvl[l-1].op_q;\n"
        "        first_q <= g_lvl[l-1].first_q;\n"
        "        last_q  <= g_lvl[l-1].last_q;\n"
        "      end\n"
        "    end\n"
        "    for (genvar j = 0; j < Nodes; j++) begin : g_node\n"
        "      tpu_vpu_red_node u_node (\n"
        "        .op_i (op_l),\n"
        "        .a_i  (src[2*j]),\n"
        "        .b_i  (src[2*j+1]),\n"
        "        .y_o  (node[j])\n"
        "      );\n"
        "    end\n"
        "    always_ff @(posedge clk_i) begin\n"
        "      v_q <= node;\n"
        "    end\n"
        "    // the chunk-valid bit is control: reset, like the valid pipe\n"
        "    always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "      if (!rst_ni) begin\n"
        "        rv_q <= 1'b0;\n"
        "      end else begin\n"
        "        rv_q <= rv_d;\n"
        "      end\n"
        "    end\n"
        "  end\n"
        "  assign tree       = g_lvl[Levels].v_q[0];\n"
        "  assign tree_rv    = g_lvl[Levels].rv_q;\n"
        "  assign tree_op    = g_lvl[Levels].op_q;\n"
        "  assign tree_first = g_lvl[Levels].first_q;\n"
        "  assign tree_last  = g_lvl[Levels].last_q;\n"
        "\n");
}

int emit_vpu(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_vpu.sv",
                                       "tpu_vpu: the vector unit, L lanes (docs/vpu.md)");
    if (!sb)
        return -1;
    const unsigned L = cfg->vpu_lanes, W = cfg->vpu_leaves, LV = cfg->vpu_levels;
    const unsigned lat = cfg->vpu_latency, rlat = cfg->vpu_red_latency;
    char levels_line[80];
    snprintf(levels_line, sizeof levels_line,
             "  localparam int Levels  = %u;  // log2(W): registered tree levels\n", LV);
    sb_printf(sb,
        "//\n"
        "// L = %u lanes (--vpu-lanes). One vector of L fp32 (or bf16) elements is accepted every\n"
        "// cycle, any opcode in any order; all arithmetic is bit for bit the C model's (vpu.h).\n"
        "//\n"
        "// Elementwise: valid_i in cycle t with op_i, the formats and a_i/b_i (lane i at\n"
        "//   [32i +: 32]; a bf16 element in the low 16 bits) -> valid_o and y_o in cycle t + %u\n"
        "//   for every opcode (one fixed latency, TPU_VPU_LATENCY). Opcodes: tpu_vpu_lane.sv.\n"
        "//   Broadcast (bias-add, row scaling): the driver puts the broadcast row on b_i.\n"
        "// Reduction: red_i = 1 sum, 2 max, 3 min (0: none) reduces the lanes of the vector's fp32\n"
        "//   results (use op_i = cvt to reduce the input itself, op_i = smexp for softmax's\n"
        "//   exp-and-sum pass); lanes with mask_i[i] = 0 count as the identity (-0, -Inf, +Inf).\n"
        "//   A fixed pairwise tree over W = %u leaves (L padded with the identity), %u registered\n"
        "//   level(s), then the accumulator: acc = op(first_i ? identity : acc, tree). For the\n"
        "//   vector with last_i = 1, red_valid_o = 1 and red_o = acc in cycle t + %u\n"
        "//   (TPU_VPU_RED_LATENCY). A row is the vectors from first_i to last_i, presented in\n"
        "//   consecutive valid cycles or not (the accumulator holds between them), one row at a time.\n"
        "//   Order: exactly vpu_reduce (docs/vpu.md, \"Reductions\").\n"
        "// Reset: rst_ni is active low, asserted asynchronously and released synchronously to\n"
        "//   clk_i. Only the valid bits are reset (valid_o's pipe, the tree's chunk-valid bits,\n"
        "//   red_valid_o); data, the opcode / first / last bits and the accumulator are not\n"
        "//   (nothing observable depends on them before they are written).\n"
        "// L is fixed by gen (a localparam); tpu_params.h gives C code the same numbers.\n"
        "\n"
        "module tpu_vpu (\n"
        "  input  logic            clk_i,\n"
        "  input  logic            rst_ni,\n"
        "  input  logic            valid_i,\n"
        "  input  logic [4:0]      op_i,       // opcode (tpu_vpu_lane.sv)\n"
        "  input  logic            fmt_a_i,    // 0 fp32, 1 bf16\n"
        "  input  logic            fmt_b_i,\n"
        "  input  logic            fmt_y_i,\n"
        "  input  logic [1:0]      red_i,      // 0 none, 1 sum, 2 max, 3 min\n"
        "  input  logic            first_i,    // first vector of a row: the accumulator restarts\n"
        "  input  logic            last_i,     // last vector of a row: red_valid_o later\n"
        "  input  logic [%u:0]     mask_i,     // lanes taking part in the reduction\n"
        "  input  logic [%u:0]   a_i,        // L*32\n"
        "  input  logic [%u:0]   b_i,\n"
        "  output logic            valid_o,\n"
        "  output logic [%u:0]   y_o,\n"
        "  output logic            red_valid_o,\n"
        "  output logic [31:0]     red_o\n"
        ");\n"
        "\n"
        "  localparam int L       = %u;\n"
        "  localparam int W       = %u;  // leaves of the tree: L rounded up to a power of two\n"
        "  localparam int Latency = %u;  // every elementwise opcode (tpu_vpu_lane)\n"
        "%s"
        "\n"
        "  // ---- Lanes ----\n"
        "  logic [L-1:0][31:0] yf;  // fp32 results, before the store\n"
        "  for (genvar i = 0; i < L; i++) begin : g_lane\n"
        "    tpu_vpu_lane u_lane (\n"
        "      .clk_i,\n"
        "      .op_i,\n"
        "      .fmt_a_i,\n"
        "      .fmt_b_i,\n"
        "      .fmt_y_i,\n"
        "      .a_i  (a_i[32*i +: 32]),\n"
        "      .b_i  (b_i[32*i +: 32]),\n"
        "      .y_o  (y_o[32*i +: 32]),\n"
        "      .yf_o (yf[i])\n"
        "    );\n"
        "  end\n"
        "\n"
        "  // ---- Valid pipe (reset); the reduction's control travels beside the lanes ----\n"
        "  logic [Latency-1:0] valid_q;\n"
        "  always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "    if (!rst_ni) begin\n"
        "      valid_q <= '0;\n"
        "    end else begin\n"
        "      valid_q <= {valid_q[Latency-2:0], valid_i};\n"
        "    end\n"
        "  end\n"
        "  assign valid_o = valid_q[Latency-1];\n"
        "\n"
        "  logic [1:0]   red_op;\n"
        "  logic         red_first, red_last, red_rv;\n"
        "  logic [L-1:0] red_mask;\n"
        "  tpu_vpu_delay #(\n"
        "    .W (L + 4),\n"
        "    .D (Latency)\n"
        "  ) u_dly_red (\n"
        "    .clk_i,\n"
        "    .d_i ({red_i, first_i, last_i, mask_i}),\n"
        "    .q_o ({red_op, red_first, red_last, red_mask})\n"
        "  );\n"
        "  assign red_rv = valid_q[Latency-1] && red_op != 2'd0;  // a chunk enters the tree\n"
        "\n"
        "  // ---- Leaves: masked lanes and the padding up to W hold the identity ----\n"
        "  logic [31:0] ident;\n"
        "  assign ident = (red_op == 2'd2) ? 32'hFF80_0000   // -Inf for max\n"
        "               : (red_op == 2'd3) ? 32'h7F80_0000   // +Inf for min\n"
        "               :                    32'h8000_0000;  // -0 for sum\n"
        "  logic [W-1:0][31:0] leaf;\n"
        "  for (genvar j = 0; j < W; j++) begin : g_leaf\n"
        "    if (j < L) begin : g_used\n"
        "      assign leaf[j] = red_mask[j] ? yf[j] : ident;\n"
        "    end else begin : g_pad\n"
        "      assign leaf[j] = ident;\n"
        "    end\n"
        "  end\n"
        "\n"
        "  logic [31:0] tree;\n"
        "  logic        tree_rv, tree_first, tree_last;\n"
        "  logic [1:0]  tree_op;\n"
        "\n",
        L, lat, W, LV, rlat, L - 1u, 32u * L - 1u, 32u * L - 1u, 32u * L - 1u, L, W, lat,
        LV ? levels_line : "");
    if (LV == 0) {
        sb_puts(sb,
            "  // ---- Tree: one lane, no levels ----\n"
            "  assign tree       = leaf[0];\n"
            "  assign tree_rv    = red_rv;\n"
            "  assign tree_op    = red_op;\n"
            "  assign tree_first = red_first;\n"
            "  assign tree_last  = red_last;\n"
            "\n");
    } else {
        emit_vpu_tree(sb);
    }
    sb_puts(sb,
        "  // ---- Accumulator: acc = op(first ? identity : acc, tree), a one-cycle loop ----\n"
        "  logic [31:0] acc_ident, acc_in, acc_d, acc_q;\n"
        "  logic        red_valid_q;\n"
        "  assign acc_ident = (tree_op == 2'd2) ? 32'hFF80_0000\n"
        "                   : (tree_op == 2'd3) ? 32'h7F80_0000\n"
        "                   :                     32'h8000_0000;\n"
        "  assign acc_in    = tree_first ? acc_ident : acc_q;\n"
        "  tpu_vpu_red_node u_acc (\n"
        "    .op_i (tree_op),\n"
        "    .a_i  (acc_in),\n"
        "    .b_i  (tree),\n"
        "    .y_o  (acc_d)\n"
        "  );\n"
        "  always_ff @(posedge clk_i) begin\n"
        "    if (tree_rv) begin\n"
        "      acc_q <= acc_d;\n"
        "    end\n"
        "  end\n"
        "  always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "    if (!rst_ni) begin\n"
        "      red_valid_q <= 1'b0;\n"
        "    end else begin\n"
        "      red_valid_q <= tree_rv && tree_last;\n"
        "    end\n"
        "  end\n"
        "  assign red_valid_o = red_valid_q;\n"
        "  assign red_o       = acc_q;\n"
        "\n"
        "endmodule\n");
    return 0;
}

int emit_vpu_filelist(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb =
        gen_output_add(out, cfg, "tpu_vpu.f", "tpu_vpu.f: the VPU's sources in dependency order");
    if (!sb)
        return -1;
    sb_puts(sb,
        "// Names are relative to this file's directory: Verilator resolves them there with\n"
        "// `-F <dir>/tpu_vpu.f` (and also needs <dir>/tpu_vpu.vlt on its command line);\n"
        "// run `iverilog -g2012 -c tpu_vpu.f` from this directory.\n");
    for (size_t i = 0; i < sizeof vpu_sources / sizeof vpu_sources[0]; i++)
        sb_printf(sb, "%s\n", vpu_sources[i]);
    return 0;
}

int emit_vpu_vlt(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_vpu.vlt",
                                       "tpu_vpu.vlt: Verilator configuration for tpu_vpu");
    if (!sb)
        return -1;
    sb_puts(sb,
        "\n"
        "`verilator_config\n"
        "\n"
        "// Keep the lane a module of its own: the L lanes share one copy of the verilated code,\n"
        "// so the model's C++ size and compile time hardly grow with L. The ROMs too: inlined,\n"
        "// each lane's ROM tables get their own numbered variables and the lanes' code differs.\n"
        "no_inline -module \"tpu_vpu_lane\"\n"
        "no_inline -module \"tpu_vpu_rom_exp2\"\n"
        "no_inline -module \"tpu_vpu_rom_recip\"\n"
        "no_inline -module \"tpu_vpu_rom_log\"\n"
        "no_inline -module \"tpu_vpu_rom_rsqrt\"\n"
        "no_inline -module \"tpu_vpu_rom_erf\"\n"
        "// The reduction tree's nodes: one shared copy instead of L - 1 inlined ones.\n"
        "no_inline -module \"tpu_vpu_red_node\"\n"
        "\n"
        "// Lint waivers: none needed; `verilator --lint-only -Wall` is clean without any.\n");
    return 0;
}

/* internal: one "#define NAME VALUE  // comment" line, aligned as in emit_params_h */
static void vpu_define(struct strbuf *sb, const char *name, unsigned value, const char *what)
{
    char v[16];
    snprintf(v, sizeof v, "%u", value);
    sb_printf(sb, "#define %-19s %-7s  // %s\n", name, v, what);
}

void emit_vpu_params(struct strbuf *sb, const struct gen_config *cfg)
{
    vpu_define(sb, "TPU_VPU_LANES", cfg->vpu_lanes, "VPU lanes L (elements per vector)");
    vpu_define(sb, "TPU_VPU_LATENCY", cfg->vpu_latency,
               "valid_i in cycle t -> valid_o in t + this, every VPU opcode");
    vpu_define(sb, "TPU_VPU_RED_LEVELS", cfg->vpu_levels, "registered levels of the reduction tree");
    vpu_define(sb, "TPU_VPU_RED_LATENCY", cfg->vpu_red_latency,
               "last_i in cycle t -> red_valid_o in t + this");
}
