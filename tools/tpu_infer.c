/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-infer: runs a model compiled by tpu-compile on a batch (docs/compiler.md). The input is
   a float32 .npy with the ONNX input's shape and any batch (int64 / int32 token ids, written as
   one-hot rows, for a model whose input is an embedding's indices); it is run in chunks of the
   compiled batch (the last one padded with zeros) on the C model -- the core, or the board
   model when compiled for C > 1 cores -- and the outputs are written as a float32 .npy with
   the ONNX output's shape. --rtl runs every chunk on the verilated core or board too and
   compares each core's trace with the model's (docs/compiler.md "Co-simulation").
   Exit 0, 1 when the RTL run differs or fails, 2 on bad arguments or input. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tpu/board.h"
#include "tpu/cli.h"
#include "tpu/core.h"
#include "tpu/host.h"
#include "tpu/npy.h"
#include "tpuc/npyio.h"
#include "tpuc/tpuc.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tpu-infer DIR --input X.npy --output Y.npy [--rtl] [--work W]\n"
            "  DIR            a model compiled by tpu-compile\n"
            "  --input X      float32 .npy, the ONNX input's shape with any batch (int64 or\n"
            "                 int32 token ids for a model whose input feeds an embedding)\n"
            "  --output Y     float32 .npy written with the ONNX output's shape\n"
            "  --rtl          also run each chunk on the verilated core (C = 1) or board\n"
            "                 (built on demand with make) and compare traces with the model's\n"
            "  --work W       keep the job files of the last chunk in W (input<i>.npy,\n"
            "                 core<i>.args, traces); default: a temporary folder, removed\n"
            "  --max-cycles C stop a run after C cycles (default 10^9)\n"
            "  --time         print the host time: in all, in the model's runs, per image\n"
            "Exit status: 0 done, 1 an RTL difference or a run error, 2 bad arguments or input.\n");
}

enum { O_HELP, O_IN, O_OUT, O_RTL, O_WORK, O_MAXC, O_TIME };
static const tpu_cli_opt_t opts[] = {
    {"help", 'h', 0, O_HELP},
    {"input", 0, TPU_CLI_VALUE, O_IN},
    {"output", 0, TPU_CLI_VALUE, O_OUT},
    {"rtl", 0, 0, O_RTL},
    {"work", 0, TPU_CLI_VALUE, O_WORK},
    {"max-cycles", 0, TPU_CLI_VALUE, O_MAXC},
    {"time", 0, 0, O_TIME},
    {NULL, 0, 0, 0},
};

