#pragma once
#include <cstddef>
#include <span>

#include "strata/core/align.hpp"
#include "strata/source/memory_source.hpp"

namespace strata {

/// A memory source over a caller-owned buffer (a static array, a stack buffer, a mapped file).
/// Blocks are carved from the front; freeing the most recently carved block returns it, other
/// frees are absorbed (the memory comes back when the buffer's owner frees the buffer).
/// Not thread-safe.
class buffer_source {
public:
    /// Requires: `buffer` outlives this source and everything allocated from it.
    explicit buffer_source(std::span<std::byte> buffer) noexcept
        : begin_(buffer.data()), cur_(buffer.data()), end_(buffer.data() + buffer.size()) {}

    /// Returns: a block of exactly `size` bytes aligned to `align`, or an empty block when the rest
    /// of the buffer is too small, size is 0, or align is not a power of two.
    [[nodiscard]] memory_block allocate_block(std::size_t size, std::size_t align) noexcept {
        if (!is_valid_request(size, align)) return {};
        const std::size_t pad = align_padding(reinterpret_cast<std::uintptr_t>(cur_), align);
        const auto avail = static_cast<std::size_t>(end_ - cur_);
        if (pad > avail || size > avail - pad) return {};
        std::byte* p = cur_ + pad;
        last_ = cur_;
        cur_ = p + size;
        return {p, size, align};
    }

    /// Effects: if `b` is the last block carved, its bytes become available again.
    void deallocate_block(memory_block b) noexcept {
        if (!b.empty() && b.end() == cur_ && last_ != nullptr) {
            cur_ = last_;
            last_ = nullptr;
        }
    }

    [[nodiscard]] std::size_t used() const noexcept { return static_cast<std::size_t>(cur_ - begin_); }
    [[nodiscard]] std::size_t capacity() const noexcept { return static_cast<std::size_t>(end_ - begin_); }
    [[nodiscard]] std::span<std::byte> buffer() const noexcept { return {begin_, end_}; }

private:
    std::byte* begin_;
    std::byte* cur_;
    std::byte* end_;
    std::byte* last_ = nullptr; // cur_ before the last carve: one level of undo is enough for LIFO users
};

} // namespace strata
