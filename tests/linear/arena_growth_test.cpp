// strata::arena growing from a source (heap_source, counting and refusing test sources): blocks
// taken on demand, geometric growth and its fallbacks, max_capacity, requests the source refuses,
// reset policies, rewinds and frees across blocks, for_each_block over a chain, moves.
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
#include "strata/linear/arena.hpp"
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

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

// ---------------------------------------------------------------------------------------------
// Growing from heap_source
// ---------------------------------------------------------------------------------------------

TEST(ArenaHeap, TakesNoBlockBeforeFirstUse) {
    strata::heap_source src;
    arena a(src, small_blocks());
    EXPECT_EQ(src.outstanding_blocks(), 0u);
    STRATA_EXPECT_SAME_STATS(a.stats(), strata::stats{});
    EXPECT_EQ(a.block_count(), 0u);
    a.rewind(a.mark());
    a.reset();
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

TEST(ArenaHeap, FirstAllocationTakesOneBlockOfBlockSize) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    void* p = a.allocate(100, 16);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(src.outstanding_blocks(), 1u);
    EXPECT_EQ(src.outstanding_bytes(), 1024u);
    EXPECT_EQ(a.block_count(), 1u);
    EXPECT_EQ(a.capacity(), 1024u);
    EXPECT_EQ(a.in_use(), 100u);
    const strata::stats s = a.stats();
    EXPECT_EQ(s.live_allocations, 1u);
    EXPECT_EQ(s.total_allocations, 1u);
    EXPECT_EQ(s.largest_free_block, a.remaining());
    EXPECT_GE(s.largest_free_block, 1024u - 64 - 100) << "the block header is small";
    EXPECT_TRUE(a.owns(p));
    // Allocations inside the block are contiguous.
    EXPECT_EQ(a.allocate(16, 16), bytes(p) + 112);
}

TEST(ArenaHeap, SourceBlocksCarryTheDocumented48ByteHeader) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    ASSERT_NE(a.allocate(16, 16), nullptr);
    EXPECT_EQ(a.capacity() - a.in_use() - a.remaining(), 48u);
    EXPECT_EQ(a.remaining(), 1024u - 48u - 16u);
}

TEST(ArenaHeap, FullBlockChainsANewBlockAndKeepsOldData) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    void* p1 = a.allocate(600, 16);
    fill_pattern(p1, 600, 1);
    void* p2 = a.allocate(600, 16);
    ASSERT_NE(p2, nullptr);
    fill_pattern(p2, 600, 2);
    EXPECT_EQ(a.block_count(), 2u);
    EXPECT_EQ(src.outstanding_blocks(), 2u);
    EXPECT_EQ(a.capacity(), 1024u + 2048u);
    EXPECT_EQ(src.outstanding_bytes(), a.capacity());
    EXPECT_TRUE(a.owns(p1));
    EXPECT_TRUE(a.owns(p2));
    EXPECT_TRUE(holds_pattern(p1, 600, 1));
    EXPECT_TRUE(holds_pattern(p2, 600, 2));
    EXPECT_EQ(a.stats().live_allocations, 2u);
    EXPECT_EQ(a.stats().total_allocations, 2u);
    EXPECT_EQ(a.stats().largest_free_block, a.remaining());
}

TEST(ArenaHeap, BlocksGrowGeometricallyUpToMaxBlockSize) {
    strata::test::counting_source src;
    arena a(src, small_blocks(1024, 8192));
    while (src.calls() < 7)
        ASSERT_NE(a.allocate(900, 16), nullptr);
    const std::vector<std::size_t> want{1024, 2048, 4096, 8192, 8192, 8192, 8192};
    EXPECT_EQ(src.requests(), want);
    EXPECT_EQ(a.block_count(), 7u);
    EXPECT_EQ(a.capacity(), src.outstanding_bytes());
}

TEST(ArenaHeap, BlockSizeAboveMaxBlockSizeIsKept) {
    strata::test::counting_source src;
    arena a(src, small_blocks(4096, 1024));
    while (src.calls() < 3)
        ASSERT_NE(a.allocate(3000, 16), nullptr);
    EXPECT_EQ(src.requests(), (std::vector<std::size_t>{4096, 4096, 4096}));
}

