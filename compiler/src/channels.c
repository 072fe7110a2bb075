/* SPDX-License-Identifier: Apache-2.0 */
/* Channel moves on Conv/pool outputs (ShuffleNetV2): a Conv/pool output lives channels-last
   (a pixel per row, its channels in the row), so a Reshape to 5 dimensions or a Slice of it
   cannot be a view. Two patterns become one TPUC_OP_CHANNELS node each, lowered as DMA copies
   of channel runs (tile_channels.c); no arithmetic, so the bits move unchanged:
   - torch's channel_shuffle: Reshape [B, C, H, W] -> [B, g, C/g, H, W], Transpose perm
     [0, 2, 1, 3, 4], Reshape back to [B, C, H, W] (each read only by the next): output
     channel j is input channel (j % g) * (C/g) + j / g;
   - a Slice of the channels only (x.chunk(2, dim=1)): output channel j is input channel
     start + j.
   And ConvNeXt's permutes around its LayerNorm and Linear layers: Transpose [0, 2, 3, 1] of a
   Conv/pool output is its pixels as rows (TPUC_OP_TOROWS: a row-major [B, H, W, C]), and
   Transpose [0, 3, 1, 2] of a row-major [B, H, W, C] the way back (TPUC_OP_TOPIXELS), both
   DMA copies (tile_channels.c). */
#include <string.h>

#include "tpuc/tpuc.h"
#include "tpuc_internal.h"
#include "attn.h"

/* The node reading tensor t (its only reader), or NULL. */
static tpuc_node_t *sole_reader(tpuc_graph_t *g, int t)
{
    if (g->t[t].nuses != 1 || g->t[t].is_output) return NULL;
    for (size_t i = 0; i < g->nn; i++) {
        tpuc_node_t *n = &g->n[i];
        if (n->op == TPUC_OP_DEAD) continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] == t) return n;
    }
    return NULL;
}

/* Whether tensors a and b have the same dimensions. */
static int same_dims(const tpuc_tensor_t *a, const tpuc_tensor_t *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return 0;
    return 1;
}

int tpuc_lower_shuffle(tpuc_graph_t *g, size_t ni)
{
    tpuc_node_t *r1 = &g->n[ni];
    const tpuc_tensor_t *x = &g->t[r1->in[0]], *v = &g->t[r1->out[0]];
    if (r1->op != TPUC_OP_RESHAPE || x->ndim != 4 || v->ndim != 5) return 0;
    if (v->dims[0] != x->dims[0] || v->dims[1] * v->dims[2] != x->dims[1] ||
        v->dims[3] != x->dims[2] || v->dims[4] != x->dims[3])
        return 0;
    tpuc_node_t *tr = sole_reader(g, r1->out[0]);
    if (!tr || tr->op != TPUC_OP_TRANSPOSE) return 0;
    static const int perm[5] = {0, 2, 1, 3, 4};
    for (int d = 0; d < 5; d++)
        if (tr->perm[d] != perm[d]) return 0;
    tpuc_node_t *r2 = sole_reader(g, tr->out[0]);
    if (!r2 || r2->op != TPUC_OP_RESHAPE || !same_dims(&g->t[r2->out[0]], x)) return 0;
    r2->op = TPUC_OP_CHANNELS;
    r2->nin = 1;
    r2->in[0] = r1->in[0];
    r2->groups = (int)v->dims[1];
    memset(r2->sl_start, 0, sizeof r2->sl_start);
    r1->op = TPUC_OP_DEAD;
    tr->op = TPUC_OP_DEAD;
    return 1;
}

int tpuc_lower_chslice(tpuc_graph_t *g, tpuc_node_t *n)
{
    const tpuc_tensor_t *x = &g->t[n->in[0]], *y = &g->t[n->out[0]];
    if (n->op != TPUC_OP_SLICE || (x->ndim != 3 && x->ndim != 4) || y->ndim != x->ndim) return 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != 1 && (y->dims[d] != x->dims[d] || n->sl_start[d] != 0)) return 0;
    n->op = TPUC_OP_CHANNELS;
    n->nin = 1;
    n->groups = 1;
    return 1;
}

