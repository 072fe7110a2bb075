/* SPDX-License-Identifier: Apache-2.0 */
/* The cycle model of an all-reduce on the board and the ring bound (docs/board.md). */
#include <stdlib.h>
#include <string.h>

#include "tpu/board.h"

static uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

uint64_t tpu_allreduce_ring_cycles(size_t n, unsigned m, unsigned link_bits,
                                   unsigned link_latency)
{
    if (m <= 1 || link_bits == 0)
        return 0;
    uint64_t payload = div_up(32u * div_up(n, m), link_bits);
    uint64_t flits = payload + div_up(payload, TPU_BOARD_PKT_PAYLOAD);
    uint64_t step = flits + link_latency + TPU_BOARD_STEP_OVERHEAD;
    return 2u * (uint64_t)(m - 1) * step;
}

uint64_t tpu_allreduce_torus_cycles(size_t n, unsigned rows, unsigned cols, unsigned link_bits,
                                    unsigned link_latency)
{
    if (cols == 0)
        return 0;
    return tpu_allreduce_ring_cycles(n, cols, link_bits, link_latency) +
           tpu_allreduce_ring_cycles((size_t)div_up(n, cols), rows, link_bits, link_latency);
}

double tpu_allreduce_ring_bound(size_t n, unsigned m, unsigned link_bits)
{
    if (m == 0 || link_bits == 0)
        return 0.0;
    return 2.0 * (double)(m - 1) / (double)m * 4.0 * (double)n / ((double)link_bits / 8.0);
}

/* internal: flits of a transfer of `rows` whole rows of n elements of elem_bits bits: each
   row ceil(n/E) flits (E = floor(W/w) elements per flit, a flit never spans two rows), plus
   one header per 31 payload flits */
static uint64_t transfer_flits(unsigned rows, unsigned n, unsigned elem_bits, unsigned link_bits)
{
    unsigned e = link_bits / elem_bits;
    if (e == 0)
        e = 1;
    uint64_t payload = (uint64_t)rows * div_up(n, e);
    return payload + div_up(payload, TPU_BOARD_PKT_PAYLOAD);
}

/* internal: a packet's head crossing h hops (D + 1 cycles per hop) */
static uint64_t path(unsigned hops, unsigned link_latency)
{
    return (uint64_t)hops * (link_latency + 1u);
}

void tpu_board_sendrecv_done(unsigned rows, unsigned n, unsigned elem_bits, unsigned hops,
                             unsigned link_bits, unsigned link_latency, uint64_t s, uint64_t r,
                             uint64_t *sdone, uint64_t *rdone)
{
    uint64_t p = path(hops, link_latency);
    uint64_t f = link_bits && elem_bits ? transfer_flits(rows, n, elem_bits, link_bits) : 0;
    /* the ready token (injected 2 cycles after the receiver's dispatch, taken 3 cycles after
       its head arrives), then the flits one per cycle; the last one's write P + 1 later
       (measured on board_tb: send/recv of 1 .. 100 UB and ACC rows, 1 .. 3 hops, either
       side first) */
    uint64_t start = s + 3u > r + p + 5u ? s + 3u : r + p + 5u;
    *sdone = start + f;
    *rdone = start + f + p + 1u;
}

uint64_t tpu_board_sendrecv_cycles(unsigned rows, unsigned n, unsigned elem_bits,
                                   unsigned hops, unsigned link_bits, unsigned link_latency)
{
    if (link_bits == 0 || elem_bits == 0)
        return 0;
    uint64_t sd, rd;
    tpu_board_sendrecv_done(rows, n, elem_bits, hops, link_bits, link_latency, 0, 0, &sd, &rd);
    return rd;
}

void tpu_board_bcast_done(unsigned rows, unsigned n, unsigned elem_bits, unsigned cores,
                          unsigned root, const uint64_t *disp, const unsigned *hops,
                          unsigned link_bits, unsigned link_latency, uint64_t *done)
{
    uint64_t f = link_bits && elem_bits ? transfer_flits(rows, n, elem_bits, link_bits) : 0;
    uint64_t next = disp[root] + 4u; /* the earliest start of the root's next send */
    done[root] = disp[root] + 1u;    /* C = 1: nothing to send */
    for (unsigned j = 1; j < cores; j++) {
        unsigned k = (root + j) % cores;
        uint64_t p = path(hops[k], link_latency);
        uint64_t start = next > disp[k] + p + 5u ? next : disp[k] + p + 5u;
        done[k] = start + f + p + 1u;
        done[root] = start + f;
        next = start + f + 3u;
    }
}

/* internal: tpu_board_bcast_done with every core dispatching in 0 and every receiver `hops`
   from the root (root 0) */
