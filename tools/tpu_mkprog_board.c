/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-mkprog's board kinds (docs/board.md "Board jobs"; layouts in docs/isa.md "Generated
   board jobs"): allreduce, bcast, sendrecv, barrier, dptrain and collall write a board job,
   DIR/core<i>.s, DIR/core<i>.args (--prog, --hostmem-mib, --load, --dump; paths relative to
   DIR), the inputs DIR/core<i>_<name>.npy, and DIR/job.txt: the sizes and, in program order,
   what every core's program does at the level of the oracle (loads, collectives, copies, VPU
   and MXU work, dumps), so a test can compute every dump from the inputs with the tested
   library functions. No expected result is written. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tpu/matgen.h"
#include "tpu/board.h"
#include "tpu/cli.h"
#include "tpu/npy.h"
#include "tpu/randprog.h"

#include "tpu_mkprog_board.h"

#define MAXC TPU_BOARD_CORES_MAX

struct bcfg {
    const char *kind, *dir, *dist;
    unsigned n, cores, rows, cols; /* N, C, R x S */
    unsigned b, k, nout;           /* dptrain: per-core batch, K, N' */
    uint64_t seed;
    unsigned ub_rows, acc_rows, wmem_rows, imem_insns;
    unsigned coll_rows;            /* random-board: --coll-rows (0: the generator's) */
    int no_loops;                  /* random-board: --no-loops */
};

struct bjob {
    const struct bcfg *c;
    FILE *prog[MAXC], *args[MAXC], *meta;
    unsigned insns[MAXC];
    uint64_t host_next;         /* the same host layout on every core */
    unsigned ub_next, acc_next; /* the same on-chip layout on every core */
    uint64_t negz;              /* host address of a bf16 -0 word (0 = not loaded yet) */
};

static const char *prog_name = "tpu-mkprog";

/* the files written so far: removed when the job fails, so no half job is left */
static char **g_files;
static size_t g_nfiles;

static void created(const char *path)
{
    char **f = realloc(g_files, (g_nfiles + 1) * sizeof *f);
    char *copy = malloc(strlen(path) + 1);
    if (f == NULL || copy == NULL) {
        fprintf(stderr, "%s: error: out of memory\n", prog_name);
        exit(1);
    }
    g_files = f;
    g_files[g_nfiles++] = strcpy(copy, path);
}

static const char *made_dir; /* the output folder, when this run created it */
static int die_status = 2;   /* 2 while the arguments are checked, then 1 */

