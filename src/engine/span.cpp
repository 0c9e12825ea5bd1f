// The span tier: the reservation's granules, handed out as spans (runs, TLSF arenas, large blocks,
// thread_heap records) and taken back with coalescing. Free spans sit in 64 bins (exact up to 32
// granules, then one per power of two) with a bitmap; heads and tails are marked so a free finds its
// neighbours in O(1). Dirty free spans stay resident up to retain_bytes and are purged beyond it.
//
// Exports: engine_heap::grow_commit, mark_span, bin_insert, bin_remove, span_alloc, span_free
// (every one with span_lock_ held).
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <new>

#include "engine_internal.hpp"

namespace strata {

using namespace engine_detail;

// -------------------------------------------------------------------------------------------------
// Commit and marking
// -------------------------------------------------------------------------------------------------

/// Effects: commits data and descriptors up to granule `need` (in 4 MiB steps). Returns: false when
/// the OS refuses.
bool engine_heap::grow_commit(std::size_t need) noexcept {
    if (need <= commit_top_) return true;
    // Commit in 4 MiB steps: fewer mprotect calls, and adjacent commits merge into one mapping.
    const std::size_t want =
        std::min(granule_count_, (std::max(need, commit_top_ + 64) + 31) & ~std::size_t{31});
    const std::size_t data_from = data_offset_ + (commit_top_ << granule_shift);
    if (!vm_.commit(data_from, (want - commit_top_) << granule_shift)) return false;
    const std::size_t meta_from = commit_top_ * sizeof(run);
    if (!vm_.commit(meta_from, (want - commit_top_) * sizeof(run))) return false;
    for (std::size_t i = commit_top_; i < want; ++i)
        new (runs_ + i) run();
    commit_top_ = want;
    return true;
}

/// Effects: makes `head` the head of a span of `n` granules of `kind`, with the back links that
/// lead interior granules (small, medium) or the tail (others) to it.
void engine_heap::mark_span(run* head, std::size_t n, span_kind kind) noexcept {
    head->kind = kind;
    head->granules = static_cast<std::uint32_t>(n);
    head->back = 0;
    if (kind == span_kind::small || kind == span_kind::medium) {
        // Interior pointers (blocks past the first granule) find the head through `back`.
        for (std::size_t i = 1; i < n; ++i)
            head[i].back = static_cast<std::uint32_t>(i);
    } else if (n > 1) {
        head[n - 1].back = static_cast<std::uint32_t>(n - 1);
    }
}

// -------------------------------------------------------------------------------------------------
// Free bins
// -------------------------------------------------------------------------------------------------

/// Effects: files the free span `head` in its bin.
void engine_heap::bin_insert(run* head) noexcept {
    const unsigned b = bin_of(head->granules);
    push(bins_[b], head);
    bin_map_ |= std::uint64_t{1} << b;
    free_granules_ += head->granules;
    if (head->dirty) dirty_free_ += head->granules;
}

/// Effects: takes the free span `head` out of its bin.
void engine_heap::bin_remove(run* head) noexcept {
    const unsigned b = bin_of(head->granules);
    unlink(bins_[b], head);
    if (bins_[b] == nullptr) bin_map_ &= ~(std::uint64_t{1} << b);
    free_granules_ -= head->granules;
    if (head->dirty) dirty_free_ -= head->granules;
}

// -------------------------------------------------------------------------------------------------
// Allocate and free
// -------------------------------------------------------------------------------------------------

/// Returns: a span of `n` granules of `kind`: the first fit from the bins (the remainder goes back),
/// else fresh granules past top_; nullptr when the reservation is full. `*clean` (when given): the
/// span was never written since it was last purged.
engine_heap::run* engine_heap::span_alloc(std::size_t n, span_kind kind, bool* clean) noexcept {
    if (n == 0 || n > granule_count_) return nullptr;
    const unsigned b = bin_of(n);
    run* found = nullptr;
    if (b >= 32) {
        for (run* r = bins_[b]; r != nullptr; r = r->next) {
            if (r->granules >= n) {
                found = r;
                break;
            }
        }
    }
    if (found == nullptr) {
        const unsigned from = b < 32 ? b : b + 1;
        const std::uint64_t m = from < 64 ? bin_map_ & (~std::uint64_t{0} << from) : 0;
        if (m != 0) found = bins_[std::countr_zero(m)];
    }
    bool was_clean = true;
    if (found != nullptr) {
        bin_remove(found);
        was_clean = !found->dirty;
        if (found->granules > n) {
            run* rest = found + n;
            rest->dirty = found->dirty;
            rest->populated = found->populated;
            mark_span(rest, found->granules - n, span_kind::free);
            bin_insert(rest);
        }
    } else {
        if (top_ + n > granule_count_ || !grow_commit(top_ + n)) return nullptr;
        found = runs_ + top_;
        top_ += n;
    }
    found->dirty = false;
    mark_span(found, n, kind);
    if (clean != nullptr) *clean = was_clean;
    return found;
}

/// Effects: frees the span `head`, purging it when the dirty free spans pass the retention limit,
/// and merges it with free neighbours.
void engine_heap::span_free(run* head, bool dirty) noexcept {
    std::size_t n = head->granules;
    // Only a run is known to have every page touched (it was populated when it was made).
    if (head->kind != span_kind::small) head->populated = false;
    if (dirty && dirty_free_ + n > retain_granules_) {
        head->populated = false;
        // Past the retention limit: the pages go back to the OS; the range stays committed
        // (readable, zero on next touch), so one mapping keeps covering the whole heap.
        (void)::madvise(address_of(head), n << granule_shift, MADV_DONTNEED);
        dirty = false;
    }
    head->dirty = dirty;
    std::size_t g = index_of(head);
    if (g + n < top_) {
        run* next = runs_ + g + n;
        if (next->kind == span_kind::free) {
            bin_remove(next);
            head->dirty = head->dirty || next->dirty;
            head->populated = head->populated && next->populated;
            n += next->granules;
        }
    }
    if (g > 0) {
        run* tail = runs_ + g - 1;
        run* prev = tail - tail->back;
        if (prev->kind == span_kind::free && index_of(prev) + prev->granules == g) {
            bin_remove(prev);
            prev->dirty = prev->dirty || head->dirty;
            prev->populated = prev->populated && head->populated;
            n += prev->granules;
            head = prev;
            g = index_of(prev);
        }
    }
    mark_span(head, n, span_kind::free);
    bin_insert(head);
}

} // namespace strata
