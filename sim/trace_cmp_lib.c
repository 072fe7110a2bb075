/* SPDX-License-Identifier: Apache-2.0 */
/* Trace comparison (docs/trace.md): records compared in file order; the first whose key or
   values differ is the first divergence; a cycle difference alone is a timing divergence. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tpu/cli.h" /* tpu_file_getline: one bounded line reader for every tool */
#include "trace_cmp.h"

/* Units and the names of their key fields (after "<cycle> <unit>"). Add a unit here. */
typedef struct {
    const char *name;
    unsigned nkeys;
    const char *const *keys;
} tpu_i_unit_t;

static const char *const tpu_i_mxu_keys[] = { "tile", "kt", "nt", "row" };
static const tpu_i_unit_t tpu_i_units[] = {
    { "mxu", 4, tpu_i_mxu_keys },
};

/* A parsed record. */
typedef struct {
    long line;
    uint64_t cycle;
    const tpu_i_unit_t *unit;
    uint64_t key[TPU_TRACE_CMP_MAX_KEYS];
    uint32_t *v;
    unsigned nv, cap;
} tpu_i_rec_t;

/* A trace being read. */
typedef struct {
    const char *path;
    FILE *f;
    char *buf;
    size_t bufcap;
    long line;
    uint64_t records;
} tpu_i_reader_t;

/* internal: the longest line read (a record of N <= 256 values is ~2.4 KB); every read is
   bounded, so a file without newlines (/dev/zero) cannot exhaust memory */
static void tpu_i_error(tpu_trace_cmp_result_t *r, const char *path, long line,
                        const char *why)
{
    r->status = TPU_TRACE_CMP_ERROR;
    if (line > 0)
        snprintf(r->error, sizeof r->error, "%s:%ld: %s", path, line, why);
    else
        snprintf(r->error, sizeof r->error, "%s: %s", path, why);
}

/* internal: decimal field */
static int tpu_i_dec(const char *s, uint64_t *out)
{
    if (*s == '\0')
        return 0;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 1;
}

/* internal: exactly 8 hex digits (either case is read, lowercase is written) */
static int tpu_i_hex8(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    int n = 0;
    for (; *s; s++, n++) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            d = *s - 'A' + 10;
        else
            return 0;
        v = (v << 4) | (uint32_t)d;
    }
    if (n != 8)
        return 0;
    *out = v;
    return 1;
}

/* internal: opens a trace and checks its first line */
static int tpu_i_open(tpu_i_reader_t *rd, const char *path, tpu_trace_cmp_result_t *r)
{
    memset(rd, 0, sizeof *rd);
    rd->path = path;
    rd->f = fopen(path, "r");
    if (rd->f == NULL) {
        char why[256];
        snprintf(why, sizeof why, "cannot open: %s", strerror(errno));
        tpu_i_error(r, path, 0, why);
        return 0;
    }
    long len = tpu_file_getline(&rd->buf, &rd->bufcap, rd->f, TPU_LIM_LINE_BYTES_MAX);
    rd->line = 1;
    if (len == -2) {
        tpu_i_error(r, path, 1, "line longer than 1 MiB, expected \"# tpu-trace 1\"");
        return 0;
    }
    if (len < 0) {
        tpu_i_error(r, path, 0, "empty file (no \"# tpu-trace 1\" line)");
        return 0;
    }
    while (len > 0 && (rd->buf[len - 1] == '\n' || rd->buf[len - 1] == '\r'))
        rd->buf[--len] = '\0';
    if (strncmp(rd->buf, "# tpu-trace ", 12) != 0) {
        tpu_i_error(r, path, 1, "not a trace: the first line must be \"# tpu-trace 1\"");
        return 0;
    }
    if (strcmp(rd->buf + 12, "1") != 0) {
        tpu_i_error(r, path, 1, "unsupported trace version (this tool reads version 1)");
        return 0;
    }
    return 1;
}