static void bcast_uniform(unsigned rows, unsigned n, unsigned elem_bits, unsigned cores,
                          unsigned hops, unsigned link_bits, unsigned link_latency,
                          uint64_t *done)
{
    uint64_t disp[TPU_BOARD_CORES_MAX] = { 0 };
    unsigned h[TPU_BOARD_CORES_MAX];
    for (unsigned c = 0; c < cores; c++)
        h[c] = hops;
    tpu_board_bcast_done(rows, n, elem_bits, cores, 0, disp, h, link_bits, link_latency, done);
}

uint64_t tpu_board_bcast_cycles(unsigned rows, unsigned n, unsigned elem_bits, unsigned cores,
                                unsigned max_hops, unsigned link_bits, unsigned link_latency)
{
    if (cores <= 1 || cores > TPU_BOARD_CORES_MAX || link_bits == 0 || elem_bits == 0)
        return 0;
    uint64_t done[TPU_BOARD_CORES_MAX];
    bcast_uniform(rows, n, elem_bits, cores, max_hops, link_bits, link_latency, done);
    return done[0];
}

uint64_t tpu_board_bcast_recv_cycles(unsigned rows, unsigned n, unsigned elem_bits, unsigned j,
                                     unsigned hops, unsigned link_bits, unsigned link_latency)
{
    if (link_bits == 0 || elem_bits == 0 || j == 0 || j >= TPU_BOARD_CORES_MAX)
        return 0;
    uint64_t done[TPU_BOARD_CORES_MAX];
    bcast_uniform(rows, n, elem_bits, j + 1u, hops, link_bits, link_latency, done);
    return done[j];
}

uint64_t tpu_board_barrier_cycles(unsigned cores, unsigned max_hops, unsigned link_latency)
{
    if (cores <= 1)
        return 1;
    /* every core arrives together; the slowest: the farthest arrival token, then the last
       release to a core as far */
    return 2u * path(max_hops, link_latency) + cores + 5u;
}

void tpu_board_barrier_done(unsigned cores, const uint64_t *arrive, const unsigned *hops,
                            unsigned link_latency, uint64_t *done)
{
    if (cores <= 1) {
        if (cores == 1)
            done[0] = arrive[0] + 1u;
        return;
    }
    /* core c != 0 injects its arrival token 2 cycles after its dispatch; it is counted at
       core 0 two cycles after its head arrives; core 0 waits from 2 cycles after its own */
    uint64_t all = arrive[0] + 2u;
    for (unsigned c = 1; c < cores; c++) {
        uint64_t t = arrive[c] + 2u + path(hops[c], link_latency) + 2u;
        all = t > all ? t : all;
    }
    /* core 0 then injects the releases to 1, 2, ..., C-1, one per cycle */
    done[0] = all + cores - 1u;
    for (unsigned c = 1; c < cores; c++)
        done[c] = all + c + path(hops[c], link_latency) + 2u;
}

/* ---- the allreduce instruction on the board (tpu_core's network unit) ---- */

/* The allreduce is run cycle by cycle as tpu_core_coll and tpu_router run it (docs/board.md
   "The allreduce, cycle by cycle"): per core its controller (the divisions and walks of every
   ring phase, then the phase's steps), its sender and receiver sharing one memory read port
   and its two-flit ejection buffer; per router its inputs (the links' receiver FIFOs), its
   outputs (one packet at a time, round robin, a header only when the next FIFO has room for
   its packet) and its links' credits. */

/* internal: the cycles tpu_core_coll's sequential divider is busy with a / b (32-bit
   quotient register, 16-bit remainder): one quotient bit per cycle, or eight zero bits at once
   while the remainder is 0, the quotient register's top byte is 0 and more than eight bits
   are left (at the start, and again whenever the remainder returns to 0) */
static unsigned div_cycles(uint64_t a, unsigned b)
{
    uint32_t q = (uint32_t)a, r = 0;
    unsigned cnt = 32, cycles = 0;
    b &= 0xFFFFu;
    while (cnt > 0) {
        cycles++;
        if (r == 0 && (q >> 24) == 0 && cnt > 8) {
            q <<= 8;
            cnt -= 8;
        } else {
            uint32_t t = (r << 1) | (q >> 31);
            q <<= 1;
            if (t >= b) {
                r = (t - b) & 0xFFFFu;
                q |= 1u;
            } else {
                r = t & 0xFFFFu;
            }
            cnt--;
        }
    }
    return cycles;
}

enum { AR_TOK, AR_HDR, AR_PL };              /* flit kinds */
enum { AR_SEL, AR_SETUP, AR_RUN, AR_DONE,    /* allreduce: CPhSel, the set-up, CPhRun */
       AR_PRE,                               /* send, recv: before CSendWait / CTok */
       AR_SWAIT, AR_STX,                     /* send: CSendWait, CTxWait */
       AR_RTOK, AR_RRX, AR_RWAIT };          /* recv: CTok, CRx, CRxWait */
