/* SPDX-License-Identifier: Apache-2.0 */
/* The core trace (docs/isa.md "Trace (core)"): `w <seq> <mem> <row> <elements>`,
   `r <seq> <pc> <i0.i1.i2.i3.i4.i5> <resolved instruction>`, `e <seq> <pc> <code>`. The model
   executes in program order, so writing each record when it happens gives the dynamic
   instructions in ascending order. */
#include <stdio.h>
#include "core_internal.h"

static void core_trace_check(tpu_core_t *c, int rc)
{
    if (rc < 0)
        c->trace_err = 1;
}

void core_trace_header(tpu_core_t *c)
{
    if (c->trace)
        core_trace_check(c, fprintf(c->trace, "# tpu-core-trace 3\n"));
}

void core_trace_write(tpu_core_t *c, unsigned mem, unsigned row, const uint32_t *words)
{
    static const char hex[] = "0123456789abcdef";
    char buf[64];
    if (c->trace == NULL)
        return;
    core_trace_check(c, fprintf(c->trace, "w %llu %s %u", (unsigned long long)c->seqno,
                                        tpu_mem_name(mem), row));
    unsigned digits = mem == TPU_MEM_ACC ? 8u : 4u;
    for (unsigned i = 0; i < c->n; i++) {
        buf[0] = ' ';
        for (unsigned k = 0; k < digits; k++)
            buf[1 + k] = hex[(words[i] >> (4u * (digits - 1u - k))) & 15u];
        buf[1 + digits] = 0;
        if (fputs(buf, c->trace) < 0)
            c->trace_err = 1;
    }
    if (fputc('\n', c->trace) == EOF)
        c->trace_err = 1;
}

void core_trace_retire(tpu_core_t *c)
{
    if (c->trace) {
        char text[160];
        tpu_insn_t raw = tpu_insn_encode(&c->cur);
        tpu_insn_disasm(raw, text, sizeof text);
        core_trace_check(c, fprintf(c->trace, "r %llu %u %s %s\n", (unsigned long long)c->seqno,
                                    (unsigned)c->pc, c->iter, text));
    }
    c->seqno++;
}

void core_trace_error(tpu_core_t *c, uint64_t seq, uint32_t pc, int code)
{
    if (c->trace)
        core_trace_check(c, fprintf(c->trace, "e %llu %u %d\n", (unsigned long long)seq,
                                    (unsigned)pc, code));
}
