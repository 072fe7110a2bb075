/* SPDX-License-Identifier: Apache-2.0 */
/* The board interconnect (docs/board.md): tpu_link (a credit-flow-controlled link with D
   pipeline registers each way and the receiver's FIFO), tpu_router (dimension-ordered,
   virtual cut-through with bubble flow control, round-robin) and tpu_noc (C routers joined
   into the configured ring or torus), plus tpu_noc.f. */
#include "emit.h"

#define NOC_MAX_FLITS 32u /* longest packet: header + 31 payload flits */

int emit_link(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_link.sv",
                                       "tpu_link: one direction of a board link, credit flow control");
    if (!sb)
        return -1;
    sb_puts(sb,
        "//\n"
        "// The sender side takes a flit (valid_i && ready_o) only while it holds a credit; the\n"
        "// counter starts at Depth, the receiver FIFO's size, and gets one back per flit popped\n"
        "// (valid_o && ready_i). Flits travel through Latency registers, credits back through\n"
        "// Latency registers: the chip-to-chip wire. The FIFO can therefore never overflow and no\n"
        "// flit is dropped or duplicated; with Depth >= 2*Latency+2 the link runs at one flit per\n"
        "// cycle. credits_o tells the router how much room the receiver has (virtual cut-through).\n"
        "\n"
        "module tpu_link #(\n"
        "  parameter int W       = 64,\n"
        "  parameter int Latency = 2,\n"
        "  parameter int Depth   = 64,\n"
        "  parameter int CntW    = $clog2(Depth + 1)\n"
        ") (\n"
        "  input  logic            clk_i,\n"
        "  input  logic            rst_ni,\n"
        "  // sender side\n"
        "  input  logic            valid_i,\n"
        "  input  logic            last_i,\n"
        "  input  logic [W-1:0]    flit_i,\n"
        "  output logic            ready_o,\n"
        "  output logic [CntW-1:0] credits_o,\n"
        "  // receiver side\n"
        "  output logic            valid_o,\n"
        "  output logic            last_o,\n"
        "  output logic [W-1:0]    flit_o,\n"
        "  input  logic            ready_i\n"
        ");\n"
        "\n"
        "  localparam int AW = (Depth > 1) ? $clog2(Depth) : 1;\n"
        "\n"
        "  logic            send, pop, credit_ret;\n"
        "  logic [CntW-1:0] credits_d, credits_q;\n"
        "\n"
        "  assign ready_o   = credits_q != '0;\n"
        "  assign credits_o = credits_q;\n"
        "  assign send      = valid_i && ready_o;\n"
        "  assign credits_d = credits_q - CntW'(send) + CntW'(credit_ret);\n"
        "\n"
        "  always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "    if (!rst_ni) begin\n"
        "      credits_q <= CntW'(Depth);\n"
        "    end else begin\n"
        "      credits_q <= credits_d;\n"
        "    end\n"
        "  end\n"
        "\n"
        "  // Forward pipeline: stage 0 is the sender's flit, stage Latency arrives. Credit\n"
        "  // pipeline: stage 0 is a pop, stage Latency reaches the counter. (Nets: each stage is\n"
        "  // driven by one assign.)\n"
        "  wire [Latency:0]      fwd_valid;\n"
        "  wire [Latency:0][W:0] fwd_data;\n"
        "  wire [Latency:0]      bwd_credit;\n"
        "\n"
        "  assign fwd_valid[0]  = send;\n"
        "  assign fwd_data[0]   = {last_i, flit_i};\n"
        "  assign bwd_credit[0] = pop;\n"
        "  assign credit_ret    = bwd_credit[Latency];\n"
        "\n"
        "  for (genvar s = 0; s < Latency; s++) begin : g_wire\n"
        "    logic       valid_q, credit_q;\n"
        "    logic [W:0] data_q;\n"
        "    always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "      if (!rst_ni) begin\n"
        "        valid_q  <= 1'b0;\n"
        "        credit_q <= 1'b0;\n"
        "      end else begin\n"
        "        valid_q  <= fwd_valid[s];\n"
        "        credit_q <= bwd_credit[s];\n"
        "      end\n"
        "    end\n"
        "    // Data is not reset: it is only looked at with its valid bit.\n"
        "    always_ff @(posedge clk_i) begin\n"
        "      if (fwd_valid[s]) begin\n"
        "        data_q <= fwd_data[s];\n"
        "      end\n"
        "    end\n"
        "    assign fwd_valid[s+1]  = valid_q;\n"
        "    assign fwd_data[s+1]   = data_q;\n"
        "    assign bwd_credit[s+1] = credit_q;\n"
        "  end\n"
        "\n"
        "  // Receiver FIFO: Depth entries, a read-first register file.\n"
        "  logic [W:0]  mem_q [Depth];\n"
        "  logic [AW-1:0] wptr_q, rptr_q;\n"
        "  logic [CntW-1:0] count_q;\n"
        "  logic push;\n"
        "\n"
        "  assign push    = fwd_valid[Latency];\n"
        "  assign valid_o = count_q != '0;\n"
        "  assign pop     = valid_o && ready_i;\n"
        "  assign {last_o, flit_o} = mem_q[rptr_q];\n"
        "\n"
        "  always_ff @(posedge clk_i) begin\n"
        "    if (push) begin\n"
        "      mem_q[wptr_q] <= fwd_data[Latency];\n"
        "    end\n"
        "  end\n"
        "\n"
        "  always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "    if (!rst_ni) begin\n"
        "      wptr_q  <= '0;\n"
        "      rptr_q  <= '0;\n"
        "      count_q <= '0;\n"
        "    end else begin\n"
        "      if (push) begin\n"
        "        wptr_q <= (wptr_q == AW'(Depth - 1)) ? '0 : wptr_q + 1'b1;\n"
        "      end\n"
        "      if (pop) begin\n"
        "        rptr_q <= (rptr_q == AW'(Depth - 1)) ? '0 : rptr_q + 1'b1;\n"
        "      end\n"
        "      count_q <= count_q + CntW'(push) - CntW'(pop);\n"
        "    end\n"
        "  end\n"
        "\n"
        "endmodule\n");
    return 0;
}

