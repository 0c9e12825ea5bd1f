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
    for (unsigned k = small_orders; k <= max_order_; ++k) {
        big_at_[k] = big_records_;
        big_records_ += n >> k;
        bit_at_[k] = big_words_;
        big_words_ += ((n >> k) + 63) / 64;
    }
    if (big_records_ != 0) {
        big_ = std::make_unique<std::uint64_t[]>(big_records_);
        free_bits_ = std::make_unique<std::uint64_t[]>(big_words_); // zeroed: nothing free or used
        used_bits_ = std::make_unique<std::uint64_t[]>(big_words_);
    }
    std::fill(std::begin(heads_), std::end(heads_), nil);
    base_ = base;
    // The pointer API can promise no more alignment than the base has (capped: the region's size).
    base_align_ = base == nullptr
                      ? 0
                      : std::min<std::size_t>(region_, std::size_t{1} << std::countr_zero(
                                                           reinterpret_cast<std::uintptr_t>(base)));
    if (max_order_ >= small_orders)
        big_push(max_order_, 0);
    else
        small_push(0, max_order_);
}

std::size_t buddy::allocate_offset(std::size_t size, std::size_t align) noexcept {
    if (size - 1 >= region_ || !is_pow2(align) || align > region_) return npos;
    const std::size_t need = std::max(size, align);
    const unsigned order = need <= min_block_ ? 0u : log2_ceil(need) - min_shift_;
    const std::uint64_t avail = free_mask_ & (~std::uint64_t{0} << order);
    if (avail == 0 || order > max_order_) return npos;
    unsigned k = static_cast<unsigned>(std::countr_zero(avail));
    std::uint32_t i = 0; // the block's first min_block
    if (k >= small_orders) {
        // Split among the large orders: keep the lower half, list the upper one.
        std::uint32_t j = heads_[k];
        big_unlink(k, j);
        const unsigned stop = std::max(order, small_orders);
        while (k > stop) {
            --k;
            j <<= 1;
            big_push(k, j | 1u);
        }
        if (order >= small_orders) {
            flip_used(order, j);
            big(order, j) = size;
            account(order, size);
            return static_cast<std::size_t>(j) << (order + min_shift_);
        }
        i = j << small_orders; // continue among the small orders, from a block of order small_orders
    } else {
        i = heads_[k];
        pop(nodes_[i].next, k);
    }
    while (k > order) { // keep the lower half, list the upper one
        --k;
        small_push(i + (std::uint32_t{1} << k), k);
    }
    node& n = nodes_[i];
    n.state = static_cast<std::uint8_t>(order);
    n.next = static_cast<std::uint32_t>(size);
    n.prev = static_cast<std::uint32_t>(static_cast<std::uint64_t>(size) >> 32);
    account(order, size);
    return static_cast<std::size_t>(i) << min_shift_;
}

bool buddy::verify_free(std::size_t offset) const noexcept {
    const bool inside = offset < region_ && (offset & (min_block_ - 1)) == 0;
    if (!STRATA_VERIFY(1, inside, foreign_pointer, buddy_name, base_ ? base_ + offset : nullptr,
                       "offset outside the region or not on a min_block boundary"))
        return false;
    unsigned order = 0;
    const std::uint8_t s = block_at(offset >> min_shift_, order);
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
    const std::size_t i = offset >> min_shift_;
    const unsigned order = used_order(i);
    if (order >= small_orders)
        free_big(static_cast<std::uint32_t>(i >> order), order);
    else
        free_small(static_cast<std::uint32_t>(i), order);
}

void buddy::deallocate_offset(std::size_t offset, std::size_t size, std::size_t align) noexcept {
    const std::size_t need = std::max(size, align);
    const unsigned order = need <= min_block_ ? 0u : log2_ceil(need) - min_shift_;
#if STRATA_CHECKS >= 1
    if (!verify_free(offset)) return;
    if (!STRATA_VERIFY(1, order == used_order(offset >> min_shift_), size_mismatch, buddy_name,
                       base_ ? base_ + offset : nullptr, "sized free names a size of another order"))
        return;
#endif
    // The size names the order: a large block's record is found without a search.
    if (order >= small_orders)
        free_big(static_cast<std::uint32_t>(offset >> (order + min_shift_)), order);
    else
        free_small(static_cast<std::uint32_t>(offset >> min_shift_), order);
}

void buddy::free_small(std::uint32_t i, unsigned order) noexcept {
    const node& n = nodes_[i];
    unaccount(order, static_cast<std::size_t>(n.next) | (static_cast<std::size_t>(n.prev) << 32));
    while (order < max_order_) {
        const std::uint32_t b = i ^ (std::uint32_t{1} << order);
        if (nodes_[b].state != (free_flag | order)) break;
        small_unlink(b, order);
        nodes_[std::max(i, b)].state = interior;
        i = std::min(i, b);
        if (++order == small_orders) { // the merged block is a large one: on to the per-order layout
            nodes_[i].state = interior;
            big_merge(i >> small_orders, order);
            return;
        }
    }
    small_push(i, order);
}

