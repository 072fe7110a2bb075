/* SPDX-License-Identifier: Apache-2.0 */
/* The WL and MX units: lw (a weight tile into the next bank, transposed or not) and matmul
   (one MXU pass per UB row, seeded with the ACC row or -0), with the timing of docs/isa.md
   "Timing": bank alternation, bank-busy B and latency L of tpu_mxu_timing, the accumulate RAW
   window of L + 2 cycles, the ACC write in t + L + 1. */
#include "core_internal.h"
#include "tpu/numerics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MX_DENSE_N 32 /* N up to which the dense kernel (core_mx_dense.c) runs instead */

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
/* One MXU pass per row on host floats, the same bits as fp32_mac (the argument of
   matmul_fast.c: with MXCSR DAZ | FTZ, RNE, exceptions masked, a bf16 x bf16 product is exact
   or overflows/flushes exactly as bf16_mul does, -ffp-contract=off keeps the add separate, and
   each output's k order stays sequential; a NaN result is canonicalised on the way out).
   Kept out of line so no floating-point operation moves across the MXCSR writes.

   Skipped products. Step k adds x[k] * w[k][j] to p[j]. When that product is a signed zero
   for every j -- x[k] is zero or subnormal (DAZ: a zero) and row k of the tile has no Inf or
   NaN, or row k is all zeros and subnormals and x[k] is finite -- the step leaves p[j]
   unchanged unless p[j] is zero or subnormal: a NaN, an Inf or a normal p plus a signed zero
   is p itself under RNE. (A zero p may change sign, -0 + +0 = +0, and a subnormal p becomes
   a zero under DAZ.) So a run of such steps is skipped when no lane of p holds a zero or
   subnormal other than +0 (+0 plus a signed zero is +0); otherwise the run is done step by
   step as before. Every step that is done is the same host operation in the same k order. */
static __attribute__((noinline)) void mx_rows_host(unsigned n, unsigned rows,
                                                   const uint32_t *const *a,
                                                   const uint32_t *const *seed,
                                                   const float *restrict w, uint32_t *out)
{
    float p[256];
    for (unsigned m = 0; m < rows; m++) {
        for (unsigned j = 0; j < n; j++) {
            uint32_t s = seed[m] ? seed[m][j] : 0x80000000u;
            memcpy(&p[j], &s, 4);
        }
        for (unsigned k = 0; k < n; k++) {
            uint32_t xb = (a[m][k] & 0xFFFFu) << 16;
            float x;
            memcpy(&x, &xb, 4);
            const float *restrict wr = w + (size_t)k * n;
            for (unsigned j = 0; j < n; j++) p[j] = p[j] + x * wr[j];
        }
        for (unsigned j = 0; j < n; j++) {
            uint32_t u;
            memcpy(&u, &p[j], 4);
            if ((u & 0x7FFFFFFFu) > 0x7F800000u) u = 0x7FC00000u;
            out[(size_t)m * n + j] = u;
        }
    }
}

/* The AVX2 kernel.

   Skippable runs. A run of skippable steps (every product a signed zero on every lane of
   the block) changes only the lanes whose p is a zero or subnormal (DAZ: a signed zero): such
   a lane ends -0 if it was negative and every product of the run is -0 (the sign of x[k]
   XOR that of w[k][j]: -0 + -0 = -0, any +0 gives +0 under RNE), else +0; every other lane
   (+0, normal, Inf, NaN) is unchanged. mx_run does exactly that with the tile's sign bits
   (wsgn), no floating point. A lane is "special" when it is a zero or subnormal other than
   +0, the lanes a run can change.

   Clean blocks. Once no lane of a block is special it stays so through any step that does
   not underflow: p + q with p not special and q = x * w (a zero, normal, Inf or NaN under
   FTZ) is +0 when the exact sum is 0 (RNE; -0 needs both -0), a NaN, an Inf or a normal,
   unless the exact sum is nonzero below 2^-126 and FTZ flushes it (or the product itself
   underflowed). So a block is checked at each run until it is found not special ("clean"),
   and its runs are skipped without a look after that; the rows of a call run with MXCSR's
   flags cleared, and if the underflow flag is set at the end the call is done again with
   every run through mx_run (exact).

   Speed. The lanes go in blocks of 32 (V = 4 vectors; the block's 16 KiB of weights at
   N = 128 stay in L1) held in registers over a row's steps, three rows at a time, then two
   (independent add chains to cover the adder's latency); a row's steps that cannot be skipped are
   listed once (ks, with their x in xs) for all blocks; a block whose weights are all zeros
   (the padding of a narrow layer) is a single run. On AVX-512 three rows go over up to four
   blocks at once, their steps fused where that gives the same bits (mx_blocks512). */
#define MX_AVX2 __attribute__((target("avx2"), always_inline)) static inline
#define MX_GROUP 64 /* rows per call at most (core_matmul_exec's groups) */

typedef struct {
    const float *w;        /* wf: w[k * ws + j] */
    size_t ws;
    const uint32_t *wzero; /* [k]: all ones when row k is all zeros and subnormals */
    const uint32_t *wfin;  /* [k]: all ones when row k has no Inf or NaN */
    const uint8_t *wzblk;  /* [j / 16]: lanes j .. j + 15 of every row zeros and subnormals */
    const uint32_t *wsgn;  /* [k * nq + q]: the sign bits of lanes 32q .. 32q + 31 of row k */
    const uint32_t *wneg;  /* [q]: lanes 32q .. 32q + 31 whose weights are all negative */
    unsigned nq;
    int z512;              /* mx_block3's steps on AVX-512 (mx_block3_512) */
    uint32_t xlo, xhi;     /* the exponent fields (x & 0x7F80) of a normal x whose products
                              with every normal weight are normal (mx_blocks512) */
} mx_bank_t;

/* 1 when a lane of p (V vectors) is a zero or subnormal other than +0 */
MX_AVX2 int mx_special(const __m256 *p, unsigned V)
{
    const __m256i em = _mm256_set1_epi32(0x7F800000);
    __m256i any = _mm256_setzero_si256();
    for (unsigned v = 0; v < V; v++) {
        __m256i b = _mm256_castps_si256(p[v]);
        __m256i z = _mm256_cmpeq_epi32(_mm256_and_si256(b, em), _mm256_setzero_si256());
        any = _mm256_or_si256(any, _mm256_and_si256(z, b));
    }
    return !_mm256_testz_si256(any, any);
}

MX_AVX2 void mx_step(__m256 *p, unsigned V, float x, const float *wr)
{
    const __m256 xv = _mm256_set1_ps(x);
    for (unsigned v = 0; v < V; v++)
        p[v] = _mm256_add_ps(p[v], _mm256_mul_ps(xv, _mm256_load_ps(wr + 8u * v)));
}

/* The skippable run k0 .. k1 - 1 on the block of lanes whose sign words are sg[k * nq], whose
   columns with only negative weights are the bits of cneg, for a row whose x are all of
   sign + when xpos: returns 1 when no lane is special after it */
MX_AVX2 int mx_run(__m256 *p, unsigned V, const uint32_t *am, const uint32_t *sg, unsigned nq,
                   uint32_t cneg, int xpos, unsigned k0, unsigned k1)
{
    const __m256i em = _mm256_set1_epi32(0x7F800000), zero = _mm256_setzero_si256();
    uint32_t zl = 0, neg = 0, plus0 = 0;
    for (unsigned v = 0; v < V; v++) {
        __m256i b = _mm256_castps_si256(p[v]);
        __m256i z = _mm256_cmpeq_epi32(_mm256_and_si256(b, em), zero);
        zl |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(z)) << (8u * v);
        neg |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(z, b))) << (8u * v);
        plus0 |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(b, zero)))
                 << (8u * v);
    }
    if ((zl & ~plus0) == 0 || k1 <= k0)
        return (zl & ~plus0) == 0;
    uint32_t acc = neg, sure = 0; /* the lanes still -0; those that stay -0 anyway */
    if (xpos) { /* every product of a negative-only column is -0 */
        sure = acc & cneg;
        acc &= ~cneg;
    }
    for (unsigned k = k0; k < k1 && acc; k++)
        acc &= sg[(size_t)k * nq] ^ (0u - ((am[k] >> 15) & 1u));
    acc |= sure;
    const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i sb = _mm256_set1_epi32((int)0x80000000u);
    for (unsigned v = 0; v < V; v++) {
        __m256i b = _mm256_castps_si256(p[v]);
        __m256i z = _mm256_cmpeq_epi32(_mm256_and_si256(b, em), zero);
        __m256i a = _mm256_set1_epi32((int)((acc >> (8u * v)) & 0xFFu));
        __m256i am8 = _mm256_cmpeq_epi32(_mm256_and_si256(a, sel), sel);
        p[v] = _mm256_castsi256_ps(_mm256_blendv_epi8(b, _mm256_and_si256(am8, sb), z));
    }
    return acc == 0;
}

