/* SPDX-License-Identifier: Apache-2.0 */
/* Choosing the micro-steps of a training step (docs/training.md "Micro-steps"): when a core's
   rows of the step do not fit UB, ACC or IMEM at once, tpu-train and `tpu-compile --train`
   split them into the fewest micro-steps that fit, and say so in one line. A refusal is left
   only for a model that does not fit even one row per core; its message names the layer and
   the memory (the message of that last attempt). */
#include <stdio.h>
#include <string.h>

#include "tpuc/train.h"
#include "tpuc_internal.h"

/* internal: read, fold and compile at `micro` micro-steps of rows / micro rows. */
static int attempt(const char *model, tpuc_hw_t *hw, tpuc_train_opts_t *o, uint64_t batch,
                   unsigned micro, tpuc_graph_t *g, tpuc_train_t *t, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    memset(t, 0, sizeof *t);
    o->micro = micro;
    hw->batch = (long)(batch / micro); /* one micro-step's rows over the cores */
    if (tpuc_onnx_read_file(model, g, err, errlen) || tpuc_fold(g, hw, err, errlen))
        return -1;
    return tpuc_train_compile(g, hw, o, t, err, errlen);
}

int tpuc_train_compile_micro(const char *model, tpuc_hw_t *hw, tpuc_train_opts_t *o,
                             uint64_t batch, uint64_t rows, int choose, tpuc_graph_t *g, tpuc_train_t *t,
                             char *note, size_t notelen, char *err, size_t errlen)
{
    if (note && notelen) note[0] = 0;
    if (!choose || rows <= 1) {
        unsigned m = o->micro ? o->micro : 1u;
        if (attempt(model, hw, o, batch, m, g, t, err, errlen)) {
            tpuc_train_free(t);
            tpuc_graph_free(g);
            return -1;
        }
        return 0;
    }
    for (uint64_t m = 1; m <= rows && m <= 65536u; m++) {
        if (rows % m) continue;
        if (attempt(model, hw, o, batch, (unsigned)m, g, t, err, errlen) == 0) {
            if (m > 1 && note && notelen)
                snprintf(note, notelen, "the step's %llu rows per core do not fit UB, ACC or IMEM "
                         "at once; %llu micro-steps of %llu rows (--micro-batch %llu)",
                         (unsigned long long)rows, (unsigned long long)m,
                         (unsigned long long)(rows / m), (unsigned long long)(rows / m));
            return 0;
        }
        const int fit = t->fit_failed;
        tpuc_train_free(t);
        tpuc_graph_free(g);
        if (!fit) return -1; /* not a question of size: more micro-steps do not help */
    }
    return -1; /* not even one row per core fits: err names the layer and the memory */
}
