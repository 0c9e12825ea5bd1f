// Tests of strata::double_stack: a bottom stack growing up and a top stack growing down.
#include "strata/linear/double_stack.hpp"

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

#include "support/bad_requests.hpp"
#include "support/linear_test_util.hpp"
#include "support/recording_handler.hpp"

namespace {

using strata::double_stack;
using strata::stack_end;
using strata::violation_kind;
using strata::test::aligned_buffer;
using strata::test::all_bytes;
using strata::test::extent;
using strata::test::extents_of;
using strata::test::fill_pattern;
using strata::test::holds_pattern;

constexpr std::size_t kBuf = 64 * 1024;

std::byte* bytes(void* p) { return static_cast<std::byte*>(p); }

struct ds_state {
    strata::stats s;
    std::size_t bottom, top;
    std::vector<extent> ext;
    friend bool operator==(const ds_state&, const ds_state&) = default;
};

ds_state state_of(const double_stack& d) { return {d.stats(), d.used_bottom(), d.used_top(), extents_of(d)}; }

::testing::AssertionResult unchanged(const double_stack& d, const ds_state& before) {
    const ds_state now = state_of(d);
    if (now == before) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "double_stack state changed: stats " << strata::test::describe(now.s) << " (was "
           << strata::test::describe(before.s) << "), bottom " << now.bottom << " (was " << before.bottom
           << "), top " << now.top << " (was " << before.top << ")";
}

TEST(DoubleStack, FreshStackReportsEmptyStats) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    STRATA_EXPECT_SAME_STATS(d.stats(), (strata::stats{0, 0, kBuf, 0, 0, kBuf}));
    EXPECT_EQ(d.used_bottom(), 0u);
    EXPECT_EQ(d.used_top(), 0u);
    EXPECT_EQ(d.remaining(), kBuf);
    EXPECT_EQ(d.capacity(), kBuf);
    EXPECT_EQ(extents_of(d), (std::vector<extent>{{0, kBuf, false}}));
}

TEST(DoubleStack, TheTwoEndsGrowTowardsEachOther) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    void* b = d.allocate_bottom(100, 1);
    void* t = d.allocate_top(100, 1);
    EXPECT_EQ(b, buf.data());
    EXPECT_EQ(t, buf.end() - 100);
    STRATA_EXPECT_SAME_STATS(d.stats(), (strata::stats{200, 200, kBuf, 2, 2, kBuf - 200}));
    EXPECT_EQ(extents_of(d),
              (std::vector<extent>{{0, 100, true}, {100, kBuf - 200, false}, {kBuf - 100, 100, true}}));
    EXPECT_EQ(strata::test::total_size(extents_of(d)), kBuf);
    // The contract's allocate() serves the bottom, with default alignment.
    void* p = d.allocate(8);
    EXPECT_EQ(p, buf.data() + 112);
    EXPECT_EQ(d.used_bottom(), 120u);
    fill_pattern(b, 100, 1);
    fill_pattern(t, 100, 2);
    fill_pattern(p, 8, 3);
    EXPECT_TRUE(holds_pattern(b, 100, 1));
    EXPECT_TRUE(holds_pattern(t, 100, 2));
    EXPECT_TRUE(holds_pattern(p, 8, 3));
}

TEST(DoubleStack, HonoursEveryPowerOfTwoAlignmentAtBothEnds) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    for (std::size_t align = 1; align <= 4096; align *= 2) {
        ASSERT_NE(d.allocate_bottom(1, 1), nullptr);
        const std::size_t lo = d.used_bottom();
        void* b = d.allocate_bottom(24, align);
        ASSERT_NE(b, nullptr) << "align " << align;
        EXPECT_TRUE(strata::test::aligned_to(b, align)) << "bottom, align " << align;
        EXPECT_EQ(bytes(b), buf.data() + (lo + align - 1) / align * align);

        ASSERT_NE(d.allocate_top(1, 1), nullptr);
        const std::size_t hi = kBuf - d.used_top();
        void* t = d.allocate_top(24, align);
        ASSERT_NE(t, nullptr) << "align " << align;
        EXPECT_TRUE(strata::test::aligned_to(t, align)) << "top, align " << align;
        EXPECT_EQ(bytes(t), buf.data() + (hi - 24) / align * align);
        EXPECT_EQ(d.used_top(), kBuf - static_cast<std::size_t>(bytes(t) - buf.data()));
        std::memset(b, 0x11, 24);
        std::memset(t, 0x22, 24);
    }
    EXPECT_EQ(d.stats().live_allocations, 52u);
}

