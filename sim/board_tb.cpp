// SPDX-License-Identifier: Apache-2.0
// SystemC co-simulation of the board (docs/board.md "Board jobs, tools and co-simulation").
//
// Two builds of this file (sim/board.mk, sim/board_build.sh):
// - ASSEMBLED (default): C instances of ONE verilated tpu_core (`verilator --sc`, built once
//   per N and link width: the core id and the shape are input ports, so the same model serves
//   every board) and one verilated tpu_noc for the chosen (C, topology, W, D), joined with
//   sc_signals exactly as tpu_board joins them (core i's noc_inj_*/noc_ej_* on the NoC's local
//   port i, core_id_i = i, topo_* = the shape). The host drives each core's AXI4-Lite port
//   directly: tpu_board's window decoder (tpu_board_axil) is bypassed here, and the FLAT build
//   covers it. Between each core and the NoC a glue process can insert random gaps (--stall):
//   in a gap cycle the flit is hidden from the receiver and ready from the sender, so
//   valid/ready are kept and only the timing changes.
// - FLAT (-DBOARD_FLAT): one verilated tpu_board (small boards only); the host reaches core i
//   through the board's AXI4-Lite window at i * 0x100000. The network ports are inside the
//   model, so --stall acts on the AXI channels only.
//
// A host SC_THREAD (the AXI4-Lite master) loads each core's program into its IMEM, starts
// every core and polls them until all are done, one stops with an error or --max-cycles
// passes (then it names the cores still busy and their PC); each core has its own host memory
// behind its AXI4 master (sim/axi_host_mem.h, the one of core_tb). The trace
// ports give each core's trace in the format and grouping of core_tb (docs/isa.md "Trace").
//
// Usage: board_tb --job DIR --out DIR [--stall P] [--seed S] [--axi-latency C]
//                 [--max-cycles C] [--fst F] [+trace] [+verilator+seed+N]
// The job: DIR/core<i>.args for i = 0..C-1 (each an @FILE of the options of a core job).
// Output: OUT/core<i>.trace, OUT/core<i>.counters, the dumps of core i in OUT/core<i>/.
// Exit status: 0 every core done, 1 an error halt, a protocol violation or a timeout,
// 2 bad arguments or I/O.

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <systemc.h>
#include <verilated.h>
#include <verilated_fst_sc.h>

#ifdef BOARD_FLAT
#include "Vtpu_board.h"
#else
#include "Vtpu_core.h"
#include "Vtpu_noc.h"
#endif
#include "tpu_params.h"

#include "axi_host_mem.h"
#include "board_bits.h"
#include "tb_options.h"
#include "tb_trace.h"

#include "tpu/host.h"
#include "tpu/isa.h"

#if !defined(BOARD_C) || !defined(BOARD_ROWS) || !defined(BOARD_COLS) || !defined(BOARD_W) || \
    !defined(BOARD_D) || !defined(BOARD_TOPO)
#error "build with -DBOARD_C= -DBOARD_ROWS= -DBOARD_COLS= -DBOARD_W= -DBOARD_D= -DBOARD_TOPO="
#endif

using namespace board;
using tb::AxiIn;
using tb::AxiMem;
using tb::AxiOut;
using tb::BeatWords;
using tb::Errors;
using tb::Rng;

