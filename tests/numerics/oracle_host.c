/* SPDX-License-Identifier: Apache-2.0 */
/* Host-CPU oracle for docs/numerics.md: the operations done with SSE float arithmetic
 * under MXCSR.FTZ | MXCSR.DAZ, round to nearest, compiled with -ffp-contract=off, NaN
 * results canonicalised. Every operand and result passes through an empty asm statement
 * so that the compiler can neither fold an operation at compile time (which would ignore
 * MXCSR) nor fuse or reorder it. */
#include "oracle.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HO_X86 1
#else
#define HO_X86 0
#endif

#if HO_X86
#define OPAQUE(x) __asm__ volatile("" : "+x"(x))
#define MXCSR_DAZ 0x0040u
#define MXCSR_MASKS 0x1F80u
#define MXCSR_RC 0x6000u
#define MXCSR_FTZ 0x8000u
#endif

static inline float f_of(uint32_t v)
{
    float f;
    memcpy(&f, &v, sizeof f);
    return f;
}

static inline uint32_t bits_of(float f)
{
    uint32_t v;
    memcpy(&v, &f, sizeof v);
    return v;
}

static inline uint32_t canon32(uint32_t v)
{
    return (v & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FC00000u : v;
}

int ho_init(void)
{
#if HO_X86
    unsigned csr = _mm_getcsr();
    csr &= ~MXCSR_RC;                            /* round to nearest even */
    csr |= MXCSR_FTZ | MXCSR_DAZ | MXCSR_MASKS;  /* flush, denormals-are-zero, no traps */
    _mm_setcsr(csr);
    return ho_mxcsr_ok() ? 0 : -1;
#else
    return -1;
#endif
}

int ho_mxcsr_ok(void)
{
#if HO_X86
    unsigned csr = _mm_getcsr();
    return (csr & (MXCSR_FTZ | MXCSR_DAZ)) == (MXCSR_FTZ | MXCSR_DAZ) && (csr & MXCSR_RC) == 0;
#else
    return 0;
#endif
}

#if HO_X86
__attribute__((target("avx512bf16,avx512vl"))) static uint16_t cvt_avx512bf16(uint32_t a)
{
    float x = f_of(a);
    OPAQUE(x);
    /* vcvtneps2bf16: RNE, always treats denormal inputs as zero, ignores MXCSR */
    __bfloat16 h = _mm_cvtness_sbh(x);
    uint16_t r;
    memcpy(&r, &h, sizeof r);
    return r;
}
#endif

int ho_has_fp32_to_bf16(const char **why)
{
#if HO_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vl"))
        return 1;
    if (why)
        *why = "host CPU has no AVX512-BF16 (vcvtneps2bf16): fp32->bf16 checked against MPFR only";
    return 0;
#else
    if (why)
        *why = "host is not x86: no host fp32->bf16 oracle";
    return 0;
#endif
}

#if HO_X86
uint16_t ho_fp32_to_bf16(uint32_t a)
{
    uint16_t r = cvt_avx512bf16(a);
    return (r & 0x7FFFu) > 0x7F80u ? 0x7FC0u : r;
}

uint32_t ho_bf16_to_fp32(uint16_t a)
{
    /* Widening is appending 16 zero bits; multiplying by 1 under DAZ turns a subnormal
       into a zero of the same sign and quiets NaNs; everything else is exact. */
    float x = f_of((uint32_t)a << 16), one = 1.0f;
    OPAQUE(x);
    OPAQUE(one);
    float r = x * one;
    OPAQUE(r);
    return canon32(bits_of(r));
}

uint32_t ho_bf16_mul(uint16_t a, uint16_t b)
{
    float x = f_of((uint32_t)a << 16), y = f_of((uint32_t)b << 16);
    OPAQUE(x);
    OPAQUE(y);
    float r = x * y;
    OPAQUE(r);
    return canon32(bits_of(r));
}

uint32_t ho_fp32_add(uint32_t a, uint32_t b)
{
    float x = f_of(a), y = f_of(b);
    OPAQUE(x);
    OPAQUE(y);
    float r = x + y;
    OPAQUE(r);
    return canon32(bits_of(r));
}

uint32_t ho_fp32_sub(uint32_t a, uint32_t b)
{
    float x = f_of(a), y = f_of(b);
    OPAQUE(x);
    OPAQUE(y);
    float r = x - y;
    OPAQUE(r);
    return canon32(bits_of(r));
}

uint32_t ho_fp32_mac(uint32_t acc, uint16_t a, uint16_t b)
{
    float s = f_of(acc), x = f_of((uint32_t)a << 16), y = f_of((uint32_t)b << 16);
    OPAQUE(s);
    OPAQUE(x);
    OPAQUE(y);
    float p = x * y; /* a separate multiply: never an FMA (-ffp-contract=off, and the asm) */
    OPAQUE(p);
    float r = s + p;
    OPAQUE(r);
    return canon32(bits_of(r));
}
#else
uint16_t ho_fp32_to_bf16(uint32_t a) { (void)a; return 0; }
uint32_t ho_bf16_to_fp32(uint16_t a) { (void)a; return 0; }
uint32_t ho_bf16_mul(uint16_t a, uint16_t b) { (void)a; (void)b; return 0; }
uint32_t ho_fp32_add(uint32_t a, uint32_t b) { (void)a; (void)b; return 0; }
uint32_t ho_fp32_sub(uint32_t a, uint32_t b) { (void)a; (void)b; return 0; }
uint32_t ho_fp32_mac(uint32_t c, uint16_t a, uint16_t b) { (void)c; (void)a; (void)b; return 0; }
#endif
