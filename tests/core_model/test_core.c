/* SPDX-License-Identifier: Apache-2.0 */
/* test-core-model: the core's C model (tpu/core.h) against independent compositions of the
   tested library functions (tpu_matmul, vpu_bias_add, vpu_relu, vpu_softmax, vpu_reduce,
   fp32_to_bf16), bit for bit, at N = 1, 3, 4, 8, 16; every error code; the timing model
   against the MXU-level schedule (tpu_mxu_schedule); trace independence from timing; the AXI
   data width (default rule, DMA timing at 64 .. 512 bits); a loop nest (tests/asm/loop_matmul.s)
   against its straight-line program: the same rows, one dispatch cycle per loop and stride. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tpu/asm.h"
#include "tpu/core.h"
#include "tpu/isa.h"
#include "tpu/mxu.h"
#include "tpu/numerics.h"
#include "tpu/vpu.h"

static const unsigned kSizes[] = { 1, 3, 4, 8, 16 };
#define NSIZES (sizeof kSizes / sizeof kSizes[0])

/* ---- data ------------------------------------------------------------------------------ */
static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}
/* bf16: mostly moderate normals of both signs, some zeros, subnormals, Inf */
static uint16_t rnd_bf16(void)
{
    uint32_t r = rnd() % 64u;
    uint16_t s = (uint16_t)((rnd() & 1u) << 15);
    if (r == 0)
        return s;
    if (r == 1)
        return (uint16_t)(s | (rnd() & 0x7Fu)); /* subnormal */
    return (uint16_t)(s | ((120u + rnd() % 14u) << 7) | (rnd() & 0x7Fu));
}
static uint32_t rnd_fp32(void)
{
    uint32_t s = (rnd() & 1u) << 31;
    return s | ((122u + rnd() % 10u) << 23) | (rnd() & 0x7FFFFFu);
}

static void put16(uint8_t *h, size_t a, uint16_t v)
{
    h[a] = (uint8_t)v;
    h[a + 1] = (uint8_t)(v >> 8);
}
static uint16_t get16(const uint8_t *h, size_t a) { return (uint16_t)(h[a] | h[a + 1] << 8); }
static void put32(uint8_t *h, size_t a, uint32_t v)
{
    for (unsigned b = 0; b < 4; b++)
        h[a + b] = (uint8_t)(v >> (8u * b));
}
static uint32_t get32(const uint8_t *h, size_t a)
{
    return (uint32_t)h[a] | (uint32_t)h[a + 1] << 8 | (uint32_t)h[a + 2] << 16 |
           (uint32_t)h[a + 3] << 24;
}

/* ---- program builder ------------------------------------------------------------------- */
typedef struct {
    tpu_insn_t insn[16384];
    size_t count;
} prog_t;

static void emit(prog_t *p, const tpu_dinsn_t *d)
{
    assert_true(p->count < 16384);
    p->insn[p->count++] = tpu_insn_encode(d);
}
static void op0(prog_t *p, unsigned opcode)
{
    tpu_dinsn_t d = { .opcode = opcode };
    emit(p, &d);
}
static void dma(prog_t *p, unsigned opcode, unsigned mem, unsigned row, unsigned rows,
                unsigned cols, uint32_t addr, uint32_t stride)
{
    tpu_dinsn_t d = { .opcode = opcode, .mem = mem, .n = rows, .row = row, .cols = cols,
                      .addr = addr, .stride = stride };
    emit(p, &d);
}
static void lw(prog_t *p, unsigned w)
{
    tpu_dinsn_t d = { .opcode = TPU_OP_LW, .w_row = w };
    emit(p, &d);
}
static void lw_t(prog_t *p, unsigned w)
{
    tpu_dinsn_t d = { .opcode = TPU_OP_LW, .w_row = w, .transpose = 1 };
    emit(p, &d);
}
static void matmul(prog_t *p, unsigned ub, unsigned acc, unsigned rows, unsigned accumulate)
{
    tpu_dinsn_t d = { .opcode = TPU_OP_MATMUL, .ub_row = ub, .acc_row = acc, .n = rows,
                      .accumulate = accumulate };
    emit(p, &d);
}
static void vop(prog_t *p, unsigned op, unsigned am, unsigned ar, unsigned bm, unsigned br,
                unsigned bcast, unsigned dm, unsigned dr, unsigned rows)
{
    tpu_dinsn_t d = { .opcode = TPU_OP_VOP, .vop = op, .a_mem = am, .a_row = ar, .b_mem = bm,
                      .b_row = br, .bcast = bcast, .d_mem = dm, .d_row = dr, .n = rows };
    emit(p, &d);
}
static void vred(prog_t *p, unsigned opcode, unsigned red, unsigned sm, unsigned sr,
                 unsigned dm, unsigned dr, unsigned g, unsigned len, unsigned cs, unsigned rs)
{
    tpu_dinsn_t d = { .opcode = opcode, .red = red, .src_mem = sm, .src_row = sr, .d_mem = dm,
                      .dst_row = dr, .n = g, .length = len, .chunk_stride = cs,
                      .row_stride = rs };
    emit(p, &d);
}

/* ---- a run ----------------------------------------------------------------------------- */
#define HOST_BYTES (1u << 20)

typedef struct {
    tpu_core_t *core;
    uint8_t *host;
    tpu_core_result_t res;
} run_t;

static tpu_core_cfg_t cfg_for(unsigned n)
{
    tpu_core_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.geom = tpu_core_geom_default(n);
    cfg.geom.imem_insns = 16384; /* the N = 1 matmuls are long programs */
    cfg.pe_stages = 1;
    cfg.axi_latency = 4;
    return cfg;
}

static void run_prog(run_t *r, const tpu_core_cfg_t *cfg, const prog_t *p, FILE *trace)
{
    if (r->core == NULL) {
        r->core = tpu_core_new(cfg);
        assert_non_null(r->core);
    }
    assert_int_equal(tpu_core_run(r->core, p->insn, p->count, 0, r->host, HOST_BYTES, trace,
                                  &r->res),
                     TPU_OK);
}

/* ---- matmul programs (host: A M x K bf16 at 0, W K x N' bf16 at WB, C M x N' f32 at CB,
   output of dense (bf16) at OB, bias at BB, a -0 bf16 word at NZ) ------------------------ */
enum { WB = 0x20000, CB = 0x40000, OB = 0x60000, BB = 0x70000, NZ = 0x7F000 };

static void build_matmul(prog_t *p, unsigned n, unsigned m, unsigned k, unsigned np,
                         unsigned slots, int dense)
{
    unsigned kt_n = (k + n - 1) / n, nt_n = (np + n - 1) / n, tile = 0;
    p->count = 0;
    for (unsigned kt = 0; kt < kt_n; kt++) {
        unsigned cols = k - kt * n < n ? k - kt * n : n;
        dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, kt * m, m, cols, kt * n * 2u, k * 2u);
    }
    if (dense)
        for (unsigned nt = 0; nt < nt_n; nt++) {
            unsigned cols = np - nt * n < n ? np - nt * n : n;
            dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, kt_n * m + nt, 1, cols, BB + nt * n * 2u, 0);
        }
    for (unsigned nt = 0; nt < nt_n; nt++) {
        unsigned ncols = np - nt * n < n ? np - nt * n : n;
        for (unsigned kt = 0; kt < kt_n; kt++, tile++) {
            unsigned slot = tile % slots, krows = k - kt * n < n ? k - kt * n : n;
            dma(p, TPU_OP_DMA_IN, TPU_MEM_WMEM, slot * n, krows, ncols,
                WB + (kt * n * np + nt * n) * 2u, np * 2u);
            if (krows < n)
                dma(p, TPU_OP_DMA_IN, TPU_MEM_WMEM, slot * n + krows, n - krows, 1, NZ, 0);
            lw(p, slot * n);
            matmul(p, kt * m, nt * m, m, kt > 0);
        }
        if (dense) {
            vop(p, TPU_VOP_ADD, TPU_MEM_ACC, nt * m, TPU_MEM_UB, kt_n * m + nt, 1, TPU_MEM_ACC,
                nt * m, m);
            vop(p, TPU_VOP_RELU, TPU_MEM_ACC, nt * m, 0, 0, 0, TPU_MEM_UB, 2000 + nt * m, m);
            dma(p, TPU_OP_DMA_OUT, TPU_MEM_UB, 2000 + nt * m, m, ncols, OB + nt * n * 2u,
                np * 2u);
        } else {
            dma(p, TPU_OP_DMA_OUT, TPU_MEM_ACC, nt * m, m, ncols, CB + nt * n * 4u, np * 4u);
        }
    }
    op0(p, TPU_OP_HALT);
}

static void fill_matmul_inputs(uint8_t *h, unsigned m, unsigned k, unsigned np, uint16_t *a,
                               uint16_t *w, uint16_t *bias)
{
    for (unsigned i = 0; i < m * k; i++)
        put16(h, 2u * i, a[i] = rnd_bf16());
    for (unsigned i = 0; i < k * np; i++)
        put16(h, WB + 2u * i, w[i] = rnd_bf16());
    for (unsigned i = 0; i < np; i++)
        put16(h, BB + 2u * i, bias[i] = rnd_bf16());
    put16(h, NZ, 0x8000u);
}

