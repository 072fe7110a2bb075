// SPDX-License-Identifier: Apache-2.0
// tpu_mxu (verilated, one configuration per build: tpu_params.h) against the timing contract
// of docs/mxu.md and the numerics of the C model, cycle by cycle:
//  - random weight loads into random banks (bottom row first, not always consecutive),
//    each tile of N load cycles shifting down the columns or (wl_transpose_i, a transposed
//    load) right along the rows, chosen at random per tile (N shifts in one direction write
//    every PE of the bank; the weights start random, randReset),
//    random vectors tagged with either bank, random seeds, random gaps;
//  - every output vector must appear exactly L cycles after its input, with
//    out_data_o[c] = the chain fp32_mac over rows r = 0 .. N-1 from the column's seed,
//    using the weights the bank held when the vector was presented;
//  - out_valid_o must be 0 in every other cycle;
//  - bank_busy_o[b] must be 1 exactly in cycles t+1 .. t+B after a vector tagged b in cycle t.
// The driver obeys the rules of docs/mxu.md using its own expectation of bank_busy_o, which is
// checked against the RTL every cycle.
#include <deque>
#include <memory>
#include <type_traits>
#include <vector>

#include "Vtpu_mxu.h"
#include "tpu_params.h"
#include "verilated.h"
extern "C" {
#include "tpu/numerics.h"
}
#include "units_common.h"

static const int N = TPU_MXU_N;
static const int L = TPU_MXU_LATENCY;
static const int B = TPU_MXU_BUSY_CYCLES;

// Field access on Verilator ports of any width (integers up to 64 bits, VlWide above).
template <typename T>
static void put(T &port, unsigned lsb, unsigned width, uint32_t v) {
    static_assert(std::is_integral<T>::value, "integral port");
    const uint64_t mask = ((width == 32) ? 0xFFFFFFFFull : ((1ull << width) - 1)) << lsb;
    port = (T)(((uint64_t)port & ~mask) | (((uint64_t)v << lsb) & mask));
}
template <std::size_t W>
static void put(VlWide<W> &port, unsigned lsb, unsigned width, uint32_t v) {
    EData &w = port[lsb / 32];
    const unsigned off = lsb % 32;
    const uint32_t mask = (width == 32) ? 0xFFFFFFFFu : (((1u << width) - 1) << off);
    w = (w & ~mask) | ((v << off) & mask);
}
template <typename T>
static uint32_t get(const T &port, unsigned lsb) {  // 32-bit field
    return (uint32_t)((uint64_t)port >> lsb);
}
template <std::size_t W>
static uint32_t get(const VlWide<W> &port, unsigned lsb) {
    return port[lsb / 32];
}

struct Expect {
    uint64_t cycle;
    std::vector<uint32_t> out;
};

