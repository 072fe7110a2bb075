// SPDX-License-Identifier: Apache-2.0
// Co-simulation harness of the generated core (tpu_core, docs/isa.md).
//
// The harness is the host: an AXI4-Lite master that loads the program into IMEM, sets
// PC_START, starts the core, polls STATUS until done and reads ERR_CODE/ERR_PC and the
// counters; and the AXI4 slave host memory of the core's DMA master (the same image and
// options as the model runner tpu-run: tpu/host.h; beats of TPU_CORE_AXI_DATA_BITS / 8 bytes,
// the width gen built the core with), with a fixed read/write-response latency
// (--axi-latency, as the model assumes) and optional random back-pressure and extra latency
// on every channel (--stall P). An assertion layer checks the AXI rules on both buses. The
// memory-write and dispatch trace ports give the core trace of docs/isa.md "Trace (core)",
// which tpu-core-cmp compares with the model's.
//
// Usage: core_tb --prog FILE [--load ..] [--dump ..] [@FILE] [--trace F] [--axi-latency C]
//                [--stall P] [--seed S] [--max-cycles C] [--pc-start PC] [--fst F]
//                [--inject-fault SEQ[,ELEM,BIT]] [+verilator+seed+N] [+trace]
// Exit status: 0 done, 1 error halt, protocol violation or timeout, 2 bad arguments or I/O.

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <verilated.h>
#include <verilated_fst_c.h>

#include "Vtpu_core.h"
#include "axi_host_mem.h"
#include "tb_context.h"
#include "tb_errors.h"
#include "tb_options.h"
#include "tb_rng.h"
#include "tb_trace.h"
#include "tpu_params.h"
#include "vl_ports.h"

#include "tpu/host.h"
#include "tpu/isa.h"

#if !defined(TPU_MXU_N) || !defined(TPU_CORE_AXI_DATA_BITS) || !defined(TPU_CORE_AXIL_ADDR_BITS)
#error "tpu_params.h must define TPU_MXU_N, TPU_CORE_AXI_DATA_BITS and TPU_CORE_AXIL_ADDR_BITS"
#endif

// Legacy function required only so linking works on Cygwin and MSVC++
double sc_time_stamp() { return 0; }