static void test_matmul_and_dense(void **state)
{
    (void)state;
    static const unsigned shapes[][3] = { { 7, 13, 10 }, { 20, 33, 17 }, { 1, 1, 1 },
                                          { 48, 32, 32 } };
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        unsigned m = shapes[sh][0], k = shapes[sh][1], np = shapes[sh][2];
        uint16_t *a = malloc(2u * m * k), *w = malloc(2u * k * np), *bias = malloc(2u * np);
        uint32_t *first = calloc((size_t)m * np, 4);
        for (size_t si = 0; si < NSIZES; si++) {
            unsigned n = kSizes[si];
            for (int dense = 0; dense < 2; dense++) {
                run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
                rng_state = 1000u + sh;
                fill_matmul_inputs(r.host, m, k, np, a, w, bias);
                tpu_core_cfg_t cfg = cfg_for(n);
                prog_t *p = malloc(sizeof *p);
                build_matmul(p, n, m, k, np, dense ? 2u : 8u, dense);
                run_prog(&r, &cfg, p, NULL);
                assert_int_equal(r.res.status, TPU_CORE_DONE);
                assert_int_equal(r.res.uninit_reads, 0);
                /* the reference: tpu_matmul (and for dense the VPU functions) */
                tpu_mxu_cfg_t mc = { .n = n };
                fp32_t *c = malloc(sizeof *c * m * np);
                assert_int_equal(tpu_matmul(&mc, m, k, np, (const bf16_t *)a, (const bf16_t *)w,
                                            c, NULL),
                                 TPU_OK);
                if (!dense) {
                    for (unsigned i = 0; i < m * np; i++) {
                        uint32_t got = get32(r.host, CB + 4u * i);
                        if (got != c[i].v)
                            fail_msg("N=%u %ux%ux%u C[%u] model %08x tpu_matmul %08x", n, m, k,
                                     np, i, got, c[i].v);
                        if (si == 0)
                            first[i] = got;
                        else if (got != first[i]) /* independent of N */
                            fail_msg("N=%u C[%u] %08x differs from N=1's %08x", n, i, got,
                                     first[i]);
                    }
                } else {
                    uint32_t *cw = malloc(4u * m * np), *bw = malloc(4u * np),
                             *y = malloc(4u * m * np);
                    for (unsigned i = 0; i < m * np; i++)
                        cw[i] = c[i].v;
                    for (unsigned i = 0; i < np; i++)
                        bw[i] = bias[i];
                    assert_int_equal(vpu_bias_add(m, np, VPU_FMT_FP32, cw, VPU_FMT_BF16, bw,
                                                  VPU_FMT_FP32, y),
                                     TPU_OK);
                    for (unsigned i = 0; i < m * np; i++) {
                        uint16_t want = fp32_to_bf16(vpu_relu(fp32_from_bits(y[i]))).v;
                        uint16_t got = get16(r.host, OB + 2u * i);
                        if (got != want)
                            fail_msg("dense N=%u %ux%ux%u out[%u] model %04x reference %04x", n,
                                     m, k, np, i, got, want);
                    }
                    free(cw);
                    free(bw);
                    free(y);
                }
                free(c);
                free(p);
                tpu_core_free(r.core);
                free(r.host);
            }
        }
        free(a);
        free(w);
        free(bias);
        free(first);
    }
}

/* lw transpose (docs/isa.md): a tile X in WMEM, A (M x N) in UB; matmul after `lw` gives
   A X, after `lw transpose` A X^T (against tpu_matmul with X^T written out), accumulating onto
   A X too; identity rows in UB after `lw transpose` give X^T itself (every finite normal
   element exactly). Both the host-float and the integer matmul path (TPU_MODEL_INTEGER_MX). */
enum { TX = 0x10000, TI = 0x18000 };
static void test_lw_transpose(void **state)
{
    (void)state;
    for (int integer = 0; integer < 2; integer++) {
        if (integer)
            setenv("TPU_MODEL_INTEGER_MX", "1", 1);
        for (size_t si = 0; si < NSIZES; si++) {
            unsigned n = kSizes[si], m = n + 3u;
            run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
            rng_state = 77u + si;
            uint16_t *a = malloc(2u * m * n), *x = malloc(2u * n * n), *xt = malloc(2u * n * n);
            for (unsigned i = 0; i < m * n; i++)
                put16(r.host, 2u * i, a[i] = rnd_bf16());
            for (unsigned i = 0; i < n; i++)
                for (unsigned j = 0; j < n; j++) {
                    x[i * n + j] = rnd_bf16();
                    xt[j * n + i] = x[i * n + j];
                    put16(r.host, TX + 2u * (i * n + j), x[i * n + j]);
                    put16(r.host, TI + 2u * (i * n + j), i == j ? 0x3F80u : 0x0000u);
                }
            prog_t *p = malloc(sizeof *p);
            p->count = 0;
            dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, m, n, 0, 2u * n);
            dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, m, n, n, TI, 2u * n);
            dma(p, TPU_OP_DMA_IN, TPU_MEM_WMEM, n, n, n, TX, 2u * n); /* slot 1 */
            lw(p, n);
            matmul(p, 0, 0, m, 0);            /* A X */
            lw_t(p, n);
            matmul(p, 0, m, m, 0);            /* A X^T */
            matmul(p, 0, 0, m, 1);            /* A X + A X^T (the chain continues) */
            lw(p, n);                         /* bank alternation: a plain load again */
            matmul(p, 0, 2u * m, m, 0);       /* A X */
            lw_t(p, n);
            matmul(p, m, 3u * m, n, 0);       /* I X^T = X^T */
            dma(p, TPU_OP_DMA_OUT, TPU_MEM_ACC, 0, 3u * m + n, n, CB, 4u * n);
            op0(p, TPU_OP_HALT);
            tpu_core_cfg_t cfg = cfg_for(n);
            run_prog(&r, &cfg, p, NULL);
            assert_int_equal(r.res.status, TPU_CORE_DONE);
            assert_int_equal(r.res.uninit_reads, 0);
            tpu_mxu_cfg_t mc = { .n = n };
            fp32_t *cx = malloc(sizeof *cx * m * n), *cxt = malloc(sizeof *cxt * m * n);
            assert_int_equal(tpu_matmul(&mc, m, n, n, (const bf16_t *)a, (const bf16_t *)x, cx,
                                        NULL), TPU_OK);
            assert_int_equal(tpu_matmul(&mc, m, n, n, (const bf16_t *)a, (const bf16_t *)xt, cxt,
                                        NULL), TPU_OK);
            for (unsigned i = 0; i < m * n; i++) {
                /* the accumulate continues A X's chain with A X^T's products */
                fp32_t acc = cx[i];
                unsigned row = i / n, col = i % n;
                for (unsigned k = 0; k < n; k++)
                    acc = fp32_mac(acc, bf16_from_bits(a[row * n + k]),
                                   bf16_from_bits(xt[k * n + col]));
                uint32_t got0 = get32(r.host, CB + 4u * i),
                         got1 = get32(r.host, CB + 4u * (m * n + i)),
                         got2 = get32(r.host, CB + 4u * (2u * m * n + i));
                if (got1 != cxt[i].v || got0 != acc.v || got2 != cx[i].v)
                    fail_msg("N=%u integer=%d element %u: A X^T %08x (want %08x), A X + A X^T "
                             "%08x (want %08x), A X %08x (want %08x)", n, integer, i, got1,
                             cxt[i].v, got0, acc.v, got2, cx[i].v);
            }
            for (unsigned i = 0; i < n * n; i++) {
                uint32_t got = get32(r.host, CB + 4u * (3u * m * n + i));
                uint16_t v = xt[i];
                unsigned e = (v >> 7) & 0xFFu;
                if (e != 0 && e != 0xFFu && got != (uint32_t)v << 16)
                    fail_msg("N=%u integer=%d X^T[%u][%u] = %08x, want %04x0000", n, integer,
                             i / n, i % n, got, v);
            }
            free(cx);
            free(cxt);
            free(a);
            free(x);
            free(xt);
            free(p);
            tpu_core_free(r.core);
            free(r.host);
        }
        unsetenv("TPU_MODEL_INTEGER_MX");
    }
}

/* vop log and vop rsqrt (op 12, 13) between UB (bf16) and ACC (fp32), in place too, against
   vpu_vec_unary with vpu_log / vpu_rsqrt, on inputs of every class (negatives, zeros,
   subnormals, Inf, NaN) */
static void test_vop_log_rsqrt(void **state)
{
    (void)state;
    static const uint32_t edge[] = { 0x00000000u, 0x80000000u, 0x00000001u, 0x3F800000u,
                                     0x7F800000u, 0xFF800000u, 0x7FC00001u, 0xBF800000u,
                                     0x3F7FFFFFu, 0x7F7FFFFFu, 0x00800000u, 0x40800000u };
    for (size_t si = 0; si < NSIZES; si++) {
        unsigned n = kSizes[si], rows = 5;
        run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
        rng_state = 1234u + n;
        uint32_t xf[5 * 16], xb[5 * 16];
        for (unsigned i = 0; i < rows * n; i++) {
            xf[i] = i % 3 == 0 ? edge[(i / 3) % 12] : (rnd_fp32() & 0x7FFFFFFFu) ^ (rnd() % 5 == 0 ? 0x80000000u : 0u);
            xb[i] = i % 4 == 0 ? edge[(i / 4) % 12] >> 16 : rnd_bf16();
            put32(r.host, 4u * i, xf[i]);
            put16(r.host, 0x1000u + 2u * i, (uint16_t)xb[i]);
        }
        prog_t *p = malloc(sizeof *p);
        p->count = 0;
        dma(p, TPU_OP_DMA_IN, TPU_MEM_ACC, 0, rows, n, 0, 4u * n);
        dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, rows, n, 0x1000u, 2u * n);
        vop(p, TPU_VOP_LOG, TPU_MEM_ACC, 0, 0, 0, 0, TPU_MEM_ACC, 10, rows);
        vop(p, TPU_VOP_LOG, TPU_MEM_UB, 0, 0, 0, 0, TPU_MEM_ACC, 20, rows);
        vop(p, TPU_VOP_RSQRT, TPU_MEM_ACC, 0, 0, 0, 0, TPU_MEM_UB, 10, rows);
        vop(p, TPU_VOP_RSQRT, TPU_MEM_UB, 0, 0, 0, 0, TPU_MEM_UB, 0, rows); /* in place */
        dma(p, TPU_OP_DMA_OUT, TPU_MEM_ACC, 10, rows, n, 0x2000u, 4u * n);
        dma(p, TPU_OP_DMA_OUT, TPU_MEM_ACC, 20, rows, n, 0x3000u, 4u * n);
        dma(p, TPU_OP_DMA_OUT, TPU_MEM_UB, 10, rows, n, 0x4000u, 2u * n);
        dma(p, TPU_OP_DMA_OUT, TPU_MEM_UB, 0, rows, n, 0x5000u, 2u * n);
        op0(p, TPU_OP_HALT);
        tpu_core_cfg_t cfg = cfg_for(n);
        run_prog(&r, &cfg, p, NULL);
        uint32_t want[4][5 * 16];
        assert_int_equal(vpu_vec_unary(VPU_OP_LOG, rows * n, VPU_FMT_FP32, xf, VPU_FMT_FP32,
                                       want[0]), TPU_OK);
        assert_int_equal(vpu_vec_unary(VPU_OP_LOG, rows * n, VPU_FMT_BF16, xb, VPU_FMT_FP32,
                                       want[1]), TPU_OK);
        assert_int_equal(vpu_vec_unary(VPU_OP_RSQRT, rows * n, VPU_FMT_FP32, xf, VPU_FMT_BF16,
                                       want[2]), TPU_OK);
        assert_int_equal(vpu_vec_unary(VPU_OP_RSQRT, rows * n, VPU_FMT_BF16, xb, VPU_FMT_BF16,
                                       want[3]), TPU_OK);
        for (unsigned i = 0; i < rows * n; i++) {
            uint32_t got[4] = { get32(r.host, 0x2000u + 4u * i), get32(r.host, 0x3000u + 4u * i),
                                get16(r.host, 0x4000u + 2u * i), get16(r.host, 0x5000u + 2u * i) };
            for (unsigned k = 0; k < 4; k++)
                if (got[k] != want[k][i])
                    fail_msg("N=%u result %u element %u: core %08x, vpu_vec_unary %08x", n, k, i,
                             got[k], want[k][i]);
        }
        /* spot checks of the functions themselves */
        assert_int_equal(vpu_log(fp32_from_bits(0x3F800000u)).v, 0);
        assert_int_equal(vpu_rsqrt(fp32_from_bits(0x40800000u)).v, 0x3F000000u);
        free(p);
        tpu_core_free(r.core);
        free(r.host);
    }
}

