/* SPDX-License-Identifier: Apache-2.0 */
/* The core model's host-float matmul (cmodel/src/core_mx.c: the skip kernel that skips
   products which are signed zeros, with its sign rule for zero and subnormal partial sums,
   its all-zero column blocks and its underflow redo, the default above N = 32 and at every N
   with TPU_MODEL_MX_SIMD=skip, its steps on AVX-512 where the host has it and on AVX2 with
   TPU_MODEL_MX_SIMD=avx2-skip; the dense kernels of core_mx_dense.c, the default at N <= 32,
   AVX-512 where the host has it, AVX2 with TPU_MODEL_MX_SIMD=avx2; and the SSE2 kernel)
   against the integer
   path (TPU_MODEL_INTEGER_MX=1: fp32_mac per product), bit for bit: random programs of lw
   (plain and transposed) and matmul (fresh and accumulating) over tiles and activations built
   to hit every case -- rows of x and of W that are all zeros of either sign or subnormals,
   zero-padded columns (+0 and -0), mixed signs, Inf and NaN in x or W, products and sums at
   the FTZ edge (underflow), ACC seeds of -0, +0 and subnormals -- at N = 1 .. 128 including
   sizes that are not multiples of 8, 16 or 32; then rounds whose products sit at the edges
   of the AVX-512 skip kernel's fused steps (edge_elem). The ACC and UB contents after each program
   are compared as the DMA writes them to host memory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/core.h"
#include "tpu/isa.h"
#include "tpu/types.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* a bf16 of the given style */
static uint16_t val(unsigned style)
{
    uint16_t s = (uint16_t)((rnd() & 1u) << 15);
    switch (style) {
    case 0: return (uint16_t)(s | ((118u + rnd() % 14u) << 7) | (rnd() & 0x7Fu)); /* normal */
    case 1: return 0x0000u;                                                      /* +0 */
    case 2: return 0x8000u;                                                      /* -0 */
    case 3: return (uint16_t)(s | (1u + rnd() % 0x7Fu));                         /* subnormal */
    case 4: return (uint16_t)(s | ((1u + rnd() % 6u) << 7) | (rnd() & 0x7Fu));   /* tiny */
    case 5: return (uint16_t)(s | ((248u + rnd() % 6u) << 7) | (rnd() & 0x7Fu)); /* huge */
    case 6: return (uint16_t)(s | 0x7F80u);                                      /* Inf */
    default: return (uint16_t)(0x7FC0u | (rnd() & 0x3Fu));                      /* NaN */
    }
}

/* one element of a row of the given kind */
static uint16_t elem(unsigned kind, unsigned j, unsigned ncols, int rare)
{
    if (j >= ncols) /* padding */
        return kind & 1u ? 0x8000u : 0x0000u;
    unsigned r = rnd() % 100u;
    switch (kind % 6u) {
    case 0: return val(0);                                        /* dense normal */
    case 1: return r < 55 ? val(1) : r < 60 ? val(2) : val(0);    /* ReLU-like sparse */
    case 2: return r < 30 ? val(1 + rnd() % 3u) : val(0);         /* zeros of any sign */
    case 3: return val(1 + rnd() % 3u);                           /* all zero-ish */
    case 4: return r < 50 ? val(4) : r < 70 ? val(0) : val(1);    /* tiny: underflow */
    default:
        if (rare && r < 2) return val(5 + rnd() % 3u);            /* Inf, NaN, huge */
        return r < 40 ? val(1) : val(0);
    }
}

/* Products at the edges of fp32's normal range for the fused steps (core_mx.c mx_blocks512:
   a row's steps are fused only when every product of its normal x with the tile's normal
   weights is normal, biased exponents 128 <= ex + ew <= 380): the tiles all val(0), exponents
   118 .. 131, and x with exponents 9 or 10 (low) or 249 or 250 (high), so that most low and
   high rows have a product just below 2^-126 (flushed by the separate mul) or at 2^128 and
   above (Inf) and must not be fused, while their neighbours one exponent in are. Every
   matmul accumulates onto seeds of 2^-104 (whose ulp a product of 2^-127 moves; no sum of a
   low row's few products comes near cancelling it, which would underflow and redo the whole
   call exactly) or about 2^127 (which a product of 2^128 can cancel to a finite sum). The low
   and high rows are sparse, a few products each. kind: 0 low, 1 high, 2 normal, 3 low and
   normal, 4 low of exponent 10 only, 5 high of exponent 249 only (fused with tiles of
   exponents 118 .. 131, not with a tile holding one lane of exponent 117 or 132: half the
   edge rounds, so the tile's smallest and largest exponents must cover every lane). */
static uint16_t edge_elem(unsigned kind)
{
    uint16_t s = (uint16_t)((rnd() & 1u) << 15);
    unsigned r = rnd() % 100u;
    if (r < (kind < 2 || kind > 3 ? 90u : 25u)) return r < 20 ? 0x8000u : 0x0000u;
    if (kind == 2 || (kind == 3 && r < 60)) return val(0);
    unsigned e = kind == 4 ? 10u : kind == 5 ? 249u : kind == 1 ? 249u + rnd() % 2u : 9u + rnd() % 2u;
    return (uint16_t)(s | (e << 7) | (rnd() & 0x7Fu));
}

