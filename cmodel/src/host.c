/* SPDX-License-Identifier: Apache-2.0 */
/* The host side of a core job: the host memory image, the shared options --prog, --load,
   --dump, --dump-dir, --hostmem-mib, @FILE option files, and program loading (.s or .bin). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/asm.h"
#include "tpu/cli.h"
#include "tpu/host.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static char *dupn(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* internal: a decimal or 0x hex number filling all of [s, s+n) (tpu/cli.h); 0 or -1. */
static int parse_u64(const char *s, size_t n, uint64_t *v)
{
    return tpu_cli_num_n(s, n, v);
}

/* internal: the first byte past a dump's last element, addr + (rows-1)*stride + cols*e,
   exactly: 0, or -1 when it does not fit in 64 bits. */
static int dump_end(const tpu_host_dump_t *d, uint64_t *last)
{
    uint64_t e = tpu_npy_elem_size(d->dtype), r = (uint64_t)d->rows - 1u, span;
    if (d->rows == 0 || d->cols == 0)
        return -1;
    if (r != 0 && d->stride > UINT64_MAX / r)
        return -1;
    span = r * d->stride;
    uint64_t row = (uint64_t)d->cols * e; /* cols <= 2^24: no overflow */
    if (span > UINT64_MAX - row || d->addr > UINT64_MAX - (span + row))
        return -1;
    *last = d->addr + span + row;
    return 0;
}

void tpu_host_init(tpu_host_t *h)
{
    memset(h, 0, sizeof *h);
    h->mib = TPU_HOST_DEFAULT_MIB;
}

void tpu_host_free(tpu_host_t *h)
{
    for (size_t i = 0; i < h->nloads; i++)
        free(h->loads[i].path);
    for (size_t i = 0; i < h->ndumps; i++)
        free(h->dumps[i].path);
    free(h->loads);
    free(h->dumps);
    free(h->mem);
    free(h->prog_path);
    free(h->dump_dir);
    memset(h, 0, sizeof *h);
}

static const char *const host_opts[] = { "prog", "load", "dump", "dump-dir", "hostmem-mib" };

static const char *strip_dashes(const char *s)
{
    if (s[0] == '-' && s[1] == '-')
        return s + 2;
    return s;
}

int tpu_host_is_option(const char *name)
{
    const char *s = strip_dashes(name);
    size_t n = strcspn(s, "=");
    for (size_t i = 0; i < sizeof host_opts / sizeof host_opts[0]; i++)
        if (strlen(host_opts[i]) == n && !strncmp(s, host_opts[i], n))
            return 1;
    return 0;
}

static int add_load(tpu_host_t *h, const char *arg, char *err, size_t errlen)
{
    const char *eq = strchr(arg, '=');
    uint64_t addr;
    if (eq == NULL || eq[1] == 0 || parse_u64(arg, (size_t)(eq - arg), &addr)) {
        set_err(err, errlen, "--load '%s': bad argument, expected ADDR=FILE.npy (ADDR decimal or "
                "0x hex)", arg);
        return -1;
    }
    tpu_host_load_t *p = realloc(h->loads, (h->nloads + 1) * sizeof *p);
    if (p == NULL || (p[h->nloads].path = dupn(eq + 1, strlen(eq + 1))) == NULL) {
        if (p)
            h->loads = p;
        set_err(err, errlen, "--load: out of memory");
        return -1;
    }
    h->loads = p;
    h->loads[h->nloads++].addr = addr;
    return 0;
}

