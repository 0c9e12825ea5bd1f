// Threaded slab benchmarks: strata::magazine_cache (slab_cache behind per-thread magazines) against
// the process's malloc. bench/slab_threads.sh runs this binary once per Debian malloc with
// LD_PRELOAD (each replaces malloc process-wide, so each gets its own process) and prints one table.
//
// Workloads (96-byte objects, manual timing: from a start flag to the last thread done, so thread
// creation and the untimed set-up are excluded):
//   own/2t    2 threads, each churning its own objects: 1,000 live each, free+allocate pairs with a
//             per-thread seeded random victim; items = pairs over both threads.
//   xfer/2t   producer/consumer: one thread allocates and hands objects over a single-producer
//             single-consumer ring (capacity 1,024) to the other, which frees them (every free is a
//             cross-thread free); items = objects.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "strata/core/config.hpp"
#include "strata/slab/magazine.hpp"
#include "strata/source/heap_source.hpp"

namespace {

constexpr std::size_t object_size = 96;
constexpr std::size_t live_per_thread = 1'000;
constexpr std::size_t pairs_per_thread = 1'000'000;
constexpr std::size_t transfers = 1'000'000;

/// A 96-byte particle whose constructor initialises nothing (as an engine's particle would be
/// filled by its emitter), so create() measures the allocator rather than a 96-byte memset.
struct alignas(16) particle {
    particle() noexcept {} // NOLINT(modernize-use-equals-default): = default would zero-fill on T()
    std::byte bytes[object_size];
};

struct malloc_adapter {
    STRATA_ALWAYS_INLINE void* allocate() noexcept { return std::malloc(object_size); }
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept { std::free(p); }
};

struct magazine_adapter {
    strata::heap_source source;
    strata::magazine_cache<particle> cache{source};
    STRATA_ALWAYS_INLINE void* allocate() noexcept { return cache.allocate(); }
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept { cache.deallocate(static_cast<particle*>(p)); }
};

std::uint64_t next(std::uint64_t& s) noexcept {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

template <class A>
void own_thread(A& a, std::uint64_t seed, const std::atomic<bool>& go, std::atomic<int>& ready) {
    std::vector<void*> live(live_per_thread);
    for (void*& p : live)
        p = a.allocate();
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire))
        std::this_thread::yield();
    std::uint64_t s = seed;
    for (std::size_t i = 0; i < pairs_per_thread; ++i) {
        const std::size_t k = next(s) % live_per_thread;
        a.deallocate(live[k]);
        void* p = a.allocate();
        *static_cast<unsigned char*>(p) = static_cast<unsigned char>(i);
        live[k] = p;
    }
    for (void* p : live)
        a.deallocate(p);
}

template <class A>
void bm_own(benchmark::State& state) {
    A a;
    for (auto _ : state) {
        std::atomic<bool> go{false};
        std::atomic<int> ready{0};
        std::thread t1([&] { own_thread(a, 0x1234567u, go, ready); });
        std::thread t2([&] { own_thread(a, 0x89abcdefu, go, ready); });
        while (ready.load() != 2)
            std::this_thread::yield();
        const auto t0 = std::chrono::steady_clock::now();
        go.store(true, std::memory_order_release);
        t1.join();
        t2.join();
        state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 2 * pairs_per_thread));
}

/// A single-producer single-consumer ring of pointers.
class spsc_ring {
public:
    static constexpr std::size_t capacity = 1024;
    bool push(void* p) noexcept {
        const std::size_t h = head_.load(std::memory_order_relaxed);
        if (h - tail_.load(std::memory_order_acquire) == capacity) return false;
        slots_[h % capacity] = p;
        head_.store(h + 1, std::memory_order_release);
        return true;
    }
    void* pop() noexcept {
        const std::size_t t = tail_.load(std::memory_order_relaxed);
        if (head_.load(std::memory_order_acquire) == t) return nullptr;
        void* p = slots_[t % capacity];
        tail_.store(t + 1, std::memory_order_release);
        return p;
    }

private:
    alignas(64) std::atomic<std::size_t> head_{0};
    alignas(64) std::atomic<std::size_t> tail_{0};
    alignas(64) void* slots_[capacity] = {};
};

template <class A>
void bm_xfer(benchmark::State& state) {
    A a;
    for (auto _ : state) {
        auto ring = std::make_unique<spsc_ring>();
        std::atomic<bool> go{false};
        std::atomic<int> ready{0};
        std::thread producer([&] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire))
                std::this_thread::yield();
            for (std::size_t i = 0; i < transfers; ++i) {
                void* p = a.allocate();
                *static_cast<unsigned char*>(p) = static_cast<unsigned char>(i);
                while (!ring->push(p))
                    std::this_thread::yield(); // 2 threads may share fewer cores: never spin a slice away
            }
        });
        std::thread consumer([&] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire))
                std::this_thread::yield();
            for (std::size_t i = 0; i < transfers; ++i) {
                void* p;
                while ((p = ring->pop()) == nullptr)
                    std::this_thread::yield();
                benchmark::DoNotOptimize(*static_cast<unsigned char*>(p));
                a.deallocate(p);
            }
        });
        while (ready.load() != 2)
            std::this_thread::yield();
        const auto t0 = std::chrono::steady_clock::now();
        go.store(true, std::memory_order_release);
        producer.join();
        consumer.join();
        state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * transfers));
}

BENCHMARK(bm_own<malloc_adapter>)
    ->Name("malloc/own/2t")
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_own<magazine_adapter>)
    ->Name("slab_magazines/own/2t")
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_xfer<malloc_adapter>)
    ->Name("malloc/xfer/2t")
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_xfer<magazine_adapter>)
    ->Name("slab_magazines/xfer/2t")
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

} // namespace
