#pragma once
// engine_heap: a general-purpose, thread-caching heap that can serve as the process's malloc.
//
//   small  (<= 64 KiB): 44 size classes (16-byte steps to 128, then 4 per doubling), served from
//                       per-thread runs with no lock and no atomic on the owner's path; a free from
//                       another thread goes onto the run's atomic "thread free" list.
//   medium (<= 1 MiB):  TLSF arenas (strata::tlsf) behind one lock.
//   large:              whole granule spans straight from the reservation, best fit among the
//                       free spans, resident ones first (the large-block cache).
//
// Everything lives in one virtual_memory reservation cut into 64 KiB granules, so owns(p) is a
// range check and a block's run descriptor is found by one shift. Freed memory stays resident
// while it may be reused and decays: it goes back to the OS once unused for decay_ms, oldest first,
// within a time budget (end_frame(), a purge thread, or the slow paths), so churn never faults.
// See docs/engine.md for the design, the numbers and the C API built on it (libstrata_malloc.so).
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "strata/adapt/allocator_ref.hpp"
#include "strata/adapt/tracked.hpp"
#include "strata/core/config.hpp"
#include "strata/core/spinlock.hpp"
#include "strata/core/stats.hpp"
#include "strata/engine/detail/size_class.hpp"
#include "strata/engine/detail/thread_heap.hpp"
#include "strata/engine/fwd.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/memory_source.hpp"
#include "strata/source/virtual_memory.hpp"

