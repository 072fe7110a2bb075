/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 2: graph -> graph. Binds the batch, infers every tensor's shape, folds constants
   (Constant nodes, shape computations on constants), removes Identity and Dropout, matches
   the tanh-form GELU subgraph PyTorch exports, folds BatchNormalization into the Conv or
   Gemm before it, and turns bias Adds after Gemm/MatMul/Conv into their bias. Every attribute
   is checked here; anything unsupported is one message naming the node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tpuc/tpuc.h"
#include "tpuc_internal.h"
#include "attn.h"
#include "pad.h"

/* A tensor's shape as "[5]" or "[1, 5]" (messages name the shape as the model has it) */
static void shape_text(const tpuc_tensor_t *t, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < t->ndim && k + 24 < len; i++) {
        int w = snprintf(buf + k, len - k, "%s%lld", i ? ", " : "[", (long long)t->dims[i]);
        if (w < 0) break;
        k += (size_t)w;
    }
    snprintf(buf + k, len - k, "%s", t->ndim ? "]" : "[]");
}

static int set_shape(tpuc_tensor_t *t, int nd, const int64_t *d)
{
    t->ndim = nd;
    for (int i = 0; i < nd; i++) t->dims[i] = d[i];
    return 0;
}

static int same_shape(const tpuc_tensor_t *a, const tpuc_tensor_t *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* Replaces every use of tensor `from` by `to` (nodes after `after`, and graph outputs). */
static void replace_uses(tpuc_graph_t *g, int from, int to)
{
    for (size_t i = 0; i < g->nn; i++)
        for (int k = 0; k < g->n[i].nin; k++)
            if (g->n[i].in[k] == from) {
                g->n[i].in[k] = to;
                g->t[to].nuses++;
            }
    for (int k = 0; k < g->noutputs; k++)
        if (g->outputs[k] == from) {
            g->outputs[k] = to;
            g->t[to].is_output = 1;
        }
    g->t[from].nuses = 0;
}

static const tpuc_tensor_t *in_t(const tpuc_graph_t *g, const tpuc_node_t *n, int k)
{
    return k < n->nin && n->in[k] >= 0 ? &g->t[n->in[k]] : NULL;
}

/* Checks that every attribute of n is in the list (NULL-terminated). */
static int known_attrs(const tpuc_node_t *n, const char *const *names, char *err, size_t errlen)
{
    for (size_t i = 0; i < n->nattrs; i++) {
        int ok = 0;
        for (int k = 0; names[k]; k++)
            if (strcmp(n->attrs[i].name, names[k]) == 0) ok = 1;
        if (!ok) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[i].name);
    }
    return 0;
}

/* Neg: the node becomes Mul by a constant -1 (exact; op_type stays "Neg" for messages). */
static int rewrite_neg(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    tpuc_node_t *n = &g->n[ni];
    if (n->nattrs) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[0].name);
    if (n->nin != 1) NODE_ERR(n, "%d inputs, expected 1", n->nin);
    float *v = malloc(sizeof *v);
    if (!v) return tpuc_err(err, errlen, "out of memory"), -1;
    *v = -1.0f;
    char nm[300];
    snprintf(nm, sizeof nm, "%s/minus_one", n->name);
    int ti = tpuc_add_tensor(g, nm);
    if (ti < 0) { free(v); return tpuc_err(err, errlen, "out of memory"), -1; }
    n = &g->n[ni];
    int64_t d[1] = {1};
    g->t[ti].ndim = 1; g->t[ti].dims[0] = d[0];
    g->t[ti].is_const = 1; g->t[ti].f = v;
    n->op = TPUC_OP_MUL;
    n->nin = 2;
    n->in[1] = ti;
    g->t[ti].nuses = 1;
    return 0;
}

/* HardSigmoid (alpha, beta; defaults 0.2, 0.5) and HardSwish (alpha 1/6, beta 0.5). */
static int fold_hard(tpuc_node_t *n, const tpuc_tensor_t *a, tpuc_tensor_t *y, char *err, size_t errlen)
{
    double alpha = 0.2, beta = 0.5;
    if (n->op == TPUC_OP_HARDSWISH) {
        if (n->nattrs) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[0].name);
        alpha = 1.0 / 6.0;
    } else {
        static const char *const at[] = {"alpha", "beta", NULL};
        if (known_attrs(n, at, err, errlen)) return -1;
        for (size_t k = 0; k < n->nattrs; k++) {
            const tpuc_attr_t *t = &n->attrs[k];
            if (t->type != 1 || !isfinite(t->f))
                NODE_ERR(n, "attribute '%s' must be a finite float", t->name);
            if (strcmp(t->name, "alpha") == 0) alpha = t->f; else beta = t->f;
        }
    }
    if (a->is_const) NODE_ERR(n, "the input is a constant (not folded)");
    n->hs_alpha = (float)alpha;
    n->hs_beta = (float)beta;
    n->clip_lo = 0.0f; /* the clamp's rows (tile's load_clip) */
    n->clip_hi = 1.0f;
    set_shape(y, a->ndim, a->dims);
    return 0;
}

static int const_scalar(const tpuc_graph_t *g, int t, float *v);

/* ReduceMean / ReduceSum / ReduceMax over one axis or several contiguous axes (keepdims 0
   or 1); axes from the attribute (ReduceMean, ReduceMax; ReduceSum 1, 11) or a constant
   int64 input (ReduceSum 13); absent: every axis. The reduced axes [red_lo, red_hi]: the
   trailing ones are one row of the row-major tensor (vred), others a sum over rows (tile). */
static int fold_reduce(tpuc_graph_t *g, tpuc_node_t *n, const tpuc_tensor_t *a,
                       tpuc_tensor_t *y, char *err, size_t errlen)
{
    const int axes_in = n->op == TPUC_OP_REDUCESUM && n->version >= 13;
    static const char *const at_attr[] = {"axes", "keepdims", NULL};
    static const char *const at_in[] = {"keepdims", "noop_with_empty_axes", NULL};
    if (known_attrs(n, axes_in ? at_in : at_attr, err, errlen)) return -1;
    for (size_t k = 0; k < n->nattrs; k++)
        if (strcmp(n->attrs[k].name, "axes") ? n->attrs[k].type != 2 : n->attrs[k].type != 7)
            NODE_ERR(n, "attribute '%s' has the wrong type", n->attrs[k].name);
    int64_t keep = tpuc_attr_int(n, "keepdims", 1);
    if (keep != 0 && keep != 1) NODE_ERR(n, "attribute 'keepdims' = %lld: 0 or 1 expected", (long long)keep);
    if (a->is_const) NODE_ERR(n, "the input is a constant (not folded)");
    const int64_t *ax = NULL;
    int64_t nax = 0;
    if (axes_in) {
        const tpuc_tensor_t *t = in_t(g, n, 1);
        if (t) {
            if (!t->is_const || !t->i) NODE_ERR(n, "input 1 (axes) must be a constant int64 tensor");
            ax = t->i;
            nax = tpuc_tensor_elems(t);
        }
    } else {
        const tpuc_attr_t *t = tpuc_attr(n, "axes");
        if (t) { ax = t->ints; nax = (int64_t)t->nints; }
    }
    if (n->nin > (axes_in ? 2 : 1)) NODE_ERR(n, "%d inputs, expected %d", n->nin, axes_in ? 2 : 1);
    if (nax == 0 && tpuc_attr_int(n, "noop_with_empty_axes", 0))
        NODE_ERR(n, "attribute 'noop_with_empty_axes' = 1 with no axes (the identity) is not supported");
    int red[TPUC_MAX_DIMS] = {0};
    if (nax == 0) {
        for (int i = 0; i < a->ndim; i++) red[i] = 1;
    } else {
        if (nax > a->ndim) NODE_ERR(n, "%lld axes for a tensor of %d dimensions", (long long)nax, a->ndim);
        for (int64_t k = 0; k < nax; k++) {
            int64_t v = ax[k] < 0 ? ax[k] + a->ndim : ax[k];
            if (v < 0 || v >= a->ndim) NODE_ERR(n, "axis %lld out of range for %d dimensions", (long long)ax[k], a->ndim);
            if (red[v]) NODE_ERR(n, "axis %lld given twice", (long long)ax[k]);
            red[v] = 1;
        }
    }
    int lo = -1, hi = -1;
    for (int i = 0; i < a->ndim; i++)
        if (red[i]) { if (lo < 0) lo = i; hi = i; }
    if (lo < 0) NODE_ERR(n, "the input has no axis to reduce (a scalar)");
    for (int i = lo; i <= hi; i++)
        if (!red[i]) NODE_ERR(n, "axes not contiguous (axis %d between reduced axes is kept): only one axis or a run of adjacent axes is supported", i);
    if (lo == 0)
        NODE_ERR(n, "axes include 0, the batch dimension: a program runs on the batch in parts (per core, and tpu-infer's chunks), so only axes >= 1 are supported");
    n->red_lo = lo;
    n->red_hi = hi;
    int64_t d[TPUC_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < a->ndim; i++) {
        if (!red[i]) d[nd++] = a->dims[i];
        else if (keep) d[nd++] = 1;
    }
    set_shape(y, nd, d);
    return 0;
}

/* A float constant holding one value (any float or integer constant of one element). */
static int const_value(const tpuc_tensor_t *t, double *v)
{
    if (!t || !t->is_const || tpuc_tensor_elems(t) != 1) return 0;
    if (t->f) *v = t->f[0];
    else if (t->i) *v = (double)t->i[0];
    else return 0;
    return 1;
}

/* Pow with a constant exponent: 2 -> x * x (Mul), 0.5 -> Sqrt; anything else is refused. */
static int rewrite_pow(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *a = in_t(g, n, 0), *b = in_t(g, n, 1);
    double e;
    if (n->nattrs) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[0].name);
    if (!b || n->nin != 2) NODE_ERR(n, "two inputs expected");
    if (a->is_const) NODE_ERR(n, "the base is a constant; only an activation to a constant power is supported");
    if (!const_value(b, &e)) NODE_ERR(n, "the exponent '%s' must be a constant of one element", b->name);
    if (e == 2.0) {
        n->op = TPUC_OP_MUL;
        n->in[1] = n->in[0];
    } else if (e == 0.5) {
        n->op = TPUC_OP_SQRT;
        n->nin = 1;
    } else {
        NODE_ERR(n, "exponent %g: supported 2 (x * x) and 0.5 (Sqrt)", e);
    }
    return 0;
}

/* Div by a constant c: x * fp32(1/c) (1/c in double, rounded to fp32 once at compile time);
   the node becomes a Mul (op_type stays "Div" for messages). c / x and x / y stay Div
   (tile: vop recip, then vop mul). */
static int rewrite_div(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    tpuc_node_t *n = &g->n[ni];
    const tpuc_tensor_t *b = in_t(g, n, 1);
    if (n->nattrs) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[0].name);
    if (!b || n->nin != 2) NODE_ERR(n, "two inputs expected");
    if (!b->is_const) return 0;
    if (!b->f) NODE_ERR(n, "the divisor '%s' is not a float32 constant", b->name);
    int64_t e = tpuc_tensor_elems(b);
    float *v = malloc((size_t)(e + 1) * sizeof *v);
    if (!v) return tpuc_err(err, errlen, "out of memory"), -1;
    for (int64_t k = 0; k < e; k++) v[k] = (float)(1.0 / (double)b->f[k]);
    char nm[300];
    snprintf(nm, sizeof nm, "%s/reciprocal", n->name);
    int ti = tpuc_add_tensor(g, nm);
    if (ti < 0) { free(v); return tpuc_err(err, errlen, "out of memory"), -1; }
    n = &g->n[ni];
    b = in_t(g, n, 1);
    set_shape(&g->t[ti], b->ndim, b->dims);
    g->t[ti].is_const = 1; g->t[ti].f = v;
    g->t[ti].nuses = 1;
    n->in[1] = ti;
    n->op = TPUC_OP_MUL;
    return 0;
}

