/* SPDX-License-Identifier: Apache-2.0 */
/* Unit test of the compiler's loop pass (compiler/src/loops.c, docs/compiler.md "Loops"):
   random straight-line streams with planted affine loop nests (up to 6 levels, strides per
   level on every address operand, many distinct stride vectors for register pressure),
   between random filler instructions and random cuts, are rolled and expanded again with the
   sequencer's functions; the expansion must be the stream, instruction for instruction, and
   every cut respected. Planted nests must shrink the program; streams with nothing to roll
   (random fields) must round-trip. Tags (a training step's phase and layer per instruction):
   every dynamic instance of a rolled pc has the tag of the instruction the pc stands for, and
   the same streams rolled without tags break that (the check has teeth). WMEM rings whose
   wrap point moves from unit to unit roll to a few instructions with the ring's modulus.
   A model's repeated blocks (layers between soft cuts) roll into one loop whose layers share
   the index registers.
   usage: loops_test [SEEDS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/isa.h"
#include "tpuc_internal.h"

static uint64_t rs;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 11);
}
static uint32_t rr(uint32_t lo, uint32_t hi) { return lo + rnd() % (hi - lo + 1); }

typedef struct { tpu_insn_t *v; size_t n, cap; } buf_t;
static void push(buf_t *b, tpu_insn_t w)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        b->v = realloc(b->v, b->cap * sizeof *b->v);
        if (!b->v) { fprintf(stderr, "out of memory\n"); exit(2); }
    }
    b->v[b->n++] = w;
}

/* a template instruction: opcode and fixed fields, its address slots' bases */
typedef struct {
    tpu_dinsn_t d;
    int nslot;
    unsigned slot[3];            /* xsel index of each address slot */
    int64_t base[3];
    int32_t str[3][TPU_LOOP_LEVELS]; /* stride per level of the nest */
    int afirst;                  /* a planted matmul: 1 + L, it overwrites exactly when the
                                    indices of levels L .. depth-1 are 0 (the loop pass must
                                    find acc_mode=first:lL); 0: its flag as drawn */
} tmpl_t;

static void set_slot(tpu_dinsn_t *d, unsigned k, uint32_t v)
{
    switch (d->opcode) {
    case TPU_OP_DMA_IN: case TPU_OP_DMA_OUT: if (k == 0) d->addr = v; else d->row = v; break;
    case TPU_OP_LW: d->w_row = v; break;
    case TPU_OP_MATMUL: if (k == 0) d->ub_row = v; else d->acc_row = v; break;
    case TPU_OP_VOP: if (k == 0) d->a_row = v; else if (k == 1) d->b_row = v; else d->d_row = v; break;
    default: if (k == 0) d->src_row = v; else d->dst_row = v; break;
    }
}