static int fail(int code, const char *fmt, const char *a)
{
    fprintf(stderr, "tpu-infer: error: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    return code;
}

/* ---- the input: a float32 .npy of any rank, or '<i8' / '<i4' / '|u1' token ids (tpuc/npyio.h)
   for a model whose input feeds an embedding of vocab rows (0: a float model); ids are checked
   against ONNX Gather's range [-vocab, vocab - 1] as read (the message names the id itself),
   a negative one counted from the end, and converted to float (exact: vocab <= 2^24). *is_int
   says which kind the file was. ---- */
static int npy_read_f32(const char *path, int64_t vocab, int *ndim, int64_t *dims, float **data,
                        int *is_int, char *err, size_t errlen)
{
    tpuc_npy_t a;
    if (tpuc_npy_load(path, -1, &a, err, errlen)) return -1;
    *ndim = a.ndim;
    memcpy(dims, a.dims, sizeof a.dims);
    *is_int = a.i != NULL;
    if (a.f) {
        *data = a.f;
        a.f = NULL;
    } else {
        *data = malloc(a.elems * 4 + 4);
        if (!*data) { tpuc_npy_free(&a); snprintf(err, errlen, "out of memory"); return -1; }
        for (uint64_t i = 0; i < a.elems && vocab > 0; i++) {
            int64_t v = a.i[i];
            if (v < -vocab || v >= vocab) {
                snprintf(err, errlen, "--input '%.700s': element %" PRIu64 " is token id %" PRId64
                         ", outside the embedding's %" PRId64 " rows (allowed: %" PRId64 "..%" PRId64 ")",
                         path, i, v, vocab, -vocab, vocab - 1);
                free(*data);
                *data = NULL;
                tpuc_npy_free(&a);
                return -1;
            }
            (*data)[i] = (float)(v < 0 ? v + vocab : v);
        }
    }
    tpuc_npy_free(&a);
    return 0;
}

static int npy_write_f32(const char *path, int ndim, const int64_t *dims, const float *data,
                         char *err, size_t errlen)
{
    char hdr[256];
    int k = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    uint64_t total = 1;
    for (int i = 0; i < ndim; i++) {
        k += snprintf(hdr + k, sizeof hdr - (size_t)k, "%lld%s", (long long)dims[i],
                      ndim == 1 || i + 1 < ndim ? ", " : "");
        total *= (uint64_t)dims[i];
    }
    if (ndim == 1) k -= 1; /* "(5, )" -> "(5,)" */
    k += snprintf(hdr + k, sizeof hdr - (size_t)k, "), }");
    size_t tot = 10 + (size_t)k + 1;
    size_t pad = (64 - tot % 64) % 64;
    size_t hl = (size_t)k + pad + 1;
    size_t bytes = 10 + hl + total * 4;
    uint8_t *b = malloc(bytes);
    if (!b) { snprintf(err, errlen, "out of memory"); return -1; }
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (uint8_t)(hl & 0xFF);
    b[9] = (uint8_t)(hl >> 8);
    memcpy(b + 10, hdr, (size_t)k);
    memset(b + 10 + k, ' ', pad);
    b[10 + hl - 1] = '\n';
    memcpy(b + 10 + hl, data, total * 4);
    int rc = tpu_file_write(path, b, bytes, err, errlen);
    free(b);
    return rc;
}

static int write_u16_npy(const char *path, const uint8_t *src, size_t bytes, char *err, size_t errlen)
{
    tpu_npy_t a;
    size_t w = (bytes + 1) / 2;
    if (tpu_npy_alloc(&a, TPU_NPY_U2, 1, 1, w ? w : 1)) { snprintf(err, errlen, "out of memory"); return -1; }
    memset(a.data, 0, (w ? w : 1) * 2);
    memcpy(a.data, src, bytes);
    int rc = tpu_npy_write(path, &a, err, errlen);
    tpu_npy_free(&a);
    return rc;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The model's constants (DIR/image.npy, a 16-bit array as tpu-compile writes it) read
   straight into host memory at dst: 0, or -1 with a message in err */
static int read_image(const char *path, uint8_t *dst, uint64_t bytes, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%.900s: cannot open: %s", path, strerror(errno)); return -1; }
    static unsigned char head[65536 + 16];
    size_t got = fread(head, 1, sizeof head, f);
    tpu_npy_header_t h;
    if (tpu_npy_parse_header(head, got, path, &h, err, errlen)) { fclose(f); return -1; }
    uint64_t elems = 1;
    for (unsigned i = 0; i < h.ndim; i++) elems *= h.dims[i];
    if ((strcmp(h.descr, "<u2") != 0 && strcmp(h.descr, "|u2") != 0) || h.fortran) {
        snprintf(err, errlen, "%.900s: dtype '%s', expected '<u2' in C order", path, h.descr);
        fclose(f);
        return -1;
    }
    if (elems * 2 < bytes || fseek(f, (long)h.data_off, SEEK_SET) != 0 ||
        fread(dst, 1, bytes, f) != bytes) {
        snprintf(err, errlen, "%.900s: shorter than the model's constants", path);
        fclose(f);
        return -1;
    }
    fclose(f);
    return 0;
}

/* Core 0's host memory, host_bytes zeroed with the model's constants (image.npy at path) at
   image_base: the file mapped there privately (copy on write) -- no 52 MB read and first
   touch of fresh pages for a large model, its pages shared with the page cache -- when the
   file holds them whole and its data can sit page-aligned at image_base (the host memory
   starts data_off - image_base past a page boundary, the npy header's bytes before the data
   and the file's bytes after it in the last page cleared); else calloc and read_image.
   *base, *len: what to munmap (*len 0: free the memory). NULL with a message in err. */
static uint8_t *host_image(const char *path, uint64_t host_bytes, uint64_t image_base,
                           uint64_t image_bytes, void **base, size_t *len, char *err, size_t errlen)
{
    *base = NULL;
    *len = 0;
    long pg = sysconf(_SC_PAGESIZE);
    int fd = open(path, O_RDONLY);
    if (fd >= 0 && pg > 0) {
        static unsigned char head[65536 + 16];
        ssize_t got = read(fd, head, sizeof head);
        tpu_npy_header_t h;
        struct stat st;
        char e2[256];
        uint64_t p = (uint64_t)pg, off = 0, elems = 1;
        int ok = got > 0 && tpu_npy_parse_header(head, (size_t)got, path, &h, e2, sizeof e2) == 0;
        if (ok) {
            off = h.data_off;
            for (unsigned i = 0; i < h.ndim; i++) elems *= h.dims[i];
        }
        /* the checks of read_image, and the file's bytes there */
        if (ok && (strcmp(h.descr, "<u2") == 0 || strcmp(h.descr, "|u2") == 0) && !h.fortran &&
            elems * 2 >= image_bytes && fstat(fd, &st) == 0 &&
            (uint64_t)st.st_size >= off + image_bytes && image_base >= off && image_bytes > 0) {
            size_t l = (size_t)((host_bytes + 3u * p) & ~(p - 1u));
            uint8_t *b = mmap(NULL, l, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (b != MAP_FAILED) {
#ifdef MADV_HUGEPAGE
                /* transparent huge pages where the kernel allows them: the activations' 2 MB
                   ranges first touched in one fault each, fewer TLB misses (a hint only) */
                madvise(b, l, MADV_HUGEPAGE);
#endif
                uint8_t *host = b + (off + p - image_base % p) % p;
                uint8_t *f = host + image_base - off;
                if (mmap(f, (size_t)(off + image_bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
                         fd, 0) == f) {
                    uint8_t *end = f + off + image_bytes;
                    memset(f, 0, (size_t)off);
                    memset(end, 0, (size_t)((p - (uint64_t)(uintptr_t)end % p) % p));
                    close(fd);
                    *base = b;
                    *len = l;
                    return host;
                }
                munmap(b, l);
            }
        }
    }
    if (fd >= 0) close(fd);
    uint8_t *host = calloc(1, host_bytes);
    if (!host) { snprintf(err, errlen, "%s", "out of memory (host images)"); return NULL; }
    if (read_image(path, host + image_base, image_bytes, err, errlen)) { free(host); return NULL; }
    return host;
}

/* ---- output paths, checked before any work ---- */

/* The files of the compiled model tpu-infer reads */
static const char *const model_files[] = {"model.txt", "model.bin", "image.npy"};

/* 0 when --output can be written and is none of the inputs (the input, the model's files),
   and --work is a folder tpu-infer may fill: new, empty, or an earlier work folder (it holds
   WORK_MARK); else -1 with one line in err */
static int check_paths(const char *dir, const char *in, const char *out, const char *work,
                       char *err, size_t errlen)
{
    char p[4200];
    if (tpu_out_check("--output", out, err, errlen) ||
        tpu_out_distinct("--output", out, "--input", in, err, errlen))
        return -1;
    for (size_t i = 0; i < sizeof model_files / sizeof *model_files; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, model_files[i]);
        if (tpu_out_distinct("--output", out, "the model's", p, err, errlen)) return -1;
    }
    if (!work) return 0;
    if (tpu_outdir_check("--work", work, err, errlen)) return -1;
    if (tpu_same_file(work, dir)) {
        snprintf(err, errlen, "--work '%s' is the model directory '%s' (allowed: a new or empty "
                 "folder, or an earlier --work folder)", work, dir);
        return -1;
    }
    return tpuc_work_dir_ok(work, err, errlen);
}

/* Why core i's run ended before its halt, on one line */
static void report_stop(unsigned i, const tpu_core_result_t *r, uint64_t maxc, const char *msg)
{
    if (r->status == TPU_CORE_LIMIT)
        fprintf(stderr, "tpu-infer: error: core %u passed the --max-cycles limit of %" PRIu64
                " cycles before pc %u (the program is not finished; raise --max-cycles)\n", i,
                maxc, (unsigned)r->err_pc);
    else if (r->status == TPU_CORE_STUCK)
        fprintf(stderr, "tpu-infer: error: core %u stuck at pc %u (a collective's peers never "
                "come) %s\n", i, (unsigned)r->err_pc, msg);
    else
        fprintf(stderr, "tpu-infer: error: core %u stopped with error %d (%s) at pc %u %s\n", i,
                r->err_code, tpu_err_name(r->err_code), (unsigned)r->err_pc, msg);
}

static int run_cmd(const char *cmd)
{
    int st = system(cmd);
    if (st == -1) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int main(int argc, char **argv)
{
    double t_start = now_s(), t_runs = 0;
    char err[1024];
    tpu_cli_t cli;
    tpu_cli_init(&cli, argc, argv, opts);
    const char *dir = NULL, *in = NULL, *out = NULL, *work = NULL;
    int rtl = 0, timing = 0;
    uint64_t maxc = 1000000000ull;
    for (;;) {
        const char *name, *val;
        int id = tpu_cli_next(&cli, &name, &val, err, sizeof err);
        if (id == TPU_CLI_END) break;
        if (id == TPU_CLI_ERROR) return fail(2, "%s", err);
        if (id == TPU_CLI_POSITIONAL) {
            if (dir) return fail(2, "a second model directory '%s', expected one", val);
            dir = val;
            continue;
        }
        switch (id) {
        case O_HELP: usage(stdout); return 0;
        case O_IN: in = val; break;
        case O_OUT: out = val; break;
        case O_RTL: rtl = 1; break;
        case O_WORK: work = val; break;
        case O_TIME: timing = 1; break;
        case O_MAXC:
            if (tpu_cli_count(name, val, 1, UINT64_MAX, &maxc, err, sizeof err)) return fail(2, "%s", err);
            break;
        }
    }
    if (!dir) return fail(2, "%s", "no model directory (usage: tpu-infer DIR --input X.npy --output Y.npy; --help)");
    if (!in) return fail(2, "%s", "no --input X.npy given (usage: tpu-infer DIR --input X.npy --output Y.npy; --help)");
    if (!out) return fail(2, "%s", "no --output Y.npy given (usage: tpu-infer DIR --input X.npy --output Y.npy; --help)");
    if (check_paths(dir, in, out, work, err, sizeof err)) return fail(2, "%s", err);
    char path[4200];
    snprintf(path, sizeof path, "%s/model.txt", dir);
    tpuc_meta_t m;
    if (tpuc_read_meta(path, &m, err, sizeof err)) return fail(2, "%s", err);
    int xnd;
    int64_t xd[TPUC_MAX_DIMS];
    float *x = NULL;
    int x_int = 0;
    if (npy_read_f32(in, m.in.onehot, &xnd, xd, &x, &x_int, err, sizeof err)) return fail(2, "%s", err);
    if (x_int != (m.in.onehot > 0)) {
        snprintf(err, sizeof err, m.in.onehot ? "--input '%s': float32, the model's input '%s' is integer token ids (an int64 or int32 .npy)"
                                              : "--input '%s': integer, the model's input '%s' is float32", in, m.in.name);
        free(x);
        return fail(2, "%s", err);
    }
    if (xnd != m.in.ndim) {
        snprintf(err, sizeof err, "--input '%s': %d dimensions, the model's input '%s' has %d", in, xnd, m.in.name, m.in.ndim);
        free(x);
        return fail(2, "%s", err);
    }
    for (int i = 1; i < xnd; i++)
        if (xd[i] != m.in.dims[i]) {
            snprintf(err, sizeof err, "--input '%s': dimension %d is %lld, the model's input '%s' needs %lld", in, i, (long long)xd[i], m.in.name, (long long)m.in.dims[i]);
            free(x);
            return fail(2, "%s", err);
        }
    if (xd[0] < 1) { free(x); return fail(2, "--input '%s': an empty batch", in); }
    /* a model whose output does not keep the batch first (a Flatten or Reshape over it):
       exactly the compiled batch, one run */
    int batched = m.out.dims[0] == m.in.dims[0];
    if (!batched && (xd[0] != m.batch || m.cores != 1)) {
        snprintf(err, sizeof err, "--input '%s': %lld images; the model's output '%s' does not keep the batch as its first dimension, so it runs exactly the compiled batch of %ld on one core", in, (long long)xd[0], m.out.name, m.batch);
        free(x);
        return fail(2, "%s", err);
    }
    uint64_t in_per = tpuc_io_elems(&m.in) / (uint64_t)m.in.dims[0];   /* per image */
    uint64_t out_per = batched ? tpuc_io_elems(&m.out) / (uint64_t)m.out.dims[0]
                               : tpuc_io_elems(&m.out) / (uint64_t)m.batch;
    uint64_t total = (uint64_t)xd[0];
    uint64_t chunk = (uint64_t)m.batch * m.cores;
    uint64_t nchunks = (total + chunk - 1) / chunk;
    float *y = calloc(total * out_per + 1, sizeof *y);
    float *xin = malloc(tpuc_io_elems(&m.in) * sizeof *xin + 4);
    float *yout = malloc(tpuc_io_elems(&m.out) * sizeof *yout + 4);
    snprintf(path, sizeof path, "%s/image.npy", dir);
    if (!y || !xin || !yout) { free(x); return fail(2, "%s", "out of memory"); }
    char img_path[4200];
    snprintf(img_path, sizeof img_path, "%s", path);
    tpu_insn_t *prog = NULL;
    size_t count = 0;
    snprintf(path, sizeof path, "%s/model.bin", dir);
    if (tpu_load_program(path, m.geom.n, &prog, &count, err, sizeof err)) { free(x); return fail(2, "%s", err); }
    if (count > m.geom.imem_insns) {
        snprintf(err, sizeof err, "%.700s: %zu instructions, more than the IMEM of %u that model.txt names", path, count, m.geom.imem_insns);
        free(x);
        return fail(2, "%s", err);
    }
    uint8_t **host = calloc(m.cores, sizeof *host);
    if (!host) return fail(2, "%s", "out of memory");
    if (m.image_base + m.image_bytes > m.host_bytes) return fail(2, "%s", "model.txt: the constants do not fit the host memory");
    void *map_base;
    size_t map_len;
    host[0] = host_image(img_path, m.host_bytes, m.image_base, m.image_bytes, &map_base, &map_len, err, sizeof err);
    if (!host[0]) { free(x); return fail(2, "%s", err); }
    for (unsigned i = 1; i < m.cores; i++) {
        host[i] = calloc(1, m.host_bytes); /* zeroed: the padding around valid pixels */
        if (!host[i]) return fail(2, "%s", "out of memory (host images)");
    }
    tpu_core_cfg_t ccfg;
    memset(&ccfg, 0, sizeof ccfg);
    ccfg.geom = m.geom;
    ccfg.axi_data_bits = m.axi_data_bits;
    ccfg.max_cycles = maxc;
    tpu_board_cfg_t bcfg;
    memset(&bcfg, 0, sizeof bcfg);
    bcfg.rows = m.topo_rows; bcfg.cols = m.topo_cols;
    bcfg.link_bits = TPU_BOARD_LINK_BITS_DEFAULT; bcfg.link_latency = TPU_BOARD_LINK_LATENCY_DEFAULT;
    bcfg.core = ccfg;
    char wdir[4200] = "";
    int own_work = 0;
    if (rtl || work) {
        if (work) {
            snprintf(wdir, sizeof wdir, "%s", work);
            tpu_path_trim(wdir);
            if (mkdir(wdir, 0777) && errno != EEXIST) return fail(1, "--work: cannot create '%s'", wdir);
            if (tpuc_work_dir_mark(wdir, err, sizeof err)) return fail(1, "%s", err);
        } else {
            const char *td = getenv("TMPDIR");
            snprintf(wdir, sizeof wdir, "%s/tpu-infer.XXXXXX", td && td[0] ? td : "/tmp");
            if (!mkdtemp(wdir)) return fail(2, "cannot create a work folder under %s", td && td[0] ? td : "/tmp");
            own_work = 1;
        }
    }
    int status = 0, tty = isatty(2);
    uint64_t cycles = 0;
    /* one core or board for every chunk: cleared between runs (tpu_core_clear: the rows a run
       wrote back to zero and never written), it behaves as a new one, without allocating and
       first-touching its memories again per chunk */
    tpu_core_t *core = NULL;
    tpu_board_t *bd = NULL;
    if (m.cores == 1) {
        core = tpu_core_new(&ccfg);
        if (!core) return fail(2, "%s", "model.txt: geom and axi_data_bits are not a core gen builds");
    } else {
        bd = tpu_board_new(&bcfg);
        if (!bd) return fail(2, "%s", "model.txt: geom, axi_data_bits and board are not a board gen builds");
    }
    for (uint64_t ch = 0; ch < nchunks; ch++) {
        tpu_board_job_t jobs[64];
        tpu_core_result_t res[64];
        FILE *tr[64] = {0};
        for (unsigned i = 0; i < m.cores; i++) {
            /* the image is laid out once per core: a program never writes its constants, the
               padding around valid pixels, or the -Inf fills (docs/compiler.md "Layouts"), so
               later chunks only put their input (test-compiler checks chunked = whole) */
            if (ch == 0) {
                if (i > 0) memcpy(host[i] + m.image_base, host[0] + m.image_base, m.image_bytes);
                for (int k = 0; k < m.nfills; k++)
                    for (uint64_t b = 0; b + 1 < m.fill_bytes[k]; b += 2) { host[i][m.fill_addr[k] + b] = 0x80; host[i][m.fill_addr[k] + b + 1] = 0xFF; }
            }
            uint64_t first = ch * chunk + (uint64_t)i * (uint64_t)m.batch;
            for (uint64_t b = 0; b < (uint64_t)m.batch; b++) {
                float *dst = xin + b * in_per;
                if (first + b < total) memcpy(dst, x + (first + b) * in_per, in_per * 4);
                else memset(dst, 0, in_per * 4);
            }
            tpuc_put_input(&m.in, xin, host[i]);
            if (wdir[0]) {
                char p2[4400];
                snprintf(p2, sizeof p2, "%s/input%u.npy", wdir, i);
                uint64_t ib = m.in.lay.rows * m.in.lay.cols * m.in.lay.esize;
                if (write_u16_npy(p2, host[i] + m.in.lay.addr, ib, err, sizeof err)) return fail(2, "%s", err);
                snprintf(p2, sizeof p2, "%s/core%u.args", wdir, i);
                FILE *f = fopen(p2, "w");
                if (!f) return fail(2, "cannot write %s", p2);
                char adir[4200];
                if (!realpath(dir, adir)) snprintf(adir, sizeof adir, "%s", dir);
                tpuc_write_args(&m, adir, i, ".", f);
                fclose(f);
                snprintf(p2, sizeof p2, "%s/model", wdir);
                mkdir(p2, 0777);
                snprintf(p2, sizeof p2, "%s/model/core%u.trace", wdir, i);
                tr[i] = fopen(p2, "w");
                if (!tr[i]) return fail(2, "cannot write %s", p2);
            }
            jobs[i].prog = prog; jobs[i].count = count; jobs[i].pc_start = 0;
            jobs[i].host = host[i]; jobs[i].host_bytes = m.host_bytes; jobs[i].trace = tr[i];
        }
        int rc;
        char msg[2048] = "";
        double t_run = now_s();
        if (m.cores == 1) {
            if (ch > 0) tpu_core_clear(core);
            rc = tpu_core_run(core, prog, count, 0, host[0], m.host_bytes, tr[0], &res[0]);
        } else {
            if (ch > 0)
                for (unsigned i = 0; i < m.cores; i++) tpu_core_clear(tpu_board_core(bd, i));
            rc = tpu_board_run(bd, jobs, res, msg, sizeof msg);
        }
        t_runs += now_s() - t_run;
        for (unsigned i = 0; i < m.cores; i++) if (tr[i]) fclose(tr[i]);
        if (rc) return fail(1, "%s", "the model run failed");
        for (unsigned i = 0; i < m.cores; i++) {
            if (res[i].status != TPU_CORE_DONE) {
                report_stop(i, &res[i], maxc, msg);
                return 1;
            }
            if (res[i].counters[TPU_CNT_CYCLES] > cycles) cycles = res[i].counters[TPU_CNT_CYCLES];
            if (wdir[0]) {
                /* the output buffer as the job's --dump writes it, for tpu-board-cmp */
                char p2[4400];
                snprintf(p2, sizeof p2, "%s/model/core%u", wdir, i);
                mkdir(p2, 0777);
                snprintf(p2, sizeof p2, "%s/model/core%u/output%u.npy", wdir, i, i);
                tpu_npy_t o;
                if (tpu_npy_alloc(&o, m.out.lay.esize == 4 ? TPU_NPY_F4 : TPU_NPY_U2, 2,
                                  m.out.lay.rows, m.out.lay.cols))
                    return fail(2, "%s", "out of memory");
                memcpy(o.data, host[i] + m.out.lay.addr, m.out.lay.rows * m.out.lay.cols * m.out.lay.esize);
                int wr = tpu_npy_write(p2, &o, err, sizeof err);
                tpu_npy_free(&o);
                if (wr) return fail(2, "%s", err);
            }
            tpuc_get_output(&m.out, host[i], yout);
            uint64_t first = ch * chunk + (uint64_t)i * (uint64_t)m.batch;
            for (uint64_t b = 0; b < (uint64_t)m.batch && first + b < total; b++)
                memcpy(y + (first + b) * out_per, yout + b * out_per, out_per * 4);
        }
        if (rtl) {
            char cmd[9000];
            char adir[4200];
            if (!realpath(dir, adir)) snprintf(adir, sizeof adir, "%s", dir);
            const char *script = getenv("TPU_INFER_RTL");
            char sdef[4300];
            /* build/tools/tpu-infer -> scripts/infer_rtl.sh of the same tree */
            char self[4096];
            ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
            self[sl > 0 ? sl : 0] = 0;
            char *sp = strrchr(self, '/');
            if (sp) *sp = 0;
            snprintf(sdef, sizeof sdef, "%s/../../scripts/infer_rtl.sh", self[0] ? self : ".");
            if (strchr(adir, '\'') || strchr(wdir, '\'')) return fail(2, "%s", "--rtl: a path with a quote");
            snprintf(cmd, sizeof cmd, "sh '%s' '%s' '%s'", script && script[0] ? script : sdef, adir, wdir);
            fprintf(stderr, "tpu-infer: chunk %" PRIu64 "/%" PRIu64 " on the RTL: %s\n", ch + 1, nchunks, cmd);
            int r = run_cmd(cmd);
            if (r != 0) { fprintf(stderr, "tpu-infer: error: the RTL run of chunk %" PRIu64 " differs from the model or failed (exit %d)\n", ch + 1, r); status = 1; break; }
        }
        if (tty && nchunks > 1) fprintf(stderr, "\rtpu-infer: %" PRIu64 "/%" PRIu64 " images", min_u64(total, (ch + 1) * chunk), total);
    }
    tpu_core_free(core);
    tpu_board_free(bd);
    if (tty && nchunks > 1) fputc('\n', stderr);
    if (status != 0) return status; /* nothing written after a failed RTL run */
    int64_t yd[TPUC_MAX_DIMS];
    for (int i = 0; i < m.out.ndim; i++) yd[i] = m.out.dims[i];
    if (batched) yd[0] = (int64_t)total;
    if (npy_write_f32(out, m.out.ndim, yd, y, err, sizeof err)) return fail(2, "%s", err);
    fprintf(stderr, "tpu-infer: %" PRIu64 " image(s) in %" PRIu64 " run(s) of %" PRIu64 " on %u core(s); %" PRIu64 " cycles per run (model)\n",
            total, nchunks, chunk, m.cores, cycles);
    if (timing)
        fprintf(stderr, "tpu-infer: host time %.1f ms in all, %.1f ms in the model's runs: %.2f ms per image (%.2f in all)\n",
                1e3 * (now_s() - t_start), 1e3 * t_runs, 1e3 * t_runs / (double)total,
                1e3 * (now_s() - t_start) / (double)total);
    if (own_work && !rtl) { /* nothing kept */ }
    for (unsigned i = 1; i < m.cores; i++) free(host[i]);
    if (map_len) munmap(map_base, map_len);
    else free(host[0]);
    free(host); free(x); free(y); free(xin); free(yout); free(prog);
    return status;
}
