/* SPDX-License-Identifier: Apache-2.0 */
/* gen: the command line. Parses and checks the options, builds every output file in memory,
   then writes them all at once (outdir.c). Any bad input: one line on stderr, exit 2, and
   nothing written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/cli.h"

#include "config.h"
#include "emit.h"
#include "outdir.h"
#include "strbuf.h"

#define EXIT_USAGE 2

enum { OPT_MXU = 256, OPT_CORES, OPT_PE_STAGES, OPT_VPU_LANES, OPT_FREQ_MHZ, OPT_TOPOLOGY,
       OPT_LINK_BITS, OPT_LINK_LATENCY, OPT_UB_KIB, OPT_ACC_KIB, OPT_WMEM_KIB, OPT_IMEM_INSNS,
       OPT_AXI_DATA_BITS, OPT_CONSTRAINTS_DIR };

/* exact names only (no abbreviations), each at most once (tpu/cli.h) */
static const tpu_cli_opt_t long_opts[] = {
    { "mxu", 0, TPU_CLI_VALUE, OPT_MXU },
    { "cores", 0, TPU_CLI_VALUE, OPT_CORES },
    { "pe-stages", 0, TPU_CLI_VALUE, OPT_PE_STAGES },
    { "vpu-lanes", 0, TPU_CLI_VALUE, OPT_VPU_LANES },
    { "freq-mhz", 0, TPU_CLI_VALUE, OPT_FREQ_MHZ },
    { "ub-kib", 0, TPU_CLI_VALUE, OPT_UB_KIB },
    { "acc-kib", 0, TPU_CLI_VALUE, OPT_ACC_KIB },
    { "wmem-kib", 0, TPU_CLI_VALUE, OPT_WMEM_KIB },
    { "imem-insns", 0, TPU_CLI_VALUE, OPT_IMEM_INSNS },
    { "axi-data-bits", 0, TPU_CLI_VALUE, OPT_AXI_DATA_BITS },
    { "topology", 0, TPU_CLI_VALUE, OPT_TOPOLOGY },
    { "link-bits", 0, TPU_CLI_VALUE, OPT_LINK_BITS },
    { "link-latency", 0, TPU_CLI_VALUE, OPT_LINK_LATENCY },
    { "output", 'o', TPU_CLI_VALUE, 'o' },
    { "constraints-dir", 0, TPU_CLI_VALUE, OPT_CONSTRAINTS_DIR },
    { "help", 'h', 0, 'h' },
    { "version", 0, 0, 'V' },
    { NULL, 0, 0, 0 },
};

