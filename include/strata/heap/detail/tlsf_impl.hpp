#pragma once
// Out-of-line members of basic_tlsf (slow paths, walkers). Included by tlsf.hpp; explicitly
// instantiated for SLI 4 and 5 in src/heap/tlsf.cpp.
#include <algorithm>
#include <cstring>
#include <new>

#include "strata/heap/tlsf.hpp"

namespace strata {

namespace detail {
inline constexpr const char* tlsf_name = "strata::tlsf";
} // namespace detail

template <unsigned SLI>
bool basic_tlsf<SLI>::add_pool(std::span<std::byte> pool) noexcept {
    // The record is 32 bytes: on a 32-byte boundary, the first block starts on the grid.
    pool_record* record = pool_list::place(pool, pool_overhead + header_size + min_payload,
                                           std::size_t{1} << max_size_log2, block_granule);
    if (record == nullptr) return false;
    block* first = record->first();
    first->prev_ = 0;
    first->size_ = (record->bytes - pool_overhead - header_size) | block::free_bit;
    block* sentinel = record->sentinel();
    sentinel->prev_ = reinterpret_cast<std::uintptr_t>(first) | block::prev_free_bit;
    sentinel->size_ = 0; // size 0, used: walks and merges stop here
    insert(first, first->size());
    poison(first->payload() + min_payload, first->size() - min_payload);
    pools_.append(record);
    capacity_ += record->bytes;
    return true;
}

template <unsigned SLI>
void* basic_tlsf<SLI>::allocate_aligned(std::size_t size, std::size_t align) noexcept {
    if (!is_valid_request(size, align) || size > max_request || align > max_request) return nullptr;
    if (align <= alignment) return allocate(size, alignment); // not reached from allocate(); kept total
    // Searched for as before the grid (16-byte rounding), so what fits is what fitted; the block
    // ends on the grid below when it has the room.
    const std::size_t need = (size + (alignment - 1)) & ~(alignment - 1);
    // Room for the worst front gap: up to align - 16, or align + 16 when a gap must hold a block.
    const std::size_t search = need + align + header_size + min_payload;
    block* b = take_fit(search);
    if (b == nullptr) b = take_from_own_class(search);
    if (b == nullptr && pending_ != nullptr) { // the block in flight may be what fits
        flush();
        b = take_fit(search);
        if (b == nullptr) b = take_from_own_class(search);
    }
    if (b == nullptr) return nullptr;
    const auto payload = reinterpret_cast<std::uintptr_t>(b->payload());
    std::uintptr_t aligned = (payload + (align - 1)) & ~std::uintptr_t{align - 1};
    std::size_t gap = aligned - payload;
    if (gap != 0 && gap < header_size + min_payload) {
        aligned += align; // the front piece must be able to hold a free block of its own
        gap += align;
    }
    if (gap != 0) {
        block* nb = header_of(reinterpret_cast<void*>(aligned));
        unpoison(nb, header_size + min_payload);
        nb->prev_ = reinterpret_cast<std::uintptr_t>(b) | block::prev_free_bit;
        nb->size_ = (b->size() - gap) | block::free_bit;
        nb->next_phys()->prev_ = reinterpret_cast<std::uintptr_t>(nb) | block::prev_free_bit;
        b->size_ = (gap - header_size) | block::free_bit; // b was free: its predecessor is used
        insert(b, b->size());
        b = nb;
    }
    const std::size_t grid_need = payload_at(b->payload(), size);
    return use(b, grid_need <= b->size() ? grid_need : need, size);
}

// The good-fit search rounds a request up to the next class so that any block found fits. When that
// finds nothing, a block that fits may still sit in the request's own class: probe the head of that
// one list, at most own_class_probes blocks, so the worst case stays O(1) (walking the whole list
// would make a failing request O(blocks in the class)). largest_free_block() looks no further, so
// what it reports can always be had.
template <unsigned SLI>
auto basic_tlsf<SLI>::take_from_own_class(std::size_t need) noexcept -> block* {
    block* b = heads_[class_index(need)];
    for (unsigned probes = 0; b != nil() && probes < own_class_probes; ++probes, b = b->next_free()) {
        if (b->size() >= need) {
            remove(b);
            return b;
        }
    }
    return nullptr;
}

template <unsigned SLI>
void* basic_tlsf<SLI>::reallocate(void* p, std::size_t new_size, std::size_t align) noexcept {
    if (p == nullptr) return allocate(new_size, align);
    // As allocate() answers: size 0 or too large, alignment 0, not a power of two or too large.
    if (new_size - 1 >= max_request || align - 1 >= max_request || (align & (align - 1)) != 0) return nullptr;
    flush(); // the free in flight may be p's successor; and used_ may fall below: take the peak
#if STRATA_CHECKS >= 1
    if (!verify_live(p)) return nullptr;
#endif
    // In place only where p already has the alignment asked for; otherwise the block moves.
    const bool aligned = (reinterpret_cast<std::uintptr_t>(p) & (align - 1)) == 0;
    if (aligned && resize_here(p, new_size)) return p;
    const block* b = header_of(p);
    const std::size_t old_asked = b->size() - b->slack();
    void* q = allocate(new_size, align);
    if (q == nullptr) return nullptr;
    std::memcpy(q, p, std::min(old_asked, new_size));
    deallocate(p);
    return q;
}

template <unsigned SLI>
bool basic_tlsf<SLI>::resize_in_place(void* p, std::size_t new_size) noexcept {
    if (p == nullptr || new_size - 1 >= max_request) return false;
    flush(); // the free in flight may be p's successor; and used_ may fall below: take the peak
#if STRATA_CHECKS >= 1
    if (!verify_live(p)) return false;
#endif
    return resize_here(p, new_size);
}

template <unsigned SLI>
bool basic_tlsf<SLI>::resize_here(void* p, std::size_t new_size) noexcept {
    block* b = header_of(p);
    // What must fit is the 16-byte rounding; the block ends on the grid where the room allows.
    const std::size_t tight = (new_size + (alignment - 1)) & ~(alignment - 1);
    std::size_t need = tight;
    std::size_t have = b->size();
    const std::size_t old_usable = have;
    const std::size_t old_asked = have - b->slack();
    if (tight > have) {
        block* next = b->next_phys();
        if (!next->is_free() || have + header_size + next->size() < tight) return false;
        // Grow into the free successor, then trim below.
        remove(next);
        const std::size_t total = have + header_size + next->size();
        block* after = reinterpret_cast<block*>(b->payload() + total);
        after->prev_ = reinterpret_cast<std::uintptr_t>(b);
        b->size_ = total;
        used_ += total - have;
        have = total;
    }
    if (const std::size_t grid_need = payload_at(p, new_size); grid_need <= have) need = grid_need;
    if (new_size > old_asked) {
        // The bytes up to the old usable size were the caller's (usable_size) and keep what they
        // hold; only those past it get the allocated pattern.
        const std::size_t kept = std::min(new_size, old_usable);
        unpoison(b->payload() + old_asked, kept - old_asked);
        if (new_size > kept) acquire_bytes(b->payload() + kept, new_size - kept);
    } else {
        release_bytes(b->payload() + new_size, old_asked - new_size);
    }
    std::size_t granted = have;
    if (have - need >= header_size + min_payload) {
        auto* rest = reinterpret_cast<block*>(b->payload() + need);
        unpoison(rest, header_size + min_payload);
        rest->prev_ = reinterpret_cast<std::uintptr_t>(b);
        rest->size_ = have - need - header_size; // used, predecessor used: freed just below
        // The successor's prev_free flag is unchanged (b was used before, rest is used now).
        rest->next_phys()->prev_ =
            reinterpret_cast<std::uintptr_t>(rest) | (rest->next_phys()->prev_ & block::prev_free_bit);
        release_bytes(rest->payload() + min_payload, rest->size() - min_payload);
        used_ -= rest->size() + header_size;
        free_block(rest, rest->size());
        granted = need;
    }
    b->size_ = granted | ((granted - new_size) << block::slack_shift);
    // ASan: past new_size lie the old slack, or a successor's header and links grown over.
    poison(b->payload() + new_size, granted - new_size);
    if (used_ > peak_) peak_ = used_;
    return true;
}

template <unsigned SLI>
std::size_t basic_tlsf<SLI>::largest_free_block() const noexcept {
    settle();
    if (fl_bitmap_ == 0) return 0;
    // Pools reach 2^47 bytes, requests only max_request: report what a request can get.
    const unsigned fl = 63u - static_cast<unsigned>(std::countl_zero(fl_bitmap_));
    const unsigned sl = 31u - static_cast<unsigned>(std::countl_zero(sl_bitmap_[fl]));
    // The blocks an allocation would probe (take_from_own_class): every block of this class fits a
    // request of its class's lower bound, and the largest of the first own_class_probes fits one
    // of its own size. A larger block further down the list is not reported: no request gets it.
    std::size_t largest = 0;
    unsigned probes = 0;
    for (const block* b = heads_[(fl << SLI) + sl]; b != nil() && probes < own_class_probes;
         ++probes, b = b->next_free())
        largest = std::max(largest, b->size());
    return std::min(largest, max_request);
}

template <unsigned SLI>
heap_metrics basic_tlsf<SLI>::metrics() const noexcept {
    settle();
    heap_metrics m = pools_.block_metrics();
    m.capacity = capacity_;
    // Requested bytes are not counted on the hot path: each used block keeps its slack.
    for (const pool_record* pool = pools_.front(); pool != nullptr; pool = pool->next)
        for (const block* b = pool->first(); b->size() != 0; b = b->next_phys())
            if (!b->is_free()) m.requested_bytes += b->size() - b->slack();
    return m;
}

template <unsigned SLI>
bool basic_tlsf<SLI>::verify_live(const void* p) const noexcept {
    if (!STRATA_VERIFY(1, p != pending_, double_free, detail::tlsf_name, p,
                       "block freed twice (its first free is in flight)"))
        return false;
    const pool_record* pool = pools_.find(p);
    if (!STRATA_VERIFY(1, pool != nullptr && is_aligned(p, alignment), foreign_pointer, detail::tlsf_name, p,
                       "pointer lies outside every pool of this heap"))
        return false;
    // (A block freed and then merged into a neighbour is no block start: its second free reads as a
    // foreign pointer.)
    if (!STRATA_VERIFY(1, pool_list::is_block_start(*pool, p), foreign_pointer, detail::tlsf_name, p,
                       "pointer is not the start of a live block of this heap"))
        return false;
    return STRATA_VERIFY(1, !header_of(p)->is_free(), double_free, detail::tlsf_name, p, "block freed twice");
}

// take_out (`free`) wants a listed free block; put_back a used one while some block is out.
template <unsigned SLI>
bool basic_tlsf<SLI>::verify_takeable(const void* p, bool free) const noexcept {
    const pool_record* pool = pools_.find(p);
    const bool block =
        pool != nullptr && is_aligned(p, alignment) && p != pending_ && pool_list::is_block_start(*pool, p);
    if (free)
        return STRATA_VERIFY(1, block && header_of(p)->is_free(), invalid_argument, detail::tlsf_name, p,
                             "take_out: not a free block of this heap");
    return STRATA_VERIFY(1, block && !header_of(p)->is_free() && taken_ != 0, invalid_argument,
                         detail::tlsf_name, p, "put_back: not a block taken out of this heap");
}

template <unsigned SLI>
bool basic_tlsf<SLI>::corrupt(const void* where, const char* what) const noexcept {
    report_violation(violation{violation_kind::corruption, detail::tlsf_name, where, what});
    return false;
}

template <unsigned SLI>
bool basic_tlsf<SLI>::check() const noexcept {
    settle();
    std::size_t free_blocks = 0, used_blocks = 0, used_bytes = 0, capacity = 0;
    for (const pool_record* pool = pools_.front(); pool != nullptr; pool = pool->next) {
        capacity += pool->bytes;
        const block* sentinel = pool->sentinel();
        std::size_t bytes = sizeof(pool_record) + header_size;
        const block* prev = nullptr;
        const block* b = pool->first();
        while (b != sentinel) {
            const auto at = reinterpret_cast<std::uintptr_t>(b);
            if (at > reinterpret_cast<std::uintptr_t>(sentinel))
                return corrupt(b, "block runs past its pool");
            if (b->prev_phys() != prev || (b->prev_ & 14) != 0)
                return corrupt(b, "boundary tag: prev_phys does not name the predecessor");
            if (b->size() < min_payload || (b->size_ & 14) != 0)
                return corrupt(b, "block size below the minimum or not a multiple of 16");
            if (b->is_prev_free() != (prev != nullptr && prev->is_free()))
                return corrupt(b, "prev_free flag disagrees with the predecessor");
            if (b->is_free()) {
                if (prev != nullptr && prev->is_free()) return corrupt(b, "two adjacent free blocks");
                if (b->slack() != 0) return corrupt(b, "free block carries a slack");
                ++free_blocks;
            } else {
                if (b->slack() > b->size()) return corrupt(b, "slack larger than the block");
                ++used_blocks;
                used_bytes += b->size();
            }
            bytes += header_size + b->size();
            prev = b;
            b = b->next_phys();
        }
        if (sentinel->size_ != 0 || sentinel->prev_phys() != prev ||
            sentinel->is_prev_free() != (prev != nullptr && prev->is_free()))
            return corrupt(sentinel, "pool end sentinel damaged");
        if (bytes != pool->bytes) return corrupt(pool, "block sizes do not sum to the pool size");
    }
    std::size_t listed = 0;
    // A bit above the top level names no list: a search would index past the arrays.
    if ((fl_bitmap_ >> fl_count) != 0)
        return corrupt(nullptr, "first-level bitmap names a level above the top one");
    for (unsigned fl = 0; fl < fl_count; ++fl) {
        if (((fl_bitmap_ >> fl) & 1u) != (sl_bitmap_[fl] != 0 ? 1u : 0u))
            return corrupt(nullptr, "first-level bitmap disagrees with the second-level bitmap");
        for (unsigned sl = 0; sl < sl_count; ++sl) {
            const block* head = heads_[(fl << SLI) + sl];
            if (((sl_bitmap_[fl] >> sl) & 1u) != (head != nil() ? 1u : 0u))
                return corrupt(head, "second-level bitmap disagrees with its free list");
            const block* prev = nil();
            for (const block* b = head; b != nil(); b = b->next_free()) {
                if (++listed > free_blocks)
                    return corrupt(b, "more listed blocks than free blocks (a cycle?)");
                // The link is tested before it is followed: a use after free writes the first
                // word of a freed payload, the link itself (ASan leaves it addressable).
                // A header left inside a merged block still reads "free": only a real block's
                // successor names it as its predecessor.
                if ((reinterpret_cast<std::uintptr_t>(b) & (alignment - 1)) != 0)
                    return corrupt(b, "a free list names something that is not a block");
                // As integers: a broken link may be any value, and pointer arithmetic on it could wrap.
                const auto* payload =
                    reinterpret_cast<const std::byte*>(reinterpret_cast<std::uintptr_t>(b) + header_size);
                const pool_record* in = pools_.find(payload);
                if (in == nullptr || !pool_list::is_block_start(*in, payload))
                    return corrupt(b, "a free list names something that is not a block");
                if (!b->is_free()) return corrupt(b, "a used block sits in a free list");
                if (prev != nil() && b->prev_free() != prev) return corrupt(b, "free-list back link broken");
                unsigned f, s;
                mapping(b->size(), f, s);
                if (f != fl || s != sl) return corrupt(b, "free block listed in the wrong size class");
                prev = b;
            }
        }
    }
    if (listed != free_blocks) return corrupt(nullptr, "a free block is missing from the free lists");
    if (used_blocks != total_ - freed_ + taken_ || used_bytes != used_ + taken_bytes_ ||
        capacity != capacity_)
        return corrupt(nullptr, "counters disagree with the blocks");
    return true;
}

} // namespace strata