/* Softmax: axis as the version defines it (13: that axis; 1, 11: the input coerced to 2-D at
   axis, i.e. the trailing axes [axis, rank - 1] as one row). */
static int fold_softmax(tpuc_node_t *n, const tpuc_tensor_t *a, tpuc_tensor_t *y,
                        char *err, size_t errlen)
{
    static const char *const at[] = {"axis", NULL};
    if (known_attrs(n, at, err, errlen)) return -1;
    int64_t ax0 = tpuc_attr_int(n, "axis", n->version >= 13 ? -1 : 1), ax = ax0;
    if (ax < 0) ax += a->ndim;
    if (ax < 0 || ax >= a->ndim) NODE_ERR(n, "axis %lld out of range for %d dimensions", (long long)ax0, a->ndim);
    if (a->is_const) NODE_ERR(n, "the input is a constant (not folded)");
    n->red_lo = (int)ax;
    n->red_hi = n->version >= 13 ? (int)ax : a->ndim - 1;
    if (ax == 0)
        NODE_ERR(n, "axis %lld is the batch dimension: a program runs on the batch in parts (per core, and tpu-infer's chunks), so only axes >= 1 are supported", (long long)ax0);
    set_shape(y, a->ndim, a->dims);
    return 0;
}

/* A constant (LayerNorm scale or bias) of at most `len` elements that broadcasts to the
   normalized trailing axes dims[lo..]: one value, or exactly those axes (leading 1s allowed). */
static int ln_const_ok(const tpuc_tensor_t *c, const tpuc_tensor_t *x, int lo)
{
    if (!c || !c->is_const || !c->f) return 0;
    if (tpuc_tensor_elems(c) == 1) return 1;
    int nt = x->ndim - lo;
    if (c->ndim < nt) return 0;
    for (int i = 0; i < c->ndim; i++) {
        int xd = x->ndim - c->ndim + i;
        if (xd < lo) { if (c->dims[i] != 1) return 0; }
        else if (c->dims[i] != x->dims[xd]) return 0;
    }
    return 1;
}

/* LayerNormalization-17: axis (default -1), epsilon (default 1e-5), stash_type 1; Scale
   and B float constants over the normalized axes; the Mean and InvStdDev outputs unused. */
static int fold_layernorm(const tpuc_graph_t *g, tpuc_node_t *n,
                          const tpuc_tensor_t *a, tpuc_tensor_t *y, char *err, size_t errlen)
{
    static const char *const at[] = {"axis", "epsilon", "stash_type", NULL};
    if (known_attrs(n, at, err, errlen)) return -1;
    int64_t ax0 = tpuc_attr_int(n, "axis", -1), ax = ax0;
    if (ax < 0) ax += a->ndim;
    if (ax < 0 || ax >= a->ndim) NODE_ERR(n, "axis %lld out of range for %d dimensions", (long long)ax0, a->ndim);
    if (tpuc_attr_int(n, "stash_type", 1) != 1) NODE_ERR(n, "stash_type %lld: only 1 (float32) is supported", (long long)tpuc_attr_int(n, "stash_type", 1));
    const tpuc_attr_t *ea = tpuc_attr(n, "epsilon");
    double eps = ea ? ea->f : 1e-5;
    if (ea && (ea->type != 1 || !isfinite(ea->f) || ea->f < 0)) NODE_ERR(n, "attribute 'epsilon' must be a finite float >= 0");
    if (a->is_const) NODE_ERR(n, "the input is a constant (not folded)");
    if (ax == 0)
        NODE_ERR(n, "axis %lld normalizes over the batch dimension: a program runs on the batch in parts (per core, and tpu-infer's chunks), so only axes >= 1 are supported", (long long)ax0);
    for (int k = 1; k < 3; k++) {
        const tpuc_tensor_t *c = in_t(g, n, k);
        if (!c && k == 2) continue;
        if (!ln_const_ok(c, a, (int)ax))
            NODE_ERR(n, "input %d (%s) must be a float32 constant over the normalized axes", k, k == 1 ? "Scale" : "B");
    }
    n->red_lo = (int)ax;
    n->red_hi = a->ndim - 1;
    n->ln_eps = (float)eps;
    set_shape(y, a->ndim, a->dims);
    return 0;
}

/* The LayerNorm torch exports for nn.LayerNorm (opset 14 and below):
     m = ReduceMean(x, trailing axes, keepdims 1); d = Sub(x, m); p = Pow(d, 2) (a Mul d * d
     here); v = ReduceMean(p, the same axes); s = Sqrt(Add(v, eps)); z = Div(d, s);
     [Mul(z, scale)]; [Add(., bias)]
   matched at its Div; returns the node that becomes the LayerNorm (the Div, or the Mul/Add
   after it), -1 when it is not the pattern. */
static int match_layernorm(tpuc_graph_t *g, int dv, int *span, int *nspan, int *scale, int *bias,
                           float *eps)
{
    const tpuc_node_t *n = &g->n[dv];
    if (n->op != TPUC_OP_DIV || n->nin != 2) return -1;
    int d = n->in[0];
    int sb = g->t[d].producer, sq = g->t[n->in[1]].producer;
    if (sb < 0 || sq < 0 || g->n[sb].op != TPUC_OP_SUB || g->n[sq].op != TPUC_OP_SQRT) return -1;
    int x = g->n[sb].in[0], r1 = g->t[g->n[sb].in[1]].producer;
    if (r1 < 0 || g->n[r1].op != TPUC_OP_REDUCEMEAN || g->n[r1].in[0] != x) return -1;
    const tpuc_tensor_t *xt = &g->t[x];
    if (g->n[r1].red_hi != xt->ndim - 1 || g->t[g->n[r1].out[0]].ndim != xt->ndim) return -1;
    int ae = g->t[g->n[sq].in[0]].producer;
    if (ae < 0 || g->n[ae].op != TPUC_OP_ADD) return -1;
    float e = 0;
    int r2 = -1;
    for (int s = 0; s < 2; s++)
        if (const_scalar(g, g->n[ae].in[s], &e)) {
            r2 = g->t[g->n[ae].in[1 - s]].producer;
            break;
        }
    if (r2 < 0 || g->n[r2].op != TPUC_OP_REDUCEMEAN || g->n[r2].red_lo != g->n[r1].red_lo ||
        g->n[r2].red_hi != g->n[r1].red_hi || g->t[g->n[r2].out[0]].ndim != xt->ndim)
        return -1;
    int sqr = g->t[g->n[r2].in[0]].producer;
    if (sqr < 0 || g->n[sqr].op != TPUC_OP_MUL || g->n[sqr].in[0] != d || g->n[sqr].in[1] != d) return -1;
    if (!(e >= 0) || !isfinite(e)) return -1;
    int k = 0;
    span[k++] = r1; span[k++] = sb; span[k++] = sqr; span[k++] = r2; span[k++] = ae;
    span[k++] = sq; span[k++] = dv;
    /* every intermediate read only inside the pattern (d: by the square and the Div) */
    for (int i = 0; i < k; i++) {
        int o = g->n[span[i]].out[0];
        int want = span[i] == sb ? 3 : 1; /* d: d * d reads it twice, the Div once */
        if (span[i] == dv) continue;
        if (g->t[o].is_output || g->t[o].nuses != want) return -1;
    }
    *scale = *bias = -1;
    int last = dv;
    int o = g->n[dv].out[0];
    for (int step = 0; step < 2; step++) {
        if (g->t[o].is_output || g->t[o].nuses != 1) break;
        int c = -1;
        for (size_t i = 0; i < g->nn; i++)
            if (g->n[i].op != TPUC_OP_DEAD)
                for (int j = 0; j < g->n[i].nin; j++) if (g->n[i].in[j] == o) c = (int)i;
        if (c < 0) break;
        tpuc_op_t want = step == 0 ? TPUC_OP_MUL : TPUC_OP_ADD;
        if (g->n[c].op != want || g->n[c].nin != 2 || g->n[c].fuse_act) {
            if (step == 0 && g->n[c].op == TPUC_OP_ADD) { step = 1; want = TPUC_OP_ADD; }
            else break;
        }
        int other = g->n[c].in[0] == o ? g->n[c].in[1] : g->n[c].in[0];
        if (!ln_const_ok(&g->t[other], xt, g->n[r1].red_lo)) break;
        if (step == 0) *scale = other; else *bias = other;
        span[k++] = c;
        last = c;
        o = g->n[c].out[0];
    }
    *nspan = k;
    *eps = e;
    return last;
}

/* ---- the tanh-form GELU: 0.5 * (x * (1 + tanh(c2 * (x + c1 * (x * (x * x)))))) ---- */
static int const_scalar(const tpuc_graph_t *g, int t, float *v)
{
    if (t < 0 || !g->t[t].is_const || !g->t[t].f || tpuc_tensor_elems(&g->t[t]) != 1)
        return 0;
    *v = g->t[t].f[0];
    return 1;
}

static int producer_is(const tpuc_graph_t *g, int t, tpuc_op_t op)
{
    if (t < 0) return -1;
    int p = g->t[t].producer;
    return p >= 0 && g->n[p].op == op && g->n[p].nin == 2 ? p : -1;
}

/* a * b with one side the tensor x and the other produced by op: the other's producer. */
static int mul_other(const tpuc_graph_t *g, int node, int x, tpuc_op_t op)
{
    const tpuc_node_t *n = &g->n[node];
    for (int s = 0; s < 2; s++)
        if (n->in[s] == x) {
            int p = g->t[n->in[1 - s]].producer;
            if (p >= 0 && g->n[p].op == op) return p;
        }
    return -1;
}

static int near(float a, double b) { return fabs((double)a - b) <= 1e-6 * fabs(b) + 1e-7; }

/* Returns the x of a GELU ending at node `last` (a Mul), or -1, and the nodes it spans. */
static int match_gelu(const tpuc_graph_t *g, int last, int *span, int *nspan)
{
    const tpuc_node_t *n = &g->n[last];
    if (n->op != TPUC_OP_MUL || n->nin != 2) return -1;
    float c;
    int m4 = -1;
    for (int s = 0; s < 2; s++)
        if (const_scalar(g, n->in[s], &c) && near(c, 0.5)) m4 = producer_is(g, n->in[1 - s], TPUC_OP_MUL);
    if (m4 < 0) return -1;
    /* m4 = x * a1, a1 = 1 + t */
    for (int xs = 0; xs < 2; xs++) {
        int x = g->n[m4].in[xs];
        int a1 = producer_is(g, g->n[m4].in[1 - xs], TPUC_OP_ADD);
        if (a1 < 0) continue;
        int th = -1;
        for (int s = 0; s < 2; s++)
            if (const_scalar(g, g->n[a1].in[s], &c) && near(c, 1.0)) {
                int p = g->t[g->n[a1].in[1 - s]].producer;
                if (p >= 0 && g->n[p].op == TPUC_OP_TANH) th = p;
            }
        if (th < 0) continue;
        int m3 = producer_is(g, g->n[th].in[0], TPUC_OP_MUL);
        if (m3 < 0) continue;
        int a0 = -1;
        for (int s = 0; s < 2; s++)
            if (const_scalar(g, g->n[m3].in[s], &c) && near(c, 0.7978845608028654))
                a0 = producer_is(g, g->n[m3].in[1 - s], TPUC_OP_ADD);
        if (a0 < 0) continue;
        int m2 = mul_other(g, a0, x, TPUC_OP_MUL);
        if (m2 < 0) continue;
        int m1 = -1;
        for (int s = 0; s < 2; s++)
            if (const_scalar(g, g->n[m2].in[s], &c) && near(c, 0.044715))
                m1 = producer_is(g, g->n[m2].in[1 - s], TPUC_OP_MUL);
        if (m1 < 0) continue;
        int m0 = mul_other(g, m1, x, TPUC_OP_MUL);
        if (m0 < 0 || g->n[m0].in[0] != x || g->n[m0].in[1] != x) continue;
        int k = 0;
        span[k++] = m0; span[k++] = m1; span[k++] = m2; span[k++] = a0; span[k++] = m3;
        span[k++] = th; span[k++] = a1; span[k++] = m4;
        *nspan = k;
        /* every intermediate must be used only inside the pattern */
        for (int i = 0; i < k; i++) {
            int o = g->n[span[i]].out[0];
            if (g->t[o].is_output) return -1;
        }
        return x;
    }
    return -1;
}

