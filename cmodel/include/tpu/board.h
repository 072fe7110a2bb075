/* SPDX-License-Identifier: Apache-2.0 */
/* The board's collectives (docs/board.md): all-reduce(sum) of fp32 vectors over a ring or an
   R x S torus of cores, with the exact reduction order of the contract, and its cycle model. */
#ifndef TPU_BOARD_H
#define TPU_BOARD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tpu/core.h"
#include "tpu/types.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* ---- topology (docs/board.md "Topology and core numbering") ---- */

#define TPU_BOARD_LINK_BITS_MIN 32u
#define TPU_BOARD_LINK_BITS_MAX 1024u
#define TPU_BOARD_LINK_BITS_DEFAULT 64u
#define TPU_BOARD_LINK_LATENCY_MAX 16u
#define TPU_BOARD_LINK_LATENCY_DEFAULT 2u

/* The default torus shape for C cores: R = the largest divisor of C with R*R <= C, S = C/R. */
void tpu_board_torus_default(unsigned cores, unsigned *rows, unsigned *cols);
/* Parses --topology: "ring" (1 x C), "torus" (the default shape), "torus:RxS" (R*S must be
   C); NULL or "" gives gen's default (torus:2x4 at C = 8, else ring). 0, or -1 with a one-line
   message in err ("--topology 'torus:3x3': R*S = 9 must equal --cores 8 (allowed: ...)"). */
int tpu_board_topology_parse(const char *spec, unsigned cores, unsigned *rows, unsigned *cols,
                             char *err, size_t errlen);
/* Dimension-ordered hop count from core a to core b on an R x S torus (the routers' path). */
unsigned tpu_board_hops(unsigned rows, unsigned cols, unsigned a, unsigned b);

/* ---- the board model: C cores running their own programs, joined by the collectives ---- */

typedef struct {
    unsigned rows, cols;      /* R x S; C = R*S in 1..64 (a ring: 1 x C) */
    unsigned link_bits;       /* W, 32..1024 (0: 64) */
    unsigned link_latency;    /* D, 0..16 */
    tpu_core_cfg_t core;      /* every core's configuration (axi_data_bits included: every
                                 core has the same AXI data width); core_id and topo_* are set
                                 by the board */
    unsigned start_skew;      /* core i STARTs i * start_skew cycles after core 0 (the host
                                 writes CTRL.start of one core after the other: board_tb's
                                 AXI4-Lite write takes TPU_BOARD_START_SKEW_DEFAULT cycles);
                                 0: the default, TPU_BOARD_START_TOGETHER: every core in cycle
                                 0. Each core's counters count from its own START. */
    unsigned link_dead;       /* 0: every link works; l + 1: link l (core i's output port p,
                                 l = i * link_ports + p - 1, docs/board.md "Link faults")
                                 carries nothing from board cycle link_dead_cycle on, and the
                                 cores' collectives that wait on it stop with error 9 */
    uint64_t link_dead_cycle;
    unsigned link_ports;      /* output links per core as gen numbers them: 2 (--topology
                                 ring), 4 (torus, also a 1 x S torus); 0: 4 if rows > 1 */
} tpu_board_cfg_t;
#define TPU_BOARD_START_SKEW_DEFAULT 4u
#define TPU_BOARD_START_TOGETHER 0xFFFFFFFFu
#define TPU_BOARD_START_SKEW_MAX 1000u

typedef struct tpu_board tpu_board_t;

/* One core's job: its program, its host memory image and its trace (may be NULL). */
typedef struct {
    const tpu_insn_t *prog;
    size_t count;
    size_t pc_start;
    uint8_t *host;
    size_t host_bytes;
    FILE *trace;
} tpu_board_job_t;

/* NULL on a bad configuration (shape, W, D, the core's) or out of memory. */
tpu_board_t *tpu_board_new(const tpu_board_cfg_t *cfg);
void tpu_board_free(tpu_board_t *b);
unsigned tpu_board_cores(const tpu_board_t *b);
/* Core i's model (memories: tpu_core_row / tpu_core_set_row), NULL out of range. */
tpu_core_t *tpu_board_core(tpu_board_t *b, unsigned i);

