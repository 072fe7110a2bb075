/* SPDX-License-Identifier: Apache-2.0 */
/* Attention's operators on activations: fold (fold_attn.c) and lower/tile (tile_attn.c).
   Not part of the public API. */
#ifndef TPUC_ATTN_H
#define TPUC_ATTN_H

#include <stdint.h>
#include <stdio.h>

#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

/* fold: shapes (and constants folded); 0, or -1 with a one-line message naming the node */
int tpuc_fold_transpose(tpuc_graph_t *g, tpuc_node_t *n, const tpuc_hw_t *hw, char *err,
                        size_t errlen);
int tpuc_fold_slice(tpuc_graph_t *g, tpuc_node_t *n, const tpuc_hw_t *hw, char *err,
                    size_t errlen);
int tpuc_fold_matmul2(tpuc_graph_t *g, tpuc_node_t *n, const tpuc_hw_t *hw, char *err,
                      size_t errlen);
/* Add, Sub, Mul, Div of two constants (shape arithmetic), folded; the node becomes DEAD */
int tpuc_fold_const_arith(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen);
/* Attention masks (fold_mask.c): ConstantOfShape, Expand, Equal, Or, Where, Trilu and a Cast to
   bool. tpuc_fold_mask folds the node into a constant (it becomes DEAD) or makes
   Where(mask, -inf, x) the Add of x and an additive mask (g->t may move); 0 or -1 with err */
int tpuc_is_mask_op(const tpuc_node_t *n);
int tpuc_fold_mask(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen);
/* Add, Sub, Mul, Div of two constants of shapes that broadcast (NumPy's), folded; DEAD */
int tpuc_fold_const_bcast(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen);
/* lower: every activation input row-major (not a Conv/pool output); 0 or -1 with err */
int tpuc_lower_attn(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen);
/* channels.c, on a Conv/pool output (lower.c): torch's channel_shuffle (Reshape node ni to
   [B, g, C/g, H, W], Transpose [0, 2, 1, 3, 4], Reshape back) becomes one TPUC_OP_CHANNELS
   node (the last Reshape's; the other two dead), and a Slice of the channels only one such
   node. 1 rewritten, 0 not the pattern. */
int tpuc_lower_shuffle(tpuc_graph_t *g, size_t ni);
int tpuc_lower_chslice(tpuc_graph_t *g, tpuc_node_t *n);
/* channels.c: Transpose [0, 2, 3, 1] of a Conv/pool output (TPUC_OP_TOROWS, row-major
   output) or [0, 3, 1, 2] of a row-major 4-D tensor (TPUC_OP_TOPIXELS, a Conv/pool layout);
   the output's layout kind set. 1 rewritten, 0 not that case. */
int tpuc_lower_relayout(tpuc_graph_t *g, tpuc_node_t *n);
/* fold_vit.c: Gather node n of an activation with one constant index on axis 1 (ViT's
   x[:, 0]) becomes TPUC_OP_PICK, its output shape set; -1 with err otherwise. */
int tpuc_fold_pick(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen);
/* channels.c: Reshape node ni of a Conv/pool output [B, C, H, W] to [B, C, H W] read only by
   a Transpose [0, 2, 1] (ViT's patch rows): the Transpose becomes TPUC_OP_TOROWS of the Conv
   output, the Reshape dead. 1 rewritten, 0 not that case. */
int tpuc_lower_patch_rows(tpuc_graph_t *g, size_t ni);
/* fold_range.c: Range, ScatterND or Not node n of constants folded (it becomes DEAD); -1 with
   err when an input is computed at run time or is not valid. */
int tpuc_fold_range(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen);
/* fold_range.c: a Concat of constants of more than one dimension (ScatterND's indices), any
   axis, folded (it becomes DEAD); -1 with err */
int tpuc_fold_concat_const(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen);
/* fold_range.c: *o = x op v in int64 (Add, Sub, Mul; Div truncating, Mod C's remainder);
   -1 when it overflows or divides by zero (shape arithmetic of an untrusted file) */
