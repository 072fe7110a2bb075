/* SPDX-License-Identifier: Apache-2.0 */
/* The core model: machine state, the run loop (fetch, checks, dispatch timing, hazards,
   sync/halt, error halts) and the performance counters (docs/isa.md "Timing").
   Instructions execute in program order when they dispatch; the timing rules only decide
   *when* each dispatches and completes, never what it computes, so the trace does not depend
   on timing. Dispatch of instruction i depends only on instructions before it, so each
   instruction's cycles are computed once, at its dispatch, from the state the earlier ones
   left (the cycle-by-cycle rules of "Timing" evaluated in closed form per unit). */
#include <stdlib.h>
#include <string.h>
#include "core_internal.h"
#include "tpu/mxu.h"

static const char *const counter_names[TPU_CNT_COUNT] = { "CYCLES",   "MXU_BUSY", "WL_STALL",
                                                          "DMA_BUSY", "VPU_BUSY", "INSNS",
                                                          "NET_BUSY" };

const char *tpu_core_counter_name(unsigned k)
{
    return k < TPU_CNT_COUNT ? counter_names[k] : NULL;
}

static unsigned ceil_log2(unsigned x)
{
    unsigned l = 0;
    while ((1u << l) < x)
        l++;
    return l;
}

tpu_core_t *tpu_core_new(const tpu_core_cfg_t *cfg)
{
    if (cfg == NULL)
        return NULL;
    const tpu_core_geom_t *g = &cfg->geom;
    if (g->n < TPU_MXU_N_MIN || g->n > TPU_MXU_N_MAX || g->ub_rows == 0 || g->ub_rows > 65536u ||
        g->acc_rows == 0 || g->acc_rows > 65536u || g->wmem_rows == 0 || g->wmem_rows > 65536u ||
        g->imem_insns == 0 || g->imem_insns > 65536u || cfg->pe_stages > TPU_MXU_PE_STAGES_MAX)
        return NULL;
    unsigned trows = cfg->topo_rows ? cfg->topo_rows : 1u;
    unsigned tcols = cfg->topo_cols ? cfg->topo_cols : 1u;
    if (trows > 64u || tcols > 64u || trows * tcols > 64u || cfg->core_id >= trows * tcols)
        return NULL;
    tpu_mxu_cfg_t mc = { .n = g->n, .pe_stages = cfg->pe_stages ? cfg->pe_stages : 1u };
    uint64_t lat, busy;
    if (tpu_mxu_timing(&mc, &lat, &busy) != TPU_OK)
        return NULL;
    if (cfg->axi_data_bits != 0 && !tpu_axi_data_bits_ok(cfg->axi_data_bits))
        return NULL;
    tpu_core_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->cfg = *cfg;
    if (c->cfg.axi_data_bits == 0)
        c->cfg.axi_data_bits = tpu_axi_data_bits_default(g->n);
    c->cfg.topo_rows = trows;
    c->cfg.topo_cols = tcols;
    c->cores = trows * tcols;
    c->n = g->n;
    c->rows[TPU_MEM_UB] = g->ub_rows;
    c->rows[TPU_MEM_ACC] = g->acc_rows;
    c->rows[TPU_MEM_WMEM] = g->wmem_rows;
    int ok = 1;
    for (unsigned m = 0; m < TPU_MEM_COUNT; m++) {
        c->mem[m] = calloc((size_t)c->rows[m] * c->n, sizeof(uint32_t));
        c->written[m] = calloc(c->rows[m], 1);
        ok = ok && c->mem[m] && c->written[m];
    }
    c->wf_stride = (c->n + 15u) & ~15u;
    for (unsigned b = 0; b < 2; b++) {
        c->bank[b] = calloc((size_t)c->n * c->n, sizeof(uint32_t));
        c->lrow[b] = calloc(65536u + c->n, sizeof(uint32_t));
        c->wf[b] = aligned_alloc(64, sizeof(float) * c->n * c->wf_stride);
        c->wrow_zero[b] = calloc(c->n, sizeof(uint32_t));
        c->wrow_fin[b] = calloc(c->n, sizeof(uint32_t));
        c->wblk_zero[b] = calloc(c->wf_stride / 16u, 1);
        c->wsgn[b] = calloc((size_t)c->n * ((c->wf_stride + 31u) / 32u), sizeof(uint32_t));
        c->wneg[b] = calloc((c->wf_stride + 31u) / 32u, sizeof(uint32_t));
        ok = ok && c->bank[b] && c->lrow[b] && c->wf[b] && c->wrow_zero[b] && c->wrow_fin[b] &&
             c->wblk_zero[b] && c->wsgn[b] && c->wneg[b];
        if (c->wf[b])
            memset(c->wf[b], 0, sizeof(float) * c->n * c->wf_stride);
    }
    c->acc_last_vec = calloc(c->rows[TPU_MEM_ACC], sizeof(uint64_t));
    c->ub_last_vec = calloc(c->rows[TPU_MEM_UB], sizeof(uint64_t));
    if (!ok || c->acc_last_vec == NULL || c->ub_last_vec == NULL) {
        tpu_core_free(c);
        return NULL;
    }
    c->mxu_lat = lat;
    c->mxu_busy = busy;
    c->vpu_lat = TPU_CORE_VPU_LATENCY;
    c->vpu_red_lat = TPU_CORE_VPU_LATENCY + ceil_log2(c->n) + 1u;
    c->axi_lat = cfg->axi_latency ? cfg->axi_latency : TPU_CORE_AXI_LATENCY_DEFAULT;
    {
        const char *e = getenv("TPU_MODEL_INTEGER_MX");
        c->integer_mx = e != NULL && e[0] == '1';
        c->mx_simd = core_mx_simd();
    }
    return c;
}

