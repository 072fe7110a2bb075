/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-compile: an ONNX model -> a program for the core (or the board: data-parallel
   inference, the batch split over the cores), for exactly the hardware gen builds with the
   same options (docs/compiler.md). Writes DIR all or nothing: model.s (commented per ONNX
   node), model.bin, image.npy (the constants, loaded at their host address), fill<k>.npy,
   core<i>.args (the job of each core, as tpu-run / tpu-board-run / core_tb / board_tb take),
   model.txt (what tpu-infer reads), report.txt and report.json. Exit 0, 2 on a bad or
   unsupported model or bad options (one line naming the node, op and attribute), 1 on I/O. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tpu/board.h"
#include "tpu/cli.h"
#include "tpu/config.h"
#include "tpu/core.h"
#include "tpu/npy.h"
#include "tpuc/hwopts.h"
#include "tpuc/tpuc.h"
#include "tpuc/train.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tpu-compile MODEL.onnx [hardware options] [--batch B] -o DIR\n"
            "       tpu-compile MODEL.onnx [hardware options] --report-only [--json FILE]\n"
            "       tpu-compile MODEL.onnx --train [--optimizer sgd|adam] [--lr R] [--momentum M]\n"
            "                   [--logits] [hardware options] --report-only [--json FILE]\n"
            "Hardware (the same options and defaults as gen; C > 1: the batch split over C cores):\n"
            TPUC_HW_HELP
            "  --freq-mhz F        clock for images/s in the report (default 100)\n"
            "Model:\n"
            "  --batch B           the batch of one run, split over the cores (binds a symbolic\n"
            "                      batch; default: C, one image per core; tpu-infer runs any\n"
            "                      batch in chunks of B)\n"
            "  -o DIR              output directory (replaced whole, never half-written)\n"
            "  --report-only       print the per-layer report, write no program\n"
            "  --no-fuse-pool      run a MaxPool after a Conv as its own node (same results)\n"
            "  --no-fuse-add       run a residual Add after a Conv as its own node instead of\n"
            "                      in the Conv's epilogue (same results)\n"
            "  --no-im2col         the first Conv reads the image kernel row by kernel row\n"
            "                      instead of host-laid-out windows (same results)\n"
            "  --no-keep           a Gemm's output goes through host memory even where the\n"
            "                      next Gemm could read it from UB (same results)\n"
            "  --no-reuse          every activation gets a host buffer of its own (the default\n"
            "                      while that takes at most 256 MiB; same results)\n"
            "  --reuse             a dead tensor's host buffer is taken by the next activation\n"
            "                      that fits (least host memory; more instructions where a\n"
            "                      model repeats blocks; same results)\n"
            "  --no-share          every K-chunk of a matmul is DMA'd on its own instead of a\n"
            "                      Conv's kernel taps sharing one load of their rows (same results)\n"
            "  --no-dense          a strided Conv's or pool's output keeps its r-space (half of\n"
            "                      it dropped rows) instead of dense rows (same results)\n"
            "  --json FILE         also write the report as JSON (with --report-only)\n"
            "  --plot PNG          also draw the roofline (with --report-only): each layer's MACs\n"
            "                      per DMA byte against its MACs per cycle, under the MXU's and\n"
            "                      the AXI port's roofs, coloured by the unit that bounds it\n"
            "                      (tools/tpu_roofline.py, matplotlib)\n"
            "Training (docs/training.md; tpu-train runs it):\n"
            "  --train             report one training step instead (forward, loss, backward,\n"
            "                      all-reduce, update) per layer and phase; --batch is the global\n"
            "                      batch (default: C)\n"
            "  --optimizer O       sgd or adam (default adam), --lr R, --momentum M (sgd)\n"
            "  --logits            the model ends in logits (softmax + cross-entropy added)\n"
            "  --micro-batch M     rows per core per micro-step (as tpu-train; default: chosen)\n"
            "Exit status: 0 done, 2 bad options or a model that cannot be compiled, 1 I/O.\n");
}

enum { O_HELP, O_FREQ, O_BATCH,
       O_OUT, O_REPORT, O_JSON, O_PLOT, O_NOFUSE, O_NOFUSEADD, O_NOIM2COL, O_NOKEEP, O_NOREUSE, O_REUSE, O_NOSHARE, O_NODENSE, O_NOLOOPS, O_TRAIN, O_OPT, O_LR, O_MOM, O_LOGITS, O_MICRO };

