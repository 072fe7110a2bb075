/* SPDX-License-Identifier: Apache-2.0 */
/* All-reduce(sum) over a ring and a torus of cores, in the order of docs/board.md. The model
   follows the algorithm step by step (reduce-scatter, all-gather) on per-core buffers, so
   every core's result is what that core would hold, not one shared answer copied out. */
#include <stdlib.h>
#include <string.h>

#include "tpu/board.h"
#include "tpu/numerics.h"

size_t tpu_chunk_lo(size_t n, unsigned k, unsigned j)
{
    size_t q = n / k, r = n % k;
    return (size_t)j * q + (j < r ? j : r);
}

/* internal: one ring of m cores whose members are buf[ids[0..m-1]] (in ring order), on the
   element range [base, base + len). Reduce-scatter then all-gather, as the cores would:
   in reduce-scatter step s, member i sends chunk (i - s) mod m to member i+1, which adds its
   own copy (fp32_add(received, own)). Sends of one step are all taken before any add. */
static int ring_allreduce(fp32_t *const buf[], const unsigned *ids, unsigned m, size_t base,
                          size_t len)
{
    if (m <= 1 || len == 0)
        return 0;
    size_t maxc = len / m + 1;
    fp32_t *msg = malloc(sizeof(fp32_t) * maxc * m);
    if (!msg)
        return -1;
    for (unsigned phase = 0; phase < 2; phase++) {
        for (unsigned s = 0; s + 1 < m; s++) {
            /* every member sends: reduce-scatter chunk (i - s), all-gather chunk (i + 1 - s) */
            for (unsigned i = 0; i < m; i++) {
                unsigned j = (i + m - s + (phase ? 1u : 0u)) % m;
                size_t lo = tpu_chunk_lo(len, m, j), hi = tpu_chunk_lo(len, m, j + 1);
                memcpy(msg + (size_t)i * maxc, buf[ids[i]] + base + lo,
                       sizeof(fp32_t) * (hi - lo));
            }
            for (unsigned i = 0; i < m; i++) {
                unsigned to = (i + 1) % m;
                unsigned j = (i + m - s + (phase ? 1u : 0u)) % m;
                size_t lo = tpu_chunk_lo(len, m, j), hi = tpu_chunk_lo(len, m, j + 1);
                fp32_t *dst = buf[ids[to]] + base + lo;
                const fp32_t *src = msg + (size_t)i * maxc;
                for (size_t e = 0; e < hi - lo; e++)
                    dst[e] = phase ? src[e] : fp32_add(src[e], dst[e]);
            }
        }
    }
    free(msg);
    return 0;
}

/* internal: checks the arguments and copies x into y (y[i] may alias x[i]) */
static tpu_status_t setup(unsigned cores, size_t n, const fp32_t *const x[], fp32_t *const y[])
{
    if (cores < 1 || cores > TPU_BOARD_CORES_MAX || !x || !y)
        return TPU_EINVAL;
    for (unsigned i = 0; i < cores; i++) {
        if ((!x[i] || !y[i]) && n > 0)
            return TPU_EINVAL;
        if (n > 0 && y[i] != x[i])
            memmove(y[i], x[i], sizeof(fp32_t) * n);
    }
    return TPU_OK;
}

tpu_status_t tpu_allreduce_torus(unsigned rows, unsigned cols, size_t n,
                                 const fp32_t *const x[], fp32_t *const y[])
{
    if (rows < 1 || cols < 1 || rows > TPU_BOARD_CORES_MAX || cols > TPU_BOARD_CORES_MAX)
        return TPU_EINVAL;
    unsigned cores = rows * cols;
    tpu_status_t st = setup(cores, n, x, y);
    if (st != TPU_OK)
        return st;
    unsigned ids[TPU_BOARD_CORES_MAX];
    /* Row reduce-scatter: core (r, c) ends owning row-chunk (c + 1) mod S (the partial of
       chunk j leaves column j and is complete at column j - 1). */
    size_t maxc = n / cols + 1;
    fp32_t *msg = malloc(sizeof(fp32_t) * (maxc + 1) * cores);
    if (!msg)
        return TPU_ENOMEM;
    for (unsigned s = 0; s + 1 < cols; s++) {
        for (unsigned r = 0; r < rows; r++)
            for (unsigned c = 0; c < cols; c++) {
                unsigned j = (c + cols - s) % cols;
                size_t lo = tpu_chunk_lo(n, cols, j), hi = tpu_chunk_lo(n, cols, j + 1);
                memcpy(msg + (size_t)(r * cols + c) * maxc, y[r * cols + c] + lo,
                       sizeof(fp32_t) * (hi - lo));
            }
        for (unsigned r = 0; r < rows; r++)
            for (unsigned c = 0; c < cols; c++) {
                unsigned j = (c + cols - s) % cols;
                size_t lo = tpu_chunk_lo(n, cols, j), hi = tpu_chunk_lo(n, cols, j + 1);
                fp32_t *dst = y[r * cols + (c + 1) % cols] + lo;
                const fp32_t *src = msg + (size_t)(r * cols + c) * maxc;
                for (size_t e = 0; e < hi - lo; e++)
                    dst[e] = fp32_add(src[e], dst[e]);
            }
    }
    free(msg);
    /* Column all-reduce of each column's owned row-chunk (reduce-scatter + all-gather). */
    for (unsigned c = 0; c < cols; c++) {
        unsigned j1 = (c + 1) % cols;
        size_t lo = tpu_chunk_lo(n, cols, j1), hi = tpu_chunk_lo(n, cols, j1 + 1);
        for (unsigned r = 0; r < rows; r++)
            ids[r] = r * cols + c;
        if (ring_allreduce(y, ids, rows, lo, hi - lo) != 0)
            return TPU_ENOMEM;
    }
    /* Row all-gather: member c of row r holds row-chunk (c + 1) mod S complete; in step s it
       sends chunk (c + 1 - s) mod S east. */
    for (unsigned s = 0; s + 1 < cols; s++)
        for (unsigned r = 0; r < rows; r++)
            for (unsigned c = 0; c < cols; c++) {
                unsigned j = (c + 1 + cols - s) % cols;
                size_t lo = tpu_chunk_lo(n, cols, j), hi = tpu_chunk_lo(n, cols, j + 1);
                memcpy(y[r * cols + (c + 1) % cols] + lo, y[r * cols + c] + lo,
                       sizeof(fp32_t) * (hi - lo));
            }
    return TPU_OK;
}

tpu_status_t tpu_allreduce_ring(unsigned cores, size_t n, const fp32_t *const x[],
                                fp32_t *const y[])
{
    tpu_status_t st = setup(cores, n, x, y);
    if (st != TPU_OK)
        return st;
    unsigned ids[TPU_BOARD_CORES_MAX];
    for (unsigned i = 0; i < cores; i++)
        ids[i] = i;
    return ring_allreduce(y, ids, cores, 0, n) == 0 ? TPU_OK : TPU_ENOMEM;
}
