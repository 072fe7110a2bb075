/* SPDX-License-Identifier: Apache-2.0 */
/* tpu_core: one core (memories, sequencer, MXU, VPU, AXI4-Lite registers, AXI4 DMA) (docs/isa.md). */
#include <stdio.h>
#include <string.h>

#include "emit.h"

/* internal: memory sizes and address widths */
static void emit_core_top_params(struct strbuf *sb, const struct gen_config *cfg)
{
    sb_printf(sb, "  localparam int UbRows    = %u;\n", cfg->ub_rows);
    sb_printf(sb, "  localparam int AccRows   = %u;\n", cfg->acc_rows);
    sb_printf(sb, "  localparam int WmemRows  = %u;\n", cfg->wmem_rows);
    sb_printf(sb, "  localparam int ImemInsns = %u;\n", cfg->imem_insns);
    sb_printf(sb, "  localparam int UbAw      = %u;\n", gen_bits_for(cfg->ub_rows - 1u));
    sb_printf(sb, "  localparam int AccAw     = %u;\n", gen_bits_for(cfg->acc_rows - 1u));
    sb_printf(sb, "  localparam int WmemAw    = %u;\n", gen_bits_for(cfg->wmem_rows - 1u));
    sb_printf(sb, "  localparam int ImemAw    = %u;\n", gen_bits_for(cfg->imem_insns - 1u));
}

static const char *const emit_core_part0[] = {
    "//",
    "// tpu_core: one core of docs/isa.md -- the MXU (tpu_mxu) and the VPU (tpu_vpu) with the unified",
    "// buffer (UB), the accumulators (ACC), the weight memory (WMEM) and the instruction memory",
    "// (IMEM: four 32-bit tpu_srams, one per instruction word), the sequencer (tpu_core_seq), the",
    "// WL/MX unit (tpu_core_mx), the VPU unit (tpu_core_vctl), the AXI4-Lite registers",
    "// (tpu_core_regs), the AXI4 DMA master (tpu_core_dma) and the network unit (tpu_core_coll:",
    "// the collectives of docs/board.md on the noc_* port, a local port of the board's tpu_noc).",
    "// Each memory has one read and one write port, shared by the units that use it; the",
    "// sequencer lets one unit work at a time, so at most one unit drives a port in any cycle",
    "// (checked in simulation below). The tr_* outputs show every memory write with the dynamic",
    "// instruction number (seq) of the instruction that made it, every dispatch (seq, pc, loop",
    "// indices, the resolved instruction) and the seq of an error halt (simulation only; synthesis",
    "// removes them when they are left open).",
    "// Performance counters (docs/isa.md \"Host interface\"): CYCLES, MXU_BUSY, WL_STALL, DMA_BUSY,",
    "// VPU_BUSY, INSNS, NET_BUSY; cleared by START, counting while the core is busy.",
    "",
    "module tpu_core #(",
};

/* The host ports, shared with tpu_top (emit_fpga.c) and tpu_board (emit_board.c). */
const struct gen_axi_port gen_axil_ports[GEN_AXIL_PORTS] = {
    { "s_axil_awaddr", 0, GEN_AXIL_ADDR_BITS }, { "s_axil_awvalid", 0, 1 },
    { "s_axil_awready", 1, 1 }, { "s_axil_wdata", 0, 32 }, { "s_axil_wstrb", 0, 4 },
    { "s_axil_wvalid", 0, 1 }, { "s_axil_wready", 1, 1 }, { "s_axil_bresp", 1, 2 },
    { "s_axil_bvalid", 1, 1 }, { "s_axil_bready", 0, 1 },
    { "s_axil_araddr", 0, GEN_AXIL_ADDR_BITS }, { "s_axil_arvalid", 0, 1 },
    { "s_axil_arready", 1, 1 }, { "s_axil_rdata", 1, 32 }, { "s_axil_rresp", 1, 2 },
    { "s_axil_rvalid", 1, 1 }, { "s_axil_rready", 0, 1 },
};
const struct gen_axi_port gen_axi_ports[GEN_AXI_PORTS] = {
    { "m_axi_awaddr", 1, 32 }, { "m_axi_awlen", 1, 8 }, { "m_axi_awsize", 1, 3 },
    { "m_axi_awburst", 1, 2 }, { "m_axi_awvalid", 1, 1 }, { "m_axi_awready", 0, 1 },
    { "m_axi_wdata", 1, GEN_AXI_DATA }, { "m_axi_wstrb", 1, GEN_AXI_STRB },
    { "m_axi_wlast", 1, 1 }, { "m_axi_wvalid", 1, 1 }, { "m_axi_wready", 0, 1 },
    { "m_axi_bresp", 0, 2 }, { "m_axi_bvalid", 0, 1 }, { "m_axi_bready", 1, 1 },
    { "m_axi_araddr", 1, 32 }, { "m_axi_arlen", 1, 8 }, { "m_axi_arsize", 1, 3 },
    { "m_axi_arburst", 1, 2 }, { "m_axi_arvalid", 1, 1 }, { "m_axi_arready", 0, 1 },
    { "m_axi_rdata", 0, GEN_AXI_DATA }, { "m_axi_rresp", 0, 2 }, { "m_axi_rlast", 0, 1 },
    { "m_axi_rvalid", 0, 1 }, { "m_axi_rready", 1, 1 },
};

