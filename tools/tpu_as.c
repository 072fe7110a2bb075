/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-as: assemble a core program (docs/isa.md "Assembly language") into a binary. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tpu/asm.h"
#include "tpu/isa.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tpu-as [--mxu N] [--check] [--ub-rows R] [--acc-rows R] [--wmem-rows R]\n"
            "              PROG.s -o PROG.bin\n"
            "  -o, --output FILE  the binary program (16 bytes per instruction, little-endian)\n"
            "  --mxu N            check 1 <= cols <= N in dma_in/dma_out\n"
            "  --check            also warn about instructions the core would reject\n"
            "                     (error codes 1-4 of docs/isa.md) for the given sizes\n"
            "                     (needs --mxu; sizes default to gen's defaults)\n"
            "  -h, --help         this text\n");
}

static int parse_uint(const char *opt, const char *s, unsigned lo, unsigned hi, unsigned *v)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(s, &end, 0);
    if (errno || *s == 0 || *end != 0 || x < lo || x > hi) {
        fprintf(stderr, "tpu-as: error: %s '%s', expected %u..%u\n", opt, s, lo, hi);
        return -1;
    }
    *v = (unsigned)x;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "mxu", required_argument, NULL, 'n' },  { "output", required_argument, NULL, 'o' },
        { "check", no_argument, NULL, 'c' },      { "ub-rows", required_argument, NULL, 'u' },
        { "acc-rows", required_argument, NULL, 'a' },
        { "wmem-rows", required_argument, NULL, 'w' },
        { "help", no_argument, NULL, 'h' },       { NULL, 0, NULL, 0 }
    };
    unsigned n = 0, ub = 0, acc = 0, wm = 0;
    int check = 0, c;
    const char *out = NULL;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n': if (parse_uint("--mxu", optarg, 1, 65535, &n)) return 2; break;
        case 'u': if (parse_uint("--ub-rows", optarg, 1, 65536, &ub)) return 2; break;
        case 'a': if (parse_uint("--acc-rows", optarg, 1, 65536, &acc)) return 2; break;
        case 'w': if (parse_uint("--wmem-rows", optarg, 1, 65536, &wm)) return 2; break;
        case 'c': check = 1; break;
        case 'o': out = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1 || out == NULL) {
        fprintf(stderr, "tpu-as: error: %s, expected one PROG.s and -o PROG.bin\n",
                optind >= argc ? "no input file" : out == NULL ? "no -o" : "several input files");
        return 2;
    }
    if (check && n == 0) {
        fprintf(stderr, "tpu-as: error: --check without --mxu, expected --mxu N\n");
        return 2;
    }
    const char *in = argv[optind];
    FILE *f = fopen(in, "rb");
    if (f == NULL) {
        fprintf(stderr, "tpu-as: error: %s: cannot open: %s\n", in, strerror(errno));
        return 1;
    }
    size_t cap = 1 << 16, len = 0;
    char *src = malloc(cap);
    while (src) {
        size_t k = fread(src + len, 1, cap - len - 1, f);
        len += k;
        if (k == 0)
            break;
        if (len + 1 == cap) {
            char *p = realloc(src, cap * 2);
            if (p == NULL) {
                free(src);
                src = NULL;
                break;
            }
            src = p;
            cap *= 2;
        }
    }
    fclose(f);
    if (src == NULL) {
        fprintf(stderr, "tpu-as: error: out of memory\n");
        return 1;
    }
    src[len] = 0;
    tpu_insn_t *prog;
    size_t count;
    char *errs;
    int rc = tpu_asm_n(src, in, n, &prog, &count, &errs);
    free(src);
    if (rc != 0) {
        if (errs)
            fputs(errs, stderr);
        fprintf(stderr, "tpu-as: %d error%s, no output written\n", rc < 0 ? 1 : rc,
                rc == 1 ? "" : "s");
        free(errs);
        return 1;
    }
    free(errs);
    if (check) {
        tpu_core_geom_t g = tpu_core_geom_default(n);
        if (ub) g.ub_rows = ub;
        if (acc) g.acc_rows = acc;
        if (wm) g.wmem_rows = wm;
        int lw = 0;
        for (size_t i = 0; i < count; i++) {
            tpu_dinsn_t d;
            char text[160];
            tpu_insn_decode(prog[i], &d);
            int e = tpu_insn_check(&d, &g);
            if (e == 0 && d.opcode == TPU_OP_MATMUL && !lw)
                e = TPU_ERR_NO_LW;
            if (d.opcode == TPU_OP_LW)
                lw = 1;
            if (e) {
                tpu_insn_disasm(prog[i], text, sizeof text);
                fprintf(stderr, "%s: warning: instruction %zu (%s): the core stops with error %d "
                        "(%s)\n", in, i, text, e, tpu_err_name(e));
            }
        }
    }
    size_t ol = strlen(out);
    char *tmp = malloc(ol + 16);
    if (tmp == NULL) {
        fprintf(stderr, "tpu-as: error: out of memory\n");
        return 1;
    }
    snprintf(tmp, ol + 16, "%s.tmpXXXXXX", out);
    int fd = mkstemp(tmp);
    FILE *o = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (o == NULL) {
        fprintf(stderr, "tpu-as: error: %s: cannot create: %s\n", out, strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < count; i++) {
        uint8_t b[16];
        tpu_insn_to_bytes(prog[i], b);
        fwrite(b, 1, 16, o);
    }
    int bad = ferror(o);
    if (fclose(o) != 0 || bad || rename(tmp, out) != 0) {
        fprintf(stderr, "tpu-as: error: %s: write failed: %s\n", out, strerror(errno));
        unlink(tmp);
        return 1;
    }
    free(tmp);
    free(prog);
    return 0;
}
