// Tests of strata::stack_allocator: LIFO allocation with a 16-byte header per block.
#include "strata/linear/stack_allocator.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/check.hpp"
#include "strata/core/poison.hpp"
#include "strata/linear/arena.hpp" // strata::scope

#include "support/linear_test_util.hpp"
#include "support/recording_handler.hpp"

namespace {

using strata::stack_allocator;
using strata::violation_kind;
using strata::test::aligned_buffer;
using strata::test::all_bytes;
using strata::test::extent;
using strata::test::extents_of;
using strata::test::fill_pattern;
using strata::test::holds_pattern;

constexpr std::size_t kBuf = 64 * 1024;
constexpr std::size_t kHdr = stack_allocator::header_size;

static_assert(kHdr == 16);

std::byte* bytes(void* p) { return static_cast<std::byte*>(p); }

/// Everything observable about a stack, for "state unchanged" assertions.
struct stack_state {
    strata::stats s;
    std::size_t top, last, count;
    std::vector<extent> ext;
    friend bool operator==(const stack_state&, const stack_state&) = default;
};

stack_state state_of(const stack_allocator& a) {
    const stack_allocator::marker m = a.mark();
    return {a.stats(), m.top, m.last, m.count, extents_of(a)};
}

::testing::AssertionResult unchanged(const stack_allocator& a, const stack_state& before) {
    const stack_state now = state_of(a);
    if (now == before) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "stack state changed: stats " << strata::test::describe(now.s) << " (was "
           << strata::test::describe(before.s) << "), top " << now.top << " (was " << before.top
           << "), count " << now.count << " (was " << before.count << ")";
}

/// Largest request with default alignment that fits a stack whose top is at offset `top`
/// (buffer 16-aligned): avail minus the header and the padding that aligns the block.
std::size_t expected_lfb(std::size_t top, std::size_t cap) {
    const std::size_t hdr = top + kHdr;
    const std::size_t pad = kHdr + (16 - hdr % 16) % 16;
    return cap - top > pad ? cap - top - pad : 0;
}

TEST(StackAllocator, FreshStackReportsEmptyStats) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    STRATA_EXPECT_SAME_STATS(s.stats(), (strata::stats{0, 0, kBuf, 0, 0, kBuf - kHdr}));
    EXPECT_EQ(s.in_use(), 0u);
    EXPECT_EQ(s.capacity(), kBuf);
    EXPECT_EQ(extents_of(s), (std::vector<extent>{{0, kBuf, false}}));
}

TEST(StackAllocator, AllocatePlacesAHeaderBeforeEachBlock) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    void* a = s.allocate(32);
    void* b = s.allocate(100, 64);
    EXPECT_EQ(a, buf.data() + 16);
    EXPECT_EQ(b, buf.data() + 64); // top 48, header at 48..64, already 64-aligned
    STRATA_EXPECT_SAME_STATS(s.stats(), (strata::stats{164, 164, kBuf, 2, 2, expected_lfb(164, kBuf)}));
    EXPECT_EQ(s.stats().largest_free_block, kBuf - 164 - 28);
    fill_pattern(a, 32, 1);
    fill_pattern(b, 100, 2);
    EXPECT_TRUE(holds_pattern(a, 32, 1));
    EXPECT_TRUE(holds_pattern(b, 100, 2));
}

TEST(StackAllocator, HonoursEveryPowerOfTwoAlignmentUpTo4096) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    for (std::size_t align = 1; align <= 4096; align *= 2) {
        // A top that is a multiple of 8 but not of larger powers (odd tops: see below).
        ASSERT_NE(s.allocate(24, 8), nullptr);
        const std::size_t top = s.in_use();
        const std::size_t expected = (top + kHdr + align - 1) / align * align;
        void* p = s.allocate(40, align);
        ASSERT_NE(p, nullptr) << "align " << align;
        EXPECT_TRUE(strata::test::aligned_to(p, align)) << "align " << align;
        EXPECT_EQ(bytes(p), buf.data() + expected) << "align " << align;
        EXPECT_EQ(s.in_use(), expected + 40);
        std::memset(p, 0xAB, 40);
    }
    EXPECT_EQ(s.stats().live_allocations, 26u);
}

