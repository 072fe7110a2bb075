/* SPDX-License-Identifier: Apache-2.0 */
/* Writing the output set into the output directory, all or nothing. */
#ifndef GEN_OUTDIR_H
#define GEN_OUTDIR_H

#include "emit.h"
#include "strbuf.h"

/* Writes every file of `out` into `dir`, except, when `cdir` is not NULL, the constraint
   files (gen_file.constraint), which go into `cdir`. The files are first written into a
   temporary directory per destination (inside it if it exists, else inside its parent, so
   that renames never cross file systems), both sets completely, and only then renamed into
   place; a new directory is its temporary directory renamed, so it appears complete or not
   at all. Each directory also gets GEN_MANIFEST, the list of the files written there; into
   an existing directory, the files its previous manifest lists that this run does not write
   are removed afterwards, and nothing else (no manifest of gen's: nothing). On failure the temporary directories are removed, a one-line reason (naming the
   option and the directory) is appended to `err` and -1 is returned. */
int gen_output_write(const struct gen_output *out, const char *dir, const char *cdir,
                     struct strbuf *err);

/* The path from directory `from` to directory `to` (either may not exist yet, but its parent
   must), as a prefix for file names: "" when they are the same directory, else ending in
   '/' ("../constraints/"). Symbolic links are resolved first, so the result depends only on
   where the directories are. malloc'd; NULL with a one-line reason in `err` on failure. */
char *gen_relative_dir(const char *from, const char *to, struct strbuf *err);

#endif
