/* SPDX-License-Identifier: Apache-2.0 */
/* The prediction of one training step (train.h, tpu-compile --train --report-only): the step
   program runs once on the board model -- every core from the model's initial weights (one
   host image shared by all), an all-zero batch with label 0 (token id 0 for an embedding) -- and the model's per-instruction
   completion cycles are attributed to the layer and phase each instruction was emitted for.
   The timing does not depend on the data (no instruction's time does), so this is the step's
   exact cycle count on the model, and the RTL's (test-train compares them). With micro-steps
   (t->micro > 1) the first part runs once and counts micro times, then the update part once. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tpu/board.h"
#include "tpuc/train.h"
#include "tpuc_internal.h"

/* Useful multiply-accumulates per core of layer l in one step: the forward pass, dX (when a
   layer before needs it) and dW; the recomputed forward of a Conv stage's backward is not
   useful work, and an embedding's one-hot products are a lookup (0). */
uint64_t tpuc_train_layer_macs(const tpuc_train_t *t, int l)
{
    const tpuc_tlayer_t *ly = &t->layer[l];
    const uint64_t b = (uint64_t)t->batch * t->micro;
    if (ly->embed) return 0;
    if (ly->conv) {
        const tpuc_tconv_t *c = &t->conv[ly->conv - 1];
        const uint64_t m = (uint64_t)(c->ho * c->wo) * (uint64_t)ly->k * (uint64_t)ly->o * b;
        return m * (c->dx ? 3u : 2u);
    }
    const uint64_t m = b * (uint64_t)ly->k * (uint64_t)ly->o;
    return m * (l > 0 && !t->layer[l - 1].embed ? 3u : 2u);
}

