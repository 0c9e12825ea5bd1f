#pragma once
// strata-lab metrics: percentiles of latency samples.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace strata::lab {

/// Returns: the q-th percentile (0 < q <= 100) of `sorted` (ascending) by the nearest-rank method:
/// the smallest sample such that at least q percent of the samples are <= it, i.e. the sample at
/// 1-based rank ceil(q/100 * n). 0 for an empty span. q <= 0 gives the minimum.
/// Examples: {1..100}: p50 = 50, p99 = 99, p99.9 = 100; {1..1000}: p99.9 = 999.
template <class T>
[[nodiscard]] T percentile_sorted(std::span<const T> sorted, double q) noexcept {
    if (sorted.empty()) return T{};
    if (q <= 0) return sorted.front();
    if (q >= 100) return sorted.back();
    // Ranks are computed in integer billionths of a percent, so that 99.9 * n / 100 is exact where
    // the double product is not (99.9 / 100 * 1000 = 999.0000000000001), while the tail's points
    // 100 (1 - 10^-k) keep their digits (thousandths made every k >= 5.5 the maximum).
    const auto q_nano = static_cast<std::uint64_t>(std::llround(q * 1e9));
    __extension__ using wide = unsigned __int128; // q_nano * n passes 2^64 from 2^27 samples on
    const wide num = static_cast<wide>(q_nano) * sorted.size();
    constexpr std::uint64_t whole = 100'000'000'000;                   // 100 percent in billionths
    auto rank = static_cast<std::uint64_t>((num + whole - 1) / whole); // ceil(q/100 * n), 1-based
    rank = std::clamp<std::uint64_t>(rank, 1, sorted.size());
    return sorted[static_cast<std::size_t>(rank - 1)];
}

} // namespace strata::lab
