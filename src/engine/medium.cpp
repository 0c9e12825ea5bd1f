// The medium tier: requests above 64 KiB up to 1 MiB, served by TLSF arenas (strata::tlsf) behind
// one lock. Each arena is a span whose first bytes hold its tlsf object; arenas grow 1x, 2x, 4x
// medium_arena_bytes, and one other than the first that stays empty for decay_ms goes back to the
// span pool. Freed blocks of purge_medium_bytes or more stay resident until they decay or pass
// medium_retain_bytes (purge.cpp).
//
// Exports: engine_heap::medium_allocate, medium_handed_out, medium_deallocate, medium_release,
// release_empty_arenas, medium_over_cap, medium_resize_in_place.
#include <new>
#include <span>

#include "strata/core/poison.hpp"

#include "engine_internal.hpp"

namespace strata {

using namespace engine_detail;

// -------------------------------------------------------------------------------------------------
// Allocate
// -------------------------------------------------------------------------------------------------

/// Returns: a block from the first arena that can serve it, from the hint on (the last arena that
/// served, or an older one freed into since), else from a new arena; nullptr when no arena can be
/// made.
void* engine_heap::medium_allocate(std::size_t size, std::size_t align) noexcept {
    lock_guard g(medium_lock_);
    for (unsigned i = 0; i < arena_count_; ++i) {
        const unsigned a = (arena_hint_ + i) % arena_count_;
        tlsf* t = tlsf_of(arenas_[a], data_, runs_);
        if (void* p = t->allocate(size, align)) {
            arena_hint_ = a;
            return medium_handed_out(p, t->usable_size(p));
        }
    }
    if (arena_count_ == max_arenas) return nullptr;
    // Arenas grow 1x, 2x, 4x the configured size: a program with a few medium blocks spans 16 MiB.
    const std::size_t want =
        std::max(options_.medium_arena_bytes << std::min(arena_count_, 2u), size + align + tlsf_room + 4096);
    const std::size_t n = (want + granule - 1) >> granule_shift;
    run* head = nullptr;
    {
        lock_guard s(span_lock_);
        head = span_alloc(n, span_kind::medium, nullptr);
    }
    if (head == nullptr) return nullptr;
    std::byte* at = address_of(head);
    auto* t = new (at) tlsf(std::span<std::byte>(at + tlsf_room, (n << granule_shift) - tlsf_room));
    head->freed_at = now_tick(); // empty since it was made, should the request below not fit
    arena_hint_ = arena_count_;
    arenas_[arena_count_++] = head;
    arena_bytes_ += n << granule_shift;
    void* p = t->allocate(size, align);
    return p != nullptr ? medium_handed_out(p, t->usable_size(p)) : nullptr;
}

/// Effects: accounting for a block just handed out; clears a purge mark it may carry.
/// Requires: medium_lock_ held; `usable` the block's usable size.
void* engine_heap::medium_handed_out(void* p, std::size_t usable) noexcept {
    // TLSF poisons the slack past `size` for ASan; usable_size() promises all of it.
    unpoison(p, usable);
    // A block handed out starts where a free block started (unless aligned past it), so it may
    // carry that block's purge mark (purge_free_medium). One store breaks the tag: freed again as
    // the same block, unwritten there, it counts as new, not as seen free by an old sweep. At
    // checks >= 2 tlsf has filled the block already.
    if constexpr (STRATA_CHECKS < 2)
        *reinterpret_cast<std::uint64_t*>(static_cast<std::byte*>(p) + purge_mark_offset) = 0;
    add_under_lock(medium_in_use_, usable);
    note_big_live();
    add_under_lock(medium_count_, 1);
    add_under_lock(medium_total_, 1);
    return p;
}

// -------------------------------------------------------------------------------------------------
// Free and shrink
// -------------------------------------------------------------------------------------------------

/// Effects: frees `p` into arena `head` (purged first when medium_retain_bytes is 0, else kept
/// within it), gives an empty arena (not the first) back, and takes a maintenance step when due.
void engine_heap::medium_deallocate(void* p, run* head) noexcept {
    medium_release(p, head);
    thread_heap* t = existing_thread_cache();
    maybe_decay(t); // its step walks this thread's runs too
    if (t != nullptr) walk_runs_if_asked(t);
}

/// Effects: medium_deallocate's work under medium_lock_.
void engine_heap::medium_release(void* p, run* head) noexcept {
    lock_guard g(medium_lock_);
    tlsf* t = tlsf_of(head, data_, runs_);
    if (static_cast<std::byte*>(p) < address_of(head) + tlsf_room) return; // the arena's own record
    const std::size_t usable = t->usable_size(p);
    // At checks >= 2 tlsf fills a freed block at the call (core/poison.hpp, release_bytes), which
    // would fault every purged page back in: purge after the free there, under the lock.
    constexpr bool fills_on_free = STRATA_CHECKS >= 2;
    const bool purge_now = usable >= options_.purge_medium_bytes && options_.medium_retain_bytes == 0;
    if (purge_now && !fills_on_free) {
        // Purged before it is freed, outside the lock: p is still the caller's, so no other thread
        // can be handed its pages meanwhile, and its arena cannot go (p is live in it); two threads
        // churning big blocks do not wait on each other's madvise.
        unlock_guard u(medium_lock_);
        purge_medium(p, usable);
    }
    add_under_lock(medium_in_use_, 0 - usable);
    add_under_lock(medium_count_, 0 - std::size_t{1});
    t->deallocate(p);
    if (purge_now && fills_on_free) purge_medium(p, usable); // in flight: its interior unread
    // Frees of every size count toward the cap: a smaller block merges into a big one.
    if (options_.medium_retain_bytes != 0 && medium_over_cap(usable))
        (void)purge_free_medium(purge_pass::cap, now_tick(), 0);
    // An empty arena completes its last free (live_allocations() is O(1) and leaves it in flight), so
    // it is one free block again, as when it was made, and stays an arena, warm, until it has been
    // empty for decay_ms (release_empty_arenas). Once no medium block is live the next ones start
    // from the first arena again: a level loaded after the last one was unloaded gets the same
    // places, on pages the last one already touched.
    if (t->live_allocations() == 0) {
        t->flush();
        head->freed_at = now_tick();
    }
    if (medium_count_.load(std::memory_order_relaxed) == 0) arena_hint_ = 0;
    // A free into an arena older than the hint's moves the hint back to it: the older arena's pages
    // were touched first, so requests go there before they fill the newer one further. A program
    // whose medium blocks swing between a few MiB and tens of MiB would otherwise fill its newest
    // arena while an older one, emptied and still resident, waited to decay (a replayed Ruby run
    // peaked with its 32 MiB arena empty beside a full 64 MiB one).
    else if (head != arenas_[arena_hint_])
        for (unsigned a = 0; a < arena_hint_; ++a)
            if (arenas_[a] == head) {
                arena_hint_ = a;
                break;
            }
}

/// Effects: hands the arenas other than the first that have been empty for decay_ms (`all`: every
/// empty one) back to the span pool, aged from when they emptied. Requires: medium_lock_ held.
void engine_heap::release_empty_arenas(bool all, std::uint32_t now) noexcept {
    for (unsigned a = 1; a < arena_count_;) {
        run* head = arenas_[a];
        tlsf* t = tlsf_of(head, data_, runs_);
        if (t->live_allocations() != 0 || (!all && tick_age(now, head->freed_at) < options_.decay_ms)) {
            ++a;
            continue;
        }
        std::copy(arenas_ + a + 1, arenas_ + arena_count_, arenas_ + a); // the rest keep their order
        --arena_count_;
        arena_bytes_ -= std::size_t{head->granules} << granule_shift;
        arena_hint_ = 0;
        const std::uint32_t emptied = head->freed_at;
        t->~tlsf();
        // TLSF poisons free blocks for ASan; the span may become a run of small blocks next.
        unpoison(address_of(head), std::size_t{head->granules} << granule_shift);
        lock_guard s(span_lock_);
        span_free(head, true, emptied);
    }
}

/// Returns: whether the big free medium blocks may now hold more than medium_cap() resident, after
/// `freed` more bytes were freed: never while the arenas' free bytes are within it; else when the
/// last sweep's count plus what was freed since passes it. Requires: medium_lock_ held.
bool engine_heap::medium_over_cap(std::size_t freed) noexcept {
    medium_dirty_ += freed;
    const std::size_t cap = medium_cap();
    const std::size_t in_use = medium_in_use_.load(std::memory_order_relaxed);
    return arena_bytes_ > in_use + cap && medium_resident_ + medium_dirty_ > cap;
}

/// Returns: true when the medium block `p` of arena `head` now holds `new_size` bytes in place: a
/// shrink (the tail goes back to the arena) or a grow into a free successor. A move inside the
/// arena would copy under the lock, so anything else answers false.
bool engine_heap::medium_resize_in_place(void* p, run* head, std::size_t new_size) noexcept {
    lock_guard g(medium_lock_);
    tlsf* t = tlsf_of(head, data_, runs_);
    const std::size_t before = t->usable_size(p);
    if (!t->resize_in_place(p, new_size)) return false;
    const std::size_t after = t->usable_size(p);
    unpoison(p, after); // TLSF poisons the slack past new_size for ASan; usable_size() promises it
    if (after >= before) {
        add_under_lock(medium_in_use_, after - before);
        note_big_live();
        return true;
    }
    const std::size_t released = before - after;
    add_under_lock(medium_in_use_, 0 - released);
    // The tail went back as a free block (a header, then its payload, right after p's): treated
    // like a free of that size (purged at once under the lock without a cap).
    if (options_.medium_retain_bytes == 0) {
        if (released >= options_.purge_medium_bytes && released > tlsf::header_size)
            purge_medium(static_cast<std::byte*>(p) + after + tlsf::header_size,
                         released - tlsf::header_size);
    } else if (medium_over_cap(released)) {
        (void)purge_free_medium(purge_pass::cap, now_tick(), 0);
    }
    return true;
}

} // namespace strata
