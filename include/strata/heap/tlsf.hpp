#pragma once
// tlsf: Two-Level Segregated Fit (Masmano et al., 2004/2008). A general-purpose heap with O(1)
// allocate and free: free blocks sit in size-class lists indexed by a first-level bitmap (powers of
// two) and a second-level bitmap per first level (2^SLI linear steps inside each power of two), so
// finding a fit is two bit scans and no loop. Freed blocks coalesce with their physical neighbours
// through boundary tags, one free late: deallocate(p) starts fetching p's header and completes the
// previous call's free, whose header has arrived by then (see deallocate).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/core/config.hpp"
#include "strata/core/detail/private_access.hpp"
#include "strata/core/poison.hpp"
#include "strata/core/stats.hpp"
#include "strata/heap/detail/pool_chain.hpp"
#include "strata/heap/heap_metrics.hpp"

namespace strata {

/// A TLSF heap over memory the caller provides (`add_pool`), never growing on its own.
///
/// Layout: every block carries a 16-byte header in front of its payload (the physical predecessor
/// with a "predecessor is free" flag, and the payload size with a "free" flag and the slack); a
/// free block also holds its two free-list links in its first 16 payload bytes. Payloads are 16-aligned and
/// at least 16 bytes. Each pool starts with a 32-byte record and ends with a 16-byte sentinel header.
/// Blocks start on 32-byte boundaries (block_granule): a payload is 32k + 16 bytes, so a free
/// block's header and links never straddle two cache lines (only an allocation aligned to 32 or
/// more starts a block off that grid).
///
/// `SLI` is the second-level index: 2^SLI classes per power of two (5: 32 classes, worst-case
/// rounding 1/32 = 3%; 4: 16 classes, smaller control block). Sizes below 2^(SLI+4) map to exact
/// 16-byte classes.
///
/// Bad input answers: size 0, a non-power-of-two alignment, a size or alignment above
/// `max_request` (SIZE_MAX, sizes that overflow once aligned) and exhaustion return nullptr with no
/// state change. Double free and foreign pointers (outside every pool, or not the start of a live
/// block) are reported at checks >= 1 (`double_free` / `foreign_pointer`) and ignored; at checks 0
/// they are undefined behaviour. Not thread-safe, queries included: they complete the free in
/// flight (see deallocate) before they look.
template <unsigned SLI = 5>
class basic_tlsf {
    static_assert(SLI >= 2 && SLI <= 5, "SLI must be in [2, 5] (the second-level bitmap is 32 bits)");

public:
    static constexpr std::size_t alignment = 16;     ///< every payload is aligned to this
    static constexpr std::size_t header_size = 16;   ///< in-band bytes per block
    static constexpr std::size_t min_payload = 16;   ///< smallest block payload (two free-list links)
    static constexpr std::size_t pool_overhead = 48; ///< pool record + end sentinel, per pool
    /// Blocks start on multiples of this: header and links (32 bytes) share one cache line, so a
    /// list operation on a free block touches one line, not two (docs/heaps.md, "Block layout").
    static constexpr std::size_t block_granule = 32;
    static constexpr unsigned sl_count = 1u << SLI;
    static constexpr unsigned fl_shift = SLI + 4; ///< sizes below 2^fl_shift use exact 16-byte classes
    static constexpr unsigned max_size_log2 = 47; ///< blocks and pools stay below 2^47 bytes
    static constexpr unsigned fl_count = max_size_log2 - fl_shift + 1;
    /// Largest size (and alignment) allocate() accepts; anything above returns nullptr.
    static constexpr std::size_t max_request = std::size_t{1} << (max_size_log2 - 2);
    /// An allocation keeps the tail of the block it takes as slack, rather than splitting it off as
    /// a free block, when the tail is below (request >> sliver_shift) mod max_sliver: at most 1/16
    /// of the request (and under 64 KiB) more than asked, plus under 64 bytes: the 32-byte grid's
    /// rounding, and a tail too small to hold a free block's header and links, which is never split
    /// off. See use().
    static constexpr unsigned sliver_shift = 4;
    /// Where the good-fit search finds nothing, an allocation probes at most this many blocks at the
    /// head of the request's own class for one that fits, which keeps its worst case constant.
    /// largest_free_block() reports only what such a probe reaches.
    static constexpr unsigned own_class_probes = 16;
    static constexpr std::size_t max_sliver = std::size_t{1} << 16;
    static_assert(max_sliver + header_size + min_payload + block_granule <
                      (std::size_t{1} << (64 - max_size_log2)),
                  "the largest slack must fit the header's slack bits");

