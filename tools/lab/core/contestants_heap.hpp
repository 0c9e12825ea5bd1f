#pragma once
// strata-lab contestants from the heap family: tlsf, buddy and the free list (first and best fit,
// the classic baseline). The lead wires them into builtin_registry() with one line:
// add_heap_contestants(reg);
//
// The lab's frame loop asks for sizes 16..4096 with alignment 8/16/64 and frees every pointer of a
// frame in end_frame(), one by one (a general heap has no bulk reset). Each heap gets one buffer
// sized from the workload: TLSF and the free list the worst frame (bytes + alignment slack) plus a
// 16-byte header per allocation, then x1.5 for fragmentation; buddy the next power of two above 2x
// the worst frame (its rounding alone can cost up to 2x).
#include <cstddef>
#include <span>

#include "strata/core/bit.hpp"
#include "strata/heap/buddy.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"

#include "contestants.hpp"
#include "registry.hpp"

namespace strata::lab {

/// Bytes for a TLSF or free-list pool serving the fullest frame of `w` with headroom.
[[nodiscard]] inline std::size_t heap_pool_bytes(const workload& w) {
    const std::size_t frame = w.max_frame_worst_case + 16 * w.max_frame_allocs;
    return frame + frame / 2 + 4096;
}

/// A tlsf or free_list over one lab_buffer; end_frame frees each pointer (unsized).
template <class Heap>
class pool_heap_adapter {
public:
    explicit pool_heap_adapter(const workload& w) : buffer_(heap_pool_bytes(w)), heap_(buffer_.span()) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return heap_.allocate(size, align); }
    void end_frame(std::span<void* const> frame) noexcept {
        for (void* p : frame)
            heap_.deallocate(p);
    }
    void sample(std::span<void* const>) noexcept { peaks_.observe(heap_.stats()); }
    [[nodiscard]] memory_figures memory() const noexcept { return peaks_.figures(); }

private:
    lab_buffer buffer_;
    Heap heap_;
    strata_peaks peaks_;
};

/// strata::buddy (min_block 16) over one power-of-two lab_buffer; end_frame frees each pointer.
class buddy_adapter {
public:
    explicit buddy_adapter(const workload& w)
        : buffer_(next_pow2(2 * w.max_frame_worst_case)), heap_(buffer_.span(), 16) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return heap_.allocate(size, align); }
    void end_frame(std::span<void* const> frame) noexcept {
        for (void* p : frame)
            heap_.deallocate(p);
    }
    void sample(std::span<void* const>) noexcept { peaks_.observe(heap_.stats()); }
    [[nodiscard]] memory_figures memory() const noexcept { return peaks_.figures(); }

private:
    lab_buffer buffer_;
    buddy heap_;
    strata_peaks peaks_;
};

/// Effects: adds tlsf, buddy, free_list_first_fit and free_list_best_fit to `reg`.
inline void add_heap_contestants(registry& reg) {
    reg.add(make_contestant<pool_heap_adapter<tlsf>>(
        "tlsf", "strata::tlsf (SLI 5) over one buffer sized for the worst frame; frees each block"));
    reg.add(make_contestant<buddy_adapter>(
        "buddy", "strata::buddy (min_block 16) over a power-of-two buffer; frees each block"));
    reg.add(make_contestant<pool_heap_adapter<free_list_first_fit>>(
        "free_list_first_fit",
        "strata::free_list<first_fit>, address-ordered, coalescing; frees each block"));
    reg.add(make_contestant<pool_heap_adapter<free_list_best_fit>>(
        "free_list_best_fit", "strata::free_list<best_fit>, address-ordered, coalescing; frees each block"));
}

} // namespace strata::lab