static void die(const char *fmt, ...)
{
    va_list ap;
    for (size_t i = 0; i < g_nfiles; i++)
        remove(g_files[i]);
    if (made_dir)
        rmdir(made_dir);
    fprintf(stderr, "%s: error: ", prog_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(die_status);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        die("out of memory");
    return p;
}

static unsigned parse_u(const char *opt, const char *s, unsigned lo, unsigned hi)
{
    uint64_t v;
    char err[512];
    if (tpu_cli_count(opt, s, lo, hi, &v, err, sizeof err))
        die("%s", err);
    return (unsigned)v;
}

/* ---- program text, host and row allocation ---- */

static void emit(struct bjob *j, unsigned core, const char *fmt, ...)
{
    va_list ap;
    if (fmt[0] != '#')
        j->insns[core]++;
    va_start(ap, fmt);
    vfprintf(j->prog[core], fmt, ap);
    va_end(ap);
    fputc('\n', j->prog[core]);
}

/* the same text on every core */
static void emit_all(struct bjob *j, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    for (unsigned i = 0; i < j->c->cores; i++)
        emit(j, i, "%s", line);
}

static void meta(struct bjob *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(j->meta, fmt, ap);
    va_end(ap);
    fputc('\n', j->meta);
}

static uint64_t host_alloc(struct bjob *j, uint64_t bytes)
{
    uint64_t a = j->host_next;
    j->host_next = (a + bytes + 4095) & ~(uint64_t)4095;
    return a;
}

static unsigned row_alloc(struct bjob *j, int acc, unsigned rows, const char *what)
{
    unsigned *next = acc ? &j->acc_next : &j->ub_next;
    unsigned size = acc ? j->c->acc_rows : j->c->ub_rows;
    if ((uint64_t)*next + rows > size)
        die("%s needs %s rows %u..%llu, but %s has %u rows (--%s-rows)", what, acc ? "ACC" : "UB",
            *next, (unsigned long long)*next + rows - 1, acc ? "ACC" : "UB", size,
            acc ? "acc" : "ub");
    unsigned r = *next;
    *next += rows;
    return r;
}

static const char *mem_name(int acc) { return acc ? "acc" : "ub"; }

/* Writes core i's input array DIR/core<i>_<name> (rows x cols, bf16 bits or fp32 bits) and
   its --load line; returns the host address (the same on every core). data[i] per core. */
static uint64_t load_input(struct bjob *j, const char *name, int f32, unsigned rows,
                           unsigned cols, void *const *data)
{
    uint64_t a = host_alloc(j, (uint64_t)rows * cols * (f32 ? 4 : 2));
    for (unsigned i = 0; i < j->c->cores; i++) {
        char file[256], path[4096], err[512];
        tpu_npy_t arr;
        snprintf(file, sizeof file, "core%u_%s", i, name);
        snprintf(path, sizeof path, "%s/%s", j->c->dir, file);
        if (tpu_npy_alloc(&arr, f32 ? TPU_NPY_F4 : TPU_NPY_U2, 2, rows, cols))
            die("out of memory");
        memcpy(arr.data, data[i], (size_t)rows * cols * (f32 ? 4 : 2));
        created(path);
        if (tpu_npy_write(path, &arr, err, sizeof err))
            die("%s", err);
        tpu_npy_free(&arr);
        fprintf(j->args[i], "--load 0x%llx=%s\n", (unsigned long long)a, file);
    }
    return a;
}

/* dma_in of rows [frow, frow+rows) x cols of an input at host address h (row length `width`
   elements) into MEM rows [row, row+rows) on core i, and its `load` line. */
static void dma_load(struct bjob *j, unsigned i, int acc, unsigned row, unsigned rows,
                     unsigned cols, const char *name, uint64_t h, unsigned width, unsigned frow)
{
    unsigned e = acc ? 4 : 2;
    emit(j, i, "dma_in %s row=%u rows=%u cols=%u addr=0x%llx stride=%u", mem_name(acc), row,
         rows, cols, (unsigned long long)(h + (uint64_t)frow * width * e), width * e);
    meta(j, "load %u %s %u %u %u core%u_%s %u", i, mem_name(acc), row, rows, cols, i, name, frow);
}

/* A dump: rows x cols of MEM at row, to core i's `<name>` (every core the same address). */
static void dump_all(struct bjob *j, int acc, unsigned row, unsigned rows, unsigned cols,
                     const char *name)
{
    unsigned e = acc ? 4 : 2;
    uint64_t a = host_alloc(j, (uint64_t)rows * cols * e);
    for (unsigned i = 0; i < j->c->cores; i++) {
        fprintf(j->args[i], "--dump 0x%llx=%s:%s:%ux%u\n", (unsigned long long)a, name,
                acc ? "f32" : "bf16", rows, cols);
        emit(j, i, "dma_out %s row=%u rows=%u cols=%u addr=0x%llx stride=%u", mem_name(acc), row,
             rows, cols, (unsigned long long)a, cols * e);
        meta(j, "dump %u %s %u %u %u %s", i, mem_name(acc), row, rows, cols, name);
    }
}

/* ---- data ---- */

static uint64_t g_rng;

static uint64_t rnd(void) { return tpu_matgen_rand(&g_rng); }

static void seed_rng(const struct bcfg *c, uint64_t salt)
{
    g_rng = c->seed * 0x9E3779B97F4A7C15ull + salt * 0xD1B54A32D192ED03ull + 1;
}

static uint32_t f32_bits(unsigned sign, unsigned exp, uint32_t mant)
{
    return (uint32_t)sign << 31 | (uint32_t)(exp & 0xFF) << 23 | (mant & 0x7FFFFF);
}

/* A plain random fp32: |x| in [2^-8, 2^8), random sign and significand. */
static uint32_t rnd_f32(void)
{
    uint64_t r = rnd();
    return f32_bits(r & 1, 119 + (unsigned)((r >> 1) % 16), (uint32_t)(r >> 8));
}

/* x[i][e] for cores i, elements e < n: each element is one scenario for all cores (chosen per
   element), so the sum over cores meets the edges of docs/numerics.md and the order matters:
   0, 1 plain values; 2 subnormals (flushed), signed zeros and the smallest normals; 3 signed
   zeros only; 4 a large value and its negation on alternate cores plus small values on every
   third core (exact cancellation, small values absorbed or not depending on the order);
   5 values near the top of the range (overflow to inf in some orders); 6 one 1.0 and 2^-24
   (1 + m/8) on the others (ties and sticky bits: the result depends on the grouping);
   7 exponents over 2^+-40. */
static void edge_data(const struct bcfg *c, uint64_t salt, size_t n, uint32_t **x)
{
    unsigned C = c->cores;
    seed_rng(c, salt);
    for (size_t e = 0; e < n; e++) {
        unsigned scen = (unsigned)(rnd() % 8);
        uint64_t big = rnd(), one = rnd() % C;
        for (unsigned i = 0; i < C; i++) {
            uint64_t r = rnd();
            uint32_t v;
            switch (scen) {
            case 2:
                v = r % 3 == 0 ? f32_bits(r >> 2 & 1, 0, (uint32_t)(r >> 8) | 1)
                    : r % 3 == 1 ? f32_bits(r >> 2 & 1, 1, (uint32_t)(r >> 8)) : f32_bits(r >> 2 & 1, 0, 0);
                break;
            case 3: v = f32_bits(r & 1, 0, 0); break;
            case 4:
                v = i % 3 == 2 ? rnd_f32()
                    : f32_bits(i & 1, 230 + (unsigned)(big % 20), (uint32_t)(big >> 8));
                break;
            case 5: v = f32_bits(r & 1, 253 + (unsigned)(r >> 1) % 2, (uint32_t)(r >> 8)); break;
            case 6:
                v = i == one ? 0x3F800000u : f32_bits(0, 127 - 24, (uint32_t)(r % 8) << 20);
                break;
            case 7: v = f32_bits(r & 1, 87 + (unsigned)((r >> 1) % 81), (uint32_t)(r >> 8)); break;
            default: v = rnd_f32(); break;
            }
            x[i][e] = v;
        }
    }
}

static uint32_t **alloc_per_core32(const struct bcfg *c, size_t n)
{
    uint32_t **x = xmalloc(c->cores * sizeof *x);
    for (unsigned i = 0; i < c->cores; i++)
        x[i] = xmalloc(n * sizeof **x);
    return x;
}

static uint16_t **alloc_per_core16(const struct bcfg *c, size_t n)
{
    uint16_t **x = xmalloc(c->cores * sizeof *x);
    for (unsigned i = 0; i < c->cores; i++)
        x[i] = xmalloc(n * sizeof **x);
    return x;
}

static void free_per_core(const struct bcfg *c, void *p)
{
    void **x = p;
    for (unsigned i = 0; i < c->cores; i++)
        free(x[i]);
    free(x);
}

/* rows x cols bf16 per core from matgen (distribution --dist), different on every core */
static uint16_t **bf16_data(const struct bcfg *c, uint64_t salt, unsigned rows, unsigned cols)
{
    uint16_t **x = alloc_per_core16(c, (size_t)rows * cols);
    bf16_t *a = xmalloc((size_t)rows * cols * sizeof *a), *w = xmalloc(cols * sizeof *w);
    for (unsigned i = 0; i < c->cores; i++) {
        if (tpu_matgen(c->dist, c->seed * 0x9E3779B97F4A7C15ull + salt * 131 + i, rows, cols, 1,
                       a, w) != TPU_OK)
            die("matgen failed");
        for (size_t e = 0; e < (size_t)rows * cols; e++)
            x[i][e] = a[e].v;
    }
    free(a);
    free(w);
    return x;
}

/* rows x cols plain random fp32 per core */
static uint32_t **f32_data(const struct bcfg *c, uint64_t salt, unsigned rows, unsigned cols)
{
    uint32_t **x = alloc_per_core32(c, (size_t)rows * cols);
    seed_rng(c, salt);
    for (unsigned i = 0; i < c->cores; i++)
        for (size_t e = 0; e < (size_t)rows * cols; e++)
            x[i][e] = rnd_f32();
    return x;
}

/* ---- the parts (each a kind; collall runs them all, one after the other) ---- */

/* allreduce: ACC regions of 1, 2, 3 and 5 rows (edge data, the same input twice), reduced with
   the topology's algorithm and with `ring`. */
static void part_allreduce(struct bjob *j)
{
    const struct bcfg *c = j->c;
    static const unsigned sizes[4] = { 1, 2, 3, 5 };
    unsigned n = c->n, rows = 11;
    uint32_t **x = alloc_per_core32(c, (size_t)rows * n);
    edge_data(c, 11, (size_t)rows * n, x);
    uint64_t h = load_input(j, "allreduce_x.npy", 1, rows, n, (void *const *)x);
    free_per_core(c, x);
    unsigned topo = row_alloc(j, 1, rows, "allreduce"), ring = row_alloc(j, 1, rows, "allreduce");
    emit_all(j, "# allreduce: ACC rows %u..%u (topology) and %u..%u (ring) hold the same "
             "input; regions of 1, 2, 3, 5 rows", topo, topo + rows - 1, ring, ring + rows - 1);
    for (unsigned i = 0; i < c->cores; i++) {
        dma_load(j, i, 1, topo, rows, n, "allreduce_x.npy", h, n, 0);
        dma_load(j, i, 1, ring, rows, n, "allreduce_x.npy", h, n, 0);
    }
    for (int r = 0; r < 2; r++)
        for (unsigned k = 0, row = r ? ring : topo; k < 4; row += sizes[k++]) {
            emit_all(j, "allreduce acc row=%u rows=%u%s", row, sizes[k], r ? " ring" : "");
            meta(j, "allreduce %u %u %s", row, sizes[k], r ? "ring" : "topology");
        }
    dump_all(j, 1, topo, rows, n, "allreduce_topo.npy");
    dump_all(j, 1, ring, rows, n, "allreduce_ring.npy");
}

/* the distinct roots 0, C-1, C/2, 1 (mod C), in that order */
static unsigned roots(const struct bcfg *c, unsigned *r)
{
    unsigned cand[4] = { 0, c->cores - 1, c->cores / 2, 1 % c->cores }, nr = 0;
    for (unsigned k = 0; k < 4; k++) {
        unsigned d = 1;
        for (unsigned t = 0; t < nr; t++)
            d &= r[t] != cand[k];
        if (d)
            r[nr++] = cand[k];
    }
    return nr;
}

/* bcast: UB regions of 2 rows and ACC regions of 3 rows, one per root, then a UB region of 33
   rows and an ACC region of 40 rows (several packets); every row starts as the core's input. */
static void part_bcast(struct bjob *j)
{
    const struct bcfg *c = j->c;
    unsigned r[4], nr = roots(c, r), n = c->n;
    unsigned ur = 2 * nr + 33, ar = 3 * nr + 40;
    uint16_t **xu = bf16_data(c, 21, ur, n);
    uint32_t **xa = f32_data(c, 22, ar, n);
    uint64_t hu = load_input(j, "bcast_ub.npy", 0, ur, n, (void *const *)xu);
    uint64_t ha = load_input(j, "bcast_acc.npy", 1, ar, n, (void *const *)xa);
    free_per_core(c, xu);
    free_per_core(c, xa);
    unsigned ub = row_alloc(j, 0, ur, "bcast"), acc = row_alloc(j, 1, ar, "bcast");
    emit_all(j, "# bcast: UB rows %u..%u, ACC rows %u..%u", ub, ub + ur - 1, acc, acc + ar - 1);
    for (unsigned i = 0; i < c->cores; i++) {
        dma_load(j, i, 0, ub, ur, n, "bcast_ub.npy", hu, n, 0);
        dma_load(j, i, 1, acc, ar, n, "bcast_acc.npy", ha, n, 0);
    }
    for (unsigned k = 0; k < nr; k++) {
        unsigned ra = r[(k + 1) % nr];
        emit_all(j, "bcast ub row=%u rows=2 root=%u", ub + 2 * k, r[k]);
        meta(j, "bcast ub %u 2 %u", ub + 2 * k, r[k]);
        emit_all(j, "bcast acc row=%u rows=3 root=%u", acc + 3 * k, ra);
        meta(j, "bcast acc %u 3 %u", acc + 3 * k, ra);
    }
    emit_all(j, "bcast ub row=%u rows=33 root=%u", ub + 2 * nr, r[nr - 1]);
    meta(j, "bcast ub %u 33 %u", ub + 2 * nr, r[nr - 1]);
    emit_all(j, "bcast acc row=%u rows=40 root=%u", acc + 3 * nr, r[nr > 1]);
    meta(j, "bcast acc %u 40 %u", acc + 3 * nr, r[nr > 1]);
    dump_all(j, 0, ub, ur, n, "bcast_ub.npy");
    dump_all(j, 1, acc, ar, n, "bcast_acc.npy");
}

/* one send/recv pair: `rows` rows of MEM from src's row srow to dst's row drow */
static void pair(struct bjob *j, unsigned src, unsigned dst, int acc, unsigned srow,
                 unsigned rows, unsigned drow)
{
    emit(j, src, "send %s row=%u rows=%u core=%u", mem_name(acc), srow, rows, dst);
    emit(j, dst, "recv %s row=%u rows=%u core=%u", mem_name(acc), drow, rows, src);
    meta(j, "copy %u %s %u %u %u %u", src, mem_name(acc), srow, rows, dst, drow);
}

/* core a's far partner across the torus: (r + R/2, c + S/2) */
static unsigned far_of(const struct bcfg *c, unsigned a)
{
    unsigned r = a / c->cols, col = a % c->cols;
    return (r + c->rows / 2) % c->rows * c->cols + (col + c->cols / 2) % c->cols;
}

/* A shift of every core's `rows` rows to core i + d (d = +1 or -1): even cores send first
   then receive, odd cores the other way round, so no cycle of waiting sends (the receiver
   sends the ready token; docs/board.md "Protocol"). */
static void shift(struct bjob *j, int d, int acc, unsigned srow, unsigned rows, unsigned drow)
{
    unsigned C = j->c->cores;
    emit_all(j, "# every core i sends %s rows %u..%u to core i%s1, which writes them at row %u",
             mem_name(acc), srow, srow + rows - 1, d > 0 ? "+" : "-", drow);
    for (unsigned i = 0; i < C; i++) {
        unsigned to = (i + C + d) % C, from = (i + C - d) % C;
        const char *m = mem_name(acc);
        if (i % 2 == 0) {
            emit(j, i, "send %s row=%u rows=%u core=%u", m, srow, rows, to);
            emit(j, i, "recv %s row=%u rows=%u core=%u", m, drow, rows, from);
        } else {
            emit(j, i, "recv %s row=%u rows=%u core=%u", m, drow, rows, from);
            emit(j, i, "send %s row=%u rows=%u core=%u", m, srow, rows, to);
        }
        meta(j, "copy %u %s %u %u %u %u", i, m, srow, rows, to, drow);
    }
}

/* sendrecv: UB rows to i+1, ACC rows to i-1, then far pairs across the torus (core 0 and
   far(0), core 1 and far(1) when distinct from them) in both directions: 33 UB rows (two
   packets at W = 64, N = 4) one way, 2 ACC rows back. */
static void part_sendrecv(struct bjob *j)
{
    const struct bcfg *c = j->c;
    unsigned n = c->n;
    if (c->cores < 2)
        die("kind %s needs --cores >= 2 for send/recv (a core cannot send to itself), got 1",
            c->kind);
    /* UB: shift src 2, far src 33, shift dst 2, far dst 33; ACC: shift src 3, back src 2,
       shift dst 3, back dst 2 */
    unsigned ur = 70, ar = 10;
    uint16_t **xu = bf16_data(c, 31, ur, n);
    uint32_t **xa = f32_data(c, 32, ar, n);
    uint64_t hu = load_input(j, "sendrecv_ub.npy", 0, ur, n, (void *const *)xu);
    uint64_t ha = load_input(j, "sendrecv_acc.npy", 1, ar, n, (void *const *)xa);
    free_per_core(c, xu);
    free_per_core(c, xa);
    unsigned ub = row_alloc(j, 0, ur, "sendrecv"), acc = row_alloc(j, 1, ar, "sendrecv");
    emit_all(j, "# sendrecv: UB rows %u..%u, ACC rows %u..%u", ub, ub + ur - 1, acc,
             acc + ar - 1);
    for (unsigned i = 0; i < c->cores; i++) {
        dma_load(j, i, 0, ub, ur, n, "sendrecv_ub.npy", hu, n, 0);
        dma_load(j, i, 1, acc, ar, n, "sendrecv_acc.npy", ha, n, 0);
    }
    shift(j, +1, 0, ub, 2, ub + 35);
    shift(j, -1, 1, acc, 3, acc + 5);
    unsigned a[2] = { 0, 1 }, b[2], np = 0;
    for (unsigned t = 0; t < 2; t++) {
        unsigned f = far_of(c, a[t]);
        int ok = f != a[t] && a[t] < c->cores;
        for (unsigned u = 0; u < np; u++)
            ok &= a[t] != a[u] && a[t] != b[u] && f != a[u] && f != b[u];
        if (ok) {
            a[np] = a[t];
            b[np++] = f;
        }
    }
    for (unsigned t = 0; t < np; t++) {
        emit(j, a[t], "# far pair: core %u <-> core %u", a[t], b[t]);
        emit(j, b[t], "# far pair: core %u <-> core %u", a[t], b[t]);
        pair(j, a[t], b[t], 0, ub + 2, 33, ub + 37);
        pair(j, b[t], a[t], 1, acc + 3, 2, acc + 8);
    }
    dump_all(j, 0, ub, ur, n, "sendrecv_ub.npy");
    dump_all(j, 1, acc, ar, n, "sendrecv_acc.npy");
}

/* barrier: three phases; in phase k core i loads L = 1 + 4((i + k) mod C) rows of y and
   squares them on the VPU (vop mul), then every core executes `barrier`; so the cores arrive
   at different times. The whole area starts as x. */
/* random-board: constrained-random programs that cannot deadlock (tpu/randprog.h,
   tpu_randprog_board): every core must end done ("expect done" in job.txt). Each core loads
   4 KiB of its own bf16 data at 0x1000 and dumps the first 64 KiB of its host memory. */
static void part_random(struct bjob *j)
{
    const struct bcfg *c = j->c;
    tpu_randprog_cfg_t rc;
    memset(&rc, 0, sizeof rc);
    rc.geom = tpu_core_geom_default(c->n);
    rc.geom.ub_rows = c->ub_rows;
    rc.geom.acc_rows = c->acc_rows;
    rc.geom.wmem_rows = c->wmem_rows;
    rc.geom.imem_insns = c->imem_insns;
    rc.host_bytes = 1u << 20; /* the job's --hostmem-mib is 1 */
    rc.seed = c->seed;
    rc.coll_rows = c->coll_rows;
    rc.no_loops = c->no_loops;
    char *texts[MAXC];
    size_t insns[MAXC];
    if (tpu_randprog_board(&rc, c->cores, texts, insns) != 0)
        die("random-board: cannot generate the programs for these sizes (each memory needs N "
            "rows, IMEM at least 10 instructions)");
    uint16_t **x = bf16_data(c, 77, 1, 2048);
    load_input(j, "in.npy", 0, 1, 2048, (void *const *)x);
    for (unsigned i = 0; i < c->cores; i++) {
        fputs(texts[i], j->prog[i]);
        j->insns[i] += (unsigned)insns[i];
        free(texts[i]);
        free(x[i]);
        fprintf(j->args[i], "--dump 0x0=host.npy:bf16:1x32768\n");
    }
    free(x);
    meta(j, "expect done");
}

static void part_barrier(struct bjob *j)
{
    const struct bcfg *c = j->c;
    unsigned n = c->n, C = c->cores, lmax = 1 + 4 * (C - 1), rows = 3 * lmax;
    uint32_t **x = f32_data(c, 41, rows, n), **y = f32_data(c, 42, rows, n);
    uint64_t hx = load_input(j, "barrier_x.npy", 1, rows, n, (void *const *)x);
    uint64_t hy = load_input(j, "barrier_y.npy", 1, rows, n, (void *const *)y);
    free_per_core(c, x);
    free_per_core(c, y);
    unsigned acc = row_alloc(j, 1, rows, "barrier");
    emit_all(j, "# barrier: ACC rows %u..%u; phase k works on rows %u + k*%u ..", acc,
             acc + rows - 1, acc, lmax);
    for (unsigned i = 0; i < C; i++)
        dma_load(j, i, 1, acc, rows, n, "barrier_x.npy", hx, n, 0);
    for (unsigned k = 0; k < 3; k++) {
        for (unsigned i = 0; i < C; i++) {
            unsigned l = 1 + 4 * ((i + k) % C), row = acc + k * lmax;
            dma_load(j, i, 1, row, l, n, "barrier_y.npy", hy, n, k * lmax);
            emit(j, i, "vop mul a=acc:%u b=acc:%u dst=acc:%u rows=%u", row, row, row, l);
            meta(j, "vop %u mul acc %u acc %u 0 acc %u %u", i, row, row, row, l);
        }
        emit_all(j, "barrier");
        meta(j, "barrier");
    }
    dump_all(j, 1, acc, rows, n, "barrier.npy");
}

/* dptrain: one data-parallel training step of a linear layer (docs: "Generated board jobs") */
static void part_dptrain(struct bjob *j)
{
    const struct bcfg *c = j->c;
    unsigned n = c->n, b = c->b, k = c->k, no = c->nout;
    if (b > n)
        die("dptrain --m %u (the per-core batch b), expected at most N = %u", b, n);
    if (no > n)
        die("dptrain --nout %u, expected at most N = %u", no, n);
    if (c->wmem_rows < n)
        die("--wmem-rows %u holds no weight tile, expected at least N = %u", c->wmem_rows, n);
    uint16_t **xt = bf16_data(c, 51, k, b), **dy = bf16_data(c, 52, b, no);
    uint32_t **w = alloc_per_core32(c, (size_t)k * no), **lr = alloc_per_core32(c, n);
    uint32_t **w0 = f32_data(c, 53, k, no);
    for (unsigned i = 0; i < c->cores; i++) {
        memcpy(w[i], w0[0], (size_t)k * no * sizeof **w); /* the same master weights */
        for (unsigned l = 0; l < n; l++)
            lr[i][l] = 0x3C23D70Au; /* 0.01f */
    }
    free_per_core(c, w0);
    uint64_t hxt = load_input(j, "dptrain_xt.npy", 0, k, b, (void *const *)xt);
    uint64_t hdy = load_input(j, "dptrain_dy.npy", 0, b, no, (void *const *)dy);
    uint64_t hw = load_input(j, "dptrain_w.npy", 1, k, no, (void *const *)w);
    uint64_t hlr = load_input(j, "dptrain_lr.npy", 1, 1, n, (void *const *)lr);
    free_per_core(c, xt);
    free_per_core(c, dy);
    free_per_core(c, w);
    free_per_core(c, lr);
    if (b < n && j->negz == 0) {
        uint16_t z[4] = { 0x8000, 0x8000, 0x8000, 0x8000 };
        uint16_t *zz[MAXC];
        for (unsigned i = 0; i < c->cores; i++)
            zz[i] = z;
        j->negz = load_input(j, "negzero.npy", 0, 1, 4, (void *const *)zz);
    }
    unsigned ub = row_alloc(j, 0, k, "dptrain X^T"), wrow = row_alloc(j, 1, k, "dptrain W");
    unsigned lrow = row_alloc(j, 1, 1, "dptrain lr"), g = row_alloc(j, 1, k, "dptrain dW");
    emit_all(j, "# dptrain: X_c^T (K=%u x b=%u) -> UB %u.., dY_c (b x N'=%u) -> WMEM 0.., "
             "W (K x N') -> ACC %u.., lr row ACC %u, dW -> ACC %u..", k, b, ub, no, wrow, lrow, g);
    for (unsigned i = 0; i < c->cores; i++) {
        dma_load(j, i, 0, ub, k, b, "dptrain_xt.npy", hxt, b, 0);
        emit(j, i, "dma_in wmem row=0 rows=%u cols=%u addr=0x%llx stride=%u", b, no,
             (unsigned long long)hdy, 2 * no);
        meta(j, "load %u wmem 0 %u %u core%u_dptrain_dy.npy 0", i, b, no, i);
        if (b < n) {
            emit(j, i, "dma_in wmem row=%u rows=%u cols=1 addr=0x%llx stride=0", b, n - b,
                 (unsigned long long)j->negz);
            meta(j, "fill %u wmem %u %u 1 0x8000", i, b, n - b);
        }
        dma_load(j, i, 1, wrow, k, no, "dptrain_w.npy", hw, no, 0);
        dma_load(j, i, 1, lrow, 1, n, "dptrain_lr.npy", hlr, n, 0);
    }
    emit_all(j, "lw w=0");
    emit_all(j, "matmul ub=%u acc=%u rows=%u", ub, g, k);
    for (unsigned i = 0; i < c->cores; i++)
        meta(j, "matmul %u %u 0 %u %u", i, ub, g, k);
    emit_all(j, "allreduce acc row=%u rows=%u", g, k);
    meta(j, "allreduce %u %u topology", g, k);
    dump_all(j, 1, g, k, no, "dptrain_dw.npy");
    emit_all(j, "vop mul a=acc:%u b=acc:%u bcast dst=acc:%u rows=%u", g, lrow, g, k);
    emit_all(j, "vop sub a=acc:%u b=acc:%u dst=acc:%u rows=%u", wrow, g, wrow, k);
    for (unsigned i = 0; i < c->cores; i++) {
        meta(j, "vop %u mul acc %u acc %u 1 acc %u %u", i, g, lrow, g, k);
        meta(j, "vop %u sub acc %u acc %u 0 acc %u %u", i, wrow, g, wrow, k);
    }
    dump_all(j, 1, wrow, k, no, "dptrain_w.npy");
}

/* ---- options and main ---- */

static const char *const kinds[] = { "allreduce", "bcast", "sendrecv", "barrier", "dptrain",
                                     "collall", "random-board", NULL };

int tpu_mkprog_is_board_kind(const char *kind)
{
    for (unsigned k = 0; kinds[k]; k++)
        if (!strcmp(kind, kinds[k]))
            return 1;
    return 0;
}

/* the shape rule of gen --topology (docs/board.md "Topology and core numbering") */
static void parse_topology(struct bcfg *c, const char *t)
{
    if (t == NULL)
        t = c->cores == 8 ? "torus:2x4" : "ring";
    if (!strcmp(t, "ring")) {
        c->rows = 1;
        c->cols = c->cores;
    } else if (!strcmp(t, "torus")) {
        unsigned r = 1;
        for (unsigned d = 1; d * d <= c->cores; d++)
            if (c->cores % d == 0)
                r = d;
        c->rows = r;
        c->cols = c->cores / r;
    } else {
        unsigned r, s;
        char tail;
        if (strncmp(t, "torus:", 6) || sscanf(t + 6, "%ux%u%c", &r, &s, &tail) != 2 ||
            strspn(t + 6, "0123456789x") != strlen(t + 6))
            die("--topology '%s', expected ring, torus or torus:RxS", t);
        if (r < 1 || s < 1 || r * s != c->cores)
            die("--topology '%s': R*S = %u must equal --cores %u (allowed: torus:RxS, R, S >= 1)",
                t, r * s, c->cores);
        c->rows = r;
        c->cols = s;
    }
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tpu-mkprog KIND --cores C --mxu N -o DIR [options]   (board kinds)\n"
        "  KIND          allreduce | bcast | sendrecv | barrier | dptrain | collall |\n"
        "                random-board (constrained-random programs that cannot deadlock;\n"
        "                --seed; every core must end done)\n"
        "  --cores C     cores of the board (1 .. 64, default 8; sendrecv and collall >= 2)\n"
        "  --topology T  ring | torus | torus:RxS (default gen's: torus:2x4 at C = 8, else ring)\n"
        "  --mxu N       MXU size (1 .. 256)\n"
        "  -o DIR        output folder (created): core<i>.s, core<i>.args, core<i>_*.npy, job.txt\n"
        "  --m B         dptrain: rows of the batch per core (1 .. N, default N)\n"
        "  --k K         dptrain: inputs of the layer (default 2N)\n"
        "  --nout N'     dptrain: outputs of the layer (1 .. N, default N)\n"
        "  --seed S      random seed (default 1)\n"
        "  --dist D      bf16 data of sim/matgen.h: uniform (default), wide, normal, ints, edges\n"
        "  --ub-rows R --acc-rows R --wmem-rows R   memory sizes (default gen's: 4096, 2048, 8N)\n"
        "  --imem-insns I    instructions each program must fit in (default 1024)\n"
        "  --coll-rows R random-board: rows a round's collective moves at most (1 .. 65535,\n"
        "                default 2048: one round in four moves hundreds; 8 keeps them small)\n"
        "  --no-loops    random-board: straight-line programs (no loop nest, no collective\n"
        "                in a loop)\n"
        "Run with tpu-board-run --mxu N --cores C --topology T --job DIR --out OUT.\n");
}

