/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-mkprog: writes a core test program (prog.s), its input arrays (.npy) and the job
   options (job.args: --load/--dump lines, paths relative to the output folder) for a kind of
   job at any N. It writes no expected results: the model computes them. Layouts are those of
   docs/isa.md "Data layout of the generated programs". Random data: sim/matgen.h (seeded,
   the same bits on every host). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tpu/matgen.h"
#include "tpu/cli.h"
#include "tpu/isa.h"
#include "tpu/npy.h"
#include "tpu/randprog.h"

#include "tpu_mkprog_board.h"

struct cfg {
    const char *kind, *dist, *dir;
    unsigned n, m, k, nout, nhid;
    uint64_t seed;
    unsigned ub_rows, acc_rows, wmem_rows;
    unsigned hostmem_mib;
    unsigned imem_insns;
    int error;          /* random: the error code the program must end in; -1: by the seed */
    int loop_error;     /* random: --loop-error (codes 2 and 3 from a loop) */
    int no_loops;       /* random: --no-loops (straight-line programs) */
};

struct job {
    const struct cfg *c;
    FILE *prog, *args, *meta;
    uint64_t host_next;  /* next free host address */
    unsigned ub_next, acc_next; /* next free on-chip rows */
    unsigned wslot;      /* weight tiles streamed so far (slot = count % slots) */
    unsigned insns;      /* instructions written */
    int failed;
};

static const char *prog_name = "tpu-mkprog";
static char tmp_paths[3][4096]; /* removed when the job fails */
static char **written;          /* the .npy files written so far: removed when the job fails */
static size_t nwritten;
static const char *made_dir;    /* the output folder, when this run created it */
static int die_status = 2;      /* 2 while the arguments are checked, then 1 */

static void cleanup(void)
{
    for (int i = 0; i < 3; i++)
        if (tmp_paths[i][0])
            unlink(tmp_paths[i]);
    for (size_t i = 0; i < nwritten; i++)
        unlink(written[i]);
    if (made_dir)
        rmdir(made_dir);
}

