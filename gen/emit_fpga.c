/* SPDX-License-Identifier: Apache-2.0 */
/* The FPGA side of a configuration (docs/fpga.md): the reset synchroniser tpu_rst_sync, the
   top tpu_top (the MXU behind the synchroniser; the core will replace its inside later), its
   file list, the constraints for Vivado (XDC), Quartus (SDC) and nextpnr-ice40 (PCF), and the
   FuseSoC CAPI2 core file that lists every generated source. The constraints name the real
   clock port (clk_i) and the synchroniser's registers (u_rst_sync/sync_q). */
#include <stdio.h>
#include <string.h>

#include "emit.h"

/* internal: the clock period in ns for F MHz, with three decimals (exact in integers) */
static void put_period_ns(struct strbuf *sb, unsigned mhz)
{
    unsigned ps = (1000000u + mhz / 2u) / mhz; /* rounded to the picosecond */
    sb_printf(sb, "%u.%03u", ps / 1000u, ps % 1000u);
}

int emit_rst_sync(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_rst_sync.sv",
                                       "tpu_rst_sync: reset synchroniser (async assert, sync release)");
    if (!sb)
        return -1;
    sb_puts(sb,
        "//\n"
        "// The design's one reset convention (docs/mxu.md, docs/fpga.md): rst_ni is active low;\n"
        "// its assertion reaches rst_no at once (asynchronously, no clock needed), its release\n"
        "// reaches rst_no on the second rising edge of clk_i after it, so every register reset\n"
        "// by rst_no leaves reset on the same edge and the release meets recovery/removal.\n"
        "// The two registers are the synchroniser the constraints point at (tpu_top.xdc,\n"
        "// tpu_top.sdc: u_rst_sync/sync_q); the attributes mark them for Vivado (ASYNC_REG) and\n"
        "// Quartus (synchroniser identification).\n"
        "\n"
        "module tpu_rst_sync (\n"
        "  input  logic clk_i,\n"
        "  input  logic rst_ni,  // asynchronous, active low\n"
        "  output logic rst_no   // asserted with rst_ni, released synchronously to clk_i\n"
        ");\n"
        "\n"
        "  (* ASYNC_REG = \"TRUE\", altera_attribute = \"-name SYNCHRONIZER_IDENTIFICATION FORCED\" *)\n"
        "  logic [1:0] sync_q;\n"
        "\n"
        "  always_ff @(posedge clk_i or negedge rst_ni) begin\n"
        "    if (!rst_ni) begin\n"
        "      sync_q <= 2'b00;\n"
        "    end else begin\n"
        "      sync_q <= {sync_q[0], 1'b1};\n"
        "    end\n"
        "  end\n"
        "  assign rst_no = sync_q[1];\n"
        "\n"
        "endmodule\n");
    return 0;
}

static const char *const core_trace_ports[] = {
    "tr_ub_we_o",     "tr_ub_row_o",   "tr_ub_data_o",   "tr_ub_seq_o",    "tr_acc_we_o",
    "tr_acc_row_o",   "tr_acc_data_o", "tr_acc_seq_o",   "tr_wm_we_o",     "tr_wm_row_o",
    "tr_wm_data_o",   "tr_wm_seq_o",   "tr_disp_valid_o", "tr_disp_seq_o", "tr_disp_pc_o",
    "tr_disp_iter_o", "tr_disp_insn_o", "tr_err_seq_o",
};

