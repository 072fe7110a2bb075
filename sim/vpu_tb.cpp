// SPDX-License-Identifier: Apache-2.0
// Co-simulation of the generated VPU (Verilator) against the C model (docs/vpu.md, "RTL").
//
// Builds work items (exhaustive bf16 unary ops, random binary / unary / broadcast vectors
// with edge values, row reductions, softmax rows), drives the verilated tpu_vpu one vector
// per cycle, checks valid_o / red_valid_o cycle by cycle, writes the RTL trace (cycles
// observed), computes every expected value with the C model and writes the model trace
// (cycles predicted from TPU_VPU_LATENCY / TPU_VPU_RED_LATENCY), compares the two files and
// prints one summary line with the co-simulation speed in vectors/s.
//
// Usage: vpu_tb [--mode M[,M...]] [--seed S] [--count N] [--gaps P] [--rtl-trace F]
//               [--model-trace F] [--fst F] [--inject-fault V,LANE,BIT] [+verilator+seed+N]
//               [+trace]
// Exit status: 0 PASS, 1 FAIL (divergence or protocol error), 2 bad arguments.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
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

#include "Vtpu_vpu.h"
#include "tpu/tpu.h"
#include "tpu/vpu.h"
#include "tb_context.h"
#include "tb_errors.h"
#include "tb_options.h"
#include "tpu_params.h"
#include "vl_ports.h"

#if !defined(TPU_VPU_LANES) || !defined(TPU_VPU_LATENCY) || !defined(TPU_VPU_RED_LATENCY)
#error "tpu_params.h must define TPU_VPU_LANES, TPU_VPU_LATENCY and TPU_VPU_RED_LATENCY"
#endif

// Legacy function required only so linking works on Cygwin and MSVC++
double sc_time_stamp() { return 0; }

