/* SPDX-License-Identifier: Apache-2.0 */
/* TPUC_OP_CHANNELS (channels.c): output channel j of a Conv/pool output is channel
   src(j) = (k % g) * (C/g) + k / g, k = start + j, of its input (g = 1: a Slice of the
   channels; start = 0: torch's channel_shuffle). No arithmetic: each run of output channels
   whose sources are consecutive (at most N of them) is DMA'd through UB from the input's
   columns to the output's, as Concat does; a run is all the channels of a Slice, one channel
   of a shuffle. Rows per DMA: every pixel of the batch when both layouts space their pixels
   evenly (no padding), else one image row. The output is a clean SPATIAL buffer with the
   padding its readers need.
   TPUC_OP_TOROWS / TPUC_OP_TOPIXELS (ConvNeXt's permutes): the same copies, every channel
   tile of one image row at a time, between a Conv/pool layout's pixels and the rows of a
   row-major [B, H, W, C] (pixel (b, h, w) is row (b H + h) W + w).
   ViT's token rows (fold_vit.c): x[:, i] of a row-major [B, L, D] (TPUC_OP_PICK) is one
   strided DMA per channel tile, row i of each image; a Concat on axis 1 of row-major
   [B, L_k, D] tensors (the class token, a constant, and the patch rows) copies each input's
   rows to its place in every image's L rows, a constant's from the constant image (rounded
   to bf16 once at compile time, as every stored activation is). */
#include <string.h>

#include "tile_ctx.h"

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The input channel that output channel j copies. */
static uint64_t chan_src(const tpuc_node_t *n, uint64_t cin, uint64_t j)
{
    uint64_t g = (uint64_t)n->groups, k = (uint64_t)n->sl_start[1] + j;
    return (k % g) * (cin / g) + k / g;
}

/* Pixel (b, h, w) of layout l is row off + ((b H + h) W + w) wstep: no gaps between rows or
   images. */
static int evenly_spaced(const tpuc_layout_t *l)
{
    uint64_t ws = l->wstep ? l->wstep : 1;
    return l->rpitch == l->w * ws && l->img == l->h * l->rpitch;
}

int tpuc_emit_channels(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpu_core_geom_t *gm = &c->hw->geom;
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpuc_tensor_t *x = &g->t[n->in[0]];
    const tpuc_layout_t *l = &x->lay;
    TRY(tpuc_tl_layer_begin(c, n, "-"));
    if (l->kind != TPUC_LAYOUT_SPATIAL || l->esize != 2)
        CERR(c, "its input '%s' is not a bf16 Conv/pool layout (channels in the row)", x->name);
    if (n->groups < 1 || l->cols % (uint64_t)n->groups)
        CERR(c, "%d groups do not divide %llu channels", n->groups, (unsigned long long)l->cols);
    if (tpuc_tl_alloc_clean(c, y)) return -1;
    const tpuc_layout_t *o = &y->lay;
    const unsigned es = o->esize, fmem = es == 4 ? ACC : UB;
    const uint64_t Ci = l->cols, Co = o->cols, H = l->h, W = l->w, B = (uint64_t)x->dims[0];
    const uint64_t wsi = l->wstep ? l->wstep : 1, wso = o->wstep ? o->wstep : 1;
    const int dense = evenly_spaced(l) && evenly_spaced(o);
    const uint64_t R = dense ? B * H * W : W, segs = dense ? 1 : B * H;
    const uint64_t G = min_u64(min_u64(gm->ub_rows, 65535), es == 4 ? gm->acc_rows : gm->ub_rows);
    if (!dense && W > G) CERR(c, "an image row of %llu pixels does not fit UB", (unsigned long long)W);
    tpuc_tl_hw_mark(c, min_u64(R, G), es == 4 ? min_u64(R, G) : 0, 0);
    for (uint64_t j = 0; j < Co;) {
        const uint64_t src = chan_src(n, Ci, j);
        uint64_t len = 1;
        while (j + len < Co && len < N && chan_src(n, Ci, j + len) == src + len) len++;
        for (uint64_t s = 0; s < segs; s++) {
            /* segment s: image row s % H of image s / H (or, dense, the whole batch) */
            uint64_t pi = dense ? l->off : (s / H) * l->img + l->off + (s % H) * l->rpitch;
            uint64_t po = dense ? o->off : (s / H) * o->img + o->off + (s % H) * o->rpitch;
            for (uint64_t r0 = 0; r0 < R; r0 += G) {
                uint64_t rows = min_u64(G, R - r0);
                TRY(tpuc_e_dma_in(&c->e, UB, 0, rows, len, l->addr + ((pi + r0 * wsi) * Ci + src) * 2, wsi * Ci * 2));
                if (fmem == ACC) TRY(tpuc_e_vop(&c->e, V_CVT, UB, 0, -1, 0, 0, ACC, 0, rows));
                TRY(tpuc_e_dma_out(&c->e, fmem, 0, rows, len, o->addr + ((po + r0 * wso) * Co + j) * es, wso * Co * es));
            }
        }
        j += len;
    }
    return 0;
}

