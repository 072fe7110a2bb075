/* SPDX-License-Identifier: Apache-2.0 */
/* The board's collectives (docs/board.md): all-reduce(sum) of fp32 vectors over a ring or an
   R x S torus of cores, with the exact reduction order of the contract, and its cycle model. */
#ifndef TPU_BOARD_H
#define TPU_BOARD_H

#include <stddef.h>
#include <stdint.h>

#include "tpu/types.h"

#define TPU_BOARD_CORES_MAX 64u
#define TPU_BOARD_PKT_PAYLOAD 31u /* payload flits per packet (MaxFlits 32 with the header) */
#define TPU_BOARD_STEP_OVERHEAD 3u /* H: 2 router cycles + 1 add per ring step */

/* First element of chunk j when n elements are split into k chunks:
   j*floor(n/k) + min(j, n mod k) (j = k gives n). */
size_t tpu_chunk_lo(size_t n, unsigned k, unsigned j);

/* Ring all-reduce over `cores` cores (1..64): x[i] is core i's input vector of n elements,
   y[i] its result (may be the same array as x[i]; every y[i] gets the same bits). Element e
   of chunk j is fold(x[j], x[j+1], ..., x[j+cores-1]) (indices mod cores, left to right
   fp32_add). TPU_EINVAL on a NULL pointer or a count out of range, TPU_ENOMEM. */
tpu_status_t tpu_allreduce_ring(unsigned cores, size_t n, const fp32_t *const x[],
                                fp32_t *const y[]);

/* Torus all-reduce over rows x cols cores (core id r*cols + c; rows*cols in 1..64): row
   reduce-scatter, column reduce-scatter, then the gathers (docs/board.md). rows = 1 is the
   ring. Same arguments and errors as tpu_allreduce_ring. */
tpu_status_t tpu_allreduce_torus(unsigned rows, unsigned cols, size_t n,
                                 const fp32_t *const x[], fp32_t *const y[]);

/* Predicted cycles of a ring all-reduce of n fp32 elements over m cores with W-bit links of
   latency D (docs/board.md "Cycle model"); 0 for m <= 1. */
uint64_t tpu_allreduce_ring_cycles(size_t n, unsigned m, unsigned link_bits,
                                   unsigned link_latency);
/* The same for an R x S torus: ring(n, S) + ring(ceil(n/S), R). */
uint64_t tpu_allreduce_torus_cycles(size_t n, unsigned rows, unsigned cols, unsigned link_bits,
                                    unsigned link_latency);
/* The ring bound 2 (m-1)/m * 4n / (W/8) in cycles, as a double. */
double tpu_allreduce_ring_bound(size_t n, unsigned m, unsigned link_bits);

#endif
