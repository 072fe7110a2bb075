/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 2, continued (fold.c calls this): Range, ScatterND and Not on constants, folded
   (issue 32; docs/compiler.md "Swin's shift mask").

   torchvision's Swin builds the attention mask of a shifted window block inside forward():
   `attn_mask = x.new_zeros((pad_H, pad_W))`, then `attn_mask[h0:h1, w0:w1] = count` for nine
   slices. torch 1.13 exports each assignment at opset 14 as a ScatterND into the
   ConstantOfShape, its indices built from two Ranges over the slice's rows and columns
   (their ends from the padded map's Shape) and a Not of an Equal for Swin's pad checks. Once
   the batch is bound every one of these inputs is a constant, so the whole mask folds here
   (and in fold_mask.c: ConstantOfShape, Equal, Where, Expand), and the program sees only the
   Add of the constant mask to the scores. Any of these nodes with an input computed at run
   time is refused with one line naming the node. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"

/* The largest constant Range or ScatterND makes: Range makes any length from three scalars,
   so the bound is on the result (as fold_mask.c's for Expand). */
#define RANGE_MAX_ELEMS (1ll << 24)

/* y becomes a constant of shape d with dtype dt (float data for F32, int64 otherwise). */
static int new_const(tpuc_tensor_t *y, int nd, const int64_t *d, tpuc_dtype_t dt)
{
    y->ndim = nd;
    for (int j = 0; j < nd; j++) y->dims[j] = d[j];
    int64_t e = tpuc_tensor_elems(y);
    y->is_const = 1;
    y->dtype = dt;
    if (dt == TPUC_F32) y->f = calloc((size_t)(e ? e : 1), sizeof *y->f);
    else y->i = calloc((size_t)(e ? e : 1), sizeof *y->i);
    return (dt == TPUC_F32 ? (void *)y->f : (void *)y->i) ? 0 : -1;
}

/* Range(start, limit, delta): max(ceil((limit - start) / delta), 0) elements start + i delta;
   int64 arithmetic when the inputs are integers (exact), else fp32 as ONNX's float Range. */
static int fold_range(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *in[3];
    static const char *const nm[3] = {"start", "limit", "delta"};
    if (n->nin != 3) NODE_ERR(n, "%d inputs: Range takes start, limit and delta", n->nin);
    for (int k = 0; k < 3; k++) {
        if (n->in[k] < 0) NODE_ERR(n, "input '%s' is missing", nm[k]);
        in[k] = &g->t[n->in[k]];
        if (tpuc_tensor_elems(in[k]) != 1 || in[k]->ndim > 1)
            NODE_ERR(n, "%s '%s' is not a scalar", nm[k], in[k]->name);
    }
    const int is_int = in[0]->i && in[1]->i && in[2]->i;
    if (!is_int && (in[0]->i || in[1]->i || in[2]->i))
        NODE_ERR(n, "start, limit and delta of different types (integer and float)");
    int64_t len;
    if (is_int) {
        int64_t s = in[0]->i[0], l = in[1]->i[0], dl = in[2]->i[0];
        if (dl == 0) NODE_ERR(n, "delta is 0");
        /* |limit - start| / |delta| rounded up (unsigned: no overflow), 0 when the range is
           empty or runs the other way */
        if ((dl > 0 && l <= s) || (dl < 0 && l >= s)) {
            len = 0;
        } else {
            uint64_t span = dl > 0 ? (uint64_t)l - (uint64_t)s : (uint64_t)s - (uint64_t)l;
            uint64_t step = dl > 0 ? (uint64_t)dl : 0 - (uint64_t)dl;
            uint64_t q = span / step + (span % step != 0);
            len = q > (uint64_t)RANGE_MAX_ELEMS ? RANGE_MAX_ELEMS + 1 : (int64_t)q;
        }
    } else {
        float s = in[0]->f[0], l = in[1]->f[0], dl = in[2]->f[0];
        if (dl == 0.0f) NODE_ERR(n, "delta is 0");
        if (!isfinite(s) || !isfinite(l) || !isfinite(dl)) NODE_ERR(n, "start, limit and delta must be finite");
        double c = ceil(((double)l - (double)s) / (double)dl);
        len = c <= 0 ? 0 : c > (double)RANGE_MAX_ELEMS ? RANGE_MAX_ELEMS + 1 : (int64_t)c;
    }
    if (len > RANGE_MAX_ELEMS) NODE_ERR(n, "more than %lld elements", (long long)RANGE_MAX_ELEMS);
    tpuc_tensor_t *y = &g->t[n->out[0]];
    if (new_const(y, 1, &len, is_int ? in[0]->dtype : TPUC_F32)) return tpuc_err(err, errlen, "out of memory"), -1;
    for (int64_t k = 0; k < len; k++) {
        if (is_int) y->i[k] = in[0]->i[0] + k * in[2]->i[0];
        else y->f[k] = in[0]->f[0] + (float)k * in[2]->f[0];
    }
    return 0;
}

/* ScatterND(data, indices, updates), reduction 'none': a copy of data with the slices that
   indices' last axis names replaced by updates' (in order: a later index wins, as ONNX
   Runtime's). */
static int fold_scatternd(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    for (size_t k = 0; k < n->nattrs; k++) {
        const tpuc_attr_t *at = &n->attrs[k];
        if (strcmp(at->name, "reduction") != 0) NODE_ERR(n, "attribute '%s' is not supported", at->name);
        if (!at->s || strcmp(at->s, "none") != 0)
            NODE_ERR(n, "reduction '%s': only 'none' is supported", at->s ? at->s : "");
    }
    if (n->nin != 3 || n->in[0] < 0 || n->in[1] < 0 || n->in[2] < 0)
        NODE_ERR(n, "ScatterND takes data, indices and updates");
    const tpuc_tensor_t *d = &g->t[n->in[0]], *ix = &g->t[n->in[1]], *u = &g->t[n->in[2]];
    if (!ix->i || ix->ndim < 1) NODE_ERR(n, "indices '%s' must be an int64 tensor of at least 1 dimension", ix->name);
    const int64_t kk = ix->dims[ix->ndim - 1];
    if (kk < 1 || kk > d->ndim) NODE_ERR(n, "indices' last dimension %lld: supported 1 .. %d (data's rank)", (long long)kk, d->ndim);
    /* updates: indices.shape[:-1] + data.shape[k:] */
    if (u->ndim != ix->ndim - 1 + d->ndim - (int)kk) NODE_ERR(n, "updates '%s' of %d dimensions, expected %lld", u->name, u->ndim, (long long)(ix->ndim - 1 + d->ndim - kk));
    for (int j = 0; j < u->ndim; j++) {
        int64_t want = j < ix->ndim - 1 ? ix->dims[j] : d->dims[kk + j - (ix->ndim - 1)];
        if (u->dims[j] != want) NODE_ERR(n, "updates' dimension %d is %lld, expected %lld", j, (long long)u->dims[j], (long long)want);
    }
    if ((d->f != NULL) != (u->f != NULL)) NODE_ERR(n, "data and updates of different types");
    int64_t slice = 1, ds[TPUC_MAX_DIMS];
    for (int j = (int)kk; j < d->ndim; j++) slice *= d->dims[j];
    tpuc_attn_strides(d->dims, d->ndim, ds);
    const int64_t e = tpuc_tensor_elems(d), nix = tpuc_tensor_elems(ix) / kk;
    tpuc_tensor_t *y = &g->t[n->out[0]];
    if (new_const(y, d->ndim, d->dims, d->f ? TPUC_F32 : d->dtype)) return tpuc_err(err, errlen, "out of memory"), -1;
    for (int64_t k = 0; k < e; k++) {
        if (y->f) y->f[k] = d->f[k];
        else y->i[k] = d->i[k];
    }
    for (int64_t q = 0; q < nix; q++) {
        int64_t base = 0;
        for (int j = 0; j < kk; j++) {
            int64_t v = ix->i[q * kk + j], L = d->dims[j];
            if (v < -L || v >= L) NODE_ERR(n, "index %lld out of range -%lld .. %lld (data's dimension %d)", (long long)v, (long long)L, (long long)L - 1, j);
            base += (v < 0 ? v + L : v) * ds[j];
        }
        for (int64_t r = 0; r < slice; r++) {
            if (y->f) y->f[base + r] = u->f[q * slice + r];
            else y->i[base + r] = u->i[q * slice + r];
        }
    }
    return 0;
}

int tpuc_fold_range(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    for (int k = 0; k < n->nin; k++) {
        if (n->in[k] < 0) continue;
        const tpuc_tensor_t *t = &g->t[n->in[k]];
        if (!t->is_const || (!t->f && !t->i))
            NODE_ERR(n, "input %d ('%s') is computed at run time: %s is supported only on constants (folded at compile time)", k, t->name, n->op_type);
    }
    if (n->op == TPUC_OP_RANGE) {
        if (n->nattrs) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[0].name);
        if (fold_range(g, n, err, errlen)) return -1;
    } else if (n->op == TPUC_OP_SCATTERND) {
        if (fold_scatternd(g, n, err, errlen)) return -1;
    } else { /* Not: of a bool constant */
        const tpuc_tensor_t *a = &g->t[n->in[0]];
        if (n->nattrs) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[0].name);
        if (a->dtype != TPUC_BOOL || !a->i) NODE_ERR(n, "input '%s' is not a bool tensor", a->name);
        tpuc_tensor_t *y = &g->t[n->out[0]];
        if (new_const(y, a->ndim, a->dims, TPUC_BOOL)) return tpuc_err(err, errlen, "out of memory"), -1;
        for (int64_t k = 0; k < tpuc_tensor_elems(a); k++) y->i[k] = !a->i[k];
    }
    n->op = TPUC_OP_DEAD;
    return 0;
}