/* a random instruction template; its rows are bases in 20000..40000 (room for strides) */
static void rand_tmpl(tmpl_t *t, int fixed_only)
{
    memset(t, 0, sizeof *t);
    tpu_dinsn_t *d = &t->d;
    switch (rr(0, 6)) {
    case 0: case 1:
        d->opcode = rr(0, 1) ? TPU_OP_DMA_IN : TPU_OP_DMA_OUT;
        d->mem = rr(0, 1);
        d->n = rr(1, 64);
        d->cols = rr(1, 16);
        d->stride = rr(1, 64) * 4;
        t->nslot = 2; t->slot[0] = 0; t->slot[1] = 1;
        t->base[0] = rnd() & ~3u;
        t->base[1] = rr(20000, 40000);
        break;
    case 2:
        d->opcode = TPU_OP_LW;
        d->transpose = rr(0, 1);
        t->nslot = 1; t->slot[0] = 0; t->base[0] = rr(20000, 40000);
        break;
    case 3: case 4:
        d->opcode = TPU_OP_MATMUL;
        d->n = rr(1, 64);
        d->accumulate = rr(0, 1);
        t->nslot = 2; t->slot[0] = 0; t->slot[1] = 1;
        t->base[0] = rr(20000, 40000); t->base[1] = rr(20000, 40000);
        break;
    case 5:
        d->opcode = TPU_OP_VOP;
        d->vop = rr(0, 6);
        d->n = rr(1, 16);
        d->a_mem = rr(0, 1); d->d_mem = rr(0, 1);
        t->nslot = 0;
        t->slot[t->nslot] = 0; t->base[t->nslot++] = rr(20000, 40000);
        if (tpu_vop_is_binary(d->vop)) {
            d->b_mem = rr(0, 1);
            d->bcast = rr(0, 1);
            t->slot[t->nslot] = 1; t->base[t->nslot++] = rr(20000, 40000);
        }
        t->slot[t->nslot] = 2; t->base[t->nslot++] = rr(20000, 40000);
        break;
    default:
        d->opcode = TPU_OP_VRED;
        d->red = rr(1, 3);
        d->n = rr(1, 8);
        d->length = rr(1, 64);
        d->chunk_stride = rr(0, 4);
        d->row_stride = rr(0, 4);
        t->nslot = 2; t->slot[0] = 0; t->slot[1] = 1;
        t->base[0] = rr(20000, 40000); t->base[1] = rr(20000, 40000);
        break;
    }
    (void)fixed_only;
}

static tpu_insn_t inst(const tmpl_t *t, const unsigned *idx, unsigned depth)
{
    tpu_dinsn_t d = t->d;
    if (t->afirst) {
        d.accumulate = 0;
        for (unsigned l = (unsigned)t->afirst - 1; l < depth; l++) d.accumulate |= idx[l] != 0;
    }
    for (int s = 0; s < t->nslot; s++) {
        int64_t v = t->base[s];
        for (unsigned l = 0; l < depth; l++) v += (int64_t)idx[l] * t->str[s][l];
        set_slot(&d, t->slot[s], (uint32_t)v);
    }
    return tpu_insn_encode(&d);
}

/* a planted nest: depth levels, counts, a body of k templates per level (innermost holds the
   instructions; outer levels hold a prefix instruction and the inner level) */
static size_t plant(buf_t *b, unsigned depth, int pressure)
{
    unsigned cnt[TPU_LOOP_LEVELS];
    tmpl_t body[8], pre[TPU_LOOP_LEVELS];
    unsigned nb = rr(1, 4);
    for (unsigned l = 0; l < depth; l++) cnt[l] = depth > 4 ? rr(2, 3) : rr(2, 5);
    int32_t pool[3][TPU_LOOP_LEVELS];
    for (int q = 0; q < 3; q++)
        for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++) pool[q][l] = (int32_t)rr(0, 60) - 30;
    for (unsigned j = 0; j < nb; j++) {
        rand_tmpl(&body[j], 0);
        if (body[j].d.opcode == TPU_OP_MATMUL && rr(0, 1))
            body[j].afirst = (int)rr(1, depth);
        for (int s = 0; s < body[j].nslot; s++) {
            /* shared vectors (one of three for the slot) or, under pressure, each its own */
            unsigned q = rr(0, 2);
            for (unsigned l = 0; l < depth; l++)
                body[j].str[s][l] = pressure ? (int32_t)rr(0, 60) - 30 : pool[q][l];
        }
    }
    for (unsigned l = 0; l < depth; l++) {
        rand_tmpl(&pre[l], 0);
        for (int s = 0; s < pre[l].nslot; s++)
            for (unsigned m = 0; m < l; m++) pre[l].str[s][m] = pool[0][m];
    }
    unsigned idx[TPU_LOOP_LEVELS] = {0};
    int haspre[TPU_LOOP_LEVELS];
    for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++) haspre[l] = rr(0, 1);
    /* odometer over the levels; a level's prefix instruction before its inner level */
    for (;;) {
        for (unsigned l = 0; l < depth; l++) {
            int first_inner = 1;
            for (unsigned m = l; m < depth; m++) first_inner &= idx[m] == 0;
            if (l > 0 && first_inner && haspre[l]) push(b, inst(&pre[l], idx, l));
        }
        for (unsigned j = 0; j < nb; j++) push(b, inst(&body[j], idx, depth));
        unsigned l = depth;
        while (l-- > 0) {
            if (++idx[l] < cnt[l]) break;
            idx[l] = 0;
        }
        if (l == (unsigned)-1) break;
    }
    return nb + 2 * depth + 1;
}