static const char allowed_opts[] =
    "(allowed: --mxu N, --cores C, --pe-stages S, --vpu-lanes L, --freq-mhz F, --topology T, --link-bits W, "
    "--link-latency D, --ub-kib K, --acc-kib K, --wmem-kib K, --imem-insns I, --axi-data-bits B, "
    "-o DIR, --constraints-dir DIR, --help, "
    "--version)";

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: gen [--mxu N] [--cores C] [--pe-stages S] [--vpu-lanes L] [--freq-mhz F]\n"
        "           [--ub-kib K] [--acc-kib K] [--wmem-kib K] [--imem-insns I]\n"
        "           [--axi-data-bits B] -o DIR [--constraints-dir CDIR]\n"
        "Generate the SystemVerilog of an N x N weight-stationary systolic matrix unit (MXU)\n"
        "with bf16 products and fp32 accumulation (docs/mxu.md, docs/numerics.md).\n"
        "\n"
        "  --mxu N            array size, %u..%u, any value (default %u)\n"
        "  --cores C          cores on the board, %u..%u (default %u)\n"
        "  --pe-stages S      PE pipeline depth, %u..%u (default %u): 1 multiply and add in one\n"
        "                     cycle (L = 2N); 2 registers the product (L = 2N+1); 3 also splits\n"
        "                     the adder in two (L = 3N+1); same results bit for bit\n"
        "  --vpu-lanes L      vector unit lanes, %u..%u (default: N)\n"
        "  --freq-mhz F       clock the FPGA constraints ask for, whole MHz, %u..%u (default %u)\n"
        "  --topology T       board interconnect (docs/board.md): ring, torus or torus:RxS with\n"
        "                     R*S = C (default: torus:2x4 at C = 8, ring otherwise)\n"
        "  --link-bits W      board link flit width, %u..%u bits (default %u)\n"
        "  --link-latency D   board link pipeline registers per direction, %u..%u (default %u)\n"
        "  --ub-kib K         the core's unified buffer, KiB (default 8N: 4096 rows of N bf16)\n"
        "  --acc-kib K        the core's accumulators, KiB (default 8N: 2048 rows of N fp32)\n"
        "  --wmem-kib K       the core's weight memory, KiB (default 8 tiles: 8N rows of N bf16);\n"
        "                     each size must give %u..%u whole rows\n"
        "  --imem-insns I     the core's instruction memory, %u..%u instructions (default %u)\n"
        "  --axi-data-bits B  the core's AXI4 data master width: 64, 128, 256 or 512 bits\n"
        "                     (default: the smallest power of two >= 4N, clamped to 64..512)\n"
        "  -o, --output DIR   output directory, created if absent (its parent must exist)\n"
        "  --constraints-dir CDIR  write the FPGA constraints (tpu_top.xdc, .sdc, .pcf) into\n"
        "                     CDIR instead of DIR, created if absent; tpu.core refers to them\n"
        "                     by their path relative to DIR (the repository: -o rtl\n"
        "                     --constraints-dir constraints)\n"
        "  -h, --help         print this help and exit\n"
        "      --version      print the version and exit\n"
        "\n"
        "Writes tpu_bf16_mul.sv tpu_fp32_add.sv\n"
        "tpu_pe.sv tpu_mxu_row.sv tpu_mxu.sv tpu_mxu.f tpu_mxu.vlt, the L-lane vector unit (tpu_vpu.f lists its .sv files;\n"
        "tpu_vpu.vlt; docs/vpu.md), tpu_params.h, the top tpu_top.sv with its reset synchroniser\n"
        "tpu_rst_sync.sv (tpu_top.f), its constraints tpu_top.xdc (Vivado), tpu_top.sdc (Quartus),\n"
        "tpu_top.pcf (nextpnr-ice40; into CDIR if given) and the FuseSoC core file tpu.core\n"
        "(docs/fpga.md) into DIR, all or nothing: on any error nothing is written (in neither\n"
        "directory) and the exit status is 2. The same command\n"
        "always writes the same bytes.\n"
        "When L = N (the default) it also writes the core (docs/isa.md): tpu_core.sv and its\n"
        "modules (tpu_sram, tpu_core_regs, tpu_core_dma, tpu_core_seq, tpu_core_mx, tpu_core_vctl),\n"
        "tpu_core.f and tpu_core.vlt and the board; otherwise the MXU, the VPU, the NoC and\n"
        "the core's DMA and registers without the core, and the options that only size the\n"
        "core's memories (--ub-kib, --acc-kib, --wmem-kib, --imem-insns) are refused.\n"
        "DIR (and CDIR) also gets tpu_manifest.txt, the list of the files gen wrote there.\n"
        "Into an existing DIR, the files the previous manifest lists that this configuration\n"
        "does not write are removed, so that gen's files in DIR are exactly this\n"
        "configuration's; every other file is kept, even one named like gen's (tpu_mine.sv);\n"
        "without a manifest of gen's, nothing is removed.\n"
        "Options are typed in full (no abbreviations), each once; numbers are decimal digits.\n",
        GEN_MXU_MIN, GEN_MXU_MAX, GEN_MXU_DEFAULT, GEN_CORES_MIN, GEN_CORES_MAX,
        GEN_CORES_DEFAULT, GEN_PE_STAGES_MIN, GEN_PE_STAGES_MAX, GEN_PE_STAGES_DEFAULT,
        GEN_VPU_LANES_MIN, GEN_VPU_LANES_MAX, GEN_FREQ_MHZ_MIN, GEN_FREQ_MHZ_MAX, GEN_FREQ_MHZ_DEFAULT,
        GEN_LINK_BITS_MIN, GEN_LINK_BITS_MAX, GEN_LINK_BITS_DEFAULT, GEN_LINK_LATENCY_MIN,
        GEN_LINK_LATENCY_MAX, GEN_LINK_LATENCY_DEFAULT, 1u, GEN_MEM_ROWS_MAX, GEN_IMEM_INSNS_MIN,
        GEN_IMEM_INSNS_MAX, GEN_IMEM_INSNS_DEFAULT);
}

