/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-trace-cmp expected.trace got.trace [--ignore-cycles]
   Compares two traces (docs/trace.md). Exit 0: identical ("PASS"); 1: they diverge (the
   first divergence is reported); 2: bad arguments or a missing/malformed file. */
#include <stdio.h>
#include <string.h>
#include "trace_cmp.h"

static int usage(const char *why)
{
    fprintf(stderr, "tpu-trace-cmp: error: %s (usage: tpu-trace-cmp EXPECTED GOT [--ignore-cycles])\n",
            why);
    return 2;
}

int main(int argc, char **argv)
{
    const char *files[2];
    int nfiles = 0, ignore_cycles = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ignore-cycles") == 0)
            ignore_cycles = 1;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: tpu-trace-cmp EXPECTED GOT [--ignore-cycles]\n"
                   "Compares two traces record by record (docs/trace.md); prints PASS and exits 0\n"
                   "if identical, else reports the first divergence and exits 1; exit 2 on a bad\n"
                   "argument or file. --ignore-cycles accepts records that differ only in cycle.\n");
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0')
            return usage("unknown option");
        else if (nfiles < 2)
            files[nfiles++] = argv[i];
        else
            return usage("too many arguments");
    }
    if (nfiles != 2)
        return usage("two trace files are needed");
    tpu_trace_cmp_result_t r;
    int st = tpu_trace_cmp(files[0], files[1], ignore_cycles, &r);
    if (st == TPU_TRACE_CMP_ERROR) {
        fprintf(stderr, "tpu-trace-cmp: error: %s\n", r.error);
        return 2;
    }
    tpu_trace_cmp_report(&r, stdout);
    return st == TPU_TRACE_CMP_SAME ? 0 : 1;
}