namespace strata {

namespace engine_detail {
class purge_batch;
} // namespace engine_detail

/// Construction settings of an engine_heap.
struct engine_options {
    /// Address space reserved up front (MAP_NORESERVE: costs no memory until used), at most 2^48
    /// bytes. Bounds the heap: requests that do not fit fail with nullptr.
    std::size_t reserve_bytes = std::size_t{64} << 30;
    /// Free memory is purged late: freed spans and big free medium blocks stay resident and reusable
    /// for decay_ms (free blocks inside runs of a steady class for 32 * decay_ms, see
    /// purge_run_blocks), then go back to the OS (madvise(MADV_DONTNEED)), oldest first, by the
    /// heap's maintenance: end_frame(), the purge thread, or a step of at most purge_step_us that the slow
    /// paths (medium and large frees, new runs, frees that empty a run other than the current one, every
    /// 64th small refill) take every decay_ms / 8, the first decay_ms after construction, none within
    /// decay_ms of an end_frame() call (every decay_ms / 32 of wall time while a step's budget leaves a
    /// backlog in a program that never called end_frame(): one that slept takes the steps of the last
    /// decay_ms / 8 at its next slow paths). A program that reuses its memory within decay_ms never faults;
    /// one that shrinks gives it back within about decay_ms plus what the budgets need for the backlog. 0: at
    /// the next maintenance step (the slow paths then step on every call). At most 2^29 (six days; more is
    /// taken as that).
    std::uint32_t decay_ms = 125;
    /// Time the slow paths' maintenance step may spend purging (batches of at most 1 MiB: the last
    /// one may overrun it by one batch).
    std::uint32_t purge_step_us = 200;
    /// A purge gathers up to 32 ranges (1 MiB) and gives them back in one process_madvise call
    /// (engine_detail::purge_batch), where the kernel takes it (Linux 6.15 and later; otherwise
    /// one madvise per range, as with false). Each call has a fixed cost (its TLB flush), which
    /// a shrunk heap's scattered 64 KiB free runs would otherwise pay once each. Never tried
    /// under a seccomp filter (which may kill on a call it does not list).
    bool batch_purges = true;
    /// Cap on free granules kept resident, whatever their age: a free past it purges the oldest
    /// free spans at once (a large block's free all of the excess; a run's, an arena's or a kept
    /// span's up to 2 MiB, and the next maintenance step or large call the rest). 0: every free
    /// span is purged as it is freed, within those bounds.
    std::size_t retain_bytes = std::size_t{64} << 20;
    /// Free medium (TLSF) blocks of at least this many bytes give their pages back (all but the
    /// first and last page) when they decay; smaller ones stay resident. 0 purges every free medium
    /// block, SIZE_MAX none.
    std::size_t purge_medium_bytes = std::size_t{1} << 20;
    /// Cap on the resident bytes of those blocks, whatever their age: a medium free past it purges
    /// them at once, those seen free longest first. 0: each such block is purged as it is freed.
    std::size_t medium_retain_bytes = std::size_t{64} << 20;
    /// Free size-class blocks of 8 KiB or more inside runs that still hold live blocks give their
    /// whole pages back (all but the page holding the block's link) once seen free for
    /// 32 * decay_ms (4 s): such a block is the tail of its class's free list, which a class whose live
    /// count swings reuses at every swing, so it waits longer than a free span. A class whose runs
    /// hold more than twice as many free blocks as live ones has shrunk beyond such swings: its
    /// free blocks wait decay_ms, as spans do. Only the run's
    /// owner thread walks its runs: its end_frame() calls and the steps of its every 64th small
    /// refill, of its frees that empty a run (not the current one) and of its medium and large frees do, and
    /// its first slow call after a purge thread's step or another thread's end_frame() asked; the owner hands
    /// the due blocks to a running purge thread, which purges them and frees them back. false: such pages
    /// stay resident until their run empties.
    bool purge_run_blocks = true;
    /// Milliseconds of a monotonic clock; nullptr: CLOCK_MONOTONIC_COARSE. Tests give a fake one.
    std::uint64_t (*clock_ms)() noexcept = nullptr;
    /// Per size class, bytes of small blocks of other threads' runs that a thread's frees keep for
    /// its own next allocations of that class (its stash): a thread that frees what others
    /// allocated reuses those blocks while they are in its cache, and skips the atomic push to their
    /// owner. A class holds at least 16 blocks (more bytes than this for classes above 1 KiB);
    /// classes of 8 KiB and more are not stashed. Only a thread whose remote frees are about half
    /// of its frees or more stashes. Past it, such frees go to the owning run. A stash that runs
    /// dry takes its thread's own run's free list whole, and so may hold more than this (at most
    /// one run a class) until it drains. Handed back at thread exit, flush_thread_cache() and
    /// trim(). 0: off.
    std::size_t stash_bytes = std::size_t{64} << 10;
    /// Per size class, bytes of blocks that full stashes hand to the heap's depot, in batches of
    /// half a stash (at most 32 blocks); a thread whose stash runs dry takes a batch from the depot
    /// before it turns to its own runs. Blocks then move between a thread that frees more of a
    /// class than it allocates and one that allocates more, at one lock per batch, instead of an
    /// atomic push per block onto its owner's run and a walk when the owner collects it. A depot
    /// holds at least one batch. Each maintenance step hands the batches a depot held through the
    /// whole interval since the last step to their runs (about 1,024 blocks a step over all
    /// classes); trim() empties every depot. A full depot sends the free to the owning run.
    /// 0: off.
    std::size_t depot_bytes = std::size_t{256} << 10;
    /// Empty runs a thread keeps for itself before handing them back to the shared span pool. Kept
    /// runs above one granule of a class that allocated nothing in the thread's last 1024 slow
    /// calls go back anyway when a new run or large block would otherwise take fresh pages.
    std::size_t thread_cache_runs = 16;
    /// Size of the first TLSF arena of the medium tier (the second is twice, later ones 4x).
    std::size_t medium_arena_bytes = std::size_t{16} << 20;
    /// First block of each thread's frame_arena().
    std::size_t frame_block_bytes = std::size_t{256} << 10;
    /// Bytes in one thread's size-class runs from which its new runs are faulted in as they are
    /// carved, each carve faulting in the granules (64 KiB) its blocks reach, so steady churn never
    /// faults and no allocation pays for a whole run; below it runs are touched lazily (small programs, and
    /// the light threads of big ones, stay small). A class's first run stays lazy until half of it is carved
    /// (a rare class holds a few blocks, not a run's pages). Recycled runs are always faulted in.
    /// Under 64 KiB (0): every run is faulted in from its first carve, first runs included.
    std::size_t populate_after_bytes = std::size_t{8} << 20;
    /// Largest large block (above 1 MiB) a thread keeps for itself when it frees one: the span of
    /// the last one it freed waits, resident, for its next large request (taken whole when at most
    /// a quarter, or 1 MiB, bigger than asked; its front otherwise), so a thread that churns big
    /// buffers writes memory that is still in its own caches rather than another thread's. Kept
    /// spans of all threads together stay within retain_bytes; one goes back to the span pool when
    /// its thread keeps another, exits, or at the first maintenance step decay_ms after it was
    /// kept, and at trim(). 0: off.
    std::size_t large_keep_bytes = std::size_t{64} << 20;
    /// Ask for transparent huge pages on the heap's memory (MADV_HUGEPAGE; a hint).
    bool huge_pages = false;
    /// Take thread-local slot 0, which no other heap takes: threads' caches are then found with
    /// slot_use::first_for_life and allocate_cached_slot0 (no epoch to compare). For the one heap
    /// of a process that lives as long as the process (the malloc shim's); without it a heap takes
    /// one of slots 1-15.
    bool first_slot = false;
};

/// Counters of one size class, summed over every thread (live and exited).
struct engine_class_stats {
    std::size_t block_size = 0;      ///< bytes of every block of the class
    std::size_t allocations = 0;     ///< blocks handed out since construction
    std::size_t frees = 0;           ///< blocks freed since construction (by any thread)
    std::size_t live_bytes = 0;      ///< (allocations - frees) * block_size
    std::size_t committed_bytes = 0; ///< bytes of the runs of this class
    std::size_t depot_blocks = 0;    ///< freed blocks waiting in the class's depot (counted in frees)
    std::size_t depot_batches = 0;   ///< batches full stashes handed to the depot since construction
};

/// Counters of the calling thread's cache.
struct engine_thread_stats {
    std::size_t allocations = 0;     ///< small blocks this thread handed out (its runs, its stash)
    std::size_t frees = 0;           ///< small blocks this thread freed (whichever thread's run)
    std::size_t live_bytes = 0;      ///< bytes this thread allocated minus bytes it freed (>= 0)
    std::size_t committed_bytes = 0; ///< bytes of the runs this thread owns (empty cache included)
};

/// Counters of the heap's purging (engine_heap::purge_stats()).
struct engine_purge_stats {
    std::size_t retained_span_bytes = 0;   ///< free spans that may be resident, waiting to decay
    std::size_t retained_medium_bytes = 0; ///< free medium blocks' bytes that may be resident
    std::size_t purged_bytes = 0;          ///< bytes given back to the OS since construction
    std::size_t steps = 0;                 ///< maintenance steps run (end_frame, thread, slow paths)
    std::size_t frames = 0;                ///< end_frame() calls
    std::size_t handed_bytes = 0;          ///< in-run bytes walks handed to the purge thread to purge
};

/// A general-purpose heap for a whole engine (or process): thread-cached size classes, TLSF
/// arenas, and large spans, in one reservation.
///
/// Thread safety: every member may be called from any thread at once, except the constructor,
/// the destructor and check() (which requires that no other thread uses the heap meanwhile).
/// A block may be freed by any thread. A thread's cache is handed back at thread exit (its runs
/// are adopted by other threads) or by flush_thread_cache().
///
/// Bad input: allocate answers nullptr for a non-power-of-two alignment, for sizes that cannot be
/// reserved, and when address space runs out. deallocate(nullptr) does nothing; deallocating a
/// pointer this heap does not own is ignored (owns() tells). Double frees are undefined.
///
/// At most 15 engine_heap objects may exist at once (each holds a thread-local slot), and one more
/// made with engine_options::first_slot.
class alignas(64) engine_heap { // the fast paths' fields share one cache line
public:
    static constexpr std::size_t small_max = engine_detail::small_max;  ///< largest size-class block
    static constexpr std::size_t medium_max = std::size_t{1} << 20;     ///< largest TLSF request
    static constexpr std::size_t granule = engine_detail::granule;      ///< unit of the span tier
    static constexpr unsigned class_count = engine_detail::class_count; ///< number of size classes
    static constexpr std::size_t default_alignment = alignof(std::max_align_t);

    /// Effects: reserves `options.reserve_bytes` of address space; commits nothing yet.
    /// Never allocates through malloc (the malloc shim constructs one during the first malloc).
    /// Throws: std::system_error when the reservation fails; std::length_error when 15 engine
    /// heaps already exist (with options.first_slot: when another heap holds slot 0).
    explicit engine_heap(engine_options options = {});
    /// Effects: releases the reservation (every block still allocated is gone). Requires: no other
    /// thread uses the heap any more.
    ~engine_heap();
    engine_heap(const engine_heap&) = delete;
    engine_heap& operator=(const engine_heap&) = delete;

