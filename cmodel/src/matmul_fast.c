/* SPDX-License-Identifier: Apache-2.0 */
/* The MXU matmul on host floats: an optimisation of tpu_matmul_integer that must give the
   same bits (tests/model checks it). Why host SSE arithmetic is exact here:
   - MXCSR.DAZ makes subnormal inputs zeros, MXCSR.FTZ flushes tiny results to signed zeros,
     rounding is RNE (MXCSR is set for the duration of the call and restored after);
   - a bf16 x bf16 product has at most 16 significant bits, so the host multiply is exact
     (or overflows to Inf exactly when |p| >= 2^128, or is tiny exactly when |p| < 2^-126);
   - -ffp-contract=off (the build's flags) forbids fusing the multiply into the add;
   - every NaN stays a NaN through further additions, so canonicalising (to 0x7FC00000)
     where a value leaves the model - the trace and C - gives the integer path's bits.
   The loops keep each output's k order sequential (row, then k, then the N columns), so the
   compiler vectorises across columns without reassociating any sum. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tpu/mxu.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>

#define TPU_I_MXCSR_DAZ 0x0040u
#define TPU_I_MXCSR_FTZ 0x8000u
#define TPU_I_MXCSR_RC 0x6000u    /* rounding control: 00 = nearest even */
#define TPU_I_MXCSR_MASKS 0x1F80u /* all exceptions masked */

static inline float tpu_i_bf16_to_float(bf16_t x)
{
    uint32_t u = (uint32_t)x.v << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline fp32_t tpu_i_float_out(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        u = TPU_FP32_QNAN;
    return fp32_from_bits(u);
}

/* internal: one tile for one row: p[c] = p[c] + x[r] * w[r][c] for r in 0..rows-1. Kept out
   of line so that no floating-point operation can be moved across the MXCSR writes. */
static __attribute__((noinline)) void tpu_i_tile_row(float *restrict p,
                                                      const bf16_t *restrict x,
                                                      const float *restrict wt, size_t rows,
                                                      size_t n)
{
    for (size_t r = 0; r < rows; r++) {
        const float xa = tpu_i_bf16_to_float(x[r]);
        const float *restrict wr = wt + r * n;
        for (size_t c = 0; c < n; c++)
            p[c] = p[c] + xa * wr[c];
    }
}

/* internal: the tiled loops, with MXCSR already set */
static __attribute__((noinline)) int tpu_i_matmul_sse(size_t N, size_t m, size_t k, size_t n,
                                                      const bf16_t *a, const bf16_t *w,
                                                      fp32_t *c, tpu_trace_t *trace,
                                                      const tpu_mxu_schedule_t *s)
{
    const size_t kt_count = k / N + (k % N != 0);
    const size_t nt_count = n / N + (n % N != 0);
    int rc = TPU_OK;
    float *ps = malloc(m * N * sizeof *ps);
    float *wt = malloc(N * N * sizeof *wt);
    fp32_t *rec = trace != NULL ? malloc(N * sizeof *rec) : NULL;
    if (ps == NULL || wt == NULL || (trace != NULL && rec == NULL)) {
        rc = TPU_ENOMEM;
        goto out;
    }
    const float neg0 = tpu_i_bf16_to_float(bf16_from_bits(0x8000u));
    for (size_t nt = 0; nt < nt_count; nt++) {
        for (size_t i = 0; i < m * N; i++)
            ps[i] = neg0;
        for (size_t kt = 0; kt < kt_count; kt++) {
            const size_t tile = nt * kt_count + kt;
            for (size_t r = 0; r < N; r++)
                for (size_t col = 0; col < N; col++) {
                    size_t kk = kt * N + r, nn = nt * N + col;
                    wt[r * N + col] = tpu_i_bf16_to_float(
                        (kk < k && nn < n) ? w[kk * n + nn] : bf16_from_bits(0x8000u));
                }
            const size_t rows = kt + 1 < kt_count ? N : k - kt * N;
            for (size_t row = 0; row < m; row++) {
                float *p = ps + row * N;
                tpu_i_tile_row(p, a + row * k + kt * N, wt, rows, N);
                if (trace != NULL) {
                    for (size_t col = 0; col < N; col++)
                        rec[col] = tpu_i_float_out(p[col]);
                    rc = tpu_trace_mxu(trace, tpu_mxu_out_cycle(s, tile, row), tile, kt, nt,
                                       row, (unsigned)N, rec);
                    if (rc != TPU_OK)
                        goto out;
                }
            }
        }
        for (size_t row = 0; row < m; row++)
            for (size_t col = 0; col < N && nt * N + col < n; col++)
                c[row * n + nt * N + col] = tpu_i_float_out(ps[row * N + col]);
    }
out:
    free(ps);
    free(wt);
    free(rec);
    return rc;
}
/* ---- Untiled kernel (no trace requested) -----------------------------------------------
   docs/numerics.md: the result is the sequential chain s_{k+1} = s_k + a_k * w_k from -0 and
   does not depend on the array size N, so without a trace (which records per-tile partial
   sums) the model may compute the chain directly. This kernel keeps a 4-row x 64-column
   block of partial sums in 16 AVX-512 registers while k runs, so each weight row is loaded
   once per 4 output rows and no partial sum goes through memory. Still one multiply and one
   add per MAC, in ascending k, never fused: the same bits as the tiled path (tests/model). */
#define TPU_I_KR 4  /* rows of a register block */
#define TPU_I_KV 4  /* 16-float vectors of a register block: 64 columns */

__attribute__((target("avx512f"))) static inline void
tpu_i_block_avx512(size_t rows, size_t k, size_t n, const bf16_t *a, const float *wf,
                   fp32_t *c, size_t j0)
{
    __m512 acc[TPU_I_KR][TPU_I_KV];
    __mmask16 mask[TPU_I_KV];
    for (int v = 0; v < TPU_I_KV; v++) {
        size_t col = j0 + 16u * (size_t)v;
        size_t left = col < n ? n - col : 0;
        mask[v] = left >= 16 ? (__mmask16)0xFFFFu : (__mmask16)((1u << left) - 1u);
        for (int r = 0; r < TPU_I_KR; r++)
            acc[r][v] = _mm512_castsi512_ps(_mm512_set1_epi32((int)0x80000000u));
    }
    for (size_t kk = 0; kk < k; kk++) {
        const float *wr = wf + kk * n + j0;
        __m512 wv[TPU_I_KV];
        for (int v = 0; v < TPU_I_KV; v++)
            wv[v] = _mm512_maskz_loadu_ps(mask[v], wr + 16 * v);
        for (int r = 0; r < TPU_I_KR; r++) {
            if ((size_t)r >= rows)
                break;
            const __m512 x = _mm512_set1_ps(tpu_i_bf16_to_float(a[(size_t)r * k + kk]));
            for (int v = 0; v < TPU_I_KV; v++)
                acc[r][v] = _mm512_add_ps(acc[r][v], _mm512_mul_ps(x, wv[v]));
        }
    }
    for (int r = 0; r < TPU_I_KR && (size_t)r < rows; r++)
        for (int v = 0; v < TPU_I_KV; v++) {
            float out[16];
            _mm512_storeu_ps(out, acc[r][v]);
            for (int e = 0; e < 16; e++) {
                size_t col = j0 + 16u * (size_t)v + (size_t)e;
                if (col < n)
                    c[(size_t)r * n + col] = tpu_i_float_out(out[e]);
            }
        }
}

/* internal: the untiled matmul, with MXCSR already set; wf is W widened to float */
__attribute__((target("avx512f"), noinline)) static void
tpu_i_matmul_avx512(size_t m, size_t k, size_t n, const bf16_t *a, const float *wf, fp32_t *c)
{
    for (size_t j0 = 0; j0 < n; j0 += 16u * TPU_I_KV)
        for (size_t i0 = 0; i0 < m; i0 += TPU_I_KR) {
            size_t rows = m - i0 < TPU_I_KR ? m - i0 : TPU_I_KR;
            if (rows == TPU_I_KR)
                tpu_i_block_avx512(TPU_I_KR, k, n, a + i0 * k, wf, c + i0 * n, j0);
            else
                tpu_i_block_avx512(rows, k, n, a + i0 * k, wf, c + i0 * n, j0);
        }
}

/* internal: 1 if the untiled AVX-512 kernel can run here */
static int tpu_i_have_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}
#endif

