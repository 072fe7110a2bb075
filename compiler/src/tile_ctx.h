/* SPDX-License-Identifier: Apache-2.0 */
/* The tiling pass's context, shared by tile.c and tile_norm.c (not part of the public API). */
#ifndef TPUC_TILE_CTX_H
#define TPUC_TILE_CTX_H

#include <stdint.h>
#include <stdio.h>

#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

#define BF16_NEG_ZERO 0x8000u
#define BF16_NEG_INF 0xFF80u

enum { UB = 0, ACC = 1, WMEM = 2 };
enum { V_ADD = 0, V_SUB, V_MUL, V_MAX, V_MIN, V_CVT, V_RELU, V_EXP, V_TANH, V_SIGMOID, V_GELU,
       V_RECIP, V_LOG, V_RSQRT, V_ERF };

/* An activation buffer in host memory. A buffer whose last reader has been emitted is free
   and is handed to the next request of the same geometry and size (see host_alloc). */
typedef struct {
    tpuc_layout_t key;   /* the layout it was allocated for (addr: its address) */
    uint64_t bytes;
    int clean;           /* pads and slack never written (spatial_clean): +0 or the fill */
    int pinned;          /* the graph input or an output: never freed */
    int free;
} hbuf_t;

/* One weight stream (run_mm): a layer's weight tiles through WMEM, as the dry pass recorded
   it for the final one (docs/compiler.md "One weight stream") */
typedef struct {
    unsigned T, U, G;   /* K-chunks, N-tiles, tiles per group */
    int resident;       /* every tile stays in WMEM */
    uint64_t nout;      /* output columns */
    uint64_t gap;       /* lw, matmul or WMEM DMAs of other code since the previous stream */
} wrec_t;

typedef struct {
    wrec_t *rec;
    size_t n, cap;
    uint64_t wbytes;    /* the weight tiles' bytes: the image's first bytes in the final pass */
    int ok;             /* recorded by a complete dry pass */
} wplan_t;

typedef struct {
    tpuc_graph_t *g;
    const tpuc_hw_t *hw;
    tpuc_prog_t *p;
    tpuc_ectx_t e;
    unsigned n;
    uint64_t host_top;    /* next free activation byte */
    uint64_t img_base;    /* where the constant image is loaded */
    uint64_t wstep;       /* weight tiles loaded so far (WMEM slot round robin) */
    unsigned slots;       /* WMEM tiles */
    char *err;
    size_t errlen;
    const tpuc_node_t *node;
    /* a Gemm's output kept in UB for the next Gemm (keep_next): the tensor, its UB rows */
    int keep_t;
    const tpuc_node_t *keep_by;
    uint64_t keep_row;
    /* host buffers of activations (host_alloc), reused once their tensors are dead */
    hbuf_t *bufs;
    size_t nbufs, capbufs;
    int clean_req;        /* host_alloc is called by spatial_clean */
    int reused;           /* the last host_alloc reused a freed buffer */
    /* weight streams: dry pass: recorded into plan; final pass: read from it */
    wplan_t *plan;
    int dry;
    size_t iw;            /* streams so far */
    uint64_t wops_end;    /* e.wops when the last stream ended */
    uint64_t wcur;        /* final pass: the next weight tile's image offset */
    int wpre;             /* the next stream's first groups and lw were issued by the last one */
    uint64_t wq;          /* then: the WMEM ring position of its group 0 */
    int64_t wpre_off;     /* then: the image offset of its first tile */
    uint64_t wpre_wops;   /* then: e.wops after them */
} ctx_t;

#define CERR(c, ...)                                                                         \
    do {                                                                                     \
        char m_[400];                                                                        \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                \
        tpuc_err((c)->err, (c)->errlen, "node '%s' (%s): %s", (c)->node->name,               \
                 (c)->node->op_type, m_);                                                    \
        return -1;                                                                           \
    } while (0)
#define TRY(x)                                                                               \
    do {                                                                                     \
        if ((x) < 0) {                                                                       \
            if (!c->err[0]) tpuc_err(c->err, c->errlen, "out of memory");                    \
            return -1;                                                                       \
        }                                                                                    \
    } while (0)

/* tile.c's helpers (layer records, host buffers, the constant image) */
int tpuc_tl_layer_begin(ctx_t *c, const tpuc_node_t *n, const char *consts);
void tpuc_tl_hw_mark(ctx_t *c, uint64_t ub, uint64_t acc, uint64_t wm);
int tpuc_tl_host_alloc(ctx_t *c, tpuc_layout_t *l);
/* a clean SPATIAL buffer for y with the padding its readers need */
int tpuc_tl_alloc_clean(ctx_t *c, tpuc_tensor_t *y);
int64_t tpuc_tl_img_alloc(ctx_t *c, uint64_t bytes);
int64_t tpuc_tl_img_rows_f32(ctx_t *c, const float *v, uint64_t count, uint64_t rows);
uint64_t tpuc_tl_img_addr(const ctx_t *c, int64_t off);

int tpuc_tl_emit_act(ctx_t *c, int act, unsigned mem, uint64_t row, unsigned dmem, uint64_t drow,
                     uint64_t rows, uint64_t clip_row);
int tpuc_tl_load_clip(ctx_t *c, const tpuc_node_t *n, uint64_t at);

/* tile_norm.c: Add / Sub / Mul / Div of a row-major [.., F] and [.., 1] (col_first: the column
   is the first input), the column broadcast over the row on the MXU */
int tpuc_emit_bcast_col(ctx_t *c, const tpuc_node_t *n, const tpuc_tensor_t *big,
                        const tpuc_tensor_t *col, int col_first);
/* tile_norm.c: reductions and Softmax over axes that are not the row (a sum over rows), and
   LayerNorm (the row sums on the MXU) */
int tpuc_emit_reduce_rows(ctx_t *c, const tpuc_node_t *n);
int tpuc_emit_softmax_rows(ctx_t *c, const tpuc_node_t *n);
int tpuc_emit_layernorm(ctx_t *c, const tpuc_node_t *n);

/* tile_attn.c: Transpose and Slice of activations (row copies by DMA, or through the MXU's
   transposed load when the last axis moves) and MatMul of two activations */
int tpuc_emit_transpose(ctx_t *c, const tpuc_node_t *n);
int tpuc_emit_slice(ctx_t *c, const tpuc_node_t *n);
int tpuc_emit_matmul2(ctx_t *c, const tpuc_node_t *n);

/* tile_pad.c: a Pad of the spatial axes (and a ConvTranspose's dilated input): the output's
   rows written with the constant, the input's pixels copied into their places by DMA */
int tpuc_emit_pad(ctx_t *c, const tpuc_node_t *n);

/* tile_channels.c: a channel shuffle or a Slice of the channels of a Conv/pool output
   (channels.c): runs of channels DMA'd through UB */
int tpuc_emit_channels(ctx_t *c, const tpuc_node_t *n);
/* tile_channels.c: a Conv/pool output's pixels as the rows of a row-major [B, H, W, C], or
   such rows into a Conv/pool layout (ConvNeXt's permutes) */
int tpuc_emit_relayout(ctx_t *c, const tpuc_node_t *n);
/* tile_channels.c: ViT's token rows: x[:, i] (TPUC_OP_PICK) and a Concat on axis 1 of
   row-major [B, L_k, D] tensors, constants among them */
int tpuc_emit_pick(ctx_t *c, const tpuc_node_t *n);
int tpuc_emit_concat_rows(ctx_t *c, const tpuc_node_t *n);

#endif
