#pragma once
// buddy: a binary buddy allocator (Knowlton 1965) over a power-of-two region. A block of order k is
// min_block << k bytes at an offset that is a multiple of its size; its buddy is found by XOR. Blocks
// split on allocate and merge with their buddy on free, up the orders.
//
// All bookkeeping (free lists, block orders, free flags) lives OUTSIDE the managed region, in arrays
// owned by the allocator, so it can manage memory it must never touch (GPU heaps, mapped files,
// another process's memory): the offset API never dereferences the region at all.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/core/config.hpp"
#include "strata/core/detail/private_access.hpp"
#include "strata/core/stats.hpp"
#include "strata/heap/heap_metrics.hpp"

namespace strata {

/// A binary buddy allocator.
///
/// Bookkeeping, all outside the region, in two layouts:
/// - orders below `small_orders` (7): one 12-byte record per min_block, describing the block that
///   starts there: two 32-bit list links (the requested size while the block is used) and a state
///   byte. Small blocks are dense, so the records a split or merge touches share warm lines.
/// - orders from `small_orders` up: the buddy tree's own shape, one array per order (blocks >> k
///   records of 8 bytes: list links or requested size) and a free and a used bitmap per order.
///   Per min_block these blocks' records would be 1.5 KiB or more apart, each on a line of its
///   own, cold when a split or merge needs it (the slowest allocations); here a block and its
///   buddy are neighbours, and all the large orders together take under 1/64 of the space.
/// About 12.2 bytes per min_block in all. Requests are rounded up to a power of two no smaller than
/// min_block; the waste this causes is reported by metrics().
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
    /// Orders below this keep their bookkeeping per min_block, the rest per order (see above).
    static constexpr unsigned small_orders = 7;

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

    /// Effects: frees the block at `offset` and merges it with free buddies. Complexity: O(log n)
    /// (finding a large block's order is a bit test per order).
    void deallocate_offset(std::size_t offset) noexcept;

    /// Effects: as deallocate_offset(offset), with the order taken from (size, align) as allocated;
    /// at checks >= 1 it must be the block's order (else `size_mismatch`, ignored).
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
    /// Complexity: O(log n) bit tests.
    [[nodiscard]] std::size_t block_size(std::size_t offset) const noexcept {
        return min_block_ << used_order(offset >> min_shift_);
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
    [[nodiscard]] std::size_t bookkeeping_bytes() const noexcept {
        return blocks() * sizeof(node) + (big_records_ + 2 * big_words_) * sizeof(std::uint64_t);
    }

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
            unsigned order = 0; // nothing starts at i (corrupt; check() tells): step one min_block
            const std::uint8_t s = block_at(i, order);
            const bool used = s != interior && (s & free_flag) == 0;
            visit(block_info{i << min_shift_, (min_block_ << order), used});
            i += std::size_t{1} << order;
        }
    }

    /// Returns: true when every invariant holds: the blocks tile the region, each described once
    /// (a small block by its start's record, a large one by one bit of its order), no free block has
    /// a free buddy of the same order, the free lists hold exactly the free blocks with consistent
    /// links, no bit lies inside another block or past its order's end, the order mask matches the
    /// lists, the counters match.
    /// Reports `corruption` through the violation handler (any checks level) for the first broken
    /// invariant. Complexity: O(region / min_block).
    [[nodiscard]] bool check() const noexcept;

