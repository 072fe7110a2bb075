/* SPDX-License-Identifier: Apache-2.0 */
/* numpy .npy reader and writer (format 1.0 and 2.0), dtypes <u2, <f4, <u4, 1-D or 2-D, C order. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tpu/cli.h"
#include "tpu/npy.h"

static const char magic[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

size_t tpu_npy_elem_size(tpu_npy_dtype_t t) { return t == TPU_NPY_U2 ? 2u : 4u; }

const char *tpu_npy_descr(tpu_npy_dtype_t t)
{
    switch (t) {
    case TPU_NPY_U2: return "<u2";
    case TPU_NPY_F4: return "<f4";
    default: return "<u4";
    }
}

int tpu_npy_parse_dtype(const char *s, tpu_npy_dtype_t *t)
{
    if (!strcmp(s, "<u2") || !strcmp(s, "u2") || !strcmp(s, "bf16"))
        *t = TPU_NPY_U2;
    else if (!strcmp(s, "<f4") || !strcmp(s, "f4") || !strcmp(s, "f32"))
        *t = TPU_NPY_F4;
    else if (!strcmp(s, "<u4") || !strcmp(s, "u4"))
        *t = TPU_NPY_U4;
    else
        return -1;
    return 0;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int tpu_npy_alloc(tpu_npy_t *a, tpu_npy_dtype_t t, unsigned ndim, size_t rows, size_t cols)
{
    a->dtype = t;
    a->ndim = ndim;
    a->rows = ndim == 1 ? 1 : rows;
    a->cols = cols;
    size_t cnt = a->rows * a->cols;
    if (a->cols != 0 && cnt / a->cols != a->rows)
        return -1;
    a->data = calloc(cnt ? cnt : 1, tpu_npy_elem_size(t));
    return a->data ? 0 : -1;
}

void tpu_npy_free(tpu_npy_t *a)
{
    free(a->data);
    a->data = NULL;
}

/* ---- The header: a Python dict literal, checked as numpy's format.py reads it ----
   numpy evaluates the header with ast.literal_eval and requires a dict with exactly the keys
   'descr', 'fortran_order' and 'shape', a tuple of ints for 'shape' and a bool for
   'fortran_order' (numpy/lib/format.py, _read_array_header). This parser accepts a subset of
   that language and nothing numpy rejects: blanks, newlines, '#' comments and backslash line
   continuations between tokens; strings in ' or " without escapes or prefixes; decimal ints
   (no sign, no '_', no leading zero but "0"; an 'L' suffix as numpy's filter for version 1.0
   and 2.0 headers removes it); True, False; a trailing comma in the dict and the tuple; a
   key given twice (the last one counts, as in Python). It rejects NUL and non-ASCII bytes and
   headers longer than numpy's 10000 characters. */

#define NPY_MAX_HEADER 10000u

struct hp {
    const char *s, *end;
    int depth;    /* inside brackets: newlines are blanks */
    int filter_l; /* versions 1.0 and 2.0: 4L is 4 */
};

/* internal: skip blanks, comments and continuations; newlines only inside brackets. */
static void hp_ws(struct hp *p)
{
    while (p->s < p->end) {
        char c = *p->s;
        if (c == ' ' || c == '\t' || c == '\f')
            p->s++;
        else if ((c == '\n' || c == '\r') && p->depth > 0)
            p->s++;
        else if (c == '\\' && p->depth > 0 && p->s + 1 < p->end && p->s[1] == '\n')
            p->s += 2; /* a continuation, inside brackets only (after the dict numpy fails) */
        else if (c == '\\' && p->depth > 0 && p->s + 2 < p->end && p->s[1] == '\r' &&
                 p->s[2] == '\n')
            p->s += 3;
        else if (c == '#') {
            while (p->s < p->end && *p->s != '\n' && *p->s != '\r')
                p->s++;
        } else
            break;
    }
}

/* internal: a string literal; its text in [*b, *b + *n). */
static int hp_str(struct hp *p, const char **b, size_t *n)
{
    if (p->s >= p->end || (*p->s != '\'' && *p->s != '"'))
        return -1;
    char q = *p->s++;
    *b = p->s;
    while (p->s < p->end && *p->s != q) {
        if (*p->s == '\\' || *p->s == '\n' || *p->s == '\r')
            return -1;
        p->s++;
    }
    if (p->s >= p->end)
        return -1;
    *n = (size_t)(p->s - *b);
    p->s++;
    return 0;
}

