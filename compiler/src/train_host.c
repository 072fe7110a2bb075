/* SPDX-License-Identifier: Apache-2.0 */
/* The host side of a training step (train.h): the image every core starts from, the batch and
   labels the host places before each step, and what it reads back. All values in host memory
   are little-endian fp32 or bf16 (the contract's RNE rounding from float32). */
#include <math.h>
#include <string.h>

#include "tpuc/train.h"

static void put32(uint8_t *h, uint64_t a, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    h[a] = (uint8_t)u; h[a + 1] = (uint8_t)(u >> 8); h[a + 2] = (uint8_t)(u >> 16); h[a + 3] = (uint8_t)(u >> 24);
}
static float get32(const uint8_t *h, uint64_t a)
{
    uint32_t u = (uint32_t)h[a] | (uint32_t)h[a + 1] << 8 | (uint32_t)h[a + 2] << 16 | (uint32_t)h[a + 3] << 24;
    float v;
    memcpy(&v, &u, 4);
    return v;
}
static void put16(uint8_t *h, uint64_t a, uint16_t v) { h[a] = (uint8_t)v; h[a + 1] = (uint8_t)(v >> 8); }

/* Where master element (k, j) of layer ly sits in the ONNX initializer: a Conv's master row k
   is (kh, kw, ci), its ONNX order [co][ci][kh][kw]; after a Conv the dense layer's row
   k = p*C + c is the ONNX row c*P + p (the NCHW flatten); the embedding's table is [V, D]
   as the master. */
static int64_t onnx_index(const tpuc_train_t *t, const tpuc_tlayer_t *ly, int64_t k, int64_t j)
{
    if (ly->conv) {
        const tpuc_tconv_t *c = &t->conv[ly->conv - 1];
        int64_t ci = k % c->cin, kw = (k / c->cin) % c->kw, kh = k / (c->cin * c->kw);
        return ((j * c->cin + ci) * c->kh + kh) * c->kw + kw;
    }
    if (ly->perm_c) {
        int64_t p = k / ly->perm_c, c = k % ly->perm_c;
        return (c * ly->perm_p + p) * ly->o + j;
    }
    return k * ly->o + j;
}

void tpuc_train_host_init(const tpuc_train_t *t, const tpuc_graph_t *g, uint8_t *host)
{
    const unsigned n = t->n;
    const double B = (double)t->batch * t->cores * t->micro; /* the global batch */
    const tpuc_train_opts_t *o = &t->opts;
    const double kv[] = {1.0, ldexp(1.0, 127), 1.0 / B, -1.0 / B, o->lr, o->momentum, o->beta1,
                         1.0 - o->beta1, o->beta2, 1.0 - o->beta2, o->eps, 0.0,
                         1.0 / (double)(t->gap_p > 0 ? t->gap_p : 1)};
    for (unsigned r = 0; r < sizeof kv / sizeof kv[0]; r++)
        for (unsigned i = 0; i < n; i++) put32(host, t->const_addr + ((uint64_t)r * n + i) * 4, (float)kv[r]);
    for (unsigned r = 0; r < n; r++)
        for (unsigned i = 0; i < n; i++) put16(host, t->ident_addr + ((uint64_t)r * n + i) * 2, r == i ? 0x3F80 : 0);
    put16(host, t->negzero_addr, 0x8000);
    for (unsigned i = 0; i < n; i++) put16(host, t->ones_addr + (uint64_t)i * 2, 0x3F80);
    put32(host, t->zero_addr, 0.0f);
    for (unsigned i = 0; i < 2 * n; i++) put32(host, t->adam_addr + (uint64_t)i * 4, 1.0f);
    for (int l = 0; l < t->nlayers; l++) {
        const tpuc_tlayer_t *ly = &t->layer[l];
        const tpuc_node_t *nd = &g->n[ly->node];
        const float *w = g->t[nd->in[ly->embed ? 0 : 1]].f;
        const float *bias = ly->has_bias ? g->t[nd->in[2]].f : NULL;
        for (int64_t k = 0; k < ly->k; k++)
            for (int64_t j = 0; j < ly->o; j++) {
                float v = w[onnx_index(t, ly, k, j)];
                put32(host, ly->w_master + (uint64_t)(k * ly->o + j) * 4, v);
                put16(host, ly->w_bf16 + (uint64_t)(k * ly->o + j) * 2, tpuc_f32_to_bf16(v));
            }
        if (bias)
            for (int64_t j = 0; j < ly->o; j++)
                put32(host, ly->w_master + (uint64_t)(ly->k * ly->o + j) * 4, bias[j]);
        if (ly->has_bias && !ly->conv && !ly->embed)
            for (long r = 0; r < t->batch; r++)
                put16(host, ly->xsave + ((uint64_t)r * ly->kp + (uint64_t)ly->k) * 2, 0x3F80);
    }
}

