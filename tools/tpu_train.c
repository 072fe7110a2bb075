/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-train: trains an ONNX model data-parallel on the board C model (docs/training.md).
   Every step runs one compiled program per core (forward, loss, backward, all-reduce,
   optimizer); the host places each core's share of the batch and its labels, and after the
   step checks that every core holds the same weights, bit for bit. Prints one line per epoch
   in the style of Keras, writes the curves as CSV and the trained model as ONNX.
   Exit 0 done, 1 a run error, a core mismatch or a non-finite loss or weight, 2 bad
   arguments or input (every output path is checked before any work). */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "tpu/board.h"
#include "tpu/cli.h"
#include "tpu/config.h"
#include "tpu/core.h"
#include "tpu/npy.h"
#include "tpuc/hwopts.h"
#include "tpuc/npyio.h"
#include "tpuc/train.h"
#include "tpuc/tpuc.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tpu-train MODEL.onnx (--dataset fashion-mnist | --x-train X.npy --y-train Y.npy\n"
            "                 [--x-val X.npy --y-val Y.npy]) [options] [hardware options]\n"
            "Training:\n"
            "  --epochs E            epochs (default 1)\n"
            "  --steps-per-epoch S   steps per epoch (default: all full batches of the data)\n"
            "  --batch B             global batch, split over the cores (default 64; a multiple of C)\n"
            "  --micro-batch M       rows per core per micro-step: the step's forward and backward\n"
            "                        run (B / C) / M times, their gradients summed on the device,\n"
            "                        then one all-reduce and update (default: B / C when the step\n"
            "                        fits UB, ACC and IMEM, else the fewest micro-steps that fit)\n"
            "  --optimizer O         sgd or adam (default adam)\n"
            "  --lr L                learning rate (default 1e-3 for adam, 0.01 for sgd)\n"
            "  --momentum M          sgd momentum (default 0)\n"
            "  --seed S              batch order: splitmix64 Fisher-Yates per epoch (default 1)\n"
            "  --logits              the model ends in logits: softmax + cross-entropy are added\n"
            "  --val-steps V         validation batches per epoch (default: the whole set)\n"
            "Output:\n"
            "  --csv FILE            the curves, one row per epoch\n"
            "  --save-onnx OUT.onnx  the trained model (the input model with new weights)\n"
            "  --plot PNG            also train PyTorch fp32 the same way (models/train_ref.py:\n"
            "                        CSV.torch.csv) and plot both curves (needs --csv)\n"
            "  --grads-dir DIR       after the first step: each layer's all-reduced gradients\n"
            "                        (grad<l>_w.npy, grad<l>_b.npy) and weights (w<l>.npy, b<l>.npy)\n"
            "  --freq-mhz F          clock for the simulated ms per step (default 700, TPU v2's)\n"
            "  --rtl K               co-simulate the first K steps on the verilated board (or\n"
            "                        core, C = 1), built on demand: every core's trace and host\n"
            "                        memory after the step must equal the board model's\n"
            "  --work W              keep the co-simulation's job files in W (default: a\n"
            "                        temporary folder, removed)\n"
            "Checkpoints:\n"
            "  --checkpoint FILE     after every step and epoch, the weights, optimizer state and\n"
            "                        position to FILE (written atomically: an interrupted run\n"
            "                        loses at most the step in flight)\n"
            "  --resume FILE         continue the run a checkpoint was written by (same model,\n"
            "                        data, options); the CSV, plot and ONNX cover the whole run\n"
            "  --max-steps S         stop after S steps of this invocation (with --checkpoint;\n"
            "                        e.g. a job scheduler's time slice); no CSV or ONNX written\n"
            "Expert:\n"
            "  --allow-nonfinite     accept NaN/Inf in the data and train on after a non-finite\n"
            "                        loss or weight (default: such data is refused at load, exit\n"
            "                        2; a run stops at the first such step, exit 1, before that\n"
            "                        step's checkpoint, the CSV or the ONNX is written)\n"
            "Hardware (the same options and defaults as gen):\n"
            TPUC_HW_HELP
            "Exit status: 0 done, 1 a run error (a core mismatch, a non-finite loss or weight),\n"
            "2 bad arguments or input (an output path is checked before any work).\n");
}

enum { O_HELP, O_DATASET, O_XT, O_YT, O_XV, O_YV, O_EPOCHS, O_SPE, O_BATCH, O_OPT, O_LR, O_MOM,
       O_SEED, O_LOGITS, O_VALSTEPS, O_CSV, O_PLOT, O_SAVE, O_GRADS, O_FREQ, O_RTL, O_WORK,
       O_MICRO, O_CKPT, O_RESUME, O_MAXSTEPS, O_NONFINITE };
static const tpu_cli_opt_t opts[] = {
    {"help", 'h', 0, O_HELP},
    {"dataset", 0, TPU_CLI_VALUE, O_DATASET},
    {"x-train", 0, TPU_CLI_VALUE, O_XT},
    {"y-train", 0, TPU_CLI_VALUE, O_YT},
    {"x-val", 0, TPU_CLI_VALUE, O_XV},
    {"y-val", 0, TPU_CLI_VALUE, O_YV},
    {"epochs", 0, TPU_CLI_VALUE, O_EPOCHS},
    {"steps-per-epoch", 0, TPU_CLI_VALUE, O_SPE},
    {"batch", 0, TPU_CLI_VALUE, O_BATCH},
    {"optimizer", 0, TPU_CLI_VALUE, O_OPT},
    {"lr", 0, TPU_CLI_VALUE, O_LR},
    {"momentum", 0, TPU_CLI_VALUE, O_MOM},
    {"seed", 0, TPU_CLI_VALUE, O_SEED},
    {"logits", 0, 0, O_LOGITS},
    {"val-steps", 0, TPU_CLI_VALUE, O_VALSTEPS},
    {"csv", 0, TPU_CLI_VALUE, O_CSV},
    {"plot", 0, TPU_CLI_VALUE, O_PLOT},
    {"save-onnx", 0, TPU_CLI_VALUE, O_SAVE},
    {"grads-dir", 0, TPU_CLI_VALUE, O_GRADS},
    {"freq-mhz", 0, TPU_CLI_VALUE, O_FREQ},
    {"rtl", 0, TPU_CLI_VALUE, O_RTL},
    {"work", 0, TPU_CLI_VALUE, O_WORK},
    {"micro-batch", 0, TPU_CLI_VALUE, O_MICRO},
    {"checkpoint", 0, TPU_CLI_VALUE, O_CKPT},
    {"resume", 0, TPU_CLI_VALUE, O_RESUME},
    {"max-steps", 0, TPU_CLI_VALUE, O_MAXSTEPS},
    {"allow-nonfinite", 0, 0, O_NONFINITE},
    TPUC_HW_CLI_OPTS,
    {NULL, 0, 0, 0},
};

static int fail(int code, const char *msg)
{
    fprintf(stderr, "tpu-train: error: %s\n", msg);
    return code;
}

/* ---- data ---- */
typedef struct {
    uint64_t n;      /* examples */
    int64_t feat;    /* floats per example */
    float *x;
    int32_t *y;
} data_t;

/* A gzip'd IDX file (Fashion-MNIST: magic 0x0803 images, 0x0801 labels, big-endian dims). */
static int idx_read(const char *path, unsigned want_dims, uint32_t *dims, uint8_t **out,
                    char *err, size_t errlen)
{
    gzFile z = gzopen(path, "rb");
    if (!z) { snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno ? errno : ENOENT)); return -1; }
    uint8_t h[16];
    unsigned hb = 4 + 4 * want_dims;
    int rc = -1;
    if (gzread(z, h, hb) != (int)hb || h[0] || h[1] || h[2] != 0x08 || h[3] != want_dims) {
        snprintf(err, errlen, "%s: not an IDX file of unsigned bytes with %u dimensions", path, want_dims);
        goto out;
    }
    uint64_t total = 1;
    for (unsigned d = 0; d < want_dims; d++) {
        dims[d] = (uint32_t)h[4 + 4 * d] << 24 | (uint32_t)h[5 + 4 * d] << 16 | (uint32_t)h[6 + 4 * d] << 8 | h[7 + 4 * d];
        if (dims[d] == 0 || dims[d] > 10000000u) { snprintf(err, errlen, "%s: dimension %u is %u", path, d, dims[d]); goto out; }
        total *= dims[d];
    }
    if (total > (1ull << 32)) { snprintf(err, errlen, "%s: too large", path); goto out; }
    *out = malloc(total + 1);
    if (!*out) { snprintf(err, errlen, "out of memory"); goto out; }
    uint64_t got = 0;
    while (got < total) {
        unsigned chunk = total - got > (1u << 30) ? (1u << 30) : (unsigned)(total - got);
        int r = gzread(z, *out + got, chunk);
        if (r <= 0) break;
        got += (uint64_t)r;
    }
    if (got != total) {
        free(*out); *out = NULL;
        snprintf(err, errlen, "%s: %" PRIu64 " data bytes, the header says %" PRIu64, path, got, total);
        goto out;
    }
    rc = 0;