namespace {

constexpr unsigned kN = TPU_MXU_N;
constexpr unsigned kC = BOARD_C;
constexpr unsigned kW = BOARD_W;
#if !defined(TPU_CORE_AXI_DATA_BITS) || !defined(TPU_CORE_AXIL_ADDR_BITS)
#error "tpu_params.h must define TPU_CORE_AXI_DATA_BITS and TPU_CORE_AXIL_ADDR_BITS"
#endif
// each core's AXI4-Lite byte addresses (docs/isa.md "AXI4-Lite slave"); FLAT: core i's window
// starts at i << kLiteAddrBits (tpu_board_axil)
constexpr unsigned kLiteAddrBits = TPU_CORE_AXIL_ADDR_BITS;
static_assert(kLiteAddrBits >= 16 && kLiteAddrBits <= 26, "TPU_CORE_AXIL_ADDR_BITS: 16 .. 26");
static_assert(0x4000ull + 16ull * TPU_LIM_IMEM_INSNS_MAX <= (1ull << kLiteAddrBits),
              "the AXI4-Lite window must reach the last instruction of the largest IMEM");
// each core's AXI4 data master: B bits (gen --axi-data-bits), beats of B/8 bytes
constexpr unsigned kAxiBits = TPU_CORE_AXI_DATA_BITS;
static_assert(kAxiBits >= 64 && kAxiBits <= 512 && (kAxiBits & (kAxiBits - 1)) == 0,
              "TPU_CORE_AXI_DATA_BITS: 64, 128, 256 or 512");
constexpr unsigned kCounters = 7;
const char *const kCounterNames[kCounters] = { "CYCLES",   "MXU_BUSY", "WL_STALL", "DMA_BUSY",
                                               "VPU_BUSY", "INSNS",    "NET_BUSY" };
#ifdef BOARD_FLAT
const char *const kMode = "flat";
#else
const char *const kMode = "assembled";
#endif

// ---- the ports, per core ----------------------------------------------------------------
#define LITE_IN(X)                                                                           \
    X(s_axil_awaddr) X(s_axil_awvalid) X(s_axil_wdata) X(s_axil_wstrb) X(s_axil_wvalid)      \
    X(s_axil_bready) X(s_axil_araddr) X(s_axil_arvalid) X(s_axil_rready)
#define LITE_OUT(X)                                                                          \
    X(s_axil_awready) X(s_axil_wready) X(s_axil_bresp) X(s_axil_bvalid) X(s_axil_arready)    \
    X(s_axil_rdata) X(s_axil_rresp) X(s_axil_rvalid)
#define AXI_IN(X)                                                                            \
    X(m_axi_awready) X(m_axi_wready) X(m_axi_bresp) X(m_axi_bvalid) X(m_axi_arready)         \
    X(m_axi_rdata) X(m_axi_rresp) X(m_axi_rlast) X(m_axi_rvalid)
#define AXI_OUT(X)                                                                           \
    X(m_axi_awaddr) X(m_axi_awlen) X(m_axi_awsize) X(m_axi_awburst) X(m_axi_awvalid)         \
    X(m_axi_wdata) X(m_axi_wstrb) X(m_axi_wlast) X(m_axi_wvalid) X(m_axi_bready)             \
    X(m_axi_araddr) X(m_axi_arlen) X(m_axi_arsize) X(m_axi_arburst) X(m_axi_arvalid)         \
    X(m_axi_rready)
#define TR_OUT(X)                                                                            \
    X(tr_ub_we_o) X(tr_ub_row_o) X(tr_ub_data_o) X(tr_ub_seq_o) X(tr_acc_we_o)               \
    X(tr_acc_row_o) X(tr_acc_data_o) X(tr_acc_seq_o) X(tr_wm_we_o) X(tr_wm_row_o)            \
    X(tr_wm_data_o) X(tr_wm_seq_o) X(tr_disp_valid_o) X(tr_disp_seq_o) X(tr_disp_pc_o)       \
    X(tr_disp_iter_o) X(tr_disp_insn_o) X(tr_err_seq_o)
#define TOPO_IN(X) X(core_id_i) X(topo_cores_i) X(topo_rows_i) X(topo_cols_i)
#define NOC_OUT(X) X(noc_inj_valid_o) X(noc_inj_last_o) X(noc_inj_flit_o) X(noc_ej_ready_o)
#define NOC_IN(X) X(noc_inj_ready_i) X(noc_ej_valid_i) X(noc_ej_last_i) X(noc_ej_flit_i) X(net_dead_i)
#define LINK_PORTS(X) X(link_stall_i) X(link_fault_i) X(link_retry_o) X(link_fault_o) X(link_dead_o)

struct LiteIn {
    uint32_t awaddr = 0, wdata = 0, araddr = 0;
    bool awvalid = false, wvalid = false, bready = false, arvalid = false, rready = false;
};
struct LiteOut {
    bool awready = false, wready = false, bvalid = false, arready = false, rvalid = false;
    uint32_t bresp = 0, rdata = 0, rresp = 0;
};
// One core's trace ports in one cycle.
struct TrOut {
    bool ub_we, acc_we, wm_we, disp_valid;
    unsigned ub_row, acc_row, wm_row, disp_pc;
    uint32_t ub_seq, acc_seq, wm_seq, disp_seq, err_seq; // dynamic instruction numbers
    uint32_t disp_iter[tb::kIterWords];                  // i_l at [16l +: 16]
    uint32_t disp_insn[4];                               // the resolved instruction
    Bits ub, acc, wm; // the rows, lane i at bits [16i or 32i, +16 or +32)
};

#ifdef BOARD_FLAT
// ---- FLAT: one verilated tpu_board -------------------------------------------------------
// The per-core ports are packed arrays [C-1:0][w-1:0]: core i's slice is bits [i*w, i*w + w).
SC_MODULE(BoardIO)
{
    sc_in<bool> clk;
    sc_signal<bool> rst_n;
#define DECL(p) sc_signal<BOARD_PORT_T(Vtpu_board, p)> p;
    LITE_IN(DECL) LITE_OUT(DECL) AXI_IN(DECL) AXI_OUT(DECL) TR_OUT(DECL) DECL(link_err_o)
#undef DECL
    Vtpu_board *dut;
    Bits axi_in[9]; // the packed AXI inputs, written by flush()

    SC_CTOR(BoardIO)
    {
        dut = new Vtpu_board("board");
        dut->clk_i(clk);
        dut->rst_ni(rst_n);
#define BIND(p) dut->p(p);
        LITE_IN(BIND) LITE_OUT(BIND) AXI_IN(BIND) AXI_OUT(BIND) TR_OUT(BIND) BIND(link_err_o)
#undef BIND
        unsigned k = 0;
#define CLR(p) axi_in[k++].clear(Width<BOARD_PORT_T(Vtpu_board, p)>::value);
        AXI_IN(CLR)
#undef CLR
        (void)k;
    }
    // core i's slice of a packed port of w bits per core
    template <typename T> static uint64_t slice(const sc_signal<T> &s, unsigned i, unsigned w = 1)
    {
        Bits b;
        to_bits(s.read(), &b);
        return b.get(i * w, w);
    }
    void set_gaps(const std::vector<bool> &, const std::vector<bool> &) {}
    // the links are inside tpu_board: no stalls or faults here; a dead link is link_err_o
    static constexpr unsigned kLinks = 0;
    void set_links(const std::vector<bool> &, const std::vector<unsigned> &) {}
    void sample_links(std::vector<bool> *, std::vector<bool> *, std::vector<bool> *dead)
    {
        Bits b;
        to_bits(link_err_o.read(), &b);
        dead->assign(kC, false);
        for (unsigned i = 0; i < kC; i++)
            (*dead)[i] = b.get(i, 1) != 0;
    }
    void drive_lite(unsigned core, const LiteIn &in)
    {
        auto put = [](auto &sig, uint64_t v) {
            auto x = sig.read();
            from_u64(v, &x);
            sig.write(x);
        };
        put(s_axil_awaddr, static_cast<uint64_t>(core) << kLiteAddrBits | in.awaddr);
        put(s_axil_araddr, static_cast<uint64_t>(core) << kLiteAddrBits | in.araddr);
        put(s_axil_awvalid, in.awvalid);
        put(s_axil_wdata, in.wdata);
        put(s_axil_wstrb, 0xF);
        put(s_axil_wvalid, in.wvalid);
        put(s_axil_bready, in.bready);
        put(s_axil_arvalid, in.arvalid);
        put(s_axil_rready, in.rready);
    }
    void sample_lite(unsigned, LiteOut *o)
    {
        o->awready = as_u64(s_axil_awready.read());
        o->wready = as_u64(s_axil_wready.read());
        o->bvalid = as_u64(s_axil_bvalid.read());
        o->bresp = static_cast<uint32_t>(as_u64(s_axil_bresp.read()));
        o->arready = as_u64(s_axil_arready.read());
        o->rvalid = as_u64(s_axil_rvalid.read());
        o->rdata = static_cast<uint32_t>(as_u64(s_axil_rdata.read()));
        o->rresp = static_cast<uint32_t>(as_u64(s_axil_rresp.read()));
    }
    void drive_axi(unsigned i, const AxiIn &in)
    {
        // in the order of AXI_IN, with each port's width per core (rdata, k = 5, by words)
        const uint64_t v[9] = { in.awready, in.wready, in.bresp, in.bvalid, in.arready,
                                0,          in.rresp,  in.rlast, in.rvalid };
        const unsigned w[9] = { 1, 1, 2, 1, 1, kAxiBits, 2, 1, 1 };
        for (unsigned k = 0; k < 9; k++)
            if (k != 5)
                axi_in[k].set(i * w[k], w[k], v[k]);
        for (unsigned j = 0; j < kAxiBits / 32; j++)
            axi_in[5].set(i * kAxiBits + 32 * j, 32, in.rdata[j]);
    }
    void flush()
    {
        unsigned k = 0;
#define WR(p)                                                                                \
    {                                                                                        \
        BOARD_PORT_T(Vtpu_board, p) x;                                                       \
        from_bits(axi_in[k++], &x);                                                          \
        p.write(x);                                                                          \
    }
        AXI_IN(WR)
#undef WR
    }
    void sample_axi(unsigned i, AxiOut *o)
    {
        o->awaddr = slice(m_axi_awaddr, i, 32);
        o->awlen = static_cast<uint32_t>(slice(m_axi_awlen, i, 8));
        o->awsize = static_cast<uint32_t>(slice(m_axi_awsize, i, 3));
        o->awburst = static_cast<uint32_t>(slice(m_axi_awburst, i, 2));
        o->awvalid = slice(m_axi_awvalid, i);
        Bits wd;
        to_bits(m_axi_wdata.read(), &wd);
        for (unsigned j = 0; j < kAxiBits / 32; j++)
            o->wdata[j] = static_cast<uint32_t>(wd.get(i * kAxiBits + 32 * j, 32));
        o->wstrb = slice(m_axi_wstrb, i, kAxiBits / 8);
        o->wlast = slice(m_axi_wlast, i);
        o->wvalid = slice(m_axi_wvalid, i);
        o->bready = slice(m_axi_bready, i);
        o->araddr = slice(m_axi_araddr, i, 32);
        o->arlen = static_cast<uint32_t>(slice(m_axi_arlen, i, 8));
        o->arsize = static_cast<uint32_t>(slice(m_axi_arsize, i, 3));
        o->arburst = static_cast<uint32_t>(slice(m_axi_arburst, i, 2));
        o->arvalid = slice(m_axi_arvalid, i);
        o->rready = slice(m_axi_rready, i);
    }
    template <typename T> static void rows(const sc_signal<T> &s, unsigned i, unsigned bits,
                                           Bits *out)
    {
        Bits b;
        to_bits(s.read(), &b);
        out->clear(bits);
        for (unsigned k = 0; k < bits; k += 32)
            out->set(k, bits - k < 32 ? bits - k : 32, b.get(i * bits + k, bits - k < 32 ? bits - k : 32));
    }
    void sample_tr(unsigned i, TrOut *t)
    {
        t->ub_we = slice(tr_ub_we_o, i);
        t->acc_we = slice(tr_acc_we_o, i);
        t->wm_we = slice(tr_wm_we_o, i);
        t->disp_valid = slice(tr_disp_valid_o, i);
        t->ub_row = static_cast<unsigned>(slice(tr_ub_row_o, i, 16));
        t->ub_seq = static_cast<uint32_t>(slice(tr_ub_seq_o, i, 32));
        t->acc_row = static_cast<unsigned>(slice(tr_acc_row_o, i, 16));
        t->acc_seq = static_cast<uint32_t>(slice(tr_acc_seq_o, i, 32));
        t->wm_row = static_cast<unsigned>(slice(tr_wm_row_o, i, 16));
        t->wm_seq = static_cast<uint32_t>(slice(tr_wm_seq_o, i, 32));
        t->disp_pc = static_cast<unsigned>(slice(tr_disp_pc_o, i, 16));
        t->disp_seq = static_cast<uint32_t>(slice(tr_disp_seq_o, i, 32));
        t->err_seq = static_cast<uint32_t>(slice(tr_err_seq_o, i, 32));
        if (t->disp_valid) {
            for (unsigned k = 0; k < tb::kIterWords; k++)
                t->disp_iter[k] = static_cast<uint32_t>(slice(tr_disp_iter_o, i * tb::kIterWords + k, 32));
            for (unsigned k = 0; k < 4; k++)
                t->disp_insn[k] = static_cast<uint32_t>(slice(tr_disp_insn_o, i * 4 + k, 32));
        }
        if (t->ub_we)
            rows(tr_ub_data_o, i, 16 * kN, &t->ub);
        if (t->acc_we)
            rows(tr_acc_data_o, i, 32 * kN, &t->acc);
        if (t->wm_we)
            rows(tr_wm_data_o, i, 16 * kN, &t->wm);
    }
    void trace(VerilatedFstSc *f) { dut->trace(f, 99); }
    void final() { dut->final(); }
};
#else
// ---- ASSEMBLED: C verilated cores and one verilated NoC ----------------------------------
struct CoreSigs {
#define DECL(p) sc_signal<BOARD_PORT_T(Vtpu_core, p)> p;
    LITE_IN(DECL) LITE_OUT(DECL) AXI_IN(DECL) AXI_OUT(DECL) TR_OUT(DECL) TOPO_IN(DECL)
    NOC_OUT(DECL) NOC_IN(DECL)
#undef DECL
    sc_signal<bool> inj_gap, ej_gap; // --stall: hide the flit this cycle
};

template <typename T> void put(sc_signal<T> &sig, uint64_t v)
{
    T x = sig.read();
    from_u64(v, &x);
    sig.write(x);
}
// an AXI data port (kAxiBits: uint64_t or sc_bv) from a beat's words, and back
template <typename T> void put_beat(sc_signal<T> &sig, const BeatWords &d)
{
    Bits b;
    b.clear(kAxiBits);
    for (unsigned j = 0; j < kAxiBits / 32; j++)
        b.set(32 * j, 32, d[j]);
    T x;
    from_bits(b, &x);
    sig.write(x);
}
template <typename T> void get_beat(const sc_signal<T> &sig, BeatWords *d)
{
    Bits b;
    to_bits(sig.read(), &b);
    for (unsigned j = 0; j < kAxiBits / 32; j++)
        (*d)[j] = static_cast<uint32_t>(b.get(32 * j, 32));
}

SC_MODULE(BoardIO)
{
    sc_in<bool> clk;
    sc_signal<bool> rst_n;
    CoreSigs sig[kC];
    Vtpu_core *core[kC];
    Vtpu_noc *noc;
#define DECL(p) sc_signal<BOARD_PORT_T(Vtpu_noc, p)> p;
    DECL(inj_valid_i) DECL(inj_last_i) DECL(inj_flit_i) DECL(inj_ready_o) DECL(ej_valid_o)
    DECL(ej_last_o) DECL(ej_flit_o) DECL(ej_ready_i) LINK_PORTS(DECL)
#undef DECL
    // links: l = i*(NPorts-1) + p-1, core i's output port p (docs/board.md "Link faults")
    // (the port's C++ type may be wider: count them from the shape, as gen does)
    static constexpr unsigned kLinks = kC * (BOARD_TOPO[0] == 'r' ? 2u : 4u);

    SC_CTOR(BoardIO)
    {
        for (unsigned i = 0; i < kC; i++) {
            const std::string name = "core" + std::to_string(i);
            core[i] = new Vtpu_core(name.c_str());
            Vtpu_core &c = *core[i];
            CoreSigs &s = sig[i];
            c.clk_i(clk);
            c.rst_ni(rst_n);
#define BIND(p) c.p(s.p);
            LITE_IN(BIND) LITE_OUT(BIND) AXI_IN(BIND) AXI_OUT(BIND) TR_OUT(BIND) TOPO_IN(BIND)
            NOC_OUT(BIND) NOC_IN(BIND)
#undef BIND
            // tied to constants, as tpu_board ties them
            put(s.core_id_i, i);
            put(s.topo_cores_i, kC);
            put(s.topo_rows_i, BOARD_ROWS);
            put(s.topo_cols_i, BOARD_COLS);
            put(s.s_axil_wstrb, 0xF);
        }
        noc = new Vtpu_noc("noc");
        noc->clk_i(clk);
        noc->rst_ni(rst_n);
#define BIND(p) noc->p(p);
        BIND(inj_valid_i) BIND(inj_last_i) BIND(inj_flit_i) BIND(inj_ready_o) BIND(ej_valid_o)
        BIND(ej_last_o) BIND(ej_flit_o) BIND(ej_ready_i) LINK_PORTS(BIND)
#undef BIND
        SC_METHOD(glue);
        for (unsigned i = 0; i < kC; i++) {
            CoreSigs &s = sig[i];
            sensitive << s.noc_inj_valid_o << s.noc_inj_last_o << s.noc_inj_flit_o
                      << s.noc_ej_ready_o << s.inj_gap << s.ej_gap;
        }
        sensitive << inj_ready_o << ej_valid_o << ej_last_o << ej_flit_o << link_dead_o;
    }

    // core i's network port on the NoC's local port i, through the --stall gaps
    void glue()
    {
        Bits iv, il, ifl, er, nir, nev, nel, nef, f;
        iv.clear(Width<BOARD_PORT_T(Vtpu_noc, inj_valid_i)>::value);
        il.clear(Width<BOARD_PORT_T(Vtpu_noc, inj_last_i)>::value);
        ifl.clear(Width<BOARD_PORT_T(Vtpu_noc, inj_flit_i)>::value);
        er.clear(Width<BOARD_PORT_T(Vtpu_noc, ej_ready_i)>::value);
        to_bits(inj_ready_o.read(), &nir);
        to_bits(ej_valid_o.read(), &nev);
        to_bits(ej_last_o.read(), &nel);
        to_bits(ej_flit_o.read(), &nef);
        // every core's net_dead_i = some link is dead, as tpu_board wires it
        Bits ld;
        to_bits(link_dead_o.read(), &ld);
        bool dead = false;
        for (unsigned l = 0; l < kLinks; l++)
            dead = dead || ld.get(l, 1) != 0;
        for (unsigned i = 0; i < kC; i++) {
            CoreSigs &s = sig[i];
            const bool ig = s.inj_gap.read(), eg = s.ej_gap.read();
            iv.set(i, 1, as_u64(s.noc_inj_valid_o.read()) && !ig);
            il.set(i, 1, as_u64(s.noc_inj_last_o.read()));
            to_bits(s.noc_inj_flit_o.read(), &f);
            for (unsigned k = 0; k < kW; k += 32) {
                const unsigned n = kW - k < 32 ? kW - k : 32;
                ifl.set(i * kW + k, n, f.get(k, n));
            }
            er.set(i, 1, as_u64(s.noc_ej_ready_o.read()) && !eg);
            put(s.noc_inj_ready_i, nir.get(i, 1) && !ig);
            put(s.noc_ej_valid_i, nev.get(i, 1) && !eg);
            put(s.noc_ej_last_i, nel.get(i, 1));
            put(s.net_dead_i, dead);
            f.clear(kW);
            for (unsigned k = 0; k < kW; k += 32) {
                const unsigned n = kW - k < 32 ? kW - k : 32;
                f.set(k, n, nef.get(i * kW + k, n));
            }
            BOARD_PORT_T(Vtpu_core, noc_ej_flit_i) x;
            from_bits(f, &x);
            s.noc_ej_flit_i.write(x);
        }
#define WR(p, b)                                                                             \
    {                                                                                        \
        BOARD_PORT_T(Vtpu_noc, p) x;                                                         \
        from_bits(b, &x);                                                                    \
        p.write(x);                                                                          \
    }
        WR(inj_valid_i, iv) WR(inj_last_i, il) WR(inj_flit_i, ifl) WR(ej_ready_i, er)
#undef WR
    }

    // --link-stall / --link-fault: stall_i per link, fault_i (0 none, 1 flip, 2 drop, 3 flip 2)
    void set_links(const std::vector<bool> &stall, const std::vector<unsigned> &fault)
    {
        Bits st, fa;
        st.clear(kLinks);
        fa.clear(2 * kLinks);
        for (unsigned l = 0; l < kLinks; l++) {
            st.set(l, 1, stall[l]);
            fa.set(2 * l, 2, fault[l]);
        }
        BOARD_PORT_T(Vtpu_noc, link_stall_i) xs;
        from_bits(st, &xs);
        link_stall_i.write(xs);
        BOARD_PORT_T(Vtpu_noc, link_fault_i) xf;
        from_bits(fa, &xf);
        link_fault_i.write(xf);
    }
    void sample_links(std::vector<bool> *retry, std::vector<bool> *fault, std::vector<bool> *dead)
    {
        Bits r, f, d;
        to_bits(link_retry_o.read(), &r);
        to_bits(link_fault_o.read(), &f);
        to_bits(link_dead_o.read(), &d);
        retry->assign(kLinks, false);
        fault->assign(kLinks, false);
        dead->assign(kLinks, false);
        for (unsigned l = 0; l < kLinks; l++) {
            (*retry)[l] = r.get(l, 1) != 0;
            (*fault)[l] = f.get(l, 1) != 0;
            (*dead)[l] = d.get(l, 1) != 0;
        }
    }
    void set_gaps(const std::vector<bool> &inj, const std::vector<bool> &ej)
    {
        for (unsigned i = 0; i < kC; i++) {
            sig[i].inj_gap.write(inj[i]);
            sig[i].ej_gap.write(ej[i]);
        }
    }
    // The host talks to one core at a time; the others' AXI4-Lite inputs stay idle.
    void drive_lite(unsigned target, const LiteIn &in)
    {
        for (unsigned i = 0; i < kC; i++) {
            CoreSigs &s = sig[i];
            const bool t = i == target;
            put(s.s_axil_awaddr, t ? in.awaddr : 0);
            put(s.s_axil_awvalid, t && in.awvalid);
            put(s.s_axil_wdata, t ? in.wdata : 0);
            put(s.s_axil_wvalid, t && in.wvalid);
            put(s.s_axil_bready, t && in.bready);
            put(s.s_axil_araddr, t ? in.araddr : 0);
            put(s.s_axil_arvalid, t && in.arvalid);
            put(s.s_axil_rready, t && in.rready);
        }
    }
    void sample_lite(unsigned target, LiteOut *o)
    {
        CoreSigs &s = sig[target];
        o->awready = as_u64(s.s_axil_awready.read());
        o->wready = as_u64(s.s_axil_wready.read());
        o->bvalid = as_u64(s.s_axil_bvalid.read());
        o->bresp = static_cast<uint32_t>(as_u64(s.s_axil_bresp.read()));
        o->arready = as_u64(s.s_axil_arready.read());
        o->rvalid = as_u64(s.s_axil_rvalid.read());
        o->rdata = static_cast<uint32_t>(as_u64(s.s_axil_rdata.read()));
        o->rresp = static_cast<uint32_t>(as_u64(s.s_axil_rresp.read()));
    }
    void drive_axi(unsigned i, const AxiIn &in)
    {
        CoreSigs &s = sig[i];
        put(s.m_axi_awready, in.awready);
        put(s.m_axi_wready, in.wready);
        put(s.m_axi_bresp, in.bresp);
        put(s.m_axi_bvalid, in.bvalid);
        put(s.m_axi_arready, in.arready);
        put_beat(s.m_axi_rdata, in.rdata);
        put(s.m_axi_rresp, in.rresp);
        put(s.m_axi_rlast, in.rlast);
        put(s.m_axi_rvalid, in.rvalid);
    }
    void flush() {}
    void sample_axi(unsigned i, AxiOut *o)
    {
        CoreSigs &s = sig[i];
        o->awaddr = as_u64(s.m_axi_awaddr.read());
        o->awlen = static_cast<uint32_t>(as_u64(s.m_axi_awlen.read()));
        o->awsize = static_cast<uint32_t>(as_u64(s.m_axi_awsize.read()));
        o->awburst = static_cast<uint32_t>(as_u64(s.m_axi_awburst.read()));
        o->awvalid = as_u64(s.m_axi_awvalid.read());
        get_beat(s.m_axi_wdata, &o->wdata);
        o->wstrb = as_u64(s.m_axi_wstrb.read());
        o->wlast = as_u64(s.m_axi_wlast.read());
        o->wvalid = as_u64(s.m_axi_wvalid.read());
        o->bready = as_u64(s.m_axi_bready.read());
        o->araddr = as_u64(s.m_axi_araddr.read());
        o->arlen = static_cast<uint32_t>(as_u64(s.m_axi_arlen.read()));
        o->arsize = static_cast<uint32_t>(as_u64(s.m_axi_arsize.read()));
        o->arburst = static_cast<uint32_t>(as_u64(s.m_axi_arburst.read()));
        o->arvalid = as_u64(s.m_axi_arvalid.read());
        o->rready = as_u64(s.m_axi_rready.read());
    }
    void sample_tr(unsigned i, TrOut *t)
    {
        CoreSigs &s = sig[i];
        t->ub_we = as_u64(s.tr_ub_we_o.read());
        t->acc_we = as_u64(s.tr_acc_we_o.read());
        t->wm_we = as_u64(s.tr_wm_we_o.read());
        t->disp_valid = as_u64(s.tr_disp_valid_o.read());
        t->ub_row = static_cast<unsigned>(as_u64(s.tr_ub_row_o.read()));
        t->ub_seq = static_cast<uint32_t>(as_u64(s.tr_ub_seq_o.read()));
        t->acc_row = static_cast<unsigned>(as_u64(s.tr_acc_row_o.read()));
        t->acc_seq = static_cast<uint32_t>(as_u64(s.tr_acc_seq_o.read()));
        t->wm_row = static_cast<unsigned>(as_u64(s.tr_wm_row_o.read()));
        t->wm_seq = static_cast<uint32_t>(as_u64(s.tr_wm_seq_o.read()));
        t->disp_pc = static_cast<unsigned>(as_u64(s.tr_disp_pc_o.read()));
        t->disp_seq = static_cast<uint32_t>(as_u64(s.tr_disp_seq_o.read()));
        t->err_seq = static_cast<uint32_t>(as_u64(s.tr_err_seq_o.read()));
        if (t->disp_valid) {
            Bits bi;
            to_bits(s.tr_disp_iter_o.read(), &bi);
            for (unsigned k = 0; k < tb::kIterWords; k++)
                t->disp_iter[k] = static_cast<uint32_t>(bi.get(32 * k, 32));
            Bits b;
            to_bits(s.tr_disp_insn_o.read(), &b);
            for (unsigned k = 0; k < 4; k++)
                t->disp_insn[k] = static_cast<uint32_t>(b.get(32 * k, 32));
        }
        if (t->ub_we)
            to_bits(s.tr_ub_data_o.read(), &t->ub);
        if (t->acc_we)
            to_bits(s.tr_acc_data_o.read(), &t->acc);
        if (t->wm_we)
            to_bits(s.tr_wm_data_o.read(), &t->wm);
    }
    void trace(VerilatedFstSc *f)
    {
        for (unsigned i = 0; i < kC; i++)
            core[i]->trace(f, 3);
        noc->trace(f, 99);
    }
    void final()
    {
        for (unsigned i = 0; i < kC; i++)
            core[i]->final();
        noc->final();
    }
};
#endif

// ---- options ------------------------------------------------------------------------------
// --link-fault KIND@CYCLE[+LEN][:LINK]: from harness cycle CYCLE, link LINK (all when
// omitted) gets the fault on the flits it puts on the wire until it reports it (fault_o or
// retry_o): flip (bit 0), flip2 (bits 0 and 1), drop; stall holds it for LEN cycles; stuck
// flips bit 0 of every flit for ever (a permanent fault: the link must declare itself dead).
struct LinkFault {
    unsigned kind; // 1 flip, 2 drop, 3 flip2, 4 stall, 5 stuck (flip on every flit, for ever)
    uint64_t cycle, len;
    int link; // -1: every link
};

struct Options {
    std::string job, out, fst = "board_tb.fst";
    unsigned axi_latency = 4, stall = 0, link_stall = 0;
    uint64_t seed = 1, max_cycles = 5000000;
    std::vector<LinkFault> faults;
};

// KIND@CYCLE[+LEN][:LINK][,...]; false on a syntax error
bool parse_link_faults(const std::string &v, std::vector<LinkFault> *out)
{
    size_t pos = 0;
    while (pos <= v.size()) {
        size_t end = v.find(',', pos);
        if (end == std::string::npos)
            end = v.size();
        const std::string spec = v.substr(pos, end - pos);
        const size_t at = spec.find('@');
        if (at == std::string::npos)
            return false;
        const std::string kind = spec.substr(0, at);
        LinkFault f{0, 0, 0, -1};
        if (kind == "flip") f.kind = 1;
        else if (kind == "drop") f.kind = 2;
        else if (kind == "flip2") f.kind = 3;
        else if (kind == "stall") f.kind = 4;
        else if (kind == "stuck") f.kind = 5;
        else return false;
        std::string rest = spec.substr(at + 1), link;
        const size_t colon = rest.find(':');
        if (colon != std::string::npos) {
            link = rest.substr(colon + 1);
            rest = rest.substr(0, colon);
        }
        std::string len;
        const size_t plus = rest.find('+');
        if (plus != std::string::npos) {
            len = rest.substr(plus + 1);
            rest = rest.substr(0, plus);
        }
        uint64_t x = 0;
        if (!tb::parse_u64(rest.c_str(), &f.cycle))
            return false;
        if (f.kind == 4) {
            if (len.empty() || !tb::parse_u64(len.c_str(), &f.len) || f.len == 0)
                return false;
        } else if (!len.empty()) {
            return false;
        }
        if (!link.empty()) {
            if (!tb::parse_u64(link.c_str(), &x) || x >= BoardIO::kLinks)
                return false;
            f.link = static_cast<int>(x);
        }
        out->push_back(f);
        pos = end + 1;
    }
    return !out->empty();
}

int usage_error(const char *what, const char *arg)
{
    return tb::usage_error("board_tb", what, arg);
}
using tb::parse_u64;

void help()
{
    std::printf(
        "usage: board_tb --job DIR --out DIR [options] [+verilator+seed+N] [+trace]\n"
        "Runs a board job on the verilated board (%s build: N=%u, C=%u, %s %ux%u, %u-bit\n"
        "links, latency %u, %u-bit AXI data) as the host of every core (SystemC).\n"
        "  --job DIR          the job: DIR/core<i>.args for i = 0..%u, each an @FILE of core job\n"
        "                     options (--prog, --load, --dump, --hostmem-mib, --pc-start;\n"
        "                     docs/board.md)\n"
        "  --out DIR          writes core<i>.trace, core<i>.counters and core<i>/ (the dumps)\n"
        "  --stall P          random back-pressure, P percent (0 .. 90, default 0), on every\n"
        "                     AXI channel%s\n"
        "  --seed S           seed of the random stalls (default 1)\n"
        "  --axi-latency C    host memory latency in cycles (default 4, as the model)\n"
        "  --max-cycles C     give up after C cycles from the first START (default 5000000)\n"
        "  --fst F            waveform file written with +trace (default board_tb.fst)\n"
        "  --link-stall P     each link stalled (nothing sent or popped) in P percent of the\n"
        "                     cycles (0 .. 90; assembled build; seeded by --seed)\n"
        "  --link-fault KIND@CYCLE[+LEN][:LINK][,...]  inject from harness cycle CYCLE on link\n"
        "                     LINK (default every link; %u links: l = i*(ports-1) + p-1): flip,\n"
        "                     flip2 (bits 0, 1), drop (the flits put on the wire until the link\n"
        "                     reports the fault), stall+LEN (held LEN cycles), stuck (bit 0\n"
        "                     of every flit, for ever); docs/board.md \"Link faults\"\n"
        "  +verilator+seed+N  seed of the X-initialisation (printed on every run)\n"
        "  +trace             write an FST waveform\n"
        "Exit status: 0 every core done, 1 error halt / protocol violation / timeout,\n"
        "2 bad arguments or I/O.\n",
        kMode, kN, kC, BOARD_TOPO, BOARD_ROWS, BOARD_COLS, kW, BOARD_D, kAxiBits, kC - 1,
#ifdef BOARD_FLAT
        " (this flat build has no access to the network ports)"
#else
        " and as gaps on each core's network inject and eject ports"
#endif
        , BoardIO::kLinks);
}

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
        std::string name = a, value;
        const size_t eq = name.find('=');
        if (name.compare(0, 2, "--") == 0 && eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        } else {
            if (i + 1 >= argc)
                return usage_error("unknown option or missing value", a);
            value = argv[++i];
        }
        if (tb::given_twice(name))
            return usage_error("option given twice, expected once", name.c_str());
        const int hm = tb::parse_host_mem_option("board_tb", name, value.c_str(),
                                                 &o->axi_latency, &o->stall, &o->seed,
                                                 &o->max_cycles);
        if (hm > 0)
            return hm;
        if (hm == 0)
            continue;
        if (name == "--link-stall" || name == "--link-fault") {
            if (BoardIO::kLinks == 0)
                return usage_error("the flat build has no access to the links (use the "
                                   "assembled build)", name.c_str());
            uint64_t x = 0;
            if (name == "--link-stall") {
                if (!parse_u64(value.c_str(), &x) || x > 90)
                    return usage_error("--link-stall takes a percentage in 0 .. 90", value.c_str());
                o->link_stall = static_cast<unsigned>(x);
            } else if (!parse_link_faults(value, &o->faults)) {
                return usage_error("--link-fault takes KIND@CYCLE[+LEN][:LINK][,...] (KIND flip, "
                                   "flip2, drop, stuck; stall with +LEN; LINK below the link "
                                   "count)",
                                   value.c_str());
            }
        } else if (name == "--job") {
            o->job = value;
        } else if (name == "--out") {
            o->out = value;
        } else if (name == "--fst") {
            o->fst = value;
        } else {
            return usage_error("unknown option", name.c_str());
        }
    }
    if (o->job.empty())
        return usage_error("--job DIR is required", nullptr);
    if (o->out.empty())
        return usage_error("--out DIR is required", nullptr);
    return -1;
}

