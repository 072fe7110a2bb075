/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 4: graph -> program. Lays out host memory (activation buffers from 0x1000, then the
   constant image: weight tiles in bf16, biases and scales in fp32), and for every node picks
   the tiles that fit UB / ACC / WMEM and asks emit.c for the instructions: K-chunks of the
   activation DMA'd into UB, weight tiles streamed through the WMEM slots with each `lw` right
   after the previous `matmul` (so it overlaps it), bias and activation fused into the VPU
   epilogue, results DMA'd out. docs/compiler.md explains each lowering. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/numerics.h"
#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

#include "tile_ctx.h"

uint16_t tpuc_f32_to_bf16(float x)
{
    fp32_t f;
    memcpy(&f.v, &x, 4);
    return fp32_to_bf16(f).v;
}

float tpuc_bf16_to_f32(uint16_t b)
{
    uint32_t v = (uint32_t)b << 16;
    float f;
    memcpy(&f, &v, 4);
    return f;
}

static uint64_t up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
static uint64_t WS(const tpuc_layout_t *l) { return l->wstep ? l->wstep : 1; }
static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t gcd64(uint64_t a, uint64_t b) { while (b) { uint64_t t = a % b; a = b; b = t; } return a; }
static uint64_t lcm64(uint64_t a, uint64_t b) { return a / gcd64(a, b) * b; }

/* ---- the constant image ---- */
static int64_t img_alloc(ctx_t *c, uint64_t bytes)
{
    uint64_t off = up(c->p->image_bytes, 64);
    uint64_t end = off + bytes;
    if (end > ((uint64_t)1 << 32)) return -1;
    uint8_t *im = realloc(c->p->image, (size_t)end + 1);
    if (!im) return -1;
    memset(im + c->p->image_bytes, 0, (size_t)(end - c->p->image_bytes));
    c->p->image = im;
    c->p->image_bytes = end;
    return (int64_t)off;
}

static uint64_t img_addr(const ctx_t *c, int64_t off) { return c->img_base + (uint64_t)off; }

/* U fp32 rows of N lanes: lane l of row u = v[u*N + l] (0 past count). */
static int64_t img_rows_f32(ctx_t *c, const float *v, uint64_t count, uint64_t rows)
{
    int64_t off = img_alloc(c, rows * c->n * 4);
    if (off < 0) return -1;
    for (uint64_t i = 0; i < rows * c->n; i++) {
        float f = i < count ? v[i] : 0.0f;
        memcpy(c->p->image + off + i * 4, &f, 4);
    }
    return off;
}

/* ---- layer records ---- */
static int layer_begin(ctx_t *c, const tpuc_node_t *n, const char *consts)
{
    tpuc_prog_t *p = c->p;
    if (p->nlayers == p->caplayers) {
        size_t cap = p->caplayers ? p->caplayers * 2 : 16;
        tpuc_layer_t *l = realloc(p->layers, cap * sizeof *l);
        if (!l) return -1;
        p->layers = l;
        p->caplayers = cap;
    }
    tpuc_layer_t *l = &p->layers[p->nlayers++];
    memset(l, 0, sizeof *l);
    l->node = tpuc_strdup(n->name);
    char op[200];
    snprintf(op, sizeof op, "%s%s%s%s", n->op_type,
             n->fuse_act == TPUC_OP_RELU ? "+Relu" : n->fuse_act == TPUC_OP_SIGMOID ? "+Sigmoid"
             : n->fuse_act == TPUC_OP_TANH ? "+Tanh" : n->fuse_act == TPUC_OP_GELU ? "+Gelu"
             : n->fuse_act == TPUC_OP_ERF ? "+Erf" : "",
             n->fuse_softmax ? "+Softmax" : "", "");
    l->op = tpuc_strdup(op);
    l->consts = tpuc_strdup(consts);
    l->first_insn = c->e.count;
    c->e.mxu_rows = 0;
    if (!l->node || !l->op || !l->consts) return -1;
    return tpuc_asm(p, "\n# ---- node '%s' (%s) ----\n", n->name, op);
}

static tpuc_layer_t *cur_layer(ctx_t *c) { return &c->p->layers[c->p->nlayers - 1]; }

static void hw_mark(ctx_t *c, uint64_t ub, uint64_t acc, uint64_t wm)
{
    tpuc_layer_t *l = cur_layer(c);
    l->ub_hi = max64(l->ub_hi, ub);
    l->acc_hi = max64(l->acc_hi, acc);
    l->wmem_hi = max64(l->wmem_hi, wm);
}

/* host_alloc for tile_norm.c (below) */
static int host_alloc(ctx_t *c, tpuc_layout_t *l, uint64_t slack_rows);

/* The helpers tile_norm.c shares (tile_ctx.h) */
int tpuc_tl_layer_begin(ctx_t *c, const tpuc_node_t *n, const char *consts) { return layer_begin(c, n, consts); }
void tpuc_tl_hw_mark(ctx_t *c, uint64_t ub, uint64_t acc, uint64_t wm) { hw_mark(c, ub, acc, wm); }
int tpuc_tl_host_alloc(ctx_t *c, tpuc_layout_t *l) { return host_alloc(c, l, 0); }
int64_t tpuc_tl_img_alloc(ctx_t *c, uint64_t bytes) { return img_alloc(c, bytes); }
int64_t tpuc_tl_img_rows_f32(ctx_t *c, const float *v, uint64_t count, uint64_t rows) { return img_rows_f32(c, v, count, rows); }
uint64_t tpuc_tl_img_addr(const ctx_t *c, int64_t off) { return img_addr(c, off); }

/* ---- layouts (host buffers) ---- */
typedef struct {
    unsigned pt, pl, pb, pr;
    int pad_kind;        /* 0 none needed, 1 zero, 2 -Inf */
    uint64_t stride_w;   /* lcm of the consumers' W strides */
    uint64_t kh, kw;     /* largest consumer kernel */
    uint64_t h_mult;     /* padded rows a multiple of this (a Conv with its MaxPool fused) */
} need_t;

static int pool_fusable(ctx_t *c, const tpuc_node_t *conv, int *pool_idx, int any_reader);
static int alloc_clean(ctx_t *c, tpuc_tensor_t *y);
int tpuc_tl_alloc_clean(ctx_t *c, tpuc_tensor_t *y) { return alloc_clean(c, y); }

static int consumer_needs(ctx_t *c, int ti, need_t *nd)
{
    memset(nd, 0, sizeof *nd);
    nd->stride_w = 1;
    nd->h_mult = 1;
    const tpuc_graph_t *g = c->g;
    for (size_t i = 0; i < g->nn; i++) {
        const tpuc_node_t *n = &g->n[i];
        if (n->op == TPUC_OP_DEAD || n->in[0] != ti) continue;
        if (n->op != TPUC_OP_CONV && n->op != TPUC_OP_MAXPOOL && n->op != TPUC_OP_AVGPOOL) continue;
        nd->pt = (unsigned)max64(nd->pt, (uint64_t)n->conv_p[0]);
        nd->pl = (unsigned)max64(nd->pl, (uint64_t)n->conv_p[1]);
        nd->pb = (unsigned)max64(nd->pb, (uint64_t)n->conv_p[2]);
        nd->pr = (unsigned)max64(nd->pr, (uint64_t)n->conv_p[3]);
        nd->stride_w = lcm64(nd->stride_w, (uint64_t)n->conv_s[1]);
        nd->stride_w = lcm64(nd->stride_w, (uint64_t)n->conv_s[0]);
        int pk = 0;
        if (n->op == TPUC_OP_CONV && (pk = pool_fusable(c, n, NULL, 0)) > 0)
            nd->h_mult = lcm64(nd->h_mult, (uint64_t)pk * (uint64_t)n->conv_s[0]);
        nd->kh = max64(nd->kh, (uint64_t)n->conv_k[0]);
        nd->kw = max64(nd->kw, (uint64_t)n->conv_k[1]);
        int p = n->conv_p[0] | n->conv_p[1] | n->conv_p[2] | n->conv_p[3];
        if (p) {
            int kind = n->op == TPUC_OP_MAXPOOL ? 2 : 1;
            if (nd->pad_kind && nd->pad_kind != kind) {
                c->node = n;
                CERR(c, "its input is padded by another consumer with a different value "
                     "(zero vs -Inf): not supported");
            }
            nd->pad_kind = kind;
        }
    }
    return 0;
}

/* When node j's reads happen: at its own place, or at the Conv it is fused into. */
static size_t read_at(const tpuc_graph_t *g, size_t j)
{
    return g->n[j].fused_into ? (size_t)g->n[j].fused_into - 1 : j;
}

/* The same buffer geometry: which rows hold pixels, pads and slack. */
static int same_buffer(const tpuc_layout_t *a, const tpuc_layout_t *b)
{
    return a->kind == b->kind && a->esize == b->esize && a->rows == b->rows && a->cols == b->cols &&
           a->img == b->img && a->off == b->off && a->rpitch == b->rpitch &&
           WS(a) == WS(b) && a->h == b->h && a->w == b->w && a->pad_t == b->pad_t &&
           a->pad_l == b->pad_l && a->pad_b == b->pad_b && a->pad_r == b->pad_r &&
           a->pad_value == b->pad_value;
}

/* A host buffer of rows x cols elements of es bytes plus slack rows. A freed buffer is
   reused (docs/compiler.md "Host memory"): DMAs run in program order, so the old tensor's
   last read precedes the new one's first write; a clean buffer (spatial_clean) is only ever
   written at its valid pixels, so its pads and slack keep the +0 (or the -Inf fill) of the
   first use, and it goes to a clean request of the same geometry and size only (so its pads
   are still clean when the program runs again on the same memory: the next chunk of a
   batch); another request's readers use only what its producer writes (slack rows feed
   discarded outputs alone), so it takes the smallest free buffer of another request that
   holds it. */
static int host_alloc(ctx_t *c, tpuc_layout_t *l, uint64_t slack_rows)
{
    uint64_t bytes = (l->rows + slack_rows) * l->cols * l->esize;
    c->reused = 0;
    c->p->act_all += up(bytes, 64);
    if (!c->hw->no_reuse) {
        /* a clean request: a clean buffer of its geometry; another: the smallest free buffer
           of another request that holds it. Never a clean buffer for another request: a
           batch run in chunks (tpu-infer) or steps runs the program again on the same host
           memory, and the clean tensor's pads must still be +0 (or -Inf) then. */
        hbuf_t *best = NULL;
        for (size_t i = 0; i < c->nbufs; i++) {
            hbuf_t *b = &c->bufs[i];
            if (!b->free || b->bytes < bytes || b->clean != c->clean_req) continue;
            if (c->clean_req ? b->bytes == bytes && same_buffer(&b->key, l) : !best || b->bytes < best->bytes)
                best = b;
        }
        if (best) {
            best->free = 0;
            l->addr = best->key.addr;
            c->reused = 1;
            return 0;
        }
    }
    if (c->nbufs == c->capbufs) {
        size_t cap = c->capbufs ? 2 * c->capbufs : 64;
        hbuf_t *nb = realloc(c->bufs, cap * sizeof *nb);
        if (!nb) return -1;
        c->bufs = nb;
        c->capbufs = cap;
    }
    l->addr = up(c->host_top, 64);
    c->bufs[c->nbufs++] = (hbuf_t){ *l, bytes, c->clean_req, 0, 0 };
    c->host_top = l->addr + bytes;
    if (c->host_top > ((uint64_t)3 << 30)) {
        tpuc_err(c->err, c->errlen, "the activations need more than 3 GiB of host memory");
        return -1;
    }
    return 0;
}

/* SPATIAL buffer with clean padding (pt, pl, pb, pr) for an [B, C, H, W] tensor. */
static int spatial_clean(ctx_t *c, tpuc_tensor_t *t, const need_t *nd)
{
    tpuc_layout_t *l = &t->lay;
    uint64_t B = (uint64_t)t->dims[0], C = (uint64_t)t->dims[1];
    uint64_t H = t->ndim == 4 ? (uint64_t)t->dims[2] : 1, W = (uint64_t)t->dims[t->ndim - 1];
    l->kind = TPUC_LAYOUT_SPATIAL;
    l->cols = C;
    l->h = H;
    l->w = W;
    l->pad_t = nd->pt; l->pad_l = nd->pl; l->pad_b = nd->pb; l->pad_r = nd->pr;
    l->pad_value = nd->pad_kind == 2 ? BF16_NEG_INF : 0;
    l->rpitch = up(nd->pl + W + nd->pr, nd->stride_w);
    l->img = up(up(nd->pt + H + nd->pb, nd->h_mult) * l->rpitch, nd->stride_w);
    l->off = nd->pt * l->rpitch + nd->pl;
    l->rows = B * l->img;
    c->clean_req = 1;
    int rc = host_alloc(c, l, l->off + (nd->kh + 1) * l->rpitch + nd->kw + 1);
    c->clean_req = 0;
    return rc;
}

/* Records a -Inf fill of a SPATIAL buffer's pad ring (its rows and the slack its readers may
   touch): the whole buffer is prefilled when the job is set up (a --load of the fill file),
   the producer overwrites the valid pixels. */
static int add_fill(ctx_t *c, const tpuc_layout_t *l, const need_t *nd)
{
    tpuc_prog_t *p = c->p;
    if (c->reused) return 0; /* filled for its first tensor, and its pads never written */
    if (p->fills >= 64) CERR(c, "more than 64 -Inf padded buffers");
    p->fill_addr[p->fills] = l->addr;
    p->fill_bytes[p->fills] = (l->rows + l->off + (nd->kh + 1) * l->rpitch + nd->kw + 1) * l->cols * 2;
    p->fills++;
    return 0;
}

/* ---- the matmul engine: C[m, :] = sum over K-chunks of A-chunk[m] x W-tile ---- */
#define TPUC_MAX_CHUNKS_VIEW 4096 /* regions kept in UB: at most one per UB row */
typedef struct {
    unsigned T, U;               /* K-chunks, N-tiles */
    uint64_t *a_addr;            /* per chunk: host address of M row 0 */
    unsigned *a_cols;
    uint64_t a_mstride;          /* bytes between M rows */
    int64_t w_off;               /* image offset of tile (j, nt): w_off + (nt*T + j)*N*N*2 */
    int64_t b_off;               /* image offset of U bias rows (fp32), -1 none */
    int act;                     /* fused activation (TPUC_OP_*) or 0 */
    int softmax;                 /* fused softmax over the Nout columns */
    uint64_t nout;               /* output columns */
    uint64_t mtot;               /* M rows */
    /* output */
    const tpuc_layout_t *out;    /* PLAIN rows x nout, or SPATIAL */
    int scatter;                 /* SPATIAL output written per valid image row */
    uint64_t r_img, r_pitch, oh, ow; /* the r-space of a Conv (scatter) */
    unsigned pool_k;             /* a k x k, stride k MaxPool fused into the epilogue (0 none) */
    int out_kept;                /* N-tile nt of the output stays in UB at out_row + nt*mt
                                    (one M-tile; the next Gemm reads it there): no dma_out */
    int in_kept;                 /* K-chunk j of the input is in UB at in_row + j*mt: no dma_in */
    uint64_t out_row, in_row;
    int stage;                   /* out_kept, UB full: the N-tiles are kept in fp32 in ACC at
                                    stage_row + nt*mt, then one vop cvt puts them in UB at
                                    out_row (over the activation chunks, no longer read) */
    uint64_t stage_row;
    uint64_t pool_g;             /* with pool_k: the rows are an IM2COL input's pooled windows
                                    (tpuc.h ipool), pool_g pooled pixels per tile, each tile
                                    k*k blocks; the output rows are the pooled pixels */
    uint64_t col0;               /* the first output column written (a grouped Conv's part) */
    int gather;                  /* a strided Conv on its valid rows (docs/compiler.md "Dense
                                    strided Convs"): mtot, r_img, r_pitch are the dense output
                                    rows (r_pitch = ow); the chunks are DMA'd in the r-space of
                                    g_img, g_pitch rows, one matmul per output row */
    uint64_t g_img, g_pitch;
    const tpuc_tensor_t *res;    /* a residual Add fused into the epilogue (add_fusable): the
                                    other input, added to the bf16 output rows, then res_act */
    int res_first;               /* the Conv's output is the Add's first input */
    int res_act;                 /* the Add's fused activation (Relu) or 0 */
    /* K-chunks read as shifted views of one region (mm_views): chunk j is region vcls[j]'s
       rows from vsh[j] on; region g holds rows [m0, m0 + rows + vmax[g]) of the chunk with the
       lowest address, vaddr[g] (vcols[g] columns). nv = 0: each chunk its own region. */
    unsigned nv;
    unsigned *vcls, *vcols;
    uint64_t *vsh, *vmax, *vaddr;
    uint64_t vsum;               /* the sum of vmax */
    uint64_t vpad;               /* the largest vmax: region g is placed at g x (rows + vpad),
                                    so that a chunk's UB row is affine in its region */
} mm_t;

static unsigned act_vop(int act)
{
    switch (act) {
    case TPUC_OP_RELU: return V_RELU;
    case TPUC_OP_SIGMOID: return V_SIGMOID;
    case TPUC_OP_TANH: return V_TANH;
    case TPUC_OP_GELU: return V_GELU;
    case TPUC_OP_ERF: return V_ERF;
    default: return V_CVT;
    }
}

/* The fused activation on rows [row, row + rows) of mem, written to dmem/drow (in place
   allowed). Clip is max with a row of lo, then min with a row of hi: clip_row and clip_row + 1
   in ACC (fp32, every lane), loaded by load_clip. */
static int emit_act(ctx_t *c, int act, unsigned mem, uint64_t row, unsigned dmem, uint64_t drow,
                    uint64_t rows, uint64_t clip_row)
{
    if (act == TPUC_OP_CLIP) {
        TRY(tpuc_e_vop(&c->e, V_MAX, mem, row, ACC, clip_row, 1, dmem, drow, rows));
        TRY(tpuc_e_vop(&c->e, V_MIN, dmem, drow, ACC, clip_row + 1, 1, dmem, drow, rows));
        return 0;
    }
    TRY(tpuc_e_vop(&c->e, act_vop(act), mem, row, -1, 0, 0, dmem, drow, rows));
    return 0;
}

/* Two ACC rows holding a Clip's lo and hi in every lane, at acc row `at`. */
static int load_clip(ctx_t *c, const tpuc_node_t *n, uint64_t at)
{
    float v[512];
    for (unsigned i = 0; i < c->n; i++) { v[i] = n->clip_lo; v[c->n + i] = n->clip_hi; }
    int64_t off = img_rows_f32(c, v, 2 * c->n, 2);
    if (off < 0) return -1;
    TRY(tpuc_e_dma_in(&c->e, ACC, at, 2, c->n, img_addr(c, off), (uint64_t)c->n * 4));
    return 0;
}

int tpuc_tl_emit_act(ctx_t *c, int act, unsigned mem, uint64_t row, unsigned dmem, uint64_t drow,
                     uint64_t rows, uint64_t clip_row)
{
    return emit_act(c, act, mem, row, dmem, drow, rows, clip_row);
}

int tpuc_tl_load_clip(ctx_t *c, const tpuc_node_t *n, uint64_t at) { return load_clip(c, n, at); }

/* Writes on-chip rows holding M rows [m0, m0 + mt) of output columns [col, col + ct) to the
   output buffer: one dma_out for a PLAIN or r-space output, one per valid image row for a
   SPATIAL buffer with clean padding (scatter). */
static int write_rows(ctx_t *c, const mm_t *m, unsigned mem, uint64_t row, uint64_t m0,
                      uint64_t mt, uint64_t col, uint64_t ct)
{
    const tpuc_layout_t *o = m->out;
    uint64_t es = o->esize;
    if (!m->scatter) {
        TRY(tpuc_e_dma_out(&c->e, mem, row, mt, ct, o->addr + (m0 * o->cols + col) * es,
                           o->cols * es));
        return 0;
    }
    /* r = b*r_img + oh*r_pitch + ow; valid oh < OH, ow < OW */
    uint64_t r = m0, end = m0 + mt;
    while (r < end) {
        uint64_t b = r / m->r_img, rem = r % m->r_img;
        uint64_t y = rem / m->r_pitch, x = rem % m->r_pitch;
        if (y >= m->oh) { r = (b + 1) * m->r_img; continue; }
        if (x >= m->ow) { r = b * m->r_img + (y + 1) * m->r_pitch; continue; }
        uint64_t len = min64(m->ow - x, end - r);
        uint64_t pix = b * o->img + o->off + y * o->rpitch + x * WS(o);
        TRY(tpuc_e_dma_out(&c->e, mem, row + (r - m0), len, ct,
                           o->addr + (pix * o->cols + col) * es, o->cols * es));
        r += len;
    }
    return 0;
}

/* A fused pool's output (mm_t.pool_k = k): on-chip rows holding r-space rows [m0, m0 + nr)
   after the max passes, pooled pixel (ph, pw) at r = k*ph*r_pitch + k*pw; each valid pooled
   row's band of k*(PW-1)+1 rows goes to its row of the output (the rows between the bands,
   the other conv rows of each window, are not written). */
