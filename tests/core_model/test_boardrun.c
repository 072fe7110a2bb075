/* SPDX-License-Identifier: Apache-2.0 */
/* The board model (tpu/board.h, docs/board.md): C core models running their own programs,
   joined by the collectives. allreduce against tpu_allreduce_torus / tpu_allreduce_ring bit
   for bit on every core, on rings and tori with chunks that start inside rows and empty
   chunks; each core's row writes in the order of "Transfers, flits and the order of row
   writes" (reference written here from the text); send/recv, bcast, barrier; the cycle model
   (every participant completes together, the early ones wait: NET_BUSY); deadlocks and
   mismatches reported naming the cores and pcs; error 8 on a board; determinism. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tpu/asm.h"
#include "tpu/board.h"
#include "tpu/core.h"

static uint64_t rng_state = 7;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}
static uint32_t rnd_fp32(void)
{
    uint32_t r = rnd() % 32u, s = (rnd() & 1u) << 31;
    if (r == 0)
        return s;                                   /* signed zero */
    if (r == 1)
        return s | (rnd() & 0x7FFFFFu);             /* subnormal (DAZ) */
    return s | ((110u + rnd() % 30u) << 23) | (rnd() & 0x7FFFFFu); /* wide exponents: order matters */
}

#define MAXC 16
#define HOST 4096

typedef struct {
    tpu_board_t *b;
    unsigned C;
    tpu_insn_t *prog[MAXC];
    size_t count[MAXC];
    uint8_t *host[MAXC];
    char *tbuf[MAXC];
    size_t tlen[MAXC];
    tpu_core_result_t res[MAXC];
    char msg[4096];
} brd_t;

static tpu_board_t *new_board(unsigned rows, unsigned cols, unsigned n)
{
    tpu_board_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rows = rows;
    cfg.cols = cols;
    cfg.link_bits = 64;
    cfg.link_latency = 2;
    cfg.core.geom = tpu_core_geom_default(n);
    cfg.core.geom.ub_rows = 256;
    cfg.core.geom.acc_rows = 256;
    /* the cycle model's closed forms below assume every core STARTs in cycle 0 (board_tb's
       host starts them 4 cycles apart: tpu_board_cfg_t.start_skew, test_start_skew) */
    cfg.start_skew = TPU_BOARD_START_TOGETHER;
    tpu_board_t *b = tpu_board_new(&cfg);
    assert_non_null(b);
    return b;
}

static void set_prog(brd_t *x, unsigned i, const char *src)
{
    char *e;
    free(x->prog[i]);
    if (tpu_asm(src, "b.s", &x->prog[i], &x->count[i], &e) != 0)
        fail_msg("%s", e);
    free(e);
}

static void run(brd_t *x)
{
    tpu_board_job_t job[MAXC];
    FILE *tf[MAXC];
    for (unsigned i = 0; i < x->C; i++) {
        if (x->host[i] == NULL)
            x->host[i] = calloc(HOST, 1);
        free(x->tbuf[i]);
        x->tbuf[i] = NULL;
        tf[i] = open_memstream(&x->tbuf[i], &x->tlen[i]);
        job[i] = (tpu_board_job_t){ x->prog[i], x->count[i], 0, x->host[i], HOST, tf[i] };
    }
    assert_int_equal(tpu_board_run(x->b, job, x->res, x->msg, sizeof x->msg), TPU_OK);
    for (unsigned i = 0; i < x->C; i++)
        fclose(tf[i]);
}

static void done(brd_t *x)
{
    for (unsigned i = 0; i < x->C; i++) {
        free(x->prog[i]);
        free(x->host[i]);
        free(x->tbuf[i]);
    }
    tpu_board_free(x->b);
}

/* the rows of core i's `w <pc> <mem>` records, in order; returns how many */
static size_t trace_rows(const char *t, unsigned pc, const char *mem, unsigned *rows, size_t max)
{
    size_t k = 0;
    char pre[32];
    snprintf(pre, sizeof pre, "w %u %s ", pc, mem);
    for (const char *p = t; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, pre, strlen(pre)) == 0) {
            assert_true(k < max);
            rows[k++] = (unsigned)strtoul(p + strlen(pre), NULL, 10);
        }
    }
    return k;
}

