/* SPDX-License-Identifier: Apache-2.0 */
/* test-core-model, part 2: the programs of tpu-mkprog (matmul, dense, mlp, manyk, transpose) at
   N = 1, 3, 4, 8, 16 run on the core model through the shared host options (tpu/host.h);
   the dumped output equals an independent composition of the tested library functions
   (tpu_matmul, vpu_bias_add, vpu_relu, vpu_softmax, fp32_to_bf16) bit for bit, and the
   matmul result is the same at every N.
   Usage: test_mkprog TPU-MKPROG WORKDIR */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tpu/core.h"
#include "tpu/host.h"
#include "tpu/mxu.h"
#include "tpu/npy.h"
#include "tpu/numerics.h"
#include "tpu/vpu.h"

static const char *g_mkprog, *g_work;
static const unsigned kSizes[] = { 1, 3, 4, 8, 16 };
static unsigned g_latency = 4; /* --axi-latency of the next run_job */

typedef struct {
    tpu_host_t host;
    tpu_core_result_t res;
    char dir[512];
} job_t;

/* generate the job, run it on the model; the host image holds the result */
static void run_job(job_t *j, const char *kind, unsigned n, const char *extra)
{
    char cmd[2048], err[1024];
    snprintf(j->dir, sizeof j->dir, "%s/%s_N%u", g_work, kind, n);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && '%s' %s --mxu %u %s -o '%s' >/dev/null", j->dir,
             g_mkprog, kind, n, extra, j->dir);
    assert_int_equal(system(cmd), 0);
    char args[600];
    snprintf(args, sizeof args, "@%s/job.args", j->dir);
    char *argv[] = { "test", args, NULL };
    int xargc;
    char **xargv;
    if (tpu_args_expand(2, argv, &xargc, &xargv, err, sizeof err) != 0)
        fail_msg("%s", err);
    tpu_host_init(&j->host);
    for (int i = 1; i < xargc; i++) {
        const char *arg = strchr(xargv[i], '=') ? NULL : xargv[++i];
        if (tpu_host_add_option(&j->host, xargv[i - (arg != NULL)], arg, err, sizeof err) != 0)
            fail_msg("%s", err);
    }
    tpu_args_free(xargc, xargv);
    if (tpu_host_load_all(&j->host, err, sizeof err) != 0)
        fail_msg("%s", err);
    char prog_path[600];
    snprintf(prog_path, sizeof prog_path, "%s/prog.s", j->dir);
    tpu_insn_t *prog;
    size_t count;
    if (tpu_load_program(prog_path, n, &prog, &count, err, sizeof err) != 0)
        fail_msg("%s", err);
    tpu_core_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.geom = tpu_core_geom_default(n);
    cfg.axi_latency = g_latency;
    tpu_core_t *core = tpu_core_new(&cfg);
    assert_non_null(core);
    assert_int_equal(tpu_core_run(core, prog, count, 0, j->host.mem, j->host.size, NULL, &j->res),
                     TPU_OK);
    assert_int_equal(j->res.status, TPU_CORE_DONE);
    assert_int_equal(j->res.uninit_reads, 0);
    tpu_core_free(core);
    free(prog);
}

/* allops (every instruction and VPU op): runs to the end, reads no unwritten row, and its
   host image after the run does not depend on the AXI latency, only CYCLES does */
static void test_allops(void **state)
{
    (void)state;
    for (size_t si = 0; si < sizeof kSizes / sizeof kSizes[0]; si++) {
        unsigned n = kSizes[si];
        job_t j[2];
        for (int v = 0; v < 2; v++) {
            g_latency = v ? 45u : 4u;
            run_job(&j[v], "allops", n, "");
            assert_true(j[v].host.ndumps >= 10);
        }
        g_latency = 4;
        assert_true(j[1].res.counters[TPU_CNT_CYCLES] > j[0].res.counters[TPU_CNT_CYCLES]);
        assert_int_equal(j[0].res.counters[TPU_CNT_INSNS], j[1].res.counters[TPU_CNT_INSNS]);
        assert_int_equal(j[0].host.size, j[1].host.size);
        assert_memory_equal(j[0].host.mem, j[1].host.mem, j[0].host.size);
        tpu_host_free(&j[0].host);
        tpu_host_free(&j[1].host);
    }
}