void emit_axil_ports(struct strbuf *sb, const char *addr_w, int col)
{
    for (size_t i = 0; i < GEN_AXIL_PORTS; i++) {
        const struct gen_axi_port *p = &gen_axil_ports[i];
        char w[24] = "";
        if (p->bits > 1 && addr_w && strstr(p->name, "addr"))
            snprintf(w, sizeof w, "%s", addr_w);
        else if (p->bits > 1)
            snprintf(w, sizeof w, "[%u:0]", p->bits - 1u);
        sb_printf(sb, "  %s logic %-*s%s,\n", p->out ? "output" : "input ", col, w, p->name);
    }
}

void gen_axi_width(char *buf, size_t n, const struct gen_axi_port *p)
{
    if (p->bits == GEN_AXI_DATA)
        snprintf(buf, n, "AxiDataW");
    else if (p->bits == GEN_AXI_STRB)
        snprintf(buf, n, "AxiDataW/8");
    else if (p->bits > 1)
        snprintf(buf, n, "%u", p->bits);
    else
        snprintf(buf, n, "%s", "");
}

/* internal: one data-master port of the core's list, "  output logic [31:0]       name,"
   (the width column 13 wide, 17 for the parameterised data and strobe widths) */
static void put_axi_port(struct strbuf *sb, const struct gen_axi_port *p)
{
    char e[16], w[24] = "";
    gen_axi_width(e, sizeof e, p);
    if (p->bits > 1 && p->bits < GEN_AXI_DATA)
        snprintf(w, sizeof w, "[%u:0]", p->bits - 1u);
    else if (e[0])
        snprintf(w, sizeof w, "[%s-1:0]", e);
    sb_printf(sb, "  %s logic %-*s%s,\n", p->out ? "output" : "input ",
              strlen(w) > 13 ? 17 : 13, w, p->name);
}

static const char *const emit_core_part1[] = {
    ") (",
    "  input  logic              clk_i,",
    "  input  logic              rst_ni,",
};

/* the AXI ports (gen_axil_ports, gen_axi_ports) go here, then: */
static const char *const emit_core_part1b[] = {
    "  // the board (docs/board.md): this core's id, the shape, the network port",
    "  input  logic [5:0]        core_id_i,",
    "  input  logic [6:0]        topo_cores_i,",
    "  input  logic [6:0]        topo_rows_i,",
    "  input  logic [6:0]        topo_cols_i,",
    "  output logic              noc_inj_valid_o,",
    "  output logic              noc_inj_last_o,",
    "  output logic [LinkW-1:0]  noc_inj_flit_o,",
    "  input  logic              noc_inj_ready_i,",
    "  input  logic              noc_ej_valid_i,",
    "  input  logic              noc_ej_last_i,",
    "  input  logic [LinkW-1:0]  noc_ej_flit_i,",
    "  output logic              noc_ej_ready_o,",
    "  // a link of the board is dead (tpu_noc's link_dead_o, ORed; sticky): a collective in",
    "  // progress stops and the core halts with error 9 (docs/board.md \"Link faults\")",
    "  input  logic              net_dead_i,",
    "  // simulation trace",
    "  output logic              tr_ub_we_o,",
    "  output logic [15:0]       tr_ub_row_o,",
    "  output logic [16*N-1:0]   tr_ub_data_o,",
    "  output logic [31:0]       tr_ub_seq_o,",
    "  output logic              tr_acc_we_o,",
    "  output logic [15:0]       tr_acc_row_o,",
    "  output logic [32*N-1:0]   tr_acc_data_o,",
    "  output logic [31:0]       tr_acc_seq_o,",
    "  output logic              tr_wm_we_o,",
    "  output logic [15:0]       tr_wm_row_o,",
    "  output logic [16*N-1:0]   tr_wm_data_o,",
    "  output logic [31:0]       tr_wm_seq_o,",
    "  output logic              tr_disp_valid_o,",
    "  output logic [31:0]       tr_disp_seq_o,",
    "  output logic [15:0]       tr_disp_pc_o,",
    "  output logic [@ITER_MSB@:0] tr_disp_iter_o,  // i_l at [16l +: 16]",
    "  output logic [127:0]      tr_disp_insn_o,",
    "  output logic [31:0]       tr_err_seq_o",
    ");",
    "",
};