namespace {

constexpr unsigned kL = TPU_VPU_LANES;
constexpr uint64_t kLat = TPU_VPU_LATENCY;
constexpr uint64_t kRedLat = TPU_VPU_RED_LATENCY;
using tb::kMaxErrors;
constexpr unsigned kOpSmexp = 12; // the RTL's exp(a - b) opcode (softmax pass 2)
constexpr unsigned kOpLog = 13;   // the RTL's log opcode (VPU_OP_LOG in the model)
constexpr unsigned kOpRsqrt = 14; // the RTL's rsqrt opcode (VPU_OP_RSQRT in the model)
constexpr unsigned kOpErf = 15;   // the RTL's erf opcode (VPU_OP_ERF in the model)

// The model's opcode for an RTL lane opcode other than smexp: 0..11 are vpu_op_t, 13 log,
// 14 rsqrt, 15 erf, 16..31 invalid (VPU_OP_COUNT: vpu_unary gives the canonical NaN).
vpu_op_t lane_op(unsigned op)
{
    if (op == kOpLog)
        return VPU_OP_LOG;
    if (op == kOpRsqrt)
        return VPU_OP_RSQRT;
    if (op == kOpErf)
        return VPU_OP_ERF;
    return op <= VPU_OP_RECIP ? static_cast<vpu_op_t>(op) : VPU_OP_COUNT;
}

// ---- Random numbers (splitmix64: the same data on every host) -----------------------------
uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

// Edge values of fp32 (docs/numerics.md, docs/vpu.md thresholds).
const uint32_t kEdges[] = {
    0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800000,
    0x00800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
    0x7F800001, 0xFFFFFFFF, 0x3F800000, 0xBF800000, 0x3F000000, 0x40000000, 0x3F800001,
    0x3F7FFFFF, 0x4B800000, 0x4B800001, 0x33800000, 0x34000000, 0x42B17218, 0x42B17217,
    0xC2AEAC50, 0xC2AEAC4F, 0x43800000, 0xC3800000, 0x437FFFFF, 0xC37FFFFF, 0x3E000000,
    0x3DFFFFFF, 0xBE000000, 0xBDFFFFFF, 0x39800000, 0x41851592, 0xC1200000, 0xC1220000,
    0x5F800000, 0x1F800000, 0x20000000, 0x1F7FFFFF, 0x7E800000, 0x01000000, 0x3FB504F3,
    0x41100000, 0x41180000, 0x3F000001, 0x4E800000, 0x5F000000, 0xDF000000,
};
constexpr size_t kNumEdges = sizeof kEdges / sizeof kEdges[0];

// A random fp32 pattern: edges, any bits, or moderate magnitudes.
uint32_t rnd_fp32(uint64_t *s)
{
    const uint64_t r = rnd(s);
    switch (r % 8) {
    case 0:
    case 1: return kEdges[(r >> 8) % kNumEdges];
    case 2: { // an edge plus or minus a few ulps
        const uint32_t e = kEdges[(r >> 8) % kNumEdges];
        const uint32_t d = static_cast<uint32_t>((r >> 20) % 5);
        return (r >> 30) & 1 ? e + d : e - d;
    }
    case 3:
    case 4: return static_cast<uint32_t>(r >> 32);
    default: { // |x| in [2^-20, 2^8), random sign
        const uint32_t e = 107u + static_cast<uint32_t>((r >> 8) % 28u);
        return static_cast<uint32_t>(((r >> 16) & 1u) << 31) | (e << 23) |
               static_cast<uint32_t>((r >> 32) & 0x7FFFFFu);
    }
    }
}

// A word for an operand in format fmt: bf16 words carry junk in the upper half.
uint32_t rnd_word(uint64_t *s, vpu_fmt_t fmt)
{
    const uint32_t v = rnd_fp32(s);
    if (fmt == VPU_FMT_FP32)
        return v;
    return (static_cast<uint32_t>(rnd(s)) & 0xFFFF0000u) | (v >> 16);
}

const char *red_name(unsigned red)
{
    return red == 1 ? "rsum" : red == 2 ? "rmax" : "rmin";
}

const char *op_name(unsigned op)
{
    if (op == kOpSmexp)
        return "smexp";
    const char *n = vpu_op_name(lane_op(op));
    return n ? n : "invalid";
}

// The model of one lane for any RTL opcode: vpu_load, the op, vpu_store.
uint32_t model_lane(unsigned op, vpu_fmt_t fa, uint32_t a, vpu_fmt_t fb, uint32_t b,
                    vpu_fmt_t fy)
{
    const fp32_t x = vpu_load(fa, a), y = vpu_load(fb, b);
    fp32_t r;
    if (op == kOpSmexp)
        r = vpu_exp(fp32_sub(x, y));
    else if (vpu_op_is_binary(lane_op(op)))
        r = vpu_binary(lane_op(op), x, y);
    else
        r = vpu_unary(lane_op(op), x);
    return vpu_store(fy, r);
}

// One vector presented to the VPU.
struct Vec {
    unsigned op = 0;
    vpu_fmt_t fa = VPU_FMT_FP32, fb = VPU_FMT_FP32, fy = VPU_FMT_FP32;
    unsigned red = 0;          // 0 none, 1 sum, 2 max, 3 min
    bool first = false, last = false;
    std::vector<uint32_t> a, b;
    std::vector<uint8_t> mask; // lanes in the reduction
    // expectations (model)
    std::vector<uint32_t> exp; // y_o words
    uint32_t red_exp = 0;      // red_o for the vector with last
    long row = -1;             // the row a reduction belongs to (record key)
};

// A record of either trace.
struct Rec {
    uint64_t cycle;
    int kind;     // 0 vector, 1 reduction, 2 softmax row
    size_t index; // vector index / row index
    std::string op;
    std::vector<uint32_t> v;
};

struct Options {
    std::string modes = "all";
    uint64_t seed = 1;
    uint64_t count = 2000;
    unsigned gaps = 10; // percent of cycles left idle between vectors in random modes
    std::string rtl_trace = "vpu_rtl.trace";
    std::string model_trace = "vpu_model.trace";
    std::string fst = "vpu_tb.fst";
    bool fault = false;
    uint64_t f_vec = 0;
    unsigned f_lane = 0, f_bit = 0;
};

int usage_error(const char *what, const char *arg)
{
    return tb::usage_error("vpu_tb", what, arg);
}

void help()
{
    std::printf(
        "usage: vpu_tb [options] [+verilator+seed+N] [+trace]\n"
        "Co-simulates the generated %u-lane VPU against the C model.\n"
        "  --mode M[,M...]   exhaustive: every unary op on all 65,536 bf16 inputs (bf16 in /\n"
        "                      fp32 out, and the same values as fp32 in / bf16 out);\n"
        "                    binary: add sub mul max min, random vectors with edge values;\n"
        "                    unary: every unary op on random fp32 / bf16 vectors;\n"
        "                    broadcast: bias-add and row scaling (b = the broadcast row);\n"
        "                    reduce: rsum rmax rmin of random rows (n = 0 .. 9L);\n"
        "                    softmax: rows of random length (not multiples of L), 3 passes;\n"
        "                    all: every mode but exhaustive (default all)\n"
        "  --seed S          data seed (default 1)\n"
        "  --count N         vectors (binary, unary, broadcast) or rows / 8 (reduce,\n"
        "                    softmax) per mode (default 2000)\n"
        "  --gaps P          percent of idle cycles between vectors, random modes (default 10)\n"
        "  --rtl-trace F     RTL trace (default vpu_rtl.trace)\n"
        "  --model-trace F   model trace (default vpu_model.trace)\n"
        "  --fst F           waveform written with +trace (default vpu_tb.fst)\n"
        "  --inject-fault V,LANE,BIT  flip bit BIT of lane LANE of output vector V as captured\n"
        "  +verilator+seed+N seed of the X-initialisation (printed on every run)\n"
        "  +trace            write an FST waveform\n"
        "Exit status: 0 PASS, 1 FAIL, 2 bad arguments.\n",
        kL);
}

// a leading '+' is accepted, as it always was here
bool parse_u64(const char *s, uint64_t *out)
{
    return tb::parse_u64(s, out, true);
}

int parse_options(int argc, char **argv, Options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '+')
            continue;
        if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) {
            help();
            return 0;
        }
        if (i + 1 >= argc)
            return usage_error("unknown option or missing value", a);
        const char *v = argv[++i];
        uint64_t x = 0;
        if (std::strcmp(a, "--mode") == 0) {
            o->modes = v;
        } else if (std::strcmp(a, "--seed") == 0) {
            if (!parse_u64(v, &x))
                return usage_error("bad seed", v);
            o->seed = x;
        } else if (std::strcmp(a, "--count") == 0) {
            if (!parse_u64(v, &x) || x == 0 || x > 100000000)
                return usage_error("--count must be in 1 .. 100000000", v);
            o->count = x;
        } else if (std::strcmp(a, "--gaps") == 0) {
            if (!parse_u64(v, &x) || x > 90)
                return usage_error("--gaps must be in 0 .. 90", v);
            o->gaps = static_cast<unsigned>(x);
        } else if (std::strcmp(a, "--rtl-trace") == 0) {
            o->rtl_trace = v;
        } else if (std::strcmp(a, "--model-trace") == 0) {
            o->model_trace = v;
        } else if (std::strcmp(a, "--fst") == 0) {
            o->fst = v;
        } else if (std::strcmp(a, "--inject-fault") == 0) {
            unsigned long long vv, l, b;
            char tail;
            if (std::sscanf(v, "%llu,%llu,%llu%c", &vv, &l, &b, &tail) != 3 || l >= kL || b >= 32)
                return usage_error("--inject-fault takes V,LANE,BIT (LANE < L, BIT < 32)", v);
            o->fault = true;
            o->f_vec = vv;
            o->f_lane = static_cast<unsigned>(l);
            o->f_bit = static_cast<unsigned>(b);
        } else {
            return usage_error("unknown option", a);
        }
    }
    return -1;
}

