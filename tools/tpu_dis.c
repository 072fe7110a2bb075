/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-dis: print a binary core program, one `<index>: <instruction>` line each, in the
   assembler's syntax (the text after "<index>: " assembles to the same bits). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "tpu/host.h"
#include "tpu/isa.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tpu-dis [--raw] PROG.bin\n"
               "  --raw       also print the four words in hex after each instruction\n"
               "  -h, --help  this text\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = { { "raw", no_argument, NULL, 'r' },
                                          { "help", no_argument, NULL, 'h' },
                                          { NULL, 0, NULL, 0 } };
    int raw = 0, c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': raw = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "tpu-dis: error: %s, expected one PROG.bin\n",
                optind >= argc ? "no input file" : "several input files");
        return 2;
    }
    const char *path = argv[optind];
    size_t pl = 0;
    while (path[pl])
        pl++;
    if (pl >= 2 && path[pl - 2] == '.' && path[pl - 1] == 's') {
        fprintf(stderr, "tpu-dis: error: %s is assembly (.s), expected a binary program\n", path);
        return 2;
    }
    tpu_insn_t *prog;
    size_t count;
    char err[512];
    if (tpu_load_program(path, 0, &prog, &count, err, sizeof err)) {
        fprintf(stderr, "tpu-dis: error: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < count; i++) {
        char text[160];
        tpu_insn_disasm(prog[i], text, sizeof text);
        if (raw)
            printf("%zu: %-72s # %08x %08x %08x %08x\n", i, text, (unsigned)prog[i].w[0],
                   (unsigned)prog[i].w[1], (unsigned)prog[i].w[2], (unsigned)prog[i].w[3]);
        else
            printf("%zu: %s\n", i, text);
    }
    free(prog);
    return 0;
}
