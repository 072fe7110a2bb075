/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 3: graph -> graph. Decides how every activation lives in host memory (docs/compiler.md
   "Layouts"): PLAIN (row-major, the last dimension in the row) or SPATIAL (a pixel per row,
   channels in the row, with the clean padding its Conv/pool consumers read). Also fuses a
   Softmax into the Gemm before it, and refuses what the core cannot run (a Flatten of a
   SPATIAL tensor read by anything but Gemm/MatMul, a padding a consumer needs that its
   producer cannot provide). */
#include <stdlib.h>
#include <string.h>

#include "tpuc/tpuc.h"
#include "tpuc_internal.h"
#include "attn.h"

static int is_spatial_op(tpuc_op_t op)
{
    return op == TPUC_OP_CONV || op == TPUC_OP_MAXPOOL || op == TPUC_OP_AVGPOOL ||
           op == TPUC_OP_GAP;
}

/* Wants SPATIAL input: conv/pools always; BN on a >= 3-D input. */
static int wants_spatial(const tpuc_graph_t *g, const tpuc_node_t *n)
{
    if (is_spatial_op(n->op)) return 1;
    if (n->op == TPUC_OP_CONCAT && g->t[n->in[0]].ndim >= 3) {
        /* the rows of row-major [B, L, D] when its first activation is row-major (an
           unrolled RNN's steps, ViT's tokens: tile_channels.c), else channels */
        for (int k = 0; k < n->nin; k++)
            if (!g->t[n->in[k]].is_const) return g->t[n->in[k]].lay.kind != TPUC_LAYOUT_PLAIN;
        return 1;
    }
    if (n->op == TPUC_OP_PAD) return 1; /* [B, C, H, W] / [B, C, L] only (fold_pad.c) */
    if (n->op == TPUC_OP_BN && g->t[n->in[0]].ndim >= 3) return 1;
    if (n->op == TPUC_OP_CHANNELS) return 1; /* channels.c: Conv/pool outputs only */
    return 0;
}

