/* SPDX-License-Identifier: Apache-2.0 */
/* Trace writer shared by the C model and the co-simulation harness (docs/trace.md), so that
   both sides write byte-identical formats. Text, one record per line, lowercase hex. */
#ifndef TPU_TRACE_H
#define TPU_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include "tpu/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_TRACE_VERSION 1

/* An open trace file. Opaque: use the functions below. */
typedef struct tpu_trace tpu_trace_t;

/* Creates (truncates) `path` and writes the first two header lines:
   "# tpu-trace 1" and "# tool <tool>". Returns NULL if an argument is NULL, the file cannot
   be created or memory runs out (errno tells which). */
tpu_trace_t *tpu_trace_open(const char *path, const char *tool);

/* Writes one header/comment line "# <key> <text>", text formatted printf-style. `key` is one
   word (no spaces). Returns TPU_OK, TPU_EINVAL (NULL/bad key) or TPU_EIO. */
int tpu_trace_comment(tpu_trace_t *t, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Writes the MXU header lines: "# unit mxu" and
   "# params n=<N> m=<M> k=<K> nprime=<N'> latency=<L> busy=<B>". */
int tpu_trace_mxu_params(tpu_trace_t *t, unsigned n, size_t m, size_t k, size_t nprime,
                         uint64_t latency, uint64_t busy);

/* Writes one MXU record:
   "<cycle> mxu <tile> <kt> <nt> <row> <v0> ... <v(n-1)>", each v as 8 lowercase hex digits.
   The values are written as given (the caller canonicalises NaNs if it must). */
int tpu_trace_mxu(tpu_trace_t *t, uint64_t cycle, size_t tile, size_t kt, size_t nt,
                  size_t row, unsigned n, const fp32_t *v);

/* Number of records written so far. */
uint64_t tpu_trace_records(const tpu_trace_t *t);

/* Flushes and closes; frees `t` in every case. Returns TPU_OK, or TPU_EIO if any write since
   the open failed (a full disk is not silently ignored). NULL is accepted (TPU_OK). */
int tpu_trace_close(tpu_trace_t *t);

#ifdef __cplusplus
}
#endif

#endif
