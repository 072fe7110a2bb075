/* SPDX-License-Identifier: Apache-2.0 */
/* The dense AVX2 and AVX-512 kernels of the host-float matmul for small arrays (N <= 32, core_mx.c's
   mx_host): every step of every row done, x[k] * w[k][j] added to p[j] for k = 0 .. N - 1 in
   order, the same host operations as the SSE2 kernel (mx_rows_host) and so the same bits as
   fp32_mac (MXCSR DAZ | FTZ, RNE, masked, set by the caller; -ffp-contract=off keeps the mul
   and the add separate). At N = 16 a row has only 16 steps of two vectors: the skip kernel's
   bookkeeping per row (the list of steps, the sign rule's checks) costs several times the
   arithmetic it saves, so this one does the arithmetic, R rows at a time (independent add
   chains), and writes each row's result (NaN canonicalised) straight to out[m]. out[m] may be
   seed[m] (an accumulating matmul writes the ACC row it reads) but no other row's seed: the
   rows of a group are distinct ACC rows, and a block of rows reads all its seeds first. */
#include "core_internal.h"

#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>

#define MXD_AVX2 __attribute__((target("avx2"), always_inline)) static inline

/* rows a[0 .. R - 1] on V vectors of lanes (8V >= n) */
MXD_AVX2 void mxd_block(unsigned V, unsigned R, unsigned n, const float *w, size_t ws,
                        const uint32_t *const *a, const uint32_t *const *seed,
                        uint32_t *const *out, const __m256i *mask)
{
    __m256 p[4][4];
    float xf[4][32] __attribute__((aligned(32)));
    const __m256 mz = _mm256_set1_ps(-0.0f);
    for (unsigned r = 0; r < R; r++)
        for (unsigned v = 0; v < V; v++) {
            p[r][v] = seed[r] ? _mm256_maskload_ps((const float *)(const void *)(seed[r] + 8u * v),
                                                   mask[v])
                              : mz;
            __m256i x = _mm256_maskload_epi32((const int *)(const void *)(a[r] + 8u * v), mask[v]);
            _mm256_store_si256((__m256i *)(void *)(xf[r] + 8u * v), _mm256_slli_epi32(x, 16));
        }
    for (unsigned k = 0; k < n; k++) {
        const float *wr = w + (size_t)k * ws;
        for (unsigned v = 0; v < V; v++) {
            __m256 wv = _mm256_load_ps(wr + 8u * v);
            for (unsigned r = 0; r < R; r++)
                p[r][v] = _mm256_add_ps(p[r][v], _mm256_mul_ps(_mm256_broadcast_ss(&xf[r][k]), wv));
        }
    }
    const __m256i ab = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
    const __m256i qnan = _mm256_set1_epi32(0x7FC00000);
    for (unsigned r = 0; r < R; r++)
        for (unsigned v = 0; v < V; v++) {
            __m256i u = _mm256_castps_si256(p[r][v]);
            __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, ab), inf);
            _mm256_maskstore_epi32((int *)(void *)(out[r] + 8u * v), mask[v],
                                   _mm256_blendv_epi8(u, qnan, nan));
        }
}

MXD_AVX2 void mxd_rows(unsigned V, unsigned R, unsigned n, const float *w, size_t ws,
                       unsigned rows, const uint32_t *const *a, const uint32_t *const *seed,
                       uint32_t *const *out)
{
    __m256i mask[4];
    for (unsigned v = 0; v < V; v++) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        mask[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n - (int)(8u * v)), lane);
    }
    unsigned m = 0;
    for (; m + R <= rows; m += R)
        mxd_block(V, R, n, w, ws, a + m, seed + m, out + m, mask);
    for (; m < rows; m++)
        mxd_block(V, 1, n, w, ws, a + m, seed + m, out + m, mask);
}