/* internal: reads the next record. 1: got one, 0: end of file, -1: error (r filled). */
static int tpu_i_next(tpu_i_reader_t *rd, tpu_i_rec_t *rec, tpu_trace_cmp_result_t *r)
{
    for (;;) {
        long len = tpu_file_getline(&rd->buf, &rd->bufcap, rd->f, TPU_LIM_LINE_BYTES_MAX);
        if (len == -2) {
            tpu_i_error(r, rd->path, rd->line + 1, "line longer than 1 MiB, expected a record");
            return -1;
        }
        if (len < 0) {
            if (ferror(rd->f)) {
                tpu_i_error(r, rd->path, rd->line, "read error");
                return -1;
            }
            return 0;
        }
        rd->line++;
        while (len > 0 && (rd->buf[len - 1] == '\n' || rd->buf[len - 1] == '\r'))
            rd->buf[--len] = '\0';
        if (len == 0 || rd->buf[0] == '#')
            continue;
        rec->line = rd->line;
        rec->nv = 0;
        char *save = NULL;
        char *tok = strtok_r(rd->buf, " ", &save);
        if (tok == NULL || !tpu_i_dec(tok, &rec->cycle)) {
            tpu_i_error(r, rd->path, rd->line, "malformed record: the cycle is not a decimal");
            return -1;
        }
        tok = strtok_r(NULL, " ", &save);
        rec->unit = NULL;
        for (size_t u = 0; tok && u < sizeof tpu_i_units / sizeof tpu_i_units[0]; u++)
            if (strcmp(tok, tpu_i_units[u].name) == 0)
                rec->unit = &tpu_i_units[u];
        if (rec->unit == NULL) {
            tpu_i_error(r, rd->path, rd->line, "malformed record: unknown unit");
            return -1;
        }
        for (unsigned i = 0; i < rec->unit->nkeys; i++) {
            tok = strtok_r(NULL, " ", &save);
            if (tok == NULL || !tpu_i_dec(tok, &rec->key[i])) {
                char why[128];
                snprintf(why, sizeof why, "malformed record: field '%s' is not a decimal",
                         rec->unit->keys[i]);
                tpu_i_error(r, rd->path, rd->line, why);
                return -1;
            }
        }
        while ((tok = strtok_r(NULL, " ", &save)) != NULL) {
            if (rec->nv == rec->cap) {
                unsigned cap = rec->cap ? rec->cap * 2 : 64;
                uint32_t *nv = realloc(rec->v, cap * sizeof *nv);
                if (nv == NULL) {
                    tpu_i_error(r, rd->path, rd->line, "out of memory");
                    return -1;
                }
                rec->v = nv;
                rec->cap = cap;
            }
            if (!tpu_i_hex8(tok, &rec->v[rec->nv])) {
                tpu_i_error(r, rd->path, rd->line,
                            "malformed record: a value is not 8 hex digits");
                return -1;
            }
            rec->nv++;
        }
        if (rec->nv == 0) {
            tpu_i_error(r, rd->path, rd->line, "malformed record: no values");
            return -1;
        }
        rd->records++;
        return 1;
    }
}

static int tpu_i_same_key(const tpu_i_rec_t *a, const tpu_i_rec_t *b)
{
    if (a->unit != b->unit)
        return 0;
    for (unsigned i = 0; i < a->unit->nkeys; i++)
        if (a->key[i] != b->key[i])
            return 0;
    return 1;
}

/* internal: records the first divergence */
static void tpu_i_first(tpu_trace_cmp_result_t *r, int kind, const tpu_i_rec_t *e,
                        const tpu_i_rec_t *g, uint64_t index)
{
    r->kind = kind;
    r->record = index;
    const tpu_i_rec_t *k = e != NULL ? e : g;
    r->line_exp = e != NULL ? e->line : 0;
    r->line_got = g != NULL ? g->line : 0;
    snprintf(r->unit, sizeof r->unit, "%s", k->unit->name);
    r->nkeys = k->unit->nkeys;
    r->key_names = k->unit->keys;
    if (e != NULL) {
        memcpy(r->key_exp, e->key, sizeof r->key_exp);
        r->cycle_exp = e->cycle;
        r->width_exp = e->nv;
    }
    if (g != NULL) {
        memcpy(r->key_got, g->key, sizeof r->key_got);
        r->cycle_got = g->cycle;
        r->width_got = g->nv;
        snprintf(r->unit_got, sizeof r->unit_got, "%s", g->unit->name);
    }
}

