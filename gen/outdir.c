/* SPDX-License-Identifier: Apache-2.0 */
#define _XOPEN_SOURCE 700 /* realpath (XSI), strndup */
#include "outdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "tpu/cli.h"

#define ALLOWED_DIR "(allowed: an existing writable directory, or a new name in one)"

/* internal: the directory that holds `dir` ("." for a bare name); malloc'd, NULL if out of
   memory */
static char *parent_of(const char *dir)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') /* "out/" is "out" */
        len--;
    while (len > 0 && dir[len - 1] != '/') /* drop the last component */
        len--;
    if (len == 0)
        return strdup(".");
    while (len > 1 && dir[len - 1] == '/') /* "a//b" -> "a" */
        len--;
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, dir, len);
        p[len] = '\0';
    }
    return p;
}

/* internal: "<base>/<name>" in a malloc'd string, NULL if out of memory */
static char *path_join(const char *base, const char *name)
{
    size_t n = strlen(base) + 1 + strlen(name) + 1;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", base, name);
    return p;
}

/* internal: writes one file; 0 or -1 with errno set */
static int write_file(const char *path, const struct strbuf *text)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = text->len ? fwrite(text->data, 1, text->len, f) : 0;
    int werr = n != text->len ? errno : 0;
    if (fclose(f) != 0 && !werr)
        werr = errno ? errno : EIO;
    if (werr) {
        errno = werr;
        return -1;
    }
    return 0;
}

/* internal: appends "<opt> 'dir' <msg>" to err */
static void dir_error(struct strbuf *err, const char *opt, const char *dir, const char *msg,
                      const char *what, int errnum)
{
    sb_printf(err, "%s ", opt);
    sb_put_quoted(err, dir);
    sb_printf(err, " %s", msg);
    if (what) {
        sb_puts(err, " ");
        sb_put_quoted(err, what);
    }
    if (errnum)
        sb_printf(err, ": %s", strerror(errnum));
    sb_puts(err, " " ALLOWED_DIR);
}

/* internal: one output directory being written: the files of `out` whose `constraint` flag
   is `which` (or all of them when `which` is -1), first into the temporary directory `tmp`
   (stage_write), then renamed into `dir` (stage_commit) or removed (stage_abort) */
struct stage {
    const struct gen_output *out;
    int which;
    const char *opt; /* the option that named dir, for messages: "-o", "--constraints-dir" */
    const char *dir;
    int exists;
    char *parent;
    char *tmp;
    char **owned;  /* the files the previous run listed in dir's manifest (manifest_read) */
    size_t nowned;
};

/* internal: nonzero if file i of the stage's output goes into this directory */
static int stage_has(const struct stage *s, size_t i)
{
    return s->which < 0 || s->out->files[i].constraint == s->which;
}

/* internal: removes the stage's files from its temporary directory, then the directory */
static void stage_abort(struct stage *s)
{
    if (s->tmp) {
        for (size_t i = 0; i < s->out->count; i++) {
            char *p = stage_has(s, i) ? path_join(s->tmp, s->out->files[i].name) : NULL;
            if (p)
                unlink(p);
            free(p);
        }
        rmdir(s->tmp);
    }
    free(s->tmp);
    free(s->parent);
    s->tmp = s->parent = NULL;
    for (size_t i = 0; i < s->nowned; i++)
        free(s->owned[i]);
    free(s->owned);
    s->owned = NULL;
    s->nowned = 0;
}

/* internal: 1 if `name` is a file gen writes for some configuration: tpu.core, or tpu_*
   ending in .sv, .f, .vlt, .h, .xdc, .sdc or .pcf */
static int gen_file_name(const char *name)
{
    static const char *const ext[] = { ".sv", ".f", ".vlt", ".h", ".xdc", ".sdc", ".pcf" };
    size_t n = strlen(name);
    if (strcmp(name, "tpu.core") == 0)
        return 1;
    if (strncmp(name, "tpu_", 4) != 0)
        return 0;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t e = strlen(ext[i]);
        if (n > 4 + e && strcmp(name + n - e, ext[i]) == 0)
            return 1;
    }
    return 0;
}

