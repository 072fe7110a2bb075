/* SPDX-License-Identifier: Apache-2.0 */
/* The board top (docs/board.md "The board top"): tpu_board (C tpu_core instances on one
   tpu_noc, the shape tied to constants), tpu_board_axil (the AXI4-Lite window decoder: core
   i's register map at i * 0x100000), tpu_board.f and tpu_board.vlt. Written with the core. */
#include <stdio.h>
#include <string.h>

#include "tpu/isa.h"

#include "emit.h"

/* internal: ceil(log2(c)), 0 for c = 1 */
static unsigned sel_bits(unsigned c)
{
    unsigned b = 0;
    while ((1u << b) < c)
        b++;
    return b;
}

/* the text below writes the per-core address as [19:0] and the window as bits 19 and up */
_Static_assert(GEN_AXIL_ADDR_BITS == 20u, "tpu_board_axil's text assumes 20-bit core windows");

static int emit_board_axil(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_board_axil.sv",
                                       "tpu_board_axil: the board's AXI4-Lite window decoder");
    if (!sb)
        return -1;
    unsigned c = cfg->cores, sb_w = sel_bits(c);
    sb_printf(sb,
        "//\n"
        "// One AXI4-Lite slave (s_axil_*, AddrW = 20 + ceil(log2 C) byte address bits) in front\n"
        "// of C AXI4-Lite masters (m_*, 20-bit addresses), one per core: core i's register map\n"
        "// (docs/isa.md) is the window [i * 0x100000, i * 0x100000 + 0xFFFFF], chosen by the\n"
        "// address bits above 19. One transaction at a time per direction, every handshake\n"
        "// registered: a write collects AW and W (in any order), issues both to the chosen\n"
        "// core, takes its B and returns it; a read issues AR, takes R and returns it.\n"
        "// A window past the last core (C not a power of two) is answered here as an unmapped\n"
        "// register of a core is: writes ignored, reads 0, OKAY.\n"
        "\n"
        "module tpu_board_axil #(\n"
        "  parameter int C     = %u,\n"
        "  parameter int AddrW = %u\n"
        ") (\n"
        "  input  logic                clk_i,\n"
        "  input  logic                rst_ni,\n"
        "  // the board's slave port\n",
        c, GEN_AXIL_ADDR_BITS + sb_w);
    emit_axil_ports(sb, "[AddrW-1:0]", 15);
    sb_printf(sb,
        "  // one master port per core\n"
        "  output logic [C-1:0][19:0]  m_awaddr,\n"
        "  output logic [C-1:0]        m_awvalid,\n"
        "  input  logic [C-1:0]        m_awready,\n"
        "  output logic [C-1:0][31:0]  m_wdata,\n"
        "  output logic [C-1:0][3:0]   m_wstrb,\n"
        "  output logic [C-1:0]        m_wvalid,\n"
        "  input  logic [C-1:0]        m_wready,\n"
        "  input  logic [C-1:0][1:0]   m_bresp,\n"
        "  input  logic [C-1:0]        m_bvalid,\n"
        "  output logic [C-1:0]        m_bready,\n"
        "  output logic [C-1:0][19:0]  m_araddr,\n"
        "  output logic [C-1:0]        m_arvalid,\n"
        "  input  logic [C-1:0]        m_arready,\n"
        "  input  logic [C-1:0][31:0]  m_rdata,\n"
        "  input  logic [C-1:0][1:0]   m_rresp,\n"
        "  input  logic [C-1:0]        m_rvalid,\n"
        "  output logic [C-1:0]        m_rready\n"
        ");\n"
        "\n"
        "  localparam int SelW = %u;\n"
        "\n",
        sb_w ? sb_w : 1u);
    /* the window of an address, and whether a core sits there */
    if (sb_w == 0)
        sb_puts(sb,
            "  // one core: every address is its window\n"
            "  logic [SelW-1:0] aw_sel, ar_sel;\n"
            "  logic            aw_hit, ar_hit;\n"
            "  assign aw_sel = 1'b0;\n"
            "  assign ar_sel = 1'b0;\n"
            "  assign aw_hit = 1'b1;\n"
            "  assign ar_hit = 1'b1;\n");
    else
        sb_printf(sb,
            "  logic [SelW-1:0] aw_sel, ar_sel;\n"
            "  logic            aw_hit, ar_hit;\n"
            "  assign aw_sel = aw_addr_q[AddrW-1:20];\n"
            "  assign ar_sel = ar_addr_q[AddrW-1:20];\n"
            "  assign aw_hit = %s;\n"
            "  assign ar_hit = %s;\n",
            (1u << sb_w) == c ? "1'b1" : "32'(aw_sel) < C",
            (1u << sb_w) == c ? "1'b1" : "32'(ar_sel) < C");
    sb_puts(sb,
        "\n"
        "  // ---- write: collect AW and W, issue both, wait for B, return it ----\n"
        "  typedef enum logic [1:0] { WCollect, WIssue, WResp, WBack } wstate_e;\n"
        "  wstate_e            wst_d, wst_q;\n"
        "  logic               aw_v_d, aw_v_q, w_v_d, w_v_q;      // held (WCollect)\n"
        "  logic               aw_p_d, aw_p_q, w_p_d, w_p_q;      // still to hand over (WIssue)\n"
        "  logic [AddrW-1:0]   aw_addr_d, aw_addr_q;\n"
        "  logic [31:0]        w_data_d, w_data_q;\n"
        "  logic [3:0]         w_strb_d, w_strb_q;\n"
        "  logic [1:0]         b_resp_d, b_resp_q;\n"
        "\n"
        "  assign s_axil_awready = (wst_q == WCollect) && !aw_v_q;\n"
        "  assign s_axil_wready  = (wst_q == WCollect) && !w_v_q;\n"
        "  assign s_axil_bvalid  = wst_q == WBack;\n"
        "  assign s_axil_bresp   = b_resp_q;\n"
        "\n"
        "  // the chosen core's handshakes, as one-hot vectors\n"
        "  logic [C-1:0] aw_oh, ar_oh;\n"
        "  assign aw_oh = C'(1) << aw_sel;\n"
        "  assign ar_oh = C'(1) << ar_sel;\n"
        "  assign m_awvalid = (wst_q == WIssue && aw_p_q) ? aw_oh : '0;\n"
        "  assign m_wvalid  = (wst_q == WIssue && w_p_q) ? aw_oh : '0;\n"
        "  assign m_bready  = (wst_q == WResp) ? aw_oh : '0;\n"
        "  for (genvar i = 0; i < C; i++) begin : g_fan\n"
        "    assign m_awaddr[i] = aw_addr_q[19:0];\n"
        "    assign m_wdata[i]  = w_data_q;\n"
        "    assign m_wstrb[i]  = w_strb_q;\n"
        "    assign m_araddr[i] = ar_addr_q[19:0];\n"
        "  end\n"
        "\n"
        "  always_comb begin\n"
        "    wst_d     = wst_q;\n"
        "    aw_v_d    = aw_v_q;\n"
        "    w_v_d     = w_v_q;\n"
        "    aw_p_d    = aw_p_q;\n"
        "    w_p_d     = w_p_q;\n"
        "    aw_addr_d = aw_addr_q;\n"
        "    w_data_d  = w_data_q;\n"
        "    w_strb_d  = w_strb_q;\n"
        "    b_resp_d  = b_resp_q;\n"
        "    case (wst_q)\n"
        "      WCollect: begin\n"
        "        if (s_axil_awvalid && s_axil_awready) begin\n"
        "          aw_v_d    = 1'b1;\n"
        "          aw_addr_d = s_axil_awaddr;\n"
        "        end\n"
        "        if (s_axil_wvalid && s_axil_wready) begin\n"
        "          w_v_d    = 1'b1;\n"
        "          w_data_d = s_axil_wdata;\n"
        "          w_strb_d = s_axil_wstrb;\n"
        "        end\n"
        "        if (aw_v_q && w_v_q) begin\n"
        "          aw_v_d = 1'b0;\n"
        "          w_v_d  = 1'b0;\n"
        "          if (aw_hit) begin\n"
        "            aw_p_d = 1'b1;\n"
        "            w_p_d  = 1'b1;\n"
        "            wst_d  = WIssue;\n"
        "          end else begin\n"
        "            b_resp_d = 2'b00;\n"
        "            wst_d    = WBack;\n"
        "          end\n"
        "        end\n"
        "      end\n"
        "      WIssue: begin\n"
        "        if (aw_p_q && m_awready[aw_sel]) aw_p_d = 1'b0;\n"
        "        if (w_p_q && m_wready[aw_sel]) w_p_d = 1'b0;\n"
        "        if (!aw_p_d && !w_p_d) wst_d = WResp;\n"
        "      end\n"
        "      WResp: begin\n"
        "        if (m_bvalid[aw_sel]) begin\n"
        "          b_resp_d = m_bresp[aw_sel];\n"
        "          wst_d    = WBack;\n"
        "        end\n"
        "      end\n"
        "      WBack: begin\n"
        "        if (s_axil_bready) wst_d = WCollect;\n"
        "      end\n"
        "      default: wst_d = WCollect;\n"
        "    endcase\n"
        "  end\n"
        "\n"
        "  always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "    if (!rst_ni) begin\n"
        "      wst_q     <= WCollect;\n"
        "      aw_v_q    <= 1'b0;\n"
        "      w_v_q     <= 1'b0;\n"
        "      aw_p_q    <= 1'b0;\n"
        "      w_p_q     <= 1'b0;\n"
        "      aw_addr_q <= '0;\n"
        "      w_data_q  <= '0;\n"
        "      w_strb_q  <= '0;\n"
        "      b_resp_q  <= '0;\n"
        "    end else begin\n"
        "      wst_q     <= wst_d;\n"
        "      aw_v_q    <= aw_v_d;\n"
        "      w_v_q     <= w_v_d;\n"
        "      aw_p_q    <= aw_p_d;\n"
        "      w_p_q     <= w_p_d;\n"
        "      aw_addr_q <= aw_addr_d;\n"
        "      w_data_q  <= w_data_d;\n"
        "      w_strb_q  <= w_strb_d;\n"
        "      b_resp_q  <= b_resp_d;\n"
        "    end\n"
        "  end\n"
        "\n"
        "  // ---- read: take AR, issue it, wait for R, return it ----\n"
        "  typedef enum logic [1:0] { RIdle, RIssue, RResp, RBack } rstate_e;\n"
        "  rstate_e            rst_d, rst_q;\n"
        "  logic [AddrW-1:0]   ar_addr_d, ar_addr_q;\n"
        "  logic [31:0]        r_data_d, r_data_q;\n"
        "  logic [1:0]         r_resp_d, r_resp_q;\n"
        "\n"
        "  assign s_axil_arready = rst_q == RIdle;\n"
        "  assign s_axil_rvalid  = rst_q == RBack;\n"
        "  assign s_axil_rdata   = r_data_q;\n"
        "  assign s_axil_rresp   = r_resp_q;\n"
        "\n"
        "  assign m_arvalid = (rst_q == RIssue && ar_hit) ? ar_oh : '0;\n"
        "  assign m_rready  = (rst_q == RResp) ? ar_oh : '0;\n"
        "\n"
        "  always_comb begin\n"
        "    rst_d     = rst_q;\n"
        "    ar_addr_d = ar_addr_q;\n"
        "    r_data_d  = r_data_q;\n"
        "    r_resp_d  = r_resp_q;\n"
        "    case (rst_q)\n"
        "      RIdle: begin\n"
        "        if (s_axil_arvalid) begin\n"
        "          ar_addr_d = s_axil_araddr;\n"
        "          rst_d     = RIssue;\n"
        "        end\n"
        "      end\n"
        "      RIssue: begin\n"
        "        if (!ar_hit) begin\n"
        "          r_data_d = '0;\n"
        "          r_resp_d = 2'b00;\n"
        "          rst_d    = RBack;\n"
        "        end else begin\n"
        "          if (m_arready[ar_sel]) rst_d = RResp;\n"
        "        end\n"
        "      end\n"
        "      RResp: begin\n"
        "        if (m_rvalid[ar_sel]) begin\n"
        "          r_data_d = m_rdata[ar_sel];\n"
        "          r_resp_d = m_rresp[ar_sel];\n"
        "          rst_d    = RBack;\n"
        "        end\n"
        "      end\n"
        "      RBack: begin\n"
        "        if (s_axil_rready) rst_d = RIdle;\n"
        "      end\n"
        "      default: rst_d = RIdle;\n"
        "    endcase\n"
        "  end\n"
        "\n"
        "  always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "    if (!rst_ni) begin\n"
        "      rst_q     <= RIdle;\n"
        "      ar_addr_q <= '0;\n"
        "      r_data_q  <= '0;\n"
        "      r_resp_q  <= '0;\n"
        "    end else begin\n"
        "      rst_q     <= rst_d;\n"
        "      ar_addr_q <= ar_addr_d;\n"
        "      r_data_q  <= r_data_d;\n"
        "      r_resp_q  <= r_resp_d;\n"
        "    end\n"
        "  end\n"
        "\n"
        "endmodule\n");
    return 0;
}

