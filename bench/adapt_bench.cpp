// Adapter overhead: tracked<A>, debug<A> and locked<A> against the raw allocator A they wrap, for
// A = arena, stack_allocator, pool, tlsf and malloc, in nanoseconds per pair (allocate + free).
//
// Fairness rules:
//  - Every contender runs the same loop (`adapt_alloc_loop`, one out-of-line instantiation per
//    contender, shared by the timed benchmark and the callgrind count mode): allocate(size, 16) and
//    at once deallocate(p, size, 16), sizes cycling through a 64-entry run-time table of 16..256
//    (multiples of 16). An immediate free is the one pattern every wrapped allocator serves without
//    growing (an arena and a stack take their top back), so the loop never hits a slow path and
//    the difference between a wrapped and a raw row is the adapter's cost alone.
//  - The pointer goes through benchmark::DoNotOptimize, so the block is really handed out.
//  - items_processed = pairs; report ns per pair = 1e9 / items_per_second, median of repetitions:
//      strata_bench_adapt --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//  - Instruction counts: `python3 bench/callgrind.py build/.../strata_bench_adapt NAME ...` (NAMEs
//    from --strata_list); the `loop` column counts adapt_alloc_loop only (its name matches the
//    script's *alloc_loop<* toggle).
// tracked rows: "tracked" counts on a root tracker (depth 1), "tracked3" on the leaf of a
// three-level tree (engine/renderer/textures: bytes propagate to every level, see tracked.hpp).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <benchmark/benchmark.h>

#include "strata/adapt/debug.hpp"
#include "strata/adapt/locked.hpp"
#include "strata/adapt/tracked.hpp"
#include "strata/core/config.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/linear/arena.hpp"
#include "strata/linear/stack_allocator.hpp"
#include "strata/pool/pool.hpp"

#include "count_kernel.hpp"

namespace {

constexpr std::size_t pairs_per_fill = 4096; // one benchmark iteration / one count-mode fill
constexpr std::size_t request_align = 16;
constexpr std::size_t table_entries = 64;
std::size_t size_table[table_entries]; // not const: the compiler must load it

bool fill_size_table() noexcept {
    std::uint64_t state = 0xada9'7000'0000'0001ULL; // splitmix64, fixed seed
    for (std::size_t& s : size_table) {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        s = 16 * (1 + (z ^ (z >> 31)) % 16); // 16..256
    }
    return true;
}
const bool size_table_ready = fill_size_table();

/// The measured loop.
template <class A>
BENCH_KERNEL void adapt_alloc_loop(A& a, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t size = size_table[i % table_entries];
        void* p = a.allocate(size, request_align);
        benchmark::DoNotOptimize(p);
        a.deallocate(p, size, request_align);
    }
}

// ------------------------------------------------------------------------------------------------
// Base allocators, each owning its memory and default-constructible, so every adapter can build
// one in place: tracked<bench_arena> t(tracker), debug<bench_arena> d, locked<bench_arena> l.
// The forwarding is inline and costs nothing.
// ------------------------------------------------------------------------------------------------

constexpr std::size_t buffer_bytes = std::size_t{1} << 20;

struct bench_buffer {
    std::vector<std::byte> bytes = std::vector<std::byte>(buffer_bytes);
    [[nodiscard]] std::span<std::byte> span() noexcept { return {bytes.data(), bytes.size()}; }
};

struct bench_arena {
    static constexpr const char* name = "arena";
    static constexpr bool lifo = true;
    bench_buffer buffer;
    strata::arena a{buffer.span()};
    STRATA_ALWAYS_INLINE void* allocate(std::size_t size, std::size_t align) noexcept {
        return a.allocate(size, align);
    }
    STRATA_ALWAYS_INLINE void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        a.deallocate(p, size, align);
    }
    [[nodiscard]] bool owns(const void* p) const noexcept { return a.owns(p); }
    [[nodiscard]] strata::stats stats() const noexcept { return a.stats(); }
};

struct bench_stack {
    static constexpr const char* name = "stack";
    static constexpr bool lifo = true;
    bench_buffer buffer;
    strata::stack_allocator s{buffer.span()};
    STRATA_ALWAYS_INLINE void* allocate(std::size_t size, std::size_t align) noexcept {
        return s.allocate(size, align);
    }
    STRATA_ALWAYS_INLINE void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        s.deallocate(p, size, align);
    }
    [[nodiscard]] bool owns(const void* p) const noexcept { return s.owns(p); }
    [[nodiscard]] strata::stats stats() const noexcept { return s.stats(); }
};

