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

#include "strata/heap/buddy.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/linear/arena.hpp"
#include "strata/pool/pool.hpp"

#include "demo.hpp"
#include "ops.hpp"
#include "showdown.hpp"
#include "timer.hpp"

namespace strata::lab::serve {
namespace {

// One measurement at a time, server-wide: they take CPU and a few MiB each.
std::mutex& measure_mutex() {
    static std::mutex m;
    return m;
}

// --- fragmentation race --------------------------------------------------------------------------

struct race_heap {
    std::unique_ptr<std::byte[]> memory;
    std::span<std::byte> buffer;
    explicit race_heap(std::size_t bytes) : memory(new std::byte[bytes]), buffer(memory.get(), bytes) {}
};

/// Replays `w` on `a`, sampling the largest free block every `every` operations.
template <class A>
json race_one(const char* name, A& a, const op_workload& w, std::size_t every) {
    std::vector<void*> slots(w.slots, nullptr);
    std::vector<std::size_t> sizes(w.slots, 0);
    json largest = json::array(), used = json::array();
    std::size_t failures = 0, n = 0;
    for (const op& o : w.ops) {
        if (o.kind == op_kind::allocate || o.kind == op_kind::reallocate) {
            if (o.kind == op_kind::reallocate && slots[o.slot])
                a.deallocate(slots[o.slot], sizes[o.slot], 16);
            void* p = a.allocate(o.size, std::size_t{1} << o.log2_align);
            if (p == nullptr) ++failures;
            slots[o.slot] = p;
            sizes[o.slot] = o.size;
        } else if (o.kind == op_kind::free) {
            if (slots[o.slot]) a.deallocate(slots[o.slot], sizes[o.slot], 16);
            slots[o.slot] = nullptr;
        } else {
            continue;
        }
        if (++n % every == 0) {
            const stats s = a.stats();
            largest.push_back(s.largest_free_block);
            used.push_back(s.in_use);
        }
    }
    for (std::size_t i = 0; i < slots.size(); ++i)
        if (slots[i]) a.deallocate(slots[i], sizes[i], 16);
    return {{"name", name}, {"largest_free", largest}, {"in_use", used}, {"failures", failures}};
}

class race_demo final : public demo {
public:
    static constexpr std::size_t heap_bytes = std::size_t{256} << 10;

