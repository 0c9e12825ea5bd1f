// strata::arena over a fixed caller buffer: bumping, alignment, exhaustion, bad input, frees of
// the latest block, markers and scopes, reset, peak, owns, for_each_block, moves. Growth from a
// source, the marker rules, fill patterns and randomized runs are in the other arena*_test.cpp.
#include "strata/linear/arena.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/core/poison.hpp"
#include "strata/source/buffer_source.hpp"
#include "strata/source/heap_source.hpp"
#include "strata/source/virtual_memory.hpp"

#include "support/arena_test_util.hpp"
#include "support/bad_requests.hpp"
#include "support/linear_test_util.hpp"
#include "support/recording_handler.hpp"

namespace {

using strata::arena;
using strata::arena_options;
using strata::arena_reset;
using namespace strata::test; // the helpers of tests/support

constexpr std::size_t kBuf = 64 * 1024;

TEST(ArenaFixed, FreshArenaReportsEmptyStats) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    STRATA_EXPECT_SAME_STATS(a.stats(), (strata::stats{0, 0, kBuf, 0, 0, kBuf}));
    EXPECT_EQ(a.in_use(), 0u);
    EXPECT_EQ(a.remaining(), kBuf);
    EXPECT_EQ(a.capacity(), kBuf);
    EXPECT_EQ(a.block_count(), 0u);
}

TEST(ArenaFixed, AllocateBumpsThroughTheBufferExactly) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    void* p1 = a.allocate(100, 1);
    void* p2 = a.allocate(28, 4);
    void* p3 = a.allocate(1, 256);
    EXPECT_EQ(p1, buf.data());
    EXPECT_EQ(p2, buf.data() + 100);
    EXPECT_EQ(p3, buf.data() + 256); // 129 rounded up to 256
    STRATA_EXPECT_SAME_STATS(a.stats(), (strata::stats{257, 257, kBuf, 3, 3, kBuf - 257}));
    // Default alignment is max_align_t.
    void* p4 = a.allocate(8);
    EXPECT_EQ(p4, buf.data() + 272);
    EXPECT_TRUE(strata::test::aligned_to(p4, alignof(std::max_align_t)));
    // The memory is usable and distinct.
    fill_pattern(p1, 100, 1);
    fill_pattern(p2, 28, 2);
    fill_pattern(p3, 1, 3);
    EXPECT_TRUE(holds_pattern(p1, 100, 1));
    EXPECT_TRUE(holds_pattern(p2, 28, 2));
    EXPECT_TRUE(holds_pattern(p3, 1, 3));
}

TEST(ArenaFixed, HonoursEveryPowerOfTwoAlignmentUpTo4096) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    for (std::size_t align = 1; align <= 4096; align *= 2) {
        ASSERT_NE(a.allocate(1, 1), nullptr); // leave the top at an odd offset
        const std::size_t before = a.in_use();
        const std::size_t expected = (before + align - 1) / align * align;
        void* p = a.allocate(24, align);
        ASSERT_NE(p, nullptr) << "align " << align;
        EXPECT_TRUE(strata::test::aligned_to(p, align)) << "align " << align;
        EXPECT_EQ(bytes(p), buf.data() + expected) << "align " << align;
        EXPECT_EQ(a.in_use(), expected + 24) << "padding is counted in in_use";
        std::memset(p, 0xAB, 24);
    }
}

TEST(ArenaFixed, ExhaustionReturnsNullAndLeavesStateUnchanged) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    ASSERT_EQ(a.allocate(kBuf - 64, 1), buf.data());
    const arena_state before = state_of(a);
    EXPECT_EQ(a.allocate(65, 1), nullptr);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(a.allocate(kBuf, 1), nullptr);
    EXPECT_TRUE(unchanged(a, before));
    // An exact fit still succeeds; then nothing does.
    EXPECT_EQ(a.allocate(64, 1), buf.data() + kBuf - 64);
    const arena_state full = state_of(a);
    EXPECT_EQ(full.s.largest_free_block, 0u);
    EXPECT_EQ(a.allocate(1, 1), nullptr);
    EXPECT_TRUE(unchanged(a, full));
}

TEST(ArenaFixed, AlignmentPaddingThatDoesNotFitIsExhaustion) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    ASSERT_NE(a.allocate(kBuf - 100, 1), nullptr); // top at offset 65436, 100 bytes left
    const arena_state before = state_of(a);
    // 80 bytes fit in 100, but 64-alignment needs 36 bytes of padding first.
    EXPECT_EQ(a.allocate(80, 64), nullptr);
    EXPECT_TRUE(unchanged(a, before));
    void* p = a.allocate(64, 64); // 36 + 64 = 100: exact fit
    EXPECT_EQ(p, buf.data() + kBuf - 64);
}

