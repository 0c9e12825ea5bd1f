#pragma once
// Bit helpers: power-of-two tests and bit scans used by every allocator's hot path.
#include <bit>
#include <cstddef>
#include <cstdint>

namespace strata {

/// Returns: true when `x` is a power of two (0 is not).
[[nodiscard]] constexpr bool is_pow2(std::size_t x) noexcept { return x != 0 && (x & (x - 1)) == 0; }

/// Returns: floor(log2(x)). Requires: x != 0.
[[nodiscard]] constexpr unsigned log2_floor(std::size_t x) noexcept {
    return static_cast<unsigned>(std::bit_width(x)) - 1u;
}

/// Returns: ceil(log2(x)); 0 for x <= 1.
[[nodiscard]] constexpr unsigned log2_ceil(std::size_t x) noexcept {
    return x <= 1 ? 0u : static_cast<unsigned>(std::bit_width(x - 1));
}

/// Returns: the smallest power of two >= x (1 for x == 0), or 0 when that does not fit in size_t.
[[nodiscard]] constexpr std::size_t next_pow2(std::size_t x) noexcept {
    if (x <= 1) return 1;
    const unsigned w = static_cast<unsigned>(std::bit_width(x - 1));
    return w >= sizeof(std::size_t) * 8 ? 0 : std::size_t{1} << w;
}

/// Returns: index of the lowest set bit. Requires: x != 0.
[[nodiscard]] constexpr unsigned lowest_bit(std::uint64_t x) noexcept {
    return static_cast<unsigned>(std::countr_zero(x));
}

/// Returns: index of the highest set bit. Requires: x != 0.
[[nodiscard]] constexpr unsigned highest_bit(std::uint64_t x) noexcept {
    return 63u - static_cast<unsigned>(std::countl_zero(x));
}

} // namespace strata
