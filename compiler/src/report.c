/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 6: program -> report. The predicted cycles are the C model's: the program is run on
   the core model (the timing does not depend on the data, so the input is zero), and each
   layer's cycles are the difference between the program cut after it (plus `halt`) and cut
   before it. Also writes model.txt, the description tpu-infer reads. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/cli.h"
#include "tpu/core.h"
#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

/* Runs ins[0..n) (its last instruction the halt) on the core model with the per-instruction
   timing recorded into done/mxu/disp/fin (n entries; per pc, its last execution): in one run
   when it fits the model's IMEM (60,000 instructions here), else in segments cut right before
   an `lw`, or where no matmul comes before the next one (the weight banks restart with each
   run; every other state is in the memories, which persist); where no such place is near
   enough (a layer's weight stream starts before a long pool layer), anywhere, the segment
   then starting with the `lw` whose tile the next matmul reads, again (WMEM holds it still).
   Each segment ends with halt, so its drain is counted once per segment: an estimate, stated
   in the report. Only a straight-line stream is cut (a loop cannot be). Returns 0, or -1
   with err. */
static int run_stream(const tpuc_hw_t *hw, const tpuc_prog_t *p, const tpu_insn_t *ins, size_t n,
                      int can_cut, uint64_t *done, uint64_t *mxu, uint64_t *disp, uint64_t *fin,
                      uint64_t *cycles, uint64_t *mxbusy, size_t *segments, char *err, size_t errlen)
{
    size_t seg_max = 60000; /* instructions per run: the model's IMEM is 16-bit */
    const char *sv = getenv("TPUC_REPORT_SEGMENT"); /* shorter runs, to check the estimate */
    if (can_cut && sv && atol(sv) >= 64 && (size_t)atol(sv) < seg_max) seg_max = (size_t)atol(sv);
    if (!can_cut && n > seg_max + 1) {
        tpuc_err(err, errlen, "internal error: a looped program of %zu instructions is longer "
                 "than the model's IMEM", n);
        return -1;
    }
    uint8_t *host = calloc(1, (size_t)p->host_bytes);
    uint64_t *sd = calloc(seg_max + 2, sizeof *sd), *sm = calloc(seg_max + 2, sizeof *sm);
    uint64_t *sp = calloc(seg_max + 2, sizeof *sp), *se = calloc(seg_max + 2, sizeof *se);
    tpu_insn_t *seg = malloc((seg_max + 2) * sizeof *seg);
    uint8_t *cut = calloc(n + 1, 1);
    size_t *pend = calloc(n + 1, sizeof *pend);
    if (!host || !sd || !sm || !seg || !sp || !se || !cut || !pend) {
        free(host); free(sd); free(sm); free(seg); free(sp); free(se); free(cut); free(pend);
        tpuc_err(err, errlen, "out of memory (host image)");
        return -1;
    }
    memcpy(host + p->image_base, p->image, p->image_bytes);
    tpu_core_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.geom = hw->geom;
    cfg.geom.imem_insns = (unsigned)seg_max + 1;
    cfg.axi_data_bits = hw->axi_data_bits;
    cfg.insn_done = sd;
    cfg.insn_mxu = sm;
    cfg.insn_disp = sp;
    cfg.insn_end = se;
    tpu_core_t *core = tpu_core_new(&cfg);
    tpu_core_result_t res;
    memset(&res, 0, sizeof res);
    int rc = core ? 0 : -1;
    const size_t body = n - 1; /* the final halt */
    /* cut[i]: a segment may start at i -- an lw, or no matmul before the next lw (a pool's or
       an elementwise node's long run of DMAs and vops has no lw to cut before) */
    for (size_t i = body, mm = 0; i-- > 0;) {
        unsigned op = ins[i].w[0] & 0xFFu;
        if (op == TPU_OP_LW) mm = 0;
        else if (op == TPU_OP_MATMUL) mm = 1;
        cut[i] = !mm;
    }
    /* pend[i]: 1 + the last lw before i, where the next matmul reads its tile (cut[i] = 0) */
    for (size_t i = 0, lw = 0; i < body; i++) {
        pend[i] = cut[i] ? 0 : lw;
        if ((ins[i].w[0] & 0xFFu) == TPU_OP_LW) lw = i + 1;
    }
    uint64_t base_c = 0, base_m = 0;
    size_t start = 0;
    *segments = 0;
    while (rc == 0 && (start < body || *segments == 0)) { /* a bare halt runs once too */
        /* o: the segment starts with its pending lw again */
        const size_t o = start && pend[start] ? 1 : 0;
        size_t end = body - start > seg_max - o ? start + seg_max - o : body;
        if (end < body) {
            const size_t e0 = end;
            while (end > start + 1 && !cut[end]) end--;
            if (end == start + 1) end = e0; /* the next segment repeats its lw */
        }
        size_t k = end - start;
        if (o) seg[0] = ins[pend[start] - 1];
        memcpy(seg + o, ins + start, k * sizeof *seg);
        seg[o + k] = ins[body];
        rc = tpu_core_run(core, seg, o + k + 1, 0, host, (size_t)p->host_bytes, NULL, &res);
        if (rc != 0 || res.status != TPU_CORE_DONE) break;
        for (size_t i = 0; i < k; i++) {
            done[start + i] = base_c + sd[o + i];
            mxu[start + i] = base_m + sm[o + i];
            disp[start + i] = base_c + sp[o + i];
            fin[start + i] = base_c + se[o + i];
        }
        base_c += res.counters[TPU_CNT_CYCLES];
        base_m += res.counters[TPU_CNT_MXU_BUSY];
        (*segments)++;
        start = end;
    }
    tpu_core_free(core);
    free(host); free(sd); free(sm); free(seg); free(sp); free(se); free(cut); free(pend);
    if (rc != 0 || res.status != TPU_CORE_DONE) {
        tpuc_err(err, errlen, "internal error: the compiled program does not run on the model "
                 "(status %d, error %d at pc %u)", rc ? rc : (int)res.status,
                 rc ? 0 : res.err_code, rc ? 0u : res.err_pc);
        return -1;
    }
    *cycles = base_c;
    *mxbusy = base_m;
    return 0;
}

