#pragma once
// A seeded generator that gives the same sequence on every platform (splitmix64), and the length of
// long randomized runs (shorter under the sanitizers).
#include <cstddef>
#include <cstdint>

#include "support/build_kind.hpp"

namespace strata::test {

/// splitmix64: small, seeded, identical everywhere.
struct test_rng {
    std::uint64_t state;
    std::uint64_t next() noexcept {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    /// Returns: a value in [lo, hi].
    std::size_t between(std::size_t lo, std::size_t hi) noexcept { return lo + next() % (hi - lo + 1); }
};

/// Operations for randomized runs: ≥ 1,000,000 in release and debug; the sanitizers run a fifth
/// (they are ~10x slower per op and the fuzz targets cover the same code paths at depth).
inline constexpr std::size_t long_run_ops = sanitized ? 200'000 : 1'000'000;

} // namespace strata::test