static int write_pooled(ctx_t *c, const mm_t *m, unsigned mem, uint64_t row, uint64_t m0,
                        uint64_t nr, uint64_t col, uint64_t ct)
{
    const tpuc_layout_t *o = m->out;
    const uint64_t es = o->esize, band = m->pool_k * m->r_pitch, len = m->pool_k * (m->ow - 1) + 1;
    for (uint64_t r = m0; r < m0 + nr; r += band) {
        uint64_t b = r / m->r_img, ph = r % m->r_img / band;
        if (ph >= m->oh) continue;
        if (r - m0 + len > nr) CERR(c, "internal: a pooled row's band past the tile");
        uint64_t pix = b * o->img + ph * o->rpitch;
        TRY(tpuc_e_dma_out(&c->e, mem, row + (r - m0), len, ct, o->addr + (pix * o->cols + col) * es,
                           o->cols * es));
    }
    return 0;
}

/* A fused residual Add (mm_t.res) on r-space rows [m0, m0 + nr) of columns [col, col + ct):
   the Conv's bf16 output at UB row `frow`, the other input's pixels DMA'd to UB row `srow`
   (at their r-space rows), added as the Add node does (UB + UB into ACC when an activation
   follows, then the activation into UB; else into UB) with the same operand order, so the
   bits of the unfused Conv -> Add. The sum goes to ACC row `arow` (the tile's accumulators,
   read already) and ends at frow. Junk rows (past an image row's valid pixels) are not
   gathered: with a geometry unlike the r-space, each image row's run is added on its own, and
   the activation then reads ACC rows that all hold a value. */
static int add_rows(ctx_t *c, const mm_t *m, uint64_t frow, uint64_t srow, uint64_t arow,
                    uint64_t m0, uint64_t nr, uint64_t col, uint64_t ct, int per_image)
{
    const tpuc_layout_t *s = &m->res->lay;
    const uint64_t C = s->cols;
    const unsigned dm = m->res_act ? ACC : UB;
    const uint64_t dr = m->res_act ? arow : frow;
#define ADD_RUN(off, len) \
    TRY(tpuc_e_vop(&c->e, V_ADD, UB, m->res_first ? frow + (off) : srow + (off), UB, \
                   m->res_first ? srow + (off) : frow + (off), 0, dm, dr + (off), (len)))
    if (s->img == m->r_img && s->rpitch == m->r_pitch && WS(s) == 1 && s->off == 0) {
        /* the same rows: one DMA, one add */
        TRY(tpuc_e_dma_in(&c->e, UB, srow, nr, ct, s->addr + (m0 * C + col) * 2, C * 2));
        ADD_RUN(0, nr);
    } else {
        /* run i's add after run i + 1's DMA: a DMA waits for an idle VPU, an add does not wait
           for a DMA into other rows, so each add runs beside the next DMA; within an image
           where the tiles start at images or restart in each (per_image), so that every
           image's runs are the same instructions (the loop pass rolls them) */
        uint64_t poff = 0, plen = 0, pimg = 0;
        for (uint64_t r = m0, end = m0 + nr; r < end;) {
            uint64_t b = r / m->r_img, rem = r % m->r_img;
            uint64_t y = rem / m->r_pitch, x = rem % m->r_pitch;
            if (y >= m->oh) { r = (b + 1) * m->r_img; continue; }
            if (x >= m->ow) { r = b * m->r_img + (y + 1) * m->r_pitch; continue; }
            if (per_image && plen && b != pimg) { ADD_RUN(poff, plen); plen = 0; }
            pimg = b;
            uint64_t len = min64(m->ow - x, end - r);
            uint64_t pix = b * s->img + s->off + y * s->rpitch + x * WS(s);
            TRY(tpuc_e_dma_in(&c->e, UB, srow + (r - m0), len, ct, s->addr + (pix * C + col) * 2,
                              WS(s) * C * 2));
            if (plen) ADD_RUN(poff, plen);
            poff = r - m0; plen = len;
            r += len;
        }
        if (plen) ADD_RUN(poff, plen);
    }
#undef ADD_RUN
    if (m->res_act) TRY(tpuc_e_vop(&c->e, V_RELU, ACC, arow, -1, 0, 0, UB, frow, nr));
    return 0;
}

/* The M rows of one tile: as many as ACC (the bias rows at the top, then the output regions)
   and UB hold; *keep: every K-chunk of the tile stays in UB (else two stream through). Not
   rounded to whole pool windows. */
static uint64_t mm_rows(ctx_t *c, const mm_t *m, int *keep, int *pf)
{
    const tpu_core_geom_t *gm = &c->hw->geom;
    const unsigned T = m->T, U = m->U;
    const unsigned es = m->out->esize;
    const int clip = m->act == TPUC_OP_CLIP;
    uint64_t acc_avail = gm->acc_rows > U + 2 ? gm->acc_rows - (m->b_off >= 0 ? U : 0) - (clip ? 2 : 0) : 0;
    uint64_t e_ub = m->softmax ? (es == 2 ? U : 0) : m->res ? 3 : 2; /* UB epilogue rows per M row */
    /* an r-space pool's max passes need two more regions; a grouped one's run in place */
    uint64_t a_acc = m->softmax ? (uint64_t)U * (es == 4 ? 2 : 1) : m->pool_k && !m->pool_g ? 4 : 2;
    uint64_t lim = min64(min64(m->mtot, 65535), acc_avail / a_acc);
    /* one M-tile's chunks take R x mt + D UB rows: R = T, D = 0, or the regions of shared
       views (mm_views) */
    const uint64_t R = m->nv ? m->nv : T, D = m->nv ? (uint64_t)m->nv * m->vpad : 0, ub = gm->ub_rows;
    uint64_t mt_keep = ub > D ? min64(lim, (ub - D) / (R + e_ub)) : 0;
    uint64_t mt_stream = min64(lim, gm->ub_rows / (2 + e_ub));
    *keep = mt_keep >= min64(m->mtot, c->n) || mt_keep >= mt_stream;
    /* several M-tiles with every weight tile in WMEM: the next M-tile's chunks are DMA'd into a
       second buffer while this one's matmuls run (run_mm), if that costs at most half the
       rows (streamed weights would rather keep the larger tile: fewer reloads) */
    const uint64_t S = (uint64_t)T * U, G = c->slots / 2;
    const uint64_t mt_pf = ub > 2 * D ? min64(lim, (ub - 2 * D) / (2 * R + e_ub)) : 0;
    *pf = *keep && !m->in_kept && c->slots >= 2 && S <= 2 * G && m->mtot > mt_keep &&
          2 * mt_pf >= mt_keep;
    return *pf ? mt_pf : *keep ? mt_keep : mt_stream;
}

/* Shared views (docs/compiler.md "Shifted views"): K-chunks that read the same columns of the
   same host rows, only starting some rows later -- a Conv's kernel taps (i, j) over the same
   channels in r-space are the rows i*r_pitch + j later -- are one region in UB, DMA'd once,
   each chunk's matmul starting at its shift. The matmuls read the same values in the same
   order: the same bits, and the DMA of a 3 x 3 Conv's input once per channel chunk instead of
   up to nine times. Fills m->nv etc. (0: no chunk shares), or -1 out of memory. */
static int mm_views(ctx_t *c, mm_t *m)
{
    const unsigned T = m->T;
    m->nv = 0;
    if (c->hw->no_share || m->in_kept || !m->a_addr || T < 2 || m->a_mstride == 0) return 0;
    unsigned *cls = calloc(T, sizeof *cls), *cols = calloc(T, sizeof *cols);
    uint64_t *sh = calloc(T, sizeof *sh), *mx = calloc(T, sizeof *mx), *ad = calloc(T, sizeof *ad);
    if (!cls || !cols || !sh || !mx || !ad) {
        free(cls); free(cols); free(sh); free(mx); free(ad);
        return -1;
    }
    unsigned nv = 0;
    for (unsigned j = 0; j < T; j++) {
        unsigned g = 0;
        while (g < nv && !(cols[g] == m->a_cols[j] && m->a_addr[j] % m->a_mstride == ad[g] % m->a_mstride))
            g++;
        if (g == nv) { cols[nv] = m->a_cols[j]; ad[nv] = m->a_addr[j]; nv++; }
        if (m->a_addr[j] < ad[g]) ad[g] = m->a_addr[j];
        cls[j] = g;
    }
    uint64_t sum = 0;
    for (unsigned j = 0; j < T; j++) {
        sh[j] = (m->a_addr[j] - ad[cls[j]]) / m->a_mstride;
        mx[cls[j]] = max64(mx[cls[j]], sh[j]);
    }
    for (unsigned g = 0; g < nv; g++) sum += mx[g];
    if (nv == T) { /* nothing shared */
        free(cls); free(cols); free(sh); free(mx); free(ad);
        return 0;
    }
    m->nv = nv; m->vcls = cls; m->vcols = cols; m->vsh = sh; m->vmax = mx; m->vaddr = ad;
    m->vsum = sum;
    m->vpad = 0;
    for (unsigned g = 0; g < nv; g++) m->vpad = max64(m->vpad, mx[g]);
    return 0;
}

/* ---- weight streams (docs/compiler.md "One weight stream") ---- */
/* A layer's weight tiles through WMEM: T K-chunks x U N-tiles at image offset w_off (tile k:
   N-tile k / T, K-chunk k % T), DMA'd G tiles at a time, group gi at WMEM ring position
   (q0 + gi) % R, R = slots / G groups; step k's place in the stream is kp = KP(k) (streamed:
   each N-tile's K-chunks padded to Tp, a multiple of G, so that a group never spans two
   N-tiles); ng groups in all. */
typedef struct {
    unsigned T, U;
    uint64_t G, Tp, R, q0, S, ng, nout;
    int64_t w_off;
    int resident;
} wst_t;

static void wst_init(const ctx_t *c, wst_t *s, unsigned T, unsigned U, uint64_t nout,
                     int64_t w_off, uint64_t q0)
{
    const uint64_t S = (uint64_t)T * U, G0 = c->slots >= 2 ? c->slots / 2 : 1;
    s->T = T; s->U = U; s->S = S; s->nout = nout; s->w_off = w_off;
    /* streamed at N >= 64 one tile at a time (G = 1: a tile of 8 KiB or more, its DMA's fixed
       cost small): the next tile's DMA then overlaps each matmul, faster on every model
       measured (bench/RESULTS.md); at smaller N the groups' fewer DMAs are faster. Every
       tile in its own WMEM rows (S <= 2 G0): resident, DMA'd for the first M-tile only. */
    s->G = c->n >= 64 && S > 2 * G0 ? 1 : G0;
    s->resident = c->slots >= 2 && S <= 2 * G0;
    s->Tp = s->resident ? T : (T + s->G - 1) / s->G * s->G;
    s->R = c->slots >= 2 ? c->slots / s->G : 1;
    s->ng = s->resident ? (S + s->G - 1) / s->G : (uint64_t)U * s->Tp / s->G;
    s->q0 = q0 % s->R;
}

static uint64_t wst_kp(const wst_t *s, uint64_t k) { return k / s->T * s->Tp + k % s->T; }

static uint64_t wst_row(const ctx_t *c, const wst_t *s, uint64_t kp)
{
    return c->slots >= 2 ? ((kp / s->G + s->q0) % s->R * s->G + kp % s->G) * c->n : 0;
}

/* Group gi of stream s into its WMEM rows: G steps from step gi G on (resident: they may span
   N-tiles; streamed: steps of one N-tile); nothing past the end. A group of the last N-tile's
   tiles reads only their valid columns: dma_in pads the rest with -0, the image's own padding,
   so WMEM holds the same bits in fewer beats. */
static int wst_group(ctx_t *c, const wst_t *s, uint64_t gi)
{
    const uint64_t N = c->n, p = gi * s->G;
    const uint64_t nt = s->resident ? 0 : p / s->Tp, j = s->resident ? p : p % s->Tp;
    const uint64_t lim = s->resident ? s->S : s->T;
    if (nt >= s->U || j >= lim) return 0;
    const uint64_t k0 = nt * s->T + j, cnt = min64(s->G, lim - j);
    const uint64_t cols = k0 / s->T == s->U - 1 ? s->nout - (uint64_t)(s->U - 1) * N : N;
    return tpuc_e_dma_in(&c->e, WMEM, wst_row(c, s, p), cnt * N, cols,
                         img_addr(c, s->w_off + (int64_t)(k0 * N * N * 2)), N * 2);
}

/* The stream after s, which s's last M-tile starts (its first groups and lw) in its last
   steps: the next run_mm's, as the dry pass recorded it, when nothing else uses the MXU or
   WMEM in between and both stream with the same G; its tiles follow s's in the image (the
   weight arena). 0: none. */
static int wst_next(const ctx_t *c, const wst_t *s, wst_t *nx)
{
    const wplan_t *pl = c->plan;
    if (c->dry || !pl || !pl->ok || c->iw >= pl->n || s->resident || c->slots < 2) return 0;
    const wrec_t *r = &pl->rec[c->iw];
    if (r->gap || r->resident || r->G != s->G) return 0;
    wst_init(c, nx, r->T, r->U, r->nout, s->w_off + (int64_t)(s->S * c->n * c->n * 2),
             s->q0 + s->ng);
    return nx->G == s->G && !nx->resident;
}

static int run_mm_views(ctx_t *c, const mm_t *m);

/* The matmul engine over m's rows: with shared views when they let an M-tile keep its chunks
   in UB in at least as many rows (else as before, each chunk its own rows). */
static int run_mm(ctx_t *c, const mm_t *m)
{
    mm_t v = *m;
    if (mm_views(c, &v)) return -1;
    int rc;
    if (v.nv) {
        int k0, p0, k1, p1;
        uint64_t mt0 = mm_rows(c, m, &k0, &p0), mt1 = mm_rows(c, &v, &k1, &p1);
        int use = k1 && (mt1 >= mt0 || !k0);
        rc = use ? tpuc_asm(c->p, "# %u K-chunks read as shifted views of %u UB regions\n", v.T, v.nv) : 0;
        if (rc >= 0) rc = run_mm_views(c, use ? &v : m);
    } else {
        rc = run_mm_views(c, m);
    }
    free(v.vcls); free(v.vcols); free(v.vsh); free(v.vmax); free(v.vaddr);
    return rc;
}

/* M-tiles that the images cut alike (rowwise: output rows scattered, or an input gathered,
   per image row), so that every tile moves the same pattern and the loop pass rolls a layer,
   its images included, into one body: tiles of whole images, as many per tile as the fewest
   tiles need; else tiles of whole rows that restart at every image and
   cover only its vr valid rows (the r-space's rows past the image's last output row are
   junk no reader takes), balanced (*img_t set to the tile; also one image, or not rowwise
   where the tiles are then all alike, where the image has such rows: a tile of junk alone
   is not computed); either with no more
   tiles than mt rows a tile take, or with up to more_8ths/8 more; else tiles of whole rows
   (at most 1/8 of the tile given up) where rows_only (a scatter or a residual: its DMAs
   per image row), else mt. Returns the tile's rows. */
static uint64_t cut_alike(uint64_t mtot, uint64_t r_img, uint64_t r_pitch, uint64_t vr,
                          uint64_t mt, int rowwise, int rows_only, unsigned more_8ths,
                          uint64_t *img_t)
{
    const uint64_t nimg = mtot / r_img, n0 = (mtot + mt - 1) / mt;
    const uint64_t ai = mt / r_img * r_img, ar = mt / r_pitch * r_pitch;
#define FEWER(n1) ((n1) * 8 <= n0 * (8 + more_8ths))
    *img_t = 0;
    if (rowwise && mt >= r_img) {
        const uint64_t k = (nimg + n0 - 1) / n0;
        if (k * r_img <= mt) return k * r_img;
        return FEWER((nimg + ai / r_img - 1) / (ai / r_img)) ? ai : mt;
    }
    if (mt < r_img && ar && r_img % r_pitch == 0 && vr % r_pitch == 0 && vr <= r_img &&
        ((rowwise && nimg > 1) || vr < r_img)) {
        const uint64_t vrows = vr / r_pitch, per = (vrows + ar / r_pitch - 1) / (ar / r_pitch);
        if (FEWER(nimg * per) && (rowwise || vrows % per == 0))
            return *img_t = (vrows + per - 1) / per * r_pitch;
    }
#undef FEWER
    const uint64_t a = mt >= r_img ? ai : ar;
    return rows_only && a * 8 >= mt * 7 ? a : mt;
}

/* The first row of the M-tile after the one of `rows` rows at m0: per-image tiles (img_t)
   skip the rows past the image's valid ones */
static uint64_t next_tile(uint64_t m0, uint64_t rows, uint64_t img_t, uint64_t r_img, uint64_t vr)
{
    const uint64_t m1 = m0 + rows;
    return img_t && m1 % r_img >= vr ? (m1 / r_img + 1) * r_img : m1;
}

