// engine_heap's depot: per size class, batches of free small blocks that threads' full stashes
// hand over, for threads whose stashes run dry (tcmalloc's transfer cache, Bonwick's magazine
// depot). A thread that frees more of a class than it allocates (it frees what other threads
// made) and one that allocates more then trade blocks a batch at a time, under one lock, instead of
// pushing each block onto its owner's run and the owner walking the list when it collects.
//
// Exports: engine_heap::depot_put, depot_take, drain_depots, check_depots.
#include "engine_internal.hpp"

namespace strata {

using namespace engine_detail;

namespace {
/// The link from a batch's first block to the next batch: the block's second word (every class is
/// at least 16 bytes; the first word links the blocks of the batch).
free_block*& next_batch(free_block* b) noexcept { return reinterpret_cast<free_block**>(b)[1]; }
free_block* next_batch(const free_block* b) noexcept { return reinterpret_cast<free_block* const*>(b)[1]; }

/// Blocks a maintenance step hands from idle depots to their runs, at most (one atomic push each).
constexpr std::size_t drain_step_blocks = 1024;
} // namespace

// -------------------------------------------------------------------------------------------------
// Put and take
// -------------------------------------------------------------------------------------------------

/// Effects: h's stash of class `c` is full: `b` (just freed; `remote`: of another thread's run) and
/// the depot_batch_[c] - 1 blocks on top of the stash go to the depot as one batch, unless the
/// depot is full. The stash holds stash_cap_[c] >= 2 * depot_batch_[c] blocks, its newest on top:
/// the blocks handed over are the ones most recently freed. Returns: whether it did (the free is
/// then counted); else the free goes home (free_home). Requires: depot_batch_[c] != 0, the calling
/// thread owns h, h's stash of class `c` holds at least stash_cap_[c] blocks.
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
        next_batch(b) = d.top;
        d.top = b;
        d.batches.store(batches + 1, std::memory_order_relaxed);
    }
    st->used = static_cast<std::uint16_t>(st->used + (n - 1)); // n - 1 blocks left, b never came in
    ++h->window_frees[remote];
    h->frees[c].add(1);
    return true;
}

/// Effects: h's stash of class `c` ran dry: takes the depot's newest batch of the class onto it.
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
        d.top = next_batch(b);
        d.batches.store(d.batches.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
        d.taken = true;
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
/// owners (or the sweep of abandoned runs) to collect. Otherwise (a maintenance step): the depots
/// that no thread took a batch from since the last step do, newest batch first, drain_step_blocks
/// blocks at most; the others are marked for the next step to look at again.
void engine_heap::drain_depots(bool all) noexcept {
    std::size_t budget = all ? SIZE_MAX : drain_step_blocks;
    for (unsigned c = 0; c < class_count && budget != 0; ++c) {
        depot_slot& d = depot_[c];
        if (d.batches.load(std::memory_order_relaxed) == 0) continue;
        const std::size_t n = depot_batch_[c];
        free_block* batches = nullptr; // taken off the depot, linked as there
        {
            lock_guard g(d.lock);
            const bool idle = !d.taken;
            d.taken = false;
            if (!all && !idle) continue;
            std::uint32_t left = d.batches.load(std::memory_order_relaxed);
            // The newest batches, whole, as many as the budget holds (at least one).
            free_block* last = nullptr;
            for (free_block* b = d.top; b != nullptr && budget != 0; b = next_batch(b)) {
                last = b;
                --left;
                budget = budget > n ? budget - n : 0;
            }
            if (last == nullptr) continue;
            batches = d.top;
            d.top = next_batch(last);
            next_batch(last) = nullptr;
            d.batches.store(left, std::memory_order_relaxed);
        }
        for (free_block* b = batches; b != nullptr;) {
            free_block* following = next_batch(b);
            for (free_block* x = b; x != nullptr;) {
                free_block* next = x->next;
                push_thread_free(x, head_of(x), c);
                x = next;
            }
            b = following;
        }
    }
}

// -------------------------------------------------------------------------------------------------
// Checks
// -------------------------------------------------------------------------------------------------

/// Returns: whether each depot holds its count of batches, each of depot_batch_[c] blocks on the
/// block grid of the carved part of a small run of class c that counts blocks out. Requires: every
/// lock held (check()).
bool engine_heap::check_depots() const noexcept {
    for (unsigned c = 0; c < class_count; ++c) {
        const depot_slot& d = depot_[c];
        std::uint32_t batches = 0;
        for (const free_block* b = d.top; b != nullptr; b = next_batch(b)) {
            if (++batches > depot_max_[c]) return false;
            std::size_t count = 0;
            for (const free_block* x = b; x != nullptr; x = x->next) {
                const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(x) - data_;
                if (off >= top_ << granule_shift || ++count > depot_batch_[c]) return false;
                const run* r = head_of(x);
                const std::uintptr_t at =
                    reinterpret_cast<std::uintptr_t>(x) - reinterpret_cast<std::uintptr_t>(address_of(r));
                if (r->kind != span_kind::small || r->cls != c || at % r->block_size != 0 ||
                    at / r->block_size >= r->carved || r->used == 0)
                    return false;
            }
            if (count != depot_batch_[c]) return false;
        }
        if (batches != d.batches.load(std::memory_order_relaxed)) return false;
    }
    return true;
}

} // namespace strata