// One core's job: its host memory image, its program, its trace.
struct CoreJob {
    tpu_host_t host;
    tpu_insn_t *prog = nullptr;
    size_t count = 0;
    std::unique_ptr<AxiMem> mem;
    // per dynamic instruction (seq): its writes in the order made and its retire line
    std::map<uint32_t, std::vector<std::string>> writes;
    std::map<uint32_t, std::string> retired;
    uint32_t err_seq = 0; // tr_err_seq_o: the seq of the e line
    uint64_t rows_written = 0;
    uint64_t ctr[kCounters] = {};
    uint32_t status = 0, err_code = 0, err_pc = 0, pc = 0;
    unsigned pc_start = 0; // --pc-start in the core's .args
    bool finished = false;
    CoreJob() { tpu_host_init(&host); }
    ~CoreJob()
    {
        tpu_host_free(&host);
        std::free(prog);
    }
};

// Reads DIR/core<i>.args into job (paths relative to DIR, as tpu-run's @FILE).
int load_job(const std::string &dir, unsigned i, const std::string &out, CoreJob *job)
{
    char err[1024];
    const std::string args = dir + "/core" + std::to_string(i) + ".args";
    if (access(args.c_str(), R_OK) != 0) {
        std::fprintf(stderr, "board_tb: error: --job %s: cannot read %s (a board job of C = %u "
                             "cores has core0.args .. core%u.args)\n",
                     dir.c_str(), args.c_str(), kC, kC - 1);
        return 2;
    }
    std::string at = "@" + args;
    char *argv0[2] = { const_cast<char *>("board_tb"), &at[0] };
    int xargc = 0;
    char **xargv = nullptr;
    if (tpu_args_expand(2, argv0, &xargc, &xargv, err, sizeof err) != 0) {
        std::fprintf(stderr, "board_tb: error: %s\n", err);
        return 2;
    }
    int rc = -1;
    for (int k = 1; k < xargc && rc < 0; k++) {
        std::string name = xargv[k], value;
        const size_t eq = name.find('=');
        if (eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        } else if (k + 1 < xargc) {
            value = xargv[++k];
        }
        uint64_t pcs = 0;
        if (name == "--pc-start") {
            if (!parse_u64(value.c_str(), &pcs) || pcs > TPU_LIM_IMEM_INSNS_MAX - 1u) {
                std::fprintf(stderr, "board_tb: error: %s: --pc-start '%s': expected an "
                                     "instruction index in 0 .. 32767\n",
                             args.c_str(), value.c_str());
                rc = 2;
            }
            job->pc_start = static_cast<unsigned>(pcs);
        } else if (!tpu_host_is_option(name.c_str()) || name == "--dump-dir" ||
                   name == "dump-dir") {
            std::fprintf(stderr, "board_tb: error: %s: option '%s' is not a core job option "
                                 "(allowed: --prog, --load, --dump, --hostmem-mib, --pc-start)\n",
                         args.c_str(), name.c_str());
            rc = 2;
        } else if (tpu_host_add_option(&job->host, name.c_str(), value.c_str(), err,
                                       sizeof err) != 0) {
            std::fprintf(stderr, "board_tb: error: %s: %s\n", args.c_str(), err);
            rc = 2;
        }
    }
    tpu_args_free(xargc, xargv);
    if (rc >= 0)
        return rc;
    const std::string dd = out + "/core" + std::to_string(i);
    if (tpu_host_add_option(&job->host, "--dump-dir", dd.c_str(), err, sizeof err) != 0) {
        std::fprintf(stderr, "board_tb: error: %s\n", err);
        return 2;
    }
    if (job->host.prog_path == nullptr) {
        std::fprintf(stderr, "board_tb: error: %s: no --prog\n", args.c_str());
        return 2;
    }
    if (tpu_load_program(job->host.prog_path, kN, &job->prog, &job->count, err, sizeof err) !=
        0) {
        std::fprintf(stderr, "board_tb: error: core %u: %s\n", i, err);
        return 2;
    }
    if (tpu_host_load_all(&job->host, err, sizeof err) != 0) {
        std::fprintf(stderr, "board_tb: error: core %u: %s\n", i, err);
        return 2;
    }
    return -1;
}

