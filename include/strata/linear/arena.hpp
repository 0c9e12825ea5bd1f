#pragma once
// arena: a bump allocator. Allocation moves one pointer; everything is released at once by
// reset() or back to a marker by rewind(). Optionally grows by chaining blocks from a memory source.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/config.hpp"
#include "strata/core/poison.hpp"
#include "strata/core/stats.hpp"
#include "strata/linear/detail/rewind_history.hpp"
#include "strata/source/memory_source.hpp"

namespace strata {

/// What reset() does with blocks the arena obtained from its source.
enum class arena_reset {
    keep_blocks,   ///< keep every block for reuse: steady-state frames never call the source
    release_extra, ///< return the source blocks: all of them when there is an initial buffer, else all
                   ///< but the largest (which the next frame starts in)
};

/// Growth settings for an arena that owns a memory source.
///
/// Growth policy: the size asked for doubles after each block, up to max_block_size; a request
/// larger than that size gets a block of its own size. When the source refuses the size, the arena
/// asks once more for only what the request needs; if that is granted, the size asked for next
/// halves instead of doubling (not below 256 bytes): after a passing refusal growth resumes one
/// step lower, and a source that stays short is asked for smaller and smaller blocks. When both
/// calls are refused, allocate() returns nullptr and nothing changes.
struct arena_options {
    /// First block requested from the source (at least 256 bytes are asked for).
    std::size_t block_size = std::size_t{64} << 10;
    /// Geometric growth (x2) stops here; a larger block_size is used as the cap instead.
    std::size_t max_block_size = std::size_t{64} << 20;
    /// Total bytes of blocks held from the source, never exceeded (near it, a growth step asks for
    /// only what the request needs).
    std::size_t max_capacity = std::numeric_limits<std::size_t>::max();
    /// What reset() does with blocks from the source.
    arena_reset on_reset = arena_reset::keep_blocks;
};

/// A bump (linear) allocator.
///
/// Hot path: one aligned bump and a bounds check, inline. Blocks from the source carry a 48-byte
/// header at their front; the caller's initial buffer carries none. Not thread-safe: one arena per
/// job or per thread. Bad input answers (all `nullptr` with no state change): size 0, a
/// non-power-of-two alignment, a size that does not fit even in a fresh block.
class arena {
    struct block_header;

public:
    /// A saved position. Valid for `rewind()` while everything it marks is still allocated.
    struct marker {
        const arena* owner = nullptr;
        block_header* block = nullptr; // nullptr: the initial buffer (or nothing yet)
        std::byte* cur = nullptr;
        std::size_t position = 0; // in_use() when marked
        std::size_t count = 0;    // live_allocations when marked
        std::uint64_t epoch = 0;  // lowerings of the top before it (detail::rewind_history)
    };

    /// Effects: an arena over `buffer` that never grows. Requires: `buffer` outlives the arena.
    explicit arena(std::span<std::byte> buffer) noexcept : arena(buffer, source_ref{}, arena_options{}) {}

    /// Effects: an arena that takes blocks from `source` as it fills (the first on first use).
    explicit arena(source_ref source, arena_options options = {}) noexcept : arena({}, source, options) {}

    /// Effects: an arena that uses `buffer` first, then grows from `source` (may be empty).
    arena(std::span<std::byte> buffer, source_ref source, arena_options options) noexcept;

    /// Effects: takes over `other`'s buffer, blocks, statistics and markers (a marker names the
    /// arena it was taken from, so markers of `other` are refused here). `other` is left as
    /// `arena(source, options)` would be, keeping its source and options: it can grow again.
    /// Markers taken from `other` before the move are refused by it from now on, even one at
    /// position 0, so a scope left open across the move cannot free what `other` serves later.
    arena(arena&& other) noexcept;
    /// Effects: returns this arena's blocks to its source, then as the move constructor. Markers
    /// taken from this arena before are refused from now on, whatever their position: they name
    /// the memory it managed then.
    arena& operator=(arena&& other) noexcept;
    arena(const arena&) = delete;
    arena& operator=(const arena&) = delete;

    /// Effects: returns every block to the source. Outstanding pointers and markers dangle.
    ~arena();

