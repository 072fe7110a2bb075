/* SPDX-License-Identifier: Apache-2.0 */
/* The arithmetic modules: tpu_bf16_mul (exact bf16 x bf16 -> fp32) and tpu_fp32_add (fp32
   adder). Both are combinational and independent of the configuration; their bit-exact
   behaviour is docs/numerics.md, with cmodel/src/bf16_mul.c and fp32_add.c the reference.
   The texts below are the only definition of the numerics in gen: the modules are written
   from them as they are. The PE's multiply-accumulate (emit_arith_mac, end of this file) is
   one text of its own, specialised to where its operands come from and cut into pipeline
   stages for --pe-stages 2 and 3; tests/fpga/test_pe_mac.sh proves it equal to these two at
   every depth. */
#include <string.h>

#include "emit.h"

static const char bf16_mul_head[] =
    "//\n"
    "// Combinational, no state (so no reset). Special cases in the order docs/numerics.md gives:\n"
    "//   NaN input -> 0x7FC00000; Inf x 0 -> 0x7FC00000; Inf x nonzero -> Inf (XOR of signs);\n"
    "//   0 x finite -> zero (XOR of signs); otherwise the exact product p, with\n"
    "//   |p| < 2^-126 -> signed zero (FTZ) and |p| >= 2^128 -> signed Inf.\n"
    "// Subnormal inputs count as zeros (DAZ). The product of the two 8-bit significands has at\n"
    "// most 16 bits, which the 24-bit fp32 significand always holds: nothing is ever rounded.\n"
    "\n"
    "module tpu_bf16_mul (\n"
    "  input  logic [15:0] a_i,  // bf16\n"
    "  input  logic [15:0] b_i,  // bf16\n"
    "  output logic [31:0] p_o   // fp32: a_i x b_i, exact (see above)\n"
    ");\n"
    "\n";

/* The multiplier's body: the one text of its numerics (also run by tpu_pe, see below). */
static const char bf16_mul_body[] =
    "  localparam logic [31:0] QNaN = 32'h7FC0_0000;\n"
    "\n"
    "  logic        sign;\n"
    "  logic [7:0]  exp_a, exp_b;\n"
    "  logic        zero_a, zero_b, inf_a, inf_b, nan_a, nan_b;\n"
    "  logic [15:0] sig_prod;  // (1.frac_a * 2^7) * (1.frac_b * 2^7), in [2^14, 2^16)\n"
    "  logic [8:0]  exp_sum;   // exp_a + exp_b + (sig_prod >= 2^15): 2 .. 509\n"
    "  logic [7:0]  exp_p;     // biased exponent of a normal product: exp_sum - 127\n"
    "  logic [22:0] frac_p;\n"
    "\n"
    "  assign sign   = a_i[15] ^ b_i[15];\n"
    "  assign exp_a  = a_i[14:7];\n"
    "  assign exp_b  = b_i[14:7];\n"
    "  assign zero_a = exp_a == 8'h00;  // zero or subnormal (DAZ)\n"
    "  assign zero_b = exp_b == 8'h00;\n"
    "  assign inf_a  = exp_a == 8'hFF && a_i[6:0] == 7'h00;\n"
    "  assign inf_b  = exp_b == 8'hFF && b_i[6:0] == 7'h00;\n"
    "  assign nan_a  = exp_a == 8'hFF && a_i[6:0] != 7'h00;\n"
    "  assign nan_b  = exp_b == 8'hFF && b_i[6:0] != 7'h00;\n"
    "\n"
    "  // Both factors are below 2^8, so the 16-bit product is exact.\n"
    "  assign sig_prod = {8'h00, 1'b1, a_i[6:0]} * {8'h00, 1'b1, b_i[6:0]};\n"
    "  // The product is sig_prod * 2^(exp_a + exp_b - 254 - 14); normalised to 1.f it has the\n"
    "  // biased exponent exp_a + exp_b - 127, one more if sig_prod reached 2^15.\n"
    "  assign exp_sum = {1'b0, exp_a} + {1'b0, exp_b} + {8'h00, sig_prod[15]};\n"
    "  assign exp_p   = 8'(exp_sum - 9'd127);\n"
    "  assign frac_p  = sig_prod[15] ? {sig_prod[14:0], 8'h00} : {sig_prod[13:0], 9'h000};\n"
    "\n"
    "  always_comb begin\n"
    "    if (nan_a || nan_b) begin\n"
    "      p_o = QNaN;\n"
    "    end else if ((inf_a && zero_b) || (inf_b && zero_a)) begin\n"
    "      p_o = QNaN;\n"
    "    end else if (inf_a || inf_b) begin\n"
    "      p_o = {sign, 8'hFF, 23'h000000};\n"
    "    end else if (zero_a || zero_b) begin\n"
    "      p_o = {sign, 31'h00000000};\n"
    "    end else if (exp_sum <= 9'd127) begin  // biased exponent <= 0: below 2^-126, flush\n"
    "      p_o = {sign, 31'h00000000};\n"
    "    end else if (exp_sum >= 9'd382) begin  // biased exponent >= 255: 2^128 or more\n"
    "      p_o = {sign, 8'hFF, 23'h000000};\n"
    "    end else begin\n"
    "      p_o = {sign, exp_p, frac_p};\n"
    "    end\n"
    "  end\n";

/* tpu_fp32_add is written from two halves: the alignment half (fp32_add_align), the wires
   between them (fp32_add_mid) and the add/normalise/round half (fp32_add_norm). */