/* The per-dynamic-instruction records of a looped program's run (tpu_core_cfg_t.on_insn):
   every dynamic instruction but `loop` and `stride` is the next instruction of the
   straight-line stream (the loop pass proved it), so its timing lands at that index. */
typedef struct {
    const tpu_insn_t *prog;
    size_t nprog, k, sn;
    uint64_t *done, *mxu, *disp, *fin;
} seqrec_t;

static void on_insn(void *ctx, uint32_t pc, uint64_t disp, uint64_t end, uint64_t done,
                    uint64_t mxu_busy)
{
    seqrec_t *s = ctx;
    if (pc >= s->nprog) return;
    unsigned op = s->prog[pc].w[0] & 0xFFu;
    if (op == TPU_OP_LOOP || op == TPU_OP_STRIDE || s->k >= s->sn) return;
    s->done[s->k] = done;
    s->mxu[s->k] = mxu_busy;
    s->disp[s->k] = disp;
    s->fin[s->k] = end;
    s->k++;
}

/* A looped program run whole on the model, each straight-line instruction's timing recorded
   from its dynamic instance: 0, or -1 with err. */
static int run_looped(const tpuc_hw_t *hw, const tpuc_prog_t *p, seqrec_t *s, uint64_t *cycles,
                      uint64_t *mxbusy, char *err, size_t errlen)
{
    uint8_t *host = calloc(1, (size_t)p->host_bytes);
    if (!host) {
        tpuc_err(err, errlen, "out of memory (host image)");
        return -1;
    }
    memcpy(host + p->image_base, p->image, p->image_bytes);
    tpu_core_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.geom = hw->geom;
    if (cfg.geom.imem_insns < p->ninsns) cfg.geom.imem_insns = (unsigned)p->ninsns;
    cfg.axi_data_bits = hw->axi_data_bits;
    cfg.on_insn = on_insn;
    cfg.on_insn_ctx = s;
    tpu_core_t *core = tpu_core_new(&cfg);
    tpu_core_result_t res;
    memset(&res, 0, sizeof res);
    int rc = core ? tpu_core_run(core, p->insns, p->ninsns, 0, host, (size_t)p->host_bytes,
                                 NULL, &res)
                  : -1;
    tpu_core_free(core);
    free(host);
    if (rc != 0 || res.status != TPU_CORE_DONE || s->k != s->sn) {
        tpuc_err(err, errlen, "internal error: the compiled program does not run on the model "
                 "(status %d, error %d at pc %u; %zu of %zu instructions)", rc ? rc : (int)res.status,
                 rc ? 0 : res.err_code, rc ? 0u : res.err_pc, s->k, s->sn);
        return -1;
    }
    *cycles = res.counters[TPU_CNT_CYCLES];
    *mxbusy = res.counters[TPU_CNT_MXU_BUSY];
    return 0;
}

/* The bytes a DMA moves and the beats of bb bytes they take on the AXI port: each row from
   its address to its end, in whole aligned beats (as core_dma.c bursts them). */
static void dma_traffic(const tpu_insn_t *w, uint64_t bb, uint64_t *bytes, uint64_t *beats)
{
    tpu_dinsn_t d;
    tpu_insn_decode(*w, &d);
    if (!bb || d.n == 0) return;
    const uint64_t es = d.mem == TPU_MEM_ACC ? 4u : 2u, len = (uint64_t)d.cols * es;
    *bytes += (uint64_t)d.n * len;
    if (d.stride % bb == 0) { /* every row at the same alignment */
        const uint64_t a = d.addr % bb;
        *beats += (uint64_t)d.n * ((a + len + bb - 1) / bb);
        return;
    }
    for (uint64_t r = 0; r < d.n; r++) {
        const uint64_t a = ((uint64_t)d.addr + r * d.stride) % bb;
        *beats += (a + len + bb - 1) / bb;
    }
}

/* The unit whose floor is highest in layer l and that floor (cycles): the MXU's vectors
   presented, the DMA's beats at the port's width, the VPU's busy cycles. */