    /// Returns: at least `size` bytes aligned to `align` (any power of two), or nullptr when out of
    /// memory or `align` is not a power of two. size 0 returns a unique minimal block.
    /// Complexity: O(1) on the thread-cached path; the medium and large tiers take a lock.
    [[nodiscard]] STRATA_ALWAYS_INLINE void* allocate(std::size_t size,
                                                      std::size_t align = default_alignment) noexcept {
        using namespace engine_detail;
        // align - 1 wraps for 0; with the default (a constant) both alignment tests fold away.
        if (STRATA_LIKELY(size <= small_max && align - 1 < default_alignment && (align & (align - 1)) == 0)) {
            const tls_slot& s = tls[slot_];
            if (STRATA_LIKELY(s.epoch == epoch_)) {
                thread_heap* h = s.heap;
                const unsigned c = class_of(size);
                run* r = h->current[c];
                free_block* b = r->free;
                if (STRATA_LIKELY(b != nullptr)) {
                    r->free = b->next;
                    // The next pop of this class reads that block: start fetching it now.
                    __builtin_prefetch(r->free);
                    ++r->used;
                    h->allocs[c].add(1);
                    return b;
                }
                return small_slow(h, c);
            }
        }
        return allocate_slow(size, align);
    }

    /// How allocate_cached and deallocate find the calling thread's cache. `checked`: through the
    /// heap's thread-local slot, whose epoch tells it from a destroyed heap's (every heap).
    /// `first_for_life`: through slot 0 with no epoch, which saves two loads and a compare.
    /// Requires: the heap holds slot 0 (made with engine_options::first_slot) and is never
    /// destroyed (the malloc shim's): the slot is then either its cache or empty, and an empty
    /// slot's id is in no run tag.
    enum class slot_use { checked, first_for_life };

    /// Returns: the thread-local slot this heap's caches are found through (0 to 15).
    [[nodiscard]] unsigned slot_index() const noexcept { return slot_; }

    /// Returns: a block for `size` (<= small_max, default alignment) from the calling thread's
    /// current run of its class when that needs no slow path; nullptr otherwise (size above
    /// small_max, no cache yet, an empty run), and then allocate(size) gives the answer. For
    /// callers that end in a call of their own on a miss (the malloc shim): the hit path then
    /// saves no register and makes no call.
    template <slot_use Slot = slot_use::checked>
    [[nodiscard]] STRATA_ALWAYS_INLINE void* allocate_cached(std::size_t size) noexcept {
        using namespace engine_detail;
        if constexpr (Slot == slot_use::first_for_life) {
            return allocate_cached_slot0(size);
        } else {
            if (STRATA_UNLIKELY(size > small_max)) return nullptr;
            const tls_slot& s = tls[slot_];
            if (STRATA_UNLIKELY(s.epoch != epoch_)) return nullptr;
            return pop_cached(s.heap, size);
        }
    }

    /// Returns: allocate_cached<slot_use::first_for_life>(size) of the heap that holds slot 0; it
    /// reads no member of the heap, so a caller that knows such a heap may exist (the malloc shim)
    /// needs no pointer to it on this path. nullptr when the calling thread has no cache in slot 0
    /// (no such heap yet, or none made for this thread). Requires: any heap that ever held slot 0
    /// (engine_options::first_slot) is alive and is the only one that did.
    [[nodiscard]] STRATA_ALWAYS_INLINE static void* allocate_cached_slot0(std::size_t size) noexcept {
        using namespace engine_detail;
        if (STRATA_UNLIKELY(size > small_max)) return nullptr;
        thread_heap* h = tls[0].heap;
        if (STRATA_UNLIKELY(h == nullptr)) return nullptr;
        return pop_cached(h, size);
    }

    /// Effects: returns `p` (from this heap, any thread) to the heap; nullptr and pointers the
    /// heap does not own are ignored. Complexity: O(1) on the owner's path and for remote frees
    /// of small blocks (one CAS); the medium and large tiers take a lock.
    template <slot_use Slot = slot_use::checked>
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept {
        const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(p) - data_;
        if (STRATA_UNLIKELY(off >= data_size_)) return;
        deallocate_at<Slot>(p, off);
    }

    /// Effects: deallocate(p) for a caller that has tested ownership itself (the malloc shim, with
    /// copies of data_begin() and data_bytes() it can read before the heap exists).
    /// Requires: off == p - data_begin() and off < data_bytes().
    template <slot_use Slot = slot_use::checked>
    STRATA_ALWAYS_INLINE void deallocate_at(void* p, std::uintptr_t off) noexcept {
        using namespace engine_detail;
        const std::size_t g = off >> granule_shift;
        // The granule's tag says whose run this is without reading the run's descriptor, which
        // its owner keeps writing: another thread's free reads only the tag (run_tag).
        const std::uint32_t tag = tags_[g].load(std::memory_order_relaxed);
        const tls_slot& s = tls[Slot == slot_use::first_for_life ? 0 : slot_];
        // The slot's id matches no tag while the thread's stash is on (stash_flag), so that every
        // free then goes to deallocate_slow, which stashes the thread's own blocks too.
        if (STRATA_LIKELY((Slot == slot_use::first_for_life || s.epoch == epoch_) && tag_owner(tag) == s.id))
            return free_own(s.heap, p, off, tag);
        deallocate_slow(p, tag);
    }

    /// Effects: deallocate(p); the size and alignment are not needed (allocator contract form).
    STRATA_ALWAYS_INLINE void deallocate(void* p, std::size_t /*size*/, std::size_t /*align*/) noexcept {
        deallocate(p);
    }

    /// Returns: a block of at least `new_size` bytes aligned to `align` holding the first
    /// min(old usable size, new_size) bytes of `p`: `p` itself when its block can hold it (small
    /// class, TLSF in place, span), otherwise a new block (and `p` is freed). nullptr when out of
    /// memory (then `p` is untouched). p == nullptr: allocate(new_size, align). new_size == 0: frees
    /// `p` and returns nullptr (glibc's realloc(p, 0)).
    [[nodiscard]] void* reallocate(void* p, std::size_t new_size,
                                   std::size_t align = default_alignment) noexcept;

    /// Returns: allocate(size, align) with the bytes zeroed (fresh spans are not written twice).
    [[nodiscard]] void* allocate_zeroed(std::size_t size, std::size_t align = default_alignment) noexcept;