/* internal: tpu_top around the core (gen writes the core when the VPU has N lanes) */
static void emit_top_core(struct strbuf *sb, const struct gen_config *cfg)
{
    sb_puts(sb,
        "//\n"
        "// The core (tpu_core, docs/isa.md) behind the reset synchroniser: its AXI4-Lite control\n"
        "// slave (s_axil_*) and AXI4 data master (m_axi_*) with the same names; rst_ni,\n"
        "// asynchronous, goes through tpu_rst_sync (u_rst_sync) before it reaches the core. The\n"
        "// core's simulation trace outputs (tr_*) are left open: synthesis removes their logic.\n"
        "// The core is a board of one (docs/board.md): id 0, shape 1 x 1, no network (its noc_*\n"
        "// inputs tied off, outputs open): every collective completes at once, send/recv are\n"
        "// error 8.\n"
        "\n"
        "module tpu_top (\n"
        "  input  logic        clk_i,\n"
        "  input  logic        rst_ni,       // asynchronous, active low\n");
    const size_t np = GEN_AXIL_PORTS + GEN_AXI_PORTS;
    for (size_t i = 0; i < np; i++) {
        const struct gen_axi_port *p =
            i < GEN_AXIL_PORTS ? &gen_axil_ports[i] : &gen_axi_ports[i - GEN_AXIL_PORTS];
        /* the data master's data and strobes: --axi-data-bits (docs/isa.md) */
        unsigned bits = p->bits == GEN_AXI_DATA   ? cfg->axi_data_bits
                        : p->bits == GEN_AXI_STRB ? cfg->axi_data_bits / 8u
                                                  : p->bits;
        char w[16] = "";
        if (bits > 1)
            snprintf(w, sizeof w, "[%u:0]", bits - 1u);
        sb_printf(sb, "  %s logic %-7s %s%s\n", p->out ? "output" : "input ", w, p->name,
                  i + 1 < np ? "," : "");
    }
    sb_puts(sb,
        ");\n"
        "\n"
        "  logic rst_sync_n;  // rst_ni, released synchronously\n"
        "\n"
        "  tpu_rst_sync u_rst_sync (\n"
        "    .clk_i  (clk_i),\n"
        "    .rst_ni (rst_ni),\n"
        "    .rst_no (rst_sync_n)\n"
        "  );\n"
        "\n"
        "  tpu_core u_core (\n"
        "    .clk_i,\n"
        "    .rst_ni (rst_sync_n),\n");
    for (size_t i = 0; i < np; i++)
        sb_printf(sb, "    .%s,\n", i < GEN_AXIL_PORTS ? gen_axil_ports[i].name
                                                      : gen_axi_ports[i - GEN_AXIL_PORTS].name);
    /* one core on its own (docs/board.md): a board of one, no network */
    sb_puts(sb,
        "    .core_id_i       (6'd0),\n"
        "    .topo_cores_i    (7'd1),\n"
        "    .topo_rows_i     (7'd1),\n"
        "    .topo_cols_i     (7'd1),\n"
        "    .noc_inj_valid_o (),\n"
        "    .noc_inj_last_o  (),\n"
        "    .noc_inj_flit_o  (),\n"
        "    .noc_inj_ready_i (1'b0),\n"
        "    .noc_ej_valid_i  (1'b0),\n"
        "    .noc_ej_last_i   (1'b0),\n");
    sb_printf(sb, "    .noc_ej_flit_i   (%u'd0),\n", cfg->link_bits);
    sb_puts(sb,
        "    .noc_ej_ready_o  (),\n"
        "    .net_dead_i      (1'b0),\n");
    size_t nt = sizeof core_trace_ports / sizeof core_trace_ports[0];
    for (size_t i = 0; i < nt; i++)
        sb_printf(sb, "    .%s ()%s\n", core_trace_ports[i], i + 1 < nt ? "," : "");
    sb_puts(sb,
        "  );\n"
        "\n"
        "endmodule\n");
}

