/* SPDX-License-Identifier: Apache-2.0 */
/* Writing the output set into the output directory, all or nothing. */
#ifndef GEN_OUTDIR_H
#define GEN_OUTDIR_H

#include "emit.h"
#include "strbuf.h"

/* Writes every file of `out` into `dir`. The files are first written into a temporary
   directory (inside `dir` if it exists, else inside its parent, so that renames never cross
   file systems) and then renamed into place; a new `dir` is the temporary directory
   renamed, so it appears complete or not at all. On failure the temporary directory is
   removed, a one-line reason (naming `dir`) is appended to `err` and -1 is returned. */
int gen_output_write(const struct gen_output *out, const char *dir, struct strbuf *err);

#endif
