/* SPDX-License-Identifier: Apache-2.0 */
/* tpu_isa_pkg: the ISA's codes for the RTL, written from the C side's one definition
   (cmodel/include/tpu/isa.h: TPU_ISA_OPCODES, TPU_ISA_ERRORS, TPU_ISA_W0_FIELDS,
   TPU_ISA_MEMS, TPU_ISA_LOOP_CONSTS), as Ibex keeps its ibex_pkg.sv: the modules that
   decode instructions name its codes instead of typing opcodes and bit positions themselves.
   They name them qualified, tpu_isa_pkg::OpMatmul: Yosys 0.23 (the FPGA flow) reads those
   but not `import`. */
#include "emit.h"
#include "tpu/isa.h"

int emit_isa_pkg(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_isa_pkg.sv",
                                       "tpu_isa_pkg: the instruction set's codes (docs/isa.md)");
    if (!sb)
        return -1;
    sb_puts(sb,
        "//\n"
        "// Written from cmodel/include/tpu/isa.h, the definition the C model, the assembler and\n"
        "// the disassembler use: a value changes there, for both sides at once. Modules name the\n"
        "// codes qualified (tpu_isa_pkg::OpMatmul): Yosys 0.23 does not read `import`.\n"
        "\n"
        "package tpu_isa_pkg;\n"
        "\n"
        "  // Opcodes, w0[7:0] (docs/isa.md \"Instruction format\")\n");
#define PKG_OP(name, value, sv) sb_printf(sb, "  localparam logic [7:0] %-11s = 8'h%02X;\n", #sv, value);
    TPU_ISA_OPCODES(PKG_OP)
#undef PKG_OP
    sb_puts(sb, "\n  // Error codes, ERR_CODE (docs/isa.md \"Errors\")\n");
#define PKG_ERR(name, value, sv) sb_printf(sb, "  localparam logic [7:0] %-11s = 8'd%u;\n", #sv, value);
    TPU_ISA_ERRORS(PKG_ERR)
#undef PKG_ERR
    sb_puts(sb, "\n  // Memory ids: a DMA's flags[1:0]; the VPU's one-bit memory fields are the low bit\n");
#define PKG_MEM(name, value, sv) sb_printf(sb, "  localparam logic [1:0] %-11s = 2'd%u;\n", #sv, value);
    TPU_ISA_MEMS(PKG_MEM)
#undef PKG_MEM
    sb_puts(sb, "\n  // vop's VPU ops, flags[3:0] (docs/isa.md \"vop\"): the last binary op, the first unary\n"
                "  // op, log (the first op after the VPU lane's own smexp code) and the last op\n");
    sb_printf(sb, "  localparam logic [3:0] VopMin      = 4'd%u;\n", (unsigned)TPU_VOP_MIN);
    sb_printf(sb, "  localparam logic [3:0] VopCvt      = 4'd%u;\n", (unsigned)TPU_VOP_CVT);
    sb_printf(sb, "  localparam logic [3:0] VopLog      = 4'd%u;\n", (unsigned)TPU_VOP_LOG);
    sb_printf(sb, "  localparam logic [3:0] VopLast     = 4'd%u;\n", (unsigned)TPU_VOP_COUNT - 1u);
    sb_puts(sb, "\n  // The fields of w0 every instruction has: the lowest bit and the width\n");
#define PKG_FIELD(name, lsb, width, sv) \
    sb_printf(sb, "  localparam int %sLsb = %u, %sW = %u;\n", #sv, lsb, #sv, width);
    TPU_ISA_W0_FIELDS(PKG_FIELD)
#undef PKG_FIELD
    sb_puts(sb, "\n  // Loops and index registers (docs/isa.md \"Loops\"): levels, registers, "
                "selector fields\n");
#define PKG_CONST(name, value, sv) sb_printf(sb, "  localparam int %-15s = %u;\n", #sv, value);
    TPU_ISA_LOOP_CONSTS(PKG_CONST)
#undef PKG_CONST
    sb_puts(sb, "\nendpackage\n");
    return 0;
}