/* One row on one block until it is clean (or to its end): returns the index of the first
   listed step not yet done; *next = the first step (k) not done or skipped; *clean. */
MX_AVX2 unsigned mx_prologue(__m256 *p, unsigned V, const uint32_t *am, const uint32_t *ks,
                             const float *xs, unsigned cnt, const float *w, size_t ws,
                             const uint32_t *sg, unsigned nq, uint32_t cneg, int xpos,
                             int exact, unsigned *next, int *clean)
{
    unsigned nx = 0, i = 0;
    *clean = 0;
    if (!exact && !mx_special(p, V)) {
        *clean = 1;
        *next = 0;
        return 0;
    }
    for (; i < cnt; i++) {
        unsigned k = ks[i];
        if (k > nx && mx_run(p, V, am, sg, nq, cneg, xpos, nx, k) && !exact) {
            *clean = 1;
            break;
        }
        mx_step(p, V, xs[i], w + (size_t)k * ws);
        nx = k + 1u;
    }
    *next = nx;
    return i;
}

/* rows a (and b when two) on lanes j0 .. j0 + 8V - 1, their p read from src, written to ps */
MX_AVX2 void mx_block(const mx_bank_t *bk, unsigned V, int two, unsigned n, const uint32_t *ama,
                      const uint32_t *amb, const uint32_t *ksa, const uint32_t *ksb,
                      const float *xsa, const float *xsb, unsigned cnta, unsigned cntb,
                      int xposa, int xposb, const float *srca, const float *srcb, float *psa,
                      float *psb, unsigned j0, int exact)
{
    const uint32_t cneg = bk->wneg[j0 / 32u];
    __m256 pa[4], pb[4];
    const size_t ws = bk->ws;
    const float *wj = bk->w + j0;
    const uint32_t *sg = bk->wsgn + j0 / 32u;
    for (unsigned v = 0; v < V; v++)
        pa[v] = _mm256_loadu_ps(srca + j0 + 8u * v);
    unsigned nexta, nextb = 0;
    int cla, clb = 1;
    unsigned ia = mx_prologue(pa, V, ama, ksa, xsa, cnta, wj, ws, sg, bk->nq, cneg, xposa, exact,
                              &nexta, &cla);
    if (two) {
        for (unsigned v = 0; v < V; v++)
            pb[v] = _mm256_loadu_ps(srcb + j0 + 8u * v);
        unsigned ib = mx_prologue(pb, V, amb, ksb, xsb, cntb, wj, ws, sg, bk->nq, cneg, xposb,
                                  exact, &nextb, &clb);
        unsigned both = cnta - ia < cntb - ib ? cnta - ia : cntb - ib;
        for (unsigned t = 0; t < both; t++) {
            mx_step(pa, V, xsa[ia + t], wj + (size_t)ksa[ia + t] * ws);
            mx_step(pb, V, xsb[ib + t], wj + (size_t)ksb[ib + t] * ws);
        }
        ia += both;
        ib += both;
        for (; ib < cntb; ib++)
            mx_step(pb, V, xsb[ib], wj + (size_t)ksb[ib] * ws);
        if (!clb && n > nextb)
            mx_run(pb, V, amb, sg, bk->nq, cneg, xposb, nextb, n);
        for (unsigned v = 0; v < V; v++)
            _mm256_store_ps(psb + j0 + 8u * v, pb[v]);
    }
    for (; ia < cnta; ia++)
        mx_step(pa, V, xsa[ia], wj + (size_t)ksa[ia] * ws);
    if (!cla && n > nexta)
        mx_run(pa, V, ama, sg, bk->nq, cneg, xposa, nexta, n);
    for (unsigned v = 0; v < V; v++)
        _mm256_store_ps(psa + j0 + 8u * v, pa[v]);
}

/* three rows (0, 1, 2) on lanes j0 .. j0 + 31: twelve independent add chains while all three
   have steps left, then two, then one */
typedef struct {
    const uint32_t *am;
    const uint32_t *ks;
    const float *xs;
    unsigned cnt;
    int xpos;
    const float *src; /* the p to start from (mx_rows_avx2) */
    float *ps;        /* the p at the end */
    int fma;     /* mx_block3_512 may fuse the row's steps: every product normal */
    int fresh;   /* no seed: every p starts -0 */
    unsigned lim;         /* mx_blocks512: the listed steps to do up to (a phase's end) */
    struct mx_state *st;  /* mx_blocks512: the row's state between phases */
} mx_row_t;

/* a row's state in mx_blocks512 between two phases: the next listed step, per block the first
   step not done or skipped and whether it is clean */
typedef struct mx_state {
    unsigned i, nx[4];
    int cl[4];
} mx_state_t;

MX_AVX2 void mx_block3(const mx_bank_t *bk, unsigned n, const mx_row_t *r, unsigned j0, int exact)
{
    const unsigned V = 4;
    const uint32_t cneg = bk->wneg[j0 / 32u];
    __m256 p0[4], p1[4], p2[4];
    const size_t ws = bk->ws;
    const float *wj = bk->w + j0;
    const uint32_t *sg = bk->wsgn + j0 / 32u;
    unsigned nx[3], i[3];
    int cl[3];
    for (unsigned v = 0; v < V; v++) {
        p0[v] = _mm256_loadu_ps(r[0].src + j0 + 8u * v);
        p1[v] = _mm256_loadu_ps(r[1].src + j0 + 8u * v);
        p2[v] = _mm256_loadu_ps(r[2].src + j0 + 8u * v);
    }
    i[0] = mx_prologue(p0, V, r[0].am, r[0].ks, r[0].xs, r[0].cnt, wj, ws, sg, bk->nq, cneg,
                       r[0].xpos, exact, &nx[0], &cl[0]);
    i[1] = mx_prologue(p1, V, r[1].am, r[1].ks, r[1].xs, r[1].cnt, wj, ws, sg, bk->nq, cneg,
                       r[1].xpos, exact, &nx[1], &cl[1]);
    i[2] = mx_prologue(p2, V, r[2].am, r[2].ks, r[2].xs, r[2].cnt, wj, ws, sg, bk->nq, cneg,
                       r[2].xpos, exact, &nx[2], &cl[2]);
#define MX_S(P, R) mx_step(P, V, r[R].xs[i[R]], wj + (size_t)r[R].ks[i[R]] * ws), i[R]++
    for (;;) {
        unsigned left0 = r[0].cnt - i[0], left1 = r[1].cnt - i[1], left2 = r[2].cnt - i[2];
        unsigned m3 = left0 < left1 ? left0 : left1;
        m3 = m3 < left2 ? m3 : left2;
        if (m3 > 0) {
            for (unsigned t = 0; t < m3; t++) {
                MX_S(p0, 0);
                MX_S(p1, 1);
                MX_S(p2, 2);
            }
            continue;
        }
        /* one row is done: the other two together, then alone */
        if (left0 == 0) {
            for (; i[1] < r[1].cnt && i[2] < r[2].cnt;) { MX_S(p1, 1); MX_S(p2, 2); }
        } else if (left1 == 0) {
            for (; i[0] < r[0].cnt && i[2] < r[2].cnt;) { MX_S(p0, 0); MX_S(p2, 2); }
        } else {
            for (; i[0] < r[0].cnt && i[1] < r[1].cnt;) { MX_S(p0, 0); MX_S(p1, 1); }
        }
        while (i[0] < r[0].cnt) MX_S(p0, 0);
        while (i[1] < r[1].cnt) MX_S(p1, 1);
        while (i[2] < r[2].cnt) MX_S(p2, 2);
        break;
    }
#undef MX_S
    if (!cl[0] && n > nx[0])
        mx_run(p0, V, r[0].am, sg, bk->nq, cneg, r[0].xpos, nx[0], n);
    if (!cl[1] && n > nx[1])
        mx_run(p1, V, r[1].am, sg, bk->nq, cneg, r[1].xpos, nx[1], n);
    if (!cl[2] && n > nx[2])
        mx_run(p2, V, r[2].am, sg, bk->nq, cneg, r[2].xpos, nx[2], n);
    for (unsigned v = 0; v < V; v++) {
        _mm256_store_ps(r[0].ps + j0 + 8u * v, p0[v]);
        _mm256_store_ps(r[1].ps + j0 + 8u * v, p1[v]);
        _mm256_store_ps(r[2].ps + j0 + 8u * v, p2[v]);
    }
}

