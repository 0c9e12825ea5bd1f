#pragma once
// strata-churn: the free+allocate churn workloads (W1, W2, W3) and the contender registry.
//
// A workload is a live set (`initial`, allocated first, untimed) and a sequence of pairs: free the
// block in slot `victim`, then allocate `size` bytes into that slot. Every contender serves the
// identical sequence (seeded splitmix64, generated before any allocator exists).
//
//   W1 random small: 10,000 live, sizes uniform in [16, 256]
//   W2 mixed:         2,000 live, sizes log-uniform in [16, 65536]
//   W3 fixed:        10,000 live, every size 96
//
// A contender is an adapter class registered with STRATA_CHURN_CONTENDER (one line, in any
// bench/churn/contenders_*.cpp):
//
//   struct my_adapter {
//       static bool accepts(const strata::churn::workload& w);   // false: skipped for w (e.g. a
//                                                                // pool given W1's mixed sizes)
//       explicit my_adapter(const strata::churn::workload& w);   // fresh allocator sized from w
//       void* allocate(std::size_t size) noexcept;               // nullptr = failure (reported)
//       void deallocate(void* p, std::size_t size) noexcept;     // size = the size allocated
//       bool check() noexcept;                                   // consistency walk; true = fine
//   };
//   STRATA_CHURN_CONTENDER(my_adapter, "name", "one-line description");
//
// Alignment: every request wants alignof(std::max_align_t) (16), as malloc's callers get.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "timer.hpp"    // tools/lab: tick_begin/tick_end, calibrate
#include "workload.hpp" // tools/lab: splitmix64

namespace strata::churn {

using lab::splitmix64;

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

/// One step of the churn: free slot `victim`, then allocate `size` bytes into it.
struct pair_op {
    std::uint32_t victim;
    std::uint32_t size;
};

/// A seeded churn sequence.
struct workload {
    std::string name; ///< "w1", "w2", "w3", "w4"
    std::string description;
    std::vector<std::uint32_t> initial; ///< sizes of the live set, slot i gets initial[i]
    std::vector<pair_op> pairs;
    std::uint32_t min_size = 0;      ///< smallest size anywhere in the sequence
    std::uint32_t max_size = 0;      ///< largest size anywhere in the sequence
    std::size_t peak_live_bytes = 0; ///< most requested bytes live at once (sum of sizes)
    static constexpr std::size_t alignment = alignof(std::max_align_t);