/* a1 = Add(e, 1) with e produced by Erf: the Erf node, or -1 */
static int add1_of_erf(const tpuc_graph_t *g, int a1)
{
    float c;
    if (a1 < 0) return -1;
    for (int s = 0; s < 2; s++)
        if (const_scalar(g, g->n[a1].in[s], &c) && c == 1.0f) {
            int p = g->t[g->n[a1].in[1 - s]].producer;
            if (p >= 0 && g->n[p].op == TPUC_OP_ERF) return p;
        }
    return -1;
}

/* Returns the x of an exact GELU ending at node `last` (a Mul), or -1, the nodes it spans and
   its constant k (the multiplier of x inside Erf: fp32(1/c) of torch's Div by c = fp32(sqrt 2),
   which rewrite_div made a Mul). torch 1.13 writes x * (1 + Erf(x / sqrt 2)) * 0.5; the 0.5 is
   also taken first: x * ((1 + Erf(x / sqrt 2)) * 0.5). */
static int match_gelu_erf(const tpuc_graph_t *g, int last, int *span, int *nspan, float *k)
{
    const tpuc_node_t *n = &g->n[last];
    if (n->op != TPUC_OP_MUL || n->nin != 2) return -1;
    float c;
    for (int s = 0; s < 2; s++) {
        int x = -1, a1 = -1, mm = -1;
        if (const_scalar(g, n->in[s], &c) && c == 0.5f) {
            /* (x * a1) * 0.5 */
            mm = producer_is(g, n->in[1 - s], TPUC_OP_MUL);
            if (mm < 0) continue;
            for (int xs = 0; xs < 2 && a1 < 0; xs++) {
                int p = producer_is(g, g->n[mm].in[1 - xs], TPUC_OP_ADD);
                if (add1_of_erf(g, p) >= 0) { a1 = p; x = g->n[mm].in[xs]; }
            }
        } else {
            /* x * (a1 * 0.5) */
            mm = producer_is(g, n->in[1 - s], TPUC_OP_MUL);
            if (mm < 0) continue;
            for (int hs = 0; hs < 2 && a1 < 0; hs++) {
                int p = producer_is(g, g->n[mm].in[1 - hs], TPUC_OP_ADD);
                if (const_scalar(g, g->n[mm].in[hs], &c) && c == 0.5f && add1_of_erf(g, p) >= 0) {
                    a1 = p;
                    x = n->in[s];
                }
            }
        }
        if (a1 < 0) continue;
        int er = add1_of_erf(g, a1);
        int m0 = producer_is(g, g->n[er].in[0], TPUC_OP_MUL);
        if (m0 < 0) continue;
        float kk = 0.0f;
        int ok = 0;
        for (int t = 0; t < 2; t++)
            if (g->n[m0].in[1 - t] == x && const_scalar(g, g->n[m0].in[t], &c) &&
                near(c, 0.7071067811865476)) { ok = 1; kk = c; }
        if (!ok || g->t[x].is_const) continue;
        int q = 0;
        span[q++] = m0; span[q++] = er; span[q++] = a1; span[q++] = mm;
        /* every intermediate is read only by the next node of the pattern */
        int fine = 1;
        for (int i = 0; i < q; i++) {
            const tpuc_tensor_t *o = &g->t[g->n[span[i]].out[0]];
            if (o->is_output || o->nuses != 1) fine = 0;
        }
        if (!fine) continue;
        *nspan = q;
        *k = kk;
        return x;
    }
    return -1;
}

/* ---- shapes ---- */
static int pool_attrs(tpuc_graph_t *g, tpuc_node_t *n, const tpuc_tensor_t *x, int has_w,
                      const tpuc_tensor_t *w, char *err, size_t errlen)
{
    int sp = x->ndim - 2; /* spatial dims: 1 or 2 */
    if (sp < 1 || sp > 2) NODE_ERR(n, "input of %d dimensions, supported: 3 (1-D) and 4 (2-D)", x->ndim);
    const tpuc_attr_t *a;
    int64_t k[2] = {1, 1}, s[2] = {1, 1}, p[4] = {0, 0, 0, 0};
    if ((a = tpuc_attr(n, "kernel_shape"))) {
        if ((int)a->nints != sp) NODE_ERR(n, "kernel_shape has %zu values, expected %d", a->nints, sp);
        for (int i = 0; i < sp; i++) k[i] = a->ints[i];
    } else if (has_w) {
        for (int i = 0; i < sp; i++) k[i] = w->dims[2 + i];
    } else {
        NODE_ERR(n, "kernel_shape missing");
    }
    if ((a = tpuc_attr(n, "strides"))) {
        if ((int)a->nints != sp) NODE_ERR(n, "strides has %zu values, expected %d", a->nints, sp);
        for (int i = 0; i < sp; i++) s[i] = a->ints[i];
    }
    if ((a = tpuc_attr(n, "dilations"))) {
        for (size_t i = 0; i < a->nints; i++)
            if (a->ints[i] != 1) NODE_ERR(n, "dilations %lld: only 1 is supported", (long long)a->ints[i]);
    }
    for (int i = 0; i < sp; i++) {
        if (k[i] < 1 || k[i] > 64) NODE_ERR(n, "kernel_shape %lld: supported 1 .. 64", (long long)k[i]);
        if (s[i] < 1 || s[i] > 64) NODE_ERR(n, "strides %lld: supported 1 .. 64", (long long)s[i]);
    }
    const char *ap = "NOTSET";
    if ((a = tpuc_attr(n, "auto_pad")) && a->s) ap = a->s;
    int64_t in_sz[2] = {sp == 2 ? x->dims[2] : 1, x->dims[x->ndim - 1]};
    if (sp == 1) { k[1] = k[0]; k[0] = 1; s[1] = s[0]; s[0] = 1; }
    if (strcmp(ap, "NOTSET") == 0) {
        if ((a = tpuc_attr(n, "pads"))) {
            if ((int)a->nints != 2 * sp) NODE_ERR(n, "pads has %zu values, expected %d", a->nints, 2 * sp);
            for (size_t i = 0; i < a->nints; i++)
                if (a->ints[i] < 0 || a->ints[i] > 64) NODE_ERR(n, "pads %lld: supported 0 .. 64", (long long)a->ints[i]);
            if (sp == 2) { p[0] = a->ints[0]; p[1] = a->ints[1]; p[2] = a->ints[2]; p[3] = a->ints[3]; }
            else { p[1] = a->ints[0]; p[3] = a->ints[1]; }
        }
    } else if (strcmp(ap, "VALID") == 0) {
        /* no padding */
    } else if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
        for (int d = 0; d < 2; d++) {
            int64_t o = (in_sz[d] + s[d] - 1) / s[d];
            int64_t tot = (o - 1) * s[d] + k[d] - in_sz[d];
            if (tot < 0) tot = 0;
            int64_t lo = ap[5] == 'U' ? tot / 2 : tot - tot / 2;
            p[d] = lo;
            p[d + 2] = tot - lo;
        }
    } else {
        NODE_ERR(n, "auto_pad '%s': supported NOTSET, VALID, SAME_UPPER, SAME_LOWER", ap);
    }
    for (int i = 0; i < 4; i++) p[i] += tpuc_pre_pad(n, i); /* a Pad folded in (fold_pad.c) */
    int ceil_mode = (int)tpuc_attr_int(n, "ceil_mode", 0);
    if (ceil_mode && n->op != TPUC_OP_MAXPOOL) NODE_ERR(n, "ceil_mode 1: supported for MaxPool only");
    if (tpuc_attr_int(n, "storage_order", 0) != 0) NODE_ERR(n, "storage_order 1: only 0 is supported");
    int64_t o[2];
    for (int d = 0; d < 2; d++) {
        if (p[d] >= k[d] || p[d + 2] >= k[d]) {
            if (n->op != TPUC_OP_CONV)
                NODE_ERR(n, "pads %lld/%lld not smaller than the kernel %lld: not supported",
                         (long long)p[d], (long long)p[d + 2], (long long)k[d]);
        }
        int64_t span = in_sz[d] + p[d] + p[d + 2] - k[d];
        if (span < 0) NODE_ERR(n, "kernel %lld larger than the padded input %lld", (long long)k[d], (long long)(in_sz[d] + p[d] + p[d + 2]));
        o[d] = span / s[d] + 1;
        if (ceil_mode && span % s[d]) {
            /* ceil_mode: one more window, reaching past the end: more -Inf padding there
               (a window starting inside the padded input only, as ONNX defines it) */
            int64_t oc = (span + s[d] - 1) / s[d] + 1;
            if ((oc - 1) * s[d] >= in_sz[d] + p[d]) oc--;
            p[d + 2] += (oc - 1) * s[d] + k[d] - (in_sz[d] + p[d] + p[d + 2]);
            o[d] = oc;
        }
    }
    for (int i = 0; i < 2; i++) { n->conv_k[i] = (int)k[i]; n->conv_s[i] = (int)s[i]; }
    for (int i = 0; i < 4; i++) n->conv_p[i] = (int)p[i];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    int64_t d[4] = {x->dims[0], has_w ? w->dims[0] : x->dims[1], o[0], o[1]};
    if (sp == 2) set_shape(y, 4, d);
    else { d[2] = o[1]; set_shape(y, 3, d); }
    return 0;
}

static int fold_bn_into(tpuc_graph_t *g, tpuc_node_t *prod, tpuc_node_t *bn, char *err, size_t errlen)
{
    /* y = (z - mean) * scale / sqrt(var + eps) + B, z = the producer's output (channel dim 1 of
       a Conv, the column of a Gemm). Folded in double precision into the float weights. */
    const tpuc_tensor_t *sc = in_t(g, bn, 1), *bb = in_t(g, bn, 2), *mu = in_t(g, bn, 3),
                        *var = in_t(g, bn, 4);
    const tpuc_attr_t *ea = tpuc_attr(bn, "epsilon");
    double eps = ea && ea->type == 1 ? ea->f : 1e-5;
    int wi = prod->in[1];
    tpuc_tensor_t *w = &g->t[wi];
    int64_t cout = prod->op == TPUC_OP_CONV ? w->dims[0] : w->dims[1];
    if (tpuc_tensor_elems(sc) != cout) NODE_ERR(bn, "%lld channels, the %s before it has %lld", (long long)tpuc_tensor_elems(sc), prod->op_type, (long long)cout);
    /* the weight and bias may be shared with another node: copy them */
    int64_t we = tpuc_tensor_elems(w);
    float *nw = malloc((size_t)we * sizeof *nw);
    float *nb = calloc((size_t)cout, sizeof *nb);
    if (!nw || !nb) { free(nw); free(nb); tpuc_err(err, errlen, "out of memory"); return -1; }
    const float *ob = prod->nin > 2 && prod->in[2] >= 0 ? g->t[prod->in[2]].f : NULL;
    int64_t per = we / cout;
    for (int64_t c = 0; c < cout; c++) {
        double f = sc->f[c] / sqrt((double)var->f[c] + eps);
        nb[c] = (float)(((ob ? ob[c] : 0.0) - mu->f[c]) * f + bb->f[c]);
        for (int64_t i = 0; i < per; i++) {
            if (prod->op == TPUC_OP_CONV) nw[c * per + i] = (float)(w->f[c * per + i] * f);
            else nw[i * cout + c] = (float)(w->f[i * cout + c] * f); /* Gemm B is K x N */
        }
    }
    char nm[300];
    snprintf(nm, sizeof nm, "%s/bn_folded_w", prod->name);
    int t1 = tpuc_add_tensor(g, nm);
    snprintf(nm, sizeof nm, "%s/bn_folded_b", prod->name);
    int t2 = tpuc_add_tensor(g, nm);
    if (t1 < 0 || t2 < 0) { free(nw); free(nb); tpuc_err(err, errlen, "out of memory"); return -1; }
    w = &g->t[wi];
    g->t[t1] = g->t[t1]; /* keep name */
    set_shape(&g->t[t1], w->ndim, w->dims);
    g->t[t1].is_const = 1; g->t[t1].f = nw;
    int64_t bd[1] = {cout};
    set_shape(&g->t[t2], 1, bd);
    g->t[t2].is_const = 1; g->t[t2].f = nb;
    prod->in[1] = t1;
    prod->in[2] = t2;
    if (prod->nin < 3) prod->nin = 3;
    return 0;
}

