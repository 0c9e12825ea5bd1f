#pragma once
// pool: an untyped fixed-size pool. Every slot has the same size and alignment; free slots are
// threaded on an intrusive singly linked list, so allocate and deallocate are one pointer swap.
// Optionally grows by chunks taken from a memory source.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/config.hpp"
#include "strata/core/poison.hpp"
#include "strata/core/stats.hpp"
#include "strata/source/memory_source.hpp"

// At checks >= 1 (per-slot state bits) and under ASan (poisoned free slots) allocate and deallocate
// leave the inline path; at checks 0 without ASan they are the bare free-list swap.
#if STRATA_CHECKS >= 1 || STRATA_ASAN
#define STRATA_POOL_CHECKED_PATH 1
#else
#define STRATA_POOL_CHECKED_PATH 0
#endif

namespace strata {

/// Growth settings for a pool that takes chunks from a memory source.
struct pool_options {
    /// Slots per chunk taken from the source; 0 = as many as fit in 64 KiB, at least 8.
    std::size_t slots_per_chunk = 0;
    /// The pool never grows beyond this many slots in total (the caller's buffer included).
    std::size_t max_slots = std::numeric_limits<std::size_t>::max();
};

/// A fixed-size pool.
///
/// Slot stride = max(slot_size, sizeof(void*)) rounded up to the slot alignment (itself at least
/// alignof(void*)). Free slots carry the free-list link in their first word: zero per-slot overhead
/// at checks 0. Each chunk's header (where it is, how many slots) is kept in the pool, out of reach
/// of a slot overrun; the chunk keeps a header-sized redzone after its slots (poisoned under ASan)
/// and, at checks >= 1, one state bit per slot after that. Not thread-safe. Cache-line aligned:
/// the hot members share one line, and size_class_pool indexes its pools with a shift.
///
/// Bad input:
///  - construction with slot_size 0 or a non-power-of-two alignment: the pool is invalid
///    (`valid()` false) and every allocate returns nullptr. A slot_size smaller than a pointer is
///    rounded up to a pointer (documented, not an error).
///  - allocate(size, align) with size 0, size > slot_size(), align not a power of two or larger
///    than slot_align(): nullptr, no state change.
///  - deallocate of nullptr: no-op.
///  - deallocate of a foreign pointer, a pointer into the middle of a slot, or a slot already free:
///    reported at checks >= 1 (foreign_pointer / foreign_pointer / double_free) and ignored;
///    undefined at checks 0.
///  - sized deallocate naming a size larger than slot_size(): size_mismatch at checks >= 1.
///  - a write into a free slot's first word (its free-list link; a use after free): at checks >= 1
///    found when the slot is handed out again, reported as corruption, and the free list rebuilt
///    from the state bits, so no live slot or foreign address is handed out (a link bent to another
///    free slot passes, and strands the slots it skips until reset()); undefined at checks 0. At
///    checks 2 writes past the link are reported too.
class alignas(64) pool {
    struct chunk;

public:
    /// Effects: a pool whose slots are carved from `buffer`; it never grows. Requires: `buffer`
    /// outlives the pool. A buffer too small for one slot and the chunk header gives capacity 0.
    pool(std::size_t slot_size, std::size_t slot_align, std::span<std::byte> buffer) noexcept
        : pool(slot_size, slot_align, buffer, source_ref{}, pool_options{}) {}

    /// Effects: a pool that takes chunks of slots from `source` on demand (the first on first use).
    pool(std::size_t slot_size, std::size_t slot_align, source_ref source, pool_options options = {}) noexcept
        : pool(slot_size, slot_align, {}, source, options) {}

    /// Effects: a pool that uses `buffer` first, then grows from `source` (which may be empty).
    pool(std::size_t slot_size, std::size_t slot_align, std::span<std::byte> buffer, source_ref source,
         pool_options options) noexcept;

    pool(pool&& other) noexcept;
    pool& operator=(pool&& other) noexcept;
    pool(const pool&) = delete;
    pool& operator=(const pool&) = delete;

    /// Effects: returns every chunk to the source. Live slots dangle (no leak report: an untyped
    /// pool may be released in bulk; object_pool reports leaks).
    ~pool();

    /// Returns: one slot (slot_size() bytes aligned to slot_align()), or nullptr when the pool is
    /// invalid, exhausted and cannot grow. Complexity: O(1); a growth step calls the source once.
    [[nodiscard]] STRATA_ALWAYS_INLINE void* allocate() noexcept {
        void* p = free_;
        if (STRATA_LIKELY(p != nullptr)) {
#if STRATA_POOL_CHECKED_PATH
            return take_checked(p);
#else
            free_ = *static_cast<void**>(p);
            return p;
#endif
        }
        return allocate_slow();
    }

    /// Returns: allocate() when 0 < size <= slot_size() and align is a power of two <=
    /// slot_align(); otherwise nullptr (no state change). Complexity: O(1).
    [[nodiscard]] STRATA_ALWAYS_INLINE void* allocate(std::size_t size,
                                                      std::size_t align = default_alignment) noexcept {
        if (STRATA_LIKELY(size - 1 < slot_size_ && (align & (align - 1)) == 0 && align - 1 < slot_align_))
            return allocate();
        return nullptr;
    }

    /// Effects: returns slot `p` to the pool; nullptr is a no-op. Requires: `p` came from this pool
    /// and is live (violations: see the class comment). Complexity: O(1) (O(log chunks) at checks >= 1).
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept {
#if STRATA_POOL_CHECKED_PATH
        give_back_checked(p);
#else
        if (STRATA_UNLIKELY(p == nullptr)) return;
        // No counters here: a counter bump is a store-to-load chain through memory and costs about
        // as much as the free list itself. live() counts the free list.
        *static_cast<void**>(p) = free_;
        free_ = p;
#endif
    }