static const char *limit_of(const tpuc_layer_t *l, uint64_t *floor)
{
    const char *u = "mxu";
    *floor = l->mxu_rows;
    if (l->dma_beats > *floor) { u = "dma"; *floor = l->dma_beats; }
    if (l->vpu_cycles > *floor) { u = "vpu"; *floor = l->vpu_cycles; }
    return u;
}

/* One run of the whole program with the timing of every straight-line instruction recorded:
   a layer's cycles are the cycle by which its last instruction and everything before it has
   completed minus the same of the layer before (the last layer runs to the halt), so the
   layers add up to the program's CYCLES, and each unit's busy span per layer is the union of
   its instructions' (dispatch, completion]. The timing does not depend on the data, so the
   input is zero. A looped program (loops.c) runs whole as the core runs it, its dynamic
   instructions mapped back to the straight-line stream (tpu_core_cfg_t.on_insn), so a loop
   may cross a layer's boundary; a straight-line program longer than the model's IMEM runs
   in segments (run_stream). Layer ranges are straight-line indices here. */
int tpuc_report(const tpuc_graph_t *g, const tpuc_hw_t *hw, tpuc_prog_t *p, char *err,
                size_t errlen)
{
    (void)g;
    const int looped = p->straight && p->orig;
    const tpu_insn_t *sins = looped ? p->straight : p->insns;
    const size_t sn = looped ? p->nstraight : p->ninsns;
    uint64_t *done = calloc(sn + 1, sizeof *done), *mxu = calloc(sn + 1, sizeof *mxu);
    uint64_t *disp = calloc(sn + 1, sizeof *disp), *fin = calloc(sn + 1, sizeof *fin);
    if (!done || !mxu || !disp || !fin) {
        free(done); free(mxu); free(disp); free(fin);
        tpuc_err(err, errlen, "out of memory");
        return -1;
    }
    uint64_t base_c = 0, base_m = 0;
    int rc;
    if (looped) {
        seqrec_t s = {p->insns, p->ninsns, 0, sn, done, mxu, disp, fin};
        rc = run_looped(hw, p, &s, &base_c, &base_m, err, errlen);
        p->segments = 1;
    } else {
        rc = run_stream(hw, p, sins, sn, 1, done, mxu, disp, fin, &base_c, &base_m,
                        &p->segments, err, errlen);
    }
    if (rc) {
        free(done); free(mxu); free(disp); free(fin);
        return -1;
    }
    for (size_t i = 0; i < p->nlayers; i++) {
        tpuc_layer_t *l = &p->layers[i];
        uint64_t *span[3] = {&l->mx_cycles, &l->dma_cycles, &l->vpu_cycles};
        uint64_t s0[3] = {0, 0, 0}, e0[3] = {0, 0, 0};
        l->mx_cycles = l->dma_cycles = l->vpu_cycles = 0;
        l->dma_bytes = l->dma_beats = 0;
        for (size_t j = l->first_insn; j < l->end_insn && j + 1 < sn; j++) {
            int u;
            switch (sins[j].w[0] & 0xFFu) {
            case TPU_OP_LW: case TPU_OP_MATMUL: u = 0; break;
            case TPU_OP_DMA_IN: case TPU_OP_DMA_OUT:
                u = 1;
                dma_traffic(&sins[j], hw->axi_data_bits / 8u, &l->dma_bytes, &l->dma_beats);
                break;
            case TPU_OP_VOP: case TPU_OP_VRED: case TPU_OP_SOFTMAX: u = 2; break;
            default: continue;
            }
            if (disp[j] >= e0[u]) { /* dispatch is in order: a new interval, or it extends one */
                *span[u] += e0[u] - s0[u];
                s0[u] = disp[j];
                e0[u] = disp[j];
            }
            if (fin[j] > e0[u]) e0[u] = fin[j];
        }
        for (int u = 0; u < 3; u++) *span[u] += e0[u] - s0[u];
    }
    uint64_t prev_c = 0, prev_m = 0;
    for (size_t i = 0; i < p->nlayers; i++) {
        tpuc_layer_t *l = &p->layers[i];
        if (l->end_insn <= l->first_insn) { l->cycles = 0; continue; }
        int last = i + 1 == p->nlayers;
        uint64_t c_end = last ? base_c : done[l->end_insn - 1];
        uint64_t m_end = last ? base_m : mxu[l->end_insn - 1];
        l->cycles = c_end > prev_c ? c_end - prev_c : 0;
        l->mxu_busy = m_end - prev_m;
        prev_c = c_end > prev_c ? c_end : prev_c;
        prev_m = m_end;
    }
    p->total_cycles = base_c;
    free(done); free(mxu); free(disp); free(fin);
    return 0;
}

static double util(uint64_t macs, unsigned n, uint64_t cycles)
{
    return cycles ? (double)macs / ((double)n * n * (double)cycles) : 0.0;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* The shape bound (issue 14): K/(N*ceil(K/N)) x N'/(N*ceil(N'/N)); 0 for a layer that is no
   matmul of the MXU. */
static double shape_bound(const tpuc_layer_t *l, unsigned n)
{
    if (!l->k || !l->nout) return 0.0;
    return (double)l->k / (double)(n * ((l->k + n - 1) / n)) *
           ((double)l->nout / (double)(n * ((l->nout + n - 1) / n)));
}