enum { HOST = 1u << 22, UBA = 0, WA = 0x100000, AA = 0x200000, OUT = 0x300000 };

static void put16(uint8_t *h, size_t a, uint16_t v) { memcpy(h + a, &v, 2); }

static int run(unsigned n, int integer, const char *simd, const tpu_insn_t *prog, size_t count,
               const uint8_t *host0, uint8_t *host)
{
    if (integer) setenv("TPU_MODEL_INTEGER_MX", "1", 1);
    else unsetenv("TPU_MODEL_INTEGER_MX");
    if (simd) setenv("TPU_MODEL_MX_SIMD", simd, 1);
    else unsetenv("TPU_MODEL_MX_SIMD");
    tpu_core_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.geom = tpu_core_geom_default(n);
    cfg.geom.imem_insns = 4096;
    cfg.pe_stages = 1;
    tpu_core_t *c = tpu_core_new(&cfg);
    if (!c) return 1;
    memcpy(host, host0, HOST);
    tpu_core_result_t res;
    int rc = tpu_core_run(c, prog, count, 0, host, HOST, NULL, &res);
    tpu_core_free(c);
    return rc != TPU_OK || res.status != TPU_CORE_DONE;
}

int main(void)
{
    static const unsigned sizes[] = { 1, 3, 8, 13, 16, 20, 37, 48, 64, 100, 128 };
    uint8_t *h0 = calloc(HOST, 1), *hi = malloc(HOST), *hf = malloc(HOST), *hs = malloc(HOST),
            *hk = malloc(HOST), *h2 = malloc(HOST), *h3 = malloc(HOST);
    tpu_insn_t *prog = malloc(sizeof *prog * 4096);
    long elems = 0, progs = 0;
    int fails = 0;
    /* pass 1: the edge rounds (edge_elem) */
    for (unsigned pass = 0; pass < 2; pass++)
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        unsigned n = sizes[si], edge = pass == 1;
        unsigned rounds = edge ? (n >= 37 ? 16 : 0) : n >= 64 ? 10 : 24;
        for (unsigned round = 0; round < rounds; round++) {
            unsigned m = 1 + rnd() % (n < 8 ? 40 : 3 * n), tiles = 4;
            memset(h0, 0, HOST);
            /* activations: m rows, each of a random kind; some rows all +0 or -0 */
            int rare = round % 3 == 2;
            /* half the edge rounds: every tile with one lane of exponent 117 or 132 (below) and
               rows of kinds 2, 4 and 5 only (each fused unless that lane is seen) */
            int outl = edge && rnd() % 2u;
            unsigned xcols = n > 1 && rnd() % 2 ? 1 + rnd() % n : n;
            for (unsigned i = 0; i < m; i++) {
                unsigned kind = rnd() % 8u;
                /* edge rounds: kinds 6 and 7 are 4 and 5 with elements of exponent 6 or 253
                   at steps r, r + 16, ... (r random: the row's smallest or largest exponent
                   is in one lane of mx_list's 16, its min / max must cover every lane; most
                   of their products flush or overflow) */
                unsigned ek = outl ? (kind % 3u == 0 ? 2u : kind % 3u == 1 ? 4u : 5u)
                                   : kind < 6u ? kind : kind - 2u;
                for (unsigned j = 0; j < n; j++) {
                    uint16_t v = edge ? edge_elem(ek)
                                 : kind == 6 ? 0x0000u : kind == 7 ? 0x8000u : elem(kind, j, xcols, rare);
                    put16(h0, UBA + 2u * ((size_t)i * n + j), v);
                }
                if (edge && !outl && kind >= 6u)
                    for (unsigned j = rnd() % 16u; j < n; j += 16u)
                        put16(h0, UBA + 2u * ((size_t)i * n + j),
                              (uint16_t)(((rnd() & 1u) << 15) | ((kind == 6u ? 6u : 253u) << 7) |
                                         (rnd() & 0x7Fu)));
            }
            /* tiles: rows of a random kind; narrow tiles padded with +0 or -0 columns */
            for (unsigned t = 0; t < tiles; t++) {
                unsigned ncols = rnd() % 2 ? n : 1 + rnd() % n, pad = rnd() % 2;
                for (unsigned k = 0; k < n; k++) {
                    unsigned kind = rnd() % 9u;
                    for (unsigned j = 0; j < n; j++) {
                        uint16_t v = edge ? val(0)
                                     : j >= ncols ? (pad ? 0x8000u : 0u)
                                     : kind >= 6 ? (kind == 6 ? 0u : kind == 7 ? 0x8000u : val(2u + rnd() % 2u))
                                                 : elem(kind, j, n, rare);
                        put16(h0, WA + 2u * (((size_t)t * n + k) * n + j), v);
                    }
                }
                /* one lane's weights just outside the others' exponents (117 or 132, a
                   random lane): the tile's smallest or largest exponent is that one lane's
                   (mx_prep's min / max over every lane) */
                if (outl) {
                    unsigned j = rnd() % n, e = rnd() % 2u ? 117u : 132u;
                    for (unsigned k = 0; k < n; k++)
                        put16(h0, WA + 2u * (((size_t)t * n + k) * n + j),
                              (uint16_t)(((rnd() & 1u) << 15) | (e << 7) | (rnd() & 0x7Fu)));
                }
            }
            /* ACC seeds: -0, +0, subnormals, normals, tiny */
            for (unsigned i = 0; i < m * n; i++) {
                uint32_t r = rnd() % 6u, s = (rnd() & 1u) << 31, v;
                if (edge)
                    r = 6u + rnd() % 2u;
                v = r == 6 ? s | (23u << 23) | (rnd() & 0x7FFFFFu)
                    : r == 7 ? s | (254u << 23) | (rnd() & 0x7FFFFFu)
                    : r == 0 ? 0x80000000u : r == 1 ? 0u : r == 2 ? s | (rnd() & 0x7FFFFFu)
                    : r == 3 ? s | ((1u + rnd() % 4u) << 23) | (rnd() & 0x7FFFFFu)
                             : s | ((120u + rnd() % 10u) << 23) | (rnd() & 0x7FFFFFu);
                memcpy(h0 + AA + 4u * i, &v, 4);
            }
            size_t cnt = 0;
            tpu_dinsn_t d;
#define EMIT() (prog[cnt++] = tpu_insn_encode(&d))
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_DMA_IN; d.mem = TPU_MEM_UB; d.row = 0; d.n = m; d.cols = n;
            d.addr = UBA; d.stride = 2u * n; EMIT();
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_DMA_IN; d.mem = TPU_MEM_WMEM; d.row = 0; d.n = tiles * n;
            d.cols = n; d.addr = WA; d.stride = 2u * n; EMIT();
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_DMA_IN; d.mem = TPU_MEM_ACC; d.row = 0; d.n = m; d.cols = n;
            d.addr = AA; d.stride = 4u * n; EMIT();
            for (unsigned step = 0; step < 6; step++) {
                memset(&d, 0, sizeof d);
                d.opcode = TPU_OP_LW; d.w_row = (rnd() % tiles) * n; d.transpose = rnd() % 4 == 0;
                EMIT();
                unsigned r0 = rnd() % m, rows = 1 + rnd() % (m - r0);
                memset(&d, 0, sizeof d);
                d.opcode = TPU_OP_MATMUL; d.ub_row = r0; d.acc_row = rnd() % (m - rows + 1);
                d.n = rows; d.accumulate = step == 0 || edge ? 1 : rnd() % 3 != 0; EMIT();
            }
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_DMA_OUT; d.mem = TPU_MEM_ACC; d.row = 0; d.n = m; d.cols = n;
            d.addr = OUT; d.stride = 4u * n; EMIT();
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_HALT; EMIT();
            if (run(n, 1, NULL, prog, cnt, h0, hi) || run(n, 0, NULL, prog, cnt, h0, hf) ||
                run(n, 0, "sse2", prog, cnt, h0, hs) || run(n, 0, "skip", prog, cnt, h0, hk) ||
                run(n, 0, "avx2", prog, cnt, h0, h2) || run(n, 0, "avx2-skip", prog, cnt, h0, h3)) {
                printf("FAIL: N=%u round %u: a run failed\n", n, round);
                fails++;
                continue;
            }
            progs++;
            for (unsigned i = 0; i < m * n; i++) {
                uint32_t a, b, c, k, v, u;
                memcpy(&a, hi + OUT + 4u * i, 4);
                memcpy(&b, hf + OUT + 4u * i, 4);
                memcpy(&c, hs + OUT + 4u * i, 4);
                memcpy(&k, hk + OUT + 4u * i, 4);
                memcpy(&v, h2 + OUT + 4u * i, 4);
                memcpy(&u, h3 + OUT + 4u * i, 4);
                elems++;
                if (a != b || a != c || a != k || a != v || a != u) {
                    printf("FAIL: N=%u round %u ACC row %u col %u: integer %08x, host floats "
                           "(default) %08x, sse2 %08x, skip %08x, avx2 %08x, avx2-skip %08x\n",
                           n, round, i / n, i % n, a, b, c, k, v, u);
                    fails++;
                    break;
                }
            }
        }
    }
    unsetenv("TPU_MODEL_INTEGER_MX");
    unsetenv("TPU_MODEL_MX_SIMD");
    printf("host-float matmul: %ld programs, %ld ACC elements compared with the integer path, "
           "%d failure(s)\n", progs, elems, fails);
    free(h0); free(hi); free(hf); free(hs); free(hk); free(h2); free(h3); free(prog);
    return fails != 0;
}