int tpu_trace_cmp(const char *expected, const char *got, int ignore_cycles,
                  tpu_trace_cmp_result_t *r)
{
    memset(r, 0, sizeof *r);
    r->exp_path = expected;
    r->got_path = got;
    r->ignore_cycles = ignore_cycles;
    tpu_i_reader_t re, rg;
    tpu_i_rec_t e, g;
    memset(&e, 0, sizeof e);
    memset(&g, 0, sizeof g);
    memset(&re, 0, sizeof re);
    memset(&rg, 0, sizeof rg);
    if (!tpu_i_open(&re, expected, r) || !tpu_i_open(&rg, got, r))
        goto out;
    int keys_agree = 1; /* stop counting differences once the files are out of step */
    for (uint64_t idx = 0;; idx++) {
        int he = tpu_i_next(&re, &e, r);
        if (he < 0)
            goto out;
        int hg = tpu_i_next(&rg, &g, r);
        if (hg < 0)
            goto out;
        if (!he && !hg)
            break;
        if (!he || !hg) {
            if (r->kind == TPU_TRACE_DIV_NONE)
                tpu_i_first(r, he ? TPU_TRACE_DIV_SHORT_GOT : TPU_TRACE_DIV_SHORT_EXP,
                            he ? &e : NULL, hg ? &g : NULL, idx);
            /* count the rest of the longer file */
            tpu_i_reader_t *rest = he ? &re : &rg;
            tpu_i_rec_t *rec = he ? &e : &g;
            int h;
            while ((h = tpu_i_next(rest, rec, r)) > 0)
                ;
            if (h < 0)
                goto out;
            break;
        }
        if (!keys_agree)
            continue;
        if (!tpu_i_same_key(&e, &g)) {
            if (r->kind == TPU_TRACE_DIV_NONE)
                tpu_i_first(r, TPU_TRACE_DIV_KEY, &e, &g, idx);
            keys_agree = 0;
            continue;
        }
        if (e.nv != g.nv) {
            if (r->kind == TPU_TRACE_DIV_NONE)
                tpu_i_first(r, TPU_TRACE_DIV_WIDTH, &e, &g, idx);
            r->differing++;
            continue;
        }
        unsigned ndiff = 0, first = 0;
        for (unsigned c = 0; c < e.nv; c++)
            if (e.v[c] != g.v[c]) {
                if (ndiff++ == 0)
                    first = c;
            }
        if (ndiff != 0) {
            r->differing++;
            if (r->kind == TPU_TRACE_DIV_NONE) {
                tpu_i_first(r, TPU_TRACE_DIV_VALUE, &e, &g, idx);
                r->column = first;
                r->columns_differing = ndiff;
                r->v_exp = e.v[first];
                r->v_got = g.v[first];
            }
        } else if (e.cycle != g.cycle) {
            r->cycle_only++;
            if (ignore_cycles)
                continue;
            r->differing++;
            if (r->kind == TPU_TRACE_DIV_NONE)
                tpu_i_first(r, TPU_TRACE_DIV_TIMING, &e, &g, idx);
        }
    }
    r->status = r->kind == TPU_TRACE_DIV_NONE ? TPU_TRACE_CMP_SAME : TPU_TRACE_CMP_DIFFER;
    if (re.records == 0 && rg.records == 0) {
        /* two header-only traces: the runs recorded nothing, which is not a pass */
        tpu_i_error(r, expected, re.line, "no records in either trace (header only), expected "
                    "the records of a run");
        goto out;
    }
out:
    r->records_exp = re.records;
    r->records_got = rg.records;
    if (re.f)
        fclose(re.f);
    if (rg.f)
        fclose(rg.f);
    free(re.buf);
    free(rg.buf);
    free(e.v);
    free(g.v);
    return r->status;
}

/* internal: fp32 bits as a decimal string */
static void tpu_i_dec_fp32(char *buf, size_t cap, uint32_t v)
{
    float f;
    memcpy(&f, &v, sizeof f);
    snprintf(buf, cap, "%.9g", (double)f);
}

/* internal: "mxu tile 3 (kt 1, nt 1) row 2" */
static void tpu_i_key_str(char *buf, size_t cap, const char *unit, unsigned nkeys,
                          const char *const *names, const uint64_t *key)
{
    if (nkeys == 4 && strcmp(unit, "mxu") == 0) {
        snprintf(buf, cap, "%s tile %" PRIu64 " (kt %" PRIu64 ", nt %" PRIu64 ") row %" PRIu64,
                 unit, key[0], key[1], key[2], key[3]);
        return;
    }
    size_t n = (size_t)snprintf(buf, cap, "%s", unit);
    for (unsigned i = 0; i < nkeys && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, " %s %" PRIu64, names[i], key[i]);
}

