// SPDX-License-Identifier: Apache-2.0
// The generated one-stage tpu_pe against the C model: psum_o = fp32_add(psum_i,
// bf16_mul(act_i, w)) for random vectors biased to the hard cases (exponent differences
// -30..30 from the product's, cancellation, zeros, subnormals, Inf, NaN, exponents near 0
// and 255). Each vector: load the weight into a bank (one cycle), then the activation on
// that bank (one cycle), then compare psum_o with the model, raw bits.
//   pe_mac_tb [VECTORS [SEED]]
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include "Vtpu_pe.h"
extern "C" {
#include "tpu/numerics.h"
}
static uint64_t s = 0x9E3779B97F4A7C15ull;
static inline uint64_t rnd() { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }
static uint16_t rbf16(uint64_t r) {
  uint16_t v = (uint16_t)r;
  switch ((r >> 16) & 31) {
    case 0: return (uint16_t)((v & 0x8000) | 0x0000);                 // zero
    case 1: return (uint16_t)((v & 0x807F));                          // subnormal / zero
    case 2: return (uint16_t)((v & 0x8000) | 0x7F80);                 // Inf
    case 3: return (uint16_t)((v & 0x807F) | 0x7F80 | 1);             // NaN
    case 4: return (uint16_t)((v & 0x807F) | (0x3F80 + (((r >> 24) & 15) << 7)));  // near 1
    case 5: return (uint16_t)((v & 0x807F) | (((r >> 24) & 3) << 7)); // exponent 0..3
    case 6: return (uint16_t)((v & 0x807F) | ((0xFC + ((r >> 24) & 3)) << 7) & 0xFFFF); // exponent 252..255
    default: return v;
  }
}
int main(int argc, char **argv) {
  uint64_t n = argc > 1 ? strtoull(argv[1], 0, 0) : 100000000ull;
  if (argc > 2) s = strtoull(argv[2], 0, 0);
  Vtpu_pe m;
  m.clk_i = 0;
  m.eval();
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = rnd(), r2 = rnd();
    bf16_t a = {rbf16(r)}, w = {rbf16(r >> 32)};
    fp32_t p = bf16_mul(a, w);
    uint32_t acc;
    unsigned mode = r2 & 15;
    uint32_t pe = (p.v >> 23) & 0xFF;
    if (mode < 6) {  // exponent difference -30..30 from the product's
      int e = (int)pe + (int)((r2 >> 8) % 61) - 30;
      if (e < 0) e = 0; if (e > 255) e = 255;
      acc = (uint32_t)(r2 >> 32) & 0x807FFFFFu; acc |= (uint32_t)e << 23;
    } else if (mode < 10) {  // cancellation: the product +- a few ulps, either sign
      int32_t k = (int32_t)((r2 >> 8) & 0xFFF) - 0x800;
      if (mode & 1) k >>= 6;
      acc = (uint32_t)((int32_t)(p.v & 0x7FFFFFFFu) + k) | (((r2 >> 40) & 1) << 31);
      if (r2 & (1ull << 41)) acc = (acc & 0x7FFFFFFFu) | ((p.v ^ 0x80000000u) & 0x80000000u);
    } else if (mode < 11) {  // specials / zeros / subnormals
      uint32_t c = (uint32_t)(r2 >> 8) & 7;
      uint32_t sg = (uint32_t)(r2 >> 12) << 31;
      acc = c == 0 ? sg : c == 1 ? (sg | ((uint32_t)(r2 >> 20) & 0x7FFFFF)) : c == 2 ? (sg | 0x7F800000u)
          : c == 3 ? (sg | 0x7F800000u | 1 | ((uint32_t)(r2 >> 20) & 0x7FFFFF)) : c == 4 ? (sg | 0x00800000u | ((uint32_t)(r2 >> 20) & 0x7FFFFF))
          : c == 5 ? (sg | 0x7F7FFFFFu) : (uint32_t)(r2 >> 24);
    } else {
      acc = (uint32_t)(r2 >> 32);
    }
    const unsigned bank = (unsigned)(r2 >> 63);
    // the weight comes from above or (a transposed load) from the left; the other input and
    // the other bank's carry a different value
    const unsigned tr = (unsigned)(r2 >> 62) & 1u;
    const uint16_t other = (uint16_t)~w.v;
    m.wl_valid_i = 1; m.wl_bank_i = bank; m.wl_transpose_i = tr;
    m.wl0_i = (!bank && !tr) ? w.v : other; m.wl1_i = (bank && !tr) ? w.v : other;
    m.wl0_left_i = (!bank && tr) ? w.v : other; m.wl1_left_i = (bank && tr) ? w.v : other;
    m.act_valid_i = 0; m.act_bank_i = !bank; m.act_i = 0; m.psum_i = 0;
    m.clk_i = 1; m.eval(); m.clk_i = 0; m.eval();
    m.wl_valid_i = 0; m.act_valid_i = 1; m.act_bank_i = bank; m.act_i = a.v; m.psum_i = acc;
    m.clk_i = 1; m.eval(); m.clk_i = 0; m.eval();
    fp32_t ref = fp32_add((fp32_t){acc}, p);
    if (m.psum_o != ref.v) {
      if (bad < 10) fprintf(stderr, "mismatch: acc %08x act %04x w %04x: rtl %08x model %08x\n", acc, a.v, w.v, (unsigned)m.psum_o, ref.v);
      bad++;
    }
  }
  printf("pe_mac_tb: %llu vectors, %llu mismatches\n", (unsigned long long)n, (unsigned long long)bad);
  return bad != 0;
}
