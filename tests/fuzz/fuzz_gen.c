/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: gen's command line (gen/main.c, compiled in with its exit redirected): the input
   is split at NUL bytes into arguments. The generation and the writing are stubbed out (no
   RTL is built, nothing is written): what is fuzzed is the option scanner, the number
   grammar, the topology and memory-size checks and the recorded command line. Property: no
   fault, no leak (die() frees what main allocated: the first run of this harness grew to
   2 GB, 6 KB per usage error); every usage error goes through die() (exit status 2). */
#include <getopt.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tpu/cli.h"
#include "config.h"
#include "emit.h"
#include "outdir.h"
#include "strbuf.h"

static jmp_buf fuzz_jb;
static int fuzz_status;

static void fuzz_exit(int st)
{
    fuzz_status = st;
    longjmp(fuzz_jb, 1);
}

#define exit fuzz_exit
#define main gen_main
#include "../../gen/main.c"
#undef main
#undef exit

/* stubs: nothing is generated or written */
void gen_output_init(struct gen_output *out) { out->count = 0; }
void gen_output_free(struct gen_output *out) { out->count = 0; }
int gen_emit_all(struct gen_output *out, const struct gen_config *cfg)
{
    (void)out;
    (void)cfg;
    return 0;
}
int gen_output_write(const struct gen_output *out, const char *dir, const char *cdir,
                     struct strbuf *err)
{
    (void)out;
    (void)dir;
    (void)cdir;
    (void)err;
    return 0;
}
char *gen_relative_dir(const char *from, const char *to, struct strbuf *err)
{
    (void)from;
    (void)err;
    return strdup(strcmp(to, "same") == 0 ? "" : "../c/");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (freopen("/dev/null", "w", stdout) == NULL) /* --help, --version */
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char buf[4096];
    char *args[66];
    int n = 0;
    if (size >= sizeof buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    args[n++] = "gen";
    for (size_t i = 0; i <= size && n < 65;) {
        args[n++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    args[n] = NULL;
    fuzz_status = 0;
    int fd = dup(2); /* gen's one-line errors: silenced, the sanitizers' reports are not */
    if (fd < 0 || freopen("/dev/null", "w", stderr) == NULL)
        abort();
    if (setjmp(fuzz_jb) == 0)
        fuzz_status = gen_main(n, args);
    fflush(stderr);
    dup2(fd, 2);
    close(fd);
    if (fuzz_status != 0 && fuzz_status != 2) {
        fprintf(stderr, "gen exited %d, expected 0 or 2\n", fuzz_status);
        abort();
    }
    return 0;
}