// The 16-byte header in front of each block stays 8-aligned for align < 8 after an odd-sized block
// (UBSan, in the asan preset, reports a misaligned header access).
TEST(StackAllocator, SmallAlignmentsAfterOddSizesKeepTheHeaderAligned) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    void* a = s.allocate(3, 1);
    void* b = s.allocate(1, 1);
    void* c = s.allocate(5, 2);
    void* d = s.allocate(7, 4);
    ASSERT_NE(d, nullptr);
    EXPECT_TRUE(strata::test::aligned_to(c, 2));
    EXPECT_TRUE(strata::test::aligned_to(d, 4));
    EXPECT_EQ(extents_of(s).size(), 5u);
    s.deallocate(d);
    s.deallocate(c);
    s.deallocate(b);
    s.deallocate(a);
    EXPECT_EQ(s.in_use(), 0u);
}

TEST(StackAllocator, LargestFreeBlockIsExactlyServable) {
    {
        aligned_buffer buf(kBuf);
        stack_allocator s(buf.span());
        const std::size_t lfb = s.stats().largest_free_block;
        const stack_state before = state_of(s);
        EXPECT_EQ(s.allocate(lfb + 1), nullptr);
        EXPECT_TRUE(unchanged(s, before));
        void* p = s.allocate(lfb);
        EXPECT_EQ(p, buf.data() + kHdr);
        EXPECT_EQ(s.in_use(), kBuf);
        EXPECT_EQ(s.stats().largest_free_block, 0u);
    }
    {
        aligned_buffer buf(kBuf);
        stack_allocator s(buf.span());
        ASSERT_NE(s.allocate(1000, 8), nullptr); // top 1016: not 16-aligned
        const std::size_t lfb = s.stats().largest_free_block;
        EXPECT_EQ(lfb, expected_lfb(1016, kBuf));
        EXPECT_EQ(s.allocate(lfb + 1), nullptr);
        EXPECT_NE(s.allocate(lfb), nullptr);
    }
}

TEST(StackAllocator, ExhaustionReturnsNullAndLeavesStateUnchanged) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    ASSERT_NE(s.allocate(kBuf - 200, 16), nullptr); // top at kBuf - 184
    const stack_state before = state_of(s);
    EXPECT_EQ(s.allocate(200, 1), nullptr);
    EXPECT_TRUE(unchanged(s, before));
    EXPECT_EQ(s.allocate(170, 1), nullptr) << "fits the 184 bytes, but not after the 16-byte header";
    EXPECT_TRUE(unchanged(s, before));
    EXPECT_EQ(s.allocate(100, 256), nullptr) << "fits with the header but not once aligned";
    EXPECT_TRUE(unchanged(s, before));
    EXPECT_NE(s.allocate(168, 8), nullptr) << "exact fit: 16 + 168 = 184";
    EXPECT_EQ(s.in_use(), kBuf);
}

// Bad requests (size 0, bad alignments, overflows) are LinearContract's, over every linear
// allocator. An alignment larger than the whole buffer is a valid request that cannot be served.
TEST(StackAllocator, AnAlignmentLargerThanTheBufferIsExhaustion) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    for (int round = 0; round < 2; ++round) {
        const stack_state before = state_of(s);
        EXPECT_EQ(s.allocate(16, std::size_t{1} << 63), nullptr);
        EXPECT_TRUE(unchanged(s, before));
        ASSERT_NE(s.allocate(100, 8), nullptr);
    }
}

TEST(StackAllocator, FreeingInLifoOrderGivesEverythingBack) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    const std::size_t t0 = s.in_use();
    void* a = s.allocate(100, 16);
    const std::size_t t1 = s.in_use();
    void* b = s.allocate(7, 64);
    const std::size_t t2 = s.in_use();
    void* c = s.allocate(300, 128);
    fill_pattern(a, 100, 1);
    fill_pattern(b, 7, 2);
    fill_pattern(c, 300, 3);
    const std::size_t high = s.in_use();
    s.deallocate(c);
    STRATA_EXPECT_SAME_STATS(s.stats(), (strata::stats{t2, high, kBuf, 2, 3, expected_lfb(t2, kBuf)}));
    EXPECT_TRUE(holds_pattern(a, 100, 1));
    EXPECT_TRUE(holds_pattern(b, 7, 2));
    EXPECT_EQ(s.allocate(300, 128), c) << "the same request lands in the same place";
    s.deallocate(c);
    s.deallocate(b);
    EXPECT_EQ(s.in_use(), t1);
    s.deallocate(a);
    STRATA_EXPECT_SAME_STATS(s.stats(), (strata::stats{t0, high, kBuf, 0, 4, kBuf - kHdr}));
    EXPECT_EQ(extents_of(s), (std::vector<extent>{{0, kBuf, false}}));
}