static int is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* internal: a decimal int literal (saturating at 2^63). */
static int hp_int(struct hp *p, uint64_t *v)
{
    const char *b = p->s;
    uint64_t x = 0;
    while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
        unsigned d = (unsigned)(*p->s - '0');
        x = x > ((uint64_t)1 << 59) ? (uint64_t)1 << 63 : x * 10u + d;
        p->s++;
    }
    size_t n = (size_t)(p->s - b);
    if (n == 0)
        return -1;
    if (b[0] == '0') /* Python 3: "007" is a syntax error, "000" is zero */
        for (size_t i = 0; i < n; i++)
            if (b[i] != '0')
                return -1;
    if (p->filter_l && p->s < p->end && *p->s == 'L' &&
        (p->s + 1 >= p->end || !is_name_char(p->s[1])))
        p->s++;
    if (p->s < p->end && (is_name_char(*p->s) || *p->s == '.'))
        return -1; /* 4x, 4.0, 4e3, 4_0: not an int of ours */
    *v = x;
    return 0;
}

static int hp_word(struct hp *p, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(p->end - p->s) < n || memcmp(p->s, w, n) ||
        (p->s + n < p->end && is_name_char(p->s[n])))
        return -1;
    p->s += n;
    return 0;
}

static int parse_dict(const char *h, size_t hlen, int filter_l, tpu_npy_header_t *hd,
                      const char *path, char *err, size_t errlen)
{
    struct hp p = { h, h + hlen, 0, filter_l };
    char descr[16] = "";
    int have[3] = { 0, 0, 0 }, fortran = 0;
    uint64_t dims[TPU_NPY_MAX_DIMS] = { 0 };
    unsigned nd = 0;
    for (size_t i = 0; i < hlen; i++)
        if (h[i] == 0 || (unsigned char)h[i] >= 0x80) {
            set_err(err, errlen, "%s: byte 0x%02x in the npy header, expected ASCII text", path,
                    (unsigned char)h[i]);
            return -1;
        }
#define BAD(what)                                                                           \
    do {                                                                                    \
        set_err(err, errlen, "%s: bad npy header at offset %zu: %s", path,                  \
                (size_t)(p.s - h), what);                                                   \
        return -1;                                                                          \
    } while (0)
    /* A carriage return not followed by a newline: Python's tokenizer makes a line of it
       whose blanks can be an "unexpected indent" (numpy rejects "}\r  "); refused. */
    for (size_t i = 0; i < hlen; i++)
        if (h[i] == '\r' && (i + 1 == hlen || h[i + 1] != '\n')) {
            set_err(err, errlen, "%s: bad npy header at offset %zu: a carriage return without "
                    "a newline", path, i);
            return -1;
        }
    /* before the dict: blanks on the first line, comments and blank lines; after a line
       break the dict must start the line (an indented one is Python's "unexpected indent") */
    while (p.s < p.end && (*p.s == ' ' || *p.s == '\t'))
        p.s++;
    for (;;) {
        if (p.s < p.end && *p.s == '#')
            while (p.s < p.end && *p.s != '\n' && *p.s != '\r')
                p.s++;
        if (p.s < p.end && (*p.s == '\n' || *p.s == '\r')) {
            p.s += *p.s == '\r' ? 2 : 1;
            const char *b = p.s;
            while (p.s < p.end && (*p.s == ' ' || *p.s == '\t'))
                p.s++;
            if (p.s < p.end && (*p.s == '\n' || *p.s == '\r' || *p.s == '#'))
                continue; /* a blank or comment line */
            if (p.s != b)
                BAD("the dict is indented after a line break");
        }
        break;
    }
    if (p.s >= p.end || *p.s != '{')
        BAD("expected a dict '{'");
    p.s++;
    p.depth = 1;
    for (;;) {
        hp_ws(&p);
        if (p.s < p.end && *p.s == '}')
            break;
        const char *kb;
        size_t kn;
        if (hp_str(&p, &kb, &kn))
            BAD("expected a key in quotes or '}'");
        int key = kn == 5 && !memcmp(kb, "descr", 5)           ? 0
                  : kn == 13 && !memcmp(kb, "fortran_order", 13) ? 1
                  : kn == 5 && !memcmp(kb, "shape", 5)           ? 2
                                                                 : -1;
        if (key < 0) {
            set_err(err, errlen, "%s: npy header key '%.*s', expected only 'descr', "
                    "'fortran_order' and 'shape'", path, (int)(kn < 40 ? kn : 40), kb);
            return -1;
        }
        hp_ws(&p);
        if (p.s >= p.end || *p.s != ':')
            BAD("expected ':'");
        p.s++;
        hp_ws(&p);
        if (key == 0) {
            const char *vb;
            size_t vn;
            if (hp_str(&p, &vb, &vn))
                BAD("'descr' is not a string");
            if (vn >= sizeof descr)
                vn = sizeof descr - 1;
            memcpy(descr, vb, vn);
            descr[vn] = 0;
        } else if (key == 1) {
            if (hp_word(&p, "True") == 0)
                fortran = 1;
            else if (hp_word(&p, "False") == 0)
                fortran = 0;
            else
                BAD("'fortran_order' is not True or False");
        } else {
            if (p.s >= p.end || *p.s != '(')
                BAD("'shape' is not a tuple");
            p.s++;
            p.depth++;
            nd = 0;
            int comma = 0; /* a comma after the last element */
            for (;;) {
                hp_ws(&p);
                if (p.s < p.end && *p.s == ')')
                    break;
                uint64_t d;
                if (nd > 0 && !comma)
                    BAD("expected ',' or ')' in 'shape'");
                if (hp_int(&p, &d))
                    BAD("'shape' holds something other than whole numbers");
                if (nd < TPU_NPY_MAX_DIMS)
                    dims[nd] = d > ((uint64_t)1 << 40) ? (uint64_t)1 << 41 : d;
                nd++;
                hp_ws(&p);
                comma = p.s < p.end && *p.s == ',';
                if (comma)
                    p.s++;
            }
            if (nd == 1 && !comma)
                BAD("'shape' (n) is a number, not a tuple: expected (n,)");
            p.s++;
            p.depth--;
        }
        have[key] = 1;
        hp_ws(&p);
        if (p.s < p.end && *p.s == ',') {
            p.s++;
            continue;
        }
        if (p.s < p.end && *p.s == '}')
            break;
        BAD("expected ',' or '}'");
    }
    p.s++;
    p.depth = 0;
    /* after the dict: blanks, comments and newlines only */
    for (;;) {
        hp_ws(&p);
        if (p.s < p.end && (*p.s == '\n' || *p.s == '\r'))
            p.s++;
        else
            break;
    }
    if (p.s != p.end)
        BAD("text after the dict");
#undef BAD
    if (!have[0] || !have[1] || !have[2]) {
        set_err(err, errlen, "%s: npy header has no '%s'", path,
                !have[0] ? "descr" : !have[1] ? "fortran_order" : "shape");
        return -1;
    }
    if (nd > TPU_NPY_MAX_DIMS) {
        set_err(err, errlen, "%s: array has %u dimensions, at most %u are read", path, nd,
                TPU_NPY_MAX_DIMS);
        return -1;
    }
    memcpy(hd->descr, descr, sizeof hd->descr);
    hd->fortran = fortran;
    hd->ndim = nd;
    memcpy(hd->dims, dims, sizeof hd->dims);
    return 0;
}