void buddy::free_big(std::uint32_t j, unsigned order) noexcept {
    flip_used(order, j);
    unaccount(order, static_cast<std::size_t>(big(order, j)));
    big_merge(j, order);
}

void buddy::big_merge(std::uint32_t j, unsigned order) noexcept {
    while (order < max_order_ && big_free(order, j ^ 1u)) {
        big_unlink(order, j ^ 1u);
        j >>= 1;
        ++order;
    }
    big_push(order, j);
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
    std::size_t free_count[max_orders] = {}, used_count[max_orders] = {};
    std::size_t used = 0, requested = 0, live = 0;
    const std::size_t n = blocks();
    for (std::size_t i = 0; i < n;) {
        const std::uint8_t s = nodes_[i].state;
        unsigned order = 0, marks = 0;
        bool is_free = false;
        if (s != interior) {
            order = s & order_mask;
            if (order >= small_orders)
                return corrupt(i << min_shift_, "a per-min_block record names a large order");
            is_free = (s & free_flag) != 0;
            marks = 1;
        }
        // A large block starting here is one bit of its order; none may coexist with a small one.
        for (unsigned k = small_orders; k <= top_order(i); ++k) {
            const auto j = static_cast<std::uint32_t>(i >> k);
            if (big_free(k, j)) ++marks, order = k, is_free = true;
            if (big_used(k, j)) ++marks, order = k, is_free = false;
        }
        if (marks != 1)
            return corrupt(i << min_shift_, marks == 0 ? "no block starts here" : "two blocks start here");
        const std::size_t len = std::size_t{1} << order;
        if ((i & (len - 1)) != 0) return corrupt(i << min_shift_, "block not aligned to its size");
        if (i + len > n) return corrupt(i << min_shift_, "block runs past the region");
        for (std::size_t m = i + 1; m < i + len; ++m)
            if (nodes_[m].state != interior) return corrupt(m << min_shift_, "a block starts inside another");
        if (is_free) {
            ++free_count[order];
            if (order < max_order_) {
                const std::size_t b = i ^ len;
                const bool buddy_free = order < small_orders
                                            ? nodes_[b].state == (free_flag | order)
                                            : big_free(order, static_cast<std::uint32_t>(b >> order));
                if (buddy_free) return corrupt(i << min_shift_, "two free buddies left unmerged");
            }
        } else {
            ++used_count[order];
            ++live;
            used += len << min_shift_;
            requested += order < small_orders
                             ? static_cast<std::size_t>(nodes_[i].next) |
                                   (static_cast<std::size_t>(nodes_[i].prev) << 32)
                             : static_cast<std::size_t>(big(order, static_cast<std::uint32_t>(i >> order)));
        }
        i += len;
    }
    for (unsigned k = 0; k <= max_order_; ++k) {
        if (k >= small_orders) { // every bit set belongs to a block the walk found
            std::size_t f = 0, u = 0;
            for (std::size_t w = 0; w < ((n >> k) + 63) / 64; ++w) {
                f += static_cast<std::size_t>(std::popcount(free_bits_[bit_at_[k] + w]));
                u += static_cast<std::size_t>(std::popcount(used_bits_[bit_at_[k] + w]));
            }
            if (f != free_count[k] || u != used_count[k])
                return corrupt(0, "a large order's bit marks no block (inside another, or past the end)");
        }
        const bool listed = heads_[k] != nil;
        if (listed != (((free_mask_ >> k) & 1u) != 0))
            return corrupt(0, "order mask disagrees with the lists");
        std::size_t count = 0;
        std::uint32_t prev = nil;
        for (std::uint32_t x = heads_[k]; x != nil;) {
            const bool small = k < small_orders;
            if (x >= (small ? n : n >> k) || ++count > free_count[k])
                return corrupt(0, "free list longer than the free blocks");
            const std::size_t at = small ? std::size_t{x} << min_shift_ : std::size_t{x} << (k + min_shift_);
            if (small ? nodes_[x].state != (free_flag | k) : !big_free(k, x))
                return corrupt(at, "listed block not free");
            // A head's back link is stale by design (heads are told by heads_).
            const std::uint32_t back = small ? nodes_[x].prev : static_cast<std::uint32_t>(big(k, x) >> 32);
            if (prev != nil && back != prev) return corrupt(at, "free-list back link broken");
            prev = x;
            x = small ? nodes_[x].next : static_cast<std::uint32_t>(big(k, x));
        }
        if (count != free_count[k]) return corrupt(0, "a free block is missing from its list");
    }
    // Orders above the top one have no blocks: a stray bit there would make largest_free_block()
    // lie and send an allocation to a list that does not exist.
    if (max_order_ + 1 < 64 && (free_mask_ >> (max_order_ + 1)) != 0)
        return corrupt(0, "order mask names an order above the top one");
    for (unsigned k = max_order_ + 1; k < max_orders; ++k)
        if (heads_[k] != nil) return corrupt(0, "a list above the top order is not empty");
    if (used != used_ || requested != requested_ || live != live_)
        return corrupt(0, "counters disagree with the blocks");
    return true;
}

} // namespace strata