static const char *const emit_core_part2[] = {
    "",
    "  // ---- control registers ----",
    "  logic              start, imem_we;",
    "  logic [15:0]       pc_start;",
    "  logic [ImemAw-1:0] imem_addr;",
    "  logic [1:0]        imem_word;",
    "  logic [31:0]       imem_wdata;",
    "  logic              busy, done, error;",
    "  logic [7:0]        err_code;",
    "  logic [15:0]       err_pc, pc;",
    "  logic [31:0]       err_seq;",
    "  logic [7*64-1:0]   counters;",
    "",
    "  tpu_core_regs #(",
    "    .N         (N),",
    "    .UbRows    (UbRows),",
    "    .AccRows   (AccRows),",
    "    .WmemRows  (WmemRows),",
    "    .ImemInsns (ImemInsns)",
    "  ) u_regs (",
    "    .clk_i,",
    "    .rst_ni,",
    "    .s_axil_awaddr,",
    "    .s_axil_awvalid,",
    "    .s_axil_awready,",
    "    .s_axil_wdata,",
    "    .s_axil_wstrb,",
    "    .s_axil_wvalid,",
    "    .s_axil_wready,",
    "    .s_axil_bresp,",
    "    .s_axil_bvalid,",
    "    .s_axil_bready,",
    "    .s_axil_araddr,",
    "    .s_axil_arvalid,",
    "    .s_axil_arready,",
    "    .s_axil_rdata,",
    "    .s_axil_rresp,",
    "    .s_axil_rvalid,",
    "    .s_axil_rready,",
    "    .start_o      (start),",
    "    .pc_start_o   (pc_start),",
    "    .imem_we_o    (imem_we),",
    "    .imem_addr_o  (imem_addr),",
    "    .imem_word_o  (imem_word),",
    "    .imem_wdata_o (imem_wdata),",
    "    .busy_i       (busy),",
    "    .done_i       (done),",
    "    .error_i      (error),",
    "    .err_code_i   (err_code),",
    "    .err_pc_i     (err_pc),",
    "    .pc_i         (pc),",
    "    .counters_i   (counters)",
    "  );",
    "",
    "  // ---- instruction memory ----",
    "  logic          imem_re;",
    "  logic [15:0]   imem_raddr;",
    "  logic [127:0]  imem_rdata;",
    "  for (genvar j = 0; j < 4; j++) begin : g_imem",
    "    tpu_sram #(",
    "      .Width (32),",
    "      .Depth (ImemInsns),",
    "      .AddrW (ImemAw)",
    "    ) u_imem (",
    "      .clk_i,",
    "      .we_i    (imem_we && imem_word == 2'(j)),",
    "      .waddr_i (imem_addr),",
    "      .wdata_i (imem_wdata),",
    "      .re_i    (imem_re),",
    "      .raddr_i (imem_raddr[ImemAw-1:0]),",
    "      .rdata_o (imem_rdata[32*j +: 32])",
    "    );",
    "  end",
    "",
    "  // ---- sequencer ----",
    "  logic [127:0] insn;",
    "  logic [15:0]  insn_pc;",
    "  logic [31:0]  insn_seq;",
    "  logic [@ITER_MSB@:0] insn_iter;",
    "  logic         dma_go, lw_go, mm_go, vpu_go, disp_valid;",
    "  logic         dma_busy, dma_done, dma_err, mx_busy, vpu_busy, wl_busy, mm_full;",
    "  logic [15:0]  mx_lw_row;",
    "  logic [1:0]   mx_q_valid;",
    "  logic [31:0]  mx_q_ub, mx_q_left;",
    "  logic [16:0]  mx_chk_lo, mx_chk_hi;",
    "  logic         mx_acc_hit, mx_acc_rd;",
    "  logic         coll_go, coll_busy, coll_abort;",
    "",
    "  tpu_core_seq u_seq (",
    "    .clk_i,",
    "    .rst_ni,",
    "    .start_i      (start),",
    "    .pc_start_i   (pc_start),",
    "    .busy_o       (busy),",
    "    .done_o       (done),",
    "    .error_o      (error),",
    "    .err_code_o   (err_code),",
    "    .err_pc_o     (err_pc),",
    "    .err_seq_o    (err_seq),",
    "    .pc_o         (pc),",
    "    .imem_re_o    (imem_re),",
    "    .imem_raddr_o (imem_raddr),",
    "    .imem_rdata_i (imem_rdata),",
    "    .insn_o       (insn),",
    "    .insn_pc_o    (insn_pc),",
    "    .insn_seq_o   (insn_seq),",
    "    .insn_iter_o  (insn_iter),",
    "    .dma_go_o     (dma_go),",
    "    .lw_go_o      (lw_go),",
    "    .mm_go_o      (mm_go),",
    "    .vpu_go_o     (vpu_go),",
    "    .disp_valid_o (disp_valid),",
    "    .dma_busy_i   (dma_busy),",
    "    .dma_done_i   (dma_done),",
    "    .dma_err_i    (dma_err),",
    "    .mx_busy_i    (mx_busy),",
    "    .wl_busy_i    (wl_busy),",
    "    .mm_full_i    (mm_full),",
    "    .lw_row_i     (mx_lw_row),",
    "    .q_valid_i    (mx_q_valid),",
    "    .q_ub_i       (mx_q_ub),",
    "    .q_left_i     (mx_q_left),",
    "    .chk_lo_o     (mx_chk_lo),",
    "    .chk_hi_o     (mx_chk_hi),",
    "    .acc_hit_i    (mx_acc_hit),",
    "    .acc_rd_i     (mx_acc_rd),",
    "    .vpu_busy_i   (vpu_busy),",
    "    .coll_go_o    (coll_go),",
    "    .coll_busy_i  (coll_busy),",
    "    .coll_abort_i (coll_abort),",
    "    .core_id_i,",
    "    .topo_cores_i",
    "  );",
    "",
    "  // ---- memories and their port owners ----",
    "  logic            ub_we, ub_re, acc_we, acc_re, wm_we, wm_re;",
    "  logic [15:0]     ub_waddr, ub_raddr, acc_waddr, acc_raddr, wm_waddr, wm_raddr;",
    "  logic [16*N-1:0] ub_wdata, ub_rdata, wm_wdata, wm_rdata;",
    "  logic [32*N-1:0] acc_wdata, acc_rdata;",
    "  logic [31:0]     ub_wseq, acc_wseq, wm_wseq;",
    "",
    "  tpu_sram #(.Width (16*N), .Depth (UbRows), .AddrW (UbAw)) u_ub (",
    "    .clk_i,",
    "    .we_i    (ub_we),",
    "    .waddr_i (ub_waddr[UbAw-1:0]),",
    "    .wdata_i (ub_wdata),",
    "    .re_i    (ub_re),",
    "    .raddr_i (ub_raddr[UbAw-1:0]),",
    "    .rdata_o (ub_rdata)",
    "  );",
    "  tpu_sram #(.Width (32*N), .Depth (AccRows), .AddrW (AccAw)) u_acc (",
    "    .clk_i,",
    "    .we_i    (acc_we),",
    "    .waddr_i (acc_waddr[AccAw-1:0]),",
    "    .wdata_i (acc_wdata),",
    "    .re_i    (acc_re),",
    "    .raddr_i (acc_raddr[AccAw-1:0]),",
    "    .rdata_o (acc_rdata)",
    "  );",
    "  tpu_sram #(.Width (16*N), .Depth (WmemRows), .AddrW (WmemAw)) u_wm (",
    "    .clk_i,",
    "    .we_i    (wm_we),",
    "    .waddr_i (wm_waddr[WmemAw-1:0]),",
    "    .wdata_i (wm_wdata),",
    "    .re_i    (wm_re),",
    "    .raddr_i (wm_raddr[WmemAw-1:0]),",
    "    .rdata_o (wm_rdata)",
    "  );",
    "",
    "  // ---- DMA ----",
    "  logic            mw_valid, mr_valid;",
    "  logic [1:0]      mw_mem, mr_mem;",
    "  logic [15:0]     mw_row, mr_row;",
    "  logic [32*N-1:0] mw_data, mr_data;",
    "  logic            dma_ready;",
    "  logic [31:0]     dma_seq_q;",
    "  logic            dma_rd_acc_q;",
    "",
    "  tpu_core_dma #(",
    "    .N        (N),",
    "    .AxiAddrW (32),",
    "    .DataW    (AxiDataW)",
    "  ) u_dma (",
    "    .clk_i,",
    "    .rst_ni,",
    "    .cmd_valid_i  (dma_go),",
    "    .cmd_ready_o  (dma_ready),",
    "    .cmd_out_i    (insn[0]),",
    "    .cmd_mem_i    (insn[9:8]),",
    "    .cmd_rows_i   (insn[31:16]),",
    "    .cmd_haddr_i  (insn[63:32]),",
    "    .cmd_row_i    (insn[79:64]),",
    "    .cmd_cols_i   (insn[95:80]),",
    "    .cmd_stride_i (insn[127:96]),",
    "    .busy_o       (dma_busy),",
    "    .done_o       (dma_done),",
    "    .axi_err_o    (dma_err),",
    "    .mw_valid_o   (mw_valid),",
    "    .mw_mem_o     (mw_mem),",
    "    .mw_row_o     (mw_row),",
    "    .mw_data_o    (mw_data),",
    "    .mr_valid_o   (mr_valid),",
    "    .mr_mem_o     (mr_mem),",
    "    .mr_row_o     (mr_row),",
    "    .mr_data_i    (mr_data),",
    "    .m_axi_awaddr,",
    "    .m_axi_awlen,",
    "    .m_axi_awsize,",
    "    .m_axi_awburst,",
    "    .m_axi_awvalid,",
    "    .m_axi_awready,",
    "    .m_axi_wdata,",
    "    .m_axi_wstrb,",
    "    .m_axi_wlast,",
    "    .m_axi_wvalid,",
    "    .m_axi_wready,",
    "    .m_axi_bresp,",
    "    .m_axi_bvalid,",
    "    .m_axi_bready,",
    "    .m_axi_araddr,",
    "    .m_axi_arlen,",
    "    .m_axi_arsize,",
    "    .m_axi_arburst,",
    "    .m_axi_arvalid,",
    "    .m_axi_arready,",
    "    .m_axi_rdata,",
    "    .m_axi_rresp,",
    "    .m_axi_rlast,",
    "    .m_axi_rvalid,",
    "    .m_axi_rready",
    "  );",
    "",
    "  always_ff @(posedge clk_i or negedge rst_ni) begin",
    "    if (!rst_ni) begin",
    "      dma_seq_q    <= 32'd0;",
    "      dma_rd_acc_q <= 1'b0;",
    "    end else begin",
    "      if (dma_go) dma_seq_q <= insn_seq;",
    "      if (mr_valid) dma_rd_acc_q <= mr_mem == 2'd1;",
    "    end",
    "  end",
    "  assign mr_data = dma_rd_acc_q ? acc_rdata : {{(16*N){1'b0}}, ub_rdata};",
    "",
    "  // ---- MX / WL ----",
    "  logic            mx_wm_re, mx_ub_re, mx_acc_re, mx_acc_we;",
    "  logic [15:0]     mx_wm_ra, mx_ub_ra, mx_acc_ra, mx_acc_wa;",
    "  logic [31:0]     mx_acc_wseq;",
    "  logic [32*N-1:0] mx_acc_wd;",
    "  logic            wl_valid, wl_bank, wl_transpose, act_valid, act_bank, out_valid, wl_stall;",
    "  logic [16*N-1:0] wl_data, act_data;",
    "  logic [32*N-1:0] psum_data, out_data;",
    "  logic [1:0]      bank_busy;",
    "",
    "  tpu_core_mx u_mx (",
    "    .clk_i,",
    "    .rst_ni,",
    "    .start_i     (start),",
    "    .lw_go_i     (lw_go),",
    "    .mm_go_i     (mm_go),",
    "    .insn_i      (insn),",
    "    .seq_i       (insn_seq),",
    "    .busy_o      (mx_busy),",
    "    .wl_busy_o   (wl_busy),",
    "    .mm_full_o   (mm_full),",
    "    .lw_row_o    (mx_lw_row),",
    "    .q_valid_o   (mx_q_valid),",
    "    .q_ub_o      (mx_q_ub),",
    "    .q_left_o    (mx_q_left),",
    "    .chk_lo_i    (mx_chk_lo),",
    "    .chk_hi_i    (mx_chk_hi),",
    "    .acc_hit_o   (mx_acc_hit),",
    "    .acc_rd_o    (mx_acc_rd),",
    "    .wm_re_o     (mx_wm_re),",
    "    .wm_raddr_o  (mx_wm_ra),",
    "    .wm_rdata_i  (wm_rdata),",
    "    .ub_re_o     (mx_ub_re),",
    "    .ub_raddr_o  (mx_ub_ra),",
    "    .ub_rdata_i  (ub_rdata),",
    "    .acc_re_o    (mx_acc_re),",
    "    .acc_raddr_o (mx_acc_ra),",
    "    .acc_rdata_i (acc_rdata),",
    "    .acc_we_o    (mx_acc_we),",
    "    .acc_waddr_o (mx_acc_wa),",
    "    .acc_wdata_o (mx_acc_wd),",
    "    .acc_wseq_o  (mx_acc_wseq),",
    "    .wl_valid_o  (wl_valid),",
    "    .wl_bank_o   (wl_bank),",
    "    .wl_transpose_o (wl_transpose),",
    "    .wl_data_o   (wl_data),",
    "    .act_valid_o (act_valid),",
    "    .act_bank_o  (act_bank),",
    "    .act_data_o  (act_data),",
    "    .psum_data_o (psum_data),",
    "    .out_valid_i (out_valid),",
    "    .out_data_i  (out_data),",
    "    .bank_busy_i (bank_busy),",
    "    .wl_stall_o  (wl_stall)",
    "  );",
    "",
    "  tpu_mxu u_mxu (",
    "    .clk_i,",
    "    .rst_ni,",
    "    .wl_valid_i  (wl_valid),",
    "    .wl_bank_i   (wl_bank),",
    "    .wl_transpose_i (wl_transpose),",
    "    .wl_data_i   (wl_data),",
    "    .act_valid_i (act_valid),",
    "    .act_bank_i  (act_bank),",
    "    .act_data_i  (act_data),",
    "    .psum_data_i (psum_data),",
    "    .out_valid_o (out_valid),",
    "    .out_data_o  (out_data),",
    "    .bank_busy_o (bank_busy)",
    "  );",
    "",
    "  // ---- VPU ----",
    "  logic            vc_ub_re, vc_ub_we, vc_acc_re, vc_acc_we;",
    "  logic [15:0]     vc_ub_ra, vc_ub_wa, vc_acc_ra, vc_acc_wa;",
    "  logic [31:0]     vc_wseq;",
    "  logic [16*N-1:0] vc_ub_wd;",
    "  logic [32*N-1:0] vc_acc_wd;",
    "  logic            v_valid, v_fa, v_fb, v_fy, v_first, v_last, v_valid_o, v_red_valid;",
    "  logic [4:0]      v_op;",
    "  logic [1:0]      v_red;",
    "  logic [N-1:0]    v_mask;",
    "  logic [32*N-1:0] v_a, v_b, v_y;",
    "  logic [31:0]     v_red_o;",
    "",
    "  tpu_core_vctl u_vctl (",
    "    .clk_i,",
    "    .rst_ni,",
    "    .go_i            (vpu_go),",
    "    .insn_i          (insn),",
    "    .seq_i           (insn_seq),",
    "    .busy_o          (vpu_busy),",
    "    .ub_re_o         (vc_ub_re),",
    "    .ub_raddr_o      (vc_ub_ra),",
    "    .ub_rdata_i      (ub_rdata),",
    "    .ub_we_o         (vc_ub_we),",
    "    .ub_waddr_o      (vc_ub_wa),",
    "    .ub_wdata_o      (vc_ub_wd),",
    "    .acc_re_o        (vc_acc_re),",
    "    .acc_raddr_o     (vc_acc_ra),",
    "    .acc_rdata_i     (acc_rdata),",
    "    .acc_we_o        (vc_acc_we),",
    "    .acc_waddr_o     (vc_acc_wa),",
    "    .acc_wdata_o     (vc_acc_wd),",
    "    .wseq_o          (vc_wseq),",
    "    .vpu_valid_o     (v_valid),",
    "    .vpu_op_o        (v_op),",
    "    .vpu_fmt_a_o     (v_fa),",
    "    .vpu_fmt_b_o     (v_fb),",
    "    .vpu_fmt_y_o     (v_fy),",
    "    .vpu_red_o       (v_red),",
    "    .vpu_first_o     (v_first),",
    "    .vpu_last_o      (v_last),",
    "    .vpu_mask_o      (v_mask),",
    "    .vpu_a_o         (v_a),",
    "    .vpu_b_o         (v_b),",
    "    .vpu_valid_i     (v_valid_o),",
    "    .vpu_y_i         (v_y),",
    "    .vpu_red_valid_i (v_red_valid),",
    "    .vpu_red_i       (v_red_o)",
    "  );",
    "",
    "  tpu_vpu u_vpu (",
    "    .clk_i,",
    "    .rst_ni,",
    "    .valid_i     (v_valid),",
    "    .op_i        (v_op),",
    "    .fmt_a_i     (v_fa),",
    "    .fmt_b_i     (v_fb),",
    "    .fmt_y_i     (v_fy),",
    "    .red_i       (v_red),",
    "    .first_i     (v_first),",
    "    .last_i      (v_last),",
    "    .mask_i      (v_mask),",
    "    .a_i         (v_a),",
    "    .b_i         (v_b),",
    "    .valid_o     (v_valid_o),",
    "    .y_o         (v_y),",
    "    .red_valid_o (v_red_valid),",
    "    .red_o       (v_red_o)",
    "  );",
    "",
    "  // ---- the network unit (collectives) ----",
    "  logic            nc_ub_re, nc_ub_we, nc_acc_re, nc_acc_we;",
    "  logic [15:0]     nc_ub_ra, nc_ub_wa, nc_acc_ra, nc_acc_wa;",
    "  logic [31:0]     nc_wseq;",
    "  logic [16*N-1:0] nc_ub_wd;",
    "  logic [32*N-1:0] nc_acc_wd;",
    "",
    "  tpu_core_coll #(",
    "    .N     (N),",
    "    .LinkW (LinkW)",
    "  ) u_coll (",
    "    .clk_i,",
    "    .rst_ni,",
    "    .go_i         (coll_go),",
    "    .insn_i       (insn),",
    "    .seq_i        (insn_seq),",
    "    .busy_o       (coll_busy),",
    "    .net_dead_i,",
    "    .abort_o      (coll_abort),",
    "    .core_id_i,",
    "    .topo_cores_i,",
    "    .topo_rows_i,",
    "    .topo_cols_i,",
    "    .noc_inj_valid_o,",
    "    .noc_inj_last_o,",
    "    .noc_inj_flit_o,",
    "    .noc_inj_ready_i,",
    "    .noc_ej_valid_i,",
    "    .noc_ej_last_i,",
    "    .noc_ej_flit_i,",
    "    .noc_ej_ready_o,",
    "    .ub_re_o      (nc_ub_re),",
    "    .ub_raddr_o   (nc_ub_ra),",
    "    .ub_rdata_i   (ub_rdata),",
    "    .ub_we_o      (nc_ub_we),",
    "    .ub_waddr_o   (nc_ub_wa),",
    "    .ub_wdata_o   (nc_ub_wd),",
    "    .acc_re_o     (nc_acc_re),",
    "    .acc_raddr_o  (nc_acc_ra),",
    "    .acc_rdata_i  (acc_rdata),",
    "    .acc_we_o     (nc_acc_we),",
    "    .acc_waddr_o  (nc_acc_wa),",
    "    .acc_wdata_o  (nc_acc_wd),",
    "    .wseq_o       (nc_wseq)",
    "  );",
    "",
    "  // ---- port multiplexers (one owner per port per cycle) ----",
    "  logic dma_ub_w, dma_acc_w, dma_wm_w, dma_ub_r, dma_acc_r;",
    "  assign dma_ub_w  = mw_valid && mw_mem == 2'd0;",
    "  assign dma_acc_w = mw_valid && mw_mem == 2'd1;",
    "  assign dma_wm_w  = mw_valid && mw_mem == 2'd2;",
    "  assign dma_ub_r  = mr_valid && mr_mem == 2'd0;",
    "  assign dma_acc_r = mr_valid && mr_mem == 2'd1;",
    "",
    "  logic [16*N-1:0] mw_bf16;",
    "  assign mw_bf16 = mw_data[16*N-1:0];",
    "",
    "  assign ub_re    = dma_ub_r || mx_ub_re || vc_ub_re || nc_ub_re;",
    "  assign ub_raddr = dma_ub_r ? mr_row : mx_ub_re ? mx_ub_ra : nc_ub_re ? nc_ub_ra : vc_ub_ra;",
    "  assign ub_we    = dma_ub_w || vc_ub_we || nc_ub_we;",
    "  assign ub_waddr = dma_ub_w ? mw_row : nc_ub_we ? nc_ub_wa : vc_ub_wa;",
    "  assign ub_wdata = dma_ub_w ? mw_bf16 : nc_ub_we ? nc_ub_wd : vc_ub_wd;",
    "  assign ub_wseq  = dma_ub_w ? dma_seq_q : nc_ub_we ? nc_wseq : vc_wseq;",
    "",
    "  assign acc_re    = dma_acc_r || mx_acc_re || vc_acc_re || nc_acc_re;",
    "  assign acc_raddr = dma_acc_r ? mr_row : mx_acc_re ? mx_acc_ra : nc_acc_re ? nc_acc_ra :",
    "                     vc_acc_ra;",
    "  assign acc_we    = dma_acc_w || mx_acc_we || vc_acc_we || nc_acc_we;",
    "  assign acc_waddr = dma_acc_w ? mw_row : mx_acc_we ? mx_acc_wa : nc_acc_we ? nc_acc_wa :",
    "                     vc_acc_wa;",
    "  assign acc_wdata = dma_acc_w ? mw_data : mx_acc_we ? mx_acc_wd : nc_acc_we ? nc_acc_wd :",
    "                     vc_acc_wd;",
    "  assign acc_wseq  = dma_acc_w ? dma_seq_q : mx_acc_we ? mx_acc_wseq : nc_acc_we ? nc_wseq :",
    "                     vc_wseq;",
    "",
    "  assign wm_re    = mx_wm_re;",
    "  assign wm_raddr = mx_wm_ra;",
    "  assign wm_we    = dma_wm_w;",
    "  assign wm_waddr = mw_row;",
    "  assign wm_wdata = mw_bf16;",
    "  assign wm_wseq  = dma_seq_q;",
    "",
    "`ifndef SYNTHESIS",
    "  // two units must never drive one memory port in the same cycle",
    "  always @(posedge clk_i or negedge rst_ni) begin",
    "    if (rst_ni && busy) begin",
    "      if (3'(dma_ub_r) + 3'(mx_ub_re) + 3'(vc_ub_re) + 3'(nc_ub_re) > 3'd1)",
    "        $error(\"tpu_core: two units read UB in one cycle\");",
    "      if (2'(dma_ub_w) + 2'(vc_ub_we) + 2'(nc_ub_we) > 2'd1)",
    "        $error(\"tpu_core: two units write UB in one cycle\");",
    "      if (3'(dma_acc_r) + 3'(mx_acc_re) + 3'(vc_acc_re) + 3'(nc_acc_re) > 3'd1)",
    "        $error(\"tpu_core: two units read ACC in one cycle\");",
    "      if (3'(dma_acc_w) + 3'(mx_acc_we) + 3'(vc_acc_we) + 3'(nc_acc_we) > 3'd1)",
    "        $error(\"tpu_core: two units write ACC in one cycle\");",
    "      if (dma_go && !dma_ready)",
    "        $error(\"tpu_core: dma_in/dma_out dispatched while the DMA is busy\");",
    "    end",
    "  end",
    "`endif",
    "",
    "  // ---- trace ----",
    "  assign tr_ub_we_o      = ub_we;",
    "  assign tr_ub_row_o     = ub_waddr;",
    "  assign tr_ub_data_o    = ub_wdata;",
    "  assign tr_ub_seq_o     = ub_wseq;",
    "  assign tr_acc_we_o     = acc_we;",
    "  assign tr_acc_row_o    = acc_waddr;",
    "  assign tr_acc_data_o   = acc_wdata;",
    "  assign tr_acc_seq_o    = acc_wseq;",
    "  assign tr_wm_we_o      = wm_we;",
    "  assign tr_wm_row_o     = wm_waddr;",
    "  assign tr_wm_data_o    = wm_wdata;",
    "  assign tr_wm_seq_o     = wm_wseq;",
    "  assign tr_disp_valid_o = disp_valid;",
    "  assign tr_disp_seq_o   = insn_seq;",
    "  assign tr_disp_pc_o    = insn_pc;",
    "  assign tr_disp_iter_o  = insn_iter;",
    "  assign tr_disp_insn_o  = insn;",
    "  assign tr_err_seq_o    = err_seq;",
    "",
    "  // ---- performance counters ----",
    "  logic [6:0]       ev;",
    "  logic [6:0][63:0] ctr_q;",
    "  assign ev = {coll_busy, disp_valid, vpu_busy, dma_busy, wl_stall, act_valid, 1'b1};",
    "  always_ff @(posedge clk_i or negedge rst_ni) begin",
    "    if (!rst_ni) begin",
    "      ctr_q <= '0;",
    "    end else if (start) begin",
    "      ctr_q <= '0;",
    "    end else if (busy) begin",
    "      for (int k = 0; k < 7; k++) begin",
    "        ctr_q[k] <= ctr_q[k] + {63'd0, ev[k]};",
    "      end",
    "    end",
    "  end",
    "  assign counters = ctr_q;",
    "",
    "endmodule",
};

