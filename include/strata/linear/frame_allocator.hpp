#pragma once
// frame_allocator<N>: N arenas used round-robin, one per frame. Memory allocated in frame k stays
// valid through frame k+N-1 (N = 2: the renderer may read last frame's data while the game
// simulates the next one); next_frame() resets the arena about to be reused.
#include <array>
#include <cstddef>
#include <span>
#include <utility>

#include "strata/core/allocator.hpp"
#include "strata/linear/arena.hpp"

namespace strata {

/// N-buffered per-frame allocator. Not thread-safe (one per thread or job). Bad input: as arena.
template <std::size_t N>
class frame_allocator {
    static_assert(N >= 2, "a frame allocator needs at least two frames (use arena for one)");

public:
    /// Effects: N growing arenas sharing `source` (each applies `options`).
    explicit frame_allocator(source_ref source, arena_options options = {}) noexcept
        : arenas_(make(source, options, std::make_index_sequence<N>{})) {}

    /// Effects: N fixed arenas over N equal slices of `buffer` (slices are 64-byte aligned).
    explicit frame_allocator(std::span<std::byte> buffer) noexcept
        : arenas_(make(buffer, std::make_index_sequence<N>{})) {}

    /// Returns: memory valid until N-1 more next_frame() calls; nullptr as arena::allocate.
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        return arenas_[index_].allocate(size, align);
    }

    /// Effects: as arena::deallocate on the current frame's arena (undoes the latest allocation).
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        arenas_[index_].deallocate(p, size, align);
    }

    /// Effects: starts the next frame: its arena (the oldest) is reset, and every marker taken on
    /// that arena before is refused from now on, even one at position 0 (which a plain
    /// arena::reset() leaves valid): a scope must not span frames, or its rewind would free this
    /// frame's allocations. O(1) plus the reset policy.
    void next_frame() noexcept {
        index_ = (index_ + 1) % N;
        ++frame_;
        arenas_[index_].reset_for_new_frame();
    }

    /// Returns: frames started so far (0 for the first frame).
    [[nodiscard]] std::size_t frame_number() const noexcept { return frame_; }
    /// Returns: the arena serving the current frame.
    [[nodiscard]] arena& current() noexcept { return arenas_[index_]; }
    /// Returns: the arena of the frame `age` frames ago (0 = current). Requires: age < N.
    [[nodiscard]] const arena& frame(std::size_t age) const noexcept {
        return arenas_[(index_ + N - age) % N];
    }

    /// Returns: true when `p` lies in any of the N arenas (i.e. is still valid or recently freed).
    [[nodiscard]] bool owns(const void* p) const noexcept {
        for (const arena& a : arenas_) {
            if (a.owns(p)) return true;
        }
        return false;
    }

    /// Returns: the sum over the N arenas (peak: the highest sum of per-arena peaks is not tracked,
    /// so peak reports the sum of each arena's own peak, an upper bound).
    [[nodiscard]] strata::stats stats() const noexcept {
        strata::stats s;
        for (const arena& a : arenas_) {
            const strata::stats t = a.stats();
            add_counts(s, t);
        }
        s.largest_free_block = arenas_[index_].remaining();
        return s;
    }

private:
    template <std::size_t... I>
    static std::array<arena, N> make(source_ref source, const arena_options& options,
                                     std::index_sequence<I...>) {
        return {((void)I, arena(source, options))...};
    }
    template <std::size_t... I>
    static std::array<arena, N> make(std::span<std::byte> buffer, std::index_sequence<I...>) {
        return {slice(buffer, I)...};
    }
    static arena slice(std::span<std::byte> buffer, std::size_t i) noexcept {
        const std::size_t skip = align_padding(reinterpret_cast<std::uintptr_t>(buffer.data()), 64);
        const std::size_t each = buffer.size() > skip ? align_down((buffer.size() - skip) / N, 64) : 0;
        if (each == 0) return arena(std::span<std::byte>{});
        return arena(buffer.subspan(skip + i * each, each));
    }

    std::array<arena, N> arenas_;
    std::size_t index_ = 0;
    std::size_t frame_ = 0;
};

} // namespace strata