TEST(StackAllocator, FreeGivesBackTheAlignmentPaddingToo) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    ASSERT_EQ(s.allocate(8, 8), buf.data() + 16);
    EXPECT_EQ(s.in_use(), 24u);
    void* p = s.allocate(8, 256);
    EXPECT_EQ(p, buf.data() + 256);
    EXPECT_EQ(s.in_use(), 264u);
    s.deallocate(p, 8, 256); // the sized form behaves the same
    EXPECT_EQ(s.in_use(), 24u);
    EXPECT_EQ(s.stats().live_allocations, 1u);
}

// --- bad frees: reported at checks >= 1, ignored at every level ---

TEST(StackAllocatorBadFree, OutOfOrderFreeIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    void* a = s.allocate(32);
    ASSERT_NE(s.allocate(32), nullptr);
    strata::test::recording_handler rec;
    s.deallocate(a);
    ASSERT_TRUE(rec.saw_one(violation_kind::out_of_order_free));
    EXPECT_EQ(rec.last().allocator, "strata::stack_allocator");
    EXPECT_EQ(rec.last().pointer, a);
}

TEST(StackAllocatorBadFree, OutOfOrderFreeLeavesStateUnchanged) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    void* a = s.allocate(32);
    void* b = s.allocate(32);
    fill_pattern(a, 32, 1);
    fill_pattern(b, 32, 2);
    const stack_state before = state_of(s);
    strata::test::recording_handler rec;
    s.deallocate(a);
    s.deallocate(bytes(b) + 1); // inside the latest block, but not its start
    EXPECT_TRUE(unchanged(s, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 2u : 0u);
    EXPECT_TRUE(holds_pattern(a, 32, 1));
    EXPECT_TRUE(holds_pattern(b, 32, 2));
    // The stack still works in order.
    s.deallocate(b);
    s.deallocate(a);
    EXPECT_EQ(s.in_use(), 0u);
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 2u : 0u);
}

TEST(StackAllocatorBadFree, DoubleFreeIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    void* a = s.allocate(32);
    void* b = s.allocate(32);
    s.deallocate(b);
    strata::test::recording_handler rec;
    s.deallocate(b);
    EXPECT_TRUE(rec.saw_one(violation_kind::double_free));
    rec.clear();
    s.deallocate(a);
    EXPECT_TRUE(rec.empty());
    s.deallocate(a); // the stack is now empty
    EXPECT_TRUE(rec.saw_one(violation_kind::double_free));
}

TEST(StackAllocatorBadFree, DoubleFreeLeavesStateUnchanged) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    void* a = s.allocate(32);
    void* b = s.allocate(32);
    s.deallocate(b);
    const stack_state before = state_of(s);
    strata::test::recording_handler rec;
    s.deallocate(b);
    EXPECT_TRUE(unchanged(s, before));
    s.deallocate(a);
    const stack_state empty = state_of(s);
    s.deallocate(a);
    EXPECT_TRUE(unchanged(s, empty));
    EXPECT_EQ(empty.s.in_use, 0u);
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 2u : 0u);
}

TEST(StackAllocatorBadFree, ForeignPointerIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf(kBuf), other(4096);
    stack_allocator s(buf.span());
    ASSERT_NE(s.allocate(32), nullptr);
    alignas(16) std::byte local[64] = {}; // room for a header below local + 32
    strata::test::recording_handler rec;
    s.deallocate(local + 32);
    EXPECT_TRUE(rec.saw_one(violation_kind::foreign_pointer));
    rec.clear();
    s.deallocate(other.data() + 16);
    EXPECT_TRUE(rec.saw_one(violation_kind::foreign_pointer));
    rec.clear();
    s.deallocate(buf.data() + kBuf); // one past the end
    EXPECT_TRUE(rec.saw_one(violation_kind::foreign_pointer));
}