/* The previous manifest is untrusted input: the largest one read (a real one is about 1 KiB),
   the longest name and the most names taken from it. Anything larger: not gen's, ignored. */
#define MANIFEST_BYTES_MAX ((size_t)64u << 10)
#define MANIFEST_NAME_MAX 255u
#define MANIFEST_NAMES_MAX (4u * GEN_MAX_FILES)

/* internal: 1 if a line of a manifest names a file gen may remove: a plain file name (no '/',
   not "." or "..", no control bytes) of gen's kind (gen_file_name), not the manifest */
static int manifest_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > MANIFEST_NAME_MAX || memchr(name, '/', len))
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return 0;
    char buf[MANIFEST_NAME_MAX + 1];
    memcpy(buf, name, len);
    buf[len] = '\0';
    return strcmp(buf, ".") != 0 && strcmp(buf, "..") != 0 && strcmp(buf, GEN_MANIFEST) != 0 &&
           gen_file_name(buf);
}

/* internal: appends one name to the stage's owned list; 0, or -1 when out of memory */
static int owned_add(struct stage *s, const char *name, size_t len)
{
    char **grown = realloc(s->owned, (s->nowned + 1) * sizeof *grown);
    if (!grown)
        return -1;
    s->owned = grown;
    if (!(s->owned[s->nowned] = strndup(name, len)))
        return -1;
    s->nowned++;
    return 0;
}

/* internal: reads DIR/GEN_MANIFEST, the previous run's list of the files it wrote there,
   into s->owned. Only a regular file of at most MANIFEST_BYTES_MAX bytes that starts with
   gen's header (its first two lines) counts; otherwise (missing, a user's file of that
   name, a link, too large, unreadable) the list stays empty and no file is removed as
   stale: when in doubt, keep. Lines that are not plain names of gen's kind are skipped. */
static void manifest_read(struct stage *s)
{
    static const char head[] = "# SPDX-License-Identifier: Apache-2.0\n"
                               "# generated by gen -- do not edit\n";
    char *path = path_join(s->dir, GEN_MANIFEST), *buf = NULL, err[256];
    size_t len = 0;
    struct stat st;
    if (!path || lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        tpu_file_read(path, MANIFEST_BYTES_MAX, "gen's manifest", &buf, &len, err,
                      sizeof err) != 0 ||
        len < sizeof head - 1 || memcmp(buf, head, sizeof head - 1) != 0) {
        free(path);
        free(buf);
        return;
    }
    for (size_t at = sizeof head - 1; at < len && s->nowned < MANIFEST_NAMES_MAX;) {
        const char *line = buf + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        if (line[0] != '#' && manifest_name_ok(line, n) && owned_add(s, line, n) != 0)
            break; /* out of memory: remove fewer, never more */
    }
    free(path);
    free(buf);
}

/* internal: checks the directory and writes the stage's files into a new temporary directory
   where they will end up (inside DIR if it exists, next to it otherwise, so that the renames
   stay on one file system); 0, or -1 with the reason in err and nothing left behind */