std::string row_hex(const char *m, unsigned row, uint32_t seq, unsigned digits, const Bits &b)
{
    std::string s = "w " + std::to_string(seq) + " " + m + " " + std::to_string(row);
    char t[16];
    for (unsigned i = 0; i < kN; i++) {
        std::snprintf(t, sizeof t, " %0*x", static_cast<int>(digits),
                      static_cast<unsigned>(b.get(digits * 4 * i, digits * 4)));
        s += t;
    }
    return s;
}

// ---- the host -----------------------------------------------------------------------------
SC_MODULE(Host)
{
    sc_in<bool> clk;
    BoardIO *io = nullptr;
    Options opt;
    std::vector<std::unique_ptr<CoreJob>> jobs;
    Rng *rng = nullptr;
    Rng *lrng = nullptr; // --link-stall (its own stream: --stall's runs do not change)
    Errors perr{"board_tb"};
    // links: stall and fault inputs this cycle, the faults armed, what the links reported
    std::vector<bool> lstall, lretry, lfault, ldead;
    std::vector<unsigned> lkind, armed;
    std::vector<uint64_t> stall_until, n_retry, n_fault;
    std::vector<int64_t> dead_at;
    uint64_t armed_total = 0, hit_total = 0, stall_total = 0;
    uint64_t cycle = 0;
    int result = 2; // exit status
    bool timeout = false, sampled = false;
    uint64_t start_cycle = 0, end_cycle = 0;
    double secs = 0;

    LiteIn lm;
    unsigned lite_core = 0;
    LiteOut lo;
    bool l_aw = false, l_w = false, l_b = false, l_ar = false, l_r = false;
    uint32_t l_rdata = 0;
    struct Chan {
        bool valid = false, ready = false;
        uint64_t p0 = 0, p1 = 0;
    } s_lb, s_lr;
    std::vector<bool> inj_gap, ej_gap;

    SC_CTOR(Host) { SC_THREAD(run); }

    void hold(Chan &prev, bool valid, bool ready, uint64_t p0, uint64_t p1, const char *name)
    {
        if (prev.valid && !prev.ready) {
            if (!valid)
                perr(-1, cycle, "%s: valid dropped before ready", name);
            else if (p0 != prev.p0 || p1 != prev.p1)
                perr(-1, cycle, "%s: payload changed while valid and not ready", name);
        }
        prev = { valid, ready, p0, p1 };
    }

    // One clock cycle: after the previous rising edge, retire what it took; drive the inputs;
    // let them settle; sample every handshake and the trace ports (what the next rising edge
    // takes).
    void step()
    {
        wait(clk.negedge_event());
        if (sampled) {
            cycle++;
            if (l_aw)
                lm.awvalid = false;
            if (l_w)
                lm.wvalid = false;
            if (l_b)
                lm.bready = false;
            if (l_ar)
                lm.arvalid = false;
            if (l_r)
                lm.rready = false;
            for (auto &j : jobs)
                j->mem->update(cycle);
        }
        // drive
        LiteIn li = lm;
        li.bready = lm.bready && !rng->pct(opt.stall);
        li.rready = lm.rready && !rng->pct(opt.stall);
        io->drive_lite(lite_core, li);
        for (unsigned i = 0; i < kC; i++) {
            AxiIn in;
            jobs[i]->mem->drive(cycle, &in);
            io->drive_axi(i, in);
            inj_gap[i] = rng->pct(opt.stall);
            ej_gap[i] = rng->pct(opt.stall);
        }
        io->set_gaps(inj_gap, ej_gap);
        for (const LinkFault &f : opt.faults)
            if (f.cycle == cycle)
                for (unsigned l = 0; l < BoardIO::kLinks; l++)
                    if (f.link < 0 || static_cast<unsigned>(f.link) == l) {
                        if (f.kind == 4) {
                            stall_until[l] = cycle + f.len;
                            stall_total++;
                        } else {
                            armed[l] = f.kind;
                            armed_total++;
                        }
                    }
        for (unsigned l = 0; l < BoardIO::kLinks; l++) {
            lstall[l] = cycle < stall_until[l] || lrng->pct(opt.link_stall);
            lkind[l] = armed[l] == 5 ? 1 : armed[l];
        }
        io->set_links(lstall, lkind);
        io->flush();
        wait(4, SC_NS); // the inputs settle; the rising edge is 1 ns away
        // sample
        io->sample_lite(lite_core, &lo);
        l_aw = li.awvalid && lo.awready;
        l_w = li.wvalid && lo.wready;
        l_b = lo.bvalid && li.bready;
        l_ar = li.arvalid && lo.arready;
        l_r = lo.rvalid && li.rready;
        if (l_r)
            l_rdata = lo.rdata;
        hold(s_lb, lo.bvalid, li.bready, lo.bresp, 0, "s_axil B");
        hold(s_lr, lo.rvalid, li.rready, lo.rdata, lo.rresp, "s_axil R");
        if (l_b && lo.bresp != 0)
            perr(static_cast<int>(lite_core), cycle, "s_axil B: bresp %u, expected OKAY",
                 lo.bresp);
        if (l_r && lo.rresp != 0)
            perr(static_cast<int>(lite_core), cycle, "s_axil R: rresp %u, expected OKAY",
                 lo.rresp);
        for (unsigned i = 0; i < kC; i++) {
            CoreJob &j = *jobs[i];
            AxiOut ao;
            io->sample_axi(i, &ao);
            j.mem->sample(cycle, ao);
            TrOut t;
            io->sample_tr(i, &t);
            j.err_seq = t.err_seq;
            if (t.disp_valid) {
                j.retired[t.disp_seq] =
                    tb::retire_line(t.disp_seq, t.disp_pc, t.disp_iter, t.disp_insn);
                j.mem->dispatched(t.disp_insn);
            }
            if (t.ub_we) {
                j.writes[t.ub_seq].push_back(row_hex("ub", t.ub_row, t.ub_seq, 4, t.ub));
                j.rows_written++;
            }
            if (t.acc_we) {
                j.writes[t.acc_seq].push_back(row_hex("acc", t.acc_row, t.acc_seq, 8, t.acc));
                j.rows_written++;
            }
            if (t.wm_we) {
                j.writes[t.wm_seq].push_back(row_hex("wmem", t.wm_row, t.wm_seq, 4, t.wm));
                j.rows_written++;
            }
        }
        io->sample_links(&lretry, &lfault, &ldead);
        for (unsigned l = 0; l < BoardIO::kLinks; l++) {
            n_retry[l] += lretry[l];
            n_fault[l] += lfault[l];
            if ((lretry[l] || lfault[l]) && armed[l] && armed[l] != 5) {
                armed[l] = 0; // the link reported it: the fault was hit and detected
                hit_total++;
            }
            if (ldead[l] && dead_at[l] < 0)
                dead_at[l] = static_cast<int64_t>(cycle);
        }
        if (BoardIO::kLinks == 0)
            for (unsigned i = 0; i < ldead.size(); i++)
                if (ldead[i] && dead_at.size() == ldead.size() && dead_at[i] < 0)
                    dead_at[i] = static_cast<int64_t>(cycle);
        sampled = true;
    }

    // AXI4-Lite transactions on core c's registers, with random delays when stalling.
    // An address the core's port would truncate is a harness error (it would alias a register).
    void lite_addr_ok(unsigned c, uint32_t addr)
    {
        if ((addr >> kLiteAddrBits) != 0) {
            std::printf("board_tb: ERROR: core %u: AXI4-Lite address 0x%x does not fit the "
                        "core's %u-bit address\n", c, addr, kLiteAddrBits);
            finish(1);
        }
    }
    void lite_write(unsigned c, uint32_t addr, uint32_t data)
    {
        lite_addr_ok(c, addr);
        while (rng->pct(opt.stall))
            step();
        lite_core = c;
        lm.awaddr = addr;
        lm.wdata = data;
        lm.awvalid = lm.wvalid = lm.bready = true;
        for (uint64_t guard = 0; lm.awvalid || lm.wvalid || lm.bready; guard++) {
            step();
            if (guard > 100000) {
                std::printf("board_tb: ERROR: core %u: AXI4-Lite write to 0x%04x never "
                            "completed\n", c, addr);
                finish(1);
            }
        }
    }
    uint32_t lite_read(unsigned c, uint32_t addr)
    {
        lite_addr_ok(c, addr);
        while (rng->pct(opt.stall))
            step();
        lite_core = c;
        lm.araddr = addr;
        lm.arvalid = lm.rready = true;
        for (uint64_t guard = 0; lm.arvalid || lm.rready; guard++) {
            step();
            if (guard > 100000) {
                std::printf("board_tb: ERROR: core %u: AXI4-Lite read of 0x%04x never "
                            "completed\n", c, addr);
                finish(1);
            }
        }
        return l_rdata;
    }
    void finish(int status)
    {
        result = status;
        sc_stop();
        wait(); // never returns: the simulation has stopped
    }

    void run()
    {
        inj_gap.assign(kC, false);
        ej_gap.assign(kC, false);
        lstall.assign(BoardIO::kLinks, false);
        lkind.assign(BoardIO::kLinks, 0);
        armed.assign(BoardIO::kLinks, 0);
        stall_until.assign(BoardIO::kLinks, 0);
        n_retry.assign(BoardIO::kLinks, 0);
        n_fault.assign(BoardIO::kLinks, 0);
        // FLAT: link_err_o per core
        dead_at.assign(BoardIO::kLinks ? BoardIO::kLinks : kC, -1);
        // reset: asserted for 4 cycles
        io->rst_n.write(false);
        for (int i = 0; i < 4; i++)
            wait(clk.negedge_event());
        io->rst_n.write(true);

        // identify every core, load its program, set PC_START
        for (unsigned c = 0; c < kC; c++) {
            const uint32_t id = lite_read(c, 0x0000), n = lite_read(c, 0x0004);
            const uint32_t imem = lite_read(c, 0x002C);
            if (id != 0x54505531u || n != kN) {
                std::printf("board_tb: ERROR: core %u: ID 0x%08x N %u, expected 0x54505531 and "
                            "%u\n", c, id, n, kN);
                finish(1);
            }
            CoreJob &j = *jobs[c];
            if (j.count > imem) {
                std::fprintf(stderr, "board_tb: error: core %u: the program has %zu "
                                     "instructions, IMEM holds %u\n", c, j.count, imem);
                finish(2);
            }
            for (size_t i = 0; i < j.count; i++)
                for (unsigned k = 0; k < 4; k++)
                    lite_write(c, static_cast<uint32_t>(0x4000 + 16 * i + 4 * k),
                               j.prog[i].w[k]);
            if (tb::imem_fill_needed(j.prog, j.count, j.pc_start)) // the rest is nop (model)
                for (size_t i = j.count; i < imem; i++)
                    for (unsigned k = 0; k < 4; k++)
                        lite_write(c, static_cast<uint32_t>(0x4000 + 16 * i + 4 * k), 0);
            lite_write(c, 0x0010, j.pc_start);
        }
        // start them all, then poll until every core is done, one errs, or the limit
        for (unsigned c = 0; c < kC; c++) {
            lite_write(c, 0x0008, 1);
            if (c == 0)
                start_cycle = cycle;
        }
        const auto t0 = std::chrono::steady_clock::now();
        // An error halt stops the polling (its peers may wait for it for ever), except after a
        // dead link: then every core ends by itself (a collective in progress or dispatched
        // later halts it with error 9), and each core's status and trace are collected.
        bool error = false, dead = false;
        unsigned left = kC;
        while (left > 0 && (!error || dead)) {
            for (unsigned c = 0; c < kC && (!error || dead); c++) {
                CoreJob &j = *jobs[c];
                if (j.finished)
                    continue;
                j.status = lite_read(c, 0x000C);
                if ((j.status & 1u) == 0 && (j.status & 6u) != 0) {
                    j.finished = true;
                    left--;
                    error = error || (j.status & 4u) != 0;
                }
                for (int64_t d : dead_at)
                    dead = dead || d >= 0;
            }
            if (left > 0 && (!error || dead) && cycle - start_cycle > opt.max_cycles) {
                timeout = true;
                break;
            }
        }
        end_cycle = cycle;
        secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (unsigned c = 0; c < kC; c++) {
            CoreJob &j = *jobs[c];
            j.pc = lite_read(c, 0x0014);
            if (!j.finished) {
                j.status = lite_read(c, 0x000C);
                std::printf("board_tb: core %u still busy (STATUS 0x%x) at PC %u%s\n", c,
                            j.status, j.pc,
                            timeout ? "" : " when another core stopped with an error");
            }
            j.err_code = lite_read(c, 0x0018);
            j.err_pc = lite_read(c, 0x001C);
            for (unsigned k = 0; k < kCounters; k++) {
                const uint64_t lo_ = lite_read(c, 0x0040 + 8 * k),
                               hi_ = lite_read(c, 0x0044 + 8 * k);
                j.ctr[k] = lo_ | hi_ << 32;
            }
        }
        // let outstanding write responses drain (a protocol check, not part of the run)
        bool all_finished = true;
        for (auto &j : jobs)
            all_finished = all_finished && j->finished;
        for (int i = 0; i < 64; i++) {
            bool idle = true;
            for (auto &j : jobs)
                idle = idle && j->mem->idle();
            if (idle)
                break;
            step();
        }
        if (all_finished)
            for (unsigned c = 0; c < kC; c++)
                jobs[c]->mem->report_outstanding(cycle);
        finish(0);
    }
};

