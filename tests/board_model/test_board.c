/* SPDX-License-Identifier: Apache-2.0 */
/* test-board-model: the board's all-reduce (tpu/board.h) against references written here from
   docs/board.md (not from the model's code): every core ends with the same bits, those bits
   are the documented fold order, the order is observable, C = 1 is the identity, exact data
   match MPFR's exact sum, and the cycle model meets the ring bound at large sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mpfr.h>

#include "tpu/board.h"
#include "tpu/numerics.h"

/* ---- references, from the text of docs/board.md ---- */

/* chunk of element e when n elements are split in k: the first n mod k chunks hold
   floor(n/k) + 1 elements, the rest floor(n/k); also returns the chunk's first element */
static unsigned chunk_of(size_t n, unsigned k, size_t e, size_t *first)
{
    size_t start = 0;
    for (unsigned j = 0; j < k; j++) {
        size_t size = n / k + (j < n % k ? 1 : 0);
        if (e < start + size) {
            *first = start;
            return j;
        }
        start += size;
    }
    fail_msg("element %zu outside %zu", e, n);
    return 0;
}

/* ring_m: fold(x_j, x_{j+1}, ..., x_{j+m-1}) left to right, j the element's chunk */
static uint32_t ref_ring(unsigned m, size_t n, uint32_t *const *x, const unsigned *ids, size_t e,
                         size_t base, size_t len)
{
    size_t first = 0;
    unsigned j = chunk_of(len, m, e - base, &first);
    fp32_t acc = fp32_from_bits(x[ids[j]][e]);
    for (unsigned t = 1; t < m; t++)
        acc = fp32_add(acc, fp32_from_bits(x[ids[(j + t) % m]][e]));
    (void)n;
    return acc.v;
}

/* torus_{R,S}: p_r = ring over row r's S cores on the whole vector, then the ring of the R
   partials on the row-chunk's sub-chunks */
static uint32_t ref_torus(unsigned R, unsigned S, size_t n, uint32_t *const *x, size_t e)
{
    size_t first1 = 0, first2 = 0;
    unsigned j1 = chunk_of(n, S, e, &first1);
    size_t len1 = n / S + (j1 < n % S ? 1 : 0);
    unsigned j2 = chunk_of(len1, R, e - first1, &first2);
    fp32_t acc = fp32_from_bits(0);
    for (unsigned u = 0; u < R; u++) {
        unsigned r = (j2 + u) % R;
        fp32_t p = fp32_from_bits(x[r * S + j1][e]);
        for (unsigned t = 1; t < S; t++)
            p = fp32_add(p, fp32_from_bits(x[r * S + (j1 + t) % S][e]));
        acc = u == 0 ? p : fp32_add(acc, p);
    }
    return acc.v;
}

/* ---- data ---- */

static uint64_t rng_state = 12345;
static uint32_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* finite values spread over a few binades so that the order changes the rounding */
static uint32_t rnd_val(void)
{
    uint32_t sign = rnd() & 0x80000000u;
    uint32_t exp = 120 + rnd() % 16;
    return sign | (exp << 23) | (rnd() & 0x7FFFFF);
}

struct vecs {
    unsigned cores;
    size_t n;
    uint32_t *x[TPU_BOARD_CORES_MAX];
    uint32_t *y[TPU_BOARD_CORES_MAX];
};

static void vecs_init(struct vecs *v, unsigned cores, size_t n, uint32_t (*gen)(void))
{
    v->cores = cores;
    v->n = n;
    for (unsigned i = 0; i < cores; i++) {
        v->x[i] = malloc(4 * (n + 1));
        v->y[i] = malloc(4 * (n + 1));
        assert_non_null(v->x[i]);
        assert_non_null(v->y[i]);
        for (size_t e = 0; e < n; e++)
            v->x[i][e] = gen();
        memset(v->y[i], 0xA5, 4 * (n + 1));
    }
}

static void vecs_free(struct vecs *v)
{
    for (unsigned i = 0; i < v->cores; i++) {
        free(v->x[i]);
        free(v->y[i]);
    }
}