static void die(const char *fmt, ...)
{
    va_list ap;
    cleanup();
    fprintf(stderr, "%s: error: ", prog_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(die_status);
}

/* a usage error: one line, exit 2, nothing written */
static void die_usage(const char *msg)
{
    cleanup();
    fprintf(stderr, "%s: error: %s\n", prog_name, msg);
    exit(2);
}

static unsigned cdiv(unsigned a, unsigned b) { return (a + b - 1) / b; }

static uint64_t host_alloc(struct job *j, uint64_t bytes)
{
    uint64_t a = j->host_next;
    j->host_next = (a + bytes + 4095) & ~(uint64_t)4095;
    if (j->host_next > ((uint64_t)j->c->hostmem_mib << 20))
        die("the job needs %llu bytes of host memory, more than --hostmem-mib %u",
            (unsigned long long)j->host_next, j->c->hostmem_mib);
    return a;
}

static unsigned ub_alloc(struct job *j, uint64_t rows, const char *what)
{
    if (j->ub_next + rows > j->c->ub_rows)
        die("%s needs UB rows %u..%llu, but UB has %u rows (--ub-rows); use a smaller --m/--k",
            what, j->ub_next, (unsigned long long)(j->ub_next + rows - 1), j->c->ub_rows);
    unsigned r = j->ub_next;
    j->ub_next += (unsigned)rows;
    return r;
}

static unsigned acc_alloc(struct job *j, uint64_t rows, const char *what)
{
    if (j->acc_next + rows > j->c->acc_rows)
        die("%s needs ACC rows %u..%llu, but ACC has %u rows (--acc-rows); use a smaller --m or "
            "--nout", what, j->acc_next, (unsigned long long)(j->acc_next + rows - 1),
            j->c->acc_rows);
    unsigned r = j->acc_next;
    j->acc_next += (unsigned)rows;
    return r;
}

static void ins(struct job *j, const char *fmt, ...)
{
    va_list ap;
    if (fmt[0] != '#')
        j->insns++;
    va_start(ap, fmt);
    vfprintf(j->prog, fmt, ap);
    va_end(ap);
    fputc('\n', j->prog);
}

static void write_npy(struct job *j, const char *name, tpu_npy_dtype_t t, size_t rows,
                      size_t cols, const void *data)
{
    char path[4096], err[512];
    tpu_npy_t a;
    snprintf(path, sizeof path, "%s/%s", j->c->dir, name);
    if (tpu_npy_alloc(&a, t, 2, rows, cols))
        die("out of memory");
    memcpy(a.data, data, rows * cols * tpu_npy_elem_size(t));
    char **w = realloc(written, (nwritten + 1) * sizeof *w);
    if (w == NULL || (w[nwritten] = strdup(path)) == NULL)
        die("out of memory");
    written = w;
    nwritten++;
    if (tpu_npy_write(path, &a, err, sizeof err))
        die("%s", err);
    tpu_npy_free(&a);
}

/* A (m x k) and W (k x n) of one matgen problem (so the `edges` scenarios of A's rows meet
   W's column patterns); either may be NULL. Returns malloc'd raw bits. */
static void gen_pair(const struct cfg *c, uint64_t salt, size_t m, size_t k, size_t n,
                     uint16_t **a_out, uint16_t **w_out)
{
    bf16_t *a = malloc(m * k * sizeof *a), *w = malloc(k * n * sizeof *w);
    if (!a || !w)
        die("out of memory");
    if (tpu_matgen(c->dist, c->seed * 0x9E3779B97F4A7C15ull + salt, m, k, n, a, w) != TPU_OK)
        die("matgen failed");
    uint16_t **outs[2] = { a_out, w_out };
    bf16_t *ins_[2] = { a, w };
    size_t cnt[2] = { m * k, k * n };
    for (int i = 0; i < 2; i++) {
        if (outs[i] == NULL)
            continue;
        uint16_t *r = malloc(cnt[i] * sizeof *r);
        if (r == NULL)
            die("out of memory");
        for (size_t j = 0; j < cnt[i]; j++)
            r[j] = ins_[i][j].v;
        *outs[i] = r;
    }
    free(a);
    free(w);
}

/* A rows x cols bf16 input from the seed (matgen's A of an m x k x 1 problem). */
static uint16_t *gen_bf16(const struct cfg *c, uint64_t salt, size_t rows, size_t cols)
{
    uint16_t *r;
    gen_pair(c, salt, rows, cols, 1, &r, NULL);
    return r;
}

/* A k x n weight matrix (matgen's W of a 1 x k x n problem). */
static uint16_t *gen_w(const struct cfg *c, uint64_t salt, size_t k, size_t n)
{
    uint16_t *r;
    gen_pair(c, salt, 1, k, n, NULL, &r);
    return r;
}

/* Load a bf16 input to the host; returns its address. */
static uint64_t load_bf16(struct job *j, const char *name, const uint16_t *d, size_t rows,
                          size_t cols)
{
    uint64_t a = host_alloc(j, (uint64_t)rows * cols * 2);
    write_npy(j, name, TPU_NPY_U2, rows, cols, d);
    fprintf(j->args, "--load 0x%llx=%s\n", (unsigned long long)a, name);
    return a;
}

static uint64_t load_f32(struct job *j, const char *name, const uint32_t *d, size_t rows,
                         size_t cols)
{
    uint64_t a = host_alloc(j, (uint64_t)rows * cols * 4);
    write_npy(j, name, TPU_NPY_F4, rows, cols, d);
    fprintf(j->args, "--load 0x%llx=%s\n", (unsigned long long)a, name);
    return a;
}

static uint64_t dump(struct job *j, const char *name, int f32, size_t rows, size_t cols)
{
    uint64_t a = host_alloc(j, (uint64_t)rows * cols * (f32 ? 4 : 2));
    fprintf(j->args, "--dump 0x%llx=%s:%s:%zux%zu\n", (unsigned long long)a, name,
            f32 ? "f32" : "bf16", rows, cols);
    fprintf(j->meta, "output %s %s %zux%zu\n", name, f32 ? "f32" : "bf16", rows, cols);
    return a;
}

/* A matrix M x K in UB, tile-major: K-tile kt of row m at UB row base + kt*M + m. */
static unsigned act_to_ub(struct job *j, uint64_t host, unsigned m, unsigned k, const char *what)
{
    unsigned n = j->c->n, kt = cdiv(k, n);
    unsigned base = ub_alloc(j, (uint64_t)kt * m, what);
    ins(j, "# %s: %u x %u bf16 at host 0x%llx -> UB rows %u.. (K-tile kt of row m at %u + kt*%u + m)",
        what, m, k, (unsigned long long)host, base, base, m);
    for (unsigned t = 0; t < kt; t++)
        ins(j, "dma_in ub row=%u rows=%u cols=%u addr=0x%llx stride=%u", base + t * m, m,
            k - t * n < n ? k - t * n : n, (unsigned long long)(host + 2ull * t * n), 2 * k);
    return base;
}

/* The DMA of weight tile (kt, nt) of a K x NOUT matrix at host into the next WMEM slot; the
   missing rows of a partial K-tile are -0 from the host word at negz. Returns its WMEM row. */
static unsigned weight_tile_dma(struct job *j, uint64_t host, unsigned k, unsigned nout,
                                unsigned kt, unsigned nt, uint64_t negz)
{
    unsigned n = j->c->n, slots = j->c->wmem_rows / n;
    unsigned w = (j->wslot++ % slots) * n;
    unsigned kr = k - kt * n < n ? k - kt * n : n, nc = nout - nt * n < n ? nout - nt * n : n;
    ins(j, "dma_in wmem row=%u rows=%u cols=%u addr=0x%llx stride=%u", w, kr, nc,
        (unsigned long long)(host + 2ull * ((uint64_t)kt * n * nout + (uint64_t)nt * n)),
        2 * nout);
    if (kr < n)
        ins(j, "dma_in wmem row=%u rows=%u cols=1 addr=0x%llx stride=0", w + kr, n - kr,
            (unsigned long long)negz);
    return w;
}

/* C = A x W with A tile-major at UB row ub (M x K), W K x NOUT at host; C tile-major in ACC
   (N-tile nt of row m at ACC row acc + nt*M + m). Weight tiles in order nt-major, kt-minor,
   DMA'd `ahead` tiles before their lw, each lw right after the previous matmul. */
static void matmul_job(struct job *j, unsigned ub, unsigned acc, unsigned m, unsigned k,
                       unsigned nout, uint64_t w_host, uint64_t negz,
                       void (*after_nt)(struct job *, unsigned nt, void *), void *ctx)
{
    unsigned n = j->c->n, kt_n = cdiv(k, n), nt_n = cdiv(nout, n), tiles = kt_n * nt_n;
    unsigned slots = j->c->wmem_rows / n;
    unsigned ahead = slots >= 3 ? slots - 1 : 1;
    if (ahead > tiles)
        ahead = tiles;
    unsigned *wrow = malloc(tiles * sizeof *wrow);
    if (wrow == NULL)
        die("out of memory");
    ins(j, "# weights %u x %u bf16 at host 0x%llx: %u tiles of %u x %u through %u WMEM slots",
        k, nout, (unsigned long long)w_host, tiles, n, n, slots);
    for (unsigned t = 0; t < ahead; t++)
        wrow[t] = weight_tile_dma(j, w_host, k, nout, t % kt_n, t / kt_n, negz);
    ins(j, "lw w=%u", wrow[0]);
    for (unsigned t = 0; t < tiles; t++) {
        unsigned kt = t % kt_n, nt = t / kt_n;
        ins(j, "matmul ub=%u acc=%u rows=%u%s", ub + kt * m, acc + nt * m, m,
            kt ? " accumulate" : "");
        /* with one tile ahead, the next tile's DMA must come before its lw */
        if (ahead == 1 && t + 1 < tiles)
            wrow[t + 1] = weight_tile_dma(j, w_host, k, nout, (t + 1) % kt_n, (t + 1) / kt_n, negz);
        if (t + 1 < tiles)
            ins(j, "lw w=%u", wrow[t + 1]);
        if (ahead > 1 && t + ahead < tiles) {
            unsigned u = t + ahead;
            wrow[u] = weight_tile_dma(j, w_host, k, nout, u % kt_n, u / kt_n, negz);
        }
        if (kt == kt_n - 1 && after_nt)
            after_nt(j, nt, ctx);
    }
    free(wrow);
}

struct out_ctx {
    unsigned acc, m, nout, ub_out, bias_row, bias_mem;
    int relu;
    uint64_t out_host;
    int f32;
};

/* After the last K-tile of N-tile nt: C tile straight out (f32), or bias + relu into UB. */
static void after_nt_out(struct job *j, unsigned nt, void *p)
{
    struct out_ctx *o = p;
    unsigned n = j->c->n, nc = o->nout - nt * n < n ? o->nout - nt * n : n;
    unsigned a = o->acc + nt * o->m;
    if (o->f32) {
        ins(j, "dma_out acc row=%u rows=%u cols=%u addr=0x%llx stride=%u", a, o->m, nc,
            (unsigned long long)(o->out_host + 4ull * nt * n), 4 * o->nout);
        return;
    }
    if (o->bias_mem != 9)
        ins(j, "vop add a=acc:%u b=%s:%u bcast dst=acc:%u rows=%u", a,
            o->bias_mem ? "acc" : "ub", o->bias_row + nt, a, o->m);
    if (o->relu) {
        ins(j, "vop relu a=acc:%u dst=ub:%u rows=%u", a, o->ub_out + nt * o->m, o->m);
        if (o->out_host != UINT64_MAX)
            ins(j, "dma_out ub row=%u rows=%u cols=%u addr=0x%llx stride=%u",
                o->ub_out + nt * o->m, o->m, nc,
                (unsigned long long)(o->out_host + 2ull * nt * n), 2 * o->nout);
    }
}

static uint64_t negz_word(struct job *j)
{
    uint16_t v[4] = { 0x8000, 0x8000, 0x8000, 0x8000 };
    return load_bf16(j, "negzero.npy", v, 1, 4);
}

/* Bias vector of nout values as rows of N lanes (tile nt in row nt): to UB (bf16) or ACC
   (fp32 bits of the bf16 values). */
static unsigned bias_rows(struct job *j, const char *name, unsigned nout, int acc,
                          uint64_t salt)
{
    unsigned n = j->c->n, nt = cdiv(nout, n);
    uint16_t *b = gen_bf16(j->c, salt, 1, nout);
    unsigned row;
    uint64_t h;
    if (acc) {
        uint32_t *f = malloc(nout * sizeof *f);
        if (f == NULL)
            die("out of memory");
        for (unsigned i = 0; i < nout; i++)
            f[i] = (uint32_t)b[i] << 16;
        h = load_f32(j, name, f, 1, nout);
        free(f);
        row = acc_alloc(j, nt, name);
    } else {
        h = load_bf16(j, name, b, 1, nout);
        row = ub_alloc(j, nt, name);
    }
    free(b);
    ins(j, "# bias %s (%u values) -> %s rows %u..%u, tile nt in row %u + nt", name, nout,
        acc ? "ACC" : "UB", row, row + nt - 1, row);
    for (unsigned t = 0; t < nt; t++)
        ins(j, "dma_in %s row=%u rows=1 cols=%u addr=0x%llx stride=0", acc ? "acc" : "ub",
            row + t, nout - t * n < n ? nout - t * n : n,
            (unsigned long long)(h + (acc ? 4ull : 2ull) * t * n));
    return row;
}

static void kind_matmul(struct job *j, int dense)
{
    const struct cfg *c = j->c;
    unsigned m = c->m, k = c->k, nout = c->nout, n = c->n;
    uint16_t *a, *w;
    gen_pair(c, 1, m, k, nout, &a, &w);
    uint64_t ha = load_bf16(j, "a.npy", a, m, k), hw = load_bf16(j, "w.npy", w, k, nout);
    uint64_t negz = negz_word(j);
    free(a);
    free(w);
    fprintf(j->meta, "input a.npy a %ux%u\ninput w.npy w %ux%u\n", m, k, k, nout);
    struct out_ctx o;
    memset(&o, 0, sizeof o);
    o.m = m;
    o.nout = nout;
    if (dense) {
        o.bias_mem = TPU_MEM_UB;
        o.bias_row = bias_rows(j, "bias.npy", nout, 0, 3);
        fprintf(j->meta, "input bias.npy bias ub 1x%u\n", nout);
    }
    unsigned ub = act_to_ub(j, ha, m, k, "A");
    o.acc = acc_alloc(j, (uint64_t)cdiv(nout, n) * m, "C");
    if (dense) {
        o.relu = 1;
        o.ub_out = ub_alloc(j, (uint64_t)cdiv(nout, n) * m, "relu output");
        o.out_host = dump(j, "out.npy", 0, m, nout);
    } else {
        o.f32 = 1;
        o.out_host = dump(j, "out.npy", 1, m, nout);
    }
    matmul_job(j, ub, o.acc, m, k, nout, hw, negz, after_nt_out, &o);
    ins(j, "halt");
}

static void kind_mlp(struct job *j)
{
    const struct cfg *c = j->c;
    unsigned m = c->m, k = c->k, h1 = c->nhid, nout = c->nout, n = c->n;
    uint16_t *a, *w1, *w2 = gen_w(c, 4, h1, nout);
    gen_pair(c, 1, m, k, h1, &a, &w1);
    uint64_t ha = load_bf16(j, "a.npy", a, m, k), hw1 = load_bf16(j, "w1.npy", w1, k, h1);
    uint64_t hw2 = load_bf16(j, "w2.npy", w2, h1, nout);
    uint64_t negz = negz_word(j);
    free(a);
    free(w1);
    free(w2);
    fprintf(j->meta, "input a.npy a %ux%u\ninput w1.npy w1 %ux%u\ninput w2.npy w2 %ux%u\n", m,
            k, k, h1, h1, nout);
    fprintf(j->meta, "input b1.npy bias1 ub 1x%u\ninput b2.npy bias2 acc 1x%u\n", h1, nout);
    struct out_ctx o;
    memset(&o, 0, sizeof o);
    o.m = m;
    o.nout = h1;
    o.bias_mem = TPU_MEM_UB;
    o.bias_row = bias_rows(j, "b1.npy", h1, 0, 3);
    unsigned b2 = bias_rows(j, "b2.npy", nout, 1, 5);
    unsigned ub = act_to_ub(j, ha, m, k, "A");
    o.acc = acc_alloc(j, (uint64_t)cdiv(h1, n) * m, "layer 1 C");
    o.relu = 1;
    o.ub_out = ub_alloc(j, (uint64_t)cdiv(h1, n) * m, "layer 1 output H");
    o.out_host = UINT64_MAX;
    ins(j, "# layer 1: H = relu(A x W1 + b1), H tile-major in UB = layer 2's activations");
    matmul_job(j, ub, o.acc, m, k, h1, hw1, negz, after_nt_out, &o);
    struct out_ctx o2;
    memset(&o2, 0, sizeof o2);
    o2.m = m;
    o2.nout = nout;
    o2.bias_mem = TPU_MEM_ACC;
    o2.bias_row = b2;
    o2.acc = acc_alloc(j, (uint64_t)cdiv(nout, n) * m, "layer 2 C");
    ins(j, "# layer 2: Z = H x W2 + b2 (bias broadcast from ACC), then softmax per row");
    matmul_job(j, o.ub_out, o2.acc, m, h1, nout, hw2, negz, after_nt_out, &o2);
    unsigned nt = cdiv(nout, n);
    unsigned y = ub_alloc(j, (uint64_t)nt * m, "softmax output");
    uint64_t hy = dump(j, "out.npy", 0, m, nout);
    ins(j, "softmax src=acc:%u dst=ub:%u rows=%u length=%u chunk_stride=%u row_stride=1",
        o2.acc, y, m, nout, m);
    for (unsigned t = 0; t < nt; t++)
        ins(j, "dma_out ub row=%u rows=%u cols=%u addr=0x%llx stride=%u", y + t * m, m,
            nout - t * n < n ? nout - t * n : n, (unsigned long long)(hy + 2ull * t * n),
            2 * nout);
    ins(j, "halt");
}

/* Every instruction, every VPU op, every reduction, dma to and from every allowed memory,
   broadcast and elementwise binary ops from the same and from different memories. */
static void kind_allops(struct job *j)
{
    const struct cfg *c = j->c;
    unsigned m = c->m, n = c->n;
    if (m < 2)
        die("allops needs --m >= 2, got %u", m);
    uint16_t *x, *w, *yb = gen_bf16(c, 3, m, n);
    gen_pair(c, 1, m, n, n, &x, &w);
    uint32_t *y = malloc((size_t)m * n * sizeof *y);
    if (y == NULL)
        die("out of memory");
    for (size_t i = 0; i < (size_t)m * n; i++)
        y[i] = (uint32_t)yb[i] << 16 | (uint32_t)(yb[(i * 7 + 3) % ((size_t)m * n)] & 0xFF);
    uint64_t hx = load_bf16(j, "x.npy", x, m, n), hw = load_bf16(j, "w.npy", w, n, n);
    uint64_t hy = load_f32(j, "y.npy", y, m, n);
    fprintf(j->meta, "input x.npy x ub %ux%u\ninput w.npy w wmem %ux%u\ninput y.npy y acc %ux%u\n",
            m, n, n, n, m, n);
    free(x);
    free(w);
    free(yb);
    free(y);
    unsigned ux = ub_alloc(j, m, "X"), ay = acc_alloc(j, m, "Y");
    unsigned ac = acc_alloc(j, m, "C");
    ins(j, "# inputs: X -> UB %u, Y -> ACC %u, W -> WMEM 0", ux, ay);
    ins(j, "dma_in ub row=%u rows=%u cols=%u addr=0x%llx stride=%u", ux, m, n,
        (unsigned long long)hx, 2 * n);
    ins(j, "dma_in acc row=%u rows=%u cols=%u addr=0x%llx stride=%u", ay, m, n,
        (unsigned long long)hy, 4 * n);
    ins(j, "dma_in wmem row=0 rows=%u cols=%u addr=0x%llx stride=%u", n, n,
        (unsigned long long)hw, 2 * n);
    ins(j, "nop");
    ins(j, "lw w=0");
    ins(j, "matmul ub=%u acc=%u rows=%u", ux, ac, m);
    ins(j, "matmul ub=%u acc=%u rows=%u accumulate", ux, ac, m);
    ins(j, "sync");
    /* results: name, memory, first row */
    struct res { char name[24]; int acc; unsigned row, rows; } r[32];
    unsigned nr = 0;
#define NEWRES(nm, isacc, nrows) (snprintf(r[nr].name, sizeof r[nr].name, "%s", nm), \
        r[nr].acc = (isacc), r[nr].rows = (nrows), \
        r[nr].row = (isacc) ? acc_alloc(j, nrows, nm) : ub_alloc(j, nrows, nm), r[nr++].row)
    unsigned t;
    t = NEWRES("add_acc_ub", 1, m);
    ins(j, "vop add a=acc:%u b=ub:%u dst=acc:%u rows=%u", ac, ux, t, m);
    t = NEWRES("sub_acc_acc", 1, m);
    ins(j, "vop sub a=acc:%u b=acc:%u dst=acc:%u rows=%u", ay, ac, t, m);
    t = NEWRES("mul_ub_ub", 0, m);
    ins(j, "vop mul a=ub:%u b=ub:%u dst=ub:%u rows=%u", ux, ux + 1, t, m - 1);
    ins(j, "vop mul a=ub:%u b=ub:%u dst=ub:%u rows=1", ux + m - 1, ux, t + m - 1);
    t = NEWRES("max_bcast_ub", 1, m);
    ins(j, "vop max a=acc:%u b=ub:%u bcast dst=acc:%u rows=%u", ac, ux + 1, t, m);
    t = NEWRES("min_bcast_acc", 0, m);
    ins(j, "vop min a=acc:%u b=acc:%u bcast dst=ub:%u rows=%u", ay, ac, t, m);
    t = NEWRES("add_bcast_ub_ub", 0, m);
    ins(j, "vop add a=ub:%u b=ub:%u bcast dst=ub:%u rows=%u", ux, ux + m - 1, t, m);
    t = NEWRES("cvt_acc_ub", 0, m);
    ins(j, "vop cvt a=acc:%u dst=ub:%u rows=%u", ac, t, m);
    t = NEWRES("cvt_ub_acc", 1, m);
    ins(j, "vop cvt a=ub:%u dst=acc:%u rows=%u", ux, t, m);
    t = NEWRES("relu", 1, m);
    ins(j, "vop relu a=acc:%u dst=acc:%u rows=%u", ay, t, m);
    ins(j, "vop relu a=acc:%u dst=acc:%u rows=%u", t, t, m);
    t = NEWRES("exp", 0, m);
    ins(j, "vop exp a=ub:%u dst=ub:%u rows=%u", ux, t, m);
    t = NEWRES("tanh", 1, m);
    ins(j, "vop tanh a=acc:%u dst=acc:%u rows=%u", ac, t, m);
    t = NEWRES("sigmoid", 0, m);
    ins(j, "vop sigmoid a=acc:%u dst=ub:%u rows=%u", ay, t, m);
    t = NEWRES("gelu", 1, m);
    ins(j, "vop gelu a=ub:%u dst=acc:%u rows=%u", ux, t, m);
    t = NEWRES("recip", 1, m);
    ins(j, "vop recip a=acc:%u dst=acc:%u rows=%u", ay, t, m);
    /* reductions: logical rows of length 2N-1 (2 chunks, the last masked), overlapping */
    unsigned g = m - 1, len = 2 * n - 1 > 0 ? 2 * n - 1 : 1, dr = cdiv(g, n);
    if (n == 1)
        len = 2;
    t = NEWRES("vred_sum", 0, dr);
    ins(j, "vred sum src=acc:%u dst=ub:%u rows=%u length=%u chunk_stride=1 row_stride=1", ac, t,
        g, len);
    t = NEWRES("vred_max", 1, dr);
    ins(j, "vred max src=ub:%u dst=acc:%u rows=%u length=%u chunk_stride=1 row_stride=1", ux, t,
        g, len);
    t = NEWRES("vred_min", 1, dr);
    ins(j, "vred min src=acc:%u dst=acc:%u rows=%u length=%u chunk_stride=1 row_stride=1", ay, t,
        g, len);
    /* softmax: G = m rows of length N + ceil(N/2) over a 2m-row ACC scratch copy */
    unsigned sm = acc_alloc(j, 2ull * m, "softmax scratch");
    ins(j, "vop add a=acc:%u b=acc:%u dst=acc:%u rows=%u", ac, ay, sm, m);
    ins(j, "vop sub a=acc:%u b=ub:%u dst=acc:%u rows=%u", ay, ux, sm + m, m);
    unsigned slen = n + cdiv(n, 2);
    t = NEWRES("softmax", 0, 2 * m);
    ins(j, "softmax src=acc:%u dst=ub:%u rows=%u length=%u chunk_stride=%u row_stride=1", sm, t,
        m, slen, m);
    ins(j, "sync");
    ins(j, "# every result out: UB as bf16, ACC as f32 (the last column of each left out)");
    uint64_t hc = dump(j, "matmul.npy", 1, m, n);
    ins(j, "dma_out acc row=%u rows=%u cols=%u addr=0x%llx stride=%u", ac, m, n,
        (unsigned long long)hc, 4 * n);
    for (unsigned i = 0; i < nr; i++) {
        char file[64];
        unsigned cols = n > 1 ? n - 1 : 1;
        snprintf(file, sizeof file, "%.23s.npy", r[i].name);
        uint64_t h = dump(j, file, r[i].acc, r[i].rows, cols);
        ins(j, "dma_out %s row=%u rows=%u cols=%u addr=0x%llx stride=%u", r[i].acc ? "acc" : "ub",
            r[i].row, r[i].rows, cols, (unsigned long long)h, (r[i].acc ? 4 : 2) * cols);
    }
    ins(j, "halt");
#undef NEWRES
}

