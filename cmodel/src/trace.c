/* SPDX-License-Identifier: Apache-2.0 */
/* Trace writer (docs/trace.md). Records are formatted by hand into one line buffer: an
   N = 256 record is 2.3 kB and a co-simulation writes one per output vector. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tpu/trace.h"

struct tpu_trace {
    FILE *f;
    int err;          /* a write failed since the open */
    uint64_t records; /* records written */
    char *line;       /* record buffer */
    size_t line_cap;
    char *iobuf;      /* stdio buffer */
};

/* internal: writes a decimal number, returns the end */
static char *tpu_i_put_dec(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

/* internal: writes 8 lowercase hex digits, returns the end */
static char *tpu_i_put_hex8(char *p, uint32_t v)
{
    static const char digits[] = "0123456789abcdef";
    for (int s = 28; s >= 0; s -= 4)
        *p++ = digits[(v >> s) & 0xFu];
    return p;
}

tpu_trace_t *tpu_trace_open(const char *path, const char *tool)
{
    if (path == NULL || tool == NULL) {
        errno = EINVAL;
        return NULL;
    }
    tpu_trace_t *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->f = fopen(path, "w");
    if (t->f == NULL) {
        int e = errno;
        free(t);
        errno = e;
        return NULL;
    }
    t->iobuf = malloc(1u << 20);
    if (t->iobuf != NULL)
        setvbuf(t->f, t->iobuf, _IOFBF, 1u << 20);
    if (fprintf(t->f, "# tpu-trace %d\n# tool %s\n", TPU_TRACE_VERSION, tool) < 0)
        t->err = 1;
    return t;
}

int tpu_trace_comment(tpu_trace_t *t, const char *key, const char *fmt, ...)
{
    if (t == NULL || key == NULL || fmt == NULL || key[0] == '\0' || strpbrk(key, " \t\n"))
        return TPU_EINVAL;
    va_list ap;
    va_start(ap, fmt);
    int bad = fprintf(t->f, "# %s ", key) < 0;
    bad |= vfprintf(t->f, fmt, ap) < 0;
    bad |= fputc('\n', t->f) == EOF;
    va_end(ap);
    if (bad)
        t->err = 1;
    return bad ? TPU_EIO : TPU_OK;
}

int tpu_trace_mxu_params(tpu_trace_t *t, unsigned n, size_t m, size_t k, size_t nprime,
                         uint64_t latency, uint64_t busy)
{
    int rc = tpu_trace_comment(t, "unit", "mxu");
    if (rc != TPU_OK)
        return rc;
    return tpu_trace_comment(t, "params",
                             "n=%u m=%zu k=%zu nprime=%zu latency=%" PRIu64 " busy=%" PRIu64, n,
                             m, k, nprime, latency, busy);
}

int tpu_trace_mxu(tpu_trace_t *t, uint64_t cycle, size_t tile, size_t kt, size_t nt,
                  size_t row, unsigned n, const fp32_t *v)
{
    if (t == NULL || (v == NULL && n != 0))
        return TPU_EINVAL;
    size_t need = 5 * 21 + 8 + (size_t)n * 9 + 2;
    if (need > t->line_cap) {
        char *p = realloc(t->line, need);
        if (p == NULL)
            return TPU_ENOMEM;
        t->line = p;
        t->line_cap = need;
    }
    char *p = t->line;
    p = tpu_i_put_dec(p, cycle);
    memcpy(p, " mxu ", 5);
    p += 5;
    p = tpu_i_put_dec(p, tile);
    *p++ = ' ';
    p = tpu_i_put_dec(p, kt);
    *p++ = ' ';
    p = tpu_i_put_dec(p, nt);
    *p++ = ' ';
    p = tpu_i_put_dec(p, row);
    for (unsigned c = 0; c < n; c++) {
        *p++ = ' ';
        p = tpu_i_put_hex8(p, v[c].v);
    }
    *p++ = '\n';
    size_t len = (size_t)(p - t->line);
    if (fwrite(t->line, 1, len, t->f) != len) {
        t->err = 1;
        return TPU_EIO;
    }
    t->records++;
    return TPU_OK;
}

uint64_t tpu_trace_records(const tpu_trace_t *t)
{
    return t == NULL ? 0 : t->records;
}

int tpu_trace_close(tpu_trace_t *t)
{
    if (t == NULL)
        return TPU_OK;
    int err = t->err;
    if (fclose(t->f) != 0)
        err = 1;
    free(t->iobuf);
    free(t->line);
    free(t);
    return err ? TPU_EIO : TPU_OK;
}