/* What main allocates before it may die: freed by die() too, so that every exit path leaves
   nothing allocated (tests/fuzz/fuzz_gen.c runs main many times in one process). */
static struct strbuf cmd;     /* the command line as typed, for the headers */
static char *cons_rel;        /* the constraints directory relative to -o */

/* internal: prints "gen: error: <msg>" as one line and exits 2 */
static void die(struct strbuf *msg)
{
    fprintf(stderr, "gen: error: %s\n", sb_failed(msg) ? "out of memory" : msg->data);
    sb_free(msg);
    sb_free(&cmd);
    free(cons_rel);
    cons_rel = NULL;
    exit(EXIT_USAGE);
}

/* internal: "(allowed: lo..hi)" or "(allowed: lo)" */
static void put_range(struct strbuf *sb, unsigned lo, unsigned hi)
{
    if (lo == hi)
        sb_printf(sb, "(allowed: %u)", lo);
    else
        sb_printf(sb, "(allowed: %u..%u)", lo, hi);
}

/* internal: parses a whole decimal number in lo..hi (tpu/cli.h: the digits 0-9 only, "010" is
   ten; no sign, no spaces, no suffix), or dies naming the option, the value as typed and what
   is allowed. */
static unsigned parse_count(const char *opt, const char *s, unsigned lo, unsigned hi)
{
    uint64_t v;
    char err[512];
    if (tpu_cli_count(opt, s, lo, hi, &v, err, sizeof err) == 0)
        return (unsigned)v;
    struct strbuf msg;
    sb_init(&msg);
    sb_puts(&msg, err);
    die(&msg);
    return 0;
}

#define TOPOLOGY_ALLOWED "(allowed: ring, torus, torus:RxS with R*S = --cores)"

/* internal: the topology as typed, checked and resolved against the core count once all
   options are read (docs/board.md "Topology"): NULL is the default (torus 2x4 at C = 8,
   ring otherwise); "torus" picks R = the largest divisor of C with R*R <= C. */
static void resolve_topology(struct gen_config *cfg, const char *t)
{
    unsigned c = cfg->cores;
    struct strbuf msg;
    sb_init(&msg);
    cfg->torus = 0;
    cfg->torus_rows = 1;
    cfg->torus_cols = c;
    if (!t) {
        if (c == 8) {
            cfg->torus = 1;
            cfg->torus_rows = 2;
            cfg->torus_cols = 4;
        }
        return;
    }
    if (strcmp(t, "ring") == 0)
        return;
    if (strcmp(t, "torus") == 0) {
        unsigned r = 1;
        for (unsigned d = 1; d * d <= c; d++)
            if (c % d == 0)
                r = d;
        cfg->torus = 1;
        cfg->torus_rows = r;
        cfg->torus_cols = c / r;
        return;
    }
    if (strncmp(t, "torus:", 6) == 0) {
        const char *p = t + 6;
        unsigned long dims[2] = { 0, 0 };
        int ok = 1;
        for (int k = 0; k < 2 && ok; k++) {
            const char *start = p;
            while (*p >= '0' && *p <= '9') {
                if (dims[k] <= GEN_CORES_MAX)
                    dims[k] = dims[k] * 10u + (unsigned long)(*p - '0');
                p++;
            }
            ok = p != start && (k == 1 ? *p == '\0' : *p == 'x');
            if (k == 0 && ok)
                p++;
        }
        if (ok && dims[0] >= 1 && dims[1] >= 1 && dims[0] * dims[1] == c) {
            cfg->torus = 1;
            cfg->torus_rows = (unsigned)dims[0];
            cfg->torus_cols = (unsigned)dims[1];
            return;
        }
        sb_puts(&msg, "--topology ");
        sb_put_quoted(&msg, t);
        if (ok)
            sb_printf(&msg, ": R*S = %lu must equal --cores %u (allowed: torus:RxS, R, S >= 1)",
                      dims[0] * dims[1], c);
        else
            sb_puts(&msg, " is not a torus shape (allowed: torus:RxS, R and S whole numbers)");
        die(&msg);
    }
    sb_puts(&msg, "--topology ");
    sb_put_quoted(&msg, t);
    sb_puts(&msg, " is not a topology " TOPOLOGY_ALLOWED);
    die(&msg);
}

