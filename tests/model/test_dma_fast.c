/* SPDX-License-Identifier: Apache-2.0 */
/* The DMA's row copies (cmodel/src/core_dma.c): widen16 / narrow16 on AVX-512 (the host-float
   paths on an AVX-512 host) against the SSE2 ones (TPU_MODEL_MX_SIMD=avx2) and the integer
   path's (TPU_MODEL_INTEGER_MX=1), byte for byte: random programs of dma_in and dma_out on UB
   (16-bit elements; WMEM: dma_in only) and ACC (32-bit) with random column counts (1 .. N:
   every tail length), host addresses and strides of any multiple of the element size, rows
   reaching the end of host memory, at N = 1 .. 128; the whole host memory and the rows' whole
   words (a UB or WMEM word holds its 16-bit value zero-extended) compared after each program
   (the dma_out rows written from rows the dma_in filled, so both directions are checked). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/core.h"
#include "tpu/isa.h"
#include "tpu/types.h"

static uint64_t rng = 0x6A09E667F3BCC909ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

enum { HOST = 1u << 20 };

/* rows 0 .. 47 of UB, WMEM (at most 8 N) and ACC after a run, whole words */
enum { ROWS = 48 };
static unsigned mem_rows(unsigned mi, unsigned n) { return mi == 1 && 8u * n < ROWS ? 8u * n : ROWS; }

static int run(unsigned n, int integer, const char *simd, const tpu_insn_t *prog, size_t count,
               const uint8_t *host0, uint8_t *host, uint32_t *words)
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
    if (rc != TPU_OK || res.status != TPU_CORE_DONE)
        printf("run: rc %d status %d error %d at pc %u\n", rc, (int)res.status, res.err_code,
               (unsigned)res.err_pc);
    static const unsigned mems[3] = { TPU_MEM_UB, TPU_MEM_WMEM, TPU_MEM_ACC };
    for (unsigned mi = 0; mi < 3; mi++)
        for (unsigned r = 0; r < ROWS; r++) {
            uint32_t *w = words + ((size_t)mi * ROWS + r) * n;
            if (r < mem_rows(mi, n))
                memcpy(w, tpu_core_row(c, mems[mi], r), sizeof *w * n);
            else
                memset(w, 0, sizeof *w * n);
        }
    tpu_core_free(c);
    return rc != TPU_OK || res.status != TPU_CORE_DONE;
}

int main(void)
{
    static const unsigned sizes[] = { 1, 3, 8, 13, 16, 17, 31, 37, 64, 100, 128 };
    uint8_t *h0 = malloc(HOST), *ha = malloc(HOST), *hb = malloc(HOST), *hc = malloc(HOST);
    size_t nw = 3u * ROWS * 128u;
    uint32_t *wa = malloc(sizeof *wa * nw), *wb = malloc(sizeof *wb * nw), *wc = malloc(sizeof *wc * nw);
    tpu_insn_t *prog = malloc(sizeof *prog * 4096);
    long progs = 0, bytes = 0, words = 0;
    int fails = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        unsigned n = sizes[si];
        for (unsigned round = 0; round < 24; round++) {
            for (size_t i = 0; i < HOST; i++) h0[i] = (uint8_t)rnd();
            size_t cnt = 0;
            tpu_dinsn_t d;
#define EMIT() (prog[cnt++] = tpu_insn_encode(&d))
            /* every row of UB, WMEM and ACC written first (whole rows), so that later
               partial rows only overwrite written rows */
            static const unsigned mems[3] = { TPU_MEM_UB, TPU_MEM_WMEM, TPU_MEM_ACC };
            /* (WMEM: 8 tiles of N rows) */
            const unsigned nrows[3] = { ROWS, mem_rows(1, n), ROWS };
            for (unsigned mi = 0; mi < 3; mi++) {
                unsigned e = mems[mi] == TPU_MEM_ACC ? 4u : 2u;
                memset(&d, 0, sizeof d);
                d.opcode = TPU_OP_DMA_IN; d.mem = mems[mi]; d.row = 0; d.n = nrows[mi]; d.cols = n;
                d.addr = e * (1u + rnd() % 4096u); d.stride = e * (n + rnd() % 7u); EMIT();
            }
            for (unsigned step = 0; step < 24; step++) {
                unsigned mi = rnd() % 3u, mem = mems[mi], e = mem == TPU_MEM_ACC ? 4u : 2u;
                unsigned cols = 1u + rnd() % n, nr = 1u + rnd() % (nrows[mi] < 12u ? nrows[mi] : 12u);
                memset(&d, 0, sizeof d);
                /* (no dma_out from WMEM: error 3; its rows are widened as UB's) */
                d.opcode = mem != TPU_MEM_WMEM && rnd() % 2u ? TPU_OP_DMA_OUT : TPU_OP_DMA_IN;
                d.mem = mem; d.row = rnd() % (nrows[mi] - nr + 1u); d.n = nr; d.cols = cols;
                d.stride = e * (cols + (rnd() % 3u == 0 ? 0u : rnd() % 150u));
                uint32_t span = (nr - 1u) * d.stride + e * cols;
                /* some rows ending at the last byte of host memory */
                d.addr = rnd() % 5u == 0 ? HOST - span : e * (16u + rnd() % (HOST / 8u));
                EMIT();
            }
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_HALT; EMIT();
            if (run(n, 0, NULL, prog, cnt, h0, ha, wa) || run(n, 0, "avx2", prog, cnt, h0, hb, wb) ||
                run(n, 1, NULL, prog, cnt, h0, hc, wc)) {
                printf("FAIL: N=%u round %u: a run failed\n", n, round);
                fails++;
                continue;
            }
            progs++;
            bytes += HOST;
            for (size_t i = 0; i < HOST; i++)
                if (ha[i] != hb[i] || ha[i] != hc[i]) {
                    printf("FAIL: N=%u round %u host byte %zu: default %02x, avx2 (SSE2 copies) "
                           "%02x, integer %02x\n", n, round, i, ha[i], hb[i], hc[i]);
                    fails++;
                    break;
                }
            for (size_t i = 0; i < 3u * ROWS * n; i++)
                if (wa[i] != wb[i] || wa[i] != wc[i]) {
                    printf("FAIL: N=%u round %u %s row %zu word %zu: default %08x, avx2 %08x, "
                           "integer %08x\n", n, round, i / (ROWS * n) == 0 ? "UB"
                           : i / (ROWS * n) == 1 ? "WMEM" : "ACC", i / n % ROWS, i % n,
                           (unsigned)wa[i], (unsigned)wb[i], (unsigned)wc[i]);
                    fails++;
                    break;
                }
            words += 3L * ROWS * n;
        }
    }
    unsetenv("TPU_MODEL_INTEGER_MX");
    unsetenv("TPU_MODEL_MX_SIMD");
    printf("DMA row copies: %ld programs, %ld host bytes and %ld row words compared (default, "
           "SSE2, integer path), %d failure(s)\n", progs, bytes, words, fails);
    free(h0); free(ha); free(hb); free(hc); free(wa); free(wb); free(wc); free(prog);
    return fails != 0;
}