int emit_top(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_top.sv",
                                       "tpu_top: the top of the generated design (FPGA constraints point here)");
    if (!sb)
        return -1;
    if (cfg->vpu_lanes == cfg->n) {
        emit_top_core(sb, cfg);
        return 0;
    }
    unsigned n = cfg->n;
    sb_puts(sb,
        "//\n"
        "// Without a core (the VPU does not have N lanes): the MXU behind the reset synchroniser,\n"
        "// tpu_mxu's ports (docs/mxu.md) with the same names; rst_ni, asynchronous, goes through\n"
        "// tpu_rst_sync (u_rst_sync) before it reaches the MXU. With the core the clock port\n"
        "// (clk_i), the reset port (rst_ni) and the synchroniser's instance name (u_rst_sync) are\n"
        "// the same, so the constraints (tpu_top.xdc, .sdc, .pcf) hold for both.\n"
        "\n"
        "module tpu_top (\n");
    sb_puts(sb, "  input  logic           clk_i,\n");
    sb_puts(sb, "  input  logic           rst_ni,       // asynchronous, active low\n");
    sb_puts(sb, "  input  logic           wl_valid_i,\n");
    sb_puts(sb, "  input  logic           wl_bank_i,\n");
    sb_puts(sb, "  input  logic           wl_transpose_i,\n");
    sb_printf(sb, "  input  logic [%u:0] wl_data_i,\n", 16u * n - 1u);
    sb_puts(sb, "  input  logic           act_valid_i,\n");
    sb_puts(sb, "  input  logic           act_bank_i,\n");
    sb_printf(sb, "  input  logic [%u:0] act_data_i,\n", 16u * n - 1u);
    sb_printf(sb, "  input  logic [%u:0] psum_data_i,\n", 32u * n - 1u);
    sb_puts(sb, "  output logic           out_valid_o,\n");
    sb_printf(sb, "  output logic [%u:0] out_data_o,\n", 32u * n - 1u);
    sb_puts(sb, "  output logic [1:0]     bank_busy_o\n");
    sb_puts(sb,
        ");\n"
        "\n"
        "  logic rst_sync_n;  // rst_ni, released synchronously\n"
        "\n"
        "  tpu_rst_sync u_rst_sync (\n"
        "    .clk_i  (clk_i),\n"
        "    .rst_ni (rst_ni),\n"
        "    .rst_no (rst_sync_n)\n"
        "  );\n"
        "\n"
        "  tpu_mxu u_mxu (\n"
        "    .clk_i       (clk_i),\n"
        "    .rst_ni      (rst_sync_n),\n"
        "    .wl_valid_i  (wl_valid_i),\n"
        "    .wl_bank_i   (wl_bank_i),\n"
        "    .wl_transpose_i (wl_transpose_i),\n"
        "    .wl_data_i   (wl_data_i),\n"
        "    .act_valid_i (act_valid_i),\n"
        "    .act_bank_i  (act_bank_i),\n"
        "    .act_data_i  (act_data_i),\n"
        "    .psum_data_i (psum_data_i),\n"
        "    .out_valid_o (out_valid_o),\n"
        "    .out_data_o  (out_data_o),\n"
        "    .bank_busy_o (bank_busy_o)\n"
        "  );\n"
        "\n"
        "endmodule\n");
    return 0;
}

/* internal: the .sv files emitted so far, in order (the MXU's, the VPU's, then ours) */
static int is_sv(const char *name)
{
    size_t l = strlen(name);
    return l > 3 && strcmp(name + l - 3, ".sv") == 0;
}

int emit_top_filelist(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb =
        gen_output_add(out, cfg, "tpu_top.f", "tpu_top.f: the top's sources in dependency order");
    if (!sb)
        return -1;
    if (cfg->vpu_lanes == cfg->n) {
        /* the core's sources (tpu_core.f, written before this file), then ours */
        sb_puts(sb,
            "// Names are relative to this file's directory (use with tpu_core.vlt for Verilator:\n"
            "// `-F <dir>/tpu_top.f <dir>/tpu_core.vlt`; `iverilog -g2012 -c tpu_top.f` from here).\n");
        for (size_t i = 0; i < out->count; i++) {
            if (strcmp(out->files[i].name, "tpu_core.f") != 0 || !out->files[i].text.data)
                continue;
            const char *p = out->files[i].text.data;
            while (*p) { /* every line that is not a comment */
                const char *e = strchr(p, '\n');
                size_t l = e ? (size_t)(e - p) : strlen(p);
                if (l > 0 && p[0] != '/')
                    sb_printf(sb, "%.*s\n", (int)l, p);
                p += l + (e ? 1 : 0);
            }
        }
        sb_puts(sb, "tpu_rst_sync.sv\ntpu_top.sv\n");
        return 0;
    }
    sb_puts(sb,
        "// Names are relative to this file's directory (use with tpu_mxu.vlt for Verilator:\n"
        "// `-F <dir>/tpu_top.f <dir>/tpu_mxu.vlt`; `iverilog -g2012 -c tpu_top.f` from here).\n"
        "tpu_bf16_mul.sv\n"
        "tpu_fp32_add.sv\n"
        "tpu_pe.sv\n"
        "tpu_mxu_row.sv\n"
        "tpu_mxu.sv\n"
        "tpu_rst_sync.sv\n"
        "tpu_top.sv\n");
    return 0;
}