/* ---- reference row-write order, from docs/board.md ("A ring phase", "Transfers") ---- */
static size_t lo_of(size_t n, unsigned k, unsigned j)
{
    size_t q = n / k, r = n % k;
    return j * q + (j < r ? j : r);
}
/* appends the rows (relative to the region's first row) that position p of a ring of m
   writes in the phase over [a, a+len), N lanes per row */
static void ref_phase(unsigned m, unsigned p, size_t a, size_t len, int gather, unsigned N,
                      unsigned *rows, size_t *k)
{
    if (m <= 1)
        return;
    for (unsigned t = 0; t + 1 < m; t++) {
        unsigned j = gather ? (p + 2 * m - t) % m : (p + 2 * m - 1 - t) % m;
        size_t e0 = a + lo_of(len, m, j), e1 = a + lo_of(len, m, j + 1);
        for (size_t e = e0; e < e1; e = (e / N + 1) * N)
            rows[(*k)++] = (unsigned)(e / N);
    }
}
static size_t ref_allreduce_rows(unsigned R, unsigned S, int ring, unsigned id, size_t len,
                                 unsigned N, unsigned *rows)
{
    size_t k = 0;
    unsigned C = R * S;
    if (ring || R == 1) {
        ref_phase(C, id, 0, len, 0, N, rows, &k);
        ref_phase(C, id, 0, len, 1, N, rows, &k);
        return k;
    }
    unsigned r = id / S, c = id % S, j1 = (c + 1) % S;
    size_t a = lo_of(len, S, j1), l2 = lo_of(len, S, j1 + 1) - a;
    ref_phase(S, c, 0, len, 0, N, rows, &k);
    ref_phase(R, r, a, l2, 0, N, rows, &k);
    ref_phase(R, r, a, l2, 1, N, rows, &k);
    ref_phase(S, c, 0, len, 1, N, rows, &k);
    return k;
}