/* mx_block3 with its steps on AVX-512, on NB consecutive blocks of 32 lanes at once (j0 .. j0
   + 32 NB - 1, NB = 1, 2 or 4): each block's prologue and closing run as there (on the block as
   four 8-lane vectors); between them, for each row, a block whose prologue stopped earlier
   first catches up alone to the step where the row's latest one stopped, then the row's steps
   go on all NB blocks as 2 NB 16-lane vectors (one step number and one x loaded for all of
   them). Per lane the same steps in the same k order as mx_block3, so the same bits, with
   fewer instructions and loads.

   Fused steps (fma, every row's mx_row_t.fma): a step's product x * w is exact in fp32 when it
   is normal (8-bit significands: at most 16 bits), so add(p, mul(x, w)) rounds the exact p +
   x * w once, as a fused multiply-add does, with the same FTZ of the sum and the same flags
   (the underflow redo sees the same flag); a zero, Inf or NaN x or w gives the same zero, Inf
   or NaN product in both (DAZ applies to the FMA's operands as to mul's). The product of normal
   x and w with biased exponents ex and ew lies in [2^(ex + ew - 254), 2^(ex + ew - 252)): normal
   and finite when 128 <= ex + ew <= 380, which mx_rows_avx2 checks with the row's and the
   tile's smallest and largest exponents; a row outside (a product that could flush or
   overflow) takes the separate mul and add. Out of line (an AVX-512 function is not inlined
   into the AVX2 code). */
#define MX_512 __attribute__((target("avx512f"), always_inline)) static inline

MX_512 void mx_step512(__m512 *p, unsigned nv, float x, const float *wr, int fma)
{
    const __m512 xv = _mm512_set1_ps(x);
    for (unsigned v = 0; v < nv; v++)
        p[v] = fma ? _mm512_fmadd_ps(xv, _mm512_loadu_ps(wr + 16u * v), p[v])
                   : _mm512_add_ps(p[v], _mm512_mul_ps(xv, _mm512_loadu_ps(wr + 16u * v)));
}

MX_512 void mx_join(__m512 *z, const __m256 *p)
{
    for (unsigned h = 0; h < 2; h++)
        z[h] = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(p[2u * h])),
                                                   _mm256_castps_pd(p[2u * h + 1u]), 1));
}

MX_512 void mx_split(__m256 *p, const __m512 *z)
{
    for (unsigned h = 0; h < 2; h++) {
        p[2u * h] = _mm512_castps512_ps256(z[h]);
        p[2u * h + 1u] = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(z[h]), 1));
    }
}

/* A row's start on its NB blocks at once (z, 2 NB vectors) when none needs a prologue: every
   lane of p not special (the blocks are clean), or a fresh row (every p -0) whose first listed
   step's products are none of them zero: -0 plus a product that is not zero is the product
   (whatever the skipped steps before made of the -0s), so that step is done as the product
   alone and the blocks are clean after it. Returns the next listed step, or -1 when a block
   needs mx_prologue (then z is not set). */
MX_512 int mx_start512(__m512 *z, unsigned NB, const mx_row_t *r, const float *wj, size_t ws,
                       unsigned j0)
{
    const __m512i em = _mm512_set1_epi32(0x7F800000);
    if (r->fresh) {
        if (r->cnt == 0)
            return -1;
        const __m512 xv = _mm512_set1_ps(r->xs[0]);
        const float *wr = wj + (size_t)r->ks[0] * ws;
        __mmask16 zl = 0;
        for (unsigned v = 0; v < 2u * NB; v++) {
            z[v] = _mm512_mul_ps(xv, _mm512_loadu_ps(wr + 16u * v));
            zl |= _mm512_testn_epi32_mask(_mm512_castps_si512(z[v]), em);
        }
        return zl ? -1 : 1;
    }
    __mmask16 sp = 0;
    for (unsigned v = 0; v < 2u * NB; v++) {
        __m512i b = _mm512_castps_si512(_mm512_loadu_ps(r->src + j0 + 16u * v));
        z[v] = _mm512_castsi512_ps(b);
        sp |= _mm512_testn_epi32_mask(b, em) & _mm512_test_epi32_mask(b, b);
    }
    return sp ? -1 : 0;
}

MX_512 void mx_blocks512(const mx_bank_t *bk, unsigned n, const mx_row_t *r, unsigned j0,
                         int exact, unsigned NB, int fma, int first, int last)
{
    const size_t ws = bk->ws;
    const float *wj = bk->w + j0;
    __m512 z0[8], z1[8], z2[8];
    __m512 *z[3] = { z0, z1, z2 };
    unsigned nx[3][4], i[3], lim[3];
    int cl[3][4];
    for (unsigned q = 0; q < 3u && !first; q++) { /* a later phase: where the last one stopped */
        for (unsigned v = 0; v < 2u * NB; v++)
            z[q][v] = _mm512_load_ps(r[q].ps + j0 + 16u * v);
        i[q] = r[q].st->i;
        for (unsigned h = 0; h < NB; h++) {
            nx[q][h] = r[q].st->nx[h];
            cl[q][h] = r[q].st->cl[h];
        }
    }
    for (unsigned q = 0; q < 3u && first; q++) {
        int st = exact ? -1 : mx_start512(z[q], NB, &r[q], wj, ws, j0);
        if (st >= 0) {
            i[q] = (unsigned)st;
            for (unsigned h = 0; h < NB; h++) {
                cl[q][h] = 1;
                nx[q][h] = 0;
            }
            continue;
        }
        unsigned ib[4];
        i[q] = 0;
        for (unsigned h = 0; h < NB; h++) {
            unsigned jb = j0 + 32u * h;
            __m256 p[4];
            for (unsigned v = 0; v < 4u; v++)
                p[v] = _mm256_loadu_ps(r[q].src + jb + 8u * v);
            ib[h] = mx_prologue(p, 4, r[q].am, r[q].ks, r[q].xs, r[q].cnt, bk->w + jb, ws,
                                bk->wsgn + jb / 32u, bk->nq, bk->wneg[jb / 32u], r[q].xpos,
                                exact, &nx[q][h], &cl[q][h]);
            mx_join(z[q] + 2u * h, p);
            i[q] = ib[h] > i[q] ? ib[h] : i[q];
        }
        for (unsigned h = 0; h < NB; h++) /* the blocks behind catch up */
            for (unsigned t = ib[h]; t < i[q]; t++)
                mx_step512(z[q] + 2u * h, 2, r[q].xs[t], wj + 32u * h + (size_t)r[q].ks[t] * ws, fma);
    }
    for (unsigned q = 0; q < 3u; q++) /* a prologue may have gone past the phase's end */
        lim[q] = r[q].lim > i[q] ? r[q].lim : i[q];
#define MX_S(Z, R) mx_step512(Z, 2u * NB, r[R].xs[i[R]], wj + (size_t)r[R].ks[i[R]] * ws, fma), i[R]++
    for (;;) {
        unsigned left0 = lim[0] - i[0], left1 = lim[1] - i[1], left2 = lim[2] - i[2];
        unsigned m3 = left0 < left1 ? left0 : left1;
        m3 = m3 < left2 ? m3 : left2;
        if (m3 > 0) {
            for (unsigned t = 0; t < m3; t++) {
                MX_S(z0, 0);
                MX_S(z1, 1);
                MX_S(z2, 2);
            }
            continue;
        }
        /* one row is done: the other two together, then alone */
        if (left0 == 0) {
            for (; i[1] < lim[1] && i[2] < lim[2];) { MX_S(z1, 1); MX_S(z2, 2); }
        } else if (left1 == 0) {
            for (; i[0] < lim[0] && i[2] < lim[2];) { MX_S(z0, 0); MX_S(z2, 2); }
        } else {
            for (; i[0] < lim[0] && i[1] < lim[1];) { MX_S(z0, 0); MX_S(z1, 1); }
        }
        while (i[0] < lim[0]) MX_S(z0, 0);
        while (i[1] < lim[1]) MX_S(z1, 1);
        while (i[2] < lim[2]) MX_S(z2, 2);
        break;
    }
#undef MX_S
    for (unsigned q = 0; q < 3u && !last; q++) { /* kept for the next phase */
        for (unsigned v = 0; v < 2u * NB; v++)
            _mm512_store_ps(r[q].ps + j0 + 16u * v, z[q][v]);
        r[q].st->i = i[q];
        for (unsigned h = 0; h < NB; h++) {
            r[q].st->nx[h] = nx[q][h];
            r[q].st->cl[h] = cl[q][h];
        }
    }
    for (unsigned q = 0; q < 3u && last; q++)
        for (unsigned h = 0; h < NB; h++) {
            unsigned jb = j0 + 32u * h;
            __m256 p[4];
            mx_split(p, z[q] + 2u * h);
            if (!cl[q][h] && n > nx[q][h])
                mx_run(p, 4, r[q].am, bk->wsgn + jb / 32u, bk->nq, bk->wneg[jb / 32u], r[q].xpos,
                       nx[q][h], n);
            for (unsigned v = 0; v < 4u; v++)
                _mm256_store_ps(r[q].ps + jb + 8u * v, p[v]);
        }
}