/* internal: this reader's arrays: '<u2', '<f4' or '<u4', C order, 1 or 2 dimensions. */
static int parse_header(const char *h, size_t hlen, int filter_l, tpu_npy_t *a,
                        const char *path, char *err, size_t errlen)
{
    tpu_npy_header_t hd;
    if (parse_dict(h, hlen, filter_l, &hd, path, err, errlen))
        return -1;
    if ((strcmp(hd.descr, "<u2") && strcmp(hd.descr, "<f4") && strcmp(hd.descr, "<u4")) ||
        tpu_npy_parse_dtype(hd.descr, &a->dtype)) {
        set_err(err, errlen, "%s: dtype '%s' not supported, expected '<u2', '<f4' or '<u4'", path,
                hd.descr);
        return -1;
    }
    if (hd.fortran) {
        set_err(err, errlen, "%s: fortran_order True not supported, expected a C-order array "
                "(numpy.ascontiguousarray)", path);
        return -1;
    }
    if (hd.ndim == 0 || hd.ndim > 2) {
        set_err(err, errlen, "%s: array has %u dimensions, expected 1 or 2", path, hd.ndim);
        return -1;
    }
    a->ndim = hd.ndim;
    a->rows = hd.ndim == 1 ? 1 : (size_t)hd.dims[0];
    a->cols = hd.ndim == 1 ? (size_t)hd.dims[0] : (size_t)hd.dims[1];
    return 0;
}