    /// An empty heap: every allocation fails until add_pool().
    basic_tlsf() noexcept {
        for (block*& head : heads_)
            head = nil();
    }

    /// Effects: a heap over `pool` (see add_pool; a pool too small is ignored).
    explicit basic_tlsf(std::span<std::byte> pool) noexcept : basic_tlsf() { (void)add_pool(pool); }

    basic_tlsf(const basic_tlsf&) = delete;
    basic_tlsf& operator=(const basic_tlsf&) = delete;

    /// Effects: adds `pool` (its start trimmed to a 32-byte boundary, its end to a 16-byte one) as
    /// more memory. Requires: `pool` outlives the heap, overlaps no other pool, and is never touched
    /// by the caller while added.
    /// Returns: false (nothing added) when it is shorter than pool_overhead + 32 bytes, or 2^47
    /// bytes or longer.
    bool add_pool(std::span<std::byte> pool) noexcept;

    /// Returns: the payload a request of `size` bytes (default alignment) asks the free lists for:
    /// the smallest 32k + 16 >= size, so that the block after it starts on the 32-byte grid too
    /// (a last-resort allocation may settle for less, see allocate). Requires: size <= max_request.
    [[nodiscard]] static constexpr std::size_t payload_for(std::size_t size) noexcept {
        return ((size + (header_size + block_granule - 1)) & ~(block_granule - 1)) - header_size;
    }

    /// Returns: `size` bytes aligned to `align` (any power of two up to max_request), or nullptr
    /// (size 0, bad alignment, size above max_request, no fitting free block).
    /// Complexity: O(1): two bit scans and at most one split (two for an alignment above 16: the
    /// front gap and the tail). Where the scans find nothing (near exhaustion), at most
    /// own_class_probes blocks of the request's own class are probed before nullptr.
    [[nodiscard]] STRATA_ALWAYS_INLINE void* allocate(std::size_t size,
                                                      std::size_t align = default_alignment) noexcept {
        // size - 1 wraps for 0, so one compare rejects 0, SIZE_MAX and everything too large.
        if (STRATA_LIKELY(size - 1 < max_request && align - 1 < alignment && (align & (align - 1)) == 0)) {
            const std::size_t need = payload_for(size);
            block* b = take_fit(need);
            if (STRATA_LIKELY(b != nullptr)) return use(b, need, size);
            return allocate_last_resort(need, size);
        }
        return allocate_aligned(size, align);
    }

