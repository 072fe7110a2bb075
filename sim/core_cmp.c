/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-core-cmp: compares two core traces, format 2 (docs/isa.md "Trace (core)": records keyed
   by the dynamic instruction seq) line by line and reports the first divergence: the dynamic
   instruction (seq, its pc, the loop indices at dispatch and the resolved disassembly, from
   the expected trace's retire line; with --prog also the instruction as written), the memory
   and row, the first differing element, expected (model) vs got (RTL), how many elements of
   the row differ; or a missing / extra line. A format 1 trace (keyed by pc) is refused.
   Within one instruction, writes to different rows may interleave differently (the RTL
   overlaps the passes of a vred or softmax over its logical rows): each instruction's run of
   writes is put in (memory, row) order first, keeping the order of writes to one row.

   Usage: tpu-core-cmp [--prog FILE] [--mxu N] EXPECTED ACTUAL
   Exit status: 0 identical, 1 different, 2 usage or I/O error (or a malformed trace). */

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/cli.h"
#include "tpu/host.h"
#include "tpu/isa.h"

#define MAX_ELEMS 1024 /* N <= 256 in gen; room to spare for malformed input */

enum { K_WRITE, K_RETIRE, K_ERROR };

typedef struct {
    int kind;
    unsigned long long seq; /* the dynamic instruction */
    unsigned long pc;       /* r and e only */
    char what[24];          /* w: ub | acc | wmem; r: the loop indices i0.i1.i2.i3.i4.i5; e: the code */
    char *text;             /* r only: the resolved instruction's disassembly, malloc'd */
    unsigned long row;      /* w only */
    unsigned nel;           /* w only */
    uint32_t *el;           /* w only, malloc'd */
    long lineno;            /* 1-based line in the file */
} rec_t;

typedef struct {
    const char *path;
    FILE *f;
    long lineno;
    char *buf;
    size_t cap;
} reader_t;

static const char *prog_name = "tpu-core-cmp"; /* tpu-board-cmp sets its own */

static int io_error(const char *path, long line, const char *what)
{
    if (line > 0)
        fprintf(stderr, "%s: error: %s:%ld: %s\n", prog_name, path, line, what);
    else
        fprintf(stderr, "%s: error: %s: %s\n", prog_name, path, what);
    return 2;
}

static int parse_ulong(const char *s, int base, unsigned long *v)
{
    char *end;
    if (s == NULL || *s == '\0' || *s == '-' || *s == '+' || *s == ' ')
        return 0;
    errno = 0;
    *v = strtoul(s, &end, base);
    return errno == 0 && *end == '\0';
}

static int parse_ull(const char *s, unsigned long long *v)
{
    char *end;
    if (s == NULL || *s < '0' || *s > '9')
        return 0;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return errno == 0 && *end == '\0';
}

/* The loop indices field: six decimals 0 .. 65535 joined by dots. */
static int iter_ok(const char *s)
{
    for (unsigned k = 0; k < 6; k++) {
        unsigned long v = 0;
        unsigned nd = 0;
        for (; *s >= '0' && *s <= '9' && nd < 6; s++, nd++)
            v = 10 * v + (unsigned long)(*s - '0');
        if (nd == 0 || v > 65535)
            return 0;
        if (k < 5 && *s++ != '.')
            return 0;
    }
    return *s == '\0';
}

/* Element width in hex digits of a memory name, 0 if unknown. */
static unsigned mem_digits(const char *m)
{
    if (strcmp(m, "ub") == 0 || strcmp(m, "wmem") == 0)
        return 4;
    if (strcmp(m, "acc") == 0)
        return 8;
    return 0;
}

/* Reads the next record into rec (rec->el must hold MAX_ELEMS). Returns 1 record, 0 end of
   file, 2 error (printed). */
static int next_record(reader_t *r, rec_t *rec)
{
    for (;;) {
        long len = tpu_file_getline(&r->buf, &r->cap, r->f, TPU_LIM_LINE_BYTES_MAX);
        if (len == -2)
            return io_error(r->path, r->lineno + 1, "line longer than 1 MiB, expected a record");
        if (len < 0) {
            if (ferror(r->f))
                return io_error(r->path, 0, strerror(errno));
            if (r->lineno == 0)
                return io_error(r->path, 0, "empty file (not a core trace)");
            return 0;
        }
        r->lineno++;
        while (len > 0 && (r->buf[len - 1] == '\n' || r->buf[len - 1] == '\r'))
            r->buf[--len] = '\0';
        if (r->lineno == 1 && strcmp(r->buf, "# tpu-core-trace 1") == 0)
            return io_error(r->path, 1, "a format 1 core trace (keyed by pc, before loops); "
                                        "this tool reads format 3 ('# tpu-core-trace 3'): "
                                        "write it again with the current tools");
        if (r->lineno == 1 && strcmp(r->buf, "# tpu-core-trace 2") == 0)
            return io_error(r->path, 1, "a format 2 core trace (four loop levels); "
                                        "this tool reads format 3 ('# tpu-core-trace 3'): "
                                        "write it again with the current tools");
        if (r->lineno == 1 && strcmp(r->buf, "# tpu-core-trace 3") != 0)
            return io_error(r->path, 1, "not a core trace: the first line must be "
                                        "'# tpu-core-trace 3'");
        if (len == 0 || r->buf[0] == '#')
            continue;
        /* an r line's disassembly is the rest of the line after its fourth field */
        const char *rest = NULL;
        if (r->buf[0] == 'r' && r->buf[1] == ' ') {
            const char *q = r->buf;
            for (unsigned f = 0; f < 4 && q != NULL; f++) {
                q = strchr(q, ' ');
                if (q != NULL)
                    q++;
            }
            rest = q;
        }
        free(rec->text);
        rec->text = NULL;
        if (rest != NULL && *rest != '\0' && *rest != ' ') {
            rec->text = strdup(rest);
            if (rec->text == NULL)
                return io_error(r->path, r->lineno, "out of memory");
        }
        char *save = NULL;
        static char *tok[4 + MAX_ELEMS];
        unsigned nt = 0;
        for (char *t = strtok_r(r->buf, " \t", &save); t != NULL;
             t = strtok_r(NULL, " \t", &save)) {
            if (nt == sizeof tok / sizeof tok[0])
                return io_error(r->path, r->lineno, "too many fields (more than 1024 elements)");
            tok[nt++] = t;
        }
        rec->lineno = r->lineno;
        rec->pc = 0;
        if (!parse_ull(nt > 1 ? tok[1] : NULL, &rec->seq))
            return io_error(r->path, r->lineno, "expected 'w|r|e <seq> ...' with a decimal seq");
        if (strcmp(tok[0], "r") == 0) {
            if (nt < 5 || !parse_ulong(tok[2], 10, &rec->pc) || strlen(tok[3]) >= sizeof rec->what ||
                !iter_ok(tok[3]) || rec->text == NULL)
                return io_error(r->path, r->lineno,
                                "expected 'r <seq> <pc> <i0>.<i1>.<i2>.<i3>.<i4>.<i5> <instruction>'");
            rec->kind = K_RETIRE;
            strcpy(rec->what, tok[3]);
            rec->nel = 0;
            return 1;
        }
        if (strcmp(tok[0], "e") == 0) {
            unsigned long code;
            if (nt != 4 || !parse_ulong(tok[2], 10, &rec->pc) || strlen(tok[3]) >= sizeof rec->what ||
                !parse_ulong(tok[3], 10, &code))
                return io_error(r->path, r->lineno,
                                "expected 'e <seq> <pc> <code>' with decimal pc and code");
            rec->kind = K_ERROR;
            strcpy(rec->what, tok[3]);
            rec->nel = 0;
            return 1;
        }
        if (strcmp(tok[0], "w") != 0)
            return io_error(r->path, r->lineno, "unknown record (expected w, r or e)");
        if (nt < 5 || mem_digits(tok[2]) == 0 || !parse_ulong(tok[3], 10, &rec->row))
            return io_error(r->path, r->lineno,
                            "expected 'w <seq> ub|acc|wmem <row> <element>...'");
        rec->kind = K_WRITE;
        strcpy(rec->what, tok[2]);
        const unsigned dig = mem_digits(tok[2]);
        rec->nel = 0;
        for (unsigned i = 4; i < nt; i++) {
            unsigned long v;
            if (strlen(tok[i]) != dig || !parse_ulong(tok[i], 16, &v)) {
                char msg[96];
                snprintf(msg, sizeof msg, "element %u is not %u hex digits: '%.16s'", i - 4,
                         dig, tok[i]);
                return io_error(r->path, r->lineno, msg);
            }
            rec->el[rec->nel++] = (uint32_t)v;
        }
        return 1;
    }
}

typedef struct {
    rec_t *r;
    size_t n, cap;
} trace_t;

static void trace_free(trace_t *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->r[i].el);
        free(t->r[i].text);
    }
    free(t->r);
}

