// SPDX-License-Identifier: Apache-2.0
// The Verilator context, the +trace waveform and the clock edge of the C++ harnesses
// (sim/core_tb.cpp, sim/mxu_tb.cpp, sim/vpu_tb.cpp; the SystemC board has its own clock).
#ifndef TPU_SIM_TB_CONTEXT_H
#define TPU_SIM_TB_CONTEXT_H

#include <cstdio>
#include <memory>
#include <string>

#include <verilated.h>
#include <verilated_fst_c.h>

#include "tb_options.h"

namespace tb {

// X-initialisation randomised (--x-initial unique) from +verilator+seed+N, or from a fresh
// seed that the harness prints; tracing allowed.
inline std::unique_ptr<VerilatedContext> new_context(int argc, char **argv)
{
    std::unique_ptr<VerilatedContext> ctx{new VerilatedContext};
    ctx->randReset(2); // --x-initial unique: randomise every initial value
    ctx->traceEverOn(true);
    ctx->commandArgs(argc, argv);
    seed_context(ctx.get());
    return ctx;
}

// With +trace: the FST waveform of the whole model, written to path ("TOOL: writing
// waveform PATH"); else none.
template <class Top>
std::unique_ptr<VerilatedFstC> open_fst(VerilatedContext *ctx, Top *top, const std::string &path,
                                        const char *tool)
{
    std::unique_ptr<VerilatedFstC> fst;
    if (plus_trace(ctx)) {
        fst.reset(new VerilatedFstC);
        top->trace(fst.get(), 99);
        fst->open(path.c_str());
        std::printf("%s: writing waveform %s\n", tool, path.c_str());
    }
    return fst;
}

// One clock edge: inputs set before the falling edge are sampled at the next rising one.
template <class Top> void edge(VerilatedContext *ctx, Top *top, VerilatedFstC *fst, int clk)
{
    top->clk_i = clk;
    top->eval();
    if (fst)
        fst->dump(ctx->time());
    ctx->timeInc(1);
}

} // namespace tb

#endif
