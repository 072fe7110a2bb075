// SPDX-License-Identifier: Apache-2.0
// The retire line of the core trace, format 3 (docs/isa.md "Trace (core)"), from a core's
// dispatch trace ports (tr_disp_seq_o, tr_disp_pc_o, tr_disp_iter_o, tr_disp_insn_o):
// `r <seq> <pc> <i0>.<i1>. ... .<i5> <disassembly of the resolved instruction>`, the text the
// model writes (cmodel/src/core_trace.c). Used by sim/core_tb.cpp and sim/board_tb.cpp.
#ifndef TPU_SIM_TB_TRACE_H
#define TPU_SIM_TB_TRACE_H

#include <cstdint>
#include <cstdio>
#include <string>

#include "tpu/isa.h"

namespace tb {

// The 32-bit words of tr_disp_iter_o (16 bits per loop level).
constexpr unsigned kIterWords = (16u * TPU_LOOP_LEVELS + 31u) / 32u;

// iter: i_l in bits [16l +: 16] of the words iter[0 .. kIterWords-1]; w: the resolved
// instruction's words w0..w3
inline std::string retire_line(uint32_t seq, unsigned pc, const uint32_t iter[kIterWords],
                               const uint32_t w[4])
{
    tpu_insn_t raw = { { w[0], w[1], w[2], w[3] } };
    char text[160];
    tpu_insn_disasm(raw, text, sizeof text);
    std::string line = "r " + std::to_string(seq) + " " + std::to_string(pc) + " ";
    for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++) {
        if (l)
            line += '.';
        line += std::to_string((iter[l / 2] >> (16 * (l % 2))) & 0xFFFFu);
    }
    return line + " " + text;
}

} // namespace tb

#endif
