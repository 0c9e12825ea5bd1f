// The measuring demos: the fragmentation race, the latency tail and AoS vs SoA. They keep no
// allocator between requests: each run builds its allocators over temporary buffers, replays or
// times, and returns the series. Runs are bounded by their arguments and one runs at a time.
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <type_traits>
#include <utility>

#include "strata/heap/buddy.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/linear/arena.hpp"
#include "strata/pool/pool.hpp"

#include "demo.hpp"
#include "layout.hpp"
#include "ops.hpp"
#include "replay.hpp"
#include "timer.hpp"

namespace strata::lab::serve {
namespace {

// One measurement at a time, server-wide: they take CPU and a few MiB each.
std::mutex& measure_mutex() {
    static std::mutex m;
    return m;
}

/// A measuring demo: one operation, "run", whose result (`measure(args)`) is the state until the
/// next run. `result_bytes` bounds the size of that result.
class measuring_demo final : public demo {
public:
    using measure_fn = json (*)(const json& args);
    measuring_demo(std::string_view name, measure_fn measure, std::size_t result_bytes)
        : name_(name), measure_(measure), result_bytes_(result_bytes) {}
    json call(std::string_view op, const json& args) override {
        if (op != "run") unknown_op(name_, op);
        last_ = measure_(args);
        return {{"ok", true}};
    }
    json state() const override { return last_; }
    std::size_t bytes() const noexcept override { return sizeof(*this) + result_bytes_; }

private:
    std::string_view name_;
    measure_fn measure_;
    std::size_t result_bytes_;
    json last_ = json::object();
};

// --- fragmentation race --------------------------------------------------------------------------

inline constexpr std::size_t race_heap_bytes = std::size_t{256} << 10;

/// A replay adapter (replay.hpp) for allocator A over its own fixed heap of race_heap_bytes.
template <class A>
class in_heap {
public:
    static bool applies(const op_workload&) { return true; }
    explicit in_heap(const op_workload&) : a_(make(std::span<std::byte>(memory_.get(), race_heap_bytes))) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return a_.allocate(size, align); }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept { a_.deallocate(p, size, align); }
    /// free_bytes: the heap's bytes not handed out (stats().in_use, padding included).
    heap_probe probe() const noexcept {
        const stats s = a_.stats();
        return {race_heap_bytes - s.in_use, s.largest_free_block};
    }

private:
    static A make(std::span<std::byte> heap) {
        if constexpr (std::is_same_v<A, pool>)
            return pool(1024, 16, heap); // the largest request: every block takes a full slot
        else if constexpr (std::is_same_v<A, buddy>)
            return buddy(heap, 16);
        else
            return A(heap);
    }
    std::unique_ptr<std::byte[]> memory_{new std::byte[race_heap_bytes]}; // first: a_ is built in it
    A a_;
};

/// Replays `w` through A's adapter, sampling the largest free block and the bytes in use.
template <class A>
json race_one(const char* name, const op_workload& w) {
    // The sampling pass alone: no warm-up, no timed passes.
    const replay_result r = replay<in_heap<A>>(w, {.warmup = 0, .repeats = 0, .latency_passes = 0});
    json largest = json::array(), used = json::array();
    for (const memory_sample& s : r.series) {
        largest.push_back(s.largest_free);
        used.push_back(race_heap_bytes - s.free_bytes);
    }
    return {{"name", name}, {"largest_free", largest}, {"in_use", used}, {"failures", r.failed}};
}

json run_race(const json& args) {
    const std::uint64_t seed = int_arg(args, "seed", 0, UINT32_MAX, 42);
    const double scale = static_cast<double>(int_arg(args, "scale_percent", 10, 200, 100)) / 100.0;
    std::lock_guard lock(measure_mutex());
    const op_workload w = gen::bimodal(scale, seed);
    return {{"workload", w.description},
            {"operations", w.memory_ops()},
            {"peak_live_bytes", w.peak_live_bytes},
            {"heap_bytes", race_heap_bytes},
            {"every", std::max<std::uint64_t>(1, w.memory_ops() / replay_options{}.series_points)},
            {"seed", seed},
            {"runs",
             {race_one<pool>("pool (1 KiB slots)", w), race_one<buddy>("buddy", w), race_one<tlsf>("tlsf", w),
              race_one<free_list_first_fit>("first-fit", w)}}};
}

// --- latency tail --------------------------------------------------------------------------------

json run_latency(const json& args) {
    const std::size_t samples = int_arg(args, "samples", 100, 50000, 20000);
    const std::uint64_t seed = int_arg(args, "seed", 0, UINT32_MAX, 42);
    std::lock_guard lock(measure_mutex());
    // The timer, calibrated once; its own cost (the smallest empty measurement) is subtracted
    // from every sample.
    static const calibration cal = calibrate(std::chrono::milliseconds(20), 1000);
    const auto overhead = static_cast<std::uint64_t>(cal.overhead_min_ticks);
    const double tpn = cal.ghz();
    splitmix64 rng(seed);
    std::vector<std::size_t> sizes(samples);
    for (auto& s : sizes)
        s = rng.between(16, 1024);
    // Returns: the nanoseconds one call of `allocate` took, less the timer's own cost.
    const auto timed = [&](auto&& allocate) {
        const std::uint64_t a = tick_begin();
        void* p = allocate();
        do_not_optimize(p);
        const std::uint64_t b = tick_end();
        return std::pair{static_cast<double>(b - a - std::min(b - a, overhead)) / tpn, p};
    };
    std::vector<double> ns_malloc, ns_arena;
    std::vector<void*> held; // malloc's blocks, freed untimed in batches, like a frame's allocations
    std::vector<std::byte> buffer(std::size_t{1} << 20);
    arena ar(std::span<std::byte>(buffer.data(), buffer.size()));
    for (std::size_t i = 0; i < samples; ++i) {
        const auto [ns, p] = timed([&] { return std::malloc(sizes[i]); });
        ns_malloc.push_back(ns);
        held.push_back(p);
        if (held.size() == 256 || i + 1 == samples) {
            for (void* q : held)
                std::free(q);
            held.clear();
        }
    }
    for (std::size_t i = 0; i < samples; ++i) {
        if (ar.remaining() < 2048) ar.reset();
        ns_arena.push_back(timed([&] { return ar.allocate(sizes[i], 16); }).first);
    }
    // Log bins: 5 per decade from 1 ns to 1 ms; zeros (faster than the timer resolves) in the first.
    constexpr int per_decade = 5, decades = 6;
    json edges = json::array();
    for (int i = 0; i <= per_decade * decades; ++i)
        edges.push_back(std::pow(10.0, static_cast<double>(i) / per_decade));
    const auto summarize = [&](const char* name, std::vector<double>& v) {
        std::vector<std::uint64_t> counts(per_decade * decades + 1, 0);
        for (double x : v) {
            const int bin = x <= 1.0 ? 0 : static_cast<int>(std::floor(std::log10(x) * per_decade));
            ++counts[static_cast<std::size_t>(std::min(bin, per_decade * decades))];
        }
        std::sort(v.begin(), v.end());
        const auto pct = [&](double q) {
            return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
        };
        return json{{"name", name},
                    {"counts", counts},
                    {"p50", pct(0.5)},
                    {"p99", pct(0.99)},
                    {"p999", pct(0.999)},
                    {"max", v.back()},
                    {"mean", std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size())}};
    };
    return {{"samples", samples},
            {"edges_ns", edges},
            {"timer_overhead_ns", static_cast<double>(overhead) / tpn},
            {"runs", {summarize("malloc", ns_malloc), summarize("arena", ns_arena)}}};
}

