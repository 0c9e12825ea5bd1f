#pragma once
#include <cstddef>

namespace strata {

/// A snapshot of an allocator's accounting. Every allocator reports one from `stats()`.
/// Fields an allocator cannot know are 0 (documented per allocator).
struct stats {
    std::size_t in_use = 0;             ///< bytes handed out and not yet released, padding included
    std::size_t peak = 0;               ///< highest `in_use` seen since construction
    std::size_t capacity = 0;           ///< bytes the allocator manages now (all blocks, all pages)
    std::size_t live_allocations = 0;   ///< allocations not yet released
    std::size_t total_allocations = 0;  ///< successful allocate calls since construction
    std::size_t largest_free_block = 0; ///< largest request that would succeed without growing

    friend constexpr bool operator==(const stats&, const stats&) noexcept = default;
};

/// Effects: adds `b`'s in_use, peak, capacity, live_allocations and total_allocations to `a`'s, as
/// a composite allocator sums its parts. The summed peak is an upper bound: the parts need not have
/// peaked together. largest_free_block is left alone: what it means for a composite (the larger of
/// two, the part that serves large requests, the current frame's) is the composite's to say.
constexpr void add_counts(stats& a, const stats& b) noexcept {
    a.in_use += b.in_use;
    a.peak += b.peak;
    a.capacity += b.capacity;
    a.live_allocations += b.live_allocations;
    a.total_allocations += b.total_allocations;
}

} // namespace strata
