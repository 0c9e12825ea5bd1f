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

#if STRATA_CHECKS >= 1
// True when `m` describes a state the stack can return to: the allocation it names as the last is
// on the chain of live allocations, the one above it (or the top, if none) starts at m.top, and the
// counts agree. A marker rewound past and then left below the top again by new allocations fails
// this, and must: its `last` names a header that user data has since overwritten. O(live).
bool stack_allocator::on_chain(const marker& m) const noexcept {
    std::size_t above_top = in_use(); // where the allocation above the one walked starts
    std::size_t above = 0;
    for (std::size_t last = last_;;) {
        if (last == m.last) return above_top == m.top && count_ - above == m.count;
        if (last < m.last) return false; // offsets fall down the chain: m.last is not on it
        const header h = read_header(base_ + (last - 1));
        above_top = h.prev_top;
        ++above;
        last = h.prev_last;
    }
}
#endif

void stack_allocator::rewind(const marker& m) noexcept {
    bool mine =
        m.owner == this && m.top <= in_use() && m.last <= m.top + 1 && !history_.stale(m.epoch, m.top);
#if STRATA_CHECKS >= 1
    mine = mine && on_chain(m);
#endif
    if (!STRATA_VERIFY(1, mine, invalid_marker, who, base_ + m.top,
                       m.owner != this ? "marker belongs to another allocator"
                                       : "marker is not a state of this stack (already rewound past it)")) {
        return;
    }
    if (!mine) return;
    std::byte* top = base_ + m.top;
    release_bytes(top, static_cast<std::size_t>(cur_ - top));
    cur_ = top;
    last_ = m.last;
    count_ = m.count;
    history_.lowered(m.top);
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
