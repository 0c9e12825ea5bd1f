// The span tier: the reservation's granules, handed out as spans (runs, TLSF arenas, large blocks,
// thread_heap records) and taken back with coalescing. Free spans sit in 64 bins (exact up to 32
// granules, then one per power of two) with a bitmap; heads and tails are marked so a free finds its
// neighbours in O(1). Freed spans stay dirty (resident) until they decay or pass retain_bytes
// (purge.cpp). Large blocks and TLSF arenas take the best fit among them, a dirty one before a
// clean one; runs and thread records take the lowest-addressed one, resident first.
//
// Exports: engine_heap::grow_commit, mark_span, bin_insert, bin_remove, span_fit,
// span_best_fit, span_low_fit, span_any_fit, span_alloc, append, free_before, span_free, span_file (every one
// with span_lock_ held).
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
    const std::size_t tags_from = tags_offset_ + commit_top_ * sizeof(std::uint32_t);
    if (!vm_.commit(tags_from, (want - commit_top_) * sizeof(std::uint32_t))) return false;
    for (std::size_t i = commit_top_; i < want; ++i)
        new (runs_ + i) run();
    fill_tags(commit_top_, want - commit_top_, not_small_tag);
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

// A bin keeps its dirty spans before its clean ones: a fit looks at a bin's first few and prefers
// resident pages, and a purge's walk for the oldest dirty spans stops at a bin's first clean one
// (a shrunk heap holds thousands of purged free spans).

/// Effects: files the free span `head` in its bin: at the front when dirty, else at the back.
/// `oldest`: it left the front of the oldest list (bin_remove) and comes back unchanged but for
/// its clean tail, so it goes back there when nothing older has been listed since.
void engine_heap::bin_insert(run* head, bool oldest) noexcept {
    const unsigned b = bin_of(head->granules);
    if (bins_[b] == nullptr) bin_tails_[b] = head;
    if (head->dirty || bins_[b] == nullptr) {
        push(bins_[b], head);
    } else {
        head->next = nullptr;
        head->prev = bin_tails_[b];
        bin_tails_[b]->next = head;
        bin_tails_[b] = head;
    }
    bin_map_ |= std::uint64_t{1} << b;
    if (oldest_valid_ && head->dirty) {
        const run* next = oldest_next_ < oldest_count_ ? oldest_[oldest_next_] : nullptr;
        if (oldest && oldest_next_ != 0 &&
            static_cast<std::int32_t>((next != nullptr ? next->freed_at : oldest_newest_) - head->freed_at) >=
                0) {
            oldest_[--oldest_next_] = head;
        } else { // older than the list's newest: the list is stale
            if (oldest_count_ == 0 || static_cast<std::int32_t>(head->freed_at - oldest_newest_) < 0)
                oldest_valid_ = false;
            oldest_whole_ = false;
        }
    }
    free_granules_ += head->granules;
    dirty_free_ += dirty_granules(head);
}

/// Effects: takes the free span `head` out of its bin.
void engine_heap::bin_remove(run* head) noexcept {
    const unsigned b = bin_of(head->granules);
    if (bin_tails_[b] == head) bin_tails_[b] = head->prev;
    if (oldest_valid_) {
        if (oldest_next_ < oldest_count_ && oldest_[oldest_next_] == head)
            ++oldest_next_; // the oldest leaves (a purge takes it): the rest are still the oldest
        else if (std::find(oldest_ + oldest_next_, oldest_ + oldest_count_, head) != oldest_ + oldest_count_)
            oldest_valid_ = false; // one of the listed spans leaves the bins
    }
    unlink(bins_[b], head);
    if (bins_[b] == nullptr) bin_map_ &= ~(std::uint64_t{1} << b);
    free_granules_ -= head->granules;
    dirty_free_ -= dirty_granules(head);
}

// -------------------------------------------------------------------------------------------------
// Allocate and free
// -------------------------------------------------------------------------------------------------

// Placement. Runs and records are the many small spans; large blocks and arenas are few and big.
// Best fit for a run would carve the smallest hole that holds it, often the span a big block just
// freed, and the next big block would find no hole and take fresh pages at the top: resident
// memory grows by the holes left behind. Packed toward the low end of the reservation, runs leave
// the spans freed above them to merge into holes a big block fits again. Arenas keep best fit:
// placed lowest, they left a level-loading workload with a larger footprint (docs/engine.md).
namespace {
constexpr unsigned looked_at = 16; // spans compared per bin: bounded work under the lock
} // namespace