/* The per-core ports of tpu_board: name, direction and the width of one core's slice. */
struct board_port {
    const char *name;
    int out;           /* 1: output of the board */
    const char *width; /* "" for one bit, else the width expression */
};

static const struct board_port tr_ports[] = {
    { "tr_ub_we_o", 1, "" },    { "tr_ub_row_o", 1, "16" },  { "tr_ub_data_o", 1, "16*N" },
    { "tr_ub_seq_o", 1, "32" }, { "tr_acc_we_o", 1, "" },    { "tr_acc_row_o", 1, "16" },
    { "tr_acc_data_o", 1, "32*N" }, { "tr_acc_seq_o", 1, "32" }, { "tr_wm_we_o", 1, "" },
    { "tr_wm_row_o", 1, "16" }, { "tr_wm_data_o", 1, "16*N" }, { "tr_wm_seq_o", 1, "32" },
    { "tr_disp_valid_o", 1, "" }, { "tr_disp_seq_o", 1, "32" }, { "tr_disp_pc_o", 1, "16" },
    { "tr_disp_iter_o", 1, "ITER" }, { "tr_disp_insn_o", 1, "128" }, { "tr_err_seq_o", 1, "32" },
};

static void port_decl(struct strbuf *sb, const struct board_port *p, int last)
{
    char w[48] = "";
    if (strcmp(p->width, "ITER") == 0) /* the loop indices: 16 bits per level */
        snprintf(w, sizeof w, "[%u:0]", 16u * TPU_LOOP_LEVELS - 1u);
    else if (p->width[0])
        snprintf(w, sizeof w, "[%s-1:0]", p->width);
    char ty[64];
    snprintf(ty, sizeof ty, "[C-1:0]%s", w);
    sb_printf(sb, "  %s logic %-20s %s%s\n", p->out ? "output" : "input ", ty, p->name,
              last ? "" : ",");
}

