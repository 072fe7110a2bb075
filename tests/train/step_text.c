/* SPDX-License-Identifier: Apache-2.0 */
/* step_text: compile a training step as `tpu-compile --train` does (the same options, the
   micro-steps chosen when --micro-batch is not given) and print what the training pass
   produced, with no run: the program's assembly text, then per instruction its phase and
   layer, the update part's pc and the host layout. tests/train/same_text.sh compares this
   output of two builds (a refactoring of compiler/src/train.c must not change a byte).
   usage: step_text MODEL.onnx [hardware options] [--batch B] [--micro-batch M]
                    [--optimizer sgd|adam] [--momentum M] [--logits] [--eval-only]
                    [--save-grads] [--no-loops] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/cli.h"
#include "tpuc/hwopts.h"
#include "tpuc/tpuc.h"
#include "tpuc/train.h"

enum { O_BATCH = 1, O_MICRO, O_OPT, O_MOM, O_LOGITS, O_EVAL, O_GRADS, O_NOLOOPS };

static const tpu_cli_opt_t opts[] = {
    TPUC_HW_CLI_OPTS,
    {"batch", 0, TPU_CLI_VALUE, O_BATCH},
    {"micro-batch", 0, TPU_CLI_VALUE, O_MICRO},
    {"optimizer", 0, TPU_CLI_VALUE, O_OPT},
    {"momentum", 0, TPU_CLI_VALUE, O_MOM},
    {"logits", 0, 0, O_LOGITS},
    {"eval-only", 0, 0, O_EVAL},
    {"save-grads", 0, 0, O_GRADS},
    {"no-loops", 0, 0, O_NOLOOPS},
    {NULL, 0, 0, 0},
};

int main(int argc, char **argv)
{
    char err[1024], note[1024];
    tpu_cli_t cli;
    tpu_cli_init(&cli, argc, argv, opts);
    tpuc_hwopts_t ho;
    tpuc_hwopts_init(&ho);
    const char *model = NULL, *optname = "adam";
    uint64_t batch = 0, mb = 0;
    double mom = 0.0;
    int logits = 0, eval = 0, grads = 0, no_loops = 0;
    for (;;) {
        const char *name, *val;
        int id = tpu_cli_next(&cli, &name, &val, err, sizeof err);
        if (id == TPU_CLI_END) break;
        int bad = 0;
        switch (id) {
        case TPU_CLI_ERROR: bad = 1; break;
        case TPU_CLI_POSITIONAL: model = val; break;
        case O_BATCH: bad = tpu_cli_count(name, val, 1, 1u << 20, &batch, err, sizeof err); break;
        case O_MICRO: bad = tpu_cli_count(name, val, 1, 1u << 20, &mb, err, sizeof err); break;
        case O_OPT: optname = val; break;
        case O_MOM: bad = tpuc_opt_real("momentum", val, 0, 1, &mom, err, sizeof err); break;
        case O_LOGITS: logits = 1; break;
        case O_EVAL: eval = 1; break;
        case O_GRADS: grads = 1; break;
        case O_NOLOOPS: no_loops = 1; break;
        default: bad = tpuc_hwopts_parse(&ho, id, name, val, err, sizeof err); break;
        }
        if (bad) { fprintf(stderr, "step_text: %s\n", err); return 2; }
    }
    if (!model) { fprintf(stderr, "step_text: no model\n"); return 2; }
    tpuc_hw_t hw;
    memset(&hw, 0, sizeof hw);
    if (tpuc_hwopts_resolve(&ho, &hw, err, sizeof err)) { fprintf(stderr, "step_text: %s\n", err); return 2; }
    hw.no_loops = no_loops;
    hw.predict_only = 1; /* as tpu-compile --train --report-only */
    const uint64_t C = hw.cores ? hw.cores : 1, B = batch ? batch : C;
    tpuc_train_opts_t o;
    memset(&o, 0, sizeof o);
    o.micro = mb ? (unsigned)((B / C) / mb) : 1u;
    o.optimizer = strcmp(optname, "adam") ? TPUC_OPT_SGD : TPUC_OPT_ADAM;
    o.lr = o.optimizer == TPUC_OPT_ADAM ? 1e-3 : 0.01;
    o.momentum = mom;
    o.beta1 = 0.9; o.beta2 = 0.999; o.eps = 1e-8;
    o.logits = logits;
    o.eval_only = eval;
    o.save_grads = grads;
    tpuc_graph_t g;
    tpuc_train_t t;
    if (tpuc_train_compile_micro(model, &hw, &o, B, B / C, mb == 0, &g, &t, note, sizeof note,
                                 err, sizeof err)) {
        /* the refusal is output too: it must not change either */
        printf("error: %s\n", err);
        return 0;
    }
    if (note[0]) printf("# note: %s\n", note);
    fwrite(t.prog.text, 1, t.prog.len, stdout);
    printf("# ---- ninsns %zu nstraight %zu nloops %zu nstrides %zu u_pc %zu micro %u "
           "host_bytes %llu\n", t.prog.ninsns, t.prog.nstraight, t.prog.nloops,
           t.prog.nstrides, t.u_pc, t.micro, (unsigned long long)t.host_bytes);
    printf("# phases/layers (%zu):", t.nphase);
    for (size_t i = 0; i < t.nphase; i++)
        printf("%s%u:%u", i % 16 ? " " : "\n# ", t.phase[i], t.layer_of[i]);
    printf("\n");
    for (int l = 0; l < t.nlayers; l++) {
        const tpuc_tlayer_t *ly = &t.layer[l];
        printf("# layer %d %s k %lld o %lld kp %llu chunk %u w %llx b %llx x %llx dy %llx\n", l,
               ly->name, (long long)ly->k, (long long)ly->o, (unsigned long long)ly->kp,
               ly->chunk_rows, (unsigned long long)ly->w_master,
               (unsigned long long)ly->w_bf16, (unsigned long long)ly->xsave,
               (unsigned long long)ly->dysave);
    }
    tpuc_train_free(&t);
    tpuc_graph_free(&g);
    return 0;
}
