/* SPDX-License-Identifier: Apache-2.0 */
/* test-board-model, part 2: the board jobs of tpu-mkprog (allreduce, bcast, sendrecv, barrier,
   dptrain, collall) run on the board model (tpu_board_run) at C = 2, 4, 8, ring and torus,
   N = 1, 3, 4, and every dump is checked bit for bit against an oracle composed from tested
   library pieces: job.txt lists, in program order, what the cores' programs do (loads,
   collectives, send/recv copies, VPU and MXU work, dumps); the oracle applies that to the
   input files with plain copies, tpu_allreduce_ring/torus (the element fold of docs/board.md),
   tpu_matmul and vpu_binary. Also: every core ends dptrain with the same W; the per-core
   traces are identical between runs and for other link widths and latencies; a deadlock is
   reported naming the stuck cores; a bad core id is error 8.
   Usage: test_board_jobs TPU-MKPROG WORKDIR */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "tpu/board.h"
#include "tpu/core.h"
#include "tpu/host.h"
#include "tpu/mxu.h"
#include "tpu/npy.h"
#include "tpu/numerics.h"
#include "tpu/vpu.h"

#define MAXC TPU_BOARD_CORES_MAX

static const char *g_mkprog, *g_work;

/* ---- running a board job on the model ---- */

typedef struct {
    char dir[512];
    unsigned n, cores, rows, cols;
    tpu_host_t host[MAXC];
    tpu_core_result_t res[MAXC];
    char *trace[MAXC];
    size_t trace_len[MAXC];
    char msg[4096];
} run_t;

static void run_free(run_t *r)
{
    for (unsigned i = 0; i < r->cores; i++) {
        tpu_host_free(&r->host[i]);
        free(r->trace[i]);
        r->trace[i] = NULL;
    }
}

/* Runs DIR (core<i>.args) on an R x S board with W-bit links of latency D. */
static void run_board(run_t *r, const char *dir, unsigned n, unsigned rows, unsigned cols,
                      unsigned w, unsigned d)
{
    char err[2048];
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    r->n = n;
    r->cores = rows * cols;
    r->rows = rows;
    r->cols = cols;
    tpu_board_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rows = rows;
    cfg.cols = cols;
    cfg.link_bits = w;
    cfg.link_latency = d;
    cfg.core.geom = tpu_core_geom_default(n);
    tpu_board_t *b = tpu_board_new(&cfg);
    assert_non_null(b);
    assert_int_equal(tpu_board_cores(b), r->cores);
    tpu_board_job_t job[MAXC];
    tpu_insn_t *prog[MAXC];
    FILE *tr[MAXC];
    memset(job, 0, sizeof job);
    for (unsigned i = 0; i < r->cores; i++) {
        char args[700];
        snprintf(args, sizeof args, "@%s/core%u.args", dir, i);
        char *argv[] = { "test", args, NULL };
        int xargc;
        char **xargv;
        if (tpu_args_expand(2, argv, &xargc, &xargv, err, sizeof err) != 0)
            fail_msg("%s", err);
        tpu_host_init(&r->host[i]);
        for (int a = 1; a < xargc; a++) {
            const char *arg = strchr(xargv[a], '=') ? NULL : xargv[++a];
            if (tpu_host_add_option(&r->host[i], xargv[a - (arg != NULL)], arg, err,
                                    sizeof err) != 0)
                fail_msg("%s", err);
        }
        tpu_args_free(xargc, xargv);
        if (tpu_host_load_all(&r->host[i], err, sizeof err) != 0)
            fail_msg("%s", err);
        assert_non_null(r->host[i].prog_path);
        if (tpu_load_program(r->host[i].prog_path, n, &prog[i], &job[i].count, err,
                             sizeof err) != 0)
            fail_msg("%s", err);
        tr[i] = open_memstream(&r->trace[i], &r->trace_len[i]);
        assert_non_null(tr[i]);
        job[i].prog = prog[i];
        job[i].host = r->host[i].mem;
        job[i].host_bytes = r->host[i].size;
        job[i].trace = tr[i];
    }
    assert_int_equal(tpu_board_run(b, job, r->res, r->msg, sizeof r->msg), TPU_OK);
    for (unsigned i = 0; i < r->cores; i++) {
        assert_int_equal(fclose(tr[i]), 0);
        free(prog[i]);
    }
    tpu_board_free(b);
}