void tpuc_report_text(const tpuc_graph_t *g, const tpuc_hw_t *hw, const tpuc_prog_t *p, FILE *f)
{
    (void)g;
    unsigned n = hw->geom.n;
    char loops_note[160] = "";
    if (p->straight)
        snprintf(loops_note, sizeof loops_note, ": %zu loops and %zu strides for %zu "
                 "straight-line instructions", p->nloops, p->nstrides, p->nstraight);
    fprintf(f, "tpu-compile report: N = %u, %u core(s), %ld image(s) per core, UB %u / ACC %u / "
            "WMEM %u rows, IMEM %u (program %zu instructions%s), host memory %.1f MiB "
            "(activations %.2f MiB, %.2f MiB without reuse)\n", n,
            hw->cores, p->batch, hw->geom.ub_rows, hw->geom.acc_rows, hw->geom.wmem_rows,
            hw->geom.imem_insns, p->ninsns, loops_note, (double)p->host_bytes / 1048576.0,
            (double)p->act_bytes / 1048576.0, (double)p->act_all / 1048576.0);
    fprintf(f, "%-28s %-22s %12s %10s %6s %7s %7s %7s %7s %5s %5s %5s %5s %5s %6s %6s %6s  %s\n",
            "node", "op", "MACs", "cycles", "insns", "MXU%", "phase%", "shape%", "bound%", "mx%",
            "dma%", "vpu%", "limit", "lim%", "UBhi", "ACChi", "WMhi", "constants");
    for (size_t i = 0; i < p->nlayers; i++) {
        const tpuc_layer_t *l = &p->layers[i];
        uint64_t ch = l->cycles, fl;
        const char *lim = limit_of(l, &fl);
        fprintf(f, "%-28.28s %-22.22s %12" PRIu64 " %10" PRIu64 " %6zu %7.2f %7.2f %7.2f %7.2f %5.1f"
                " %5.1f %5.1f %5s %5.1f %6" PRIu64 " %6" PRIu64 " %6" PRIu64 "  %s\n", l->node,
                l->op, l->macs, l->cycles, l->insns, 100.0 * util(l->macs, n, l->cycles),
                100.0 * util(l->macs, n, l->mx_cycles), 100.0 * shape_bound(l, n),
                100.0 * util(l->macs, n, l->mxu_rows), pct(l->mx_cycles, ch),
                pct(l->dma_cycles, ch), pct(l->vpu_cycles, ch), lim, pct(fl, ch), l->ub_hi,
                l->acc_hi, l->wmem_hi, l->consts);
    }
    double ips = p->total_cycles ? (double)hw->freq_mhz * 1e6 * (double)p->batch * hw->cores /
                                       (double)p->total_cycles : 0.0;
    fprintf(f, "total: %" PRIu64 " MACs per core, %" PRIu64 " cycles per batch of %ld per core "
            "(%.1f cycles per image), MXU utilisation %.2f %%, %.1f images/s at %u MHz on %u "
            "core(s)\n", p->total_macs, p->total_cycles, p->batch,
            p->batch ? (double)p->total_cycles / (double)p->batch : 0.0,
            100.0 * util(p->total_macs, n, p->total_cycles), ips, hw->freq_mhz, hw->cores);
    if (p->segments > 1)
        fprintf(f, "note: %zu instructions, more than IMEM's %u: predicted in %zu runs of the "
                "model (an estimate: each run drains the pipeline once); the program cannot be "
                "loaded as it is\n", p->ninsns, hw->geom.imem_insns, p->segments);
    fprintf(f, "MXU%%: useful MACs / (N^2 x cycles); phase%%: the same over the cycles of the "
            "layer's matmul phase (mx%%); shape%%: the shape bound, useful MACs / the MACs of K "
            "and N' padded up to multiples of N; bound%%: useful MACs / (N^2 x vectors "
            "presented), the most the layer's tiling (also Conv rows on the padded width) "
            "allows; mx%% dma%% vpu%%: the layer's cycles in which lw/matmul (the matmul phase), "
            "a DMA, the VPU were busy (they overlap where the sequencer lets them); limit, lim%%: "
            "the unit with the highest floor (MXU: the vectors presented; DMA: its bytes in AXI "
            "beats of %u bits, one a cycle; VPU: its busy cycles) and that floor over the "
            "layer's cycles (100 %%: the layer runs at that unit's bound)\n", hw->axi_data_bits);
}

/* A JSON string literal of s (tpuc_internal.h). */
void tpuc_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

