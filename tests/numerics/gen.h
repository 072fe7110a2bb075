/* SPDX-License-Identifier: Apache-2.0 */
/* Deterministic random operands for the numerics tests (header-only, shared by
 * tests/numerics and tests/full). xoshiro256** seeded through splitmix64. */
#ifndef TESTS_NUMERICS_GEN_H
#define TESTS_NUMERICS_GEN_H

#include <stdint.h>

typedef struct { uint64_t s[4]; } rng_t;

static inline uint64_t gen_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline void rng_seed(rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = gen_splitmix64(&seed);
}

static inline uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t x = s[1] * 5;
    uint64_t res = ((x << 7) | (x >> 57)) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return res;
}

static inline uint32_t rng_u32(rng_t *r) { return (uint32_t)(rng_next(r) >> 32); }

/* uniform in [0, n) */
static inline uint32_t rng_below(rng_t *r, uint32_t n)
{
    return (uint32_t)(((uint64_t)rng_u32(r) * n) >> 32);
}

/* uniform in [lo, hi] */
static inline int32_t rng_range(rng_t *r, int32_t lo, int32_t hi)
{
    return lo + (int32_t)rng_below(r, (uint32_t)(hi - lo + 1));
}

/* A fraction of `bits` bits: uniform most of the time, otherwise a pattern that tends to
   sit on rounding boundaries (all zeros, all ones, one bit, one bit missing, a run). */
static inline uint32_t gen_frac(rng_t *r, int bits)
{
    uint32_t mask = (1u << bits) - 1u;
    uint32_t u = rng_u32(r);
    uint32_t k = rng_below(r, (uint32_t)bits);
    switch (rng_below(r, 12)) {
    case 0: return 0;
    case 1: return mask;
    case 2: return 1u << k;
    case 3: return mask ^ (1u << k);
    case 4: return (mask >> k) & mask;           /* low run of ones */
    case 5: return (mask << k) & mask;           /* high run of ones */
    case 6: return u & (mask << k) & mask;       /* random top, zero bottom */
    default: return u & mask;
    }
}

static inline uint32_t gen_sign32(rng_t *r) { return rng_u32(r) & 0x80000000u; }

/* fp32 with a biased exponent in [elo, ehi] (0 = zero/subnormal, 255 = Inf/NaN) */
static inline uint32_t gen_fp32_exp(rng_t *r, int elo, int ehi)
{
    uint32_t e = (uint32_t)rng_range(r, elo, ehi);
    return gen_sign32(r) | (e << 23) | gen_frac(r, 23);
}

/* bf16 with a biased exponent in [elo, ehi] */
static inline uint16_t gen_bf16_exp(rng_t *r, int elo, int ehi)
{
    uint32_t e = (uint32_t)rng_range(r, elo, ehi);
    return (uint16_t)((rng_u32(r) & 0x8000u) | (e << 7) | gen_frac(r, 7));
}

static const uint32_t GEN_FP32_SPECIAL[] = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00400000u, /* zeros, subnormals */
    0x00800000u, 0x80800000u, 0x00800001u, 0x00FFFFFFu, 0x01000000u, /* around 2^-126 */
    0x3F800000u, 0xBF800000u, 0x3F800001u, 0x3FFFFFFFu, 0x33800000u, /* 1, ulp-ish */
    0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F8000u, 0x7F000000u, 0x7EFFFFFFu, /* near max */
    0x7F800000u, 0xFF800000u,                                        /* Inf */
    0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FBFFFFFu, 0xFFFFFFFFu, /* NaNs */
};
static const uint16_t GEN_BF16_SPECIAL[] = {
    0x0000u, 0x8000u, 0x0001u, 0x807Fu, 0x0040u, 0x0080u, 0x8080u, 0x0081u, 0x00FFu,
    0x3F80u, 0xBF80u, 0x3F81u, 0x3FFFu, 0x7F7Fu, 0xFF7Fu, 0x7F00u, 0x7F80u, 0xFF80u,
    0x7FC0u, 0xFFC0u, 0x7F81u, 0x7FBFu, 0xFFFFu, 0x1F80u, 0x5F80u,
};
#define GEN_N_FP32_SPECIAL (sizeof GEN_FP32_SPECIAL / sizeof GEN_FP32_SPECIAL[0])
#define GEN_N_BF16_SPECIAL (sizeof GEN_BF16_SPECIAL / sizeof GEN_BF16_SPECIAL[0])

static inline uint32_t gen_fp32_special(rng_t *r)
{
    return GEN_FP32_SPECIAL[rng_below(r, GEN_N_FP32_SPECIAL)];
}
static inline uint16_t gen_bf16_special(rng_t *r)
{
    return GEN_BF16_SPECIAL[rng_below(r, GEN_N_BF16_SPECIAL)];
}

/* The generators. */
enum { GEN_UNIFORM, GEN_CLOSE, GEN_TINY, GEN_HUGE, GEN_SPECIAL, GEN_COUNT };
static const char *const GEN_NAME[GEN_COUNT] = { "uniform", "close", "tiny", "huge", "special" };

/* One fp32 for fp32 -> bf16. close: the low half near the rounding point 0x8000. */
static inline uint32_t gen_fp32_one(rng_t *r, int kind)
{
    switch (kind) {
    case GEN_CLOSE: {
        uint32_t hi = rng_u32(r) & 0xFFFF0000u;
        uint32_t lo = (uint32_t)(0x8000 + rng_range(r, -3, 3)) & 0xFFFFu;
        return hi | lo;
    }
    case GEN_TINY: return gen_fp32_exp(r, 0, 3);
    case GEN_HUGE: return gen_fp32_exp(r, 252, 255);
    case GEN_SPECIAL:
        return rng_below(r, 2) ? gen_fp32_special(r) : (gen_fp32_special(r) ^ (rng_u32(r) & 0xFFFFu));
    default: return rng_u32(r);
    }
}