enum { AR_OP_NONE, AR_OP_AR, AR_OP_SEND, AR_OP_RECV, AR_OP_BCAST /* the root */ };

struct ar_flit {
    uint64_t at;          /* the cycle it is at the head of the link's receiver FIFO */
    unsigned short len;   /* a header's payload flits */
    unsigned char kind, src, dst, last;
};

struct ar_fifo { /* a link's receiver FIFO: a router input */
    struct ar_flit *v;
    size_t head, n, cap;
};

struct ar_xfer { /* the sender or the receiver of one step: elements [e, e1) */
    int busy, have, fresh;
    size_t e, e1;
    uint64_t rem;   /* sender: payload flits left */
    unsigned pk;    /* sender: payload flits left in the packet (0: a header is next) */
};

struct ar_core {
    /* tpu_core_coll */
    int op;          /* AR_OP_*: the collective it runs (none: its router only) */
    unsigned peer, E; /* send, recv: the other core; elements per flit */
    unsigned bc_i;    /* bcast root: its sends so far (the next to core root + bc_i + 1) */
    int st;
    uint64_t t_next; /* AR_SEL: the cycle of the next CPhSel; AR_SETUP: the token's cycle */
    unsigned ph;     /* phases done (0..4) */
    unsigned m, p, east, west; /* the phase: ring size, position, neighbours */
    size_t a, len;
    int gather;
    unsigned txstep, rxstep;
    int txrun, rxrun, txtok, prio;
    struct ar_xfer tx, rx;
    struct ar_flit ef[2]; /* ejection buffer */
    unsigned ef_n;
    int inpkt;
    uint64_t rdy;         /* ready tokens by source */
    /* this cycle: the flit offered to the router, taken or not; the flit the router ejects */
    int inj_valid, inj_taken, ej_in;
    struct ar_flit inj, ej;
    int st0;              /* the controller's state at the start of the cycle */
    /* tpu_router: ports 0 local, 1 east, 2 west, 3 south, 4 north */
    struct ar_fifo in[5];
    int lock[5];
    unsigned owner[5], rr[5];
    uint64_t sent[5], returned[5], ret_at[5][32]; /* per output link: credits */
    unsigned ret_head[5], ret_n[5];
};

/* internal: the router next to core k in direction o (1 east, 2 west, 3 south, 4 north) */
static unsigned ar_nbr(unsigned rows, unsigned cols, unsigned k, unsigned o)
{
    unsigned r = k / cols, c = k % cols;
    switch (o) {
    case 1: return r * cols + (c + 1u) % cols;
    case 2: return r * cols + (c + cols - 1u) % cols;
    case 3: return ((r + 1u) % rows) * cols + c;
    default: return ((r + rows - 1u) % rows) * cols + c;
    }
}

/* internal: the output of core k's router towards dst (row first, the shorter way round) */
static unsigned ar_route(unsigned rows, unsigned cols, unsigned k, unsigned dst)
{
    unsigned dx = (dst % cols + cols - k % cols) % cols;
    unsigned dy = ((dst / cols) % rows + rows - k / cols) % rows;
    if (dx != 0)
        return dx <= cols / 2 ? 1u : 2u;
    if (dy != 0)
        return dy <= rows / 2 ? 3u : 4u;
    return 0;
}

static unsigned ar_opp(unsigned o) { return o == 1 ? 2u : o == 2 ? 1u : o == 3 ? 4u : 3u; }

static int ar_push(struct ar_fifo *q, struct ar_flit f)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2u * q->cap : 16u;
        struct ar_flit *v = malloc(sizeof *v * cap);
        if (v == NULL)
            return -1;
        for (size_t i = 0; i < q->n; i++)
            v[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = v;
        q->head = 0;
        q->cap = cap;
    }
    q->v[(q->head + q->n) % q->cap] = f;
    q->n++;
    return 0;
}

/* internal: the credits of core k's output link o in cycle c: the receiver FIFO's depth less
   the flits sent, plus the credits back */
static uint64_t ar_credits(struct ar_core *x, unsigned o, uint64_t c, uint64_t depth)
{
    while (x->ret_n[o] && x->ret_at[o][x->ret_head[o]] <= c) {
        x->returned[o]++;
        x->ret_head[o] = (x->ret_head[o] + 1u) % 32u;
        x->ret_n[o]--;
    }
    return depth + x->returned[o] - x->sent[o];
}

/* internal: phase i (0..3: row reduce-scatter, column reduce-scatter, column all-gather, row
   all-gather; with the ring flag or R = 1 the column phases have one member) of core k;
   returns the ring size m (1: skipped) */