/* Reads a whole trace. Returns 0 or 2 (error printed). */
static int trace_read(const char *path, trace_t *t)
{
    reader_t rd = { path, fopen(path, "r"), 0, NULL, 0 };
    if (rd.f == NULL)
        return io_error(path, 0, strerror(errno));
    static uint32_t el[MAX_ELEMS];
    rec_t rec;
    memset(&rec, 0, sizeof rec);
    rec.el = el;
    int st;
    while ((st = next_record(&rd, &rec)) == 1) {
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 1024;
            rec_t *nr = realloc(t->r, t->cap * sizeof *nr);
            if (nr == NULL) {
                st = io_error(path, rd.lineno, "out of memory");
                break;
            }
            t->r = nr;
        }
        rec_t *d = &t->r[t->n];
        *d = rec;
        rec.text = NULL; /* now d's */
        d->el = malloc((rec.nel ? rec.nel : 1) * sizeof *d->el);
        if (d->el == NULL) {
            free(d->text);
            st = io_error(path, rd.lineno, "out of memory");
            break;
        }
        memcpy(d->el, el, rec.nel * sizeof *el);
        t->n++;
    }
    free(rec.text);
    free(rd.buf);
    fclose(rd.f);
    return st == 0 ? 0 : 2;
}

static int mem_rank(const char *m)
{
    return strcmp(m, "ub") == 0 ? 0 : strcmp(m, "acc") == 0 ? 1 : 2;
}

