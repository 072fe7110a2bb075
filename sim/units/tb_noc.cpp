// SPDX-License-Identifier: Apache-2.0
// tpu_noc (verilated: C routers and their links, docs/board.md) under random traffic.
//  - random: every core sends packets of 0..31 payload flits to random cores (itself too),
//    with random gaps inside and between packets, while every core's local output is ready
//    only at random: every packet must arrive exactly once, at its destination, in order per
//    (src, dst) pair, with its header and payload intact, and the network must drain;
//  - saturate: every core always injects, every output always ready: prints the accepted
//    load and the average link utilisation (flit-hops / (cycles * links));
//  - neighbour: every core streams full packets to its east neighbour: each east link must
//    carry >= 90% of a flit per cycle (the credit loop does not throttle a link).
//  - --allreduce: the data movement of a ring all-reduce, S = 1 KiB .. 1 MiB: measured cycles
//    against the C model's prediction and the ring bound (a benchmark; fails only if the RTL
//    beats the bound, which would mean lost flits).
// Usage: tb_noc --rows R --cols S [--seed N] [--packets P] [--allreduce]; W = 64 (the
// default).
#include <cinttypes>
#include <deque>
#include <memory>
#include <vector>

#include "Vtpu_noc.h"
#include "verilated.h"
#include "units_common.h"
extern "C" {
#include "tpu/board.h"
}
#ifndef LINK_LATENCY
#define LINK_LATENCY 2  // gen's default --link-latency, which the test builds use
#endif