static int check(const buf_t *b, const uint8_t *cut, size_t *nout_ret, const char *what, unsigned seed)
{
    tpu_insn_t *out = NULL;
    size_t nout = 0, *orig = NULL;
    char err[512] = "";
    if (tpuc_loops(b->v, b->n, cut, NULL, 0, &out, &nout, &orig, err, sizeof err) ||
        tpuc_loops_expand_check(out, nout, NULL, 0, b->v, b->n, NULL, err, sizeof err)) {
        fprintf(stderr, "FAIL: %s seed %u: %s\n", what, seed, err);
        free(out); free(orig);
        return 1;
    }
    /* no nest across a cut: the pcs that stand for cut instructions start fresh (orig equal
       to the cut), and orig ascends */
    for (size_t pc = 1; pc < nout; pc++)
        if (orig[pc] < orig[pc - 1]) {
            fprintf(stderr, "FAIL: %s seed %u: orig not ascending at pc %zu\n", what, seed, pc);
            free(out); free(orig);
            return 1;
        }
    if (cut) {
        /* every loop's body lies between two hard cuts (a soft one, 4, may be crossed) */
        for (size_t pc = 0; pc < nout; pc++) {
            tpu_dinsn_t d;
            tpu_insn_decode(out[pc], &d);
            if (d.opcode != TPU_OP_LOOP) continue;
            size_t first = pc + d.skip, last = first + d.body - 1;
            size_t lo = orig[first], hi = last + 1 < nout ? orig[last + 1] : b->n;
            for (size_t i = lo + 1; i < hi; i++)
                if (cut[i] && cut[i] != 4 && !(i >= orig[last] && i <= orig[last])) {
                    /* a cut strictly inside the straight-line range of the body's first
                       iteration .. the body's end */
                    if (i <= orig[last]) {
                        fprintf(stderr, "FAIL: %s seed %u: the loop at pc %zu spans cut %zu\n", what, seed, pc, i);
                        free(out); free(orig);
                        return 1;
                    }
                }
        }
    }
    *nout_ret = nout;
    free(out);
    free(orig);
    return 0;
}

/* Rolls b with tags (or, roll_tags 0, without) and counts the dynamic instructions whose tag
   differs from that of the straight-line instruction their pc stands for (orig[pc]); -1 when
   the pass fails. */
static long tag_mismatches(const buf_t *b, const uint16_t *tag, int roll_tags)
{
    tpu_insn_t *out = NULL;
    size_t nout = 0, *orig = NULL;
    char err[512] = "";
    if (tpuc_loops(b->v, b->n, NULL, roll_tags ? tag : NULL, 0, &out, &nout, &orig, err, sizeof err)) {
        fprintf(stderr, "FAIL: tags: %s\n", err);
        return -1;
    }
    long bad = 0;
    size_t k = 0;
    tpu_seq_t s;
    tpu_seq_reset(&s);
    for (uint32_t pc = 0; pc < nout && k < b->n;) {
        tpu_dinsn_t d;
        tpu_insn_decode(out[pc], &d);
        if (d.opcode != TPU_OP_LOOP && d.opcode != TPU_OP_STRIDE) {
            if (tag[k] != tag[orig[pc]]) bad++;
            k++;
        }
        pc = tpu_seq_step(&s, &d, pc);
    }
    free(out);
    free(orig);
    return k == b->n ? bad : -1;
}

