// Linear-allocator benchmarks: strata::arena (and the rest of the linear family) against the
// physical limit (a raw bump pointer written here, the way an engine would write one), against
// std::pmr::monotonic_buffer_resource and against malloc/free.
//
// Fairness rules (see docs/benchmarks.md):
//  - Every contender serves the same request sequence: `const32_a16` (32 bytes, alignment 16, as
//    `allocate(sizeof(T), alignof(T))` would) or `var8-256_a8-16-64` (a 64-entry table of sizes
//    8..256 and alignments 8/16/64 filled at run time, so the compiler cannot fold it).
//  - Same reset cadence: one benchmark iteration fills a 1 MiB buffer exactly (the number of requests
//    that fit is computed once by simulating the raw bump, so no contender ever hits its failure
//    path), then resets (arena::reset, monotonic_buffer_resource::release, free of the whole batch).
//    The reset is timed and amortized over the fill.
//  - Every pointer goes through benchmark::DoNotOptimize, whose "memory" clobber also makes every
//    contender keep its state in memory across requests (as allocator state in an engine object
//    does): a load of the top, a store of the new top, per request, for all of them alike.
//  - The loop is one out-of-line function template per contender (`alloc_loop`), shared by the timed
//    benchmark and by the callgrind count mode (main.cpp: --strata_count=NAME), so the instructions
//    counted are the instructions timed.
//  - items_processed = requests, so Google Benchmark reports requests per second; bench/ratios.py
//    turns the medians into ns per request and ratios.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory_resource>
#include <new>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <benchmark/benchmark.h>

#include "strata/adapt/pmr_resource.hpp"
#include "strata/core/config.hpp"
#include "strata/linear/arena.hpp"
#include "strata/linear/double_stack.hpp"
#include "strata/linear/frame_allocator.hpp"
#include "strata/linear/stack_allocator.hpp"
#include "strata/source/heap_source.hpp"

#include "count_kernel.hpp"

namespace {

constexpr std::size_t fill_bytes = std::size_t{1} << 20; // the buffer every contender fills per iteration
constexpr std::size_t buffer_alignment = 4096;           // every buffer starts on a page

// --------------------------------------------------------------------------------------------------
// Request sequences
// --------------------------------------------------------------------------------------------------

struct request {
    std::size_t size;
    std::size_t align;
};

/// 32 bytes aligned to 16: the compile-time-constant case (`allocate(sizeof(T), alignof(T))`).
struct const_seq {
    static constexpr const char* name = "const32_a16";
    static std::size_t size(std::size_t) noexcept { return 32; }
    static std::size_t align(std::size_t) noexcept { return 16; }
};

constexpr std::size_t var_entries = 64; // power of two: the index is i & 63
request var_table[var_entries];         // not const: the compiler must load it

bool fill_var_table() noexcept {
    std::uint64_t state = 0x5eed'57a7'a000'0001ULL; // splitmix64, fixed seed: same table every run
    auto next = [&state] {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    };
    for (request& r : var_table) {
        r.size = 8 * (1 + next() % 32); // 8..256, multiples of 8 like most sizeof(T)
        const std::uint64_t a = next() % 10;
        r.align = a < 4 ? 8 : a < 8 ? 16 : 64; // 40% 8, 40% 16, 20% 64
    }
    return true;
}
const bool var_table_ready = fill_var_table();

/// Sizes 8..256 and alignments 8/16/64 cycling through a run-time table.
struct var_seq {
    static constexpr const char* name = "var8-256_a8-16-64";
    static std::size_t size(std::size_t i) noexcept { return var_table[i % var_entries].size; }
    static std::size_t align(std::size_t i) noexcept { return var_table[i % var_entries].align; }
};

/// Returns: how many requests of `Seq` fit in a fresh, page-aligned `fill_bytes` buffer under the
/// raw bump's rule. arena (initial buffer), double_stack (bottom), frame_allocator (buffer slices)
/// and monotonic_buffer_resource place requests exactly as the raw bump does, so this is the
/// "reset when the 1 MiB buffer fills" cadence for all of them, without a failing request.
template <class Seq>
std::size_t fill_count() noexcept {
    std::uintptr_t cur = buffer_alignment;
    const std::uintptr_t end = cur + fill_bytes;
    std::size_t n = 0;
    for (;; ++n) {
        const std::size_t a = Seq::align(n);
        const std::uintptr_t p = (cur + a - 1) & ~(std::uintptr_t{a} - 1);
        if (p + Seq::size(n) > end) return n;
        cur = p + Seq::size(n);
    }
}

// --------------------------------------------------------------------------------------------------
// The physical limit: a bump pointer as an engine writes it (same translation unit, inline).
// --------------------------------------------------------------------------------------------------

struct raw_bump {
    std::byte* cur;
    std::byte* end;

