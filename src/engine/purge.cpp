// Purging: giving resident pages of free memory back to the OS (MADV_DONTNEED; the range stays
// mapped and reads as zero). Free spans and free medium blocks of purge_medium_bytes or more
// stay resident while they may be reused, and decay: maintenance steps purge what has been free for
// decay_ms, oldest first, and whatever exceeds the caps (retain_bytes, medium_retain_bytes).
//
// Exports: engine_heap::now_ms, now_tick, purge_medium, purge_free_medium, purge_spans, span_return,
// purge_for_big_call, quiet_big_call, oldest_dirty_spans, purge_run_blocks, hand_off, purge_handed,
// decay_step, maybe_decay, walk_runs_asked, end_frame, start_purge_thread, stop_purge_thread,
// purge_thread_main, purge_stats, trim.
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <utility>

#include "strata/core/poison.hpp"
#include "strata/engine/detail/purge_batch.hpp"

#include "engine_internal.hpp"

namespace strata {

using namespace engine_detail;

// A maintenance step runs from end_frame(), from the purge thread, or from a slow path (medium and
// large frees, new runs, frees that empty a run, every 64th small refill) once step_interval_ has
// passed since the last (a quarter of that, in wall time, after a slow path's step that spent its
// budget, in a program that never calls end_frame()); in a program that calls end_frame(), only
// once decay_ms has passed since its last. It purges,
// oldest first:
//   - free spans: each dirty free span carries the tick it was freed at (a merge keeps the newer)
//     and its clean tail, the granules at its end purged since: a purge takes 1 MiB pieces off
//     the end of the dirty part, so a step stops close to its deadline, and a request served
//     from a span takes its front, the resident part.
//   - free medium blocks of purge_medium_bytes or more: TLSF never reads a free block's interior,
//     only its header and the two list links at the start of its payload, which stay resident. A
//     mark after the links (a tag, the block's size, the tick a step first saw it free, how far
//     from its first whole page resident pages reach and how many bytes they hold, from mincore
//     when it is first seen: an arena's never-touched tail counts nothing) lets later steps age
//     it and purge it in pieces from its end. medium_handed_out clears the tag, so a mark never
//     outlives an allocation of its block; a block merged since has another size, and counts as
//     first seen now.
// The caps are kept at the call that passes them (a free), whatever the age: not in a steady
// workload's hot path, where memory is reused before it decays. Every pass gathers its ranges in a
// purge_batch (one system call for many ranges). A medium pass flushes it before its lock goes.
// A span pass of a step, a large call or trim() lets span_lock_ go while the batch's pages are
// dropped (madvise of 1 MiB takes about 75 us here; a large call may purge a hundred MiB), with
// the batch's spans out of the bins: other threads take and free spans meanwhile. Only the cap
// pass of a span free that its caller made within the lock stays in it, for at most two pieces.
namespace {
constexpr std::size_t mark_words = 5; // tag, size, first seen (tick), resident extent, resident bytes
constexpr std::size_t purge_keep = purge_mark_offset + mark_words * sizeof(std::uint64_t);
constexpr std::uint64_t purge_magic = 0x9E3779B97F4A7C14u;
constexpr std::size_t piece_bytes = purge_batch::max_bytes; // one flush of a budgeted step
constexpr std::size_t new_marks = 64; // free medium blocks a walk marks (a mincore each), at most
constexpr std::size_t due_picks = 4;  // blocks one walk picks to purge

std::uint64_t monotonic_ms() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000 + static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
}

bool past(std::uint64_t deadline_ns) noexcept {
    return deadline_ns != 0 && purge_batch::now_ns() >= deadline_ns;
}

/// The pages a purge of a free medium block may give back, [lo, hi): the whole pages past the mark.
struct purge_range {
    std::uintptr_t lo = 0;
    std::uintptr_t hi = 0;
};
purge_range purge_range_of(const void* p, std::size_t usable) noexcept {
    const std::uintptr_t page = virtual_memory::page_size();
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t lo = (at + purge_keep + page - 1) & ~(page - 1);
    const std::uintptr_t hi = (at + usable) & ~(page - 1);
    return {lo, hi > lo ? hi : lo};
}

/// What mincore says of a range: resident bytes, and bytes from its start to the end of its last
/// resident page.
struct residency {
    std::size_t bytes = 0;
    std::size_t extent = 0;
};

/// Returns: the residency of [r.lo, r.hi), by mincore in 2 MiB steps (a stack buffer: this runs
/// inside malloc). A kernel that refuses counts every page.
residency resident_in(purge_range r) noexcept {
    const std::size_t page = virtual_memory::page_size();
    unsigned char v[512];
    residency out;
    for (std::uintptr_t at = r.lo; at < r.hi;) {
        const std::size_t n = std::min<std::size_t>((r.hi - at) / page, sizeof v);
        if (::mincore(reinterpret_cast<void*>(at), n * page, v) != 0) return {r.hi - r.lo, r.hi - r.lo};
        for (std::size_t i = 0; i < n; ++i) {
            if ((v[i] & 1u) != 0) {
                out.bytes += page;
                out.extent = at + (i + 1) * page - r.lo;
            }
        }
        at += n * page;
    }
    return out;
}

} // namespace

/// Returns: the clock's milliseconds (options_.clock_ms, else CLOCK_MONOTONIC_COARSE).
std::uint64_t engine_heap::now_ms() const noexcept {
    return options_.clock_ms != nullptr ? options_.clock_ms() : monotonic_ms();
}

/// Returns: milliseconds since construction (wraps after 49 days; ages are taken as differences).
std::uint32_t engine_heap::now_tick() const noexcept {
    return static_cast<std::uint32_t>(now_ms() - clock_origin_);
}

// -------------------------------------------------------------------------------------------------
// Medium blocks
// -------------------------------------------------------------------------------------------------

