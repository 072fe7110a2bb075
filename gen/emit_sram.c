/* SPDX-License-Identifier: Apache-2.0 */
/* tpu_sram: the core's memories (UB, ACC, WMEM, IMEM words; docs/isa.md "Memories"). */
#include "emit.h"

int emit_sram(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_sram.sv",
                                       "tpu_sram: simple dual-port RAM, registered read, read-first");
    if (!sb)
        return -1;
    sb_puts(sb,
        "//\n"
        "// One write port and one read port on one clock. A read address presented with re_i in\n"
        "// cycle t gives its row on rdata_o in cycle t+1 (rdata_o holds until the next read); a read\n"
        "// of the row written in the same cycle returns the old row (read-first). No reset: the\n"
        "// contents and rdata_o start undefined. Written in the template Vivado, Quartus and Yosys\n"
        "// infer as block RAM (docs/fpga.md \"Memories\"); the array is a plain unpacked array of\n"
        "// packed rows, which Verilator simulates fast.\n"
        "\n"
        "module tpu_sram #(\n"
        "  parameter int Width = 32,\n"
        "  parameter int Depth = 1024,\n"
        "  parameter int AddrW = (Depth > 1) ? $clog2(Depth) : 1\n"
        ") (\n"
        "  input  logic             clk_i,\n"
        "  input  logic             we_i,\n"
        "  input  logic [AddrW-1:0] waddr_i,\n"
        "  input  logic [Width-1:0] wdata_i,\n"
        "  input  logic             re_i,\n"
        "  input  logic [AddrW-1:0] raddr_i,\n"
        "  output logic [Width-1:0] rdata_o\n"
        ");\n"
        "\n"
        "  logic [Width-1:0] mem_q [Depth];\n"
        "  logic [Width-1:0] rdata_q;\n"
        "\n"
        "  // Addresses past Depth - 1 (only when Depth is not a power of two) are ignored on write\n"
        "  // and read as undefined.\n"
        "  always_ff @(posedge clk_i) begin\n"
        "    if (we_i) begin\n"
        "      mem_q[waddr_i] <= wdata_i;\n"
        "    end\n"
        "    if (re_i) begin\n"
        "      rdata_q <= mem_q[raddr_i];\n"
        "    end\n"
        "  end\n"
        "  assign rdata_o = rdata_q;\n"
        "\n"
        "endmodule\n");
    return 0;
}