/* internal: the preamble (magic, version, header length) from the first bytes: the header
   length and where it starts, or -1 with a message; needs 12 bytes or the whole file. */
static int parse_preamble(const unsigned char *pre, size_t n, const char *path, size_t *hoff,
                          size_t *hlen, int *filter_l, char *err, size_t errlen)
{
    if (n < 10 || memcmp(pre, magic, 6)) {
        set_err(err, errlen, "%s: not a .npy file (no \\x93NUMPY magic)", path);
        return -1;
    }
    if ((pre[6] != 1 && pre[6] != 2 && pre[6] != 3) || pre[7] != 0) {
        set_err(err, errlen, "%s: npy format version %u.%u not supported, expected 1.0, 2.0 or "
                "3.0", path, pre[6], pre[7]);
        return -1;
    }
    if (pre[6] == 1) {
        *hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
        *hoff = 10;
    } else {
        if (n < 12) {
            set_err(err, errlen, "%s: truncated npy header", path);
            return -1;
        }
        *hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
                (size_t)pre[11] << 24;
        *hoff = 12;
    }
    *filter_l = pre[6] <= 2;
    if (*hlen > NPY_MAX_HEADER) {
        set_err(err, errlen, "%s: npy header of %zu bytes, expected at most %u (numpy's limit)",
                path, *hlen, NPY_MAX_HEADER);
        return -1;
    }
    return 0;
}

/* internal: rows x cols of e-byte elements: the data bytes, or -1 when they overflow. */
static int data_bytes(const tpu_npy_t *a, size_t *bytes)
{
    size_t e = tpu_npy_elem_size(a->dtype);
    if (a->cols != 0 && a->rows > SIZE_MAX / a->cols / e)
        return -1;
    *bytes = a->rows * a->cols * e;
    return 0;
}

static void decode(tpu_npy_t *a, const unsigned char *buf)
{
    size_t e = tpu_npy_elem_size(a->dtype), cnt = a->rows * a->cols;
    for (size_t i = 0; i < cnt; i++) {
        if (e == 2)
            ((uint16_t *)a->data)[i] = (uint16_t)(buf[2 * i] | buf[2 * i + 1] << 8);
        else
            ((uint32_t *)a->data)[i] = (uint32_t)buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 |
                                       (uint32_t)buf[4 * i + 2] << 16 |
                                       (uint32_t)buf[4 * i + 3] << 24;
    }
}

int tpu_npy_read_mem(const void *data, size_t len, const char *name, tpu_npy_t *a, char *err,
                     size_t errlen)
{
    const unsigned char *b = data;
    size_t hoff, hlen, need;
    int filter_l;
    memset(a, 0, sizeof *a);
    if (parse_preamble(b, len, name, &hoff, &hlen, &filter_l, err, errlen))
        return -1;
    if (len - hoff < hlen) {
        set_err(err, errlen, "%s: truncated npy header", name);
        return -1;
    }
    if (parse_header((const char *)b + hoff, hlen, filter_l, a, name, err, errlen))
        return -1;
    if (data_bytes(a, &need) || need > len - hoff - hlen) {
        set_err(err, errlen, "%s: truncated data: expected %zu x %zu elements, the file has %zu "
                "bytes of data", name, a->rows, a->cols, len - hoff - hlen);
        return -1;
    }
    if (tpu_npy_alloc(a, a->dtype, a->ndim, a->rows, a->cols)) {
        set_err(err, errlen, "%s: out of memory for %zu x %zu array", name, a->rows, a->cols);
        return -1;
    }
    decode(a, b + hoff + hlen);
    return 0;
}

int tpu_npy_parse_header(const void *data, size_t len, const char *name, tpu_npy_header_t *h,
                         char *err, size_t errlen)
{
    const unsigned char *b = data;
    size_t hoff, hlen;
    int filter_l;
    memset(h, 0, sizeof *h);
    if (parse_preamble(b, len, name, &hoff, &hlen, &filter_l, err, errlen))
        return -1;
    if (len - hoff < hlen) {
        set_err(err, errlen, "%s: truncated npy header", name);
        return -1;
    }
    if (parse_dict((const char *)b + hoff, hlen, filter_l, h, name, err, errlen))
        return -1;
    h->data_off = hoff + hlen;
    return 0;
}

