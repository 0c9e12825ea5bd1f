// The large tier: requests above 1 MiB (or alignments above 4 KiB), each served by a span of its
// own straight from the span tier, whose bins are the large-block cache: a freed span stays resident
// until it decays, and a request takes the best fit, a resident one first. Freed spans coalesce; a
// shrink gives its tail back and a grow takes a free successor span, or fresh granules past the top
// for the last span, in place.
// A thread keeps the span of the last large block it freed for its own next large request
// (thread_heap::kept): in the shared pool, another thread's request would often take it, and write
// memory whose lines sit in the first thread's caches. In a program that makes big blocks seldom
// (quiet_big_call), a request the kept span does not serve gives back as many pages of the free
// spans, of any age.
//
// Exports: engine_heap::large_allocate, large_deallocate, large_resize_in_place, cut_tail, take_kept,
// keep, release_kept, release_kept_of.
#include "engine_internal.hpp"

namespace strata {

using namespace engine_detail;

// -------------------------------------------------------------------------------------------------
// Allocate and free
// -------------------------------------------------------------------------------------------------

/// Returns: a span of at least `size` bytes aligned to `align` (the slack before and after is freed);
/// nullptr when the reservation is full. `*clean` (when given): the memory reads as zero.
void* engine_heap::large_allocate(std::size_t size, std::size_t align, bool* clean) noexcept {
    if (size > data_size_ || align > data_size_) return nullptr;
    const std::size_t n = std::max<std::size_t>(1, (size + granule - 1) >> granule_shift);
    const std::size_t extra = align > granule ? (align >> granule_shift) - 1 : 0;
    const bool quiet = quiet_big_call();
    if (const tls_slot& own = tls[slot_]; own.epoch == epoch_) {
        // The kept span serves the request, or goes to the pool first, where it may merge with
        // its free neighbours into a span that does (memory this thread wrote last).
        if (own.heap->kept.load(std::memory_order_relaxed) != nullptr)
            if (void* p = take_kept(own.heap, extra == 0 ? n : 0)) {
                if (clean != nullptr) *clean = false;
                return p;
            }
        prefer_resident(own.heap, n + extra, span_kind::large);
    }
    lock_guard g(span_lock_);
    bool was_clean = false;
    run* head = span_alloc(n + extra, span_kind::large, &was_clean);
    if (head == nullptr) return nullptr;
    if (extra != 0) {
        const auto addr = reinterpret_cast<std::uintptr_t>(address_of(head));
        const std::size_t front = ((((addr + align - 1) & ~(align - 1)) - addr) >> granule_shift);
        const std::size_t tail = extra - front;
        run* mid = head + front;
        mark_span(mid, n, span_kind::large);
        if (front != 0) {
            mark_span(head, front, span_kind::free);
            span_free(head, !was_clean);
        }
        if (tail != 0) {
            mark_span(mid + n, tail, span_kind::free);
            span_free(mid + n, !was_clean);
        }
        head = mid;
    }
    large_bytes_.fetch_add(n << granule_shift, std::memory_order_relaxed);
    note_big_live();
    large_live_.fetch_add(1, std::memory_order_relaxed);
    large_total_.fetch_add(1, std::memory_order_relaxed);
    if (clean != nullptr) *clean = was_clean;
    // Clean pages to fault in: give back as many decayed ones. In a quiet program, as many of any
    // age whatever the request took: what it left of the free spans (too small for it, or the rest
    // of the one it took) would stay resident beside it while the program works, and its next
    // request is far off.
    purge_for_big_call(n + extra, quiet       ? big_purge::any_age
                                  : was_clean ? big_purge::decayed
                                              : big_purge::cap_only);
    return address_of(head);
}

/// Effects: frees the large block `p` of span `head` (its pages stay resident until they decay),
/// then takes a maintenance step when due; a pointer inside the span is ignored.
void engine_heap::large_deallocate(void* p, run* head) noexcept {
    if (p != address_of(head)) return; // not a block start: ignored like any foreign pointer
    (void)quiet_big_call();            // notes the call's tick
    thread_heap* own = head->granules <= keep_granules_ ? thread_cache() : nullptr;
    {
        lock_guard g(span_lock_);
        const std::size_t n = head->granules;
        large_bytes_.fetch_sub(n << granule_shift, std::memory_order_relaxed);
        large_live_.fetch_sub(1, std::memory_order_relaxed);
        if (own != nullptr)
            keep(own, head);
        else
            span_free(head, true);
        purge_for_big_call(n, big_purge::decayed);
    }
    thread_heap* t = existing_thread_cache();
    maybe_decay(t); // its step walks this thread's runs too
    if (t != nullptr) walk_runs_if_asked(t);
}

// -------------------------------------------------------------------------------------------------
// Kept spans
// -------------------------------------------------------------------------------------------------

/// Effects: `head` (a freed large block's span) becomes h's kept span, and the one h kept before goes
/// to the span pool; when all kept spans would pass retain_bytes, `head` goes to the pool instead.
/// Requires: span_lock_ held; the calling thread owns h.
void engine_heap::keep(thread_heap* h, run* head) noexcept {
    run* old = h->kept.load(std::memory_order_relaxed);
    const std::size_t others =
        kept_granules_.load(std::memory_order_relaxed) - (old != nullptr ? old->granules : 0);
    if (others + head->granules > retain_granules_) {
        span_free(head, true);
        return;
    }
    head->kind = span_kind::kept;
    add_under_lock(kept_granules_, head->granules);
    const std::uint32_t old_at = h->kept_at.load(std::memory_order_relaxed);
    h->kept_at.store(now_tick(), std::memory_order_relaxed);
    h->kept_misses = 0;
    // A maintenance step of another thread may have taken the old one since the load.
    old = h->kept.exchange(head, std::memory_order_acq_rel);
    if (old != nullptr) {
        add_under_lock(kept_granules_, 0 - std::size_t{old->granules});
        span_free(old, true, old_at); // aged from when it was kept
    }
}

/// Returns: a block of `n` granules from h's kept span: the whole span when it is at most a quarter
/// (or 16 granules) bigger, else its front (the rest goes to the pool); nullptr when there is none,
/// or it is smaller, or `n` is 0 (then it goes to the pool). Requires: the calling thread owns h.
void* engine_heap::take_kept(thread_heap* h, std::size_t n) noexcept {
    run* k = h->kept.exchange(nullptr, std::memory_order_acq_rel); // a step may have taken it
    if (k == nullptr) return nullptr;
    {
        lock_guard g(span_lock_);
        const std::size_t have = k->granules;
        add_under_lock(kept_granules_, 0 - have);
        if (have < n || n == 0) {
            span_free(k, true, h->kept_at.load(std::memory_order_relaxed));
            return nullptr;
        }
        if (have - n > std::max<std::size_t>(n / 4, 16))
            cut_tail(k, n, h->kept_at.load(std::memory_order_relaxed));
        else
            k->kind = span_kind::large;
        large_bytes_.fetch_add(std::size_t{k->granules} << granule_shift, std::memory_order_relaxed);
    }
    note_big_live();
    large_live_.fetch_add(1, std::memory_order_relaxed);
    large_total_.fetch_add(1, std::memory_order_relaxed);
    return address_of(k);
}

/// Effects: hands h's kept span (if any) to the span pool, aged from when it was kept.
void engine_heap::release_kept_of(thread_heap* h) noexcept {
    run* k = h->kept.exchange(nullptr, std::memory_order_acq_rel);
    if (k == nullptr) return;
    lock_guard g(span_lock_);
    add_under_lock(kept_granules_, 0 - std::size_t{k->granules});
    span_free(k, true, h->kept_at.load(std::memory_order_relaxed));
}

/// Effects: hands the kept spans of every thread to the span pool: all (`all`), or those kept for
/// decay_ms or more by tick `now`. Requires: no lock of the heap held.
void engine_heap::release_kept(bool all, std::uint32_t now) noexcept {
    if (kept_granules_.load(std::memory_order_relaxed) == 0) return;
    lock_guard g(heaps_lock_);
    for (thread_heap* h = heaps_; h != nullptr; h = h->next_heap)
        if (h->kept.load(std::memory_order_relaxed) != nullptr &&
            (all || tick_age(now, h->kept_at.load(std::memory_order_relaxed)) >= options_.decay_ms))
            release_kept_of(h);
}

/// Effects: `head` becomes a large block's span of its first `n` granules; the rest is freed (dirty,
/// aged from tick `freed_at`). Requires: span_lock_ held; n < head->granules.
void engine_heap::cut_tail(run* head, std::size_t n, std::uint32_t freed_at) noexcept {
    const std::size_t rest = head->granules - n;
    mark_span(head, n, span_kind::large);
    mark_span(head + n, rest, span_kind::free);
    span_free(head + n, true, freed_at);
}

// -------------------------------------------------------------------------------------------------
// Resize in place
// -------------------------------------------------------------------------------------------------

/// Returns: true when the large block of span `d` now holds `new_size` bytes in place: a shrink
/// (its tail freed when 16 granules or more), a grow into a free successor span, or, for the last
/// span (or the one before a free last span), a grow past top_ into fresh granules unless the free
/// span a new block would take (span_best_fit) holds the new size in resident pages: a buffer that
/// realloc grows step by step at the top of the heap is never copied, and one that such a hole fits
/// moves there (it is copied, and the footprint stays flat: the hole is reused rather than left
/// resident beside fresh pages).
/// Requires: medium_max < new_size <= data_size_.
bool engine_heap::large_resize_in_place(run* d, std::size_t new_size) noexcept {
    const std::size_t need = (new_size + granule - 1) >> granule_shift;
    (void)quiet_big_call(); // a buffer realloc grows keeps the calls coming
    lock_guard g(span_lock_);
    const std::size_t have = d->granules;
    if (need <= have) {
        if (have - need >= 16) { // give back the tail when it is worth it
            cut_tail(d, need, now_tick());
            large_bytes_.fetch_sub((have - need) << granule_shift, std::memory_order_relaxed);
        }
        return true;
    }
    const std::size_t at = index_of(d);
    // Grow past the top: the span (with a free successor, if that ends at top_) takes fresh granules.
    if (std::size_t end = at + have; end <= top_) {
        run* next = end < top_ && runs_[end].kind == span_kind::free ? runs_ + end : nullptr;
        if (next != nullptr) end += next->granules;
        const std::size_t avail = end - at;
        const auto resident_fit = [&] {
            const run* fit = span_best_fit(need);
            return fit != nullptr && dirty_granules(fit) >= need;
        };
        if (end == top_ && avail < need && top_ + (need - avail) <= granule_count_ && !resident_fit() &&
            grow_commit(top_ + (need - avail))) {
            if (next != nullptr) bin_remove(next);
            top_ += need - avail;
            mark_span(d, need, span_kind::large);
            span_peak_ = std::max(span_peak_, top_ - free_granules_);
            large_bytes_.fetch_add((need - have) << granule_shift, std::memory_order_relaxed);
            note_big_live();
            return true;
        }
    }
    // Grow into a free successor span.
    if (at + have < top_) {
        run* next = runs_ + at + have;
        if (next->kind == span_kind::free && have + next->granules >= need) {
            bin_remove(next);
            const std::size_t rest = have + next->granules - need;
            // The rest keeps the successor's clean tail (its dirty part is at its front, taken now).
            const bool rest_dirty = next->dirty && next->clean_tail < rest;
            const std::uint64_t clean_tail = next->clean_tail;
            const std::uint32_t freed_at = next->freed_at;
            mark_span(d, need, span_kind::large);
            if (rest != 0) {
                run* tail = d + need;
                tail->dirty = rest_dirty;
                tail->clean_tail = rest_dirty ? clean_tail : 0;
                tail->freed_at = freed_at;
                tail->fill = fill_lazy;
                mark_span(tail, rest, span_kind::free);
                bin_insert(tail);
            }
            large_bytes_.fetch_add((need - have) << granule_shift, std::memory_order_relaxed);
            note_big_live();
            return true;
        }
    }
    return false;
}

} // namespace strata