/* MX_JOINT: blocks of 32 lanes done together at most */
#define MX_JOINT 4u

__attribute__((target("avx512f"), noinline)) static void
mx_block3_512(const mx_bank_t *bk, unsigned n, const mx_row_t *r, unsigned j0, unsigned nb,
              int exact, int first, int last)
{
    int fma = r[0].fma && r[1].fma && r[2].fma;
    if (nb == 4u) {
        if (fma) mx_blocks512(bk, n, r, j0, exact, 4, 1, first, last);
        else mx_blocks512(bk, n, r, j0, exact, 4, 0, first, last);
    } else if (nb == 2u) {
        if (fma) mx_blocks512(bk, n, r, j0, exact, 2, 1, first, last);
        else mx_blocks512(bk, n, r, j0, exact, 2, 0, first, last);
    } else {
        if (fma) mx_blocks512(bk, n, r, j0, exact, 1, 1, first, last);
        else mx_blocks512(bk, n, r, j0, exact, 1, 0, first, last);
    }
}

/* A block whose weights are all zeros and subnormals, for a row with no Inf or NaN: all its
   steps are one skippable run */
MX_AVX2 void mx_zero_block(const mx_bank_t *bk, unsigned V, unsigned n, const uint32_t *am,
                           int xpos, const float *src, float *ps, unsigned j0)
{
    __m256 p[4];
    for (unsigned v = 0; v < V; v++)
        p[v] = _mm256_loadu_ps(src + j0 + 8u * v);
    mx_run(p, V, am, bk->wsgn + j0 / 32u, bk->nq, bk->wneg[j0 / 32u], xpos, 0, n);
    for (unsigned v = 0; v < V; v++)
        _mm256_store_ps(ps + j0 + 8u * v, p[v]);
}

/* lut[m]: the positions of m's set bits, one per byte, lowest first (mx_list_avx2) */
static uint64_t mx_lut[256];
/* The rows' lists of the steps that cannot be skipped (mx_rows_avx2's first loop) on
   AVX-512, 16 steps at a time: the same tests (x[k] zero or subnormal with a finite tile row
   k, or an all-zero row k with a finite x[k]; the tile's rows as bit masks once per call),
   the step numbers (32-bit: no narrowing, which would take the shuffle port the compresses
   and compares use) and their x compressed into ks[m] and xs[m] (16 words and 16 floats of
   slack: compressed in a register and stored whole, the masked compress to memory is
   microcoded and several times slower); xfin[m]: no Inf or NaN in the row, xpos[m]: no x of
   sign -, xfma[m]: every product of a normal x with a normal weight of the tile is normal
   (mx_blocks512); cnt[m]: the count, k64[m][p]: the count of those before step 64 (p + 1). */
#define MX_KS (256 + 16)
/* plain: every row of the tile finite and none all zeros (the usual tile): a step is listed
   when its x is not zero or subnormal, one test (the general masks fold away) */
MX_512 void mx_list512_rows(const mx_bank_t *bk, unsigned n, unsigned rows,
                            const uint32_t *const *a, uint32_t (*ks)[MX_KS],
                            float (*xs)[256 + 16], unsigned *cnt, int *xfin, int *xpos,
                            int *xfma, unsigned (*k64)[4], const __mmask16 *ld,
                            const __mmask16 *wfin, const __mmask16 *wzero, int plain)
{
    const __m512i em = _mm512_set1_epi32(0x7F80), zero = _mm512_setzero_si512();
    const __m512i xlo = _mm512_set1_epi32((int)bk->xlo), xhi = _mm512_set1_epi32((int)bk->xhi);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (unsigned m = 0; m < rows; m++) {
        const uint32_t *am = a[m];
        if (m + 2u < rows) /* a later row's lines on their way (UB rows may be out of L2) */
            for (unsigned l = 0; l < n; l += 16u)
                _mm_prefetch((const char *)(const void *)(a[m + 2u] + l), _MM_HINT_T0);
        __mmask16 infs = 0;
        __m512i sgns = zero;
        /* the smallest and largest exponent of the row's normal x (xfma: both in xlo .. xhi;
           min / max rather than two compares a step: the compares and the compresses share
           one port) */
        __m512i nmin = em, nmax = zero;
        __m512i kv0 = iota; /* the step numbers k .. k + 15 */
        unsigned c = 0;
        for (unsigned k = 0, q = 0; k < n; k += 16u, q++) {
            __m512i av = _mm512_maskz_loadu_epi32(ld[q], am + k);
            __m512i e = _mm512_and_si512(av, em);
            __mmask16 inf = _mm512_cmpeq_epi32_mask(e, em), keep, nrm;
            if (plain) { /* keep: x not zero or subnormal */
                keep = _mm512_mask_test_epi32_mask(ld[q], av, em);
                nrm = (__mmask16)(keep & ~inf);
            } else {
                __mmask16 z = _mm512_cmpeq_epi32_mask(e, zero);
                keep = (__mmask16)(ld[q] & ~((z & wfin[q]) | (~inf & wzero[q])));
                nrm = (__mmask16)(ld[q] & ~z & ~inf);
            }
            infs |= inf;
            sgns = _mm512_or_si512(sgns, av);
            nmin = _mm512_mask_min_epu32(nmin, nrm, nmin, e);
            nmax = _mm512_mask_max_epu32(nmax, nrm, nmax, e);
            _mm512_storeu_ps(xs[m] + c, _mm512_maskz_compress_ps(keep, _mm512_castsi512_ps(_mm512_slli_epi32(av, 16))));
            __m512i kv = _mm512_maskz_compress_epi32(keep, kv0);
            kv0 = _mm512_add_epi32(kv0, _mm512_set1_epi32(16));
            _mm512_storeu_si512((void *)(ks[m] + c), kv);
            c += (unsigned)__builtin_popcount(keep);
            if (q % 4u == 3u)
                k64[m][q / 4u] = c;
        }
        cnt[m] = c;
        xfin[m] = infs == 0;
        xpos[m] = _mm512_test_epi32_mask(sgns, _mm512_set1_epi32(0x8000)) == 0;
        /* (a lane with no normal x: nmin 0x7F80 >= xlo, nmax 0 <= xhi) */
        xfma[m] = (_mm512_cmplt_epu32_mask(nmin, xlo) | _mm512_cmpgt_epu32_mask(nmax, xhi)) == 0;
    }
}