static tpu_status_t run_ring(struct vecs *v)
{
    return tpu_allreduce_ring(v->cores, v->n, (const fp32_t *const *)v->x, (fp32_t *const *)v->y);
}

static tpu_status_t run_torus(struct vecs *v, unsigned R, unsigned S)
{
    return tpu_allreduce_torus(R, S, v->n, (const fp32_t *const *)v->x, (fp32_t *const *)v->y);
}

/* every core the same bits as core 0, nothing written past n */
static void check_identical(const struct vecs *v)
{
    for (unsigned i = 0; i < v->cores; i++) {
        if (v->n > 0 && memcmp(v->y[i], v->y[0], 4 * v->n) != 0)
            fail_msg("C=%u n=%zu: core %u differs from core 0", v->cores, v->n, i);
        assert_int_equal(v->y[i][v->n], 0xA5A5A5A5u);
    }
}

static const size_t lengths[] = { 0, 1, 2, 3, 7, 64, 65, 129, 250 };

static void test_ring_matches_reference(void **state)
{
    (void)state;
    unsigned ids[TPU_BOARD_CORES_MAX];
    for (unsigned i = 0; i < TPU_BOARD_CORES_MAX; i++)
        ids[i] = i;
    for (unsigned c = 1; c <= TPU_BOARD_CORES_MAX; c++)
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            struct vecs v;
            vecs_init(&v, c, lengths[li] + c / 2, rnd_val);
            assert_int_equal(run_ring(&v), TPU_OK);
            check_identical(&v);
            for (size_t e = 0; e < v.n; e++) {
                uint32_t want = ref_ring(c, v.n, v.x, ids, e, 0, v.n);
                if (v.y[0][e] != want)
                    fail_msg("ring C=%u n=%zu e=%zu: got 0x%08x want 0x%08x", c, v.n, e,
                             v.y[0][e], want);
            }
            vecs_free(&v);
        }
}

static void test_torus_matches_reference(void **state)
{
    (void)state;
    for (unsigned R = 1; R <= 8; R++)
        for (unsigned S = 1; S <= 8; S++)
            for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
                struct vecs v;
                vecs_init(&v, R * S, lengths[li] + R, rnd_val);
                assert_int_equal(run_torus(&v, R, S), TPU_OK);
                check_identical(&v);
                for (size_t e = 0; e < v.n; e++) {
                    uint32_t want = ref_torus(R, S, v.n, v.x, e);
                    if (v.y[0][e] != want)
                        fail_msg("torus %ux%u n=%zu e=%zu: got 0x%08x want 0x%08x", R, S, v.n, e,
                                 v.y[0][e], want);
                }
                vecs_free(&v);
            }
    /* the big shapes of 64 cores */
    const unsigned shapes[][2] = { { 8, 8 }, { 4, 16 }, { 2, 32 }, { 16, 4 }, { 64, 1 } };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        struct vecs v;
        unsigned R = shapes[k][0], S = shapes[k][1];
        vecs_init(&v, R * S, 333, rnd_val);
        assert_int_equal(run_torus(&v, R, S), TPU_OK);
        check_identical(&v);
        for (size_t e = 0; e < v.n; e++)
            assert_int_equal(v.y[0][e], ref_torus(R, S, v.n, v.x, e));
        vecs_free(&v);
    }
}

/* A 1 x C torus is the ring; results in place (y = x) equal results out of place. */
static void test_torus_1xS_is_ring_and_in_place(void **state)
{
    (void)state;
    for (unsigned c = 1; c <= 12; c++) {
        struct vecs v;
        vecs_init(&v, c, 101, rnd_val);
        assert_int_equal(run_ring(&v), TPU_OK);
        uint32_t *ring0 = malloc(4 * v.n);
        assert_non_null(ring0);
        memcpy(ring0, v.y[0], 4 * v.n);
        assert_int_equal(run_torus(&v, 1, c), TPU_OK);
        assert_memory_equal(v.y[0], ring0, 4 * v.n);
        /* in place */
        assert_int_equal(tpu_allreduce_ring(c, v.n, (const fp32_t *const *)v.x,
                                            (fp32_t *const *)v.x),
                         TPU_OK);
        for (unsigned i = 0; i < c; i++)
            assert_memory_equal(v.x[i], ring0, 4 * v.n);
        free(ring0);
        vecs_free(&v);
    }
}

