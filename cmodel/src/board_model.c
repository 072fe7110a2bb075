/* SPDX-License-Identifier: Apache-2.0 */
/* The board model (docs/board.md): C core models, each running its own program on its own
   host memory, joined by the collectives. Each core runs until it dispatches a collective;
   when every participant of a collective has reached it (the two cores of a send/recv pair,
   every core for bcast, barrier and allreduce) the board moves the data exactly as the ring
   algorithm does, writing each core's rows in the order of "Transfers, flits and the order
   of row writes" (so each core's trace is the RTL's), and completes it on each participant
   in the cycle the cycle model gives that core (docs/board.md "Cycle model": send/recv,
   bcast and allreduce run cycle by cycle through the routers from each core's own dispatch,
   the barrier from formulas). The order in which the board
   visits cores changes nothing: a core's results and trace depend only on its program and
   on the data of the collectives. When no collective can complete while cores wait, the
   board stops them (TPU_CORE_STUCK) and says why instead of hanging.
   A dead link (tpu_board_cfg_t.link_dead): a collective the model completes after
   link_dead_cycle runs its protocol's transfers (tokens and data) one by one, and a transfer
   whose routers' path crosses the dead link never arrives: the receivers of what did arrive
   write it, the cores whose part needs a lost transfer wait; when nothing can move any more,
   every core waiting at a collective stops it with error 9 (the hardware declares the link
   dead after its replays and every core's network unit stops). */
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
    uint64_t dead_flits; /* flits sent towards the dead link (they wait in front of it) */
    uint64_t dead_at;    /* board cycle the link is declared dead (CORE_NEVER: not yet) */
    uint64_t now;        /* board cycle of the collective being run (its first flits) */
    uint64_t dead_assumed; /* dead_at known before the run (a pass before this one found it) */
    unsigned char clogged[4u * TPU_BOARD_CORES_MAX]; /* per link: lost flits at its FIFO's head */
    tpu_board_net_t net; /* what the network units and routers keep between collectives */
};

enum { ST_RUN, ST_WAIT, ST_END, ST_LINK /* waits on a transfer the dead link lost */ };

