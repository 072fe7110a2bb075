/* SPDX-License-Identifier: Apache-2.0 */
/* Pad (constant mode) and ConvTranspose in the fold pass (docs/compiler.md "Pad and
   ConvTranspose"). A Pad of zeros whose every reader is a Conv, or an AveragePool that counts
   the padding, is folded into the readers' pads (pre_pad): the cheapest lowering, and the
   one torch's AveragePool(count_include_pad) export needs (Inception-v3). Any other Pad of
   the spatial axes of [B, C, H, W] / [B, C, L] stays a node: tile_pad.c writes its output.
   A ConvTranspose is a Conv of stride 1 over its input dilated by the stride (s - 1 zeros
   between pixels) and padded by k - 1 - p (plus output_padding at the end), with the kernel
   flipped and input/output channels swapped: rewritten here as that Pad and that Conv, so
   the Conv lowering runs it. That Pad is never folded (not even at stride 1), so training,
   which has no ConvTranspose, refuses it by the Pad node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pad.h"

static void shape_set(tpuc_tensor_t *t, int nd, const int64_t *d)
{
    t->ndim = nd;
    for (int i = 0; i < nd; i++) t->dims[i] = d[i];
}

/* The Pad's widths [begin.., end..] and constant, from its inputs (11, 13) or attributes (2). */
static int pad_params(const tpuc_graph_t *g, const tpuc_node_t *n, int rank, int64_t *pads,
                      double *value, char *err, size_t errlen)
{
    const tpuc_attr_t *md = tpuc_attr(n, "mode");
    if (md && md->s && strcmp(md->s, "constant") != 0)
        NODE_ERR(n, "mode '%s': only 'constant' is supported", md->s);
    *value = 0;
    if (n->version < 11) {
        const tpuc_attr_t *pa = tpuc_attr(n, "pads"), *va = tpuc_attr(n, "value");
        if (!pa || (int)pa->nints != 2 * rank) NODE_ERR(n, "the pads attribute must hold %d values", 2 * rank);
        for (int i = 0; i < 2 * rank; i++) pads[i] = pa->ints[i];
        if (va && va->type == 1) *value = va->f;
        return 0;
    }
    const tpuc_tensor_t *b = n->nin > 1 && n->in[1] >= 0 ? &g->t[n->in[1]] : NULL;
    if (!b || !b->is_const || !b->i) NODE_ERR(n, "the pads input must be a constant int64 tensor");
    if (tpuc_tensor_elems(b) != 2 * rank) NODE_ERR(n, "pads holds %lld values, expected %d (2 x rank)", (long long)tpuc_tensor_elems(b), 2 * rank);
    for (int i = 0; i < 2 * rank; i++) pads[i] = b->i[i];
    const tpuc_tensor_t *v = n->nin > 2 && n->in[2] >= 0 ? &g->t[n->in[2]] : NULL;
    if (v) {
        if (!v->is_const || tpuc_tensor_elems(v) != 1 || (!v->f && !v->i))
            NODE_ERR(n, "the constant_value input '%s' must be a constant scalar", v->name);
        *value = v->f ? (double)v->f[0] : (double)v->i[0];
    }
    return 0;
}

/* Can every reader of y take the zero padding (t l b r) in its own pads? */
static int foldable(const tpuc_graph_t *g, size_t ni, int y, int sp, const int *p)
{
    int readers = 0;
    if (g->t[y].is_output) return 0;
    for (size_t j = ni + 1; j < g->nn; j++) {
        const tpuc_node_t *r = &g->n[j];
        if (r->op == TPUC_OP_DEAD) continue;
        for (int k = 0; k < r->nin; k++) {
            if (r->in[k] != y) continue;
            if (k != 0 || (r->op != TPUC_OP_CONV && r->op != TPUC_OP_AVGPOOL)) return 0;
            const tpuc_attr_t *ap = tpuc_attr(r, "auto_pad");
            if (ap && ap->s && strcmp(ap->s, "NOTSET") != 0) return 0;
            const tpuc_attr_t *pa = tpuc_attr(r, "pads"), *ks = tpuc_attr(r, "kernel_shape");
            int own[4] = {0, 0, 0, 0};
            if (pa && (int)pa->nints != 2 * sp) return 0;
            if (pa) {
                if (sp == 2) for (int i = 0; i < 4; i++) own[i] = (int)pa->ints[i];
                else { own[1] = (int)pa->ints[0]; own[3] = (int)pa->ints[1]; }
            }
            int any_own = own[0] | own[1] | own[2] | own[3];
            for (int i = 0; i < 4; i++) {
                if (r->pre_pad[i] || own[i] + p[i] > 64) return 0;
                if (r->op == TPUC_OP_AVGPOOL) {
                    /* the padded zeros are counted: the pool's own padding must be too */
                    if (any_own && !tpuc_attr_int(r, "count_include_pad", 0)) return 0;
                    if (!ks || (int)ks->nints != sp) return 0;
                    int64_t k = sp == 2 ? ks->ints[i % 2] : ks->ints[0];
                    if ((sp == 2 || i % 2) && own[i] + p[i] >= k) return 0;
                }
            }
            readers++;
        }
    }
    return readers > 0;
}