namespace {

constexpr int kW = 64;
constexpr int kMaxPayload = 31;

struct Pkt {
    int src, dst, len;
    uint32_t seq;
    uint64_t flit(int k) const {  // k = 0 header, 1..len payload
        if (k == 0)
            return (uint64_t)dst | ((uint64_t)src << 6) | ((uint64_t)(seq & 0xF) << 12) |
                   ((uint64_t)len << 16) | ((uint64_t)seq << 32);
        uint64_t z = ((uint64_t)src << 48) ^ ((uint64_t)dst << 40) ^ ((uint64_t)seq << 8) ^
                     (uint64_t)k;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
};

// bit i of a Verilator port of any width
template <class T> void set_bit(T &v, int i, bool b) {
    if (b) v |= (T)((T)1 << i); else v &= (T) ~((T)1 << i);
}
template <class T> bool get_bit(const T &v, int i) { return (v >> i) & 1; }
template <size_t N> void set_bit(VlWide<N> &v, int i, bool b) {
    if (b) v[i / 32] |= 1u << (i % 32); else v[i / 32] &= ~(1u << (i % 32));
}
template <size_t N> bool get_bit(const VlWide<N> &v, int i) { return (v[i / 32] >> (i % 32)) & 1; }
template <size_t N> void set_flit(VlWide<N> &v, int c, uint64_t f) {
    v[c * 2] = (uint32_t)f;
    v[c * 2 + 1] = (uint32_t)(f >> 32);
}
template <size_t N> uint64_t get_flit(const VlWide<N> &v, int c) {
    return (uint64_t)v[c * 2] | ((uint64_t)v[c * 2 + 1] << 32);
}
inline void set_flit(QData &v, int, uint64_t f) { v = f; }
inline uint64_t get_flit(const QData &v, int) { return v; }

struct Tb {
    int rows, cols, cores;
    VerilatedContext *ctx;
    std::unique_ptr<Vtpu_noc> dut;
    uint64_t cycle = 0;
    units::Rng rng;
    Tb(VerilatedContext *c, int r, int s, uint64_t seed)
        : rows(r), cols(s), cores(r * s), ctx(c), dut(new Vtpu_noc(c)), rng(seed) {}
    void reset() {
        dut->clk_i = 0;
        dut->rst_ni = 1;
        dut->inj_valid_i = 0;
        dut->ej_ready_i = 0;
        dut->eval();
        dut->rst_ni = 0;  // an edge: the reset is asynchronous (negedge rst_ni)
        dut->eval();
        for (int i = 0; i < 2; i++) {
            dut->clk_i = 1;
            dut->eval();
            dut->clk_i = 0;
            dut->eval();
        }
        dut->rst_ni = 1;
        dut->eval();
    }
    // hops of the dimension-ordered route
    int hops(int s, int d) const {
        auto ring = [](int a, int b, int n) {
            int x = ((b - a) % n + n) % n;
            return x <= n / 2 ? x : n - x;
        };
        return ring(s % cols, d % cols, cols) + ring(s / cols, d / cols, rows);
    }
};

// One traffic run. mode 0 random, 1 saturate (all to all), 2 east neighbour streams.
int run(Tb &tb, int mode, int packets_per_core, double p_inj, double p_ready) {
    const int C = tb.cores;
    std::vector<std::deque<Pkt>> to_send(C);
    std::vector<std::vector<uint32_t>> next_seq(C, std::vector<uint32_t>(C, 0));
    std::vector<std::vector<uint32_t>> want_seq(C, std::vector<uint32_t>(C, 0));
    long total = 0, total_flits = 0;
    // mode 3: one step of a ring all-reduce: every core sends packets_per_core payload flits
    // (full packets, then the rest) to its east neighbour
    for (int s = 0; mode == 3 && s < C; s++)
        for (int left = packets_per_core; left > 0; left -= kMaxPayload) {
            Pkt p;
            p.src = s;
            p.dst = (s / tb.cols) * tb.cols + (s % tb.cols + 1) % tb.cols;
            p.len = left < kMaxPayload ? left : kMaxPayload;
            p.seq = next_seq[s][p.dst]++;
            to_send[s].push_back(p);
            total++;
            total_flits += p.len + 1;
        }
    for (int s = 0; mode != 3 && s < C; s++)
        for (int k = 0; k < packets_per_core; k++) {
            Pkt p;
            p.src = s;
            p.dst = mode == 2 ? (s / tb.cols) * tb.cols + (s % tb.cols + 1) % tb.cols
                              : (int)tb.rng.below(C);
            p.len = mode == 2 ? kMaxPayload : (int)tb.rng.below(kMaxPayload + 1);
            p.seq = next_seq[s][p.dst]++;
            to_send[s].push_back(p);
            total++;
            total_flits += p.len + 1;
        }
    std::vector<int> sent_k(C, 0);      // next flit of the head packet
    std::vector<bool> holding(C, false);  // valid asserted and not yet taken
    // receive side: packet being reassembled per destination
    struct Rx { bool in = false; Pkt p{}; int k = 0; };
    std::vector<Rx> rx(C);
    long received = 0, flit_hops = 0, fails = 0;
    uint64_t start = tb.cycle, last_progress = tb.cycle;
    auto fail = [&](const char *what, int c, uint64_t got, uint64_t want) {
        if (fails++ < 10)
            fprintf(stderr, "FAIL cycle %" PRIu64 " core %d: %s: got 0x%016" PRIx64
                            " want 0x%016" PRIx64 "\n", tb.cycle, c, what, got, want);
    };
    while (received < total) {
        // drive inputs (before the rising edge)
        for (int c = 0; c < C; c++) {
            bool v = holding[c];
            if (!v && !to_send[c].empty())
                v = (mode != 0) || tb.rng.below(1000) < p_inj * 1000;
            holding[c] = v;
            set_bit(tb.dut->inj_valid_i, c, v);
            if (v) {
                const Pkt &p = to_send[c].front();
                set_flit(tb.dut->inj_flit_i, c, p.flit(sent_k[c]));
                set_bit(tb.dut->inj_last_i, c, sent_k[c] == p.len);
            } else {
                set_flit(tb.dut->inj_flit_i, c, 0xDEADBEEFDEADBEEFull);
                set_bit(tb.dut->inj_last_i, c, false);
            }
            set_bit(tb.dut->ej_ready_i, c, mode != 0 || tb.rng.below(1000) < p_ready * 1000);
        }
        tb.dut->clk_i = 0;
        tb.dut->eval();
        // sample the handshakes of this cycle
        for (int c = 0; c < C; c++) {
            if (holding[c] && get_bit(tb.dut->inj_ready_o, c)) {
                holding[c] = false;
                if (sent_k[c] == to_send[c].front().len) {
                    to_send[c].pop_front();
                    sent_k[c] = 0;
                } else {
                    sent_k[c]++;
                }
            }
            if (get_bit(tb.dut->ej_valid_o, c) && get_bit(tb.dut->ej_ready_i, c)) {
                uint64_t f = get_flit(tb.dut->ej_flit_o, c);
                bool last = get_bit(tb.dut->ej_last_o, c);
                Rx &r = rx[c];
                last_progress = tb.cycle;
                if (!r.in) {
                    Pkt p;
                    p.dst = (int)(f & 63);
                    p.src = (int)((f >> 6) & 63);
                    p.len = (int)((f >> 16) & 0xFFFF);
                    p.seq = (uint32_t)(f >> 32);
                    if (p.dst != c) fail("packet at the wrong core (dst)", c, p.dst, c);
                    if (p.src >= C || p.len > kMaxPayload) {
                        fail("bad header", c, f, 0);
                        return 1;
                    }
                    if (p.seq != want_seq[p.src][c])
                        fail("out of order, lost or duplicated (seq)", c, p.seq,
                             want_seq[p.src][c]);
                    want_seq[p.src][c] = p.seq + 1;
                    if (f != p.flit(0)) fail("header", c, f, p.flit(0));
                    r.p = p;
                    r.k = 1;
                    r.in = true;
                } else {
                    if (f != r.p.flit(r.k)) fail("payload", c, f, r.p.flit(r.k));
                    r.k++;
                }
                bool want_last = r.k == r.p.len + 1;
                if (last != want_last) fail("last flag", c, last, want_last);
                if (want_last || last) {
                    flit_hops += (long)(r.p.len + 1) * tb.hops(r.p.src, c);
                    r.in = false;
                    received++;
                }
            }
        }
        tb.dut->clk_i = 1;
        tb.dut->eval();
        tb.cycle++;
        if (fails > 0 && fails >= 10) break;
        if (tb.cycle - last_progress > 20000) {
            fprintf(stderr, "FAIL: no packet delivered for 20000 cycles (%ld of %ld)\n",
                    received, total);
            return 1;
        }
    }
    uint64_t cycles = tb.cycle - start;
    for (int c = 0; c < C; c++)
        if (rx[c].in) fail("partial packet left", c, rx[c].k, 0);
    if (mode == 3)
        return fails ? 1 : 0;
    // nothing more comes out after everything was delivered
    for (int i = 0; i < 200; i++) {
        for (int c = 0; c < C; c++) {
            set_bit(tb.dut->inj_valid_i, c, false);
            set_bit(tb.dut->ej_ready_i, c, true);
        }
        tb.dut->clk_i = 0;
        tb.dut->eval();
        for (int c = 0; c < C; c++)
            if (get_bit(tb.dut->ej_valid_o, c)) fail("extra flit (duplicate)", c, 1, 0);
        tb.dut->clk_i = 1;
        tb.dut->eval();
        tb.cycle++;
    }
    // links that can carry traffic: east and west of every core, and south and north when
    // there is more than one row
    int links = C * (tb.rows > 1 ? 4 : 2);
    const char *name[] = { "random", "saturate", "neighbour" };
    double util = (double)flit_hops / ((double)cycles * links);
    printf("tpu_noc %dx%d %-9s: %5ld packets in %7" PRIu64 " cycles, %.3f flits/cycle/core"
           " accepted, link utilisation %5.1f%%\n",
           tb.rows, tb.cols, name[mode], total, cycles,
           (double)total_flits / (double)cycles / C, 100.0 * util);
    if (mode == 2) {
        // only the C east links carry traffic
        double east = (double)flit_hops / ((double)cycles * C);
        printf("  east links: %.1f%% of a flit per cycle\n", 100.0 * east);
        if (tb.cols > 1 && east < 0.90) {
            fprintf(stderr, "FAIL: east link utilisation %.1f%% < 90%%\n", 100.0 * east);
            fails++;
        }
    }
    return fails ? 1 : 0;
}

}  // namespace

int main(int argc, char **argv) {
    int rows = 1, cols = 4, packets = 400;
    bool allreduce = false;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cols") && i + 1 < argc) cols = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], nullptr, 0);
        else if (!strcmp(argv[i], "--packets") && i + 1 < argc) packets = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--allreduce")) allreduce = true;
        else if (!strncmp(argv[i], "+verilator+", 11)) {}
        else { fprintf(stderr, "usage: tb_noc --rows R --cols S [--seed N] [--packets P] [--allreduce]\n"); return 2; }
    }
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    Tb tb(ctx.get(), rows, cols, seed);
    tb.reset();
    int rc = 0;
    if (allreduce) {
        // The data movement of a ring all-reduce along the rows (docs/board.md "Cycle
        // model"): 2(S-1) steps, each every core sending its chunk east and the next step
        // starting when every chunk has arrived (the add is the core's, not modelled here).
        // Measured RTL cycles vs tpu_allreduce_ring_cycles and the ring bound.
        const unsigned m = (unsigned)cols;
        printf("ring all-reduce data movement on tpu_noc %dx%d (W = %d, the row rings)\n", rows,
               cols, kW);
        printf("| S bytes | RTL cycles | model cycles | bound | bound / RTL |\n|---|---|---|---|---|\n");
        for (size_t bytes = 1024; bytes <= ((size_t)1 << 20); bytes *= 4) {
            size_t n = bytes / 4, chunk = (n + m - 1) / m;
            int payload = (int)((32 * chunk + kW - 1) / kW);
            uint64_t t0 = tb.cycle;
            for (unsigned step = 0; step < 2 * (m - 1); step++)
                rc |= run(tb, 3, payload, 1.0, 1.0);
            uint64_t cyc = tb.cycle - t0;
            double bound = tpu_allreduce_ring_bound(n, m, kW);
            printf("| %zu | %" PRIu64 " | %" PRIu64 " | %.0f | %.1f%% |\n", bytes, cyc,
                   tpu_allreduce_ring_cycles(n, m, kW, LINK_LATENCY), bound,
                   100.0 * bound / (double)cyc);
            if ((double)cyc < bound) {
                fprintf(stderr, "FAIL: %" PRIu64 " cycles beat the bound %.0f\n", cyc, bound);
                rc = 1;
            }
        }
        printf("tb_noc %dx%d all-reduce: %s\n", rows, cols, rc ? "FAILED" : "ok");
        return rc;
    }
    rc |= run(tb, 0, packets, 0.5, 0.6);
    rc |= run(tb, 0, packets, 0.9, 0.2);
    rc |= run(tb, 1, packets, 1.0, 1.0);
    rc |= run(tb, 2, packets / 4 + 1, 1.0, 1.0);
    printf("tb_noc %dx%d: %s\n", rows, cols, rc ? "FAILED" : "ok");
    return rc;
}
