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
//   bool check() noexcept;                     // consistency walk after every pass; false is
//                                              // counted in replay_result::check_failures
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
#include <span>
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
    std::vector<std::uint32_t> ticks_raw;      ///< the first latency pass, per memory op
    std::vector<std::uint32_t> ticks_filtered; ///< per-op minimum over every latency pass
    int latency_passes = 0;
    std::vector<memory_sample> series;
    std::uint64_t peak_footprint = 0;
    std::uint64_t peak_granted = 0;         ///< most usable bytes live at once
    std::uint64_t live_at_peak_granted = 0; ///< requested bytes live at that moment
    bool has_footprint = false, has_probe = false, has_usable_size = false;
    bool streamed = false;            ///< replay_streamed: latencies are a sample, no filtered tail
    std::uint64_t check_failures = 0; ///< passes after which the allocator's check() said false

    [[nodiscard]] double ns_per_op() const noexcept {
        if (seconds.empty() || memory_ops == 0) return 0;
        std::vector<double> s(seconds);
        std::sort(s.begin(), s.end());
        // The median (the mean of the middle two for an even count, as docs/lab.md says).
        const std::size_t n = s.size();
        const double mid = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        return mid * 1e9 / static_cast<double>(memory_ops);
    }
};

// clang-format off
template <class A> concept has_reallocate = requires(A& a, void* p, std::size_t n) { { a.reallocate(p, n, n, n) } -> std::same_as<void*>; };
template <class A> concept has_end_frame = requires(A& a) { a.end_frame(); };
template <class A> concept has_footprint = requires(const A& a) { { a.footprint() } -> std::convertible_to<std::size_t>; };
template <class A> concept has_probe = requires(const A& a) { { a.probe() } -> std::same_as<heap_probe>; };
template <class A> concept has_usable_size = requires(const A& a, const void* p) { { a.usable_size(p) } -> std::convertible_to<std::size_t>; };
template <class A> concept has_check = requires(A& a) { { a.check() } -> std::convertible_to<bool>; };
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

/// What a pass carries from one batch to the next.
struct pass_state {
    std::uint64_t failed = 0;  ///< allocations / reallocations answered nullptr
    std::uint64_t m = 0;       ///< memory ops done so far in this pass
    std::uint64_t live = 0;    ///< requested bytes live
    std::uint64_t granted = 0; ///< usable bytes live (sampling pass, when the allocator tells)
};