    /// Returns: the bytes usable at `p` (>= the size asked for). Requires: owns(p).
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept;

    /// Returns: true when `p` points into this heap's reservation. O(1).
    [[nodiscard]] bool owns(const void* p) const noexcept {
        return reinterpret_cast<std::uintptr_t>(p) - data_ < data_size_;
    }
    /// Returns: the address of the reservation's first data byte; owns(p) is
    /// p - data_begin() < data_bytes(), in unsigned arithmetic.
    [[nodiscard]] std::uintptr_t data_begin() const noexcept { return data_; }
    /// Returns: the size of the reservation's data, in bytes.
    [[nodiscard]] std::size_t data_bytes() const noexcept { return data_size_; }

    /// Returns: in_use (small live bytes by class size, medium block bytes, large span bytes),
    /// capacity (committed bytes), live_allocations and total_allocations over every tier.
    /// peak and largest_free_block are 0 (not tracked: they would cost the fast path).
    [[nodiscard]] strata::stats stats() const noexcept;
    /// Returns: the counters of size class `c` over every thread. Requires: c < class_count.
    [[nodiscard]] engine_class_stats class_stats(unsigned c) const noexcept;
    /// Returns: the counters of the calling thread's cache (zero when it has none).
    [[nodiscard]] engine_thread_stats thread_stats() const noexcept;
    /// Returns: bytes of spans in use (runs, TLSF arenas, large blocks, heap records) plus free
    /// spans that may still be resident: what the heap can have resident, short of pages never
    /// touched (commits are lazy, so untouched parts of runs and arenas cost no memory).
    [[nodiscard]] std::size_t committed_bytes() const noexcept;
    /// Returns: bytes of free spans that may still be resident (kept for reuse, <= retain limit
    /// plus what coalescing merged).
    [[nodiscard]] std::size_t retained_bytes() const noexcept;

    /// Returns: the purge counters (retained bytes are as of the last medium free or step).
    [[nodiscard]] engine_purge_stats purge_stats() const noexcept;

    /// Returns: the block size of class `c`; class_count when `size` > small_max.
    [[nodiscard]] static constexpr std::size_t class_size(unsigned c) noexcept {
        return engine_detail::class_size(c);
    }
    /// Returns: the class serving `size` (<= small_max).
    [[nodiscard]] static unsigned class_of(std::size_t size) noexcept {
        return engine_detail::class_of(size);
    }

    /// Effects: validates every invariant: span tiling, free bins, run free lists (on the block
    /// grid, within the carved part, counts matching `used`), TLSF arenas, the calling thread's
    /// stash and the depots (blocks on the grid of runs of their class, counts). Requires: no
    /// other thread uses the heap meanwhile. Returns: true when all hold.
    [[nodiscard]] bool check() const noexcept;

    /// Effects: hands the calling thread's cache back (as thread exit does): its stash goes to the
    /// owning runs, runs in use become adoptable by other threads, empty ones return to the span
    /// pool, the frame arena is destroyed. The next allocation on this thread starts a new cache
    /// (so does a run of frees: deallocate).
    void flush_thread_cache() noexcept;

    /// Effects: purges the free blocks that walks handed the purge thread (and frees them back to
    /// their runs), hands the calling thread's stash and every depot back to the owning runs, frees
    /// the runs exited threads left behind whose blocks other threads have since freed (otherwise
    /// they wait for a thread that needs their size class), then purges every free medium block of
    /// purge_medium_bytes or more and every free span (the retained memory goes back to the OS).
    /// Complexity: O(abandoned runs + depot blocks + free medium blocks + spans).
    void trim() noexcept;

    /// Effects: this frame's maintenance: purges free memory (spans and big medium blocks) that has
    /// been free for decay_ms or longer, oldest first, and whatever exceeds the caps, until `budget`
    /// is spent (purges go in 1 MiB pieces, so it overruns by at most one piece), walking the
    /// calling thread's runs for decayed free blocks too; at most every decay_ms it asks the
    /// other threads to walk theirs at their next slow call. Call it once per frame where the frame
    /// has time to spare: the slow paths then take no maintenance step of their own until end_frame
    /// has not been called for decay_ms (the frames stopped).
    /// Returns: bytes purged. Complexity: O(free spans + big free medium blocks) plus the purging.
    std::size_t end_frame(std::chrono::microseconds budget = std::chrono::microseconds{500}) noexcept;

    /// Effects: starts a thread that runs a maintenance step (like end_frame(budget)) every
    /// `period`, for programs that have no frame loop and go idle; false when it runs already or
    /// cannot start. Each step also purges the free blocks inside runs that their owners' walks
    /// handed it (purge_run_blocks), and asks every thread to walk its runs at its next slow call.
    /// Call it outside any allocation (the thread's creation may allocate).
    bool start_purge_thread(std::chrono::milliseconds period = std::chrono::milliseconds{50},
                            std::chrono::microseconds budget = std::chrono::microseconds{2000}) noexcept;
    /// Effects: stops the purge thread (waits for its step to end) and purges what walks handed
    /// it since; the destructor does it too.
    void stop_purge_thread() noexcept;

    /// Returns: the calling thread's frame arena, created on first use; its blocks come from this
    /// heap and go back when the thread exits (or flush_thread_cache()). Reset it once per frame.
    /// Throws: std::bad_alloc when no cache can be made for the thread.
    [[nodiscard]] arena& frame_arena();

    /// Returns: a view of this heap that reports every allocation to `t` (one per subsystem).
    /// Requires: `t` and this heap outlive the view. (`Self` only defers naming the type until
    /// engine_heap is complete; leave it defaulted.)
    template <class Self = engine_heap>
    [[nodiscard]] tracked<allocator_ref<Self>> tracked_view(tracker& t) {
        return tracked<allocator_ref<Self>>(t, static_cast<Self&>(*this));
    }

    /// fork() support for whoever owns the process's heap (the malloc shim registers these with
    /// pthread_atfork): prepare takes every lock of every engine_heap, the parent releases them,
    /// the child releases them (only the forking thread exists there; other threads' caches stay
    /// unreachable, their blocks are still valid, and what those threads held cached is not reused
    /// in the child, as with glibc's malloc). The child has no purge thread until it starts one.
    static void prepare_fork() noexcept;
    static void after_fork_parent() noexcept;
    static void after_fork_child() noexcept;

private:
    friend struct engine_detail::block_source;
    using run = engine_detail::run;
    using thread_heap = engine_detail::thread_heap;

