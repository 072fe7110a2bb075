/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-run: the core's C model runner (docs/isa.md). Runs a program on the model with the
   host options shared with the RTL harness core_tb (--prog, --load, --dump, --dump-dir,
   --hostmem-mib, @FILE; tpu/host.h), writes the core trace, prints the result and the
   predicted performance counters. Exit 0 done, 1 error halt, 2 bad arguments or I/O. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#include "tpu/cli.h"
#include "tpu/core.h"
#include "tpu/host.h"
#include "tpu/isa.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tpu-run --mxu N --prog PROG.s|PROG.bin [options] [@FILE]\n"
            "Core options:\n"
            "  --mxu N               MXU size (1 .. 256), required\n"
            "  --ub-rows R, --acc-rows R, --wmem-rows R, --imem-insns I\n"
            "                        memory sizes (rows 1 .. 65536, IMEM 1 .. 32768; default\n"
            "                        gen's for N)\n"
            "  --pe-stages S         MXU pipeline stages per PE, 1 .. 3 (default 1)\n"
            "  --axi-latency C       host memory latency in cycles, 1 .. 1000 (default 4)\n"
            "  --axi-data-bits B     AXI4 data master width: 64, 128, 256 or 512 (default\n"
            "                        gen's for N: the smallest power of two >= 4N, clamped)\n"
            "  --pc-start PC         first instruction (0 .. IMEM size - 1, default 0)\n"
            "  --dispatch rtl|serial|overlap\n"
            "                        timing: dispatch as gen's sequencer does (default: the\n"
            "                        RTL's cycles), one instruction in flight at a time, or\n"
            "                        the units overlapping as docs/isa.md \"Timing\" allows\n"
            "  --disp-cycles FILE    write \"PC CYCLE\" per dispatched instruction (as core_tb)\n"
            "  --trace FILE          write the core trace (docs/isa.md \"Trace (core)\")\n"
            "  --max-cycles C        stop when an instruction would dispatch after cycle C\n"
            "                        (default 100000000; 0: no limit)\n"
            "Host options (shared with core_tb):\n"
            "  --prog FILE, --load ADDR=FILE.npy, --dump ADDR=FILE.npy:DTYPE:ROWSxCOLS[:STRIDE],\n"
            "  --dump-dir DIR, --hostmem-mib M, @FILE (options one per line)\n"
            "Exit status: 0 done, 1 error halt or the cycle limit, 2 bad arguments or I/O.\n");
}

static int bad(const char *opt, const char *val, const char *what)
{
    fprintf(stderr, "tpu-run: error: %s '%s': expected %s\n", opt, val ? val : "", what);
    return 2;
}

enum { O_MAXC = 100, O_HELP, O_MXU, O_UB, O_ACC, O_WM, O_IMEM, O_STAGES, O_LAT, O_AXI, O_PCS, O_DISPATCH,
       O_TRACE, O_DISP, O_HOST };

static const tpu_cli_opt_t opts[] = {
    { "help", 'h', 0, O_HELP },
    { "mxu", 0, TPU_CLI_VALUE, O_MXU },
    { "ub-rows", 0, TPU_CLI_VALUE, O_UB },
    { "acc-rows", 0, TPU_CLI_VALUE, O_ACC },
    { "wmem-rows", 0, TPU_CLI_VALUE, O_WM },
    { "imem-insns", 0, TPU_CLI_VALUE, O_IMEM },
    { "pe-stages", 0, TPU_CLI_VALUE, O_STAGES },
    { "axi-latency", 0, TPU_CLI_VALUE, O_LAT },
    { "axi-data-bits", 0, TPU_CLI_VALUE, O_AXI },
    { "pc-start", 0, TPU_CLI_VALUE, O_PCS },
    { "dispatch", 0, TPU_CLI_VALUE, O_DISPATCH },
    { "trace", 0, TPU_CLI_VALUE, O_TRACE },
    { "disp-cycles", 0, TPU_CLI_VALUE, O_DISP },
    { "max-cycles", 0, TPU_CLI_VALUE, O_MAXC },
    { "prog", 0, TPU_CLI_VALUE, O_HOST },
    { "load", 0, TPU_CLI_VALUE | TPU_CLI_MULTI, O_HOST },
    { "dump", 0, TPU_CLI_VALUE | TPU_CLI_MULTI, O_HOST },
    { "dump-dir", 0, TPU_CLI_VALUE, O_HOST },
    { "hostmem-mib", 0, TPU_CLI_VALUE, O_HOST },
    { NULL, 0, 0, 0 },
};