static int add_dump(tpu_host_t *h, const char *arg, char *err, size_t errlen)
{
    const char *eq = strchr(arg, '=');
    tpu_host_dump_t d;
    memset(&d, 0, sizeof d);
#define DUMP_FORM "expected ADDR=FILE.npy:DTYPE:ROWSxCOLS[:STRIDE], DTYPE bf16 or f32"
    if (eq == NULL || parse_u64(arg, (size_t)(eq - arg), &d.addr)) {
        set_err(err, errlen, "--dump '%s': bad address, " DUMP_FORM, arg);
        return -1;
    }
    const char *rest = eq + 1;
    /* from the right: :DTYPE:ROWSxCOLS or :DTYPE:ROWSxCOLS:STRIDE; the file is what is left
       (it may hold ':'). Segment k counts from the right, seg[k] its first char. */
    const char *seg[4] = { NULL, NULL, NULL, NULL };
    const char *end = rest + strlen(rest);
    int nseg = 0;
    for (const char *p = end; p > rest && nseg < 4; p--)
        if (p[-1] == ':')
            seg[nseg++] = p;
    if (nseg < 2) {
        set_err(err, errlen, "--dump '%s': no ':DTYPE:ROWSxCOLS', " DUMP_FORM, arg);
        return -1;
    }
    /* with a stride, the dtype is segment 2; else segment 1 */
    int has_stride = 0;
    char dt[16];
    {
        /* segment 1 (between the last two colons) a dtype name: no stride */
        size_t l1 = (size_t)(seg[0] - 1 - seg[1]);
        if (l1 < sizeof dt) {
            memcpy(dt, seg[1], l1);
            dt[l1] = 0;
        } else {
            dt[0] = 0;
        }
        tpu_npy_dtype_t t;
        has_stride = tpu_npy_parse_dtype(dt, &t) != 0;
    }
    if (has_stride && nseg < 3) {
        set_err(err, errlen, "--dump '%s': unknown dtype '%s', " DUMP_FORM, arg, dt);
        return -1;
    }
    const char *cd = seg[has_stride ? 2 : 1];            /* dtype */
    const char *shape = seg[has_stride ? 1 : 0];
    const char *shape_end = has_stride ? seg[0] - 1 : end;
    const char *stride_s = has_stride ? seg[0] : NULL;
    const char *c1 = shape - 1;                          /* the colon after the dtype */
    size_t dtl = (size_t)(c1 - cd);
    if (dtl >= sizeof dt) {
        set_err(err, errlen, "--dump '%s': unknown dtype, " DUMP_FORM, arg);
        return -1;
    }
    memcpy(dt, cd, dtl);
    dt[dtl] = 0;
    if (tpu_npy_parse_dtype(dt, &d.dtype) || d.dtype == TPU_NPY_U4) {
        set_err(err, errlen, "--dump '%s': unknown dtype '%s', " DUMP_FORM, arg, dt);
        return -1;
    }
    const char *x = memchr(shape, 'x', (size_t)(shape_end - shape));
    uint64_t rows, cols;
    if (x == NULL || parse_u64(shape, (size_t)(x - shape), &rows) ||
        parse_u64(x + 1, (size_t)(shape_end - x - 1), &cols) || rows == 0 || cols == 0 ||
        rows > (1u << 24) || cols > (1u << 24)) {
        set_err(err, errlen, "--dump '%s': bad shape '%.*s', expected ROWSxCOLS with 1 .. 2^24 "
                "each", arg, (int)(shape_end - shape), shape);
        return -1;
    }
    d.rows = (size_t)rows;
    d.cols = (size_t)cols;
    d.stride = cols * tpu_npy_elem_size(d.dtype);
    if (stride_s && parse_u64(stride_s, strlen(stride_s), &d.stride)) {
        set_err(err, errlen, "--dump '%s': bad stride '%s', expected a byte count (decimal or "
                "0x hex)", arg, stride_s);
        return -1;
    }
    uint64_t last;
    const uint64_t himage = (uint64_t)TPU_LIM_HOSTMEM_MIB_MAX << 20;
    if (dump_end(&d, &last) || last > himage ||
        (uint64_t)d.rows * d.cols * tpu_npy_elem_size(d.dtype) > himage) {
        set_err(err, errlen, "--dump '%s': the bytes from address 0x%llx to ADDR + (ROWS-1) * "
                "STRIDE + COLS * element size are outside the largest host memory (%u MiB), "
                "expected them inside --hostmem-mib", arg, (unsigned long long)d.addr,
                TPU_LIM_HOSTMEM_MIB_MAX);
        return -1;
    }
    /* rows that overlap would make the file larger than the memory it shows */
    if (d.rows > 1 && d.stride < (uint64_t)d.cols * tpu_npy_elem_size(d.dtype)) {
        set_err(err, errlen, "--dump '%s': stride %llu is less than a row (COLS x element size = "
                "%llu bytes): the rows would overlap, expected at least that", arg,
                (unsigned long long)d.stride,
                (unsigned long long)((uint64_t)d.cols * tpu_npy_elem_size(d.dtype)));
        return -1;
    }
    size_t fl = (size_t)(cd - 1 - rest);
    if (fl == 0) {
        set_err(err, errlen, "--dump '%s': empty file name, " DUMP_FORM, arg);
        return -1;
    }
    tpu_host_dump_t *p = realloc(h->dumps, (h->ndumps + 1) * sizeof *p);
    if (p == NULL || (d.path = dupn(rest, fl)) == NULL) {
        if (p)
            h->dumps = p;
        set_err(err, errlen, "--dump: out of memory");
        return -1;
    }
    h->dumps = p;
    h->dumps[h->ndumps++] = d;
    return 0;
}

