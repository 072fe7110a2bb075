/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 4, continued (tile.c): the data movement and the matmuls of attention
   (docs/compiler.md "Attention: Transpose, Slice, MatMul of two activations").

   Every tensor here is row-major bf16 in host memory (PLAIN; the graph output fp32).

   - Row copies (a Transpose that keeps the last axis, a Slice): each output row is one
     contiguous input row, at an address affine in the output row's index. Runs of rows
     along the output's innermost leading axis are one strided `dma_in` into UB; the staged
     rows, consecutive in the output, go out in one `dma_out`. Exact: bits are only moved.
   - A Transpose that moves the last axis: per N x N tile, the input tile is DMA'd into WMEM
     and loaded transposed (`lw ... transpose`), and N UB rows of the identity matrix stream
     through it (docs/isa.md "Transposes for training": X^T = I x X loaded transposed). Each
     output element is the chain -0 + 1 x x + the +-0 products of the identity's zeros: x
     itself for finite x (a -0 may come out +0; an Inf or NaN makes its whole tile column
     NaN: 0 x Inf).
   - MatMul of two activations A [.., M, K] x B [.., K, N'] (leading dims broadcast): for each
     leading index, B's K x N' block is the stationary operand, tile by tile DMA'd from host
     memory into WMEM (its rows past K in the last K-tile set to -0, the matmul's identity)
     and loaded by `lw`, A's K-chunks stream from UB, `matmul` accumulating from the second
     K-chunk: the contract's one fp32 chain per element in ascending k, seeded -0, whatever
     N (docs/numerics.md "MatMul of two activations"). */
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "tile_ctx.h"

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* y laid out row-major (bf16, or fp32 for the graph output) in a new host buffer. */
static int out_plain(ctx_t *c, tpuc_tensor_t *y)
{
    memset(&y->lay, 0, sizeof y->lay);
    y->lay.kind = TPUC_LAYOUT_PLAIN;
    y->lay.esize = y->is_output ? 4 : 2;
    y->lay.cols = y->ndim ? (uint64_t)y->dims[y->ndim - 1] : 1;
    y->lay.rows = (uint64_t)(tpuc_tensor_elems(y) / (int64_t)y->lay.cols);
    return tpuc_tl_host_alloc(c, &y->lay);
}

static int check_in(ctx_t *c, const tpuc_tensor_t *a)
{
    if (a->lay.kind != TPUC_LAYOUT_PLAIN || a->lay.esize != 2)
        CERR(c, "internal: input '%s' is not a row-major bf16 tensor", a->name);
    return 0;
}

/* The next row-major index of the first nd axes of dims; 0 when it wrapped to all zeros. */
static int next_index(int64_t *idx, const int64_t *dims, int nd)
{
    for (int j = nd - 1; j >= 0; j--) {
        if (++idx[j] < dims[j]) return 1;
        idx[j] = 0;
    }
    return 0;
}

/* Writes the staged rows UB [0, rows) (columns t*N ..+ct) to output rows ro .. of y. */
static int flush_rows(ctx_t *c, const tpuc_tensor_t *y, uint64_t ro, uint64_t rows,
                      uint64_t t, uint64_t ct)
{
    const uint64_t L = y->lay.cols, es = y->lay.esize;
    const uint64_t at = y->lay.addr + (ro * L + t * c->n) * es;
    if (es == 2) return tpuc_e_dma_out(&c->e, UB, 0, rows, ct, at, L * 2);
    TRY(tpuc_e_vop(&c->e, V_CVT, UB, 0, -1, 0, 0, ACC, 0, rows));
    return tpuc_e_dma_out(&c->e, ACC, 0, rows, ct, at, L * 4);
}

/* Row copy: output row (i_0 .. i_{r-2}) of y is the input row of a starting at element
   base + sum_j i_j src[j] (src[r-1] = 1: the row is contiguous). */
static int copy_rows(ctx_t *c, const tpuc_tensor_t *a, const tpuc_tensor_t *y,
                     const int64_t *src, int64_t base)
{
    const unsigned N = c->n;
    const tpu_core_geom_t *gm = &c->hw->geom;
    const int r = y->ndim;
    const uint64_t L = y->lay.cols, CT = (L + N - 1) / N;
    const uint64_t R = y->lay.rows;
    /* the innermost leading axis: a run of D rows, input stride sD elements */
    const uint64_t D = r >= 2 ? (uint64_t)y->dims[r - 2] : 1;
    const int64_t sD = r >= 2 ? src[r - 2] : 0;
    uint64_t cap = min64(gm->ub_rows, 65535);
    if (y->lay.esize == 4) cap = min64(cap, gm->acc_rows);
    if (cap < 1) CERR(c, "UB/ACC too small");
    tpuc_tl_hw_mark(c, min64(cap, R), y->lay.esize == 4 ? min64(cap, R) : 0, 0);
    for (uint64_t t = 0; t < CT; t++) {
        const uint64_t ct = min64(N, L - t * N);
        int64_t idx[TPUC_MAX_DIMS] = {0};
        uint64_t ro = 0, staged = 0; /* output row of UB row 0, rows in UB */
        for (uint64_t run = 0; run < R / D; run++) {
            int64_t off = base + (int64_t)(t * N);
            for (int j = 0; j < r - 2; j++) off += idx[j] * src[j];
            for (uint64_t d0 = 0; d0 < D;) {
                if (staged == cap) {
                    TRY(flush_rows(c, y, ro, staged, t, ct));
                    ro += staged;
                    staged = 0;
                }
                const uint64_t k = min64(D - d0, cap - staged);
                TRY(tpuc_e_dma_in(&c->e, UB, staged, k, ct,
                                  a->lay.addr + (uint64_t)(off + (int64_t)d0 * sD) * 2,
                                  (uint64_t)sD * 2));
                staged += k;
                d0 += k;
            }
            next_index(idx, y->dims, r - 2);
        }
        if (staged) TRY(flush_rows(c, y, ro, staged, t, ct));
    }
    return 0;
}

/* The identity matrix's N bf16 rows into UB rows [0, N). */
static int load_identity(ctx_t *c)
{
    const unsigned N = c->n;
    int64_t off = tpuc_tl_img_alloc(c, (uint64_t)N * N * 2);
    if (off < 0) return -1;
    uint16_t *w = (uint16_t *)(c->p->image + off);
    for (uint64_t i = 0; i < (uint64_t)N * N; i++) w[i] = i / N == i % N ? 0x3F80 : 0x0000;
    return tpuc_e_dma_in(&c->e, UB, 0, N, N, tpuc_tl_img_addr(c, off), (uint64_t)N * 2);
}

/* Transpose moving the last axis: output axis q holds the input's last axis, the output's
   last axis is input axis p = perm[r-1]. Per tile of (q: in rows) x (p: jn columns) of one
   outer index (every other axis): X's jn x in block into WMEM (rows along p, stride xs[p]),
   `lw transpose`, the identity's first `in` rows through it into ACC: ACC row i = X's column
   i = output row (.., q = i0 + i, ..), columns j0 .. j0 + jn. */
static int transpose_mxu(ctx_t *c, const tpuc_node_t *n, const tpuc_tensor_t *a,
                         const tpuc_tensor_t *y)
{
    const unsigned N = c->n;
    const tpu_core_geom_t *gm = &c->hw->geom;
    const int r = y->ndim;
    int64_t xs[TPUC_MAX_DIMS], ys[TPUC_MAX_DIMS];
    tpuc_attn_strides(a->dims, r, xs);
    tpuc_attn_strides(y->dims, r, ys);
    int q = 0;
    while (n->perm[q] != r - 1) q++;
    const int p = n->perm[r - 1];
    if (gm->ub_rows < 2 * N || gm->acc_rows < N) CERR(c, "UB or ACC holds no two N-row tiles");
    const uint64_t slots = min64(2, c->slots), es = y->lay.esize;
    tpuc_tl_hw_mark(c, 2 * N, N, slots * N);
    TRY(load_identity(c));
    /* the outer axes: every output axis but q and r-1, iterated row-major */
    int ax[TPUC_MAX_DIMS], no = 0;
    int64_t od[TPUC_MAX_DIMS], idx[TPUC_MAX_DIMS] = {0};
    for (int j = 0; j < r - 1; j++)
        if (j != q) { ax[no] = j; od[no++] = y->dims[j]; }
    const uint64_t I = (uint64_t)y->dims[q], J = (uint64_t)y->dims[r - 1];
    uint64_t step = 0;
    do {
        int64_t xo = 0, yo = 0;
        for (int k = 0; k < no; k++) {
            xo += idx[k] * xs[n->perm[ax[k]]];
            yo += idx[k] * ys[ax[k]];
        }
        for (uint64_t i0 = 0; i0 < I; i0 += N) {
            const uint64_t in = min64(N, I - i0);
            for (uint64_t j0 = 0; j0 < J; j0 += N) {
                const uint64_t jn = min64(N, J - j0), slot = (step++ % slots) * N;
                TRY(tpuc_e_dma_in(&c->e, WMEM, slot, jn, in,
                                  a->lay.addr + (uint64_t)(xo + (int64_t)j0 * xs[p] + (int64_t)i0) * 2,
                                  (uint64_t)xs[p] * 2));
                TRY(tpuc_e_lw_transpose(&c->e, slot));
                TRY(tpuc_e_mm(&c->e, 0, 0, in, 0));
                const uint64_t at = y->lay.addr + (uint64_t)(yo + (int64_t)(i0 * (uint64_t)ys[q] + j0)) * es;
                if (es == 2) {
                    TRY(tpuc_e_vop(&c->e, V_CVT, ACC, 0, -1, 0, 0, UB, N, in));
                    TRY(tpuc_e_dma_out(&c->e, UB, N, in, jn, at, (uint64_t)ys[q] * 2));
                } else {
                    TRY(tpuc_e_dma_out(&c->e, ACC, 0, in, jn, at, (uint64_t)ys[q] * 4));
                }
            }
        }
    } while (next_index(idx, od, no));
    return 0;
}

/* A Transpose read only by a MatMul of two activations as its second operand B, with B's
   K axis (its second-to-last) the input's last axis: B's K elements are contiguous in the
   input, so the MatMul DMAs B's tiles as rows along N' from the input itself and loads them
   transposed (`lw ... transpose`); the Transpose is a view and emits nothing. */
static int transpose_is_view(const tpuc_graph_t *g, const tpuc_node_t *t)
{
    const int r = t->nout > 0 ? g->t[t->out[0]].ndim : 0;
    const int yi = t->out[0];
    if (t->op != TPUC_OP_TRANSPOSE || r < 2 || t->perm[r - 2] != r - 1 || g->t[yi].is_output)
        return 0;
    int readers = 0, as_b = 0;
    for (size_t i = 0; i < g->nn; i++) {
        const tpuc_node_t *m = &g->n[i];
        if (m->op == TPUC_OP_DEAD) continue;
        for (int k = 0; k < m->nin; k++)
            if (m->in[k] == yi) {
                readers++;
                as_b += m->op == TPUC_OP_MATMUL2 && k == 1 && m->in[0] != yi;
            }
    }
    return readers == 1 && as_b == 1;
}

int tpuc_emit_transpose(ctx_t *c, const tpuc_node_t *n)
{
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const int r = a->ndim;
    const int moves_last = r >= 2 && n->perm[r - 1] != r - 1;
    if (transpose_is_view(g, n)) { /* read in place by the MatMul (its transposed load) */
        TRY(tpuc_tl_layer_begin(c, n, "- (a view: the MatMul after it loads its tiles transposed)"));
        if (check_in(c, a)) return -1;
        y->lay = a->lay; /* the same buffer: held until the MatMul is emitted */
        return 0;
    }
    TRY(tpuc_tl_layer_begin(c, n, moves_last ? "identity bf16 (UB)" : "-"));
    if (check_in(c, a) || out_plain(c, y)) return -1;
    if (moves_last) return transpose_mxu(c, n, a, y);
    int64_t xs[TPUC_MAX_DIMS], src[TPUC_MAX_DIMS];
    tpuc_attn_strides(a->dims, r, xs);
    for (int j = 0; j < r; j++) src[j] = xs[n->perm[j]];
    return copy_rows(c, a, y, src, 0);
}

int tpuc_emit_slice(ctx_t *c, const tpuc_node_t *n)
{
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    TRY(tpuc_tl_layer_begin(c, n, "-"));
    if (check_in(c, a) || out_plain(c, y)) return -1;
    int64_t xs[TPUC_MAX_DIMS], base = 0;
    tpuc_attn_strides(a->dims, a->ndim, xs);
    for (int j = 0; j < a->ndim; j++) base += n->sl_start[j] * xs[j];
    return copy_rows(c, a, y, xs, base);
}

/* Element offset of operand t (its element strides s; right-aligned in the output's leading
   dims) at the output's leading index idx[0 .. r-3] (a broadcast axis of size 1 stays at 0). */
static int64_t lead_off(const tpuc_tensor_t *t, const int64_t *s, const int64_t *idx, int r)
{
    int64_t off = 0;
    for (int j = 0; j < r - 2; j++) {
        int k = j - (r - t->ndim);
        if (k >= 0 && t->dims[k] != 1) off += idx[j] * s[k];
    }
    return off;
}

/* B's tile (K-chunk kt: rows kr, N-tile: columns nc; row stride Nn elements) from host
   memory into the WMEM slot at `slot`, its rows past kr set to -0 (the matmul's identity: one
   -0 word at zaddr read with stride 0), then `lw`. */
static int load_b_tile(ctx_t *c, uint64_t slot, uint64_t at, uint64_t kr, uint64_t nc,
                       uint64_t Nn, uint64_t zaddr)
{
    const unsigned N = c->n;
    TRY(tpuc_e_dma_in(&c->e, WMEM, slot, kr, nc, at, Nn * 2));
    if (kr < N) TRY(tpuc_e_dma_in(&c->e, WMEM, slot + kr, N - kr, 1, zaddr, 0));
    return tpuc_e_lw(&c->e, slot);
}

/* The same tile of a B stored transposed (B's K elements contiguous, its N' positions `rs`
   elements apart): nc WMEM rows of kr elements, loaded transposed. The lanes past kr are -0
   (the DMA's pad): the K padding; the rows past nc only feed output columns never stored. */
static int load_bt_tile(ctx_t *c, uint64_t slot, uint64_t at, uint64_t kr, uint64_t nc,
                        uint64_t rs)
{
    TRY(tpuc_e_dma_in(&c->e, WMEM, slot, nc, kr, at, rs * 2));
    return tpuc_e_lw_transpose(&c->e, slot);
}

/* ACC rows [0, rows) (an output tile, fp32) to host at `at` (row stride Nn elements): bf16
   through UB row `ub` (one rounding, `vop cvt`), or fp32 for the graph output. */
static int store_tile(ctx_t *c, uint64_t ub, uint64_t rows, uint64_t nc, uint64_t at,
                      uint64_t Nn, unsigned es)
{
    if (es == 4) return tpuc_e_dma_out(&c->e, ACC, 0, rows, nc, at, Nn * 4);
    TRY(tpuc_e_vop(&c->e, V_CVT, ACC, 0, -1, 0, 0, UB, ub, rows));
    return tpuc_e_dma_out(&c->e, UB, ub, rows, nc, at, Nn * 2);
}

int tpuc_emit_matmul2(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpu_core_geom_t *gm = &c->hw->geom;
    const tpuc_tensor_t *a = &g->t[n->in[0]], *b = &g->t[n->in[1]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    TRY(tpuc_tl_layer_begin(c, n, b->is_const ? "B bf16 (RNE from fp32), -0 bf16 (WMEM padding)"
                                              : "-0 bf16 (WMEM padding)"));
    /* B's element strides: row-major, or a view of a Transpose's input (transpose_is_view) */
    int64_t bs[TPUC_MAX_DIMS];
    tpuc_attn_strides(b->dims, b->ndim, bs);
    const tpuc_node_t *bt = b->producer >= 0 ? &g->n[b->producer] : NULL;
    const tpuc_tensor_t *bsrc = b;
    if (bt && transpose_is_view(g, bt)) {
        int64_t xs[TPUC_MAX_DIMS];
        bsrc = &g->t[bt->in[0]];
        tpuc_attn_strides(bsrc->dims, bsrc->ndim, xs);
        for (int j = 0; j < b->ndim; j++) bs[j] = xs[bt->perm[j]];
    }
    const int bT = bs[b->ndim - 2] == 1 && b->ndim >= 2 && bsrc != b; /* K contiguous: lw transpose */
    if (check_in(c, a) || (!b->is_const && check_in(c, bsrc)) || out_plain(c, y)) return -1;
    uint64_t baddr = bsrc->lay.addr;
    if (b->is_const) { /* batched weights: row-major bf16 in the image, read as B is */
        const int64_t e = tpuc_tensor_elems(b);
        int64_t off = tpuc_tl_img_alloc(c, (uint64_t)e * 2);
        if (off < 0) return -1;
        for (int64_t i = 0; i < e; i++)
            ((uint16_t *)(c->p->image + off))[i] = tpuc_f32_to_bf16(b->f[i]);
        baddr = tpuc_tl_img_addr(c, off);
    }
    const int r = y->ndim;
    const uint64_t M = (uint64_t)y->dims[r - 2], Nn = (uint64_t)y->dims[r - 1];
    const uint64_t K = (uint64_t)a->dims[a->ndim - 1];
    const uint64_t KT = (K + N - 1) / N, NT = (Nn + N - 1) / N;
    const uint64_t slots = min64(2, c->slots), es = y->lay.esize;
    /* UB: KT chunks of mt rows and a bf16 output tile; ACC: one output tile */
    uint64_t mt = min64(min64(M, 65535), gm->ub_rows / (KT + 1));
    mt = min64(mt, gm->acc_rows);
    if (mt < 1) CERR(c, "a row of K = %llu elements does not fit UB", (unsigned long long)K);
    tpuc_tl_hw_mark(c, (KT + 1) * mt, mt, slots * N);
    int64_t G = 1;
    for (int j = 0; j < r - 2; j++) G *= y->dims[j];
    tpuc_layer_t *L = &c->p->layers[c->p->nlayers - 1];
    L->macs = (uint64_t)G * M * K * Nn;
    L->k = K;
    L->nout = Nn;
    /* one -0 word: the rows of a partial K-tile past K (stride 0, the pad is -0 too) */
    int64_t zoff = tpuc_tl_img_alloc(c, 64);
    if (zoff < 0) return -1;
    for (int i = 0; i < 32; i++) ((uint16_t *)(c->p->image + zoff))[i] = BF16_NEG_ZERO;
    const uint64_t zaddr = tpuc_tl_img_addr(c, zoff);
    int64_t idx[TPUC_MAX_DIMS] = {0};
    uint64_t step = 0;
    do {
        int64_t as[TPUC_MAX_DIMS];
        tpuc_attn_strides(a->dims, a->ndim, as);
        const uint64_t ab = a->lay.addr + (uint64_t)lead_off(a, as, idx, r) * 2;
        const uint64_t bb = baddr + (uint64_t)lead_off(b, bs, idx, r) * 2;
        const uint64_t bk = (uint64_t)bs[b->ndim - 2], bn = (uint64_t)bs[b->ndim - 1];
        int64_t yoff = 0, ys[TPUC_MAX_DIMS];
        tpuc_attn_strides(y->dims, r, ys);
        for (int j = 0; j < r - 2; j++) yoff += idx[j] * ys[j];
        const uint64_t yb = y->lay.addr + (uint64_t)yoff * es;
        for (uint64_t m0 = 0; m0 < M; m0 += mt) {
            const uint64_t rows = min64(mt, M - m0);
            for (uint64_t kt = 0; kt < KT; kt++)
                TRY(tpuc_e_dma_in(&c->e, UB, kt * mt, rows, min64(N, K - kt * N),
                                  ab + (m0 * K + kt * N) * 2, K * 2));
            for (uint64_t nt = 0; nt < NT; nt++) {
                const uint64_t nc = min64(N, Nn - nt * N);
                for (uint64_t kt = 0; kt < KT; kt++) {
                    const uint64_t kr = min64(N, K - kt * N), slot = (step++ % slots) * N;
                    if (bT) TRY(load_bt_tile(c, slot, bb + (nt * N * bn + kt * N) * 2, kr, nc, bn));
                    else TRY(load_b_tile(c, slot, bb + (kt * N * bk + nt * N * bn) * 2, kr, nc, bk, zaddr));
                    TRY(tpuc_e_mm(&c->e, kt * mt, 0, rows, kt > 0));
                }
                TRY(store_tile(c, KT * mt, rows, nc, yb + (m0 * Nn + nt * N) * es, Nn, (unsigned)es));
            }
        }
    } while (next_index(idx, y->dims, r - 2));
    return 0;
}