/* softmax and vred over G logical rows of `len` elements in the tile-major ACC layout
   (chunk_stride G, row_stride 1), against vpu_softmax and vpu_reduce */
static void test_softmax_vred(void **state)
{
    (void)state;
    for (size_t si = 0; si < NSIZES; si++) {
        unsigned n = kSizes[si];
        static const unsigned lens[] = { 1, 5, 17 };
        for (size_t li = 0; li < 3; li++) {
            unsigned len = lens[li], g_n = n + 3, chunks = (len + n - 1) / n;
            run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
            rng_state = 77u + li * 10u + n;
            /* logical row g, element i at host fp32 x[g][i]; ACC row (c*G + g), lane i%N */
            uint32_t *x = calloc((size_t)g_n * chunks * n, 4);
            for (unsigned g = 0; g < g_n; g++)
                for (unsigned i = 0; i < chunks * n; i++) {
                    uint32_t v = rnd_fp32();
                    if (g == 1 && i == 0)
                        v = 0xFF800000u; /* -Inf among finite */
                    x[(size_t)g * chunks * n + i] = v;
                }
            /* host: chunk c of every logical row: rows c*G + g at 0x1000 * c, N fp32 per row */
            for (unsigned ch = 0; ch < chunks; ch++)
                for (unsigned g = 0; g < g_n; g++)
                    for (unsigned l = 0; l < n; l++)
                        put32(r.host, 0x4000u * ch + 4u * (g * n + l),
                              x[(size_t)g * chunks * n + ch * n + l]);
            prog_t *p = malloc(sizeof *p);
            p->count = 0;
            for (unsigned ch = 0; ch < chunks; ch++) {
                dma(p, TPU_OP_DMA_IN, TPU_MEM_ACC, ch * g_n, g_n, n, 0x4000u * ch, 4u * n);
                dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, ch * g_n, g_n, n, 0x4000u * ch, 4u * n);
            }
            unsigned base2 = 500;
            /* reductions of the ACC (fp32) data into ACC and UB, and of the UB (bf16) data */
            vred(p, TPU_OP_VRED, TPU_RED_SUM, TPU_MEM_ACC, 0, TPU_MEM_ACC, 300, g_n, len, g_n, 1);
            vred(p, TPU_OP_VRED, TPU_RED_MAX, TPU_MEM_ACC, 0, TPU_MEM_UB, 300, g_n, len, g_n, 1);
            vred(p, TPU_OP_VRED, TPU_RED_MIN, TPU_MEM_UB, 0, TPU_MEM_ACC, 310, g_n, len, g_n, 1);
            vred(p, TPU_OP_SOFTMAX, 0, TPU_MEM_ACC, 0, TPU_MEM_ACC, base2, g_n, len, g_n, 1);
            /* again from fresh data into UB */
            for (unsigned ch = 0; ch < chunks; ch++)
                dma(p, TPU_OP_DMA_IN, TPU_MEM_ACC, ch * g_n, g_n, n, 0x4000u * ch, 4u * n);
            vred(p, TPU_OP_SOFTMAX, 0, TPU_MEM_ACC, 0, TPU_MEM_UB, base2, g_n, len, g_n, 1);
            op0(p, TPU_OP_HALT);
            tpu_core_cfg_t cfg = cfg_for(n);
            run_prog(&r, &cfg, p, NULL);
            assert_int_equal(r.res.status, TPU_CORE_DONE);
            for (unsigned g = 0; g < g_n; g++) {
                const uint32_t *row = x + (size_t)g * chunks * n;
                uint32_t ub_row[64 * 16];
                for (unsigned i = 0; i < len; i++) /* the UB copy: halfword i%N of the row */
                    ub_row[i] = get16(r.host, 0x4000u * (i / n) + 4u * g * n + 2u * (i % n));
                fp32_t s, mx, mn;
                vpu_reduce(VPU_OP_ADD, len, VPU_FMT_FP32, row, n, &s);
                vpu_reduce(VPU_OP_MAX, len, VPU_FMT_FP32, row, n, &mx);
                vpu_reduce(VPU_OP_MIN, len, VPU_FMT_BF16, ub_row, n, &mn);
                assert_int_equal(tpu_core_row(r.core, TPU_MEM_ACC, 300 + g / n)[g % n], s.v);
                assert_int_equal(tpu_core_row(r.core, TPU_MEM_UB, 300 + g / n)[g % n],
                                 fp32_to_bf16(mx).v);
                assert_int_equal(tpu_core_row(r.core, TPU_MEM_ACC, 310 + g / n)[g % n], mn.v);
                uint32_t ya[64 * 16], yb[64 * 16];
                assert_int_equal(vpu_softmax(len, VPU_FMT_FP32, row, VPU_FMT_FP32, ya, n), TPU_OK);
                assert_int_equal(vpu_softmax(len, VPU_FMT_FP32, row, VPU_FMT_BF16, yb, n), TPU_OK);
                for (unsigned i = 0; i < len; i++) {
                    unsigned rr = base2 + (i / n) * g_n + g;
                    assert_int_equal(tpu_core_row(r.core, TPU_MEM_ACC, rr)[i % n], ya[i]);
                    assert_int_equal(tpu_core_row(r.core, TPU_MEM_UB, rr)[i % n], yb[i] & 0xFFFFu);
                }
            }
            /* the lanes of the last packed vred row that received no result are +0 */
            unsigned last = (g_n - 1) / n, used = g_n - last * n;
            for (unsigned l = used; l < n; l++)
                assert_int_equal(tpu_core_row(r.core, TPU_MEM_ACC, 300 + last)[l], 0);
            free(x);
            free(p);
            tpu_core_free(r.core);
            free(r.host);
        }
    }
}

/* ---- errors: each code from a program that should raise it; the valid instructions before
   it all execute (INSNS), and the matmul/dense/softmax programs above raise none ---------- */
static void expect_error(const prog_t *p, unsigned n, unsigned imem, int code, uint32_t pc,
                         uint64_t insns)
{
    run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
    tpu_core_cfg_t cfg = cfg_for(n);
    if (imem)
        cfg.geom.imem_insns = imem;
    char *buf = NULL;
    size_t len = 0;
    FILE *tf = open_memstream(&buf, &len);
    run_prog(&r, &cfg, p, tf);
    fclose(tf);
    if (r.res.status != TPU_CORE_ERROR || r.res.err_code != code || r.res.err_pc != pc)
        fail_msg("N=%u: expected error %d at pc %u, got status %d code %d pc %u", n, code,
                 (unsigned)pc, r.res.status, r.res.err_code, (unsigned)r.res.err_pc);
    assert_int_equal(r.res.counters[TPU_CNT_INSNS], insns);
    /* the last line: e <seq> <pc> <code> (seq: the instructions dispatched before it for a
       check error; codes 7 and 9 name the DMA's or collective's own) */
    char last[64];
    snprintf(last, sizeof last, " %u %d\n", (unsigned)pc, code);
    assert_true(len >= strlen(last));
    assert_string_equal(buf + len - strlen(last), last);
    const char *eline = strrchr(buf, 'e');
    assert_non_null(eline);
    if (code != TPU_ERR_AXI && code != TPU_ERR_LINK) {
        char full[64];
        snprintf(full, sizeof full, "e %u%s", (unsigned)insns, last);
        assert_string_equal(buf + len - strlen(full), full);
    }
    free(buf);
    tpu_core_free(r.core);
    free(r.host);
}

static void test_errors(void **state)
{
    (void)state;
    for (size_t si = 0; si < NSIZES; si++) {
        unsigned n = kSizes[si];
        tpu_core_geom_t g = tpu_core_geom_default(n);
        prog_t *p = malloc(sizeof *p);
        /* a valid prefix: 2 instructions */
#define PREFIX()                                                                              \
    do {                                                                                      \
        p->count = 0;                                                                         \
        dma(p, TPU_OP_DMA_IN, TPU_MEM_WMEM, 0, n, n, 0, 2u * n);                              \
        op0(p, TPU_OP_NOP);                                                                   \
    } while (0)
        /* 1: unknown opcode; a reserved bit */
        PREFIX();
        p->insn[p->count++] = (tpu_insn_t){ { 0x7Fu, 0, 0, 0 } };
        op0(p, TPU_OP_HALT);
        expect_error(p, n, 0, TPU_ERR_OPCODE, 2, 2);
        PREFIX();
        p->insn[p->count++] = (tpu_insn_t){ { TPU_OP_NOP, 1u, 0, 0 } };
        expect_error(p, n, 0, TPU_ERR_OPCODE, 2, 2);
        /* 2: rows out of range */
        PREFIX();
        dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, g.ub_rows - 1u, 2, 1, 0, 2);
        expect_error(p, n, 0, TPU_ERR_ROW, 2, 2);
        PREFIX();
        lw(p, g.wmem_rows - n + 1u);
        expect_error(p, n, 0, TPU_ERR_ROW, 2, 2);
        /* 3: bad counts, memories, ops */
        PREFIX();
        dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, 0, 1, 0, 2);
        expect_error(p, n, 0, TPU_ERR_COUNT, 2, 2);
        PREFIX();
        dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, 1, n + 1u, 0, 2);
        expect_error(p, n, 0, TPU_ERR_COUNT, 2, 2);
        PREFIX();
        vred(p, TPU_OP_SOFTMAX, 0, TPU_MEM_UB, 0, TPU_MEM_UB, 0, 1, 1, 1, 1);
        expect_error(p, n, 0, TPU_ERR_COUNT, 2, 2);
        /* 4: misaligned host address and stride */
        PREFIX();
        dma(p, TPU_OP_DMA_IN, TPU_MEM_ACC, 0, 1, 1, 2, 4);
        expect_error(p, n, 0, TPU_ERR_ALIGN, 2, 2);
        PREFIX();
        dma(p, TPU_OP_DMA_OUT, TPU_MEM_UB, 0, 2, 1, 0, 3);
        expect_error(p, n, 0, TPU_ERR_ALIGN, 2, 2);
        /* 5: matmul before lw */
        PREFIX();
        dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, 1, n, 0, 2u * n);
        matmul(p, 0, 0, 1, 0);
        lw(p, 0);
        expect_error(p, n, 0, TPU_ERR_NO_LW, 3, 3);
        /* 6: off the end of IMEM (16 instructions, no halt) */
        PREFIX();
        expect_error(p, n, 16, TPU_ERR_PC_END, 16, 16);
        /* 7: a DMA beat outside the host image (read, then write); the DMA completes and
           nothing after it dispatches once it has */
        PREFIX();
        dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, 1, n, HOST_BYTES, 2u * n);
        op0(p, TPU_OP_SYNC);
        op0(p, TPU_OP_HALT);
        expect_error(p, n, 0, TPU_ERR_AXI, 2, 3);
        PREFIX();
        dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, 1, n, 0, 2u * n);
        dma(p, TPU_OP_DMA_OUT, TPU_MEM_UB, 0, 2, n, HOST_BYTES - 2u * n, 2u * n);
        op0(p, TPU_OP_SYNC);
        op0(p, TPU_OP_HALT);
        expect_error(p, n, 0, TPU_ERR_AXI, 3, 4);
        /* the same programs with the bad instruction fixed run to the end */
        PREFIX();
        dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, 1, n, 0, 2u * n);
        lw(p, 0);
        matmul(p, 0, 0, 1, 0);
        dma(p, TPU_OP_DMA_OUT, TPU_MEM_ACC, 0, 1, n, HOST_BYTES - 4u * n, 4u * n);
        op0(p, TPU_OP_HALT);
        run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
        tpu_core_cfg_t cfg = cfg_for(n);
        run_prog(&r, &cfg, p, NULL);
        assert_int_equal(r.res.status, TPU_CORE_DONE);
        assert_int_equal(r.res.err_code, 0);
        assert_int_equal(r.res.counters[TPU_CNT_INSNS], p->count);
        tpu_core_free(r.core);
        free(r.host);
        free(p);