TEST(ArenaHeap, OversizedRequestGetsItsOwnBlockAndGrowthContinues) {
    strata::test::counting_source src;
    arena a(src, small_blocks(1024));
    void* big = a.allocate(5000, 16);
    ASSERT_NE(big, nullptr);
    ASSERT_EQ(src.calls(), 1u);
    EXPECT_GE(src.requests()[0], 5000u);
    EXPECT_LE(src.requests()[0], 5000u + 64u) << "header plus the request, not a doubled block";
    std::memset(big, 0x11, 5000);
    ASSERT_NE(a.allocate(100, 16), nullptr);
    ASSERT_EQ(src.calls(), 2u);
    EXPECT_EQ(src.requests()[1], 2048u) << "the geometric sequence went on from the first block size";
}

// A source that refuses the geometric block size may still have room for the request: the
// arena asks for that before giving up (it gave up, leaving a third of a 100 KiB buffer unused).
TEST(ArenaHeap, GrowthFallsBackToTheRequestWhenTheSourceRefusesTheGeometricSize) {
    aligned_buffer mem(100 << 10);
    strata::buffer_source src(mem.span());
    arena a(src);
    std::size_t served = 0;
    while (void* p = a.allocate(1024)) {
        std::memset(p, 0x33, 1024);
        ++served;
    }
    EXPECT_GE(served, 95u); // 100 KiB less a 48-byte header per block
    EXPECT_GT(src.used(), std::size_t{96} << 10);
    // Nothing could be served at 2 MiB blocks from a 1 MiB reservation; the request itself can.
    strata::virtual_memory_source vm(std::size_t{1} << 20);
    arena_options big;
    big.block_size = std::size_t{2} << 20;
    arena b(vm, big);
    EXPECT_NE(b.allocate(64), nullptr);
}

constexpr std::size_t kFallback = 48 + 900; // a fresh block's header plus one 900-byte request

// A refusal the source gets over does not restart geometric growth from the request size.
TEST(ArenaHeap, GrowthResumesAfterAPassingRefusal) {
    strata::test::counting_source src(SIZE_MAX, {3});
    arena a(src, small_blocks(1024));
    while (src.requests().size() < 7)
        ASSERT_NE(a.allocate(900, 16), nullptr);
    // 4096 refused, the request granted: the next size halves, then doubling goes on.
    const std::vector<std::size_t> want{1024, 2048, 4096, kFallback, 2048, 4096, 8192};
    EXPECT_EQ(src.requests(), want);
    EXPECT_EQ(a.block_count(), 6u);
}

TEST(ArenaHeap, ARefusedGrowthChangesNothing) {
    strata::test::counting_source src(SIZE_MAX, {3, 4}); // the geometric size and the request both refused
    arena a(src, small_blocks(1024));
    while (src.requests().size() < 2 || a.remaining() >= 1000) // fill the second block
        ASSERT_NE(a.allocate(900, 16), nullptr);
    const arena_state before = state_of(a);
    EXPECT_EQ(a.allocate(900, 16), nullptr);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(src.requests().size(), 4u) << "the source is asked at most twice per growth";
    while (src.requests().size() < 6)
        ASSERT_NE(a.allocate(900, 16), nullptr);
    // Growth goes on where it stood, as if the failed call had not happened.
    const std::vector<std::size_t> want{1024, 2048, 4096, kFallback, 4096, 8192};
    EXPECT_EQ(src.requests(), want);
}

