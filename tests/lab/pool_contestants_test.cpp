// The pool and slab contestants of strata-lab (tools/lab/contestants_pool.hpp) on the --quick
// workload: every allocation served, aligned, disjoint, and memory figures reported.
#include <string>

#include <gtest/gtest.h>

#include "contestants_pool.hpp"
#include "registry.hpp"
#include "workload.hpp"

namespace lab = strata::lab;

namespace {

const lab::registry& pool_registry() {
    static const lab::registry r = [] {
        lab::registry reg;
        lab::add_pool_contestants(reg);
        return reg;
    }();
    return r;
}

class PoolLabContestant : public ::testing::TestWithParam<std::string> {};

TEST_P(PoolLabContestant, RunsQuickWorkload) {
    const lab::contestant* c = pool_registry().find(GetParam());
    ASSERT_NE(c, nullptr);
    const lab::workload w = lab::generate_workload(lab::quick_config());
    const lab::pass_result lat = c->run(w, lab::pass_kind::latency);
    EXPECT_EQ(lat.failed_allocs, 0u);
    EXPECT_EQ(lat.latency_ticks.size(), w.timed_allocs);
    ASSERT_TRUE(lat.memory.used_peak.has_value());
    ASSERT_TRUE(lat.memory.held_peak.has_value());
    EXPECT_GE(*lat.memory.used_peak, w.max_frame_bytes);
    EXPECT_GE(*lat.memory.held_peak, *lat.memory.used_peak);
    EXPECT_GT(lat.memory.upstream_calls, 0u);
    const lab::pass_result tp = c->run(w, lab::pass_kind::throughput);
    EXPECT_EQ(tp.failed_allocs, 0u);
    EXPECT_GT(tp.loop_seconds, 0.0);
}

TEST_P(PoolLabContestant, ServesAlignedDisjointBlocks) {
    const lab::contestant* c = pool_registry().find(GetParam());
    ASSERT_NE(c, nullptr);
    const lab::workload w = lab::generate_workload(lab::quick_config(7));
    const lab::check_result r = c->check(w);
    EXPECT_EQ(r.allocations, w.total_allocs());
    EXPECT_EQ(r.null, 0u);
    EXPECT_EQ(r.misaligned, 0u);
    EXPECT_EQ(r.overlapping, 0u);
}

INSTANTIATE_TEST_SUITE_P(Pool, PoolLabContestant, ::testing::Values("size_class_pool", "slab_classes"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

} // namespace