#undef PREFIX
    }
}

/* ---- timing ------------------------------------------------------------------------------
   A matmul with A and W preloaded (no DMA): lw, then per tile matmul and the next tile's lw,
   then halt. Documented fixed costs (docs/isa.md "Timing"): the first lw dispatches in cycle 1,
   reads WMEM from 2 and shifts in 3 .. N+2, so the first vector goes in N+3 where the MXU
   schedule has it in N (3 cycles later); the last result is written L+1 after its vector,
   halt dispatches in the next cycle, CYCLES = halt + 1: CYCLES = total_cycles + 5 when every
   load hides (M >= B + N + 1) and no accumulate waits for its seed (M >= L + 3). WL_STALL = the first tile's wait: N - 1 (its matmul dispatches in
   2, its first vector would be ready in 4). */
static void run_preloaded(unsigned n, unsigned stages, unsigned m, unsigned k, unsigned np,
                          tpu_core_result_t *res)
{
    tpu_core_cfg_t cfg = cfg_for(n);
    cfg.pe_stages = stages;
    tpu_core_t *core = tpu_core_new(&cfg);
    assert_non_null(core);
    unsigned kt_n = (k + n - 1) / n, nt_n = (np + n - 1) / n, tiles = kt_n * nt_n;
    uint32_t row[16];
    for (unsigned i = 0; i < n; i++)
        row[i] = 0x3F80u;
    for (unsigned rr = 0; rr < kt_n * m; rr++)
        assert_int_equal(tpu_core_set_row(core, TPU_MEM_UB, rr, row), TPU_OK);
    for (unsigned rr = 0; rr < cfg.geom.wmem_rows; rr++)
        assert_int_equal(tpu_core_set_row(core, TPU_MEM_WMEM, rr, row), TPU_OK);
    prog_t *p = malloc(sizeof *p);
    p->count = 0;
    unsigned slots = cfg.geom.wmem_rows / n;
    lw(p, 0);
    for (unsigned t = 0; t < tiles; t++) {
        unsigned kt = t % kt_n, nt = t / kt_n;
        matmul(p, kt * m, nt * m, m, kt > 0);
        if (t + 1 < tiles)
            lw(p, ((t + 1) % slots) * n);
    }
    op0(p, TPU_OP_HALT);
    assert_int_equal(tpu_core_run(core, p->insn, p->count, 0, NULL, 0, NULL, res), TPU_OK);
    assert_int_equal(res->status, TPU_CORE_DONE);
    assert_int_equal(res->counters[TPU_CNT_MXU_BUSY], (uint64_t)m * tiles);
    assert_int_equal(res->counters[TPU_CNT_INSNS], p->count);
    free(p);
    tpu_core_free(core);
}

static void test_timing_matmul(void **state)
{
    (void)state;
    for (size_t si = 0; si < NSIZES; si++) {
        unsigned n = kSizes[si];
        for (unsigned stages = 1; stages <= 3; stages++) {
            static const unsigned mult[] = { 3, 4, 8 };
            for (size_t mi = 0; mi < 3; mi++) {
                unsigned m = mult[mi] * n, k = 2 * n, np = 3 * n;
                tpu_core_result_t res;
                run_preloaded(n, stages, m, k, np, &res);
                tpu_mxu_cfg_t mc = { .n = n, .pe_stages = stages };
                tpu_mxu_schedule_t s;
                assert_int_equal(tpu_mxu_schedule(&mc, m, k, np, &s), TPU_OK);
                uint64_t lat, busy;
                assert_int_equal(tpu_mxu_timing(&mc, &lat, &busy), TPU_OK);
                /* loads hide when m >= B + N + 1; the accumulate RAW window (a vector waits
                   L + 3 cycles after the one that wrote its seed row, the MXU schedule L + 1)
                   costs nothing when m >= L + 3 */
                if (m >= busy + n + 1u && m >= lat + 3u) {
                    if (res.counters[TPU_CNT_CYCLES] != s.total_cycles + 5u)
                        fail_msg("N=%u S=%u M=%u: CYCLES %llu, schedule %llu + 5", n, stages, m,
                                 (unsigned long long)res.counters[TPU_CNT_CYCLES],
                                 (unsigned long long)s.total_cycles);
                    assert_int_equal(res.counters[TPU_CNT_WL_STALL], n - 1u);
                } else {
                    assert_true(res.counters[TPU_CNT_CYCLES] >= s.total_cycles + 5u);
                    assert_true(res.counters[TPU_CNT_WL_STALL] >= n - 1u);
                }
                tpu_mxu_schedule_free(&s);
            }
        }
    }
}

/* A program's trace does not depend on timing: the AXI latency changes CYCLES, not the trace. */
static void test_trace_timing_free(void **state)
{
    (void)state;
    unsigned n = 4, m = 9, k = 10, np = 7;
    char *buf[2] = { NULL, NULL };
    size_t len[2] = { 0, 0 };
    uint64_t cycles[2];
    for (int v = 0; v < 2; v++) {
        run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
        uint16_t a[90], w[70], bias[7];
        rng_state = 5;
        fill_matmul_inputs(r.host, m, k, np, a, w, bias);
        tpu_core_cfg_t cfg = cfg_for(n);
        cfg.axi_latency = v ? 57u : 4u;
        prog_t *p = malloc(sizeof *p);
        build_matmul(p, n, m, k, np, 2, 1);
        FILE *tf = open_memstream(&buf[v], &len[v]);
        run_prog(&r, &cfg, p, tf);
        fclose(tf);
        assert_int_equal(r.res.status, TPU_CORE_DONE);
        cycles[v] = r.res.counters[TPU_CNT_CYCLES];
        free(p);
        tpu_core_free(r.core);
        free(r.host);
    }
    assert_true(cycles[1] > cycles[0]);
    assert_int_equal(len[0], len[1]);
    assert_memory_equal(buf[0], buf[1], len[0]);
    assert_true(strncmp(buf[0], "# tpu-core-trace 3\nw 0 ub 0 ", 27) == 0);
    free(buf[0]);
    free(buf[1]);
}

/* DMA timing: one dma_in of R rows of N bf16 (one burst per row when 2N <= 128 bytes and the
   rows do not cross 4 KiB): ARs in d+1 .. d+R, first beat of row r in d+1+r+latency when the
   R channel is free, so it completes in d + R*beats + latency (beats per row 1 here at N=4)
   and the halt one cycle after. */
static void test_timing_dma(void **state)
{
    (void)state;
    unsigned n = 4;
    for (unsigned lat = 1; lat <= 39; lat += 19) {
        for (unsigned rows = 1; rows <= 40; rows += 13) {
            run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
            tpu_core_cfg_t cfg = cfg_for(n);
            cfg.axi_latency = lat;
            prog_t *p = malloc(sizeof *p);
            p->count = 0;
            for (unsigned i = 0; i < 8u * rows; i++)
                r.host[i] = (uint8_t)rnd();
            dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, rows, n, 0, 8); /* 8 bytes = one beat a row */
            op0(p, TPU_OP_HALT);
            run_prog(&r, &cfg, p, NULL);
            /* d = 1; AR of row j in 2 + j; R beat of row j in max(2 + j + lat, previous + 1) =
               2 + j + lat, and with at most 16 bursts outstanding: burst j >= 16 waits for the
               last beat of burst j-16 (in 2 + j - 16 + lat) -> AR in 3 + j - 16 + lat when that
               is later than 2 + j, i.e. when lat > 15 */
            uint64_t ar = 1, last = 0, beat[64];
            for (unsigned j = 0; j < rows; j++) {
                ar = ar + 1;
                if (j >= 16 && beat[j - 16] + 1 > ar)
                    ar = beat[j - 16] + 1;
                beat[j] = ar + lat > last + 1 ? ar + lat : last + 1;
                last = beat[j];
            }
            assert_int_equal(r.res.counters[TPU_CNT_DMA_BUSY], last - 1); /* 2 .. last */
            assert_int_equal(r.res.counters[TPU_CNT_CYCLES], last + 1 + 1);
            /* dma_out of the same rows: AW of row j in 2 + j unless burst j-16's B is not
               back yet; W beat of row j in 3 + j; B in max(W, AW) + lat */
            p->count = 0;
            dma(p, TPU_OP_DMA_OUT, TPU_MEM_UB, 0, rows, n, 0x1000, 8);
            op0(p, TPU_OP_HALT);
            run_prog(&r, &cfg, p, NULL);
            uint64_t aw = 1, bresp[64], done = 0;
            for (unsigned j = 0; j < rows; j++) {
                aw = aw + 1;
                if (j >= 16 && bresp[j - 16] + 1 > aw)
                    aw = bresp[j - 16] + 1;
                uint64_t wb = 3 + j;
                bresp[j] = (wb > aw ? wb : aw) + lat;
                done = bresp[j] > done ? bresp[j] : done;
            }
            assert_int_equal(r.res.counters[TPU_CNT_DMA_BUSY], done - 1);
            assert_int_equal(r.res.counters[TPU_CNT_CYCLES], done + 2);
            assert_memory_equal(r.host + 0x1000, r.host, 8u * rows);
            free(p);
            tpu_core_free(r.core);
            free(r.host);
        }
    }
}