static int emit_board(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_board.sv",
                                       "tpu_board: the board, C cores on the interconnect");
    if (!sb)
        return -1;
    unsigned c = cfg->cores, rows = cfg->torus ? cfg->torus_rows : 1u;
    unsigned cols = cfg->torus ? cfg->torus_cols : c;
    unsigned addr_w = GEN_AXIL_ADDR_BITS + sel_bits(c);
    sb_printf(sb,
        "//\n"
        "// docs/board.md \"The board top\": C = %u tpu_core instances (g_core[i].u_core, core_id_i = i)\n"
        "// on one tpu_noc (%s, %u x %u, %u-bit links, %u register(s) each way); core i's\n"
        "// noc_inj_*/noc_ej_* are the NoC's local port i. The shape is tied to constants here\n"
        "// (the core takes it as inputs, so one core design serves every board).\n"
        "// Host side: one AXI4-Lite slave (core i's registers at i * 0x100000, decoded by\n"
        "// tpu_board_axil), one AXI4 master per core (m_axi_*[i]: each core its own host memory)\n"
        "// and the cores' trace outputs tr_*[i] (simulation only).\n"
        "\n"
        "module tpu_board #(\n"
        "  parameter int N     = %u,\n"
        "  parameter int C     = %u,\n"
        "  parameter int W     = %u,\n"
        "  parameter int Rows  = %u,\n"
        "  parameter int Cols  = %u,\n"
        "  parameter int AddrW = %u,\n"
        "  parameter int AxiDataW = %u  // --axi-data-bits (docs/isa.md)\n"
        ") (\n"
        "  input  logic                clk_i,\n"
        "  input  logic                rst_ni,\n"
        "  // AXI4-Lite slave (control): core i's register map at i * 0x100000\n",
        c, cfg->torus ? "torus" : "ring", rows, cols, cfg->link_bits, cfg->link_latency,
        cfg->n, c, cfg->link_bits, rows, cols, addr_w, cfg->axi_data_bits);
    emit_axil_ports(sb, "[AddrW-1:0]", 15);
    sb_puts(sb, "  // AXI4 masters (data), one per core\n");
    for (size_t i = 0; i < GEN_AXI_PORTS; i++) { /* the cores' data masters, per core */
        const struct gen_axi_port *a = &gen_axi_ports[i];
        char w[16];
        gen_axi_width(w, sizeof w, a);
        const struct board_port p = { a->name, a->out, w };
        port_decl(sb, &p, 0);
    }
    sb_puts(sb,
        "  // link protection: bit i = an output link of core i's router is dead (docs/board.md\n"
        "  // \"Link faults\": a fault the link's replay could not recover from)\n"
        "  output logic [C-1:0]        link_err_o,\n");
    sb_puts(sb, "  // simulation trace, per core\n");
    for (size_t i = 0; i < sizeof tr_ports / sizeof tr_ports[0]; i++)
        port_decl(sb, &tr_ports[i], i + 1 == sizeof tr_ports / sizeof tr_ports[0]);
    sb_puts(sb,
        ");\n"
        "\n"
        "  localparam logic [6:0] TopoCores = 7'(C);\n"
        "  localparam logic [6:0] TopoRows  = 7'(Rows);\n"
        "  localparam logic [6:0] TopoCols  = 7'(Cols);\n"
        "\n"
        "  // ---- the window decoder: one AXI4-Lite port per core ----\n"
        "  logic [C-1:0][19:0] l_awaddr, l_araddr;\n"
        "  logic [C-1:0][31:0] l_wdata, l_rdata;\n"
        "  logic [C-1:0][3:0]  l_wstrb;\n"
        "  logic [C-1:0][1:0]  l_bresp, l_rresp;\n"
        "  logic [C-1:0]       l_awvalid, l_awready, l_wvalid, l_wready, l_bvalid, l_bready;\n"
        "  logic [C-1:0]       l_arvalid, l_arready, l_rvalid, l_rready;\n"
        "\n"
        "  tpu_board_axil #(\n"
        "    .C     (C),\n"
        "    .AddrW (AddrW)\n"
        "  ) u_axil (\n"
        "    .clk_i,\n"
        "    .rst_ni,\n"
        "    .s_axil_awaddr,\n"
        "    .s_axil_awvalid,\n"
        "    .s_axil_awready,\n"
        "    .s_axil_wdata,\n"
        "    .s_axil_wstrb,\n"
        "    .s_axil_wvalid,\n"
        "    .s_axil_wready,\n"
        "    .s_axil_bresp,\n"
        "    .s_axil_bvalid,\n"
        "    .s_axil_bready,\n"
        "    .s_axil_araddr,\n"
        "    .s_axil_arvalid,\n"
        "    .s_axil_arready,\n"
        "    .s_axil_rdata,\n"
        "    .s_axil_rresp,\n"
        "    .s_axil_rvalid,\n"
        "    .s_axil_rready,\n"
        "    .m_awaddr  (l_awaddr),\n"
        "    .m_awvalid (l_awvalid),\n"
        "    .m_awready (l_awready),\n"
        "    .m_wdata   (l_wdata),\n"
        "    .m_wstrb   (l_wstrb),\n"
        "    .m_wvalid  (l_wvalid),\n"
        "    .m_wready  (l_wready),\n"
        "    .m_bresp   (l_bresp),\n"
        "    .m_bvalid  (l_bvalid),\n"
        "    .m_bready  (l_bready),\n"
        "    .m_araddr  (l_araddr),\n"
        "    .m_arvalid (l_arvalid),\n"
        "    .m_arready (l_arready),\n"
        "    .m_rdata   (l_rdata),\n"
        "    .m_rresp   (l_rresp),\n"
        "    .m_rvalid  (l_rvalid),\n"
        "    .m_rready  (l_rready)\n"
        "  );\n"
        "\n"
        "  // ---- the interconnect: core i on local port i ----\n"
        "  logic [C-1:0]        inj_valid, inj_last, inj_ready, ej_valid, ej_last, ej_ready;\n"
        "  logic [C-1:0][W-1:0] inj_flit, ej_flit;\n"
        );
    sb_printf(sb, "  localparam int NPorts = %u;  // tpu_noc's: 3 on a ring, 5 on a torus\n",
              cfg->torus ? 5u : 3u);
    sb_puts(sb,
        "  logic [C*(NPorts-1)-1:0] link_retry, link_fault, link_dead;\n"
        "\n"
        "  tpu_noc #(\n"
        "    .C (C),\n"
        "    .W (W)\n"
        "  ) u_noc (\n"
        "    .clk_i,\n"
        "    .rst_ni,\n"
        "    .inj_valid_i (inj_valid),\n"
        "    .inj_last_i  (inj_last),\n"
        "    .inj_flit_i  (inj_flit),\n"
        "    .inj_ready_o (inj_ready),\n"
        "    .ej_valid_o  (ej_valid),\n"
        "    .ej_last_o   (ej_last),\n"
        "    .ej_flit_o   (ej_flit),\n"
        "    .ej_ready_i  (ej_ready),\n"
        "    .link_stall_i ({(C*(NPorts-1)){1'b0}}),\n"
        "    .link_fault_i ({(2*C*(NPorts-1)){1'b0}}),\n"
        "    .link_retry_o (link_retry),\n"
        "    .link_fault_o (link_fault),\n"
        "    .link_dead_o  (link_dead)\n"
        "  );\n"
        "\n"
        "  for (genvar i = 0; i < C; i++) begin : g_link_err\n"
        "    assign link_err_o[i] = |link_dead[i*(NPorts-1) +: NPorts-1];\n"
        "  end\n"
        "  // retries and detected faults are counted by the harness, not by the board\n"
        "  logic unused_link;\n"
        "  assign unused_link = ^{link_retry, link_fault};\n"
        "\n"
        "  // ---- the cores ----\n"
        "  for (genvar i = 0; i < C; i++) begin : g_core\n"
        "    tpu_core #(\n"
        "      .N        (N),\n"
        "      .LinkW    (W),\n"
        "      .AxiDataW (AxiDataW)\n"
        "    ) u_core (\n"
        "      .clk_i,\n"
        "      .rst_ni,\n"
        "      .s_axil_awaddr   (l_awaddr[i]),\n"
        "      .s_axil_awvalid  (l_awvalid[i]),\n"
        "      .s_axil_awready  (l_awready[i]),\n"
        "      .s_axil_wdata    (l_wdata[i]),\n"
        "      .s_axil_wstrb    (l_wstrb[i]),\n"
        "      .s_axil_wvalid   (l_wvalid[i]),\n"
        "      .s_axil_wready   (l_wready[i]),\n"
        "      .s_axil_bresp    (l_bresp[i]),\n"
        "      .s_axil_bvalid   (l_bvalid[i]),\n"
        "      .s_axil_bready   (l_bready[i]),\n"
        "      .s_axil_araddr   (l_araddr[i]),\n"
        "      .s_axil_arvalid  (l_arvalid[i]),\n"
        "      .s_axil_arready  (l_arready[i]),\n"
        "      .s_axil_rdata    (l_rdata[i]),\n"
        "      .s_axil_rresp    (l_rresp[i]),\n"
        "      .s_axil_rvalid   (l_rvalid[i]),\n"
        "      .s_axil_rready   (l_rready[i]),\n");
    for (size_t i = 0; i < GEN_AXI_PORTS; i++)
        sb_printf(sb, "      .%-16s(%s[i]),\n", gen_axi_ports[i].name, gen_axi_ports[i].name);
    sb_puts(sb,
        "      .core_id_i       (6'(i)),\n"
        "      .topo_cores_i    (TopoCores),\n"
        "      .topo_rows_i     (TopoRows),\n"
        "      .topo_cols_i     (TopoCols),\n"
        "      .noc_inj_valid_o (inj_valid[i]),\n"
        "      .noc_inj_last_o  (inj_last[i]),\n"
        "      .noc_inj_flit_o  (inj_flit[i]),\n"
        "      .noc_inj_ready_i (inj_ready[i]),\n"
        "      .noc_ej_valid_i  (ej_valid[i]),\n"
        "      .noc_ej_last_i   (ej_last[i]),\n"
        "      .noc_ej_flit_i   (ej_flit[i]),\n"
        "      .noc_ej_ready_o  (ej_ready[i]),\n"
        "      .net_dead_i      (|link_dead),\n");
    for (size_t i = 0; i < sizeof tr_ports / sizeof tr_ports[0]; i++)
        sb_printf(sb, "      .%-16s(%s[i])%s\n", tr_ports[i].name, tr_ports[i].name,
                  i + 1 == sizeof tr_ports / sizeof tr_ports[0] ? "" : ",");
    sb_puts(sb,
        "    );\n"
        "  end\n"
        "\n"
        "endmodule\n");
    return 0;
}