/* The Pad's output shape from its input and (t l b r) widths and interior step s. */
static void padded_shape(const tpuc_tensor_t *a, const int *p, const int *s, int64_t *d)
{
    for (int i = 0; i < a->ndim; i++) d[i] = a->dims[i];
    if (a->ndim == 4) d[2] = (a->dims[2] - 1) * s[0] + 1 + p[0] + p[2];
    d[a->ndim - 1] = (a->dims[a->ndim - 1] - 1) * s[1] + 1 + p[1] + p[3];
}

int tpuc_fold_pad(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    tpuc_node_t *n = &g->n[ni];
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    int y = n->out[0];
    if (!n->pad_set) {
        int rank = a->ndim;
        int64_t pads[2 * TPUC_MAX_DIMS];
        double value;
        if (rank < 1) NODE_ERR(n, "a Pad of a scalar");
        if (pad_params(g, n, rank, pads, &value, err, errlen)) return -1;
        int any = 0;
        for (int i = 0; i < 2 * rank; i++) {
            if (pads[i] < 0)
                NODE_ERR(n, "pads[%d] = %lld: negative pads (cropping) are not supported", i, (long long)pads[i]);
            any |= pads[i] != 0;
        }
        if (!any) return 1;
        if (a->is_const) NODE_ERR(n, "a Pad of a constant is not supported");
        if (!isfinite(value)) NODE_ERR(n, "constant_value %g: only a finite constant is supported", value);
        if (rank != 3 && rank != 4)
            NODE_ERR(n, "a Pad of a %d-D tensor: only the spatial axes of [B, C, H, W] or [B, C, L] are supported", rank);
        for (int i = 0; i < 2; i++)
            if (pads[i] || pads[rank + i])
                NODE_ERR(n, "pads[%d] = %lld, pads[%d] = %lld: only the spatial axes (2 and up) may be padded, not the batch or the channels",
                         i, (long long)pads[i], rank + i, (long long)pads[rank + i]);
        for (int i = 0; i < 2 * rank; i++)
            if (pads[i] > 4096) NODE_ERR(n, "pads[%d] = %lld: at most 4096 is supported", i, (long long)pads[i]);
        int h0 = rank == 4 ? (int)pads[2] : 0, h1 = rank == 4 ? (int)pads[rank + 2] : 0;
        n->conv_p[0] = h0; n->conv_p[1] = (int)pads[rank - 1];
        n->conv_p[2] = h1; n->conv_p[3] = (int)pads[2 * rank - 1];
        n->conv_s[0] = n->conv_s[1] = 1;
        n->pad_value = (float)value;
    }
    /* (a ConvTranspose's Pad stays a node even at stride 1: its Conv's weights are a flipped
       copy, which training could not write back to the model; tpu-train refuses the Pad) */
    if (!n->pad_set && n->pad_value == 0 && foldable(g, ni, y, a->ndim - 2, n->conv_p)) {
            /* into every reader's pads; the readers read the Pad's input */
            for (size_t j = ni + 1; j < g->nn; j++) {
                tpuc_node_t *r = &g->n[j];
                if (r->op == TPUC_OP_DEAD || r->in[0] != y) continue;
                for (int i = 0; i < 4; i++) r->pre_pad[i] = n->conv_p[i];
                r->in[0] = n->in[0];
                g->t[n->in[0]].nuses++;
            }
            g->t[y].nuses = 0;
            int64_t d[TPUC_MAX_DIMS];
            padded_shape(a, n->conv_p, n->conv_s, d);
            shape_set(&g->t[y], a->ndim, d);
            n->op = TPUC_OP_DEAD;
            return 0;
    }
    int64_t d[TPUC_MAX_DIMS];
    padded_shape(a, n->conv_p, n->conv_s, d);
    if (d[a->ndim - 1] > 65535 || (a->ndim == 4 && d[2] > 65535))
        NODE_ERR(n, "a padded output of %lld x %lld pixels: at most 65535 a side", (long long)(a->ndim == 4 ? d[2] : 1), (long long)d[a->ndim - 1]);
    shape_set(&g->t[y], a->ndim, d);
    return 0;
}

