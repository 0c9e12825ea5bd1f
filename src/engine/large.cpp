// The large tier: requests above 1 MiB (or alignments above 4 KiB), each served by a span of its
// own straight from the span tier, whose bins are the large-block cache: a freed span stays resident
// until it decays, and a request takes the best fit, a resident one first. Freed spans coalesce; a
// shrink gives its tail back and a grow takes a free successor span, in place.
//
// Exports: engine_heap::large_allocate, large_deallocate, large_resize_in_place.
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
    if (const tls_slot& own = tls[slot_]; own.epoch == epoch_) prefer_resident(own.heap, n + extra);
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
    return address_of(head);
}

/// Effects: frees the large block `p` of span `head` (its pages stay resident until they decay),
/// then takes a maintenance step when due; a pointer inside the span is ignored.
void engine_heap::large_deallocate(void* p, run* head) noexcept {
    if (p != address_of(head)) return; // not a block start: ignored like any foreign pointer
    {
        lock_guard g(span_lock_);
        large_bytes_.fetch_sub(std::size_t{head->granules} << granule_shift, std::memory_order_relaxed);
        large_live_.fetch_sub(1, std::memory_order_relaxed);
        span_free(head, true);
    }
    maybe_decay();
}

// -------------------------------------------------------------------------------------------------
// Resize in place
// -------------------------------------------------------------------------------------------------

/// Returns: true when the large block of span `d` now holds `new_size` bytes in place: a shrink
/// (its tail freed when 16 granules or more) or a grow into a free successor span.
/// Requires: medium_max < new_size <= data_size_.
bool engine_heap::large_resize_in_place(run* d, std::size_t new_size) noexcept {
    const std::size_t need = (new_size + granule - 1) >> granule_shift;
    lock_guard g(span_lock_);
    const std::size_t have = d->granules;
    if (need <= have) {
        if (have - need >= 16) { // give back the tail when it is worth it
            mark_span(d, need, span_kind::large);
            run* tail = d + need;
            mark_span(tail, have - need, span_kind::free);
            span_free(tail, true);
            large_bytes_.fetch_sub((have - need) << granule_shift, std::memory_order_relaxed);
        }
        return true;
    }
    // Grow into a free successor span.
    const std::size_t at = index_of(d);
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
                tail->populated = false;
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
