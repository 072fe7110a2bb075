/* SPDX-License-Identifier: Apache-2.0 */
/* Test matrices for the MXU: A (m x k) and W (k x n) in bf16, made from a seed and the name
   of a distribution, the same bits on every host (integer arithmetic only). Used by the
   co-simulation harnesses, the model tests and tpu-mkprog (moved here from sim/ so that the
   tools stand on the model library alone). */
#ifndef TPU_MATGEN_H
#define TPU_MATGEN_H

#include <stddef.h>
#include <stdint.h>
#include "tpu/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The distributions, NULL-terminated:
   uniform  |x| in [2^-4, 2^4), log-uniform exponent, random significand and sign
   wide     exponents over the whole bf16 range (1/8 of the values, zeros and subnormals
            included) or within 2^+-64 (the rest): products overflow and underflow
   normal   approximately N(0, 1.15^2) (Irwin-Hall of four 16-bit draws), rounded to bf16
   ints     integers in [-8, 8] (signed zeros): exact sums, ties and cancellations
   edges    every edge case of docs/numerics.md: W's columns cycle through patterns
            (0: +1, 1: +-1 alternating, 2: 2^100, 3: 2^-100, 4: 2^-63, 5: -0, 6: specials,
            7: wide) and A's first rows are scenarios (see matgen.c), so that column 0 is
            the plain sequential sum of each scenario row; the other rows are random
            mixtures of specials. Rows m >= the scenario count are random. */
extern const char *const tpu_matgen_dists[];

/* Number of scenario rows of `edges` (use m >= this to get all of them with one seed). */
size_t tpu_matgen_edge_scenarios(void);

/* 1 if `name` is a distribution. */
int tpu_matgen_valid(const char *name);

/* Fills a (m x k, row-major) and w (k x n, row-major). Returns TPU_OK or TPU_EINVAL
   (unknown distribution, NULL, zero size). */
int tpu_matgen(const char *dist, uint64_t seed, size_t m, size_t k, size_t n, bf16_t *a,
               bf16_t *w);

/* The generator's random numbers (splitmix64), exposed for other test data. */
uint64_t tpu_matgen_rand(uint64_t *state);

#ifdef __cplusplus
}
#endif

#endif