/* Whether every reader of tensor t takes a Conv/pool layout as it comes (elementwise ops
   follow their input's layout; Conv, pools, Flatten, Concat, Pad read it as such), so a
   row-major Transpose [0, 3, 1, 2] may write one; attention's row-major readers (MatMul,
   Softmax, reductions, Transpose, Slice) keep the plain Transpose. */
static int readers_take_pixels(const tpuc_graph_t *g, int t)
{
    for (size_t i = 0; i < g->nn; i++) {
        const tpuc_node_t *n = &g->n[i];
        for (int k = 0; k < n->nin && n->op != TPUC_OP_DEAD; k++) {
            if (n->in[k] != t) continue;
            switch (n->op) {
            case TPUC_OP_ADD: case TPUC_OP_SUB: case TPUC_OP_MUL: case TPUC_OP_RELU:
            case TPUC_OP_SIGMOID: case TPUC_OP_TANH: case TPUC_OP_CLIP: case TPUC_OP_GELU:
            case TPUC_OP_ERF: case TPUC_OP_GELU_ERF:
            case TPUC_OP_HARDSIGMOID: case TPUC_OP_HARDSWISH: case TPUC_OP_BN:
            case TPUC_OP_CONV: case TPUC_OP_MAXPOOL: case TPUC_OP_AVGPOOL: case TPUC_OP_GAP:
            case TPUC_OP_FLATTEN: case TPUC_OP_CONCAT: case TPUC_OP_PAD:
                break;
            default:
                return 0;
            }
        }
    }
    return 1;
}

int tpuc_lower_relayout(tpuc_graph_t *g, tpuc_node_t *n)
{
    static const int to_rows[4] = {0, 2, 3, 1}, to_pixels[4] = {0, 3, 1, 2};
    const tpuc_tensor_t *x = &g->t[n->in[0]];
    if (n->op != TPUC_OP_TRANSPOSE || x->ndim != 4 || x->lay.flat) return 0;
    int rows = 1, pixels = 1;
    for (int d = 0; d < 4; d++) {
        rows &= n->perm[d] == to_rows[d];
        pixels &= n->perm[d] == to_pixels[d];
    }
    if (rows && x->lay.kind == TPUC_LAYOUT_SPATIAL) {
        n->op = TPUC_OP_TOROWS;
        g->t[n->out[0]].lay.kind = TPUC_LAYOUT_PLAIN;
        return 1;
    }
    if (pixels && x->lay.kind == TPUC_LAYOUT_PLAIN && readers_take_pixels(g, n->out[0])) {
        n->op = TPUC_OP_TOPIXELS;
        g->t[n->out[0]].lay.kind = TPUC_LAYOUT_SPATIAL;
        return 1;
    }
    return 0;
}

int tpuc_lower_patch_rows(tpuc_graph_t *g, size_t ni)
{
    tpuc_node_t *r = &g->n[ni];
    const tpuc_tensor_t *x = &g->t[r->in[0]], *v = &g->t[r->out[0]];
    if (r->op != TPUC_OP_RESHAPE || x->ndim != 4 || v->ndim != 3 || v->dims[0] != x->dims[0] ||
        v->dims[1] != x->dims[1] || v->dims[2] != x->dims[2] * x->dims[3])
        return 0;
    tpuc_node_t *tr = sole_reader(g, r->out[0]);
    if (!tr || tr->op != TPUC_OP_TRANSPOSE || tr->perm[0] != 0 || tr->perm[1] != 2 || tr->perm[2] != 1)
        return 0;
    tr->op = TPUC_OP_TOROWS;
    tr->in[0] = r->in[0];
    r->op = TPUC_OP_DEAD;
    g->t[tr->out[0]].lay.kind = TPUC_LAYOUT_PLAIN;
    return 1;
}
