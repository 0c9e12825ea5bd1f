#pragma once
// engine_heap's size classes: 16-byte steps to 128 bytes, then 4 classes per doubling to 64 KiB
// (44 classes), and the granule every span of the heap is cut in.
//
// Exports (strata::engine_detail): granule_shift, granule, class_count, small_max, max_instances,
// page_sized_block, class_size, class_of_computed, class_table, class_of.
#include <array>
#include <cstddef>
#include <cstdint>

#include "strata/core/config.hpp"

namespace strata::engine_detail {

inline constexpr unsigned granule_shift = 16; // 64 KiB
inline constexpr std::size_t granule = std::size_t{1} << granule_shift;
inline constexpr unsigned class_count = 44;
inline constexpr std::size_t small_max = 65536;
inline constexpr unsigned max_instances = 16; // engine_heap objects alive at once (TLS slots)
/// Blocks of this size and more own whole pages past their first: the in-run purge gives those
/// pages back, and the stash leaves such classes out.
inline constexpr std::size_t page_sized_block = 8192;

/// Returns: the block size of class `c` (16..128 by 16, then 4 classes per doubling to 64 KiB).
[[nodiscard]] constexpr std::size_t class_size(unsigned c) noexcept {
    if (c < 8) return 16 * (std::size_t{c} + 1);
    const unsigned b = 8 + (c - 8) / 4;
    const std::size_t k = (c - 8) % 4 + 1;
    return (std::size_t{1} << (b - 1)) + k * (std::size_t{1} << (b - 3));
}

/// Returns: the smallest class whose block holds `size` bytes, by a loop (the reference for
/// class_of). Requires: size <= small_max.
[[nodiscard]] constexpr unsigned class_of_computed(std::size_t size) noexcept {
    if (size <= 128) return size == 0 ? 0u : static_cast<unsigned>((size + 15) >> 4) - 1;
    unsigned b = 0; // 2^(b-1) < size <= 2^b
    for (std::size_t v = size - 1; v != 0; v >>= 1)
        ++b;
    const std::size_t half = std::size_t{1} << (b - 1);
    const auto k = static_cast<unsigned>((size - 1 - half) >> (b - 3));
    return 8 + (b - 8) * 4 + k;
}

/// class_of_computed for every 16-byte step up to small_max (every class size is a multiple of
/// 16, so all sizes of a step share a class): 4 KiB, of which a program touches the lines of the
/// sizes it asks for.
inline constexpr auto class_table = [] {
    std::array<std::uint8_t, small_max / 16 + 1> t{};
    for (std::size_t i = 0; i < t.size(); ++i)
        t[i] = static_cast<std::uint8_t>(class_of_computed(i * 16));
    return t;
}();

/// Returns: class_of_computed(size) by one table load, with no branch on the size (mixed sizes
/// would make such a branch unpredictable). Requires: size <= small_max.
[[nodiscard]] STRATA_ALWAYS_INLINE unsigned class_of(std::size_t size) noexcept {
    return class_table[(size + 15) >> 4];
}

} // namespace strata::engine_detail