int tpu_mkprog_board_main(int argc, char **argv)
{
    static const tpu_cli_opt_t opts[] = {
        { "mxu", 0, TPU_CLI_VALUE, 'n' },      { "m", 0, TPU_CLI_VALUE, 'm' },
        { "k", 0, TPU_CLI_VALUE, 'k' },        { "nout", 0, TPU_CLI_VALUE, 'N' },
        { "seed", 0, TPU_CLI_VALUE, 's' },     { "dist", 0, TPU_CLI_VALUE, 'd' },
        { "cores", 0, TPU_CLI_VALUE, 'C' },    { "topology", 0, TPU_CLI_VALUE, 'T' },
        { "ub-rows", 0, TPU_CLI_VALUE, 'u' },  { "acc-rows", 0, TPU_CLI_VALUE, 'a' },
        { "wmem-rows", 0, TPU_CLI_VALUE, 'w' },
        { "imem-insns", 0, TPU_CLI_VALUE, 'I' },
        { "output", 'o', TPU_CLI_VALUE, 'o' }, { "help", 'h', 0, 'h' },
        { "coll-rows", 0, TPU_CLI_VALUE, 'R' },
        { "no-loops", 0, 0, 'X' },
        { NULL, 0, 0, 0 }
    };
    struct bcfg c;
    const char *topo = NULL;
    memset(&c, 0, sizeof c);
    c.dist = "uniform";
    c.seed = 1;
    c.cores = 8;
    int nkinds = 0, help = 0;
    tpu_cli_t cl;
    tpu_cli_init(&cl, argc, argv, opts);
    for (;;) {
        const char *name, *optarg;
        char err[1024];
        int ch = tpu_cli_next(&cl, &name, &optarg, err, sizeof err);
        if (ch == TPU_CLI_END)
            break;
        switch (ch) {
        case TPU_CLI_ERROR: die("%s", err); break;
        case TPU_CLI_POSITIONAL: c.kind = optarg; nkinds++; break;
        case 'n': c.n = parse_u("--mxu", optarg, 1, TPU_LIM_MXU_MAX); break;
        case 'm': c.b = parse_u("--m", optarg, 1, 256); break;
        case 'k': c.k = parse_u("--k", optarg, 1, 65535); break;
        case 'N': c.nout = parse_u("--nout", optarg, 1, 256); break;
        case 'C': c.cores = parse_u("--cores", optarg, 1, MAXC); break;
        case 'T': topo = optarg; break;
        case 's': {
            uint64_t v;
            if (tpu_cli_addr("--seed", optarg, 0, UINT64_MAX - 1, &v, err, sizeof err))
                die("%s", err);
            c.seed = v;
            break;
        }
        case 'd': c.dist = optarg; break;
        case 'R': c.coll_rows = parse_u("--coll-rows", optarg, 1, 65535); break;
        case 'X': c.no_loops = 1; break;
        case 'u': c.ub_rows = parse_u("--ub-rows", optarg, 1, TPU_LIM_MEM_ROWS_MAX); break;
        case 'a': c.acc_rows = parse_u("--acc-rows", optarg, 1, TPU_LIM_MEM_ROWS_MAX); break;
        case 'w': c.wmem_rows = parse_u("--wmem-rows", optarg, 1, TPU_LIM_MEM_ROWS_MAX); break;
        case 'I': c.imem_insns = parse_u("--imem-insns", optarg, 1, TPU_LIM_IMEM_INSNS_MAX); break;
        case 'o': c.dir = optarg; break;
        default: help = 1; break;
        }
    }
    if (help) {
        usage(stdout);
        return 0;
    }
    if (nkinds != 1) {
        fprintf(stderr, "%s: error: %s, expected one KIND\n", prog_name,
                nkinds == 0 ? "no KIND" : "several KINDs");
        return 2;
    }
    int kind = 0;
    while (kinds[kind] && strcmp(kinds[kind], c.kind))
        kind++;
    if (kinds[kind] == NULL)
        die("unknown KIND '%s', expected allreduce, bcast, sendrecv, barrier, dptrain or "
            "collall", c.kind);
    if (c.n == 0)
        die("no --mxu, expected --mxu N");
    if (c.dir == NULL)
        die("no -o, expected -o DIR");
    if (!tpu_matgen_valid(c.dist))
        die("--dist '%s', expected uniform, wide, normal, ints or edges", c.dist);
    parse_topology(&c, topo);
    if (!c.b)
        c.b = c.n;
    if (!c.k)
        c.k = 2 * c.n;
    if (!c.nout)
        c.nout = c.n;
    if (!c.ub_rows)
        c.ub_rows = 4096;
    if (!c.acc_rows)
        c.acc_rows = 2048;
    if (!c.wmem_rows)
        c.wmem_rows = 8 * c.n;
    if (!c.imem_insns)
        c.imem_insns = 1024;
    if (c.coll_rows && strcmp(c.kind, "random-board") != 0)
        die("--coll-rows is an option of random-board, not of %s", c.kind);
    if (c.no_loops && strcmp(c.kind, "random-board") != 0)
        die("--no-loops is an option of random-board, not of %s", c.kind);
    if ((kind == 2 || kind == 5) && c.cores < 2)
        die("kind %s needs --cores >= 2 for send/recv (a core cannot send to itself), got 1",
            c.kind);
    die_status = 1;
    if (mkdir(c.dir, 0777) == 0)
        made_dir = c.dir;
    else if (errno != EEXIST)
        die("-o '%s': cannot create the folder: %s", c.dir, strerror(errno));

    struct bjob j;
    memset(&j, 0, sizeof j);
    j.c = &c;
    j.host_next = 0x1000;
    char path[4096];
    snprintf(path, sizeof path, "%s/job.txt", c.dir);
    created(path);
    if ((j.meta = fopen(path, "w")) == NULL)
        die("%s: cannot create: %s", path, strerror(errno));
    for (unsigned i = 0; i < c.cores; i++) {
        snprintf(path, sizeof path, "%s/core%u.s", c.dir, i);
        created(path);
        if ((j.prog[i] = fopen(path, "w")) == NULL)
            die("%s: cannot create: %s", path, strerror(errno));
        snprintf(path, sizeof path, "%s/core%u.args", c.dir, i);
        created(path);
        if ((j.args[i] = fopen(path, "w")) == NULL)
            die("%s: cannot create: %s", path, strerror(errno));
        fprintf(j.prog[i], "# generated by tpu-mkprog %s --cores %u --topology torus:%ux%u "
                "--mxu %u --seed %llu --dist %s: core %u\n", c.kind, c.cores, c.rows, c.cols,
                c.n, (unsigned long long)c.seed, c.dist, i);
        fprintf(j.args[i], "# tpu-mkprog %s: core %u of a board job (paths relative to this "
                "file)\n--prog core%u.s\n", c.kind, i, i);
    }
    meta(&j, "kind %s\nmxu %u\ncores %u\nshape %u %u\nseed %llu\ndist %s", c.kind, c.n, c.cores,
         c.rows, c.cols, (unsigned long long)c.seed, c.dist);
    if (kind == 4 || kind == 5)
        meta(&j, "dptrain b %u k %u nout %u", c.b, c.k, c.nout);
    switch (kind) {
    case 0: part_allreduce(&j); break;
    case 1: part_bcast(&j); break;
    case 2: part_sendrecv(&j); break;
    case 3: part_barrier(&j); break;
    case 4: part_dptrain(&j); break;
    case 6: part_random(&j); break;
    default:
        part_allreduce(&j);
        part_bcast(&j);
        part_sendrecv(&j);
        part_barrier(&j);
        part_dptrain(&j);
        break;
    }
    emit_all(&j, "halt");
    unsigned mib = (unsigned)((j.host_next + (1u << 20) - 1) >> 20);
    for (unsigned i = 0; i < c.cores; i++) {
        if (j.insns[i] > c.imem_insns)
            die("core %u's program has %u instructions, more than IMEM's %u (--imem-insns)", i,
                j.insns[i], c.imem_insns);
        fprintf(j.args[i], "--hostmem-mib %u\n", mib ? mib : 1);
        if (ferror(j.prog[i]) | fclose(j.prog[i]) | ferror(j.args[i]) | fclose(j.args[i]))
            die("%s: write failed: %s", c.dir, strerror(errno));
    }
    if (ferror(j.meta) | fclose(j.meta))
        die("%s/job.txt: write failed: %s", c.dir, strerror(errno));
    return 0;
}
