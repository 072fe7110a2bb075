/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 2, continued (fold.c calls these): the shapes of the nodes attention adds, on
   activations (docs/compiler.md "Attention: Transpose, Slice, MatMul of two activations").

   - Transpose of an activation, any perm: recorded in n->perm; tile_attn.c moves the rows
     by DMA (the last axis kept) or through the MXU's transposed weight load (it moves).
   - Slice of an activation with steps 1: the start on every axis in n->sl_start; tile_attn.c
     copies the rows by DMA.
   - MatMul of two activations ([.., M, K] x [.., K, N'], the leading dims broadcast as
     NumPy's), or of an activation and a constant of more than 2 dimensions (a weight matrix
     per batch index): op TPUC_OP_MATMUL2, lowered in tile_attn.c with the second operand loaded
     into WMEM as the stationary one.
   A constant input is folded here (Transpose, Slice); the batch dimension (axis 0) may move
   only when one program holds the whole batch (--cores 1): a program runs the batch in parts
   per core otherwise. */
#include <stdlib.h>
#include <string.h>

#include "attn.h"

static void set_dims(tpuc_tensor_t *t, int nd, const int64_t *d)
{
    t->ndim = nd;
    for (int i = 0; i < nd; i++) t->dims[i] = d[i];
}

/* Row-major element strides of a shape. */
void tpuc_attn_strides(const int64_t *d, int nd, int64_t *s)
{
    int64_t k = 1;
    for (int i = nd - 1; i >= 0; i--) {
        s[i] = k;
        k *= d[i];
    }
}

/* y = a's elements gathered by y's index: element (i_0 .. i_{r-1}) of y is element
   base + sum i_j src[j] of a (a constant: float or int64 data). */
static int gather_const(const tpuc_tensor_t *a, tpuc_tensor_t *y, const int64_t *src, int64_t base)
{
    int64_t e = tpuc_tensor_elems(y), idx[TPUC_MAX_DIMS] = {0};
    void *d = malloc((size_t)(e + 1) * (a->f ? sizeof(float) : sizeof(int64_t)));
    if (!d) return -1;
    for (int64_t k = 0; k < e; k++) {
        int64_t o = base;
        for (int j = 0; j < y->ndim; j++) o += idx[j] * src[j];
        if (a->f) ((float *)d)[k] = a->f[o];
        else ((int64_t *)d)[k] = a->i[o];
        for (int j = y->ndim - 1; j >= 0; j--) { /* the next index, row-major */
            if (++idx[j] < y->dims[j]) break;
            idx[j] = 0;
        }
    }
    y->is_const = 1;
    y->dtype = a->dtype;
    if (a->f) y->f = d; else y->i = d;
    return 0;
}

int tpuc_fold_transpose(tpuc_graph_t *g, tpuc_node_t *n, const tpuc_hw_t *hw, char *err,
                        size_t errlen)
{
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpuc_attr_t *pm = tpuc_attr(n, "perm");
    const int r = a->ndim;
    for (size_t k = 0; k < n->nattrs; k++)
        if (strcmp(n->attrs[k].name, "perm") != 0) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[k].name);
    if (pm && (int)pm->nints != r) NODE_ERR(n, "perm has %zu entries, the input %d dimensions", pm->nints, r);
    int seen[TPUC_MAX_DIMS] = {0};
    for (int j = 0; j < r; j++) {
        int64_t p = pm ? pm->ints[j] : r - 1 - j; /* default: the axes reversed */
        if (p < 0 || p >= r || seen[p]) NODE_ERR(n, "perm is not a permutation of 0 .. %d", r - 1);
        seen[p] = 1;
        n->perm[j] = (int)p;
    }
    int64_t d[TPUC_MAX_DIMS], xs[TPUC_MAX_DIMS], src[TPUC_MAX_DIMS];
    tpuc_attn_strides(a->dims, r, xs);
    for (int j = 0; j < r; j++) {
        d[j] = a->dims[n->perm[j]];
        src[j] = xs[n->perm[j]];
    }
    set_dims(y, r, d);
    if (a->is_const) {
        if (gather_const(a, y, src, 0)) return tpuc_err(err, errlen, "out of memory"), -1;
        n->op = TPUC_OP_DEAD;
        return 0;
    }
    if (r > 0 && n->perm[0] != 0 && hw->cores > 1)
        NODE_ERR(n, "perm [%d, ..] moves the batch dimension (axis 0); on %u cores the batch is split, so only a perm starting with 0 is supported (compile with --cores 1)", n->perm[0], hw->cores);
    return 0;
}

