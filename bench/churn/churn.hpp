#pragma once
// strata-churn: the free+allocate churn workloads (W1, W2, W3, and W4 on request) as op workloads
// (tools/lab/core/ops.hpp generates W1-W3; W4 is this bench's own), their pair view, and the latency
// tails the tables print. The contenders are the lab's (op_registry()) plus bench_contenders.hpp's.
//
// A churn workload is a live set (allocated first, untimed) and a sequence of pairs: free the
// block of a random victim, then allocate a new block in its place. Every request asks for
// alignment 16, as malloc's callers get.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ops.hpp"   // tools/lab: the generators
#include "timer.hpp" // tools/lab: calibration

namespace strata::churn {

using lab::op_workload;
using lab::splitmix64;

inline constexpr std::uint64_t default_seed = 0x5717a7a5eedull;
inline constexpr std::size_t default_pairs = 1'000'000;

/// W4: 256 live blocks, sizes log-uniform in [64 KiB, 512 KiB]: above every size class, so a
/// general heap's medium tier (engine_heap's TLSF arenas) serves each call (docs/engine.md).
[[nodiscard]] inline op_workload make_w4(std::size_t pairs, std::uint64_t seed) {
    return lab::gen::churn("w4", "medium: 256 live, sizes log-uniform 64-512 KiB", 256, pairs, seed,
                           [](splitmix64& r) {
                               const double u = static_cast<double>(r.next() >> 11) * 0x1.0p-53;
                               return std::clamp<std::uint64_t>(
                                   static_cast<std::uint64_t>(65536.0 * std::exp2(3.0 * u)), 65537, 524288);
                           });
}

/// Returns: the workload called `name` ("w1", "w2", "w3", "w4") with `pairs` pairs, as ops (what
/// the lab's contenders replay). Throws: std::invalid_argument otherwise.
[[nodiscard]] inline op_workload make_op_workload(std::string_view name, std::size_t pairs = default_pairs,
                                                  std::uint64_t seed = default_seed) {
    // The generators take a scale of 1,000,000 pairs; the half pair keeps the count exact.
    const double scale = (static_cast<double>(pairs) + 0.5) / 1e6;
    if (name == "w1") return lab::gen::w1(scale, seed);
    if (name == "w2") return lab::gen::w2(scale, seed);
    if (name == "w3") return lab::gen::w3(scale, seed);
    if (name == "w4") return make_w4(pairs, seed);
    throw std::invalid_argument("strata-churn: unknown workload '" + std::string(name) +
                                "' (w1, w2, w3, w4)");
}

/// One step of the churn: free slot `victim`, then allocate `size` bytes into it.
struct pair_op {
    std::uint32_t victim;
    std::uint32_t size;
};

/// A churn workload as its live set and pairs, for the loops that run the pairs themselves (the
/// heap suite of strata_bench_heap, strata-device-bench's native-handle contenders,
/// strata-malloc-faults). The op workload's slots are recycled newest first, so each pair's
/// allocation takes the slot its free released.
struct workload {
    std::string name; ///< "w1", "w2", "w3", "w4"
    std::string description;
    std::vector<std::uint32_t> initial; ///< sizes of the live set, slot i gets initial[i]
    std::vector<pair_op> pairs;
    std::uint32_t min_size = 0;      ///< smallest size anywhere in the sequence (the op workload's)
    std::uint32_t max_size = 0;      ///< largest size anywhere in the sequence
    std::size_t peak_live_bytes = 0; ///< most requested bytes live at once (the op workload's)
    static constexpr std::size_t alignment = alignof(std::max_align_t);

    [[nodiscard]] std::size_t live() const noexcept { return initial.size(); }
    [[nodiscard]] bool fixed_size() const noexcept { return min_size == max_size; }
};

/// Returns: the pair view of `w`, a workload made by make_op_workload.
[[nodiscard]] inline workload pairs_of(const op_workload& w) {
    workload v;
    v.name = w.name;
    v.description = w.description;
    v.min_size = static_cast<std::uint32_t>(w.min_size);
    v.max_size = static_cast<std::uint32_t>(w.max_size);
    v.peak_live_bytes = w.peak_live_bytes;
    std::size_t i = 0;
    while (i < w.ops.size() && w.ops[i].kind == lab::op_kind::allocate)
        v.initial.push_back(static_cast<std::uint32_t>(w.ops[i++].size));
    // Pairs until the drain (frees only) begins.
    for (; i + 1 < w.ops.size() && w.ops[i].kind == lab::op_kind::free &&
           w.ops[i + 1].kind == lab::op_kind::allocate;
         i += 2)
        v.pairs.push_back({w.ops[i].slot, static_cast<std::uint32_t>(w.ops[i + 1].size)});
    return v;
}

/// Returns: the workload called `name` as its live set and pairs. Throws: as make_op_workload.
[[nodiscard]] inline workload make_workload(std::string_view name, std::size_t pairs = default_pairs,
                                            std::uint64_t seed = default_seed) {
    return pairs_of(make_op_workload(name, pairs, seed));
}
[[nodiscard]] inline workload make_w1(std::size_t pairs = default_pairs) {
    return make_workload("w1", pairs);
}
[[nodiscard]] inline workload make_w2(std::size_t pairs = default_pairs) {
    return make_workload("w2", pairs);
}

/// What a pass of a pair loop found wrong (an allocation failure or a failed check()).
struct pass_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Latency tails of one run, in ns net of the timer.
struct tail {
    double p50 = 0, p99 = 0, p999 = 0, p9999 = 0, max = 0;
};

/// Returns: the tails of `ticks` (per-call timer ticks).
inline tail percentiles(std::vector<std::uint32_t> ticks, const lab::calibration& cal) {
    tail t;
    if (ticks.empty()) return t;
    std::sort(ticks.begin(), ticks.end());
    auto at = [&](double q) {
        const auto i = static_cast<std::size_t>(q * static_cast<double>(ticks.size() - 1));
        return cal.net_ns(ticks[i]);
    };
    t.p50 = at(0.50);
    t.p99 = at(0.99);
    t.p999 = at(0.999);
    t.p9999 = at(0.9999);
    t.max = cal.net_ns(ticks.back());
    return t;
}

/// Returns: the non-empty comma-separated items of `s` (command-line lists).
inline std::vector<std::string> split_list(std::string_view s) {
    std::vector<std::string> out;
    while (!s.empty()) {
        const std::size_t comma = s.find(',');
        const std::string_view item = s.substr(0, comma);
        if (!item.empty()) out.emplace_back(item);
        s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    }
    return out;
}

} // namespace strata::churn
