#pragma once
// Shared heap metrics: one figure set that tlsf, buddy and free_list all report, so the lab and the
// docs compare the three heaps on the same definitions.
#include <cstddef>

#include "strata/core/allocator.hpp"

namespace strata {

/// A snapshot of a heap's layout, computed by walking it (O(blocks); never on a hot path).
struct heap_metrics {
    std::size_t capacity = 0;           ///< bytes the heap manages (every pool), bookkeeping included
    std::size_t used_bytes = 0;         ///< bytes of blocks handed out (what the heap granted)
    std::size_t requested_bytes = 0;    ///< bytes callers asked for, for the blocks now live
    std::size_t overhead_bytes = 0;     ///< in-band bookkeeping: block headers, pool records
    std::size_t free_bytes = 0;         ///< bytes of free blocks (their usable payload)
    std::size_t largest_free_block = 0; ///< payload of the largest free block
    std::size_t used_blocks = 0;        ///< live allocations
    std::size_t free_blocks = 0;        ///< free blocks

    /// Returns: used + free blocks.
    [[nodiscard]] constexpr std::size_t block_count() const noexcept { return used_blocks + free_blocks; }

    /// Returns: bytes granted beyond what was requested (rounding, buddy powers of two).
    [[nodiscard]] constexpr std::size_t internal_waste() const noexcept {
        return used_bytes > requested_bytes ? used_bytes - requested_bytes : 0;
    }

    /// Returns: 1 - largest_free_block / free_bytes, in [0, 1]; 0 with no free memory. 0 means all
    /// free memory is one block; near 1 means it is shattered into pieces too small to be useful.
    [[nodiscard]] constexpr double external_fragmentation() const noexcept {
        return free_bytes == 0
                   ? 0.0
                   : 1.0 - static_cast<double>(largest_free_block) / static_cast<double>(free_bytes);
    }

    /// Returns: used_bytes / requested_bytes (1.0 with nothing live): the buddy's "x1.44" figure.
    [[nodiscard]] constexpr double waste_ratio() const noexcept {
        return requested_bytes == 0 ? 1.0
                                    : static_cast<double>(used_bytes) / static_cast<double>(requested_bytes);
    }
};

/// Accumulates a walk (`for_each_block`) into heap_metrics: call add() per block.
struct heap_metrics_builder {
    heap_metrics m;
    void add(const block_info& b) noexcept {
        if (b.used) {
            ++m.used_blocks;
            m.used_bytes += b.size;
        } else {
            ++m.free_blocks;
            m.free_bytes += b.size;
            if (b.size > m.largest_free_block) m.largest_free_block = b.size;
        }
    }
};

} // namespace strata