static void *load(const job_t *j, const char *name, tpu_npy_t *a)
{
    char path[700], err[1024];
    snprintf(path, sizeof path, "%s/%s", j->dir, name);
    if (tpu_npy_read(path, a, err, sizeof err) != 0)
        fail_msg("%s", err);
    return a->data;
}

/* the dump's element (r, c): bf16 or f32 bits */
static uint32_t dumped(const job_t *j, size_t r, size_t c)
{
    const tpu_host_dump_t *d = &j->host.dumps[0];
    size_t e = d->dtype == TPU_NPY_U2 ? 2 : 4, a = d->addr + r * d->stride + c * e;
    uint32_t v = 0;
    for (size_t b = 0; b < e; b++)
        v |= (uint32_t)j->host.mem[a + b] << (8u * b);
    return v;
}

static fp32_t *matmul_ref(unsigned n, const tpu_npy_t *a, const tpu_npy_t *w)
{
    assert_int_equal(a->cols, w->rows);
    fp32_t *c = malloc(sizeof *c * a->rows * w->cols);
    tpu_mxu_cfg_t mc = { .n = n };
    assert_int_equal(tpu_matmul(&mc, a->rows, a->cols, w->cols, a->data, w->data, c, NULL),
                     TPU_OK);
    return c;
}

static void check_matmul(const char *kind)
{
    uint32_t *first = NULL;
    for (size_t si = 0; si < sizeof kSizes / sizeof kSizes[0]; si++) {
        unsigned n = kSizes[si];
        job_t j;
        /* the same shape and data at every N (the default shapes depend on N) */
        run_job(&j, kind, n, "--m 9 --k 11 --nout 7 --seed 3");
        assert_int_equal(j.host.ndumps, 1);
        tpu_npy_t a, w;
        load(&j, "a.npy", &a);
        load(&j, "w.npy", &w);
        fp32_t *c = matmul_ref(n, &a, &w);
        size_t m = a.rows, np = w.cols;
        if (first == NULL)
            first = malloc(sizeof *first * m * np);
        for (size_t r = 0; r < m; r++)
            for (size_t k = 0; k < np; k++) {
                uint32_t got = dumped(&j, r, k);
                if (got != c[r * np + k].v)
                    fail_msg("%s N=%u C[%zu][%zu]: model %08x tpu_matmul %08x", kind, n, r, k,
                             got, c[r * np + k].v);
                if (si == 0)
                    first[r * np + k] = got;
                else if (first[r * np + k] != got)
                    fail_msg("%s N=%u C[%zu][%zu] %08x differs from N=1's %08x", kind, n, r, k,
                             got, first[r * np + k]);
            }
        free(c);
        tpu_npy_free(&a);
        tpu_npy_free(&w);
        tpu_host_free(&j.host);
        (void)m;
    }
    free(first);
}

/* dump number i's element (r, c), f32 */
static uint32_t dumped_f32(const job_t *j, size_t i, size_t r, size_t c)
{
    const tpu_host_dump_t *d = &j->host.dumps[i];
    size_t a = d->addr + r * d->stride + c * 4;
    uint32_t v = 0;
    for (size_t b = 0; b < 4; b++)
        v |= (uint32_t)j->host.mem[a + b] << (8u * b);
    return v;
}

/* transpose (lw ... transpose): dY_0 W_0, dX = dY W^T (tpu_matmul with W^T written out: the
   K-tiled chain), X^T and I X (exactly X^T and X for normal values, as the fp32 of the bf16),
   the same at every N (--m 5) */
