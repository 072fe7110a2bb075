/* SPDX-License-Identifier: Apache-2.0 */
/* The loop pass (docs/compiler.md "Loops"): the straight-line instruction stream the lowering
   writes -> the same dynamic instructions as loop nests of the sequencer (docs/isa.md "Loops").

   Bottom-up rerolling. The stream of one region (a layer, or a training phase of a layer: no
   nest crosses a region's boundary, so the report's per-pc attribution stays meaningful) is a
   list of nodes, at first one per instruction. A pass walks the list and at each position i
   looks for the smallest period k (a distance to a later node of the same signature, at most
   MAX_PERIOD) such that the block of k nodes at i repeats C >= 2 times with every field equal
   but the address operands (rows, host addresses), which advance by a constant per repetition
   (the stride of every operand slot, modulo 2^32 for host addresses). Such a run becomes one
   loop node whose body is the first repetition's nodes; passes repeat until nothing changes,
   so a body may hold loops (up to 6 levels). A node's signature hashes its structure: the
   instruction without its address operands (and with its tag, when the caller gives tags: a
   training step's phase and layer, so every pc keeps one), or a loop's count, its body's
   signatures and its strides. A run is taken only when it saves instructions, its nest stays
   within 6 levels and its slots' stride vectors fit the 15 index registers (slots with equal
   strides on the levels around them share a register). With a WMEM modulus (wmodk), WMEM row
   operands advance modulo 2^wmodk and take registers of that modulus: a ring of WMEM slots
   rolls wherever it wraps; each region is rolled with and without it, the shorter kept.

   Emission: each top-level loop node is a nest at level 0. Its registers are taken from
   those whose strides are already set as needed (a nest like the previous one costs no
   `stride`), the others get `stride` instructions before the nest. A loop that is the only
   loop of its parent's body is hoisted (armed once, before the outermost body); any other
   stands at its place in the parent's body and is re-armed in each iteration.

   Correctness by construction: the rolled program is expanded with the sequencer's own
   functions (tpu_seq_step, tpu_seq_resolve) and compared instruction by instruction with
   the straight-line stream; any difference is an internal error. So the dynamic instructions,
   and with them every output bit, are those of the straight-line program. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/isa.h"
#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

#define MAX_PERIOD 512   /* longest block (in nodes) a pass looks for */
#define MAX_CAND 48      /* candidate periods per position */
#define MAX_PASSES 12
#define MAX_COUNT 65535u
/* Slots per instruction: its three address operands, then a matmul's accumulate mode (kind 3:
   not an operand but the flag, which a loop may turn into acc_mode=first:lL) */
#define SPI 4
#define K_MODE 3
/* A WMEM row when the caller gives the ring's modulus (tpuc_loops' wmodk): its strides are
   taken modulo 2^wmodk and its registers get that modulus (docs/isa.md "Loops"), so a tile
   loop through the ring of WMEM slots rolls wherever the ring wraps */
#define K_WMOD 4
static uint32_t wmask; /* 2^wmodk - 1 of the stream being rolled (0: none) */
static unsigned wmodk;
/* Stride vector entries per slot: one per loop level, the node's own level first */
#define VL TPU_LOOP_LEVELS
/* A matmul's accumulate mode in a node: M_OVER / M_ACC in every instance, or M_FIRST + d:
   it overwrites exactly when the d innermost loops of the node around it are at index 0 */
enum { M_OVER = 0, M_ACC = 1, M_FIRST = 2 };

/* ---- address operands of an instruction ---- */
/* Slot k (0..2, the instruction's xsel index) of d: 1 and its value, or 0 when d has no such
   address operand. kind 1: a host address (modulo 2^32), 0: a row. */
static int slot_get(const tpu_dinsn_t *d, unsigned k, uint32_t *v, int *kind)
{
    *kind = 0;
    switch (d->opcode) {
    case TPU_OP_DMA_IN: case TPU_OP_DMA_OUT:
        if (k == 0) { *v = d->addr; *kind = 1; return 1; }
        if (k == 1) { *v = d->row; return 1; }
        return 0;
    case TPU_OP_LW: if (k == 0) { *v = d->w_row; return 1; } return 0;
    case TPU_OP_MATMUL:
        if (k == 0) { *v = d->ub_row; return 1; }
        if (k == 1) { *v = d->acc_row; return 1; }
        return 0;
    case TPU_OP_VOP:
        if (k == 0) { *v = d->a_row; return 1; }
        if (k == 1) { if (!tpu_vop_is_binary(d->vop)) return 0; *v = d->b_row; return 1; }
        *v = d->d_row;
        return 1;
    case TPU_OP_VRED: case TPU_OP_SOFTMAX:
        if (k == 0) { *v = d->src_row; return 1; }
        if (k == 1) { *v = d->dst_row; return 1; }
        return 0;
    case TPU_OP_SEND: case TPU_OP_RECV: case TPU_OP_BCAST: case TPU_OP_ALLREDUCE:
        if (k == 0) { *v = d->row; return 1; }
        return 0;
    default: return 0;
    }
}

static void slot_set(tpu_dinsn_t *d, unsigned k, uint32_t v)
{
    switch (d->opcode) {
    case TPU_OP_DMA_IN: case TPU_OP_DMA_OUT: if (k == 0) d->addr = v; else d->row = v; break;
    case TPU_OP_LW: d->w_row = v; break;
    case TPU_OP_MATMUL: if (k == 0) d->ub_row = v; else d->acc_row = v; break;
    case TPU_OP_VOP: if (k == 0) d->a_row = v; else if (k == 1) d->b_row = v; else d->d_row = v; break;
    case TPU_OP_VRED: case TPU_OP_SOFTMAX: if (k == 0) d->src_row = v; else d->dst_row = v; break;
    default: d->row = v; break;
    }
}

/* ---- growable arrays ---- */
typedef struct { void *p; size_t n, cap, esz; } vec_t;
static int vpush(vec_t *v, const void *e, size_t cnt)
{
    if (v->n + cnt > v->cap) {
        size_t cap = v->cap ? v->cap : 1024;
        while (cap < v->n + cnt) cap *= 2;
        void *q = realloc(v->p, cap * v->esz);
        if (!q) return -1;
        v->p = q;
        v->cap = cap;
    }
    if (e) memcpy((char *)v->p + v->n * v->esz, e, cnt * v->esz);
    v->n += cnt;
    return 0;
}

/* ---- nodes ---- */
typedef struct {
    uint64_t sig;
    uint32_t count;  /* 0: an instruction; else a loop's count */
    uint32_t len;    /* static instructions (a loop: its `loop` and its body) */
    uint32_t depth;  /* loop levels (0: an instruction) */
    uint32_t nslots;
    size_t dyn;      /* straight-line instructions it covers */
    size_t orig;     /* the first original instruction it covers */
    size_t slot0;    /* offset into slots[] (and, for a loop, vec[] x4, encl[]) */
    size_t child0;   /* loop: offset into kids[] */
    uint32_t nchild;
    int share;       /* loop: its loop children share registers (share_need) */
} node_t;

typedef struct {
    const tpu_insn_t *in;
    size_t n;
    uint32_t *opv;   /* n*3: the address operand values */
    uint8_t *opk;    /* n*3: 0 none, 1 row, 2 host address */
    uint64_t *key;   /* n: the instruction's hash without its address operands */
    vec_t nodes;     /* node_t */
    vec_t slots;     /* uint32_t: orig*3 + k of each slot of each node */
    vec_t vecs;      /* int32_t x4 per slot of a loop node: strides at its levels (0 = it) */
    vec_t encl;      /* uint8_t per slot of a loop node: its levels around the slot */
    vec_t modes;     /* int32_t per slot of a loop node: a K_MODE slot's mode (M_*) */
    vec_t kids;      /* uint32_t: body node indices */
    vec_t out;       /* tpu_insn_t */
    vec_t orig;      /* size_t per output pc */
    int32_t sreg[TPU_XREGS][TPU_LOOP_LEVELS]; /* the strides set so far (emission) */
    uint8_t smod[TPU_XREGS]; /* the moduli set so far (k of 2^k, 0 none) */
    vec_t mfb;       /* uint8_t: mod_flags' buffer */
    unsigned lru[TPU_XREGS];
    unsigned tick;
    size_t nloops, nstrides;
    int tagged;      /* the caller's tags: no two parts (phases, layers) have one signature */
    int oom;
} ctx_t;

#define NODE(c, i) (((node_t *)(c)->nodes.p)[i])
#define SLOTS(c, nd) ((uint32_t *)(c)->slots.p + (nd)->slot0)