static const tpu_cli_opt_t opts[] = {
    {"help", 'h', 0, O_HELP},
    TPUC_HW_CLI_OPTS,
    {"freq-mhz", 0, TPU_CLI_VALUE, O_FREQ},
    {"batch", 0, TPU_CLI_VALUE, O_BATCH},
    {"out", 'o', TPU_CLI_VALUE, O_OUT},
    {"report-only", 0, 0, O_REPORT},
    {"json", 0, TPU_CLI_VALUE, O_JSON},
    {"plot", 0, TPU_CLI_VALUE, O_PLOT},
    {"no-fuse-pool", 0, 0, O_NOFUSE},
    {"no-fuse-add", 0, 0, O_NOFUSEADD},
    {"no-im2col", 0, 0, O_NOIM2COL},
    {"no-keep", 0, 0, O_NOKEEP},
    {"no-reuse", 0, 0, O_NOREUSE},
    {"reuse", 0, 0, O_REUSE},
    {"no-share", 0, 0, O_NOSHARE},
    {"no-dense", 0, 0, O_NODENSE},
    {"no-loops", 0, 0, O_NOLOOPS}, /* hidden: the straight-line program (docs/compiler.md "Loops") */
    {"train", 0, 0, O_TRAIN},
    {"optimizer", 0, TPU_CLI_VALUE, O_OPT},
    {"lr", 0, TPU_CLI_VALUE, O_LR},
    {"momentum", 0, TPU_CLI_VALUE, O_MOM},
    {"logits", 0, 0, O_LOGITS},
    {"micro-batch", 0, TPU_CLI_VALUE, O_MICRO},
    {NULL, 0, 0, 0},
};

/* " (N straight-line: L loops, S strides)" for a looped program (docs/compiler.md "Loops"),
   else "" */
static const char *straight_note(const tpuc_prog_t *p)
{
    static char b[128];
    b[0] = 0;
    if (p->straight)
        snprintf(b, sizeof b, " (%zu straight-line: %zu loops, %zu strides)", p->nstraight,
                 p->nloops, p->nstrides);
    else if (p->nrolled)
        snprintf(b, sizeof b, " (straight-line: %zu with loops, more than any IMEM)", p->nrolled);
    return b;
}

static int fail(int code, const char *msg)
{
    fprintf(stderr, "tpu-compile: error: %s\n", msg);
    return code;
}

static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    ok &= fclose(f) == 0;
    return ok ? 0 : -1;
}

static const char *header_fmt =
    "# SPDX-License-Identifier: Apache-2.0\n"
    "# generated by tpu-compile, do not edit\n"
    "# command: %s\n"
    "# parameters: mxu=%u ub_rows=%u acc_rows=%u wmem_rows=%u imem_insns=%u axi_data_bits=%u "
    "cores=%u topology=%ux%u batch_per_core=%ld\n";

/* --plot: the report's JSON to a temporary file beside PNG, then tools/tpu_roofline.py of
   the same tree (build/tools/tpu-compile -> tools/) draws it; PNG appears whole or not at
   all (the script renames its temporary). 0, or -1 with err. */
