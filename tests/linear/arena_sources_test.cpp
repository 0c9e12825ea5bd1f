// strata::arena over a caller buffer that spills into a source, and over virtual_memory_source:
// what is served from where, reset and rewind back into the buffer, commitment on demand,
// reservation exhaustion, and max_capacity when the source rounds blocks up.
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
// Caller buffer first, then a source
// ---------------------------------------------------------------------------------------------

TEST(ArenaHybrid, ServesFromTheBufferBeforeTheSource) {
    aligned_buffer buf(1024);
    strata::heap_source src;
    arena a(buf.span(), src, small_blocks(1024));
    void* p1 = a.allocate(1000, 1);
    EXPECT_EQ(p1, buf.data());
    EXPECT_EQ(src.outstanding_blocks(), 0u);
    EXPECT_EQ(a.capacity(), 1024u);
    void* p2 = a.allocate(500, 16); // spills
    ASSERT_NE(p2, nullptr);
    EXPECT_FALSE(strata::test::addr(buf.data()) <= strata::test::addr(p2) &&
                 strata::test::addr(p2) < strata::test::addr(buf.end()));
    EXPECT_EQ(src.outstanding_blocks(), 1u);
    EXPECT_EQ(a.capacity(), 1024u + 1024u);
    EXPECT_TRUE(a.owns(p1));
    EXPECT_TRUE(a.owns(p2));
    EXPECT_EQ(extents_of(a).front(), (extent{0, 1000, true}));
}

TEST(ArenaHybrid, RewindIntoTheBufferThenReleaseExtraReturnsEveryBlock) {
    aligned_buffer buf(1024);
    strata::heap_source src;
    arena a(buf.span(), src, small_blocks(1024, std::size_t{64} << 20, arena_reset::release_extra));
    const arena::marker start = a.mark();
    void* p1 = a.allocate(1000, 1);
    for (int i = 0; i < 10; ++i)
        ASSERT_NE(a.allocate(500, 16), nullptr);
    ASSERT_GE(src.outstanding_blocks(), 2u);
    a.rewind(start);
    EXPECT_EQ(a.in_use(), 0u);
    EXPECT_EQ(a.block_count(), src.outstanding_blocks());
    a.reset(); // the top is back in the buffer (a reset after spilling: see below)
    EXPECT_EQ(src.outstanding_blocks(), 0u) << "with an initial buffer no source block is kept";
    EXPECT_EQ(a.block_count(), 0u);
    EXPECT_EQ(a.capacity(), 1024u);
    EXPECT_EQ(a.allocate(1000, 1), p1);
}

TEST(ArenaHybrid, RewindToAMarkerInTheBufferAfterSpilling) {
    aligned_buffer buf(1024);
    strata::heap_source src;
    arena a(buf.span(), src, small_blocks(1024));
    void* p0 = a.allocate(100, 1);
    fill_pattern(p0, 100, 3);
    const arena::marker m = a.mark();
    ASSERT_NE(a.allocate(800, 1), nullptr);
    ASSERT_NE(a.allocate(800, 16), nullptr); // spills
    a.rewind(m);
    EXPECT_EQ(a.in_use(), 100u);
    EXPECT_EQ(a.remaining(), 924u);
    EXPECT_EQ(a.stats().live_allocations, 1u);
    EXPECT_TRUE(holds_pattern(p0, 100, 3));
    EXPECT_EQ(a.allocate(800, 1), buf.data() + 100);
}

// reset() after spilling into a source block releases only the buffer's used bytes (not a range
// from the buffer to the source block's top): at checks 2 the 0xDD fill, under ASan the poisoning,
// cover exactly those.
TEST(ArenaHybrid, ResetAfterSpillingReleasesOnlyTheBufferBytes) {
    aligned_buffer buf(1024);
    aligned_buffer after(4096); // memory that must stay untouched
    strata::heap_source src;
    {
        arena a(buf.span(), src, small_blocks(1024));
        void* p = a.allocate(1000, 1);
        ASSERT_NE(a.allocate(500, 16), nullptr); // spills into a source block
        a.reset();
        EXPECT_EQ(a.in_use(), 0u);
        EXPECT_EQ(a.allocate(1000, 1), p);
        EXPECT_EQ(src.outstanding_blocks(), 1u);
#if STRATA_CHECKS >= 2 && !STRATA_ASAN
        a.reset();
        EXPECT_TRUE(all_bytes(buf.data(), 1000, strata::fill_freed));
        EXPECT_TRUE(all_bytes(buf.data() + 1000, 24, strata::test::untouched_byte));
#endif
    }
    EXPECT_TRUE(all_bytes(after.data(), after.size(), strata::test::untouched_byte));
}

// ---------------------------------------------------------------------------------------------
// Growing from virtual_memory_source
// ---------------------------------------------------------------------------------------------

constexpr std::size_t kReserve = std::size_t{64} << 20;

TEST(ArenaVm, BlocksAreCommittedOnDemand) {
    strata::virtual_memory_source src(kReserve);
    arena a(src, small_blocks(std::size_t{64} << 10));
    EXPECT_EQ(src.committed_bytes(), 0u);
    void* p = a.allocate(100, 16);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(src.reservation().contains(p));
    EXPECT_EQ(src.committed_bytes(), std::size_t{64} << 10);
    EXPECT_EQ(a.capacity(), src.committed_bytes());
    void* q = a.allocate(70000, 16); // next block: 128 KiB
    ASSERT_NE(q, nullptr);
    std::memset(q, 0x77, 70000);
    EXPECT_EQ(a.block_count(), 2u);
    EXPECT_EQ(src.committed_bytes(), std::size_t{192} << 10);
    EXPECT_EQ(a.capacity(), src.committed_bytes());
    EXPECT_TRUE(a.owns(q));
}