/// Effects: purges the whole pages of the free medium block `p` past its mark.
void engine_heap::purge_medium(void* p, std::size_t usable) noexcept {
    const purge_range r = purge_range_of(p, usable);
    purge_batch::purge_now(r.lo, r.hi);
}

// Requires: medium_lock_ held, and held again at return; with `let_go`, let go while the OS drops a
// block's pages, the block taken out of its arena meanwhile (tlsf::take_out: no request takes it,
// no free merges with it, and its arena counts it live). Marks every free block of
// purge_medium_bytes or more, then purges up to due_picks blocks a walk, one at a time, the next
// ones found by a fresh walk (the arenas change while the lock is let go): `all`: every one;
// `decay`: those seen free for decay_ms, in pieces until the deadline; then, in any pass, blocks
// until the resident total is within medium_cap(), the one seen free longest first.
// Returns: bytes purged.
std::size_t engine_heap::purge_free_medium(purge_pass pass, std::uint32_t now, std::uint64_t deadline_ns,
                                           bool let_go) noexcept {
    const std::size_t page = virtual_memory::page_size();
    std::size_t purged = 0;
    purge_batch batch(options_.batch_purges, deadline_ns); // flushed before the lock goes
    // A block to purge: its payload, arena and range, and how long it has been seen free.
    struct pick {
        void* p = nullptr;
        run* arena = nullptr;
        purge_range r{};
        std::uint32_t age = 0;
        bool was_empty = false; // its arena held no live block when the block was taken out
    };
    bool decaying = pass != purge_pass::cap;
    // `all` purges what was resident at its first walk, not what other threads free while the lock
    // is let go.
    std::size_t all_left = SIZE_MAX;
    for (;;) {
        // A walk: each mark brought up to date (a new or merged block gets mincore's count, at
        // most new_marks of them a walk: a heap that just freed hundreds of big blocks would hold
        // the lock for a mincore each; the others count whole until a later walk marks them), the
        // resident total, the first block due and the one seen free longest.
        medium_dirty_ = 0;
        std::size_t resident = 0;
        std::size_t marks_left = pass == purge_pass::all ? SIZE_MAX : new_marks;
        pick due[due_picks], oldest;
        std::size_t dues = 0;
        for (unsigned a = 0; a < arena_count_; ++a)
            tlsf_of(arenas_[a], data_, runs_)
                ->for_each_free_block(options_.purge_medium_bytes, [&](void* q, std::size_t bytes) noexcept {
                    const purge_range r = purge_range_of(q, bytes);
                    if (r.hi == r.lo) return; // no whole page past the mark
                    auto* mark =
                        reinterpret_cast<std::uint64_t*>(static_cast<std::byte*>(q) + purge_mark_offset);
                    unpoison(mark, mark_words * sizeof(std::uint64_t)); // tlsf poisons free payloads
                    if (mark[0] != purge_magic || mark[1] != bytes) {   // new, or merged since
                        if (marks_left == 0) {
                            resident += r.hi - r.lo;
                            poison(mark, mark_words * sizeof(std::uint64_t));
                            return;
                        }
                        --marks_left;
                        const residency now_in = resident_in(r);
                        mark[0] = purge_magic;
                        mark[1] = bytes;
                        mark[2] = now;
                        mark[3] = now_in.extent;
                        mark[4] = now_in.bytes;
                    }
                    mark[3] = std::min<std::uint64_t>(mark[3], r.hi - r.lo) & ~std::uint64_t{page - 1};
                    mark[4] = std::min(mark[4], mark[3]);
                    resident += mark[4];
                    const std::uint32_t age = tick_age(now, static_cast<std::uint32_t>(mark[2]));
                    if (mark[4] != 0) {
                        const pick here{q, arenas_[a], r, age};
                        if (decaying && dues < due_picks &&
                            (pass == purge_pass::all || age >= options_.decay_ms))
                            due[dues++] = here;
                        if (oldest.p == nullptr || age > oldest.age) oldest = here;
                    }
                    poison(mark, mark_words * sizeof(std::uint64_t));
                });
        medium_resident_ = resident;
        if (pass == purge_pass::all && all_left == SIZE_MAX) all_left = resident;
        const std::size_t cap = medium_cap();
        const bool over = dues == 0 && resident > cap && oldest.p != nullptr;
        if (over) {
            due[0] = oldest;
            dues = 1;
        }
        if (dues == 0) break;
        // The picks go out of reach together (one walk for all of them), then one at a time each
        // loses up to a piece (with a deadline, decaying), else up to the excess, off its resident
        // end, and goes back; past the deadline the rest go back as they were.
        if (let_go)
            for (std::size_t k = 0; k < dues; ++k) {
                tlsf* t = tlsf_of(due[k].arena, data_, runs_);
                due[k].was_empty = t->live_allocations() == 0;
                t->take_out(due[k].p);
            }
        const std::size_t limit = over ? resident - cap : deadline_ns != 0 ? piece_bytes : SIZE_MAX;
        for (std::size_t k = 0; k < dues; ++k) {
            const pick& at = due[k];
            tlsf* t = tlsf_of(at.arena, data_, runs_);
            if (decaying || over) {
                auto* mark =
                    reinterpret_cast<std::uint64_t*>(static_cast<std::byte*>(at.p) + purge_mark_offset);
                unpoison(mark, mark_words * sizeof(std::uint64_t));
                const std::uintptr_t top = at.r.lo + mark[3];                   // both on page boundaries
                const std::size_t take = std::min<std::size_t>(mark[3], limit); // then up to whole pages
                const std::uintptr_t lo = top - ((take + page - 1) & ~(page - 1));
                const std::size_t held = std::min<std::size_t>(resident_in({lo, top}).bytes, mark[4]);
                const bool full = batch.add(lo, top);
                const std::uint64_t before = mark[4];
                mark[3] = lo - at.r.lo;
                mark[4] = mark[3] == 0 ? 0 : before - held;
                const std::size_t gone = before - mark[4];
                poison(mark, mark_words * sizeof(std::uint64_t));
                // Another thread's walk while the lock was let go did not count a block out of reach.
                medium_resident_ -= std::min(medium_resident_, gone);
                purged += held;
                if (let_go)
                    flush_let_go(batch, medium_lock_, medium_purges_);
                else if (full)
                    batch.flush();
                all_left -= std::min(all_left, gone);
                if (!over && (past(deadline_ns) || all_left == 0)) decaying = false; // the caps still hold
            }
            if (let_go) {
                t->put_back(at.p);
                if (!at.was_empty && t->live_allocations() == 0) { // its last free came meanwhile
                    t->flush();
                    at.arena->freed_at = now_tick();
                }
            }
        }
    }
    batch.flush();
    purged_bytes_.fetch_add(purged, std::memory_order_relaxed);
    return purged;
}