static unsigned ar_phase(struct ar_core *x, unsigned k, unsigned i, size_t len,
                         unsigned rows, unsigned cols, int ring)
{
    unsigned c = rows * cols;
    int col = i == 1 || i == 2;
    x->gather = i >= 2;
    if (ring || rows == 1) {
        if (col)
            return 1;
        x->m = c;
        x->p = k;
        x->east = (k + 1u) % c;
        x->west = (k + c - 1u) % c;
        x->a = 0;
        x->len = len;
    } else if (!col) {
        unsigned r = k / cols, q = k % cols;
        x->m = cols;
        x->p = q;
        x->east = r * cols + (q + 1u) % cols;
        x->west = r * cols + (q + cols - 1u) % cols;
        x->a = 0;
        x->len = len;
    } else {
        unsigned r = k / cols, q = k % cols, j1 = (q + 1u) % cols;
        x->m = rows;
        x->p = r;
        x->east = ((r + 1u) % rows) * cols + q;
        x->west = ((r + rows - 1u) % rows) * cols + q;
        x->a = tpu_chunk_lo(len, cols, j1);
        x->len = tpu_chunk_lo(len, cols, j1 + 1u) - x->a;
    }
    return x->m;
}

/* internal: the flit of a transfer at element e of rows of n lanes, E elements per flit,
   ending at e1: 1 if it ends its row segment (a row write, a new row read) */
static int ar_rowend(size_t e, size_t e1, unsigned n, unsigned E)
{
    size_t end = (e / n + 1u) * n < e1 ? (e / n + 1u) * n : e1;
    return e + E >= end;
}

static size_t ar_next(size_t e, size_t e1, unsigned n, unsigned E)
{
    size_t end = (e / n + 1u) * n < e1 ? (e / n + 1u) * n : e1;
    return e + E >= end ? end : e + E;
}

/* internal: payload flits of elements [e0, e1) */
static uint64_t ar_flits(size_t e0, size_t e1, unsigned n, unsigned E)
{
    uint64_t f = 0;
    for (size_t e = e0; e < e1;) {
        size_t end = (e / n + 1u) * n < e1 ? (e / n + 1u) * n : e1;
        f += (end - e + E - 1u) / E;
        e = end;
    }
    return f;
}

/* internal: one cycle of core k's router: every output carries the flit of the input it is
   locked to, or grants the next header (round robin from the last input granted) that goes
   there and fits (a link: room for the packet, and MaxFlits more when it enters a ring) */
static int ar_router(struct ar_core *cs, unsigned k, unsigned rows, unsigned cols,
                     unsigned nports, uint64_t cyc, uint64_t depth, unsigned link_latency,
                     uint64_t *moved)
{
    struct ar_core *x = &cs[k];
    for (unsigned o = 0; o < nports; o++) {
        int src = -1;
        const struct ar_flit *f = NULL;
        for (unsigned t = 0; t < nports && src < 0; t++) {
            unsigned i = x->lock[o] ? x->owner[o] : (x->rr[o] + 1u + t) % nports;
            const struct ar_flit *h = NULL;
            if (i == 0)
                h = x->inj_valid ? &x->inj : NULL;
            else if (x->in[i].n && x->in[i].v[x->in[i].head].at <= cyc)
                h = &x->in[i].v[x->in[i].head];
            int ok = h != NULL;
            if (ok && !x->lock[o]) {
                unsigned need = h->len + 1u;
                if (o != 0 && (i == 0 || (i <= 2) != (o <= 2)))
                    need += TPU_BOARD_PKT_PAYLOAD + 1u;
                ok = h->kind != AR_PL && ar_route(rows, cols, k, h->dst) == o &&
                     (o == 0 || ar_credits(x, o, cyc, depth) >= need);
            }
            if (ok)
                ok = o == 0 ? x->ef_n != 2u : ar_credits(x, o, cyc, depth) != 0;
            if (ok) {
                src = (int)i;
                f = h;
            }
            if (x->lock[o])
                break;
        }
        if (src < 0)
            continue;
        struct ar_flit g = *f;
        *moved = cyc;
        if (src == 0) {
            x->inj_taken = 1;
        } else { /* popped: the credit goes back to the router before */
            struct ar_fifo *q = &x->in[src];
            struct ar_core *u = &cs[ar_nbr(rows, cols, k, (unsigned)src)];
            unsigned uo = ar_opp((unsigned)src);
            u->ret_at[uo][(u->ret_head[uo] + u->ret_n[uo]) % 32u] = cyc + link_latency + 1u;
            u->ret_n[uo]++;
            q->head = (q->head + 1u) % q->cap;
            q->n--;
        }
        if (o == 0) {
            x->ej_in = 1;
            x->ej = g;
        } else {
            g.at = cyc + link_latency + 1u;
            x->sent[o]++;
            if (ar_push(&cs[ar_nbr(rows, cols, k, o)].in[ar_opp(o)], g) != 0)
                return TPU_ENOMEM;
        }
        if (!x->lock[o])
            x->rr[o] = (unsigned)src;
        x->lock[o] = !g.last;
        x->owner[o] = (unsigned)src;
    }
    return TPU_OK;
}