TEST(ArenaVm, AlignmentsUpTo4096AreHonoured) {
    strata::virtual_memory_source src(kReserve);
    arena a(src, small_blocks(4096));
    for (std::size_t align = 1; align <= 4096; align *= 2) {
        ASSERT_NE(a.allocate(3, 1), nullptr);
        void* p = a.allocate(1000, align);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(strata::test::aligned_to(p, align)) << "align " << align;
        std::memset(p, 1, 1000);
    }
    EXPECT_EQ(a.capacity(), src.committed_bytes());
}

TEST(ArenaVm, ResetKeepBlocksKeepsCommitmentAndReleaseExtraDropsIt) {
    strata::virtual_memory_source src(kReserve);
    {
        arena a(src, small_blocks(8192));
        for (int i = 0; i < 40; ++i)
            ASSERT_NE(a.allocate(1000, 16), nullptr);
        const std::size_t committed = src.committed_bytes();
        const std::size_t blocks = a.block_count();
        a.reset();
        EXPECT_EQ(src.committed_bytes(), committed);
        for (int i = 0; i < 40; ++i)
            ASSERT_NE(a.allocate(1000, 16), nullptr);
        EXPECT_EQ(src.committed_bytes(), committed);
        EXPECT_EQ(a.block_count(), blocks);
    }
    EXPECT_EQ(src.committed_bytes(), 0u) << "the destructor returns every block";
    {
        arena a(src, small_blocks(8192, std::size_t{64} << 20, arena_reset::release_extra));
        for (int i = 0; i < 40; ++i)
            ASSERT_NE(a.allocate(1000, 16), nullptr); // 8K + 16K + 32K
        ASSERT_EQ(a.block_count(), 3u);
        a.reset();
        EXPECT_EQ(a.block_count(), 1u);
        EXPECT_EQ(src.committed_bytes(), std::size_t{32} << 10);
        EXPECT_EQ(a.capacity(), src.committed_bytes());
    }
    EXPECT_EQ(src.committed_bytes(), 0u);
}

TEST(ArenaVm, ReservationExhaustionReturnsNullAndLeavesStateUnchanged) {
    strata::virtual_memory_source src(std::size_t{1} << 20);
    arena a(src, small_blocks(std::size_t{64} << 10));
    ASSERT_NE(a.allocate(100, 16), nullptr);
    const arena_state before = state_of(a);
    const std::size_t committed = src.committed_bytes();
    EXPECT_EQ(a.allocate(std::size_t{2} << 20, 16), nullptr);
    EXPECT_EQ(a.allocate(strata::test::opaque(kMax / 2), 16), nullptr);
    for (const strata::test::bad_request& r : strata::test::all_bad_requests())
        EXPECT_EQ(a.allocate(r.size, r.align), nullptr);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(src.committed_bytes(), committed);
}

TEST(ArenaVm, RewindAcrossBlocksAndReuse) {
    strata::virtual_memory_source src(kReserve);
    arena a(src, small_blocks(4096));
    void* p0 = a.allocate(1000, 16);
    fill_pattern(p0, 1000, 5);
    const arena::marker m = a.mark();
    for (int i = 0; i < 30; ++i)
        ASSERT_NE(a.allocate(1000, 16), nullptr);
    const std::size_t committed = src.committed_bytes();
    a.rewind(m);
    EXPECT_EQ(a.in_use(), 1000u);
    EXPECT_EQ(a.stats().live_allocations, 1u);
    EXPECT_TRUE(holds_pattern(p0, 1000, 5));
    for (int i = 0; i < 30; ++i)
        ASSERT_NE(a.allocate(1000, 16), nullptr);
    EXPECT_EQ(src.committed_bytes(), committed);
}

// A source may round a block up (virtual_memory_source rounds to whole pages): max_capacity holds
// for the size the source returned, not the size asked for. block_size 4096, max_capacity 6144:
// 4000 bytes take a 4096 block; 1000 more ask for 1048 bytes and would get 4096 (8192 > 6144).
TEST(ArenaVm, MaxCapacityHoldsWhenTheSourceRoundsBlocksUp) {
    strata::virtual_memory_source src(kReserve);
    arena_options o = small_blocks(4096);
    o.max_capacity = 6144;
    arena a(src, o);
    ASSERT_NE(a.allocate(4000, 16), nullptr);
    const arena_state before = state_of(a);
    EXPECT_EQ(a.allocate(1000, 16), nullptr) << "the smallest block the source gives would pass the cap";
    EXPECT_LE(a.capacity(), 6144u);
    EXPECT_LE(src.committed_bytes(), 6144u);
    EXPECT_TRUE(unchanged(a, before));
}

TEST(ArenaVm, AGeometricBlockRoundedPastTheCapFallsBackToTheRequest) {
    // The source grants the geometric size but rounds it to pages past the room left under the
    // cap: the arena gives it back and asks for what the request needs, as after a refusal (it
    // returned nullptr, and every later growth failed the same way).
    strata::virtual_memory_source src(kReserve);
    arena_options o;
    o.block_size = 5000; // granted as 8192
    o.max_capacity = 20000;
    arena a(src, o);
    ASSERT_NE(a.allocate(4900, 16), nullptr);
    ASSERT_EQ(a.capacity(), 8192u);
    // The next step asks for 10000 (within the 11808 left) and would get 12288.
    void* p = a.allocate(4000, 16);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(a.capacity(), 8192u + 4096u);
    EXPECT_LE(src.committed_bytes(), 20000u);
    void* q = a.allocate(4000, 16); // 4096 more still fits under the cap
    EXPECT_NE(q, nullptr);
    EXPECT_LE(a.capacity(), 20000u);
    EXPECT_LE(src.committed_bytes(), 20000u);
}

} // namespace
