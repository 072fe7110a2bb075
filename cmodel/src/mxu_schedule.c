/* SPDX-License-Identifier: Apache-2.0 */
/* The MXU timing model: the greedy (ASAP) schedule of docs/mxu.md, "Driving a matmul". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tpu/mxu.h"

int tpu_mxu_timing(const tpu_mxu_cfg_t *cfg, uint64_t *latency, uint64_t *busy)
{
    if (cfg == NULL || cfg->n < TPU_MXU_N_MIN || cfg->n > TPU_MXU_N_MAX)
        return TPU_EINVAL;
    if (cfg->pe_stages > TPU_MXU_PE_STAGES_MAX) /* 0 means 1 */
        return TPU_EINVAL;
    /* docs/mxu.md, "Timing" (the same derivation as gen/config.c): P product registers and
       an A-cycle adder per PE; the activation skew is A per row, so
       L = A*N + N + P and B = A*(N-1) + N-1. */
    uint64_t n = cfg->n;
    uint64_t s = cfg->pe_stages == 0 ? 1 : cfg->pe_stages;
    uint64_t p = s >= 2 ? 1 : 0;
    uint64_t a = s >= 3 ? 2 : 1;
    if (latency != NULL)
        *latency = a * n + n + p;
    if (busy != NULL)
        *busy = a * (n - 1) + n - 1;
    return TPU_OK;
}

static uint64_t tpu_i_max(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

int tpu_mxu_schedule(const tpu_mxu_cfg_t *cfg, size_t m, size_t k, size_t n,
                     tpu_mxu_schedule_t *s)
{
    if (s == NULL)
        return TPU_EINVAL;
    memset(s, 0, sizeof *s);
    uint64_t lat, busy;
    if (tpu_mxu_timing(cfg, &lat, &busy) != TPU_OK || m == 0 || k == 0 || n == 0)
        return TPU_EINVAL;
    size_t N = cfg->n;
    size_t kt = k / N + (k % N != 0);
    size_t nt = n / N + (n % N != 0);
    if (nt != 0 && kt > SIZE_MAX / nt)
        return TPU_EINVAL;
    size_t tiles = kt * nt;
    if (tiles > SIZE_MAX / m || tiles * m > SIZE_MAX / sizeof(uint64_t))
        return TPU_EINVAL;
    /* Cycles grow by at most N per load and L + 1 per vector: keep them far from 2^64. */
    if ((double)tiles * (double)m * (double)(lat + 1 + N) > 1e18)
        return TPU_EINVAL;

    uint64_t *ls = malloc(tiles * sizeof *ls);
    uint64_t *act = malloc(tiles * m * sizeof *act);
    if (ls == NULL || act == NULL) {
        free(ls);
        free(act);
        return TPU_ENOMEM;
    }
    for (size_t i = 0; i < tiles; i++) {
        size_t tkt = i % kt;
        /* Load: one at a time; bank i % 2 free once tile i-2's last vector has left it. */
        uint64_t l = i == 0 ? 0 : ls[i - 1] + N;
        if (i >= 2)
            l = tpu_i_max(l, act[(i - 2) * m + (m - 1)] + busy + 1);
        ls[i] = l;
        for (size_t r = 0; r < m; r++) {
            uint64_t a = l + N; /* after the N-th load cycle */
            if (r > 0)
                a = tpu_i_max(a, act[i * m + r - 1] + 1);
            else if (i > 0)
                a = tpu_i_max(a, act[(i - 1) * m + (m - 1)] + 1);
            if (tkt > 0) /* the seed is tile i-1's output for row r */
                a = tpu_i_max(a, act[(i - 1) * m + r] + lat + 1);
            act[i * m + r] = a;
        }
    }
    s->n = cfg->n;
    s->m = m;
    s->k = k;
    s->nprime = n;
    s->kt_count = kt;
    s->nt_count = nt;
    s->tiles = tiles;
    s->latency = lat;
    s->busy = busy;
    s->load_start = ls;
    s->act = act;
    s->total_cycles = act[tiles * m - 1] + lat + 1;
    s->ideal_cycles = (uint64_t)tiles * m;
    double macs = (double)m * (double)k * (double)n;
    s->useful_macs = macs < 1.8e19 ? (uint64_t)m * k * n : UINT64_MAX; /* display only */
    s->utilisation = macs / ((double)N * (double)N) / (double)s->total_cycles;
    return TPU_OK;
}

void tpu_mxu_schedule_free(tpu_mxu_schedule_t *s)
{
    if (s == NULL)
        return;
    free(s->load_start);
    free(s->act);
    memset(s, 0, sizeof *s);
}

void tpu_mxu_events_init(tpu_mxu_events_t *it, const tpu_mxu_schedule_t *s)
{
    memset(it, 0, sizeof *it);
    it->s = s;
}

int tpu_mxu_events_next(tpu_mxu_events_t *it, tpu_mxu_event_t *ev)
{
    const tpu_mxu_schedule_t *s = it->s;
    if (s == NULL || s->act == NULL || it->cycle >= s->total_cycles)
        return 0;
    uint64_t t = it->cycle;
    size_t total = s->tiles * s->m;
    memset(ev, 0, sizeof *ev);
    ev->cycle = t;

    /* Loads never overlap: the current tile is the last one whose load has started. */
    while (it->load_i + 1 < s->tiles && s->load_start[it->load_i + 1] <= t)
        it->load_i++;
    if (s->tiles > 0 && t >= s->load_start[it->load_i] &&
        t < s->load_start[it->load_i] + s->n) {
        ev->load = 1;
        ev->load_tile = it->load_i;
        ev->load_row = (unsigned)(s->n - 1 - (t - s->load_start[it->load_i]));
        ev->load_bank = (unsigned)(it->load_i % 2);
    }
    /* Vectors are strictly increasing in cycle. */
    if (it->act_i < total && s->act[it->act_i] == t) {
        size_t i = it->act_i / s->m;
        ev->act = 1;
        ev->act_tile = i;
        ev->act_row = it->act_i % s->m;
        ev->act_bank = (unsigned)(i % 2);
        ev->seed_fresh = i % s->kt_count == 0;
        it->act_i++;
    }
    if (it->out_i < total && s->act[it->out_i] + s->latency == t) {
        ev->out = 1;
        ev->out_tile = it->out_i / s->m;
        ev->out_row = it->out_i % s->m;
        it->out_i++;
    }
    it->cycle++;
    return 1;
}
