/* SPDX-License-Identifier: Apache-2.0 */
/* Training pass: folded graph -> one step program per core (docs/training.md).

   The model is a chain input -> [Flatten/Reshape] -> Gemm/MatMul (+ bias, + ReLU) -> ... ->
   Gemm -> Softmax (or logits with opts.logits). A step, on each core with its b rows:
     forward   per layer: matmul per (N-tile of the outputs, K-tile), fp32 bias from the
               master row, ReLU into UB (bf16), the input saved to host memory (bf16, with a
               1.0 column for the bias); the last layer: softmax into ACC (fp32).
     loss      -mean log p[label] over the global batch: vop mul by the one-hot rows, vred
               sum per row, vop log, vred sum, all-reduce, times -1/B.
     backward  dZ = (P - onehot) / B (bf16); per layer from the last:
               dX = dY W^T (the old bf16 weights through `lw transpose`), times the ReLU mask
               of the layer's input (min(x * 2^127, 1): 1 where x > 0, else 0);
               dW = X^T dY and db = 1^T dY in one: X^T (with its row of ones) made on the chip
               by `lw transpose` of the saved input and a matmul with the identity, then a
               matmul per (row chunk, N-tile, batch tile) with the saved dY as weights;
               the chunk is all-reduced over the board and the optimizer updates the fp32
               master in place, writing back the master, the state and the bf16 copy.
   Every buffer is tile-major as in tile.c's PLAIN layers: N-tile t of row m at base + t*b + m. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpuc/train.h"
#include "tpuc_internal.h"

#define ALIGN64(x) (((x) + 63u) & ~(uint64_t)63u)

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static uint64_t umin(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t umax(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* ACC constant rows (fp32, the same value in every lane), in this order from row 0 */
enum { K_ONE, K_BIG, K_INVB, K_NEGINVB, K_LR, K_MU, K_B1, K_OMB1, K_B2, K_OMB2, K_EPS, K_ZERO, K_INVP,
       K_COUNT }; /* K_INVP: 1 / the pixels a GlobalAveragePool averages */
/* Adam's per-step rows after the constants: beta1^t, beta2^t, step size, rsqrt(1 - beta2^t) */
enum { A_B1T = K_COUNT, A_B2T, A_SS, A_RS, A_END };

/* The step program's writer: the emitters of emit.c (each instruction typed, one call each),
   their hook recording the phase and layer of every instruction in t->phase / t->layer_of. */
typedef struct {
    tpuc_ectx_t ec;
    int oom;              /* the phase and layer records: out of memory */
    unsigned n;
    unsigned slots, slot; /* WMEM tiles, the next one to use */
    tpuc_train_t *t;      /* the phase and layer of each instruction are recorded here */
    int phase;
    int layer;            /* the layer being emitted, TPUC_TRAIN_NO_LAYER outside them */
    size_t capphase;
    uint8_t wrote[TPUC_TRAIN_MAX_CONV]; /* backward: a stage's dps has a reader's gradient */
    uint64_t cj0, cjn;    /* emit_update/emit_accum: the chunk's first column and columns (0: all) */
} em_t;

const char *tpuc_train_phase_name(int ph)
{
    static const char *const nm[] = {"forward", "loss", "backward", "all-reduce + update"};
    return ph >= 0 && ph < TPUC_PH_COUNT ? nm[ph] : "?";
}

/* the emitters' hook: the instruction just written is in e->phase and e->layer */
static void record(void *arg)
{
    em_t *e = arg;
    tpuc_train_t *t = e->t;
    if (t->nphase == e->capphase) {
        size_t cap = e->capphase ? e->capphase * 2 : 256;
        uint8_t *np = realloc(t->phase, cap);
        if (np) t->phase = np;
        uint8_t *nl = np ? realloc(t->layer_of, cap) : NULL;
        if (!nl) { e->oom = 1; return; }
        t->layer_of = nl;
        e->capphase = cap;
    }
    t->layer_of[t->nphase] = (uint8_t)e->layer;
    t->phase[t->nphase++] = (uint8_t)e->phase;
}

#define U(x) ((unsigned long long)(x))
enum { UB = TPU_MEM_UB, ACC = TPU_MEM_ACC, WMEM = TPU_MEM_WMEM };

/* the VPU's operand forms: a op b; a op row brow of ACC in every row (bcast: the constants
   K_*, a bias row); op a */
static void vop2(em_t *e, unsigned op, unsigned am, uint64_t a, unsigned bm, uint64_t b,
                 unsigned dm, uint64_t d, uint64_t rows)
{
    tpuc_e_vop(&e->ec, op, am, a, (int)bm, b, 0, dm, d, rows);
}
static void vopb(em_t *e, unsigned op, unsigned am, uint64_t a, uint64_t brow, unsigned dm,
                 uint64_t d, uint64_t rows)
{
    tpuc_e_vop(&e->ec, op, am, a, ACC, brow, 1, dm, d, rows);
}
static void vop1(em_t *e, unsigned op, unsigned am, uint64_t a, unsigned dm, uint64_t d,
                 uint64_t rows)
{
    tpuc_e_vop(&e->ec, op, am, a, -1, 0, 0, dm, d, rows);
}

/* a DMA either way (blk moves a block in or out the same way) */
enum { DMA_IN, DMA_OUT };
static void dma(em_t *e, int dir, unsigned mem, uint64_t row, uint64_t rows, uint64_t cols,
                uint64_t addr, uint64_t stride)
{
    if (dir == DMA_IN)
        tpuc_e_dma_in(&e->ec, mem, row, rows, cols, addr, stride);
    else
        tpuc_e_dma_out(&e->ec, mem, row, rows, cols, addr, stride);
}

/* One WMEM tile: rows x cols of a row-major bf16 host matrix (stride bytes), rows past
   `rows` filled with -0 so that a partial tile is the identity; returns its first row. */
static uint64_t wtile(em_t *e, const tpuc_train_t *t, uint64_t addr, uint64_t rows, uint64_t cols,
                      uint64_t stride)
{
    uint64_t w = (uint64_t)e->slot * e->n;
    e->slot = (e->slot + 1) % e->slots;
    tpuc_e_dma_in(&e->ec, WMEM, w, rows, cols, addr, stride);
    if (rows < e->n)
        tpuc_e_dma_in(&e->ec, WMEM, w + rows, e->n - rows, 1, t->negzero_addr, 0);
    return w;
}

/* Each repeated unit of the step (an image's q chunk, a dense layer's dW chunk) starts the
   WMEM ring at slot 0, so the units differ only in their addresses and the loop pass rolls
   them into one nest (a ring running on across units starts each at another slot). */
static void ring_restart(em_t *e) { e->slot = 0; }

static int refuse(const tpuc_node_t *n, char *err, size_t errlen, const char *what)
{
    tpuc_err(err, errlen, "node '%s' (%s): %s", n->name, n->op_type, what);
    return -1;
}

/* The single live node that reads tensor ti, -1 if none; -2 if several. */
static int consumer(const tpuc_graph_t *g, int ti)
{
    int found = -1;
    for (size_t i = 0; i < g->nn; i++) {
        const tpuc_node_t *n = &g->n[i];
        if (n->op == TPUC_OP_DEAD) continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] == ti) {
                if (found >= 0 && found != (int)i) return -2;
                found = (int)i;
            }
    }
    return found;
}

/* One Conv stage from Conv node ni (its input the output of stage src, -1 the model's input):
   Conv [-> Relu] [-> MaxPool [-> Relu]] while each tensor has that one reader; *out becomes
   the stage's output tensor. */
static int conv_stage(const tpuc_graph_t *g, tpuc_train_t *t, int ni, int src, int *out,
                      char *err, size_t errlen)
{
    const tpuc_node_t *n = &g->n[ni];
    const tpuc_tensor_t *x = &g->t[n->in[0]], *w = &g->t[n->in[1]];
    if (t->nconv >= TPUC_TRAIN_MAX_CONV || t->nlayers >= TPUC_TRAIN_MAX_LAYERS - 1)
        return refuse(n, err, errlen, "training mode: at most 192 Conv stages and 200 layers");
    if ((x->ndim != 4 && x->ndim != 3) || w->ndim != x->ndim || !w->is_const || !w->f)
        return refuse(n, err, errlen, "training mode: a 1-D or 2-D Conv with float32 weights is supported");
    if (tpuc_attr_int(n, "group", 1) != 1 || n->depthwise)
        return refuse(n, err, errlen, "training mode: group 1 only");
    if (n->fuse_act && n->fuse_act != TPUC_OP_RELU)
        return refuse(n, err, errlen, "training mode: the activation after it must be Relu");
    tpuc_tconv_t *c = &t->conv[t->nconv++];
    c->layer = t->nlayers;
    c->src = src;
    tpuc_tlayer_t *L = &t->layer[t->nlayers++];
    L->conv = t->nconv;
    L->node = ni;
    snprintf(L->name, sizeof L->name, "%s", n->name);
    c->cin = x->dims[1];
    c->h = x->ndim == 4 ? x->dims[2] : 1;
    c->w = x->dims[x->ndim - 1];
    c->cout = w->dims[0]; c->kh = n->conv_k[0]; c->kw = n->conv_k[1];
    c->pt = n->conv_p[0]; c->pl = n->conv_p[1]; c->pb = n->conv_p[2]; c->pr = n->conv_p[3];
    c->sh = n->conv_s[0]; c->sw = n->conv_s[1];
    c->hp = c->h + c->pt + c->pb; c->wp = c->w + c->pl + c->pr;
    c->ho = c->hp < c->kh ? 0 : (c->hp - c->kh) / c->sh + 1;
    c->wo = c->wp < c->kw ? 0 : (c->wp - c->kw) / c->sw + 1;
    if (w->dims[1] != c->cin || c->ho < 1 || c->wo < 1)
        return refuse(n, err, errlen, "training mode: the weights do not match the input");
    c->relu_before = n->fuse_act == TPUC_OP_RELU;
    L->k = c->kh * c->kw * c->cin;
    L->o = c->cout;
    L->has_bias = n->nin > 2 && n->in[2] >= 0;
    L->kp = (uint64_t)L->k + (uint64_t)L->has_bias;
    int cur = n->out[0];
    c->pkh = c->pkw = c->psh = c->psw = 1;
    const int conv_node = ni;
    for (;;) {
        ni = g->t[cur].is_output ? -1 : consumer(g, cur);
        if (ni < 0) break;
        n = &g->n[ni];
        const int pooled = c->pkh * c->pkw > 1;
        if (n->op == TPUC_OP_RELU) {
            if (pooled ? c->relu_after : c->relu_before)
                return refuse(n, err, errlen, "training mode: a second Relu");
            if (pooled) c->relu_after = 1; else c->relu_before = 1;
        } else if (n->op == TPUC_OP_MAXPOOL && !pooled) {
            int kh = n->conv_k[0], kw = n->conv_k[1];
            const int padded = n->conv_p[0] || n->conv_p[1] || n->conv_p[2] || n->conv_p[3];
            if (kh < 1 || kw < 1 || n->conv_s[0] < 1 || n->conv_s[1] < 1 ||
                n->conv_s[0] > kh || n->conv_s[1] > kw || tpuc_attr_int(n, "ceil_mode", 0))
                return refuse(n, err, errlen, "training mode: a MaxPool of strides at most its size, "
                              "without ceil_mode, is supported");
            if ((padded || n->conv_s[0] != kh || n->conv_s[1] != kw) && !c->relu_before)
                return refuse(n, err, errlen, "training mode: a padded or overlapping MaxPool must "
                              "follow a Relu");
            if (n->fuse_act && n->fuse_act != TPUC_OP_RELU)
                return refuse(n, err, errlen, "training mode: the activation after it must be Relu");
            c->pkh = kh; c->pkw = kw;
            c->psh = n->conv_s[0]; c->psw = n->conv_s[1];
            c->ppt = n->conv_p[0]; c->ppl = n->conv_p[1]; c->ppb = n->conv_p[2]; c->ppr = n->conv_p[3];
            c->relu_after = n->fuse_act == TPUC_OP_RELU;
        } else if (n->op == TPUC_OP_AVGPOOL && n->conv_k[0] == 1 && n->conv_k[1] == 1 &&
                   n->conv_s[0] == 1 && n->conv_s[1] == 1 && !n->conv_p[0] && !n->conv_p[1] &&
                   !n->conv_p[2] && !n->conv_p[3]) {
            /* a 1 x 1 average of stride 1 is the identity (torch's adaptive_avg_pool2d to
               the size it already has, as VGG's classifier head at 224 x 224 exports it) */
        } else {
            break;
        }
        cur = n->out[0];
    }
    n = &g->n[conv_node];
    if (c->ho + c->ppt + c->ppb < c->pkh || c->wo + c->ppl + c->ppr < c->pkw)
        return refuse(n, err, errlen, "training mode: the pool is larger than its input");
    c->ph = (c->ho + c->ppt + c->ppb - c->pkh) / c->psh + 1;
    c->pw = (c->wo + c->ppl + c->ppr - c->pkw) / c->psw + 1;
    if (c->sh * c->psh != c->sw * c->psw && c->ph > 1)
        return refuse(n, err, errlen, "training mode: the conv's strides times the pool's "
                      "must be the same in both directions (or one pooled row)");
    c->q = (c->ph - 1) * c->wp + c->pw;
    c->z = (c->kh - 1) * c->wp + c->kw - 1;
    /* the windows' first and last input pixels, relative to the image's first */
    const int64_t qs = c->sw * c->psw;
    c->pre = c->sh * c->ppt * c->wp + c->sw * c->ppl;
    const int64_t last = qs * (c->q - 1) + (c->sh * (c->pkh - 1 - c->ppt) + c->kh - 1) * c->wp +
                         c->sw * (c->pkw - 1 - c->ppl) + c->kw - 1;
    c->img = c->pre + c->hp * c->wp + (last + 1 > c->hp * c->wp ? last + 1 - c->hp * c->wp : 0);
    *out = cur;
    return 0;
}

/* The embedding lookup at the input: a Gather of a [V, D] float table by the token ids,
   transposed to channels-first for the Conv1d that reads it (fold folds that Transpose). */
static int embed_layer(const tpuc_graph_t *g, tpuc_train_t *t, int *cur, char *err, size_t errlen)
{
    int ni = consumer(g, *cur);
    const tpuc_node_t *n = &g->n[ni];
    const tpuc_tensor_t *tab = &g->t[n->in[0]], *x = &g->t[*cur];
    if (!n->embed || tab->ndim != 2 || !tab->f || x->ndim != 2)
        return refuse(n, err, errlen, "training mode: an embedding lookup of a float32 [V, D] "
                      "table by [batch, length] token ids is supported");
    int nc = consumer(g, n->out[0]);
    if (nc < 0 || (n->embed == 2 && g->n[nc].op != TPUC_OP_CONV) ||
        (n->embed != 2 && g->n[nc].op != TPUC_OP_FLATTEN && g->n[nc].op != TPUC_OP_RESHAPE))
        return refuse(n, err, errlen, "training mode: the embedding must feed a Conv1d (through "
                      "a Transpose to channels-first) or a Flatten to [batch, length x dim]");
    tpuc_tlayer_t *L = &t->layer[t->nlayers++];
    L->embed = 1;
    L->node = ni;
    snprintf(L->name, sizeof L->name, "%s", n->name);
    L->k = tab->dims[0];
    L->o = tab->dims[1];
    L->kp = (uint64_t)L->k;
    L->rows = x->dims[0] * x->dims[1];
    t->vocab = L->k;
    *cur = n->out[0];
    return 0;
}

