// SPDX-License-Identifier: Apache-2.0
// Co-simulation of the generated MXU (Verilator) against the C model.
//
// Drives the verilated tpu_mxu exactly by the C model's schedule (tpu_mxu_schedule,
// docs/mxu.md "Driving a matmul"), checks the MXU's timing contract every cycle (bank_busy_o,
// out_valid_o), writes the RTL trace, runs tpu_matmul on the same data writing the model
// trace, compares the two (docs/trace.md) and prints one summary line. C++ only where
// Verilator needs it; everything else is the C model and sim/ C code.
//
// Usage: mxu_tb [--m M] [--k K] [--n N'] [--dist NAME] [--seed S] [--rtl-trace F]
//               [--model-trace F] [--fst F] [--inject-fault TILE,ROW,COL,BIT]
//               [--inject-drop TILE,ROW]
//               [+verilator+seed+N] [+trace]
// Exit status: 0 PASS, 1 FAIL (divergence or timing-contract violation), 2 bad arguments.

#include <cerrno>
#include <cstdarg>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <unistd.h>

#include <verilated.h>
#include <verilated_fst_c.h>

#include "Vtpu_mxu.h"
#include "matgen.h"
#include "tb_context.h"
#include "tb_errors.h"
#include "tb_options.h"
#include "tpu/tpu.h"
#include "tpu_params.h"
#include "trace_cmp.h"
#include "vl_ports.h"

#if !defined(TPU_MXU_N) || !defined(TPU_MXU_LATENCY) || !defined(TPU_MXU_BUSY_CYCLES) || \
    !defined(TPU_PE_STAGES)
#error "tpu_params.h must define TPU_MXU_N, TPU_MXU_LATENCY, TPU_MXU_BUSY_CYCLES, TPU_PE_STAGES"
#endif

// Legacy function required only so linking works on Cygwin and MSVC++
double sc_time_stamp() { return 0; }

