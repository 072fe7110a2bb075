/* SPDX-License-Identifier: Apache-2.0 */
/* The naive matmul oracle on host float (see oracle.h). Built with -ffp-contract=off. */
#include <string.h>
#include "oracle.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <xmmintrin.h>

int oracle_available(void)
{
    return 1;
}

static float bf(bf16_t x)
{
    uint32_t u = (uint32_t)x.v << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t out_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return f != f ? 0x7FC00000u : u;
}

/* The FP work is out of line so no operation moves across the MXCSR writes. */
static __attribute__((noinline)) uint32_t chain(size_t len, const bf16_t *a, const bf16_t *w,
                                                size_t ws)
{
    float s = -0.0f;
    for (size_t i = 0; i < len; i++)
        s = s + bf(a[i]) * bf(w[i * ws]);
    return out_bits(s);
}

static unsigned enter(void)
{
    unsigned saved = _mm_getcsr();
    /* RNE, FTZ (bit 15), DAZ (bit 6), all exceptions masked */
    _mm_setcsr((saved & ~0x6000u) | 0x8040u | 0x1F80u);
    return saved;
}

uint32_t oracle_chain(size_t len, const bf16_t *a, const bf16_t *w, size_t ws)
{
    unsigned saved = enter();
    uint32_t r = chain(len, a, w, ws);
    _mm_setcsr(saved);
    return r;
}

void oracle_matmul(size_t m, size_t k, size_t n, const bf16_t *a, const bf16_t *w,
                   uint32_t *c)
{
    unsigned saved = enter();
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            c[i * n + j] = chain(k, a + i * k, w + j, n);
    _mm_setcsr(saved);
}

#else
int oracle_available(void)
{
    return 0;
}
uint32_t oracle_chain(size_t len, const bf16_t *a, const bf16_t *w, size_t ws)
{
    (void)len, (void)a, (void)w, (void)ws;
    return 0;
}
void oracle_matmul(size_t m, size_t k, size_t n, const bf16_t *a, const bf16_t *w,
                   uint32_t *c)
{
    (void)m, (void)k, (void)n, (void)a, (void)w, (void)c;
}
#endif
