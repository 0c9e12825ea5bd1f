#pragma once
// strata-lab replay contenders: one adapter per allocator (the contract is in replay.hpp) and the
// registry that race/replay take them from. Adding an allocator = one adapter + one line in
// op_registry() below.
//
// Header-only so tests/lab can replay through every contender.
#include <cstddef>
#include <cstdlib>
#include <memory_resource>
#include <new>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "strata/linear/arena.hpp"
#include "strata/source/heap_source.hpp"

#include "contestants.hpp" // counting_resource
#include "replay.hpp"

namespace strata::lab {

/// glibc malloc/free/realloc. Footprint: the heap glibc holds (mallinfo2 arena + mmapped) less the
/// bytes the lab itself had in use when the adapter was made (its vectors share the heap), so it
/// counts this replay's blocks plus all free space in the heap: an upper bound. Usable sizes from
/// malloc_usable_size (internal waste includes glibc's rounding, not its size word).
class malloc_replay {
public:
    static bool applies(const op_workload&) noexcept { return true; }
    explicit malloc_replay(const op_workload&) noexcept : baseline_(in_use()) {}
    void* allocate(std::size_t size, std::size_t align) noexcept {
        if (align <= alignof(std::max_align_t)) return std::malloc(size);
        void* p = nullptr;
        return posix_memalign(&p, align, size) == 0 ? p : nullptr;
    }
    void deallocate(void* p, std::size_t, std::size_t) noexcept { std::free(p); }
    void* reallocate(void* p, std::size_t, std::size_t n, std::size_t align) noexcept {
        if (align > alignof(std::max_align_t)) return nullptr; // realloc keeps only malloc's alignment
        return std::realloc(p, n);
    }
#if defined(__GLIBC__)
    [[nodiscard]] std::size_t footprint() const noexcept {
        const std::size_t now = held();
        return now > baseline_ ? now - baseline_ : 0;
    }
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept {
        return malloc_usable_size(const_cast<void*>(p));
    }
#endif

private:
#if defined(__GLIBC__)
    static std::size_t held() noexcept {
        const struct mallinfo2 mi = mallinfo2();
        return mi.arena + mi.hblkhd;
    }
    static std::size_t in_use() noexcept {
        const struct mallinfo2 mi = mallinfo2();
        return mi.uordblks + mi.hblkhd;
    }
#else
    static std::size_t in_use() noexcept { return 0; }
#endif
    std::size_t baseline_;
};

/// std::pmr::unsynchronized_pool_resource (pools up to 64 KiB) over a counting new/delete upstream.
class pmr_pool_replay {
public:
    static bool applies(const op_workload&) noexcept { return true; }
    explicit pmr_pool_replay(const op_workload&) : pool_(std::pmr::pool_options{0, 65536}, &upstream_) {}
    void* allocate(std::size_t size, std::size_t align) noexcept {
        try {
            return pool_.allocate(size, align);
        } catch (...) {
            return nullptr;
        }
    }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        pool_.deallocate(p, size, align);
    }
    [[nodiscard]] std::size_t footprint() const noexcept { return upstream_.outstanding(); }

private:
    counting_resource upstream_;
    std::pmr::unsynchronized_pool_resource pool_;
};

/// strata::arena growing from a heap_source: frees are no-ops, end_frame() resets. Applies only to
/// frame-scoped workloads (every block dies in the frame it was born in).
class arena_replay {
public:
    static bool applies(const op_workload& w) noexcept { return w.frame_scoped; }
    explicit arena_replay(const op_workload&) : arena_(source_, arena_options{}) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return arena_.allocate(size, align); }
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    void end_frame() noexcept { arena_.reset(); }
    [[nodiscard]] std::size_t footprint() const noexcept { return arena_.stats().capacity; }

private:
    heap_source source_;
    arena arena_;
};

/// Returns: every replay contender, in report order.
inline const std::vector<op_contender>& op_registry() {
    static const std::vector<op_contender> r{
        make_op_contender<malloc_replay>("malloc", "glibc malloc/free/realloc"),
        make_op_contender<pmr_pool_replay>("pmr_pool",
                                           "std::pmr::unsynchronized_pool_resource (pools up to 64 KiB)"),
        make_op_contender<arena_replay>(
            "arena", "strata::arena from a heap_source, reset each frame (frame-scoped workloads)"),
    };
    return r;
}

} // namespace strata::lab