// A source that keeps refusing large blocks is asked for halving sizes, and growth never asks
// below 256 bytes.
TEST(ArenaHeap, ASourceThatStaysShortIsAskedForHalvingSizes) {
    strata::test::counting_source src(1500);
    arena a(src, small_blocks(8192));
    while (src.calls() < 9)
        ASSERT_NE(a.allocate(200, 16), nullptr);
    const std::size_t fallback = 48 + 200;
    // Limited to 1500 bytes: 1024 fits, and after it 2048 is refused again.
    const std::vector<std::size_t> want{8192, fallback, 4096, fallback, 2048, fallback, 1024, 2048, fallback};
    EXPECT_EQ(src.requests(), want);
    strata::test::counting_source none(0); // refuses everything: the sizes asked never drift
    arena b(none, small_blocks(256));
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(b.allocate(16), nullptr);
    EXPECT_EQ(none.requests(), (std::vector<std::size_t>{256, 48 + 16, 256, 48 + 16, 256, 48 + 16}));
}

TEST(ArenaHeap, MaxCapacityIsNeverExceeded) {
    strata::test::counting_source src;
    arena_options o = small_blocks(1024);
    o.max_capacity = 4096;
    arena a(src, o);
    std::size_t served = 0;
    while (a.allocate(200, 16) != nullptr) {
        ++served;
        ASSERT_LE(a.capacity(), 4096u);
        ASSERT_LT(served, 100u);
    }
    EXPECT_GT(served, 10u);
    EXPECT_LE(src.outstanding_bytes(), 4096u);
    EXPECT_EQ(src.outstanding_bytes(), a.capacity());
    const arena_state before = state_of(a);
    const std::size_t calls = src.calls();
    EXPECT_EQ(a.allocate(200, 16), nullptr);
    EXPECT_TRUE(unchanged(a, before));
    // A request that the remaining cap cannot hold is refused without asking the source.
    EXPECT_EQ(a.allocate(5000, 16), nullptr);
    EXPECT_EQ(src.calls(), calls);
    EXPECT_TRUE(unchanged(a, before));
}

TEST(ArenaHeap, RequestLargerThanMaxCapacityIsRefusedWithoutASourceCall) {
    strata::test::counting_source src;
    arena_options o = small_blocks(1024);
    o.max_capacity = std::size_t{1} << 20;
    arena a(src, o);
    EXPECT_EQ(a.allocate(std::size_t{2} << 20, 16), nullptr);
    EXPECT_EQ(src.calls(), 0u);
    EXPECT_EQ(src.outstanding_blocks(), 0u);
    STRATA_EXPECT_SAME_STATS(a.stats(), strata::stats{});
}

// Bad requests are refused before the source is asked (LinearContract checks the refusal itself).
TEST(ArenaHeap, BadRequestsNeverReachTheSource) {
    strata::test::counting_source src;
    arena a(src, small_blocks(1024));
    for (int round = 0; round < 2; ++round) {
        const arena_state before = state_of(a);
        const std::size_t calls = src.calls();
        for (const strata::test::bad_request& r : strata::test::all_bad_requests()) {
            EXPECT_EQ(a.allocate(r.size, r.align), nullptr) << "size " << r.size << " align " << r.align;
            EXPECT_TRUE(unchanged(a, before)) << "size " << r.size << " align " << r.align;
        }
        EXPECT_EQ(src.calls(), calls) << "overflowing requests are refused before the source is asked";
        EXPECT_EQ(src.outstanding_blocks(), a.block_count());
        ASSERT_NE(a.allocate(100, 1), nullptr);
    }
}

TEST(ArenaHeap, HugeRequestTheSourceRefusesReturnsNullAndLeaksNothing) {
    // A source that refuses (as operator new does for absurd sizes) must leave the arena as it was.
    strata::test::counting_source src(std::size_t{1} << 20);
    arena a(src, small_blocks(1024));
    ASSERT_NE(a.allocate(100, 16), nullptr);
    const arena_state before = state_of(a);
    EXPECT_EQ(a.allocate(std::size_t{1} << 30, 16), nullptr);
    EXPECT_EQ(src.refused(), 1u);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(src.outstanding_blocks(), 1u);
    EXPECT_EQ(a.allocate(100, 1), bytes(before.cur)) << "the arena still serves from its block";
}

