/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the assembler (tpu_asm_len). Property: whatever assembles, disassembled and
   assembled again, gives the same 128-bit words (docs/isa.md "Assembly language"); the
   --check rules (tpu_insn_check, the footprint) run on every word without fault, and the
   program runs through the sequencer (tpu_seq_*: loops, index registers; at most 4096 dynamic
   instructions) with every dynamic instruction resolved and checked as dispatched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/asm.h"
#include "tpu/isa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tpu_insn_t *prog = NULL;
    size_t count = 0;
    char *errs = NULL;
    unsigned n = size ? 1u + data[0] % 16u : 4u; /* cols checked against N too */
    int rc = tpu_asm_len((const char *)data, size, "f.s", n, &prog, &count, &errs);
    free(errs);
    if (rc != 0)
        return 0;
    size_t cap = count * 200 + 1, used = 0;
    char *text = malloc(cap);
    if (text == NULL)
        abort();
    text[0] = 0;
    tpu_core_geom_t g = tpu_core_geom_default(n);
    for (size_t i = 0; i < count; i++) {
        char line[192];
        tpu_insn_disasm(prog[i], line, sizeof line);
        used += (size_t)snprintf(text + used, cap - used, "%s\n", line);
        tpu_dinsn_t d;
        tpu_footprint_t fp;
        tpu_insn_decode(prog[i], &d);
        if (tpu_insn_check(&d, &g) == 0)
            tpu_insn_footprint(&d, n, &fp);
    }
    /* the sequencer as tpu-as --check follows it: a failing instruction goes on as a nop */
    tpu_seq_t sq;
    tpu_seq_reset(&sq);
    uint32_t pc = 0;
    for (unsigned steps = 0; steps < 4096 && pc < count; steps++) {
        tpu_dinsn_t d;
        tpu_footprint_t fp;
        tpu_insn_decode(prog[pc], &d);
        if (d.opcode == TPU_OP_HALT)
            break;
        tpu_seq_resolve(&sq, &d);
        int e = tpu_insn_check(&d, &g);
        if (e == 0)
            e = tpu_seq_check(&sq, &d, pc, g.imem_insns);
        if (e == 0)
            tpu_insn_footprint(&d, n, &fp);
        else
            d.opcode = TPU_OP_NOP;
        char it[64];
        tpu_seq_iter_text(&sq, it, sizeof it);
        pc = tpu_seq_step(&sq, &d, pc);
    }
    tpu_insn_t *again = NULL;
    size_t count2 = 0;
    errs = NULL;
    rc = tpu_asm_len(text, used, "dis.s", 0, &again, &count2, &errs);
    if (rc != 0 || count2 != count) {
        fprintf(stderr, "round trip: the disassembly does not assemble:\n%s%s", text,
                errs ? errs : "");
        abort();
    }
    for (size_t i = 0; i < count; i++)
        if (memcmp(&prog[i], &again[i], sizeof prog[i]) != 0) {
            fprintf(stderr, "round trip: instruction %zu differs:\n%s", i, text);
            abort();
        }
    free(errs);
    free(text);
    free(prog);
    free(again);
    return 0;
}