/* internal: a memory of `kib` KiB (0: the default) must hold 1..GEN_MEM_ROWS_MAX whole rows of
   `row_bytes` bytes, or gen dies naming the option, the value and the row size */
static void check_kib(const char *opt, unsigned kib, unsigned row_bytes)
{
    unsigned long long bytes = (unsigned long long)kib * 1024u;
    if (kib == 0 || (bytes % row_bytes == 0 && bytes / row_bytes <= GEN_MEM_ROWS_MAX))
        return;
    struct strbuf msg;
    sb_init(&msg);
    if (bytes % row_bytes != 0)
        sb_printf(&msg, "%s '%u' is not a whole number of %u-byte rows", opt, kib, row_bytes);
    else
        sb_printf(&msg, "%s '%u' gives %llu rows of %u bytes", opt, kib, bytes / row_bytes,
                  row_bytes);
    sb_printf(&msg, " (allowed: KiB giving 1..%u whole rows at this N)", GEN_MEM_ROWS_MAX);
    die(&msg);
}

#define AXI_DATA_BITS_ALLOWED "(allowed: 64, 128, 256, 512)"

/* internal: --axi-data-bits B, a power of two in 64..512, or gen dies naming the value */
static unsigned parse_axi_data_bits(const char *s)
{
    uint64_t x;
    if (tpu_cli_dec_n(s, strlen(s), &x) == 0)
        for (unsigned v = GEN_AXI_DATA_BITS_MIN; v <= GEN_AXI_DATA_BITS_MAX; v *= 2u)
            if (x == v)
                return v;
    struct strbuf msg;
    sb_init(&msg);
    sb_puts(&msg, "--axi-data-bits ");
    sb_put_quoted(&msg, s);
    sb_puts(&msg, " is not an AXI data width " AXI_DATA_BITS_ALLOWED);
    die(&msg);
    return 0;
}

/* internal: what an option's value may be, for messages */
static void put_allowed_value(struct strbuf *sb, int val)
{
    switch (val) {
    case OPT_MXU: put_range(sb, GEN_MXU_MIN, GEN_MXU_MAX); break;
    case OPT_CORES: put_range(sb, GEN_CORES_MIN, GEN_CORES_MAX); break;
    case OPT_PE_STAGES: put_range(sb, GEN_PE_STAGES_MIN, GEN_PE_STAGES_MAX); break;
    case OPT_VPU_LANES: put_range(sb, GEN_VPU_LANES_MIN, GEN_VPU_LANES_MAX); break;
    case OPT_FREQ_MHZ: put_range(sb, GEN_FREQ_MHZ_MIN, GEN_FREQ_MHZ_MAX); break;
    case OPT_UB_KIB:
    case OPT_ACC_KIB:
    case OPT_WMEM_KIB: put_range(sb, GEN_KIB_MIN, GEN_KIB_MAX); break;
    case OPT_IMEM_INSNS: put_range(sb, GEN_IMEM_INSNS_MIN, GEN_IMEM_INSNS_MAX); break;
    case OPT_TOPOLOGY: sb_puts(sb, TOPOLOGY_ALLOWED); break;
    case OPT_AXI_DATA_BITS: sb_puts(sb, AXI_DATA_BITS_ALLOWED); break;
    case OPT_LINK_BITS: put_range(sb, GEN_LINK_BITS_MIN, GEN_LINK_BITS_MAX); break;
    case OPT_LINK_LATENCY: put_range(sb, GEN_LINK_LATENCY_MIN, GEN_LINK_LATENCY_MAX); break;
    default: sb_puts(sb, "(allowed: a directory path)"); break;
    }
}

/* internal: the command line for the headers: basename(argv[0]) and the arguments exactly
   as given, each quoted for a shell only if it has to be */
