// The fragmentation race: pool, buddy, TLSF and first-fit replay the same bimodal workload, each in
// its own 256 KiB heap (mapped from the OS for the run and unmapped after), sampled after every few
// operations: bytes in use, free bytes, the largest free block and fragmentation (1 - largest free
// / free bytes). Exports make_race_demo.
#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#include "strata/heap/buddy.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/pool/pool.hpp"

#include "measure.hpp"
#include "ops.hpp"
#include "replay.hpp"

namespace strata::lab::serve {
namespace {

inline constexpr std::size_t race_heap_bytes = std::size_t{256} << 10;

/// A replay adapter (replay.hpp) for allocator A over its own fixed heap of race_heap_bytes.
template <class A>
class in_heap {
public:
    static bool applies(const op_workload&) { return true; }
    explicit in_heap(const op_workload&) : a_(make(std::span<std::byte>(memory_.data(), race_heap_bytes))) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return a_.allocate(size, align); }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept { a_.deallocate(p, size, align); }
    /// free_bytes: the heap's bytes not handed out (stats().in_use, padding included).
    heap_probe probe() const noexcept {
        const stats s = a_.stats();
        return {race_heap_bytes - std::min(race_heap_bytes, s.in_use), s.largest_free_block};
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
    os_buffer memory_{race_heap_bytes}; // first: a_ is built in it
    A a_;
};

/// Returns: 1 - largest / free, the share of the free bytes that the largest request that fits
/// cannot use; 0 when nothing is free.
double fragmentation(std::uint64_t free_bytes, std::uint64_t largest) noexcept {
    if (free_bytes == 0) return 0.0;
    return 1.0 - static_cast<double>(std::min(largest, free_bytes)) / static_cast<double>(free_bytes);
}

/// Returns: the memory operations up to and including the last allocation: after it the workload
/// only frees what is left (the drain), which ends with every heap empty and in one piece.
std::uint64_t before_drain(const op_workload& w) noexcept {
    std::uint64_t n = 0, last_alloc = 0;
    for (const op& o : w.ops) {
        if (o.kind == op_kind::frame) continue;
        ++n;
        if (o.kind != op_kind::free) last_alloc = n;
    }
    return last_alloc;
}

/// Replays `w` through A's adapter and returns its series (one point per sample) and summary. The
/// "final" values are those of the last sample before the drain (`steady_end` operations);
/// `ops` (when given) gets the operation count after which each sample was taken.
template <class A>
json race_one(const char* name, const op_workload& w, std::uint64_t steady_end, json* ops = nullptr) {
    // The sampling pass alone: no warm-up, no timed passes.
    const replay_result r = replay<in_heap<A>>(w, {.warmup = 0, .repeats = 0, .latency_passes = 0});
    json in_use = json::array(), free_bytes = json::array(), largest = json::array(), frag = json::array();
    std::uint64_t peak = 0, final_largest = 0;
    double frag_sum = 0, final_frag = 0;
    bool have_final = false;
    for (const memory_sample& s : r.series) {
        const std::uint64_t used = race_heap_bytes - s.free_bytes;
        const double f = fragmentation(s.free_bytes, s.largest_free);
        in_use.push_back(used);
        free_bytes.push_back(s.free_bytes);
        largest.push_back(s.largest_free);
        frag.push_back(f);
        peak = std::max(peak, used);
        frag_sum += f;
        if (s.op < steady_end || !have_final) {
            final_frag = f;
            final_largest = s.largest_free;
            have_final = true;
        }
        if (ops != nullptr) ops->push_back(s.op + 1);
    }
    const std::size_t n = r.series.size();
    return {{"name", name},
            {"in_use", in_use},
            {"free_bytes", free_bytes},
            {"largest_free", largest},
            {"fragmentation", frag},
            {"failures", r.failed},
            {"peak_in_use", peak},
            {"mean_fragmentation", n == 0 ? 0.0 : frag_sum / static_cast<double>(n)},
            {"final_fragmentation", final_frag},
            {"final_largest_free", final_largest}};
}

json run_race(const json& args) {
    const std::uint64_t seed = int_arg(args, "seed", 0, UINT32_MAX, 42);
    const double scale = static_cast<double>(int_arg(args, "scale_percent", 10, 200, 100)) / 100.0;
    std::lock_guard lock(measure_mutex());
    const op_workload w = gen::bimodal(scale, seed);
    // Every allocator is sampled after the same operations (the x axis, taken from the first).
    const std::uint64_t steady_end = before_drain(w);
    json ops = json::array();
    json runs = {race_one<pool>("pool (1 KiB slots)", w, steady_end, &ops),
                 race_one<buddy>("buddy", w, steady_end), race_one<tlsf>("tlsf", w, steady_end),
                 race_one<free_list_first_fit>("first-fit", w, steady_end)};
    return {{"workload", w.description},
            {"operations", w.memory_ops()},
            {"peak_live_bytes", w.peak_live_bytes},
            {"heap_bytes", race_heap_bytes},
            {"seed", seed},
            {"ops", ops},
            {"drain_from", steady_end},
            {"runs", std::move(runs)}};
}

} // namespace

std::unique_ptr<demo> make_race_demo(const limits&) {
    return std::make_unique<measuring_demo>("race", &run_race, 96 * 1024);
}

} // namespace strata::lab::serve
