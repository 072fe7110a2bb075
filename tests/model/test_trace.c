/* SPDX-License-Identifier: Apache-2.0 */
/* The trace writer (docs/trace.md) and the traces tpu_matmul writes: format, record order,
   cycles from the schedule, every tile's raw outputs including padded columns (checked
   against the host-float oracle), integer and fast paths byte-identical. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "matgen.h"
#include "oracle.h"
#include "tpu/tpu.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

static char tmpdir[256];

static int setup(void **st)
{
    (void)st;
    const char *base = getenv("TPU_TEST_TMP");
    snprintf(tmpdir, sizeof tmpdir, "%s", base ? base : "build/tests/model");
    return 0;
}

static void tmp_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

static void test_writer_format(void **st)
{
    (void)st;
    char path[512];
    tmp_path(path, sizeof path, "writer.trace");
    tpu_trace_t *t = tpu_trace_open(path, "unit-test");
    assert_non_null(t);
    assert_int_equal(tpu_trace_comment(t, "seed", "%d dist %s", 42, "edges"), TPU_OK);
    assert_int_equal(tpu_trace_comment(t, "two words", "x"), TPU_EINVAL);
    assert_int_equal(tpu_trace_mxu_params(t, 2, 3, 4, 5, 4, 2), TPU_OK);
    fp32_t v[2] = { { 0x7FC00000 }, { 0x0000ABCD } };
    assert_int_equal(tpu_trace_mxu(t, 12345678901ull, 7, 1, 3, 9, 2, v), TPU_OK);
    assert_int_equal(tpu_trace_mxu(t, 0, 0, 0, 0, 0, 2, v), TPU_OK);
    assert_int_equal(tpu_trace_records(t), 2);
    assert_int_equal(tpu_trace_close(t), TPU_OK);
    char *s = slurp(path, NULL);
    assert_string_equal(s, "# tpu-trace 1\n"
                           "# tool unit-test\n"
                           "# seed 42 dist edges\n"
                           "# unit mxu\n"
                           "# params n=2 m=3 k=4 nprime=5 latency=4 busy=2\n"
                           "12345678901 mxu 7 1 3 9 7fc00000 0000abcd\n"
                           "0 mxu 0 0 0 0 7fc00000 0000abcd\n");
    free(s);
    assert_null(tpu_trace_open(NULL, "x"));
    assert_null(tpu_trace_open(path, NULL));
    assert_null(tpu_trace_open("/nonexistent-dir/x.trace", "x"));
    assert_int_equal(tpu_trace_close(NULL), TPU_OK);
    assert_int_equal(tpu_trace_mxu(NULL, 0, 0, 0, 0, 0, 1, v), TPU_EINVAL);
}

/* A full disk is reported by close, not ignored. */
static void test_writer_full_disk(void **st)
{
    (void)st;
    FILE *probe = fopen("/dev/full", "w");
    if (probe == NULL) {
        skip();
        return;
    }
    fclose(probe);
    tpu_trace_t *t = tpu_trace_open("/dev/full", "x");
    assert_non_null(t);
    fp32_t v[256] = { { 0 } };
    for (int i = 0; i < 1000; i++)
        (void)tpu_trace_mxu(t, (uint64_t)i, 0, 0, 0, 0, 256, v);
    assert_int_equal(tpu_trace_close(t), TPU_EIO);
}

/* Parses one record line; returns the number of values. */
static unsigned parse_record(char *line, uint64_t *cycle, uint64_t key[4], uint32_t *v)
{
    char *save = NULL;
    char *tok = strtok_r(line, " \n", &save);
    *cycle = strtoull(tok, NULL, 10);
    tok = strtok_r(NULL, " \n", &save);
    assert_string_equal(tok, "mxu");
    for (int i = 0; i < 4; i++)
        key[i] = strtoull(strtok_r(NULL, " \n", &save), NULL, 10);
    unsigned n = 0;
    while ((tok = strtok_r(NULL, " \n", &save)) != NULL) {
        assert_int_equal(strlen(tok), 8);
        v[n++] = (uint32_t)strtoul(tok, NULL, 16);
    }
    return n;
}

