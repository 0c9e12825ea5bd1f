// Heap-family benchmarks: the strata-churn W1/W2 free+allocate pair loops (bench/churn/churn.hpp,
// the identical seeded sequences) through tlsf, buddy and the free lists, and malloc for scale.
//
// The pair loop is one out-of-line function template per contender (`churn_alloc_loop`), shared by
// the timed benchmark and the callgrind count mode, so what callgrind counts is what is timed:
//
//   python3 bench/callgrind.py build/heap-release/bench/strata_bench_heap tlsf/w1 buddy/w1 --fills 2 6
//
// One count-mode "fill" is 10,000 pairs; allocations reported = pairs, so the Ir/alloc columns read
// as instructions per free+allocate pair (loop bookkeeping included: ~10 instructions).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <vector>

#include <benchmark/benchmark.h>

#include "strata/core/bit.hpp"
#include "strata/heap/buddy.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"

#include "churn.hpp"
#include "count_kernel.hpp"

namespace {

using strata::churn::pair_op;
using strata::churn::workload;

constexpr std::size_t pairs_per_fill = 10'000;

const workload& w1() {
    static const workload w = strata::churn::make_w1();
    return w;
}
const workload& w2() {
    static const workload w = strata::churn::make_w2();
    return w;
}

/// Pre-faulted, 4 KiB-aligned memory.
struct region {
    explicit region(std::size_t n)
        : bytes(n), data(static_cast<std::byte*>(::operator new (n, std::align_val_t{4096}))) {
        std::memset(data, 0, n);
    }
    ~region() { ::operator delete (data, std::align_val_t{4096}); }
    region(const region&) = delete;
    region& operator=(const region&) = delete;
    [[nodiscard]] std::span<std::byte> span() const noexcept { return {data, bytes}; }
    std::size_t bytes;
    std::byte* data;
};

/// Unsized free, or with `Sized` the sized call (tlsf takes the size as a prefetch hint).
template <class Heap, bool Sized = false>
struct pool_heap {
    explicit pool_heap(const workload& w)
        : memory(2 * w.peak_live_bytes + 32 * w.live() + (std::size_t{1} << 20)), heap(memory.span()) {}
    [[gnu::always_inline]] void* allocate(std::size_t n) noexcept { return heap.allocate(n, 16); }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t n) noexcept {
        if constexpr (Sized) {
            heap.deallocate(p, n, 16);
        } else {
            heap.deallocate(p);
        }
    }
    region memory;
    Heap heap;
};

struct buddy_heap {
    explicit buddy_heap(const workload& w)
        : memory(strata::next_pow2(2 * w.peak_live_bytes + 16 * w.live())), heap(memory.span(), 16) {}
    [[gnu::always_inline]] void* allocate(std::size_t n) noexcept { return heap.allocate(n, 16); }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t n) noexcept { heap.deallocate(p, n, 16); }
    region memory;
    strata::buddy heap;
};

struct malloc_heap {
    explicit malloc_heap(const workload&) {}
    [[gnu::always_inline]] void* allocate(std::size_t n) noexcept { return std::malloc(n); }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t) noexcept { std::free(p); }
};

/// The measured loop: `n` pairs starting at `ops`, each freeing a slot and refilling it.
template <class A>
BENCH_KERNEL void churn_alloc_loop(A& a, const pair_op* ops, std::size_t n, void** slots,
                                   std::uint32_t* sizes) {
    for (std::size_t i = 0; i < n; ++i) {
        const pair_op op = ops[i];
        a.deallocate(slots[op.victim], sizes[op.victim]);
        void* p = a.allocate(op.size);
        *static_cast<unsigned char*>(p) = static_cast<unsigned char>(i);
        slots[op.victim] = p;
        sizes[op.victim] = op.size;
    }
    benchmark::ClobberMemory();
}

/// A contender with its live set in place.
template <class A>
struct churn_state {
    explicit churn_state(const workload& w) : wl(w), a(std::make_unique<A>(w)), sizes(w.initial) {
        slots.resize(w.live());
        for (std::size_t i = 0; i < w.live(); ++i)
            slots[i] = a->allocate(w.initial[i]);
    }
    ~churn_state() {
        for (std::size_t i = 0; i < slots.size(); ++i)
            a->deallocate(slots[i], sizes[i]);
    }
    churn_state(const churn_state&) = delete;
    churn_state& operator=(const churn_state&) = delete;
    /// Runs `n` pairs, continuing where the previous call stopped (wrapping at the end). Returns n.
    std::size_t run(std::size_t n) {
        std::size_t left = n;
        while (left > 0) {
            const std::size_t chunk = std::min(left, wl.pairs.size() - next);
            churn_alloc_loop(*a, wl.pairs.data() + next, chunk, slots.data(), sizes.data());
            next = (next + chunk) % wl.pairs.size();
            left -= chunk;
        }
        return n;
    }
    const workload& wl;
    std::unique_ptr<A> a;
    std::vector<void*> slots;
    std::vector<std::uint32_t> sizes;
    std::size_t next = 0;
};

template <class A, const workload& (*W)()>
void bm_churn(benchmark::State& state) {
    churn_state<A> s(W());
    s.run(W().pairs.size() / 10); // warm-up: reach the steady-state layout
    for (auto _ : state)
        s.run(pairs_per_fill);
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * pairs_per_fill));
}

// Count mode: the same 100,000-pair warm-up as the timed run, then `fills` x 10,000 pairs. The warm-up
// is counted as allocations too, so both of callgrind.py's columns stay per pair; its "program"
// column (long run minus short run) is the steady state alone.
template <class A, const workload& (*W)()>
std::size_t count_churn(std::size_t fills) {
    churn_state<A> s(W());
    return s.run(W().pairs.size() / 10) + s.run(fills * pairs_per_fill);
}

using tlsf_heap = pool_heap<strata::tlsf>;
using tlsf_sized_heap = pool_heap<strata::tlsf, true>;
using tlsf4_heap = pool_heap<strata::basic_tlsf<4>>;
using first_fit_heap = pool_heap<strata::free_list_first_fit>;

#define HEAP_BENCH(A, W, NAME)                                                                               \
    BENCHMARK_TEMPLATE(bm_churn, A, W)->Name(NAME);                                                          \
    [[maybe_unused]] const bool registered_##A##_##W =                                                       \
        strata_bench::register_count_kernel(NAME, &count_churn<A, W>)

HEAP_BENCH(tlsf_heap, w1, "tlsf/w1");
HEAP_BENCH(tlsf_heap, w2, "tlsf/w2");
HEAP_BENCH(tlsf_sized_heap, w1, "tlsf_sized/w1");
HEAP_BENCH(tlsf_sized_heap, w2, "tlsf_sized/w2");
HEAP_BENCH(tlsf4_heap, w1, "tlsf_sli4/w1");
HEAP_BENCH(tlsf4_heap, w2, "tlsf_sli4/w2");
HEAP_BENCH(buddy_heap, w1, "buddy/w1");
HEAP_BENCH(buddy_heap, w2, "buddy/w2");
HEAP_BENCH(first_fit_heap, w1, "free_list_first_fit/w1");
HEAP_BENCH(malloc_heap, w1, "malloc/w1");
HEAP_BENCH(malloc_heap, w2, "malloc/w2");

} // namespace