static void check_allreduce(unsigned R, unsigned S, int ring, unsigned N, unsigned nrows)
{
    brd_t x = { 0 };
    unsigned C = R * S;
    assert_true(C <= MAXC);
    x.b = new_board(R, S, N);
    x.C = C;
    size_t len = (size_t)nrows * N;
    fp32_t *in[MAXC], *out[MAXC];
    for (unsigned i = 0; i < C; i++) {
        char src[128];
        unsigned base = 3u * i; /* every core names its own region */
        snprintf(src, sizeof src, "allreduce acc row=%u rows=%u%s\nhalt\n", base, nrows,
                 ring ? " ring" : "");
        set_prog(&x, i, src);
        in[i] = malloc(sizeof(fp32_t) * (len + 1));
        out[i] = malloc(sizeof(fp32_t) * (len + 1));
        uint32_t w[256];
        for (unsigned r = 0; r < nrows; r++) {
            for (unsigned l = 0; l < N; l++) {
                w[l] = rnd_fp32();
                in[i][(size_t)r * N + l].v = w[l];
            }
            assert_int_equal(tpu_core_set_row(tpu_board_core(x.b, i), TPU_MEM_ACC, base + r, w),
                             TPU_OK);
        }
    }
    const fp32_t *const *xin = (const fp32_t *const *)in;
    if (ring || R == 1)
        assert_int_equal(tpu_allreduce_ring(C, len, xin, out), TPU_OK);
    else
        assert_int_equal(tpu_allreduce_torus(R, S, len, xin, out), TPU_OK);
    run(&x);
    unsigned *want = malloc(sizeof(unsigned) * (4 * len + 64));
    unsigned *got = malloc(sizeof(unsigned) * (4 * len + 64));
    for (unsigned i = 0; i < C; i++) {
        assert_int_equal(x.res[i].status, TPU_CORE_DONE);
        unsigned base = 3u * i;
        for (unsigned r = 0; r < nrows; r++) {
            const uint32_t *row = tpu_core_row(tpu_board_core(x.b, i), TPU_MEM_ACC, base + r);
            for (unsigned l = 0; l < N; l++)
                if (row[l] != out[i][(size_t)r * N + l].v)
                    fail_msg("%ux%u%s N=%u rows=%u: core %u element %u: 0x%08x, expected 0x%08x",
                             R, S, ring ? " ring" : "", N, nrows, i, r * N + l, row[l],
                             out[i][(size_t)r * N + l].v);
        }
        size_t nw = ref_allreduce_rows(R, S, ring, i, len, N, want);
        size_t ng = trace_rows(x.tbuf[i], 0, "acc", got, 4 * len + 64);
        if (ng != nw)
            fail_msg("%ux%u%s N=%u rows=%u: core %u wrote %zu rows, expected %zu", R, S,
                     ring ? " ring" : "", N, nrows, i, ng, nw);
        for (size_t k = 0; k < nw; k++)
            if (got[k] != want[k] + base)
                fail_msg("%ux%u N=%u: core %u write %zu: row %u, expected %u", R, S, N, i, k,
                         got[k], want[k] + base);
        assert_non_null(strstr(x.tbuf[i], "r 0 0 0.0.0.0.0.0 allreduce "));
        free(in[i]);
        free(out[i]);
    }
    /* the cycle model: all dispatch in cycle 1, core i completes in done[i] (each core its
       own: the walks to the first chunk depend on the position) and halts in done[i] + 1;
       the slowest's cost grows with the size and is at least the data movement of
       tpu_allreduce_ring/torus_cycles */
    uint64_t disp[MAXC], adone[MAXC], cost = 0;
    for (unsigned i = 0; i < C; i++)
        disp[i] = 1;
    assert_int_equal(tpu_board_allreduce_done(nrows, N, R, S, ring, 64, 2, disp, adone, NULL), TPU_OK);
    for (unsigned i = 0; i < C; i++) {
        assert_int_equal(x.res[i].counters[TPU_CNT_CYCLES], adone[i] + 2);
        assert_int_equal(x.res[i].counters[TPU_CNT_NET_BUSY], adone[i] - 1);
        cost = adone[i] - 1 > cost ? adone[i] - 1 : cost;
    }
    assert_int_equal(cost, tpu_board_allreduce_cycles(nrows, N, R, S, ring, 64, 2));
    uint64_t data = (ring || R == 1) ? tpu_allreduce_ring_cycles(len, C, 64, 2)
                                     : tpu_allreduce_torus_cycles(len, R, S, 64, 2);
    assert_true(cost >= data);
    assert_true(tpu_board_allreduce_cycles(nrows + 8, N, R, S, ring, 64, 2) > cost);
    assert_true(tpu_board_allreduce_cycles(nrows, N, R, S, ring, 256, 2) <= cost);
    free(want);
    free(got);
    done(&x);
}

static void test_allreduce(void **state)
{
    (void)state;
    static const unsigned shapes[][3] = { { 1, 2, 0 }, { 1, 3, 0 }, { 2, 2, 0 }, { 2, 3, 0 },
                                          { 2, 4, 0 }, { 3, 2, 0 }, { 2, 3, 1 }, { 2, 4, 1 },
                                          { 1, 8, 1 }, { 2, 1, 0 }, { 4, 1, 0 }, { 3, 3, 0 } };
    static const unsigned ns[] = { 1, 3, 4, 8 };
    static const unsigned rows[] = { 1, 2, 5, 7 };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
            for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
                check_allreduce(shapes[s][0], shapes[s][1], (int)shapes[s][2], ns[a], rows[r]);
}

/* the order is observable: the result depends on the grouping (not a tautology of the
   test): with x = (1e30, -1e30, 1) on a ring of 3 the chunk owners get different sums */