static void mkprog(char *dir, size_t len, const char *kind, unsigned n, unsigned cores,
                   const char *topo, const char *extra)
{
    char cmd[2048];
    snprintf(dir, len, "%s/%s_C%u_%s_N%u", g_work, kind, cores, topo, n);
    for (char *p = dir + strlen(g_work); *p; p++)
        if (*p == ':')
            *p = '_';
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && '%s' %s --cores %u --topology %s --mxu %u %s -o '%s'",
             dir, g_mkprog, kind, cores, topo, n, extra, dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- the oracle ---- */

typedef struct {
    unsigned n, cores, rows, cols;
    unsigned size[3];           /* rows of UB, ACC, WMEM */
    uint32_t *mem[MAXC][3];     /* row-major, N words per row (bf16 in the low 16 bits) */
} oracle_t;

static const uint32_t kPad[3] = { 0x0000, 0x80000000u, 0x8000 }; /* dma_in's pad values */

static unsigned mem_id(const char *s)
{
    if (!strcmp(s, "ub"))
        return 0;
    if (!strcmp(s, "acc"))
        return 1;
    if (!strcmp(s, "wmem"))
        return 2;
    fail_msg("job.txt: memory '%s'", s);
    return 0;
}

static uint32_t *orow(oracle_t *o, unsigned core, unsigned m, unsigned row)
{
    assert_true(core < o->cores);
    assert_true(row < o->size[m]);
    return o->mem[core][m] + (size_t)row * o->n;
}

static vpu_fmt_t fmt_of(unsigned m) { return m == 1 ? VPU_FMT_FP32 : VPU_FMT_BF16; }

static const tpu_host_dump_t *find_dump(const tpu_host_t *h, const char *name)
{
    for (size_t k = 0; k < h->ndumps; k++) {
        const char *p = strrchr(h->dumps[k].path, '/');
        if (!strcmp(p ? p + 1 : h->dumps[k].path, name))
            return &h->dumps[k];
    }
    fail_msg("no --dump of %s", name);
    return NULL;
}

static uint32_t dumped(const tpu_host_t *h, const tpu_host_dump_t *d, size_t r, size_t c)
{
    size_t e = d->dtype == TPU_NPY_U2 ? 2 : 4, a = d->addr + r * d->stride + c * e;
    uint32_t v = 0;
    assert_true(a + e <= h->size);
    for (size_t b = 0; b < e; b++)
        v |= (uint32_t)h->mem[a + b] << (8u * b);
    return v;
}

/* Applies job.txt to the inputs and compares every dump of run r; returns the dumps checked. */
static unsigned check_job(const run_t *r)
{
    char path[700], line[512];
    snprintf(path, sizeof path, "%s/job.txt", r->dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    oracle_t o;
    memset(&o, 0, sizeof o);
    o.n = r->n;
    o.cores = r->cores;
    tpu_core_geom_t g = tpu_core_geom_default(r->n);
    o.size[0] = g.ub_rows;
    o.size[1] = g.acc_rows;
    o.size[2] = g.wmem_rows;
    for (unsigned i = 0; i < o.cores; i++)
        for (unsigned m = 0; m < 3; m++) {
            o.mem[i][m] = calloc((size_t)o.size[m] * o.n, sizeof(uint32_t));
            assert_non_null(o.mem[i][m]);
        }
    unsigned n = o.n, checked = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        char op[32], a1[256], a2[32], a3[32], a4[32];
        unsigned u[8];
        lineno++;
        if (sscanf(line, "%31s", op) != 1)
            continue;
        if (!strcmp(op, "cores")) {
            assert_int_equal(sscanf(line, "cores %u", &u[0]), 1);
            assert_int_equal(u[0], o.cores);
        } else if (!strcmp(op, "mxu")) {
            assert_int_equal(sscanf(line, "mxu %u", &u[0]), 1);
            assert_int_equal(u[0], n);
        } else if (!strcmp(op, "shape")) {
            assert_int_equal(sscanf(line, "shape %u %u", &u[0], &u[1]), 2);
            assert_int_equal(u[0], r->rows);
            assert_int_equal(u[1], r->cols);
        } else if (!strcmp(op, "load")) {
            /* load CORE MEM ROW ROWS COLS FILE FILEROW */
            assert_int_equal(sscanf(line, "load %u %31s %u %u %u %255s %u", &u[0], a2, &u[1],
                                    &u[2], &u[3], a1, &u[4]), 7);
            unsigned m = mem_id(a2);
            char file[1024], err[1024];
            tpu_npy_t arr;
            snprintf(file, sizeof file, "%s/%s", r->dir, a1);
            if (tpu_npy_read(file, &arr, err, sizeof err) != 0)
                fail_msg("%s", err);
            assert_true(u[3] <= arr.cols && u[3] <= n);
            assert_true(u[4] + u[2] <= arr.rows);
            for (unsigned k = 0; k < u[2]; k++) {
                uint32_t *row = orow(&o, u[0], m, u[1] + k);
                for (unsigned l = 0; l < n; l++) {
                    size_t e = (size_t)(u[4] + k) * arr.cols + l;
                    row[l] = l >= u[3] ? kPad[m]
                             : arr.dtype == TPU_NPY_U2 ? ((uint16_t *)arr.data)[e]
                                                       : ((uint32_t *)arr.data)[e];
                }
            }
            tpu_npy_free(&arr);
        } else if (!strcmp(op, "fill")) {
            /* fill CORE MEM ROW ROWS COLS VALUE: lanes < COLS = VALUE, the rest the pad */
            assert_int_equal(sscanf(line, "fill %u %31s %u %u %u %x", &u[0], a2, &u[1], &u[2],
                                    &u[3], &u[4]), 6);
            unsigned m = mem_id(a2);
            for (unsigned k = 0; k < u[2]; k++)
                for (unsigned l = 0; l < n; l++)
                    orow(&o, u[0], m, u[1] + k)[l] = l < u[3] ? u[4] : kPad[m];
        } else if (!strcmp(op, "allreduce")) {
            /* allreduce ROW ROWS topology|ring: ACC rows as one vector of ROWS*N elements */
            assert_int_equal(sscanf(line, "allreduce %u %u %31s", &u[0], &u[1], a2), 3);
            size_t len = (size_t)u[1] * n;
            fp32_t *x[MAXC], *y[MAXC];
            for (unsigned i = 0; i < o.cores; i++) {
                x[i] = malloc(len * sizeof **x);
                y[i] = malloc(len * sizeof **y);
                assert_true(x[i] && y[i]);
                for (size_t e = 0; e < len; e++)
                    x[i][e] = fp32_from_bits(orow(&o, i, 1, u[0] + (unsigned)(e / n))[e % n]);
            }
            if (!strcmp(a2, "ring"))
                assert_int_equal(tpu_allreduce_ring(o.cores, len, (const fp32_t *const *)x, y),
                                 TPU_OK);
            else
                assert_int_equal(tpu_allreduce_torus(r->rows, r->cols, len,
                                                     (const fp32_t *const *)x, y), TPU_OK);
            for (unsigned i = 0; i < o.cores; i++) {
                for (size_t e = 0; e < len; e++)
                    orow(&o, i, 1, u[0] + (unsigned)(e / n))[e % n] = y[i][e].v;
                free(x[i]);
                free(y[i]);
            }
        } else if (!strcmp(op, "bcast")) {
            /* bcast MEM ROW ROWS ROOT */
            assert_int_equal(sscanf(line, "bcast %31s %u %u %u", a2, &u[0], &u[1], &u[2]), 4);
            unsigned m = mem_id(a2);
            assert_true(u[2] < o.cores);
            for (unsigned i = 0; i < o.cores; i++)
                if (i != u[2])
                    for (unsigned k = 0; k < u[1]; k++)
                        memcpy(orow(&o, i, m, u[0] + k), orow(&o, u[2], m, u[0] + k),
                               n * sizeof(uint32_t));
        } else if (!strcmp(op, "copy")) {
            /* copy SRC MEM SROW ROWS DST DROW: a send/recv pair */
            assert_int_equal(sscanf(line, "copy %u %31s %u %u %u %u", &u[0], a2, &u[1], &u[2],
                                    &u[3], &u[4]), 6);
            unsigned m = mem_id(a2);
            assert_true(u[0] != u[3]);
            for (unsigned k = 0; k < u[2]; k++)
                memcpy(orow(&o, u[3], m, u[4] + k), orow(&o, u[0], m, u[1] + k),
                       n * sizeof(uint32_t));
        } else if (!strcmp(op, "barrier")) {
            /* no data */
        } else if (!strcmp(op, "vop")) {
            /* vop CORE OP AMEM A BMEM B BCAST DMEM D ROWS */
            assert_int_equal(sscanf(line, "vop %u %31s %31s %u %31s %u %u %31s %u %u", &u[0], a1,
                                    a2, &u[1], a3, &u[2], &u[3], a4, &u[4], &u[5]), 10);
            vpu_op_t vop = !strcmp(a1, "add") ? VPU_OP_ADD : !strcmp(a1, "sub") ? VPU_OP_SUB
                           : !strcmp(a1, "mul") ? VPU_OP_MUL : VPU_OP_COUNT;
            assert_true(vop != VPU_OP_COUNT);
            unsigned ma = mem_id(a2), mb = mem_id(a3), md = mem_id(a4);
            for (unsigned k = 0; k < u[5]; k++) {
                const uint32_t *pa = orow(&o, u[0], ma, u[1] + k);
                const uint32_t *pb = orow(&o, u[0], mb, u[2] + (u[3] ? 0 : k));
                uint32_t out[256];
                for (unsigned l = 0; l < n; l++)
                    out[l] = vpu_store(fmt_of(md), vpu_binary(vop, vpu_load(fmt_of(ma), pa[l]),
                                                              vpu_load(fmt_of(mb), pb[l])));
                memcpy(orow(&o, u[0], md, u[4] + k), out, n * sizeof(uint32_t));
            }
        } else if (!strcmp(op, "matmul")) {
            /* matmul CORE UB WMEM ACC ROWS: lw of WMEM rows WMEM.., matmul (overwrite) */
            assert_int_equal(sscanf(line, "matmul %u %u %u %u %u", &u[0], &u[1], &u[2], &u[3],
                                    &u[4]), 5);
            bf16_t *a = malloc((size_t)u[4] * n * sizeof *a), *w = malloc((size_t)n * n * sizeof *w);
            fp32_t *c = malloc((size_t)u[4] * n * sizeof *c);
            assert_true(a && w && c);
            for (unsigned k = 0; k < u[4]; k++)
                for (unsigned l = 0; l < n; l++)
                    a[(size_t)k * n + l].v = (uint16_t)orow(&o, u[0], 0, u[1] + k)[l];
            for (unsigned k = 0; k < n; k++)
                for (unsigned l = 0; l < n; l++)
                    w[(size_t)k * n + l].v = (uint16_t)orow(&o, u[0], 2, u[2] + k)[l];
            tpu_mxu_cfg_t mc = { .n = n };
            assert_int_equal(tpu_matmul(&mc, u[4], n, n, a, w, c, NULL), TPU_OK);
            for (unsigned k = 0; k < u[4]; k++)
                for (unsigned l = 0; l < n; l++)
                    orow(&o, u[0], 1, u[3] + k)[l] = c[(size_t)k * n + l].v;
            free(a);
            free(w);
            free(c);
        } else if (!strcmp(op, "dump")) {
            /* dump CORE MEM ROW ROWS COLS NAME: the dump holds these rows now */
            assert_int_equal(sscanf(line, "dump %u %31s %u %u %u %255s", &u[0], a2, &u[1], &u[2],
                                    &u[3], a1), 6);
            unsigned m = mem_id(a2);
            const tpu_host_dump_t *d = find_dump(&r->host[u[0]], a1);
            assert_int_equal(d->rows, u[2]);
            assert_int_equal(d->cols, u[3]);
            assert_int_equal(d->dtype, m == 1 ? TPU_NPY_F4 : TPU_NPY_U2);
            for (unsigned k = 0; k < u[2]; k++)
                for (unsigned l = 0; l < u[3]; l++) {
                    uint32_t want = orow(&o, u[0], m, u[1] + k)[l];
                    uint32_t got = dumped(&r->host[u[0]], d, k, l);
                    if (want != got)
                        fail_msg("%s: core %u dump %s row %u col %u: oracle %08x model %08x",
                                 r->dir, u[0], a1, k, l, want, got);
                }
            checked++;
        } else if (strcmp(op, "kind") && strcmp(op, "seed") && strcmp(op, "dist") &&
                   strcmp(op, "dptrain")) {
            fail_msg("%s/job.txt:%u: unknown line '%s'", r->dir, lineno, op);
        }
    }
    fclose(f);
    for (unsigned i = 0; i < o.cores; i++)
        for (unsigned m = 0; m < 3; m++)
            free(o.mem[i][m]);
    return checked;
}

/* the dump NAME is the same bytes on every core */
static void check_same_on_all(const run_t *r, const char *name)
{
    const tpu_host_dump_t *d0 = find_dump(&r->host[0], name);
    for (unsigned i = 1; i < r->cores; i++) {
        const tpu_host_dump_t *d = find_dump(&r->host[i], name);
        for (size_t k = 0; k < d0->rows; k++)
            for (size_t l = 0; l < d0->cols; l++)
                if (dumped(&r->host[0], d0, k, l) != dumped(&r->host[i], d, k, l))
                    fail_msg("%s: %s differs between core 0 and core %u at (%zu, %zu)", r->dir,
                             name, i, k, l);
    }
}

/* ---- the configurations ---- */

typedef struct {
    unsigned cores, rows, cols;
    const char *topo;
} board_shape_t;

static const board_shape_t kShapes[] = {
    { 2, 1, 2, "ring" },       { 4, 1, 4, "ring" },       { 4, 2, 2, "torus" },
    { 8, 1, 8, "ring" },       { 8, 2, 4, "torus:2x4" },
};
static const unsigned kSizes[] = { 1, 3, 4 };

static void all_done(const run_t *r)
{
    for (unsigned i = 0; i < r->cores; i++) {
        if (r->res[i].status != TPU_CORE_DONE)
            fail_msg("%s: core %u status %d error %d at pc %u: %s", r->dir, i, r->res[i].status,
                     r->res[i].err_code, r->res[i].err_pc, r->msg);
        assert_int_equal(r->res[i].uninit_reads, 0);
        assert_true(r->res[i].counters[TPU_CNT_NET_BUSY] > 0 || r->cores == 1);
    }
}

/* 1 if the dumps a and b of core 0 differ somewhere */
static int dumps_differ(const run_t *r, const char *a, const char *b)
{
    const tpu_host_dump_t *da = find_dump(&r->host[0], a), *db = find_dump(&r->host[0], b);
    for (size_t k = 0; k < da->rows; k++)
        for (size_t l = 0; l < da->cols; l++)
            if (dumped(&r->host[0], da, k, l) != dumped(&r->host[0], db, k, l))
                return 1;
    return 0;
}

static void run_kind(const char *kind, unsigned seeds, int same_dumps)
{
    for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; s++)
        for (size_t z = 0; z < sizeof kSizes / sizeof kSizes[0]; z++)
            for (unsigned seed = 1; seed <= seeds; seed++) {
                const board_shape_t *sh = &kShapes[s];
                char dir[600], extra[64];
                run_t *r = malloc(sizeof *r);
                assert_non_null(r);
                snprintf(extra, sizeof extra, "--seed %u", seed);
                mkprog(dir, sizeof dir, kind, kSizes[z], sh->cores, sh->topo, extra);
                run_board(r, dir, kSizes[z], sh->rows, sh->cols, 64, 2);
                all_done(r);
                assert_true(check_job(r) >= sh->cores);
                if (same_dumps) {
                    check_same_on_all(r, "dptrain_dw.npy");
                    check_same_on_all(r, "dptrain_w.npy");
                }
                /* on a torus the grouping differs from the ring's, and the data show it */
                if (!strcmp(kind, "allreduce") && sh->rows > 1 && kSizes[z] > 1 &&
                    !dumps_differ(r, "allreduce_topo.npy", "allreduce_ring.npy"))
                    fail_msg("%s: torus and ring all-reduce gave the same bits", dir);
                run_free(r);
                free(r);
            }
}