static int draw_roofline(const tpuc_graph_t *g, const tpuc_hw_t *hw, const tpuc_prog_t *p,
                         const char *png, char *err, size_t errlen)
{
    char self[4096] = "", script[4200], tmp[4200];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl > 0) self[sl] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(script, sizeof script, "%s/../../tools/tpu_roofline.py", self[0] ? self : ".");
    snprintf(tmp, sizeof tmp, "%s.%ld.json", png, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "--plot %.400s: cannot write its temporary %.400s", png, tmp);
        return -1;
    }
    tpuc_report_json(g, hw, p, f);
    if (fclose(f)) {
        remove(tmp);
        snprintf(err, errlen, "--plot %.400s: cannot write its temporary %.400s", png, tmp);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    int st = -1;
    pid_t pid = fork();
    if (pid == 0) {
        execl("/usr/bin/python3", "python3", script, tmp, png, (char *)NULL);
        _exit(127);
    }
    if (pid > 0) waitpid(pid, &st, 0);
    remove(tmp);
    if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, errlen, "--plot %.400s: %.400s failed (it needs /usr/bin/python3 with "
                 "matplotlib: scripts/deps.sh)", png, script);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char err[1024];
    tpu_cli_t cli;
    tpu_cli_init(&cli, argc, argv, opts);
    const char *model = NULL, *out = NULL, *json = NULL, *plot = NULL;
    uint64_t freq = 100, batch = 0, mb = 0;
    tpuc_hwopts_t ho;
    tpuc_hwopts_init(&ho);
    int report_only = 0, no_fuse = 0, no_fuse_add = 0, no_im2col = 0, no_keep = 0, no_reuse = 0, reuse = 0, no_share = 0, no_dense = 0, no_loops = 0, train = 0, logits = 0;
    const char *optname = "adam";
    double lr = -1.0, mom = 0.0;
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
        case O_FREQ: bad = tpu_cli_count(name, val, 1, 1000, &freq, err, sizeof err); break;
        case O_BATCH: bad = tpu_cli_count(name, val, 1, 1u << 20, &batch, err, sizeof err); break;
        case O_OUT: out = tpu_path_trim((char *)val); break; /* "DIR/" is DIR: argv is ours */
        case O_REPORT: report_only = 1; break;
        case O_JSON: json = val; break;
        case O_PLOT: plot = val; break;
        case O_NOFUSE: no_fuse = 1; break;
        case O_NOFUSEADD: no_fuse_add = 1; break;
        case O_NOIM2COL: no_im2col = 1; break;
        case O_NOKEEP: no_keep = 1; break;
        case O_NOREUSE: no_reuse = 1; break;
        case O_REUSE: reuse = 1; break;
        case O_NOSHARE: no_share = 1; break;
        case O_NODENSE: no_dense = 1; break;
        case O_NOLOOPS: no_loops = 1; break;
        case O_TRAIN: train = 1; break;
        case O_OPT: optname = val; break;
        case O_LR: bad = tpuc_opt_real("lr", val, 0, 1e6, &lr, err, sizeof err); break;
        case O_MOM: bad = tpuc_opt_real("momentum", val, 0, 1, &mom, err, sizeof err); break;
        case O_LOGITS: logits = 1; break;
        case O_MICRO: bad = tpu_cli_count(name, val, 1, 1u << 20, &mb, err, sizeof err); break;
        default: bad = tpuc_hwopts_parse(&ho, id, name, val, err, sizeof err); break;
        }
        if (bad) return fail(2, err);
    }
    if (!model) { usage(stderr); return fail(2, "no model given (expected MODEL.onnx)"); }
    if (!out && !report_only) return fail(2, "no output directory (expected -o DIR, or --report-only)");
    if (out && report_only) return fail(2, "-o and --report-only together: choose one");
    if (json && !report_only) return fail(2, "--json goes with --report-only (with -o, DIR/report.json is written)");
    if (train && !report_only) return fail(2, "--train goes with --report-only (tpu-train compiles and runs training)");
    if (plot && (!report_only || train))
        return fail(2, "--plot goes with --report-only of inference (the roofline of its layers)");
    if (mb && !train) return fail(2, "--micro-batch goes with --train");
    if (strcmp(optname, "adam") && strcmp(optname, "sgd")) {
        snprintf(err, sizeof err, "--optimizer '%s': expected sgd or adam", optname);
        return fail(2, err);
    }
    /* the outputs, before any work: a bad path costs nothing, and a folder that is not ours
       is refused untouched */
    if (out && (tpu_outdir_check("-o", out, err, sizeof err) || tpuc_model_dir_ok(out, err, sizeof err)))
        return fail(2, err);
    if (json && (tpu_out_check("--json", json, err, sizeof err) ||
                 tpu_out_distinct("--json", json, "the model", model, err, sizeof err)))
        return fail(2, err);
    if (plot && (tpu_out_check("--plot", plot, err, sizeof err) ||
                 tpu_out_distinct("--plot", plot, "the model", model, err, sizeof err) ||
                 (json && tpu_out_distinct("--plot", plot, "--json", json, err, sizeof err))))
        return fail(2, err);

    tpuc_hw_t hw;
    memset(&hw, 0, sizeof hw);
    if (tpuc_hwopts_resolve(&ho, &hw, err, sizeof err)) return fail(2, err);
    hw.freq_mhz = (unsigned)freq;
    hw.batch = (long)batch;
    hw.no_fuse_pool = no_fuse;
    hw.no_fuse_add = no_fuse_add;
    hw.no_im2col = no_im2col;
    hw.no_keep = no_keep;
    if (no_reuse && reuse) return fail(2, "--reuse and --no-reuse: give one of them");
    hw.no_reuse = no_reuse;
    hw.reuse = reuse;
    hw.no_share = no_share;
    hw.no_dense = no_dense;
    hw.no_loops = no_loops;
    hw.predict_only = report_only;

    tpuc_graph_t g;
    tpuc_prog_t p;
    memset(&p, 0, sizeof p);
    if (tpuc_onnx_read_file(model, &g, err, sizeof err)) {
        tpuc_graph_free(&g);
        return fail(errno == ENOENT && strstr(err, "No such file") ? 2 : 2, err);
    }
    int rc = 2;
    if (train) {
        /* the global batch over the cores, as tpu-train splits it */
        const uint64_t C = hw.cores ? hw.cores : 1, B = batch ? batch : C;
        if (B % C) {
            snprintf(err, sizeof err, "--batch %llu must be a multiple of --cores %llu",
                     (unsigned long long)B, (unsigned long long)C);
            fail(2, err);
            goto done;
        }
        if (mb && ((B / C) % mb || mb > B / C || (B / C) / mb > 65536)) {
            snprintf(err, sizeof err, "--micro-batch %llu: must divide the %llu rows per core",
                     (unsigned long long)mb, (unsigned long long)(B / C));
            fail(2, err);
            goto done;
        }
        tpuc_train_opts_t o;
        memset(&o, 0, sizeof o);
        o.micro = mb ? (unsigned)((B / C) / mb) : 1u;
        hw.batch = (long)(B / o.micro);
        o.optimizer = strcmp(optname, "adam") ? TPUC_OPT_SGD : TPUC_OPT_ADAM;
        o.lr = lr >= 0 ? lr : (o.optimizer == TPUC_OPT_ADAM ? 1e-3 : 0.01);
        o.momentum = mom;
        o.beta1 = 0.9; o.beta2 = 0.999; o.eps = 1e-8;
        o.logits = logits;
        tpuc_train_t t;
        tpuc_train_report_t r;
        char note[1024];
        tpuc_graph_free(&g);
        if (tpuc_train_compile_micro(model, &hw, &o, B, B / C, mb == 0, &g, &t, note, sizeof note,
                                     err, sizeof err)) {
            memset(&g, 0, sizeof g);
            fail(2, err);
            goto done;
        }
        if (note[0]) fprintf(stderr, "tpu-compile: %s\n", note);
        fprintf(stderr, "tpu-compile: training step of %zu instructions%s; predicting cycles on the board model...\n",
                t.prog.ninsns, straight_note(&t.prog));
        if (tpuc_train_report(&t, &g, &hw, &r, err, sizeof err)) {
            tpuc_train_free(&t);
            fail(2, err);
            goto done;
        }
        tpuc_train_report_text(&t, &hw, &r, stdout);
        rc = 0;
        if (json) {
            tpu_out_t jo;
            if (tpu_out_open(&jo, json, err, sizeof err)) { rc = 1; fail(1, err); }
            else {
                tpuc_train_report_json(&t, &hw, &r, jo.f);
                if (tpu_out_commit(&jo, err, sizeof err)) { rc = 1; fail(1, err); }
            }
        }
        tpuc_train_free(&t);
        goto done;
    }
    if (tpuc_fold(&g, &hw, err, sizeof err) || tpuc_lower(&g, &hw, err, sizeof err) ||
        tpuc_tile(&g, &hw, &p, err, sizeof err)) {
        fail(2, err);
        goto done;
    }
    if (p.host_bytes > ((uint64_t)TPU_LIM_HOSTMEM_MIB_MAX << 20)) {
        fail(2, "the model needs more than 4 GiB of host memory");
        goto done;
    }
    fprintf(stderr, "tpu-compile: %zu instructions%s; predicting cycles on the C model...\n", p.ninsns,
            straight_note(&p));
    if (tpuc_report(&g, &hw, &p, err, sizeof err)) { fail(2, err); goto done; }

    char cmd[2048];
    size_t k = 0;
    cmd[0] = 0;
    for (int i = 0; i < argc && k + 2 < sizeof cmd; i++) {
        int w = snprintf(cmd + k, sizeof cmd - k, "%s%s", i ? " " : "", argv[i]);
        if (w < 0) break;
        k += (size_t)w;
    }
    if (report_only) {
        tpuc_report_text(&g, &hw, &p, stdout);
        if (json) {
            tpu_out_t o;
            if (tpu_out_open(&o, json, err, sizeof err)) { rc = 1; fail(1, err); goto done; }
            tpuc_report_json(&g, &hw, &p, o.f);
            if (tpu_out_commit(&o, err, sizeof err)) { rc = 1; fail(1, err); goto done; }
        }
        if (plot && draw_roofline(&g, &hw, &p, plot, err, sizeof err)) { rc = 1; fail(1, err); goto done; }
        rc = 0;
        goto done;
    }
    /* DIR again, now that the work is done: still new, empty or ours */
    if (tpuc_model_dir_ok(out, err, sizeof err)) { fail(2, err); goto done; }
    char tmp[4200], old[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
    snprintf(old, sizeof old, "%s.old.%ld", out, (long)getpid());
    tpuc_model_dir_remove(tmp);
    if (mkdir(tmp, 0777)) {
        snprintf(err, sizeof err, "-o '%.400s': cannot create %.400s: %s", out, tmp, strerror(errno));
        rc = 1;
        fail(1, err);
        goto done;
    }
    rc = 1;
    {
        char path[4400];
        FILE *f;
        int ok = 1;
        unsigned tr = hw.topo_rows, tc = hw.topo_cols;
        /* model.s */
        snprintf(path, sizeof path, "%s/model.s", tmp);
        if ((f = fopen(path, "w"))) {
            fprintf(f, header_fmt, cmd, hw.geom.n, hw.geom.ub_rows, hw.geom.acc_rows,
                    hw.geom.wmem_rows, hw.geom.imem_insns, hw.axi_data_bits, hw.cores, tr, tc,
                    p.batch);
            fputs(p.text, f);
            ok &= fclose(f) == 0;
        } else ok = 0;
        ok &= write_file(tmp, "model.bin", p.insns, p.ninsns * sizeof *p.insns) == 0;
        /* image.npy: the constants as bf16 words (fp32 values are two words, little-endian) */
        tpu_npy_t a;
        size_t words = (p.image_bytes + 1) / 2;
        if (ok && tpu_npy_alloc(&a, TPU_NPY_U2, 1, 1, words ? words : 1) == 0) {
            memset(a.data, 0, (words ? words : 1) * 2);
            memcpy(a.data, p.image, p.image_bytes);
            snprintf(path, sizeof path, "%s/image.npy", tmp);
            ok &= tpu_npy_write(path, &a, err, sizeof err) == 0;
            tpu_npy_free(&a);
        } else ok = 0;
        for (int i = 0; ok && i < p.fills; i++) {
            size_t w = (size_t)(p.fill_bytes[i] / 2);
            if (tpu_npy_alloc(&a, TPU_NPY_U2, 1, 1, w) != 0) { ok = 0; break; }
            for (size_t j = 0; j < w; j++) ((uint16_t *)a.data)[j] = 0xFF80u;
            snprintf(path, sizeof path, "%s/fill%d.npy", tmp, i);
            ok &= tpu_npy_write(path, &a, err, sizeof err) == 0;
            tpu_npy_free(&a);
        }
        snprintf(path, sizeof path, "%s/model.txt", tmp);
        if (ok && (f = fopen(path, "w"))) { tpuc_write_meta(&g, &hw, &p, f); ok &= fclose(f) == 0; } else ok = 0;
        tpuc_meta_t m;
        if (ok && tpuc_read_meta(path, &m, err, sizeof err)) { fail(1, err); ok = 0; }
        for (unsigned i = 0; ok && i < hw.cores; i++) {
            snprintf(path, sizeof path, "%s/core%u.args", tmp, i);
            if ((f = fopen(path, "w"))) {
                fprintf(f, "# generated by tpu-compile, do not edit; input%u.npy: core %u's images "
                        "in the input layout (tpu-infer --work DIR writes it)\n", i, i);
                tpuc_write_args(&m, ".", i, ".", f);
                ok &= fclose(f) == 0;
            } else ok = 0;
        }
        snprintf(path, sizeof path, "%s/report.txt", tmp);
        if (ok && (f = fopen(path, "w"))) { tpuc_report_text(&g, &hw, &p, f); ok &= fclose(f) == 0; } else ok = 0;
        snprintf(path, sizeof path, "%s/report.json", tmp);
        if (ok && (f = fopen(path, "w"))) { tpuc_report_json(&g, &hw, &p, f); ok &= fclose(f) == 0; } else ok = 0;
        if (!ok) {
            tpuc_model_dir_remove(tmp);
            snprintf(err, sizeof err, "-o '%.400s': writing %.400s failed: %s", out, tmp, strerror(errno));
            fail(1, err);
            goto done;
        }
        int had = access(out, F_OK) == 0;
        if (had && rename(out, old)) {
            tpuc_model_dir_remove(tmp);
            snprintf(err, sizeof err, "-o '%s': cannot replace it: %s", out, strerror(errno));
            fail(1, err);
            goto done;
        }
        if (rename(tmp, out)) {
            if (had) rename(old, out);
            tpuc_model_dir_remove(tmp);
            snprintf(err, sizeof err, "-o '%s': cannot create it: %s", out, strerror(errno));
            fail(1, err);
            goto done;
        }
        if (had && tpuc_model_dir_remove(old))
            fprintf(stderr, "tpu-compile: warning: the earlier model was kept in '%s': it holds "
                    "files tpu-compile did not write\n", old);
    }
    tpuc_report_text(&g, &hw, &p, stdout);
    rc = 0;
done:
    tpuc_prog_free(&p);
    tpuc_graph_free(&g);
    return rc;
}
