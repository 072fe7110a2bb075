/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-board-run: the board's C model runner (docs/board.md "Board jobs, tools and
   co-simulation"). Runs a board job -- DIR/core<i>.args for i = 0..C-1, each an @FILE of the
   host options of a core job (docs/isa.md "Host memory and job options"; paths relative to
   DIR) -- on C core models joined by the collectives, and writes OUT/core<i>.trace,
   OUT/core<i>.counters (one line, "counters: CYCLES=.. ... NET_BUSY=..") and core i's dumps
   into OUT/core<i>/. Exit 0 every core done, 1 a core stopped with an error or is stuck
   (deadlock), 2 bad arguments or I/O. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tpu/board.h"
#include "tpu/core.h"
#include "tpu/host.h"
#include "tpu/isa.h"

#define ME "tpu-board-run"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " ME " --mxu N --cores C --job DIR --out DIR [options] [@FILE]\n"
            "  --mxu N               MXU size (1 .. 256), required\n"
            "  --cores C             cores on the board (1 .. 64, default 8)\n"
            "  --topology T          ring, torus or torus:RxS with R*S = C (default: torus:2x4\n"
            "                        at C = 8, ring otherwise; torus: R = the largest divisor\n"
            "                        of C with R*R <= C)\n"
            "  --link-bits W         link width in bits (32 .. 1024, default 64)\n"
            "  --link-latency D      link pipeline registers (0 .. 16, default 2)\n"
            "  --ub-kib K, --acc-kib K, --wmem-kib K\n"
            "                        memory sizes as gen's options (default gen's for N)\n"
            "  --imem-insns I        IMEM size (1 .. 32768, default 1024)\n"
            "  --pe-stages S         MXU pipeline stages per PE, 1 .. 3 (default 1)\n"
            "  --axi-latency C       host memory latency in cycles, 1 .. 1000 (default 4)\n"
            "  --axi-data-bits B     every core's AXI4 data master width: 64, 128, 256 or 512\n"
            "                        (default gen's for N: the smallest power of two >= 4N,\n"
            "                        clamped)\n"
            "  --dispatch overlap|serial\n"
            "  --job DIR             the board job: DIR/core<i>.args, i = 0 .. C-1\n"
            "  --out DIR             writes core<i>.trace, core<i>.counters, core<i>/ dumps\n"
            "Exit status: 0 every core done, 1 an error halt or a deadlock, 2 bad arguments "
            "or I/O.\n");
}

static int bad(const char *opt, const char *val, const char *what)
{
    fprintf(stderr, ME ": error: %s '%s': expected %s\n", opt, val ? val : "", what);
    return 2;
}