/* transpose: `lw ... transpose` (docs/isa.md "Transposes for training"). dY (M x 2N, UB
   tile-major), W (N x 2N: WMEM slots 0 and 1, columns 0..N-1 and N..2N-1), X (N x N, slot 2),
   the identity I (N x N, UB). Dumps: dY_0 W_0 (plain lw), dX = dY W^T (two transposed tiles,
   the second accumulating; bank alternation and overlap as in a K-tiled matmul), X^T = I times
   the transposed load of X, and I X (plain again). */
static void kind_transpose(struct job *j)
{
    const struct cfg *c = j->c;
    unsigned m = c->m, n = c->n;
    if (c->wmem_rows < 3 * n)
        die("transpose needs 3 WMEM tiles (--wmem-rows >= %u), got %u", 3 * n, c->wmem_rows);
    uint16_t *dy, *w, *x = gen_w(c, 5, n, n), *eye = calloc((size_t)n * n, sizeof *eye);
    if (eye == NULL)
        die("out of memory");
    gen_pair(c, 1, m, 2 * n, n, &dy, NULL);
    w = gen_w(c, 3, n, 2 * n);
    for (unsigned i = 0; i < n; i++)
        eye[(size_t)i * n + i] = 0x3F80u;
    uint64_t hdy = load_bf16(j, "dy.npy", dy, m, 2 * n), hw = load_bf16(j, "w.npy", w, n, 2 * n);
    uint64_t hx = load_bf16(j, "x.npy", x, n, n), he = load_bf16(j, "eye.npy", eye, n, n);
    fprintf(j->meta, "input dy.npy dy ub %ux%u\ninput w.npy w wmem %ux%u\ninput x.npy x wmem "
            "%ux%u\ninput eye.npy eye ub %ux%u\n", m, 2 * n, n, 2 * n, n, n, n, n);
    free(dy);
    free(w);
    free(x);
    free(eye);
    unsigned udy = act_to_ub(j, hdy, m, 2 * n, "dY");
    unsigned ue = ub_alloc(j, n, "I");
    unsigned a0 = acc_alloc(j, m, "dY_0 W_0"), adx = acc_alloc(j, m, "dX");
    unsigned axt = acc_alloc(j, n, "X^T"), ax = acc_alloc(j, n, "I X");
    ins(j, "dma_in ub row=%u rows=%u cols=%u addr=0x%llx stride=%u", ue, n, n,
        (unsigned long long)he, 2 * n);
    ins(j, "# W (N x 2N) -> WMEM 0 (columns 0..N-1), %u (N..2N-1); X -> WMEM %u", n, 2 * n);
    ins(j, "dma_in wmem row=0 rows=%u cols=%u addr=0x%llx stride=%u", n, n,
        (unsigned long long)hw, 4 * n);
    ins(j, "dma_in wmem row=%u rows=%u cols=%u addr=0x%llx stride=%u", n, n, n,
        (unsigned long long)(hw + 2ull * n), 4 * n);
    ins(j, "dma_in wmem row=%u rows=%u cols=%u addr=0x%llx stride=%u", 2 * n, n, n,
        (unsigned long long)hx, 2 * n);
    ins(j, "lw w=0");
    ins(j, "matmul ub=%u acc=%u rows=%u", udy, a0, m);
    ins(j, "# dX = dY W^T: K-tile kt of dY times W_kt^T, accumulated");
    ins(j, "lw w=0 transpose");
    ins(j, "matmul ub=%u acc=%u rows=%u", udy, adx, m);
    ins(j, "lw w=%u transpose", n);
    ins(j, "matmul ub=%u acc=%u rows=%u accumulate", udy + m, adx, m);
    ins(j, "# X^T = I x (X loaded transposed); then I x X");
    ins(j, "lw w=%u transpose", 2 * n);
    ins(j, "matmul ub=%u acc=%u rows=%u", ue, axt, n);
    ins(j, "lw w=%u", 2 * n);
    ins(j, "matmul ub=%u acc=%u rows=%u", ue, ax, n);
    ins(j, "sync");
    static const char *const names[] = { "matmul.npy", "dx.npy", "xt.npy", "x_eye.npy" };
    const unsigned rows[] = { a0, adx, axt, ax }, cnt[] = { m, m, n, n };
    for (int i = 0; i < 4; i++) {
        uint64_t h = dump(j, names[i], 1, cnt[i], n);
        ins(j, "dma_out acc row=%u rows=%u cols=%u addr=0x%llx stride=%u", rows[i], cnt[i], n,
            (unsigned long long)h, 4 * n);
    }
    ins(j, "halt");
}