    json call(std::string_view op, const json& args) override {
        if (op != "run") unknown_op("race", op);
        const std::uint64_t seed = int_arg(args, "seed", 0, UINT32_MAX, 42);
        const double scale = static_cast<double>(int_arg(args, "scale_percent", 10, 200, 100)) / 100.0;
        std::lock_guard lock(measure_mutex());
        const op_workload w = gen::bimodal(scale, seed);
        const std::size_t every = std::max<std::size_t>(1, static_cast<std::size_t>(w.memory_ops() / 200));
        json runs = json::array();
        {
            race_heap h(heap_bytes);
            pool a(1024, 16, h.buffer); // the largest request: every block takes a full slot
            runs.push_back(race_one("pool (1 KiB slots)", a, w, every));
        }
        {
            race_heap h(heap_bytes);
            buddy a(h.buffer, 16);
            runs.push_back(race_one("buddy", a, w, every));
        }
        {
            race_heap h(heap_bytes);
            tlsf a(h.buffer);
            runs.push_back(race_one("tlsf", a, w, every));
        }
        {
            race_heap h(heap_bytes);
            free_list_first_fit a(h.buffer);
            runs.push_back(race_one("first-fit", a, w, every));
        }
        last_ = {{"workload", w.description},
                 {"operations", w.memory_ops()},
                 {"peak_live_bytes", w.peak_live_bytes},
                 {"heap_bytes", heap_bytes},
                 {"every", every},
                 {"seed", seed},
                 {"runs", runs}};
        return {{"ok", true}};
    }
    json state() const override { return last_; }
    std::size_t bytes() const noexcept override { return sizeof(*this) + (last_.is_null() ? 0 : 16 * 1024); }

private:
    json last_ = json::object();
};

// --- latency tail --------------------------------------------------------------------------------

class latency_demo final : public demo {
public:
    json call(std::string_view op, const json& args) override {
        if (op != "run") unknown_op("latency", op);
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
        std::vector<double> ns_malloc, ns_arena;
        ns_malloc.reserve(samples);
        ns_arena.reserve(samples);
        {
            std::vector<void*> held;
            held.reserve(256);
            for (std::size_t i = 0; i < samples; ++i) {
                const std::uint64_t a = tick_begin();
                void* p = std::malloc(sizes[i]);
                do_not_optimize(p);
                const std::uint64_t b = tick_end();
                ns_malloc.push_back(static_cast<double>(b - a - std::min(b - a, overhead)) / tpn);
                held.push_back(p);
                if (held.size() == 256) { // batches freed untimed, like a frame's allocations
                    for (void* q : held)
                        std::free(q);
                    held.clear();
                }
            }
            for (void* q : held)
                std::free(q);
        }
        {
            std::vector<std::byte> buffer(std::size_t{1} << 20);
            arena ar(std::span<std::byte>(buffer.data(), buffer.size()));
            for (std::size_t i = 0; i < samples; ++i) {
                if (ar.remaining() < 2048) ar.reset();
                const std::uint64_t a = tick_begin();
                void* p = ar.allocate(sizes[i], 16);
                do_not_optimize(p);
                const std::uint64_t b = tick_end();
                ns_arena.push_back(static_cast<double>(b - a - std::min(b - a, overhead)) / tpn);
            }
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
                        {"mean", [&] {
                             double s = 0;
                             for (double x : v)
                                 s += x;
                             return s / static_cast<double>(v.size());
                         }()}};
        };
        last_ = {{"samples", samples},
                 {"edges_ns", edges},
                 {"timer_overhead_ns", static_cast<double>(overhead) / tpn},
                 {"runs", {summarize("malloc", ns_malloc), summarize("arena", ns_arena)}}};
        return {{"ok", true}};
    }
    json state() const override { return last_; }
    std::size_t bytes() const noexcept override { return sizeof(*this) + (last_.is_null() ? 0 : 4096); }

private:
    json last_ = json::object();
};

// --- AoS vs SoA ----------------------------------------------------------------------------------

class layout_demo final : public demo {
public:
    json call(std::string_view op, const json& args) override {
        if (op != "run") unknown_op("layout", op);
        const std::size_t n = int_arg(args, "entities", 1000, 1'000'000, 200'000);
        std::lock_guard lock(measure_mutex());
        const showdown::layout_timings t = showdown::layout_pass(n, 3);
        constexpr std::size_t line = 64;
        const std::size_t entity = sizeof(showdown::entity), field = sizeof(float);
        const auto lines = [&](std::size_t bytes) { return (bytes + line - 1) / line; };
        last_ = {
            {"entities", n},
            {"entity_bytes", entity},
            {"field_bytes", field},
            {"line_bytes", line},
            {"aos",
             {{"lines", lines(n * entity)}, {"bytes_loaded", lines(n * entity) * line}, {"ms", t.aos_ms}}},
            {"soa",
             {{"lines", lines(n * field)}, {"bytes_loaded", lines(n * field) * line}, {"ms", t.soa_ms}}},
            {"bytes_used", n * field}};
        return {{"ok", true}};
    }
    json state() const override { return last_; }
    std::size_t bytes() const noexcept override { return sizeof(*this) + 1024; }

private:
    json last_ = json::object();
};

} // namespace

std::unique_ptr<demo> make_race_demo(const limits&) { return std::make_unique<race_demo>(); }
std::unique_ptr<demo> make_latency_demo(const limits&) { return std::make_unique<latency_demo>(); }
std::unique_ptr<demo> make_layout_demo(const limits&) { return std::make_unique<layout_demo>(); }

} // namespace strata::lab::serve