static const char fp32_add_doc[] =
    "//\n"
    "// DAZ on both inputs, IEEE 754 addition rounded once to nearest even, FTZ keeping the exact\n"
    "// sum's sign, canonical NaN 0x7FC00000:\n"
    "//   NaN input or Inf + (-Inf) -> NaN; otherwise an Inf input gives that Inf;\n"
    "//   (-0) + (-0) = -0, any other pair of zeros = +0; zero + y = y; x + (-x) = +0;\n"
    "//   a rounded magnitude >= 2^128 -> Inf; a nonzero sum below 2^-126 -> zero of its sign.\n"
    "//\n"
    "// Why three extra bits (guard, round, sticky) are enough. x is the operand of larger\n"
    "// magnitude, y the other; d = exp(x) - exp(y). Both 24-bit significands are carried in 27\n"
    "// bits with three zero bits below them (x's leading 1 at bit 26); y is shifted right by d\n"
    "// and every bit shifted out below bit 0 is ORed into bit 0 (jamming: the bits lost are\n"
    "// sig_y[d-1:0], so they are tested with a mask rather than shifted out). The 28-bit sum has\n"
    "// its carry at bit 27. Unit = the weight of bit 0.\n"
    "//  - d <= 1: no bit of y leaves the field, so the sum is exact.\n"
    "//  - d >= 2: the aligned y is below 2^25 and x is at least 2^26, so the sum is at least\n"
    "//    2^25 and its leading 1 is at bit 25, 26 or 27. The 24 kept bits therefore end at bit 2\n"
    "//    or higher: every rounding boundary (a representable value or a midpoint between two)\n"
    "//    is a multiple of 2 units. If bits were lost, the exact aligned y and the jammed y (odd)\n"
    "//    lie strictly inside the same interval (2k, 2k+2); x is a multiple of 8, so the exact\n"
    "//    and the computed sum lie strictly inside the same interval between consecutive\n"
    "//    multiples of 2 and round identically (same kept bits, same round bit, nonzero sticky).\n"
    "// So this gives the correctly rounded sum, as the C model does with 30 extra bits.\n"
    "// Inputs are normal or zero after DAZ, so a sum below 2^-126 is exact and is flushed\n"
    "// before any rounding could matter.\n"
    "//\n"
    "// Two halves of about equal depth: (1) classes, the results decided by the classes alone,\n"
    "// order, alignment and the significand sum; (2) normalise, round, result. The al_* signals\n"
    "// pass from one to the other (ad_*).\n";

static const char fp32_add_align[] =
    "  // ==== First half: alignment ====\n"
    "  // ---- Classes (DAZ: exponent 0 means zero) ----\n"
    "  logic zero_a, zero_b, inf_a, inf_b, nan_a, nan_b;\n"
    "  assign zero_a = a_i[30:23] == 8'h00;\n"
    "  assign zero_b = b_i[30:23] == 8'h00;\n"
    "  assign inf_a  = a_i[30:23] == 8'hFF && a_i[22:0] == 23'h000000;\n"
    "  assign inf_b  = b_i[30:23] == 8'hFF && b_i[22:0] == 23'h000000;\n"
    "  assign nan_a  = a_i[30:23] == 8'hFF && a_i[22:0] != 23'h000000;\n"
    "  assign nan_b  = b_i[30:23] == 8'hFF && b_i[22:0] != 23'h000000;\n"
    "\n"
    "  // ---- Results the classes decide alone: NaN, Inf, two zeros ----\n"
    "  // Each is {sign, exponent all zeros or all ones, fraction 0 or the quiet bit}: al_spec\n"
    "  // holds the three bits that vary. One zero operand is not special: the zero enters the\n"
    "  // sum as 0 (sig_y below), and x + 0 comes out of the sum path exactly as x.\n"
    "  logic       sign_a, sign_b;\n"
    "  logic       both_neg;  // (-0) + (-0) = -0, other pairs of zeros give +0\n"
    "  logic       inf_same;  // two Infs of the same sign (else Inf - Inf)\n"
    "  logic       al_special;\n"
    "  logic [2:0] al_spec;   // {sign, exponent = 8'hFF, fraction bit 22}\n"
    "  assign sign_a   = a_i[31];\n"
    "  assign sign_b   = b_i[31];\n"
    "  assign both_neg = sign_a & sign_b;\n"
    "  assign inf_same = sign_a == sign_b;\n"
    "  always_comb begin\n"
    "    al_special = 1'b1;\n"
    "    if (nan_a || nan_b) begin\n"
    "      al_spec = 3'b011;  // QNaN\n"
    "    end else if (inf_a && inf_b) begin\n"
    "      al_spec = inf_same ? {sign_a, 2'b10} : 3'b011;\n"
    "    end else if (inf_a) begin\n"
    "      al_spec = {sign_a, 2'b10};\n"
    "    end else if (inf_b) begin\n"
    "      al_spec = {sign_b, 2'b10};\n"
    "    end else if (zero_a && zero_b) begin\n"
    "      al_spec = {both_neg, 2'b00};\n"
    "    end else begin  // both normal, or one zero: the second half gives the sum\n"
    "      al_special = 1'b0;\n"
    "      al_spec    = 3'b000;\n"
    "    end\n"
    "  end\n"
    "\n"
    "  // ---- Order by magnitude: |x| >= |y| (x is normal unless the result is special) ----\n"
    "  logic        swap;\n"
    "  logic [31:0] x, y;\n"
    "  assign swap = b_i[30:0] > a_i[30:0];\n"
    "  assign x    = swap ? b_i : a_i;\n"
    "  assign y    = swap ? a_i : b_i;\n"
    "\n"
    "  // ---- Align y: significand, guard, round, sticky ----\n"
    "  logic [7:0]  exp_diff;    // exp(x) - exp(y): 0 .. 253\n"
    "  logic [4:0]  shift;       // exp_diff, clamped at 27 (all of y shifted out)\n"
    "  logic [26:0] sig_x, sig_y;  // sig_y = 0 for a zero (or, DAZ, subnormal) y\n"
    "  logic        zero_y;\n"
    "  logic [26:0] sig_y_sh;    // sig_y >> shift\n"
    "  logic [26:0] lost_mask;   // the bits of sig_y that shift leaves below bit 0: [shift-1:0]\n"
    "  logic        sticky;      // one of them is set\n"
    "  logic [26:0] sig_y_al;    // aligned y, lost bits jammed into bit 0\n"
    "  assign exp_diff  = x[30:23] - y[30:23];\n"
    "  assign shift     = (exp_diff > 8'd27) ? 5'd27 : exp_diff[4:0];\n"
    "  assign sig_x     = {1'b1, x[22:0], 3'b000};\n"
    "  assign zero_y    = y[30:23] == 8'h00;\n"
    "  assign sig_y     = zero_y ? 27'h0000000 : {1'b1, y[22:0], 3'b000};\n"
    "  assign sig_y_sh  = sig_y >> shift;\n"
    "  assign lost_mask = ~(27'h7FFFFFF << shift);\n"
    "  assign sticky    = (sig_y & lost_mask) != 27'h0000000;\n"
    "  assign sig_y_al  = {sig_y_sh[26:1], sig_y_sh[0] | sticky};\n"
    "\n"
    "  // ---- Add or subtract the significands (never negative: |x| >= |y|) ----\n"
    "  logic        eff_sub;     // signs differ: subtract the magnitudes\n"
    "  logic [27:0] al_sum;\n"
    "  logic        al_sign_x;   // sign of the larger operand: the sign of any nonzero sum\n"
    "  logic [7:0]  al_exp_x;\n"
    "  assign eff_sub   = x[31] ^ y[31];\n"
    "  assign al_sum    = eff_sub ? ({1'b0, sig_x} - {1'b0, sig_y_al}) : ({1'b0, sig_x} + {1'b0, sig_y_al});\n"
    "  assign al_sign_x = x[31];\n"
    "  assign al_exp_x  = x[30:23];\n"
    "\n";

