/* SPDX-License-Identifier: Apache-2.0 */
/* numpy .npy reader and writer (format 1.0 and 2.0), dtypes <u2, <f4, <u4, 1-D or 2-D, C order. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* internal: the value text of key `key` in the header dict, or NULL. */
static const char *dict_value(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (p == NULL) {
        snprintf(pat, sizeof pat, "\"%s\"", key);
        p = strstr(h, pat);
    }
    if (p == NULL)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

static int parse_header(const char *h, tpu_npy_t *a, const char *path, char *err, size_t errlen)
{
    const char *v = dict_value(h, "descr");
    if (v == NULL || (*v != '\'' && *v != '"')) {
        set_err(err, errlen, "%s: npy header has no 'descr'", path);
        return -1;
    }
    char q = *v++, descr[16];
    size_t k = 0;
    while (*v && *v != q && k + 1 < sizeof descr)
        descr[k++] = *v++;
    descr[k] = 0;
    if ((strcmp(descr, "<u2") && strcmp(descr, "<f4") && strcmp(descr, "<u4")) ||
        tpu_npy_parse_dtype(descr, &a->dtype)) {
        set_err(err, errlen, "%s: dtype '%s' not supported, expected '<u2', '<f4' or '<u4'", path,
                descr);
        return -1;
    }
    v = dict_value(h, "fortran_order");
    if (v == NULL) {
        set_err(err, errlen, "%s: npy header has no 'fortran_order'", path);
        return -1;
    }
    if (!strncmp(v, "True", 4)) {
        set_err(err, errlen, "%s: fortran_order True not supported, expected a C-order array "
                "(numpy.ascontiguousarray)", path);
        return -1;
    }
    if (strncmp(v, "False", 5)) {
        set_err(err, errlen, "%s: bad fortran_order value in npy header", path);
        return -1;
    }
    v = dict_value(h, "shape");
    if (v == NULL || *v != '(') {
        set_err(err, errlen, "%s: npy header has no 'shape' tuple", path);
        return -1;
    }
    v++;
    size_t dims[3];
    unsigned nd = 0;
    for (;;) {
        while (*v == ' ')
            v++;
        if (*v == ')')
            break;
        if (*v < '0' || *v > '9') {
            set_err(err, errlen, "%s: bad 'shape' in npy header", path);
            return -1;
        }
        char *end;
        errno = 0;
        unsigned long long d = strtoull(v, &end, 10);
        if (errno || d > ((size_t)1 << 40)) {
            set_err(err, errlen, "%s: dimension too large in npy header", path);
            return -1;
        }
        if (nd < 3)
            dims[nd] = (size_t)d;
        nd++;
        v = end;
        while (*v == ' ')
            v++;
        if (*v == ',')
            v++;
    }
    if (nd == 0 || nd > 2) {
        set_err(err, errlen, "%s: array has %u dimensions, expected 1 or 2", path, nd);
        return -1;
    }
    a->ndim = nd;
    a->rows = nd == 1 ? 1 : dims[0];
    a->cols = nd == 1 ? dims[0] : dims[1];
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
    char *hdr = NULL;
    int rc = -1;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, magic, 6)) {
        set_err(err, errlen, "%s: not a .npy file (no \\x93NUMPY magic)", path);
        goto out;
    }
    size_t hlen;
    if (pre[6] == 1) {
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            set_err(err, errlen, "%s: truncated npy header", path);
            goto out;
        }
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
               (size_t)pre[11] << 24;
    } else {
        set_err(err, errlen, "%s: npy format version %u.%u not supported, expected 1.0 or 2.0",
                path, pre[6], pre[7]);
        goto out;
    }
    if (hlen > (1u << 20) || (hdr = malloc(hlen + 1)) == NULL) {
        set_err(err, errlen, "%s: npy header too large (%zu bytes)", path, hlen);
        goto out;
    }
    if (fread(hdr, 1, hlen, f) != hlen) {
        set_err(err, errlen, "%s: truncated npy header", path);
        goto out;
    }
    hdr[hlen] = 0;
    if (parse_header(hdr, a, path, err, errlen))
        goto out;
    size_t e = tpu_npy_elem_size(a->dtype), cnt = a->rows * a->cols;
    if (tpu_npy_alloc(a, a->dtype, a->ndim, a->rows, a->cols)) {
        set_err(err, errlen, "%s: out of memory for %zu x %zu array", path, a->rows, a->cols);
        goto out;
    }
    unsigned char *buf = malloc(cnt * e + 1);
    if (buf == NULL) {
        set_err(err, errlen, "%s: out of memory", path);
        goto out;
    }
    if (fread(buf, 1, cnt * e, f) != cnt * e) {
        set_err(err, errlen, "%s: truncated data: expected %zu bytes for shape %zu x %zu", path,
                cnt * e, a->rows, a->cols);
        free(buf);
        goto out;
    }
    for (size_t i = 0; i < cnt; i++) {
        if (e == 2)
            ((uint16_t *)a->data)[i] = (uint16_t)(buf[2 * i] | buf[2 * i + 1] << 8);
        else
            ((uint32_t *)a->data)[i] = (uint32_t)buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 |
                                       (uint32_t)buf[4 * i + 2] << 16 |
                                       (uint32_t)buf[4 * i + 3] << 24;
    }
    free(buf);
    rc = 0;
out:
    if (rc)
        tpu_npy_free(a);
    free(hdr);
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
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (tmp == NULL) {
        set_err(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(tmp, plen + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    fchmod(fd, 0644);
    FILE *f = fdopen(fd, "wb");
    if (f == NULL) {
        close(fd);
        unlink(tmp);
        set_err(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
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
    size_t e = tpu_npy_elem_size(a->dtype), cnt = a->rows * a->cols;
    for (size_t i = 0; i < cnt; i++) {
        uint32_t v = e == 2 ? ((const uint16_t *)a->data)[i] : ((const uint32_t *)a->data)[i];
        for (size_t b = 0; b < e; b++)
            fputc((int)((v >> (8 * b)) & 0xFF), f);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        set_err(err, errlen, "%s: write failed: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}