    STRATA_ALWAYS_INLINE void* allocate(std::size_t size, std::size_t align) noexcept {
        const std::uintptr_t p = (reinterpret_cast<std::uintptr_t>(cur) + align - 1) & ~(align - 1);
        if (p + size > reinterpret_cast<std::uintptr_t>(end)) return nullptr;
        cur = reinterpret_cast<std::byte*>(p + size);
        return reinterpret_cast<void*>(p);
    }
};

// --------------------------------------------------------------------------------------------------
// Kernels
// --------------------------------------------------------------------------------------------------

struct via_allocate {
    template <class A>
    STRATA_ALWAYS_INLINE static void* call(A& a, std::size_t size, std::size_t align) {
        return a.allocate(size, align);
    }
};
struct via_allocate_top {
    template <class A>
    STRATA_ALWAYS_INLINE static void* call(A& a, std::size_t size, std::size_t align) {
        return a.allocate_top(size, align);
    }
};

/// The timed loop: `n` requests of `Seq` from `a`, each pointer kept alive by DoNotOptimize.
template <class Seq, class Op, class A>
BENCH_KERNEL void alloc_loop(A& a, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        void* p = Op::call(a, Seq::size(i), Seq::align(i));
        benchmark::DoNotOptimize(p);
    }
}

/// Set-up check (not timed): how many of the `n` requests failed (must be 0) or came back
/// misaligned.
template <class Seq, class Op, class A>
std::size_t failures_of(A& a, std::size_t n) {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
        void* p = Op::call(a, Seq::size(i), Seq::align(i));
        if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % Seq::align(i) != 0) ++bad;
    }
    return bad;
}

/// The malloc contender: allocate the fill, remembering pointers, then free them all.
template <class Seq>
BENCH_KERNEL void malloc_loop(void** ptrs, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t size = Seq::size(i);
        const std::size_t align = Seq::align(i);
        void* p = align <= alignof(std::max_align_t) ? std::malloc(size) : std::aligned_alloc(align, size);
        benchmark::DoNotOptimize(p);
        ptrs[i] = p;
    }
}
BENCH_KERNEL void free_loop(void** ptrs, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        std::free(ptrs[i]);
}

// --------------------------------------------------------------------------------------------------
// Contenders (fixtures): target() is what the loop allocates from, reset() ends one fill.
// --------------------------------------------------------------------------------------------------

/// A page-aligned, pre-touched buffer.
class page_buffer {
public:
    explicit page_buffer(std::size_t size)
        : data_(static_cast<std::byte*>(::operator new (size, std::align_val_t{buffer_alignment}))),
          size_(size) {
        std::memset(data_, 0, size_);
    }
    ~page_buffer() { ::operator delete (data_, std::align_val_t{buffer_alignment}); }
    page_buffer(const page_buffer&) = delete;
    page_buffer& operator=(const page_buffer&) = delete;
    [[nodiscard]] std::span<std::byte> span() const noexcept { return {data_, size_}; }
    [[nodiscard]] std::byte* data() const noexcept { return data_; }

private:
    std::byte* data_;
    std::size_t size_;
};

template <class Derived, class Op = via_allocate>
struct loop_fixture {
    template <class Seq>
    void fill(std::size_t n) {
        alloc_loop<Seq, Op>(self().target(), n);
    }
    template <class Seq>
    std::size_t failures(std::size_t n) {
        const std::size_t bad = failures_of<Seq, Op>(self().target(), n);
        self().reset();
        return bad;
    }

private:
    Derived& self() noexcept { return static_cast<Derived&>(*this); }
};

