#pragma once
// buddy: a binary buddy allocator (Knowlton 1965) over a power-of-two region. A block of order k is
// min_block << k bytes at an offset that is a multiple of its size; its buddy is found by XOR. Blocks
// split on allocate and merge with their buddy on free, up the orders.
//
// All bookkeeping (free lists, block orders, free flags) lives OUTSIDE the managed region, in arrays
// owned by the allocator, so it can manage memory it must never touch (GPU heaps, mapped files,
// another process's memory): the offset API never dereferences the region at all.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/core/config.hpp"
#include "strata/core/stats.hpp"
#include "strata/heap/heap_metrics.hpp"

namespace strata {

/// A binary buddy allocator.
///
/// Bookkeeping: 12 bytes per min_block of region, outside the region: one record per min_block with
/// two 32-bit list links (reused for the requested size while a block is used) and a state byte, so
/// a split or a merge touches one record (one cache line) per order, not three arrays. Requests are rounded
/// up to a power of two no smaller than min_block; the waste this causes is reported by metrics().
///
/// Bad input answers: size 0, a non-power-of-two alignment, a size or alignment larger than the
/// region (SIZE_MAX, sizes that overflow once aligned) and exhaustion return npos / nullptr with no
/// state change. Freeing an offset or pointer outside the region, not the start of a block, or
/// already free is reported at checks >= 1 (`foreign_pointer` / `double_free`), and a sized free
/// whose size maps to another order `size_mismatch`; the call is then ignored. At checks 0 such
/// calls are undefined. Not thread-safe.
class buddy {
public:
    /// The offset API's failure answer.
    static constexpr std::size_t npos = ~std::size_t{0};
    /// Most orders a region can have (min_block << 63 is the largest region).
    static constexpr unsigned max_orders = 64;

    /// An empty buddy: every allocation fails.
    buddy() noexcept = default;

    /// Effects: a buddy over offsets [0, region_size) of memory it never touches (the offset API;
    /// allocate() returns nullptr). The region is rounded down to a power of two.
    /// Throws: std::invalid_argument when min_block is not a power of two or the region holds less
    /// than one min_block or more than 2^31 of them; std::bad_alloc when the bookkeeping cannot be
    /// allocated.
    explicit buddy(std::size_t region_size, std::size_t min_block = 16)
        : buddy(nullptr, region_size, min_block) {}

    /// Effects: a buddy over `region` (rounded down to a power of two) serving both APIs. Pointers
    /// are aligned to min(block size, the region's own alignment). Throws: as above.
    explicit buddy(std::span<std::byte> region, std::size_t min_block = 16)
        : buddy(region.data(), region.size(), min_block) {}

    buddy(buddy&&) = delete;
    buddy& operator=(buddy&&) = delete;
    buddy(const buddy&) = delete;
    buddy& operator=(const buddy&) = delete;
    ~buddy() = default;

    /// Returns: the offset of a block of at least `size` bytes aligned to `align` (relative to offset
    /// 0), or npos (invalid request, exhaustion). Complexity: O(log(region / min_block)) splits.
    [[nodiscard]] std::size_t allocate_offset(std::size_t size, std::size_t align = 1) noexcept;

    /// Effects: frees the block at `offset` and merges it with free buddies. Complexity: O(log n).
    void deallocate_offset(std::size_t offset) noexcept;

    /// Effects: as deallocate_offset(offset); at checks >= 1 (size, align), as allocated, must map
    /// to the block's order (else `size_mismatch`, ignored).
    void deallocate_offset(std::size_t offset, std::size_t size, std::size_t align = 1) noexcept;

    /// Returns: base + allocate_offset(size, align), or nullptr (also when the buddy has no base, or
    /// `align` exceeds the base's own alignment).
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        if (base_ == nullptr || align > base_align_) return nullptr;
        const std::size_t off = allocate_offset(size, align);
        return off == npos ? nullptr : base_ + off;
    }

    /// Effects: frees `p` (nullptr: nothing). Foreign pointers: see the class comment.
    void deallocate(void* p) noexcept {
        if (p != nullptr) deallocate_offset(offset_of(p));
    }