static int run_mm_views(ctx_t *c, const mm_t *m)
{
    const unsigned N = c->n;
    const tpu_core_geom_t *gm = &c->hw->geom;
    const unsigned T = m->T, U = m->U;
    const uint64_t S = (uint64_t)T * U;
    const unsigned es = m->out->esize;
    const int clip = m->act == TPUC_OP_CLIP;
    uint64_t e_ub = m->softmax ? (es == 2 ? U : 0) : m->res ? 3 : 2;
    uint64_t a_acc = m->softmax ? (uint64_t)U * (es == 4 ? 2 : 1) : m->pool_k && !m->pool_g ? 4 : 2;
    /* a fused pool: tiles of whole pooled rows (k conv rows), so no window straddles two; a
       grouped one: one group of pool_g pooled pixels (input_im2col chose pool_g by mm_rows) */
    const uint64_t kk = (uint64_t)m->pool_k * m->pool_k;
    const uint64_t prow = m->pool_g ? m->pool_g * kk : m->pool_k ? (uint64_t)m->pool_k * m->r_pitch : 1;
    int keep;
    int pf;
    uint64_t mt = mm_rows(c, m, &keep, &pf);
    /* gather: the chunks' UB regions hold mt_r r-space rows; a tile is kb whole images or
       krow output rows of one image (mt: the most dense rows of a tile) */
    uint64_t mt_r = mt, kb = 0, krow = 0;
#define RMAP(d) ((d) / m->r_img * m->g_img + (d) % m->r_img / m->ow * m->g_pitch + (d) % m->ow)
    if (m->gather) {
        TRY(tpuc_asm(c->p, "# strided: on its %llu valid rows of %llu, one matmul per output row\n",
                     (unsigned long long)m->mtot, (unsigned long long)(m->mtot / m->r_img * m->g_img)));
        mm_t r = *m;
        r.gather = 0;
        r.mtot = m->mtot / m->r_img * m->g_img;
        mt_r = mm_rows(c, &r, &keep, &pf);
        kb = mt_r / m->g_img;
        krow = kb ? 0 : min64(m->oh, mt_r / m->g_pitch);
        if (!keep || (!kb && !krow)) CERR(c, "internal: a gathered Conv's rows do not fit UB");
        pf = 0;
        mt = kb ? min64(kb * m->r_img, m->mtot) : krow * m->ow;
    }
    if ((m->in_kept || m->out_kept) && (mt < m->mtot || (m->in_kept && !keep)))
        CERR(c, "internal: an on-chip input or output needs one M-tile");
    if (m->pool_g && mt < prow)
        CERR(c, "internal: a group of pooled windows (%llu rows) exceeds the tile (%llu)",
             (unsigned long long)prow, (unsigned long long)mt);
    mt = mt / prow * prow;
    /* tiles the images cut alike (cut_alike); up to 3/8 more tiles where every weight tile
       stays in WMEM (allowed everywhere: ResNet-50 at 224, batch 8 on N = 128, +1.5 % cycles,
       as more tiles stream the weights again; bench/RESULTS.md) */
    uint64_t img_t = 0;
    const uint64_t vr = m->r_pitch ? min64(m->r_img, m->oh * m->r_pitch) : 0;
    if (m->r_pitch && !m->gather && !m->pool_k && !m->pool_g && mt < m->mtot) {
        const tpuc_layout_t *rl = m->res ? &m->res->lay : NULL;
        const int rowwise = m->scatter || (rl && !(rl->img == m->r_img &&
                                                   rl->rpitch == m->r_pitch && WS(rl) == 1 &&
                                                   rl->off == 0));
        const int wres = c->slots >= 2 && (uint64_t)T * U <= 2 * (c->slots / 2);
        mt = cut_alike(m->mtot, m->r_img, m->r_pitch, vr, mt, rowwise, m->scatter || m->res,
                       wres ? 3 : 0, &img_t);
    }
#define TROWS(m0) (img_t ? min64(mt, vr - (m0) % m->r_img) : min64(mt, m->mtot - (m0)))
#define NEXTM(m0, rows) next_tile((m0), (rows), img_t, m->r_img, vr)
    if (mt < 1)
        CERR(c, "does not fit the core's memories (K-chunks %u, N-tiles %u; UB %u rows, ACC %u "
             "rows): use a larger --ub-kib/--acc-kib", T, U, gm->ub_rows, gm->acc_rows);
    uint64_t bias_row = gm->acc_rows - U;
    const uint64_t clip_row = gm->acc_rows - (m->b_off >= 0 ? U : 0) - 2;
    if (clip && load_clip(c, c->node, clip_row)) return -1;
    if (m->b_off >= 0) {
        TRY(tpuc_e_dma_in(&c->e, ACC, bias_row, U, N, img_addr(c, m->b_off), (uint64_t)N * 4));
    }
    /* UB rows of the activation chunks (none when they are already on chip) */
    /* the regions of one M-tile's chunks: region g at UB row vrow(g) of its buffer, fp rows */
    const unsigned nv = m->nv ? m->nv : T;
#define VCLS(j) (m->nv ? m->vcls[j] : (j))
#define VSH(j) (m->nv ? m->vsh[j] : 0)
#define VMAX(g) (m->nv ? m->vmax[g] : 0)
#define VCOLS(g) (m->nv ? m->vcols[g] : m->a_cols[g])
#define VADDR(g) (m->nv ? m->vaddr[g] : m->a_addr[g])
    uint64_t vrow[TPUC_MAX_CHUNKS_VIEW];
    if (nv > TPUC_MAX_CHUNKS_VIEW && keep && !m->in_kept)
        CERR(c, "internal: %u K-chunk regions kept in UB", nv);
    const uint64_t fp = (uint64_t)nv * (mt_r + (m->nv ? m->vpad : 0));
    if (keep && !m->in_kept)
        for (unsigned g = 0; g < nv; g++) vrow[g] = (uint64_t)g * (mt_r + (m->nv ? m->vpad : 0));
    uint64_t ub_act = m->in_kept ? 0 : keep ? fp * (pf ? 2 : 1) : 2 * mt;
    uint64_t ub_e = ub_act;
    uint64_t ub_hi = ub_act + e_ub * mt;
    if (m->in_kept) ub_hi = max64(ub_hi, m->in_row + (uint64_t)T * mt);
    if (m->out_kept) ub_hi = max64(ub_hi, m->out_row + (uint64_t)U * mt);
    hw_mark(c, ub_hi, a_acc * mt + (m->stage ? (uint64_t)U * mt : 0) + (m->b_off >= 0 ? U : 0),
            (uint64_t)min64(c->slots, S) * N);
    { /* the stream's record (dry pass), or its check against the record (final pass) */
        wst_t w0;
        wst_init(c, &w0, T, U, m->nout, m->w_off, 0);
        const size_t idx = c->iw++;
        wplan_t *pl = c->plan;
        const wrec_t r = {T, U, (unsigned)w0.G, w0.resident, m->nout, c->e.wops - c->wops_end};
        if (c->dry && pl) {
            if (pl->n == pl->cap) {
                size_t nc = pl->cap ? 2 * pl->cap : 64;
                wrec_t *q = realloc(pl->rec, nc * sizeof *q);
                if (!q) return -1;
                pl->rec = q;
                pl->cap = nc;
            }
            pl->rec[pl->n++] = r;
        } else if (!c->dry && pl && pl->ok &&
                   (idx >= pl->n || pl->rec[idx].T != T || pl->rec[idx].U != U ||
                    pl->rec[idx].G != r.G || pl->rec[idx].resident != r.resident ||
                    pl->rec[idx].nout != r.nout || pl->rec[idx].gap != r.gap)) {
            CERR(c, "internal: weight stream %zu differs from the sizing pass's", idx);
        }
    }
    for (uint64_t m0 = 0, ti = 0, rows = 0; m0 < m->mtot; m0 = NEXTM(m0, rows), ti++) {
        rows = !m->gather || kb ? TROWS(m0)
             : min64(krow, m->oh - m0 % m->r_img / m->ow) * m->ow;
        /* gather: r-space rows [g0, g0 + gspan) hold the tile's windows */
        const uint64_t g0 = m->gather ? RMAP(m0) : m0;
        const uint64_t gspan = m->gather ? RMAP(m0 + rows - 1) + 1 - g0 : rows;
        TRY(tpuc_asm(c->p, "# rows %llu .. %llu of %llu\n", (unsigned long long)m0,
                     (unsigned long long)(m0 + rows - 1), (unsigned long long)m->mtot));
        /* the tile's chunks at abase (pf: two buffers, this tile's were DMA'd during the
           previous tile's matmuls); the next tile's: m1, rows1, into the other buffer */
        const uint64_t abase = pf && ti % 2 ? fp : 0, nbase = fp - abase;
        const uint64_t m1 = NEXTM(m0, rows), rows1 = m1 < m->mtot ? TROWS(m1) : 0;
        /* Weight tiles of consecutive steps are consecutive in the image: they are DMA'd G at
           a time into one WMEM ring position while the others feed `lw`, group g + 1 when
           group g's first tile is loaded (one slot: one tile at a time). The M-tile's last
           steps DMA the first groups of the stream that follows (this layer's next M-tile,
           or the next layer's: wst_next) and load its first tile, so that one stream runs
           through the layers, every N-tile's steps alike, and a layer starts with its weights
           in WMEM. */
        wst_t ws, nx;
        wst_init(c, &ws, T, U, m->nout, m->w_off, c->wpre ? c->wq : 0);
        const int pre = c->wpre;
        if (pre && ((ws.resident && m0 == 0) || m->w_off != c->wpre_off ||
                    c->e.wops != c->wpre_wops))
            CERR(c, "internal: the weight stream started by the previous layer is not this one's");
        c->wpre = 0;
        const uint64_t G = ws.G;
        const int resident = ws.resident;
        /* link: 1 the stream that follows is started here, 2 (every tile in WMEM) only the
           next M-tile's first `lw` */
        const int link = c->slots < 2 ? 0
                         : ws.resident ? (m1 < m->mtot ? (nx = ws, 2) : 0)
                         : m1 < m->mtot ? (nx = ws, nx.q0 = (ws.q0 + ws.ng) % ws.R, 1)
                         : wst_next(c, &ws, &nx);
#define KP(k) wst_kp(&ws, (k))
#define WROW(kp) wst_row(c, &ws, (kp))
#define WGROUP(gi) TRY((gi) < ws.ng ? wst_group(c, &ws, (gi)) \
                       : link == 1 ? wst_group(c, &nx, (gi) - ws.ng) : 0)
        if (!pre) {
            if (m0 == 0 || !resident) {
                WGROUP(0);
                if (c->slots >= 2) WGROUP(1);
            }
            TRY(tpuc_e_lw(&c->e, WROW(0)));
        }
        /* the tile's activation chunks, after the weight prologue: the later M-tiles, whose
           prologue the previous tile ran, are then the same instructions from here on */
        if (keep && !m->in_kept && (!pf || ti == 0))
            for (unsigned g = 0; g < nv; g++)
                TRY(tpuc_e_dma_in(&c->e, UB, abase + vrow[g], gspan + VMAX(g), VCOLS(g),
                                  VADDR(g) + g0 * m->a_mstride, m->a_mstride));
        if (!keep)
            TRY(tpuc_e_dma_in(&c->e, UB, 0, rows, m->a_cols[0], m->a_addr[0] + m0 * m->a_mstride,
                              m->a_mstride));
        for (uint64_t k = 0; k < S; k++) {
            unsigned nt = (unsigned)(k / T), j = (unsigned)(k % T);
            uint64_t accb = m->softmax ? (uint64_t)nt * mt : (uint64_t)(nt % 2) * mt;
            uint64_t ubrow = m->in_kept ? m->in_row + (uint64_t)j * mt
                             : keep ? abase + vrow[VCLS(j)] + VSH(j) : (k % 2) * mt;
            if (m->gather) /* one matmul per output row: its windows, to its dense rows */
                for (uint64_t d = m0; d < m0 + rows; d += m->ow)
                    TRY(tpuc_e_mm(&c->e, ubrow + RMAP(d) - g0, accb + (d - m0), m->ow, j > 0));
            else
                TRY(tpuc_e_mm(&c->e, ubrow, accb, rows, j > 0));
            if (pf && rows1 && j == 0) {
                /* 1/U of the next tile's regions (rows1 + VMAX(g) rows each, region-major)
                   beside this N-tile's matmuls: the DMA runs while they do, until the
                   epilogue */
                const uint64_t units = (uint64_t)nv * rows1 + (m->nv ? m->vsum : 0);
                const uint64_t u0 = units * nt / U, u1 = units * (nt + 1) / U;
                unsigned g = 0;
                uint64_t ga = 0; /* the units before region g */
                for (uint64_t u = u0; u < u1;) {
                    while (u >= ga + rows1 + VMAX(g)) { ga += rows1 + VMAX(g); g++; }
                    const uint64_t r = u - ga, n1 = min64(rows1 + VMAX(g) - r, u1 - u);
                    TRY(tpuc_e_dma_in(&c->e, UB, nbase + vrow[g] + r, n1, VCOLS(g),
                                      VADDR(g) + (m1 + r) * m->a_mstride, m->a_mstride));
                    u += n1;
                }
            }
            if (k + 1 == S && link) {
                /* the following stream's first step */
                TRY(tpuc_e_lw(&c->e, wst_row(c, &nx, 0)));
                if (link == 1) WGROUP(ws.ng + 1);
                c->wpre = 1;
                c->wpre_wops = c->e.wops;
                c->wq = nx.q0;
                c->wpre_off = nx.w_off;
            }
            if (k + 1 < S) {
                const uint64_t kp1 = KP(k + 1);
                if (c->slots < 2) WGROUP(kp1);
                TRY(tpuc_e_lw(&c->e, WROW(kp1)));
                if (c->slots >= 2 && kp1 % G == 0) WGROUP(kp1 / G + 1);
                if (!keep) {
                    unsigned j1 = (unsigned)((k + 1) % T);
                    TRY(tpuc_e_dma_in(&c->e, UB, ((k + 1) % 2) * mt, rows, m->a_cols[j1],
                                      m->a_addr[j1] + m0 * m->a_mstride, m->a_mstride));
                }
            }
            if (j + 1 < T) continue;
            /* epilogue of N-tile nt */
            uint64_t ct = min64(N, m->nout - (uint64_t)nt * N);
            if (m->softmax) {
                if (m->b_off >= 0)
                    TRY(tpuc_e_vop(&c->e, V_ADD, ACC, accb, ACC, bias_row + nt, 1, ACC, accb, rows));
                continue;
            }
            unsigned cur_mem = ACC;
            uint64_t cur = accb, nr = rows;
            if (m->pool_g) {
                /* the window's k*k conv pixels are the tile's k*k blocks of nr rows: max over
                   the blocks, in place (max is associative and commutative on the VPU's total
                   order, NaN absorbing: the r-space passes' bits) */
                nr = rows / kk;
                for (uint64_t d = 1; d < kk; d++)
                    TRY(tpuc_e_vop(&c->e, V_MAX, ACC, accb, ACC, accb + d * nr, 0, ACC, accb, nr));
            } else if (m->pool_k) {
                /* max over the k x k window at r: first along the row (r .. r+k-1), then down
                   the k rows (r, r + rp, ...); the pooled pixels are at r = k*i*rp + k*j.
                   max commutes with the bias add, the ReLU and the bf16 rounding (all
                   monotone), so this is the unfused Conv -> MaxPool bit for bit. */
                const uint64_t k = m->pool_k, rp = m->r_pitch, P = 2 * mt, Q = 3 * mt;
                uint64_t n1 = rows - (k - 1), n2 = n1 - (k - 1) * rp;
                TRY(tpuc_e_vop(&c->e, V_MAX, ACC, accb, ACC, accb + 1, 0, ACC, P, n1));
                for (uint64_t d = 2; d < k; d++)
                    TRY(tpuc_e_vop(&c->e, V_MAX, ACC, P, ACC, accb + d, 0, ACC, P, n1));
                TRY(tpuc_e_vop(&c->e, V_MAX, ACC, P, ACC, P + rp, 0, ACC, Q, n2));
                for (uint64_t d = 2; d < k; d++)
                    TRY(tpuc_e_vop(&c->e, V_MAX, ACC, Q, ACC, P + d * rp, 0, ACC, Q, n2));
                cur = Q;
                nr = n2;
            }
            const uint64_t src = cur;
            unsigned fmem = es == 4 || m->stage ? ACC : UB;
            uint64_t frow = m->stage ? m->stage_row + (uint64_t)nt * mt
                            : m->out_kept ? m->out_row + (uint64_t)nt * mt
                            : es == 4 ? src : ub_e + (uint64_t)(nt % 2) * mt;
            if (m->b_off >= 0) {
                unsigned dm = m->act ? ACC : fmem;
                uint64_t dr = m->act ? src : frow;
                TRY(tpuc_e_vop(&c->e, V_ADD, ACC, src, ACC, bias_row + nt, 1, dm, dr, nr));
                cur_mem = dm; cur = dr;
            }
            if (m->act) {
                if (emit_act(c, m->act, cur_mem, cur, fmem, frow, nr, clip_row)) return -1;
                cur_mem = fmem; cur = frow;
            }
            if (cur_mem != fmem || cur != frow) {
                TRY(tpuc_e_vop(&c->e, V_CVT, cur_mem, cur, -1, 0, 0, fmem, frow, nr));
            }
            if (m->res && add_rows(c, m, frow, ub_e + 2 * mt, src, m0, nr, m->col0 + (uint64_t)nt * N, ct,
                                   img_t || mt % m->r_img == 0))
                return -1;
            if (m->out_kept) continue;
            if (m->pool_k && !m->pool_g
                    ? write_pooled(c, m, fmem, frow, m0, nr, m->col0 + (uint64_t)nt * N, ct)
                    : write_rows(c, m, fmem, frow, m->pool_g ? m0 / kk : m0, nr,
                                 m->col0 + (uint64_t)nt * N, ct))
                return -1;
        }
        if (m->stage) { /* the N-tiles' fp32 into UB, rounded to bf16 as the epilogue would */
            TRY(tpuc_asm(c->p, "# the output, staged in ACC, to UB rows %llu ..\n",
                         (unsigned long long)m->out_row));
            TRY(tpuc_e_vop(&c->e, V_CVT, ACC, m->stage_row, -1, 0, 0, UB, m->out_row,
                           (uint64_t)U * mt));
        }
        if (m->softmax) {
            unsigned dm = es == 4 ? ACC : UB;
            uint64_t dr = es == 4 ? (uint64_t)U * mt : ub_e;
            TRY(tpuc_e_softmax(&c->e, 0, dm, dr, rows, m->nout, mt, 1));
            for (unsigned nt = 0; nt < U; nt++) {
                uint64_t ct = min64(N, m->nout - (uint64_t)nt * N);
                if (write_rows(c, m, dm, dr + (uint64_t)nt * mt, m0, rows, m->col0 + (uint64_t)nt * N, ct))
                    return -1;
            }
        }
#undef WGROUP
#undef KP
#undef WROW
    }
#undef VCLS
#undef VSH
#undef VMAX
#undef VCOLS
#undef VADDR
#undef RMAP
#undef TROWS
#undef NEXTM
    c->wops_end = c->e.wops;
    return 0;
}

/* Weight tiles: U*T tiles of N x N bf16; tile (j, nt) row k column l = get(j, k, nt*N + l)
   (the callback returns 0 for a padding position: then -0, the matmul's identity). */
typedef int (*wget_t)(const void *ctx, unsigned j, unsigned k, uint64_t col, float *v);

static int64_t img_weights(ctx_t *c, unsigned T, unsigned U, uint64_t nout, wget_t get,
                           const void *gctx)
{
    const unsigned N = c->n;
    const uint64_t bytes = (uint64_t)T * U * N * N * 2;
    int64_t off;
    if (!c->dry && c->plan && c->plan->ok) {
        /* the weight arena: the image's first bytes, every stream's tiles after the last's */
        if (c->wcur + bytes > c->plan->wbytes) return -1;
        off = (int64_t)c->wcur;
        c->wcur += bytes;
    } else {
        off = img_alloc(c, bytes);
        if (off >= 0 && c->plan) c->plan->wbytes += bytes;
    }
    if (off < 0) return -1;
    uint16_t *w = (uint16_t *)(c->p->image + off);
    for (unsigned nt = 0; nt < U; nt++)
        for (unsigned j = 0; j < T; j++) {
            uint16_t *tile = w + ((uint64_t)nt * T + j) * N * N;
            for (unsigned k = 0; k < N; k++)
                for (unsigned l = 0; l < N; l++) {
                    uint64_t col = (uint64_t)nt * N + l;
                    float v;
                    uint16_t b = BF16_NEG_ZERO;
                    if (col < nout && get(gctx, j, k, col, &v)) b = tpuc_f32_to_bf16(v);
                    tile[(uint64_t)k * N + l] = b;
                }
        }
    return off;
}

/* ---- Gemm / MatMul ---- */
typedef struct {
    const float *w;      /* K x Nout */
    uint64_t K, nout;
    unsigned N;
    /* flat SPATIAL input: chunk j = pixel q * CT + channel tile t */
    int flat;
    uint64_t C, H, W, CT;
} gemm_w_t;

static int gemm_get(const void *ctx, unsigned j, unsigned k, uint64_t col, float *v)
{
    const gemm_w_t *q = ctx;
    uint64_t row;
    if (!q->flat) {
        row = (uint64_t)j * q->N + k;
        if (row >= q->K) return 0;
    } else {
        uint64_t pix = j / q->CT, t = j % q->CT;
        uint64_t ch = t * q->N + k;
        if (ch >= q->C) return 0;
        uint64_t h = pix / q->W, w = pix % q->W;
        row = ch * q->H * q->W + h * q->W + w; /* ONNX's NCHW flatten order */
    }
    *v = q->w[row * q->nout + col];
    return 1;
}

/* Keep the output of Gemm n (its tiling m) in UB for the next node when that is a Gemm
   reading it (docs/compiler.md "On-chip activations"): both run as one M-tile, every N-tile
   of the output is full (so the next Gemm's K-chunks are whole UB rows, as a dma_in would
   leave them), and the output's rows fit in UB beside what either layer uses, or else after
   staging in ACC. The same bf16 values are read, without the round trip through host memory. */
static void keep_next(ctx_t *c, const tpuc_node_t *n, mm_t *m)
{
    const tpuc_graph_t *g = c->g;
    const unsigned N = c->n;
    const int yi = n->out[0];
    const tpuc_tensor_t *y = &g->t[yi];
    if (c->hw->no_keep || y->is_output || y->nuses != 1 || m->softmax || m->nout % N) return;
    const tpuc_node_t *q = NULL;
    for (size_t i = (size_t)(n - g->n) + 1; i < g->nn && !q; i++)
        if (g->n[i].op != TPUC_OP_DEAD && !g->n[i].fused_into) q = &g->n[i];
    if (!q || (q->op != TPUC_OP_GEMM && q->op != TPUC_OP_MATMUL) || q->in[0] != yi) return;
    const tpuc_tensor_t *b = &g->t[q->in[1]];
    if (!b->f || b->ndim != 2 || (uint64_t)b->dims[0] != m->nout) return;
    int keep1, keep2, pf1, pf2;
    if (mm_rows(c, m, &keep1, &pf1) < m->mtot) return;
    mm_t m2;
    memset(&m2, 0, sizeof m2);
    m2.T = m->U;
    m2.U = (unsigned)(((uint64_t)b->dims[1] + N - 1) / N);
    m2.mtot = m->mtot;
    m2.b_off = q->nin > 2 && q->in[2] >= 0 ? 0 : -1;
    m2.act = q->fuse_act;
    m2.softmax = q->fuse_softmax;
    m2.out = &g->t[q->out[0]].lay;
    if (mm_rows(c, &m2, &keep2, &pf2) < m->mtot || !keep2) return;
    const uint64_t mt = m->mtot, ub = c->hw->geom.ub_rows;
    const uint64_t e2 = m2.softmax ? (m2.out->esize == 2 ? m2.U : 0) : 2;
    const uint64_t kept = (uint64_t)m->U * mt, use2 = e2 * mt;
    /* the UB rows this layer's activation chunks occupy while its matmuls run */
    const uint64_t a_lo = m->in_kept ? m->in_row : 0;
    const uint64_t a_hi = a_lo + (m->in_kept || keep1 ? (uint64_t)m->T * mt : 2 * mt);
    if (kept > ub || use2 > ub - kept) return;
    /* written directly by the epilogue: at the top of UB or right after the consumer's
       epilogue rows, clear of the chunks */
    const uint64_t cand[2] = {ub - kept, use2};
    int direct = 0;
    for (int i = 0; i < 2 && !direct; i++)
        if (cand[i] >= use2 && (cand[i] >= a_hi || cand[i] + kept <= a_lo)) {
            m->out_row = cand[i];
            direct = 1;
        }
    if (!direct) {
        /* staged in ACC above the tile's two output regions (mm_rows left the bias and
           clip rows at the top), then over the activation chunks, after the consumer's
           epilogue rows */
        const uint64_t acc_top = c->hw->geom.acc_rows - (m->b_off >= 0 ? m->U : 0) -
                                 (m->act == TPUC_OP_CLIP ? 2 : 0);
        if (2 * mt + kept > acc_top || use2 + kept > ub) return;
        m->stage = 1;
        m->stage_row = 2 * mt;
        m->out_row = use2;
    }
    m->out_kept = 1;
    c->keep_t = yi;
    c->keep_by = n;
    c->keep_row = m->out_row;
}