private:
    template <class>
    friend struct detail::private_access; // tests reach the state check() validates
    static constexpr std::uint32_t nil = ~std::uint32_t{0};
    static constexpr std::uint8_t free_flag = 0x80;
    static constexpr std::uint8_t interior = 0xFF; // no small block starts at this min_block
    static constexpr std::uint8_t order_mask = 0x3F;
    static constexpr unsigned none = ~0u;

    // The record of one min_block for the small orders: a small block is described by the node of
    // its first min_block.
    struct node {
        std::uint32_t next; // free: next in its list; used: requested size, low 32 bits
        std::uint32_t prev; // free: previous in its list (stale at a list head); used: size, high bits
        std::uint8_t state; // interior, or order | free_flag
    };
    static_assert(sizeof(node) == 12);

    buddy(std::byte* base, std::size_t size, std::size_t min_block);

    [[nodiscard]] std::size_t blocks() const noexcept { return region_ >> min_shift_; }
    [[nodiscard]] std::size_t offset_of(const void* p) const noexcept {
        // Pointers outside the region wrap to offsets >= region_, which the free path rejects. An
        // offsets-only buddy hands out no pointers: any pointer is foreign (not its value as an offset).
        if (base_ == nullptr) return npos;
        return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(p) -
                                        reinterpret_cast<std::uintptr_t>(base_));
    }
    // Lists free small block i of `order` at the head of its list. The new head's back link is left
    // stale (a head is told by heads_, never by its link): one record written besides the old head's.
    void small_push(std::uint32_t i, unsigned order) noexcept {
        const std::uint32_t head = heads_[order];
        node& n = nodes_[i];
        n.next = head;
        n.state = static_cast<std::uint8_t>(free_flag | order);
        if (head != nil) nodes_[head].prev = i;
        heads_[order] = i;
        free_mask_ |= std::uint64_t{1} << order;
    }
    // Unlists free small block i of `order`.
    void small_unlink(std::uint32_t i, unsigned order) noexcept {
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

    // Large orders: block j of order k (offset j << (k + min_shift_)). Its record holds the list
    // links (next low, previous high; the previous is stale at a list head) or the requested size;
    // its bits say free or used (neither: not a block now). Pushes and unlinks as for the small ones.
    [[nodiscard]] std::uint64_t& big(unsigned k, std::uint32_t j) const noexcept {
        return big_[big_at_[k] + j];
    }
    [[nodiscard]] static bool bit(const std::uint64_t* bits, std::size_t at, std::uint32_t j) noexcept {
        return ((bits[at + (j >> 6)] >> (j & 63)) & 1u) != 0;
    }
    [[nodiscard]] bool big_free(unsigned k, std::uint32_t j) const noexcept {
        return bit(free_bits_.get(), bit_at_[k], j);
    }
    [[nodiscard]] bool big_used(unsigned k, std::uint32_t j) const noexcept {
        return bit(used_bits_.get(), bit_at_[k], j);
    }
    void flip_free(unsigned k, std::uint32_t j) noexcept {
        free_bits_[bit_at_[k] + (j >> 6)] ^= std::uint64_t{1} << (j & 63);
    }
    void flip_used(unsigned k, std::uint32_t j) noexcept {
        used_bits_[bit_at_[k] + (j >> 6)] ^= std::uint64_t{1} << (j & 63);
    }
    void big_push(unsigned k, std::uint32_t j) noexcept {
        const std::uint32_t head = heads_[k];
        big(k, j) = head;
        if (head != nil) big(k, head) = (big(k, head) & 0xFFFFFFFFu) | (std::uint64_t{j} << 32);
        heads_[k] = j;
        flip_free(k, j);
        free_mask_ |= std::uint64_t{1} << k;
    }
    void big_unlink(unsigned k, std::uint32_t j) noexcept {
        const std::uint64_t links = big(k, j);
        const auto next = static_cast<std::uint32_t>(links);
        flip_free(k, j);
        if (heads_[k] == j) {
            pop(next, k);
        } else {
            const auto prev = static_cast<std::uint32_t>(links >> 32);
            if (next != nil) big(k, next) = (big(k, next) & 0xFFFFFFFFu) | (std::uint64_t{prev} << 32);
            big(k, prev) = (big(k, prev) & ~std::uint64_t{0xFFFFFFFFu}) | next;
        }
    }
    // The highest order a block starting at min_block i can have.
    [[nodiscard]] unsigned top_order(std::size_t i) const noexcept {
        return i == 0 ? max_order_
                      : std::min<unsigned>(max_order_, static_cast<unsigned>(std::countr_zero(i)));
    }
    // Returns: the block starting at min_block i as a small record's state would say it (order |
    // free_flag, order, or interior when none starts there), its order in `order`. The large
    // orders' bits are looked at first, from the highest order down: O(orders).
    [[nodiscard]] std::uint8_t block_at(std::size_t i, unsigned& order) const noexcept {
        for (unsigned k = top_order(i); k >= small_orders; --k) {
            const auto j = static_cast<std::uint32_t>(i >> k);
            if (big_used(k, j) || big_free(k, j)) {
                order = k;
                return static_cast<std::uint8_t>(big_free(k, j) ? free_flag | k : k);
            }
        }
        const std::uint8_t s = nodes_[i].state;
        if (s != interior) order = s & order_mask;
        return s;
    }
    // Returns: the order of the used block starting at min_block i, or `none`.
    [[nodiscard]] unsigned used_order(std::size_t i) const noexcept {
        unsigned order = 0;
        const std::uint8_t s = block_at(i, order);
        return s == interior || (s & free_flag) != 0 ? none : order;
    }
    [[nodiscard]] bool verify_free(std::size_t offset) const noexcept;
    void free_small(std::uint32_t i, unsigned order) noexcept;
    void free_big(std::uint32_t j, unsigned order) noexcept;
    void big_merge(std::uint32_t j, unsigned order) noexcept;
    void account(unsigned order, std::size_t size) noexcept {
        used_ += min_block_ << order;
        requested_ += size;
        peak_ = std::max(peak_, used_);
        ++live_;
        ++total_;
    }
    void unaccount(unsigned order, std::size_t size) noexcept {
        used_ -= min_block_ << order;
        requested_ -= size;
        --live_;
    }
    [[nodiscard]] bool corrupt(std::size_t offset, const char* what) const noexcept;

    std::byte* base_ = nullptr;
    std::size_t base_align_ = 0;
    std::size_t region_ = 0;
    std::size_t min_block_ = 0;
    unsigned min_shift_ = 0;
    unsigned max_order_ = 0;
    std::uint64_t free_mask_ = 0;
    std::uint32_t heads_[max_orders] = {};
    std::unique_ptr<node[]> nodes_;       // one per min_block
    std::size_t big_at_[max_orders] = {}; // first record of each large order in big_
    std::size_t bit_at_[max_orders] = {}; // first word of each large order in both bitmaps
    std::size_t big_records_ = 0;
    std::size_t big_words_ = 0;
    std::unique_ptr<std::uint64_t[]> big_;       // large orders' records, order small_orders first
    std::unique_ptr<std::uint64_t[]> free_bits_; // large orders: bit j of order k set, block free
    std::unique_ptr<std::uint64_t[]> used_bits_; // large orders: bit j of order k set, block used
    std::size_t used_ = 0;
    std::size_t requested_ = 0;
    std::size_t peak_ = 0;
    std::size_t live_ = 0;
    std::size_t total_ = 0;
};

} // namespace strata
