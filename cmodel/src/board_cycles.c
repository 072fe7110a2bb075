/* SPDX-License-Identifier: Apache-2.0 */
/* The cycle model of an all-reduce on the board and the ring bound (docs/board.md). */
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

/* Per ring step beyond the flits and the hops: the receiver's FIFO write, merge and row write
   (H of the data-movement model) plus two cycles of the controller (the receive's completion
   registered, then the next send's start), measured on tpu_core_coll. */
#define COLL_STEP_OVERHEAD (TPU_BOARD_STEP_OVERHEAD + 2u)

/* internal: cycles of the core's sequential divider on dividend a: eight leading zero
   quotient bits per cycle while the remainder is 0 (at most three such cycles), then one bit
   per cycle */
static unsigned div_cycles(uint64_t a)
{
    unsigned k = 0;
    while (k < 3 && (a >> (24u - 8u * k)) == 0)
        k++;
    return k + 32u - 8u * k;
}

/* internal: the most flits any chunk of a ring phase over elements [a, a + len) of rows of n
   lanes sends in one step (a chunk is cut at row boundaries, ceil(k/E) flits per segment),
   headers included */
static uint64_t chunk_flits_max(size_t a, size_t len, unsigned m, unsigned n, unsigned e)
{
    uint64_t best = 0;
    for (unsigned j = 0; j < m; j++) {
        size_t e0 = a + tpu_chunk_lo(len, m, j), e1 = a + tpu_chunk_lo(len, m, j + 1);
        uint64_t f = 0;
        for (size_t x = e0; x < e1;) {
            size_t end = (x / n + 1) * n < e1 ? (x / n + 1) * n : e1;
            f += div_up(end - x, e);
            x = end;
        }
        f += div_up(f, TPU_BOARD_PKT_PAYLOAD);
        best = f > best ? f : best;
    }
    return best;
}

/* internal: one ring phase of m cores over [a, a + len): the controller's set-up (phase
   select, len / m and q / N on the divider, the walk to the first chunk: at most m cycles,
   the ready token to west), the token's hops, then m - 1 steps, each the chunk's flits, its
   hops and the receive before the next send; step_hops: the hops of the m - 1 steps on the
   slowest chain (a step waits for the receive of the step before, from west) */
static uint64_t phase_cycles(size_t a, size_t len, unsigned m, unsigned n, unsigned link_bits,
                             unsigned link_latency, unsigned tok_hops, unsigned step_hops)
{
    if (m <= 1)
        return 1; /* a phase of one core: skipped in one cycle */
    uint64_t setup = 1u + div_cycles(len) + 1u + div_cycles(len / m) + 1u + m + 1u;
    uint64_t step = chunk_flits_max(a, len, m, n, link_bits / 32u ? link_bits / 32u : 1u) +
                    COLL_STEP_OVERHEAD;
    return setup + (uint64_t)(tok_hops + step_hops) * (link_latency + 1u) +
           (uint64_t)(m - 1u) * step;
}

uint64_t tpu_board_allreduce_cycles(unsigned rows, unsigned n, unsigned grid_rows,
                                    unsigned grid_cols, int ring, unsigned link_bits,
                                    unsigned link_latency)
{
    unsigned c = grid_rows * grid_cols;
    if (c <= 1 || n == 0 || link_bits == 0)
        return 1;
    size_t len = (size_t)rows * n;
    unsigned m1 = ring ? c : grid_cols, m2 = ring ? 1u : grid_rows;
    /* start, id / S on the divider */
    uint64_t t = 1u + div_cycles(c - 1u) + 1u;
    size_t a2 = 0, len2 = len;
    if (m2 > 1) { /* the column phases' region: row-chunk (c+1) mod S, the largest */
        t += div_cycles(len) + 1u + div_cycles(len / grid_cols) + 1u + grid_cols;
        a2 = 0;
        len2 = tpu_chunk_lo(len, grid_cols, 1);
    }
    /* the ring flag on a torus: neighbours in id order may be several hops apart; the m - 1
       steps of a phase chain m - 1 consecutive links (the worst such window) */
    unsigned tok = 1, chain = m1 - 1u;
    if (ring && grid_rows > 1) {
        chain = 0;
        for (unsigned i = 0; i < c; i++) {
            unsigned h = tpu_board_hops(grid_rows, grid_cols, i, (i + 1u) % c), sum = 0;
            tok = h > tok ? h : tok;
            for (unsigned k = 0; k + 1u < c; k++)
                sum += tpu_board_hops(grid_rows, grid_cols, (i + k) % c, (i + k + 1u) % c);
            chain = sum > chain ? sum : chain;
        }
    }
    t += phase_cycles(0, len, m1, n, link_bits, link_latency, tok, chain);
    t += phase_cycles(a2, len2, m2, n, link_bits, link_latency, 1, m2 - 1u);
    t += phase_cycles(a2, len2, m2, n, link_bits, link_latency, 1, m2 - 1u);
    t += phase_cycles(0, len, m1, n, link_bits, link_latency, tok, chain);
    return t + 1u; /* the last phase select */
}
