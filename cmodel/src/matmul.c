/* SPDX-License-Identifier: Apache-2.0 */
/* The MXU matmul on the integer reference numerics: the definition that the fast path and
   the RTL are checked against. Tiled exactly as docs/mxu.md ("Driving a matmul"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tpu/mxu.h"
#include "tpu/numerics.h"

int tpu_matmul_check(const tpu_mxu_cfg_t *cfg, size_t m, size_t k, size_t n, const void *a,
                     const void *w, const void *c)
{
    if (cfg == NULL || a == NULL || w == NULL || c == NULL)
        return TPU_EINVAL;
    if (m == 0 || k == 0 || n == 0)
        return TPU_EINVAL;
    if (cfg->n < TPU_MXU_N_MIN || cfg->n > TPU_MXU_N_MAX ||
        cfg->pe_stages > TPU_MXU_PE_STAGES_MAX)
        return TPU_EINVAL;
    if (cfg->path > TPU_MXU_PATH_FAST)
        return TPU_EINVAL;
    /* Every buffer the model touches must be addressable: A, W, C and the padded working
       set (m x NT*N partial sums, N x N weights). */
    size_t N = cfg->n;
    size_t npad = (n / N + (n % N != 0)) * N;
    if (m > SIZE_MAX / k || (m * k) > SIZE_MAX / sizeof(bf16_t))
        return TPU_EINVAL;
    if (k > SIZE_MAX / n || (k * n) > SIZE_MAX / sizeof(bf16_t))
        return TPU_EINVAL;
    if (npad < n || m > SIZE_MAX / npad || (m * npad) > SIZE_MAX / sizeof(fp32_t))
        return TPU_EINVAL;
    return TPU_OK;
}

int tpu_matmul_fast_available(void)
{
#if defined(__x86_64__) && defined(__SSE2__)
    return 1;
#else
    return 0;
#endif
}

int tpu_matmul(const tpu_mxu_cfg_t *cfg, size_t m, size_t k, size_t n, const bf16_t *a,
               const bf16_t *w, fp32_t *c, tpu_trace_t *trace)
{
    int rc = tpu_matmul_check(cfg, m, k, n, a, w, c);
    if (rc != TPU_OK)
        return rc;
    if (cfg->path == TPU_MXU_PATH_INTEGER)
        return tpu_matmul_integer(cfg, m, k, n, a, w, c, trace);
    return tpu_matmul_fast(cfg, m, k, n, a, w, c, trace);
}

int tpu_matmul_integer(const tpu_mxu_cfg_t *cfg, size_t m, size_t k, size_t n,
                       const bf16_t *a, const bf16_t *w, fp32_t *c, tpu_trace_t *trace)
{
    int rc = tpu_matmul_check(cfg, m, k, n, a, w, c);
    if (rc != TPU_OK)
        return rc;
    const size_t N = cfg->n;
    tpu_mxu_schedule_t s;
    int have_sched = 0;
    if (trace != NULL) {
        rc = tpu_mxu_schedule(cfg, m, k, n, &s);
        if (rc != TPU_OK)
            return rc;
        have_sched = 1;
        rc = tpu_trace_mxu_params(trace, cfg->n, m, k, n, s.latency, s.busy);
        if (rc != TPU_OK)
            goto out;
    }
    const size_t kt_count = k / N + (k % N != 0);
    const size_t nt_count = n / N + (n % N != 0);
    /* ps: the partial sums of the current N-tile, m rows x N columns; wt: the tile's
       weights, N x N, padded with -0. */
    fp32_t *ps = malloc(m * N * sizeof *ps);
    bf16_t *wt = malloc(N * N * sizeof *wt);
    if (ps == NULL || wt == NULL) {
        rc = TPU_ENOMEM;
        goto free_out;
    }
    for (size_t nt = 0; nt < nt_count; nt++) {
        for (size_t i = 0; i < m * N; i++)
            ps[i] = fp32_from_bits(TPU_FP32_NEG_ZERO); /* seed of kt = 0 */
        for (size_t kt = 0; kt < kt_count; kt++) {
            const size_t tile = nt * kt_count + kt;
            for (size_t r = 0; r < N; r++)
                for (size_t col = 0; col < N; col++) {
                    size_t kk = kt * N + r, nn = nt * N + col;
                    wt[r * N + col] = (kk < k && nn < n) ? w[kk * n + nn]
                                                         : bf16_from_bits(0x8000u);
                }
            /* Rows of the tile beyond K carry act +0 and weight -0: their product -0 is
               the additive identity, so only the real rows are computed. */
            const size_t rows = kt + 1 < kt_count ? N : k - kt * N;
            for (size_t row = 0; row < m; row++) {
                fp32_t *p = ps + row * N;
                const bf16_t *arow = a + row * k + kt * N;
                for (size_t r = 0; r < rows; r++) {
                    const bf16_t x = arow[r];
                    const bf16_t *wr = wt + r * N;
                    for (size_t col = 0; col < N; col++)
                        p[col] = fp32_mac(p[col], x, wr[col]);
                }
                if (trace != NULL) {
                    rc = tpu_trace_mxu(trace, tpu_mxu_out_cycle(&s, tile, row), tile, kt, nt,
                                       row, cfg->n, p);
                    if (rc != TPU_OK)
                        goto free_out;
                }
            }
        }
        for (size_t row = 0; row < m; row++)
            for (size_t col = 0; col < N && nt * N + col < n; col++)
                c[row * n + nt * N + col] = ps[row * N + col];
    }
    rc = TPU_OK;
free_out:
    free(ps);
    free(wt);
out:
    if (have_sched)
        tpu_mxu_schedule_free(&s);
    return rc;
}