    /// Effects: frees `p` (nullptr: nothing to free): completes the free of the previous call's block (merges
    /// it with its free neighbours and lists it) and leaves `p`'s in flight until the next call.
    /// Complexity: O(1).
    ///
    /// Why one call late: `p` is a block the program picked, typically long untouched, so its header
    /// is a cache miss, and merging needs it at once: freed on the spot, the whole free waits for that
    /// line. Parked, its header arrives while the program runs on (docs/heaps.md, "The free in
    /// flight"). Nothing observable changes: a block in flight is only unavailable to allocation, which
    /// completes it before it reports failure, and every query (stats, walks, check, bitmaps,
    /// largest_free_block) completes it before it looks. At checks >= 1 a second free of the block in flight
    /// is a double free; in ASan builds and at checks >= 2 its bytes are poisoned and filled at the call.
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept {
        // No test for nullptr on the fast path: it parks like any block, which completes the free
        // in flight and leaves none (a flush); prefetching address -16 is harmless.
#if STRATA_CHECKS >= 1
        if (p != nullptr && !verify_live(p)) return;
#endif
        if constexpr (release_at_call) {
            if (p != nullptr) release_bytes(p, header_of(p)->size());
        }
        __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) - header_size),
                           1);
        void* const q = pending_;
        pending_ = p;
        if (STRATA_LIKELY(q != nullptr)) {
            complete_free(q);
        } else if (used_ > peak_) {
            peak_ = used_; // see complete_free
        }
    }

    /// Effects: completes the free in flight, if any (deallocate leaves one). Queries do it
    /// themselves; call it to hand the block back before something that reads the pools directly.
    void flush() noexcept {
        void* const q = pending_;
        pending_ = nullptr;
        if (q != nullptr) complete_free(q);
        if (used_ > peak_) peak_ = used_;
    }

    /// Effects: as deallocate(p). TLSF knows its blocks: the size is only a hint, never trusted.
    /// Completing p's free (at the next call) reads p's physical successor's header to merge; it
    /// sits at p + size rounded up to 16 unless the block kept slack, so start fetching it now.
    STRATA_ALWAYS_INLINE void deallocate(void* p, std::size_t size,
                                         std::size_t /*align*/ = default_alignment) noexcept {
        __builtin_prefetch(
            reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) + payload_for(size)), 1);
        deallocate(p);
    }

    /// Returns: a block of `new_size` bytes aligned to `align`, holding the first min(old, new) bytes
    /// of `p`: `p` itself when it has that alignment and the block can shrink, or grow into a free
    /// physical successor; otherwise a new block (the contents copied, `p` freed). nullptr when `p`
    /// is nullptr and allocate fails, or on failure (new_size 0 or too large, `align` 0, not a power
    /// of two or above max_request, no room): `p` is then untouched.
    [[nodiscard]] void* reallocate(void* p, std::size_t new_size,
                                   std::size_t align = default_alignment) noexcept;

    /// Effects: resizes the live block `p` to `new_size` bytes where it lies: a shrink gives its
    /// tail back, a grow takes from a free physical successor. Returns: true when it did; false
    /// (p untouched) when the successor has no room, or `new_size` is 0 or too large.
    [[nodiscard]] bool resize_in_place(void* p, std::size_t new_size) noexcept;

    /// Returns: the usable bytes of live block `p` (>= the size asked for). Requires: p is live.
    /// In ASan builds the bytes past the size asked for stay poisoned, so an overflow into them is
    /// reported: a caller that means to use them unpoisons them (the engine heap does).
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept { return header_of(p)->size(); }

    /// Returns: true when `p` lies in the payload range of one of the pools (from its first block's
    /// payload to its end: no block starts in the pool record or first header). Complexity: O(pools).
    [[nodiscard]] bool owns(const void* p) const noexcept { return pools_.find(p) != nullptr; }

    /// Returns: the payload of the largest free block an allocation can reach, at most max_request:
    /// a request of this size (alignment <= 16) succeeds. That is the largest free block unless it
    /// sits more than own_class_probes blocks down its class's list (metrics().largest_free_block
    /// walks every block and reports it regardless). Complexity: O(1), at most own_class_probes
    /// blocks.
    [[nodiscard]] std::size_t largest_free_block() const noexcept;

    /// Returns: in_use (payload bytes of live blocks), peak, capacity (bytes of every pool),
    /// live_allocations, total_allocations, largest_free_block.
    [[nodiscard]] strata::stats stats() const noexcept {
        settle();
        // used_ can be above peak_ here: the peak is taken when used_ falls (see complete_free).
        return {used_, std::max(peak_, used_), capacity_, total_ - freed_, total_, largest_free_block()};
    }

    /// Returns: how many blocks are live: allocated and not passed to deallocate (a free in flight
    /// is not live), or taken out (take_out). Complexity: O(1); unlike stats() it leaves the free in
    /// flight where it is, so a caller may ask after every free (the engine heap does, to return
    /// empty arenas).
    [[nodiscard]] std::size_t live_allocations() const noexcept {
        return total_ - freed_ - (pending_ != nullptr ? 1u : 0u) + taken_;
    }

    /// Returns: the shared heap figures, by walking every block. Complexity: O(blocks).
    [[nodiscard]] heap_metrics metrics() const noexcept;

    /// Effects: calls `visit(block_info)` for every block of every pool in address order; offsets
    /// are payload offsets counted across pools (pools in the order they were added), sizes are
    /// payload bytes. Free blocks are reported with used == false.
    template <class Visitor>
    void for_each_block(Visitor&& visit) const {
        settle();
        pools_.for_each_block(static_cast<Visitor&&>(visit));
    }

    /// Effects: calls `visit(payload, bytes)` for every free block whose payload holds at least
    /// `min_bytes`, in class order. The first 16 bytes of each payload hold the heap's list links;
    /// the rest is never read while the block is free, so the visitor may discard it (the engine
    /// heap gives its pages back to the OS). Requires: `visit` does not call into this heap.
    /// Complexity: O(free blocks in the classes that can hold `min_bytes`), found by bit scans.
    template <class Visitor>
    void for_each_free_block(std::size_t min_bytes, Visitor&& visit) noexcept(noexcept(visit(nullptr, 0))) {
        settle();
        // No block reaches 2^47 (max_size_log2); blocks above max_request do exist (a free pool).
        if (min_bytes >= (std::size_t{1} << max_size_log2)) return;
        const unsigned from = class_index(min_bytes < alignment ? alignment : min_bytes);
        for (unsigned fl = from >> SLI; fl < fl_count; ++fl) {
            auto bits = sl_bitmap_[fl];
            if (fl == from >> SLI)
                bits &= static_cast<decltype(bits)>(~decltype(bits){0} << (from & (sl_count - 1)));
            for (; bits != 0; bits &= bits - 1) {
                const unsigned index = (fl << SLI) + static_cast<unsigned>(std::countr_zero(bits));
                for (block* b = heads_[index]; b != nil(); b = b->next_free())
                    if (b->size() >= min_bytes) visit(static_cast<void*>(b->payload()), b->size());
            }
        }
    }

    /// Effects: takes the free block of payload `p` (as for_each_free_block reports it) off its list
    /// and marks it used, so that no request reaches it and no free merges with it until
    /// put_back(p): its owner may then work on its bytes without this heap's lock (the engine heap
    /// gives its pages back to the OS). Nothing is written to its payload, and it is not counted as
    /// an allocation: stats() leave it out, live_allocations() counts it, walks see it used (and a
    /// free of its address meanwhile, a double free, is not detected). Requires: `p` is the
    /// payload of a free block of this heap; at checks >= 1 anything else is reported
    /// (invalid_argument) and left alone. Complexity: O(1).
    void take_out(void* p) noexcept {
#if STRATA_CHECKS >= 1
        if (!verify_takeable(p, true)) return;
#endif
        block* b = header_of(p);
        remove(b);
        b->size_ = b->size(); // used, no slack
        b->next_phys()->prev_ = reinterpret_cast<std::uintptr_t>(b);
        ++taken_;
        taken_bytes_ += b->size();
    }

    /// Effects: lists the block of payload `p` again, merged with its free neighbours, as a free
    /// would but without its fill or accounting. Requires: take_out(p) took it, and no put_back
    /// since; at checks >= 1 a block that is not out (free, or none at all) is reported
    /// (invalid_argument) and left alone. Complexity: O(1).
    void put_back(void* p) noexcept {
#if STRATA_CHECKS >= 1
        if (!verify_takeable(p, false)) return;
#endif
        block* b = header_of(p);
        --taken_;
        taken_bytes_ -= b->size();
        unpoison(b->payload(), min_payload); // the free-list links live here
        free_block(b, b->size());
    }

    /// Returns: true when every invariant holds: the bitmaps match the lists, every listed block is
    /// free and in the class its size maps to, the links are consistent, no two free blocks are
    /// adjacent, boundary tags agree, block sizes sum to each pool, and the counters match.
    /// Reports `corruption` through the violation handler (at any checks level) for the first
    /// broken invariant found. Complexity: O(blocks + classes).
    [[nodiscard]] bool check() const noexcept;

    /// Returns: the first-level bitmap (bit i: some second-level class of level i is non-empty).
    [[nodiscard]] std::uint64_t fl_bitmap() const noexcept {
        settle();
        return fl_bitmap_;
    }
    /// Returns: the second-level bitmap of first level `fl` (bit j: class (fl, j) is non-empty).
    /// Requires: fl < fl_count.
    [[nodiscard]] std::uint32_t sl_bitmap(unsigned fl) const noexcept {
        settle();
        return sl_bitmap_[fl];
    }
    /// Returns: the smallest size that maps to class (fl, sl); the class holds sizes up to the next.
    [[nodiscard]] static constexpr std::size_t class_floor(unsigned fl, unsigned sl) noexcept {
        return fl == 0
                   ? std::size_t{sl} * alignment
                   : (std::size_t{1} << (fl + fl_shift - 1)) + (std::size_t{sl} << (fl + fl_shift - 1 - SLI));
    }
    /// Returns: the linear class index (first level * 2^SLI + second level) of a free block of
    /// `size` bytes. Branch-free: sizes below 2^fl_shift take the same 16-byte step as the first
    /// power above, so level 0 holds exact 16-byte classes and every level above 2^SLI linear ones.
    [[nodiscard]] static constexpr unsigned class_index(std::size_t size) noexcept {
        // msb >= fl_shift (the or). Written as 63 ^ clz and with fl_shift subtracted last so that
        // g++ emits one bsr and two lea (63 - clz, subtracted first, compiled to 10 instructions).
        const unsigned msb =
            static_cast<unsigned>(std::countl_zero(size | (std::size_t{1} << fl_shift))) ^ 63u;
        return (msb << SLI) + static_cast<unsigned>(size >> (msb - SLI)) - (fl_shift << SLI);
    }
    /// Effects: stores the class (first level, second level) a free block of `size` bytes sits in.
    static constexpr void mapping(std::size_t size, unsigned& fl, unsigned& sl) noexcept {
        const unsigned index = class_index(size);
        fl = index >> SLI;
        sl = index & (sl_count - 1);
    }