static void put_lines(struct strbuf *sb, const char *const *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gen_put_line(sb, l[i]);
}

int emit_core(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_core.sv", "tpu_core: one core (memories, sequencer, MXU, VPU, AXI4-Lite registers, AXI4 DMA)");
    if (!sb)
        return -1;
    put_lines(sb, emit_core_part0, sizeof emit_core_part0 / sizeof emit_core_part0[0]);
    sb_printf(sb, "  parameter int N     = %u,\n", cfg->n);
    sb_printf(sb, "  parameter int LinkW = %u,  // W, --link-bits (docs/board.md)\n", cfg->link_bits);
    sb_printf(sb, "  parameter int AxiDataW = %u  // --axi-data-bits (docs/isa.md)\n",
              cfg->axi_data_bits);
    put_lines(sb, emit_core_part1, sizeof emit_core_part1 / sizeof emit_core_part1[0]);
    sb_puts(sb, "  // AXI4-Lite slave (control)\n");
    emit_axil_ports(sb, NULL, 13);
    sb_puts(sb, "  // AXI4 master (data)\n");
    for (size_t i = 0; i < GEN_AXI_PORTS; i++)
        put_axi_port(sb, &gen_axi_ports[i]);
    put_lines(sb, emit_core_part1b, sizeof emit_core_part1b / sizeof emit_core_part1b[0]);
    emit_core_top_params(sb, cfg);
    put_lines(sb, emit_core_part2, sizeof emit_core_part2 / sizeof emit_core_part2[0]);
    return 0;
}