int tpu_npy_read(const char *path, tpu_npy_t *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    unsigned char pre[12];
    char hdr[NPY_MAX_HEADER + 1];
    unsigned char *buf = NULL;
    int rc = -1, filter_l;
    size_t hoff, hlen, need, got = 0;
    size_t n = fread(pre, 1, 10, f);
    if (n == 10 && pre[6] != 1 && fread(pre + 10, 1, 2, f) == 2)
        n = 12;
    if (ferror(f)) {
        set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
        goto out;
    }
    if (parse_preamble(pre, n, path, &hoff, &hlen, &filter_l, err, errlen))
        goto out;
    if (fread(hdr, 1, hlen, f) != hlen) {
        set_err(err, errlen, "%s: truncated npy header", path);
        goto out;
    }
    if (parse_header(hdr, hlen, filter_l, a, path, err, errlen))
        goto out;
    if (data_bytes(a, &need)) {
        set_err(err, errlen, "%s: shape %zu x %zu too large", path, a->rows, a->cols);
        goto out;
    }
    /* the data, in chunks: memory grows with what the file really holds, never with what
       the header claims (a short file with a huge shape allocates little) */
    size_t cap = need < ((size_t)1 << 20) ? need : ((size_t)1 << 20);
    buf = malloc(cap ? cap : 1);
    while (buf != NULL && got < need) {
        if (got == cap) {
            size_t nc = cap > need / 2 ? need : cap * 2;
            unsigned char *q = realloc(buf, nc);
            if (q == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = q;
            cap = nc;
        }
        size_t k = fread(buf + got, 1, cap - got, f);
        got += k;
        if (k == 0)
            break;
    }
    if (buf == NULL) {
        set_err(err, errlen, "%s: out of memory for %zu x %zu array", path, a->rows, a->cols);
        goto out;
    }
    if (got < need) {
        set_err(err, errlen, "%s: truncated data: expected %zu bytes for shape %zu x %zu%s%s",
                path, need, a->rows, a->cols, ferror(f) ? ": " : "",
                ferror(f) ? strerror(errno ? errno : EIO) : "");
        goto out;
    }
    if (tpu_npy_alloc(a, a->dtype, a->ndim, a->rows, a->cols)) {
        set_err(err, errlen, "%s: out of memory for %zu x %zu array", path, a->rows, a->cols);
        goto out;
    }
    decode(a, buf);
    rc = 0;
out:
    if (rc)
        tpu_npy_free(a);
    free(buf);
    fclose(f);
    return rc;
}

int tpu_npy_write(const char *path, const tpu_npy_t *a, char *err, size_t errlen)
{
    char dict[160];
    if (a->ndim == 1)
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }",
                 tpu_npy_descr(a->dtype), a->cols);
    else
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }",
                 tpu_npy_descr(a->dtype), a->rows, a->cols);
    size_t dl = strlen(dict);
    size_t total = 10 + dl + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = dl + pad + 1;
    tpu_out_t o;
    if (tpu_out_open(&o, path, err, errlen))
        return -1;
    FILE *f = o.f;
    unsigned char pre[10];
    memcpy(pre, magic, 6);
    pre[6] = 1;
    pre[7] = 0;
    pre[8] = (unsigned char)(hlen & 0xFF);
    pre[9] = (unsigned char)(hlen >> 8);
    fwrite(pre, 1, 10, f);
    fwrite(dict, 1, dl, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    /* little-endian bytes whatever the host's order, a buffer at a time (one fputc per
       byte made a dump of 80 MB take a second) */
    size_t e = tpu_npy_elem_size(a->dtype), cnt = a->rows * a->cols;
    unsigned char buf[16384];
    size_t k = 0;
    for (size_t i = 0; i < cnt; i++) {
        uint32_t v = e == 2 ? ((const uint16_t *)a->data)[i] : ((const uint32_t *)a->data)[i];
        for (size_t b = 0; b < e; b++)
            buf[k++] = (unsigned char)((v >> (8 * b)) & 0xFF);
        if (k > sizeof buf - 4) {
            fwrite(buf, 1, k, f);
            k = 0;
        }
    }
    fwrite(buf, 1, k, f);
    return tpu_out_commit(&o, err, errlen);
}
