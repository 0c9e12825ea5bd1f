#pragma once
// An owned, over-aligned byte buffer for allocators over caller memory (tests of every family).
#include <cstddef>
#include <cstring>
#include <new>
#include <span>

namespace strata::test {

/// Byte every aligned_buffer starts out filled with (so tests can tell "never touched" bytes).
inline constexpr unsigned char untouched_byte = 0x5A;

/// An owned byte buffer aligned to `align` (4096 by default, so offsets and addresses have the
/// same alignment). Declare it before the allocator that uses it so it outlives the allocator.
class aligned_buffer {
public:
    explicit aligned_buffer(std::size_t size, std::size_t align = 4096)
        : size_(size), align_(align),
          data_(static_cast<std::byte*>(::operator new (size == 0 ? 1 : size, std::align_val_t{align}))) {
        std::memset(data_, untouched_byte, size);
    }
    ~aligned_buffer() { ::operator delete (data_, std::align_val_t{align_}); }
    aligned_buffer(const aligned_buffer&) = delete;
    aligned_buffer& operator=(const aligned_buffer&) = delete;

    [[nodiscard]] std::byte* data() const noexcept { return data_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::byte* end() const noexcept { return data_ + size_; }
    [[nodiscard]] std::span<std::byte> span() const noexcept { return {data_, size_}; }
    [[nodiscard]] std::span<std::byte> span(std::size_t offset, std::size_t n) const noexcept {
        return {data_ + offset, n};
    }

private:
    std::size_t size_;
    std::size_t align_;
    std::byte* data_;
};

} // namespace strata::test