/* internal: runs the cores' collectives (cs[k].op) and every router, cycle by cycle from the
   first dispatch, until every core with a collective has completed it (done[k]) */
static int ar_run(struct ar_core *cs, unsigned C, unsigned n, unsigned grid_rows,
                  unsigned grid_cols, int ring, size_t len, unsigned link_latency,
                  uint64_t cyc, uint64_t *done, tpu_board_net_t *net)
{
    unsigned nports = grid_rows == 1 ? 3u : 5u, left = 0;
    for (unsigned k = 0; k < C && net != NULL; k++) { /* the state kept from before */
        cs[k].prio = net->prio[k] & 1u;
        for (unsigned o = 0; o < nports; o++)
            cs[k].rr[o] = net->rr[k][o] % nports;
    }
    /* a link's receiver FIFO: two packets of MaxFlits and the round trip */
    uint64_t depth = 2u * (TPU_BOARD_PKT_PAYLOAD + 1u) + 2u * link_latency + 2u;
    int rc = TPU_OK;
    uint64_t moved = cyc, last = cyc; /* the last cycle a flit moved; the last dispatch */
    for (unsigned k = 0; k < C; k++) {
        left += cs[k].op != AR_OP_NONE;
        last = cs[k].op != AR_OP_NONE && cs[k].t_next > last ? cs[k].t_next : last;
    }
    for (; left > 0 && rc == TPU_OK; cyc++) {
        /* a model that waits for nothing: every core has started, no flit has moved for
           far longer than any set-up takes */
        if (cyc > last + 100000u && cyc > moved + 100000u)
            return TPU_EINVAL;
        /* the controllers' CPhSel, then what each core offers its router */
        for (unsigned k = 0; k < C; k++) {
            struct ar_core *x = &cs[k];
            x->inj_valid = x->inj_taken = x->ej_in = 0;
            if (x->st == AR_PRE && cyc == x->t_next) /* CStart done: wait for the token */
                x->st = x->op == AR_OP_RECV ? AR_RTOK : AR_SWAIT;
            x->st0 = x->st;
            if (x->st == AR_DONE || x->op == AR_OP_NONE)
                continue;
            if (x->st == AR_SEL && cyc == x->t_next) { /* CPhSel */
                if (x->ph == 4) {
                    x->st = x->st0 = AR_DONE;
                    done[k] = cyc;
                    left--;
                    continue;
                }
                if (ar_phase(x, k, x->ph, len, grid_rows, grid_cols, ring) == 1) {
                    x->ph++;
                    x->t_next = cyc + 1u;
                } else { /* len / m, q / N, the walk to the receiver's first chunk */
                    unsigned wj = x->gather ? x->p : (x->p + x->m - 1u) % x->m;
                    x->st = AR_SETUP;
                    x->t_next = cyc + 4u + div_cycles(x->len, x->m) +
                                div_cycles(x->len / x->m, n) + wj;
                }
            }
            if ((x->st0 == AR_SETUP && cyc == x->t_next) || x->st0 == AR_RTOK) {
                /* CTok: the ready token to west (recv: to the sender) */
                x->inj_valid = 1;
                x->inj = (struct ar_flit){ 0, 0, AR_TOK, (unsigned char)k,
                                           (unsigned char)x->west, 1 };
            } else if (x->tx.busy && (x->tx.pk == 0 || x->tx.have || x->tx.fresh)) {
                int hdr = x->tx.pk == 0;
                x->inj_valid = 1;
                x->inj = (struct ar_flit){
                    0, (unsigned short)(hdr ? (x->tx.rem > TPU_BOARD_PKT_PAYLOAD
                                                   ? TPU_BOARD_PKT_PAYLOAD : x->tx.rem) : 0),
                    (unsigned char)(hdr ? AR_HDR : AR_PL), (unsigned char)k,
                    (unsigned char)x->east, (unsigned char)(!hdr && x->tx.pk == 1u) };
            }
        }
        /* the routers */
        for (unsigned k = 0; k < C && rc == TPU_OK; k++)
            rc = ar_router(cs, k, grid_rows, grid_cols, nports, cyc, depth, link_latency,
                           &moved);
        /* the cores */
        for (unsigned k = 0; k < C && rc == TPU_OK; k++) {
            struct ar_core *x = &cs[k];
            int st = x->st0;
            unsigned E = x->E;
            if (st == AR_DONE || x->op == AR_OP_NONE)
                continue;
            /* ---- this cycle's signals ---- */
            const struct ar_flit *head = x->ef_n ? &x->ef[0] : NULL;
            int ej_hdr = !x->inpkt;
            int rxb = x->rx.busy, txb = x->tx.busy;
            int ej_tok = head && ej_hdr && head->kind == AR_TOK;
            int ej_dhdr = head && ej_hdr && head->kind == AR_HDR && rxb;
            int ej_pl = head && !ej_hdr;
            int rx_av = rxb && (x->rx.have || x->rx.fresh);
            int rx_take = ej_pl && rxb && rx_av;
            int rre = rxb && ar_rowend(x->rx.e, x->rx.e1, n, E);
            int rend = rre && ar_next(x->rx.e, x->rx.e1, n, E) == x->rx.e1;
            int rx_need = rxb && (!rx_av || (rx_take && rre && !rend));
            int tok_valid = st == AR_SETUP && cyc == x->t_next;
            int thdr = 0, tfire = 0, tpfire = 0, tre = 0, tx_need = 0;
            if (txb) {
                int tav = x->tx.have || x->tx.fresh;
                thdr = x->tx.pk == 0;
                tfire = (thdr || tav) && !tok_valid && x->inj_taken;
                tpfire = tfire && !thdr;
                tre = !thdr && ar_rowend(x->tx.e, x->tx.e1, n, E);
                tx_need = !tav || (tpfire && tre && x->tx.rem > 1u);
            }
            int gnt_rx = rx_need && (!tx_need || x->prio);
            int gnt_tx = tx_need && !gnt_rx;
            int tx_start = 0, rx_start = 0, endph = 0;
            uint64_t clr = 0;
            if (st == AR_SWAIT && (x->rdy >> x->peer & 1u)) { /* CSendWait */
                tx_start = 1;
                clr = (uint64_t)1 << x->peer;
            }
            rx_start = st == AR_RRX; /* CRx */
            if (st == AR_RUN) {
                /* step 0 after the ready token from east, step t after the receive of t-1 */
                if (!x->txrun && x->txstep + 1u < x->m &&
                    (x->txtok || (x->rdy >> x->east & 1u)) && x->rxstep >= x->txstep) {
                    tx_start = 1;
                    if (!x->txtok)
                        clr = (uint64_t)1 << x->east;
                }
                if (!x->rxrun && x->rxstep + 1u < x->m)
                    rx_start = 1;
                endph = x->txstep + 1u == x->m && x->rxstep + 1u == x->m;
            }
            int tx_done = st == AR_RUN && x->txrun && !txb;
            int rx_done = st == AR_RUN && x->rxrun && !rxb;
            /* ---- the clock edge ---- */
            x->rdy &= ~clr;
            if (ej_tok)
                x->rdy |= (uint64_t)1 << head->src;
            if (ej_tok || ej_dhdr || rx_take) {
                x->inpkt = !head->last;
                x->ef[0] = x->ef[1];
                x->ef_n--;
            }
            if (x->ej_in)
                x->ef[x->ef_n++] = x->ej;
            if (gnt_rx && tx_need)
                x->prio = 0;
            else if (gnt_tx && rx_need)
                x->prio = 1;
            if (txb) {
                if (tfire) {
                    if (thdr) {
                        x->tx.pk = x->tx.rem > TPU_BOARD_PKT_PAYLOAD ? TPU_BOARD_PKT_PAYLOAD
                                                                     : (unsigned)x->tx.rem;
                    } else {
                        x->tx.pk--;
                        x->tx.rem--;
                        x->tx.e = ar_next(x->tx.e, x->tx.e1, n, E);
                        if (x->tx.rem == 0)
                            x->tx.busy = 0;
                    }
                }
                x->tx.have = tpfire && tre ? 0 : x->tx.fresh ? 1 : x->tx.have;
                x->tx.fresh = gnt_tx;
            }
            if (rxb) {
                x->rx.have = rx_take && rre ? 0 : x->rx.fresh ? 1 : x->rx.have;
                x->rx.fresh = gnt_rx;
                if (rx_take) {
                    if (rend)
                        x->rx.busy = 0;
                    x->rx.e = ar_next(x->rx.e, x->rx.e1, n, E);
                }
            }
            if (st == AR_RUN) {
                unsigned g = x->gather ? 1u : 0u;
                if (tx_start) { /* chunk (p - t) mod m (all-gather: p + 1 - t) */
                    unsigned j = (x->p + 2u * x->m - x->txstep + g) % x->m;
                    x->txrun = x->txtok = 1;
                    x->tx.e = x->a + tpu_chunk_lo(x->len, x->m, j);
                    x->tx.e1 = x->a + tpu_chunk_lo(x->len, x->m, j + 1u);
                    x->tx.rem = ar_flits(x->tx.e, x->tx.e1, n, E);
                    x->tx.busy = x->tx.rem != 0;
                    x->tx.have = x->tx.fresh = 0;
                    x->tx.pk = 0;
                } else if (tx_done) {
                    x->txrun = 0;
                    x->txstep++;
                }
                if (rx_start) { /* chunk (p - 1 - t) mod m (all-gather: p - t) */
                    unsigned j = (x->p + 2u * x->m - 1u - x->rxstep + g) % x->m;
                    x->rxrun = 1;
                    x->rx.e = x->a + tpu_chunk_lo(x->len, x->m, j);
                    x->rx.e1 = x->a + tpu_chunk_lo(x->len, x->m, j + 1u);
                    x->rx.busy = x->rx.e1 > x->rx.e;
                    x->rx.have = x->rx.fresh = 0;
                } else if (rx_done) {
                    x->rxrun = 0;
                    x->rxstep++;
                }
                if (endph) {
                    x->st = AR_SEL;
                    x->ph++;
                    x->t_next = cyc + 1u;
                }
            } else if (tok_valid && !x->inj_taken) {
                x->t_next = cyc + 1u; /* CTok waits for the router */
            } else if (tok_valid) { /* the token sent: CPhRun */
                x->st = AR_RUN;
                x->txstep = x->rxstep = 0;
                x->txrun = x->rxrun = x->txtok = 0;
            } else if (st == AR_SWAIT && tx_start) { /* a send's whole rows */
                x->st = AR_STX;
                x->tx.e = 0;
                x->tx.e1 = x->len;
                x->tx.rem = ar_flits(0, x->len, n, E);
                x->tx.busy = x->tx.rem != 0;
                x->tx.have = x->tx.fresh = 0;
                x->tx.pk = 0;
            } else if (st == AR_RTOK && x->inj_taken) {
                x->st = AR_RRX;
            } else if (st == AR_RRX) {
                x->st = AR_RWAIT;
                x->rx.e = 0;
                x->rx.e1 = x->len;
                x->rx.busy = x->len != 0;
                x->rx.have = x->rx.fresh = 0;
            } else if (st == AR_STX && !txb && x->op == AR_OP_BCAST && x->bc_i + 2u < C) {
                /* CTxWait, CBcNext, then CSendWait for the next core */
                x->bc_i++;
                x->peer = x->east = (k + x->bc_i + 1u) % C;
                x->st = AR_PRE;
                x->t_next = cyc + 2u;
            } else if ((st == AR_STX && !txb) || (st == AR_RWAIT && !rxb)) {
                x->st = AR_DONE;
                done[k] = cyc;
                left--;
            }
        }
    }
    for (unsigned k = 0; k < C && net != NULL && rc == TPU_OK; k++) {
        net->prio[k] = (unsigned char)cs[k].prio;
        for (unsigned o = 0; o < nports; o++)
            net->rr[k][o] = (unsigned char)cs[k].rr[o];
    }
    return rc;
}

