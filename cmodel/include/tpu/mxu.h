/* SPDX-License-Identifier: Apache-2.0 */
/* The matrix unit (MXU) in the C model: the tiled matmul (bit-exact, docs/numerics.md) and
   its timing model, the schedule of docs/mxu.md ("Driving a matmul"). */
#ifndef TPU_MXU_H
#define TPU_MXU_H

#include <stddef.h>
#include <stdint.h>
#include "tpu/types.h"
#include "tpu/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_MXU_N_MIN 1u
#define TPU_MXU_N_MAX 256u
#define TPU_MXU_PE_STAGES_MAX 3u /* pe_stages 1, 2, 3 (docs/mxu.md, "Timing") */

/* Which arithmetic tpu_matmul uses. Both give the same bits (the tests check it). */
typedef enum {
    TPU_MXU_PATH_AUTO = 0,    /* the fast path where the host has one, else the integer path */
    TPU_MXU_PATH_INTEGER = 1, /* the integer reference numerics (the definition) */
    TPU_MXU_PATH_FAST = 2     /* host SSE floats with FTZ/DAZ; integer path if unavailable */
} tpu_mxu_path_t;

/* Configuration of one MXU. Zero-initialise, then set n: `tpu_mxu_cfg_t c = { .n = 16 };`. */
typedef struct {
    unsigned n;         /* array size N, TPU_MXU_N_MIN .. TPU_MXU_N_MAX */
    unsigned pe_stages; /* pipeline stages per PE, 1 .. 3; 0 means 1. Only the timing
                           depends on it, never the numerics (docs/mxu.md); more than 3
                           gives TPU_EINVAL */
    unsigned path;      /* a tpu_mxu_path_t */
} tpu_mxu_cfg_t;

/* Latency L (vector in -> results out) and bank-busy length B for a configuration:
   pe_stages 1: L = 2N, B = 2N - 2; 2: L = 2N + 1, B = 2N - 2; 3: L = 3N + 1, B = 3N - 3.
   Returns TPU_OK or TPU_EINVAL. */
int tpu_mxu_timing(const tpu_mxu_cfg_t *cfg, uint64_t *latency, uint64_t *busy);

/* ---- Matmul ----------------------------------------------------------------------------
   C = A x W: A is m x k (row-major bf16), W is k x n (row-major bf16), C is m x n (row-major
   fp32), tiled on an N x N array exactly as docs/mxu.md describes. Every C[i][j] is the
   sequential chain of docs/numerics.md (seed -0, ascending k); NaNs in C are canonical.
   If `trace` is not NULL, the "# unit"/"# params" header lines and one record per output
   vector (every tile, every row, all N columns including padding) are written to it, each at
   the cycle the schedule predicts. Returns TPU_OK, TPU_EINVAL (a NULL pointer, a zero size,
   cfg->n outside 1..256, an unsupported pe_stages/path, sizes whose products overflow),
   TPU_ENOMEM, or TPU_EIO (the trace could not be written). Never aborts. */
int tpu_matmul(const tpu_mxu_cfg_t *cfg, size_t m, size_t k, size_t n, const bf16_t *a,
               const bf16_t *w, fp32_t *c, tpu_trace_t *trace);

/* The two implementations, whatever cfg->path says. */
int tpu_matmul_integer(const tpu_mxu_cfg_t *cfg, size_t m, size_t k, size_t n,
                       const bf16_t *a, const bf16_t *w, fp32_t *c, tpu_trace_t *trace);
int tpu_matmul_fast(const tpu_mxu_cfg_t *cfg, size_t m, size_t k, size_t n, const bf16_t *a,
                    const bf16_t *w, fp32_t *c, tpu_trace_t *trace);
/* 1 if tpu_matmul_fast really uses host floats here (x86-64 with SSE), 0 if it falls back
   to the integer path. */
int tpu_matmul_fast_available(void);

