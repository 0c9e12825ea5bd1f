// The small tier: size classes up to 64 KiB, served from runs (spans of one class's blocks) that a
// thread owns. The owner allocates and frees with no lock and no atomic (engine_heap::allocate and
// deallocate, inline); this file holds what happens when its run is empty (small_slow), when a run
// empties (local_free_slow), and frees from other threads (deallocate_slow: onto the freeing
// thread's stash, a full stash's batch into the depot (depot.cpp), else onto the run's atomic
// thread_free list, which the owner collects; while a thread's stash is on, its own frees go there
// too).
//
// A run is on at most one of its owner's lists: current (the one allocate pops from), partial (has
// free blocks), full (found exhausted; frees into it set a flag), cache (empty, kept for reuse).
// While a class's stash holds blocks, the stash is current and the current run is parked.
// Runs of exited threads wait on the heap's abandoned lists until a thread adopts them. Empty runs a
// thread keeps for idle classes go back to the span pool when a request would otherwise touch fresh
// pages (prefer_resident).
//
// Exports: engine_heap::small_slow, refill_stash, local_free_slow, relist, deallocate_slow,
// free_without_cache, push_thread_free, flush_stash, collect, retire, prefer_resident, note_busy_classes,
// release_idle_runs, new_run, adopt, fill_ahead, thread_populates, sweep_abandoned.
#include <sys/mman.h>

#include <algorithm>

#include "engine_internal.hpp"

