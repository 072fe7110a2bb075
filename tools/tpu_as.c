/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-as: assemble a core program (docs/isa.md "Assembly language") into a binary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/asm.h"
#include "tpu/cli.h"
#include "tpu/isa.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tpu-as [--mxu N] [--check] [--ub-rows R] [--acc-rows R] [--wmem-rows R]\n"
            "              PROG.s -o PROG.bin\n"
            "  -o, --output FILE  the binary program (16 bytes per instruction, little-endian)\n"
            "  --mxu N            check 1 <= cols <= N in dma_in/dma_out (N 1 .. 256)\n"
            "  --check            also warn about instructions the core would reject\n"
            "                     (error codes 1-4 of docs/isa.md) for the given sizes\n"
            "                     (needs --mxu; sizes default to gen's defaults)\n"
            "  -h, --help         this text\n"
            "The output: a regular file is replaced only when complete (temporary file, then\n"
            "rename); a device or FIFO is written in place (docs/isa.md \"Command lines\").\n"
            "It is checked before the source is read: a file name in an existing directory,\n"
            "not the source itself. A program of more than %u instructions (the largest\n"
            "IMEM gen builds) is refused, nothing written.\n"
            "Exit status: 0 assembled, 1 errors in the source or I/O, 2 bad arguments or a\n"
            "program too large for the IMEM.\n", TPU_LIM_IMEM_INSNS_MAX);
}

enum { O_MXU, O_OUT, O_CHECK, O_UB, O_ACC, O_WM, O_HELP };

static const tpu_cli_opt_t opts[] = {
    { "mxu", 0, TPU_CLI_VALUE, O_MXU },       { "output", 'o', TPU_CLI_VALUE, O_OUT },
    { "check", 0, 0, O_CHECK },               { "ub-rows", 0, TPU_CLI_VALUE, O_UB },
    { "acc-rows", 0, TPU_CLI_VALUE, O_ACC },  { "wmem-rows", 0, TPU_CLI_VALUE, O_WM },
    { "help", 'h', 0, O_HELP },               { NULL, 0, 0, 0 },
};

/* internal: the output path, before any work (tpu/cli.h): a file name in an existing
   directory, not the source (by device and inode: another spelling or a link of it). 0, or
   -1 with the one-line reason in err. */
static int check_output(const char *out, const char *in, char *err, size_t errlen)
{
    if (tpu_out_check("-o", out, err, errlen) != 0)
        return -1;
    return tpu_out_distinct("-o", out, "PROG.s", in, err, errlen);
}

/* internal: a program the IMEM cannot hold is refused here, where the count is known, not
   left to tpu-run: the PC and ERR_PC are 16 bits, so no IMEM gen builds holds more than
   TPU_LIM_IMEM_INSNS_MAX instructions. 0, or -1 with the one-line reason in err. */
static int check_imem(const char *in, size_t count, char *err, size_t errlen)
{
    if (count <= TPU_LIM_IMEM_INSNS_MAX)
        return 0;
    snprintf(err, errlen, "%s: %zu instructions, more than the largest IMEM holds (allowed: "
             "at most %u instructions, gen --imem-insns)", in, count, TPU_LIM_IMEM_INSNS_MAX);
    return -1;
}

