/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 2, continued (fold.c calls this first on an Einsum node): Einsum rewritten as the
   operators attention already lowers (issue 32; docs/compiler.md "Einsum").

   torchvision's MaxViT writes its attention as einsum("B G H I D, B G H J D -> B G H I J")
   and einsum("B G H I J, B G H J D -> B G H I D"): batched matmuls. A two-operand equation
   in which every label is either
     - a batch label: in the output and in the first operand (and in the second, or the
       second is broadcast along it),
     - M: the first operand's last label in the output that the second lacks,
     - N: the one label of the output only the second operand has,
     - K: the one label both operands have and the output lacks (summed),
   becomes Transpose(A) to [batch.., M, K], Transpose(B) to [its batch labels.., K, N], a
   MatMul (of two activations: fold_attn.c's MATMUL2; of a constant B: a Gemm against it, the
   Transpose folded into the constant) and a Transpose of [batch.., M, N] to the output's
   order, each Transpose left out where its perm is the identity. When only the second
   operand is an activation the two swap (out^T = B^T A^T, the final Transpose taking the
   swap back). A one-operand equation that only permutes its labels ("ij->ji") is one
   Transpose. Anything else (an ellipsis, a label twice in one operand (a diagonal), a label
   summed within one operand, an outer product, more than one contracted label, three or
   more operands) is refused with one line naming the equation.

   The MatMul sums over K in the MXU's fp32 accumulation, with its operands rounded to bf16
   as every MatMul's (docs/numerics.md): the rewrite adds no rounding of its own. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"

#define EQ_MAX 3 /* operands + the output */

typedef struct {
    char lab[EQ_MAX][TPUC_MAX_DIMS + 1]; /* labels of operand 0, 1 and of the output */
    int nlab[EQ_MAX];
    int nops;                            /* 1 or 2 */
} eq_t;

/* Parses the equation (spaces ignored; implicit output: the labels seen once, sorted).
   0, or -1 with why in msg. */
static int parse_eq(const char *s, eq_t *q, char *msg, size_t ml)
{
    memset(q, 0, sizeof *q);
    int cur = 0, out = 0;
    for (const char *p = s; *p; p++) {
        if (*p == ' ') continue;
        if (*p == '.') return snprintf(msg, ml, "an ellipsis ('...') is not supported"), -1;
        if (*p == ',') {
            if (out || ++cur >= 2) return snprintf(msg, ml, "more than two operands are not supported"), -1;
            continue;
        }
        if (p[0] == '-' && p[1] == '>') {
            if (out) return snprintf(msg, ml, "two '->'"), -1;
            out = 1;
            p++;
            continue;
        }
        if (!isalpha((unsigned char)*p)) return snprintf(msg, ml, "character '%c' is not a label (a-z, A-Z)", *p), -1;
        int o = out ? 2 : cur;
        if (q->nlab[o] >= TPUC_MAX_DIMS) return snprintf(msg, ml, "more than %d labels in one term", TPUC_MAX_DIMS), -1;
        if (strchr(q->lab[o], *p))
            return snprintf(msg, ml, "label '%c' twice in one term (a diagonal or a repeated output label) is not supported", *p), -1;
        q->lab[o][q->nlab[o]++] = *p;
    }
    q->nops = cur + 1;
    if (!out) { /* implicit: the labels that occur once, in alphabetical order */
        for (int c = 'A'; c <= 'z'; c++) {
            int k = 0;
            for (int o = 0; o < q->nops; o++) k += strchr(q->lab[o], c) != NULL;
            if (k == 1 && isalpha(c)) {
                if (q->nlab[2] >= TPUC_MAX_DIMS) return snprintf(msg, ml, "more than %d output labels", TPUC_MAX_DIMS), -1;
                q->lab[2][q->nlab[2]++] = (char)c;
            }
        }
    }
    for (int j = 0; j < q->nlab[2]; j++) {
        int c = q->lab[2][j];
        if (!strchr(q->lab[0], c) && !(q->nops == 2 && strchr(q->lab[1], c)))
            return snprintf(msg, ml, "output label '%c' is in no operand", c), -1;
    }
    return 0;
}

static int pos(const char *s, int c) { const char *p = strchr(s, c); return p && c ? (int)(p - s) : -1; }