static void test_transpose(void **state)
{
    (void)state;
    for (size_t si = 0; si < sizeof kSizes / sizeof kSizes[0]; si++) {
        unsigned n = kSizes[si];
        job_t j;
        run_job(&j, "transpose", n, "--m 5 --seed 4");
        assert_int_equal(j.host.ndumps, 4);
        tpu_npy_t dy, w, x;
        load(&j, "dy.npy", &dy);
        load(&j, "w.npy", &w);
        load(&j, "x.npy", &x);
        const uint16_t *wv = w.data, *xv = x.data;
        size_t m = dy.rows;
        tpu_npy_t dy0, w0, wt;
        assert_int_equal(tpu_npy_alloc(&dy0, TPU_NPY_U2, 2, m, n), 0);
        assert_int_equal(tpu_npy_alloc(&w0, TPU_NPY_U2, 2, n, n), 0);
        assert_int_equal(tpu_npy_alloc(&wt, TPU_NPY_U2, 2, 2 * n, n), 0);
        for (size_t r = 0; r < m; r++)
            memcpy((uint16_t *)dy0.data + r * n, (const uint16_t *)dy.data + r * 2 * n, 2 * n);
        for (size_t r = 0; r < n; r++)
            for (size_t c = 0; c < 2 * n; c++) {
                if (c < n)
                    ((uint16_t *)w0.data)[r * n + c] = wv[r * 2 * n + c];
                ((uint16_t *)wt.data)[c * n + r] = wv[r * 2 * n + c];
            }
        fp32_t *c0 = matmul_ref(n, &dy0, &w0), *dx = matmul_ref(n, &dy, &wt);
        for (size_t r = 0; r < m; r++)
            for (size_t c = 0; c < n; c++) {
                uint32_t g0 = dumped_f32(&j, 0, r, c), g1 = dumped_f32(&j, 1, r, c);
                if (g0 != c0[r * n + c].v || g1 != dx[r * n + c].v)
                    fail_msg("transpose N=%u [%zu][%zu]: dY_0 W_0 %08x (want %08x), dY W^T %08x "
                             "(want %08x)", n, r, c, g0, c0[r * n + c].v, g1, dx[r * n + c].v);
            }
        for (size_t r = 0; r < n; r++)
            for (size_t c = 0; c < n; c++) {
                uint16_t vt = xv[c * n + r], v = xv[r * n + c];
                unsigned et = (vt >> 7) & 0xFFu, e = (v >> 7) & 0xFFu;
                uint32_t gt = dumped_f32(&j, 2, r, c), g = dumped_f32(&j, 3, r, c);
                if ((et != 0 && et != 0xFF && gt != (uint32_t)vt << 16) ||
                    (e != 0 && e != 0xFF && g != (uint32_t)v << 16))
                    fail_msg("transpose N=%u [%zu][%zu]: X^T %08x (want %04x0000), I X %08x "
                             "(want %04x0000)", n, r, c, gt, vt, g, v);
            }
        free(c0);
        free(dx);
        tpu_npy_free(&dy0);
        tpu_npy_free(&w0);
        tpu_npy_free(&wt);
        tpu_npy_free(&dy);
        tpu_npy_free(&w);
        tpu_npy_free(&x);
        tpu_host_free(&j.host);
    }
}

static void test_matmul(void **state) { (void)state; check_matmul("matmul"); }
static void test_manyk(void **state) { (void)state; check_matmul("manyk"); }

