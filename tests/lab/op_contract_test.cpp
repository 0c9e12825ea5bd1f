// The op contract's optional members and replay options (tools/lab/core/replay.hpp): check() after every
// pass, a timed window for throughput passes, a replay without the sampling pass. The bench-only
// contenders have their own test (bench/churn/contenders_test.cpp).
#include <chrono>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "replay.hpp"

namespace {

using namespace strata::lab;

/// Over malloc; check() fails on its `fail_from`-th call and after; an allocation of 7 bytes
/// sleeps (it marks the ops outside the timed window).
class checked_heap {
public:
    static bool applies(const op_workload&) noexcept { return true; }
    explicit checked_heap(const op_workload&) {}
    void* allocate(std::size_t size, std::size_t) noexcept {
        if (size == 7) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return std::malloc(size);
    }
    void deallocate(void* p, std::size_t, std::size_t) noexcept { std::free(p); }
    bool check() noexcept { return ++calls < fail_from; }
    static inline int calls = 0;
    static inline int fail_from = 1000;
};

TEST(LabOpContract, CheckRunsAfterEveryPassAndCountsFailures) {
    op_builder b("one", "one block");
    b.free(b.allocate(32));
    const op_workload w = b.finish();
    replay_options o;
    o.warmup = 1;
    o.repeats = 2;
    o.latency_passes = 2;
    checked_heap::calls = 0;
    checked_heap::fail_from = 1000;
    EXPECT_EQ(replay<checked_heap>(w, o).check_failures, 0u);
    EXPECT_EQ(checked_heap::calls, 6); // 1 + 2 + 2 passes and the sampling pass
    checked_heap::calls = 0;
    checked_heap::fail_from = 5;
    EXPECT_EQ(replay<checked_heap>(w, o).check_failures, 2u);
}

TEST(LabOpContract, ThroughputPassesTimeOnlyTheirWindowAndSamplingCanBeLeftOut) {
    op_builder b("window", "a slow allocation before and after the timed ops");
    const auto slow = b.allocate(7);
    for (int i = 0; i < 10; ++i)
        b.free(b.allocate(64));
    b.free(slow);
    const auto late = b.allocate(7);
    b.free(late);
    const op_workload w = b.finish();
    replay_options o;
    o.warmup = 0;
    o.repeats = 1;
    o.latency_passes = 0;
    o.sampling = false;
    o.timed_begin = 1;
    o.timed_end = 21;
    checked_heap::fail_from = 1000;
    const replay_result r = replay<checked_heap>(w, o);
    ASSERT_EQ(r.seconds.size(), 1u);
    EXPECT_LT(r.seconds[0], 0.015); // the two 20 ms allocations ran outside the window
    EXPECT_TRUE(r.series.empty());
    EXPECT_EQ(r.failed, 0u);
}

} // namespace