void tpu_core_clear(tpu_core_t *c)
{
    if (c == NULL)
        return;
    for (unsigned m = 0; m < TPU_MEM_COUNT; m++)
        for (unsigned r = 0; r < c->rows[m]; r++)
            if (c->written[m][r]) {
                memset(c->mem[m] + (size_t)r * c->n, 0, sizeof(uint32_t) * c->n);
                c->written[m][r] = 0;
            }
}

void tpu_core_free(tpu_core_t *c)
{
    if (c == NULL)
        return;
    for (unsigned m = 0; m < TPU_MEM_COUNT; m++) {
        free(c->mem[m]);
        free(c->written[m]);
    }
    for (unsigned b = 0; b < 2; b++) {
        free(c->bank[b]);
        free(c->lrow[b]);
        free(c->wf[b]);
        free(c->wrow_zero[b]);
        free(c->wrow_fin[b]);
        free(c->wblk_zero[b]);
        free(c->wsgn[b]);
        free(c->wneg[b]);
    }
    free(c->acc_last_vec);
    free(c->ub_last_vec);
    free(c->run.fl);
    free(c);
}

const tpu_core_cfg_t *tpu_core_cfg(const tpu_core_t *c)
{
    return &c->cfg;
}

const uint32_t *tpu_core_row(const tpu_core_t *c, unsigned mem, unsigned row)
{
    if (c == NULL || mem >= TPU_MEM_COUNT || row >= c->rows[mem])
        return NULL;
    return c->mem[mem] + (size_t)row * c->n;
}

int tpu_core_set_row(tpu_core_t *c, unsigned mem, unsigned row, const uint32_t *words)
{
    if (c == NULL || words == NULL || mem >= TPU_MEM_COUNT || row >= c->rows[mem])
        return TPU_EINVAL;
    memcpy(c->mem[mem] + (size_t)row * c->n, words, sizeof(uint32_t) * c->n);
    c->written[mem][row] = 1;
    return TPU_OK;
}