/* Rows [0, rows) of one image row, channels [col, col + ct): from src (stride sstride bytes
   per row) to dst (dstride) through UB (ACC for an fp32 output). */
static int copy_rows(ctx_t *c, uint64_t src, uint64_t sstride, uint64_t dst, uint64_t dstride,
                     uint64_t rows, uint64_t ct, unsigned es)
{
    const unsigned fmem = es == 4 ? ACC : UB;
    TRY(tpuc_e_dma_in(&c->e, UB, 0, rows, ct, src, sstride));
    if (fmem == ACC) TRY(tpuc_e_vop(&c->e, V_CVT, UB, 0, -1, 0, 0, ACC, 0, rows));
    TRY(tpuc_e_dma_out(&c->e, fmem, 0, rows, ct, dst, dstride));
    return 0;
}

int tpuc_emit_relayout(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpu_core_geom_t *gm = &c->hw->geom;
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpuc_tensor_t *x = &g->t[n->in[0]];
    const int to_rows = n->op == TPUC_OP_TOROWS;
    TRY(tpuc_tl_layer_begin(c, n, "-"));
    /* sp: the Conv/pool side's layout; [B, C, H, W] its dimensions */
    const tpuc_tensor_t *spt = to_rows ? x : y;
    const uint64_t B = (uint64_t)spt->dims[0], C = (uint64_t)spt->dims[1];
    const uint64_t H = (uint64_t)spt->dims[2], W = (uint64_t)spt->dims[3];
    if (x->lay.esize != 2) CERR(c, "its input '%s' is not bf16", x->name);
    if (to_rows) {
        if (x->lay.kind != TPUC_LAYOUT_SPATIAL) CERR(c, "internal: its input is not a Conv/pool layout");
        y->lay.kind = TPUC_LAYOUT_PLAIN;
        y->lay.cols = C;
        y->lay.rows = B * H * W;
        if (tpuc_tl_host_alloc(c, &y->lay)) return -1;
    } else {
        if (x->lay.kind != TPUC_LAYOUT_PLAIN || x->lay.cols != C)
            CERR(c, "internal: its input is not row-major [B, H, W, C]");
        if (tpuc_tl_alloc_clean(c, y)) return -1;
    }
    const tpuc_layout_t *sp = to_rows ? &x->lay : &y->lay, *rw = to_rows ? &y->lay : &x->lay;
    const unsigned es = y->lay.esize; /* the input is bf16, the output bf16 or fp32 */
    const uint64_t ws = sp->wstep ? sp->wstep : 1;
    if (W > gm->ub_rows || W > 65535 || (es == 4 && W > gm->acc_rows))
        CERR(c, "an image row of %llu pixels does not fit UB", (unsigned long long)W);
    tpuc_tl_hw_mark(c, W, es == 4 ? W : 0, 0);
    for (uint64_t t = 0; t * N < C; t++) {
        const uint64_t ct = C - t * N < N ? C - t * N : N;
        for (uint64_t s = 0; s < B * H; s++) {
            uint64_t pix = (s / H) * sp->img + sp->off + (s % H) * sp->rpitch, row = s * W;
            uint64_t pa = sp->addr + (pix * C + t * N) * (to_rows ? 2 : es);
            uint64_t ra = rw->addr + (row * C + t * N) * (to_rows ? es : 2);
            if (to_rows) {
                if (copy_rows(c, pa, ws * C * 2, ra, C * es, W, ct, es)) return -1;
            } else {
                if (copy_rows(c, ra, C * 2, pa, ws * C * es, W, ct, es)) return -1;
            }
        }
    }
    return 0;
}