bool has_mode(const std::string &modes, const char *m)
{
    std::string list = "," + modes + ",";
    if (std::strcmp(m, "exhaustive") != 0 && list.find(",all,") != std::string::npos)
        return true;
    return list.find("," + std::string(m) + ",") != std::string::npos;
}

// ---- Work items ---------------------------------------------------------------------------
Vec make_vec(unsigned op, vpu_fmt_t fa, vpu_fmt_t fb, vpu_fmt_t fy)
{
    Vec v;
    v.op = op;
    v.fa = fa;
    v.fb = fb;
    v.fy = fy;
    v.a.assign(kL, 0);
    v.b.assign(kL, 0);
    v.mask.assign(kL, 1);
    v.exp.assign(kL, 0);
    return v;
}

void expect_vec(Vec *v)
{
    for (unsigned i = 0; i < kL; i++)
        v->exp[i] = model_lane(v->op, v->fa, v->a[i], v->fb, v->b[i], v->fy);
}

vpu_fmt_t rnd_fmt(uint64_t *s)
{
    return (rnd(s) & 3) == 0 ? VPU_FMT_BF16 : VPU_FMT_FP32;
}

// Every unary op on all 65,536 bf16 patterns: bf16 in / fp32 out, then fp32 in / bf16 out.
void build_exhaustive(std::vector<Vec> *out, uint64_t *s)
{
    const unsigned ops[] = { VPU_OP_CVT,     VPU_OP_RELU, VPU_OP_EXP,   VPU_OP_TANH,
                             VPU_OP_SIGMOID, VPU_OP_GELU, VPU_OP_RECIP, kOpLog,
                             kOpRsqrt,       kOpErf };
    for (unsigned pass = 0; pass < 2; pass++)
        for (unsigned op : ops)
            for (uint32_t base = 0; base < 65536u; base += kL) {
                Vec v = make_vec(op, pass ? VPU_FMT_FP32 : VPU_FMT_BF16, VPU_FMT_FP32,
                                 pass ? VPU_FMT_BF16 : VPU_FMT_FP32);
                for (unsigned i = 0; i < kL; i++) {
                    const uint32_t h = (base + i) & 0xFFFFu; // wraps when L does not divide
                    v.a[i] = pass ? h << 16 : ((static_cast<uint32_t>(rnd(s)) << 16) | h);
                    v.b[i] = static_cast<uint32_t>(rnd(s)); // ignored by unary ops
                }
                expect_vec(&v);
                out->push_back(std::move(v));
            }
}

void build_random(std::vector<Vec> *out, uint64_t *s, uint64_t count, bool binary)
{
    const unsigned bin[] = { VPU_OP_ADD, VPU_OP_SUB, VPU_OP_MUL, VPU_OP_MAX, VPU_OP_MIN,
                             kOpSmexp };
    const unsigned un[] = { VPU_OP_CVT, VPU_OP_RELU, VPU_OP_EXP,  VPU_OP_TANH,
                            VPU_OP_SIGMOID, VPU_OP_GELU, VPU_OP_RECIP, kOpLog, kOpRsqrt,
                            kOpErf, 16, 31 };
    for (uint64_t k = 0; k < count; k++) {
        const unsigned op = binary ? bin[rnd(s) % 6] : un[rnd(s) % 12];
        Vec v = make_vec(op, rnd_fmt(s), rnd_fmt(s), rnd_fmt(s));
        for (unsigned i = 0; i < kL; i++) {
            v.a[i] = rnd_word(s, v.fa);
            const uint64_t r = rnd(s);
            if (binary && r % 4 == 0) // near the same value: cancellation, ties, equal
                v.b[i] = v.a[i] + static_cast<uint32_t>((r >> 8) % 3) - 1u;
            else if (binary && r % 4 == 1)
                v.b[i] = (v.a[i] ^ (v.fb == VPU_FMT_BF16 ? 0x8000u : 0x80000000u)) +
                         static_cast<uint32_t>((r >> 8) % 3) - 1u;
            else
                v.b[i] = rnd_word(s, v.fb);
        }
        expect_vec(&v);
        out->push_back(std::move(v));
    }
}

