/* SPDX-License-Identifier: Apache-2.0 */
#include "outdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

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

/* internal: removes the files of `out` that may be in `tmp`, then `tmp` itself */
static void remove_tmp(const struct gen_output *out, const char *tmp)
{
    for (size_t i = 0; i < out->count; i++) {
        char *p = path_join(tmp, out->files[i].name);
        if (p)
            unlink(p);
        free(p);
    }
    rmdir(tmp);
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

/* internal: appends "-o 'dir' <msg>" to err */
static void dir_error(struct strbuf *err, const char *dir, const char *msg, const char *what,
                      int errnum)
{
    sb_puts(err, "-o ");
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

int gen_output_write(const struct gen_output *out, const char *dir, struct strbuf *err)
{
    struct stat st;
    int exists;
    char *parent = NULL, *tmp = NULL;
    int rc = -1;

    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            dir_error(err, dir, "exists and is not a directory", NULL, 0);
            return -1;
        }
        exists = 1;
    } else if (errno == ENOENT) {
        exists = 0;
        parent = parent_of(dir);
        if (!parent) {
            dir_error(err, dir, "cannot be used", NULL, ENOMEM);
            return -1;
        }
        if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode)) {
            dir_error(err, dir, "cannot be created: no parent directory", parent, 0);
            goto done;
        }
    } else {
        dir_error(err, dir, "cannot be used", NULL, errno);
        return -1;
    }

    /* The temporary directory sits where the files will end up, so the renames stay on one
       file system: inside DIR if it exists, next to it otherwise. */
    tmp = path_join(exists ? dir : parent, ".gen-tmp-XXXXXX");
    if (!tmp) {
        dir_error(err, dir, "cannot be used", NULL, ENOMEM);
        goto done;
    }
    if (!mkdtemp(tmp)) {
        dir_error(err, dir, "is not writable: cannot create a directory in",
                  exists ? dir : parent, errno);
        free(tmp);
        tmp = NULL;
        goto done;
    }

    for (size_t i = 0; i < out->count; i++) {
        char *p = path_join(tmp, out->files[i].name);
        int ok = p && write_file(p, &out->files[i].text) == 0;
        int e = p ? errno : ENOMEM;
        free(p);
        if (!ok) {
            dir_error(err, dir, "is not writable: cannot write", out->files[i].name, e);
            goto fail;
        }
    }

    if (!exists) {
        /* mkdtemp made it 0700; give the new DIR the mode mkdir would have given it. */
        mode_t mask = umask(0);
        umask(mask);
        if (chmod(tmp, 0777 & ~mask) != 0 || rename(tmp, dir) != 0) {
            dir_error(err, dir, "cannot be created", NULL, errno);
            goto fail;
        }
        rc = 0;
        goto done;
    }

    /* DIR exists: refuse before touching anything if a target name is a directory, the one
       case in which a rename into place could fail after others succeeded. */
    for (size_t i = 0; i < out->count; i++) {
        char *p = path_join(dir, out->files[i].name);
        int isdir = p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
        free(p);
        if (!p || isdir) {
            dir_error(err, dir, "has a directory where a file must go:", out->files[i].name,
                      p ? 0 : ENOMEM);
            goto fail;
        }
    }
    for (size_t i = 0; i < out->count; i++) {
        char *from = path_join(tmp, out->files[i].name);
        char *to = path_join(dir, out->files[i].name);
        int ok = from && to && rename(from, to) == 0;
        int e = (from && to) ? errno : ENOMEM;
        free(from);
        free(to);
        if (!ok) {
            dir_error(err, dir, "is not writable: cannot rename into it", out->files[i].name, e);
            goto fail;
        }
    }
    rmdir(tmp);
    rc = 0;
    goto done;

fail:
    remove_tmp(out, tmp);
done:
    free(tmp);
    free(parent);
    return rc;
}
