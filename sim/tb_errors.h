// SPDX-License-Identifier: Apache-2.0
// The harnesses' checker log (sim/*_tb.cpp, sim/board_axi.h): the first kMaxErrors
// violations printed in full as "TOOL: ERROR [core C ]cycle N: ...", the rest counted.
#ifndef TPU_SIM_TB_ERRORS_H
#define TPU_SIM_TB_ERRORS_H

#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

namespace tb {

constexpr int kMaxErrors = 10; // violations printed in full; the rest are counted

struct Errors {
    const char *tool; // the harness's name, the prefix of every line
    uint64_t count = 0;
    explicit Errors(const char *t) : tool(t) {}
    // core < 0: a violation not tied to one core
    void vlog(int core, uint64_t cycle, const char *fmt, va_list ap)
    {
        if (++count > kMaxErrors)
            return;
        if (core >= 0)
            std::printf("%s: ERROR core %d cycle %" PRIu64 ": ", tool, core, cycle);
        else
            std::printf("%s: ERROR cycle %" PRIu64 ": ", tool, cycle);
        std::vprintf(fmt, ap);
        std::printf("\n");
    }
    void operator()(uint64_t cycle, const char *fmt, ...) __attribute__((format(printf, 3, 4)))
    {
        va_list ap;
        va_start(ap, fmt);
        vlog(-1, cycle, fmt, ap);
        va_end(ap);
    }
    void operator()(int core, uint64_t cycle, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)))
    {
        va_list ap;
        va_start(ap, fmt);
        vlog(core, cycle, fmt, ap);
        va_end(ap);
    }
};

} // namespace tb

#endif