TEST(ArenaHeap, RequestBeyondPtrdiffMaxReturnsNullAndLeaksNothing) {
    // heap_source refuses sizes over PTRDIFF_MAX itself, so this runs under every sanitizer setting.
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    ASSERT_NE(a.allocate(100, 16), nullptr);
    const arena_state before = state_of(a);
    EXPECT_EQ(a.allocate(strata::test::opaque(kMax / 2 + 1), 16), nullptr);
    EXPECT_EQ(a.allocate(strata::test::opaque(kMax / 2 + 4096), 1), nullptr);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(src.outstanding_blocks(), 1u);
    EXPECT_EQ(src.outstanding_bytes(), 1024u);
}

TEST(ArenaHeap, HugeRequestToHeapSourceReturnsNullAndLeaksNothing) {
    if (!strata::test::huge_new_returns_null()) {
        GTEST_SKIP()
            << "ASan aborts on absurd operator new sizes unless ASAN_OPTIONS has allocator_may_return_null=1";
    }
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    ASSERT_NE(a.allocate(100, 16), nullptr);
    const arena_state before = state_of(a);
    EXPECT_EQ(a.allocate(strata::test::opaque(kMax / 4), 16), nullptr);
    EXPECT_EQ(a.allocate(strata::test::opaque(kMax / 2), 4096), nullptr);
    EXPECT_EQ(a.allocate(16, std::size_t{1} << 62), nullptr);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(src.outstanding_blocks(), 1u);
    EXPECT_EQ(src.outstanding_bytes(), 1024u);
}

TEST(ArenaHeap, AlignmentsUpTo4096AreHonouredAcrossBlocks) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    for (std::size_t align = 1; align <= 4096; align *= 2) {
        ASSERT_NE(a.allocate(1, 1), nullptr);
        void* p = a.allocate(700, align); // often forces a fresh block
        ASSERT_NE(p, nullptr) << "align " << align;
        EXPECT_TRUE(strata::test::aligned_to(p, align)) << "align " << align;
        EXPECT_TRUE(a.owns(p));
        EXPECT_TRUE(a.owns(bytes(p) + 699));
        std::memset(p, 0x42, 700);
    }
    EXPECT_EQ(src.outstanding_blocks(), a.block_count());
}

TEST(ArenaHeap, ResetKeepBlocksReusesEveryBlock) {
    strata::test::counting_source src;
    arena a(src, small_blocks(1024));
    auto fill = [&] {
        for (unsigned i = 0; i < 40; ++i) {
            void* p = a.allocate(100 + (i * 37u) % 300u, 16);
            ASSERT_NE(p, nullptr);
            fill_pattern(p, 100, i);
        }
    };
    fill();
    const std::size_t blocks = src.outstanding_blocks();
    const std::size_t bytes_out = src.outstanding_bytes();
    const std::size_t calls = src.calls();
    const std::size_t capacity = a.capacity();
    const std::size_t in_use = a.in_use();
    ASSERT_GT(blocks, 2u);
    for (int frame = 0; frame < 5; ++frame) {
        a.reset();
        EXPECT_EQ(src.outstanding_blocks(), blocks);
        EXPECT_EQ(a.capacity(), capacity);
        EXPECT_EQ(a.block_count(), blocks) << "kept blocks still count";
        EXPECT_EQ(a.in_use(), 0u);
        EXPECT_EQ(a.stats().live_allocations, 0u);
        fill();
        EXPECT_EQ(src.outstanding_blocks(), blocks);
        EXPECT_EQ(src.outstanding_bytes(), bytes_out);
        EXPECT_EQ(src.calls(), calls) << "steady-state frames never call the source";
        EXPECT_EQ(a.capacity(), capacity);
        EXPECT_EQ(a.in_use(), in_use);
    }
    EXPECT_EQ(a.stats().total_allocations, 6u * 40u);
}

