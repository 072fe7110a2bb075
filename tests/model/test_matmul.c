/* SPDX-License-Identifier: Apache-2.0 */
/* tpu_matmul (integer and fast paths) against the untiled host-float oracle, bit for bit,
   for several array sizes N and shapes; invalid arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif
#include "matgen.h"
#include "oracle.h"
#include "tpu/tpu.h"

/* Runs both paths on one case and compares with the oracle; reports the first mismatch. */
static void check_case(unsigned N, size_t m, size_t k, size_t n, const bf16_t *a,
                       const bf16_t *w, const char *what)
{
    uint32_t *want = malloc(m * n * sizeof *want);
    fp32_t *got = malloc(m * n * sizeof *got);
    assert_non_null(want);
    assert_non_null(got);
    oracle_matmul(m, k, n, a, w, want);
    for (unsigned path = TPU_MXU_PATH_INTEGER; path <= TPU_MXU_PATH_FAST; path++) {
        tpu_mxu_cfg_t cfg = { .n = N, .path = path };
        memset(got, 0xA5, m * n * sizeof *got);
        assert_int_equal(tpu_matmul(&cfg, m, k, n, a, w, got, NULL), TPU_OK);
        for (size_t i = 0; i < m * n; i++) {
            if (got[i].v != want[i]) {
                print_error("%s: N=%u M=%zu K=%zu N'=%zu %s path: C[%zu][%zu] = %08x, "
                            "oracle %08x\n",
                            what, N, m, k, n, path == TPU_MXU_PATH_INTEGER ? "integer" : "fast",
                            i / n, i % n, got[i].v, want[i]);
                fail();
            }
        }
    }
    free(want);
    free(got);
}

static void check_dist(unsigned N, size_t m, size_t k, size_t n, const char *dist,
                       uint64_t seed)
{
    bf16_t *a = malloc(m * k * sizeof *a);
    bf16_t *w = malloc(k * n * sizeof *w);
    assert_non_null(a);
    assert_non_null(w);
    assert_int_equal(tpu_matgen(dist, seed, m, k, n, a, w), TPU_OK);
    check_case(N, m, k, n, a, w, dist);
    free(a);
    free(w);
}

/* Shapes around N: K > N, K and M and N' not multiples of N, K < N, 1 x 1 x 1. */
static void check_sizes(unsigned N, int heavy)
{
    const size_t shapes[][3] = {
        { 1, 1, 1 },
        { 2 * N + 1, 3 * N + 2, 2 * N + 3 }, /* several K- and N-tiles, all ragged */
        { N, N, N },                         /* exactly one tile */
        { 3, N > 1 ? N - 1 : 1, 5 },         /* K < N */
        { 5 * N + 3, 4 * N, N + 1 },         /* K a multiple, N' one over */
    };
    const char *dists[] = { "uniform", "wide", "normal", "ints", "edges" };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t d = 0; d < 5; d++) {
            if (heavy && s != 0 && s != 3 && d != 1 && d != 4)
                continue; /* large N: keep the integer path's time in check */
            check_dist(N, shapes[s][0], shapes[s][1], shapes[s][2], dists[d], 100 + s + d);
        }
    /* The edges distribution with every scenario row present. */
    size_t ns = tpu_matgen_edge_scenarios();
    check_dist(N, ns + 3, heavy ? 40 : 2 * N + 7, 17, "edges", 7);
}

static void test_n1(void **st) { (void)st; check_sizes(1, 0); }
static void test_n3(void **st) { (void)st; check_sizes(3, 0); }
static void test_n4(void **st) { (void)st; check_sizes(4, 0); }
static void test_n8(void **st) { (void)st; check_sizes(8, 0); }
static void test_n16(void **st) { (void)st; check_sizes(16, 0); }

static void test_n128(void **st)
{
    (void)st;
    check_sizes(128, 1);
    check_dist(128, 130, 300, 140, "uniform", 5); /* 3 K-tiles x 2 N-tiles, ragged */
}

