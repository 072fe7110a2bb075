/* SPDX-License-Identifier: Apache-2.0 */
/* One command line for every tool (gen, tpu-as, tpu-dis, tpu-run, tpu-board-run, tpu-mkprog
   and the sim harnesses; docs/isa.md "Command lines"): one number grammar, one set of limits,
   one option scanner (exact names, duplicates refused), bounded input files and one way of
   writing an output file.

   Numbers. A count or size (--mxu, --ub-rows, --imem-insns, --cores, ...) is decimal digits
   only: "010" is ten; no sign, no blank, no 0x, no suffix. An address, stride or seed (--load
   ADDR, --dump ADDR/STRIDE, --seed) is decimal or 0x hex. Every value is range-checked
   without wrapping (a value too large for 64 bits is out of range, never reduced).

   Options. "--name VALUE" or "--name=VALUE" for an option that takes a value, "--name" for a
   flag; a few tools have one-letter forms ("-o DIR", "-oDIR", "-h"). Names must be typed in
   full (no abbreviations). An option given twice is an error unless it is one of the
   repeatable ones (--load, --dump). "--" ends the options. @FILE (tpu/host.h,
   tpu_args_expand) is expanded before scanning by the tools that take it.

   Output files (tpu_out_open/commit/abort, tpu_file_write). A new path or an existing
   regular file is written to a temporary file in the same directory and renamed over the
   path only when everything is written (nothing half-written; an existing file keeps its
   permission bits). An existing path that is not a regular file -- a character or block
   device, a FIFO, a socket -- is written in place, never replaced (so "-o /dev/null" or a
   pipe work and the device stays a device). A symbolic link is followed: the file it points
   to is written by these rules and the link stays a link (a link to a missing file creates
   that file, as the shell's '>' does). A directory is an error. */
#ifndef TPU_CLI_H
#define TPU_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The limits every tool checks (gen's; the model accepts exactly what gen builds) ---- */
#define TPU_LIM_MXU_MIN 1u
#define TPU_LIM_MXU_MAX 256u
#define TPU_LIM_CORES_MAX 64u
#define TPU_LIM_PE_STAGES_MAX 3u
#define TPU_LIM_MEM_ROWS_MAX 65536u     /* UB, ACC, WMEM rows: 16-bit row fields */
#define TPU_LIM_IMEM_INSNS_MAX 32768u   /* the PC and ERR_PC fit 16 bits */
#define TPU_LIM_AXI_LATENCY_MAX 1000u
#define TPU_LIM_HOSTMEM_MIB_MAX 4096u
#define TPU_LIM_KIB_MAX 16777216u       /* --ub-kib etc., checked again as rows */
/* Input bounds: what a file can legally be. */
#define TPU_LIM_PROG_BYTES_MAX ((size_t)TPU_LIM_IMEM_INSNS_MAX * 16u) /* a binary program */
#define TPU_LIM_ASM_BYTES_MAX ((size_t)64u << 20)   /* an assembly source */
#define TPU_LIM_ARGS_BYTES_MAX ((size_t)1u << 20)   /* an @FILE of options */
#define TPU_LIM_TRACE_BYTES_MAX ((size_t)1u << 34)  /* a trace: 16 GiB, streamed */
/* The run-time bound of the model runners (--max-cycles; 0 = no bound). */
#define TPU_LIM_MAX_CYCLES_DEFAULT 100000000ull

/* ---- Numbers ---- */
/* The n characters at s as a count: decimal digits only. 0 and *v set (a value above
   UINT64_MAX saturates to UINT64_MAX), or -1 when it is not a whole number. */
int tpu_cli_dec_n(const char *s, size_t n, uint64_t *v);
/* The n characters at s as decimal or 0x hex; 0, or -1 (not a number, or above 2^64-1). */
int tpu_cli_num_n(const char *s, size_t n, uint64_t *v);
/* An option's value as a count in lo..hi: 0, or -1 with the one message every tool prints,
   "OPT 'VAL' is not a whole number (allowed: LO..HI)" or "... is out of range (allowed:
   LO..HI)", in err. */
int tpu_cli_count(const char *opt, const char *val, uint64_t lo, uint64_t hi, uint64_t *out,
                  char *err, size_t errlen);
/* The same for an address, stride or seed (decimal or 0x hex); the message says so. */
int tpu_cli_addr(const char *opt, const char *val, uint64_t lo, uint64_t hi, uint64_t *out,
                 char *err, size_t errlen);

/* ---- Options ---- */
#define TPU_CLI_VALUE 1u /* takes a value */
#define TPU_CLI_MULTI 2u /* may be given more than once */

typedef struct {
    const char *name;  /* without "--"; NULL ends the table */
    char short_name;   /* 'o' for "-o", or 0 */
    unsigned flags;    /* TPU_CLI_VALUE, TPU_CLI_MULTI */
    int id;            /* returned by tpu_cli_next, >= 0 */
} tpu_cli_opt_t;

#define TPU_CLI_END (-1)        /* no more arguments */
#define TPU_CLI_POSITIONAL (-2) /* *val is an argument that is not an option */
#define TPU_CLI_ERROR (-3)      /* a one-line message is in err */
#define TPU_CLI_MAX_OPTS 64