namespace {

constexpr unsigned kN = TPU_MXU_N;
// the AXI4-Lite slave's byte addresses (docs/isa.md "AXI4-Lite slave"): IMEM instruction i at
// 0x4000 + 16i, so every IMEM size gen allows must fit below 2^kLiteAddrBits
constexpr unsigned kLiteAddrBits = TPU_CORE_AXIL_ADDR_BITS;
static_assert(kLiteAddrBits >= 16 && kLiteAddrBits <= 32, "TPU_CORE_AXIL_ADDR_BITS: 16 .. 32");
static_assert(0x4000ull + 16ull * TPU_LIM_IMEM_INSNS_MAX <= (1ull << kLiteAddrBits),
              "the AXI4-Lite window must reach the last instruction of the largest IMEM");
// The AXI4 data master (docs/isa.md "AXI4 master (data)"): B bits, beats of B/8 bytes.
constexpr unsigned kAxiBits = TPU_CORE_AXI_DATA_BITS;
constexpr unsigned kBeat = kAxiBits / 8;
constexpr unsigned kBeatWords = kAxiBits / 32;
static_assert(kAxiBits >= 64 && kAxiBits <= 512 && (kAxiBits & (kAxiBits - 1)) == 0,
              "TPU_CORE_AXI_DATA_BITS: 64, 128, 256 or 512");
using tb::BeatWords; // a beat's data, 32 bits a word, word 0 first
constexpr unsigned kCounters = 7;
const char *const kCounterNames[kCounters] = { "CYCLES",   "MXU_BUSY", "WL_STALL", "DMA_BUSY",
                                               "VPU_BUSY", "INSNS",    "NET_BUSY" };

struct Options {
    std::string trace = "core_rtl.trace";
    std::string fst = "core_tb.fst";
    std::string disp;   // --disp-cycles: "PC CYCLE" per dispatch (cycle 0 = the one after START)
    unsigned axi_latency = 4;
    unsigned stall = 0; // percent
    uint64_t seed = 1;  // of the stalls
    uint64_t max_cycles = 50000000;
    unsigned pc_start = 0;
    std::string inject_axi; // "", "wlast", "len", "hold": corrupt what the checker sees once
    bool fault = false;
    uint32_t f_seq = 0;
    unsigned f_elem = 0, f_bit = 0;
};

int usage_error(const char *what, const char *arg)
{
    return tb::usage_error("core_tb", what, arg);
}
using tb::parse_u64;

void help()
{
    std::printf(
        "usage: core_tb --prog FILE [options] [@FILE] [+verilator+seed+N] [+trace]\n"
        "Runs a program on the generated N=%u core (Verilator) as its host and host memory.\n"
        "Host options (as tpu-run, docs/isa.md \"Host memory and job options\"):\n"
        "  --prog FILE.s|FILE.bin   the program (loaded into IMEM through AXI4-Lite)\n"
        "  --load ADDR=FILE.npy     copy an array into host memory before the run\n"
        "  --dump ADDR=FILE.npy:DTYPE:ROWSxCOLS[:STRIDE]   write an array after the run\n"
        "  --dump-dir DIR, --hostmem-mib M, @FILE (options one per line)\n"
        "Harness options:\n"
        "  --trace F                the RTL's core trace (default core_rtl.trace)\n"
        "  --mxu N                  accepted if N is this core's (as tpu-run's command line)\n"
        "  --axi-data-bits B        accepted if B is this core's AXI data width (%u)\n"
        "  --axi-latency C          host memory latency: AR -> first R beat, last W -> B\n"
        "                           (default 4, as the model)\n"
        "  --stall P                random back-pressure on every AXI channel and extra\n"
        "                           response latency, P percent of cycles (0 .. 90, default 0)\n"
        "  --seed S                 seed of the random stalls (default 1)\n"
        "  --max-cycles C           give up after C cycles from START (default 50000000)\n"
        "  --pc-start PC            PC_START (default 0)\n"
        "  --inject-fault SEQ[,E,B] flip bit B (default 0) of element E (default 0) of the\n"
        "                           first row the dynamic instruction SEQ (0 = the first\n"
        "                           dispatched) writes, as recorded in the trace\n"
        "                           (proves that the compare catches it)\n"
        "  --inject-axi wlast|len|hold   show the AXI checker, once, a wrong WLAST, an AR\n"
        "                           len of 17 beats, or an AR payload changed while waiting\n"
        "                           (the DUT sees nothing: proves that the checks fire)\n"
        "  --fst F                  waveform file written with +trace (default core_tb.fst)\n"
        "  --disp-cycles F          write \"PC CYCLE\" per dispatched instruction, cycle 1 =\n"
        "                           the first dispatch (as tpu-run --disp-cycles)\n"
        "  +verilator+seed+N        seed of the X-initialisation (printed on every run)\n"
        "  +trace                   write an FST waveform\n"
        "Exit status: 0 done, 1 error halt / protocol violation / timeout, 2 bad arguments.\n",
        kN, kAxiBits);
}

// Returns -1 on success (continue), else the exit status.
int parse_options(int argc, char **argv, Options *o, tpu_host_t *host)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '+')
            continue; // Verilator's plusargs
        if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) {
            help();
            return 0;
        }
        // --opt=value or --opt value
        std::string name = a, value;
        bool has_eq = false;
        const size_t eq = name.find('=');
        if (name.compare(0, 2, "--") == 0 && eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            has_eq = true;
        }
        if (tpu_host_is_option(name.c_str())) {
            if (!has_eq) {
                if (i + 1 >= argc)
                    return usage_error("missing value", a);
                value = argv[++i];
            }
            char err[512];
            if (tpu_host_add_option(host, name.c_str(), value.c_str(), err, sizeof err) != 0) {
                std::fprintf(stderr, "core_tb: error: %s\n", err);
                return 2;
            }
            continue;
        }
        if (!has_eq) {
            if (i + 1 >= argc)
                return usage_error("unknown option or missing value", a);
            value = argv[++i];
        }
        const char *v = value.c_str();
        if (tb::given_twice(name))
            return usage_error("option given twice, expected once", name.c_str());
        const int hm = tb::parse_host_mem_option("core_tb", name, v, &o->axi_latency, &o->stall,
                                                 &o->seed, &o->max_cycles);
        if (hm > 0)
            return hm;
        if (hm == 0)
            continue;
        uint64_t x = 0;
        if (name == "--trace") {
            o->trace = value;
        } else if (name == "--fst") {
            o->fst = value;
        } else if (name == "--disp-cycles") {
            o->disp = value;
        } else if (name == "--mxu") {
            // accepted so that the model runner's command line works unchanged
            if (!parse_u64(v, &x) || x != kN)
                return usage_error("--mxu must be the verilated core's N", v);
        } else if (name == "--axi-data-bits") {
            // as --mxu: the width is the one gen built the core with
            if (!parse_u64(v, &x) || x != kAxiBits)
                return usage_error("--axi-data-bits must be the verilated core's AXI data width",
                                   v);
        } else if (name == "--pc-start") {
            if (!parse_u64(v, &x) || x > TPU_LIM_IMEM_INSNS_MAX - 1u)
                return usage_error("--pc-start takes an instruction index in 0 .. 32767", v);
            o->pc_start = static_cast<unsigned>(x);
        } else if (name == "--inject-axi") {
            if (value != "wlast" && value != "len" && value != "hold")
                return usage_error("--inject-axi takes wlast, len or hold", v);
            o->inject_axi = value;
        } else if (name == "--inject-fault") {
            unsigned long long sq = 0, e = 0, b = 0;
            char tail;
            const int got = std::sscanf(v, "%llu,%llu,%llu%c", &sq, &e, &b, &tail);
            if ((got != 1 && got != 3) || sq > 0xFFFFFFFFull || e >= kN || b >= 32)
                return usage_error("--inject-fault takes SEQ or SEQ,ELEM,BIT (ELEM < N, BIT < "
                                   "32; BIT < 16 for a bf16 row)",
                                   v);
            o->fault = true;
            o->f_seq = static_cast<uint32_t>(sq);
            o->f_elem = static_cast<unsigned>(e);
            o->f_bit = static_cast<unsigned>(b);
        } else {
            return usage_error("unknown option", name.c_str());
        }
    }
    if (host->prog_path == nullptr)
        return usage_error("--prog FILE is required", nullptr);
    return -1;
}