/* The Conv stages from the Conv that reads *cur (the model's input or the embedding's output):
   every live node in the graph's order, Convs (each a stage reading the input or a stage's
   output), residual Adds (one of the two a stage's raw conv output read by nothing else,
   which takes the Add and its Relu), up to the GlobalAveragePool or Flatten the dense layers
   read (*cur becomes its output). Then the stages in a topological order (a residual's other
   stage first), with their readers. */
static int conv_graph(const tpuc_graph_t *g, tpuc_train_t *t, int *cur, char *err, size_t errlen)
{
    const int in_t = *cur, e0 = t->nlayers; /* the embedding is layer 0 */
    int sout[TPUC_TRAIN_MAX_CONV];
    int end = -1;
    t->feed = -1;
    for (size_t i = 0; i < g->nn && end < 0; i++) {
        const tpuc_node_t *n = &g->n[i];
        if (n->op == TPUC_OP_DEAD) continue;
        int si[TPUC_MAX_IO], reads = 0, reads_in = 0;
        for (int k = 0; k < n->nin; k++) {
            si[k] = -1;
            if (n->in[k] < 0) continue;
            if (n->in[k] == in_t) reads_in = 1;
            for (int s = 0; s < t->nconv; s++)
                if (sout[s] == n->in[k]) si[k] = s;
            if (si[k] >= 0) reads = 1;
        }
        if (!reads && !reads_in) continue;
        if (n->op == TPUC_OP_CONV && (reads_in || si[0] >= 0) && (n->nin < 2 || si[1] < 0)) {
            if (reads_in && t->nconv)
                for (int s = 0; s < t->nconv; s++)
                    if (t->conv[s].src < 0)
                        return refuse(n, err, errlen, "training mode: one Conv may read the model's input");
            const int s = t->nconv;
            if (conv_stage(g, t, (int)i, reads_in ? -1 : si[0], &sout[s], err, errlen)) return -1;
            continue;
        }
        if (n->op == TPUC_OP_ADD && n->nin == 2 && si[0] >= 0 && si[1] >= 0 && si[0] != si[1]) {
            /* the stage that takes the Add: a raw conv output read by the Add alone, the later
               one if both are */
            int r = -1;
            for (int k = 0; k < 2; k++) {
                const tpuc_tconv_t *c = &t->conv[si[k]];
                if (c->pkh * c->pkw == 1 && !c->relu_before && !c->relu_after && !c->res &&
                    g->t[n->in[k]].nuses == 1 && !g->t[n->in[k]].is_output && (r < 0 || si[k] > r))
                    r = si[k];
            }
            if (r < 0)
                return refuse(n, err, errlen, "training mode: a residual Add needs a Conv without "
                              "Relu or pool, read by the Add alone, on one side");
            const int o = si[0] == r ? si[1] : si[0];
            tpuc_tconv_t *c = &t->conv[r];
            const tpuc_tconv_t *oc = &t->conv[o];
            if (oc->cout != c->cout || oc->ph != c->ph || oc->pw != c->pw)
                return refuse(n, err, errlen, "training mode: the residual Add's inputs differ in "
                              "shape (broadcasting is not supported in training)");
            if (n->fuse_act && n->fuse_act != TPUC_OP_RELU)
                return refuse(n, err, errlen, "training mode: the activation after it must be Relu");
            c->res = o + 1;
            c->relu_after = n->fuse_act == TPUC_OP_RELU;
            int out = n->out[0];
            for (int ni; !c->relu_after && !g->t[out].is_output && (ni = consumer(g, out)) >= 0 &&
                         g->n[ni].op == TPUC_OP_RELU;) {
                c->relu_after = 1;
                out = g->n[ni].out[0];
            }
            sout[r] = out;
            continue;
        }
        if ((n->op == TPUC_OP_GAP || n->op == TPUC_OP_FLATTEN) && si[0] >= 0 && !reads_in) {
            tpuc_tconv_t *c = &t->conv[si[0]];
            if (g->t[n->in[0]].nuses != 1)
                return refuse(n, err, errlen, "training mode: the dense layers' input may have no "
                              "other reader");
            c->dense = 1;
            t->feed = si[0];
            int out = n->out[0];
            if (n->op == TPUC_OP_GAP) {
                c->gap = 1;
                const int ni = consumer(g, out);
                if (ni < 0 || (g->n[ni].op != TPUC_OP_FLATTEN && g->n[ni].op != TPUC_OP_RESHAPE))
                    return refuse(n, err, errlen, "training mode: a Flatten must follow the "
                                  "GlobalAveragePool");
                if (g->n[ni].op == TPUC_OP_FLATTEN && tpuc_attr_int(&g->n[ni], "axis", 1) != 1)
                    return refuse(&g->n[ni], err, errlen, "training mode: Flatten axis 1 only");
                out = g->n[ni].out[0];
            } else if (tpuc_attr_int(n, "axis", 1) != 1) {
                return refuse(n, err, errlen, "training mode: Flatten axis 1 only");
            }
            end = out;
            continue;
        }
        return refuse(n, err, errlen, "not supported in training mode after a Conv (Conv stages "
                      "with Relu, MaxPool and residual Adds, then GlobalAveragePool or Flatten are)");
    }
    if (end < 0) {
        tpuc_err(err, errlen, "training mode needs the Conv stages to end in a Flatten or a "
                 "GlobalAveragePool and Flatten before the dense layers");
        return -1;
    }
    for (int s = 0; s < t->nconv; s++) {
        const tpuc_tconv_t *c = &t->conv[s];
        if (g->t[sout[s]].nuses == 0 && !c->dense)
            return refuse(&g->n[t->layer[c->layer].node], err, errlen, "training mode: its output "
                          "is not used");
        if (c->src >= 0) {
            const tpuc_tconv_t *p = &t->conv[c->src];
            if (p->cout != c->cin || p->ph != c->h || p->pw != c->w)
                return refuse(&g->n[t->layer[c->layer].node], err, errlen,
                              "training mode: the Conv's input is not the stage before it");
        }
    }
    /* a topological order: the lowest-numbered stage whose input and residual are ready */
    const int C = t->nconv;
    int ord[TPUC_TRAIN_MAX_CONV] = {0}, pos[TPUC_TRAIN_MAX_CONV] = {0}, done[TPUC_TRAIN_MAX_CONV] = {0};
    for (int j = 0; j < C; j++) {
        int pick = -1;
        for (int s = 0; s < C && pick < 0; s++)
            if (!done[s] && (t->conv[s].src < 0 || done[t->conv[s].src]) &&
                (!t->conv[s].res || done[t->conv[s].res - 1]))
                pick = s;
        if (pick < 0) {
            tpuc_err(err, errlen, "training mode: the Conv stages form a cycle");
            return -1;
        }
        done[pick] = 1;
        ord[j] = pick;
        pos[pick] = j;
    }
    tpuc_tconv_t oc[TPUC_TRAIN_MAX_CONV];
    tpuc_tlayer_t ol[TPUC_TRAIN_MAX_CONV];
    memcpy(oc, t->conv, (size_t)C * sizeof *oc);
    for (int s = 0; s < C; s++) ol[s] = t->layer[e0 + s];
    for (int j = 0; j < C; j++) {
        tpuc_tconv_t *c = &t->conv[j];
        *c = oc[ord[j]];
        c->layer = e0 + j;
        if (c->src >= 0) c->src = pos[c->src];
        if (c->res) c->res = pos[c->res - 1] + 1;
        t->layer[e0 + j] = ol[ord[j]];
        t->layer[e0 + j].conv = j + 1;
    }
    t->feed = pos[t->feed];
    for (int j = 0; j < C; j++) {
        tpuc_tconv_t *c = &t->conv[j];
        if (c->src >= 0) {
            tpuc_tconv_t *p = &t->conv[c->src];
            if (p->nouts >= 4)
                return refuse(&g->n[t->layer[c->layer].node], err, errlen, "training mode: a "
                              "stage's output may be read by at most 4 Convs");
            p->outs[p->nouts++] = j;
            p->writers++;
        }
        if (c->res) {
            t->conv[c->res - 1].writers++;
            if (c->res - 1 > j) {
                tpuc_err(err, errlen, "training mode: internal: a residual after its reader");
                return -1;
            }
        }
    }
    if (t->conv[0].src >= 0) {
        tpuc_err(err, errlen, "training mode: internal: the first stage does not read the input");
        return -1;
    }
    *cur = end;
    return 0;
}

/* Walks the chain and fills t->layer[]. */
static int analyse(const tpuc_graph_t *g, const tpuc_train_opts_t *o, tpuc_train_t *t,
                   char *err, size_t errlen)
{
    if (g->ninputs != 1 || g->noutputs != 1) {
        tpuc_err(err, errlen, "training mode needs one input and one output (the model has %d "
                 "and %d)", g->ninputs, g->noutputs);
        return -1;
    }
    /* what fold removed for inference but training would have to run */
    if (g->folded_bn)
        return refuse(&g->n[g->folded_bn - 1], err, errlen, "not supported in training mode "
                      "(batch statistics, their gradient and the running averages are not "
                      "compiled; fold would train the Conv/Gemm without it): export the model in "
                      "eval mode, where torch.onnx.export folds it into the Conv, to train that");
    if (g->removed_dropout)
        return refuse(&g->n[g->removed_dropout - 1], err, errlen, "not supported in training "
                      "mode (its random mask is not compiled; fold would train without it): "
                      "export the model in eval mode, where torch.onnx.export leaves it out");
    int cur = g->inputs[0];
    const tpuc_tensor_t *x = &g->t[cur];
    t->feed = -1;
    t->gap_p = 1;
    int64_t b = x->dims[0];
    t->in_elems = tpuc_tensor_elems(x) / (b ? b : 1);
    int softmax = 0;
    int ci0 = consumer(g, cur);
    if (x->dtype != TPUC_F32 && !(ci0 >= 0 && g->n[ci0].op == TPUC_OP_GATHER)) {
        tpuc_err(err, errlen, "input '%s': training mode needs a float32 input (or token ids "
                 "read by an embedding)", x->name);
        return -1;
    }
    if (ci0 >= 0 && g->n[ci0].op == TPUC_OP_GATHER && embed_layer(g, t, &cur, err, errlen))
        return -1;
    {
        int ci = consumer(g, cur);
        if (ci >= 0 && g->n[ci].op == TPUC_OP_CONV && conv_graph(g, t, &cur, err, errlen)) return -1;
    }
    while (!g->t[cur].is_output) {
        int ni = consumer(g, cur);
        if (ni < 0) {
            tpuc_err(err, errlen, "tensor '%s' %s: training mode needs a chain of layers",
                     g->t[cur].name, ni == -2 ? "feeds several nodes" : "feeds no node");
            return -1;
        }
        const tpuc_node_t *n = &g->n[ni];
        if (softmax) return refuse(n, err, errlen, "training mode: nothing may follow the Softmax");
        const tpuc_tensor_t *y = &g->t[n->out[0]];
        switch (n->op) {
        case TPUC_OP_FLATTEN:
        case TPUC_OP_RESHAPE:
            if (y->ndim != 2 || y->dims[0] != b)
                return refuse(n, err, errlen, "training mode: only a reshape to [batch, features] "
                              "is supported");
            break;
        case TPUC_OP_GEMM:
        case TPUC_OP_MATMUL: {
            const tpuc_tensor_t *a = &g->t[n->in[0]], *w = &g->t[n->in[1]];
            if (a->ndim != 2 || w->ndim != 2 || !w->is_const || !w->f)
                return refuse(n, err, errlen, "training mode: a 2-D activation times a float32 "
                              "initializer is supported");
            if (n->fuse_act && n->fuse_act != TPUC_OP_RELU)
                return refuse(n, err, errlen, "training mode: the activation after it must be Relu "
                              "(Sigmoid, Tanh, GELU, Clip are not supported in training)");
            if (t->nlayers >= TPUC_TRAIN_MAX_LAYERS)
                return refuse(n, err, errlen, "training mode: more than 24 layers");
            if (strstr(g->t[n->in[1]].name, "_scaled"))
                return refuse(n, err, errlen, "training mode: alpha/beta other than 1 are not supported");
            tpuc_tlayer_t *L = &t->layer[t->nlayers++];
            L->node = ni;
            snprintf(L->name, sizeof L->name, "%s", n->name);
            L->k = w->dims[0];
            L->o = w->dims[1];
            L->rows = b;
            L->has_bias = n->op == TPUC_OP_GEMM && n->nin > 2 && n->in[2] >= 0;
            if (L->has_bias && tpuc_tensor_elems(&g->t[n->in[2]]) != L->o)
                return refuse(n, err, errlen, "training mode: the bias must have one value per output");
            L->relu = n->fuse_act == TPUC_OP_RELU;
            L->kp = (uint64_t)L->k + (uint64_t)L->has_bias;
            if (t->nlayers >= 2 && t->layer[t->nlayers - 2].conv) {
                const tpuc_tconv_t *c = &t->conv[t->feed];
                L->perm_c = c->cout;
                L->perm_p = c->gap ? 1 : c->ph * c->pw;
            }
            break;
        }
        case TPUC_OP_RELU:
            if (!t->nlayers || t->layer[t->nlayers - 1].relu ||
                g->t[n->in[0]].producer != t->layer[t->nlayers - 1].node)
                return refuse(n, err, errlen, "training mode: a Relu must follow a Gemm/MatMul");
            t->layer[t->nlayers - 1].relu = 1;
            break;
        case TPUC_OP_SOFTMAX: {
            int64_t ax = tpuc_attr_int(n, "axis", -1);
            if (y->ndim != 2 || (ax != -1 && ax != 1))
                return refuse(n, err, errlen, "training mode: Softmax over the last axis of "
                              "[batch, classes] only");
            if (!t->nlayers || g->t[n->in[0]].producer != t->layer[t->nlayers - 1].node)
                return refuse(n, err, errlen, "training mode: the Softmax must follow the last Gemm");
            softmax = 1;
            break;
        }
        default:
            return refuse(n, err, errlen, "not supported in training mode (an embedding, Conv "
                          "stages, then Gemm, MatMul, Relu, Flatten, Reshape and a final Softmax are)");
        }
        cur = n->out[0];
    }
    if (!t->nlayers) {
        tpuc_err(err, errlen, "training mode: the model has no Gemm/MatMul layer to train");
        return -1;
    }
    if (!softmax && !o->logits) {
        tpuc_err(err, errlen, "output '%s': training mode needs a final Softmax (the loss is "
                 "cross-entropy on its probabilities) or --logits", g->t[cur].name);
        return -1;
    }
    if (softmax && o->logits) {
        tpuc_err(err, errlen, "--logits: the model already ends in a Softmax");
        return -1;
    }
    tpuc_tlayer_t *last = &t->layer[t->nlayers - 1];
    if (last->conv || last->embed) {
        tpuc_err(err, errlen, "training mode: a Gemm/MatMul must follow the Conv");
        return -1;
    }
    if (last->relu) {
        tpuc_err(err, errlen, "node '%s': training mode: the last layer gives the logits, it "
                 "may not have a Relu", last->name);
        return -1;
    }
    for (int l = 0; l < t->nlayers; l++) {
        int64_t want = l ? t->layer[l - 1].o : t->in_elems;
        if (t->layer[l].conv || t->layer[l].embed) continue;
        if (l && t->layer[l - 1].embed) want = t->in_elems * t->layer[l - 1].o;
        if (l && t->layer[l - 1].conv) {
            const tpuc_tconv_t *c = &t->conv[t->feed];
            want = (c->gap ? 1 : c->ph * c->pw) * c->cout;
        }
        if (t->layer[l].k != want) {
            tpuc_err(err, errlen, "node '%s': %lld inputs, but the layer before gives %lld",
                     t->layer[l].name, (long long)t->layer[l].k, (long long)want);
            return -1;
        }
    }
    t->classes = last->o;
    return 0;
}