/* Per slot sl[0..ns): 1 for a K_WMOD slot (its register takes the modulus), for reg_need */
static const uint8_t *mod_flags(ctx_t *c, const uint32_t *sl, uint32_t ns)
{
    c->mfb.n = 0;
    if (vpush(&c->mfb, NULL, ns + 1)) { c->oom = 1; return NULL; }
    uint8_t *f = c->mfb.p;
    for (uint32_t s = 0; s < ns; s++) f[s] = wmask && c->opk[sl[s]] == K_WMOD;
    return f;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

/* the stride from value a to b of a slot of kind k (2: host address, modulo 2^32); 0 and
   *ok = 0 when it does not fit a stride */
static int64_t delta(unsigned k, uint32_t a, uint32_t b)
{
    if (k == 2) return (int64_t)(int32_t)(b - a);
    if (k == K_WMOD && wmask) return (int64_t)((b - a) & wmask);
    return (int64_t)b - (int64_t)a;
}

/* The accumulate mode of slot s (K_MODE) of node nd, and the loops of nd around it */
static int32_t slot_mode(const ctx_t *c, const node_t *nd, uint32_t s)
{
    if (!nd->count) return (int32_t)c->opv[SLOTS(c, nd)[s]];
    return ((const int32_t *)c->modes.p)[nd->slot0 + s];
}

static uint32_t slot_depth(const ctx_t *c, const node_t *nd, uint32_t s)
{
    return nd->count ? ((const uint8_t *)c->encl.p)[nd->slot0 + s] : 0;
}

/* The mode of a loop around a body whose first repetition has mode m0 (its slot inside d
   loops of the body) and whose later repetitions all have m1: -1 when no mode says it */
static int32_t mode_join(int32_t m0, int32_t m1, uint32_t d)
{
    if (m0 == m1) return m0;
    if (m1 == M_ACC && ((m0 == M_OVER && d == 0) || m0 == M_FIRST + (int32_t)d))
        return M_FIRST + (int32_t)d + 1;
    return -1;
}

/* ---- register needs: slots grouped by their stride vector on the levels around them ---- */
typedef struct { int32_t v[TPU_LOOP_LEVELS]; unsigned e, m; } regc_t;

/* Greedy: slots by enclosing depth, deepest first, each joins the first register that agrees
   on its levels (and on the modulus: mf[s] = 1 for a K_WMOD slot; mf may be NULL). Returns the
   registers needed (up to max + 1) and, when slotreg is not NULL, each slot's register index
   (0 none, else 1 + index into rc). */
static unsigned reg_need(const int32_t *vec, const uint8_t *encl, const uint8_t *mf, uint32_t ns,
                         regc_t *rc, unsigned max, uint8_t *slotreg)
{
    unsigned nr = 0;
    for (unsigned e = TPU_LOOP_LEVELS; e >= 1; e--) {
        for (uint32_t s = 0; s < ns; s++) {
            if (encl[s] != e) continue;
            const int32_t *v = vec + VL * (size_t)s;
            int nz = 0;
            for (unsigned l = 0; l < e; l++) nz |= v[l] != 0;
            if (!nz) { if (slotreg) slotreg[s] = 0; continue; }
            const unsigned m = mf ? mf[s] : 0;
            unsigned r = 0;
            for (; r < nr; r++) {
                unsigned l = 0;
                while (l < e && rc[r].v[l] == v[l]) l++;
                if (l == e && rc[r].m == m) break;
            }
            if (r == nr) {
                if (nr > max) return nr;
                memset(&rc[nr], 0, sizeof rc[nr]);
                for (unsigned l = 0; l < e; l++) rc[nr].v[l] = v[l];
                rc[nr].e = e;
                rc[nr].m = m;
                nr++;
            }
            if (slotreg) slotreg[s] = (uint8_t)(r + 1);
        }
    }
    return nr;
}

/* ---- registers shared by the loops of one body ---- */
/* The children of a loop run one after the other, so a register can serve slots of several of
   its loop children when it advances alike on the loop's own level (and has the same
   modulus): a `stride` in the body before each such child sets the levels inside it (their
   parts are 0 between the children: a level's parts are cleared when it completes and when it
   is armed). A loop over a model's repeated blocks needs this: each layer of the block has a
   handful of access patterns, the block more than the 15 registers hold at once.
   Each child's slots are grouped as reg_need does; register number o of class (stride on the
   loop's level, modulus) in a child is member o of that class's pool. The loop needs, per
   class, the most members any child uses. Returns the registers needed (up to max + 1); with
   mem not NULL, each slot's member (0: none, else 1 + index into mem[]) and each member's
   class in mem[] (v[0], m). */
typedef struct { int32_t v0; unsigned m, o; } member_t;

static unsigned share_need(ctx_t *c, const uint32_t *kid, size_t nk,
                           const int32_t *vec, const uint8_t *en, const uint8_t *mf,
                           unsigned max, uint8_t *slotmem, member_t *mem)
{
    member_t pool[2 * TPU_XREGS + 2];
    unsigned np = 0;
    size_t s0 = 0;
    for (size_t j = 0; j < nk; j++) {
        const node_t *kd = &NODE(c, kid[j]);
        regc_t rc[TPU_XREGS + 1];
        uint8_t *srp = malloc(kd->nslots + 1u);
        if (!srp) { c->oom = 1; return max + 1; }
        unsigned nr = reg_need(vec + VL * s0, en + s0, mf ? mf + s0 : NULL, kd->nslots, rc, max,
                               srp);
        if (nr > max) { free(srp); return max + 1; }
        unsigned rmem[TPU_XREGS + 1];
        for (unsigned r = 0; r < nr; r++) {
            unsigned o = 0;
            for (unsigned q = 0; q < r; q++) o += rc[q].v[0] == rc[r].v[0] && rc[q].m == rc[r].m;
            unsigned p = 0;
            while (p < np && !(pool[p].v0 == rc[r].v[0] && pool[p].m == rc[r].m && pool[p].o == o)) p++;
            if (p == np) {
                if (np > max) { free(srp); return np; }
                pool[np].v0 = rc[r].v[0];
                pool[np].m = rc[r].m;
                pool[np].o = o;
                np++;
            }
            rmem[r] = p;
        }
        if (slotmem)
            for (uint32_t s = 0; s < kd->nslots; s++)
                slotmem[s0 + s] = srp[s] ? (uint8_t)(rmem[srp[s] - 1] + 1) : 0;
        free(srp);
        s0 += kd->nslots;
    }
    if (mem) memcpy(mem, pool, np * sizeof *mem);
    return np;
}

/* ---- one pass over a node list ---- */
typedef struct { uint64_t sig; uint32_t pos; } hent_t;

/* The loops a list is rolled inside: the period (straight-line instructions) of each
   enclosing loop being formed, and the levels left. A node inside may be merged with another
   only when each enclosing loop advances their slots alike (else the inner loop's strides
   would differ between the outer iterations): their signatures in this context hash those
   outer strides too. */
typedef struct { size_t P[TPU_LOOP_LEVELS]; unsigned np, budget; } rctx_t;

static uint64_t ctx_sig(const ctx_t *c, uint32_t id, const rctx_t *rc)
{
    const node_t *nd = &NODE(c, id);
    uint64_t h = nd->sig;
    if (!rc->np) return h;
    const uint32_t *sl = SLOTS(c, nd);
    for (uint32_t s = 0; s < nd->nslots; s++)
        for (unsigned l = 0; l < rc->np && c->opk[sl[s]] != K_MODE; l++) {
            size_t o = sl[s] + SPI * rc->P[l];
            h = mix(h, (uint64_t)delta(c->opk[sl[s]], c->opv[sl[s]], c->opv[o]));
        }
    return h ? h : 1;
}

/* The block [i, i+k) of list repeats (signatures, and constant deltas of every slot from one
   repetition to the next): the count (>= 2), or 0. */
static uint32_t run_count(ctx_t *c, const uint32_t *list, const uint64_t *sg, size_t n,
                          size_t i, size_t k, const uint64_t *ph, const uint64_t *pw, vec_t *dv)
{
#define BH(a, len) (ph[(a) + (len)] - ph[(a)] * pw[(len)])
    uint64_t h0 = BH(i, k);
    if (i + 2 * k > n || BH(i + k, k) != h0) return 0;
    dv->n = 0;
    for (size_t j = 0; j < k; j++) {
        const node_t *a = &NODE(c, list[i + j]), *b = &NODE(c, list[i + k + j]);
        if (sg[i + j] != sg[i + k + j] || a->nslots != b->nslots) return 0;
        const uint32_t *sa = SLOTS(c, a), *sb = SLOTS(c, b);
        for (uint32_t s = 0; s < a->nslots; s++) {
            int32_t d32;
            if (c->opk[sa[s]] == K_MODE) { /* the later repetitions' mode, joinable with the first's */
                d32 = slot_mode(c, b, s);
                if (mode_join(slot_mode(c, a, s), d32, slot_depth(c, a, s)) < 0) return 0;
            } else {
                int64_t d = delta(c->opk[sa[s]], c->opv[sa[s]], c->opv[sb[s]]);
                if (d < INT32_MIN || d > INT32_MAX) return 0;
                d32 = (int32_t)d;
            }
            if (vpush(dv, &d32, 1)) { c->oom = 1; return 0; }
        }
    }
    const int32_t *d = dv->p;
    uint32_t C = 2;
    while (C < MAX_COUNT && i + (size_t)(C + 1) * k <= n && BH(i + (size_t)C * k, k) == h0) {
        size_t q = 0;
        int ok = 1;
        for (size_t j = 0; j < k && ok; j++) {
            size_t pa = i + (size_t)(C - 1) * k + j, pb = i + (size_t)C * k + j;
            const node_t *a = &NODE(c, list[pa]), *b = &NODE(c, list[pb]);
            if (sg[pa] != sg[pb] || a->nslots != b->nslots) { ok = 0; break; }
            const uint32_t *sa = SLOTS(c, a), *sb = SLOTS(c, b);
            for (uint32_t s = 0; s < a->nslots; s++, q++)
                if (c->opk[sa[s]] == K_MODE ? slot_mode(c, b, s) != d[q]
                                            : delta(c->opk[sa[s]], c->opv[sa[s]], c->opv[sb[s]]) != d[q]) {
                    ok = 0;
                    break;
                }
        }
        if (!ok) break;
        C++;
    }
#undef BH
    return C;
}

/* A loop node over list[i .. i+k) repeated C times, one repetition P straight-line
   instructions long (so slot s of repetition 0 is slot s + 3P of repetition 1); -1 when it
   breaks a limit (levels, registers), else its index (0 when !commit). */
static long make_loop(ctx_t *c, const uint32_t *list, size_t i, size_t k, uint32_t C, size_t P,
                      unsigned budget, int commit, int share)
{
    uint32_t depth = 0, len = 1, ns = 0;
    uint64_t sig = mix(mix(0x10095ull, C), k), dyn = 0;
    for (size_t j = 0; j < k; j++) {
        const node_t *a = &NODE(c, list[i + j]);
        if (a->depth > depth) depth = a->depth;
        len += a->len;
        ns += a->nslots;
        dyn += a->dyn;
        sig = mix(sig, a->sig);
    }
    if (depth + 1 > budget || len - 1 > 65535u || dyn != P) return -1;
    size_t s0 = c->slots.n;
    if (vpush(&c->vecs, NULL, VL * (size_t)ns) || vpush(&c->encl, NULL, ns) || vpush(&c->slots, NULL, ns) ||
        vpush(&c->modes, NULL, ns)) {
        c->oom = 1;
        return -1;
    }
    int32_t *vec = (int32_t *)c->vecs.p + VL * s0;
    uint8_t *en = (uint8_t *)c->encl.p + s0;
    uint32_t *sl = (uint32_t *)c->slots.p + s0;
    int32_t *md = (int32_t *)c->modes.p + s0;
    size_t q = 0;
    int bad = 0;
    for (size_t j = 0; j < k; j++) {
        const node_t *a = &NODE(c, list[i + j]);
        const uint32_t *sa = SLOTS(c, a);
        for (uint32_t s = 0; s < a->nslots; s++, q++) {
            sl[q] = sa[s];
            md[q] = 0;
            if (c->opk[sa[s]] == K_MODE) {
                /* the later repetitions accumulate from their first instance on (run_count
                   checked that they all have one mode, joinable with this one's), else they
                   keep this one's mode */
                int32_t m0 = slot_mode(c, a, s);
                int32_t m1 = c->opv[sa[s] + SPI * P] && !c->opv[sa[s]] ? M_ACC : m0;
                md[q] = mode_join(m0, m1, slot_depth(c, a, s));
                bad |= md[q] < 0;
                memset(vec + VL * q, 0, VL * sizeof *vec);
                en[q] = (uint8_t)(1 + slot_depth(c, a, s));
                continue;
            }
            int64_t d = delta(c->opk[sa[s]], c->opv[sa[s]], c->opv[sa[s] + SPI * P]);
            vec[VL * q] = (int32_t)d;
            sig = mix(sig, (uint64_t)(uint32_t)d);
            if (a->count) {
                const int32_t *cv = (const int32_t *)c->vecs.p + VL * (a->slot0 + s);
                for (unsigned l = 1; l < VL; l++)
                    vec[VL * q + l] = cv[l - 1];
                en[q] = (uint8_t)(1 + ((const uint8_t *)c->encl.p)[a->slot0 + s]);
            } else {
                for (unsigned l = 1; l < VL; l++)
                    vec[VL * q + l] = 0;
                en[q] = 1;
            }
        }
    }
    regc_t rc[TPU_XREGS + 1];
    const uint8_t *mf = mod_flags(c, sl, ns);
    unsigned nloopk = 0;
    for (size_t j = 0; j < k; j++) nloopk += NODE(c, list[i + j]).count != 0;
    share = share && nloopk >= 2;
    unsigned nr = !mf ? TPU_XREGS
                  : share ? share_need(c, list + i, k, vec, en, mf, TPU_XREGS - 1, NULL, NULL)
                          : reg_need(vec, en, mf, ns, rc, TPU_XREGS - 1, NULL);
    if (bad || nr > TPU_XREGS - 1 || !commit) {
        c->vecs.n = VL * s0; c->encl.n = s0; c->slots.n = s0; c->modes.n = s0;
        return bad || nr > TPU_XREGS - 1 ? -1 : 0;
    }
    size_t k0 = c->kids.n;
    if (vpush(&c->kids, list + i, k)) { c->oom = 1; return -1; }
    node_t nd;
    memset(&nd, 0, sizeof nd);
    nd.sig = sig ? sig : 1;
    nd.count = C;
    nd.len = len;
    nd.depth = depth + 1;
    nd.nslots = ns;
    nd.dyn = (size_t)C * P;
    nd.orig = NODE(c, list[i]).orig;
    nd.slot0 = s0;
    nd.child0 = k0;
    nd.nchild = (uint32_t)k;
    nd.share = share;
    if (vpush(&c->nodes, &nd, 1)) { c->oom = 1; return -1; }
    return (long)(c->nodes.n - 1);
}

static int roll_list(ctx_t *c, vec_t *l1, const rctx_t *rc);

static int rule_cover; /* the candidate that covers most, else the shortest period */
static size_t kmax_cur = MAX_PERIOD; /* the longest period a pass looks for */
static int rule_grow;  /* periods from short to long: 1, 2, 4, .. MAX_PERIOD */
static int rule_look;  /* a short run (at most 2 LOOK instructions) is left when one starting
                          inside it (LOOK on at most, LOOK periods each) covers more: a peeled
                          first iteration then stays outside the nest */
#define LOOK 8         /* the later starts and periods rule_look tries */
#define LOOK_LIST 2048 /* rule_look only on lists this short (its cost grows with the list) */

/* The most instructions a run starting at position i covers (C x k over its first LOOK
   candidate periods; not checked against the levels and registers) */
static uint64_t cover_at(ctx_t *c, const uint32_t *list, const uint64_t *sg, size_t n, size_t i,
                         const uint32_t *nxt, const uint64_t *ph, const uint64_t *pw, vec_t *dv)
{
    uint64_t best = 0;
    int cand = 0;
    for (size_t j = nxt[i]; j < n && j - i <= kmax_cur && cand < LOOK; j = nxt[j], cand++) {
        const uint32_t C = run_count(c, list, sg, n, i, j - i, ph, pw, dv);
        if (C >= 2 && (uint64_t)C * (j - i) > best) best = (uint64_t)C * (j - i);
    }
    return best;
}

/* One pass: list -> out. Returns 1 when something was rolled. */
static int pass(ctx_t *c, const uint32_t *list, size_t n, vec_t *out, const rctx_t *rc)
{
    uint64_t *sg = malloc((n + 1) * sizeof *sg);
    uint64_t *ph = malloc((n + 1) * sizeof *ph);
    uint64_t *pw = malloc((MAX_PERIOD + 2) * sizeof *pw);
    uint32_t *nxt = malloc((n + 1) * sizeof *nxt);
    size_t hsz = 1;
    while (hsz < 2 * n + 2) hsz <<= 1;
    hent_t *ht = calloc(hsz, sizeof *ht);
    vec_t dv = {0, 0, 0, sizeof(int32_t)}, sub = {0, 0, 0, sizeof(uint32_t)};
    int changed = 0;
    size_t *failed = NULL;
    if (!sg || !ph || !pw || !nxt || !ht) { c->oom = 1; goto out; }
    const uint64_t B = 0x100000001B3ull * 2 + 1;
    ph[0] = 0;
    for (size_t i = 0; i < n; i++) {
        sg[i] = ctx_sig(c, list[i], rc);
        ph[i + 1] = ph[i] * B + sg[i];
    }
    pw[0] = 1;
    for (size_t i = 1; i <= MAX_PERIOD + 1; i++) pw[i] = pw[i - 1] * B;
    /* nxt[i]: the next position with the same signature (n: none) */
    for (size_t i = n; i-- > 0;) {
        uint64_t s = sg[i];
        size_t h = (size_t)(s ^ (s >> 29)) & (hsz - 1);
        while (ht[h].sig != 0 && ht[h].sig != s) h = (h + 1) & (hsz - 1);
        nxt[i] = ht[h].sig == s ? ht[h].pos : (uint32_t)n;
        ht[h].sig = s;
        ht[h].pos = (uint32_t)i;
    }
    /* failed[k]: the end of the last run of period k refused for its levels or registers; the
       same run seen from a later position (rotated) is refused too, and not measured again:
       this keeps a pass linear */
    failed = calloc(MAX_PERIOD + 1, sizeof *failed);
    if (!failed) { c->oom = 1; goto out; }
    for (size_t i = 0; i < n;) {
        size_t bestk = 0;
        uint32_t bestC = 0;
        uint64_t bestcov = 0;
        int cand = 0;
        for (size_t j = nxt[i]; j < n && j - i <= kmax_cur && cand < MAX_CAND; j = nxt[j], cand++) {
            size_t k = j - i;
            if (i < failed[k]) continue;
            uint32_t C = run_count(c, list, sg, n, i, k, ph, pw, &dv);
            if (c->oom) goto out;
            if (C < 2) continue;
            uint64_t blen = 0, P = 0;
            for (size_t q = 0; q < k; q++) {
                blen += NODE(c, list[i + q]).len;
                P += NODE(c, list[i + q]).dyn;
            }
            if ((uint64_t)(C - 1) * blen < 2) continue;
            if (rule_cover && (uint64_t)C * k <= bestcov) continue;
            if (make_loop(c, list, i, k, C, P, rc->budget, 0, 0) < 0 &&
                (c->oom || rc->np || make_loop(c, list, i, k, C, P, rc->budget, 0, 1) < 0)) {
                if (c->oom) goto out;
                failed[k] = i + (size_t)C * k;
                continue;
            }
            bestk = k;
            bestC = C;
            bestcov = (uint64_t)C * k;
            if (!rule_cover) break;
        }
        if (bestk && rule_look && (uint64_t)bestC * bestk <= 2 * LOOK) {
            for (size_t d = 1; d < (size_t)bestC * bestk && d <= LOOK && i + d < n; d++)
                if (cover_at(c, list, sg, n, i + d, nxt, ph, pw, &dv) > bestcov) {
                    bestk = 0;
                    break;
                }
            if (c->oom) goto out;
        }
        if (bestk) {
            size_t P = 0;
            for (size_t q = 0; q < bestk; q++) P += NODE(c, list[i + q]).dyn;
            long id = -1;
            /* the body's own repetitions, inside this loop; with fewer levels when the
               nest would need too many registers */
            for (unsigned b = rc->budget - 1; b >= 1 && id < 0; b = b > 1 ? 1 : 0) {
                sub.n = 0;
                if (vpush(&sub, list + i, bestk)) { c->oom = 1; goto out; }
                rctx_t r2 = *rc;
                r2.P[r2.np++] = P;
                r2.budget = b;
                if (roll_list(c, &sub, &r2)) goto out;
                if (sub.n == bestk) break; /* nothing inside */
                id = make_loop(c, sub.p, 0, sub.n, bestC, P, rc->budget, 1, 0);
                if (id < 0 && !c->oom && !rc->np)
                    id = make_loop(c, sub.p, 0, sub.n, bestC, P, rc->budget, 1, 1);
                if (c->oom) goto out;
            }
            if (id < 0) id = make_loop(c, list, i, bestk, bestC, P, rc->budget, 1, 0);
            if (id < 0 && !c->oom && !rc->np)
                id = make_loop(c, list, i, bestk, bestC, P, rc->budget, 1, 1);
            if (id < 0) { c->oom = 1; goto out; }
            uint32_t u = (uint32_t)id;
            if (vpush(out, &u, 1)) { c->oom = 1; goto out; }
            i += (size_t)bestC * bestk;
            changed = 1;
        } else {
            if (vpush(out, &list[i], 1)) { c->oom = 1; goto out; }
            i++;
        }
    }
out:
    free(sg); free(ph); free(pw); free(nxt); free(ht); free(dv.p); free(sub.p); free(failed);
    return changed;
}

/* Passes over l1 (replaced by the rolled list) until nothing changes. 0 or -1 (memory). */
static int roll_list(ctx_t *c, vec_t *l1, const rctx_t *rc)
{
    vec_t l2 = {0, 0, 0, sizeof(uint32_t)};
    size_t saved = kmax_cur;
    for (size_t km = rule_grow ? 1 : MAX_PERIOD;; km = km * 2 > MAX_PERIOD ? MAX_PERIOD : km * 2) {
        kmax_cur = km;
        for (int p = 0; p < MAX_PASSES && rc->budget >= 1; p++) {
            l2.n = 0;
            int ch = pass(c, l1->p, l1->n, &l2, rc);
            kmax_cur = km; /* (a body rolled inside may have changed it) */
            if (c->oom) break;
            vec_t t = *l1; *l1 = l2; l2 = t;
            if (!ch) break;
        }
        if (km == MAX_PERIOD || c->oom) break;
    }
    kmax_cur = saved;
    free(l2.p);
    return c->oom ? -1 : 0;
}

/* ---- emission ---- */
static int put(ctx_t *c, tpu_insn_t w, size_t orig)
{
    if (vpush(&c->out, &w, 1) || vpush(&c->orig, &orig, 1)) { c->oom = 1; return -1; }
    return 0;
}

/* 1 when the loop node's body has exactly one loop (hoisted with it) */
static long only_loop(ctx_t *c, const node_t *nd)
{
    long one = -1;
    const uint32_t *kid = (const uint32_t *)c->kids.p + nd->child0;
    for (uint32_t j = 0; j < nd->nchild; j++)
        if (NODE(c, kid[j]).count) {
            if (one >= 0) return -1;
            one = (long)kid[j];
        }
    return one;
}

typedef struct {
    const node_t *top; /* the nest */
    uint8_t *slotreg; /* per slot of the nest: register number 0..7 */
    size_t slot;      /* next slot */
    uint32_t hoist[TPU_LOOP_LEVELS]; /* node indices of the hoisted chain */
    unsigned nhoist;
    size_t body_pc[TPU_LOOP_LEVELS];
    /* a shared nest (node_t.share): the `stride` instructions its body runs before child j,
       rs[rs0[j] .. rs0[j + 1]) */
    tpu_insn_t *rs;
    size_t *rs0;
} em_t;

static int is_hoisted(const em_t *e, uint32_t idx)
{
    for (unsigned h = 0; h < e->nhoist; h++) if (e->hoist[h] == idx) return 1;
    return 0;
}

static uint32_t blen(ctx_t *c, const em_t *e, uint32_t idx)
{
    const node_t *nd = &NODE(c, idx);
    const uint32_t *kid = (const uint32_t *)c->kids.p + nd->child0;
    uint32_t n = 0;
    if (e->rs0 && nd == e->top) n += (uint32_t)e->rs0[nd->nchild];
    for (uint32_t j = 0; j < nd->nchild; j++) {
        const node_t *k = &NODE(c, kid[j]);
        if (!k->count) n++;
        else n += (is_hoisted(e, kid[j]) ? 0 : 1) + blen(c, e, kid[j]);
    }
    return n;
}

static int emit_body(ctx_t *c, em_t *e, uint32_t idx, unsigned level)
{
    const node_t *nd = &NODE(c, idx);
    for (unsigned h = 0; h < e->nhoist; h++)
        if (e->hoist[h] == idx) e->body_pc[h] = c->out.n;
    uint32_t nk = nd->nchild;
    size_t k0 = nd->child0;
    for (uint32_t j = 0; j < nk; j++) {
        uint32_t ki = ((const uint32_t *)c->kids.p)[k0 + j];
        const node_t *k = &NODE(c, ki);
        if (e->rs0 && nd == e->top)
            for (size_t q = e->rs0[j]; q < e->rs0[j + 1]; q++) {
                c->nstrides++;
                if (put(c, e->rs[q], k->orig)) return -1;
            }
        if (!k->count) {
            tpu_dinsn_t d;
            tpu_insn_decode(c->in[k->orig], &d);
            for (unsigned s = 0; s < 3; s++) {
                uint32_t v;
                int kind;
                if (!slot_get(&d, s, &v, &kind)) continue;
                d.xsel[s] = e->slotreg[e->slot++];
            }
            if (d.opcode == TPU_OP_MATMUL) {
                /* the nest's mode: M_FIRST + n overwrites when the n innermost of the level + 1
                   loops around it are at 0: acc_mode=first:l(level + 1 - n) */
                int32_t m = ((const int32_t *)c->modes.p)[e->top->slot0 + e->slot++];
                if (m >= M_FIRST) {
                    d.accumulate = 0;
                    d.acc_first = (unsigned)((int32_t)level + 2 - (m - M_FIRST));
                } else {
                    d.accumulate = (unsigned)m;
                }
            }
            if (put(c, tpu_insn_encode(&d), k->orig)) return -1;
        } else {
            if (!is_hoisted(e, ki)) {
                tpu_dinsn_t d;
                memset(&d, 0, sizeof d);
                d.opcode = TPU_OP_LOOP;
                d.level = level + 1;
                d.n = k->count;
                d.skip = 1;
                d.body = blen(c, e, ki);
                c->nloops++;
                if (put(c, tpu_insn_encode(&d), k->orig)) return -1;
            }
            if (emit_body(c, e, ki, level + 1)) return -1;
        }
    }
    return 0;
}

/* A `stride` of register x for the levels of group g, levels l with need[l] set taken from
   val[l], the others kept from st[] (updated) */
static tpu_insn_t stride_insn(unsigned x, unsigned g, const int32_t *val, const uint8_t *need,
                              int32_t *st)
{
    enum { GL = TPU_STRIDE_GROUP_LEVELS };
    tpu_dinsn_t d;
    memset(&d, 0, sizeof d);
    d.opcode = TPU_OP_STRIDE;
    d.xreg = x;
    d.group = g;
    for (unsigned j = 0; j < GL; j++) {
        unsigned l = GL * g + j;
        if (l >= TPU_LOOP_LEVELS) break;
        if (need[l]) st[l] = val[l];
        d.s[j] = st[l];
    }
    return tpu_insn_encode(&d);
}

/* The registers of a shared nest (node_t.share): its members (share_need) get physical
   registers; before the nest each is set to what the body leaves it (each level from the last
   child that needs it), and in the body a `stride` before a child sets the levels it needs
   where they differ. So every iteration starts as the first: the nest is the same program
   at any count. */
static int plan_shared(ctx_t *c, em_t *e, const node_t *nd)
{
    enum { GL = TPU_STRIDE_GROUP_LEVELS, NG = (TPU_LOOP_LEVELS + GL - 1) / GL };
    const uint32_t *kid = (const uint32_t *)c->kids.p + nd->child0;
    const int32_t *vec = (const int32_t *)c->vecs.p + VL * nd->slot0;
    const uint8_t *en = (const uint8_t *)c->encl.p + nd->slot0;
    member_t mem[2 * TPU_XREGS + 2];
    uint8_t *sm = calloc(nd->nslots + 1, 1);
    int32_t(*val)[TPU_LOOP_LEVELS] = calloc((size_t)nd->nchild * TPU_XREGS, sizeof *val);
    uint8_t(*need)[TPU_LOOP_LEVELS] = calloc((size_t)nd->nchild * TPU_XREGS, sizeof *need);
    vec_t rs = {0, 0, 0, sizeof(tpu_insn_t)};
    e->rs0 = calloc(nd->nchild + 1, sizeof *e->rs0);
    const uint8_t *mf = mod_flags(c, SLOTS(c, nd), nd->nslots);
    if (!sm || !val || !need || !e->rs0 || !mf) goto oom;
    unsigned np = share_need(c, kid, nd->nchild, vec, en, mf, TPU_XREGS - 1, sm, mem);
    if (np > TPU_XREGS - 1) goto oom; /* make_loop checked it */
    /* each child's needs per member: the levels its slots of that member reach */
    size_t s0 = 0;
    for (uint32_t j = 0; j < nd->nchild; j++) {
        const uint32_t ns = NODE(c, kid[j]).nslots;
        for (uint32_t q = 0; q < ns; q++) {
            const uint32_t sl = (uint32_t)s0 + q;
            if (!sm[sl]) continue;
            const size_t at = (size_t)j * TPU_XREGS + (sm[sl] - 1u);
            for (unsigned l = 0; l < en[sl]; l++) {
                need[at][l] = 1;
                val[at][l] = vec[VL * (size_t)sl + l];
            }
        }
        s0 += ns;
    }
    /* physical registers: the least recently used ones; their state when the body starts */
    unsigned phys[TPU_XREGS] = {0}, taken = 0;
    int32_t st[TPU_XREGS][TPU_LOOP_LEVELS];
    for (unsigned p = 0; p < np; p++) {
        unsigned best = 0;
        for (unsigned x = 1; x < TPU_XREGS; x++)
            if (!(taken & (1u << x)) && (!best || c->lru[x] < c->lru[best])) best = x;
        phys[p] = best;
        taken |= 1u << best;
        c->lru[best] = ++c->tick;
        memcpy(st[p], c->sreg[best], sizeof st[p]);
        for (uint32_t j = 0; j < nd->nchild; j++)
            for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++)
                if (need[(size_t)j * TPU_XREGS + p][l]) st[p][l] = val[(size_t)j * TPU_XREGS + p][l];
    }
    /* before the nest: the moduli and that state */
    for (unsigned p = 0; p < np; p++) {
        const unsigned x = phys[p], mk = mem[p].m ? wmodk : 0u;
        if (c->smod[x] != mk) {
            tpu_dinsn_t d;
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_STRIDE;
            d.xreg = x;
            d.modform = 1;
            d.modk = mk;
            c->smod[x] = (uint8_t)mk;
            c->nstrides++;
            if (put(c, tpu_insn_encode(&d), nd->orig)) goto oom;
        }
        uint8_t all[TPU_LOOP_LEVELS];
        memset(all, 1, sizeof all);
        for (unsigned g = 0; g < NG; g++) {
            int chg = 0;
            for (unsigned l = GL * g; l < GL * (g + 1) && l < TPU_LOOP_LEVELS; l++)
                chg |= c->sreg[x][l] != st[p][l];
            if (!chg) continue;
            c->nstrides++;
            if (put(c, stride_insn(x, g, st[p], all, c->sreg[x]), nd->orig)) goto oom;
        }
    }
    /* in the body: before each child, the levels it needs where they differ */
    for (uint32_t j = 0; j < nd->nchild; j++) {
        e->rs0[j] = rs.n;
        for (unsigned p = 0; p < np; p++) {
            const size_t at = (size_t)j * TPU_XREGS + p;
            for (unsigned g = 0; g < NG; g++) {
                int chg = 0;
                for (unsigned l = GL * g; l < GL * (g + 1) && l < TPU_LOOP_LEVELS; l++)
                    chg |= need[at][l] && st[p][l] != val[at][l];
                if (!chg) continue;
                tpu_insn_t w = stride_insn(phys[p], g, val[at], need[at], st[p]);
                if (vpush(&rs, &w, 1)) goto oom;
            }
        }
    }
    e->rs0[nd->nchild] = rs.n;
    for (unsigned p = 0; p < np; p++)
        if (memcmp(st[p], c->sreg[phys[p]], sizeof st[p]) != 0) goto oom; /* not a fixpoint */
    for (uint32_t q = 0; q < nd->nslots; q++) e->slotreg[q] = sm[q] ? (uint8_t)phys[sm[q] - 1] : 0;
    e->rs = rs.p;
    free(sm); free(val); free(need);
    return 0;
oom:
    c->oom = 1;
    free(sm); free(val); free(need); free(rs.p);
    free(e->rs0);
    e->rs0 = NULL;
    return -1;
}