    // Entry points' slow paths (engine_heap.cpp; deallocate_slow and local_free_slow: small.cpp).
    [[nodiscard]] STRATA_NOINLINE void* allocate_slow(std::size_t size, std::size_t align) noexcept;
    STRATA_NOINLINE void deallocate_slow(void* p, std::uint32_t tag) noexcept;
    STRATA_NOINLINE void free_home(thread_heap* h, void* p, std::uint32_t tag) noexcept;
    STRATA_NOINLINE void free_without_cache(void* p, std::uint32_t tag) noexcept;
    STRATA_NOINLINE void local_free_slow(thread_heap* h, run* d) noexcept;

    /// Returns: a block of `size`'s class from h's current run; nullptr when its free list is empty.
    [[nodiscard]] STRATA_ALWAYS_INLINE static void* pop_cached(engine_detail::thread_heap* h,
                                                               std::size_t size) noexcept {
        using namespace engine_detail;
        const std::size_t c = class_of(size); // size_t: the counter's offset folds into its address
        run* r = h->current[c];
        free_block* b = r->free;
        if (STRATA_UNLIKELY(b == nullptr)) return nullptr;
        r->free = b->next;
        __builtin_prefetch(r->free);
        ++r->used;
        h->allocs[c].add(1);
        return b;
    }

    /// Effects: the owner's free of the small block `p` (tag `tag`): onto its run's free list.
    STRATA_ALWAYS_INLINE void free_own(thread_heap* h, void* p, std::uint32_t tag) noexcept {
        free_own(h, p, reinterpret_cast<std::uintptr_t>(p) - data_, tag);
    }
    /// Effects: free_own(h, p, tag), `off` being p - data_.
    STRATA_ALWAYS_INLINE void free_own(thread_heap* h, void* p, std::uintptr_t off,
                                       std::uint32_t tag) noexcept {
        using namespace engine_detail;
        run* d = runs_ + (off >> granule_shift);
        h->frees[tag_class(tag)].add(1);
        return_to_run(h, d - d->back, static_cast<free_block*>(p));
    }

    /// Effects: the block `b` of h's own run `d` goes back onto the run's free list (not counted:
    /// the caller counts the free, or did when the block was stashed).
    STRATA_ALWAYS_INLINE void return_to_run(thread_heap* h, run* d, engine_detail::free_block* b) noexcept {
        using namespace engine_detail;
        b->next = d->free;
        d->free = b;
        // The first free into a full run marks it (local_free_slow).
        if (STRATA_UNLIKELY(--d->used == 0 || d->where == run_list::full)) local_free_slow(h, d);
    }

    /// Effects: the small block `p` goes onto the stash of `h` (the freeing thread's cache) when
    /// the stash is on and has room and no stash choice is due; `remote`: p is in another thread's
    /// run (counted for choose_stash). A block of h's own run stays counted in its run's `used`.
    /// Returns: whether it did; else the free goes home (free_home).
    STRATA_ALWAYS_INLINE bool try_stash(thread_heap* h, void* p, std::uint32_t tag, bool remote) noexcept {
        using namespace engine_detail;
        if (!tag_is_small(tag) || !h->stash_on || stash_choice_due(h)) return false;
        const auto c = static_cast<unsigned>(tag_class(tag));
        run* st = &h->stash[c];
        // Full: a batch of its newest blocks, this one on top, to the depot. Over its cap (a dry
        // stash took its parked run's whole list) it keeps the thread's own blocks, and the free
        // goes home.
        if (const std::uint16_t n = stash_count(st); n >= stash_cap_[c])
            return n == stash_cap_[c] && depot_batch_[c] != 0 &&
                   depot_put(h, c, static_cast<free_block*>(p), remote);
        // A class the thread does not allocate (no current run) is not stashed: nothing would
        // take the blocks back out, and they would stay pinned (a consumer that only frees).
        if (h->current[c] == &empty_run) return false;
        ++h->window_frees[remote];
        h->frees[c].add(1);
        auto* b = static_cast<free_block*>(p);
        b->next = st->free;
        st->free = b;
        --st->used;
        if (h->current[c] != st) {
            h->parked[c] = h->current[c];
            h->current[c] = st;
        }
        return true;
    }

    // Thread caches (thread_cache.cpp).
    [[nodiscard]] thread_heap* thread_cache() noexcept;                // inline, in engine_internal.hpp
    [[nodiscard]] thread_heap* existing_thread_cache() const noexcept; // inline, likewise
    [[nodiscard]] thread_heap* make_thread_heap() noexcept;
    void abandon(thread_heap* h) noexcept;
    static void thread_exit(void*) noexcept;

    // Small tier (small.cpp).
    [[nodiscard]] STRATA_NOINLINE void* small_slow(thread_heap* h, unsigned c) noexcept;
    /// What the caller of collect does with the run next: allocates from it, or frees it when it
    /// came back whole (thread exit, the sweep of abandoned runs: its blocks are not threaded).
    enum class collect_for { reuse, release };
    void collect(thread_heap* h, run* r, collect_for use = collect_for::reuse) noexcept;
    void relist(thread_heap* h, run* d) noexcept;
    /// Returns: the head of the list in the thread_free word `w` (nullptr when `w` is 0).
    [[nodiscard]] engine_detail::free_block* remote_head(std::uint64_t w) const noexcept {
        return w == 0 ? nullptr
                      : reinterpret_cast<engine_detail::free_block*>(data_ +
                                                                     (w & engine_detail::remote_offset_mask));
    }
    void push_thread_free(engine_detail::free_block* b, run* d, unsigned cls) noexcept;
    void flush_stash(thread_heap* h) noexcept;
    void choose_stash(thread_heap* h) noexcept;
    [[nodiscard]] engine_detail::free_block* refill_stash(thread_heap* h, unsigned c) noexcept;
    // choose_stash runs at the stash_window-th remote free since the last choice, or (the stash
    // on) at the own_window-th free of the thread's own blocks through the stash path.
    static constexpr std::uint32_t stash_window = 256;
    static constexpr std::uint32_t own_window = 4 * stash_window;
    [[nodiscard]] static bool stash_choice_due(const thread_heap* h) noexcept {
        return (h->window_frees[1] + 1 == stash_window) | (h->window_frees[0] + 1 == own_window);
    }
    [[nodiscard]] bool check_stash(const thread_heap* h) const noexcept; // stats.cpp
    [[nodiscard]] bool cached_block_ok(const engine_detail::free_block* b, unsigned c) const noexcept;

