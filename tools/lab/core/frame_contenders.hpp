#pragma once
// strata-lab frame contenders: the allocators a game gives one frame's scratch memory. Each applies
// to frame-scoped workloads (every block dies in the frame it was born in, as in frame_scratch):
// frees are no-ops and end_frame() drops the frame. slab_classes frees each block to its class.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <mutex>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/adapt/debug.hpp"
#include "strata/adapt/locked.hpp"
#include "strata/adapt/tracked.hpp"
#include "strata/core/stats.hpp"
#include "strata/linear/arena.hpp"
#include "strata/linear/double_stack.hpp"
#include "strata/linear/frame_allocator.hpp"
#include "strata/slab/slab_cache.hpp"
#include "strata/source/heap_source.hpp"

#include "counting_resource.hpp"
#include "replay.hpp"

namespace strata::lab {

/// Bytes a bump allocator over a fixed buffer needs for `w`: the peak live bytes plus the worst
/// alignment padding of every live block, and a page to spare.
[[nodiscard]] inline std::size_t frame_buffer_bytes(const op_workload& w) noexcept {
    return w.peak_live_bytes + w.peak_live_blocks * (w.max_align - 1) + 4096;
}

/// std::pmr::monotonic_buffer_resource over a counting new/delete upstream; release() each frame,
/// which hands every chunk back upstream.
class pmr_monotonic_replay : public pmr_replay<std::pmr::monotonic_buffer_resource> {
public:
    static bool applies(const op_workload& w) noexcept { return w.frame_scoped; }
    explicit pmr_monotonic_replay(const op_workload&) {}
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    void end_frame() noexcept { resource_.release(); }
};

/// An arena-like allocator A (arena, debug<arena>, locked<arena>, frame_allocator<2>) growing from
/// a heap_source; `Reset` drops a frame (reset(), or next_frame() for frame_allocator).
template <class A, void (*Reset)(A&)>
class source_frame_replay {
public:
    static bool applies(const op_workload& w) noexcept { return w.frame_scoped; }
    explicit source_frame_replay(const op_workload&) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return a_.allocate(size, align); }
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    void end_frame() noexcept { Reset(a_); }
    [[nodiscard]] std::size_t footprint() const noexcept { return a_.stats().capacity; }

private:
    heap_source source_;
    A a_{source_};
};

template <class A>
void reset_of(A& a) noexcept {
    a.reset();
}
inline void next_frame_of(frame_allocator<2>& f) noexcept { f.next_frame(); }

using debug_arena_replay = source_frame_replay<debug<arena>, &reset_of<debug<arena>>>;
using locked_arena_replay = source_frame_replay<locked<arena>, &reset_of<locked<arena>>>;
using frame2_replay = source_frame_replay<frame_allocator<2>, &next_frame_of>;

/// tracked<arena> from a heap_source, counting on a tracker; reset() and reset_frame() each frame.
class tracked_arena_replay {
public:
    static bool applies(const op_workload& w) noexcept { return w.frame_scoped; }
    explicit tracked_arena_replay(const op_workload&) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return arena_.allocate(size, align); }
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    void end_frame() noexcept {
        arena_.reset();
        frame_.reset_frame();
    }
    [[nodiscard]] std::size_t footprint() const noexcept { return arena_.stats().capacity; }

private:
    heap_source source_;
    tracker frame_{"frame"};
    tracked<arena> arena_{frame_, source_};
};

/// A bump allocator B (arena, double_stack: its allocate serves the bottom end) over one buffer of
/// frame_buffer_bytes(w); reset() each frame. Footprint: the buffer.
template <class B>
class buffer_frame_replay {
public:
    static bool applies(const op_workload& w) noexcept { return w.frame_scoped; }
    explicit buffer_frame_replay(const op_workload& w)
        : buffer_(frame_buffer_bytes(w)), b_(std::span<std::byte>(buffer_.data(), buffer_.size())) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return b_.allocate(size, align); }
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    void end_frame() noexcept { b_.reset(); }
    [[nodiscard]] std::size_t footprint() const noexcept { return buffer_.size(); }

private:
    std::vector<std::byte> buffer_;
    B b_;
};

/// Seven strata::slab_caches of 64-byte-aligned blocks, 64 B to 4 KiB in powers of two: a request
/// takes the class of max(size, 64) rounded up to a power of two, so every alignment up to 64 holds.
class slab_classes_replay {
public:
    static bool applies(const op_workload& w) noexcept { return w.max_size <= 4096 && w.max_align <= 64; }
    explicit slab_classes_replay(const op_workload&) {}
    void* allocate(std::size_t size, std::size_t) noexcept {
        void* p = nullptr;
        with_class(size, [&](auto& c) { p = c.allocate(); });
        return p;
    }
    void deallocate(void* p, std::size_t size, std::size_t) noexcept {
        with_class(size, [&](auto& c) {
            c.deallocate(static_cast<typename std::decay_t<decltype(c)>::value_type*>(p));
        });
    }
    [[nodiscard]] std::size_t footprint() const noexcept {
        return std::apply([](const auto&... c) { return (c.stats().capacity + ...); }, classes_);
    }

private:
    template <std::size_t N>
    struct alignas(64) block {
        std::byte bytes[N];
    };
    /// Calls f with the cache of `size`'s class.
    template <class F>
    void with_class(std::size_t size, F&& f) noexcept {
        const std::size_t k = size <= 64 ? 0 : static_cast<std::size_t>(std::bit_width(size - 1)) - 6;
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (void)((k == K && (f(std::get<K>(classes_)), true)) || ...);
        }
        (std::make_index_sequence<7>{});
    }
    heap_source source_;
    std::tuple<slab_cache<block<64>>, slab_cache<block<128>>, slab_cache<block<256>>, slab_cache<block<512>>,
               slab_cache<block<1024>>, slab_cache<block<2048>>, slab_cache<block<4096>>>
        classes_{source_, source_, source_, source_, source_, source_, source_};
};

} // namespace strata::lab