// Bias-add / row scaling: rows x cols, b = the broadcast row's chunk for each vector.
void build_broadcast(std::vector<Vec> *out, uint64_t *s, uint64_t count)
{
    uint64_t done = 0;
    while (done < count) {
        const size_t cols = 1 + rnd(s) % (3 * kL), rows = 1 + rnd(s) % 6;
        const unsigned op = (rnd(s) & 1) ? VPU_OP_ADD : VPU_OP_MUL;
        const vpu_fmt_t fx = rnd_fmt(s), fb = rnd_fmt(s), fy = rnd_fmt(s);
        std::vector<uint32_t> x(rows * cols), row(cols), y(rows * cols);
        for (auto &w : x)
            w = rnd_word(s, fx);
        for (auto &w : row)
            w = rnd_word(s, fb);
        vpu_vec_broadcast(static_cast<vpu_op_t>(op), rows, cols, fx, x.data(), fb, row.data(),
                          fy, y.data());
        for (size_t r = 0; r < rows; r++)
            for (size_t c0 = 0; c0 < cols; c0 += kL) {
                Vec v = make_vec(op, fx, fb, fy);
                for (unsigned i = 0; i < kL; i++) {
                    const bool in = c0 + i < cols;
                    v.a[i] = in ? x[r * cols + c0 + i] : rnd_word(s, fx);
                    v.b[i] = in ? row[c0 + i] : rnd_word(s, fb);
                }
                expect_vec(&v);
                for (unsigned i = 0; i < kL && c0 + i < cols; i++)
                    if (v.exp[i] != y[r * cols + c0 + i]) { // the per-lane model is vpu_vec_broadcast
                        std::fprintf(stderr, "vpu_tb: internal error: broadcast model mismatch\n");
                        std::exit(2);
                    }
                out->push_back(std::move(v));
                done++;
            }
    }
}

// The vectors of one row reduction: chunks of L, the tail masked.
void row_vectors(std::vector<Vec> *out, uint64_t *s, unsigned op, unsigned red, vpu_fmt_t fx,
                 const uint32_t *x, size_t n, const uint32_t *bvals, vpu_fmt_t fb, long row)
{
    const size_t chunks = n == 0 ? 1 : (n + kL - 1) / kL;
    for (size_t c = 0; c < chunks; c++) {
        Vec v = make_vec(op, fx, fb, VPU_FMT_FP32);
        v.red = red;
        v.first = c == 0;
        v.last = c + 1 == chunks;
        v.row = row;
        for (unsigned i = 0; i < kL; i++) {
            const size_t k = c * kL + i;
            v.mask[i] = k < n;
            v.a[i] = k < n ? x[k] : rnd_word(s, fx); // masked lanes: junk
            v.b[i] = bvals ? bvals[i] : rnd_word(s, fb);
        }
        expect_vec(&v);
        out->push_back(std::move(v));
    }
}

// Random rows for rsum / rmax / rmin (n = 0 allowed: the identity).
void build_reduce(std::vector<Vec> *out, uint64_t *s, uint64_t rows, long *row_id)
{
    for (uint64_t r = 0; r < rows; r++) {
        const unsigned red = 1 + static_cast<unsigned>(rnd(s) % 3);
        const vpu_fmt_t fx = rnd_fmt(s);
        const size_t n = (r == 0) ? 0 : rnd(s) % (9 * kL + 1);
        std::vector<uint32_t> x(n);
        const bool tame = rnd(s) & 1; // half the rows without NaN/Inf: sums mean something
        for (auto &w : x) {
            w = rnd_word(s, fx);
            if (tame && ((fx == VPU_FMT_BF16 ? (w >> 7) & 0xFF : (w >> 23) & 0xFF) == 0xFF))
                w &= fx == VPU_FMT_BF16 ? 0xFFFFBFFFu : 0xBFFFFFFFu;
        }
        fp32_t res;
        const vpu_op_t vop = red == 1 ? VPU_OP_ADD : red == 2 ? VPU_OP_MAX : VPU_OP_MIN;
        vpu_reduce(vop, n, fx, x.data(), kL, &res);
        row_vectors(out, s, VPU_OP_CVT, red, fx, x.data(), n, nullptr, VPU_FMT_FP32, (*row_id)++);
        out->back().red_exp = res.v;
    }
}

// Softmax rows: the driver's four passes (max; exp(x - m) + sum; recip; scale) with every
// value fed forward from the RTL's own outputs.
struct SmRow {
    vpu_fmt_t fx, fy;
    std::vector<uint32_t> x, y_model;
    long max_row, sum_row;
};

// ---- The simulation ------------------------------------------------------------------------

struct Sim {
    VerilatedContext *ctx;
    Vtpu_vpu *top;
    VerilatedFstC *fst;
    uint64_t cycle = 0;
    uint64_t junk;
    uint64_t vec_index = 0; // global index of the next vector
    std::vector<Rec> rtl, model;
    std::vector<Vec> all;   // every vector issued, by index (for the divergence report)
    tb::Errors perr{"vpu_tb"};
    const Options *opt;
    uint64_t vectors = 0;

    void err(const char *fmt, ...) __attribute__((format(printf, 2, 3)))
    {
        va_list ap;
        va_start(ap, fmt);
        perr.vlog(-1, cycle, fmt, ap);
        va_end(ap);
    }

    void edge(int clk) { tb::edge(ctx, top, fst, clk); }

    void junk_inputs()
    {
        top->valid_i = 0;
        const uint64_t r = rnd(&junk);
        top->op_i = r & 31;
        top->fmt_a_i = (r >> 5) & 1;
        top->fmt_b_i = (r >> 6) & 1;
        top->fmt_y_i = (r >> 7) & 1;
        top->red_i = (r >> 8) & 3;
        top->first_i = (r >> 9) & 1;
        top->last_i = (r >> 10) & 1;
        for (unsigned i = 0; i < kL; i++) {
            const uint64_t q = rnd(&junk);
            put_field(top->a_i, 32 * i, 32, static_cast<uint32_t>(q));
            put_field(top->b_i, 32 * i, 32, static_cast<uint32_t>(q >> 32));
            put_field(top->mask_i, i, 1, static_cast<uint32_t>(q >> 17) & 1u);
        }
    }

