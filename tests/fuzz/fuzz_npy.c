/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the .npy reader on a whole file in memory (tpu_npy_read_mem) and, every 64th
   input, the same bytes through the file reader (tpu_npy_read): both must agree. Run with
   -malloc_limit_mb: a header claiming a huge shape must not allocate it. tests/fuzz/
   npy_numpy.py replays the corpus against numpy (whatever this reader accepts, numpy
   accepts with the same shape). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tpu/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned k;
    tpu_npy_t a, b;
    char err[512];
    int ra = tpu_npy_read_mem(data, size, "m.npy", &a, err, sizeof err);
    if (k++ % 64 == 0) {
        const char *path = fuzz_file("f.npy", data, size);
        int rb = tpu_npy_read(path, &b, err, sizeof err);
        if (ra != rb) {
            fprintf(stderr, "the memory reader says %d, the file reader %d: %s\n", ra, rb, err);
            abort();
        }
        if (rb == 0) {
            size_t bytes = a.rows * a.cols * tpu_npy_elem_size(a.dtype);
            if (a.rows != b.rows || a.cols != b.cols || a.dtype != b.dtype ||
                memcmp(a.data, b.data, bytes) != 0)
                abort();
            tpu_npy_free(&b);
        }
    }
    if (ra == 0)
        tpu_npy_free(&a);
    return 0;
}
