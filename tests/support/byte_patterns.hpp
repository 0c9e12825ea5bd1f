#pragma once
// Byte patterns for tests that check what an allocator wrote or kept: a seeded pattern to fill a
// block with and find intact later, and "every byte is v" (the 0xCD / 0xDD fills, untouched bytes).
#include <cstddef>

namespace strata::test {

/// Fills [p, p+n) with a pattern derived from `seed`.
inline void fill_pattern(void* p, std::size_t n, unsigned seed) noexcept {
    auto* b = static_cast<unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i)
        b[i] = static_cast<unsigned char>((seed * 31u + i * 13u + 7u) & 0xFFu);
}

/// True when [p, p+n) still holds fill_pattern(p, n, seed).
inline bool holds_pattern(const void* p, std::size_t n, unsigned seed) noexcept {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) {
        if (b[i] != static_cast<unsigned char>((seed * 31u + i * 13u + 7u) & 0xFFu)) return false;
    }
    return true;
}

/// True when every byte of [p, p+n) equals `value`.
inline bool all_bytes(const void* p, std::size_t n, unsigned char value) noexcept {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) {
        if (b[i] != value) return false;
    }
    return true;
}

} // namespace strata::test