static int parse_num(const char *s, unsigned long lo, unsigned long hi, unsigned long *v)
{
    char *end;
    if (s == NULL || *s == 0 || *s == '-')
        return -1;
    errno = 0;
    unsigned long x = strtoul(s, &end, 0);
    if (errno || *end != 0 || x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

/* internal: rows of a memory of `kib` KiB with rows of row_bytes bytes; 0 when not whole or
   out of 1 .. 65536 */
static unsigned kib_rows(unsigned long kib, unsigned row_bytes)
{
    uint64_t bytes = (uint64_t)kib * 1024u;
    if (bytes % row_bytes != 0 || bytes / row_bytes == 0 || bytes / row_bytes > 65536u)
        return 0;
    return (unsigned)(bytes / row_bytes);
}

typedef struct {
    tpu_host_t host;
    tpu_insn_t *prog;
    size_t count;
    unsigned long pc_start;
    FILE *trace;
    char *trace_path;
} core_job_t;

/* internal: reads DIR/core<i>.args into j (the host options of a core job, and --pc-start) */
static int load_core_job(const char *dir, unsigned i, unsigned n, core_job_t *j)
{
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/core%u.args", dir, i);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, ME ": error: --job '%s': cannot read %s (expected core<i>.args for i = "
                "0 .. C-1)\n", dir, path);
        return -1;
    }
    fclose(f);
    char at[4100];
    snprintf(at, sizeof at, "@%s", path);
    char *argv0[2] = { (char *)ME, at };
    int xargc;
    char **xargv;
    if (tpu_args_expand(2, argv0, &xargc, &xargv, err, sizeof err) != 0) {
        fprintf(stderr, ME ": error: %s\n", err);
        return -1;
    }
    int rc = 0;
    for (int k = 1; k < xargc && rc == 0; k++) {
        char name[64];
        const char *a = xargv[k], *val = NULL, *eq = strchr(a, '=');
        if (strncmp(a, "--", 2) == 0 && eq != NULL && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            val = eq + 1;
        } else if (strlen(a) < sizeof name) {
            strcpy(name, a);
        } else {
            name[0] = 0;
        }
        int known = tpu_host_is_option(name) || strcmp(name, "--pc-start") == 0;
        if (!known) {
            fprintf(stderr, ME ": error: %s: option '%s': expected a host option of a core job "
                    "(--prog, --load, --dump, --dump-dir, --hostmem-mib) or --pc-start\n", path,
                    a);
            rc = -1;
            break;
        }
        if (val == NULL) {
            if (k + 1 >= xargc) {
                fprintf(stderr, ME ": error: %s: option '%s': expected a value\n", path, name);
                rc = -1;
                break;
            }
            val = xargv[++k];
        }
        if (strcmp(name, "--pc-start") == 0) {
            if (parse_num(val, 0, 65535, &j->pc_start)) {
                fprintf(stderr, ME ": error: %s: --pc-start '%s': expected 0 .. 65535\n", path,
                        val);
                rc = -1;
            }
        } else if (tpu_host_add_option(&j->host, name, val, err, sizeof err) != 0) {
            fprintf(stderr, ME ": error: %s: %s\n", path, err);
            rc = -1;
        }
    }
    tpu_args_free(xargc, xargv);
    if (rc)
        return rc;
    if (j->host.prog_path == NULL) {
        fprintf(stderr, ME ": error: %s: --prog '': expected a program FILE (.s or binary)\n",
                path);
        return -1;
    }
    if (tpu_load_program(j->host.prog_path, n, &j->prog, &j->count, err, sizeof err) != 0) {
        fprintf(stderr, ME ": error: core %u: %s\n", i, err);
        return -1;
    }
    if (tpu_host_load_all(&j->host, err, sizeof err) != 0) {
        fprintf(stderr, ME ": error: core %u: %s\n", i, err);
        return -1;
    }
    return 0;
}

static int make_dir(const char *d)
{
    if (mkdir(d, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, ME ": error: cannot create the folder '%s'\n", d);
        return -1;
    }
    return 0;
}

static int run_main(int argc, char **argv);

int main(int argc, char **argv)
{
    char err[1024];
    int xargc;
    char **xargv;
    if (tpu_args_expand(argc, argv, &xargc, &xargv, err, sizeof err) != 0) {
        fprintf(stderr, ME ": error: %s\n", err);
        return 2;
    }
    int st = run_main(xargc, xargv);
    tpu_args_free(xargc, xargv);
    return st;
}

/* internal: main with @FILE arguments expanded */
static int run_main(int argc, char **argv)
{
    unsigned long n = 0, cores = 8, W = TPU_BOARD_LINK_BITS_DEFAULT,
                  D = TPU_BOARD_LINK_LATENCY_DEFAULT, ubk = 0, acck = 0, wmk = 0, imem = 0,
                  stages = 1, lat = 4, axi_bits = 0; /* axi_bits 0: the default for N */
    const char *topo = NULL, *jobdir = NULL, *outdir = NULL, *ubs = NULL, *accs = NULL,
               *wms = NULL;
    unsigned serial = 0;
    int status = 2;
    core_job_t *jobs = NULL;
    tpu_board_t *board = NULL;
    tpu_core_result_t *res = NULL;
    unsigned C = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        char name[64];
        const char *val = NULL, *eq = strchr(a, '=');
        if (strncmp(a, "--", 2) != 0 || strlen(a) >= sizeof name) {
            bad("argument", a, "an option of " ME " --help");
            return 2;
        }
        if (eq != NULL) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            val = eq + 1;
        } else {
            strcpy(name, a);
            if (i + 1 >= argc)
                return bad(name, "", "a value");
            val = argv[++i];
        }
        if (strcmp(name, "--mxu") == 0) {
            if (parse_num(val, 1, 256, &n)) return bad(name, val, "1 .. 256");
        } else if (strcmp(name, "--cores") == 0) {
            if (parse_num(val, 1, TPU_BOARD_CORES_MAX, &cores)) return bad(name, val, "1 .. 64");
        } else if (strcmp(name, "--topology") == 0) {
            topo = val;
        } else if (strcmp(name, "--link-bits") == 0) {
            if (parse_num(val, TPU_BOARD_LINK_BITS_MIN, TPU_BOARD_LINK_BITS_MAX, &W))
                return bad(name, val, "32 .. 1024");
        } else if (strcmp(name, "--link-latency") == 0) {
            if (parse_num(val, 0, TPU_BOARD_LINK_LATENCY_MAX, &D)) return bad(name, val, "0 .. 16");
        } else if (strcmp(name, "--ub-kib") == 0) {
            if (parse_num(val, 1, 1ul << 24, &ubk)) return bad(name, val, "a size in KiB");
            ubs = val;
        } else if (strcmp(name, "--acc-kib") == 0) {
            if (parse_num(val, 1, 1ul << 24, &acck)) return bad(name, val, "a size in KiB");
            accs = val;
        } else if (strcmp(name, "--wmem-kib") == 0) {
            if (parse_num(val, 1, 1ul << 24, &wmk)) return bad(name, val, "a size in KiB");
            wms = val;
        } else if (strcmp(name, "--imem-insns") == 0) {
            if (parse_num(val, 1, 32768, &imem)) return bad(name, val, "1 .. 32768");
        } else if (strcmp(name, "--pe-stages") == 0) {
            if (parse_num(val, 1, 3, &stages)) return bad(name, val, "1 .. 3");
        } else if (strcmp(name, "--axi-latency") == 0) {
            if (parse_num(val, 1, 1000, &lat)) return bad(name, val, "1 .. 1000");
        } else if (strcmp(name, "--axi-data-bits") == 0) {
            if (parse_num(val, 1, 512, &axi_bits) || !tpu_axi_data_bits_ok((unsigned)axi_bits))
                return bad(name, val, "64, 128, 256 or 512");
        } else if (strcmp(name, "--dispatch") == 0) {
            if (strcmp(val, "overlap") == 0)
                serial = 0;
            else if (strcmp(val, "serial") == 0)
                serial = 1;
            else
                return bad(name, val, "overlap or serial");
        } else if (strcmp(name, "--job") == 0) {
            jobdir = val;
        } else if (strcmp(name, "--out") == 0) {
            outdir = val;
        } else {
            return bad("option", name, "an option of " ME " --help");
        }
    }
    if (n == 0)
        return bad("--mxu", "", "the MXU size N (1 .. 256)");
    if (jobdir == NULL)
        return bad("--job", "", "a board job folder (core<i>.args)");
    if (outdir == NULL)
        return bad("--out", "", "an output folder");
    C = (unsigned)cores;
    tpu_board_cfg_t bc;
    memset(&bc, 0, sizeof bc);
    char err[1024];
    if (tpu_board_topology_parse(topo, C, &bc.rows, &bc.cols, err, sizeof err) != 0) {
        fprintf(stderr, ME ": error: %s\n", err);
        return 2;
    }
    bc.link_bits = (unsigned)W;
    bc.link_latency = (unsigned)D;
    bc.core.geom = tpu_core_geom_default((unsigned)n);
    if (ubs && (bc.core.geom.ub_rows = kib_rows(ubk, 2u * (unsigned)n)) == 0)
        return bad("--ub-kib", ubs, "a size giving 1 .. 65536 whole rows of 2N bytes");
    if (accs && (bc.core.geom.acc_rows = kib_rows(acck, 4u * (unsigned)n)) == 0)
        return bad("--acc-kib", accs, "a size giving 1 .. 65536 whole rows of 4N bytes");
    if (wms && (bc.core.geom.wmem_rows = kib_rows(wmk, 2u * (unsigned)n)) == 0)
        return bad("--wmem-kib", wms, "a size giving 1 .. 65536 whole rows of 2N bytes");
    if (imem)
        bc.core.geom.imem_insns = (unsigned)imem;
    bc.core.pe_stages = (unsigned)stages;
    bc.core.axi_latency = (unsigned)lat;
    bc.core.axi_data_bits = (unsigned)axi_bits;
    bc.core.serial = serial;

    jobs = calloc(C, sizeof *jobs);
    res = calloc(C, sizeof *res);
    if (jobs == NULL || res == NULL) {
        fprintf(stderr, ME ": error: out of memory\n");
        goto out;
    }
    for (unsigned i = 0; i < C; i++)
        tpu_host_init(&jobs[i].host);
    for (unsigned i = 0; i < C; i++) {
        if (load_core_job(jobdir, i, (unsigned)n, &jobs[i]) != 0)
            goto out;
        if (jobs[i].count > bc.core.geom.imem_insns) {
            fprintf(stderr, ME ": error: core %u: --prog '%s': %zu instructions, expected at "
                    "most %u (IMEM)\n", i, jobs[i].host.prog_path, jobs[i].count,
                    bc.core.geom.imem_insns);
            goto out;
        }
        if (jobs[i].pc_start >= bc.core.geom.imem_insns) {
            fprintf(stderr, ME ": error: core %u: --pc-start '%lu': expected 0 .. %u\n", i,
                    jobs[i].pc_start, bc.core.geom.imem_insns - 1u);
            goto out;
        }
    }
    {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s/core%u.args", jobdir, C);
        FILE *extra = fopen(tmp, "r");
        if (extra) {
            fclose(extra);
            fprintf(stderr, ME ": error: --job '%s': holds %s but --cores is %u (expected "
                    "core<i>.args for i = 0 .. %u only)\n", jobdir, tmp, C, C - 1u);
            goto out;
        }
    }
    if (make_dir(outdir) != 0)
        goto out;
    for (unsigned i = 0; i < C; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/core%u.trace", outdir, i);
        jobs[i].trace_path = strdup(p);
        if (jobs[i].trace_path == NULL || (jobs[i].trace = fopen(p, "w")) == NULL) {
            fprintf(stderr, ME ": error: cannot write '%s'\n", p);
            goto out;
        }
        snprintf(p, sizeof p, "%s/core%u", outdir, i);
        free(jobs[i].host.dump_dir);
        jobs[i].host.dump_dir = strdup(p);
        if (jobs[i].host.dump_dir == NULL) {
            fprintf(stderr, ME ": error: out of memory\n");
            goto out;
        }
    }
    board = tpu_board_new(&bc);
    if (board == NULL) {
        fprintf(stderr, ME ": error: cannot create the board model (sizes or memory)\n");
        goto out;
    }
    tpu_board_job_t *bj = calloc(C, sizeof *bj);
    if (bj == NULL) {
        fprintf(stderr, ME ": error: out of memory\n");
        goto out;
    }
    for (unsigned i = 0; i < C; i++) {
        bj[i].prog = jobs[i].prog;
        bj[i].count = jobs[i].count;
        bj[i].pc_start = jobs[i].pc_start;
        bj[i].host = jobs[i].host.mem;
        bj[i].host_bytes = jobs[i].host.size;
        bj[i].trace = jobs[i].trace;
    }
    char msg[8192];
    int rc = tpu_board_run(board, bj, res, msg, sizeof msg);
    free(bj);
    for (unsigned i = 0; i < C; i++) {
        if (fclose(jobs[i].trace) != 0)
            rc = TPU_EIO;
        jobs[i].trace = NULL;
    }
    if (rc != TPU_OK) {
        fprintf(stderr, ME ": error: the run failed (%s)\n",
                rc == TPU_EIO ? "cannot write a trace" : rc == TPU_ENOMEM ? "out of memory"
                                                                          : "bad arguments");
        goto out;
    }
    int any_bad = 0;
    uint64_t maxcyc = 0, mxu = 0;
    for (unsigned i = 0; i < C; i++) {
        tpu_core_result_t *r = &res[i];
        char p[4096];
        if (jobs[i].host.ndumps && make_dir(jobs[i].host.dump_dir) != 0)
            goto out;
        if (tpu_host_dump_all(&jobs[i].host, err, sizeof err) != 0) {
            fprintf(stderr, ME ": error: core %u: %s\n", i, err);
            goto out;
        }
        snprintf(p, sizeof p, "%s/core%u.counters", outdir, i);
        FILE *cf = fopen(p, "w");
        if (cf == NULL) {
            fprintf(stderr, ME ": error: cannot write '%s'\n", p);
            goto out;
        }
        fprintf(cf, "counters:");
        for (unsigned k = 0; k < TPU_CNT_COUNT; k++)
            fprintf(cf, " %s=%" PRIu64, tpu_core_counter_name(k), r->counters[k]);
        fprintf(cf, "\n");
        if (fclose(cf) != 0) {
            fprintf(stderr, ME ": error: cannot write '%s'\n", p);
            goto out;
        }
        uint64_t cyc = r->counters[TPU_CNT_CYCLES];
        maxcyc = cyc > maxcyc ? cyc : maxcyc;
        mxu += r->counters[TPU_CNT_MXU_BUSY];
        char state[320] = "done";
        if (r->status != TPU_CORE_DONE) {
            char dis[200] = "nop";
            if (r->err_pc < jobs[i].count)
                tpu_insn_disasm(jobs[i].prog[r->err_pc], dis, sizeof dis);
            else if (r->err_pc >= bc.core.geom.imem_insns)
                strcpy(dis, "(past the end of IMEM)");
            if (r->status == TPU_CORE_ERROR)
                snprintf(state, sizeof state, "error %d (%s) at pc %u: %s", r->err_code,
                         tpu_err_name(r->err_code), (unsigned)r->err_pc, dis);
            else
                snprintf(state, sizeof state, "stuck at pc %u: %s", (unsigned)r->err_pc, dis);
            any_bad = 1;
        }
        if (r->uninit_reads)
            fprintf(stderr, ME ": warning: core %u: %" PRIu64 " read(s) of never-written rows, "
                    "the first by pc %u (%s row %u)\n", i, r->uninit_reads,
                    (unsigned)r->uninit_pc, tpu_mem_name(r->uninit_mem), r->uninit_row);
        printf(ME ": core %u: %s; CYCLES=%" PRIu64 " NET_BUSY=%" PRIu64 " INSNS=%" PRIu64
               " MXU utilisation %.1f%%\n", i, state, cyc, r->counters[TPU_CNT_NET_BUSY],
               r->counters[TPU_CNT_INSNS],
               cyc ? 100.0 * (double)r->counters[TPU_CNT_MXU_BUSY] / (double)cyc : 0.0);
    }
    if (msg[0])
        fprintf(stderr, ME ": %s", msg);
    printf(ME ": board: %u cores, %s %ux%u, W=%lu D=%lu, axi_data_bits=%u: cycles %" PRIu64
           " (the slowest core), MXU utilisation %.1f%% (sum of MXU_BUSY / (C x cycles))\n", C,
           bc.rows == 1 ? "ring" : "torus", bc.rows, bc.cols, W, D,
           tpu_core_cfg(tpu_board_core(board, 0))->axi_data_bits, maxcyc,
           maxcyc ? 100.0 * (double)mxu / ((double)maxcyc * C) : 0.0);
    printf(ME ": %s\n", any_bad ? "FAILED (a core stopped with an error or is stuck)" : "done");
    status = any_bad ? 1 : 0;
out:
    if (jobs)
        for (unsigned i = 0; i < C; i++) {
            if (jobs[i].trace)
                fclose(jobs[i].trace);
            free(jobs[i].trace_path);
            free(jobs[i].prog);
            tpu_host_free(&jobs[i].host);
        }
    free(jobs);
    free(res);
    tpu_board_free(board);
    return status;
}