static void record_command(struct strbuf *sb, int argc, char *const argv[])
{
    const char *prog = argc > 0 && argv[0] ? argv[0] : "gen";
    const char *slash = strrchr(prog, '/');
    sb_put_shell_word(sb, slash ? slash + 1 : prog);
    for (int i = 1; i < argc; i++) {
        sb_puts(sb, " ");
        sb_put_shell_word(sb, argv[i]);
    }
}

int main(int argc, char *argv[])
{
    struct gen_config cfg = {
        .n = GEN_MXU_DEFAULT, .cores = GEN_CORES_DEFAULT, .pe_stages = GEN_PE_STAGES_DEFAULT,
        .freq_mhz = GEN_FREQ_MHZ_DEFAULT, .link_bits = GEN_LINK_BITS_DEFAULT,
        .link_latency = GEN_LINK_LATENCY_DEFAULT,
    };
    const char *topology = NULL;
    const char *core_opt = NULL; /* the first core or board option given */
    int vpu_lanes_opt = 0;
    const char *outdir = NULL;
    const char *consdir = NULL;
    struct strbuf msg;
    sb_init(&cmd);
    cons_rel = NULL;
    sb_init(&msg);

    /* As typed: names are exact (no abbreviation) and each option is given once. */
    record_command(&cmd, argc, argv);

    tpu_cli_t cl;
    tpu_cli_init(&cl, argc, argv, long_opts);
    for (;;) {
        const char *name, *optarg;
        char err[1024];
        int c = tpu_cli_next(&cl, &name, &optarg, err, sizeof err);
        if (c == TPU_CLI_END)
            break;
        switch (c) {
        case OPT_MXU:
            cfg.n = parse_count("--mxu", optarg, GEN_MXU_MIN, GEN_MXU_MAX);
            break;
        case OPT_CORES:
            cfg.cores = parse_count("--cores", optarg, GEN_CORES_MIN, GEN_CORES_MAX);
            break;
        case OPT_PE_STAGES:
            cfg.pe_stages =
                parse_count("--pe-stages", optarg, GEN_PE_STAGES_MIN, GEN_PE_STAGES_MAX);
            break;
        case OPT_VPU_LANES:
            cfg.vpu_lanes =
                parse_count("--vpu-lanes", optarg, GEN_VPU_LANES_MIN, GEN_VPU_LANES_MAX);
            vpu_lanes_opt = 1;
            break;
        case OPT_FREQ_MHZ:
            cfg.freq_mhz = parse_count("--freq-mhz", optarg, GEN_FREQ_MHZ_MIN, GEN_FREQ_MHZ_MAX);
            break;
        case OPT_TOPOLOGY:
            topology = optarg;
            break;
        case OPT_LINK_BITS:
            cfg.link_bits = parse_count("--link-bits", optarg, GEN_LINK_BITS_MIN, GEN_LINK_BITS_MAX);
            break;
        case OPT_LINK_LATENCY:
            cfg.link_latency =
                parse_count("--link-latency", optarg, GEN_LINK_LATENCY_MIN, GEN_LINK_LATENCY_MAX);
            break;
        case OPT_UB_KIB:
            cfg.ub_kib = parse_count("--ub-kib", optarg, GEN_KIB_MIN, GEN_KIB_MAX);
            core_opt = core_opt ? core_opt : "--ub-kib";
            break;
        case OPT_ACC_KIB:
            cfg.acc_kib = parse_count("--acc-kib", optarg, GEN_KIB_MIN, GEN_KIB_MAX);
            core_opt = core_opt ? core_opt : "--acc-kib";
            break;
        case OPT_WMEM_KIB:
            cfg.wmem_kib = parse_count("--wmem-kib", optarg, GEN_KIB_MIN, GEN_KIB_MAX);
            core_opt = core_opt ? core_opt : "--wmem-kib";
            break;
        case OPT_IMEM_INSNS:
            cfg.imem_insns =
                parse_count("--imem-insns", optarg, GEN_IMEM_INSNS_MIN, GEN_IMEM_INSNS_MAX);
            core_opt = core_opt ? core_opt : "--imem-insns";
            break;
        case OPT_AXI_DATA_BITS:
            cfg.axi_data_bits = parse_axi_data_bits(optarg);
            break;
        case 'o':
            outdir = optarg;
            break;
        case OPT_CONSTRAINTS_DIR:
            consdir = optarg;
            break;
        case 'h':
            usage(stdout);
            sb_free(&cmd);
            return fflush(stdout) == 0 ? 0 : 1;
        case 'V':
            printf("gen %s\n", GEN_VERSION);
            sb_free(&cmd);
            return fflush(stdout) == 0 ? 0 : 1;
        case TPU_CLI_POSITIONAL:
            sb_puts(&msg, "unexpected argument ");
            sb_put_quoted(&msg, optarg);
            sb_puts(&msg, " (allowed: options only; the output directory is given with -o DIR)");
            die(&msg);
            break;
        default: /* TPU_CLI_ERROR */
            if (strstr(err, "unknown option ") == err) {
                /* "unknown option 'X'" and gen's own list of what is allowed */
                const char *q = strstr(err, "' (allowed");
                sb_printf(&msg, "%.*s' %s", q ? (int)(q - err) : (int)strlen(err), err,
                          allowed_opts);
            } else {
                sb_puts(&msg, err);
                if (strstr(err, "needs a value") != NULL) {
                    for (size_t k = 0; long_opts[k].name; k++) {
                        char l[64], sh[4] = { '-', long_opts[k].short_name, 0, 0 };
                        snprintf(l, sizeof l, "'--%s'", long_opts[k].name);
                        char shq[8];
                        snprintf(shq, sizeof shq, "'%s'", sh);
                        if (strstr(err, l) || (long_opts[k].short_name && strstr(err, shq))) {
                            sb_puts(&msg, " ");
                            put_allowed_value(&msg, long_opts[k].id);
                            break;
                        }
                    }
                }
            }
            die(&msg);
            break;
        }
    }
    if (!outdir) {
        sb_puts(&msg, "missing -o DIR (allowed: an existing directory, or a new name in one)");
        die(&msg);
    }
    if (outdir[0] == '\0') {
        sb_puts(&msg, "-o '' is empty (allowed: an existing directory, or a new name in one)");
        die(&msg);
    }
    if (consdir && consdir[0] == '\0') {
        sb_puts(&msg, "--constraints-dir '' is empty (allowed: an existing directory, or a new name in one)");
        die(&msg);
    }
    if (consdir) {
        cons_rel = gen_relative_dir(outdir, consdir, &msg);
        if (!cons_rel)
            die(&msg);
        if (cons_rel[0] == '\0')
            consdir = NULL; /* the same directory: nothing to split */
    }
    cfg.constraints_rel = cons_rel ? cons_rel : "";
    if (sb_failed(&cmd)) {
        sb_puts(&msg, "out of memory");
        die(&msg);
    }

    /* The core (and with it its memories) is written only when the VPU has N lanes: the
       memory sizes would otherwise be ignored silently. */
    if (vpu_lanes_opt && cfg.vpu_lanes != cfg.n && core_opt) {
        sb_printf(&msg, "%s sizes a memory of the core, which is written only when "
                  "--vpu-lanes equals --mxu (got --vpu-lanes %u, --mxu %u) (allowed: drop %s, "
                  "or --vpu-lanes %u)", core_opt, cfg.vpu_lanes, cfg.n, core_opt, cfg.n);
        die(&msg);
    }
    resolve_topology(&cfg, topology);
    check_kib("--ub-kib", cfg.ub_kib, 2u * cfg.n);
    check_kib("--acc-kib", cfg.acc_kib, 4u * cfg.n);
    check_kib("--wmem-kib", cfg.wmem_kib, 2u * cfg.n);
    cfg.argv_line = cmd.data;
    gen_config_derive(&cfg);

    struct gen_output out;
    gen_output_init(&out);
    int rc = gen_emit_all(&out, &cfg);
    if (rc != 0) {
        gen_output_free(&out);
        sb_free(&cmd);
        sb_puts(&msg, "out of memory while generating");
        die(&msg);
    }
    rc = gen_output_write(&out, outdir, consdir, &msg);
    gen_output_free(&out);
    free(cons_rel);
    cons_rel = NULL;
    sb_free(&cmd);
    if (rc != 0)
        die(&msg);
    sb_free(&msg);
    return 0;
}
