#include "strata/heap/buddy.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace strata {

namespace {
constexpr const char* buddy_name = "strata::buddy";
} // namespace

buddy::buddy(std::byte* base, std::size_t size, std::size_t min_block) {
    if (!is_pow2(min_block)) throw std::invalid_argument("strata::buddy: min_block must be a power of two");
    if (size < min_block) throw std::invalid_argument("strata::buddy: region smaller than one min_block");
    region_ = std::size_t{1} << log2_floor(size);
    min_block_ = min_block;
    min_shift_ = log2_floor(min_block);
    max_order_ = log2_floor(region_) - min_shift_;
    if (max_order_ > 31) throw std::invalid_argument("strata::buddy: more than 2^31 min_blocks");
    const std::size_t n = blocks();
    nodes_ = std::make_unique<node[]>(n);
    for (std::size_t i = 0; i < n; ++i)
        nodes_[i].state = interior;
    std::fill(std::begin(heads_), std::end(heads_), nil);
    base_ = base;
    // The pointer API can promise no more alignment than the base has (capped: the region's size).
    base_align_ = base == nullptr
                      ? 0
                      : std::min<std::size_t>(region_, std::size_t{1} << std::countr_zero(
                                                           reinterpret_cast<std::uintptr_t>(base)));
    push(0, max_order_);
}

std::size_t buddy::allocate_offset(std::size_t size, std::size_t align) noexcept {
    if (size - 1 >= region_ || !is_pow2(align) || align > region_) return npos;
    const std::size_t need = std::max(size, align);
    const unsigned order = need <= min_block_ ? 0u : log2_ceil(need) - min_shift_;
    const std::uint64_t avail = free_mask_ & (~std::uint64_t{0} << order);
    if (avail == 0 || order > max_order_) return npos;
    unsigned k = static_cast<unsigned>(std::countr_zero(avail));
    const std::uint32_t i = heads_[k];
    node& n = nodes_[i];
    pop(n.next, k);
    while (k > order) { // keep the lower half, list the upper one
        --k;
        push(i + (std::uint32_t{1} << k), k);
    }
    n.state = static_cast<std::uint8_t>(order);
    n.next = static_cast<std::uint32_t>(size);
    n.prev = static_cast<std::uint32_t>(static_cast<std::uint64_t>(size) >> 32);
    used_ += min_block_ << order;
    requested_ += size;
    peak_ = std::max(peak_, used_);
    ++live_;
    ++total_;
    return static_cast<std::size_t>(i) << min_shift_;
}

bool buddy::verify_free(std::size_t offset) const noexcept {
    const bool inside = offset < region_ && (offset & (min_block_ - 1)) == 0;
    if (!STRATA_VERIFY(1, inside, foreign_pointer, buddy_name, base_ ? base_ + offset : nullptr,
                       "offset outside the region or not on a min_block boundary"))
        return false;
    const std::uint8_t s = nodes_[offset >> min_shift_].state;
    if (!STRATA_VERIFY(1, s != interior, foreign_pointer, buddy_name, base_ ? base_ + offset : nullptr,
                       "offset is not the start of a block"))
        return false;
    return STRATA_VERIFY(1, (s & free_flag) == 0, double_free, buddy_name, base_ ? base_ + offset : nullptr,
                         "block freed twice");
}

void buddy::deallocate_offset(std::size_t offset) noexcept {
#if STRATA_CHECKS >= 1
    if (!verify_free(offset)) return;
#endif
    free_index(static_cast<std::uint32_t>(offset >> min_shift_));
}

void buddy::deallocate_offset(std::size_t offset, std::size_t size, std::size_t align) noexcept {
#if STRATA_CHECKS >= 1
    if (!verify_free(offset)) return;
    const std::size_t need = std::max(size, align);
    const unsigned order = need <= min_block_ ? 0u : log2_ceil(need) - min_shift_;
    if (!STRATA_VERIFY(1, order == (nodes_[offset >> min_shift_].state & order_mask), size_mismatch,
                       buddy_name, base_ ? base_ + offset : nullptr,
                       "sized free names a size of another order"))
        return;
#else
    (void)size, (void)align;
#endif
    free_index(static_cast<std::uint32_t>(offset >> min_shift_));
}