void core_read_uninit(tpu_core_t *c, unsigned mem, unsigned row)
{
    if (c->res->uninit_reads == 0) {
        c->res->uninit_pc = c->pc;
        c->res->uninit_mem = mem;
        c->res->uninit_row = row;
    }
    c->res->uninit_reads++;
}

void core_write_row(tpu_core_t *c, unsigned mem, unsigned row, const uint32_t *words)
{
    uint32_t *dst = c->mem[mem] + (size_t)row * c->n;
    if (words == dst || words + c->n <= dst || words >= dst + c->n) {
        /* the same row or none of it: in place (element i reads only words[i]) */
        if (mem == TPU_MEM_ACC) {
            if (words != dst)
                memcpy(dst, words, sizeof(uint32_t) * c->n);
        } else {
            for (unsigned i = 0; i < c->n; i++)
                dst[i] = words[i] & 0xFFFFu;
        }
        c->written[mem][row] = 1;
        c->res->rows_written[mem]++;
        core_trace_write(c, mem, row, dst);
        return;
    }
    uint32_t keep[256];
    memcpy(keep, words, sizeof(uint32_t) * c->n); /* words may alias the row */
    if (mem != TPU_MEM_ACC)
        for (unsigned i = 0; i < c->n; i++)
            keep[i] &= 0xFFFFu;
    memcpy(c->mem[mem] + (size_t)row * c->n, keep, sizeof(uint32_t) * c->n);
    c->written[mem][row] = 1;
    c->res->rows_written[mem]++;
    core_trace_write(c, mem, row, keep);
}

static void run_finish(tpu_core_t *c)
{
    struct core_run *r = &c->run;
    tpu_core_result_t *res = c->res;
    free(r->fl);
    r->fl = NULL;
    r->nfl = r->cap = 0;
    if (r->axi_stop != CORE_NEVER && r->err == 0) { /* the first error in time wins */
        r->err = TPU_ERR_AXI;
        r->err_pc = r->axi_pc;
        r->err_seq = r->axi_seq;
        r->end = core_max(r->prev + 1u, r->all_done + 1u);
        /* gen's sequencer sees the error response in the cycle after the DMA completed
           (axi_err_q), then waits one cycle in SErr before it halts */
        if (c->cfg.dispatch == TPU_DISPATCH_RTL)
            r->end = core_max(r->end, r->axi_stop + 2u);
    }
    if (r->err) {
        core_trace_error(c, r->err_seq, r->err_pc, r->err);
        res->status = TPU_CORE_ERROR;
        res->err_code = r->err;
        res->err_pc = r->err_pc;
        res->err_seq = r->err_seq;
    } else if (res->status != TPU_CORE_STUCK && res->status != TPU_CORE_LIMIT) {
        res->status = TPU_CORE_DONE;
    }
    res->counters[TPU_CNT_CYCLES] = r->end + 1u;
    c->res = NULL;
    if (c->trace && fflush(c->trace) != 0)
        c->trace_err = 1;
    r->finished = 1;
    r->rc = c->trace_err ? TPU_EIO : TPU_OK;
}