static void test_allreduce(void **state) { (void)state; run_kind("allreduce", 4, 0); }
static void test_bcast(void **state) { (void)state; run_kind("bcast", 1, 0); }
static void test_sendrecv(void **state) { (void)state; run_kind("sendrecv", 1, 0); }
static void test_barrier(void **state) { (void)state; run_kind("barrier", 1, 0); }
static void test_dptrain(void **state) { (void)state; run_kind("dptrain", 2, 1); }
static void test_collall(void **state) { (void)state; run_kind("collall", 1, 1); }

/* collall on other shapes: odd rings, tori with R != S and R = S = 3, 4 */
static void test_collall_shapes(void **state)
{
    (void)state;
    static const board_shape_t sh[] = {
        { 3, 1, 3, "ring" }, { 5, 1, 5, "ring" }, { 6, 2, 3, "torus" }, { 6, 3, 2, "torus:3x2" },
        { 9, 3, 3, "torus" }, { 16, 4, 4, "torus" },
    };
    for (size_t s = 0; s < sizeof sh / sizeof sh[0]; s++) {
        char dir[600];
        run_t *r = malloc(sizeof *r);
        assert_non_null(r);
        mkprog(dir, sizeof dir, "collall", 2, sh[s].cores, sh[s].topo, "--seed 9");
        run_board(r, dir, 2, sh[s].rows, sh[s].cols, 64, 2);
        all_done(r);
        assert_int_equal(check_job(r), 9 * sh[s].cores); /* 9 dumps per core */
        check_same_on_all(r, "dptrain_w.npy");
        run_free(r);
        free(r);
    }
}