TEST(ArenaHeap, ResetReleaseExtraKeepsOnlyTheLargestBlock) {
    strata::test::counting_source src;
    arena a(src, small_blocks(1024, std::size_t{64} << 20, arena_reset::release_extra));
    for (int i = 0; i < 30; ++i)
        ASSERT_NE(a.allocate(500, 16), nullptr);
    ASSERT_GE(src.outstanding_blocks(), 3u);
    a.reset();
    EXPECT_EQ(src.outstanding_blocks(), 1u);
    EXPECT_EQ(a.block_count(), 1u);
    EXPECT_EQ(a.capacity(), src.outstanding_bytes());
    ASSERT_FALSE(src.requests().empty());
    EXPECT_EQ(a.capacity(), *std::max_element(src.requests().begin(), src.requests().end()))
        << "the largest block survives";
    const std::size_t calls = src.calls();
    EXPECT_EQ(a.in_use(), 0u);
    // The kept block is used without growing.
    ASSERT_NE(a.allocate(4000, 16), nullptr);
    EXPECT_EQ(src.outstanding_blocks(), 1u);
    EXPECT_EQ(src.calls(), calls);
}

TEST(ArenaHeap, RewindAcrossBlockBoundariesRestoresTheMarkedPosition) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    void* p0 = a.allocate(500, 16);
    fill_pattern(p0, 500, 7);
    const arena::marker m = a.mark();
    const strata::stats at_mark = a.stats();
    void* in_block2 = a.allocate(600, 16);
    void* in_block3 = a.allocate(1500, 16);
    ASSERT_NE(in_block3, nullptr);
    ASSERT_EQ(a.block_count(), 3u);
    const std::size_t capacity = a.capacity();
    a.rewind(m);
    const strata::stats s = a.stats();
    EXPECT_EQ(s.in_use, at_mark.in_use);
    EXPECT_EQ(s.live_allocations, 1u);
    EXPECT_EQ(s.total_allocations, 3u);
    EXPECT_EQ(s.largest_free_block, at_mark.largest_free_block);
    EXPECT_EQ(s.capacity, capacity);
    EXPECT_EQ(a.block_count(), 3u) << "blocks after the marker are kept for reuse";
    EXPECT_EQ(src.outstanding_blocks(), 3u);
    EXPECT_EQ(a.mark().cur, m.cur);
    EXPECT_TRUE(a.owns(p0));
    EXPECT_FALSE(a.owns(in_block3)) << "a kept block is not in use";
    EXPECT_TRUE(holds_pattern(p0, 500, 7));
    // Same requests again: same first address, and the kept blocks are reused.
    EXPECT_EQ(a.allocate(400, 16), bytes(p0) + 512);
    a.rewind(m);
    EXPECT_EQ(a.allocate(600, 16), in_block2);
    EXPECT_NE(a.allocate(1500, 16), nullptr);
    EXPECT_EQ(src.outstanding_blocks(), 3u);
}

TEST(ArenaHeap, RewindToAMarkerTakenBeforeTheFirstBlock) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    const arena::marker m = a.mark();
    for (int i = 0; i < 10; ++i)
        ASSERT_NE(a.allocate(300, 16), nullptr);
    a.rewind(m);
    EXPECT_EQ(a.in_use(), 0u);
    EXPECT_EQ(a.stats().live_allocations, 0u);
    EXPECT_EQ(a.stats().total_allocations, 10u);
    EXPECT_EQ(a.block_count(), src.outstanding_blocks());
    ASSERT_NE(a.allocate(300, 16), nullptr);
    EXPECT_EQ(a.block_count(), src.outstanding_blocks());
}

TEST(ArenaHeap, NestedScopesAcrossBlocks) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    ASSERT_NE(a.allocate(100, 16), nullptr);
    const std::size_t base_use = a.in_use();
    {
        strata::arena_scope outer(a);
        for (int i = 0; i < 4; ++i)
            ASSERT_NE(a.allocate(300, 16), nullptr); // into block 2
        const std::size_t outer_use = a.in_use();
        const std::size_t outer_live = a.stats().live_allocations;
        void* inner_first = nullptr;
        {
            strata::arena_scope inner(a);
            inner_first = a.allocate(2000, 16); // into block 3
            for (int i = 0; i < 10; ++i)
                ASSERT_NE(a.allocate(500, 16), nullptr);
            EXPECT_GE(a.block_count(), 3u);
        }
        EXPECT_EQ(a.in_use(), outer_use);
        EXPECT_EQ(a.stats().live_allocations, outer_live);
        EXPECT_FALSE(a.owns(inner_first));
    }
    EXPECT_EQ(a.in_use(), base_use);
    EXPECT_EQ(a.stats().live_allocations, 1u);
    EXPECT_EQ(a.block_count(), src.outstanding_blocks());
}

