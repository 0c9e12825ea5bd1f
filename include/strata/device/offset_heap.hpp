#pragma once
// offset_heap: a TLSF over offsets whose metadata lives entirely outside the range it manages, for
// memory the CPU must never touch (a VkDeviceMemory or ID3D12Heap block, a mapped file). Exports
// offset_heap, offset_allocation, offset_block_info, offset_heap_options.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "strata/core/check.hpp"
#include "strata/core/config.hpp"
#include "strata/core/detail/private_access.hpp"
#include "strata/core/stats.hpp"
#include "strata/device/policy.hpp"
#include "strata/heap/heap_metrics.hpp"

namespace strata {

/// What allocate() hands out: the block's offset (bytes) and the node that describes it. Keep both:
/// deallocate() takes the pair back, and checks that they still agree.
struct offset_allocation {
    static constexpr std::uint64_t npos = ~std::uint64_t{0};    ///< offset of a failed allocation
    static constexpr std::uint32_t no_node = ~std::uint32_t{0}; ///< node of a failed allocation

    std::uint64_t offset = npos;
    std::uint32_t node = no_node;

    /// Returns: true for a successful allocation.
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return node != no_node; }
    friend constexpr bool operator==(const offset_allocation&, const offset_allocation&) noexcept = default;
};

/// One block as for_each_block() reports it (offsets and sizes in bytes).
struct offset_block_info {
    std::uint64_t offset;
    std::uint64_t size;
    bool used;
    resource_kind kind; ///< of a used block; linear for a free one
    std::uint32_t node;
};

/// Construction parameters of an offset_heap.
struct offset_heap_options {
    /// Nodes in the metadata pool: the heap describes at most this many blocks (used and free)
    /// at once. Every allocation takes one node and may split off up to two free blocks.
    std::uint32_t max_nodes = 4096;
    /// Every offset and size is a multiple of this (a power of two): sizes are rounded up to it.
    std::uint64_t min_alignment = 16;
    /// Vulkan's bufferImageGranularity (a power of two; 1 = none): used blocks of different kinds
    /// never share a page of this size.
    std::uint64_t granularity = 1;
};

/// A two-level segregated-fit heap over the offsets [0, size) of a range it never reads or writes.
///
/// Metadata, all in a node pool allocated at construction (24 bytes a node, nothing per byte of
/// the range):
/// - every block, used or free, is one node: its offset and size in min_alignment units and its
///   physical neighbours, so a free merges with them in O(1);
/// - a free node also holds its size class's list links; a used node holds its resource kind and
///   a used tag in their place (so a stale or foreign node is told apart in O(1));
/// - nodes not describing a block form a spare chain; an allocation that needs more nodes than are
///   spare fails cleanly (no state change).
/// - node ids 0 and 1 are sentinels (the neighbour past either end, which looks used, and the end
///   of every list), so linking and merging test no nulls; blocks have ids [2, node_id_limit()).
/// Free blocks are never adjacent (a free merges), so a free block's physical neighbours are used:
/// granularity is settled against those two alone (see place()).
///
/// Slack: without granularity, a block keeps a tail of at most 1/16 of the request plus 32 bytes
/// (at least one min_alignment unit) rather than splitting it off as a free block of its own
/// (a node, a list insert and a later merge, for space few requests could use); size_of() and the
/// figures report the block with it. With granularity the end of a block stays where it was asked.
///
/// A free is counted at the call and merged with its neighbours at the next deallocate (flush()):
/// their nodes lie anywhere in the pool, and are fetched meanwhile.
///
/// Sizes are limited to (2^32 - 1) * min_alignment (64 GiB at the default 16).
///
/// Bad input answers (no state change in any case):
/// - allocate: size 0, a size above the heap, an alignment that is 0, not a power of two or above
///   the heap size, no fitting free block, too few spare nodes -> an allocation that converts to
///   false (offset npos, node no_node);
/// - deallocate: an allocation whose node is out of range (foreign_pointer), not a used block, or
///   describing another offset (double_free) -> false, reported at checks >= 1. A node freed and
///   reused for a block at the same offset cannot be told from the live one: device_pool puts
///   generational handles in front of the heap for that.
/// Not thread-safe.
class offset_heap {
public:
    static constexpr std::uint64_t npos = offset_allocation::npos;
    static constexpr unsigned sli = 5;                 ///< 2^sli second-level classes per power of two
    static constexpr unsigned sl_count = 1u << sli;    ///< second-level classes per first level
    static constexpr unsigned fl_count = 32 - sli + 1; ///< first levels: sizes below 2^32 units
    static constexpr unsigned class_count = fl_count * sl_count;
    static constexpr std::size_t node_bytes = 24; ///< metadata bytes per block (used or free)
    /// Blocks of the request's own class probed when the good-fit search finds nothing.
    static constexpr unsigned own_class_probes = 16;