    /// Returns: `size` bytes aligned to `align` (any power of two), or nullptr when the request is
    /// invalid (size 0, align not a power of two, overflow) or the arena cannot grow enough.
    /// Complexity: O(1); a growth step calls the source at most twice (the next block size, then,
    /// when that is refused, only what the request needs; see arena_options).
    [[nodiscard]] STRATA_ALWAYS_INLINE void* allocate(std::size_t size,
                                                      std::size_t align = default_alignment) noexcept {
        // Round the address up directly: one op shorter on the cur_ dependency chain than adding
        // a computed padding. align 0 rounds to 0 (< cur), wrap-arounds fail the ordered compares.
        const auto cur = reinterpret_cast<std::uintptr_t>(cur_);
        const std::uintptr_t aligned = (cur + (align - 1)) & ~(align - 1);
        const std::uintptr_t top = aligned + size;
        if (STRATA_LIKELY((align & (align - 1)) == 0 && aligned >= cur && top > aligned &&
                          top <= reinterpret_cast<std::uintptr_t>(end_))) {
            auto* p = reinterpret_cast<std::byte*>(aligned);
            cur_ = reinterpret_cast<std::byte*>(top);
            ++count_;
            acquire_bytes(p, size);
            return p;
        }
        return allocate_slow(size, align);
    }

    /// Effects: when `p` is the most recent allocation (p + size is the top), gives its bytes back;
    /// otherwise nothing (an arena frees in bulk; size 0 names no allocation). Complexity: O(1).
    void deallocate(void* p, std::size_t size, std::size_t /*align*/ = default_alignment) noexcept {
        auto* b = static_cast<std::byte*>(p);
        if (p != nullptr && size != 0 && b + size == cur_ && b >= block_begin()) {
            note_peak();
            release_bytes(b, size);
            cur_ = b;
            --count_;
            ++total_;
            // An emptied chained block starts where the previous block stopped, the same position:
            // go back there, so each position names one place (a marker at the empty block's start
            // stays valid after a rewind takes the arena off that block).
            if (STRATA_UNLIKELY(head_ != nullptr && b == reinterpret_cast<std::byte*>(head_ + 1)))
                leave_empty_block();
            // Markers taken above b are stale now. Recording it is the checked builds' price.
            if constexpr (checks_level >= 1) history_.lowered(in_use());
        }
    }

    /// Returns: a marker for the current top. Complexity: O(1).
    [[nodiscard]] marker mark() const noexcept {
        return {this, head_, cur_, in_use(), count_, history_.epoch()};
    }

    /// Effects: releases everything allocated after `m`. Blocks obtained after `m` are kept for
    /// reuse. A stale marker is a violation (invalid_marker), reported at checks >= 1 and ignored:
    /// one from another arena, one above the current top, or one the top went below since it was
    /// taken (a rewind to an older marker, a reset, or a free of the top block) even when later
    /// allocations have lifted the top above it again, and any marker taken before this arena was
    /// move-assigned, moved from, or reused for a new frame by a frame_allocator, even one at
    /// position 0. A marker at position 0 stays valid through reset() and rewinds: rewinding to it
    /// is a reset, so one taken once may end every iteration. Frees of the top block are recorded at
    /// checks >= 1 only, so at checks 0 a marker made stale by such a free is undefined. The
    /// record holds `detail::rewind_history::depth` lowerings and keeps the lowest (a reset) when
    /// full: past that a stale marker may go unnoticed (never one from before a move or a new
    /// frame); a valid one is never refused. Complexity: O(blocks after the marker).
    void rewind(const marker& m) noexcept;

    /// Effects: releases every allocation; applies `options.on_reset` to source blocks. Markers
    /// above position 0 go stale; one at 0 stays valid (see rewind()).
    void reset() noexcept;

    /// Returns: true when `p` lies in a block this arena is using now. Complexity: O(blocks).
    [[nodiscard]] bool owns(const void* p) const noexcept;

