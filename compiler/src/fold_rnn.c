/* SPDX-License-Identifier: Apache-2.0 */
/* ONNX's LSTM, GRU and RNN, unrolled over the (static) sequence at compile time into
   operators the compiler already lowers (docs/compiler.md "Recurrent layers"):

   - the input projection of every time step at once: X in batch-first order [B, T, I]
     (layout 0's [T, B, I] through a Transpose [1, 0, 2], or the one torch wrote before the
     node looked through) times W^T [I, G H] (a constant), plus the biases that do not depend
     on the state (Wb + Rb, summed in fp32 at compile time: an Add), one MatMul over B T
     rows;
   - per step and gate: that step's columns (a Slice of axes 1 and 2, a Reshape to [B, H]),
     plus h_{t-1} R_k^T (a MatMul by the constant R_k^T [H, H]), the gate's activation
     (Sigmoid or Tanh, fused into the Add by fold); the state update with elementwise Mul,
     Add and Sub of two [B, H] activations;
   - Y: the step outputs gathered by Concat into Q [B, T, D H] (both directions side by
     side); Y_h, Y_c the final states. The readers torch writes after the node (Y read back
     batch-first by Squeeze or Transpose + Reshape and Transpose, h_n[i] by a Gather on
     axis 0, after a Concat of the layers' Y_h) become views of Q and of the final states,
     so no Transpose moves the batch; other readers get ONNX's layouts by Reshape /
     Transpose.

   A step with no previous state (the first, when initial_h / initial_c are absent or zero)
   skips the recurrent MatMul: h_{-1} R^T = 0 exactly; a constant initial state the same for
   every image enters the first step as constant rows (h0 R^T computed here). Gate order is the ONNX spec's: LSTM
   i o f c, GRU z r h. The new nodes are inserted after the recurrent node, which becomes
   DEAD; fold's loop then infers their shapes as for any node (nothing here emits). Readers
   after the node that it rewrites (views) are later nodes fold has not reached yet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/numerics.h"
#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

typedef struct {
    tpuc_graph_t *g;
    size_t at;        /* the next new node's index */
    const char *base; /* the recurrent node's name */
    int seq;          /* new names: "<base>/<what>_<seq>" */
} rb_t;

/* A new tensor named after the node; its index or -1. */
static int new_tensor(rb_t *b, const char *what)
{
    char nm[320];
    snprintf(nm, sizeof nm, "%.200s/%s_%d", b->base, what, b->seq++);
    return tpuc_add_tensor(b->g, nm);
}

/* A new float constant of shape d (data f, taken over); its index or -1. */
static int new_fconst(rb_t *b, const char *what, int nd, const int64_t *d, float *f)
{
    int ti = new_tensor(b, what);
    if (ti < 0) { free(f); return -1; }
    tpuc_tensor_t *t = &b->g->t[ti];
    t->ndim = nd;
    for (int k = 0; k < nd; k++) t->dims[k] = d[k];
    t->is_const = 1;
    t->dtype = TPUC_F32;
    t->f = f;
    return ti;
}

/* A new 1-D int64 constant of n values; its index or -1. */
static int new_iconst(rb_t *b, int n, const int64_t *v)
{
    int ti = new_tensor(b, "shape");
    if (ti < 0) return -1;
    tpuc_tensor_t *t = &b->g->t[ti];
    t->i = malloc((size_t)(n + 1) * sizeof *t->i);
    if (!t->i) return -1;
    memcpy(t->i, v, (size_t)n * sizeof *v);
    t->ndim = 1;
    t->dims[0] = n;
    t->is_const = 1;
    t->dtype = TPUC_I64;
    return ti;
}

/* A new node at b->at: op (its ONNX name and version), inputs in[0..nin), an integer or
   integers attribute (aname NULL: none), output tensor `out` (< 0: a new one). Its output
   tensor, or -1. */
static int node(rb_t *b, tpuc_op_t op, const char *op_type, int version, const int *in,
                int nin, const char *aname, int nav, const int64_t *av, int out)
{
    tpuc_graph_t *g = b->g;
    if (out < 0) out = new_tensor(b, op_type);
    if (out < 0 || tpuc_insert_node_at(g, b->at)) return -1;
    tpuc_node_t *n = &g->n[b->at];
    char nm[320];
    snprintf(nm, sizeof nm, "%.200s/%s_%d", b->base, op_type, b->seq++);
    n->name = tpuc_strdup(nm);
    n->op_type = tpuc_strdup(op_type);
    if (!n->name || !n->op_type) return -1;
    n->op = op;
    n->version = version;
    n->nin = nin;
    for (int k = 0; k < nin; k++) {
        n->in[k] = in[k];
        g->t[in[k]].nuses++;
    }
    n->nout = 1;
    n->out[0] = out;
    if (aname) {
        n->attrs = calloc(1, sizeof *n->attrs);
        if (!n->attrs) return -1;
        n->nattrs = 1;
        n->attrs[0].name = tpuc_strdup(aname);
        n->attrs[0].tensor = -1;
        if (!n->attrs[0].name) return -1;
        if (nav == 1 && strcmp(aname, "perm") != 0) {
            n->attrs[0].type = 2;
            n->attrs[0].i = av[0];
        } else {
            n->attrs[0].type = 7;
            n->attrs[0].ints = malloc((size_t)nav * sizeof *av);
            if (!n->attrs[0].ints) return -1;
            memcpy(n->attrs[0].ints, av, (size_t)nav * sizeof *av);
            n->attrs[0].nints = (size_t)nav;
        }
    }
    g->t[out].producer = (int)b->at;
    b->at++;
    return out;
}

static int binop(rb_t *b, tpuc_op_t op, const char *name, int x, int y)
{
    int in[2] = {x, y};
    return node(b, op, name, op == TPUC_OP_MATMUL ? 13 : 14, in, 2, NULL, 0, NULL, -1);
}

static int unop(rb_t *b, tpuc_op_t op, const char *name, int x)
{
    return node(b, op, name, 13, &x, 1, NULL, 0, NULL, -1);
}

