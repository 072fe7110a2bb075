// SPDX-License-Identifier: Apache-2.0
// tpu_core_regs (verilated standalone; N, UbRows, AccRows, WmemRows, ImemInsns from -G and the
// same -D macros) against docs/isa.md "AXI4-Lite slave", with random traffic:
//  - writes with AW before W, W before AW or both together, random delays, the next write's
//    AW/W offered while a B is pending; reads at the same time; random BREADY/RREADY;
//  - every IMEM write with a full strobe while not busy and inside IMEM must give exactly one
//    imem_we_o with its index, word and data before its B, in order (partial strobe, busy or
//    past IMEM: none);
//  - CTRL bit 0 = 1 while not busy: exactly one start_o pulse (else none); PC_START read back;
//  - every read returns, bit for bit, ID, N, STATUS, PC, ERR_CODE, ERR_PC, the sizes and the
//    counters' words as driven in the cycle of its AR handshake, 0 for unmapped addresses;
//  - BVALID/RVALID held with stable data until ready, responses OKAY.
#include <deque>
#include <memory>
#include <vector>

#include "Vtpu_core_regs.h"
#include "units_common.h"
#include "verilated.h"
#include "vl_ports.h"

static const unsigned N = REGS_N, UB = REGS_UB, ACC = REGS_ACC, WM = REGS_WM, IM = REGS_IM;

static uint64_t now = 0;
static int fails = 0;
#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (!(cond)) {                                                \
            if (++fails <= 10) {                                      \
                printf("tb_core_regs cycle %llu: ", (unsigned long long)now); \
                printf(__VA_ARGS__);                                  \
                printf("\n");                                         \
            }                                                         \
        }                                                             \
    } while (0)