TEST(DoubleStack, TheEndsMeetingIsExhaustionAndChangesNothing) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    ASSERT_NE(d.allocate_bottom(kBuf - 100, 1), nullptr);
    const ds_state before = state_of(d);
    EXPECT_EQ(d.allocate_bottom(101, 1), nullptr);
    EXPECT_EQ(d.allocate_top(101, 1), nullptr);
    EXPECT_EQ(d.allocate_top(90, 64), nullptr) << "90 bytes fit, but not once aligned down to 64";
    EXPECT_EQ(d.allocate_bottom(80, 64), nullptr) << "80 bytes fit, but not after 36 bytes of padding";
    EXPECT_TRUE(unchanged(d, before));
    void* t = d.allocate_top(100, 1);
    EXPECT_EQ(t, buf.end() - 100);
    EXPECT_EQ(d.remaining(), 0u);
    const ds_state full = state_of(d);
    EXPECT_EQ(full.s.largest_free_block, 0u);
    EXPECT_EQ(d.allocate_bottom(1, 1), nullptr);
    EXPECT_EQ(d.allocate_top(1, 1), nullptr);
    EXPECT_TRUE(unchanged(d, full));
}

// allocate() is LinearContract's; here the same tables at both ends.
TEST(DoubleStack, BadRequestsReturnNullAtBothEndsWithoutStateChange) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    std::vector<strata::test::bad_request> cases = strata::test::all_bad_requests();
    cases.push_back({16, std::size_t{1} << 63}); // valid, but larger than the buffer
    for (int round = 0; round < 2; ++round) {
        const ds_state before = state_of(d);
        for (const auto& c : cases) {
            EXPECT_EQ(d.allocate_bottom(c.size, c.align), nullptr)
                << "bottom size " << c.size << " align " << c.align;
            EXPECT_EQ(d.allocate_top(c.size, c.align), nullptr)
                << "top size " << c.size << " align " << c.align;
            EXPECT_TRUE(unchanged(d, before)) << "size " << c.size << " align " << c.align;
        }
        ASSERT_NE(d.allocate_bottom(3, 1), nullptr);
        ASSERT_NE(d.allocate_top(5, 1), nullptr);
    }
}

TEST(DoubleStack, DeallocatingTheLatestBottomAllocationGivesItsBytesBack) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    void* a = d.allocate_bottom(64, 16);
    void* b = d.allocate_bottom(32, 16);
    ASSERT_NE(d.allocate_top(16, 16), nullptr);
    d.deallocate(b, 32, 16);
    STRATA_EXPECT_SAME_STATS(d.stats(), (strata::stats{80, 112, kBuf, 2, 3, kBuf - 80}));
    EXPECT_EQ(d.allocate_bottom(32, 16), b);
    const ds_state before = state_of(d);
    d.deallocate(a, 64, 16); // older: nothing
    EXPECT_TRUE(unchanged(d, before));
}

TEST(DoubleStack, DeallocatingTheLatestTopAllocationGivesItsBytesBack) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    void* t1 = d.allocate_top(64, 16);
    void* t2 = d.allocate_top(32, 16);
    ASSERT_EQ(t2, buf.end() - 96);
    ASSERT_NE(d.allocate_bottom(16, 16), nullptr);
    d.deallocate(t2, 32, 16);
    EXPECT_EQ(d.used_top(), 64u);
    STRATA_EXPECT_SAME_STATS(d.stats(), (strata::stats{80, 112, kBuf, 2, 3, kBuf - 80}));
    EXPECT_EQ(d.allocate_top(32, 16), t2);
    const ds_state before = state_of(d);
    d.deallocate(t1, 64, 16); // older: nothing
    EXPECT_TRUE(unchanged(d, before));
}

TEST(DoubleStack, TopDeallocationLeavesThePaddingUntilRewind) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    const double_stack::marker m = d.mark_top();
    ASSERT_EQ(d.allocate_top(10, 1), buf.end() - 10);
    void* p = d.allocate_top(8, 64); // aligned down to end - 64: 46 bytes of padding above it
    ASSERT_EQ(p, buf.end() - 64);
    EXPECT_EQ(d.used_top(), 64u);
    d.deallocate(p, 8, 64);
    EXPECT_EQ(d.used_top(), 56u) << "documented: the padding above a top block is recovered at rewind/reset";
    EXPECT_EQ(d.stats().live_allocations, 1u);
    d.rewind_top(m);
    EXPECT_EQ(d.used_top(), 0u);
}