int tpu_board_allreduce_done(unsigned rows, unsigned n, unsigned grid_rows, unsigned grid_cols,
                             int ring, unsigned link_bits, unsigned link_latency,
                             const uint64_t *disp, uint64_t *done, tpu_board_net_t *net)
{
    unsigned C = grid_rows * grid_cols, E = link_bits / 32u ? link_bits / 32u : 1u;
    if (C == 0 || C > TPU_BOARD_CORES_MAX || disp == NULL || done == NULL)
        return TPU_EINVAL;
    if (C == 1 || n == 0 || link_bits == 0 || rows == 0) {
        for (unsigned k = 0; k < C; k++)
            done[k] = disp[k] + 1u; /* nothing to move: CStart, then idle */
        return TPU_OK;
    }
    size_t len = (size_t)rows * n;
    struct ar_core *cs = calloc(C, sizeof *cs);
    if (cs == NULL)
        return TPU_ENOMEM;
    uint64_t cyc = UINT64_MAX;
    for (unsigned k = 0; k < C; k++) {
        struct ar_core *x = &cs[k];
        x->op = AR_OP_AR;
        x->E = E;
        x->st = AR_SEL;
        /* CStart, id / S; on a torus without the ring flag the column phases' region: len / S,
           q / N, the walk to row-chunk (c + 1) mod S */
        x->t_next = disp[k] + 3u + div_cycles(k, grid_cols);
        if (!ring && grid_rows > 1)
            x->t_next += 3u + div_cycles(len, grid_cols) + div_cycles(len / grid_cols, n) +
                         (k % grid_cols + 1u) % grid_cols;
        cyc = disp[k] < cyc ? disp[k] : cyc;
    }
    int rc = ar_run(cs, C, n, grid_rows, grid_cols, ring, len, link_latency, cyc, done, net);
    for (unsigned k = 0; k < C; k++)
        for (unsigned i = 0; i < 5; i++)
            free(cs[k].in[i].v);
    free(cs);
    return rc;
}

