/* SPDX-License-Identifier: Apache-2.0 */
/* Also the AVX-512 whole-instruction rows (vpu_rows_binary_fast, vpu_rows_unary_fast) on the
   same elements, as rows of several lengths, b per row and broadcast.
   Both copies of the loops (AVX2 where the host has it, and the baseline: vpu_fast_set_simd).
   The VPU's fast relu, cvt and erf (vpu_vec_unary_fast) against vpu_vec_unary on every bf16
   pattern and the specials and 1 M random fp32 patterns (erf: 0.5 M more with |x| < 8), in every load/store format; its fast
   add/sub/mul/max/min path (cmodel/src/vpu_fast.c, used by the core model) against
   vpu_vec_binary, bit for bit: every pair of 64 special fp32 patterns (zeros, subnormals, the
   smallest and largest normals, Inf, NaNs with payloads, values whose sum or difference is
   tiny, exactly half-way or overflows) and 4 M random pairs per op (half of them with close
   exponents, where cancellation happens; for mul, a quarter with products at the FTZ edge and
   at overflow), in every load/store format (fp32 and bf16). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tpu/vpu.h"
#include "vpu_fast.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static const uint32_t SPECIAL[] = {
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000,
    0x80800000, 0x00800001, 0x80800001, 0x00FFFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
    0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0xFFFFFFFF, 0x3F800000,
    0xBF800000, 0x3F800001, 0xBF800001, 0x33800000, 0x34000000, 0x3F7FFFFF, 0x4B800000,
    0xCB800000, 0x4B7FFFFF, 0x00400000, 0x80400000, 0x01000000, 0x81000000, 0x7F000000,
    0xFF000000, 0x7EFFFFFF, 0x3FC00000, 0xBFC00000, 0x3F808000, 0x3F818000, 0x00008000,
    0x80008000, 0x3F7F8000, 0x40000000, 0xC0000000, 0x00810000, 0x80810000, 0x00800080,
    0x80800080, 0x1E3C0000, 0x9E3C0000, 0x7F7F8000, 0xFF7F8000, 0x3F800080, 0xBF800080,
    0x00FF0000, 0x80FF0000, 0x7FFF0000, 0x7F810000, 0x00010000, 0x80010000, 0x3E800000,
    0xBE800000,
};

/* elements compared through the AVX-512 rows (vpu_rows_*_fast; 0 where the host has none) */
static long rows_count;

/* vpu_rows_binary_fast on the same elements: one row of n, then rows of n / R lanes (R = 2, 3,
   5: a row's last lanes under a mask at most lengths), b per row or one b row for all (bcast),
   against the reference row by row */
static int check_rows(vpu_op_t op, vpu_fmt_t fa, vpu_fmt_t fb, vpu_fmt_t fy, size_t n,
                      const uint32_t *a, const uint32_t *b)
{
    static const size_t R[] = {1, 2, 3, 5};
    uint32_t y1[256], y2[256];
    for (unsigned ri = 0; ri < 4; ri++) {
        size_t rows = R[ri], len = n / rows, bs = (ri & 1) ? 0 : len;
        if (len == 0) continue;
        if (!vpu_rows_binary_fast(op, rows, len, fa, a, len, fb, b, bs, fy, y1, len)) return 0;
        for (size_t r = 0; r < rows; r++)
            vpu_vec_binary(op, len, fa, a + r * len, fb, b + r * bs, fy, y2 + r * len);
        for (size_t i = 0; i < rows * len; i++)
            if (y1[i] != y2[i]) {
                printf("FAIL: rows %s (%zu x %zu) fa=%d fb=%d fy=%d a=%08x b=%08x: fast %08x, "
                       "reference %08x\n", vpu_op_name(op), rows, len, fa, fb, fy,
                       (unsigned)a[i], (unsigned)b[i % len + (i / len) * bs], (unsigned)y1[i],
                       (unsigned)y2[i]);
                return 1;
            }
        rows_count += (long)(rows * len);
    }
    return 0;
}