/* vfuncs: the VPU's log, rsqrt and erf (vop 12, 13, 14) from and to both memories, on the
   input values (signs, zeros, the --dist edge values) and on |x|-like values made by the VPU
   itself (x * x, exp(x)), as the loss (log of a softmax) and Adam (rsqrt of a second moment)
   use them; erf on the inputs as they are (the exact GELU's erf(x / sqrt 2)). */
static void kind_vfuncs(struct job *j)
{
    const struct cfg *c = j->c;
    unsigned m = c->m, n = c->n;
    uint16_t *x = gen_bf16(c, 1, m, n), *yb = gen_bf16(c, 3, m, n);
    uint32_t *y = malloc((size_t)m * n * sizeof *y);
    if (y == NULL)
        die("out of memory");
    for (size_t i = 0; i < (size_t)m * n; i++)
        y[i] = (uint32_t)yb[i] << 16 | (uint32_t)(yb[(i * 7 + 3) % ((size_t)m * n)] & 0xFF);
    uint64_t hx = load_bf16(j, "x.npy", x, m, n), hy = load_f32(j, "y.npy", y, m, n);
    fprintf(j->meta, "input x.npy x ub %ux%u\ninput y.npy y acc %ux%u\n", m, n, m, n);
    free(x);
    free(yb);
    free(y);
    unsigned ux = ub_alloc(j, m, "X"), ay = acc_alloc(j, m, "Y");
    unsigned sq = acc_alloc(j, m, "Y*Y"), ex = acc_alloc(j, m, "exp(X)");
    ins(j, "# inputs: X -> UB %u, Y -> ACC %u", ux, ay);
    ins(j, "dma_in ub row=%u rows=%u cols=%u addr=0x%llx stride=%u", ux, m, n,
        (unsigned long long)hx, 2 * n);
    ins(j, "dma_in acc row=%u rows=%u cols=%u addr=0x%llx stride=%u", ay, m, n,
        (unsigned long long)hy, 4 * n);
    ins(j, "vop mul a=acc:%u b=acc:%u dst=acc:%u rows=%u", ay, ay, sq, m);
    ins(j, "vop exp a=ub:%u dst=acc:%u rows=%u", ux, ex, m);
    struct res { const char *name; int acc; unsigned row; } r[8];
    unsigned nr = 0;
#define NEWRES(nm, isacc) (r[nr].name = (nm), r[nr].acc = (isacc), \
        r[nr].row = (isacc) ? acc_alloc(j, m, nm) : ub_alloc(j, m, nm), r[nr++].row)
    unsigned t;
    t = NEWRES("log_ub_ub", 0);
    ins(j, "vop log a=ub:%u dst=ub:%u rows=%u", ux, t, m);
    t = NEWRES("log_acc_acc", 1);
    ins(j, "vop log a=acc:%u dst=acc:%u rows=%u", ay, t, m);
    t = NEWRES("log_exp", 1);
    ins(j, "vop log a=acc:%u dst=acc:%u rows=%u", ex, t, m);
    t = NEWRES("rsqrt_ub_acc", 1);
    ins(j, "vop rsqrt a=ub:%u dst=acc:%u rows=%u", ux, t, m);
    t = NEWRES("rsqrt_acc_ub", 0);
    ins(j, "vop rsqrt a=acc:%u dst=ub:%u rows=%u", ay, t, m);
    t = NEWRES("rsqrt_sq", 1);
    ins(j, "vop rsqrt a=acc:%u dst=acc:%u rows=%u", sq, t, m);
    ins(j, "vop rsqrt a=acc:%u dst=acc:%u rows=%u", t, t, m); /* in place, back to back */
    t = NEWRES("erf_ub_acc", 1);
    ins(j, "vop erf a=ub:%u dst=acc:%u rows=%u", ux, t, m);
    t = NEWRES("erf_acc_ub", 0);
    ins(j, "vop erf a=acc:%u dst=ub:%u rows=%u", ay, t, m);
    ins(j, "sync");
    for (unsigned i = 0; i < nr; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.npy", r[i].name);
        uint64_t h = dump(j, file, r[i].acc, m, n);
        ins(j, "dma_out %s row=%u rows=%u cols=%u addr=0x%llx stride=%u", r[i].acc ? "acc" : "ub",
            r[i].row, m, n, (unsigned long long)h, (r[i].acc ? 4 : 2) * n);
    }
    ins(j, "halt");