/* K >= 4096 with alternating signs: long cancellation-heavy chains across many K-tiles. */
static void test_long_alternating(void **st)
{
    (void)st;
    const size_t m = 3, k = 4100, n = 5;
    bf16_t *a = malloc(m * k * sizeof *a), *w = malloc(k * n * sizeof *w);
    assert_non_null(a);
    assert_non_null(w);
    uint64_t rs = 42;
    for (size_t i = 0; i < m * k; i++) /* +-(1 .. 2), alternating in k */
        a[i].v = (uint16_t)(((i % k) % 2 ? 0xBF80u : 0x3F80u) | (tpu_matgen_rand(&rs) & 0x7F));
    for (size_t i = 0; i < k * n; i++) /* positive, exponents 2^-8 .. 2^7 */
        w[i].v = (uint16_t)(((119 + tpu_matgen_rand(&rs) % 16) << 7) |
                            (tpu_matgen_rand(&rs) & 0x7F));
    static const unsigned sizes[] = { 1, 4, 16, 128 };
    for (size_t i = 0; i < 4; i++)
        check_case(sizes[i], m, k, n, a, w, "alternating K=4100");
    check_case(16, m, 4096, n, a, w, "alternating K=4096"); /* rows of the 4100 matrix */
    free(a);
    free(w);
}

/* Random bit patterns: every class including NaNs and subnormals, in both operands. */
static void test_random_bits(void **st)
{
    (void)st;
    const size_t m = 33, k = 70, n = 21;
    bf16_t *a = malloc(m * k * sizeof *a), *w = malloc(k * n * sizeof *w);
    assert_non_null(a);
    assert_non_null(w);
    uint64_t rs = 7;
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < m * k; i++)
            a[i].v = (uint16_t)tpu_matgen_rand(&rs);
        for (size_t i = 0; i < k * n; i++) /* keep W mostly finite so sums stay interesting */
            w[i].v = (uint16_t)(tpu_matgen_rand(&rs) & (round % 2 ? 0xBFFFu : 0xFFFFu));
        check_case(8, m, k, n, a, w, "random bits");
    }
    free(a);
    free(w);
}

