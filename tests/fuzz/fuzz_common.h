/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the libFuzzer harnesses (tests/fuzz): the input as a file for the readers that
   take a path, written once per input into a private temporary folder. */
#ifndef TPU_FUZZ_COMMON_H
#define TPU_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "<tmp>/<name>" holding data[0..size); the path is static, reused by every input. */
static const char *fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    static char dir[64];
    static char path[256];
    if (dir[0] == 0) {
        const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(dir, sizeof dir, "%.40s/tpu-fuzz-XXXXXX", base);
        if (mkdtemp(dir) == NULL)
            abort();
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    if (fclose(f) != 0)
        abort();
    return path;
}

#endif
