#pragma once
// strata-lab contestants: one adapter per allocator and the built-in registry.
//
// To add a contestant: write an adapter (see registry.hpp for the five members it needs; the
// strata ones below are a few lines each) and add ONE line to builtin_registry() at the bottom.
// Every command (run today; replay, showdown later) takes its contestants from that registry.
//
// Header-only so tests/lab/lab_test.cpp can run every contestant.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <memory_resource>
#include <new>
#include <span>

#if defined(__GLIBC__)
#include <malloc.h> // malloc_usable_size
#define STRATA_LAB_HAS_USABLE_SIZE 1
#else
#define STRATA_LAB_HAS_USABLE_SIZE 0
#endif

#include "strata/core/stats.hpp"
#include "strata/linear/arena.hpp"
#include "strata/linear/double_stack.hpp"
#include "strata/linear/frame_allocator.hpp"
#include "strata/linear/stack_allocator.hpp"
#include "strata/source/heap_source.hpp"
#include "strata/source/memory_source.hpp"

#include "registry.hpp"

namespace strata::lab {

// ---------------------------------------------------------------------------------------------
// Helpers shared by adapters
// ---------------------------------------------------------------------------------------------

/// A cache-line aligned buffer from operator new, not pre-touched (its pages are faulted in by the
/// loop like everyone else's).
class lab_buffer {
public:
    explicit lab_buffer(std::size_t size)
        : size_(size), data_(static_cast<std::byte*>(::operator new (size, std::align_val_t{64}))) {}
    ~lab_buffer() { ::operator delete (data_, std::align_val_t{64}); }
    lab_buffer(const lab_buffer&) = delete;
    lab_buffer& operator=(const lab_buffer&) = delete;
    [[nodiscard]] std::span<std::byte> span() const noexcept { return {data_, size_}; }

private:
    std::size_t size_;
    std::byte* data_;
};

/// Bytes a fixed-buffer bump allocator needs for the fullest frame of `w`, with `per_alloc` bytes
/// of header per allocation: the buffer is sized from the workload, as a game sizes it from a budget.
[[nodiscard]] inline std::size_t fixed_buffer_bytes(const workload& w, std::size_t per_alloc = 0) {
    return w.max_frame_worst_case + per_alloc * w.max_frame_allocs + 64;
}

/// A memory source wrapper that counts the calls reaching `S`.
template <class S>
class counting_source {
public:
    [[nodiscard]] memory_block allocate_block(std::size_t size, std::size_t align) noexcept {
        ++calls_;
        return inner_.allocate_block(size, align);
    }
    void deallocate_block(memory_block b) noexcept {
        ++calls_;
        inner_.deallocate_block(b);
    }
    [[nodiscard]] std::size_t calls() const noexcept { return calls_; }

private:
    S inner_;
    std::size_t calls_ = 0;
};

/// Peaks of a strata allocator: used = the largest stats().in_use seen, held = the largest
/// stats().capacity seen. sample() runs at each frame's fullest point, so the largest in_use is the
/// peak. (stats().peak was used before: a size_class_pool sums its classes' own peaks, which never
/// happened at once, and read up to 91% high.)
struct strata_peaks {
    std::size_t used = 0;
    std::size_t held = 0;
    void observe(const strata::stats& s) noexcept {
        used = std::max(used, s.in_use);
        held = std::max(held, s.capacity);
    }
    [[nodiscard]] memory_figures figures(std::size_t upstream_calls = 0) const noexcept {
        return {used, held, upstream_calls, false};
    }
};

// ---------------------------------------------------------------------------------------------
// Adapters
// ---------------------------------------------------------------------------------------------

/// glibc malloc/free. Alignment above max_align_t goes to aligned_alloc (sizes in the workload are
/// multiples of their alignment). Every block is freed at the end of its frame, oldest first.
class malloc_adapter {
public:
    explicit malloc_adapter(const workload&) noexcept {}

