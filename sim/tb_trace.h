// SPDX-License-Identifier: Apache-2.0
// The retire line of the core trace, format 2 (docs/isa.md "Trace (core)"), from a core's
// dispatch trace ports (tr_disp_seq_o, tr_disp_pc_o, tr_disp_iter_o, tr_disp_insn_o):
// `r <seq> <pc> <i0>.<i1>.<i2>.<i3> <disassembly of the resolved instruction>`, the text the
// model writes (cmodel/src/core_trace.c). Used by sim/core_tb.cpp and sim/board_tb.cpp.
#ifndef TPU_SIM_TB_TRACE_H
#define TPU_SIM_TB_TRACE_H

#include <cstdint>
#include <cstdio>
#include <string>

#include "tpu/isa.h"

namespace tb {

// iter: i_l in bits [16l +: 16]; w: the resolved instruction's words w0..w3
inline std::string retire_line(uint32_t seq, unsigned pc, uint64_t iter, const uint32_t w[4])
{
    tpu_insn_t raw = { { w[0], w[1], w[2], w[3] } };
    char text[160];
    tpu_insn_disasm(raw, text, sizeof text);
    char head[96];
    std::snprintf(head, sizeof head, "r %u %u %u.%u.%u.%u ", static_cast<unsigned>(seq), pc,
                  static_cast<unsigned>(iter & 0xFFFFu),
                  static_cast<unsigned>((iter >> 16) & 0xFFFFu),
                  static_cast<unsigned>((iter >> 32) & 0xFFFFu),
                  static_cast<unsigned>((iter >> 48) & 0xFFFFu));
    return std::string(head) + text;
}

} // namespace tb

#endif
