// SPDX-License-Identifier: Apache-2.0
// The host memory of a core in co-simulation (sim/core_tb.cpp, and every core of
// sim/board_tb.cpp): an AXI4 slave on the core's m_axi_* port (docs/isa.md "Co-simulation":
// a fixed response latency, bursts answered in order, DECERR outside the image, optional
// random back-pressure and extra latency with --stall) and its assertion layer (valid held
// until ready with a stable payload, size log2(beat bytes), INCR, <= 16 beats, aligned to the
// beat, no 4 KiB crossing, WLAST on the last beat only, a read beat overlapping a dma_in row,
// a strobed write byte inside a dma_out row, nothing outstanding after the halt). Beats of
// B/8 bytes for the core's B-bit data master (gen --axi-data-bits, docs/isa.md "AXI4 master
// (data)").
#ifndef TPU_SIM_AXI_HOST_MEM_H
#define TPU_SIM_AXI_HOST_MEM_H

#include <array>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <vector>

#include "tb_errors.h"
#include "tb_rng.h"
#include "tpu/isa.h"

namespace tb {

// A beat's data, up to 512 bits: 32 bits a word, word 0 (bytes 0..3) first.
using BeatWords = std::array<uint32_t, 16>;

// What the harness drives into a core's AXI4 master port, and what it samples from it.
struct AxiIn {
    bool awready = false, wready = false, bvalid = false, arready = false, rvalid = false,
         rlast = false;
    uint32_t bresp = 0, rresp = 0;
    BeatWords rdata{};
};
struct AxiOut {
    uint64_t awaddr = 0, araddr = 0, wstrb = 0;
    BeatWords wdata{};
    uint32_t awlen = 0, awsize = 0, awburst = 0, arlen = 0, arsize = 0, arburst = 0;
    bool awvalid = false, wvalid = false, wlast = false, bready = false, arvalid = false,
         rready = false;
};

class AxiMem {
public:
    // core: the core's index in the messages (-1: none); beat: bytes per beat (8, 16, 32 or
    // 64); rng: the stalls' random numbers; err: the checker's log
    AxiMem(int core, uint8_t *mem, uint64_t bytes, unsigned beat, unsigned latency,
           unsigned stall, Rng *rng, Errors *err)
        : core_(core), mem_(mem), bytes_(bytes), beat_(beat), latency_(latency), stall_(stall),
          rng_(rng), err_(err)
    {
        while ((1u << size_) < beat_)
            size_++;
    }

    // core_tb --inject-axi: show the checker, once, a wrong WLAST, an AR len of 17 beats, or
    // an AR payload changed while waiting (the DUT sees nothing: proves that the checks fire)
    void inject(bool wlast, bool len, bool hold)
    {
        inj_wlast_ = wlast;
        inj_len_ = len;
        inj_hold_ = hold;
    }

    // The bytes of host memory the program's DMA may touch: every dma_in/dma_out whose host
    // address has no index register; one with a register (docs/isa.md "Loops") adds its
    // resolved rows when it dispatches (dispatched(), before any of its beats).
    void footprint(const tpu_insn_t *prog, size_t count)
    {
        read_beat_.assign(bytes_ / beat_ + 1, false);
        write_byte_.assign(bytes_, false);
        for (size_t i = 0; i < count; i++) {
            tpu_dinsn_t d;
            tpu_insn_decode(prog[i], &d);
            if (d.xsel[0] == 0)
                add_dma(d);
        }
    }
    // A dispatched instruction, resolved (the tr_disp_insn_o trace port).
    void dispatched(const uint32_t w[4])
    {
        tpu_insn_t raw = { { w[0], w[1], w[2], w[3] } };
        tpu_dinsn_t d;
        tpu_insn_decode(raw, &d);
        add_dma(d);
    }
    void add_dma(const tpu_dinsn_t &d)
    {
        if ((d.opcode != TPU_OP_DMA_IN && d.opcode != TPU_OP_DMA_OUT) || d.mem > 2)
            return;
        const uint64_t e = tpu_mem_elem_bytes(d.mem);
        for (uint64_t r = 0; r < d.n; r++) {
            const uint64_t lo = d.addr + r * static_cast<uint64_t>(d.stride);
            const uint64_t hi = lo + d.cols * e; // exclusive
            if (d.opcode == TPU_OP_DMA_IN) {
                for (uint64_t b = lo / beat_; b * beat_ < hi && b < read_beat_.size(); b++)
                    read_beat_[b] = true;
            } else {
                for (uint64_t b = lo; b < hi && b < bytes_; b++)
                    write_byte_[b] = true;
            }
        }
    }

