#include "strata/core/check.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace strata {
namespace {
std::atomic<violation_handler> g_handler{nullptr};
constinit thread_local std::uint64_t t_reported = 0;
} // namespace

int library_checks_level() noexcept { return checks_level; }

const char* to_string(violation_kind kind) noexcept {
    switch (kind) {
    case violation_kind::double_free: return "double_free";
    case violation_kind::foreign_pointer: return "foreign_pointer";
    case violation_kind::out_of_order_free: return "out_of_order_free";
    case violation_kind::invalid_marker: return "invalid_marker";
    case violation_kind::stale_handle: return "stale_handle";
    case violation_kind::size_mismatch: return "size_mismatch";
    case violation_kind::corruption: return "corruption";
    case violation_kind::leak: return "leak";
    case violation_kind::invalid_argument: return "invalid_argument";
    }
    return "unknown";
}

void default_violation_handler(const violation& v) {
    std::fprintf(stderr, "strata: %s in %s (pointer %p): %s\n  at %s:%u (%s)\n", to_string(v.kind),
                 v.allocator ? v.allocator : "?", v.pointer, v.message ? v.message : "", v.where.file_name(),
                 static_cast<unsigned>(v.where.line()), v.where.function_name());
    std::fflush(stderr);
    std::abort();
}

violation_handler set_violation_handler(violation_handler handler) noexcept {
    violation_handler previous = g_handler.exchange(handler, std::memory_order_acq_rel);
    return previous ? previous : &default_violation_handler;
}

violation_handler get_violation_handler() noexcept {
    violation_handler h = g_handler.load(std::memory_order_acquire);
    return h ? h : &default_violation_handler;
}

void report_violation(const violation& v) {
    ++t_reported; // before the handler, which may throw
    get_violation_handler()(v);
}

std::uint64_t violations_reported() noexcept { return t_reported; }

} // namespace strata