/* Move an r x O block of the master (RR of its rows; row-major from host ADDR, ES bytes an
   element) to or from on-chip rows from ROW. Packed: element j of the block in row j / N,
   lane j % N; a dma_in reads whole rows (up to N - 1 elements past the block, defined bytes
   of the image, so every lane of every row is defined), a dma_out writes the block only.
   Unpacked: N-tile nt in rows ROW + nt*r, r rows of min(N, O - nt*N) lanes, the host rows
   S elements apart (S = O but for a group of the master's columns: never packed). */
static void blk(em_t *e, int dir, unsigned mem, uint64_t row, uint64_t addr, uint64_t rr,
                uint64_t r, uint64_t O, uint64_t S, unsigned es, int pack)
{
    const uint64_t N = e->n;
    if (pack) {
        const uint64_t el = rr * O, full = el / N, rem = el % N;
        const int in = dir == DMA_IN;
        const uint64_t rows = full + (in && rem ? 1u : 0u);
        if (rows) dma(e, dir, mem, row, rows, N, addr, N * es);
        if (!in && rem) dma(e, dir, mem, row + full, 1, rem, addr + full * N * es, N * es);
        return;
    }
    for (uint64_t nt = 0; nt < cdiv(O, N); nt++)
        dma(e, dir, mem, row + nt * r, rr, umin(N, O - nt * N), addr + nt * N * es, S * es);
}

/* After the chunk's gradient is in ACC rows DW (r rows of the master from row k0, N-tile
   major): all-reduce it over the board, then the optimizer on the fp32 master, its state and
   the bf16 copy (staged in UB rows WB). When O is not a multiple of N the gradient is first
   packed (to host memory and back, N elements a row: ceil(r O / N) rows instead of
   r ceil(O / N)), so the all-reduce, the optimizer and the master's DMA move no padding
   (the tutorial's Dense(10) at N = 128: 12.8x fewer rows). The master and its state are
   row-major in host memory, so the packed rows are their bytes in order. GSRC (micro-steps'
   update part): the gradient is read from that host sum instead (then cleared), not from ACC. */
static void emit_update(em_t *e, const tpuc_train_t *t, const tpuc_tlayer_t *ly, uint64_t k0,
                uint64_t r, uint64_t DW, uint64_t WB, unsigned nstate, int adam, uint64_t gsrc)
{
    const unsigned N = e->n;
    const tpuc_train_opts_t *o = &t->opts;
    /* the chunk's columns: e->cj0 .. + e->cjn of the master's S (a conv's dW in groups of
       N-tiles), or all of them */
    const uint64_t S = (uint64_t)ly->o, O = e->cjn ? e->cjn : S, NT = cdiv(O, N);
    const uint64_t P = cdiv(r * O, N);
    const int pack = O == S && P < r * NT;
    const uint64_t n = pack ? P : r * NT;
    const uint64_t WM = DW + n, S1 = WM + n, S2 = S1 + n, TM = S1 + (uint64_t)nstate * n;
    const uint64_t off = (k0 * S + e->cj0) * 4;
    if (gsrc) {
        tpuc_e_comment(&e->ec,
                       "the micro-steps' gradient sum of rows %llu..%llu, then that sum cleared",
                       U(k0), U(k0 + r - 1));
        blk(e, DMA_IN, ACC, DW, gsrc + off, r, r, O, S, 4, pack);
        tpuc_e_dma_in(&e->ec, ACC, TM, n, N, t->zrow_addr, 0);
        blk(e, DMA_OUT, ACC, TM, gsrc + off, r, r, O, S, 4, pack);
    } else if (pack) {
        tpuc_e_comment(&e->ec, "the gradient packed: %llu rows of %u lanes, through host memory",
                       U(P), N);
        blk(e, DMA_OUT, ACC, DW, t->pack_addr, r, r, O, S, 4, 0);
        blk(e, DMA_IN, ACC, DW, t->pack_addr, r, r, O, S, 4, 1);
    }
    if (t->cores > 1) tpuc_e_allreduce(&e->ec, ACC, DW, n);
    if (o->save_grads) blk(e, DMA_OUT, ACC, DW, ly->grad + off, r, r, O, S, 4, pack);
    blk(e, DMA_IN, ACC, WM, ly->w_master + off, r, r, O, S, 4, pack);
    if (nstate >= 1) blk(e, DMA_IN, ACC, S1, ly->s1 + off, r, r, O, S, 4, pack);
    if (nstate >= 2) blk(e, DMA_IN, ACC, S2, ly->s2 + off, r, r, O, S, 4, pack);
    /* the optimizer's n rows of ACC: a op b, a op the constant row K, op a */
#define V2(op, A, B, D) vop2(e, TPU_VOP_##op, ACC, A, ACC, B, ACC, D, n)
#define VB(op, A, K, D) vopb(e, TPU_VOP_##op, ACC, A, K, ACC, D, n)
#define V1(op, A, D) vop1(e, TPU_VOP_##op, ACC, A, ACC, D, n)
    if (adam) {
        tpuc_e_comment(&e->ec, "Adam: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; "
                       "w -= ss m / (sqrt(v) rs + eps)");
        VB(MUL, S1, K_B1, S1);
        VB(MUL, DW, K_OMB1, TM);
        V2(ADD, S1, TM, S1);
        V2(MUL, DW, DW, TM);
        VB(MUL, TM, K_OMB2, TM);
        VB(MUL, S2, K_B2, S2);
        V2(ADD, S2, TM, S2);
        V1(RSQRT, S2, TM);
        V1(RECIP, TM, TM);
        VB(MUL, TM, A_RS, TM);
        VB(ADD, TM, K_EPS, TM);
        V1(RECIP, TM, TM);
        V2(MUL, S1, TM, TM);
        VB(MUL, TM, A_SS, TM);
        V2(SUB, WM, TM, WM);
    } else if (nstate == 1) {
        tpuc_e_comment(&e->ec, "SGD with momentum: v = mu v + g; w -= lr v");
        VB(MUL, S1, K_MU, S1);
        V2(ADD, S1, DW, S1);
        VB(MUL, S1, K_LR, TM);
        V2(SUB, WM, TM, WM);
    } else {
        tpuc_e_comment(&e->ec, "SGD: w -= lr g");
        VB(MUL, DW, K_LR, TM);
        V2(SUB, WM, TM, WM);
    }
#undef V2
#undef VB
#undef V1
    vop1(e, TPU_VOP_CVT, ACC, WM, UB, WB, n);
    uint64_t kb = ly->k > (int64_t)k0 ? umin(r, (uint64_t)ly->k - k0) : 0; /* bf16 rows */
    blk(e, DMA_OUT, ACC, WM, ly->w_master + off, r, r, O, S, 4, pack);
    if (nstate >= 1) blk(e, DMA_OUT, ACC, S1, ly->s1 + off, r, r, O, S, 4, pack);
    if (nstate >= 2) blk(e, DMA_OUT, ACC, S2, ly->s2 + off, r, r, O, S, 4, pack);
    if (kb) blk(e, DMA_OUT, UB, WB, ly->w_bf16 + (k0 * S + e->cj0) * 2, kb, r, O, S, 2, pack);
}

/* Micro-steps: the chunk's gradient (as emit_update finds it in ACC) added to the layer's
   running sum in host memory, sum + g in micro-step order (packed as emit_update packs). */
static void emit_accum(em_t *e, const tpuc_train_t *t, const tpuc_tlayer_t *ly, uint64_t k0,
                       uint64_t r, uint64_t DW)
{
    const unsigned N = e->n;
    const uint64_t S = (uint64_t)ly->o, O = e->cjn ? e->cjn : S, NT = cdiv(O, N), P = cdiv(r * O, N);
    const int pack = O == S && P < r * NT;
    const uint64_t n = pack ? P : r * NT, SUM = DW + n, off = ly->gacc + (k0 * S + e->cj0) * 4;
    tpuc_e_comment(&e->ec, "the micro-step's gradient of rows %llu..%llu added to the step's sum",
                   U(k0), U(k0 + r - 1));
    if (pack) {
        blk(e, DMA_OUT, ACC, DW, t->pack_addr, r, r, O, S, 4, 0);
        blk(e, DMA_IN, ACC, DW, t->pack_addr, r, r, O, S, 4, 1);
    }
    blk(e, DMA_IN, ACC, SUM, off, r, r, O, S, 4, pack);
    vop2(e, TPU_VOP_ADD, ACC, SUM, ACC, DW, ACC, DW, n);
    blk(e, DMA_OUT, ACC, DW, off, r, r, O, S, 4, pack);
}

static void emit_grad(em_t *e, const tpuc_train_t *t, const tpuc_tlayer_t *ly, uint64_t k0,
                      uint64_t r, uint64_t DW, uint64_t WB, unsigned nstate, int adam)
{
    if (t->micro > 1)
        emit_accum(e, t, ly, k0, r, DW);
    else
        emit_update(e, t, ly, k0, r, DW, WB, nstate, adam, 0);
}

/* Chunk k of stage c's q-space: [*q0, *q0 + *qn). When a chunk holds less than two pooled
   rows' q-space (qc < 2 wp), the chunks cover each pooled row's pw valid q rows only, in
   kk = ceil(pw / qc) chunks of L = ceil(pw / kk) rows (the last one may take a few of the
   garbage rows after the row; lengths balanced instead where kk L would reach the next row):
   the wp - pw q rows between two pooled rows are windows no pool reads and are not computed,
   and every row's chunks start at the same places in it, so they repeat from row to row (the
   loop pass rolls them). Else qc rows at a time over the whole q-space. The dW chains run over
   images, chunks, windows and the q rows of a chunk in this order (docs/training.md). 0 when
   there is no chunk k. */
static int q_chunk(const tpuc_tconv_t *c, uint64_t k, uint64_t *q0, uint64_t *qn)
{
    const uint64_t qc = c->qc, wp = (uint64_t)c->wp, pw = (uint64_t)c->pw, ph = (uint64_t)c->ph;
    if (qc >= wp || pw >= wp) {
        *q0 = k * qc;
        if (*q0 >= (uint64_t)c->q) return 0;
        *qn = umin(qc, (uint64_t)c->q - *q0);
        return 1;
    }
    const uint64_t kk = cdiv(pw, qc), row = k / kk, j = k % kk, L = cdiv(pw, kk);
    if (row >= ph) return 0;
    if (kk * L <= wp) {
        /* kk chunks of L rows: the last one of a row may take a few of the garbage rows after
           it (never the next row's), so that every chunk is alike; the q-space's last row
           ends at q */
        *q0 = row * wp + j * L;
        *qn = umin(L, (uint64_t)c->q - *q0);
        return 1;
    }
    const uint64_t base = pw / kk, extra = pw % kk;
    *q0 = row * wp + j * base + umin(j, extra);
    *qn = base + (j < extra ? 1u : 0u);
    return 1;
}

/* ---- a Conv stage (tpuc_tconv_t): its regions for one q chunk ---- */
typedef struct {
    uint64_t A;          /* UB: KH input regions of qc rows */
    uint64_t PB;         /* UB: NT*qc bf16 (the pooled activation; in backward a window's G) */
    uint64_t T, S, AV;   /* UB: NT*qc each, the routing masks (0/1, exact in bf16) */
    uint64_t XT;         /* UB: KK + 1 rows, X^T of a q tile and the ones row */
    uint64_t CW;         /* ACC: pkh*pkw windows x NT*qc */
    uint64_t M;          /* ACC: NT*qc, the window maximum */
    uint64_t DQ;         /* ACC: NT*qc, the gradient at the pool's output, q-space */
    uint64_t RS;         /* UB: NT*(pc + z), a chunk of r-space (dx) */
    uint64_t DXB;        /* UB: NTi*pc, the chunk of dx as bf16 (for an embedding) */
    uint64_t DXC;        /* ACC: NTi*pc, a chunk of dx */
    uint64_t DXT;        /* ACC: NTi*pc, the gradient already there (a stage with several readers) */
    uint64_t BIASR, XTACC, DWC, IDENT;
} cvr_t;

/* The valid pooled pixels of q rows [q0, q0+qc), one run per pooled image row: calls
   fn(ctx, q, p, rows) with q the first q row, p its pooled pixel index. */
typedef void (*qrun_fn)(em_t *e, const void *ctx, uint64_t q, uint64_t p, uint64_t rows);
static void q_runs(em_t *e, const tpuc_tconv_t *c, uint64_t q0, uint64_t qc, qrun_fn fn, const void *ctx)
{
    for (int64_t ph = 0; ph < c->ph; ph++) {
        uint64_t lo = umax((uint64_t)(ph * c->wp), q0), hi = umin((uint64_t)(ph * c->wp + c->pw), q0 + qc);
        if (lo < hi) fn(e, ctx, lo, (uint64_t)(ph * c->pw) + lo - (uint64_t)(ph * c->wp), hi - lo);
    }
}

typedef struct {
    const tpuc_train_t *t;
    const tpuc_tconv_t *c;
    const cvr_t *r;
    uint64_t i, q0, qc;
    int u, v;
    uint64_t nt;         /* run_gap: the output tile */
} qctx_t;

/* forward of a residual stage: its residual's rows (bf16, stage res - 1's compact output) into
   q-space T */
static void run_res_in(em_t *e, const void *vp, uint64_t q, uint64_t p, uint64_t rows)
{
    const qctx_t *x = vp;
    const tpuc_tconv_t *c = x->c, *rc = &x->t->conv[c->res - 1];
    const unsigned N = e->n;
    const uint64_t O = (uint64_t)c->cout;
    for (uint64_t nt = 0; nt < cdiv(O, N); nt++)
        tpuc_e_dma_in(&e->ec, UB, x->r->T + nt * x->qc + (q - x->q0), rows, umin(N, O - nt * N),
                      rc->compact + ((x->i * (uint64_t)(c->ph * c->pw) + p) * O + nt * N) * 2,
                      O * 2);
}

/* backward of a residual stage: the gradient before its ReLU (fp32, q-space DQ) to stage
   res - 1's output gradient, added to what its other readers wrote there (through CW) */
static void run_res_grad(em_t *e, const void *vp, uint64_t q, uint64_t p, uint64_t rows)
{
    const qctx_t *x = vp;
    const tpuc_tconv_t *c = x->c, *rc = &x->t->conv[c->res - 1];
    const unsigned N = e->n;
    const uint64_t C = (uint64_t)c->cout;
    const int acc = e->wrote[c->res - 1];
    for (uint64_t nt = 0; nt < cdiv(C, N); nt++) {
        const uint64_t a = rc->dps + ((x->i * (uint64_t)(c->ph * c->pw) + p) * C + nt * N) * 4;
        const uint64_t d = x->r->DQ + nt * x->qc + q - x->q0, tmp = x->r->CW + nt * x->qc + q - x->q0;
        const uint64_t cols = umin(N, C - nt * N);
        if (acc) {
            tpuc_e_dma_in(&e->ec, ACC, tmp, rows, cols, a, C * 4);
            vop2(e, TPU_VOP_ADD, ACC, tmp, ACC, d, ACC, tmp, rows);
        }
        tpuc_e_dma_out(&e->ec, ACC, acc ? tmp : d, rows, cols, a, C * 4);
    }
}