static int write_before(const rec_t *a, const rec_t *b)
{
    const int ma = mem_rank(a->what), mb = mem_rank(b->what);
    return ma < mb || (ma == mb && a->row < b->row);
}

/* Puts each instruction's run of writes in (memory, row) order, stably (insertion sort:
   the runs are nearly sorted already). */
static void canonicalise(trace_t *t)
{
    size_t i = 0;
    while (i < t->n) {
        size_t j = i;
        while (j < t->n && t->r[j].kind == K_WRITE && t->r[j].seq == t->r[i].seq)
            j++;
        for (size_t k = i + 1; k < j; k++) {
            rec_t x = t->r[k];
            size_t m = k;
            while (m > i && write_before(&x, &t->r[m - 1])) {
                t->r[m] = t->r[m - 1];
                m--;
            }
            t->r[m] = x;
        }
        i = j > i ? j : i + 1;
    }
}

static void print_rec(const char *label, const rec_t *r)
{
    if (r->kind == K_WRITE)
        printf("  %s line %ld: w %llu %s %lu (%u elements)\n", label, r->lineno, r->seq, r->what,
               r->row, r->nel);
    else if (r->kind == K_RETIRE)
        printf("  %s line %ld: r %llu %lu %s %s\n", label, r->lineno, r->seq, r->pc, r->what,
               r->text);
    else
        printf("  %s line %ld: e %llu %lu %s\n", label, r->lineno, r->seq, r->pc, r->what);
}

/* The dynamic instruction seq as text, from the trace t (the expected one; records are
   grouped by seq in ascending order, its retire line after its writes; near is the index of
   one of its records): "pc P, loop I0.I1.I2.I3: <resolved disassembly>" from its retire line,
   or "pc P, not dispatched: error C" from an error line, else "not dispatched"; with a program,
   also the instruction as written at that pc. */
static void insn_text(unsigned long long seq, size_t near, const tpu_insn_t *prog, size_t count,
                      const trace_t *t, char *out, size_t len)
{
    const rec_t *x = NULL;
    for (size_t i = near < t->n ? near : t->n; i < t->n && t->r[i].seq == seq; i++)
        if (t->r[i].kind != K_WRITE) {
            x = &t->r[i];
            break;
        }
    if (x == NULL)
        for (size_t i = 0; i < t->n && x == NULL; i++)
            if (t->r[i].kind != K_WRITE && t->r[i].seq == seq)
                x = &t->r[i];
    if (x == NULL) {
        snprintf(out, len, "not dispatched");
        return;
    }
    char as[160] = "";
    if (prog != NULL && x->pc < count) {
        char d[128];
        tpu_insn_disasm(prog[x->pc], d, sizeof d);
        snprintf(as, sizeof as, "; as written: %s", d);
    }
    if (x->kind == K_RETIRE)
        snprintf(out, len, "pc %lu, loop %s: %s%s", x->pc, x->what, x->text, as);
    else
        snprintf(out, len, "pc %lu, not dispatched: error %s%s", x->pc, x->what, as);
}