/* The AXI4 data master's width (docs/isa.md "AXI4 master (data)"): the default rule for N
   (the table as the spec writes it), the allowed widths, tpu_core_new's check; the trace does
   not depend on the width, only the DMA timing does; and the timing of one dma_in at 128 and
   256 bits, one-beat and two-beat rows, against the burst arithmetic written out here. */
static void test_axi_data_bits(void **state)
{
    (void)state;
    static const unsigned def[][2] = { { 1, 64 },   { 3, 64 },   { 16, 64 },  { 17, 128 },
                                       { 32, 128 }, { 33, 256 }, { 64, 256 }, { 65, 512 },
                                       { 100, 512 }, { 128, 512 }, { 256, 512 } };
    for (size_t i = 0; i < sizeof def / sizeof def[0]; i++)
        assert_int_equal(tpu_axi_data_bits_default(def[i][0]), def[i][1]);
    static const unsigned good[] = { 64, 128, 256, 512 };
    static const unsigned badw[] = { 0, 1, 8, 32, 63, 65, 96, 100, 192, 1024, 4096 };
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(tpu_axi_data_bits_ok(good[i]), 1);
    for (size_t i = 0; i < sizeof badw / sizeof badw[0]; i++)
        assert_int_equal(tpu_axi_data_bits_ok(badw[i]), 0);
    tpu_core_cfg_t cfg = cfg_for(8);
    cfg.axi_data_bits = 100;
    assert_null(tpu_core_new(&cfg));
    cfg.axi_data_bits = 0;
    tpu_core_t *c = tpu_core_new(&cfg);
    assert_non_null(c);
    assert_int_equal(tpu_core_cfg(c)->axi_data_bits, 64); /* resolved: N = 8 -> 64 */
    tpu_core_free(c);

    /* a matmul at N = 8 with rows at 16-byte offsets (k = 10: 20-byte host rows) */
    unsigned n = 8, m = 9, k = 10, np = 7;
    char *buf[4] = { NULL, NULL, NULL, NULL };
    size_t len[4] = { 0, 0, 0, 0 };
    uint64_t dma_busy[4];
    for (unsigned v = 0; v < 4; v++) {
        run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
        uint16_t a[90], w[70], bias[7];
        rng_state = 11;
        fill_matmul_inputs(r.host, m, k, np, a, w, bias);
        tpu_core_cfg_t cv = cfg_for(n);
        cv.axi_data_bits = good[v];
        prog_t *p = malloc(sizeof *p);
        build_matmul(p, n, m, k, np, 2, 1);
        FILE *tf = open_memstream(&buf[v], &len[v]);
        run_prog(&r, &cv, p, tf);
        fclose(tf);
        assert_int_equal(r.res.status, TPU_CORE_DONE);
        dma_busy[v] = r.res.counters[TPU_CNT_DMA_BUSY];
        free(p);
        tpu_core_free(r.core);
        free(r.host);
    }
    for (unsigned v = 1; v < 4; v++) {
        assert_int_equal(len[0], len[v]);
        assert_memory_equal(buf[0], buf[v], len[0]);
        assert_true(dma_busy[v] <= dma_busy[v - 1]);
    }
    assert_true(dma_busy[1] < dma_busy[0]); /* 16-byte UB rows: 2 or 3 beats -> 1 or 2 */
    for (unsigned v = 0; v < 4; v++)
        free(buf[v]);

    /* dma_in of R rows of 8 bf16 (16 bytes) at haddr `off`, stride 64: per row `beats` beats
       of B/8 bytes in one burst; AR of row j in 2 + j (unless 16 bursts are out), its first
       beat in max(AR + lat, previous last beat + 1) */
    static const unsigned cases[][3] = { /* B, off, beats */
        { 128, 0, 1 }, { 128, 8, 2 }, { 256, 16, 1 }, { 256, 24, 2 }, { 512, 48, 1 },
        { 512, 56, 2 }, { 64, 0, 2 }, { 64, 6, 3 } };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        unsigned rows = 20, lat = 7, beats = cases[ci][2];
        run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
        tpu_core_cfg_t cv = cfg_for(n);
        cv.axi_latency = lat;
        cv.axi_data_bits = cases[ci][0];
        prog_t *p = malloc(sizeof *p);
        p->count = 0;
        dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, rows, n, cases[ci][1], 64);
        op0(p, TPU_OP_HALT);
        run_prog(&r, &cv, p, NULL);
        uint64_t ar = 1, last = 0, lastb[64];
        for (unsigned j = 0; j < rows; j++) {
            ar = ar + 1;
            if (j >= 16 && lastb[j - 16] + 1 > ar)
                ar = lastb[j - 16] + 1;
            uint64_t first = ar + lat > last + 1 ? ar + lat : last + 1;
            last = first + beats - 1;
            lastb[j] = last;
        }
        assert_int_equal(r.res.counters[TPU_CNT_DMA_BUSY], last - 1);
        assert_int_equal(r.res.counters[TPU_CNT_CYCLES], last + 2);
        free(p);
        tpu_core_free(r.core);
        free(r.host);
    }
}

/* VPU timing (docs/isa.md "Timing" details): rows read from d+1 (d = 1 here), results written
   27 cycles after their read (reductions: RL + 1, RL = 27 + ceil(log2 N)), halt the cycle after
   the last write, CYCLES = halt + 1. And hazards: by rows, and by memory port. */
static uint64_t cycles_of_d(unsigned n, const prog_t *p, unsigned lat, unsigned dispatch)
{
    tpu_core_cfg_t cfg = cfg_for(n);
    cfg.axi_latency = lat;
    cfg.dispatch = dispatch;
    tpu_core_t *core = tpu_core_new(&cfg);
    uint32_t row[16] = { 0 };
    for (unsigned r = 0; r < 400; r++) {
        assert_int_equal(tpu_core_set_row(core, TPU_MEM_UB, r, row), TPU_OK);
        assert_int_equal(tpu_core_set_row(core, TPU_MEM_ACC, r, row), TPU_OK);
    }
    uint8_t *host = calloc(HOST_BYTES, 1);
    tpu_core_result_t res;
    assert_int_equal(tpu_core_run(core, p->insn, p->count, 0, host, HOST_BYTES, NULL, &res),
                     TPU_OK);
    assert_int_equal(res.status, TPU_CORE_DONE);
    assert_int_equal(res.uninit_reads, 0);
    free(host);
    tpu_core_free(core);
    return res.counters[TPU_CNT_CYCLES];
}
static uint64_t cycles_of(unsigned n, const prog_t *p, unsigned lat)
{
    return cycles_of_d(n, p, lat, TPU_DISPATCH_RTL);
}

static void test_timing_vpu_hazards(void **state)
{
    (void)state;
    prog_t *p = malloc(sizeof *p);
    for (size_t si = 0; si < NSIZES; si++) {
        unsigned n = kSizes[si], levels = 0;
        while ((1u << levels) < n)
            levels++;
        uint64_t rl = 27u + levels;
        for (unsigned rows = 1; rows <= 9; rows += 4) {
            p->count = 0;
            vop(p, TPU_VOP_RELU, TPU_MEM_UB, 0, 0, 0, 0, TPU_MEM_UB, 200, rows);
            op0(p, TPU_OP_HALT);
            assert_int_equal(cycles_of(n, p, 4), rows + 30u);
            /* log and rsqrt: the same latency as every unary op */
            p->count = 0;
            vop(p, TPU_VOP_LOG, TPU_MEM_UB, 0, 0, 0, 0, TPU_MEM_UB, 200, rows);
            op0(p, TPU_OP_HALT);
            assert_int_equal(cycles_of(n, p, 4), rows + 30u);
            p->count = 0;
            vop(p, TPU_VOP_RSQRT, TPU_MEM_ACC, 0, 0, 0, 0, TPU_MEM_UB, 200, rows);
            op0(p, TPU_OP_HALT);
            assert_int_equal(cycles_of(n, p, 4), rows + 30u);
            p->count = 0;
            vop(p, TPU_VOP_ADD, TPU_MEM_UB, 0, TPU_MEM_UB, 20, 0, TPU_MEM_ACC, 200, rows);
            op0(p, TPU_OP_HALT);
            assert_int_equal(cycles_of(n, p, 4), 2u * rows + 30u);
            p->count = 0;
            vop(p, TPU_VOP_MUL, TPU_MEM_UB, 0, TPU_MEM_UB, 20, 1, TPU_MEM_ACC, 200, rows);
            op0(p, TPU_OP_HALT);
            assert_int_equal(cycles_of(n, p, 4), rows + 31u);
            p->count = 0;
            vop(p, TPU_VOP_SUB, TPU_MEM_UB, 0, TPU_MEM_ACC, 20, 0, TPU_MEM_UB, 200, rows);
            op0(p, TPU_OP_HALT);
            assert_int_equal(cycles_of(n, p, 4), rows + 30u);
            for (unsigned len = 1; len <= 2 * n + 1; len += n) {
                uint64_t c = (len + n - 1) / n;
                p->count = 0;
                vred(p, TPU_OP_VRED, TPU_RED_MAX, TPU_MEM_ACC, 0, TPU_MEM_UB, 300, rows, len,
                     rows, 1);
                op0(p, TPU_OP_HALT);
                assert_int_equal(cycles_of(n, p, 4), rows * c + rl + 4u);
                p->count = 0;
                vred(p, TPU_OP_SOFTMAX, 0, TPU_MEM_ACC, 0, TPU_MEM_ACC, 100, rows, len, rows, 1);
                op0(p, TPU_OP_HALT);
                assert_int_equal(cycles_of(n, p, 4), rows * (3u * c + 2u * rl + 29u) + 30u);
            }
        }
        /* a dma_in of 4 one-beat rows into UB 0..3 completes in 5 + latency */
        for (unsigned lat = 4; lat <= 30; lat += 26) {
            unsigned cols = n < 4 ? n : 4; /* at most 8 bytes: one beat a row */
            uint32_t stride = 8;
            /* RAW: the vop reading UB 0..3 waits for the DMA: dispatch 6 + lat */
            p->count = 0;
            dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, 4, cols, 0, stride);
            vop(p, TPU_VOP_RELU, TPU_MEM_UB, 0, 0, 0, 0, TPU_MEM_ACC, 200, 4);
            op0(p, TPU_OP_HALT);
            assert_int_equal(cycles_of(n, p, lat), 6u + lat + 4u + 27u + 2u);
            /* other rows, other ports (UB read, ACC write): dispatch in 2, overlapping (the
               general rules); gen's sequencer overlaps the VPU with nothing: it waits */
            p->count = 0;
            dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, 4, cols, 0, stride);
            vop(p, TPU_VOP_RELU, TPU_MEM_UB, 50, 0, 0, 0, TPU_MEM_ACC, 200, 4);
            op0(p, TPU_OP_HALT);
            uint64_t vdone = 2u + 4u + 27u, ddone = 5u + lat;
            assert_int_equal(cycles_of_d(n, p, lat, TPU_DISPATCH_OVERLAP),
                             (vdone > ddone ? vdone : ddone) + 2u);
            assert_int_equal(cycles_of(n, p, lat), 6u + lat + 4u + 27u + 2u);
            /* other rows, same port (UB write): waits for the DMA */
            p->count = 0;
            dma(p, TPU_OP_DMA_IN, TPU_MEM_UB, 0, 4, cols, 0, stride);
            vop(p, TPU_VOP_RELU, TPU_MEM_ACC, 50, 0, 0, 0, TPU_MEM_UB, 200, 4);
            op0(p, TPU_OP_HALT);
            assert_int_equal(cycles_of(n, p, lat), 6u + lat + 4u + 27u + 2u);
            assert_int_equal(cycles_of_d(n, p, lat, TPU_DISPATCH_OVERLAP),
                             6u + lat + 4u + 27u + 2u);
        }
    }
    free(p);
}