/// Effects: calls f with the first looked_at spans of bin `b` (its dirty ones first) and, in a
/// longer bin, the last looked_at (its clean ones), each span once.
template <class F>
void engine_heap::each_looked_at(unsigned b, F&& f) const noexcept {
    unsigned seen = 0;
    run* r = bins_[b];
    for (; r != nullptr && seen < looked_at; r = r->next, ++seen)
        f(r);
    if (r == nullptr) return;
    seen = 0;
    for (run* t = bin_tails_[b]; t != nullptr && t != r->prev && seen < looked_at; t = t->prev, ++seen)
        f(t);
}

/// Returns: the free span to cut `n` granules of `kind` from, not yet unbinned (span_best_fit for a
/// large block or an arena, span_low_fit for a run or records); nullptr when no bin can serve it.
engine_heap::run* engine_heap::span_fit(std::size_t n, span_kind kind) const noexcept {
    return kind == span_kind::large || kind == span_kind::medium ? span_best_fit(n) : span_low_fit(n);
}

/// Returns: the smallest free span that fits among the first few of its bin, a dirty (resident) one
/// before a clean one of the same size, else the same choice in the next non-empty bin; nullptr
/// when no bin can serve it.
engine_heap::run* engine_heap::span_best_fit(std::size_t n) const noexcept {
    const auto better = [](const run* r, const run* best) {
        return best == nullptr || r->granules < best->granules ||
               (r->granules == best->granules && r->dirty && !best->dirty);
    };
    const unsigned b = bin_of(n);
    std::uint64_t m = bin_map_ & (~std::uint64_t{0} << b);
    while (m != 0) {
        const unsigned at = static_cast<unsigned>(std::countr_zero(m));
        run* best = nullptr;
        each_looked_at(at, [&](run* r) {
            if (r->granules >= n && better(r, best)) best = r;
        });
        if (best != nullptr) return best;
        m &= m - 1;
    }
    return nullptr;
}

/// Returns: the lowest-addressed free span that holds `n` granules in its resident part, among the
/// first few of every bin that can serve it; else the lowest-addressed one that fits; nullptr when
/// none does.
engine_heap::run* engine_heap::span_low_fit(std::size_t n) const noexcept {
    run* low = nullptr;
    run* warm = nullptr;
    for (std::uint64_t m = bin_map_ & (~std::uint64_t{0} << bin_of(n)); m != 0; m &= m - 1)
        each_looked_at(static_cast<unsigned>(std::countr_zero(m)), [&](run* r) {
            if (r->granules < n) return;
            if (low == nullptr || r < low) low = r;
            if (dirty_granules(r) >= n && (warm == nullptr || r < warm)) warm = r;
        });
    return warm != nullptr ? warm : low;
}

/// Returns: the smallest free span that fits, looking at every span of every bin that can serve it
/// (for a full reservation, where span_fit's look at the first few of each may miss one); nullptr
/// when none does.
engine_heap::run* engine_heap::span_any_fit(std::size_t n) const noexcept {
    run* best = nullptr;
    for (std::uint64_t m = bin_map_ & (~std::uint64_t{0} << bin_of(n)); m != 0; m &= m - 1)
        for (run* r = bins_[std::countr_zero(m)]; r != nullptr; r = r->next)
            if (r->granules >= n && (best == nullptr || r->granules < best->granules)) best = r;
    return best;
}