/* backward of the averaged stage: output tile x->nt's gradient row (XTACC) on each pixel */
static void run_gap(em_t *e, const void *vp, uint64_t q, uint64_t p, uint64_t rows)
{
    const qctx_t *x = vp;
    const uint64_t d = x->r->DQ + x->nt * x->qc + q - x->q0;
    (void)p;
    vopb(e, TPU_VOP_ADD, ACC, d, x->r->XTACC, ACC, d, rows);
}

/* Image i's first padded pixel in the stage's saved input (after its margin). */
static uint64_t img_addr(const tpuc_tconv_t *c, const tpuc_tlayer_t *ly, uint64_t i)
{
    return ly->xsave + (i * (uint64_t)c->img + (uint64_t)c->pre) * (uint64_t)c->cin * 2;
}

/* The input pixel of q row 0 for window (u, v) and kernel row kh, relative to the image's
   first padded pixel (negative into the margin before it for a padded pool). */
static int64_t win_off(const tpuc_tconv_t *c, int u, int v, int64_t kh)
{
    return (c->sh * (u - c->ppt) + kh) * c->wp + c->sw * (v - c->ppl);
}

/* A padded or overlapping pool's window (u, v) reaches conv outputs outside the image on some
   pooled rows and columns: those values become +0 (the pool's padding: ReLU outputs are at
   least +0, so a maximum does not change, and a +0 routes no gradient through the ReLU). */
static void zero_outside(em_t *e, const tpuc_tconv_t *c, uint64_t base, uint64_t NT, uint64_t q0,
                         uint64_t qc, int u, int v)
{
    if (!c->ppt && !c->ppl && !c->ppb && !c->ppr) return; /* floor mode: every window inside */
    for (int64_t ph = 0; ph < c->ph; ph++) {
        const int64_t row = c->psh * ph - c->ppt + u;
        const int rbad = row < 0 || row >= c->ho;
        for (int64_t pw = 0; pw < c->pw; pw++) {
            const int64_t col = c->psw * pw - c->ppl + v;
            if (!rbad && col >= 0 && col < c->wo) continue;
            /* a run of bad columns (the whole row when the row is bad) */
            int64_t pe = pw + 1;
            while (pe < c->pw && (rbad || c->psw * pe - c->ppl + v < 0 || c->psw * pe - c->ppl + v >= c->wo)) pe++;
            const uint64_t lo = umax((uint64_t)(ph * c->wp + pw), q0), hi = umin((uint64_t)(ph * c->wp + pe), q0 + qc);
            for (uint64_t nt = 0; lo < hi && nt < NT; nt++)
                vopb(e, TPU_VOP_MUL, ACC, base + nt * qc + lo - q0, K_ZERO, ACC,
                     base + nt * qc + lo - q0, hi - lo);
            pw = pe - 1;
        }
    }
}

/* The conv of stage c for image i, q rows [q0, q0+qc), every window into CW, then M = their
   maximum (before a ReLU after the pool). Kernel row kh reads KW*Cin contiguous input values
   per q row, in lane tiles of N (KT of them): UB rows A + (kh*KT + t)*qc. */
static void conv_fwd(em_t *e, const tpuc_train_t *t, const tpuc_tconv_t *c, const cvr_t *r,
                     uint64_t i, uint64_t q0, uint64_t qc)
{
    const tpuc_tlayer_t *ly = &t->layer[c->layer];
    const unsigned N = e->n;
    const uint64_t NT = cdiv((uint64_t)c->cout, N), kc = (uint64_t)(c->kw * c->cin), KT = cdiv(kc, N);
    const uint64_t X = img_addr(c, ly, i);
    const uint64_t O = (uint64_t)c->cout, qs = (uint64_t)(c->sw * c->psw);
    for (int u = 0; u < c->pkh; u++)
        for (int v = 0; v < c->pkw; v++) {
            const uint64_t CWw = r->CW + (uint64_t)(u * c->pkw + v) * NT * qc;
            ring_restart(e);
            for (int64_t kh = 0; kh < c->kh; kh++)
                for (uint64_t kt = 0; kt < KT; kt++)
                    tpuc_e_dma_in(&e->ec, UB, r->A + ((uint64_t)kh * KT + kt) * qc, qc,
                                  umin(N, kc - kt * N),
                                  X + (uint64_t)(win_off(c, u, v, kh) + (int64_t)(qs * q0)) * (uint64_t)c->cin * 2 + kt * N * 2,
                                  qs * (uint64_t)c->cin * 2);
            for (uint64_t nt = 0; nt < NT; nt++) {
                for (int64_t kh = 0; kh < c->kh; kh++)
                    for (uint64_t kt = 0; kt < KT; kt++) {
                        uint64_t w = wtile(e, t, ly->w_bf16 + (((uint64_t)kh * kc + kt * N) * O + nt * N) * 2,
                                           umin(N, kc - kt * N), umin(N, O - nt * N), O * 2);
                        tpuc_e_lw(&e->ec, w);
                        tpuc_e_mm(&e->ec, r->A + ((uint64_t)kh * KT + kt) * qc, CWw + nt * qc, qc,
                                  kh || kt);
                    }
                if (ly->has_bias)
                    vopb(e, TPU_VOP_ADD, ACC, CWw + nt * qc, r->BIASR + nt, ACC, CWw + nt * qc, qc);
            }
            if (c->relu_before)
                vop1(e, TPU_VOP_RELU, ACC, CWw, ACC, CWw, NT * qc);
            zero_outside(e, c, CWw, NT, q0, qc, u, v);
        }
    const uint64_t n = NT * qc;
    const int nw = c->pkh * c->pkw;
    if (nw == 1) {
        vopb(e, TPU_VOP_ADD, ACC, r->CW, K_ZERO, ACC, r->M, n);
    } else {
        vop2(e, TPU_VOP_MAX, ACC, r->CW, ACC, r->CW + n, ACC, r->M, n);
        for (int w = 2; w < nw; w++)
            vop2(e, TPU_VOP_MAX, ACC, r->M, ACC, r->CW + (uint64_t)w * n, ACC, r->M, n);
    }
    if (c->res) {
        tpuc_e_comment(&e->ec, "the residual: stage %d's output (bf16) added before the ReLU",
                       c->res - 1);
        tpuc_e_dma_in(&e->ec, UB, r->T, n, 1, t->zero_addr, 0);
        const qctx_t x = {t, c, r, i, q0, qc, 0, 0, 0};
        q_runs(e, c, q0, qc, run_res_in, &x);
        vop2(e, TPU_VOP_ADD, ACC, r->M, UB, r->T, ACC, r->M, n);
    }
}

/* forward: the pooled activation (UB, bf16) to the padded input of every stage that reads
   it, to the dense layer's saved input in (p, c) order, and (compact) to a residual reader or
   the average */
static void run_out(em_t *e, const void *vp, uint64_t q, uint64_t p, uint64_t rows)
{
    const qctx_t *x = vp;
    const tpuc_tconv_t *c = x->c;
    const unsigned N = e->n;
    const uint64_t C = (uint64_t)c->cout;
    uint64_t dst[6];
    int nd = 0;
    for (int k = 0; k < c->nouts; k++) {
        const tpuc_tconv_t *nc = &x->t->conv[c->outs[k]];
        const uint64_t pix = ((p / (uint64_t)c->pw) + (uint64_t)nc->pt) * (uint64_t)nc->wp +
                             p % (uint64_t)c->pw + (uint64_t)nc->pl;
        dst[nd++] = img_addr(nc, &x->t->layer[nc->layer], x->i) + pix * C * 2;
    }
    if (c->dense && !c->gap) {
        const tpuc_tlayer_t *d = &x->t->layer[x->t->nconv + (x->t->layer[0].embed ? 1 : 0)];
        dst[nd++] = d->xsave + (x->i * d->kp + p * C) * 2;
    }
    if (c->compact) dst[nd++] = c->compact + (x->i * (uint64_t)(c->ph * c->pw) + p) * C * 2;
    for (int k = 0; k < nd; k++)
        for (uint64_t nt = 0; nt < cdiv(C, N); nt++)
            tpuc_e_dma_out(&e->ec, UB, x->r->PB + nt * x->qc + (q - x->q0), rows,
                           umin(N, C - nt * N), dst[k] + nt * N * 2, C * 2);
}

/* backward: the gradient at the pooled output (fp32, host, (p, c) order) into q-space DQ */
static void run_in(em_t *e, const void *vp, uint64_t q, uint64_t p, uint64_t rows)
{
    const qctx_t *x = vp;
    const tpuc_tconv_t *c = x->c;
    const unsigned N = e->n;
    const uint64_t C = (uint64_t)c->cout, K1 = (uint64_t)(c->ph * c->pw) * C;
    for (uint64_t nt = 0; nt < cdiv(C, N); nt++)
        tpuc_e_dma_in(&e->ec, ACC, x->r->DQ + nt * x->qc + (q - x->q0), rows, umin(N, C - nt * N),
                      c->dps + (x->i * K1 + p * C + nt * N) * 4, C * 4);
}

/* backward (dx): window (u, v)'s gradient G (UB, bf16) scattered into r-space, row
   z + pkw*q + u*wp + v, through host memory (a strided DMA per pooled image row) */
static void run_rs(em_t *e, const void *vp, uint64_t q, uint64_t p, uint64_t rows)
{
    const qctx_t *x = vp;
    const tpuc_tconv_t *c = x->c;
    const unsigned N = e->n;
    const uint64_t C = (uint64_t)c->cout, qs = (uint64_t)(c->sw * c->psw);
    (void)p;
    const uint64_t row = (uint64_t)c->z + qs * q + (uint64_t)(c->sh * x->u) * (uint64_t)c->wp +
                         (uint64_t)(c->sw * x->v);
    for (uint64_t nt = 0; nt < cdiv(C, N); nt++)
        tpuc_e_dma_out(&e->ec, UB, x->r->PB + nt * x->qc + (q - x->q0), rows, umin(N, C - nt * N),
                       c->rsp + (row * C + nt * N) * 2, qs * C * 2);
}

/* Where window (u, v)'s routed gradient G of image i, q row q0 is kept: one q chunk at a time
   (dcw) when the conv's whole dW fits ACC, else all of them (gsave), read again by every
   later chunk of dW rows. */
static uint64_t gaddr(const tpuc_tconv_t *c, uint64_t i, int u, int v, uint64_t q0)
{
    if (!c->gsave) return c->dcw;
    const uint64_t w = (uint64_t)(u * c->pkw + v), nw = (uint64_t)(c->pkh * c->pkw);
    return c->gsave + ((i * nw + w) * (uint64_t)c->q + q0) * (uint64_t)c->cout * 2;
}

/* The rows [c0, c1) of a conv's master (whole X^T tiles: kernel row kh, lanes k0 .. k0+N of
   its KW*Cin) and, in the last chunk, the bias row. */
typedef struct { uint64_t c0, c1; int bias; uint64_t t0, t1; } dwck_t; /* t0 .. t1: its N-tiles */

/* dW rows of chunk ck += X^T G for image i, q rows [q0, q0+qc), window (u, v): X^T of the
   strided input rows by the transposed load (those of the chunk), then per N-tile of the
   outputs a matmul with G's tile as the weights. Every element's chain runs over images,
   windows and q tiles in the same order whatever the chunking. */
static void conv_dw(em_t *e, const tpuc_train_t *t, const tpuc_tconv_t *c, const cvr_t *r,
                    uint64_t i, uint64_t q0, uint64_t qc, int u, int v, const dwck_t *ck, int *first)
{
    const tpuc_tlayer_t *ly = &t->layer[c->layer];
    const unsigned N = e->n;
    const uint64_t C = (uint64_t)c->cout, NT = cdiv(C, N);
    const uint64_t kc = (uint64_t)(c->kw * c->cin), qs = (uint64_t)(c->sw * c->psw);
    const uint64_t X = img_addr(c, ly, i);
    ring_restart(e);
    const uint64_t G = gaddr(c, i, u, v, q0), nr = ck->c1 - ck->c0 + (uint64_t)ck->bias;
    for (uint64_t j = 0; j < qc; j += N) {
        const uint64_t rows = umin(N, qc - j);
        for (int64_t kh = 0; kh < c->kh; kh++)
            for (uint64_t k0 = 0; k0 < kc; k0 += N) {
                const uint64_t kn = umin(N, kc - k0), row = (uint64_t)kh * kc + k0;
                if (row < ck->c0 || row >= ck->c1) continue;
                uint64_t w = wtile(e, t, X + (uint64_t)(win_off(c, u, v, kh) + (int64_t)(qs * (q0 + j))) * (uint64_t)c->cin * 2 + k0 * 2,
                                   rows, kn, qs * (uint64_t)c->cin * 2);
                tpuc_e_lw_transpose(&e->ec, w);
                tpuc_e_mm(&e->ec, r->IDENT, r->XTACC, kn, 0);
                vop1(e, TPU_VOP_CVT, ACC, r->XTACC, UB, r->XT + row - ck->c0, kn);
            }
        for (uint64_t nt = ck->t0; nt < umin(ck->t1, NT); nt++) {
            uint64_t w = wtile(e, t, G + (j * C + nt * N) * 2, rows, umin(N, C - nt * N), C * 2);
            tpuc_e_lw(&e->ec, w);
            tpuc_e_mm(&e->ec, r->XT, r->DWC + (nt - ck->t0) * nr, nr, !first[nt]);
            first[nt] = 0;
        }
    }
}

/* backward of image i, q rows [q0, q0+qc): route the pooled gradient to the first maximum
   of each window (PyTorch's rule: windows scanned row by row, the first of equal values
   wins), through the ReLU before the pool, accumulate dW = X^T G (and db) into DWC, and
   (dx) scatter G into r-space. */