/* ---- shape computations on constants (once the batch is bound): Shape, Gather, Unsqueeze,
   Squeeze, Slice, Cast, Concat of constants give constants ---- */
static double cval(const tpuc_tensor_t *t, int64_t i) { return t->f ? (double)t->f[i] : (double)t->i[i]; }

static int make_const(tpuc_tensor_t *y, int nd, const int64_t *d, int is_int)
{
    set_shape(y, nd, d);
    int64_t e = tpuc_tensor_elems(y);
    y->is_const = 1;
    y->dtype = is_int ? TPUC_I64 : TPUC_F32;
    if (is_int) y->i = calloc((size_t)(e ? e : 1), sizeof *y->i);
    else y->f = calloc((size_t)(e ? e : 1), sizeof *y->f);
    return (is_int ? (void *)y->i : (void *)y->f) ? 0 : -1;
}

static void cset(tpuc_tensor_t *t, int64_t i, double v)
{
    if (t->i) t->i[i] = (int64_t)v; else t->f[i] = (float)v;
}

/* axes from the attribute (old versions) or the second input (new versions) */
static int get_axes(const tpuc_graph_t *g, const tpuc_node_t *n, int64_t *ax, int *nax, int rank)
{
    const tpuc_attr_t *a = tpuc_attr(n, "axes");
    *nax = 0;
    if (a && a->type == 7) {
        for (size_t k = 0; k < a->nints && k < TPUC_MAX_DIMS; k++) ax[(*nax)++] = a->ints[k];
    } else if (n->nin > 1 && n->in[1] >= 0) {
        const tpuc_tensor_t *t = &g->t[n->in[1]];
        if (!t->is_const || !t->i || tpuc_tensor_elems(t) > TPUC_MAX_DIMS) return -1;
        for (int64_t k = 0; k < tpuc_tensor_elems(t); k++) ax[(*nax)++] = t->i[k];
    }
    for (int k = 0; k < *nax; k++) {
        if (ax[k] < 0) ax[k] += rank;
        if (ax[k] < 0 || ax[k] >= rank) return -1;
    }
    return 0;
}

/* The shape a Squeeze or Unsqueeze of a makes: d[0..*nd). 0, or -1 with err. */
static int squeeze_dims(const tpuc_graph_t *g, const tpuc_node_t *n, const tpuc_tensor_t *a,
                        int64_t *d, int *pnd, char *err, size_t errlen)
{
    int64_t ax[TPUC_MAX_DIMS];
    int nax, nd = 0, rank = a->ndim;
    if (n->op == TPUC_OP_UNSQUEEZE) {
        const tpuc_attr_t *at = tpuc_attr(n, "axes");
        int cnt = at ? (int)at->nints : (n->nin > 1 && n->in[1] >= 0 ? (int)tpuc_tensor_elems(&g->t[n->in[1]]) : 0);
        rank = a->ndim + cnt;
    }
    if (get_axes(g, n, ax, &nax, rank)) NODE_ERR(n, "bad axes");
    if (n->op == TPUC_OP_UNSQUEEZE) {
        if (rank > TPUC_MAX_DIMS) NODE_ERR(n, "more than %d dimensions", TPUC_MAX_DIMS);
        int src = 0;
        for (int k = 0; k < rank; k++) {
            int is = 0;
            for (int q = 0; q < nax; q++) if (ax[q] == k) is = 1;
            d[nd++] = is ? 1 : a->dims[src++];
        }
    } else {
        for (int k = 0; k < a->ndim; k++) {
            int is = nax == 0 ? a->dims[k] == 1 : 0;
            for (int q = 0; q < nax; q++) {
                if (ax[q] == k && a->dims[k] != 1)
                    NODE_ERR(n, "axis %d has %lld elements: only axes of 1 can be squeezed", k, (long long)a->dims[k]);
                if (ax[q] == k) is = 1;
            }
            if (!is) d[nd++] = a->dims[k];
        }
    }
    *pnd = nd;
    return 0;
}

/* A Squeeze or Unsqueeze of an activation becomes a Reshape (a view: the bytes are kept) to
   the shape it makes (torch's LSTM export squeezes Y's direction axis). 0, or -1 with err. */
static int squeeze_to_reshape(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    int64_t d[TPUC_MAX_DIMS];
    int nd;
    if (squeeze_dims(g, n, &g->t[n->in[0]], d, &nd, err, errlen)) return -1;
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/shape", n->name);
    int si = tpuc_add_tensor(g, nm);
    if (si < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    int64_t one = nd;
    if (make_const(&g->t[si], 1, &one, 1)) return tpuc_err(err, errlen, "out of memory"), -1;
    for (int k = 0; k < nd; k++) g->t[si].i[k] = d[k];
    g->t[si].nuses = 1;
    if (n->nin > 1 && n->in[1] >= 0) g->t[n->in[1]].nuses--;
    n->nin = 2;
    n->in[1] = si;
    for (size_t i = 0; i < n->nattrs; i++) {
        free(n->attrs[i].name); free(n->attrs[i].s);
        free(n->attrs[i].ints); free(n->attrs[i].floats);
    }
    free(n->attrs);
    n->attrs = NULL;
    n->nattrs = 0;
    n->op = TPUC_OP_RESHAPE;
    n->version = 14;
    return 0;
}

static int fold_shape_op(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *a = in_t(g, n, 0);
    tpuc_tensor_t *y = &g->t[n->out[0]];
    int64_t d[TPUC_MAX_DIMS] = {0};
    if (n->op == TPUC_OP_SHAPE) {
        int64_t st = tpuc_attr_int(n, "start", 0), en = tpuc_attr_int(n, "end", a->ndim);
        if (st < 0) st += a->ndim;
        if (en < 0) en += a->ndim;
        if (st < 0) st = 0;
        if (en > a->ndim) en = a->ndim;
        if (en < st) en = st;
        d[0] = en - st;
        if (make_const(y, 1, d, 1)) return tpuc_err(err, errlen, "out of memory"), -1;
        for (int64_t k = st; k < en; k++) y->i[k - st] = a->dims[k];
        return 0;
    }
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && !g->t[n->in[k]].is_const)
            NODE_ERR(n, "input %d ('%s') is an activation; only shape computations on constants are supported", k, g->t[n->in[k]].name);
    int is_int = a->i != NULL;
    int64_t e = tpuc_tensor_elems(a);
    switch (n->op) {
    case TPUC_OP_GATHER: {
        const tpuc_tensor_t *ix = in_t(g, n, 1);
        if (!ix || !ix->i) NODE_ERR(n, "indices must be int64 constants");
        int64_t ax = tpuc_attr_int(n, "axis", 0);
        if (ax < 0) ax += a->ndim;
        if (ax < 0 || ax >= a->ndim) NODE_ERR(n, "axis %lld out of range", (long long)ax);
        int nd = 0;
        for (int k = 0; k < ax; k++) d[nd++] = a->dims[k];
        for (int k = 0; k < ix->ndim; k++) d[nd++] = ix->dims[k];
        for (int k = (int)ax + 1; k < a->ndim; k++) d[nd++] = a->dims[k];
        if (nd > TPUC_MAX_DIMS) NODE_ERR(n, "result of more than %d dimensions", TPUC_MAX_DIMS);
        if (make_const(y, nd, d, is_int)) return tpuc_err(err, errlen, "out of memory"), -1;
        int64_t outer = 1, inner = 1, ni = tpuc_tensor_elems(ix), dax = a->dims[ax];
        for (int k = 0; k < ax; k++) outer *= a->dims[k];
        for (int k = (int)ax + 1; k < a->ndim; k++) inner *= a->dims[k];
        for (int64_t o = 0; o < outer; o++)
            for (int64_t q = 0; q < ni; q++) {
                int64_t id = ix->i[q] < 0 ? ix->i[q] + dax : ix->i[q];
                if (id < 0 || id >= dax) NODE_ERR(n, "index %lld out of range 0 .. %lld", (long long)ix->i[q], (long long)dax - 1);
                for (int64_t r = 0; r < inner; r++)
                    cset(y, (o * ni + q) * inner + r, cval(a, (o * dax + id) * inner + r));
            }
        return 0;
    }
    case TPUC_OP_UNSQUEEZE: case TPUC_OP_SQUEEZE: {
        int nd;
        if (squeeze_dims(g, n, a, d, &nd, err, errlen)) return -1;
        if (make_const(y, nd, d, is_int)) return tpuc_err(err, errlen, "out of memory"), -1;
        for (int64_t k = 0; k < e; k++) cset(y, k, cval(a, k));
        return 0;
    }
    case TPUC_OP_CAST: {
        int64_t to = tpuc_attr_int(n, "to", 0);
        if (to != 1 && to != 7) NODE_ERR(n, "to %lld: supported 1 (float32) and 7 (int64)", (long long)to);
        if (make_const(y, a->ndim, a->dims, to == 7)) return tpuc_err(err, errlen, "out of memory"), -1;
        for (int64_t k = 0; k < e; k++) cset(y, k, cval(a, k));
        return 0;
    }
    case TPUC_OP_SLICE: {
        if (a->ndim != 1) NODE_ERR(n, "a Slice of a %d-D constant; only 1-D (shapes) is supported", a->ndim);
        const tpuc_tensor_t *st = in_t(g, n, 1), *en = in_t(g, n, 2), *sp = in_t(g, n, 4);
        if (!st || !en || !st->i || !en->i) NODE_ERR(n, "starts and ends must be int64 constants");
        int64_t L = a->dims[0], s0 = st->i[0], e0 = en->i[0], step = sp && sp->i ? sp->i[0] : 1;
        if (step != 1) NODE_ERR(n, "steps %lld: only 1 is supported", (long long)step);
        if (s0 < 0) s0 += L;
        if (e0 < 0) e0 += L;
        if (s0 < 0) s0 = 0;
        if (e0 > L) e0 = L;
        if (s0 > L) s0 = L;
        d[0] = e0 > s0 ? e0 - s0 : 0;
        if (make_const(y, 1, d, is_int)) return tpuc_err(err, errlen, "out of memory"), -1;
        for (int64_t k = 0; k < d[0]; k++) cset(y, k, cval(a, s0 + k));
        return 0;
    }
    case TPUC_OP_CONCAT: {
        int64_t ax = tpuc_attr_int(n, "axis", 0);
        if (a->ndim != 1 || (ax != 0 && ax != -1)) NODE_ERR(n, "a Concat of constants: only 1-D (shapes) is supported");
        d[0] = 0;
        for (int k = 0; k < n->nin; k++) {
            const tpuc_tensor_t *t = in_t(g, n, k);
            if (!t || t->ndim != 1) NODE_ERR(n, "a Concat of constants: only 1-D (shapes) is supported");
            d[0] += t->dims[0];
        }
        if (make_const(y, 1, d, is_int)) return tpuc_err(err, errlen, "out of memory"), -1;
        int64_t o = 0;
        for (int k = 0; k < n->nin; k++) {
            const tpuc_tensor_t *t = in_t(g, n, k);
            for (int64_t q = 0; q < t->dims[0]; q++) cset(y, o++, cval(t, q));
        }
        return 0;
    }
    default:
        NODE_ERR(n, "not a shape computation");
    }
}

