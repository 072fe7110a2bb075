/* SPDX-License-Identifier: Apache-2.0 */
/* gen's hardware options, for the tools on the compiler (tpu-compile, tpu-train): one option
   table, one parser, gen's defaults and limits (tpu/config.h), so a program is built for
   exactly the hardware gen emits (hwopts.c). */
#ifndef TPUC_HWOPTS_H
#define TPUC_HWOPTS_H

#include <stddef.h>
#include <stdint.h>

#include "tpu/cli.h"
#include "tpuc/tpuc.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { TPUC_HWOPT_MXU = 1000, TPUC_HWOPT_UB, TPUC_HWOPT_ACC, TPUC_HWOPT_WM, TPUC_HWOPT_IMEM,
       TPUC_HWOPT_AXI, TPUC_HWOPT_CORES, TPUC_HWOPT_TOPO };

/* The entries of a tool's tpu_cli_opt_t table. */
#define TPUC_HW_CLI_OPTS                                   \
    {"mxu", 0, TPU_CLI_VALUE, TPUC_HWOPT_MXU},             \
    {"ub-kib", 0, TPU_CLI_VALUE, TPUC_HWOPT_UB},           \
    {"acc-kib", 0, TPU_CLI_VALUE, TPUC_HWOPT_ACC},         \
    {"wmem-kib", 0, TPU_CLI_VALUE, TPUC_HWOPT_WM},         \
    {"imem-insns", 0, TPU_CLI_VALUE, TPUC_HWOPT_IMEM},     \
    {"axi-data-bits", 0, TPU_CLI_VALUE, TPUC_HWOPT_AXI},   \
    {"cores", 0, TPU_CLI_VALUE, TPUC_HWOPT_CORES},         \
    {"topology", 0, TPU_CLI_VALUE, TPUC_HWOPT_TOPO}

/* Their --help lines. */
#define TPUC_HW_HELP                                                                        \
    "  --mxu N             MXU size, 1 .. 256 (default 128)\n"                              \
    "  --ub-kib K          unified buffer KiB (default 8N: 4096 rows)\n"                    \
    "  --acc-kib K         accumulators KiB (default 8N: 2048 rows)\n"                      \
    "  --wmem-kib K        weight memory KiB (default N*N/64: 8 tiles)\n"                   \
    "  --imem-insns I      instruction memory, 1 .. 32768 (default 1024)\n"                 \
    "  --axi-data-bits B   64, 128, 256 or 512 (default: smallest power of two >= 4N)\n"    \
    "  --cores C           cores on the board, 1 .. 64 (default 8, as gen)\n"               \
    "  --topology T        ring, torus, torus:RxS (as gen; default gen's for C)\n"

typedef struct {
    uint64_t n, ub_kib, acc_kib, wm_kib, imem, axi, cores; /* 0: gen's default */
    const char *topo;
} tpuc_hwopts_t;

void tpuc_hwopts_init(tpuc_hwopts_t *o);
/* One option from the table (id TPUC_HWOPT_*, name as typed, its value): 0, or -1 with a
   one-line message in err. */
int tpuc_hwopts_parse(tpuc_hwopts_t *o, int id, const char *name, const char *val, char *err,
                      size_t errlen);
/* The configuration: geometry, AXI width, cores and topology set in hw (other fields kept).
   0, or -1 with a one-line message (a memory size that gives no whole rows, a topology that
   does not fit the cores). */
int tpuc_hwopts_resolve(const tpuc_hwopts_t *o, tpuc_hw_t *hw, char *err, size_t errlen);

/* A real-number option (--lr, --momentum): finite, in [lo, hi], nothing after it. 0, or -1
   with "--NAME 'VAL': expected a number in [lo, hi]" in err. */
int tpuc_opt_real(const char *name, const char *val, double lo, double hi, double *out,
                  char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