static int reshape(rb_t *b, int x, int nd, const int64_t *d, int out)
{
    int s = new_iconst(b, nd, d);
    if (s < 0) return -1;
    int in[2] = {x, s};
    return node(b, TPUC_OP_RESHAPE, "Reshape", 14, in, 2, NULL, 0, NULL, out);
}

static int transpose(rb_t *b, int x, int nd, const int64_t *perm, int out)
{
    return node(b, TPUC_OP_TRANSPOSE, "Transpose", 13, &x, 1, "perm", nd, perm, out);
}

/* Concat of xs[0..n) on axis 1; more than TPUC_MAX_IO inputs: concatenated in groups first. */
static int concat1(rb_t *b, int *xs, int n)
{
    static const int64_t ax = 1;
    while (n > TPUC_MAX_IO) {
        int m = 0;
        for (int i = 0; i < n; i += TPUC_MAX_IO) {
            int k = n - i < TPUC_MAX_IO ? n - i : TPUC_MAX_IO;
            xs[m] = k == 1 ? xs[i]
                           : node(b, TPUC_OP_CONCAT, "Concat", 13, xs + i, k, "axis", 1, &ax, -1);
            if (xs[m++] < 0) return -1;
        }
        n = m;
    }
    return n == 1 ? xs[0] : node(b, TPUC_OP_CONCAT, "Concat", 13, xs, n, "axis", 1, &ax, -1);
}

/* Columns [c0, c0 + H) of time step t of XP [B, T, GH], as [B, H]. */
static int step_cols(rb_t *b, int xp, int64_t B, int64_t t, int64_t c0, int64_t H)
{
    int64_t st[2] = {t, c0}, en[2] = {t + 1, c0 + H}, ax[2] = {1, 2}, d[2] = {B, H};
    int s = new_iconst(b, 2, st), e = new_iconst(b, 2, en), a = new_iconst(b, 2, ax);
    if (s < 0 || e < 0 || a < 0) return -1;
    int in[4] = {xp, s, e, a};
    int sl = node(b, TPUC_OP_SLICE, "Slice", 13, in, 4, NULL, 0, NULL, -1);
    return sl < 0 ? -1 : reshape(b, sl, 2, d, -1);
}

/* The cell of one direction: its constants and its state. */
typedef struct {
    int cell;     /* TPUC_OP_LSTM, _GRU, _RNN */
    int G;        /* gates: 4, 3, 1 */
    int64_t H;
    int lbr;      /* GRU linear_before_reset */
    int xp;       /* [B, T, G H]: the input projection and the state-free biases */
    int rt[4];    /* R_k^T [H, H] per gate */
    int rbh;      /* GRU with linear_before_reset: Rb of the h gate [H] (-1: zero) */
    int h, c;     /* the state (-1: zero, or the initial one below) */
    const float *r;   /* R of this direction [G H, H] */
    const float *rb;  /* its Rb [G H], or NULL */
    float *h0, *c0;   /* a nonzero initial state, the same for every image: [H] in bf16
                         (as a stored state is), or NULL */
} dir_t;

static float bf16f(float x)
{
    fp32_t a;
    memcpy(&a.v, &x, 4);
    fp32_t w = bf16_to_fp32(fp32_to_bf16(a));
    float y;
    memcpy(&y, &w.v, 4);
    return y;
}

/* The constant row h0 R_k^T (+ Rb_k when rb_k) as the machine computes a state's: one fp32
   chain of bf16 products in ascending K from -0, rounded to bf16 (the MatMul's stored
   output; with the bias: one more fp32 add before the rounding). Its tensor, or -1. */
static int h0_row(rb_t *b, const dir_t *d, int k, int with_rb)
{
    int64_t H = d->H;
    float *row = malloc((size_t)H * sizeof *row);
    if (!row) return -1;
    for (int64_t j = 0; j < H; j++) {
        fp32_t acc = {0x80000000u};
        for (int64_t i = 0; i < H; i++) {
            fp32_t hv, rv;
            float r = d->r[(k * H + j) * H + i];
            memcpy(&hv.v, &d->h0[i], 4);
            memcpy(&rv.v, &r, 4);
            acc = fp32_mac(acc, fp32_to_bf16(hv), fp32_to_bf16(rv));
        }
        if (with_rb && d->rb) {
            fp32_t bv;
            float rbv = d->rb[k * H + j];
            memcpy(&bv.v, &rbv, 4);
            acc = fp32_add(acc, bv);
        }
        float v;
        memcpy(&v, &acc.v, 4);
        row[j] = bf16f(v);
    }
    return new_fconst(b, "h0_R_t", 1, &H, row);
}

/* A copy of the initial state v [H] as a constant row. */
static int state_row(rb_t *b, const float *v, int64_t H)
{
    float *row = malloc((size_t)H * sizeof *row);
    if (!row) return -1;
    memcpy(row, v, (size_t)H * sizeof *row);
    return new_fconst(b, "state0", 1, &H, row);
}

/* act(x_k + h R_k^T), or act(x_k) when the state is zero. */
static int gate(rb_t *b, const dir_t *d, int xk, int k, tpuc_op_t act)
{
    int pre = xk;
    if (d->h >= 0 || d->h0) {
        /* a state: h R_k^T; the initial one's is a constant row (h0_row) */
        int r = d->h >= 0 ? binop(b, TPUC_OP_MATMUL, "MatMul", d->h, d->rt[k]) : h0_row(b, d, k, 0);
        if (r < 0) return -1;
        pre = binop(b, TPUC_OP_ADD, "Add", xk, r);
        if (pre < 0) return -1;
    }
    return unop(b, act, act == TPUC_OP_SIGMOID ? "Sigmoid" : "Tanh", pre);
}