int main(int argc, char **argv) {
    units::Options opt = units::parse_options(argc, argv, "tb_core_regs [--seed S] [--count CYCLES]");
    if (opt.count == 4000000) opt.count = 200000;
    units::Rng rng(opt.seed);
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->randReset(2);
    auto top = std::make_unique<Vtpu_core_regs>(ctx.get());

    top->clk_i = 0;
    top->rst_ni = 1;
    top->s_axil_awvalid = top->s_axil_wvalid = top->s_axil_arvalid = 0;
    top->s_axil_bready = top->s_axil_rready = 0;
    top->eval();
    top->rst_ni = 0;
    top->eval();
    for (int k = 0; k < 2; k++) {
        top->clk_i = 1;
        top->eval();
        top->clk_i = 0;
        top->eval();
    }
    top->rst_ni = 1;
    top->eval();

    // writes: a stream of transactions, up to two issued ahead of their B (the master may
    // present the next AW/W while a B is pending; the slave must hold it off)
    struct Txn {
        uint32_t addr, data, strb;
        bool aw_sent, w_sent;
        unsigned aw_delay, w_delay;
        uint64_t id;
    };
    struct Effect {  // an IMEM write or a start pulse the transaction `id` must make
        uint64_t id;
        uint32_t idx, word, data;
    };
    std::deque<Txn> txns;
    std::deque<Effect> want_imem, want_start;
    uint64_t next_id = 0;
    bool busy = false;
    uint32_t pc_start = 0;
    // the read in flight
    bool r_active = false, ar_sent = false;
    unsigned ar_delay = 0;
    uint32_t r_addr = 0;
    std::vector<uint32_t> r_ok;  // acceptable read values
    bool p_bvalid = false, p_rvalid = false;
    uint32_t p_rdata = 0;
    std::vector<uint32_t> imem(IM * 4, 0), imem_ref(IM * 4, 0);
    uint64_t nwrites = 0, nreads = 0, nimem = 0, nstart = 0, nstalled = 0;

    auto pick_addr = [&](bool write) -> uint32_t {
        unsigned k = rng.below(10);
        if (k < 4 || (write && k < 7)) {  // IMEM, sometimes past its end
            unsigned i = rng.below(IM + 3);
            return 0x4000 + 16 * i + 4 * rng.below(4);
        }
        if (k < 7) return 4 * rng.below(16);  // 0x00 .. 0x3C
        if (k < 9) return 0x40 + 4 * rng.below(16);  // the 7 counters and past them
        // unmapped, the registers, and the top of the 20-bit window (past every IMEM)
        static const uint32_t odd[] = {0x0080, 0x0100, 0x1000, 0x3FFC, 0x0008,
                                       0x0010, 0x84000, 0xFFFFC, 0x10008, 0x40010};
        return odd[rng.below(10)];
    };
    // the PC_START values a read may see while writes are in flight
    auto pcs_values = [&]() {
        std::vector<uint32_t> v{pc_start};
        for (const Txn &t : txns)
            if (t.addr == 0x0010 && t.strb == 0xF) v.push_back(t.data & 0xFFFF);
        return v;
    };

    for (; now < opt.count && fails == 0; now++) {
        // inputs (clock low)
        top->clk_i = 0;
        if (txns.empty() && rng.below(4) == 0) busy = rng.below(3) == 0;  // between writes only
        if (txns.size() < 2 && rng.below(3) == 0) {
            Txn t{};
            t.addr = pick_addr(true);
            t.data = rng.u32();
            if (t.addr == 0x0008) t.data = rng.below(2) ? (rng.u32() | 1u) : (rng.u32() & ~1u);
            t.strb = rng.below(5) == 0 ? rng.below(15) : 0xF;
            unsigned k = rng.below(3);  // AW first, W first, together
            t.aw_delay = k == 1 ? 1 + rng.below(4) : 0;
            t.w_delay = k == 0 ? 1 + rng.below(4) : 0;
            t.id = next_id++;
            // its effects, decided by what is sent and busy (constant while writes are in flight)
            const bool full = t.strb == 0xF;
            if (full && !busy && t.addr >= 0x4000 && (t.addr - 0x4000) / 16 < IM)
                want_imem.push_back({t.id, (t.addr - 0x4000) / 16, (t.addr >> 2) & 3, t.data});
            if (full && !busy && t.addr == 0x0008 && (t.data & 1))
                want_start.push_back({t.id, 0, 0, 0});
            txns.push_back(t);
        }
        top->busy_i = busy;
        // AW and W each carry the oldest transaction that has not sent them
        Txn *taw = nullptr, *tw = nullptr;
        for (Txn &t : txns) {
            if (!taw && !t.aw_sent) taw = &t;
            if (!tw && !t.w_sent) tw = &t;
        }
        top->s_axil_awvalid = taw && taw->aw_delay == 0;
        top->s_axil_awaddr = top->s_axil_awvalid ? taw->addr : rng.u32();
        top->s_axil_wvalid = tw && tw->w_delay == 0;
        top->s_axil_wdata = top->s_axil_wvalid ? tw->data : rng.u32();
        top->s_axil_wstrb = top->s_axil_wvalid ? tw->strb : rng.u32();
        top->s_axil_bready = rng.below(3) != 0;
        if (!r_active && rng.below(3) == 0) {
            r_active = true;
            ar_sent = false;
            ar_delay = rng.below(3);
            r_addr = pick_addr(false);
        }
        top->s_axil_arvalid = r_active && !ar_sent && ar_delay == 0;
        top->s_axil_araddr = top->s_axil_arvalid ? r_addr : rng.u32();
        top->s_axil_rready = rng.below(3) != 0;
        top->done_i = rng.below(2);
        top->error_i = rng.below(2);
        top->err_code_i = rng.u32();
        top->err_pc_i = rng.u32();
        top->pc_i = rng.u32();
        for (int i = 0; i < 14; i++) put_field(top->counters_i, 32 * i, 32, rng.u32());
        top->eval();

        CHECK(top->s_axil_bresp == 0 && top->s_axil_rresp == 0, "response not OKAY");
        if (p_bvalid) CHECK(top->s_axil_bvalid, "BVALID dropped before BREADY");
        if (p_rvalid) CHECK(top->s_axil_rvalid && top->s_axil_rdata == p_rdata,
                            "RVALID dropped or RDATA changed before RREADY");
        if (txns.empty())
            CHECK(top->pc_start_o == pc_start, "pc_start_o %x, want %x", top->pc_start_o, pc_start);

        // write side: effects in transaction order, each before its transaction's B
        if (top->imem_we_o) {
            CHECK(!want_imem.empty(), "imem_we_o that no write asked for");
            if (!want_imem.empty()) {
                const Effect e = want_imem.front();
                want_imem.pop_front();
                CHECK(top->imem_addr_o == e.idx && top->imem_word_o == e.word &&
                          top->imem_wdata_o == e.data,
                      "IMEM write %u.%u = %08x, want %u.%u = %08x", top->imem_addr_o,
                      top->imem_word_o, top->imem_wdata_o, e.idx, e.word, e.data);
                if (top->imem_addr_o < IM)
                    imem[top->imem_addr_o * 4 + top->imem_word_o] = top->imem_wdata_o;
            }
        }
        if (top->start_o) {
            CHECK(!want_start.empty(), "start_o that no write asked for");
            if (!want_start.empty()) want_start.pop_front();
        }
        const bool aw_hs = top->s_axil_awvalid && top->s_axil_awready;
        const bool w_hs = top->s_axil_wvalid && top->s_axil_wready;
        if (top->s_axil_awvalid && !aw_hs && txns.size() > 1) nstalled++;
        if (top->s_axil_bvalid)
            CHECK(!txns.empty() && txns.front().aw_sent && txns.front().w_sent, "BVALID with no write");
        const bool b_hs = top->s_axil_bvalid && top->s_axil_bready;
        // read side
        if (top->s_axil_rvalid) CHECK(r_active && ar_sent, "RVALID with no read");
        const bool r_hs = top->s_axil_rvalid && top->s_axil_rready;
        if (r_hs) {
            nreads++;
            bool ok = false;
            for (uint32_t v : r_ok) ok = ok || top->s_axil_rdata == v;
            CHECK(ok, "read 0x%04x: got %08x want %08x", r_addr, top->s_axil_rdata, r_ok[0]);
            r_active = false;
        }
        if (top->s_axil_arvalid && top->s_axil_arready) {
            ar_sent = true;
            uint32_t a = r_addr, v = 0;
            r_ok.clear();
            if (a < 0x40) {
                switch (a >> 2) {
                case 0: v = 0x54505531u; break;
                case 1: v = N; break;
                case 3: v = (top->error_i << 2) | (top->done_i << 1) | top->busy_i; break;
                case 4: r_ok = pcs_values(); break;
                case 5: v = top->pc_i; break;
                case 6: v = top->err_code_i; break;
                case 7: v = top->err_pc_i; break;
                case 8: v = UB; break;
                case 9: v = ACC; break;
                case 10: v = WM; break;
                case 11: v = IM; break;
                default: v = 0;
                }
            } else if (a < 0x78) {  // 0x40 + 8k, k < 7 (NET_BUSY is k = 6)
                unsigned w = (a - 0x40) / 4;
                v = get_field(top->counters_i, 32 * w, 32);
            }
            if (r_ok.empty()) r_ok.push_back(v);
        } else if (r_active && !ar_sent && ar_delay) {
            ar_delay--;
        }
        if (aw_hs) taw->aw_sent = true;
        if (w_hs) tw->w_sent = true;
        for (Txn &t : txns) {  // delays count down only for the transaction at the head of a channel
            if (&t == taw && !t.aw_sent && t.aw_delay) t.aw_delay--;
            if (&t == tw && !t.w_sent && t.w_delay) t.w_delay--;
        }
        if (b_hs) {
            const Txn t = txns.front();
            txns.pop_front();
            nwrites++;
            CHECK(want_imem.empty() || want_imem.front().id > t.id,
                  "write 0x%04x strb %x busy %d: B before its IMEM write", t.addr, t.strb, busy);
            CHECK(want_start.empty() || want_start.front().id > t.id,
                  "write 0x%04x data %x busy %d: B before its start pulse", t.addr, t.data, busy);
            if (t.strb == 0xF && !busy && t.addr >= 0x4000 && (t.addr - 0x4000) / 16 < IM) {
                imem_ref[(t.addr - 0x4000) / 4] = t.data;
                nimem++;
            }
            nstart += t.strb == 0xF && !busy && t.addr == 0x0008 && (t.data & 1);
            if (t.strb == 0xF && t.addr == 0x0010) pc_start = t.data & 0xFFFF;
        }
        p_bvalid = top->s_axil_bvalid && !b_hs;
        p_rvalid = top->s_axil_rvalid && !r_hs;
        p_rdata = top->s_axil_rdata;
        top->clk_i = 1;
        top->eval();
    }
    CHECK(fails || (want_imem.empty() || want_imem.front().id >= next_id - txns.size()),
          "IMEM writes missing");
    for (unsigned i = 0; i < IM * 4; i++)
        CHECK(imem[i] == imem_ref[i], "IMEM instruction %u word %u: got %08x want %08x", i / 4,
              i % 4, imem[i], imem_ref[i]);
    top->final();
    printf("tb_core_regs N=%u IMEM=%u: %llu cycles, %llu writes (%llu to IMEM, %llu starts, %llu cycles"
           " of a second AW held off), %llu reads: %s\n",
           N, IM, (unsigned long long)now, (unsigned long long)nwrites, (unsigned long long)nimem,
           (unsigned long long)nstart, (unsigned long long)nstalled, (unsigned long long)nreads,
           fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