int main(int argc, char **argv) {
    units::Options opt = units::parse_options(argc, argv, "tb_mxu [--seed S] [--count CYCLES]");
    if (opt.count == 4000000) opt.count = 20000;  // default: 20000 cycles
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    ctx->randReset(2);  // random initial values for everything not reset
    auto dut = std::make_unique<Vtpu_mxu>(ctx.get());
    units::Rng rng(opt.seed);

    // Random bf16: mostly normal values of moderate range, sometimes specials.
    auto rand_bf16 = [&]() -> uint16_t {
        uint32_t r = rng.u32();
        switch (r % 32) {
        case 0: return (uint16_t)(r >> 16);                        // any pattern
        case 1: return (uint16_t)((r >> 16) & 0x8000);             // signed zero
        case 2: return (uint16_t)(((r >> 16) & 0x807F) | 0);       // subnormal / zero
        case 3: return (uint16_t)(((r >> 16) & 0x8000) | 0x7F80); // Inf
        default: {
            uint32_t e = 112 + ((r >> 8) % 32);                    // 2^-15 .. 2^16
            return (uint16_t)(((r >> 16) & 0x8000) | (e << 7) | ((r >> 24) & 0x7F));
        }
        }
    };
    auto rand_seed = [&]() -> uint32_t {
        uint32_t r = rng.u32();
        if (r % 4 == 0) return TPU_FP32_NEG_ZERO;
        if (r % 64 == 1) return rng.u32();
        return bf16_to_fp32(bf16_from_bits(rand_bf16())).v;
    };

    // The driver's view of the banks: w[b][r][c] as the PEs hold them.
    std::vector<std::vector<uint16_t>> w(2, std::vector<uint16_t>((size_t)N * N, 0));
    int loads[2] = { 0, 0 };                  // load cycles into each bank so far
    bool tdir[2] = { false, false };          // the bank's current tile is loaded transposed
    int fresh[2] = { 0, 0 };                  // ... since vectors last switched to it
    int cur = 0, run_left = 0;                // dense phases: current bank, vectors left
    int64_t last_vec[2] = { -1000000, -1000000 };  // last cycle a vector used each bank
    std::deque<Expect> pending;
    units::Checker chk("tpu_mxu");
    uint64_t fails = 0, vectors = 0, load_cycles = 0;
    auto fail = [&](uint64_t cyc, const char *what, uint32_t got, uint32_t want) {
        if (++fails <= 10)
            printf("tpu_mxu N=%d MISMATCH cycle %llu %s: rtl=%08x expected=%08x\n", N,
                   (unsigned long long)cyc, what, got, want);
    };

    // Reset: a few cycles with rst_ni low, then cycle 0 is the first after release.
    dut->clk_i = 0;
    dut->rst_ni = 0;
    dut->wl_valid_i = 0;
    dut->wl_transpose_i = 0;
    dut->act_valid_i = 0;
    dut->eval();
    for (int i = 0; i < 3; i++) {
        dut->clk_i = 1; dut->eval();
        dut->clk_i = 0; dut->eval();
    }
    dut->rst_ni = 1;
    dut->eval();

    // Phases: long stretches where vectors come every cycle (throughput), others sparse.
    for (uint64_t t = 0; t < opt.count; t++) {
        const bool dense = (t / 500) % 2 == 0;
        // ---- Outputs of cycle t (registered, so they depend on the state only) ----
        bool want_valid = !pending.empty() && pending.front().cycle == t;
        if ((bool)dut->out_valid_o != want_valid) fail(t, "out_valid_o", dut->out_valid_o, want_valid);
        if (want_valid) {
            for (int c = 0; c < N; c++) {
                uint32_t got = get(dut->out_data_o, 32u * c);
                chk.cases++;
                if (got != pending.front().out[c]) {
                    char what[48];
                    snprintf(what, sizeof what, "out_data_o column %d", c);
                    fail(t, what, got, pending.front().out[c]);
                }
            }
            pending.pop_front();
        }
        for (int b = 0; b < 2; b++) {
            bool want_busy = (int64_t)t >= last_vec[b] + 1 && (int64_t)t <= last_vec[b] + B;
            bool got_busy = (dut->bank_busy_o >> b) & 1;
            if (got_busy != want_busy) fail(t, b ? "bank_busy_o[1]" : "bank_busy_o[0]", got_busy, want_busy);
        }

        // ---- Inputs of cycle t ----
        // A vector, tagged with a bank that has a full tile (rule 2). Dense phases work like
        // the matmul schedule: vectors use the current bank while the other one is loaded,
        // and switch to it once it holds a whole new tile; sparse phases pick either bank.
        int vb = -1;
        uint32_t r = rng.u32();
        if (dense) {
            if (r % 16 != 0) {
                if (run_left <= 0 && fresh[cur ^ 1] >= N) {
                    cur ^= 1;
                    fresh[cur] = 0;
                    run_left = 1 + (int)rng.below(3u * N);
                }
                if (loads[cur] >= N) vb = cur;
                run_left--;
            }
        } else if (r % 4 == 0) {
            int b = (int)((r >> 8) & 1);
            if (loads[b] < N) b ^= 1;
            if (loads[b] >= N) vb = b;
        }
        // A load into a bank that is not busy and not used by this cycle's vector (rule 1);
        // in dense phases into the bank the vectors are not using.
        int lb = -1;
        uint32_t r2 = rng.u32();
        if (r2 % 3 != 0) {
            int b = dense ? (cur ^ 1) : (int)((r2 >> 8) & 1);
            bool busy = (dut->bank_busy_o >> b) & 1;  // the RTL's own signal
            if (!busy && b != vb) lb = b;
        }

        dut->act_valid_i = vb >= 0;
        dut->act_bank_i = vb >= 0 ? vb : (r >> 9) & 1;
        dut->wl_valid_i = lb >= 0;
        dut->wl_bank_i = lb >= 0 ? lb : (r2 >> 9) & 1;
        if (lb >= 0 && loads[lb] % N == 0) tdir[lb] = (r2 >> 10) & 1;  // a new tile
        const bool tr = lb >= 0 ? tdir[lb] : (r2 >> 10) & 1;
        dut->wl_transpose_i = tr;
        std::vector<uint16_t> act(N), wrow(N);
        std::vector<uint32_t> seed(N);
        for (int i = 0; i < N; i++) {
            act[i] = rand_bf16();
            wrow[i] = rand_bf16();
            seed[i] = rand_seed();
            put(dut->act_data_i, 16u * i, 16, act[i]);
            put(dut->wl_data_i, 16u * i, 16, wrow[i]);
            put(dut->psum_data_i, 32u * i, 32, seed[i]);
        }
        if (vb >= 0) {
            Expect e;
            e.cycle = t + L;
            e.out.resize(N);
            for (int c = 0; c < N; c++) {
                fp32_t s = fp32_from_bits(seed[c]);
                for (int rr = 0; rr < N; rr++)
                    s = fp32_mac(s, bf16_from_bits(act[rr]), bf16_from_bits(w[vb][(size_t)rr * N + c]));
                e.out[c] = s.v;
            }
            pending.push_back(e);
            last_vec[vb] = (int64_t)t;
            vectors++;
        }
        if (lb >= 0 && !tr) {  // shift bank lb down one row; row 0 takes wl_data_i
            for (int rr = N - 1; rr > 0; rr--)
                for (int c = 0; c < N; c++)
                    w[lb][(size_t)rr * N + c] = w[lb][(size_t)(rr - 1) * N + c];
            for (int c = 0; c < N; c++) w[lb][c] = wrow[c];
        } else if (lb >= 0) {  // shift bank lb right one column; column 0 takes wl_data_i
            for (int rr = 0; rr < N; rr++) {
                for (int c = N - 1; c > 0; c--)
                    w[lb][(size_t)rr * N + c] = w[lb][(size_t)rr * N + c - 1];
                w[lb][(size_t)rr * N] = wrow[rr];
            }
        }
        if (lb >= 0) {
            loads[lb]++;
            fresh[lb]++;
            load_cycles++;
        }

        // ---- Edge t ----
        dut->eval();
        dut->clk_i = 1; dut->eval();
        dut->clk_i = 0; dut->eval();
    }
    dut->final();
    printf("tpu_mxu N=%d L=%d B=%d: %llu cycles, %llu vectors, %llu load cycles, %llu outputs checked, "
           "%llu mismatches: %s\n",
           N, L, B, (unsigned long long)opt.count, (unsigned long long)vectors,
           (unsigned long long)load_cycles, (unsigned long long)chk.cases,
           (unsigned long long)fails, fails || vectors == 0 ? "FAIL" : "PASS");
    return fails || vectors == 0 ? 1 : 0;
}
