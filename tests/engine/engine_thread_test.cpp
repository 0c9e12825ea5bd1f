// engine_heap under threads: cross-thread frees, producer/consumer, thread exit handing caches
// back (runs adopted by other threads), a random shared-pointer stress.
// TSAN_STAGE: the CI tsan stage runs the *Thread* tests of this file.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "strata/engine/engine_heap.hpp"

namespace {

using strata::engine_heap;

strata::engine_options options() {
    strata::engine_options o;
    o.reserve_bytes = std::size_t{2} << 30;
    return o;
}

TEST(EngineHeapThreads, CrossThreadFreesReturnToTheOwner) {
    engine_heap h(options());
    std::vector<void*> blocks;
    for (int i = 0; i < 20000; ++i) {
        blocks.push_back(h.allocate(16 + static_cast<std::size_t>(i % 300)));
        std::memset(blocks.back(), 1, 16);
    }
    std::thread([&] {
        for (void* p : blocks)
            h.deallocate(p);
    }).join();
    // The owner finds the frees when its runs run dry; reallocating the same amount must not need
    // much new memory.
    const std::size_t before = h.class_stats(0).committed_bytes + h.class_stats(10).committed_bytes;
    blocks.clear();
    for (int i = 0; i < 20000; ++i)
        blocks.push_back(h.allocate(16 + static_cast<std::size_t>(i % 300)));
    EXPECT_LE(h.class_stats(0).committed_bytes + h.class_stats(10).committed_bytes, before + 4 * 65536);
    for (void* p : blocks)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// Big medium blocks churned by two threads: purged before the free outside the medium lock
// (cap 0), by the cap's purges under it (a 4 MiB cap), or decaying after 1 ms under a purge thread
// that steps every millisecond. Contents stay each thread's own throughout: a byte on every page of
// every live block, a pattern per block, so a purge that reached a live page (it would read zero)
// or a block handed to both threads fails.
TEST(EngineHeapThreads, BigMediumChurnPurgesSafely) {
    for (const int mode : {0, 1, 2}) {
        const std::size_t budget = mode == 0 ? 0 : std::size_t{4} << 20;
        strata::engine_options o = options();
        o.medium_retain_bytes = budget;
        o.purge_medium_bytes = std::size_t{256} << 10;
        if (mode == 2) o.decay_ms = 1;
        engine_heap h(o);
        if (mode == 2) {
            ASSERT_TRUE(h.start_purge_thread(std::chrono::milliseconds{1}));
        }
        std::atomic<bool> ok{true};
        auto churn = [&](unsigned seed) {
            std::mt19937 r(seed);
            struct block {
                unsigned char* p = nullptr;
                std::size_t n = 0;
                unsigned char tag = 0;
            };
            std::vector<block> mine(4);
            const auto byte_at = [&](const block& b, std::size_t page) {
                return static_cast<unsigned char>(b.tag + page * 7 + seed * 101);
            };
            const auto intact = [&](const block& b) {
                for (std::size_t at = 0; at < b.n - 1; at += 4096)
                    if (b.p[at] != byte_at(b, at / 4096)) return false;
                return b.p[b.n - 1] == static_cast<unsigned char>(~b.tag);
            };
            for (int i = 0; i < 200; ++i) {
                block& b = mine[r() % mine.size()];
                if (b.p != nullptr) {
                    if (!intact(b)) ok = false;
                    h.deallocate(b.p);
                }
                b.n = (std::size_t{256} << 10) + r() % (std::size_t{768} << 10);
                b.tag = static_cast<unsigned char>(i + 1);
                b.p = static_cast<unsigned char*>(h.allocate(b.n));
                if (b.p == nullptr) {
                    ok = false;
                    return;
                }
                for (std::size_t at = 0; at < b.n - 1; at += 4096)
                    b.p[at] = byte_at(b, at / 4096);
                b.p[b.n - 1] = static_cast<unsigned char>(~b.tag);
                // Every live block of this thread, not only the one just written: the other
                // thread's frees and sweeps ran since they were written.
                for (const block& other : mine)
                    if (other.p != nullptr && !intact(other)) ok = false;
            }
            for (block& b : mine)
                h.deallocate(b.p);
        };
        std::thread a(churn, 1u), b(churn, 2u);
        a.join();
        b.join();
        h.stop_purge_thread();
        EXPECT_TRUE(ok) << "mode " << mode;
        h.trim();
        EXPECT_TRUE(h.check());
        EXPECT_EQ(h.stats().live_allocations, 0u);
    }
}

TEST(EngineHeapThreads, ProducerConsumer) {
    engine_heap h(options());
    constexpr int count = 100000;
    std::mutex m;
    std::vector<void*> queue;
    std::atomic<bool> done{false};
    std::thread producer([&] {
        std::mt19937 rng(1);
        std::vector<void*> batch;
        for (int i = 0; i < count; ++i) {
            const std::size_t size = rng() % 4 == 0 ? rng() % 100000 : rng() % 256;
            void* p = h.allocate(size + 8);
            ASSERT_NE(p, nullptr);
            std::memcpy(p, &i, sizeof i);
            batch.push_back(p);
            if (batch.size() == 64) {
                std::lock_guard<std::mutex> g(m);
                queue.insert(queue.end(), batch.begin(), batch.end());
                batch.clear();
            }
        }
        std::lock_guard<std::mutex> g(m);
        queue.insert(queue.end(), batch.begin(), batch.end());
        done = true;
    });
    std::thread consumer([&] {
        std::size_t freed = 0;
        std::vector<void*> take;
        while (freed < count) {
            {
                std::lock_guard<std::mutex> g(m);
                take.swap(queue);
            }
            for (void* p : take)
                h.deallocate(p);
            freed += take.size();
            take.clear();
            if (take.empty()) std::this_thread::yield();
        }
    });
    producer.join();
    consumer.join();
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

TEST(EngineHeapThreads, ThreadExitHandsRunsToOthers) {
    engine_heap h(options());
    std::vector<void*> survivors;
    std::mutex m;
    std::size_t committed_early = 0;
    for (int round = 0; round < 8; ++round) {
        if (round == 2) committed_early = h.committed_bytes();
        std::vector<std::thread> threads;
        for (int t = 0; t < 3; ++t) {
            threads.emplace_back([&, t] {
                std::vector<void*> mine;
                for (int i = 0; i < 3000; ++i)
                    mine.push_back(h.allocate(static_cast<std::size_t>(32 + (i * 7 + t) % 2000)));
                (void)h.frame_arena().allocate(1000); // a frame arena is destroyed at exit too
                // Half die with the thread's cache, half outlive it.
                std::lock_guard<std::mutex> g(m);
                for (std::size_t i = 0; i < mine.size(); ++i) {
                    if (i % 2 == 0)
                        h.deallocate(mine[i]);
                    else
                        survivors.push_back(mine[i]);
                }
            });
        }
        for (auto& th : threads)
            th.join();
        // Free half of the survivors from this thread: into abandoned or adopted runs.
        for (std::size_t i = 0; i < survivors.size() / 2; ++i)
            h.deallocate(survivors[i]);
        survivors.erase(survivors.begin(), survivors.begin() + static_cast<long>(survivors.size() / 2));
        ASSERT_TRUE(h.check()) << round;
    }
    const std::size_t committed = h.committed_bytes();
    for (void* p : survivors)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
    // Rounds reuse adopted runs: the heap did not grow by a fresh set of runs per thread.
    EXPECT_LE(committed, committed_early + (std::size_t{16} << 20));
}

// A thread's runs with live blocks are abandoned when it exits; blocks another thread frees into
// them later wait there for a thread that needs that size class. trim() frees the runs left empty.
TEST(EngineHeapThreads, TrimFreesAbandonedRunsOtherThreadsEmptied) {
    engine_heap h(options());
    const unsigned c = strata::engine_detail::class_of(64);
    std::vector<void*> blocks;
    std::thread([&] {
        for (int i = 0; i < 20000; ++i) // 1.25 MiB of 64-byte blocks: about 20 runs
            blocks.push_back(h.allocate(64));
    }).join();
    const std::size_t held = h.class_stats(c).committed_bytes;
    ASSERT_GE(held, std::size_t{1} << 20);
    for (void* p : blocks) // remote frees: none of these runs has an owner any more
        h.deallocate(p);
    EXPECT_EQ(h.class_stats(c).committed_bytes, held) << "nothing collects them before trim";
    h.trim();
    EXPECT_EQ(h.class_stats(c).committed_bytes, 0u);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
    // The memory is the span pool's again: other sizes reuse it instead of growing the heap.
    const auto [lo, hi] = std::minmax_element(blocks.begin(), blocks.end(), [](void* a, void* b) {
        return reinterpret_cast<std::uintptr_t>(a) < reinterpret_cast<std::uintptr_t>(b);
    });
    const auto first = reinterpret_cast<std::uintptr_t>(*lo), last = reinterpret_cast<std::uintptr_t>(*hi);
    std::vector<void*> other;
    std::size_t reused = 0;
    for (int i = 0; i < 5000; ++i) { // ~1 MiB of 200-byte blocks
        other.push_back(h.allocate(200));
        const auto at = reinterpret_cast<std::uintptr_t>(other.back());
        reused += at >= first && at <= last;
    }
    EXPECT_GE(reused, other.size() / 2) << "the 64-byte runs' memory was not reused";
    for (void* p : other)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

TEST(EngineHeapThreads, SharedSlotsStress) {
    engine_heap h(options());
    constexpr std::size_t slots = 4096;
    std::vector<std::atomic<void*>> shared(slots);
    for (auto& s : shared)
        s.store(nullptr);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(t + 11);
            for (int i = 0; i < 60000; ++i) {
                const std::size_t r = rng();
                std::size_t size = r % 100 < 90 ? r % 512 : r % 200000;
                if (r % 1000 == 0) size = std::size_t{9} << 20;
                void* p = h.allocate(size, r % 8 == 0 ? 64 : 16);
                ASSERT_NE(p, nullptr);
                std::memset(p, static_cast<int>(t), std::min<std::size_t>(size, 32));
                void* old = shared[(r >> 20) % slots].exchange(p);
                if (old != nullptr) h.deallocate(old);
                if (i % 10000 == 0 && t == 0) h.flush_thread_cache();
            }
        });
    }
    for (auto& th : threads)
        th.join();
    for (auto& s : shared)
        h.deallocate(s.exchange(nullptr));
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

} // namespace