static int stage_write(struct stage *s, struct strbuf *err)
{
    struct stat st;
    s->tmp = s->parent = NULL;
    if (stat(s->dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            dir_error(err, s->opt, s->dir, "exists and is not a directory", NULL, 0);
            return -1;
        }
        s->exists = 1;
        manifest_read(s); /* before this run's manifest replaces it */
    } else if (errno == ENOENT) {
        s->exists = 0;
        s->parent = parent_of(s->dir);
        if (!s->parent) {
            dir_error(err, s->opt, s->dir, "cannot be used", NULL, ENOMEM);
            return -1;
        }
        if (stat(s->parent, &st) != 0 || !S_ISDIR(st.st_mode)) {
            dir_error(err, s->opt, s->dir, "cannot be created: no parent directory", s->parent, 0);
            goto fail;
        }
    } else {
        dir_error(err, s->opt, s->dir, "cannot be used", NULL, errno);
        return -1;
    }

    s->tmp = path_join(s->exists ? s->dir : s->parent, ".gen-tmp-XXXXXX");
    if (!s->tmp) {
        dir_error(err, s->opt, s->dir, "cannot be used", NULL, ENOMEM);
        goto fail;
    }
    if (!mkdtemp(s->tmp)) {
        dir_error(err, s->opt, s->dir, "is not writable: cannot create a directory in",
                  s->exists ? s->dir : s->parent, errno);
        free(s->tmp);
        s->tmp = NULL;
        goto fail;
    }
    for (size_t i = 0; i < s->out->count; i++) {
        if (!stage_has(s, i))
            continue;
        char *p = path_join(s->tmp, s->out->files[i].name);
        int ok = p && write_file(p, &s->out->files[i].text) == 0;
        int e = p ? errno : ENOMEM;
        free(p);
        if (!ok) {
            dir_error(err, s->opt, s->dir, "is not writable: cannot write", s->out->files[i].name, e);
            goto fail;
        }
    }
    if (s->exists) {
        /* Refuse before touching anything if a target name is a directory, the one case in
           which a rename into place could fail after others succeeded. */
        for (size_t i = 0; i < s->out->count; i++) {
            if (!stage_has(s, i))
                continue;
            char *p = path_join(s->dir, s->out->files[i].name);
            int isdir = p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
            free(p);
            if (!p || isdir) {
                dir_error(err, s->opt, s->dir, "has a directory where a file must go:",
                          s->out->files[i].name, p ? 0 : ENOMEM);
                goto fail;
            }
        }
    }
    return 0;
fail:
    stage_abort(s);
    return -1;
}

/* internal: 1 if a constraint file's name (.xdc, .sdc, .pcf) */
static int constraint_name(const char *name)
{
    size_t len = strlen(name);
    const char *ext = len > 4 ? name + len - 4 : "";
    return strcmp(ext, ".xdc") == 0 || strcmp(ext, ".sdc") == 0 || strcmp(ext, ".pcf") == 0;
}

/* internal: removes from the existing DIR the files the previous run listed in its manifest
   (s->owned) that this stage did not write (an earlier configuration's), so that gen's files
   in DIR are exactly this one's. Nothing else is touched: a user's files, even named like
   gen's (tpu_mine.sv), stay. Only regular files are removed (never a directory or a link),
   and in a constraints directory only constraint files: a manifest there may be that of a
   whole RTL directory used as --constraints-dir, whose other files this run does not own. */
static void stage_remove_stale(struct stage *s)
{
    for (size_t k = 0; k < s->nowned; k++) {
        const char *name = s->owned[k];
        if (s->which == 1 && !constraint_name(name))
            continue;
        int ours = 0;
        for (size_t i = 0; i < s->out->count && !ours; i++)
            ours = stage_has(s, i) && strcmp(s->out->files[i].name, name) == 0;
        if (ours)
            continue;
        char *p = path_join(s->dir, name);
        struct stat st;
        if (p && lstat(p, &st) == 0 && S_ISREG(st.st_mode))
            unlink(p);
        free(p);
    }
}

/* internal: moves the staged files into place: a new DIR is the temporary directory renamed
   (it appears complete or not at all), an existing one gets each file renamed into it */
