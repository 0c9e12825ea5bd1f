// heap_metrics and heap_metrics_builder (heap/heap_metrics.hpp): the shared definitions the heaps
// report (HeapContract checks each heap's figures against a walk): block counts, waste, external
// fragmentation and the waste ratio, with their edge cases.
#include "strata/heap/heap_metrics.hpp"

#include <gtest/gtest.h>

namespace {

TEST(HeapMetrics, EmptyMetricsHaveNeutralRatios) {
    constexpr strata::heap_metrics m{};
    static_assert(m.block_count() == 0);
    static_assert(m.internal_waste() == 0);
    static_assert(m.external_fragmentation() == 0.0);
    EXPECT_EQ(m.waste_ratio(), 1.0) << "nothing live: no waste";
}

TEST(HeapMetrics, BuilderAccumulatesAWalk) {
    strata::heap_metrics_builder b;
    b.add({0, 100, true});
    b.add({116, 300, false});
    b.add({432, 50, true});
    b.add({498, 700, false});
    EXPECT_EQ(b.m.used_blocks, 2u);
    EXPECT_EQ(b.m.used_bytes, 150u);
    EXPECT_EQ(b.m.free_blocks, 2u);
    EXPECT_EQ(b.m.free_bytes, 1000u);
    EXPECT_EQ(b.m.largest_free_block, 700u);
    EXPECT_EQ(b.m.block_count(), 4u);
    EXPECT_DOUBLE_EQ(b.m.external_fragmentation(), 1.0 - 700.0 / 1000.0);
}

TEST(HeapMetrics, OneFreeBlockIsNoFragmentation) {
    strata::heap_metrics m;
    m.free_bytes = 4096;
    m.largest_free_block = 4096;
    EXPECT_EQ(m.external_fragmentation(), 0.0);
}

TEST(HeapMetrics, WasteIsWhatWasGrantedBeyondTheRequest) {
    strata::heap_metrics m;
    m.used_bytes = 128;
    m.requested_bytes = 100;
    EXPECT_EQ(m.internal_waste(), 28u);
    EXPECT_DOUBLE_EQ(m.waste_ratio(), 1.28);
    m.requested_bytes = 200; // more asked than granted (not a heap's figures): no negative waste
    EXPECT_EQ(m.internal_waste(), 0u);
}

} // namespace