/* The core's sources in dependency order (the MXU's, the VPU's, then the core's own). */
static const char *const core_sources[] = {
    "tpu_bf16_mul.sv",     "tpu_fp32_add.sv",     "tpu_pe.sv",          "tpu_mxu_row.sv",
    "tpu_mxu.sv",          "tpu_fp32_mul.sv",     "tpu_fp32_maxmin.sv", "tpu_vpu_delay.sv",
    "tpu_vpu_rom_exp2.sv", "tpu_vpu_rom_recip.sv", "tpu_vpu_rom_log.sv", "tpu_vpu_rom_rsqrt.sv",
    "tpu_vpu_rom_erf.sv",
    "tpu_vpu_exp.sv",      "tpu_vpu_recip.sv",    "tpu_vpu_log.sv",     "tpu_vpu_rsqrt.sv",
    "tpu_vpu_lane.sv",     "tpu_vpu_red_node.sv", "tpu_vpu.sv",         "tpu_sram.sv",
    "tpu_isa_pkg.sv",
    "tpu_core_regs.sv",    "tpu_core_dma.sv",     "tpu_core_seq.sv",    "tpu_core_mx.sv",
    "tpu_core_vctl.sv",    "tpu_core_coll.sv",    "tpu_core.sv",
};

int emit_core_filelist(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb =
        gen_output_add(out, cfg, "tpu_core.f", "tpu_core.f: the core's sources in dependency order");
    if (!sb)
        return -1;
    sb_puts(sb,
        "// Names are relative to this file's directory: Verilator resolves them there with\n"
        "// `-F <dir>/tpu_core.f` (and also needs <dir>/tpu_core.vlt on its command line);\n"
        "// run `iverilog -g2012 -c tpu_core.f` from this directory.\n");
    for (size_t i = 0; i < sizeof core_sources / sizeof core_sources[0]; i++) {
        sb_printf(sb, "%s\n", core_sources[i]);
    }
    return 0;
}

