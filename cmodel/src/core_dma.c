/* SPDX-License-Identifier: Apache-2.0 */
/* The DMA unit: dma_in / dma_out (docs/isa.md "Semantics") and their AXI4 timing ("Timing":
   beats of B/8 bytes for the B-bit data master, bursts of at most 16 beats that do not cross
   4 KiB, a slave that accepts everything at once and answers after a fixed latency, up to 16
   bursts outstanding), and the default width B for N. */
#include <string.h>
#include "core_internal.h"
#include "tpu/config.h"

#define DMA_MAX_BEATS 16u
#define DMA_PAGE 4096u
#define DMA_READS_OUTSTANDING 16u /* bursts outstanding, reads and writes */
#define DMA_AHEAD 8u /* dma_in: host rows prefetched this many rows ahead */

unsigned tpu_axi_data_bits_default(unsigned n)
{
    return tpu_cfg_axi_data_bits(n); /* the one definition, tpu/config.h */
}

int tpu_axi_data_bits_ok(unsigned b)
{
    return b >= TPU_AXI_DATA_BITS_MIN && b <= TPU_AXI_DATA_BITS_MAX && (b & (b - 1u)) == 0;
}

/* internal: host address of element i of row r (32-bit AXI addresses wrap) */
static uint64_t dma_addr(const tpu_dinsn_t *d, unsigned r, unsigned i, unsigned e)
{
    return (uint32_t)(d->addr + (uint32_t)r * d->stride + (uint32_t)(i * e));
}

/* internal: the bursts of the row starting at host address a, len bytes: calls fn for each
   with its beat count */
typedef struct {
    uint64_t last[DMA_READS_OUTSTANDING]; /* burst j's last R beat / its B (ring) */
    uint64_t bursts;
    uint64_t ar;      /* cycle of the last AR / AW */
    uint64_t chan;    /* the R or W channel's last busy cycle */
    uint64_t done;
    uint64_t lat;
    uint64_t beat_bytes; /* B/8 */
    unsigned beat_shift; /* log2(B/8): B is a power of two (tpu_axi_data_bits_ok) */
    int out;
} dma_timing_t;

static void dma_burst(dma_timing_t *tm, unsigned beats)
{
    if (!tm->out) {
        uint64_t ar = tm->ar + 1u;
        if (tm->bursts >= DMA_READS_OUTSTANDING)
            ar = core_max(ar, tm->last[tm->bursts % DMA_READS_OUTSTANDING] + 1u);
        uint64_t first = core_max(ar + tm->lat, tm->chan + 1u);
        tm->ar = ar;
        tm->chan = first + beats - 1u;
        tm->last[tm->bursts % DMA_READS_OUTSTANDING] = tm->chan;
        tm->done = tm->chan;
    } else {
        /* AW one per cycle while fewer than 16 bursts await their B; the W beats go back to
           back whatever the AW (W may precede its AW); B comes latency cycles after both */
        uint64_t aw = tm->ar + 1u;
        if (tm->bursts >= DMA_READS_OUTSTANDING)
            aw = core_max(aw, tm->last[tm->bursts % DMA_READS_OUTSTANDING] + 1u);
        tm->ar = aw;
        tm->chan += beats;
        uint64_t b = core_max(tm->chan, aw) + tm->lat;
        tm->last[tm->bursts % DMA_READS_OUTSTANDING] = b;
        tm->done = core_max(tm->done, b);
    }
    tm->bursts++;
}

static void dma_row_bursts(dma_timing_t *tm, uint64_t a, uint64_t len)
{
    uint64_t bb = tm->beat_bytes;
    uint64_t beat = a & ~(bb - 1u);
    uint64_t end = a + len; /* exclusive */
    while (beat < end) {
        uint64_t page_end = (beat | (DMA_PAGE - 1u)) + 1u;
        uint64_t lim = end < page_end ? end : page_end;
        uint64_t beats = (lim - beat + bb - 1u) >> tm->beat_shift; /* / bb */
        if (beats > DMA_MAX_BEATS)
            beats = DMA_MAX_BEATS;
        dma_burst(tm, (unsigned)beats);
        beat += beats * bb;
    }
}

/* 16-bit host elements to and from 32-bit row words (the low 16 bits) */
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif
static void widen16(uint32_t *dst, const uint8_t *h, unsigned cols)
{
    unsigned i = 0;
#if defined(__x86_64__) && defined(__SSE2__)
    const __m128i z = _mm_setzero_si128();
    for (; i + 8u <= cols; i += 8u) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(h + 2u * i));
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm_unpacklo_epi16(v, z));
        _mm_storeu_si128((__m128i *)(void *)(dst + i + 4u), _mm_unpackhi_epi16(v, z));
    }
#endif
    for (; i < cols; i++) {
        uint16_t v;
        memcpy(&v, h + 2u * i, 2);
        dst[i] = v;
    }
}

static void narrow16(uint8_t *h, const uint32_t *src, unsigned cols)
{
    unsigned i = 0;
#if defined(__x86_64__) && defined(__SSE2__)
    for (; i + 8u <= cols; i += 8u) {
        /* the low halves sign-extended, then packed with signed saturation: exact */
        __m128i a = _mm_srai_epi32(_mm_slli_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + i)), 16), 16);
        __m128i b = _mm_srai_epi32(_mm_slli_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + i + 4u)), 16), 16);
        _mm_storeu_si128((__m128i *)(void *)(h + 2u * i), _mm_packs_epi32(a, b));
    }
