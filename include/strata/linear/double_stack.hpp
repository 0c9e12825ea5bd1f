#pragma once
// double_stack: two bump stacks in one block, the bottom growing up and the top growing down.
// Typical split: level data (long-lived) at the bottom, load-time scratch at the top.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/config.hpp"
#include "strata/core/poison.hpp"
#include "strata/core/stats.hpp"
#include "strata/linear/detail/rewind_history.hpp"

namespace strata {

/// Which end of a double_stack.
enum class stack_end { bottom, top };

/// Two stacks over one caller-owned buffer. No per-allocation header. Not thread-safe.
///
/// Bad input answers: size 0, non-power-of-two alignment, overflow, and the two stacks meeting all
/// give nullptr with no state change. A marker from another double_stack, from the other end, or
/// stale (its end's top is below it, or went below it since it was taken, as `arena` describes)
/// is a violation (invalid_marker): reported at checks >= 1, ignored.
class double_stack {
public:
    /// A saved position of one end; `rewind(m)` frees what that end allocated after it.
    struct marker {
        const double_stack* owner = nullptr;
        stack_end end = stack_end::bottom;
        std::size_t offset = 0; // bottom: bytes used from the start; top: bytes used from the end
        std::size_t count = 0;
        std::uint64_t epoch = 0; // lowerings of its end's top before it (detail::rewind_history)
    };

    /// Requires: `buffer` outlives the allocator.
    explicit double_stack(std::span<std::byte> buffer) noexcept
        : base_(buffer.data()), lo_(buffer.data()), hi_(buffer.data() + buffer.size()),
          end_(buffer.data() + buffer.size()) {
        poison(base_, buffer.size());
    }
    double_stack(const double_stack&) = delete;
    double_stack& operator=(const double_stack&) = delete;
    /// Effects: hands the buffer back to the caller usable (unpoisoned for ASan).
    ~double_stack() { unpoison(base_, capacity()); }

    /// Returns: `size` bytes at the bottom, aligned to `align`, or nullptr. O(1).
    [[nodiscard]] void* allocate_bottom(std::size_t size, std::size_t align = default_alignment) noexcept {
        const std::size_t pad = align_padding(reinterpret_cast<std::uintptr_t>(lo_), align);
        const auto avail = static_cast<std::size_t>(hi_ - lo_);
        if (STRATA_UNLIKELY(!is_pow2(align) || pad > avail || size - 1 >= avail - pad)) return nullptr;
        std::byte* p = lo_ + pad;
        lo_ = p + size;
        ++bottom_count_;
        return claim(p, size);
    }

    /// Returns: `size` bytes at the top, aligned to `align`, or nullptr. O(1).
    [[nodiscard]] void* allocate_top(std::size_t size, std::size_t align = default_alignment) noexcept {
        const auto avail = static_cast<std::size_t>(hi_ - lo_);
        if (STRATA_UNLIKELY(!is_pow2(align) || size - 1 >= avail)) return nullptr;
        const std::uintptr_t want = reinterpret_cast<std::uintptr_t>(hi_) - size;
        const std::size_t pad = static_cast<std::size_t>(want & (align - 1));
        if (STRATA_UNLIKELY(pad > avail - size)) return nullptr;
        hi_ -= size + pad;
        ++top_count_;
        return claim(hi_, size);
    }

    /// Returns: allocate_bottom(size, align): the contract's allocate serves the bottom stack.
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        return allocate_bottom(size, align);
    }

    /// Effects: when `p` ends where the bottom's free space starts (`p + size`), or starts where
    /// the top's used space starts, gives its bytes back; otherwise nothing (release by marker or
    /// reset; size 0 names no allocation). O(1). No header records the alignment padding, so a
    /// block's padding (below it at the bottom, above it at the top) stays used after its free,
    /// and the block allocated before a padded one then no longer touches the free space: its free
    /// changes nothing. Nested scopes freed in reverse therefore belong to markers (or to
    /// `stack_allocator`, whose header makes LIFO free exact).
    void deallocate(void* p, std::size_t size, std::size_t /*align*/ = default_alignment) noexcept {
        auto* b = static_cast<std::byte*>(p);
        if (p == nullptr || size == 0 || !owns(p)) return;
        if (b + size == lo_) {
            release_bytes(b, size);
            lo_ = b;
            --bottom_count_;
            if constexpr (checks_level >= 1) bottom_history_.lowered(used_bottom());
        } else if (b == hi_ && size <= static_cast<std::size_t>(end_ - hi_)) {
            // The top end's padding sits above the block; it is recovered at the next rewind/reset.
            release_bytes(b, size);
            hi_ = b + size;
            --top_count_;
            if constexpr (checks_level >= 1) top_history_.lowered(used_top());
        }
    }