#undef NEWRES
}

/* random: a constrained-random program (tpu/randprog.h) with its predicted outcome in job.txt
   ("expect done" or "expect error E pc P"), a 4 KiB bf16 input at host 0x1000 and a dump of
   the first 64 KiB of host memory. */
static void kind_random(struct job *j)
{
    const struct cfg *c = j->c;
    tpu_randprog_cfg_t rc;
    memset(&rc, 0, sizeof rc);
    rc.geom = tpu_core_geom_default(c->n);
    rc.geom.ub_rows = c->ub_rows;
    rc.geom.acc_rows = c->acc_rows;
    rc.geom.wmem_rows = c->wmem_rows;
    rc.geom.imem_insns = c->imem_insns;
    rc.host_bytes = (uint64_t)c->hostmem_mib << 20;
    rc.seed = c->seed;
    rc.want_error = c->error;
    rc.loop_error = c->loop_error;
    rc.no_loops = c->no_loops;
    if (c->loop_error && c->error != 2 && c->error != 3)
        die("random: --loop-error needs --error 2 or 3 (--error 10 is always a loop's)");
    if (rc.host_bytes >= ((uint64_t)1 << 32))
        die("random: --hostmem-mib %u, expected at most 4095 (error 7 needs an address past the "
            "host memory)", c->hostmem_mib);
    tpu_randprog_t p;
    if (tpu_randprog(&rc, &p) != 0)
        die("random: cannot generate a program for these sizes (each memory needs N rows, IMEM "
            "at least 4 instructions)");
    fputs(p.text, j->prog);
    j->insns = (unsigned)p.insns;
    uint16_t *in = gen_bf16(c, 1, 1, p.in_bytes / 2);
    write_npy(j, "in.npy", TPU_NPY_U2, 1, p.in_bytes / 2, in);
    free(in);
    fprintf(j->args, "--load 0x%llx=in.npy\n--hostmem-mib %u\n--dump 0x0=host.npy:bf16:1x32768\n",
            (unsigned long long)p.in_addr, c->hostmem_mib);
    fprintf(j->meta, "input in.npy bf16 1x%llu\noutput host.npy bf16 1x32768\n",
            (unsigned long long)(p.in_bytes / 2));
    if (p.expect_code)
        fprintf(j->meta, "expect error %d pc %u\n", p.expect_code, (unsigned)p.expect_pc);
    else
        fprintf(j->meta, "expect done\n");
    tpu_randprog_free(&p);
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tpu-mkprog KIND --mxu N -o DIR [options]\n"
        "  KIND          matmul | dense | mlp | allops | manyk | random | vfuncs | transpose (a\n"
        "                core job); the board kinds\n"
        "                allreduce | bcast | sendrecv | barrier | dptrain | collall take\n"
        "                --cores C --topology T (tpu-mkprog allreduce --help)\n"
        "  --mxu N       MXU size (1 .. 256)\n"
        "  -o DIR        output folder (created): prog.s, *.npy inputs, job.args, job.txt\n"
        "  --m M         activation rows (default 3N; allops: at most 128; manyk: at most\n"
        "                what fits UB)\n"
        "  --k K         reduction length (default 2N; manyk: 16N)\n"
        "  --nout N'     outputs (default 2N; mlp: N + ceil(N/2); manyk: N)\n"
        "  --nhid H      mlp hidden width (default 2N)\n"
        "  --seed S      random seed (default 1)\n"
        "  --dist D      data distribution of sim/matgen.h: uniform (default), wide, normal,\n"
        "                ints, edges\n"
        "  --ub-rows R --acc-rows R --wmem-rows R   memory sizes (default gen's: 4096, 2048, 8N)\n"
        "  --hostmem-mib M   host memory the job must fit in (default 64)\n"
        "  --imem-insns I    instructions the program must fit in (default 1024)\n"
        "  --error E     random: the error code (1 .. 8, or 10: a malformed loop nest) the\n"
        "                program must end in, 0 for a program that halts (default: by the\n"
        "                seed, one in three ends in an error); job.txt says 'expect done'\n"
        "                or 'expect error E pc P'\n"
        "  --loop-error  random, with --error 2 or 3: the error comes from a loop (a stride\n"
        "                that leaves the memory in a later iteration; count, skip or body 0)\n"
        "  --no-loops    random, random-board: straight-line programs (no loop, stride,\n"
        "                index register or matmul acc_mode=first)\n"
        "job.args holds --load/--dump options, one per line, for `@DIR/job.args`.\n");
}

