// The bench-only contenders (bench_contenders.hpp) serve the churn workloads: no failed
// allocation, and every check() holds after every pass.
#include <gtest/gtest.h>

#include "bench_contenders.hpp"

namespace {

using namespace strata::lab;

TEST(ChurnContenders, EveryBenchContenderServesTheChurnWorkloads) {
    replay_options o;
    o.warmup = 0;
    o.repeats = 1;
    o.latency_passes = 1;
    o.sampling = false;
    const auto all = with_bench_contenders(op_registry());
    EXPECT_GT(all.size(), op_registry().size());
    for (const char* name : {"w1", "w2", "w3"}) {
        const op_workload w = gen::make(name, 0.005);
        for (const op_contender& c : all) {
            if (!c.applies(w)) continue;
            const replay_result r = c.run(w, o);
            EXPECT_EQ(r.failed, 0u) << c.name << " on " << name;
            EXPECT_EQ(r.check_failures, 0u) << c.name << " on " << name;
        }
    }
}

} // namespace
