/* SPDX-License-Identifier: Apache-2.0 */
/* VPU accuracy table (docs/vpu.md, "Measured accuracy"): `make bench-vpu-accuracy`.
   For each unary function f and ALL 65,536 bf16 inputs x, the model's bf16 result
   fp32_to_bf16(f(bf16_to_fp32(x))) is compared with the correctly rounded bf16 value of
   the exact f(x) from MPFR (same FTZ / overflow rules). Also: a fixed-seed sample of fp32
   inputs, fp32 result vs correctly rounded fp32 (log, rsqrt: the |x| in [2^-20, 2^8) half
   with x > 0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../tests/vpu/vpu_ref.h"

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint32_t rnd32(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

typedef struct {
    double max_err;      /* max |got - exact| in ulps of the exact value */
    uint64_t max_dist;   /* max distance from the correctly rounded value, in ulps */
    uint32_t worst_x;
    long n, cr, special, nonmono;
    const char *first_special;
    uint32_t first_special_x;
} stats_t;

static void account(stats_t *s, ref_fn_t fn, uint32_t x32, uint32_t y32, int prec, mpfr_t ex)
{
    const char *why = ref_special_violation(fn, x32, y32);
    if (why) {
        if (!s->special) {
            s->first_special = why;
            s->first_special_x = x32;
        }
        s->special++;
    }
    if (mpfr_nan_p(ex))
        return;
    uint32_t got = prec == 8 ? (uint32_t)fp32_to_bf16(fp32_from_bits(y32)).v << 16 : y32;
    uint32_t cr = ref_round(ex, prec);
    s->n++;
    if (got == cr)
        s->cr++;
    uint64_t d = ref_ulp_dist(got, cr, prec);
    /* where the contract rounds to 0 or Inf (FTZ, overflow) the error is the distance */
    uint32_t cr_mag = cr & 0x7FFFFFFFu, got_mag = got & 0x7FFFFFFFu;
    double e = (cr_mag == 0 || cr_mag == 0x7F800000u || got_mag == 0 || got_mag == 0x7F800000u)
                   ? (double)d
                   : ref_err_ulps(got, ex, prec);
    if (d > s->max_dist || (d == s->max_dist && e > s->max_err))
        s->worst_x = x32;
    if (d > s->max_dist)
        s->max_dist = d;
    if (e > s->max_err)
        s->max_err = e;
}

/* `vpu_accuracy scan FN LO HI STEP`: max fp32 error of FN over the fp32 patterns
   LO, LO+STEP, ... < HI (hex patterns), e.g. scan tanh 3e000000 3e800000 13 */
static int scan(int argc, char **argv)
{
    if (argc != 6)
        return 2;
    int f = -1;
    for (int i = 0; i < REF_NFUNCS; i++)
        if (!strcmp(argv[2], ref_fn_names[i]))
            f = i;
    if (f < 0)
        return 2;
    uint32_t lo = (uint32_t)strtoul(argv[3], 0, 16), hi = (uint32_t)strtoul(argv[4], 0, 16);
    uint32_t step = (uint32_t)strtoul(argv[5], 0, 0);
    mpfr_t ex;
    mpfr_init2(ex, REF_PREC);
    double mx = 0;
    uint32_t wx = lo;
    long n = 0, cr = 0;
    for (uint64_t x = lo; x < hi && step; x += step) {
        uint32_t y = ref_model((ref_fn_t)f, fp32_from_bits((uint32_t)x)).v;
        ref_eval((ref_fn_t)f, (uint32_t)x, ex);
        uint32_t c = ref_round(ex, 24);
        uint32_t cm = c & 0x7FFFFFFFu, ym = y & 0x7FFFFFFFu;
        double e = (cm == 0 || cm == 0x7F800000u || ym == 0 || ym == 0x7F800000u)
                       ? (double)ref_ulp_dist(y, c, 24)
                       : ref_err_ulps(y, ex, 24);
        n++;
        cr += y == c;
        if (e > mx) {
            mx = e;
            wx = (uint32_t)x;
        }
    }
    printf("%s fp32 [%08x, %08x) step %u: %ld inputs, max err %.4f ulp at %08x, %.3f%% CR\n",
           ref_fn_names[f], lo, hi, step, n, mx, wx, n ? 100.0 * (double)cr / (double)n : 0.0);
    mpfr_clear(ex);
    return 0;
}

