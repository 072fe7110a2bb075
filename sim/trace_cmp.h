/* SPDX-License-Identifier: Apache-2.0 */
/* Trace comparison (docs/trace.md), as a function for the harness and as the tool
   build/sim/tpu-trace-cmp. */
#ifndef TPU_SIM_TRACE_CMP_H
#define TPU_SIM_TRACE_CMP_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_TRACE_CMP_MAX_KEYS 4

typedef enum {
    TPU_TRACE_CMP_SAME = 0,  /* identical (cycles possibly ignored) */
    TPU_TRACE_CMP_DIFFER = 1,
    TPU_TRACE_CMP_ERROR = 2  /* a file is missing or malformed; see .error */
} tpu_trace_cmp_status_t;

typedef enum {
    TPU_TRACE_DIV_NONE = 0,
    TPU_TRACE_DIV_VALUE,     /* same key, a value differs */
    TPU_TRACE_DIV_KEY,       /* the records are for different (unit, tile, kt, nt, row) */
    TPU_TRACE_DIV_WIDTH,     /* same key, different numbers of values */
    TPU_TRACE_DIV_TIMING,    /* same key and values, different cycle */
    TPU_TRACE_DIV_SHORT_GOT, /* got ends before expected */
    TPU_TRACE_DIV_SHORT_EXP  /* expected ends before got */
} tpu_trace_div_t;

typedef struct {
    int status;                   /* a tpu_trace_cmp_status_t */
    int kind;                     /* a tpu_trace_div_t: the first divergence */
    char error[512];              /* status ERROR: one line, "FILE:LINE: reason" */
    const char *exp_path, *got_path;
    uint64_t records_exp, records_got; /* records read from each file */
    uint64_t differing;           /* records that differ (counted while the keys agree) */
    uint64_t cycle_only;          /* records whose values agree but cycles differ (counted
                                     whether or not cycles are ignored) */
    int ignore_cycles;
    /* The first divergence: */
    uint64_t record;              /* 0-based record index */
    long line_exp, line_got;      /* line numbers, 1-based (0: no such record) */
    char unit[16];
    unsigned nkeys;
    const char *const *key_names;
    uint64_t key_exp[TPU_TRACE_CMP_MAX_KEYS], key_got[TPU_TRACE_CMP_MAX_KEYS];
    uint64_t cycle_exp, cycle_got;
    char unit_got[16];
    unsigned column;              /* VALUE: first differing column */
    unsigned columns_differing;   /* VALUE: how many columns of that record differ */
    uint32_t v_exp, v_got;        /* VALUE: the values */
    unsigned width_exp, width_got;
} tpu_trace_cmp_result_t;

/* Compares two trace files record by record, in file order. */
int tpu_trace_cmp(const char *expected, const char *got, int ignore_cycles,
                  tpu_trace_cmp_result_t *r);

/* Prints the verdict: "PASS: ..." (one line), or "FAIL: ..." with the first divergence
   (cycle, unit, tile, kt, nt, row, column, expected and got in hex and decimal), or the
   one-line error. */
void tpu_trace_cmp_report(const tpu_trace_cmp_result_t *r, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