TEST(ArenaHeap, DeallocatingTheLatestAllocationInAChainedBlock) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    void* p1 = a.allocate(600, 16);
    void* p2 = a.allocate(600, 16); // block 2
    ASSERT_EQ(a.block_count(), 2u);
    const std::size_t in_use = a.in_use();
    a.deallocate(p2, 600, 16);
    EXPECT_EQ(a.in_use(), in_use - 600);
    EXPECT_EQ(a.stats().live_allocations, 1u);
    EXPECT_EQ(a.allocate(600, 16), p2) << "served again from block 2";
    const arena_state before = state_of(a);
    a.deallocate(p1, 600, 16); // older, in the previous block
    EXPECT_TRUE(unchanged(a, before));
}

TEST(ArenaHeap, MarkerNewerThanTheTopAcrossBlocksIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    ASSERT_NE(a.allocate(500, 16), nullptr);
    const arena::marker m1 = a.mark();
    ASSERT_NE(a.allocate(700, 16), nullptr); // block 2
    const arena::marker m2 = a.mark();
    a.rewind(m1);
    strata::test::recording_handler rec;
    a.rewind(m2);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::invalid_marker));
}

TEST(ArenaHeap, MarkerNewerThanTheTopAcrossBlocksLeavesStateUnchanged) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    ASSERT_NE(a.allocate(500, 16), nullptr);
    const arena::marker m1 = a.mark();
    ASSERT_NE(a.allocate(700, 16), nullptr); // block 2
    const arena::marker m2 = a.mark();
    a.rewind(m1);
    const arena_state before = state_of(a);
    strata::test::recording_handler rec;
    a.rewind(m2);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
    // A marker from another growing arena is refused too.
    strata::heap_source src2;
    arena other(src2, small_blocks(1024));
    ASSERT_NE(other.allocate(10), nullptr);
    a.rewind(other.mark());
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 2u : 0u);
}

TEST(ArenaHeap, MarkerRewoundPastInABlockThatIsNoLongerTheHeadIsReported) {
    // The marker's block (the initial buffer) is not the current one any more: its top is where
    // the arena left it, and a stale marker above that top is refused as it is in the head block.
    alignas(64) static std::byte buf[1024];
    strata::heap_source src;
    arena a(std::span<std::byte>(buf), src, arena_options{});
    const arena::marker m0 = a.mark();
    ASSERT_NE(a.allocate(512, 16), nullptr);
    const arena::marker m1 = a.mark(); // buffer offset 512
    a.rewind(m0);                      // m1 is stale now
    ASSERT_NE(a.allocate(96, 16), nullptr);
    ASSERT_NE(a.allocate(2000, 16), nullptr); // the arena moves on to a source block
    const arena_state before = state_of(a);
    strata::test::recording_handler rec;
    a.rewind(m1);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
    if (strata::test::checks_on) {
        EXPECT_EQ(rec.last().kind, strata::violation_kind::invalid_marker);
    }
}

TEST(ArenaHeap, AZeroSizeFreeFreesNothing) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    void* p = a.allocate(64, 16);
    ASSERT_NE(p, nullptr);
    void* top = static_cast<std::byte*>(p) + 64;
    const arena_state before = state_of(a);
    a.deallocate(top, 0); // names the top with no bytes: no allocation
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(a.stats().live_allocations, 1u);
}