int tpu_board_sendrecv_set_done(const tpu_board_xfer_t *xf, unsigned count, unsigned n,
                                unsigned grid_rows, unsigned grid_cols, unsigned link_bits,
                                unsigned link_latency, uint64_t *sdone, uint64_t *rdone,
                                tpu_board_net_t *net)
{
    unsigned C = grid_rows * grid_cols;
    if (C == 0 || C > TPU_BOARD_CORES_MAX || xf == NULL || sdone == NULL || rdone == NULL ||
        link_bits == 0 || n == 0)
        return TPU_EINVAL;
    struct ar_core *cs = calloc(C, sizeof *cs);
    uint64_t done[TPU_BOARD_CORES_MAX];
    if (cs == NULL)
        return TPU_ENOMEM;
    uint64_t cyc = UINT64_MAX;
    int rc = TPU_OK;
    for (unsigned i = 0; i < count && rc == TPU_OK; i++) {
        const tpu_board_xfer_t *t = &xf[i];
        unsigned E = t->elem_bits ? link_bits / t->elem_bits : 0;
        if (t->src >= C || t->dst >= C || t->src == t->dst || cs[t->src].op || cs[t->dst].op) {
            rc = TPU_EINVAL;
            break;
        }
        struct ar_core *s = &cs[t->src], *r = &cs[t->dst];
        s->op = AR_OP_SEND;
        r->op = AR_OP_RECV;
        s->peer = s->east = t->dst;
        r->peer = r->west = t->src;
        s->E = r->E = E ? E : 1u;
        s->len = r->len = (size_t)t->rows * n;
        s->st = r->st = AR_PRE;
        s->t_next = t->s + 2u; /* CStart, then CSendWait */
        r->t_next = t->r + 2u; /* CStart, then CTok */
        cyc = t->s < cyc ? t->s : cyc;
        cyc = t->r < cyc ? t->r : cyc;
    }
    if (rc == TPU_OK)
        rc = ar_run(cs, C, n, grid_rows, grid_cols, 1, 0, link_latency, cyc, done, net);
    for (unsigned i = 0; i < count && rc == TPU_OK; i++) {
        sdone[i] = done[xf[i].src];
        rdone[i] = done[xf[i].dst];
    }
    for (unsigned k = 0; k < C; k++)
        for (unsigned i = 0; i < 5; i++)
            free(cs[k].in[i].v);
    free(cs);
    return rc;
}