static void conv_bwd(em_t *e, const tpuc_train_t *t, const tpuc_tconv_t *c, const cvr_t *r,
                     uint64_t i, uint64_t q0, uint64_t qc, const dwck_t *ck, int *first)
{
    const unsigned N = e->n;
    const uint64_t C = (uint64_t)c->cout, NT = cdiv(C, N), n = NT * qc;
    conv_fwd(e, t, c, r, i, q0, qc);
    tpuc_e_comment(&e->ec, "the pooled gradient in q-space (zero on the garbage rows)");
    tpuc_e_dma_in(&e->ec, ACC, r->DQ, n, 1, t->zero_addr, 0);
    qctx_t x = {t, c, r, i, q0, qc, 0, 0, 0};
    if (c->gap) {
        tpuc_e_comment(&e->ec, "the average's gradient (divided by the pixels) on every pixel");
        for (uint64_t nt = 0; nt < NT; nt++) {
            tpuc_e_dma_in(&e->ec, ACC, r->XTACC, 1, umin(N, C - nt * N),
                          c->gapg + (i * C + nt * N) * 4, 4);
            x.nt = nt;
            q_runs(e, c, q0, qc, run_gap, &x);
        }
    } else {
        q_runs(e, c, q0, qc, run_in, &x);
    }
    if (c->relu_after && !(c->dense && !c->gap)) {
        tpuc_e_comment(&e->ec,
                       "the ReLU after the pool: its mask max(min(m * 2^127, 1), 0), 0/1 in UB");
        vopb(e, TPU_VOP_MUL, ACC, r->M, K_BIG, UB, r->T, n);
        vopb(e, TPU_VOP_MAX, UB, r->T, K_ZERO, UB, r->T, n);
        vopb(e, TPU_VOP_MIN, UB, r->T, K_ONE, UB, r->T, n);
        vop2(e, TPU_VOP_MUL, ACC, r->DQ, UB, r->T, ACC, r->DQ, n);
    }
    vopb(e, TPU_VOP_MUL, ACC, r->DQ, K_ZERO, UB, r->AV, n);
    vopb(e, TPU_VOP_ADD, UB, r->AV, K_ONE, UB, r->AV, n);
    for (int u = 0; u < c->pkh; u++)
        for (int v = 0; v < c->pkw; v++) {
            const uint64_t CWw = r->CW + (uint64_t)(u * c->pkw + v) * n;
            if (c->res) {
                /* no pool: the one window is the conv's output (M also holds the residual) */
                vopb(e, TPU_VOP_ADD, UB, r->AV, K_ZERO, UB, r->S, n);
            } else {
                tpuc_e_comment(&e->ec, "window (%d, %d): selected where it equals the maximum "
                               "and no earlier one did", u, v);
                vop2(e, TPU_VOP_SUB, ACC, r->M, ACC, CWw, UB, r->T, n);
                vopb(e, TPU_VOP_MUL, UB, r->T, K_BIG, UB, r->T, n);
                vopb(e, TPU_VOP_MIN, UB, r->T, K_ONE, UB, r->T, n);
                vop2(e, TPU_VOP_MUL, UB, r->AV, UB, r->T, UB, r->S, n);
                vop2(e, TPU_VOP_SUB, UB, r->AV, UB, r->S, UB, r->S, n);
                vop2(e, TPU_VOP_SUB, UB, r->AV, UB, r->S, UB, r->AV, n);
            }
            if (c->relu_before) {
                vopb(e, TPU_VOP_MUL, ACC, CWw, K_BIG, UB, r->T, n);
                vopb(e, TPU_VOP_MIN, UB, r->T, K_ONE, UB, r->T, n);
                vop2(e, TPU_VOP_MUL, UB, r->S, UB, r->T, UB, r->S, n);
            }
            vop2(e, TPU_VOP_MUL, ACC, r->DQ, UB, r->S, UB, r->PB, n);
            const uint64_t G = gaddr(c, i, u, v, q0);
            for (uint64_t nt = 0; nt < NT; nt++)
                tpuc_e_dma_out(&e->ec, UB, r->PB + nt * qc, qc, umin(N, C - nt * N), G + nt * N * 2,
                               C * 2);
            if (c->dx) {
                x.u = u;
                x.v = v;
                q_runs(e, c, q0, qc, run_rs, &x);
            }
            conv_dw(e, t, c, r, i, q0, qc, u, v, ck, first);
        }
    if (c->res) {
        /* the residual's gradient: the gradient before the ReLU, as it is (fp32) */
        tpuc_e_comment(&e->ec, "the residual's gradient to stage %d's output%s", c->res - 1,
                       e->wrote[c->res - 1] ? ", added to its other readers'" : "");
        q_runs(e, c, q0, qc, run_res_grad, &x);
    }
}

/* dx of image i (its r-space gradient complete in host memory): for padded input rows
   [p0, p0+pc) of the image's interior rows, dX[p] = sum over kernel offsets (kh, kw), in
   that order, of the r-space rows p - (kh*wp + kw) times the transposed kernel tile
   W[kh, kw]^T (Cout x Cin), accumulated in ACC; the interior pixels go to the stage before
   (fp32, its pooled gradient) or to the embedding (bf16, its dY). */
static void conv_dx(em_t *e, const tpuc_train_t *t, const tpuc_tconv_t *c, const cvr_t *r,
                    uint64_t i)
{
    const tpuc_tlayer_t *ly = &t->layer[c->layer];
    const tpuc_tlayer_t *pv = c->src < 0 ? &t->layer[0] : NULL; /* the embedding */
    /* the stage before has other readers whose gradients are already there: add to them */
    const int acc = c->src >= 0 && (e->wrote[c->src] || (c->res && c->res - 1 == c->src));
    const unsigned N = e->n;
    ring_restart(e);
    const uint64_t CO = (uint64_t)c->cout, CI = (uint64_t)c->cin, NT = cdiv(CO, N), NTi = cdiv(CI, N);
    const uint64_t wp = (uint64_t)c->wp, Z = (uint64_t)c->z, pc = c->pc;
    const uint64_t lo = (uint64_t)c->pt * wp, hi = (uint64_t)(c->pt + c->h) * wp;
    tpuc_e_comment(&e->ec,
                   "dX of image %llu: the full correlation of its r-space gradient with the kernel",
                   U(i));
    for (uint64_t p0 = lo; p0 < hi; p0 += pc) {
        const uint64_t n = umin(pc, hi - p0);
        for (uint64_t nt = 0; nt < NT; nt++)
            tpuc_e_dma_in(&e->ec, UB, r->RS + nt * (pc + Z), n + Z, umin(N, CO - nt * N),
                          c->rsp + (p0 * CO + nt * N) * 2, CO * 2);
        for (uint64_t ct = 0; ct < NTi; ct++) {
            int firstacc = 1;
            for (int64_t kh = 0; kh < c->kh; kh++)
                for (int64_t kw = 0; kw < c->kw; kw++) {
                    const uint64_t off = (uint64_t)kh * wp + (uint64_t)kw;
                    for (uint64_t kt = 0; kt < NT; kt++) {
                        uint64_t w = wtile(e, t, ly->w_bf16 + ((((uint64_t)kh * (uint64_t)c->kw + (uint64_t)kw) * CI + ct * N) * CO + kt * N) * 2,
                                           umin(N, CI - ct * N), umin(N, CO - kt * N), CO * 2);
                        tpuc_e_lw_transpose(&e->ec, w);
                        tpuc_e_mm(&e->ec, r->RS + kt * (pc + Z) + Z - off, r->DXC + ct * pc, n,
                                  !firstacc);
                        firstacc = 0;
                    }
                }
        }
        if (pv)
            vop1(e, TPU_VOP_CVT, ACC, r->DXC, UB, r->DXB, NTi * pc);
        for (int64_t y = 0; y < c->h; y++) {
            const uint64_t a0 = ((uint64_t)(y + c->pt)) * wp + (uint64_t)c->pl;
            const uint64_t s0 = umax(a0, p0), s1 = umin(a0 + (uint64_t)c->w, p0 + n);
            if (s0 >= s1) continue;
            const uint64_t px = (uint64_t)y * (uint64_t)c->w + (s0 - a0); /* compact pixel */
            for (uint64_t ct = 0; ct < NTi; ct++) {
                const uint64_t cols = umin(N, CI - ct * N);
                if (pv) {
                    tpuc_e_dma_out(&e->ec, UB, r->DXB + ct * pc + (s0 - p0), s1 - s0, cols,
                                   pv->dysave + ((i * (uint64_t)(c->h * c->w) + px) * CI + ct * N) * 2,
                                   CI * 2);
                    continue;
                }
                const uint64_t a = t->conv[c->src].dps + ((i * (uint64_t)(c->h * c->w) + px) * CI + ct * N) * 4;
                uint64_t src = r->DXC + ct * pc + (s0 - p0);
                if (acc) {
                    const uint64_t tmp = r->DXT + ct * pc + (s0 - p0);
                    tpuc_e_dma_in(&e->ec, ACC, tmp, s1 - s0, cols, a, CI * 4);
                    vop2(e, TPU_VOP_ADD, ACC, tmp, ACC, src, ACC, tmp, s1 - s0);
                    src = tmp;
                }
                tpuc_e_dma_out(&e->ec, ACC, src, s1 - s0, cols, a, CI * 4);
            }
        }
    }
}

/* The embedding's forward pass: rows [0, b*L) of one-hot ids times the table, in row chunks
   of rc, into stage 0's padded input (its interior pixels, channels D). */
static void embed_fwd(em_t *e, const tpuc_train_t *t, const tpuc_tlayer_t *ly, uint64_t UB0,
                      uint64_t ACC0, uint64_t rc)
{
    const tpuc_tconv_t *c = t->nconv ? &t->conv[0] : NULL;
    const unsigned N = e->n;
    const uint64_t V = (uint64_t)ly->k, D = (uint64_t)ly->o, KT = cdiv(V, N), NT = cdiv(D, N);
    const uint64_t R = (uint64_t)ly->rows, L = (uint64_t)t->in_elems;
    /* the next layer's input: stage 0's padded image (its interior pixels), or the dense
       layer's saved input row of L x D values (the Flatten of [L, D]) */
    const tpuc_tlayer_t *nx = &t->layer[1];
    const uint64_t img = c ? (uint64_t)c->img * D : nx->kp;
    const uint64_t pix0 = c ? (uint64_t)(c->pre + c->pt * c->wp + c->pl) : 0;
    const uint64_t EA = UB0, EB = UB0 + KT * rc, EY = ACC0;
    tpuc_e_comment(&e->ec,
                   "forward: layer 0 '%s' (embedding %llu x %llu): one-hot ids x the table, %llu "
                   "rows per chunk",
                   ly->name, U(V), U(D), U(rc));
    for (uint64_t r0 = 0; r0 < R; r0 += rc) {
        const uint64_t n = umin(rc, R - r0);
        ring_restart(e);
        for (uint64_t kt = 0; kt < KT; kt++)
            tpuc_e_dma_in(&e->ec, UB, EA + kt * rc, n, umin(N, V - kt * N),
                          ly->xsave + (r0 * V + kt * N) * 2, V * 2);
        for (uint64_t nt = 0; nt < NT; nt++)
            for (uint64_t kt = 0; kt < KT; kt++) {
                uint64_t w = wtile(e, t, ly->w_bf16 + (kt * N * D + nt * N) * 2, umin(N, V - kt * N),
                                   umin(N, D - nt * N), D * 2);
                tpuc_e_lw(&e->ec, w);
                tpuc_e_mm(&e->ec, EA + kt * rc, EY + nt * rc, n, kt > 0);
            }
        vop1(e, TPU_VOP_CVT, ACC, EY, UB, EB, NT * rc);
        for (uint64_t j = r0; j < r0 + n;) {
            const uint64_t i = j / L, x = j % L, run = umin(L - x, r0 + n - j);
            for (uint64_t nt = 0; nt < NT; nt++)
                tpuc_e_dma_out(&e->ec, UB, EB + nt * rc + (j - r0), run, umin(N, D - nt * N),
                               nx->xsave + (i * img + (pix0 + x) * D + nt * N) * 2, D * 2);
            j += run;
        }
    }
}

/* Adam's per-step scalars: beta^t, step size lr / (1 - beta1^t), rsqrt(1 - beta2^t) */
static void emit_adam_step(em_t *e, const tpuc_train_t *t)
{
    const unsigned N = e->n;
    const int ph = e->phase;
    e->phase = TPUC_PH_UPDATE;
    tpuc_e_comment(&e->ec, "Adam: beta^t, step size lr / (1 - beta1^t), rsqrt(1 - beta2^t)");
    tpuc_e_dma_in(&e->ec, ACC, A_B1T, 2, N, t->adam_addr, N * 4);
    vop2(e, TPU_VOP_MUL, ACC, A_B1T, ACC, K_B1, ACC, A_B1T, 1);
    vop2(e, TPU_VOP_MUL, ACC, A_B2T, ACC, K_B2, ACC, A_B2T, 1);
    tpuc_e_dma_out(&e->ec, ACC, A_B1T, 2, N, t->adam_addr, N * 4);
    vop2(e, TPU_VOP_SUB, ACC, K_ONE, ACC, A_B1T, ACC, A_SS, 1);
    vop1(e, TPU_VOP_RECIP, ACC, A_SS, ACC, A_SS, 1);
    vop2(e, TPU_VOP_MUL, ACC, A_SS, ACC, K_LR, ACC, A_SS, 1);
    vop2(e, TPU_VOP_SUB, ACC, K_ONE, ACC, A_B2T, ACC, A_RS, 1);
    vop1(e, TPU_VOP_RSQRT, ACC, A_RS, ACC, A_RS, 1);
    e->phase = ph;
}

/* ---- the passes of tpuc_train_compile, in the order it calls them ----
     step_analyse    the graph's chain of layers and Conv stages, the checks (analyse)
     layout_host     host memory: constants, per layer its master, state and saved tensors
     layout_rows     the step's named UB and ACC rows; what is left for the chunks
     layout_conv     per Conv stage: dW chunks, q chunks, dx chunks and their regions
     layout_scratch  host memory after the stages: the packing scratch, the running sums
     layout_dense    the embedding's row chunk, the dense layers' dW chunks
     emit_prologue   the constants into ACC and UB (Adam's per-step scalars)
     emit_forward    the embedding, the Conv stages, the GlobalAveragePool, the dense layers
     emit_loss       the loss and dZ
     emit_backward   per layer from the last: dX, dW and per chunk its all-reduce + update
                     (emit_grad) or its micro-step sum
     emit_update_part  micro-steps: the update part (all-reduce, optimizer, the loss)
     step_assemble   the cuts of the loop pass, the assembly, the per-pc phases and layers
   The analysis and the layout fill t and the step_t; the emission passes only read them (the
   program, its per-instruction phases and layers and u_pc are all they write). */

/* What the analysis and the layout decided, read by the emission passes. UB and ACC rows by
   their names in the program's comments. */
typedef struct {
    const tpuc_hw_t *hw;
    const tpuc_train_opts_t *o;
    unsigned N;
    uint64_t b;               /* rows per core (per micro-step) */
    int L;                    /* layers */
    int fd;                   /* the first dense layer */
    int adam;
    unsigned nstate;          /* optimizer state per master element: 0, 1 (momentum), 2 (Adam) */
    unsigned upr;             /* ACC rows per gradient row and N-tile where a chunk is finished */
    uint64_t a;               /* layout: host memory's next free byte */
    uint64_t NTc;             /* N-tiles of the classes */
    /* UB */
    uint64_t IDENT, ONES, ACT[TPUC_TRAIN_MAX_LAYERS], OH, DYB[2], UB_CHUNK;
    /* ACC */
    uint64_t LOSSR, LS, Y, P, TMPA, DX, XTACC, BIASR, ACC_CHUNK;
    uint64_t freeu, freea;    /* UB rows from UB_CHUNK, ACC rows from ACC_CHUNK */
    uint64_t erc;             /* the embedding's row chunk */
    cvr_t cv[TPUC_TRAIN_MAX_CONV];
} step_t;

static int step_analyse(const tpuc_graph_t *g, const tpuc_hw_t *hw, const tpuc_train_opts_t *o,
                        step_t *s, tpuc_train_t *t, char *err, size_t errlen)
{
    t->opts = *o;
    t->cores = hw->cores ? hw->cores : 1;
    t->micro = o->micro > 1 ? o->micro : 1;
    if (analyse(g, o, t, err, errlen)) return -1;
    s->hw = hw;
    s->o = o;
    s->N = hw->geom.n;
    s->b = (uint64_t)g->t[g->inputs[0]].dims[0];
    t->batch = (long)s->b;
    t->n = s->N;
    s->L = t->nlayers;
    s->adam = o->optimizer == TPUC_OPT_ADAM;
    for (int i = 0; i < t->nconv; i++) {
        tpuc_tconv_t *c = &t->conv[i];
        c->dx = c->src >= 0 || t->layer[0].embed;
        if (c->dx && (c->ppt || c->ppl || c->ppb || c->ppr || c->psh != c->pkh || c->psw != c->pkw)) {
            tpuc_err(err, errlen, "node '%s': training mode: a padded or overlapping MaxPool after a "
                     "Conv that needs its input gradient is not supported (only after the first)",
                     t->layer[c->layer].name);
            return -1;
        }
        if (c->gap) t->gap_p = c->ph * c->pw;
    }
    /* the first dense layer */
    s->fd = 0;
    while (t->layer[s->fd].conv || t->layer[s->fd].embed) s->fd++;
    return 0;
}