__attribute__((target("avx512f"), noinline)) static void
mx_list512(const mx_bank_t *bk, unsigned n, unsigned rows, const uint32_t *const *a,
           uint32_t (*ks)[MX_KS], float (*xs)[256 + 16], unsigned *cnt, int *xfin, int *xpos,
           int *xfma, unsigned (*k64)[4])
{
    __mmask16 ld[16], wfin[16], wzero[16];
    int plain = 1;
    for (unsigned k = 0, q = 0; k < n; k += 16u, q++) {
        ld[q] = n - k >= 16u ? (__mmask16)0xFFFFu : (__mmask16)((1u << (n - k)) - 1u);
        __m512i wf = _mm512_maskz_loadu_epi32(ld[q], bk->wfin + k);
        __m512i wz = _mm512_maskz_loadu_epi32(ld[q], bk->wzero + k);
        wfin[q] = _mm512_test_epi32_mask(wf, wf);
        wzero[q] = _mm512_test_epi32_mask(wz, wz);
        plain &= wfin[q] == ld[q] && wzero[q] == 0;
    }
    if (plain)
        mx_list512_rows(bk, n, rows, a, ks, xs, cnt, xfin, xpos, xfma, k64, ld, wfin, wzero, 1);
    else
        mx_list512_rows(bk, n, rows, a, ks, xs, cnt, xfin, xpos, xfma, k64, ld, wfin, wzero, 0);
}

/* The same on AVX2, 8 steps at a time (the scalar test for the last n % 8), the x gathered
   after */
MX_AVX2 unsigned mx_list_avx2(const mx_bank_t *bk, unsigned n, const uint32_t *am, uint32_t *km,
                              float *xsm, int *xfin, int *xpos)
{
    const __m256i em = _mm256_set1_epi32(0x7F80);
    unsigned c = 0, k = 0;
    __m256i infs = _mm256_setzero_si256(), sgns = _mm256_setzero_si256();
    for (; k + 8u <= n; k += 8u) {
        __m256i av = _mm256_loadu_si256((const __m256i *)(am + k));
        __m256i e = _mm256_and_si256(av, em);
        __m256i z = _mm256_cmpeq_epi32(e, _mm256_setzero_si256());
        __m256i inf = _mm256_cmpeq_epi32(e, em);
        infs = _mm256_or_si256(infs, inf);
        sgns = _mm256_or_si256(sgns, av);
        __m256i skip = _mm256_or_si256(
            _mm256_and_si256(z, _mm256_loadu_si256((const __m256i *)(bk->wfin + k))),
            _mm256_andnot_si256(inf, _mm256_loadu_si256((const __m256i *)(bk->wzero + k))));
        unsigned keep = ~(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(skip)) & 0xFFu;
        __m256i pos = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mx_lut[keep]));
        _mm256_storeu_si256((__m256i *)(void *)(km + c), _mm256_add_epi32(pos, _mm256_set1_epi32((int)k)));
        c += (unsigned)__builtin_popcount(keep);
    }
    int fin = _mm256_testz_si256(infs, infs);
    int pos = _mm256_testz_si256(sgns, _mm256_set1_epi32(0x8000));
    for (; k < n; k++) {
        uint32_t e = am[k] & 0x7F80u;
        int skip = (e == 0 && bk->wfin[k]) || (bk->wzero[k] && e != 0x7F80u);
        fin &= e != 0x7F80u;
        pos &= (am[k] & 0x8000u) == 0;
        if (!skip)
            km[c++] = k;
    }
    *xfin = fin;
    *xpos = pos;
    for (unsigned i = 0; i < c; i++) {
        uint32_t xb = (am[km[i]] & 0xFFFFu) << 16;
        memcpy(&xsm[i], &xb, 4);
    }
    return c;
}

/* the partial sums of a call's rows (mx_rows_avx2), written out by mx_out */
static float mx_ps[MX_GROUP][256] __attribute__((aligned(64)));
/* a fresh row's p: -0 (its lanes past N, when wf_stride > N, come from mx_ps) */
static float mx_neg0[256] __attribute__((aligned(64)));

__attribute__((target("avx2"), noinline)) static void
mx_rows_avx2(const mx_bank_t *bk, unsigned n, unsigned rows, const uint32_t *const *a,
             const uint32_t *const *seed, int exact)
{
    float (*ps)[256] = mx_ps;
    static float xs[MX_GROUP][256 + 16]; /* 16 floats of slack for mx_list512's stores */
    static uint32_t ks[MX_GROUP][MX_KS];
    unsigned cnt[MX_GROUP];
    int xfin[MX_GROUP]; /* no Inf or NaN in the row */
    int xpos[MX_GROUP]; /* no x of sign - in the row */
    int xfma[MX_GROUP]; /* every product normal (mx_blocks512) */
    unsigned k64[MX_GROUP][4]; /* the listed steps before 64, 128, 192 (mx_list512) */
    static mx_state_t st[MX_GROUP];
    const float *src[MX_GROUP]; /* where each row's p starts: its seed row, mx_neg0, or ps */
    const size_t ws = bk->ws;
    if (mx_neg0[0] == 0.0f && !signbit(mx_neg0[0]))
        for (unsigned j = 0; j < 256; j++)
            mx_neg0[j] = -0.0f;
    if (mx_lut[255] == 0)
        for (unsigned m = 1; m < 256; m++) {
            uint64_t v = 0;
            unsigned c = 0;
            for (unsigned b = 0; b < 8; b++)
                if (m >> b & 1u)
                    v |= (uint64_t)b << (8u * c++);
            mx_lut[m] = v;
        }
    if (bk->z512)
        mx_list512(bk, n, rows, a, ks, xs, cnt, xfin, xpos, xfma, k64);
    for (unsigned m = 0; m < rows; m++) {
        /* the steps that cannot be skipped, their x, and the seed */
        if (!bk->z512) {
            cnt[m] = mx_list_avx2(bk, n, a[m], ks[m], xs[m], &xfin[m], &xpos[m]);
            xfma[m] = 0;
        }
        /* read in place when the row has no lanes past N (the seeds stay as they are until
           mx_out: an underflow redo reads them again) */
        src[m] = ws != n ? ps[m] : seed[m] ? (const float *)(const void *)seed[m] : mx_neg0;
        if (ws == n)
            continue;
        if (seed[m])
            memcpy(ps[m], seed[m], sizeof(float) * n);
        else
            for (unsigned j = 0; j < n; j++)
                ps[m][j] = -0.0f;
        for (unsigned j = n; j < ws; j++)
            ps[m][j] = 0.0f;
    }
    /* the rows as mx_block3 takes them, built once for every block and phase (lim: set per
       phase) */
    static mx_row_t rr[MX_GROUP];
    for (unsigned m = 0; m < rows; m++)
        rr[m] = (mx_row_t){ a[m], ks[m], xs[m], cnt[m], xpos[m], src[m], ps[m], xfma[m],
                            seed[m] == NULL, cnt[m], &st[m] };
#define MX_FULL(j) ((j) + 32u <= ws && !(bk->wzblk[(j) / 16u] && bk->wzblk[(j) / 16u + 1u]))
    for (unsigned j0 = 0; j0 < ws;) {
        /* nb blocks of 32 lanes with a weight other than zero, done together by three rows
           on AVX-512 (1, 2 or 4), then each block for the rows left (fewer than three) */
        unsigned nb = 1, m3 = 0;
        if (MX_FULL(j0)) {
            while (bk->z512 && nb < MX_JOINT && MX_FULL(j0 + 32u * nb))
                nb++;
            nb = nb == 3u ? 2u : nb;
            /* three rows at a time while there are three; on AVX-512 with four blocks (a
               tile of N x 128 floats, 64 KB at N = 128: more than L1) in phases of 64 steps
               (k), every row's steps before 64 then those before 128 ..., each phase's
               32 KB of the tile read by all the rows while in L1 (a row's steps stay in k
               order) */
            unsigned ph = bk->z512 && nb == 4u && n > 64u ? (n + 63u) / 64u : 1u;
            unsigned r3n = rows / 3u * 3u; /* the rows in triples */
            for (unsigned p = 0; p < ph; p++) {
                for (unsigned m = 0; m < r3n; m++) /* the phase's end */
                    rr[m].lim = p + 1u < ph ? k64[m][p] : cnt[m];
                for (m3 = 0; m3 < r3n; m3 += 3u) {
                    if (bk->z512)
                        mx_block3_512(bk, n, &rr[m3], j0, nb, exact, p == 0, p + 1u == ph);
                    else
                        mx_block3(bk, n, &rr[m3], j0, exact);
                }
            }
        }
        for (unsigned jn = j0 + 32u * nb; j0 < jn; j0 += 32u) {
            unsigned V = j0 + 32u <= ws ? 4u : 2u; /* the last block: 16 lanes */
            int zero = bk->wzblk[j0 / 16u] && (V == 2u || bk->wzblk[j0 / 16u + 1u]);
            unsigned prev = rows; /* a row waiting for a partner */
            unsigned m = m3;
            for (; m <= rows; m++) {
                if (m < rows && zero && xfin[m]) {
                    if (V == 4u) mx_zero_block(bk, 4, n, a[m], xpos[m], src[m], ps[m], j0);
                    else mx_zero_block(bk, 2, n, a[m], xpos[m], src[m], ps[m], j0);
                    continue;
                }
                if (m < rows && prev == rows) {
                    prev = m;
                    continue;
                }
                if (prev == rows)
                    break;
                unsigned q = m < rows ? m : prev; /* the partner (none at the end) */
                if (V == 4u)
                    mx_block(bk, 4, m < rows, n, a[prev], a[q], ks[prev], ks[q], xs[prev], xs[q],
                             cnt[prev], cnt[q], xpos[prev], xpos[q], src[prev], src[q], ps[prev],
                             ps[q], j0, exact);
                else
                    mx_block(bk, 2, m < rows, n, a[prev], a[q], ks[prev], ks[q], xs[prev], xs[q],
                             cnt[prev], cnt[q], xpos[prev], xpos[q], src[prev], src[q], ps[prev],
                             ps[q], j0, exact);
                prev = rows;
            }
        }
    }
#undef MX_FULL
}