/* One time step t of direction d: updates d->h (and d->c). */
static int step(rb_t *b, dir_t *d, int64_t B, int64_t t)
{
    int64_t H = d->H;
    int x[4];
    for (int k = 0; k < d->G; k++)
        if ((x[k] = step_cols(b, d->xp, B, t, k * H, H)) < 0) return -1;
    if (d->cell == TPUC_OP_RNN) {
        d->h = gate(b, d, x[0], 0, TPUC_OP_TANH);
        return d->h < 0 ? -1 : 0;
    }
    if (d->cell == TPUC_OP_LSTM) {
        /* i o f c: c' = f c + i g, h' = o tanh(c') */
        int i = gate(b, d, x[0], 0, TPUC_OP_SIGMOID), o = gate(b, d, x[1], 1, TPUC_OP_SIGMOID);
        int f = d->c >= 0 || d->c0 ? gate(b, d, x[2], 2, TPUC_OP_SIGMOID) : 0;
        int gg = gate(b, d, x[3], 3, TPUC_OP_TANH);
        if (i < 0 || o < 0 || f < 0 || gg < 0) return -1;
        int ig = binop(b, TPUC_OP_MUL, "Mul", i, gg);
        if (ig < 0) return -1;
        int c = ig;
        if (d->c >= 0 || d->c0) {
            int cs = d->c >= 0 ? d->c : state_row(b, d->c0, H);
            int fc = cs < 0 ? -1 : binop(b, TPUC_OP_MUL, "Mul", f, cs);
            if (fc < 0 || (c = binop(b, TPUC_OP_ADD, "Add", fc, ig)) < 0) return -1;
        }
        int tc = unop(b, TPUC_OP_TANH, "Tanh", c);
        if (tc < 0) return -1;
        d->c = c;
        d->h = binop(b, TPUC_OP_MUL, "Mul", o, tc);
        return d->h < 0 ? -1 : 0;
    }
    /* GRU z r h, PyTorch's form of h' = (1 - z) n + z h: n + z (h - n) */
    int z = gate(b, d, x[0], 0, TPUC_OP_SIGMOID);
    if (z < 0) return -1;
    int pre;
    if (d->lbr) {
        /* n = tanh(x_n + r (h Rh^T + Rbh)): with a zero state, r Rbh */
        int r = d->h >= 0 || d->h0 || d->rbh >= 0 ? gate(b, d, x[1], 1, TPUC_OP_SIGMOID) : 0;
        if (r < 0) return -1;
        int hr = -1;
        if (d->h < 0 && d->h0) {
            hr = h0_row(b, d, 2, 1); /* h0 Rh^T + Rbh */
            if (hr < 0) return -1;
        } else if (d->h >= 0) {
            hr = binop(b, TPUC_OP_MATMUL, "MatMul", d->h, d->rt[2]);
            if (hr >= 0 && d->rbh >= 0) hr = binop(b, TPUC_OP_ADD, "Add", hr, d->rbh);
        } else if (d->rbh >= 0) {
            hr = d->rbh;
        }
        pre = x[2];
        if (hr >= 0) {
            int rh = binop(b, TPUC_OP_MUL, "Mul", r, hr);
            if (rh < 0 || (pre = binop(b, TPUC_OP_ADD, "Add", x[2], rh)) < 0) return -1;
        }
    } else {
        /* n = tanh(x_n + (r h) Rh^T) (Rbh is in the projection's bias) */
        pre = x[2];
        if (d->h >= 0 || d->h0) {
            int r = gate(b, d, x[1], 1, TPUC_OP_SIGMOID);
            int hs = d->h >= 0 ? d->h : state_row(b, d->h0, H);
            if (r < 0 || hs < 0) return -1;
            int rh = binop(b, TPUC_OP_MUL, "Mul", r, hs);
            int m = rh < 0 ? -1 : binop(b, TPUC_OP_MATMUL, "MatMul", rh, d->rt[2]);
            if (m < 0 || (pre = binop(b, TPUC_OP_ADD, "Add", x[2], m)) < 0) return -1;
        }
    }
    int n = unop(b, TPUC_OP_TANH, "Tanh", pre);
    if (n < 0) return -1;
    if (d->h >= 0 || d->h0) {
        int hs = d->h >= 0 ? d->h : state_row(b, d->h0, H);
        int dh = hs < 0 ? -1 : binop(b, TPUC_OP_SUB, "Sub", hs, n);
        int zd = dh < 0 ? -1 : binop(b, TPUC_OP_MUL, "Mul", z, dh);
        d->h = zd < 0 ? -1 : binop(b, TPUC_OP_ADD, "Add", n, zd);
    } else {
        /* n + z (0 - n) = n - z n, the same bits */
        int zn = binop(b, TPUC_OP_MUL, "Mul", z, n);
        d->h = zn < 0 ? -1 : binop(b, TPUC_OP_SUB, "Sub", n, zn);
    }
    return d->h < 0 ? -1 : 0;
}

/* Every element of a float constant zero (an absent or ConstantOfShape initial state). */
static int all_zero(const tpuc_tensor_t *t)
{
    int64_t e = tpuc_tensor_elems(t);
    for (int64_t k = 0; k < e; k++)
        if (t->f[k] != 0.0f) return 0;
    return 1;
}