out:
    gzclose(z);
    return rc;
}

static int load_fmnist(const char *which, data_t *d, char *err, size_t errlen)
{
    const char *dir = getenv("TPU_FASHION_MNIST_DIR");
    if (!dir) dir = "/usr/share/datasets/fashion-mnist";
    char pi[4200], pl[4200];
    snprintf(pi, sizeof pi, "%s/%s-images-idx3-ubyte.gz", dir, which);
    snprintf(pl, sizeof pl, "%s/%s-labels-idx1-ubyte.gz", dir, which);
    uint32_t di[3], dl[1];
    uint8_t *img = NULL, *lab = NULL;
    if (idx_read(pi, 3, di, &img, err, errlen)) return -1;
    if (idx_read(pl, 1, dl, &lab, err, errlen)) { free(img); return -1; }
    if (dl[0] != di[0]) {
        snprintf(err, errlen, "%.1000s: %u labels for %u images", pl, dl[0], di[0]);
        free(img); free(lab);
        return -1;
    }
    d->n = di[0];
    d->feat = (int64_t)di[1] * di[2];
    d->x = malloc(d->n * (uint64_t)d->feat * sizeof *d->x + 4);
    d->y = malloc(d->n * sizeof *d->y + 4);
    if (!d->x || !d->y) { free(img); free(lab); snprintf(err, errlen, "out of memory"); return -1; }
    for (uint64_t i = 0; i < d->n * (uint64_t)d->feat; i++) d->x[i] = (float)img[i] / 255.0f;
    for (uint64_t i = 0; i < d->n; i++) d->y[i] = lab[i];
    free(img); free(lab);
    return 0;
}

/* The first NaN or Inf of n floats: its index, or n when every value is finite. */
static uint64_t first_nonfinite(const float *v, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return i;
    return n;
}

/* Examples xp (float or integer token ids), labels yp. A NaN or Inf example value is refused
   (it makes every loss after it NaN) unless allow_nonfinite. */
static int load_npy(const char *xp, const char *yp, int allow_nonfinite, data_t *d, char *err,
                    size_t errlen)
{
    tpuc_npy_t x, y;
    if (tpuc_npy_load(xp, -1, &x, err, errlen)) return -1;
    if (!x.i && !allow_nonfinite) {
        const uint64_t k = first_nonfinite(x.f, x.elems);
        if (k < x.elems) {
            const uint64_t per = x.dims[0] > 0 ? x.elems / (uint64_t)x.dims[0] : 1;
            snprintf(err, errlen, "%s: element %" PRIu64 " (example %" PRIu64 ") is %s; expected "
                     "finite values (--allow-nonfinite trains on them anyway)", xp, k,
                     per ? k / per : 0, isnan(x.f[k]) ? "NaN" : x.f[k] > 0 ? "+Inf" : "-Inf");
            tpuc_npy_free(&x);
            return -1;
        }
    }
    if (x.i) { /* integer examples: token ids (checked against the model's vocabulary later) */
        x.f = malloc(x.elems * sizeof *x.f + 4);
        if (!x.f) { tpuc_npy_free(&x); snprintf(err, errlen, "out of memory"); return -1; }
        for (uint64_t k = 0; k < x.elems; k++)
            x.f[k] = x.i[k] < 0 || x.i[k] > (1 << 24) ? -1.0f : (float)x.i[k];
        free(x.i);
        x.i = NULL;
    }
    if (tpuc_npy_load(yp, 1, &y, err, errlen)) { tpuc_npy_free(&x); return -1; }
    if (y.ndim != 1 || (uint64_t)y.dims[0] != (uint64_t)x.dims[0] || x.dims[0] == 0) {
        snprintf(err, errlen, "%s: labels of shape [%lld%s], expected [%lld] (one per example of %s)",
                 yp, (long long)y.dims[0], y.ndim > 1 ? ", ..." : "", (long long)x.dims[0], xp);
        tpuc_npy_free(&x); tpuc_npy_free(&y);
        return -1;
    }
    d->n = (uint64_t)x.dims[0];
    d->feat = (int64_t)(x.elems / d->n);
    d->x = x.f;
    d->y = malloc(d->n * sizeof *d->y + 4);
    if (!d->y) { tpuc_npy_free(&y); snprintf(err, errlen, "out of memory"); return -1; }
    for (uint64_t i = 0; i < d->n; i++) {
        if (y.i[i] < 0 || y.i[i] > INT32_MAX) {
            snprintf(err, errlen, "%s: label %lld at %" PRIu64 " is negative or too large", yp,
                     (long long)y.i[i], i);
            tpuc_npy_free(&y);
            return -1;
        }
        d->y[i] = (int32_t)y.i[i];
    }
    tpuc_npy_free(&y);
    return 0;
}

/* ---- batch order: splitmix64, Fisher-Yates (docs/training.md; models/train_ref.py) ---- */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void shuffle(uint32_t *perm, uint64_t n, uint64_t *state)
{
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = splitmix64(state) % i;
        uint32_t t = perm[i - 1]; perm[i - 1] = perm[j]; perm[j] = t;
    }
}