__attribute__((target("avx2"), noinline)) static void
mxd_avx2(unsigned n, const float *w, size_t ws, unsigned rows, const uint32_t *const *a,
         const uint32_t *const *seed, uint32_t *const *out)
{
    if (n <= 8)
        mxd_rows(1, 4, n, w, ws, rows, a, seed, out);
    else if (n <= 16)
        mxd_rows(2, 4, n, w, ws, rows, a, seed, out);
    else if (n <= 24)
        mxd_rows(3, 4, n, w, ws, rows, a, seed, out);
    else
        mxd_rows(4, 3, n, w, ws, rows, a, seed, out);
}

/* The same on AVX-512 (16 lanes a vector: one per row at N <= 16; the same host operations
   lane by lane, MXCSR applies to them as to the AVX2 ones): R rows of V vectors */
#define MXD_512 __attribute__((target("avx512f"), always_inline)) static inline

MXD_512 void mxd512_block(unsigned V, unsigned R, unsigned n, const float *w, size_t ws,
                          const uint32_t *const *a, const uint32_t *const *seed,
                          uint32_t *const *out, const __mmask16 *mask)
{
    __m512 p[8][2];
    float xf[8][32] __attribute__((aligned(64)));
    const __m512 mz = _mm512_set1_ps(-0.0f);
    for (unsigned r = 0; r < R; r++)
        for (unsigned v = 0; v < V; v++) {
            p[r][v] = seed[r] ? _mm512_maskz_loadu_ps(mask[v], seed[r] + 16u * v) : mz;
            __m512i x = _mm512_maskz_loadu_epi32(mask[v], a[r] + 16u * v);
            _mm512_store_si512((void *)(xf[r] + 16u * v), _mm512_slli_epi32(x, 16));
        }
    for (unsigned k = 0; k < n; k++) {
        const float *wr = w + (size_t)k * ws;
        for (unsigned v = 0; v < V; v++) {
            __m512 wv = _mm512_loadu_ps(wr + 16u * v);
            for (unsigned r = 0; r < R; r++)
                p[r][v] = _mm512_add_ps(p[r][v], _mm512_mul_ps(_mm512_set1_ps(xf[r][k]), wv));
        }
    }
    const __m512i ab = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
    const __m512i qnan = _mm512_set1_epi32(0x7FC00000);
    for (unsigned r = 0; r < R; r++)
        for (unsigned v = 0; v < V; v++) {
            __m512i u = _mm512_castps_si512(p[r][v]);
            __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, ab), inf);
            _mm512_mask_storeu_epi32(out[r] + 16u * v, mask[v], _mm512_mask_mov_epi32(u, nan, qnan));
        }
}

MXD_512 void mxd512_rows(unsigned V, unsigned R, unsigned n, const float *w, size_t ws,
                         unsigned rows, const uint32_t *const *a, const uint32_t *const *seed,
                         uint32_t *const *out)
{
    __mmask16 mask[2];
    for (unsigned v = 0; v < V; v++) {
        unsigned l = n - 16u * v < 16u ? n - 16u * v : 16u;
        mask[v] = (__mmask16)((1u << l) - 1u);
    }
    unsigned m = 0;
    for (; m + R <= rows; m += R)
        mxd512_block(V, R, n, w, ws, a + m, seed + m, out + m, mask);
    for (; m < rows; m++)
        mxd512_block(V, 1, n, w, ws, a + m, seed + m, out + m, mask);
}

__attribute__((target("avx512f"), noinline)) static void
mxd_avx512(unsigned n, const float *w, size_t ws, unsigned rows, const uint32_t *const *a,
           const uint32_t *const *seed, uint32_t *const *out)
{
    if (n <= 16)
        mxd512_rows(1, 8, n, w, ws, rows, a, seed, out);
    else
        mxd512_rows(2, 6, n, w, ws, rows, a, seed, out);
}

void core_mx_dense(int avx512, unsigned n, const float *w, size_t ws, unsigned rows,
                   const uint32_t *const *a, const uint32_t *const *seed, uint32_t *const *out)
{
    if (avx512)
        mxd_avx512(n, w, ws, rows, a, seed, out);
    else
        mxd_avx2(n, w, ws, rows, a, seed, out);
}
#endif
