/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 2, continued (fold.c calls these): attention masks (issue 32; docs/compiler.md
   "Attention masks").

   torch 1.13 (opset 14) writes a mask as a small graph on constants: a causal mask built
   inside forward() is Trilu of a constant (bool: then Equal), a bool mask becomes an additive
   one by Where(mask, -inf, 0) after a Cast to bool, nn.MultiheadAttention's key_padding_mask
   is Expand of the bool initializer to a shape that ConstantOfShape, Mul, Equal and Where
   compute, a Reshape, a Cast and Where, merged with an attn_mask by Or (bool) or Add (float:
   two constants of different shapes). All of these are folded here into constants when
   their inputs are constants (the usual case: the mask does not depend on the input), so
   the program sees only the Add of a float mask to the scores before the Softmax (a `vop
   add` of constant rows, as any Add of a constant).

   Where(mask, -inf, x) (masked_fill's export) with x an activation and the mask a constant is
   made the Add of x and the constant where(mask, -inf, -0): x + -inf = -inf for every x but
   +Inf and NaN (NaN there, where Where gives -inf), and x + -0 = x for every x (-0 too), so
   it gives Where's values wherever a masked x is not +Inf or NaN. Any other node of these
   with an input computed at run time is refused with one line naming the node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"

/* The largest constant these operators fold: Expand and ConstantOfShape make a large tensor
   from a few bytes, so the bound is on what they make, not on what the file holds. 2^24
   elements (128 MiB as int64) is 340 times BERT-base's scores [12, 128, 128]. */
#define MASK_MAX_ELEMS (1ll << 24)

/* One element of a constant as a double (float or integer data). */
static double elem(const tpuc_tensor_t *t, int64_t k) { return t->f ? (double)t->f[k] : (double)t->i[k]; }

/* y becomes a constant of shape d with dtype dt (float data for F32, int64 data otherwise). */
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

static void put(tpuc_tensor_t *y, int64_t k, double v)
{
    if (y->f) y->f[k] = (float)v;
    else y->i[k] = y->dtype == TPUC_BOOL ? v != 0 : (int64_t)v;
}

/* NumPy's broadcast of the shapes of ts[0 .. nt) (NULL entries skipped) into (nd, d); -1 if
   they do not broadcast. */
static int bcast_shape(const tpuc_tensor_t *const *ts, int nt, int *nd, int64_t *d)
{
    *nd = 0;
    for (int k = 0; k < nt; k++)
        if (ts[k] && ts[k]->ndim > *nd) *nd = ts[k]->ndim;
    for (int j = 0; j < *nd; j++) {
        d[j] = 1;
        for (int k = 0; k < nt; k++) {
            if (!ts[k]) continue;
            int jj = j - (*nd - ts[k]->ndim);
            int64_t v = jj >= 0 ? ts[k]->dims[jj] : 1;
            if (v == d[j] || v == 1) continue;
            if (d[j] != 1) return -1;
            d[j] = v;
        }
    }
    return 0;
}

/* Element strides of t read as the broadcast shape (nd dims): 0 along a broadcast axis. */
static void bcast_strides(const tpuc_tensor_t *t, int nd, int64_t *s)
{
    int64_t own[TPUC_MAX_DIMS];
    tpuc_attn_strides(t->dims, t->ndim, own);
    for (int j = 0; j < nd; j++) {
        int jj = j - (nd - t->ndim);
        s[j] = jj >= 0 && t->dims[jj] != 1 ? own[jj] : 0;
    }
}

/* The flat index in each of ts[0 .. nt) of every element of the broadcast shape, in
   row-major order, passed to f with the element's flat index. */
typedef void (*visit_fn)(void *ctx, int64_t k, const int64_t *at);
static void bcast_walk(const tpuc_tensor_t *const *ts, int nt, int nd, const int64_t *d,
                       visit_fn f, void *ctx)
{
    int64_t s[3][TPUC_MAX_DIMS], idx[TPUC_MAX_DIMS] = {0}, at[3] = {0}, e = 1;
    for (int k = 0; k < nt; k++) bcast_strides(ts[k], nd, s[k]);
    for (int j = 0; j < nd; j++) e *= d[j];
    for (int64_t k = 0; k < e; k++) {
        f(ctx, k, at);
        for (int j = nd - 1; j >= 0; j--) { /* the next index, row-major */
            for (int q = 0; q < nt; q++) at[q] += s[q][j];
            if (++idx[j] < d[j]) break;
            for (int q = 0; q < nt; q++) at[q] -= s[q][j] * d[j];
            idx[j] = 0;
        }
    }
}

typedef struct {
    const tpuc_tensor_t *in[3];
    tpuc_tensor_t *y;
    tpuc_op_t op;
    int overflow; /* an int64 result out of range (refused after the walk) */
} walk_ctx_t;

/* y[k] from the inputs' elements at `at`: Expand copies, Equal compares, Where selects. */
static void visit(void *vc, int64_t k, const int64_t *at)
{
    walk_ctx_t *c = vc;
    switch (c->op) {
    case TPUC_OP_EQUAL: /* int64 compared exactly, float as values (NaN != NaN) */
        put(c->y, k, c->in[0]->i && c->in[1]->i ? c->in[0]->i[at[0]] == c->in[1]->i[at[1]]
                                                 : elem(c->in[0], at[0]) == elem(c->in[1], at[1]));
        break;
    case TPUC_OP_WHERE: put(c->y, k, elem(c->in[0], at[0]) != 0 ? elem(c->in[1], at[1]) : elem(c->in[2], at[2])); break;
    case TPUC_OP_OR: put(c->y, k, elem(c->in[0], at[0]) != 0 || elem(c->in[1], at[1]) != 0); break;
    case TPUC_OP_ADD: case TPUC_OP_SUB: case TPUC_OP_MUL: case TPUC_OP_DIV:
        if (c->y->i) { /* int64: exact (Div truncates; a zero divisor was refused) */
            const int64_t u = c->in[0]->i[at[0]], v = c->in[1]->i[at[1]];
            if (tpuc_i64_arith(c->op, u, v, &c->y->i[k])) c->overflow = 1;
        } else { /* fp32 arithmetic, as tpuc_fold_const_arith */
            const float u = (float)elem(c->in[0], at[0]), v = (float)elem(c->in[1], at[1]);
            c->y->f[k] = c->op == TPUC_OP_ADD ? u + v : c->op == TPUC_OP_SUB ? u - v
                         : c->op == TPUC_OP_MUL ? u * v : u / v;
        }
        break;
    default: put(c->y, k, elem(c->in[0], at[0])); break;
    }
}

/* The output dtype of Expand / Where: the data's (X's for Where); int64 for int32. */
static tpuc_dtype_t data_dtype(const tpuc_tensor_t *t)
{
    return t->f ? TPUC_F32 : t->dtype == TPUC_BOOL ? TPUC_BOOL : TPUC_I64;
}

static int const_inputs(const tpuc_graph_t *g, const tpuc_node_t *n, char *err, size_t errlen)
{
    for (int k = 0; k < n->nin; k++) {
        if (n->in[k] < 0) continue;
        const tpuc_tensor_t *t = &g->t[n->in[k]];
        if (!t->is_const)
            NODE_ERR(n, "input %d ('%s') is computed at run time: a mask is supported only when it is a constant (folded at compile time)", k, t->name);
        if (!t->f && !t->i) NODE_ERR(n, "input %d ('%s') is a constant without data", k, t->name);
    }
    return 0;
}

/* Expand, Equal, Or, Where, and Add/Sub/Mul/Div of constants: NumPy broadcasting,
   elementwise. */
static int fold_elementwise(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    walk_ctx_t c = {{NULL, NULL, NULL}, &g->t[n->out[0]], n->op, 0};
    const tpuc_tensor_t *shp[3] = {NULL, NULL, NULL};
    tpuc_tensor_t shape_t;
    const int nin = n->op == TPUC_OP_WHERE ? 3 : 2;
    if (n->nin < nin) NODE_ERR(n, "%d inputs expected", nin);
    for (int k = 0; k < nin; k++) {
        if (n->in[k] < 0) NODE_ERR(n, "input %d is missing", k);
        c.in[k] = shp[k] = &g->t[n->in[k]];
    }
    if (n->op == TPUC_OP_EXPAND) { /* the second input is the target shape */
        const tpuc_tensor_t *s = c.in[1];
        if (!s->i || s->ndim != 1 || s->dims[0] > TPUC_MAX_DIMS) NODE_ERR(n, "the shape input must be a 1-D int64 constant of at most %d values", TPUC_MAX_DIMS);
        memset(&shape_t, 0, sizeof shape_t);
        shape_t.ndim = (int)s->dims[0];
        for (int j = 0; j < shape_t.ndim; j++) {
            if (s->i[j] < 0) NODE_ERR(n, "shape[%d] = %lld is negative", j, (long long)s->i[j]);
            shape_t.dims[j] = s->i[j];
        }
        shp[1] = &shape_t;
    }
    int nd;
    int64_t d[TPUC_MAX_DIMS];
    if (bcast_shape(shp, nin, &nd, d)) NODE_ERR(n, "the inputs' shapes do not broadcast");
    int64_t e = 1;
    for (int j = 0; j < nd; j++) {
        if (d[j] && e > MASK_MAX_ELEMS / d[j]) NODE_ERR(n, "a folded constant of more than %lld elements: not supported", (long long)MASK_MAX_ELEMS);
        e *= d[j];
    }
    const int arith = n->op == TPUC_OP_ADD || n->op == TPUC_OP_SUB || n->op == TPUC_OP_MUL || n->op == TPUC_OP_DIV;
    tpuc_dtype_t dt = n->op == TPUC_OP_EQUAL || n->op == TPUC_OP_OR ? TPUC_BOOL
                      : n->op == TPUC_OP_WHERE ? data_dtype(c.in[1]) : data_dtype(c.in[0]);
    if (arith) {
        const int both_int = c.in[0]->i && c.in[1]->i;
        dt = both_int ? TPUC_I64 : TPUC_F32;
        if (both_int && n->op == TPUC_OP_DIV)
            for (int64_t q = 0; q < tpuc_tensor_elems(c.in[1]); q++)
                if (c.in[1]->i[q] == 0) NODE_ERR(n, "an integer division by zero");
    }
    if (n->op == TPUC_OP_WHERE && (c.in[1]->f != NULL) != (c.in[2]->f != NULL))
        NODE_ERR(n, "X and Y are constants of different types");
    if (new_const(c.y, nd, d, dt)) return tpuc_err(err, errlen, "out of memory"), -1;
    const int nwalk = n->op == TPUC_OP_EXPAND ? 1 : nin;
    bcast_walk(c.in, nwalk, nd, d, visit, &c);
    if (c.overflow) NODE_ERR(n, "int64 overflow in shape arithmetic");
    return 0;
}

/* ConstantOfShape: the shape a 1-D int64 constant, the value attribute's one element
   (default float 0). */
static int fold_const_of_shape(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *s = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    if (!s->i || s->ndim != 1 || s->dims[0] > TPUC_MAX_DIMS) NODE_ERR(n, "the shape input must be a 1-D int64 constant of at most %d values", TPUC_MAX_DIMS);
    const tpuc_attr_t *va = tpuc_attr(n, "value");
    const tpuc_tensor_t *v = va && va->tensor >= 0 ? &g->t[va->tensor] : NULL;
    if (va && (!v || tpuc_tensor_elems(v) != 1 || (!v->f && !v->i))) NODE_ERR(n, "the value attribute must be a tensor of one element");
    int64_t d[TPUC_MAX_DIMS] = {0}, e = 1;
    for (int j = 0; j < s->dims[0]; j++) {
        d[j] = s->i[j];
        if (d[j] < 0) NODE_ERR(n, "shape[%d] = %lld is negative", j, (long long)d[j]);
        if (d[j] && e > MASK_MAX_ELEMS / d[j]) NODE_ERR(n, "a folded constant of more than %lld elements: not supported", (long long)MASK_MAX_ELEMS);
        e *= d[j];
    }
    if (new_const(y, (int)s->dims[0], d, v ? data_dtype(v) : TPUC_F32)) return tpuc_err(err, errlen, "out of memory"), -1;
    const double val = v ? elem(v, 0) : 0.0;
    for (int64_t k = 0; k < e; k++) put(y, k, val);
    return 0;
}

/* Trilu of a constant (rank >= 2): the upper (j - i >= k) or lower (j - i <= k) triangle of
   every matrix of the last two axes, the rest 0 (torch.triu of the causal mask). */
static int fold_trilu(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    for (size_t q = 0; q < n->nattrs; q++)
        if (strcmp(n->attrs[q].name, "upper") != 0) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[q].name);
    if (a->ndim < 2) NODE_ERR(n, "an input of %d dimensions: Trilu needs at least 2", a->ndim);
    int64_t kk = 0;
    if (n->nin > 1 && n->in[1] >= 0) {
        const tpuc_tensor_t *kt = &g->t[n->in[1]];
        if (!kt->i || tpuc_tensor_elems(kt) != 1) NODE_ERR(n, "k must be an int64 constant of one element");
        kk = kt->i[0];
    }
    const int upper = tpuc_attr_int(n, "upper", 1) != 0;
    if (new_const(y, a->ndim, a->dims, data_dtype(a))) return tpuc_err(err, errlen, "out of memory"), -1;
    const int64_t R = a->dims[a->ndim - 2], C = a->dims[a->ndim - 1], e = tpuc_tensor_elems(a);
    for (int64_t k = 0; k < e; k++) {
        const int64_t i = (k / C) % (R ? R : 1), j = k % C;
        const int keep = upper ? j - i >= kk : j - i <= kk;
        put(y, k, keep ? elem(a, k) : 0.0);
    }
    return 0;
}