// No header records a block's padding, so freeing in reverse stops at the first padded block.
// Documented in deallocate and README; markers reclaim everything.
TEST(DoubleStack, ReverseFreesPastAPaddedBlockFreeNothingUntilRewind) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    const double_stack::marker mb = d.mark_bottom();
    const double_stack::marker mt = d.mark_top();
    void* a = d.allocate_bottom(3, 1);
    void* b = d.allocate_bottom(8, 8); // 5 bytes of padding below it
    ASSERT_EQ(b, buf.data() + 8);
    void* t = d.allocate_top(3, 1);
    void* u = d.allocate_top(8, 8); // 5 bytes of padding above it
    ASSERT_EQ(u, buf.end() - 16);
    d.deallocate(b, 8, 8);
    d.deallocate(u, 8, 8);
    EXPECT_EQ(d.used_bottom(), 8u) << "a's 3 bytes and b's padding";
    EXPECT_EQ(d.used_top(), 8u);
    const ds_state before = state_of(d);
    d.deallocate(a, 3, 1);
    d.deallocate(t, 3, 1);
    EXPECT_TRUE(unchanged(d, before)) << "a and t no longer touch the free space: documented no-op";
    EXPECT_EQ(d.stats().live_allocations, 2u);
    d.rewind_bottom(mb);
    d.rewind_top(mt);
    EXPECT_EQ(d.remaining(), kBuf);
    EXPECT_EQ(d.stats().live_allocations, 0u);
}

TEST(DoubleStack, ForeignAndNullDeallocationsChangeNothing) {
    aligned_buffer buf(kBuf), other(4096);
    double_stack d(buf.span());
    ASSERT_NE(d.allocate_bottom(32, 16), nullptr);
    ASSERT_NE(d.allocate_top(32, 16), nullptr);
    const ds_state before = state_of(d);
    int local = 0;
    strata::test::recording_handler rec;
    d.deallocate(&local, sizeof local, alignof(int));
    d.deallocate(other.data(), 32, 16);
    d.deallocate(nullptr, 0, 16);
    d.deallocate(buf.end(), 32, 16);
    EXPECT_TRUE(unchanged(d, before));
    EXPECT_TRUE(rec.empty());
}

TEST(DoubleStack, MarkersRewindEachEndIndependently) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    void* b0 = d.allocate_bottom(100, 16);
    void* t0 = d.allocate_top(100, 16);
    fill_pattern(b0, 100, 1);
    fill_pattern(t0, 100, 2);
    const double_stack::marker mb = d.mark_bottom();
    const double_stack::marker mt = d.mark_top();
    EXPECT_EQ(mb.end, stack_end::bottom);
    EXPECT_EQ(mt.end, stack_end::top);
    EXPECT_EQ(d.mark().end, stack_end::bottom);
    EXPECT_EQ(d.mark(stack_end::top).offset, mt.offset);
    void* b1 = d.allocate_bottom(300, 64);
    void* t1 = d.allocate_top(300, 64);
    ASSERT_NE(d.allocate_bottom(50), nullptr);
    ASSERT_NE(d.allocate_top(50), nullptr);
    const std::size_t high = d.stats().in_use;
    const std::size_t top_used = d.used_top();
    d.rewind_bottom(mb);
    EXPECT_EQ(d.used_bottom(), 100u);
    EXPECT_EQ(d.used_top(), top_used) << "the top is untouched";
    EXPECT_EQ(d.stats().live_allocations, 4u);
    d.rewind(mt); // the generic rewind follows the marker's end
    EXPECT_EQ(d.used_top(), mt.offset);
    STRATA_EXPECT_SAME_STATS(d.stats(),
                             (strata::stats{100 + mt.offset, high, kBuf, 2, 6, kBuf - 100 - mt.offset}));
    EXPECT_TRUE(holds_pattern(b0, 100, 1));
    EXPECT_TRUE(holds_pattern(t0, 100, 2));
    EXPECT_EQ(d.allocate_bottom(300, 64), b1);
    EXPECT_EQ(d.allocate_top(300, 64), t1);
    d.rewind_top(mt);
    d.rewind(mb);
    EXPECT_EQ(d.stats().in_use, 100u + mt.offset);
}

