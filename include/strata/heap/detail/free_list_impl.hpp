#pragma once
// Out-of-line members of free_list. Included by free_list.hpp; explicitly instantiated for the three
// policies in src/heap/free_list.cpp.
#include <algorithm>
#include <new>

#include "strata/heap/free_list.hpp"

namespace strata {

namespace detail {
inline constexpr const char* free_list_name = "strata::free_list";
[[nodiscard]] inline bool below(const void* a, const void* b) noexcept {
    return reinterpret_cast<std::uintptr_t>(a) < reinterpret_cast<std::uintptr_t>(b);
}
} // namespace detail

template <class Policy>
bool free_list<Policy>::add_pool(std::span<std::byte> pool) noexcept {
    pool_record* record =
        pool_list::place(pool, pool_overhead + header_size + min_payload, std::size_t{1} << 47);
    if (record == nullptr) return false;
    block* first = record->first();
    first->prev_ = nullptr;
    first->size_ = (record->bytes - pool_overhead - header_size) | block::free_bit;
    block* sentinel = record->sentinel();
    sentinel->prev_ = first;
    sentinel->size_ = block::prev_free_bit;
    block* prev = nullptr;
    for (block* x = head_; x != nullptr && detail::below(x, first); x = x->next_free())
        prev = x;
    link_after(first, prev);
    poison(first->payload() + min_payload, first->size() - min_payload);
    pools_.append(record);
    capacity_ += record->bytes;
    return true;
}

template <class Policy>
void free_list<Policy>::link_after(block* b, block* prev) noexcept {
    block* next = prev != nullptr ? prev->next_free() : head_;
    b->next_free() = next;
    b->prev_free() = prev;
    if (next != nullptr) next->prev_free() = b;
    if (prev != nullptr) {
        prev->next_free() = b;
    } else {
        head_ = b;
    }
    ++free_count_;
}

template <class Policy>
void free_list<Policy>::unlink(block* b) noexcept {
    block* next = b->next_free();
    block* prev = b->prev_free();
    if (next != nullptr) next->prev_free() = prev;
    if (prev != nullptr) {
        prev->next_free() = next;
    } else {
        head_ = next;
    }
    if (rover_ == b) rover_ = next;
    --free_count_;
}

template <class Policy>
void free_list<Policy>::replace(block* old_block, block* new_block) noexcept {
    block* next = old_block->next_free();
    block* prev = old_block->prev_free();
    new_block->next_free() = next;
    new_block->prev_free() = prev;
    if (next != nullptr) next->prev_free() = new_block;
    if (prev != nullptr) {
        prev->next_free() = new_block;
    } else {
        head_ = new_block;
    }
    if (rover_ == old_block) rover_ = new_block;
}

template <class Policy>
auto free_list<Policy>::find(std::size_t need) noexcept -> block* {
    if constexpr (std::is_same_v<Policy, first_fit>) {
        for (block* b = head_; b != nullptr; b = b->next_free())
            if (b->size() >= need) return b;
        return nullptr;
    } else if constexpr (std::is_same_v<Policy, best_fit>) {
        block* best = nullptr;
        for (block* b = head_; b != nullptr; b = b->next_free()) {
            if (b->size() >= need && (best == nullptr || b->size() < best->size())) {
                best = b;
                if (b->size() == need) break;
            }
        }
        return best;
    } else {
        block* start = rover_ != nullptr ? rover_ : head_;
        for (block* b = start; b != nullptr; b = b->next_free()) {
            if (b->size() >= need) return rover_ = b;
        }
        for (block* b = head_; b != start; b = b->next_free()) {
            if (b->size() >= need) return rover_ = b;
        }
        return nullptr;
    }
}

template <class Policy>
void* free_list<Policy>::allocate(std::size_t size, std::size_t align) noexcept {
    if (!is_valid_request(size, align) || size > max_request || align > max_request) return nullptr;
    const std::size_t need = (size + (alignment - 1)) & ~(alignment - 1);
    block* b = find(align <= alignment ? need : need + align + header_size + min_payload);
    if (b == nullptr) return nullptr;
    block* front = nullptr; // a free piece split off in front for alignment, still listed
    if (align > alignment) {
        const auto payload = reinterpret_cast<std::uintptr_t>(b->payload());
        std::uintptr_t aligned = (payload + (align - 1)) & ~std::uintptr_t{align - 1};
        std::size_t gap = aligned - payload;
        if (gap != 0 && gap < header_size + min_payload) {
            aligned += align;
            gap += align;
        }
        if (gap != 0) {
            block* nb = header_of(reinterpret_cast<void*>(aligned));
            unpoison(nb, header_size + min_payload);
            nb->prev_ = b;
            nb->size_ = (b->size() - gap) | block::prev_free_bit;
            nb->next_phys()->prev_ = nb;
            b->size_ = (gap - header_size) | block::free_bit;
            front = b;
            b = nb;
        }
    }
    const std::size_t have = b->size();
    std::size_t granted = have;
    if (have - need >= header_size + min_payload) {
        auto* rest = reinterpret_cast<block*>(b->payload() + need);
        unpoison(rest, header_size + min_payload);
        rest->prev_ = b;
        rest->size_ = (have - need - header_size) | block::free_bit;
        rest->next_phys()->prev_ = rest;
        if (front != nullptr) {
            link_after(rest, front);
        } else {
            replace(b, rest);
        }
        granted = need;
    } else {
        if (front == nullptr) unlink(b);
        b->next_phys()->size_ &= ~block::prev_free_bit;
    }
    b->size_ = granted | (b->size_ & block::prev_free_bit) | ((granted - size) << 56);
    used_ += granted;
    requested_ += size;
    peak_ = std::max(peak_, used_);
    ++live_;
    ++total_;
    acquire_bytes(b->payload(), size);
    poison(b->payload() + size, granted - size); // ASan: the links' bytes past a small request
    return b->payload();
}

template <class Policy>
void free_list<Policy>::deallocate(void* p) noexcept {
    if (p == nullptr) return;
#if STRATA_CHECKS >= 1
    if (!verify_live(p)) return;
#endif
    block* b = header_of(p);
    const std::size_t size = b->size();
    used_ -= size;
    requested_ -= size - b->slack();
    --live_;
    release_bytes(b->payload() + min_payload, size - min_payload);
    unpoison(b->payload(), min_payload); // the free-list links live here (a 1-byte block left most poisoned)
    block* next = b->next_phys();
    const bool next_free = next->is_free();
    // ASan: a header and links a merge absorbs become free payload, poisoned like the rest.
    if (b->is_prev_free()) {
        block* prev = b->prev_;
        std::size_t total = prev->size() + header_size + size;
        if (next_free) {
            unlink(next);
            total += header_size + next->size();
            poison(next, header_size + min_payload);
        }
        poison(b, header_size + min_payload);
        prev->size_ = total | block::free_bit;
        block* after = prev->next_phys();
        after->prev_ = prev;
        after->size_ |= block::prev_free_bit;
    } else if (next_free) {
        replace(next, b);
        b->size_ = (size + header_size + next->size()) | block::free_bit;
        poison(next, header_size + min_payload);
        b->next_phys()->prev_ = b; // its prev_free bit is already set
    } else {
        b->size_ = size | block::free_bit;
        next->size_ |= block::prev_free_bit;
        block* prev = nullptr; // the address-ordered place: the walk that makes this a baseline
        for (block* x = head_; x != nullptr && detail::below(x, b); x = x->next_free())
            prev = x;
        link_after(b, prev);
    }
}

template <class Policy>
std::size_t free_list<Policy>::largest_free_block() const noexcept {
    std::size_t largest = 0;
    for (const block* b = head_; b != nullptr; b = b->next_free())
        largest = std::max(largest, b->size());
    return std::min(largest, max_request); // stats' promise: a request of this size succeeds
}

template <class Policy>
heap_metrics free_list<Policy>::metrics() const noexcept {
    heap_metrics m = pools_.block_metrics();
    m.capacity = capacity_;
    m.requested_bytes = requested_;
    return m;
}

template <class Policy>
bool free_list<Policy>::verify_live(const void* p) const noexcept {
    const pool_record* pool = pools_.find(p);
    if (!STRATA_VERIFY(1, pool != nullptr && is_aligned(p, alignment), foreign_pointer,
                       detail::free_list_name, p, "pointer lies outside every pool of this heap"))
        return false;
    if (!STRATA_VERIFY(1, pool_list::is_block_start(*pool, p), foreign_pointer, detail::free_list_name, p,
                       "pointer is not the start of a live block of this heap"))
        return false;
    return STRATA_VERIFY(1, !header_of(p)->is_free(), double_free, detail::free_list_name, p,
                         "block freed twice");
}

template <class Policy>
bool free_list<Policy>::corrupt(const void* where, const char* what) const noexcept {
    report_violation(violation{violation_kind::corruption, detail::free_list_name, where, what});
    return false;
}

template <class Policy>
bool free_list<Policy>::check() const noexcept {
    std::size_t free_blocks = 0, used_blocks = 0, used_bytes = 0, requested = 0, capacity = 0;
    for (const pool_record* pool = pools_.front(); pool != nullptr; pool = pool->next) {
        capacity += pool->bytes;
        const block* sentinel = pool->sentinel();
        std::size_t bytes = sizeof(pool_record) + header_size;
        const block* prev = nullptr;
        for (const block* b = pool->first(); b != sentinel; b = b->next_phys()) {
            if (detail::below(sentinel, b)) return corrupt(b, "block runs past its pool");
            if (b->prev_phys() != prev)
                return corrupt(b, "boundary tag: prev_phys does not name the predecessor");
            if (b->size() < min_payload || b->size() % alignment != 0)
                return corrupt(b, "block size below the minimum or not a multiple of 16");
            if (b->is_prev_free() != (prev != nullptr && prev->is_free()))
                return corrupt(b, "prev_free flag disagrees with the predecessor");
            if (b->is_free()) {
                if (prev != nullptr && prev->is_free()) return corrupt(b, "two adjacent free blocks");
                ++free_blocks;
            } else {
                if (b->slack() > b->size()) return corrupt(b, "slack larger than the block");
                ++used_blocks;
                used_bytes += b->size();
                requested += b->size() - b->slack();
            }
            bytes += header_size + b->size();
            prev = b;
        }
        if (sentinel->size() != 0 || sentinel->is_free() || sentinel->prev_phys() != prev ||
            sentinel->is_prev_free() != (prev != nullptr && prev->is_free()))
            return corrupt(sentinel, "pool end sentinel damaged");
        if (bytes != pool->bytes) return corrupt(pool, "block sizes do not sum to the pool size");
    }
    std::size_t listed = 0;
    bool rover_listed = rover_ == nullptr;
    const block* prev = nullptr;
    for (const block* b = head_; b != nullptr; b = b->next_free()) {
        if (++listed > free_blocks) return corrupt(b, "more listed blocks than free blocks (a cycle?)");
        // The link is tested before it is followed: a use after free writes the first word of a
        // freed payload, the link itself (ASan leaves it addressable). A header left inside a
        // merged block still reads "free": only a real block's successor names it as its
        // predecessor.
        if ((reinterpret_cast<std::uintptr_t>(b) & (alignment - 1)) != 0)
            return corrupt(b, "the free list names something that is not a block");
        // As integers: a broken link may be any value, and pointer arithmetic on it could wrap.
        const auto* payload =
            reinterpret_cast<const std::byte*>(reinterpret_cast<std::uintptr_t>(b) + header_size);
        const pool_record* in = pools_.find(payload);
        if (in == nullptr || !pool_list::is_block_start(*in, payload))
            return corrupt(b, "the free list names something that is not a block");
        if (!b->is_free()) return corrupt(b, "a used block sits in the free list");
        if (b->prev_free() != prev) return corrupt(b, "free-list back link broken");
        if (prev != nullptr && !detail::below(prev, b)) return corrupt(b, "free list not in address order");
        rover_listed = rover_listed || b == rover_;
        prev = b;
    }
    if (listed != free_blocks || listed != free_count_)
        return corrupt(nullptr, "the free list does not hold exactly the free blocks");
    if (!rover_listed) return corrupt(rover_, "next-fit rover points at a block not in the list");
    if (used_blocks != live_ || used_bytes != used_ || requested != requested_ || capacity != capacity_)
        return corrupt(nullptr, "counters disagree with the blocks");
    return true;
}

} // namespace strata
