#pragma once
// Build-wide configuration: the checks level and sanitizer detection.

/// STRATA_CHECKS selects how much contract checking is compiled into the allocators:
///   0 = none (release), 1 = O(1) checks (default when NDEBUG is not defined),
///   2 = full debugging (fill patterns 0xCD on allocate / 0xDD on free, extra validation).
/// The CMake option STRATA_CHECKS sets it for the library and for every consumer.
#ifndef STRATA_CHECKS
#ifdef NDEBUG
#define STRATA_CHECKS 0
#else
#define STRATA_CHECKS 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_ASAN 1
#endif
#endif
#ifndef STRATA_ASAN
#define STRATA_ASAN 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define STRATA_LIKELY(x) __builtin_expect(!!(x), 1)
#define STRATA_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define STRATA_NOINLINE __attribute__((noinline))
#define STRATA_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define STRATA_LIKELY(x) (x)
#define STRATA_UNLIKELY(x) (x)
#define STRATA_NOINLINE
#define STRATA_ALWAYS_INLINE inline
#endif

namespace strata {
/// The checks level this translation unit was compiled with.
inline constexpr int checks_level = STRATA_CHECKS;
} // namespace strata