int tpuc_add_transpose(tpuc_graph_t *g, size_t at, int in, int out, const int *perm, int r,
                       const char *base, const char *what)
{
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/%s", base, what);
    int ti = out >= 0 ? out : tpuc_add_tensor(g, nm);
    if (ti < 0 || tpuc_insert_node_at(g, at)) return -1;
    tpuc_node_t *t = &g->n[at];
    tpuc_attr_t *a = calloc(1, sizeof *a);
    t->name = tpuc_strdup(nm);
    t->op_type = tpuc_strdup("Transpose(Einsum)");
    if (!a || !t->name || !t->op_type) { free(a); return -1; }
    a->name = tpuc_strdup("perm");
    a->type = 7;
    a->tensor = -1;
    a->ints = malloc(sizeof *a->ints * (size_t)r);
    if (!a->name || !a->ints) { free(a->name); free(a->ints); free(a); return -1; }
    for (int j = 0; j < r; j++) a->ints[j] = perm[j];
    a->nints = (size_t)r;
    t->attrs = a;
    t->nattrs = 1;
    t->op = TPUC_OP_TRANSPOSE;
    t->version = 13;
    t->nin = 1; t->in[0] = in;
    t->nout = 1; t->out[0] = ti;
    g->t[ti].producer = (int)at;
    if (out < 0) g->t[ti].nuses = 1;
    return ti;
}

static int is_identity(const int *p, int r)
{
    for (int j = 0; j < r; j++)
        if (p[j] != j) return 0;
    return 1;
}

/* The node's attributes freed (the equation is read by then). */
static void drop_attrs(tpuc_node_t *n)
{
    for (size_t i = 0; i < n->nattrs; i++) {
        free(n->attrs[i].name); free(n->attrs[i].s);
        free(n->attrs[i].ints); free(n->attrs[i].floats);
    }
    free(n->attrs);
    n->attrs = NULL;
    n->nattrs = 0;
}

#define EQ_ERR(...) do { char e_[160]; snprintf(e_, sizeof e_, __VA_ARGS__); \
    NODE_ERR(n, "Einsum equation '%.80s': %s; supported: a permutation of one operand, or two operands as a batched matmul (batch labels, one M, one N, one contracted K)", eqs, e_); } while (0)