int core_run_begin(tpu_core_t *c, const tpu_insn_t *prog, size_t count, size_t pc_start,
                   uint8_t *host, size_t host_bytes, FILE *trace, tpu_core_result_t *res)
{
    if (c == NULL || res == NULL || (prog == NULL && count > 0) || count > c->cfg.geom.imem_insns ||
        pc_start >= c->cfg.geom.imem_insns || (host == NULL && host_bytes > 0))
        return TPU_EINVAL;
    memset(res, 0, sizeof *res);
    c->res = res;
    c->trace = trace;
    c->trace_err = 0;
    c->host = host;
    c->host_bytes = host_bytes;
    c->have_lw = 0;
    c->next_bank = 0;
    c->cur_bank = 0;
    c->mx_last_vec = CORE_NEVER;
    for (unsigned b = 0; b < 2; b++) {
        c->bank_last_vec[b] = CORE_NEVER;
        c->bank_lw_done[b] = 0;
        c->mm_present_end[b] = 0;
    }
    for (unsigned r = 0; r < c->rows[TPU_MEM_ACC]; r++)
        c->acc_last_vec[r] = CORE_NEVER;
    memset(c->ub_last_vec, 0, sizeof(uint64_t) * c->rows[TPU_MEM_UB]);
    c->acc_mm_last = 0;
    c->dma_out = 0;
    c->dma_mem = 0;
    c->dma_lo = c->dma_hi = 0;
    c->lw_lo = 0;
    memset(c->unit_done, 0, sizeof c->unit_done);
    free(c->run.fl);
    memset(&c->run, 0, sizeof c->run);
    c->run.prog = prog;
    c->run.count = count;
    c->run.axi_stop = CORE_NEVER;
    c->run.pc = (uint32_t)pc_start;
    tpu_seq_reset(&c->run.seq);
    c->seqno = 0;
    core_trace_header(c);
    return TPU_OK;
}

void core_net_complete(tpu_core_t *c, uint64_t done)
{
    struct core_run *r = &c->run;
    uint64_t *cnt = c->res->counters;
    c->pc = r->pc;
    cnt[TPU_CNT_INSNS]++;
    cnt[TPU_CNT_NET_BUSY] += done - r->net_t; /* busy in t+1 .. done, like DMA_BUSY */
    core_trace_retire(c);
    r->all_done = core_max(r->all_done, done);
    if (c->cfg.on_insn)
        c->cfg.on_insn(c->cfg.on_insn_ctx, r->pc, r->net_t, done, r->all_done,
                       cnt[TPU_CNT_MXU_BUSY]);
    /* the next instruction dispatches after the collective is complete */
    r->prev = done;
    r->pc = tpu_seq_step(&r->seq, &r->net, r->pc);
}

void core_net_abort(tpu_core_t *c, uint64_t t)
{
    struct core_run *r = &c->run;
    uint32_t pc = r->pc;
    uint64_t seq = c->seqno;
    core_net_complete(c, t);
    r->link_err = 1;
    r->link_pc = pc;
    r->link_seq = seq;
}

void core_run_stuck(tpu_core_t *c)
{
    struct core_run *r = &c->run;
    c->res->status = TPU_CORE_STUCK;
    c->res->err_pc = r->pc;
    r->err_seq = c->seqno;
    r->end = r->net_t;
    run_finish(c);
}

/* [alo, ahi] and [blo, bhi] meet */
static int meets(uint32_t alo, uint32_t ahi, uint32_t blo, uint32_t bhi)
{
    return alo <= bhi && blo <= ahi;
}

/* TPU_DISPATCH_RTL: the first cycle >= t in which gen's sequencer (tpu_core_seq's can_go)
   takes instruction d, from what the units it watches will do (docs/isa.md "What the RTL
   overlaps"). Every condition of can_go is one that, once true, stays true while nothing new
   dispatches (a unit's busy falls, a queue's rows left only shrink), so each gives a cycle
   from which it holds and the dispatch is the latest of them:
   - dma_busy, wl_busy, vpu_busy, mx_busy (an lw, a vector or a result in flight): from the
     cycle after the unit's last completion;
   - mm_full (two MATMULs with vectors left, or one presenting the older one's last vector):
     from the cycle after the older one's last vector;
   - a queued MATMUL's UB rows left (q_ub .. q_ub + q_left - 1): vector m's row is read in
     t_m - 1, so it is left until t_m;
   - acc_rd (a queued MATMUL accumulates): until its last vector t_last;
   - acc_hit (a vector in flight writes an ACC row): until its write in t_m + L + 1. */
