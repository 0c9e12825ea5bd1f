// Statistics and the invariant check. Counters are per thread (owner-written, read by anyone) and
// per class; a report sums the live threads' counters with those exited threads left behind.
//
// Exports: engine_heap::class_stats, thread_stats, stats, committed_bytes, retained_bytes, check.
#include "engine_internal.hpp"

namespace strata {

using namespace engine_detail;

// -------------------------------------------------------------------------------------------------
// Counters
// -------------------------------------------------------------------------------------------------

/// Returns: class `c`'s counters: live threads' plus exited threads' plus cacheless remote frees.
engine_class_stats engine_heap::class_stats(unsigned c) const noexcept {
    engine_class_stats s;
    if (c >= class_count) return s;
    s.block_size = class_size(c);
    lock_guard g(heaps_lock_);
    std::uint64_t a = retired_allocs_[c];
    std::uint64_t f = retired_frees_[c] + remote_frees_[c].load(std::memory_order_relaxed);
    for (const thread_heap* h = heaps_; h != nullptr; h = h->next_heap) {
        a += h->allocs[c].get();
        f += h->frees[c].get();
    }
    s.allocations = a;
    s.frees = f;
    s.live_bytes = a > f ? (a - f) * s.block_size : 0;
    s.committed_bytes = class_committed_[c].load(std::memory_order_relaxed);
    s.depot_blocks = std::size_t{depot_[c].batches.load(std::memory_order_relaxed)} * depot_batch_[c];
    s.depot_batches = depot_[c].puts.load(std::memory_order_relaxed);
    return s;
}

/// Returns: the calling thread's counters.
engine_thread_stats engine_heap::thread_stats() const noexcept {
    engine_thread_stats s;
    const tls_slot& t = tls[slot_];
    if (t.epoch != epoch_) return s;
    const thread_heap* h = t.heap;
    // One net figure over the classes: a thread that frees other threads' blocks of one class
    // offsets what it holds of another (clamping each class at 0 counted only the holdings).
    std::size_t allocated_bytes = 0, freed_bytes = 0;
    for (unsigned c = 0; c < class_count; ++c) {
        const std::uint64_t a = h->allocs[c].get();
        const std::uint64_t f = h->frees[c].get();
        s.allocations += a;
        s.frees += f;
        allocated_bytes += a * class_size(c);
        freed_bytes += f * class_size(c);
    }
    s.live_bytes = allocated_bytes > freed_bytes ? allocated_bytes - freed_bytes : 0;
    s.committed_bytes = h->run_bytes.get();
    return s;
}

/// Returns: the totals of every class and of the medium and large tiers.
strata::stats engine_heap::stats() const noexcept {
    strata::stats s;
    for (unsigned c = 0; c < class_count; ++c) {
        const engine_class_stats cs = class_stats(c);
        s.in_use += cs.live_bytes;
        s.live_allocations += cs.allocations > cs.frees ? cs.allocations - cs.frees : 0;
        s.total_allocations += cs.allocations;
    }
    s.in_use += medium_in_use_.load(std::memory_order_relaxed) + large_bytes_.load(std::memory_order_relaxed);
    s.live_allocations +=
        medium_count_.load(std::memory_order_relaxed) + large_live_.load(std::memory_order_relaxed);
    s.total_allocations +=
        medium_total_.load(std::memory_order_relaxed) + large_total_.load(std::memory_order_relaxed);
    s.capacity = committed_bytes();
    return s;
}

/// Returns: granules handed out, less free ones, plus dirty free ones.
std::size_t engine_heap::committed_bytes() const noexcept {
    lock_guard g(span_lock_);
    return (top_ - free_granules_ + dirty_free_) << granule_shift;
}

/// Returns: bytes of dirty free spans.
std::size_t engine_heap::retained_bytes() const noexcept {
    lock_guard g(span_lock_);
    return dirty_free_ << granule_shift;
}

// -------------------------------------------------------------------------------------------------
// check
// -------------------------------------------------------------------------------------------------

/// Returns: whether every invariant holds: span tiling, free bins, run free lists, TLSF arenas, kept
/// spans, the calling thread's stash, the depots.
bool engine_heap::check() const noexcept {
    auto* self = const_cast<engine_heap*>(this);
    self->lock_all();
    bool ok = true;
    std::size_t free_spans = 0;
    std::size_t dirty = 0;
    std::size_t kept = 0;
    std::size_t medium_spans = 0, medium_granules = 0, medium_live = 0;
    std::size_t free_granules = 0, large_granules = 0, large_blocks = 0;
    std::size_t owned_runs = 0, unowned_runs = 0;
    for (std::size_t g = 0; ok && g < top_;) {
        const run* head = runs_ + g;
        const std::size_t n = head->granules;
        if (n == 0 || g + n > top_ || head->back != 0) {
            ok = false;
            break;
        }
        if (n > 1 && head[n - 1].back != n - 1) ok = false;
        // Tags: a small run's granules name its owner and class; every other granule is not small.
        const thread_heap* owner = head->owner.load(std::memory_order_relaxed);
        const std::uint32_t tag = head->kind == span_kind::small
                                      ? run_tag(owner != nullptr ? owner->id : no_owner, head->cls)
                                      : not_small_tag;
        for (std::size_t i = 0; i < n; ++i)
            if (tags_[g + i].load(std::memory_order_relaxed) != tag) ok = false;
        switch (head->kind) {
        case span_kind::free:
            ++free_spans;
            free_granules += n;
            if (head->dirty && head->clean_tail >= n) ok = false; // a dirty part, at its front
            dirty += dirty_granules(head);
            if (g + n < top_ && runs_[g + n].kind == span_kind::free) ok = false; // not coalesced
            break;
        case span_kind::small: {
            ++(owner != nullptr ? owned_runs : unowned_runs);
            for (std::size_t i = 1; i < n; ++i)
                if (head[i].back != i) ok = false;
            const std::size_t bs = head->block_size;
            if (head->cls >= class_count || bs != class_size(head->cls) ||
                head->capacity != (n << granule_shift) / bs || head->carved > head->capacity ||
                head->used > head->carved) {
                ok = false;
                break;
            }
            const auto base = reinterpret_cast<std::uintptr_t>(address_of(head));
            auto walk = [&](const free_block* b, std::size_t& count) {
                for (; b != nullptr && ok; b = b->next) {
                    const auto off = reinterpret_cast<std::uintptr_t>(b) - base;
                    if (off % bs != 0 || off / bs >= head->carved || ++count > head->carved) ok = false;
                }
            };
            std::size_t local = 0;
            std::size_t remote = 0;
            walk(head->free, local);
            const std::uint64_t w = head->thread_free.load(std::memory_order_acquire);
            walk(remote_head(w), remote);
            if (local + head->used != head->carved || remote > head->used || remote != remote_count(w))
                ok = false;
            if (head->where == run_list::cache && head->used != 0) ok = false;
            break;
        }
        case span_kind::medium: {
            for (std::size_t i = 1; i < n; ++i)
                if (head[i].back != i) ok = false;
            const tlsf* t = tlsf_of(const_cast<run*>(head), data_, runs_);
            if (!t->check()) ok = false;
            ++medium_spans;
            medium_granules += n;
            medium_live += t->live_allocations();
            break;
        }
        case span_kind::kept: kept += n; break;
        case span_kind::large:
            large_granules += n;
            ++large_blocks;
            break;
        case span_kind::meta: break;
        case span_kind::purging: ok = false; break; // lock_all() waits for purges to file theirs back
        }
        g += n;
    }
    std::size_t binned = 0;
    for (unsigned b = 0; ok && b < bin_count; ++b) {
        if (((bin_map_ >> b) & 1) != (bins_[b] != nullptr)) ok = false;
        bool clean_seen = false;
        for (const run* r = bins_[b]; ok && r != nullptr; r = r->next) {
            if (r->kind != span_kind::free || bin_of(r->granules) != b) ok = false;
            if (r->prev != nullptr ? r->prev->next != r : bins_[b] != r) ok = false; // unlink's links
            if (r->dirty && clean_seen) ok = false;                                  // dirty spans first
            clean_seen = clean_seen || !r->dirty;
            if (r->next == nullptr && bin_tails_[b] != r) ok = false;
            ++binned;
        }
        if (bins_[b] == nullptr && bin_tails_[b] != nullptr) ok = false;
    }
    if (binned != free_spans || dirty != dirty_free_ || free_granules != free_granules_) ok = false;
    if ((large_granules << granule_shift) != large_bytes_.load(std::memory_order_relaxed) ||
        large_blocks != large_live_.load(std::memory_order_relaxed))
        ok = false;
    // The medium spans are the arenas, and their live blocks the medium tier's count.
    if (medium_spans != arena_count_ || medium_granules << granule_shift != arena_bytes_ ||
        medium_live != medium_count_.load(std::memory_order_relaxed) ||
        (arena_count_ != 0 && arena_hint_ >= arena_count_))
        ok = false;
    for (unsigned a = 0; ok && a < arena_count_; ++a)
        if (arenas_[a]->kind != span_kind::medium || arenas_[a]->back != 0) ok = false;
    // Each kept span is one thread's: the spans of kind kept are those the threads hold.
    std::size_t held = 0;
    for (const thread_heap* h = heaps_; ok && h != nullptr; h = h->next_heap)
        if (const run* k = h->kept.load(std::memory_order_relaxed)) {
            if (k->kind != span_kind::kept) ok = false;
            held += k->granules;
        }
    if (ok && (kept != held || kept != kept_granules_.load(std::memory_order_relaxed))) ok = false;
    if (ok) ok = check_run_lists(owned_runs, unowned_runs);
    if (ok && tls[slot_].epoch == epoch_) ok = check_stash(tls[slot_].heap);
    if (ok) ok = check_depots();
    self->unlock_all();
    return ok;
}

/// Returns: whether every small run is where its `where` says, once: an owned one is its owner's
/// current (or parked) run or on the list of its class (its cache: any class) that `where` names;
/// an unowned one is on its class's abandoned list, whose count matches. `owned` and `unowned`: the
/// small runs the walk of the spans found. Requires: every lock held (check()).
bool engine_heap::check_run_lists(std::size_t owned, std::size_t unowned) const noexcept {
    bool ok = true;
    std::size_t listed = 0;
    // A damaged list could be a cycle: no walk goes past the runs that exist.
    const auto walk = [&](const run* first, auto&& visit) {
        for (const run* r = first; ok && r != nullptr; r = r->next) {
            if (listed > owned + unowned) ok = false;
            visit(r);
        }
    };
    for (const thread_heap* h = heaps_; ok && h != nullptr; h = h->next_heap) {
        const auto mine = [&](const run* r, unsigned c, run_list where) {
            if (r->kind != span_kind::small || r->owner.load(std::memory_order_relaxed) != h ||
                r->where != where || (where != run_list::cache && r->cls != c))
                ok = false;
            ++listed;
        };
        for (unsigned c = 0; c < class_count; ++c) {
            const run* current = h->current[c] == &h->stash[c] ? h->parked[c] : h->current[c];
            if (current != nullptr && current != &empty_run) mine(current, c, run_list::none);
            walk(h->partial[c], [&](const run* r) { mine(r, c, run_list::partial); });
            walk(h->full[c], [&](const run* r) { mine(r, c, run_list::full); });
            walk(h->freed[c], [&](const run* r) { mine(r, c, run_list::freed); });
        }
        walk(h->cache, [&](const run* r) { mine(r, 0, run_list::cache); });
    }
    std::size_t abandoned = 0;
    for (unsigned c = 0; ok && c < class_count; ++c) {
        std::size_t n = 0;
        walk(abandoned_[c], [&](const run* r) {
            if (r->kind != span_kind::small || r->owner.load(std::memory_order_relaxed) != nullptr ||
                r->cls != c)
                ok = false;
            ++n;
            ++listed;
        });
        if (n != abandoned_count_[c].load(std::memory_order_relaxed)) ok = false;
        abandoned += n;
    }
    return ok && listed == owned + unowned && abandoned == unowned;
}

/// Returns: whether `b`, a free block cached out of its run (on a stash or in a depot), lies in the
/// heap on the block grid of the carved part of a small run of class `c` that counts blocks out.
bool engine_heap::cached_block_ok(const free_block* b, unsigned c) const noexcept {
    const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(b) - data_;
    if (off >= top_ << granule_shift) return false;
    const run* d = head_of(b);
    const std::uintptr_t at =
        reinterpret_cast<std::uintptr_t>(b) - reinterpret_cast<std::uintptr_t>(address_of(d));
    return d->kind == span_kind::small && d->cls == c && at % d->block_size == 0 &&
           at / d->block_size < d->carved && d->used != 0;
}

/// Returns: whether the stash of `h` holds its count of blocks, each on the block grid of a small
/// run of its class, and is current exactly while it holds blocks (or until the next slow path).
bool engine_heap::check_stash(const thread_heap* h) const noexcept {
    for (unsigned c = 0; c < class_count; ++c) {
        const run* st = &h->stash[c];
        if (h->current[c] != st && (st->free != nullptr || h->parked[c] != nullptr)) return false;
        std::size_t count = 0;
        for (const free_block* b = st->free; b != nullptr; b = b->next)
            if (++count > stash_count(st) || !cached_block_ok(b, c)) return false;
        if (count != stash_count(st)) return false;
    }
    return true;
}

} // namespace strata
