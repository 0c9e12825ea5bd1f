// strata-lab showdown: every design runs every (scaled-down) particle set with both particle
// types and ends with the same live count and checksum as packed_array (they all run the same
// spawn/kill sequence); lookup and the layout pass produce finite times.
#include "showdown.hpp"

#include <cmath>
#include <cstddef>

#include <gtest/gtest.h>

namespace sd = strata::lab::showdown;

namespace {

template <class P>
void every_design_agrees(const sd::set_config& s) {
    const sd::timings reference = sd::design_list<P>::all[2].run(s, 1, 42); // packed_array
    EXPECT_EQ(reference.live, s.allocs - s.frees);
    EXPECT_NEAR(reference.checksum,
                static_cast<double>(reference.live) * (100.0 - 0.001 * static_cast<double>(s.iterations)),
                1e-2 * static_cast<double>(reference.live));
    for (const auto& d : sd::design_list<P>::all) {
        const sd::timings t = d.run(s, 1, 42);
        EXPECT_EQ(t.live, reference.live) << d.name << " " << s.name;
        // The checksum sums lifetimes: every live particle had the same updates, whichever it is.
        EXPECT_NEAR(t.checksum, reference.checksum, 1e-3 * std::abs(reference.checksum) + 1e-3)
            << d.name << " " << s.name;
        EXPECT_GE(t.alloc_free_ms, 0.0);
        EXPECT_GE(t.churn_ms, 0.0);
        EXPECT_GE(t.iteration_ms, 0.0);
    }
}

} // namespace

TEST(Showdown, SetsMatchSeed001) {
    EXPECT_EQ(sd::published_sets[0].allocs, 10'000u);
    EXPECT_EQ(sd::published_sets[0].frees, 9'500u);
    EXPECT_EQ(sd::published_sets[2].allocs, 100'000u);
    EXPECT_EQ(sd::published_sets[3].iterations, 100'000u);
    ASSERT_NE(sd::published_for("slot_map"), nullptr);
    EXPECT_DOUBLE_EQ(sd::published_for("slot_map")->sets[3].iteration_ms, 30.62);
    EXPECT_EQ(sd::published_for("plf_colony"), nullptr);
}

TEST(Showdown, EveryDesignRunsEverySetConsistently) {
    for (const sd::set_config& s : sd::published_sets) {
        const sd::set_config q = sd::quick(s);
        every_design_agrees<sd::particle>(q);
        every_design_agrees<sd::particle32>(q);
    }
}

TEST(Showdown, LookupAndLayoutPassesRun) {
    const double ns = sd::lookup_ns<strata::slot_map<sd::particle, sd::particle_handle>>(1000, 10'000, 1);
    EXPECT_GT(ns, 0.0);
    EXPECT_TRUE(std::isfinite(ns));
    const double ht = sd::lookup_ns<strata::handle_table<sd::particle, sd::particle_handle>>(1000, 10'000, 1);
    EXPECT_TRUE(std::isfinite(ht));
    const strata::lab::layout::timings t = strata::lab::layout::small_entity::measure(10'000, 1, true);
    EXPECT_TRUE(std::isfinite(t.aos_ms) && std::isfinite(t.soa_ms) && std::isfinite(t.soa_unpadded_ms));
    EXPECT_TRUE(std::isfinite(t.aos_all_ms) && std::isfinite(t.soa_all_ms));
}