/* The signals that cross from the first half to the second: name, declaration width. */
static const struct {
    const char *name, *width;
    unsigned bits;
} fp32_add_mid[] = {
    { "special", "      ", 1 }, { "spec", "[2:0] ", 3 }, { "sign_x", "      ", 1 },
    { "exp_x", "[7:0] ", 8 },   { "sum", "[27:0]", 28 },
};
#define FP32_ADD_MID_N (sizeof fp32_add_mid / sizeof fp32_add_mid[0])

static const char fp32_add_norm[] =
    "  // ==== Second half: normalise, round ====\n"
    "  // ---- Normalise: bring the leading 1 to bit 27 ----\n"
    "  // A logarithmic shifter on {sum, 4'b0}: each stage shifts left by 16, 8, 4, 2, 1 if the\n"
    "  // bits it would shift out are all zero; the stage decisions are the leading-zero count.\n"
    "  // (sum = 0 is handled apart.)\n"
    "  logic [31:0] nrm0, nrm1, nrm2, nrm3, nrm4, nrm5;\n"
    "  logic        z16, z8, z4, z2, z1;  // stage shifts\n"
    "  logic [4:0]  lzc;   // leading zeros of sum: 0 .. 27\n"
    "  logic [27:0] norm;  // sum << lzc\n"
    "  logic [3:0]  unused_nrm;\n"
    "  assign nrm0   = {ad_sum, 4'h0};\n"
    "  assign z16    = nrm0[31:16] == 16'h0000;\n"
    "  assign nrm1   = z16 ? {nrm0[15:0], 16'h0000} : nrm0;\n"
    "  assign z8     = nrm1[31:24] == 8'h00;\n"
    "  assign nrm2   = z8 ? {nrm1[23:0], 8'h00} : nrm1;\n"
    "  assign z4     = nrm2[31:28] == 4'h0;\n"
    "  assign nrm3   = z4 ? {nrm2[27:0], 4'h0} : nrm2;\n"
    "  assign z2     = nrm3[31:30] == 2'b00;\n"
    "  assign nrm4   = z2 ? {nrm3[29:0], 2'b00} : nrm3;\n"
    "  assign z1     = !nrm4[31];\n"
    "  assign nrm5   = z1 ? {nrm4[30:0], 1'b0} : nrm4;\n"
    "  assign lzc    = {z16, z8, z4, z2, z1};\n"
    "  assign norm   = nrm5[31:4];\n"
    "  assign unused_nrm = nrm5[3:0];  // always zero: sum has at most 27 leading zeros\n"
    "\n"
    "  // ---- Round to nearest even: norm[27:4] kept, norm[3] round, norm[2:0] sticky ----\n"
    "  logic        round_up;\n"
    "  logic        carry;   // the rounding carries out: mant = 2^24 (mant[24], found directly)\n"
    "  logic [24:0] mant;    // rounded significand; bit 24 set when rounding carried out\n"
    "  logic [9:0]  exp_r;   // biased exponent of the result, two's complement: -26 .. 256\n"
    "  logic [1:0]  unused_mant;\n"
    "  assign round_up = norm[3] & ((norm[2:0] != 3'b000) | norm[4]);\n"
    "  assign mant     = {1'b0, norm[27:4]} + {24'h000000, round_up};\n"
    "  assign carry    = round_up & (norm[27:4] == 24'hFFFFFF);\n"
    "  // sum's leading 1 at bit 27 - lzc weighs 2^(exp(x) - 127 + 1 - lzc); a carry out of the\n"
    "  // rounding leaves mant = 2^24 (fraction 0) one binade up.\n"
    "  assign exp_r = {2'b00, ad_exp_x} + 10'd1 - {5'h00, lzc} + {9'h000, carry};\n"
    "  // mant[24] is carry; mant[23] the hidden 1 (or 0 after a carry out): neither is stored\n"
    "  assign unused_mant = mant[24:23];\n"
    "\n"
    "  // ---- Result ----\n"
    "  logic        tiny;       // exponent <= 0: below 2^-126\n"
    "  logic        huge;       // exponent >= 255: 2^128 or more\n"
    "  logic [7:0]  exp_o;\n"
    "  logic [22:0] frac_o;\n"
    "  logic [31:0] spec_o;     // the special result (first half)\n"
    "  assign tiny     = exp_r[9] || exp_r == 10'd0;\n"
    "  assign huge     = !exp_r[9] && exp_r >= 10'd255;\n"
    "  assign exp_o    = exp_r[7:0];\n"
    "  assign frac_o   = mant[22:0];\n"
    "  assign spec_o   = {ad_spec[2], {8{ad_spec[1]}}, ad_spec[0], 22'h000000};\n"
    "\n"
    "  always_comb begin\n"
    "    if (ad_special) begin  // NaN, Inf or two zeros (first half)\n"
    "      s_o = spec_o;\n"
    "    end else if (ad_sum == 28'h0000000) begin  // x + (-x): +0 under round to nearest\n"
    "      s_o = 32'h00000000;\n"
    "    end else if (tiny) begin  // flush to zero, keeping the sign of the exact sum\n"
    "      s_o = {ad_sign_x, 31'h00000000};\n"
    "    end else if (huge) begin\n"
    "      s_o = {ad_sign_x, 8'hFF, 23'h000000};\n"
    "    end else begin\n"
    "      s_o = {ad_sign_x, exp_o, frac_o};\n"
    "    end\n"
    "  end\n";

