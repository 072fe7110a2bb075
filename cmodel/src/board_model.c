/* SPDX-License-Identifier: Apache-2.0 */
/* The board model (docs/board.md): C core models, each running its own program on its own
   host memory, joined by the collectives. Each core runs until it dispatches a collective;
   when every participant of a collective has reached it (the two cores of a send/recv pair,
   every core for bcast, barrier and allreduce) the board moves the data exactly as the ring
   algorithm does, writing each core's rows in the order of "Transfers, flits and the order
   of row writes" (so each core's trace is the RTL's), and completes it on every participant
   at max(their dispatch cycles) + the cycle model's cost. The order in which the board
   visits cores changes nothing: a core's results and trace depend only on its program and
   on the data of the collectives. When no collective can complete while cores wait, the
   board stops them (TPU_CORE_STUCK) and says why instead of hanging. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "tpu/board.h"
#include "tpu/numerics.h"

struct tpu_board {
    tpu_board_cfg_t cfg;
    unsigned cores;
    tpu_core_t *core[TPU_BOARD_CORES_MAX];
};

enum { ST_RUN, ST_WAIT, ST_END };

tpu_board_t *tpu_board_new(const tpu_board_cfg_t *cfg)
{
    if (cfg == NULL || cfg->rows == 0 || cfg->cols == 0 || cfg->rows > TPU_BOARD_CORES_MAX ||
        cfg->cols > TPU_BOARD_CORES_MAX || cfg->rows * cfg->cols > TPU_BOARD_CORES_MAX ||
        (cfg->link_bits != 0 && (cfg->link_bits < TPU_BOARD_LINK_BITS_MIN ||
                                 cfg->link_bits > TPU_BOARD_LINK_BITS_MAX)) ||
        cfg->link_latency > TPU_BOARD_LINK_LATENCY_MAX ||
        (cfg->start_skew > TPU_BOARD_START_SKEW_MAX && cfg->start_skew != TPU_BOARD_START_TOGETHER))
        return NULL;
    tpu_board_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->cfg = *cfg;
    if (b->cfg.link_bits == 0)
        b->cfg.link_bits = TPU_BOARD_LINK_BITS_DEFAULT;
    if (b->cfg.start_skew == 0)
        b->cfg.start_skew = TPU_BOARD_START_SKEW_DEFAULT;
    else if (b->cfg.start_skew == TPU_BOARD_START_TOGETHER)
        b->cfg.start_skew = 0;
    b->cores = cfg->rows * cfg->cols;
    for (unsigned i = 0; i < b->cores; i++) {
        tpu_core_cfg_t cc = cfg->core;
        cc.core_id = i;
        cc.topo_rows = cfg->rows;
        cc.topo_cols = cfg->cols;
        b->core[i] = tpu_core_new(&cc);
        if (b->core[i] == NULL) {
            tpu_board_free(b);
            return NULL;
        }
    }
    return b;
}

void tpu_board_free(tpu_board_t *b)
{
    if (b == NULL)
        return;
    for (unsigned i = 0; i < b->cores; i++)
        tpu_core_free(b->core[i]);
    free(b);
}

unsigned tpu_board_cores(const tpu_board_t *b) { return b ? b->cores : 0; }

tpu_core_t *tpu_board_core(tpu_board_t *b, unsigned i)
{
    return b != NULL && i < b->cores ? b->core[i] : NULL;
}

/* ---- data movement --------------------------------------------------------------------- */

/* internal: the elements [e0, e1) of the region starting at row0 of memory mem of core c,
   copied to out (the sender's side; rows read count for the never-written warning) */
static void read_elems(tpu_core_t *c, unsigned mem, unsigned row0, size_t e0, size_t e1,
                       uint32_t *out)
{
    unsigned n = c->n;
    for (size_t e = e0; e < e1;) {
        size_t r = e / n, end = (r + 1) * n < e1 ? (r + 1) * n : e1;
        const uint32_t *row = core_read_row(c, mem, row0 + (unsigned)r);
        for (size_t k = e; k < end; k++)
            out[k - e0] = row[k % n];
        e = end;
    }
}

