// The adapter contestants of strata-lab (tools/lab/contestants_adapt.hpp) on the --quick workload.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "contestants_adapt.hpp"
#include "registry.hpp"
#include "workload.hpp"

namespace {

namespace lab = strata::lab;

const lab::registry& adapt_registry() {
    static const lab::registry r = [] {
        lab::registry reg;
        lab::add_adapt_contestants(reg);
        return reg;
    }();
    return r;
}

class AdaptContestant : public ::testing::TestWithParam<std::string> {};

TEST_P(AdaptContestant, RunsQuickWorkloadAlignedAndDisjoint) {
    const lab::contestant* c = adapt_registry().find(GetParam());
    ASSERT_NE(c, nullptr);
    const lab::workload w = lab::generate_workload(lab::quick_config());
    const lab::pass_result lat = c->run(w, lab::pass_kind::latency);
    EXPECT_EQ(lat.failed_allocs, 0u);
    ASSERT_TRUE(lat.memory.used_peak);
    EXPECT_GE(*lat.memory.used_peak, w.max_frame_bytes);
    const lab::pass_result tp = c->run(w, lab::pass_kind::throughput);
    EXPECT_EQ(tp.failed_allocs, 0u);
    const lab::check_result r = c->check(w);
    EXPECT_EQ(r.allocations, w.total_allocs());
    EXPECT_TRUE(r.ok());
}

INSTANTIATE_TEST_SUITE_P(Adapt, AdaptContestant,
                         ::testing::Values("tracked_arena", "debug_arena", "locked_arena"));

} // namespace