/* Writes the trace of one matmul on both paths; checks everything about it. */
static void check_trace(unsigned N, size_t m, size_t k, size_t n, const char *dist)
{
    bf16_t *a = malloc(m * k * sizeof *a), *w = malloc(k * n * sizeof *w);
    fp32_t *c = malloc(m * n * sizeof *c);
    assert_true(a && w && c);
    assert_int_equal(tpu_matgen(dist, 11, m, k, n, a, w), TPU_OK);
    char p_int[512], p_fast[512];
    tmp_path(p_int, sizeof p_int, "int.trace");
    tmp_path(p_fast, sizeof p_fast, "fast.trace");
    for (int fast = 0; fast < 2; fast++) {
        tpu_mxu_cfg_t cfg = { .n = N, .path = fast ? TPU_MXU_PATH_FAST : TPU_MXU_PATH_INTEGER };
        tpu_trace_t *t = tpu_trace_open(fast ? p_fast : p_int, "tpu-cmodel");
        assert_non_null(t);
        assert_int_equal(tpu_matmul(&cfg, m, k, n, a, w, c, t), TPU_OK);
        assert_int_equal(tpu_trace_close(t), TPU_OK);
    }
    size_t li, lf;
    char *ti = slurp(p_int, &li), *tf = slurp(p_fast, &lf);
    assert_int_equal(li, lf);
    assert_memory_equal(ti, tf, li);
    free(tf);

    tpu_mxu_cfg_t cfg = { .n = N };
    tpu_mxu_schedule_t s;
    assert_int_equal(tpu_mxu_schedule(&cfg, m, k, n, &s), TPU_OK);
    /* the -0 weights of the padded columns */
    bf16_t *neg0 = malloc(k * sizeof *neg0);
    assert_non_null(neg0);
    for (size_t i = 0; i < k; i++)
        neg0[i].v = 0x8000;
    uint32_t *v = malloc(N * sizeof *v);
    assert_non_null(v);
    char *save = NULL;
    size_t rec = 0;
    int line_no = 0;
    for (char *line = strtok_r(ti, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        if (line_no == 1) {
            assert_string_equal(line, "# tpu-trace 1");
            continue;
        }
        if (line[0] == '#')
            continue;
        uint64_t cycle, key[4];
        char copy[16384];
        snprintf(copy, sizeof copy, "%s", line);
        assert_int_equal(parse_record(copy, &cycle, key, v), N);
        /* records in schedule order: tile-major, then row */
        const size_t tile = rec / m, row = rec % m;
        const size_t kt = tile % s.kt_count, nt = tile / s.kt_count;
        assert_int_equal(key[0], tile);
        assert_int_equal(key[1], kt);
        assert_int_equal(key[2], nt);
        assert_int_equal(key[3], row);
        assert_int_equal(cycle, tpu_mxu_out_cycle(&s, tile, row));
        /* every column, padded or not, is the chain so far (through K-tile kt) */
        const size_t len = (kt + 1) * N < k ? (kt + 1) * N : k;
        for (unsigned col = 0; col < N; col++) {
            size_t j = nt * N + col;
            uint32_t want = j < n ? oracle_chain(len, a + row * k, w + j, n)
                                  : oracle_chain(len, a + row * k, neg0, 1);
            if (v[col] != want) {
                print_error("N=%u tile %zu row %zu col %u: trace %08x, oracle %08x\n", N, tile,
                            row, col, v[col], want);
                fail();
            }
            if (kt + 1 == s.kt_count && j < n)
                assert_int_equal(v[col], c[row * n + j].v);
        }
        rec++;
    }
    assert_int_equal(rec, s.tiles * m);
    tpu_mxu_schedule_free(&s);
    free(ti);
    free(v);
    free(neg0);
    free(a);
    free(w);
    free(c);
}

static void test_matmul_traces(void **st)
{
    (void)st;
    check_trace(1, 3, 2, 2, "ints");
    check_trace(3, 7, 8, 5, "uniform");
    check_trace(4, 9, 10, 6, "edges"); /* Inf/NaN activations make padded columns NaN */
    check_trace(8, 17, 20, 9, "wide");
    check_trace(16, 40, 33, 20, "normal");
    check_trace(16, tpu_matgen_edge_scenarios(), 40, 20, "edges");
}

/* A trace that cannot be written makes tpu_matmul fail with TPU_EIO, not abort. */
static void test_matmul_trace_error(void **st)
{
    (void)st;
    FILE *probe = fopen("/dev/full", "w");
    if (probe == NULL) {
        skip();
        return;
    }
    fclose(probe);
    const size_t m = 64, k = 64, n = 256;
    bf16_t *a = calloc(m * k, sizeof *a), *w = calloc(k * n, sizeof *w);
    fp32_t *c = malloc(m * n * sizeof *c);
    assert_true(a && w && c);
    for (int fast = 0; fast < 2; fast++) {
        tpu_trace_t *t = tpu_trace_open("/dev/full", "x");
        assert_non_null(t);
        tpu_mxu_cfg_t cfg = { .n = 256, .path = fast ? TPU_MXU_PATH_FAST : TPU_MXU_PATH_INTEGER };
        int rc = tpu_matmul(&cfg, m, k, n, a, w, c, t);
        int rc_close = tpu_trace_close(t);
        assert_true(rc == TPU_EIO || rc_close == TPU_EIO);
    }
    free(a);
    free(w);
    free(c);
}

int main(void)
{
    if (!oracle_available()) {
        printf("oracle needs x86-64 SSE; skipping\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_format),
        cmocka_unit_test(test_writer_full_disk),
        cmocka_unit_test(test_matmul_traces),
        cmocka_unit_test(test_matmul_trace_error),
    };
    return cmocka_run_group_tests_name("model-trace", tests, setup, NULL);
}
