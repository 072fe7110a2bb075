// SPDX-License-Identifier: Apache-2.0
// The harnesses' shared option handling (sim/*_tb.cpp): the one-line usage error, unsigned
// option values, and the Verilator plusargs every harness takes: +verilator+seed+N (a fresh
// seed when none is given, printed by the harness so that the run replays) and +trace.
#ifndef TPU_SIM_TB_OPTIONS_H
#define TPU_SIM_TB_OPTIONS_H

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include <unistd.h>

#include <verilated.h>

#include "tb_rng.h"
#include "tpu/cli.h"
#include "tpu/isa.h"

namespace tb {

// "TOOL: error: WHAT[: ARG] (try --help)"; returns the exit status of bad arguments, 2.
inline int usage_error(const char *tool, const char *what, const char *arg)
{
    std::fprintf(stderr, "%s: error: %s%s%s (try --help)\n", tool, what, arg ? ": " : "",
                 arg ? arg : "");
    return 2;
}

// A count, the whole string, in the tools' one grammar (tpu/cli.h): decimal digits only,
// "010" is ten; no blank, sign or 0x (a leading '+' only with plus_ok, for the plusargs).
inline bool parse_u64(const char *s, uint64_t *out, bool plus_ok = false)
{
    if (s == nullptr || *s == '\0' || *s == '-' || (*s == '+' && !plus_ok))
        return false;
    if (*s == '+')
        s++;
    uint64_t v = 0;
    if (tpu_cli_dec_n(s, std::strlen(s), &v) != 0 || v == UINT64_MAX)
        return false;
    *out = v;
    return true;
}

// Whether an option (by name) was already given on this command line: as in every tool
// (tpu/cli.h), an option is given once (--load and --dump, host options, may repeat).
inline bool given_twice(const std::string &name)
{
    static std::set<std::string> seen;
    return !seen.insert(name).second;
}

// Whether the host must also write zeros into IMEM past the program (the model reads
// instructions count .. IMEM - 1 as all-zero words, `nop`, tpu/core.h; the RTL's IMEM starts
// random): only when the run can reach them -- the program is empty, does not end with halt,
// or starts past its end. (Found by tpu-mkprog random: a program without halt ended with
// error 6 on the model and error 1 on the RTL.)
inline bool imem_fill_needed(const tpu_insn_t *prog, size_t count, uint64_t pc_start)
{
    if (count == 0 || pc_start >= count)
        return true;
    tpu_dinsn_t d;
    tpu_insn_decode(prog[count - 1], &d);
    return d.opcode != TPU_OP_HALT;
}

// An address or seed: decimal or 0x hex (tpu/cli.h).
inline bool parse_num(const char *s, uint64_t *out)
{
    return s != nullptr && tpu_cli_num_n(s, std::strlen(s), out) == 0;
}

// The host-memory options of core_tb and board_tb: --axi-latency C, --stall P, --seed S,
// --max-cycles C. Returns -1 when NAME is none of them, 0 when VALUE is set, else the exit
// status after the usage error.
inline int parse_host_mem_option(const char *tool, const std::string &name, const char *v,
                                 unsigned *axi_latency, unsigned *stall, uint64_t *seed,
                                 uint64_t *max_cycles)
{
    uint64_t x = 0;
    if (name == "--axi-latency") {
        if (!parse_u64(v, &x) || x < 1 || x > TPU_LIM_AXI_LATENCY_MAX)
            return usage_error(tool, "--axi-latency takes cycles in 1 .. 1000", v);
        *axi_latency = static_cast<unsigned>(x);
    } else if (name == "--stall") {
        if (!parse_u64(v, &x) || x > 90)
            return usage_error(tool, "--stall takes a percentage in 0 .. 90", v);
        *stall = static_cast<unsigned>(x);
    } else if (name == "--seed") {
        if (!parse_num(v, &x))
            return usage_error(tool, "--seed takes an unsigned integer (decimal or 0x hex)", v);
        *seed = x;
    } else if (name == "--max-cycles") {
        if (!parse_u64(v, &x) || x == 0)
            return usage_error(tool, "--max-cycles takes a positive integer", v);
        *max_cycles = x;
    } else {
        return -1;
    }
    return 0;
}

// A fresh positive seed (Verilator takes a positive int) from the time and the process.
inline int time_seed()
{
    const uint64_t t = static_cast<uint64_t>(
        std::chrono::steady_clock::now().time_since_epoch().count());
    Rng r(t ^ (static_cast<uint64_t>(getpid()) << 32));
    return static_cast<int>(r.next() % 2147483646u) + 1;
}

// After commandArgs: a fresh X-initialisation seed unless +verilator+seed+N gave one.
inline void seed_context(VerilatedContext *ctx)
{
    if (ctx->randSeed() == 0)
        ctx->randSeed(time_seed());
}

// Whether +trace (exactly) is on the command line.
inline bool plus_trace(VerilatedContext *ctx)
{
    const char *p = ctx->commandArgsPlusMatch("trace");
    return p != nullptr && std::strcmp(p, "+trace") == 0;
}

} // namespace tb

#endif