TEST(ArenaHeap, DestructorReturnsEveryBlockIncludingKeptOnes) {
    strata::heap_source src;
    {
        arena a(src, small_blocks(1024));
        const arena::marker m = a.mark();
        for (int i = 0; i < 20; ++i)
            ASSERT_NE(a.allocate(400, 16), nullptr);
        a.rewind(m); // every block becomes a kept block
        ASSERT_GT(src.outstanding_blocks(), 2u);
        for (int i = 0; i < 3; ++i)
            ASSERT_NE(a.allocate(400, 16), nullptr);
    }
    EXPECT_EQ(src.outstanding_blocks(), 0u);
    EXPECT_EQ(src.outstanding_bytes(), 0u);
}

TEST(ArenaHeap, MoveTransfersBlocks) {
    strata::heap_source src;
    {
        arena a(src, small_blocks(1024));
        void* p = a.allocate(800, 16);
        ASSERT_NE(a.allocate(800, 16), nullptr);
        arena b(std::move(a));
        EXPECT_EQ(b.block_count(), 2u);
        EXPECT_TRUE(b.owns(p));
        EXPECT_EQ(a.block_count(), 0u);
        EXPECT_EQ(a.capacity(), 0u);
        EXPECT_FALSE(a.owns(p));
        EXPECT_EQ(src.outstanding_blocks(), 2u);
        arena c(src, small_blocks(1024));
        ASSERT_NE(c.allocate(10), nullptr);
        c = std::move(b); // c's own block goes back to the source
        EXPECT_EQ(src.outstanding_blocks(), 2u);
        EXPECT_TRUE(c.owns(p));
    }
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

TEST(ArenaHeap, AbandonedBlockTailsAreNotInUse) {
    // Documented: the unused tail of a block the arena moved on from, and block headers, show in
    // capacity() - in_use(), not in in_use().
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    ASSERT_NE(a.allocate(600, 16), nullptr);
    const std::size_t tail = a.remaining();
    EXPECT_EQ(tail, 1024u - 48u - 600u);
    ASSERT_NE(a.allocate(600, 16), nullptr); // does not fit the tail: block 2
    ASSERT_EQ(a.block_count(), 2u);
    EXPECT_EQ(a.in_use(), 1200u);
    EXPECT_EQ(a.capacity() - a.in_use(), tail + 2 * 48u + a.remaining());
}

// for_each_block's offsets count bytes from the start of the first block across the chain, the
// abandoned tail of a block included, so the extents never overlap.
TEST(ArenaHeap, ForEachBlockExtentsDoNotOverlap) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    for (int i = 0; i < 12; ++i)
        ASSERT_NE(a.allocate(600, 16), nullptr);
    const std::vector<extent> ext = extents_of(a);
    ASSERT_FALSE(ext.empty());
    EXPECT_EQ(ext.front().offset, 0u);
    for (std::size_t i = 1; i < ext.size(); ++i) {
        EXPECT_EQ(ext[i].offset, ext[i - 1].offset + ext[i - 1].size) << "extent " << i;
    }
    EXPECT_EQ(strata::test::used_size(ext), a.in_use());
    EXPECT_EQ(strata::test::total_size(ext), a.capacity() - 48 * a.block_count());
}

TEST(ArenaHeap, ForEachBlockMarksUsedAndFreePerBlock) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    ASSERT_NE(a.allocate(600, 16), nullptr);
    const std::size_t tail1 = a.remaining();
    ASSERT_NE(a.allocate(700, 16), nullptr); // block 2 (2048 bytes)
    const std::vector<extent> ext = extents_of(a);
    ASSERT_EQ(ext.size(), 4u);
    EXPECT_EQ(ext[0].offset, 0u);
    EXPECT_EQ(ext[0].size, 600u);
    EXPECT_TRUE(ext[0].used);
    EXPECT_EQ(ext[1].size, tail1);
    EXPECT_FALSE(ext[1].used);
    EXPECT_EQ(ext[2].size, 700u);
    EXPECT_TRUE(ext[2].used);
    EXPECT_EQ(ext[3].size, a.remaining());
    EXPECT_FALSE(ext[3].used);
    // Every visited byte is a data byte of a held block: the 48-byte headers are the difference.
    EXPECT_EQ(strata::test::total_size(ext), a.capacity() - 48 * a.block_count());
}

} // namespace
