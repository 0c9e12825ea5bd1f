// core/spinlock.hpp: the non-allocating lock of the engine heap, the malloc shim and the trace
// recorder. TSAN_STAGE: the tests named *Thread* run in the ThreadSanitizer CI stage.
#include "strata/core/spinlock.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

namespace {

// A static lock needs no constructor to run: it can guard state used before main and inside malloc.
constinit strata::spinlock static_lock;

static_assert(std::is_nothrow_default_constructible_v<strata::spinlock>);
static_assert(!std::is_copy_constructible_v<strata::spinlock>);
static_assert(!std::is_copy_assignable_v<strata::spinlock>);
static_assert(!std::is_copy_constructible_v<strata::spin_guard>);

TEST(Spinlock, TryLockTakesAFreeLockOnly) {
    strata::spinlock l;
    EXPECT_TRUE(l.try_lock());
    EXPECT_FALSE(l.try_lock());
    l.unlock();
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

TEST(Spinlock, LockThenUnlockLeavesItFree) {
    strata::spinlock l;
    l.lock();
    EXPECT_FALSE(l.try_lock());
    l.unlock();
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

TEST(Spinlock, GuardHoldsTheLockForItsScope) {
    strata::spinlock l;
    {
        strata::spin_guard g(l);
        EXPECT_FALSE(l.try_lock());
    }
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

TEST(Spinlock, ResetReleasesALockWhoeverHoldsIt) {
    strata::spinlock l;
    l.lock();
    l.reset(); // what a fork child does with a lock another thread held
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

TEST(Spinlock, WorksWithStdLockGuardAndUniqueLock) {
    {
        std::lock_guard<strata::spinlock> g(static_lock);
        EXPECT_FALSE(static_lock.try_lock());
    }
    std::unique_lock<strata::spinlock> u(static_lock, std::try_to_lock);
    EXPECT_TRUE(u.owns_lock());
}

// Mutual exclusion: a plain (non-atomic) counter incremented under the lock by several threads
// ends at the exact total, and no two threads are ever inside at once.
TEST(SpinlockThread, ExcludesEveryOtherThread) {
    strata::spinlock l;
    std::uint64_t counter = 0;
    std::atomic<int> inside{0};
    std::atomic<bool> overlap{false};
    constexpr int threads = 4;
    constexpr int rounds = 20'000;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            for (int i = 0; i < rounds; ++i) {
                strata::spin_guard g(l);
                if (inside.fetch_add(1, std::memory_order_relaxed) != 0) overlap = true;
                ++counter;
                inside.fetch_sub(1, std::memory_order_relaxed);
            }
        });
    for (auto& th : pool)
        th.join();
    EXPECT_FALSE(overlap.load());
    EXPECT_EQ(counter, std::uint64_t{threads} * rounds);
}

// A waiter that spins past its pauses and yields still gets the lock once the holder lets go.
TEST(SpinlockThread, AWaiterGetsTheLockWhenTheHolderReleasesIt) {
    strata::spinlock l;
    l.lock();
    std::atomic<bool> got{false};
    std::thread waiter([&] {
        strata::spin_guard g(l);
        got = true;
    });
    for (int i = 0; i < 1000; ++i)
        std::this_thread::yield(); // the waiter is past its 64 pauses by now
    EXPECT_FALSE(got.load());
    l.unlock();
    waiter.join();
    EXPECT_TRUE(got.load());
}

} // namespace
