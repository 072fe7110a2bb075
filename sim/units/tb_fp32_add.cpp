// SPDX-License-Identifier: Apache-2.0
// tpu_fp32_add (verilated) against fp32_add of the C model, on raw bits: every pair of
// hand-picked edge values, every alignment shift 0..30 (and beyond) with random
// significands, near-cancellations, ties, and random patterns.
#include <memory>
#include <vector>

#include "Vtpu_fp32_add.h"
#include "verilated.h"
extern "C" {
#include "tpu/numerics.h"
}
#include "units_common.h"

static uint32_t model(uint32_t a, uint32_t b) {
    return fp32_add(fp32_from_bits(a), fp32_from_bits(b)).v;
}

static uint32_t mk(uint32_t sign, uint32_t exp, uint32_t frac) {
    return (sign << 31) | ((exp & 0xFF) << 23) | (frac & 0x7FFFFF);
}

// Zeros, subnormals (DAZ), smallest/largest normals (FTZ and overflow boundaries), values
// around 1 and 2 (carry and cancellation), the largest finite (rounds to Inf), Infs, NaNs.
static std::vector<uint32_t> edge_values() {
    std::vector<uint32_t> v;
    const uint32_t mags[] = {
        0x00000000, 0x00000001, 0x00400000, 0x007FFFFF,  // zero, subnormals
        0x00800000, 0x00800001, 0x00FFFFFF, 0x01000000,  // smallest normals
        0x01000001, 0x00C00000,
        0x3F800000, 0x3F800001, 0x3FFFFFFF, 0x40000000,  // around 1 and 2
        0x3F7FFFFF, 0x33800000, 0x33800001, 0x34000000,  // 1 ulp, half ulp of 1
        0x337FFFFF, 0x33000000, 0x3F000000,
        0x7F7FFFFF, 0x7F7FFFFE, 0x7F000000, 0x73800000,  // largest finite, its half ulp
        0x73000000, 0x737FFFFF, 0x7EFFFFFF,
        0x7F800000,                                      // Inf
        0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x7FA00000,  // NaNs, signalling and quiet
    };
    for (uint32_t m : mags) {
        v.push_back(m);
        v.push_back(m | 0x80000000u);
    }
    return v;
}

int main(int argc, char **argv) {
    units::Options opt = units::parse_options(argc, argv, "tb_fp32_add [--seed S] [--count N]");
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto dut = std::make_unique<Vtpu_fp32_add>(ctx.get());
    units::Checker chk("tpu_fp32_add");
    auto run = [&](uint32_t a, uint32_t b) {
        dut->a_i = a;
        dut->b_i = b;
        dut->eval();
        chk.check(a, b, dut->s_o, model(a, b));
    };

    const std::vector<uint32_t> edges = edge_values();
    for (uint32_t a : edges)
        for (uint32_t b : edges)
            run(a, b);

    units::Rng rng(opt.seed);
    // Every alignment shift 0..40 at several exponents (including next to 1, 254 and the
    // FTZ boundary), both signs, random significands, and significands with few bits set
    // (exact ties and sticky-only cases).
    const uint32_t bases[] = { 1, 2, 3, 24, 25, 26, 27, 100, 127, 200, 253, 254 };
    for (uint32_t ex : bases)
        for (uint32_t d = 0; d <= 40 && d < ex; d++)
            for (int k = 0; k < 400; k++) {
                uint32_t fa = rng.u32(), fb = rng.u32();
                if (k % 4 == 1) fb &= 1u << rng.below(23);            // one bit: ties, sticky
                if (k % 4 == 2) fb = (fb & 0x7F0000) | 0xFFFF;        // long runs of ones
                if (k % 4 == 3) fa = 0x7FFFFF;                        // carry into next binade
                uint32_t sa = rng.below(2), sb = rng.below(2);
                run(mk(sa, ex, fa), mk(sb, ex - d, fb));
                run(mk(sb, ex - d, fb), mk(sa, ex, fa));
            }
    for (uint64_t i = 0; i < opt.count; i++) {
        uint32_t a, b, r = rng.u32();
        switch (i % 8) {
        case 0:  // any bit patterns (mostly large exponent differences)
            a = rng.u32(); b = rng.u32();
            break;
        case 1:  // exponents within 0..31 of each other
        case 2: {
            uint32_t ea = rng.below(256), d = rng.below(32);
            uint32_t eb = ea >= d ? ea - d : ea + d;
            a = mk(r & 1, ea, rng.u32()); b = mk((r >> 1) & 1, eb, rng.u32());
            break;
        }
        case 3: {  // near-cancellation: b = -a with its low bits changed
            a = rng.u32();
            b = (a ^ 0x80000000u) ^ (rng.u32() & ((1u << rng.below(24)) - 1));
            if (r & 1) b += (r >> 8) & 0xFF00000;  // and sometimes the exponent
            break;
        }
        case 4: {  // small exponents: results around the FTZ boundary
            a = mk(r & 1, rng.below(30), rng.u32()); b = mk((r >> 1) & 1, rng.below(30), rng.u32());
            break;
        }
        case 5: {  // large exponents: overflow and rounding to Inf
            a = mk(r & 1, 230 + rng.below(26), rng.u32()); b = mk((r >> 1) & 1, 230 + rng.below(26), rng.u32());
            break;
        }
        case 6: {  // an edge value with a random one
            a = edges[rng.below((uint32_t)edges.size())]; b = rng.u32();
            if (r & 1) { uint32_t t = a; a = b; b = t; }
            break;
        }
        default: {  // one-bit-apart significands with the same or adjacent exponents
            uint32_t e = 1 + rng.below(254);
            a = mk(r & 1, e, rng.u32());
            b = mk((r >> 1) & 1, e - ((r >> 2) & 1), a ^ (1u << rng.below(23)));
            break;
        }
        }
        run(a, b);
    }
    return chk.finish();
}
