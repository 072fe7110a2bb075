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

uint64_t tpu_board_sendrecv_cycles(unsigned rows, unsigned n, unsigned elem_bits,
                                   unsigned hops, unsigned link_bits, unsigned link_latency)
{
    if (link_bits == 0 || elem_bits == 0)
        return 0;
    /* the ready token to the sender, then the data back, then the last row's write */
    return 2u * path(hops, link_latency) + transfer_flits(rows, n, elem_bits, link_bits) +
           TPU_BOARD_STEP_OVERHEAD;
}

uint64_t tpu_board_bcast_cycles(unsigned rows, unsigned n, unsigned elem_bits, unsigned cores,
                                unsigned max_hops, unsigned link_bits, unsigned link_latency)
{
    if (cores <= 1 || link_bits == 0 || elem_bits == 0)
        return 0;
    /* the ready tokens, then C-1 transfers back to back from the root, the last one's path */
    return 2u * path(max_hops, link_latency) +
           (uint64_t)(cores - 1u) * transfer_flits(rows, n, elem_bits, link_bits) +
           TPU_BOARD_STEP_OVERHEAD;
}

uint64_t tpu_board_barrier_cycles(unsigned cores, unsigned max_hops, unsigned link_latency)
{
    if (cores <= 1)
        return 0;
    /* arrivals to core 0, then C-1 releases one per cycle, the farthest one's path */
    return 2u * path(max_hops, link_latency) + (cores - 1u) + TPU_BOARD_STEP_OVERHEAD;
}