/* internal: the receiver's side of one transfer of elements [e0, e1): one row write per row
   segment, rows ascending, after merging the segment's lanes into the row: a copy, or
   (add) fp32_add(received, own) for a reduce-scatter step */
static void write_elems(tpu_core_t *c, unsigned mem, unsigned row0, size_t e0, size_t e1,
                        const uint32_t *src, int add)
{
    unsigned n = c->n;
    uint32_t tmp[256];
    for (size_t e = e0; e < e1;) {
        size_t r = e / n, end = (r + 1) * n < e1 ? (r + 1) * n : e1;
        unsigned row = row0 + (unsigned)r;
        const uint32_t *own = add ? core_read_row(c, mem, row) : c->mem[mem] + (size_t)row * n;
        memcpy(tmp, own, sizeof(uint32_t) * n);
        for (size_t k = e; k < end; k++) {
            uint32_t v = src[k - e0];
            tmp[k % n] = add ? fp32_add(fp32_from_bits(v), fp32_from_bits(tmp[k % n])).v : v;
        }
        core_write_row(c, mem, row, tmp);
        e = end;
    }
}

/* internal: one ring phase (docs/board.md "A ring phase") on the ring of m cores ids[0..m-1]
   (position order), over the elements [a, a + len) of every member's collective region:
   m - 1 steps; in step t position p sends chunk (p - t) mod m (reduce-scatter) or
   (p + 1 - t) mod m (all-gather) to p + 1. Every send of a step is taken before any write. */
static int ring_phase(tpu_board_t *b, const unsigned *ids, unsigned m, size_t a, size_t len,
                      int gather)
{
    if (m <= 1)
        return 0;
    size_t maxc = len / m + 1;
    uint32_t *msg = malloc(sizeof(uint32_t) * maxc * m);
    unsigned *js = malloc(sizeof(unsigned) * m);
    if (msg == NULL || js == NULL) {
        free(msg);
        free(js);
        return TPU_ENOMEM;
    }
    for (unsigned t = 0; t + 1 < m; t++) {
        for (unsigned p = 0; p < m; p++) {
            tpu_core_t *c = b->core[ids[p]];
            js[p] = (p + 2u * m - t + (gather ? 1u : 0u)) % m;
            read_elems(c, TPU_MEM_ACC, c->run.net.row, a + tpu_chunk_lo(len, m, js[p]),
                       a + tpu_chunk_lo(len, m, js[p] + 1), msg + (size_t)p * maxc);
        }
        for (unsigned p = 0; p < m; p++) {
            tpu_core_t *c = b->core[ids[p]];
            unsigned w = (p + m - 1u) % m;
            write_elems(c, TPU_MEM_ACC, c->run.net.row, a + tpu_chunk_lo(len, m, js[w]),
                        a + tpu_chunk_lo(len, m, js[w] + 1), msg + (size_t)w * maxc, !gather);
        }
    }
    free(msg);
    free(js);
    return 0;
}

/* internal: the allreduce's ring phases (docs/board.md "allreduce"): on a torus the row
   reduce-scatter, column reduce-scatter on row-chunk (c+1) mod S, column all-gather, row
   all-gather; with the ring flag (or R = 1) one ring over all cores in id order */
static int exec_allreduce(tpu_board_t *b, const tpu_dinsn_t *d)
{
    unsigned R = b->cfg.rows, S = b->cfg.cols, C = b->cores;
    size_t len = (size_t)d->n * b->core[0]->n;
    unsigned ids[TPU_BOARD_CORES_MAX];
    int rc = 0;
    if (d->ring || R == 1) {
        for (unsigned i = 0; i < C; i++)
            ids[i] = i;
        rc = ring_phase(b, ids, C, 0, len, 0);
        if (rc == 0)
            rc = ring_phase(b, ids, C, 0, len, 1);
        return rc;
    }
    for (unsigned phase = 0; phase < 4 && rc == 0; phase++) {
        int gather = phase >= 2, col = phase == 1 || phase == 2;
        for (unsigned k = 0; k < (col ? S : R) && rc == 0; k++) {
            if (col) { /* column k: positions r = 0..R-1, region row-chunk (k+1) mod S */
                unsigned j1 = (k + 1u) % S;
                size_t lo = tpu_chunk_lo(len, S, j1), hi = tpu_chunk_lo(len, S, j1 + 1);
                for (unsigned r = 0; r < R; r++)
                    ids[r] = r * S + k;
                rc = ring_phase(b, ids, R, lo, hi - lo, gather);
            } else { /* row k: positions c = 0..S-1, the whole vector */
                for (unsigned c = 0; c < S; c++)
                    ids[c] = k * S + c;
                rc = ring_phase(b, ids, S, 0, len, gather);
            }
        }
    }
    return rc;
}

