/* SPDX-License-Identifier: Apache-2.0 */
/* Comparison machinery of test-numerics: run an operation through the model and both
 * oracles, compare raw bits, count and print mismatches. */
#ifndef TESTS_NUMERICS_HARNESS_H
#define TESTS_NUMERICS_HARNESS_H

#include <stdint.h>

typedef enum { OP_B2F, OP_F2B, OP_MUL, OP_ADD, OP_SUB, OP_MAC, OP_COUNT } op_t;

/* Operands: B2F a=bf16; F2B a=fp32; MUL a,b=bf16; ADD/SUB a,b=fp32; MAC a=acc (fp32),
   b,c=bf16. Results are fp32 bits, or bf16 bits in the low half for F2B. */
typedef struct { uint32_t a, b, c; } args_t;

typedef uint32_t (*model_fn)(op_t op, args_t x);

typedef struct {
    const char *name;
    uint64_t n;      /* cases checked against MPFR */
    uint64_t n_host; /* of which also against the host */
    uint64_t bad;    /* cases where the three (or two) values were not all equal */
    int printed;
    int quiet; /* 1: count, never print (self-checks) */
} tally_t;

extern const char *const OP_NAME[OP_COUNT];

/* One-time setup of both oracles in this thread; returns 0 or -1 (message printed). */
int h_init(void);
/* The model under test (cmodel/). */
uint32_t h_model(op_t op, args_t x);
uint32_t h_mpfr(op_t op, args_t x);
/* Stores the host result and returns 1, or returns 0 if the host has no oracle for op. */
int h_host(op_t op, args_t x, uint32_t *out);

/* Checks m(op, x) against both oracles (and the oracles against each other); if `expect`
   is not H_NO_EXPECT, also against that value written from the contract. Returns 1 on a
   mismatch. */
#define H_NO_EXPECT UINT64_C(0x100000000)
int h_check_with(tally_t *t, model_fn m, op_t op, args_t x, uint64_t expect);
static inline int h_check(tally_t *t, op_t op, args_t x) { return h_check_with(t, h_model, op, x, H_NO_EXPECT); }
static inline int h_expect(tally_t *t, op_t op, args_t x, uint32_t want)
{
    return h_check_with(t, h_model, op, x, want);
}
/* Prints a mismatch line (first few per tally). */
void h_report(tally_t *t, const char *what, op_t op, args_t x, uint32_t model, uint32_t mpfr,
              int has_host, uint32_t host, uint64_t expect);
/* Prints the tally's summary line. */
void h_summary(const tally_t *t);

static inline args_t A1(uint32_t a) { args_t x = { a, 0, 0 }; return x; }
static inline args_t A2(uint32_t a, uint32_t b) { args_t x = { a, b, 0 }; return x; }
static inline args_t A3(uint32_t a, uint32_t b, uint32_t c) { args_t x = { a, b, c }; return x; }

#endif