    /// Effects: frees `p`; at checks >= 1 (size, align) must map to the block's order.
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        if (p != nullptr) deallocate_offset(offset_of(p), size, align);
    }

    /// Returns: the size of the block at `offset` (a power of two). Requires: a live block.
    [[nodiscard]] std::size_t block_size(std::size_t offset) const noexcept {
        return min_block_ << (nodes_[offset >> min_shift_].state & order_mask);
    }
    /// Returns: the usable bytes of live block `p`. Requires: p is live.
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept { return block_size(offset_of(p)); }

    /// Returns: true when `p` lies inside the region (pointer API). Complexity: O(1).
    [[nodiscard]] bool owns(const void* p) const noexcept {
        const auto at = reinterpret_cast<std::uintptr_t>(p);
        const auto b = reinterpret_cast<std::uintptr_t>(base_);
        return base_ != nullptr && at >= b && at - b < region_;
    }

    /// Returns: the region base (nullptr for an offsets-only buddy).
    [[nodiscard]] std::byte* base() const noexcept { return base_; }
    /// Returns: the managed region's size (a power of two), 0 when empty.
    [[nodiscard]] std::size_t region_size() const noexcept { return region_; }
    /// Returns: the smallest block size.
    [[nodiscard]] std::size_t min_block() const noexcept { return min_block_; }
    /// Returns: the number of orders (order k blocks are min_block << k bytes, k < orders()).
    [[nodiscard]] unsigned orders() const noexcept { return max_order_ + 1; }
    /// Returns: bit k set when some block of order k is free. O(1).
    [[nodiscard]] std::uint64_t free_orders() const noexcept { return free_mask_; }
    /// Returns: the largest free block (a power of two), 0 when none. O(1).
    [[nodiscard]] std::size_t largest_free_block() const noexcept {
        return free_mask_ == 0 ? 0 : min_block_ << (63 - std::countl_zero(free_mask_));
    }
    /// Returns: bytes of the blocks now live (powers of two) and bytes their callers requested.
    [[nodiscard]] std::size_t granted_bytes() const noexcept { return used_; }
    [[nodiscard]] std::size_t requested_bytes() const noexcept { return requested_; }
    /// Returns: bytes in the bookkeeping arrays (outside the region).
    [[nodiscard]] std::size_t bookkeeping_bytes() const noexcept { return blocks() * sizeof(node); }

    /// Returns: in_use (granted bytes), peak, capacity (region), live_allocations, total_allocations,
    /// largest_free_block.
    [[nodiscard]] strata::stats stats() const noexcept {
        return {used_, peak_, region_, live_, total_, largest_free_block()};
    }

    /// Returns: the shared heap figures (internal waste = granted - requested). Complexity: O(blocks).
    [[nodiscard]] heap_metrics metrics() const noexcept;

    /// Effects: calls `visit(block_info)` for every block, used or free, in address order (offsets
    /// from the region start, sizes powers of two): the leaves of the buddy tree. O(blocks).
    template <class Visitor>
    void for_each_block(Visitor&& visit) const {
        for (std::size_t i = 0; i < blocks();) {
            const std::uint8_t s = nodes_[i].state;
            const std::size_t n = std::size_t{1} << (s & order_mask);
            visit(block_info{i << min_shift_, n << min_shift_, (s & free_flag) == 0});
            i += n;
        }
    }

    /// Returns: true when every invariant holds: the blocks tile the region, every block is aligned
    /// to its size, no free block has a free buddy of the same order, the free lists hold exactly the
    /// free blocks with consistent links, the order mask matches the lists, the counters match.
    /// Reports `corruption` through the violation handler (any checks level) for the first broken
    /// invariant. Complexity: O(region / min_block).
    [[nodiscard]] bool check() const noexcept;

private:
    static constexpr std::uint32_t nil = ~std::uint32_t{0};
    static constexpr std::uint8_t free_flag = 0x80;
    static constexpr std::uint8_t interior = 0xFF; // not the first min_block of a block
    static constexpr std::uint8_t order_mask = 0x3F;

    // The bookkeeping of one min_block. A block is described by the node of its first min_block.
    struct node {
        std::uint32_t next; // free: next in its list; used: requested size, low 32 bits
        std::uint32_t prev; // free: previous in its list (stale at a list head); used: size, high bits
        std::uint8_t state; // interior, or order | free_flag
    };
    static_assert(sizeof(node) == 12);

    buddy(std::byte* base, std::size_t size, std::size_t min_block);

    [[nodiscard]] std::size_t blocks() const noexcept { return region_ >> min_shift_; }
    [[nodiscard]] std::size_t offset_of(const void* p) const noexcept {
        // Pointers outside the region wrap to offsets >= region_, which the free path rejects.
        return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(p) -
                                        reinterpret_cast<std::uintptr_t>(base_));
    }
    // Lists free block i of `order` at the head of its list. The new head's back link is left
    // stale (a head is told by heads_, never by its link): one record written besides the old head's.
    void push(std::uint32_t i, unsigned order) noexcept {
        const std::uint32_t head = heads_[order];
        node& n = nodes_[i];
        n.next = head;
        n.state = static_cast<std::uint8_t>(free_flag | order);
        if (head != nil) nodes_[head].prev = i;
        heads_[order] = i;
        free_mask_ |= std::uint64_t{1} << order;
    }
    // Unlists free block i of `order`.
    void unlink(std::uint32_t i, unsigned order) noexcept {
        const node& n = nodes_[i];
        if (heads_[order] == i) {
            pop(n.next, order);
        } else {
            if (n.next != nil) nodes_[n.next].prev = n.prev;
            nodes_[n.prev].next = n.next;
        }
    }
    // Makes `next` the head of `order`'s list (its back link goes stale).
    void pop(std::uint32_t next, unsigned order) noexcept {
        heads_[order] = next;
        if (next == nil) free_mask_ &= ~(std::uint64_t{1} << order);
    }
    [[nodiscard]] bool verify_free(std::size_t offset) const noexcept;
    void free_index(std::uint32_t i) noexcept;
    [[nodiscard]] bool corrupt(std::size_t offset, const char* what) const noexcept;

    std::byte* base_ = nullptr;
    std::size_t base_align_ = 0;
    std::size_t region_ = 0;
    std::size_t min_block_ = 0;
    unsigned min_shift_ = 0;
    unsigned max_order_ = 0;
    std::uint64_t free_mask_ = 0;
    std::uint32_t heads_[max_orders] = {};
    std::unique_ptr<node[]> nodes_; // one per min_block
    std::size_t used_ = 0;
    std::size_t requested_ = 0;
    std::size_t peak_ = 0;
    std::size_t live_ = 0;
    std::size_t total_ = 0;
};

} // namespace strata