int tpu_matmul_fast(const tpu_mxu_cfg_t *cfg, size_t m, size_t k, size_t n, const bf16_t *a,
                    const bf16_t *w, fp32_t *c, tpu_trace_t *trace)
{
#if defined(__x86_64__) && defined(__SSE2__)
    int rc = tpu_matmul_check(cfg, m, k, n, a, w, c);
    if (rc != TPU_OK)
        return rc;
    tpu_mxu_schedule_t s;
    if (trace != NULL) {
        rc = tpu_mxu_schedule(cfg, m, k, n, &s);
        if (rc != TPU_OK)
            return rc;
        rc = tpu_trace_mxu_params(trace, cfg->n, m, k, n, s.latency, s.busy);
        if (rc != TPU_OK) {
            tpu_mxu_schedule_free(&s);
            return rc;
        }
    }
    float *wf = NULL;
    if (trace == NULL && tpu_i_have_avx512()) {
        wf = malloc(k * n * sizeof *wf);
        if (wf == NULL)
            return TPU_ENOMEM;
        for (size_t i = 0; i < k * n; i++)
            wf[i] = tpu_i_bf16_to_float(w[i]);
    }
    const unsigned saved = _mm_getcsr();
    _mm_setcsr((saved & ~(TPU_I_MXCSR_RC)) | TPU_I_MXCSR_DAZ | TPU_I_MXCSR_FTZ |
               TPU_I_MXCSR_MASKS);
    if (wf != NULL)
        tpu_i_matmul_avx512(m, k, n, a, wf, c);
    else
        rc = tpu_i_matmul_sse(cfg->n, m, k, n, a, w, c, trace, trace != NULL ? &s : NULL);
    /* Restore the caller's modes, dropping the exception flags this call raised. */
    _mm_setcsr(saved);
    free(wf);
    if (trace != NULL)
        tpu_mxu_schedule_free(&s);
    return rc;
#else
    return tpu_matmul_integer(cfg, m, k, n, a, w, c, trace);
#endif
}