/* the rows of mx_ps to out[m] (NaN canonicalised) */
__attribute__((target("avx2"))) static void mx_out(unsigned n, unsigned rows, uint32_t *const *out)
{
    const __m256i ab = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
    const __m256i qnan = _mm256_set1_epi32(0x7FC00000);
    for (unsigned m = 0; m < rows; m++) {
        const uint32_t *pu = (const uint32_t *)(const void *)mx_ps[m];
        uint32_t *o = out[m];
        unsigned j = 0;
        for (; j + 8u <= n; j += 8u) {
            __m256i u = _mm256_load_si256((const __m256i *)(const void *)(pu + j));
            __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, ab), inf);
            _mm256_storeu_si256((__m256i *)(void *)(o + j), _mm256_blendv_epi8(u, qnan, nan));
        }
        for (; j < n; j++) {
            uint32_t u = pu[j];
            o[j] = (u & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FC00000u : u;
        }
    }
}

/* mx_out on AVX-512: 16 words a step, the last n % 16 under a mask */
__attribute__((target("avx512f"))) static void mx_out512(unsigned n, unsigned rows,
                                                       uint32_t *const *out)
{
    const __m512i ab = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
    const __m512i qnan = _mm512_set1_epi32(0x7FC00000);
    for (unsigned m = 0; m < rows; m++) {
        const uint32_t *pu = (const uint32_t *)(const void *)mx_ps[m];
        uint32_t *o = out[m];
        for (unsigned j = 0; j < n; j += 16u) {
            __mmask16 ld = n - j >= 16u ? (__mmask16)0xFFFFu : (__mmask16)((1u << (n - j)) - 1u);
            __m512i u = _mm512_load_si512((const void *)(pu + j));
            __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, ab), inf);
            _mm512_mask_storeu_epi32(o + j, ld, _mm512_mask_mov_epi32(u, nan, qnan));
        }
    }
}

int core_mx_simd(void)
{
    const char *e = getenv("TPU_MODEL_MX_SIMD");
    if (e != NULL && strcmp(e, "sse2") == 0)
        return 0;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2"))
        return 0;
    int f = CORE_MX_AVX2 | CORE_MX_DENSE;
    if (__builtin_cpu_supports("avx512f"))
        f |= CORE_MX_AVX512;
    if (e != NULL && (strcmp(e, "avx2") == 0 || strcmp(e, "avx2-skip") == 0))
        f &= ~CORE_MX_AVX512;
    if (e != NULL && (strcmp(e, "skip") == 0 || strcmp(e, "avx2-skip") == 0))
        f &= ~CORE_MX_DENSE;
    return f;
}

/* The rows of one matmul: 1 done on the host path, 0 when it is not available. */
static int mx_host(const tpu_core_t *c, unsigned b, unsigned rows, const uint32_t *const *a,
                   const uint32_t *const *seed, uint32_t *const *out)
{
    unsigned n = c->n;
    unsigned old = _mm_getcsr();
    /* RNE, FTZ | DAZ, all masked, the flags cleared */
    _mm_setcsr((old & ~0x603Fu) | 0x8040u | 0x1F80u);
    if ((c->mx_simd & CORE_MX_DENSE) && n <= MX_DENSE_N) {
        core_mx_dense(c->mx_simd & CORE_MX_AVX512, n, c->wf[b], c->wf_stride, rows, a, seed, out);
        _mm_setcsr(old);
        return 1;
    }
    if (c->mx_simd) {
        /* x's exponents ex with 128 <= ex + ew <= 380 for every normal weight's ew */
        int lo = 128 - (int)c->wemin[b], hi = 380 - (int)c->wemax[b];
        mx_bank_t bk = { c->wf[b], c->wf_stride, c->wrow_zero[b], c->wrow_fin[b],
                         c->wblk_zero[b], c->wsgn[b], c->wneg[b], (c->wf_stride + 31u) / 32u,
                         (c->mx_simd & CORE_MX_AVX512) != 0, (uint32_t)(lo < 0 ? 0 : lo) << 7,
                         (uint32_t)(hi > 255 ? 255 : hi) << 7 };
        mx_rows_avx2(&bk, n, rows, a, seed, 0);
        unsigned csr;
        __asm__ volatile("stmxcsr %0" : "=m"(csr) : : "memory");
        if (csr & 0x10u) /* an underflow: again, every run through mx_run */
            mx_rows_avx2(&bk, n, rows, a, seed, 1);
        _mm_setcsr(old);
        if (c->mx_simd & CORE_MX_AVX512) /* after both: out may be the seeds' rows */
            mx_out512(n, rows, out);
        else
            mx_out(n, rows, out);
        return 1;
    }
    static uint32_t o[MX_GROUP * 256];
    if (c->wf_stride == n) {
        mx_rows_host(n, rows, a, seed, c->wf[b], o);
    } else {
        static float w[256 * 256];
        for (unsigned k = 0; k < n; k++)
            memcpy(w + (size_t)k * n, c->wf[b] + (size_t)k * c->wf_stride, sizeof(float) * n);
        mx_rows_host(n, rows, a, seed, w, o);
    }
    _mm_setcsr(old);
    for (unsigned m = 0; m < rows; m++)
        memcpy(out[m], o + (size_t)m * n, sizeof(uint32_t) * n);
    return 1;
}
#else
int core_mx_simd(void)
{
    return 0;
}

static int mx_host(const tpu_core_t *c, unsigned b, unsigned rows, const uint32_t *const *a,
                   const uint32_t *const *seed, uint32_t *const *out)
{
    (void)c; (void)b; (void)rows; (void)a; (void)seed; (void)out;
    return 0;
}
#endif

/* wf, wrow_zero, wrow_fin, wblk_zero and wsgn of bank b from the tile src (N x N words, row
   k = the bank's row k: bank[b], or the WMEM rows of a plain lw) (core_internal.h) */
