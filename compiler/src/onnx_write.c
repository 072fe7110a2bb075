/* SPDX-License-Identifier: Apache-2.0 */
/* Trained weights back into ONNX (train.h): the original file is decoded again with
   protobuf-c, each trained layer's weight and bias initializers get the new float32 values in
   their original orientation (Gemm transB = 1 stores W^T; MatMul + Add keeps its bias in the
   Add's initializer), everything else is kept as it was, and the model is packed and written
   atomically. */
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "tpu/cli.h"
#include "tpuc/train.h"
#include "tpuc_internal.h"

static Onnx__TensorProto *init_named(Onnx__GraphProto *gr, const char *name)
{
    for (size_t i = 0; i < gr->n_initializer; i++)
        if (gr->initializer[i]->name && strcmp(gr->initializer[i]->name, name) == 0)
            return gr->initializer[i];
    return NULL;
}

static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i]->i;
    return dflt;
}

/* Replaces tensor tp's data with e float32 values (raw_data, little-endian). The buffer is
   owned by the caller's list `owned` so the unpacked message can be freed afterwards. */
static int set_data(Onnx__TensorProto *tp, const float *v, int64_t e, uint8_t **owned,
                    size_t *nowned, char *err, size_t errlen)
{
    int64_t have = 1;
    for (size_t i = 0; i < tp->n_dims; i++) have *= tp->dims[i];
    if (have != e || tp->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        tpuc_err(err, errlen, "initializer '%s': expected %lld float32 values, it holds %lld",
                 tp->name, (long long)e, (long long)have);
        return -1;
    }
    uint8_t *buf = malloc((size_t)e * 4 + 1);
    if (!buf) { tpuc_err(err, errlen, "out of memory"); return -1; }
    for (int64_t i = 0; i < e; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        buf[4 * i] = (uint8_t)u; buf[4 * i + 1] = (uint8_t)(u >> 8);
        buf[4 * i + 2] = (uint8_t)(u >> 16); buf[4 * i + 3] = (uint8_t)(u >> 24);
    }
    owned[(*nowned)++] = tp->raw_data.data; /* the original, given back before the free */
    owned[(*nowned)++] = (uint8_t *)tp;
    owned[(*nowned)++] = buf;
    tp->has_raw_data = 1;
    tp->raw_data.data = buf;
    tp->raw_data.len = (size_t)e * 4;
    tp->n_float_data = 0;
    return 0;
}

int tpuc_onnx_write_weights(const char *in_path, const tpuc_weights_t *w, int nw,
                            const char *out_path, char *err, size_t errlen)
{
    char *bytes = NULL;
    size_t len = 0;
    if (tpu_file_read(in_path, (size_t)2 << 30, "an ONNX model of at most 2 GiB", &bytes, &len,
                      err, errlen))
        return -1;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, (const uint8_t *)bytes);
    free(bytes);
    if (!m || !m->graph) {
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        tpuc_err(err, errlen, "%s: not a valid ONNX model", in_path);
        return -1;
    }
    Onnx__GraphProto *gr = m->graph;
    uint8_t **owned = calloc((size_t)nw * 6 + 1, sizeof *owned);
    size_t nowned = 0;
    int rc = -1;
    float *tw = NULL;
    if (!owned) { tpuc_err(err, errlen, "out of memory"); goto out; }
    for (int k = 0; k < nw; k++) {
        Onnx__NodeProto *nd = NULL;
        for (size_t i = 0; i < gr->n_node && !nd; i++) {
            char nm[200];
            const char *name = gr->node[i]->name;
            if (!name || !*name) {
                snprintf(nm, sizeof nm, "%.150s_%zu", gr->node[i]->op_type ? gr->node[i]->op_type : "", i);
                name = nm;
            }
            if (strcmp(name, w[k].node) == 0) nd = gr->node[i];
        }
        if (!nd || nd->n_input < 2) {
            tpuc_err(err, errlen, "%s: no node '%s' with weights", in_path, w[k].node);
            goto out;
        }
        /* a Gather (embedding) reads its table as input 0 */
        const char *wname = nd->input[nd->op_type && strcmp(nd->op_type, "Gather") == 0 ? 0 : 1];
        Onnx__TensorProto *tb = init_named(gr, wname);
        if (!tb) {
            tpuc_err(err, errlen, "node '%s': its weights '%s' are not an initializer", w[k].node, wname);
            goto out;
        }
        const int gemm = nd->op_type && strcmp(nd->op_type, "Gemm") == 0;
        const float *src = w[k].w;
        if (gemm && attr_int(nd, "transB", 0)) {
            free(tw);
            tw = malloc((size_t)(w[k].k * w[k].o) * sizeof *tw + 1);
            if (!tw) { tpuc_err(err, errlen, "out of memory"); goto out; }
            for (int64_t i = 0; i < w[k].k; i++)
                for (int64_t j = 0; j < w[k].o; j++) tw[j * w[k].k + i] = w[k].w[i * w[k].o + j];
            src = tw;
        }
        if (set_data(tb, src, w[k].k * w[k].o, owned, &nowned, err, errlen)) goto out;
        if (!w[k].bias) continue;
        Onnx__TensorProto *tc = NULL;
        const int conv = nd->op_type && strcmp(nd->op_type, "Conv") == 0;
        if ((gemm || conv) && nd->n_input > 2) tc = init_named(gr, nd->input[2]);
        if (!gemm && !conv && nd->n_output > 0) { /* MatMul: the Add that reads its output */
            for (size_t i = 0; i < gr->n_node && !tc; i++) {
                Onnx__NodeProto *a = gr->node[i];
                if (!a->op_type || strcmp(a->op_type, "Add") || a->n_input != 2) continue;
                for (int s = 0; s < 2 && !tc; s++)
                    if (strcmp(a->input[s], nd->output[0]) == 0) tc = init_named(gr, a->input[1 - s]);
            }
        }
        if (!tc) {
            tpuc_err(err, errlen, "node '%s': its bias is not an initializer", w[k].node);
            goto out;
        }
        if (set_data(tc, w[k].bias, w[k].o, owned, &nowned, err, errlen)) goto out;
    }
    {
        size_t n = onnx__model_proto__get_packed_size(m);
        uint8_t *pk = malloc(n + 1);
        if (!pk) { tpuc_err(err, errlen, "out of memory"); goto out; }
        onnx__model_proto__pack(m, pk);
        rc = tpu_file_write(out_path, pk, n, err, errlen);
        free(pk);
    }
out:
    /* give the unpacked message its own buffers back, free ours */
    for (size_t i = nowned; i >= 3; i -= 3) {
        Onnx__TensorProto *tp = (Onnx__TensorProto *)owned[i - 2];
        free(owned[i - 1]);
        tp->raw_data.data = owned[i - 3];
        if (!tp->raw_data.data) { tp->has_raw_data = 0; tp->raw_data.len = 0; }
    }
    free(owned);
    free(tw);
    onnx__model_proto__free_unpacked(m, NULL);
    return rc;
}