/* dptrain with a partial tile: b < N (WMEM rows filled with -0), N' < N, K not a multiple */
static void test_dptrain_partial(void **state)
{
    (void)state;
    char dir[600];
    run_t *r = malloc(sizeof *r);
    assert_non_null(r);
    snprintf(dir, sizeof dir, "%s/dptrain_partial", g_work);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && '%s' dptrain --cores 4 --topology torus --mxu 4 "
             "--m 3 --k 13 --nout 3 --seed 7 --dist wide -o '%s'", dir, g_mkprog, dir);
    assert_int_equal(system(cmd), 0);
    run_board(r, dir, 4, 2, 2, 64, 2);
    all_done(r);
    assert_int_equal(check_job(r), 8);
    check_same_on_all(r, "dptrain_w.npy");
    run_free(r);
    free(r);
}

/* the traces are the same in two runs and for other link widths and latencies; so are the
   results; only the cycle counters may change */
static void test_determinism(void **state)
{
    (void)state;
    static const unsigned wd[][2] = { { 64, 2 }, { 64, 2 }, { 32, 0 }, { 1024, 16 }, { 128, 5 } };
    static const board_shape_t sh[2] = { { 8, 2, 4, "torus:2x4" }, { 4, 1, 4, "ring" } };
    for (unsigned s = 0; s < 2; s++) {
        char dir[600];
        mkprog(dir, sizeof dir, "collall", s ? 3 : 4, sh[s].cores, sh[s].topo, "--seed 3");
        run_t *r0 = malloc(sizeof *r0), *r = malloc(sizeof *r);
        assert_true(r0 && r);
        run_board(r0, dir, s ? 3 : 4, sh[s].rows, sh[s].cols, wd[0][0], wd[0][1]);
        all_done(r0);
        for (unsigned v = 1; v < sizeof wd / sizeof wd[0]; v++) {
            run_board(r, dir, s ? 3 : 4, sh[s].rows, sh[s].cols, wd[v][0], wd[v][1]);
            all_done(r);
            for (unsigned i = 0; i < r->cores; i++) {
                assert_true(r0->trace_len[i] > 100);
                if (r->trace_len[i] != r0->trace_len[i] ||
                    memcmp(r->trace[i], r0->trace[i], r->trace_len[i]))
                    fail_msg("%s: core %u's trace differs at W = %u, D = %u from W = 64, D = 2",
                             dir, i, wd[v][0], wd[v][1]);
                assert_int_equal(r->host[i].size, r0->host[i].size);
                assert_memory_equal(r->host[i].mem, r0->host[i].mem, r->host[i].size);
                assert_int_equal(r->res[i].counters[TPU_CNT_INSNS],
                                 r0->res[i].counters[TPU_CNT_INSNS]);
                if (v == 1)
                    assert_memory_equal(r->res[i].counters, r0->res[i].counters,
                                        sizeof r->res[i].counters);
            }
            run_free(r);
        }
        run_free(r0);
        free(r0);
        free(r);
    }
}