int tpuc_fold_einsum(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    tpuc_node_t *n = &g->n[ni];
    const tpuc_attr_t *ea = tpuc_attr(n, "equation");
    for (size_t k = 0; k < n->nattrs; k++)
        if (strcmp(n->attrs[k].name, "equation") != 0) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[k].name);
    if (!ea || !ea->s) NODE_ERR(n, "the 'equation' attribute is missing");
    char eqs[128];
    snprintf(eqs, sizeof eqs, "%s", ea->s);
    eq_t q;
    char msg[160];
    if (parse_eq(ea->s, &q, msg, sizeof msg)) EQ_ERR("%s", msg);
    if (q.nops != n->nin) EQ_ERR("%d operands in the equation, %d inputs", q.nops, n->nin);
    int op[2] = {n->in[0], q.nops == 2 ? n->in[1] : -1};
    for (int o = 0; o < q.nops; o++) {
        if (op[o] < 0) EQ_ERR("input %d is missing", o);
        if (g->t[op[o]].ndim != q.nlab[o])
            EQ_ERR("operand %d has %d labels, its input '%s' %d dimensions", o, q.nlab[o], g->t[op[o]].name, g->t[op[o]].ndim);
    }
    char base[220];
    snprintf(base, sizeof base, "%.200s", n->name);
    const int ro = q.nlab[2];
    int perm[TPUC_MAX_DIMS];
    if (q.nops == 1) {
        if (ro != q.nlab[0]) EQ_ERR("a label summed within one operand is not supported");
        for (int j = 0; j < ro; j++) perm[j] = pos(q.lab[0], q.lab[2][j]);
        drop_attrs(n);
        n->op = TPUC_OP_TRANSPOSE;
        n->version = 13;
        /* the node itself becomes the Transpose: its perm as an attribute */
        tpuc_attr_t *a = calloc(1, sizeof *a);
        if (!a || !(a->name = tpuc_strdup("perm")) || !(a->ints = malloc(sizeof *a->ints * (size_t)(ro ? ro : 1)))) {
            if (a) free(a->name);
            free(a);
            return tpuc_err(err, errlen, "out of memory"), -1;
        }
        a->type = 7;
        a->tensor = -1;
        for (int j = 0; j < ro; j++) a->ints[j] = perm[j];
        a->nints = (size_t)ro;
        n->attrs = a;
        n->nattrs = 1;
        return 0;
    }
    /* the first operand must be an activation: swap when only the second is one */
    int sw = g->t[op[0]].is_const && !g->t[op[1]].is_const;
    if (g->t[op[0]].is_const && g->t[op[1]].is_const) EQ_ERR("both operands are constants");
    const char *la = q.lab[sw], *lb = q.lab[!sw], *lo = q.lab[2];
    const tpuc_tensor_t *ta = &g->t[op[sw]], *tb = &g->t[op[!sw]];
    for (int j = 0; j < (int)strlen(la); j++) {
        int pb = pos(lb, la[j]);
        if (pb >= 0 && ta->dims[j] != tb->dims[pb])
            EQ_ERR("label '%c' is %lld in one operand and %lld in the other", la[j], (long long)ta->dims[j], (long long)tb->dims[pb]);
        if (pb < 0 && pos(lo, la[j]) < 0) EQ_ERR("label '%c' is summed within one operand", la[j]);
    }
    int m = -1, nn = -1, kk = -1, nk = 0, nb = 0;
    for (int j = 0; j < (int)strlen(lb); j++) {
        int c = lb[j];
        if (pos(la, c) < 0 && pos(lo, c) < 0) EQ_ERR("label '%c' is summed within one operand", c);
        if (pos(la, c) >= 0 && pos(lo, c) < 0) { kk = c; nk++; }
        if (pos(la, c) < 0) {
            if (nn >= 0) EQ_ERR("labels '%c' and '%c' both only in the %s operand", nn, c, sw ? "first" : "second");
            nn = c;
        }
    }
    if (nk != 1) EQ_ERR("%d contracted labels (1 is supported)", nk);
    if (nn < 0) EQ_ERR("no output label of the %s operand alone", sw ? "first" : "second");
    for (int j = ro - 1; j >= 0 && m < 0; j--)
        if (pos(lb, lo[j]) < 0 && lo[j] != nn) m = lo[j];
    if (m < 0) EQ_ERR("no output label of the %s operand alone", sw ? "second" : "first");
    char lead[TPUC_MAX_DIMS + 1] = {0}, leadb[TPUC_MAX_DIMS + 1] = {0};
    int nl = 0;
    for (int j = 0; j < ro; j++)
        if (lo[j] != m && lo[j] != nn) lead[nl++] = lo[j];
    for (int j = 0; j < nl; j++)
        if (pos(lb, lead[j]) >= 0) leadb[nb++] = lead[j];
    if (nb && strcmp(leadb, lead + nl - nb) != 0)
        EQ_ERR("the batch labels of the operand with fewer are not the last of the others ('%s' of '%s'): they would not broadcast", leadb, lead);
    /* operand perms: [lead.., M, K] and [leadb.., K, N] */
    int pa[TPUC_MAX_DIMS], pb[TPUC_MAX_DIMS], po[TPUC_MAX_DIMS];
    char mm[TPUC_MAX_DIMS + 1] = {0};
    for (int j = 0; j < nl; j++) pa[j] = pos(la, lead[j]);
    pa[nl] = pos(la, m); pa[nl + 1] = pos(la, kk);
    for (int j = 0; j < nb; j++) pb[j] = pos(lb, leadb[j]);
    pb[nb] = pos(lb, kk); pb[nb + 1] = pos(lb, nn);
    memcpy(mm, lead, (size_t)nl);
    mm[nl] = (char)m; mm[nl + 1] = (char)nn;
    for (int j = 0; j < ro; j++) po[j] = pos(mm, lo[j]);
    /* rewrite: transposes before (at ni, moving the Einsum up), the MatMul, one after */
    int ia = op[sw], ib = op[!sw];
    const int yo = n->out[0];
    size_t at = ni;
    if (!is_identity(pa, nl + 2)) {
        if ((ia = tpuc_add_transpose(g, at++, ia, -1, pa, nl + 2, base, sw ? "B_t" : "A_t")) < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    }
    if (!is_identity(pb, nb + 2)) {
        if ((ib = tpuc_add_transpose(g, at++, ib, -1, pb, nb + 2, base, sw ? "A_t" : "B_t")) < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    }
    n = &g->n[at];
    if (!is_identity(po, ro)) {
        char nm[300];
        snprintf(nm, sizeof nm, "%.200s/matmul", base);
        int tm = tpuc_add_tensor(g, nm);
        if (tm < 0) return tpuc_err(err, errlen, "out of memory"), -1;
        g->t[tm].producer = (int)at;
        n->out[0] = tm;
        g->t[tm].nuses = 1;
        if (tpuc_add_transpose(g, at + 1, tm, yo, po, ro, base, "out_t") < 0) return tpuc_err(err, errlen, "out of memory"), -1;
        n = &g->n[at];
    }
    drop_attrs(n);
    n->op = TPUC_OP_MATMUL;
    n->version = 13;
    n->in[0] = ia;
    n->in[1] = ib;
    return 0;
}
