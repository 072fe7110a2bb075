/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness of the ONNX reader and the passes after it (docs/compiler.md): any bytes
   go through the .npy reader of tpu-train and tpuc_onnx_read; a model that decodes goes
   through fold, training mode (docs/training.md) and lower, and through tile and the
   assembler when its tensors are small (the harness's own memory bound: a large
   but valid model is not a finding). Built with clang, AddressSanitizer and UBSan
   (tests/compiler/suite.mk: make fuzz-onnx). Property: no crash, no sanitizer report, every
   refusal has a one-line message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tpuc/npyio.h"
#include "tpuc/train.h"
#include "tpuc/tpuc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_line(const char *err)
{
    if (!err[0] || strchr(err, '\n')) abort(); /* a refusal must say why, on one line */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024] = "";
    /* the same bytes as a .npy (tpu-train's --x-train/--y-train reader), float and integer */
    for (int want_int = 0; want_int < 2; want_int++) {
        tpuc_npy_t a;
        if (tpuc_npy_parse(data, size, "<fuzz>", want_int, &a, err, sizeof err)) one_line(err);
        tpuc_npy_free(&a);
    }
    tpuc_graph_t g;
    if (tpuc_onnx_read(data, size, &g, err, sizeof err) != 0) {
        one_line(err);
        tpuc_graph_free(&g);
        return 0;
    }
    tpuc_hw_t hw;
    memset(&hw, 0, sizeof hw);
    hw.geom.n = 4;
    hw.geom.ub_rows = 256;
    hw.geom.acc_rows = 128;
    hw.geom.wmem_rows = 16;
    hw.geom.imem_insns = 32768;
    hw.axi_data_bits = 64;
    hw.cores = 1;
    hw.topo_rows = hw.topo_cols = 1;
    hw.freq_mhz = 100;
    hw.batch = 2;
    int64_t total = 0;
    for (size_t i = 0; i < g.nt; i++) total += tpuc_tensor_elems(&g.t[i]);
    if (tpuc_fold(&g, &hw, err, sizeof err)) {
        one_line(err);
        tpuc_graph_free(&g);
        return 0;
    }
    if (total < (1 << 16)) { /* training mode on the folded graph (it does not change it) */
        tpuc_train_opts_t o;
        memset(&o, 0, sizeof o);
        o.optimizer = (size & 1) ? TPUC_OPT_ADAM : TPUC_OPT_SGD;
        o.lr = 0.01; o.momentum = (size & 2) ? 0.9 : 0; o.beta1 = 0.9; o.beta2 = 0.999; o.eps = 1e-8;
        o.logits = (size & 4) != 0;
        tpuc_train_t t;
        tpuc_hw_t hwt = hw; /* memories that hold the small test models' steps (test-train) */
        hwt.geom.ub_rows = hwt.geom.acc_rows = 8192;
        hwt.geom.wmem_rows = 64;
        if (tpuc_train_compile(&g, &hwt, &o, &t, err, sizeof err)) one_line(err);
        tpuc_train_free(&t);
    }
    if (tpuc_lower(&g, &hw, err, sizeof err)) {
        one_line(err);
    } else {
        int64_t acts = 0;
        for (size_t i = 0; i < g.nt; i++) acts += g.t[i].ndim >= 0 ? tpuc_tensor_elems(&g.t[i]) : 0;
        if (total < (1 << 16) && acts < (1 << 18)) {
            tpuc_prog_t p;
            if (tpuc_tile(&g, &hw, &p, err, sizeof err)) one_line(err);
            tpuc_prog_free(&p);
        }
    }
    tpuc_graph_free(&g);
    return 0;
}