void tpuc_report_json(const tpuc_graph_t *g, const tpuc_hw_t *hw, const tpuc_prog_t *p, FILE *f)
{
    (void)g;
    unsigned n = hw->geom.n;
    fprintf(f, "{\n  \"mxu\": %u, \"cores\": %u, \"batch_per_core\": %ld, \"ub_rows\": %u, "
            "\"acc_rows\": %u, \"wmem_rows\": %u, \"imem_insns\": %u, \"instructions\": %zu, "
            "\"straight_line_instructions\": %zu, \"loops\": %zu, \"strides\": %zu, "
            "\"loop_dispatches\": %" PRIu64 ", "
            "\"host_bytes\": %" PRIu64 ", \"activation_bytes\": %" PRIu64 ", "
            "\"activation_bytes_no_reuse\": %" PRIu64 ", \"freq_mhz\": %u, "
            "\"axi_data_bits\": %u,\n  \"layers\": [\n",
            n, hw->cores, p->batch, hw->geom.ub_rows, hw->geom.acc_rows, hw->geom.wmem_rows,
            hw->geom.imem_insns, p->ninsns, p->straight ? p->nstraight : p->ninsns, p->nloops,
            p->nstrides, p->loop_dispatches, p->host_bytes, p->act_bytes, p->act_all, hw->freq_mhz,
            hw->axi_data_bits);
    for (size_t i = 0; i < p->nlayers; i++) {
        const tpuc_layer_t *l = &p->layers[i];
        uint64_t fl;
        const char *lim = limit_of(l, &fl);
        fprintf(f, "    {\"node\": ");
        tpuc_json_str(f, l->node);
        fprintf(f, ", \"op\": ");
        tpuc_json_str(f, l->op);
        fprintf(f, ", \"macs\": %" PRIu64 ", \"cycles\": %" PRIu64 ", \"mxu_busy\": %" PRIu64
                ", \"mxu_util\": %.6f, \"shape_bound\": %.6f, \"k\": %" PRIu64
                ", \"nout\": %" PRIu64 ", \"shape_bound_padded\": %.6f"
                ", \"mx_cycles\": %" PRIu64 ", \"dma_cycles\": %" PRIu64
                ", \"vpu_cycles\": %" PRIu64
                ", \"phase_util\": %.6f, \"ub_high\": %" PRIu64
                ", \"acc_high\": %" PRIu64 ", \"wmem_high\": %" PRIu64
                ", \"first_insn\": %zu, \"end_insn\": %zu, \"insns\": %zu"
                ", \"mxu_rows\": %" PRIu64 ", \"dma_bytes\": %" PRIu64 ", \"dma_beats\": %" PRIu64
                ", \"limit\": \"%s\", \"limit_share\": %.6f, \"constants\": ",
                l->macs, l->cycles, l->mxu_busy, util(l->macs, n, l->cycles),
                util(l->macs, n, l->mxu_rows), l->k, l->nout, shape_bound(l, n),
                l->mx_cycles, l->dma_cycles, l->vpu_cycles,
                util(l->macs, n, l->mx_cycles), l->ub_hi, l->acc_hi, l->wmem_hi, l->first_insn,
                l->end_insn, l->insns, l->mxu_rows, l->dma_bytes, l->dma_beats, lim,
                l->cycles ? (double)fl / (double)l->cycles : 0.0);
        tpuc_json_str(f, l->consts);
        fprintf(f, "}%s\n", i + 1 < p->nlayers ? "," : "");
    }
    double ips = p->total_cycles ? (double)hw->freq_mhz * 1e6 * (double)p->batch * hw->cores /
                                       (double)p->total_cycles : 0.0;
    fprintf(f, "  ],\n  \"total\": {\"macs\": %" PRIu64 ", \"cycles\": %" PRIu64
            ", \"cycles_per_image\": %.3f, \"mxu_util\": %.6f, \"images_per_s\": %.3f, "
            "\"model_runs\": %zu, \"fits_imem\": %s}\n}\n",
            p->total_macs, p->total_cycles,
            p->batch ? (double)p->total_cycles / (double)p->batch : 0.0,
            util(p->total_macs, n, p->total_cycles), ips, p->segments,
            p->ninsns <= hw->geom.imem_insns ? "true" : "false");
}

static void write_io(FILE *f, const char *kind, const tpuc_tensor_t *t)
{
    const tpuc_layout_t *l = &t->lay;
    fprintf(f, "%s %s %d", kind, t->name, t->ndim);
    for (int i = 0; i < t->ndim; i++) fprintf(f, " %lld", (long long)t->dims[i]);
    fprintf(f, " layout %s esize %u addr %" PRIu64 " rows %" PRIu64 " cols %" PRIu64
            " img %" PRIu64 " off %" PRIu64 " rpitch %" PRIu64 " h %" PRIu64 " w %" PRIu64
            " pad %u wstep %" PRIu64, l->kind == TPUC_LAYOUT_SPATIAL ? "spatial" :
            l->kind == TPUC_LAYOUT_IM2COL ? "im2col" : "plain", l->esize,
            l->addr, l->rows, l->cols, l->img, l->off, l->rpitch, l->h, l->w, l->pad_value,
            l->wstep ? l->wstep : 1);
    if (l->kind == TPUC_LAYOUT_IM2COL)
        fprintf(f, " window %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                " %" PRIu64 " %" PRIu64 " %" PRIu64, l->ikh, l->ikw, l->ish, l->isw, l->ipt,
                l->ipl, l->ioh, l->iow, l->ichan);
    if (l->kind == TPUC_LAYOUT_IM2COL && l->ipool)
        fprintf(f, " pool %" PRIu64 " %" PRIu64, l->ipool, l->ipg);
    fprintf(f, "\n");
}