static int stage_commit(struct stage *s, struct strbuf *err)
{
    if (!s->exists) {
        /* mkdtemp made it 0700; give the new DIR the mode mkdir would have given it. */
        mode_t mask = umask(0);
        umask(mask);
        if (chmod(s->tmp, 0777 & ~mask) != 0 || rename(s->tmp, s->dir) != 0) {
            dir_error(err, s->opt, s->dir, "cannot be created", NULL, errno);
            stage_abort(s);
            return -1;
        }
        free(s->tmp);
        s->tmp = NULL;
        stage_abort(s); /* frees parent */
        return 0;
    }
    for (size_t i = 0; i < s->out->count; i++) {
        if (!stage_has(s, i))
            continue;
        char *from = path_join(s->tmp, s->out->files[i].name);
        char *to = path_join(s->dir, s->out->files[i].name);
        int ok = from && to && rename(from, to) == 0;
        int e = (from && to) ? errno : ENOMEM;
        free(from);
        free(to);
        if (!ok) {
            dir_error(err, s->opt, s->dir, "is not writable: cannot rename into it",
                      s->out->files[i].name, e);
            stage_abort(s);
            return -1;
        }
    }
    stage_remove_stale(s);
    stage_abort(s); /* only the empty temporary directory is left */
    return 0;
}

int gen_output_write(const struct gen_output *out, const char *dir, const char *cdir,
                     struct strbuf *err)
{
    struct stage main_s = { out, cdir ? 0 : -1, "-o", dir, 0, NULL, NULL, NULL, 0 };
    struct stage cons_s = { out, 1, "--constraints-dir", cdir, 0, NULL, NULL, NULL, 0 };
    if (stage_write(&main_s, err) != 0)
        return -1;
    if (cdir && stage_write(&cons_s, err) != 0) {
        stage_abort(&main_s);
        return -1;
    }
    /* Both sets are written and checked; only renames are left. */
    if (cdir && stage_commit(&cons_s, err) != 0) {
        stage_abort(&main_s);
        return -1;
    }
    return stage_commit(&main_s, err);
}

/* internal: the absolute, symlink-free path `dir` will have: realpath of dir, or of its parent
   plus its last component when it does not exist yet; malloc'd, NULL if neither resolves */
static char *future_realpath(const char *dir)
{
    char *r = realpath(dir, NULL);
    if (r || errno != ENOENT)
        return r;
    char *parent = parent_of(dir);
    char *rp = parent ? realpath(parent, NULL) : NULL;
    free(parent);
    if (!rp)
        return NULL;
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    size_t b = len;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    size_t n = strlen(rp) + 1 + (len - b) + 1;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%.*s", strcmp(rp, "/") == 0 ? "" : rp, (int)(len - b), dir + b);
    free(rp);
    return p;
}

char *gen_relative_dir(const char *from, const char *to, struct strbuf *err)
{
    char *f = future_realpath(from);
    char *t = future_realpath(to);
    char *rel = NULL;
    if (!f || !t) {
        const char *bad = f ? to : from;
        char *parent = parent_of(bad);
        dir_error(err, f ? "--constraints-dir" : "-o", bad,
                  "cannot be resolved: no parent directory", parent, parent ? 0 : ENOMEM);
        free(parent);
        goto done;
    }
    /* the longest common prefix that ends at a path component boundary */
    size_t common = 0;
    for (size_t i = 0;; i++) {
        int fe = f[i] == '\0' || f[i] == '/', te = t[i] == '\0' || t[i] == '/';
        if (fe && te)
            common = i;
        if (f[i] != t[i] || f[i] == '\0')
            break;
    }
    size_t ups = 0;
    for (const char *c = f + common; *c; c++)
        if (*c == '/' && c[1] != '\0')
            ups++;
    const char *down = t + common;
    while (*down == '/')
        down++;
    size_t n = 3 * ups + strlen(down) + 2;
    rel = malloc(n);
    if (!rel) {
        dir_error(err, "--constraints-dir", to, "cannot be used", NULL, ENOMEM);
        goto done;
    }
    rel[0] = '\0';
    for (size_t i = 0; i < ups; i++)
        strcat(rel, "../");
    if (*down) {
        strcat(rel, down);
        strcat(rel, "/");
    }
done:
    free(f);
    free(t);
    return rel;
}