// --- AoS vs SoA ----------------------------------------------------------------------------------

json run_layout(const json& args) {
    using shape = layout::small_entity;
    const std::size_t n = int_arg(args, "entities", 1000, 1'000'000, 200'000);
    std::lock_guard lock(measure_mutex());
    const layout::timings t = shape::measure(n, 3, false);
    const auto side = [](std::size_t bytes, double ms) {
        const std::size_t loaded = layout::loaded_bytes(bytes);
        return json{{"lines", loaded / layout::cache_line}, {"bytes_loaded", loaded}, {"ms", ms}};
    };
    return {{"entities", n},
            {"entity_bytes", shape::entity_bytes},
            {"field_bytes", layout::field_bytes},
            {"line_bytes", layout::cache_line},
            {"aos", side(n * shape::entity_bytes, t.aos_ms)},
            {"soa", side(n * layout::field_bytes, t.soa_ms)},
            {"bytes_used", n * layout::field_bytes}};
}

} // namespace

std::unique_ptr<demo> make_race_demo(const limits&) {
    return std::make_unique<measuring_demo>("race", &run_race, 16 * 1024);
}
std::unique_ptr<demo> make_latency_demo(const limits&) {
    return std::make_unique<measuring_demo>("latency", &run_latency, 4096);
}
std::unique_ptr<demo> make_layout_demo(const limits&) {
    return std::make_unique<measuring_demo>("layout", &run_layout, 1024);
}

} // namespace strata::lab::serve