/* internal: a transfer of whole rows (send/recv, bcast): one write per row, ascending */
static void copy_rows(tpu_core_t *from, tpu_core_t *to, unsigned mem, unsigned n)
{
    for (unsigned r = 0; r < n; r++) {
        const uint32_t *src = core_read_row(from, mem, from->run.net.row + r);
        core_write_row(to, mem, to->run.net.row + r, src);
    }
}

/* ---- cycles ---------------------------------------------------------------------------- */

static unsigned max_hops_from(const tpu_board_t *b, unsigned root)
{
    unsigned h = 0;
    for (unsigned i = 0; i < b->cores; i++) {
        unsigned x = tpu_board_hops(b->cfg.rows, b->cfg.cols, root, i);
        h = x > h ? x : h;
    }
    return h;
}

/* internal: the cost of a collective once its last participant has dispatched it */
/* core k's START in board cycles (core k's cycle x is board cycle x + off) */
static uint64_t off(const tpu_board_t *b, unsigned k)
{
    return (uint64_t)k * b->cfg.start_skew;
}

static uint64_t coll_cycles(const tpu_board_t *b, const tpu_dinsn_t *d, unsigned self)
{
    unsigned W = b->cfg.link_bits, D = b->cfg.link_latency, n = b->core[0]->n;
    unsigned R = b->cfg.rows, S = b->cfg.cols, C = b->cores;
    unsigned w = d->mem == TPU_MEM_ACC ? 32u : 16u;
    switch (d->opcode) {
    case TPU_OP_SEND:
    case TPU_OP_RECV:
        return tpu_board_sendrecv_cycles(d->n, n, w, tpu_board_hops(R, S, self, d->peer), W, D);
    case TPU_OP_BCAST:
        return tpu_board_bcast_cycles(d->n, n, w, C, max_hops_from(b, d->peer), W, D);
    case TPU_OP_BARRIER:
        return tpu_board_barrier_cycles(C, max_hops_from(b, 0), D);
    case TPU_OP_ALLREDUCE:
        return tpu_board_allreduce_cycles(d->n, n, R, S, d->ring, W, D);
    default:
        return 0;
    }
}

/* ---- matching and the run -------------------------------------------------------------- */

struct msgbuf {
    char *p;
    size_t len, used;
};