static void test_allreduce_order_matters(void **state)
{
    (void)state;
    brd_t x = { 0 };
    x.b = new_board(1, 3, 1);
    x.C = 3;
    const uint32_t v[3] = { 0x7149F2CAu, 0xF149F2CAu, 0x3F800000u }; /* 1e30, -1e30, 1 */
    for (unsigned i = 0; i < 3; i++) {
        set_prog(&x, i, "allreduce acc row=0 rows=3\nhalt\n");
        for (unsigned r = 0; r < 3; r++) {
            uint32_t w = v[(i + r) % 3];
            tpu_core_set_row(tpu_board_core(x.b, i), TPU_MEM_ACC, r, &w);
        }
    }
    run(&x);
    /* element e is chunk e: fold(x_e[e], x_{e+1}[e], x_{e+2}[e]), x_i[e] = v[(i + e) % 3] */
    uint32_t r0 = tpu_core_row(tpu_board_core(x.b, 0), TPU_MEM_ACC, 0)[0];
    uint32_t r1 = tpu_core_row(tpu_board_core(x.b, 0), TPU_MEM_ACC, 1)[0];
    /* element 0: (1e30 + -1e30) + 1 = 1; element 1: (1 + 1e30) + -1e30 = 0 */
    assert_int_equal(r0, 0x3F800000u);
    assert_int_equal(r1, 0x00000000u);
    for (unsigned i = 1; i < 3; i++)
        assert_memory_equal(tpu_core_row(tpu_board_core(x.b, i), TPU_MEM_ACC, 0),
                            tpu_core_row(tpu_board_core(x.b, 0), TPU_MEM_ACC, 0), 4);
    done(&x);
}