/* Runs job[i] on core i for every i (core i STARTs in cycle i * start_skew) until every core has
   halted, stopped with an error, or can never go on. Deterministic: a collective is executed
   when all its participants have reached it (docs/board.md "Collectives", the ring phases and
   the row-write order of "Transfers, flits and the order of row writes", so each core's trace
   is the RTL's), its cycles from the cycle model ("Cycle model"). res[i] is core i's result:
   TPU_CORE_DONE, TPU_CORE_ERROR, or TPU_CORE_STUCK when it waits at a collective that can
   never complete (a deadlock: peers halted or waiting elsewhere, or mismatched collectives);
   then *msg holds a description naming every stuck core, its pc and instruction, one line
   each (msg may be NULL). Returns TPU_OK (whatever the cores did), TPU_EINVAL (bad
   arguments, see tpu_core_run), TPU_ENOMEM or TPU_EIO (a trace could not be written). */
int tpu_board_run(tpu_board_t *b, const tpu_board_job_t job[], tpu_core_result_t res[],
                  char *msg, size_t msglen);

/* The cycle model of one collective (docs/board.md "Cycle model"): cycles from the moment the
   last participant dispatches it until it is complete. rows, elem_bits (16 UB, 32 ACC) and N
   give the transfer; hops from the topology. */
uint64_t tpu_board_sendrecv_cycles(unsigned rows, unsigned n, unsigned elem_bits,
                                   unsigned hops, unsigned link_bits, unsigned link_latency);
/* A send/recv pair as tpu_core_coll runs it, from the sender's and the receiver's dispatch
   cycles s and r (board time): the receiver's ready token reaches the sender, which starts in
   max(s + 3, r + P + 5) (P = hops (D + 1)) and completes when its F flits (headers
   included) have left, in start + F; the receiver completes when the last one is written,
   P + 1 later. (tpu_board_sendrecv_cycles: the receiver's cost when both dispatch in the
   same cycle.) */
void tpu_board_sendrecv_done(unsigned rows, unsigned n, unsigned elem_bits, unsigned hops,
                             unsigned link_bits, unsigned link_latency, uint64_t s, uint64_t r,
                             uint64_t *sdone, uint64_t *rdone);
/* A bcast from root k as tpu_core_coll runs it: the root sends to k+1, k+2, ... (mod C) one
   after the other, each as a send/recv pair: send j starts in max(the root's dispatch + 4 (j =
   1) or send j-1's completion + 3, receiver's dispatch + P + 5) and completes F cycles later;
   its receiver completes P + 1 after that; the root with its last send. disp[c] and done[c]
   are board times, hops[c] the hops from the root (hops[root] unused). */
void tpu_board_bcast_done(unsigned rows, unsigned n, unsigned elem_bits, unsigned cores,
                          unsigned root, const uint64_t *disp, const unsigned *hops,
                          unsigned link_bits, unsigned link_latency, uint64_t *done);
uint64_t tpu_board_bcast_cycles(unsigned rows, unsigned n, unsigned elem_bits, unsigned cores,
                                unsigned max_hops, unsigned link_bits, unsigned link_latency);
/* tpu_board_bcast_cycles: the root's cost when every core dispatches together and every
   receiver is max_hops away (tpu_board_bcast_done). A bcast's receiver, the j-th the root
   sends to (j = 1 .. C-1: core root + j), it and the earlier ones `hops` from the root: it
   completes when its transfer has arrived (tpu_board_bcast_done). */
uint64_t tpu_board_bcast_recv_cycles(unsigned rows, unsigned n, unsigned elem_bits, unsigned j,
                                     unsigned hops, unsigned link_bits, unsigned link_latency);
uint64_t tpu_board_barrier_cycles(unsigned cores, unsigned max_hops, unsigned link_latency);
/* A barrier as tpu_core_coll runs it, from each core's dispatch cycle arrive[c] and its hops
   to core 0 (hops[0] unused): done[c] = its completion. Core c != 0's arrival token is
   counted at core 0 in arrive[c] + 4 + P(hops[c]) (P(h) = h (D + 1)); core 0 waits from
   arrive[0] + 2; at the last of these, t, core 0 sends the releases to 1 .. C-1 one per
   cycle: done[0] = t + C - 1, done[c] = t + c + P(hops[c]) + 2. (tpu_board_barrier_cycles:
   the slowest core's cost when all arrive together.) */
