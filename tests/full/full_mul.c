/* SPDX-License-Identifier: Apache-2.0 */
/* test-full-mul: every one of the 2^32 bf16 x bf16 products of the C model against the
 * host CPU (SSE mulss with MXCSR FTZ|DAZ, NaN canonicalised) and against MPFR
 * (precision 24, binary32 range, subnormalize, DAZ/FTZ/NaN rules on top).
 * Usage: full_mul [--mpfr-stride S] [--stride S]
 *   --mpfr-stride S  compare with MPFR every S-th pair only (default 1: all pairs;
 *                    0: no MPFR)
 *   --stride S       check every S-th pair only (a quick run)
 * Threads: TPU_FULL_THREADS (default 2). Exit status 1 on any mismatch. */
#include "full_common.h"

#include "tpu/numerics.h"

static uint64_t inject;

#define CHUNK_BITS 24

static uint64_t stride = 1, mpfr_stride = 1;

static void chunk(uint64_t k, full_counts_t *c, void *ctx)
{
    (void)ctx;
    uint64_t lo = k << CHUNK_BITS, hi = lo + (UINT64_C(1) << CHUNK_BITS);
    for (uint64_t i = lo + (stride - lo % stride) % stride; i < hi; i += stride) {
        uint16_t a = (uint16_t)(i >> 16), b = (uint16_t)i;
        uint32_t m = bf16_mul(bf16_from_bits(a), bf16_from_bits(b)).v;
        if (i == inject)
            m ^= 1u;
        uint32_t h = ho_bf16_mul(a, b);
        c->n_host++;
        int bad = m != h, with_mpfr = mpfr_stride && i % mpfr_stride == 0;
        uint32_t o = 0;
        if (with_mpfr) {
            o = mo_bf16_mul(a, b);
            c->n_mpfr++;
            bad |= m != o;
        }
        if (bad) {
            c->bad++;
            if (with_mpfr)
                full_mismatch("bf16_mul a=0x%04X b=0x%04X: model=0x%08" PRIX32 " host=0x%08" PRIX32
                              " mpfr=0x%08" PRIX32, a, b, m, h, o);
            else
                full_mismatch("bf16_mul a=0x%04X b=0x%04X: model=0x%08" PRIX32 " host=0x%08" PRIX32,
                              a, b, m, h);
        }
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stride") && i + 1 < argc)
            stride = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--mpfr-stride") && i + 1 < argc)
            mpfr_stride = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--mpfr-stride S] [--stride S]\n", argv[0]);
            return 2;
        }
    }
    if (stride < 1)
        stride = 1;
    int threads = full_threads();
    char mp[64];
    if (mpfr_stride == 0)
        snprintf(mp, sizeof mp, "MPFR off");
    else if (mpfr_stride == 1)
        snprintf(mp, sizeof mp, "vs MPFR on every pair");
    else
        snprintf(mp, sizeof mp, "vs MPFR on one pair in %" PRIu64, mpfr_stride);
    printf("test-full-mul: bf16 x bf16, %s 2^32 pairs (stride %" PRIu64 "), model vs host "
           "(SSE, FTZ|DAZ) and %s, %d threads\n",
           stride == 1 ? "all" : "a sample of the", stride, mp, threads);
    fflush(stdout);
    inject = full_inject_index();
    if (inject != UINT64_MAX)
        printf("TPU_FULL_INJECT: corrupting the model result of case %" PRIu64 " on purpose\n", inject);
    full_t0 = full_now();
    int fail;
    full_counts_t c = full_run(threads, UINT64_C(1) << (32 - CHUNK_BITS), chunk, NULL, &fail);
    return full_report("test-full-mul", c, fail);
}
