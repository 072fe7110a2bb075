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
#include "tpu/cli.h"
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
            "  --dispatch rtl|serial|overlap  every core's dispatch policy (default rtl: gen's\n"
            "                        sequencer; tpu-run --help)\n"
            "  --start-skew K        core i STARTs i*K cycles after core 0, 0 .. 1000 (default\n"
            "                        4: board_tb's host writes one CTRL.start after the other;\n"
            "                        each core's counters count from its own START)\n"
            "  --link-dead L@CYCLE   link L (core i's output port p: L = i*2 + p-1 on a ring,\n"
            "                        i*4 + p-1 on a torus) carries nothing from board cycle\n"
            "                        CYCLE on: collectives waiting on it stop with error 9\n"
            "                        (docs/board.md \"Link faults\"; board_tb --link-fault stuck)\n"
            "  --job DIR             the board job: DIR/core<i>.args, i = 0 .. C-1\n"
            "  --out DIR             writes core<i>.trace, core<i>.counters, core<i>/ dumps\n"
            "  --max-cycles C        stop a core when an instruction would dispatch after\n"
            "                        cycle C (default 100000000; 0: no limit)\n"
            "Exit status: 0 every core done, 1 an error halt or a deadlock, 2 bad arguments "
            "or I/O.\n");
}