/// Returns: a span of `n` granules of `kind`: span_fit's choice from the bins (the remainder goes
/// back), else fresh granules past top_, else (the reservation full) any free span that fits;
/// nullptr when none does. `*clean` (when given): the span was never written since it was last
/// purged.
engine_heap::run* engine_heap::span_alloc(std::size_t n, span_kind kind, bool* clean) noexcept {
    if (n == 0 || n > granule_count_) return nullptr;
    run* found = span_fit(n, kind);
    if (found == nullptr && (top_ + n > granule_count_ || !grow_commit(top_ + n))) {
        found = span_any_fit(n);
        if (found == nullptr) return nullptr;
    }
    bool was_clean = true;
    if (found != nullptr) {
        bin_remove(found);
        was_clean = !found->dirty;
        if (found->granules > n) {
            // The front is served (the dirty part: resident); the rest keeps the clean tail.
            run* rest = found + n;
            const std::size_t rn = found->granules - n;
            rest->dirty = found->dirty && found->clean_tail < rn;
            rest->clean_tail = rest->dirty ? found->clean_tail : 0;
            rest->fill = found->fill;
            rest->freed_at = found->freed_at;
            mark_span(rest, rn, span_kind::free);
            bin_insert(rest);
        }
    } else { // grow_commit(top_ + n) above made room
        found = runs_ + top_;
        top_ += n;
    }
    found->dirty = false;
    mark_span(found, n, kind);
    span_peak_ = std::max(span_peak_, top_ - free_granules_);
    if (clean != nullptr) *clean = was_clean;
    return found;
}

/// Effects: folds the free span `right` (out of its bin, right after `left`) into `left`'s flags:
/// dirty when either is; the clean tail grows by a clean `right` or is `right`'s own; the tick is
/// the more recent one. The caller adds the granules.
void engine_heap::append(run* left, const run* right) noexcept {
    if (!right->dirty) {
        if (left->dirty) left->clean_tail += right->granules;
    } else {
        if (!left->dirty || static_cast<std::int32_t>(right->freed_at - left->freed_at) > 0)
            left->freed_at = right->freed_at;
        left->clean_tail = right->clean_tail;
        left->dirty = true;
    }
    if (right->fill != fill_whole) left->fill = fill_lazy;
}

/// Returns: the free span that ends right before granule `g`, or nullptr.
engine_heap::run* engine_heap::free_before(std::size_t g) const noexcept {
    if (g == 0) return nullptr;
    run* tail = runs_ + g - 1;
    run* prev = tail - tail->back;
    if (prev->kind == span_kind::free && index_of(prev) + prev->granules == g) return prev;
    return nullptr;
}

/// Effects: frees the span `head` (dirty: it holds written pages, which stay resident until they
/// decay, aged from tick `freed_at`) and merges it with its free neighbours; past retain_bytes of
/// dirty free spans, purges the oldest at once, at most purge_piece_granules * 2 within the lock
/// (its holder may be in the middle of a change): the large tier and the maintenance steps purge
/// the rest with the lock let go (purge_for_big_call, decay_step).
void engine_heap::span_free(run* head, bool dirty, std::uint32_t freed_at) noexcept {
    // Only a run faulted in whole is known to have every page touched (a growing one is lazy past
    // its last carve; a medium arena or a large block says nothing).
    if (head->kind != span_kind::small || head->fill != fill_whole) head->fill = fill_lazy;
    if (head->kind == span_kind::small) fill_tags(index_of(head), head->granules, not_small_tag);
    head->dirty = dirty;
    head->clean_tail = 0;
    if (dirty) head->freed_at = freed_at;
    span_file(head);
    if (dirty_free_ > span_cap()) (void)purge_spans(purge_pass::cap, now_tick(), 0, 2 * purge_piece_granules);
}

/// Effects: files the span `head`, its flags (dirty, clean_tail, freed_at, fill) set, as a
/// free span: merged with its free neighbours, then binned (`oldest`: see bin_insert; not when it
/// merged).
void engine_heap::span_file(run* head, bool oldest) noexcept {
    std::size_t g = index_of(head);
    std::size_t n = head->granules;
    const std::size_t alone = n;
    if (g + n < top_ && runs_[g + n].kind == span_kind::free) {
        run* next = runs_ + g + n;
        bin_remove(next);
        head->granules = static_cast<std::uint32_t>(n);
        append(head, next);
        n += next->granules;
    }
    if (run* prev = free_before(g)) {
        bin_remove(prev);
        head->granules = static_cast<std::uint32_t>(n);
        append(prev, head);
        head->kind = span_kind::free; // no block's head any more: a second free of it is ignored
        n += prev->granules;
        head = prev;
    }
    mark_span(head, n, span_kind::free);
    bin_insert(head, oldest && n == alone);
}

} // namespace strata
