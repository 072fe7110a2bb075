/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-board-cmp: compares the outputs of two runs of a board job (docs/board.md "Board jobs,
   tools and co-simulation"): for every core i, MODEL_OUT/core<i>.trace against
   RTL_OUT/core<i>.trace with tpu-core-cmp's comparison (sim/core_cmp.c: the first divergence,
   its instruction, memory, row, element, expected vs got), and every dump in
   MODEL_OUT/core<i>/ against the file of the same name in RTL_OUT/core<i>/, byte for byte
   (the first differing byte is named). The cores are those with a trace in MODEL_OUT
   (core0.trace, core1.trace, ... up to the first missing one); RTL_OUT must have the same.

   Usage: tpu-board-cmp [--job DIR --mxu N] MODEL_OUT RTL_OUT
     --job DIR --mxu N   the job (DIR/core<i>.args): disassemble the diverging instruction
   Exit status: 0 identical, 1 different, 2 usage or I/O error. */

#define TPU_CORE_CMP_NO_MAIN
#include "core_cmp.c"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CORES 64u

static int board_usage(const char *msg, const char *arg)
{
    if (msg != NULL) {
        fprintf(stderr, "tpu-board-cmp: error: %s%s%s (try --help)\n", msg, arg ? ": " : "",
                arg ? arg : "");
    } else {
        printf("usage: tpu-board-cmp [--job DIR --mxu N] MODEL_OUT RTL_OUT\n"
               "Compares every core's trace (core<i>.trace) and dumps (core<i>/*.npy) of two\n"
               "board runs, the model's and the RTL's (docs/board.md).\n"
               "  --job DIR --mxu N   the board job, to disassemble the diverging instruction\n"
               "Exit status: 0 identical, 1 different, 2 usage, I/O or format error.\n");
    }
    return 2;
}

/* Reads a whole file; NULL on error (errno set). */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            unsigned char *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    *len = n;
    return buf;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Compares the dumps of core i: every file of MODEL_OUT/core<i>/ against RTL_OUT/core<i>/,
   and no extra file in RTL_OUT/core<i>/. 0 same, 1 different, 2 I/O error. */
static int compare_dumps(const char *mdir, const char *rdir, unsigned core, unsigned *ndumps)
{
    char md[4096], rd[4096];
    snprintf(md, sizeof md, "%s/core%u", mdir, core);
    snprintf(rd, sizeof rd, "%s/core%u", rdir, core);
    int status = 0;
    for (int side = 0; side < 2; side++) {
        const char *dir = side == 0 ? md : rd, *other = side == 0 ? rd : md;
        DIR *d = opendir(dir);
        if (d == NULL) {
            if (errno == ENOENT && side == 0)
                return 0; /* no dumps in the model's output: nothing to compare */
            fprintf(stderr, "tpu-board-cmp: error: %s: %s\n", dir, strerror(errno));
            return 2;
        }
        char *names[1024];
        size_t nn = 0;
        for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
            if (e->d_name[0] == '.' || nn == sizeof names / sizeof names[0])
                continue;
            names[nn] = strdup(e->d_name);
            if (names[nn] != NULL)
                nn++;
        }
        closedir(d);
        qsort(names, nn, sizeof names[0], name_cmp);
        for (size_t k = 0; k < nn; k++) {
            char a[8192], b[8192];
            snprintf(a, sizeof a, "%s/%s", dir, names[k]);
            snprintf(b, sizeof b, "%s/%s", other, names[k]);
            if (side == 1) { /* only look for files the model did not write */
                if (access(b, F_OK) != 0) {
                    printf("tpu-board-cmp: core %u: extra dump %s (the model wrote no %s)\n",
                           core, a, names[k]);
                    status = status ? status : 1;
                }
                free(names[k]);
                continue;
            }
            size_t la = 0, lb = 0;
            unsigned char *da = slurp(a, &la);
            if (da == NULL) {
                fprintf(stderr, "tpu-board-cmp: error: %s: %s\n", a, strerror(errno));
                status = 2;
                free(names[k]);
                continue;
            }
            unsigned char *db = slurp(b, &lb);
            if (db == NULL) {
                printf("tpu-board-cmp: core %u: dump %s missing (%s)\n", core, b,
                       strerror(errno));
                status = status ? status : 1;
            } else {
                size_t i = 0;
                while (i < la && i < lb && da[i] == db[i])
                    i++;
                if (i < la || i < lb) {
                    if (i < la && i < lb)
                        printf("tpu-board-cmp: core %u: dump %s differs at byte %zu: expected "
                               "0x%02x (model), got 0x%02x (RTL)\n",
                               core, names[k], i, da[i], db[i]);
                    else
                        printf("tpu-board-cmp: core %u: dump %s: %zu bytes, expected %zu\n",
                               core, names[k], lb, la);
                    status = status ? status : 1;
                } else {
                    (*ndumps)++;
                }
            }
            free(da);
            free(db);
            free(names[k]);
        }
    }
    return status;
}

/* The program of core i from DIR/core<i>.args (its --prog), for the disassembly: 0, or -1
   with the reason printed (a --job that cannot be read is an error, never ignored). */