int tpuc_emit_pick(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpu_core_geom_t *gm = &c->hw->geom;
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpuc_tensor_t *x = &g->t[n->in[0]];
    TRY(tpuc_tl_layer_begin(c, n, "-"));
    if (x->lay.kind != TPUC_LAYOUT_PLAIN || x->lay.esize != 2) CERR(c, "internal: its input is not row-major bf16");
    const uint64_t B = (uint64_t)x->dims[0], L = (uint64_t)x->dims[1];
    const uint64_t D = (uint64_t)(tpuc_tensor_elems(x) / (int64_t)(B * L));
    const unsigned es = y->lay.esize;
    y->lay.kind = TPUC_LAYOUT_PLAIN;
    y->lay.cols = (uint64_t)y->dims[y->ndim - 1];
    y->lay.rows = (uint64_t)(tpuc_tensor_elems(y) / (int64_t)y->lay.cols);
    if (y->lay.cols != x->lay.cols || y->lay.rows * y->lay.cols != B * D)
        CERR(c, "x[:, i] of a tensor of more than 3 dimensions is not supported");
    if (tpuc_tl_host_alloc(c, &y->lay)) return -1;
    const uint64_t G = es == 4 ? min_u64(gm->acc_rows, 65535) : min_u64(gm->ub_rows, 65535);
    tpuc_tl_hw_mark(c, min_u64(B, G), es == 4 ? min_u64(B, G) : 0, 0);
    for (uint64_t t = 0; t * N < D; t++) {
        const uint64_t ct = min_u64(N, D - t * N);
        for (uint64_t b0 = 0; b0 < B; b0 += G) {
            uint64_t nb = min_u64(G, B - b0);
            uint64_t src = x->lay.addr + (((b0 * L) + (uint64_t)n->sl_start[1]) * D + t * N) * 2;
            if (copy_rows(c, src, L * D * 2, y->lay.addr + (b0 * D + t * N) * es, D * es, nb, ct, es)) return -1;
        }
    }
    return 0;
}

/* The constant input t of a row-major Concat in the constant image as bf16; its address. */
static int64_t const_rows_bf16(ctx_t *c, const tpuc_tensor_t *t)
{
    int64_t e = tpuc_tensor_elems(t), off = tpuc_tl_img_alloc(c, (uint64_t)e * 2);
    if (off < 0) return -1;
    for (int64_t k = 0; k < e; k++) {
        uint16_t v = tpuc_f32_to_bf16(t->f[k]);
        memcpy(c->p->image + off + k * 2, &v, 2);
    }
    return off;
}

int tpuc_emit_concat_rows(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpu_core_geom_t *gm = &c->hw->geom;
    tpuc_tensor_t *y = &g->t[n->out[0]];
    TRY(tpuc_tl_layer_begin(c, n, "-"));
    const uint64_t B = (uint64_t)y->dims[0], L = (uint64_t)y->dims[1], D = (uint64_t)y->dims[2];
    const unsigned es = y->lay.esize;
    y->lay.kind = TPUC_LAYOUT_PLAIN;
    y->lay.cols = D;
    y->lay.rows = B * L;
    if (tpuc_tl_host_alloc(c, &y->lay)) return -1;
    const uint64_t G = es == 4 ? min_u64(gm->acc_rows, 65535) : min_u64(gm->ub_rows, 65535);
    tpuc_tl_hw_mark(c, min_u64(L, G), es == 4 ? min_u64(L, G) : 0, 0);
    uint64_t row0 = 0; /* the input's first row within an image's L */
    for (int k = 0; k < n->nin; k++) {
        const tpuc_tensor_t *x = &g->t[n->in[k]];
        const uint64_t Lk = (uint64_t)x->dims[1];
        uint64_t base;
        if (x->is_const) {
            int64_t off = const_rows_bf16(c, x);
            if (off < 0) CERR(c, "out of memory");
            base = tpuc_tl_img_addr(c, off);
        } else {
            if (x->lay.kind != TPUC_LAYOUT_PLAIN || x->lay.esize != 2 || x->lay.cols != D)
                CERR(c, "internal: input %d is not row-major bf16 [B, L, D]", k);
            base = x->lay.addr;
        }
        for (uint64_t t = 0; t * N < D; t++) {
            const uint64_t ct = min_u64(N, D - t * N);
            for (uint64_t b = 0; b < B; b++)
                for (uint64_t r0 = 0; r0 < Lk; r0 += G) {
                    uint64_t rows = min_u64(G, Lk - r0);
                    uint64_t src = base + ((b * Lk + r0) * D + t * N) * 2;
                    uint64_t dst = y->lay.addr + ((b * L + row0 + r0) * D + t * N) * es;
                    if (copy_rows(c, src, D * 2, dst, D * es, rows, ct, es)) return -1;
                }
        }
        row0 += Lk;
    }
    return 0;
}