static void layout_host(step_t *s, tpuc_train_t *t)
{
    const unsigned N = s->N;
    const uint64_t b = s->b;
    const tpuc_train_opts_t *o = s->o;
    const int adam = s->adam;
    uint64_t a = 0x1000;
    t->const_addr = a; a = ALIGN64(a + (uint64_t)K_COUNT * N * 4);
    t->ident_addr = a; a = ALIGN64(a + (uint64_t)N * N * 2);
    t->negzero_addr = a; a = ALIGN64(a + 2);
    t->ones_addr = a; a = ALIGN64(a + (uint64_t)N * 2);
    t->zero_addr = a; a = ALIGN64(a + 4);
    t->adam_addr = a; a = ALIGN64(a + 2ull * N * 4);
    t->loss_addr = a; a = ALIGN64(a + 4);
    t->onehot_addr = a; a = ALIGN64(a + b * (uint64_t)t->classes * 2);
    t->probs_addr = a; a = ALIGN64(a + b * (uint64_t)t->classes * 4);
    for (int l = 0; l < s->L; l++) {
        tpuc_tlayer_t *ly = &t->layer[l];
        uint64_t mo = ly->kp * (uint64_t)ly->o;
        ly->w_master = a; a = ALIGN64(a + mo * 4);
        ly->w_bf16 = a; a = ALIGN64(a + (uint64_t)ly->k * ly->o * 2);
        ly->s1 = a; a = ALIGN64(a + mo * 4);
        ly->s2 = a; a = ALIGN64(a + (adam ? mo * 4 : 0));
        ly->grad = a; a = ALIGN64(a + (o->save_grads ? mo * 4 : 0));
        ly->gacc = a; a = ALIGN64(a + (t->micro > 1 ? mo * 4 : 0));
        if (ly->conv) {
            tpuc_tconv_t *c = &t->conv[ly->conv - 1];
            ly->xsave = a; a = ALIGN64(a + b * (uint64_t)(c->img * c->cin) * 2);
            c->dps = a; a = ALIGN64(a + b * (uint64_t)(c->ph * c->pw * c->cout) * 4);
            int reader = c->gap;
            for (int s2 = 0; s2 < t->nconv; s2++) reader |= t->conv[s2].res == ly->conv;
            if (reader) { c->compact = a; a = ALIGN64(a + b * (uint64_t)(c->ph * c->pw * c->cout) * 2); }
            if (c->gap) { c->gapg = a; a = ALIGN64(a + b * (uint64_t)c->cout * 4); }
            c->dcw = a; a = ALIGN64(a + (uint64_t)c->q * (uint64_t)c->cout * 2);
            c->rsp = a; a = ALIGN64(a + (c->dx ? (uint64_t)(c->z + c->hp * c->wp) * (uint64_t)c->cout * 2 : 0));
            ly->dysave = a;
        } else {
            ly->xsave = a; a = ALIGN64(a + (uint64_t)ly->rows * ly->kp * 2);
            ly->dysave = a; a = ALIGN64(a + (uint64_t)ly->rows * (uint64_t)ly->o * 2);
        }
        if (a > (8ull << 30)) break;
    }
    s->a = a;
}

static int layout_rows(step_t *s, tpuc_train_t *t, char *err, size_t errlen)
{
    const tpuc_hw_t *hw = s->hw;
    const unsigned N = s->N;
    const uint64_t b = s->b;
    /* maxT: the K-tiles of a dX (ACC), maxTu: of a dX that stays in UB as the next dY (a
       dX for a Conv goes to host memory from ACC; layer 0 has none) */
    uint64_t maxT = 0, maxTu = 0, maxNT = 0;
    for (int l = s->fd; l < s->L; l++) {
        const uint64_t T = cdiv((uint64_t)t->layer[l].k, N);
        if (l > 0) maxT = umax(maxT, T);
        if (l > 0 && !t->layer[l - 1].conv) maxTu = umax(maxTu, T);
        maxNT = umax(maxNT, cdiv((uint64_t)t->layer[l].o, N));
    }
    s->NTc = cdiv((uint64_t)t->classes, N);
    /* UB */
    uint64_t ub = 0;
    s->IDENT = ub; ub += N;
    s->ONES = ub; ub += 1;
    for (int l = 0; l < s->L; l++) {
        s->ACT[l] = ub;
        if (l >= s->fd) ub += cdiv((uint64_t)t->layer[l].k, N) * b;
    }
    s->OH = ub; ub += s->NTc * b;
    s->DYB[0] = ub;
    s->DYB[1] = ub + umax(maxNT, maxTu) * b;
    ub += 2 * umax(maxNT, maxTu) * b;
    s->UB_CHUNK = ub; /* X^T (R x nbt), then the bf16 staging (R x NT) */
    /* ACC */
    uint64_t acc = A_END;
    s->LOSSR = acc; acc += cdiv(b, N);
    s->LS = acc; acc += 1;
    s->Y = acc; acc += maxNT * b;
    s->P = acc; acc += s->NTc * b;
    s->TMPA = acc; acc += s->NTc * b;
    s->DX = acc; acc += maxT * b;
    s->XTACC = acc; acc += N;
    s->BIASR = acc; acc += maxNT;
    for (int i = 0; i < t->nconv; i++) acc = umax(acc, s->BIASR + cdiv((uint64_t)t->conv[i].cout, N));
    s->ACC_CHUNK = acc;
    if (ub > hw->geom.ub_rows || acc > hw->geom.acc_rows) {
        tpuc_err(err, errlen, "training at %llu rows per core needs %llu UB rows and %llu ACC "
                 "rows before the weight chunks; the core has %u and %u (a smaller --batch or "
                 "more --cores, or larger --ub-kib/--acc-kib)", U(b), U(ub), U(acc),
                 hw->geom.ub_rows, hw->geom.acc_rows);
        t->fit_failed = 1;
        return -1;
    }
    s->freeu = hw->geom.ub_rows - s->UB_CHUNK;
    s->freea = hw->geom.acc_rows - s->ACC_CHUNK;
    s->nstate = s->adam ? 2u : (s->o->momentum != 0.0 ? 1u : 0u);
    /* ACC rows per gradient row and N-tile where a chunk's gradient is finished: the update
       needs the gradient, the master, its state and a temporary; a micro-step only the
       gradient and the running sum (the update part has ACC to itself) */
    s->upr = t->micro > 1 ? 2u : 3u + s->nstate;
    return 0;
}

/* Conv stage si: the conv's dW (or a chunk of its rows) stays in ACC over the batch; q chunks
   of the conv after it, or (at another time) pc rows of dx. */
static int layout_conv(step_t *s, tpuc_train_t *t, int si, char *err, size_t errlen)
{
    const tpuc_hw_t *hw = s->hw;
    const unsigned N = s->N;
    const uint64_t b = s->b, freea = s->freea, freeu = s->freeu;
    const uint64_t ACC_CHUNK = s->ACC_CHUNK, UB_CHUNK = s->UB_CHUNK;
    const unsigned upr = s->upr;
    tpuc_tconv_t *c = &t->conv[si];
    const tpuc_tlayer_t *l0 = &t->layer[c->layer];
    const uint64_t NT0 = cdiv((uint64_t)c->cout, N), NTi = cdiv((uint64_t)c->cin, N);
    const uint64_t kc = (uint64_t)(c->kw * c->cin);
    const uint64_t KT = cdiv(kc, N);
    const uint64_t nw = (uint64_t)c->pkh * (uint64_t)c->pkw;
    const uint64_t per_acc = (nw + 2u) * NT0, per_ub = (uint64_t)c->kh * KT + 4u * NT0;
    if (NT0 > 256) {
        tpuc_err(err, errlen, "node '%s': %lld output channels are more than 256 N-tiles of "
                 "%u: a larger --mxu", l0->name, (long long)c->cout, N);
        return -1;
    }
    /* dW whole in ACC if it leaves room for a q chunk; else in chunks of rows of the
       master (half the free ACC and UB, or what leaves one q tile), the routed gradients
       kept in host memory for the later chunks; and if not even N + 1 rows of every
       output tile fit, of groups of TG output tiles (each chunk's update on its columns) */
    uint64_t R = 0, TG = NT0;
    for (;; TG = cdiv(TG, 2)) {
        R = l0->kp;
        int fits = 0;
        for (int pass = 0; pass < 2; pass++) {
            const uint64_t upd = upr * R * TG;
            const uint64_t acc0 = ACC_CHUNK + upd, ub0 = UB_CHUNK + R;
            uint64_t qa = acc0 < hw->geom.acc_rows ? (hw->geom.acc_rows - acc0) / per_acc : 0;
            uint64_t qu = ub0 < hw->geom.ub_rows ? (hw->geom.ub_rows - ub0) / per_ub : 0;
            uint64_t qc = umin(umin(qa, qu), umin((uint64_t)c->q, 65535u / (per_acc ? per_acc : 1)));
            if (qc < (uint64_t)c->q && qc >= N) qc = qc / N * N;
            if (R > 0 && qc > 0 && upd <= freea && R * (1u + TG) <= freeu) { c->qc = qc; fits = 1; break; }
            if (pass) break;
            /* half the free ACC and UB; if that is not one X^T tile and the bias row, the
               most rows that leave one q tile of the windows (N rows, or q) */
            R = umin(freea / 2 / (upr * TG), freeu / 2 / (1u + TG));
            if (R < N + 1u) {
                uint64_t qmin = umin((uint64_t)c->q, N);
                uint64_t ra = freea > per_acc * qmin ? (freea - per_acc * qmin) / (upr * TG) : 0;
                uint64_t ru = freeu > per_ub * qmin ? (freeu - per_ub * qmin) / (1u + TG) : 0;
                R = umin(ra, ru);
                if (R < N + 1u) {
                    /* a q tile of fewer than N rows (the MXU half idle on dW) rather than none */
                    const uint64_t na = upr * TG * (N + 1u), nu = (1u + TG) * (N + 1u);
                    qmin = freea > na && freeu > nu ? umin((freea - na) / per_acc, (freeu - nu) / per_ub) : 0;
                    if (qmin) R = N + 1u;
                }
            }
            R = umin(R, 65535u / TG);
            if (R < N + 1u) R = 0;
        }
        if (fits) break;
        if (TG == 1) {
            tpuc_err(err, errlen, "node '%s': %llu rows of one output tile of the conv's gradient "
                     "and one row of its windows do not fit ACC/UB: larger --acc-kib/--ub-kib",
                     l0->name, U(R));
            t->fit_failed = 1;
            return -1;
        }
    }
    c->dwtiles = TG;
    c->dwrows = R;
    const uint64_t upd = upr * R * TG;
    const uint64_t acc0 = ACC_CHUNK + upd, ub0 = UB_CHUNK + R;
    const uint64_t qc = c->qc;
    if (R < l0->kp || TG < NT0) {
        c->gsave = s->a;
        s->a = ALIGN64(s->a + b * nw * (uint64_t)c->q * (uint64_t)c->cout * 2);
    }
    cvr_t *r = &s->cv[si];
    r->IDENT = s->IDENT; r->BIASR = s->BIASR; r->XTACC = s->XTACC; r->DWC = ACC_CHUNK;
    r->XT = UB_CHUNK;
    r->A = ub0; r->PB = r->A + (uint64_t)c->kh * KT * qc; r->T = r->PB + NT0 * qc;
    r->S = r->T + NT0 * qc; r->AV = r->S + NT0 * qc;
    r->CW = acc0; r->M = r->CW + nw * NT0 * qc; r->DQ = r->M + NT0 * qc;
    if (c->dx) {
        /* dx reuses the q chunk's regions: ACC NTi*pc, UB NT0*(pc + z) + NTi*pc */
        const uint64_t fu = hw->geom.ub_rows - ub0, fa = hw->geom.acc_rows - acc0;
        const uint64_t Z = (uint64_t)c->z, rows = (uint64_t)(c->h * c->wp);
        const uint64_t sum = c->src >= 0 && t->conv[c->src].writers > 1 ? 2u : 1u;
        uint64_t pc = umin(rows, fa / (sum * NTi));
        pc = fu > NT0 * Z ? umin(pc, (fu - NT0 * Z) / (NT0 + NTi)) : 0;
        pc = umin(pc, 65535u / (NTi + NT0));
        if (pc == 0) {
            tpuc_err(err, errlen, "node '%s': the input gradient needs %llu UB rows for one "
                     "row of it: larger --ub-kib", l0->name, U(NT0 * (Z + 1) + NTi));
            t->fit_failed = 1;
            return -1;
        }
        c->pc = pc;
        r->RS = ub0; r->DXB = ub0 + NT0 * (pc + Z); r->DXC = acc0; r->DXT = acc0 + NTi * pc;
    }
    t->layer[c->layer].chunk_rows = (unsigned)R;
    return 0;
}

static int layout_scratch(step_t *s, tpuc_train_t *t, char *err, size_t errlen)
{
    const unsigned N = s->N;
    uint64_t a = s->a;
    /* the packing scratch: a gradient chunk's r x O fp32 (r ceil(O/N) <= the ACC's rows),
       read back in whole rows of N */
    uint64_t pk = 0;
    for (int l = 0; l < s->L; l++)
        pk = umax(pk, umin(t->layer[l].kp * (uint64_t)t->layer[l].o, (uint64_t)s->hw->geom.acc_rows * N));
    t->pack_addr = a; a = ALIGN64(a + (pk + N) * 4);
    t->lacc_addr = a; a = ALIGN64(a + 4);
    t->zrow_addr = a; a = ALIGN64(a + (uint64_t)N * 4);
    a += (uint64_t)N * 4; /* a packed dma_in of the last region reads up to N - 1 past it */
    s->a = a;
    t->host_bytes = (a + 0xFFFFFull) & ~0xFFFFFull;
    if (t->host_bytes > (4ull << 30)) {
        tpuc_err(err, errlen, "training needs %llu MiB of host memory per core, at most 4096",
                 U(t->host_bytes >> 20));
        return -1;
    }
    return 0;
}

