/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-dis: print a binary core program, one `<index>: <instruction>` line each, in the
   assembler's syntax (the text after "<index>: " assembles to the same bits), on stdout or
   into the file of -o. */
#include <stdio.h>
#include <stdlib.h>

#include "tpu/cli.h"
#include "tpu/host.h"
#include "tpu/isa.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tpu-dis [--raw] PROG.bin [-o PROG.s]\n"
               "  --raw               also print the four words in hex after each instruction\n"
               "  -o, --output FILE   write the text into FILE instead of stdout: checked before\n"
               "                      the program is read (a file name in an existing directory,\n"
               "                      not PROG.bin itself); a regular file is replaced only when\n"
               "                      complete, a device or FIFO written in place\n"
               "  -h, --help          this text\n"
               "Exit status: 0, 1 a bad program or a write error, 2 bad arguments.\n");
}

enum { O_RAW, O_OUT, O_HELP };

static const tpu_cli_opt_t opts[] = {
    { "raw", 0, 0, O_RAW },
    { "output", 'o', TPU_CLI_VALUE, O_OUT },
    { "help", 'h', 0, O_HELP },
    { NULL, 0, 0, 0 },
};

/* internal: the listing into f; 0, or -1 on a write error (errno set) */
static int print_program(FILE *f, const tpu_insn_t *prog, size_t count, int raw)
{
    for (size_t i = 0; i < count; i++) {
        char text[160];
        tpu_insn_disasm(prog[i], text, sizeof text);
        if (raw)
            fprintf(f, "%zu: %-72s # %08x %08x %08x %08x\n", i, text, (unsigned)prog[i].w[0],
                    (unsigned)prog[i].w[1], (unsigned)prog[i].w[2], (unsigned)prog[i].w[3]);
        else
            fprintf(f, "%zu: %s\n", i, text);
    }
    return ferror(f) ? -1 : 0;
}

int main(int argc, char **argv)
{
    int raw = 0;
    const char *path = NULL, *out = NULL;
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
        if (id == O_OUT) {
            out = val;
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
    /* -o before any work (tpu/cli.h): a file name in an existing directory, and not the
       program itself (by device and inode: another spelling or a link of it). */
    if (out && (tpu_out_check("-o", out, err, sizeof err) != 0 ||
                tpu_out_distinct("-o", out, "PROG.bin", path, err, sizeof err) != 0)) {
        fprintf(stderr, "tpu-dis: error: %s\n", err);
        return 2;
    }
    tpu_insn_t *prog;
    size_t count;
    if (tpu_load_program(path, 0, &prog, &count, err, sizeof err)) {
        fprintf(stderr, "tpu-dis: error: %s\n", err);
        return 1;
    }
    if (!out) {
        int rc = print_program(stdout, prog, count, raw) != 0 || fflush(stdout) != 0;
        free(prog);
        if (rc)
            fprintf(stderr, "tpu-dis: error: cannot write the listing to stdout\n");
        return rc;
    }
    /* a temporary file beside out, renamed into place only when complete; removed on
       SIGTERM, SIGINT or SIGHUP */
    tpu_out_clean_on_signals();
    tpu_out_t o;
    int rc = tpu_out_open(&o, out, err, sizeof err);
    if (rc == 0) {
        print_program(o.f, prog, count, raw); /* a write error: commit reports it, replaces nothing */
        rc = tpu_out_commit(&o, err, sizeof err);
    }
    free(prog);
    if (rc) {
        fprintf(stderr, "tpu-dis: error: %s\n", err);
        return 1;
    }
    return 0;
}