    void* allocate(std::size_t size, std::size_t align) noexcept {
        if (align <= alignof(std::max_align_t)) return std::malloc(size);
        return std::aligned_alloc(align, size);
    }
    void end_frame(std::span<void* const> frame) noexcept {
        for (void* p : frame)
            std::free(p);
    }
    void sample(std::span<void* const> frame) noexcept {
#if STRATA_LAB_HAS_USABLE_SIZE
        std::size_t usable = 0, chunks = 0;
        for (void* p : frame) {
            if (p == nullptr) continue;
            const std::size_t u = malloc_usable_size(p);
            usable += u;
            chunks += u + sizeof(std::size_t); // glibc: an in-use chunk is usable size + one size word
        }
        used_ = std::max(used_, usable);
        held_ = std::max(held_, chunks);
#else
        (void)frame;
#endif
    }
    [[nodiscard]] memory_figures memory() const noexcept {
#if STRATA_LAB_HAS_USABLE_SIZE
        return {used_, held_, 0, true};
#else
        return {};
#endif
    }

private:
    std::size_t used_ = 0;
    std::size_t held_ = 0;
};

/// A pmr upstream that forwards to new_delete_resource() and counts bytes outstanding and calls.
class counting_resource final : public std::pmr::memory_resource {
public:
    [[nodiscard]] std::size_t outstanding() const noexcept { return outstanding_; }
    [[nodiscard]] std::size_t peak() const noexcept { return peak_; }
    [[nodiscard]] std::size_t calls() const noexcept { return calls_; }

private:
    void* do_allocate(std::size_t bytes, std::size_t align) override {
        void* p = upstream_->allocate(bytes, align);
        outstanding_ += bytes;
        peak_ = std::max(peak_, outstanding_);
        ++calls_;
        return p;
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
        upstream_->deallocate(p, bytes, align);
        outstanding_ -= bytes;
        ++calls_;
    }
    [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
        return this == &other;
    }

    std::pmr::memory_resource* upstream_ = std::pmr::new_delete_resource();
    std::size_t outstanding_ = 0;
    std::size_t peak_ = 0;
    std::size_t calls_ = 0;
};

/// std::pmr::monotonic_buffer_resource over a counting new/delete upstream; release() each frame
/// (which hands every chunk back upstream, as the standard specifies).
class pmr_monotonic_adapter {
public:
    explicit pmr_monotonic_adapter(const workload&) noexcept {}

    void* allocate(std::size_t size, std::size_t align) noexcept {
        try {
            return resource_.allocate(size, align);
        } catch (...) {
            return nullptr;
        }
    }
    void end_frame(std::span<void* const>) noexcept { resource_.release(); }
    // A monotonic resource only grows until release(): at the frame's fullest point its upstream
    // holds the most it will this frame. (upstream_.peak() would include warm-up frames.)
    void sample(std::span<void* const>) noexcept { held_ = std::max(held_, upstream_.outstanding()); }
    [[nodiscard]] memory_figures memory() const noexcept {
        return {std::nullopt, held_, upstream_.calls(), false};
    }

private:
    counting_resource upstream_;
    std::pmr::monotonic_buffer_resource resource_{&upstream_};
    std::size_t held_ = 0;
};

/// strata::arena growing from a strata::heap_source (default arena_options, keep_blocks); reset()
/// each frame. Arena is strata::arena or an adapter over one that is constructible from the source
/// (debug<arena>, locked<arena>: contestants_adapt.hpp).
template <class Arena>
class heap_arena_adapter {
public:
    explicit heap_arena_adapter(const workload&) noexcept {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return arena_.allocate(size, align); }
    void end_frame(std::span<void* const>) noexcept { arena_.reset(); }
    void sample(std::span<void* const>) noexcept { peaks_.observe(arena_.stats()); }
    [[nodiscard]] memory_figures memory() const noexcept { return peaks_.figures(source_.calls()); }

private:
    counting_source<heap_source> source_;
    Arena arena_{source_};
    strata_peaks peaks_;
};
using arena_heap_adapter = heap_arena_adapter<arena>;

/// strata::arena over one fixed buffer sized for the workload's worst frame; reset() each frame.
class arena_buffer_adapter {
public:
    explicit arena_buffer_adapter(const workload& w)
        : buffer_(fixed_buffer_bytes(w)), arena_(buffer_.span()) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return arena_.allocate(size, align); }
    void end_frame(std::span<void* const>) noexcept { arena_.reset(); }
    void sample(std::span<void* const>) noexcept { peaks_.observe(arena_.stats()); }
    [[nodiscard]] memory_figures memory() const noexcept { return peaks_.figures(); }

private:
    lab_buffer buffer_;
    arena arena_;
    strata_peaks peaks_;
};