/* Slice of an activation (opset 10, 11, 13: starts, ends, axes, steps inputs). */
int tpuc_fold_slice(tpuc_graph_t *g, tpuc_node_t *n, const tpuc_hw_t *hw, char *err,
                    size_t errlen)
{
    (void)hw;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const int r = a->ndim;
    const tpuc_tensor_t *in[5] = {NULL};
    for (int k = 1; k < 5 && k < n->nin; k++) in[k] = n->in[k] >= 0 ? &g->t[n->in[k]] : NULL;
    if (!in[1] || !in[2]) NODE_ERR(n, "starts and ends inputs are required");
    for (int k = 1; k < 5; k++)
        if (in[k] && (!in[k]->is_const || !in[k]->i || in[k]->ndim != 1))
            NODE_ERR(n, "input %d ('%s') must be a 1-D int64 constant", k, in[k]->name);
    const int64_t m = in[1]->dims[0];
    if (in[2]->dims[0] != m || (in[3] && in[3]->dims[0] != m) || (in[4] && in[4]->dims[0] != m))
        NODE_ERR(n, "starts, ends, axes and steps of different lengths");
    int64_t d[TPUC_MAX_DIMS], xs[TPUC_MAX_DIMS], base = 0;
    int done[TPUC_MAX_DIMS] = {0};
    for (int j = 0; j < r; j++) { d[j] = a->dims[j]; n->sl_start[j] = 0; }
    for (int64_t k = 0; k < m; k++) {
        int64_t ax = in[3] ? in[3]->i[k] : k, st = in[4] ? in[4]->i[k] : 1;
        if (ax < 0) ax += r;
        if (ax < 0 || ax >= r || done[ax]) NODE_ERR(n, "axes[%lld] is out of range or repeated", (long long)k);
        done[ax] = 1;
        if (st != 1) NODE_ERR(n, "steps[%lld] = %lld: only 1 is supported for an activation", (long long)k, (long long)st);
        int64_t L = a->dims[ax], s0 = in[1]->i[k], e0 = in[2]->i[k];
        if (s0 < 0) s0 += L;
        if (e0 < 0) e0 += L;
        s0 = s0 < 0 ? 0 : s0 > L ? L : s0;
        e0 = e0 < 0 ? 0 : e0 > L ? L : e0;
        d[ax] = e0 > s0 ? e0 - s0 : 0;
        if (d[ax] == 0) NODE_ERR(n, "the slice of axis %lld is empty", (long long)ax);
        n->sl_start[ax] = s0;
        if (ax == 0 && !a->is_const && (s0 != 0 || d[0] != L))
            NODE_ERR(n, "slices axis 0, the batch dimension: a program runs on the batch in parts (per core, and tpu-infer's chunks), so only axes >= 1 are supported");
    }
    tpuc_attn_strides(a->dims, r, xs);
    for (int j = 0; j < r; j++) base += n->sl_start[j] * xs[j];
    set_dims(y, r, d);
    if (a->is_const) {
        if (gather_const(a, y, xs, base)) return tpuc_err(err, errlen, "out of memory"), -1;
        n->op = TPUC_OP_DEAD;
    }
    return 0;
}

/* MatMul whose second input is an activation: TPUC_OP_MATMUL2 with the broadcast shape. */
int tpuc_fold_matmul2(tpuc_graph_t *g, tpuc_node_t *n, const tpuc_hw_t *hw, char *err,
                      size_t errlen)
{
    const tpuc_tensor_t *a = &g->t[n->in[0]], *b = &g->t[n->in[1]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    if (n->nattrs) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[0].name);
    if (a->ndim < 2 || b->ndim < 2)
        NODE_ERR(n, "inputs of %d and %d dimensions: a MatMul of two activations needs both of at least 2", a->ndim, b->ndim);
    if (a->is_const) NODE_ERR(n, "the first input is a constant: only an activation times an activation or a constant is supported");
    if (b->is_const && !b->f) NODE_ERR(n, "the second input '%s' is not a float32 constant", b->name);
    const int r = a->ndim > b->ndim ? a->ndim : b->ndim;
    if (a->dims[a->ndim - 1] != b->dims[b->ndim - 2])
        NODE_ERR(n, "inner dimensions differ: %lld vs %lld", (long long)a->dims[a->ndim - 1], (long long)b->dims[b->ndim - 2]);
    int64_t d[TPUC_MAX_DIMS];
    for (int j = 0; j < r - 2; j++) { /* NumPy broadcast of the leading dims */
        int ia = j - (r - a->ndim), ib = j - (r - b->ndim);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            NODE_ERR(n, "leading dimensions %lld and %lld do not broadcast", (long long)da, (long long)db);
        d[j] = da > db ? da : db;
    }
    d[r - 2] = a->dims[a->ndim - 2];
    d[r - 1] = b->dims[b->ndim - 1];
    if (hw->cores > 1 && b->is_const && b->ndim == r && b->dims[0] != 1)
        NODE_ERR(n, "the constant second input varies along the batch dimension; on %u cores the batch is split (compile with --cores 1)", hw->cores);
    if (hw->cores > 1 && !b->is_const && (a->ndim != b->ndim || r < 3 || a->dims[0] != b->dims[0]))
        NODE_ERR(n, "on %u cores both inputs must hold the batch in their first dimension (the same rank, at least 3): compile with --cores 1", hw->cores);
    set_dims(y, r, d);
    n->op = TPUC_OP_MATMUL2;
    return 0;
}