/* The default activations of the cell, per direction. */
static int default_acts(const tpuc_attr_t *a, int cell, int D)
{
    static const char *const lstm[] = {"Sigmoid", "Tanh", "Tanh"}, *const gru[] = {"Sigmoid", "Tanh"},
                             *const rnn[] = {"Tanh"};
    const char *const *want = cell == TPUC_OP_LSTM ? lstm : cell == TPUC_OP_GRU ? gru : rnn;
    size_t per = cell == TPUC_OP_LSTM ? 3 : cell == TPUC_OP_GRU ? 2 : 1;
    if (a->type != 8 || !a->s) return 0;
    /* the reader joins STRINGS with commas */
    char buf[256];
    size_t k = 0;
    buf[0] = 0;
    for (int d = 0; d < D; d++)
        for (size_t i = 0; i < per; i++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", k ? "," : "", want[i]);
    return strcmp(a->s, buf) == 0;
}

/* Node p's perm attribute is want[0..n). */
static int has_perm(const tpuc_node_t *p, int n, const int *want)
{
    const tpuc_attr_t *pm = tpuc_attr(p, "perm");
    if (!pm || (int)pm->nints != n) return 0;
    for (int k = 0; k < n; k++)
        if (pm->ints[k] != want[k]) return 0;
    return 1;
}

/* The int64 values of tensor ti, a constant or the output of a Constant node fold has not
   reached yet (the nodes after the recurrent one): their count, or -1. */
static int const_ints(const tpuc_graph_t *g, int ti, int64_t *v, int max)
{
    const tpuc_tensor_t *t = &g->t[ti];
    if (!t->is_const && t->producer >= 0 && g->n[t->producer].op == TPUC_OP_CONSTANT) {
        const tpuc_attr_t *a = tpuc_attr(&g->n[t->producer], "value");
        if (!a || a->tensor < 0) return -1;
        t = &g->t[a->tensor];
    }
    int64_t e = t->ndim == 0 ? 1 : t->dims[0];
    if (!t->is_const || !t->i || t->ndim > 1 || e > max) return -1;
    for (int64_t k = 0; k < e; k++) v[k] = t->i[k];
    return (int)e;
}

/* The live nodes that read tensor ti (up to max of them in r[]): their count. */
static int readers(const tpuc_graph_t *g, int ti, int *r, int max)
{
    int c = 0;
    for (size_t k = 0; k < g->nn; k++) {
        if (g->n[k].op == TPUC_OP_DEAD) continue;
        for (int j = 0; j < g->n[k].nin; j++)
            if (g->n[k].in[j] == ti) {
                if (c < max) r[c] = (int)k;
                c++;
                break;
            }
    }
    return c;
}

/* Node k an LSTM/GRU/RNN of layout 0 that reads ti as X only. */
static int rnn_reads_x(const tpuc_graph_t *g, int k, int ti)
{
    const tpuc_node_t *n = &g->n[k];
    if ((n->op != TPUC_OP_LSTM && n->op != TPUC_OP_GRU && n->op != TPUC_OP_RNN) ||
        tpuc_attr_int(n, "layout", 0) != 0 || n->in[0] != ti)
        return 0;
    for (int j = 1; j < n->nin; j++)
        if (n->in[j] == ti) return 0;
    return 1;
}

/* Node k becomes a view (a Reshape) of tensor src to shape d[0..nd): a reader of Y, Y_h or
   Y_c that now reads the unrolled steps directly. 0, or -1 (out of memory). */
static int make_view(rb_t *b, int k, int src, int nd, const int64_t *d)
{
    int sh = new_iconst(b, nd, d);
    if (sh < 0) return -1;
    tpuc_node_t *m = &b->g->n[k];
    for (size_t i = 0; i < m->nattrs; i++) {
        free(m->attrs[i].name); free(m->attrs[i].s);
        free(m->attrs[i].ints); free(m->attrs[i].floats);
    }
    free(m->attrs);
    m->attrs = NULL;
    m->nattrs = 0;
    m->op = TPUC_OP_RESHAPE;
    m->version = 14;
    m->nin = 2;
    m->in[0] = src;
    m->in[1] = sh;
    return 0;
}

/* The size of axis 0 of tensor ti: D for y (the state being unrolled), its shape's, or
   num_directions when it is the Y_h / Y_c of a layout-0 recurrent node not unrolled yet; -1
   when unknown. */
static int64_t axis0(const tpuc_graph_t *g, int ti, int y, int D)
{
    const tpuc_tensor_t *t = &g->t[ti];
    if (ti == y) return D; /* the node being unrolled (DEAD already) */
    if (t->ndim > 0) return t->dims[0];
    if (t->producer < 0) return -1;
    const tpuc_node_t *p = &g->n[t->producer];
    if ((p->op != TPUC_OP_LSTM && p->op != TPUC_OP_GRU && p->op != TPUC_OP_RNN) ||
        tpuc_attr_int(p, "layout", 0) != 0 || !((p->nout > 1 && p->out[1] == ti) || (p->nout > 2 && p->out[2] == ti)))
        return -1;
    const tpuc_attr_t *d = tpuc_attr(p, "direction");
    return d && d->s && strcmp(d->s, "bidirectional") == 0 ? 2 : 1;
}

/* Node k is a Gather of one constant index (a scalar) on axis 0 of ti of n0 rows: the index
   in [0, n0) in *idx, 1; else 0. */
static int gather0(const tpuc_graph_t *g, int k, int ti, int64_t n0, int64_t *idx)
{
    const tpuc_node_t *n = &g->n[k];
    int64_t v[1];
    if (n->op != TPUC_OP_GATHER || n->in[0] != ti || n->nin != 2 || n->in[1] == ti ||
        tpuc_attr_int(n, "axis", 0) != 0 || g->t[n->out[0]].is_output)
        return 0;
    const tpuc_tensor_t *it = &g->t[n->in[1]];
    const tpuc_tensor_t *src = it;
    if (!it->is_const && it->producer >= 0 && g->n[it->producer].op == TPUC_OP_CONSTANT) {
        const tpuc_attr_t *a = tpuc_attr(&g->n[it->producer], "value");
        src = a && a->tensor >= 0 ? &g->t[a->tensor] : NULL;
    }
    if (!src || src->ndim != 0 || const_ints(g, n->in[1], v, 1) != 1) return 0;
    if (v[0] < 0) v[0] += n0;
    if (v[0] < 0 || v[0] >= n0) return 0;
    *idx = v[0];
    return 1;
}

/* torch's h_n[i] (c_n[i]): every reader of the layout-0 state output y [D, B, H] is a Gather
   of one constant index on axis 0, or a Concat on axis 0 of several layers' states read only
   by such Gathers. Each Gather becomes a view of that direction's final state st[d] [B, H]
   (or, picking another layer's part of the Concat, a Gather of that layer's output, which
   its own unrolling takes), the Concat goes. 1 done, 0 not this pattern, -1 out of memory. */
static int state_gathers(rb_t *b, int y, int D, int64_t B, int64_t H, const int *st)
{
    tpuc_graph_t *g = b->g;
    enum { MAXR = TPUC_MAX_IO * 4 };
    int r[MAXR], r2[MAXR];
    int64_t idx;
    if (g->t[y].is_output) return 0;
    int c = readers(g, y, r, MAXR);
    if (c < 1 || c > MAXR) return 0;
    for (int k = 0; k < c; k++) {
        const tpuc_node_t *m = &g->n[r[k]];
        if (gather0(g, r[k], y, D, &idx)) continue;
        if (m->op != TPUC_OP_CONCAT || tpuc_attr_int(m, "axis", 0) != 0 || g->t[m->out[0]].is_output) return 0;
        int64_t tot = 0;
        for (int j = 0; j < m->nin; j++) {
            int64_t a0 = axis0(g, m->in[j], y, D);
            if (a0 < 1) return 0;
            tot += a0;
        }
        int c2 = readers(g, m->out[0], r2, MAXR);
        if (c2 < 1 || c2 > MAXR) return 0;
        for (int q = 0; q < c2; q++)
            if (!gather0(g, r2[q], m->out[0], tot, &idx)) return 0;
    }
    int64_t bh[2] = {B, H};
    for (int k = 0; k < c; k++) {
        if (g->n[r[k]].op == TPUC_OP_GATHER) {
            gather0(g, r[k], y, D, &idx);
            if (make_view(b, r[k], st[idx], 2, bh)) return -1;
            continue;
        }
        int cat = r[k];
        int c2 = readers(g, g->n[cat].out[0], r2, MAXR);
        for (int q = 0; q < c2; q++) {
            int64_t tot = 0, off = 0;
            for (int j = 0; j < g->n[cat].nin; j++) tot += axis0(g, g->n[cat].in[j], y, D);
            gather0(g, r2[q], g->n[cat].out[0], tot, &idx);
            for (int j = 0; j < g->n[cat].nin; j++) {
                int in = g->n[cat].in[j];
                int64_t a0 = axis0(g, in, y, D);
                if (idx >= off && idx < off + a0) {
                    if (in == y) {
                        if (make_view(b, r2[q], st[idx - off], 2, bh)) return -1;
                    } else {
                        /* a Gather of that layer's state: a scalar index */
                        int ti = new_tensor(b, "index");
                        if (ti < 0) return -1;
                        tpuc_tensor_t *t = &g->t[ti];
                        t->i = malloc(sizeof *t->i);
                        if (!t->i) return -1;
                        t->i[0] = idx - off;
                        t->ndim = 0;
                        t->is_const = 1;
                        t->dtype = TPUC_I64;
                        g->n[r2[q]].in[0] = in;
                        g->n[r2[q]].in[1] = ti;
                    }
                    break;
                }
                off += a0;
            }
        }
        g->n[cat].op = TPUC_OP_DEAD;
    }
    return 1;
}

int tpuc_rnn_input_transpose(const tpuc_graph_t *g, const tpuc_node_t *n)
{
    static const int p102[3] = {1, 0, 2};
    int r[TPUC_MAX_IO * 4];
    if (n->op != TPUC_OP_TRANSPOSE || !has_perm(n, 3, p102) || g->t[n->out[0]].is_output) return 0;
    int c = readers(g, n->out[0], r, TPUC_MAX_IO * 4);
    if (c < 1 || c > TPUC_MAX_IO * 4) return 0;
    /* a Shape (torch's h0 takes the batch from X's shape) reads no data */
    for (int k = 0; k < c; k++)
        if (!rnn_reads_x(g, r[k], n->out[0]) && g->n[r[k]].op != TPUC_OP_SHAPE) return 0;
    return 1;
}

/* torch's reading of a layout-0 Y [T, D, B, H] back into [T, B, D H]: Squeeze of axis 1
   (D = 1), or Transpose [0, 2, 1, 3] and a Reshape to [T, B, D H]; the chain's nodes in
   c[0..*nc) and the tensor it makes, or -1 when Y is read otherwise. */
static int torch_y_chain(const tpuc_graph_t *g, int y, int64_t T, int64_t B, int D, int64_t H,
                         int *c, int *nc)
{
    static const int p0213[4] = {0, 2, 1, 3};
    int r[2];
    int64_t v[8];
    if (g->t[y].is_output || readers(g, y, r, 2) != 1) return -1;
    const tpuc_node_t *a = &g->n[r[0]];
    if (D == 1 && a->op == TPUC_OP_SQUEEZE && a->in[0] == y) {
        int na = a->nin > 1 && a->in[1] >= 0 ? const_ints(g, a->in[1], v, 8) : -1;
        const tpuc_attr_t *ax = tpuc_attr(a, "axes");
        if (ax && ax->nints == 1) { v[0] = ax->ints[0]; na = 1; }
        if (na != 1 || (v[0] != 1 && v[0] != -3)) return -1;
        c[0] = r[0];
        *nc = 1;
        return a->out[0];
    }
    if (a->op != TPUC_OP_TRANSPOSE || !has_perm(a, 4, p0213) || g->t[a->out[0]].is_output ||
        readers(g, a->out[0], r + 1, 1) != 1)
        return -1;
    const tpuc_node_t *b = &g->n[r[1]];
    if (b->op != TPUC_OP_RESHAPE || b->in[0] != a->out[0] || b->nin < 2 ||
        tpuc_attr_int(b, "allowzero", 0) || const_ints(g, b->in[1], v, 8) != 3)
        return -1;
    /* [T, B, D, H] -> v: 0 copies a dimension, -1 takes the rest */
    int64_t in[4] = {T, B, D, H}, known = 1;
    int inf = -1;
    for (int k = 0; k < 3; k++) {
        if (v[k] == 0) v[k] = in[k];
        if (v[k] == -1) inf = k;
        else known *= v[k];
    }
    if (inf >= 0) v[inf] = known ? T * B * D * H / known : 0;
    if (v[0] != T || v[1] != B || v[2] != D * H) return -1;
    c[0] = r[0];
    c[1] = r[1];
    *nc = 2;
    return b->out[0];
}

int tpuc_fold_rnn(tpuc_graph_t *g, size_t ni, const tpuc_hw_t *hw, char *err, size_t errlen)
{
    tpuc_node_t *n = &g->n[ni];
    int cell = n->op;
    int G = cell == TPUC_OP_LSTM ? 4 : cell == TPUC_OP_GRU ? 3 : 1;
    static const char *const known[] = {"activation_alpha", "activation_beta", "activations",
                                        "clip", "direction", "hidden_size", "input_forget",
                                        "layout", "linear_before_reset", NULL};
    for (size_t i = 0; i < n->nattrs; i++) {
        int ok = 0;
        for (int k = 0; known[k]; k++) ok |= strcmp(n->attrs[i].name, known[k]) == 0;
        if (!ok || (cell != TPUC_OP_LSTM && strcmp(n->attrs[i].name, "input_forget") == 0) ||
            (cell != TPUC_OP_GRU && strcmp(n->attrs[i].name, "linear_before_reset") == 0))
            NODE_ERR(n, "attribute '%s' is not supported", n->attrs[i].name);
    }
    const tpuc_attr_t *dir = tpuc_attr(n, "direction");
    const char *ds = dir && dir->s ? dir->s : "forward";
    int D = 1, rev = 0;
    if (strcmp(ds, "reverse") == 0) rev = 1;
    else if (strcmp(ds, "bidirectional") == 0) D = 2;
    else if (strcmp(ds, "forward") != 0)
        NODE_ERR(n, "direction '%s': supported forward, reverse and bidirectional", ds);
    const tpuc_attr_t *acts = tpuc_attr(n, "activations");
    if (acts && !default_acts(acts, cell, D))
        NODE_ERR(n, "activations '%s': only the defaults (%s per direction) are supported", acts->s ? acts->s : "?",
                 cell == TPUC_OP_LSTM ? "Sigmoid, Tanh, Tanh" : cell == TPUC_OP_GRU ? "Sigmoid, Tanh" : "Tanh");
    if (tpuc_attr(n, "activation_alpha") || tpuc_attr(n, "activation_beta"))
        NODE_ERR(n, "activation_alpha / activation_beta: not supported (Sigmoid and Tanh take none)");
    if (tpuc_attr(n, "clip"))
        NODE_ERR(n, "clip %g: not supported (only unclipped gates)", (double)tpuc_attr(n, "clip")->f);
    if (tpuc_attr_int(n, "input_forget", 0) != 0)
        NODE_ERR(n, "input_forget %lld: only 0 is supported", (long long)tpuc_attr_int(n, "input_forget", 0));
    int64_t layout = tpuc_attr_int(n, "layout", 0);
    if (layout != 0 && layout != 1) NODE_ERR(n, "layout %lld: supported 0 and 1", (long long)layout);
    int64_t lbr = tpuc_attr_int(n, "linear_before_reset", 0);
    if (lbr != 0 && lbr != 1) NODE_ERR(n, "linear_before_reset %lld: supported 0 and 1", (long long)lbr);

    const tpuc_tensor_t *in[8] = {0};
    for (int k = 0; k < n->nin && k < 8; k++) in[k] = n->in[k] >= 0 ? &g->t[n->in[k]] : NULL;
    const tpuc_tensor_t *X = in[0], *W = in[1], *R = in[2], *Bs = in[3];
    if (!X || X->is_const || X->ndim != 3) NODE_ERR(n, "X must be an activation of 3 dimensions");
    int64_t T = layout ? X->dims[1] : X->dims[0], B = layout ? X->dims[0] : X->dims[1], I = X->dims[2];
    int64_t H = tpuc_attr_int(n, "hidden_size", 0);
    if (H < 1 || H > 65536) NODE_ERR(n, "hidden_size %lld: supported 1 .. 65536", (long long)H);
    if (!W || !W->is_const || !W->f || W->ndim != 3 || W->dims[0] != D || W->dims[1] != G * H || W->dims[2] != I)
        NODE_ERR(n, "W must be a float32 initializer [%d, %lld, %lld] (num_directions, %d x hidden_size %lld, input %lld)",
                 D, (long long)(G * H), (long long)I, G, (long long)H, (long long)I);
    if (!R || !R->is_const || !R->f || R->ndim != 3 || R->dims[0] != D || R->dims[1] != G * H || R->dims[2] != H)
        NODE_ERR(n, "R must be a float32 initializer [%d, %lld, %lld]", D, (long long)(G * H), (long long)H);
    if (Bs && (!Bs->is_const || !Bs->f || Bs->ndim != 2 || Bs->dims[0] != D || Bs->dims[1] != 2 * G * H))
        NODE_ERR(n, "B must be a float32 initializer [%d, %lld]", D, (long long)(2 * G * H));
    if (in[4]) {
        const tpuc_tensor_t *sl = in[4];
        if (!sl->is_const || !sl->i || tpuc_tensor_elems(sl) != B)
            NODE_ERR(n, "sequence_lens must be an integer constant of %lld values (one per batch element)", (long long)B);
        for (int64_t k = 0; k < B; k++)
            if (sl->i[k] != T)
                NODE_ERR(n, "sequence_lens[%lld] = %lld: only every length equal to the sequence (%lld) is supported (ragged lengths are not)",
                         (long long)k, (long long)sl->i[k], (long long)T);
    }
    if (in[7]) NODE_ERR(n, "P (peepholes) is given: not supported");
    /* initial_h / initial_c: absent, zeros, or the same row for every image (torch's Expand
       of a learned state): one program serves every core's images, so a state that varies
       along the batch cannot be a constant of it. Rows of any batch are read: a static
       export holds the whole batch, a core's program a part. */
    static const char *const sname[2] = {"initial_h", "initial_c"};
    float *st0[2][2] = {{NULL, NULL}, {NULL, NULL}}; /* [h/c][direction] */
    for (int k = 5; k <= 6; k++) {
        if (!in[k]) continue;
        if (k == 6 && cell != TPUC_OP_LSTM) NODE_ERR(n, "input 6 (initial_c) is given: only an LSTM has a cell state");
        if (!in[k]->is_const || !in[k]->f)
            NODE_ERR(n, "%s '%s' is an activation: only absent, zeros or a constant the same for every batch element is supported", sname[k - 5], in[k]->name);
        int64_t e = tpuc_tensor_elems(in[k]);
        if (e % (D * H) || e == 0)
            NODE_ERR(n, "%s has %lld elements, not a multiple of num_directions x hidden_size (%lld)", sname[k - 5],
                     (long long)e, (long long)(D * H));
        if (all_zero(in[k])) continue;
        int64_t Bc = e / (D * H);
        const float *v = in[k]->f;
        /* element (direction d, image bb, j): [D, B, H], layout 1 [B, D, H] */
#define ST0(d, bb, j) v[(layout ? (bb) * D + (d) : (d) * Bc + (bb)) * H + (j)]
        for (int d = 0; d < D; d++)
            for (int64_t bb = 1; bb < Bc; bb++)
                for (int64_t j = 0; j < H; j++)
                    if (ST0(d, bb, j) != ST0(d, 0, j))
                        NODE_ERR(n, "%s differs between batch elements 0 and %lld: only absent, zeros or the same state for every element is supported (one program serves every core's images)",
                                 sname[k - 5], (long long)bb);
        for (int d = 0; d < D; d++) {
            st0[k - 5][d] = malloc((size_t)H * sizeof(float));
            if (!st0[k - 5][d]) return tpuc_err(err, errlen, "out of memory"), -1;
            for (int64_t j = 0; j < H; j++) st0[k - 5][d][j] = bf16f(ST0(d, 0, j));
        }
#undef ST0
    }
    if (n->nin > 8) NODE_ERR(n, "%d inputs, at most 8", n->nin);
    int nouts = cell == TPUC_OP_LSTM ? 3 : 2;
    if (n->nout > nouts) NODE_ERR(n, "%d outputs, at most %d", n->nout, nouts);
    int outs[3] = {-1, -1, -1};
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0 && (g->t[n->out[k]].nuses || g->t[n->out[k]].is_output)) outs[k] = n->out[k];
    for (int k = 1; k < n->nout && k < 3; k++)
        if (!layout && hw->cores > 1 && n->out[k] >= 0 && g->t[n->out[k]].is_output)
            NODE_ERR(n, "%s, layout 0 [num_directions, B, H], is the graph output: its batch is axis 1, so it needs the whole batch on one core (compile with --cores 1)",
                     k == 1 ? "Y_h" : "Y_c");
    if (T > 1024)
        NODE_ERR(n, "a sequence of %lld steps: at most 1024 are unrolled (the program and the compile time grow with it)", (long long)T);
    if (T < 1 || B < 1 || I < 1) NODE_ERR(n, "X of shape [%lld, %lld, %lld]: every dimension must be >= 1",
                                          (long long)X->dims[0], (long long)X->dims[1], (long long)X->dims[2]);

    if (!layout && n->in[0] == g->inputs[0] && T > 1)
        NODE_ERR(n, "X is the graph input in layout 0 ([T, B, I], the sequence first): its first dimension %lld would be the program's batch, which tpu-infer splits into chunks and cores; give the input batch-first ([B, T, I] through a Transpose [1, 0, 2], as torch's batch_first export, or layout 1)",
                 (long long)T);
    char base[256];
    snprintf(base, sizeof base, "%s", n->name);
    rb_t b = {g, ni + 1, base, 0};
    const int64_t GH = G * H;
    int xi = n->in[0], wi = n->in[1], ri = n->in[2], bi = Bs ? n->in[3] : -1;
    n->op = TPUC_OP_DEAD; /* n is not used past the inserts below */
#define TRY(e) do { if ((e) < 0) return tpuc_err(err, errlen, "out of memory"), -1; } while (0)

    /* X in batch-first order [B, T, I]: layout 1 as it is; layout 0 through the Transpose
       [1, 0, 2] that torch writes before the node (its input; the Transpose goes when nothing
       else reads it: fold leaves one that only recurrent nodes read, on any core count), or
       a new one */
    int xb = xi;
    if (!layout) {
        static const int p102[3] = {1, 0, 2};
        int pi = g->t[xi].producer, r[1];
        const tpuc_node_t *p = pi >= 0 ? &g->n[pi] : NULL;
        if (p && p->op == TPUC_OP_TRANSPOSE && has_perm(p, 3, p102)) {
            xb = p->in[0];
            if (readers(g, xi, r, 1) == 0 && !g->t[xi].is_output) g->n[pi].op = TPUC_OP_DEAD;
        } else {
            static const int64_t pm[3] = {1, 0, 2};
            TRY(xb = transpose(&b, xi, 3, pm, -1));
        }
    }

    dir_t dirs[2];
    int *ys[2] = {NULL, NULL};
    for (int d = 0; d < D; d++) {
        dir_t *dr = &dirs[d];
        memset(dr, 0, sizeof *dr);
        dr->cell = cell; dr->G = G; dr->H = H; dr->lbr = (int)lbr;
        dr->h = dr->c = dr->rbh = -1;
        dr->h0 = st0[0][d];
        dr->c0 = st0[1][d];
        const float *w = g->t[wi].f + d * GH * I, *r = g->t[ri].f + d * GH * H;
        const float *bb = bi >= 0 ? g->t[bi].f + d * 2 * GH : NULL;
        dr->r = r;
        dr->rb = bb ? bb + GH : NULL;
        /* W^T [I, G H] */
        float *wt = malloc((size_t)(I * GH) * sizeof *wt);
        if (!wt) return tpuc_err(err, errlen, "out of memory"), -1;
        for (int64_t o = 0; o < GH; o++)
            for (int64_t i = 0; i < I; i++) wt[i * GH + o] = w[o * I + i];
        int64_t dw[2] = {I, GH};
        int wti;
        TRY(wti = new_fconst(&b, "W_t", 2, dw, wt));
        TRY(dr->xp = binop(&b, TPUC_OP_MATMUL, "MatMul", xb, wti));
        if (bb) {
            /* Wb + Rb, but a GRU's Rbh with linear_before_reset stays inside r (...) */
            float *bx = malloc((size_t)GH * sizeof *bx);
            if (!bx) return tpuc_err(err, errlen, "out of memory"), -1;
            for (int64_t o = 0; o < GH; o++)
                bx[o] = cell == TPUC_OP_GRU && lbr && o >= 2 * H ? bb[o] : bb[o] + bb[GH + o];
            int bxi;
            TRY(bxi = new_fconst(&b, "bias", 1, &GH, bx));
            TRY(dr->xp = binop(&b, TPUC_OP_ADD, "Add", dr->xp, bxi));
            if (cell == TPUC_OP_GRU && lbr) {
                int nz = 0;
                for (int64_t o = 0; o < H; o++) nz |= bb[GH + 2 * H + o] != 0.0f;
                if (nz) {
                    float *rb = malloc((size_t)H * sizeof *rb);
                    if (!rb) return tpuc_err(err, errlen, "out of memory"), -1;
                    memcpy(rb, bb + GH + 2 * H, (size_t)H * sizeof *rb);
                    TRY(dr->rbh = new_fconst(&b, "Rb_h", 1, &H, rb));
                }
            }
        }
        /* R_k^T [H, H] per gate */
        for (int k = 0; k < G; k++) {
            float *rt = malloc((size_t)(H * H) * sizeof *rt);
            if (!rt) return tpuc_err(err, errlen, "out of memory"), -1;
            for (int64_t o = 0; o < H; o++)
                for (int64_t i = 0; i < H; i++) rt[i * H + o] = r[(k * H + o) * H + i];
            int64_t dr2[2] = {H, H};
            TRY(dr->rt[k] = new_fconst(&b, "R_t", 2, dr2, rt));
        }
        if (outs[0] >= 0) {
            ys[d] = malloc((size_t)T * sizeof *ys[d]);
            if (!ys[d]) return tpuc_err(err, errlen, "out of memory"), -1;
        }
    }
    /* the steps, both directions interleaved */
    for (int64_t s = 0; s < T; s++)
        for (int d = 0; d < D; d++) {
            int64_t t = (d == 1 || rev) ? T - 1 - s : s;
            if (step(&b, &dirs[d], B, t)) return tpuc_err(err, errlen, "out of memory"), -1;
            if (ys[d]) ys[d][t] = dirs[d].h;
        }

    /* Y batch-first, Q [B, T, D H]: step t's row is h_t of each direction side by side */
    if (outs[0] >= 0) {
        int64_t r3[3] = {B, 1, D * H};
        for (int64_t t = 0; t < T; t++) {
            int hs[2] = {ys[0][t], D == 2 ? ys[1][t] : -1};
            int ht = hs[0];
            if (D == 2) TRY(ht = concat1(&b, hs, 2));
            TRY(ys[0][t] = reshape(&b, ht, 3, r3, -1));
        }
        int q = concat1(&b, ys[0], (int)T);
        for (int d = 0; d < D; d++) free(ys[d]);
        TRY(q);
        int chain[2], nc = 0;
        int s = layout ? -1 : torch_y_chain(g, outs[0], T, B, D, H, chain, &nc);
        if (s >= 0) {
            /* torch reads Y back as S [T, B, D H] = Q^T: each Transpose [1, 0, 2] of S becomes
               a view of Q, and S itself (for a next recurrent layer) a Transpose of Q, which
               that layer looks through; Shape nodes (a next layer's h0) read S's shape; no
               copy of Y is made */
            static const int p102[3] = {1, 0, 2};
            int r[TPUC_MAX_IO * 4], rnn = 0;
            int c = readers(g, s, r, TPUC_MAX_IO * 4);
            int ok = c <= TPUC_MAX_IO * 4 && !g->t[s].is_output;
            for (int k = 0; ok && k < c; k++) {
                const tpuc_node_t *m = &g->n[r[k]];
                if (rnn_reads_x(g, r[k], s)) rnn = 1;
                else if (!(m->op == TPUC_OP_TRANSPOSE && m->in[0] == s && has_perm(m, 3, p102)) &&
                         m->op != TPUC_OP_SHAPE)
                    ok = 0;
            }
            if (ok) {
                for (int k = 0; k < nc; k++) g->n[chain[k]].op = TPUC_OP_DEAD;
                int64_t qd[3] = {B, T, D * H};
                for (int k = 0; k < c; k++)
                    if (g->n[r[k]].op == TPUC_OP_TRANSPOSE) TRY(make_view(&b, r[k], q, 3, qd));
                static const int64_t pm[3] = {1, 0, 2};
                if (rnn) {
                    TRY(transpose(&b, q, 3, pm, s));
                } else {
                    /* read by Shape nodes only (torch's h0 of a next layer): its shape */
                    g->t[s].ndim = 3;
                    g->t[s].dims[0] = T; g->t[s].dims[1] = B; g->t[s].dims[2] = D * H;
                }
                outs[0] = -1;
            }
        }
        if (outs[0] >= 0) {
            /* ONNX's Y: layout 0 [T, D, B, H] = Q [B, T, D, H] transposed; layout 1 a view */
            int64_t q4[4] = {B, T, D, H};
            static const int64_t p1203[4] = {1, 2, 0, 3};
            if (layout) {
                TRY(reshape(&b, q, 4, q4, outs[0]));
            } else {
                TRY(q = reshape(&b, q, 4, q4, -1));
                TRY(transpose(&b, q, 4, p1203, outs[0]));
            }
        }
    }
    /* Y_h, Y_c: [D, B, H] (layout 1: [B, D, H]) */
    for (int o = 1; o <= 2; o++) {
        if (o >= nouts || outs[o] < 0) continue;
        int st[2];
        for (int d = 0; d < D; d++) st[d] = o == 1 ? dirs[d].h : dirs[d].c;
        if (!layout) {
            int k = state_gathers(&b, outs[o], D, B, H, st);
            TRY(k);
            if (k) continue;
        }
        int sc = st[0];
        if (D == 2) TRY(sc = concat1(&b, st, 2));
        if (layout || D == 1) {
            int64_t r3[3] = {layout ? B : 1, layout ? D : B, H};
            TRY(reshape(&b, sc, 3, r3, outs[o]));
        } else {
            static const int64_t p[3] = {1, 0, 2};
            int64_t r3[3] = {B, D, H};
            TRY(sc = reshape(&b, sc, 3, r3, -1));
            TRY(transpose(&b, sc, 3, p, outs[o]));
        }
    }
#undef TRY
    for (int k = 0; k < 2; k++)
        for (int d = 0; d < 2; d++) free(st0[k][d]);
    return 0;
}