// -------------------------------------------------------------------------------------------------
// Spans
// -------------------------------------------------------------------------------------------------

/// Effects: puts in `out` the (up to) `max` dirty free spans freed longest ago, oldest first, by one
/// walk of the bins. Returns: how many. Requires: span_lock_ held.
std::size_t engine_heap::oldest_dirty_spans(run** out, std::size_t max) const noexcept {
    // A heap ordered by `older`, so the newest of those kept is at its front: a span older than it
    // takes its place.
    const auto older = [](const run* a, const run* b) {
        return static_cast<std::int32_t>(a->freed_at - b->freed_at) < 0;
    };
    std::size_t k = 0;
    for (std::uint64_t m = bin_map_; m != 0; m &= m - 1)
        for (run* r = bins_[std::countr_zero(m)]; r != nullptr && r->dirty; r = r->next) {
            if (k < max) {
                out[k++] = r;
                std::push_heap(out, out + k, older);
            } else if (older(r, out[0])) {
                std::pop_heap(out, out + k, older);
                out[k - 1] = r;
                std::push_heap(out, out + k, older);
            }
        }
    std::sort_heap(out, out + k, older);
    return k;
}

/// Returns: the dirty free span freed longest ago, or nullptr. One walk of the bins lists the oldest
/// 64, and the calls after it take them in turn until the list goes stale (bin_insert, bin_remove):
/// a shrunk heap holds thousands of dirty spans, whose walk alone would use up a 200 µs step.
/// Requires: span_lock_ held.
run* engine_heap::oldest_dirty_span() noexcept {
    for (;;) {
        if (!oldest_valid_) {
            oldest_count_ = static_cast<std::uint32_t>(oldest_dirty_spans(oldest_, oldest_max));
            oldest_next_ = 0;
            oldest_newest_ = oldest_count_ != 0 ? oldest_[oldest_count_ - 1]->freed_at : 0;
            oldest_whole_ = oldest_count_ < oldest_max;
            oldest_valid_ = true;
        }
        while (oldest_next_ < oldest_count_ && !oldest_[oldest_next_]->dirty)
            ++oldest_next_;
        if (oldest_next_ < oldest_count_) return oldest_[oldest_next_];
        if (oldest_whole_) return nullptr;
        oldest_valid_ = false; // used up: the next 64
    }
}

// Requires: span_lock_ held, and held again at return; with `let_go`, let go while the OS drops
// each batch's pages: the spans whose pieces the batch holds are out of the bins meanwhile (kind
// purging), so no request takes them and no free merges with them, and other threads' span calls
// wait for no madvise. Purges dirty free spans, oldest first, each from the end of its dirty part:
// `decay`: those freed decay_ms ago or more; `cap`: until the dirty ones are a batch below
// span_cap(); `all`: every one. With a deadline, in pieces of one batch, until it passes. At most
// `max_granules`. Returns: bytes purged.
std::size_t engine_heap::purge_spans(purge_pass pass, std::uint32_t now, std::uint64_t deadline_ns,
                                     std::size_t max_granules, bool let_go) noexcept {
    std::size_t purged = 0;
    purge_batch batch(options_.batch_purges, deadline_ns);
    run* out[purge_batch::max_ranges]; // the spans whose pieces wait in the batch, last one last
    std::size_t k = 0;
    // Drops the batch's pages and files its spans back as free ones, all but the last when
    // `keep_last` (the next piece comes from it).
    const auto flush = [&](bool keep_last) {
        if (k == 0) return;
        if (let_go && !batch.empty())
            flush_let_go(batch, span_lock_, span_purges_);
        else
            batch.flush();
        run* const last = out[k - 1];
        for (std::size_t i = 0; i + 1 < k; ++i)
            span_return(out[i]);
        k = 0;
        if (keep_last)
            out[k++] = last;
        else
            span_return(last);
    };
    // Adds the last min(c, its dirty part) granules of the dirty part of `r` (a binned free span,
    // or the last one out) to the batch; they join its clean tail. Returns: granules added; 0 when
    // it flushed first (a flush that add() would make is made here, where the lock can go) and `r`
    // was binned: other threads may have taken it meanwhile, so the caller looks again.
    const auto take = [&](run* r, std::size_t c) -> std::size_t {
        const bool taken = k != 0 && out[k - 1] == r;
        const std::size_t d = dirty_granules(r);
        c = std::min(c, d);
        if ((!taken && k == purge_batch::max_ranges) ||
            (!batch.empty() && batch.bytes() + (c << granule_shift) > purge_batch::max_bytes)) {
            flush(taken);
            if (!taken && let_go) return 0;
        }
        if (!taken) {
            bin_remove(r);
            free_granules_ += r->granules; // free still, only out of reach
            r->kind = span_kind::purging;
            out[k++] = r;
        }
        const auto lo = reinterpret_cast<std::uintptr_t>(address_of(r + (d - c)));
        const bool full = batch.add(lo, lo + (c << granule_shift));
        r->fill = fill_lazy;
        r->clean_tail += c;
        if (r->clean_tail == r->granules) {
            r->dirty = false;
            r->clean_tail = 0;
        }
        purged += c << granule_shift;
        purged_bytes_.fetch_add(c << granule_shift, std::memory_order_relaxed);
        if (full) flush(r->dirty);
        return c;
    };
    // The span to purge next: the last one out while it has a dirty part, else the oldest binned.
    const auto next = [&]() { return k != 0 && out[k - 1]->dirty ? out[k - 1] : oldest_dirty_span(); };
    if (pass == purge_pass::cap) {
        // Down to one batch below the cap, where one call takes a batch: a heap that sits at its
        // cap would otherwise purge a span at nearly every free. One call per range makes the
        // excess alone cheaper (no stall of many calls in one free).
        const std::size_t cap = span_cap();
        const std::size_t low = batch.range_limit() > 1 ? cap - std::min(cap, purge_piece_granules) : cap;
        std::size_t excess = std::min(max_granules, dirty_free_ > low ? dirty_free_ - low : 0);
        for (run* r; excess != 0 && (r = next()) != nullptr;) {
            excess -= take(r, excess);
            if (past(deadline_ns)) break;
        }
    } else {
        // Oldest first: the first one not due yet ends the pass, every other is newer. `all` takes
        // what was dirty when it began, not what other threads free while the lock is let go.
        if (pass == purge_pass::all) max_granules = std::min(max_granules, dirty_free_);
        for (run* r; max_granules != 0 && (r = next()) != nullptr;) {
            if (pass != purge_pass::all ? tick_age(now, r->freed_at) < options_.decay_ms
                                        : static_cast<std::int32_t>(r->freed_at - now) > 0)
                break;
            max_granules -=
                take(r, std::min(max_granules, deadline_ns != 0 ? purge_piece_granules : r->granules));
            if (past(deadline_ns)) break;
        }
    }
    flush(false);
    return purged;
}