static int layout_dense(step_t *s, tpuc_train_t *t, char *err, size_t errlen)
{
    const unsigned N = s->N;
    const uint64_t freea = s->freea, freeu = s->freeu;
    if (t->layer[0].embed) {
        const tpuc_tlayer_t *el = &t->layer[0];
        const uint64_t KT = cdiv((uint64_t)el->k, N), NT = cdiv((uint64_t)el->o, N);
        s->erc = umin(umin((uint64_t)el->rows, freea / NT), umin(freeu / (KT + NT), 65535u / (KT + NT)));
        if (s->erc == 0) {
            tpuc_err(err, errlen, "node '%s': one row of the embedding's one-hot input (%llu UB "
                     "rows) does not fit: larger --ub-kib", el->name, U(KT + NT));
            t->fit_failed = 1;
            return -1;
        }
    }
    for (int l = 0; l < s->L; l++) {
        tpuc_tlayer_t *ly = &t->layer[l];
        if (ly->conv) continue;
        uint64_t NT = cdiv((uint64_t)ly->o, N), nbt = cdiv((uint64_t)ly->rows, N);
        /* ACC: dW, master, state, tmp per row of the chunk and N-tile; UB: X^T, staging */
        uint64_t per_acc = NT * s->upr, per_ub = nbt + (t->micro > 1 ? 0u : NT);
        uint64_t r_acc = freea / per_acc;
        uint64_t r_ub = freeu / per_ub;
        uint64_t r = umin(umin(r_acc, r_ub), 65535u / (NT ? NT : 1));
        if (r >= N) r = r / N * N; /* whole X^T tiles; fewer rows than N when that is all that fits */
        if (r == 0) {
            tpuc_err(err, errlen, "node '%s': one chunk of %u weight rows (%llu N-tiles) does "
                     "not fit the free ACC/UB rows (%llu, %llu): larger --acc-kib/--ub-kib or a "
                     "smaller --batch", ly->name, N, U(NT), U(freea), U(freeu));
            t->fit_failed = 1;
            return -1;
        }
        ly->chunk_rows = (unsigned)umin(r, cdiv(ly->kp, N) * N);
    }
    return 0;
}

static void emit_prologue(em_t *e, const step_t *s)
{
    const tpuc_train_t *t = e->t;
    const unsigned N = s->N;
    tpuc_e_comment(&e->ec, "training step: %d layers, %llu rows per core, %u cores, %s", s->L,
                   U(s->b), t->cores,
                   s->adam ? "Adam" : (s->o->momentum != 0.0 ? "SGD with momentum" : "SGD"));
    tpuc_e_dma_in(&e->ec, ACC, 0, K_COUNT, N, t->const_addr, N * 4);
    tpuc_e_dma_in(&e->ec, UB, s->IDENT, N, N, t->ident_addr, N * 2);
    tpuc_e_dma_in(&e->ec, UB, s->ONES, 1, N, t->ones_addr, N * 2);
    /* the step's Adam scalars advance once per training step: never in the forward pass
       alone (validation runs it once per batch, on the same host image) */
    if (s->adam && t->micro == 1 && !s->o->eval_only) emit_adam_step(e, t);
}

/* forward of Conv stage si: per image and q chunk the conv, its pool and ReLU, the output
   to its readers; then the GlobalAveragePool when the dense layers read its average */
static void fwd_stage(em_t *e, const step_t *s, int si)
{
    const tpuc_train_t *t = e->t;
    const unsigned N = s->N;
    const uint64_t b = s->b;
    const tpuc_tconv_t *c = &t->conv[si];
    const cvr_t *cv = s->cv;
    e->layer = c->layer;
    const tpuc_tlayer_t *l0 = &t->layer[c->layer];
    const uint64_t NT0 = cdiv((uint64_t)c->cout, N);
    tpuc_e_comment(&e->ec,
                   "forward: layer %d '%s' (Conv %lldx%lld, %lld -> %lld channels, %s%s pool "
                   "%dx%d), per image and q chunk of %llu rows",
                   c->layer, l0->name, (long long)c->kh, (long long)c->kw, (long long)c->cin,
                   (long long)c->cout, c->relu_before ? "relu, " : "",
                   c->relu_after ? "relu after the" : "", c->pkh, c->pkw, U(c->qc));
    if (l0->has_bias)
        for (uint64_t nt = 0; nt < NT0; nt++)
            tpuc_e_dma_in(&e->ec, ACC, s->BIASR + nt, 1, umin(N, (uint64_t)c->cout - nt * N),
                          l0->w_master + ((uint64_t)l0->k * (uint64_t)c->cout + nt * N) * 4, 4);
    for (uint64_t i = 0; i < b; i++)
        for (uint64_t k = 0, q0, qc; q_chunk(c, k, &q0, &qc); k++) {
            conv_fwd(e, t, c, &cv[si], i, q0, qc);
            vop1(e, c->relu_after ? TPU_VOP_RELU : TPU_VOP_CVT, ACC, cv[si].M, UB, cv[si].PB,
                 NT0 * qc);
            qctx_t x = {t, c, &cv[si], i, q0, qc, 0, 0, 0};
            q_runs(e, c, q0, qc, run_out, &x);
        }
    if (c->gap) {
        /* the average of each image's pixels: the ones row times its (pixel, channel)
           tiles as weights, times 1/pixels, into the dense layer's saved input */
        const tpuc_tlayer_t *d = &t->layer[s->fd];
        const uint64_t P = (uint64_t)(c->ph * c->pw), C = (uint64_t)c->cout;
        tpuc_e_comment(&e->ec, "forward: the GlobalAveragePool of %llu pixels", U(P));
        for (uint64_t i = 0; i < b; i++) {
            ring_restart(e);
            for (uint64_t nt = 0; nt < NT0; nt++)
                for (uint64_t p0 = 0; p0 < P; p0 += N) {
                    uint64_t w = wtile(e, t, c->compact + ((i * P + p0) * C + nt * N) * 2,
                                       umin(N, P - p0), umin(N, C - nt * N), C * 2);
                    tpuc_e_lw(&e->ec, w);
                    tpuc_e_mm(&e->ec, s->ONES, s->ACC_CHUNK + nt, 1, p0 > 0);
                }
            vopb(e, TPU_VOP_MUL, ACC, s->ACC_CHUNK, K_INVP, UB, s->UB_CHUNK, NT0);
            for (uint64_t nt = 0; nt < NT0; nt++)
                tpuc_e_dma_out(&e->ec, UB, s->UB_CHUNK + nt, 1, umin(N, C - nt * N),
                               d->xsave + (i * d->kp + nt * N) * 2, C * 2);
        }
    }
}

/* forward of dense layer l: Y = X W (+ bias), then ReLU (or not) into the next layer's input
   (UB, and its saved copy); the last layer's softmax into ACC and to host memory */
static void fwd_dense(em_t *e, const step_t *s, int l)
{
    const tpuc_train_t *t = e->t;
    const unsigned N = s->N;
    const uint64_t b = s->b, Y = s->Y, P = s->P;
    const tpuc_tlayer_t *ly = &t->layer[l];
    const uint64_t T = cdiv((uint64_t)ly->k, N), NT = cdiv((uint64_t)ly->o, N);
    const uint64_t O = (uint64_t)ly->o;
    e->layer = l;
    tpuc_e_comment(&e->ec, "forward: layer %d '%s' (%lld x %lld%s%s)", l, ly->name,
                   (long long)ly->k, (long long)ly->o, ly->has_bias ? ", bias" : "",
                   ly->relu ? ", relu" : "");
    for (uint64_t nt = 0; nt < NT; nt++) {
        uint64_t oc = umin(N, O - nt * N);
        for (uint64_t kt = 0; kt < T; kt++) {
            uint64_t kc = umin(N, (uint64_t)ly->k - kt * N);
            uint64_t w = wtile(e, t, ly->w_bf16 + (kt * N * O + nt * N) * 2, kc, oc, O * 2);
            tpuc_e_lw(&e->ec, w);
            tpuc_e_mm(&e->ec, s->ACT[l] + kt * b, Y + nt * b, b, kt > 0);
        }
        if (ly->has_bias) {
            tpuc_e_dma_in(&e->ec, ACC, s->BIASR + nt, 1, oc,
                          ly->w_master + ((uint64_t)ly->k * O + nt * N) * 4, O * 4);
            vopb(e, TPU_VOP_ADD, ACC, Y + nt * b, s->BIASR + nt, ACC, Y + nt * b, b);
        }
    }
    if (l + 1 < s->L) {
        const tpuc_tlayer_t *nx = &t->layer[l + 1];
        vop1(e, ly->relu ? TPU_VOP_RELU : TPU_VOP_CVT, ACC, Y, UB, s->ACT[l + 1], NT * b);
        for (uint64_t nt = 0; nt < NT; nt++)
            tpuc_e_dma_out(&e->ec, UB, s->ACT[l + 1] + nt * b, b, umin(N, O - nt * N),
                           nx->xsave + nt * N * 2, nx->kp * 2);
    } else {
        tpuc_e_softmax(&e->ec, Y, ACC, P, b, O, b, 1);
        for (uint64_t nt = 0; nt < NT; nt++)
            tpuc_e_dma_out(&e->ec, ACC, P + nt * b, b, umin(N, O - nt * N),
                           t->probs_addr + nt * N * 4, O * 4);
    }
}

static void emit_forward(em_t *e, const step_t *s)
{
    const tpuc_train_t *t = e->t;
    const unsigned N = s->N;
    const uint64_t b = s->b;
    e->phase = TPUC_PH_FORWARD;
    if (t->layer[0].embed) {
        e->layer = 0;
        embed_fwd(e, t, &t->layer[0], s->UB_CHUNK, s->ACC_CHUNK, s->erc);
    }
    for (int si = 0; si < t->nconv; si++) fwd_stage(e, s, si);
    {
        const int fd = s->fd;
        const tpuc_tlayer_t *l0 = &t->layer[fd];
        e->layer = fd;
        tpuc_e_comment(&e->ec, "forward: the batch%s", fd ? " (the pooled activation)" : "");
        for (uint64_t kt = 0; kt < cdiv((uint64_t)l0->k, N); kt++)
            tpuc_e_dma_in(&e->ec, UB, s->ACT[fd] + kt * b, b, umin(N, (uint64_t)l0->k - kt * N),
                          l0->xsave + kt * N * 2, l0->kp * 2);
    }
    for (int l = s->fd; l < s->L; l++) fwd_dense(e, s, l);
}

/* the loss -mean log p[label] (micro-steps: its sum added to the step's) and dZ into DYB[0] */
static void emit_loss(em_t *e, const step_t *s)
{
    const tpuc_train_t *t = e->t;
    const unsigned N = s->N;
    const uint64_t b = s->b, NTc = s->NTc, OH = s->OH, P = s->P, TMPA = s->TMPA;
    const uint64_t LOSSR = s->LOSSR, LS = s->LS;
    e->phase = TPUC_PH_LOSS;
    e->layer = TPUC_TRAIN_NO_LAYER;
    const uint64_t C = (uint64_t)t->classes;
    tpuc_e_comment(&e->ec, "loss: -mean log p[label] over the global batch; dZ = (p - onehot) / B");
    for (uint64_t nt = 0; nt < NTc; nt++)
        tpuc_e_dma_in(&e->ec, UB, OH + nt * b, b, umin(N, C - nt * N), t->onehot_addr + nt * N * 2,
                      C * 2);
    vop2(e, TPU_VOP_MUL, ACC, P, UB, OH, ACC, TMPA, NTc * b);
    tpuc_e_vred(&e->ec, "sum", ACC, TMPA, ACC, LOSSR, b, C, b, 1);
    vop1(e, TPU_VOP_LOG, ACC, LOSSR, ACC, LOSSR, cdiv(b, N));
    tpuc_e_vred(&e->ec, "sum", ACC, LOSSR, ACC, LS, 1, b, 1, 1);
    if (t->micro > 1) {
        tpuc_e_comment(&e->ec, "the micro-step's loss sum added to the step's (the update "
                       "part finishes it)");
        tpuc_e_dma_in(&e->ec, ACC, LOSSR, 1, 1, t->lacc_addr, 4);
        vop2(e, TPU_VOP_ADD, ACC, LOSSR, ACC, LS, ACC, LS, 1);
        tpuc_e_dma_out(&e->ec, ACC, LS, 1, 1, t->lacc_addr, 4);
    } else {
        if (t->cores > 1) tpuc_e_allreduce(&e->ec, ACC, LS, 1);
        vopb(e, TPU_VOP_MUL, ACC, LS, K_NEGINVB, ACC, LS, 1);
        tpuc_e_dma_out(&e->ec, ACC, LS, 1, 1, t->loss_addr, 4);
    }
    vop2(e, TPU_VOP_SUB, ACC, P, UB, OH, ACC, TMPA, NTc * b);
    vopb(e, TPU_VOP_MUL, ACC, TMPA, K_INVB, UB, s->DYB[0], NTc * b);
}

/* backward of Conv stage ly->conv - 1: dW (and db) in chunks of its rows and output tiles,
   each chunk finished by emit_grad; the first chunk routes the gradient and computes dX */
static void bwd_stage(em_t *e, const step_t *s, int l)
{
    const tpuc_train_t *t = e->t;
    const unsigned N = s->N;
    const uint64_t b = s->b;
    const tpuc_tlayer_t *ly = &t->layer[l];
    const uint64_t NT = cdiv((uint64_t)ly->o, N), O = (uint64_t)ly->o;
    const int si = ly->conv - 1;
    const tpuc_tconv_t *c = &t->conv[si];
    const cvr_t *cv = s->cv;
    tpuc_e_comment(&e->ec,
                   "the conv's dW = sum over images, windows and q tiles of X^T G; db = 1^T G");
    if (ly->has_bias)
        for (uint64_t nt = 0; nt < NT; nt++)
            tpuc_e_dma_in(&e->ec, ACC, s->BIASR + nt, 1, umin(N, O - nt * N),
                          ly->w_master + ((uint64_t)ly->k * O + nt * N) * 4, 4);
    /* chunks of whole X^T tiles (kernel row kh, lanes k0 .. k0+N) of at most dwrows
       rows with the bias row; the first pass routes the gradients (and computes dX),
       the later ones read them back from host memory */
    const uint64_t kc = (uint64_t)(c->kw * c->cin), KK = (uint64_t)ly->k, R = c->dwrows;
    for (uint64_t c0 = 0; c0 < KK;) {
        uint64_t c1 = c0;
        while (c1 < KK) {
            const uint64_t kn = umin(N, kc - c1 % kc), end = c1 + kn;
            const uint64_t need = end - c0 + (ly->has_bias && end == KK ? 1u : 0u);
            if (need > R && c1 > c0) break;
            c1 = end;
        }
        if (ly->has_bias && c1 == KK)
            vopb(e, TPU_VOP_ADD, UB, s->ONES, K_ZERO, UB, cv[si].XT + (c1 - c0), 1);
        for (uint64_t t0 = 0; t0 < NT; t0 += c->dwtiles) {
            const dwck_t ck = {c0, c1, ly->has_bias && c1 == KK, t0, umin(NT, t0 + c->dwtiles)};
            const int firstpass = c0 == 0 && t0 == 0;
            if (R < ly->kp || c->dwtiles < NT)
                tpuc_e_comment(&e->ec, "dW rows %llu..%llu%s, output tiles %llu..%llu", U(c0),
                               U(c1 - 1), ck.bias ? " and the bias" : "", U(ck.t0), U(ck.t1 - 1));
            int first[256];
            for (int k = 0; k < 256; k++) first[k] = 1;
            for (uint64_t i = 0; i < b; i++) {
                for (uint64_t k = 0, q0, qc; q_chunk(c, k, &q0, &qc); k++) {
                    if (firstpass)
                        conv_bwd(e, t, c, &cv[si], i, q0, qc, &ck, first);
                    else
                        for (int u = 0; u < c->pkh; u++)
                            for (int v = 0; v < c->pkw; v++)
                                conv_dw(e, t, c, &cv[si], i, q0, qc, u, v, &ck, first);
                }
                if (firstpass && c->dx) conv_dx(e, t, c, &cv[si], i);
            }
            e->phase = TPUC_PH_UPDATE;
            if (c->dwtiles < NT) {
                e->cj0 = t0 * N;
                e->cjn = umin(O, ck.t1 * N) - t0 * N;
            }
            emit_grad(e, t, ly, c0, c1 - c0 + (uint64_t)ck.bias, s->ACC_CHUNK, s->UB_CHUNK + R,
                      s->nstate, s->adam);
            e->cj0 = e->cjn = 0;
            e->phase = TPUC_PH_BACKWARD;
        }
        c0 = c1;
    }
    if (c->src >= 0) e->wrote[c->src] = 1;
    if (c->res) e->wrote[c->res - 1] = 1;
}

