#pragma once
// Contract violations and the replaceable handler that hears about them.
//
// A violation is a caller bug the allocator detected (double free, foreign pointer, out-of-order
// LIFO free, bad marker, stale handle, ...). It is distinct from exhaustion, which is an ordinary
// `nullptr`. Which violations are detected depends on STRATA_CHECKS (see config.hpp); a detected
// violation never changes allocator state: the offending call is ignored after the report.
#include <cstddef>
#include <cstdint>

#include "strata/core/config.hpp"
#include "strata/core/source_location.hpp"

namespace strata {

/// What kind of contract violation was detected.
enum class violation_kind {
    double_free,       ///< a block was freed twice
    foreign_pointer,   ///< a pointer this allocator never handed out
    out_of_order_free, ///< a LIFO allocator was freed out of order
    invalid_marker,    ///< a marker from another allocator, or newer than the current top
    stale_handle,      ///< a handle whose slot has since been reused or freed
    size_mismatch,     ///< a sized free named a size other than the allocated one
    corruption,        ///< a fence or internal invariant was found broken
    leak,              ///< an allocator was destroyed with live allocations
    invalid_argument,  ///< a request outside the documented domain (reported only where noted)
};

/// Returns: a stable lower-case name for `kind`, e.g. "double_free".
[[nodiscard]] const char* to_string(violation_kind kind) noexcept;

/// Returns: the STRATA_CHECKS level libstrata was compiled with. A program must compile the headers
/// at the same level (checks_level): the levels change members of some allocators, not only their
/// checks. The CMake target passes the library's level on; this lets a test or a program verify it.
[[nodiscard]] int library_checks_level() noexcept;

/// Everything a handler is told about one violation.
struct violation {
    violation_kind kind;
    const char* allocator; ///< the reporting component, e.g. "strata::stack_allocator"
    const void* pointer;   ///< the pointer (or marker position) involved, may be null
    const char* message;   ///< one human sentence; valid until the handler returns (copy to keep)
    strata::source_location where = strata::source_location::current();
};

/// A violation handler. It may return (the call is then ignored) or abort. It may throw only
/// where report_violation() is called directly: the allocators report from noexcept functions, so
/// an exception from inside one of their calls ends in std::terminate.
using violation_handler = void (*)(const violation&);

/// Effects: installs `handler` (nullptr restores the default) process-wide; thread-safe.
/// Returns: the previously installed handler.
violation_handler set_violation_handler(violation_handler handler) noexcept;

/// Returns: the handler now installed (never null).
[[nodiscard]] violation_handler get_violation_handler() noexcept;

/// The default handler: prints the violation to stderr and calls std::abort().
void default_violation_handler(const violation& v);

/// Effects: passes `v` to the installed handler. Not noexcept so a test handler may throw.
void report_violation(const violation& v);

/// Returns: how many violations this thread has reported so far. A wrapper compares it across a
/// call to learn that the wrapped allocator refused the call (and so changed nothing).
[[nodiscard]] std::uint64_t violations_reported() noexcept;

/// RAII: installs a handler for a scope and restores the previous one on exit (tests use this).
class scoped_violation_handler {
public:
    explicit scoped_violation_handler(violation_handler h) noexcept : previous_(set_violation_handler(h)) {}
    ~scoped_violation_handler() { set_violation_handler(previous_); }
    scoped_violation_handler(const scoped_violation_handler&) = delete;
    scoped_violation_handler& operator=(const scoped_violation_handler&) = delete;

private:
    violation_handler previous_;
};

} // namespace strata

/// Reports a violation when `cond` is false and STRATA_CHECKS >= level. Evaluates to `cond` (at
/// lower levels it is not evaluated and the expression is `true`), so callers can bail out:
///   if (!STRATA_VERIFY(1, p == top_, out_of_order_free, "strata::stack_allocator", p, "...")) return;
#define STRATA_VERIFY(level, cond, kind, who, ptr, msg)                                                      \
    ((STRATA_CHECKS < (level)) || (cond) ||                                                                  \
     (::strata::report_violation(::strata::violation{::strata::violation_kind::kind, (who), (ptr), (msg)}),  \
      false))
