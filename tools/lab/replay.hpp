#pragma once
// strata-lab replay: runs an op_workload (ops.hpp) through one allocator and measures it.
//
// A replay adapter is a class with
//   static bool applies(const op_workload& w);          // false: this allocator cannot serve w
//                                                       // (a pool given mixed sizes, an arena given
//                                                       // blocks that outlive their frame); skipped
//   explicit Adapter(const op_workload& w);             // fresh allocator, sized from w if it must be
//   void* allocate(std::size_t size, std::size_t align) noexcept;      // nullptr = failure
//   void deallocate(void* p, std::size_t size, std::size_t align) noexcept;
// and optionally
//   void* reallocate(void* p, std::size_t old_size, std::size_t new_size, std::size_t align) noexcept;
//                        // absent: allocate + copy + deallocate
//   void end_frame() noexcept;                 // at every frame op (frame allocators reset here)
//   std::size_t footprint() const noexcept;    // bytes held from the OS / memory source now
//   heap_probe probe() const noexcept;         // free bytes and largest free block now (walkable heaps)
//   std::size_t usable_size(const void* p) const noexcept;  // bytes granted for p (internal waste)
//
// Replay is serial: a multi-threaded trace is replayed on one thread in its recorded global order,
// which keeps every thread's own order (see docs/lab.md), so thread-safety is never needed.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ops.hpp"
#include "timer.hpp"

namespace strata::lab {

/// What a walkable heap reports about its free space.
struct heap_probe {
    std::size_t free_bytes = 0;
    std::size_t largest_free = 0;
};

/// One point of the memory time series (sampled every `sample_every` memory ops).
struct memory_sample {
    std::uint64_t op = 0;            ///< index of the memory op after which it was taken
    std::uint64_t live_bytes = 0;    ///< requested bytes live
    std::uint64_t footprint = 0;     ///< held from upstream (0 if unknown)
    std::uint64_t granted_bytes = 0; ///< usable bytes of the live blocks (0 if unknown)
    std::uint64_t free_bytes = 0;    ///< heap_probe (0 if unknown)
    std::uint64_t largest_free = 0;  ///< heap_probe (0 if unknown)
};

/// Everything one (allocator, workload) replay measured.
struct replay_result {
    std::string allocator;
    std::string workload;
    bool applies = true;
    std::uint64_t memory_ops = 0;
    std::uint64_t failed = 0;                  ///< allocations / reallocations answered nullptr
    std::vector<double> seconds;               ///< each throughput pass
    std::vector<std::uint32_t> ticks_raw;      ///< latency pass 0, per memory op
    std::vector<std::uint32_t> ticks_filtered; ///< per-op minimum over every latency pass
    int latency_passes = 0;
    std::vector<memory_sample> series;
    std::uint64_t peak_footprint = 0;
    std::uint64_t peak_granted = 0; ///< most usable bytes live at once
    bool has_footprint = false, has_probe = false, has_usable_size = false;

