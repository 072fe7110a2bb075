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
