/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the trace readers. The input, as a file, is compared with itself by the MXU
   trace compare (sim/trace_cmp_lib.c) and by the core trace compare (sim/core_cmp.c's
   reader, canonicalisation and comparison; tpu-board-cmp uses the same). Property: no fault,
   and a trace compared with itself never differs (status 0 or 2, never 1). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "trace_cmp.h"

#define TPU_CORE_CMP_NO_MAIN
#include "../../sim/core_cmp.c"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (freopen("/dev/null", "w", stdout) == NULL) /* the compare's report */
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file("t.trace", data, size);
    tpu_trace_cmp_result_t r;
    int st = tpu_trace_cmp(path, path, 0, &r);
    if (st == TPU_TRACE_CMP_DIFFER)
        abort();
    int fd = dup(2); /* core_cmp prints its errors to stderr: silence them */
    if (freopen("/dev/null", "w", stderr) == NULL)
        abort();
    st = core_trace_compare(path, path, NULL, 0);
    fflush(stderr);
    dup2(fd, 2);
    close(fd);
    if (st == 1)
        abort();
    return 0;
}