static int emit_gemm(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]], *b = &g->t[n->in[1]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpuc_tensor_t *bias = n->nin > 2 && n->in[2] >= 0 ? &g->t[n->in[2]] : NULL;
    uint64_t K = (uint64_t)b->dims[0], nout = (uint64_t)b->dims[1];
    char consts[200];
    snprintf(consts, sizeof consts, "W %llux%llu bf16 (RNE from fp32)%s",
             (unsigned long long)K, (unsigned long long)nout,
             bias ? ", bias fp32 (ACC)" : "");
    TRY(layer_begin(c, n, consts));
    gemm_w_t q = {b->f, K, nout, N, 0, 0, 0, 0, 0};
    mm_t m;
    memset(&m, 0, sizeof m);
    m.U = (unsigned)((nout + N - 1) / N);
    if (a->lay.kind == TPUC_LAYOUT_SPATIAL) {
        const tpuc_layout_t *l = &a->lay;
        q.flat = 1; q.C = l->cols; q.H = l->h; q.W = l->w; q.CT = (l->cols + N - 1) / N;
        if (q.C * q.H * q.W != K) CERR(c, "the flattened input has %llu features, B %llu rows", (unsigned long long)(q.C * q.H * q.W), (unsigned long long)K);
        m.T = (unsigned)(q.H * q.W * q.CT);
        m.a_mstride = l->img * l->cols * 2;
        m.mtot = (uint64_t)a->dims[0];
    } else {
        m.T = (unsigned)((K + N - 1) / N);
        m.a_mstride = a->lay.cols * 2;
        m.mtot = a->lay.rows;
    }
    if ((uint64_t)m.T * m.U > 1u << 24) CERR(c, "more than 2^24 weight tiles");
    m.a_addr = calloc(m.T, sizeof *m.a_addr);
    m.a_cols = calloc(m.T, sizeof *m.a_cols);
    if (!m.a_addr || !m.a_cols) { free(m.a_addr); free(m.a_cols); return -1; }
    for (unsigned j = 0; j < m.T; j++) {
        if (!q.flat) {
            m.a_addr[j] = a->lay.addr + (uint64_t)j * N * 2;
            m.a_cols[j] = (unsigned)min64(N, K - (uint64_t)j * N);
        } else {
            const tpuc_layout_t *l = &a->lay;
            uint64_t pix = j / q.CT, t = j % q.CT, h = pix / q.W, w = pix % q.W;
            m.a_addr[j] = l->addr + ((l->off + h * l->rpitch + w * WS(l)) * l->cols + t * N) * 2;
            m.a_cols[j] = (unsigned)min64(N, l->cols - t * N);
        }
    }
    m.w_off = img_weights(c, m.T, m.U, nout, gemm_get, &q);
    m.b_off = -1;
    if (bias) {
        float *bv = malloc(nout * sizeof *bv);
        if (!bv) { free(m.a_addr); free(m.a_cols); return -1; }
        int64_t be = tpuc_tensor_elems(bias);
        for (uint64_t i = 0; i < nout; i++) bv[i] = bias->f[be == 1 ? 0 : i];
        m.b_off = img_rows_f32(c, bv, nout, m.U);
        free(bv);
    }
    m.act = n->fuse_act;
    m.softmax = n->fuse_softmax;
    m.nout = nout;
    m.out = &y->lay;
    if (c->keep_t >= 0 && c->keep_t == n->in[0] && a->lay.kind == TPUC_LAYOUT_PLAIN) {
        m.in_kept = 1;
        m.in_row = c->keep_row;
        c->keep_t = -1;
        TRY(tpuc_asm(c->p, "# its input is on chip: UB rows %llu .. (no dma_in)\n",
                     (unsigned long long)m.in_row));
    }
    keep_next(c, n, &m);
    if (m.out_kept)
        TRY(tpuc_asm(c->p, "# its output stays on chip for the next Gemm: UB rows %llu .. (no dma_out)\n",
                     (unsigned long long)m.out_row));
    int rc = m.w_off < 0 ? -1 : run_mm(c, &m);
    tpuc_layer_t *L = cur_layer(c);
    L->macs = m.mtot * K * nout;
    L->k = K; L->nout = nout;
    free(m.a_addr);
    free(m.a_cols);
    return rc;
}

/* ---- Conv ---- */
typedef struct {
    const float *w;  /* Cout x Cin/group x KH x KW */
    uint64_t cout, cin, kh, kw, N, JT; /* JT chunks per run; cin: the channels a run covers */
    uint64_t KG, run;  /* runs per kernel row (1: the whole row, kw * Cin contiguous in host
                          memory; KW: one per kernel column, when pixels are wstep > 1 apart
                          or the run covers a part of the channels) */
    /* a grouped Conv's part: input channels c0 .., output channels o0 .., cin_g / cout_g
       channels per group (group 1: cin_g = cin, cout_g = cout, c0 = o0 = 0) */
    uint64_t c0, o0, cin_g, cout_g;
    int im2col;        /* one run over the whole kernel (kh * kw * Cin, an IM2COL input) */
} conv_w_t;

static int conv_get(const void *ctx, unsigned j, unsigned k, uint64_t col, float *v)
{
    const conv_w_t *q = ctx;
    uint64_t kh = j / (q->KG * q->JT), rem = j % (q->KG * q->JT);
    uint64_t g = rem / q->JT, jj = rem % q->JT;
    uint64_t e = jj * q->N + k; /* element of the run: kw * Cin + ci, or ci of column g */
    if (e >= q->run) return 0;
    if (q->im2col) { kh = e / (q->kw * q->cin); e %= q->kw * q->cin; }
    uint64_t kw = q->KG == 1 ? e / q->cin : g, ci = q->c0 + (q->KG == 1 ? e % q->cin : e);
    uint64_t o = q->o0 + col;
    if (ci / q->cin_g != o / q->cout_g) return 0; /* another group's channel: -0 */
    *v = q->w[((o * q->cin_g + ci % q->cin_g) * q->kh + kh) * q->kw + kw];
    return 1;
}

/* The r-space of a Conv/pool on input layout l: r = b*r_img + oh*r_pitch + ow reads the
   window whose top-left pixel row is base + r*sw. */
typedef struct { uint64_t r_img, r_pitch, mtot, ws; int64_t base; } rspace_t;

static int rspace(ctx_t *c, const tpuc_node_t *n, const tpuc_tensor_t *a, rspace_t *rs)
{
    const tpuc_layout_t *l = &a->lay;
    uint64_t sh = (uint64_t)n->conv_s[0], sw = (uint64_t)n->conv_s[1] * WS(l);
    if (l->img % sw || (sh * l->rpitch) % sw)
        CERR(c, "its input's layout (rows per image %llu, per image row %llu, per pixel %llu) "
             "does not line up with the stride %d", (unsigned long long)l->img,
             (unsigned long long)l->rpitch, (unsigned long long)WS(l), n->conv_s[1]);
    if ((unsigned)n->conv_p[0] > l->pad_t || (unsigned)n->conv_p[1] > l->pad_l ||
        (unsigned)n->conv_p[2] > l->pad_b || (unsigned)n->conv_p[3] > l->pad_r)
        CERR(c, "its input has no clean padding of the size it needs (pads %d %d %d %d)",
             n->conv_p[0], n->conv_p[1], n->conv_p[2], n->conv_p[3]);
    if ((n->conv_p[0] | n->conv_p[1] | n->conv_p[2] | n->conv_p[3]) &&
        l->pad_value != (n->op == TPUC_OP_MAXPOOL ? BF16_NEG_INF : 0))
        CERR(c, "its input's padding holds the wrong value");
    rs->r_img = l->img / sw;
    rs->r_pitch = sh * l->rpitch / sw;
    rs->mtot = (uint64_t)a->dims[0] * rs->r_img;
    rs->ws = WS(l);
    rs->base = (int64_t)l->off - (int64_t)n->conv_p[0] * (int64_t)l->rpitch -
               (int64_t)n->conv_p[1] * (int64_t)rs->ws;
    if (rs->base < 0) CERR(c, "internal: negative window origin");
    return 0;
}

/* The output layout of a Conv/pool: the r-space itself ("wide": one dma_out per tile) when
   no consumer needs clean padding, the strides line up and at most a third of its rows are
   dropped positions, else a clean SPATIAL buffer written row by row (a strided Conv's or
   pool's r-space is half dropped rows, which every reader would stream through the MXU or
   the VPU again). */
static int spatial_out(ctx_t *c, tpuc_tensor_t *y, const rspace_t *rs, int *scatter)
{
    need_t nd;
    if (consumer_needs(c, (int)(y - c->g->t), &nd)) return -1;
    int pads = nd.pt | nd.pl | nd.pb | nd.pr;
    uint64_t oh = (uint64_t)(y->ndim == 4 ? y->dims[2] : 1), ow = (uint64_t)y->dims[y->ndim - 1];
    if (!pads && rs->r_img % nd.stride_w == 0 && rs->r_pitch % nd.stride_w == 0 && !y->is_output &&
        (c->hw->no_dense || 2 * rs->r_img < 3 * oh * ow)) {
        tpuc_layout_t *l = &y->lay;
        l->kind = TPUC_LAYOUT_SPATIAL;
        l->cols = (uint64_t)y->dims[1];
        l->h = oh; l->w = ow;
        l->img = rs->r_img; l->rpitch = rs->r_pitch; l->off = 0;
        l->rows = rs->mtot;
        *scatter = 0;
        return host_alloc(c, l, (nd.kh + 1) * l->rpitch + nd.kw + 1);
    }
    *scatter = 1;
    if (spatial_clean(c, y, &nd)) return -1;
    if (nd.pad_kind == 2 && add_fill(c, &y->lay, &nd)) return -1;
    return 0;
}

/* A MaxPool the Conv's epilogue can compute (docs/compiler.md "Conv + MaxPool"): the Conv's
   only reader, kernel = stride = k x k (k = 2 or 3), no padding, ReLU or nothing around it
   (both commute with max exactly), and readers of the pooled output that need no padding and
   stride 1 (any_reader: any readers, for pooled windows, whose output is written per pooled
   pixel). Returns k (and the MaxPool's index), or 0. */
static int pool_fusable(ctx_t *c, const tpuc_node_t *conv, int *pool_idx, int any_reader)
{
    const tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *y = &g->t[conv->out[0]];
    if (c->hw->no_fuse_pool || conv->depthwise) return 0;
    if (y->nuses != 1 || y->is_output || y->ndim != 4) return 0;
    if (conv->fuse_act && conv->fuse_act != TPUC_OP_RELU) return 0;
    for (size_t i = 0; i < g->nn; i++) {
        const tpuc_node_t *p = &g->n[i];
        if (p->op == TPUC_OP_DEAD || p->in[0] != conv->out[0]) continue;
        if (p->op != TPUC_OP_MAXPOOL) return 0;
        int k = p->conv_k[0];
        if ((k != 2 && k != 3) || p->conv_k[1] != k || p->conv_s[0] != k || p->conv_s[1] != k ||
            (p->conv_p[0] | p->conv_p[1] | p->conv_p[2] | p->conv_p[3]))
            return 0;
        if (p->fuse_act && p->fuse_act != TPUC_OP_RELU) return 0;
        const tpuc_tensor_t *z = &g->t[p->out[0]];
        if (z->is_output) return 0;
        for (size_t q = 0; q < g->nn && !any_reader; q++) {
            const tpuc_node_t *r = &g->n[q];
            if (r->op == TPUC_OP_DEAD || r->in[0] != p->out[0]) continue;
            if ((r->op == TPUC_OP_CONV || r->op == TPUC_OP_MAXPOOL || r->op == TPUC_OP_AVGPOOL) &&
                (r->conv_s[0] != 1 || r->conv_s[1] != 1 ||
                 (r->conv_p[0] | r->conv_p[1] | r->conv_p[2] | r->conv_p[3])))
                return 0;
        }
        if (pool_idx) *pool_idx = (int)i;
        return k;
    }
    return 0;
}

/* A residual Add that can run in Conv conv's epilogue (docs/compiler.md "Residual Adds"):
   the Conv's output is read by that Add alone and is not the graph's output; the Add's other
   input is an activation of the same shape written before the Conv runs; the Add's activation
   is Relu or none and its output is not the graph's. *add_idx: the Add's node, *skip: the other
   input, *first: the Conv's output is the Add's first input. */
static int add_fusable(ctx_t *c, const tpuc_node_t *conv, int *add_idx, int *skip, int *first)
{
    const tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *y = &g->t[conv->out[0]];
    const size_t ci = (size_t)(conv - g->n);
    if (c->hw->no_fuse_add || conv->depthwise || conv->groups > 1) return 0;
    if (y->nuses != 1 || y->is_output || y->ndim != 4) return 0;
    for (size_t i = 0; i < g->nn; i++) {
        const tpuc_node_t *p = &g->n[i];
        if (p->op == TPUC_OP_DEAD) continue;
        int k = p->nin > 0 && p->in[0] == conv->out[0] ? 0 : p->nin > 1 && p->in[1] == conv->out[0] ? 1 : -1;
        if (k < 0) continue;
        if (p->op != TPUC_OP_ADD || p->nin != 2 || (p->fused_into && p->fused_into != (int)ci + 1))
            return 0;
        if (p->fuse_act && p->fuse_act != TPUC_OP_RELU) return 0;
        const int si = p->in[1 - k];
        const tpuc_tensor_t *s = &g->t[si], *z = &g->t[p->out[0]];
        if (si < 0 || si == conv->out[0] || s->is_const || z->is_output || s->ndim != 4) return 0;
        for (int d = 0; d < 4; d++)
            if (s->dims[d] != y->dims[d]) return 0;
        if (s->producer < 0 || read_at(g, (size_t)s->producer) >= ci) return 0;
        if (s->lay.kind != TPUC_LAYOUT_SPATIAL || s->lay.esize != 2 || s->lay.flat) return 0;
        *add_idx = (int)i;
        *skip = si;
        *first = k == 0;
        return 1;
    }
    return 0;
}

static int emit_conv(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]], *w = &g->t[n->in[1]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpuc_tensor_t *bias = n->nin > 2 && n->in[2] >= 0 ? &g->t[n->in[2]] : NULL;
    uint64_t cout = (uint64_t)w->dims[0], cin = (uint64_t)w->dims[1]; /* cin: per group */
    uint64_t kh = (uint64_t)n->conv_k[0], kw = (uint64_t)n->conv_k[1];
    /* group > 1 (not depthwise): the groups run as parts of GP groups each, a part's weight
       tiles block-diagonal (another group's channel is -0, the matmul's identity), GP as many
       as one N x N tile holds (docs/compiler.md "Grouped Conv") */
    const uint64_t G = n->groups > 1 ? (uint64_t)n->groups : 1, cinx = cin * G, cout_g = cout / G;
    uint64_t GP = G == 1 ? 1 : max64(1, min64(N / cin, N / cout_g));
    if (GP > G) GP = G;
    char consts[400], gtxt[80] = "";
    if (G > 1)
        snprintf(gtxt, sizeof gtxt, GP > 1 ? ", %llu groups, %llu per tile (block-diagonal)"
                 : ", %llu groups, %llu per tile", (unsigned long long)G, (unsigned long long)GP);
    snprintf(consts, sizeof consts, "W %llux%llux%llux%llu bf16 (RNE from fp32)%s%s",
             (unsigned long long)cout, (unsigned long long)cin, (unsigned long long)kh,
             (unsigned long long)kw, bias ? ", bias fp32 (ACC)" : "", gtxt);
    TRY(layer_begin(c, n, consts));
    rspace_t rs;
    const int grouped = a->lay.kind == TPUC_LAYOUT_IM2COL && a->lay.ipool;
    if (grouped) {
        /* the pooled pixels (input_im2col): r = (b*PH + ph)*PW + pw, k*k rows each */
        const uint64_t k = a->lay.ipool, PH = a->lay.ioh / k, PW = a->lay.iow / k;
        if (G > 1 || a->lay.ikh != kh || a->lay.ikw != kw || a->lay.ichan != cinx)
            CERR(c, "internal: its windowed input does not match the Conv");
        rs.r_img = PH * PW; rs.r_pitch = PW; rs.mtot = a->lay.rows / (k * k); rs.ws = 1; rs.base = 0;
    } else if (a->lay.kind == TPUC_LAYOUT_IM2COL) {
        /* the windows of the output pixels, densely: r = (b*OH + oh)*OW + ow */
        uint64_t oh = y->ndim == 4 ? (uint64_t)y->dims[2] : 1, ow = (uint64_t)y->dims[y->ndim - 1];
        if (G > 1 || a->lay.ikh != kh || a->lay.ikw != kw || a->lay.ichan != cinx ||
            a->lay.ioh != oh || a->lay.iow != ow)
            CERR(c, "internal: its windowed input does not match the Conv");
        rs.r_img = oh * ow; rs.r_pitch = ow; rs.mtot = a->lay.rows; rs.ws = 1; rs.base = 0;
    } else if (rspace(c, n, a, &rs)) {
        return -1;
    }
    mm_t m;
    memset(&m, 0, sizeof m);
    const tpuc_tensor_t *yc = y; /* the Conv's own output (MACs) */
    int pool_idx = -1;
    int pk = pool_fusable(c, n, &pool_idx, grouped);
    if (grouped && (uint64_t)pk != a->lay.ipool) CERR(c, "internal: its pooled windows lost their MaxPool");
    if (grouped || (pk && rs.r_img % ((uint64_t)pk * rs.r_pitch) == 0)) {
        tpuc_node_t *pn = &g->n[pool_idx];
        pn->fused_into = (int)(n - g->n) + 1;
        ((tpuc_node_t *)n)->fuse_pool = pk;
        if (pn->fuse_act) ((tpuc_node_t *)n)->fuse_act = pn->fuse_act;
        y = &g->t[pn->out[0]];
        m.pool_k = (unsigned)pk;
        if (grouped) {
            /* the pooled output, a pooled pixel per row */
            if ((uint64_t)y->dims[2] * (uint64_t)y->dims[3] != rs.r_img || (uint64_t)y->dims[3] != rs.r_pitch)
                CERR(c, "internal: its pooled windows do not match the MaxPool's output");
            if (spatial_out(c, y, &rs, &m.scatter)) return -1;
            m.pool_g = a->lay.ipg;
        } else {
            /* the pooled output, in the Conv's r-space: pooled pixel (i, j) at r = k*i*rp + k*j */
            need_t nd;
            if (consumer_needs(c, pn->out[0], &nd)) return -1;
            tpuc_layout_t *l = &y->lay;
            l->kind = TPUC_LAYOUT_SPATIAL;
            l->cols = (uint64_t)y->dims[1];
            l->h = (uint64_t)y->dims[2]; l->w = (uint64_t)y->dims[3];
            /* only the pooled rows' bands are written (write_pooled): pooled row ph of image b
               at row b*img + ph*rpitch, its pixels pk rows apart */
            l->rpitch = up(rs.r_pitch, (uint64_t)pk);
            l->img = rs.r_img / ((uint64_t)pk * rs.r_pitch) * l->rpitch;
            l->wstep = (uint64_t)pk;
            l->off = 0;
            l->rows = rs.mtot / rs.r_img * l->img;
            if (host_alloc(c, l, (nd.kh + 1) * l->rpitch + (nd.kw + 1) * l->wstep)) return -1;
        }
        snprintf(consts, sizeof consts, "W %llux%llux%llux%llu bf16 (RNE from fp32)%s%s; MaxPool %dx%d fused%s",
                 (unsigned long long)cout, (unsigned long long)cin, (unsigned long long)kh,
                 (unsigned long long)kw, bias ? ", bias fp32 (ACC)" : "", gtxt, pk, pk,
                 grouped ? " (pooled windows)" : "");
        free(cur_layer(c)->consts);
        cur_layer(c)->consts = tpuc_strdup(consts);
        free(cur_layer(c)->op);
        cur_layer(c)->op = tpuc_strdup(n->fuse_act ? "Conv+MaxPool+Relu" : "Conv+MaxPool");
    } else {
        int ai, si, first;
        if (a->lay.kind != TPUC_LAYOUT_IM2COL && add_fusable(c, n, &ai, &si, &first)) {
            tpuc_node_t *an = &g->n[ai];
            an->fused_into = (int)(n - g->n) + 1;
            m.res = &g->t[si];
            m.res_first = first;
            m.res_act = an->fuse_act;
            y = &g->t[an->out[0]];
            size_t l = strlen(consts);
            snprintf(consts + l, sizeof consts - l, "; Add of '%s' fused", g->t[si].name);
            free(cur_layer(c)->consts);
            cur_layer(c)->consts = tpuc_strdup(consts);
            free(cur_layer(c)->op);
            cur_layer(c)->op = tpuc_strdup(n->fuse_act ? (an->fuse_act ? "Conv+Relu+Add+Relu" : "Conv+Relu+Add")
                                                       : (an->fuse_act ? "Conv+Add+Relu" : "Conv+Add"));
            if (!cur_layer(c)->consts || !cur_layer(c)->op) return -1;
        }
        /* a strided Conv whose r-space is over a third dropped rows runs on its valid rows
           (gather) when one output row's windows of every K-chunk stay in UB and an output
           row is at least 14 pixels (a matmul each: narrower rows would cost more
           instructions than they save rows; ResNet-18 at 64x64 on N = 32 would need 45,303
           instead of 27,519, more than an IMEM holds) */
        const uint64_t OH = (uint64_t)(y->ndim == 4 ? y->dims[2] : 1), OW = (uint64_t)y->dims[y->ndim - 1];
        if (!c->hw->no_dense && G == 1 && a->lay.kind != TPUC_LAYOUT_IM2COL && 2 * rs.r_img >= 3 * OH * OW &&
            OW >= 14) {
            const uint64_t run = rs.ws == 1 ? kw * cinx : cinx, JT = (run + N - 1) / N;
            mm_t t;
            memset(&t, 0, sizeof t);
            t.T = (unsigned)(kh * (rs.ws == 1 ? 1 : kw) * JT);
            t.U = (unsigned)((cout + N - 1) / N);
            t.b_off = bias ? 0 : -1;
            t.act = n->fuse_act;
            t.res = m.res;
            t.out = &y->lay;
            t.nout = cout;
            t.mtot = rs.mtot;
            int keep, pf;
            m.gather = mm_rows(c, &t, &keep, &pf) >= rs.r_pitch && keep;
        }
        rspace_t rd = rs;
        if (m.gather) {
            m.g_img = rs.r_img; m.g_pitch = rs.r_pitch;
            rd.r_img = OH * OW; rd.r_pitch = OW; rd.mtot = rs.mtot / rs.r_img * rd.r_img; rd.ws = 1;
        }
        if (spatial_out(c, y, &rd, &m.scatter)) return -1;
    }
    int rc = 0;
    for (uint64_t g0 = 0; g0 < G && rc == 0; g0 += GP) {
        const uint64_t gs = min64(GP, G - g0), cs = gs * cin, os = gs * cout_g;
        /* one run per kernel row when it covers every channel and the pixels are adjacent;
           one run over the whole kernel when the host laid out the windows (IM2COL) */
        const int im2col = a->lay.kind == TPUC_LAYOUT_IM2COL;
        const int whole = cs == cinx && rs.ws == 1;
        uint64_t KG = whole ? 1 : kw, run = im2col ? kh * kw * cs : whole ? kw * cs : cs;
        uint64_t JT = (run + N - 1) / N;
        conv_w_t q = {w->f, os, cs, kh, kw, N, JT, KG, run, g0 * cin, g0 * cout_g, cin, cout_g,
                      im2col};
        if (G > 1) TRY(tpuc_asm(c->p, "# groups %llu .. %llu\n", (unsigned long long)g0,
                                (unsigned long long)(g0 + gs - 1)));
        m.T = (unsigned)(im2col ? JT : kh * KG * JT);
        m.U = (unsigned)((os + N - 1) / N);
        m.a_mstride = im2col ? run * 2 : (uint64_t)n->conv_s[1] * rs.ws * cinx * 2;
        m.mtot = grouped ? a->lay.rows : rs.mtot;
        m.a_addr = calloc(m.T, sizeof *m.a_addr);
        m.a_cols = calloc(m.T, sizeof *m.a_cols);
        if (!m.a_addr || !m.a_cols) { free(m.a_addr); free(m.a_cols); return -1; }
        for (unsigned j = 0; j < m.T; j++) {
            uint64_t r = j / (KG * JT), rem = j % (KG * JT), gi = rem / JT, jj = rem % JT;
            uint64_t pix = (uint64_t)rs.base + r * a->lay.rpitch + gi * rs.ws;
            m.a_addr[j] = im2col ? a->lay.addr + (uint64_t)j * N * 2
                                 : a->lay.addr + (pix * cinx + q.c0 + jj * N) * 2;
            m.a_cols[j] = (unsigned)min64(N, run - jj * N);
        }
        m.w_off = img_weights(c, m.T, m.U, os, conv_get, &q);
        m.b_off = bias ? img_rows_f32(c, bias->f + q.o0, os, m.U) : -1;
        m.act = n->fuse_act;
        m.nout = os;
        m.col0 = q.o0;
        m.out = &y->lay;
        m.r_img = rs.r_img; m.r_pitch = rs.r_pitch;
        m.oh = y->lay.h; m.ow = y->lay.w;
        if (m.gather) { m.mtot = rs.mtot / rs.r_img * m.oh * m.ow; m.r_img = m.oh * m.ow; m.r_pitch = m.ow; }
        if (m.pool_k && !m.pool_g) m.scatter = 0;
        rc = (m.w_off < 0 || (bias && m.b_off < 0)) ? -1 : run_mm(c, &m);
        free(m.a_addr);
        free(m.a_cols);
    }
    tpuc_layer_t *L = cur_layer(c);
    L->macs = (uint64_t)a->dims[0] * (uint64_t)(yc->ndim == 4 ? yc->dims[2] : 1) *
              (uint64_t)yc->dims[yc->ndim - 1] * cout * cin * kh * kw;
    if (grouped) /* the pixels of whole pool windows: the others are never read */
        L->macs = a->lay.rows * cout * cin * kh * kw;
    L->k = cin * kh * kw; L->nout = cout_g;
    return rc;
}

