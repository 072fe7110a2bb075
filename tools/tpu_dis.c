/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-dis: print a binary core program, one `<index>: <instruction>` line each, in the
   assembler's syntax (the text after "<index>: " assembles to the same bits). */
#include <stdio.h>
#include <stdlib.h>

#include "tpu/cli.h"
#include "tpu/host.h"
#include "tpu/isa.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tpu-dis [--raw] PROG.bin\n"
               "  --raw       also print the four words in hex after each instruction\n"
               "  -h, --help  this text\n");
}

enum { O_RAW, O_HELP };

static const tpu_cli_opt_t opts[] = {
    { "raw", 0, 0, O_RAW }, { "help", 'h', 0, O_HELP }, { NULL, 0, 0, 0 },
};

int main(int argc, char **argv)
{
    int raw = 0;
    const char *path = NULL;
    char err[1024];
    tpu_cli_t cl;
    tpu_cli_init(&cl, argc, argv, opts);
    for (;;) {
        const char *name, *val;
        int id = tpu_cli_next(&cl, &name, &val, err, sizeof err);
        if (id == TPU_CLI_END)
            break;
        if (id == TPU_CLI_ERROR) {
            fprintf(stderr, "tpu-dis: error: %s\n", err);
            return 2;
        }
        if (id == O_HELP) {
            usage(stdout);
            return 0;
        }
        if (id == O_RAW) {
            raw = 1;
            continue;
        }
        if (path != NULL) {
            fprintf(stderr, "tpu-dis: error: several input files ('%s', '%s'), expected one "
                    "PROG.bin\n", path, val);
            return 2;
        }
        path = val;
    }
    if (path == NULL) {
        fprintf(stderr, "tpu-dis: error: no input file, expected one PROG.bin\n");
        return 2;
    }
    size_t pl = 0;
    while (path[pl])
        pl++;
    if (pl >= 2 && path[pl - 2] == '.' && path[pl - 1] == 's') {
        fprintf(stderr, "tpu-dis: error: %s is assembly (.s), expected a binary program\n", path);
        return 2;
    }
    tpu_insn_t *prog;
    size_t count;
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