static int emit_nest(ctx_t *c, uint32_t idx)
{
    const node_t *nd = &NODE(c, idx);
    em_t e;
    memset(&e, 0, sizeof e);
    e.top = nd;
    e.slotreg = calloc(nd->nslots + 1, 1);
    if (!e.slotreg) { c->oom = 1; return -1; }
    if (nd->share) {
        if (plan_shared(c, &e, nd)) goto fail;
        goto chain;
    }
    regc_t rc[TPU_XREGS + 1];
    const uint8_t *mf = mod_flags(c, SLOTS(c, nd), nd->nslots);
    if (!mf) goto fail;
    unsigned nr = reg_need((const int32_t *)c->vecs.p + VL * nd->slot0,
                           (const uint8_t *)c->encl.p + nd->slot0, mf, nd->nslots, rc,
                           TPU_XREGS - 1, e.slotreg);
    /* registers: one whose strides (and modulus) already agree, else the least recently used
       free one */
    unsigned phys[TPU_XREGS] = {0}, taken = 0;
    for (unsigned r = 0; r < nr; r++)
        for (unsigned x = 1; x < TPU_XREGS; x++) {
            if (taken & (1u << x) || c->smod[x] != (rc[r].m ? wmodk : 0u)) continue;
            unsigned l = 0;
            while (l < rc[r].e && c->sreg[x][l] == rc[r].v[l]) l++;
            if (l == rc[r].e) { phys[r] = x; taken |= 1u << x; break; }
        }
    for (unsigned r = 0; r < nr; r++) {
        if (phys[r]) continue;
        unsigned best = 0;
        for (unsigned x = 1; x < TPU_XREGS; x++)
            if (!(taken & (1u << x)) && (!best || c->lru[x] < c->lru[best])) best = x;
        phys[r] = best;
        taken |= 1u << best;
        tpu_dinsn_t d;
        memset(&d, 0, sizeof d);
        d.opcode = TPU_OP_STRIDE;
        d.xreg = best;
        const unsigned need = rc[r].m ? wmodk : 0u;
        if (c->smod[best] != need) { /* `stride xR mod=M` (or mod=0) */
            d.modform = 1;
            d.modk = need;
            c->smod[best] = (uint8_t)need;
            c->nstrides++;
            if (put(c, tpu_insn_encode(&d), nd->orig)) goto fail;
            d.modform = 0;
            d.modk = 0;
        }
        /* one stride instruction per group of levels (3g .. 3g + 2) whose strides change */
        enum { GL = TPU_STRIDE_GROUP_LEVELS };
        unsigned chg = 0;
        for (unsigned l = 0; l < rc[r].e; l++)
            if (c->sreg[best][l] != rc[r].v[l]) chg |= 1u << (l / GL);
        for (unsigned g = 0; g * GL < TPU_LOOP_LEVELS; g++) {
            if (!(chg & (1u << g))) continue;
            d.group = g;
            for (unsigned j = 0; j < GL; j++) {
                unsigned l = GL * g + j;
                /* levels outside the slots' reach keep what they had */
                d.s[j] = l < rc[r].e ? rc[r].v[l] : l < TPU_LOOP_LEVELS ? c->sreg[best][l] : 0;
                if (l < TPU_LOOP_LEVELS) c->sreg[best][l] = d.s[j];
            }
            c->nstrides++;
            if (put(c, tpu_insn_encode(&d), nd->orig)) goto fail;
        }
    }
    for (unsigned r = 0; r < nr; r++) c->lru[phys[r]] = ++c->tick;
    for (uint32_t s = 0; s < nd->nslots; s++)
        e.slotreg[s] = e.slotreg[s] ? (uint8_t)phys[e.slotreg[s] - 1] : 0;
chain:
    /* the hoisted chain */
    e.hoist[0] = idx;
    e.nhoist = 1;
    for (long h; e.nhoist < TPU_LOOP_LEVELS && (h = only_loop(c, &NODE(c, e.hoist[e.nhoist - 1]))) >= 0;)
        e.hoist[e.nhoist++] = (uint32_t)h;
    size_t lpc = c->out.n;
    for (unsigned h = 0; h < e.nhoist; h++) {
        tpu_insn_t z = {{0, 0, 0, 0}};
        c->nloops++;
        if (put(c, z, nd->orig)) goto fail;
    }
    if (emit_body(c, &e, idx, 0)) goto fail;
    for (unsigned h = 0; h < e.nhoist; h++) {
        tpu_dinsn_t d;
        memset(&d, 0, sizeof d);
        d.opcode = TPU_OP_LOOP;
        d.level = h;
        d.n = NODE(c, e.hoist[h]).count;
        d.skip = (unsigned)(e.body_pc[h] - (lpc + h));
        d.body = blen(c, &e, e.hoist[h]);
        ((tpu_insn_t *)c->out.p)[lpc + h] = tpu_insn_encode(&d);
    }
    free(e.slotreg);
    free(e.rs);
    free(e.rs0);
    return 0;
fail:
    free(e.slotreg);
    free(e.rs);
    free(e.rs0);
    return -1;
}