static void test_sendrecv_bcast_barrier(void **state)
{
    (void)state;
    brd_t x = { 0 };
    unsigned N = 3;
    x.b = new_board(1, 4, N);
    x.C = 4;
    uint32_t w[4][6][3];
    for (unsigned i = 0; i < 4; i++)
        for (unsigned r = 0; r < 6; r++) {
            for (unsigned l = 0; l < N; l++)
                w[i][r][l] = rnd() & 0xFFFFu;
            tpu_core_set_row(tpu_board_core(x.b, i), TPU_MEM_UB, 10 + r, w[i][r]);
            tpu_core_set_row(tpu_board_core(x.b, i), TPU_MEM_ACC, 10 + r, w[i][r]);
        }
    /* 0 -> 2 (3 UB rows), then 2 -> 0 (2 ACC rows); 1 and 3 exchange both ways; a bcast of
       2 ACC rows from root 3; a barrier */
    set_prog(&x, 0, "send ub row=10 rows=3 core=2\nrecv acc row=40 rows=2 core=2\n"
                    "bcast acc row=10 rows=2 root=3\nbarrier\nhalt\n");
    set_prog(&x, 2, "recv ub row=20 rows=3 core=0\nsend acc row=11 rows=2 core=0\n"
                    "bcast acc row=12 rows=2 root=3\nbarrier\nhalt\n");
    set_prog(&x, 1, "send ub row=10 rows=1 core=3\nrecv ub row=30 rows=1 core=3\n"
                    "bcast acc row=10 rows=2 root=3\nbarrier\nhalt\n");
    set_prog(&x, 3, "recv ub row=30 rows=1 core=1\nsend ub row=15 rows=1 core=1\n"
                    "bcast acc row=14 rows=2 root=3\nbarrier\nhalt\n");
    run(&x);
    for (unsigned i = 0; i < 4; i++) {
        if (x.res[i].status != TPU_CORE_DONE)
            fail_msg("core %u: status %d\n%s", i, x.res[i].status, x.msg);
        assert_int_equal(x.res[i].counters[TPU_CNT_INSNS], 5);
    }
    for (unsigned r = 0; r < 3; r++)
        assert_memory_equal(tpu_core_row(tpu_board_core(x.b, 2), TPU_MEM_UB, 20 + r), w[0][r],
                            sizeof w[0][r]);
    assert_memory_equal(tpu_core_row(tpu_board_core(x.b, 0), TPU_MEM_ACC, 40), w[2][1], 12);
    assert_memory_equal(tpu_core_row(tpu_board_core(x.b, 0), TPU_MEM_ACC, 41), w[2][2], 12);
    assert_memory_equal(tpu_core_row(tpu_board_core(x.b, 3), TPU_MEM_UB, 30), w[1][0], 12);
    assert_memory_equal(tpu_core_row(tpu_board_core(x.b, 1), TPU_MEM_UB, 30), w[3][5], 12);
    /* bcast: each core's own region gets root 3's rows 14, 15 */
    const unsigned bro[4] = { 10, 10, 12, 14 };
    for (unsigned i = 0; i < 4; i++)
        for (unsigned r = 0; r < 2; r++)
            assert_memory_equal(tpu_core_row(tpu_board_core(x.b, i), TPU_MEM_ACC, bro[i] + r),
                                w[3][4 + r], 12);
    /* the trace: receivers write each row once, ascending; senders and the root nothing */
    unsigned rows[16];
    assert_int_equal(trace_rows(x.tbuf[2], 0, "ub", rows, 16), 3);
    assert_true(rows[0] == 20 && rows[1] == 21 && rows[2] == 22);
    assert_int_equal(trace_rows(x.tbuf[0], 0, "ub", rows, 16), 0);
    assert_int_equal(trace_rows(x.tbuf[0], 2, "acc", rows, 16), 2);
    assert_true(rows[0] == 10 && rows[1] == 11);
    assert_int_equal(trace_rows(x.tbuf[3], 2, "acc", rows, 16), 0);
    assert_non_null(strstr(x.tbuf[3], "r 2 2 0.0.0.0.0.0 bcast "));
    assert_non_null(strstr(x.tbuf[3], "r 3 3 0.0.0.0.0.0 barrier\nr 4 4 0.0.0.0.0.0 halt\n"));
    assert_non_null(strstr(x.tbuf[0], "r 0 0 0.0.0.0.0.0 send "));
    assert_non_null(strstr(x.tbuf[2], "r 0 0 0.0.0.0.0.0 recv "));
    /* after the barrier: core 0 leaves first (it only sends the releases), then 1, 3 (one
       hop from core 0) and 2 (two hops), within a few cycles */
    for (unsigned i = 1; i < 4; i++) {
        assert_true(x.res[i].counters[TPU_CNT_CYCLES] > x.res[0].counters[TPU_CNT_CYCLES]);
        assert_true(x.res[i].counters[TPU_CNT_CYCLES] < x.res[0].counters[TPU_CNT_CYCLES] + 16);
    }
    assert_true(x.res[2].counters[TPU_CNT_CYCLES] > x.res[3].counters[TPU_CNT_CYCLES]);
    /* determinism: the same run again gives the same traces and counters */
    char *keep[4];
    tpu_core_result_t kres[4];
    for (unsigned i = 0; i < 4; i++) {
        keep[i] = strdup(x.tbuf[i]);
        kres[i] = x.res[i];
    }
    for (unsigned i = 0; i < 4; i++)
        for (unsigned r = 0; r < 6; r++) {
            tpu_core_set_row(tpu_board_core(x.b, i), TPU_MEM_UB, 10 + r, w[i][r]);
            tpu_core_set_row(tpu_board_core(x.b, i), TPU_MEM_ACC, 10 + r, w[i][r]);
        }
    run(&x);
    for (unsigned i = 0; i < 4; i++) {
        assert_string_equal(keep[i], x.tbuf[i]);
        assert_memory_equal(kres[i].counters, x.res[i].counters, sizeof kres[i].counters);
        free(keep[i]);
    }
    done(&x);
}