// What the DUT drives on an AXI4-Lite channel, as sampled before a rising edge: for the
// "valid held until ready, payload stable" rule.
struct ChanSample {
    bool valid = false, ready = false;
    std::array<uint64_t, 20> payload{};
};

// A beat's words to and from a data port (QData at 64 bits, VlWide above).
template <typename T> void put_beat(T &port, const BeatWords &d)
{
    for (unsigned j = 0; j < kBeatWords; j++)
        put_field(port, 32 * j, 32, d[j]);
}
template <typename T> BeatWords get_beat(const T &port)
{
    BeatWords d{};
    for (unsigned j = 0; j < kBeatWords; j++)
        d[j] = get_field(port, 32 * j, 32);
    return d;
}
} // namespace

int main(int argc, char **argv)
{
    Options opt;
    tpu_host_t host;
    tpu_host_init(&host);
    char err[1024];
    int xargc = 0;
    char **xargv = nullptr;
    if (tpu_args_expand(argc, argv, &xargc, &xargv, err, sizeof err) != 0) {
        std::fprintf(stderr, "core_tb: error: %s\n", err);
        return 2;
    }
    int rc = parse_options(xargc, xargv, &opt, &host);
    if (rc >= 0)
        return rc;

    tpu_insn_t *prog = nullptr;
    size_t count = 0;
    if (tpu_load_program(host.prog_path, kN, &prog, &count, err, sizeof err) != 0) {
        std::fprintf(stderr, "core_tb: error: %s\n", err);
        return 2;
    }
    if (tpu_host_load_all(&host, err, sizeof err) != 0) {
        std::fprintf(stderr, "core_tb: error: %s\n", err);
        return 2;
    }
    // ---- Verilator ----
    const std::unique_ptr<VerilatedContext> ctx = tb::new_context(argc, argv);
    std::printf("core_tb: N=%u prog=%s (%zu instructions) axi-data-bits=%u axi-latency=%u "
                "stall=%u%% seed=%" PRIu64 " +verilator+seed+%d (add it to replay this run)\n",
                kN, host.prog_path, count, kAxiBits, opt.axi_latency, opt.stall, opt.seed,
                ctx->randSeed());
    std::fflush(stdout);
    const std::unique_ptr<Vtpu_core> top{new Vtpu_core{ctx.get(), "TOP"}};
    const std::unique_ptr<VerilatedFstC> fst =
        tb::open_fst(ctx.get(), top.get(), opt.fst, "core_tb");

    tb::Rng rng(opt.seed);
    tb::Errors perr{"core_tb"};
    // ---- AXI4 slave (host memory) ----
    tb::AxiMem mem(-1, host.mem, host.size, kBeat, opt.axi_latency, opt.stall, &rng, &perr);
    mem.footprint(prog, count);
    mem.inject(opt.inject_axi == "wlast", opt.inject_axi == "len", opt.inject_axi == "hold");
    uint64_t cycle = 0; // rising edges since reset release

    // ---- AXI4-Lite master state (the host's control port) ----
    struct {
        bool awvalid = false, wvalid = false, bready = false, arvalid = false, rready = false;
        uint32_t awaddr = 0, wdata = 0, araddr = 0, rdata = 0;
    } lm;

    // ---- trace capture ----
    // per dynamic instruction (seq): its writes in the order made and its retire line
    std::map<uint32_t, std::vector<std::string>> writes;
    std::map<uint32_t, std::string> retired;
    std::vector<std::pair<unsigned, uint64_t>> disp_cycles; // (pc, cycle) in order
    uint64_t ub_writes = 0, acc_writes = 0, wm_writes = 0;

    ChanSample l_b, l_r;

    auto edge = [&](int clk) { tb::edge(ctx.get(), top.get(), fst.get(), clk); };

    auto row_hex = [&](const char *m, unsigned row, uint32_t seq, unsigned digits,
                       auto const &data) -> std::string {
        std::string s = "w " + std::to_string(seq) + " " + m + " " + std::to_string(row);
        char b[16];
        for (unsigned i = 0; i < kN; i++) {
            const uint32_t v = get_field(data, digits * 4 * i, digits * 4);
            std::snprintf(b, sizeof b, " %0*x", static_cast<int>(digits), v);
            s += b;
        }
        return s;
    };

    // Stable-payload check of an AXI4-Lite channel the DUT drives as the sender.
    using Payload = std::array<uint64_t, 20>;
    auto check_hold = [&](ChanSample &prev, bool valid, bool ready, Payload const &payload,
                          const char *name) {
        if (prev.valid && !prev.ready) {
            if (!valid)
                perr(cycle, "%s: valid dropped before ready", name);
            else if (payload != prev.payload)
                perr(cycle, "%s: payload changed while valid and not ready", name);
        }
        prev.valid = valid;
        prev.ready = ready;
        prev.payload = payload;
    };

    // One clock cycle: drive the harness's inputs, settle, sample every handshake and the
    // trace ports (what the rising edge will take), then the rising edge and the updates.
    auto step = [&]() {
        // -- harness-driven inputs --
        top->s_axil_awvalid = lm.awvalid;
        top->s_axil_awaddr = lm.awaddr;
        top->s_axil_wvalid = lm.wvalid;
        top->s_axil_wdata = lm.wdata;
        top->s_axil_wstrb = 0xF;
        top->s_axil_bready = lm.bready && !rng.pct(opt.stall);
        top->s_axil_arvalid = lm.arvalid;
        top->s_axil_araddr = lm.araddr;
        top->s_axil_rready = lm.rready && !rng.pct(opt.stall);

        tb::AxiIn in;
        mem.drive(cycle, &in);
        top->m_axi_arready = in.arready;
        top->m_axi_awready = in.awready;
        top->m_axi_wready = in.wready;
        top->m_axi_rvalid = in.rvalid;
        put_beat(top->m_axi_rdata, in.rdata);
        top->m_axi_rresp = in.rresp;
        top->m_axi_rlast = in.rlast;
        top->m_axi_bvalid = in.bvalid;
        top->m_axi_bresp = in.bresp;

        edge(0);

        // -- sample (the values the rising edge takes) --
        const bool l_aw = top->s_axil_awvalid && top->s_axil_awready;
        const bool l_w = top->s_axil_wvalid && top->s_axil_wready;
        const bool l_bh = top->s_axil_bvalid && top->s_axil_bready;
        const bool l_ar = top->s_axil_arvalid && top->s_axil_arready;
        const bool l_rh = top->s_axil_rvalid && top->s_axil_rready;
        const uint32_t l_rdata = top->s_axil_rdata;
        check_hold(l_b, top->s_axil_bvalid, top->s_axil_bready,
                   Payload{ top->s_axil_bresp }, "s_axil B");
        check_hold(l_r, top->s_axil_rvalid, top->s_axil_rready,
                   Payload{ top->s_axil_rdata, top->s_axil_rresp }, "s_axil R");
        if (l_bh && top->s_axil_bresp != 0)
            perr(cycle, "s_axil B: bresp %u, expected OKAY", top->s_axil_bresp);
        if (l_rh && top->s_axil_rresp != 0)
            perr(cycle, "s_axil R: rresp %u, expected OKAY", top->s_axil_rresp);

        tb::AxiOut ao;
        ao.arvalid = top->m_axi_arvalid;
        ao.araddr = top->m_axi_araddr;
        ao.arlen = top->m_axi_arlen;
        ao.arsize = top->m_axi_arsize;
        ao.arburst = top->m_axi_arburst;
        ao.awvalid = top->m_axi_awvalid;
        ao.awaddr = top->m_axi_awaddr;
        ao.awlen = top->m_axi_awlen;
        ao.awsize = top->m_axi_awsize;
        ao.awburst = top->m_axi_awburst;
        ao.wvalid = top->m_axi_wvalid;
        ao.wdata = get_beat(top->m_axi_wdata);
        ao.wstrb = static_cast<uint64_t>(top->m_axi_wstrb);
        ao.wlast = top->m_axi_wlast != 0;
        ao.rready = top->m_axi_rready;
        ao.bready = top->m_axi_bready;
        mem.sample(cycle, ao);

        // trace ports
        if (top->tr_disp_valid_o) {
            uint32_t w[4];
            for (unsigned j = 0; j < 4; j++)
                w[j] = get_field(top->tr_disp_insn_o, 32 * j, 32);
            uint32_t it[tb::kIterWords];
            for (unsigned j = 0; j < tb::kIterWords; j++)
                it[j] = get_field(top->tr_disp_iter_o, 32 * j, 32);
            retired[top->tr_disp_seq_o] =
                tb::retire_line(top->tr_disp_seq_o, top->tr_disp_pc_o, it, w);
            mem.dispatched(w);
            disp_cycles.emplace_back(top->tr_disp_pc_o, cycle);
        }
        if (top->tr_ub_we_o) {
            writes[top->tr_ub_seq_o].push_back(
                row_hex("ub", top->tr_ub_row_o, top->tr_ub_seq_o, 4, top->tr_ub_data_o));
            ub_writes++;
        }
        if (top->tr_acc_we_o) {
            writes[top->tr_acc_seq_o].push_back(
                row_hex("acc", top->tr_acc_row_o, top->tr_acc_seq_o, 8, top->tr_acc_data_o));
            acc_writes++;
        }
        if (top->tr_wm_we_o) {
            writes[top->tr_wm_seq_o].push_back(
                row_hex("wmem", top->tr_wm_row_o, top->tr_wm_seq_o, 4, top->tr_wm_data_o));
            wm_writes++;
        }

        edge(1);
        cycle++;

        // -- updates after the edge --
        if (l_aw)
            lm.awvalid = false;
        if (l_w)
            lm.wvalid = false;
        if (l_bh)
            lm.bready = false;
        if (l_ar)
            lm.arvalid = false;
        if (l_rh) {
            lm.rready = false;
            lm.rdata = l_rdata; // the read's result (lite_read)
        }
        mem.update(cycle);
    };

    // AXI4-Lite transactions, with random delays before each valid when stalling.
    // An address the port would truncate is a harness error (it would alias a register).
    auto lite_addr_ok = [&](uint32_t addr) {
        if (kLiteAddrBits < 32 && (addr >> kLiteAddrBits) != 0) {
            std::printf("core_tb: ERROR: AXI4-Lite address 0x%x does not fit the core's %u-bit "
                        "address\n", addr, kLiteAddrBits);
            std::exit(1);
        }
    };
    auto lite_write = [&](uint32_t addr, uint32_t data) {
        lite_addr_ok(addr);
        while (rng.pct(opt.stall))
            step();
        lm.awaddr = addr;
        lm.wdata = data;
        lm.awvalid = lm.wvalid = true;
        lm.bready = true;
        uint64_t guard = 0;
        while (lm.awvalid || lm.wvalid || lm.bready) {
            step();
            if (++guard > 100000) {
                std::printf("core_tb: ERROR: AXI4-Lite write to 0x%04x never completed\n", addr);
                std::exit(1);
            }
        }
    };
    auto lite_read = [&](uint32_t addr) -> uint32_t {
        lite_addr_ok(addr);
        while (rng.pct(opt.stall))
            step();
        lm.araddr = addr;
        lm.arvalid = true;
        lm.rready = true;
        uint64_t guard = 0;
        while (lm.arvalid || lm.rready) {
            step();
            if (++guard > 100000) {
                std::printf("core_tb: ERROR: AXI4-Lite read of 0x%04x never completed\n", addr);
                std::exit(1);
            }
        }
        return lm.rdata;
    };

    // ---- Reset: asserted for 4 cycles ----
    top->rst_ni = 0;
    top->clk_i = 0;
    // a board of one core (docs/board.md): id 0, shape 1 x 1, nothing on the network port
    top->core_id_i = 0;
    top->topo_cores_i = 1;
    top->topo_rows_i = 1;
    top->topo_cols_i = 1;
    top->noc_inj_ready_i = 0;
    top->noc_ej_valid_i = 0;
    top->noc_ej_last_i = 0;
    top->net_dead_i = 0;
    std::memset(&top->noc_ej_flit_i, 0, sizeof top->noc_ej_flit_i);
    for (int i = 0; i < 4; i++) {
        edge(0);
        edge(1);
    }
    top->rst_ni = 1;

    // ---- Identify, load the program, start ----
    int status = 0;
    const uint32_t id = lite_read(0x0000), n_reg = lite_read(0x0004);
    const uint32_t imem = lite_read(0x002C);
    if (id != 0x54505531u || n_reg != kN) {
        std::printf("core_tb: ERROR: ID 0x%08x N %u, expected 0x54505531 and %u\n", id, n_reg, kN);
        return 1;
    }
#if defined(TPU_CORE_UB_ROWS) && defined(TPU_CORE_ACC_ROWS) && defined(TPU_CORE_WMEM_ROWS) && \
    defined(TPU_CORE_IMEM_INSNS)
    {
        const uint32_t want[4] = { TPU_CORE_UB_ROWS, TPU_CORE_ACC_ROWS, TPU_CORE_WMEM_ROWS,
                                   TPU_CORE_IMEM_INSNS };
        const char *const what[4] = { "UB rows", "ACC rows", "WMEM rows", "IMEM instructions" };
        for (unsigned k = 0; k < 4; k++) {
            const uint32_t got = lite_read(0x0020 + 4 * k);
            if (got != want[k]) {
                std::printf("core_tb: ERROR: register 0x%04x (%s) reads %u, tpu_params.h says %u\n",
                            0x0020 + 4 * k, what[k], got, want[k]);
                return 1;
            }
        }
    }
#endif
    if (count > imem) {
        std::fprintf(stderr, "core_tb: error: the program has %zu instructions, IMEM holds %u\n",
                     count, imem);
        return 2;
    }
    for (size_t i = 0; i < count; i++)
        for (unsigned j = 0; j < 4; j++)
            lite_write(static_cast<uint32_t>(0x4000 + 16 * i + 4 * j), prog[i].w[j]);
    const bool imem_filled = tb::imem_fill_needed(prog, count, opt.pc_start);
    if (imem_filled) // the rest of IMEM is nop, as the model's
        for (size_t i = count; i < imem; i++)
            for (unsigned j = 0; j < 4; j++)
                lite_write(static_cast<uint32_t>(0x4000 + 16 * i + 4 * j), 0);
    lite_write(0x0010, opt.pc_start);
    lite_write(0x0008, 1);
    const uint64_t start_cycle = cycle;

    const auto t0 = std::chrono::steady_clock::now();
    uint32_t st = 0;
    bool timeout = false;
    for (;;) {
        st = lite_read(0x000C);
        if ((st & 1u) == 0 && (st & 6u) != 0)
            break;
        if (cycle - start_cycle > opt.max_cycles) {
            timeout = true;
            break;
        }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const uint64_t sim_cycles = cycle - start_cycle;
    const uint32_t err_code = lite_read(0x0018), err_pc = lite_read(0x001C);
    const uint32_t err_seq = top->tr_err_seq_o;
    uint64_t ctr[kCounters];
    for (unsigned k = 0; k < kCounters; k++) {
        const uint64_t lo = lite_read(0x0040 + 8 * k), hi = lite_read(0x0044 + 8 * k);
        ctr[k] = lo | hi << 32;
    }
    // let outstanding write responses drain (a protocol check, not part of the run)
    for (int i = 0; i < 64 && !mem.idle(); i++)
        step();
    mem.report_outstanding(cycle);
    if (fst)
        fst->close();

    // ---- the trace ----
    if (opt.fault) {
        auto it = writes.find(opt.f_seq);
        if (it == writes.end() || it->second.empty()) {
            std::fprintf(stderr,
                         "core_tb: error: --inject-fault: dynamic instruction %u wrote no row\n",
                         opt.f_seq);
            return 2;
        }
        std::string &line = it->second.front();
        // fields: w seq mem row e0 e1 ...
        size_t pos = 0;
        for (unsigned f = 0; f < 4 + opt.f_elem; f++)
            pos = line.find(' ', pos) + 1;
        const size_t end = line.find(' ', pos);
        const std::string hex = line.substr(pos, end == std::string::npos ? end : end - pos);
        if (opt.f_bit >= 4 * hex.size()) {
            std::fprintf(stderr, "core_tb: error: --inject-fault: bit %u of a %zu-bit element\n",
                         opt.f_bit, 4 * hex.size());
            return 2;
        }
        const uint32_t v = static_cast<uint32_t>(std::strtoul(hex.c_str(), nullptr, 16)) ^
                           (1u << opt.f_bit);
        char b[16];
        std::snprintf(b, sizeof b, "%0*x", static_cast<int>(hex.size()), v);
        line.replace(pos, hex.size(), b);
        std::printf("core_tb: injected fault: instruction %u's first row, element %u: %s -> %s\n",
                    opt.f_seq, opt.f_elem, hex.c_str(), b);
    }
    FILE *tf = std::fopen(opt.trace.c_str(), "w");
    if (tf == nullptr) {
        std::fprintf(stderr, "core_tb: error: cannot write %s: %s\n", opt.trace.c_str(),
                     std::strerror(errno));
        return 2;
    }
    std::fprintf(tf, "# tpu-core-trace 3\n# core_tb (verilator) N=%u stall=%u seed=%" PRIu64
                     " verilator-seed %d\n",
                 kN, opt.stall, opt.seed, ctx->randSeed());
    const bool error = (st & 4u) != 0;
    // the dynamic instructions in ascending order: each one's writes, then its retire line
    std::map<uint32_t, bool> seqs;
    for (auto const &kv : retired)
        seqs[kv.first] = true;
    for (auto const &kv : writes)
        seqs[kv.first] |= false;
    for (auto const &kv : seqs) {
        auto it = writes.find(kv.first);
        if (it != writes.end())
            for (auto const &l : it->second)
                std::fprintf(tf, "%s\n", l.c_str());
        if (kv.second)
            std::fprintf(tf, "%s\n", retired[kv.first].c_str());
    }
    if (error)
        std::fprintf(tf, "e %u %u %u\n", err_seq, err_pc, err_code);
    if (std::fclose(tf) != 0) {
        std::fprintf(stderr, "core_tb: error: cannot write %s\n", opt.trace.c_str());
        return 2;
    }
    if (!opt.disp.empty()) {
        // cycles relative to START: the first instruction dispatches in cycle 1 (an empty
        // run has none)
        FILE *df = std::fopen(opt.disp.c_str(), "w");
        bool ok = df != nullptr;
        const uint64_t base = disp_cycles.empty() ? 0 : disp_cycles.front().second - 1;
        for (auto const &pc_cyc : disp_cycles)
            if (ok)
                std::fprintf(df, "%u %" PRIu64 "\n", pc_cyc.first, pc_cyc.second - base);
        if (df != nullptr && std::fclose(df) != 0)
            ok = false;
        if (!ok) {
            std::fprintf(stderr, "core_tb: error: cannot write %s\n", opt.disp.c_str());
            return 2;
        }
    }
    if (host.dump_dir != nullptr && mkdir(host.dump_dir, 0777) != 0 && errno != EEXIST) {
        std::fprintf(stderr, "core_tb: error: cannot create %s: %s\n", host.dump_dir,
                     std::strerror(errno));
        return 2;
    }
    if (tpu_host_dump_all(&host, err, sizeof err) != 0) {
        std::fprintf(stderr, "core_tb: error: %s\n", err);
        return 2;
    }

    // ---- summary ----
    if (timeout) {
        std::printf("core_tb: ERROR: timeout: not halted after %" PRIu64
                    " cycles (--max-cycles %" PRIu64 "), STATUS 0x%x, PC %u\n",
                    sim_cycles, opt.max_cycles, st, lite_read(0x0014));
        status = 1;
    }
    std::printf("core_tb: counters:");
    for (unsigned k = 0; k < kCounters; k++)
        std::printf(" %s=%" PRIu64, kCounterNames[k], ctr[k]);
    std::printf("\ncore_tb: MXU utilisation %.1f%% (MXU_BUSY/CYCLES); %" PRIu64
                " rows written (ub %" PRIu64 ", acc %" PRIu64 ", wmem %" PRIu64 ")\n",
                ctr[0] ? 100.0 * static_cast<double>(ctr[1]) / static_cast<double>(ctr[0]) : 0.0,
                ub_writes + acc_writes + wm_writes, ub_writes, acc_writes, wm_writes);
    std::printf("core_tb: %" PRIu64 " cycles simulated in %.2f s (%.0f cycles/s)\n", sim_cycles,
                secs, secs > 0 ? static_cast<double>(sim_cycles) / secs : 0.0);
    if (perr.count != 0) {
        std::printf("core_tb: %" PRIu64 " AXI protocol violation(s)\n", perr.count);
        status = 1;
    }
    if (error) {
        char dis[256] = "?";
        if (err_pc < count)
            tpu_insn_disasm(prog[err_pc], dis, sizeof dis);
        char dyn[64] = ""; // a loop ran: name the dynamic instruction, as tpu-run does
        if (static_cast<uint64_t>(err_seq) + opt.pc_start != err_pc)
            std::snprintf(dyn, sizeof dyn, " (dynamic instruction %u)", err_seq);
        std::printf("core_tb: error %u (%s) at pc %u%s: %s\n", err_code,
                    tpu_err_name(static_cast<int>(err_code)), err_pc, dyn, dis);
        status = 1;
    } else if (!timeout) {
        std::printf("core_tb: done\n");
    }
    top->final();
    tpu_args_free(xargc, xargv);
    tpu_host_free(&host);
    std::free(prog);
    return status;
}