TEST(DoubleStack, NestedScopesRewindTheBottom) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    ASSERT_NE(d.allocate_bottom(16), nullptr);
    ASSERT_NE(d.allocate_top(16), nullptr);
    {
        strata::scope<double_stack> outer(d);
        ASSERT_NE(d.allocate(100), nullptr);
        const std::size_t outer_use = d.used_bottom();
        void* inner_first = nullptr;
        {
            strata::scope<double_stack> inner(d);
            inner_first = d.allocate(50, 64);
            ASSERT_NE(d.allocate(500), nullptr);
            ASSERT_NE(d.allocate_top(500), nullptr); // the top is not the scope's business
        }
        EXPECT_EQ(d.used_bottom(), outer_use);
        EXPECT_EQ(d.allocate(50, 64), inner_first);
    }
    EXPECT_EQ(d.used_bottom(), 16u);
    EXPECT_EQ(d.used_top(), 528u); // 16, then 500 aligned down to 16 below it
    EXPECT_EQ(d.stats().live_allocations, 3u);
}

TEST(DoubleStackMarker, MarkerForTheOtherEndIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    ASSERT_NE(d.allocate_bottom(100), nullptr);
    ASSERT_NE(d.allocate_top(100), nullptr);
    strata::test::recording_handler rec;
    d.rewind_top(d.mark_bottom());
    EXPECT_TRUE(rec.saw_one(violation_kind::invalid_marker));
    EXPECT_EQ(rec.last().allocator, "strata::double_stack");
    rec.clear();
    d.rewind_bottom(d.mark_top());
    EXPECT_TRUE(rec.saw_one(violation_kind::invalid_marker));
}

