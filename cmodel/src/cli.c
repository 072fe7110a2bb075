/* SPDX-License-Identifier: Apache-2.0 */
/* The tools' shared command line: numbers, limits, the option scanner, bounded input files
   and output files (tpu/cli.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tpu/cli.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- Numbers ---- */

int tpu_cli_dec_n(const char *s, size_t n, uint64_t *v)
{
    uint64_t x = 0;
    if (s == NULL || n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        x = x > (UINT64_MAX - d) / 10u ? UINT64_MAX : x * 10u + d;
    }
    *v = x;
    return 0;
}

int tpu_cli_num_n(const char *s, size_t n, uint64_t *v)
{
    if (s == NULL || n == 0)
        return -1;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        uint64_t x = 0;
        for (size_t i = 2; i < n; i++) {
            unsigned d;
            char c = s[i];
            if (c >= '0' && c <= '9')
                d = (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f')
                d = (unsigned)(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                d = (unsigned)(c - 'A' + 10);
            else
                return -1;
            if (x > (UINT64_MAX >> 4))
                return -1;
            x = x << 4 | d;
        }
        *v = x;
        return 0;
    }
    uint64_t x;
    if (tpu_cli_dec_n(s, n, &x) || x == UINT64_MAX)
        return -1; /* UINT64_MAX itself is never a legal value here */
    *v = x;
    return 0;
}

static int check_range(const char *opt, const char *val, int isnum, uint64_t x, uint64_t lo,
                       uint64_t hi, const char *what, uint64_t *out, char *err, size_t errlen)
{
    if (isnum && x >= lo && x <= hi) {
        *out = x;
        return 0;
    }
    set_err(err, errlen, "%s '%s' is %s (allowed: %llu..%llu)", opt, val ? val : "",
            isnum ? "out of range" : what, (unsigned long long)lo, (unsigned long long)hi);
    return -1;
}

int tpu_cli_count(const char *opt, const char *val, uint64_t lo, uint64_t hi, uint64_t *out,
                  char *err, size_t errlen)
{
    uint64_t x = 0;
    int ok = val != NULL && tpu_cli_dec_n(val, strlen(val), &x) == 0;
    if (!ok && val != NULL && val[0] == '-' && tpu_cli_dec_n(val + 1, strlen(val + 1), &x) == 0) {
        ok = 1; /* "-3" is a whole number, below any range */
        x = UINT64_MAX;
        if (hi == UINT64_MAX) {
            set_err(err, errlen, "%s '%s' is out of range (allowed: %llu..%llu)", opt, val,
                    (unsigned long long)lo, (unsigned long long)hi);
            return -1;
        }
    }
    return check_range(opt, val, ok, x, lo, hi, "not a whole number", out, err, errlen);
}

int tpu_cli_addr(const char *opt, const char *val, uint64_t lo, uint64_t hi, uint64_t *out,
                 char *err, size_t errlen)
{
    uint64_t x = 0;
    size_t n = val ? strlen(val) : 0;
    int ok = val != NULL && tpu_cli_num_n(val, n, &x) == 0;
    if (!ok && val != NULL && tpu_cli_dec_n(val, n, &x) == 0)
        ok = 1; /* all digits but too large: out of range */
    if (!ok && val != NULL && n > 2 && val[0] == '0' && (val[1] == 'x' || val[1] == 'X')) {
        size_t i = 2;
        while (i < n && strchr("0123456789abcdefABCDEF", val[i]) != NULL)
            i++;
        if (i == n) {
            ok = 1; /* hex digits, too many: out of range */
            x = UINT64_MAX;
        }
    }
    if (ok && x <= hi && x >= lo) {
        *out = x;
        return 0;
    }
    set_err(err, errlen, "%s '%s' is %s (allowed: decimal or 0x hex, %llu..0x%llx)", opt,
            val ? val : "", ok ? "out of range" : "not a number", (unsigned long long)lo,
            (unsigned long long)hi);
    return -1;
}

/* ---- Options ---- */

void tpu_cli_init(tpu_cli_t *p, int argc, char **argv, const tpu_cli_opt_t *opts)
{
    memset(p, 0, sizeof *p);
    p->argc = argc;
    p->argv = argv;
    p->i = 1;
    p->opts = opts;
}

void tpu_cli_allowed(const tpu_cli_opt_t *opts, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = 0;
    used = (size_t)snprintf(buf, len, "(allowed:");
    for (size_t k = 0; opts[k].name != NULL && used < len; k++) {
        int w;
        if (opts[k].short_name)
            w = snprintf(buf + used, len - used, "%s -%c/--%s%s", k ? "," : "",
                         opts[k].short_name, opts[k].name,
                         opts[k].flags & TPU_CLI_VALUE ? " X" : "");
        else
            w = snprintf(buf + used, len - used, "%s --%s%s", k ? "," : "", opts[k].name,
                         opts[k].flags & TPU_CLI_VALUE ? " X" : "");
        if (w < 0)
            return;
        used += (size_t)w;
    }
    if (used < len)
        snprintf(buf + used, len - used, ")");
}

int tpu_cli_next(tpu_cli_t *p, const char **name, const char **val, char *err, size_t errlen)
{
    *name = NULL;
    *val = NULL;
    if (p->i >= p->argc)
        return TPU_CLI_END;
    const char *a = p->argv[p->i++];
    if (p->dashdash || a[0] != '-' || a[1] == 0) {
        *val = a;
        return TPU_CLI_POSITIONAL;
    }
    if (!strcmp(a, "--")) {
        p->dashdash = 1;
        return tpu_cli_next(p, name, val, err, errlen);
    }
    const tpu_cli_opt_t *o = NULL;
    size_t k = 0;
    const char *inl = NULL; /* a value in the same argument */
    if (a[1] == '-') {
        const char *s = a + 2;
        size_t n = strcspn(s, "=");
        for (k = 0; p->opts[k].name; k++)
            if (strlen(p->opts[k].name) == n && !strncmp(p->opts[k].name, s, n)) {
                o = &p->opts[k];
                break;
            }
        if (o && s[n] == '=')
            inl = s + n + 1;
    } else {
        for (k = 0; p->opts[k].name; k++)
            if (p->opts[k].short_name == a[1]) {
                o = &p->opts[k];
                break;
            }
        if (o && a[2] != 0)
            inl = a + 2;
        if (o && inl && !(o->flags & TPU_CLI_VALUE))
            o = NULL; /* "-hx": not an option */
    }
    if (o == NULL) {
        char allowed[1024];
        tpu_cli_allowed(p->opts, allowed, sizeof allowed);
        set_err(err, errlen, "unknown option '%s' %s", a, allowed);
        return TPU_CLI_ERROR;
    }
    if (a[1] == '-')
        snprintf(p->name, sizeof p->name, "--%s", o->name);
    else
        snprintf(p->name, sizeof p->name, "-%c", o->short_name);
    *name = p->name;
    if (o->flags & TPU_CLI_VALUE) {
        if (inl == NULL) {
            if (p->i >= p->argc) {
                set_err(err, errlen, "option '%s' needs a value", p->name);
                return TPU_CLI_ERROR;
            }
            inl = p->argv[p->i++];
        }
    } else if (inl != NULL) {
        set_err(err, errlen, "option '%s' takes no value (got '%s')", p->name, a);
        return TPU_CLI_ERROR;
    }
    if (k < TPU_CLI_MAX_OPTS && !(o->flags & TPU_CLI_MULTI)) {
        if (p->seen[k]) {
            set_err(err, errlen, "option '%s' given twice%s%s%s, expected once", p->name,
                    inl ? " (again '" : "", inl ? inl : "", inl ? "')" : "");
            return TPU_CLI_ERROR;
        }
        p->seen[k] = 1;
    }
    *val = inl;
    return o->id;
}

/* ---- Bounded input ---- */

int tpu_file_read(const char *path, size_t max, const char *what, char **buf, size_t *len,
                  char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        set_err(err, errlen, "%s: cannot read: %s", path, strerror(EISDIR));
        return -1;
    }
    size_t cap = 4096, n = 0;
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < (uint64_t)max)
        cap = (size_t)st.st_size + 2;
    char *b = malloc(cap);
    int rc = -1;
    if (b == NULL) {
        set_err(err, errlen, "%s: out of memory", path);
        goto out;
    }
    for (;;) {
        if (n + 1 >= cap) {
            size_t nc = cap * 2;
            if (nc > max + 2)
                nc = max + 2;
            if (nc <= cap) {
                set_err(err, errlen, "%s: larger than %zu bytes, expected %s", path, max, what);
                goto out;
            }
            char *q = realloc(b, nc);
            if (q == NULL) {
                set_err(err, errlen, "%s: out of memory", path);
                goto out;
            }
            b = q;
            cap = nc;
        }
        size_t k = fread(b + n, 1, cap - n - 1, f);
        n += k;
        if (n > max) {
            set_err(err, errlen, "%s: larger than %zu bytes, expected %s", path, max, what);
            goto out;
        }
        if (k == 0)
            break;
    }
    if (ferror(f)) {
        set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
        goto out;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    b = NULL;
    rc = 0;
out:
    free(b);
    fclose(f);
    return rc;
}

