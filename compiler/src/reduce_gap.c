/* SPDX-License-Identifier: Apache-2.0 */
/* x.mean([2, 3]) of a Conv/pool output (MNASNet's and ShuffleNetV2's head, torch exports it
   as ReduceMean over axes 2, 3): a reduction cannot read a channels-last tensor (lower.c),
   but this one is GlobalAveragePool's computation exactly: the sum over every pixel of each
   channel in fp32, times fp32(1/(H*W)) in one multiply (docs/compiler.md "Operators"; the
   same bound as ReduceMean's: docs/conformance.md sums in any order). So lower.c makes the
   node a GlobalAveragePool; with keepdims 0 a Reshape to [B, C] (a view of its dense one
   pixel per image) follows. */
#include <stdio.h>
#include <string.h>

#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

/* Whether node n is a ReduceMean over all the spatial axes of a 3-D or 4-D Conv/pool output. */
static int is_spatial_mean(const tpuc_graph_t *g, const tpuc_node_t *n)
{
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    return n->op == TPUC_OP_REDUCEMEAN && a->lay.kind == TPUC_LAYOUT_SPATIAL && !a->lay.flat &&
           (a->ndim == 3 || a->ndim == 4) && n->red_lo == 2 && n->red_hi == a->ndim - 1;
}

/* The Reshape after node ni (keepdims 0): from a new [B, C, 1(, 1)] tensor to node ni's
   output; node ni then writes the new tensor. */
static int add_squeeze(tpuc_graph_t *g, size_t ni)
{
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/pooled", g->n[ni].name);
    int ti = tpuc_add_tensor(g, nm);
    if (ti < 0 || tpuc_insert_node_at(g, ni + 1)) return -1;
    tpuc_node_t *n = &g->n[ni], *r = &g->n[ni + 1];
    const tpuc_tensor_t *a = &g->t[n->in[0]];
    tpuc_tensor_t *p = &g->t[ti];
    p->ndim = a->ndim;
    p->dims[0] = a->dims[0];
    p->dims[1] = a->dims[1];
    for (int d = 2; d < a->ndim; d++) p->dims[d] = 1;
    p->producer = (int)ni;
    p->nuses = 1;
    snprintf(nm, sizeof nm, "%.200s/squeeze", n->name);
    r->name = tpuc_strdup(nm);
    r->op_type = tpuc_strdup("Reshape");
    if (!r->name || !r->op_type) return -1;
    r->op = TPUC_OP_RESHAPE;
    r->version = 14;
    r->nin = 1;
    r->in[0] = ti;
    r->nout = 1;
    r->out[0] = n->out[0];
    g->t[r->out[0]].producer = (int)ni + 1;
    n->out[0] = ti;
    return 0;
}

int tpuc_mean_to_gap(tpuc_graph_t *g, size_t ni, char *err, size_t errlen)
{
    if (!is_spatial_mean(g, &g->n[ni])) return 0;
    int keep = g->t[g->n[ni].out[0]].ndim == g->t[g->n[ni].in[0]].ndim;
    if (!keep && add_squeeze(g, ni)) return tpuc_err(err, errlen, "out of memory"), -1;
    tpuc_node_t *n = &g->n[ni];
    n->op = TPUC_OP_GAP; /* op_type stays "ReduceMean" for messages and the report */
    n->nin = 1;
    return 1;
}
