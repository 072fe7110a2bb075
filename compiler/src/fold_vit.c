/* SPDX-License-Identifier: Apache-2.0 */
/* ViT's token rows (torchvision's VisionTransformer, issue 32): x[:, 0], the class token's row
   of the encoder's output [B, L, D], is a Gather of an activation with one constant index on
   axis 1; it becomes TPUC_OP_PICK (sl_start[1] the row), whose output [B, D] is row i of each
   image's L rows, DMA'd (tile_channels.c). The class token's Concat with the patch rows (a
   constant [B, 1, D], Expand folded, and the activation [B, L - 1, D] on axis 1) is the
   activation Concat's (fold.c), lowered by tile_channels.c. */
#include <string.h>

#include "tpuc/tpuc.h"
#include "tpuc_internal.h"
#include "attn.h"

int tpuc_fold_pick(tpuc_graph_t *g, tpuc_node_t *n, char *err, size_t errlen)
{
    const tpuc_tensor_t *x = &g->t[n->in[0]], *ix = &g->t[n->in[1]];
    tpuc_tensor_t *y = &g->t[n->out[0]];
    int64_t ax = tpuc_attr_int(n, "axis", 0);
    for (size_t k = 0; k < n->nattrs; k++)
        if (strcmp(n->attrs[k].name, "axis") != 0) NODE_ERR(n, "attribute '%s' is not supported", n->attrs[k].name);
    if (ax < 0) ax += x->ndim;
    if (ax != 1 || x->ndim < 2)
        NODE_ERR(n, "a Gather of an activation on axis %lld: only one row of axis 1 (x[:, i]) is supported", (long long)tpuc_attr_int(n, "axis", 0));
    if (!ix->i || tpuc_tensor_elems(ix) != 1 || ix->ndim != 0)
        NODE_ERR(n, "a Gather of an activation: only one constant int64 index (a scalar, x[:, i]) is supported");
    int64_t i = ix->i[0] < 0 ? ix->i[0] + x->dims[1] : ix->i[0];
    if (i < 0 || i >= x->dims[1]) NODE_ERR(n, "index %lld out of range 0 .. %lld", (long long)ix->i[0], (long long)x->dims[1] - 1);
    y->ndim = x->ndim - 1;
    y->dims[0] = x->dims[0];
    for (int d = 2; d < x->ndim; d++) y->dims[d - 1] = x->dims[d];
    memset(n->sl_start, 0, sizeof n->sl_start);
    n->sl_start[1] = i;
    n->op = TPUC_OP_PICK;
    n->nin = 1;
    return 0;
}
