/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness of the ONNX reader and the passes after it (docs/compiler.md): any bytes
   go through tpuc_onnx_read; a model that decodes goes through fold and lower, and through
   tile and the assembler when its tensors are small (the harness's own memory bound: a large
   but valid model is not a finding). Built with clang, AddressSanitizer and UBSan
   (tests/compiler/suite.mk: make fuzz-onnx). Property: no crash, no sanitizer report, every
   refusal has a one-line message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tpuc/tpuc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_line(const char *err)
{
    if (!err[0] || strchr(err, '\n')) abort(); /* a refusal must say why, on one line */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024] = "";
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
    if (tpuc_fold(&g, &hw, err, sizeof err) || tpuc_lower(&g, &hw, err, sizeof err)) {
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