int tpuc_fold_concat_const(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    const int r = a->ndim;
    int64_t ax = tpuc_attr_int(n, "axis", 0);
    for (size_t k = 0; k < n->nattrs; k++)
        if (strcmp(n->attrs[k].name, "axis") != 0) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[k].name);
    if (ax < 0) ax += r;
    if (ax < 0 || ax >= r) NODE_ERR(n, "axis %lld out of range for %d dimensions", (long long)tpuc_attr_int(n, "axis", 0), r);
    int64_t d[TPUC_MAX_DIMS];
    for (int j = 0; j < r; j++) d[j] = a->dims[j];
    d[ax] = 0;
    for (int k = 0; k < n->nin; k++) {
        const tpuc_tensor_t *t = &g->t[n->in[k]];
        if (t->ndim != r || (!t->f && !t->i) || (t->f != NULL) != (a->f != NULL))
            NODE_ERR(n, "input %d ('%s'): a Concat of constants of different ranks or types", k, t->name);
        for (int j = 0; j < r; j++)
            if (j != ax && t->dims[j] != a->dims[j]) NODE_ERR(n, "input %d ('%s'): dimension %d differs", k, t->name, j);
        d[ax] += t->dims[ax];
    }
    int64_t outer = 1, inner = 1;
    for (int j = 0; j < ax; j++) outer *= d[j];
    for (int j = (int)ax + 1; j < r; j++) inner *= d[j];
    if (outer * d[ax] * inner > RANGE_MAX_ELEMS) NODE_ERR(n, "more than %lld elements", (long long)RANGE_MAX_ELEMS);
    tpuc_tensor_t *y = &g->t[n->out[0]];
    if (new_const(y, r, d, a->f ? TPUC_F32 : a->dtype)) return tpuc_err(err, errlen, "out of memory"), -1;
    int64_t o = 0;
    for (int64_t p = 0; p < outer; p++)
        for (int k = 0; k < n->nin; k++) {
            const tpuc_tensor_t *t = &g->t[n->in[k]];
            const int64_t run = t->dims[ax] * inner;
            for (int64_t q = 0; q < run; q++, o++) {
                if (y->f) y->f[o] = t->f[p * run + q];
                else y->i[o] = t->i[p * run + q];
            }
        }
    n->op = TPUC_OP_DEAD;
    return 0;
}

int tpuc_i64_arith(tpuc_op_t op, int64_t x, int64_t v, int64_t *o)
{
    switch (op) {
    case TPUC_OP_ADD:
        if ((v > 0 && x > INT64_MAX - v) || (v < 0 && x < INT64_MIN - v)) return -1;
        *o = x + v;
        return 0;
    case TPUC_OP_SUB:
        if ((v < 0 && x > INT64_MAX + v) || (v > 0 && x < INT64_MIN + v)) return -1;
        *o = x - v;
        return 0;
    case TPUC_OP_MUL:
        if (x != 0 && v != 0 &&
            (x > 0 ? (v > 0 ? x > INT64_MAX / v : v < INT64_MIN / x)
                   : (v > 0 ? x < INT64_MIN / v : x < INT64_MAX / v)))
            return -1;
        *o = x * v;
        return 0;
    default: /* Div (truncating) and C's remainder */
        if (v == 0 || (x == INT64_MIN && v == -1)) return -1;
        *o = op == TPUC_OP_MOD ? x % v : x / v;
        return 0;
    }
}