/* ---- ConvTranspose ---- */
/* The attribute's values along the sp spatial axes (dflt when absent); -1 when it has another
   count. */
static int spatial_ints(const tpuc_node_t *n, const char *name, int cnt, int64_t dflt, int64_t *v)
{
    const tpuc_attr_t *a = tpuc_attr(n, name);
    for (int i = 0; i < cnt; i++) v[i] = dflt;
    if (!a) return 0;
    if ((int)a->nints != cnt) return -1;
    for (int i = 0; i < cnt; i++) v[i] = a->ints[i];
    return 0;
}

/* W [Cin, Cout, k..] -> W' [Cout, Cin, k..] with every kernel flipped (a new constant). */
static int flipped_weights(tpuc_graph_t *g, size_t ni, const tpuc_tensor_t *w)
{
    int64_t ci = w->dims[0], co = w->dims[1], kh = w->ndim == 4 ? w->dims[2] : 1, kw = w->dims[w->ndim - 1];
    float *f = malloc((size_t)(ci * co * kh * kw + 1) * sizeof *f);
    if (!f) return -1;
    for (int64_t i = 0; i < ci; i++)
        for (int64_t o = 0; o < co; o++)
            for (int64_t y = 0; y < kh; y++)
                for (int64_t x = 0; x < kw; x++)
                    f[((o * ci + i) * kh + (kh - 1 - y)) * kw + (kw - 1 - x)] =
                        w->f[((i * co + o) * kh + y) * kw + x];
    int64_t d[4] = {co, ci, kh, kw};
    if (w->ndim == 3) d[2] = kw;
    int wnd = w->ndim;
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/W_flipped", g->n[ni].name);
    int ti = tpuc_add_tensor(g, nm);
    if (ti < 0) { free(f); return -1; }
    shape_set(&g->t[ti], wnd, d);
    g->t[ti].is_const = 1;
    g->t[ti].f = f;
    g->t[ti].nuses = 1;
    return ti;
}

/* Opens a free node slot at index ni (nodes ni.. move up by one; producers follow). */
int tpuc_insert_node_at(tpuc_graph_t *g, size_t ni)
{
    if (tpuc_add_node(g) < 0) return -1;
    memmove(&g->n[ni + 1], &g->n[ni], (g->nn - 1 - ni) * sizeof g->n[0]);
    memset(&g->n[ni], 0, sizeof g->n[0]);
    for (size_t i = 0; i < g->nt; i++)
        if (g->t[i].producer >= (int)ni) g->t[i].producer++;
    if (g->folded_bn > (int)ni) g->folded_bn++;
    if (g->removed_dropout > (int)ni) g->removed_dropout++;
    return 0;
}

