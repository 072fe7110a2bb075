/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 4, continued (tile.c): reductions and Softmax over axes that are not the tensor's
   rows, and LayerNorm (docs/compiler.md "Reductions over rows, Softmax on any axis,
   LayerNorm").

   A row-major tensor reduced over the axes [lo, hi], hi < rank - 1, is P x Q x S elements
   (P = the dims before lo, Q = the reduced ones, S = the ones after hi, a whole number SR of
   host rows of C = dims[rank - 1] elements): output row o = p * SR + r is the reduction over
   q of input row (p * Q + q) * SR + r. Every input row q is DMA'd into a block of UB rows
   of its own and the blocks are combined by the VPU lane by lane, in ascending q (one fp32
   chain per element; max exact in any order), so the order does not depend on N.

   LayerNorm takes its row sums (sum x, then sum d^2) from the MXU: the row's chunks times a
   weight tile of ones (the last chunk's tile ones in its valid rows only, -0 elsewhere: the
   identity) is one fp32 chain per row in ascending element order, seeded -0, in every
   column of the ACC row, so the mean is already in every lane for the `vop sub` (the VPU has
   no lane broadcast; `vred` packs one result per lane). */
#include <stdlib.h>
#include <string.h>

#include "tile_ctx.h"

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The P x Q x S view of a's [lo, hi] (hi < rank - 1). */
typedef struct {
    uint64_t P, Q, SR, C, CT;
} rows_view_t;

static void rows_view(const tpuc_tensor_t *a, int lo, int hi, unsigned N, rows_view_t *v)
{
    v->P = v->Q = v->SR = 1;
    for (int d = 0; d < lo; d++) v->P *= (uint64_t)a->dims[d];
    for (int d = lo; d <= hi; d++) v->Q *= (uint64_t)a->dims[d];
    for (int d = hi + 1; d < a->ndim - 1; d++) v->SR *= (uint64_t)a->dims[d];
    v->C = (uint64_t)a->dims[a->ndim - 1];
    v->CT = (v->C + N - 1) / N;
}

/* DMA of the `rows` rows o0 .. of block q (input row (p*Q + q)*SR + r for o = p*SR + r),
   columns t*N .. t*N + ct, between mem:row .. and the buffer at addr (es bytes an element);
   Q = 1 and q = 0 address an output buffer of P*SR rows. */
static int dma_block(ctx_t *c, int out, const rows_view_t *v, uint64_t Q, uint64_t q,
                     uint64_t o0, uint64_t rows, uint64_t t, uint64_t ct, unsigned mem,
                     uint64_t row, uint64_t addr, unsigned es)
{
    const unsigned N = c->n;
    uint64_t o = o0;
    if (v->SR == 1) { /* one row per p: a single strided transfer */
        uint64_t at = addr + ((o0 * Q + q) * v->C + t * N) * es, stride = Q * v->C * es;
        return out ? tpuc_e_dma_out(&c->e, mem, row, rows, ct, at, stride)
                   : tpuc_e_dma_in(&c->e, mem, row, rows, ct, at, stride);
    }
    while (o < o0 + rows) {
        uint64_t p = o / v->SR, r = o % v->SR, k = min64(v->SR - r, o0 + rows - o);
        uint64_t at = addr + (((p * Q + q) * v->SR + r) * v->C + t * N) * es;
        int rc = out ? tpuc_e_dma_out(&c->e, mem, row + (o - o0), k, ct, at, v->C * es)
                     : tpuc_e_dma_in(&c->e, mem, row + (o - o0), k, ct, at, v->C * es);
        if (rc < 0) return -1;
        o += k;
    }
    return 0;
}

static int out_layout(ctx_t *c, tpuc_tensor_t *y)
{
    memset(&y->lay, 0, sizeof y->lay);
    y->lay.kind = TPUC_LAYOUT_PLAIN;
    y->lay.esize = y->is_output ? 4 : 2;
    y->lay.cols = (uint64_t)y->dims[y->ndim - 1];
    y->lay.rows = (uint64_t)(tpuc_tensor_elems(y) / (int64_t)y->lay.cols);
    return tpuc_tl_host_alloc(c, &y->lay);
}

/* ReduceSum / ReduceMean / ReduceMax over [red_lo, red_hi], red_hi < rank - 1: acc = x_0
   (exact in fp32), acc = op(acc, x_q) for q = 1 .. Q-1 in fp32 (`vop add` / `vop max`), the
   mean times fp32(1/Q) in one `vop mul`; the last step writes the output (bf16 or fp32). */
int tpuc_emit_reduce_rows(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpu_core_geom_t *gm = &c->hw->geom;
    const int mean = n->op == TPUC_OP_REDUCEMEAN;
    const unsigned op = n->op == TPUC_OP_REDUCEMAX ? V_MAX : V_ADD;
    TRY(tpuc_tl_layer_begin(c, n, mean ? "1/n fp32 (ACC)" : "-"));
    if (a->lay.kind != TPUC_LAYOUT_PLAIN || a->lay.esize != 2)
        CERR(c, "internal: the input is not a row-major bf16 tensor");
    rows_view_t v;
    rows_view(a, n->red_lo, n->red_hi, N, &v);
    if (out_layout(c, y)) return -1;
    const uint64_t R = v.P * v.SR;
    if (y->lay.rows * y->lay.cols != R * v.C) CERR(c, "internal: the output holds %llu elements, expected %llu", (unsigned long long)(y->lay.rows * y->lay.cols), (unsigned long long)(R * v.C));
    /* UB: QB blocks of mt rows and the bf16 output (mt); ACC: acc (mt), fp32 output (mt), 1/n */
    const uint64_t QB = min64(v.Q, 8);
    uint64_t mt = min64(min64(R, 65535), gm->ub_rows / (QB + 1));
    mt = min64(mt, (gm->acc_rows - 1) / 2);
    if (mt < 1) CERR(c, "UB/ACC too small");
    tpuc_tl_hw_mark(c, (QB + 1) * mt, 2 * mt + 1, 0);
    const uint64_t krow = gm->acc_rows - 1;
    if (mean) {
        float k[512];
        for (unsigned i = 0; i < N; i++) k[i] = (float)(1.0 / (double)v.Q);
        int64_t off = tpuc_tl_img_rows_f32(c, k, N, 1);
        if (off < 0) return -1;
        TRY(tpuc_e_dma_in(&c->e, ACC, krow, 1, N, tpuc_tl_img_addr(c, off), (uint64_t)N * 4));
    }
    const unsigned es = y->lay.esize, dm = es == 4 ? ACC : UB;
    const uint64_t dr = es == 4 ? mt : QB * mt;
    for (uint64_t t = 0; t < v.CT; t++) {
        uint64_t ct = min64(N, v.C - t * N);
        for (uint64_t m0 = 0; m0 < R; m0 += mt) {
            uint64_t rows = min64(mt, R - m0);
            for (uint64_t q0 = 0; q0 < v.Q; q0 += QB) {
                uint64_t qn = min64(QB, v.Q - q0);
                for (uint64_t j = 0; j < qn; j++)
                    TRY(dma_block(c, 0, &v, v.Q, q0 + j, m0, rows, t, ct, UB, j * mt, a->lay.addr, 2));
                for (uint64_t j = 0; j < qn; j++) {
                    uint64_t q = q0 + j;
                    int last = q + 1 == v.Q && !mean;
                    unsigned tm = last ? dm : ACC;
                    uint64_t tr = last ? dr : 0;
                    if (q == 0) TRY(tpuc_e_vop(&c->e, V_CVT, UB, 0, -1, 0, 0, tm, tr, rows));
                    else TRY(tpuc_e_vop(&c->e, op, ACC, 0, UB, j * mt, 0, tm, tr, rows));
                }
            }
            if (mean) TRY(tpuc_e_vop(&c->e, V_MUL, ACC, 0, ACC, krow, 1, dm, dr, rows));
            TRY(dma_block(c, 1, &v, 1, 0, m0, rows, t, ct, dm, dr, y->lay.addr, es));
        }
    }
    return 0;
}

/* Softmax over one axis k < rank - 1 (P x Q x S, Q = dims[k]): per element of the S rows,
   vpu_softmax's steps lane by lane: m = max over q (`vop max`, exact), e_q = exp(x_q - m)
   (`vop sub`, `vop exp`, fp32), s = the e_q added in ascending q (`vop add`), r = recip(s),
   y_q = e_q * r; only the sum's order differs from the `softmax` instruction's. */
int tpuc_emit_softmax_rows(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpu_core_geom_t *gm = &c->hw->geom;
    TRY(tpuc_tl_layer_begin(c, n, "-"));
    if (a->lay.kind != TPUC_LAYOUT_PLAIN || a->lay.esize != 2)
        CERR(c, "internal: the input is not a row-major bf16 tensor");
    rows_view_t v;
    rows_view(a, n->red_lo, n->red_hi, N, &v);
    if (out_layout(c, y)) return -1;
    const uint64_t R = v.P * v.SR, Q = v.Q;
    /* UB: Q blocks of x (the bf16 results over them); ACC: Q blocks of e (fp32 results over
       them), m, s */
    uint64_t mt = min64(min64(R, 65535), gm->ub_rows / Q);
    mt = min64(mt, gm->acc_rows / (Q + 2));
    if (mt < 1) CERR(c, "the axis of %llu elements does not fit UB/ACC (a block of rows each)", (unsigned long long)Q);
    tpuc_tl_hw_mark(c, Q * mt, (Q + 2) * mt, 0);
    const uint64_t M = Q * mt, S = (Q + 1) * mt;
    const unsigned es = y->lay.esize, dm = es == 4 ? ACC : UB;
    for (uint64_t t = 0; t < v.CT; t++) {
        uint64_t ct = min64(N, v.C - t * N);
        for (uint64_t m0 = 0; m0 < R; m0 += mt) {
            uint64_t rows = min64(mt, R - m0);
            for (uint64_t q = 0; q < Q; q++)
                TRY(dma_block(c, 0, &v, Q, q, m0, rows, t, ct, UB, q * mt, a->lay.addr, 2));
            if (Q == 1) TRY(tpuc_e_vop(&c->e, V_CVT, UB, 0, -1, 0, 0, ACC, M, rows));
            else TRY(tpuc_e_vop(&c->e, V_MAX, UB, 0, UB, mt, 0, ACC, M, rows));
            for (uint64_t q = 2; q < Q; q++) TRY(tpuc_e_vop(&c->e, V_MAX, ACC, M, UB, q * mt, 0, ACC, M, rows));
            for (uint64_t q = 0; q < Q; q++) {
                TRY(tpuc_e_vop(&c->e, V_SUB, UB, q * mt, ACC, M, 0, ACC, q * mt, rows));
                TRY(tpuc_e_vop(&c->e, V_EXP, ACC, q * mt, -1, 0, 0, ACC, q * mt, rows));
            }
            if (Q == 1) TRY(tpuc_e_vop(&c->e, V_CVT, ACC, 0, -1, 0, 0, ACC, S, rows));
            else TRY(tpuc_e_vop(&c->e, V_ADD, ACC, 0, ACC, mt, 0, ACC, S, rows));
            for (uint64_t q = 2; q < Q; q++) TRY(tpuc_e_vop(&c->e, V_ADD, ACC, S, ACC, q * mt, 0, ACC, S, rows));
            TRY(tpuc_e_vop(&c->e, V_RECIP, ACC, S, -1, 0, 0, ACC, S, rows));
            for (uint64_t q = 0; q < Q; q++) {
                TRY(tpuc_e_vop(&c->e, V_MUL, ACC, q * mt, ACC, S, 0, dm, q * mt, rows));
                TRY(dma_block(c, 1, &v, Q, q, m0, rows, t, ct, dm, q * mt, y->lay.addr, es));
            }
        }
    }
    return 0;
}

/* LayerNorm over the trailing axes [red_lo, rank - 1] (rows of L elements), per row:
     s1 = sum x (MXU, ones), mean = s1 * fp32(1/L), d = x - mean (fp32, ACC),
     s2 = sum bf16(d * d) (MXU), var = s2 * fp32(1/L), r = rsqrt(var + fp32(eps)),
     y = (d * r) [* scale] [+ bias], each a `vop` in fp32, the output rounded once. */
int tpuc_emit_layernorm(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    const tpuc_tensor_t *sc = n->nin > 1 && n->in[1] >= 0 ? &g->t[n->in[1]] : NULL;
    const tpuc_tensor_t *bi = n->nin > 2 && n->in[2] >= 0 ? &g->t[n->in[2]] : NULL;
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpu_core_geom_t *gm = &c->hw->geom;
    TRY(tpuc_tl_layer_begin(c, n, "ones bf16 (WMEM), 1/n, eps, scale, bias fp32 (ACC)"));
    if (a->lay.kind != TPUC_LAYOUT_PLAIN || a->lay.esize != 2)
        CERR(c, "internal: the input is not a row-major bf16 tensor");
    uint64_t L = 1;
    for (int d = n->red_lo; d < a->ndim; d++) L *= (uint64_t)a->dims[d];
    const uint64_t R = a->lay.rows * a->lay.cols / L, CT = (L + N - 1) / N, part = L % N;
    y->lay = a->lay;
    y->lay.esize = y->is_output ? 4 : 2;
    if (tpuc_tl_host_alloc(c, &y->lay)) return -1;
    if (gm->wmem_rows < 2 * N) CERR(c, "WMEM of %u rows holds no two weight tiles", gm->wmem_rows);
    /* ACC: the sum/mean (mt), d chunks (CT mt), the square sum/r (mt), an fp32 output chunk
       (mt); at the top 1/L, eps, CT scale rows, CT bias rows. UB: x chunks, d^2 chunks, a
       bf16 output chunk. */
    const uint64_t nk = 2 + 2 * CT;
    if (gm->acc_rows <= nk + CT + 3) CERR(c, "a row of %llu elements does not fit ACC", (unsigned long long)L);
    uint64_t mt = min64(min64(R, 65535), gm->ub_rows / (2 * CT + 1));
    mt = min64(mt, (gm->acc_rows - nk) / (CT + 3));
    if (mt < 1) CERR(c, "a row of %llu elements does not fit UB/ACC", (unsigned long long)L);
    tpuc_tl_hw_mark(c, (2 * CT + 1) * mt, (CT + 3) * mt + nk, 2 * N);
    /* the constants */
    float *k = calloc((size_t)(nk * N), sizeof *k);
    if (!k) return -1;
    for (unsigned i = 0; i < N; i++) { k[i] = (float)(1.0 / (double)L); k[N + i] = n->ln_eps; }
    for (uint64_t j = 0; j < L; j++) {
        int64_t se = sc ? tpuc_tensor_elems(sc) : 0, be = bi ? tpuc_tensor_elems(bi) : 0;
        k[(2 + j / N) * N + j % N] = sc ? sc->f[se == 1 ? 0 : j] : 1.0f;
        k[(2 + CT + j / N) * N + j % N] = bi ? bi->f[be == 1 ? 0 : j] : 0.0f;
    }
    int64_t koff = tpuc_tl_img_rows_f32(c, k, nk * N, nk);
    free(k);
    if (koff < 0) return -1;
    /* the ones tiles: WMEM rows [0, N) all ones; [N, 2N) ones in the rows < L % N */
    int64_t woff = tpuc_tl_img_alloc(c, (uint64_t)2 * N * N * 2);
    if (woff < 0) return -1;
    uint16_t *w = (uint16_t *)(c->p->image + woff);
    for (uint64_t i = 0; i < (uint64_t)N * N; i++) {
        w[i] = 0x3F80;
        w[(uint64_t)N * N + i] = i / N < part ? 0x3F80 : BF16_NEG_ZERO;
    }
    const uint64_t krow = gm->acc_rows - nk;
    TRY(tpuc_e_dma_in(&c->e, ACC, krow, nk, N, tpuc_tl_img_addr(c, koff), (uint64_t)N * 4));
    TRY(tpuc_e_dma_in(&c->e, WMEM, 0, 2 * N, N, tpuc_tl_img_addr(c, woff), (uint64_t)N * 2));
    const uint64_t S1 = 0, D = mt, S2 = (CT + 1) * mt, OA = (CT + 2) * mt; /* ACC */
    const uint64_t X = 0, Q2 = CT * mt, OU = 2 * CT * mt;                 /* UB */
    const unsigned es = y->lay.esize, dm = es == 4 ? ACC : UB;
    const uint64_t dr = es == 4 ? OA : OU;
    for (uint64_t m0 = 0; m0 < R; m0 += mt) {
        uint64_t rows = min64(mt, R - m0);
        for (uint64_t t = 0; t < CT; t++)
            TRY(tpuc_e_dma_in(&c->e, UB, X + t * mt, rows, min64(N, L - t * N),
                              a->lay.addr + (m0 * L + t * N) * 2, L * 2));
        for (int pass = 0; pass < 2; pass++) {
            /* the row sums of x (pass 0) or of d^2 (pass 1), in every lane */
            const uint64_t src = pass ? Q2 : X, dst = pass ? S2 : S1;
            int loaded = -1;
            for (uint64_t t = 0; t < CT; t++) {
                int tile = t + 1 == CT && part ? 1 : 0;
                if (tile != loaded) { TRY(tpuc_e_lw(&c->e, (uint64_t)tile * N)); loaded = tile; }
                TRY(tpuc_e_mm(&c->e, src + t * mt, dst, rows, t > 0));
            }
            TRY(tpuc_e_vop(&c->e, V_MUL, ACC, dst, ACC, krow, 1, ACC, dst, rows));
            if (pass == 0) {
                for (uint64_t t = 0; t < CT; t++) {
                    TRY(tpuc_e_vop(&c->e, V_SUB, UB, X + t * mt, ACC, S1, 0, ACC, D + t * mt, rows));
                    TRY(tpuc_e_vop(&c->e, V_MUL, ACC, D + t * mt, ACC, D + t * mt, 0, UB, Q2 + t * mt, rows));
                }
            }
        }
        TRY(tpuc_e_vop(&c->e, V_ADD, ACC, S2, ACC, krow + 1, 1, ACC, S2, rows));
        TRY(tpuc_e_vop(&c->e, V_RSQRT, ACC, S2, -1, 0, 0, ACC, S2, rows));
        for (uint64_t t = 0; t < CT; t++) {
            const uint64_t dt = D + t * mt;
            if (!sc && !bi) {
                TRY(tpuc_e_vop(&c->e, V_MUL, ACC, dt, ACC, S2, 0, dm, dr, rows));
            } else {
                TRY(tpuc_e_vop(&c->e, V_MUL, ACC, dt, ACC, S2, 0, ACC, dt, rows));
                if (sc) TRY(tpuc_e_vop(&c->e, V_MUL, ACC, dt, ACC, krow + 2 + t, 1, bi ? ACC : dm, bi ? dt : dr, rows));
                if (bi) TRY(tpuc_e_vop(&c->e, V_ADD, ACC, dt, ACC, krow + 2 + CT + t, 1, dm, dr, rows));
            }
            TRY(tpuc_e_dma_out(&c->e, dm, dr, rows, min64(N, L - t * N),
                               y->lay.addr + (m0 * L + t * N) * es, L * es));
        }
    }
    return 0;
}

/* Add / Sub / Mul / Div of big [.., F] and col [.., 1] (the same leading dims): per M-tile the
   column is DMA'd into lane 0 of UB rows (the other lanes +0) and multiplied on the MXU by a
   tile whose row 0 is ones and the rest -0: every lane of the ACC row then holds the column's
   value exactly (-0 + v * 1 + the -0 products: v, signed zeros and NaN kept). Then one `vop`
   per chunk of the row, as for two activations of the same shape (x / col: `vop recip` of the
   broadcast rows first, as Div's x * recip(y)); a fused activation after it. */
int tpuc_emit_bcast_col(ctx_t *c, const tpuc_node_t *n, const tpuc_tensor_t *big,
                        const tpuc_tensor_t *col, int col_first)
{
    const unsigned N = c->n;
    tpuc_tensor_t *y = &c->g->t[n->out[0]];
    const tpu_core_geom_t *gm = &c->hw->geom;
    TRY(tpuc_tl_layer_begin(c, n, "row-0 ones bf16 (WMEM): the column broadcast"));
    if (big->lay.esize != 2 || col->lay.esize != 2)
        CERR(c, "internal: the inputs are not row-major bf16 tensors");
    const uint64_t R = big->lay.rows, C = big->lay.cols, CT = (C + N - 1) / N;
    if (col->lay.rows * col->lay.cols != R) CERR(c, "internal: a column of %llu for %llu rows", (unsigned long long)(col->lay.rows * col->lay.cols), (unsigned long long)R);
    y->lay = big->lay;
    y->lay.esize = y->is_output ? 4 : 2;
    if (tpuc_tl_host_alloc(c, &y->lay)) return -1;
    /* UB: x (mt), the column (mt), bf16 out (mt); ACC: broadcast (mt), fp32 out (mt), clip 2 */
    uint64_t mt = min64(min64(R, 65535), gm->ub_rows / 3);
    mt = min64(mt, (gm->acc_rows - 2) / 2);
    if (mt < 1) CERR(c, "UB/ACC too small");
    tpuc_tl_hw_mark(c, 3 * mt, 2 * mt + 2, N);
    const uint64_t clip_row = gm->acc_rows - 2;
    if (n->fuse_act == TPUC_OP_CLIP && tpuc_tl_load_clip(c, n, clip_row)) return -1;
    int64_t woff = tpuc_tl_img_alloc(c, (uint64_t)N * N * 2);
    if (woff < 0) return -1;
    uint16_t *w = (uint16_t *)(c->p->image + woff);
    for (uint64_t i = 0; i < (uint64_t)N * N; i++) w[i] = i < N ? 0x3F80 : BF16_NEG_ZERO;
    TRY(tpuc_e_dma_in(&c->e, WMEM, 0, N, N, tpuc_tl_img_addr(c, woff), (uint64_t)N * 2));
    TRY(tpuc_e_lw(&c->e, 0));
    const unsigned op = n->op == TPUC_OP_ADD ? V_ADD : n->op == TPUC_OP_SUB ? V_SUB : V_MUL;
    const unsigned es = y->lay.esize, fmem = es == 4 ? ACC : UB;
    const uint64_t frow = es == 4 ? mt : 2 * mt, BC = 0;
    for (uint64_t m0 = 0; m0 < R; m0 += mt) {
        uint64_t rows = min64(mt, R - m0);
        TRY(tpuc_e_dma_in(&c->e, UB, mt, rows, 1, col->lay.addr + m0 * 2, 2));
        TRY(tpuc_e_mm(&c->e, mt, BC, rows, 0));
        if (n->op == TPUC_OP_DIV && !col_first) TRY(tpuc_e_vop(&c->e, V_RECIP, ACC, BC, -1, 0, 0, ACC, BC, rows));
        for (uint64_t t = 0; t < CT; t++) {
            uint64_t ct = min64(N, C - t * N);
            TRY(tpuc_e_dma_in(&c->e, UB, 0, rows, ct, big->lay.addr + (m0 * C + t * N) * 2, C * 2));
            unsigned rm = n->fuse_act && fmem == UB ? ACC : fmem; /* fp32 until the activation */
            uint64_t rr = n->fuse_act && fmem == UB ? mt : frow;
            if (n->op == TPUC_OP_DIV && col_first) { /* col / x = col * recip(x) */
                TRY(tpuc_e_vop(&c->e, V_RECIP, UB, 0, -1, 0, 0, ACC, mt, rows));
                TRY(tpuc_e_vop(&c->e, V_MUL, ACC, BC, ACC, mt, 0, rm, rr, rows));
            } else if (col_first) {
                TRY(tpuc_e_vop(&c->e, op, ACC, BC, UB, 0, 0, rm, rr, rows));
            } else {
                TRY(tpuc_e_vop(&c->e, op, UB, 0, ACC, BC, 0, rm, rr, rows));
            }
            if (n->fuse_act && tpuc_tl_emit_act(c, n->fuse_act, rm, rr, fmem, frow, rows, clip_row)) return -1;
            TRY(tpuc_e_dma_out(&c->e, fmem, frow, rows, ct, y->lay.addr + (m0 * C + t * N) * es, C * es));
        }
    }
    return 0;
}