static void say(struct msgbuf *m, const char *fmt, ...)
{
    if (m->p == NULL || m->used + 1 >= m->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(m->p + m->used, m->len - m->used, fmt, ap);
    va_end(ap);
    if (k > 0)
        m->used += (size_t)k < m->len - m->used ? (size_t)k : m->len - m->used - 1;
}

static int is_group(unsigned op)
{
    return op == TPU_OP_BCAST || op == TPU_OP_BARRIER || op == TPU_OP_ALLREDUCE;
}

/* internal: the same group collective (rows may differ: each core names its own region) */
static int same_group(const tpu_dinsn_t *a, const tpu_dinsn_t *b)
{
    return a->opcode == b->opcode && a->n == b->n && a->mem == b->mem && a->peer == b->peer &&
           a->ring == b->ring;
}

/* internal: core j as seen from a stuck core */
static void describe(const tpu_board_t *b, const int *st, const tpu_core_result_t *res,
                     unsigned j, char *out, size_t len)
{
    if (st[j] == ST_END) {
        if (res[j].status == TPU_CORE_DONE)
            snprintf(out, len, "core %u has halted", j);
        else if (res[j].status == TPU_CORE_ERROR)
            snprintf(out, len, "core %u stopped with error %d at pc %u", j, res[j].err_code,
                     (unsigned)res[j].err_pc);
        else if (res[j].status == TPU_CORE_LIMIT)
            snprintf(out, len, "core %u reached the cycle limit at pc %u", j,
                     (unsigned)res[j].err_pc);
        else
            snprintf(out, len, "core %u is stuck", j);
        return;
    }
    char dis[160];
    const tpu_core_t *c = b->core[j];
    tpu_insn_disasm(tpu_insn_encode(&c->run.net), dis, sizeof dis);
    snprintf(out, len, "core %u waits at pc %u: %s", j, (unsigned)c->run.pc, dis);
}

int tpu_board_run(tpu_board_t *b, const tpu_board_job_t job[], tpu_core_result_t res[],
                  char *msg, size_t msglen)
{
    if (b == NULL || job == NULL || res == NULL)
        return TPU_EINVAL;
    unsigned C = b->cores;
    int st[TPU_BOARD_CORES_MAX];
    struct msgbuf mb = { msg, msglen, 0 };
    if (msg && msglen)
        msg[0] = 0;
    for (unsigned i = 0; i < C; i++) {
        int rc = core_run_begin(b->core[i], job[i].prog, job[i].count, job[i].pc_start,
                                job[i].host, job[i].host_bytes, job[i].trace, &res[i]);
        if (rc != TPU_OK)
            return rc;
        st[i] = ST_RUN;
    }
    for (;;) {
        for (unsigned i = 0; i < C; i++)
            if (st[i] == ST_RUN) {
                int rc = core_run_step(b->core[i]);
                if (rc < 0)
                    return rc;
                st[i] = rc == CORE_STEP_NET ? ST_WAIT : ST_END;
            }
        int progress = 0;
        /* pairs: a send to d and d's recv from the sender */
        for (unsigned i = 0; i < C; i++) {
            tpu_core_t *s = b->core[i];
            if (st[i] != ST_WAIT || s->run.net.opcode != TPU_OP_SEND)
                continue;
            unsigned dst = s->run.net.peer;
            tpu_core_t *r = b->core[dst];
            if (st[dst] != ST_WAIT || r->run.net.opcode != TPU_OP_RECV || r->run.net.peer != i ||
                r->run.net.n != s->run.net.n || r->run.net.mem != s->run.net.mem)
                continue;
            copy_rows(s, r, s->run.net.mem, s->run.net.n);
            /* board time: core k's cycle x is board cycle x + off(k) */
            uint64_t sd, rd;
            tpu_board_sendrecv_done(s->run.net.n, s->n, s->run.net.mem == TPU_MEM_ACC ? 32u : 16u,
                                    tpu_board_hops(b->cfg.rows, b->cfg.cols, i, dst),
                                    b->cfg.link_bits, b->cfg.link_latency,
                                    s->run.net_t + off(b, i), r->run.net_t + off(b, dst), &sd,
                                    &rd);
            core_net_complete(s, sd - off(b, i));
            core_net_complete(r, rd - off(b, dst));
            st[i] = st[dst] = ST_RUN;
            progress = 1;
        }
        if (progress)
            continue;
        /* a group collective: every core waits at the same one */
        unsigned i;
        for (i = 0; i < C; i++)
            if (st[i] != ST_WAIT || !is_group(b->core[i]->run.net.opcode) ||
                !same_group(&b->core[i]->run.net, &b->core[0]->run.net))
                break;
        if (i == C) {
            const tpu_dinsn_t *d = &b->core[0]->run.net;
            int rc = 0;
            if (d->opcode == TPU_OP_ALLREDUCE)
                rc = exec_allreduce(b, d);
            else if (d->opcode == TPU_OP_BCAST)
                for (unsigned k = 1; k < C; k++) /* root k sends to k+1, k+2, ... */
                    copy_rows(b->core[d->peer], b->core[(d->peer + k) % C], d->mem, d->n);
            if (rc < 0)
                return rc;
            uint64_t t0 = 0;
            for (unsigned k = 0; k < C; k++)
                t0 = core_max(t0, b->core[k]->run.net_t + off(b, k));
            uint64_t done = t0 + coll_cycles(b, d, 0);
            uint64_t arr[TPU_BOARD_CORES_MAX], bdone[TPU_BOARD_CORES_MAX];
            unsigned hops[TPU_BOARD_CORES_MAX];
            if (d->opcode == TPU_OP_BARRIER) { /* per core: arrivals, then the releases */
                for (unsigned k = 0; k < C; k++) {
                    arr[k] = b->core[k]->run.net_t + off(b, k);
                    hops[k] = tpu_board_hops(b->cfg.rows, b->cfg.cols, k, 0);
                }
                tpu_board_barrier_done(C, arr, hops, b->cfg.link_latency, bdone);
            } else if (d->opcode == TPU_OP_BCAST) { /* the root's sends one after the other */
                for (unsigned k = 0; k < C; k++) {
                    arr[k] = b->core[k]->run.net_t + off(b, k);
                    hops[k] = tpu_board_hops(b->cfg.rows, b->cfg.cols, d->peer, k);
                }
                tpu_board_bcast_done(d->n, b->core[0]->n, d->mem == TPU_MEM_ACC ? 32u : 16u, C,
                                     d->peer, arr, hops, b->cfg.link_bits,
                                     b->cfg.link_latency, bdone);
            }
            for (unsigned k = 0; k < C; k++) {
                uint64_t dk = d->opcode == TPU_OP_BARRIER || d->opcode == TPU_OP_BCAST ? bdone[k]
                                                                                   : done;
                core_net_complete(b->core[k], dk - off(b, k));
                st[k] = ST_RUN;
            }
            continue;
        }
        break; /* nothing can move */
    }
    /* every core still waiting is stuck: say why, then stop them */
    int first = 1;
    for (unsigned i = 0; i < C; i++) {
        if (st[i] != ST_WAIT)
            continue;
        tpu_core_t *c = b->core[i];
        const tpu_dinsn_t *d = &c->run.net;
        char dis[160], why[240];
        tpu_insn_disasm(tpu_insn_encode(d), dis, sizeof dis);
        if (d->opcode == TPU_OP_SEND || d->opcode == TPU_OP_RECV) {
            unsigned j = d->peer;
            const tpu_dinsn_t *e = &b->core[j]->run.net;
            if (st[j] == ST_WAIT && e->peer == i &&
                e->opcode == (d->opcode == TPU_OP_SEND ? TPU_OP_RECV : TPU_OP_SEND)) {
                char pd[160];
                tpu_insn_disasm(tpu_insn_encode(e), pd, sizeof pd);
                snprintf(why, sizeof why, "its peer core %u at pc %u names other rows or memory: "
                         "%s", j, (unsigned)b->core[j]->run.pc, pd);
            } else {
                describe(b, st, res, j, why, sizeof why);
            }
        } else {
            unsigned j;
            for (j = 0; j < C; j++)
                if (st[j] != ST_WAIT || !same_group(&b->core[j]->run.net, d))
                    break;
            if (j < C) {
                describe(b, st, res, j, why, sizeof why);
            } else {
                /* every core is at this collective: something else blocks, e.g. a pair */
                snprintf(why, sizeof why, "every core waits at it");
            }
        }
        if (first)
            say(&mb, "deadlock: no collective can complete\n");
        first = 0;
        say(&mb, "core %u stuck at pc %u: %s (%s)\n", i, (unsigned)c->run.pc, dis, why);
    }
    int ret = TPU_OK;
    for (unsigned i = 0; i < C; i++) {
        if (st[i] == ST_WAIT)
            core_run_stuck(b->core[i]);
        if (b->core[i]->run.rc != TPU_OK && ret == TPU_OK)
            ret = b->core[i]->run.rc;
    }
    return ret;
}