TEST(StackAllocatorBadFree, ForeignPointerLeavesStateUnchanged) {
    aligned_buffer buf(kBuf), other(4096);
    stack_allocator s(buf.span());
    ASSERT_NE(s.allocate(32), nullptr);
    const stack_state before = state_of(s);
    alignas(16) std::byte local[64] = {}; // room for a header below local + 32
    strata::test::recording_handler rec;
    s.deallocate(local + 32);
    s.deallocate(other.data() + 16, 16, 16);
    s.deallocate(buf.data() + kBuf);
    EXPECT_TRUE(unchanged(s, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 3u : 0u);
}

TEST(StackAllocatorBadFree, FreeingNullptrIsASilentNoOp) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    ASSERT_NE(s.allocate(32), nullptr);
    const stack_state before = state_of(s);
    strata::test::recording_handler rec;
    s.deallocate(nullptr);
    s.deallocate(nullptr, 0, 16);
    EXPECT_TRUE(unchanged(s, before));
    EXPECT_TRUE(rec.empty());
}

// --- markers ---

TEST(StackAllocator, RewindFreesEverythingAfterTheMarker) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    void* a = s.allocate(100);
    fill_pattern(a, 100, 5);
    const stack_allocator::marker m = s.mark();
    const std::size_t at_mark = s.in_use();
    void* b = s.allocate(200, 64);
    ASSERT_NE(s.allocate(300), nullptr);
    const std::size_t high = s.in_use();
    s.rewind(m);
    STRATA_EXPECT_SAME_STATS(s.stats(),
                             (strata::stats{at_mark, high, kBuf, 1, 3, expected_lfb(at_mark, kBuf)}));
    EXPECT_TRUE(holds_pattern(a, 100, 5));
    EXPECT_EQ(s.allocate(200, 64), b);
    s.rewind(m);
    // The allocation before the marker is the latest again and can be freed in order.
    strata::test::recording_handler rec;
    s.deallocate(a);
    EXPECT_TRUE(rec.empty());
    EXPECT_EQ(s.in_use(), 0u);
}

TEST(StackAllocator, NestedScopesRewindInOrder) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    ASSERT_NE(s.allocate(16), nullptr);
    {
        strata::scope<stack_allocator> outer(s);
        EXPECT_EQ(&outer.get(), &s);
        ASSERT_NE(s.allocate(100), nullptr);
        const std::size_t outer_use = s.in_use();
        void* inner_first = nullptr;
        {
            strata::scope<stack_allocator> inner(s);
            inner_first = s.allocate(50, 32);
            ASSERT_NE(s.allocate(500), nullptr);
            EXPECT_EQ(s.stats().live_allocations, 4u);
        }
        EXPECT_EQ(s.in_use(), outer_use);
        EXPECT_EQ(s.stats().live_allocations, 2u);
        EXPECT_EQ(s.allocate(50, 32), inner_first);
    }
    EXPECT_EQ(s.in_use(), 32u);
    EXPECT_EQ(s.stats().live_allocations, 1u);
    EXPECT_EQ(s.stats().total_allocations, 5u);
}

TEST(StackAllocatorMarker, MarkerFromAnotherStackIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf1(4096), buf2(4096);
    stack_allocator s(buf1.span()), other(buf2.span());
    ASSERT_NE(other.allocate(10), nullptr);
    ASSERT_NE(s.allocate(100), nullptr);
    strata::test::recording_handler rec;
    s.rewind(other.mark());
    ASSERT_TRUE(rec.saw_one(violation_kind::invalid_marker));
    EXPECT_EQ(rec.last().allocator, "strata::stack_allocator");
}

TEST(StackAllocatorMarker, MarkerRewoundPastAndBelowTheTopAgainIsRefused) {
    // The marker names an allocation that a reset freed; a new allocation's padding now covers
    // its header. Accepted, the next free would read user bytes as that header.
    aligned_buffer buf(4096);
    stack_allocator s(buf.span());
    ASSERT_NE(s.allocate(16, 16), nullptr);
    const stack_allocator::marker m = s.mark();
    s.reset();
    void* b = s.allocate(200, 256);
    ASSERT_NE(b, nullptr);
    std::memset(b, 0x41, 200);
    const stack_state before = state_of(s);
    strata::test::recording_handler rec;
    s.rewind(m); // a reset went below it: refused at every level
    EXPECT_TRUE(unchanged(s, before));
    if (strata::test::checks_on) {
        EXPECT_TRUE(rec.saw_one(violation_kind::invalid_marker));
    }
    // Valid markers still rewind, the empty one (reset) included.
    const stack_allocator::marker m2 = s.mark();
    ASSERT_NE(s.allocate(64), nullptr);
    s.rewind(m2);
    EXPECT_EQ(s.in_use(), before.s.in_use);
    EXPECT_EQ(s.stats().live_allocations, 1u);
    s.deallocate(b);
    EXPECT_EQ(s.in_use(), 0u);
    s.reset();
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
}

