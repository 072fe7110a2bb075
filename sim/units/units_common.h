// SPDX-License-Identifier: Apache-2.0
// Shared by the unit harnesses: a seeded RNG, the command line, mismatch reporting.
#ifndef UNITS_COMMON_H
#define UNITS_COMMON_H

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace units {

// splitmix64: small, fast, good enough to spread test inputs; seeded from the command line.
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint32_t u32() { return (uint32_t)(next() >> 32); }
    uint32_t below(uint32_t n) { return (uint32_t)(((next() >> 32) * n) >> 32); }
};

struct Options {
    uint64_t seed = 1;
    uint64_t count = 4000000;  // random cases
    bool exhaustive = false;   // every input pair (bf16_mul only)
};

// --seed S, --count N, --exhaustive; exits 2 on anything else.
inline Options parse_options(int argc, char **argv, const char *usage) {
    Options o;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            o.seed = strtoull(argv[++i], nullptr, 0);
        } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            o.count = strtoull(argv[++i], nullptr, 0);
        } else if (!strcmp(argv[i], "--exhaustive")) {
            o.exhaustive = true;
        } else if (!strncmp(argv[i], "+verilator+", 11)) {
            // Verilator runtime options pass through
        } else {
            fprintf(stderr, "usage: %s\n", usage);
            exit(2);
        }
    }
    return o;
}

// Counts cases and mismatches; prints the first few mismatches in full.
struct Checker {
    const char *unit;
    uint64_t cases = 0, fails = 0;
    explicit Checker(const char *u) : unit(u) {}
    void check(uint32_t a, uint32_t b, uint32_t got, uint32_t want) {
        cases++;
        if (got != want) {
            if (++fails <= 10)
                printf("%s MISMATCH a=%08" PRIx32 " b=%08" PRIx32 " rtl=%08" PRIx32
                       " model=%08" PRIx32 "\n",
                       unit, a, b, got, want);
        }
    }
    int finish() const {
        printf("%s: %" PRIu64 " cases, %" PRIu64 " mismatches: %s\n", unit, cases, fails,
               fails ? "FAIL" : "PASS");
        return fails ? 1 : 0;
    }
};

}  // namespace units

#endif