/* internal: adds a constraint file (written into --constraints-dir when given) */
static struct strbuf *add_constraint(struct gen_output *out, const struct gen_config *cfg,
                                     const char *name, const char *what)
{
    struct strbuf *sb = gen_output_add_ex(out, cfg, name, what, "#", NULL);
    if (sb)
        out->files[out->count - 1].constraint = 1;
    return sb;
}

int emit_constraints(struct gen_output *out, const struct gen_config *cfg)
{
    unsigned f = cfg->freq_mhz;
    struct strbuf *sb = add_constraint(out, cfg, "tpu_top.xdc",
                                       "tpu_top.xdc: Vivado timing constraints for tpu_top");
    if (!sb)
        return -1;
    sb_printf(sb,
        "#\n"
        "# The clock: clk_i at %u MHz (gen --freq-mhz; docs/fpga.md).\n"
        "create_clock -name clk_i -period ", f);
    put_period_ns(sb, f);
    sb_puts(sb,
        " [get_ports clk_i]\n"
        "\n"
        "# Reset: rst_ni is asynchronous and active low. It drives only the reset synchroniser\n"
        "# (tpu_rst_sync, instance u_rst_sync): its assertion is asynchronous by design, its\n"
        "# release is re-timed by the two sync_q registers, so no timing path starts at rst_ni.\n"
        "# The synchronised reset's release into the design is timed normally (recovery/removal).\n"
        "set_property ASYNC_REG TRUE [get_cells -hierarchical -filter {NAME =~ *u_rst_sync/sync_q_reg*}]\n"
        "set_false_path -from [get_ports rst_ni]\n"
        "\n"
        "# I/O delays are not set: the core is out of context and its ports' timing depends on\n"
        "# the board or the design around it. Add set_input_delay / set_output_delay against\n"
        "# clk_i for your case; without them Vivado does not time the ports.\n");

    sb = add_constraint(out, cfg, "tpu_top.sdc",
                        "tpu_top.sdc: Quartus (Timing Analyzer) constraints for tpu_top");
    if (!sb)
        return -1;
    sb_printf(sb,
        "#\n"
        "# The clock: clk_i at %u MHz (gen --freq-mhz; docs/fpga.md).\n"
        "create_clock -name clk_i -period ", f);
    put_period_ns(sb, f);
    sb_puts(sb,
        " [get_ports {clk_i}]\n"
        "derive_clock_uncertainty\n"
        "\n"
        "# Reset: rst_ni is asynchronous and active low and drives only the reset synchroniser\n"
        "# (tpu_rst_sync, instance u_rst_sync, registers sync_q, marked in the RTL with\n"
        "# SYNCHRONIZER_IDENTIFICATION FORCED); its release is re-timed there, so no timing\n"
        "# path starts at rst_ni. The synchronised release is timed normally.\n"
        "set_false_path -from [get_ports {rst_ni}] -to [get_registers {*u_rst_sync|sync_q*}]\n"
        "\n"
        "# I/O delays are not set: the core is out of context; add set_input_delay /\n"
        "# set_output_delay against clk_i for your board or surrounding design.\n");

    sb = add_constraint(out, cfg, "tpu_top.pcf", "tpu_top.pcf: nextpnr-ice40 constraints for tpu_top");
    if (!sb)
        return -1;
    sb_printf(sb,
        "#\n"
        "# The clock frequency only. No set_io: the core is out of context and has far more\n"
        "# ports than an iCE40 has pins, so it needs a wrapper (bench/synth/ice40_wrap.sv\n"
        "# serialises them) and your board's pin locations; run nextpnr-ice40 with\n"
        "# --pcf-allow-unconstrained until then. Only small configurations fit an iCE40:\n"
        "# N <= 2 on a UP5K or HX8K (docs/fpga.md)%s.\n"
        "set_frequency clk_i %u\n",
        cfg->n <= 2u ? "" : "; this one (N > 2) does not", f);
    return 0;
}