TEST(StackAllocatorMarker, MarkerFromAnotherStackLeavesStateUnchanged) {
    aligned_buffer buf1(4096), buf2(4096);
    stack_allocator s(buf1.span()), other(buf2.span());
    ASSERT_NE(other.allocate(10), nullptr);
    ASSERT_NE(s.allocate(100), nullptr);
    const stack_state before = state_of(s);
    strata::test::recording_handler rec;
    s.rewind(other.mark());
    s.rewind(stack_allocator::marker{});
    EXPECT_TRUE(unchanged(s, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 2u : 0u);
}

TEST(StackAllocatorMarker, NewerMarkerIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf(4096);
    stack_allocator s(buf.span());
    const stack_allocator::marker m1 = s.mark();
    ASSERT_NE(s.allocate(100), nullptr);
    const stack_allocator::marker m2 = s.mark();
    s.rewind(m1);
    strata::test::recording_handler rec;
    s.rewind(m2);
    EXPECT_TRUE(rec.saw_one(violation_kind::invalid_marker));
}

TEST(StackAllocatorMarker, NewerMarkerLeavesStateUnchanged) {
    aligned_buffer buf(4096);
    stack_allocator s(buf.span());
    const stack_allocator::marker m1 = s.mark();
    ASSERT_NE(s.allocate(100), nullptr);
    const stack_allocator::marker m2 = s.mark();
    s.rewind(m1);
    ASSERT_NE(s.allocate(16), nullptr);
    const stack_state before = state_of(s);
    strata::test::recording_handler rec;
    s.rewind(m2);
    EXPECT_TRUE(unchanged(s, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
}

TEST(StackAllocator, ResetFreesEverythingAndKeepsTotalsAndPeak) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    for (int i = 0; i < 10; ++i)
        ASSERT_NE(s.allocate(100), nullptr);
    const std::size_t high = s.in_use();
    s.reset();
    STRATA_EXPECT_SAME_STATS(s.stats(), (strata::stats{0, high, kBuf, 0, 10, kBuf - kHdr}));
    EXPECT_EQ(s.allocate(8), buf.data() + kHdr);
    strata::test::recording_handler rec;
    s.reset();
    s.reset();
    EXPECT_TRUE(rec.empty());
    EXPECT_EQ(s.in_use(), 0u);
}

// A reset is always valid, so it reads no header (a rewind at checks >= 1 walks the headers of
// every live allocation, O(live)): here one is overwritten (an overrun of the block below it), which
// such a walk would refuse as "not a state of this stack", leaving everything allocated.
TEST(StackAllocator, ResetReadsNoHeader) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    std::byte* p[4];
    for (auto*& q : p) {
        q = static_cast<std::byte*>(s.allocate(32, 16));
        ASSERT_NE(q, nullptr);
    }
    // p[1] overran into p[2]'s header: it now claims p[2] was the first allocation, at offset 123.
    const std::size_t forged[2] = {123, 0};
    std::memcpy(p[2] - kHdr, forged, kHdr);
    strata::test::recording_handler rec;
    s.reset();
    EXPECT_TRUE(rec.empty());
    EXPECT_EQ(s.in_use(), 0u);
    EXPECT_EQ(s.stats().live_allocations, 0u);
    EXPECT_EQ(s.stats().total_allocations, 4u);
    EXPECT_EQ(s.allocate(32, 16), p[0]);
    EXPECT_EQ(extents_of(s).size(), 2u) << "one live block, then the free tail";
}

// Documented choice: a marker at the base stays valid through reset(), so one taken once may end
// every iteration (rewinding to it is a reset); markers above it go stale.
TEST(StackAllocatorMarker, MarkerAtTheBaseStaysValidThroughResets) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    strata::test::recording_handler rec;
    const stack_allocator::marker start = s.mark();
    for (int iteration = 0; iteration < 10; ++iteration) {
        ASSERT_NE(s.allocate(100 + iteration), nullptr);
        if (iteration % 2 == 0) s.reset();
        ASSERT_NE(s.allocate(50), nullptr);
        s.rewind(start);
        ASSERT_EQ(s.in_use(), 0u);
        ASSERT_EQ(s.stats().live_allocations, 0u);
    }
    EXPECT_TRUE(rec.empty());
}

