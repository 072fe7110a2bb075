/* SPDX-License-Identifier: Apache-2.0 */
/* Choosing the micro-steps of a training step (docs/training.md "Micro-steps"): when a core's
   rows of the step do not fit UB, ACC or IMEM at once, tpu-train and `tpu-compile --train`
   split them into micro-steps (the fewest that fit, or, where the board model predicts the step
   in passing, the fastest of the few counts after it), and say so in one line. Predicting
   (tpu-compile --report-only), a step IMEM cannot hold is not taken while a few more
   micro-steps may give one it can. A refusal is left
   only for a model that does not fit even one row per core; its message names the layer and
   the memory (the message of that last attempt). */
#include <stdint.h>
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

/* The step of micro-step count m predicted on the board model: its cycles, or UINT64_MAX when
   its straight-line program is too long to predict in passing (PREDICT_MAX) or the run fails. */
#define PREDICT_MAX 400000u
static uint64_t predict(const tpuc_train_t *t, const tpuc_graph_t *g, const tpuc_hw_t *hw)
{
    const size_t n = t->prog.nstraight ? t->prog.nstraight : t->prog.ninsns;
    if (n > PREDICT_MAX) return UINT64_MAX;
    tpuc_hw_t h = *hw;
    h.predict_only = 1;
    tpuc_train_report_t r;
    char e[256];
    return tpuc_train_report(t, g, &h, &r, e, sizeof e) ? UINT64_MAX : r.cycles;
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
    /* the fewest micro-steps that fit; then, where the board model predicts the step in
       passing, the next counts that fit up to 4x as many, the fastest kept (fewer micro-steps
       can be slower: without them a chunk of dW shares ACC with the optimizer's state, so a
       Conv's gradient may take more passes over the batch) */
    uint64_t best = 0, bestcyc = UINT64_MAX, first = 0, firstcyc = UINT64_MAX, over = 0;
    unsigned over_tries = 0;
    tpuc_graph_t bg, og;
    tpuc_train_t bt, ot;
    for (uint64_t m = 1; m <= rows && m <= 65536u && (!best || m <= 4 * best); m++) {
        if (rows % m) continue;
        if (attempt(model, hw, o, batch, (unsigned)m, g, t, err, errlen) == 0) {
            if (!best && t->prog.ninsns > hw->geom.imem_insns) {
                /* only when predicting (tpu-compile --report-only): a step IMEM cannot hold
                   is kept as the answer of last resort while more micro-steps are tried */
                const int hopeless = t->prog.ninsns > 4u * (size_t)hw->geom.imem_insns;
                if (!over) { over = m; ot = *t; og = *g; }
                else { tpuc_train_free(t); tpuc_graph_free(g); }
                /* a few more counts, while the program is within 4x of IMEM (fewer rows per
                   micro-step shorten it at most in proportion) */
                if (hopeless || ++over_tries > 4) break;
                continue;
            }
            const uint64_t cyc = predict(t, g, hw);
            if (!first) { first = m; firstcyc = cyc; }
            if (!best || cyc < bestcyc) {
                if (best) { tpuc_train_free(&bt); tpuc_graph_free(&bg); }
                best = m;
                bestcyc = cyc;
                bt = *t;
                bg = *g;
                if (cyc == UINT64_MAX) break; /* not predicted: the fewest */
            } else {
                tpuc_train_free(t);
                tpuc_graph_free(g);
            }
            continue;
        }
        const int fit = t->fit_failed;
        tpuc_train_free(t);
        tpuc_graph_free(g);
        if (!fit && !best) { /* not a question of size: more micro-steps do not help */
            if (over) { tpuc_train_free(&ot); tpuc_graph_free(&og); }
            return -1;
        }
    }
    int last_resort = 0;
    if (!best && over) { /* no count tried fits IMEM: the fewest micro-steps that fit the rest */
        best = first = over;
        last_resort = 1;
        bt = ot;
        bg = og;
    } else if (over) {
        tpuc_train_free(&ot);
        tpuc_graph_free(&og);
    }
    if (!best) return -1; /* not even one row per core fits: err names the layer and the memory */
    *t = bt;
    *g = bg;
    o->micro = (unsigned)best;
    hw->batch = (long)(batch / best);
    if (last_resort && note && notelen)
        snprintf(note, notelen, "the step's %llu rows per core need more than IMEM's %u "
                 "instructions at every micro-step count tried; predicted at %llu micro-step(s) "
                 "of %llu rows (--micro-batch %llu), which only a larger --imem-insns holds",
                 (unsigned long long)rows, hw->geom.imem_insns, (unsigned long long)best,
                 (unsigned long long)(rows / best), (unsigned long long)(rows / best));
    else if (best > first && note && notelen)
        snprintf(note, notelen, "the step's %llu rows per core fit in %llu micro-step(s), but %llu "
                 "micro-steps of %llu rows run faster (predicted %llu cycles, not %llu; "
                 "--micro-batch %llu)", (unsigned long long)rows, (unsigned long long)first,
                 (unsigned long long)best, (unsigned long long)(rows / best),
                 (unsigned long long)bestcyc, (unsigned long long)firstcyc,
                 (unsigned long long)(rows / best));
    else if (best > 1 && note && notelen)
        snprintf(note, notelen, "the step's %llu rows per core do not fit UB, ACC or IMEM at once; "
                 "%llu micro-steps of %llu rows (--micro-batch %llu)", (unsigned long long)rows,
                 (unsigned long long)best, (unsigned long long)(rows / best),
                 (unsigned long long)(rows / best));
    return 0;
}