    void present(const Vec &v)
    {
        top->valid_i = 1;
        top->op_i = v.op;
        top->fmt_a_i = v.fa;
        top->fmt_b_i = v.fb;
        top->fmt_y_i = v.fy;
        top->red_i = v.red;
        top->first_i = v.first;
        top->last_i = v.last;
        for (unsigned i = 0; i < kL; i++) {
            put_field(top->a_i, 32 * i, 32, v.a[i]);
            put_field(top->b_i, 32 * i, 32, v.b[i]);
            put_field(top->mask_i, i, 1, v.mask[i]);
        }
    }

    // Streams the vectors (with random idle cycles), drains, and returns each vector's y_o
    // words as the RTL produced them and each reduction row's red_o (by row index).
    void run(std::vector<Vec> &vecs, unsigned gaps, std::vector<std::vector<uint32_t>> *ys,
             std::vector<uint32_t> *reds)
    {
        struct Pending { uint64_t due; size_t local; };
        ys->assign(vecs.size(), std::vector<uint32_t>());
        if (vecs.empty())
            return;
        std::vector<Pending> outq, redq; // expected outputs in order
        size_t oq = 0, rq = 0, next = 0;
        const uint64_t base_index = vec_index;
        ys->assign(vecs.size(), std::vector<uint32_t>());
        uint64_t idle_after = 0;
        for (;;) {
            junk_inputs();
            if (next < vecs.size() && !(gaps && rnd(&junk) % 100 < gaps)) {
                Vec &v = vecs[next];
                present(v);
                outq.push_back({ cycle + kLat, next });
                Rec m{ cycle + kLat, 0, base_index + next, op_name(v.op), v.exp };
                model.push_back(m);
                if (v.red && v.last) {
                    redq.push_back({ cycle + kRedLat, next });
                    model.push_back(Rec{ cycle + kRedLat, 1, static_cast<size_t>(v.row),
                                         red_name(v.red), { v.red_exp } });
                }
                all.push_back(v);
                next++;
            }
            edge(0);
            // outputs during this cycle
            const bool valid = top->valid_o & 1u;
            const bool due = oq < outq.size() && outq[oq].due == cycle;
            if (valid != due)
                err("valid_o is %u, expected %u", valid ? 1u : 0u, due ? 1u : 0u);
            if (valid) {
                std::vector<uint32_t> w(kL);
                for (unsigned i = 0; i < kL; i++)
                    w[i] = get_field(top->y_o, 32 * i, 32);
                const size_t local = due ? outq[oq].local : SIZE_MAX;
                const uint64_t gi = base_index + (due ? local : 0);
                if (opt->fault && due && gi == opt->f_vec)
                    w[opt->f_lane] ^= 1u << opt->f_bit;
                rtl.push_back(Rec{ cycle, 0, static_cast<size_t>(gi),
                                   due ? op_name(vecs[local].op) : "unexpected", w });
                if (due) {
                    (*ys)[local] = w;
                    oq++;
                }
            }
            const bool rvalid = top->red_valid_o & 1u;
            const bool rdue = rq < redq.size() && redq[rq].due == cycle;
            if (rvalid != rdue)
                err("red_valid_o is %u, expected %u", rvalid ? 1u : 0u, rdue ? 1u : 0u);
            if (rvalid) {
                const uint32_t r = top->red_o;
                const Vec *lv = rdue ? &vecs[redq[rq].local] : nullptr;
                rtl.push_back(Rec{ cycle, 1, lv ? static_cast<size_t>(lv->row) : 0,
                                   lv ? red_name(lv->red) : "unexpected", { r } });
                if (lv) {
                    if (reds->size() <= static_cast<size_t>(lv->row))
                        reds->resize(lv->row + 1);
                    (*reds)[lv->row] = r;
                    rq++;
                }
            }
            edge(1);
            cycle++;
            if (next == vecs.size() && oq == outq.size() && rq == redq.size()) {
                if (++idle_after > 4) // a few quiet cycles: nothing unexpected comes out
                    break;
            }
            if (next == vecs.size() && cycle > outq.back().due + kRedLat + 8) {
                err("outputs missing: %zu of %zu vectors, %zu of %zu reductions", oq,
                    outq.size(), rq, redq.size());
                break;
            }
        }
        vec_index += vecs.size();
        vectors += vecs.size();
    }
};

// Writes a trace file: header lines and one line per record.
bool write_trace(const std::string &path, const char *tool, const std::vector<Rec> &recs,
                 const Options &o, int vseed)
{
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f)
        return false;
    std::fprintf(f, "# tpu-trace 1\n# tool %s\n# unit vpu\n", tool);
    std::fprintf(f, "# params lanes=%u latency=%" PRIu64 " red_latency=%" PRIu64 "\n", kL, kLat,
                 kRedLat);
    std::fprintf(f, "# seed %" PRIu64 " modes %s verilator-seed %d\n", o.seed, o.modes.c_str(),
                 vseed);
    std::string line;
    for (const Rec &r : recs) {
        char buf[64];
        const char *unit = "vpu";
        std::snprintf(buf, sizeof buf, "%" PRIu64 " %s %s %zu", r.cycle, unit, r.op.c_str(),
                      r.index);
        line = buf;
        for (uint32_t w : r.v) {
            std::snprintf(buf, sizeof buf, " %08x", w);
            line += buf;
        }
        line += '\n';
        std::fputs(line.c_str(), f);
    }
    return std::fclose(f) == 0;
}