/* internal: appends the body (after the `verilator_config line) of an already built .vlt */
static void append_vlt_body(struct strbuf *sb, const struct gen_output *out, const char *name)
{
    for (size_t i = 0; i < out->count; i++) {
        if (strcmp(out->files[i].name, name) != 0 || !out->files[i].text.data)
            continue;
        const char *p = strstr(out->files[i].text.data, "`verilator_config\n");
        if (p)
            sb_printf(sb, "// ---- from %s ----\n%s", name, p + strlen("`verilator_config\n"));
    }
}

int emit_core_vlt(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_core.vlt",
                                       "tpu_core.vlt: Verilator configuration for tpu_core");
    if (!sb)
        return -1;
    sb_puts(sb, "\n`verilator_config\n\n");
    append_vlt_body(sb, out, "tpu_mxu.vlt");
    append_vlt_body(sb, out, "tpu_vpu.vlt");
    sb_puts(sb,
        "// ---- the core ----\n"
        "// Row addresses are 16 bits everywhere (the instructions' row fields); a memory of R rows\n"
        "// takes the low clog2(R) bits, and tpu_core_seq's row checks make the others 0.\n"
        "lint_off -rule UNUSEDSIGNAL -file \"*tpu_core.sv\" -match \"*raddr*\"\n"
        "// The units get the whole instruction word and each uses the fields of its opcodes.\n"
        "lint_off -rule UNUSEDSIGNAL -file \"*tpu_core_mx.sv\" -match \"*insn_i*\"\n"
        "lint_off -rule UNUSEDSIGNAL -file \"*tpu_core_vctl.sv\" -match \"*insn_i*\"\n"
        "// tpu_top (one core, no network) leaves the core's network outputs (noc_*) open.\n"
        "lint_off -rule PINCONNECTEMPTY -file \"*tpu_top.sv\" -match \"*noc_*\"\n"
        "// tpu_top leaves the core's simulation trace outputs (tr_*) open on purpose.\n"
        "lint_off -rule PINCONNECTEMPTY -file \"*tpu_top.sv\" -match \"*tr_*\"\n");
    return 0;
}

