/* SPDX-License-Identifier: Apache-2.0 */
/* Constrained-random core programs (issue 16 "Constrained-random programs"; tpu-mkprog
   random): a valid program of random instructions -- every instruction and flag, every
   memory, shapes and strides at the boundaries of the memories, dense hazards between DMA,
   lw, matmul, vop, vred and softmax -- or one that must end in a given error code, with the
   outcome the generator predicts (done, or error E at pc P). The same seed gives the same
   program on every host (tpu/matgen.h's splitmix64). */
#ifndef TPU_RANDPROG_H
#define TPU_RANDPROG_H

#include <stddef.h>
#include <stdint.h>

#include "tpu/isa.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    tpu_core_geom_t geom;  /* N and the memory sizes (tpu_core_geom_default) */
    uint64_t host_bytes;   /* the host memory the job runs with (below 2^32 for error 7) */
    uint64_t seed;
    unsigned max_insns;    /* instructions before the halt (0: 48; at most IMEM - 2) */
    int want_error;        /* -1: chosen by the seed (one program in three ends in an error),
                              0: a valid program, 1 .. 8 or 10: one that ends in that error
                              code (10: a malformed loop nest) */
    int loop_error;        /* with want_error 2 or 3: the error comes from a loop (a stride
                              that leaves the memory in a later iteration; count, skip or body
                              0); with -1 the seed chooses */
    int no_loops;          /* 1: straight-line programs only (no loop, stride, register or
                              matmul acc_mode=first) */
    unsigned coll_rows;    /* tpu_randprog_board: rows a round's collective moves at most
                              (0: 2048); above 8, one round in four moves 256 .. coll_rows
                              (9 .. when smaller) */
} tpu_randprog_cfg_t;

typedef struct {
    char *text;            /* the program, assembly (malloc'd) */
    size_t insns;          /* instructions in it */
    int expect_code;       /* 0: the program halts; else the error code it must end in */
    uint32_t expect_pc;    /* the failing instruction (code 6: the IMEM size) */
    uint64_t in_addr, in_bytes; /* a host region the job loads with data (inputs for the DMA) */
} tpu_randprog_t;

/* The program starts by writing every row of UB, ACC and WMEM (dma_in, stride 0), so that
   nothing reads a never-written row and the RTL (random initial memories) computes the same.
   0, or -1 (bad configuration: N 0, a memory smaller than N rows, IMEM < 10, host memory
   below 64 KiB or from 4 GiB; out of memory). */
int tpu_randprog(const tpu_randprog_cfg_t *cfg, tpu_randprog_t *out);
void tpu_randprog_free(tpu_randprog_t *p);

/* A board job of `cores` programs that cannot deadlock (tpu-mkprog random-board): each writes
   every row first, then rounds of 0..3 random local instructions on each core (no
   collective among them) ending in the same collective everywhere (1 .. 8 rows, or in one
   round in four up to cfg->coll_rows) -- barrier; allreduce of one
   ACC region (the same rows, ring or not); bcast from a random root; or, for each pair
   (2k, 2k+1), a send and the matching recv in a random direction -- then halt; every core
   must end done. want_error is ignored. texts[i] (malloc'd) and insns[i] per core; 0 or -1. */
int tpu_randprog_board(const tpu_randprog_cfg_t *cfg, unsigned cores, char **texts,
                       size_t *insns);

#ifdef __cplusplus
}
#endif

#endif