/* ---- an embedding lookup (Gather of table rows by token ids): the core has no indirect
   addressing, so the ids arrive as one-hot bf16 rows (tpu-infer converts them) and the lookup
   is their matmul with the table [V, D] as the weights: each output element is the one
   product 1 x bf16(table[id, d]) in a chain of +-0 products, exactly the bf16-rounded table
   row. Output [B*L, D] row-major, or [B, D, L] (embed = 2) a pixel per row for a Conv1d. ---- */
static int emit_embed(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *tab = &g->t[n->in[0]], *ids = &g->t[n->in[1]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    uint64_t V = (uint64_t)tab->dims[0], D = (uint64_t)tab->dims[1];
    uint64_t R = (uint64_t)tpuc_tensor_elems(ids);
    char consts[200];
    snprintf(consts, sizeof consts, "table %llux%llu bf16 (RNE from fp32), ids one-hot (host)",
             (unsigned long long)V, (unsigned long long)D);
    TRY(layer_begin(c, n, consts));
    if (ids->lay.cols != V) CERR(c, "internal: one-hot rows of %llu columns, the table has %llu rows", (unsigned long long)ids->lay.cols, (unsigned long long)V);
    mm_t m;
    memset(&m, 0, sizeof m);
    if (n->embed == 2) {
        /* [B, D, L]: the r-space of a 1-D image of L pixels */
        uint64_t L = (uint64_t)y->dims[2];
        rspace_t rs = {L, L, R, 1, 0};
        if (spatial_out(c, y, &rs, &m.scatter)) return -1;
        m.r_img = L; m.r_pitch = L; m.oh = 1; m.ow = L;
    } else {
        y->lay.kind = TPUC_LAYOUT_PLAIN;
        y->lay.cols = D;
        y->lay.rows = R;
        if (host_alloc(c, &y->lay, 0)) return -1;
    }
    gemm_w_t q = {tab->f, V, D, N, 0, 0, 0, 0, 0};
    m.T = (unsigned)((V + N - 1) / N);
    m.U = (unsigned)((D + N - 1) / N);
    if ((uint64_t)m.T * m.U > 1u << 24) CERR(c, "more than 2^24 weight tiles");
    m.a_mstride = V * 2;
    m.mtot = R;
    m.a_addr = calloc(m.T, sizeof *m.a_addr);
    m.a_cols = calloc(m.T, sizeof *m.a_cols);
    if (!m.a_addr || !m.a_cols) { free(m.a_addr); free(m.a_cols); return -1; }
    for (unsigned j = 0; j < m.T; j++) {
        m.a_addr[j] = ids->lay.addr + (uint64_t)j * N * 2;
        m.a_cols[j] = (unsigned)min64(N, V - (uint64_t)j * N);
    }
    m.w_off = img_weights(c, m.T, m.U, D, gemm_get, &q);
    m.b_off = -1;
    m.nout = D;
    m.out = &y->lay;
    int rc = m.w_off < 0 ? -1 : run_mm(c, &m);
    cur_layer(c)->macs = R * D; /* one useful product per output element */
    free(m.a_addr);
    free(m.a_cols);
    return rc;
}

/* ---- depthwise Conv on the VPU: channels in the lanes, one multiply-add per kernel position.
   The weights are rounded to bf16 and widened (fp32 rows in ACC), so each product is the
   exact bf16 x bf16 product and the sum runs in the MXU's order (kernel row, then column) from
   the first product: the bits a group-1 Conv of one input channel would give. ---- */
static int emit_dwconv(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]], *w = &g->t[n->in[1]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpuc_tensor_t *bias = n->nin > 2 && n->in[2] >= 0 ? &g->t[n->in[2]] : NULL;
    const tpu_core_geom_t *gm = &c->hw->geom;
    uint64_t C = (uint64_t)w->dims[0], kh = (uint64_t)n->conv_k[0], kw = (uint64_t)n->conv_k[1];
    uint64_t K = kh * kw, CT = (C + N - 1) / N;
    char consts[200];
    snprintf(consts, sizeof consts, "depthwise W %llux%llux%llu bf16 (RNE), widened to fp32 rows (ACC)%s",
             (unsigned long long)C, (unsigned long long)kh, (unsigned long long)kw,
             bias ? ", bias fp32 (ACC)" : "");
    TRY(layer_begin(c, n, consts));
    rspace_t rs;
    if (rspace(c, n, a, &rs)) return -1;
    mm_t m;
    memset(&m, 0, sizeof m);
    if (spatial_out(c, y, &rs, &m.scatter)) return -1;
    m.out = &y->lay;
    m.r_img = rs.r_img; m.r_pitch = rs.r_pitch; m.oh = y->lay.h; m.ow = y->lay.w;
    /* constants: per channel tile, K weight rows then the bias row (fp32, N lanes) */
    uint64_t per = K + 1;
    int64_t off = img_alloc(c, CT * per * N * 4);
    if (off < 0) return -1;
    for (uint64_t t = 0; t < CT; t++)
        for (uint64_t k = 0; k <= K; k++)
            for (unsigned l = 0; l < N; l++) {
                uint64_t ch = t * N + l;
                float v = 0.0f;
                if (ch < C && k < K) v = tpuc_bf16_to_f32(tpuc_f32_to_bf16(w->f[ch * K + k]));
                else if (ch < C && bias) v = bias->f[ch];
                memcpy(c->p->image + off + ((t * per + k) * N + l) * 4, &v, 4);
            }
    const int clip = n->fuse_act == TPUC_OP_CLIP;
    uint64_t krow = gm->acc_rows - per - (clip ? 2 : 0), clip_row = gm->acc_rows - 2;
    if (clip && load_clip(c, n, clip_row)) return -1;
    /* UB: window buffers and the output; ACC: the sum S, a product T, constants. A window
       buffer per kernel column when they fit the tile two would allow: a tap's DMA then runs
       beside the previous tap's VPU ops as with two alternating buffers, and every tap but
       the first is the same instructions at addresses affine in (kernel row, column), which
       the loop pass rolls as one nest (alternating buffers are not affine) */
    const unsigned es = y->lay.esize;
    uint64_t mt = min64(min64(rs.mtot, 65535), gm->ub_rows / 3);
    mt = min64(mt, krow / 3);
    if (mt < 1) CERR(c, "does not fit UB/ACC");
    const uint64_t nb = kw > 2 && (kw + 1) * mt <= gm->ub_rows ? kw : 2;
    hw_mark(c, (nb + 1) * mt, 3 * mt + per + 2, 0);
    uint64_t sw = (uint64_t)n->conv_s[1];
    for (uint64_t m0 = 0; m0 < rs.mtot; m0 += mt) {
        uint64_t rows = min64(mt, rs.mtot - m0);
        for (uint64_t t = 0; t < CT; t++) {
            uint64_t ct = min64(N, C - t * N);
            TRY(tpuc_e_dma_in(&c->e, ACC, krow, per, N, img_addr(c, off) + t * per * N * 4, (uint64_t)N * 4));
            for (uint64_t k = 0; k < K; k++) {
                uint64_t dy = k / kw, dx = k % kw;
                uint64_t pix = (uint64_t)rs.base + dy * a->lay.rpitch + dx * rs.ws + m0 * sw * rs.ws;
                uint64_t reg = (nb == kw ? dx : k % 2) * mt;
                TRY(tpuc_e_dma_in(&c->e, UB, reg, rows, ct, a->lay.addr + (pix * C + t * N) * 2, sw * rs.ws * C * 2));
                if (k == 0) {
                    TRY(tpuc_e_vop(&c->e, V_MUL, UB, reg, ACC, krow, 1, ACC, 0, rows));
                } else {
                    TRY(tpuc_e_vop(&c->e, V_MUL, UB, reg, ACC, krow + k, 1, ACC, mt, rows));
                    TRY(tpuc_e_vop(&c->e, V_ADD, ACC, 0, ACC, mt, 0, ACC, 0, rows));
                }
            }
            unsigned fmem = es == 4 ? ACC : UB;
            uint64_t frow = es == 4 ? 2 * mt : nb * mt;
            unsigned cm = ACC;
            uint64_t cr = 0;
            if (bias) {
                unsigned dm = n->fuse_act ? ACC : fmem;
                uint64_t dr = n->fuse_act ? 0 : frow;
                TRY(tpuc_e_vop(&c->e, V_ADD, ACC, 0, ACC, krow + K, 1, dm, dr, rows));
                cm = dm; cr = dr;
            }
            if (n->fuse_act) {
                if (emit_act(c, n->fuse_act, cm, cr, fmem, frow, rows, clip_row)) return -1;
                cm = fmem; cr = frow;
            }
            if (cm != fmem || cr != frow) TRY(tpuc_e_vop(&c->e, V_CVT, cm, cr, -1, 0, 0, fmem, frow, rows));
            if (write_rows(c, &m, fmem, frow, m0, rows, t * N, ct)) return -1;
        }
    }
    cur_layer(c)->macs = (uint64_t)a->dims[0] * y->lay.h * y->lay.w * C * K;
    return 0;
}

/* ---- Concat along the channels: each input's channel tiles DMA'd through UB into their
   columns of the output, image row by image row (SPATIAL) or M-tile by M-tile ([B, F]) ---- */
static int emit_concat(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpu_core_geom_t *gm = &c->hw->geom;
    TRY(layer_begin(c, n, "-"));
    const tpuc_tensor_t *a0 = &g->t[n->in[0]];
    const unsigned es = y->lay.esize;
    uint64_t Cy = (uint64_t)y->dims[1];
    if (a0->lay.kind == TPUC_LAYOUT_SPATIAL) {
        if (alloc_clean(c, y)) return -1;
    } else {
        y->lay.kind = TPUC_LAYOUT_PLAIN;
        y->lay.cols = Cy;
        y->lay.rows = (uint64_t)y->dims[0];
        if (y->ndim != 2) CERR(c, "a row-major Concat of %d dimensions", y->ndim);
        if (host_alloc(c, &y->lay, 0)) return -1;
    }
    const tpuc_layout_t *o = &y->lay;
    uint64_t col0 = 0;
    for (int k = 0; k < n->nin; k++) {
        const tpuc_tensor_t *x = &g->t[n->in[k]];
        const tpuc_layout_t *l = &x->lay;
        uint64_t C = l->cols, CT = (C + N - 1) / N;
        unsigned fmem = es == 4 ? ACC : UB;
        if (l->kind == TPUC_LAYOUT_SPATIAL) {
            uint64_t B = (uint64_t)x->dims[0], H = l->h, W = l->w;
            uint64_t G = min64(min64(gm->ub_rows / W, 65535 / W), es == 4 ? gm->acc_rows / W : gm->ub_rows / W);
            if (G < 1) CERR(c, "an image row of %llu pixels does not fit UB", (unsigned long long)W);
            hw_mark(c, G * W, es == 4 ? G * W : 0, 0);
            for (uint64_t t = 0; t < CT; t++) {
                uint64_t ct = min64(N, C - t * N);
                for (uint64_t r0 = 0; r0 < B * H; r0 += G) {
                    uint64_t gg = min64(G, B * H - r0);
                    for (uint64_t i = 0; i < gg; i++) {
                        uint64_t bi = (r0 + i) / H, h = (r0 + i) % H;
                        uint64_t p = bi * l->img + l->off + h * l->rpitch;
                        TRY(tpuc_e_dma_in(&c->e, UB, i * W, W, ct, l->addr + (p * C + t * N) * 2, WS(l) * C * 2));
                    }
                    if (fmem == ACC) TRY(tpuc_e_vop(&c->e, V_CVT, UB, 0, -1, 0, 0, ACC, 0, gg * W));
                    for (uint64_t i = 0; i < gg; i++) {
                        uint64_t bi = (r0 + i) / H, h = (r0 + i) % H;
                        uint64_t p = bi * o->img + o->off + h * o->rpitch;
                        TRY(tpuc_e_dma_out(&c->e, fmem, i * W, W, ct, o->addr + (p * Cy + col0 + t * N) * es, Cy * es));
                    }
                }
            }
        } else {
            uint64_t R = l->rows, mt = min64(min64(R, 65535), min64(gm->ub_rows, gm->acc_rows));
            hw_mark(c, mt, es == 4 ? mt : 0, 0);
            for (uint64_t m0 = 0; m0 < R; m0 += mt) {
                uint64_t rows = min64(mt, R - m0);
                for (uint64_t t = 0; t < CT; t++) {
                    uint64_t ct = min64(N, C - t * N);
                    TRY(tpuc_e_dma_in(&c->e, UB, 0, rows, ct, l->addr + (m0 * C + t * N) * 2, C * 2));
                    if (fmem == ACC) TRY(tpuc_e_vop(&c->e, V_CVT, UB, 0, -1, 0, 0, ACC, 0, rows));
                    TRY(tpuc_e_dma_out(&c->e, fmem, 0, rows, ct, o->addr + (m0 * Cy + col0 + t * N) * es, Cy * es));
                }
            }
        }
        col0 += C;
    }
    return 0;
}

/* ---- MaxPool / AveragePool ---- */
static int emit_pool(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    int is_max = n->op == TPUC_OP_MAXPOOL;
    uint64_t kh = (uint64_t)n->conv_k[0], kw = (uint64_t)n->conv_k[1], K = kh * kw;
    TRY(layer_begin(c, n, is_max ? "-" : "1/count fp32 (ACC)"));
    rspace_t rs;
    if (rspace(c, n, a, &rs)) return -1;
    mm_t m; /* only the output description is used */
    memset(&m, 0, sizeof m);
    if (spatial_out(c, y, &rs, &m.scatter)) return -1;
    m.out = &y->lay;
    m.r_img = rs.r_img; m.r_pitch = rs.r_pitch; m.oh = y->lay.h; m.ow = y->lay.w;
    const tpu_core_geom_t *gm = &c->hw->geom;
    const unsigned es = y->lay.esize;
    uint64_t C = a->lay.cols, CT = (C + N - 1) / N;
    /* the divisor: uniform (count_include_pad or no padding), else one per output position */
    int pads = n->conv_p[0] | n->conv_p[1] | n->conv_p[2] | n->conv_p[3];
    int uniform = is_max || n->count_include_pad || !pads;
    int64_t sc_off = -1;
    if (!is_max && uniform) {
        float s = (float)(1.0 / (double)K);
        float row[256];
        for (unsigned i = 0; i < N; i++) row[i] = s;
        sc_off = img_rows_f32(c, row, N, 1);
        if (sc_off < 0) return -1;
    } else if (!is_max) {
        /* per r: 1 / (number of window pixels inside the image), N lanes each */
        sc_off = img_alloc(c, rs.mtot * N * 4);
        if (sc_off < 0) return -1;
        uint64_t H = a->lay.h, W = a->lay.w;
        for (uint64_t r = 0; r < rs.mtot; r++) {
            uint64_t rem = r % rs.r_img, oy = rem / rs.r_pitch, ox = rem % rs.r_pitch;
            int64_t y0 = (int64_t)(oy * (uint64_t)n->conv_s[0]) - n->conv_p[0];
            int64_t x0 = (int64_t)(ox * (uint64_t)n->conv_s[1]) - n->conv_p[1];
            int64_t cnt = 0;
            for (int64_t dy = 0; dy < (int64_t)kh; dy++)
                for (int64_t dx = 0; dx < (int64_t)kw; dx++) {
                    int64_t yy = y0 + dy, xx = x0 + dx;
                    if (yy >= 0 && yy < (int64_t)H && xx >= 0 && xx < (int64_t)W) cnt++;
                }
            float s = cnt ? (float)(1.0 / (double)cnt) : 0.0f;
            for (unsigned l = 0; l < N; l++) memcpy(c->p->image + sc_off + (r * N + l) * 4, &s, 4);
        }
    }
    uint64_t sw = (uint64_t)n->conv_s[1];
    /* shifted views (as mm_views for a Conv): the kernel positions whose windows start a whole
       number of r-space rows apart are one UB region DMA'd once, each position read from its
       shift; the max (or sum) runs over the positions in the same order into a region of its
       own, so the bits of one DMA per position */
    const uint64_t step = sw * rs.ws;  /* input rows per r-space row */
    uint64_t vbase[64] = {0}, vmax[64] = {0}, vsum = 0;
    unsigned vcls[64] = {0}, nv = 0;
    int views = !c->hw->no_share && K > 1 && K <= 64;
    for (uint64_t k = 0; views && k < K; k++) {
        const uint64_t o = (k / kw) * a->lay.rpitch + (k % kw) * rs.ws;
        unsigned g = 0;
        while (g < nv && vbase[g] % step != o % step) g++;
        if (g == nv) vbase[nv++] = o;
        if (o < vbase[g]) vbase[g] = o;
        vcls[k] = g;
    }
    for (uint64_t k = 0; views && k < K; k++) {
        const uint64_t o = (k / kw) * a->lay.rpitch + (k % kw) * rs.ws;
        vmax[vcls[k]] = max64(vmax[vcls[k]], (o - vbase[vcls[k]]) / step);
    }
    for (unsigned g = 0; views && g < nv; g++) vsum += vmax[g];
    /* UB: window regions W0 (result), W1, W2 (alternating); with views W0 then the regions;
       ACC: sum (avg) + output */
    const uint64_t cap = min64(min64(rs.mtot, 65535), (gm->acc_rows - 1) / 3);
    uint64_t mt = min64(cap, gm->ub_rows / 3);
    if (views && nv < K && gm->ub_rows > vsum) {
        /* taken unless it more than doubles the tiles: the DMA saved is K / nv of the rows */
        const uint64_t mv = min64(cap, (gm->ub_rows - vsum) / (1 + nv));
        views = mv >= 1 && 2 * mv >= mt;
        if (views) mt = mv;
    } else {
        views = 0;
    }
    if (mt < 1) CERR(c, "does not fit UB/ACC");
    /* chunks the images cut alike (cut_alike) */
    uint64_t img_t = 0;
    const uint64_t vr = min64(rs.r_img, m.oh * rs.r_pitch);
    if (rs.r_pitch && mt < rs.mtot)
        mt = cut_alike(rs.mtot, rs.r_img, rs.r_pitch, vr, mt, m.scatter, m.scatter, 2, &img_t);
    uint64_t vrow[64] = {0};
    if (views) {
        uint64_t r = mt;
        for (unsigned g = 0; g < nv; g++) { vrow[g] = r; r += mt + vmax[g]; }
        TRY(tpuc_asm(c->p, "# %llu kernel positions read as shifted views of %u UB regions\n",
                     (unsigned long long)K, nv));
    }
    hw_mark(c, views ? (1 + nv) * mt + vsum : 3 * mt, is_max ? (es == 4 ? mt : 0) : 3 * mt + 1, 0);
    uint64_t sc_row = gm->acc_rows - 1;
    if (!is_max && uniform) TRY(tpuc_e_dma_in(&c->e, ACC, sc_row, 1, N, img_addr(c, sc_off), (uint64_t)N * 4));
    for (uint64_t m0 = 0, rows = 0; m0 < rs.mtot; m0 = next_tile(m0, rows, img_t, rs.r_img, vr)) {
        rows = img_t ? min64(mt, vr - m0 % rs.r_img) : min64(mt, rs.mtot - m0);
        for (uint64_t t = 0; t < CT; t++) {
            uint64_t ct = min64(N, C - t * N);
            if (views)
                for (unsigned g = 0; g < nv; g++) {
                    uint64_t pix = (uint64_t)rs.base + vbase[g] + m0 * step;
                    TRY(tpuc_e_dma_in(&c->e, UB, vrow[g], rows + vmax[g], ct,
                                      a->lay.addr + (pix * C + t * N) * 2, step * C * 2));
                }
            uint64_t prev = 0; /* position 0's rows (views: in its region) */
            for (uint64_t k = 0; k < K; k++) {
                uint64_t dy = k / kw, dx = k % kw, reg;
                if (views) {
                    const uint64_t o = dy * a->lay.rpitch + dx * rs.ws;
                    reg = vrow[vcls[k]] + (o - vbase[vcls[k]]) / step;
                } else {
                    uint64_t pix = (uint64_t)rs.base + dy * a->lay.rpitch + dx * rs.ws + m0 * sw * rs.ws;
                    reg = k == 0 ? 0 : (1 + k % 2) * mt;
                    TRY(tpuc_e_dma_in(&c->e, UB, reg, rows, ct, a->lay.addr + (pix * C + t * N) * 2, sw * rs.ws * C * 2));
                }
                if (k == 0) { prev = reg; continue; }
                if (is_max) {
                    TRY(tpuc_e_vop(&c->e, V_MAX, UB, prev, UB, reg, 0, UB, 0, rows));
                } else if (k == 1) {
                    TRY(tpuc_e_vop(&c->e, V_ADD, UB, prev, UB, reg, 0, ACC, 0, rows));
                } else {
                    TRY(tpuc_e_vop(&c->e, V_ADD, ACC, 0, UB, reg, 0, ACC, 0, rows));
                }
                prev = 0;
            }
            unsigned fmem = es == 4 ? ACC : UB;
            uint64_t frow = es == 4 ? mt : 0; /* UB: over window 0 */
            if (is_max) {
                /* a fused activation, else (fp32 output) a copy to ACC */
                if (n->fuse_act || es == 4)
                    TRY(tpuc_e_vop(&c->e, act_vop(n->fuse_act), UB, 0, -1, 0, 0, fmem, frow, rows));
            } else {
                unsigned smem = K == 1 ? UB : ACC;
                if (uniform) {
                    TRY(tpuc_e_vop(&c->e, V_MUL, smem, 0, ACC, sc_row, 1, fmem, frow, rows));
                } else {
                    TRY(tpuc_e_dma_in(&c->e, ACC, 2 * mt, rows, N, img_addr(c, sc_off) + m0 * N * 4, (uint64_t)N * 4));
                    TRY(tpuc_e_vop(&c->e, V_MUL, smem, 0, ACC, 2 * mt, 0, fmem, frow, rows));
                }
                if (n->fuse_act) TRY(tpuc_e_vop(&c->e, act_vop(n->fuse_act), fmem, frow, -1, 0, 0, fmem, frow, rows));
            }
            if (write_rows(c, &m, fmem, frow, m0, rows, t * N, ct)) return -1;
        }
    }
    cur_layer(c)->macs = 0;
    return 0;
}