/* internal: the adder's whole text */
static void emit_fp32_add_text(struct strbuf *sb)
{
    sb_puts(sb, fp32_add_doc);
    sb_puts(sb,
        "//\n"
        "// Combinational, no state (so no reset).\n"
        "\n"
        "module tpu_fp32_add (\n"
        "  input  logic [31:0] a_i,\n"
        "  input  logic [31:0] b_i,\n"
        "  output logic [31:0] s_o   // a_i + b_i as above\n"
        ");\n"
        "\n");
    sb_puts(sb, fp32_add_align);
    sb_puts(sb, "  // ==== Between the halves: wires ====\n");
    for (size_t i = 0; i < FP32_ADD_MID_N; i++)
        sb_printf(sb, "  logic %s ad_%s;\n", fp32_add_mid[i].width, fp32_add_mid[i].name);
    for (size_t i = 0; i < FP32_ADD_MID_N; i++)
        sb_printf(sb, "  assign ad_%s = al_%s;\n", fp32_add_mid[i].name, fp32_add_mid[i].name);
    sb_puts(sb, "\n");
    sb_puts(sb, fp32_add_norm);
    sb_puts(sb, "\nendmodule\n");
}

int emit_bf16_mul(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(out, cfg, "tpu_bf16_mul.sv",
                                       "tpu_bf16_mul: exact bf16 x bf16 -> fp32 product");
    if (!sb)
        return -1;
    sb_puts(sb, bf16_mul_head);
    sb_puts(sb, bf16_mul_body);
    sb_puts(sb, "\nendmodule\n");
    return 0;
}

