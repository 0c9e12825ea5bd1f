#pragma once
// stack_allocator: a bump allocator that can also free its most recent allocation (LIFO), with
// markers for scopes. Each allocation carries a 16-byte header that remembers the previous top.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/config.hpp"
#include "strata/core/poison.hpp"
#include "strata/core/stats.hpp"
#include "strata/linear/detail/rewind_history.hpp"

namespace strata {

/// A LIFO allocator over a caller-owned buffer. Not thread-safe.
///
/// Bad input answers: size 0, non-power-of-two alignment, overflow, exhaustion: nullptr, no state
/// change. Freeing anything but the most recent live allocation (out of order, twice, or a foreign
/// pointer) is a violation: reported at checks >= 1 (kind out_of_order_free, double_free or
/// foreign_pointer) and ignored at every level, so the stack is never corrupted.
class stack_allocator {
public:
    /// A saved top; `rewind(m)` frees everything allocated after it.
    struct marker {
        const stack_allocator* owner = nullptr;
        std::size_t top = 0;     // offset of the first free byte
        std::size_t last = 0;    // offset of the most recent allocation + 1 (0: none)
        std::size_t count = 0;   // live allocations
        std::uint64_t epoch = 0; // rewinds before it (detail::rewind_history)
    };

    /// Bytes of bookkeeping in front of every allocation.
    static constexpr std::size_t header_size = 16;

    /// Requires: `buffer` outlives the allocator.
    explicit stack_allocator(std::span<std::byte> buffer) noexcept
        : base_(buffer.data()), cur_(buffer.data()), end_(buffer.data() + buffer.size()) {
        poison(base_, buffer.size());
    }
    stack_allocator(const stack_allocator&) = delete;
    stack_allocator& operator=(const stack_allocator&) = delete;
    /// Effects: hands the buffer back to the caller usable (unpoisoned for ASan).
    ~stack_allocator() { unpoison(base_, static_cast<std::size_t>(end_ - base_)); }

    /// Returns: `size` bytes aligned to `align`, or nullptr (invalid request or full). O(1).
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        const auto hdr = reinterpret_cast<std::uintptr_t>(cur_) + header_size;
        const std::size_t pad = header_size + align_padding(hdr, align);
        const auto avail = static_cast<std::size_t>(end_ - cur_);
        if (STRATA_UNLIKELY(!is_pow2(align) || pad > avail || size - 1 >= avail - pad)) return nullptr;
        std::byte* p = cur_ + pad;
        unpoison(p - header_size, header_size);
        // memcpy: with alignments below 8 the header may sit at an unaligned address.
        const header h{static_cast<std::size_t>(cur_ - base_), last_};
        std::memcpy(p - header_size, &h, header_size);
        last_ = static_cast<std::size_t>(p - base_) + 1;
        cur_ = p + size;
        ++count_;
        ++total_;
        if (in_use() > peak_) peak_ = in_use();
        acquire_bytes(p, size);
        return p;
    }

    /// Effects: frees `p`, which must be the most recent live allocation (see class comment).
    void deallocate(void* p) noexcept {
        auto* b = static_cast<std::byte*>(p);
        if (STRATA_UNLIKELY(p == nullptr || last_ == 0 || b != base_ + (last_ - 1))) {
            report_bad_free(p);
            return;
        }
        const header h = read_header(b);
        std::byte* top = base_ + h.prev_top;
        last_ = h.prev_last;
        release_bytes(top, static_cast<std::size_t>(cur_ - top));
        cur_ = top;
        --count_;
        // Markers taken above the freed block are stale now. on_chain() alone passes one when an
        // allocation of the same size and alignment took the block's place again.
        if constexpr (checks_level >= 1) history_.lowered(in_use());
    }

    /// As deallocate(p); the size and alignment are not needed (the header knows).
    void deallocate(void* p, std::size_t /*size*/, std::size_t /*align*/) noexcept { deallocate(p); }

    /// Returns: a marker for the current top. O(1).
    [[nodiscard]] marker mark() const noexcept {
        return {this, static_cast<std::size_t>(cur_ - base_), last_, count_, history_.epoch()};
    }

    /// Effects: frees everything allocated after `m`. A marker from another allocator or above the
    /// current top is a violation (invalid_marker): reported at checks >= 1, ignored always. A
    /// marker rewound past and left below the top again by later allocations is one too: at checks
    /// >= 1 it is found (the marker's last allocation is not on the live chain, O(live)) and
    /// ignored; at checks 0 it is ignored when a rewind or reset went below it (as in `arena`),
    /// undefined when a free did. O(1) at checks 0.
    void rewind(const marker& m) noexcept;

    /// Effects: frees everything. Markers above the base go stale; one at the base stays valid
    /// (rewinding to it is a reset). O(1), at every checks level: a reset is always valid, so
    /// unlike rewind() it does not walk the live chain at checks >= 1. Releasing the bytes is
    /// O(used bytes) at checks >= 2 (the 0xDD fill) and under ASan (poisoning).
    void reset() noexcept {
        release_bytes(base_, in_use());
        cur_ = base_;
        last_ = 0;
        count_ = 0;
        history_.lowered(0);
    }

    /// Returns: true when `p` points into the buffer.
    [[nodiscard]] bool owns(const void* p) const noexcept {
        auto* b = static_cast<const std::byte*>(p);
        return std::less_equal<>{}(base_, b) && std::less<>{}(b, end_);
    }

    /// Returns: bytes from the base to the top, headers and padding included.
    [[nodiscard]] std::size_t in_use() const noexcept { return static_cast<std::size_t>(cur_ - base_); }
    /// Returns: the buffer's size.
    [[nodiscard]] std::size_t capacity() const noexcept { return static_cast<std::size_t>(end_ - base_); }
    /// Returns: in_use (headers and padding included), peak, capacity, live_allocations,
    /// total_allocations, largest_free_block (largest request with default alignment that fits).
    [[nodiscard]] strata::stats stats() const noexcept;

    /// Effects: calls visit(block_info) for each live allocation (header and padding included),
    /// newest first, then once for the free tail. O(live allocations).
    template <class Visitor>
    void for_each_block(Visitor&& visit) const {
        std::size_t end = in_use();
        for (std::size_t last = last_; last != 0;) {
            const header h = read_header(base_ + (last - 1));
            visit(block_info{h.prev_top, end - h.prev_top, true});
            end = h.prev_top;
            last = h.prev_last;
        }
        if (end_ > cur_) visit(block_info{in_use(), static_cast<std::size_t>(end_ - cur_), false});
    }

private:
    struct header {
        std::size_t prev_top;
        std::size_t prev_last;
    };
    static_assert(sizeof(header) == header_size);
    static header read_header(const std::byte* p) noexcept {
        header h;
        std::memcpy(&h, p - header_size, header_size);
        return h;
    }

    void report_bad_free(void* p) const noexcept;
#if STRATA_CHECKS >= 1
    [[nodiscard]] bool on_chain(const marker& m) const noexcept;
#endif

    std::byte* base_;
    std::byte* cur_;
    std::byte* end_;
    std::size_t last_ = 0; // offset of the most recent live allocation + 1; 0: none
    std::size_t count_ = 0;
    std::size_t total_ = 0;
    std::size_t peak_ = 0;
    detail::rewind_history history_; // rewinds and resets; frees too at checks >= 1
};

} // namespace strata