static int load_core_prog(const char *job, unsigned core, unsigned n, tpu_insn_t **prog,
                          size_t *count)
{
    int rc = 0;
    char at[4096], err[1024];
    snprintf(at, sizeof at, "@%s/core%u.args", job, core);
    char *argv0[2] = { (char *)"tpu-board-cmp", at };
    int xargc = 0;
    char **xargv = NULL;
    *prog = NULL;
    *count = 0;
    if (tpu_args_expand(2, argv0, &xargc, &xargv, err, sizeof err) != 0) {
        fprintf(stderr, "tpu-board-cmp: error: --job '%s': core %u: %s\n", job, core, err);
        return -1;
    }
    for (int k = 1; k < xargc; k++) {
        const char *p = NULL;
        if (strcmp(xargv[k], "--prog") == 0 && k + 1 < xargc)
            p = xargv[k + 1];
        else if (strncmp(xargv[k], "--prog=", 7) == 0)
            p = xargv[k] + 7;
        if (p != NULL && tpu_load_program(p, n, prog, count, err, sizeof err) != 0) {
            fprintf(stderr, "tpu-board-cmp: error: --job '%s': core %u: %s\n", job, core, err);
            rc = -1;
        }
        if (p != NULL)
            break;
    }
    tpu_args_free(xargc, xargv);
    return rc;
}

int main(int argc, char **argv)
{
    const char *job = NULL, *dirs[2] = { NULL, NULL };
    unsigned long n_mxu = 0;
    unsigned ndirs = 0;
    prog_name = "tpu-board-cmp";
    static const tpu_cli_opt_t opts[] = {
        { "help", 'h', 0, 'h' }, { "job", 0, TPU_CLI_VALUE, 'j' },
        { "mxu", 0, TPU_CLI_VALUE, 'n' }, { NULL, 0, 0, 0 },
    };
    tpu_cli_t cl;
    tpu_cli_init(&cl, argc, argv, opts);
    for (;;) { /* the tools' one grammar (tpu/cli.h) */
        const char *name, *val;
        char err[1024];
        uint64_t x;
        int id = tpu_cli_next(&cl, &name, &val, err, sizeof err);
        if (id == TPU_CLI_END)
            break;
        if (id == TPU_CLI_ERROR)
            return board_usage(err, NULL);
        if (id == 'h') {
            board_usage(NULL, NULL);
            return 0;
        }
        if (id == 'j') {
            job = val;
        } else if (id == 'n') {
            if (tpu_cli_count(name, val, 1, TPU_LIM_MXU_MAX, &x, err, sizeof err))
                return board_usage(err, NULL);
            n_mxu = (unsigned long)x;
        } else if (ndirs < 2) {
            dirs[ndirs++] = val;
        } else {
            return board_usage("more than two output folders given", val);
        }
    }
    if (ndirs != 2)
        return board_usage("need two output folders, MODEL_OUT and RTL_OUT", NULL);
    if (job != NULL && n_mxu == 0)
        return board_usage("--job needs --mxu N (to assemble the programs)", job);

    if (job != NULL) {
        char p[4096];
        struct stat st;
        snprintf(p, sizeof p, "%s/core0.args", job);
        if (stat(job, &st) != 0 || !S_ISDIR(st.st_mode) || access(p, R_OK) != 0) {
            fprintf(stderr, "tpu-board-cmp: error: --job '%s': %s, expected a board job folder "
                    "(core<i>.args)\n", job,
                    stat(job, &st) != 0 ? strerror(errno)
                    : !S_ISDIR(st.st_mode) ? "not a directory" : "no core0.args in it");
            return 2;
        }
    }
    unsigned cores = 0;
    for (; cores < MAX_CORES; cores++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/core%u.trace", dirs[0], cores);
        if (access(p, R_OK) != 0)
            break;
    }
    if (cores == 0) {
        fprintf(stderr, "tpu-board-cmp: error: %s: no core0.trace (not a board run's output)\n",
                dirs[0]);
        return 2;
    }
    {
        char p[4096];
        snprintf(p, sizeof p, "%s/core%u.trace", dirs[1], cores);
        if (cores < MAX_CORES && access(p, F_OK) == 0) {
            printf("tpu-board-cmp: %s has %s: more cores than %s (%u)\n", dirs[1], p, dirs[0],
                   cores);
            return 1;
        }
    }
    int status = 0;
    unsigned bad = 0, ndumps = 0;
    for (unsigned c = 0; c < cores; c++) {
        char te[4096], tg[4096];
        snprintf(te, sizeof te, "%s/core%u.trace", dirs[0], c);
        snprintf(tg, sizeof tg, "%s/core%u.trace", dirs[1], c);
        tpu_insn_t *prog = NULL;
        size_t count = 0;
        if (job != NULL && load_core_prog(job, c, (unsigned)n_mxu, &prog, &count) != 0)
            return 2;
        printf("tpu-board-cmp: core %u:\n", c);
        fflush(stdout);
        int st = access(tg, R_OK) != 0 ? (printf("tpu-board-cmp: core %u: %s missing\n", c, tg), 1)
                                        : core_trace_compare(te, tg, prog, count);
        free(prog);
        const int sd = compare_dumps(dirs[0], dirs[1], c, &ndumps);
        if (sd > st)
            st = sd;
        if (st != 0)
            bad++;
        if (st > status)
            status = st;
    }
    if (status == 0)
        printf("tpu-board-cmp: PASS: %u cores, traces identical, %u dumps identical\n", cores,
               ndumps);
    else
        printf("tpu-board-cmp: FAIL: %u of %u cores differ (%s vs %s)\n", bad, cores, dirs[0],
               dirs[1]);
    return status;
}
