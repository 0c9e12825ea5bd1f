#pragma once
// strata-lab random numbers: splitmix64, the one generator every synthetic workload draws from.
#include <cstdint>

namespace strata::lab {

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and fully specified, so a seed gives the same
/// workload with every compiler and standard library (std::uniform_int_distribution does not).
class splitmix64 {
public:
    explicit constexpr splitmix64(std::uint64_t seed) noexcept : state_(seed) {}

    constexpr std::uint64_t next() noexcept {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

    /// Returns: a value in [lo, hi] (inclusive). Requires: lo <= hi. The modulo bias is below
    /// 2^-40 for the ranges the lab uses.
    constexpr std::uint64_t between(std::uint64_t lo, std::uint64_t hi) noexcept {
        return lo + next() % (hi - lo + 1);
    }

    /// Returns: a value in [0, 100), for percentage draws.
    constexpr unsigned percent() noexcept { return static_cast<unsigned>(next() % 100); }

private:
    std::uint64_t state_;
};

} // namespace strata::lab