/* Two fp32 for add/sub. close: exponents within 3 of each other, or b = -(a +- a few
   ulps) (cancellation); tiny: exponents 0..4 (subnormal and FTZ sums); huge: near
   overflow. */
static inline void gen_fp32_pair(rng_t *r, int kind, uint32_t *a, uint32_t *b)
{
    switch (kind) {
    case GEN_CLOSE: {
        uint32_t x = gen_fp32_exp(r, 1, 254);
        if (rng_below(r, 2)) {
            int32_t e = (int32_t)((x >> 23) & 0xFFu) + rng_range(r, -3, 3);
            e = e < 1 ? 1 : e > 254 ? 254 : e;
            *a = x;
            *b = gen_sign32(r) | ((uint32_t)e << 23) | gen_frac(r, 23);
        } else {
            uint32_t y = (x & 0x7FFFFFFFu) + (uint32_t)rng_range(r, -4, 4);
            *a = x;
            *b = (y & 0x7FFFFFFFu) | ((x ^ 0x80000000u) & 0x80000000u);
        }
        break;
    }
    case GEN_TINY:
        *a = gen_fp32_exp(r, 0, 4);
        *b = gen_fp32_exp(r, 0, 4);
        break;
    case GEN_HUGE:
        *a = gen_fp32_exp(r, 248, 255);
        *b = gen_fp32_exp(r, 230, 255);
        break;
    case GEN_SPECIAL:
        *a = gen_fp32_special(r);
        *b = rng_below(r, 2) ? gen_fp32_special(r) : rng_u32(r);
        break;
    default:
        *a = rng_u32(r);
        *b = rng_u32(r);
        break;
    }
    if (rng_below(r, 2)) { /* either order */
        uint32_t t = *a; *a = *b; *b = t;
    }
}

/* Two bf16 for the product. close: exponent sum near the FTZ boundary (2^-126);
   tiny: very small products; huge: exponent sum near overflow (2^128). */
static inline void gen_bf16_pair(rng_t *r, int kind, uint16_t *a, uint16_t *b)
{
    switch (kind) {
    case GEN_CLOSE: case GEN_HUGE: {
        int32_t target = kind == GEN_CLOSE ? 127 : 381; /* ea + eb at the boundary */
        int32_t s = target + rng_range(r, -3, 3);
        int32_t lo = s - 254 > 1 ? s - 254 : 1, hi = s - 1 < 254 ? s - 1 : 254;
        int32_t ea = rng_range(r, lo, hi);
        *a = gen_bf16_exp(r, ea, ea);
        *b = gen_bf16_exp(r, s - ea, s - ea);
        break;
    }
    case GEN_TINY:
        *a = gen_bf16_exp(r, 0, 64);
        *b = gen_bf16_exp(r, 0, 127);
        break;
    case GEN_SPECIAL:
        *a = gen_bf16_special(r);
        *b = rng_below(r, 2) ? gen_bf16_special(r) : (uint16_t)rng_u32(r);
        break;
    default:
        *a = (uint16_t)rng_u32(r);
        *b = (uint16_t)rng_u32(r);
        break;
    }
    if (rng_below(r, 2)) {
        uint16_t t = *a; *a = *b; *b = t;
    }
}

/* acc, a, b for the MAC: the product from gen_bf16_pair, and for close/tiny/huge an
   accumulator whose exponent is within a few of the product's (rounding, cancellation,
   FTZ and overflow of the sum). */
static inline void gen_mac(rng_t *r, int kind, uint32_t *acc, uint16_t *a, uint16_t *b)
{
    gen_bf16_pair(r, kind == GEN_CLOSE ? GEN_UNIFORM : kind, a, b);
    if (kind == GEN_UNIFORM) {
        *acc = rng_u32(r);
        return;
    }
    if (kind == GEN_SPECIAL) {
        *acc = rng_below(r, 2) ? gen_fp32_special(r) : rng_u32(r);
        return;
    }
    if (kind == GEN_CLOSE) { /* keep the product normal and finite */
        int32_t ea = rng_range(r, 64, 190), eb = rng_range(r, 64, 190);
        *a = gen_bf16_exp(r, ea, ea);
        *b = gen_bf16_exp(r, eb, eb);
    }
    int32_t pe = (int32_t)((*a >> 7) & 0xFFu) + (int32_t)((*b >> 7) & 0xFFu) - 127;
    int32_t e = pe + rng_range(r, -26, 26);
    e = e < 0 ? 0 : e > 255 ? 255 : e;
    *acc = gen_sign32(r) | ((uint32_t)e << 23) | gen_frac(r, 23);
    if (kind == GEN_CLOSE && rng_below(r, 4) == 0) {
        /* acc = -(the exact product) +- a few ulps: massive cancellation */
        uint32_t ma = 0x80u | (*a & 0x7Fu), mb = 0x80u | (*b & 0x7Fu), p = ma * mb;
        uint32_t frac = p & 0x8000u ? (p & 0x7FFFu) << 8 : (p & 0x3FFFu) << 9;
        uint32_t be = (uint32_t)(pe + (p & 0x8000u ? 1 : 0));
        uint32_t sign = ((uint32_t)(*a ^ *b) & 0x8000u) << 16;
        uint32_t mag = (be << 23) | frac;
        mag += (uint32_t)rng_range(r, -3, 3);
        *acc = (sign ^ 0x80000000u) | (mag & 0x7FFFFFFFu);
    }
}

#endif