    /// Effects: a heap over offsets [0, size) rounded down to min_alignment, all free.
    /// Throws: std::invalid_argument when min_alignment or granularity is not a power of two, size
    /// holds no min_alignment unit or 2^32 or more of them, or max_nodes is below 2 or above 2^31;
    /// std::bad_alloc when the node pool cannot be allocated.
    explicit offset_heap(std::uint64_t size, const offset_heap_options& options = {});

    /// Effects: takes `other`'s node pool and blocks. A moved-from heap may only be destroyed or
    /// assigned to.
    offset_heap(offset_heap&&) noexcept = default;
    offset_heap& operator=(offset_heap&&) noexcept = default;
    offset_heap(const offset_heap&) = delete;
    offset_heap& operator=(const offset_heap&) = delete;
    ~offset_heap() = default;

    /// Returns: a block of at least `size` bytes (rounded up to min_alignment, plus any slack) whose offset
    /// is a multiple of `align` (any power of two) and of min_alignment, placed so that it shares no
    /// granularity page with a used block of another kind; a false allocation when none fits (see
    /// the class comment). min_time takes the head of the first class whose every block fits;
    /// min_memory first probes the request's own class for the smallest block that fits.
    /// Complexity: O(1): two bit scans and at most own_class_probes blocks probed.
    [[nodiscard]] STRATA_ALWAYS_INLINE offset_allocation
    allocate(std::uint64_t size, std::uint64_t align = 1, resource_kind kind = resource_kind::linear,
             allocation_strategy strategy = allocation_strategy::min_time) noexcept {
        if (size - 1 >= bytes_ || align - 1 >= bytes_ || (align & (align - 1)) != 0) return {};
        const auto units = static_cast<std::uint32_t>((size + (unit_ - 1)) >> unit_shift_);
        if (STRATA_LIKELY(align <= unit_ && gran_units_ == 1 && strategy == allocation_strategy::min_time)) {
            const unsigned index = fit_class(units);
            // A split takes a spare node: with none left, the slow path completes the free in
            // flight (which may give one back) before it decides.
            if (STRATA_LIKELY(index < class_count && spare_count_ != 0)) return use_head(index, units, kind);
        }
        return allocate_slow(units, align, kind, strategy);
    }

    /// Returns: the lowest-offset block that fits the request (as allocate; a fit whose splits need
    /// more spare nodes than are left is passed over) and starts below `below` bytes, or a false
    /// allocation. Compaction uses it to move blocks down. The walk
    /// starts at node `start` (a node for_each_block reported, so a caller that knows no fit lies
    /// before it skips that part) or, when `start` describes no block now, at the first block.
    /// Complexity: O(blocks from the start): a walk in address order.
    [[nodiscard]] offset_allocation
    allocate_lowest(std::uint64_t size, std::uint64_t align, resource_kind kind, std::uint64_t below = npos,
                    std::uint32_t start = offset_allocation::no_node) noexcept;