int tpuc_fold(tpuc_graph_t *g, const tpuc_hw_t *hw, char *err, size_t errlen)
{
    /* the batch */
    tpuc_tensor_t *x = &g->t[g->inputs[0]];
    long total = hw->batch;
    if (x->dims[0] < 0) {
        if (total <= 0) total = hw->cores;
    } else if (total > 0 && total != x->dims[0]) {
        tpuc_err(err, errlen, "--batch %ld: the model's input '%s' has a fixed batch of %lld",
                 total, x->name, (long long)x->dims[0]);
        return -1;
    } else {
        total = (long)x->dims[0];
    }
    long per = (total + (long)hw->cores - 1) / (long)hw->cores;
    x->dims[0] = per; /* each core's program runs `per` images */

    for (size_t ni = 0; ni < g->nn; ni++) {
        tpuc_node_t *n = &g->n[ni];
        if (n->op == TPUC_OP_DEAD) continue;
        /* inputs must have shapes by now */
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0 && g->t[n->in[k]].ndim < 0)
                NODE_ERR(n, "input '%s' has no known shape", g->t[n->in[k]].name);
        if (n->op == TPUC_OP_LSTM || n->op == TPUC_OP_GRU || n->op == TPUC_OP_RNN) {
            /* unrolled over the sequence into nodes after it, folded next (fold_rnn.c) */
            if (tpuc_fold_rnn(g, ni, hw, err, errlen)) return -1;
            continue;
        }
        if (n->op == TPUC_OP_CONVT) {
            /* a Pad (the input dilated) at ni, taken now, and a Conv at ni + 1 (fold_pad.c) */
            if (tpuc_fold_convtranspose(g, ni, err, errlen)) return -1;
            n = &g->n[ni];
        }
        if (n->op == TPUC_OP_PAD) {
            /* of a row-major [B, H, W, C]'s H and W (Swin): between Transposes (fold_swin.c) */
            if (tpuc_fold_pad_rows(g, ni, err, errlen) < 0) return -1;
            n = &g->n[ni];
        }
        if (n->op == TPUC_OP_EINSUM) {
            /* Transposes and a MatMul from ni on, folded next (fold_einsum.c) */
            if (tpuc_fold_einsum(g, ni, err, errlen)) return -1;
            n = &g->n[ni];
        }
        int nouts = 0;
        for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0) nouts++;
        const tpuc_tensor_t *a = in_t(g, n, 0), *b = in_t(g, n, 1);
        tpuc_tensor_t *y = n->nout > 0 && n->out[0] >= 0 ? &g->t[n->out[0]] : NULL;
        if (!y) NODE_ERR(n, "no output");
        if (!a && n->op != TPUC_OP_CONSTANT) NODE_ERR(n, "its first input is missing");
        switch (n->op) {
        case TPUC_OP_CONSTANT: {
            const tpuc_attr_t *v = tpuc_attr(n, "value");
            if (!v || v->tensor < 0 || n->nattrs != 1) NODE_ERR(n, "only the 'value' attribute (a tensor) is supported");
            int src = v->tensor;
            int yi = n->out[0];
            /* make y the constant: move the data */
            tpuc_tensor_t *s = &g->t[src];
            tpuc_tensor_t *t = &g->t[yi];
            set_shape(t, s->ndim, s->dims);
            t->is_const = 1; t->dtype = s->dtype; t->f = s->f; t->i = s->i;
            s->f = NULL; s->i = NULL;
            n->op = TPUC_OP_DEAD;
            continue;
        }
        case TPUC_OP_PAD:
        case TPUC_OP_IDENTITY:
        case TPUC_OP_DROPOUT: {
            if (n->op == TPUC_OP_PAD) {
                /* fold_pad.c: folded into its readers or kept; a Pad of zero width goes on
                   as an identity */
                int r = tpuc_fold_pad(g, ni, err, errlen);
                if (r < 0) return -1;
                if (r == 0) continue;
            }
            if (n->op == TPUC_OP_DROPOUT) {
                /* a ratio that is not a constant 0 drops in training: recorded for it */
                const tpuc_tensor_t *rt = n->nin > 1 && n->in[1] >= 0 ? in_t(g, n, 1) : NULL;
                int zero = rt && rt->is_const && tpuc_tensor_elems(rt) == 1 &&
                           ((rt->f && rt->f[0] == 0.0f) || (rt->i && rt->i[0] == 0));
                if (!zero && !g->removed_dropout) g->removed_dropout = (int)(n - g->n) + 1;
                if (n->nin > 2 && n->in[2] >= 0) {
                    /* training mode with a ratio of 0 drops nothing (Swin's F.dropout(x, p=0),
                       whose training defaults to true) */
                    const tpuc_tensor_t *tm = in_t(g, n, 2);
                    if (!tm->is_const || (!zero && ((tm->i && tm->i[0]) || (tm->f && tm->f[0] != 0))))
                        NODE_ERR(n, "training_mode must be absent or a false constant for inference (or the ratio a constant 0)");
                }
                if (n->nout > 1 && n->out[1] >= 0 && (g->t[n->out[1]].nuses || g->t[n->out[1]].is_output))
                    NODE_ERR(n, "the mask output is used; only the data output is supported");
            }
            if (a->is_const) {
                set_shape(y, a->ndim, a->dims);
                y->is_const = 1; y->dtype = a->dtype;
                size_t es = a->f ? 4 : 8, e = (size_t)tpuc_tensor_elems(a);
                void *d = malloc(e * es + 1);
                if (!d) return tpuc_err(err, errlen, "out of memory"), -1;
                memcpy(d, a->f ? (void *)a->f : (void *)a->i, e * es);
                if (a->f) y->f = d; else y->i = d;
            } else if (y->is_output && a->is_input) {
                /* the graph's output is its input: kept as a copy */
                set_shape(y, a->ndim, a->dims);
                n->op = TPUC_OP_IDENTITY;
                n->nin = 1;
                continue;
            } else {
                set_shape(y, a->ndim, a->dims);
                replace_uses(g, n->out[0], n->in[0]);
            }
            n->op = TPUC_OP_DEAD;
            continue;
        }
        default: break;
        }
        if (n->op == TPUC_OP_GATHER && b && !b->is_const) {
            /* an embedding lookup: rows of a float table [V, D] by the integer graph input */
            static const char *const at[] = {"axis", NULL};
            if (known_attrs(n, at, err, errlen)) return -1;
            if (nouts != 1) NODE_ERR(n, "%d outputs, only 1 is supported", nouts);
            if (!b->is_input || (b->dtype != TPUC_I64 && b->dtype != TPUC_I32))
                NODE_ERR(n, "indices '%s' are an activation; supported: the graph input of int64/int32 token ids (an embedding lookup) or constants", b->name);
            if (!a->is_const || !a->f || a->ndim != 2)
                NODE_ERR(n, "data '%s' must be a float32 initializer of 2 dimensions (an embedding table [V, D]) when the indices are the graph input", a->name);
            if (tpuc_attr_int(n, "axis", 0) != 0 && tpuc_attr_int(n, "axis", 0) != -2)
                NODE_ERR(n, "axis %lld: only 0 (rows of the table) is supported", (long long)tpuc_attr_int(n, "axis", 0));
            if (b->ndim + 1 > TPUC_MAX_DIMS) NODE_ERR(n, "result of more than %d dimensions", TPUC_MAX_DIMS);
            int64_t d[TPUC_MAX_DIMS];
            for (int k = 0; k < b->ndim; k++) d[k] = b->dims[k];
            d[b->ndim] = a->dims[1];
            set_shape(y, b->ndim + 1, d);
            n->embed = 1;
            continue;
        }
        if (n->op == TPUC_OP_TRANSPOSE) {
            /* [B, L, D] -> [B, D, L] right after an embedding lookup read by nothing else:
               folded into it (its output is written channels-first, a pixel per row) */
            const tpuc_attr_t *pm = tpuc_attr(n, "perm");
            int pi = a->producer, readers = 0;
            for (size_t k = 0; k < g->nn; k++)
                if (g->n[k].op != TPUC_OP_DEAD)
                    for (int j = 0; j < g->n[k].nin; j++) readers += g->n[k].in[j] == n->in[0];
            if (!pm || pm->nints != 3 || pm->ints[0] != 0 || pm->ints[1] != 2 || pm->ints[2] != 1 ||
                pi < 0 || g->n[pi].op != TPUC_OP_GATHER || g->n[pi].embed != 1 || readers != 1 ||
                a->is_output) {
                /* any other Transpose: fold_attn.c (tile_attn.c moves the rows) */
                if (nouts != 1) NODE_ERR(n, "%d outputs, only 1 is supported", nouts);
                if (a->ndim == 3 && tpuc_rnn_input_transpose(g, n)) {
                    /* the sequence-first X of recurrent nodes, which read a instead */
                    int64_t d[3] = {a->dims[1], a->dims[0], a->dims[2]};
                    set_shape(y, 3, d);
                    continue;
                }
                if (tpuc_fold_transpose(g, n, hw, err, errlen)) return -1;
                continue;
            }
            int64_t d[3] = {a->dims[0], a->dims[2], a->dims[1]};
            set_shape(y, 3, d);
            g->n[pi].embed = 2;
            g->n[pi].out[0] = n->out[0];
            y->producer = pi;
            n->op = TPUC_OP_DEAD;
            continue;
        }
        if (n->op == TPUC_OP_SLICE && a->is_const && a->ndim > 1 && n->version >= 10) {
            /* a constant, any steps (fold_pad.c) */
            if (nouts != 1) NODE_ERR(n, "%d outputs, only 1 is supported", nouts);
            if (tpuc_fold_slice_const(g, n, err, errlen)) return -1;
            n->op = TPUC_OP_DEAD;
            continue;
        }
        if (n->op == TPUC_OP_SLICE && (!a->is_const || a->ndim != 1)) {
            /* a Slice of an activation (or a constant of more than one dimension) */
            if (nouts != 1) NODE_ERR(n, "%d outputs, only 1 is supported", nouts);
            int r = tpuc_fold_slice_steps(g, ni, err, errlen); /* steps > 1: fold_swin.c */
            if (r < 0) return -1;
            if (r) {
                ni--; /* the view at ni next */
                continue;
            }
            if (tpuc_fold_slice(g, n, hw, err, errlen)) return -1;
            continue;
        }
        if (tpuc_is_mask_op(n)) {
            /* attention masks (fold_mask.c): folded on constants, or Where(mask, -inf, x)
               made an Add of x and a constant (g->t may have moved) */
            if (nouts != 1) NODE_ERR(n, "%d outputs, only 1 is supported", nouts);
            if (tpuc_fold_mask(g, n, err, errlen)) return -1;
            if (n->op == TPUC_OP_DEAD) continue;
            a = in_t(g, n, 0); b = in_t(g, n, 1);
            y = &g->t[n->out[0]];
        }
        if (n->op == TPUC_OP_RANGE || n->op == TPUC_OP_SCATTERND || n->op == TPUC_OP_NOT) {
            /* Swin's shift mask, on constants (fold_range.c) */
            if (nouts != 1) NODE_ERR(n, "%d outputs, only 1 is supported", nouts);
            if (tpuc_fold_range(g, n, err, errlen)) return -1;
            continue;
        }
        if (n->op == TPUC_OP_GATHER && !a->is_const && b && b->is_const) {
            /* x[i] of a Transpose's output (Swin's qkv[0]; fold_swin.c): Slice, Reshape,
               Transpose from ni on */
            int r = tpuc_fold_gather0(g, ni, err, errlen);
            if (r < 0) return -1;
            if (r) {
                ni--; /* the Slice at ni next */
                continue;
            }
        }
        if (n->op == TPUC_OP_GATHER && !a->is_const && b && b->is_const) {
            /* x[:, i] of an activation (ViT's class token; fold_vit.c) */
            if (nouts != 1) NODE_ERR(n, "%d outputs, only 1 is supported", nouts);
            if (tpuc_fold_pick(g, n, err, errlen)) return -1;
            continue;
        }
        if ((n->op == TPUC_OP_SQUEEZE || n->op == TPUC_OP_UNSQUEEZE) && !a->is_const) {
            /* a view of an activation: a Reshape (g->t may have moved) */
            if (squeeze_to_reshape(g, n, err, errlen)) return -1;
            a = in_t(g, n, 0); b = in_t(g, n, 1);
            y = &g->t[n->out[0]];
        }
        int all_const = 1; /* a Concat of constants is a shape computation */
        for (int k = 0; k < n->nin; k++) all_const &= n->in[k] < 0 || g->t[n->in[k]].is_const;
        if (n->op == TPUC_OP_CONCAT && all_const && a->ndim != 1) {
            /* of more than one dimension (Swin's mask: ScatterND's indices): fold_range.c */
            if (tpuc_fold_concat_const(g, n, err, errlen)) return -1;
            continue;
        }
        if (n->op == TPUC_OP_SHAPE || n->op == TPUC_OP_GATHER || n->op == TPUC_OP_UNSQUEEZE ||
            n->op == TPUC_OP_SQUEEZE || n->op == TPUC_OP_SLICE || n->op == TPUC_OP_CAST ||
            (n->op == TPUC_OP_CONCAT && all_const)) {
            if (nouts != 1) NODE_ERR(n, "%d outputs, only 1 is supported", nouts);
            if (fold_shape_op(g, n, err, errlen)) return -1;
            n->op = TPUC_OP_DEAD;
            continue;
        }
        if (nouts != 1) NODE_ERR(n, "%d outputs, only 1 is supported", nouts);
        if ((n->op == TPUC_OP_ADD || n->op == TPUC_OP_SUB || n->op == TPUC_OP_MUL ||
             n->op == TPUC_OP_DIV || n->op == TPUC_OP_MOD) && b && a->is_const && b->is_const) {
            if (tpuc_fold_const_arith(g, n, err, errlen)) return -1; /* shape arithmetic */
            continue;
        }
        if (n->op == TPUC_OP_MOD) NODE_ERR(n, "a Mod of an activation: only of constants (shape arithmetic) is supported");
        if (n->op == TPUC_OP_NEG) {
            /* -x as x * -1 (exact: a sign flip; Neg(+0) = -0 as ONNX's) */
            if (rewrite_neg(g, ni, err, errlen)) return -1;
            n = &g->n[ni];
            a = in_t(g, n, 0); b = in_t(g, n, 1);
            y = &g->t[n->out[0]];
        }
        if (n->op == TPUC_OP_POW && a->is_const && b && b->is_const) {
            if (tpuc_fold_pow_const(g, n, err, errlen)) return -1; /* fold_swin.c */
            continue;
        }
        if (n->op == TPUC_OP_POW && rewrite_pow(g, n, err, errlen)) return -1;
        if (n->op == TPUC_OP_DIV) {
            if (rewrite_div(g, ni, err, errlen)) return -1;
            n = &g->n[ni];
            a = in_t(g, n, 0); b = in_t(g, n, 1);
            y = &g->t[n->out[0]];
        }
        switch (n->op) {
        case TPUC_OP_SQRT: case TPUC_OP_EXP:
            if (n->nattrs) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[0].name);
            if (a->is_const) NODE_ERR(n, "the input is a constant (not folded)");
            set_shape(y, a->ndim, a->dims);
            break;
        case TPUC_OP_LAYERNORM:
            if (fold_layernorm(g, n, a, y, err, errlen)) return -1;
            break;
        case TPUC_OP_HARDSIGMOID: case TPUC_OP_HARDSWISH:
            if (fold_hard(n, a, y, err, errlen)) return -1;
            break;
        case TPUC_OP_REDUCEMEAN: case TPUC_OP_REDUCESUM: case TPUC_OP_REDUCEMAX:
            if (fold_reduce(g, n, a, y, err, errlen)) return -1;
            break;
        case TPUC_OP_RESHAPE: {
            static const char *const at[] = {"allowzero", NULL};
            if (known_attrs(n, at, err, errlen)) return -1;
            if (!b || !b->is_const || !b->i) NODE_ERR(n, "the shape input must be a constant int64 tensor");
            int64_t ns = tpuc_tensor_elems(b);
            if (ns < 1 || ns > TPUC_MAX_DIMS) NODE_ERR(n, "target shape of %lld dimensions, supported 1 .. %d", (long long)ns, TPUC_MAX_DIMS);
            int64_t d[TPUC_MAX_DIMS], known = 1;
            int infer = -1;
            for (int i = 0; i < ns; i++) {
                d[i] = b->i[i];
                if (d[i] == 0 && !tpuc_attr_int(n, "allowzero", 0)) {
                    if (i >= a->ndim) NODE_ERR(n, "shape[%d] = 0 copies a dimension the input does not have", i);
                    d[i] = a->dims[i];
                }
                if (d[i] == -1) {
                    if (infer >= 0) NODE_ERR(n, "two -1 dimensions in the target shape");
                    infer = i;
                } else if (d[i] < 0) {
                    NODE_ERR(n, "shape[%d] = %lld, expected >= -1", i, (long long)d[i]);
                } else {
                    if (d[i] && known > TPUC_MAX_ELEMS / d[i]) NODE_ERR(n, "target shape too large");
                    known *= d[i];
                }
            }
            int64_t e = tpuc_tensor_elems(a);
            if (infer >= 0) {
                if (known == 0 || e % known) NODE_ERR(n, "cannot infer the -1 dimension (%lld elements into %lld)", (long long)e, (long long)known);
                d[infer] = e / known;
            } else if (known != e) {
                NODE_ERR(n, "target shape holds %lld elements, the input %lld", (long long)known, (long long)e);
            }
            set_shape(y, (int)ns, d);
            if (a->is_const) {
                y->is_const = 1; y->dtype = a->dtype;
                size_t es = a->f ? 4 : 8;
                void *dd = malloc((size_t)e * es + 1);
                if (!dd) return tpuc_err(err, errlen, "out of memory"), -1;
                memcpy(dd, a->f ? (void *)a->f : (void *)a->i, (size_t)e * es);
                if (a->f) y->f = dd; else y->i = dd;
                n->op = TPUC_OP_DEAD;
            } else if (hw->cores > 1 && (y->ndim < 1 || y->dims[0] != a->dims[0])) {
                NODE_ERR(n, "the target shape changes the batch dimension (%lld -> %lld per "
                         "core); on %u cores only reshapes that keep the first dimension are "
                         "supported (a literal batch in the shape: compile with --cores 1)",
                         (long long)a->dims[0], (long long)y->dims[0], hw->cores);
            }
            break;
        }
        case TPUC_OP_FLATTEN: {
            static const char *const at[] = {"axis", NULL};
            if (known_attrs(n, at, err, errlen)) return -1;
            int64_t ax = tpuc_attr_int(n, "axis", 1);
            if (ax < 0) ax += a->ndim;
            if (ax < 0 || ax > a->ndim) NODE_ERR(n, "axis %lld out of range for %d dimensions", (long long)tpuc_attr_int(n, "axis", 1), a->ndim);
            int64_t d[2] = {1, 1};
            for (int i = 0; i < a->ndim; i++) d[i < ax ? 0 : 1] *= a->dims[i];
            if (ax != 1 && hw->cores > 1) NODE_ERR(n, "axis %lld: on %u cores only 1 (keep the batch) is supported (compile with --cores 1)", (long long)ax, hw->cores);
            set_shape(y, 2, d);
            if (a->is_const) NODE_ERR(n, "a Flatten of a constant is not supported");
            break;
        }
        case TPUC_OP_GEMM: {
            static const char *const at[] = {"alpha", "beta", "transA", "transB", NULL};
            if (known_attrs(n, at, err, errlen)) return -1;
            const tpuc_attr_t *al = tpuc_attr(n, "alpha"), *be = tpuc_attr(n, "beta");
            double alpha = al && al->type == 1 ? al->f : 1.0, beta = be && be->type == 1 ? be->f : 1.0;
            if (tpuc_attr_int(n, "transA", 0)) NODE_ERR(n, "transA 1: only 0 is supported (the activation must not be transposed)");
            if (a->ndim != 2 || !b || b->ndim != 2) NODE_ERR(n, "A and B must be 2-D");
            if (a->is_const) NODE_ERR(n, "A is a constant; the first input must be the activation");
            if (!b->is_const || !b->f) NODE_ERR(n, "B (the weights) must be a float32 initializer");
            if (tpuc_attr_int(n, "transB", 0)) {
                /* transpose the weights at compile time: B becomes K x N */
                int64_t r = b->dims[0], c = b->dims[1];
                float *t = malloc((size_t)(r * c + 1) * sizeof *t);
                if (!t) return tpuc_err(err, errlen, "out of memory"), -1;
                for (int64_t i = 0; i < r; i++)
                    for (int64_t j = 0; j < c; j++) t[j * r + i] = b->f[i * c + j];
                char nm[300];
                snprintf(nm, sizeof nm, "%s/B_transposed", n->name);
                int ti = tpuc_add_tensor(g, nm);
                if (ti < 0) { free(t); return tpuc_err(err, errlen, "out of memory"), -1; }
                n = &g->n[ni];
                int64_t d[2] = {c, r};
                set_shape(&g->t[ti], 2, d);
                g->t[ti].is_const = 1; g->t[ti].f = t;
                n->in[1] = ti;
                for (size_t k = 0; k < n->nattrs; k++)
                    if (strcmp(n->attrs[k].name, "transB") == 0) n->attrs[k].i = 0;
                a = in_t(g, n, 0); b = in_t(g, n, 1);
                y = &g->t[n->out[0]];
            }
            if (alpha != 1.0 || (beta != 1.0 && n->nin > 2 && n->in[2] >= 0)) {
                /* alpha * (A B) + beta * C: alpha scales the weights, beta the bias, in fp32 at
                   compile time (then the weights are rounded to bf16 as usual) */
                for (int k = 1; k < 3 && k < n->nin; k++) {
                    if (n->in[k] < 0 || (k == 1 ? alpha : beta) == 1.0) continue;
                    const tpuc_tensor_t *src = &g->t[n->in[k]];
                    if (!src->is_const || !src->f) break;
                    int64_t e = tpuc_tensor_elems(src);
                    float *t = malloc((size_t)(e + 1) * sizeof *t);
                    if (!t) return tpuc_err(err, errlen, "out of memory"), -1;
                    for (int64_t q = 0; q < e; q++) t[q] = (float)((k == 1 ? alpha : beta) * src->f[q]);
                    char nm[300];
                    snprintf(nm, sizeof nm, "%s/%s_scaled", n->name, k == 1 ? "B" : "C");
                    int ti = tpuc_add_tensor(g, nm);
                    if (ti < 0) { free(t); return tpuc_err(err, errlen, "out of memory"), -1; }
                    n = &g->n[ni];
                    src = &g->t[n->in[k]];
                    set_shape(&g->t[ti], src->ndim, src->dims);
                    g->t[ti].is_const = 1; g->t[ti].f = t;
                    n->in[k] = ti;
                }
                a = in_t(g, n, 0); b = in_t(g, n, 1);
                y = &g->t[n->out[0]];
            }
            if (a->dims[1] != b->dims[0]) NODE_ERR(n, "A is %lld x %lld, B %lld x %lld: inner dimensions differ", (long long)a->dims[0], (long long)a->dims[1], (long long)b->dims[0], (long long)b->dims[1]);
            int64_t d[2] = {a->dims[0], b->dims[1]};
            set_shape(y, 2, d);
            if (n->nin > 2 && n->in[2] >= 0) {
                const tpuc_tensor_t *c = in_t(g, n, 2);
                int64_t ce = tpuc_tensor_elems(c);
                if (!c->is_const || !c->f) NODE_ERR(n, "C (the bias) must be a float32 initializer");
                int okc = ce == 1 || (ce == d[1] && (c->ndim == 1 || (c->ndim == 2 && c->dims[0] == 1)));
                if (!okc && c->ndim == 2 && c->dims[0] == d[0] && c->dims[1] == d[1]) okc = 2;
                if (!okc) {
                    char shp[160];
                    shape_text(c, shp, sizeof shp);
                    NODE_ERR(n, "C of shape %s: supported a scalar, [N] or [1, N] (N = %lld)", shp, (long long)d[1]);
                }
                if (okc == 2) NODE_ERR(n, "C of shape [M, N] (a full matrix): supported a scalar, [N] or [1, N]");
            }
            break;
        }
        case TPUC_OP_MATMUL: {
            if (b && (!b->is_const || b->ndim > 2)) { /* two activations (attention), or
                                                          batched weights: fold_attn.c */
                if (tpuc_fold_matmul2(g, n, hw, err, errlen)) return -1;
                break;
            }
            if (!b || !b->is_const || !b->f || b->ndim != 2) NODE_ERR(n, "the second input must be a 2-D float32 initializer (the weights)");
            if (a->is_const) NODE_ERR(n, "the first input must be the activation");
            if (a->ndim < 2) NODE_ERR(n, "the first input has %d dimensions, expected >= 2", a->ndim);
            if (a->dims[a->ndim - 1] != b->dims[0]) NODE_ERR(n, "inner dimensions differ: %lld vs %lld", (long long)a->dims[a->ndim - 1], (long long)b->dims[0]);
            int64_t d[TPUC_MAX_DIMS];
            for (int i = 0; i < a->ndim; i++) d[i] = a->dims[i];
            d[a->ndim - 1] = b->dims[1];
            set_shape(y, a->ndim, d);
            break;
        }
        case TPUC_OP_ADD: case TPUC_OP_MUL: case TPUC_OP_DIV: case TPUC_OP_POW: case TPUC_OP_SUB: {
            if (!b) NODE_ERR(n, "two inputs expected");
            /* a first input broadcast to the second (two activations): tile takes [.., 1]
               against [.., F] (the column broadcast) and refuses the rest */
            if (a->is_const && b->is_const) NODE_ERR(n, "both inputs are constants (not folded)");
            const tpuc_tensor_t *act = a->is_const ? b : a, *cst = a->is_const ? a : b;
            if (n->op == TPUC_OP_DIV || n->op == TPUC_OP_POW) { /* only inside a GELU: checked later */ }
            /* broadcasting: the constant must broadcast to the activation's shape */
            if (!cst->is_const) {
                /* two activations: the same shape, or one of them [B, C, 1, 1] (per image and
                   channel, broadcast over the pixels: squeeze-and-excitation) */
                const tpuc_tensor_t *big = a, *sm = b;
                if (tpuc_tensor_elems(b) > tpuc_tensor_elems(a)) { big = b; sm = a; }
                int ok = same_shape(a, b);
                if (!ok && big->ndim >= 3 && sm->ndim == big->ndim && sm->dims[0] == big->dims[0] &&
                    sm->dims[1] == big->dims[1]) {
                    ok = 1;
                    for (int d = 2; d < sm->ndim; d++) if (sm->dims[d] != 1) ok = 0;
                }
                if (!ok && sm->ndim == big->ndim && big->ndim >= 2 && sm->dims[sm->ndim - 1] == 1) {
                    /* [.., F] with [.., 1] (x - mean(x), x - max(x)): the LayerNorm pattern
                       is matched below; elsewhere tile broadcasts the column on the MXU */
                    ok = 1;
                    for (int d = 0; d < sm->ndim - 1; d++) if (sm->dims[d] != big->dims[d]) ok = 0;
                }
                if (!ok) NODE_ERR(n, "two activations of shapes that are neither equal nor [B, C, 1, 1] against [B, C, H, W] (nor [.., F] against [.., 1]): not supported");
                act = big;
            } else {
                if (cst->ndim > act->ndim) NODE_ERR(n, "the constant has more dimensions than the activation");
                for (int i = 0; i < cst->ndim; i++) {
                    int64_t cd = cst->dims[cst->ndim - 1 - i], ad = act->dims[act->ndim - 1 - i];
                    if (cd != 1 && cd != ad) {
                        if (hw->cores > 1 && i == act->ndim - 1)
                            NODE_ERR(n, "the constant varies along the batch dimension; on %u cores the batch is split (compile with --cores 1)", hw->cores);
                        NODE_ERR(n, "the constant's shape does not broadcast to the activation's");
                    }
                }
            }
            set_shape(y, act->ndim, act->dims);
            break;
        }
        case TPUC_OP_RELU: case TPUC_OP_SIGMOID: case TPUC_OP_TANH: case TPUC_OP_ERF:
            if (n->nattrs) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[0].name);
            set_shape(y, a->ndim, a->dims);
            break;
        case TPUC_OP_CONCAT: {
            /* activations along the channels (axis 1) of [B, C, H, W] / [B, C, L], or the
               last axis of [B, F] */
            int64_t ax = tpuc_attr_int(n, "axis", 1);
            if (ax < 0) ax += a->ndim;
            int64_t d[TPUC_MAX_DIMS];
            for (int i = 0; i < a->ndim; i++) d[i] = a->dims[i];
            /* axis 2 or 3 of a row-major [B, H, W, C] too (Swin's torch.roll and patch
               merging; window.c) */
            if (ax != 1 && !((ax == 2 || ax == 3) && a->ndim == 4))
                NODE_ERR(n, "axis %lld: only 1 (the channels, or the features of [B, F]) is supported, or 2 and 3 of a row-major [B, H, W, C]", (long long)tpuc_attr_int(n, "axis", 1));
            d[ax] = 0;
            for (int k = 0; k < n->nin; k++) {
                const tpuc_tensor_t *t = in_t(g, n, k);
                if (!t) NODE_ERR(n, "input %d is missing", k);
                if (t->is_const && (a->ndim != 3 || !t->f))
                    NODE_ERR(n, "input %d is a constant; only activations are supported (and float constants in a Concat of [B, L, D] rows: ViT's class token)", k);
                if (t->ndim != a->ndim) NODE_ERR(n, "inputs of different ranks");
                for (int i = 0; i < a->ndim; i++)
                    if (i != ax && t->dims[i] != a->dims[i]) NODE_ERR(n, "input %d differs in dimension %d", k, i);
                d[ax] += t->dims[ax];
            }
            set_shape(y, a->ndim, d);
            break;
        }
        case TPUC_OP_CLIP: {
            /* min/max: attributes (version 6) or constant inputs (11+); absent: unbounded */
            double lo = -INFINITY, hi = INFINITY;
            if (n->version < 11) {
                const tpuc_attr_t *mn = tpuc_attr(n, "min"), *mx = tpuc_attr(n, "max");
                if (mn && mn->type == 1) lo = mn->f;
                if (mx && mx->type == 1) hi = mx->f;
            } else {
                for (int k = 1; k < 3 && k < n->nin; k++) {
                    const tpuc_tensor_t *c = in_t(g, n, k);
                    if (!c) continue;
                    if (!c->is_const || !c->f || tpuc_tensor_elems(c) != 1) NODE_ERR(n, "input %d (%s) must be a float32 constant scalar", k, k == 1 ? "min" : "max");
                    if (k == 1) lo = c->f[0]; else hi = c->f[0];
                }
            }
            if (lo != lo || hi != hi || lo > hi) NODE_ERR(n, "min %g > max %g (or NaN)", lo, hi);
            n->clip_lo = (float)lo;
            n->clip_hi = (float)hi;
            set_shape(y, a->ndim, a->dims);
            break;
        }
        case TPUC_OP_SOFTMAX:
            if (fold_softmax(n, a, y, err, errlen)) return -1;
            break;
        case TPUC_OP_CONV: {
            static const char *const at[] = {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad", NULL};
            if (known_attrs(n, at, err, errlen)) return -1;
            int64_t grp = tpuc_attr_int(n, "group", 1);
            if (!b || !b->is_const || !b->f) NODE_ERR(n, "W (the weights) must be a float32 initializer");
            if (b->ndim != a->ndim) NODE_ERR(n, "W has %d dimensions, X %d", b->ndim, a->ndim);
            if (a->ndim != 3 && a->ndim != 4) NODE_ERR(n, "X of %d dimensions, supported 3 (Conv1D) and 4 (Conv2D)", a->ndim);
            if (grp < 1 || a->dims[1] % grp || b->dims[0] % grp)
                NODE_ERR(n, "group %lld does not divide the %lld input and %lld output channels", (long long)grp, (long long)a->dims[1], (long long)b->dims[0]);
            if (b->dims[1] * grp != a->dims[1])
                NODE_ERR(n, "W has %lld input channels per group, X %lld channels in %lld groups", (long long)b->dims[1], (long long)a->dims[1], (long long)grp);
            n->groups = (int)grp;
            if (grp != 1 && grp == a->dims[1] && b->dims[0] == grp) {
                /* depthwise: one input channel per output channel, on the VPU */
                n->depthwise = 1;
            }
            if (n->nin > 2 && n->in[2] >= 0) {
                const tpuc_tensor_t *c = in_t(g, n, 2);
                if (!c->is_const || !c->f || tpuc_tensor_elems(c) != b->dims[0]) NODE_ERR(n, "B (the bias) must be a float32 initializer of %lld values", (long long)b->dims[0]);
            }
            if (pool_attrs(g, n, a, 1, b, err, errlen)) return -1;
            const tpuc_attr_t *ks = tpuc_attr(n, "kernel_shape");
            if (ks) for (int i = 0; i < a->ndim - 2; i++) if (ks->ints[i] != b->dims[2 + i]) NODE_ERR(n, "kernel_shape differs from W's shape");
            break;
        }
        case TPUC_OP_MAXPOOL: case TPUC_OP_AVGPOOL: {
            static const char *const at[] = {"kernel_shape", "strides", "pads", "dilations", "auto_pad", "ceil_mode", "storage_order", "count_include_pad", NULL};
            if (known_attrs(n, at, err, errlen)) return -1;
            if (pool_attrs(g, n, a, 0, NULL, err, errlen)) return -1;
            n->count_include_pad = (int)tpuc_attr_int(n, "count_include_pad", 0) ||
                                   (n->pre_pad[0] | n->pre_pad[1] | n->pre_pad[2] | n->pre_pad[3]);
            break;
        }
        case TPUC_OP_GAP: {
            if (a->ndim != 3 && a->ndim != 4) NODE_ERR(n, "input of %d dimensions, supported 3 and 4", a->ndim);
            int64_t d[4] = {a->dims[0], a->dims[1], 1, 1};
            set_shape(y, a->ndim, d);
            break;
        }
        case TPUC_OP_BN: {
            static const char *const at[] = {"epsilon", "momentum", "training_mode", NULL};
            if (known_attrs(n, at, err, errlen)) return -1;
            if (tpuc_attr_int(n, "training_mode", 0)) NODE_ERR(n, "training_mode 1: only inference (0) is supported");
            if (n->nin != 5) NODE_ERR(n, "%d inputs, expected 5", n->nin);
            for (int k = 1; k < 5; k++) {
                const tpuc_tensor_t *c = in_t(g, n, k);
                if (!c || !c->is_const || !c->f || tpuc_tensor_elems(c) != a->dims[1])
                    NODE_ERR(n, "input %d must be a float32 initializer of %lld values (one per channel)", k, (long long)(a->ndim > 1 ? a->dims[1] : 0));
            }
            if (a->ndim < 2) NODE_ERR(n, "input of %d dimensions, expected >= 2", a->ndim);
            set_shape(y, a->ndim, a->dims);
            break;
        }
        default:
            NODE_ERR(n, "not supported here");
        }
        n = &g->n[ni];
        if (n->op != TPUC_OP_DEAD && !g->t[n->out[0]].is_const) {
            const tpuc_tensor_t *o = &g->t[n->out[0]];
            for (int d = 0; d < o->ndim; d++)
                if (o->dims[d] < 1) NODE_ERR(n, "its output has an empty dimension (%d is %lld)", d, (long long)o->dims[d]);
            if (o->ndim < 1) NODE_ERR(n, "its output is a scalar; tensors of 1 .. %d dimensions are supported", TPUC_MAX_DIMS);
        }
    }

    /* GELU: the tanh-form subgraph becomes one node */
    for (size_t ni = 0; ni < g->nn; ni++) {
        int span[8], ns = 0;
        if (g->n[ni].op != TPUC_OP_MUL) continue;
        int x0 = match_gelu(g, (int)ni, span, &ns);
        if (x0 < 0) continue;
        tpuc_node_t *n = &g->n[ni];
        for (int i = 0; i < ns; i++) g->n[span[i]].op = TPUC_OP_DEAD;
        n->op = TPUC_OP_GELU;
        free(n->op_type);
        n->op_type = tpuc_strdup("Gelu(tanh)");
        n->nin = 1;
        n->in[0] = x0;
    }
    /* the exact GELU (Erf form) likewise: one node, computed in fp32 on the VPU */
    for (size_t ni = 0; ni < g->nn; ni++) {
        int span[8], ns = 0;
        float k = 0.0f;
        if (g->n[ni].op != TPUC_OP_MUL) continue;
        int x0 = match_gelu_erf(g, (int)ni, span, &ns, &k);
        if (x0 < 0) continue;
        tpuc_node_t *n = &g->n[ni];
        for (int i = 0; i < ns; i++) g->n[span[i]].op = TPUC_OP_DEAD;
        n->op = TPUC_OP_GELU_ERF;
        free(n->op_type);
        n->op_type = tpuc_strdup("Gelu(erf)");
        n->nin = 1;
        n->in[0] = x0;
        n->hs_alpha = k;      /* t = x k */
        n->hs_beta = 1.0f;    /* 1 + erf(t) */
        n->clip_lo = 0.5f;    /* the 0.5, and an unused second row (tile's load_clip) */
        n->clip_hi = 1.0f;
    }
    /* recount uses over live nodes */
    for (size_t i = 0; i < g->nt; i++) g->t[i].nuses = 0;
    for (size_t i = 0; i < g->nn; i++) {
        if (g->n[i].op == TPUC_OP_DEAD) continue;
        for (int k = 0; k < g->n[i].nin; k++) if (g->n[i].in[k] >= 0) g->t[g->n[i].in[k]].nuses++;
    }
    /* LayerNorm: torch's ReduceMean .. Div [.. Mul, Add] subgraph becomes one node */
    for (size_t ni = 0; ni < g->nn; ni++) {
        int span[12], ns = 0, sc = -1, bi = -1;
        float eps = 0;
        if (g->n[ni].op != TPUC_OP_DIV) continue;
        int last = match_layernorm(g, (int)ni, span, &ns, &sc, &bi, &eps);
        if (last < 0) continue;
        int r1 = span[0], x0 = g->n[span[1]].in[0];
        tpuc_node_t *n = &g->n[last];
        int lo = g->n[r1].red_lo;
        for (int i = 0; i < ns; i++) if (span[i] != last) g->n[span[i]].op = TPUC_OP_DEAD;
        n = &g->n[last];
        n->op = TPUC_OP_LAYERNORM;
        free(n->op_type);
        n->op_type = tpuc_strdup("LayerNorm(pattern)");
        n->nin = 3;
        n->in[0] = x0; n->in[1] = sc; n->in[2] = bi;
        n->red_lo = lo;
        n->red_hi = g->t[x0].ndim - 1;
        n->ln_eps = eps;
        n->fuse_act = 0;
        g->t[n->out[0]].producer = last;
    }
    for (size_t i = 0; i < g->nt; i++) g->t[i].nuses = 0;
    for (size_t i = 0; i < g->nn; i++) {
        if (g->n[i].op == TPUC_OP_DEAD) continue;
        for (int k = 0; k < g->n[i].nin; k++) if (g->n[i].in[k] >= 0) g->t[g->n[i].in[k]].nuses++;
    }
    /* BatchNormalization after a Conv or Gemm with one use: folded. MatMul + Add(bias): a Gemm
       with its bias. Conv/Gemm + Add of a per-channel constant: its bias. */
    for (size_t i = 0; i < g->nn; i++) {
        tpuc_node_t *n = &g->n[i];
        if (n->op != TPUC_OP_BN && n->op != TPUC_OP_ADD) continue;
        int xi = n->in[0];
        int ci = n->op == TPUC_OP_ADD ? n->in[1] : -1;
        if (n->op == TPUC_OP_ADD && g->t[xi].is_const) { int t = xi; xi = ci; ci = t; }
        int pi = g->t[xi].producer;
        if (pi < 0 || g->t[xi].nuses != 1 || g->t[xi].is_output) continue;
        tpuc_node_t *p = &g->n[pi];
        if (p->fuse_act) continue;
        if (n->op == TPUC_OP_BN) {
            if (p->op != TPUC_OP_CONV && !(p->op == TPUC_OP_GEMM)) continue;
            if (g->t[p->in[1]].nuses > 1) { /* shared weights: fold_bn_into copies them */ }
            if (!g->folded_bn) g->folded_bn = (int)(n - g->n) + 1;
            if (fold_bn_into(g, p, n, err, errlen)) return -1;
        } else {
            if (ci < 0 || !g->t[ci].is_const) continue;
            if (p->op != TPUC_OP_CONV && p->op != TPUC_OP_GEMM && p->op != TPUC_OP_MATMUL) continue;
            if (p->nin > 2 && p->in[2] >= 0) continue;
            const tpuc_tensor_t *c = &g->t[ci];
            const tpuc_tensor_t *yt = &g->t[p->out[0]];
            int64_t ch = p->op == TPUC_OP_CONV ? yt->dims[1] : yt->dims[yt->ndim - 1];
            int64_t ce = tpuc_tensor_elems(c);
            int ok = 0;
            if (p->op == TPUC_OP_CONV)
                ok = ce == ch && c->ndim >= 1 && c->dims[0 > c->ndim - 3 ? 0 : c->ndim - 3] == ch && (c->ndim == 3 || (c->ndim == 4 && c->dims[0] == 1));
            else
                ok = ce == ch && c->dims[c->ndim - 1] == ch;
            if (!ok) continue;
            if (p->op == TPUC_OP_MATMUL) {
                if (yt->ndim != 2) continue;
                p->op = TPUC_OP_GEMM;
            }
            p->in[2] = ci;
            p->nin = 3;
        }
        /* the folded node's output becomes the producer's */
        int yo = n->out[0];
        p->out[0] = yo;
        g->t[yo].producer = pi;
        n->op = TPUC_OP_DEAD;
    }
    /* activations after Gemm/MatMul/Conv (single use, not a graph output): fused */
    for (size_t i = 0; i < g->nn; i++) {
        tpuc_node_t *n = &g->n[i];
        if (n->op != TPUC_OP_RELU && n->op != TPUC_OP_SIGMOID && n->op != TPUC_OP_TANH &&
            n->op != TPUC_OP_GELU && n->op != TPUC_OP_CLIP && n->op != TPUC_OP_ERF)
            continue;
        int xi = n->in[0];
        int pi = g->t[xi].producer;
        if (pi < 0 || g->t[xi].nuses != 1 || g->t[xi].is_output) continue;
        tpuc_node_t *p = &g->n[pi];
        if (p->op != TPUC_OP_CONV && p->op != TPUC_OP_GEMM && p->op != TPUC_OP_MATMUL &&
            p->op != TPUC_OP_MAXPOOL && p->op != TPUC_OP_AVGPOOL && p->op != TPUC_OP_GAP &&
            p->op != TPUC_OP_ADD && p->op != TPUC_OP_MUL && p->op != TPUC_OP_BN && p->op != TPUC_OP_SUB)
            continue;
        if (p->fuse_act) continue;
        if (n->op == TPUC_OP_CLIP && p->op != TPUC_OP_CONV && p->op != TPUC_OP_GEMM &&
            p->op != TPUC_OP_MATMUL && p->op != TPUC_OP_ADD && p->op != TPUC_OP_BN && p->op != TPUC_OP_SUB)
            continue;
        p->fuse_act = n->op;
        p->clip_lo = n->clip_lo;
        p->clip_hi = n->clip_hi;
        p->out[0] = n->out[0];
        g->t[n->out[0]].producer = pi;
        n->op = TPUC_OP_DEAD;
    }
    /* recount */
    for (size_t i = 0; i < g->nt; i++) g->t[i].nuses = 0;
    for (size_t i = 0; i < g->nn; i++) {
        if (g->n[i].op == TPUC_OP_DEAD) continue;
        for (int k = 0; k < g->n[i].nin; k++) if (g->n[i].in[k] >= 0) g->t[g->n[i].in[k]].nuses++;
    }
    /* integer token ids: read by embedding lookups only */
    for (size_t i = 0; i < g->nn; i++) {
        tpuc_node_t *n = &g->n[i];
        if (n->op == TPUC_OP_DEAD) continue;
        for (int k = 0; k < n->nin; k++) {
            const tpuc_tensor_t *t = n->in[k] >= 0 ? &g->t[n->in[k]] : NULL;
            if (t && !t->is_const && t->dtype != TPUC_F32 && !(n->op == TPUC_OP_GATHER && n->embed && k == 1))
                NODE_ERR(n, "input %d ('%s') holds integer token ids; only an embedding Gather (indices of a float table) may read them", k, t->name);
        }
    }
    if (g->t[g->inputs[0]].dtype != TPUC_F32 && g->t[g->inputs[0]].nuses == 0) {
        tpuc_err(err, errlen, "graph input '%s' of integer token ids is read by no embedding Gather", g->t[g->inputs[0]].name);
        return -1;
    }
    int yo = g->outputs[0];
    if (g->t[yo].is_const || g->t[yo].ndim < 1) {
        tpuc_err(err, errlen, "graph output '%s' is a constant or has no shape", g->t[yo].name);
        return -1;
    }
    if (yo == g->inputs[0]) {
        tpuc_err(err, errlen, "the graph output is its input with no node between them");
        return -1;
    }
    return 0;
}