int tpu_host_add_option(tpu_host_t *h, const char *opt, const char *arg, char *err,
                        size_t errlen)
{
    const char *s = strip_dashes(opt);
    size_t n = strcspn(s, "=");
    if (!tpu_host_is_option(opt))
        return 1;
    if (s[n] == '=' && arg == NULL)
        arg = s + n + 1;
    if (arg == NULL) {
        set_err(err, errlen, "--%.*s: missing argument", (int)n, s);
        return -1;
    }
    if (!strncmp(s, "load", n))
        return add_load(h, arg, err, errlen);
    if (!strncmp(s, "dump", n))
        return add_dump(h, arg, err, errlen);
    if (!strncmp(s, "prog", n) || !strncmp(s, "dump-dir", n)) {
        char **dst = s[0] == 'p' ? &h->prog_path : &h->dump_dir;
        if (*dst != NULL) {
            set_err(err, errlen, "--%.*s '%s': given twice, expected once", (int)n, s, arg);
            return -1;
        }
        if (arg[0] == 0) {
            set_err(err, errlen, "--%.*s: empty argument, expected a path", (int)n, s);
            return -1;
        }
        if ((*dst = dupn(arg, strlen(arg))) == NULL) {
            set_err(err, errlen, "out of memory");
            return -1;
        }
        return 0;
    }
    /* hostmem-mib */
    uint64_t m;
    if (tpu_cli_count("--hostmem-mib", arg, 1, TPU_LIM_HOSTMEM_MIB_MAX, &m, err, errlen))
        return -1;
    if (h->mib_given) {
        set_err(err, errlen, "option '--hostmem-mib' given twice (again '%s'), expected once",
                arg);
        return -1;
    }
    if (h->mem != NULL) {
        set_err(err, errlen, "--hostmem-mib: the host image is already allocated");
        return -1;
    }
    h->mib = (unsigned)m;
    h->mib_given = 1;
    return 0;
}

int tpu_host_load_all(tpu_host_t *h, char *err, size_t errlen)
{
    if (h->mem == NULL) {
        h->size = (size_t)h->mib << 20;
        h->mem = calloc(h->size, 1);
        if (h->mem == NULL) {
            set_err(err, errlen, "host memory: cannot allocate %u MiB", h->mib);
            return -1;
        }
    }
    for (size_t i = 0; i < h->nloads; i++) {
        tpu_npy_t a;
        const tpu_host_load_t *l = &h->loads[i];
        if (tpu_npy_read(l->path, &a, err, errlen))
            return -1;
        size_t e = tpu_npy_elem_size(a.dtype), cnt = a.rows * a.cols;
        if (l->addr > h->size || cnt * e > h->size - l->addr) {
            set_err(err, errlen, "--load 0x%llx=%s: %zu bytes do not fit in the %zu-byte host "
                    "memory (--hostmem-mib)", (unsigned long long)l->addr, l->path, cnt * e,
                    h->size);
            tpu_npy_free(&a);
            return -1;
        }
        uint8_t *p = h->mem + l->addr;
        for (size_t j = 0; j < cnt; j++) {
            uint32_t v = e == 2 ? ((uint16_t *)a.data)[j] : ((uint32_t *)a.data)[j];
            for (size_t b = 0; b < e; b++)
                p[j * e + b] = (uint8_t)(v >> (8 * b));
        }
        tpu_npy_free(&a);
    }
    return 0;
}

int tpu_host_dump_all(const tpu_host_t *h, char *err, size_t errlen)
{
    for (size_t i = 0; i < h->ndumps; i++) {
        const tpu_host_dump_t *d = &h->dumps[i];
        size_t e = tpu_npy_elem_size(d->dtype);
        uint64_t last = 0;
        if (h->mem == NULL || dump_end(d, &last) || last > h->size) {
            set_err(err, errlen, "--dump 0x%llx=%s: bytes up to 0x%llx are outside the %zu-byte "
                    "host memory", (unsigned long long)d->addr, d->path,
                    (unsigned long long)last, h->size);
            return -1;
        }
        tpu_npy_t a;
        if (tpu_npy_alloc(&a, d->dtype, 2, d->rows, d->cols)) {
            set_err(err, errlen, "--dump %s: out of memory", d->path);
            return -1;
        }
        for (size_t r = 0; r < d->rows; r++)
            for (size_t c = 0; c < d->cols; c++) {
                const uint8_t *p = h->mem + d->addr + r * d->stride + c * e;
                uint32_t v = 0;
                for (size_t b = 0; b < e; b++)
                    v |= (uint32_t)p[b] << (8 * b);
                if (e == 2)
                    ((uint16_t *)a.data)[r * d->cols + c] = (uint16_t)v;
                else
                    ((uint32_t *)a.data)[r * d->cols + c] = v;
            }
        char *path = d->path;
        if (h->dump_dir) {
            const char *base = strrchr(d->path, '/');
            base = base ? base + 1 : d->path;
            size_t len = strlen(h->dump_dir) + strlen(base) + 2;
            path = malloc(len);
            if (path == NULL) {
                tpu_npy_free(&a);
                set_err(err, errlen, "--dump %s: out of memory", d->path);
                return -1;
            }
            snprintf(path, len, "%s/%s", h->dump_dir, base);
        }
        int rc = tpu_npy_write(path, &a, err, errlen);
        if (path != d->path)
            free(path);
        tpu_npy_free(&a);
        if (rc)
            return -1;
    }
    return 0;
}