void tpu_board_barrier_done(unsigned cores, const uint64_t *arrive, const unsigned *hops,
                            unsigned link_latency, uint64_t *done);
/* What the network units and the routers keep from one collective to the next, per core: the
   read port's priority (1: the receiver's, after a conflict the sender won) and, per router
   output (0 local, 1 east, 2 west, 3 south, 4 north), the input it granted last. All zero
   after reset. */
typedef struct {
    unsigned char prio[TPU_BOARD_CORES_MAX];
    unsigned char rr[TPU_BOARD_CORES_MAX][5];
} tpu_board_net_t;

/* An allreduce instruction of `rows` ACC rows of n fp32 on an R x S board (ring: one ring
   over all cores; docs/board.md "Cycle model"), run cycle by cycle as tpu_core_coll and the
   routers run it: each core from its own dispatch cycle disp[c] (board time), its ring
   phases' divisions and walks, its ready token to west, then step t's send after the token
   from east (t = 0) or the receive of step t-1, the sender and the receiver sharing the core's
   memory read port, the ejection buffer of two flits, and every packet hop by hop through the
   routers (each output one packet at a time, round robin; the links' credits; D + 1 cycles a
   hop). done[c]: core c's completion
   (board time). net (NULL: as after reset, not kept) is the state the hardware keeps from
   one collective to the next, read and updated. TPU_OK, TPU_EINVAL (C out of range, NULL, or
   a run that cannot finish), TPU_ENOMEM. */
int tpu_board_allreduce_done(unsigned rows, unsigned n, unsigned grid_rows, unsigned grid_cols,
                             int ring, unsigned link_bits, unsigned link_latency,
                             const uint64_t *disp, uint64_t *done, tpu_board_net_t *net);
/* Send/recv pairs that run at the same time, cycle by cycle as tpu_core_coll and the routers
   run them (the same model as tpu_board_allreduce_done: the receiver's ready token, the
   sender's flits, their packets sharing links and routers): pair i, core src sends `rows`
   whole rows of n elem_bits-bit elements to core dst, dispatched in s (sender) and r
   (receiver), board time. sdone[i], rdone[i]: the completions. Every core in at most one
   pair. net as for tpu_board_allreduce_done. TPU_OK, TPU_EINVAL, TPU_ENOMEM.
   (tpu_board_sendrecv_done: one pair alone.) */
typedef struct {
    unsigned src, dst, rows, elem_bits;
    uint64_t s, r;
} tpu_board_xfer_t;
int tpu_board_sendrecv_set_done(const tpu_board_xfer_t *xf, unsigned count, unsigned n,
                                unsigned grid_rows, unsigned grid_cols, unsigned link_bits,
                                unsigned link_latency, uint64_t *sdone, uint64_t *rdone,
                                tpu_board_net_t *net);
/* A bcast from root as tpu_core_coll runs it, cycle by cycle in the same model: the root
   sends to root+1, root+2, ... one after the other, each after that receiver's ready token;
   done[c] per core (board time) from disp[c]; net as for tpu_board_allreduce_done. TPU_OK,
   TPU_EINVAL, TPU_ENOMEM.
   (tpu_board_bcast_done: the same as formulas, for packets that meet nothing.) */
int tpu_board_bcast_run_done(unsigned rows, unsigned n, unsigned elem_bits, unsigned grid_rows,
                             unsigned grid_cols, unsigned root, unsigned link_bits,
                             unsigned link_latency, const uint64_t *disp, uint64_t *done,
                             tpu_board_net_t *net);
/* tpu_board_allreduce_done when every core dispatches in cycle 0: the slowest core's
   completion; 1 on one core. */
uint64_t tpu_board_allreduce_cycles(unsigned rows, unsigned n, unsigned grid_rows,
                                    unsigned grid_cols, int ring, unsigned link_bits,
                                    unsigned link_latency);

#ifdef __cplusplus
}
#endif

#endif