int emit_router(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_router.sv",
                                       "tpu_router: one core's router on the ring or torus");
    if (!sb)
        return -1;
    sb_puts(sb,
        "//\n"
        "// Ports: 0 local, 1 east, 2 west (NPorts = 3, ring) and 3 south, 4 north (NPorts = 5,\n"
        "// torus). Inputs are FIFO heads (valid/last/flit, popped with ready); outputs feed links\n"
        "// (ready = a credit, credits = room downstream) or, on port 0, the core (ready only).\n"
        "// Header flit: [5:0] dst, [11:6] src, [15:12] type, [31:16] len (payload flits).\n"
        "// Routing is dimension ordered (row first, the shorter way round each ring); switching\n"
        "// is virtual cut-through: a header starts only when the next FIFO has room for the\n"
        "// whole packet, and for one more packet (MaxFlits) when it enters a ring (from the core,\n"
        "// or turning from the row into the column): bubble flow control, no deadlock. An\n"
        "// output, once granted, carries its packet to the last flit; free outputs grant\n"
        "// round-robin. The header goes out in the cycle it is granted (no added latency).\n"
        "\n"
        "module tpu_router #(\n"
        "  parameter int W        = 64,\n"
        "  parameter int NPorts   = 3,\n"
        "  parameter int Id       = 0,\n"
        "  parameter int Rows     = 1,\n"
        "  parameter int Cols     = 4,\n"
        "  parameter int MaxFlits = 32,\n"
        "  parameter int CntW     = 7\n"
        ") (\n"
        "  input  logic                         clk_i,\n"
        "  input  logic                         rst_ni,\n"
        "  input  logic [NPorts-1:0]            in_valid_i,\n"
        "  input  logic [NPorts-1:0]            in_last_i,\n"
        "  input  logic [NPorts-1:0][W-1:0]     in_flit_i,\n"
        "  output logic [NPorts-1:0]            in_ready_o,\n"
        "  output logic [NPorts-1:0]            out_valid_o,\n"
        "  output logic [NPorts-1:0]            out_last_o,\n"
        "  output logic [NPorts-1:0][W-1:0]     out_flit_o,\n"
        "  input  logic [NPorts-1:0]            out_ready_i,\n"
        "  input  logic [NPorts-1:0][CntW-1:0]  out_credits_i\n"
        ");\n"
        "\n"
        "  localparam int PW     = $clog2(NPorts);\n"
        "  localparam int MyRow  = Id / Cols;\n"
        "  localparam int MyCol  = Id % Cols;\n"
        "  localparam int NeedW  = 18;  // len (16 bits) + 1 + MaxFlits\n"
        "\n"
        "  // The local port's credits are not used (the core hands over with ready).\n"
        "  logic unused_credits0;\n"
        "  assign unused_credits0 = ^out_credits_i[0];\n"
        "\n"
        "  // Where the header at each input's head goes, and the room it needs there.\n"
        "  logic [NPorts-1:0][PW-1:0]    route;\n"
        "  logic [NPorts-1:0][NeedW-1:0] need;\n"
        "\n"
        "  for (genvar gi = 0; gi < NPorts; gi++) begin : g_route\n"
        "    // ids and distances fit 7 bits (C <= 64)\n"
        "    logic [6:0] dst, drow, dcol, dx, dy;\n"
        "    logic [2:0] out_port;\n"
        "    logic       entering;\n"
        "    assign dst  = {1'b0, in_flit_i[gi][5:0]};\n"
        "    assign dcol = dst % 7'(Cols);\n"
        "    assign drow = (dst / 7'(Cols)) % 7'(Rows);\n"
        "    assign dx   = (dcol + 7'(Cols - MyCol)) % 7'(Cols);\n"
        "    assign dy   = (drow + 7'(Rows - MyRow)) % 7'(Rows);\n"
        "    assign out_port = (dx != '0) ? ((dx <= 7'(Cols / 2)) ? 3'd1 : 3'd2) :\n"
        "                      (dy != '0) ? ((dy <= 7'(Rows / 2)) ? 3'd3 : 3'd4) : 3'd0;\n"
        "    // Entering a ring: from the core, or from the row (ports 1, 2) into the column.\n"
        "    assign entering = (out_port != 3'd0) &&\n"
        "                      ((gi == 0) || ((gi <= 2) != (out_port <= 3'd2)));\n"
        "    assign route[gi] = PW'(out_port);\n"
        "    assign need[gi]  = NeedW'(in_flit_i[gi][31:16]) + NeedW'(1) +\n"
        "                       (entering ? NeedW'(MaxFlits) : NeedW'(0));\n"
        "  end\n"
        "\n"
        "  logic [NPorts-1:0]         locked_d, locked_q;  // output carries a packet\n"
        "  logic [NPorts-1:0][PW-1:0] owner_d, owner_q;    // ... from this input\n"
        "  logic [NPorts-1:0][PW-1:0] rr_d, rr_q;          // last input granted\n"
        "  logic [NPorts-1:0]         busy_d, busy_q;      // input's head is a payload flit\n"
        "\n"
        "  always_comb begin\n"
        "    int unsigned src, sel, cand;\n"
        "    logic found;\n"
        "    src         = 0;\n"
        "    sel         = 0;\n"
        "    cand        = 0;\n"
        "    found       = 1'b0;\n"
        "    locked_d    = locked_q;\n"
        "    owner_d     = owner_q;\n"
        "    rr_d        = rr_q;\n"
        "    busy_d      = busy_q;\n"
        "    in_ready_o  = '0;\n"
        "    out_valid_o = '0;\n"
        "    out_last_o  = '0;\n"
        "    out_flit_o  = '0;\n"
        "    for (int o = 0; o < NPorts; o++) begin\n"
        "      if (locked_q[o]) begin\n"
        "        src            = 32'(owner_q[o]);\n"
        "        out_valid_o[o] = in_valid_i[src];\n"
        "        out_last_o[o]  = in_last_i[src];\n"
        "        out_flit_o[o]  = in_flit_i[src];\n"
        "        in_ready_o[src] = out_ready_i[o];\n"
        "        if (in_valid_i[src] && out_ready_i[o] && in_last_i[src]) begin\n"
        "          locked_d[o] = 1'b0;\n"
        "          busy_d[src] = 1'b0;\n"
        "        end\n"
        "      end else begin\n"
        "        found = 1'b0;\n"
        "        sel   = 0;\n"
        "        for (int k = 1; k <= NPorts; k++) begin\n"
        "          // rr_q[o] < NPorts and k <= NPorts: one conditional subtract is the\n"
        "          // modulo (a % by a constant that is not a power of two synthesises to a\n"
        "          // divider: ~20 k LUTs per router in Yosys).\n"
        "          cand = 32'(rr_q[o]) + 32'(k);\n"
        "          if (cand >= 32'(NPorts)) cand = cand - 32'(NPorts);\n"
        "          if (!found && in_valid_i[cand] && !busy_q[cand] && (32'(route[cand]) == o) &&\n"
        "              out_ready_i[o] &&\n"
        "              ((o == 0) || (NeedW'(out_credits_i[o]) >= need[cand]))) begin\n"
        "            found = 1'b1;\n"
        "            sel   = cand;\n"
        "          end\n"
        "        end\n"
        "        if (found) begin\n"
        "          out_valid_o[o]  = 1'b1;\n"
        "          out_last_o[o]   = in_last_i[sel];\n"
        "          out_flit_o[o]   = in_flit_i[sel];\n"
        "          in_ready_o[sel] = 1'b1;\n"
        "          rr_d[o]         = PW'(sel);\n"
        "          if (!in_last_i[sel]) begin\n"
        "            locked_d[o] = 1'b1;\n"
        "            owner_d[o]  = PW'(sel);\n"
        "            busy_d[sel] = 1'b1;\n"
        "          end\n"
        "        end\n"
        "      end\n"
        "    end\n"
        "  end\n"
        "\n"
        "  always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "    if (!rst_ni) begin\n"
        "      locked_q <= '0;\n"
        "      owner_q  <= '0;\n"
        "      rr_q     <= '0;\n"
        "      busy_q   <= '0;\n"
        "    end else begin\n"
        "      locked_q <= locked_d;\n"
        "      owner_q  <= owner_d;\n"
        "      rr_q     <= rr_d;\n"
        "      busy_q   <= busy_d;\n"
        "    end\n"
        "  end\n"
        "\n"
        "endmodule\n");
    return 0;
}

