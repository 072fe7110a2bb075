// SPDX-License-Identifier: Apache-2.0
// tpu_core_regs (verilated standalone; N, UbRows, AccRows, WmemRows, ImemInsns from -G and the
// same -D macros) against docs/isa.md "AXI4-Lite slave", with random traffic:
//  - writes with AW before W, W before AW or both together, random delays, one at a time;
//    reads at the same time as writes; random BREADY/RREADY back-pressure;
//  - every IMEM write with a full strobe while not busy and inside IMEM must give exactly one
//    imem_we_o with its index, word and data (partial strobe, busy or past IMEM: none);
//  - CTRL bit 0 = 1 while not busy: exactly one start_o pulse (else none); PC_START read back;
//  - every read returns, bit for bit, ID, N, STATUS, PC, ERR_CODE, ERR_PC, the sizes and the
//    counters' words as driven in the cycle of its AR handshake, 0 for unmapped addresses;
//  - BVALID/RVALID held with stable data until ready, responses OKAY.
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

    // the write in flight
    bool w_active = false, aw_sent = false, w_sent = false;
    unsigned aw_delay = 0, w_delay = 0;
    uint32_t w_addr = 0, w_data = 0, w_strb = 0;
    unsigned imem_we_seen = 0, start_seen = 0;
    bool busy = false;
    uint32_t pc_start = 0, pc_start_old = 0;
    // the read in flight
    bool r_active = false, ar_sent = false, ar_pcs_racy = false;
    unsigned ar_delay = 0;
    uint32_t r_addr = 0, r_want = 0, r_want_alt = 0;
    bool p_bvalid = false, p_rvalid = false;
    uint32_t p_rdata = 0;
    std::vector<uint32_t> imem(IM * 4, 0), imem_ref(IM * 4, 0);
    uint64_t nwrites = 0, nreads = 0, nimem = 0, nstart = 0;

    auto pick_addr = [&](bool write) -> uint32_t {
        unsigned k = rng.below(10);
        if (k < 4 || (write && k < 7)) {  // IMEM, sometimes past its end
            unsigned i = rng.below(IM + 3);
            return 0x4000 + 16 * i + 4 * rng.below(4);
        }
        if (k < 7) return 4 * rng.below(16);  // 0x00 .. 0x3C
        if (k < 9) return 0x40 + 4 * rng.below(14);  // counters and past them
        static const uint32_t odd[] = {0x0080, 0x0100, 0x1000, 0x3FFC, 0x0008, 0x0010};
        return odd[rng.below(6)];
    };

    for (; now < opt.count && fails == 0; now++) {
        // inputs (clock low)
        top->clk_i = 0;
        if (!w_active && rng.below(3) == 0) {
            w_active = true;
            aw_sent = w_sent = false;
            w_addr = pick_addr(true);
            w_data = rng.u32();
            if (w_addr == 0x0008) w_data = rng.below(2) ? (rng.u32() | 1u) : (rng.u32() & ~1u);
            w_strb = rng.below(5) == 0 ? rng.below(15) : 0xF;
            unsigned k = rng.below(3);  // AW first, W first, together
            aw_delay = k == 1 ? 1 + rng.below(4) : 0;
            w_delay = k == 0 ? 1 + rng.below(4) : 0;
            imem_we_seen = start_seen = 0;
            pc_start_old = pc_start;
        }
        if (!w_active && rng.below(4) == 0) busy = rng.below(3) == 0;  // changes between writes
        top->busy_i = busy;
        top->s_axil_awvalid = w_active && !aw_sent && aw_delay == 0;
        top->s_axil_awaddr = top->s_axil_awvalid ? w_addr : rng.u32();
        top->s_axil_wvalid = w_active && !w_sent && w_delay == 0;
        top->s_axil_wdata = top->s_axil_wvalid ? w_data : rng.u32();
        top->s_axil_wstrb = top->s_axil_wvalid ? w_strb : rng.u32();
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
        for (int i = 0; i < 12; i++) put_field(top->counters_i, 32 * i, 32, rng.u32());
        top->eval();

        CHECK(top->s_axil_bresp == 0 && top->s_axil_rresp == 0, "response not OKAY");
        if (p_bvalid) CHECK(top->s_axil_bvalid, "BVALID dropped before BREADY");
        if (p_rvalid) CHECK(top->s_axil_rvalid && top->s_axil_rdata == p_rdata,
                            "RVALID dropped or RDATA changed before RREADY");
        CHECK(top->pc_start_o == pc_start || (w_active && w_addr == 0x10),
              "pc_start_o %x, want %x", top->pc_start_o, pc_start);

        // write side
        if (top->imem_we_o) {
            imem_we_seen++;
            CHECK(w_active && aw_sent && w_sent, "imem_we_o with no write held");
            uint32_t idx = top->imem_addr_o, word = top->imem_word_o;
            CHECK(idx < IM, "imem_addr_o %u past IMEM", idx);
            if (idx < IM) imem[idx * 4 + word] = top->imem_wdata_o;
        }
        if (top->start_o) {
            start_seen++;
            CHECK(w_active && aw_sent && w_sent, "start_o with no write held");
        }
        if (top->s_axil_awvalid && top->s_axil_awready) aw_sent = true;
        if (top->s_axil_wvalid && top->s_axil_wready) w_sent = true;
        if (w_active && !aw_sent && aw_delay) aw_delay--;
        if (w_active && !w_sent && w_delay) w_delay--;
        if (top->s_axil_bvalid) CHECK(w_active && aw_sent && w_sent, "BVALID with no write");
        const bool b_hs = top->s_axil_bvalid && top->s_axil_bready;
        // read side
        if (top->s_axil_rvalid) CHECK(r_active && ar_sent, "RVALID with no read");
        const bool r_hs = top->s_axil_rvalid && top->s_axil_rready;
        if (r_hs) {
            nreads++;
            CHECK(top->s_axil_rdata == r_want || (ar_pcs_racy && top->s_axil_rdata == r_want_alt),
                  "read 0x%04x: got %08x want %08x", r_addr, top->s_axil_rdata, r_want);
            r_active = false;
        }
        if (top->s_axil_arvalid && top->s_axil_arready) {
            ar_sent = true;
            uint32_t a = r_addr, v = 0;
            ar_pcs_racy = false;
            if (a < 0x40) {
                switch (a >> 2) {
                case 0: v = 0x54505531u; break;
                case 1: v = N; break;
                case 3: v = (top->error_i << 2) | (top->done_i << 1) | top->busy_i; break;
                case 4:
                    v = pc_start;
                    ar_pcs_racy = w_active && w_addr == 0x10;
                    r_want_alt = w_strb == 0xF ? (w_data & 0xFFFF) : pc_start;
                    break;
                case 5: v = top->pc_i; break;
                case 6: v = top->err_code_i; break;
                case 7: v = top->err_pc_i; break;
                case 8: v = UB; break;
                case 9: v = ACC; break;
                case 10: v = WM; break;
                case 11: v = IM; break;
                default: v = 0;
                }
            } else if (a < 0x70) {
                unsigned w = (a - 0x40) / 4;
                v = get_field(top->counters_i, 32 * w, 32);
            }
            r_want = v;
        } else if (r_active && !ar_sent && ar_delay) {
            ar_delay--;
        }
        if (b_hs) {
            // the write's effect, decided by what was sent and busy (constant during it)
            nwrites++;
            bool full = w_strb == 0xF;
            bool imem_ok = full && !busy && w_addr >= 0x4000 && (w_addr - 0x4000) / 16 < IM;
            CHECK(imem_we_seen == (imem_ok ? 1u : 0u), "write 0x%04x strb %x busy %d: %u IMEM writes",
                  w_addr, w_strb, busy, imem_we_seen);
            if (imem_ok) imem_ref[(w_addr - 0x4000) / 4] = w_data, nimem++;
            bool st = full && !busy && w_addr == 0x0008 && (w_data & 1);
            CHECK(start_seen == (st ? 1u : 0u), "write 0x%04x data %x busy %d: %u start pulses",
                  w_addr, w_data, busy, start_seen);
            nstart += st;
            if (full && w_addr == 0x0010) pc_start = w_data & 0xFFFF;
            w_active = false;
        }
        p_bvalid = top->s_axil_bvalid && !b_hs;
        p_rvalid = top->s_axil_rvalid && !r_hs;
        p_rdata = top->s_axil_rdata;
        top->clk_i = 1;
        top->eval();
    }
    for (unsigned i = 0; i < IM * 4; i++)
        CHECK(imem[i] == imem_ref[i], "IMEM instruction %u word %u: got %08x want %08x", i / 4,
              i % 4, imem[i], imem_ref[i]);
    top->final();
    printf("tb_core_regs N=%u IMEM=%u: %llu cycles, %llu writes (%llu to IMEM, %llu starts), %llu reads: %s\n",
           N, IM, (unsigned long long)now, (unsigned long long)nwrites, (unsigned long long)nimem,
           (unsigned long long)nstart, (unsigned long long)nreads, fails ? "FAIL" : "PASS");
    (void)pc_start_old;
    return fails ? 1 : 0;
}