/* a hand-written job: core i runs progs[i] (or `halt`) */
static void write_job(char *dir, size_t len, const char *name, unsigned cores,
                      const char *const *progs)
{
    char cmd[1024], path[800];
    snprintf(dir, len, "%s/%s", g_work, name);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    assert_int_equal(system(cmd), 0);
    for (unsigned i = 0; i < cores; i++) {
        snprintf(path, sizeof path, "%s/core%u.s", dir, i);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "%s\nhalt\n", progs[i] ? progs[i] : "nop");
        assert_int_equal(fclose(f), 0);
        snprintf(path, sizeof path, "%s/core%u.args", dir, i);
        f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "--prog core%u.s\n--hostmem-mib 1\n", i);
        assert_int_equal(fclose(f), 0);
    }
}

/* the message names core i (as "core <i>" not followed by a digit) */
static int names_core(const char *msg, unsigned i)
{
    char key[16];
    int k = snprintf(key, sizeof key, "core %u", i);
    for (const char *p = strstr(msg, key); p; p = strstr(p + 1, key))
        if (p[k] < '0' || p[k] > '9')
            return 1;
    return 0;
}

static void test_deadlock(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; s++) {
        const board_shape_t *sh = &kShapes[s];
        unsigned c = sh->cores, a = c - 1, b = c / 2 - 1 + (c > 2);
        const char *progs[MAXC] = { 0 };
        char dir[600], p0[128], p1[128];
        /* core a receives from core b, which halts: a is stuck, no other core */
        snprintf(p0, sizeof p0, "dma_in ub row=0 rows=1 cols=1 addr=0 stride=2\n"
                 "recv ub row=0 rows=1 core=%u", b);
        progs[a] = p0;
        write_job(dir, sizeof dir, "deadlock_recv", c, progs);
        run_t *r = malloc(sizeof *r);
        assert_non_null(r);
        run_board(r, dir, 4, sh->rows, sh->cols, 64, 2);
        for (unsigned i = 0; i < c; i++)
            assert_int_equal(r->res[i].status, i == a ? TPU_CORE_STUCK : TPU_CORE_DONE);
        if (!names_core(r->msg, a))
            fail_msg("C = %u: the deadlock message does not name core %u: '%s'", c, a, r->msg);
        run_free(r);
        /* cores a and b both send to each other first: both wait for a ready token */
        snprintf(p0, sizeof p0, "send ub row=0 rows=1 core=%u\nrecv ub row=1 rows=1 core=%u", b, b);
        snprintf(p1, sizeof p1, "send ub row=0 rows=1 core=%u\nrecv ub row=1 rows=1 core=%u", a, a);
        progs[a] = p0;
        progs[b] = p1;
        write_job(dir, sizeof dir, "deadlock_send", c, progs);
        run_board(r, dir, 3, sh->rows, sh->cols, 64, 2);
        for (unsigned i = 0; i < c; i++)
            assert_int_equal(r->res[i].status,
                             i == a || i == b ? TPU_CORE_STUCK : TPU_CORE_DONE);
        if (!names_core(r->msg, a) || !names_core(r->msg, b))
            fail_msg("C = %u: the deadlock message does not name cores %u and %u: '%s'", c, a, b,
                     r->msg);
        run_free(r);
        /* every core at a barrier but core 0, which is at an allreduce */
        for (unsigned i = 0; i < c; i++)
            progs[i] = i ? "barrier" : "allreduce acc row=0 rows=1";
        write_job(dir, sizeof dir, "deadlock_mismatch", c, progs);
        run_board(r, dir, 1, sh->rows, sh->cols, 64, 2);
        for (unsigned i = 0; i < c; i++) {
            assert_int_equal(r->res[i].status, TPU_CORE_STUCK);
            if (!names_core(r->msg, i))
                fail_msg("C = %u: the message does not name core %u: '%s'", c, i, r->msg);
        }
        run_free(r);
        free(r);
    }
}