/* backward of dense layer l, its dY in UB rows DYB[cur]: dY saved; dX = dY W^T into DYB[1 -
   cur] (through the ReLU mask of its input; to host memory for a Conv or the average before
   it); dW and db in chunks of rows, each finished by emit_grad */
static void bwd_dense(em_t *e, const step_t *s, int l, int cur)
{
    const tpuc_train_t *t = e->t;
    const unsigned N = s->N;
    const uint64_t b = s->b, DX = s->DX, IDENT = s->IDENT, XTACC = s->XTACC;
    const tpuc_tlayer_t *ly = &t->layer[l];
    const uint64_t T = cdiv((uint64_t)ly->k, N), NT = cdiv((uint64_t)ly->o, N);
    const uint64_t O = (uint64_t)ly->o, DY = s->DYB[cur];
    const uint64_t rows = (uint64_t)ly->rows, nbt = cdiv(rows, N);
    if (!ly->embed)
        for (uint64_t nt = 0; nt < NT; nt++)
            tpuc_e_dma_out(&e->ec, UB, DY + nt * b, b, umin(N, O - nt * N), ly->dysave + nt * N * 2,
                           O * 2);
    if (l > 0 && !ly->embed) {
        tpuc_e_comment(&e->ec, "dX = dY W^T (the step's old weights, loaded transposed)");
        for (uint64_t kt = 0; kt < T; kt++) {
            uint64_t kc = umin(N, (uint64_t)ly->k - kt * N);
            for (uint64_t nt = 0; nt < NT; nt++) {
                uint64_t w = wtile(e, t, ly->w_bf16 + (kt * N * O + nt * N) * 2, kc,
                                   umin(N, O - nt * N), O * 2);
                tpuc_e_lw_transpose(&e->ec, w);
                tpuc_e_mm(&e->ec, DY + nt * b, DX + kt * b, b, nt > 0);
            }
        }
        const uint64_t DN = s->DYB[1 - cur];
        if (t->layer[l - 1].conv && t->conv[t->feed].gap) {
            const tpuc_tconv_t *c = &t->conv[t->feed];
            tpuc_e_comment(&e->ec,
                           "the average's gradient: divided by the pixels, fp32, to host memory");
            vopb(e, TPU_VOP_MUL, ACC, DX, K_INVP, ACC, DX, T * b);
            for (uint64_t kt = 0; kt < T; kt++)
                tpuc_e_dma_out(&e->ec, ACC, DX + kt * b, b, umin(N, (uint64_t)ly->k - kt * N),
                               c->gapg + kt * N * 4, (uint64_t)ly->k * 4);
        } else if (t->layer[l - 1].conv) {
            const tpuc_tconv_t *c = &t->conv[t->feed];
            if (c->relu_after) {
                /* in place: the activation is not read again in this step */
                tpuc_e_comment(&e->ec,
                               "the ReLU mask of the pooled activation: min(x * 2^127, 1), 0/1 in "
                               "UB");
                vopb(e, TPU_VOP_MUL, UB, s->ACT[l], K_BIG, UB, s->ACT[l], T * b);
                vopb(e, TPU_VOP_MIN, UB, s->ACT[l], K_ONE, UB, s->ACT[l], T * b);
                vop2(e, TPU_VOP_MUL, ACC, DX, UB, s->ACT[l], ACC, DX, T * b);
            }
            tpuc_e_comment(&e->ec,
                           "the gradient at the pooled output, fp32, to host memory for the conv");
            for (uint64_t kt = 0; kt < T; kt++)
                tpuc_e_dma_out(&e->ec, ACC, DX + kt * b, b, umin(N, (uint64_t)ly->k - kt * N),
                               c->dps + kt * N * 4, (uint64_t)ly->k * 4);
        } else if (t->layer[l - 1].relu) {
            tpuc_e_comment(&e->ec, "the ReLU mask of the input: min(x * 2^127, 1), 0/1 in UB");
            vopb(e, TPU_VOP_MUL, UB, s->ACT[l], K_BIG, UB, DN, T * b);
            vopb(e, TPU_VOP_MIN, UB, DN, K_ONE, UB, DN, T * b);
            vop2(e, TPU_VOP_MUL, ACC, DX, UB, DN, UB, DN, T * b);
        } else {
            vop1(e, TPU_VOP_CVT, ACC, DX, UB, DN, T * b);
        }
        if (t->layer[l - 1].embed) {
            tpuc_e_comment(&e->ec, "the embedding's dY: b rows of L x D, (position, dim) order");
            for (uint64_t kt = 0; kt < T; kt++)
                tpuc_e_dma_out(&e->ec, UB, DN + kt * b, b, umin(N, (uint64_t)ly->k - kt * N),
                               t->layer[l - 1].dysave + kt * N * 2, (uint64_t)ly->k * 2);
        }
    }
    /* dW, db: chunks of R rows of the kp x O master */
    const uint64_t R = ly->chunk_rows;
    for (uint64_t k0 = 0; k0 < ly->kp; k0 += R) {
        const uint64_t r = umin(R, ly->kp - k0);
        const uint64_t XT = s->UB_CHUNK, DW = s->ACC_CHUNK;
        ring_restart(e);
        tpuc_e_comment(&e->ec, "dW rows %llu..%llu: X^T by lw transpose x identity, then X^T dY",
                       U(k0), U(k0 + r - 1));
        for (uint64_t bt = 0; bt < nbt; bt++) {
            uint64_t bc = umin(N, rows - bt * N);
            for (uint64_t j = 0; j < r; j += N) {
                uint64_t kc = umin(N, r - j);
                uint64_t w = wtile(e, t, ly->xsave + ((bt * N) * ly->kp + k0 + j) * 2, bc, kc,
                                   ly->kp * 2);
                tpuc_e_lw_transpose(&e->ec, w);
                tpuc_e_mm(&e->ec, IDENT, XTACC, kc, 0);
                vop1(e, TPU_VOP_CVT, ACC, XTACC, UB, XT + bt * R + j, kc);
            }
        }
        for (uint64_t nt = 0; nt < NT; nt++)
            for (uint64_t bt = 0; bt < nbt; bt++) {
                uint64_t w = wtile(e, t, ly->dysave + (bt * N * O + nt * N) * 2,
                                   umin(N, rows - bt * N), umin(N, O - nt * N), O * 2);
                tpuc_e_lw(&e->ec, w);
                tpuc_e_mm(&e->ec, XT + bt * R, DW + nt * r, r, bt > 0);
            }
        e->phase = TPUC_PH_UPDATE;
        emit_grad(e, t, ly, k0, r, DW, s->UB_CHUNK + R * nbt, s->nstate, s->adam);
        e->phase = TPUC_PH_BACKWARD;
    }
}

static void emit_backward(em_t *e, const step_t *s)
{
    const tpuc_train_t *t = e->t;
    e->phase = TPUC_PH_BACKWARD;
    int cur = 0; /* the dense layers' dY: DYB[cur] */
    for (int l = s->L - 1; l >= 0; l--) {
        const tpuc_tlayer_t *ly = &t->layer[l];
        e->layer = l;
        tpuc_e_comment(&e->ec, "backward: layer %d '%s'", l, ly->name);
        if (ly->conv) {
            bwd_stage(e, s, l);
            continue;
        }
        bwd_dense(e, s, l, cur);
        cur = 1 - cur;
    }
}

/* Micro-steps: the program's second part, once per step after them (from t->u_pc): the
   layers' gradient sums all-reduced and the optimizer, in chunks of its own (ACC from the
   Adam rows on, UB whole); then the loss. */
static int emit_update_part(em_t *e, const step_t *s, char *err, size_t errlen)
{
    tpuc_train_t *t = e->t;
    const tpuc_hw_t *hw = s->hw;
    const unsigned N = s->N;
    const uint64_t LS = s->LS, LOSSR = s->LOSSR;
    t->u_pc = t->nphase;
    e->phase = TPUC_PH_UPDATE;
    tpuc_e_comment(&e->ec,
                   "---- the update part (pc %zu): the micro-steps' sums all-reduced, the "
                   "optimizer, the loss ----",
                   t->u_pc);
    tpuc_e_dma_in(&e->ec, ACC, 0, K_COUNT, N, t->const_addr, N * 4);
    if (s->adam) emit_adam_step(e, t);
    /* its own chunks: ACC from the Adam rows on, UB whole */
    const uint64_t ua = hw->geom.acc_rows - A_END;
    for (int l = s->L - 1; l >= 0; l--) {
        const tpuc_tlayer_t *ly = &t->layer[l];
        const uint64_t NTl = cdiv((uint64_t)ly->o, N);
        const uint64_t R = umin(umin(ua / ((3u + s->nstate) * NTl), hw->geom.ub_rows / NTl),
                                65535u / NTl);
        e->layer = l;
        if (R == 0) {
            tpuc_err(err, errlen, "node '%s': one row of the update (%llu N-tiles) does not fit "
                     "ACC: larger --acc-kib", ly->name, U(NTl));
            t->fit_failed = 1;
            return -1;
        }
        for (uint64_t k0 = 0; k0 < ly->kp; k0 += R)
            emit_update(e, t, ly, k0, umin(R, ly->kp - k0), A_END, 0, s->nstate, s->adam, ly->gacc);
    }
    e->phase = TPUC_PH_LOSS;
    e->layer = TPUC_TRAIN_NO_LAYER;
    tpuc_e_comment(&e->ec,
                   "the loss: the micro-steps' sum (then cleared), all-reduced, times -1/B");
    tpuc_e_dma_in(&e->ec, ACC, LS, 1, 1, t->lacc_addr, 4);
    tpuc_e_dma_in(&e->ec, ACC, LOSSR, 1, N, t->zrow_addr, 0);
    tpuc_e_dma_out(&e->ec, ACC, LOSSR, 1, 1, t->lacc_addr, 4);
    if (t->cores > 1) tpuc_e_allreduce(&e->ec, ACC, LS, 1);
    vopb(e, TPU_VOP_MUL, ACC, LS, K_NEGINVB, ACC, LS, 1);
    tpuc_e_dma_out(&e->ec, ACC, LS, 1, 1, t->loss_addr, 4);
    tpuc_e_halt(&e->ec);
    return 0;
}

/* The text into instructions: the loop pass keeps the update part on its own and each pc to
   one phase and layer (the reports attribute pcs by them); then the phases and layers per pc
   of the rolled program, and the IMEM check. */
static int step_assemble(tpuc_train_t *t, const tpuc_hw_t *hw, uint64_t b, char *err,
                         size_t errlen)
{
    if (t->nphase == 0 || !t->phase || !t->layer_of) {
        tpuc_err(err, errlen, "internal error: no instructions");
        return -1;
    }
    free(t->prog.cut);
    free(t->prog.tag);
    t->prog.cut = calloc(t->nphase + 1, 1);
    t->prog.tag = malloc(t->nphase * sizeof *t->prog.tag);
    if (!t->prog.cut || !t->prog.tag) {
        tpuc_err(err, errlen, "out of memory");
        return -1;
    }
    /* a nest may cross phases and layers (a dense layer's dW chunks alternate backward and
       update), but each pc keeps one phase and layer: they are its tag */
    for (size_t i = 0; i < t->nphase; i++) {
        t->prog.tag[i] = (uint16_t)(t->phase[i] << 8 | t->layer_of[i]);
        if (i > 0 && (t->phase[i] != t->phase[i - 1] || t->layer_of[i] != t->layer_of[i - 1]))
            t->prog.cut[i] = 4;
    }
    size_t starts[1] = {t->u_pc};
    const size_t nstraight = t->nphase;
    if (tpuc_assemble_parts(&t->prog, hw, starts, t->u_pc ? 1 : 0, err, errlen)) {
        t->fit_failed = t->prog.ninsns > hw->geom.imem_insns; /* IMEM: fewer rows may fit */
        return -1;
    }
    if (t->prog.orig) { /* per-pc phases and layers of the rolled program */
        uint8_t *ph = malloc(t->prog.ninsns + 1), *ly = malloc(t->prog.ninsns + 1);
        if (!ph || !ly) {
            free(ph); free(ly);
            tpuc_err(err, errlen, "out of memory");
            return -1;
        }
        for (size_t pc = 0; pc < t->prog.ninsns; pc++) {
            size_t o = t->prog.orig[pc] < nstraight ? t->prog.orig[pc] : nstraight - 1;
            ph[pc] = t->phase[o];
            ly[pc] = t->layer_of[o];
        }
        free(t->phase);
        free(t->layer_of);
        t->phase = ph;
        t->layer_of = ly;
        t->nphase = t->prog.ninsns;
        if (t->u_pc) t->u_pc = starts[0];
    }
    if (t->prog.ninsns > hw->geom.imem_insns && !hw->predict_only) {
        tpuc_err(err, errlen, "the step program has %zu instructions at %llu rows per core; IMEM "
                 "holds %u: a larger --imem-insns (at most 32768) or a smaller --micro-batch",
                 t->prog.ninsns, U(b), hw->geom.imem_insns);
        t->fit_failed = 1;
        return -1;
    }
    return 0;
}

int tpuc_train_compile(const tpuc_graph_t *g, const tpuc_hw_t *hw, const tpuc_train_opts_t *o,
                       tpuc_train_t *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    step_t s;
    memset(&s, 0, sizeof s);
    /* the analysis and the layout */
    if (step_analyse(g, hw, o, &s, t, err, errlen)) return -1;
    layout_host(&s, t);
    if (layout_rows(&s, t, err, errlen)) return -1;
    for (int si = 0; si < t->nconv; si++)
        if (layout_conv(&s, t, si, err, errlen)) return -1;
    if (layout_scratch(&s, t, err, errlen) || layout_dense(&s, t, err, errlen)) return -1;

    /* the program */
    em_t e = {.n = s.N, .slots = hw->geom.wmem_rows / s.N, .slot = 0, .t = t,
              .phase = TPUC_PH_FORWARD, .layer = TPUC_TRAIN_NO_LAYER};
    e.ec.p = &t->prog;
    e.ec.hook = record;
    e.ec.hook_arg = &e;
    if (e.slots == 0) {
        tpuc_err(err, errlen, "WMEM holds %u rows, less than one %u-row tile", hw->geom.wmem_rows, s.N);
        return -1;
    }
    emit_prologue(&e, &s);
    emit_forward(&e, &s);
    if (!o->eval_only) {
        emit_loss(&e, &s);
        emit_backward(&e, &s);
    }
    e.layer = TPUC_TRAIN_NO_LAYER;
    tpuc_e_halt(&e.ec);
    if (t->micro > 1 && !o->eval_only && emit_update_part(&e, &s, err, errlen)) return -1;
    if (e.oom || e.ec.oom) {
        tpuc_err(err, errlen, "out of memory");
        return -1;
    }
    return step_assemble(t, hw, s.b, err, errlen);
}

void tpuc_train_free(tpuc_train_t *t)
{
    tpuc_prog_free(&t->prog);
    free(t->phase);
    free(t->layer_of);
    t->phase = NULL;
    t->layer_of = NULL;
}
