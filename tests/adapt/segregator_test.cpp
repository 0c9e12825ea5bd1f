// segregator<Threshold, Small, Large> (adapt/segregator.hpp): requests up to Threshold go to Small,
// larger ones to Large; sized frees are routed by size and checked against the owner, unsized frees
// by owns(); stats add up, reset() and owns()/claims() cover both sides, bad input is what the
// chosen allocator answers, and a randomized run against a reference model.
#include "strata/adapt/segregator.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/adapt/allocator_ref.hpp"

#include "support/adapt_allocators.hpp"
#include "support/any_order_run.hpp"
#include "support/recording_handler.hpp"
#include "support/reference_model.hpp"

namespace {

using strata::segregator;
using strata::test::frees_exactly;
using strata::test::test_arena;
using strata::test::test_heap;
using strata::test::test_pool;
using strata::test::test_stack;
using strata::test::test_tlsf;

static_assert(strata::owning_allocator<segregator<64, test_stack, test_heap>>);
static_assert(strata::unsized_deallocator<segregator<64, test_stack, test_heap>>);
static_assert(!strata::unsized_deallocator<segregator<64, test_arena, test_heap>>);
static_assert(strata::resettable_allocator<segregator<64, test_stack, test_arena>>);
static_assert(segregator<64, test_stack, test_heap>::threshold == 64);

template <class S>
class SegregatorTyped : public ::testing::Test {};
using SegregatorPairs =
    ::testing::Types<segregator<128, test_stack, test_heap>, segregator<64, test_heap, test_arena>,
                     segregator<256, test_arena, test_heap>, segregator<1024, test_pool, test_tlsf>>;
TYPED_TEST_SUITE(SegregatorTyped, SegregatorPairs);

TYPED_TEST(SegregatorTyped, RoutesByTheThreshold) {
    TypeParam s;
    constexpr std::size_t t = TypeParam::threshold;
    void* at = s.allocate(t);
    void* above = s.allocate(t + 1);
    ASSERT_NE(at, nullptr);
    ASSERT_NE(above, nullptr);
    EXPECT_TRUE(s.small().owns(at));
    EXPECT_TRUE(s.large().owns(above));
    EXPECT_FALSE(s.small().owns(above));
    EXPECT_TRUE(s.owns(at));
    EXPECT_EQ(s.stats().live_allocations, 2u);
    s.deallocate(above, t + 1);
    s.deallocate(at, t);
    EXPECT_EQ(s.stats().live_allocations, 0u);
    EXPECT_EQ(s.allocate(0), nullptr);
    s.deallocate(nullptr, 1);
}

TYPED_TEST(SegregatorTyped, FreeOnTheWrongSideIsReportedAndIgnored) {
    STRATA_REQUIRE_CHECKS(1);
    TypeParam s;
    constexpr std::size_t t = TypeParam::threshold;
    void* small = s.allocate(8);
    void* large = s.allocate(t + 100);
    strata::test::recording_handler rec;
    s.deallocate(small, t + 1); // names a large size for a small block
    ASSERT_TRUE(rec.saw_one(strata::violation_kind::size_mismatch));
    EXPECT_EQ(rec.last().pointer, small);
    rec.clear();
    s.deallocate(large, 8);
    ASSERT_TRUE(rec.saw_one(strata::violation_kind::size_mismatch));
    rec.clear();
    test_heap elsewhere;
    void* foreign = elsewhere.allocate(8);
    s.deallocate(foreign, 8);
    ASSERT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    EXPECT_EQ(rec.last().allocator, "strata::segregator");
    elsewhere.deallocate(foreign, 8);
    EXPECT_EQ(s.stats().live_allocations, 2u);
    s.deallocate(large, t + 100);
    s.deallocate(small, 8);
    EXPECT_EQ(s.stats().live_allocations, 0u);
}

TYPED_TEST(SegregatorTyped, RandomizedLifoAgainstModel) {
    TypeParam s;
    strata::test::reference_model model;
    std::vector<std::pair<void*, std::size_t>> stack;
    std::mt19937_64 rng(0x5e6u);
    for (int op = 0; op < 10000; ++op) {
        if (stack.empty() || rng() % 100 < 52) {
            const std::size_t size = 1 + rng() % (TypeParam::threshold * 3);
            void* p = s.allocate(size, 8);
            ASSERT_NE(p, nullptr);
            ASSERT_EQ(size <= TypeParam::threshold, s.small().owns(p));
            model.add(p, size, 8);
            stack.emplace_back(p, size);
        } else {
            model.remove(stack.back().first);
            s.deallocate(stack.back().first, stack.back().second);
            stack.pop_back();
        }
    }
    model.verify_all();
    while (!stack.empty()) {
        s.deallocate(stack.back().first, stack.back().second);
        stack.pop_back();
    }
    if constexpr (frees_exactly<typename TypeParam::small_type> &&
                  frees_exactly<typename TypeParam::large_type>) {
        EXPECT_EQ(s.stats().live_allocations, 0u);
    }
}

TEST(Segregator, UnsizedFreeRoutesByOwns) {
    segregator<32, test_stack, test_heap> s;
    void* a = s.allocate(16);
    void* b = s.allocate(1000);
    s.deallocate(b);
    s.deallocate(a);
    EXPECT_EQ(s.stats().live_allocations, 0u);
    EXPECT_EQ(s.large().bad_frees(), 0u);
}
// A bad alignment is refused whichever side the size picks (each side refuses it itself).
TEST(Segregator, BadAlignmentIsRefusedOnEitherSideOfTheThreshold) {
    segregator<64, test_stack, test_heap> s;
    for (const std::size_t size : {std::size_t{1}, std::size_t{64}, std::size_t{65}, std::size_t{5000}}) {
        EXPECT_EQ(s.allocate(size, 3), nullptr) << size;
        EXPECT_EQ(s.allocate(size, 0), nullptr) << size;
    }
    EXPECT_EQ(s.stats().total_allocations, 0u);
}

// stats(): the counts are the sums of both sides; largest_free_block is Large's.
TEST(Segregator, StatsAddBothSidesAndTakeLargestFreeFromLarge) {
    segregator<128, test_tlsf, test_stack> s;
    void* a = s.allocate(100);
    void* b = s.allocate(1000);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    const strata::stats sm = s.small().stats();
    const strata::stats lg = s.large().stats();
    const strata::stats t = s.stats();
    EXPECT_EQ(t.in_use, sm.in_use + lg.in_use);
    EXPECT_EQ(t.peak, sm.peak + lg.peak);
    EXPECT_EQ(t.capacity, sm.capacity + lg.capacity);
    EXPECT_EQ(t.live_allocations, 2u);
    EXPECT_EQ(t.total_allocations, 2u);
    EXPECT_EQ(t.largest_free_block, lg.largest_free_block);
    s.deallocate(b, 1000);
    s.deallocate(a, 100);
    EXPECT_EQ(s.stats().live_allocations, 0u);
}

// owns() and claims() answer for a block of either side, and for nothing else.
TEST(Segregator, OwnsAndClaimsCoverBothSides) {
    segregator<64, test_stack, test_heap> s;
    void* a = s.allocate(64);
    void* b = s.allocate(65);
    EXPECT_TRUE(s.owns(a));
    EXPECT_TRUE(s.owns(b));
    EXPECT_TRUE(s.claims(a));
    EXPECT_TRUE(s.claims(b));
    EXPECT_FALSE(s.holds(a));
    int local = 0;
    EXPECT_FALSE(s.owns(&local));
    EXPECT_FALSE(s.claims(&local));
    s.deallocate(b, 65);
    s.deallocate(a, 64);
}

// reset() resets both sides (only where both are resettable).
TEST(Segregator, ResetEmptiesBothSides) {
    segregator<64, test_stack, test_arena> s;
    for (int i = 0; i < 8; ++i) {
        ASSERT_NE(s.allocate(32), nullptr);
        ASSERT_NE(s.allocate(500), nullptr);
    }
    s.reset();
    EXPECT_EQ(s.small().stats().in_use, 0u);
    EXPECT_EQ(s.large().stats().in_use, 0u);
    EXPECT_EQ(s.stats().live_allocations, 0u);
}

// At checks 0 a sized free goes where its size says, unchecked: a free naming the wrong side
// reaches that side (test_heap counts it as a bad free).
TEST(Segregator, WrongSideFreeIsUncheckedAtChecksZero) {
    if (STRATA_CHECKS >= 1) GTEST_SKIP() << "checks >= 1 refuse the free (SegregatorTyped tests it)";
    segregator<64, test_heap, test_heap> s;
    void* small = s.allocate(16);
    s.deallocate(small, 100); // routed to Large, which does not know it
    EXPECT_EQ(s.large().bad_frees(), 1u);
    EXPECT_EQ(s.small().live(), 1u);
    s.deallocate(small, 16);
    EXPECT_EQ(s.small().live(), 0u);
}

// Frees in any order, sized and unsized, over two general heaps: the sides never mix, every block
// keeps its contents and alignment, and everything is freed at the end.
TEST(Segregator, RandomizedAnyOrderAgainstModel) {
    segregator<256, test_heap, test_heap> s;
    strata::test::any_order_run(s, 0x5e7u, 1024, [&](void* p, std::size_t size) {
        ASSERT_EQ(size <= 256, s.small().owns(p));
        ASSERT_EQ(size > 256, s.large().owns(p));
    });
    if (HasFatalFailure()) return;
    EXPECT_EQ(s.stats().live_allocations, 0u);
    EXPECT_EQ(s.stats().in_use, 0u);
    EXPECT_EQ(s.small().bad_frees() + s.large().bad_frees(), 0u);
}

} // namespace