    // Depot (depot.cpp).
    [[nodiscard]] STRATA_NOINLINE bool depot_put(thread_heap* h, unsigned c, engine_detail::free_block* b,
                                                 bool remote) noexcept;
    [[nodiscard]] engine_detail::free_block* depot_take(thread_heap* h, unsigned c) noexcept;
    void drain_depots(bool all) noexcept;
    [[nodiscard]] bool check_depots() const noexcept;
    [[nodiscard]] bool check_run_lists(std::size_t owned, std::size_t unowned) const noexcept;
    [[nodiscard]] bool walk_full(thread_heap* h, unsigned c) noexcept;
    void take_freed(thread_heap* h, unsigned c) noexcept;
    void retire(thread_heap* h, run* r) noexcept;
    void prefer_resident(thread_heap* h, std::size_t n, engine_detail::span_kind kind) noexcept;
    void note_busy_classes(thread_heap* h) noexcept;
    bool release_idle_runs(thread_heap* h) noexcept;
    run* new_run(thread_heap* h, unsigned c) noexcept;
    run* adopt(thread_heap* h, unsigned c) noexcept;
    /// Effects: collects the remote frees of every abandoned run and frees the empty ones.
    void sweep_abandoned() noexcept;
    /// Returns: true when populate_after_bytes is under one granule, or h's runs have reached it and
    /// class c has a run besides its current one or that run is `half_carved` (then the run's carves
    /// fault it in from there on).
    [[nodiscard]] bool thread_populates(const thread_heap* h, unsigned c, bool half_carved) const noexcept;
    void fill_ahead(run* r, std::size_t from, std::size_t to) noexcept; // faults in what a carve reaches

    // Medium tier (medium.cpp) and its purging (purge.cpp).
    void* medium_allocate(std::size_t size, std::size_t align) noexcept;
    void* medium_handed_out(void* p, std::size_t usable) noexcept; // accounting, mark cleared
    void medium_deallocate(void* p, run* head) noexcept;
    void medium_release(void* p, run* head) noexcept;
    void release_empty_arenas(bool all, std::uint32_t now) noexcept;
    [[nodiscard]] bool medium_over_cap(std::size_t freed) noexcept;
    [[nodiscard]] bool medium_resize_in_place(void* p, run* head, std::size_t new_size) noexcept;
    static void purge_medium(void* p, std::size_t usable) noexcept;
    /// Returns: the bytes of live medium and large blocks now.
    [[nodiscard]] std::size_t big_live() const noexcept {
        return large_bytes_.load(std::memory_order_relaxed) + medium_in_use_.load(std::memory_order_relaxed);
    }
    /// Returns: the most bytes of live medium and large blocks within the last one or two decay
    /// windows: a level unloaded keeps its memory warm for the next one until it decays.
    [[nodiscard]] std::size_t big_recent() const noexcept {
        return std::max({big_live(), big_peak_.load(std::memory_order_relaxed),
                         big_peak_before_.load(std::memory_order_relaxed)});
    }
    /// Effects: raises the current window's peak to big_live().
    void note_big_live() noexcept {
        const std::size_t live = big_live();
        std::size_t peak = big_peak_.load(std::memory_order_relaxed);
        while (live > peak && !big_peak_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
        }
    }
    /// Returns: the resident bytes big free medium blocks may hold: medium_retain_bytes plus
    /// big_recent() (a heap that churns big blocks keeps its free ones warm).
    [[nodiscard]] std::size_t medium_cap() const noexcept {
        return options_.medium_retain_bytes + big_recent();
    }
    /// Returns: the granules dirty free spans may hold: retain_bytes plus the most granules in use
    /// within the last one or two decay windows (0 when retain_bytes is 0). Requires: span_lock_.
    [[nodiscard]] std::size_t span_cap() const noexcept {
        return retain_granules_ == 0 ? 0 : retain_granules_ + std::max(span_peak_, span_peak_before_);
    }

    // Decay (purge.cpp). A pass purges what decayed (`decay`), what exceeds a cap (`cap`), or all.
    enum class purge_pass : std::uint8_t { decay, cap, all };
    [[nodiscard]] std::uint64_t now_ms() const noexcept;
    [[nodiscard]] std::uint32_t now_tick() const noexcept; // ms since construction
    std::size_t purge_free_medium(purge_pass pass, std::uint32_t now, std::uint64_t deadline_ns,
                                  bool let_go = false) noexcept;
    std::size_t purge_spans(purge_pass pass, std::uint32_t now, std::uint64_t deadline_ns,
                            std::size_t max_granules = SIZE_MAX, bool let_go = false) noexcept;
    void span_return(run* r) noexcept;
    /// What a large call gives back besides a cap's excess (purge_for_big_call): nothing, as many
    /// decayed granules as it took or freed, or as many free granules of any age.
    enum class big_purge : std::uint8_t { cap_only, decayed, any_age };
    void purge_for_big_call(std::size_t granules, big_purge what) noexcept;
    [[nodiscard]] bool quiet_big_call() noexcept;
    std::size_t oldest_dirty_spans(run** out, std::size_t max) const noexcept;
    run* oldest_dirty_span() noexcept;
    template <class F>
    void each_looked_at(unsigned b, F&& f) const noexcept;
    std::size_t purge_run_blocks(thread_heap* h, std::uint32_t now, std::uint64_t deadline_ns) noexcept;
    void hand_off(engine_detail::free_block* head, engine_detail::free_block* tail, std::uint32_t n,
                  std::size_t bytes) noexcept;
    std::size_t purge_handed(std::uint64_t deadline_ns) noexcept;
    STRATA_NOINLINE void walk_runs_asked(thread_heap* h) noexcept;
    /// Effects: walk_runs_asked(h) when a purge thread's step or another thread's end_frame() asked
    /// since h's last such walk.
    void walk_runs_if_asked(thread_heap* h) noexcept {
        if (const std::uint32_t asked = runs_asked_.load(std::memory_order_relaxed);
            STRATA_UNLIKELY(asked != h->runs_asked)) {
            h->runs_asked = asked;
            walk_runs_asked(h);
        }
    }
    /// Effects: a maintenance step; `own` (the calling thread's cache, or nullptr) also purges the
    /// decayed free blocks inside its runs; `drain`: the depots send home what no thread needed
    /// since the last drain (drain_depots).
    std::size_t decay_step(std::uint64_t deadline_ns, thread_heap* own = nullptr, bool drain = true) noexcept;
    /// Effects: a maintenance step when one is due (step_interval_ after the last step, a quarter of
    /// that after the one before was due while a backlog lasts); call with no lock of the heap held.
    /// `own`: as decay_step.
    void maybe_decay(thread_heap* own = nullptr) noexcept;
    static void* purge_thread_main(void* self) noexcept;