/// strata::stack_allocator over a fixed buffer (16-byte header per allocation); reset() each frame.
class stack_adapter {
public:
    explicit stack_adapter(const workload& w)
        : buffer_(fixed_buffer_bytes(w, stack_allocator::header_size)), stack_(buffer_.span()) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return stack_.allocate(size, align); }
    void end_frame(std::span<void* const>) noexcept { stack_.reset(); }
    void sample(std::span<void* const>) noexcept { peaks_.observe(stack_.stats()); }
    [[nodiscard]] memory_figures memory() const noexcept { return peaks_.figures(); }

private:
    lab_buffer buffer_;
    stack_allocator stack_;
    strata_peaks peaks_;
};

/// strata::double_stack over a fixed buffer, bottom end only; reset() each frame.
class double_stack_adapter {
public:
    explicit double_stack_adapter(const workload& w)
        : buffer_(fixed_buffer_bytes(w)), stack_(buffer_.span()) {}
    void* allocate(std::size_t size, std::size_t align) noexcept {
        return stack_.allocate_bottom(size, align);
    }
    void end_frame(std::span<void* const>) noexcept { stack_.reset(); }
    void sample(std::span<void* const>) noexcept { peaks_.observe(stack_.stats()); }
    [[nodiscard]] memory_figures memory() const noexcept { return peaks_.figures(); }

private:
    lab_buffer buffer_;
    double_stack stack_;
    strata_peaks peaks_;
};

/// strata::frame_allocator<2> growing from a strata::heap_source; next_frame() each frame, so a
/// frame's memory stays valid through the next one (peak used = sum of both arenas' peaks).
class frame2_adapter {
public:
    explicit frame2_adapter(const workload&) noexcept {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return frames_.allocate(size, align); }
    void end_frame(std::span<void* const>) noexcept { frames_.next_frame(); }
    void sample(std::span<void* const>) noexcept { peaks_.observe(frames_.stats()); }
    [[nodiscard]] memory_figures memory() const noexcept { return peaks_.figures(source_.calls()); }

private:
    counting_source<heap_source> source_;
    frame_allocator<2> frames_{source_};
    strata_peaks peaks_;
};

} // namespace strata::lab

// Each family's adapters live in their own header (they include this one for the shared helpers,
// so when a test includes one of them first, that one is still incomplete here: hence the
// declarations below).
#include "contestants_adapt.hpp"
#include "contestants_heap.hpp"
#include "contestants_pool.hpp"

namespace strata::lab {

inline void add_pool_contestants(registry& reg);
inline void add_heap_contestants(registry& reg);
inline void add_adapt_contestants(registry& reg);

// ---------------------------------------------------------------------------------------------
// The registry: one line per contestant, in report order (the baseline, malloc, first).
// ---------------------------------------------------------------------------------------------

/// Returns: every built-in contestant.
inline const registry& builtin_registry() {
    static const registry r = [] {
        registry reg;
        reg.add(make_contestant<malloc_adapter>(
            "malloc",
            "glibc malloc/free (aligned_alloc above 16-byte alignment); every block freed at frame end"));
        reg.add(make_contestant<pmr_monotonic_adapter>(
            "pmr_monotonic", "std::pmr::monotonic_buffer_resource over new/delete; release() each frame"));
        reg.add(make_contestant<arena_heap_adapter>("arena",
                                                    "strata::arena growing from a heap_source (64 KiB "
                                                    "first block, keeps blocks); reset() each frame"));
        reg.add(make_contestant<arena_buffer_adapter>(
            "arena_buffer",
            "strata::arena over one fixed buffer sized for the worst frame; reset() each frame"));
        reg.add(make_contestant<stack_adapter>(
            "stack_allocator",
            "strata::stack_allocator over a fixed buffer (16 B header per block); reset() each frame"));
        reg.add(make_contestant<double_stack_adapter>(
            "double_stack", "strata::double_stack over a fixed buffer, bottom end; reset() each frame"));
        reg.add(make_contestant<frame2_adapter>(
            "frame_allocator2",
            "strata::frame_allocator<2> growing from a heap_source; next_frame() each frame"));
        add_pool_contestants(reg);
        add_heap_contestants(reg);
        add_adapt_contestants(reg);
        return reg;
    }();
    return r;
}

} // namespace strata::lab
