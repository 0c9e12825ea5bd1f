#include "strata/core/stats.hpp"

#include <gtest/gtest.h>

namespace {

TEST(Stats, AddCountsSumsTheCountsAndLeavesLargestFreeBlock) {
    strata::stats a{.in_use = 10,
                    .peak = 40,
                    .capacity = 100,
                    .live_allocations = 1,
                    .total_allocations = 5,
                    .largest_free_block = 60};
    const strata::stats b{.in_use = 7,
                          .peak = 9,
                          .capacity = 50,
                          .live_allocations = 2,
                          .total_allocations = 3,
                          .largest_free_block = 80};
    strata::add_counts(a, b);
    EXPECT_EQ(a, (strata::stats{.in_use = 17,
                                .peak = 49,
                                .capacity = 150,
                                .live_allocations = 3,
                                .total_allocations = 8,
                                .largest_free_block = 60}));
}

constexpr strata::stats added() {
    strata::stats a{.in_use = 1};
    strata::add_counts(a, strata::stats{.in_use = 2, .peak = 3});
    return a;
}
static_assert(added().in_use == 3 && added().peak == 3, "add_counts is usable in constant expressions");

} // namespace