static const char *kind_name(int k)
{
    return k == K_WRITE ? "a memory write" : k == K_RETIRE ? "a retire" : "an error halt";
}

#ifndef TPU_CORE_CMP_NO_MAIN /* tpu-board-cmp has its own */
static int usage(const char *msg, const char *arg)
{
    if (msg != NULL)
        fprintf(stderr, "%s: error: %s%s%s (try --help)\n", prog_name, msg, arg ? ": " : "",
                arg ? arg : "");
    else
        printf("usage: %s [--prog FILE.s|FILE.bin] [--mxu N] EXPECTED ACTUAL\n"
               "Compares two core traces (docs/isa.md \"Trace (core)\"); EXPECTED is the "
               "model's, ACTUAL the RTL's.\n"
               "  --prog FILE   the program, to print the instruction as written beside the\n"
               "                resolved one of the trace\n"
               "  --mxu N       N for assembling a .s program\n"
               "Exit status: 0 identical, 1 different, 2 usage, I/O or format error.\n",
               prog_name);
    return 2;
}
#endif

/* Reports the first divergence at index i (both traces have a record there). */
static void report(size_t i, const rec_t *re, const rec_t *rg, const char *text)
{
    printf("%s: first divergence at record %zu, dynamic instruction %llu (%s):\n", prog_name,
           i + 1, re->seq, text);
    const int same_key = re->kind == rg->kind && re->seq == rg->seq && re->pc == rg->pc &&
                         strcmp(re->what, rg->what) == 0 &&
                         (re->kind != K_RETIRE || strcmp(re->text, rg->text) == 0) &&
                         (re->kind != K_WRITE || re->row == rg->row);
    if (!same_key) {
        print_rec("expected", re);
        print_rec("got     ", rg);
        if (re->kind != rg->kind)
            printf("  expected %s, got %s\n", kind_name(re->kind), kind_name(rg->kind));
        else if (re->seq != rg->seq)
            printf("  a record of dynamic instruction %llu where one of %llu was expected\n",
                   rg->seq, re->seq);
        else if (re->pc != rg->pc)
            printf("  pc %lu, expected %lu\n", rg->pc, re->pc);
        else if (re->kind == K_WRITE)
            printf("  a write to %s row %lu where one to %s row %lu was expected\n", rg->what,
                   rg->row, re->what, re->row);
        else if (re->kind == K_ERROR)
            printf("  error code %s, expected %s\n", rg->what, re->what);
        else if (strcmp(re->what, rg->what) != 0)
            printf("  loop indices %s, expected %s\n", rg->what, re->what);
        else
            printf("  instruction '%s', expected '%s'\n", rg->text, re->text);
        return;
    }
    if (re->nel != rg->nel) {
        printf("  %s row %lu (expected line %ld, got line %ld): %u elements, expected %u\n",
               re->what, re->row, re->lineno, rg->lineno, rg->nel, re->nel);
        return;
    }
    unsigned firstel = 0, ndiff = 0;
    for (unsigned k = re->nel; k-- > 0;) {
        if (re->el[k] != rg->el[k]) {
            firstel = k;
            ndiff++;
        }
    }
    const int dig = (int)mem_digits(re->what);
    printf("  %s row %lu (expected line %ld, got line %ld): element %u\n"
           "    expected %0*" PRIx32 " (model)\n"
           "    got      %0*" PRIx32 " (RTL)\n"
           "  %u of %u elements of the row differ\n",
           re->what, re->row, re->lineno, rg->lineno, firstel, dig, re->el[firstel], dig,
           rg->el[firstel], ndiff, re->nel);
}

static int same_rec(const rec_t *a, const rec_t *b)
{
    return a->kind == b->kind && a->seq == b->seq && a->pc == b->pc &&
           strcmp(a->what, b->what) == 0 &&
           (a->kind != K_RETIRE || strcmp(a->text, b->text) == 0) &&
           (a->kind != K_WRITE ||
            (a->row == b->row && a->nel == b->nel &&
             memcmp(a->el, b->el, a->nel * sizeof a->el[0]) == 0));
}