/* ---- GlobalAveragePool: pixel-major rows in UB, a halving tree of adds into ACC ---- */
static int emit_gap(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    TRY(layer_begin(c, n, "1/(H*W) fp32 (ACC)"));
    const tpuc_layout_t *l = &a->lay;
    const tpu_core_geom_t *gm = &c->hw->geom;
    uint64_t B = (uint64_t)a->dims[0], C = l->cols, CT = (C + N - 1) / N, HW = l->h * l->w;
    need_t nd;
    if (consumer_needs(c, n->out[0], &nd)) return -1;
    if (nd.pt | nd.pl | nd.pb | nd.pr) CERR(c, "a padded Conv/pool after a GlobalAveragePool is not supported");
    tpuc_layout_t *o = &y->lay;
    o->kind = TPUC_LAYOUT_SPATIAL;
    o->cols = C; o->h = 1; o->w = 1; o->img = 1; o->rpitch = 1; o->off = 0; o->rows = B;
    if (host_alloc(c, o, (nd.kh + 1) + nd.kw + 1)) return -1;
    uint64_t bg = min64(B, (gm->ub_rows) / HW);
    bg = min64(bg, (gm->acc_rows - 1) / max64(1, HW / 2));
    bg = min64(bg, 65535 / max64(1, HW));
    if (bg < 1) CERR(c, "%llu pixels per image do not fit UB (%u rows)", (unsigned long long)HW, gm->ub_rows);
    float row[256];
    for (unsigned i = 0; i < N; i++) row[i] = (float)(1.0 / (double)HW);
    int64_t sc = img_rows_f32(c, row, N, 1);
    if (sc < 0) return -1;
    uint64_t sc_row = gm->acc_rows - 1;
    TRY(tpuc_e_dma_in(&c->e, ACC, sc_row, 1, N, img_addr(c, sc), (uint64_t)N * 4));
    hw_mark(c, bg * HW, bg * (HW / 2 + 1) + 1, 0);
    mm_t m;
    memset(&m, 0, sizeof m);
    m.out = o;
    for (uint64_t b0 = 0; b0 < B; b0 += bg) {
        uint64_t nb = min64(bg, B - b0);
        for (uint64_t t = 0; t < CT; t++) {
            uint64_t ct = min64(N, C - t * N);
            for (uint64_t p = 0; p < HW; p++) {
                uint64_t pix = l->off + (p / l->w) * l->rpitch + (p % l->w) * WS(l) + b0 * l->img;
                TRY(tpuc_e_dma_in(&c->e, UB, p * nb, nb, ct, l->addr + (pix * C + t * N) * 2, l->img * C * 2));
            }
            unsigned smem = UB;
            uint64_t cnt = HW;
            while (cnt > 1) {
                uint64_t half = cnt / 2;
                TRY(tpuc_e_vop(&c->e, V_ADD, smem, 0, (int)smem, half * nb, 0, ACC, 0, half * nb));
                if (cnt % 2) TRY(tpuc_e_vop(&c->e, V_ADD, ACC, 0, (int)smem, (cnt - 1) * nb, 0, ACC, 0, nb));
                smem = ACC;
                cnt = half;
            }
            unsigned fmem = o->esize == 4 ? ACC : UB;
            uint64_t frow = o->esize == 4 ? 0 : HW * nb;
            if (fmem == UB && frow + nb > gm->ub_rows) frow = 0;
            TRY(tpuc_e_vop(&c->e, V_MUL, smem, 0, ACC, sc_row, 1, fmem, frow, nb));
            if (n->fuse_act) TRY(tpuc_e_vop(&c->e, act_vop(n->fuse_act), fmem, frow, -1, 0, 0, fmem, frow, nb));
            if (write_rows(c, &m, fmem, frow, b0, nb, t * N, ct)) return -1;
        }
    }
    return 0;
}

/* ---- elementwise: unary ops, Add with a constant or a second activation, BatchNormalization
   as a per-channel scale and shift ---- */
static int same_geometry(const tpuc_layout_t *a, const tpuc_layout_t *b)
{
    return a->kind == b->kind && a->rows == b->rows && a->cols == b->cols && a->img == b->img &&
           a->off == b->off && a->rpitch == b->rpitch && WS(a) == WS(b) && a->h == b->h &&
           a->w == b->w;
}

/* A clean SPATIAL buffer for y with the padding its readers need (-Inf fills recorded). */
static int alloc_clean(ctx_t *c, tpuc_tensor_t *y)
{
    need_t nd;
    if (consumer_needs(c, (int)(y - c->g->t), &nd)) return -1;
    if (y->is_output) memset(&nd, 0, sizeof nd), nd.stride_w = 1, nd.h_mult = 1;
    if (spatial_clean(c, y, &nd)) return -1;
    if (nd.pad_kind == 2 && add_fill(c, &y->lay, &nd)) return -1;
    return 0;
}

static int is_hard(const tpuc_node_t *n)
{
    return n->op == TPUC_OP_HARDSIGMOID || n->op == TPUC_OP_HARDSWISH || n->op == TPUC_OP_GELU_ERF;
}

/* The VPU op of a one-instruction elementwise node (a unary function, or Add/Sub/Mul). */
static unsigned eltwise_vop(const tpuc_node_t *n)
{
    return n->op == TPUC_OP_RELU ? V_RELU : n->op == TPUC_OP_SIGMOID ? V_SIGMOID
         : n->op == TPUC_OP_TANH ? V_TANH : n->op == TPUC_OP_GELU ? V_GELU
         : n->op == TPUC_OP_ERF ? V_ERF
         : n->op == TPUC_OP_IDENTITY ? V_CVT : n->op == TPUC_OP_MUL ? V_MUL
         : n->op == TPUC_OP_SUB ? V_SUB : V_ADD;
}

/* HardSigmoid / HardSwish of `rows` rows at UB xrow, in fp32 in ACC: t = x * alpha (alpha
   row at ACC ka), t = t + beta (ACC kb), t = min(max(t, 0), 1) (the clip rows); HardSigmoid
   writes t to dmem:drow, HardSwish t * x. ACC rows [tmp, tmp + rows) are scratch.
   The exact GELU (TPUC_OP_GELU_ERF) on the same rows: t = x k (ka), t = erf(t),
   t = t + 1 (kb), t = t x, y = t 0.5 (the first clip row): every step one fp32 rounding
   (docs/compiler.md "Numerics: what becomes what"). */
static int emit_hard(ctx_t *c, const tpuc_node_t *n, uint64_t xrow, uint64_t ka, uint64_t kb,
                     uint64_t tmp, uint64_t clip_row, unsigned dmem, uint64_t drow, uint64_t rows)
{
    if (n->op == TPUC_OP_GELU_ERF) {
        TRY(tpuc_e_vop(&c->e, V_MUL, UB, xrow, ACC, ka, 1, ACC, tmp, rows));
        TRY(tpuc_e_vop(&c->e, V_ERF, ACC, tmp, -1, 0, 0, ACC, tmp, rows));
        TRY(tpuc_e_vop(&c->e, V_ADD, ACC, tmp, ACC, kb, 1, ACC, tmp, rows));
        TRY(tpuc_e_vop(&c->e, V_MUL, ACC, tmp, UB, xrow, 0, ACC, tmp, rows));
        TRY(tpuc_e_vop(&c->e, V_MUL, ACC, tmp, ACC, clip_row, 1, dmem, drow, rows));
        return 0;
    }
    TRY(tpuc_e_vop(&c->e, V_MUL, UB, xrow, ACC, ka, 1, ACC, tmp, rows));
    TRY(tpuc_e_vop(&c->e, V_ADD, ACC, tmp, ACC, kb, 1, ACC, tmp, rows));
    if (n->op == TPUC_OP_HARDSIGMOID) return emit_act(c, TPUC_OP_CLIP, ACC, tmp, dmem, drow, rows, clip_row);
    if (emit_act(c, TPUC_OP_CLIP, ACC, tmp, ACC, tmp, rows, clip_row)) return -1;
    TRY(tpuc_e_vop(&c->e, V_MUL, ACC, tmp, UB, xrow, 0, dmem, drow, rows));
    return 0;
}

/* The image rows from row r (of B x H, W pixels each) on, at most n, that follow each other
   in layout l's host memory (row h + 1's first pixel one pixel step after row h's last; into
   the next image too unless per_image), so that one DMA moves them */
static uint64_t row_run(const tpuc_layout_t *l, uint64_t H, uint64_t W, uint64_t r, uint64_t n,
                        int per_image)
{
    const uint64_t step = WS(l);
    uint64_t k = 1;
    for (; k < n; k++) {
        const uint64_t r1 = r + k;
        if (r1 % H == 0 ? per_image || l->img != H * l->rpitch : 0) break;
        if (l->rpitch != W * step) break;
    }
    return k;
}

/* Elementwise on SPATIAL tensors, image row by image row: the inputs may have any geometry
   (a wide Conv output, a clean padded buffer, pooled pixels wstep rows apart), the output is
   a clean buffer with the padding its readers need. x: the full-size input; x2: a second
   activation (the same shape, or [B, C, 1, 1]: one row per image, broadcast over its pixels);
   k_off / k2_off: per-channel constant rows (Add constant, BN scale and shift). */
static int eltwise_rows(ctx_t *c, const tpuc_node_t *n, const tpuc_tensor_t *x,
                        const tpuc_tensor_t *x2, int64_t k_off, int64_t k2_off, tpuc_tensor_t *y)
{
    const unsigned N = c->n;
    const tpu_core_geom_t *gm = &c->hw->geom;
    if (alloc_clean(c, y)) return -1;
    const tpuc_layout_t *a = &x->lay, *o = &y->lay;
    const tpuc_layout_t *b = x2 ? &x2->lay : NULL;
    int bcast = x2 && b->h * b->w == 1 && a->h * a->w > 1;
    uint64_t B = (uint64_t)x->dims[0], H = a->h, W = a->w, C = a->cols, CT = (C + N - 1) / N;
    unsigned es = o->esize;
    /* ACC: constants at the top (2 CT rows + 2 clip rows) */
    uint64_t crow = gm->acc_rows - 2 * CT - 2;
    if (gm->acc_rows < 2 * CT + 2 + 2 * W) CERR(c, "ACC too small for a row of %llu pixels", (unsigned long long)W);
    if (k_off >= 0) TRY(tpuc_e_dma_in(&c->e, ACC, crow, CT, N, img_addr(c, k_off), (uint64_t)N * 4));
    if (k2_off >= 0) TRY(tpuc_e_dma_in(&c->e, ACC, crow + CT, CT, N, img_addr(c, k2_off), (uint64_t)N * 4));
    const uint64_t clip_row = crow + 2 * CT;
    if ((n->op == TPUC_OP_CLIP || n->fuse_act == TPUC_OP_CLIP || is_hard(n)) && load_clip(c, n, clip_row)) return -1;
    /* G image rows per pass: UB x (G W), x2 (G W), out (G W); ACC temp and out (G W each) */
    uint64_t G = min64(gm->ub_rows / (3 * W), (crow) / (2 * W));
    G = min64(G, 65535 / W);
    if (G < 1) CERR(c, "an image row of %llu pixels does not fit UB/ACC", (unsigned long long)W);
    hw_mark(c, 3 * G * W, 2 * G * W + 2 * CT + 2, 0);
    unsigned op = eltwise_vop(n);
    const uint64_t total = B * H;
    for (uint64_t t = 0; t < CT; t++) {
        uint64_t ct = min64(N, C - t * N);
        for (uint64_t r0 = 0; r0 < total; r0 += G) {
            uint64_t g = min64(G, total - r0), rows = g * W;
            /* image rows whose pixels follow each other in host memory move in one DMA (a
               dense layout: the whole group); the [B, C, 1, 1] row once per image */
            for (uint64_t i = 0, n1; i < g; i += n1) {
                const uint64_t bi = (r0 + i) / H, h = (r0 + i) % H;
                const uint64_t pa = bi * a->img + a->off + h * a->rpitch;
                n1 = row_run(a, H, W, r0 + i, g - i, x2 && bcast);
                if (x2 && !bcast) n1 = min64(n1, row_run(b, H, W, r0 + i, n1, 0));
                TRY(tpuc_e_dma_in(&c->e, UB, i * W, n1 * W, ct, a->addr + (pa * C + t * N) * 2, WS(a) * C * 2));
                if (x2 && !bcast) {
                    uint64_t pb = bi * b->img + b->off + h * b->rpitch;
                    TRY(tpuc_e_dma_in(&c->e, UB, G * W + i * W, n1 * W, ct, b->addr + (pb * C + t * N) * 2, WS(b) * C * 2));
                } else if (x2) {
                    uint64_t pb = bi * b->img + b->off;
                    TRY(tpuc_e_dma_in(&c->e, UB, G * W + i, 1, ct, b->addr + (pb * C + t * N) * 2, C * 2));
                }
            }
            unsigned fmem = es == 4 ? ACC : UB;
            uint64_t frow = es == 4 ? G * W : 2 * G * W;
            int act = n->fuse_act;
            unsigned rm = fmem;
            uint64_t rr = frow;
            if (act && fmem == UB) { rm = ACC; rr = 0; } /* fp32 until the activation */
            if (n->op == TPUC_OP_BN) {
                TRY(tpuc_e_vop(&c->e, V_MUL, UB, 0, ACC, crow + t, 1, ACC, 0, rows));
                TRY(tpuc_e_vop(&c->e, V_ADD, ACC, 0, ACC, crow + CT + t, 1, rm, rr, rows));
            } else if (is_hard(n)) {
                if (emit_hard(c, n, 0, crow + t, crow + CT + t, 0, clip_row, rm, rr, rows)) return -1;
            } else if (n->op == TPUC_OP_SQRT) { /* as emit_eltwise: recip(rsqrt(x)) */
                TRY(tpuc_e_vop(&c->e, V_RSQRT, UB, 0, -1, 0, 0, ACC, G * W, rows));
                TRY(tpuc_e_vop(&c->e, V_RECIP, ACC, G * W, -1, 0, 0, rm, rr, rows));
            } else if (n->op == TPUC_OP_EXP) {
                TRY(tpuc_e_vop(&c->e, V_EXP, UB, 0, -1, 0, 0, rm, rr, rows));
            } else if (n->op == TPUC_OP_DIV) { /* x / y of the same shape: x * recip(y) */
                TRY(tpuc_e_vop(&c->e, V_RECIP, UB, G * W, -1, 0, 0, ACC, G * W, rows));
                TRY(tpuc_e_vop(&c->e, V_MUL, UB, 0, ACC, G * W, 0, rm, rr, rows));
            } else if (x2 && !bcast) {
                TRY(tpuc_e_vop(&c->e, op, UB, 0, UB, G * W, 0, rm, rr, rows));
            } else if (x2) {
                for (uint64_t i = 0, n1; i < g; i += n1) {
                    n1 = min64(g - i, H - (r0 + i) % H); /* the rest of the image */
                    TRY(tpuc_e_vop(&c->e, op, UB, i * W, UB, G * W + i, 1, rm, rr + i * W, n1 * W));
                }
            } else if (k_off >= 0) {
                TRY(tpuc_e_vop(&c->e, op, UB, 0, ACC, crow + t, 1, rm, rr, rows));
            } else if (n->op == TPUC_OP_CLIP) {
                if (emit_act(c, TPUC_OP_CLIP, UB, 0, rm, rr, rows, clip_row)) return -1;
            } else {
                TRY(tpuc_e_vop(&c->e, op, UB, 0, -1, 0, 0, rm, rr, rows));
            }
            if (act && emit_act(c, act, rm, rr, fmem, frow, rows, clip_row)) return -1;
            for (uint64_t i = 0, n1; i < g; i += n1) {
                uint64_t bi = (r0 + i) / H, h = (r0 + i) % H;
                uint64_t po = bi * o->img + o->off + h * o->rpitch;
                n1 = row_run(o, H, W, r0 + i, g - i, 0);
                TRY(tpuc_e_dma_out(&c->e, fmem, frow + i * W, n1 * W, ct, o->addr + (po * C + t * N) * es, C * es));
            }
        }
    }
    return 0;
}