int main(int argc, char **argv)
{
    char err[1024];
    int xargc;
    char **xargv;
    if (tpu_args_expand(argc, argv, &xargc, &xargv, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-run: error: %s\n", err);
        return 2;
    }
    tpu_host_t host;
    tpu_host_init(&host);
    uint64_t n = 0, ub = 0, acc = 0, wm = 0, imem = 0, stages = 1, lat = 4, pcs = 0;
    uint64_t axi_bits = 0; /* 0: the default for N */
    uint64_t max_cycles = TPU_LIM_MAX_CYCLES_DEFAULT;
    const char *trace_path = NULL;
    const char *disp_path = NULL;
    unsigned dispatch = TPU_DISPATCH_RTL;
    int status = 2;
    tpu_insn_t *prog = NULL;
    tpu_core_t *core = NULL;
    tpu_out_t tout, dout;
    memset(&tout, 0, sizeof tout);
    memset(&dout, 0, sizeof dout);
    tpu_cli_t cl;
    tpu_cli_init(&cl, xargc, xargv, opts);
    for (;;) {
        const char *name, *val;
        int id = tpu_cli_next(&cl, &name, &val, err, sizeof err);
        if (id == TPU_CLI_END)
            break;
        int rc = 0;
        switch (id) {
        case TPU_CLI_ERROR:
            fprintf(stderr, "tpu-run: error: %s\n", err);
            goto out;
        case TPU_CLI_POSITIONAL:
            fprintf(stderr, "tpu-run: error: unexpected argument '%s' (allowed: options only; "
                    "the program is --prog FILE)\n", val);
            goto out;
        case O_HELP:
            usage(stdout);
            status = 0;
            goto out;
        case O_MXU: rc = tpu_cli_count(name, val, 1, TPU_LIM_MXU_MAX, &n, err, sizeof err); break;
        case O_UB: rc = tpu_cli_count(name, val, 1, TPU_LIM_MEM_ROWS_MAX, &ub, err, sizeof err); break;
        case O_ACC: rc = tpu_cli_count(name, val, 1, TPU_LIM_MEM_ROWS_MAX, &acc, err, sizeof err); break;
        case O_WM: rc = tpu_cli_count(name, val, 1, TPU_LIM_MEM_ROWS_MAX, &wm, err, sizeof err); break;
        case O_IMEM:
            rc = tpu_cli_count(name, val, 1, TPU_LIM_IMEM_INSNS_MAX, &imem, err, sizeof err);
            break;
        case O_STAGES:
            rc = tpu_cli_count(name, val, 1, TPU_LIM_PE_STAGES_MAX, &stages, err, sizeof err);
            break;
        case O_LAT:
            rc = tpu_cli_count(name, val, 1, TPU_LIM_AXI_LATENCY_MAX, &lat, err, sizeof err);
            break;
        case O_AXI:
            if (tpu_cli_dec_n(val, strlen(val), &axi_bits) || axi_bits > 512 ||
                !tpu_axi_data_bits_ok((unsigned)axi_bits)) {
                snprintf(err, sizeof err, "%s '%s' is not an AXI data width (allowed: 64, 128, "
                         "256, 512)", name, val);
                rc = -1;
            }
            break;
        case O_PCS:
            rc = tpu_cli_count(name, val, 0, TPU_LIM_IMEM_INSNS_MAX - 1u, &pcs, err, sizeof err);
            break;
        case O_DISPATCH:
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
        case O_TRACE: trace_path = val; break;
        case O_DISP: disp_path = val; break;
        case O_MAXC:
            rc = tpu_cli_count(name, val, 0, UINT64_MAX - 1, &max_cycles, err, sizeof err);
            break;
        default: /* O_HOST */
            rc = tpu_host_add_option(&host, name, val, err, sizeof err) ? -1 : 0;
            break;
        }
        if (rc) {
            fprintf(stderr, "tpu-run: error: %s\n", err);
            goto out;
        }
    }
    if (n == 0) {
        bad("--mxu", "", "the MXU size N (1 .. 256)");
        goto out;
    }
    if (host.prog_path == NULL) {
        bad("--prog", "", "a program FILE (.s or binary)");
        goto out;
    }
    tpu_core_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.geom = tpu_core_geom_default((unsigned)n);
    if (ub) cfg.geom.ub_rows = (unsigned)ub;
    if (acc) cfg.geom.acc_rows = (unsigned)acc;
    if (wm) cfg.geom.wmem_rows = (unsigned)wm;
    if (imem) cfg.geom.imem_insns = (unsigned)imem;
    cfg.pe_stages = (unsigned)stages;
    cfg.axi_latency = (unsigned)lat;
    cfg.axi_data_bits = (unsigned)axi_bits;
    cfg.dispatch = dispatch;
    cfg.max_cycles = max_cycles;
    size_t count;
    const char *out_opts[2] = {"--trace", "--disp-cycles"}, *outs[2] = {trace_path, disp_path};
    if (tpu_host_check_outputs(&host, out_opts, outs, 2, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-run: error: %s\n", err);
        goto out;
    }
    if (tpu_load_program(host.prog_path, (unsigned)n, &prog, &count, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-run: error: %s\n", err);
        goto out;
    }
    if (count > cfg.geom.imem_insns) {
        fprintf(stderr, "tpu-run: error: --prog '%s': %zu instructions, expected at most %u (IMEM)\n",
                host.prog_path, count, cfg.geom.imem_insns);
        goto out;
    }
    if (pcs >= cfg.geom.imem_insns) {
        fprintf(stderr, "tpu-run: error: --pc-start '%lu': expected 0 .. %u\n", pcs,
                cfg.geom.imem_insns - 1u);
        goto out;
    }
    if (tpu_host_load_all(&host, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-run: error: %s\n", err);
        goto out;
    }
    if (disp_path) {
        if (tpu_out_open(&dout, disp_path, err, sizeof err) != 0) {
            fprintf(stderr, "tpu-run: error: --disp-cycles %s\n", err);
            goto out;
        }
        cfg.disp_log = dout.f;
    }
    core = tpu_core_new(&cfg);
    if (core == NULL) {
        fprintf(stderr, "tpu-run: error: cannot create the model (sizes or memory)\n");
        goto out;
    }
    if (trace_path && tpu_out_open(&tout, trace_path, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-run: error: --trace %s\n", err);
        goto out;
    }
    tpu_core_result_t res;
    int rc = tpu_core_run(core, prog, count, pcs, host.mem, host.size, tout.f, &res);
    if (rc != 0) {
        fprintf(stderr, "tpu-run: error: the run failed (%s)\n",
                trace_path ? "cannot write the trace" : "bad arguments");
        goto out;
    }
    if (trace_path && tpu_out_commit(&tout, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-run: error: --trace %s\n", err);
        goto out;
    }
    if (disp_path && tpu_out_commit(&dout, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-run: error: --disp-cycles %s\n", err);
        goto out;
    }
    if (host.dump_dir && host.ndumps && mkdir(host.dump_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "tpu-run: error: --dump-dir '%s': cannot create the folder: %s\n",
                host.dump_dir, strerror(errno));
        goto out;
    }
    if (tpu_host_dump_all(&host, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-run: error: %s\n", err);
        goto out;
    }
    if (res.uninit_reads)
        fprintf(stderr,
                "tpu-run: warning: %" PRIu64 " read(s) of never-written rows, the first by pc %u "
                "(%s row %u)\n",
                res.uninit_reads, (unsigned)res.uninit_pc, tpu_mem_name(res.uninit_mem),
                res.uninit_row);
    printf("tpu-run: core: N=%lu axi_data_bits=%u axi_latency=%u\n", n,
           tpu_core_cfg(core)->axi_data_bits, tpu_core_cfg(core)->axi_latency);
    printf("tpu-run: counters:");
    for (unsigned k = 0; k < TPU_CNT_COUNT; k++)
        printf(" %s=%" PRIu64, tpu_core_counter_name(k), res.counters[k]);
    uint64_t cyc = res.counters[TPU_CNT_CYCLES];
    printf("\ntpu-run: MXU utilisation %.1f%% (MXU_BUSY/CYCLES); %" PRIu64
           " rows written (ub %" PRIu64 ", acc %" PRIu64 ", wmem %" PRIu64 ")\n",
           cyc ? 100.0 * (double)res.counters[TPU_CNT_MXU_BUSY] / (double)cyc : 0.0,
           res.rows_written[0] + res.rows_written[1] + res.rows_written[2], res.rows_written[0],
           res.rows_written[1], res.rows_written[2]);
    if (res.status == TPU_CORE_ERROR) {
        char dis[256] = "(past the end of IMEM)";
        if (res.err_pc < count)
            tpu_insn_disasm(prog[res.err_pc], dis, sizeof dis);
        else if (res.err_pc < cfg.geom.imem_insns)
            strcpy(dis, "nop");
        char dyn[64] = "";
        if (res.err_seq + pcs != res.err_pc) /* a loop ran: name the dynamic instruction */
            snprintf(dyn, sizeof dyn, " (dynamic instruction %" PRIu64 ")", res.err_seq);
        printf("tpu-run: error %d (%s) at pc %u%s: %s\n", res.err_code,
               tpu_err_name(res.err_code), (unsigned)res.err_pc, dyn, dis);
        status = 1;
    } else if (res.status == TPU_CORE_LIMIT) {
        printf("tpu-run: stopped: cycle %" PRIu64 " passed the --max-cycles limit of %" PRIu64
               " before pc %u could dispatch (the program is not finished; raise the limit "
               "with --max-cycles C, 0 for none)\n", res.counters[TPU_CNT_CYCLES] - 1u,
               max_cycles, (unsigned)res.err_pc);
        status = 1;
    } else if (res.status == TPU_CORE_STUCK) {
        char dis[256] = "nop";
        if (res.err_pc < count)
            tpu_insn_disasm(prog[res.err_pc], dis, sizeof dis);
        printf("tpu-run: stuck at pc %u: %s (a collective's peers never come)\n",
               (unsigned)res.err_pc, dis);
        status = 1;
    } else {
        printf("tpu-run: done\n");
        status = 0;
    }
out:
    tpu_out_abort(&tout);
    tpu_out_abort(&dout);
    tpu_core_free(core);
    free(prog);
    tpu_host_free(&host);
    tpu_args_free(xargc, xargv);
    return status;
}
