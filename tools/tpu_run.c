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
            "                        memory sizes (1 .. 65536; default gen's for N)\n"
            "  --pe-stages S         MXU pipeline stages per PE, 1 .. 3 (default 1)\n"
            "  --axi-latency C       host memory latency in cycles, 1 .. 1000 (default 4)\n"
            "  --axi-data-bits B     AXI4 data master width: 64, 128, 256 or 512 (default\n"
            "                        gen's for N: the smallest power of two >= 4N, clamped)\n"
            "  --pc-start PC         first instruction (default 0)\n"
            "  --dispatch overlap|serial\n"
            "                        timing: units overlap as docs/isa.md \"Timing\" allows\n"
            "                        (default), or one instruction in flight at a time\n"
            "  --trace FILE          write the core trace (docs/isa.md \"Trace (core)\")\n"
            "Host options (shared with core_tb):\n"
            "  --prog FILE, --load ADDR=FILE.npy, --dump ADDR=FILE.npy:DTYPE:ROWSxCOLS[:STRIDE],\n"
            "  --dump-dir DIR, --hostmem-mib M, @FILE (options one per line)\n"
            "Exit status: 0 done, 1 error halt, 2 bad arguments or I/O.\n");
}

static int bad(const char *opt, const char *val, const char *what)
{
    fprintf(stderr, "tpu-run: error: %s '%s': expected %s\n", opt, val ? val : "", what);
    return 2;
}

/* internal: decimal or 0x hex in [lo, hi] */
static int parse_num(const char *s, unsigned long lo, unsigned long hi, unsigned long *v)
{
    char *end;
    if (s == NULL || *s == 0 || *s == '-')
        return -1;
    unsigned long x = strtoul(s, &end, 0);
    if (*end != 0 || x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

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
    unsigned long n = 0, ub = 0, acc = 0, wm = 0, imem = 0, stages = 1, lat = 4, pcs = 0;
    unsigned long axi_bits = 0; /* 0: the default for N */
    const char *trace_path = NULL;
    unsigned serial = 0;
    int status = 2;
    tpu_insn_t *prog = NULL;
    tpu_core_t *core = NULL;
    FILE *tf = NULL;
    for (int i = 1; i < xargc; i++) {
        const char *a = xargv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            status = 0;
            goto out;
        }
        char name[64];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        if (strncmp(a, "--", 2) == 0 && eq != NULL && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            val = eq + 1;
        } else if (strlen(a) < sizeof name) {
            strcpy(name, a);
        } else {
            bad("option", a, "an option of tpu-run --help");
            goto out;
        }
        if (strncmp(name, "--", 2) != 0) {
            bad("argument", a, "an option of tpu-run --help");
            goto out;
        }
        if (val == NULL) {
            if (i + 1 >= xargc) {
                bad(name, "", "a value");
                goto out;
            }
            val = xargv[++i];
        }
        if (tpu_host_is_option(name)) {
            if (tpu_host_add_option(&host, name, val, err, sizeof err) != 0) {
                fprintf(stderr, "tpu-run: error: %s\n", err);
                goto out;
            }
        } else if (strcmp(name, "--mxu") == 0) {
            if (parse_num(val, 1, 256, &n)) { bad(name, val, "1 .. 256"); goto out; }
        } else if (strcmp(name, "--ub-rows") == 0) {
            if (parse_num(val, 1, 65536, &ub)) { bad(name, val, "1 .. 65536"); goto out; }
        } else if (strcmp(name, "--acc-rows") == 0) {
            if (parse_num(val, 1, 65536, &acc)) { bad(name, val, "1 .. 65536"); goto out; }
        } else if (strcmp(name, "--wmem-rows") == 0) {
            if (parse_num(val, 1, 65536, &wm)) { bad(name, val, "1 .. 65536"); goto out; }
        } else if (strcmp(name, "--imem-insns") == 0) {
            if (parse_num(val, 1, 65536, &imem)) { bad(name, val, "1 .. 65536"); goto out; }
        } else if (strcmp(name, "--pe-stages") == 0) {
            if (parse_num(val, 1, 3, &stages)) { bad(name, val, "1 .. 3"); goto out; }
        } else if (strcmp(name, "--axi-latency") == 0) {
            if (parse_num(val, 1, 1000, &lat)) { bad(name, val, "1 .. 1000"); goto out; }
        } else if (strcmp(name, "--axi-data-bits") == 0) {
            if (parse_num(val, 1, 512, &axi_bits) || !tpu_axi_data_bits_ok((unsigned)axi_bits)) {
                bad(name, val, "64, 128, 256 or 512");
                goto out;
            }
        } else if (strcmp(name, "--pc-start") == 0) {
            if (parse_num(val, 0, 65535, &pcs)) { bad(name, val, "0 .. 65535"); goto out; }
        } else if (strcmp(name, "--dispatch") == 0) {
            if (strcmp(val, "overlap") == 0)
                serial = 0;
            else if (strcmp(val, "serial") == 0)
                serial = 1;
            else {
                bad(name, val, "overlap or serial");
                goto out;
            }
        } else if (strcmp(name, "--trace") == 0) {
            trace_path = val;
        } else {
            bad("option", name, "an option of tpu-run --help");
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
    cfg.serial = serial;
    size_t count;
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
    core = tpu_core_new(&cfg);
    if (core == NULL) {
        fprintf(stderr, "tpu-run: error: cannot create the model (sizes or memory)\n");
        goto out;
    }
    if (trace_path && (tf = fopen(trace_path, "w")) == NULL) {
        fprintf(stderr, "tpu-run: error: --trace '%s': cannot open for writing\n", trace_path);
        goto out;
    }
    tpu_core_result_t res;
    int rc = tpu_core_run(core, prog, count, pcs, host.mem, host.size, tf, &res);
    if (tf) {
        if (fclose(tf) != 0)
            rc = -1;
        tf = NULL;
    }
    if (rc != 0) {
        fprintf(stderr, "tpu-run: error: the run failed (%s)\n",
                trace_path ? "cannot write the trace" : "bad arguments");
        goto out;
    }
    if (host.dump_dir && host.ndumps && mkdir(host.dump_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "tpu-run: error: --dump-dir '%s': cannot create the folder\n",
                host.dump_dir);
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
        printf("tpu-run: error %d (%s) at pc %u: %s\n", res.err_code, tpu_err_name(res.err_code),
               (unsigned)res.err_pc, dis);
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
    if (tf)
        fclose(tf);
    tpu_core_free(core);
    free(prog);
    tpu_host_free(&host);
    tpu_args_free(xargc, xargv);
    return status;
}
