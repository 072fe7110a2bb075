/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness of the ONNX reader and the passes after it (docs/compiler.md): any bytes
   go through the .npy reader of tpu-train, its checkpoint reader and tpuc_onnx_read; a model that decodes goes
   through fold, training mode (docs/training.md) and lower, and through tile and the
   assembler when its tensors are small (the harness's own memory bound: a large
   but valid model is not a finding). Built with clang, AddressSanitizer and UBSan
   (tests/compiler/suite.mk: make fuzz-onnx). A model that tiles also goes through its
   model.txt (tpuc_write_meta, tpu-infer's tpuc_read_meta) and the host-side input and output
   conversions (tpuc_put_input: the IM2COL windows too); bytes that start like a model.txt go
   through tpuc_read_meta and the conversions themselves. Property: no crash, no sanitizer
   report, every refusal has a one-line message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tpuc/npyio.h"
#include "tpuc/train.h"
#include "tpuc/tpuc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_line(const char *err)
{
    if (!err[0] || strchr(err, '\n')) abort(); /* a refusal must say why, on one line */
}

/* model.txt's bytes through tpu-infer's reader (a file: tpuc_read_meta takes a path); a
   description that reads, with a host memory of at most 16 MiB, gets a zero input placed
   and its output read back as tpu-infer does. */
static void meta_bytes(const void *txt, size_t len)
{
    char err[1024] = "", tpath[512];
    const char *td = getenv("TMPDIR");
    /* mkstemp's template: its six X are replaced by a unique name */
    snprintf(tpath, sizeof tpath, "%s/fuzz_onnx_meta_XXXXXX", td && strlen(td) < 400 ? td : "/tmp");
    int fd = mkstemp(tpath);
    if (fd < 0) return;
    FILE *f = fdopen(fd, "wb");
    if (!f) { close(fd); unlink(tpath); return; }
    fwrite(txt, 1, len, f);
    fclose(f);
    tpuc_meta_t m;
    int rc = tpuc_read_meta(tpath, &m, err, sizeof err);
    unlink(tpath);
    if (rc) { one_line(err); return; }
    uint64_t ni = tpuc_io_elems(&m.in), no = tpuc_io_elems(&m.out);
    if (m.host_bytes > (16u << 20) || ni > (1u << 20) || no > (1u << 20)) return;
    uint8_t *host = calloc(1, (size_t)m.host_bytes);
    float *x = calloc((size_t)ni, sizeof *x), *y = calloc((size_t)no, sizeof *y);
    if (host && x && y) {
        /* tpu-infer stages `batch` images of the input's size into x: the fields must agree */
        uint64_t per = ni / (uint64_t)m.in.dims[0];
        memset(x, 0, (size_t)((uint64_t)m.batch * per) * sizeof *x);
        tpuc_put_input(&m.in, x, host);
        tpuc_get_output(&m.out, host, y);
    }
    free(host); free(x); free(y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024] = "";
    if (size >= 13 && memcmp(data, "tpuc-model 1\n", 13) == 0) {
        meta_bytes(data, size);
        return 0;
    }
    /* the same bytes as a .npy (tpu-train's --x-train/--y-train reader), float and integer */
    for (int want_int = 0; want_int < 2; want_int++) {
        tpuc_npy_t a;
        if (tpuc_npy_parse(data, size, "<fuzz>", want_int, &a, err, sizeof err)) one_line(err);
        tpuc_npy_free(&a);
    }
    /* the same bytes as a tpu-train checkpoint of a fixed run of 2 layers (train_ckpt.c): with
       the first byte's bit 0 set the magic, fingerprint, CSV length and checksum are made
       valid, with bit 1 too the region headers, so the fuzzer reaches every field */
    {
        static uint8_t h0[0x3000], h1[0x3000];
        uint8_t *hosts[2] = {h0, h1};
        static tpuc_train_t ft;
        memset(&ft, 0, sizeof ft);
        ft.n = 4;
        ft.nlayers = 2;
        ft.layer[0].w_master = 0x1000; ft.layer[0].xsave = 0x1040;
        ft.layer[1].w_master = 0x1100; ft.layer[1].xsave = 0x1180;
        ft.adam_addr = 0x2000;
        const uint64_t ra[3] = {0x1000, 0x1100, 0x2000}, rl[3] = {0x40, 0x80, 32};
        const size_t want = 8 + 80 + 8 + 8 + (16 + 0x40) + (16 + 0x80) + (16 + 32);
        uint8_t *c = malloc(size + 1);
        if (!c) return 0;
        memcpy(c, data, size);
        tpuc_ckpt_pos_t p;
        memset(&p, 0, sizeof p);
        p.fingerprint = 0x243f6a8885a308d3ull;
#define PUT64(at, v) do { uint64_t v_ = (v); for (int i_ = 0; i_ < 8; i_++) c[(at) + i_] = (uint8_t)(v_ >> (8 * i_)); } while (0)
        if (size >= want && (data[0] & 1)) {
            memcpy(c, "TPUTRCK1", 8);
            PUT64(8, p.fingerprint);
            PUT64(80, size - want);
            if (data[0] & 2) {
                size_t o = 88 + (size - want);
                PUT64(o, 3);
                o += 8;
                for (int k = 0; k < 3; k++) {
                    PUT64(o, ra[k]);
                    PUT64(o + 8, rl[k]);
                    o += 16 + rl[k];
                }
            }
            PUT64(size - 8, tpuc_train_ckpt_checksum(c, size - 8));
        }
#undef PUT64
        if (tpuc_train_ckpt_parse(&ft, c, size, hosts, 2, &p, "<fuzz>", err, sizeof err)) one_line(err);
        else free(p.csv);
        free(c);
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
            if (tpuc_tile(&g, &hw, &p, err, sizeof err)) {
                one_line(err);
            } else {
                char *txt = NULL;
                size_t len = 0;
                FILE *mf = open_memstream(&txt, &len);
                if (mf) {
                    tpuc_write_meta(&g, &hw, &p, mf);
                    fclose(mf);
                    meta_bytes(txt, len);
                }
                free(txt);
            }
            tpuc_prog_free(&p);
        }
    }
    tpuc_graph_free(&g);
    return 0;
}