#if defined(__x86_64__) && defined(__SSE2__)
__attribute__((target("avx2"))) static void mx_prep_avx2(tpu_core_t *c, unsigned b,
                                                         const uint32_t *src)
{
    unsigned n = c->n, nq = (c->wf_stride + 31u) / 32u;
    size_t ws = c->wf_stride;
    uint32_t blkor[16] = { 0 }; /* per 16 lanes: the exponent bits of every row ORed */
    __m256i blkv[32]; /* the same per 8 lanes as vectors (blkor: the last n % 8) */
    uint32_t neg[8]; /* per 32 lanes: the sign bits of every row ANDed */
    for (unsigned q = 0; q < nq; q++)
        neg[q] = 0xFFFFFFFFu;
    const __m256i em = _mm256_set1_epi32(0x7F80), zero = _mm256_setzero_si256();
    for (unsigned q = 0; q < n / 8u; q++)
        blkv[q] = zero;
    /* the exponents of the normal weights: the others as 0x7F80 for the min, 0 for the max */
    __m256i emin = em, emax = zero;
    unsigned tmin = 0x7F80u, tmax = 0;
    for (unsigned k = 0; k < n; k++) {
        const uint32_t *br = src + (size_t)k * n;
        float *wr = c->wf[b] + (size_t)k * ws;
        uint32_t *sg = c->wsgn[b] + (size_t)k * nq;
        uint32_t eor = 0, inf = 0;
        __m256i reor = zero, rinf = zero; /* the row's exponents ORed, its Inf / NaN lanes */
        uint32_t sw = 0; /* the sign bits of lanes 32 (j / 32) .. j - 1, stored once (a word
                            read back right after a partial store would stall) */
        memset(sg, 0, sizeof(uint32_t) * nq);
        unsigned j = 0;
        for (; j + 8u <= n; j += 8u) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(br + j));
            __m256i u = _mm256_slli_epi32(v, 16); /* the low 16 bits, the bf16 */
            _mm256_storeu_si256((__m256i *)(wr + j), u);
            __m256i e = _mm256_and_si256(v, em);
            reor = _mm256_or_si256(reor, e);
            blkv[j / 8u] = _mm256_or_si256(blkv[j / 8u], e);
            __m256i ie = _mm256_cmpeq_epi32(e, em);
            rinf = _mm256_or_si256(rinf, ie);
            __m256i nn = _mm256_or_si256(ie, _mm256_cmpeq_epi32(e, zero)); /* not normal */
            emin = _mm256_min_epu32(emin, _mm256_or_si256(e, _mm256_and_si256(nn, em)));
            emax = _mm256_max_epu32(emax, _mm256_andnot_si256(nn, e));
            sw |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(u)) << (j % 32u);
            if (j % 32u == 24u) {
                sg[j / 32u] = sw;
                sw = 0;
            }
        }
        eor = !_mm256_testz_si256(reor, reor);
        inf = !_mm256_testz_si256(rinf, rinf);
        for (; j < n; j++) {
            uint32_t e = br[j] & 0x7F80u, u = (br[j] & 0xFFFFu) << 16;
            memcpy(&wr[j], &u, 4);
            eor |= e != 0;
            blkor[j / 16u] |= e != 0;
            inf |= e == 0x7F80u;
            if (e != 0 && e != 0x7F80u) {
                tmin = e < tmin ? e : tmin;
                tmax = e > tmax ? e : tmax;
            }
            sw |= (u >> 31) << (j % 32u);
        }
        if (n % 32u)
            sg[n / 32u] = sw;
        for (unsigned q = 0; q < nq; q++)
            neg[q] &= sg[q];
        c->wrow_zero[b][k] = eor ? 0u : 0xFFFFFFFFu;
        c->wrow_fin[b][k] = inf ? 0u : 0xFFFFFFFFu;
    }
    for (unsigned q = 0; q < n / 8u; q++)
        blkor[q / 2u] |= !_mm256_testz_si256(blkv[q], blkv[q]);
    for (unsigned q = 0; q < ws / 16u; q++)
        c->wblk_zero[b][q] = blkor[q] == 0;
    for (unsigned q = 0; q < nq; q++)
        c->wneg[b][q] = neg[q];
    uint32_t v[8];
    _mm256_storeu_si256((__m256i *)(void *)v, emin);
    for (unsigned l = 0; l < 8; l++)
        tmin = v[l] < tmin ? v[l] : tmin;
    _mm256_storeu_si256((__m256i *)(void *)v, emax);
    for (unsigned l = 0; l < 8; l++)
        tmax = v[l] > tmax ? v[l] : tmax;
    c->wemin[b] = tmin >> 7;
    c->wemax[b] = tmax >> 7;
}
#endif

#if defined(__x86_64__) && defined(__SSE2__)
/* mx_prep_avx2 on AVX-512: the same outputs, 16 lanes a step (the last n % 16 under a mask:
   loaded as zeros, not stored; a zero's exponent, sign and block bits change nothing), the
   tests as masks, each row's sign words assembled in registers and stored whole */
__attribute__((target("avx512f"))) static void mx_prep_512(tpu_core_t *c, unsigned b,
                                                          const uint32_t *src)
{
    unsigned n = c->n, nq = (c->wf_stride + 31u) / 32u, nv = (n + 15u) / 16u;
    size_t ws = c->wf_stride;
    __m512i blk[16]; /* per 16 lanes: the exponent bits of every row ORed */
    uint32_t neg[8]; /* per 32 lanes: the sign bits of every row ANDed */
    for (unsigned q = 0; q < nq; q++)
        neg[q] = 0xFFFFFFFFu;
    const __m512i em = _mm512_set1_epi32(0x7F80), zero = _mm512_setzero_si512();
    for (unsigned v = 0; v < nv; v++)
        blk[v] = zero;
    /* the exponents of the normal weights (the others leave them) */
    __m512i emin = em, emax = zero;
    for (unsigned k = 0; k < n; k++) {
        const uint32_t *br = src + (size_t)k * n;
        float *wr = c->wf[b] + (size_t)k * ws;
        uint32_t *sg = c->wsgn[b] + (size_t)k * nq;
        __m512i reor = zero; /* the row's exponents ORed */
        __mmask16 rinf = 0;  /* its Inf / NaN lanes */
        uint32_t lo = 0; /* the sign bits of an even vector, until its odd neighbour's */
        for (unsigned v = 0, j = 0; v < nv; v++, j += 16u) {
            __mmask16 m = n - j >= 16u ? (__mmask16)0xFFFFu : (__mmask16)((1u << (n - j)) - 1u);
            __m512i x = _mm512_maskz_loadu_epi32(m, br + j);
            __m512i u = _mm512_slli_epi32(x, 16); /* the low 16 bits, the bf16 */
            _mm512_mask_storeu_epi32(wr + j, m, u);
            __m512i e = _mm512_and_si512(x, em);
            reor = _mm512_or_si512(reor, e);
            blk[v] = _mm512_or_si512(blk[v], e);
            __mmask16 ie = _mm512_cmpeq_epi32_mask(e, em);
            __mmask16 nrm = (__mmask16)(m & ~ie & ~_mm512_cmpeq_epi32_mask(e, zero));
            rinf |= ie;
            emin = _mm512_mask_min_epu32(emin, nrm, emin, e);
            emax = _mm512_mask_max_epu32(emax, nrm, emax, e);
            uint32_t s16 = (uint32_t)_mm512_cmplt_epi32_mask(u, zero);
            if (v & 1u) { /* sign word v / 2 (scalar stores: a copy loop became a memcpy call) */
                sg[v / 2u] = lo | s16 << 16;
                neg[v / 2u] &= lo | s16 << 16;
            } else {
                lo = s16;
            }
        }
        if (nv & 1u) { /* (nq = (nv + 1) / 2) */
            sg[nv / 2u] = lo;
            neg[nv / 2u] &= lo;
        }
        c->wrow_zero[b][k] = _mm512_test_epi32_mask(reor, reor) ? 0u : 0xFFFFFFFFu;
        c->wrow_fin[b][k] = rinf ? 0u : 0xFFFFFFFFu;
    }
    for (unsigned q = 0; q < ws / 16u; q++)
        c->wblk_zero[b][q] = q >= nv || _mm512_test_epi32_mask(blk[q], blk[q]) == 0;
    for (unsigned q = 0; q < nq; q++)
        c->wneg[b][q] = neg[q];
    c->wemin[b] = _mm512_reduce_min_epu32(emin) >> 7;
    c->wemax[b] = _mm512_reduce_max_epu32(emax) >> 7;
}