/* a late core: the others wait for it at the barrier (NET_BUSY), then all go on together */
static void test_cycles_wait(void **state)
{
    (void)state;
    brd_t x = { 0 };
    x.b = new_board(2, 2, 4);
    x.C = 4;
    for (unsigned i = 0; i < 4; i++)
        set_prog(&x, i, i == 2 ? "dma_in ub row=0 rows=64 cols=4 addr=0\nbarrier\nhalt\n"
                               : "barrier\nhalt\n");
    run(&x);
    /* docs/board.md: core 2 (one hop from core 0, D = 2) arrives last: its token is counted
       2 + 3 + 2 cycles after its dispatch, core 0 releases 1, 2, 3 in the next cycles, the
       release to core 2 leaves 2 cycles later and is taken 3 + 2 after that */
    uint64_t late = x.res[2].counters[TPU_CNT_NET_BUSY];
    assert_int_equal(late, (2 + 3 + 2) + 2 + 3 + 2);
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(x.res[i].status, TPU_CORE_DONE);
        if (i != 2)
            assert_true(x.res[i].counters[TPU_CNT_NET_BUSY] > late + 64);
    }
    /* release order: core 0 done first (it only sends), then 1, 2 (2 hops), 3 */
    assert_true(x.res[0].counters[TPU_CNT_CYCLES] < x.res[1].counters[TPU_CNT_CYCLES]);
    assert_true(x.res[1].counters[TPU_CNT_CYCLES] < x.res[3].counters[TPU_CNT_CYCLES]);
    /* send/recv: the hop count enters the cost (core 0 -> 3 is 2 hops on a 2x2 torus) */
    set_prog(&x, 0, "send ub row=0 rows=2 core=3\nhalt\n");
    set_prog(&x, 3, "recv ub row=0 rows=2 core=0\nhalt\n");
    set_prog(&x, 1, "halt\n");
    set_prog(&x, 2, "halt\n");
    run(&x);
    assert_int_equal(tpu_board_hops(2, 2, 0, 3), 2);
    assert_int_equal(x.res[3].counters[TPU_CNT_NET_BUSY],
                     tpu_board_sendrecv_cycles(2, 4, 16, 2, 64, 2));
    /* the sender completes when its last flit has left, P(2 hops) + 1 = 7 before the
       receiver has written it; both dispatch in 1: the token reaches the sender in 1 + 6 + 5,
       then 2 rows of 4 bf16 are 2 flits + a header */
    assert_int_equal(x.res[0].counters[TPU_CNT_CYCLES] + 7, x.res[3].counters[TPU_CNT_CYCLES]);
    assert_int_equal(x.res[0].counters[TPU_CNT_NET_BUSY], 6 + 5 + 3);
    /* bcast from root 1: the root sends to 2, 3, 0 in turn; each receiver completes when its
       own transfer has arrived, the root when its last send has left */
    for (unsigned i = 0; i < 4; i++)
        set_prog(&x, i, "bcast acc row=0 rows=16 root=1\nhalt\n");
    run(&x);
    uint64_t c0 = x.res[0].counters[TPU_CNT_CYCLES], c1 = x.res[1].counters[TPU_CNT_CYCLES];
    uint64_t c2 = x.res[2].counters[TPU_CNT_CYCLES], c3 = x.res[3].counters[TPU_CNT_CYCLES];
    assert_true(c2 < c3 && c3 < c0 && c1 < c0); /* the root: when its last flit has left */
    /* on the 2x2 torus core 3 is one hop from root 1, core 2 two, core 0 one: every core
       dispatches in 1, send j starts when the previous one has completed + 3 (the first: when
       core 2's token has come, 1 + 6 + 5) and takes 16 rows x 2 flits + 2 headers */
    uint64_t disp[4] = { 1, 1, 1, 1 }, bd[4];
    unsigned hops[4] = { 1, 0, 2, 1 };
    tpu_board_bcast_done(16, 4, 32, 4, 1, disp, hops, 64, 2, bd);
    assert_int_equal(bd[1], 12 + 34 + 3 + 34 + 3 + 34);
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(x.res[i].counters[TPU_CNT_CYCLES], bd[i] + 2);
    assert_int_equal(c1, 3 + tpu_board_bcast_cycles(16, 4, 32, 4, 2, 64, 2));
    done(&x);
}

