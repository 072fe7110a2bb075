/* SPDX-License-Identifier: Apache-2.0 */
/* The board's topology (docs/board.md "Topology and core numbering"): gen's --topology rule
   (ring, torus with the default shape, torus:RxS) and the routers' dimension-ordered hop
   count. */
#include <stdio.h>
#include <string.h>

#include "tpu/board.h"

void tpu_board_torus_default(unsigned cores, unsigned *rows, unsigned *cols)
{
    unsigned r = 1;
    for (unsigned d = 1; d * d <= cores; d++)
        if (cores % d == 0)
            r = d;
    *rows = r;
    *cols = cores / r;
}

int tpu_board_topology_parse(const char *spec, unsigned cores, unsigned *rows, unsigned *cols,
                             char *err, size_t errlen)
{
    *rows = 1;
    *cols = cores;
    if (spec == NULL || *spec == 0) {
        if (cores == 8) {
            *rows = 2;
            *cols = 4;
        }
        return 0;
    }
    if (strcmp(spec, "ring") == 0)
        return 0;
    if (strcmp(spec, "torus") == 0) {
        tpu_board_torus_default(cores, rows, cols);
        return 0;
    }
    if (strncmp(spec, "torus:", 6) == 0) {
        const char *p = spec + 6;
        unsigned long dims[2] = { 0, 0 };
        int ok = 1;
        for (int k = 0; k < 2 && ok; k++) {
            const char *start = p;
            while (*p >= '0' && *p <= '9') {
                if (dims[k] <= TPU_BOARD_CORES_MAX)
                    dims[k] = dims[k] * 10u + (unsigned long)(*p - '0');
                p++;
            }
            ok = p != start && (k == 1 ? *p == '\0' : *p == 'x');
            if (k == 0 && ok)
                p++;
        }
        if (ok && dims[0] >= 1 && dims[1] >= 1 && dims[0] * dims[1] == cores) {
            *rows = (unsigned)dims[0];
            *cols = (unsigned)dims[1];
            return 0;
        }
        if (ok)
            snprintf(err, errlen, "--topology '%s': R*S = %lu must equal --cores %u (allowed: "
                     "torus:RxS, R, S >= 1)", spec, dims[0] * dims[1], cores);
        else
            snprintf(err, errlen, "--topology '%s' is not a torus shape (allowed: torus:RxS, R "
                     "and S whole numbers)", spec);
        return -1;
    }
    snprintf(err, errlen, "--topology '%s' is not a topology (allowed: ring, torus, torus:RxS "
             "with R*S = --cores)", spec);
    return -1;
}

/* internal: hops along one ring of n cores from position a to b, the shorter way (east when
   d <= n/2, as the routers choose) */
static unsigned ring_hops(unsigned n, unsigned a, unsigned b)
{
    unsigned d = (b + n - a) % n;
    return d <= n / 2 ? d : n - d;
}

unsigned tpu_board_hops(unsigned rows, unsigned cols, unsigned a, unsigned b)
{
    if (cols == 0 || rows == 0)
        return 0;
    return ring_hops(cols, a % cols, b % cols) + ring_hops(rows, a / cols, b / cols);
}