/* The serial dispatch policy (one instruction in flight): the same trace, no weight-load
   stall (every lw completes before the next matmul dispatches), never fewer cycles. */
static void test_serial_dispatch(void **state)
{
    (void)state;
    for (size_t si = 0; si < NSIZES; si++) {
        unsigned n = kSizes[si], m = 3 * n + 2, k = 2 * n + 1, np = 2 * n;
        char *buf[2] = { NULL, NULL };
        size_t len[2] = { 0, 0 };
        tpu_core_result_t res[2];
        for (int v = 0; v < 2; v++) {
            run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
            uint16_t *a = malloc(2u * m * k), *w = malloc(2u * k * np), *bias = malloc(2u * np);
            rng_state = 9;
            fill_matmul_inputs(r.host, m, k, np, a, w, bias);
            tpu_core_cfg_t cfg = cfg_for(n);
            cfg.dispatch = v ? TPU_DISPATCH_SERIAL : TPU_DISPATCH_OVERLAP;
            prog_t *p = malloc(sizeof *p);
            build_matmul(p, n, m, k, np, 8, 1);
            FILE *tf = open_memstream(&buf[v], &len[v]);
            run_prog(&r, &cfg, p, tf);
            fclose(tf);
            assert_int_equal(r.res.status, TPU_CORE_DONE);
            res[v] = r.res;
            free(p);
            free(a);
            free(w);
            free(bias);
            tpu_core_free(r.core);
            free(r.host);
        }
        assert_int_equal(len[0], len[1]);
        assert_memory_equal(buf[0], buf[1], len[0]);
        assert_int_equal(res[1].counters[TPU_CNT_WL_STALL], 0);
        assert_true(res[1].counters[TPU_CNT_CYCLES] >= res[0].counters[TPU_CNT_CYCLES]);
        for (unsigned k2 = TPU_CNT_MXU_BUSY; k2 < TPU_CNT_COUNT; k2++)
            if (k2 != TPU_CNT_WL_STALL)
                assert_int_equal(res[0].counters[k2], res[1].counters[k2]);
        free(buf[0]);
        free(buf[1]);
    }
}

/* ---- collectives on a core alone (docs/board.md: C = 1, like tpu_top) ---------------------
   allreduce, bcast and barrier complete at once without writing anything (a collective
   dispatches in d when every unit is idle and completes in d + 1, NET_BUSY 1 each, the next
   instruction dispatches from d + 2, as tpu_top); send and
   recv are error 8, a core id >= C too; a core of a bigger board run alone stops at its first
   collective (TPU_CORE_STUCK). */
static void coll(prog_t *p, unsigned opcode, unsigned mem, unsigned row, unsigned rows,
                 unsigned peer, unsigned ring)
{
    tpu_dinsn_t d = { .opcode = opcode, .mem = mem, .row = row, .n = rows, .peer = peer,
                      .ring = ring };
    emit(p, &d);
}

static void test_collectives_alone(void **state)
{
    (void)state;
    unsigned n = 4;
    prog_t *p = malloc(sizeof *p);
    run_t r = { NULL, calloc(HOST_BYTES, 1), { 0 } };
    for (unsigned i = 0; i < 64; i++)
        put32(r.host, 4u * i, rnd_fp32());
    tpu_core_cfg_t cfg = cfg_for(n);
    p->count = 0;
    dma(p, TPU_OP_DMA_IN, TPU_MEM_ACC, 0, 4, n, 0, 4u * n);
    coll(p, TPU_OP_ALLREDUCE, TPU_MEM_ACC, 0, 4, 0, 0);
    coll(p, TPU_OP_ALLREDUCE, TPU_MEM_ACC, 1, 2, 0, 1);
    coll(p, TPU_OP_BCAST, TPU_MEM_ACC, 0, 4, 0, 0);
    coll(p, TPU_OP_BARRIER, 0, 0, 0, 0, 0);
    dma(p, TPU_OP_DMA_OUT, TPU_MEM_ACC, 0, 4, n, 0x1000, 4u * n);
    op0(p, TPU_OP_HALT);
    char *buf = NULL;
    size_t len = 0;
    FILE *tf = open_memstream(&buf, &len);
    run_prog(&r, &cfg, p, tf);
    fclose(tf);
    assert_int_equal(r.res.status, TPU_CORE_DONE);
    assert_int_equal(r.res.counters[TPU_CNT_INSNS], 7);
    assert_int_equal(r.res.counters[TPU_CNT_NET_BUSY], 4);
    assert_string_equal(tpu_core_counter_name(TPU_CNT_NET_BUSY), "NET_BUSY");
    assert_int_equal(TPU_CNT_NET_BUSY, 6);
    assert_memory_equal(r.host, r.host + 0x1000, 64); /* the data did not change */
    /* no row written by pcs 1..4, each retired with its mnemonic */
    const char *want[] = { "r 1 1 0.0.0.0.0.0 allreduce ", "r 2 2 0.0.0.0.0.0 allreduce ",
                           "r 3 3 0.0.0.0.0.0 bcast ", "r 4 4 0.0.0.0.0.0 barrier\n" };
    for (unsigned i = 0; i < 4; i++)
        assert_non_null(strstr(buf, want[i]));
    for (unsigned i = 1; i <= 4; i++) {
        char w[16];
        snprintf(w, sizeof w, "\nw %u ", i);
        assert_null(strstr(buf, w));
    }
    free(buf);
    /* timing: the collective waits for the DMA (every unit idle) and takes two cycles */
    p->count = 0;
    coll(p, TPU_OP_BARRIER, 0, 0, 0, 0, 0);
    op0(p, TPU_OP_HALT);
    run_prog(&r, &cfg, p, NULL);
    assert_int_equal(r.res.counters[TPU_CNT_CYCLES], 4); /* barrier in 1, done 2, halt in 3 */
    p->count = 0;
    dma(p, TPU_OP_DMA_IN, TPU_MEM_ACC, 0, 1, n, 0, 4u * n);
    op0(p, TPU_OP_HALT);
    run_prog(&r, &cfg, p, NULL);
    uint64_t dma_only = r.res.counters[TPU_CNT_CYCLES];
    p->count = 0;
    dma(p, TPU_OP_DMA_IN, TPU_MEM_ACC, 0, 1, n, 0, 4u * n);
    coll(p, TPU_OP_BARRIER, 0, 0, 0, 0, 0);
    op0(p, TPU_OP_HALT);
    run_prog(&r, &cfg, p, NULL);
    assert_int_equal(r.res.counters[TPU_CNT_CYCLES], dma_only + 2u);
    tpu_core_free(r.core);
    free(r.host);
    /* error 8 on C = 1: send/recv to any core, bcast from root 1; codes 1-3 first */
    p->count = 0;
    op0(p, TPU_OP_NOP);
    coll(p, TPU_OP_SEND, TPU_MEM_UB, 0, 1, 0, 0);
    expect_error(p, n, 0, TPU_ERR_CORE, 1, 1);
    p->count = 1;
    coll(p, TPU_OP_RECV, TPU_MEM_ACC, 0, 1, 1, 0);
    expect_error(p, n, 0, TPU_ERR_CORE, 1, 1);
    p->count = 1;
    coll(p, TPU_OP_BCAST, TPU_MEM_ACC, 0, 1, 1, 0);
    expect_error(p, n, 0, TPU_ERR_CORE, 1, 1);
    p->count = 1;
    coll(p, TPU_OP_SEND, TPU_MEM_UB, 0, 0, 1, 0);
    expect_error(p, n, 0, TPU_ERR_COUNT, 1, 1);
    p->count = 1;
    coll(p, TPU_OP_ALLREDUCE, TPU_MEM_UB, 0, 1, 0, 0);
    expect_error(p, n, 0, TPU_ERR_COUNT, 1, 1);
    p->count = 1;
    coll(p, TPU_OP_RECV, TPU_MEM_UB, 4096, 1, 1, 0);
    expect_error(p, n, 0, TPU_ERR_ROW, 1, 1);
    /* the board's shape in the configuration: id < C, at most 64 cores */
    cfg.topo_rows = 1;
    cfg.topo_cols = 2;
    cfg.core_id = 2;
    assert_null(tpu_core_new(&cfg));
    cfg.topo_rows = 8;
    cfg.topo_cols = 9;
    cfg.core_id = 0;
    assert_null(tpu_core_new(&cfg));
    /* core 1 of a ring of 2, alone: error 8 for send to itself or core 2; stuck at a valid
       collective */
    cfg.topo_rows = 1;
    cfg.topo_cols = 2;
    cfg.core_id = 1;
    run_t r2 = { NULL, calloc(HOST_BYTES, 1), { 0 } };
    p->count = 1;
    coll(p, TPU_OP_SEND, TPU_MEM_UB, 0, 1, 1, 0);
    run_prog(&r2, &cfg, p, NULL);
    assert_int_equal(r2.res.status, TPU_CORE_ERROR);
    assert_int_equal(r2.res.err_code, TPU_ERR_CORE);
    p->count = 1;
    coll(p, TPU_OP_SEND, TPU_MEM_UB, 0, 1, 0, 0);
    op0(p, TPU_OP_HALT);
    run_prog(&r2, &cfg, p, NULL);
    assert_int_equal(r2.res.status, TPU_CORE_STUCK);
    assert_int_equal(r2.res.err_code, 0);
    assert_int_equal(r2.res.err_pc, 1);
    assert_int_equal(r2.res.counters[TPU_CNT_INSNS], 1);
    tpu_core_free(r2.core);
    free(r2.host);
    free(p);
}