/* Cast to bool of a constant: nonzero (NaN too) -> 1. */
static int fold_cast_bool(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    if (new_const(y, a->ndim, a->dims, TPUC_BOOL)) return tpuc_err(err, errlen, "out of memory"), -1;
    for (int64_t k = 0; k < tpuc_tensor_elems(a); k++) put(y, k, elem(a, k) != 0 || isnan(elem(a, k)));
    return 0;
}

/* Every element of a constant is -Inf. */
static int all_neg_inf(const tpuc_tensor_t *t)
{
    if (!t->f) return 0;
    for (int64_t k = 0; k < tpuc_tensor_elems(t); k++)
        if (!(isinf(t->f[k]) && t->f[k] < 0)) return 0;
    return 1;
}

typedef struct {
    const tpuc_tensor_t *cond;
    tpuc_tensor_t *m;
    int fill_if_true; /* the -inf is Where's X (selected where the mask is true) */
} mask_ctx_t;

/* m[k]: -inf where Where selects the -inf constant, -0 where it keeps the activation */
static void visit_mask(void *vc, int64_t k, const int64_t *at)
{
    mask_ctx_t *c = vc;
    const int masked = (elem(c->cond, at[0]) != 0) == c->fill_if_true;
    c->m->f[k] = masked ? -INFINITY : -0.0f;
}

