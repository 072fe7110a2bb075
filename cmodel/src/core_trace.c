/* SPDX-License-Identifier: Apache-2.0 */
/* The core trace (docs/isa.md "Trace (core)"): `w <pc> <mem> <row> <elements>`,
   `r <pc> <mnemonic>`, `e <pc> <code>`. The model executes in program order, so writing each
   record when it happens gives the pcs in ascending order. */
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
        core_trace_check(c, fprintf(c->trace, "# tpu-core-trace 1\n"));
}

void core_trace_write(tpu_core_t *c, unsigned mem, unsigned row, const uint32_t *words)
{
    static const char hex[] = "0123456789abcdef";
    char buf[64];
    if (c->trace == NULL)
        return;
    core_trace_check(c, fprintf(c->trace, "w %u %s %u", (unsigned)c->pc, tpu_mem_name(mem), row));
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

void core_trace_retire(tpu_core_t *c, unsigned opcode)
{
    if (c->trace)
        core_trace_check(c, fprintf(c->trace, "r %u %s\n", (unsigned)c->pc,
                                    tpu_opcode_name(opcode)));
}

void core_trace_error(tpu_core_t *c, uint32_t pc, int code)
{
    if (c->trace)
        core_trace_check(c, fprintf(c->trace, "e %u %d\n", (unsigned)pc, code));
}
