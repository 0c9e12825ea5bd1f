#include "strata/linear/double_stack.hpp"

#include "strata/core/check.hpp"

namespace strata {

namespace {
constexpr const char* who = "strata::double_stack";
} // namespace

void double_stack::rewind(const marker& m) noexcept {
    const bool bottom = m.end == stack_end::bottom;
    const bool valid = m.owner == this && m.offset <= (bottom ? used_bottom() : used_top());
    if (!STRATA_VERIFY(1, valid, invalid_marker, who, nullptr,
                       m.owner != this
                           ? "marker belongs to another double_stack"
                           : "marker is beyond its end's current top (already rewound past it)")) {
        return;
    }
    if (!valid) return;
    detail::rewind_history& history = bottom ? bottom_history_ : top_history_;
    const bool fresh = !history.stale(m.epoch, m.offset);
    if (!STRATA_VERIFY(1, fresh, invalid_marker, who, nullptr,
                       "stale marker: its end went below it since it was taken")) {
        return;
    }
    if (!fresh) return;
    history.lowered(m.offset);
    if (bottom) {
        std::byte* to = base_ + m.offset;
        release_bytes(to, static_cast<std::size_t>(lo_ - to));
        lo_ = to;
        bottom_count_ = m.count;
    } else {
        std::byte* to = end_ - m.offset;
        release_bytes(hi_, static_cast<std::size_t>(to - hi_));
        hi_ = to;
        top_count_ = m.count;
    }
}

void double_stack::rewind_checked(const marker& m, stack_end expected) noexcept {
    if (!STRATA_VERIFY(1, m.end == expected, invalid_marker, who, nullptr,
                       "marker belongs to the other end")) {
        return;
    }
    if (m.end == expected) rewind(m);
}

} // namespace strata