void tpuc_write_meta(const tpuc_graph_t *g, const tpuc_hw_t *hw, const tpuc_prog_t *p, FILE *f)
{
    fprintf(f, "tpuc-model 1\n");
    fprintf(f, "geom %u %u %u %u %u\n", hw->geom.n, hw->geom.ub_rows, hw->geom.acc_rows,
            hw->geom.wmem_rows, hw->geom.imem_insns);
    fprintf(f, "axi_data_bits %u\n", hw->axi_data_bits);
    fprintf(f, "board %u %u %u\n", hw->cores, hw->topo_rows, hw->topo_cols);
    fprintf(f, "batch %ld\n", p->batch);
    fprintf(f, "host_bytes %" PRIu64 "\n", p->host_bytes);
    fprintf(f, "image %" PRIu64 " %zu\n", p->image_base, p->image_bytes);
    for (int i = 0; i < p->fills; i++)
        fprintf(f, "fill %" PRIu64 " %" PRIu64 "\n", p->fill_addr[i], p->fill_bytes[i]);
    write_io(f, "input", &g->t[p->in_t]);
    if (g->t[p->in_t].dtype != TPUC_F32) fprintf(f, "onehot %" PRIu64 "\n", g->t[p->in_t].lay.cols);
    write_io(f, "output", &g->t[p->out_t]);
}

/* ---- the reader (tpu-infer): model.txt is ours, but it is still checked line by line ---- */
static int read_io(const char *line, tpuc_io_t *io, char *err, size_t errlen)
{
    char kind[16], lay[16];
    int pos = 0;
    if (sscanf(line, "%15s %127s %d%n", kind, io->name, &io->ndim, &pos) != 3 || io->ndim < 1 ||
        io->ndim > TPUC_MAX_DIMS) {
        tpuc_err(err, errlen, "bad tensor line '%.60s'", line);
        return -1;
    }
    const char *s = line + pos;
    for (int i = 0; i < io->ndim; i++) {
        long long d;
        int k = 0;
        if (sscanf(s, " %lld%n", &d, &k) != 1 || d < 1 || d > (1ll << 31)) {
            tpuc_err(err, errlen, "bad dimension in '%.60s'", line);
            return -1;
        }
        io->dims[i] = d;
        s += k;
    }
    unsigned long long es, addr, rows, cols, img, off, rp, h, w, ws;
    unsigned pad;
    int n = 0;
    if (sscanf(s, " layout %15s esize %llu addr %llu rows %llu cols %llu img %llu off %llu "
               "rpitch %llu h %llu w %llu pad %u wstep %llu%n", lay, &es, &addr, &rows, &cols, &img,
               &off, &rp, &h, &w, &pad, &ws, &n) != 12 || ws < 1 || ws > 64 || (es != 2 && es != 4) || cols == 0 || cols > (1u << 31) ||
        rows > (1ull << 40) || pad > 0xFFFF || addr % es) { /* tpu-compile aligns every buffer to 64 bytes */
        tpuc_err(err, errlen, "bad layout in '%.60s'", line);
        return -1;
    }
    memset(&io->lay, 0, sizeof io->lay);
    if (strcmp(lay, "im2col") == 0) {
        /* the windows of the first Conv (tpuc.h): every field bounded so that put_windows's
           index arithmetic cannot wrap, and the rows exactly the output pixels */
        unsigned long long v[9], pk = 0, pg = 0, px;
        const unsigned long long B = (unsigned long long)io->dims[0];
        int wn = 0;
        if (sscanf(s + n, " window %llu %llu %llu %llu %llu %llu %llu %llu %llu%n", &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &wn) != 9)
            wn = -1;
        if (wn > 0 && sscanf(s + n + wn, " pool %llu %llu", &pk, &pg) != 2)
            pk = pg = 0;
        /* the output pixels laid out: all of them, or those of whole pool windows */
        px = wn < 0 || v[6] > (1u << 20) || v[7] > (1u << 20) ? 0
             : pk ? (v[6] / (pk ? pk : 1)) * (v[7] / (pk ? pk : 1)) * pk * pk : v[6] * v[7];
        if (wn < 0 || io->ndim < 3 || (pk && (pk < 2 || pk > 3 || pg < 1 || pg > (1u << 20))) ||
            v[0] < 1 || v[0] > 1024 || v[1] < 1 || v[1] > 1024 || v[2] < 1 || v[2] > 1024 ||
            v[3] < 1 || v[3] > 1024 || v[4] > 1024 || v[5] > 1024 || v[6] < 1 ||
            v[6] > (1u << 20) || v[7] < 1 || v[7] > (1u << 20) ||
            v[8] != (unsigned long long)io->dims[1] || v[0] * v[1] * v[8] != cols ||
            px == 0 || px > (1ull << 40) / B || rows != B * px || es != 2 || ws != 1 ||
            h != (io->ndim == 4 ? (unsigned long long)io->dims[2] : 1) ||
            w != (unsigned long long)io->dims[io->ndim - 1]) {
            tpuc_err(err, errlen, "bad im2col layout in '%.60s'", line);
            return -1;
        }
        io->lay.kind = TPUC_LAYOUT_IM2COL;
        io->lay.ikh = v[0]; io->lay.ikw = v[1]; io->lay.ish = v[2]; io->lay.isw = v[3];
        io->lay.ipt = v[4]; io->lay.ipl = v[5]; io->lay.ioh = v[6]; io->lay.iow = v[7];
        io->lay.ichan = v[8];
        io->lay.ipool = pk; io->lay.ipg = pg;
    } else {
        io->lay.kind = strcmp(lay, "spatial") == 0 ? TPUC_LAYOUT_SPATIAL : TPUC_LAYOUT_PLAIN;
    }
    io->lay.esize = (unsigned)es;
    io->lay.addr = addr; io->lay.rows = rows; io->lay.cols = cols; io->lay.img = img;
    io->lay.off = off; io->lay.rpitch = rp; io->lay.h = h; io->lay.w = w;
    io->lay.pad_value = (uint16_t)pad;
    io->lay.wstep = ws;
    if (io->lay.kind == TPUC_LAYOUT_SPATIAL && (img == 0 || rp == 0 || (w ? (w - 1) * ws + 1 : 0) > rp ||
                                               off + (h ? h - 1 : 0) * rp + (w ? (w - 1) * ws + 1 : 0) > img))
        { tpuc_err(err, errlen, "bad spatial layout in '%.60s'", line); return -1; }
    return 0;
}