/* Hand-checked results: the oracle and the model agree with known constants. */
static void test_known_values(void **st)
{
    (void)st;
    struct {
        uint16_t a[3], w[3];
        size_t k;
        uint32_t want;
    } cases[] = {
        { { 0x3F80, 0x3380 }, { 0x3F80, 0x3F80 }, 2, 0x3F800000 }, /* 1 + 2^-24 tie: even */
        { { 0x7F80 }, { 0x0000 }, 1, 0x7FC00000 },                 /* Inf x 0 */
        { { 0x0000 }, { 0x0000 }, 1, 0x00000000 },                 /* -0 + +0 = +0 */
        { { 0x8000 }, { 0x0000 }, 1, 0x80000000 },                 /* -0 + -0 = -0 */
        { { 0x0001 }, { 0xBF80 }, 1, 0x80000000 },                 /* DAZ: -0 */
        { { 0x7F7F, 0x7F7F }, { 0x3F80, 0x3F80 }, 2, 0x7F800000 }, /* sum overflow */
        { { 0xFFC1 }, { 0x3F80 }, 1, 0x7FC00000 },                 /* NaN canonical */
        { { 0x2000 }, { 0x2000 }, 1, 0x00800000 },                 /* 2^-63^2 = 2^-126 */
        { { 0x1FFF }, { 0x2000 }, 1, 0x00000000 },                 /* below: flushed */
        { { 0x4B80, 0x4000, 0x3F80 }, { 0x3F80, 0x3F80, 0x3F80 }, 3, 0x4B800002 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bf16_t a[3], w[3];
        for (int j = 0; j < 3; j++) {
            a[j].v = cases[i].a[j];
            w[j].v = cases[i].w[j];
        }
        uint32_t o;
        oracle_matmul(1, cases[i].k, 1, a, w, &o);
        assert_int_equal(o, cases[i].want);
        for (unsigned path = TPU_MXU_PATH_INTEGER; path <= TPU_MXU_PATH_FAST; path++)
            for (unsigned N = 1; N <= 4; N++) {
                tpu_mxu_cfg_t cfg = { .n = N, .path = path };
                fp32_t c;
                assert_int_equal(tpu_matmul(&cfg, 1, cases[i].k, 1, a, w, &c, NULL), TPU_OK);
                assert_int_equal(c.v, cases[i].want);
            }
    }
}

/* The edges distribution really produces the edge results it promises (column 0 is the
   plain sum of each scenario row). */
static void test_edges_coverage(void **st)
{
    (void)st;
    const size_t ns = tpu_matgen_edge_scenarios(), m = ns, k = 40, n = 8;
    bf16_t *a = malloc(m * k * sizeof *a), *w = malloc(k * n * sizeof *w);
    fp32_t *c = malloc(m * n * sizeof *c);
    assert_true(a && w && c);
    assert_int_equal(tpu_matgen("edges", 3, m, k, n, a, w), TPU_OK);
    tpu_mxu_cfg_t cfg = { .n = 8, .path = TPU_MXU_PATH_INTEGER };
    assert_int_equal(tpu_matmul(&cfg, m, k, n, a, w, c, NULL), TPU_OK);
    static const uint32_t col0[] = {
        0x7F800000, 0xFF800000, 0x7FC00000, 0x00000000, 0x80000000, 0x7F7FFFFF, 0xFF800000,
        0x00800000, 0x4B800000, 0x4B800002, 0xCB800002, 0x3F800002, 0x3F800000, 0x3C000000,
    };
    for (size_t i = 0; i < sizeof col0 / sizeof col0[0]; i++) {
        int found = 0;
        for (size_t r = 0; r < m; r++)
            found |= c[r * n].v == col0[i];
        if (!found)
            print_error("edges: no row sums to %08x\n", col0[i]);
        assert_true(found);
    }
    /* products: 2^-126 exactly (cols 3, 4), Inf from a product (col 2), NaN from Inf x 0 */
    static const struct { unsigned col; uint32_t v; } prod[] = {
        { 4, 0x00800000 }, { 3, 0x00800000 }, { 2, 0x7F800000 }, { 2, 0xFF800000 },
        { 2, 0x7F7F0000 }, { 5, 0x7FC00000 }, { 4, 0x80000000 },
    };
    for (size_t i = 0; i < sizeof prod / sizeof prod[0]; i++) {
        int found = 0;
        for (size_t r = 0; r < m; r++)
            found |= c[r * n + prod[i].col].v == prod[i].v;
        if (!found)
            print_error("edges: column %u never gives %08x\n", prod[i].col, prod[i].v);
        assert_true(found);
    }
    free(a);
    free(w);
    free(c);
}

#if defined(__x86_64__)
/* The fast path restores the caller's MXCSR and is not affected by its rounding mode. */
static void test_mxcsr_restored(void **st)
{
    (void)st;
    const size_t m = 9, k = 20, n = 7;
    bf16_t a[9 * 20], w[20 * 7];
    fp32_t c1[9 * 7], c2[9 * 7];
    assert_int_equal(tpu_matgen("uniform", 9, m, k, n, a, w), TPU_OK);
    tpu_mxu_cfg_t cfg = { .n = 4, .path = TPU_MXU_PATH_INTEGER };
    assert_int_equal(tpu_matmul(&cfg, m, k, n, a, w, c1, NULL), TPU_OK);
    unsigned saved = _mm_getcsr();
    unsigned odd = (saved & ~0xE040u) | 0x6000u; /* round toward zero, no FTZ/DAZ */
    _mm_setcsr(odd);
    cfg.path = TPU_MXU_PATH_FAST;
    int rc = tpu_matmul(&cfg, m, k, n, a, w, c2, NULL);
    unsigned after = _mm_getcsr();
    _mm_setcsr(saved);
    assert_int_equal(rc, TPU_OK);
    assert_int_equal(after & ~0x3Fu, odd & ~0x3Fu); /* modes restored (flags aside) */
    assert_memory_equal(c1, c2, sizeof c1);
}
#endif

static void test_invalid_args(void **st)
{
    (void)st;
    bf16_t a[4] = { { 0 } }, w[4] = { { 0 } };
    fp32_t c[4];
    tpu_mxu_cfg_t cfg = { .n = 2 };
    assert_int_equal(tpu_matmul(&cfg, 2, 2, 2, a, w, c, NULL), TPU_OK);
    assert_int_equal(tpu_matmul(NULL, 2, 2, 2, a, w, c, NULL), TPU_EINVAL);
    assert_int_equal(tpu_matmul(&cfg, 2, 2, 2, NULL, w, c, NULL), TPU_EINVAL);
    assert_int_equal(tpu_matmul(&cfg, 2, 2, 2, a, NULL, c, NULL), TPU_EINVAL);
    assert_int_equal(tpu_matmul(&cfg, 2, 2, 2, a, w, NULL, NULL), TPU_EINVAL);
    assert_int_equal(tpu_matmul(&cfg, 0, 2, 2, a, w, c, NULL), TPU_EINVAL);
    assert_int_equal(tpu_matmul(&cfg, 2, 0, 2, a, w, c, NULL), TPU_EINVAL);
    assert_int_equal(tpu_matmul(&cfg, 2, 2, 0, a, w, c, NULL), TPU_EINVAL);
    static const unsigned bad_n[] = { 0, 257, 1000, UINT32_MAX };
    for (size_t i = 0; i < 4; i++) {
        tpu_mxu_cfg_t b = { .n = bad_n[i] };
        assert_int_equal(tpu_matmul(&b, 2, 2, 2, a, w, c, NULL), TPU_EINVAL);
        assert_int_equal(tpu_matmul_integer(&b, 2, 2, 2, a, w, c, NULL), TPU_EINVAL);
        assert_int_equal(tpu_matmul_fast(&b, 2, 2, 2, a, w, c, NULL), TPU_EINVAL);
    }
    tpu_mxu_cfg_t b1 = { .n = 256 }, b2 = { .n = 2, .pe_stages = 4 }, b3 = { .n = 2, .path = 9 };
    assert_int_equal(tpu_matmul(&b1, 2, 2, 2, a, w, c, NULL), TPU_OK);
    assert_int_equal(tpu_matmul(&b2, 2, 2, 2, a, w, c, NULL), TPU_EINVAL);
    for (unsigned st = 1; st <= 3; st++) { /* the depth changes timing, never a bit */
        tpu_mxu_cfg_t p1 = { .n = 2 }, ps = { .n = 2, .pe_stages = st };
        fp32_t c1[4], cs[4];
        assert_int_equal(tpu_matmul(&p1, 2, 2, 2, a, w, c1, NULL), TPU_OK);
        assert_int_equal(tpu_matmul(&ps, 2, 2, 2, a, w, cs, NULL), TPU_OK);
        assert_memory_equal(c1, cs, sizeof c1);
    }
    assert_int_equal(tpu_matmul(&b3, 2, 2, 2, a, w, c, NULL), TPU_EINVAL);
    /* Sizes whose products overflow: rejected before any memory is touched. */
    const size_t big = SIZE_MAX / 2 + 1;
    assert_int_equal(tpu_matmul(&cfg, big, 4, 1, a, w, c, NULL), TPU_EINVAL);
    assert_int_equal(tpu_matmul(&cfg, 1, big, 4, a, w, c, NULL), TPU_EINVAL);
    assert_int_equal(tpu_matmul(&cfg, 4, 1, big, a, w, c, NULL), TPU_EINVAL);
    assert_int_equal(tpu_matmul(&cfg, SIZE_MAX, SIZE_MAX, SIZE_MAX, a, w, c, NULL),
                     TPU_EINVAL);
    assert_int_equal(tpu_matmul(&cfg, (size_t)1 << 32, (size_t)1 << 32, 1, a, w, c, NULL),
                     TPU_EINVAL);
    tpu_mxu_cfg_t c16 = { .n = 16 }; /* N' rounds up past SIZE_MAX */
    assert_int_equal(tpu_matmul(&c16, 1, 1, SIZE_MAX - 2, a, w, c, NULL), TPU_EINVAL);
    assert_int_equal(tpu_matmul_check(&cfg, 2, 2, 2, a, w, c), TPU_OK);
    assert_int_equal(tpu_matmul_check(&cfg, 2, 2, 2, a, w, NULL), TPU_EINVAL);
}

int main(void)
{
    if (!oracle_available()) {
        printf("oracle needs x86-64 SSE; skipping\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_n1),
        cmocka_unit_test(test_n3),
        cmocka_unit_test(test_n4),
        cmocka_unit_test(test_n8),
        cmocka_unit_test(test_n16),
        cmocka_unit_test(test_n128),
        cmocka_unit_test(test_long_alternating),
        cmocka_unit_test(test_random_bits),
        cmocka_unit_test(test_edges_coverage),
#if defined(__x86_64__)
        cmocka_unit_test(test_mxcsr_restored),
#endif
        cmocka_unit_test(test_invalid_args),
    };
    return cmocka_run_group_tests_name("model-matmul", tests, NULL, NULL);
}
