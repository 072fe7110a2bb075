/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 2, continued (fold.c calls this on a Pad): Swin's window padding (issue 32;
   docs/compiler.md "Swin").

   torchvision's Swin keeps its maps row-major [B, H, W, C] (a pixel per row, as ConvNeXt's
   LayerNorm reads them) and pads them to whole windows with F.pad(x, (0, 0, 0, pad_r, 0,
   pad_b)): a Pad of axes 1 and 2. The Pad lowering (fold_pad.c, tile_pad.c) pads the
   spatial axes of a Conv layout [B, C, H, W], so the Pad becomes
     Transpose [0, 3, 1, 2] (a row-major [B, H, W, C] to a Conv layout: TOPIXELS, DMA),
     the Pad of [B, C, H, W]'s H and W (the same widths and constant),
     Transpose [0, 2, 3, 1] (back to rows: TOROWS, DMA),
   bits moved and the constant written, as the Pad itself. A Pad whose input is (or may be) a
   Conv layout (the graph input, a Conv or pool output, elementwise nodes of one) is left to
   fold_pad.c, which pads [B, C, H, W]'s spatial axes and refuses the channels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"

/* Whether tensor t is (or may be) laid out as a Conv layout: the graph input read by a Conv,
   pool, BatchNormalization or Pad, a Conv, pool, BatchNormalization, Pad or Concat output, or
   an elementwise node of one. Such a Pad is the
   Pad of [B, C, H, W] (fold_pad.c), which refuses the channels. */
static int conv_layout(const tpuc_graph_t *g, int t, int depth)
{
    const int p = g->t[t].producer;
    if (depth > 32) return 1;
    if (p < 0) { /* the graph input: a Conv layout when a Conv, pool, BN or Pad reads it */
        for (size_t i = 0; i < g->nn; i++) {
            const tpuc_node_t *r = &g->n[i];
            for (int k = 0; k < r->nin; k++)
                if (r->in[k] == t && (r->op == TPUC_OP_CONV || r->op == TPUC_OP_MAXPOOL ||
                                      r->op == TPUC_OP_AVGPOOL || r->op == TPUC_OP_GAP ||
                                      r->op == TPUC_OP_BN || r->op == TPUC_OP_PAD))
                    return 1;
        }
        return 0;
    }
    const tpuc_node_t *n = &g->n[p];
    switch (n->op) {
    case TPUC_OP_CONV: case TPUC_OP_MAXPOOL: case TPUC_OP_AVGPOOL: case TPUC_OP_GAP:
    case TPUC_OP_BN: case TPUC_OP_PAD: case TPUC_OP_CONCAT:
        return 1;
    case TPUC_OP_ADD: case TPUC_OP_SUB: case TPUC_OP_MUL: case TPUC_OP_DIV: case TPUC_OP_RELU:
    case TPUC_OP_SIGMOID: case TPUC_OP_TANH: case TPUC_OP_CLIP: case TPUC_OP_GELU:
    case TPUC_OP_ERF: case TPUC_OP_GELU_ERF: case TPUC_OP_HARDSIGMOID: case TPUC_OP_HARDSWISH:
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0 && !g->t[n->in[k]].is_const) return conv_layout(g, n->in[k], depth + 1);
        return 1;
    default:
        return 0;
    }
}

