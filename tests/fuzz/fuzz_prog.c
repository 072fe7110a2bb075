/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the binary program loader (tpu_load_program on a file), then every word
   through decode, the dispatch checks, the footprint and the disassembler. Property: the
   disassembly of any 16 bytes assembles to the same 16 bytes (docs/isa.md: "the text after
   '<index>: ' assembles to the same 128 bits, always"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tpu/asm.h"
#include "tpu/host.h"
#include "tpu/isa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file("p.bin", data, size);
    tpu_insn_t *prog = NULL;
    size_t count = 0;
    char err[512];
    if (tpu_load_program(path, 0, &prog, &count, err, sizeof err) != 0)
        return 0;
    tpu_core_geom_t g = tpu_core_geom_default(8);
    for (size_t i = 0; i < count; i++) {
        char line[192];
        tpu_insn_disasm(prog[i], line, sizeof line);
        tpu_dinsn_t d;
        tpu_footprint_t fp;
        tpu_insn_decode(prog[i], &d);
        if (tpu_insn_check(&d, &g) == 0)
            tpu_insn_footprint(&d, 8, &fp);
        (void)tpu_insn_check_board(&d, &g, 0, 4);
        tpu_insn_t *again = NULL;
        size_t n2 = 0;
        char *errs = NULL;
        if (tpu_asm_len(line, strlen(line), "dis.s", 0, &again, &n2, &errs) != 0 || n2 != 1 ||
            memcmp(&again[0], &prog[i], sizeof prog[i]) != 0) {
            fprintf(stderr, "round trip: '%s' does not assemble to the same words %s\n", line,
                    errs ? errs : "");
            abort();
        }
        free(errs);
        free(again);
    }
    free(prog);
    return 0;
}