/* 2^24 + 1 + 1: (2^24 + 1) rounds to 2^24 (tie to even), so the fold starting at the
   2^24 core gives 2^24, the one starting at the first 1 gives exactly 2^24 + 2. With C = 3
   and n = 3, element j is chunk j: its fold starts at core j. */
static void test_order_is_observable(void **state)
{
    (void)state;
    struct vecs v;
    vecs_init(&v, 3, 3, rnd_val);
    for (size_t e = 0; e < 3; e++) {
        v.x[0][e] = 0x4B800000u; /* 2^24 */
        v.x[1][e] = 0x3F800000u; /* 1 */
        v.x[2][e] = 0x3F800000u; /* 1 */
    }
    assert_int_equal(run_ring(&v), TPU_OK);
    check_identical(&v);
    assert_int_equal(v.y[0][0], 0x4B800000u); /* (2^24 + 1) + 1 -> 2^24 */
    assert_int_equal(v.y[0][1], 0x4B800001u); /* (1 + 1) + 2^24 = 2^24 + 2 exactly */
    assert_int_equal(v.y[0][2], 0x4B800000u); /* (1 + 2^24) + 1 -> 2^24 */
    assert_int_not_equal(v.y[0][0], v.y[0][1]);
    vecs_free(&v);
}

/* C = 1: the result is the input bit for bit, whatever it is (NaN payloads, -0, subnormals:
   there is no addition). */
static void test_single_core_identity(void **state)
{
    (void)state;
    struct vecs v;
    vecs_init(&v, 1, 1000, rnd);
    assert_int_equal(run_ring(&v), TPU_OK);
    assert_memory_equal(v.y[0], v.x[0], 4 * v.n);
    memset(v.y[0], 0, 4 * v.n);
    assert_int_equal(run_torus(&v, 1, 1), TPU_OK);
    assert_memory_equal(v.y[0], v.x[0], 4 * v.n);
    vecs_free(&v);
}

/* Small integers: every partial sum is exact, so any order gives MPFR's exact sum. */
static uint32_t rnd_int(void)
{
    float f = (float)((int)(rnd() % 2001) - 1000);
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static void test_exact_data_match_mpfr(void **state)
{
    (void)state;
    mpfr_t sum, t;
    mpfr_init2(sum, 200);
    mpfr_init2(t, 200);
    const unsigned shapes[][2] = { { 1, 5 }, { 2, 4 }, { 3, 7 }, { 8, 8 }, { 1, 64 } };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        unsigned R = shapes[k][0], S = shapes[k][1];
        struct vecs v;
        vecs_init(&v, R * S, 97, rnd_int);
        for (int alg = 0; alg < 2; alg++) {
            assert_int_equal(alg ? run_torus(&v, R, S) : run_ring(&v), TPU_OK);
            check_identical(&v);
            for (size_t e = 0; e < v.n; e++) {
                mpfr_set_zero(sum, 1);
                for (unsigned i = 0; i < v.cores; i++) {
                    float f;
                    memcpy(&f, &v.x[i][e], 4);
                    mpfr_set_flt(t, f, MPFR_RNDN);
                    mpfr_add(sum, sum, t, MPFR_RNDN);
                }
                float want = mpfr_get_flt(sum, MPFR_RNDN);
                uint32_t wb;
                memcpy(&wb, &want, 4);
                if (wb == 0x80000000u)
                    wb = 0; /* an exact zero sum of nonzero integers is +0 under RNE */
                if (v.y[0][e] != wb && !(wb == 0 && v.y[0][e] == 0))
                    fail_msg("%ux%u e=%zu: got 0x%08x, MPFR 0x%08x", R, S, e, v.y[0][e], wb);
            }
        }
        vecs_free(&v);
    }
    mpfr_clear(sum);
    mpfr_clear(t);
}

