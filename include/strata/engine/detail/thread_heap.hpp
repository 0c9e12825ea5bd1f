#pragma once
// The records engine_heap's inline fast paths read: the per-granule run descriptor and run tag, the
// per-thread cache (thread_heap) and the thread-local slot that finds it. Internal to the engine
// family; they are in a header only because engine_heap::allocate and deallocate are inline.
//
// Exports (strata::engine_detail): free_block, span_kind, run_list, run, run_tag (no_owner,
// not_small_tag, tag_owner, tag_is_small, tag_class), stash_count, tls_slot, stash_flag, tls,
// counter, thread_heap, empty_run, block_source.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "strata/core/config.hpp"
#include "strata/engine/detail/size_class.hpp"
#include "strata/engine/fwd.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/memory_source.hpp"

namespace strata::engine_detail {

/// A free small block: the link is stored in the block itself.
struct free_block {
    free_block* next;
};

struct thread_heap;

/// What a span holds. `kept`: a large block's span that a thread freed and keeps for its own next
/// large request (thread_heap::kept); to the rest of the heap it is neither free nor a block.
/// `purging`: a free span that a purge took out of the bins while the OS drops its pages with the
/// span lock let go (engine_heap::purge_spans): nothing takes or merges with it until it is filed
/// back.
enum class span_kind : std::uint8_t { free, small, medium, large, meta, kept, purging };
/// Which of its owner's lists holds a run. `freed`: a full run the owner freed blocks into since it
/// filled.
enum class run_list : std::uint8_t { none, partial, full, freed, cache };
/// A span's fill: how much of its memory was faulted in ahead of use (pages given back since, by an
/// in-run purge, fault again). fill_lazy: pages fault at their first touch. fill_growing(k) (small
/// runs only): its carves faulted in its first k granules (past the point where a lazy run turned
/// growing), and each carve faults in the granules its blocks reach, so no allocation pays for a
/// whole run. fill_whole: every page was (free spans are lazy or whole).
inline constexpr std::uint8_t fill_lazy = 0;
inline constexpr std::uint8_t fill_whole = 0xff;
[[nodiscard]] constexpr std::uint8_t fill_growing(std::size_t granules_filled) noexcept {
    return static_cast<std::uint8_t>(1 + granules_filled);
}
/// Returns: the granules a growing run's fill `f` says were faulted in.
[[nodiscard]] constexpr std::size_t fill_granules(std::uint8_t f) noexcept { return std::size_t{f} - 1; }

/// One descriptor per granule; only the first granule's descriptor of a span (its head) is
/// meaningful, the others of a small or medium span say how far back the head is.
struct alignas(64) run {
    union {                                    //
        free_block* free = nullptr;            // small: owner's free list
        std::uint64_t clean_tail;              // dirty free span: granules at its end purged
    };                                         //
    std::uint16_t used = 0;                    // blocks out, as far as the owner knows
    std::uint16_t capacity = 0;                // blocks that fit
    std::uint16_t carved = 0;                  // blocks ever threaded into the free list
    span_kind kind = span_kind::free;          //
    run_list where = run_list::none;           // which list of the owner holds it
    std::uint32_t back = 0;                    // granules to the head descriptor
    std::uint32_t granules = 0;                // span length (head only)
    union {                                    //
        std::uint32_t block_size = 0;          // small: block size
        std::uint32_t freed_at;                // dirty free span: tick it was freed at; empty
                                               // medium arena: tick it emptied at
    };                                         //
    std::uint8_t cls = 0;                      // small: class
    union {                                    // read only for the span's own kind:
        bool dirty = false;                    // free span: may hold resident pages
        std::uint8_t walk_round;               // small: the in-run purge's round that saw it last
    };                                         //
    std::uint8_t fill = fill_lazy;             // how much was faulted in (fill_growing, fill_whole)
    std::uint8_t purge_sig = 0;                // small: free list as of its last in-run purge
    std::atomic<thread_heap*> owner{nullptr};  // small: the heap that may pop from `free`
    std::atomic<std::uint64_t> thread_free{0}; // small: frees from other threads (remote_count)
    run* next = nullptr;                       // list links (owner lists, free bins)
    run* prev = nullptr;                       //
};
static_assert(sizeof(run) == 64);

/// A run's thread_free word: the blocks other threads freed into the run, as the list head's offset
/// from the heap's data start (low 48 bits) and the list's length (high 16 bits; 0: empty). The
/// owner takes the list and its length in one exchange, so it knows without a walk when the list
/// holds every block still out (collect then threads the run afresh). A run holds at most 65,535
/// blocks, a heap at most 2^48 bytes.
inline constexpr unsigned remote_count_shift = 48;
inline constexpr std::uint64_t remote_offset_mask = (std::uint64_t{1} << remote_count_shift) - 1;
/// Returns: the length of the list in the thread_free word `w`.
[[nodiscard]] constexpr std::uint16_t remote_count(std::uint64_t w) noexcept {
    return static_cast<std::uint16_t>(w >> remote_count_shift);
}

/// Returns: blocks on the stash `st` (its `used` counts down from 0 as they arrive).
[[nodiscard]] inline std::uint16_t stash_count(const run* st) noexcept {
    return static_cast<std::uint16_t>(0u - st->used);
}

/// A granule's tag, kept beside the descriptors in a dense array that only changes when a run
/// changes hands: the owning thread_heap's id over the class + 1 for a small run, no_owner over 0
/// for every other granule. A free compares the tag's owner with its own thread's id (a slot
/// without a cache has id 0, which no tag holds); only the owner writes its id into a tag, and it
/// replaces it with no_owner before it lets the run go.
inline constexpr std::uint32_t no_owner = 0xFFFFFF;
[[nodiscard]] constexpr std::uint32_t run_tag(std::uint32_t owner_id, unsigned cls) noexcept {
    return owner_id << 8 | (cls + 1);
}
inline constexpr std::uint32_t not_small_tag = no_owner << 8;
[[nodiscard]] constexpr std::uint32_t tag_owner(std::uint32_t tag) noexcept { return tag >> 8; }
[[nodiscard]] constexpr bool tag_is_small(std::uint32_t tag) noexcept { return (tag & 0xff) != 0; }
/// Requires: tag_is_small(tag). (Computed in size_t: as an array index, the - 1 then folds into
/// the address's displacement.)
[[nodiscard]] constexpr std::size_t tag_class(std::uint32_t tag) noexcept {
    return std::size_t{tag & 0xff} - 1;
}

/// A thread's slot for one engine_heap instance: valid when `epoch` matches the instance's. `id`
/// is heap->id, here so that a free compares it with a run's tag without a second load, with
/// stash_flag set while the heap's stash is on (no tag's owner then matches it).
struct tls_slot {
    thread_heap* heap;
    std::uint32_t epoch;
    std::uint32_t id;
};

inline constexpr std::uint32_t stash_flag = std::uint32_t{1} << 31;

/// Per-thread caches, one slot per live engine_heap (initial-exec: one fs-relative load).
extern __thread tls_slot tls[max_instances] __attribute__((tls_model("initial-exec")));

// The sanitizer builds count with the relaxed atomic load and store, which they can check.
#if defined(__x86_64__) && !STRATA_ASAN && !defined(__SANITIZE_THREAD__)
#if defined(__has_feature)
#if !__has_feature(thread_sanitizer)
#define STRATA_ENGINE_ASM_COUNTER 1
#endif
#else
#define STRATA_ENGINE_ASM_COUNTER 1
#endif
#endif
#ifndef STRATA_ENGINE_ASM_COUNTER
#define STRATA_ENGINE_ASM_COUNTER 0
#endif

/// Counter only its owner writes and anyone may read: no lock prefix, and on x86-64 one `add` to
/// memory.
struct counter {
    std::atomic<std::uint64_t> v{0};
    STRATA_ALWAYS_INLINE void add(std::uint64_t n) noexcept {
#if STRATA_ENGINE_ASM_COUNTER
        // One `add` to memory: the compiler never fuses an atomic load and store into one. An
        // aligned 8-byte store is single-copy atomic on x86, so readers still see whole values
        // (only the owner writes).
        asm("addq %1, %0" : "+m"(*reinterpret_cast<std::uint64_t*>(&v)) : "er"(n));
#else
        v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
#endif
    }
    [[nodiscard]] std::uint64_t get() const noexcept { return v.load(std::memory_order_relaxed); }
};

/// One thread's cache for one engine_heap: the runs of each class it allocates from, its counters,
/// its empty runs and its frame arena. Only the owning thread writes it, except `pending`.
struct thread_heap {
    // Bit c: a walk of the full runs of class c stopped at its limit and resumes at resume[c].
    std::uint64_t full_walk;
    std::uint32_t id;            // this record's owner id in run tags (1 .. no_owner - 1; kept when reused)
    run* current[class_count];   // the run the fast path pops from (the empty sentinel when none)
    counter allocs[class_count]; //
    counter frees[class_count];  //
    run* partial[class_count];   // runs with free blocks
    run* full[class_count];      // runs the owner found exhausted
    run* freed[class_count];     // full runs the owner freed into since (newest first)
    run* spare[class_count];     // an empty run kept in `partial` (at most one per class)
    run* resume[class_count];    // where the next walk of `full` starts (when still in it)
    std::atomic<std::uint32_t> pending[class_count]; // a full run got a free from another thread
    // Blocks of other threads' runs that this thread freed, blocks of its own runs it freed while
    // the stash was on, and blocks of its own parked run that a dry stash took over (refill_stash);
    // its own stay counted in their runs' `used`. While a class's stash holds blocks, current[c]
    // points at stash[c] (a run record of this heap, not of the heap's memory) and the fast path
    // pops from it; the real current run waits in parked[c]. stash[c].used counts down from 0 as
    // blocks arrive and back up as they leave.
    run* parked[class_count];
    // Frees since the last stash choice (choose_stash): [0] of h's own blocks that went through
    // the stash path (only while it is on), [1] of other threads' blocks.
    std::uint32_t window_frees[2] = {};
    bool stash_on = false;        // whether frees go to the stash (own and remote)
    std::uint64_t frees_mark = 0; // sum of frees[] at that time
    run stash[class_count];
    counter run_bytes;                      // committed bytes of the runs this heap owns
    run* cache = nullptr;                   // empty runs kept for reuse
    std::size_t cache_count = 0;            //
    std::uint32_t slow_calls = 0;           // small_slow calls (a step every 64)
    std::uint32_t runs_asked = 0;           // engine's runs_asked_ when this heap last walked its runs for it
    std::uint32_t class_seen[class_count];  // slow_calls when class c was last seen allocating
    std::uint32_t allocs_seen[class_count]; // allocs[c] then (low 32 bits)
    std::uint32_t cache_seen = 0;           // slow_calls when a run last left `cache`
    std::uint32_t purge_class = 0;          // where the next in-run purge walk starts
    std::uint8_t purge_round = 1;           // its round: a run it saw this round waits for the next
    std::uint64_t shrunk_seen = 0;          // bit c - first purged class: shrunk known this round
    std::uint64_t shrunk = 0;               // ... and the class has shrunk (class_shrunk)
    // The span of the last large block this thread freed, kept for its next large request (its
    // pages are resident and in this core's caches), and the tick it was kept at. The owner swaps it;
    // maintenance steps of any thread take it back to the span pool once it is decay_ms old.
    std::atomic<run*> kept{nullptr};
    std::atomic<std::uint32_t> kept_at{0};
    std::uint32_t kept_misses = 0; // run requests with no resident fit since `kept` was kept
    engine_heap* engine = nullptr;
    thread_heap* next_heap = nullptr; // engine's list of heaps in use, or of free ones
    thread_heap* prev_heap = nullptr;
    bool has_arena = false;
    bool giving_up = false; // abandon() runs: its walks hand no block to the purge thread
    alignas(arena) unsigned char arena_storage[sizeof(arena)];
};

/// The run every empty `current` slot points to: its free list is always empty.
extern run empty_run;

/// memory_source over an engine_heap (frame arenas take their blocks from it).
struct block_source {
    engine_heap* heap = nullptr;
    [[nodiscard]] memory_block allocate_block(std::size_t size, std::size_t align) noexcept;
    void deallocate_block(memory_block b) noexcept;
};

} // namespace strata::engine_detail
