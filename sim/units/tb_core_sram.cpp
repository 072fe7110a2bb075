// SPDX-License-Identifier: Apache-2.0
// tpu_sram (verilated standalone, Width/Depth from -G and SRAM_W/SRAM_D) against
// docs/isa.md "Memories": random writes and reads every cycle, same-address collisions
// included; rdata_o must be, in the cycle after a read, the row as it was before that cycle's
// write (read-first), and hold while re_i is low.
#include <memory>
#include <vector>

#include "Vtpu_sram.h"
#include "units_common.h"
#include "verilated.h"
#include "vl_ports.h"

static const unsigned W = SRAM_W, D = SRAM_D, WORDS = (SRAM_W + 31) / 32;

int main(int argc, char **argv) {
    units::Options opt = units::parse_options(argc, argv, "tb_core_sram [--seed S] [--count CYCLES]");
    if (opt.count == 4000000) opt.count = 100000;
    units::Rng rng(opt.seed);
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->randReset(2);
    auto top = std::make_unique<Vtpu_sram>(ctx.get());
    std::vector<uint32_t> mem(D * WORDS), want(WORDS);
    auto bits = [](unsigned k) { return k + 1 < WORDS || W % 32 == 0 ? 32u : W % 32; };
    uint64_t fails = 0, reads = 0, collisions = 0;
    bool have = false;
    top->clk_i = 0;
    for (uint64_t t = 0; t < opt.count + D; t++) {
        const bool init = t < D;  // write every row once first
        top->we_i = init || rng.below(2);
        top->waddr_i = init ? t : rng.below(D);
        for (unsigned k = 0; k < WORDS; k++) put_field(top->wdata_i, 32 * k, bits(k), rng.u32());
        top->re_i = !init && rng.below(3) != 0;
        top->raddr_i = (top->re_i && top->we_i && rng.below(4) == 0) ? top->waddr_i : rng.below(D);
        top->eval();
        if (have)
            for (unsigned k = 0; k < WORDS; k++)
                if (get_field(top->rdata_o, 32 * k, bits(k)) != want[k] && ++fails <= 10)
                    printf("tb_core_sram %ux%u cycle %llu word %u: got %08x want %08x\n", W, D,
                           (unsigned long long)t, k, get_field(top->rdata_o, 32 * k, bits(k)),
                           want[k]);
        if (top->re_i) {  // the row before this cycle's write
            for (unsigned k = 0; k < WORDS; k++) want[k] = mem[top->raddr_i * WORDS + k];
            have = true;
            reads++;
            collisions += top->we_i && top->waddr_i == top->raddr_i;
        }
        if (top->we_i)
            for (unsigned k = 0; k < WORDS; k++)
                mem[top->waddr_i * WORDS + k] = get_field(top->wdata_i, 32 * k, bits(k));
        top->clk_i = 1;
        top->eval();
        top->clk_i = 0;
        top->eval();
    }
    top->final();
    printf("tb_core_sram %u bits x %u: %llu reads (%llu of the row written in the same cycle): %s\n",
           W, D, (unsigned long long)reads, (unsigned long long)collisions, fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