int emit_fp32_add(struct gen_output *out, const struct gen_config *cfg)
{
    struct strbuf *sb = gen_output_add(
        out, cfg, "tpu_fp32_add.sv",
        "tpu_fp32_add: fp32 adder (RNE, DAZ, FTZ, canonical NaN), docs/numerics.md");
    if (!sb)
        return -1;
    emit_fp32_add_text(sb);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The same kind of text as procedural code, for tpu_pe                                      */
/* A module body is a list of lines at two spaces: `localparam`, `logic` declarations,
   `assign x = e;`, `always_comb begin` ... `end` and comments. As code that runs inside an
   `if` of an always_ff, it becomes a named block: the declarations first (variables local to
   the block), then every assignment as a blocking one, in the order of the text (which is a
   valid order: each signal is assigned before any line that reads it), with the ports
   renamed to the caller's signals (a localparam line is skipped: the PE's text has none).
   SystemVerilog functions would be the obvious form, but Verilator
   numbers the variables of every inlined call per instance, so the MXU's N rows would no
   longer share one copy of the verilated code (at N = 16 the rows' C++ grew from 3.4 to
   13 MB, one copy per row); a named block's variables are named alike in every instance. */

struct rename {
    const char *from, *to;
};

/* internal: appends s[0..n) with every identifier rn[k].from (whole word) written as
   rn[k].to; a comment is copied as it is */
static void put_code(struct strbuf *sb, const char *s, size_t n, const struct rename *rn,
                     size_t nrn)
{
    size_t i = 0;
    while (i < n) {
        if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
            sb_putn(sb, s + i, n - i);
            return;
        }
        const int start = (s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') ||
                           (s[i] >= 'A' && s[i] <= 'Z'));
        const int after_word = i > 0 && (s[i - 1] == '_' || s[i - 1] == '\'' ||
                                         (s[i - 1] >= '0' && s[i - 1] <= '9') ||
                                         (s[i - 1] >= 'a' && s[i - 1] <= 'z') ||
                                         (s[i - 1] >= 'A' && s[i - 1] <= 'Z'));
        if (!start || after_word) {
            sb_putn(sb, s + i, 1);
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && (s[j] == '_' || (s[j] >= '0' && s[j] <= '9') ||
                         (s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z')))
            j++;
        const char *word = NULL;
        for (size_t k = 0; k < nrn && !word; k++)
            if (strlen(rn[k].from) == j - i && memcmp(rn[k].from, s + i, j - i) == 0)
                word = rn[k].to;
        if (word)
            sb_puts(sb, word);
        else
            sb_putn(sb, s + i, j - i);
        i = j;
    }
}

/* internal: one line at `indent` spaces (an empty line stays empty) */
static void put_line(struct strbuf *sb, unsigned indent, const char *s, size_t n,
                     const struct rename *rn, size_t nrn)
{
    if (n > 0)
        sb_printf(sb, "%*s", (int)indent, "");
    put_code(sb, s, n, rn, nrn);
    sb_puts(sb, "\n");
}

/* internal: a module body as procedural code: its declarations to decls, the rest to
   stmts, at `indent` spaces; -1 if a line is not of the forms above (a statement over
   several lines, an `end` inside always_comb at two spaces) */
static int body_to_proc(struct strbuf *decls, struct strbuf *stmts, const char *text,
                         unsigned indent, const struct rename *rn, size_t nrn)
{
    int in_comb = 0, bad = 0;
    while (*text) {
        const char *nl = strchr(text, '\n');
        const size_t n = nl ? (size_t)(nl - text) : strlen(text);
        const char *next = nl ? nl + 1 : text + n;
#define IS(lit) (n >= sizeof lit - 1 && memcmp(text, lit, sizeof lit - 1) == 0)
        if (n == 0 || IS("  localparam ")) {
            /* blank, or a constant (not in the PE's text) */
        } else if (in_comb && n == 5 && IS("  end")) {
            in_comb = 0;
        } else if (in_comb) { /* four spaces and more: two levels less */
            bad |= n < 4 || memcmp(text, "    ", 4) != 0;
            if (!bad)
                put_line(stmts, indent, text + 4, n - 4, rn, nrn);
        } else if (IS("  always_comb begin")) {
            in_comb = 1;
        } else if (IS("  logic ")) {
            bad |= memchr(text, ';', n) == NULL;
            put_line(decls, indent, text + 2, n - 2, rn, nrn);
        } else if (IS("  assign ")) {
            bad |= memchr(text, ';', n) == NULL;
            put_line(stmts, indent, text + 9, n - 9, rn, nrn);
        } else if (IS("  //")) {
            put_line(stmts, indent, text + 2, n - 2, rn, nrn);
        } else {
            bad = 1;
        }
#undef IS
        text = next;
    }
    return bad || in_comb ? -1 : 0;
}

/* Internal: writes `begin : NAME`, the declarations, the statements and `end` (indented by
   INDENT), then frees both buffers; a failed buffer marks SB failed. */
static void put_block(struct strbuf *sb, const char *name, struct strbuf *decls,
                      struct strbuf *stmts, unsigned indent)
{
    sb_printf(sb, "begin : %s\n", name);
    sb_putn(sb, decls->data ? decls->data : "", decls->len);
    sb_putn(sb, stmts->data ? stmts->data : "", stmts->len);
    sb_printf(sb, "%*send\n", (int)indent, "");
    if (sb_failed(decls) || sb_failed(stmts))
        sb->failed = 1;
    sb_free(decls);
    sb_free(stmts);
}

/* ---------------------------------------------------------------------------------------- */
/* The PE's multiply-accumulate, fused (--pe-stages 1)                                       */
/* fp32_add(acc, bf16_mul(act, w)) bit for bit (the two texts above define it), in one block
   that knows where its operands come from: the product's classes and fields go straight
   into the adder (no fp32 product is packed and decoded again), the magnitude order takes
   23 bits (the product's low 8 fraction bits are zero), the sticky is collected as the
   alignment drops bits, the leading zeros are counted by groups of 4, and the rounding
   carry runs through the exponent field. tests/fpga/test_pe_mac.sh checks it against the C
   model; a Yosys SAT miter against tpu_bf16_mul + tpu_fp32_add proves it equal for every
   input (docs/fpga.md, The PE). The ports are acc_i, act_i, w_i and sum_o. */
static const char pe_mac_prod[] =
    "  // ---- The product: classes, exponent, significand ----\n"
    "  logic [7:0]  exp_a, exp_b;  // the factors' biased exponents\n"
    "  logic        zero_a, zero_b, max_a, max_b, frac0_a, frac0_b;\n"
    "  logic [15:0] sig_prod;      // (1.frac_a * 2^7) * (1.frac_b * 2^7), in [2^14, 2^16)\n"
    "  logic [8:0]  exp_sum;       // exp_a + exp_b + (sig_prod >= 2^15): 2 .. 509\n"
    "  logic        p_nan, p_inf, p_zero, p_sign;\n"
    "  logic [7:0]  exp_p;         // biased exponent of a normal product: exp_sum - 127\n"
    "  logic [14:0] frac_p;        // its fraction: 15 bits, the 8 below them are zero\n"
    "  assign exp_a    = act_i[14:7];\n"
    "  assign exp_b    = w_i[14:7];\n"
    "  assign zero_a   = exp_a == 8'h00;  // zero or subnormal (DAZ)\n"
    "  assign zero_b   = exp_b == 8'h00;\n"
    "  assign max_a    = exp_a == 8'hFF;  // Inf or NaN\n"
    "  assign max_b    = exp_b == 8'hFF;\n"
    "  assign frac0_a  = act_i[6:0] == 7'h00;\n"
    "  assign frac0_b  = w_i[6:0] == 7'h00;\n"
    "  assign sig_prod = {8'h00, 1'b1, act_i[6:0]} * {8'h00, 1'b1, w_i[6:0]};\n"
    "  assign exp_sum  = {1'b0, exp_a} + {1'b0, exp_b} + {8'h00, sig_prod[15]};\n"
    "  // NaN input or Inf x 0: NaN; else an Inf factor or a biased exponent >= 255: Inf; else a\n"
    "  // zero factor or a biased exponent <= 0 (FTZ): zero (tpu_bf16_mul's order)\n"
    "  assign p_nan    = (max_a & !frac0_a) | (max_b & !frac0_b) | (max_a & zero_b) | (max_b & zero_a);\n"
    "  assign p_inf    = !p_nan & (max_a | max_b | (!zero_a & !zero_b & exp_sum >= 9'd382));\n"
    "  assign p_zero   = !max_a & !max_b & (zero_a | zero_b | exp_sum <= 9'd127);\n"
    "  assign p_sign   = act_i[15] ^ w_i[15];\n"
    "  assign exp_p    = exp_a + exp_b + {7'h00, sig_prod[15]} + 8'h81;  // exp_sum - 127, mod 256\n"
    "  assign frac_p   = sig_prod[15] ? sig_prod[14:0] : {sig_prod[13:0], 1'b0};\n";

/* The adder's first half: the accumulator's classes, the order, the alignment, the add. */
static const char pe_mac_add[] =
    "\n"
    "  // ---- The accumulator's classes; the results the classes decide alone ----\n"
    "  // NaN, Inf or two zeros: {sign, exponent all ones or zeros, fraction bit 22} (spec).\n"
    "  logic [7:0]  exp_c;         // the accumulator's biased exponent\n"
    "  logic        c_sign, c_zero, c_max, c_nan, c_inf;\n"
    "  logic        s_nan, special;\n"
    "  logic [2:0]  spec;\n"
    "  assign exp_c   = acc_i[30:23];\n"
    "  assign c_sign  = acc_i[31];\n"
    "  assign c_zero  = exp_c == 8'h00;\n"
    "  assign c_max   = exp_c == 8'hFF;\n"
    "  assign c_nan   = c_max & (acc_i[22:0] != 23'h000000);\n"
    "  assign c_inf   = c_max & (acc_i[22:0] == 23'h000000);\n"
    "  assign s_nan   = c_nan | p_nan | (c_inf & p_inf & (c_sign ^ p_sign));\n"
    "  assign special = c_max | p_nan | p_inf | (c_zero & p_zero);\n"
    "  always_comb begin\n"
    "    if (s_nan) begin\n"
    "      spec = 3'b011;\n"
    "    end else if (c_inf) begin\n"
    "      spec = {c_sign, 2'b10};\n"
    "    end else if (p_inf) begin\n"
    "      spec = {p_sign, 2'b10};\n"
    "    end else begin  // two zeros: -0 only from (-0) + (-0)\n"
    "      spec = {c_sign & p_sign, 2'b00};\n"
    "    end\n"
    "  end\n"
    "\n"
    "  // ---- Order by magnitude: x the larger of acc_i and the product, y the other ----\n"
    "  // The product's low 8 fraction bits are zero, so 23 bits decide; a zero product is never\n"
    "  // the larger, and a zero (subnormal) accumulator is below any normal product.\n"
    "  logic        swap;          // the product is the larger\n"
    "  logic [7:0]  exp_x, exp_y, diff;  // diff = exp_x - exp_y (when y is nonzero)\n"
    "  logic [23:0] sig_x, sig_y;\n"
    "  logic        sign_x, eff_sub;\n"
    "  assign swap    = !p_zero && ({exp_p, frac_p} > acc_i[30:8]);\n"
    "  assign exp_x   = swap ? exp_p : exp_c;\n"
    "  assign exp_y   = swap ? exp_c : exp_p;\n"
    "  assign diff    = exp_x - exp_y;\n"
    "  assign sig_x   = swap ? {1'b1, frac_p, 8'h00} : {1'b1, acc_i[22:0]};\n"
    "  assign sig_y   = swap ? (c_zero ? 24'h000000 : {1'b1, acc_i[22:0]}) : (p_zero ? 24'h000000 : {1'b1, frac_p, 8'h00});\n"
    "  assign sign_x  = swap ? p_sign : c_sign;\n"
    "  assign eff_sub = c_sign ^ p_sign;\n"
    "\n"
    "  // ---- Align y: {sig_y, guard, round, sticky} >> diff, the bits shifted out jammed into\n"
    "  // bit 0 (the argument is tpu_fp32_add's). The fine shift (0..3) comes first and drops only\n"
    "  // the three zero bits, so the sticky is the OR of what the coarse shifts (4, 8, 12; 16)\n"
    "  // drop; diff >= 32 leaves nothing of y but the sticky. ----\n"
    "  logic        big, y_nz;\n"
    "  logic [26:0] al0, al1, al2, al3;\n"
    "  logic        sticky;\n"
    "  logic [26:0] y_al;\n"
    "  assign big  = diff[7:5] != 3'b000;\n"
    "  assign y_nz = swap ? !c_zero : !p_zero;\n"
    "  assign al0  = {sig_y, 3'b000};\n"
    "  always_comb begin\n"
    "    al1 = al0 >> diff[1:0];\n"
    "    al2 = al1 >> {diff[3:2], 2'b00};\n"
    "    al3 = diff[4] ? al2 >> 16 : al2;\n"
    "  end\n"
    "  always_comb begin\n"
    "    sticky = (diff[3:2] == 2'd1 && al1[3:0] != 4'h0) || (diff[3:2] == 2'd2 && al1[7:0] != 8'h00) ||\n"
    "             (diff[3:2] == 2'd3 && al1[11:0] != 12'h000) || (diff[4] && al2[15:0] != 16'h0000);\n"
    "  end\n"
    "  assign y_al   = big ? {26'h0000000, y_nz} : {al3[26:1], al3[0] | sticky};\n"
    "\n"
    "  // ---- Add or subtract the significands (never negative: x is the larger) ----\n"
    "  logic [27:0] sig_sum;\n"
    "  assign sig_sum = {1'b0, sig_x, 3'b000} + ({1'b0, y_al} ^ {28{eff_sub}}) + {27'h0000000, eff_sub};\n";

/* The adder's second half: normalise, round, pack. It reads sig_sum, exp_x, sign_x, special
   and spec of the first half (the --pe-stages 3 register between the halves holds them). */
static const char pe_mac_norm[] =
    "\n"
    "  // ---- Normalise: leading zeros by groups of 4 bits, a coarse shift by 4 x group, a fine\n"
    "  // one by 0..3. A coarse shift (4 leading zeros or more) needs diff <= 1, which leaves the\n"
    "  // sum's bits 1:0 zero; bits 27:3 of the shifted sum are kept, bits 2:0 are a sticky. ----\n"
    "  logic [13:0] grp_lz;        // leading zeros (0..3) of each 4-bit group, bits 27:24 first\n"
    "  logic [4:0]  lzc;           // leading zeros of sig_sum: 0 .. 27\n"
    "  logic [27:0] sum_c, nrm1, nrm2;\n"
    "  logic [27:3] norm;\n"
    "  logic        nrm_sticky;\n"
    "  assign grp_lz[1:0]   = sig_sum[27] ? 2'd0 : sig_sum[26] ? 2'd1 : sig_sum[25] ? 2'd2 : 2'd3;\n"
    "  assign grp_lz[3:2]   = sig_sum[23] ? 2'd0 : sig_sum[22] ? 2'd1 : sig_sum[21] ? 2'd2 : 2'd3;\n"
    "  assign grp_lz[5:4]   = sig_sum[19] ? 2'd0 : sig_sum[18] ? 2'd1 : sig_sum[17] ? 2'd2 : 2'd3;\n"
    "  assign grp_lz[7:6]   = sig_sum[15] ? 2'd0 : sig_sum[14] ? 2'd1 : sig_sum[13] ? 2'd2 : 2'd3;\n"
    "  assign grp_lz[9:8]   = sig_sum[11] ? 2'd0 : sig_sum[10] ? 2'd1 : sig_sum[9] ? 2'd2 : 2'd3;\n"
    "  assign grp_lz[11:10] = sig_sum[7] ? 2'd0 : sig_sum[6] ? 2'd1 : sig_sum[5] ? 2'd2 : 2'd3;\n"
    "  assign grp_lz[13:12] = sig_sum[3] ? 2'd0 : sig_sum[2] ? 2'd1 : sig_sum[1] ? 2'd2 : 2'd3;\n"
    "  always_comb begin\n"
    "    lzc = 5'd27;\n"
    "    if (sig_sum[3:0] != 4'h0) lzc = {3'd6, grp_lz[13:12]};\n"
    "    if (sig_sum[7:4] != 4'h0) lzc = {3'd5, grp_lz[11:10]};\n"
    "    if (sig_sum[11:8] != 4'h0) lzc = {3'd4, grp_lz[9:8]};\n"
    "    if (sig_sum[15:12] != 4'h0) lzc = {3'd3, grp_lz[7:6]};\n"
    "    if (sig_sum[19:16] != 4'h0) lzc = {3'd2, grp_lz[5:4]};\n"
    "    if (sig_sum[23:20] != 4'h0) lzc = {3'd1, grp_lz[3:2]};\n"
    "    if (sig_sum[27:24] != 4'h0) lzc = {3'd0, grp_lz[1:0]};\n"
    "  end\n"
    "  assign sum_c      = {sig_sum[27:2], 2'b00};\n"
    "  assign nrm1       = (lzc[4:2] == 3'd0) ? sig_sum : (sum_c << {lzc[4:2], 2'b00});\n"
    "  assign nrm2       = nrm1 << lzc[1:0];\n"
    "  assign norm       = nrm2[27:3];\n"
    "  assign nrm_sticky = nrm2[2:0] != 3'b000;\n"
    "\n"
    "  // ---- Round to nearest even and pack: norm[27] hidden, norm[26:4] fraction, norm[3]\n"
    "  // round bit. The rounding increment runs through the exponent field, so a carry out of\n"
    "  // the fraction raises the exponent (254 -> 255 with fraction 0 is Inf). A sum below\n"
    "  // 2^-126 is exact (inputs normal or zero), so tiny is decided before the rounding. ----\n"
    "  logic [9:0]  exp_r;         // biased exponent before rounding, two's complement\n"
    "  logic        cancel, tiny, huge, kill, round_up;\n"
    "  logic [7:0]  exp_f;\n"
    "  logic [22:0] frac_f;\n"
    "  logic [30:0] mag;\n"
    "  assign exp_r    = {2'b00, exp_x} + 10'd1 - {5'h00, lzc};\n"
    "  assign cancel   = !norm[27];  // x + (-x): +0 under round to nearest\n"
    "  assign tiny     = exp_r[9] || exp_r == 10'd0;\n"
    "  assign huge     = !exp_r[9] && exp_r >= 10'd255;\n"
    "  assign kill     = special | cancel | tiny | huge;\n"
    "  assign round_up = !kill & norm[3] & (nrm_sticky | norm[4]);\n"
    "  assign frac_f   = {(norm[26] & !kill) | (special & spec[0]), norm[25:4] & {22{!kill}}};\n"
    "  always_comb begin\n"
    "    if (special) begin\n"
    "      exp_f = {8{spec[1]}};\n"
    "    end else if (cancel || tiny) begin\n"
    "      exp_f = 8'h00;\n"
    "    end else if (huge) begin\n"
    "      exp_f = 8'hFF;\n"
    "    end else begin\n"
    "      exp_f = exp_r[7:0];\n"
    "    end\n"
    "  end\n"
    "  assign mag   = {exp_f, frac_f} + {30'h00000000, round_up};\n"
    "  assign sum_o = {special ? spec[2] : (!cancel & sign_x), mag};\n";

/* The pipelined PEs cut the same text at two places: after the product (--pe-stages 2 and 3:
   the register holds the product's classes and fields, MAC_PROD_BITS, not an fp32 that the
   adder would decode again) and between the adder's halves (--pe-stages 3: MAC_MID_BITS). */
static const char pe_mac_prod_out[] =
    "  // the product's classes and fields, for the register after the multiplier\n"
    "  assign p_o = {p_nan, p_inf, p_zero, p_sign, exp_p, frac_p};\n";
static const char pe_mac_prod_in[] =
    "  // ---- The product: its classes and fields, from the register after the multiplier ----\n"
    "  logic        p_nan, p_inf, p_zero, p_sign;\n"
    "  logic [7:0]  exp_p;\n"
    "  logic [14:0] frac_p;\n"
    "  assign {p_nan, p_inf, p_zero, p_sign, exp_p, frac_p} = p_i;\n";
static const char pe_mac_mid_out[] =
    "\n"
    "  // what the second half reads, for the register between the halves\n"
    "  assign m_o = {sig_sum, exp_x, sign_x, special, spec};\n";
static const char pe_mac_mid_in[] =
    "  // ---- The first half's sum, larger exponent and sign, and the special result, from the\n"
    "  // register between the halves ----\n"
    "  logic [27:0] sig_sum;\n"
    "  logic [7:0]  exp_x;\n"
    "  logic        sign_x, special;\n"
    "  logic [2:0]  spec;\n"
    "  assign {sig_sum, exp_x, sign_x, special, spec} = m_i;\n";

int emit_arith_mac(struct strbuf *sb, enum mac_part part, const char *name,
                   const struct mac_io *io, unsigned indent)
{
    const struct rename rn[] = { { "acc_i", io->acc },  { "act_i", io->act }, { "w_i", io->w },
                                 { "p_i", io->prod },   { "m_i", io->mid },   { "sum_o", io->out },
                                 { "p_o", io->out },    { "m_o", io->out } };
    for (size_t i = 0; i < sizeof rn / sizeof rn[0]; i++)
        if (!rn[i].to)
            return -1;
    /* the texts of each part, in order (NULL-terminated), indexed by enum mac_part */
    static const char *const part_texts[][4] = {
        [MAC_FULL]      = { pe_mac_prod, pe_mac_add, pe_mac_norm, NULL },
        [MAC_MUL]       = { pe_mac_prod, pe_mac_prod_out, NULL, NULL },
        [MAC_ADD]       = { pe_mac_prod_in, pe_mac_add, pe_mac_norm, NULL },
        [MAC_ADD_ALIGN] = { pe_mac_prod_in, pe_mac_add, pe_mac_mid_out, NULL },
        [MAC_ADD_NORM]  = { pe_mac_mid_in, pe_mac_norm, NULL, NULL },
    };
    if ((unsigned)part >= sizeof part_texts / sizeof part_texts[0])
        return -1;
    const char *const *texts = part_texts[part];
    struct strbuf decls, stmts;
    int bad = 0;
    sb_init(&decls);
    sb_init(&stmts);
    for (size_t i = 0; i < 4 && texts[i]; i++)
        bad |= body_to_proc(&decls, &stmts, texts[i], indent + 2, rn, sizeof rn / sizeof rn[0]);
    put_block(sb, name, &decls, &stmts, indent);
    return bad ? -1 : 0;
}