/* One field of model.txt: 0 when lo <= v <= hi, else -1 naming it (the first bad one wins) */
static int meta_range(const char *path, const char *name, unsigned long long v,
                      unsigned long long lo, unsigned long long hi, char *err, size_t errlen)
{
    if (v >= lo && v <= hi) return 0;
    tpuc_err(err, errlen, "%s: %s is %llu, allowed %llu..%llu", path, name, v, lo, hi);
    return -1;
}

/* Each field of model.txt in the range gen and tpu-compile allow, named when it is not */
static int meta_fields_ok(const tpuc_meta_t *m, const char *path, char *err, size_t errlen)
{
    const tpu_core_geom_t *g = &m->geom;
    const unsigned long long host = m->host_bytes, base = m->image_base;
    if (m->batch < 0) {
        tpuc_err(err, errlen, "%s: batch is %ld, allowed 1..%llu", path, m->batch, 1ull << 31);
        return -1;
    }
    if (meta_range(path, "geom: the MXU's N", g->n, TPU_LIM_MXU_MIN, TPU_LIM_MXU_MAX, err, errlen) ||
        meta_range(path, "geom: UB rows", g->ub_rows, 1, TPU_LIM_MEM_ROWS_MAX, err, errlen) ||
        meta_range(path, "geom: ACC rows", g->acc_rows, 1, TPU_LIM_MEM_ROWS_MAX, err, errlen) ||
        meta_range(path, "geom: WMEM rows", g->wmem_rows, 1, TPU_LIM_MEM_ROWS_MAX, err, errlen) ||
        meta_range(path, "geom: IMEM instructions", g->imem_insns, 1, TPU_LIM_IMEM_INSNS_MAX, err, errlen) ||
        meta_range(path, "board: cores", m->cores, 1, TPU_LIM_CORES_MAX, err, errlen) ||
        meta_range(path, "board: topology rows", m->topo_rows, 1, TPU_LIM_CORES_MAX, err, errlen) ||
        meta_range(path, "board: topology columns", m->topo_cols, 1, TPU_LIM_CORES_MAX, err, errlen) ||
        meta_range(path, "batch", m->batch < 0 ? 0 : (unsigned long long)m->batch, 1, 1ull << 31, err, errlen) ||
        meta_range(path, "host_bytes", host, 1, (unsigned long long)TPU_LIM_HOSTMEM_MIB_MAX << 20, err, errlen) ||
        meta_range(path, "image: base", base, 0, host, err, errlen) ||
        meta_range(path, "image: bytes", m->image_bytes, 0, host - base, err, errlen))
        return -1;
    if ((unsigned long long)m->topo_rows * m->topo_cols != m->cores) {
        tpuc_err(err, errlen, "%s: board: a %ux%u topology for %u cores (allowed: rows x columns = cores)",
                 path, m->topo_rows, m->topo_cols, m->cores);
        return -1;
    }
    if (!tpu_axi_data_bits_ok(m->axi_data_bits)) {
        tpuc_err(err, errlen, "%s: axi_data_bits is %u (allowed: a power of two in %u..%u)", path,
                 m->axi_data_bits, TPU_AXI_DATA_BITS_MIN, TPU_AXI_DATA_BITS_MAX);
        return -1;
    }
    return 0;
}

/* The batch tpu-infer stages per core is the input's first dimension, and the output either
   keeps it first or (a Flatten or Reshape over it) runs exactly that batch on one core */
static int meta_batch_ok(const tpuc_meta_t *m, const char *path, char *err, size_t errlen)
{
    if (m->in.dims[0] != m->batch) {
        tpuc_err(err, errlen, "%s: batch is %ld, but the input '%s' holds %lld images per core "
                 "(its first dimension)", path, m->batch, m->in.name, (long long)m->in.dims[0]);
        return -1;
    }
    if (m->out.dims[0] != m->batch && (m->cores != 1 || tpuc_io_elems(&m->out) % (uint64_t)m->batch)) {
        tpuc_err(err, errlen, "%s: the output '%s' of first dimension %lld neither keeps the batch "
                 "of %ld nor holds it whole on one core", path, m->out.name,
                 (long long)m->out.dims[0], m->batch);
        return -1;
    }
    return 0;
}