static void expect_stuck(unsigned R, unsigned S, const char *const *progs, const char *const *texts)
{
    brd_t x = { 0 };
    x.b = new_board(R, S, 2);
    x.C = R * S;
    for (unsigned i = 0; i < x.C; i++)
        set_prog(&x, i, progs[i]);
    run(&x);
    for (unsigned i = 0; i < x.C; i++)
        assert_true(x.res[i].status != TPU_CORE_DONE || strstr(x.msg, "stuck") != NULL);
    for (const char *const *t = texts; *t; t++)
        if (strstr(x.msg, *t) == NULL)
            fail_msg("no '%s' in:\n%s", *t, x.msg);
    done(&x);
}

static void test_deadlocks(void **state)
{
    (void)state;
    /* both receive first */
    const char *p1[] = { "recv ub row=0 rows=1 core=1\nhalt\n", "recv ub row=0 rows=1 core=0\nhalt\n" };
    const char *t1[] = { "deadlock", "core 0 stuck at pc 0: recv ub row=0 rows=1 core=1 (core 1 "
                         "waits at pc 0: recv ub row=0 rows=1 core=0)",
                         "core 1 stuck at pc 0", NULL };
    expect_stuck(1, 2, p1, t1);
    /* rows differ */
    const char *p2[] = { "send ub row=0 rows=2 core=1\nhalt\n", "recv ub row=0 rows=3 core=0\nhalt\n" };
    const char *t2[] = { "core 0 stuck at pc 0: send ub row=0 rows=2 core=1 (its peer core 1 at "
                         "pc 0 names other rows or memory: recv ub row=0 rows=3 core=0)", NULL };
    expect_stuck(1, 2, p2, t2);
    /* a peer that halted; different group collectives */
    const char *p3[] = { "nop\nbarrier\nhalt\n", "halt\n", "barrier\nhalt\n" };
    const char *t3[] = { "core 0 stuck at pc 1: barrier (core 1 has halted)",
                         "core 2 stuck at pc 0: barrier (core 1 has halted)", NULL };
    expect_stuck(1, 3, p3, t3);
    const char *p4[] = { "barrier\nhalt\n", "allreduce acc row=0 rows=1\nhalt\n" };
    const char *t4[] = { "core 0 stuck at pc 0: barrier (core 1 waits at pc 0: allreduce acc "
                         "row=0 rows=1)", NULL };
    expect_stuck(1, 2, p4, t4);
    /* error 8 on a board (send to itself, core >= C): that core stops, its peer is stuck */
    const char *p5[] = { "send ub row=0 rows=1 core=0\nhalt\n", "recv ub row=0 rows=1 core=0\nhalt\n" };
    const char *t5[] = { "core 1 stuck at pc 0: recv ub row=0 rows=1 core=0 (core 0 stopped with "
                         "error 8 at pc 0)", NULL };
    expect_stuck(1, 2, p5, t5);
    brd_t x = { 0 };
    x.b = new_board(2, 2, 2);
    x.C = 4;
    for (unsigned i = 0; i < 4; i++)
        set_prog(&x, i, "bcast ub row=0 rows=1 root=4\nhalt\n");
    run(&x);
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(x.res[i].status, TPU_CORE_ERROR);
        assert_int_equal(x.res[i].err_code, TPU_ERR_CORE);
    }
    assert_string_equal(x.msg, "");
    done(&x);
}

