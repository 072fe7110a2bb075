/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 3, continued (lower.c calls these on a Reshape): MaxViT's window partition and its way
   back, on a Conv/pool output (issue 32; docs/compiler.md "Windows of a Conv output").

   torchvision's MaxViT cuts a Conv output [B, C, H, W] into P x P windows with
     Reshape [B, C, H/P, P, W/P, P], Transpose perm q (e.g. [0, 2, 4, 3, 5, 1]), Reshape,
   and puts them back with Transpose, Reshape [B, C, H, W] before the next Conv. A Conv
   output lives channels-last (a pixel per row), so the 6-D Reshape is no view of it. Both
   become row moves of the pixels as rows:
   - partition: the first Reshape (read only by the Transpose) becomes TPUC_OP_TOROWS of x
     (its pixels as the rows of a row-major [B, H, W, C], tile_channels.c), a row-major
     Reshape (a view) to [B, H/P, P, W/P, P, C] follows, and the Transpose reads that with its
     perm composed: output axis j is the rows' axis m[q[j]], m = [0, 5, 1, 2, 3, 4] (C last);
   - back: a Reshape to [B, C, H, W] of a Transpose's 6-D output [B, C, h, p, w, p'] (h p = H,
     w p' = W; read only by it) whose readers all take a Conv layout (Conv, pools, BN, the
     next partition's Reshape, and elementwise nodes whose own readers do) and one needs it:
     the Transpose's perm is composed with [0, 2, 3, 4, 5, 1] (its output
     [B, h, p, w, p', C]), the Reshape makes that [B, H, W, C] (a view) and a Transpose
     [0, 3, 1, 2] after it (TPUC_OP_TOPIXELS, channels.c) writes the Conv layout.
   Where the composed perm keeps the last axis (MaxViT's do) the Transposes are DMA row
   copies; every step moves bits only. */
#include <stdlib.h>
#include <string.h>

#include "tpuc/tpuc.h"
#include "tpuc_internal.h"
#include "attn.h"

/* Readers of tensor t: how many, and the last one (NULL when t is a graph output). */
static tpuc_node_t *readers(tpuc_graph_t *g, int t, int *count)
{
    tpuc_node_t *r = NULL;
    *count = 0;
    for (size_t i = 0; i < g->nn; i++) {
        tpuc_node_t *n = &g->n[i];
        if (n->op == TPUC_OP_DEAD) continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] == t) { r = n; ++*count; break; }
    }
    return g->t[t].is_output ? NULL : r;
}

/* Whether a Reshape of x to v cuts [B, C, H, W] into [B, C, h, p, w, p'] (h p = H, w p' = W) */
static int window_shape(const tpuc_tensor_t *x, const tpuc_tensor_t *v)
{
    return x->ndim == 4 && v->ndim == 6 && v->dims[0] == x->dims[0] && v->dims[1] == x->dims[1] &&
           v->dims[2] * v->dims[3] == x->dims[2] && v->dims[4] * v->dims[5] == x->dims[3];
}

/* Whether every reader of t takes a Conv layout, following elementwise readers to theirs:
   -1 one does not, 1 one needs it (Conv, pool, BN, Pad), 0 neither. depth: a bound on the
   walk. */
static int readers_want_pixels(const tpuc_graph_t *g, int t, int depth)
{
    int need = 0;
    if (g->t[t].is_output || depth > 16) return -1;
    for (size_t i = 0; i < g->nn; i++) {
        const tpuc_node_t *n = &g->n[i];
        for (int k = 0; k < n->nin && n->op != TPUC_OP_DEAD; k++) {
            if (n->in[k] != t) continue;
            switch (n->op) {
            case TPUC_OP_CONV: case TPUC_OP_MAXPOOL: case TPUC_OP_AVGPOOL: case TPUC_OP_GAP:
            case TPUC_OP_BN: case TPUC_OP_PAD:
                need = 1;
                break;
            case TPUC_OP_ADD: case TPUC_OP_SUB: case TPUC_OP_MUL: case TPUC_OP_RELU:
            case TPUC_OP_SIGMOID: case TPUC_OP_TANH: case TPUC_OP_CLIP: case TPUC_OP_GELU:
            case TPUC_OP_ERF: case TPUC_OP_GELU_ERF: case TPUC_OP_HARDSIGMOID:
            case TPUC_OP_HARDSWISH: {
                int r = readers_want_pixels(g, n->out[0], depth + 1);
                if (r < 0) return -1;
                need |= r;
                break;
            }
            case TPUC_OP_RESHAPE: /* the next window partition takes either */
                if (window_shape(&g->t[t], &g->t[n->out[0]])) break;
                return -1;
            default:
                return -1;
            }
        }
    }
    return need;
}

/* A new int64 constant [nd] holding d (a Reshape's shape input); its index or -1. */
static int shape_const(tpuc_graph_t *g, const char *base, int nd, const int64_t *d)
{
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/shape", base);
    int si = tpuc_add_tensor(g, nm);
    if (si < 0) return -1;
    tpuc_tensor_t *s = &g->t[si];
    s->ndim = 1;
    s->dims[0] = nd;
    s->is_const = 1;
    s->dtype = TPUC_I64;
    s->i = malloc(sizeof *s->i * (size_t)nd);
    if (!s->i) return -1;
    memcpy(s->i, d, sizeof *s->i * (size_t)nd);
    s->nuses = 1;
    return si;
}

/* Inserts node `at`: op (a Reshape to y's dims, reading x, or a Transpose by perm) x -> y. */
static int insert(tpuc_graph_t *g, size_t at, tpuc_op_t op, int x, int y, int shp, const int *perm,
                  const char *name)
{
    if (tpuc_insert_node_at(g, at)) return -1;
    tpuc_node_t *n = &g->n[at];
    n->name = tpuc_strdup(name);
    n->op_type = tpuc_strdup(op == TPUC_OP_RESHAPE ? "Reshape(window)" : "Transpose(window)");
    if (!n->name || !n->op_type) return -1;
    n->op = op;
    n->version = 13;
    n->nin = op == TPUC_OP_RESHAPE ? 2 : 1;
    n->in[0] = x;
    n->in[1] = shp;
    n->nout = 1;
    n->out[0] = y;
    if (perm)
        for (int j = 0; j < g->t[x].ndim; j++) n->perm[j] = perm[j];
    g->t[y].producer = (int)at;
    return 0;
}

static void set_dims(tpuc_tensor_t *t, int nd, const int64_t *d)
{
    t->ndim = nd;
    for (int j = 0; j < nd; j++) t->dims[j] = d[j];
}

/* partition: Reshape node ni of SPATIAL x [B, C, H, W] to [B, C, h, p, w, p'] */
static int partition(tpuc_graph_t *g, size_t ni)
{
    tpuc_node_t *r = &g->n[ni];
    const tpuc_tensor_t *x = &g->t[r->in[0]], *v = &g->t[r->out[0]];
    if (!window_shape(x, v)) return 0;
    int nr;
    tpuc_node_t *tr = readers(g, r->out[0], &nr);
    if (!tr || nr != 1 || tr->op != TPUC_OP_TRANSPOSE || tr->perm[0] != 0) return 0;
    static const int m[6] = {0, 5, 1, 2, 3, 4};
    int q[6];
    for (int j = 0; j < 6; j++) q[j] = m[tr->perm[j]];
    const int64_t rows[4] = {x->dims[0], x->dims[2], x->dims[3], x->dims[1]};
    const int64_t six[6] = {v->dims[0], v->dims[2], v->dims[3], v->dims[4], v->dims[5], v->dims[1]};
    const size_t ti = (size_t)(tr - g->n);
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/rows6", r->name);
    int u = tpuc_add_tensor(g, nm), si = u < 0 ? -1 : shape_const(g, nm, 6, six);
    if (si < 0) return -1;
    /* r: the pixels as rows [B, H, W, C] (its shape input dropped) */
    r = &g->n[ni];
    g->t[r->in[1]].nuses--;
    r->nin = 1;
    r->op = TPUC_OP_TOROWS;
    r->perm[0] = 0; r->perm[1] = 2; r->perm[2] = 3; r->perm[3] = 1;
    set_dims(&g->t[r->out[0]], 4, rows);
    g->t[r->out[0]].lay.kind = TPUC_LAYOUT_PLAIN;
    set_dims(&g->t[u], 6, six);
    g->t[u].nuses = 1;
    if (insert(g, ni + 1, TPUC_OP_RESHAPE, r->out[0], u, si, NULL, nm)) return -1;
    tr = &g->n[ti + 1];
    tr->in[0] = u;
    for (int j = 0; j < 6; j++) tr->perm[j] = q[j];
    return 1;
}

/* back: Reshape node ni of PLAIN v [B, C, h, p, w, p'] (a Transpose's output) to [B, C, H, W] */
static int departition(tpuc_graph_t *g, size_t ni)
{
    tpuc_node_t *r = &g->n[ni];
    const tpuc_tensor_t *v = &g->t[r->in[0]], *y = &g->t[r->out[0]];
    if (!window_shape(y, v) || v->producer < 0 || readers_want_pixels(g, r->out[0], 0) != 1)
        return 0;
    tpuc_node_t *tr = &g->n[v->producer];
    int nr;
    if (tr->op != TPUC_OP_TRANSPOSE || readers(g, r->in[0], &nr) != r || nr != 1 ||
        g->t[tr->in[0]].lay.kind != TPUC_LAYOUT_PLAIN)
        return 0;
    static const int m[6] = {0, 2, 3, 4, 5, 1};
    int q[6];
    for (int j = 0; j < 6; j++) q[j] = tr->perm[m[j]];
    if (q[0] != 0) return 0;
    const int64_t six[6] = {v->dims[0], v->dims[2], v->dims[3], v->dims[4], v->dims[5], v->dims[1]};
    const int64_t rows[4] = {y->dims[0], y->dims[2], y->dims[3], y->dims[1]};
    const int yo = r->out[0];
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/rows", r->name);
    int w = tpuc_add_tensor(g, nm);
    if (w < 0) return -1;
    /* the Transpose writes [B, h, p, w, p', C], the Reshape [B, H, W, C] into w */
    for (int j = 0; j < 6; j++) tr->perm[j] = q[j];
    set_dims(&g->t[r->in[0]], 6, six);
    r = &g->n[ni];
    set_dims(&g->t[w], 4, rows);
    g->t[w].nuses = 1;
    g->t[w].producer = (int)ni;
    g->t[w].lay.kind = TPUC_LAYOUT_PLAIN;
    r->out[0] = w;
    const int64_t d4[4] = {rows[0], rows[1], rows[2], rows[3]};
    int si = shape_const(g, nm, 4, d4);
    if (si < 0) return -1;
    r = &g->n[ni];
    g->t[r->in[1]].nuses--;
    r->in[1] = si;
    static const int to_pixels[4] = {0, 3, 1, 2};
    if (insert(g, ni + 1, TPUC_OP_TRANSPOSE, w, yo, -1, to_pixels, nm)) return -1;
    return 1;
}

int tpuc_lower_window(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    tpuc_node_t *r = &g->n[ni];
    if (r->op != TPUC_OP_RESHAPE || g->t[r->in[0]].lay.flat) return 0;
    int k = g->t[r->in[0]].lay.kind == TPUC_LAYOUT_SPATIAL ? partition(g, ni)
          : g->t[r->in[0]].lay.kind == TPUC_LAYOUT_PLAIN ? departition(g, ni) : 0;
    if (k < 0) tpuc_err(err, errlen, "out of memory");
    return k;
}

int tpuc_lower_concat_rows(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    tpuc_node_t *n = &g->n[ni];
    const tpuc_tensor_t *y = &g->t[n->out[0]];
    if (n->op != TPUC_OP_CONCAT || y->ndim != 4) return 0;
    int64_t ax = tpuc_attr_int(n, "axis", 1);
    if (ax < 0) ax += 4;
    int plain = 1;
    for (int k = 0; k < n->nin; k++) {
        const tpuc_tensor_t *t = &g->t[n->in[k]];
        plain &= !t->is_const && t->lay.kind == TPUC_LAYOUT_PLAIN && !t->lay.flat;
    }
    if (!plain) {
        if (ax == 1) return 0; /* the channels of Conv/pool outputs (tile.c) */
        NODE_ERR(n, "a Concat along axis %lld of Conv/pool outputs (channels-last in memory): only along the channels (1)", (long long)ax);
    }
    /* [P, d_ax, Q] views of every input, a Concat of rows (tile_channels.c), a view back;
       along the last axis [P, d_ax] views and the Concat of [B, F]'s features (tile.c) */
    int64_t P = 1, Q = 1;
    for (int j = 0; j < ax; j++) P *= y->dims[j];
    for (int j = (int)ax + 1; j < 4; j++) Q *= y->dims[j];
    const int vr = ax == 3 ? 2 : 3;
    char base[220], nm[300];
    snprintf(base, sizeof base, "%.200s", n->name);
    const int nin = n->nin, yo = n->out[0];
    for (int k = 0; k < nin; k++) {
        const int xi = g->n[ni + (size_t)k].in[k];
        const int64_t d3[3] = {P, g->t[xi].dims[ax], Q};
        snprintf(nm, sizeof nm, "%s/rows%d", base, k);
        int v = tpuc_add_tensor(g, nm), si = v < 0 ? -1 : shape_const(g, nm, vr, d3);
        if (si < 0 || insert(g, ni + (size_t)k, TPUC_OP_RESHAPE, xi, v, si, NULL, nm))
            return tpuc_err(err, errlen, "out of memory"), -1;
        set_dims(&g->t[v], vr, d3);
        g->t[v].nuses = 1;
        g->t[v].lay.kind = TPUC_LAYOUT_PLAIN;
        g->n[ni + (size_t)k + 1].in[k] = v;
    }
    n = &g->n[ni + (size_t)nin];
    snprintf(nm, sizeof nm, "%s/rows", base);
    const int64_t z3[3] = {P, y->dims[ax], Q}, y4[4] = {y->dims[0], y->dims[1], y->dims[2], y->dims[3]};
    int z = tpuc_add_tensor(g, nm), si = z < 0 ? -1 : shape_const(g, nm, 4, y4);
    if (si < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    n = &g->n[ni + (size_t)nin];
    for (size_t k = 0; k < n->nattrs; k++)
        if (strcmp(n->attrs[k].name, "axis") == 0) n->attrs[k].i = 1;
    n->out[0] = z;
    set_dims(&g->t[z], vr, z3);
    g->t[z].nuses = 1;
    g->t[z].producer = (int)(ni + (size_t)nin);
    if (insert(g, ni + (size_t)nin + 1, TPUC_OP_RESHAPE, z, yo, si, NULL, nm)) return tpuc_err(err, errlen, "out of memory"), -1;
    return 1;
}
