/* SPDX-License-Identifier: Apache-2.0 */
/* For tests/fuzz/npy_numpy.sh: one line per .npy file named on the command line, what this
   repository's reader makes of it: "ok DTYPE ROWSxCOLS NDIM" or "rej". */
#include <stdio.h>

#include "tpu/npy.h"

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        tpu_npy_t a;
        char err[512];
        if (tpu_npy_read(argv[i], &a, err, sizeof err) == 0) {
            printf("ok %s %zux%zu %u\n", tpu_npy_descr(a.dtype), a.rows, a.cols, a.ndim);
            tpu_npy_free(&a);
        } else {
            printf("rej\n");
        }
    }
    return 0;
}