/* ---- loops (docs/isa.md "Loops") ----------------------------------------------------- */
/* tests/asm/loop_matmul.s (the tiled matmul of docs/isa.md, N = 4) against the same program
   written straight-line: the same ACC rows bit for bit, and CYCLES larger by exactly one
   dispatch cycle per `loop` and `stride` executed (five: three strides, loop 0, loop 1
   hoisted), the jumps back costing nothing. */
static const char kStraight[] =
    "dma_in acc row=0 rows=24 cols=1 addr=0x100 stride=0\n"
    "lw w=0\nmatmul ub=0 acc=0 rows=8 accumulate\nlw w=4\nmatmul ub=8 acc=0 rows=8 accumulate\n"
    "vop relu a=acc:0 dst=acc:0 rows=8\n"
    "lw w=8\nmatmul ub=0 acc=8 rows=8 accumulate\nlw w=12\nmatmul ub=8 acc=8 rows=8 accumulate\n"
    "vop relu a=acc:8 dst=acc:8 rows=8\n"
    "lw w=16\nmatmul ub=0 acc=16 rows=8 accumulate\nlw w=20\nmatmul ub=8 acc=16 rows=8 accumulate\n"
    "vop relu a=acc:16 dst=acc:16 rows=8\n"
    "halt\n";

static void run_loop_matmul(const char *src, size_t len, const char *name, tpu_core_result_t *res,
                            uint32_t acc[24][4], uint64_t seed)
{
    tpu_insn_t *prog;
    size_t count;
    char *errs;
    if (tpu_asm_len(src, len, name, 4, &prog, &count, &errs) != 0)
        fail_msg("%s: %s", name, errs);
    free(errs);
    tpu_core_cfg_t cfg = cfg_for(4);
    tpu_core_t *c = tpu_core_new(&cfg);
    assert_non_null(c);
    uint8_t *host = calloc(1, HOST_BYTES);
    assert_non_null(host);
    put32(host, 0x100, 0x80000000u); /* NEGZERO */
    rng_state = seed; /* the same A (UB rows 0..15) and B (WMEM rows 0..23) for both */
    for (unsigned r = 0; r < 16 + 24; r++) {
        uint32_t w[4];
        for (unsigned i = 0; i < 4; i++)
            w[i] = rnd_bf16();
        assert_int_equal(tpu_core_set_row(c, r < 16 ? TPU_MEM_UB : TPU_MEM_WMEM, r < 16 ? r : r - 16, w), 0);
    }
    assert_int_equal(tpu_core_run(c, prog, count, 0, host, HOST_BYTES, NULL, res), TPU_OK);
    assert_int_equal(res->status, TPU_CORE_DONE);
    assert_int_equal(res->uninit_reads, 0);
    for (unsigned r = 0; r < 24; r++)
        memcpy(acc[r], tpu_core_row(c, TPU_MEM_ACC, r), sizeof acc[r]);
    tpu_core_free(c);
    free(host);
    free(prog);
}

/* src with `ins` inserted after its line holding "dma_in" (malloc'd) */
static char *insert_after_dma(const char *src, size_t len, const char *ins, size_t *olen)
{
    const char *d = strstr(src, "dma_in");
    assert_non_null(d);
    const char *e = strchr(d, '\n');
    assert_non_null(e);
    size_t head = (size_t)(e + 1 - src), il = strlen(ins);
    char *o = malloc(len + il + 1);
    assert_non_null(o);
    memcpy(o, src, head);
    memcpy(o + head, ins, il);
    memcpy(o + head + il, src + head, len - head);
    o[len + il] = 0;
    *olen = len + il;
    return o;
}

static void test_loop_matmul(void **state)
{
    (void)state;
    FILE *f = fopen("tests/asm/loop_matmul.s", "rb"); /* make runs the tests from the root */
    assert_non_null(f);
    char src[4096];
    size_t len = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    assert_true(len > 0 && len < sizeof src - 1);
    src[len] = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        tpu_core_result_t rl, rs, rn;
        uint32_t al[24][4], as[24][4], an[24][4];
        run_loop_matmul(src, len, "loop_matmul.s", &rl, al, seed);
        run_loop_matmul(kStraight, sizeof kStraight - 1, "straight.s", &rs, as, seed);
        assert_memory_equal(al, as, sizeof al);
        /* 22 dispatched (dma_in, 3 strides, 2 loops, 3 x (2 x 2 + 1), halt) against 17 */
        assert_int_equal(rl.counters[TPU_CNT_INSNS], 22);
        assert_int_equal(rs.counters[TPU_CNT_INSNS], 17);
        /* every busy counter the same; the five dispatch cycles may hide behind the dma_in
           (the first matmul accumulates onto its rows) */
        for (unsigned k = 1; k < TPU_CNT_COUNT; k++)
            if (k != TPU_CNT_INSNS)
                assert_int_equal(rl.counters[k], rs.counters[k]);
        assert_true(rl.counters[TPU_CNT_CYCLES] >= rs.counters[TPU_CNT_CYCLES] &&
                    rl.counters[TPU_CNT_CYCLES] <= rs.counters[TPU_CNT_CYCLES] + 5);
        /* `loop` and `stride` dispatch as `nop`: five nops in their place, the same cycles */
        size_t nl;
        char *nops = insert_after_dma(kStraight, sizeof kStraight - 1, "nop\nnop\nnop\nnop\nnop\n", &nl);
        run_loop_matmul(nops, nl, "nops.s", &rn, an, seed);
        assert_memory_equal(al, an, sizeof al);
        assert_int_equal(rn.counters[TPU_CNT_CYCLES], rl.counters[TPU_CNT_CYCLES]);
        free(nops);
        /* with a sync after the dma_in, nothing hides them: exactly five cycles more */
        size_t ll, sl;
        char *lsync = insert_after_dma(src, len, "sync\n", &ll);
        char *ssync = insert_after_dma(kStraight, sizeof kStraight - 1, "sync\n", &sl);
        run_loop_matmul(lsync, ll, "loop_sync.s", &rl, al, seed);
        run_loop_matmul(ssync, sl, "straight_sync.s", &rs, as, seed);
        assert_memory_equal(al, as, sizeof al);
        if (rl.counters[TPU_CNT_CYCLES] != rs.counters[TPU_CNT_CYCLES] + 5)
            fail_msg("seed %u, sync after the dma_in: loop_matmul.s %llu cycles, straight-line "
                     "%llu: expected 5 more", (unsigned)seed,
                     (unsigned long long)rl.counters[TPU_CNT_CYCLES],
                     (unsigned long long)rs.counters[TPU_CNT_CYCLES]);
        free(lsync);
        free(ssync);
    }
}

/* acc_mode=first:lL (docs/isa.md "Loops"): the tiled matmul without the -0 fill, its
   matmul overwriting in the first K-chunk of each N-tile, against the straight-line program
   that overwrites then accumulates: the same ACC bits, the same cycles but for the loops'
   and strides' dispatches; and first:l0 (overwrite only in the first N-tile's first chunk)
   against its own straight-line form. */
static const char kFirst[] =
    "stride x1 l0=8 l1=4\nstride x2 l0=8\nstride x3 l1=8\n"
    "loop 0 count=3 skip=2 body=3\nloop 1 count=2 skip=1 body=2\n"
    "lw w=0+x1\nmatmul ub=0+x3 acc=0+x2 rows=8 acc_mode=first:lL\n"
    "vop relu a=acc:0+x2 dst=acc:0+x2 rows=8\nhalt\n";

static void test_loop_acc_first(void **state)
{
    (void)state;
    for (unsigned lv = 0; lv <= 1; lv++) {
        char src[sizeof kFirst];
        memcpy(src, kFirst, sizeof kFirst);
        strstr(src, "first:l")[7] = (char)('0' + lv);
        if (lv == 0) /* every N-tile onto ACC rows 0 .. 7: overwritten once, at the start */
            for (char *x; (x = strstr(src, "+x2")) != NULL;)
                memcpy(x, "   ", 3);
        char straight[1024];
        size_t k = 0;
        for (unsigned nt = 0; nt < 3; nt++) {
            for (unsigned kt = 0; kt < 2; kt++)
                k += (size_t)snprintf(straight + k, sizeof straight - k,
                                      "lw w=%u\nmatmul ub=%u acc=%u rows=8%s\n", 4 * (2 * nt + kt),
                                      8 * kt, lv ? 8 * nt : 0, (lv == 1 ? kt : kt + nt) ? " accumulate" : "");
            k += (size_t)snprintf(straight + k, sizeof straight - k,
                                  "vop relu a=acc:%u dst=acc:%u rows=8\n", lv ? 8 * nt : 0, lv ? 8 * nt : 0);
        }
        k += (size_t)snprintf(straight + k, sizeof straight - k, "halt\n");
        for (uint64_t seed = 1; seed <= 3; seed++) {
            tpu_core_result_t rl, rs;
            uint32_t al[24][4], as[24][4];
            run_loop_matmul(src, strlen(src), "first.s", &rl, al, seed);
            run_loop_matmul(straight, k, "first_straight.s", &rs, as, seed);
            assert_memory_equal(al, as, sizeof al);
            assert_int_equal(rl.counters[TPU_CNT_INSNS], rs.counters[TPU_CNT_INSNS] + 5);
            for (unsigned c = 1; c < TPU_CNT_COUNT; c++)
                if (c != TPU_CNT_INSNS && c != TPU_CNT_CYCLES)
                    assert_int_equal(rl.counters[c], rs.counters[c]);
            assert_true(rl.counters[TPU_CNT_CYCLES] >= rs.counters[TPU_CNT_CYCLES] &&
                        rl.counters[TPU_CNT_CYCLES] <= rs.counters[TPU_CNT_CYCLES] + 5);
        }
    }
    /* the encoding round-trips; acc_first with flags[0] set, or level 6, is reserved */
    tpu_dinsn_t d;
    memset(&d, 0, sizeof d);
    d.opcode = TPU_OP_MATMUL;
    d.n = 8;
    d.acc_first = 3;
    tpu_insn_t w = tpu_insn_encode(&d);
    tpu_dinsn_t e;
    tpu_insn_decode(w, &e);
    assert_int_equal(e.acc_first, 3);
    assert_int_equal(e.reserved, 0);
    w.w[0] |= 1u << 8; /* accumulate beside acc_first */
    tpu_insn_decode(w, &e);
    assert_int_not_equal(e.reserved, 0);
    w.w[0] = (w.w[0] & ~(0xFu << 8)) | (6u << 9); /* level 5, the innermost */
    tpu_insn_decode(w, &e);
    assert_int_equal(e.reserved, 0);
    w.w[0] = (w.w[0] & ~(0xFu << 8)) | (7u << 9); /* level 6: none */
    tpu_insn_decode(w, &e);
    assert_int_not_equal(e.reserved, 0);
}