TEST(DoubleStackMarker, MarkerForTheOtherEndLeavesStateUnchanged) {
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    const double_stack::marker bottom0 = d.mark_bottom(); // offset 0: would empty the top if obeyed
    const double_stack::marker top0 = d.mark_top();
    ASSERT_NE(d.allocate_bottom(100), nullptr);
    ASSERT_NE(d.allocate_top(100), nullptr);
    const ds_state before = state_of(d);
    strata::test::recording_handler rec;
    d.rewind_top(bottom0);
    d.rewind_bottom(top0);
    EXPECT_TRUE(unchanged(d, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 2u : 0u);
}

TEST(DoubleStackMarker, MarkerFromAnotherDoubleStackIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf1(4096), buf2(4096);
    double_stack d(buf1.span()), other(buf2.span());
    ASSERT_NE(d.allocate_bottom(100), nullptr);
    strata::test::recording_handler rec;
    d.rewind(other.mark_bottom());
    EXPECT_TRUE(rec.saw_one(violation_kind::invalid_marker));
}

TEST(DoubleStackMarker, MarkerFromAnotherDoubleStackLeavesStateUnchanged) {
    aligned_buffer buf1(4096), buf2(4096);
    double_stack d(buf1.span()), other(buf2.span());
    ASSERT_NE(d.allocate_bottom(100), nullptr);
    ASSERT_NE(d.allocate_top(100), nullptr);
    const ds_state before = state_of(d);
    strata::test::recording_handler rec;
    d.rewind(other.mark_bottom());
    d.rewind_top(other.mark_top());
    d.rewind(double_stack::marker{});
    EXPECT_TRUE(unchanged(d, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 3u : 0u);
}

TEST(DoubleStackMarker, NewerMarkerIsReportedAtEitherEnd) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    for (const stack_end e : {stack_end::bottom, stack_end::top}) {
        const double_stack::marker m1 = d.mark(e);
        ASSERT_NE(e == stack_end::bottom ? d.allocate_bottom(100) : d.allocate_top(100), nullptr);
        const double_stack::marker m2 = d.mark(e);
        d.rewind(m1);
        strata::test::recording_handler rec;
        d.rewind(m2);
        EXPECT_TRUE(rec.saw_one(violation_kind::invalid_marker));
    }
}

TEST(DoubleStackMarker, NewerMarkerLeavesStateUnchanged) {
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    for (const stack_end e : {stack_end::bottom, stack_end::top}) {
        const double_stack::marker m1 = d.mark(e);
        ASSERT_NE(e == stack_end::bottom ? d.allocate_bottom(100) : d.allocate_top(100), nullptr);
        const double_stack::marker m2 = d.mark(e);
        d.rewind(m1);
        ASSERT_NE(e == stack_end::bottom ? d.allocate_bottom(8) : d.allocate_top(8), nullptr);
        const ds_state before = state_of(d);
        strata::test::recording_handler rec;
        d.rewind(m2);
        if (e == stack_end::bottom) {
            d.rewind_bottom(m2);
        } else {
            d.rewind_top(m2);
        }
        EXPECT_TRUE(unchanged(d, before));
        EXPECT_EQ(rec.count(), strata::test::checks_on ? 2u : 0u);
    }
}

TEST(DoubleStackMarker, StaleMarkerBelowTheTopAgainIsRefusedAtEitherEnd) {
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    for (const stack_end e : {stack_end::bottom, stack_end::top}) {
        auto alloc = [&](std::size_t n) {
            return e == stack_end::bottom ? d.allocate_bottom(n, 1) : d.allocate_top(n, 1);
        };
        const double_stack::marker m1 = d.mark(e);
        ASSERT_NE(alloc(100), nullptr);
        const double_stack::marker m2 = d.mark(e);
        d.rewind(m1);
        ASSERT_NE(alloc(300), nullptr); // live across m2's offset
        const ds_state before = state_of(d);
        strata::test::recording_handler rec;
        d.rewind(m2);
        EXPECT_TRUE(unchanged(d, before));
        ASSERT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
        if (strata::test::checks_on) {
            EXPECT_EQ(rec.last().kind, violation_kind::invalid_marker);
        }
        // A reset of that end makes every earlier marker above 0 stale the same way.
        const double_stack::marker m3 = d.mark(e);
        if (e == stack_end::bottom) {
            d.reset_bottom();
        } else {
            d.reset_top();
        }
        ASSERT_NE(alloc(600), nullptr);
        const ds_state before_reset = state_of(d);
        d.rewind(m3);
        EXPECT_TRUE(unchanged(d, before_reset));
        EXPECT_EQ(rec.count(), strata::test::checks_on ? 2u : 0u);
        d.reset();
    }
}

TEST(DoubleStackMarker, MarkerAboveAFreedBlockIsRefused) {
    STRATA_REQUIRE_CHECKS(1); // frees are recorded at checks >= 1 only
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    void* p = d.allocate_top(64, 1);
    ASSERT_NE(p, nullptr);
    const double_stack::marker m = d.mark_top();
    d.deallocate(p, 64);
    ASSERT_NE(d.allocate_top(256, 1), nullptr);
    const ds_state before = state_of(d);
    strata::test::recording_handler rec;
    d.rewind_top(m);
    EXPECT_TRUE(unchanged(d, before));
    EXPECT_TRUE(rec.saw_one(violation_kind::invalid_marker));
}

TEST(DoubleStackMarker, TheOtherEndsRewindsDoNotMakeAMarkerStale) {
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    strata::test::recording_handler rec;
    ASSERT_NE(d.allocate_bottom(200, 1), nullptr);
    const double_stack::marker bottom = d.mark_bottom();
    const double_stack::marker top0 = d.mark_top();
    ASSERT_NE(d.allocate_top(300, 1), nullptr);
    d.rewind_top(top0); // the top end went to 0; the bottom marker at 200 is still good
    ASSERT_NE(d.allocate_bottom(50, 1), nullptr);
    d.rewind_bottom(bottom);
    EXPECT_EQ(d.used_bottom(), 200u);
    EXPECT_EQ(rec.count(), 0u);
}

// Documented choice, as in arena and stack_allocator: a marker at an end's 0 stays valid through
// that end's resets, so one taken once may end every iteration.
TEST(DoubleStackMarker, MarkersAt0StayValidThroughResets) {
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    strata::test::recording_handler rec;
    const double_stack::marker bottom0 = d.mark_bottom();
    const double_stack::marker top0 = d.mark_top();
    for (int iteration = 0; iteration < 10; ++iteration) {
        ASSERT_NE(d.allocate_bottom(100 + iteration), nullptr);
        ASSERT_NE(d.allocate_top(60 + iteration), nullptr);
        if (iteration % 3 == 0) d.reset();
        if (iteration % 3 == 1) d.reset_bottom();
        ASSERT_NE(d.allocate_bottom(50), nullptr);
        ASSERT_NE(d.allocate_top(30), nullptr);
        d.rewind_bottom(bottom0);
        d.rewind_top(top0);
        ASSERT_EQ(d.stats().in_use, 0u);
        ASSERT_EQ(d.stats().live_allocations, 0u);
    }
    EXPECT_TRUE(rec.empty());
}

TEST(DoubleStack, ResetsFreeOneEndOrBoth) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    for (int i = 0; i < 5; ++i) {
        ASSERT_NE(d.allocate_bottom(100), nullptr);
        ASSERT_NE(d.allocate_top(200), nullptr);
    }
    const std::size_t high = d.stats().in_use;
    const std::size_t top_used = d.used_top();
    d.reset_bottom();
    EXPECT_EQ(d.used_bottom(), 0u);
    EXPECT_EQ(d.used_top(), top_used);
    EXPECT_EQ(d.stats().live_allocations, 5u);
    ASSERT_NE(d.allocate_bottom(100), nullptr);
    d.reset_top();
    EXPECT_EQ(d.used_top(), 0u);
    EXPECT_EQ(d.used_bottom(), 100u);
    EXPECT_EQ(d.stats().live_allocations, 1u);
    ASSERT_NE(d.allocate_top(200), nullptr);
    d.reset();
    STRATA_EXPECT_SAME_STATS(d.stats(), (strata::stats{0, high, kBuf, 0, 12, kBuf}));
    EXPECT_EQ(d.allocate_bottom(1, 1), buf.data());
    EXPECT_EQ(d.allocate_top(1, 1), buf.end() - 1);
}

