// SPDX-License-Identifier: Apache-2.0
// Bit fields of SystemC port values for the board co-simulation (sim/board_tb.cpp).
// `verilator --sc` gives a port of 1 bit the type bool, of 2..32 bits uint32_t, of 33..64 bits
// uint64_t and of more sc_bv<W>. A Bits is a value of any of them as 32-bit words (bit 0 of
// word 0 first), so that the harness reads and writes fields (one core's slice of a packed
// array, a lane of a row) the same way whatever the port's type.
#ifndef TPU_SIM_BOARD_BITS_H
#define TPU_SIM_BOARD_BITS_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include <systemc.h>

namespace board {

struct Bits {
    static constexpr unsigned kMaxWords = 256; // 8192 bits
    uint32_t w[kMaxWords];
    unsigned nw = 0;

    void clear(unsigned bits)
    {
        nw = (bits + 31) / 32;
        if (nw > kMaxWords) {
            std::fprintf(stderr, "board_tb: internal error: a %u-bit port\n", bits);
            std::exit(2);
        }
        for (unsigned i = 0; i < nw; i++)
            w[i] = 0;
    }
    // bits [lsb, lsb + width), width <= 64
    uint64_t get(unsigned lsb, unsigned width) const
    {
        uint64_t v = 0;
        for (unsigned k = 0; k < width;) {
            const unsigned b = lsb + k, word = b / 32, sh = b % 32;
            const unsigned take = (32 - sh < width - k) ? 32 - sh : width - k;
            const uint64_t part =
                word < nw ? (static_cast<uint64_t>(w[word]) >> sh) &
                                ((take >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << take) - 1))
                          : 0;
            v |= part << k;
            k += take;
        }
        return v;
    }
    void set(unsigned lsb, unsigned width, uint64_t v)
    {
        for (unsigned k = 0; k < width;) {
            const unsigned b = lsb + k, word = b / 32, sh = b % 32;
            const unsigned take = (32 - sh < width - k) ? 32 - sh : width - k;
            const uint32_t mask =
                static_cast<uint32_t>(((take >= 32) ? 0xFFFFFFFFu : ((1u << take) - 1u)) << sh);
            if (word < nw)
                w[word] = (w[word] & ~mask) |
                          (static_cast<uint32_t>((v >> k) << sh) & mask);
            k += take;
        }
    }
};

// The width of a port value type.
template <typename T> struct Width;
template <> struct Width<bool> { static constexpr unsigned value = 1; };
template <> struct Width<uint32_t> { static constexpr unsigned value = 32; };
template <> struct Width<uint64_t> { static constexpr unsigned value = 64; };
template <int W> struct Width<sc_dt::sc_bv<W>> { static constexpr unsigned value = W; };

inline void to_bits(bool v, Bits *b)
{
    b->clear(1);
    b->w[0] = v ? 1u : 0u;
}
inline void to_bits(uint32_t v, Bits *b)
{
    b->clear(32);
    b->w[0] = v;
}
inline void to_bits(uint64_t v, Bits *b)
{
    b->clear(64);
    b->w[0] = static_cast<uint32_t>(v);
    b->w[1] = static_cast<uint32_t>(v >> 32);
}
template <int W> void to_bits(const sc_dt::sc_bv<W> &v, Bits *b)
{
    b->clear(W);
    for (unsigned i = 0; i < b->nw; i++)
        b->w[i] = static_cast<uint32_t>(v.get_word(static_cast<int>(i)));
}

inline void from_bits(const Bits &b, bool *v) { *v = (b.w[0] & 1u) != 0; }
inline void from_bits(const Bits &b, uint32_t *v) { *v = b.w[0]; }
inline void from_bits(const Bits &b, uint64_t *v)
{
    *v = b.w[0] | static_cast<uint64_t>(b.nw > 1 ? b.w[1] : 0) << 32;
}
template <int W> void from_bits(const Bits &b, sc_dt::sc_bv<W> *v)
{
    for (unsigned i = 0; i < (W + 31) / 32; i++)
        v->set_word(static_cast<int>(i), i < b.nw ? b.w[i] : 0);
}

// A whole port value as an integer (ports of at most 64 bits).
inline uint64_t as_u64(bool v) { return v ? 1 : 0; }
inline uint64_t as_u64(uint32_t v) { return v; }
inline uint64_t as_u64(uint64_t v) { return v; }
template <int W> uint64_t as_u64(const sc_dt::sc_bv<W> &v)
{
    uint64_t r = static_cast<uint32_t>(v.get_word(0));
    if (W > 32)
        r |= static_cast<uint64_t>(static_cast<uint32_t>(v.get_word(1))) << 32;
    return r;
}
inline void from_u64(uint64_t x, bool *v) { *v = (x & 1) != 0; }
inline void from_u64(uint64_t x, uint32_t *v) { *v = static_cast<uint32_t>(x); }
inline void from_u64(uint64_t x, uint64_t *v) { *v = x; }
template <int W> void from_u64(uint64_t x, sc_dt::sc_bv<W> *v)
{
    *v = 0;
    v->set_word(0, static_cast<uint32_t>(x));
    if (W > 32)
        v->set_word(1, static_cast<uint32_t>(x >> 32));
}

} // namespace board

// The value type of a verilated SystemC port member (sc_in<T> / sc_out<T>).
#define BOARD_PORT_T(cls, port)                                                              \
    std::remove_reference<decltype(std::declval<cls &>().port)>::type::data_type

#endif