void tpu_trace_cmp_report(const tpu_trace_cmp_result_t *r, FILE *out)
{
    char ke[160], kg[160], de[48], dg[48];
    if (r->status == TPU_TRACE_CMP_ERROR) {
        fprintf(out, "error: %s\n", r->error);
        return;
    }
    if (r->status == TPU_TRACE_CMP_SAME) {
        if (r->cycle_only != 0)
            fprintf(out, "PASS: %" PRIu64 " records, identical values (%" PRIu64
                         " at other cycles: --ignore-cycles)\n",
                    r->records_exp, r->cycle_only);
        else
            fprintf(out, "PASS: %" PRIu64 " records identical\n", r->records_exp);
        return;
    }
    if (r->kind != TPU_TRACE_DIV_SHORT_EXP)
        tpu_i_key_str(ke, sizeof ke, r->unit, r->nkeys, r->key_names, r->key_exp);
    if (r->kind != TPU_TRACE_DIV_SHORT_GOT)
        tpu_i_key_str(kg, sizeof kg, r->kind == TPU_TRACE_DIV_SHORT_EXP ? r->unit : r->unit_got,
                      r->nkeys, r->key_names, r->key_got);
    switch (r->kind) {
    case TPU_TRACE_DIV_VALUE:
        tpu_i_dec_fp32(de, sizeof de, r->v_exp);
        tpu_i_dec_fp32(dg, sizeof dg, r->v_got);
        fprintf(out,
                "FAIL: first divergence at record %" PRIu64 " (%s:%ld, %s:%ld)\n"
                "  cycle %" PRIu64 "%s, %s, column %u\n"
                "  expected %08" PRIx32 " (%s)\n"
                "  got      %08" PRIx32 " (%s)\n",
                r->record, r->exp_path, r->line_exp, r->got_path, r->line_got, r->cycle_exp,
                r->cycle_exp == r->cycle_got ? "" : " (got at a different cycle too)", ke,
                r->column, r->v_exp, de, r->v_got, dg);
        if (r->columns_differing > 1)
            fprintf(out, "  %u columns of this record differ\n", r->columns_differing);
        break;
    case TPU_TRACE_DIV_TIMING:
        fprintf(out,
                "FAIL: timing divergence at record %" PRIu64 " (%s:%ld, %s:%ld): %s\n"
                "  expected at cycle %" PRIu64 ", got at cycle %" PRIu64
                " (values identical; --ignore-cycles accepts this)\n",
                r->record, r->exp_path, r->line_exp, r->got_path, r->line_got, ke,
                r->cycle_exp, r->cycle_got);
        break;
    case TPU_TRACE_DIV_KEY:
        fprintf(out,
                "FAIL: records out of step at record %" PRIu64 " (%s:%ld, %s:%ld)\n"
                "  expected cycle %" PRIu64 " %s\n"
                "  got      cycle %" PRIu64 " %s\n",
                r->record, r->exp_path, r->line_exp, r->got_path, r->line_got, r->cycle_exp,
                ke, r->cycle_got, kg);
        break;
    case TPU_TRACE_DIV_WIDTH:
        fprintf(out,
                "FAIL: record %" PRIu64 " (%s:%ld, %s:%ld), cycle %" PRIu64
                ", %s: expected %u values, got %u\n",
                r->record, r->exp_path, r->line_exp, r->got_path, r->line_got, r->cycle_exp,
                ke, r->width_exp, r->width_got);
        break;
    case TPU_TRACE_DIV_SHORT_GOT:
        fprintf(out,
                "FAIL: %s has fewer records (%" PRIu64 ") than %s (%" PRIu64 ")\n"
                "  first missing: cycle %" PRIu64 " %s (%s:%ld)\n",
                r->got_path, r->records_got, r->exp_path, r->records_exp, r->cycle_exp, ke,
                r->exp_path, r->line_exp);
        break;
    case TPU_TRACE_DIV_SHORT_EXP:
        fprintf(out,
                "FAIL: %s has more records (%" PRIu64 ") than %s (%" PRIu64 ")\n"
                "  first extra: cycle %" PRIu64 " %s (%s:%ld)\n",
                r->got_path, r->records_got, r->exp_path, r->records_exp, r->cycle_got, kg,
                r->got_path, r->line_got);
        break;
    default:
        break;
    }
    if (r->differing > 1)
        fprintf(out, "  %" PRIu64 " of %" PRIu64 " records differ\n", r->differing,
                r->records_exp);
}