TEST(DoubleStack, PeakCountsBothEndsTogether) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    ASSERT_NE(d.allocate_bottom(1000, 1), nullptr);
    ASSERT_NE(d.allocate_top(500, 1), nullptr);
    EXPECT_EQ(d.stats().peak, 1500u);
    d.reset_bottom();
    EXPECT_EQ(d.stats().peak, 1500u);
    ASSERT_NE(d.allocate_top(900, 1), nullptr);
    EXPECT_EQ(d.stats().peak, 1500u);
    ASSERT_NE(d.allocate_top(200, 1), nullptr);
    EXPECT_EQ(d.stats().peak, 1600u);
}

TEST(DoubleStack, OwnsExactlyTheBuffer) {
    aligned_buffer buf(kBuf + 64);
    double_stack d(buf.span(32, kBuf));
    int local = 0;
    EXPECT_TRUE(d.owns(buf.data() + 32));
    EXPECT_TRUE(d.owns(buf.data() + 32 + kBuf - 1));
    EXPECT_FALSE(d.owns(buf.data() + 31));
    EXPECT_FALSE(d.owns(buf.data() + 32 + kBuf));
    EXPECT_FALSE(d.owns(&local));
    EXPECT_FALSE(d.owns(nullptr));
    EXPECT_TRUE(d.owns(d.allocate_top(10)));
    EXPECT_TRUE(d.owns(d.allocate_bottom(10)));
}

TEST(DoubleStack, ForEachBlockReportsBottomFreeTop) {
    aligned_buffer buf(kBuf);
    double_stack d(buf.span());
    ASSERT_NE(d.allocate_top(64, 64), nullptr);
    EXPECT_EQ(extents_of(d), (std::vector<extent>{{0, kBuf - 64, false}, {kBuf - 64, 64, true}}));
    ASSERT_NE(d.allocate_bottom(kBuf - 64, 1), nullptr);
    EXPECT_EQ(extents_of(d), (std::vector<extent>{{0, kBuf - 64, true}, {kBuf - 64, 64, true}}));
    EXPECT_EQ(strata::test::total_size(extents_of(d)), kBuf);
}

#if STRATA_CHECKS >= 2
TEST(DoubleStackFill, FreshAllocationsRead0xCD) {
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    void* b = d.allocate_bottom(100);
    void* t = d.allocate_top(100);
    EXPECT_TRUE(all_bytes(b, 100, strata::fill_allocated));
    EXPECT_TRUE(all_bytes(t, 100, strata::fill_allocated));
}

#if !STRATA_ASAN
TEST(DoubleStackFill, ReleasedBytesRead0xDD) {
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    void* b = d.allocate_bottom(100, 1);
    void* t = d.allocate_top(100, 1);
    std::memset(b, 0x11, 100);
    std::memset(t, 0x22, 100);
    const double_stack::marker mt = d.mark_top();
    void* t2 = d.allocate_top(50, 1);
    std::memset(t2, 0x33, 50);
    d.deallocate(t2, 50, 1);
    EXPECT_TRUE(all_bytes(t2, 50, strata::fill_freed));
    void* t3 = d.allocate_top(60, 1);
    std::memset(t3, 0x44, 60);
    d.rewind_top(mt);
    EXPECT_TRUE(all_bytes(t3, 60, strata::fill_freed));
    EXPECT_TRUE(all_bytes(t, 100, 0x22));
    d.reset_bottom();
    EXPECT_TRUE(all_bytes(b, 100, strata::fill_freed));
    EXPECT_TRUE(all_bytes(t, 100, 0x22));
    d.reset_top();
    EXPECT_TRUE(all_bytes(t, 100, strata::fill_freed));
    EXPECT_TRUE(all_bytes(buf.data() + 100, 4096 - 300, strata::test::untouched_byte));
}
#endif // !STRATA_ASAN
#endif // STRATA_CHECKS >= 2

#if STRATA_ASAN
TEST(DoubleStackAsanDeathTest, TouchingTopMemoryAfterResetTopIsUseAfterPoison) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    auto* t = static_cast<volatile unsigned char*>(d.allocate_top(64, 64));
    t[0] = 1;
    d.reset_top();
    EXPECT_DEATH({ (void)t[0]; }, "use-after-poison");
}