namespace {

constexpr unsigned kN = TPU_MXU_N;
using tb::kMaxErrors;

struct Options {
    size_t m = 8 * kN, k = 4 * kN, n = 4 * kN;
    std::string dist = "uniform";
    uint64_t seed = 1;
    std::string rtl_trace = "mxu_rtl.trace";
    std::string model_trace = "mxu_model.trace";
    std::string fst = "mxu_tb.fst";
    bool fault = false;
    size_t f_tile = 0, f_row = 0;
    unsigned f_col = 0, f_bit = 0;
    bool drop = false;
    size_t d_tile = 0, d_row = 0;
};

int usage_error(const char *what, const char *arg)
{
    return tb::usage_error("mxu_tb", what, arg);
}

// a leading '+' is accepted, as it always was here
bool parse_size(const char *s, uint64_t *out)
{
    return tb::parse_u64(s, out, true);
}

void help()
{
    std::printf(
        "usage: mxu_tb [options] [+verilator+seed+N] [+trace]\n"
        "Co-simulates the generated %ux%u MXU against the C model on C = A x W.\n"
        "  --m M, --k K, --n N'     shape: A is M x K, W is K x N' (default %u, %u, %u)\n"
        "  --dist NAME              uniform | wide | normal | ints | edges (default uniform)\n"
        "  --seed S                 data seed (default 1)\n"
        "  --rtl-trace F            RTL trace file (default mxu_rtl.trace)\n"
        "  --model-trace F          model trace file (default mxu_model.trace)\n"
        "  --fst F                  waveform file written with +trace (default mxu_tb.fst)\n"
        "  --inject-fault T,R,C,B   flip bit B of column C of the RTL output for tile T, row R\n"
        "                           as captured (proves that the compare catches it)\n"
        "  --inject-drop T,R        do not present the vector of tile T, row R (proves that\n"
        "                           the out_valid_o check catches a missing output)\n"
        "  +verilator+seed+N        seed of the X-initialisation (printed on every run)\n"
        "  +trace                   write an FST waveform\n"
        "Exit status: 0 PASS, 1 FAIL, 2 bad arguments.\n",
        kN, kN, 8 * kN, 4 * kN, 4 * kN);
}

// Returns -1 on success (continue), else the exit status.
int parse_options(int argc, char **argv, Options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '+')
            continue; // Verilator's plusargs
        if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) {
            help();
            return 0;
        }
        if (i + 1 >= argc)
            return usage_error("unknown option or missing value", a);
        const char *v = argv[++i];
        uint64_t x = 0;
        if (std::strcmp(a, "--m") == 0 || std::strcmp(a, "--k") == 0 ||
            std::strcmp(a, "--n") == 0) {
            if (!parse_size(v, &x) || x == 0 || x > (UINT64_C(1) << 24))
                return usage_error("a size must be an integer in 1 .. 16777216", v);
            (a[2] == 'm' ? o->m : a[2] == 'k' ? o->k : o->n) = static_cast<size_t>(x);
        } else if (std::strcmp(a, "--seed") == 0) {
            if (!parse_size(v, &x))
                return usage_error("bad seed", v);
            o->seed = x;
        } else if (std::strcmp(a, "--dist") == 0) {
            if (!tpu_matgen_valid(v))
                return usage_error("unknown distribution (uniform wide normal ints edges)", v);
            o->dist = v;
        } else if (std::strcmp(a, "--rtl-trace") == 0) {
            o->rtl_trace = v;
        } else if (std::strcmp(a, "--model-trace") == 0) {
            o->model_trace = v;
        } else if (std::strcmp(a, "--fst") == 0) {
            o->fst = v;
        } else if (std::strcmp(a, "--inject-fault") == 0) {
            unsigned long long t, r, c, b;
            char tail;
            if (std::sscanf(v, "%llu,%llu,%llu,%llu%c", &t, &r, &c, &b, &tail) != 4)
                return usage_error("--inject-fault takes TILE,ROW,COL,BIT", v);
            if (c >= kN || b >= 32)
                return usage_error("--inject-fault: COL must be < N and BIT < 32", v);
            o->fault = true;
            o->f_tile = static_cast<size_t>(t);
            o->f_row = static_cast<size_t>(r);
            o->f_col = static_cast<unsigned>(c);
            o->f_bit = static_cast<unsigned>(b);
        } else if (std::strcmp(a, "--inject-drop") == 0) {
            unsigned long long t, r;
            char tail;
            if (std::sscanf(v, "%llu,%llu%c", &t, &r, &tail) != 2)
                return usage_error("--inject-drop takes TILE,ROW", v);
            o->drop = true;
            o->d_tile = static_cast<size_t>(t);
            o->d_row = static_cast<size_t>(r);
        } else {
            return usage_error("unknown option", a);
        }
    }
    return -1;
}

} // namespace