TEST(StackAllocator, PeakIsTheHighestInUseEverSeen) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    void* p = s.allocate(1000, 8);
    EXPECT_EQ(s.stats().peak, 1016u);
    s.deallocate(p);
    EXPECT_EQ(s.stats().peak, 1016u);
    ASSERT_NE(s.allocate(100, 8), nullptr);
    EXPECT_EQ(s.stats().peak, 1016u);
    ASSERT_NE(s.allocate(1000, 8), nullptr);
    EXPECT_EQ(s.stats().peak, 1136u); // 116, header to 132, block at 136 (8-aligned), + 1000
}

TEST(StackAllocator, OwnsExactlyTheBuffer) {
    aligned_buffer buf(kBuf + 64);
    stack_allocator s(buf.span(32, kBuf));
    int local = 0;
    EXPECT_TRUE(s.owns(buf.data() + 32));
    EXPECT_TRUE(s.owns(buf.data() + 32 + kBuf - 1));
    EXPECT_FALSE(s.owns(buf.data() + 31));
    EXPECT_FALSE(s.owns(buf.data() + 32 + kBuf));
    EXPECT_FALSE(s.owns(&local));
    EXPECT_FALSE(s.owns(nullptr));
    void* p = s.allocate(10);
    EXPECT_TRUE(s.owns(p));
}

TEST(StackAllocator, ForEachBlockWalksLiveBlocksNewestFirstThenTheFreeTail) {
    aligned_buffer buf(kBuf);
    stack_allocator s(buf.span());
    void* a = s.allocate(32);
    ASSERT_NE(s.allocate(100, 64), nullptr);
    EXPECT_EQ(extents_of(s), (std::vector<extent>{{48, 116, true}, {0, 48, true}, {164, kBuf - 164, false}}));
    EXPECT_EQ(strata::test::total_size(extents_of(s)), kBuf);
    ASSERT_NE(s.allocate(s.stats().largest_free_block), nullptr);
    std::vector<extent> ext = extents_of(s);
    ASSERT_EQ(ext.size(), 3u);
    EXPECT_TRUE(ext[0].used);
    EXPECT_EQ(ext[0].offset, 164u);
    EXPECT_EQ(strata::test::total_size(ext), kBuf);
    s.reset();
    ASSERT_EQ(s.allocate(32), a);
    EXPECT_EQ(extents_of(s), (std::vector<extent>{{0, 48, true}, {48, kBuf - 48, false}}));
}

// --- fill patterns and poisoning ---

#if STRATA_CHECKS >= 2
TEST(StackAllocatorFill, FreshAllocationsRead0xCD) {
    aligned_buffer buf(4096);
    stack_allocator s(buf.span());
    void* p = s.allocate(100);
    EXPECT_TRUE(all_bytes(p, 100, strata::fill_allocated));
    std::memset(p, 0, 100);
    s.deallocate(p);
    void* q = s.allocate(100);
    ASSERT_EQ(q, p);
    EXPECT_TRUE(all_bytes(q, 100, strata::fill_allocated));
}

#if !STRATA_ASAN
TEST(StackAllocatorFill, FreedAndRewoundBytesRead0xDD) {
    aligned_buffer buf(4096);
    stack_allocator s(buf.span());
    void* a = s.allocate(64);
    std::memset(a, 0x11, 64);
    const stack_allocator::marker m = s.mark();
    void* b = s.allocate(100);
    std::memset(b, 0x22, 100);
    s.deallocate(b);
    EXPECT_TRUE(all_bytes(b, 100, strata::fill_freed));
    EXPECT_TRUE(all_bytes(bytes(b) - kHdr, kHdr, strata::fill_freed)) << "the header is released too";
    EXPECT_TRUE(all_bytes(a, 64, 0x11));
    void* c = s.allocate(200);
    std::memset(c, 0x33, 200);
    s.rewind(m);
    EXPECT_TRUE(all_bytes(c, 200, strata::fill_freed));
    EXPECT_TRUE(all_bytes(a, 64, 0x11));
    s.reset();
    EXPECT_TRUE(all_bytes(a, 64, strata::fill_freed));
    EXPECT_TRUE(all_bytes(buf.data() + 512, 4096 - 512, strata::test::untouched_byte));
}
#endif // !STRATA_ASAN
#endif // STRATA_CHECKS >= 2