/* Where(mask, -inf, x) or Where(mask, x, -inf) with the mask a constant and x an activation:
   the node becomes Add(x, m), m = the mask as -inf where x is replaced and -0 where it is
   kept, of the broadcast shape of the mask and the -inf constant (which must broadcast to
   x's shape: Where's output is then x's shape). */
static int where_to_add(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const int xk = g->t[n->in[1]].is_const ? 2 : 1, fk = 3 - xk; /* the activation, the fill */
    const tpuc_tensor_t *cond = &g->t[n->in[0]], *x = &g->t[n->in[xk]], *fill = &g->t[n->in[fk]];
    if (!cond->is_const)
        NODE_ERR(n, "the condition '%s' is computed at run time: a mask is supported only when it is a constant (folded at compile time)", cond->name);
    if (!fill->is_const)
        NODE_ERR(n, "X and Y are both activations: only Where(mask, -inf, x) (masked_fill's form) with a constant mask is supported");
    if (!all_neg_inf(fill))
        NODE_ERR(n, "the constant '%s' is not -inf: only Where(mask, -inf, x) (an additive mask) is supported on an activation", fill->name);
    const tpuc_tensor_t *three[3] = {cond, fill, x};
    int nd, ndm;
    int64_t d[TPUC_MAX_DIMS], dm[TPUC_MAX_DIMS];
    if (bcast_shape(three, 3, &nd, d)) NODE_ERR(n, "the inputs' shapes do not broadcast");
    int same = nd == x->ndim;
    for (int j = 0; same && j < nd; j++) same = d[j] == x->dims[j];
    if (!same) NODE_ERR(n, "the mask broadcasts the activation '%s' to a larger shape: not supported", x->name);
    if (bcast_shape(three, 2, &ndm, dm)) NODE_ERR(n, "the inputs' shapes do not broadcast");
    char name[256];
    snprintf(name, sizeof name, "%s/additive_mask", n->name);
    const int xi = n->in[xk], mi = tpuc_add_tensor(g, name); /* g->t may move */
    if (mi < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    tpuc_tensor_t *m = &g->t[mi];
    cond = &g->t[n->in[0]];
    if (new_const(m, ndm, dm, TPUC_F32)) return tpuc_err(err, errlen, "out of memory"), -1;
    mask_ctx_t c = {cond, m, xk == 2};
    bcast_walk(&cond, 1, ndm, dm, visit_mask, &c);
    n->op = TPUC_OP_ADD;
    n->in[0] = xi;
    n->in[1] = mi;
    n->in[2] = -1;
    n->nin = 2;
    g->t[mi].nuses = 1;
    return 0;
}

/* Add, Sub, Mul or Div of two constants of shapes that broadcast (two masks added: torch's
   attn_mask + key_padding_mask); tpuc_fold_const_arith takes equal shapes and scalars. */
int tpuc_fold_const_bcast(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    if (const_inputs(g, n, err, errlen) || fold_elementwise(g, n, err, errlen)) return -1;
    n->op = TPUC_OP_DEAD;
    return 0;
}

/* The node is one of the mask operators (a Cast to bool included). */
int tpuc_is_mask_op(const tpuc_node_t *n)
{
    return n->op == TPUC_OP_CONSTOFSHAPE || n->op == TPUC_OP_EXPAND || n->op == TPUC_OP_EQUAL ||
           n->op == TPUC_OP_WHERE || n->op == TPUC_OP_TRILU || n->op == TPUC_OP_OR ||
           (n->op == TPUC_OP_CAST && tpuc_attr_int(n, "to", 0) == 9);
}

int tpuc_fold_mask(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    if (n->op == TPUC_OP_WHERE && n->nin == 3 && n->in[0] >= 0 && n->in[1] >= 0 && n->in[2] >= 0 &&
        (!g->t[n->in[1]].is_const || !g->t[n->in[2]].is_const))
        return where_to_add(g, n, err, errlen);
    if (const_inputs(g, n, err, errlen)) return -1;
    int r;
    switch (n->op) {
    case TPUC_OP_CONSTOFSHAPE: r = fold_const_of_shape(g, n, err, errlen); break;
    case TPUC_OP_TRILU: r = fold_trilu(g, n, err, errlen); break;
    case TPUC_OP_CAST: r = fold_cast_bool(g, n, err, errlen); break;
    default: r = fold_elementwise(g, n, err, errlen); break;
    }
    if (r) return -1;
    n->op = TPUC_OP_DEAD;
    return 0;
}
