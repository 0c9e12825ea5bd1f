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

} // namespace strata
