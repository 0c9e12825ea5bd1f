// engine_heap's depot: per size class, batches of free small blocks that threads' full stashes
// hand over, for threads whose stashes run dry (tcmalloc's transfer cache, Bonwick's magazine
// depot). A thread that frees more of a class than it allocates (it frees what other threads
// made) and one that allocates more then trade blocks a batch at a time, under one lock, instead of
// pushing each block onto its owner's run and the owner walking the list when it collects.
//
// Exports: engine_heap::depot_put, depot_take, drain_depots, check_depots.
#include <algorithm>

#include "engine_internal.hpp"

namespace strata {

using namespace engine_detail;

// -------------------------------------------------------------------------------------------------
// Batch links
// -------------------------------------------------------------------------------------------------
//
// A batch is a null-terminated list of depot_batch_[c] >= 8 blocks (every class is at least 16
// bytes, so each block has a second word):
//   - the first block's second word links the batch below (older), or is null at the bottom;
//   - the second block's second word links the batch above (newer), or is null at the top;
//   - the depot's `top` and `bottom` are first blocks; the rest of each block is free memory.

namespace {
free_block*& below(free_block* b) noexcept { return reinterpret_cast<free_block**>(b)[1]; }
free_block*& above(free_block* b) noexcept { return reinterpret_cast<free_block**>(b->next)[1]; }
const free_block* below(const free_block* b) noexcept { return reinterpret_cast<free_block* const*>(b)[1]; }
const free_block* above(const free_block* b) noexcept {
    return reinterpret_cast<free_block* const*>(b->next)[1];
}

/// Blocks a maintenance step sends home from the depots, about (whole batches; one atomic push
/// each, 50-100 us in all).
constexpr std::size_t drain_step_blocks = 1024;
} // namespace

// -------------------------------------------------------------------------------------------------
// Put and take
// -------------------------------------------------------------------------------------------------

/// Effects: h's stash of class `c` is full: `b` (just freed; `remote`: of another thread's run) and
/// the depot_batch_[c] - 1 blocks on top of the stash go to the depot as one batch, unless the
/// depot is full. The stash holds stash_cap_[c] >= 2 * depot_batch_[c] blocks, its newest on top.
/// Returns: whether it did (the free is then counted); else the free goes home (free_home).
/// Requires: depot_batch_[c] != 0, the calling thread owns h, h's stash of class `c` holds
/// stash_cap_[c] blocks.
bool engine_heap::depot_put(thread_heap* h, unsigned c, free_block* b, bool remote) noexcept {
    depot_slot& d = depot_[c];
    if (d.batches.load(std::memory_order_relaxed) >= depot_max_[c]) return false;
    run* st = &h->stash[c];
    const unsigned n = depot_batch_[c];
    b->next = st->free;
    free_block* last = b;
    for (unsigned i = 1; i < n; ++i)
        last = last->next;
    {
        lock_guard g(d.lock);
        const std::uint32_t batches = d.batches.load(std::memory_order_relaxed);
        if (batches >= depot_max_[c]) return false; // b->next is rewritten wherever b goes
        st->free = last->next;
        last->next = nullptr;
        below(b) = d.top;
        above(b) = nullptr;
        (d.top != nullptr ? above(d.top) : d.bottom) = b;
        d.top = b;
        d.batches.store(batches + 1, std::memory_order_relaxed);
        d.puts.store(d.puts.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    st->used = static_cast<std::uint16_t>(st->used + (n - 1)); // n - 1 blocks left, b never came in
    ++h->window_frees[remote];
    h->frees[c].add(1);
    return true;
}

/// Effects: h's stash of class `c` ran dry: takes the depot's newest batch onto it.
/// Returns: the batch's first block, allocated (counted); nullptr when the depot is empty.
/// Requires: the calling thread owns h, h's stash of class `c` is empty.
free_block* engine_heap::depot_take(thread_heap* h, unsigned c) noexcept {
    depot_slot& d = depot_[c];
    if (d.batches.load(std::memory_order_relaxed) == 0) return nullptr;
    free_block* b = nullptr;
    {
        lock_guard g(d.lock);
        b = d.top;
        if (b == nullptr) return nullptr;
        d.top = below(b);
        (d.top != nullptr ? above(d.top) : d.bottom) = nullptr;
        const std::uint32_t batches = d.batches.load(std::memory_order_relaxed) - 1;
        d.batches.store(batches, std::memory_order_relaxed);
        d.low = std::min(d.low, batches);
    }
    run* st = &h->stash[c];
    st->free = b->next;
    st->used = static_cast<std::uint16_t>(st->used - (depot_batch_[c] - 1));
    h->allocs[c].add(1);
    return b;
}

// -------------------------------------------------------------------------------------------------
// Draining
// -------------------------------------------------------------------------------------------------

/// Effects: `all` (trim): every depot's blocks go onto their runs' thread_free lists, for their
/// owners (or the sweep of abandoned runs) to collect. Otherwise (a maintenance step): each depot
/// sends home, from the bottom, the batches it held all through the interval since the last step
/// (its low-water mark: batches no thread needed), about drain_step_blocks blocks in all, one class
/// further round each step; the mark starts again at what is left. A batch goes home while its depot's lock
/// is held, so that a fork (which takes every lock) never finds blocks between the depot and their runs.
void engine_heap::drain_depots(bool all) noexcept {
    // One drain at a time: a step that overlapped another would take the other's fresh low-water
    // marks for a whole interval's. trim() waits its turn; a step skips.
    bool idle = false;
    for (spin_backoff wait; !depot_draining_.compare_exchange_weak(idle, true, std::memory_order_acquire);
         wait.wait()) {
        if (!all) return;
        idle = false;
    }
    std::size_t budget = all ? SIZE_MAX : drain_step_blocks;
    // Each step starts one class further, so that no class waits behind the budget for long.
    const unsigned first = depot_drain_from_.fetch_add(1, std::memory_order_relaxed) % class_count;
    for (unsigned i = 0; i < class_count; ++i) {
        const unsigned c = (first + i) % class_count;
        depot_slot& d = depot_[c];
        if (d.batches.load(std::memory_order_relaxed) == 0) continue;
        const std::size_t n = depot_batch_[c];
        std::uint32_t due = 0; // batches to send home
        {
            lock_guard g(d.lock);
            const std::uint32_t batches = d.batches.load(std::memory_order_relaxed);
            due = all ? batches
                      : static_cast<std::uint32_t>(std::min<std::size_t>(d.low, (budget + n - 1) / n));
            d.low = batches - due;
        }
        for (; due != 0 && budget != 0; --due) {
            lock_guard g(d.lock); // one batch a hold: a stash waits for at most 32 pushes
            free_block* b = d.bottom;
            if (b == nullptr) break;
            d.bottom = above(b);
            (d.bottom != nullptr ? below(d.bottom) : d.top) = nullptr;
            const std::uint32_t batches = d.batches.load(std::memory_order_relaxed) - 1;
            d.batches.store(batches, std::memory_order_relaxed);
            d.low = std::min(d.low, batches);
            for (free_block* x = b; x != nullptr;) {
                free_block* next = x->next;
                push_thread_free(x, head_of(x), c);
                x = next;
            }
            budget = budget > n ? budget - n : 0;
        }
        if (budget == 0) break;
    }
    depot_draining_.store(false, std::memory_order_release);
}

// -------------------------------------------------------------------------------------------------
// Checks
// -------------------------------------------------------------------------------------------------

/// Returns: whether each depot holds its count of batches, linked both ways between `top` and
/// `bottom`, each of depot_batch_[c] blocks on the block grid of the carved part of a small run of
/// class c that counts blocks out, and its low-water mark is at most its count. Requires: every
/// lock held (check()).
bool engine_heap::check_depots() const noexcept {
    for (unsigned c = 0; c < class_count; ++c) {
        const depot_slot& d = depot_[c];
        std::uint32_t batches = 0;
        const free_block* newer = nullptr;
        for (const free_block* b = d.top; b != nullptr; newer = b, b = below(b)) {
            if (++batches > depot_max_[c] || b->next == nullptr || above(b) != newer) return false;
            std::size_t count = 0;
            for (const free_block* x = b; x != nullptr; x = x->next)
                if (++count > depot_batch_[c] || !cached_block_ok(x, c)) return false;
            if (count != depot_batch_[c]) return false;
        }
        if (d.bottom != newer || batches != d.batches.load(std::memory_order_relaxed) || d.low > batches)
            return false;
    }
    return true;
}

} // namespace strata
