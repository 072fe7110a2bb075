/* SPDX-License-Identifier: Apache-2.0 */
/* .npy of any rank (npyio.h): the preamble and header are the C model's (tpu_npy_parse_header,
   checked as numpy reads them: nothing numpy rejects is accepted); this file adds the dtypes
   and ranks the compiler's tools take. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/cli.h"
#include "tpu/npy.h"
#include "tpuc/npyio.h"

/* The header's dtype value for a message: printable characters only, at most 10. */
static const char *shown(const char *d, char *buf, size_t len)
{
    size_t k = 0;
    for (; d[k] && k < 10 && k + 1 < len; k++) buf[k] = d[k] >= 0x20 && d[k] < 0x7f ? d[k] : '?';
    buf[k] = 0;
    return buf;
}


static int npy_parse(const void *data, size_t len, const char *path, int want_int, tpuc_npy_t *a,
                     char *err, size_t errlen, char **own);

int tpuc_npy_load(const char *path, int want_int, tpuc_npy_t *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    char *buf = NULL;
    size_t len = 0;
    if (tpu_file_read(path, (size_t)8 << 30, "a .npy of at most 8 GiB", &buf, &len, err, errlen))
        return -1;
    int rc = npy_parse(buf, len, path, want_int, a, err, errlen, &buf);
    free(buf); /* NULL when a->f took it */
    return rc;
}

int tpuc_npy_parse(const void *data, size_t len, const char *path, int want_int, tpuc_npy_t *a,
                   char *err, size_t errlen)
{
    return npy_parse(data, len, path, want_int, a, err, errlen, NULL);
}

/* *own, when given, is the malloc'd buffer data points to: float32 data is moved to its start
   and a->f takes it (*own = NULL), no second copy of the file */
static int npy_parse(const void *data, size_t len, const char *path, int want_int, tpuc_npy_t *a,
                     char *err, size_t errlen, char **own)
{
    memset(a, 0, sizeof *a);
    tpu_npy_header_t h;
    if (tpu_npy_parse_header(data, len, path, &h, err, errlen)) return -1;
    size_t es;
    int kind; /* 0 f4, 1 i8, 2 i4, 3 u1 */
    if (!strcmp(h.descr, "<f4")) kind = 0, es = 4;
    else if (!strcmp(h.descr, "<i8")) kind = 1, es = 8;
    else if (!strcmp(h.descr, "<i4")) kind = 2, es = 4;
    else if (!strcmp(h.descr, "|u1")) kind = 3, es = 1;
    else kind = -1, es = 0;
    if (kind < 0 || (want_int >= 0 && (kind == 0) == (want_int != 0))) {
        char dt[16];
        snprintf(err, errlen, "%s: dtype '%s', expected %s", path, shown(h.descr, dt, sizeof dt),
                 want_int > 0    ? "'<i8', '<i4' or '|u1' (integer labels)"
                 : want_int == 0 ? "'<f4' (float32)"
                                 : "'<f4' (float32) or '<i8', '<i4', '|u1' (integer ids)");
        return -1;
    }
    if (h.fortran) {
        snprintf(err, errlen, "%s: fortran_order True, expected a C-order array (numpy.ascontiguousarray)", path);
        return -1;
    }
    if (h.ndim == 0) {
        snprintf(err, errlen, "%s: a 0-D array, expected the examples first", path);
        return -1;
    }
    if (h.ndim > TPUC_MAX_DIMS) {
        snprintf(err, errlen, "%s: %u dimensions, at most %d", path, h.ndim, TPUC_MAX_DIMS);
        return -1;
    }
    uint64_t total = 1;
    for (unsigned d = 0; d < h.ndim; d++) {
        uint64_t v = h.dims[d];
        if (v > (1ull << 40) || (v && total > (1ull << 40) / v)) {
            snprintf(err, errlen, "%s: absurd shape", path);
            return -1;
        }
        a->dims[d] = (int64_t)v;
        total *= v;
    }
    a->ndim = (int)h.ndim;
    if (total * es > len - h.data_off) {
        snprintf(err, errlen, "%s: %zu data bytes, the shape needs %" PRIu64, path, len - h.data_off,
                 total * es);
        return -1;
    }
    a->elems = total;
    const unsigned char *p = (const unsigned char *)data + h.data_off;
    if (kind == 0 && own != NULL) {
        /* the file's buffer holds data_off (>= 10) + total * 4 bytes + 1 */
        memmove(*own, p, total * 4);
        a->f = (float *)(void *)*own;
        *own = NULL;
    } else if (kind == 0) {
        a->f = malloc(total * 4 + 4);
        if (!a->f) { snprintf(err, errlen, "out of memory"); return -1; }
        memcpy(a->f, p, total * 4);
    } else {
        a->i = malloc(total * 8 + 8);
        if (!a->i) { snprintf(err, errlen, "out of memory"); return -1; }
        for (uint64_t k = 0; k < total; k++) {
            uint64_t u = 0;
            for (size_t b = 0; b < es; b++) u |= (uint64_t)p[k * es + b] << (8 * b);
            if (kind == 2) u = (uint64_t)(int64_t)(int32_t)(uint32_t)u;
            a->i[k] = (int64_t)u;
        }
    }
    return 0;
}

void tpuc_npy_free(tpuc_npy_t *a)
{
    free(a->f);
    free(a->i);
    a->f = NULL;
    a->i = NULL;
}