static int check(vpu_op_t op, vpu_fmt_t fa, vpu_fmt_t fb, vpu_fmt_t fy, size_t n,
                 const uint32_t *a, const uint32_t *b)
{
    uint32_t y1[256], y2[256];
    if (check_rows(op, fa, fb, fy, n, a, b)) return 1;
    if (!vpu_vec_binary_fast(op, n, fa, a, fb, b, fy, y1)) return 0; /* no fast path here */
    vpu_vec_binary(op, n, fa, a, fb, b, fy, y2);
    for (size_t i = 0; i < n; i++)
        if (y1[i] != y2[i]) {
            printf("FAIL: %s fa=%d fb=%d fy=%d a=%08x b=%08x: fast %08x, reference %08x\n",
                   vpu_op_name(op), fa, fb, fy, (unsigned)a[i], (unsigned)b[i],
                   (unsigned)y1[i], (unsigned)y2[i]);
            return 1;
        }
    return 0;
}

static int check_rows_unary(vpu_op_t op, vpu_fmt_t fx, vpu_fmt_t fy, size_t n, const uint32_t *x)
{
    static const size_t R[] = {1, 2, 3, 5};
    uint32_t y1[256], y2[256];
    for (unsigned ri = 0; ri < 4; ri++) {
        size_t rows = R[ri], len = n / rows;
        if (len == 0) continue;
        if (!vpu_rows_unary_fast(op, rows, len, fx, x, len, fy, y1, len)) return 0;
        for (size_t r = 0; r < rows; r++)
            vpu_vec_unary(op, len, fx, x + r * len, fy, y2 + r * len);
        for (size_t i = 0; i < rows * len; i++)
            if (y1[i] != y2[i]) {
                printf("FAIL: rows %s (%zu x %zu) fx=%d fy=%d x=%08x: fast %08x, reference %08x\n",
                       vpu_op_name(op), rows, len, fx, fy, (unsigned)x[i], (unsigned)y1[i],
                       (unsigned)y2[i]);
                return 1;
            }
        rows_count += (long)(rows * len);
    }
    return 0;
}

static int check_unary(vpu_op_t op, vpu_fmt_t fx, vpu_fmt_t fy, size_t n, const uint32_t *x)
{
    uint32_t y1[256], y2[256];
    if (check_rows_unary(op, fx, fy, n, x)) return 1;
    if (!vpu_vec_unary_fast(op, n, fx, x, fy, y1)) {
        printf("FAIL: no fast path for %s\n", vpu_op_name(op));
        return 1;
    }
    vpu_vec_unary(op, n, fx, x, fy, y2);
    for (size_t i = 0; i < n; i++)
        if (y1[i] != y2[i]) {
            printf("FAIL: %s fx=%d fy=%d x=%08x: fast %08x, reference %08x\n", vpu_op_name(op),
                   fx, fy, (unsigned)x[i], (unsigned)y1[i], (unsigned)y2[i]);
            return 1;
        }
    return 0;
}

static int unary_tests(long *count)
{
    const vpu_op_t ops[] = {VPU_OP_RELU, VPU_OP_CVT, VPU_OP_ERF};
    const size_t ns = sizeof SPECIAL / sizeof SPECIAL[0];
    uint32_t x[256];
    int fails = 0;
    for (int oi = 0; oi < 3; oi++)
        for (int f = 0; f < 4; f++) {
            vpu_fmt_t fx = (f & 1) ? VPU_FMT_BF16 : VPU_FMT_FP32;
            vpu_fmt_t fy = (f & 2) ? VPU_FMT_BF16 : VPU_FMT_FP32;
            if (fx == VPU_FMT_BF16) { /* every bf16 pattern (the upper half ignored) */
                for (uint32_t v = 0; v < 65536u; v += 256u) {
                    for (uint32_t j = 0; j < 256u; j++) x[j] = (v + j) | (rnd() << 16);
                    fails += check_unary(ops[oi], fx, fy, 256, x);
                    *count += 256;
                    /* the same patterns again from an odd offset: the scalar tail */
                    fails += check_unary(ops[oi], fx, fy, 253, x + 3);
                    *count += 253;
                }
            } else {
                for (size_t i = 0; i < ns; i++) x[i] = SPECIAL[i];
                fails += check_unary(ops[oi], fx, fy, ns, x);
                *count += (long)ns;
                for (int r = 0; r < 2048; r++) {
                    /* some rows not a multiple of 8 long: the AVX2 loop's scalar tail */
                    size_t len = r % 4 == 3 ? 255u - (size_t)(r % 13) : 256u;
                    for (size_t j = 0; j < 256; j++) x[j] = rnd() ^ (rnd() << 16);
                    fails += check_unary(ops[oi], fx, fy, len, x);
                    *count += (long)len;
                }
                if (ops[oi] == VPU_OP_ERF) /* erf's range: |x| < 8, half of them in [2^-7, 8) */
                    for (int r = 0; r < 2048; r++) {
                        for (size_t j = 0; j < 256; j++) {
                            uint32_t e = (j & 1) ? 120u + rnd() % 10u : rnd() % 130u;
                            x[j] = (rnd() & 0x80000000u) | e << 23 | (rnd() & 0x7FFFFFu);
                        }
                        fails += check_unary(ops[oi], fx, fy, 256, x);
                        *count += 256;
                    }
            }
        }
    return fails;
}