static void test_errors(void **state)
{
    (void)state;
    struct vecs v;
    vecs_init(&v, 4, 8, rnd_val);
    const fp32_t *const *x = (const fp32_t *const *)v.x;
    fp32_t *const *y = (fp32_t *const *)v.y;
    assert_int_equal(tpu_allreduce_ring(0, 8, x, y), TPU_EINVAL);
    assert_int_equal(tpu_allreduce_ring(65, 8, x, y), TPU_EINVAL);
    assert_int_equal(tpu_allreduce_ring(4, 8, NULL, y), TPU_EINVAL);
    assert_int_equal(tpu_allreduce_ring(4, 8, x, NULL), TPU_EINVAL);
    assert_int_equal(tpu_allreduce_torus(0, 4, 8, x, y), TPU_EINVAL);
    assert_int_equal(tpu_allreduce_torus(4, 0, 8, x, y), TPU_EINVAL);
    assert_int_equal(tpu_allreduce_torus(8, 9, 8, x, y), TPU_EINVAL); /* 72 cores */
    vecs_free(&v);
}

/* ---- cycle model: the formula of docs/board.md, written out here ---- */

static uint64_t ref_ring_cycles(uint64_t n, uint64_t m, uint64_t w, uint64_t d)
{
    if (m <= 1)
        return 0;
    uint64_t chunk = n / m + (n % m ? 1 : 0);
    uint64_t bits = 32 * chunk;
    uint64_t payload = bits / w + (bits % w ? 1 : 0);
    uint64_t headers = payload / 31 + (payload % 31 ? 1 : 0);
    return 2 * (m - 1) * (payload + headers + d + 3);
}

static void test_cycle_model(void **state)
{
    (void)state;
    const unsigned ws[] = { 32, 64, 128, 1024 };
    for (unsigned m = 1; m <= 64; m += 3)
        for (size_t wi = 0; wi < 4; wi++)
            for (unsigned d = 0; d <= 16; d += 4)
                for (uint64_t n = 1; n < 1000000; n = n * 5 + 3)
                    assert_true(tpu_allreduce_ring_cycles(n, m, ws[wi], d) ==
                                ref_ring_cycles(n, m, ws[wi], d));
    assert_true(tpu_allreduce_torus_cycles(1000, 2, 4, 64, 2) ==
                ref_ring_cycles(1000, 4, 64, 2) + ref_ring_cycles(250, 2, 64, 2));
    assert_true(tpu_allreduce_torus_cycles(1001, 2, 4, 64, 2) ==
                ref_ring_cycles(1001, 4, 64, 2) + ref_ring_cycles(251, 2, 64, 2));
    /* S = 1 KiB .. 1 MiB at C = 8, W = 64, D = 2: never faster than the bound, and within
       90% of it at 1 MiB. */
    printf("  all-reduce, C = 8 ring, W = 64, D = 2:\n");
    for (size_t bytes = 1024; bytes <= (1u << 20); bytes *= 4) {
        size_t n = bytes / 4;
        double bound = 2.0 * 7 / 8 * (double)bytes / 8.0;
        uint64_t cyc = tpu_allreduce_ring_cycles(n, 8, 64, 2);
        assert_true(bound == tpu_allreduce_ring_bound(n, 8, 64));
        assert_true((double)cyc >= bound);
        printf("    S = %7zu B: %8llu cycles, bound %9.1f, %5.1f%%\n", bytes,
               (unsigned long long)cyc, bound, 100.0 * bound / (double)cyc);
        if (bytes == (1u << 20))
            assert_true(bound / (double)cyc >= 0.90);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_matches_reference),
        cmocka_unit_test(test_torus_matches_reference),
        cmocka_unit_test(test_torus_1xS_is_ring_and_in_place),
        cmocka_unit_test(test_order_is_observable),
        cmocka_unit_test(test_single_core_identity),
        cmocka_unit_test(test_exact_data_match_mpfr),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_cycle_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