/* lower: Transpose, Slice and MatMul2 read row-major activations and write one. */
int tpuc_lower_attn(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const int nin = n->op == TPUC_OP_MATMUL2 ? 2 : 1;
    for (int k = 0; k < nin; k++) {
        const tpuc_tensor_t *t = &g->t[n->in[k]];
        if (t->is_const) continue; /* MatMul2's batched weights: bf16 in the image */
        if (t->lay.kind != TPUC_LAYOUT_PLAIN || t->lay.flat)
            NODE_ERR(n, "input '%s' is a Conv/pool output (channels-last in memory): not supported", t->name);
    }
    g->t[n->out[0]].lay.kind = TPUC_LAYOUT_PLAIN;
    return 0;
}

/* Add, Sub, Mul, Div or Mod of two constants (torch's shape arithmetic: the head size from a
   Gather of a Shape, ...): folded elementwise, one of them broadcast when it has a single
   element. int64 when both are (Div truncates, as ONNX Runtime's), else fp32 arithmetic. */
int tpuc_fold_const_arith(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *a = &g->t[n->in[0]], *b = &g->t[n->in[1]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const int64_t ea = tpuc_tensor_elems(a), eb = tpuc_tensor_elems(b);
    /* the result's shape: the larger operand's (of one element each: the higher rank's, so
       8 - [4] is [4], not a scalar: F.pad's pads computed with %) */
    const tpuc_tensor_t *big = ea > eb ? a : eb > ea ? b : a->ndim >= b->ndim ? a : b;
    int same = a->ndim == b->ndim; /* [4, 1] + [4] broadcasts to [4, 4] (Swin's mask) */
    for (int j = 0; same && j < a->ndim; j++) same = a->dims[j] == b->dims[j];
    if (ea != 1 && eb != 1 && (ea != eb || (!same && n->op != TPUC_OP_MOD)))
        return tpuc_fold_const_bcast(g, n, err, errlen); /* NumPy's (fold_mask.c) */
    const int isint = a->i && b->i;
    if (!isint && !((a->f || a->i) && (b->f || b->i))) NODE_ERR(n, "a constant without data");
    const int64_t e = big == a ? ea : eb;
    void *d = malloc((size_t)(e + 1) * 8);
    if (!d) return tpuc_err(err, errlen, "out of memory"), -1;
    for (int64_t k = 0; k < e; k++) {
        const int64_t ka = ea == 1 ? 0 : k, kb = eb == 1 ? 0 : k;
        if (isint) {
            int64_t x = a->i[ka], v = b->i[kb], o;
            if (v == 0 && (n->op == TPUC_OP_MOD || n->op == TPUC_OP_DIV)) {
                free(d);
                NODE_ERR(n, "an integer %s by zero", n->op == TPUC_OP_MOD ? "Mod" : "division");
            }
            if (tpuc_i64_arith(n->op, x, v, &o)) { /* fold_range.c */
                free(d);
                NODE_ERR(n, "int64 overflow in shape arithmetic: %lld and %lld", (long long)x, (long long)v);
            }
            /* Mod, fmod 0: the remainder takes the divisor's sign (ONNX, Python); fmod 1: C's
               remainder, the dividend's sign */
            if (n->op == TPUC_OP_MOD && !tpuc_attr_int(n, "fmod", 0) && o != 0 && (o < 0) != (v < 0)) o += v;
            ((int64_t *)d)[k] = o;
        } else {
            float x = a->f ? a->f[ka] : (float)a->i[ka], v = b->f ? b->f[kb] : (float)b->i[kb];
            if (n->op == TPUC_OP_MOD) { free(d); NODE_ERR(n, "a Mod of float constants is not supported (integers only)"); }
            ((float *)d)[k] = n->op == TPUC_OP_ADD ? x + v : n->op == TPUC_OP_SUB ? x - v
                              : n->op == TPUC_OP_MUL ? x * v : x / v;
        }
    }
    set_dims(y, big->ndim, big->dims);
    y->is_const = 1;
    y->dtype = isint ? TPUC_I64 : TPUC_F32;
    if (isint) y->i = d; else y->f = d;
    n->op = TPUC_OP_DEAD;
    return 0;
}
