// strata-lab replay adapters of the device-memory family (tools/lab/core/op_contenders.hpp):
// offset_heap_replay and device_pool_replay hand out addresses in their host region that follow the
// allocator's offsets, keep its answer (node or handle) for the free, and report free space.
#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "op_contenders.hpp"

namespace {

using namespace strata::lab;

op_workload shape(std::uint64_t peak_bytes, std::uint64_t peak_blocks) {
    op_workload w;
    w.peak_live_bytes = peak_bytes;
    w.peak_live_blocks = peak_blocks;
    w.max_align = 4096;
    return w;
}

/// Allocates random sizes and alignments, frees half at random, and checks that the blocks are
/// aligned, inside the region, disjoint, and that usable_size covers each request.
template <class A>
void churn(A& a, std::uint64_t max_size, std::vector<std::pair<std::byte*, std::size_t>>& live) {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < 200; ++i) {
            const std::size_t size = 1 + rng() % max_size;
            const std::size_t align = std::size_t{1} << (rng() % 13);
            auto* p = static_cast<std::byte*>(a.allocate(size, align));
            ASSERT_NE(p, nullptr) << size << " @" << align;
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u);
            EXPECT_GE(a.usable_size(p), size);
            p[0] = std::byte{1}; // the replay writes the first and last byte
            p[size - 1] = std::byte{2};
            live.emplace_back(p, size);
        }
        std::shuffle(live.begin(), live.end(), rng);
        for (std::size_t k = live.size() / 2; k-- > 0;) {
            a.deallocate(live.back().first, live.back().second, 16);
            live.pop_back();
        }
    }
    std::vector<std::pair<std::byte*, std::size_t>> sorted(live);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 1; i < sorted.size(); ++i)
        EXPECT_LE(sorted[i - 1].first + sorted[i - 1].second, sorted[i].first) << "overlapping blocks";
}

TEST(LabDeviceContenders, OffsetHeapBlocksFollowTheHeapsOffsets) {
    const op_workload w = shape(std::uint64_t{1} << 20, 1000);
    ASSERT_TRUE(offset_heap_replay::applies(w));
    offset_heap_replay a(w);
    const heap_probe empty = a.probe();
    EXPECT_EQ(empty.free_bytes, empty.largest_free) << "one free block at first";
    EXPECT_EQ(empty.free_bytes, (heap_bytes(w) + 4095) / 4096 * 4096) << "the region, in whole pages";
    std::vector<std::pair<std::byte*, std::size_t>> live;
    churn(a, 2000, live);
    std::size_t used = 0;
    for (const auto& [p, size] : live)
        used += a.usable_size(p);
    const heap_probe half = a.probe();
    EXPECT_EQ(half.free_bytes, empty.free_bytes - used);
    EXPECT_LT(half.largest_free, half.free_bytes) << "freeing half at random leaves holes";
    EXPECT_GT(a.footprint(), 0u);
    for (const auto& [p, size] : live)
        a.deallocate(p, size, 16);
    EXPECT_EQ(a.probe().free_bytes, empty.free_bytes) << "every block came back and merged";
    EXPECT_EQ(a.probe().largest_free, empty.free_bytes);
}

TEST(LabDeviceContenders, DevicePoolBlocksAndDedicatedAllocationsComeBack) {
    const op_workload w = shape(std::uint64_t{1} << 20, 1000);
    ASSERT_TRUE(device_pool_replay::applies(w));
    EXPECT_EQ(device_pool_replay::block_size_for(w), std::uint64_t{1} << 20);
    EXPECT_EQ(device_pool_replay::block_size_for(shape(100, 1)), device_pool_replay::min_block);
    EXPECT_EQ(device_pool_replay::block_size_for(shape(std::uint64_t{1} << 40, 1)),
              device_pool_replay::max_block);
    device_pool_replay a(w);
    EXPECT_EQ(a.footprint(), 0u) << "no device memory before the first request";
    std::vector<std::pair<std::byte*, std::size_t>> live;
    churn(a, 6000, live);
    // Half a block or more is dedicated: memory of its own, still inside the host region.
    auto* big = static_cast<std::byte*>(a.allocate(std::size_t{600} << 10, 256));
    ASSERT_NE(big, nullptr);
    big[0] = big[(std::size_t{600} << 10) - 1] = std::byte{3};
    live.emplace_back(big, std::size_t{600} << 10);
    EXPECT_EQ(a.pool().stats().dedicated, 1u);
    EXPECT_TRUE(a.pool().check());
    const strata::device_pool_stats s = a.pool().stats();
    EXPECT_EQ(a.footprint(), s.device_bytes) << "footprint = device bytes the pool holds";
    const heap_probe probe = a.probe();
    EXPECT_EQ(probe.free_bytes, s.free_bytes);
    EXPECT_EQ(probe.largest_free, s.largest_free_block);
    EXPECT_EQ(a.usable_size(big), std::size_t{600} << 10);
    for (const auto& [p, size] : live)
        a.deallocate(p, size, 16);
    EXPECT_EQ(a.pool().stats().allocations, 0u);
    EXPECT_EQ(a.pool().stats().blocks, 1u) << "one empty block is kept";
    EXPECT_EQ(a.footprint(), std::uint64_t{1} << 20);
    EXPECT_TRUE(a.pool().check());
}

TEST(LabDeviceContenders, HostilePeaksAreRefusedNotWrapped) {
    op_workload w = shape(std::uint64_t{1} << 63, std::uint64_t{1} << 62);
    EXPECT_FALSE(offset_heap_replay::applies(w));
    EXPECT_FALSE(device_pool_replay::applies(w));
    w = shape(std::uint64_t{1} << 20, 100);
    w.max_align = 8192; // the host region's pages are 4 KiB: a larger alignment cannot be followed
    EXPECT_FALSE(offset_heap_replay::applies(w));
    EXPECT_FALSE(device_pool_replay::applies(w));
}

TEST(LabDeviceContenders, BothAreRegisteredAndServeTheSyntheticWorkloads) {
    replay_options o;
    o.warmup = 0;
    o.repeats = 1;
    o.latency_passes = 0;
    o.series_points = 20;
    int found = 0;
    for (const op_contender& c : op_registry()) {
        if (c.name != "offset_heap" && c.name != "device_pool") continue;
        ++found;
        for (auto name : gen::names()) {
            const op_workload w = gen::make(name, 0.02);
            ASSERT_TRUE(c.applies(w)) << c.name << " on " << name;
            const replay_result r = c.run(w, o);
            EXPECT_EQ(r.failed, 0u) << c.name << " on " << name;
            EXPECT_TRUE(r.has_probe && r.has_footprint && r.has_usable_size) << c.name;
            ASSERT_FALSE(r.series.empty());
            EXPECT_GT(r.peak_footprint, 0u) << c.name << " on " << name;
            for (const memory_sample& m : r.series)
                EXPECT_LE(m.largest_free, m.free_bytes) << c.name << " on " << name;
        }
    }
    EXPECT_EQ(found, 2);
}

} // namespace