int main(int argc, char **argv)
{
    long nfp32 = 200000;
    if (argc > 1 && !strcmp(argv[1], "scan"))
        return scan(argc, argv);
    if (argc > 1)
        nfp32 = atol(argv[1]);
    mpfr_t ex;
    mpfr_init2(ex, REF_PREC);
    printf("VPU accuracy (C model vs MPFR, correctly rounded references; docs/vpu.md)\n");
    printf("bf16: all 65536 bf16 inputs, y = fp32_to_bf16(f(bf16_to_fp32(x))) vs CR bf16 of "
           "f(x)\nfp32: %ld fixed-seed fp32 inputs (half uniform bit patterns, half |x| in "
           "[2^-20, 2^8)), fp32 result vs CR fp32\n\n", nfp32);
    printf("| function | bf16 max ulp (vs CR) | bf16 max err (ulp) | bf16 correctly rounded "
           "| special-value violations | bf16 non-monotone steps | fp32 max ulp (vs CR) "
           "| fp32 max err (ulp) | fp32 correctly rounded |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    int bad = 0;
    for (int f = 0; f < REF_NFUNCS; f++) {
        stats_t b, s;
        memset(&b, 0, sizeof b);
        memset(&s, 0, sizeof s);
        /* bf16: all inputs; monotonicity over the ordered non-NaN inputs */
        uint16_t prev = 0;
        int have_prev = 0;
        for (int sgn = 1; sgn >= 0; sgn--) {
            for (int k = 0; k < 0x8000; k++) {
                uint16_t mag = (uint16_t)(sgn ? 0x7FFF - k : k);
                uint16_t xb = (uint16_t)((sgn << 15) | mag);
                uint32_t x32 = (uint32_t)xb << 16;
                uint32_t y32 = ref_model((ref_fn_t)f, bf16_to_fp32(bf16_from_bits(xb))).v;
                ref_eval((ref_fn_t)f, x32, ex);
                account(&b, (ref_fn_t)f, x32, y32, 8, ex);
                if (mag > 0x7F80u)
                    continue;
                int pos_only = f == REF_LOG || f == REF_RSQRT; /* NaN for x < 0 */
                if (pos_only && sgn)
                    continue;
                uint16_t yb = fp32_to_bf16(fp32_from_bits(y32)).v;
                /* non-decreasing for exp, sigmoid, tanh, relu; recip: non-increasing on
                   each side of 0; gelu is not monotone (minimum near -0.75): skipped;
                   log: non-decreasing, rsqrt: non-increasing on [+0, +Inf] */
                if (have_prev && f != REF_GELU && !(f == REF_RECIP && !sgn && k == 0)) {
                    int64_t a = (prev & 0x8000) ? -(int64_t)(prev & 0x7FFF) : (int64_t)prev;
                    int64_t c = (yb & 0x8000) ? -(int64_t)(yb & 0x7FFF) : (int64_t)yb;
                    if (f == REF_RECIP || f == REF_RSQRT ? c > a : c < a)
                        b.nonmono++;
                }
                prev = yb;
                have_prev = 1;
            }
        }
        /* fp32 sample */
        for (long i = 0; i < nfp32; i++) {
            uint32_t x32 = rnd32();
            if (i & 1) {
                uint32_t e = 127 - 20 + rnd32() % 28;
                x32 = (x32 & 0x807FFFFFu) | (e << 23);
                if (f == REF_LOG || f == REF_RSQRT) /* x > 0 only: x < 0 gives NaN */
                    x32 &= 0x7FFFFFFFu;
            }
            uint32_t y32 = ref_model((ref_fn_t)f, fp32_from_bits(x32)).v;
            ref_eval((ref_fn_t)f, x32, ex);
            account(&s, (ref_fn_t)f, x32, y32, 24, ex);
        }
        printf("| %s | %llu | %.4f | %.3f%% | %ld | %ld | %llu | %.4f | %.3f%% |\n",
               ref_fn_names[f], (unsigned long long)b.max_dist, b.max_err,
               100.0 * (double)b.cr / (double)b.n, b.special + s.special, b.nonmono,
               (unsigned long long)s.max_dist, s.max_err, 100.0 * (double)s.cr / (double)s.n);
        if (b.special)
            fprintf(stderr, "  %s: first special violation at x=%08x: %s\n", ref_fn_names[f],
                    b.first_special_x, b.first_special);
        if (s.special)
            fprintf(stderr, "  %s: first fp32 special violation at x=%08x: %s\n",
                    ref_fn_names[f], s.first_special_x, s.first_special);
        fprintf(stderr, "  %s: worst bf16 x=%08x, worst fp32 x=%08x\n", ref_fn_names[f],
                b.worst_x, s.worst_x);
        if (b.max_dist > 1 || b.special || s.special)
            bad = 1;
    }
    mpfr_clear(ex);
    return bad;
}