    // Large tier (large.cpp).
    void* large_allocate(std::size_t size, std::size_t align, bool* clean) noexcept;
    void large_deallocate(void* p, run* head) noexcept;
    void* take_kept(thread_heap* h, std::size_t n) noexcept;
    void keep(thread_heap* h, run* head) noexcept;
    void release_kept(bool all, std::uint32_t now) noexcept;
    void release_kept_of(thread_heap* h) noexcept;
    [[nodiscard]] bool large_resize_in_place(run* head, std::size_t new_size) noexcept;
    void cut_tail(run* head, std::size_t n, std::uint32_t freed_at) noexcept;

    // Span tier (span.cpp; span_lock_ held).
    run* span_alloc(std::size_t n, engine_detail::span_kind kind, bool* clean) noexcept;
    [[nodiscard]] run* span_fit(std::size_t n, engine_detail::span_kind kind) const noexcept;
    [[nodiscard]] run* span_best_fit(std::size_t n) const noexcept;
    [[nodiscard]] run* span_low_fit(std::size_t n) const noexcept;
    [[nodiscard]] run* span_any_fit(std::size_t n) const noexcept;
    [[nodiscard]] run* free_before(std::size_t g) const noexcept;
    static void append(run* left, const run* right) noexcept;
    /// Returns: the granules of free span `r` that may be resident (its dirty part).
    [[nodiscard]] static std::size_t dirty_granules(const run* r) noexcept {
        return r->dirty ? r->granules - r->clean_tail : 0;
    }
    void span_free(run* head, bool dirty) noexcept { span_free(head, dirty, now_tick()); }
    void span_free(run* head, bool dirty, std::uint32_t freed_at) noexcept;
    void span_file(run* head, bool oldest = false) noexcept;
    void bin_insert(run* head, bool oldest = false) noexcept;
    void bin_remove(run* head) noexcept;
    bool grow_commit(std::size_t granules) noexcept;
    void mark_span(run* head, std::size_t n, engine_detail::span_kind kind) noexcept;
    [[nodiscard]] std::size_t index_of(const run* r) const noexcept {
        return static_cast<std::size_t>(r - runs_);
    }
    [[nodiscard]] std::byte* address_of(const run* r) const noexcept {
        return reinterpret_cast<std::byte*>(data_ + (index_of(r) << engine_detail::granule_shift));
    }
    /// Effects: sets the tag of every granule of the small run `r` (owner `h`, none when nullptr).
    void set_tag(const run* r, const thread_heap* h) noexcept {
        fill_tags(index_of(r), r->granules,
                  engine_detail::run_tag(h != nullptr ? h->id : engine_detail::no_owner, r->cls));
    }
    /// Effects: sets the tags of granules [first, first + n) to `tag`.
    void fill_tags(std::size_t first, std::size_t n, std::uint32_t tag) noexcept {
        for (std::size_t g = first; g < first + n; ++g)
            tags_[g].store(tag, std::memory_order_relaxed);
    }
    /// Returns: the head descriptor of the span holding `p`. Requires: owns(p).
    [[nodiscard]] run* head_of(const void* p) const noexcept {
        run* d = runs_ + ((reinterpret_cast<std::uintptr_t>(p) - data_) >> engine_detail::granule_shift);
        return d - d->back;
    }

    // Every lock of this heap, in order (check, fork; engine_heap.cpp).
    void lock_all() noexcept;
    void unlock_all() noexcept;

    // Hot fields first (one cache line for the fast paths).
    std::uintptr_t data_ = 0; // first data granule
    std::uintptr_t data_size_ = 0;
    run* runs_ = nullptr;                        // descriptor per granule
    std::atomic<std::uint32_t>* tags_ = nullptr; // run_tag per granule
    std::uint32_t epoch_ = 0;
    unsigned slot_ = 0;

    engine_options options_;
    virtual_memory vm_;
    std::size_t granule_count_ = 0;
    std::size_t meta_bytes_ = 0;  // descriptor and tag arrays' bytes at the start of vm_
    std::size_t tags_offset_ = 0; // tags_ - vm_.data()
    std::size_t data_offset_ = 0; // data_ - vm_.data()

    mutable spinlock heaps_lock_;
    mutable spinlock abandon_lock_;
    mutable spinlock medium_lock_;
    mutable spinlock span_lock_;

    // heaps_lock_
    thread_heap* heaps_ = nullptr;      // in use
    thread_heap* free_heaps_ = nullptr; // recycled
    std::byte* heap_cursor_ = nullptr;  // next uncarved thread_heap in the current meta span
    std::byte* heap_end_ = nullptr;
    std::uint32_t heap_ids_ = 0; // thread_heap records made (the last one's id)
    std::uint64_t retired_allocs_[engine_detail::class_count] = {};
    std::uint64_t retired_frees_[engine_detail::class_count] = {};

    // abandon_lock_
    run* abandoned_[engine_detail::class_count] = {};
    std::atomic<std::uint32_t> abandoned_count_[engine_detail::class_count] = {};

    // medium_lock_
    static constexpr unsigned max_arenas = 256;
    run* arenas_[max_arenas] = {};
    unsigned arena_count_ = 0;
    unsigned arena_hint_ = 0;
    std::size_t medium_dirty_ = 0;    // bytes of medium frees since the last sweep
    std::size_t medium_resident_ = 0; // resident bytes of big free medium blocks at the last sweep
    std::size_t arena_bytes_ = 0;     // bytes of the arenas' spans
    std::uint32_t medium_purges_ = 0; // purges that let the lock go, a block taken out of an arena

