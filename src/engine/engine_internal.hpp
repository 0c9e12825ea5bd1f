#pragma once
// What the engine_heap source files share and nothing else sees: the run list helpers, the span
// bins, a TLSF arena's place in its span, the registry of live heaps, lock guards.
//
// Exports (strata::engine_detail): class_granules, add_under_lock, lock_guard, unlock_guard,
// flush_let_go, lock_when_idle, purge_piece_granules, registry_type / registry, push, unlink, bin_of,
// tlsf_of, tlsf_room, purge_mark_offset; engine_heap::thread_cache.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "strata/core/spinlock.hpp"
#include "strata/engine/detail/purge_batch.hpp"
#include "strata/engine/engine_heap.hpp"
#include "strata/heap/tlsf.hpp"

namespace strata {
namespace engine_detail {

/// Returns: granules of one run of class `c`: one for blocks up to 1 KiB (64+ blocks), otherwise
/// enough for 16 blocks (1 MiB for 64 KiB blocks), so a big class under mixed sizes does not switch
/// runs every few allocations.
constexpr std::uint32_t class_granules(unsigned c) noexcept {
    const std::size_t bs = class_size(c);
    if (bs <= 1024) return 1;
    return static_cast<std::uint32_t>((16 * bs + granule - 1) / granule);
}

/// A run's block count fits the 16-bit length of its thread_free word (remote_count).
static_assert(
    [] {
        for (unsigned c = 0; c < class_count; ++c)
            if ((std::size_t{class_granules(c)} << granule_shift) / class_size(c) >= std::size_t{1} << 16)
                return false;
        return true;
    }(),
    "a run's block count must fit the thread_free word's 16 bits");
/// A growing run's fill counts its granules below fill_whole.
static_assert(fill_growing(class_granules(class_count - 1)) < fill_whole);

/// Returns: milliseconds from tick `then` to tick `now` (engine_heap::now_tick, wrapping), 0 when
/// `then` is later: a step takes its tick before its lock, and another thread may stamp a block
/// freed meanwhile with a later one. Such a block is new, not 49 days old.
constexpr std::uint32_t tick_age(std::uint32_t now, std::uint32_t then) noexcept {
    return static_cast<std::int32_t>(now - then) < 0 ? 0 : now - then;
}

/// Effects: adds `delta` (wrapping: give 0 - n to subtract) to a counter that only holders of one
/// lock write and anyone may read: a plain load and store, not a locked read-modify-write.
inline void add_under_lock(std::atomic<std::size_t>& counter, std::size_t delta) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

using lock_guard = spin_guard;

/// Effects: purges what `batch` holds with `lock` (held) let go meanwhile, `in_flight` (guarded by
/// `lock`) counting this purge until it takes the lock back: lock_when_idle waits for it.
inline void flush_let_go(purge_batch& batch, spinlock& lock, std::uint32_t& in_flight) noexcept {
    ++in_flight;
    lock.unlock();
    batch.flush();
    lock.lock();
    --in_flight;
}

/// Effects: takes `lock` once no purge counted in `in_flight` has it let go (flush_let_go).
inline void lock_when_idle(spinlock& lock, const std::uint32_t& in_flight) noexcept {
    for (spin_backoff b;; b.wait()) {
        lock.lock();
        if (in_flight == 0) return;
        lock.unlock();
    }
}

/// Granules of one piece of a budgeted span purge: one flush of a purge_batch.
inline constexpr std::size_t purge_piece_granules = purge_batch::max_bytes >> granule_shift;

/// Releases a held lock for a scope (a lock_guard's scope, which takes it back at its end).
struct unlock_guard {
    explicit unlock_guard(spinlock& l) noexcept : l_(l) { l_.unlock(); }
    ~unlock_guard() { l_.lock(); }
    unlock_guard(const unlock_guard&) = delete;
    unlock_guard& operator=(const unlock_guard&) = delete;
    spinlock& l_;
};

/// Set on a thread once its caches were handed back at its exit (engine_heap::thread_exit). Another
/// key's destructor that allocates after that gets no new cache (in pthread's last round of
/// destructors nothing would hand it back): its small blocks come from the medium tier.
extern __thread bool thread_gone __attribute__((tls_model("initial-exec")));
/// Small frees the calling thread made with no cache for the heap (free_without_cache).
extern __thread std::uint32_t cacheless_frees __attribute__((tls_model("initial-exec")));

/// Every live engine_heap, by TLS slot. The epoch tells a thread's slot from a stale one left by a
/// destroyed heap whose slot was reused.
struct registry_type {
    spinlock lock;
    engine_heap* instances[max_instances] = {};
    std::uint32_t epochs[max_instances] = {};
    std::uint32_t next_epoch = 1; // never 0 (a slot's epoch 0 is no heap's)
    pthread_key_t key = 0;
    bool key_made = false;
};
extern registry_type registry; // engine_heap.cpp

/// Effects: pushes `r` at the front of the doubly linked list `head`.
inline void push(run*& head, run* r) noexcept {
    r->prev = nullptr;
    r->next = head;
    if (head != nullptr) head->prev = r;
    head = r;
}

/// Effects: takes `r` out of the doubly linked list `head`.
inline void unlink(run*& head, run* r) noexcept {
    if (r->prev != nullptr)
        r->prev->next = r->next;
    else
        head = r->next;
    if (r->next != nullptr) r->next->prev = r->prev;
    r->next = r->prev = nullptr;
}

/// Returns: the free-span bin of a span of `n` granules: exact up to 32, then one per power of two.
inline unsigned bin_of(std::size_t n) noexcept {
    if (n <= 32) return static_cast<unsigned>(n - 1);
    return std::min(63u, 32u + static_cast<unsigned>(std::bit_width(n)) - 6u);
}

/// Returns: the tlsf object at the start of the medium arena span `head`.
inline tlsf* tlsf_of(run* head, std::uintptr_t data, const run* runs) noexcept {
    const auto index = static_cast<std::size_t>(head - runs);
    return reinterpret_cast<tlsf*>(data + (index << granule_shift));
}

/// Bytes at the start of a medium arena span reserved for its tlsf object.
inline constexpr std::size_t tlsf_room = (sizeof(tlsf) + 63) & ~std::size_t{63};

/// Where a free medium block's purge mark starts (purge.cpp): after the two tlsf list links.
inline constexpr std::size_t purge_mark_offset = 2 * sizeof(void*);

} // namespace engine_detail

/// Returns: the calling thread's cache, or nullptr when it has none (none is made).
inline engine_heap::thread_heap* engine_heap::existing_thread_cache() const noexcept {
    const engine_detail::tls_slot& s = engine_detail::tls[slot_];
    return s.epoch == epoch_ ? s.heap : nullptr;
}

/// Returns: the calling thread's cache, made on first use; nullptr when none can be made.
inline engine_heap::thread_heap* engine_heap::thread_cache() noexcept {
    if (thread_heap* h = existing_thread_cache()) return h;
    return make_thread_heap();
}

} // namespace strata