    /// Effects: frees `a` and merges it with its free neighbours. Returns: true; false when `a` is
    /// not a live allocation of this heap (reported at checks >= 1, see the class comment).
    /// Complexity: O(1).
    STRATA_ALWAYS_INLINE bool deallocate(offset_allocation a) noexcept {
        if (STRATA_UNLIKELY(a.node - first_node >= max_nodes_)) return refuse(a);
        const node& b = nodes_[a.node];
        if (STRATA_UNLIKELY((b.next_free != used_tag) |
                            ((std::uint64_t{b.offset} << unit_shift_) != a.offset) | (a.node == pending_)))
            return refuse(a);
        // The merge needs both neighbours' nodes, which sit anywhere in the pool: start fetching
        // them, count the block free now, and merge it at the next call (see flush()).
        __builtin_prefetch(&nodes_[b.prev_phys], 1);
        __builtin_prefetch(&nodes_[b.next_phys], 1);
        used_units_ -= b.size;
        --live_;
        const std::uint32_t q = pending_;
        pending_ = a.node;
        if (q != edge) release(q);
        return true;
    }

    /// Effects: completes the free in flight, if any. deallocate(a) counts `a` free at once and
    /// merges it with its neighbours at the next deallocate, by when their nodes (anywhere in the
    /// pool) are in the cache. Only allocation sees a block in flight as used, and it completes
    /// it before it reports failure; every query that looks at free blocks completes it first.
    /// Nothing else observable differs.
    void flush() noexcept {
        const std::uint32_t q = pending_;
        pending_ = edge;
        if (q != edge) release(q);
    }

    /// Effects: frees every block: the heap is as constructed. Allocations made before are foreign.
    void reset() noexcept;

    /// Returns: true when `a` is a live allocation of this heap (its node is used and at its offset).
    [[nodiscard]] bool is_live(offset_allocation a) const noexcept {
        return a.node - first_node < max_nodes_ && nodes_[a.node].next_free == used_tag &&
               a.node != pending_ && (std::uint64_t{nodes_[a.node].offset} << unit_shift_) == a.offset;
    }
    /// Returns: the bytes of live allocation `a` (its size rounded up to min_alignment).
    /// Requires: is_live(a).
    [[nodiscard]] std::uint64_t size_of(offset_allocation a) const noexcept {
        return std::uint64_t{nodes_[a.node].size} << unit_shift_;
    }
    /// Returns: the resource kind `a` was allocated with. Requires: is_live(a).
    [[nodiscard]] resource_kind kind_of(offset_allocation a) const noexcept {
        return static_cast<resource_kind>(nodes_[a.node].prev_free);
    }

    /// Returns: the managed bytes (a multiple of min_alignment).
    [[nodiscard]] std::uint64_t size() const noexcept { return bytes_; }
    [[nodiscard]] std::uint64_t min_alignment() const noexcept { return unit_; }
    [[nodiscard]] std::uint64_t granularity() const noexcept { return granularity_; }
    /// Returns: bytes of live blocks, and of free blocks (size() - used_bytes()).
    [[nodiscard]] std::uint64_t used_bytes() const noexcept {
        return std::uint64_t{used_units_} << unit_shift_;
    }
    [[nodiscard]] std::uint64_t free_bytes() const noexcept { return bytes_ - used_bytes(); }
    /// Returns: live allocations, and free blocks.
    [[nodiscard]] std::uint32_t allocation_count() const noexcept { return live_; }
    [[nodiscard]] std::uint32_t free_block_count() const noexcept {
        settle();
        return max_nodes_ - spare_count_ - live_;
    }
    /// Returns: nodes describing a block, and the node pool's size.
    [[nodiscard]] std::uint32_t nodes_in_use() const noexcept {
        settle();
        return max_nodes_ - spare_count_;
    }
    [[nodiscard]] std::uint32_t max_nodes() const noexcept { return max_nodes_; }
    /// Returns: one past the largest node id an allocation can carry (ids are below it, not
    /// from 0: the caller may index a side array of this many entries by node).
    [[nodiscard]] std::uint32_t node_id_limit() const noexcept { return max_nodes_ + first_node; }
    /// Returns: bytes of metadata: the node pool and the class heads and bitmaps.
    [[nodiscard]] std::size_t metadata_bytes() const noexcept {
        return (std::size_t{max_nodes_} + first_node) * node_bytes + sizeof(heads_) + sizeof(sl_bitmap_) +
               sizeof(fl_bitmap_);
    }
    /// Returns: the largest free block an allocation can reach, in bytes (0 when full): a request
    /// of that size with alignment <= min_alignment and no granularity conflict succeeds. That is
    /// the largest free block unless it sits more than own_class_probes blocks down its class's list
    /// (metrics().largest_free_block walks every block and reports it regardless).
    /// Complexity: O(1): at most own_class_probes blocks of the largest non-empty class.
    [[nodiscard]] std::uint64_t largest_free_block() const noexcept;
    /// Returns: 1 - largest_free_block / free_bytes (0 when nothing is free): 0 when all free space
    /// is one block, towards 1 as it splinters.
    [[nodiscard]] double fragmentation() const noexcept {
        const std::uint64_t f = free_bytes();
        return f == 0 ? 0.0 : 1.0 - static_cast<double>(largest_free_block()) / static_cast<double>(f);
    }
    /// Returns: in_use (used bytes), peak, capacity (size), live and total allocations, largest free.
    [[nodiscard]] strata::stats stats() const noexcept {
        return {used_bytes(),        std::uint64_t{peak_units_} << unit_shift_, bytes_, live_, total_,
                largest_free_block()};
    }
    /// Returns: the shared heap figures by walking the blocks (requested bytes = used bytes: the
    /// heap keeps no request sizes; overhead 0: nothing is in band). Complexity: O(blocks).
    [[nodiscard]] heap_metrics metrics() const noexcept;

