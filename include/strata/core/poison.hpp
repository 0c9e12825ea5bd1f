#pragma once
// Fill patterns and AddressSanitizer poisoning, so use-after-free inside an allocator's own block
// is caught by the sanitizer (ASan builds) or made obvious in a debugger (STRATA_CHECKS >= 2).
#include <cstddef>
#include <cstring>

#include "strata/core/config.hpp"

#if STRATA_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace strata {

inline constexpr unsigned char fill_allocated = 0xCD; ///< written over fresh blocks at checks >= 2
inline constexpr unsigned char fill_freed = 0xDD;     ///< written over released bytes at checks >= 2

/// Effects: marks [p, p+n) unusable for ASan; no-op in other builds.
inline void poison(const void* p, std::size_t n) noexcept {
#if STRATA_ASAN
    if (n) ASAN_POISON_MEMORY_REGION(p, n);
#else
    (void)p, (void)n;
#endif
}

/// Effects: marks [p, p+n) usable again for ASan; no-op in other builds.
inline void unpoison(const void* p, std::size_t n) noexcept {
#if STRATA_ASAN
    if (n) ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
    (void)p, (void)n;
#endif
}

/// Returns: true when some byte of [p, p+n) is poisoned (ASan builds); false in other builds.
/// For checks that read memory that may be released: a poisoned header cannot be a live block's.
[[nodiscard]] inline bool is_poisoned(const void* p, std::size_t n) noexcept {
#if STRATA_ASAN
    return n != 0 && __asan_region_is_poisoned(const_cast<void*>(p), n) != nullptr;
#else
    (void)p, (void)n;
    return false;
#endif
}

/// Effects: at checks >= 2 fills [p, p+n) with the freed pattern; then poisons it for ASan.
inline void release_bytes(void* p, std::size_t n) noexcept {
#if STRATA_CHECKS >= 2
    unpoison(p, n); // released ranges include padding that was never unpoisoned
    if (n) std::memset(p, fill_freed, n);
#endif
    poison(p, n);
}

/// Effects: unpoisons [p, p+n) for ASan, then at checks >= 2 fills it with the allocated pattern.
inline void acquire_bytes(void* p, std::size_t n) noexcept {
    unpoison(p, n);
#if STRATA_CHECKS >= 2
    if (n) std::memset(p, fill_allocated, n);
#else
    (void)p;
#endif
}

} // namespace strata