    // span_lock_
    static constexpr unsigned bin_count = 64;
    run* bins_[bin_count] = {};      // dirty spans first, then clean ones
    run* bin_tails_[bin_count] = {}; // each bin's last span
    std::uint64_t bin_map_ = 0;
    // The oldest dirty free spans as of the last walk of the bins, oldest first
    // (oldest_dirty_span()). They stay the oldest while none of them leaves the bins and no dirty
    // span older than the newest of them enters: a step then needs no walk.
    static constexpr std::size_t oldest_max = 64;
    run* oldest_[oldest_max] = {};
    std::uint32_t oldest_count_ = 0;  // spans the walk found
    std::uint32_t oldest_next_ = 0;   // the first of them still dirty, as far as known
    std::uint32_t oldest_newest_ = 0; // freed_at of the last of them
    bool oldest_valid_ = false;       // the list is still the oldest
    bool oldest_whole_ = false;       // ... and holds every dirty span
    std::size_t top_ = 0;             // granules ever handed out (spans tile [0, top_))
    std::size_t commit_top_ = 0;      // granules committed (data and descriptors)
    std::size_t dirty_free_ = 0;      // granules of dirty free spans
    std::size_t free_granules_ = 0;   // granules of all free spans (those out for a purge too)
    std::uint32_t span_purges_ = 0;   // purges that let the lock go, their spans out of the bins
    std::size_t retain_granules_ = 0;
    std::size_t span_peak_ = 0;        // most granules in use (top_ - free_granules_) this window
    std::size_t span_peak_before_ = 0; // ... in the window before
    std::size_t populate_granules_ = 0;
    std::size_t keep_granules_ = 0;             // largest span a thread keeps (large_keep_bytes)
    std::atomic<std::size_t> kept_granules_{0}; // every thread's kept span (written under span_lock_)
    std::uint16_t stash_cap_[engine_detail::class_count] = {}; // blocks a thread stashes per class

    // Depot (depot.cpp): per class, batches of free blocks that full stashes handed over, newest
    // on top; stashes take from the top, maintenance steps send the bottom home. A batch is
    // depot_batch_[c] (>= 8) blocks linked through their first word; the first block's second word
    // links the batch below, the second block's second word the batch above. Its blocks stay
    // counted in their runs' `used`, as stashed ones do, so no run can empty or change class under
    // them.
    struct alignas(64) depot_slot {
        spinlock lock;
        std::uint32_t low = 0;                       // fewest batches held since the last step
        std::atomic<std::uint32_t> batches{0};       // held (read without the lock as a hint)
        std::atomic<std::uint64_t> puts{0};          // batches ever put (engine_class_stats)
        engine_detail::free_block* top = nullptr;    // the newest batch's first block
        engine_detail::free_block* bottom = nullptr; // the oldest batch's first block
    };
    depot_slot depot_[engine_detail::class_count];
    std::uint16_t depot_batch_[engine_detail::class_count] = {}; // blocks a batch (0: no depot)
    std::uint32_t depot_max_[engine_detail::class_count] = {};   // batches a depot holds at most
    std::atomic<unsigned> depot_drain_from_{0};                  // class a step's drain starts at
    std::atomic<bool> depot_draining_{false};                    // a drain runs (one at a time)
    std::atomic<std::uint32_t> drained_at_{0};                   // tick of the last step's drain

    // Decay (purge.cpp).
    std::uint64_t clock_origin_ = 0;              // clock_ms() at construction
    std::uint32_t step_interval_ = 0;             // ms between the slow paths' steps
    std::atomic<std::uint32_t> next_step_{0};     // tick at which the slow paths step next
    std::atomic<std::size_t> purged_bytes_{0};    //
    std::atomic<std::size_t> steps_{0};           //
    std::atomic<std::size_t> frames_{0};          //
    std::atomic<std::size_t> big_peak_{0};        // most live medium + large bytes this window
    std::atomic<std::size_t> big_peak_before_{0}; // ... in the window before
    std::atomic<std::uint32_t> window_start_{0};  // tick the current window began
    // Ticks of the last quiet_calls large calls (allocate, free, resize in place), the oldest next
    // to be replaced (quiet_big_call).
    static constexpr unsigned quiet_calls = 4;
    std::atomic<std::uint32_t> big_call_ticks_[quiet_calls] = {};
    std::atomic<std::uint32_t> big_calls_{0};
    std::atomic<bool> thread_stop_{false};         // purge thread
    std::atomic<bool> thread_running_{false};      //
    pthread_t thread_{};                           //
    std::chrono::milliseconds thread_period_{};    //
    std::chrono::microseconds thread_budget_{};    //
    std::atomic<std::uint32_t> frame_asked_at_{0}; // tick an end_frame last bumped runs_asked_
    std::atomic<std::uint32_t> last_frame_{0};     // tick of the last end_frame (frames_ != 0)
    // Bumped by each purge thread step and by end_frame (at most every decay_ms): a thread
    // whose runs_asked differs walks its own runs at its next small refill, free of its own that
    // empties a run or lands in a full one, or medium or large free (the purge thread and the
    // thread calling end_frame cannot walk them: they are the owner's). On a line of its own: those
    // paths read it, and the counters around it change often.
    alignas(64) std::atomic<std::uint32_t> runs_asked_{0};
    // Due free blocks that owners' walks took off their runs' free lists for the purge thread to
    // purge (hand_off, purge_handed): a stack linked through the blocks. The purge thread holds
    // handoff_lock_ while blocks are in its hands, so a fork finds each one here or home again.
    alignas(64) std::atomic<engine_detail::free_block*> handoff_{nullptr};
    std::atomic<std::uint32_t> handoff_count_{0}; // blocks on it (about)
    std::atomic<bool> handoff_open_{false};       // a purge thread runs and takes them
    std::atomic<std::size_t> handed_bytes_{0};    //
    mutable spinlock handoff_lock_;
    alignas(64) std::atomic<std::size_t> large_bytes_{0};
    std::atomic<std::size_t> large_live_{0};
    std::atomic<std::size_t> large_total_{0};
    // The medium_ counters are written under medium_lock_ only (add_under_lock).
    std::atomic<std::size_t> medium_total_{0};
    std::atomic<std::size_t> medium_count_{0};
    std::atomic<std::size_t> medium_in_use_{0};
    std::atomic<std::size_t> class_committed_[engine_detail::class_count] = {};
    // Frees by a thread past its exit, or one for which no cache could be made.
    std::atomic<std::uint64_t> remote_frees_[engine_detail::class_count] = {};

    engine_detail::block_source source_{this};
};

} // namespace strata