    /// Effects: calls visit(offset_block_info) for every block in address order. Complexity: O(blocks).
    template <class Visitor>
    void for_each_block(Visitor&& visit) const {
        settle();
        std::uint32_t steps = 0;
        for (std::uint32_t n = first_; n != edge && steps < max_nodes_; n = nodes_[n].next_phys, ++steps) {
            const node& b = nodes_[n];
            const bool used = b.next_free == used_tag;
            visit(offset_block_info{
                std::uint64_t{b.offset} << unit_shift_, std::uint64_t{b.size} << unit_shift_, used,
                used ? static_cast<resource_kind>(b.prev_free) : resource_kind::linear, n});
        }
    }

    /// Returns: the heap as JSON (a statistics string in the manner of vmaBuildStatsString): its
    /// totals and, when `blocks`, every block as {offset, size, type: free|linear|optimal}.
    /// Throws: std::bad_alloc.
    [[nodiscard]] std::string to_json(bool blocks = true) const;

    /// Returns: true when every invariant holds: the blocks tile [0, size) in address order with
    /// consistent neighbour links and no two free blocks adjacent; used blocks of different kinds
    /// share no granularity page; each free block is on its class's list exactly once with
    /// consistent links, and the bitmaps say which lists are non-empty; the spare chain holds the
    /// other nodes; the counters match. Reports `corruption` (any checks level) for the first
    /// broken invariant. Complexity: O(max_nodes).
    [[nodiscard]] bool check() const noexcept;

    /// Returns: the class (first level * sl_count + second level) a free block of `units` sits in.
    /// Sizes below 2^(sli+1) units have exact classes.
    [[nodiscard]] static constexpr unsigned class_index(std::uint32_t units) noexcept {
        const unsigned msb = static_cast<unsigned>(std::countl_zero(units | (std::uint32_t{1} << sli))) ^ 31u;
        return (msb << sli) + static_cast<unsigned>(units >> (msb - sli)) - (sli << sli);
    }

private:
    template <class>
    friend struct detail::private_access;          // tests reach the state check() validates
    static constexpr std::uint32_t edge = 0;       // the neighbour beyond either end: looks used
    static constexpr std::uint32_t list_end = 1;   // ends every class list, the spare chain too
    static constexpr std::uint32_t first_node = 2; // nodes [2, max_nodes + 2) describe blocks
    static constexpr std::uint32_t used_tag = ~std::uint32_t{0}; // next_free of a used node

