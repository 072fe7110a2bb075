/* SPDX-License-Identifier: Apache-2.0 */
/* Oracles for the numerics tests (docs/numerics.md, "How the contract is checked").
 *
 * Two independent implementations of every operation of the contract, both working on raw
 * bits and neither sharing code with cmodel/:
 *   mo_*  MPFR: binary32 = precision 24, emin -148, emax 128; bfloat16 = precision 8,
 *         emin -132, emax 128; RNDN, mpfr_subnormalize after each op, then the contract's
 *         rules on top (DAZ on inputs, FTZ of results below 2^-126 keeping the sign,
 *         canonical NaN).
 *   ho_*  the host CPU: SSE float arithmetic with MXCSR.FTZ and MXCSR.DAZ set, round to
 *         nearest, compiled with -ffp-contract=off, NaN results canonicalised. fp32 -> bf16
 *         uses AVX512-BF16 vcvtneps2bf16 when the CPU has it (ho_has_fp32_to_bf16()).
 *
 * bf16 values travel in uint16_t, fp32 values in uint32_t.
 * Both oracles keep per-thread state: call mo_init() and ho_init() once in every thread
 * that uses them (MPFR must be built with thread-local storage for more than one thread).
 */
#ifndef TESTS_NUMERICS_ORACLE_H
#define TESTS_NUMERICS_ORACLE_H

#include <stdint.h>

/* ---- MPFR oracle ---- */
/* Sets this thread's MPFR exponent range to binary32 and allocates the working variables.
   Returns 0, or -1 if a second thread calls it and MPFR has no thread-local storage. */
int mo_init(void);
void mo_fini(void);
uint32_t mo_bf16_to_fp32(uint16_t a);
uint16_t mo_fp32_to_bf16(uint32_t a);
uint32_t mo_bf16_mul(uint16_t a, uint16_t b);
uint32_t mo_fp32_add(uint32_t a, uint32_t b);
uint32_t mo_fp32_sub(uint32_t a, uint32_t b);
uint32_t mo_fp32_mac(uint32_t acc, uint16_t a, uint16_t b);

/* ---- host oracle ---- */
/* Sets this thread's MXCSR: FTZ, DAZ, round to nearest, all exceptions masked. Returns 0,
   or -1 if the host is not x86 (then no ho_* function may be called). */
int ho_init(void);
/* 1 if MXCSR has FTZ, DAZ and round-to-nearest set in this thread. */
int ho_mxcsr_ok(void);
/* 1 if ho_fp32_to_bf16 is available (AVX512-BF16); otherwise a one-line reason in *why. */
int ho_has_fp32_to_bf16(const char **why);
uint32_t ho_bf16_to_fp32(uint16_t a);
uint16_t ho_fp32_to_bf16(uint32_t a);
uint32_t ho_bf16_mul(uint16_t a, uint16_t b);
uint32_t ho_fp32_add(uint32_t a, uint32_t b);
uint32_t ho_fp32_sub(uint32_t a, uint32_t b);
uint32_t ho_fp32_mac(uint32_t acc, uint16_t a, uint16_t b);

#endif