static int write_f32(const char *dir, const char *name, const float *v, size_t rows, size_t cols,
                     char *err, size_t errlen)
{
    char p[4300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    tpu_npy_t a;
    if (tpu_npy_alloc(&a, TPU_NPY_F4, cols ? 2 : 1, cols ? rows : 1, cols ? cols : rows)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(a.data, v, rows * (cols ? cols : 1) * 4);
    int rc = tpu_npy_write(p, &a, err, errlen);
    tpu_npy_free(&a);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    FILE *trace[TPU_BOARD_CORES_MAX]; /* this run's traces (--rtl), or NULL */
    tpu_board_t *board;
    unsigned cores;
    uint8_t **host;
    uint64_t host_bytes;
    uint64_t cycles, mxu_busy; /* the last run: the slowest core's cycles, all cores' MXU busy */
} runner_t;

/* One run of the step program from pc (0; a micro-step's update part: t->u_pc). */
static int run_step(runner_t *r, const tpuc_train_t *t, size_t pc, char *err, size_t errlen)
{
    tpu_board_job_t job[TPU_BOARD_CORES_MAX];
    tpu_core_result_t res[TPU_BOARD_CORES_MAX];
    for (unsigned i = 0; i < r->cores; i++) {
        job[i].prog = t->prog.insns;
        job[i].count = t->prog.ninsns;
        job[i].pc_start = (unsigned)pc;
        job[i].host = r->host[i];
        job[i].host_bytes = r->host_bytes;
        job[i].trace = r->trace[i];
    }
    char msg[2048] = "";
    int rc = tpu_board_run(r->board, job, res, msg, sizeof msg);
    if (rc != TPU_OK) { snprintf(err, errlen, "the board model failed (status %d) %s", rc, msg); return -1; }
    r->cycles = 0;
    r->mxu_busy = 0;
    for (unsigned i = 0; i < r->cores; i++) {
        if (res[i].status != TPU_CORE_DONE) {
            snprintf(err, errlen, "core %u stopped: status %d, error %d at pc %u %s", i,
                     (int)res[i].status, res[i].err_code, res[i].err_pc, msg);
            return -1;
        }
        if (res[i].uninit_reads) {
            snprintf(err, errlen, "core %u read a row never written (memory %u row %u, pc %u): a "
                     "compiler bug", i, res[i].uninit_mem, res[i].uninit_row, res[i].uninit_pc);
            return -1;
        }
        if (res[i].counters[TPU_CNT_CYCLES] > r->cycles) r->cycles = res[i].counters[TPU_CNT_CYCLES];
        r->mxu_busy += res[i].counters[TPU_CNT_MXU_BUSY];
    }
    return 0;
}

/* Every core's master weights and optimizer state must be the same bytes. */
static int check_cores(const runner_t *r, const tpuc_train_t *t, char *err, size_t errlen)
{
    for (int l = 0; l < t->nlayers; l++) {
        const tpuc_tlayer_t *ly = &t->layer[l];
        uint64_t lo = ly->w_master, hi = ly->xsave; /* master, bf16 copy, state, gradient */
        for (unsigned i = 1; i < r->cores; i++)
            if (memcmp(r->host[0] + lo, r->host[i] + lo, hi - lo) != 0) {
                snprintf(err, errlen, "after the step, core %u's weights or optimizer state of "
                         "layer '%s' differ from core 0's", i, ly->name);
                return -1;
            }
    }
    return 0;
}

static int run_child(const char *const *argv); /* below: a child an interrupt also ends */

/* ---- --rtl: one step as a board job (scripts/infer_rtl.sh, tpu-board-cmp) ---- */
static int write_u16(const char *path, const uint8_t *src, uint64_t bytes, char *err, size_t errlen)
{
    tpu_npy_t a;
    uint64_t rows = bytes / 256;
    if (tpu_npy_alloc(&a, TPU_NPY_U2, 2, rows, 128)) { snprintf(err, errlen, "out of memory"); return -1; }
    memcpy(a.data, src, rows * 256);
    int rc = tpu_npy_write(path, &a, err, errlen);
    tpu_npy_free(&a);
    return rc;
}

/* Before the step: the job folder (model.txt and model.bin for infer_rtl.sh, each core's
   host image and argument file) and the model's trace files. */
static int rtl_prepare(const char *w, const tpuc_hw_t *hw, const tpuc_train_t *t, runner_t *r,
                       size_t pc, char *err, size_t errlen)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/model", w);
    if (mkdir(p, 0777) && errno != EEXIST) { snprintf(err, errlen, "cannot create '%.1500s'", p); return -1; }
    snprintf(p, sizeof p, "%s/model.txt", w);
    FILE *f = fopen(p, "w");
    if (!f) { snprintf(err, errlen, "%.1500s: %s", p, strerror(errno)); return -1; }
    fprintf(f, "geom %u %u %u %u %u\naxi_data_bits %u\nboard %u %u %u\n", hw->geom.n,
            hw->geom.ub_rows, hw->geom.acc_rows, hw->geom.wmem_rows, hw->geom.imem_insns,
            hw->axi_data_bits, hw->cores, hw->topo_rows, hw->topo_cols);
    if (fclose(f)) { snprintf(err, errlen, "%.1500s: write error", p); return -1; }
    snprintf(p, sizeof p, "%s/model.bin", w);
    if (tpu_file_write(p, t->prog.insns, t->prog.ninsns * sizeof *t->prog.insns, err, errlen)) return -1;
    for (unsigned i = 0; i < r->cores; i++) {
        snprintf(p, sizeof p, "%s/core%u_in.npy", w, i);
        if (write_u16(p, r->host[i], r->host_bytes, err, errlen)) return -1;
        snprintf(p, sizeof p, "%s/core%u.args", w, i);
        f = fopen(p, "w");
        if (!f) { snprintf(err, errlen, "%.1500s: %s", p, strerror(errno)); return -1; }
        fprintf(f, "# tpu-train --rtl: core %u's training step%s\n--prog %s/model.bin\n--hostmem-mib %" PRIu64
                "\n--load 0=%s/core%u_in.npy\n--dump 0=host.npy:u2:%" PRIu64 "x128\n",
                i, pc ? " (its update part)" : t->u_pc ? " (a micro-step)" : "", w, r->host_bytes >> 20, w, i,
                r->host_bytes / 256);
        if (pc) fprintf(f, "--pc-start %zu\n", pc);
        if (fclose(f)) { snprintf(err, errlen, "%.1500s: write error", p); return -1; }
        snprintf(p, sizeof p, "%s/model/core%u.trace", w, i);
        r->trace[i] = fopen(p, "w");
        if (!r->trace[i]) { snprintf(err, errlen, "%.1500s: %s", p, strerror(errno)); return -1; }
    }
    return 0;
}

/* After the model's step: its dumps, then the RTL run and the comparison. */
static int rtl_run(const char *w, runner_t *r, char *err, size_t errlen)
{
    char p[4400];
    for (unsigned i = 0; i < r->cores; i++) {
        if (r->trace[i] && fclose(r->trace[i])) { r->trace[i] = NULL; snprintf(err, errlen, "trace write error"); return -1; }
        r->trace[i] = NULL;
        snprintf(p, sizeof p, "%s/model/core%u", w, i);
        if (mkdir(p, 0777) && errno != EEXIST) { snprintf(err, errlen, "cannot create '%.1500s'", p); return -1; }
        snprintf(p, sizeof p, "%s/model/core%u/host.npy", w, i);
        if (write_u16(p, r->host[i], r->host_bytes, err, errlen)) return -1;
    }
    char self[4096] = "", script[4300];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl > 0) self[sl] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(script, sizeof script, "%s/../../scripts/infer_rtl.sh", self[0] ? self : ".");
    const char *av[] = {"/bin/sh", script, w, w, NULL};
    if (run_child(av)) {
        snprintf(err, errlen, "the RTL run of the step differs from the model or failed (job in %.1500s)", w);
        return -1;
    }
    return 0;
}

/* The step's cycles and MXU utilisation per phase, from the model's per-instruction completion
   cycles (every core runs the same program; the arrays hold the last core to finish each
   instruction; a collective's own cycles land on the instruction after it, in its phase). */
static void phases(const tpuc_train_t *t, const uint64_t *done, const uint64_t *mxu)
{
    uint64_t cyc[TPUC_PH_COUNT] = {0}, busy[TPUC_PH_COUNT] = {0}, prev = 0, pm = 0;
    for (size_t pc = 0; pc < t->prog.ninsns && pc < t->nphase; pc++) {
        if (t->u_pc && pc == t->u_pc) prev = pm = 0; /* the update part: its own run */
        if (!done[pc]) continue; /* a collective: no record of its own */
        const int ph = t->phase[pc];
        const uint64_t times = t->u_pc && pc < t->u_pc ? t->micro : 1u;
        if (done[pc] > prev) { cyc[ph] += (done[pc] - prev) * times; prev = done[pc]; }
        if (mxu[pc] > pm) { busy[ph] += (mxu[pc] - pm) * times; pm = mxu[pc]; }
    }
    fprintf(stderr, "tpu-train: step 1 by phase:");
    for (int ph = 0; ph < TPUC_PH_COUNT; ph++)
        fprintf(stderr, "%s %s %" PRIu64 " cycles (MXU %.1f%%)", ph ? "," : "", tpuc_train_phase_name(ph),
                cyc[ph], cyc[ph] ? 100.0 * (double)busy[ph] / (double)cyc[ph] : 0.0);
    fprintf(stderr, "\n");
}

static void progress(uint64_t step, uint64_t steps, double loss, double acc, int final,
                     double secs)
{
    int w = 30, done = steps ? (int)(w * step / steps) : w;
    char bar[64];
    for (int i = 0; i < w; i++) bar[i] = i < done - 1 ? '=' : i == done - 1 ? (final ? '=' : '>') : '.';
    bar[w] = 0;
    printf("\r%6" PRIu64 "/%" PRIu64 " [%s] - %.0fs - loss: %.4f - accuracy: %.4f", step, steps,
           bar, secs, loss, acc);
    fflush(stdout);
}

/* ---- Interrupts (docs/training.md "Bad paths, interrupts and non-finite values") ----
   tpu_out_clean_on_signals removes tpu_out_open's temporaries (the CSV, the checkpoint, the
   ONNX, --grads-dir's files) on TERM, INT and HUP. Chained before it, on_signal cleans what
   tpu-train makes otherwise: a child it waits for (train_ref.py for --plot, the --rtl job
   script; in their own process group) gets the signal and is waited for, so that it removes
   its own temporaries, then the temporary --rtl work folder is removed. Only
   async-signal-safe calls: kill, waitpid, fork, execv, signal, raise. */
static const int sig_list[3] = {SIGTERM, SIGINT, SIGHUP};
static struct sigaction sig_next[3];      /* the handlers before ours (tpu_out_open's) */
static volatile pid_t sig_child;          /* the child being waited for, or 0 */
static volatile sig_atomic_t sig_have_work;
static char sig_work[4200];               /* the temporary work folder tpu-train made */
static char *sig_rm_argv[] = {"rm", "-rf", sig_work, NULL};