    // One block, used or free, or a spare node (size 0). Two sentinels come first: `edge` (the
    // physical neighbour past either end; its next_free is used_tag, so it never merges and its
    // links may be written) and `list_end` (the end of every list; written freely), so linking,
    // unlinking and merging need no null tests.
    // - offset, size: in min_alignment units; size is never 0 for a block.
    // - prev_phys, next_phys: the neighbours in address order (edge at the ends).
    // - prev_free: free: the previous node of its class list (list_end at the head); used: its kind.
    // - next_free: free: the next node of its class list; used: used_tag; spare: the next spare.
    struct node {
        std::uint32_t offset;
        std::uint32_t size;
        std::uint32_t prev_phys;
        std::uint32_t next_phys;
        std::uint32_t prev_free;
        std::uint32_t next_free;
    };
    static_assert(sizeof(node) == node_bytes);

    // Returns the first non-empty class whose every block holds `need` units, or class_count.
    STRATA_ALWAYS_INLINE unsigned fit_class(std::uint64_t need) const noexcept {
        if (STRATA_UNLIKELY(need >= (std::uint64_t{1} << 32))) return class_count;
        unsigned index = class_index(static_cast<std::uint32_t>(need - 1)) + 1;
        unsigned fl = index >> sli;
        // index may be class_count (need - 1 in the top class): fl == fl_count, a zero map.
        std::uint32_t sl_map =
            fl < fl_count ? sl_bitmap_[fl] & (~std::uint32_t{0} << (index & (sl_count - 1))) : 0;
        if (STRATA_UNLIKELY(sl_map == 0)) {
            const std::uint32_t fl_map = fl + 1 < 32 ? fl_bitmap_ & (~std::uint32_t{0} << (fl + 1)) : 0;
            if (STRATA_UNLIKELY(fl_map == 0)) return class_count;
            fl = static_cast<unsigned>(std::countr_zero(fl_map));
            sl_map = sl_bitmap_[fl];
        }
        return (fl << sli) + static_cast<unsigned>(std::countr_zero(sl_map));
    }
    // Returns the head of fit_class(need), or list_end.
    STRATA_ALWAYS_INLINE std::uint32_t find_fit(std::uint64_t need) const noexcept {
        const unsigned index = fit_class(need);
        return index < class_count ? heads_[index] : list_end;
    }

    // Returns where (units) a block of `units` aligned to `align` units and of `kind` starts inside
    // free node `n`, or npos when it does not fit. A used neighbour of another kind that shares the
    // first page pushes the start to the next page; one that shares the last page refuses the fit.
    STRATA_ALWAYS_INLINE std::uint64_t place(std::uint32_t n, std::uint32_t units, std::uint64_t align,
                                             resource_kind kind) const noexcept {
        const node& b = nodes_[n];
        std::uint64_t at = (std::uint64_t{b.offset} + (align - 1)) & ~(align - 1);
        const std::uint64_t end = std::uint64_t{b.offset} + b.size;
        if (gran_units_ > 1) {
            const auto k = static_cast<std::uint32_t>(kind);
            if (b.prev_phys != edge && nodes_[b.prev_phys].prev_free != k &&
                (std::uint64_t{b.offset} - 1) >> gran_shift_ == at >> gran_shift_)
                at = (at + gran_units_ - 1) & ~std::uint64_t{gran_units_ - 1};
            if (at + units > end) return npos;
            if (b.next_phys != edge && nodes_[b.next_phys].prev_free != k &&
                (at + units - 1) >> gran_shift_ == end >> gran_shift_)
                return npos;
            return at;
        }
        return at + units <= end ? at : npos;
    }

