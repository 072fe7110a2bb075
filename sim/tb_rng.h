// SPDX-License-Identifier: Apache-2.0
// The harnesses' stall generator (sim/core_tb.cpp, sim/board_tb.cpp and sim/board_axi.h):
// xorshift64*, deterministic per --seed, so that a failing run replays with the seed it
// printed.
#ifndef TPU_SIM_TB_RNG_H
#define TPU_SIM_TB_RNG_H

#include <cstdint>

namespace tb {

struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * UINT64_C(0x9E3779B97F4A7C15) + 1) {}
    uint64_t next()
    {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return s * UINT64_C(0x2545F4914F6CDD1D);
    }
    bool pct(unsigned p) { return p != 0 && next() % 100 < p; }
};

} // namespace tb

#endif
