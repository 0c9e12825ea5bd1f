#pragma once
// What kind of build a test runs in, for the tests that size their work or skip a timing run by it.
// Exports: sanitized, optimized.

namespace strata::test {

/// True under AddressSanitizer or ThreadSanitizer (each operation costs several times more there).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool sanitized = true;
#else
inline constexpr bool sanitized = false;
#endif
#else
inline constexpr bool sanitized = false;
#endif

/// True when the test file is compiled with optimization (-O1 and up).
#if defined(__OPTIMIZE__)
inline constexpr bool optimized = true;
#else
inline constexpr bool optimized = false;
#endif

} // namespace strata::test
