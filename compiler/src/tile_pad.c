/* SPDX-License-Identifier: Apache-2.0 */
/* A Pad kept as a node (fold_pad.c): a Pad of the spatial axes of a SPATIAL activation with a
   constant, and a ConvTranspose's input dilated by its stride. No arithmetic: per channel
   tile and output image row, the row is written with the constant (rows of it DMA'd once
   from the constant image into UB, or ACC for an fp32 output), then the input row that
   lands there is DMA'd through UB into its pixels, every conv_s[1]-th one. The output is a
   clean SPATIAL buffer with whatever padding its own readers need. */
#include <string.h>

#include "tile_ctx.h"

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Wo rows of the constant in every lane at row 0 of mem (UB: bf16, ACC: fp32). */
static int load_constant_rows(ctx_t *c, const tpuc_node_t *n, unsigned mem, uint64_t wo)
{
    const unsigned N = c->n;
    if (mem == ACC) {
        int64_t off = tpuc_tl_img_alloc(c, wo * N * 4);
        if (off < 0) return -1;
        for (uint64_t i = 0; i < wo * N; i++) memcpy(c->p->image + off + i * 4, &n->pad_value, 4);
        TRY(tpuc_e_dma_in(&c->e, ACC, 0, wo, N, tpuc_tl_img_addr(c, off), (uint64_t)N * 4));
        return 0;
    }
    uint16_t b = tpuc_f32_to_bf16(n->pad_value);
    int64_t off = tpuc_tl_img_alloc(c, wo * N * 2);
    if (off < 0) return -1;
    for (uint64_t i = 0; i < wo * N; i++) memcpy(c->p->image + off + i * 2, &b, 2);
    TRY(tpuc_e_dma_in(&c->e, UB, 0, wo, N, tpuc_tl_img_addr(c, off), (uint64_t)N * 2));
    return 0;
}

int tpuc_emit_pad(ctx_t *c, const tpuc_node_t *n)
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
    if (tpuc_tl_alloc_clean(c, y)) return -1;
    const tpuc_layout_t *o = &y->lay;
    const unsigned es = o->esize;
    const unsigned fmem = es == 4 ? ACC : UB;
    uint64_t B = (uint64_t)x->dims[0], C = l->cols, H = l->h, W = l->w;
    uint64_t Ho = o->h, Wo = o->w, Cy = o->cols;
    uint64_t pt = (uint64_t)n->conv_p[0], pl = (uint64_t)n->conv_p[1];
    uint64_t sh = (uint64_t)n->conv_s[0], sw = (uint64_t)n->conv_s[1];
    uint64_t ws = l->wstep ? l->wstep : 1;
    /* UB: the constant rows [0, Wo) (bf16 output), the input row at [Wo, Wo + W) */
    if (Wo + W > gm->ub_rows || (es == 4 && Wo + W > gm->acc_rows) || W > 65535 || Wo > 65535)
        CERR(c, "an output row of %llu pixels and an input row of %llu do not fit UB together",
             (unsigned long long)Wo, (unsigned long long)W);
    tpuc_tl_hw_mark(c, Wo + W, es == 4 ? Wo + W : 0, 0);
    if (load_constant_rows(c, n, fmem, Wo)) return -1;
    uint64_t CT = (C + N - 1) / N;
    for (uint64_t t = 0; t < CT; t++) {
        uint64_t ct = min_u64(N, C - t * N);
        for (uint64_t b = 0; b < B; b++) {
            for (uint64_t oh = 0; oh < Ho; oh++) {
                uint64_t p = b * o->img + o->off + oh * o->rpitch;
                /* the whole output row: the constant */
                TRY(tpuc_e_dma_out(&c->e, fmem, 0, Wo, ct, o->addr + (p * Cy + t * N) * es, Cy * es));
                if (oh < pt || (oh - pt) % sh || (oh - pt) / sh >= H) continue;
                /* the input row that lands here: its pixels every sw-th from column pl */
                uint64_t q = b * l->img + l->off + (oh - pt) / sh * l->rpitch;
                TRY(tpuc_e_dma_in(&c->e, UB, Wo, W, ct, l->addr + (q * C + t * N) * 2, ws * C * 2));
                if (fmem == ACC) TRY(tpuc_e_vop(&c->e, V_CVT, UB, Wo, -1, 0, 0, ACC, Wo, W));
                TRY(tpuc_e_dma_out(&c->e, fmem, Wo, W, ct, o->addr + ((p + pl) * Cy + t * N) * es, sw * Cy * es));
            }
        }
    }
    return 0;
}