/* Compares the traces at exp_path (the model's) and got_path (the RTL's), printing the first
   divergence (the instruction's disassembly from prog when given) and a PASS/FAIL line.
   Returns 0 identical, 1 different, 2 I/O or format error (printed). Also used by
   tpu-board-cmp (sim/board_cmp.c), once per core. */
static int core_trace_compare(const char *exp_path, const char *got_path,
                              const tpu_insn_t *prog, size_t count)
{
    const char *paths[2] = { exp_path, got_path };
    trace_t te = { 0 }, tg = { 0 };
    int status = trace_read(paths[0], &te);
    if (status == 0)
        status = trace_read(paths[1], &tg);
    if (status == 0 && te.n == 0 && tg.n == 0) /* header only: the runs recorded nothing */
        status = io_error(paths[0], 0, "no records in either trace (header only), expected the "
                                       "records of a run");
    if (status == 0) {
        canonicalise(&te);
        canonicalise(&tg);
        const size_t n = te.n < tg.n ? te.n : tg.n;
        size_t differ = 0, first = SIZE_MAX;
        for (size_t i = 0; i < n; i++) {
            if (!same_rec(&te.r[i], &tg.r[i])) {
                differ++;
                if (first == SIZE_MAX)
                    first = i;
            }
        }
        char text[512];
        if (first != SIZE_MAX) {
            insn_text(te.r[first].seq, first, prog, count, &te, text, sizeof text);
            report(first, &te.r[first], &tg.r[first], text);
        } else if (te.n != tg.n) {
            const int got_short = tg.n < te.n;
            const rec_t *x = got_short ? &te.r[n] : &tg.r[n];
            insn_text(x->seq, got_short ? n : 0, prog, count, got_short ? &te : &tg, text,
                      sizeof text);
            printf("%s: the %s trace ends after record %zu; the %s trace goes on with %s of "
                   "dynamic instruction %llu (%s):\n",
                   prog_name, got_short ? "ACTUAL (RTL)" : "EXPECTED (model)", n,
                   got_short ? "expected" : "actual", kind_name(x->kind), x->seq, text);
            print_rec(got_short ? "missing, expected" : "extra, got", x);
        }
        differ += te.n > tg.n ? te.n - tg.n : tg.n - te.n;
        if (differ == 0) {
            printf("%s: PASS: %zu records identical\n", prog_name, n);
        } else {
            printf("%s: FAIL: %zu of %zu records differ (%s vs %s)\n", prog_name, differ,
                   te.n > tg.n ? te.n : tg.n, paths[0], paths[1]);
            status = 1;
        }
    }
    trace_free(&te);
    trace_free(&tg);
    return status;
}

#ifndef TPU_CORE_CMP_NO_MAIN
int main(int argc, char **argv)
{
    const char *prog_path = NULL, *paths[2] = { NULL, NULL };
    unsigned long n_mxu = 0;
    unsigned npaths = 0;
    static const tpu_cli_opt_t opts[] = {
        { "help", 'h', 0, 'h' }, { "prog", 0, TPU_CLI_VALUE, 'p' },
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
            return usage(err, NULL);
        if (id == 'h') {
            usage(NULL, NULL);
            return 0;
        }
        if (id == 'p') {
            prog_path = val;
        } else if (id == 'n') {
            if (tpu_cli_count(name, val, 1, TPU_LIM_MXU_MAX, &x, err, sizeof err))
                return usage(err, NULL);
            n_mxu = (unsigned long)x;
        } else if (npaths < 2) {
            paths[npaths++] = val;
        } else {
            return usage("more than two traces given", val);
        }
    }
    if (npaths != 2)
        return usage("need two traces, EXPECTED and ACTUAL", NULL);

    tpu_insn_t *prog = NULL;
    size_t count = 0;
    if (prog_path != NULL) {
        char err[512];
        if (tpu_load_program(prog_path, (unsigned)n_mxu, &prog, &count, err, sizeof err) != 0) {
            fprintf(stderr, "%s: error: %s\n", prog_name, err);
            return 2;
        }
    }
    const int status = core_trace_compare(paths[0], paths[1], prog, count);
    free(prog);
    return status;
}
#endif
