#pragma once
// Overflow-safe alignment and size arithmetic. Every function here answers "does not fit"
// instead of wrapping, so allocators can reject SIZE_MAX-style requests without corrupting state.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

#include "strata/core/bit.hpp"

namespace strata {

/// The alignment an allocator uses when the caller does not name one.
inline constexpr std::size_t default_alignment = alignof(std::max_align_t);

/// Returns: true when `p` is a multiple of `align`. Requires: is_pow2(align).
[[nodiscard]] inline bool is_aligned(const void* p, std::size_t align) noexcept {
    return (reinterpret_cast<std::uintptr_t>(p) & (align - 1)) == 0;
}

/// Returns: the padding that brings `address` up to a multiple of `align`. Requires: is_pow2(align).
[[nodiscard]] constexpr std::size_t align_padding(std::uintptr_t address, std::size_t align) noexcept {
    return static_cast<std::size_t>((std::uintptr_t{0} - address) & (align - 1));
}

/// Returns: `value` rounded up to a multiple of `align`, or std::nullopt when that overflows.
/// Requires: is_pow2(align).
[[nodiscard]] constexpr std::optional<std::size_t> align_up(std::size_t value, std::size_t align) noexcept {
    const std::size_t pad = align_padding(value, align);
    if (value > std::numeric_limits<std::size_t>::max() - pad) return std::nullopt;
    return value + pad;
}

/// Returns: `value` rounded down to a multiple of `align`. Requires: is_pow2(align).
[[nodiscard]] constexpr std::size_t align_down(std::size_t value, std::size_t align) noexcept {
    return value & ~(align - 1);
}

/// Returns: a + b, or std::nullopt on overflow.
[[nodiscard]] constexpr std::optional<std::size_t> checked_add(std::size_t a, std::size_t b) noexcept {
    if (a > std::numeric_limits<std::size_t>::max() - b) return std::nullopt;
    return a + b;
}

/// Returns: a * b, or std::nullopt on overflow.
[[nodiscard]] constexpr std::optional<std::size_t> checked_mul(std::size_t a, std::size_t b) noexcept {
    if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b) return std::nullopt;
    return a * b;
}

/// Returns: true when (size, align) is a request any strata allocator may try to serve: size > 0
/// and align a power of two. Exhaustion is judged by the allocator.
[[nodiscard]] constexpr bool is_valid_request(std::size_t size, std::size_t align) noexcept {
    return size != 0 && is_pow2(align);
}

} // namespace strata