TEST(ArenaFixed, LargestFreeBlockIsRemainingAndIsServable) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    ASSERT_NE(a.allocate(1000, 1), nullptr);
    const std::size_t lfb = a.stats().largest_free_block;
    EXPECT_EQ(lfb, kBuf - 1000);
    EXPECT_EQ(lfb, a.remaining());
    EXPECT_EQ(a.allocate(lfb + 1, 1), nullptr);
    EXPECT_NE(a.allocate(lfb, 1), nullptr);
}

// Bad requests (size 0, bad alignments, overflows) are LinearContract's, over every linear
// allocator. An alignment larger than the whole buffer is a valid request that cannot be served.
TEST(ArenaFixed, AnAlignmentLargerThanTheBufferIsExhaustion) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    for (int round = 0; round < 2; ++round) {
        const arena_state before = state_of(a);
        EXPECT_EQ(a.allocate(16, std::size_t{1} << 63), nullptr);
        EXPECT_TRUE(unchanged(a, before));
        ASSERT_NE(a.allocate(100, 1), nullptr); // second round from a non-empty, odd top
    }
}

TEST(ArenaFixed, DeallocatingTheLatestAllocationGivesItsBytesBack) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    void* p1 = a.allocate(64, 16);
    void* p2 = a.allocate(32, 16);
    ASSERT_EQ(p2, buf.data() + 64);
    a.deallocate(p2, 32, 16);
    STRATA_EXPECT_SAME_STATS(a.stats(), (strata::stats{64, 96, kBuf, 1, 2, kBuf - 64}));
    // The bytes are handed out again.
    EXPECT_EQ(a.allocate(16, 16), p2);
    STRATA_EXPECT_SAME_STATS(a.stats(), (strata::stats{80, 96, kBuf, 2, 3, kBuf - 80}));
    (void)p1;
}

TEST(ArenaFixed, DeallocatingAnOlderAllocationDoesNothing) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    void* p1 = a.allocate(64, 16);
    void* p2 = a.allocate(32, 16);
    ASSERT_NE(p2, nullptr);
    const arena_state before = state_of(a);
    a.deallocate(p1, 64, 16);
    EXPECT_TRUE(unchanged(a, before));
    a.deallocate(nullptr, 0, 16);
    EXPECT_TRUE(unchanged(a, before));
    // A size that does not end at the top is not the latest allocation either.
    a.deallocate(p2, 16, 16);
    EXPECT_TRUE(unchanged(a, before));
}

TEST(ArenaFixed, DeallocateKeepsThePaddingThatPrecededTheBlock) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    ASSERT_NE(a.allocate(10, 1), nullptr);
    void* p = a.allocate(8, 64); // 54 bytes of padding, then 8
    ASSERT_EQ(p, buf.data() + 64);
    a.deallocate(p, 8, 64);
    EXPECT_EQ(a.in_use(), 64u) << "the block's bytes come back; the padding before it stays consumed";
    EXPECT_EQ(a.stats().live_allocations, 1u);
}

TEST(ArenaFixed, RewindReleasesEverythingAfterTheMarker) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    void* keep = a.allocate(100, 1);
    fill_pattern(keep, 100, 9);
    const arena::marker m = a.mark();
    const strata::stats at_mark = a.stats();
    void* p = a.allocate(200, 16);
    ASSERT_NE(a.allocate(300, 64), nullptr);
    const std::size_t high = a.in_use();
    a.rewind(m);
    STRATA_EXPECT_SAME_STATS(a.stats(), (strata::stats{100, high, kBuf, 1, 3, kBuf - 100}));
    EXPECT_EQ(a.stats().largest_free_block, at_mark.largest_free_block);
    EXPECT_EQ(a.mark().cur, m.cur);
    EXPECT_TRUE(holds_pattern(keep, 100, 9)) << "bytes before the marker are untouched";
    EXPECT_EQ(a.allocate(200, 16), p) << "the released bytes are handed out again";
}

TEST(ArenaFixed, RewindingToTheSameMarkerTwiceIsAllowed) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    const arena::marker m = a.mark();
    ASSERT_NE(a.allocate(100), nullptr);
    a.rewind(m);
    ASSERT_NE(a.allocate(50), nullptr);
    strata::test::recording_handler rec;
    a.rewind(m);
    EXPECT_TRUE(rec.empty());
    EXPECT_EQ(a.in_use(), 0u);
    EXPECT_EQ(a.stats().live_allocations, 0u);
    EXPECT_EQ(a.stats().total_allocations, 2u);
}

TEST(ArenaFixed, NestedScopesRewindInOrder) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    ASSERT_NE(a.allocate(8, 8), nullptr);
    {
        strata::arena_scope outer(a);
        EXPECT_EQ(&outer.get(), &a);
        void* p1 = a.allocate(10, 1);
        ASSERT_EQ(p1, buf.data() + 8);
        void* inner_first = nullptr;
        {
            strata::arena_scope inner(a);
            inner_first = a.allocate(20, 1);
            ASSERT_EQ(inner_first, buf.data() + 18);
            ASSERT_NE(a.allocate(500, 64), nullptr);
            EXPECT_EQ(a.stats().live_allocations, 4u);
        }
        EXPECT_EQ(a.in_use(), 18u);
        EXPECT_EQ(a.stats().live_allocations, 2u);
        EXPECT_EQ(a.allocate(20, 1), inner_first);
    }
    EXPECT_EQ(a.in_use(), 8u);
    EXPECT_EQ(a.stats().live_allocations, 1u);
    EXPECT_EQ(a.stats().total_allocations, 5u);
}

