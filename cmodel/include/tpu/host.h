/* SPDX-License-Identifier: Apache-2.0 */
/* The host side of a core job (docs/isa.md "Host memory and job options"): the host memory
   image the DMA reads and writes, and the options shared by the model runner (tpu-run) and
   the RTL harness (core_tb): --prog, --load, --dump, --dump-dir, --hostmem-mib, @FILE. */
#ifndef TPU_HOST_H
#define TPU_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "tpu/isa.h"
#include "tpu/npy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_HOST_DEFAULT_MIB 64u

typedef struct {
    uint64_t addr;
    char *path;
} tpu_host_load_t;

typedef struct {
    uint64_t addr;
    char *path;
    tpu_npy_dtype_t dtype; /* TPU_NPY_U2 (bf16) or TPU_NPY_F4 (f32) */
    size_t rows, cols;
    uint64_t stride;       /* bytes between rows */
} tpu_host_dump_t;

typedef struct {
    uint8_t *mem;          /* the image, bytes from host address 0; NULL before alloc */
    size_t size;           /* bytes */
    unsigned mib;          /* --hostmem-mib, default 64 */
    tpu_host_load_t *loads;
    size_t nloads;
    tpu_host_dump_t *dumps;
    size_t ndumps;
    char *prog_path;       /* --prog, NULL if not given */
    char *dump_dir;        /* --dump-dir, NULL if not given */
    int mib_given;         /* --hostmem-mib was given (a second one is refused) */
} tpu_host_t;

void tpu_host_init(tpu_host_t *h);
void tpu_host_free(tpu_host_t *h);

/* One option: opt is its name with or without the leading "--" ("load", "--dump", ...;
   also "--load=ARG" with arg NULL). Returns 0 when taken, 1 when opt is not a host option
   (nothing changed), -1 on a bad argument with a one-line message in err. Names:
     --prog FILE                      .bin or .s (see tpu_load_program)
     --load ADDR=FILE.npy             (several allowed)
     --dump ADDR=FILE.npy:DTYPE:ROWSxCOLS[:STRIDE]   DTYPE bf16|f32 (several allowed)
     --dump-dir DIR                   every dump is written to DIR/<basename of FILE>
     --hostmem-mib M                  1 .. 4096 */
int tpu_host_add_option(tpu_host_t *h, const char *opt, const char *arg, char *err,
                        size_t errlen);
/* 1 if name (with or without "--", without "=ARG") is a host option taking an argument. */
int tpu_host_is_option(const char *name);

/* Allocate the image (zeroed) if not yet and copy every --load file into it: 0 or -1 with a
   message (file errors, an array that does not fit in the image). */
int tpu_host_load_all(tpu_host_t *h, char *err, size_t errlen);
/* Write every --dump file from the image: 0 or -1 with a message. */
int tpu_host_dump_all(const tpu_host_t *h, char *err, size_t errlen);
/* Before a run: every output -- each --dump, and the n paths outs[i] of the options opts[i]
   (a trace; NULL entries skipped) -- can be written (tpu_out_check; a --dump into --dump-dir
   is checked when written) and is none of the inputs (--prog, each --load; device and inode).
   0, or -1 with one line in err. */
int tpu_host_check_outputs(const tpu_host_t *h, const char *const *opts,
                           const char *const *outs, size_t n, char *err, size_t errlen);

/* Load a program: a file ending in ".s" is assembled in-process (tpu_asm, with cols <= N
   checked when n_mxu > 0; the assembler's messages go to err, all lines), anything else is
   read as a binary (a multiple of 16 bytes). 0 or -1. *prog is malloc'd. */
int tpu_load_program(const char *path, unsigned n_mxu, tpu_insn_t **prog, size_t *count,
                     char *err, size_t errlen);

/* Expand @FILE arguments: each non-blank line of FILE not starting with '#' is one option,
   split at the first run of blanks into the option and its argument ("--load 0=a.npy" or
   "--load=0=a.npy"). argv[0] and other arguments are kept in place. *out_argv is malloc'd
   (free with tpu_args_free); 0 or -1 with a message. */
int tpu_args_expand(int argc, char **argv, int *out_argc, char ***out_argv, char *err,
                    size_t errlen);
void tpu_args_free(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