static uint64_t rtl_dispatch(const tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    const uint64_t *u = c->unit_done;
    const uint32_t n = c->n;
    switch (d->opcode) {
    case TPU_OP_NOP:
    case TPU_OP_LOOP:
    case TPU_OP_STRIDE: return t;
    case TPU_OP_LW: {
        /* lw_dma_ok && !wl_busy: overlaps the VPU, the MX and a dma_in that does not write
           its WMEM rows */
        t = core_max(t, u[TPU_UNIT_WL] + 1u);
        uint32_t lo = d->w_row, hi = d->w_row + n - 1u;
        if (c->dma_out || (c->dma_mem == TPU_MEM_WMEM && meets(lo, hi, c->dma_lo, c->dma_hi)))
            t = core_max(t, u[TPU_UNIT_DMA] + 1u);
        return t;
    }
    case TPU_OP_MATMUL: {
        /* mm_dma_ok && !vpu_busy && !mm_full */
        t = core_max(t, c->mm_present_end[0] + 1u);
        t = core_max(t, u[TPU_UNIT_VPU] + 1u);
        uint32_t ulo = d->ub_row, uhi = d->ub_row + d->n - 1u;
        uint32_t alo = d->acc_row, ahi = d->acc_row + d->n - 1u;
        int ok = (!c->dma_out && c->dma_mem == TPU_MEM_WMEM) ||
                 (!c->dma_out && c->dma_mem == TPU_MEM_UB &&
                  !meets(ulo, uhi, c->dma_lo, c->dma_hi)) ||
                 (c->dma_out && c->dma_mem == TPU_MEM_ACC && !d->accumulate &&
                  !meets(alo, ahi, c->dma_lo, c->dma_hi));
        if (!ok)
            t = core_max(t, u[TPU_UNIT_DMA] + 1u);
        return t;
    }
    case TPU_OP_DMA_IN:
    case TPU_OP_DMA_OUT: {
        /* !dma_busy && !vpu_busy && (!mx_busy || dma_mx_ok) */
        t = core_max(t, u[TPU_UNIT_DMA] + 1u);
        t = core_max(t, u[TPU_UNIT_VPU] + 1u);
        uint64_t mx_free = core_max(u[TPU_UNIT_WL], u[TPU_UNIT_MX]) + 1u;
        uint64_t ok_from = CORE_NEVER;
        uint32_t lo = d->row, hi = d->row + d->n - 1u;
        if (d->opcode == TPU_OP_DMA_IN && d->mem == TPU_MEM_WMEM) {
            ok_from = meets(lo, hi, c->lw_lo, c->lw_lo + n - 1u) ? u[TPU_UNIT_WL] + 1u : 0;
        } else if (d->opcode == TPU_OP_DMA_IN && d->mem == TPU_MEM_UB) {
            ok_from = 0;
            for (uint32_t r = lo; r <= hi; r++)
                ok_from = core_max(ok_from, c->ub_last_vec[r]);
        } else if (d->opcode == TPU_OP_DMA_OUT && d->mem == TPU_MEM_ACC) {
            ok_from = c->acc_mm_last;
            for (uint32_t r = lo; r <= hi; r++)
                if (c->acc_last_vec[r] != CORE_NEVER)
                    ok_from = core_max(ok_from, c->acc_last_vec[r] + c->mxu_lat + 2u);
        }
        return core_max(t, mx_free < ok_from ? mx_free : ok_from);
    }
    default: /* idle: every other instruction, sync, halt and the collectives */
        return core_max(t, c->run.all_done + 1u);
    }
}