static int emit_eltwise(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpu_core_geom_t *gm = &c->hw->geom;
    const tpuc_tensor_t *cst = NULL, *b2 = NULL;
    int rsub = 0; /* Sub with the constant first: c - x */
    if (n->op == TPUC_OP_ADD || n->op == TPUC_OP_MUL || n->op == TPUC_OP_SUB || n->op == TPUC_OP_DIV) {
        const tpuc_tensor_t *p = &g->t[n->in[0]], *q = &g->t[n->in[1]];
        if (p->is_const) { cst = p; a = q; } else if (q->is_const) cst = q; else b2 = q;
        rsub = n->op == TPUC_OP_SUB && p->is_const;
        if (b2 && tpuc_tensor_elems(b2) != tpuc_tensor_elems(a) && a->lay.kind == TPUC_LAYOUT_PLAIN &&
            b2->lay.kind == TPUC_LAYOUT_PLAIN && a->ndim == b2->ndim && a->ndim >= 2) {
            /* [.., F] with [.., 1] (either order): the column broadcast on the MXU */
            const tpuc_tensor_t *big = tpuc_tensor_elems(b2) > tpuc_tensor_elems(a) ? b2 : a;
            const tpuc_tensor_t *col = big == a ? b2 : a;
            int okc = col->dims[col->ndim - 1] == 1;
            for (int d = 0; d < a->ndim - 1; d++) if (col->dims[d] != big->dims[d]) okc = 0;
            if (okc) return tpuc_emit_bcast_col(c, n, big, col, col == a);
        }
        if (b2 && tpuc_tensor_elems(b2) > tpuc_tensor_elems(a)) {
            if (n->op == TPUC_OP_SUB || n->op == TPUC_OP_DIV) CERR(c, "the first input of a %s is broadcast to the second: not supported", n->op == TPUC_OP_SUB ? "Sub" : "Div");
            const tpuc_tensor_t *t = a; a = b2; b2 = t;
        }
    }
    if (rsub && a->lay.kind != TPUC_LAYOUT_PLAIN)
        CERR(c, "a constant minus a Conv/pool output is not supported (only activation - constant)");
    /* Div: x / y = x * recip(y), c / x = recip(x) * c (x / c became x * fp32(1/c) in fold) */
    if (n->op == TPUC_OP_DIV && a->lay.kind != TPUC_LAYOUT_PLAIN &&
        (cst || (b2 && tpuc_tensor_elems(b2) != tpuc_tensor_elems(a))))
        CERR(c, "a constant divided by a Conv/pool output, or a division by [B, C, 1, 1], is not supported");
    TRY(layer_begin(c, n, cst ? "constant fp32 (ACC)" : n->op == TPUC_OP_BN ? "scale, shift fp32 (ACC)"
                          : n->op == TPUC_OP_GELU_ERF ? "1/sqrt 2, 1, 0.5 fp32 (ACC)"
                          : is_hard(n) ? "alpha, beta, 0, 1 fp32 (ACC)" : "-"));
    /* the output buffer: the input's geometry, or a clean one written row by row */
    need_t nd;
    if (consumer_needs(c, n->out[0], &nd)) return -1;
    if (a->lay.kind == TPUC_LAYOUT_SPATIAL &&
        ((b2 && !same_geometry(&a->lay, &b2->lay)) || (nd.pt | nd.pl | nd.pb | nd.pr) ||
         WS(&a->lay) > 1 || n->op == TPUC_OP_CLIP || n->fuse_act == TPUC_OP_CLIP || is_hard(n) ||
         a->lay.img % nd.stride_w || a->lay.rpitch % nd.stride_w || nd.h_mult > 1 || y->is_output)) {
        int64_t k1 = -1, k2 = -1;
        if (cst || n->op == TPUC_OP_BN || is_hard(n)) {
            uint64_t C = a->lay.cols, CT = (C + c->n - 1) / c->n;
            float *row = calloc(CT * c->n + 1, sizeof *row), *row2 = calloc(CT * c->n + 1, sizeof *row2);
            if (!row || !row2) { free(row); free(row2); return -1; }
            if (n->op == TPUC_OP_BN) {
                const tpuc_attr_t *ea = tpuc_attr(n, "epsilon");
                double eps = ea && ea->type == 1 ? ea->f : 1e-5;
                const float *s = g->t[n->in[1]].f, *bb = g->t[n->in[2]].f, *mu = g->t[n->in[3]].f, *v = g->t[n->in[4]].f;
                for (uint64_t i = 0; i < C; i++) {
                    double f = s[i] / sqrt((double)v[i] + eps);
                    row[i] = (float)f;
                    row2[i] = (float)(bb[i] - mu[i] * f);
                }
            } else if (is_hard(n)) {
                for (uint64_t i = 0; i < C; i++) { row[i] = n->hs_alpha; row2[i] = n->hs_beta; }
            } else {
                int64_t ce = tpuc_tensor_elems(cst);
                if (ce != 1 && (uint64_t)ce != C) { free(row); free(row2); CERR(c, "a constant that is not per-channel with a Conv/pool output is not supported"); }
                for (uint64_t i = 0; i < C; i++) row[i] = cst->f[ce == 1 ? 0 : i];
            }
            const int two = n->op == TPUC_OP_BN || is_hard(n);
            k1 = img_rows_f32(c, row, C, CT);
            if (two) k2 = img_rows_f32(c, row2, C, CT);
            free(row); free(row2);
            if (k1 < 0 || (two && k2 < 0)) return -1;
        }
        return eltwise_rows(c, n, a, b2, k1, k2, y);
    }
    y->lay = a->lay;
    y->lay.esize = y->is_output ? 4 : 2;
    y->lay.flat = 0;
    if (a->lay.kind == TPUC_LAYOUT_SPATIAL) {
        if (nd.pt > a->lay.pad_t || nd.pl > a->lay.pad_l || nd.pb > a->lay.pad_b || nd.pr > a->lay.pad_r ||
            ((nd.pt | nd.pl | nd.pb | nd.pr) && !(n->op == TPUC_OP_RELU && a->lay.pad_value == 0 && nd.pad_kind == 1)))
            CERR(c, "its output feeds a padded Conv/pool; only a Relu of a zero-padded input keeps the padding");
        if (y->is_output) { y->lay.pad_t = y->lay.pad_l = y->lay.pad_b = y->lay.pad_r = 0; }
    }
    uint64_t slack = a->lay.kind == TPUC_LAYOUT_SPATIAL ? a->lay.off + (nd.kh + 1) * a->lay.rpitch + nd.kw + 1 : 0;
    if (host_alloc(c, &y->lay, slack)) return -1;
    uint64_t R = a->lay.rows, C = a->lay.cols, CT = (C + N - 1) / N;
    /* constants: one broadcast row per column tile, or a full matrix */
    int64_t k_off = -1, k2_off = -1;
    int full = 0;
    if (cst || n->op == TPUC_OP_BN || is_hard(n)) {
        float *row = calloc(CT * N + 1, sizeof *row), *row2 = calloc(CT * N + 1, sizeof *row2);
        if (!row || !row2) { free(row); free(row2); return -1; }
        if (n->op == TPUC_OP_BN) {
            const tpuc_attr_t *ea = tpuc_attr(n, "epsilon");
            double eps = ea && ea->type == 1 ? ea->f : 1e-5;
            const float *s = g->t[n->in[1]].f, *bb = g->t[n->in[2]].f, *mu = g->t[n->in[3]].f, *v = g->t[n->in[4]].f;
            uint64_t ch = (uint64_t)a->dims[1];
            if (a->lay.kind == TPUC_LAYOUT_PLAIN && !(a->ndim == 2)) { free(row); free(row2); CERR(c, "BatchNormalization of a %d-D row-major tensor", a->ndim); }
            for (uint64_t i = 0; i < ch && i < C; i++) {
                double f = s[i] / sqrt((double)v[i] + eps);
                row[i] = (float)f;
                row2[i] = (float)(bb[i] - mu[i] * f);
            }
            k_off = img_rows_f32(c, row, C, CT);
            k2_off = img_rows_f32(c, row2, C, CT);
        } else if (is_hard(n)) {
            for (uint64_t i = 0; i < C; i++) { row[i] = n->hs_alpha; row2[i] = n->hs_beta; }
            k_off = img_rows_f32(c, row, C, CT);
            k2_off = img_rows_f32(c, row2, C, CT);
        } else {
            /* does the constant vary along the row (the last physical axis) only? c - x (rsub)
               takes the full matrix: vop sub's broadcast operand is the second */
            int64_t ce = tpuc_tensor_elems(cst);
            int rowb = 0;
            if (rsub) {
                rowb = 0;
            } else if (ce == 1) {
                for (uint64_t i = 0; i < C; i++) row[i] = cst->f[0];
                rowb = 1;
            } else if (a->lay.kind == TPUC_LAYOUT_PLAIN && cst->dims[cst->ndim - 1] == (int64_t)C && (uint64_t)ce == C) {
                for (uint64_t i = 0; i < C; i++) row[i] = cst->f[i];
                rowb = 1;
            } else if (a->lay.kind == TPUC_LAYOUT_SPATIAL && (uint64_t)ce == C && a->ndim - cst->ndim <= 1 &&
                       cst->ndim >= a->ndim - 1 && cst->dims[cst->ndim - (a->ndim - 1)] == (int64_t)C) {
                for (uint64_t i = 0; i < C; i++) row[i] = cst->f[i];
                rowb = 1;
            }
            if (rowb) {
                k_off = img_rows_f32(c, row, C, CT);
            } else if (a->lay.kind == TPUC_LAYOUT_PLAIN) {
                /* expand to the activation's shape (batch bound), rows x CT*N lanes */
                full = 1;
                k_off = img_alloc(c, R * CT * N * 4);
                if (k_off < 0) { free(row); free(row2); return -1; }
                int64_t idx[TPUC_MAX_DIMS];
                for (uint64_t e = 0; e < R * C; e++) {
                    uint64_t rem = e;
                    for (int d = a->ndim - 1; d >= 0; d--) { idx[d] = (int64_t)(rem % (uint64_t)a->dims[d]); rem /= (uint64_t)a->dims[d]; }
                    uint64_t ci = 0;
                    for (int d = 0; d < cst->ndim; d++) {
                        int ad = a->ndim - cst->ndim + d;
                        ci = ci * (uint64_t)cst->dims[d] + (cst->dims[d] == 1 ? 0 : (uint64_t)idx[ad]);
                    }
                    float v = cst->f[ci];
                    uint64_t r = e / C, col = e % C;
                    memcpy(c->p->image + k_off + ((r * CT + col / N) * N + col % N) * 4, &v, 4);
                }
            } else {
                free(row); free(row2);
                CERR(c, "a constant that is not per-channel added to a Conv/pool output is not supported");
            }
        }
        free(row);
        free(row2);
        if (k_off < 0 || ((n->op == TPUC_OP_BN || is_hard(n)) && k2_off < 0)) return -1;
    }
    unsigned op = eltwise_vop(n);
    if (b2 && (b2->lay.kind != a->lay.kind || b2->lay.rows != a->lay.rows || b2->lay.cols != a->lay.cols))
        CERR(c, "two row-major inputs of different shapes are not supported");
    /* UB: x (mt), x2 (mt), out (mt); ACC: constants (2 CT rows at the top), temp, out */
    uint64_t crow = gm->acc_rows - 2 * CT;
    if (gm->acc_rows <= 2 * CT + 4) CERR(c, "ACC too small");
    const uint64_t clip_row = crow - 2;
    if ((n->op == TPUC_OP_CLIP || n->fuse_act == TPUC_OP_CLIP || is_hard(n)) && load_clip(c, n, clip_row)) return -1;
    uint64_t mt = min64(min64(R, 65535), gm->ub_rows / 3);
    mt = min64(mt, (gm->acc_rows - 2 * CT - 2) / 2);
    if (mt < 1) CERR(c, "does not fit UB/ACC");
    hw_mark(c, 3 * mt, 2 * mt + 2 * CT, 0);
    if (k_off >= 0 && !full) TRY(tpuc_e_dma_in(&c->e, ACC, crow, CT, N, img_addr(c, k_off), (uint64_t)N * 4));
    if (k2_off >= 0) TRY(tpuc_e_dma_in(&c->e, ACC, crow + CT, CT, N, img_addr(c, k2_off), (uint64_t)N * 4));
    const unsigned es = y->lay.esize;
    mm_t m;
    memset(&m, 0, sizeof m);
    m.out = &y->lay;
    for (uint64_t m0 = 0; m0 < R; m0 += mt) {
        uint64_t rows = min64(mt, R - m0);
        for (uint64_t t = 0; t < CT; t++) {
            uint64_t ct = min64(N, C - t * N);
            TRY(tpuc_e_dma_in(&c->e, UB, 0, rows, ct, a->lay.addr + (m0 * C + t * N) * 2, C * 2));
            unsigned fmem = es == 4 ? ACC : UB;
            uint64_t frow = es == 4 ? mt : 2 * mt;
            if (n->op == TPUC_OP_BN) {
                TRY(tpuc_e_vop(&c->e, V_MUL, UB, 0, ACC, crow + t, 1, ACC, 0, rows));
                TRY(tpuc_e_vop(&c->e, V_ADD, ACC, 0, ACC, crow + CT + t, 1, fmem, frow, rows));
            } else if (is_hard(n)) {
                if (emit_hard(c, n, 0, crow + t, crow + CT + t, 0, clip_row, fmem, frow, rows)) return -1;
            } else if (n->op == TPUC_OP_SQRT) {
                /* sqrt(x) = recip(rsqrt(x)): +-0 -> +-Inf -> +-0, +Inf -> +0 -> +Inf exactly */
                TRY(tpuc_e_vop(&c->e, V_RSQRT, UB, 0, -1, 0, 0, ACC, mt, rows));
                TRY(tpuc_e_vop(&c->e, V_RECIP, ACC, mt, -1, 0, 0, fmem, frow, rows));
            } else if (n->op == TPUC_OP_EXP) {
                TRY(tpuc_e_vop(&c->e, V_EXP, UB, 0, -1, 0, 0, fmem, frow, rows));
            } else if (n->op == TPUC_OP_DIV && b2) {
                TRY(tpuc_e_dma_in(&c->e, UB, mt, rows, ct, b2->lay.addr + (m0 * C + t * N) * 2, C * 2));
                TRY(tpuc_e_vop(&c->e, V_RECIP, UB, mt, -1, 0, 0, ACC, mt, rows));
                TRY(tpuc_e_vop(&c->e, V_MUL, UB, 0, ACC, mt, 0, fmem, frow, rows));
            } else if (n->op == TPUC_OP_DIV) {
                TRY(tpuc_e_vop(&c->e, V_RECIP, UB, 0, -1, 0, 0, ACC, mt, rows));
                if (full) {
                    TRY(tpuc_e_dma_in(&c->e, ACC, 0, rows, N, img_addr(c, k_off) + (m0 * CT + t) * N * 4, CT * N * 4));
                    TRY(tpuc_e_vop(&c->e, V_MUL, ACC, mt, ACC, 0, 0, fmem, frow, rows));
                } else {
                    TRY(tpuc_e_vop(&c->e, V_MUL, ACC, mt, ACC, crow + t, 1, fmem, frow, rows));
                }
            } else if (b2) {
                TRY(tpuc_e_dma_in(&c->e, UB, mt, rows, ct, b2->lay.addr + (m0 * C + t * N) * 2, C * 2));
                TRY(tpuc_e_vop(&c->e, op, UB, 0, UB, mt, 0, fmem, frow, rows));
            } else if (cst && full) {
                TRY(tpuc_e_dma_in(&c->e, ACC, 0, rows, N, img_addr(c, k_off) + (m0 * CT + t) * N * 4, CT * N * 4));
                if (rsub) TRY(tpuc_e_vop(&c->e, V_SUB, ACC, 0, UB, 0, 0, fmem, frow, rows));
                else TRY(tpuc_e_vop(&c->e, op, UB, 0, ACC, 0, 0, fmem, frow, rows));
            } else if (cst) {
                TRY(tpuc_e_vop(&c->e, op, UB, 0, ACC, crow + t, 1, fmem, frow, rows));
            } else if (n->op == TPUC_OP_CLIP) {
                if (emit_act(c, TPUC_OP_CLIP, UB, 0, fmem, frow, rows, clip_row)) return -1;
            } else {
                TRY(tpuc_e_vop(&c->e, op, UB, 0, -1, 0, 0, fmem, frow, rows));
            }
            if (n->fuse_act && emit_act(c, n->fuse_act, fmem, frow, fmem, frow, rows, clip_row)) return -1;
            TRY(tpuc_e_dma_out(&c->e, fmem, frow, rows, ct, y->lay.addr + (m0 * C + t * N) * es, C * es));
        }
    }
    return 0;
}

/* ---- ReduceSum / ReduceMean over the last axis of a row-major tensor ----
   Per tile of mt rows (a multiple of N): the row's chunks of N elements in UB (chunk t of
   the tile at UB rows t*mt ..), one `vred sum` (docs/vpu.md "Reductions": the fixed order)
   packing the mt sums N to an ACC row, for the mean times fp32(1/n) in one `vop mul`; the
   packed rows are the output's elements in row-major order (one per input row). */
static int emit_reduce(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpu_core_geom_t *gm = &c->hw->geom;
    const int mean = n->op == TPUC_OP_REDUCEMEAN;
    if (n->red_hi != a->ndim - 1) return tpuc_emit_reduce_rows(c, n);
    TRY(layer_begin(c, n, mean ? "1/n fp32 (ACC)" : "-"));
    if (a->lay.kind != TPUC_LAYOUT_PLAIN || a->lay.esize != 2)
        CERR(c, "internal: the input is not a row-major bf16 tensor");
    /* the reduced trailing axes [red_lo, rank - 1] are one row of L elements of the dense
       row-major buffer (red_lo = rank - 1: L = the buffer's row) */
    uint64_t L = 1;
    for (int d = n->red_lo; d < a->ndim; d++) L *= (uint64_t)a->dims[d];
    uint64_t R = a->lay.rows * a->lay.cols / L, CT = (L + N - 1) / N;
    memset(&y->lay, 0, sizeof y->lay);
    y->lay.kind = TPUC_LAYOUT_PLAIN;
    y->lay.esize = y->is_output ? 4 : 2;
    y->lay.cols = (uint64_t)y->dims[y->ndim - 1];
    y->lay.rows = (uint64_t)(tpuc_tensor_elems(y) / (int64_t)y->lay.cols);
    if (y->lay.rows * y->lay.cols != R) CERR(c, "internal: %llu rows reduce to %llu elements", (unsigned long long)R, (unsigned long long)(y->lay.rows * y->lay.cols));
    if (host_alloc(c, &y->lay, 0)) return -1;
    /* UB: CT chunks of mt rows, then P = mt/N packed output rows; ACC: P sums, P results,
       the 1/n row at the top */
    uint64_t mt = min64(min64(R, 65535), gm->ub_rows / (CT + 1));
    mt = min64(mt, (gm->acc_rows - 1) / 2 * N);
    if (mt > N) mt -= mt % N;
    if (mt < 1) CERR(c, "a row of %llu elements does not fit UB", (unsigned long long)L);
    const uint64_t P = (mt + N - 1) / N, krow = gm->acc_rows - 1;
    hw_mark(c, CT * mt + P, 2 * P + 1, 0);
    if (mean) {
        float v[512];
        for (unsigned i = 0; i < N; i++) v[i] = (float)(1.0 / (double)L);
        int64_t off = img_rows_f32(c, v, N, 1);
        if (off < 0) return -1;
        TRY(tpuc_e_dma_in(&c->e, ACC, krow, 1, N, img_addr(c, off), (uint64_t)N * 4));
    }
    const unsigned es = y->lay.esize;
    const unsigned dm = es == 4 ? ACC : UB;
    const uint64_t dr = es == 4 ? P : CT * mt;
    for (uint64_t m0 = 0; m0 < R; m0 += mt) {
        uint64_t rows = min64(mt, R - m0), pr = (rows + N - 1) / N;
        for (uint64_t t = 0; t < CT; t++) {
            uint64_t ct = min64(N, L - t * N);
            TRY(tpuc_e_dma_in(&c->e, UB, t * mt, rows, ct, a->lay.addr + (m0 * L + t * N) * 2, L * 2));
        }
        TRY(tpuc_e_vred(&c->e, n->op == TPUC_OP_REDUCEMAX ? "max" : "sum", UB, 0, ACC, 0, rows, L, mt, 1));
        if (mean) TRY(tpuc_e_vop(&c->e, V_MUL, ACC, 0, ACC, krow, 1, dm, dr, pr));
        else if (dm == UB) TRY(tpuc_e_vop(&c->e, V_CVT, ACC, 0, -1, 0, 0, dm, dr, pr));
        const uint64_t src = mean || dm == UB ? dr : 0;
        /* rows / N full packed rows, then the rest of the last one */
        uint64_t full = rows / N, rest = rows % N, addr = y->lay.addr + m0 * es;
        if (full) TRY(tpuc_e_dma_out(&c->e, dm, src, full, N, addr, (uint64_t)N * es));
        if (rest) TRY(tpuc_e_dma_out(&c->e, dm, src + full, 1, rest, addr + full * N * es, (uint64_t)N * es));
    }
    return 0;
}

/* ---- Softmax over the last axis of a row-major tensor ---- */
static int emit_softmax(ctx_t *c, const tpuc_node_t *n)
{
    const unsigned N = c->n;
    tpuc_graph_t *g = c->g;
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    const tpu_core_geom_t *gm = &c->hw->geom;
    if (n->red_hi != a->ndim - 1) return tpuc_emit_softmax_rows(c, n);
    TRY(layer_begin(c, n, "-"));
    y->lay = a->lay;
    y->lay.esize = y->is_output ? 4 : 2;
    if (host_alloc(c, &y->lay, 0)) return -1;
    /* the trailing axes [red_lo, rank - 1] (one axis at opset 13: the last) as rows of L */
    uint64_t L = 1;
    for (int d = n->red_lo; d < a->ndim; d++) L *= (uint64_t)a->dims[d];
    uint64_t R = a->lay.rows * a->lay.cols / L, CT = (L + N - 1) / N;
    /* ACC: CT chunks of mt rows (scratch), then CT chunks of the fp32 result; UB: a chunk */
    uint64_t mt = min64(min64(R, 65535), gm->acc_rows / (2 * CT));
    mt = min64(mt, gm->ub_rows / (CT + 1));
    if (mt < 1) CERR(c, "a row of %llu elements does not fit ACC", (unsigned long long)L);
    hw_mark(c, (CT + 1) * mt, 2 * CT * mt, 0);
    const unsigned es = y->lay.esize;
    for (uint64_t m0 = 0; m0 < R; m0 += mt) {
        uint64_t rows = min64(mt, R - m0);
        for (uint64_t t = 0; t < CT; t++) {
            uint64_t ct = min64(N, L - t * N);
            if (a->lay.esize == 4) { /* an fp32 graph input: straight into ACC */
                TRY(tpuc_e_dma_in(&c->e, ACC, t * mt, rows, ct, a->lay.addr + (m0 * L + t * N) * 4, L * 4));
                continue;
            }
            TRY(tpuc_e_dma_in(&c->e, UB, 0, rows, ct, a->lay.addr + (m0 * L + t * N) * 2, L * 2));
            TRY(tpuc_e_vop(&c->e, V_CVT, UB, 0, -1, 0, 0, ACC, t * mt, rows));
        }
        unsigned dm = es == 4 ? ACC : UB;
        uint64_t dr = es == 4 ? CT * mt : mt;
        TRY(tpuc_e_softmax(&c->e, 0, dm, dr, rows, L, mt, 1));
        for (uint64_t t = 0; t < CT; t++) {
            uint64_t ct = min64(N, L - t * N);
            TRY(tpuc_e_dma_out(&c->e, dm, dr + t * mt, rows, ct, y->lay.addr + (m0 * L + t * N) * es, L * es));
        }
    }
    return 0;
}