    /// Effects: deallocate(p); at checks >= 1 a `size` larger than slot_size() is a size_mismatch
    /// violation (reported, the call ignored).
    void deallocate(void* p, std::size_t size, std::size_t /*align*/ = default_alignment) noexcept {
#if STRATA_CHECKS >= 1
        if (p != nullptr && !verify_size(p, size)) return;
#else
        (void)size;
#endif
        deallocate(p);
    }

    /// Returns: true when `p` lies in a slot of this pool (anywhere inside it). Complexity:
    /// O(log chunks).
    [[nodiscard]] bool owns(const void* p) const noexcept { return find_chunk(p) != nullptr; }

    /// Returns: true when `p` is the start of a live slot of this pool. At checks 0 slot state is not
    /// kept, so it answers owns(p) && p is a slot start. Complexity: O(log chunks).
    [[nodiscard]] bool is_live(const void* p) const noexcept;

    /// Effects: at checks >= 1, reports the violation deallocate(p) would report. Returns: true when
    /// deallocate(p) would be accepted (always true at checks 0). object_pool calls it before it runs
    /// a destructor.
    [[nodiscard]] bool verify_live(const void* p) const noexcept;

    /// Effects: every slot becomes free again (live slots dangle); chunks are kept. Complexity:
    /// O(slots).
    void reset() noexcept;

    /// Returns: true when the pool was constructed with a usable slot size and alignment.
    [[nodiscard]] bool valid() const noexcept { return slot_size_ != 0; }
    /// Returns: the largest size allocate(size, align) serves (the stride: the rounding is usable).
    [[nodiscard]] std::size_t slot_size() const noexcept { return slot_size_; }
    /// Returns: the alignment every slot has.
    [[nodiscard]] std::size_t slot_align() const noexcept { return slot_align_; }
    /// Returns: slots handed out and not yet returned. O(1) when allocate/deallocate keep counters
    /// (checks >= 1 or ASan); at checks 0 the hot path keeps none and this walks the free list, O(free).
    [[nodiscard]] std::size_t live() const noexcept;
    /// Returns: slots the pool holds now (live and free).
    [[nodiscard]] std::size_t capacity() const noexcept { return slots_; }
    /// Returns: chunks held (the caller's buffer counts as one when it holds a slot).
    [[nodiscard]] std::size_t chunk_count() const noexcept { return chunks_.size(); }

    /// Returns: in_use = live * slot_size, peak, capacity = slots * slot_size, live_allocations,
    /// total_allocations, largest_free_block = slot_size when a slot is free (without growing), else 0.
    /// With counters (checks >= 1 or ASan) every field is exact and O(1). At checks 0: O(free),
    /// total_allocations is 0 (unknown) and peak is a lower bound: the highest live count seen at a
    /// growth step (every slot was live) or by a live()/stats() call.
    [[nodiscard]] strata::stats stats() const noexcept;

    /// Returns: true when every invariant holds: the free list is acyclic, every node is a slot start
    /// inside a chunk, free + live == capacity, and at checks >= 1 the state bits agree with the free
    /// list. Complexity: O(slots + free * log chunks).
    [[nodiscard]] bool check() const noexcept;

    /// Effects: calls `visit(void* slot, bool live)` for every slot of every chunk, in chunk order.
    /// Complexity: O(slots) (plus O(free * log chunks) at checks 0, where the free list is walked).
    template <class Visitor>
    void for_each_slot(Visitor&& visit) const {
        std::vector<bool> live = live_map();
        std::size_t k = 0;
        for (const chunk& c : chunks_)
            for (std::size_t i = 0; i < c.count; ++i)
                visit(static_cast<void*>(c.first + i * slot_size_), static_cast<bool>(live[k++]));
    }

private:
    struct chunk {
        memory_block block;  // as the source returned it; empty for the caller's buffer
        std::byte* first;    // first slot (the block's start)
        std::size_t count;   // slots in this chunk
        std::uint64_t* bits; // live bit per slot (checks >= 1), in the chunk after the slots; else null
    };

    void* allocate_slow() noexcept;
    void* take_checked(void* p) noexcept;
    void give_back_checked(void* p) noexcept;
    bool verify_size(const void* p, std::size_t size) const noexcept;
    bool add_chunk(std::span<std::byte> memory, memory_block block) noexcept;
    void thread_chunk(const chunk& c, bool free_only = false) noexcept;
#if STRATA_CHECKS >= 1
    [[nodiscard]] bool slot_is_free(const void* p) const noexcept;
    [[nodiscard]] bool free_link_ok(const void* head) const noexcept;
#endif
    [[nodiscard]] const chunk* find_chunk(const void* p) const noexcept;
    [[nodiscard]] std::vector<bool> live_map() const;
    [[nodiscard]] static void* read_link(const void* slot) noexcept;
    void release_chunks() noexcept;

    void* free_ = nullptr;              // head of the free list
    std::size_t allocs_ = 0;            // successful allocations (counted on the checked path only)
    std::size_t frees_ = 0;             // successful deallocations (idem)
    mutable std::size_t peak_live_ = 0; // see stats()
    std::size_t slot_size_ = 0;         // the stride; 0 marks an invalid pool
    std::size_t slot_align_ = 0;
    std::size_t slots_ = 0;     // slots in all chunks
    std::vector<chunk> chunks_; // sorted by address, for owns() and the checks
    source_ref source_;
    pool_options options_;
};

} // namespace strata