void buddy::free_index(std::uint32_t i) noexcept {
    const node& n = nodes_[i];
    unsigned order = n.state & order_mask;
    used_ -= min_block_ << order;
    requested_ -= static_cast<std::size_t>(n.next) | (static_cast<std::size_t>(n.prev) << 32);
    --live_;
    while (order < max_order_) {
        const std::uint32_t b = i ^ (std::uint32_t{1} << order);
        if (nodes_[b].state != (free_flag | order)) break;
        unlink(b, order);
        nodes_[std::max(i, b)].state = interior;
        i = std::min(i, b);
        ++order;
    }
    push(i, order);
}

heap_metrics buddy::metrics() const noexcept {
    heap_metrics_builder builder;
    if (region_ != 0) for_each_block([&](const block_info& b) { builder.add(b); });
    heap_metrics m = builder.m;
    m.capacity = region_;
    m.requested_bytes = requested_;
    m.overhead_bytes = 0; // the bookkeeping is outside the region: bookkeeping_bytes()
    return m;
}

bool buddy::corrupt(std::size_t offset, const char* what) const noexcept {
    report_violation(
        violation{violation_kind::corruption, buddy_name, base_ ? base_ + offset : nullptr, what});
    return false;
}

bool buddy::check() const noexcept {
    if (region_ == 0) return true;
    std::size_t free_count[max_orders] = {};
    std::size_t used = 0, requested = 0, live = 0;
    const std::size_t n = blocks();
    for (std::size_t i = 0; i < n;) {
        const std::uint8_t s = nodes_[i].state;
        if (s == interior) return corrupt(i << min_shift_, "a block starts on an interior mark");
        const unsigned order = s & order_mask;
        if (order > max_order_) return corrupt(i << min_shift_, "block order out of range");
        const std::size_t len = std::size_t{1} << order;
        if ((i & (len - 1)) != 0) return corrupt(i << min_shift_, "block not aligned to its size");
        if (i + len > n) return corrupt(i << min_shift_, "block runs past the region");
        for (std::size_t j = i + 1; j < i + len; ++j)
            if (nodes_[j].state != interior) return corrupt(j << min_shift_, "a block starts inside another");
        if ((s & free_flag) != 0) {
            ++free_count[order];
            if (order < max_order_) {
                const std::size_t b = i ^ len;
                if (nodes_[b].state == s) return corrupt(i << min_shift_, "two free buddies left unmerged");
            }
        } else {
            ++live;
            used += len << min_shift_;
            requested +=
                static_cast<std::size_t>(nodes_[i].next) | (static_cast<std::size_t>(nodes_[i].prev) << 32);
        }
        i += len;
    }
    for (unsigned k = 0; k < max_orders; ++k) {
        const bool listed = heads_[k] != nil;
        if (listed != (((free_mask_ >> k) & 1u) != 0))
            return corrupt(0, "order mask disagrees with the lists");
        std::size_t count = 0;
        std::uint32_t prev = nil;
        for (std::uint32_t i = heads_[k]; i != nil; i = nodes_[i].next) {
            if (i >= n || ++count > free_count[k]) return corrupt(0, "free list longer than the free blocks");
            if (nodes_[i].state != (free_flag | k))
                return corrupt(std::size_t{i} << min_shift_, "listed block not free");
            // A head's back link is stale by design (heads are told by heads_).
            if (prev != nil && nodes_[i].prev != prev)
                return corrupt(std::size_t{i} << min_shift_, "free-list back link broken");
            prev = i;
        }
        if (count != free_count[k]) return corrupt(0, "a free block is missing from its list");
    }
    if (used != used_ || requested != requested_ || live != live_)
        return corrupt(0, "counters disagree with the blocks");
    return true;
}

} // namespace strata