    /// Returns: a marker for the given end's current position. O(1).
    [[nodiscard]] marker mark(stack_end e) const noexcept {
        return e == stack_end::bottom ? marker{this, e, used_bottom(), bottom_count_, bottom_history_.epoch()}
                                      : marker{this, e, used_top(), top_count_, top_history_.epoch()};
    }
    /// Returns: mark(stack_end::bottom) (what `scope` uses).
    [[nodiscard]] marker mark() const noexcept { return mark(stack_end::bottom); }
    /// Returns: mark(stack_end::bottom).
    [[nodiscard]] marker mark_bottom() const noexcept { return mark(stack_end::bottom); }
    /// Returns: mark(stack_end::top).
    [[nodiscard]] marker mark_top() const noexcept { return mark(stack_end::top); }

    /// Effects: frees everything allocated at the marker's end after the marker. O(1). Frees of a
    /// top block are recorded for staleness at checks >= 1 only (see `arena::rewind`).
    void rewind(const marker& m) noexcept;
    /// Effects: rewind(m); a top marker is a violation (invalid_marker): reported at checks >= 1,
    /// ignored.
    void rewind_bottom(const marker& m) noexcept { rewind_checked(m, stack_end::bottom); }
    /// Effects: rewind(m); a bottom marker is a violation (invalid_marker): reported at checks >= 1,
    /// ignored.
    void rewind_top(const marker& m) noexcept { rewind_checked(m, stack_end::top); }

    /// Effects: frees everything at the bottom. Bottom markers above 0 go stale; one at 0 stays
    /// valid (rewinding to it is this reset). O(1).
    void reset_bottom() noexcept { rewind(marker{this, stack_end::bottom, 0, 0, bottom_history_.epoch()}); }
    /// Effects: as reset_bottom(), for the top end.
    void reset_top() noexcept { rewind(marker{this, stack_end::top, 0, 0, top_history_.epoch()}); }
    /// Effects: frees both ends.
    void reset() noexcept {
        reset_bottom();
        reset_top();
    }

    /// Returns: true when `p` points into the buffer (either end, or the free middle).
    [[nodiscard]] bool owns(const void* p) const noexcept {
        auto* b = static_cast<const std::byte*>(p);
        return std::less_equal<>{}(base_, b) && std::less<>{}(b, end_);
    }

    /// Returns: bytes used at the bottom, alignment padding included.
    [[nodiscard]] std::size_t used_bottom() const noexcept { return static_cast<std::size_t>(lo_ - base_); }
    /// Returns: bytes used at the top, alignment padding included.
    [[nodiscard]] std::size_t used_top() const noexcept { return static_cast<std::size_t>(end_ - hi_); }
    /// Returns: free bytes between the two ends.
    [[nodiscard]] std::size_t remaining() const noexcept { return static_cast<std::size_t>(hi_ - lo_); }
    /// Returns: the buffer's size.
    [[nodiscard]] std::size_t capacity() const noexcept { return static_cast<std::size_t>(end_ - base_); }

    /// Returns: in_use = both ends, peak of that, capacity, live allocations of both ends,
    /// largest_free_block = remaining().
    [[nodiscard]] strata::stats stats() const noexcept {
        strata::stats s;
        s.in_use = used_bottom() + used_top();
        s.peak = peak_ > s.in_use ? peak_ : s.in_use;
        s.capacity = capacity();
        s.live_allocations = bottom_count_ + top_count_;
        s.total_allocations = total_;
        s.largest_free_block = remaining();
        return s;
    }

    /// Effects: visits the bottom's used extent, the free middle, and the top's used extent.
    template <class Visitor>
    void for_each_block(Visitor&& visit) const {
        if (used_bottom()) visit(block_info{0, used_bottom(), true});
        if (remaining()) visit(block_info{used_bottom(), remaining(), false});
        if (used_top()) visit(block_info{capacity() - used_top(), used_top(), true});
    }

private:
    void* claim(std::byte* p, std::size_t size) noexcept {
        ++total_;
        const std::size_t u = used_bottom() + used_top();
        if (u > peak_) peak_ = u;
        acquire_bytes(p, size);
        return p;
    }
    void rewind_checked(const marker& m, stack_end expected) noexcept;

    std::byte* base_;
    std::byte* lo_; // bottom top: first free byte
    std::byte* hi_; // top top: first used byte of the top stack
    std::byte* end_;
    std::size_t bottom_count_ = 0;
    std::size_t top_count_ = 0;
    std::size_t total_ = 0;
    std::size_t peak_ = 0;
    detail::rewind_history bottom_history_;
    detail::rewind_history top_history_;
};

} // namespace strata
