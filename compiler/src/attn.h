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
/* Row-major element strides of a shape. */
void tpuc_attn_strides(const int64_t *d, int nd, int64_t *s);

#endif
