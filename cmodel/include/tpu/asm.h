/* SPDX-License-Identifier: Apache-2.0 */
/* The core's assembler (docs/isa.md "Assembly language"). */
#ifndef TPU_ASM_H
#define TPU_ASM_H

#include <stddef.h>

#include "tpu/isa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most errors reported for one source before the assembler stops. */
#define TPU_ASM_MAX_ERRORS 50

/* Assemble the text src (NUL-terminated; filename is used in messages only). Returns the
   number of errors (0 on success, then *out is a malloc'd array of *count instructions), or
   -1 when out of memory. When errors is not NULL, *errors is set to a malloc'd text holding
   one line per error, "file:line:col: error: <found>, expected <what>\n" (an empty string
   when there is none); the caller frees it. On errors *out is NULL and *count 0. */
int tpu_asm(const char *src, const char *filename, tpu_insn_t **out, size_t *count,
            char **errors);

/* As tpu_asm; n_mxu > 0 also checks 1 <= cols <= n_mxu in dma_in / dma_out. */
int tpu_asm_n(const char *src, const char *filename, unsigned n_mxu, tpu_insn_t **out,
              size_t *count, char **errors);

/* As tpu_asm_n on the len bytes at src (not necessarily NUL-terminated): a NUL byte is an
   error at its line and column ("NUL byte, expected text"), never the end of the source. */
int tpu_asm_len(const char *src, size_t len, const char *filename, unsigned n_mxu,
                tpu_insn_t **out, size_t *count, char **errors);

#ifdef __cplusplus
}
#endif

#endif