TEST(DoubleStackAsanDeathTest, TouchingBottomMemoryAfterRewindIsUseAfterPoison) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    const double_stack::marker m = d.mark_bottom();
    auto* b = static_cast<volatile unsigned char*>(d.allocate_bottom(64, 64));
    b[0] = 1;
    d.rewind(m);
    EXPECT_DEATH({ b[0] = 2; }, "use-after-poison");
}
#endif // STRATA_ASAN

// --- randomized against the reference model ---

struct live_block {
    void* p;
    std::size_t size;
};

struct saved_marker {
    double_stack::marker m;
    std::size_t live;
};

TEST(DoubleStack, AZeroSizeFreeFreesNothing) {
    aligned_buffer buf(4096);
    double_stack d(buf.span());
    auto* lo = static_cast<std::byte*>(d.allocate_bottom(64, 16));
    auto* hi = static_cast<std::byte*>(d.allocate_top(64, 16));
    ASSERT_NE(lo, nullptr);
    ASSERT_NE(hi, nullptr);
    const ds_state before = state_of(d);
    d.deallocate(lo + 64, 0); // the bottom's top
    d.deallocate(hi, 0);      // the top end's lowest byte, with no size
    EXPECT_TRUE(unchanged(d, before));
    EXPECT_EQ(d.stats().live_allocations, 2u);
}

