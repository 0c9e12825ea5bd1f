#pragma once
#include <cstddef>
#include <cstdint>
#include <new>

#include "strata/core/align.hpp"
#include "strata/source/memory_source.hpp"

namespace strata {

/// A memory source over the global aligned `operator new` (nothrow). Counts the blocks and bytes
/// it has outstanding so tests and the lab can see that everything came back.
/// Not thread-safe (one source per owner; wrap it if shared).
class heap_source {
public:
    /// Returns: a block of exactly `size` bytes aligned to at least max(align, alignof(max_align_t)),
    /// or an empty block when size is 0, align is not a power of two, or operator new fails.
    [[nodiscard]] memory_block allocate_block(std::size_t size, std::size_t align) noexcept {
        // Larger than any object can be: refuse before operator new sees it.
        if (!is_valid_request(size, align) || size > static_cast<std::size_t>(PTRDIFF_MAX)) return {};
        if (align < default_alignment) align = default_alignment;
        void* p = ::operator new (size, std::align_val_t{align}, std::nothrow);
        if (!p) return {};
        ++blocks_;
        bytes_ += size;
        return {static_cast<std::byte*>(p), size, align};
    }

    /// Effects: returns `b` to operator delete. Requires: `b` came from this source unchanged.
    void deallocate_block(memory_block b) noexcept {
        if (b.empty()) return;
        ::operator delete (b.data, std::align_val_t{b.align});
        --blocks_;
        bytes_ -= b.size;
    }

    [[nodiscard]] std::size_t outstanding_blocks() const noexcept { return blocks_; }
    [[nodiscard]] std::size_t outstanding_bytes() const noexcept { return bytes_; }

private:
    std::size_t blocks_ = 0;
    std::size_t bytes_ = 0;
};

} // namespace strata