    // Before the edge: what the slave drives in this cycle.
    void drive(uint64_t cycle, AxiIn *in)
    {
        in->arready = !rng_->pct(stall_);
        in->awready = !rng_->pct(stall_);
        in->wready = !rng_->pct(stall_);
        if (!rvalid_ && !rq_.empty() && rq_.front().ready_cycle <= cycle && !rng_->pct(stall_)) {
            const ReadBurst &rb = rq_.front();
            const uint64_t a = rb.addr + uint64_t{ beat_ } * rb.beat;
            rvalid_ = true;
            rlast_ = rb.beat == rb.len;
            rdata_.fill(0);
            if (a + beat_ <= bytes_) {
                for (unsigned k = 0; k < beat_; k++)
                    rdata_[k / 4] |= static_cast<uint32_t>(mem_[a + k]) << (8 * (k % 4));
                rresp_ = 0;
            } else {
                rresp_ = 3; // DECERR outside host memory, data 0 as the model's host
            }
        }
        in->rvalid = rvalid_;
        if (rvalid_) {
            in->rdata = rdata_;
        } else {
            in->rdata.fill(0);
            for (unsigned j = 0; j < beat_ / 4; j++)
                in->rdata[j] = static_cast<uint32_t>(rng_->next());
        }
        in->rresp = rvalid_ ? rresp_ : 0;
        in->rlast = rvalid_ && rlast_;
        if (!bvalid_ && !bq_.empty() && bq_.front().ready_cycle <= cycle && !rng_->pct(stall_)) {
            bvalid_ = true;
            bresp_ = bq_.front().resp;
        }
        in->bvalid = bvalid_;
        in->bresp = bvalid_ ? bresp_ : 0;
        in_ = *in;
    }

    // Just before the edge: the DUT's outputs as the edge takes them (checks, new bursts).
    void sample(uint64_t cycle, const AxiOut &o)
    {
        Payload ar{ o.araddr, o.arlen, o.arsize, o.arburst };
        if (inj_hold_ && s_ar_.valid && !s_ar_.ready) {
            ar[0] ^= 8; // as if the address changed while waiting for arready
            inj_hold_ = false;
        }
        hold(cycle, s_ar_, o.arvalid, in_.arready, ar, "m_axi AR");
        hold(cycle, s_aw_, o.awvalid, in_.awready, { o.awaddr, o.awlen, o.awsize, o.awburst },
             "m_axi AW");
        Payload w{};
        for (unsigned j = 0; j < beat_ / 4; j++)
            w[j] = o.wdata[j];
        w[16] = o.wstrb;
        w[17] = o.wlast;
        hold(cycle, s_w_, o.wvalid, in_.wready, w, "m_axi W");
        ar_ = o.arvalid && in_.arready;
        r_ = in_.rvalid && o.rready;
        b_ = in_.bvalid && o.bready;
        if (ar_) {
            burst(cycle, "m_axi AR", o.araddr, inj_len_ ? 16u : o.arlen, o.arsize, o.arburst);
            inj_len_ = false;
            for (unsigned k = 0; k <= o.arlen; k++) {
                const uint64_t beat = o.araddr / beat_ + k;
                if (beat >= read_beat_.size() || !read_beat_[beat])
                    (*err_)(core_, cycle,
                            "m_axi AR: beat at 0x%" PRIx64 " reads bytes no dma_in row asks",
                            beat_ * beat);
            }
            const uint64_t extra =
                rng_->pct(stall_) ? rng_->next() % (4u * latency_ + 1) : 0;
            uint64_t rc = cycle + latency_ + extra;
            if (rc < last_r_ready_)
                rc = last_r_ready_;
            last_r_ready_ = rc;
            rq_.push_back({ o.araddr, o.arlen, 0, rc });
        }
        if (o.awvalid && in_.awready) {
            burst(cycle, "m_axi AW", o.awaddr, o.awlen, o.awsize, o.awburst);
            awq_.push_back({ o.awaddr, o.awlen, 0, false });
        }
        if (o.wvalid && in_.wready)
            wq_.push_back({ o.wdata, o.wstrb, o.wlast });
    }