int tpuc_fold_convtranspose(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    tpuc_node_t *n = &g->n[ni];
    static const char *const known[] = {"kernel_shape", "strides", "pads", "dilations", "group",
                                        "auto_pad", "output_padding", "output_shape", NULL};
    for (size_t i = 0; i < n->nattrs; i++) {
        int ok = 0;
        for (int k = 0; known[k]; k++) ok |= strcmp(n->attrs[i].name, known[k]) == 0;
        if (!ok) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[i].name);
    }
    const tpuc_tensor_t *a = n->nin > 0 && n->in[0] >= 0 ? &g->t[n->in[0]] : NULL;
    const tpuc_tensor_t *w = n->nin > 1 && n->in[1] >= 0 ? &g->t[n->in[1]] : NULL;
    if (!a || a->is_const) NODE_ERR(n, "X must be an activation");
    if (a->ndim != 3 && a->ndim != 4) NODE_ERR(n, "X of %d dimensions, supported 3 (ConvTranspose1d) and 4 (ConvTranspose2d)", a->ndim);
    if (!w || !w->is_const || !w->f || w->ndim != a->ndim) NODE_ERR(n, "W (the weights) must be a float32 initializer of %d dimensions", a->ndim);
    int sp = a->ndim - 2;
    int64_t grp = tpuc_attr_int(n, "group", 1);
    if (grp != 1) NODE_ERR(n, "group %lld: only 1 is supported", (long long)grp);
    if (w->dims[0] != a->dims[1]) NODE_ERR(n, "W has %lld input channels, X %lld", (long long)w->dims[0], (long long)a->dims[1]);
    const tpuc_attr_t *ap = tpuc_attr(n, "auto_pad");
    if (ap && ap->s && strcmp(ap->s, "NOTSET") != 0) NODE_ERR(n, "auto_pad '%s': only NOTSET (explicit pads) is supported", ap->s);
    if (tpuc_attr(n, "output_shape")) NODE_ERR(n, "output_shape: not supported (give pads and output_padding)");
    int64_t k[2], s[2], dl[2], op[2], p[4];
    for (int i = 0; i < sp; i++) k[i] = w->dims[2 + i];
    const tpuc_attr_t *ks = tpuc_attr(n, "kernel_shape");
    if (ks) {
        if ((int)ks->nints != sp) NODE_ERR(n, "kernel_shape has %zu values, expected %d", ks->nints, sp);
        for (int i = 0; i < sp; i++)
            if (ks->ints[i] != k[i]) NODE_ERR(n, "kernel_shape differs from W's shape");
    }
    if (spatial_ints(n, "strides", sp, 1, s) || spatial_ints(n, "dilations", sp, 1, dl) ||
        spatial_ints(n, "output_padding", sp, 0, op) || spatial_ints(n, "pads", 2 * sp, 0, p))
        NODE_ERR(n, "strides, dilations, output_padding or pads has the wrong number of values");
    for (int i = 0; i < sp; i++) {
        if (dl[i] != 1) NODE_ERR(n, "dilations %lld: only 1 is supported", (long long)dl[i]);
        if (s[i] < 1 || s[i] > 64) NODE_ERR(n, "strides %lld: supported 1 .. 64", (long long)s[i]);
        if (k[i] < 1 || k[i] > 64) NODE_ERR(n, "kernel %lld: supported 1 .. 64", (long long)k[i]);
        if (op[i] < 0 || op[i] >= s[i]) NODE_ERR(n, "output_padding %lld: must be 0 .. stride - 1 (%lld)", (long long)op[i], (long long)(s[i] - 1));
        for (int e = 0; e < 2; e++)
            if (p[i + e * sp] < 0 || p[i + e * sp] > k[i] - 1)
                NODE_ERR(n, "pads %lld: supported 0 .. kernel - 1 (%lld)", (long long)p[i + e * sp], (long long)(k[i] - 1));
    }
    /* (t l b r) of the Conv's input: k - 1 - p each side, output_padding more at the end */
    int cp[4], cs[2];
    if (sp == 2) {
        cp[0] = (int)(k[0] - 1 - p[0]); cp[1] = (int)(k[1] - 1 - p[1]);
        cp[2] = (int)(k[0] - 1 - p[2] + op[0]); cp[3] = (int)(k[1] - 1 - p[3] + op[1]);
        cs[0] = (int)s[0]; cs[1] = (int)s[1];
    } else {
        cp[0] = cp[2] = 0;
        cp[1] = (int)(k[0] - 1 - p[0]); cp[3] = (int)(k[0] - 1 - p[1] + op[0]);
        cs[0] = 1; cs[1] = (int)s[0];
    }
    if (n->nin > 2 && n->in[2] >= 0) {
        const tpuc_tensor_t *c = &g->t[n->in[2]];
        if (!c->is_const || !c->f || tpuc_tensor_elems(c) != w->dims[1])
            NODE_ERR(n, "B (the bias) must be a float32 initializer of %lld values", (long long)w->dims[1]);
    }
    int wt = flipped_weights(g, ni, w);
    if (wt < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/dilated", g->n[ni].name);
    int ti = tpuc_add_tensor(g, nm);
    if (ti < 0 || tpuc_insert_node_at(g, ni)) return tpuc_err(err, errlen, "out of memory"), -1;
    tpuc_node_t *pd = &g->n[ni], *cv = &g->n[ni + 1];
    pd->name = tpuc_strdup(nm);
    pd->op_type = tpuc_strdup("Pad(ConvTranspose input)");
    if (!pd->name || !pd->op_type) return tpuc_err(err, errlen, "out of memory"), -1;
    pd->op = TPUC_OP_PAD;
    pd->version = 13;
    pd->nin = 1; pd->in[0] = cv->in[0];
    pd->nout = 1; pd->out[0] = ti;
    pd->pad_set = 1;
    pd->pad_value = 0;
    for (int i = 0; i < 4; i++) pd->conv_p[i] = cp[i];
    pd->conv_s[0] = cs[0]; pd->conv_s[1] = cs[1];
    g->t[ti].producer = (int)ni;
    g->t[ti].nuses = 1;
    /* the Conv: stride 1, no pads of its own (attributes dropped), the flipped weights */
    cv->op = TPUC_OP_CONV;
    for (size_t i = 0; i < cv->nattrs; i++) {
        free(cv->attrs[i].name); free(cv->attrs[i].s);
        free(cv->attrs[i].ints); free(cv->attrs[i].floats);
    }
    cv->nattrs = 0;
    g->t[cv->in[1]].nuses--;
    cv->in[0] = ti;
    cv->in[1] = wt;
    return 0;
}