/* y = act(x W + bias): x bf16 m x k, bias 1 x N' (bf16 or fp32 bits), fp32 out */
static uint32_t *layer(unsigned n, const tpu_npy_t *x, const tpu_npy_t *w, const tpu_npy_t *b,
                       vpu_fmt_t bfmt)
{
    fp32_t *c = matmul_ref(n, x, w);
    size_t m = x->rows, np = w->cols;
    uint32_t *cw = malloc(4u * m * np), *bw = malloc(4u * np), *y = malloc(4u * m * np);
    for (size_t i = 0; i < m * np; i++)
        cw[i] = c[i].v;
    for (size_t i = 0; i < np; i++)
        bw[i] = bfmt == VPU_FMT_BF16 ? ((uint16_t *)b->data)[i] : ((uint32_t *)b->data)[i];
    assert_int_equal(vpu_bias_add(m, np, VPU_FMT_FP32, cw, bfmt, bw, VPU_FMT_FP32, y), TPU_OK);
    free(c);
    free(cw);
    free(bw);
    return y;
}

static void test_dense(void **state)
{
    (void)state;
    for (size_t si = 0; si < sizeof kSizes / sizeof kSizes[0]; si++) {
        unsigned n = kSizes[si];
        job_t j;
        run_job(&j, "dense", n, "");
        tpu_npy_t a, w, b;
        load(&j, "a.npy", &a);
        load(&j, "w.npy", &w);
        load(&j, "bias.npy", &b);
        uint32_t *y = layer(n, &a, &w, &b, VPU_FMT_BF16);
        for (size_t r = 0; r < a.rows; r++)
            for (size_t k = 0; k < w.cols; k++) {
                uint32_t want = fp32_to_bf16(vpu_relu(fp32_from_bits(y[r * w.cols + k]))).v;
                if (dumped(&j, r, k) != want)
                    fail_msg("dense N=%u out[%zu][%zu]: model %04x reference %04x", n, r, k,
                             dumped(&j, r, k), want);
            }
        free(y);
        tpu_npy_free(&a);
        tpu_npy_free(&w);
        tpu_npy_free(&b);
        tpu_host_free(&j.host);
    }
}

static void test_mlp(void **state)
{
    (void)state;
    for (size_t si = 0; si < sizeof kSizes / sizeof kSizes[0]; si++) {
        unsigned n = kSizes[si];
        job_t j;
        run_job(&j, "mlp", n, "");
        tpu_npy_t a, w1, w2, b1, b2, h;
        load(&j, "a.npy", &a);
        load(&j, "w1.npy", &w1);
        load(&j, "w2.npy", &w2);
        load(&j, "b1.npy", &b1);
        load(&j, "b2.npy", &b2);
        size_t m = a.rows, nh = w1.cols, no = w2.cols;
        uint32_t *y1 = layer(n, &a, &w1, &b1, VPU_FMT_BF16);
        assert_int_equal(tpu_npy_alloc(&h, TPU_NPY_U2, 2, m, nh), 0);
        for (size_t i = 0; i < m * nh; i++) /* the hidden layer: bf16(relu(.)) */
            ((uint16_t *)h.data)[i] = fp32_to_bf16(vpu_relu(fp32_from_bits(y1[i]))).v;
        uint32_t *z = layer(n, &h, &w2, &b2, VPU_FMT_FP32);
        uint32_t *o = malloc(4u * no);
        for (size_t r = 0; r < m; r++) {
            assert_int_equal(vpu_softmax(no, VPU_FMT_FP32, z + r * no, VPU_FMT_BF16, o, n),
                             TPU_OK);
            for (size_t k = 0; k < no; k++)
                if (dumped(&j, r, k) != (o[k] & 0xFFFFu))
                    fail_msg("mlp N=%u out[%zu][%zu]: model %04x reference %04x", n, r, k,
                             dumped(&j, r, k), o[k] & 0xFFFFu);
        }
        free(o);
        free(y1);
        free(z);
        tpu_npy_free(&h);
        tpu_npy_free(&a);
        tpu_npy_free(&w1);
        tpu_npy_free(&w2);
        tpu_npy_free(&b1);
        tpu_npy_free(&b2);
        tpu_host_free(&j.host);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_mkprog TPU-MKPROG WORKDIR\n");
        return 2;
    }
    g_mkprog = argv[1];
    g_work = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_manyk),
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_allops),
        cmocka_unit_test(test_transpose),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