    // The fast path's use: `units` at the start of the head of class `index` (which holds them).
    // Requires a spare node for the split. A tail of at most 1/16 of the request plus 32 bytes (at
    // least one unit: sliver_units_) stays in the block as slack rather than becoming a free block
    // of its own (a node, a list insert now and a merge later, for space few requests can use).
    // Slack is kept only where no granularity applies: the block's end must not move onto a
    // neighbour's page.
    STRATA_ALWAYS_INLINE offset_allocation use_head(unsigned index, std::uint32_t units,
                                                    resource_kind kind) noexcept {
        const std::uint32_t n = heads_[index];
        node& b = nodes_[n];
        const std::uint32_t back = b.size - units;
        const bool split = back > (units >> sliver_shift) + sliver_units_;
        // Pop the head: its class and position are known, so no search and no branch on either.
        const std::uint32_t next = b.next_free;
        __builtin_prefetch(&nodes_[next], 1); // the next request of this class takes it
        nodes_[next].prev_free = list_end;
        heads_[index] = next;
        const unsigned fl = index >> sli;
        const std::uint32_t left =
            sl_bitmap_[fl] & ~(static_cast<std::uint32_t>(next == list_end) << (index & (sl_count - 1)));
        sl_bitmap_[fl] = left;
        if (STRATA_UNLIKELY(left == 0)) fl_bitmap_ &= ~(std::uint32_t{1} << fl);
        if (split) split_back(n, b, units, back);
        return mark_used(n, b, kind);
    }

    // Turns free node `n` into a used block of `units` at `at` (from place()), splitting off the
    // gaps before and after it as free blocks. Returns a false allocation, changing nothing, when
    // the splits need more spare nodes than there are.
    offset_allocation use(std::uint32_t n, std::uint32_t at, std::uint32_t units,
                          resource_kind kind) noexcept {
        node& b = nodes_[n];
        const std::uint32_t front = at - b.offset;
        std::uint32_t back = b.offset + b.size - at - units;
        if (back <= (units >> sliver_shift) + sliver_units_ && gran_units_ == 1) back = 0; // kept as slack
        if (spare_count_ < (front != 0 ? 1u : 0u) + (back != 0 ? 1u : 0u)) return {};
        unlink(n, b);
        if (front != 0) split_front(n, front);
        if (back != 0) split_back(n, b, units, back);
        return mark_used(n, b, kind);
    }

    STRATA_ALWAYS_INLINE void split_back(std::uint32_t n, node& b, std::uint32_t units,
                                         std::uint32_t back) noexcept {
        const std::uint32_t t = take_spare();
        node& r = nodes_[t];
        r.offset = b.offset + units;
        r.size = back;
        r.prev_phys = n;
        r.next_phys = b.next_phys;
        nodes_[b.next_phys].prev_phys = t;
        b.next_phys = t;
        b.size = units;
        link(t, r);
    }

    STRATA_ALWAYS_INLINE offset_allocation mark_used(std::uint32_t n, node& b, resource_kind kind) noexcept {
        b.prev_free = static_cast<std::uint32_t>(kind);
        b.next_free = used_tag;
        used_units_ += b.size;
        if (used_units_ > peak_units_) peak_units_ = used_units_;
        ++live_;
        ++total_;
        return {std::uint64_t{b.offset} << unit_shift_, n};
    }

    // Completes the free of node `n` (counted free already, still tagged used): merges it with
    // free neighbours and lists the result.
    STRATA_ALWAYS_INLINE void release(std::uint32_t n) noexcept {
        node* b = &nodes_[n];
        const std::uint32_t p = b->prev_phys;
        node& q = nodes_[p];
        if (q.next_free != used_tag) { // edge looks used
            unlink(p, q);
            q.size += b->size;
            q.next_phys = b->next_phys;
            nodes_[b->next_phys].prev_phys = p;
            give_spare(n, *b);
            n = p;
            b = &q;
        }
        const std::uint32_t x = b->next_phys;
        node& r = nodes_[x];
        if (r.next_free != used_tag) {
            unlink(x, r);
            b->size += r.size;
            b->next_phys = r.next_phys;
            nodes_[r.next_phys].prev_phys = n;
            give_spare(x, r);
        }
        link(n, *b);
    }

