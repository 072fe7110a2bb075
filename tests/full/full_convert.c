/* SPDX-License-Identifier: Apache-2.0 */
/* test-full-convert: every one of the 2^32 fp32 -> bf16 conversions of the C model against
 * MPFR (bfloat16 precision 8 with subnormalize, DAZ/NaN rules on top), and also against
 * AVX512-BF16 vcvtneps2bf16 when the CPU has it (skipped with a message otherwise).
 * Usage: full_convert [--stride S]   (S > 1 checks every S-th input only: a quick run)
 * Threads: TPU_FULL_THREADS (default 2). Exit status 1 on any mismatch. */
#include "full_common.h"

#include "tpu/numerics.h"

static uint64_t inject;

#define CHUNK_BITS 24

static int use_host;
static uint64_t stride = 1;

static void chunk(uint64_t k, full_counts_t *c, void *ctx)
{
    (void)ctx;
    uint64_t lo = k << CHUNK_BITS, hi = lo + (UINT64_C(1) << CHUNK_BITS);
    for (uint64_t i = lo + (stride - lo % stride) % stride; i < hi; i += stride) {
        uint32_t v = (uint32_t)i;
        uint16_t m = fp32_to_bf16(fp32_from_bits(v)).v;
        if (i == inject)
            m ^= 1u;
        uint16_t o = mo_fp32_to_bf16(v);
        c->n_mpfr++;
        int bad = m != o;
        uint16_t h = 0;
        if (use_host) {
            h = ho_fp32_to_bf16(v);
            c->n_host++;
            bad |= m != h;
        }
        if (bad) {
            c->bad++;
            if (use_host)
                full_mismatch("fp32_to_bf16 a=0x%08" PRIX32 ": model=0x%04X mpfr=0x%04X host=0x%04X",
                              v, m, o, h);
            else
                full_mismatch("fp32_to_bf16 a=0x%08" PRIX32 ": model=0x%04X mpfr=0x%04X", v, m, o);
        }
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stride") && i + 1 < argc)
            stride = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--stride S]\n", argv[0]);
            return 2;
        }
    }
    if (stride < 1)
        stride = 1;
    const char *why = "";
    use_host = ho_has_fp32_to_bf16(&why);
    int threads = full_threads();
    printf("test-full-convert: fp32 -> bf16, %s 2^32 inputs (stride %" PRIu64 "), model vs MPFR%s, "
           "%d threads\n", stride == 1 ? "all" : "a sample of the", stride,
           use_host ? " and host AVX512-BF16 (vcvtneps2bf16)" : "", threads);
    if (!use_host)
        printf("note: %s\n", why);
    fflush(stdout);
    inject = full_inject_index();
    if (inject != UINT64_MAX)
        printf("TPU_FULL_INJECT: corrupting the model result of case %" PRIu64 " on purpose\n", inject);
    full_t0 = full_now();
    int fail;
    full_counts_t c = full_run(threads, UINT64_C(1) << (32 - CHUNK_BITS), chunk, NULL, &fail);
    return full_report("test-full-convert", c, fail);
}
