// SPDX-License-Identifier: Apache-2.0
// Field access on verilated ports, shared by the co-simulation harnesses.
// Verilator maps a port to C/S/I/QData (<= 64 bits) or VlWide<W>; fields are 16 or 32 bits at
// a multiple of their width, so none crosses a 32-bit word.
#ifndef TPU_SIM_VL_PORTS_H
#define TPU_SIM_VL_PORTS_H

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <verilated.h>

template <typename T>
typename std::enable_if<std::is_integral<T>::value>::type put_field(T &port, unsigned lsb,
                                                                    unsigned width, uint32_t v)
{
    const uint64_t mask = ((width >= 64) ? ~UINT64_C(0) : ((UINT64_C(1) << width) - 1)) << lsb;
    uint64_t p = static_cast<uint64_t>(port);
    p = (p & ~mask) | ((static_cast<uint64_t>(v) << lsb) & mask);
    port = static_cast<T>(p);
}
template <std::size_t W>
void put_field(VlWide<W> &port, unsigned lsb, unsigned width, uint32_t v)
{
    const unsigned word = lsb / 32, sh = lsb % 32;
    const uint32_t mask = width >= 32 ? 0xFFFFFFFFu : ((1u << width) - 1u);
    port[word] = (port[word] & ~(mask << sh)) | ((v & mask) << sh);
}
template <typename T>
typename std::enable_if<std::is_integral<T>::value, uint32_t>::type get_field(const T &port,
                                                                              unsigned lsb,
                                                                              unsigned width)
{
    const uint64_t mask = (width >= 64) ? ~UINT64_C(0) : ((UINT64_C(1) << width) - 1);
    return static_cast<uint32_t>((static_cast<uint64_t>(port) >> lsb) & mask);
}
template <std::size_t W>
uint32_t get_field(const VlWide<W> &port, unsigned lsb, unsigned width)
{
    const unsigned word = lsb / 32, sh = lsb % 32;
    const uint32_t mask = width >= 32 ? 0xFFFFFFFFu : ((1u << width) - 1u);
    return (const_cast<VlWide<W> &>(port)[word] >> sh) & mask;
}

#endif