int tpuc_train_report(const tpuc_train_t *t, const tpuc_graph_t *g, const tpuc_hw_t *hw,
                      tpuc_train_report_t *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    const unsigned C = t->cores;
    tpu_board_cfg_t bc;
    memset(&bc, 0, sizeof bc);
    bc.rows = hw->topo_rows ? hw->topo_rows : 1;
    bc.cols = hw->topo_cols ? hw->topo_cols : C;
    bc.link_latency = TPU_BOARD_LINK_LATENCY_DEFAULT;
    bc.core.geom = hw->geom;
    bc.core.axi_data_bits = hw->axi_data_bits;
    uint64_t *done = calloc(t->prog.ninsns + 1, sizeof *done);
    uint64_t *mxu = calloc(t->prog.ninsns + 1, sizeof *mxu);
    /* a program longer than IMEM (tpu-compile --report-only of a large model) runs in segments
       of at most SEG instructions cut right before an `lw` (or where no matmul waits for a
       weight load across the cut), each with the part's halt (the
       on-chip memories persist between the board's runs; the weight banks restart): the
       drain is counted once per segment and reloading IMEM is not counted: an estimate */
    size_t SEG = 32767;
    const char *sv = getenv("TPUC_REPORT_SEGMENT"); /* shorter segments, to check the estimate */
    if (sv && atol(sv) >= 64 && (size_t)atol(sv) < SEG) SEG = (size_t)atol(sv);
    /* (a looped program, loops.c, is never cut: it holds at most 32768 instructions) */
    const int segmented = !t->prog.orig && (t->prog.ninsns > hw->geom.imem_insns || SEG < 32767);
    uint64_t *sd = segmented ? calloc(SEG + 2, sizeof *sd) : NULL;
    uint64_t *sm = segmented ? calloc(SEG + 2, sizeof *sm) : NULL;
    tpu_insn_t *seg = segmented ? malloc((SEG + 2) * sizeof *seg) : NULL;
    float *x = calloc((size_t)t->batch * (size_t)t->in_elems + 1, sizeof *x);
    int32_t *lab = calloc((size_t)t->batch + 1, sizeof *lab);
    uint8_t *host[TPU_BOARD_CORES_MAX] = {0};
    tpu_board_t *board = NULL;
    int rc = -1;
    if (!done || !mxu || !x || !lab || C > TPU_BOARD_CORES_MAX || (segmented && (!sd || !sm || !seg))) {
        tpuc_err(err, errlen, "out of memory");
        goto out;
    }
    bc.core.insn_done = segmented ? sd : done;
    bc.core.insn_mxu = segmented ? sm : mxu;
    if (segmented) bc.core.geom.imem_insns = (unsigned)SEG + 1;
    /* a looped program larger than the IMEM (--report-only predicts it anyway): the model
       runs it whole in an IMEM that holds it (no cycle depends on the IMEM's size) */
    if (!segmented && t->prog.ninsns > bc.core.geom.imem_insns)
        bc.core.geom.imem_insns = (unsigned)t->prog.ninsns;
    board = tpu_board_new(&bc);
    if (!board) {
        tpuc_err(err, errlen, "the board model refused the configuration (%u cores)", C);
        goto out;
    }
    tpu_board_job_t job[TPU_BOARD_CORES_MAX];
    tpu_core_result_t res[TPU_BOARD_CORES_MAX];
    /* one host image for every core: no instruction's time depends on the data, so the cores
       may as well read and write the same bytes (the values after the update are not those
       of a real step, the cycles are; test-train compares them with tpu-train's separate
       images); a VGG-19 step needs ~2.6 GB of host image per core */
    host[0] = calloc(1, (size_t)t->host_bytes);
    if (!host[0]) {
        tpuc_err(err, errlen, "out of memory (a host image of %llu MiB)",
                 (unsigned long long)(t->host_bytes >> 20));
        goto out;
    }
    tpuc_train_host_init(t, g, host[0]);
    tpuc_train_host_batch(t, host[0], x, lab);
    for (unsigned i = 0; i < C; i++) {
        job[i].prog = t->prog.insns;
        job[i].count = t->prog.ninsns;
        job[i].pc_start = 0;
        job[i].host = host[0];
        job[i].host_bytes = t->host_bytes;
        job[i].trace = NULL;
    }
    char msg[1024] = "";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int part = 0; part < (t->u_pc ? 2 : 1); part++) {
        const uint64_t times = part || !t->u_pc ? 1u : t->micro;
        const size_t lo = part ? t->u_pc : 0, hi = !part && t->u_pc ? t->u_pc : t->prog.ninsns;
        const size_t body = hi - 1; /* the part's halt */
        uint64_t base_c = 0, base_m = 0;
        size_t start = lo;
        for (int first = 1; first || start < body; first = 0) {
            size_t end = body;
            if (segmented) {
                if (body - start > SEG) {
                    /* before an lw in the segment's second half; else (the update part's
                       long runs of DMA and VPU passes have none) before a DMA or VPU
                       instruction: no matmul waits for a weight bank across the cut */
                    end = start + SEG;
                    while (end > start + SEG / 2 && (t->prog.insns[end].w[0] & 0xFFu) != TPU_OP_LW) end--;
                    if (end == start + SEG / 2) {
                        end = start + SEG;
                        while (end > start + 1) {
                            const unsigned op = t->prog.insns[end].w[0] & 0xFFu, pop = t->prog.insns[end - 1].w[0] & 0xFFu;
                            if (op != TPU_OP_MATMUL && op != TPU_OP_LW && pop != TPU_OP_LW) break;
                            end--;
                        }
                    }
                }
                memcpy(seg, t->prog.insns + start, (end - start) * sizeof *seg);
                seg[end - start] = t->prog.insns[body];
            }
            for (unsigned i = 0; i < C; i++) {
                job[i].prog = segmented ? seg : t->prog.insns;
                job[i].count = segmented ? end - start + 1 : t->prog.ninsns;
                job[i].pc_start = segmented ? 0u : (unsigned)lo;
            }
            int brc = tpu_board_run(board, job, res, msg, sizeof msg);
            if (brc != TPU_OK) {
                tpuc_err(err, errlen, "the board model failed (status %d) %s", brc, msg);
                goto out;
            }
            uint64_t cyc = 0, mb = 0;
            for (unsigned i = 0; i < C; i++) {
                if (res[i].status != TPU_CORE_DONE) {
                    tpuc_err(err, errlen, "core %u stopped: status %d, error %d at pc %u", i,
                             (int)res[i].status, res[i].err_code, res[i].err_pc);
                    goto out;
                }
                if (res[i].counters[TPU_CNT_CYCLES] > cyc) cyc = res[i].counters[TPU_CNT_CYCLES];
                if (res[i].counters[TPU_CNT_MXU_BUSY] > mb) mb = res[i].counters[TPU_CNT_MXU_BUSY];
                r->mxu_busy += times * res[i].counters[TPU_CNT_MXU_BUSY];
                r->unit_busy[0] += times * res[i].counters[TPU_CNT_MXU_BUSY];
                r->unit_busy[1] += times * res[i].counters[TPU_CNT_DMA_BUSY];
                r->unit_busy[2] += times * res[i].counters[TPU_CNT_VPU_BUSY];
                r->unit_busy[3] += times * res[i].counters[TPU_CNT_NET_BUSY];
            }
            if (segmented)
                for (size_t k = 0; k < end - start; k++) {
                    done[start + k] = sd[k] ? base_c + sd[k] : 0;
                    mxu[start + k] = base_m + sm[k];
                }
            base_c += cyc;
            base_m += mb;
            r->cycles += times * cyc;
            if (!part) r->segments++;
            start = end;
        }
        if (segmented) { /* the part's halt: its drain ends the part */
            done[body] = base_c;
            mxu[body] = base_m;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    /* a collective has no completion record of its own: its cycles land on the next
       instruction, which is in the same layer and phase; the update part's cycles count from
       its own start, the first part's micro times */
    uint64_t prev = 0, pm = 0;
    for (size_t pc = 0; pc < t->prog.ninsns && pc < t->nphase; pc++) {
        if (t->u_pc && pc == t->u_pc) prev = pm = 0;
        if (!done[pc]) continue;
        const int ph = t->phase[pc], l = t->layer_of[pc];
        const uint64_t times = t->u_pc && pc < t->u_pc ? t->micro : 1u;
        const uint64_t dc = (done[pc] > prev ? done[pc] - prev : 0) * times;
        const uint64_t dm = (mxu[pc] > pm ? mxu[pc] - pm : 0) * times;
        if (done[pc] > prev) prev = done[pc];
        if (mxu[pc] > pm) pm = mxu[pc];
        r->ph_cycles[ph] += dc;
        r->ph_busy[ph] += dm;
        if (l < t->nlayers) {
            r->ly_cycles[l][ph] += dc;
            r->ly_busy[l] += dm;
        } else {
            r->other_cycles += dc;
        }
    }
    for (int l = 0; l < t->nlayers; l++) r->ly_macs[l] = tpuc_train_layer_macs(t, l);
    rc = 0;
out:
    free(host[0]);
    if (board) tpu_board_free(board);
    free(done); free(mxu); free(x); free(lab); free(sd); free(sm); free(seg);
    return rc;
}

static const char *layer_kind(const tpuc_train_t *t, int l)
{
    const tpuc_tlayer_t *ly = &t->layer[l];
    return ly->embed ? "Embedding" : ly->conv ? "Conv" : "Gemm";
}

static const char *opt_name(const tpuc_train_t *t)
{
    return t->opts.optimizer == TPUC_OPT_ADAM ? "adam" : t->opts.momentum != 0.0 ? "sgd-momentum" : "sgd";
}

void tpuc_train_report_text(const tpuc_train_t *t, const tpuc_hw_t *hw,
                            const tpuc_train_report_t *r, FILE *f)
{
    const double n2 = (double)t->n * (double)t->n;
    const double f_hz = (double)(hw->freq_mhz ? hw->freq_mhz : 100) * 1e6;
    const uint64_t B = (uint64_t)t->batch * t->cores * t->micro;
    char per[64] = "";
    if (t->micro > 1) snprintf(per, sizeof per, " (%u micro-steps of %ld)", t->micro, t->batch);
    fprintf(f, "training step report: N = %u, %u core(s), batch %llu = %u x %ld per core%s, %s, "
            "%zu instructions; predicted on the board model (exact for the model and the RTL)\n",
            t->n, t->cores, (unsigned long long)B, t->cores, t->batch * (long)t->micro, per,
            opt_name(t), t->prog.ninsns);
    fprintf(f, "%-28s %-9s %12s %12s %14s %14s %7s\n", "layer", "kind", "forward", "backward",
            "allred+update", "MACs/core", "MXU%");
    for (int l = 0; l < t->nlayers; l++) {
        const uint64_t *c = r->ly_cycles[l];
        const uint64_t cyc = c[0] + c[1] + c[2] + c[3];
        fprintf(f, "%-28.28s %-9s %12llu %12llu %14llu %14llu %7.2f\n", t->layer[l].name,
                layer_kind(t, l), (unsigned long long)c[TPUC_PH_FORWARD],
                (unsigned long long)c[TPUC_PH_BACKWARD], (unsigned long long)c[TPUC_PH_UPDATE],
                (unsigned long long)r->ly_macs[l],
                cyc ? 100.0 * (double)r->ly_macs[l] / (n2 * (double)cyc) : 0.0);
    }
    fprintf(f, "%-28s %-9s %12llu cycles: the constants, the loss, the halt\n",
            "(outside the layers)", "", (unsigned long long)r->other_cycles);
    uint64_t macs = 0;
    for (int l = 0; l < t->nlayers; l++) macs += r->ly_macs[l];
    const double ms = (double)r->cycles / f_hz * 1e3;
    fprintf(f, "by phase:");
    for (int ph = 0; ph < TPUC_PH_COUNT; ph++)
        fprintf(f, "%s %s %llu cycles (MXU busy %.1f%%)", ph ? "," : "", tpuc_train_phase_name(ph),
                (unsigned long long)r->ph_cycles[ph],
                r->ph_cycles[ph] ? 100.0 * (double)r->ph_busy[ph] / (double)r->ph_cycles[ph] : 0.0);
    fprintf(f, "\ntotal: %llu cycles per step (the slowest core) = %.3f ms at %u MHz: %.1f steps/s, "
            "%.0f examples/s; MXU utilisation %.2f %% (useful MACs / (N^2 x cycles)), busy %.1f %%; "
            "the model ran it in %.2f s on the host\n",
            (unsigned long long)r->cycles, ms, hw->freq_mhz ? hw->freq_mhz : 100, 1e3 / ms,
            1e3 / ms * (double)B, r->cycles ? 100.0 * (double)macs / (n2 * (double)r->cycles) : 0.0,
            r->cycles ? 100.0 * (double)r->mxu_busy / ((double)t->cores * (double)r->cycles) : 0.0,
            r->wall_s);
    if (r->segments > 1)
        fprintf(f, "estimate: the step (%zu instructions; IMEM holds %u) ran on the model in %zu "
                "segments (of its first part) cut before an lw or between DMA/VPU work, each ending in halt (the drain "
                "counted per segment, reloading IMEM not counted)\n", t->prog.ninsns,
                hw->geom.imem_insns, r->segments);
    static const char *const un[4] = {"MXU", "DMA", "VPU", "links (collectives)"};
    fprintf(f, "units busy (mean over the cores, of the step's cycles):");
    int top = 0;
    for (int u = 0; u < 4; u++) {
        if (r->unit_busy[u] > r->unit_busy[top]) top = u;
        fprintf(f, "%s %s %.1f %%", u ? "," : "", un[u],
                r->cycles ? 100.0 * (double)r->unit_busy[u] / ((double)t->cores * (double)r->cycles) : 0.0);
    }
    fprintf(f, "; the busiest: %s\n", un[top]);
}

void tpuc_train_report_json(const tpuc_train_t *t, const tpuc_hw_t *hw,
                            const tpuc_train_report_t *r, FILE *f)
{
    const double n2 = (double)t->n * (double)t->n;
    const unsigned mhz = hw->freq_mhz ? hw->freq_mhz : 100;
    uint64_t macs = 0;
    for (int l = 0; l < t->nlayers; l++) macs += r->ly_macs[l];
    fprintf(f, "{\n  \"mode\": \"training step\",\n  \"mxu\": %u,\n  \"cores\": %u,\n  \"batch_per_core\": %ld,\n"
            "  \"micro_steps\": %u,\n  \"optimizer\": \"%s\",\n  \"instructions\": %zu,\n  \"freq_mhz\": %u,\n  \"layers\": [\n",
            t->n, t->cores, t->batch * (long)t->micro, t->micro, opt_name(t), t->prog.ninsns, mhz);
    for (int l = 0; l < t->nlayers; l++) {
        const uint64_t *c = r->ly_cycles[l];
        const uint64_t cyc = c[0] + c[1] + c[2] + c[3];
        fprintf(f, "    {\"name\": ");
        tpuc_json_str(f, t->layer[l].name);
        fprintf(f, ", \"kind\": \"%s\", \"forward_cycles\": %llu, \"backward_cycles\": %llu, "
                "\"allreduce_update_cycles\": %llu, \"macs_per_core\": %llu, \"mxu_util\": %.6f}%s\n",
                layer_kind(t, l), (unsigned long long)c[TPUC_PH_FORWARD],
                (unsigned long long)c[TPUC_PH_BACKWARD], (unsigned long long)c[TPUC_PH_UPDATE],
                (unsigned long long)r->ly_macs[l],
                cyc ? (double)r->ly_macs[l] / (n2 * (double)cyc) : 0.0, l + 1 < t->nlayers ? "," : "");
    }
    fprintf(f, "  ],\n  \"phases\": {");
    for (int ph = 0; ph < TPUC_PH_COUNT; ph++)
        fprintf(f, "%s\"%s\": %llu", ph ? ", " : "", tpuc_train_phase_name(ph), (unsigned long long)r->ph_cycles[ph]);
    const double ms = (double)r->cycles / ((double)mhz * 1e3);
    fprintf(f, "},\n  \"other_cycles\": %llu,\n  \"cycles_per_step\": %llu,\n  \"ms_per_step\": %.6f,\n"
            "  \"examples_per_s\": %.3f,\n  \"mxu_util\": %.6f,\n  \"mxu_busy\": %.6f,\n"
            "  \"dma_busy\": %.6f,\n  \"vpu_busy\": %.6f,\n  \"net_busy\": %.6f\n}\n",
            (unsigned long long)r->other_cycles, (unsigned long long)r->cycles, ms,
            1e3 / ms * (double)t->batch * (double)t->cores * (double)t->micro,
            r->cycles ? (double)macs / (n2 * (double)r->cycles) : 0.0,
            r->cycles ? (double)r->mxu_busy / ((double)t->cores * (double)r->cycles) : 0.0,
            r->cycles ? (double)r->unit_busy[1] / ((double)t->cores * (double)r->cycles) : 0.0,
            r->cycles ? (double)r->unit_busy[2] / ((double)t->cores * (double)r->cycles) : 0.0,
            r->cycles ? (double)r->unit_busy[3] / ((double)t->cores * (double)r->cycles) : 0.0);
}