int write_outputs(const Options &opt, Host &h)
{
    char err[1024];
    for (unsigned c = 0; c < kC; c++) {
        CoreJob &j = *h.jobs[c];
        const std::string base = opt.out + "/core" + std::to_string(c);
        FILE *tf = std::fopen((base + ".trace").c_str(), "w");
        if (tf == nullptr) {
            std::fprintf(stderr, "board_tb: error: cannot write %s.trace: %s\n", base.c_str(),
                         std::strerror(errno));
            return 2;
        }
        std::fprintf(tf, "# tpu-core-trace 3\n# board_tb core %u of %u (%s %ux%u)\n", c, kC,
                     BOARD_TOPO, BOARD_ROWS, BOARD_COLS);
        // the dynamic instructions in ascending order: each one's writes, then its retire line
        std::map<uint32_t, bool> seqs;
        for (auto const &kv : j.retired)
            seqs[kv.first] = true;
        for (auto const &kv : j.writes)
            seqs[kv.first] |= false;
        for (auto const &kv : seqs) {
            auto it = j.writes.find(kv.first);
            if (it != j.writes.end())
                for (auto const &l : it->second)
                    std::fprintf(tf, "%s\n", l.c_str());
            if (kv.second)
                std::fprintf(tf, "%s\n", j.retired[kv.first].c_str());
        }
        if (j.finished && (j.status & 4u) != 0)
            std::fprintf(tf, "e %u %u %u\n", j.err_seq, j.err_pc, j.err_code);
        if (std::fclose(tf) != 0) {
            std::fprintf(stderr, "board_tb: error: cannot write %s.trace\n", base.c_str());
            return 2;
        }
        FILE *cf = std::fopen((base + ".counters").c_str(), "w");
        if (cf == nullptr) {
            std::fprintf(stderr, "board_tb: error: cannot write %s.counters: %s\n",
                         base.c_str(), std::strerror(errno));
            return 2;
        }
        for (unsigned k = 0; k < kCounters; k++)
            std::fprintf(cf, "%s%s=%" PRIu64, k ? " " : "counters: ", kCounterNames[k], j.ctr[k]);
        std::fprintf(cf, "\n");
        if (std::fclose(cf) != 0) {
            std::fprintf(stderr, "board_tb: error: cannot write %s.counters\n", base.c_str());
            return 2;
        }
        if (mkdir(base.c_str(), 0777) != 0 && errno != EEXIST) {
            std::fprintf(stderr, "board_tb: error: cannot create %s: %s\n", base.c_str(),
                         std::strerror(errno));
            return 2;
        }
        if (tpu_host_dump_all(&j.host, err, sizeof err) != 0) {
            std::fprintf(stderr, "board_tb: error: core %u: %s\n", c, err);
            return 2;
        }
    }
    return 0;
}

} // namespace