int tpuc_read_meta(const char *path, tpuc_meta_t *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    if (!f) { tpuc_err(err, errlen, "%s: %s", path, strerror(errno)); return -1; }
    char line[1024];
    int have = 0, ln = 0, rc = 0;
    m->nfills = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (!strchr(line, '\n') && !feof(f)) { rc = -1; tpuc_err(err, errlen, "%s:%d: line too long", path, ln); break; }
        unsigned long long a, b;
        if (ln == 1) {
            if (strcmp(line, "tpuc-model 1\n") != 0) { rc = -1; tpuc_err(err, errlen, "%s: not a compiled model (expected 'tpuc-model 1')", path); break; }
            continue;
        }
        if (sscanf(line, "geom %u %u %u %u %u", &m->geom.n, &m->geom.ub_rows, &m->geom.acc_rows, &m->geom.wmem_rows, &m->geom.imem_insns) == 5) have |= 1;
        else if (sscanf(line, "axi_data_bits %u", &m->axi_data_bits) == 1) have |= 2;
        else if (sscanf(line, "board %u %u %u", &m->cores, &m->topo_rows, &m->topo_cols) == 3) have |= 4;
        else if (sscanf(line, "batch %ld", &m->batch) == 1) have |= 8;
        else if (sscanf(line, "host_bytes %llu", &a) == 1) { m->host_bytes = a; have |= 16; }
        else if (sscanf(line, "image %llu %llu", &a, &b) == 2) { m->image_base = a; m->image_bytes = b; have |= 32; }
        else if (sscanf(line, "fill %llu %llu", &a, &b) == 2) {
            if (m->nfills == 64) { rc = -1; tpuc_err(err, errlen, "%s:%d: too many fills", path, ln); break; }
            m->fill_addr[m->nfills] = a; m->fill_bytes[m->nfills] = b; m->nfills++;
        } else if (strncmp(line, "input ", 6) == 0) { if ((rc = read_io(line, &m->in, err, errlen))) break; have |= 64; }
        else if (strncmp(line, "output ", 7) == 0) { if ((rc = read_io(line, &m->out, err, errlen))) break; have |= 128; }
        else if (sscanf(line, "onehot %llu", &a) == 1) {
            if (!(have & 64) || a < 1 || a > (1u << 24) || a != m->in.lay.cols) { /* ids exact as float */ rc = -1; tpuc_err(err, errlen, "%s:%d: bad onehot line", path, ln); break; }
            m->in.onehot = (int64_t)a;
        }
        else { rc = -1; tpuc_err(err, errlen, "%s:%d: unknown line '%.40s'", path, ln, line); break; }
    }
    fclose(f);
    if (rc) return -1;
    if (have != 255) { tpuc_err(err, errlen, "%s: incomplete model description", path); return -1; }
    if (meta_fields_ok(m, path, err, errlen)) return -1;
    for (int i = 0; i < m->nfills; i++)
        if (m->fill_addr[i] > m->host_bytes || m->fill_bytes[i] > m->host_bytes - m->fill_addr[i]) { tpuc_err(err, errlen, "%s: fill out of range", path); return -1; }
    if (meta_batch_ok(m, path, err, errlen)) return -1;
    const tpuc_io_t *ios[2] = {&m->in, &m->out};
    for (int i = 0; i < 2; i++) {
        const tpuc_layout_t *l = &ios[i]->lay;
        /* each term bounded first: sscanf's %llu takes "-96" as 2^64 - 96, and a sum of such
           values wraps (fuzz_onnx found an input address of -96) */
        if (l->addr > m->host_bytes || l->rows > (1ull << 34) / l->cols ||
            l->rows * l->cols * l->esize > m->host_bytes - l->addr) {
            tpuc_err(err, errlen, "%s: tensor '%s' out of the host memory", path, ios[i]->name);
            return -1;
        }
        /* every element tpuc_put_input / tpuc_get_output address inside the buffer */
        const tpuc_io_t *io = ios[i];
        uint64_t B = (uint64_t)io->dims[0], C = io->ndim > 1 ? (uint64_t)io->dims[1] : 1;
        int inside;
        if (l->kind == TPUC_LAYOUT_SPATIAL)
            inside = io->ndim >= 3 && C <= l->cols && l->img <= (1ull << 34) && l->off <= l->img &&
                     l->rpitch <= l->img && (l->h == 0 || l->rpitch <= (1ull << 34) / l->h) &&
                     l->h == (io->ndim == 4 ? (uint64_t)io->dims[2] : 1) &&
                     l->w == (uint64_t)io->dims[io->ndim - 1] && B <= l->rows / l->img;
        else if (l->kind == TPUC_LAYOUT_IM2COL)
            inside = 1; /* read_io: rows = B x output pixels, cols = the window */
        else
            inside = io->onehot ? tpuc_io_elems(io) <= l->rows : tpuc_io_elems(io) <= l->rows * l->cols;
        if (!inside) {
            tpuc_err(err, errlen, "%s: tensor '%s': its layout does not hold its shape", path, io->name);
            return -1;
        }
    }
    return 0;
}
