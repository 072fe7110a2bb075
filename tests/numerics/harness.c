/* SPDX-License-Identifier: Apache-2.0 */
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>

#include "oracle.h"
#include "tpu/numerics.h"

#define H_MAX_PRINT 8

const char *const OP_NAME[OP_COUNT] = { "bf16_to_fp32", "fp32_to_bf16", "bf16_mul",
                                        "fp32_add",     "fp32_sub",     "fp32_mac" };

static int host_f2b = -1;

int h_init(void)
{
    if (mo_init() != 0) {
        fprintf(stderr, "MPFR oracle: cannot initialise (MPFR without thread-local storage)\n");
        return -1;
    }
    if (ho_init() != 0) {
        fprintf(stderr, "host oracle: needs an x86 host with SSE (MXCSR FTZ/DAZ)\n");
        return -1;
    }
    if (host_f2b < 0) {
        const char *why = "";
        host_f2b = ho_has_fp32_to_bf16(&why);
        if (host_f2b)
            printf("host oracle for fp32_to_bf16: AVX512-BF16 vcvtneps2bf16\n");
        else
            printf("note: %s\n", why);
    }
    return 0;
}

uint32_t h_model(op_t op, args_t x)
{
    switch (op) {
    case OP_B2F: return bf16_to_fp32(bf16_from_bits((uint16_t)x.a)).v;
    case OP_F2B: return fp32_to_bf16(fp32_from_bits(x.a)).v;
    case OP_MUL: return bf16_mul(bf16_from_bits((uint16_t)x.a), bf16_from_bits((uint16_t)x.b)).v;
    case OP_ADD: return fp32_add(fp32_from_bits(x.a), fp32_from_bits(x.b)).v;
    case OP_SUB: return fp32_sub(fp32_from_bits(x.a), fp32_from_bits(x.b)).v;
    case OP_MAC:
        return fp32_mac(fp32_from_bits(x.a), bf16_from_bits((uint16_t)x.b),
                        bf16_from_bits((uint16_t)x.c)).v;
    default: return 0xDEADBEEFu;
    }
}

uint32_t h_mpfr(op_t op, args_t x)
{
    switch (op) {
    case OP_B2F: return mo_bf16_to_fp32((uint16_t)x.a);
    case OP_F2B: return mo_fp32_to_bf16(x.a);
    case OP_MUL: return mo_bf16_mul((uint16_t)x.a, (uint16_t)x.b);
    case OP_ADD: return mo_fp32_add(x.a, x.b);
    case OP_SUB: return mo_fp32_sub(x.a, x.b);
    case OP_MAC: return mo_fp32_mac(x.a, (uint16_t)x.b, (uint16_t)x.c);
    default: return 0xDEADBEEFu;
    }
}

int h_host(op_t op, args_t x, uint32_t *out)
{
    switch (op) {
    case OP_B2F: *out = ho_bf16_to_fp32((uint16_t)x.a); return 1;
    case OP_F2B:
        if (host_f2b != 1)
            return 0;
        *out = ho_fp32_to_bf16(x.a);
        return 1;
    case OP_MUL: *out = ho_bf16_mul((uint16_t)x.a, (uint16_t)x.b); return 1;
    case OP_ADD: *out = ho_fp32_add(x.a, x.b); return 1;
    case OP_SUB: *out = ho_fp32_sub(x.a, x.b); return 1;
    case OP_MAC: *out = ho_fp32_mac(x.a, (uint16_t)x.b, (uint16_t)x.c); return 1;
    default: return 0;
    }
}

static void fmt_args(char *buf, size_t n, op_t op, args_t x)
{
    switch (op) {
    case OP_B2F: snprintf(buf, n, "a=0x%04" PRIX32, x.a); break;
    case OP_F2B: snprintf(buf, n, "a=0x%08" PRIX32, x.a); break;
    case OP_MUL: snprintf(buf, n, "a=0x%04" PRIX32 " b=0x%04" PRIX32, x.a, x.b); break;
    case OP_MAC:
        snprintf(buf, n, "acc=0x%08" PRIX32 " a=0x%04" PRIX32 " b=0x%04" PRIX32, x.a, x.b, x.c);
        break;
    default: snprintf(buf, n, "a=0x%08" PRIX32 " b=0x%08" PRIX32, x.a, x.b); break;
    }
}

void h_report(tally_t *t, const char *what, op_t op, args_t x, uint32_t model, uint32_t mpfr,
              int has_host, uint32_t host, uint64_t expect)
{
    if (t->quiet || t->printed >= H_MAX_PRINT)
        return;
    t->printed++;
    char args[96], hs[24] = "n/a", es[24] = "";
    fmt_args(args, sizeof args, op, x);
    if (has_host)
        snprintf(hs, sizeof hs, "0x%08" PRIX32, host);
    if (expect != H_NO_EXPECT)
        snprintf(es, sizeof es, " contract=0x%08" PRIX32, (uint32_t)expect);
    printf("  MISMATCH [%s] %s %s%s: model=0x%08" PRIX32 " mpfr=0x%08" PRIX32 " host=%s%s\n",
           t->name, OP_NAME[op], args, what, model, mpfr, hs, es);
}

int h_check_with(tally_t *t, model_fn m, op_t op, args_t x, uint64_t expect)
{
    uint32_t got = m(op, x), mp = h_mpfr(op, x), ho = 0;
    int has_host = h_host(op, x, &ho);
    t->n++;
    t->n_host += (uint64_t)has_host;
    int bad = got != mp || (has_host && (got != ho || mp != ho)) ||
              (expect != H_NO_EXPECT && got != (uint32_t)expect);
    if (bad) {
        t->bad++;
        const char *what = "";
        if (has_host && mp != ho)
            what = " (the oracles disagree)";
        else if (expect != H_NO_EXPECT && mp != (uint32_t)expect)
            what = " (oracles disagree with the value written in the test)";
        h_report(t, what, op, x, got, mp, has_host, ho, expect);
    }
    return bad;
}

void h_summary(const tally_t *t)
{
    printf("  %-40s %10" PRIu64 " cases (%" PRIu64 " also vs host), %" PRIu64 " mismatches\n",
           t->name, t->n, t->n_host, t->bad);
}