static int tile_pass(tpuc_graph_t *g, const tpuc_hw_t *hw, tpuc_prog_t *p, uint64_t img_base,
                     int dry, uint64_t *host_top, wplan_t *plan, char *err, size_t errlen);

/* Two passes: a dry one (no text, no assembly) lays out the activations, then the image is
   placed right after them and the program written. By default every activation gets a host
   buffer of its own (docs/compiler.md "Host memory"): a model's repeated blocks then read and
   write addresses that advance by a constant from block to block, and the loop pass rolls
   them into one loop; only when that would take more than TPUC_OWN_BUFFERS_MAX are dead
   tensors' buffers reused (as with --reuse). */
int tpuc_tile(tpuc_graph_t *g, const tpuc_hw_t *hw, tpuc_prog_t *p, char *err, size_t errlen)
{
    tpuc_prog_t scratch;
    uint64_t top = 0;
    tpuc_hw_t h = *hw;
    wplan_t plan;
    memset(&plan, 0, sizeof plan);
    h.no_reuse = !hw->reuse;
    int rc = tile_pass(g, &h, &scratch, (uint64_t)3 << 30, 1, &top, &plan, err, errlen);
    if (!rc && !hw->reuse && !hw->no_reuse && scratch.act_bytes > TPUC_OWN_BUFFERS_MAX) {
        tpuc_prog_free(&scratch);
        plan.n = 0;
        plan.wbytes = 0;
        h.no_reuse = 0;
        rc = tile_pass(g, &h, &scratch, (uint64_t)3 << 30, 1, &top, &plan, err, errlen);
    }
    tpuc_prog_free(&scratch);
    if (rc) {
        free(plan.rec);
        memset(p, 0, sizeof *p);
        return -1;
    }
    plan.ok = 1;
    rc = tile_pass(g, &h, p, up(top, 1 << 20), 0, &top, &plan, err, errlen);
    free(plan.rec);
    return rc;
}

/* The graph input x (laid out SPATIAL, allocated from host_top `top`) becomes an IM2COL
   buffer when its only reader is a group-1 Conv whose kernel rows would each take a K-chunk
   of their own while the whole kernel takes fewer (docs/compiler.md "The first Conv's
   windows"): the MXU then runs ceil(KH*KW*C/N) matmuls per N-tile instead of
   KH*ceil(KW*C/N), on the output pixels only (no padded width), with the same chain order
   (kernel row, column, channel) and so the same bits. The host writes the windows
   (tpuc_put_input). */
static int input_im2col(ctx_t *c, tpuc_tensor_t *x, uint64_t top)
{
    const tpuc_graph_t *g = c->g;
    const tpuc_node_t *conv = NULL;
    int ti = (int)(x - g->t);
    for (size_t i = 0; i < g->nn; i++) {
        const tpuc_node_t *n = &g->n[i];
        if (n->op == TPUC_OP_DEAD) continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] == ti) {
                if (conv || k != 0 || n->op != TPUC_OP_CONV) return 0;
                conv = n;
            }
    }
    if (!conv || c->hw->no_im2col || conv->depthwise || conv->groups > 1 || x->lay.wstep > 1)
        return 0;
    const uint64_t N = c->n, C = x->lay.cols;
    const uint64_t kh = (uint64_t)conv->conv_k[0], kw = (uint64_t)conv->conv_k[1], K = kh * kw * C;
    if ((K + N - 1) / N >= kh * ((kw * C + N - 1) / N)) return 0;
    const tpuc_tensor_t *y = &g->t[conv->out[0]];
    tpuc_layout_t *l = &x->lay;
    l->kind = TPUC_LAYOUT_IM2COL;
    l->ikh = kh; l->ikw = kw;
    l->ish = (uint64_t)conv->conv_s[0]; l->isw = (uint64_t)conv->conv_s[1];
    l->ipt = (uint64_t)conv->conv_p[0]; l->ipl = (uint64_t)conv->conv_p[1];
    l->ioh = y->ndim == 4 ? (uint64_t)y->dims[2] : 1; l->iow = (uint64_t)y->dims[y->ndim - 1];
    l->ichan = C;
    l->rows = (uint64_t)x->dims[0] * l->ioh * l->iow;
    l->cols = K;
    l->img = l->off = l->rpitch = 0;
    l->pad_t = l->pad_l = l->pad_b = l->pad_r = 0;
    l->ipool = l->ipg = 0;
    /* a fused MaxPool: the windows of whole pool windows only, grouped as one matmul tile
       each (tpuc.h; docs/compiler.md "Pooled windows"), so its max is k*k - 1 passes over a
       k*k-th of the tile's rows */
    const uint64_t k = (uint64_t)pool_fusable(c, conv, NULL, 1);
    if (k && l->ioh >= k && l->iow >= k) {
        const tpuc_tensor_t *bias = conv->nin > 2 && conv->in[2] >= 0 ? &g->t[conv->in[2]] : NULL;
        const uint64_t cout = (uint64_t)g->t[conv->in[1]].dims[0];
        const uint64_t P = (uint64_t)x->dims[0] * (l->ioh / k) * (l->iow / k);
        tpuc_layout_t o;
        memset(&o, 0, sizeof o);
        o.esize = 2;
        mm_t m;
        memset(&m, 0, sizeof m);
        m.T = (unsigned)((K + N - 1) / N);
        m.U = (unsigned)((cout + N - 1) / N);
        m.b_off = bias ? 0 : -1;
        m.act = conv->fuse_act;
        m.out = &o;
        m.pool_k = (unsigned)k;
        m.pool_g = 1;
        m.mtot = P * k * k;
        int keep, pf;
        uint64_t gs = mm_rows(c, &m, &keep, &pf) / (k * k);
        if (gs >= 1) {
            l->ipool = k;
            l->ipg = gs < P ? gs : P;
            l->rows = P * k * k;
        }
    }
    c->host_top = top;
    return host_alloc(c, l, 0);
}

/* After node i is emitted: every buffer no tensor still holds is freed. A tensor holds its
   buffer (by address: views share it) when it has been written (its producer emitted) and a
   node emitted after i reads it, or it is a graph output. */
static void release_dead(ctx_t *c, size_t i)
{
    const tpuc_graph_t *g = c->g;
    /* read[t]: a node that reads after node i reads tensor t (one pass over the nodes, so
       that a graph of many nodes, an unrolled RNN's, is not quadratic per node); without
       the memory, nothing is released */
    uint8_t *read = calloc(g->nt ? g->nt : 1, 1);
    if (!read) return;
    for (size_t j = i + 1; j < g->nn; j++) {
        if (g->n[j].op == TPUC_OP_DEAD || read_at(g, j) <= i) continue;
        for (int k = 0; k < g->n[j].nin; k++)
            if (g->n[j].in[k] >= 0) read[g->n[j].in[k]] = 1;
    }
    for (size_t b = 0; b < c->nbufs; b++)
        if (!c->bufs[b].pinned) c->bufs[b].free = 2; /* 2: free unless a holder is found */
    for (size_t t = 0; t < g->nt; t++) {
        const tpuc_tensor_t *x = &g->t[t];
        if (x->is_const || x->lay.kind == TPUC_LAYOUT_NONE) continue;
        if (x->producer >= 0 && read_at(g, (size_t)x->producer) > i) continue;
        if (!x->is_output && !read[t]) continue;
        for (size_t b = 0; b < c->nbufs; b++)
            if (c->bufs[b].key.addr == x->lay.addr) c->bufs[b].free = 0;
    }
    free(read);
    for (size_t b = 0; b < c->nbufs; b++)
        if (c->bufs[b].free == 2) c->bufs[b].free = 1;
}

static int tile_pass_ctx(ctx_t *c, tpuc_graph_t *g, const tpuc_hw_t *hw, tpuc_prog_t *p,
                         uint64_t img_base, int dry, uint64_t *host_top, wplan_t *plan,
                         char *err, size_t errlen);

static int tile_pass(tpuc_graph_t *g, const tpuc_hw_t *hw, tpuc_prog_t *p, uint64_t img_base,
                     int dry, uint64_t *host_top, wplan_t *plan, char *err, size_t errlen)
{
    ctx_t cc;
    memset(&cc, 0, sizeof cc);
    int rc = tile_pass_ctx(&cc, g, hw, p, img_base, dry, host_top, plan, err, errlen);
    free(cc.bufs);
    return rc;
}

static int tile_pass_ctx(ctx_t *c, tpuc_graph_t *g, const tpuc_hw_t *hw, tpuc_prog_t *p,
                         uint64_t img_base, int dry, uint64_t *host_top, wplan_t *plan,
                         char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    c->plan = plan;
    c->dry = dry;
    if (!dry && plan && plan->ok) { /* the weight arena first (img_weights) */
        p->image = calloc((size_t)plan->wbytes + 1, 1);
        if (!p->image) { tpuc_err(err, errlen, "out of memory"); return -1; }
        p->image_bytes = plan->wbytes;
    }
    c->g = g; c->hw = hw; c->p = p; c->n = hw->geom.n;
    c->e.p = p;
    c->e.dry = dry;
    c->err = err; c->errlen = errlen;
    err[0] = 0;
    c->slots = hw->geom.wmem_rows / hw->geom.n;
    c->host_top = 0x1000;
    c->keep_t = -1;
    if (c->slots < 1) {
        tpuc_err(err, errlen, "WMEM holds %u rows, less than one %u x %u weight tile",
                 hw->geom.wmem_rows, hw->geom.n, hw->geom.n);
        return -1;
    }
    if (hw->geom.n > 256) { tpuc_err(err, errlen, "N > 256"); return -1; }
    /* element sizes: the graph output in fp32, everything else bf16 */
    for (size_t i = 0; i < g->nt; i++) g->t[i].lay.esize = g->t[i].is_output ? 4 : 2;
    /* the input buffer */
    tpuc_tensor_t *x = &g->t[g->inputs[0]];
    x->lay.esize = 2;
    if (x->lay.kind == TPUC_LAYOUT_IM2COL) x->lay.kind = TPUC_LAYOUT_SPATIAL; /* the dry pass's */
    if (x->lay.kind == TPUC_LAYOUT_SPATIAL) {
        need_t nd;
        if (consumer_needs(c, g->inputs[0], &nd)) return -1;
        uint64_t top = c->host_top;
        if (spatial_clean(c, x, &nd)) return -1;
        if (nd.pad_kind == 2 && add_fill(c, &x->lay, &nd)) return -1;
        if (nd.pad_kind != 2 && input_im2col(c, x, top)) return -1;
    } else if (x->dtype != TPUC_F32) {
        /* token ids: one one-hot bf16 row of V columns per id (tpu-infer writes them), the
           A operand of the embedding's matmul */
        const tpuc_tensor_t *tab = NULL;
        for (size_t i = 0; i < g->nn; i++)
            if (g->n[i].op == TPUC_OP_GATHER && g->n[i].embed && g->n[i].in[1] == g->inputs[0])
                tab = &g->t[g->n[i].in[0]];
        if (!tab) { tpuc_err(err, errlen, "internal: token ids read by no embedding"); return -1; }
        x->lay.kind = TPUC_LAYOUT_PLAIN;
        x->lay.cols = (uint64_t)tab->dims[0];
        x->lay.rows = (uint64_t)tpuc_tensor_elems(x);
        if (host_alloc(c, &x->lay, 0)) return -1;
    } else {
        /* read only by Softmax: kept in fp32 (the softmax runs on fp32 in ACC anyway) */
        int only_sm = 1;
        for (size_t i = 0; i < g->nn; i++) {
            const tpuc_node_t *n = &g->n[i];
            if (n->op == TPUC_OP_DEAD) continue;
            for (int k = 0; k < n->nin; k++)
                if (n->in[k] == g->inputs[0] && (n->op != TPUC_OP_SOFTMAX || n->red_hi != x->ndim - 1))
                    only_sm = 0;
        }
        x->lay.esize = only_sm ? 4 : 2;
        x->lay.kind = TPUC_LAYOUT_PLAIN;
        x->lay.cols = (uint64_t)x->dims[x->ndim - 1];
        x->lay.rows = (uint64_t)(tpuc_tensor_elems(x) / (int64_t)x->lay.cols);
        if (host_alloc(c, &x->lay, 0)) return -1;
    }
    for (size_t b = 0; b < c->nbufs; b++) c->bufs[b].pinned = 1; /* the host writes the input */
    p->in_t = g->inputs[0];
    p->out_t = g->outputs[0];
    p->batch = (long)x->dims[0];
    /* the constant image goes right after every activation (tpuc_tile's dry pass measured
       them; in that pass the base is the 3 GiB limit) */
    c->img_base = img_base;
    if (c->img_base > ((uint64_t)3 << 30)) {
        tpuc_err(err, errlen, "the activations need more than 3 GiB of host memory");
        return -1;
    }
    TRY(tpuc_asm(p, "# compiled by tpu-compile for N = %u, UB %u rows, ACC %u rows, WMEM %u "
                 "rows, IMEM %u; %ld image(s) per core\n", hw->geom.n, hw->geom.ub_rows,
                 hw->geom.acc_rows, hw->geom.wmem_rows, hw->geom.imem_insns, p->batch));
    for (size_t i = 0; i < g->nn; i++) {
        tpuc_node_t *n = &g->n[i];
        if (n->op == TPUC_OP_DEAD || n->fused_into) continue;
        c->node = n;
        tpuc_tensor_t *a = &g->t[n->in[0]], *y = &g->t[n->out[0]];
        int rc = 0;
        switch (n->op) {
        case TPUC_OP_GEMM: case TPUC_OP_MATMUL:
            if (y->lay.kind == TPUC_LAYOUT_NONE) y->lay.kind = TPUC_LAYOUT_PLAIN;
            y->lay.cols = (uint64_t)y->dims[y->ndim - 1];
            y->lay.rows = (uint64_t)(tpuc_tensor_elems(y) / (int64_t)y->lay.cols);
            y->lay.kind = TPUC_LAYOUT_PLAIN;
            if (host_alloc(c, &y->lay, 0)) return -1;
            rc = emit_gemm(c, n);
            break;
        case TPUC_OP_CONV: rc = n->depthwise ? emit_dwconv(c, n) : emit_conv(c, n); break;
        case TPUC_OP_MAXPOOL: case TPUC_OP_AVGPOOL: rc = emit_pool(c, n); break;
        case TPUC_OP_GAP: rc = emit_gap(c, n); break;
        case TPUC_OP_CONCAT:
            /* row-major [B, L, D] rows (ViT's class token and patch rows): tile_channels.c */
            rc = y->ndim == 3 && y->lay.kind == TPUC_LAYOUT_PLAIN ? tpuc_emit_concat_rows(c, n)
                                                                 : emit_concat(c, n);
            break;
        case TPUC_OP_PICK: rc = tpuc_emit_pick(c, n); break;
        case TPUC_OP_PAD: rc = tpuc_emit_pad(c, n); break;
        case TPUC_OP_CHANNELS: rc = tpuc_emit_channels(c, n); break;
        case TPUC_OP_TOROWS: case TPUC_OP_TOPIXELS: rc = tpuc_emit_relayout(c, n); break;
        case TPUC_OP_GATHER: rc = emit_embed(c, n); break;
        case TPUC_OP_SOFTMAX: rc = emit_softmax(c, n); break;
        case TPUC_OP_FLATTEN: case TPUC_OP_RESHAPE:
            /* a view of the same bytes */
            if (a->lay.kind == TPUC_LAYOUT_SPATIAL && a->lay.h * a->lay.w == 1 && a->lay.img == 1) {
                y->lay = a->lay;
                y->lay.kind = TPUC_LAYOUT_PLAIN;
                y->lay.flat = 0;
            } else if (a->lay.kind == TPUC_LAYOUT_SPATIAL && y->lay.kind == TPUC_LAYOUT_PLAIN) {
                tpuc_err(err, errlen, "node '%s' (%s): internal: a one-pixel tensor that is not "
                         "laid out densely", n->name, n->op_type);
                return -1;
            } else if (a->lay.kind == TPUC_LAYOUT_SPATIAL) {
                y->lay = a->lay;
                y->lay.flat = 1;
            } else {
                y->lay = a->lay;
                y->lay.cols = (uint64_t)y->dims[y->ndim - 1];
                y->lay.rows = (uint64_t)(tpuc_tensor_elems(y) / (int64_t)y->lay.cols);
            }
            if (y->is_output && y->lay.kind != TPUC_LAYOUT_PLAIN) {
                tpuc_err(err, errlen, "node '%s' (%s): the graph output is a flatten of a "
                         "Conv/pool output: not supported", n->name, n->op_type);
                return -1;
            }
            break;
        case TPUC_OP_RELU: case TPUC_OP_SIGMOID: case TPUC_OP_TANH: case TPUC_OP_GELU:
        case TPUC_OP_ERF: case TPUC_OP_GELU_ERF: case TPUC_OP_ADD: case TPUC_OP_BN: case TPUC_OP_IDENTITY: case TPUC_OP_MUL:
        case TPUC_OP_CLIP: case TPUC_OP_SUB: case TPUC_OP_HARDSIGMOID: case TPUC_OP_HARDSWISH:
        case TPUC_OP_SQRT: case TPUC_OP_EXP: case TPUC_OP_DIV:
            rc = emit_eltwise(c, n);
            break;
        case TPUC_OP_REDUCEMEAN: case TPUC_OP_REDUCESUM: case TPUC_OP_REDUCEMAX: rc = emit_reduce(c, n); break;
        case TPUC_OP_LAYERNORM: rc = tpuc_emit_layernorm(c, n); break;
        case TPUC_OP_TRANSPOSE: rc = tpuc_emit_transpose(c, n); break;
        case TPUC_OP_SLICE: rc = tpuc_emit_slice(c, n); break;
        case TPUC_OP_MATMUL2: rc = tpuc_emit_matmul2(c, n); break;
        default:
            tpuc_err(err, errlen, "node '%s' (%s): no lowering", n->name, n->op_type);
            return -1;
        }
        if (rc) {
            if (!err[0]) tpuc_err(err, errlen, "node '%s' (%s): out of memory", n->name, n->op_type);
            return -1;
        }
        if (c->keep_t >= 0 && c->keep_by != n) {
            tpuc_err(err, errlen, "node '%s' (%s): internal: an on-chip output not read by the "
                     "next node", n->name, n->op_type);
            return -1;
        }
        if (p->nlayers && p->layers[p->nlayers - 1].end_insn == 0 &&
            strcmp(p->layers[p->nlayers - 1].node, n->name) == 0) {
            p->layers[p->nlayers - 1].end_insn = c->e.count;
            p->layers[p->nlayers - 1].mxu_rows = c->e.mxu_rows;
        }
        release_dead(c, i);
        if (c->e.count > (hw->predict_only || tpuc_loops_on(hw) ? (size_t)4 << 20 : hw->geom.imem_insns)) {
            /* stop early: it cannot fit (the predictor stops at 4 M instructions; with the
               loop pass, at 4 M straight-line instructions: the rolled size is checked after
               the pass) */
            if (tpuc_loops_on(hw)) {
                tpuc_err(err, errlen, "the straight-line program needs more than %zu "
                         "instructions (the loop pass takes at most 4194304; IMEM holds %u): a "
                         "larger --mxu or a smaller --batch needs fewer", c->e.count,
                         hw->geom.imem_insns);
                return -1;
            }
            tpuc_imem_error(p, hw, c->e.count, i + 1 < g->nn, err, errlen);
            return -1;
        }
    }
    *host_top = c->host_top;
    p->act_bytes = c->host_top - 0x1000;
    if (dry) return 0;
    if (c->host_top > c->img_base) {
        tpuc_err(err, errlen, "internal error: activations (%llu bytes) overlap the constant image",
                 (unsigned long long)c->host_top);
        return -1;
    }
    TRY(tpuc_asm(p, "\n"));
    TRY(tpuc_e_halt(&c->e));
    p->host_bytes = c->img_base + up(p->image_bytes, 4096) + 4096; /* image.npy holds at least one word */
    p->image_base = c->img_base;
    if (tpuc_assemble(p, hw, err, errlen)) return -1;
    p->total_macs = 0;
    for (size_t i = 0; i < p->nlayers; i++) p->total_macs += p->layers[i].macs;
    return 0;
}