/* Static instructions of a rolled list, a stride per register of each nest counted */
static uint64_t list_cost(ctx_t *c, const vec_t *l)
{
    uint64_t n = 0;
    for (size_t j = 0; j < l->n; j++) {
        const node_t *nd = &NODE(c, ((const uint32_t *)l->p)[j]);
        n += nd->len;
        if (nd->count) {
            regc_t rc[TPU_XREGS + 1];
            const uint8_t *mf = mod_flags(c, SLOTS(c, nd), nd->nslots);
            if (!mf) return UINT64_MAX;
            const int32_t *v = (const int32_t *)c->vecs.p + VL * nd->slot0;
            const uint8_t *en = (const uint8_t *)c->encl.p + nd->slot0;
            n += nd->share ? share_need(c, (const uint32_t *)c->kids.p + nd->child0, nd->nchild,
                                        v, en, mf, TPU_XREGS, NULL, NULL)
                           : reg_need(v, en, mf, nd->nslots, rc, TPU_XREGS, NULL);
        }
    }
    return n;
}

/* The emission's state, to try a list and take it back */
typedef struct {
    size_t n, nloops, nstrides;
    int32_t sreg[TPU_XREGS][TPU_LOOP_LEVELS];
    uint8_t smod[TPU_XREGS];
    unsigned lru[TPU_XREGS], tick;
} emstate_t;