long tpu_file_getline(char **buf, size_t *cap, FILE *f, size_t max)
{
    size_t n = 0;
    int c;
    for (;;) {
        c = getc(f);
        if (c == EOF)
            break;
        if (n + 2 > *cap) {
            size_t nc = *cap ? *cap * 2 : 128;
            char *q = realloc(*buf, nc);
            if (q == NULL)
                return -1;
            *buf = q;
            *cap = nc;
        }
        (*buf)[n++] = (char)c;
        if (c == '\n')
            break;
        if (n > max)
            return -2;
    }
    if (n == 0)
        return -1;
    (*buf)[n] = 0;
    return (long)n;
}

/* ---- Output files ---- */

/* ---- Temporaries registered for the signal handler ---- */
#define LIVE_TMP_MAX 64
static char *volatile live_tmp[LIVE_TMP_MAX];

/* internal: adds (on = 1) or removes (on = 0) t from the registry, the signals blocked meanwhile */
static void live_tmp_set(char *t, int on)
{
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    for (int i = 0; i < LIVE_TMP_MAX; i++) {
        if (on ? live_tmp[i] == NULL : live_tmp[i] == t) {
            live_tmp[i] = on ? t : NULL;
            break;
        }
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static void live_tmp_handler(int sig)
{
    for (int i = 0; i < LIVE_TMP_MAX; i++)
        if (live_tmp[i])
            unlink(live_tmp[i]); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

void tpu_out_clean_on_signals(void)
{
    static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = live_tmp_handler;
        sigemptyset(&sa.sa_mask);
        /* a signal the caller's parent ignores (nohup) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

void tpu_out_abort(tpu_out_t *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp) {
        unlink(o->tmp);
        live_tmp_set(o->tmp, 0);
    }
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

int tpu_out_open(tpu_out_t *o, const char *path, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    struct stat st;
    if (path == NULL || path[0] == 0) {
        set_err(err, errlen, "'': cannot write: empty path, expected a file name");
        return -1;
    }
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        o->path = realpath(path, NULL);
        if (o->path == NULL && errno == ENOENT) {
            /* a link to a file not yet there: create that file, as the shell's '>' does */
            char t[4096];
            ssize_t k = readlink(path, t, sizeof t - 1);
            if (k > 0) {
                t[k] = 0;
                const char *slash = strrchr(path, '/');
                size_t dl = t[0] == '/' || slash == NULL ? 0 : (size_t)(slash - path) + 1;
                o->path = malloc(dl + (size_t)k + 1);
                if (o->path) {
                    memcpy(o->path, path, dl);
                    memcpy(o->path + dl, t, (size_t)k + 1);
                }
            }
        }
        if (o->path == NULL) {
            set_err(err, errlen, "%s: cannot write: the symbolic link cannot be followed (%s)",
                    path, strerror(errno));
            return -1;
        }
    } else {
        o->path = strdup(path);
        if (o->path == NULL) {
            set_err(err, errlen, "%s: out of memory", path);
            return -1;
        }
    }
    int exists = stat(o->path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "%s: cannot write: %s, expected a file name", path,
                strerror(EISDIR));
        tpu_out_abort(o);
        return -1;
    }
    if (exists && !S_ISREG(st.st_mode)) {
        /* a device, FIFO or socket: written in place, never replaced */
        o->f = fopen(o->path, "wb");
        if (o->f == NULL) {
            set_err(err, errlen, "%s: cannot write: %s", path, strerror(errno));
            tpu_out_abort(o);
            return -1;
        }
        return 0;
    }
    size_t pl = strlen(o->path);
    o->tmp = malloc(pl + 16);
    if (o->tmp == NULL) {
        set_err(err, errlen, "%s: out of memory", path);
        tpu_out_abort(o);
        return -1;
    }
    snprintf(o->tmp, pl + 16, "%s.tmpXXXXXX", o->path);
    sigset_t all, oldmask;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &oldmask); /* registered before a signal can see it */
    int fd = mkstemp(o->tmp);
    if (fd >= 0)
        live_tmp_set(o->tmp, 1);
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        tpu_out_abort(o);
        return -1;
    }
    mode_t mode;
    if (exists) {
        mode = st.st_mode & 07777;
    } else {
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    fchmod(fd, mode);
    o->f = fdopen(fd, "wb");
    if (o->f == NULL) {
        set_err(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        close(fd);
        tpu_out_abort(o);
        return -1;
    }
    return 0;
}

int tpu_out_commit(tpu_out_t *o, char *err, size_t errlen)
{
    int bad = o->f == NULL || ferror(o->f);
    int e = bad ? (errno ? errno : EIO) : 0;
    if (o->f && fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (!bad && o->tmp && rename(o->tmp, o->path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        set_err(err, errlen, "%s: write failed: %s", o->path ? o->path : "?", strerror(e));
        tpu_out_abort(o);
        return -1;
    }
    live_tmp_set(o->tmp, 0);
    free(o->tmp);
    o->tmp = NULL;
    tpu_out_abort(o);
    return 0;
}

int tpu_file_write(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    tpu_out_t o;
    if (tpu_out_open(&o, path, err, errlen))
        return -1;
    if (len && fwrite(data, 1, len, o.f) != len) {
        set_err(err, errlen, "%s: write failed: %s", path, strerror(errno));
        tpu_out_abort(&o);
        return -1;
    }
    return tpu_out_commit(&o, err, errlen);
}

/* ---- Output paths checked before any work ---- */

char *tpu_path_trim(char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = 0;
    return path;
}

/* internal: the directory part of path ("." for a bare name, "/" for "/x"), in buf */
static void dir_of(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(buf, len, ".");
    else if (slash == path)
        snprintf(buf, len, "/");
    else
        snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

/* internal: 0 when the directory that would hold the new name path exists, else -1 and
   the reason in err */
static int parent_ok(const char *opt, const char *path, const char *allowed, char *err,
                     size_t errlen)
{
    char d[4096];
    struct stat st;
    dir_of(path, d, sizeof d);
    if (stat(d, &st) != 0) {
        set_err(err, errlen, "%s '%s': its directory '%s' does not exist %s", opt, path, d,
                allowed);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "%s '%s': '%s' is not a directory %s", opt, path, d, allowed);
        return -1;
    }
    if (access(d, W_OK | X_OK) != 0) {
        set_err(err, errlen, "%s '%s': cannot write in '%s': %s %s", opt, path, d,
                strerror(errno), allowed);
        return -1;
    }
    return 0;
}

#define ALLOWED_FILE "(allowed: a file name in an existing directory)"
#define PATH_CHECK_MAX 4096 /* the longest path checked, with its NUL (Linux's PATH_MAX) */

/* internal: -1 with the message when path is too long to check whole (the checks copy it:
   a shortened path is never checked in its place) */
static int too_long(const char *opt, const char *path, char *err, size_t errlen)
{
    size_t n = strlen(path);
    if (n < PATH_CHECK_MAX)
        return 0;
    set_err(err, errlen, "%s '%.60s...': a path of %zu bytes (allowed: at most %d)", opt, path,
            n, PATH_CHECK_MAX - 1);
    return -1;
}
#define ALLOWED_DIR "(allowed: an existing directory, or a new name in one)"

int tpu_out_check(const char *opt, const char *path, char *err, size_t errlen)
{
    struct stat st;
    size_t n = path ? strlen(path) : 0;
    if (n == 0) {
        set_err(err, errlen, "%s '': an empty path %s", opt, ALLOWED_FILE);
        return -1;
    }
    if (too_long(opt, path, err, errlen))
        return -1;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            set_err(err, errlen, "%s '%s': is a directory %s", opt, path, ALLOWED_FILE);
            return -1;
        }
        if (access(path, W_OK) != 0) {
            set_err(err, errlen, "%s '%s': cannot write it: %s %s", opt, path, strerror(errno),
                    ALLOWED_FILE);
            return -1;
        }
        if (!S_ISREG(st.st_mode))
            return 0; /* a device, FIFO or socket: written in place */
        char d[4096];
        char *real = realpath(path, NULL);
        dir_of(real ? real : path, d, sizeof d);
        free(real);
        if (access(d, W_OK | X_OK) != 0) { /* the temporary file goes beside it */
            set_err(err, errlen, "%s '%s': cannot write in '%s': %s %s", opt, path, d,
                    strerror(errno), ALLOWED_FILE);
            return -1;
        }
        return 0;
    }
    if (errno != ENOENT) {
        set_err(err, errlen, "%s '%s': %s %s", opt, path, strerror(errno), ALLOWED_FILE);
        return -1;
    }
    if (path[n - 1] == '/') {
        set_err(err, errlen, "%s '%s': names a directory %s", opt, path, ALLOWED_FILE);
        return -1;
    }
    struct stat lst;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        /* a link to a file not yet there: the file it names is created */
        char t[4096], full[8192], d[4096];
        ssize_t k = readlink(path, t, sizeof t - 1);
        if (k <= 0 || (size_t)k >= sizeof t - 1) {
            set_err(err, errlen, "%s '%s': the link cannot be read %s", opt, path, ALLOWED_FILE);
            return -1;
        }
        t[k] = 0;
        dir_of(path, d, sizeof d);
        int fl = snprintf(full, sizeof full, "%s%s%s", t[0] == '/' ? "" : d,
                          t[0] == '/' ? "" : "/", t);
        if (fl < 0 || fl >= PATH_CHECK_MAX) {
            set_err(err, errlen, "%s '%s': the file its link names has a path over %d bytes",
                    opt, path, PATH_CHECK_MAX - 1);
            return -1;
        }
        return parent_ok(opt, full, ALLOWED_FILE, err, errlen);
    }
    return parent_ok(opt, path, ALLOWED_FILE, err, errlen);
}