    [[nodiscard]] std::size_t live() const noexcept { return initial.size(); }
    [[nodiscard]] bool fixed_size() const noexcept { return min_size == max_size; }
};

namespace detail {
template <class Draw>
workload generate(std::string name, std::string description, std::uint32_t live, std::size_t pairs,
                  std::uint64_t seed, Draw draw) {
    workload w;
    w.name = std::move(name);
    w.description = std::move(description);
    splitmix64 rng(seed);
    w.initial.resize(live);
    std::vector<std::uint32_t> current(live);
    std::size_t bytes = 0;
    w.min_size = UINT32_MAX;
    for (std::uint32_t i = 0; i < live; ++i) {
        const std::uint32_t s = draw(rng);
        w.initial[i] = current[i] = s;
        bytes += s;
        w.min_size = std::min(w.min_size, s);
        w.max_size = std::max(w.max_size, s);
    }
    w.peak_live_bytes = bytes;
    w.pairs.resize(pairs);
    for (auto& op : w.pairs) {
        op.victim = static_cast<std::uint32_t>(rng.next() % live);
        op.size = draw(rng);
        bytes = bytes - current[op.victim] + op.size;
        current[op.victim] = op.size;
        w.peak_live_bytes = std::max(w.peak_live_bytes, bytes);
        w.min_size = std::min(w.min_size, op.size);
        w.max_size = std::max(w.max_size, op.size);
    }
    return w;
}
} // namespace detail

inline constexpr std::uint64_t default_seed = 0x5717a7a5eedull;
inline constexpr std::size_t default_pairs = 1'000'000;

namespace detail {
/// Returns: lo * 2^(octaves * u) for u uniform in [0, 1) (53 random bits), clamped to [min, max]:
/// as many sizes in each doubling as in any other.
inline std::uint32_t log_uniform(splitmix64& r, double lo, double octaves, std::uint32_t min,
                                 std::uint32_t max) noexcept {
    const double u = static_cast<double>(r.next() >> 11) * 0x1.0p-53;
    return std::clamp(static_cast<std::uint32_t>(lo * std::exp2(octaves * u)), min, max);
}
} // namespace detail

/// W1: 10,000 live blocks, sizes uniform in [16, 256].
[[nodiscard]] inline workload make_w1(std::size_t pairs = default_pairs, std::uint64_t seed = default_seed) {
    return detail::generate("w1", "random small: 10,000 live, sizes uniform 16-256 B", 10'000, pairs, seed,
                            [](splitmix64& r) { return static_cast<std::uint32_t>(r.between(16, 256)); });
}

/// W2: 2,000 live blocks, sizes log-uniform in [16, 65536] (as many 16-32 B requests as 32-64 KiB).
[[nodiscard]] inline workload make_w2(std::size_t pairs = default_pairs, std::uint64_t seed = default_seed) {
    return detail::generate("w2", "mixed: 2,000 live, sizes log-uniform 16 B-64 KiB", 2'000, pairs, seed,
                            [](splitmix64& r) { return detail::log_uniform(r, 16.0, 12.0, 16u, 65536u); });
}

/// W3: 10,000 live blocks, every size 96 (a particle).
[[nodiscard]] inline workload make_w3(std::size_t pairs = default_pairs, std::uint64_t seed = default_seed) {
    return detail::generate("w3", "fixed: 10,000 live, every block 96 B", 10'000, pairs, seed,
                            [](splitmix64&) { return 96u; });
}

/// W4: 256 live blocks, sizes log-uniform in [64 KiB, 512 KiB]: above every size class, so a
/// general heap's medium tier (engine_heap's TLSF arenas) serves each call. Not in the set:
/// it exists to measure that tier (docs/engine.md).
[[nodiscard]] inline workload make_w4(std::size_t pairs = default_pairs, std::uint64_t seed = default_seed) {
    return detail::generate(
        "w4", "medium: 256 live, sizes log-uniform 64-512 KiB", 256, pairs, seed,
        [](splitmix64& r) { return detail::log_uniform(r, 65536.0, 3.0, 65537u, 524288u); });
}

/// Returns: the workload called `name` ("w1", "w2", "w3", "w4"). Throws: std::invalid_argument otherwise.
[[nodiscard]] inline workload make_workload(std::string_view name, std::size_t pairs = default_pairs,
                                            std::uint64_t seed = default_seed) {
    if (name == "w1") return make_w1(pairs, seed);
    if (name == "w2") return make_w2(pairs, seed);
    if (name == "w3") return make_w3(pairs, seed);
    if (name == "w4") return make_w4(pairs, seed);
    throw std::invalid_argument("strata-churn: unknown workload '" + std::string(name) +
                                "' (w1, w2, w3, w4)");
}

// ---------------------------------------------------------------------------------------------
// Passes. Each pass: allocate the live set (untimed), run every pair, free everything (untimed).
// The same allocator instance runs every pass, so pass 0 (a warm-up) pre-faults its memory.
// ---------------------------------------------------------------------------------------------

/// What a pass found wrong (an allocation failure or a failed check()).
struct pass_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

namespace detail {
inline void touch(void* p, std::uint32_t i) noexcept {
    static_cast<unsigned char*>(p)[0] = static_cast<unsigned char>(i);
}

template <class A>
void fill(A& a, const workload& w, std::vector<void*>& slots) {
    slots.assign(w.live(), nullptr);
    for (std::uint32_t i = 0; i < w.live(); ++i) {
        slots[i] = a.allocate(w.initial[i]);
        if (slots[i] == nullptr) throw pass_error("allocation of the live set failed");
        touch(slots[i], i);
    }
}

template <class A>
void drain(A& a, const workload& w, std::vector<void*>& slots, std::vector<std::uint32_t>& sizes) {
    for (std::uint32_t i = 0; i < w.live(); ++i)
        a.deallocate(slots[i], sizes[i]);
    if (!a.check()) throw pass_error("check() failed after the pass");
}
} // namespace detail

/// Runs the pairs without per-call timers. Returns: seconds the pair loop took.
template <class A>
[[gnu::noinline]] double throughput_pass(A& a, const workload& w) {
    std::vector<void*> slots;
    std::vector<std::uint32_t> sizes(w.initial);
    detail::fill(a, w, slots);
    void** s = slots.data();
    std::uint32_t* sz = sizes.data();
    std::size_t failures = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint32_t i = 0; i < w.pairs.size(); ++i) {
        const pair_op op = w.pairs[i];
        a.deallocate(s[op.victim], sz[op.victim]);
        void* p = a.allocate(op.size);
        failures += p == nullptr;
        if (p != nullptr) detail::touch(p, i);
        s[op.victim] = p;
        sz[op.victim] = op.size;
        lab::do_not_optimize(p);
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (failures != 0) throw pass_error(std::to_string(failures) + " allocations failed in the pair loop");
    detail::drain(a, w, slots, sizes);
    return std::chrono::duration<double>(t1 - t0).count();
}

/// Runs the pairs timing every call. Effects: alloc_ticks[i] / free_ticks[i] = min(themselves, the
/// raw ticks of pair i's allocate / deallocate this pass), so calling it K times over the same
/// arrays leaves the per-operation minimum of K runs (the "filtered" tail).
template <class A>
[[gnu::noinline]] void latency_pass(A& a, const workload& w, std::uint32_t* alloc_ticks,
                                    std::uint32_t* free_ticks) {
    std::vector<void*> slots;
    std::vector<std::uint32_t> sizes(w.initial);
    detail::fill(a, w, slots);
    std::size_t failures = 0;
    for (std::uint32_t i = 0; i < w.pairs.size(); ++i) {
        const pair_op op = w.pairs[i];
        void* victim = slots[op.victim];
        const std::uint64_t f0 = lab::tick_begin();
        a.deallocate(victim, sizes[op.victim]);
        const std::uint64_t f1 = lab::tick_end();
        void* p = a.allocate(op.size);
        lab::do_not_optimize(p);
        const std::uint64_t a1 = lab::tick_end();
        failures += p == nullptr;
        if (p != nullptr) detail::touch(p, i);
        slots[op.victim] = p;
        sizes[op.victim] = op.size;
        const auto ft = static_cast<std::uint32_t>(std::min<std::uint64_t>(f1 - f0, UINT32_MAX));
        const auto at = static_cast<std::uint32_t>(std::min<std::uint64_t>(a1 - f1, UINT32_MAX));
        free_ticks[i] = std::min(free_ticks[i], ft);
        alloc_ticks[i] = std::min(alloc_ticks[i], at);
    }
    if (failures != 0) throw pass_error(std::to_string(failures) + " allocations failed in the pair loop");
    detail::drain(a, w, slots, sizes);
}

// ---------------------------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------------------------

/// One contender, type-erased: everything it runs is instantiated for its adapter.
struct contender {
    std::string name;
    std::string description;
    bool (*accepts)(const workload&) = nullptr;
    /// Runs `warmup` untimed-style throughput passes, then `repeats` timed ones (seconds each),
    /// then `latency_runs` latency passes into the two tick arrays (pre-filled with UINT32_MAX).
    /// `after_latency_run(k)` is called after latency pass k (0-based), e.g. to keep the unfiltered
    /// tail of pass 0.
    std::function<void(const workload&, int warmup, int repeats, int latency_runs,
                       std::vector<double>& seconds, std::vector<std::uint32_t>& alloc_ticks,
                       std::vector<std::uint32_t>& free_ticks,
                       const std::function<void(int)>& after_latency_run)>
        run;
};

[[nodiscard]] inline std::vector<contender>& registry() {
    static std::vector<contender> r;
    return r;
}

template <class A>
bool register_contender(const char* name, const char* description) {
    contender c;
    c.name = name;
    c.description = description;
    c.accepts = &A::accepts;
    c.run = [](const workload& w, int warmup, int repeats, int latency_runs, std::vector<double>& seconds,
               std::vector<std::uint32_t>& alloc_ticks, std::vector<std::uint32_t>& free_ticks,
               const std::function<void(int)>& after_latency_run) {
        auto a = std::make_unique<A>(w);
        for (int i = 0; i < warmup; ++i)
            (void)throughput_pass(*a, w);
        for (int i = 0; i < repeats; ++i)
            seconds.push_back(throughput_pass(*a, w));
        alloc_ticks.assign(w.pairs.size(), UINT32_MAX);
        free_ticks.assign(w.pairs.size(), UINT32_MAX);
        for (int i = 0; i < latency_runs; ++i) {
            latency_pass(*a, w, alloc_ticks.data(), free_ticks.data());
            if (after_latency_run) after_latency_run(i);
        }
    };
    registry().push_back(std::move(c));
    return true;
}

} // namespace strata::churn

#define STRATA_CHURN_CAT2(a, b) a##b
#define STRATA_CHURN_CAT(a, b) STRATA_CHURN_CAT2(a, b)
/// Registers adapter `A` under `name` at static-initialisation time.
#define STRATA_CHURN_CONTENDER(A, name, description)                                                         \
    [[maybe_unused]] static const bool STRATA_CHURN_CAT(strata_churn_registered_, __LINE__) =                \
        ::strata::churn::register_contender<A>(name, description)