static unsigned parse_u(const char *opt, const char *s, unsigned lo, unsigned hi)
{
    uint64_t v;
    char err[512];
    if (tpu_cli_count(opt, s, lo, hi, &v, err, sizeof err))
        die_usage(err);
    return (unsigned)v;
}

int main(int argc, char **argv)
{
    static const tpu_cli_opt_t opts[] = {
        { "mxu", 0, TPU_CLI_VALUE, 'n' },      { "m", 0, TPU_CLI_VALUE, 'm' },
        { "k", 0, TPU_CLI_VALUE, 'k' },        { "nout", 0, TPU_CLI_VALUE, 'N' },
        { "nhid", 0, TPU_CLI_VALUE, 'H' },     { "seed", 0, TPU_CLI_VALUE, 's' },
        { "dist", 0, TPU_CLI_VALUE, 'd' },     { "ub-rows", 0, TPU_CLI_VALUE, 'u' },
        { "acc-rows", 0, TPU_CLI_VALUE, 'a' }, { "wmem-rows", 0, TPU_CLI_VALUE, 'w' },
        { "hostmem-mib", 0, TPU_CLI_VALUE, 'M' },
        { "imem-insns", 0, TPU_CLI_VALUE, 'I' },
        { "output", 'o', TPU_CLI_VALUE, 'o' }, { "help", 'h', 0, 'h' },
        { "cores", 0, TPU_CLI_VALUE, 'C' },    { "topology", 0, TPU_CLI_VALUE, 'T' },
        { "error", 0, TPU_CLI_VALUE, 'E' },
        { "loop-error", 0, 0, 'L' },           { "no-loops", 0, 0, 'X' },
        { NULL, 0, 0, 0 }
    };
    const char *board_opt = NULL; /* --cores/--topology: only for the board kinds */
    int help = 0, nkinds = 0;
    const char *kind_arg = NULL;
    struct cfg c;
    memset(&c, 0, sizeof c);
    c.dist = "uniform";
    c.seed = 1;
    c.hostmem_mib = 64;
    c.error = -1;
    /* the KIND first: a board kind has options of its own (tpu_mkprog_board.c) */
    {
        tpu_cli_t cl;
        char err[1024];
        const char *name, *val;
        int id;
        tpu_cli_init(&cl, argc, argv, opts);
        while ((id = tpu_cli_next(&cl, &name, &val, err, sizeof err)) != TPU_CLI_END)
            if (id == TPU_CLI_POSITIONAL) {
                kind_arg = val;
                nkinds++;
            } else if (id == TPU_CLI_ERROR) {
                break;
            }
        if (nkinds == 1 && tpu_mkprog_is_board_kind(kind_arg))
            return tpu_mkprog_board_main(argc, argv);
    }
    tpu_cli_t cl;
    tpu_cli_init(&cl, argc, argv, opts);
    for (;;) {
        const char *name, *optarg;
        char err[1024];
        int ch = tpu_cli_next(&cl, &name, &optarg, err, sizeof err);
        if (ch == TPU_CLI_END)
            break;
        switch (ch) {
        case TPU_CLI_ERROR: die_usage(err); break;
        case TPU_CLI_POSITIONAL: break;
        case 'n': c.n = parse_u("--mxu", optarg, 1, TPU_LIM_MXU_MAX); break;
        case 'm': c.m = parse_u("--m", optarg, 1, 65535); break;
        case 'k': c.k = parse_u("--k", optarg, 1, 1u << 20); break;
        case 'N': c.nout = parse_u("--nout", optarg, 1, 1u << 20); break;
        case 'H': c.nhid = parse_u("--nhid", optarg, 1, 1u << 20); break;
        case 's': {
            uint64_t v;
            if (tpu_cli_addr("--seed", optarg, 0, UINT64_MAX - 1, &v, err, sizeof err))
                die_usage(err);
            c.seed = v;
            break;
        }
        case 'd': c.dist = optarg; break;
        case 'u': c.ub_rows = parse_u("--ub-rows", optarg, 1, TPU_LIM_MEM_ROWS_MAX); break;
        case 'a': c.acc_rows = parse_u("--acc-rows", optarg, 1, TPU_LIM_MEM_ROWS_MAX); break;
        case 'w': c.wmem_rows = parse_u("--wmem-rows", optarg, 1, TPU_LIM_MEM_ROWS_MAX); break;
        case 'M': c.hostmem_mib = parse_u("--hostmem-mib", optarg, 1, TPU_LIM_HOSTMEM_MIB_MAX); break;
        case 'I': c.imem_insns = parse_u("--imem-insns", optarg, 1, TPU_LIM_IMEM_INSNS_MAX); break;
        case 'o': c.dir = optarg; break;
        case 'E':
            c.error = (int)parse_u("--error", optarg, 0, 10);
            if (c.error == 9)
                die_usage("--error '9': a dead link is a board's (tpu-board-run --link-dead), expected 0 .. 8 or 10");
            break;
        case 'L': c.loop_error = 1; break;
        case 'X': c.no_loops = 1; break;
        case 'C': board_opt = "--cores"; break;
        case 'T': board_opt = "--topology"; break;
        default: help = 1; break;
        }
    }
    if (help) {
        usage(stdout);
        return 0;
    }
    if (nkinds != 1) {
        fprintf(stderr, "%s: error: %s, expected one KIND (matmul, dense, mlp, allops, manyk, vfuncs, transpose)\n",
                prog_name, nkinds == 0 ? "no KIND" : "several KINDs");
        return 2;
    }
    c.kind = kind_arg;
    int kind;
    static const char *const kinds[] = { "matmul", "dense", "mlp",   "allops",
                                         "manyk",  "random", "vfuncs", "transpose" };
    for (kind = 0; kind < 8; kind++)
        if (!strcmp(c.kind, kinds[kind]))
            break;
    if (kind == 8)
        die("unknown KIND '%s', expected matmul, dense, mlp, allops, manyk, random, vfuncs or transpose (core jobs) or "
            "allreduce, bcast, sendrecv, barrier, dptrain, collall or random-board (board jobs)", c.kind);
    if (board_opt)
        die("%s is an option of the board kinds (allreduce, bcast, sendrecv, barrier, dptrain, "
            "collall), not of '%s'", board_opt, c.kind);
    if (c.n == 0)
        die("no --mxu, expected --mxu N");
    if (c.dir == NULL)
        die("no -o, expected -o DIR");
    if (!tpu_matgen_valid(c.dist))
        die("--dist '%s', expected uniform, wide, normal, ints or edges", c.dist);
    if (!c.k)
        c.k = kind == 4 ? 16 * c.n : 2 * c.n;
    if (!c.ub_rows)
        c.ub_rows = 4096;
    if (!c.m) {
        /* 3N rows hide the weight loads; allops keeps ~16 M-row results in ACC, manyk's
           activations (K/N tiles of M rows) must fit UB */
        c.m = 3 * c.n;
        if (kind == 3 && c.m > 128)
            c.m = 128;
        if (kind == 4 && (uint64_t)c.m * cdiv(c.k, c.n) > c.ub_rows)
            c.m = c.ub_rows / cdiv(c.k, c.n) ? c.ub_rows / cdiv(c.k, c.n) : 1;
    }
    if (!c.nout)
        c.nout = kind == 4 ? c.n : kind == 2 ? c.n + cdiv(c.n, 2) : 2 * c.n;
    if (!c.nhid)
        c.nhid = 2 * c.n;
    if (!c.ub_rows)
        c.ub_rows = 4096;
    if (!c.acc_rows)
        c.acc_rows = 2048;
    if (!c.wmem_rows)
        c.wmem_rows = 8 * c.n;
    if (!c.imem_insns)
        c.imem_insns = 1024;
    if (c.wmem_rows < c.n)
        die("--wmem-rows %u holds no weight tile, expected at least N = %u", c.wmem_rows, c.n);
    char derr[1024];
    if (tpu_outdir_check("-o", c.dir, derr, sizeof derr))
        die("%s", derr);
    die_status = 1;
    if (mkdir(c.dir, 0777) == 0)
        made_dir = c.dir;
    else if (errno != EEXIST)
        die("-o '%s': cannot create the folder: %s", c.dir, strerror(errno));
    struct job j;
    memset(&j, 0, sizeof j);
    j.c = &c;
    j.host_next = 0x1000;
    char path[4096];
    char (*tmp)[4096] = tmp_paths;
    const char *names[3] = { "prog.s", "job.args", "job.txt" };
    FILE **fs[3] = { &j.prog, &j.args, &j.meta };
    for (int i = 0; i < 3; i++) {
        snprintf(tmp[i], sizeof tmp[i], "%s/.%s.tmp", c.dir, names[i]);
        if ((*fs[i] = fopen(tmp[i], "w")) == NULL)
            die("%s: cannot create: %s", tmp[i], strerror(errno));
    }
    fprintf(j.prog, "# generated by tpu-mkprog %s --mxu %u --m %u --k %u --nout %u --nhid %u "
            "--seed %llu --dist %s\n# (UB %u rows, ACC %u rows, WMEM %u rows)\n", c.kind, c.n,
            c.m, c.k, c.nout, c.nhid, (unsigned long long)c.seed, c.dist, c.ub_rows, c.acc_rows,
            c.wmem_rows);
    fprintf(j.args, "# tpu-mkprog %s --mxu %u: host options (use as @job.args; paths are "
            "relative to this file)\n", c.kind, c.n);
    fprintf(j.meta, "kind %s\nmxu %u\nm %u\nk %u\nnout %u\nnhid %u\nseed %llu\ndist %s\n",
            c.kind, c.n, c.m, c.k, c.nout, c.nhid, (unsigned long long)c.seed, c.dist);
    switch (kind) {
    case 0: case 4: kind_matmul(&j, 0); break;
    case 1: kind_matmul(&j, 1); break;
    case 2: kind_mlp(&j); break;
    case 5: kind_random(&j); break;
    case 6: kind_vfuncs(&j); break;
    case 7: kind_transpose(&j); break;
    default: kind_allops(&j); break;
    }
    if (j.insns > c.imem_insns)
        die("the program has %u instructions, more than IMEM's %u (--imem-insns); use a "
            "smaller --m/--k/--nout", j.insns, c.imem_insns);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", c.dir, names[i]);
        if (ferror(*fs[i]) | fclose(*fs[i]) || rename(tmp[i], path) != 0)
            die("%s: write failed: %s", path, strerror(errno));
    }
    return 0;
}
