/* SPDX-License-Identifier: Apache-2.0 */
/* .npy of any rank (npyio.h). The header is a Python dict literal; we accept what numpy
   writes for these dtypes: {'descr': D, 'fortran_order': False, 'shape': (d0, d1, ...), }
   padded with spaces and a newline. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/cli.h"
#include "tpuc/npyio.h"

/* The header's dtype value for a message: printable characters only, at most 10. */
static const char *shown(const char *d, char *buf, size_t len)
{
    size_t k = 0;
    for (; d[k] && k < 10 && k + 1 < len; k++) buf[k] = d[k] >= 0x20 && d[k] < 0x7f ? d[k] : '?';
    buf[k] = 0;
    return buf;
}

static const char *skip(const char *s)
{
    while (*s == ' ') s++;
    return s;
}

int tpuc_npy_load(const char *path, int want_int, tpuc_npy_t *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    char *buf = NULL;
    size_t len = 0;
    if (tpu_file_read(path, (size_t)8 << 30, "a .npy of at most 8 GiB", &buf, &len, err, errlen))
        return -1;
    int rc = tpuc_npy_parse(buf, len, path, want_int, a, err, errlen);
    free(buf);
    return rc;
}

int tpuc_npy_parse(const void *data, size_t len, const char *path, int want_int, tpuc_npy_t *a,
                   char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    const char *buf = data;
    char *h = NULL;
    int rc = -1;
    size_t hl, ho;
    unsigned major;
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) {
        snprintf(err, errlen, "%s: not a .npy file (no \\x93NUMPY magic)", path);
        goto out;
    }
    major = (unsigned char)buf[6];
    if (major == 1) {
        hl = (unsigned char)buf[8] | ((size_t)(unsigned char)buf[9] << 8);
        ho = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) { snprintf(err, errlen, "%s: truncated header", path); goto out; }
        hl = (unsigned char)buf[8] | ((size_t)(unsigned char)buf[9] << 8) |
             ((size_t)(unsigned char)buf[10] << 16) | ((size_t)(unsigned char)buf[11] << 24);
        ho = 12;
    } else {
        snprintf(err, errlen, "%s: .npy format version %u, expected 1, 2 or 3", path, major);
        goto out;
    }
    if (hl > len - ho) { snprintf(err, errlen, "%s: truncated header", path); goto out; }
    h = malloc(hl + 1);
    if (!h) { snprintf(err, errlen, "out of memory"); goto out; }
    memcpy(h, buf + ho, hl);
    h[hl] = 0;
    if (strlen(h) != hl) { snprintf(err, errlen, "%s: NUL byte in the header", path); goto out; }
    const char *d = strstr(h, "'descr':"), *fo = strstr(h, "'fortran_order':"), *sh = strstr(h, "'shape':");
    if (!d || !fo || !sh) {
        snprintf(err, errlen, "%s: header lacks descr, fortran_order or shape", path);
        goto out;
    }
    d = skip(d + 8);
    size_t es;
    char dt[16];
    int kind; /* 0 f4, 1 i8, 2 i4, 3 u1 */
    if (!strncmp(d, "'<f4'", 5)) kind = 0, es = 4;
    else if (!strncmp(d, "'<i8'", 5)) kind = 1, es = 8;
    else if (!strncmp(d, "'<i4'", 5)) kind = 2, es = 4;
    else if (!strncmp(d, "'|u1'", 5)) kind = 3, es = 1;
    else {
        snprintf(err, errlen, "%s: dtype %s, expected %s", path, shown(d, dt, sizeof dt),
                 want_int ? "'<i8', '<i4' or '|u1' (integer labels)" : "'<f4' (float32)");
        goto out;
    }
    if (want_int >= 0 && (kind == 0) == (want_int != 0)) {
        snprintf(err, errlen, "%s: dtype %s, expected %s", path, shown(d, dt, sizeof dt),
                 want_int ? "'<i8', '<i4' or '|u1' (integer labels)" : "'<f4' (float32)");
        goto out;
    }
    fo = skip(fo + 16);
    if (strncmp(fo, "False", 5) != 0) {
        snprintf(err, errlen, "%s: fortran_order is not False (C order required)", path);
        goto out;
    }
    sh = skip(sh + 8);
    if (*sh != '(') { snprintf(err, errlen, "%s: bad shape", path); goto out; }
    sh++;
    uint64_t total = 1;
    for (;;) {
        sh = skip(sh);
        if (*sh == ')') break;
        if (*sh < '0' || *sh > '9') { snprintf(err, errlen, "%s: bad shape", path); goto out; }
        uint64_t v = 0;
        while (*sh >= '0' && *sh <= '9') {
            v = v * 10 + (uint64_t)(*sh - '0');
            if (v > (1ull << 40)) { snprintf(err, errlen, "%s: absurd dimension", path); goto out; }
            sh++;
        }
        if (a->ndim == TPUC_MAX_DIMS) {
            snprintf(err, errlen, "%s: more than %d dimensions", path, TPUC_MAX_DIMS);
            goto out;
        }
        a->dims[a->ndim++] = (int64_t)v;
        if (v && total > (1ull << 40) / v) { snprintf(err, errlen, "%s: absurd shape", path); goto out; }
        total *= v;
        sh = skip(sh);
        if (*sh == ',') sh++;
        else if (*sh != ')') { snprintf(err, errlen, "%s: bad shape", path); goto out; }
    }
    if (a->ndim == 0) { snprintf(err, errlen, "%s: a 0-D array, expected the examples first", path); goto out; }
    if (total * es != len - ho - hl) {
        snprintf(err, errlen, "%s: %zu data bytes, the shape needs %" PRIu64, path, len - ho - hl,
                 total * es);
        goto out;
    }
    a->elems = total;
    const unsigned char *p = (const unsigned char *)buf + ho + hl;
    if (kind == 0) {
        a->f = malloc(total * 4 + 4);
        if (!a->f) { snprintf(err, errlen, "out of memory"); goto out; }
        memcpy(a->f, p, total * 4);
    } else {
        a->i = malloc(total * 8 + 8);
        if (!a->i) { snprintf(err, errlen, "out of memory"); goto out; }
        for (uint64_t k = 0; k < total; k++) {
            uint64_t u = 0;
            for (size_t b = 0; b < es; b++) u |= (uint64_t)p[k * es + b] << (8 * b);
            if (kind == 2) u = (uint64_t)(int64_t)(int32_t)(uint32_t)u;
            a->i[k] = (int64_t)u;
        }
    }
    rc = 0;
out:
    free(h);
    if (rc) tpuc_npy_free(a);
    return rc;
}

void tpuc_npy_free(tpuc_npy_t *a)
{
    free(a->f);
    free(a->i);
    a->f = NULL;
    a->i = NULL;
}