/* The argument checks every tpu_matmul* performs: TPU_OK or TPU_EINVAL. */
int tpu_matmul_check(const tpu_mxu_cfg_t *cfg, size_t m, size_t k, size_t n, const void *a,
                     const void *w, const void *c);

/* ---- Schedule (docs/mxu.md, "Driving a matmul") ------------------------------------------
   Tile i (0 .. tiles-1) has nt = i / kt_count, kt = i % kt_count and uses bank i % 2.
   All cycles count from cycle 0, the first cycle after reset is released. */
typedef struct {
    unsigned n;              /* array size N */
    size_t m, k, nprime;     /* matmul shape: A m x k, W k x nprime */
    size_t kt_count;         /* KT = ceil(k / N) */
    size_t nt_count;         /* NT = ceil(nprime / N) */
    size_t tiles;            /* T = KT * NT */
    uint64_t latency;        /* L */
    uint64_t busy;           /* B */
    uint64_t *load_start;    /* [tiles]: ls_i, first of the N consecutive load cycles */
    uint64_t *act;           /* [tiles * m]: a_{i,r} at act[i * m + r]; output at + latency */
    uint64_t total_cycles;   /* last output cycle + 1 */
    uint64_t ideal_cycles;   /* m * tiles */
    uint64_t useful_macs;    /* m * k * nprime */
    double utilisation;      /* useful_macs / N^2 / total_cycles, 0 .. 1 */
} tpu_mxu_schedule_t;

/* Computes the schedule into *s (arrays allocated; free with tpu_mxu_schedule_free).
   Returns TPU_OK, TPU_EINVAL or TPU_ENOMEM; on error *s holds no allocation. */
int tpu_mxu_schedule(const tpu_mxu_cfg_t *cfg, size_t m, size_t k, size_t n,
                     tpu_mxu_schedule_t *s);
void tpu_mxu_schedule_free(tpu_mxu_schedule_t *s);

static inline size_t tpu_mxu_tile_kt(const tpu_mxu_schedule_t *s, size_t tile)
{
    return tile % s->kt_count;
}
static inline size_t tpu_mxu_tile_nt(const tpu_mxu_schedule_t *s, size_t tile)
{
    return tile / s->kt_count;
}
static inline uint64_t tpu_mxu_out_cycle(const tpu_mxu_schedule_t *s, size_t tile, size_t row)
{
    return s->act[tile * s->m + row] + s->latency;
}

/* What the driver does in one cycle, for driving the RTL cycle by cycle. */
typedef struct {
    uint64_t cycle;
    int load;            /* a weight row is shifted in this cycle */
    size_t load_tile;    /*   of this tile */
    unsigned load_row;   /*   this row r of the tile (N-1-j in the j-th load cycle) */
    unsigned load_bank;  /*   into this bank */
    int act;             /* an activation vector is presented this cycle */
    size_t act_tile;     /*   of this tile */
    size_t act_row;      /*   row m of A */
    unsigned act_bank;   /*   tagged with this bank */
    int seed_fresh;      /*   seed is -0 (kt = 0); else the output of (act_tile - 1, act_row) */
    int out;             /* an output vector leaves the array this cycle */
    size_t out_tile;     /*   of this tile */
    size_t out_row;      /*   row m */
} tpu_mxu_event_t;

/* Walks the schedule one cycle at a time, from cycle 0 to total_cycles - 1. */
typedef struct {
    const tpu_mxu_schedule_t *s;
    uint64_t cycle; /* the next cycle tpu_mxu_events_next reports */
    size_t load_i;  /* internal cursors */
    size_t act_i;
    size_t out_i;
} tpu_mxu_events_t;

void tpu_mxu_events_init(tpu_mxu_events_t *it, const tpu_mxu_schedule_t *s);
/* Fills *ev with the events of cycle it->cycle and advances. Returns 1, or 0 (nothing
   filled) once every cycle up to total_cycles - 1 has been reported. */
int tpu_mxu_events_next(tpu_mxu_events_t *it, tpu_mxu_event_t *ev);

#ifdef __cplusplus
}
#endif

#endif
