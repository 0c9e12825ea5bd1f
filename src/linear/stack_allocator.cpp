#include "strata/linear/stack_allocator.hpp"

#include "strata/core/check.hpp"

namespace strata {

namespace {
constexpr const char* who = "strata::stack_allocator";
} // namespace

void stack_allocator::report_bad_free(void* p) const noexcept {
    if (p == nullptr) return; // freeing nullptr is a no-op, as with free()
    auto* b = static_cast<std::byte*>(p);
    if (!owns(p)) {
        STRATA_VERIFY(1, false, foreign_pointer, who, p, "pointer is not inside this stack's buffer");
    } else if (b >= cur_) {
        STRATA_VERIFY(1, false, double_free, who, p, "pointer is above the top: it was already freed");
    } else {
        STRATA_VERIFY(1, false, out_of_order_free, who, p,
                      "only the most recent allocation may be freed (LIFO); this one is older");
    }
}

void stack_allocator::rewind(const marker& m) noexcept {
    const bool mine = m.owner == this && m.top <= in_use() && m.last <= m.top + 1;
    if (!STRATA_VERIFY(1, mine, invalid_marker, who, base_ + m.top,
                       m.owner != this ? "marker belongs to another allocator"
                                       : "marker is above the current top (already rewound past it)")) {
        return;
    }
    if (!mine) return;
    std::byte* top = base_ + m.top;
    release_bytes(top, static_cast<std::size_t>(cur_ - top));
    cur_ = top;
    last_ = m.last;
    count_ = m.count;
}

strata::stats stack_allocator::stats() const noexcept {
    strata::stats s;
    s.in_use = in_use();
    s.peak = peak_;
    s.capacity = capacity();
    s.live_allocations = count_;
    s.total_allocations = total_;
    const auto hdr = reinterpret_cast<std::uintptr_t>(cur_) + header_size;
    const std::size_t pad = header_size + align_padding(hdr, default_alignment);
    const auto avail = static_cast<std::size_t>(end_ - cur_);
    s.largest_free_block = avail > pad ? avail - pad : 0;
    return s;
}

} // namespace strata
