// The latency tail: the same requests (16 B-1 KiB) timed one call at a time in glibc malloc, the
// peers this build has (mimalloc, jemalloc, tcmalloc: peer_contenders.hpp), strata's engine heap,
// TLSF over a buffer and the arena; per allocator a log-binned histogram, a percentile curve dense
// in the tail, and its percentiles. Every buffer is mapped for the run and unmapped after.
// Exports make_latency_demo.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <numeric>
#include <span>
#include <string>

#include "strata/engine/engine_heap.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/linear/arena.hpp"

#include "measure.hpp"
#include "peer_contenders.hpp"
#include "rng.hpp"
#include "timer.hpp"

namespace strata::lab::serve {
namespace {

inline constexpr std::size_t held_blocks = 256;         // live at once, then freed untimed: a frame's worth
inline constexpr std::size_t warmup_calls = 4096;       // untimed first: every allocator measured warm
inline constexpr int bins_per_decade = 10, decades = 7; // histogram: 1 ns .. 10 ms, log-spaced
inline constexpr std::size_t curve_points = 200;        // the percentile curve
inline constexpr std::size_t align = 16;                // malloc's own: every allocator's plain path
inline constexpr std::size_t buffer_bytes = std::size_t{1} << 20; // TLSF's and the arena's

/// The timer, calibrated once: ticks per ns and its own cost (the least empty measurement), which
/// is subtracted from every sample.
struct clock_cal {
    double ticks_per_ns;
    std::uint64_t overhead;
};
const clock_cal& clock() {
    static const clock_cal c = [] {
        const calibration cal = calibrate(std::chrono::milliseconds(20), 1000);
        return clock_cal{cal.ghz(), static_cast<std::uint64_t>(cal.overhead_min_ticks)};
    }();
    return c;
}

/// Times `sizes.size()` calls of a.allocate(size) into `ns`, after an untimed warm-up; every
/// `held_blocks` calls the blocks are handed back untimed (a.release(blocks, sizes)).
template <class A>
void time_calls(A& a, std::span<const std::uint32_t> sizes, std::span<float> ns) {
    void* held[held_blocks];
    std::uint32_t held_size[held_blocks];
    std::size_t live = 0;
    const auto release = [&] {
        a.release(std::span<void*>(held, live), std::span<const std::uint32_t>(held_size, live));
        live = 0;
    };
    const std::size_t warm = std::min(sizes.size(), warmup_calls);
    for (std::size_t i = 0; i < warm; ++i) {
        held_size[live] = sizes[i];
        held[live++] = a.allocate(sizes[i]);
        if (live == held_blocks) release();
    }
    release();
    const clock_cal& c = clock();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const std::uint64_t t0 = tick_begin();
        void* p = a.allocate(sizes[i]);
        do_not_optimize(p);
        const std::uint64_t t1 = tick_end();
        const std::uint64_t d = t1 - t0;
        ns[i] = static_cast<float>(static_cast<double>(d - std::min(d, c.overhead)) / c.ticks_per_ns);
        held_size[live] = sizes[i];
        held[live++] = p;
        if (live == held_blocks) release();
    }
    release();
}

// The allocators, each as allocate(size) and release(blocks, sizes).
struct by_malloc {
    void* allocate(std::size_t n) noexcept { return std::malloc(n); }
    void release(std::span<void*> ps, std::span<const std::uint32_t>) noexcept {
        for (void* p : ps)
            std::free(p);
    }
};
/// A peer through its replay adapter (peer_contenders.hpp), made fresh: it gives its cached free
/// memory back to the OS as it is made.
template <class Peer>
struct by_peer {
    Peer peer{op_workload{}};
    void* allocate(std::size_t n) noexcept { return peer.allocate(n, align); }
    void release(std::span<void*> ps, std::span<const std::uint32_t> sizes) noexcept {
        for (std::size_t i = 0; i < ps.size(); ++i)
            if (ps[i] != nullptr) peer.deallocate(ps[i], sizes[i], align);
    }
};
struct by_engine {
    engine_heap heap{engine_options{.reserve_bytes = std::size_t{1} << 30}}; // gone (unmapped) after the run
    void* allocate(std::size_t n) noexcept { return heap.allocate(n); }
    void release(std::span<void*> ps, std::span<const std::uint32_t>) noexcept {
        for (void* p : ps)
            heap.deallocate(p);
    }
};
struct by_tlsf {
    os_buffer memory{buffer_bytes, true};
    tlsf heap{std::span<std::byte>(memory.data(), memory.size())};
    void* allocate(std::size_t n) noexcept { return heap.allocate(n, align); }
    void release(std::span<void*> ps, std::span<const std::uint32_t> sizes) noexcept {
        for (std::size_t i = 0; i < ps.size(); ++i)
            if (ps[i] != nullptr) heap.deallocate(ps[i], sizes[i], align);
    }
};
struct by_arena {
    os_buffer memory{buffer_bytes, true};
    arena heap{std::span<std::byte>(memory.data(), memory.size())};
    void* allocate(std::size_t n) noexcept { return heap.allocate(n, align); }
    void release(std::span<void*>, std::span<const std::uint32_t>) noexcept { heap.reset(); }
};

/// Returns: the histogram bin of `ns`: bins_per_decade per decade from 1 ns; below 1 ns in the
/// first, 10 ms and above in the last.
std::size_t bin_of(double ns) noexcept {
    constexpr int last = bins_per_decade * decades - 1;
    if (!(ns > 1.0)) return 0;
    const int b = static_cast<int>(std::floor(std::log10(ns) * bins_per_decade));
    return static_cast<std::size_t>(std::clamp(b, 0, last));
}

/// Returns: the summary of one allocator's samples `ns` (sorted here).
json summarize(const char* name, std::span<float> ns) {
    std::vector<std::uint64_t> counts(bins_per_decade * decades, 0);
    double sum = 0;
    for (float x : ns) {
        ++counts[bin_of(x)];
        sum += x;
    }
    std::sort(ns.begin(), ns.end());
    const std::size_t n = ns.size();
    const auto at = [&](double q) {
        return static_cast<double>(ns[std::min(n - 1, static_cast<std::size_t>(q * static_cast<double>(n)))]);
    };
    // The curve: evenly spaced in nines (-log10(1 - q)) from p0 up to 1 - 1/n, then the maximum.
    json curve = json::array();
    const double top = std::log10(static_cast<double>(n));
    for (std::size_t k = 0; k + 1 < curve_points; ++k) {
        const double q =
            1.0 - std::pow(10.0, -top * static_cast<double>(k) / static_cast<double>(curve_points - 2));
        curve.push_back({100.0 * q, at(q)});
    }
    curve.push_back({100.0, static_cast<double>(ns[n - 1])});
    return {{"name", name},        {"counts", counts}, {"cdf", std::move(curve)},
            {"p50", at(0.5)},      {"p99", at(0.99)},  {"p999", at(0.999)},
            {"p9999", at(0.9999)}, {"max", ns[n - 1]}, {"mean", sum / static_cast<double>(n)}};
}

/// Times allocator A (made here, gone after) and appends its summary to `runs`; a failure to make
/// it (a peer that does not load, no engine heap slot left) goes to `skipped` with its reason.
template <class A>
void measure_one(const char* name, std::span<const std::uint32_t> sizes, std::span<float> ns, json& runs,
                 json& skipped) {
    try {
        {
            A a;
            time_calls(a, sizes, ns);
        }
        runs.push_back(summarize(name, ns));
    } catch (const std::exception& e) {
        skipped.push_back({{"name", name}, {"reason", std::string("could not be made: ") + e.what()}});
    }
}

void skip(json& skipped, const char* name, const char* reason) {
    skipped.push_back({{"name", name}, {"reason", reason}});
}

json run_latency(const json& args) {
    const std::size_t samples = int_arg(args, "samples", 100, 50000, 20000);
    const std::uint64_t seed = int_arg(args, "seed", 0, UINT32_MAX, 42);
    std::lock_guard lock(measure_mutex());
    // The requests and one allocator's samples at a time: mapped, and unmapped when done.
    os_buffer memory(samples * (sizeof(std::uint32_t) + sizeof(float)));
    const std::span<std::uint32_t> sizes(memory.as<std::uint32_t>(), samples);
    const std::span<float> ns(reinterpret_cast<float*>(sizes.data() + samples), samples);
    splitmix64 rng(seed);
    for (auto& s : sizes)
        s = static_cast<std::uint32_t>(rng.between(16, 1024));

    json runs = json::array(), skipped = json::array();
    measure_one<by_malloc>("malloc", sizes, ns, runs, skipped);
#if defined(STRATA_LAB_HAS_MIMALLOC)
    if (mimalloc_replay::api() != nullptr) {
        measure_one<by_peer<mimalloc_replay>>("mimalloc", sizes, ns, runs, skipped);
        mimalloc_replay::api()->collect(true); // its freed pages back to the OS
    } else {
        skip(skipped, "mimalloc", STRATA_LAB_MIMALLOC_LIBRARY " did not load");
    }
#else
    skip(skipped, "mimalloc",
         "not in this build (no libmimalloc-dev at configure time, or a sanitized build)");
#endif
#if defined(STRATA_LAB_HAS_JEMALLOC)
    measure_one<by_peer<jemalloc_replay>>("jemalloc", sizes, ns, runs, skipped);
    { by_peer<jemalloc_replay> release_cache; } // made fresh: flushes and purges
#else
    skip(skipped, "jemalloc",
         "not in this build (no libjemalloc-dev at configure time, or a sanitized build)");
#endif
#if defined(STRATA_LAB_HAS_TCMALLOC)
    measure_one<by_peer<tcmalloc_replay>>("tcmalloc", sizes, ns, runs, skipped);
    { by_peer<tcmalloc_replay> release_cache; } // made fresh: releases its free pages
#else
    skip(skipped, "tcmalloc",
         "not in this build (no libgoogle-perftools-dev at configure time, or a sanitized build)");
#endif
    measure_one<by_engine>("engine heap", sizes, ns, runs, skipped);
    measure_one<by_tlsf>("tlsf", sizes, ns, runs, skipped);
    measure_one<by_arena>("arena", sizes, ns, runs, skipped);

    json edges = json::array();
    for (int i = 0; i <= bins_per_decade * decades; ++i)
        edges.push_back(std::pow(10.0, static_cast<double>(i) / bins_per_decade));
    return {{"samples", samples},
            {"seed", seed},
            {"sizes", {16, 1024}},
            {"held_blocks", held_blocks},
            {"edges_ns", std::move(edges)},
            {"timer_overhead_ns", static_cast<double>(clock().overhead) / clock().ticks_per_ns},
            {"runs", std::move(runs)},
            {"skipped", std::move(skipped)}};
}

} // namespace

std::unique_ptr<demo> make_latency_demo(const limits&) {
    return std::make_unique<measuring_demo>("latency", &run_latency, 64 * 1024);
}

} // namespace strata::lab::serve