#if STRATA_ASAN
TEST(StackAllocatorAsanDeathTest, TouchingAFreedBlockIsUseAfterPoison) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    aligned_buffer buf(4096);
    stack_allocator s(buf.span());
    auto* p = static_cast<volatile unsigned char*>(s.allocate(64));
    p[0] = 1;
    s.deallocate(const_cast<unsigned char*>(p));
    EXPECT_DEATH({ p[0] = 2; }, "use-after-poison");
}

TEST(StackAllocatorAsanDeathTest, AlignmentPaddingIsPoisoned) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    aligned_buffer buf(4096);
    stack_allocator s(buf.span());
    ASSERT_NE(s.allocate(8, 8), nullptr);
    ASSERT_NE(s.allocate(8, 256), nullptr); // padding 24..240, header 240..256
    auto* pad = reinterpret_cast<volatile unsigned char*>(buf.data() + 128);
    EXPECT_DEATH({ (void)pad[0]; }, "use-after-poison");
}

TEST(StackAllocatorAsanDeathTest, TouchingMemoryAfterResetIsUseAfterPoison) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    aligned_buffer buf(4096);
    stack_allocator s(buf.span());
    auto* p = static_cast<volatile unsigned char*>(s.allocate(64));
    p[0] = 1;
    s.reset();
    EXPECT_DEATH({ (void)p[0]; }, "use-after-poison");
}
#endif // STRATA_ASAN

// --- randomized against the reference model ---

// Odd sizes too, so small alignments follow odd tops (SmallAlignmentsAfterOddSizesKeepTheHeaderAligned).
constexpr bool kOddSizes = true;

struct live_block {
    void* p;
    std::size_t size;
    std::size_t top_before; // in_use() before the allocation
};

struct saved_marker {
    stack_allocator::marker m;
    std::size_t live;
};