/* internal: the file-name lines (not comments) of an already built file list */
static void append_filelist_names(struct strbuf *sb, const struct gen_output *out,
                                  const char *name)
{
    for (size_t i = 0; i < out->count; i++) {
        if (strcmp(out->files[i].name, name) != 0 || !out->files[i].text.data)
            continue;
        const char *p = out->files[i].text.data;
        while (*p) {
            const char *e = strchr(p, '\n');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            if (n > 0 && !(n >= 2 && p[0] == '/' && p[1] == '/')) {
                sb_putn(sb, p, n);
                sb_puts(sb, "\n");
            }
            p += n + (e ? 1 : 0);
        }
    }
}

static int emit_board_filelist(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_board.f",
                                       "tpu_board.f: the board's sources in dependency order");
    if (!sb)
        return -1;
    sb_puts(sb,
        "// Names are relative to this file's directory: verilator tpu_board.vlt -F tpu_board.f;\n"
        "// run `iverilog -g2012 -c tpu_board.f` from this directory.\n");
    append_filelist_names(sb, out, "tpu_core.f");
    append_filelist_names(sb, out, "tpu_noc.f");
    sb_puts(sb, "tpu_board_axil.sv\ntpu_board.sv\n");
    return 0;
}

/* internal: appends the body (after the `verilator_config line) of an already built .vlt */
static void append_vlt(struct strbuf *sb, const struct gen_output *out, const char *name)
{
    for (size_t i = 0; i < out->count; i++) {
        if (strcmp(out->files[i].name, name) != 0 || !out->files[i].text.data)
            continue;
        const char *p = strstr(out->files[i].text.data, "`verilator_config\n");
        if (p)
            sb_printf(sb, "// ---- from %s ----\n%s", name, p + strlen("`verilator_config\n"));
    }
}

static int emit_board_vlt(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_board.vlt",
                                       "tpu_board.vlt: Verilator configuration for tpu_board");
    if (!sb)
        return -1;
    sb_puts(sb, "\n`verilator_config\n\n");
    append_vlt(sb, out, "tpu_core.vlt");
    append_vlt(sb, out, "tpu_noc.vlt");
    sb_puts(sb,
        "// ---- the board ----\n"
        "// Keep each core a module of its own: the C instances share one verilated copy.\n"
        "no_inline -module \"tpu_core\"\n");
    return 0;
}

int emit_board_all(struct gen_output *out, const struct gen_config *cfg)
{
    if (emit_board_axil(out, cfg) != 0 || emit_board(out, cfg) != 0 ||
        emit_board_filelist(out, cfg) != 0 || emit_board_vlt(out, cfg) != 0)
        return -1;
    return 0;
}