int sc_main(int argc, char **argv)
{
    Options opt;
    int rc = parse_options(argc, argv, &opt);
    if (rc >= 0)
        return rc;
    if (mkdir(opt.out.c_str(), 0777) != 0 && errno != EEXIST) {
        std::fprintf(stderr, "board_tb: error: --out %s: %s\n", opt.out.c_str(),
                     std::strerror(errno));
        return 2;
    }
    {
        const std::string extra = opt.job + "/core" + std::to_string(kC) + ".args";
        if (access(extra.c_str(), F_OK) == 0) {
            std::fprintf(stderr, "board_tb: error: --job %s has %s: more cores than this board "
                                 "(C = %u)\n", opt.job.c_str(), extra.c_str(), kC);
            return 2;
        }
    }
    Rng rng(opt.seed);

    Verilated::randReset(2); // --x-initial unique: randomise every initial value
    Verilated::traceEverOn(true);
    Verilated::commandArgs(argc, argv);
    tb::seed_context(Verilated::defaultContextp());

    sc_clock clk("clk", 10, SC_NS);
    BoardIO io("io");
    io.clk(clk);
    Host host("host");
    host.clk(clk);
    host.io = &io;
    host.opt = opt;
    host.rng = &rng;
    Rng lrng(opt.seed ^ 0x6c696e6b5f73746cull);
    host.lrng = &lrng;
    for (unsigned c = 0; c < kC; c++) {
        host.jobs.emplace_back(new CoreJob);
        CoreJob &j = *host.jobs.back();
        rc = load_job(opt.job, c, opt.out, &j);
        if (rc >= 0)
            return rc;
        j.mem.reset(new AxiMem(static_cast<int>(c), j.host.mem, j.host.size, kAxiBits / 8,
                               opt.axi_latency, opt.stall, &rng, &host.perr));
        j.mem->footprint(j.prog, j.count);
    }
    std::printf("board_tb: %s board N=%u C=%u %s %ux%u W=%u D=%u axi-data-bits=%u job=%s "
                "stall=%u%% seed=%" PRIu64 " +verilator+seed+%d (add it to replay this run)\n",
                kMode, kN, kC, BOARD_TOPO, BOARD_ROWS, BOARD_COLS, kW, BOARD_D, kAxiBits,
                opt.job.c_str(),
                opt.stall, opt.seed, Verilated::defaultContextp()->randSeed());
    std::fflush(stdout);

    std::unique_ptr<VerilatedFstSc> fst;
    const bool plus = tb::plus_trace(Verilated::defaultContextp());
    sc_start(SC_ZERO_TIME);
    if (plus) {
        fst.reset(new VerilatedFstSc);
        io.trace(fst.get());
        fst->open(opt.fst.c_str());
        std::printf("board_tb: writing waveform %s\n", opt.fst.c_str());
    }
    sc_start();
    if (fst)
        fst->close();
    io.final();
    if (host.result == 2)
        return 2;

    rc = write_outputs(opt, host);
    if (rc != 0)
        return rc;

    // ---- summary ----
    int status = host.result;
    uint64_t max_cycles = 0, mxu = 0, net = 0;
    for (unsigned c = 0; c < kC; c++) {
        CoreJob &j = *host.jobs[c];
        std::printf("board_tb: core %u:", c);
        for (unsigned k = 0; k < kCounters; k++)
            std::printf(" %s=%" PRIu64, kCounterNames[k], j.ctr[k]);
        std::printf("; %" PRIu64 " rows written\n", j.rows_written);
        if (j.finished && (j.status & 4u) != 0) {
            char dis[256] = "?";
            if (j.err_pc < j.count)
                tpu_insn_disasm(j.prog[j.err_pc], dis, sizeof dis);
            char dyn[64] = ""; // a loop ran: name the dynamic instruction, as tpu-run does
            if (static_cast<uint64_t>(j.err_seq) + j.pc_start != j.err_pc)
                std::snprintf(dyn, sizeof dyn, " (dynamic instruction %u)", j.err_seq);
            std::printf("board_tb: core %u: error %u (%s) at pc %u%s: %s\n", c, j.err_code,
                        tpu_err_name(static_cast<int>(j.err_code)), j.err_pc, dyn, dis);
            status = 1;
        } else if (!j.finished) {
            status = 1;
        }
        if (j.ctr[0] > max_cycles)
            max_cycles = j.ctr[0];
        mxu += j.ctr[1];
        net += j.ctr[6];
    }
    const uint64_t sim_cycles = host.end_cycle - host.start_cycle;
    if (host.timeout) {
        std::printf("board_tb: ERROR: timeout: not every core halted after %" PRIu64
                    " cycles (--max-cycles %" PRIu64 ")\n", sim_cycles, opt.max_cycles);
        status = 1;
    }
    std::printf("board_tb: board: C=%u %s %ux%u: %" PRIu64 " cycles (the longest core's CYCLES), "
                "MXU_BUSY %" PRIu64 " (sum), MXU utilisation %.1f%% (MXU_BUSY/(C*CYCLES)), "
                "NET_BUSY %" PRIu64 " (sum)\n",
                kC, BOARD_TOPO, BOARD_ROWS, BOARD_COLS, max_cycles, mxu,
                max_cycles ? 100.0 * static_cast<double>(mxu) /
                                 (static_cast<double>(kC) * static_cast<double>(max_cycles))
                           : 0.0,
                net);
    std::printf("board_tb: %" PRIu64 " cycles simulated in %.2f s (%.0f cycles/s)\n", sim_cycles,
                host.secs, host.secs > 0 ? static_cast<double>(sim_cycles) / host.secs : 0.0);
    if (host.perr.count != 0) {
        std::printf("board_tb: %" PRIu64 " AXI protocol violation(s)\n", host.perr.count);
        status = 1;
    }
    // the links (docs/board.md "Link faults"): what was injected, detected and replayed
    uint64_t retries = 0, faults = 0;
    for (unsigned l = 0; l < BoardIO::kLinks; l++) {
        retries += host.n_retry[l];
        faults += host.n_fault[l];
    }
    if (BoardIO::kLinks != 0)
        std::printf("board_tb: links: %u, stall %u%%, %" PRIu64 " long stall(s), %" PRIu64
                    " fault(s) armed, %" PRIu64 " hit and reported by the link; %" PRIu64
                    " flit(s) found corrupted or out of sequence, %" PRIu64 " replay(s)\n",
                    BoardIO::kLinks, opt.link_stall, host.stall_total, host.armed_total,
                    host.hit_total, faults, retries);
    for (unsigned l = 0; l < host.dead_at.size(); l++)
        if (host.dead_at[l] >= 0) {
            if (BoardIO::kLinks != 0)
                std::printf("board_tb: ERROR: link %u (core %u's output port %u) is dead since "
                            "cycle %" PRId64 ": a fault its replays did not recover from\n", l,
                            l / (BoardIO::kLinks / kC), l % (BoardIO::kLinks / kC) + 1,
                            host.dead_at[l]);
            else
                std::printf("board_tb: ERROR: link_err_o[%u]: an output link of core %u is "
                            "dead since cycle %" PRId64 "\n", l, l, host.dead_at[l]);
            status = 1;
        }
    if (status == 0)
        std::printf("board_tb: done\n");
    return status;
}