#endif
    for (; i < cols; i++) {
        uint16_t v = (uint16_t)src[i];
        memcpy(h + 2u * i, &v, 2);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* widen16 and narrow16 on AVX-512 (the same words: the low 16 bits zero-extended, or the low
   16 bits of each word), 16 elements a vector (widen16's last cols % 16 one by one, narrow16's under a mask) */
__attribute__((target("avx512f"))) static void widen16_512(uint32_t *dst, const uint8_t *h,
                                                         unsigned cols)
{
    unsigned i = 0;
    for (; i + 16u <= cols; i += 16u)
        _mm512_storeu_si512((void *)(dst + i),
                            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(h + 2u * i))));
    for (; i < cols; i++) {
        uint16_t v;
        memcpy(&v, h + 2u * i, 2);
        dst[i] = v;
    }
}

__attribute__((target("avx512f"))) static void narrow16_512(uint8_t *h, const uint32_t *src,
                                                          unsigned cols)
{
    unsigned i = 0;
    for (; i + 16u <= cols; i += 16u)
        _mm256_storeu_si256((__m256i *)(void *)(h + 2u * i),
                            _mm512_cvtepi32_epi16(_mm512_loadu_si512((const void *)(src + i))));
    if (i < cols) {
        __mmask16 m = (__mmask16)((1u << (cols - i)) - 1u);
        _mm512_mask_cvtepi32_storeu_epi16(h + 2u * i, m, _mm512_maskz_loadu_epi32(m, src + i));
    }
}
#endif

uint64_t core_dma_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t, int *axi_err)
{
    unsigned n = c->n, e = tpu_mem_elem_bytes(d->mem);
    int out = d->opcode == TPU_OP_DMA_OUT;
    uint32_t row[256];
    dma_timing_t tm;
    memset(&tm, 0, sizeof tm);
    tm.out = out;
    tm.lat = c->axi_lat;
    tm.beat_bytes = c->cfg.axi_data_bits / 8u;
    tm.beat_shift = (unsigned)__builtin_ctzll(tm.beat_bytes);
    tm.ar = t;       /* first AR in t + 1 */
    tm.chan = t + 1u; /* reads: first R beat >= t + 2 anyway; writes: the first on-chip row
                         is read in t + 1, its first W beat goes in t + 2 */
    tm.done = t;
    *axi_err = 0;
    uint32_t pad = d->mem == TPU_MEM_UB ? 0u : d->mem == TPU_MEM_WMEM ? 0x8000u : 0x80000000u;
    /* every element of every row inside host memory, no 32-bit address wrap: the rows are
       copied without per-byte checks (the same bytes; little-endian hosts) */
    int inside = 0;
    /* AVX-512 widen16 / narrow16 with the host-float paths on an AVX-512 host (the integer
       path, TPU_MODEL_INTEGER_MX=1, and TPU_MODEL_MX_SIMD=avx2 keep the SSE2 ones) */
    int v512 = !c->integer_mx && (c->mx_simd & CORE_MX_AVX512);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (d->n > 0 && c->host_bytes <= UINT32_MAX && d->cols <= n && (e == 2u || e == 4u)) {
        uint64_t last = (uint64_t)d->addr + (uint64_t)(d->n - 1u) * d->stride +
                        (uint64_t)d->cols * e;
        inside = last <= c->host_bytes;
    }
#endif
    for (unsigned r = 0; r < d->n; r++) {
        unsigned mrow = d->row + r;
        if (inside) {
            uint8_t *h = c->host + (uint32_t)(d->addr + (uint32_t)r * d->stride);
            unsigned cols = d->cols;
            if (!out) { /* straight into the row (16-bit values, as core_write_row keeps) */
                if (r + DMA_AHEAD < d->n) { /* a later row's lines on their way from memory */
                    const uint8_t *ha = h + (uint32_t)(DMA_AHEAD * d->stride);
                    for (unsigned b = 0; b < cols * e; b += 64u)
                        __builtin_prefetch(ha + b);
                }
                uint32_t *dst = core_write_dst(c, d->mem, mrow);
                if (e == 2u) {
#if defined(__x86_64__) && defined(__GNUC__)
                    if (v512)
                        widen16_512(dst, h, cols);
                    else
#endif
                    widen16(dst, h, cols);
                } else {
                    memcpy(dst, h, 4u * cols);
                }
                for (unsigned i = cols; i < n; i++)
                    dst[i] = pad;
                core_write_done(c, d->mem, mrow);
            } else {
                const uint32_t *src = core_read_row(c, d->mem, mrow);
                if (e == 2u) {
#if defined(__x86_64__) && defined(__GNUC__)
                    if (v512)
                        narrow16_512(h, src, cols);
                    else
#endif
                    narrow16(h, src, cols);
                } else {
                    memcpy(h, src, 4u * cols);
                }
            }
        } else if (!out) {
            for (unsigned i = 0; i < n; i++) {
                uint32_t v = pad;
                if (i < d->cols) {
                    uint64_t a = dma_addr(d, r, i, e);
                    v = 0;
                    if (a + e > c->host_bytes)
                        *axi_err = 1;
                    else
                        for (unsigned b = 0; b < e; b++)
                            v |= (uint32_t)c->host[a + b] << (8u * b);
                }
                row[i] = v;
            }
            core_write_row(c, d->mem, mrow, row);
        } else {
            const uint32_t *src = core_read_row(c, d->mem, mrow);
            for (unsigned i = 0; i < d->cols; i++) {
                uint64_t a = dma_addr(d, r, i, e);
                if (a + e > c->host_bytes)
                    *axi_err = 1;
                else
                    for (unsigned b = 0; b < e; b++)
                        c->host[a + b] = (uint8_t)(src[i] >> (8u * b));
            }
        }
        dma_row_bursts(&tm, dma_addr(d, r, 0, e), (uint64_t)d->cols * e);
    }
    return tm.done;
}