/* ---- Slice of a constant of more than one dimension with any steps (torch's F.pad reverses
   its pads with a step -1 Slice of a [k, 2] constant) ---- */
static int slice_axis(int64_t d, int64_t s, int64_t e, int64_t p, int64_t *first, int64_t *count)
{
    if (p == 0) return -1;
    if (s < 0) s += d;
    if (e < 0) e += d;
    if (p > 0) {
        s = s < 0 ? 0 : s > d ? d : s;
        e = e < 0 ? 0 : e > d ? d : e;
        *count = e > s ? (e - s + p - 1) / p : 0;
    } else {
        s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
        e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
        *count = s > e ? (s - e + (-p) - 1) / (-p) : 0;
    }
    *first = s;
    return 0;
}

int tpuc_fold_slice_const(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpuc_tensor_t *in[5] = {NULL};
    for (int k = 1; k < 5 && k < n->nin; k++) {
        in[k] = n->in[k] >= 0 ? &g->t[n->in[k]] : NULL;
        if (in[k] && (!in[k]->is_const || !in[k]->i || in[k]->ndim != 1))
            NODE_ERR(n, "input %d ('%s') must be a 1-D int64 constant", k, in[k]->name);
    }
    if (!in[1] || !in[2] || in[2]->dims[0] != in[1]->dims[0]) NODE_ERR(n, "starts and ends must be given, of the same length");
    int64_t m = in[1]->dims[0];
    if (m > a->ndim || (in[3] && in[3]->dims[0] != m) || (in[4] && in[4]->dims[0] != m))
        NODE_ERR(n, "starts, ends, axes and steps must have the same length, at most the rank");
    int64_t first[TPUC_MAX_DIMS], step[TPUC_MAX_DIMS], d[TPUC_MAX_DIMS];
    for (int i = 0; i < a->ndim; i++) { first[i] = 0; step[i] = 1; d[i] = a->dims[i]; }
    for (int64_t j = 0; j < m; j++) {
        int64_t ax = in[3] ? in[3]->i[j] : j;
        if (ax < 0) ax += a->ndim;
        if (ax < 0 || ax >= a->ndim) NODE_ERR(n, "axes[%lld] out of range", (long long)j);
        step[ax] = in[4] ? in[4]->i[j] : 1;
        if (slice_axis(a->dims[ax], in[1]->i[j], in[2]->i[j], step[ax], &first[ax], &d[ax]))
            NODE_ERR(n, "steps[%lld] = 0", (long long)j);
    }
    shape_set(y, a->ndim, d);
    int64_t e = tpuc_tensor_elems(y);
    y->is_const = 1;
    y->dtype = a->dtype;
    if (a->i) y->i = calloc((size_t)e + 1, sizeof *y->i);
    else y->f = calloc((size_t)e + 1, sizeof *y->f);
    if (a->i ? !y->i : !y->f) return tpuc_err(err, errlen, "out of memory"), -1;
    for (int64_t k = 0; k < e; k++) {
        /* the output index, axis by axis from the last; the source's flat index */
        int64_t r = k, src = 0, mul = 1;
        for (int i = a->ndim - 1; i >= 0; i--) {
            int64_t ii = d[i] ? r % d[i] : 0;
            r = d[i] ? r / d[i] : 0;
            src += (first[i] + ii * step[i]) * mul;
            mul *= a->dims[i];
        }
        if (a->i) y->i[k] = a->i[src]; else y->f[k] = a->f[src];
    }
    return 0;
}
