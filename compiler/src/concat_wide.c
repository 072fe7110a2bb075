/* SPDX-License-Identifier: Apache-2.0 */
/* A Concat of more inputs than a node holds (TPUC_MAX_IO; DenseNet's dense blocks concatenate
   up to 33 tensors): the reader (onnx_read.c) gives it to tpuc_concat_tree, which writes it as
   a tree of Concats of at most TPUC_MAX_IO inputs each, in order. The concatenation is
   associative, so the result is the same tensor; each inner node's output is copied once
   more by the outer one (docs/compiler.md "Concat"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

/* A copy of node `src`'s axis attribute (the only one Concat has) for a new inner node. */
static int copy_axis(const tpuc_node_t *src, tpuc_node_t *d)
{
    const tpuc_attr_t *ax = tpuc_attr(src, "axis");
    d->attrs = calloc(2, sizeof *d->attrs);
    if (!d->attrs) return -1;
    if (!ax) return 0;
    d->attrs[0] = *ax;
    d->attrs[0].name = tpuc_strdup(ax->name);
    d->attrs[0].s = NULL;
    d->attrs[0].ints = NULL;
    d->attrs[0].floats = NULL;
    d->attrs[0].nints = d->attrs[0].nfloats = 0;
    d->nattrs = 1;
    return d->attrs[0].name ? 0 : -1;
}

/* Appends an inner Concat of ins[0..k) with output "<name>/part<idx>"; its output tensor. */
static int inner_concat(tpuc_graph_t *g, int ni, const int *ins, int k, int idx)
{
    char nm[300];
    snprintf(nm, sizeof nm, "%.200s/part%d", g->n[ni].name, idx);
    int ti = tpuc_add_tensor(g, nm);
    if (ti < 0) return -1;
    int mi = tpuc_add_node(g);
    if (mi < 0) return -1;
    tpuc_node_t *m = &g->n[mi], *n = &g->n[ni];
    m->name = tpuc_strdup(nm);
    m->op_type = tpuc_strdup(n->op_type);
    m->op = n->op;
    m->version = n->version;
    if (!m->name || !m->op_type || copy_axis(n, m)) return -1;
    m->nin = k;
    for (int i = 0; i < k; i++) m->in[i] = ins[i];
    m->nout = 1;
    m->out[0] = ti;
    g->t[ti].producer = mi;
    g->t[ti].nuses = 1;
    return ti;
}

int tpuc_concat_tree(tpuc_graph_t *g, int ni, const int *ins, size_t nins, char *err,
                     size_t errlen)
{
    int *cur = malloc((nins + 1) * sizeof *cur);
    if (!cur) return tpuc_err(err, errlen, "out of memory"), -1;
    memcpy(cur, ins, nins * sizeof *cur);
    size_t ncur = nins;
    int part = 0;
    /* each level: groups of TPUC_MAX_IO consecutive inputs become one inner Concat */
    while (ncur > TPUC_MAX_IO) {
        size_t nn = 0;
        for (size_t i = 0; i < ncur; i += TPUC_MAX_IO) {
            int k = (int)(ncur - i < TPUC_MAX_IO ? ncur - i : TPUC_MAX_IO);
            if (k == 1) { cur[nn++] = cur[i]; continue; }
            int ti = inner_concat(g, ni, cur + i, k, part++);
            if (ti < 0) { free(cur); return tpuc_err(err, errlen, "out of memory"), -1; }
            cur[nn++] = ti;
        }
        ncur = nn;
    }
    /* the original node (its name, attributes, output) reads the top level and moves after
       the inner nodes it reads (nodes stay in topological order) */
    tpuc_node_t top = g->n[ni];
    top.nin = (int)ncur;
    for (size_t i = 0; i < ncur; i++) top.in[i] = cur[i];
    free(cur);
    size_t last = g->nn - 1;
    memmove(&g->n[ni], &g->n[ni + 1], (last - (size_t)ni) * sizeof g->n[0]);
    g->n[last] = top;
    for (size_t j = (size_t)ni; j <= last; j++)
        for (int k = 0; k < g->n[j].nout; k++)
            if (g->n[j].out[k] >= 0) g->t[g->n[j].out[k]].producer = (int)j;
    return 0;
}