// Reads the records of a trace written by write_trace (comments skipped).
bool read_trace(const std::string &path, std::vector<std::string> *lines)
{
    FILE *f = std::fopen(path.c_str(), "r");
    if (!f)
        return false;
    char *buf = nullptr;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&buf, &cap, f)) >= 0) {
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
            buf[--n] = '\0';
        if (n == 0 || buf[0] == '#')
            continue;
        lines->push_back(buf);
    }
    std::free(buf);
    std::fclose(f);
    return true;
}

struct Parsed {
    uint64_t cycle = 0;
    std::string unit, op;
    uint64_t index = 0;
    std::vector<uint32_t> v;
};

bool parse_line(const std::string &s, Parsed *p)
{
    char *dup = strdup(s.c_str());
    char *save = nullptr;
    const char *t[4];
    for (int i = 0; i < 4; i++)
        t[i] = strtok_r(i ? nullptr : dup, " ", &save);
    bool ok = t[0] && t[1] && t[2] && t[3];
    if (ok) {
        p->cycle = std::strtoull(t[0], nullptr, 10);
        p->unit = t[1];
        p->op = t[2];
        p->index = std::strtoull(t[3], nullptr, 10);
        p->v.clear();
        const char *w;
        while ((w = strtok_r(nullptr, " ", &save)) != nullptr)
            p->v.push_back(static_cast<uint32_t>(std::strtoul(w, nullptr, 16)));
    }
    std::free(dup);
    return ok;
}

} // namespace