/* A WMEM ring as the lowering writes it: U units of T tiles, each tile DMA'd into the next of
   S slots of N rows round-robin (the wrap point moves from unit to unit when S does not divide
   T), `lw` from it and a matmul whose UB row is affine. Rolled with the ring's modulus
   (wmodk = log2(S N)) it must expand to the stream and be far shorter than without (*with,
   *without: the two sizes). 0, or 1 on a failure. */
static int ring_case(unsigned seed, size_t *with, size_t *without)
{
    const unsigned N = 1u << rr(2, 5), S = 1u << rr(1, 3), U = rr(3, 20), T = rr(2, 13);
    unsigned k = 0;
    while ((1u << k) < S * N) k++;
    buf_t b = {0, 0, 0};
    tpu_dinsn_t d;
    for (unsigned u = 0, slot = 0; u < U; u++)
        for (unsigned t = 0; t < T; t++, slot = (slot + 1) % S) {
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_DMA_IN; d.mem = TPU_MEM_WMEM; d.row = slot * N; d.n = N; d.cols = N;
            d.addr = 0x10000u + 64u * (u * T + t); d.stride = 4;
            push(&b, tpu_insn_encode(&d));
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_LW; d.w_row = slot * N;
            push(&b, tpu_insn_encode(&d));
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_MATMUL; d.ub_row = 100 + 8 * t; d.acc_row = 16 * u; d.n = 8;
            d.accumulate = t > 0;
            push(&b, tpu_insn_encode(&d));
        }
    memset(&d, 0, sizeof d);
    d.opcode = TPU_OP_HALT;
    push(&b, tpu_insn_encode(&d));
    int fail = 0;
    for (int m = 0; m < 2; m++) {
        tpu_insn_t *out = NULL;
        size_t nout = 0, *orig = NULL;
        char err[512] = "";
        if (tpuc_loops(b.v, b.n, NULL, NULL, m ? 0 : k, &out, &nout, &orig, err, sizeof err) ||
            tpuc_loops_expand_check(out, nout, NULL, 0, b.v, b.n, NULL, err, sizeof err)) {
            fprintf(stderr, "FAIL: ring seed %u (N %u, S %u, U %u, T %u, mod %d): %s\n", seed, N,
                    S, U, T, !m, err);
            fail = 1;
        }
        *(m ? without : with) = nout;
        free(out);
        free(orig);
    }
    free(b.v);
    /* with the modulus: a nest of units x tiles, a few strides (the greedy pass may split it) */
    if (!fail && *with > 40) {
        fprintf(stderr, "FAIL: ring seed %u (N %u, S %u, U %u, T %u): %zu instructions rolled "
                "with the modulus (without: %zu)\n", seed, N, S, U, T, *with, *without);
        fail = 1;
    }
    return fail;
}

/* A model's repeated blocks as the lowering writes them: B blocks of L layers (soft cuts
   between layers), each layer a two-level nest whose address slots all advance differently
   (about six index registers a layer, more than 15 for the block), every slot also advancing
   by a constant from one block to the next. The loop over the blocks holds only when its
   layers share registers (a `stride` in the body re-sets the inner levels before each layer):
   rolled, the program must expand to the stream and be about one block long, while with hard
   cuts between the blocks it is B blocks long (*soft, *hard: the two sizes). 0 or 1. */