/* error 8: a core id >= C, or send/recv naming the executing core; the other cores halt */
static void test_error8(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; s++) {
        const board_shape_t *sh = &kShapes[s];
        unsigned c = sh->cores;
        char bad[5][96];
        snprintf(bad[0], sizeof bad[0], "send ub row=0 rows=1 core=%u", c);
        snprintf(bad[1], sizeof bad[1], "recv acc row=0 rows=1 core=%u", c + 3 > 63 ? 63 : c + 3);
        snprintf(bad[2], sizeof bad[2], "bcast ub row=0 rows=1 root=%u", c);
        snprintf(bad[3], sizeof bad[3], "send acc row=0 rows=1 core=%u", c - 1);
        snprintf(bad[4], sizeof bad[4], "recv ub row=0 rows=1 core=%u", c - 1);
        for (unsigned k = 0; k < 5; k++) {
            const char *progs[MAXC] = { 0 };
            char dir[600], p[600];
            unsigned who = k >= 3 ? c - 1 : 0; /* k >= 3: to itself */
            snprintf(p, sizeof p, "nop\n%s", bad[k]);
            progs[who] = p;
            write_job(dir, sizeof dir, "error8", c, progs);
            run_t *r = malloc(sizeof *r);
            assert_non_null(r);
            run_board(r, dir, 3, sh->rows, sh->cols, 64, 2);
            for (unsigned i = 0; i < c; i++) {
                if (i != who) {
                    assert_int_equal(r->res[i].status, TPU_CORE_DONE);
                    continue;
                }
                if (r->res[i].status != TPU_CORE_ERROR || r->res[i].err_code != 8 ||
                    r->res[i].err_pc != 1)
                    fail_msg("C = %u core %u '%s': status %d code %d pc %u, expected error 8 at "
                             "pc 1", c, i, bad[k], r->res[i].status, r->res[i].err_code,
                             r->res[i].err_pc);
                assert_non_null(strstr(r->trace[i], "e 1 1 8"));
            }
            run_free(r);
            free(r);
        }
    }
}