namespace strata {

using namespace engine_detail;

namespace {
/// Of the run requests a thread makes while it keeps a large span for its next large request, the
/// one that finds no resident pages in the pool and hands the span to the pool instead, so that it
/// takes the span's pages (the three before it take fresh ones). A program that freed a big buffer
/// it does not make again (a grown vector's old storage) would otherwise fault fresh pages in for
/// its small blocks while the span sat idle until it decayed: the recorded OpenTTD server, replayed
/// through malloc, took 1.27x mimalloc's time and 1.09x its peak RSS with the span kept, 1.08x and
/// 1.03x without. One that makes big buffers again and again keeps its span: its runs seldom need
/// fresh pages.
constexpr std::uint32_t kept_miss_limit = 4;

/// The first class whose runs span more than one granule.
constexpr unsigned first_multi_granule_class = [] {
    unsigned c = 0;
    while (c < class_count && class_granules(c) == 1)
        ++c;
    return c;
}();

/// Returns: whether most of run `r`'s pages were faulted in: it is whole, or growing over half its
/// granules (a run barely carved holds mostly untouched pages, as a lazy one does).
bool mostly_filled(const run* r) noexcept {
    return r->fill == fill_whole || (r->fill != fill_lazy && 2 * fill_granules(r->fill) >= r->granules);
}

/// Effects: links the `k` (>= 1) blocks of size `bs` from `first` into a free list in address order.
/// Returns: its head.
free_block* thread_blocks(std::byte* first, std::size_t bs, std::size_t k) noexcept {
    for (std::size_t i = 0; i + 1 < k; ++i)
        reinterpret_cast<free_block*>(first + i * bs)->next =
            reinterpret_cast<free_block*>(first + (i + 1) * bs);
    reinterpret_cast<free_block*>(first + (k - 1) * bs)->next = nullptr;
    return reinterpret_cast<free_block*>(first);
}
} // namespace

// -------------------------------------------------------------------------------------------------
// Allocation slow path
// -------------------------------------------------------------------------------------------------

/// Effects: moves h's freed runs of class `c` (full runs the owner freed blocks into since they
/// filled) to the partial list, so that the run freed into first is taken first: it had the longest
/// time to gather frees.
void engine_heap::take_freed(thread_heap* h, unsigned c) noexcept {
    while (run* f = h->freed[c]) {
        h->freed[c] = f->next;
        collect(h, f);
        f->where = run_list::partial;
        push(h->partial[c], f);
    }
}

/// Effects: looks through up to 64 of h's full runs of class `c` for blocks other threads freed
/// since they filled (collecting them) and moves those runs to the partial list; the walk resumes
/// where the last one stopped, so a class with thousands of full runs pays a bounded walk per
/// call, and its `full_walk` bit stays set until one walk has gone round the whole list.
/// Returns: whether a partial run is now available.
bool engine_heap::walk_full(thread_heap* h, unsigned c) noexcept {
    constexpr unsigned walk_limit = 64;
    const std::uint64_t bit = std::uint64_t{1} << c;
    h->full_walk &= ~bit;
    // resume[c] is cleared when its run leaves the list elsewhere (local_free_slow, thread exit).
    run* f = h->resume[c] != nullptr ? h->resume[c] : h->full[c];
    const run* const start = f;
    bool wrapped = f == h->full[c];
    for (unsigned seen = 0; f != nullptr; ++seen) {
        if (seen == walk_limit) {
            h->resume[c] = f;
            h->full_walk |= bit; // the rest of the list waits for the next walk
            return h->partial[c] != nullptr;
        }
        run* next = f->next;
        collect(h, f);
        if (f->free != nullptr) {
            unlink(h->full[c], f);
            f->where = run_list::partial;
            push(h->partial[c], f);
        }
        if (next == nullptr && !wrapped) { // from the resume point to the end: go round once
            next = h->full[c];
            wrapped = true;
        }
        f = next == start ? nullptr : next;
    }
    h->resume[c] = nullptr;
    return h->partial[c] != nullptr;
}

/// Returns: a block of class `c` once `h->current[c]` is empty: a dry stash (while it is on) takes a
/// batch from the depot, else the parked run's free list; then carves more of the current run,
/// else takes a partial run, a full run the owner freed into, a full run other threads freed into,
/// an abandoned run, a new run (in that order). Every 64th call takes a maintenance step when one
/// is due, and a call after a purge thread's step or another thread's end_frame() asked walks h's
/// runs (walk_runs_if_asked).
void* engine_heap::small_slow(thread_heap* h, unsigned c) noexcept {
    // Now and then a maintenance step, so that a program of small blocks gives back what decayed,
    // and a note of which big classes allocated since the last one (release_idle_runs).
    if ((++h->slow_calls & 63) == 0) {
        note_busy_classes(h);
        maybe_decay(h);
    }
    walk_runs_if_asked(h);
    if (h->current[c] == &h->stash[c]) {
        // The depot first: its blocks pin other runs, the parked run's are this thread's own.
        if (h->stash_on)
            if (free_block* b = depot_take(h, c)) return b;
        if (free_block* b = refill_stash(h, c)) return b;
        // The stash ran dry and the parked run has no free block: the run is current again.
        h->current[c] = h->parked[c];
        h->parked[c] = nullptr;
    }
    for (;;) {
        run* r = h->current[c];
        if (r != &empty_run) {
            if (r->free == nullptr) collect(h, r);
            if (r->free == nullptr && r->carved < r->capacity) {
                // Thread the next never-used blocks, 2 KiB of them (one block above 2 KiB): a fresh run is
                // written a piece at a time, and each slow path touches at most one new page or so.
                const std::size_t bs = r->block_size;
                const std::size_t k =
                    std::min<std::size_t>(r->capacity - r->carved, std::max<std::size_t>(1, 2048 / bs));
                const std::size_t carved = std::size_t{r->carved} * bs;
                // A growing run faults in the granules these blocks reach; so does a lazy run whose
                // class grows on after the heap passed the populate threshold, from now on.
                if (r->fill != fill_whole &&
                    (r->fill != fill_lazy ||
                     thread_populates(h, c, 2 * carved >= std::size_t{r->granules} << granule_shift)))
                    fill_ahead(r, carved, carved + k * bs);
                std::byte* first = address_of(r) + carved;
                r->free = thread_blocks(first, bs, k);
                r->carved = static_cast<std::uint16_t>(r->carved + k);
                // The next carve of this run writes the block after these, often on a page this
                // thread has not touched for a long time: start its TLB walk and line fill now,
                // so that carve does not wait for them.
                if (r->carved < r->capacity) __builtin_prefetch(first + k * bs, 1);
            }
            if (free_block* b = r->free) {
                r->free = b->next;
                ++r->used;
                h->allocs[c].add(1);
                return b;
            }
            r->where = run_list::full;
            push(h->full[c], r);
            h->current[c] = &empty_run;
        }
        if (run* p = h->partial[c]) {
            if (p == h->spare[c]) h->spare[c] = nullptr;
            unlink(h->partial[c], p);
            p->where = run_list::none;
            h->current[c] = p;
            continue;
        }
        if (h->freed[c] != nullptr) {
            take_freed(h, c);
            continue;
        }
        bool freed = (h->full_walk & (std::uint64_t{1} << c)) != 0;
        if (h->pending[c].load(std::memory_order_relaxed) != 0 &&
            h->pending[c].exchange(0, std::memory_order_acquire) != 0)
            freed = true;
        if (freed && walk_full(h, c)) continue;
        if (run* a = adopt(h, c)) {
            h->current[c] = a;
            continue;
        }
        run* n = new_run(h, c);
        if (n == nullptr) return nullptr;
        h->current[c] = n;
    }
}

/// Effects: the stash of class `c` is current and ran dry: takes the parked run's whole free list
/// (the run counts those blocks as out, as it counts stashed blocks of its own that other threads
/// freed), so the stash stays current and the thread's next allocations are its own blocks.
/// Without the refill, a thread whose frees are mostly remote would switch between its stash and its
/// run on nearly every allocation of the class: each remote free parks the run again, each
/// allocation after it finds the stash empty. Taking the whole list costs no walk, and the stash then
/// holds more than its cap for a while, so remote frees go home until it drains: a thread that
/// serves itself from other threads' blocks would otherwise keep freeing them remotely, keep its
/// stash on, and never come back to its own runs.
/// Returns: a block popped from the refilled stash; nullptr when the parked run has no free block
/// or the stash is off (the run is current again then).
free_block* engine_heap::refill_stash(thread_heap* h, unsigned c) noexcept {
    run* st = &h->stash[c];
    run* p = h->parked[c];
    free_block* b = p->free; // the empty run's list is empty too
    if (b == nullptr || !h->stash_on) return nullptr;
    // The run's free list holds carved - used blocks.
    const auto n = static_cast<std::uint16_t>(p->carved - p->used);
    p->free = nullptr;
    p->used = p->carved;
    // n blocks arrive and one leaves at once.
    st->free = b->next;
    st->used = static_cast<std::uint16_t>(st->used - n + 1);
    h->allocs[c].add(1);
    return b;
}

// -------------------------------------------------------------------------------------------------
// Runs: collect, make, adopt, retire
// -------------------------------------------------------------------------------------------------

/// Effects: moves the blocks other threads freed into `r` onto its owner's free list. When that
/// frees the whole run, its carved blocks are threaded afresh in address order instead. The list
/// other threads build is in the reverse order of their frees, and each round of allocations and
/// remote frees cuts it where blocks were still out: left alone, a run that a producer fills and
/// consumers empty over and over hands its blocks out in random order after a few thousand
/// rounds, and then every pop of the free list misses the cache (no prefetcher follows it). In
/// address order the pops stream, and the list of a run that came back whole is not walked at all.
void engine_heap::collect(thread_heap*, run* r, collect_for use) noexcept {
    // A plain load first: the locked exchange only when there is something to take.
    if (r->thread_free.load(std::memory_order_relaxed) == 0) return;
    const std::uint64_t w = r->thread_free.exchange(0, std::memory_order_acquire);
    if (w == 0) return;
    free_block* list = remote_head(w);
    r->used = static_cast<std::uint16_t>(r->used - remote_count(w));
    r->purge_sig = 0; // the free list changed: the in-run purge walks it again
    if (r->used == 0 && use == collect_for::release) { // freed next: an empty, uncarved run
        r->free = nullptr;
        r->carved = 0;
        return;
    }
    if (r->used == 0) { // some block was out, so carved >= 1
        r->free = thread_blocks(address_of(r), r->block_size, r->carved);
        return;
    }
    // The walk also brings the blocks into this core's cache before the pops that follow.
    free_block* tail = list;
    while (tail->next != nullptr)
        tail = tail->next;
    tail->next = r->free;
    r->free = list;
}

/// Effects: the empty run `r` goes to h's cache, or back to the span pool when the cache is full.
void engine_heap::retire(thread_heap* h, run* r) noexcept {
    class_committed_[r->cls].fetch_sub(std::size_t{r->granules} << granule_shift, std::memory_order_relaxed);
    if (h->cache_count < options_.thread_cache_runs) {
        r->where = run_list::cache;
        push(h->cache, r);
        ++h->cache_count;
        return;
    }
    h->run_bytes.add(-(std::uint64_t{r->granules} << granule_shift));
    r->owner.store(nullptr, std::memory_order_relaxed);
    r->where = run_list::none;
    {
        lock_guard g(span_lock_);
        span_free(r, true);
    }
}

/// Effects: before a request of `n` granules of `kind` from the span pool: when the free span it
/// would take does not hold them in its resident part, h's idle empty runs go back to the pool
/// (release_idle_runs); when there were none, h's kept span goes at the kept_miss_limit-th such run
/// request since it was kept. So the request takes resident memory rather than fresh pages.
/// Requires: the calling thread owns h.
void engine_heap::prefer_resident(thread_heap* h, std::size_t n, span_kind kind) noexcept {
    {
        lock_guard g(span_lock_);
        const run* fit = span_fit(n, kind);
        if (fit != nullptr && dirty_granules(fit) >= n) return;
    }
    // Idle runs handed back first: when they made room, the request takes it and does not count.
    if (!release_idle_runs(h) && kind == span_kind::small &&
        h->kept.load(std::memory_order_relaxed) != nullptr && ++h->kept_misses >= kept_miss_limit)
        release_kept_of(h);
}

/// Effects: stamps each class above one granule that allocated since the last call with the
/// current slow-call count (its fast path counts allocations; its slow path may not run for long).
void engine_heap::note_busy_classes(thread_heap* h) noexcept {
    for (unsigned c = first_multi_granule_class; c < class_count; ++c) {
        const auto n = static_cast<std::uint32_t>(h->allocs[c].get());
        if (n != h->allocs_seen[c]) {
            h->allocs_seen[c] = n;
            h->class_seen[c] = h->slow_calls;
        }
    }
}

/// Effects: hands back to the span pool the mostly faulted-in empty runs of more than one granule
/// (classes above 4 KiB: 80 KiB to 1 MiB each) that h keeps for classes that allocated nothing in
/// h's last 1024 slow calls or more (the spare, an empty current run), and such runs in its cache
/// when none left it in that time. A class that is busy again makes a run anew. Lazy runs and runs
/// faulted in below half stay (most of their pages were never touched: reusing them would fault as
/// fresh memory does), and so do one-granule runs (cheap to keep). Requires: the calling thread owns h.
/// Returns: whether it handed any back.
bool engine_heap::release_idle_runs(thread_heap* h) noexcept {
    constexpr std::uint32_t window = 1024;
    run* idle = nullptr;
    for (unsigned c = first_multi_granule_class; c < class_count; ++c) {
        if (h->slow_calls - h->class_seen[c] <= window) continue;
        if (run* s = h->spare[c]; s != nullptr && mostly_filled(s)) {
            unlink(h->partial[c], s);
            h->spare[c] = nullptr;
            push(idle, s);
        }
        run* r = h->current[c];
        if (r != &empty_run && r != &h->stash[c] && r->used == 0 && mostly_filled(r)) {
            h->current[c] = &empty_run;
            push(idle, r);
        }
    }
    for (run* r = idle; r != nullptr; r = r->next)
        class_committed_[r->cls].fetch_sub(std::size_t{r->granules} << granule_shift,
                                           std::memory_order_relaxed);
    if (h->slow_calls - h->cache_seen > window) {
        for (run* r = h->cache; r != nullptr;) {
            run* next = r->next;
            if (r->granules > 1 && mostly_filled(r)) {
                unlink(h->cache, r);
                --h->cache_count;
                push(idle, r);
            }
            r = next;
        }
    }
    if (idle == nullptr) return false;
    lock_guard g(span_lock_);
    while (run* r = idle) {
        idle = r->next;
        h->run_bytes.add(-(std::uint64_t{r->granules} << granule_shift));
        r->owner.store(nullptr, std::memory_order_relaxed);
        r->where = run_list::none;
        span_free(r, true);
    }
    return true;
}

/// Effects: faults in the granules of run `r` that its carve of bytes [from, to) reaches and its
/// fill does not cover yet (a lazy run's from the first page at or above `from`: its carves until
/// now faulted nothing in ahead), with MADV_POPULATE_WRITE, else a write per page; the first fill
/// of a run whose rest is resident (recycled memory that has not decayed) only looks. Records the
/// fill (growing, or whole once it reaches the end). Requires: no block of `r` at or above `from`
/// is out.
void engine_heap::fill_ahead(run* r, std::size_t from, std::size_t to) noexcept {
    const std::size_t need = (to + granule - 1) >> granule_shift;
    const std::size_t have = r->fill == fill_lazy ? 0 : fill_granules(r->fill);
    if (need <= have) return; // the carve stays within the granules faulted in already
    const std::size_t page = virtual_memory::page_size();
    const std::size_t lo = r->fill == fill_lazy ? (from + page - 1) & ~(page - 1) : have << granule_shift;
    const std::size_t bytes = std::size_t{r->granules} << granule_shift;
    r->fill = need == r->granules ? fill_whole : fill_growing(need);
    if (lo >= need << granule_shift) return; // the carve ends on the granule's last page
    if (have == 0) {
        // One look at the rest of the run costs less than populating pages that are there, here
        // and at its later carves.
        unsigned char resident[256];
        const std::size_t pages = (bytes - lo) / page;
        if (pages <= sizeof resident && ::mincore(address_of(r) + lo, bytes - lo, resident) == 0 &&
            std::all_of(resident, resident + pages, [](unsigned char v) { return (v & 1u) != 0; })) {
            r->fill = fill_whole;
            return;
        }
    }
    std::byte* at = address_of(r) + lo;
    const std::size_t n = (need << granule_shift) - lo; // at most two granules: one block above 2 KiB
#ifdef MADV_POPULATE_WRITE
    if (::madvise(at, n, MADV_POPULATE_WRITE) != 0) // EINVAL before Linux 5.14
#endif
    {
        // By hand: a zero byte per page. Every page is above the carved blocks (below them live
        // blocks and remote frees' links may start on a page boundary, and a write would race with
        // those frees), and no block on it is out.
        for (std::size_t off = 0; off < n; off += page)
            *reinterpret_cast<volatile char*>(at + off) = 0;
    }
}

bool engine_heap::thread_populates(const thread_heap* h, unsigned c, bool half_carved) const noexcept {
    if (populate_granules_ == 0) return true; // every run, first runs too: no faults from the start
    return (h->run_bytes.get() >> granule_shift) >= populate_granules_ &&
           (half_carved || h->full[c] != nullptr || h->freed[c] != nullptr || h->partial[c] != nullptr);
}

/// Returns: a fresh run of class `c` owned by `h`: from h's cache, else from the span pool; nullptr
/// when the reservation is full.
engine_heap::run* engine_heap::new_run(thread_heap* h, unsigned c) noexcept {
    const std::uint32_t n = class_granules(c);
    run* r = nullptr;
    for (run* p = h->cache; p != nullptr; p = p->next) {
        if (p->granules == n) {
            unlink(h->cache, p);
            --h->cache_count;
            h->cache_seen = h->slow_calls;
            r = p;
            break;
        }
    }
    bool fresh = false;
    if (r == nullptr) {
        prefer_resident(h, n, span_kind::small);
        {
            lock_guard g(span_lock_);
            r = span_alloc(n, span_kind::small, &fresh);
        }
        if (r == nullptr) return nullptr;
        h->run_bytes.add(std::uint64_t{n} << granule_shift);
        maybe_decay();
    }
    if (fresh) r->fill = fill_lazy;
    // Fault a run in when it is recycled memory, partly touched by its last use, or when this
    // thread's runs are past `populate_after_bytes` and the class already has another run:
    // otherwise, as runs move between classes and classes reach new highs, carving keeps reaching
    // untouched pages in the middle of steady churn. Its carves do it, a granule at a time, so that
    // no allocation pays for a whole run (1 MiB for 64 KiB blocks). Below the threshold fresh runs
    // stay lazy, so a small program stays small, and so does each of a program's many light threads
    // (the threshold is per thread for that reason). A class's first run stays lazy until half of
    // it is carved: a rare class of a big program (a few blocks) would otherwise hold a whole run
    // resident.
    if (r->fill == fill_lazy && (!fresh || thread_populates(h, c, false))) r->fill = fill_growing(0);
    const std::size_t bs = class_size(c);
    r->free = nullptr;
    r->used = 0;
    r->carved = 0;
    r->capacity = static_cast<std::uint16_t>((std::size_t{n} << granule_shift) / bs);
    r->block_size = static_cast<std::uint32_t>(bs);
    r->cls = static_cast<std::uint8_t>(c);
    r->walk_round = 0; // the byte a free span's `dirty` held: no in-run purge round has seen it
    r->where = run_list::none;
    r->thread_free.store(0, std::memory_order_relaxed);
    r->owner.store(h, std::memory_order_relaxed);
    set_tag(r, h);
    class_committed_[c].fetch_add(std::size_t{n} << granule_shift, std::memory_order_relaxed);
    return r;
}

/// Returns: an abandoned run of class `c`, now owned by `h`; nullptr when there is none.
engine_heap::run* engine_heap::adopt(thread_heap* h, unsigned c) noexcept {
    if (abandoned_count_[c].load(std::memory_order_relaxed) == 0) return nullptr;
    run* r = nullptr;
    {
        lock_guard g(abandon_lock_);
        r = abandoned_[c];
        if (r == nullptr) return nullptr;
        abandoned_[c] = r->next;
        abandoned_count_[c].fetch_sub(1, std::memory_order_relaxed);
    }
    r->next = r->prev = nullptr;
    r->where = run_list::none;
    // Store owner, then look at thread_free; a remote free pushes to thread_free, then looks at
    // owner. Both pairs sequentially consistent, or each side could miss the other's write (a store
    // passing a later load, as x86 allows) and the block would wait unseen on a full run.
    r->owner.store(h, std::memory_order_seq_cst);
    set_tag(r, h);
    h->run_bytes.add(std::uint64_t{r->granules} << granule_shift);
    if (r->thread_free.load(std::memory_order_seq_cst) != 0) collect(h, r);
    return r;
}

// -------------------------------------------------------------------------------------------------
// Frees
// -------------------------------------------------------------------------------------------------

/// Effects: the owner's free emptied `d`, or hit a full run: marks a full run and moves it to the
/// front of the full list (take_freed relists the marked front when the class runs dry, so a run
/// gathers frees for a while before it is allocated from again); relists an empty one, keeps one
/// empty run per class as a spare and retires the others (relist). Then, when a run other than the
/// current (or parked) one emptied, a maintenance step when one is due (maybe_decay), which walks
/// h's runs; else the walk a purge thread or an end_frame() asked for (walk_runs_if_asked): a thread
/// whose allocations seldom refill still walks its runs.
void engine_heap::local_free_slow(thread_heap* h, run* d) noexcept {
    const bool emptied = d->used == 0;
    // A loop whose every free empties the run it allocates from: nothing to relist, no clock read.
    if (emptied && (d == h->current[d->cls] || d == h->parked[d->cls])) return walk_runs_if_asked(h);
    relist(h, d);
    // After the relist: a walk may relist runs it finds empty, `d` among them. Another run emptied:
    // a program that shrinks (its frees empty runs, its allocations pop what it freed and never
    // refill) takes its maintenance steps here, its runs walked too (which answers an ask), but not
    // a thread giving its runs up (abandon's flush_stash).
    if (emptied && !h->giving_up) maybe_decay(h);
    walk_runs_if_asked(h);
}

/// Effects: local_free_slow's work on h's run `d` once a free marked it full or emptied it, or a
/// collect emptied it (purge_run_blocks, for blocks it handed the purge thread): a full run goes to
/// the freed list, an empty one becomes the class's spare or is retired. Requires: the calling
/// thread owns h.
void engine_heap::relist(thread_heap* h, run* d) noexcept {
    const unsigned c = d->cls;
    if (d->where == run_list::full) {
        if (h->resume[c] == d) h->resume[c] = nullptr;
        unlink(h->full[c], d);
        if (d->used != 0) {
            d->where = run_list::freed;
            push(h->freed[c], d);
            return;
        }
        d->where = run_list::partial;
        push(h->partial[c], d);
    } else if (d->where == run_list::freed) {
        unlink(h->freed[c], d);
        d->where = run_list::partial;
        push(h->partial[c], d);
    }
    if (d->used == 0 && h->current[c] != d && h->parked[c] != d) {
        // One empty run per class stays parked in the partial list, carved and ready: a class that
        // oscillates around a run boundary (the big classes' 16-block runs do) neither gives the
        // run up nor re-threads it on every cycle.
        if (h->spare[c] == nullptr || h->spare[c] == d) {
            h->spare[c] = d;
            return;
        }
        if (d->where == run_list::partial) unlink(h->partial[c], d);
        d->where = run_list::none;
        retire(h, d);
    }
}

/// Effects: a free that is not the fast path's: a small block goes onto the freeing thread's stash
/// while the stash is on and has room, the thread's own blocks too (their slot's id then matches no
/// tag, so they come here). A thread that frees a mix of its own blocks and other threads' would
/// otherwise take one path or the other at random, and the mispredicted branch between them costs
/// more than either path: a worker churning blocks another thread made ran 1.3x slower. With the
/// stash taking both, the class's frees and allocations go through one LIFO list, as in a thread
/// cache of tcmalloc's kind. Otherwise an own block goes to its run, another thread's onto its
/// run's thread_free list (one CAS); medium and large blocks go to their tiers.
void engine_heap::deallocate_slow(void* p, std::uint32_t tag) noexcept {
    if (tag_is_small(tag)) {
        // A small block. It is still counted in its run's `used`, so the run cannot change class
        // under us; the tag gives the class, and the run's descriptor is read only when the block
        // goes home. Every path from here is a tail call or a leaf: no register is saved.
        const tls_slot& s = tls[slot_];
        if (STRATA_UNLIKELY(s.epoch != epoch_)) return free_without_cache(p, tag);
        thread_heap* h = s.heap;
        // Whether the block is h's own is counted, not branched on (free_home branches).
        if (try_stash(h, p, tag, tag_owner(tag) != h->id)) return;
        return free_home(h, p, tag);
    }
    run* d = head_of(p);
    switch (d->kind) {
    case span_kind::medium: medium_deallocate(p, d); return;
    case span_kind::large: large_deallocate(p, d); return;
    default: return; // a free span or a thread_heap record: not a block
    }
}

/// Effects: the free of the small block `p` (tag `tag`) by a thread with no cache for this heap. At
/// its cacheless_free_limit-th such free the thread gets a cache, so that it counts its frees in its
/// own record (a locked add on a shared counter per free made a thread that only frees other
/// threads' blocks, a consumer, half again slower), and the block goes home. Before that, past the
/// thread's exit, or when no record can be made, the free is counted in a shared atomic and the
/// block goes onto its run's thread_free list: a thread that frees a block or two as it ends (after
/// its thread-local destructors ran, where nothing would hand a new cache back) makes no record.
/// Frees are counted by the thread that frees, so statistics are exact once threads are quiet (the
/// owner only learns of a remote block when it collects).
void engine_heap::free_without_cache(void* p, std::uint32_t tag) noexcept {
    constexpr std::uint32_t cacheless_free_limit = 16;
    if (++cacheless_frees >= cacheless_free_limit)
        if (thread_heap* h = make_thread_heap()) return free_home(h, p, tag); // its stash starts off
    const auto cls = static_cast<unsigned>(tag_class(tag));
    remote_frees_[cls].fetch_add(1, std::memory_order_relaxed);
    push_thread_free(static_cast<free_block*>(p), head_of(p), cls);
}

/// Effects: the small block `p` that the calling thread (cache h) did not stash goes home: to its
/// run's free list when the run is h's, else onto its run's thread_free list; unless a stash choice
/// was due (choose_stash) and the stash, on after it, takes the block.
void engine_heap::free_home(thread_heap* h, void* p, std::uint32_t tag) noexcept {
    const bool own = tag_owner(tag) == h->id;
    if (stash_choice_due(h)) {
        choose_stash(h);
        if (try_stash(h, p, tag, !own)) return;
    }
    if (own) {
        ++h->window_frees[0];
        return free_own(h, p, tag);
    }
    const auto cls = static_cast<unsigned>(tag_class(tag));
    h->frees[cls].add(1);
    ++h->window_frees[1];
    push_thread_free(static_cast<free_block*>(p), head_of(p), cls);
}

/// Effects: when a choice is due (stash_choice_due), turns h's stash on when remote frees were at
/// least half of its frees since the last choice, and off when they were under 40%. A program whose
/// threads free each other's blocks at random (a server) gains from reusing them. One whose threads
/// mostly free their own would, with the stash on, carry more and more blocks of other threads' runs
/// and free them the slower way: that alone raises its share of remote frees, hence the margin. A
/// thread that stops freeing other threads' blocks turns its stash off at its own_window-th own free.
void engine_heap::choose_stash(thread_heap* h) noexcept {
    std::uint64_t frees = 0;
    for (unsigned c = 0; c < class_count; ++c)
        frees += h->frees[c].get();
    const std::uint64_t window = frees - h->frees_mark;
    const std::uint64_t remote = h->window_frees[1];
    // With stash_bytes 0 nothing can be stashed: on, the stash would only send frees the long way.
    h->stash_on =
        options_.stash_bytes != 0 && (h->stash_on ? 5 * remote >= 2 * window : 2 * remote >= window);
    h->frees_mark = frees;
    h->window_frees[0] = h->window_frees[1] = 0;
    // While the stash is on, the slot's id matches no tag: every free of the thread comes here.
    tls[slot_].id = h->stash_on ? h->id | stash_flag : h->id; // h is the calling thread's cache
}

/// Effects: pushes the free block `b` of class `cls` onto its run `d`'s thread_free list, for the
/// run's owner (or its adopter) to collect.
void engine_heap::push_thread_free(free_block* b, run* d, unsigned cls) noexcept {
    // The class comes from the caller, read before the block is published: once it is on
    // thread_free the owner may collect it and reuse the run for another class.
    const std::uint64_t off = reinterpret_cast<std::uintptr_t>(b) - data_;
    std::uint64_t old = d->thread_free.load(std::memory_order_relaxed);
    do {
        b->next = remote_head(old);
        // One more block on the list (fewer than 2^16: the run has fewer).
    } while (!d->thread_free.compare_exchange_weak(
        old, ((old >> remote_count_shift) + 1) << remote_count_shift | off, std::memory_order_seq_cst,
        std::memory_order_relaxed));
    if (old == 0) {
        // The first block on an empty list tells the owner to look at its full runs; later
        // ones ride along (the owner takes the whole list at once). seq_cst pairs with adopt()
        // (a lock cmpxchg and a plain load on x86 either way).
        if (thread_heap* o = d->owner.load(std::memory_order_seq_cst))
            o->pending[cls].store(1, std::memory_order_release);
    }
}

/// Effects: hands every block on h's stash back to its run (thread exit, flush_thread_cache): a
/// block of h's own run straight onto the run's free list, another thread's onto its run's
/// thread_free list. Requires: the calling thread owns h.
void engine_heap::flush_stash(thread_heap* h) noexcept {
    for (unsigned c = 0; c < class_count; ++c) {
        run* st = &h->stash[c];
        if (h->current[c] == st) {
            h->current[c] = h->parked[c];
            h->parked[c] = nullptr;
        }
        for (free_block* b = st->free; b != nullptr;) {
            free_block* next = b->next;
            run* d = head_of(b);
            const std::size_t g = (reinterpret_cast<std::uintptr_t>(b) - data_) >> granule_shift;
            if (tag_owner(tags_[g].load(std::memory_order_relaxed)) == h->id)
                return_to_run(h, d, b); // counted as freed when it was stashed
            else
                push_thread_free(b, d, c);
            b = next;
        }
        st->free = nullptr;
        st->used = 0;
    }
}

/// Effects: collects the abandoned runs of every class and frees those left empty.
void engine_heap::sweep_abandoned() noexcept {
    for (unsigned c = 0; c < class_count; ++c) {
        if (abandoned_count_[c].load(std::memory_order_relaxed) == 0) continue;
        run* empty = nullptr;
        {
            // Under the lock adopt() takes its runs with: no thread owns these. A remote free that
            // lands after the collect stays on thread_free and keeps `used` above 0, so a run
            // found empty has no live block left for anyone to free.
            lock_guard g(abandon_lock_);
            for (run** link = &abandoned_[c]; *link != nullptr;) {
                run* r = *link;
                collect(nullptr, r, collect_for::release);
                if (r->used != 0) {
                    link = &r->next;
                    continue;
                }
                *link = r->next;
                abandoned_count_[c].fetch_sub(1, std::memory_order_relaxed);
                r->next = empty;
                empty = r;
            }
        }
        while (empty != nullptr) {
            run* r = empty;
            empty = r->next;
            r->next = r->prev = nullptr;
            class_committed_[c].fetch_sub(std::size_t{r->granules} << granule_shift,
                                          std::memory_order_relaxed);
            lock_guard g(span_lock_);
            span_free(r, true);
        }
    }
}

} // namespace strata