TEST(DoubleStackRandom, AgainstReferenceModel) {
    constexpr std::size_t cap = 24 * 1024;
    aligned_buffer buf(cap);
    double_stack d(buf.span());
    strata::test::recording_handler rec;
    std::mt19937_64 rng(0xD5);
    auto pick = [&](std::size_t lo, std::size_t hi) {
        return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
    };
    strata::test::reference_model model; // both ends: no block may overlap any other
    std::vector<live_block> lifo[2];     // [0] bottom, [1] top; oldest first
    std::vector<saved_marker> markers[2];
    std::size_t successes = 0, failures = 0, max_in_use = 0, rewinds = 0, gives = 0, stale_tries = 0;

    auto used = [&](int e) { return e == 0 ? d.used_bottom() : d.used_top(); };
    auto drop_markers_above = [&](int e) {
        while (!markers[e].empty() && markers[e].back().m.offset > used(e))
            markers[e].pop_back();
    };
    auto is_latest = [&](int e, const live_block& b) {
        return e == 0 ? static_cast<std::byte*>(b.p) + b.size == buf.data() + d.used_bottom()
                      : static_cast<std::byte*>(b.p) == buf.end() - d.used_top();
    };

    for (int op = 0; op < 20000; ++op) {
        const int e = static_cast<int>(pick(0, 1));
        const std::size_t dice = pick(0, 99);
        if (dice < 52) { // allocate
            const std::size_t size = pick(1, 512);
            const std::size_t align = std::size_t{1} << pick(0, 8);
            const ds_state before = state_of(d);
            void* p = e == 0 ? d.allocate_bottom(size, align) : d.allocate_top(size, align);
            if (p == nullptr) {
                ++failures;
                ASSERT_TRUE(unchanged(d, before)) << "op " << op;
            } else {
                ++successes;
                model.add(p, size, align);
                lifo[e].push_back({p, size});
                ASSERT_TRUE(d.owns(p));
            }
        } else if (dice < 64) { // deallocate the latest of this end
            if (lifo[e].empty()) continue;
            const live_block b = lifo[e].back();
            const bool latest = is_latest(e, b);
            const ds_state before = state_of(d);
            model.remove(b.p);
            d.deallocate(b.p, b.size, 1);
            if (latest) {
                ++gives;
                lifo[e].pop_back();
                ASSERT_EQ(used(e), (e == 0 ? before.bottom : before.top) - b.size) << "op " << op;
                drop_markers_above(e);
            } else { // padding left by an earlier top free separates it from the top
                ASSERT_TRUE(unchanged(d, before)) << "op " << op;
                model.add(b.p, b.size, 1);
            }
        } else if (dice < 68) { // deallocate an older one: nothing
            if (lifo[e].size() < 2) continue;
            const live_block b = lifo[e][pick(0, lifo[e].size() - 2)];
            if (is_latest(e, b)) continue;
            const ds_state before = state_of(d);
            d.deallocate(b.p, b.size, 1);
            ASSERT_TRUE(unchanged(d, before)) << "op " << op;
        } else if (dice < 78) { // mark
            markers[e].push_back({d.mark(e == 0 ? stack_end::bottom : stack_end::top), lifo[e].size()});
        } else if (dice < 86) { // rewind this end, mostly to a recent marker
            if (markers[e].empty()) continue;
            auto& ms = markers[e];
            const std::size_t back =
                pick(0, 9) == 0 ? pick(0, ms.size() - 1) : std::min<std::size_t>(pick(0, 2), ms.size() - 1);
            const std::size_t i = ms.size() - 1 - back;
            const saved_marker sm = ms[i];
            while (lifo[e].size() > sm.live) {
                model.remove(lifo[e].back().p);
                lifo[e].pop_back();
            }
            const std::size_t other = used(1 - e);
            if (pick(0, 1) == 0) {
                d.rewind(sm.m);
            } else if (e == 0) {
                d.rewind_bottom(sm.m);
            } else {
                d.rewind_top(sm.m);
            }
            ++rewinds;
            const saved_marker dropped = ms.back(); // stale when above sm
            ms.resize(i + 1);
            ASSERT_EQ(used(e), sm.m.offset) << "op " << op;
            ASSERT_EQ(used(1 - e), other) << "op " << op;
            if (dropped.m.offset > sm.m.offset && pick(0, 2) == 0) {
                // Lift this end past the stale marker; rewinding to it must change nothing.
                const std::size_t size = dropped.m.offset - used(e) + pick(1, 64);
                void* p = e == 0 ? d.allocate_bottom(size, 1) : d.allocate_top(size, 1);
                if (p != nullptr) {
                    ++successes;
                    model.add(p, size, 1);
                    lifo[e].push_back({p, size});
                    const ds_state before = state_of(d);
                    d.rewind(dropped.m);
                    ++stale_tries;
                    ASSERT_TRUE(unchanged(d, before)) << "op " << op;
                    ASSERT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u) << "op " << op;
                    rec.clear();
                }
            }
        } else if (dice < 87) { // rewind with the other end's marker: refused
            if (markers[1 - e].empty()) continue;
            const ds_state before = state_of(d);
            if (e == 0) {
                d.rewind_bottom(markers[1].back().m);
            } else {
                d.rewind_top(markers[0].back().m);
            }
            ASSERT_TRUE(unchanged(d, before)) << "op " << op;
            ASSERT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
            if (strata::test::checks_on) {
                ASSERT_EQ(rec.last().kind, violation_kind::invalid_marker);
            }
            rec.clear();
        } else if (dice < 89 && pick(0, 2) == 0) { // reset one end or both
            const int which = static_cast<int>(pick(0, 2));
            for (int end = 0; end < 2; ++end) {
                if (which != 2 && which != end) continue;
                for (const live_block& b : lifo[end])
                    model.remove(b.p);
                lifo[end].clear();
                markers[end].clear();
            }
            if (which == 0) d.reset_bottom();
            if (which == 1) d.reset_top();
            if (which == 2) d.reset();
        } else if (dice < 91) {
            model.verify_all();
        } else { // a burst at this end
            for (int k = 0; k < 6; ++k) {
                const std::size_t size = pick(1, 64);
                void* p = e == 0 ? d.allocate_bottom(size, 1) : d.allocate_top(size, 1);
                if (p == nullptr) break;
                ++successes;
                model.add(p, size, 1);
                lifo[e].push_back({p, size});
            }
        }
        if (::testing::Test::HasFatalFailure()) return;

        const strata::stats st = d.stats();
        max_in_use = std::max(max_in_use, st.in_use);
        ASSERT_EQ(st.in_use, d.used_bottom() + d.used_top());
        ASSERT_EQ(st.live_allocations, model.size()) << "op " << op;
        ASSERT_EQ(st.live_allocations, lifo[0].size() + lifo[1].size()) << "op " << op;
        ASSERT_EQ(st.total_allocations, successes) << "op " << op;
        ASSERT_EQ(st.peak, max_in_use) << "op " << op;
        ASSERT_EQ(st.largest_free_block, cap - st.in_use) << "op " << op;
        ASSERT_TRUE(rec.empty()) << "op " << op;
        const std::vector<extent> ext = extents_of(d);
        ASSERT_EQ(strata::test::total_size(ext), cap) << "op " << op;
        ASSERT_EQ(strata::test::used_size(ext), st.in_use) << "op " << op;
    }
    model.verify_all();
    EXPECT_GT(failures, 0u) << "the sequence should reach exhaustion";
    EXPECT_GT(rewinds, 100u);
    EXPECT_GT(gives, 100u);
    EXPECT_GT(stale_tries, 20u);
}

} // namespace
