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
                                                          "DMA_BUSY", "VPU_BUSY", "INSNS" };

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
    tpu_mxu_cfg_t mc = { .n = g->n, .pe_stages = cfg->pe_stages ? cfg->pe_stages : 1u };
    uint64_t lat, busy;
    if (tpu_mxu_timing(&mc, &lat, &busy) != TPU_OK)
        return NULL;
    tpu_core_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->cfg = *cfg;
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
    for (unsigned b = 0; b < 2; b++) {
        c->bank[b] = calloc((size_t)c->n * c->n, sizeof(uint32_t));
        c->lrow[b] = calloc(65536u + c->n, sizeof(uint32_t));
        ok = ok && c->bank[b] && c->lrow[b];
    }
    c->acc_last_vec = calloc(c->rows[TPU_MEM_ACC], sizeof(uint64_t));
    if (!ok || c->acc_last_vec == NULL) {
        tpu_core_free(c);
        return NULL;
    }
    c->mxu_lat = lat;
    c->mxu_busy = busy;
    c->vpu_lat = TPU_CORE_VPU_LATENCY;
    c->vpu_red_lat = TPU_CORE_VPU_LATENCY + ceil_log2(c->n) + 1u;
    c->axi_lat = cfg->axi_latency ? cfg->axi_latency : TPU_CORE_AXI_LATENCY_DEFAULT;
    return c;
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
    }
    free(c->acc_last_vec);
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

const uint32_t *core_read_row(tpu_core_t *c, unsigned mem, unsigned row)
{
    if (!c->written[mem][row]) {
        if (c->res->uninit_reads == 0) {
            c->res->uninit_pc = c->pc;
            c->res->uninit_mem = mem;
            c->res->uninit_row = row;
        }
        c->res->uninit_reads++;
    }
    return c->mem[mem] + (size_t)row * c->n;
}

void core_write_row(tpu_core_t *c, unsigned mem, unsigned row, const uint32_t *words)
{
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

/* An instruction in flight, for the hazard check. */
typedef struct {
    tpu_unit_t unit;
    tpu_footprint_t fp;
    uint64_t done;
} inflight_t;

int tpu_core_run(tpu_core_t *c, const tpu_insn_t *prog, size_t count, size_t pc_start,
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
    memset(c->unit_done, 0, sizeof c->unit_done);
    core_trace_header(c);

    inflight_t *fl = NULL;
    size_t nfl = 0, cap = 0;
    uint64_t prev = 0;       /* last dispatch cycle (0: none yet, the first dispatch is in 1) */
    uint64_t all_done = 0;   /* latest completion of anything dispatched */
    uint64_t axi_stop = CORE_NEVER; /* an AXI error completes: nothing dispatches after it */
    uint32_t axi_pc = 0;
    uint32_t imem = c->cfg.geom.imem_insns;
    uint32_t pc = (uint32_t)pc_start;
    uint64_t *cnt = res->counters;
    int err = 0;
    uint32_t err_pc = 0;
    uint64_t end = 0;

    for (;;) {
        uint64_t t = prev + 1u;
        if (pc >= imem) {
            err = TPU_ERR_PC_END;
            err_pc = imem;
            end = core_max(t, all_done + 1u);
            break;
        }
        tpu_insn_t raw = { { 0, 0, 0, 0 } };
        if (pc < count)
            raw = prog[pc];
        tpu_dinsn_t d;
        tpu_insn_decode(raw, &d);
        int code = tpu_insn_check(&d, &c->cfg.geom);
        if (code == 0 && d.opcode == TPU_OP_MATMUL && !c->have_lw)
            code = TPU_ERR_NO_LW;
        if (code != 0) {
            if (axi_stop != CORE_NEVER && axi_stop < t)
                break; /* the AXI error halted the core first */
            err = code;
            err_pc = pc;
            end = core_max(t, all_done + 1u);
            break;
        }
        tpu_unit_t unit = tpu_opcode_unit(d.opcode);
        tpu_footprint_t fp;
        memset(&fp, 0, sizeof fp);
        tpu_insn_footprint(&d, c->n, &fp);
        /* when can it dispatch? */
        if (d.opcode == TPU_OP_SYNC || d.opcode == TPU_OP_HALT || c->cfg.serial)
            t = core_max(t, all_done + 1u);
        else if (unit == TPU_UNIT_MX)
            t = core_max(t, c->mm_present_end[0] + 1u);
        else if (unit != TPU_UNIT_NONE)
            t = core_max(t, c->unit_done[unit] + 1u);
        if (unit != TPU_UNIT_NONE)
            for (size_t j = 0; j < nfl; j++)
                if (fl[j].unit != unit && fl[j].done >= t && tpu_footprint_conflict(&fl[j].fp, &fp))
                    t = core_max(t, fl[j].done + 1u);
        if (axi_stop != CORE_NEVER && axi_stop < t)
            break;
        /* dispatch in cycle t */
        c->pc = pc;
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
        core_trace_retire(c, d.opcode);
        if (unit != TPU_UNIT_NONE) {
            c->unit_done[unit] = done;
            all_done = core_max(all_done, done);
            size_t k = 0;
            for (size_t j = 0; j < nfl; j++) /* drop what completed before this dispatch */
                if (fl[j].done >= t)
                    fl[k++] = fl[j];
            nfl = k;
            if (nfl == cap) {
                size_t ncap = cap ? 2u * cap : 16u;
                inflight_t *nf = realloc(fl, sizeof *nf * ncap);
                if (nf == NULL) {
                    free(fl);
                    c->res = NULL;
                    return TPU_ENOMEM;
                }
                fl = nf;
                cap = ncap;
            }
            fl[nfl].unit = unit;
            fl[nfl].fp = fp;
            fl[nfl].done = done;
            nfl++;
        }
        if (axi_err && axi_stop == CORE_NEVER) {
            axi_stop = done;
            axi_pc = pc;
        }
        prev = t;
        if (d.opcode == TPU_OP_HALT) {
            end = t;
            break;
        }
        pc++;
    }
    free(fl);
    if (axi_stop != CORE_NEVER && err == 0) { /* the first error in time wins */
        err = TPU_ERR_AXI;
        err_pc = axi_pc;
        end = core_max(prev + 1u, all_done + 1u);
    }
    if (err) {
        core_trace_error(c, err_pc, err);
        res->status = TPU_CORE_ERROR;
        res->err_code = err;
        res->err_pc = err_pc;
    } else {
        res->status = TPU_CORE_DONE;
    }
    cnt[TPU_CNT_CYCLES] = end + 1u;
    c->res = NULL;
    if (trace && fflush(trace) != 0)
        c->trace_err = 1;
    return c->trace_err ? TPU_EIO : TPU_OK;
}
