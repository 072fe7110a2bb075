/* SPDX-License-Identifier: Apache-2.0 */
/* Pad and ConvTranspose: fold (fold_pad.c) and lower/tile (tile_pad.c). Not part of the
   public API. */
#ifndef TPUC_PAD_H
#define TPUC_PAD_H

#include <stdint.h>
#include <stdio.h>

#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

/* fold: node ni, a Pad. 1: it pads nothing (the caller removes it as an identity); 0: its
   output shape set, and either folded into its readers (pre_pad; the node DEAD) or kept for
   tile_pad.c; -1 with a one-line message naming the node and the value refused. */
int tpuc_fold_pad(tpuc_graph_t *g, size_t ni, char *err, size_t errlen);
/* fold: node ni, a ConvTranspose, becomes two: a Pad at ni (the input dilated by the stride and
   padded by k - 1 - p, output_padding at the end) and at ni + 1 a Conv of stride 1 with the
   kernel flipped and its channels swapped. Nodes after ni move up by one. The Pad is kept as
   a node even at stride 1 (training refuses it). 0 or -1 with err. */
int tpuc_fold_convtranspose(tpuc_graph_t *g, size_t ni, char *err, size_t errlen);
/* fold: a Slice (version 10+) of a constant of more than one dimension, any steps: the
   constant sliced. 0, or -1 with err. */
int tpuc_fold_slice_const(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen);
/* pool_attrs: the widths of a Pad folded into node n (0 when none) */
static inline int tpuc_pre_pad(const tpuc_node_t *n, int i) { return n->pre_pad[i]; }

#endif