/// Effects: files the span `r`, out of the bins for a purge, back as a free span. One left dirty
/// (its pass stopped part way) goes back to the front of the oldest list it was taken from, where
/// it still belongs, rather than make the next pass walk the bins again.
void engine_heap::span_return(run* r) noexcept {
    free_granules_ -= r->granules;
    r->kind = span_kind::free;
    span_file(r, true);
}

/// Effects: for a large request or free of `granules` granules, with span_lock_ held (let go while
/// the OS drops pages): purges the dirty free spans past span_cap() (span_free purges at most two
/// pieces within the lock) and, when the program does not call end_frame(), up to `granules`
/// granules of free spans, oldest first: those freed decay_ms ago or more (`decayed`), or of any
/// age (`any_age`). Maintenance steps purge about 2.6 MiB each (200 us of madvise on this machine)
/// at slow paths; a program that calls malloc seldom (an image converter: seconds of work between
/// buffers of a hundred MiB) would keep what it freed for seconds. The call's own work is of the
/// same size: it faults in, or was handed, as many pages as this purges. A steady churn reuses its
/// spans before they decay, so it purges nothing here.
void engine_heap::purge_for_big_call(std::size_t granules, big_purge what) noexcept {
    if (dirty_free_ > span_cap()) (void)purge_spans(purge_pass::cap, now_tick(), 0, SIZE_MAX, true);
    if (what == big_purge::cap_only || frames_.load(std::memory_order_relaxed) != 0) return; // end_frame()'s
    (void)purge_spans(what == big_purge::any_age ? purge_pass::all : purge_pass::decay, now_tick(), 0,
                      granules, true);
}

/// Returns: whether the quiet_calls-th large call (allocate, free or resize in place) before this
/// one came decay_ms or more ago, in a program that does not call end_frame(): one that makes big
/// blocks seldom, a few at a time (an image converter: seconds of work between its buffers). Its
/// large requests give back as many pages of any age (large_allocate): what it leaves free would
/// otherwise stay resident beside its new block while it works. A churn makes thousands of large
/// calls a second; the heap's first quiet_calls large calls are not quiet. Notes this call's tick.
bool engine_heap::quiet_big_call() noexcept {
    const std::uint32_t now = now_tick();
    const std::uint32_t k = big_calls_.fetch_add(1, std::memory_order_relaxed);
    const std::uint32_t then = big_call_ticks_[k % quiet_calls].exchange(now, std::memory_order_relaxed);
    // The first calls have no such call before them: a program's start (loading its input) is no
    // sign of the pace of its big blocks.
    return k >= quiet_calls && tick_age(now, then) >= options_.decay_ms &&
           frames_.load(std::memory_order_relaxed) == 0;
}

// -------------------------------------------------------------------------------------------------
// Maintenance steps
// -------------------------------------------------------------------------------------------------