int tpu_outdir_check(const char *opt, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (path == NULL || path[0] == 0) {
        set_err(err, errlen, "%s '': an empty path %s", opt, ALLOWED_DIR);
        return -1;
    }
    if (too_long(opt, path, err, errlen))
        return -1;
    if (stat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            set_err(err, errlen, "%s '%s': exists and is not a directory %s", opt, path,
                    ALLOWED_DIR);
            return -1;
        }
        if (access(path, W_OK | X_OK) != 0) {
            set_err(err, errlen, "%s '%s': cannot write in it: %s %s", opt, path,
                    strerror(errno), ALLOWED_DIR);
            return -1;
        }
        return 0;
    }
    if (errno != ENOENT) {
        set_err(err, errlen, "%s '%s': %s %s", opt, path, strerror(errno), ALLOWED_DIR);
        return -1;
    }
    char t[4096];
    snprintf(t, sizeof t, "%s", path);
    tpu_path_trim(t);
    return parent_ok(opt, t, ALLOWED_DIR, err, errlen);
}

int tpu_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (a == NULL || b == NULL || stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int tpu_out_distinct(const char *opt, const char *out, const char *in_opt, const char *in,
                     char *err, size_t errlen)
{
    if (!tpu_same_file(out, in))
        return 0;
    set_err(err, errlen, "%s '%s' is the same file as %s '%s': refusing to overwrite an input",
            opt, out, in_opt, in);
    return -1;
}

int tpu_out_remove_stale(const char *path)
{
    char *real = realpath(path, NULL);
    const char *p = real ? real : path;
    char d[4096];
    dir_of(p, d, sizeof d);
    const char *slash = strrchr(p, '/');
    const char *base = slash ? slash + 1 : p;
    size_t bl = strlen(base);
    int removed = 0;
    DIR *dh = opendir(d);
    if (dh == NULL) {
        free(real);
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
        const char *nm = e->d_name;
        if (strncmp(nm, base, bl) != 0 || strncmp(nm + bl, ".tmp", 4) != 0 ||
            strlen(nm) != bl + 10)
            continue;
        int ok = 1;
        for (int i = 0; i < 6; i++) {
            char c = nm[bl + 4 + i];
            ok &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        }
        char full[8192];
        struct stat st;
        snprintf(full, sizeof full, "%s/%s", d, nm);
        if (ok && lstat(full, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
            unlink(full) == 0)
            removed++;
    }
    closedir(dh);
    free(real);
    return removed;
}