static emstate_t em_save(const ctx_t *c)
{
    emstate_t s;
    s.n = c->out.n;
    s.nloops = c->nloops;
    s.nstrides = c->nstrides;
    memcpy(s.sreg, c->sreg, sizeof s.sreg);
    memcpy(s.smod, c->smod, sizeof s.smod);
    memcpy(s.lru, c->lru, sizeof s.lru);
    s.tick = c->tick;
    return s;
}

static void em_restore(ctx_t *c, const emstate_t *s)
{
    c->out.n = c->orig.n = s->n;
    c->nloops = s->nloops;
    c->nstrides = s->nstrides;
    memcpy(c->sreg, s->sreg, sizeof s->sreg);
    memcpy(c->smod, s->smod, sizeof s->smod);
    memcpy(c->lru, s->lru, sizeof s->lru);
    c->tick = s->tick;
}

/* Emits a rolled list: its instructions, its nests. 0 or -1. */
static int emit_list(ctx_t *c, const vec_t *l)
{
    for (size_t j = 0; j < l->n; j++) {
        uint32_t id = ((const uint32_t *)l->p)[j];
        const node_t *nd = &NODE(c, id);
        if (!nd->count) {
            if (put(c, c->in[nd->orig], nd->orig)) return -1;
        } else if (emit_nest(c, id)) {
            return -1;
        }
    }
    return 0;
}