static int blocks_case(unsigned seed, size_t *soft, size_t *hard)
{
    const unsigned B = rr(3, 6), L = rr(3, 4);
    /* the block strides: two, as weights and activations advance in a model */
    const int32_t bs[2] = {(int32_t)rr(1, 40), (int32_t)rr(41, 80)};
    tmpl_t lay[4][3];
    unsigned cnt[4][2], nb[4];
    for (unsigned l = 0; l < L; l++) {
        nb[l] = 2;
        cnt[l][0] = rr(2, 4);
        cnt[l][1] = rr(2, 4);
        for (unsigned j = 0; j < nb[l]; j++) {
            tmpl_t *t = &lay[l][j];
            do rand_tmpl(t, 0); while (t->nslot == 0);
            for (int q = 0; q < t->nslot; q++) {
                t->str[q][0] = bs[rr(0, 1)];                /* the block */
                t->str[q][1] = (int32_t)rr(1, 60) - 30;     /* the layer's two levels */
                t->str[q][2] = (int32_t)rr(1, 60) - 30;
            }
        }
    }
    buf_t b = {0, 0, 0};
    uint8_t *cut = calloc((size_t)B * L * 64 + 2, 1);
    if (!cut) return 1;
    for (unsigned k = 0; k < B; k++)
        for (unsigned l = 0; l < L; l++) {
            cut[b.n] = 4;
            for (unsigned i0 = 0; i0 < cnt[l][0]; i0++)
                for (unsigned i1 = 0; i1 < cnt[l][1]; i1++)
                    for (unsigned j = 0; j < nb[l]; j++) {
                        const unsigned idx[3] = {k, i0, i1};
                        push(&b, inst(&lay[l][j], idx, 3));
                    }
        }
    cut[0] = 0;
    const size_t blen = b.n / B;
    cut[b.n] = 4; /* the halt a part of its own */
    tpu_dinsn_t h;
    memset(&h, 0, sizeof h);
    h.opcode = TPU_OP_HALT;
    push(&b, tpu_insn_encode(&h));
    int fail = check(&b, cut, soft, "blocks", seed);
    for (size_t i = 1; i < b.n; i++)
        if (cut[i] == 4 && i % blen == 0) cut[i] = 1; /* blocks apart */
    fail |= check(&b, cut, hard, "blocks, hard cuts", seed);
    if (getenv("BLKDBG")) fprintf(stderr, "blocks seed %u B %u L %u: %zu / %zu\n", seed, B, L, *soft, *hard);
    if (!fail && *soft > *hard / B + 8 * (size_t)L + 8) {
        fprintf(stderr, "FAIL: blocks seed %u (B %u, L %u): %zu instructions rolled, %zu with the "
                "blocks apart: no loop over the blocks\n", seed, B, L, *soft, *hard);
        fail = 1;
    }
    free(cut);
    free(b.v);
    return fail;
}

