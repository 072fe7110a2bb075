/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark: the C model's bit-exact matmul (fast path and integer path) next to an OpenBLAS
   sgemm of the same shape on the same machine. Prints MACs/s for each and the ratio
   model / sgemm. The sgemm gets the same inputs widened to float; its result is not
   compared (it uses FMA and another order), only its speed. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tpu/tpu.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* internal: a random bf16 in about [-2, 2], never NaN/Inf */
static uint16_t rnd_bf16(uint64_t *s)
{
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    uint16_t sign = (uint16_t)((*s >> 40) & 1u) << 15;
    uint16_t exp = (uint16_t)(120u + (*s >> 20) % 8u);
    return (uint16_t)(sign | exp << 7 | (*s & 0x7Fu));
}

/* internal: best time of `reps` runs (or until 1 s of total run time, at least 2 runs) */
#define TIME_BEST(best, stmt)                                                   \
    do {                                                                        \
        double t_total = 0; best = 1e30;                                        \
        for (int r_ = 0; r_ < 20 && (r_ < 2 || t_total < 1.0); r_++) {          \
            double t0_ = now(); stmt; double dt_ = now() - t0_;                 \
            t_total += dt_; if (dt_ < best) best = dt_;                         \
        }                                                                       \
    } while (0)

int main(int argc, char **argv)
{
    size_t sizes[] = { 128, 256, 512 };
    size_t nsizes = sizeof sizes / sizeof sizes[0];
    unsigned array_n = 128;
    if (argc > 1) {
        char *end;
        unsigned long v = strtoul(argv[1], &end, 10);
        if (*end || v < 1 || v > 256) {
            fprintf(stderr, "matmul_speed: error: array size '%s' (allowed: 1..256)\n", argv[1]);
            return 2;
        }
        array_n = (unsigned)v;
    }
    openblas_set_num_threads(1);
    printf("# C model matmul vs OpenBLAS sgemm, 1 thread, array N = %u, best of runs\n", array_n);
    printf("# fast path available: %s\n", tpu_matmul_fast_available() ? "yes" : "no");
    printf("%-6s %14s %14s %14s %8s %8s\n", "size", "model-fast", "model-int", "sgemm",
           "fast/sg", "int/sg");
    for (size_t si = 0; si < nsizes; si++) {
        size_t d = sizes[si];
        bf16_t *a = malloc(d * d * sizeof *a), *w = malloc(d * d * sizeof *w);
        fp32_t *c = malloc(d * d * sizeof *c), *c2 = malloc(d * d * sizeof *c2);
        float *fa = malloc(d * d * sizeof *fa), *fw = malloc(d * d * sizeof *fw);
        float *fc = malloc(d * d * sizeof *fc);
        if (!a || !w || !c || !c2 || !fa || !fw || !fc) {
            fprintf(stderr, "matmul_speed: error: out of memory\n");
            return 1;
        }
        uint64_t s = 0x9E3779B97F4A7C15u + d;
        for (size_t i = 0; i < d * d; i++) {
            a[i].v = rnd_bf16(&s);
            w[i].v = rnd_bf16(&s);
            uint32_t ua = (uint32_t)a[i].v << 16, uw = (uint32_t)w[i].v << 16;
            memcpy(&fa[i], &ua, 4);
            memcpy(&fw[i], &uw, 4);
        }
        tpu_mxu_cfg_t cfg = { .n = array_n };
        double tf, ti, tb;
        int rc = TPU_OK;
        TIME_BEST(tf, rc |= tpu_matmul_fast(&cfg, d, d, d, a, w, c, NULL));
        TIME_BEST(ti, rc |= tpu_matmul_integer(&cfg, d, d, d, a, w, c2, NULL));
        TIME_BEST(tb, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d, (int)d,
                                  (int)d, 1.0f, fa, (int)d, fw, (int)d, 0.0f, fc, (int)d));
        if (rc != TPU_OK || memcmp(c, c2, d * d * sizeof *c) != 0) {
            fprintf(stderr, "matmul_speed: error: fast and integer paths disagree at %zu\n", d);
            return 1;
        }
        double macs = (double)d * d * d;
        printf("%-6zu %11.3g M/s %11.3g M/s %11.3g M/s %8.3f %8.3f\n", d, macs / tf / 1e6,
               macs / ti / 1e6, macs / tb / 1e6, tb / tf, tb / ti);
        free(a); free(w); free(c); free(c2); free(fa); free(fw); free(fc);
    }
    return 0;
}