/* tpu-mkprog's board options: one-line errors naming the bad value; exit 2 for a usage
   error (options, sizes that do not fit before anything is generated), 1 for a job that
   cannot be generated (docs/isa.md "Command lines") */
static void test_mkprog_errors(void **state)
{
    (void)state;
    static const struct { const char *args, *msg; int st; } cases[] = {
        { "sendrecv --cores 1 --mxu 4", "needs --cores >= 2", 2 },
        { "collall --cores 1 --mxu 4", "needs --cores >= 2", 2 },
        { "allreduce --cores 8 --topology torus:3x3 --mxu 4", "R*S = 9 must equal --cores 8", 2 },
        { "allreduce --cores 4 --topology mesh --mxu 4", "--topology 'mesh'", 2 },
        { "bcast --cores 65 --mxu 4", "--cores '65' is out of range (allowed: 1..64)", 2 },
        { "bcast --cores 4 --cores 4 --mxu 4", "option '--cores' given twice", 2 },
        { "bcast --cores 4 --mxu 04x", "--mxu '04x' is not a whole number", 2 },
        { "dptrain --cores 2 --mxu 4 --m 5", "--m 5", 1 },
        { "dptrain --cores 2 --mxu 4 --nout 5", "--nout 5", 1 },
        { "dptrain --cores 2 --mxu 4 --k 3000", "ACC", 1 },
        { "barrier --cores 2", "no --mxu", 2 },
        { "matmul --cores 2 --mxu 4", "--cores is an option of the board kinds", 2 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char cmd[1024], out[1024] = "";
        snprintf(cmd, sizeof cmd, "'%s' %s -o '%s/err' 2>&1", g_mkprog, cases[k].args, g_work);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        size_t len = fread(out, 1, sizeof out - 1, p);
        out[len] = 0;
        int st = pclose(p);
        if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != cases[k].st ||
            !strstr(out, cases[k].msg) || strncmp(out, "tpu-mkprog: error: ", 19) ||
            strchr(out, '\n') != out + len - 1)
            fail_msg("tpu-mkprog %s: status %d, output '%s', expected exit %d and one line with "
                     "'%s'", cases[k].args, st, out, cases[k].st, cases[k].msg);
        char left[700];
        snprintf(left, sizeof left, "%s/err/core0.s", g_work);
        FILE *f = fopen(left, "r");
        if (f != NULL) {
            fclose(f);
            fail_msg("tpu-mkprog %s: failed but left %s", cases[k].args, left);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TPU-MKPROG WORKDIR\n", argv[0]);
        return 2;
    }
    g_mkprog = argv[1];
    g_work = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce),   cmocka_unit_test(test_bcast),
        cmocka_unit_test(test_sendrecv),    cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_dptrain),     cmocka_unit_test(test_dptrain_partial),
        cmocka_unit_test(test_collall),     cmocka_unit_test(test_collall_shapes),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_deadlock),    cmocka_unit_test(test_error8),
        cmocka_unit_test(test_mkprog_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