int main(int argc, char **argv)
{
    unsigned seeds = argc > 1 ? (unsigned)atoi(argv[1]) : 300;
    int fails = 0;
    size_t planted_in = 0, planted_out = 0, soft_in = 0, soft_out = 0;
    unsigned tag_teeth = 0; /* seeds whose stream rolled without tags mixes tags in a pc */
    for (unsigned seed = 1; seed <= seeds; seed++) {
        rs = 0x9E3779B97F4A7C15ull * seed + 1;
        buf_t b = {0, 0, 0};
        int pressure = seed % 5 == 0;
        unsigned nests = rr(1, 6);
        size_t bound = 1;
        for (unsigned q = 0; q < nests; q++) {
            unsigned f = rr(0, 4);
            for (unsigned i = 0; i < f; i++) {
                tmpl_t t;
                rand_tmpl(&t, 0);
                unsigned z[TPU_LOOP_LEVELS] = {0};
                push(&b, inst(&t, z, 0));
            }
            bound += f + plant(&b, rr(1, TPU_LOOP_LEVELS), pressure) + 2 * 7;
        }
        tpu_dinsn_t h;
        memset(&h, 0, sizeof h);
        h.opcode = TPU_OP_HALT;
        push(&b, tpu_insn_encode(&h));
        uint8_t *cut = calloc(b.n + 1, 1);
        if (!cut) return 2;
        if (seed % 3 == 0)
            for (unsigned k = 0; k < 3; k++) cut[rr(1, (uint32_t)b.n)] = 1;
        size_t nout = 0;
        fails += check(&b, seed % 3 == 0 ? cut : NULL, &nout, "planted", seed);
        if (seed % 4 == 2) {
            /* tags in runs of a few instructions, as a training step's phases alternate */
            uint16_t *tag = malloc(b.n * sizeof *tag);
            if (!tag) return 2;
            for (size_t i = 0, run = 0, t = 0; i < b.n; i++, run--) {
                if (run == 0) { run = rr(1, 12); t = rr(0, 2); }
                tag[i] = (uint16_t)t;
            }
            long with = tag_mismatches(&b, tag, 1), without = tag_mismatches(&b, tag, 0);
            if (with != 0) {
                fprintf(stderr, "FAIL: tags seed %u: %ld dynamic instructions under another tag\n", seed, with);
                fails++;
            }
            if (without > 0) tag_teeth++;
            free(tag);
        }
        planted_in += b.n;
        planted_out += nout;
        if (seed % 3 == 1) {
            /* soft cuts (a layer's boundary): each part rolled on its own, then together; the
               dynamic instructions the same (check) and never longer than hard cuts there */
            memset(cut, 0, b.n + 1);
            for (unsigned k = 0; k < 4; k++) cut[rr(1, (uint32_t)b.n)] = 4;
            size_t nsoft = 0, nhard = 0;
            fails += check(&b, cut, &nsoft, "soft cuts", seed);
            for (size_t i = 0; i <= b.n; i++) cut[i] = cut[i] ? 1 : 0;
            fails += check(&b, cut, &nhard, "hard cuts", seed);
            if (nsoft > nhard) {
                fprintf(stderr, "FAIL: soft cuts seed %u: %zu instructions, hard cuts %zu\n", seed, nsoft, nhard);
                fails++;
            }
            soft_in += nhard;
            soft_out += nsoft;
        }
        if (!pressure && seed % 3 != 0 && nout > 2 * bound) {
            /* each nest: its body, its prefixes, its loops and at most 7 x 2 strides */
            fprintf(stderr, "FAIL: planted seed %u: %zu instructions rolled to %zu, more than %zu\n", seed, b.n, nout, 2 * bound);
            fails++;
        }
        /* an ordinary stream: random fields, nothing planted */
        b.n = 0;
        unsigned m = rr(1, 400);
        for (unsigned i = 0; i < m; i++) {
            tmpl_t t;
            rand_tmpl(&t, 0);
            unsigned z[TPU_LOOP_LEVELS] = {0};
            push(&b, inst(&t, z, 0));
            if (rr(0, 9) == 0) push(&b, b.v[b.n - 1]); /* repeats, equal fields */
        }
        push(&b, tpu_insn_encode(&h));
        fails += check(&b, NULL, &nout, "ordinary", seed);
        free(cut);
        free(b.v);
    }
    size_t ring_with = 0, ring_without = 0;
    for (unsigned seed = 1; seed <= seeds / 4; seed++) {
        rs = 0xC2B2AE3D27D4EB4Full * seed + 7;
        size_t w = 0, wo = 0;
        fails += ring_case(seed, &w, &wo);
        ring_with += w;
        ring_without += wo;
    }
    size_t blk_soft = 0, blk_hard = 0;
    for (unsigned seed = 1; seed <= seeds / 10; seed++) {
        rs = 0x165667B19E3779F9ull * seed + 3;
        size_t so = 0, ha = 0;
        fails += blocks_case(seed, &so, &ha);
        blk_soft += so;
        blk_hard += ha;
    }
    if (seeds >= 20 && tag_teeth == 0) {
        fprintf(stderr, "FAIL: tags: no stream rolled without its tags mixed them (no teeth)\n");
        fails++;
    }
    printf("loops_test: %u seeds, planted nests %zu -> %zu instructions (%.1f%%); soft cuts %zu "
           "where hard cuts give %zu; tags kept per pc (%u streams mix them without); WMEM rings "
           "%zu instructions rolled with the modulus, %zu without; repeated blocks %zu "
           "instructions rolled, %zu with the blocks apart, %s\n",
           seeds, planted_in, planted_out,
           planted_in ? 100.0 * (double)planted_out / (double)planted_in : 0.0, soft_out, soft_in,
           tag_teeth, ring_with, ring_without, blk_soft, blk_hard, fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
}