    /// Returns: bytes handed out, their alignment padding included. The unused tail of a block the
    /// arena moved on from and block headers are not counted: they show in capacity() - in_use().
    [[nodiscard]] std::size_t in_use() const noexcept {
        return used_before_ + static_cast<std::size_t>(cur_ - block_begin());
    }
    /// Returns: bytes left in the current block (what allocate can serve without growing).
    [[nodiscard]] std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - cur_); }
    /// Returns: total bytes of the initial buffer and of every block held (in use or kept).
    [[nodiscard]] std::size_t capacity() const noexcept;
    /// Returns: number of blocks held from the source (in use or kept for reuse).
    [[nodiscard]] std::size_t block_count() const noexcept { return chain_blocks_ + spare_blocks_; }

    /// Returns: in_use, peak, capacity, live_allocations (allocations since the last reset or
    /// rewind, less undone ones), total_allocations, largest_free_block (= remaining()).
    [[nodiscard]] strata::stats stats() const noexcept;

    /// Effects: calls `visit(block_info)` for each used and free extent, oldest block first;
    /// offsets count bytes from the start of the first block across the chain.
    template <class Visitor>
    void for_each_block(Visitor&& visit) const {
        std::size_t offset = 0; // running, so extents of chained blocks never overlap
        walk_chain(head_, [&](std::byte* begin, std::byte* top, std::byte* end, std::size_t) {
            const auto used = static_cast<std::size_t>(top - begin);
            if (used) visit(block_info{offset, used, true});
            if (end > top) visit(block_info{offset + used, static_cast<std::size_t>(end - top), false});
            offset += static_cast<std::size_t>(end - begin);
        });
    }

private:
    // Reuses an arena for a new frame: resets it and refuses every earlier marker (scopes must not
    // span frames), which reset() alone does not do for one at position 0.
    template <std::size_t N>
    friend class frame_allocator;
    void reset_for_new_frame() noexcept {
        reset();
        history_.forget_markers();
    }

    struct alignas(16) block_header {
        block_header* prev;      // older block in the chain (nullptr: the initial buffer is next)
        memory_block block;      // as the source returned it
        std::size_t used_before; // in_use() when this block became current
        std::byte* top;          // cur_ when the arena moved on to a newer block
    };

    [[nodiscard]] void* allocate_slow(std::size_t size, std::size_t align) noexcept;
    [[nodiscard]] std::byte* block_begin() const noexcept {
        return head_ ? reinterpret_cast<std::byte*>(head_ + 1) : buffer_begin_;
    }
    void note_peak() noexcept {
        const std::size_t u = in_use();
        if (u > peak_) peak_ = u;
    }
    void pop_to(block_header* target) noexcept;
    void leave_empty_block() noexcept;
    void release_block(block_header* h) noexcept;

    // Visits blocks oldest first: f(begin, top, end, used_before).
    template <class F>
    void walk_chain(block_header* h, F&& f) const {
        if (h == nullptr) {
            if (buffer_begin_) f(buffer_begin_, head_ ? buffer_top_ : cur_, buffer_end_, std::size_t{0});
            return;
        }
        walk_chain(h->prev, f);
        auto* begin = reinterpret_cast<std::byte*>(h + 1);
        f(begin, h == head_ ? cur_ : h->top, h->block.end(), h->used_before);
    }

    // Hot state first, on one cache line.
    std::byte* cur_ = nullptr;
    std::byte* end_ = nullptr;
    std::size_t count_ = 0;
    block_header* head_ = nullptr; // current source block, nullptr while in the initial buffer
    std::size_t used_before_ = 0;

    std::byte* buffer_begin_ = nullptr;
    std::byte* buffer_end_ = nullptr;
    std::byte* buffer_top_ = nullptr; // cur_ when the arena left the initial buffer
    block_header* spare_ = nullptr;   // kept blocks, linked through prev
    std::size_t chain_blocks_ = 0;
    std::size_t spare_blocks_ = 0;
    std::size_t chain_bytes_ = 0; // bytes of source blocks held (chain + spare)
    std::size_t peak_ = 0;
    std::size_t total_ = 0; // allocations counted before the last reset/rewind
    std::size_t next_block_size_ = 0;
    source_ref source_;
    arena_options options_;
    detail::rewind_history history_; // how far the top went down since each marker
};

/// RAII marker: rewinds `a` to where it stood when the scope began. Works with any allocator that
/// has mark()/rewind(): arena, stack_allocator, double_stack (bottom).
template <class A>
class scope {
public:
    /// Effects: marks `a`'s current top. Requires: `a` outlives the scope.
    explicit scope(A& a) noexcept : alloc_(a), marker_(a.mark()) {}
    /// Effects: rewinds to the mark; a stale mark (e.g. the arena was move-assigned or reused for
    /// a new frame meanwhile) is refused as A::rewind describes.
    ~scope() { alloc_.rewind(marker_); }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

    /// Returns: the allocator the scope rewinds.
    [[nodiscard]] A& get() const noexcept { return alloc_; }

private:
    A& alloc_;
    decltype(std::declval<A&>().mark()) marker_;
};

/// The scope most code wants: `strata::arena_scope s(frame_arena);`.
using arena_scope = scope<arena>;

} // namespace strata