int main(int argc, char **argv)
{
    uint64_t n = 0, ub = 0, acc = 0, wm = 0;
    int check = 0;
    const char *out = NULL, *in = NULL;
    char err[1024];
    tpu_cli_t cl;
    tpu_cli_init(&cl, argc, argv, opts);
    for (;;) {
        const char *name, *val;
        int id = tpu_cli_next(&cl, &name, &val, err, sizeof err), rc = 0;
        if (id == TPU_CLI_END)
            break;
        switch (id) {
        case TPU_CLI_ERROR: rc = -1; break;
        case TPU_CLI_POSITIONAL:
            if (in != NULL) {
                snprintf(err, sizeof err, "several input files ('%s', '%s'), expected one PROG.s",
                         in, val);
                rc = -1;
            }
            in = val;
            break;
        case O_MXU: rc = tpu_cli_count(name, val, 1, TPU_LIM_MXU_MAX, &n, err, sizeof err); break;
        case O_UB: rc = tpu_cli_count(name, val, 1, TPU_LIM_MEM_ROWS_MAX, &ub, err, sizeof err); break;
        case O_ACC: rc = tpu_cli_count(name, val, 1, TPU_LIM_MEM_ROWS_MAX, &acc, err, sizeof err); break;
        case O_WM: rc = tpu_cli_count(name, val, 1, TPU_LIM_MEM_ROWS_MAX, &wm, err, sizeof err); break;
        case O_CHECK: check = 1; break;
        case O_OUT: out = val; break;
        default: usage(stdout); return 0;
        }
        if (rc) {
            fprintf(stderr, "tpu-as: error: %s\n", err);
            return 2;
        }
    }
    if (in == NULL || out == NULL) {
        fprintf(stderr, "tpu-as: error: %s, expected one PROG.s and -o PROG.bin\n",
                in == NULL ? "no input file" : "no -o");
        return 2;
    }
    if (check && n == 0) {
        fprintf(stderr, "tpu-as: error: --check without --mxu, expected --mxu N\n");
        return 2;
    }
    if (check_output(out, in, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-as: error: %s\n", err);
        return 2;
    }
    char *src;
    size_t len;
    if (tpu_file_read(in, TPU_LIM_ASM_BYTES_MAX, "an assembly source", &src, &len, err,
                      sizeof err)) {
        fprintf(stderr, "tpu-as: error: %s\n", err);
        return 1;
    }
    tpu_insn_t *prog;
    size_t count;
    char *errs;
    int rc = tpu_asm_len(src, len, in, (unsigned)n, &prog, &count, &errs);
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
    if (check_imem(in, count, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-as: error: %s\n", err);
        free(prog);
        return 2;
    }
    if (check) {
        tpu_core_geom_t g = tpu_core_geom_default((unsigned)n);
        if (ub) g.ub_rows = (unsigned)ub;
        if (acc) g.acc_rows = (unsigned)acc;
        if (wm) g.wmem_rows = (unsigned)wm;
        /* follow the program as the core runs it (docs/isa.md "Loops"): every dynamic
           instruction is checked as dispatched, and each pc warned about once */
        int lw = 0;
        tpu_seq_t sq;
        tpu_seq_reset(&sq);
        unsigned char *warned = calloc(count ? count : 1, 1);
        if (warned == NULL) {
            fprintf(stderr, "tpu-as: error: out of memory\n");
            free(prog);
            return 2;
        }
        const uint64_t limit = 100000000u;
        uint64_t steps = 0;
        uint32_t pc = 0;
        while (pc < count && steps < limit) {
            tpu_dinsn_t d, raw_d;
            char text[160];
            size_t i = pc;
            steps++;
            tpu_insn_decode(prog[i], &raw_d);
            d = raw_d;
            tpu_seq_resolve(&sq, &d);
            int e = tpu_insn_check(&d, &g);
            if (e == 0 && d.opcode == TPU_OP_MATMUL && !lw)
                e = TPU_ERR_NO_LW;
            if (e == 0)
                e = tpu_seq_check(&sq, &d, pc, g.imem_insns);
            if (d.opcode == TPU_OP_LW)
                lw = 1;
            if (e) {
                if (!(warned[i] & 1)) {
                    tpu_insn_disasm(prog[i], text, sizeof text);
                    fprintf(stderr, "%s: warning: instruction %zu (%s): the core stops with "
                            "error %d (%s)%s\n", in, i, text, e, tpu_err_name(e),
                            raw_d.opcode != TPU_OP_LOOP && (raw_d.xsel[0] | raw_d.xsel[1] |
                            raw_d.xsel[2]) ? " in some iteration" : "");
                    warned[i] |= 1;
                }
                d.opcode = TPU_OP_NOP; /* go on as if it were a nop, to find more */
            } else if (d.opcode == TPU_OP_VOP) {
                /* docs/isa.md "vop": dst may equal a (or a b that is not broadcast) but must
                   not otherwise overlap them in the same memory: the result is undefined */
                unsigned nr = d.n;
                int pa = d.d_mem == d.a_mem && d.d_row != d.a_row && d.d_row < d.a_row + nr &&
                         d.a_row < d.d_row + nr;
                int pb = tpu_vop_is_binary(d.vop) && !d.bcast && d.d_mem == d.b_mem &&
                         d.d_row != d.b_row && d.d_row < d.b_row + nr && d.b_row < d.d_row + nr;
                if ((pa || pb) && !(warned[i] & 2)) {
                    tpu_insn_disasm(prog[i], text, sizeof text);
                    fprintf(stderr, "%s: warning: instruction %zu (%s): dst partly overlaps %s: "
                            "undefined (the RTL and the model may differ; docs/isa.md vop)\n",
                            in, i, text, pa ? "a" : "b");
                    warned[i] |= 2;
                }
            }
            if (d.opcode == TPU_OP_HALT)
                break;
            pc = tpu_seq_step(&sq, &d, pc);
        }
        if (steps >= limit)
            fprintf(stderr, "%s: warning: --check stopped after %llu dynamic instructions\n", in,
                    (unsigned long long)limit);
        free(warned);
    }
    uint8_t *bin = malloc(count * 16u + 1u);
    if (bin == NULL) {
        fprintf(stderr, "tpu-as: error: out of memory\n");
        free(prog);
        return 1;
    }
    for (size_t i = 0; i < count; i++)
        tpu_insn_to_bytes(prog[i], bin + 16u * i);
    free(prog);
    rc = tpu_file_write(out, bin, count * 16u, err, sizeof err);
    free(bin);
    if (rc) {
        fprintf(stderr, "tpu-as: error: %s\n", err);
        return 1;
    }
    return 0;
}