int tpuc_fold_pad_rows(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    tpuc_node_t *n = &g->n[ni];
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    const tpuc_attr_t *md = tpuc_attr(n, "mode");
    if (n->pad_set || a->is_const || a->ndim != 4 || n->version < 11 || n->nin < 2 || n->in[1] < 0 ||
        (md && md->s && strcmp(md->s, "constant") != 0) || conv_layout(g, n->in[0], 0))
        return 0;
    const tpuc_tensor_t *p = &g->t[n->in[1]];
    if (!p->is_const || !p->i || tpuc_tensor_elems(p) != 8) return 0;
    /* [x0b, x1b, x2b, x3b, x0e, x1e, x2e, x3e]: only H (1) and W (2), and one of them */
    if (p->i[0] || p->i[3] || p->i[4] || p->i[7] || !(p->i[1] || p->i[2] || p->i[5] || p->i[6])) return 0;
    const int64_t pw[8] = {0, 0, p->i[1], p->i[2], 0, 0, p->i[5], p->i[6]};
    char base[220], nm[300];
    snprintf(base, sizeof base, "%.200s", n->name);
    snprintf(nm, sizeof nm, "%s/pads_nchw", base);
    int pi = tpuc_add_tensor(g, nm);
    if (pi < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    tpuc_tensor_t *pt = &g->t[pi];
    pt->ndim = 1;
    pt->dims[0] = 8;
    pt->is_const = 1;
    pt->dtype = TPUC_I64;
    pt->nuses = 1;
    if (!(pt->i = malloc(sizeof pw))) return tpuc_err(err, errlen, "out of memory"), -1;
    memcpy(pt->i, pw, sizeof pw);
    snprintf(nm, sizeof nm, "%s/padded_nchw", base);
    int t2 = tpuc_add_tensor(g, nm);
    if (t2 < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    n = &g->n[ni];
    const int x = n->in[0], y = n->out[0];
    g->t[n->in[1]].nuses--;
    n->in[1] = pi;
    n->out[0] = t2;
    g->t[t2].nuses = 1;
    g->t[t2].producer = (int)ni;
    static const int to_pixels[4] = {0, 3, 1, 2}, to_rows[4] = {0, 2, 3, 1};
    int t1 = tpuc_add_transpose(g, ni, x, -1, to_pixels, 4, base, "to_nchw");
    if (t1 < 0 || tpuc_add_transpose(g, ni + 2, t2, y, to_rows, 4, base, "to_rows") < 0)
        return tpuc_err(err, errlen, "out of memory"), -1;
    g->n[ni + 1].in[0] = t1;
    return 1;
}

/* A new int64 constant [nd] holding v; its index or -1. */
static int i64_const(tpuc_graph_t *g, const char *base, const char *what, int nd, const int64_t *v)
{
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/%s", base, what);
    int ti = tpuc_add_tensor(g, nm);
    if (ti < 0) return -1;
    tpuc_tensor_t *t = &g->t[ti];
    t->ndim = 1;
    t->dims[0] = nd;
    t->is_const = 1;
    t->dtype = TPUC_I64;
    t->nuses = 1;
    if (!(t->i = malloc(sizeof *t->i * (size_t)(nd ? nd : 1)))) return -1;
    memcpy(t->i, v, sizeof *t->i * (size_t)nd);
    return ti;
}

/* Inserts node `at` of op with inputs in[0..nin) and output out (a new tensor when < 0). */
static int add_node(tpuc_graph_t *g, size_t at, tpuc_op_t op, const char *op_type, int version,
                    const int *in, int nin, int out, const char *base, const char *what)
{
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/%s", base, what);
    int ti = out >= 0 ? out : tpuc_add_tensor(g, nm);
    if (ti < 0 || tpuc_insert_node_at(g, at)) return -1;
    tpuc_node_t *n = &g->n[at];
    if (!(n->name = tpuc_strdup(nm)) || !(n->op_type = tpuc_strdup(op_type))) return -1;
    n->op = op;
    n->version = version;
    n->nin = nin;
    for (int k = 0; k < nin; k++) n->in[k] = in[k];
    n->nout = 1;
    n->out[0] = ti;
    g->t[ti].producer = (int)at;
    if (out < 0) g->t[ti].nuses = 1;
    return ti;
}

int tpuc_fold_gather0(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    tpuc_node_t *n = &g->n[ni];
    const int xi = n->in[0];
    const tpuc_tensor_t *x = &g->t[xi], *ix = &g->t[n->in[1]];
    if (tpuc_attr_int(n, "axis", 0) != 0 || n->nattrs > 1 || !ix->is_const || !ix->i ||
        ix->ndim != 0 || x->producer < 0 || x->is_output)
        return 0;
    const size_t ti = (size_t)x->producer;
    const tpuc_node_t *t = &g->n[ti];
    if (t->op != TPUC_OP_TRANSPOSE || t->perm[0] == 0) return 0;
    const int r = x->ndim, ax = t->perm[0], src = t->in[0];
    const int64_t i = ix->i[0] < 0 ? ix->i[0] + x->dims[0] : ix->i[0];
    if (i < 0 || i >= x->dims[0]) NODE_ERR(n, "index %lld out of range 0 .. %lld", (long long)ix->i[0], (long long)x->dims[0] - 1);
    /* the source sliced on axis ax, that axis dropped, then the Transpose's other axes */
    int64_t sd[TPUC_MAX_DIMS];
    int nd = 0, pp[TPUC_MAX_DIMS];
    for (int j = 0; j < r; j++)
        if (j != ax) sd[nd++] = g->t[src].dims[j];
    for (int j = 1; j < r; j++) pp[j - 1] = t->perm[j] > ax ? t->perm[j] - 1 : t->perm[j];
    char base[220];
    snprintf(base, sizeof base, "%.200s", n->name);
    const int y = n->out[0], ixi = n->in[1];
    const int64_t st = i, en = i + 1, axv = ax;
    int cs = i64_const(g, base, "starts", 1, &st), ce = i64_const(g, base, "ends", 1, &en),
        ca = i64_const(g, base, "axes", 1, &axv), cshape = i64_const(g, base, "shape", nd, sd);
    if (cs < 0 || ce < 0 || ca < 0 || cshape < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    const int sin[4] = {src, cs, ce, ca};
    int sl = add_node(g, ni, TPUC_OP_SLICE, "Slice(Gather axis 0)", 13, sin, 4, -1, base, "slice");
    const int rin[2] = {sl, cshape};
    int rs = sl < 0 ? -1 : add_node(g, ni + 1, TPUC_OP_RESHAPE, "Reshape(Gather axis 0)", 14, rin, 2, -1, base, "squeeze");
    if (rs < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    g->t[src].nuses++;
    /* the Gather (now at ni + 2) gives way to the Transpose of the rest */
    g->n[ni + 2].op = TPUC_OP_DEAD;
    g->t[ixi].nuses--;
    if (tpuc_add_transpose(g, ni + 3, rs, y, pp, nd, base, "perm") < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    /* the Transpose that the Gathers read: dead once none reads it */
    if (--g->t[xi].nuses == 0) {
        g->n[ti].op = TPUC_OP_DEAD;
        g->t[src].nuses--;
    }
    return 1;
}

int tpuc_fold_pow_const(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *a = &g->t[n->in[0]], *b = &g->t[n->in[1]];
    const int64_t ea = tpuc_tensor_elems(a), eb = tpuc_tensor_elems(b);
    if (!a->f || (!b->f && !b->i)) NODE_ERR(n, "a Pow of constants: only a float32 base is supported");
    if (eb != 1 && eb != ea) NODE_ERR(n, "a Pow of constants: only a scalar exponent or one per element is supported");
    tpuc_tensor_t *y = &g->t[n->out[0]];
    y->ndim = a->ndim;
    for (int j = 0; j < a->ndim; j++) y->dims[j] = a->dims[j];
    y->is_const = 1;
    y->dtype = TPUC_F32;
    if (!(y->f = malloc(sizeof *y->f * (size_t)(ea ? ea : 1)))) return tpuc_err(err, errlen, "out of memory"), -1;
    for (int64_t k = 0; k < ea; k++) {
        const int64_t kb = eb == 1 ? 0 : k;
        y->f[k] = (float)pow((double)a->f[k], b->f ? (double)b->f[kb] : (double)b->i[kb]);
    }
    n->op = TPUC_OP_DEAD;
    return 0;
}

int tpuc_fold_slice_steps(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    tpuc_node_t *n = &g->n[ni];
    const tpuc_tensor_t *x = &g->t[n->in[0]];
    const int r = x->ndim;
    const tpuc_tensor_t *in[5] = {NULL};
    if (x->is_const || n->nin < 5 || n->in[4] < 0) return 0;
    for (int k = 1; k < 5; k++) {
        in[k] = n->in[k] >= 0 ? &g->t[n->in[k]] : NULL;
        if (k != 3 && (!in[k] || !in[k]->is_const || !in[k]->i || in[k]->ndim != 1)) return 0;
    }
    if (in[3] && (!in[3]->is_const || !in[3]->i)) return 0;
    const int64_t m = in[1]->dims[0];
    if (in[2]->dims[0] != m || in[4]->dims[0] != m || (in[3] && in[3]->dims[0] != m)) return 0;
    /* per axis of x: start, count, step (1 and the whole axis when not sliced) */
    int64_t s0[TPUC_MAX_DIMS], cnt[TPUC_MAX_DIMS], st[TPUC_MAX_DIMS];
    int any = 0;
    for (int j = 0; j < r; j++) { s0[j] = 0; cnt[j] = x->dims[j]; st[j] = 1; }
    for (int64_t k = 0; k < m; k++) {
        int64_t ax = in[3] ? in[3]->i[k] : k, sp = in[4]->i[k];
        if (ax < 0) ax += r;
        if (ax < 0 || ax >= r) return 0;
        const int64_t L = x->dims[ax];
        int64_t b = in[1]->i[k], e = in[2]->i[k];
        if (sp < 2) {
            if (sp != 1) return 0;
            continue; /* steps 1 on this axis: as given, below */
        }
        if (ax == 0 || ax == r - 1 || L % sp) /* the batch, the row's elements, a ragged tail */
            NODE_ERR(n, "steps[%lld] = %lld on axis %lld of %lld: supported steps > 1 only on a middle axis its length divides",
                     (long long)k, (long long)sp, (long long)ax, (long long)L);
        if (b < 0) b += L;
        if (e < 0) e += L;
        b = b < 0 ? 0 : b > L ? L : b;
        e = e < 0 ? 0 : e > L ? L : e;
        if (e <= b) NODE_ERR(n, "the slice of axis %lld is empty", (long long)ax);
        s0[ax] = b;
        cnt[ax] = (e - b + sp - 1) / sp;
        st[ax] = sp;
        any = 1;
    }
    if (!any) return 0;
    for (int64_t k = 0; k < m; k++) { /* the axes of steps 1 */
        int64_t ax = in[3] ? in[3]->i[k] : k;
        if (ax < 0) ax += r;
        if (in[4]->i[k] != 1) continue;
        const int64_t L = x->dims[ax];
        int64_t b = in[1]->i[k], e = in[2]->i[k];
        if (b < 0) b += L;
        if (e < 0) e += L;
        b = b < 0 ? 0 : b > L ? L : b;
        e = e < 0 ? 0 : e > L ? L : e;
        s0[ax] = b;
        cnt[ax] = e > b ? e - b : 0;
    }
    /* x viewed with each stepped axis split (L / k, k): the slice takes rows s / k .. of the
       outer axis and the one element s % k of the inner one */
    int64_t vd[2 * TPUC_MAX_DIMS], vs[2 * TPUC_MAX_DIMS], ve[2 * TPUC_MAX_DIMS], va[2 * TPUC_MAX_DIMS], yd[TPUC_MAX_DIMS];
    int nv = 0;
    for (int j = 0; j < r; j++) {
        yd[j] = cnt[j];
        if (st[j] == 1) {
            vd[nv] = x->dims[j]; vs[nv] = s0[j]; ve[nv] = s0[j] + cnt[j]; va[nv] = nv; nv++;
        } else {
            vd[nv] = x->dims[j] / st[j]; vs[nv] = s0[j] / st[j]; ve[nv] = s0[j] / st[j] + cnt[j]; va[nv] = nv; nv++;
            vd[nv] = st[j]; vs[nv] = s0[j] % st[j]; ve[nv] = s0[j] % st[j] + 1; va[nv] = nv; nv++;
        }
    }
    if (nv > TPUC_MAX_DIMS)
        NODE_ERR(n, "steps > 1 on %d axes of a %d-D tensor: more than %d dimensions when split", nv - r, r, TPUC_MAX_DIMS);
    for (int j = 0; j < nv; j++)
        if (ve[j] > vd[j]) NODE_ERR(n, "internal: a split slice past its axis");
    char base[220];
    snprintf(base, sizeof base, "%.200s", n->name);
    const int xi = n->in[0], yo = n->out[0];
    int cv = i64_const(g, base, "split_shape", nv, vd), cs = i64_const(g, base, "split_starts", nv, vs),
        ce = i64_const(g, base, "split_ends", nv, ve), ca = i64_const(g, base, "split_axes", nv, va),
        cy = i64_const(g, base, "shape", r, yd);
    if (cv < 0 || cs < 0 || ce < 0 || ca < 0 || cy < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    const int rin[2] = {xi, cv};
    int v = add_node(g, ni, TPUC_OP_RESHAPE, "Reshape(Slice steps)", 14, rin, 2, -1, base, "split");
    if (v < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    /* the Slice (now at ni + 1): steps 1 on the view, into a new tensor */
    char nm[300];
    snprintf(nm, sizeof nm, "%s/sliced", base);
    int w = tpuc_add_tensor(g, nm);
    if (w < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    n = &g->n[ni + 1];
    for (int k = 1; k < n->nin; k++)
        if (n->in[k] >= 0) g->t[n->in[k]].nuses--;
    n->in[0] = v; n->in[1] = cs; n->in[2] = ce; n->in[3] = ca;
    n->nin = 4;
    n->out[0] = w;
    g->t[w].producer = (int)(ni + 1);
    g->t[w].nuses = 1;
    const int bin[2] = {w, cy};
    if (add_node(g, ni + 2, TPUC_OP_RESHAPE, "Reshape(Slice steps)", 14, bin, 2, yo, base, "merge") < 0)
        return tpuc_err(err, errlen, "out of memory"), -1;
    return 1;
}