static void test_topology(void **state)
{
    (void)state;
    unsigned r, c;
    char err[256];
    static const unsigned want[][3] = { { 8, 2, 4 }, { 4, 2, 2 }, { 6, 2, 3 }, { 7, 1, 7 },
                                        { 9, 3, 3 }, { 12, 3, 4 }, { 1, 1, 1 }, { 64, 8, 8 } };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(tpu_board_topology_parse("torus", want[i][0], &r, &c, err, sizeof err), 0);
        assert_true(r == want[i][1] && c == want[i][2]);
    }
    assert_int_equal(tpu_board_topology_parse(NULL, 8, &r, &c, err, sizeof err), 0);
    assert_true(r == 2 && c == 4);
    assert_int_equal(tpu_board_topology_parse(NULL, 6, &r, &c, err, sizeof err), 0);
    assert_true(r == 1 && c == 6);
    assert_int_equal(tpu_board_topology_parse("ring", 8, &r, &c, err, sizeof err), 0);
    assert_true(r == 1 && c == 8);
    assert_int_equal(tpu_board_topology_parse("torus:4x2", 8, &r, &c, err, sizeof err), 0);
    assert_true(r == 4 && c == 2);
    assert_int_equal(tpu_board_topology_parse("torus:3x3", 8, &r, &c, err, sizeof err), -1);
    assert_string_equal(err, "--topology 'torus:3x3': R*S = 9 must equal --cores 8 (allowed: "
                             "torus:RxS, R, S >= 1)");
    assert_int_equal(tpu_board_topology_parse("mesh", 8, &r, &c, err, sizeof err), -1);
    assert_int_equal(tpu_board_topology_parse("torus:2y4", 8, &r, &c, err, sizeof err), -1);
    /* hops: dimension ordered, the shorter way round each ring */
    assert_int_equal(tpu_board_hops(1, 8, 0, 4), 4);
    assert_int_equal(tpu_board_hops(1, 8, 0, 5), 3);
    assert_int_equal(tpu_board_hops(2, 4, 0, 7), 2);
    assert_int_equal(tpu_board_hops(2, 4, 5, 5), 0);
    /* bad board configurations */
    tpu_board_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rows = 9;
    cfg.cols = 8;
    cfg.core.geom = tpu_core_geom_default(2);
    assert_null(tpu_board_new(&cfg));
    cfg.rows = 1;
    cfg.link_bits = 16;
    assert_null(tpu_board_new(&cfg));
    cfg.link_bits = 64;
    cfg.link_latency = 17;
    assert_null(tpu_board_new(&cfg));
    cfg.link_latency = 2;
    cfg.start_skew = TPU_BOARD_START_SKEW_MAX + 1;
    assert_null(tpu_board_new(&cfg));
}

/* the cores START one after the other (start_skew, default 4 cycles: board_tb's host):
   each core's counters count from its own START, so a barrier costs the early cores the
   skew (docs/board.md "Cycle model"); measured on board_tb N = 4: barrier then halt, CYCLES
   15, 16 (C = 2 ring); 25, 24, 24, 18 (C = 4 ring); 48, 43, 43, 37, 34, 34, 34, 28 (2x4) */
static void test_start_skew(void **state)
{
    (void)state;
    static const unsigned shapes[3][2] = { { 1, 2 }, { 1, 4 }, { 2, 4 } };
    static const uint64_t want[3][8] = { { 15, 16 }, { 25, 24, 24, 18 },
                                         { 48, 43, 43, 37, 34, 34, 34, 28 } };
    for (unsigned k = 0; k < 3; k++) {
        tpu_board_cfg_t cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.rows = shapes[k][0];
        cfg.cols = shapes[k][1];
        cfg.link_latency = 2;
        cfg.core.geom = tpu_core_geom_default(4);
        brd_t x = { 0 };
        x.b = tpu_board_new(&cfg);
        assert_non_null(x.b);
        x.C = cfg.rows * cfg.cols;
        for (unsigned i = 0; i < x.C; i++)
            set_prog(&x, i, "barrier\nhalt\n");
        run(&x);
        for (unsigned i = 0; i < x.C; i++)
            assert_int_equal(x.res[i].counters[TPU_CNT_CYCLES], want[k][i]);
        done(&x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_allreduce_order_matters),
        cmocka_unit_test(test_sendrecv_bcast_barrier),
        cmocka_unit_test(test_cycles_wait),
        cmocka_unit_test(test_deadlocks),
        cmocka_unit_test(test_topology),
        cmocka_unit_test(test_start_skew),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
