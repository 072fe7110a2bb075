// SPDX-License-Identifier: Apache-2.0
// tpu_core_dma (verilated standalone, N from -GN and -DDMA_N) against a C++ reference of
// docs/isa.md "AXI4 master" and "Timing":
//  - random dma_in / dma_out commands on UB, ACC and WMEM: rows 0..40, cols 1..N, host
//    addresses anywhere in a 1 MiB image (often just below a 4 KiB boundary), strides 0, dense,
//    small, large (multiples of the element size, as the sequencer guarantees);
//  - an AXI4 slave memory with random back-pressure on AR, AW, W, random gaps on R and B, random
//    latency (1..40: 16 bursts often outstanding), W accepted before its AW, an occasional
//    SLVERR;
//  - every AR/AW must be the reference burst (8-byte aligned, INCR, size 3, len <= 15, no 4 KiB
//    crossing, in order), at most 16 outstanding; WLAST exactly on the burst's last beat;
//    valid held and payload stable until ready;
//  - dma_in: every row write (mw_*) equals the host bytes, pad value past cols, in row order;
//    dma_out: the on-chip reads are the rows in order and after completion the host image
//    equals the reference image (only the rows' bytes changed);
//  - busy_o from acceptance + 1 to done_o inclusive, one done_o, axi_err_o with done_o;
//  - with an ideal slave (always ready, fixed latency Lat, no gaps) done_o comes exactly in
//    the cycle the timing of docs/isa.md predicts.
#include <deque>
#include <memory>
#include <vector>

#include "Vtpu_core_dma.h"
#include "units_common.h"
#include "verilated.h"
#include "vl_ports.h"

static const int N = DMA_N;
static const uint32_t HOST = 1u << 20;
static const int ROWS = 256;  // on-chip rows per memory in this bench

static int fails = 0;
#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            if (++fails <= 10) {                                                    \
                printf("tb_core_dma N=%d cycle %llu: ", N, (unsigned long long)now); \
                printf(__VA_ARGS__);                                                \
                printf("\n");                                                       \
            }                                                                       \
        }                                                                           \
    } while (0)

struct Cmd {
    bool out;
    unsigned mem, rows, row, cols;
    uint32_t haddr, stride;
};
struct Burst {
    uint32_t addr;
    unsigned len;  // beats
};

// The reference burst list: per row, the 8-byte words covering its bytes, cut at 16 beats
// and at 4 KiB boundaries.
static std::vector<Burst> ref_bursts(const Cmd &c, std::vector<unsigned> *row_of) {
    std::vector<Burst> v;
    unsigned e = c.mem == 1 ? 4 : 2;
    for (unsigned r = 0; r < c.rows; r++) {
        uint32_t a = c.haddr + r * c.stride;
        uint32_t first = a & ~7u, last = (a + c.cols * e - 1) & ~7u;
        uint32_t beats = (last - first) / 8 + 1;
        uint32_t ba = first;
        while (beats) {
            uint32_t n = beats < 16 ? beats : 16;
            uint32_t tob = (4096 - (ba & 4095)) / 8;
            if (n > tob) n = tob;
            v.push_back({ba, n});
            if (row_of) row_of->push_back(r);
            ba += n * 8;
            beats -= n;
        }
    }
    return v;
}

static uint64_t now = 0;