/* Rolls l1 in place with the three rules (the shortest period at each position; the period
   that covers most; periods from short to long), the cheapest result kept. 0 or -1. */
static int roll_best(ctx_t *c, vec_t *l1, const rctx_t *r0)
{
    if (l1->n < 2) return 0;
    vec_t la = {0, 0, 0, sizeof(uint32_t)}, lb = {0, 0, 0, sizeof(uint32_t)};
    vec_t lc = {0, 0, 0, sizeof(uint32_t)};
    const int look = l1->n <= LOOK_LIST;
    if (vpush(&la, l1->p, l1->n) || vpush(&lb, l1->p, l1->n) ||
        (look && vpush(&lc, l1->p, l1->n))) {
        free(la.p); free(lb.p); free(lc.p);
        return -1;
    }
    rule_cover = 0;
    rule_grow = 0;
    int e = roll_list(c, l1, r0);
    rule_cover = 1;
    e |= roll_list(c, &la, r0);
    rule_cover = 0;
    rule_grow = 1;
    e |= roll_list(c, &lb, r0);
    rule_grow = 0;
    if (look) {
        rule_look = 1;
        e |= roll_list(c, &lc, r0);
        rule_look = 0;
    }
    if (!e) {
        if (list_cost(c, &la) < list_cost(c, l1)) { vec_t t = *l1; *l1 = la; la = t; }
        if (list_cost(c, &lb) < list_cost(c, l1)) { vec_t t = *l1; *l1 = lb; lb = t; }
        if (look && list_cost(c, &lc) < list_cost(c, l1)) { vec_t t = *l1; *l1 = lc; lc = t; }
    }
    free(la.p);
    free(lb.p);
    free(lc.p);
    return e ? -1 : 0;
}

/* Runs of whole parts (a model's layers) that repeat: a ResNet's identical blocks, each a
   few layers, whose rolled lists are the same but for addresses that advance by a constant
   from one block to the next. Each part's start is tried with groups of 1 .. MAX_GROUP parts
   as the period; the runs are chosen by a dynamic program over the parts for the fewest
   static instructions (a stage's first block often differs; a later start with one block
   as the body beats pairs of blocks from the first); such a loop's layers share registers
   (share_need). The parts come rolled twice: with every loop level (r[0]) and with one
   level fewer (r[1]), for the layers whose own nests take all six; a run is taken from the
   first where it fits. Parts outside every run keep r[0]'s lists. 0 or -1 (memory). */
#define MAX_GROUP 16
typedef struct {
    const uint32_t *list;
    size_t n;
    const size_t *pst; /* part q's first node; pst[np] = n */
    uint64_t *sg, *ph, *pw;
} plist_t;