    // Lists free node `n` at the head of its class.
    STRATA_ALWAYS_INLINE void link(std::uint32_t n, node& b) noexcept {
        const unsigned index = class_index(b.size);
        const std::uint32_t head = heads_[index];
        b.prev_free = list_end;
        b.next_free = head;
        nodes_[head].prev_free = n; // list_end's link when the class was empty: harmless
        heads_[index] = n;
        sl_bitmap_[index >> sli] |= std::uint32_t{1} << (index & (sl_count - 1));
        fl_bitmap_ |= std::uint32_t{1} << (index >> sli);
    }

    // Unlists free node `n`. Without branches on where it sat: lists are short in a heap that
    // merges, so "is it the head" and "does the class empty" are coin tosses a predictor loses.
    STRATA_ALWAYS_INLINE void unlink(std::uint32_t n, const node& b) noexcept {
        const std::uint32_t next = b.next_free;
        const std::uint32_t prev = b.prev_free;
        nodes_[next].prev_free = prev;
        nodes_[prev].next_free = next; // list_end's link when n is the head: harmless
        const unsigned index = class_index(b.size);
        const std::uint32_t head = heads_[index];
        const std::uint32_t now = head == n ? next : head;
        heads_[index] = now;
        const unsigned fl = index >> sli;
        const std::uint32_t left =
            sl_bitmap_[fl] & ~(static_cast<std::uint32_t>(now == list_end) << (index & (sl_count - 1)));
        sl_bitmap_[fl] = left;
        if (STRATA_UNLIKELY(left == 0)) fl_bitmap_ &= ~(std::uint32_t{1} << fl);
    }

    STRATA_ALWAYS_INLINE std::uint32_t take_spare() noexcept {
        const std::uint32_t s = spare_;
        spare_ = nodes_[s].next_free;
        --spare_count_;
        return s;
    }
    STRATA_ALWAYS_INLINE void give_spare(std::uint32_t n, node& b) noexcept {
        b.size = 0;
        b.next_free = spare_;
        spare_ = n;
        ++spare_count_;
    }

    void split_front(std::uint32_t n, std::uint32_t front) noexcept;
    [[nodiscard]] offset_allocation allocate_slow(std::uint32_t units, std::uint64_t align,
                                                  resource_kind kind, allocation_strategy strategy) noexcept;
    [[nodiscard]] offset_allocation probe_class(std::uint32_t units, std::uint64_t align, resource_kind kind,
                                                bool smallest) noexcept;
    bool refuse(offset_allocation a) const noexcept;
    // Completes the free in flight for a query; the heap is not const while one is in flight (only
    // deallocate leaves one), so the cast is sound.
    void settle() const noexcept {
        if (pending_ != edge) const_cast<offset_heap*>(this)->flush();
    }
    [[nodiscard]] bool corrupt(const char* what) const noexcept;

    static constexpr unsigned sliver_shift = 4; // slack: up to 1/16 of the request, + sliver_units_

    std::unique_ptr<node[]> nodes_;  // max_nodes_ + 2: the sentinels, then the block nodes
    std::uint64_t bytes_ = 0;        // managed bytes
    std::uint64_t unit_ = 16;        // min_alignment
    unsigned unit_shift_ = 4;        // log2(unit_)
    std::uint64_t gran_units_ = 1;   // granularity in units (1: none), at most 2^32 (one page: all)
    std::uint64_t granularity_ = 1;  // as asked, in bytes
    std::uint32_t sliver_units_ = 2; // slack besides 1/16 of the request: 32 bytes, at least a unit
    unsigned gran_shift_ = 0;        // log2(gran_units_)
    std::uint32_t max_nodes_ = 0;
    std::uint32_t first_ = edge;     // the block at offset 0
    std::uint32_t spare_ = list_end; // head of the spare chain
    std::uint32_t pending_ = edge;   // the free in flight (edge: none), see flush()
    std::uint32_t spare_count_ = 0;
    std::uint32_t used_units_ = 0;
    std::uint32_t peak_units_ = 0;
    std::uint32_t live_ = 0;
    std::uint64_t total_ = 0;
    std::uint32_t fl_bitmap_ = 0;
    std::uint32_t sl_bitmap_[fl_count] = {};
    std::uint32_t heads_[class_count];
};

} // namespace strata