/* wf only, for the dense kernel (it reads nothing else) */
__attribute__((target("avx2"))) static void mx_widen_avx2(tpu_core_t *c, unsigned b,
                                                          const uint32_t *src)
{
    unsigned n = c->n;
    for (unsigned k = 0; k < n; k++) {
        const uint32_t *br = src + (size_t)k * n;
        float *wr = c->wf[b] + (size_t)k * c->wf_stride;
        unsigned j = 0;
        for (; j + 8u <= n; j += 8u)
            _mm256_storeu_si256((__m256i *)(void *)(wr + j),
                                _mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(br + j)), 16));
        for (; j < n; j++) {
            uint32_t u = br[j] << 16;
            memcpy(&wr[j], &u, 4);
        }
    }
}
#endif

static void mx_prep(tpu_core_t *c, unsigned b, const uint32_t *src)
{
#if defined(__x86_64__) && defined(__SSE2__)
    if ((c->mx_simd & CORE_MX_DENSE) && c->n <= MX_DENSE_N) {
        mx_widen_avx2(c, b, src);
        return;
    }
    if (c->mx_simd & CORE_MX_AVX512) {
        mx_prep_512(c, b, src);
        return;
    }
    if (c->mx_simd) {
        mx_prep_avx2(c, b, src);
        return;
    }
#endif
    /* the SSE2 path reads wf only */
    unsigned n = c->n;
    for (unsigned k = 0; k < n; k++)
        for (unsigned j = 0; j < n; j++) {
            uint32_t u = (src[(size_t)k * n + j] & 0xFFFFu) << 16;
            memcpy(&c->wf[b][(size_t)k * c->wf_stride + j], &u, 4);
        }
}

uint64_t core_lw_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    unsigned n = c->n, b = c->next_bank;
    /* bank[b][k*n + j] is the weight that multiplies activation element k in output column
       j: WMEM[w+k][j], or WMEM[w+j][k] for a transposed load (the same rows are read, in the
       same order; the array shifts them along its rows instead of its columns). */
    int direct = !c->integer_mx && !d->transpose && c->mx_simd;
    for (unsigned k = 0; k < n; k++) {
        const uint32_t *row = core_read_row(c, TPU_MEM_WMEM, d->w_row + k);
        if (direct) /* bank[b] is not read: mx_prep takes the WMEM rows */
            continue;
        if (d->transpose)
            for (unsigned j = 0; j < n; j++)
                c->bank[b][j * n + k] = row[j];
        else
            for (unsigned j = 0; j < n; j++)
                c->bank[b][k * n + j] = row[j];
    }
    if (!c->integer_mx) /* the bank as host floats for the host-float matmul */
        mx_prep(c, b, direct ? c->mem[TPU_MEM_WMEM] + (size_t)d->w_row * n : c->bank[b]);
    c->cur_bank = b;
    c->next_bank = b ^ 1u;
    c->have_lw = 1;
    /* Start s: the cycle after dispatch, once no vector of bank b is presented or queued and
       bank_busy_o[b] is 0 (B cycles after its last vector). N WMEM reads in s .. s+N-1, each
       row shifted in the cycle after its read (s+1 .. s+N); done with the N-th shift. */
    uint64_t s = t + 1u;
    if (c->bank_last_vec[b] != CORE_NEVER)
        s = core_max(s, c->bank_last_vec[b] + c->mxu_busy + 1u);
    uint64_t done = s + n;
    c->bank_lw_done[b] = done;
    c->lw_lo = d->w_row;
    return done;
}

uint64_t core_matmul_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    unsigned n = c->n, b = c->cur_bank;
    const uint32_t *w = c->bank[b];
    uint32_t out[256];
    uint64_t vt = CORE_NEVER;
    /* the timing state in locals for the rows' loop, stored back at the end */
    uint64_t last = c->mx_last_vec, stall = 0, lw_ready = c->bank_lw_done[b] + 1u;
    const uint64_t acc_lat = c->mxu_lat + 3u;
    uint64_t *acc_last = c->acc_last_vec, *ub_last = c->ub_last_vec;
    /* Rows in groups: the host path computes a group at once (its rows never overlap the
       ones they accumulate onto within the group: each row reads and writes its own ACC row,
       read before any of the group is written -- true when the ACC rows are distinct, which
       they are: acc_row + m for m in the group). */
    enum { GROUP = 64 };
    const uint32_t *ga[GROUP], *gs[GROUP];
    uint32_t *go[GROUP];
    /* the skip kernels take rows three at a time (a row left over goes alone, on AVX2): 63
       rows a group there, so only a matmul's last group can leave one or two (the results
       do not depend on the grouping: each row is the same steps in the same order) */
    const unsigned group = n > MX_DENSE_N ? 63u : GROUP;
    for (unsigned m0 = 0; m0 < d->n; m0 += group) {
        unsigned gn = d->n - m0 < group ? d->n - m0 : group;
        int host = 0;
        if (!c->integer_mx) {
            unsigned ub0 = d->ub_row + m0, acc0 = d->acc_row + m0;
            /* every row read already written (the usual case): no per-row check, else the
               reads one by one in order (the first uninitialised read is the one recorded) */
            int all = memchr(c->written[TPU_MEM_UB] + ub0, 0, gn) == NULL &&
                      (!d->accumulate || memchr(c->written[TPU_MEM_ACC] + acc0, 0, gn) == NULL);
            for (unsigned i = 0; i < gn; i++) {
                ga[i] = all ? c->mem[TPU_MEM_UB] + (size_t)(ub0 + i) * n
                            : core_read_row(c, TPU_MEM_UB, ub0 + i);
                gs[i] = !d->accumulate ? NULL
                        : all ? c->mem[TPU_MEM_ACC] + (size_t)(acc0 + i) * n
                              : core_read_row(c, TPU_MEM_ACC, acc0 + i);
                go[i] = core_write_dst(c, TPU_MEM_ACC, acc0 + i);
            }
            /* the results straight into their ACC rows (every seed read first) */
            host = mx_host(c, b, gn, ga, gs, go);
            if (host && c->trace == NULL) { /* core_write_done of every row at once */
                memset(c->written[TPU_MEM_ACC] + acc0, 1, gn);
                c->res->rows_written[TPU_MEM_ACC] += gn;
            } else if (host) {
                for (unsigned i = 0; i < gn; i++)
                    core_write_done(c, TPU_MEM_ACC, acc0 + i);
            }
        }
    for (unsigned m = m0; m < m0 + gn; m++) {
        unsigned arow = d->acc_row + m;
        if (!host) {
        const uint32_t *a = core_read_row(c, TPU_MEM_UB, d->ub_row + m);
        const uint32_t *seed = d->accumulate ? core_read_row(c, TPU_MEM_ACC, arow) : NULL;
        for (unsigned j = 0; j < n; j++) {
            fp32_t acc = fp32_from_bits(seed ? seed[j] : 0x80000000u);
            for (unsigned k = 0; k < n; k++)
                acc = fp32_mac(acc, bf16_from_bits((uint16_t)a[k]),
                               bf16_from_bits((uint16_t)w[k * n + j]));
            out[j] = acc.v;
        }
        core_write_row(c, TPU_MEM_ACC, arow, out);
        }
        /* timing of vector m: UB (and ACC) read in vt - 1 >= t + 1 */
        uint64_t ready = t + 2u;
        if (last != CORE_NEVER)
            ready = core_max(ready, last + 1u);
        if (d->accumulate && acc_last[arow] != CORE_NEVER)
            ready = core_max(ready, acc_last[arow] + acc_lat);
        vt = core_max(ready, lw_ready);
        stall += vt - ready;
        last = vt;
        acc_last[arow] = vt;
        ub_last[d->ub_row + m] = vt;
    }
    }
    c->res->counters[TPU_CNT_WL_STALL] += stall;
    c->res->counters[TPU_CNT_MXU_BUSY] += d->n;
    c->mx_last_vec = last;
    c->bank_last_vec[b] = vt;
    if (d->accumulate)
        c->acc_mm_last = vt;
    c->mm_present_end[0] = c->mm_present_end[1];
    c->mm_present_end[1] = vt;
    return vt + c->mxu_lat + 1u;
}
