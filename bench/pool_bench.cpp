// Pool and slab benchmarks: W3-style churn (fixed 96-byte objects, 10,000 live, free+allocate
// pairs with a seeded random victim) on strata's pool, object_pool, size_class_pool, slab_cache and
// magazine_cache, against the physical limit (an intrusive free list written here), Boost.Pool and
// malloc/free.
//
// Fairness: every contender runs the same out-of-line loop (`free_alloc_loop<Adapter>`) over the same
// victim table (65,536 entries from splitmix64, fixed seed; one benchmark iteration = 65,536 pairs),
// (named so bench/callgrind.py's "*alloc_loop<*" toggle collects it), touching the first byte of every new
// block, with the live set allocated before timing. The same loop is registered for callgrind's count mode
// (main.cpp: --strata_count=NAME): count mode runs K iterations ("fills") and prints allocations=K*65536, so
// bench/callgrind.py reports instructions per free+allocate pair.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include <benchmark/benchmark.h>
#include <boost/pool/pool.hpp>

#include "strata/core/config.hpp"
#include "strata/pool/object_pool.hpp"
#include "strata/pool/pool.hpp"
#include "strata/pool/size_class_pool.hpp"
#include "strata/slab/magazine.hpp"
#include "strata/slab/slab_cache.hpp"
#include "strata/source/heap_source.hpp"

#include "count_kernel.hpp"

namespace {

constexpr std::size_t object_size = 96;
constexpr std::size_t live_count = 10'000;
constexpr std::size_t pairs_per_iteration = 65'536; // victim table length (power of two)

/// A 96-byte particle whose constructor initialises nothing (as an engine's particle would be
/// filled by its emitter), so create() measures the allocator rather than a 96-byte memset.
struct alignas(16) particle {
    particle() noexcept {} // NOLINT(modernize-use-equals-default): = default would zero-fill on T()
    std::byte bytes[object_size];
};

std::vector<std::uint32_t> make_victims() {
    std::vector<std::uint32_t> v(pairs_per_iteration);
    std::uint64_t state = 0x5717a7a5eedull;
    for (auto& x : v) {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        x = static_cast<std::uint32_t>((z ^ (z >> 31)) % live_count);
    }
    return v;
}
const std::vector<std::uint32_t> victims = make_victims();

// ---- adapters: allocate() / deallocate(p) for one 96-byte object ---------------------------------

/// The physical limit: preallocated slots and one singly linked free list, no checks, no counters.
struct intrusive_list {
    intrusive_list() {
        memory.reset(
            static_cast<std::byte*>(::operator new ((live_count + 1) * object_size, std::align_val_t{64})));
        for (std::size_t i = live_count + 1; i-- > 0;) {
            auto* node = reinterpret_cast<void**>(memory.get() + i * object_size);
            *node = head;
            head = node;
        }
    }
    STRATA_ALWAYS_INLINE void* allocate() noexcept {
        void** p = static_cast<void**>(head);
        if (p == nullptr) return nullptr;
        head = *p;
        return p;
    }
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept {
        *static_cast<void**>(p) = head;
        head = p;
    }
    struct aligned_delete {
        void operator()(std::byte* p) const noexcept { ::operator delete (p, std::align_val_t{64}); }
    };
    std::unique_ptr<std::byte, aligned_delete> memory;
    void* head = nullptr;
};

struct pool_adapter {
    strata::heap_source source;
    strata::pool pool{object_size, 16, source};
    STRATA_ALWAYS_INLINE void* allocate() noexcept { return pool.allocate(); }
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept { pool.deallocate(p); }
};

struct object_pool_adapter {
    strata::heap_source source;
    strata::object_pool<particle> pool{source};
    STRATA_ALWAYS_INLINE void* allocate() noexcept { return pool.create(); }
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept { pool.destroy(static_cast<particle*>(p)); }
};

struct size_class_adapter {
    strata::heap_source source;
    strata::size_class_pool pool{source};
    STRATA_ALWAYS_INLINE void* allocate() noexcept { return pool.allocate(object_size, 16); }
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept { pool.deallocate(p, object_size, 16); }
};

struct slab_adapter {
    strata::heap_source source;
    strata::slab_cache<particle> cache{source};
    STRATA_ALWAYS_INLINE void* allocate() noexcept { return cache.allocate(); }
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept { cache.deallocate(static_cast<particle*>(p)); }
};

struct magazine_adapter {
    strata::heap_source source;
    strata::magazine_cache<particle> cache{source};
    STRATA_ALWAYS_INLINE void* allocate() noexcept { return cache.allocate(); }
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept { cache.deallocate(static_cast<particle*>(p)); }
};

struct boost_pool_adapter {
    boost::pool<boost::default_user_allocator_malloc_free> pool{object_size};
    STRATA_ALWAYS_INLINE void* allocate() noexcept { return pool.malloc(); }
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept { pool.free(p); }
};

struct malloc_adapter {
    STRATA_ALWAYS_INLINE void* allocate() noexcept { return std::malloc(object_size); }
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept { std::free(p); }
};

// ---- the loop ---------------------------------------------------------------------------------

/// One iteration: every victim of the table in turn, free then allocate into its slot.
template <class A>
BENCH_KERNEL void free_alloc_loop(A& a, void** slots, const std::uint32_t* v) {
    for (std::size_t i = 0; i < pairs_per_iteration; ++i) {
        const std::uint32_t k = v[i];
        a.deallocate(slots[k]);
        void* p = a.allocate();
        *static_cast<unsigned char*>(p) = static_cast<unsigned char>(i);
        slots[k] = p;
    }
}

template <class A>
struct harness {
    std::unique_ptr<A> a = std::make_unique<A>();
    std::vector<void*> slots = std::vector<void*>(live_count);
    harness() {
        for (void*& s : slots)
            s = a->allocate();
    }
    ~harness() {
        for (void* s : slots)
            a->deallocate(s);
    }
    harness(const harness&) = delete;
    harness& operator=(const harness&) = delete;
};

template <class A>
void bm_churn(benchmark::State& state) {
    harness<A> h;
    free_alloc_loop(*h.a, h.slots.data(), victims.data()); // warm-up: pages touched, lists settled
    for (auto _ : state) {
        free_alloc_loop(*h.a, h.slots.data(), victims.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * pairs_per_iteration));
}

template <class A>
std::size_t count_churn(std::size_t fills) {
    harness<A> h;
    for (std::size_t f = 0; f < fills; ++f)
        free_alloc_loop(*h.a, h.slots.data(), victims.data());
    return fills * pairs_per_iteration;
}

#define POOL_BENCH(A, name)                                                                                  \
    BENCHMARK(bm_churn<A>)->Name(name "/w3_96B");                                                            \
    [[maybe_unused]] const bool registered_##A =                                                             \
        strata_bench::register_count_kernel(name "/w3_96B", &count_churn<A>)

POOL_BENCH(intrusive_list, "intrusive_list");
POOL_BENCH(pool_adapter, "pool");
POOL_BENCH(object_pool_adapter, "object_pool");
POOL_BENCH(size_class_adapter, "size_class_pool");
POOL_BENCH(slab_adapter, "slab_cache");
POOL_BENCH(magazine_adapter, "slab_magazines");
POOL_BENCH(boost_pool_adapter, "boost_pool");
POOL_BENCH(malloc_adapter, "malloc");

} // namespace