int main(int argc, char **argv)
{
    Options opt;
    int rc = parse_options(argc, argv, &opt);
    if (rc >= 0)
        return rc;
    uint64_t s = opt.seed * UINT64_C(0x2545F4914F6CDD1D) + 7;
    {
        static const char *const names[] = { "exhaustive", "binary", "unary", "broadcast",
                                             "reduce", "softmax", "all" };
        std::string list = opt.modes + ",";
        for (size_t p = 0, q; (q = list.find(',', p)) != std::string::npos; p = q + 1) {
            const std::string m = list.substr(p, q - p);
            bool ok = false;
            for (const char *n : names)
                ok = ok || m == n;
            if (!ok)
                return usage_error("--mode takes exhaustive, binary, unary, broadcast, reduce, "
                                   "softmax or all, comma-separated", opt.modes.c_str());
        }
    }

    const std::unique_ptr<VerilatedContext> ctx = tb::new_context(argc, argv);
    std::printf("vpu_tb: L=%u latency=%" PRIu64 " red_latency=%" PRIu64
                " modes=%s seed=%" PRIu64 " +verilator+seed+%d (add it to replay this run)\n",
                kL, kLat, kRedLat, opt.modes.c_str(), opt.seed, ctx->randSeed());
    std::fflush(stdout);
    const std::unique_ptr<Vtpu_vpu> top{new Vtpu_vpu{ctx.get(), "TOP"}};
    const std::unique_ptr<VerilatedFstC> fst =
        tb::open_fst(ctx.get(), top.get(), opt.fst, "vpu_tb");

    Sim sim;
    sim.ctx = ctx.get();
    sim.top = top.get();
    sim.fst = fst.get();
    sim.opt = &opt;
    sim.junk = opt.seed ^ UINT64_C(0xA5A5A5A55A5A5A5A) ^ static_cast<uint64_t>(ctx->randSeed());

    // ---- Reset: one cycle. Deliberately short: only the valid bits are reset (asynchronously),
    // everything else must not matter, and a longer reset would flush unreset pipeline
    // stages with its zeros (that hid the unreset tree valid bits for L <= 16). ----
    sim.junk_inputs();
    top->rst_ni = 0;
    for (int i = 0; i < 1; i++) {
        sim.edge(0);
        sim.edge(1);
    }
    top->rst_ni = 1;

    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<uint32_t>> ys;
    std::vector<uint32_t> reds;
    long row_id = 0;

    if (has_mode(opt.modes, "exhaustive")) {
        std::vector<Vec> v;
        build_exhaustive(&v, &s);
        sim.run(v, 0, &ys, &reds);
    }
    if (has_mode(opt.modes, "binary")) {
        std::vector<Vec> v;
        build_random(&v, &s, opt.count, true);
        sim.run(v, opt.gaps, &ys, &reds);
    }
    if (has_mode(opt.modes, "unary")) {
        std::vector<Vec> v;
        build_random(&v, &s, opt.count, false);
        sim.run(v, opt.gaps, &ys, &reds);
    }
    if (has_mode(opt.modes, "broadcast")) {
        std::vector<Vec> v;
        build_broadcast(&v, &s, opt.count);
        sim.run(v, opt.gaps, &ys, &reds);
    }
    if (has_mode(opt.modes, "reduce")) {
        std::vector<Vec> v;
        build_reduce(&v, &s, std::max<uint64_t>(opt.count / 8, 4), &row_id);
        sim.run(v, opt.gaps, &ys, &reds);
    }
    size_t sm_rows_done = 0;
    if (has_mode(opt.modes, "softmax")) {
        const size_t nrows = static_cast<size_t>(std::max<uint64_t>(opt.count / 8, 4));
        std::vector<SmRow> rows(nrows);
        // pass 1: the max of each row
        std::vector<Vec> p1;
        for (size_t r = 0; r < nrows; r++) {
            SmRow &R = rows[r];
            R.fx = rnd_fmt(&s);
            R.fy = rnd_fmt(&s);
            size_t n = 1 + rnd(&s) % (6 * kL);
            if (kL > 1 && n % kL == 0)
                n++; // never a multiple of L (L = 1: every length is)
            R.x.resize(n);
            const unsigned kind = static_cast<unsigned>(rnd(&s) % 8);
            const uint32_t scale = 100u + static_cast<uint32_t>(rnd(&s) % 40u); // 2^-27 .. 2^12
            for (auto &w : R.x) {
                uint32_t f;
                if (kind == 0) {
                    f = rnd_fp32(&s); // specials anywhere
                } else {
                    f = static_cast<uint32_t>((rnd(&s) & 1) << 31) |
                        ((scale - static_cast<uint32_t>(rnd(&s) % 8)) << 23) |
                        static_cast<uint32_t>(rnd(&s) & 0x7FFFFF);
                    if (kind == 1 && rnd(&s) % 5 == 0)
                        f = 0xFF800000u; // -Inf among finite values
                }
                w = R.fx == VPU_FMT_BF16 ? (f >> 16) : f;
            }
            R.y_model.resize(n);
            vpu_softmax(n, R.fx, R.x.data(), R.fy, R.y_model.data(), kL);
            R.max_row = row_id++;
            row_vectors(&p1, &s, VPU_OP_CVT, 2, R.fx, R.x.data(), n, nullptr, VPU_FMT_FP32,
                        R.max_row);
            fp32_t m;
            vpu_reduce(VPU_OP_MAX, n, R.fx, R.x.data(), kL, &m);
            p1.back().red_exp = m.v;
        }
        sim.run(p1, opt.gaps, &ys, &reds);
        // pass 2: e = exp(x - m) with m as the RTL computed it; s = sum(e)
        std::vector<Vec> p2;
        std::vector<std::vector<uint32_t>> e_model(nrows);
        std::vector<size_t> p2_first(nrows);
        for (size_t r = 0; r < nrows; r++) {
            SmRow &R = rows[r];
            const size_t n = R.x.size();
            fp32_t m_model;
            vpu_reduce(VPU_OP_MAX, n, R.fx, R.x.data(), kL, &m_model);
            const uint32_t m_rtl = reds[R.max_row];
            std::vector<uint32_t> mb(kL, m_model.v);
            e_model[r].resize(n);
            for (size_t i = 0; i < n; i++)
                e_model[r][i] = vpu_exp(fp32_sub(vpu_load(R.fx, R.x[i]), m_model)).v;
            fp32_t s_model;
            vpu_reduce(VPU_OP_ADD, n, VPU_FMT_FP32, e_model[r].data(), kL, &s_model);
            R.sum_row = row_id++;
            p2_first[r] = p2.size();
            row_vectors(&p2, &s, kOpSmexp, 1, R.fx, R.x.data(), n, mb.data(), VPU_FMT_FP32,
                        R.sum_row);
            p2.back().red_exp = s_model.v;
            for (size_t k = p2_first[r]; k < p2.size(); k++) // the RTL gets the RTL's m
                std::fill(p2[k].b.begin(), p2[k].b.end(), m_rtl);
        }
        std::vector<std::vector<uint32_t>> ys2;
        sim.run(p2, opt.gaps, &ys2, &reds);
        // pass 3a: r = recip(s), one vector per row (s in every lane)
        std::vector<Vec> p3;
        for (size_t r = 0; r < nrows; r++) {
            fp32_t s_model;
            vpu_reduce(VPU_OP_ADD, rows[r].x.size(), VPU_FMT_FP32, e_model[r].data(), kL,
                       &s_model);
            Vec v = make_vec(VPU_OP_RECIP, VPU_FMT_FP32, VPU_FMT_FP32, VPU_FMT_FP32);
            std::fill(v.a.begin(), v.a.end(), s_model.v);
            expect_vec(&v);
            std::fill(v.a.begin(), v.a.end(), reds[rows[r].sum_row]);
            p3.push_back(std::move(v));
        }
        std::vector<std::vector<uint32_t>> ys3;
        sim.run(p3, opt.gaps, &ys3, &reds);
        // pass 3b: y = e x r, e and r as the RTL produced them
        std::vector<Vec> p4;
        std::vector<size_t> p4_last(nrows);
        for (size_t r = 0; r < nrows; r++) {
            SmRow &R = rows[r];
            const size_t n = R.x.size();
            for (size_t c0 = 0; c0 < n; c0 += kL) {
                Vec v = make_vec(VPU_OP_MUL, VPU_FMT_FP32, VPU_FMT_FP32, R.fy);
                for (unsigned i = 0; i < kL; i++) {
                    v.a[i] = c0 + i < n ? e_model[r][c0 + i] : 0x3F800000u;
                    v.b[i] = p3[r].exp[0];
                }
                expect_vec(&v);
                const std::vector<uint32_t> &e_rtl = ys2[p2_first[r] + c0 / kL];
                for (unsigned i = 0; i < kL; i++) {
                    v.a[i] = c0 + i < n ? e_rtl[i] : 0x3F800000u;
                    v.b[i] = ys3[r][0];
                }
                p4.push_back(std::move(v));
            }
            p4_last[r] = p4.size() - 1;
        }
        std::vector<std::vector<uint32_t>> ys4;
        const uint64_t p4_base = sim.vec_index;
        sim.run(p4, opt.gaps, &ys4, &reds);
        // the softmax rows: the RTL's y (in the output format) against vpu_softmax
        size_t k = 0;
        for (size_t r = 0; r < nrows; r++) {
            SmRow &R = rows[r];
            const size_t n = R.x.size();
            std::vector<uint32_t> got(n);
            for (size_t i = 0; i < n; i++)
                got[i] = ys4[k + i / kL][i % kL];
            k += (n + kL - 1) / kL;
            // cycle: that of the row's last output vector (found in the RTL records)
            uint64_t cyc = 0;
            for (auto it = sim.rtl.rbegin(); it != sim.rtl.rend(); ++it)
                if (it->kind == 0 && it->index == p4_base + p4_last[r]) {
                    cyc = it->cycle;
                    break;
                }
            sim.rtl.push_back(Rec{ cyc, 2, r, "softmax", got });
            uint64_t mcyc = 0;
            for (auto it = sim.model.rbegin(); it != sim.model.rend(); ++it)
                if (it->kind == 0 && it->index == p4_base + p4_last[r]) {
                    mcyc = it->cycle;
                    break;
                }
            sim.model.push_back(Rec{ mcyc, 2, r, "softmax", R.y_model });
        }
        sm_rows_done = nrows;
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    top->final();
    if (fst)
        fst->close();

    // ---- Traces: the model's records in cycle order (vector, reduction, softmax within a
    // cycle), the RTL's as observed (softmax rows after their last vector) ----
    auto order = [](const Rec &a, const Rec &b) {
        return a.cycle != b.cycle ? a.cycle < b.cycle : a.kind < b.kind;
    };
    std::stable_sort(sim.model.begin(), sim.model.end(), order);
    std::stable_sort(sim.rtl.begin(), sim.rtl.end(), order);
    if (!write_trace(opt.rtl_trace, "vpu_tb (verilator)", sim.rtl, opt, ctx->randSeed()) ||
        !write_trace(opt.model_trace, "tpu-cmodel", sim.model, opt, ctx->randSeed())) {
        std::fprintf(stderr, "vpu_tb: error: cannot write the traces\n");
        return 2;
    }

    // ---- Compare the two files ----
    std::vector<std::string> le, lg;
    if (!read_trace(opt.model_trace, &le) || !read_trace(opt.rtl_trace, &lg)) {
        std::fprintf(stderr, "vpu_tb: error: cannot read the traces back\n");
        return 2;
    }
    uint64_t differing = 0;
    bool reported = false;
    const size_t nrec = std::max(le.size(), lg.size());
    for (size_t i = 0; i < nrec; i++) {
        if (i < le.size() && i < lg.size() && le[i] == lg[i])
            continue;
        differing++;
        if (reported)
            continue;
        reported = true;
        if (i >= le.size() || i >= lg.size()) {
            std::printf("vpu_tb: first divergence at record %zu: the %s trace ends there\n", i,
                        i >= le.size() ? "model" : "RTL");
            continue;
        }
        Parsed e, g;
        parse_line(le[i], &e);
        parse_line(lg[i], &g);
        if (e.op != g.op || e.index != g.index || e.v.size() != g.v.size()) {
            std::printf("vpu_tb: first divergence at record %zu: expected (model) \"%.80s\", "
                        "got (RTL) \"%.80s\"\n", i, le[i].c_str(), lg[i].c_str());
            continue;
        }
        size_t lane = 0;
        while (lane < e.v.size() && e.v[lane] == g.v[lane])
            lane++;
        if (lane == e.v.size()) {
            std::printf("vpu_tb: first divergence at record %zu (%s %s %" PRIu64
                        "): timing: expected in cycle %" PRIu64 ", got in cycle %" PRIu64 "\n",
                        i, e.unit.c_str(), e.op.c_str(), e.index, e.cycle, g.cycle);
            continue;
        }
        size_t ndiff = 0;
        for (size_t k = 0; k < e.v.size(); k++)
            ndiff += e.v[k] != g.v[k];
        const bool row_rec =
            e.op == "softmax" || e.op == "rsum" || e.op == "rmax" || e.op == "rmin";
        std::printf("vpu_tb: first divergence at record %zu, cycle %" PRIu64 ": op %s, %s %" PRIu64
                    ", %s %zu (%zu differ): expected %08x, got %08x",
                    i, g.cycle, e.op.c_str(), row_rec ? "row" : "vector", e.index,
                    row_rec ? "element" : "lane", lane, ndiff, e.v[lane], g.v[lane]);
        if (row_rec) {
            std::printf("\n");
        } else if (e.index < sim.all.size()) {
            const Vec &v = sim.all[e.index];
            std::printf("; input a %08x (%s)", v.a[lane], v.fa == VPU_FMT_BF16 ? "bf16" : "fp32");
            if (vpu_op_is_binary(lane_op(v.op)) || v.op == kOpSmexp)
                std::printf(", b %08x (%s)", v.b[lane], v.fb == VPU_FMT_BF16 ? "bf16" : "fp32");
            std::printf(", output %s\n", v.fy == VPU_FMT_BF16 ? "bf16" : "fp32");
        } else {
            std::printf("\n");
        }
    }
    const bool pass = differing == 0 && sim.perr.count == 0;
    if (sim.perr.count > kMaxErrors)
        std::printf("vpu_tb: ... %" PRIu64 " protocol errors in all\n", sim.perr.count);
    std::printf("%s: L=%u modes=%s: %" PRIu64 " vectors, %zu reduction rows, %zu softmax rows, "
                "%zu records, %" PRIu64 " differing, %" PRIu64 " protocol errors; %" PRIu64
                " cycles in %.2f s (%.0f vectors/s, %.0f elements/s)\n",
                pass ? "PASS" : "FAIL", kL, opt.modes.c_str(), sim.vectors,
                static_cast<size_t>(row_id), sm_rows_done, le.size(), differing, sim.perr.count,
                sim.cycle, secs, secs > 0 ? static_cast<double>(sim.vectors) / secs : 0.0,
                secs > 0 ? static_cast<double>(sim.vectors) * kL / secs : 0.0);
    return pass ? 0 : 1;
}