/// Runs the ops of one batch through a (a whole workload is one batch). Latency: ticks[k] =
/// min(ticks[k], ticks of the batch's k-th memory op). Sampling: appends to `series` every `every`
/// memory ops of the pass and after its last (`total` memory ops).
template <class A, pass P>
void run_batch(A& a, std::span<const op> ops, slot_table& t, pass_state& st, std::uint32_t* ticks,
               std::vector<memory_sample>* series, std::uint64_t every, std::uint64_t total,
               std::uint64_t* peak_fp, replay_result* peaks) {
    std::uint64_t failed = st.failed, m = st.m, live = st.live, granted = st.granted, k = 0;
    void** ptr = t.ptr.data();
    std::uint64_t* size = t.size.data();
    std::uint8_t* la = t.log2_align.data();
    for (const op& o : ops) {
        if (o.kind == op_kind::frame) {
            if constexpr (has_end_frame<A>) a.end_frame();
            continue;
        }
        std::uint64_t t0 = 0;
        if constexpr (P == pass::latency) t0 = tick_begin();
        void* p = nullptr;
        std::size_t old_usable = 0; // sampling: the reallocated block's, given back if it fails
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
                if (ptr[o.slot] != nullptr) old_usable = a.usable_size(ptr[o.slot]);
                granted -= old_usable;
            }
            p = do_reallocate(a, ptr[o.slot], size[o.slot], o.size, std::size_t{1} << la[o.slot]);
            break;
        case op_kind::frame: break;
        }
        if constexpr (P == pass::latency) {
            do_not_optimize(p);
            const std::uint64_t d = tick_end() - t0;
            ticks[k] = std::min<std::uint32_t>(ticks[k], static_cast<std::uint32_t>(std::min<std::uint64_t>(
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
                // A failed reallocate keeps the old block (as realloc does), and its granted bytes.
                granted += old_usable;
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
        ++k;
        if constexpr (P == pass::sampling) {
            if (granted > peaks->peak_granted) {
                peaks->peak_granted = granted;
                peaks->live_at_peak_granted = live;
            }
            if constexpr (has_footprint<A>) *peak_fp = std::max<std::uint64_t>(*peak_fp, a.footprint());
            if (m % every == 0 || m == total) {
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
    st.failed = failed, st.m = m, st.live = live, st.granted = granted;
}

/// Effects: releases the blocks a pass left live (untimed, so the next pass starts clean) and
/// ends the frame.
template <class A>
void release_all(A& a, slot_table& t) noexcept {
    for (std::size_t s = 0; s < t.ptr.size(); ++s) {
        if (t.ptr[s] != nullptr) a.deallocate(t.ptr[s], t.size[s], std::size_t{1} << t.log2_align[s]);
        t.ptr[s] = nullptr;
        t.size[s] = 0;
    }
    if constexpr (has_end_frame<A>) a.end_frame();
}

/// Runs every op of w through a, then releases what w left live (after the clock stops: `seconds`,
/// when given, gets the time of the ops alone, as replay_streamed counts it). Returns: allocations
/// that failed.
template <class A, pass P>
std::uint64_t run_ops(A& a, const op_workload& w, slot_table& t, std::uint32_t* ticks,
                      std::vector<memory_sample>* series, std::uint64_t every, std::uint64_t* peak_fp,
                      replay_result* peaks, double* seconds = nullptr, std::size_t timed_begin = 0,
                      std::size_t timed_end = SIZE_MAX) {
    pass_state st;
    const std::span<const op> all(w.ops);
    const std::size_t end = std::min(timed_end, all.size()), begin = std::min(timed_begin, end);
    // Ops before `begin` and from `end` on run untimed (a churn's live set, filled and drained).
    run_batch<A, P>(a, all.first(begin), t, st, ticks, series, every, w.memory_ops(), peak_fp, peaks);
    const auto t0 = std::chrono::steady_clock::now();
    run_batch<A, P>(a, all.subspan(begin, end - begin), t, st, ticks == nullptr ? nullptr : ticks + begin,
                    series, every, w.memory_ops(), peak_fp, peaks);
    if (seconds != nullptr)
        *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    run_batch<A, P>(a, all.subspan(end), t, st, ticks == nullptr ? nullptr : ticks + end, series, every,
                    w.memory_ops(), peak_fp, peaks);
    release_all(a, t);
    return st.failed;
}

/// Effects: counts a failed check() of `a` (when A has one) in r.check_failures.
template <class A>
void check_after_pass(A& a, replay_result& r) noexcept {
    if constexpr (has_check<A>) r.check_failures += a.check() ? 0 : 1;
}

/// Returns: an empty result for A on w: what A can report, and whether it applies at all.
template <class A>
replay_result result_for(const op_workload& w) {
    replay_result r;
    r.workload = w.name;
    r.memory_ops = w.memory_ops();
    r.has_footprint = has_footprint<A>;
    r.has_probe = has_probe<A>;
    r.has_usable_size = has_usable_size<A>;
    r.applies = A::applies(w);
    return r;
}

/// Keeps a uniform sample of at most `cap` values of a long stream, plus its exact maximum, so
/// percentiles of a streamed replay cost bounded memory (Vitter's algorithm R, seeded).
class tick_reservoir {
public:
    explicit tick_reservoir(std::size_t cap) : cap_(cap) { v_.reserve(std::min<std::size_t>(cap, 1 << 20)); }
    void add(std::uint32_t x) {
        ++seen_;
        max_ = std::max(max_, x);
        if (v_.size() < cap_) {
            v_.push_back(x);
        } else if (const std::uint64_t j = rng_.next() % seen_; j < cap_) {
            v_[j] = x;
        }
    }
    /// Returns: the sample, its largest element replaced by the exact maximum when it was missed.
    [[nodiscard]] std::vector<std::uint32_t> take() {
        if (!v_.empty()) {
            auto it = std::max_element(v_.begin(), v_.end());
            *it = max_;
        }
        return std::move(v_);
    }

private:
    std::size_t cap_;
    std::uint64_t seen_ = 0;
    std::uint32_t max_ = 0;
    splitmix64 rng_{0x5eed};
    std::vector<std::uint32_t> v_;
};

} // namespace detail

/// One pass over a workload too big to hold: each call of next() replaces `out` with the next
/// batch of ops; false at the end. Every pass opens a new stream.
class op_stream {
public:
    virtual ~op_stream() = default;
    virtual bool next(std::vector<op>& out) = 0;
};
using op_stream_factory = std::function<std::unique_ptr<op_stream>()>;

/// How much replaying to do.
struct replay_options {
    int warmup = 1;                    ///< untimed passes first (pre-fault memory, warm caches)
    int repeats = 3;                   ///< timed throughput passes (the median is reported)
    int latency_passes = 3;            ///< per-op timed passes; the per-op minimum is the filtered tail
    std::uint32_t series_points = 200; ///< memory samples over the workload
    std::size_t stream_sample = std::size_t{1} << 22; ///< streamed replays: latencies kept for percentiles
    bool sampling = true; ///< false: no sampling pass (no memory series, footprint or waste)
    /// Throughput passes time the ops in [timed_begin, timed_end) only (indices into the ops; held
    /// workloads): a churn's fill and drain run untimed.
    std::size_t timed_begin = 0, timed_end = SIZE_MAX;
};

/// Replays `w` through a fresh A: warm-up, throughput, latency and one sampling pass (in that
/// order, all on the same allocator instance, so later passes run on warm memory).
template <class A>
replay_result replay(const op_workload& w, const replay_options& o) {
    replay_result r = detail::result_for<A>(w);
    if (!r.applies) return r;
    auto a = std::make_unique<A>(w);
    detail::slot_table t(w.slots);
    using detail::pass;
    for (int i = 0; i < o.warmup; ++i) {
        r.failed = detail::run_ops<A, pass::throughput>(*a, w, t, nullptr, nullptr, 1, nullptr, nullptr);
        detail::check_after_pass(*a, r);
    }
    for (int i = 0; i < o.repeats; ++i) {
        double seconds = 0;
        r.failed = detail::run_ops<A, pass::throughput>(*a, w, t, nullptr, nullptr, 1, nullptr, nullptr,
                                                        &seconds, o.timed_begin, o.timed_end);
        detail::check_after_pass(*a, r);
        r.seconds.push_back(seconds);
    }
    r.latency_passes = o.latency_passes;
    if (o.latency_passes > 0) {
        r.ticks_filtered.assign(r.memory_ops, std::numeric_limits<std::uint32_t>::max());
        for (int i = 0; i < o.latency_passes; ++i) {
            (void)detail::run_ops<A, pass::latency>(*a, w, t, r.ticks_filtered.data(), nullptr, 1, nullptr,
                                                    nullptr);
            detail::check_after_pass(*a, r);
            if (i == 0) r.ticks_raw = r.ticks_filtered;
        }
    }
    if (!o.sampling) return r;
    const std::uint64_t every =
        std::max<std::uint64_t>(1, r.memory_ops / std::max<std::uint32_t>(1, o.series_points));
    r.failed = detail::run_ops<A, pass::sampling>(*a, w, t, nullptr, &r.series, every, &r.peak_footprint, &r);
    detail::check_after_pass(*a, r);
    return r;
}

/// Replays a workload that is streamed in batches (a trace too big to hold; `shape` has its
/// statistics, no ops) through a fresh A: warm-up, throughput and sampling passes as replay<A>,
/// each re-reading the stream; only the time spent in the allocator is counted. One latency pass:
/// its percentiles come from a uniform sample of `stream_sample` ops (plus the exact maximum), and
/// there is no filtered tail (that needs the per-op minimum over passes, an array per op).
template <class A>
replay_result replay_streamed(const op_workload& shape, const op_stream_factory& open,
                              const replay_options& o) {
    replay_result r = detail::result_for<A>(shape);
    r.streamed = true;
    if (!r.applies) return r;
    auto a = std::make_unique<A>(shape);
    detail::slot_table t(shape.slots);
    using detail::pass;
    std::vector<op> batch;
    const auto timed_pass = [&] {
        detail::pass_state st;
        double seconds = 0;
        for (auto in = open(); in->next(batch);) {
            const auto t0 = std::chrono::steady_clock::now();
            detail::run_batch<A, pass::throughput>(*a, batch, t, st, nullptr, nullptr, 1, r.memory_ops,
                                                   nullptr, nullptr);
            seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
        detail::release_all(*a, t);
        r.failed = st.failed;
        return seconds;
    };
    for (int i = 0; i < o.warmup; ++i)
        (void)timed_pass();
    for (int i = 0; i < std::max(1, o.repeats); ++i)
        r.seconds.push_back(timed_pass());
    if (o.latency_passes > 0) {
        r.latency_passes = 1;
        detail::tick_reservoir sample(o.stream_sample);
        std::vector<std::uint32_t> ticks;
        detail::pass_state st;
        for (auto in = open(); in->next(batch);) {
            ticks.assign(batch.size(), std::numeric_limits<std::uint32_t>::max());
            const std::uint64_t m0 = st.m;
            detail::run_batch<A, pass::latency>(*a, batch, t, st, ticks.data(), nullptr, 1, r.memory_ops,
                                                nullptr, nullptr);
            for (std::uint64_t k = 0; k < st.m - m0; ++k)
                sample.add(ticks[k]);
        }
        detail::release_all(*a, t);
        r.ticks_raw = sample.take();
    }
    const std::uint64_t every =
        std::max<std::uint64_t>(1, r.memory_ops / std::max<std::uint32_t>(1, o.series_points));
    detail::pass_state st;
    for (auto in = open(); in->next(batch);)
        detail::run_batch<A, pass::sampling>(*a, batch, t, st, nullptr, &r.series, every, r.memory_ops,
                                             &r.peak_footprint, &r);
    detail::release_all(*a, t);
    r.failed = st.failed;
    return r;
}

/// One registered replay contender.
struct op_contender {
    std::string name;
    std::string description;
    std::string needs; ///< what a workload must be for `applies` (said when one is skipped)
    bool (*applies)(const op_workload&) = nullptr;
    replay_result (*run)(const op_workload&, const replay_options&) = nullptr;
    replay_result (*run_streamed)(const op_workload&, const op_stream_factory&,
                                  const replay_options&) = nullptr;
};

template <class A>
op_contender make_op_contender(std::string name, std::string description, std::string needs = {}) {
    return {std::move(name), std::move(description), std::move(needs), &A::applies,
            &replay<A>,      &replay_streamed<A>};
}

} // namespace strata::lab