int emit_fusesoc_core(struct gen_output *out, const struct gen_config *cfg)
{
    /* Collect the names first: adding the file may move nothing, but keep it simple. */
    const char *sv[GEN_MAX_FILES];
    size_t nsv = 0;
    for (size_t i = 0; i < out->count; i++)
        if (is_sv(out->files[i].name))
            sv[nsv++] = out->files[i].name;

    struct strbuf *sb = gen_output_add_ex(out, cfg, "tpu.core",
                                          "tpu.core: FuseSoC (CAPI2) core file for tpu_top", "#",
                                          "CAPI=2:");
    if (!sb)
        return -1;
    sb_printf(sb,
        "#\n"
        "# Every generated source, the Verilator configuration, the constraints; targets lint\n"
        "# (Verilator -Wall), sim (Icarus, elaboration of tpu_top) and synth (Vivado, Artix-7\n"
        "# 100T, with tpu_top.xdc). Paths are relative to this file (the gen output directory;\n"
        "# the constraints are in gen's --constraints-dir when it was given).\n"
        "\n"
        "name: \"::tpu:%s\"\n"
        "description: \"TPU-style accelerator, %ux%u MXU (docs/mxu.md, docs/fpga.md)\"\n"
        "\n"
        "filesets:\n"
        "  rtl:\n"
        "    file_type: systemVerilogSource\n"
        "    files:\n", GEN_VERSION, cfg->n, cfg->n);
    for (size_t i = 0; i < nsv; i++)
        sb_printf(sb, "      - %s\n", sv[i]);
    sb_puts(sb,
        "  verilator_cfg:\n"
        "    file_type: vlt\n"
        "    files:\n"
        "      - tpu_mxu.vlt\n"
        "      - tpu_vpu.vlt\n");
    if (cfg->vpu_lanes == cfg->n) /* the core's (tpu_top wraps it) */
        sb_puts(sb, "      - tpu_core.vlt\n");
    sb_puts(sb,
        "  xdc:\n"
        "    file_type: xdc\n"
        "    files:\n");
    sb_printf(sb, "      - %stpu_top.xdc\n", cfg->constraints_rel);
    sb_puts(sb,
        "  sdc:\n"
        "    file_type: SDC\n"
        "    files:\n");
    sb_printf(sb, "      - %stpu_top.sdc\n", cfg->constraints_rel);
    sb_puts(sb,
        "  pcf:\n"
        "    file_type: PCF\n"
        "    files:\n");
    sb_printf(sb, "      - %stpu_top.pcf\n", cfg->constraints_rel);
    sb_puts(sb,
        "\n"
        "targets:\n"
        "  default: &default\n"
        "    filesets: [rtl]\n"
        "    toplevel: tpu_top\n"
        "  lint:\n"
        "    <<: *default\n"
        "    default_tool: verilator\n"
        "    filesets: [rtl, verilator_cfg]\n"
        "    tools:\n"
        "      verilator:\n"
        "        mode: lint-only\n"
        "        verilator_options: [-Wall]\n"
        "  sim:\n"
        "    <<: *default\n"
        "    default_tool: icarus\n"
        "    tools:\n"
        "      icarus:\n"
        "        iverilog_options: [-g2012]\n"
        "  synth:\n"
        "    <<: *default\n"
        "    default_tool: vivado\n"
        "    filesets: [rtl, xdc]\n"
        "    tools:\n"
        "      vivado:\n"
        "        part: xc7a100tcsg324-1\n");
    return 0;
}