TEST(ArenaFixed, ResetReleasesEverythingAndKeepsTotalsAndPeak) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    for (int i = 0; i < 10; ++i)
        ASSERT_NE(a.allocate(100, 16), nullptr);
    const std::size_t high = a.in_use();
    a.reset();
    STRATA_EXPECT_SAME_STATS(a.stats(), (strata::stats{0, high, kBuf, 0, 10, kBuf}));
    EXPECT_EQ(a.allocate(1, 1), buf.data());
}

TEST(ArenaFixed, PeakIsTheHighestInUseEverSeen) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    const arena::marker m = a.mark();
    ASSERT_NE(a.allocate(1000, 1), nullptr);
    a.rewind(m);
    EXPECT_EQ(a.stats().peak, 1000u);
    ASSERT_NE(a.allocate(300, 1), nullptr);
    EXPECT_EQ(a.stats().peak, 1000u);
    ASSERT_NE(a.allocate(1000, 1), nullptr);
    EXPECT_EQ(a.stats().peak, 1300u);
    a.reset();
    EXPECT_EQ(a.stats().peak, 1300u);
}

TEST(ArenaFixed, OwnsExactlyTheBuffer) {
    aligned_buffer buf(kBuf + 64);
    arena a(buf.span(32, kBuf));
    const int local = 0;
    EXPECT_TRUE(a.owns(buf.data() + 32));
    EXPECT_TRUE(a.owns(buf.data() + 32 + kBuf - 1));
    EXPECT_FALSE(a.owns(buf.data() + 31));
    EXPECT_FALSE(a.owns(buf.data() + 32 + kBuf));
    EXPECT_FALSE(a.owns(&local));
    EXPECT_FALSE(a.owns(nullptr));
    void* p = a.allocate(100);
    EXPECT_TRUE(a.owns(p));
    EXPECT_TRUE(a.owns(bytes(p) + 99));
}

TEST(ArenaFixed, ForEachBlockCoversTheBufferWithUsedThenFree) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    EXPECT_EQ(extents_of(a), (std::vector<extent>{{0, kBuf, false}}));
    ASSERT_NE(a.allocate(100, 1), nullptr);
    ASSERT_NE(a.allocate(10, 64), nullptr);
    EXPECT_EQ(extents_of(a), (std::vector<extent>{{0, 138, true}, {138, kBuf - 138, false}}));
    EXPECT_EQ(strata::test::total_size(extents_of(a)), a.capacity());
    ASSERT_NE(a.allocate(a.remaining(), 1), nullptr);
    EXPECT_EQ(extents_of(a), (std::vector<extent>{{0, kBuf, true}}));
    a.reset();
    EXPECT_EQ(extents_of(a), (std::vector<extent>{{0, kBuf, false}}));
}

TEST(ArenaFixed, ForEachBlockPassesStrataBlockInfo) {
    aligned_buffer buf(4096);
    arena a(buf.span());
    bool is_block_info = false;
    a.for_each_block([&](const auto& b) {
        is_block_info = std::is_same_v<std::decay_t<decltype(b)>, strata::block_info>;
    });
    EXPECT_TRUE(is_block_info);
}

TEST(ArenaFixed, EmptyBufferArenaServesNothing) {
    arena a(std::span<std::byte>{});
    STRATA_EXPECT_SAME_STATS(a.stats(), strata::stats{});
    EXPECT_EQ(a.allocate(1, 1), nullptr);
    EXPECT_TRUE(extents_of(a).empty());
    a.reset();
    a.rewind(a.mark());
    STRATA_EXPECT_SAME_STATS(a.stats(), strata::stats{});
}

TEST(ArenaFixed, MoveTransfersTheBuffer) {
    aligned_buffer buf(kBuf);
    arena a(buf.span());
    void* p = a.allocate(100, 1);
    fill_pattern(p, 100, 4);
    arena b(std::move(a));
    EXPECT_EQ(b.in_use(), 100u);
    EXPECT_EQ(b.capacity(), kBuf);
    EXPECT_TRUE(b.owns(p));
    EXPECT_EQ(b.allocate(1, 1), buf.data() + 100);
    EXPECT_TRUE(holds_pattern(p, 100, 4));
    STRATA_EXPECT_SAME_STATS(a.stats(), strata::stats{});
    EXPECT_EQ(a.allocate(1, 1), nullptr);
    arena c(std::span<std::byte>{});
    c = std::move(b);
    EXPECT_EQ(c.in_use(), 101u);
    EXPECT_TRUE(c.owns(p));
}

// --- markers that are not valid for this arena ---

} // namespace