/// Effects: one maintenance step: purges decayed medium blocks, then decayed spans, until the
/// deadline (0: none), at least one piece when anything is due. Returns: bytes purged.
/// Requires: no lock of the heap held.
std::size_t engine_heap::decay_step(std::uint64_t deadline_ns, thread_heap* own, bool drain) noexcept {
    const std::uint32_t now = now_tick();
    next_step_.store(now + step_interval_, std::memory_order_relaxed);
    // A new window of the recent peak every decay_ms (big_recent()).
    std::uint32_t began = window_start_.load(std::memory_order_relaxed);
    const bool roll =
        tick_age(now, began) >= options_.decay_ms && window_start_.compare_exchange_strong(began, now);
    if (roll) {
        big_peak_before_.store(big_peak_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        big_peak_.store(big_live(), std::memory_order_relaxed);
    }
    release_kept(false, now); // kept spans decay as free ones do: from when they were kept
    if (drain) {              // blocks no thread took from a depot since the last drain go home
        drained_at_.store(now, std::memory_order_relaxed);
        drain_depots(false);
    }
    std::size_t purged = 0;
    {
        lock_guard m(medium_lock_);
        release_empty_arenas(false, now);
        if (options_.medium_retain_bytes != 0)
            purged += purge_free_medium(purge_pass::decay, now, deadline_ns, true);
    }
    // The spans get their turn unless the medium blocks gave something back and used the budget
    // up: a step with anything due purges at least one piece.
    const bool spans = purged == 0 || !past(deadline_ns);
    if (roll || spans) {
        lock_guard s(span_lock_);
        if (roll) {
            span_peak_before_ = span_peak_;
            span_peak_ = top_ - free_granules_;
        }
        std::size_t over = 0;
        if (spans && dirty_free_ > span_cap()) // what span_free left of a cap's excess
            over = purge_spans(purge_pass::cap, now, deadline_ns, SIZE_MAX, true);
        if (spans && (over == 0 || !past(deadline_ns)))
            purged += purge_spans(purge_pass::decay, now, deadline_ns, SIZE_MAX, true);
        purged += over;
    }
    if (own != nullptr && (purged == 0 || !past(deadline_ns))) {
        own->runs_asked = runs_asked_.load(std::memory_order_relaxed); // this walk answers an ask
        purged += purge_run_blocks(own, now, deadline_ns);
    }
    steps_.fetch_add(1, std::memory_order_relaxed);
    return purged;
}

/// Effects: a step bounded by purge_step_us when one is due: step_interval_ after the last step
/// began, or while a backlog lasts a quarter of that after the last one was due (one thread takes
/// it; the others go on); none within decay_ms of an end_frame() call.
void engine_heap::maybe_decay(thread_heap* own) noexcept {
    const std::uint32_t now = now_tick();
    if (frames_.load(std::memory_order_relaxed) != 0 &&
        tick_age(now, last_frame_.load(std::memory_order_relaxed)) < options_.decay_ms)
        return; // end_frame paces the purges
    std::uint32_t due = next_step_.load(std::memory_order_relaxed);
    if (static_cast<std::int32_t>(now - due) < 0) return;
    if (!next_step_.compare_exchange_strong(due, now + step_interval_, std::memory_order_relaxed)) return;
    const std::uint64_t deadline = purge_batch::now_ns() + std::uint64_t{options_.purge_step_us} * 1000;
    // A step that spent its budget leaves a backlog (a program that just shrank): the next is due a
    // quarter of the interval (3 ms at the default decay_ms) after this one was due, so the backlog
    // goes at about purge_step_us per step_interval_ / 4 of wall time. A program that calls in
    // bursts (a frame's work, then a sleep) takes the steps of the last step_interval_ it slept
    // through at its next slow paths, as one that calls all the time would have: at the default
    // decay_ms, six more after the one due first, 1.4 ms in all at 200 us each. Below a decay_ms of
    // 32 the quarter is 0 and every slow path steps while the backlog lasts. Not in a program that
    // paces its purges with end_frame(): once its frames stop, its slow paths keep the plain
    // interval (while they come, end_frame keeps the slow paths from stepping at all).
    // The steps a burst catches up on come microseconds apart: a depot's low-water mark needs some
    // time to say which blocks no thread wanted, so those steps leave the depots alone.
    const bool drain = tick_age(now, drained_at_.load(std::memory_order_relaxed)) >= step_interval_ / 4;
    if (decay_step(deadline, own, drain) != 0 && past(deadline) &&
        frames_.load(std::memory_order_relaxed) == 0) {
        const std::uint32_t after = now_tick();
        std::uint32_t next = due + step_interval_ / 4;
        if (static_cast<std::int32_t>(after - next) > static_cast<std::int32_t>(step_interval_))
            next = after - step_interval_;
        next_step_.store(next, std::memory_order_relaxed);
    }
}

/// Effects: a walk of h's runs, bounded by purge_step_us, asked by the purge thread or another
/// thread's end_frame() (which cannot walk them: each run's free list is its owner's). Requires: the
/// calling thread owns h.
void engine_heap::walk_runs_asked(thread_heap* h) noexcept {
    const std::uint64_t deadline = purge_batch::now_ns() + std::uint64_t{options_.purge_step_us} * 1000;
    (void)purge_run_blocks(h, now_tick(), deadline);
}

/// Returns: bytes purged by this frame's step.
std::size_t engine_heap::end_frame(std::chrono::microseconds budget) noexcept {
    frames_.fetch_add(1, std::memory_order_relaxed);
    const auto us = static_cast<std::uint64_t>(std::max<std::int64_t>(budget.count(), 1));
    // The free blocks inside other threads' runs are theirs to walk: at most every decay_ms (the
    // least a free block waits once a walk saw it), each is asked to walk its runs at its next slow
    // call (walk_runs_if_asked). This thread
    // answers the ask itself, with its walk in the step below or its next frame's.
    const std::uint32_t now = now_tick();
    if (std::uint32_t at = frame_asked_at_.load(std::memory_order_relaxed);
        tick_age(now, at) >= options_.decay_ms &&
        frame_asked_at_.compare_exchange_strong(at, now, std::memory_order_relaxed))
        runs_asked_.fetch_add(1, std::memory_order_relaxed);
    // The frames pace the purges: the slow paths take no step until the program has not called
    // end_frame for decay_ms (its frames stopped: a loading screen), whoever stepped last.
    last_frame_.store(now, std::memory_order_relaxed);
    thread_heap* own = existing_thread_cache();
    const std::size_t purged = decay_step(purge_batch::now_ns() + us * 1000, own);
    // A step whose budget went on spans and medium blocks walks no runs: the ask is this thread's
    // next frame's to answer, not its next slow call's, inside the frame.
    if (own != nullptr) own->runs_asked = runs_asked_.load(std::memory_order_relaxed);
    return purged;
}

// -------------------------------------------------------------------------------------------------
// Free blocks inside runs
// -------------------------------------------------------------------------------------------------
//
// A run that still holds live blocks is never a free span, so its free blocks stay resident however
// long they wait. For blocks of 8 KiB or more (whole pages past their first), the owner gives those
// pages back, as decay does for spans but after 32 * decay_ms: a run's free blocks are the tail of
// its class's free list, which a class whose live count swings reuses at each swing (a strategy
// game server's 60 KiB class, strata-mt's trickle, reaches into its tail every few hundred ms):
//   - only the owner thread walks its runs (its free lists are its own; nothing is locked): its
//     end_frame() steps and the steps of its every 64th small refill, of its frees that empty a run
//     (once the run is relisted) and of its medium and large frees walk them, and its first slow
//     call after a purge thread's step or another thread's end_frame() asked (walk_runs_if_asked);
//   - a free block's first bytes keep the free-list link and a mark: word 1 holds a tag (the block's
//     address xor a constant), word 2 the tick a walk first saw it free and a purged bit;
//   - a block seen free for 32 * decay_ms is purged: madvise(MADV_DONTNEED) of its whole pages past the
//     first cache line's page; an allocation gets zero pages there, as from any fresh memory;
//   - while a purge thread runs, the walk hands such a block to it instead (hand_off): off the free
//     list, counted out in its run's `used` (so the run cannot empty or be given up meanwhile), onto
//     the heap's hand-off stack; the thread purges it and frees it back onto the run's thread_free
//     list, which the owner collects as other threads' frees. The walk then costs its owner no
//     system call: a madvise of a block costs about 2 us, so a 200 us step gives back about 100;
//     blocks of an empty run (the class's spare) are purged at the walk, as without a thread; the
//     walk collects each run's thread_free list and relists a run the collect emptied (relist), as
//     the owner's last free would have had no block been handed;
//   - a class whose runs hold more than twice as many free (carved) blocks as live ones has shrunk
//     beyond the swings of a steady live count (a level unloaded, a phase ended): its blocks wait
//     decay_ms only, as a free span does;
//   - a mark is only a hint: a block whose user never wrote words 1-2 keeps its mark from an earlier
//     free, and is then purged sooner than 32 * decay_ms after its latest free, or (purged bit set) not
//     again; never while it is live: the walk purges only blocks on the owner's free list;
//   - a run whose free list has not changed since a walk that left nothing waiting is skipped
//     (`purge_sig`, a byte of the list head and the count of blocks out);
//   - a walk goes round the runs over as many steps as its budgets need: a run an earlier step of
//     this round saw (`walk_round`) is skipped until the round ends.

namespace {

constexpr unsigned steady_wait = 32; // in-run free blocks of a class that has not shrunk: x decay_ms
constexpr unsigned first_purged_class = [] {
    unsigned c = 0;
    while (c < class_count && class_size(c) < page_sized_block)
        ++c;
    return c;
}();
constexpr std::uint64_t run_mark_tag = 0x5eed'b10c'c0de'd00dULL;
constexpr std::uint64_t run_mark_purged = std::uint64_t{1} << 32;
static_assert(class_count - first_purged_class <= 64, "thread_heap::shrunk holds a bit per class");
constexpr std::uint32_t handoff_max = 4096; // blocks on the hand-off stack (32 MiB or more)

/// Returns: the pages a purge of the free block at `at` (`bs` bytes) inside a run gives back: its
/// whole pages past the one holding its first cache line (link and mark); empty when hi <= lo.
std::pair<std::uintptr_t, std::uintptr_t> in_run_pages(std::uintptr_t at, std::size_t bs,
                                                       std::uintptr_t page) noexcept {
    return {(at + 64 + page - 1) & ~(page - 1), (at + bs) & ~(page - 1)};
}

/// Effects: pushes the chain [head .. tail] (linked through `next`) onto the stack `top_of`.
void push_chain(std::atomic<free_block*>& top_of, free_block* head, free_block* tail,
                std::memory_order order) noexcept {
    free_block* top = top_of.load(std::memory_order_relaxed);
    do
        tail->next = top;
    while (!top_of.compare_exchange_weak(top, head, order, std::memory_order_relaxed));
}

/// Returns: whether h's runs of class c hold more than twice as many free blocks (carved: resident,
/// or purged by an earlier walk) as live ones: the class shrank, beyond the swings of a steady live
/// count.
bool class_shrunk(const thread_heap* h, unsigned c) noexcept {
    std::size_t used = 0, carved = 0;
    const auto add = [&](const run* r) {
        if (r == &empty_run) return;
        // Blocks other threads freed (a purge thread's too) are free, though not yet collected.
        used += r->used - remote_count(r->thread_free.load(std::memory_order_relaxed));
        carved += r->carved;
    };
    add(h->current[c] == &h->stash[c] ? h->parked[c] : h->current[c]);
    for (const run* lists : {h->partial[c], h->full[c], h->freed[c]})
        for (const run* r = lists; r != nullptr; r = r->next)
            add(r);
    return carved - used > 2 * used;
}

std::uint8_t purge_sig_of(const run* r) noexcept {
    const auto head = reinterpret_cast<std::uintptr_t>(r->free);
    return static_cast<std::uint8_t>(((head >> 13) ^ (head >> 21) ^ r->used) | 1);
}

} // namespace

/// Effects: purges the free blocks of 8 KiB or more inside h's runs that a walk saw free
/// 32 * decay_ms ago (decay_ms in a shrunk class), class by class from where the last step stopped,
/// until the deadline. Requires: the calling thread owns h. Returns: bytes purged.
std::size_t engine_heap::purge_run_blocks(thread_heap* h, std::uint32_t now,
                                          std::uint64_t deadline_ns) noexcept {
    if (!options_.purge_run_blocks || first_purged_class >= class_count) return 0;
    const std::uintptr_t page = virtual_memory::page_size();
    std::size_t purged = 0;
    purge_batch batch(options_.batch_purges, deadline_ns); // this thread's runs: flushed before it returns
    // Blocks for the purge thread (hand_off), at most handoff_max on the stack at once.
    const std::uint32_t queued = handoff_count_.load(std::memory_order_relaxed);
    std::uint32_t room =
        handoff_open_.load(std::memory_order_relaxed) && queued < handoff_max && !h->giving_up
            ? handoff_max - queued
            : 0;
    free_block* handed = nullptr;
    free_block* handed_tail = nullptr;
    std::uint32_t handed_count = 0;
    std::size_t handed_bytes = 0;
    // Runs on h's lists that a collect emptied: relisted (spare or retired) after the walk, which
    // goes on along those lists meanwhile.
    constexpr std::size_t emptied_max = 256;
    run* emptied[emptied_max];
    std::size_t emptied_count = 0;
    // One run: returns false when the deadline passed (after its blocks were done).
    std::uint64_t wait = 0; // this class's: decay_ms * 8, or decay_ms once it has shrunk
    const auto walk_run = [&](run* r) {
        if (r == &empty_run || r->walk_round == h->purge_round) return true;
        r->walk_round = h->purge_round;
        // Blocks freed back onto thread_free (by the purge thread, or other threads) are collected
        // here: a run that a walk's hand-off kept from emptying at its owner's last free would
        // otherwise wait, empty, for its class's next refill.
        if (r->thread_free.load(std::memory_order_relaxed) != 0) collect(h, r);
        if (r->used == 0 && r->where != run_list::none && r != h->spare[r->cls] &&
            emptied_count < emptied_max)
            emptied[emptied_count++] = r;
        if (r->free == nullptr || r->purge_sig == purge_sig_of(r)) return true;
        bool waiting = false;
        const std::size_t bs = r->block_size;
        for (free_block** link = &r->free; *link != nullptr;) {
            free_block* b = *link;
            auto* words = reinterpret_cast<std::uint64_t*>(b);
            const auto at = reinterpret_cast<std::uintptr_t>(b);
            const std::uint64_t tag = run_mark_tag ^ at;
            if (words[1] != tag) { // first seen free now
                words[1] = tag;
                words[2] = now;
                waiting = true;
            } else if ((words[2] & run_mark_purged) != 0) {
            } else if (tick_age(now, static_cast<std::uint32_t>(words[2])) < wait) {
                waiting = true;
            } else {
                const auto [lo, hi] = in_run_pages(at, bs, page);
                words[2] = run_mark_purged | now;
                if (hi > lo && room != 0 && r->used != 0) { // to the purge thread
                    *link = b->next;
                    ++r->used;
                    b->next = handed;
                    handed = b;
                    if (handed_tail == nullptr) handed_tail = b;
                    ++handed_count;
                    handed_bytes += hi - lo;
                    --room;
                    continue;
                }
                if (hi > lo) {
                    if (batch.add(lo, hi)) batch.flush();
                    purged += hi - lo;
                }
            }
            link = &b->next;
        }
        r->purge_sig = waiting ? 0 : purge_sig_of(r);
        return !past(deadline_ns);
    };
    // A round sees every run once, over as many steps as the budgets need: a step goes on past the
    // runs an earlier step of its round saw, so long free lists of blocks not yet due cannot hold
    // the walk back at its start.
    const unsigned classes = class_count - first_purged_class;
    bool done = true;
    for (unsigned i = 0; i < classes; ++i) {
        const unsigned c = first_purged_class + (h->purge_class + i) % classes;
        // Once a round per class: the runs' counts are a walk of their descriptors.
        const std::uint64_t bit = std::uint64_t{1} << (c - first_purged_class);
        if ((h->shrunk_seen & bit) == 0) {
            h->shrunk_seen |= bit;
            h->shrunk = class_shrunk(h, c) ? h->shrunk | bit : h->shrunk & ~bit;
        }
        wait = std::uint64_t{options_.decay_ms} * ((h->shrunk & bit) != 0 ? 1 : steady_wait);
        bool more = walk_run(h->current[c] == &h->stash[c] ? h->parked[c] : h->current[c]);
        for (run* r = h->partial[c]; more && r != nullptr; r = r->next)
            more = walk_run(r);
        for (run* r = h->full[c]; more && r != nullptr; r = r->next)
            more = walk_run(r);
        for (run* r = h->freed[c]; more && r != nullptr; r = r->next)
            more = walk_run(r);
        if (!more) {
            h->purge_class = c - first_purged_class; // this class again first, next time
            done = false;
            break;
        }
    }
    if (done) {
        if (++h->purge_round == 0) h->purge_round = 1; // 0: a run no round has seen
        h->shrunk_seen = 0;
    }
    batch.flush();
    if (purged != 0) purged_bytes_.fetch_add(purged, std::memory_order_relaxed);
    if (handed != nullptr) hand_off(handed, handed_tail, handed_count, handed_bytes);
    for (std::size_t i = 0; i < emptied_count; ++i)
        if (emptied[i]->used == 0) relist(h, emptied[i]); // a later one may have become the spare
    return purged;
}

/// Effects: pushes the chain [head .. tail] of `n` due blocks (linked through `next`, `bytes` to
/// purge) onto the hand-off stack. Should the purge thread have stopped since the walk looked, the
/// caller purges the stack itself: stop_purge_thread() drains the stack after it closes it, and
/// a push after that drain sees it closed (both sides seq_cst).
void engine_heap::hand_off(free_block* head, free_block* tail, std::uint32_t n, std::size_t bytes) noexcept {
    handoff_count_.fetch_add(n, std::memory_order_relaxed);
    handed_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    push_chain(handoff_, head, tail, std::memory_order_seq_cst);
    if (!handoff_open_.load(std::memory_order_seq_cst)) (void)purge_handed(0);
}

/// Effects: takes the hand-off stack and, in batches, purges each block's whole pages past its
/// first and frees the block back onto its run's thread_free list, until the deadline (0: none;
/// at least one batch); what is left goes back on the stack. Returns: bytes purged.
std::size_t engine_heap::purge_handed(std::uint64_t deadline_ns) noexcept {
    // seq_cst: after stop_purge_thread() closed the stack, this read or hand_off's read of
    // handoff_open_ sees the other side (see hand_off).
    if (handoff_.load(std::memory_order_seq_cst) == nullptr) return 0;
    spin_guard g(handoff_lock_); // a fork waits for blocks in hand to go home
    free_block* list = handoff_.exchange(nullptr, std::memory_order_acquire);
    const std::uintptr_t page = virtual_memory::page_size();
    std::size_t purged = 0;
    std::uint32_t taken = 0;
    while (list != nullptr) {
        free_block* done[purge_batch::max_ranges];
        std::size_t k = 0;
        {
            purge_batch batch(options_.batch_purges, deadline_ns);
            while (list != nullptr && k < purge_batch::max_ranges) {
                free_block* b = list;
                list = b->next;
                done[k++] = b;
                const auto [lo, hi] =
                    in_run_pages(reinterpret_cast<std::uintptr_t>(b), head_of(b)->block_size, page);
                purged += hi - lo; // walks hand only blocks with pages to purge
                if (batch.add(lo, hi)) break;
            }
        } // flushed: the pages are gone before any block goes home
        for (std::size_t i = 0; i < k; ++i) {
            run* d = head_of(done[i]);
            push_thread_free(done[i], d, d->cls); // out in d until now: d cannot change class
        }
        taken += static_cast<std::uint32_t>(k);
        if (past(deadline_ns)) break;
    }
    if (list != nullptr) { // the deadline passed: the rest waits for the next call
        free_block* tail = list;
        while (tail->next != nullptr)
            tail = tail->next;
        push_chain(handoff_, list, tail, std::memory_order_release);
    }
    handoff_count_.fetch_sub(taken, std::memory_order_relaxed);
    if (purged != 0) purged_bytes_.fetch_add(purged, std::memory_order_relaxed);
    return purged;
}

// -------------------------------------------------------------------------------------------------
// Purge thread
// -------------------------------------------------------------------------------------------------

/// Returns: true when the thread started.
bool engine_heap::start_purge_thread(std::chrono::milliseconds period,
                                     std::chrono::microseconds budget) noexcept {
    bool expected = false;
    if (!thread_running_.compare_exchange_strong(expected, true)) return false;
    thread_stop_.store(false, std::memory_order_relaxed);
    thread_period_ = std::max(period, std::chrono::milliseconds{1});
    thread_budget_ = std::max(budget, std::chrono::microseconds{1});
    if (pthread_create(&thread_, nullptr, &engine_heap::purge_thread_main, this) != 0) {
        thread_running_.store(false);
        return false;
    }
    handoff_open_.store(true, std::memory_order_seq_cst); // walks hand their due blocks to it
    return true;
}

/// Effects: asks the thread to stop and waits for it; then purges what walks handed it.
void engine_heap::stop_purge_thread() noexcept {
    if (!thread_running_.load()) return;
    handoff_open_.store(false, std::memory_order_seq_cst);
    thread_stop_.store(true, std::memory_order_release);
    (void)pthread_join(thread_, nullptr);
    (void)purge_handed(0);
    thread_running_.store(false);
}

/// The purge thread: a step every period; sleeps in slices of at most 10 ms so a stop is quick.
void* engine_heap::purge_thread_main(void* self) noexcept {
    auto* e = static_cast<engine_heap*>(self);
    const std::uint64_t period_ns = static_cast<std::uint64_t>(e->thread_period_.count()) * 1000000;
    while (!e->thread_stop_.load(std::memory_order_acquire)) {
        const std::uint64_t wake = purge_batch::now_ns() + period_ns;
        for (std::uint64_t t = purge_batch::now_ns();
             t < wake && !e->thread_stop_.load(std::memory_order_acquire); t = purge_batch::now_ns()) {
            const std::uint64_t ns = std::min<std::uint64_t>(wake - t, 10000000);
            timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
            (void)::nanosleep(&ts, nullptr);
        }
        if (e->thread_stop_.load(std::memory_order_acquire)) break;
        // The free blocks inside runs are their owners' to walk: each thread walks its own at its
        // next small refill, free that empties a run or lands in a full one, or medium or large
        // free (walk_runs_if_asked).
        e->runs_asked_.fetch_add(1, std::memory_order_relaxed);
        const auto us = static_cast<std::uint64_t>(e->thread_budget_.count());
        const std::uint64_t deadline = purge_batch::now_ns() + us * 1000;
        // First what walks handed it: those blocks are out of their owners' reach meanwhile.
        (void)e->purge_handed(deadline);
        (void)e->decay_step(deadline);
    }
    return nullptr;
}

// -------------------------------------------------------------------------------------------------
// Statistics and trim
// -------------------------------------------------------------------------------------------------

/// Returns: the purge counters.
engine_purge_stats engine_heap::purge_stats() const noexcept {
    engine_purge_stats s;
    {
        lock_guard g(span_lock_);
        s.retained_span_bytes = (dirty_free_ + kept_granules_.load(std::memory_order_relaxed))
                                << granule_shift;
    }
    {
        lock_guard g(medium_lock_);
        s.retained_medium_bytes = medium_resident_;
    }
    s.purged_bytes = purged_bytes_.load(std::memory_order_relaxed);
    s.handed_bytes = handed_bytes_.load(std::memory_order_relaxed);
    s.steps = steps_.load(std::memory_order_relaxed);
    s.frames = frames_.load(std::memory_order_relaxed);
    return s;
}

/// Effects: frees emptied abandoned runs, hands kept spans to the pool, purges every big free medium
/// block and every dirty free span.
void engine_heap::trim() noexcept {
    (void)purge_handed(0); // home before the sweep, which may then free their runs
    if (const tls_slot& s = tls[slot_]; s.epoch == epoch_) flush_stash(s.heap);
    drain_depots(true);
    sweep_abandoned();
    const std::uint32_t now = now_tick();
    release_kept(true, now);
    {
        lock_guard m(medium_lock_);
        release_empty_arenas(true, now);
        (void)purge_free_medium(purge_pass::all, now, 0, true);
    }
    lock_guard g(span_lock_);
    (void)purge_spans(purge_pass::all, now, 0, SIZE_MAX, true);
}

} // namespace strata