    // After the edge: retire what the edge took.
    void update(uint64_t cycle)
    {
        if (r_) {
            ReadBurst &rb = rq_.front();
            rvalid_ = false;
            if (++rb.beat > rb.len)
                rq_.pop_front();
        }
        if (b_) {
            bvalid_ = false;
            bq_.pop_front();
        }
        r_ = b_ = ar_ = false;
        // W beats meet their AW (a beat may come before its address: AXI4 allows it)
        while (!awq_.empty() && !wq_.empty()) {
            WriteBurst &wb = awq_.front();
            const WBeat wbt = wq_.front();
            wq_.pop_front();
            const uint64_t a = wb.addr + uint64_t{ beat_ } * wb.beat;
            const bool last_seen = wbt.last != inj_wlast_; // (inject: the first beat's inverted)
            if (last_seen != (wb.beat == wb.len))
                (*err_)(core_, cycle,
                        "m_axi W: wlast %d on beat %u of a %u-beat burst at 0x%" PRIx64,
                        last_seen ? 1 : 0, wb.beat, wb.len + 1, wb.addr);
            if (a + beat_ > bytes_) {
                wb.err = true;
            } else {
                for (unsigned k = 0; k < beat_; k++) {
                    if (!(wbt.strb >> k & 1))
                        continue;
                    if (!write_byte_[a + k])
                        (*err_)(core_, cycle,
                                "m_axi W: byte 0x%" PRIx64
                                " is written but no dma_out row covers it",
                                a + k);
                    mem_[a + k] = static_cast<uint8_t>(wbt.data[k / 4] >> (8 * (k % 4)));
                }
            }
            inj_wlast_ = false;
            if (++wb.beat > wb.len) {
                const uint64_t extra =
                    rng_->pct(stall_) ? rng_->next() % (4u * latency_ + 1) : 0;
                uint64_t rc = cycle - 1 + latency_ + extra;
                if (rc < last_b_ready_)
                    rc = last_b_ready_;
                last_b_ready_ = rc;
                bq_.push_back({ rc, wb.err ? 3u : 0u });
                awq_.pop_front();
            }
        }
    }

    bool idle() const { return rq_.empty() && awq_.empty() && wq_.empty() && bq_.empty(); }
    void report_outstanding(uint64_t cycle)
    {
        if (!idle())
            (*err_)(core_, cycle,
                    "AXI traffic still outstanding after the halt (%zu R bursts, %zu AW, %zu W, "
                    "%zu B)",
                    rq_.size(), awq_.size(), wq_.size(), bq_.size());
    }

private:
    using Payload = std::array<uint64_t, 20>; // W: 16 data words, strobes, last
    struct Chan {
        bool valid = false, ready = false;
        Payload payload{};
    };
    struct ReadBurst {
        uint64_t addr;
        unsigned len, beat;
        uint64_t ready_cycle;
    };
    struct WriteBurst {
        uint64_t addr;
        unsigned len, beat;
        bool err;
    };
    struct WBeat {
        BeatWords data;
        uint64_t strb;
        bool last;
    };
    struct BResp {
        uint64_t ready_cycle;
        unsigned resp;
    };

    void hold(uint64_t cycle, Chan &prev, bool valid, bool ready, Payload const &p,
              const char *name)
    {
        if (prev.valid && !prev.ready) {
            if (!valid)
                (*err_)(core_, cycle, "%s: valid dropped before ready", name);
            else if (p != prev.payload)
                (*err_)(core_, cycle, "%s: payload changed while valid and not ready", name);
        }
        prev.valid = valid;
        prev.ready = ready;
        prev.payload = p;
    }
    void burst(uint64_t cycle, const char *ch, uint64_t addr, unsigned len, unsigned size,
               unsigned type)
    {
        if (size != size_)
            (*err_)(core_, cycle, "%s: size %u, expected %u (%u bytes)", ch, size, size_, beat_);
        if (type != 1)
            (*err_)(core_, cycle, "%s: burst %u, expected 1 (INCR)", ch, type);
        if (len > 15)
            (*err_)(core_, cycle, "%s: len %u: more than 16 beats", ch, len);
        if (addr % beat_ != 0)
            (*err_)(core_, cycle, "%s: address 0x%" PRIx64 " not %u-byte aligned", ch, addr,
                    beat_);
        if ((addr & 0xFFFu) + beat_ * (len + 1u) > 4096u)
            (*err_)(core_, cycle, "%s: burst at 0x%" PRIx64 " of %u beats crosses a 4 KiB boundary",
                    ch, addr, len + 1);
    }

    int core_;
    uint8_t *mem_;
    uint64_t bytes_;
    unsigned beat_, size_ = 0, latency_, stall_;
    Rng *rng_;
    Errors *err_;
    std::vector<bool> read_beat_, write_byte_;
    std::deque<ReadBurst> rq_;
    std::deque<WriteBurst> awq_;
    std::deque<WBeat> wq_;
    std::deque<BResp> bq_;
    bool rvalid_ = false, bvalid_ = false, rlast_ = false;
    BeatWords rdata_{};
    unsigned rresp_ = 0, bresp_ = 0;
    uint64_t last_r_ready_ = 0, last_b_ready_ = 0;
    AxiIn in_;
    bool ar_ = false, r_ = false, b_ = false;
    bool inj_wlast_ = false, inj_len_ = false, inj_hold_ = false;
    Chan s_ar_, s_aw_, s_w_;
};

} // namespace tb

#endif