static int plist_hash(ctx_t *c, plist_t *l, const rctx_t *rc)
{
    const uint64_t B = 0x100000001B3ull * 2 + 1;
    l->sg = malloc((l->n + 1) * sizeof *l->sg);
    l->ph = malloc((l->n + 1) * sizeof *l->ph);
    l->pw = malloc((l->n + 2) * sizeof *l->pw);
    if (!l->sg || !l->ph || !l->pw) { c->oom = 1; return -1; }
    l->ph[0] = 0;
    l->pw[0] = 1;
    for (size_t i = 0; i < l->n; i++) {
        l->sg[i] = ctx_sig(c, l->list[i], rc);
        l->ph[i + 1] = l->ph[i] * B + l->sg[i];
    }
    for (size_t i = 1; i <= l->n + 1; i++) l->pw[i] = l->pw[i - 1] * B;
    return 0;
}

/* The static instructions of nodes [i, i + k) of a list, with a guess of their strides */
static uint64_t nodes_len(ctx_t *c, const uint32_t *list, size_t i, size_t k)
{
    uint64_t n = 0;
    for (size_t q = 0; q < k; q++) {
        const node_t *nd = &NODE(c, list[i + q]);
        n += nd->len + (nd->count ? 4 : 0);
    }
    return n;
}

static int roll_parts(ctx_t *c, plist_t *r, size_t np, vec_t *out, const rctx_t *rc)
{
    vec_t dv = {0, 0, 0, sizeof(int32_t)};
    /* best[p]: the least static instructions for parts p .. np-1; at p, a run of C groups of
       g parts from list v (C = 0: part p as it is) */
    uint64_t *best = malloc((np + 1) * sizeof *best);
    uint32_t *ch = calloc(np + 1, 3 * sizeof *ch);
    if (!best || !ch) { c->oom = 1; goto out; }
    for (int v = 0; v < 2; v++)
        if (plist_hash(c, &r[v], rc)) goto out;
    best[np] = 0;
    for (size_t p = np; p-- > 0;) {
        const plist_t *l0 = &r[0];
        best[p] = nodes_len(c, l0->list, l0->pst[p], l0->pst[p + 1] - l0->pst[p]) + best[p + 1];
        ch[3 * p] = 0;
        for (int v = 0; v < 2; v++) {
            const plist_t *l = &r[v];
            const size_t i = l->pst[p];
            for (size_t g = 1; g <= MAX_GROUP && p + 2 * g <= np; g++) {
                const size_t k = l->pst[p + g] - i;
                uint32_t C = run_count(c, l->list, l->sg, l->n, i, k, l->ph, l->pw, &dv);
                if (c->oom) goto out;
                /* whole parts only */
                while (C >= 2 && (p + (size_t)C * g > np || l->pst[p + (size_t)C * g] != i + (size_t)C * k))
                    C--;
                if (C < 2) continue;
                uint64_t P = 0;
                for (size_t q = 0; q < k; q++) P += NODE(c, l->list[i + q]).dyn;
                if (make_loop(c, l->list, i, k, C, P, rc->budget, 0, 1) < 0) {
                    if (c->oom) goto out;
                    continue;
                }
                const uint64_t body = nodes_len(c, l->list, i, k) + 1 + 2 * g;
                for (uint32_t cc = 2; cc <= C; cc++)
                    if (body + best[p + (size_t)cc * g] < best[p]) {
                        best[p] = body + best[p + (size_t)cc * g];
                        ch[3 * p] = cc;
                        ch[3 * p + 1] = (uint32_t)g;
                        ch[3 * p + 2] = (uint32_t)v;
                    }
            }
        }
    }
    for (size_t p = 0; p < np;) {
        const uint32_t C = ch[3 * p], g = ch[3 * p + 1];
        if (!C) {
            const plist_t *l = &r[0];
            if (vpush(out, l->list + l->pst[p], l->pst[p + 1] - l->pst[p])) { c->oom = 1; goto out; }
            p++;
            continue;
        }
        const plist_t *l = &r[ch[3 * p + 2]];
        const size_t i = l->pst[p], k = l->pst[p + g] - i;
        uint64_t P = 0;
        for (size_t q = 0; q < k; q++) P += NODE(c, l->list[i + q]).dyn;
        long id = make_loop(c, l->list, i, k, C, P, rc->budget, 1, 1);
        if (id < 0) { c->oom = 1; goto out; }
        uint32_t u = (uint32_t)id;
        if (vpush(out, &u, 1)) { c->oom = 1; goto out; }
        p += (size_t)C * g;
    }
out:
    for (int v = 0; v < 2; v++) { free(r[v].sg); free(r[v].ph); free(r[v].pw); }
    free(dv.p);
    free(best);
    free(ch);
    return c->oom ? -1 : 0;
}

/* Rolls one region [a, b) of the stream: each part between soft cuts (cut[i] == 4: a layer's
   boundary) on its own first, then the parts' rolled lists together, so that a nest crosses
   parts only where whole repetitions of them line up (layers of one shape in a row); the
   cheaper of the two is kept. */
static int roll_region(ctx_t *c, size_t a, size_t b, const uint8_t *cut)
{
    vec_t l1 = {0, 0, 0, sizeof(uint32_t)}, part = {0, 0, 0, sizeof(uint32_t)};
    size_t nodes0 = c->nodes.n, slots0 = c->slots.n, kids0 = c->kids.n;
    size_t nparts = 0;
    int rc = -1;
    vec_t pst = {0, 0, 0, sizeof(size_t)}; /* each part's first node in l1 */
    vec_t raw = {0, 0, 0, sizeof(size_t)};  /* each part's instruction nodes: first, count */
    rctx_t r0;
    memset(&r0, 0, sizeof r0);
    r0.budget = TPU_LOOP_LEVELS;
    for (size_t i = a; i < b; i++) {
        node_t nd;
        memset(&nd, 0, sizeof nd);
        nd.sig = c->key[i];
        nd.len = 1;
        nd.dyn = 1;
        nd.orig = i;
        nd.slot0 = c->slots.n;
        for (uint32_t k = 0; k < SPI; k++)
            if (c->opk[SPI * i + k]) {
                uint32_t s = (uint32_t)(SPI * i + k);
                /* vec/encl/modes kept at the slots' offsets (unused for instructions) */
                if (vpush(&c->slots, &s, 1) || vpush(&c->vecs, NULL, VL) || vpush(&c->encl, NULL, 1) ||
                    vpush(&c->modes, NULL, 1))
                    goto out;
                nd.nslots++;
            }
        uint32_t id = (uint32_t)c->nodes.n;
        if (vpush(&c->nodes, &nd, 1) || vpush(&part, &id, 1)) goto out;
        if (i + 1 == b || (cut && cut[i + 1] == 4)) { /* the part ends: rolled on its own */
            const size_t at = l1.n, rw[2] = {((uint32_t *)part.p)[0], part.n};
            if (vpush(&raw, rw, 2) || roll_best(c, &part, &r0) || vpush(&pst, &at, 1) ||
                vpush(&l1, part.p, part.n))
                goto out;
            part.n = 0;
            nparts++;
        }
    }
    if (nparts > 1) {
        /* the parts rolled together (lx), and runs of whole parts (lp): the shortest
           emission (strides included) of the three kept */
        vec_t lx = {0, 0, 0, sizeof(uint32_t)}, lp = {0, 0, 0, sizeof(uint32_t)};
        vec_t l5 = {0, 0, 0, sizeof(uint32_t)}, pst5 = {0, 0, 0, sizeof(size_t)};
        /* every part again with one loop level fewer, for roll_parts */
        rctx_t r5 = r0;
        r5.budget = TPU_LOOP_LEVELS - 1;
        int bad = vpush(&lx, l1.p, l1.n) || roll_best(c, &lx, &r0) || vpush(&pst, &l1.n, 1);
        int deep = 0; /* a part whose nests take every level (none with tags: no run) */
        for (size_t j = 0; j < l1.n; j++) deep |= NODE(c, ((uint32_t *)l1.p)[j]).depth >= TPU_LOOP_LEVELS;
        for (size_t q = 0; q < nparts && !bad && deep && !c->tagged; q++) {
            const size_t *rw = (const size_t *)raw.p + 2 * q;
            part.n = 0;
            for (size_t j = 0; j < rw[1] && !bad; j++) {
                uint32_t id = (uint32_t)(rw[0] + j);
                bad = vpush(&part, &id, 1);
            }
            const size_t at = l5.n;
            bad = bad || roll_best(c, &part, &r5) || vpush(&pst5, &at, 1) ||
                  vpush(&l5, part.p, part.n);
        }
        bad = bad || vpush(&pst5, &l5.n, 1);
        if (!bad && !c->tagged) {
            plist_t pl[2] = {{l1.p, l1.n, pst.p, NULL, NULL, NULL},
                             {deep ? l5.p : l1.p, deep ? l5.n : l1.n, deep ? pst5.p : pst.p, NULL, NULL, NULL}};
            bad = roll_parts(c, pl, nparts, &lp, &r0);
        }
        free(l5.p);
        free(pst5.p);
        if (bad) {
            free(lx.p); free(lp.p);
            goto out;
        }
        const vec_t *cand[3] = {&l1, &lx, &lp}, *best = &l1;
        const emstate_t s0 = em_save(c);
        size_t nbest = SIZE_MAX;
        for (int q = 0; q < 3; q++) {
            if (q && (cand[q]->n >= l1.n || (q == 2 && c->tagged))) continue; /* lp: not made */
            em_restore(c, &s0);
            if (emit_list(c, cand[q])) { free(lx.p); free(lp.p); goto out; }
            if (c->out.n - s0.n < nbest) { nbest = c->out.n - s0.n; best = cand[q]; }
        }
        em_restore(c, &s0);
        rc = emit_list(c, best);
        free(lx.p);
        free(lp.p);
        goto out;
    }
    if (emit_list(c, &l1)) goto out;
    rc = 0;
out:
    if (rc) c->oom = 1;
    free(l1.p);
    free(part.p);
    free(pst.p);
    free(raw.p);
    /* the region's nodes are no longer needed */
    c->nodes.n = nodes0;
    c->slots.n = slots0;
    c->vecs.n = VL * slots0;
    c->encl.n = slots0;
    c->modes.n = slots0;
    c->kids.n = kids0;
    return rc;
}

