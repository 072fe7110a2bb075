/* SPDX-License-Identifier: Apache-2.0 */
/* fp32_to_bf16 over a run of values (tpu/numerics.h): fp32_to_bf16 per value, or, for a
   dense run on a host with AVX2, the same function 8 values at a time as vector operations on
   the bits (NaN -> 0x7FC0; DAZ; Inf and zero exact; else round to nearest even on bit 16,
   a carry into the exponent field being the correct result), the scalar one for the rest.
   tests/model/test_f2b_run.c compares the two on every sign, exponent and top mantissa bits
   with the rounding edges of the low half. */
#include <stdlib.h>
#include <string.h>

#include "tpu/numerics.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

static __attribute__((target("avx2"))) size_t run_avx2(const uint32_t *src, uint16_t *dst,
                                                       size_t n)
{
    const __m256i em = _mm256_set1_epi32(0x7F800000), ab = _mm256_set1_epi32(0x7FFFFFFF);
    const __m256i sg = _mm256_set1_epi32((int)0x80000000u), one = _mm256_set1_epi32(1);
    const __m256i half = _mm256_set1_epi32(0x7FFF), qnan = _mm256_set1_epi32(0x7FC0);
    size_t i = 0;
    for (; i + 8u <= n; i += 8u) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        __m256i e = _mm256_and_si256(v, em);
        __m256i zero = _mm256_cmpeq_epi32(e, _mm256_setzero_si256());
        __m256i d = _mm256_blendv_epi8(v, _mm256_and_si256(v, sg), zero); /* DAZ */
        __m256i exact = _mm256_or_si256(zero, _mm256_cmpeq_epi32(e, em));
        __m256i r = _mm256_add_epi32(_mm256_add_epi32(d, half),
                                     _mm256_and_si256(_mm256_srli_epi32(d, 16), one));
        r = _mm256_srli_epi32(_mm256_blendv_epi8(r, d, exact), 16);
        r = _mm256_blendv_epi8(r, qnan, _mm256_cmpgt_epi32(_mm256_and_si256(v, ab), em));
        /* the low halves of the 8 words, in order */
        __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm_packus_epi32(lo, hi));
    }
    return i;
}

static int have_avx2(void)
{
    static int state = -1;
    if (state < 0) {
        const char *e = getenv("TPU_MODEL_MX_SIMD");
        __builtin_cpu_init();
        state = __builtin_cpu_supports("avx2") && !(e && strcmp(e, "sse2") == 0) ? 1 : 0;
    }
    return state;
}
#endif

void fp32_to_bf16_run(const uint32_t *src, uint16_t *dst, size_t n, size_t step)
{
    size_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (step == 1 && have_avx2())
        i = run_avx2(src, dst, n);
#endif
    for (; i < n; i++)
        dst[i * step] = fp32_to_bf16(fp32_from_bits(src[i])).v;
}