struct raw_bump_fixture : loop_fixture<raw_bump_fixture> {
    static constexpr const char* name = "raw_bump";
    page_buffer buffer{fill_bytes};
    raw_bump bump{buffer.data(), buffer.data() + fill_bytes};
    raw_bump& target() noexcept { return bump; }
    void reset() noexcept { bump.cur = buffer.data(); }
};

struct arena_fixture : loop_fixture<arena_fixture> {
    static constexpr const char* name = "arena";
    page_buffer buffer{fill_bytes};
    strata::arena arena{buffer.span()};
    strata::arena& target() noexcept { return arena; }
    void reset() noexcept { arena.reset(); }
};

/// An arena with no initial buffer, growing from a heap_source (64 KiB first block, doubling);
/// keep_blocks: after the first fill every block comes from the arena's own spare list.
struct arena_heap_fixture : loop_fixture<arena_heap_fixture> {
    static constexpr const char* name = "arena_heap_keep";
    strata::heap_source source;
    strata::arena arena{strata::source_ref{source}, strata::arena_options{}};
    strata::arena& target() noexcept { return arena; }
    void reset() noexcept { arena.reset(); }
};

/// The standard's bump resource, called the way pmr containers call it: through memory_resource&
/// (a virtual call per request).
struct pmr_monotonic_fixture : loop_fixture<pmr_monotonic_fixture> {
    static constexpr const char* name = "pmr_monotonic";
    page_buffer buffer{fill_bytes};
    std::pmr::monotonic_buffer_resource resource{buffer.data(), fill_bytes, std::pmr::null_memory_resource()};
    std::pmr::memory_resource& target() noexcept { return resource; }
    void reset() noexcept { resource.release(); }
};

/// The same resource with its dynamic type known (a final class), so the compiler devirtualizes
/// and inlines do_allocate: the best pmr can do.
struct final_monotonic final : std::pmr::monotonic_buffer_resource {
    using std::pmr::monotonic_buffer_resource::monotonic_buffer_resource;
};
struct pmr_monotonic_devirt_fixture : loop_fixture<pmr_monotonic_devirt_fixture> {
    static constexpr const char* name = "pmr_monotonic_devirt";
    page_buffer buffer{fill_bytes};
    final_monotonic resource{buffer.data(), fill_bytes, std::pmr::null_memory_resource()};
    final_monotonic& target() noexcept { return resource; }
    void reset() noexcept { resource.release(); }
};

/// strata::arena behind strata::pmr_resource, called through memory_resource& like
/// pmr_monotonic: the two pmr-interface contenders compare like with like.
struct pmr_arena_fixture : loop_fixture<pmr_arena_fixture> {
    static constexpr const char* name = "pmr_resource_arena";
    page_buffer buffer{fill_bytes};
    strata::arena arena{buffer.span()};
    strata::pmr_resource<strata::arena> resource{arena};
    std::pmr::memory_resource& target() noexcept { return resource; }
    void reset() noexcept { arena.reset(); }
};

/// malloc (aligned_alloc above 16) for the fill, then free of the whole batch.
struct malloc_fixture {
    static constexpr const char* name = "malloc_free";
    std::vector<void*> ptrs;
    std::size_t live = 0;

    template <class Seq>
    void fill(std::size_t n) {
        if (ptrs.size() < n) ptrs.resize(n);
        malloc_loop<Seq>(ptrs.data(), n);
        live = n;
    }
    void reset() noexcept {
        free_loop(ptrs.data(), live);
        live = 0;
    }
    template <class Seq>
    std::size_t failures(std::size_t n) {
        fill<Seq>(n);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (ptrs[i] == nullptr || reinterpret_cast<std::uintptr_t>(ptrs[i]) % Seq::align(i) != 0) ++bad;
        }
        reset();
        return bad;
    }
    ~malloc_fixture() { reset(); }
};