TEST(StackAllocatorRandom, AgainstReferenceModel) {
    constexpr std::size_t cap = 16 * 1024;
    aligned_buffer buf(cap);
    stack_allocator s(buf.span());
    strata::test::recording_handler rec;
    std::mt19937_64 rng(0x57AC);
    auto pick = [&](std::size_t lo, std::size_t hi) {
        return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
    };
    strata::test::reference_model model;
    std::vector<live_block> lifo;
    std::vector<saved_marker> markers;
    std::size_t successes = 0, failures = 0, reports = 0, max_in_use = 0, rewinds = 0, frees = 0;

    for (int op = 0; op < 20000; ++op) {
        const std::size_t dice = pick(0, 99);
        if (dice < 50) { // allocate
            std::size_t size = pick(1, 512);
            if (!kOddSizes) size = (size + 7) / 8 * 8;
            const std::size_t align = std::size_t{1} << pick(0, 8);
            const stack_state before = state_of(s);
            void* p = s.allocate(size, align);
            if (p == nullptr) {
                ++failures;
                ASSERT_TRUE(unchanged(s, before)) << "op " << op;
            } else {
                ++successes;
                model.add(p, size, align);
                lifo.push_back({p, size, before.s.in_use});
            }
        } else if (dice < 68) { // free the latest
            if (lifo.empty()) continue;
            const live_block b = lifo.back();
            lifo.pop_back();
            model.remove(b.p);
            s.deallocate(b.p);
            ++frees;
            ASSERT_EQ(s.in_use(), b.top_before) << "op " << op;
            while (!markers.empty() && markers.back().m.top > s.in_use())
                markers.pop_back();
            if (pick(0, 3) == 0) { // and free it again: double free
                const stack_state before = state_of(s);
                s.deallocate(b.p);
                ASSERT_TRUE(unchanged(s, before)) << "op " << op;
                if (strata::test::checks_on) {
                    ++reports;
                    ASSERT_EQ(rec.last().kind, violation_kind::double_free) << "op " << op;
                }
            }
        } else if (dice < 72) { // free an older one: out of order
            if (lifo.size() < 2) continue;
            const live_block b = lifo[pick(0, lifo.size() - 2)];
            const stack_state before = state_of(s);
            s.deallocate(b.p, b.size, 1);
            ASSERT_TRUE(unchanged(s, before)) << "op " << op;
            if (strata::test::checks_on) {
                ++reports;
                ASSERT_EQ(rec.last().kind, violation_kind::out_of_order_free) << "op " << op;
            }
        } else if (dice < 82) { // mark
            markers.push_back({s.mark(), lifo.size()});
        } else if (dice < 90) { // rewind, mostly to a recent marker
            if (markers.empty()) continue;
            const std::size_t back = pick(0, 9) == 0 ? pick(0, markers.size() - 1)
                                                     : std::min<std::size_t>(pick(0, 2), markers.size() - 1);
            const std::size_t i = markers.size() - 1 - back;
            const saved_marker sm = markers[i];
            while (lifo.size() > sm.live) {
                model.remove(lifo.back().p);
                lifo.pop_back();
            }
            s.rewind(sm.m);
            ++rewinds;
            markers.resize(i + 1);
            ASSERT_EQ(s.in_use(), sm.m.top) << "op " << op;
        } else if (dice < 91 && pick(0, 3) == 0) { // reset
            model.verify_all();
            model.clear();
            lifo.clear();
            markers.clear();
            s.reset();
        } else if (dice < 93) {
            model.verify_all();
        } else { // the largest free block is exactly servable
            const stack_state before = state_of(s);
            const std::size_t lfb = before.s.largest_free_block;
            ASSERT_EQ(s.allocate(lfb + 1), nullptr) << "op " << op;
            ASSERT_TRUE(unchanged(s, before));
            if (lfb > 0) {
                void* p = s.allocate(lfb);
                ASSERT_NE(p, nullptr) << "op " << op;
                ++successes;
                max_in_use = std::max(max_in_use, s.in_use());
                ASSERT_EQ(s.in_use(), cap) << "op " << op;
                s.deallocate(p);
            }
        }
        if (::testing::Test::HasFatalFailure()) return;

        const strata::stats st = s.stats();
        max_in_use = std::max(max_in_use, st.in_use);
        ASSERT_EQ(st.live_allocations, model.size()) << "op " << op;
        ASSERT_EQ(st.live_allocations, lifo.size()) << "op " << op;
        ASSERT_EQ(st.total_allocations, successes) << "op " << op;
        ASSERT_EQ(st.peak, max_in_use) << "op " << op;
        ASSERT_EQ(st.capacity, cap);
        ASSERT_EQ(rec.count(), reports) << "op " << op;
        if (!lifo.empty()) {
            ASSERT_GE(st.in_use, lifo.back().top_before + kHdr + lifo.back().size) << "op " << op;
        }
        const std::vector<extent> ext = extents_of(s);
        ASSERT_EQ(strata::test::total_size(ext), cap) << "op " << op;
        ASSERT_EQ(strata::test::used_size(ext), st.in_use) << "op " << op;
        ASSERT_EQ(static_cast<std::size_t>(
                      std::count_if(ext.begin(), ext.end(), [](const extent& e) { return e.used; })),
                  lifo.size());
    }
    model.verify_all();
    EXPECT_GT(failures, 0u) << "the sequence should reach exhaustion";
    EXPECT_GT(rewinds, 100u);
    EXPECT_GT(frees, 100u);
}

} // namespace

// A free lowers the top below a marker taken above the freed block; an allocation of the same size
// and alignment then lifts it back, at the same offsets, where a walk of the live chain alone would
// take the marker for a state of the stack: frees are recorded at checks >= 1, as in arena and
// double_stack, so it is refused like theirs.
TEST(StackAllocator, AMarkerAFreeWentBelowIsRefusedEvenAfterTheSameAllocation) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf(1024);
    stack_allocator s(buf.span());
    void* a = s.allocate(32);
    const auto m = s.mark(); // above a
    s.deallocate(a);         // the top goes below m
    void* b = s.allocate(32);
    EXPECT_EQ(b, a); // the same place: the offsets alone cannot tell
    void* c = s.allocate(16);
    ASSERT_NE(c, nullptr);
    strata::test::recording_handler rec;
    s.rewind(m);
    EXPECT_TRUE(rec.saw_one(violation_kind::invalid_marker));
    EXPECT_EQ(s.stats().live_allocations, 2u); // refused: b and c stay
    const auto fresh = s.mark();
    s.deallocate(c);
    s.rewind(s.mark()); // a marker at the top: valid
    EXPECT_TRUE(rec.saw_one(violation_kind::invalid_marker));
    (void)fresh;
}