tpu_board_t *tpu_board_new(const tpu_board_cfg_t *cfg)
{
    if (cfg == NULL || cfg->rows == 0 || cfg->cols == 0 || cfg->rows > TPU_BOARD_CORES_MAX ||
        cfg->cols > TPU_BOARD_CORES_MAX || cfg->rows * cfg->cols > TPU_BOARD_CORES_MAX ||
        (cfg->link_bits != 0 && (cfg->link_bits < TPU_BOARD_LINK_BITS_MIN ||
                                 cfg->link_bits > TPU_BOARD_LINK_BITS_MAX)) ||
        cfg->link_latency > TPU_BOARD_LINK_LATENCY_MAX ||
        (cfg->start_skew > TPU_BOARD_START_SKEW_MAX && cfg->start_skew != TPU_BOARD_START_TOGETHER) ||
        (cfg->link_ports != 0 && cfg->link_ports != 2 && cfg->link_ports != 4) ||
        (cfg->link_ports == 2 && cfg->rows > 1))
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
    if (b->cfg.link_ports == 0)
        b->cfg.link_ports = cfg->rows > 1 ? 4u : 2u;
    if (cfg->link_dead > b->cores * b->cfg.link_ports) {
        free(b);
        return NULL;
    }
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

/* internal: board cycle core k dispatched its collective in */
static uint64_t disp(const tpu_board_t *b, unsigned k)
{
    return b->core[k]->run.net_t + off(b, k);
}

/* internal: a collective the model completes in board cycle `last` meets the dead link */
static int dead_after(const tpu_board_t *b, uint64_t last)
{
    return b->cfg.link_dead != 0 && last >= b->cfg.link_dead_cycle;
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

/* ---- a dead link ------------------------------------------------------------------------ */

/* internal: the links of the routers' path from core a to core dst (docs/board.md "Router":
   dimension ordered, the shorter way round each ring), in order; returns their number */
static unsigned path_links(const tpu_board_t *b, unsigned a, unsigned dst, unsigned *out)
{
    unsigned R = b->cfg.rows, S = b->cfg.cols, P = b->cfg.link_ports, n = 0;
    unsigned r = a / S, c = a % S, rd = dst / S, cd = dst % S;
    while (c != cd) { /* east (port 1) if (cd - c) mod S <= S/2, else west (port 2) */
        int east = (cd + S - c) % S <= S / 2;
        out[n++] = (r * S + c) * P + (east ? 0u : 1u);
        c = east ? (c + 1u) % S : (c + S - 1u) % S;
    }
    while (r != rd) { /* then south (port 3) or north (port 4) */
        int south = (rd + R - r) % R <= R / 2;
        out[n++] = (r * S + c) * P + (south ? 2u : 3u);
        r = south ? (r + 1u) % R : (r + R - 1u) % R;
    }
    return n;
}

/* internal: 0 if a transfer from core a to core dst gets through, else 1 + the number of
   links before the one that stops it on its path: the dead link, or a link whose receiver
   FIFO holds lost flits at its head (every later flit waits behind them) */
static unsigned lost(const tpu_board_t *b, unsigned a, unsigned dst)
{
    unsigned links[2u * TPU_BOARD_CORES_MAX];
    if (b->cfg.link_dead == 0 || a == dst)
        return 0;
    unsigned n = path_links(b, a, dst, links);
    for (unsigned j = 0; j < n; j++)
        if (links[j] == b->cfg.link_dead - 1u || b->clogged[links[j]])
            return j + 1u;
    return 0;
}

/* internal: core a sends `flits` flits (a token: 1) to core dst from board cycle t. 1 if they
   arrive or the sender gets rid of them all; 0 if they wait for the dead link with the sender
   behind them. The dead link's sender takes R flits (its replay window, never acknowledged),
   every working link before it on the path a receiver FIFO of Depth flits (docs/board.md
   "Link"); the lost flits of every transfer so far share them, and a FIFO they reach is
   clogged for every later transfer. The capacity is a model: the routers' cut-through rule and
   other packets in the same FIFOs make the RTL's a little smaller. */
static int absorbed(tpu_board_t *b, unsigned a, unsigned dst, uint64_t flits, uint64_t t)
{
    unsigned h = lost(b, a, dst), D = b->cfg.link_latency, R = 1;
    unsigned links[2u * TPU_BOARD_CORES_MAX];
    if (h == 0)
        return 1;
    /* the first lost flit (sent in board cycle t): the link times out (Timeout = 4D + 16)
       DeadAfter = 16 times */
    if (b->dead_at == CORE_NEVER || t + 16u * (4u * D + 17u) < b->dead_at)
        b->dead_at = t + 16u * (4u * D + 17u);
    while (R < 2u * D + 2u)
        R *= 2u;
    b->dead_flits += flits;
    uint64_t depth = 2u * (TPU_BOARD_PKT_PAYLOAD + 1u) + 2u * D + 2u;
    path_links(b, a, dst, links);
    for (unsigned j = 0; j + 1u < h; j++) /* link j's FIFO is the (h - 1 - j)-th before */
        if (b->dead_flits > R + (uint64_t)(h - 2u - j) * depth)
            b->clogged[links[j]] = 1;
    return b->dead_flits <= R + (uint64_t)(h - 1u) * depth;
}

/* internal: flits of a transfer of elements [e0, e1) of a region of w-bit elements starting
   at lane 0 of a row (docs/board.md "Transfers"): per row segment ceil(lanes / E), plus one
   header per 31 payload flits; 0 for no elements */
static uint64_t xfer_flits(const tpu_board_t *b, size_t e0, size_t e1, unsigned w)
{
    unsigned n = b->core[0]->n, E = b->cfg.link_bits / w;
    uint64_t pl = 0;
    for (size_t e = e0; e < e1;) {
        size_t end = (e / n + 1u) * n < e1 ? (e / n + 1u) * n : e1;
        pl += (end - e + E - 1u) / E;
        e = end;
    }
    return pl + (pl + TPU_BOARD_PKT_PAYLOAD - 1u) / TPU_BOARD_PKT_PAYLOAD;
}

/* one ring phase of an allreduce as one core sees it (docs/board.md "A ring phase") */
struct arph {
    unsigned m, p, east, west;
    size_t a, len;
    int gather;
};

/* internal: core k's ring phases of allreduce d, the ones of one core skipped */
static unsigned ar_phases(const tpu_board_t *b, unsigned k, const tpu_dinsn_t *d,
                          struct arph ph[4])
{
    unsigned R = b->cfg.rows, S = b->cfg.cols, C = b->cores, np = 0;
    size_t len = (size_t)d->n * b->core[0]->n;
    if (d->ring || R == 1) {
        if (C > 1) {
            ph[0] = (struct arph){ C, k, (k + 1u) % C, (k + C - 1u) % C, 0, len, 0 };
            ph[1] = ph[0];
            ph[1].gather = 1;
            np = 2;
        }
        return np;
    }
    unsigned r = k / S, c = k % S, j1 = (c + 1u) % S;
    size_t lo = tpu_chunk_lo(len, S, j1), hi = tpu_chunk_lo(len, S, j1 + 1u);
    struct arph row = { S, c, r * S + (c + 1u) % S, r * S + (c + S - 1u) % S, 0, len, 0 };
    struct arph col = { R, r, ((r + 1u) % R) * S + c, ((r + R - 1u) % R) * S + c, lo, hi - lo, 0 };
    if (S > 1)
        ph[np++] = row;
    if (R > 1) {
        ph[np++] = col;
        col.gather = 1;
        ph[np++] = col;
    }
    if (S > 1) {
        row.gather = 1;
        ph[np++] = row;
    }
    return np;
}

/* internal: 1 if a transfer of allreduce d crosses the dead link */
static int allreduce_loses(const tpu_board_t *b, const tpu_dinsn_t *d)
{
    for (unsigned k = 0; k < b->cores; k++) {
        struct arph ph[4];
        unsigned np = ar_phases(b, k, d, ph);
        for (unsigned i = 0; i < np; i++)
            if (lost(b, k, ph[i].west) || lost(b, k, ph[i].east))
                return 1;
    }
    return 0;
}

/* internal: allreduce d with the dead link, transfer by transfer as tpu_core_coll runs it:
   at a phase's start the ready token to west; step t's send after the token from east (t = 0)
   or the receive of step t-1 (t >= 1), a copy of the chunk at that moment; a receive when its
   data has arrived (lost: never), merged and written as in ring_phase. A token or a send that
   the dead link loses completes if the network takes its flits (absorbed), else the core waits
   there. Only the cores with present[k] take
   part (the others wait elsewhere: they send nothing). ok[k] = 1: core k completed it. */
static int allreduce_dead(tpu_board_t *b, const tpu_dinsn_t *d, const int *present, int *ok)
{
    unsigned C = b->cores;
    struct st {
        struct arph ph[4];
        unsigned np, cur, txs, rxs;
        int started, stuck, tx_stuck; /* stuck: in its token; tx_stuck: its sender waits */
    } *s = calloc(C, sizeof *s);
    uint32_t **msg = calloc((size_t)C * 4u * C, sizeof *msg); /* [k][phase][step], NULL: none */
    unsigned char *arrived = calloc((size_t)C * 4u * C, 1);
    unsigned *tok = calloc((size_t)C * C, sizeof *tok);        /* [from][to] ready tokens */
    int rc = 0;
    if (s == NULL || msg == NULL || arrived == NULL || tok == NULL) {
        rc = TPU_ENOMEM;
        goto out;
    }
    for (unsigned k = 0; k < C; k++)
        s[k].np = ar_phases(b, k, d, s[k].ph);
    for (int progress = 1; progress && rc == 0;) {
        progress = 0;
        for (unsigned k = 0; k < C && rc == 0; k++) {
            struct st *x = &s[k];
            if (!present[k] || x->stuck || x->cur >= x->np)
                continue;
            const struct arph *ph = &x->ph[x->cur];
            tpu_core_t *c = b->core[k];
            unsigned m = ph->m;
            if (!x->started) {
                x->started = progress = 1;
                if (lost(b, k, ph->west)) {
                    x->stuck = !absorbed(b, k, ph->west, 1, disp(b, k));
                    if (x->stuck)
                        continue;
                } else {
                    tok[(size_t)k * C + ph->west]++;
                }
            }
            if (!x->tx_stuck && x->txs + 1u < m && x->rxs >= x->txs &&
                (x->txs > 0 || tok[(size_t)ph->east * C + k] > 0)) {
                if (x->txs == 0)
                    tok[(size_t)ph->east * C + k]--;
                unsigned j = (ph->p + 2u * m - x->txs + (ph->gather ? 1u : 0u)) % m;
                size_t e0 = ph->a + tpu_chunk_lo(ph->len, m, j),
                       e1 = ph->a + tpu_chunk_lo(ph->len, m, j + 1u);
                size_t slot = ((size_t)k * 4u + x->cur) * C + x->txs;
                arrived[slot] = !lost(b, k, ph->east);
                if (!arrived[slot] && !absorbed(b, k, ph->east, xfer_flits(b, e0, e1, 32u), b->now))
                    x->tx_stuck = 1; /* its receiver goes on: tpu_core_coll's tx and rx */
                if (x->tx_stuck)
                    goto rx;
                msg[slot] = malloc(sizeof(uint32_t) * (e1 - e0 + 1u));
                if (msg[slot] == NULL) {
                    rc = TPU_ENOMEM;
                    break;
                }
                read_elems(c, TPU_MEM_ACC, c->run.net.row, e0, e1, msg[slot]);
                x->txs++;
                progress = 1;
            }
        rx:;
            size_t from = ((size_t)ph->west * 4u + x->cur) * C + x->rxs;
            if (x->rxs + 1u < m && arrived[from]) {
                unsigned j = (ph->p + 2u * m - 1u - x->rxs + (ph->gather ? 1u : 0u)) % m;
                write_elems(c, TPU_MEM_ACC, c->run.net.row, ph->a + tpu_chunk_lo(ph->len, m, j),
                            ph->a + tpu_chunk_lo(ph->len, m, j + 1u), msg[from], !ph->gather);
                x->rxs++;
                progress = 1;
            }
            if (x->txs + 1u == m && x->rxs + 1u == m) {
                x->cur++;
                x->started = 0;
                x->txs = x->rxs = 0;
                progress = 1;
            }
        }
    }
    for (unsigned k = 0; k < C && rc == 0; k++)
        ok[k] = present[k] && s[k].cur >= s[k].np;
out:
    if (msg != NULL)
        for (size_t i = 0; i < (size_t)C * 4u * C; i++)
            free(msg[i]);
    free(msg);
    free(arrived);
    free(tok);
    free(s);
    return rc;
}

/* internal: bcast d from its root with the dead link: send j (to root + j) after its
   receiver's ready token; a lost token (or a receiver not present) stops the root there, lost
   data stops the receiver (and the root too unless the network takes it) */
static void bcast_dead(tpu_board_t *b, const tpu_dinsn_t *d, const int *present, int *ok)
{
    unsigned C = b->cores, k0 = d->peer;
    for (unsigned k = 0; k < C; k++)
        ok[k] = 0;
    ok[k0] = present[k0];
    for (unsigned j = 1; j < C && ok[k0]; j++) {
        unsigned dst = (k0 + j) % C;
        if (!present[dst] || lost(b, dst, k0)) { /* its ready token never comes */
            if (present[dst])
                absorbed(b, dst, k0, 1, disp(b, dst));
            ok[k0] = 0;
        } else if (!lost(b, k0, dst)) {
            copy_rows(b->core[k0], b->core[dst], d->mem, d->n);
            ok[dst] = 1;
        } else if (!absorbed(b, k0, dst, xfer_flits(b, 0, (size_t)d->n * b->core[0]->n,
                                                     d->mem == TPU_MEM_ACC ? 32u : 16u),
                             b->now)) {
            ok[k0] = 0;
        }
    }
}

/* internal: a barrier with the dead link: core 0 releases only after every arrival, a core
   c != 0 completes when its release arrives */
static void barrier_dead(tpu_board_t *b, const int *present, int *ok)
{
    unsigned C = b->cores;
    int all = present[0];
    for (unsigned c = 1; c < C; c++)
        if (present[c] && lost(b, c, 0)) {
            absorbed(b, c, 0, 1, disp(b, c));
            all = 0;
        } else {
            all = all && present[c];
        }
    ok[0] = all;
    for (unsigned c = 1; c < C; c++) /* the releases, in order: core 0 waits behind a lost one */
        if (!ok[0] || lost(b, 0, c)) {
            ok[c] = 0;
            if (ok[0] && !absorbed(b, 0, c, 1, b->now))
                ok[0] = 0;
        } else {
            ok[c] = 1;
        }
}

/* internal: group collective d (bcast, barrier, allreduce) with the dead link, on the cores
   with present[k] (all of them, or after the link broke another collective, those waiting at
   this one: the RTL runs what it can of it between them); ok[k]: core k completed it */
static int group_dead(tpu_board_t *b, const tpu_dinsn_t *d, const int *present, int *ok)
{
    for (unsigned k = 0; k < b->cores; k++)
        ok[k] = 0;
    if (d->opcode == TPU_OP_ALLREDUCE)
        return allreduce_dead(b, d, present, ok);
    if (d->opcode == TPU_OP_BCAST)
        bcast_dead(b, d, present, ok);
    else
        barrier_dead(b, present, ok);
    return 0;
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

static int board_run_once(tpu_board_t *b, const tpu_board_job_t job[], tpu_core_result_t res[],
                          char *msg, size_t msglen)
{
    unsigned C = b->cores;
    int st[TPU_BOARD_CORES_MAX];
    int broke = 0; /* the dead link has stopped a collective */
    struct msgbuf mb = { msg, msglen, 0 };
    if (msg && msglen)
        msg[0] = 0;
    b->dead_flits = 0;
    memset(b->clogged, 0, sizeof b->clogged);
    memset(&b->net, 0, sizeof b->net);
    b->dead_at = b->dead_assumed;
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
        /* a collective dispatched after the link was declared dead stops at once */
        int late = 0;
        for (unsigned k = 0; k < C; k++) {
            tpu_core_t *c = b->core[k];
            if (st[k] == ST_WAIT && b->dead_at != CORE_NEVER &&
                c->run.net_t + off(b, k) >= b->dead_at) {
                core_net_abort(c, c->run.net_t + 1u);
                st[k] = ST_RUN;
                late = 1;
            }
        }
        if (late)
            continue;
        int progress = 0;
        /* pairs: a send to d and d's recv from the sender; the pairs found together run
           together (they may share links and routers: tpu_board_sendrecv_set_done) */
        tpu_board_xfer_t xs[TPU_BOARD_CORES_MAX];
        unsigned nx = 0;
        for (unsigned i = 0; i < C; i++) {
            tpu_core_t *s = b->core[i];
            if (st[i] != ST_WAIT || s->run.net.opcode != TPU_OP_SEND)
                continue;
            unsigned dst = s->run.net.peer;
            tpu_core_t *r = b->core[dst];
            if (st[dst] != ST_WAIT || r->run.net.opcode != TPU_OP_RECV || r->run.net.peer != i ||
                r->run.net.n != s->run.net.n || r->run.net.mem != s->run.net.mem)
                continue;
            /* board time: core k's cycle x is board cycle x + off(k) */
            uint64_t sd, rd;
            tpu_board_sendrecv_done(s->run.net.n, s->n, s->run.net.mem == TPU_MEM_ACC ? 32u : 16u,
                                    tpu_board_hops(b->cfg.rows, b->cfg.cols, i, dst),
                                    b->cfg.link_bits, b->cfg.link_latency,
                                    s->run.net_t + off(b, i), r->run.net_t + off(b, dst), &sd,
                                    &rd);
            progress = 1;
            b->now = core_max(s->run.net_t + off(b, i), r->run.net_t + off(b, dst));
            if (b->dead_at != CORE_NEVER && rd > b->dead_at) {
                /* in progress when the link is declared dead: the receiver stops (its rows
                   not modelled: none), the sender too unless it was done */
                broke = 1;
                st[dst] = st[i] = ST_LINK;
                if (sd <= b->dead_at) {
                    core_net_complete(s, sd - off(b, i));
                    st[i] = ST_RUN;
                }
                continue;
            }
            if (dead_after(b, rd) && (lost(b, dst, i) || lost(b, i, dst))) {
                /* the ready token lost: neither side moves; the data lost: the sender is done
                   if the network takes it */
                broke = 1;
                st[dst] = st[i] = ST_LINK;
                if (lost(b, dst, i))
                    absorbed(b, dst, i, 1, disp(b, dst));
                else if (absorbed(b, i, dst, xfer_flits(b, 0, (size_t)s->run.net.n * s->n,
                                                         s->run.net.mem == TPU_MEM_ACC ? 32u
                                                                                       : 16u),
                                  b->now)) {
                    core_net_complete(s, sd - off(b, i));
                    st[i] = ST_RUN;
                }
                continue;
            }
            copy_rows(s, r, s->run.net.mem, s->run.net.n);
            st[i] = st[dst] = ST_RUN;
            if (b->cfg.link_dead == 0) {
                xs[nx++] = (tpu_board_xfer_t){ i, dst, s->run.net.n,
                                               s->run.net.mem == TPU_MEM_ACC ? 32u : 16u,
                                               s->run.net_t + off(b, i),
                                               r->run.net_t + off(b, dst) };
                continue;
            }
            core_net_complete(s, sd - off(b, i));
            core_net_complete(r, rd - off(b, dst));
        }
        if (nx > 0) {
            uint64_t sds[TPU_BOARD_CORES_MAX], rds[TPU_BOARD_CORES_MAX];
            int rc = tpu_board_sendrecv_set_done(xs, nx, b->core[0]->n, b->cfg.rows, b->cfg.cols,
                                                 b->cfg.link_bits, b->cfg.link_latency, sds,
                                                 rds, &b->net);
            if (rc < 0)
                return rc;
            for (unsigned j = 0; j < nx; j++) {
                core_net_complete(b->core[xs[j].src], sds[j] - off(b, xs[j].src));
                core_net_complete(b->core[xs[j].dst], rds[j] - off(b, xs[j].dst));
            }
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
            uint64_t t0 = 0;
            for (unsigned k = 0; k < C; k++)
                t0 = core_max(t0, b->core[k]->run.net_t + off(b, k));
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
                if (b->cfg.link_dead != 0) {
                    tpu_board_bcast_done(d->n, b->core[0]->n, d->mem == TPU_MEM_ACC ? 32u : 16u,
                                         C, d->peer, arr, hops, b->cfg.link_bits,
                                         b->cfg.link_latency, bdone);
                } else {
                    rc = tpu_board_bcast_run_done(d->n, b->core[0]->n,
                                                  d->mem == TPU_MEM_ACC ? 32u : 16u, b->cfg.rows,
                                                  b->cfg.cols, d->peer, b->cfg.link_bits,
                                                  b->cfg.link_latency, arr, bdone, &b->net);
                    if (rc < 0)
                        return rc;
                }
            } else { /* allreduce: each core from its own dispatch */
                for (unsigned k = 0; k < C; k++)
                    arr[k] = b->core[k]->run.net_t + off(b, k);
                rc = tpu_board_allreduce_done(d->n, b->core[0]->n, b->cfg.rows, b->cfg.cols,
                                              d->ring, b->cfg.link_bits, b->cfg.link_latency,
                                              arr, bdone, &b->net);
                if (rc < 0)
                    return rc;
            }
            uint64_t last = 0; /* the last core's completion */
            for (unsigned k = 0; k < C; k++)
                last = core_max(last, bdone[k]);
            int ok[TPU_BOARD_CORES_MAX], all[TPU_BOARD_CORES_MAX], degraded = 0;
            uint64_t dead0 = b->dead_at; /* declared before this collective */
            for (unsigned k = 0; k < C; k++) {
                uint64_t dk = bdone[k];
                ok[k] = 1;
                /* a bcast receiver that would complete after the declaration stops first */
                all[k] = dead0 == CORE_NEVER || d->opcode != TPU_OP_BCAST || dk <= dead0 ||
                         k == d->peer;
            }
            b->now = t0;
            if (dead0 != CORE_NEVER && last > dead0 && d->opcode == TPU_OP_ALLREDUCE) {
                /* in progress when the link is declared dead (its partial rows: none) */
                for (unsigned k = 0; k < C; k++)
                    ok[k] = 0;
                degraded = 1;
            } else if ((dead0 != CORE_NEVER && last > dead0) ||
                       (dead_after(b, last) &&
                        (d->opcode != TPU_OP_ALLREDUCE || allreduce_loses(b, d)))) {
                /* the dead link may break it: transfer by transfer */
                rc = group_dead(b, d, all, ok);
                degraded = 1;
            }
            for (unsigned k = 0; k < C && dead0 != CORE_NEVER; k++)
                if (bdone[k] > dead0)
                    ok[k] = 0;
            if (!degraded) {
                if (d->opcode == TPU_OP_ALLREDUCE)
                    rc = exec_allreduce(b, d);
                else if (d->opcode == TPU_OP_BCAST)
                    for (unsigned k = 1; k < C; k++) /* root k sends to k+1, k+2, ... */
                        copy_rows(b->core[d->peer], b->core[(d->peer + k) % C], d->mem, d->n);
            }
            if (rc < 0)
                return rc;
            for (unsigned k = 0; k < C; k++) {
                uint64_t dk = bdone[k];
                if (!ok[k]) {
                    st[k] = ST_LINK;
                    broke = 1;
                    continue;
                }
                core_net_complete(b->core[k], dk - off(b, k));
                st[k] = ST_RUN;
            }
            continue;
        }
        if (broke || b->dead_at != CORE_NEVER) {
            /* Nothing can move and the dead link has broken a collective. The cores waiting
               together at a group collective whose other participants wait on the link run
               what they can of it between them (as the RTL does); one that completes its
               part goes on. Else the link is declared dead: every core waiting at a
               collective stops it (error 9) and halts. */
            int moved = 0, seen[TPU_BOARD_CORES_MAX] = { 0 };
            for (unsigned k = 0; k < C; k++) {
                const tpu_dinsn_t *d = &b->core[k]->run.net;
                if (st[k] != ST_WAIT || seen[k] || !is_group(d->opcode))
                    continue;
                int present[TPU_BOARD_CORES_MAX], ok[TPU_BOARD_CORES_MAX];
                uint64_t t0 = 0;
                for (unsigned j = 0; j < C; j++) {
                    present[j] = st[j] == ST_WAIT && same_group(&b->core[j]->run.net, d);
                    seen[j] |= present[j];
                    if (present[j])
                        t0 = core_max(t0, b->core[j]->run.net_t + off(b, j));
                }
                b->now = t0;
                int rc = group_dead(b, d, present, ok);
                if (rc < 0)
                    return rc;
                for (unsigned j = 0; j < C; j++) {
                    if (!present[j])
                        continue;
                    /* its completion: a model, as if the others had come */
                    uint64_t dj = t0 + coll_cycles(b, d, j);
                    if (ok[j] && (b->dead_at == CORE_NEVER || dj <= b->dead_at)) {
                        core_net_complete(b->core[j], dj - off(b, j));
                        st[j] = ST_RUN;
                        moved = 1;
                    } else {
                        st[j] = ST_LINK;
                    }
                }
            }
            if (moved)
                continue;
            for (unsigned k = 0; k < C; k++)
                if (st[k] == ST_WAIT || st[k] == ST_LINK) {
                    tpu_core_t *c = b->core[k];
                    uint64_t at = b->dead_at != CORE_NEVER && b->dead_at > off(b, k)
                                      ? b->dead_at - off(b, k) : 0;
                    core_net_abort(c, core_max(c->run.net_t + 1u, at));
                    st[k] = ST_RUN;
                    moved = 1;
                }
            broke = 0;
            if (moved)
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

/* With a dead link the board visits collectives in the order their participants arrive, not
   in time: a collective found later may lose the first flit, and the link's declaration time
   decides collectives matched before. So the run is repeated, without traces and from the same
   memories and host images, until the declaration time it finds is the one it assumed (it only
   moves earlier); then once more for real. */
int tpu_board_run(tpu_board_t *b, const tpu_board_job_t job[], tpu_core_result_t res[],
                  char *msg, size_t msglen)
{
    if (b == NULL || job == NULL || res == NULL)
        return TPU_EINVAL;
    unsigned C = b->cores;
    b->dead_assumed = CORE_NEVER;
    if (b->cfg.link_dead == 0)
        return board_run_once(b, job, res, msg, msglen);
    tpu_board_job_t *quiet = calloc(C, sizeof *quiet);
    uint8_t **host = calloc(C, sizeof *host);
    uint32_t **mem = calloc((size_t)C * TPU_MEM_COUNT, sizeof *mem);
    uint8_t **wr = calloc((size_t)C * TPU_MEM_COUNT, sizeof *wr);
    int rc = quiet && host && mem && wr ? 0 : TPU_ENOMEM;
    for (unsigned i = 0; i < C && rc == 0; i++) {
        tpu_core_t *c = b->core[i];
        quiet[i] = job[i];
        quiet[i].trace = NULL;
        if (job[i].host_bytes && (host[i] = malloc(job[i].host_bytes)) == NULL)
            rc = TPU_ENOMEM;
        else if (job[i].host_bytes)
            memcpy(host[i], job[i].host, job[i].host_bytes);
        for (unsigned m = 0; m < TPU_MEM_COUNT && rc == 0; m++) {
            size_t k = (size_t)i * TPU_MEM_COUNT + m, rows = c->rows[m];
            mem[k] = malloc(sizeof(uint32_t) * rows * c->n);
            wr[k] = malloc(rows ? rows : 1u);
            if (mem[k] == NULL || wr[k] == NULL) {
                rc = TPU_ENOMEM;
                break;
            }
            memcpy(mem[k], c->mem[m], sizeof(uint32_t) * rows * c->n);
            memcpy(wr[k], c->written[m], rows);
        }
    }
    for (unsigned pass = 0; pass < 16 && rc == 0; pass++) {
        rc = board_run_once(b, quiet, res, NULL, 0);
        for (unsigned i = 0; i < C; i++) { /* back to the start */
            tpu_core_t *c = b->core[i];
            if (job[i].host_bytes)
                memcpy(job[i].host, host[i], job[i].host_bytes);
            for (unsigned m = 0; m < TPU_MEM_COUNT; m++) {
                size_t k = (size_t)i * TPU_MEM_COUNT + m;
                memcpy(c->mem[m], mem[k], sizeof(uint32_t) * c->rows[m] * c->n);
                memcpy(c->written[m], wr[k], c->rows[m]);
            }
        }
        if (rc != 0 || b->dead_at == b->dead_assumed)
            break;
        b->dead_assumed = b->dead_at;
    }
    if (quiet)
        for (unsigned i = 0; i < C; i++) {
            free(host[i]);
            for (unsigned m = 0; m < TPU_MEM_COUNT; m++) {
                free(mem[(size_t)i * TPU_MEM_COUNT + m]);
                free(wr[(size_t)i * TPU_MEM_COUNT + m]);
            }
        }
    free(quiet);
    free(host);
    free(mem);
    free(wr);
    return rc != 0 ? rc : board_run_once(b, job, res, msg, msglen);
}
