/* SPDX-License-Identifier: Apache-2.0 */
/* fp32_to_bf16_run (cmodel/src/fp32_to_bf16_run.c: AVX2 where the host has it) against
   fp32_to_bf16 value by value, bit for bit: every sign, exponent and top 7 mantissa bits, each
   with the low 16 bits at the rounding edges (0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF and the
   same with bit 16 set) and random ones; runs of odd lengths and offsets (the scalar tail),
   and a strided run (the scalar path). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tpu/numerics.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static int check(const uint32_t *src, size_t n, size_t step, long *count)
{
    static uint16_t dst[4096 * 3];
    fp32_to_bf16_run(src, dst, n, step);
    for (size_t i = 0; i < n; i++) {
        uint16_t want = fp32_to_bf16(fp32_from_bits(src[i])).v;
        if (dst[i * step] != want) {
            printf("FAIL: fp32 %08x: run %04x, fp32_to_bf16 %04x (n %zu, step %zu)\n",
                   (unsigned)src[i], (unsigned)dst[i * step], (unsigned)want, n, step);
            return 1;
        }
    }
    *count += (long)n;
    return 0;
}

int main(void)
{
    static const uint32_t edges[] = { 0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu };
    static uint32_t src[4096];
    long count = 0;
    int fails = 0;
    for (uint32_t top = 0; top < 65536u && fails < 10; top += 8u) {
        size_t k = 0;
        for (uint32_t t = top; t < top + 8u; t++) {
            uint32_t hi = (t << 16) & 0xFFFE0000u; /* bit 16 below from the low patterns */
            for (size_t e = 0; e < 6; e++) {
                src[k++] = hi | edges[e];
                src[k++] = hi | 0x10000u | edges[e];
            }
            for (size_t r = 0; r < 52; r++)
                src[k++] = hi | (rnd() & 0x1FFFFu);
        }
        fails += check(src, k, 1, &count);
        fails += check(src + 3, k - 8, 1, &count); /* an odd offset and length */
        if (top % 1024u == 0)
            fails += check(src, k, 3, &count);     /* strided: the scalar path */
    }
    printf("fp32_to_bf16_run: %ld values compared with fp32_to_bf16, %d failure(s)\n", count,
           fails);
    return fails != 0;
}