int main(int argc, char **argv) {
    units::Options opt = units::parse_options(argc, argv, "tb_core_dma [--seed S] [--count COMMANDS]");
    if (opt.count == 4000000) opt.count = 400;
    units::Rng rng(opt.seed);
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->randReset(2);
    auto top = std::make_unique<Vtpu_core_dma>(ctx.get());

    std::vector<uint8_t> host(HOST), ref(HOST);
    for (auto &b : host) b = (uint8_t)rng.u32();
    std::vector<uint32_t> chip[3];  // element (row, i) at [row*N + i]
    for (int m = 0; m < 3; m++) {
        chip[m].resize(ROWS * N);
        for (auto &x : chip[m]) x = m == 1 ? rng.u32() : (rng.u32() & 0xFFFF);
    }

    // reset
    top->cmd_valid_i = 0;
    top->clk_i = 0;
    top->rst_ni = 1;
    top->eval();
    top->rst_ni = 0;  // asynchronous assertion
    top->eval();
    for (int k = 0; k < 2; k++) {
        top->clk_i = 1;
        top->eval();
        top->clk_i = 0;
        top->eval();
    }
    top->rst_ni = 1;
    top->eval();

    uint64_t ncmds = 0, nbeats = 0, nideal = 0, ncut = 0;
    unsigned max_out = 0;
    for (uint64_t ci = 0; ci < opt.count && fails == 0; ci++) {
        Cmd c;
        c.out = rng.below(2);
        c.mem = rng.below(3);
        unsigned e = c.mem == 1 ? 4 : 2;
        c.rows = rng.below(16) == 0 ? 0 : 1 + rng.below(rng.below(4) == 0 ? 40 : 6);
        c.cols = rng.below(3) == 0 ? N : 1 + rng.below(N);
        c.row = rng.below(ROWS - c.rows + 1);
        switch (rng.below(5)) {
        case 0: c.stride = 0; break;
        case 1: c.stride = c.cols * e; break;
        case 2: c.stride = e * rng.below(40); break;
        case 3: c.stride = e * (1 + rng.below(2400)); break;  // up to ~9.6 KB
        default: c.stride = 4096 + e * (rng.below(9) - 4); break;
        }
        uint32_t span = c.rows ? (c.rows - 1) * c.stride + c.cols * e : 0;
        uint32_t room = HOST - span - 16;
        if (rng.below(2))  // just below a 4 KiB boundary
            c.haddr = ((1 + rng.below(room / 4096 - 1)) * 4096 - e * rng.below(12)) % room;
        else
            c.haddr = rng.below(room);
        c.haddr &= ~(e - 1);
        const bool ideal = rng.below(4) == 0;
        const unsigned lat = 1 + rng.below(rng.below(4) == 0 ? 40 : 8);
        const unsigned p_ready = ideal ? 100 : 20 + rng.below(81);  // percent
        std::vector<unsigned> brow;
        std::vector<Burst> bursts = ref_bursts(c, &brow);
        const bool inject = !bursts.empty() && rng.below(8) == 0;
        const size_t err_burst = inject ? rng.below(bursts.size()) : bursts.size();

        // references
        ref = host;
        std::vector<std::vector<uint32_t>> rows_in;  // dma_in: expected mw_data elements
        for (unsigned r = 0; r < c.rows; r++) {
            uint32_t a = c.haddr + r * c.stride;
            std::vector<uint32_t> row(N);
            for (int i = 0; i < N; i++) {
                if ((unsigned)i < c.cols) {
                    uint32_t v = 0;
                    for (unsigned b = 0; b < e; b++) v |= (uint32_t)host[a + i * e + b] << (8 * b);
                    row[i] = v;
                } else {
                    row[i] = c.mem == 1 ? 0x80000000u : c.mem == 2 ? 0x8000u : 0u;
                }
                if (c.out && (unsigned)i < c.cols) {
                    uint32_t v = chip[c.mem][(c.row + r) * N + i];
                    for (unsigned b = 0; b < e; b++) ref[a + i * e + b] = (uint8_t)(v >> (8 * b));
                }
            }
            rows_in.push_back(row);
        }

        // drive the command until accepted
        top->cmd_valid_i = 1;
        top->cmd_out_i = c.out;
        top->cmd_mem_i = c.mem;
        top->cmd_rows_i = c.rows;
        top->cmd_haddr_i = c.haddr;
        top->cmd_row_i = c.row;
        top->cmd_cols_i = c.cols;
        top->cmd_stride_i = c.stride;

        // slave state
        struct Pend {
            Burst b;
            uint64_t ready;
            unsigned beat;
            size_t idx;
        };
        std::deque<Pend> rq, awq;
        struct WBeat {
            uint64_t data;
            unsigned strb;
            bool last;
            uint64_t cycle;
        };
        std::deque<WBeat> wq;
        struct BResp {
            uint64_t ready;
            unsigned resp;
        };
        std::deque<BResp> bq;
        size_t next_a = 0, bursts_done = 0;
        unsigned outstanding = 0, rows_written = 0, rows_read = 0;
        bool mr_pend = false;
        unsigned mr_mem = 0, mr_row = 0;
        bool accepted = false, done = false, rvalid = false, bvalid = false;
        uint64_t t_acc = 0, t_done = 0;
        // the previous cycle's master outputs, for the stability rules
        bool p_arv = false, p_awv = false, p_wv = false;
        uint32_t p_ar = 0, p_aw = 0;
        unsigned p_arlen = 0, p_awlen = 0, p_wstrb = 0;
        uint64_t p_wdata = 0;
        bool p_wlast = false;
        uint64_t limit = 200000;

        while (!done && fails == 0 && limit--) {
            // inputs for this cycle (clock low)
            top->clk_i = 0;
            top->m_axi_arready = rng.below(100) < p_ready;
            top->m_axi_awready = rng.below(100) < p_ready;
            top->m_axi_wready = rng.below(100) < p_ready;
            if (!rvalid && !rq.empty() && now >= rq.front().ready && (ideal || rng.below(100) < 70))
                rvalid = true;
            if (rvalid) {
                Pend &p = rq.front();
                uint32_t a = p.b.addr + 8 * p.beat;
                uint64_t d = 0;
                for (int b = 0; b < 8; b++) d |= (uint64_t)host[a + b] << (8 * b);
                top->m_axi_rdata = d;
                top->m_axi_rlast = p.beat + 1 == p.b.len;
                top->m_axi_rresp = (p.idx == err_burst && p.beat == 0) ? 2 : 0;
            } else {
                top->m_axi_rdata = ((uint64_t)rng.u32() << 32) | rng.u32();
                top->m_axi_rlast = rng.below(2);
                top->m_axi_rresp = rng.below(4);
            }
            top->m_axi_rvalid = rvalid;
            if (!bvalid && !bq.empty() && now >= bq.front().ready && (ideal || rng.below(100) < 70))
                bvalid = true;
            top->m_axi_bvalid = bvalid;
            top->m_axi_bresp = bvalid ? bq.front().resp : rng.below(4);
            // the on-chip read port: the row read last cycle, random otherwise
            for (int i = 0; i < N; i++) {
                if (mr_pend && mr_mem == 1) {
                    put_field(top->mr_data_i, 32 * i, 32, chip[1][mr_row * N + i]);
                } else if (mr_pend) {  // bf16 row in the low half, garbage above
                    put_field(top->mr_data_i, 16 * i, 16, chip[mr_mem][mr_row * N + i]);
                    put_field(top->mr_data_i, 16 * N + 16 * i, 16, rng.u32());
                } else {
                    put_field(top->mr_data_i, 32 * i, 32, rng.u32());
                }
            }
            if (accepted) {  // commands offered while busy must not be taken
                top->cmd_valid_i = rng.below(2);
                top->cmd_out_i = rng.below(2);
                top->cmd_rows_i = rng.u32();
                top->cmd_haddr_i = rng.u32();
            }
            top->eval();

            // this cycle's outputs and handshakes
            if (!accepted) {
                if (top->cmd_ready_o) {
                    accepted = true;
                    t_acc = now;
                }
            } else {
                CHECK(top->busy_o == 1, "busy_o low before done_o");
                CHECK(top->cmd_ready_o == 0, "cmd_ready_o high while busy");
            }
            const bool arv = top->m_axi_arvalid, awv = top->m_axi_awvalid, wv = top->m_axi_wvalid;
            if (p_arv) CHECK(arv && top->m_axi_araddr == p_ar && top->m_axi_arlen == p_arlen,
                             "AR dropped or changed before ARREADY");
            if (p_awv) CHECK(awv && top->m_axi_awaddr == p_aw && top->m_axi_awlen == p_awlen,
                             "AW dropped or changed before AWREADY");
            if (p_wv) CHECK(wv && top->m_axi_wdata == p_wdata && top->m_axi_wstrb == p_wstrb &&
                                top->m_axi_wlast == p_wlast,
                            "W dropped or changed before WREADY");
            CHECK(!(arv && c.out) && !(awv && !c.out) && !(wv && !c.out), "wrong direction");
            const bool ar_hs = arv && top->m_axi_arready, aw_hs = awv && top->m_axi_awready;
            const bool w_hs = wv && top->m_axi_wready;
            const bool r_hs = rvalid && top->m_axi_rready, b_hs = bvalid && top->m_axi_bready;
            if (rvalid) CHECK(top->m_axi_rready, "RREADY low while busy with dma_in");
            if (bvalid) CHECK(top->m_axi_bready, "BREADY low while busy with dma_out");
            if (ar_hs || aw_hs) {
                uint32_t a = ar_hs ? top->m_axi_araddr : top->m_axi_awaddr;
                unsigned len = (ar_hs ? top->m_axi_arlen : top->m_axi_awlen) + 1u;
                unsigned size = ar_hs ? top->m_axi_arsize : top->m_axi_awsize;
                unsigned burst = ar_hs ? top->m_axi_arburst : top->m_axi_awburst;
                CHECK(size == 3 && burst == 1, "size %u burst %u", size, burst);
                CHECK(len <= 16 && (a & 7) == 0 && (a & 4095) + 8 * len <= 4096,
                      "burst 0x%x len %u misaligned, too long or crossing 4 KiB", a, len);
                CHECK(next_a < bursts.size() && bursts[next_a].addr == a &&
                          bursts[next_a].len == len,
                      "burst %zu: got 0x%x x%u, want 0x%x x%u", next_a, a, len,
                      next_a < bursts.size() ? bursts[next_a].addr : 0,
                      next_a < bursts.size() ? bursts[next_a].len : 0);
                CHECK(outstanding < 16, "more than 16 bursts outstanding");
                outstanding++;
                if (outstanding > max_out) max_out = outstanding;
                if (len < 16 && (a & 4095) + 8 * len == 4096) ncut++;
                Pend p{{a, len}, now + lat, 0, next_a};
                if (ar_hs) rq.push_back(p);
                else awq.push_back(p);
                next_a++;
            }
            if (top->mw_valid_o) {
                CHECK(!c.out && r_hs, "mw_valid_o without an R beat");
                CHECK(rows_written < c.rows, "more row writes than rows");
                if (rows_written < c.rows) {
                    CHECK(top->mw_mem_o == c.mem && top->mw_row_o == c.row + rows_written,
                          "row write mem %u row %u, want mem %u row %u", top->mw_mem_o,
                          top->mw_row_o, c.mem, c.row + rows_written);
                    const auto &want = rows_in[rows_written];
                    for (int i = 0; i < N; i++) {
                        uint32_t got = c.mem == 1 ? get_field(top->mw_data_o, 32 * i, 32)
                                                  : get_field(top->mw_data_o, 16 * i, 16);
                        CHECK(got == want[i], "row %u element %d: got %x want %x", rows_written,
                              i, got, want[i]);
                        if (c.mem != 1)
                            CHECK(get_field(top->mw_data_o, 16 * N + 16 * i, 16) == 0,
                                  "bf16 row: high half not zero");
                    }
                    if (c.mem != 1) {
                        // keep the image of the chip in step (UB/WMEM rows: 16-bit elements)
                        for (int i = 0; i < N; i++) chip[c.mem][(c.row + rows_written) * N + i] = want[i];
                    } else {
                        for (int i = 0; i < N; i++) chip[1][(c.row + rows_written) * N + i] = want[i];
                    }
                }
                rows_written++;
            }
            const bool mr = top->mr_valid_o;
            if (mr) {
                CHECK(c.out && rows_read < c.rows && top->mr_mem_o == c.mem &&
                          top->mr_row_o == c.row + rows_read,
                      "on-chip read mem %u row %u, want row %u", top->mr_mem_o, top->mr_row_o,
                      c.row + rows_read);
                rows_read++;
            }
            bool done_now = top->done_o;
            if (done_now) {
                CHECK(accepted && now > t_acc, "done_o before acceptance + 1");
                bool err = inject;
                CHECK(top->axi_err_o == err, "axi_err_o %d, want %d", top->axi_err_o, err);
                t_done = now;
            }
            // remember for the next cycle's stability checks
            p_arv = arv && !ar_hs;
            p_awv = awv && !aw_hs;
            p_wv = wv && !w_hs;
            p_ar = top->m_axi_araddr;
            p_aw = top->m_axi_awaddr;
            p_arlen = top->m_axi_arlen;
            p_awlen = top->m_axi_awlen;
            p_wdata = top->m_axi_wdata;
            p_wstrb = top->m_axi_wstrb;
            p_wlast = top->m_axi_wlast;
            // slave side effects
            if (r_hs) {
                Pend &p = rq.front();
                nbeats++;
                if (++p.beat == p.b.len) {
                    rq.pop_front();
                    outstanding--;
                    bursts_done++;
                }
                rvalid = false;
            }
            if (w_hs) {
                wq.push_back({top->m_axi_wdata, top->m_axi_wstrb, (bool)top->m_axi_wlast, now});
                nbeats++;
            }
            while (!awq.empty() && wq.size() >= awq.front().b.len) {
                Pend p = awq.front();
                awq.pop_front();
                uint64_t last = p.ready - lat;  // the AW handshake cycle
                for (unsigned k = 0; k < p.b.len; k++) {
                    WBeat w = wq.front();
                    wq.pop_front();
                    CHECK(w.last == (k + 1 == p.b.len), "WLAST %d on beat %u of %u", w.last, k,
                          p.b.len);
                    for (int b = 0; b < 8; b++)
                        if (w.strb >> b & 1) host[p.b.addr + 8 * k + b] = (uint8_t)(w.data >> (8 * b));
                    if (w.cycle > last) last = w.cycle;
                }
                uint64_t ready = last + lat;
                if (!bq.empty() && ready <= bq.back().ready) ready = bq.back().ready + 1;
                bq.push_back({ready, p.idx == err_burst ? 2u : 0u});
            }
            if (b_hs) {
                bq.pop_front();
                outstanding--;
                bursts_done++;
                bvalid = false;
            }
            mr_pend = mr;
            if (mr) {
                mr_mem = top->mr_mem_o;
                mr_row = top->mr_row_o;
            }
            // clock edge
            top->clk_i = 1;
            top->eval();
            now++;
            if (done_now) done = true;
        }
        CHECK(done, "command %llu never completed", (unsigned long long)ci);
        CHECK(bursts_done == bursts.size() && next_a == bursts.size(), "bursts %zu/%zu of %zu",
              next_a, bursts_done, bursts.size());
        CHECK(wq.empty(), "W beats left over");
        if (!c.out) CHECK(rows_written == c.rows, "rows written %u of %u", rows_written, c.rows);
        if (c.out) {
            CHECK(rows_read == c.rows, "rows read %u of %u", rows_read, c.rows);
            bool same = host == ref;
            if (!same) {
                for (uint32_t a = 0; a < HOST; a++)
                    if (host[a] != ref[a]) {
                        CHECK(false, "host byte 0x%x: got %02x want %02x (haddr 0x%x stride %u rows %u cols %u mem %u)",
                              a, host[a], ref[a], c.haddr, c.stride, c.rows, c.cols, c.mem);
                        break;
                    }
            }
        }
        // the timing docs/isa.md gives, for an ideal slave
        if (ideal && done) {
            uint64_t want;
            if (c.rows == 0) {
                want = t_acc + 1;
            } else if (!c.out) {
                std::vector<uint64_t> ar(bursts.size()), lastb(bursts.size());
                for (size_t j = 0; j < bursts.size(); j++) {
                    ar[j] = j ? ar[j - 1] + 1 : t_acc + 1;
                    if (j >= 16 && lastb[j - 16] + 1 > ar[j]) ar[j] = lastb[j - 16] + 1;
                    uint64_t first = ar[j] + lat;
                    if (j && lastb[j - 1] + 1 > first) first = lastb[j - 1] + 1;
                    lastb[j] = first + bursts[j].len - 1;
                }
                want = lastb.back();
            } else {
                std::vector<uint64_t> aw(bursts.size()), b(bursts.size());
                uint64_t w = t_acc + 2;  // W beats back to back from acceptance + 2
                for (size_t j = 0; j < bursts.size(); j++) {
                    aw[j] = j ? aw[j - 1] + 1 : t_acc + 1;
                    if (j >= 16 && b[j - 16] + 1 > aw[j]) aw[j] = b[j - 16] + 1;
                    w += bursts[j].len;
                    uint64_t lastw = w - 1;
                    b[j] = (lastw > aw[j] ? lastw : aw[j]) + lat;
                    if (j && b[j - 1] + 1 > b[j]) b[j] = b[j - 1] + 1;
                }
                want = b.back();
            }
            CHECK(t_done == want, "ideal slave (latency %u): done in cycle %llu, docs/isa.md timing says %llu (out %d rows %u)",
                  lat, (unsigned long long)(t_done - t_acc), (unsigned long long)(want - t_acc), c.out, c.rows);
            nideal++;
        }
        ncmds++;
        // a few idle cycles
        unsigned idle = rng.below(3);
        top->cmd_valid_i = 0;
        for (unsigned k = 0; k < idle; k++) {
            top->clk_i = 0;
            top->eval();
            CHECK(top->busy_o == 0 && top->cmd_ready_o == 1 && !top->m_axi_arvalid &&
                      !top->m_axi_awvalid && !top->m_axi_wvalid && !top->mw_valid_o &&
                      !top->mr_valid_o && !top->done_o,
                  "activity while idle");
            top->clk_i = 1;
            top->eval();
            now++;
        }
    }
    top->final();
    printf("tb_core_dma N=%d: %llu commands (%llu with the ideal slave, timing checked), %llu beats,"
           " %llu bursts ending at 4 KiB, at most %u outstanding, %llu cycles: %s\n",
           N, (unsigned long long)ncmds, (unsigned long long)nideal, (unsigned long long)nbeats,
           (unsigned long long)ncut, max_out, (unsigned long long)now, fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