/* internal: neighbour of core id through output port p (1 east, 2 west, 3 south, 4 north) */
static unsigned neighbour(unsigned id, unsigned p, unsigned rows, unsigned cols)
{
    unsigned r = id / cols, c = id % cols;
    switch (p) {
    case 1: c = (c + 1) % cols; break;
    case 2: c = (c + cols - 1) % cols; break;
    case 3: r = (r + 1) % rows; break;
    default: r = (r + rows - 1) % rows; break;
    }
    return r * cols + c;
}

int emit_noc(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_noc.sv",
                                       "tpu_noc: the board interconnect, C routers and their links");
    if (!sb)
        return -1;
    unsigned c = cfg->cores, rows = cfg->torus ? cfg->torus_rows : 1u;
    unsigned cols = cfg->torus ? cfg->torus_cols : c, np = cfg->torus ? 5u : 3u;
    unsigned d = cfg->link_latency;
    /* room for two packets (bubble flow control) plus the credit round trip: full rate */
    unsigned depth = 2u * NOC_MAX_FLITS + 2u * d + 2u;
    sb_printf(sb,
        "//\n"
        "// Topology: %s, %u x %u (core id = row * %u + column), %u-bit links, %u register(s)\n"
        "// each way, receiver FIFOs of %u flits (docs/board.md). Output port p of core i feeds\n"
        "// the input port of its neighbour that faces back (east -> west, south -> north).\n"
        "// Core i's local port: inj_* into the network (valid/ready), ej_* out of it.\n"
        "\n"
        "module tpu_noc #(\n"
        "  parameter int C        = %u,\n"
        "  parameter int W        = %u,\n"
        "  parameter int Latency  = %u,\n"
        "  parameter int NPorts   = %u,\n"
        "  parameter int Rows     = %u,\n"
        "  parameter int Cols     = %u,\n"
        "  parameter int MaxFlits = %u,\n"
        "  parameter int Depth    = %u,\n"
        "  parameter int CntW     = $clog2(Depth + 1)\n"
        ") (\n"
        "  input  logic                 clk_i,\n"
        "  input  logic                 rst_ni,\n"
        "  input  logic [C-1:0]         inj_valid_i,\n"
        "  input  logic [C-1:0]         inj_last_i,\n"
        "  input  logic [C-1:0][W-1:0]  inj_flit_i,\n"
        "  output logic [C-1:0]         inj_ready_o,\n"
        "  output logic [C-1:0]         ej_valid_o,\n"
        "  output logic [C-1:0]         ej_last_o,\n"
        "  output logic [C-1:0][W-1:0]  ej_flit_o,\n"
        "  input  logic [C-1:0]         ej_ready_i\n"
        ");\n"
        "\n",
        cfg->torus ? "torus" : "ring", rows, cols, cols, cfg->link_bits, d, depth, c,
        cfg->link_bits, d, np, rows, cols, NOC_MAX_FLITS, depth);
    for (unsigned i = 0; i < c; i++)
        sb_printf(sb,
            "  logic [NPorts-1:0]           r%u_in_valid, r%u_in_last, r%u_in_ready;\n"
            "  logic [NPorts-1:0][W-1:0]    r%u_in_flit;\n"
            "  logic [NPorts-1:0]           r%u_out_valid, r%u_out_last, r%u_out_ready;\n"
            "  logic [NPorts-1:0][W-1:0]    r%u_out_flit;\n"
            "  logic [NPorts-1:0][CntW-1:0] r%u_out_credits;\n",
            i, i, i, i, i, i, i, i, i);
    for (unsigned i = 0; i < c; i++) {
        sb_printf(sb,
            "\n"
            "  // ---- core %u ----\n"
            "  assign r%u_in_valid[0]    = inj_valid_i[%u];\n"
            "  assign r%u_in_last[0]     = inj_last_i[%u];\n"
            "  assign r%u_in_flit[0]     = inj_flit_i[%u];\n"
            "  assign inj_ready_o[%u]     = r%u_in_ready[0];\n"
            "  assign ej_valid_o[%u]      = r%u_out_valid[0];\n"
            "  assign ej_last_o[%u]       = r%u_out_last[0];\n"
            "  assign ej_flit_o[%u]       = r%u_out_flit[0];\n"
            "  assign r%u_out_ready[0]   = ej_ready_i[%u];\n"
            "  assign r%u_out_credits[0] = '0;\n"
            "\n"
            "  tpu_router #(\n"
            "    .W(W), .NPorts(NPorts), .Id(%u), .Rows(Rows), .Cols(Cols), .MaxFlits(MaxFlits),\n"
            "    .CntW(CntW)\n"
            "  ) u_router_%u (\n"
            "    .clk_i, .rst_ni,\n"
            "    .in_valid_i(r%u_in_valid), .in_last_i(r%u_in_last), .in_flit_i(r%u_in_flit),\n"
            "    .in_ready_o(r%u_in_ready),\n"
            "    .out_valid_o(r%u_out_valid), .out_last_o(r%u_out_last), .out_flit_o(r%u_out_flit),\n"
            "    .out_ready_i(r%u_out_ready), .out_credits_i(r%u_out_credits)\n"
            "  );\n",
            i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i);
        for (unsigned p = 1; p < np; p++) {
            unsigned nb = neighbour(i, p, rows, cols);
            unsigned back = (p % 2u) ? p + 1u : p - 1u; /* east <-> west, south <-> north */
            sb_printf(sb,
                "\n"
                "  tpu_link #(.W(W), .Latency(Latency), .Depth(Depth), .CntW(CntW)) u_link_%u_%u (\n"
                "    .clk_i, .rst_ni,\n"
                "    .valid_i(r%u_out_valid[%u]), .last_i(r%u_out_last[%u]), .flit_i(r%u_out_flit[%u]),\n"
                "    .ready_o(r%u_out_ready[%u]), .credits_o(r%u_out_credits[%u]),\n"
                "    .valid_o(r%u_in_valid[%u]), .last_o(r%u_in_last[%u]), .flit_o(r%u_in_flit[%u]),\n"
                "    .ready_i(r%u_in_ready[%u])\n"
                "  );\n",
                i, p, i, p, i, p, i, p, i, p, i, p, nb, back, nb, back, nb, back, nb, back);
        }
    }
    sb_puts(sb, "\nendmodule\n");
    return 0;
}

int emit_noc_filelist(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_noc.f",
                                       "tpu_noc.f: the board interconnect's sources");
    if (!sb)
        return -1;
    sb_puts(sb,
        "// Names are relative to this file's directory: verilator tpu_noc.vlt -F tpu_noc.f\n"
        "tpu_link.sv\ntpu_router.sv\ntpu_noc.sv\n");
    return 0;
}

int emit_noc_vlt(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_noc.vlt",
                                       "tpu_noc.vlt: Verilator configuration for tpu_noc");
    if (!sb)
        return -1;
    sb_puts(sb,
        "\n"
        "`verilator_config\n"
        "\n"
        "// No waivers: tpu_link, tpu_router and tpu_noc are clean under verilator -Wall. Give this\n"
        "// file to Verilator with tpu_noc.f all the same, so that any later waiver applies.\n");
    return 0;
}