typedef struct {
    int argc;
    char **argv;
    int i;
    int dashdash; /* after "--": every argument is positional */
    const tpu_cli_opt_t *opts;
    unsigned char seen[TPU_CLI_MAX_OPTS];
    char name[80]; /* the option as "--name" or "-o", for messages */
} tpu_cli_t;

/* argv[0] is skipped. The table has at most TPU_CLI_MAX_OPTS entries. */
void tpu_cli_init(tpu_cli_t *p, int argc, char **argv, const tpu_cli_opt_t *opts);
/* The next argument: an option's id (*name its canonical spelling "--mxu"/"-o", *val its value
   or NULL for a flag), TPU_CLI_POSITIONAL (*val the argument), TPU_CLI_END, or TPU_CLI_ERROR
   with "unknown option '--mx' (...)", "option '--mxu' needs a value", "option '--help' takes
   no value (got '--help=1')" or "option '--mxu' given twice ('4', then '8'), expected once" in
   err. */
int tpu_cli_next(tpu_cli_t *p, const char **name, const char **val, char *err, size_t errlen);
/* "(allowed: --a, --b X, ...)" for messages: the table's options. */
void tpu_cli_allowed(const tpu_cli_opt_t *opts, char *buf, size_t len);

/* ---- Bounded input ---- */
/* The whole file, NUL-terminated (*len excludes the NUL); at most max bytes: a longer file
   (or a device that never ends) is an error "PATH: larger than MAX bytes, expected WHAT",
   read no further than max + 1 bytes. 0, or -1 with the reason in err (open and read errors
   name strerror: "PATH: cannot read: Is a directory"). */
int tpu_file_read(const char *path, size_t max, const char *what, char **buf, size_t *len,
                  char *err, size_t errlen);

/* One line of a text file into *buf (grown as getline does, NUL-terminated, the newline
   kept): its length, -1 at the end of the file or on a read error (ferror tells), or -2 when
   the line is longer than max bytes (then no more than max + 1 bytes were read). */
long tpu_file_getline(char **buf, size_t *cap, FILE *f, size_t max);
#define TPU_LIM_LINE_BYTES_MAX ((size_t)1u << 20) /* a line of a trace or an option file */

/* ---- Output files (the rules above) ---- */
typedef struct {
    FILE *f;       /* write here */
    char *path;    /* the file finally written (a symbolic link resolved) */
    char *tmp;     /* the temporary file, NULL when written in place */
} tpu_out_t;

/* 0 with o->f open for writing, or -1 with "PATH: cannot write: <reason>" in err. */
int tpu_out_open(tpu_out_t *o, const char *path, char *err, size_t errlen);
/* Closes; renames the temporary file into place. 0, or -1 (write error: nothing replaced). */
int tpu_out_commit(tpu_out_t *o, char *err, size_t errlen);
/* Closes and removes the temporary file (nothing replaced); safe after a failed open. */
void tpu_out_abort(tpu_out_t *o);
/* The whole file at once: open, write len bytes, commit. 0 or -1 with a message. */
int tpu_file_write(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* ---- Output paths checked before any work (every tool: the same rules, exit 2) ----
   A tool checks each output path when it parses its options, before it reads a model or runs
   anything, so that a bad path costs nothing and no output is half-made. */

/* "DIR/" (what tab completion writes) names DIR: removes trailing slashes in place ("/" and
   "//" stay "/"); returns path. */
char *tpu_path_trim(char *path);
/* An output file (tpu_out_open's rules): 0 when path is an existing regular file, device,
   FIFO or a link to one, or a new name in an existing directory; else -1 with "OPT 'PATH':
   <why> (allowed: a file name in an existing directory)" in err. A name ending in '/' is a
   directory, refused. */
int tpu_out_check(const char *opt, const char *path, char *err, size_t errlen);
/* An output directory a tool creates or fills: 0 when path (trailing slashes allowed) is an
   existing directory or a new name in an existing directory; else -1 with "OPT 'PATH': <why>
   (allowed: an existing directory, or a new name in one)". */
int tpu_outdir_check(const char *opt, const char *path, char *err, size_t errlen);
/* 1 when a and b name the same existing file (device and inode, links followed: another
   spelling, a hard or a symbolic link), else 0. */
int tpu_same_file(const char *a, const char *b);
/* An output that is one of the inputs: -1 with "OPT 'OUT' is the same file as IN_OPT 'IN':
   refusing to overwrite an input" in err when tpu_same_file(out, in), else 0. NULL paths are
   skipped. */
int tpu_out_distinct(const char *opt, const char *out, const char *in_opt, const char *in,
                     char *err, size_t errlen);

/* ---- Temporary files on an interrupt ----
   tpu_out_open's temporary files ("PATH.tmpXXXXXX") are registered while open. After
   tpu_out_clean_on_signals, SIGTERM, SIGINT and SIGHUP remove every registered temporary and
   then end the process by the same signal (its exit status says so, as before). A SIGKILL
   cannot be caught: tpu_out_remove_stale removes what a killed run left. */
void tpu_out_clean_on_signals(void);
/* Removes the temporaries of path an earlier, killed run left: regular files named
   "PATH.tmpXXXXXX" (six characters from mkstemp's alphabet) in path's directory, a link
   resolved as tpu_out_open resolves it. The number removed. */
int tpu_out_remove_stale(const char *path);

#ifdef __cplusplus
}
#endif

#endif