private:
    /// resize_in_place once p is known live, the free in flight flushed.
    [[nodiscard]] bool resize_here(void* p, std::size_t new_size) noexcept;

    // A block header: two words, each written whole by the one party that knows all of it.
    //   prev_  the physical predecessor's address (0 for a pool's first block) | prev_free_bit:
    //          whoever changes the predecessor or its state stores the whole word, so marking a
    //          successor used or free never reads its (often cold) header first.
    //   size_  the payload size (a multiple of 16, below 2^47) in bits 4..46, free_bit, and the
    //          slack (payload - requested bytes, below 2^17, see use()) in bits 47..63: the
    //          block's own.
    struct block {
        std::uintptr_t prev_;
        std::size_t size_;

        // Free-list links, in the payload of a free block.
        block*& next_free() noexcept { return reinterpret_cast<block**>(this + 1)[0]; }
        block*& prev_free() noexcept { return reinterpret_cast<block**>(this + 1)[1]; }
        [[nodiscard]] block* next_free() const noexcept {
            return reinterpret_cast<block* const*>(this + 1)[0];
        }
        [[nodiscard]] block* prev_free() const noexcept {
            return reinterpret_cast<block* const*>(this + 1)[1];
        }

        static constexpr std::size_t free_bit = 1;
        static constexpr std::uintptr_t prev_free_bit = 1;
        static constexpr unsigned slack_shift = max_size_log2;
        static constexpr std::size_t size_mask = ((std::size_t{1} << slack_shift) - 1) & ~std::size_t{15};

        [[nodiscard]] std::size_t size() const noexcept { return size_ & size_mask; }
        [[nodiscard]] std::size_t slack() const noexcept { return size_ >> slack_shift; }
        [[nodiscard]] bool is_free() const noexcept { return (size_ & free_bit) != 0; }
        [[nodiscard]] bool is_prev_free() const noexcept { return (prev_ & prev_free_bit) != 0; }
        [[nodiscard]] block* prev_phys() const noexcept {
            return reinterpret_cast<block*>(prev_ & ~std::uintptr_t{15});
        }
        [[nodiscard]] std::byte* payload() noexcept { return reinterpret_cast<std::byte*>(this + 1); }
        [[nodiscard]] const std::byte* payload() const noexcept {
            return reinterpret_cast<const std::byte*>(this + 1);
        }
        [[nodiscard]] block* next_phys() noexcept { return reinterpret_cast<block*>(payload() + size()); }
        [[nodiscard]] const block* next_phys() const noexcept {
            return reinterpret_cast<const block*>(payload() + size());
        }
    };
    static_assert(sizeof(block) == header_size);

    using pool_list = detail::pool_chain<block>;
    using pool_record = typename pool_list::record;
    static_assert(pool_list::overhead == pool_overhead && pool_list::min_payload == min_payload);

    // The payload a block at `payload` needs for `size` bytes so that its end is on the grid
    // (reallocate, and over-aligned requests, whose payloads are not at 16 mod 32).
    [[nodiscard]] static std::size_t payload_at(const void* payload, std::size_t size) noexcept {
        const auto at = reinterpret_cast<std::uintptr_t>(payload);
        return static_cast<std::size_t>(
            ((at + size + (block_granule - 1)) & ~std::uintptr_t{block_granule - 1}) - at);
    }

    [[nodiscard]] static block* header_of(const void* p) noexcept {
        return reinterpret_cast<block*>(const_cast<std::byte*>(static_cast<const std::byte*>(p))) - 1;
    }

    // The empty-list sentinel: list ends and heads of empty classes point here, so linking and
    // unlinking need no null tests (writes into it are harmless).
    struct nil_node {
        block header;
        block* links[2];
    };
    [[nodiscard]] block* nil() noexcept { return &nil_.header; }
    [[nodiscard]] const block* nil() const noexcept { return &nil_.header; }

    // Removes and returns the head of the first non-empty class that holds only blocks >= need, or
    // nullptr. Requires: 16 <= need <= 2^46, a multiple of 16.
    STRATA_ALWAYS_INLINE block* take_fit(std::size_t need) noexcept {
        // The class just above the one holding need - 1: every block in it and above fits.
        unsigned index = class_index(need - 1) + 1;
        unsigned fl = index >> SLI;
        std::uint32_t sl_map = sl_bitmap_[fl] & (~std::uint32_t{0} << (index & (sl_count - 1)));
        if (STRATA_UNLIKELY(sl_map == 0)) {
            const std::uint64_t fl_map = fl_bitmap_ & (~std::uint64_t{0} << (fl + 1));
            if (STRATA_UNLIKELY(fl_map == 0)) return nullptr;
            fl = static_cast<unsigned>(__builtin_ctzll(fl_map));
            sl_map = sl_bitmap_[fl];
        }
        index = (fl << SLI) + static_cast<unsigned>(__builtin_ctz(sl_map));
        block* b = heads_[index];
        block* next = b->next_free();
        // The new head is what the next request of this class takes: start fetching its header and
        // links now (nil() when the class empties: a harmless prefetch of the heap object).
        __builtin_prefetch(next, 1);
        heads_[index] = next; // the new head's back link goes stale: remove() tells heads by heads_
        // Clear the class's bit without a branch when the pop empties it: lists are short in a heap
        // that coalesces, so whether a pop empties its class is close to a coin toss, and a branch
        // on it would be mispredicted often.
        const std::uint32_t emptied = next == nil() ? 1u : 0u;
        const std::uint32_t sl_left = sl_bitmap_[fl] & ~(emptied << (index & (sl_count - 1)));
        sl_bitmap_[fl] = sl_left;
        if (STRATA_UNLIKELY(sl_left == 0)) fl_bitmap_ &= ~(std::uint64_t{1} << fl);
        return b;
    }

    STRATA_ALWAYS_INLINE void clear_class(unsigned index) noexcept {
        const unsigned fl = index >> SLI;
        sl_bitmap_[fl] &= ~(std::uint32_t{1} << (index & (sl_count - 1)));
        if (sl_bitmap_[fl] == 0) fl_bitmap_ &= ~(std::uint64_t{1} << fl);
    }

    // Marks free block `b` (already off its list) used for `need` payload bytes of which `asked` were
    // requested; splits off and lists the tail when it can hold a block that is not a sliver.
    //
    // A sliver is a tail under 1/16 of the request (at most max_sliver): it stays in the block as
    // slack instead of being listed. Good fit hands out blocks up to two class steps (1/16 at
    // SLI 5) larger than the request, so many splits would cut such slivers, each a list insert
    // now and a merge with cold headers later, for space few requests can use. The price is a
    // little internal waste (docs/heaps.md, "Slivers").
    STRATA_ALWAYS_INLINE void* use(block* b, std::size_t need, std::size_t asked) noexcept {
        const std::size_t have = b->size();
        const auto self = reinterpret_cast<std::uintptr_t>(b);
        std::size_t granted = have;
        // Masked, not min()ed: exact below 1 MiB requests, some value under 64 KiB above (which only
        // splits more): the slack must fit its 17 bits, and the mask is two instructions fewer.
        const std::size_t sliver = (need >> sliver_shift) & (max_sliver - 1);
        if (have - need >= header_size + min_payload + sliver) {
            auto* rest = reinterpret_cast<block*>(b->payload() + need);
            unpoison(rest, header_size + min_payload);
            const std::size_t rest_size = have - need - header_size;
            rest->prev_ = self;
            rest->size_ = rest_size | block::free_bit;
            reinterpret_cast<block*>(rest->payload() + rest_size)->prev_ =
                reinterpret_cast<std::uintptr_t>(rest) | block::prev_free_bit;
            insert(rest, rest_size);
            granted = need;
        } else {
            reinterpret_cast<block*>(b->payload() + have)->prev_ = self; // a store, not a read-modify-write
        }
        b->size_ = granted | ((granted - asked) << block::slack_shift);
        used_ += granted; // the peak is taken when used_ next falls (complete_free, flush)
        ++total_;
        acquire_bytes(b->payload(), asked);
        // ASan: a free payload's first 16 bytes (the links) were usable; past the request they
        // are not the caller's, nor is slack (no code in other builds).
        poison(b->payload() + asked, granted - asked);
        return b->payload();
    }

    // Lists free block `b` of payload `size` at the head of its class.
    STRATA_ALWAYS_INLINE void insert(block* b, std::size_t size) noexcept {
        const unsigned index = class_index(size);
        block* head = heads_[index];
        b->next_free() = head; // a head's own back link is never read
        head->prev_free() = b;
        heads_[index] = b;
        sl_bitmap_[index >> SLI] |= std::uint32_t{1} << (index & (sl_count - 1));
        fl_bitmap_ |= std::uint64_t{1} << (index >> SLI);
    }

    // Unlists free block `b`.
    STRATA_ALWAYS_INLINE void remove(block* b) noexcept {
        block* next = b->next_free();
        const unsigned index = class_index(b->size());
        if (heads_[index] == b) {
            heads_[index] = next;
            if (next == nil()) clear_class(index);
        } else {
            block* prev = b->prev_free();
            next->prev_free() = prev;
            prev->next_free() = next;
        }
    }

    // In ASan builds and at checks >= 2 a freed block is poisoned and filled at the call, so a use
    // after free is caught at once rather than one free later.
    static constexpr bool release_at_call = STRATA_ASAN || STRATA_CHECKS >= 2;

    // Completes the free of `p` (left in flight by deallocate): accounting, then merge and list.
    //
    // The peak is taken here rather than in use(): between two deallocate calls the bytes in use
    // only grow, so their largest value is the one just before the next free, used_ less the block
    // in flight. Every other fall of used_ (reallocate) takes the peak first.
    STRATA_ALWAYS_INLINE void complete_free(void* p) noexcept {
        block* b = header_of(p);
        const std::size_t size = b->size();
        used_ -= size;
        if (used_ > peak_) peak_ = used_;
        ++freed_;
        if constexpr (!release_at_call) release_bytes(b->payload() + min_payload, size - min_payload);
        unpoison(b->payload(), min_payload); // the free-list links live here
        free_block(b, size);
    }

    // Completes the free in flight for a query: what it reports is what immediate frees give. The
    // heap is not const when a free is in flight (only deallocate leaves one), so the cast is sound.
    void settle() const noexcept {
        if (pending_ != nullptr) const_cast<basic_tlsf*>(this)->flush();
    }

    // Frees used block `b` of payload `size` (accounting done): merges with free neighbours, lists it.
    // ASan: a header and links a merge absorbs become free payload, poisoned like the rest (a use
    // after free there is reported, and a checked free of that block sees no header).
    STRATA_ALWAYS_INLINE void free_block(block* b, std::size_t size) noexcept {
        if (b->is_prev_free()) {
            block* prev = b->prev_phys();
            remove(prev);
            size += prev->size() + header_size;
            poison(b, header_size + min_payload);
            b = prev; // prev's own predecessor is used: the merged block has no prev_free bit
        }
        auto* next = reinterpret_cast<block*>(b->payload() + size);
        if (next->is_free()) {
            remove(next);
            size += next->size() + header_size;
            poison(next, header_size + min_payload);
            next = reinterpret_cast<block*>(b->payload() + size);
        }
        b->size_ = size | block::free_bit;
        next->prev_ = reinterpret_cast<std::uintptr_t>(b) | block::prev_free_bit;
        insert(b, size);
    }

    [[nodiscard]] void* allocate_aligned(std::size_t size, std::size_t align) noexcept;
    [[nodiscard]] block* take_from_own_class(std::size_t need) noexcept;
    [[nodiscard]] void* allocate_last_resort(std::size_t need, std::size_t asked) noexcept {
        if (pending_ != nullptr) { // the block in flight may be what fits
            flush();
            if (block* b = take_fit(need)) return use(b, need, asked);
        }
        block* b = take_from_own_class(need);
        if (b != nullptr) return use(b, need, asked);
        // Off the grid: a block up to 16 bytes short of the grid's need still holds the request
        // (a pool's last block is one), so whatever largest_free_block() reports can be had.
        const std::size_t tight = (asked + (alignment - 1)) & ~(alignment - 1);
        if (tight == need) return nullptr;
        b = take_fit(tight);
        if (b == nullptr) b = take_from_own_class(tight);
        return b != nullptr ? use(b, tight, asked) : nullptr;
    }
    [[nodiscard]] bool verify_live(const void* p) const noexcept;
    [[nodiscard]] bool verify_takeable(const void* p, bool free) const noexcept;
    [[nodiscard]] bool corrupt(const void* where, const char* what) const noexcept;

    template <class>
    friend struct detail::private_access; // tests reach the state check() validates

    // Hot state first.
    std::uint64_t fl_bitmap_ = 0;
    void* pending_ = nullptr; // the free in flight (deallocate): still marked used, not listed
    std::size_t used_ = 0;    // bytes in use, the block in flight included
    std::size_t peak_ = 0;    // of used_ less the block in flight, up to the last fall (complete_free)
    std::size_t total_ = 0;   // allocations ever made
    std::size_t freed_ = 0;   // of them freed (live = total_ - freed_: one counter per call)
    std::size_t taken_ = 0;   // free blocks taken out (take_out): used blocks, not allocations
    nil_node nil_ = {};
    std::uint32_t sl_bitmap_[fl_count] = {};
    block* heads_[fl_count * sl_count]; // by class_index; nil() when empty
    pool_list pools_;
    std::size_t capacity_ = 0;
    std::size_t taken_bytes_ = 0; // payload bytes of the blocks taken out
};

/// The default TLSF: SLI 5 (32 second-level classes).
using tlsf = basic_tlsf<5>;

// The slow paths are compiled once, in src/heap/tlsf.cpp, for SLI 4 and 5.
extern template class basic_tlsf<4>;
extern template class basic_tlsf<5>;

} // namespace strata

#include "strata/heap/detail/tlsf_impl.hpp"