int tpuc_loops_expand_check(const tpu_insn_t *prog, size_t nprog, const size_t *starts,
                            size_t nstarts, const tpu_insn_t *ref, size_t nref, uint64_t *ndisp,
                            char *err, size_t errlen)
{
    uint64_t nd = 0;
    tpu_seq_t s;
    tpu_seq_reset(&s);
    size_t k = 0, si = 0;
    uint64_t steps = 0, limit = 2 * (uint64_t)nref + (uint64_t)nprog + 16;
    for (uint32_t pc = 0; pc < nprog;) {
        while (si < nstarts && starts[si] < pc) si++;
        if (si < nstarts && starts[si] == pc) tpu_seq_reset(&s); /* a part started on its own */
        tpu_dinsn_t d;
        tpu_insn_decode(prog[pc], &d);
        if (d.opcode == TPU_OP_LOOP && tpu_seq_check(&s, &d, pc, (unsigned)nprog) != 0) {
            tpuc_err(err, errlen, "internal error: the loop pass wrote an ill-formed loop at pc %u", pc);
            return -1;
        }
        if (d.opcode != TPU_OP_LOOP && d.opcode != TPU_OP_STRIDE) {
            tpu_seq_resolve(&s, &d);
            tpu_insn_t w = tpu_insn_encode(&d);
            if (k >= nref || memcmp(&w, &ref[k], sizeof w) != 0) {
                tpuc_err(err, errlen, "internal error: the loop pass changed dynamic instruction "
                         "%zu (pc %u)", k, pc);
                return -1;
            }
            k++;
        } else {
            nd++;
        }
        if (++steps > limit) {
            tpuc_err(err, errlen, "internal error: the rolled program does not end");
            return -1;
        }
        pc = tpu_seq_step(&s, &d, pc);
    }
    if (k != nref) {
        tpuc_err(err, errlen, "internal error: the rolled program runs %zu instructions, not %zu",
                 k, nref);
        return -1;
    }
    if (ndisp) *ndisp = nd;
    return 0;
}

int tpuc_loops(const tpu_insn_t *in, size_t n, const uint8_t *cut, const uint16_t *tag,
               unsigned wk, tpu_insn_t **out, size_t *nout, size_t **orig, char *err,
               size_t errlen)
{
    ctx_t c;
    memset(&c, 0, sizeof c);
    c.in = in;
    c.n = n;
    c.tagged = tag != NULL;
    c.nodes.esz = sizeof(node_t);
    c.slots.esz = sizeof(uint32_t);
    c.vecs.esz = sizeof(int32_t);
    c.encl.esz = 1;
    c.modes.esz = sizeof(int32_t);
    c.kids.esz = sizeof(uint32_t);
    c.mfb.esz = 1;
    vec_t keep_out = {0, 0, 0, sizeof(tpu_insn_t)}, keep_orig = {0, 0, 0, sizeof(size_t)};
    const unsigned wk_ = wk <= 16 ? wk : 0;
    wmodk = wk_;
    c.out.esz = sizeof(tpu_insn_t);
    c.orig.esz = sizeof(size_t);
    *out = NULL;
    *orig = NULL;
    *nout = 0;
    c.opv = calloc(SPI * n + 1, sizeof *c.opv);
    c.opk = calloc(SPI * n + 1, 1);
    c.key = calloc(n + 1, sizeof *c.key);
    if (!c.opv || !c.opk || !c.key) { c.oom = 1; goto done; }
    for (size_t i = 0; i < n; i++) {
        tpu_dinsn_t d;
        tpu_insn_decode(in[i], &d);
        int any = d.opcode == TPU_OP_LOOP || d.opcode == TPU_OP_STRIDE ||
                  d.xsel[0] || d.xsel[1] || d.xsel[2] || d.acc_first;
        if (any) {
            tpuc_err(err, errlen, "internal error: the loop pass takes a straight-line program "
                     "(pc %zu)", i);
            free(c.opv); free(c.opk); free(c.key);
            return -1;
        }
        for (unsigned k = 0; k < 3; k++) {
            uint32_t v;
            int kind;
            if (slot_get(&d, k, &v, &kind)) {
                const int wrow = (d.opcode == TPU_OP_LW && k == 0) ||
                                 (d.opcode == TPU_OP_DMA_IN && d.mem == TPU_MEM_WMEM && k == 1);
                c.opv[SPI * i + k] = v;
                c.opk[SPI * i + k] = (uint8_t)(kind ? 2 : wmodk && wrow ? K_WMOD : 1);
                slot_set(&d, k, 0);
            }
        }
        if (d.opcode == TPU_OP_MATMUL) { /* the flag: a mode slot, not in the key */
            c.opv[SPI * i + 3] = d.accumulate;
            c.opk[SPI * i + 3] = K_MODE;
            d.accumulate = 0;
        }
        tpu_insn_t z = tpu_insn_encode(&d);
        uint64_t h = 0x51ED27ull;
        for (unsigned w = 0; w < 4; w++) h = mix(h, z.w[w]);
        if (tag) h = mix(h, tag[i]);
        c.key[i] = h ? h : 1;
    }
    for (size_t a = 0; a < n && !c.oom;) {
        size_t b = a + 1;
        while (b < n && !(cut && cut[b] && cut[b] != 4)) b++;
        if (cut && cut[a] == 2) { /* a START: the strides and moduli are 0 again */
            memset(c.sreg, 0, sizeof c.sreg);
            memset(c.smod, 0, sizeof c.smod);
        }
        /* with the WMEM modulus and without (a modular register serves WMEM rows only, which
           can cost registers elsewhere): the shorter kept */
        wmodk = 0;
        wmask = 0;
        if (wk_) {
            const emstate_t s0 = em_save(&c);
            wmodk = wk_;
            wmask = (1u << wk_) - 1u;
            if (roll_region(&c, a, b, cut)) break;
            const size_t nmod = c.out.n - s0.n;
            const emstate_t s1 = em_save(&c);
            keep_out.n = keep_orig.n = 0;
            if (vpush(&keep_out, (tpu_insn_t *)c.out.p + s0.n, nmod) ||
                vpush(&keep_orig, (size_t *)c.orig.p + s0.n, nmod)) {
                c.oom = 1;
                break;
            }
            em_restore(&c, &s0);
            wmodk = 0;
            wmask = 0;
            if (roll_region(&c, a, b, cut)) break;
            if (c.out.n - s0.n > nmod) { /* the modular one back: it was shorter */
                em_restore(&c, &s0);
                if (vpush(&c.out, keep_out.p, nmod) || vpush(&c.orig, keep_orig.p, nmod)) {
                    c.oom = 1;
                    break;
                }
                em_restore(&c, &s1);
            }
            a = b;
            continue;
        }
        if (roll_region(&c, a, b, cut)) break;
        a = b;
    }
done:
    free(c.opv); free(c.opk); free(c.key);
    free(c.nodes.p); free(c.slots.p); free(c.vecs.p); free(c.encl.p); free(c.modes.p);
    free(c.kids.p);
    free(c.mfb.p);
    free(keep_out.p);
    free(keep_orig.p);
    if (c.oom) {
        free(c.out.p);
        free(c.orig.p);
        tpuc_err(err, errlen, "out of memory (loop pass)");
        return -1;
    }
    *out = c.out.p;
    *nout = c.out.n;
    *orig = c.orig.p;
    return 0;
}