int tpuc_lower(tpuc_graph_t *g, const tpuc_hw_t *hw, char *err, size_t errlen)
{
    (void)hw;
    /* Softmax right after a Gemm/MatMul with no activation: computed from ACC in its epilogue */
    for (size_t i = 0; i < g->nn; i++) {
        tpuc_node_t *n = &g->n[i];
        if (n->op != TPUC_OP_SOFTMAX) continue;
        int xi = n->in[0];
        int pi = g->t[xi].producer;
        if (pi < 0 || g->t[xi].nuses != 1 || g->t[xi].is_output) continue;
        tpuc_node_t *p = &g->n[pi];
        if ((p->op != TPUC_OP_GEMM && p->op != TPUC_OP_MATMUL) || p->fuse_act) continue;
        if (n->red_lo != g->t[xi].ndim - 1) continue; /* the epilogue's row is the last axis */
        p->fuse_softmax = 1;
        p->out[0] = n->out[0];
        g->t[n->out[0]].producer = pi;
        n->op = TPUC_OP_DEAD;
    }
    /* layout kinds, in topological order */
    tpuc_tensor_t *x = &g->t[g->inputs[0]];
    int sp_in = 0;
    for (size_t i = 0; i < g->nn; i++) {
        const tpuc_node_t *n = &g->n[i];
        if (n->op != TPUC_OP_DEAD && n->in[0] == g->inputs[0] && wants_spatial(g, n)) sp_in = 1;
    }
    if (sp_in && x->ndim != 3 && x->ndim != 4) {
        tpuc_err(err, errlen, "input '%s' of %d dimensions feeds a Conv/pool, expected 3 or 4",
                 x->name, x->ndim);
        return -1;
    }
    x->lay.kind = sp_in ? TPUC_LAYOUT_SPATIAL : TPUC_LAYOUT_PLAIN;
    for (size_t i = 0; i < g->nn; i++) {
        tpuc_node_t *n = &g->n[i];
        if (n->op == TPUC_OP_DEAD) continue;
        tpuc_tensor_t *a = &g->t[n->in[0]];
        tpuc_tensor_t *y = &g->t[n->out[0]];
#define LERR(...)                                                                            \
    do {                                                                                     \
        char m_[300];                                                                        \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                \
        tpuc_err(err, errlen, "node '%s' (%s): %s", n->name, n->op_type, m_);                \
        return -1;                                                                           \
    } while (0)
        if (wants_spatial(g, n) && a->lay.kind != TPUC_LAYOUT_SPATIAL) {
            if (a->lay.kind == TPUC_LAYOUT_PLAIN)
                LERR("its input '%s' is laid out row-major by its producer; a Conv/pool input "
                     "must come from the graph input or another Conv/pool", a->name);
        }
        switch (n->op) {
        case TPUC_OP_CONV: case TPUC_OP_MAXPOOL: case TPUC_OP_AVGPOOL: case TPUC_OP_GAP:
        case TPUC_OP_PAD: case TPUC_OP_CHANNELS: case TPUC_OP_TOPIXELS:
            y->lay.kind = TPUC_LAYOUT_SPATIAL;
            break;
        case TPUC_OP_TOROWS:
            y->lay.kind = TPUC_LAYOUT_PLAIN;
            break;
        case TPUC_OP_FLATTEN: case TPUC_OP_RESHAPE: {
            /* torch's channel_shuffle of a Conv/pool output: one node of channel copies (the
               Transpose and the Reshape back are later nodes; this one is now dead); ViT's
               patch rows (Reshape to [B, C, H W], Transpose [0, 2, 1]): its pixels as rows */
            if (a->lay.kind == TPUC_LAYOUT_SPATIAL && !a->lay.flat &&
                (tpuc_lower_shuffle(g, i) || tpuc_lower_patch_rows(g, i)))
                break;
            /* MaxViT's window partition of a Conv output and its way back (window.c) */
            int wr = tpuc_lower_window(g, i, err, errlen);
            if (wr < 0) return -1;
            if (wr) break;
            int pix1 = a->ndim >= 3;
            for (int d = 2; d < a->ndim; d++) if (a->dims[d] != 1) pix1 = 0;
            if (a->lay.kind == TPUC_LAYOUT_SPATIAL && pix1 && y->ndim == 2) {
                /* [B, C, 1, 1] -> [B, C]: one pixel per image is a row-major [B, C] when
                   tile lays it out densely (GlobalAveragePool's output is) */
                y->lay.kind = TPUC_LAYOUT_PLAIN;
            } else if (a->lay.kind == TPUC_LAYOUT_SPATIAL) {
                /* read as [B, C*H*W] by a Gemm/MatMul only (weights permuted); h = w = 1 is
                   plain [B, C] */
                y->lay.kind = TPUC_LAYOUT_SPATIAL;
                y->lay.flat = 1;
                if (y->ndim != 2) LERR("a reshape of a Conv/pool output to %d dimensions; only a flatten to [batch, features] is supported", y->ndim);
                for (size_t k = 0; k < g->nn; k++) {
                    const tpuc_node_t *c = &g->n[k];
                    if (c->op == TPUC_OP_DEAD) continue;
                    for (int j = 0; j < c->nin; j++)
                        if (c->in[j] == n->out[0] && c->op != TPUC_OP_GEMM && c->op != TPUC_OP_MATMUL)
                            LERR("its output is read by '%s' (%s); a flattened Conv/pool output can only feed a Gemm or MatMul", c->name, c->op_type);
                }
                if (y->is_output) LERR("a flattened Conv/pool output as the graph output is not supported");
            } else {
                y->lay.kind = TPUC_LAYOUT_PLAIN;
            }
            break;
        }
        case TPUC_OP_GATHER:
            /* an embedding lookup: [B, L, D] row-major, or [B, D, L] a pixel per row */
            y->lay.kind = n->embed == 2 ? TPUC_LAYOUT_SPATIAL : TPUC_LAYOUT_PLAIN;
            break;
        case TPUC_OP_GEMM: case TPUC_OP_MATMUL:
            if (a->lay.kind == TPUC_LAYOUT_SPATIAL && !a->lay.flat)
                LERR("a Gemm/MatMul on a Conv/pool output needs a Flatten before it");
            y->lay.kind = TPUC_LAYOUT_PLAIN;
            break;
        case TPUC_OP_SOFTMAX:
            if (a->lay.kind != TPUC_LAYOUT_PLAIN) LERR("Softmax of a Conv/pool output (channels-last in memory) is not supported");
            y->lay.kind = TPUC_LAYOUT_PLAIN;
            break;
        case TPUC_OP_REDUCEMEAN: case TPUC_OP_REDUCESUM: case TPUC_OP_REDUCEMAX: case TPUC_OP_LAYERNORM: {
            /* x.mean([2, 3]) of a Conv/pool output: a GlobalAveragePool (reduce_gap.c); the
               Reshape it may add is the next node */
            int gap = tpuc_mean_to_gap(g, i, err, errlen);
            if (gap < 0) return -1;
            if (gap) {
                g->t[g->n[i].out[0]].lay.kind = TPUC_LAYOUT_SPATIAL;
                break;
            }
            if (a->lay.kind != TPUC_LAYOUT_PLAIN || a->lay.flat)
                LERR("a reduction or LayerNorm of a Conv/pool output (channels-last in memory) is not supported (but ReduceMean over every spatial axis)");
            y->lay.kind = TPUC_LAYOUT_PLAIN;
            break;
        }
        case TPUC_OP_TRANSPOSE: case TPUC_OP_SLICE: case TPUC_OP_MATMUL2:
            /* a Slice of the channels of a Conv/pool output (x.chunk(2, dim=1)): channel
               copies (channels.c) */
            if (a->lay.kind == TPUC_LAYOUT_SPATIAL && !a->lay.flat && tpuc_lower_chslice(g, n)) {
                y->lay.kind = TPUC_LAYOUT_SPATIAL;
                break;
            }
            /* ConvNeXt's permutes: a Conv/pool output's pixels as rows, and back */
            if (tpuc_lower_relayout(g, n)) break;
            if (tpuc_lower_attn(g, n, err, errlen)) return -1;
            break;
        case TPUC_OP_CONCAT: {
            /* row-major 4-D along H, W (Swin's torch.roll) or C (patch merging): views (window.c) */
            int cr = tpuc_lower_concat_rows(g, i, err, errlen);
            if (cr < 0) return -1;
            if (cr) {
                i--; /* the first view, at i, next */
                continue;
            }
            /* the layout of the activations; constants (ViT's class token) are rows copied
               from the constant image into a row-major Concat */
            const tpuc_tensor_t *ref = NULL;
            for (int k = 0; k < n->nin && !ref; k++)
                if (!g->t[n->in[k]].is_const) ref = &g->t[n->in[k]];
            if (!ref) LERR("internal: a Concat of constants");
            for (int k = 0; k < n->nin; k++) {
                const tpuc_tensor_t *t = &g->t[n->in[k]];
                if (t->is_const ? ref->lay.kind != TPUC_LAYOUT_PLAIN : t->lay.kind != ref->lay.kind || t->lay.flat)
                    LERR("inputs with different memory layouts (a Conv/pool output and a row-major tensor, or a constant)");
            }
            y->lay.kind = ref->lay.kind;
            break;
        }
        case TPUC_OP_PICK:
            if (a->lay.kind != TPUC_LAYOUT_PLAIN || a->lay.flat) LERR("x[:, i] of a Conv/pool output is not supported");
            y->lay.kind = TPUC_LAYOUT_PLAIN;
            break;
        default: { /* elementwise, BN: the input's kind (the activation's: c + x, c - x) */
            int second = n->nin > 1 && n->in[1] >= 0 ? n->in[1] : -1;
            if (a->is_const && second >= 0 && !g->t[second].is_const) {
                a = &g->t[second];
                second = -1;
            }
            if (a->lay.flat) LERR("a flattened Conv/pool output can only feed a Gemm or MatMul");
            y->lay.kind = a->lay.kind;
            if (second >= 0 && !g->t[second].is_const && g->t[second].lay.kind != a->lay.kind)
                LERR("two inputs with different memory layouts");
            break;
        }
        }
#undef LERR
    }
    return 0;
}