    [[nodiscard]] double ns_per_op() const noexcept {
        if (seconds.empty() || memory_ops == 0) return 0;
        std::vector<double> s(seconds);
        std::sort(s.begin(), s.end());
        return s[s.size() / 2] * 1e9 / static_cast<double>(memory_ops);
    }
};

// clang-format off
template <class A> concept has_reallocate = requires(A& a, void* p, std::size_t n) { { a.reallocate(p, n, n, n) } -> std::same_as<void*>; };
template <class A> concept has_end_frame = requires(A& a) { a.end_frame(); };
template <class A> concept has_footprint = requires(const A& a) { { a.footprint() } -> std::convertible_to<std::size_t>; };
template <class A> concept has_probe = requires(const A& a) { { a.probe() } -> std::same_as<heap_probe>; };
template <class A> concept has_usable_size = requires(const A& a, const void* p) { { a.usable_size(p) } -> std::convertible_to<std::size_t>; };
// clang-format on

namespace detail {

/// Per-replay state: the live pointer and size of every slot.
struct slot_table {
    std::vector<void*> ptr;
    std::vector<std::uint64_t> size;
    std::vector<std::uint8_t> log2_align;
    explicit slot_table(std::uint32_t slots) : ptr(slots, nullptr), size(slots, 0), log2_align(slots, 4) {}
};

inline void touch_block(void* p, std::uint64_t size, std::uint64_t i) noexcept {
    auto* b = static_cast<volatile unsigned char*>(p);
    b[0] = static_cast<unsigned char>(i);
    b[size - 1] = static_cast<unsigned char>(i >> 8);
}

template <class A>
void* do_reallocate(A& a, void* p, std::uint64_t old_size, std::uint64_t new_size,
                    std::size_t align) noexcept {
    if constexpr (has_reallocate<A>) {
        return a.reallocate(p, old_size, new_size, align);
    } else {
        void* q = a.allocate(new_size, align);
        if (q == nullptr) return nullptr;
        if (p != nullptr) {
            std::memcpy(q, p, std::min(old_size, new_size));
            a.deallocate(p, old_size, align);
        }
        return q;
    }
}

enum class pass { throughput, latency, sampling };

/// Runs every op of w through a. Latency: ticks[i] = min(ticks[i], ticks of memory op i).
/// Sampling: appends to `series` every `every` memory ops. Returns: allocations that failed.
template <class A, pass P>
std::uint64_t run_ops(A& a, const op_workload& w, slot_table& t, std::uint32_t* ticks,
                      std::vector<memory_sample>* series, std::uint64_t every, std::uint64_t* peak_fp,
                      std::uint64_t* peak_granted) {
    std::uint64_t failed = 0, m = 0, live = 0, granted = 0;
    void** ptr = t.ptr.data();
    std::uint64_t* size = t.size.data();
    std::uint8_t* la = t.log2_align.data();
    for (const op& o : w.ops) {
        if (o.kind == op_kind::frame) {
            if constexpr (has_end_frame<A>) a.end_frame();
            continue;
        }
        std::uint64_t t0 = 0;
        if constexpr (P == pass::latency) t0 = tick_begin();
        void* p = nullptr;
        switch (o.kind) {
        case op_kind::allocate: p = a.allocate(o.size, std::size_t{1} << o.log2_align); break;
        case op_kind::free:
            if constexpr (P == pass::sampling && has_usable_size<A>) {
                if (ptr[o.slot] != nullptr) granted -= a.usable_size(ptr[o.slot]);
            }
            if (ptr[o.slot] != nullptr) a.deallocate(ptr[o.slot], size[o.slot], std::size_t{1} << la[o.slot]);
            break;
        case op_kind::reallocate:
            if constexpr (P == pass::sampling && has_usable_size<A>) {
                if (ptr[o.slot] != nullptr) granted -= a.usable_size(ptr[o.slot]);
            }
            p = do_reallocate(a, ptr[o.slot], size[o.slot], o.size, std::size_t{1} << la[o.slot]);
            break;
        case op_kind::frame: break;
        }
        if constexpr (P == pass::latency) {
            do_not_optimize(p);
            const std::uint64_t d = tick_end() - t0;
            ticks[m] = std::min<std::uint32_t>(ticks[m], static_cast<std::uint32_t>(std::min<std::uint64_t>(
                                                             d, std::numeric_limits<std::uint32_t>::max())));
        }
        if (o.kind == op_kind::free) {
            live -= size[o.slot];
            ptr[o.slot] = nullptr;
            size[o.slot] = 0;
        } else {
            if (p == nullptr) {
                ++failed;
                if (o.kind == op_kind::allocate) {
                    ptr[o.slot] = nullptr; // a later free of this slot is skipped
                    size[o.slot] = 0;
                }
                // A failed reallocate keeps the old block (as realloc does).
            } else {
                touch_block(p, o.size, m);
                live = live - size[o.slot] + o.size;
                ptr[o.slot] = p;
                size[o.slot] = o.size;
                if (o.kind == op_kind::allocate) la[o.slot] = o.log2_align;
                if constexpr (P == pass::sampling && has_usable_size<A>) granted += a.usable_size(p);
            }
        }
        ++m;
        if constexpr (P == pass::sampling) {
            *peak_granted = std::max(*peak_granted, granted);
            if constexpr (has_footprint<A>) *peak_fp = std::max<std::uint64_t>(*peak_fp, a.footprint());
            if (m % every == 0 || m == w.memory_ops()) {
                memory_sample s;
                s.op = m;
                s.live_bytes = live;
                s.granted_bytes = granted;
                if constexpr (has_footprint<A>) s.footprint = a.footprint();
                if constexpr (has_probe<A>) {
                    const heap_probe hp = a.probe();
                    s.free_bytes = hp.free_bytes;
                    s.largest_free = hp.largest_free;
                }
                series->push_back(s);
            }
        }
    }
    // Blocks the workload never frees are released untimed, so the next pass starts clean.
    for (std::size_t s = 0; s < t.ptr.size(); ++s) {
        if (t.ptr[s] != nullptr) a.deallocate(t.ptr[s], t.size[s], std::size_t{1} << t.log2_align[s]);
        t.ptr[s] = nullptr;
        t.size[s] = 0;
    }
    if constexpr (has_end_frame<A>) a.end_frame();
    return failed;
}

} // namespace detail

/// How much replaying to do.
struct replay_options {
    int warmup = 1;                    ///< untimed passes first (pre-fault memory, warm caches)
    int repeats = 3;                   ///< timed throughput passes (the median is reported)
    int latency_passes = 3;            ///< per-op timed passes; the per-op minimum is the filtered tail
    std::uint32_t series_points = 200; ///< memory samples over the workload
};

/// Replays `w` through a fresh A: warm-up, throughput, latency and one sampling pass (in that
/// order, all on the same allocator instance, so later passes run on warm memory).
template <class A>
replay_result replay(const op_workload& w, const replay_options& o) {
    replay_result r;
    r.workload = w.name;
    r.memory_ops = w.memory_ops();
    r.has_footprint = has_footprint<A>;
    r.has_probe = has_probe<A>;
    r.has_usable_size = has_usable_size<A>;
    if (!A::applies(w)) {
        r.applies = false;
        return r;
    }
    auto a = std::make_unique<A>(w);
    detail::slot_table t(w.slots);
    using detail::pass;
    for (int i = 0; i < o.warmup; ++i)
        r.failed = detail::run_ops<A, pass::throughput>(*a, w, t, nullptr, nullptr, 1, nullptr, nullptr);
    for (int i = 0; i < o.repeats; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        r.failed = detail::run_ops<A, pass::throughput>(*a, w, t, nullptr, nullptr, 1, nullptr, nullptr);
        r.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    r.latency_passes = o.latency_passes;
    if (o.latency_passes > 0) {
        r.ticks_filtered.assign(r.memory_ops, std::numeric_limits<std::uint32_t>::max());
        for (int i = 0; i < o.latency_passes; ++i) {
            (void)detail::run_ops<A, pass::latency>(*a, w, t, r.ticks_filtered.data(), nullptr, 1, nullptr,
                                                    nullptr);
            if (i == 0) r.ticks_raw = r.ticks_filtered;
        }
    }
    const std::uint64_t every =
        std::max<std::uint64_t>(1, r.memory_ops / std::max<std::uint32_t>(1, o.series_points));
    r.failed = detail::run_ops<A, pass::sampling>(*a, w, t, nullptr, &r.series, every, &r.peak_footprint,
                                                  &r.peak_granted);
    return r;
}

/// One registered replay contender.
struct op_contender {
    std::string name;
    std::string description;
    std::string needs; ///< what a workload must be for `applies` (said when one is skipped)
    bool (*applies)(const op_workload&) = nullptr;
    replay_result (*run)(const op_workload&, const replay_options&) = nullptr;
};

template <class A>
op_contender make_op_contender(std::string name, std::string description, std::string needs = {}) {
    return {std::move(name), std::move(description), std::move(needs), &A::applies, &replay<A>};
}

} // namespace strata::lab