int main(int argc, char **argv)
{
    Options opt;
    int rc = parse_options(argc, argv, &opt);
    if (rc >= 0)
        return rc;

    tpu_mxu_cfg_t cfg{};
    cfg.n = kN;
    cfg.pe_stages = TPU_PE_STAGES; // the timing of the RTL under test (docs/mxu.md)
    tpu_mxu_schedule_t sched;
    if (tpu_mxu_schedule(&cfg, opt.m, opt.k, opt.n, &sched) != TPU_OK)
        return usage_error("the shape is too large for the schedule", nullptr);
    if (sched.latency != TPU_MXU_LATENCY || sched.busy != TPU_MXU_BUSY_CYCLES) {
        std::fprintf(stderr,
                     "mxu_tb: error: the RTL's tpu_params.h says latency %u, busy %u; the C "
                     "model's timing says %" PRIu64 ", %" PRIu64 "\n",
                     static_cast<unsigned>(TPU_MXU_LATENCY),
                     static_cast<unsigned>(TPU_MXU_BUSY_CYCLES), sched.latency, sched.busy);
        return 2;
    }
    if (opt.fault && (opt.f_tile >= sched.tiles || opt.f_row >= opt.m))
        return usage_error("--inject-fault: TILE must be < tiles and ROW < M", nullptr);
    if (opt.drop && (opt.d_tile >= sched.tiles || opt.d_row >= opt.m))
        return usage_error("--inject-drop: TILE must be < tiles and ROW < M", nullptr);
    const size_t M = opt.m, K = opt.k, NP = opt.n, KT = sched.kt_count;

    // ---- Data ----
    std::vector<bf16_t> A(M * K), W(K * NP);
    std::vector<fp32_t> C(M * NP);
    if (tpu_matgen(opt.dist.c_str(), opt.seed, M, K, NP, A.data(), W.data()) != TPU_OK)
        return usage_error("cannot generate the matrices", nullptr);

    // ---- Verilator ----
    const std::unique_ptr<VerilatedContext> ctx = tb::new_context(argc, argv);
    std::printf("mxu_tb: N=%u M=%zu K=%zu N'=%zu dist=%s seed=%" PRIu64
                " +verilator+seed+%d (add it to replay this run)\n",
                kN, M, K, NP, opt.dist.c_str(), opt.seed, ctx->randSeed());
    std::fflush(stdout);
    const std::unique_ptr<Vtpu_mxu> top{new Vtpu_mxu{ctx.get(), "TOP"}};
    const std::unique_ptr<VerilatedFstC> fst =
        tb::open_fst(ctx.get(), top.get(), opt.fst, "mxu_tb");

    tpu_trace_t *rtl_tr = tpu_trace_open(opt.rtl_trace.c_str(), "mxu_tb (verilator)");
    if (rtl_tr == nullptr) {
        std::fprintf(stderr, "mxu_tb: error: cannot write %s: %s\n", opt.rtl_trace.c_str(),
                     std::strerror(errno));
        return 2;
    }
    tpu_trace_comment(rtl_tr, "seed", "%" PRIu64 " dist %s verilator-seed %d", opt.seed,
                      opt.dist.c_str(), ctx->randSeed());
    tpu_trace_mxu_params(rtl_tr, kN, M, K, NP, sched.latency, sched.busy);

    // Junk for data inputs whose valid is low: nothing may depend on them.
    uint64_t junk = opt.seed ^ UINT64_C(0xA5A5A5A55A5A5A5A) ^ static_cast<uint64_t>(ctx->randSeed());
    auto edge = [&](int clk) { tb::edge(ctx.get(), top.get(), fst.get(), clk); };
    auto junk_inputs = [&]() {
        top->wl_valid_i = 0;
        top->act_valid_i = 0;
        top->wl_bank_i = tpu_matgen_rand(&junk) & 1;
        top->wl_transpose_i = tpu_matgen_rand(&junk) & 1;
        top->act_bank_i = tpu_matgen_rand(&junk) & 1;
        for (unsigned c = 0; c < kN; c++) {
            uint64_t r = tpu_matgen_rand(&junk);
            put_field(top->wl_data_i, 16 * c, 16, static_cast<uint32_t>(r));
            put_field(top->act_data_i, 16 * c, 16, static_cast<uint32_t>(r >> 16));
            put_field(top->psum_data_i, 32 * c, 32, static_cast<uint32_t>(r >> 32));
        }
    };

    // ---- Reset: asserted for 4 cycles, released for cycle 0 ----
    junk_inputs();
    top->rst_ni = 0;
    for (int i = 0; i < 4; i++) {
        edge(0);
        edge(1);
    }
    top->rst_ni = 1;

    // ---- Drive by the schedule ----
    tb::Errors err{"mxu_tb"};
    std::vector<uint32_t> seeds(M * kN);         // the previous tile's outputs, per row
    std::vector<size_t> seed_tile(M, SIZE_MAX);  // which tile they came from
    std::vector<fp32_t> out(kN);
    uint64_t last_act[2] = { UINT64_MAX, UINT64_MAX }; // last cycle a vector tagged b went in
    size_t loaded[2] = { SIZE_MAX, SIZE_MAX };        // tile fully loaded in bank b
    unsigned load_rows_done[2] = { 0, 0 };
    size_t outputs = 0;
    tpu_mxu_events_t it;
    tpu_mxu_events_init(&it, &sched);
    const uint64_t drain = sched.latency + 4; // cycles watched after the last output
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t t = 0;
    for (; t < sched.total_cycles + drain; t++) {
        tpu_mxu_event_t ev{};
        if (!tpu_mxu_events_next(&it, &ev))
            ev.cycle = t; // draining: no events
        junk_inputs();
        if (ev.load) {
            const size_t kt = ev.load_tile % KT, nt = ev.load_tile / KT;
            const size_t kk = kt * kN + ev.load_row;
            top->wl_valid_i = 1;
            top->wl_bank_i = ev.load_bank;
            top->wl_transpose_i = 0; // the schedule's loads are plain (tb_mxu tests both)
            for (unsigned c = 0; c < kN; c++) {
                const size_t nn = nt * kN + c;
                const uint16_t w = (kk < K && nn < NP) ? W[kk * NP + nn].v : 0x8000u;
                put_field(top->wl_data_i, 16 * c, 16, w);
            }
            if (ev.act && ev.act_bank == ev.load_bank)
                err(t, "schedule loads bank %u while presenting a vector tagged %u",
                    ev.load_bank, ev.act_bank);
        }
        if (ev.act && opt.drop && ev.act_tile == opt.d_tile && ev.act_row == opt.d_row)
            ev.act = 0; // the injected fault: this vector is never presented
        if (ev.act) {
            const size_t kt = ev.act_tile % KT;
            const unsigned b = ev.act_bank;
            if (loaded[b] != ev.act_tile)
                err(t, "schedule presents a vector of tile %zu before bank %u holds it",
                    ev.act_tile, b);
            top->act_valid_i = 1;
            top->act_bank_i = b;
            for (unsigned r = 0; r < kN; r++) {
                const size_t kk = kt * kN + r;
                put_field(top->act_data_i, 16 * r, 16,
                          kk < K ? A[ev.act_row * K + kk].v : 0x0000u);
            }
            if (!ev.seed_fresh && seed_tile[ev.act_row] != ev.act_tile - 1)
                err(t, "seed of tile %zu row %zu has not come out of tile %zu yet",
                    ev.act_tile, ev.act_row, ev.act_tile - 1);
            for (unsigned c = 0; c < kN; c++)
                put_field(top->psum_data_i, 32 * c, 32,
                          ev.seed_fresh ? TPU_FP32_NEG_ZERO : seeds[ev.act_row * kN + c]);
        }
        edge(0);

        // Outputs during cycle t (before the rising edge that ends it).
        const unsigned busy = top->bank_busy_o & 3u;
        for (unsigned b = 0; b < 2; b++) {
            const bool want = last_act[b] != UINT64_MAX && t >= last_act[b] + 1 &&
                              t <= last_act[b] + sched.busy;
            if (((busy >> b) & 1u) != static_cast<unsigned>(want))
                err(t, "bank_busy_o[%u] is %u, docs/mxu.md says %u (last vector tagged %u "
                       "in cycle %" PRId64 ")",
                    b, (busy >> b) & 1u, want ? 1u : 0u, b,
                    last_act[b] == UINT64_MAX ? INT64_C(-1) : static_cast<int64_t>(last_act[b]));
        }
        if (ev.load && ((busy >> ev.load_bank) & 1u))
            err(t, "the schedule loads bank %u (tile %zu) while bank_busy_o[%u] is 1",
                ev.load_bank, ev.load_tile, ev.load_bank);
        const bool valid = top->out_valid_o & 1u;
        if (valid != static_cast<bool>(ev.out)) {
            if (ev.out)
                err(t, "out_valid_o is 0, expected the output of tile %zu row %zu",
                    ev.out_tile, ev.out_row);
            else
                err(t, "out_valid_o is 1 but no output is due");
        }
        if (valid && ev.out) {
            for (unsigned c = 0; c < kN; c++)
                out[c].v = get_field(top->out_data_o, 32 * c, 32);
            if (opt.fault && ev.out_tile == opt.f_tile && ev.out_row == opt.f_row)
                out[opt.f_col].v ^= 1u << opt.f_bit;
            const size_t kt = ev.out_tile % KT, nt = ev.out_tile / KT;
            for (unsigned c = 0; c < kN; c++)
                seeds[ev.out_row * kN + c] = out[c].v;
            seed_tile[ev.out_row] = ev.out_tile;
            if (tpu_trace_mxu(rtl_tr, t, ev.out_tile, kt, nt, ev.out_row, kN, out.data()) !=
                TPU_OK)
                err(t, "cannot write the RTL trace");
            if (kt + 1 == KT)
                for (unsigned c = 0; c < kN && nt * kN + c < NP; c++)
                    C[ev.out_row * NP + nt * kN + c] = out[c];
            outputs++;
        }
        if (ev.act)
            last_act[ev.act_bank] = t;
        if (ev.load) {
            // A bank holds its new tile after its N-th load cycle.
            if (++load_rows_done[ev.load_bank] == kN) {
                load_rows_done[ev.load_bank] = 0;
                loaded[ev.load_bank] = ev.load_tile;
            } else {
                loaded[ev.load_bank] = SIZE_MAX;
            }
        }
        edge(1);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    top->final();
    if (fst)
        fst->close();
    if (tpu_trace_close(rtl_tr) != TPU_OK)
        err(t, "cannot write the RTL trace %s", opt.rtl_trace.c_str());
    if (outputs != sched.tiles * M)
        err(t, "%zu output vectors seen, %zu expected", outputs, sched.tiles * M);

    // ---- The model on the same data ----
    tpu_trace_t *mod_tr = tpu_trace_open(opt.model_trace.c_str(), "tpu-cmodel");
    if (mod_tr == nullptr) {
        std::fprintf(stderr, "mxu_tb: error: cannot write %s: %s\n", opt.model_trace.c_str(),
                     std::strerror(errno));
        return 2;
    }
    tpu_trace_comment(mod_tr, "seed", "%" PRIu64 " dist %s verilator-seed %d", opt.seed,
                      opt.dist.c_str(), ctx->randSeed());
    std::vector<fp32_t> Cm(M * NP);
    rc = tpu_matmul(&cfg, M, K, NP, A.data(), W.data(), Cm.data(), mod_tr);
    if (tpu_trace_close(mod_tr) != TPU_OK || rc != TPU_OK) {
        std::fprintf(stderr, "mxu_tb: error: the model failed (%d)\n", rc);
        return 2;
    }

    // C as the RTL produced it (the last K-tile's outputs) against the model's C: the trace
    // compare covers this already; a second, independent check of the result itself.
    size_t c_diff = 0;
    for (size_t i = 0; i < M * NP; i++)
        c_diff += C[i].v != Cm[i].v;
    if (c_diff != 0)
        std::printf("mxu_tb: %zu of %zu elements of C differ from the model\n", c_diff, M * NP);

    // ---- Compare ----
    tpu_trace_cmp_result_t cmp;
    const int st = tpu_trace_cmp(opt.model_trace.c_str(), opt.rtl_trace.c_str(), 0, &cmp);
    if (st == TPU_TRACE_CMP_ERROR) {
        std::printf("mxu_tb: trace compare: error: %s\n", cmp.error);
    } else if (st != TPU_TRACE_CMP_SAME) {
        std::printf("mxu_tb: trace compare (expected = model, got = RTL): ");
        tpu_trace_cmp_report(&cmp, stdout);
    }
    const bool pass = st == TPU_TRACE_CMP_SAME && err.count == 0 && c_diff == 0;
    if (err.count > kMaxErrors)
        std::printf("mxu_tb: ... %" PRIu64 " protocol errors in all\n", err.count);
    std::printf("%s: N=%u M=%zu K=%zu N'=%zu dist=%s: %" PRIu64 " cycles (ideal %" PRIu64
                "), utilisation %.1f%%, %" PRIu64 " protocol errors, %s; %" PRIu64
                " cycles simulated in %.2f s (%.0f cycles/s)\n",
                pass ? "PASS" : "FAIL", kN, M, K, NP, opt.dist.c_str(), sched.total_cycles,
                sched.ideal_cycles, 100.0 * sched.utilisation, err.count,
                st == TPU_TRACE_CMP_SAME     ? "traces identical"
                : st == TPU_TRACE_CMP_DIFFER ? "traces differ"
                                             : "trace compare failed",
                t, secs, secs > 0 ? static_cast<double>(t) / secs : 0.0);
    tpu_mxu_schedule_free(&sched);
    return pass ? 0 : 1;
}