/// A pool of 512-byte slots (debug's fences make a 256-byte request 288 bytes).
struct bench_pool {
    static constexpr const char* name = "pool";
    bench_buffer buffer;
    strata::pool p{512, 16, buffer.span()};
    STRATA_ALWAYS_INLINE void* allocate(std::size_t size, std::size_t align) noexcept {
        return p.allocate(size, align);
    }
    STRATA_ALWAYS_INLINE void deallocate(void* q, std::size_t size, std::size_t align) noexcept {
        p.deallocate(q, size, align);
    }
    [[nodiscard]] bool owns(const void* q) const noexcept { return p.owns(q); }
    [[nodiscard]] strata::stats stats() const noexcept { return p.stats(); }
};

struct bench_tlsf {
    static constexpr const char* name = "tlsf";
    bench_buffer buffer;
    strata::tlsf t{buffer.span()};
    STRATA_ALWAYS_INLINE void* allocate(std::size_t size, std::size_t align) noexcept {
        return t.allocate(size, align);
    }
    STRATA_ALWAYS_INLINE void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        t.deallocate(p, size, align);
    }
    [[nodiscard]] bool owns(const void* p) const noexcept { return t.owns(p); }
    [[nodiscard]] strata::stats stats() const noexcept { return t.stats(); }
};

/// glibc malloc/free (whatever the process links), alignment 16 = malloc's own.
struct bench_malloc {
    static constexpr const char* name = "malloc";
    STRATA_ALWAYS_INLINE void* allocate(std::size_t size, std::size_t) noexcept { return std::malloc(size); }
    STRATA_ALWAYS_INLINE void deallocate(void* p, std::size_t, std::size_t) noexcept { std::free(p); }
    [[nodiscard]] strata::stats stats() const noexcept { return {}; }
};

// ------------------------------------------------------------------------------------------------
// Contenders: the raw base and each adapter over it.
// ------------------------------------------------------------------------------------------------

template <class B>
struct raw_of {
    static constexpr const char* name = "raw";
    B alloc;
    B& target() noexcept { return alloc; }
};

template <class B>
struct tracked_of {
    static constexpr const char* name = "tracked";
    strata::tracker root{"bench"};
    strata::tracked<B> alloc{root};
    strata::tracked<B>& target() noexcept { return alloc; }
};

template <class B>
struct tracked3_of {
    static constexpr const char* name = "tracked3";
    strata::tracker engine{"engine"};
    strata::tracker renderer{"renderer", &engine};
    strata::tracker textures{"textures", &renderer};
    strata::tracked<B> alloc{textures};
    tracked3_of() { engine.set_budget(std::size_t{1} << 40); } // armed, never crossed
    strata::tracked<B>& target() noexcept { return alloc; }
};

// debug<> holds freed blocks in a quarantine by default, which reorders frees: the LIFO bases
// (whose wrappers here hide mark(), by which debug<> would tell) run without it, as a user must
// set it up over them (debug_options::quarantine_bytes).
template <class B>
strata::debug_options debug_options_for() {
    strata::debug_options o;
    if constexpr (requires { B::lifo; }) o.quarantine_bytes = 0;
    return o;
}

template <class B>
struct debug_of {
    static constexpr const char* name = "debug";
    strata::debug<B> alloc{debug_options_for<B>()};
    strata::debug<B>& target() noexcept { return alloc; }
};

template <class B>
struct locked_of {
    static constexpr const char* name = "locked";
    strata::locked<B, std::mutex> alloc;
    strata::locked<B, std::mutex>& target() noexcept { return alloc; }
};

template <class C>
void run(benchmark::State& state) {
    C c;
    auto& a = c.target();
    for (auto _ : state)
        adapt_alloc_loop(a, pairs_per_fill);
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * pairs_per_fill));
}

template <class C>
std::size_t count(std::size_t fills) {
    C c;
    auto& a = c.target();
    for (std::size_t f = 0; f < fills; ++f)
        adapt_alloc_loop(a, pairs_per_fill);
    return fills * pairs_per_fill;
}

template <class B, template <class> class... Adapters>
bool register_base() {
    const auto one = [](auto tag) {
        using C = typename decltype(tag)::type;
        const std::string full = std::string(B::name) + "/" + C::name;
        benchmark::RegisterBenchmark(full.c_str(), &run<C>);
        strata_bench::register_count_kernel(full.c_str(), &count<C>);
    };
    (one(std::type_identity<Adapters<B>>{}), ...);
    return true;
}

// One line per base allocator.
const bool registered = register_base<bench_arena, raw_of, tracked_of, tracked3_of, debug_of, locked_of>() &&
                        register_base<bench_stack, raw_of, tracked_of, tracked3_of, debug_of, locked_of>() &&
                        register_base<bench_pool, raw_of, tracked_of, tracked3_of, debug_of, locked_of>() &&
                        register_base<bench_tlsf, raw_of, tracked_of, tracked3_of, debug_of, locked_of>() &&
                        register_base<bench_malloc, raw_of, tracked_of, tracked3_of, debug_of, locked_of>();

} // namespace
