// SPDX-License-Identifier: Apache-2.0
// tpu_bf16_mul (verilated) against bf16_mul of the C model, on raw bits: every pair of
// hand-picked edge values, then random pairs, or with --exhaustive all 2^32 pairs.
#include <memory>
#include <vector>

#include "Vtpu_bf16_mul.h"
#include "verilated.h"
extern "C" {
#include "tpu/numerics.h"
}
#include "units_common.h"

static uint32_t model(uint32_t a, uint32_t b) {
    return bf16_mul(bf16_from_bits((uint16_t)a), bf16_from_bits((uint16_t)b)).v;
}

// Values at every boundary the multiplier has: zeros, subnormals (DAZ), the smallest and
// largest normals, exponents whose sums land on the FTZ (2^-126) and overflow (2^128)
// boundaries, all-ones significands (product >= 2^15), Infs and NaNs of each kind.
static std::vector<uint16_t> edge_values() {
    std::vector<uint16_t> v;
    const uint16_t mags[] = {
        0x0000, 0x0001, 0x0040, 0x007F,                  // zero, subnormals
        0x0080, 0x0081, 0x00FF, 0x0100,                  // smallest normals
        0x3F80, 0x3F81, 0x3FFF, 0x4000, 0x3F00, 0x3FC0,  // around 1 and 2
        0x1F80, 0x1FFF, 0x2000, 0x2080, 0x1F00, 0x207F,  // 2^-64 region (product ~ 2^-127)
        0x5F80, 0x5FFF, 0x5F00, 0x6000, 0x5F7F,          // 2^64 region (product ~ 2^128)
        0x7F00, 0x7F7F, 0x7F7E, 0x0C00, 0x3000, 0x3380,  // large, assorted
        0x7F80,                                          // Inf
        0x7F81, 0x7FC0, 0x7FFF, 0x7FA0,                  // signalling and quiet NaNs
    };
    for (uint16_t m : mags) {
        v.push_back(m);
        v.push_back((uint16_t)(m | 0x8000));
    }
    return v;
}

int main(int argc, char **argv) {
    units::Options opt = units::parse_options(argc, argv,
        "tb_bf16_mul [--seed S] [--count N] [--exhaustive]");
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto dut = std::make_unique<Vtpu_bf16_mul>(ctx.get());
    units::Checker chk("tpu_bf16_mul");
    auto run = [&](uint32_t a, uint32_t b) {
        dut->a_i = (uint16_t)a;
        dut->b_i = (uint16_t)b;
        dut->eval();
        chk.check(a, b, dut->p_o, model(a, b));
    };

    if (opt.exhaustive) {
        for (uint64_t ab = 0; ab < (1ull << 32); ab++)
            run((uint32_t)(ab >> 16), (uint32_t)(ab & 0xFFFF));
        return chk.finish();
    }
    const std::vector<uint16_t> edges = edge_values();
    for (uint16_t a : edges)
        for (uint16_t b : edges)
            run(a, b);
    // Every exponent pair with random significands and signs: covers the whole FTZ and
    // overflow boundary (exponent sums 127, 128, 381, 382) for each significand product.
    units::Rng rng(opt.seed);
    for (uint32_t ea = 0; ea < 256; ea++)
        for (uint32_t eb = 0; eb < 256; eb++)
            for (int k = 0; k < 4; k++) {
                uint32_t r = rng.u32();
                run((r & 0x807F) | (ea << 7), ((r >> 16) & 0x807F) | (eb << 7));
            }
    for (uint64_t i = 0; i < opt.count; i++) {
        uint32_t r = rng.u32();
        run(r >> 16, r & 0xFFFF);
    }
    return chk.finish();
}