static int run_all(void)
{
    long ucount = 0;
    int ufails = unary_tests(&ucount);
    printf("vpu fast relu/cvt/erf: %ld elements compared with vpu_vec_unary, %d failure(s)\n", ucount,
           ufails);
    const vpu_op_t ops[] = {VPU_OP_ADD, VPU_OP_SUB, VPU_OP_MUL, VPU_OP_MAX, VPU_OP_MIN};
    const size_t ns = sizeof SPECIAL / sizeof SPECIAL[0];
    uint32_t a[256], b[256];
    long pairs = 0;
    int fails = 0;
    for (int oi = 0; oi < 5; oi++)
        for (int f = 0; f < 8; f++) {
            vpu_fmt_t fa = (f & 1) ? VPU_FMT_BF16 : VPU_FMT_FP32;
            vpu_fmt_t fb = (f & 2) ? VPU_FMT_BF16 : VPU_FMT_FP32;
            vpu_fmt_t fy = (f & 4) ? VPU_FMT_BF16 : VPU_FMT_FP32;
            /* bf16 operands are the top half of the pattern */
            for (size_t i = 0; i < ns; i++) {
                for (size_t j = 0; j < ns; j++) {
                    a[j] = fa == VPU_FMT_BF16 ? SPECIAL[i] >> 16 : SPECIAL[i];
                    b[j] = fb == VPU_FMT_BF16 ? SPECIAL[j] >> 16 : SPECIAL[j];
                }
                fails += check(ops[oi], fa, fb, fy, ns, a, b);
                pairs += (long)ns;
            }
            for (int r = 0; r < 2048; r++) {
                for (size_t j = 0; j < 256; j++) {
                    uint32_t x = rnd() ^ (rnd() << 16), z = rnd() ^ (rnd() << 16);
                    if (j & 1) z = (x & 0xFF800000u) ^ (z & 0x807FFFFFu) ^ ((rnd() & 3u) << 23);
                    if (ops[oi] == VPU_OP_MUL && (j & 2)) {
                        /* products at the FTZ edge (2^-126, tininess after rounding) and at
                           overflow: exponent fields adding up to 1 or 254 (+- 1) */
                        uint32_t ex = 1u + rnd() % 253u, edge = (j & 4) ? 254u + 127u : 1u + 127u;
                        int32_t ez = (int32_t)edge - (int32_t)ex + (int32_t)(rnd() % 3u) - 1;
                        if (ez < 1) ez = 1;
                        if (ez > 254) ez = 254;
                        x = (x & 0x807FFFFFu) | (ex << 23);
                        z = (z & 0x807FFFFFu) | ((uint32_t)ez << 23);
                    }
                    a[j] = fa == VPU_FMT_BF16 ? x >> 16 : x;
                    b[j] = fb == VPU_FMT_BF16 ? z >> 16 : z;
                }
                /* some rows not a multiple of 8 long: the AVX2 loop's scalar tail */
                size_t len = r % 4 == 3 ? 255u - (size_t)(r % 13) : 256u;
                fails += check(ops[oi], fa, fb, fy, len, a, b);
                pairs += (long)len;
            }
        }
    printf("vpu fast path: %ld pairs compared with vpu_vec_binary, %d failure(s)\n", pairs, fails);
    printf("vpu AVX-512 rows: %ld elements compared (relu/cvt and the binary ops; 0: no such "
           "path on this host or with these loops)\n", rows_count);
    rows_count = 0;
    return fails != 0 || ufails != 0;
}

int main(void)
{
    int rc = 0;
    for (int simd = 1; simd >= 0; simd--) { /* the AVX2 copies (where the host has AVX2), then the baseline */
        vpu_fast_set_simd(simd);
        printf("%s loops:\n", simd ? "AVX2 (if the host has it)" : "baseline");
        rc |= run_all();
    }
    return rc;
}