void emit_core_params(struct strbuf *sb, const struct gen_config *cfg)
{
    if (cfg->vpu_lanes != cfg->n)
        return; /* no core */
    sb_printf(sb, "#define %-19s %-7u  // %s\n", "TPU_CORE_UB_ROWS", cfg->ub_rows,
              "core: unified buffer rows (N bf16 each)");
    sb_printf(sb, "#define %-19s %-7u  // %s\n", "TPU_CORE_ACC_ROWS", cfg->acc_rows,
              "core: accumulator rows (N fp32 each)");
    sb_printf(sb, "#define %-19s %-7u  // %s\n", "TPU_CORE_WMEM_ROWS", cfg->wmem_rows,
              "core: weight memory rows (N bf16 each)");
    sb_printf(sb, "#define %-19s %-7u  // %s\n", "TPU_CORE_IMEM_INSNS", cfg->imem_insns,
              "core: instruction memory size (128-bit instructions)");
    sb_printf(sb, "#define %-19s %-7u  // %s\n", "TPU_CORE_AXI_DATA_BITS", cfg->axi_data_bits,
              "core: AXI4 master data width");
    sb_printf(sb, "#define %-19s %-7u  // %s\n", "TPU_CORE_AXIL_ADDR_BITS", GEN_AXIL_ADDR_BITS,
              "core: AXI4-Lite byte address width (IMEM at 0x4000 + 16i)");
}