static int bad(const char *opt, const char *val, const char *what)
{
    fprintf(stderr, ME ": error: %s '%s': expected %s\n", opt, val ? val : "", what);
    return 2;
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
    tpu_out_t tout;
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
    static const tpu_cli_opt_t opts[] = {
        { "prog", 0, TPU_CLI_VALUE, 0 },
        { "load", 0, TPU_CLI_VALUE | TPU_CLI_MULTI, 0 },
        { "dump", 0, TPU_CLI_VALUE | TPU_CLI_MULTI, 0 },
        { "dump-dir", 0, TPU_CLI_VALUE, 0 },
        { "hostmem-mib", 0, TPU_CLI_VALUE, 0 },
        { "pc-start", 0, TPU_CLI_VALUE, 1 },
        { NULL, 0, 0, 0 },
    };
    int rc = 0;
    tpu_cli_t cl;
    tpu_cli_init(&cl, xargc, xargv, opts);
    while (rc == 0) {
        const char *name, *val;
        int id = tpu_cli_next(&cl, &name, &val, err, sizeof err);
        uint64_t x;
        if (id == TPU_CLI_END)
            break;
        if (id == TPU_CLI_ERROR || id == TPU_CLI_POSITIONAL) {
            if (id == TPU_CLI_POSITIONAL)
                snprintf(err, sizeof err, "unexpected argument '%s'", val);
            fprintf(stderr, ME ": error: %s: %s; expected a host option of a core job "
                    "(--prog, --load, --dump, --dump-dir, --hostmem-mib) or --pc-start\n", path,
                    err);
            rc = -1;
        } else if (id == 1) {
            if (tpu_cli_count(name, val, 0, TPU_LIM_IMEM_INSNS_MAX - 1u, &x, err, sizeof err)) {
                fprintf(stderr, ME ": error: %s: %s\n", path, err);
                rc = -1;
            }
            j->pc_start = (unsigned long)x;
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
        fprintf(stderr, ME ": error: cannot create the folder '%s': %s\n", d, strerror(errno));
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
    unsigned dispatch = TPU_DISPATCH_RTL;
    uint64_t max_cycles = TPU_LIM_MAX_CYCLES_DEFAULT;
    uint64_t skew = TPU_BOARD_START_SKEW_DEFAULT;
    uint64_t dead_l = 0, dead_t = 0;
    const char *dead_s = NULL;
    int status = 2;
    core_job_t *jobs = NULL;
    tpu_board_t *board = NULL;
    tpu_core_result_t *res = NULL;
    unsigned C = 0;
    static const tpu_cli_opt_t opts[] = {
        { "help", 'h', 0, 'h' },            { "mxu", 0, TPU_CLI_VALUE, 'n' },
        { "cores", 0, TPU_CLI_VALUE, 'C' }, { "topology", 0, TPU_CLI_VALUE, 'T' },
        { "link-bits", 0, TPU_CLI_VALUE, 'W' }, { "link-latency", 0, TPU_CLI_VALUE, 'D' },
        { "ub-kib", 0, TPU_CLI_VALUE, 'u' }, { "acc-kib", 0, TPU_CLI_VALUE, 'a' },
        { "wmem-kib", 0, TPU_CLI_VALUE, 'w' }, { "imem-insns", 0, TPU_CLI_VALUE, 'I' },
        { "pe-stages", 0, TPU_CLI_VALUE, 'S' }, { "axi-latency", 0, TPU_CLI_VALUE, 'L' },
        { "axi-data-bits", 0, TPU_CLI_VALUE, 'B' }, { "dispatch", 0, TPU_CLI_VALUE, 'd' },
        { "job", 0, TPU_CLI_VALUE, 'j' },   { "out", 0, TPU_CLI_VALUE, 'o' },
        { "max-cycles", 0, TPU_CLI_VALUE, 'X' }, { "start-skew", 0, TPU_CLI_VALUE, 'K' },
        { "link-dead", 0, TPU_CLI_VALUE, 'F' },
        { NULL, 0, 0, 0 },
    };
    char err[1024];
    tpu_cli_t cl;
    tpu_cli_init(&cl, argc, argv, opts);
    for (;;) {
        const char *name, *val;
        int id = tpu_cli_next(&cl, &name, &val, err, sizeof err), rc = 0;
        uint64_t x = 0;
        if (id == TPU_CLI_END)
            break;
        switch (id) {
        case TPU_CLI_ERROR: rc = -1; break;
        case TPU_CLI_POSITIONAL:
            snprintf(err, sizeof err, "unexpected argument '%s' (allowed: options only)", val);
            rc = -1;
            break;
        case 'h': usage(stdout); return 0;
        case 'n': rc = tpu_cli_count(name, val, 1, TPU_LIM_MXU_MAX, &x, err, sizeof err); n = x; break;
        case 'C': rc = tpu_cli_count(name, val, 1, TPU_LIM_CORES_MAX, &x, err, sizeof err); cores = x; break;
        case 'T': topo = val; break;
        case 'W':
            rc = tpu_cli_count(name, val, TPU_BOARD_LINK_BITS_MIN, TPU_BOARD_LINK_BITS_MAX, &x,
                               err, sizeof err);
            W = x;
            break;
        case 'D':
            rc = tpu_cli_count(name, val, 0, TPU_BOARD_LINK_LATENCY_MAX, &x, err, sizeof err);
            D = x;
            break;
        case 'u': rc = tpu_cli_count(name, val, 1, TPU_LIM_KIB_MAX, &x, err, sizeof err); ubk = x; ubs = val; break;
        case 'a': rc = tpu_cli_count(name, val, 1, TPU_LIM_KIB_MAX, &x, err, sizeof err); acck = x; accs = val; break;
        case 'w': rc = tpu_cli_count(name, val, 1, TPU_LIM_KIB_MAX, &x, err, sizeof err); wmk = x; wms = val; break;
        case 'I':
            rc = tpu_cli_count(name, val, 1, TPU_LIM_IMEM_INSNS_MAX, &x, err, sizeof err);
            imem = x;
            break;
        case 'S':
            rc = tpu_cli_count(name, val, 1, TPU_LIM_PE_STAGES_MAX, &x, err, sizeof err);
            stages = x;
            break;
        case 'L':
            rc = tpu_cli_count(name, val, 1, TPU_LIM_AXI_LATENCY_MAX, &x, err, sizeof err);
            lat = x;
            break;
        case 'B':
            if (tpu_cli_dec_n(val, strlen(val), &x) || x > 512 ||
                !tpu_axi_data_bits_ok((unsigned)x)) {
                snprintf(err, sizeof err, "%s '%s' is not an AXI data width (allowed: 64, 128, "
                         "256, 512)", name, val);
                rc = -1;
            }
            axi_bits = x;
            break;
        case 'd':
            if (strcmp(val, "rtl") == 0)
                dispatch = TPU_DISPATCH_RTL;
            else if (strcmp(val, "serial") == 0)
                dispatch = TPU_DISPATCH_SERIAL;
            else if (strcmp(val, "overlap") == 0)
                dispatch = TPU_DISPATCH_OVERLAP;
            else {
                snprintf(err, sizeof err, "%s '%s' is not a dispatch mode (allowed: rtl, "
                         "serial, overlap)", name, val);
                rc = -1;
            }
            break;
        case 'j': jobdir = val; break;
        case 'X': rc = tpu_cli_count(name, val, 0, UINT64_MAX - 1, &max_cycles, err, sizeof err); break;
        case 'K':
            rc = tpu_cli_count(name, val, 0, TPU_BOARD_START_SKEW_MAX, &skew, err, sizeof err);
            break;
        case 'F': { /* L@CYCLE; L is checked against the board below */
            const char *at = strchr(val, '@');
            if (at == NULL || tpu_cli_dec_n(val, (size_t)(at - val), &dead_l) != 0 ||
                dead_l >= 256 || tpu_cli_dec_n(at + 1, strlen(at + 1), &dead_t) != 0 ||
                dead_t == UINT64_MAX) {
                snprintf(err, sizeof err, "%s '%s' is not LINK@CYCLE (decimal link index and "
                         "board cycle)", name, val);
                rc = -1;
            }
            dead_s = val;
            break;
        }
        default: outdir = val; break;
        }
        if (rc) {
            fprintf(stderr, ME ": error: %s\n", err);
            return 2;
        }
    }
    if (n == 0)
        return bad("--mxu", "", "the MXU size N (1 .. 256)");
    if (jobdir == NULL)
        return bad("--job", "", "a board job folder (core<i>.args)");
    if (outdir == NULL)
        return bad("--out", "", "an output folder");
    if (tpu_outdir_check("--out", outdir, err, sizeof err) != 0) {
        fprintf(stderr, ME ": error: %s\n", err);
        return 2;
    }
    C = (unsigned)cores;
    tpu_board_cfg_t bc;
    memset(&bc, 0, sizeof bc);
    if (tpu_board_topology_parse(topo, C, &bc.rows, &bc.cols, err, sizeof err) != 0) {
        fprintf(stderr, ME ": error: %s\n", err);
        return 2;
    }
    /* gen numbers a torus's links with 4 ports per core even when R = 1 */
    bc.link_ports = (topo != NULL && topo[0] ? strncmp(topo, "torus", 5) == 0 : C == 8) ? 4u : 2u;
    if (dead_s != NULL) {
        if (dead_l >= (uint64_t)C * bc.link_ports) {
            fprintf(stderr, ME ": error: --link-dead '%s': link %llu does not exist (allowed: "
                    "0 .. %u on this board)\n", dead_s, (unsigned long long)dead_l,
                    C * bc.link_ports - 1u);
            return 2;
        }
        bc.link_dead = (unsigned)dead_l + 1u;
        bc.link_dead_cycle = dead_t;
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
    bc.core.dispatch = dispatch;
    bc.start_skew = skew ? (unsigned)skew : TPU_BOARD_START_TOGETHER;
    bc.core.max_cycles = max_cycles;

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
        if (jobs[i].trace_path == NULL || tpu_out_open(&jobs[i].tout, p, err, sizeof err)) {
            fprintf(stderr, ME ": error: %s\n", jobs[i].trace_path ? err : "out of memory");
            goto out;
        }
        jobs[i].trace = jobs[i].tout.f;
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
        if (rc == TPU_OK && tpu_out_commit(&jobs[i].tout, err, sizeof err) != 0)
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
        {
            char line[2048];
            size_t used = (size_t)snprintf(line, sizeof line, "counters:");
            for (unsigned k = 0; k < TPU_CNT_COUNT && used < sizeof line; k++)
                used += (size_t)snprintf(line + used, sizeof line - used, " %s=%" PRIu64,
                                         tpu_core_counter_name(k), r->counters[k]);
            if (used < sizeof line)
                used += (size_t)snprintf(line + used, sizeof line - used, "\n");
            if (tpu_file_write(p, line, strlen(line), err, sizeof err) != 0) {
                fprintf(stderr, ME ": error: %s\n", err);
                goto out;
            }
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
            if (r->status == TPU_CORE_LIMIT)
                snprintf(state, sizeof state, "stopped at the cycle limit (--max-cycles %" PRIu64
                         ") before pc %u: %s", max_cycles, (unsigned)r->err_pc, dis);
            else if (r->status == TPU_CORE_ERROR)
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
            tpu_out_abort(&jobs[i].tout);
            free(jobs[i].trace_path);
            free(jobs[i].prog);
            tpu_host_free(&jobs[i].host);
        }
    free(jobs);
    free(res);
    tpu_board_free(board);
    return status;
}