int core_run_step(tpu_core_t *c)
{
    struct core_run *r = &c->run;
    uint32_t imem = c->cfg.geom.imem_insns;
    uint64_t *cnt = c->res->counters;
    const int rtl = c->cfg.dispatch == TPU_DISPATCH_RTL;
    /* an error halt found in cycle t completes in max(t, last completion + 1); gen's
       sequencer takes one more cycle (SRun finds it in t, SErr halts from t + 1 on) */
    const uint64_t eh = rtl ? 1u : 0u;
    for (;;) {
        uint64_t t = r->prev + 1u;
        if (r->pc >= imem) {
            r->err = TPU_ERR_PC_END;
            r->err_pc = imem;
            r->err_seq = c->seqno;
            r->end = core_max(t + eh, r->all_done + 1u);
            break;
        }
        tpu_insn_t raw = { { 0, 0, 0, 0 } };
        if (r->pc < r->count)
            raw = r->prog[r->pc];
        tpu_dinsn_t d;
        tpu_insn_decode(raw, &d);
        tpu_seq_resolve(&r->seq, &d); /* the operands as dispatched (docs/isa.md "Loops") */
        int code = tpu_insn_check_board(&d, &c->cfg.geom, c->cfg.core_id, c->cores);
        if (code == 0 && d.opcode == TPU_OP_MATMUL && !c->have_lw)
            code = TPU_ERR_NO_LW;
        if (code == 0)
            code = tpu_seq_check(&r->seq, &d, r->pc, imem);
        if (code != 0) {
            if (r->axi_stop != CORE_NEVER && r->axi_stop < t)
                break; /* the AXI error halted the core first */
            r->err = code;
            r->err_pc = r->pc;
            r->err_seq = c->seqno;
            r->end = core_max(t + eh, r->all_done + 1u);
            break;
        }
        if (r->link_err) { /* the collective before stopped on a dead link */
            r->err = TPU_ERR_LINK;
            r->err_pc = r->link_pc;
            r->err_seq = r->link_seq;
            r->end = core_max(t + eh, r->all_done + 1u);
            break;
        }
        tpu_unit_t unit = tpu_opcode_unit(d.opcode);
        int coll = tpu_opcode_is_collective(d.opcode);
        tpu_footprint_t fp;
        memset(&fp, 0, sizeof fp);
        tpu_insn_footprint(&d, c->n, &fp);
        /* when can it dispatch? (a collective, like sync, when every unit is idle) */
        if (c->cfg.dispatch == TPU_DISPATCH_RTL) {
            t = rtl_dispatch(c, &d, t);
        } else {
            if (d.opcode == TPU_OP_SYNC || d.opcode == TPU_OP_HALT || coll ||
                c->cfg.dispatch == TPU_DISPATCH_SERIAL)
                t = core_max(t, r->all_done + 1u);
            else if (unit == TPU_UNIT_MX)
                t = core_max(t, c->mm_present_end[0] + 1u);
            else if (unit != TPU_UNIT_NONE)
                t = core_max(t, c->unit_done[unit] + 1u);
        }
        if (unit != TPU_UNIT_NONE && c->cfg.dispatch != TPU_DISPATCH_RTL)
            for (size_t j = 0; j < r->nfl; j++)
                if (r->fl[j].unit != unit && r->fl[j].done >= t &&
                    tpu_footprint_conflict(&r->fl[j].fp, &fp))
                    t = core_max(t, r->fl[j].done + 1u);
        if (r->axi_stop != CORE_NEVER && (r->axi_stop < t || (rtl && r->axi_stop == t)))
            break;
        if (c->cfg.max_cycles != 0 && t > c->cfg.max_cycles) {
            /* the run-time bound: this instruction does not dispatch */
            c->res->status = TPU_CORE_LIMIT;
            c->res->err_pc = r->pc;
            r->end = core_max(t, r->all_done + 1u);
            break;
        }
        /* dispatch in cycle t */
        c->pc = r->pc;
        c->cur = d;
        tpu_seq_iter_text(&r->seq, c->iter, sizeof c->iter);
        if (c->cfg.insn_disp && r->pc < r->count)
            c->cfg.insn_disp[r->pc] = t;
        if (c->cfg.disp_log)
            fprintf(c->cfg.disp_log, "%u %llu\n", (unsigned)r->pc, (unsigned long long)t);
        if (unit == TPU_UNIT_DMA) {
            c->dma_out = d.opcode == TPU_OP_DMA_OUT;
            c->dma_mem = d.mem;
            c->dma_lo = d.row;
            c->dma_hi = d.row + d.n - 1u;
        }
        if (coll) {
            r->net = d;
            r->net_t = t;
            if (c->cores > 1)
                return CORE_STEP_NET;
            core_net_complete(c, t + 1u); /* C = 1: nothing to move, done the next cycle */
            continue;
        }
        cnt[TPU_CNT_INSNS]++;
        uint64_t done = t;
        int axi_err = 0;
        switch (unit) {
        case TPU_UNIT_DMA:
            done = core_dma_exec(c, &d, t, &axi_err);
            cnt[TPU_CNT_DMA_BUSY] += done - t; /* busy in t+1 .. done */
            break;
        case TPU_UNIT_WL: done = core_lw_exec(c, &d, t); break;
        case TPU_UNIT_MX: done = core_matmul_exec(c, &d, t); break;
        case TPU_UNIT_VPU:
            done = core_vpu_exec(c, &d, t);
            cnt[TPU_CNT_VPU_BUSY] += done - t;
            break;
        default: break;
        }
        core_trace_retire(c);
        if (unit != TPU_UNIT_NONE) {
            c->unit_done[unit] = done;
            r->all_done = core_max(r->all_done, done);
            size_t k = 0;
            for (size_t j = 0; j < r->nfl; j++) /* drop what completed before this dispatch */
                if (r->fl[j].done >= t)
                    r->fl[k++] = r->fl[j];
            r->nfl = k;
            if (r->nfl == r->cap) {
                size_t ncap = r->cap ? 2u * r->cap : 16u;
                core_inflight_t *nf = realloc(r->fl, sizeof *nf * ncap);
                if (nf == NULL) {
                    free(r->fl);
                    r->fl = NULL;
                    c->res = NULL;
                    r->finished = 1;
                    r->rc = TPU_ENOMEM;
                    return TPU_ENOMEM;
                }
                r->fl = nf;
                r->cap = ncap;
            }
            r->fl[r->nfl].unit = unit;
            r->fl[r->nfl].fp = fp;
            r->fl[r->nfl].done = done;
            r->nfl++;
        }
        if (axi_err && r->axi_stop == CORE_NEVER) {
            r->axi_stop = done;
            r->axi_pc = r->pc;
            r->axi_seq = c->seqno - 1u;
        }
        r->prev = t;
        if (r->pc < r->count) {
            if (c->cfg.insn_done) c->cfg.insn_done[r->pc] = core_max(r->all_done, t);
            if (c->cfg.insn_mxu) c->cfg.insn_mxu[r->pc] = cnt[TPU_CNT_MXU_BUSY];
            if (c->cfg.insn_end) c->cfg.insn_end[r->pc] = done;
        }
        if (c->cfg.on_insn)
            c->cfg.on_insn(c->cfg.on_insn_ctx, r->pc, t, done, core_max(r->all_done, t),
                           cnt[TPU_CNT_MXU_BUSY]);
        if (d.opcode == TPU_OP_HALT) {
            r->end = t;
            break;
        }
        r->pc = tpu_seq_step(&r->seq, &d, r->pc);
    }
    run_finish(c);
    return CORE_STEP_DONE;
}

int tpu_core_run(tpu_core_t *c, const tpu_insn_t *prog, size_t count, size_t pc_start,
                 uint8_t *host, size_t host_bytes, FILE *trace, tpu_core_result_t *res)
{
    int rc = core_run_begin(c, prog, count, pc_start, host, host_bytes, trace, res);
    if (rc != TPU_OK)
        return rc;
    rc = core_run_step(c);
    if (rc == CORE_STEP_NET) /* C > 1 without the board: the peers never come */
        core_run_stuck(c);
    else if (rc < 0)
        return rc;
    return c->run.rc;
}