void tpuc_train_host_batch(const tpuc_train_t *t, uint8_t *host, const float *x,
                           const int32_t *labels)
{
    const tpuc_tlayer_t *l0 = &t->layer[0];
    for (long r = 0; r < t->batch; r++) {
        if (l0->embed) {
            /* token ids -> one-hot bf16 rows, one per position */
            const uint64_t V = (uint64_t)l0->k;
            for (int64_t p = 0; p < t->in_elems; p++) {
                const uint64_t row = (uint64_t)r * (uint64_t)t->in_elems + (uint64_t)p;
                const int64_t id = (int64_t)x[row];
                for (uint64_t v = 0; v < V; v++)
                    put16(host, l0->xsave + (row * V + v) * 2, (int64_t)v == id ? 0x3F80 : 0);
            }
        } else if (l0->conv) {
            /* NCHW in, the padded image NHWC (the padding stays +0 from tpuc_train_host_init) */
            const tpuc_tconv_t *c = &t->conv[0];
            const uint64_t img = (uint64_t)(c->img * c->cin);
            for (int64_t ch = 0; ch < c->cin; ch++)
                for (int64_t y = 0; y < c->h; y++)
                    for (int64_t xx = 0; xx < c->w; xx++)
                        put16(host, l0->xsave + ((uint64_t)r * img + (uint64_t)((c->pre + (y + c->pt) * c->wp + xx + c->pl) * c->cin + ch)) * 2,
                              tpuc_f32_to_bf16(x[(size_t)r * (size_t)t->in_elems + (size_t)((ch * c->h + y) * c->w + xx)]));
        } else
        for (int64_t k = 0; k < t->in_elems; k++)
            put16(host, l0->xsave + ((uint64_t)r * l0->kp + (uint64_t)k) * 2,
                  tpuc_f32_to_bf16(x[(size_t)r * (size_t)t->in_elems + (size_t)k]));
        for (int64_t c = 0; c < t->classes; c++)
            put16(host, t->onehot_addr + ((uint64_t)r * (uint64_t)t->classes + (uint64_t)c) * 2,
                  labels[r] == c ? 0x3F80 : 0);
    }
}

float tpuc_train_host_loss(const tpuc_train_t *t, const uint8_t *host)
{
    return get32(host, t->loss_addr);
}

void tpuc_train_host_probs(const tpuc_train_t *t, const uint8_t *host, float *p)
{
    for (uint64_t i = 0; i < (uint64_t)t->batch * (uint64_t)t->classes; i++)
        p[i] = get32(host, t->probs_addr + i * 4);
}

static void read_master(const tpuc_train_t *t, const tpuc_tlayer_t *ly, const uint8_t *host,
                        uint64_t base, float *w, float *bias)
{
    for (int64_t k = 0; k < ly->k; k++)
        for (int64_t j = 0; j < ly->o; j++)
            w[onnx_index(t, ly, k, j)] = get32(host, base + (uint64_t)(k * ly->o + j) * 4);
    if (bias && ly->has_bias)
        for (int64_t j = 0; j < ly->o; j++) bias[j] = get32(host, base + (uint64_t)(ly->k * ly->o + j) * 4);
}

void tpuc_train_host_weights(const tpuc_train_t *t, const uint8_t *host, int l, float *w,
                             float *bias)
{
    read_master(t, &t->layer[l], host, t->layer[l].w_master, w, bias);
}

void tpuc_train_host_grads(const tpuc_train_t *t, const uint8_t *host, int l, float *dw,
                           float *db)
{
    read_master(t, &t->layer[l], host, t->layer[l].grad, dw, db);
}
