/* SPDX-License-Identifier: Apache-2.0 */
/* The untiled matmul oracle of the model tests: host float (SSE with MXCSR FTZ|DAZ, no
   contraction), canonical NaN. Written independently of cmodel/src. */
#ifndef TESTS_MODEL_ORACLE_H
#define TESTS_MODEL_ORACLE_H

#include <stddef.h>
#include <stdint.h>
#include "tpu/types.h"

/* 1 if this host has the oracle (x86-64 SSE). */
int oracle_available(void);

/* c[i][j] = fold over kk of (s + a[i][kk] * w[kk][j]), s starting at -0; canonical NaN. */
void oracle_matmul(size_t m, size_t k, size_t n, const bf16_t *a, const bf16_t *w,
                   uint32_t *c);

/* One chain: -0 + a[0]*w[0] + ... + a[len-1]*w[len-1] with stride ws over w; canonical NaN. */
uint32_t oracle_chain(size_t len, const bf16_t *a, const bf16_t *w, size_t ws);

#endif