/* The modulus form (docs/isa.md "Loops"): a ring of four WMEM slots (N = 4 rows each, mod=16)
   through which ten weight tiles stream, each dma_in'd into slot (8 + 4 t) mod 16 and loaded
   from there, its host address (0x40 + 32 t) mod 256 wrapping too, against the same program
   written straight-line: the same ACC and WMEM rows bit for bit, the same counters but the
   dispatches of the loop and the strides. */
static const char kRing[] =
    "stride x1 l0=4\n"          /* WMEM rows: one tile of N = 4 rows per iteration */
    "stride x1 mod=16\n"        /* a ring of 4 slots */
    "stride x2 l0=32\n"         /* host bytes: one tile per iteration */
    "stride x2 mod=256\n"       /* 8 tiles of host memory, then again */
    "stride x3 l0=4\n"          /* ACC: the output tile t at rows 4 t */
    "loop 0 count=10 body=3\n"
    "dma_in wmem row=8+x1 rows=4 cols=4 addr=0x40+x2 stride=8\n"
    "lw w=8+x1\n"
    "matmul ub=0 acc=0+x3 rows=4\n"
    "halt\n";

static void run_ring(const char *src, const char *name, tpu_core_result_t *res,
                     uint32_t acc[40][4], uint32_t wm[16][4])
{
    tpu_insn_t *prog;
    size_t count;
    char *errs;
    if (tpu_asm_n(src, name, 4, &prog, &count, &errs) != 0)
        fail_msg("%s: %s", name, errs);
    free(errs);
    tpu_core_cfg_t cfg = cfg_for(4);
    tpu_core_t *c = tpu_core_new(&cfg);
    assert_non_null(c);
    uint8_t *host = calloc(1, HOST_BYTES);
    assert_non_null(host);
    rng_state = 11;
    for (unsigned a = 0; a < 256; a += 2) /* the weight tiles at host 0 .. 255 */
        put16(host, a, rnd_bf16());
    for (unsigned r = 0; r < 4; r++) {
        uint32_t w[4];
        for (unsigned i = 0; i < 4; i++)
            w[i] = rnd_bf16();
        assert_int_equal(tpu_core_set_row(c, TPU_MEM_UB, r, w), 0);
    }
    assert_int_equal(tpu_core_run(c, prog, count, 0, host, HOST_BYTES, NULL, res), TPU_OK);
    assert_int_equal(res->status, TPU_CORE_DONE);
    assert_int_equal(res->uninit_reads, 0);
    for (unsigned r = 0; r < 40; r++)
        memcpy(acc[r], tpu_core_row(c, TPU_MEM_ACC, r), sizeof acc[r]);
    for (unsigned r = 0; r < 16; r++)
        memcpy(wm[r], tpu_core_row(c, TPU_MEM_WMEM, r), sizeof wm[r]);
    tpu_core_free(c);
    free(host);
    free(prog);
}

/* one program's end: status, code and pc */
static void run_src_end(const char *src, int want_code, uint32_t want_pc)
{
    tpu_insn_t *prog;
    size_t count;
    char *errs;
    if (tpu_asm_n(src, "end.s", 4, &prog, &count, &errs) != 0)
        fail_msg("%s", errs);
    free(errs);
    tpu_core_cfg_t cfg = cfg_for(4);
    tpu_core_t *c = tpu_core_new(&cfg);
    assert_non_null(c);
    uint8_t *host = calloc(1, HOST_BYTES);
    assert_non_null(host);
    tpu_core_result_t res;
    assert_int_equal(tpu_core_run(c, prog, count, 0, host, HOST_BYTES, NULL, &res), TPU_OK);
    if (want_code == 0 ? res.status != TPU_CORE_DONE
                       : res.status != TPU_CORE_ERROR || res.err_code != want_code ||
                             res.err_pc != want_pc)
        fail_msg("%s: status %d code %d pc %u, expected code %d pc %u", src, res.status,
                 res.err_code, (unsigned)res.err_pc, want_code, (unsigned)want_pc);
    tpu_core_free(c);
    free(host);
    free(prog);
}

static void test_loop_mod_ring(void **state)
{
    (void)state;
    char straight[2048];
    size_t k = 0;
    for (unsigned t = 0; t < 10; t++)
        k += (size_t)snprintf(straight + k, sizeof straight - k,
                              "dma_in wmem row=%u rows=4 cols=4 addr=0x%x stride=8\n"
                              "lw w=%u\nmatmul ub=0 acc=%u rows=4\n",
                              (8 + 4 * t) % 16, (0x40 + 32 * t) % 256, (8 + 4 * t) % 16, 4 * t);
    snprintf(straight + k, sizeof straight - k, "halt\n");
    tpu_core_result_t rl, rs;
    uint32_t al[40][4], as[40][4], wl[16][4], ws[16][4];
    run_ring(kRing, "ring.s", &rl, al, wl);
    run_ring(straight, "ring_straight.s", &rs, as, ws);
    assert_memory_equal(al, as, sizeof al);
    assert_memory_equal(wl, ws, sizeof wl);
    /* 6 strides and the loop dispatch besides the same 31 instructions */
    assert_int_equal(rl.counters[TPU_CNT_INSNS], rs.counters[TPU_CNT_INSNS] + 6);
    for (unsigned c = 1; c < TPU_CNT_COUNT; c++)
        if (c != TPU_CNT_INSNS && c != TPU_CNT_CYCLES)
            assert_int_equal(rl.counters[c], rs.counters[c]);
    assert_true(rl.counters[TPU_CNT_CYCLES] >= rs.counters[TPU_CNT_CYCLES] &&
                rl.counters[TPU_CNT_CYCLES] <= rs.counters[TPU_CNT_CYCLES] + 6);
    /* without the modulus the ring leaves WMEM (32 rows at N = 4): code 2 at the lw... */
    char nomod[sizeof kRing];
    memcpy(nomod, kRing, sizeof kRing);
    memcpy(strstr(nomod, "stride x1 mod=16"), "stride x1 mod=0 ", 16);
    run_src_end(nomod, TPU_ERR_ROW, 6); /* the dma_in's row 8 + 4 * 6 = 32 first */
    /* ... and so after mod=0 clears it (k = 0: exact arithmetic again) */
    run_src_end("stride x1 l0=4\nstride x1 mod=16\nstride x1 mod=0\nloop 0 count=8 body=1\n"
                "lw w=16+x1\nhalt\n", TPU_ERR_ROW, 4);
    run_src_end("stride x1 l0=4\nstride x1 mod=16\nloop 0 count=8 body=1\nlw w=16+x1\nhalt\n",
                0, 0);
    /* a row that wraps below 0: (0 - 4 i) mod 32, i.e. 0, 28, 24, ...: in WMEM */
    run_src_end("stride x5 l0=-4\nstride x5 mod=32\nloop 0 count=8 body=1\nlw w=0+x5\nhalt\n",
                0, 0);
    /* mod=64 lets w reach 32 .. 60, past WMEM's 32 rows: code 2 */
    run_src_end("stride x5 l0=4\nstride x5 mod=64\nloop 0 count=16 body=1\nlw w=0+x5\nhalt\n",
                TPU_ERR_ROW, 3);
    /* a host address: the masked sum is checked for alignment (code 4): (2 + 0) mod 4 */
    run_src_end("stride x6 mod=4\ndma_in acc row=0 rows=1 cols=1 addr=2+x6\nhalt\n",
                TPU_ERR_ALIGN, 1);
    run_src_end("stride x6 mod=4\ndma_in acc row=0 rows=1 cols=1 addr=0x1004+x6\nhalt\n", 0, 0);
    /* the reserved k (17 .. 31) is code 1, as the other reserved bits of the form */
    run_src_end("nop\n.insn 0x2104, 17, 0, 0\nhalt\n", TPU_ERR_OPCODE, 1);
    run_src_end("nop\n.insn 0x2104, 31, 0, 0\nhalt\n", TPU_ERR_OPCODE, 1);
    run_src_end("nop\n.insn 0x2104, 4, 1, 0\nhalt\n", TPU_ERR_OPCODE, 1);
    run_src_end("nop\n.insn 0x2104, 16, 0, 0\nhalt\n", 0, 0);
    run_src_end("stride x0 mod=4\nhalt\n", TPU_ERR_COUNT, 0);
    /* tpu_seq_resolve: the 32-bit sum masked, rows and host addresses alike; the modulus
       form changes no stride and no part */
    tpu_seq_t sq;
    tpu_seq_reset(&sq);
    for (unsigned r = 0; r < TPU_XREGS; r++)
        assert_int_equal(sq.modk[r], 0);
    tpu_dinsn_t d;
    memset(&d, 0, sizeof d);
    d.opcode = TPU_OP_STRIDE;
    d.xreg = 2;
    d.s[0] = 5;
    tpu_seq_step(&sq, &d, 0);
    sq.part[2][0] = (uint32_t)-4;
    d.modform = 1;
    d.modk = 4;
    d.s[0] = 0;
    tpu_seq_step(&sq, &d, 1);
    assert_int_equal(sq.modk[2], 4);
    assert_int_equal(sq.stride[2][0], 5);
    assert_int_equal(sq.part[2][0], (uint32_t)-4);
    tpu_dinsn_t l;
    memset(&l, 0, sizeof l);
    l.opcode = TPU_OP_DMA_IN;
    l.addr = 0x10002;
    l.row = 1;
    l.xsel[0] = l.xsel[1] = 2;
    tpu_seq_resolve(&sq, &l);
    assert_int_equal(l.addr, (0x10002u - 4u) & 15u);
    assert_int_equal(l.row, (1u - 4u) & 15u); /* 13: not 0xFFFFFFFF (below 0) */
    d.modk = 0; /* mod=0: none again */
    tpu_seq_step(&sq, &d, 2);
    memset(&l, 0, sizeof l);
    l.opcode = TPU_OP_LW;
    l.w_row = 1;
    l.xsel[0] = 2;
    tpu_seq_resolve(&sq, &l);
    assert_int_equal(l.w_row, 0xFFFFFFFFu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_and_dense),
        cmocka_unit_test(test_lw_transpose),
        cmocka_unit_test(test_softmax_vred),
        cmocka_unit_test(test_vop_log_rsqrt),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_timing_matmul),
        cmocka_unit_test(test_trace_timing_free),
        cmocka_unit_test(test_timing_dma),
        cmocka_unit_test(test_axi_data_bits),
        cmocka_unit_test(test_timing_vpu_hazards),
        cmocka_unit_test(test_serial_dispatch),
        cmocka_unit_test(test_collectives_alone),
        cmocka_unit_test(test_loop_matmul),
        cmocka_unit_test(test_loop_acc_first),
        cmocka_unit_test(test_loop_mod_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