/// stack_allocator: a 16-byte header per allocation, so its buffer is larger than 1 MiB; it still
/// serves exactly the same requests per reset as the others.
struct stack_fixture : loop_fixture<stack_fixture> {
    static constexpr const char* name = "stack_allocator";
    page_buffer buffer{4 * fill_bytes};
    strata::stack_allocator stack{buffer.span()};
    strata::stack_allocator& target() noexcept { return stack; }
    void reset() noexcept { stack.reset(); }
};

struct double_stack_bottom_fixture : loop_fixture<double_stack_bottom_fixture> {
    static constexpr const char* name = "double_stack_bottom";
    page_buffer buffer{fill_bytes};
    strata::double_stack stacks{buffer.span()};
    strata::double_stack& target() noexcept { return stacks; }
    void reset() noexcept { stacks.reset(); }
};

/// The top end pads below each block, so the same requests may need a little more than 1 MiB.
struct double_stack_top_fixture : loop_fixture<double_stack_top_fixture, via_allocate_top> {
    static constexpr const char* name = "double_stack_top";
    page_buffer buffer{2 * fill_bytes};
    strata::double_stack stacks{buffer.span()};
    strata::double_stack& target() noexcept { return stacks; }
    void reset() noexcept { stacks.reset(); }
};

/// frame_allocator<2> over a buffer: two 1 MiB slices; next_frame() is the reset.
struct frame_fixture : loop_fixture<frame_fixture> {
    static constexpr const char* name = "frame_allocator2";
    page_buffer buffer{2 * fill_bytes + 64};
    strata::frame_allocator<2> frames{buffer.span()};
    strata::frame_allocator<2>& target() noexcept { return frames; }
    void reset() noexcept { frames.next_frame(); }
};

/// frame_allocator<2> growing from a heap_source, keep_blocks (the steady state never calls it).
struct frame_heap_fixture : loop_fixture<frame_heap_fixture> {
    static constexpr const char* name = "frame_allocator2_heap_keep";
    strata::heap_source source;
    strata::frame_allocator<2> frames{strata::source_ref{source}, strata::arena_options{}};
    strata::frame_allocator<2>& target() noexcept { return frames; }
    void reset() noexcept { frames.next_frame(); }
};

// --------------------------------------------------------------------------------------------------
// Benchmark and count-mode drivers
// --------------------------------------------------------------------------------------------------

template <class Fixture, class Seq>
void run_benchmark(benchmark::State& state) {
    Fixture f;
    const std::size_t n = fill_count<Seq>();
    if (f.template failures<Seq>(n) != 0) {
        state.SkipWithError("a request failed or was misaligned: the fill does not fit this contender");
        return;
    }
    for (auto _ : state) {
        f.template fill<Seq>(n);
        f.reset();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
    state.counters["allocs_per_fill"] = static_cast<double>(n);
}

template <class Fixture, class Seq>
std::size_t run_count(std::size_t fills) {
    Fixture f;
    const std::size_t n = fill_count<Seq>();
    for (std::size_t k = 0; k < fills; ++k) {
        f.template fill<Seq>(n);
        f.reset();
    }
    return fills * n;
}

template <class Fixture>
void add() {
    for (auto [name, bench, count] : {
             std::tuple{const_seq::name, &run_benchmark<Fixture, const_seq>, &run_count<Fixture, const_seq>},
             std::tuple{var_seq::name, &run_benchmark<Fixture, var_seq>, &run_count<Fixture, var_seq>},
         }) {
        const std::string full = std::string(Fixture::name) + "/" + name;
        benchmark::RegisterBenchmark(full.c_str(), bench);
        strata_bench::register_count_kernel(full.c_str(), count);
    }
}

const bool registered = [] {
    add<raw_bump_fixture>();
    add<arena_fixture>();
    add<arena_heap_fixture>();
    add<pmr_monotonic_fixture>();
    add<pmr_monotonic_devirt_fixture>();
    add<pmr_arena_fixture>();
    add<malloc_fixture>();
    add<stack_fixture>();
    add<double_stack_bottom_fixture>();
    add<double_stack_top_fixture>();
    add<frame_fixture>();
    add<frame_heap_fixture>();
    return true;
}();

} // namespace