int tpu_board_bcast_run_done(unsigned rows, unsigned n, unsigned elem_bits, unsigned grid_rows,
                             unsigned grid_cols, unsigned root, unsigned link_bits,
                             unsigned link_latency, const uint64_t *disp, uint64_t *done,
                             tpu_board_net_t *net)
{
    unsigned C = grid_rows * grid_cols;
    if (C == 0 || C > TPU_BOARD_CORES_MAX || root >= C || disp == NULL || done == NULL ||
        link_bits == 0 || elem_bits == 0 || n == 0)
        return TPU_EINVAL;
    if (C == 1) {
        done[0] = disp[0] + 1u;
        return TPU_OK;
    }
    unsigned E = link_bits / elem_bits ? link_bits / elem_bits : 1u;
    struct ar_core *cs = calloc(C, sizeof *cs);
    if (cs == NULL)
        return TPU_ENOMEM;
    uint64_t cyc = UINT64_MAX;
    for (unsigned k = 0; k < C; k++) {
        struct ar_core *x = &cs[k];
        x->op = k == root ? AR_OP_BCAST : AR_OP_RECV;
        x->E = E;
        x->len = (size_t)rows * n;
        x->st = AR_PRE;
        if (k == root) { /* CStart, CBcNext, then CSendWait for core root + 1 */
            x->peer = x->east = (root + 1u) % C;
            x->t_next = disp[k] + 3u;
        } else { /* CStart, then CTok to the root */
            x->peer = x->west = root;
            x->t_next = disp[k] + 2u;
        }
        cyc = disp[k] < cyc ? disp[k] : cyc;
    }
    int rc = ar_run(cs, C, n, grid_rows, grid_cols, 1, 0, link_latency, cyc, done, net);
    for (unsigned k = 0; k < C; k++)
        for (unsigned i = 0; i < 5; i++)
            free(cs[k].in[i].v);
    free(cs);
    return rc;
}

uint64_t tpu_board_allreduce_cycles(unsigned rows, unsigned n, unsigned grid_rows,
                                    unsigned grid_cols, int ring, unsigned link_bits,
                                    unsigned link_latency)
{
    uint64_t disp[TPU_BOARD_CORES_MAX] = { 0 }, done[TPU_BOARD_CORES_MAX], t = 1;
    unsigned c = grid_rows * grid_cols;
    if (c <= 1 || c > TPU_BOARD_CORES_MAX ||
        tpu_board_allreduce_done(rows, n, grid_rows, grid_cols, ring, link_bits, link_latency,
                                 disp, done, NULL) != TPU_OK)
        return 1;
    for (unsigned k = 0; k < c; k++)
        t = done[k] > t ? done[k] : t;
    return t;
}
