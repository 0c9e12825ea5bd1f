#pragma once
// strata-lab contestants: the registry and the timed game loop.
//
// A contestant is a name, a description and a plain function pointer to run_game_loop<Adapter>,
// the loop instantiated for that contestant's adapter. The type erasure is that one pointer, called
// once per pass; inside the loop every allocate call is a direct (inlinable) call on the adapter.
//
// An adapter is a class with:
//   explicit Adapter(const workload& w);                 // fresh allocator, sized from w if it must be
//   void* allocate(std::size_t size, std::size_t align) noexcept;   // the call that is timed
//   void end_frame(std::span<void* const> frame) noexcept;          // release this frame's memory
//   void sample(std::span<void* const> frame) noexcept;  // untimed, latency pass only: observe memory
//                                                        // at the fullest point of each frame after
//                                                        // warm-up (warm-up frames are not sampled)
//   memory_figures memory() const noexcept;              // peaks seen by sample() (never a running
//                                                        // counter's lifetime peak: it would include
//                                                        // the warm-up frames)
//
// Header-only so tests/lab/lab_test.cpp can run every contestant without the lab's .cpp files.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "timer.hpp"
#include "workload.hpp"

namespace strata::lab {

/// Memory figures one pass observed. A figure an allocator cannot report is empty.
struct memory_figures {
    std::optional<std::size_t> used_peak; ///< most bytes the allocator counted as handed out
    std::optional<std::size_t> held_peak; ///< most bytes it held from its own upstream
    std::size_t upstream_calls = 0;       ///< calls to its upstream (pmr) or memory source, 0 if unknown
    bool held_approximate = false;        ///< held_peak is an estimate (malloc: chunk sizes)
};

/// Which measurement a pass makes.
enum class pass_kind {
    throughput, ///< the steady-state frame loop timed as a whole (steady_clock), no per-call timers
    latency,    ///< every allocate after warm-up timed alone (tick_begin/tick_end); memory sampled
};

/// What one pass over the workload produced.
struct pass_result {
    pass_kind kind = pass_kind::throughput;
    double loop_seconds = 0;                  ///< throughput: time of the frames after warm-up
    std::size_t timed_allocs = 0;             ///< allocations in the frames after warm-up
    std::size_t failed_allocs = 0;            ///< nullptr answers over all frames (not touched)
    std::vector<std::uint32_t> latency_ticks; ///< latency: raw ticks per allocate, overhead included
    memory_figures memory;                    ///< latency: peaks sampled after warm-up
};

namespace detail {

/// Writes the first and last byte, so every contestant pays for fresh pages the same way.
inline void touch(void* p, std::uint32_t size, std::size_t i) noexcept {
    auto* b = static_cast<volatile unsigned char*>(p);
    b[0] = static_cast<unsigned char>(i);
    b[size - 1] = static_cast<unsigned char>(i >> 8);
}

template <class Adapter, bool Latency>
pass_result run_frames(const workload& w) {
    pass_result r;
    r.kind = Latency ? pass_kind::latency : pass_kind::throughput;
    r.timed_allocs = w.timed_allocs;
    // Everything the loop writes is allocated before the contestant exists.
    std::vector<void*> ptrs(w.max_frame_allocs, nullptr);
    if constexpr (Latency) r.latency_ticks.assign(w.timed_allocs, 0);
    std::uint32_t* tick_out = r.latency_ticks.data();

    const auto adapter = std::make_unique<Adapter>(w);
    Adapter& a = *adapter;
    const alloc_op* ops = w.ops.data();
    const std::size_t frames = w.frames();
    const std::size_t warmup = w.warmup();
    std::size_t failed = 0;
    std::chrono::steady_clock::time_point start{};

    for (std::size_t f = 0; f < frames; ++f) {
        if (!Latency && f == warmup) start = std::chrono::steady_clock::now();
        const std::size_t begin = w.frame_begin[f];
        const std::size_t end = w.frame_begin[f + 1];
        void** out = ptrs.data();
        const bool timed = Latency && f >= warmup;
        for (std::size_t i = begin; i < end; ++i) {
            const alloc_op op = ops[i];
            void* p;
            if constexpr (Latency) {
                if (timed) {
                    const std::uint64_t t0 = tick_begin();
                    p = a.allocate(op.size, op.align);
                    do_not_optimize(p);
                    const std::uint64_t t1 = tick_end();
                    const std::uint64_t d = t1 - t0;
                    *tick_out++ = d > std::numeric_limits<std::uint32_t>::max()
                                      ? std::numeric_limits<std::uint32_t>::max()
                                      : static_cast<std::uint32_t>(d);
                } else {
                    p = a.allocate(op.size, op.align);
                }
            } else {
                p = a.allocate(op.size, op.align);
            }
            if (p != nullptr) [[likely]] {
                touch(p, op.size, i);
            } else {
                ++failed;
            }
            *out++ = p;
        }
        const std::span<void* const> frame(ptrs.data(), end - begin);
        if constexpr (Latency) {
            if (timed) a.sample(frame); // memory statistics exclude warm-up frames, as timing does
        }
        a.end_frame(frame);
    }
    if constexpr (!Latency) {
        r.loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    r.failed_allocs = failed;
    r.memory = a.memory();
    return r;
}

} // namespace detail

/// The timed game loop for one adapter: a fresh Adapter(w), every frame of `w` allocated through it
/// (each block touched), then released by end_frame. One instantiation per contestant.
template <class Adapter>
pass_result run_game_loop(const workload& w, pass_kind kind) {
    return kind == pass_kind::latency ? detail::run_frames<Adapter, true>(w)
                                      : detail::run_frames<Adapter, false>(w);
}

/// What check_game_loop found wrong (all zero: the contestant served the workload correctly).
struct check_result {
    std::size_t allocations = 0; ///< allocations made
    std::size_t null = 0;        ///< nullptr answers
    std::size_t misaligned = 0;  ///< blocks not aligned as requested
    std::size_t overlapping = 0; ///< blocks overlapping another live block of the same frame
    [[nodiscard]] bool ok() const noexcept { return null == 0 && misaligned == 0 && overlapping == 0; }
};

/// Untimed correctness replay of `w` through a fresh Adapter: every block must be non-null,
/// aligned as asked, and disjoint from the other blocks of its frame; each block is filled entirely.
template <class Adapter>
check_result check_game_loop(const workload& w) {
    check_result r;
    std::vector<void*> ptrs(w.max_frame_allocs, nullptr);
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> extents;
    const auto adapter = std::make_unique<Adapter>(w);
    for (std::size_t f = 0; f < w.frames(); ++f) {
        const std::span<const alloc_op> ops = w.frame(f);
        extents.clear();
        for (std::size_t i = 0; i < ops.size(); ++i) {
            void* p = adapter->allocate(ops[i].size, ops[i].align);
            ptrs[i] = p;
            ++r.allocations;
            if (p == nullptr) {
                ++r.null;
                continue;
            }
            const auto at = reinterpret_cast<std::uintptr_t>(p);
            if (at % ops[i].align != 0) ++r.misaligned;
            std::fill_n(static_cast<unsigned char*>(p), ops[i].size, static_cast<unsigned char>(i));
            extents.emplace_back(at, at + ops[i].size);
        }
        std::sort(extents.begin(), extents.end());
        for (std::size_t i = 1; i < extents.size(); ++i) {
            if (extents[i].first < extents[i - 1].second) ++r.overlapping;
        }
        const std::span<void* const> frame(ptrs.data(), ops.size());
        adapter->sample(frame);
        adapter->end_frame(frame);
    }
    return r;
}

/// One registered allocator.
struct contestant {
    std::string name;                                         ///< short, shell-friendly: what --only matches
    std::string description;                                  ///< one line for --list and the JSON report
    pass_result (*run)(const workload&, pass_kind) = nullptr; ///< run_game_loop<Adapter>
    check_result (*check)(const workload&) = nullptr;         ///< check_game_loop<Adapter>
};

/// Returns: the contestant for `Adapter`.
template <class Adapter>
contestant make_contestant(std::string name, std::string description) {
    return {std::move(name), std::move(description), &run_game_loop<Adapter>, &check_game_loop<Adapter>};
}

/// Returns: true when `name` matches `pattern`, where '*' matches any run of characters and '?'
/// any one character; without wildcards this is plain equality.
[[nodiscard]] inline bool glob_match(std::string_view pattern, std::string_view name) noexcept {
    std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
    while (n < name.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p;
            ++n;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = n;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            n = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*')
        ++p;
    return p == pattern.size();
}

/// An ordered list of contestants. Reports list them in registration order.
class registry {
public:
    /// Effects: appends `c`. Returns: *this. Throws std::invalid_argument on a duplicate or empty name.
    registry& add(contestant c) {
        if (c.name.empty() || c.run == nullptr)
            throw std::invalid_argument("contestant needs a name and a runner");
        if (find(c.name) != nullptr) throw std::invalid_argument("duplicate contestant '" + c.name + "'");
        items_.push_back(std::move(c));
        return *this;
    }

    /// Returns: the contestant named exactly `name`, or nullptr.
    [[nodiscard]] const contestant* find(std::string_view name) const noexcept {
        for (const contestant& c : items_) {
            if (c.name == name) return &c;
        }
        return nullptr;
    }

    /// Returns: the contestants matching any of `patterns` (see glob_match), in registration order;
    /// all of them when `patterns` is empty. Each pattern that matches nothing is appended to
    /// `unmatched` (when given).
    [[nodiscard]] std::vector<const contestant*> select(std::span<const std::string> patterns,
                                                        std::vector<std::string>* unmatched = nullptr) const {
        std::vector<const contestant*> out;
        std::vector<bool> hit(patterns.size(), false);
        for (const contestant& c : items_) {
            bool chosen = patterns.empty();
            for (std::size_t i = 0; i < patterns.size(); ++i) {
                if (glob_match(patterns[i], c.name)) {
                    chosen = true;
                    hit[i] = true;
                }
            }
            if (chosen) out.push_back(&c);
        }
        if (unmatched) {
            for (std::size_t i = 0; i < patterns.size(); ++i) {
                if (!hit[i]) unmatched->push_back(patterns[i]);
            }
        }
        return out;
    }

    [[nodiscard]] std::span<const contestant> all() const noexcept { return items_; }
    [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }

private:
    std::vector<contestant> items_;
};

} // namespace strata::lab
