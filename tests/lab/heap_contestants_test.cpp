// The heap contestants of strata-lab (tools/lab/contestants_heap.hpp) on the --quick workload: every
// allocation served, aligned, disjoint, and memory figures reported.
#include <string>

#include <gtest/gtest.h>

#include "contestants_heap.hpp"
#include "registry.hpp"
#include "workload.hpp"

namespace lab = strata::lab;

namespace {

const lab::registry& heap_registry() {
    static const lab::registry r = [] {
        lab::registry reg;
        lab::add_heap_contestants(reg);
        return reg;
    }();
    return r;
}

class HeapLabContestant : public ::testing::TestWithParam<std::string> {};

TEST_P(HeapLabContestant, RunsQuickWorkload) {
    const lab::contestant* c = heap_registry().find(GetParam());
    ASSERT_NE(c, nullptr);
    const lab::workload w = lab::generate_workload(lab::quick_config());
    const lab::pass_result lat = c->run(w, lab::pass_kind::latency);
    EXPECT_EQ(lat.failed_allocs, 0u);
    EXPECT_EQ(lat.latency_ticks.size(), w.timed_allocs);
    ASSERT_TRUE(lat.memory.used_peak.has_value());
    ASSERT_TRUE(lat.memory.held_peak.has_value());
    EXPECT_GE(*lat.memory.used_peak, w.max_frame_bytes);
    EXPECT_GE(*lat.memory.held_peak, *lat.memory.used_peak);
    const lab::pass_result tp = c->run(w, lab::pass_kind::throughput);
    EXPECT_EQ(tp.failed_allocs, 0u);
    EXPECT_GT(tp.loop_seconds, 0.0);
}

TEST_P(HeapLabContestant, ServesAlignedDisjointBlocks) {
    const lab::contestant* c = heap_registry().find(GetParam());
    ASSERT_NE(c, nullptr);
    const lab::workload w = lab::generate_workload(lab::quick_config(7));
    const lab::check_result r = c->check(w);
    EXPECT_EQ(r.allocations, w.total_allocs());
    EXPECT_EQ(r.null, 0u);
    EXPECT_EQ(r.misaligned, 0u);
    EXPECT_EQ(r.overlapping, 0u);
}

INSTANTIATE_TEST_SUITE_P(Heap, HeapLabContestant,
                         ::testing::Values("tlsf", "buddy", "free_list_first_fit", "free_list_best_fit"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

} // namespace