static void on_signal(int sig)
{
    const pid_t c = sig_child;
    if (c > 0) {
        kill(-c, sig);
        waitpid(c, NULL, 0);
    }
    if (sig_have_work) {
        pid_t p = fork();
        if (p == 0) { execv("/bin/rm", sig_rm_argv); _exit(127); }
        if (p > 0) waitpid(p, NULL, 0);
    }
    for (int i = 0; i < 3; i++)
        if (sig_list[i] == sig && sig_next[i].sa_handler != SIG_DFL && sig_next[i].sa_handler != SIG_IGN)
            sig_next[i].sa_handler(sig); /* removes the temporaries and re-raises sig */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void clean_on_signals(void)
{
    tpu_out_clean_on_signals();
    for (int i = 0; i < 3; i++) {
        struct sigaction sa;
        if (sigaction(sig_list[i], NULL, &sig_next[i]) || sig_next[i].sa_handler == SIG_IGN)
            continue; /* ignored by the parent (nohup): stays ignored */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigfillset(&sa.sa_mask);
        sigaction(sig_list[i], &sa, NULL);
    }
}

/* Runs argv[0] (a path) in its own process group and waits: 0 when it exited 0. The signals
   are blocked from the fork until sig_child names it, so an interrupt never misses it. */
static int run_child(const char *const *argv)
{
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        for (int i = 0; i < 3; i++)
            if (sig_next[i].sa_handler != SIG_IGN) signal(sig_list[i], SIG_DFL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (pid > 0) {
        setpgid(pid, pid);
        sig_child = pid;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    int ws = 0;
    int r = pid > 0 ? waitpid(pid, &ws, 0) : -1;
    sig_child = 0;
    return r < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0 ? -1 : 0;
}

/* ---- Output paths, checked before any work (exit 2) ---- */
typedef struct {
    const char *opt, *path; /* path NULL: not given */
} arg_path_t;

/* path's folder ("." for a bare name) and last component, into d and *base */
static void split_path(const char *path, char *d, size_t dlen, const char **base)
{
    const char *sl = strrchr(path, '/');
    *base = sl ? sl + 1 : path;
    if (!sl) snprintf(d, dlen, ".");
    else if (sl == path) snprintf(d, dlen, "/");
    else snprintf(d, dlen, "%.*s", (int)(sl - path), path);
}

/* 1 when outputs a and b are one file: the same existing file (any spelling or link), or the
   same new name in the same folder. */
static int same_output(const char *a, const char *b)
{
    if (tpu_same_file(a, b)) return 1;
    char da[4200], db[4200];
    const char *ba, *bb;
    split_path(a, da, sizeof da, &ba);
    split_path(b, db, sizeof db, &bb);
    return strcmp(ba, bb) == 0 && tpu_same_file(da, db);
}

/* 1 when name is one of the files output folder opt writes: --grads-dir's grad<l>_w.npy,
   grad<l>_b.npy, w<l>.npy, b<l>.npy, loss.npy; --work's model.txt, model.bin, core<i>_in.npy,
   core<i>.args (rtl_prepare) */
static int dir_writes(const char *opt, const char *name)
{
    int l, n = 0;
    char c;
    if (!strcmp(opt, "--work")) {
        if (!strcmp(name, "model.txt") || !strcmp(name, "model.bin")) return 1;
        if (sscanf(name, "core%d_in.npy%n", &l, &n) == 1 && n > 0 && !name[n]) return 1;
        n = 0;
        return sscanf(name, "core%d.args%n", &l, &n) == 1 && n > 0 && !name[n];
    }
    if (!strcmp(name, "loss.npy")) return 1;
    if (sscanf(name, "grad%d_%c.npy%n", &l, &c, &n) == 2 && n > 0 && !name[n] && (c == 'w' || c == 'b')) return 1;
    n = 0;
    return sscanf(name, "%c%d.npy%n", &c, &l, &n) == 2 && n > 0 && !name[n] && (c == 'w' || c == 'b');
}

/* An output folder dir (option opt) that holds one of the n files f (inputs or other outputs)
   under a name it writes: -1 with one line in err, else 0. */
static int dir_clobbers(const char *opt, const char *dir, const arg_path_t *f, int n, char *err,
                        size_t errlen)
{
    for (int k = 0; k < n; k++) {
        char d[4200];
        const char *base;
        if (!f[k].path) continue;
        split_path(f[k].path, d, sizeof d, &base);
        if (dir_writes(opt, base) && tpu_same_file(d, dir)) {
            snprintf(err, errlen, "%s '%s' would overwrite %s '%s' (it writes %s; allowed: a "
                     "folder without that file)", opt, dir, f[k].opt, f[k].path,
                     strcmp(opt, "--work") ? "grad<l>_w.npy, grad<l>_b.npy, w<l>.npy, b<l>.npy, loss.npy"
                                           : "model.txt, model.bin, core<i>_in.npy, core<i>.args");
            return -1;
        }
    }
    return 0;
}

/* Every output file writable (tpu_out_check) and every output folder possible
   (tpu_outdir_check); no output the same file as an input or as another output, no input or
   output among the files --grads-dir or --work writes. --checkpoint F --resume F is allowed:
   it is how a run continues (docs/training.md "Checkpoint and resume"). 0, or -1 with one
   line in err. */
static int check_paths(const arg_path_t *out, int nout, const arg_path_t *dirs, int ndirs,
                       const arg_path_t *in, int nin, char *err, size_t errlen)
{
    for (int i = 0; i < nout; i++)
        if (out[i].path && tpu_out_check(out[i].opt, out[i].path, err, errlen)) return -1;
    for (int i = 0; i < ndirs; i++)
        if (dirs[i].path && tpu_outdir_check(dirs[i].opt, dirs[i].path, err, errlen)) return -1;
    for (int i = 0; i < nout; i++) {
        if (!out[i].path) continue;
        for (int k = 0; k < nin; k++) {
            if (!strcmp(out[i].opt, "--checkpoint") && !strcmp(in[k].opt, "--resume")) continue;
            if (tpu_out_distinct(out[i].opt, out[i].path, in[k].opt, in[k].path, err, errlen)) return -1;
        }
        for (int k = i + 1; k < nout; k++)
            if (out[k].path && same_output(out[i].path, out[k].path)) {
                snprintf(err, errlen, "%s '%s' and %s '%s' are the same file (allowed: a "
                         "different file for each output)", out[i].opt, out[i].path, out[k].opt,
                         out[k].path);
                return -1;
            }
    }
    for (int i = 0; i < ndirs; i++)
        if (dirs[i].path && (dir_clobbers(dirs[i].opt, dirs[i].path, in, nin, err, errlen) ||
                             dir_clobbers(dirs[i].opt, dirs[i].path, out, nout, err, errlen)))
            return -1;
    return 0;
}

/* ---- Non-finite values (stopped unless --allow-nonfinite) ---- */

/* After a step: 0 when its loss and every layer's new master weights and biases are finite;
   else -1 with "epoch E, step S: ..." in err. */
static int check_finite(const tpuc_train_t *t, const uint8_t *host, float loss, uint64_t ep,
                        uint64_t step, char *err, size_t errlen)
{
    if (!isfinite(loss)) {
        snprintf(err, errlen, "epoch %" PRIu64 ", step %" PRIu64 ": the loss is %s: the run "
                 "diverged (try a smaller --lr); stopped without writing this step's "
                 "checkpoint, the CSV or the ONNX (--allow-nonfinite trains on)", ep, step,
                 isnan(loss) ? "NaN" : "Inf");
        return -1;
    }
    for (int l = 0; l < t->nlayers; l++) {
        const tpuc_tlayer_t *ly = &t->layer[l];
        const uint64_t nw = (uint64_t)(ly->k * ly->o), nb = (uint64_t)ly->o;
        float *w = malloc(nw * 4 + 4), *b = malloc(nb * 4 + 4);
        int bad = 0;
        if (w && b) {
            tpuc_train_host_weights(t, host, l, w, b);
            bad = first_nonfinite(w, nw) < nw || (ly->has_bias && first_nonfinite(b, nb) < nb);
        }
        free(w);
        free(b);
        if (!w || !b) { snprintf(err, errlen, "out of memory"); return -1; }
        if (bad) {
            snprintf(err, errlen, "epoch %" PRIu64 ", step %" PRIu64 ": layer '%s' has a "
                     "non-finite weight after the update: the run diverged (try a smaller "
                     "--lr); stopped without writing this step's checkpoint, the CSV or the "
                     "ONNX (--allow-nonfinite trains on)", ep, step, ly->name);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    char err[2048];
    tpu_cli_t cli;
    clean_on_signals();
    tpu_cli_init(&cli, argc, argv, opts);
    const char *model = NULL, *dataset = NULL, *xt = NULL, *yt = NULL, *xv = NULL, *yv = NULL;
    const char *csv = NULL, *plot = NULL, *save = NULL, *grads = NULL, *optname = "adam";
    const char *work = NULL;
    uint64_t rtl_steps = 0;
    uint64_t epochs = 1, spe = 0, batch = 64, seed = 1, valsteps = 0, freq = 700, mb = 0, maxsteps = 0;
    const char *ckpt = NULL, *resume = NULL;
    tpuc_hwopts_t ho;
    tpuc_hwopts_init(&ho);
    double lr = -1, mom = 0;
    int logits = 0, have_spe = 0, have_vs = 0, allow_nf = 0;
    for (;;) {
        const char *name, *val;
        int id = tpu_cli_next(&cli, &name, &val, err, sizeof err);
        if (id == TPU_CLI_END) break;
        if (id == TPU_CLI_ERROR) return fail(2, err);
        if (id == TPU_CLI_POSITIONAL) {
            if (model) {
                snprintf(err, sizeof err, "a second model '%s' (after '%s'), expected one", val, model);
                return fail(2, err);
            }
            model = val;
            continue;
        }
        int bad = 0;
        switch (id) {
        case O_HELP: usage(stdout); return 0;
        case O_DATASET: dataset = val; break;
        case O_XT: xt = val; break;
        case O_YT: yt = val; break;
        case O_XV: xv = val; break;
        case O_YV: yv = val; break;
        case O_EPOCHS: bad = tpu_cli_count(name, val, 1, 100000, &epochs, err, sizeof err); break;
        case O_SPE: bad = tpu_cli_count(name, val, 1, 1u << 30, &spe, err, sizeof err); have_spe = 1; break;
        case O_BATCH: bad = tpu_cli_count(name, val, 1, 1u << 20, &batch, err, sizeof err); break;
        case O_OPT: optname = val; break;
        case O_LR: bad = tpuc_opt_real("lr", val, 0, 1e6, &lr, err, sizeof err); break;
        case O_MOM: bad = tpuc_opt_real("momentum", val, 0, 1, &mom, err, sizeof err); break;
        case O_SEED: bad = tpu_cli_count(name, val, 0, UINT64_MAX, &seed, err, sizeof err); break;
        case O_LOGITS: logits = 1; break;
        case O_VALSTEPS: bad = tpu_cli_count(name, val, 0, 1u << 30, &valsteps, err, sizeof err); have_vs = 1; break;
        case O_CSV: csv = val; break;
        case O_PLOT: plot = val; break;
        case O_SAVE: save = val; break;
        case O_GRADS: grads = val; break;
        case O_RTL: bad = tpu_cli_count(name, val, 1, 1000000, &rtl_steps, err, sizeof err); break;
        case O_WORK: work = val; break;
        case O_MICRO: bad = tpu_cli_count(name, val, 1, 1u << 20, &mb, err, sizeof err); break;
        case O_CKPT: ckpt = val; break;
        case O_RESUME: resume = val; break;
        case O_MAXSTEPS: bad = tpu_cli_count(name, val, 1, 1ull << 40, &maxsteps, err, sizeof err); break;
        case O_NONFINITE: allow_nf = 1; break;
        case O_FREQ: bad = tpu_cli_count(name, val, 1, 10000, &freq, err, sizeof err); break;
        default: bad = tpuc_hwopts_parse(&ho, id, name, val, err, sizeof err); break;
        }
        if (bad) return fail(2, err);
    }
    if (!model) { usage(stderr); return fail(2, "no model given (expected MODEL.onnx)"); }
    tpuc_train_opts_t o;
    memset(&o, 0, sizeof o);
    if (!strcmp(optname, "adam")) o.optimizer = TPUC_OPT_ADAM;
    else if (!strcmp(optname, "sgd")) o.optimizer = TPUC_OPT_SGD;
    else {
        snprintf(err, sizeof err, "--optimizer '%s': expected sgd or adam", optname);
        return fail(2, err);
    }
    if (mom != 0 && o.optimizer != TPUC_OPT_SGD) return fail(2, "--momentum goes with --optimizer sgd");
    o.lr = lr >= 0 ? lr : (o.optimizer == TPUC_OPT_ADAM ? 1e-3 : 0.01);
    o.momentum = mom;
    o.beta1 = 0.9; o.beta2 = 0.999; o.eps = 1e-8;
    o.logits = logits;
    o.save_grads = grads != NULL;
    if (dataset && (xt || yt || xv || yv)) return fail(2, "--dataset and --x-train/--y-train/--x-val/--y-val together: choose one");
    if (dataset && strcmp(dataset, "fashion-mnist")) {
        snprintf(err, sizeof err, "--dataset '%s': expected fashion-mnist", dataset);
        return fail(2, err);
    }
    if (!dataset && (!xt || !yt)) return fail(2, "no data: expected --dataset fashion-mnist or --x-train X.npy --y-train Y.npy");
    if ((xv != NULL) != (yv != NULL)) return fail(2, "--x-val and --y-val go together");
    if (plot && !csv) return fail(2, "--plot needs --csv (the curves it plots)");
    if (maxsteps && !ckpt) return fail(2, "--max-steps needs --checkpoint (where the run continues from)");
    /* every output path, before any work; then what a killed run left of their temporaries */
    char refcsv[4300] = "";
    if (plot) snprintf(refcsv, sizeof refcsv, "%s.torch.csv", csv); /* train_ref.py's curves */
    if (grads) tpu_path_trim((char *)grads); /* "DIR/" names DIR (argv is writable) */
    if (work) tpu_path_trim((char *)work);
    const arg_path_t outs[] = {{"--csv", csv}, {"--save-onnx", save}, {"--plot", plot},
                               {"--checkpoint", ckpt}, {"--plot's reference CSV", plot ? refcsv : NULL}};
    const arg_path_t dirs[] = {{"--grads-dir", grads}, {"--work", work}};
    const arg_path_t ins[] = {{"the model", model}, {"--x-train", xt}, {"--y-train", yt},
                              {"--x-val", xv}, {"--y-val", yv}, {"--resume", resume}};
    if (check_paths(outs, 5, dirs, 2, ins, 6, err, sizeof err)) return fail(2, err);
    for (int i = 0; i < 5; i++)
        if (outs[i].path) tpu_out_remove_stale(outs[i].path);
    if (batch % ho.cores) {
        snprintf(err, sizeof err, "--batch %" PRIu64 ": must be a multiple of --cores %" PRIu64 " (every core takes the same share)", batch, ho.cores);
        return fail(2, err);
    }

    if (mb && ((batch / ho.cores) % mb || mb > batch / ho.cores)) {
        snprintf(err, sizeof err, "--micro-batch %" PRIu64 ": must divide the %" PRIu64 " rows per core "
                 "(--batch %" PRIu64 " over %" PRIu64 " cores)", mb, batch / ho.cores, batch, ho.cores);
        return fail(2, err);
    }
    if (mb && (batch / ho.cores) / mb > 65536) return fail(2, "--micro-batch: more than 65536 micro-steps");
    o.micro = mb ? (unsigned)((batch / ho.cores) / mb) : 1u;

    tpuc_hw_t hw;
    memset(&hw, 0, sizeof hw);
    if (tpuc_hwopts_resolve(&ho, &hw, err, sizeof err)) return fail(2, err);
    const unsigned nn = hw.geom.n;
    hw.freq_mhz = (unsigned)freq;
    hw.batch = (long)(batch / o.micro); /* one micro-step's rows over the cores */

    /* data */
    data_t tr = {0}, va = {0};
    if (dataset) {
        if (load_fmnist("train", &tr, err, sizeof err) || load_fmnist("t10k", &va, err, sizeof err))
            return fail(2, err);
    } else {
        if (load_npy(xt, yt, allow_nf, &tr, err, sizeof err)) return fail(2, err);
        if (xv && load_npy(xv, yv, allow_nf, &va, err, sizeof err)) return fail(2, err);
    }

    /* compile: the step, and the forward pass alone for validation (the same host layout) */
    tpuc_graph_t g;
    if (tpuc_onnx_read_file(model, &g, err, sizeof err)) { tpuc_graph_free(&g); return fail(2, err); }
    tpuc_train_t t, ev;
    memset(&t, 0, sizeof t);
    memset(&ev, 0, sizeof ev);
    int rc = 2;
    runner_t run = {0};
    float *probs = NULL, *wbuf = NULL, *bbuf = NULL, *xb = NULL;
    int32_t *yb = NULL;
    uint32_t *perm = NULL;
    FILE *csvf = NULL;
    tpu_out_t csvo = {0};
    char wdir[4200] = "";
    int own_work = 0;
    uint64_t *insn_done = NULL, *insn_mxu = NULL;
    char *rows = NULL; /* the CSV rows of the finished epochs (also in every checkpoint) */
    size_t rows_len = 0;
    {
        char note[1024];
        tpuc_graph_free(&g);
        if (tpuc_train_compile_micro(model, &hw, &o, batch, batch / ho.cores, mb == 0, &g, &t, note,
                                     sizeof note, err, sizeof err)) {
            memset(&g, 0, sizeof g);
            fail(2, err);
            goto done;
        }
        if (note[0]) fprintf(stderr, "tpu-train: %s\n", note);
    }
    {
        tpuc_train_opts_t oe = o;
        oe.eval_only = 1;
        if (tpuc_train_compile(&g, &hw, &oe, &ev, err, sizeof err)) { fail(2, err); goto done; }
    }
    if (t.in_elems != tr.feat || (va.n && va.feat != tr.feat)) {
        snprintf(err, sizeof err, "the model takes %lld values per example, the data has %lld",
                 (long long)t.in_elems, (long long)(t.in_elems != tr.feat ? tr.feat : va.feat));
        fail(2, err);
        goto done;
    }
    for (int d = 0; d < 2 && t.vocab; d++) {
        const data_t *dd = d ? &va : &tr;
        for (uint64_t i = 0; i < dd->n * (uint64_t)dd->feat; i++) {
            const float v = dd->x[i];
            if (!(v >= 0.0f && v < (float)t.vocab) || v != (float)(int64_t)v) {
                snprintf(err, sizeof err, "%s example %" PRIu64 ": token id %g, the embedding has "
                         "ids 0 .. %lld", d ? "validation" : "training", i / (uint64_t)dd->feat,
                         (double)v, (long long)t.vocab - 1);
                fail(2, err);
                goto done;
            }
        }
    }
    for (uint64_t i = 0; i < tr.n; i++)
        if (tr.y[i] >= t.classes) {
            snprintf(err, sizeof err, "training label %d at %" PRIu64 ": the model has %lld classes (0 .. %lld)",
                     tr.y[i], i, (long long)t.classes, (long long)t.classes - 1);
            fail(2, err);
            goto done;
        }
    for (uint64_t i = 0; i < va.n; i++)
        if (va.y[i] >= t.classes) {
            snprintf(err, sizeof err, "validation label %d at %" PRIu64 ": the model has %lld classes", va.y[i], i, (long long)t.classes);
            fail(2, err);
            goto done;
        }
    /* B the global batch; b a core's rows of one run (a micro-step: t.micro runs a step) */
    const uint64_t B = batch, b = (uint64_t)t.batch, rpc = b * t.micro;
    char mdesc[96] = "";
    if (t.micro > 1) snprintf(mdesc, sizeof mdesc, " (%u micro-steps of %" PRIu64 ")", t.micro, b);
    const uint64_t full = tr.n / B;
    if (full == 0) {
        snprintf(err, sizeof err, "--batch %" PRIu64 " is larger than the %" PRIu64 " training examples", B, tr.n);
        fail(2, err);
        goto done;
    }
    if (!have_spe) spe = full;
    if (spe > full) {
        snprintf(err, sizeof err, "--steps-per-epoch %" PRIu64 ": the data has %" PRIu64 " full batches of %" PRIu64, spe, full, B);
        fail(2, err);
        goto done;
    }
    /* validation: runs of the forward program, Bv examples each (a batch: t.micro runs) */
    const uint64_t Bv = b * hw.cores;
    uint64_t vsteps = va.n ? (va.n + Bv - 1) / Bv : 0;
    if (have_vs && valsteps * t.micro < vsteps) vsteps = valsteps * t.micro;

    /* the board and the host images */
    tpu_board_cfg_t bc;
    memset(&bc, 0, sizeof bc);
    bc.rows = hw.topo_rows; bc.cols = hw.topo_cols;
    bc.link_bits = 0; bc.link_latency = TPU_BOARD_LINK_LATENCY_DEFAULT;
    bc.core.geom = hw.geom;
    bc.core.axi_data_bits = hw.axi_data_bits;
    insn_done = calloc(t.prog.ninsns + 1, sizeof *insn_done);
    insn_mxu = calloc(t.prog.ninsns + 1, sizeof *insn_mxu);
    if (!insn_done || !insn_mxu) { fail(2, "out of memory"); goto done; }
    bc.core.insn_done = insn_done;
    bc.core.insn_mxu = insn_mxu;
    run.board = tpu_board_new(&bc);
    run.cores = hw.cores;
    run.host_bytes = t.host_bytes;
    run.host = calloc(hw.cores, sizeof *run.host);
    probs = malloc(b * (uint64_t)t.classes * sizeof *probs + 4);
    xb = malloc(b * (uint64_t)t.in_elems * sizeof *xb + 4);
    yb = malloc(b * sizeof *yb + 4);
    perm = malloc(tr.n * sizeof *perm + 4);
    if (!run.board || !run.host || !probs || !xb || !yb || !perm) { fail(2, "out of memory or a bad board configuration"); goto done; }
    for (unsigned i = 0; i < hw.cores; i++) {
        run.host[i] = calloc(1, t.host_bytes);
        if (!run.host[i]) { fail(2, "out of memory (host images)"); goto done; }
        tpuc_train_host_init(&t, &g, run.host[i]);
    }
    /* the run's identity for checkpoints: the compiled step and what orders the data */
    const uint64_t fpx[] = {B, seed, spe, tr.n, (uint64_t)tr.feat, va.n, vsteps};
    const uint64_t fp = tpuc_train_fingerprint(&t, fpx, sizeof fpx);
    tpuc_ckpt_pos_t at = {0};
    at.fingerprint = fp;
    at.epoch = 1;
    if (resume) {
        if (tpuc_train_ckpt_read(&t, run.host, hw.cores, &at, resume, err, sizeof err)) { fail(2, err); goto done; }
        if (at.epoch < 1 || at.epoch > epochs + 1 || at.step > spe || (at.epoch == epochs + 1 && at.step)) {
            snprintf(err, sizeof err, "--resume %s: at epoch %" PRIu64 " step %" PRIu64 ", outside this run's %"
                     PRIu64 " epochs of %" PRIu64 " steps", resume, at.epoch, at.step, epochs, spe);
            fail(2, err);
            goto done;
        }
        fprintf(stderr, "tpu-train: resuming %s at epoch %" PRIu64 ", step %" PRIu64 "\n", resume, at.epoch, at.step);
    }
    rows = at.csv;
    rows_len = at.csv_len;
    at.csv = NULL;
    /* (every output path was checked when the options were read) */
    if (grads)
        for (int l = 0; l < t.nlayers; l++) { /* what a killed run left of its files */
            const char *fmt[4] = {"%s/grad%d_w.npy", "%s/grad%d_b.npy", "%s/w%d.npy", "%s/b%d.npy"};
            char p[4400];
            for (int k = 0; k < 4; k++) {
                snprintf(p, sizeof p, fmt[k], grads, l);
                tpu_out_remove_stale(p);
            }
        }
    if (csv) {
        if (tpu_out_open(&csvo, csv, err, sizeof err)) { fail(2, err); goto done; }
        csvf = csvo.f;
        fprintf(csvf, "epoch,loss,accuracy,val_loss,val_accuracy,cycles_per_step,sim_ms_per_step,mxu_util,mxu_busy,wall_s\n");
        if (rows_len) fwrite(rows, 1, rows_len, csvf);
    }
    fprintf(stderr, "tpu-train: %d layers, %zu instructions per step, batch %" PRIu64 " = %u cores x %" PRIu64
            "%s, %s lr %g, N = %u\n", t.nlayers, t.prog.ninsns, B, hw.cores, b * t.micro, mdesc,
            o.optimizer == TPUC_OPT_ADAM ? "adam" : "sgd", o.lr, nn);
    if (rtl_steps) {
        if (rtl_steps > spe) rtl_steps = spe;
        if (work) {
            snprintf(wdir, sizeof wdir, "%s", work);
            if (mkdir(wdir, 0777) && errno != EEXIST) {
                snprintf(err, sizeof err, "--work: cannot create '%.2000s': %s", wdir, strerror(errno));
                fail(2, err);
                goto done;
            }
        } else {
            const char *td = getenv("TMPDIR");
            snprintf(wdir, sizeof wdir, "%s/tpu-train.XXXXXX", td && td[0] ? td : "/tmp");
            if (!mkdtemp(wdir)) { fail(2, "cannot create a work folder"); goto done; }
            own_work = 1;
        }
        char abs[PATH_MAX];
        if (!realpath(wdir, abs) || strlen(abs) >= sizeof wdir) { fail(2, "--work: cannot resolve the folder"); goto done; }
        snprintf(wdir, sizeof wdir, "%s", abs);
        if (own_work) { /* removed on TERM, INT or HUP (on_signal) */
            snprintf(sig_work, sizeof sig_work, "%s", wdir);
            sig_have_work = 1;
        }
    }
    for (uint64_t i = 0; i < tr.n; i++) perm[i] = (uint32_t)i;
    uint64_t state = seed;
    const int tty = isatty(1);
    rc = 1;
    uint64_t ran = 0; /* steps run by this invocation (--max-steps) */
    for (uint64_t ep = 1; ep <= epochs; ep++) {
        shuffle(perm, tr.n, &state);
        if (ep < at.epoch) continue; /* done before the checkpoint: its order replayed */
        printf("Epoch %" PRIu64 "/%" PRIu64 "\n", ep, epochs);
        fflush(stdout);
        const int res = ep == at.epoch;
        double t0 = now_s() - (res ? at.wall : 0), lsum = res ? at.lsum : 0;
        uint64_t correct = res ? at.correct : 0, seen = res ? at.seen : 0;
        uint64_t cyc = res ? at.cycles : 0, busy = res ? at.busy : 0;
        for (uint64_t s = res ? at.step : 0; s < spe; s++) {
            const int cosim = ep == 1 && s < rtl_steps;
            /* the micro-steps (one run when t.micro is 1), then the update part; core c's rows
               of the step are perm[s*B + c*rpc ..], micro-step j's the j-th b of them */
            for (unsigned j = 0; j <= t.micro; j++) {
                const size_t pc = j < t.micro ? 0 : t.u_pc;
                if (j == t.micro && !t.u_pc) break;
                if (j < t.micro)
                    for (unsigned c = 0; c < hw.cores; c++) {
                        for (uint64_t r = 0; r < b; r++) {
                            uint32_t ix = perm[s * B + c * rpc + j * b + r];
                            memcpy(xb + r * (uint64_t)t.in_elems, tr.x + (uint64_t)ix * (uint64_t)tr.feat, (size_t)t.in_elems * 4);
                            yb[r] = tr.y[ix];
                        }
                        tpuc_train_host_batch(&t, run.host[c], xb, yb);
                    }
                if (cosim && rtl_prepare(wdir, &hw, &t, &run, pc, err, sizeof err)) { printf("\n"); fail(1, err); goto done; }
                if (run_step(&run, &t, pc, err, sizeof err)) { printf("\n"); fail(1, err); goto done; }
                if (cosim) {
                    if (rtl_run(wdir, &run, err, sizeof err)) { printf("\n"); fail(1, err); goto done; }
                    if (t.micro > 1)
                        fprintf(stderr, "tpu-train: step %" PRIu64 ", %s %u on the RTL: every core's trace and host memory identical to the model's (model: %" PRIu64 " cycles)\n",
                                s + 1, j < t.micro ? "micro-step" : "update part", j < t.micro ? j + 1 : 0, run.cycles);
                    else
                        fprintf(stderr, "tpu-train: step %" PRIu64 " on the RTL: every core's trace and host memory identical to the model's (model: %" PRIu64 " cycles)\n", s + 1, run.cycles);
                }
                cyc += run.cycles;
                busy += run.mxu_busy;
                if (j == t.micro) break;
                for (unsigned c = 0; c < hw.cores; c++) {
                    tpuc_train_host_probs(&t, run.host[c], probs);
                    for (uint64_t r = 0; r < b; r++) {
                        int64_t best = 0;
                        for (int64_t k = 1; k < t.classes; k++)
                            if (probs[r * (uint64_t)t.classes + (uint64_t)k] > probs[r * (uint64_t)t.classes + (uint64_t)best]) best = k;
                        correct += best == tr.y[perm[s * B + c * rpc + j * b + r]];
                    }
                }
            }
            if (check_cores(&run, &t, err, sizeof err)) { printf("\n"); fail(1, err); goto done; }
            if (ep == 1 && s == 0) phases(&t, insn_done, insn_mxu);
            /* a diverged step: stopped before its checkpoint replaces the last good one */
            const float sloss = tpuc_train_host_loss(&t, run.host[0]);
            if (!allow_nf && check_finite(&t, run.host[0], sloss, ep, s + 1, err, sizeof err)) {
                printf("\n");
                fail(1, err);
                goto done;
            }
            lsum += sloss;
            seen += B;
            if (grads && ep == 1 && s == 0) {
                if (mkdir(grads, 0777) && errno != EEXIST) {
                    snprintf(err, sizeof err, "--grads-dir '%s': cannot create: %s", grads, strerror(errno));
                    fail(1, err);
                    goto done;
                }
                for (int l = 0; l < t.nlayers; l++) {
                    const tpuc_tlayer_t *ly = &t.layer[l];
                    free(wbuf); free(bbuf);
                    wbuf = malloc((size_t)(ly->k * ly->o) * 4 + 4);
                    bbuf = malloc((size_t)ly->o * 4 + 4);
                    if (!wbuf || !bbuf) { fail(1, "out of memory"); goto done; }
                    char nm[64];
                    tpuc_train_host_grads(&t, run.host[0], l, wbuf, bbuf);
                    snprintf(nm, sizeof nm, "grad%d_w.npy", l);
                    if (write_f32(grads, nm, wbuf, (size_t)ly->k, (size_t)ly->o, err, sizeof err)) { fail(1, err); goto done; }
                    if (ly->has_bias) {
                        snprintf(nm, sizeof nm, "grad%d_b.npy", l);
                        if (write_f32(grads, nm, bbuf, (size_t)ly->o, 0, err, sizeof err)) { fail(1, err); goto done; }
                    }
                    tpuc_train_host_weights(&t, run.host[0], l, wbuf, bbuf);
                    snprintf(nm, sizeof nm, "w%d.npy", l);
                    if (write_f32(grads, nm, wbuf, (size_t)ly->k, (size_t)ly->o, err, sizeof err)) { fail(1, err); goto done; }
                    if (ly->has_bias) {
                        snprintf(nm, sizeof nm, "b%d.npy", l);
                        if (write_f32(grads, nm, bbuf, (size_t)ly->o, 0, err, sizeof err)) { fail(1, err); goto done; }
                    }
                }
                char lp[4200];
                float lv = tpuc_train_host_loss(&t, run.host[0]);
                snprintf(lp, sizeof lp, "loss.npy");
                if (write_f32(grads, lp, &lv, 1, 0, err, sizeof err)) { fail(1, err); goto done; }
            }
            if (tty) progress(s + 1, spe, lsum / (double)(s + 1), (double)correct / (double)seen, 0, now_s() - t0);
            if (ckpt) {
                tpuc_ckpt_pos_t cp = {fp, ep, s + 1, lsum, now_s() - t0, correct, seen, cyc, busy, rows, rows_len};
                if (tpuc_train_ckpt_write(&t, run.host[0], &cp, ckpt, err, sizeof err)) { printf("\n"); fail(1, err); goto done; }
            }
            if (maxsteps && ++ran == maxsteps && !(s + 1 == spe && ep == epochs)) {
                printf("\n");
                fprintf(stderr, "tpu-train: stopped after %" PRIu64 " steps (--max-steps) at epoch %" PRIu64
                        ", step %" PRIu64 "; continue with --resume %s\n", ran, ep, s + 1, ckpt);
                rc = 0;
                goto done;
            }
        }
        double loss = lsum / (double)spe, acc = (double)correct / (double)seen;
        double wall = now_s() - t0;
        /* MXU utilisation: useful MACs / (N^2 x cycles) (docs/compiler.md); busy: the
           fraction of cycles the MXU presents vectors (all cores' MXU_BUSY over C x cycles) */
        double cps = (double)cyc / (double)spe, busyf = cyc ? (double)busy / ((double)cyc * hw.cores) : 0;
        double macs = 0;
        for (int l = 0; l < t.nlayers; l++) macs += (double)tpuc_train_layer_macs(&t, l);
        const double util = cps > 0 ? macs / ((double)nn * nn * cps) : 0;
        /* validation: the forward program on the val set, metrics on the host from the
           device's probabilities */
        double vloss = NAN, vacc = NAN;
        if (vsteps) {
            double vl = 0;
            uint64_t vc = 0, vn = 0;
            for (uint64_t s = 0; s < vsteps; s++) {
                for (unsigned c = 0; c < hw.cores; c++) {
                    for (uint64_t r = 0; r < b; r++) {
                        uint64_t ix = s * Bv + c * b + r;
                        if (ix >= va.n) ix = va.n - 1; /* padding rows: not counted */
                        memcpy(xb + r * (uint64_t)t.in_elems, va.x + ix * (uint64_t)va.feat, (size_t)t.in_elems * 4);
                        yb[r] = va.y[ix];
                    }
                    tpuc_train_host_batch(&ev, run.host[c], xb, yb);
                }
                if (run_step(&run, &ev, 0, err, sizeof err)) { printf("\n"); fail(1, err); goto done; }
                for (unsigned c = 0; c < hw.cores; c++) {
                    tpuc_train_host_probs(&ev, run.host[c], probs);
                    for (uint64_t r = 0; r < b; r++) {
                        uint64_t ix = s * Bv + c * b + r;
                        if (ix >= va.n) continue;
                        const float *pr = probs + r * (uint64_t)t.classes;
                        int64_t best = 0;
                        for (int64_t k = 1; k < t.classes; k++) if (pr[k] > pr[best]) best = k;
                        vc += best == va.y[ix];
                        double p = pr[va.y[ix]];
                        vl += -log(p > 1e-45 ? p : 1e-45);
                        vn++;
                    }
                }
            }
            vloss = vl / (double)vn;
            vacc = (double)vc / (double)vn;
        }
        if (tty) progress(spe, spe, loss, acc, 1, wall);
        else printf("%6" PRIu64 "/%" PRIu64 " - %.0fs - loss: %.4f - accuracy: %.4f", spe, spe, wall, loss, acc);
        if (vsteps) printf(" - val_loss: %.4f - val_accuracy: %.4f", vloss, vacc);
        printf(" - %.0f cycles/step - %.3f ms/step at %" PRIu64 " MHz - MXU util %.2f%% (busy %.1f%%)\n", cps,
               cps / ((double)freq * 1e3), freq, 100 * util, 100 * busyf);
        fflush(stdout);
        char row[512];
        int rl = snprintf(row, sizeof row, "%" PRIu64 ",%.6f,%.6f,%.6f,%.6f,%.0f,%.6f,%.6f,%.4f,%.2f\n", ep, loss,
                          acc, vloss, vacc, cps, cps / ((double)freq * 1e3), util, busyf, wall);
        if (csvf) fputs(row, csvf);
        char *nr = realloc(rows, rows_len + (size_t)rl + 1);
        if (!nr) { fail(1, "out of memory"); goto done; }
        rows = nr;
        memcpy(rows + rows_len, row, (size_t)rl + 1);
        rows_len += (size_t)rl;
        if (ckpt) {
            tpuc_ckpt_pos_t cp = {fp, ep + 1, 0, 0, 0, 0, 0, 0, 0, rows, rows_len};
            if (tpuc_train_ckpt_write(&t, run.host[0], &cp, ckpt, err, sizeof err)) { fail(1, err); goto done; }
        }
    }
    if (csvf) {
        csvf = NULL;
        if (tpu_out_commit(&csvo, err, sizeof err)) { fail(1, err); goto done; }
    }
    if (plot) {
        /* build/tools/tpu-train -> models/train_ref.py of the same tree */
        char self[4096] = "", script[4300], ep[32], st[32], bs[32], lrs[64], ms[64], sd[32], ve[32];
        ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
        if (sl > 0) self[sl] = 0;
        char *slash = strrchr(self, '/');
        if (slash) *slash = 0;
        snprintf(script, sizeof script, "%s/../../models/train_ref.py", self[0] ? self : ".");
        snprintf(ep, sizeof ep, "%" PRIu64, epochs);
        snprintf(st, sizeof st, "%" PRIu64, spe);
        snprintf(bs, sizeof bs, "%" PRIu64, B);
        snprintf(lrs, sizeof lrs, "%.17g", o.lr);
        snprintf(ms, sizeof ms, "%.17g", o.momentum);
        snprintf(sd, sizeof sd, "%" PRIu64, seed);
        const char *av[48];
        int k = 0;
        av[k++] = "/usr/bin/python3"; av[k++] = script; av[k++] = model;
        if (dataset) { av[k++] = "--dataset"; av[k++] = dataset; }
        else {
            av[k++] = "--x-train"; av[k++] = xt; av[k++] = "--y-train"; av[k++] = yt;
            if (xv) { av[k++] = "--x-val"; av[k++] = xv; av[k++] = "--y-val"; av[k++] = yv; }
        }
        av[k++] = "--batch"; av[k++] = bs; av[k++] = "--epochs"; av[k++] = ep;
        av[k++] = "--steps-per-epoch"; av[k++] = st; av[k++] = "--optimizer"; av[k++] = optname;
        av[k++] = "--lr"; av[k++] = lrs; av[k++] = "--momentum"; av[k++] = ms; av[k++] = "--seed"; av[k++] = sd;
        if (logits) av[k++] = "--logits";
        snprintf(ve, sizeof ve, "%" PRIu64, vsteps * Bv < va.n ? vsteps * Bv : va.n);
        av[k++] = "--val-examples"; av[k++] = ve;
        av[k++] = "--csv"; av[k++] = refcsv; av[k++] = "--ours"; av[k++] = csv; av[k++] = "--png"; av[k++] = plot;
        av[k] = NULL;
        if (run_child(av)) {
            snprintf(err, sizeof err, "--plot: the PyTorch reference (%.1000s) failed", script);
            fail(1, err);
            goto done;
        }
    }
    if (save) {
        tpuc_weights_t wl[TPUC_TRAIN_MAX_LAYERS];
        float *wb[TPUC_TRAIN_MAX_LAYERS] = {0}, *bb[TPUC_TRAIN_MAX_LAYERS] = {0};
        int ok = 1;
        for (int l = 0; l < t.nlayers; l++) {
            const tpuc_tlayer_t *ly = &t.layer[l];
            wb[l] = malloc((size_t)(ly->k * ly->o) * 4 + 4);
            bb[l] = malloc((size_t)ly->o * 4 + 4);
            if (!wb[l] || !bb[l]) { ok = 0; break; }
            tpuc_train_host_weights(&t, run.host[0], l, wb[l], bb[l]);
            wl[l].node = ly->name;
            wl[l].w = wb[l];
            wl[l].bias = ly->has_bias ? bb[l] : NULL;
            wl[l].k = ly->k;
            wl[l].o = ly->o;
        }
        int wr = ok ? tpuc_onnx_write_weights(model, wl, t.nlayers, save, err, sizeof err) : -1;
        for (int l = 0; l < t.nlayers; l++) { free(wb[l]); free(bb[l]); }
        if (!ok) { fail(1, "out of memory"); goto done; }
        if (wr) { fail(1, err); goto done; }
    }
    rc = 0;
done:
    if (csvf) tpu_out_abort(&csvo);
    for (unsigned i = 0; i < TPU_BOARD_CORES_MAX; i++)
        if (run.trace[i]) fclose(run.trace[i]);
    if (own_work && rc == 0) {
        sig_have_work = 0;
        pid_t pid = fork();
        if (pid == 0) { execl("/bin/rm", "rm", "-rf", wdir, (char *)NULL); _exit(127); }
        if (pid > 0) waitpid(pid, NULL, 0);
    }
    if (run.host)
        for (unsigned i = 0; i < run.cores; i++) free(run.host[i]);
    free(run.host);
    if (run.board) tpu_board_free(run.board);
    free(probs); free(xb); free(yb); free(perm); free(wbuf); free(bbuf);
    free(insn_done); free(insn_mxu); free(rows);
    free(tr.x); free(tr.y); free(va.x); free(va.y);
    tpuc_train_free(&t);
    tpuc_train_free(&ev);
    tpuc_graph_free(&g);
    return rc;
}