/* internal: the whole file, NUL-terminated, at most max bytes; NULL with a message. */
static char *read_file(const char *path, size_t max, const char *what, size_t *len, char *err,
                       size_t errlen)
{
    char *buf;
    if (tpu_file_read(path, max, what, &buf, len, err, errlen))
        return NULL;
    return buf;
}

int tpu_load_program(const char *path, unsigned n_mxu, tpu_insn_t **prog, size_t *count,
                     char *err, size_t errlen)
{
    size_t len;
    *prog = NULL;
    *count = 0;
    size_t pl = strlen(path);
    int is_asm = pl >= 2 && !strcmp(path + pl - 2, ".s");
    char *buf = is_asm ? read_file(path, TPU_LIM_ASM_BYTES_MAX, "an assembly source", &len, err,
                                   errlen)
                       : read_file(path, TPU_LIM_PROG_BYTES_MAX, "a binary program of at most "
                                   "32768 16-byte instructions (IMEM)", &len, err, errlen);
    if (buf == NULL)
        return -1;
    if (is_asm) {
        char *msgs = NULL;
        int rc = tpu_asm_len(buf, len, path, n_mxu, prog, count, &msgs);
        free(buf);
        if (rc != 0) {
            if (rc < 0 || msgs == NULL)
                set_err(err, errlen, "%s: out of memory", path);
            else {
                size_t ml = strlen(msgs);
                if (ml && msgs[ml - 1] == '\n')
                    msgs[ml - 1] = 0;
                set_err(err, errlen, "%s", msgs);
            }
            free(msgs);
            return -1;
        }
        free(msgs);
        return 0;
    }
    if (len % TPU_INSN_BYTES != 0) {
        set_err(err, errlen, "%s: size %zu bytes is not a multiple of 16 (a binary program is "
                "16-byte instructions; assembly must end in .s)", path, len);
        free(buf);
        return -1;
    }
    *count = len / TPU_INSN_BYTES;
    *prog = malloc((*count ? *count : 1) * sizeof **prog);
    if (*prog == NULL) {
        free(buf);
        set_err(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (size_t i = 0; i < *count; i++)
        (*prog)[i] = tpu_insn_from_bytes((const uint8_t *)buf + TPU_INSN_BYTES * i);
    free(buf);
    return 0;
}

/* internal: argument with a relative path made relative to dir (the @FILE's folder), for the
   path-taking host options; otherwise a copy. */
static char *rebase(const char *opt, const char *arg, const char *dir, size_t dirlen)
{
    const char *s = strip_dashes(opt);
    size_t n = strcspn(s, "=");
    size_t pre = 0;
    if (dirlen == 0 || arg == NULL)
        return arg ? dupn(arg, strlen(arg)) : NULL;
    if ((n == 4 && !strncmp(s, "load", 4)) || (n == 4 && !strncmp(s, "dump", 4))) {
        const char *eq = strchr(arg, '=');
        if (eq == NULL)
            return dupn(arg, strlen(arg));
        pre = (size_t)(eq - arg) + 1;
    } else if (!((n == 4 && !strncmp(s, "prog", 4)) || (n == 8 && !strncmp(s, "dump-dir", 8)))) {
        return dupn(arg, strlen(arg));
    }
    if (arg[pre] == '/' || arg[pre] == 0)
        return dupn(arg, strlen(arg));
    size_t al = strlen(arg);
    char *r = malloc(al + dirlen + 2);
    if (r == NULL)
        return NULL;
    memcpy(r, arg, pre);
    memcpy(r + pre, dir, dirlen);
    r[pre + dirlen] = '/';
    memcpy(r + pre + dirlen + 1, arg + pre, al - pre + 1);
    return r;
}

static int push(char ***v, int *n, int *cap, char *s)
{
    if (s == NULL)
        return -1;
    if (*n + 1 >= *cap) {
        int c = *cap ? *cap * 2 : 16;
        char **p = realloc(*v, (size_t)c * sizeof *p);
        if (p == NULL) {
            free(s);
            return -1;
        }
        *v = p;
        *cap = c;
    }
    (*v)[(*n)++] = s;
    (*v)[*n] = NULL;
    return 0;
}

int tpu_args_expand(int argc, char **argv, int *out_argc, char ***out_argv, char *err,
                    size_t errlen)
{
    char **v = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < argc; i++) {
        if (i == 0 || argv[i][0] != '@') {
            if (push(&v, &n, &cap, dupn(argv[i], strlen(argv[i]))))
                goto oom;
            continue;
        }
        const char *path = argv[i] + 1;
        size_t len;
        char *buf = read_file(path, TPU_LIM_ARGS_BYTES_MAX, "an option file (@FILE, one option "
                              "a line)", &len, err, errlen);
        if (buf == NULL) {
            if (err != NULL && errlen > 1) { /* "@FILE: reason": the argument as typed */
                memmove(err + 1, err, errlen - 1);
                err[0] = '@';
                err[errlen - 1] = 0;
            }
            tpu_args_free(n, v);
            return -1;
        }
        if (strlen(buf) != len) {
            set_err(err, errlen, "@%s: NUL byte at offset %zu, expected text (one option a line)",
                    path, strlen(buf));
            free(buf);
            tpu_args_free(n, v);
            return -1;
        }
        const char *slash = strrchr(path, '/');
        size_t dirlen = slash ? (size_t)(slash - path) : 0;
        if (slash == path)
            dirlen = 1;
        char *line = buf;
        while (line && *line) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = 0;
            char *s = line;
            line = nl ? nl + 1 : NULL;
            while (*s == ' ' || *s == '\t')
                s++;
            size_t l = strlen(s);
            while (l && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r'))
                s[--l] = 0;
            if (l == 0 || s[0] == '#')
                continue;
            char *arg = s + strcspn(s, " \t");
            if (*arg) {
                *arg++ = 0;
                while (*arg == ' ' || *arg == '\t')
                    arg++;
            } else {
                arg = NULL;
            }
            if (arg == NULL && strchr(s, '=') && s[0] == '-' && tpu_host_is_option(s)) {
                /* --opt=ARG form */
                char *eq = strchr(s, '=');
                *eq = 0;
                char *opt = dupn(s, strlen(s));
                char *a = rebase(s, eq + 1, path, dirlen);
                if (opt == NULL || a == NULL) {
                    free(opt);
                    free(a);
                    free(buf);
                    goto oom;
                }
                size_t ol = strlen(opt), al = strlen(a);
                char *joined = malloc(ol + al + 2);
                if (joined)
                    snprintf(joined, ol + al + 2, "%s=%s", opt, a);
                free(opt);
                free(a);
                if (push(&v, &n, &cap, joined)) {
                    free(buf);
                    goto oom;
                }
                continue;
            }
            if (push(&v, &n, &cap, dupn(s, strlen(s))) ||
                (arg && push(&v, &n, &cap, rebase(s, arg, path, dirlen)))) {
                free(buf);
                goto oom;
            }
        }
        free(buf);
    }
    if (v == NULL && push(&v, &n, &cap, dupn("", 0)) == 0) {
        free(v[0]);
        n = 0;
        v[0] = NULL;
    }
    *out_argc = n;
    *out_argv = v;
    return 0;
oom:
    tpu_args_free(n, v);
    set_err(err, errlen, "out of memory reading options");
    return -1;
}

void tpu_args_free(int argc, char **argv)
{
    if (argv == NULL)
        return;
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);
}

/* internal: one output against the inputs of h */
static int out_ok(const tpu_host_t *h, const char *opt, const char *out, int check, char *err,
                  size_t errlen)
{
    if (check && tpu_out_check(opt, out, err, errlen))
        return -1;
    if (h->prog_path && tpu_out_distinct(opt, out, "--prog", h->prog_path, err, errlen))
        return -1;
    for (size_t i = 0; i < h->nloads; i++)
        if (tpu_out_distinct(opt, out, "--load", h->loads[i].path, err, errlen))
            return -1;
    return 0;
}

int tpu_host_check_outputs(const tpu_host_t *h, const char *const *opts,
                           const char *const *outs, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        if (outs[i] && out_ok(h, opts[i], outs[i], 1, err, errlen))
            return -1;
    for (size_t i = 0; i < h->ndumps; i++)
        if (!h->dump_dir && out_ok(h, "--dump", h->dumps[i].path, 1, err, errlen))
            return -1;
    return 0;
}