int tpuc_i64_arith(tpuc_op_t op, int64_t x, int64_t v, int64_t *o);
/* fold_einsum.c: Einsum node ni rewritten as Transposes and a MatMul at ni.. (the node at ni
   is the first of them), or one Transpose; -1 with err naming an unsupported equation. */
int tpuc_fold_einsum(tpuc_graph_t *g, size_t ni, char *err, size_t errlen);
/* fold_einsum.c: inserts Transpose node `at` (named base/what) of tensor `in` by perm (rank
   r) into tensor `out`, or a new tensor when out < 0; the output's index, or -1 when out of
   memory. Fold gives it its shape when it reaches it. */
int tpuc_add_transpose(tpuc_graph_t *g, size_t at, int in, int out, const int *perm, int r,
                       const char *base, const char *what);
/* fold_swin.c: Pad node ni of a row-major [B, H, W, C] (constant mode) padding only H and W
   (Swin's window padding) becomes Transpose [0, 3, 1, 2], the Pad of [B, C, H, W]'s spatial
   axes, Transpose [0, 2, 3, 1] (nodes ni..ni+2). 1 rewritten, 0 not that case, -1 err. */
int tpuc_fold_pad_rows(tpuc_graph_t *g, size_t ni, char *err, size_t errlen);
/* fold_swin.c: Gather node ni of one constant index on axis 0 of a Transpose's output whose
   axis 0 is the source's axis a (Swin's q, k, v = qkv[0], qkv[1], qkv[2]) becomes a Slice of
   the source on a, a Reshape dropping a and a Transpose of the rest (nodes ni..ni+3, the
   Gather dead); the Transpose is dead once no Gather reads it. 1 rewritten, 0 not that
   case, -1 err. */
int tpuc_fold_gather0(tpuc_graph_t *g, size_t ni, char *err, size_t errlen);
/* fold_swin.c: Pow node n of a float constant base and a constant exponent (Swin's
   head_dim ** -0.5) folded in double, rounded to fp32 (it becomes DEAD); -1 with err */
int tpuc_fold_pow_const(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen);
/* fold_swin.c: Slice node ni of an activation with steps k > 1 on middle axes whose length
   k divides (Swin's patch merging x[:, 0::2, 1::2, :]) becomes a Reshape splitting each such
   axis into (L / k, k), the Slice with steps 1 of that view (one element of each k) and a
   Reshape to the output (nodes ni..ni+2). 1 rewritten, 0 not that case, -1 err. */
int tpuc_fold_slice_steps(tpuc_graph_t *g, size_t ni, char *err, size_t errlen);
/* window.c: Reshape node ni of a Conv output to [B, C, h, p, w, p'] read by a Transpose
   (MaxViT's window partition), or of such a Transpose's output back to [B, C, H, W] read as
   a Conv layout: rewritten as row moves of the pixels as rows (nodes inserted after ni).
   1 rewritten, 0 not that case, -1 out of memory (err set). */
int tpuc_lower_window(tpuc_graph_t *g, size_t ni, char *err, size_t errlen);
/* window.c: Concat node ni of row-major 4-D tensors along axis 1 or 2 (Swin's torch.roll of
   [B, H, W, C]) becomes views [P, d, Q] of its inputs (Reshapes inserted at ni..), a Concat
   of their rows on axis 1, a view back; along axis 3 (Swin's patch merging) views [P, C]
   and the Concat of their features. 1 rewritten (node ni is the first view), 0 not the
   case, -1 with err (a Concat of Conv/pool outputs along another axis than the channels). */
int tpuc_lower_concat_rows(tpuc_graph_t *g, size_t ni, char *err, size_t errlen);
/* Row-major element strides of a shape. */
void tpuc_attn_strides(const int64_t *d, int nd, int64_t *s);

#endif
