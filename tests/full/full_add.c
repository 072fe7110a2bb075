/* SPDX-License-Identifier: Apache-2.0 */
/* test-full-add: a very large random run of fp32_add and fp32_sub (default 2^32 pairs,
 * the generators of tests/numerics/gen.h in turn) against the host CPU (SSE addss/subss
 * with MXCSR FTZ|DAZ, NaN canonicalised), and every 64th pair also against MPFR.
 * Usage: full_add [--pairs N] [--mpfr-stride S] [--seed X]
 * The pairs depend only on the seed, not on the number of threads (TPU_FULL_THREADS,
 * default 2). Exit status 1 on any mismatch. */
#include "full_common.h"

#include "gen.h"
#include "tpu/numerics.h"

static uint64_t inject;

#define CHUNK (UINT64_C(1) << 22)

static uint64_t pairs = UINT64_C(1) << 32, mpfr_stride = 64, seed = UINT64_C(0x4144444641444446);

static void chunk(uint64_t k, full_counts_t *c, void *ctx)
{
    (void)ctx;
    rng_t r;
    rng_seed(&r, seed ^ (k * UINT64_C(0x9E3779B97F4A7C15)));
    uint64_t lo = k * CHUNK, hi = lo + CHUNK < pairs ? lo + CHUNK : pairs;
    for (uint64_t i = lo; i < hi; i++) {
        uint32_t a, b;
        gen_fp32_pair(&r, (int)(i % GEN_COUNT), &a, &b);
        int sub = (int)((i / GEN_COUNT) & 1u);
        uint32_t m = sub ? fp32_sub(fp32_from_bits(a), fp32_from_bits(b)).v
                         : fp32_add(fp32_from_bits(a), fp32_from_bits(b)).v;
        if (i == inject)
            m ^= 1u;
        uint32_t h = sub ? ho_fp32_sub(a, b) : ho_fp32_add(a, b);
        c->n_host++;
        int bad = m != h, with_mpfr = mpfr_stride && i % mpfr_stride == 0;
        uint32_t o = 0;
        if (with_mpfr) {
            o = sub ? mo_fp32_sub(a, b) : mo_fp32_add(a, b);
            c->n_mpfr++;
            bad |= m != o;
        }
        if (bad) {
            c->bad++;
            full_mismatch("%s a=0x%08" PRIX32 " b=0x%08" PRIX32 " [%s]: model=0x%08" PRIX32
                          " host=0x%08" PRIX32 " mpfr=%s0x%08" PRIX32, sub ? "fp32_sub" : "fp32_add",
                          a, b, GEN_NAME[i % GEN_COUNT], m, h, with_mpfr ? "" : "(not run) ", o);
        }
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
            pairs = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--mpfr-stride") && i + 1 < argc)
            mpfr_stride = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--pairs N] [--mpfr-stride S] [--seed X]\n", argv[0]);
            return 2;
        }
    }
    int threads = full_threads();
    printf("test-full-add: %" PRIu64 " random fp32 add/sub pairs (seed 0x%016" PRIX64 "), model vs "
           "host (SSE, FTZ|DAZ) and vs MPFR on one pair in %" PRIu64 " (0: none), %d threads\n",
           pairs, seed, mpfr_stride, threads);
    fflush(stdout);
    inject = full_inject_index();
    if (inject != UINT64_MAX)
        printf("TPU_FULL_INJECT: corrupting the model result of case %" PRIu64 " on purpose\n", inject);
    full_t0 = full_now();
    int fail;
    full_counts_t c = full_run(threads, (pairs + CHUNK - 1) / CHUNK, chunk, NULL, &fail);
    return full_report("test-full-add", c, fail);
}
