// Thread caches: one thread_heap per (thread, engine_heap), found through a thread-local slot. Made
// on a thread's first allocation (or its 16th small free before one), handed back at thread exit or
// flush_thread_cache(): runs still in use are abandoned (other threads adopt them), empty ones go
// back to the span pool, counters are folded into the heap's totals and the record is recycled.
//
// Exports: engine_heap::make_thread_heap, abandon, thread_exit, flush_thread_cache.
#include <new>

#include "engine_internal.hpp"

namespace strata {

using namespace engine_detail;

// -------------------------------------------------------------------------------------------------
// Making a cache
// -------------------------------------------------------------------------------------------------

/// Returns: a cache for the calling thread, registered in its TLS slot; nullptr when the thread has
/// passed its exit (thread_gone), when no span is left for the record, or when 16M records exist
/// (their ids fill the tags' owner field).
engine_heap::thread_heap* engine_heap::make_thread_heap() noexcept {
    if (thread_gone) return nullptr;
    thread_heap* h = nullptr;
    {
        lock_guard g(heaps_lock_);
        if (free_heaps_ == nullptr) {
            if (heap_ids_ + 1 == no_owner) return nullptr; // 16M records at once: ids run out
            // Heaps are carved one at a time from a meta span (a process with one thread
            // touches one heap's pages, not the span's).
            // (A distance, not cursor + size: both are null before the first meta span.)
            if (static_cast<std::size_t>(heap_end_ - heap_cursor_) < sizeof(thread_heap)) {
                const std::size_t n = (16 * sizeof(thread_heap) + granule - 1) >> granule_shift;
                run* m = nullptr;
                {
                    lock_guard s(span_lock_);
                    m = span_alloc(n, span_kind::meta, nullptr);
                }
                if (m == nullptr) return nullptr;
                heap_cursor_ = address_of(m);
                heap_end_ = heap_cursor_ + (n << granule_shift);
            }
            auto* fresh = new (heap_cursor_) thread_heap();
            fresh->id = ++heap_ids_;
            heap_cursor_ += sizeof(thread_heap);
            fresh->next_heap = free_heaps_;
            free_heaps_ = fresh;
        }
        h = free_heaps_;
        free_heaps_ = h->next_heap;
        // Field by field, not a fresh object: a remote free that read this heap as a run's owner
        // before the heap was recycled may still set a `pending` flag (atomically; a spurious
        // flag only costs one walk of a full list).
        for (unsigned c = 0; c < class_count; ++c) {
            h->current[c] = &empty_run;
            h->allocs[c].v.store(0, std::memory_order_relaxed);
            h->frees[c].v.store(0, std::memory_order_relaxed);
            h->partial[c] = h->full[c] = h->freed[c] = h->spare[c] = h->resume[c] = nullptr;
            h->pending[c].store(0, std::memory_order_relaxed);
            h->parked[c] = nullptr;
            h->class_seen[c] = h->allocs_seen[c] = 0;
            h->stash[c].free = nullptr;
            h->stash[c].used = 0;
        }
        h->full_walk = 0;
        h->window_frees[0] = h->window_frees[1] = 0;
        h->stash_on = false;
        h->frees_mark = 0;
        h->run_bytes.v.store(0, std::memory_order_relaxed);
        h->cache = nullptr;
        h->cache_count = 0;
        h->slow_calls = 0;
        h->runs_asked = runs_asked_.load(std::memory_order_relaxed);
        h->cache_seen = 0;
        h->has_arena = false;
        h->giving_up = false;
        h->prev_heap = nullptr;
        h->engine = this;
        h->next_heap = heaps_;
        if (heaps_ != nullptr) heaps_->prev_heap = h;
        heaps_ = h;
    }
    tls[slot_] = {h, epoch_, h->id};
    // A non-null value makes pthread call thread_exit when this thread ends.
    (void)pthread_setspecific(registry.key, &tls[0]);
    return h;
}

// -------------------------------------------------------------------------------------------------
// Handing a cache back
// -------------------------------------------------------------------------------------------------

/// Effects: gives up every run of `h` (empty ones to the span pool, others to the abandoned lists)
/// and its kept large span,
/// destroys its frame arena, folds its counters into the heap's and recycles the record.
void engine_heap::abandon(thread_heap* h) noexcept {
    h->runs_asked = runs_asked_.load(std::memory_order_relaxed); // no walk of runs it gives up
    h->giving_up = true; // a walk from its arena's frees hands nothing off: those runs may free now
    if (h->has_arena) {
        std::launder(reinterpret_cast<arena*>(h->arena_storage))->~arena();
        h->has_arena = false;
    }
    flush_stash(h);
    release_kept_of(h);
    for (unsigned c = 0; c < class_count; ++c) {
        auto give_up = [&](run* r) {
            collect(h, r, collect_for::release);
            r->where = run_list::none;
            r->next = r->prev = nullptr;
            if (r->used == 0) {
                class_committed_[c].fetch_sub(std::size_t{r->granules} << granule_shift,
                                              std::memory_order_relaxed);
                r->owner.store(nullptr, std::memory_order_relaxed);
                lock_guard g(span_lock_);
                span_free(r, true);
                return;
            }
            // Remote frees that race with this see either this heap (and flag it, harmlessly) or
            // no owner; the adopter collects whatever they pushed.
            set_tag(r, nullptr);
            r->owner.store(nullptr, std::memory_order_release);
            lock_guard g(abandon_lock_);
            r->next = abandoned_[c];
            abandoned_[c] = r;
            abandoned_count_[c].fetch_add(1, std::memory_order_relaxed);
        };
        if (h->current[c] != &empty_run) give_up(h->current[c]);
        h->current[c] = &empty_run;
        for (run* lists : {h->partial[c], h->full[c], h->freed[c]}) {
            for (run* r = lists; r != nullptr;) {
                run* next = r->next;
                give_up(r);
                r = next;
            }
        }
        h->partial[c] = h->full[c] = h->freed[c] = nullptr;
        h->spare[c] = nullptr;
        h->resume[c] = nullptr;
    }
    h->full_walk = 0;
    {
        lock_guard g(span_lock_);
        for (run* r = h->cache; r != nullptr;) {
            run* next = r->next;
            r->owner.store(nullptr, std::memory_order_relaxed);
            r->where = run_list::none;
            span_free(r, true);
            r = next;
        }
    }
    h->cache = nullptr;
    h->cache_count = 0;
    lock_guard g(heaps_lock_);
    for (unsigned c = 0; c < class_count; ++c) {
        retired_allocs_[c] += h->allocs[c].get();
        retired_frees_[c] += h->frees[c].get();
    }
    if (h->prev_heap != nullptr)
        h->prev_heap->next_heap = h->next_heap;
    else
        heaps_ = h->next_heap;
    if (h->next_heap != nullptr) h->next_heap->prev_heap = h->prev_heap;
    h->engine = nullptr;
    h->prev_heap = nullptr;
    h->next_heap = free_heaps_;
    free_heaps_ = h;
}

/// Effects: pthread key destructor: hands back the exiting thread's cache of every live heap.
void engine_heap::thread_exit(void*) noexcept {
    thread_gone = true;
    for (unsigned i = 0; i < max_instances; ++i) {
        const tls_slot s = tls[i];
        if (s.heap == nullptr) continue;
        {
            lock_guard g(registry.lock);
            if (registry.epochs[i] == s.epoch && registry.instances[i] != nullptr)
                registry.instances[i]->abandon(s.heap);
        }
        tls[i] = {nullptr, 0, 0};
    }
}

/// Effects: hands the calling thread's cache back now, as thread exit would.
void engine_heap::flush_thread_cache() noexcept {
    const tls_slot s = tls[slot_];
    if (s.epoch != epoch_) return;
    abandon(s.heap);
    tls[slot_] = {nullptr, 0, 0};
}

} // namespace strata
