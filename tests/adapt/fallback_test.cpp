// fallback<Primary, Secondary> (adapt/fallback.hpp): what Primary cannot serve Secondary serves,
// frees go to the owner, stats add up, reset() and owns()/claims() cover both sides, bad input is
// what both allocators answer, and a randomized run against a reference model.
#include "strata/adapt/fallback.hpp"

#include <algorithm>
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

using strata::fallback;
using strata::test::basic_test_stack;
using strata::test::frees_exactly;
using strata::test::test_arena;
using strata::test::test_heap;

using small_stack = basic_test_stack<4096>;

static_assert(strata::owning_allocator<fallback<small_stack, test_heap>>);
static_assert(strata::unsized_deallocator<fallback<small_stack, test_heap>>);
static_assert(!strata::unsized_deallocator<fallback<test_arena, test_heap>>);
static_assert(strata::resettable_allocator<fallback<small_stack, test_arena>>);
static_assert(!strata::resettable_allocator<fallback<small_stack, test_heap>>);

template <class P>
class FallbackTyped : public ::testing::Test {};
using FallbackPairs = ::testing::Types<fallback<small_stack, test_heap>, fallback<test_heap, test_heap>,
                                       fallback<small_stack, test_arena>>;
TYPED_TEST_SUITE(FallbackTyped, FallbackPairs);

TYPED_TEST(FallbackTyped, SecondaryServesWhatPrimaryCannotAndFreesGoToTheOwner) {
    TypeParam f;
    if constexpr (std::is_same_v<typename TypeParam::primary_type, test_heap>) f.primary().set_limit(100);
    void* small = f.allocate(64);
    void* big = f.allocate(8000); // too big for a 4 KiB stack, or over the heap's limit
    ASSERT_NE(small, nullptr);
    ASSERT_NE(big, nullptr);
    EXPECT_TRUE(f.primary().owns(small));
    EXPECT_FALSE(f.primary().owns(big));
    EXPECT_TRUE(f.secondary().owns(big));
    EXPECT_TRUE(f.owns(big));
    EXPECT_EQ(f.stats().live_allocations, 2u);
    f.deallocate(big, 8000);
    EXPECT_EQ(f.secondary().stats().live_allocations, 0u);
    f.deallocate(small, 64);
    EXPECT_EQ(f.primary().stats().live_allocations, 0u);
    EXPECT_EQ(f.allocate(0), nullptr);
    EXPECT_EQ(f.allocate(8, 3), nullptr);
    f.deallocate(nullptr, 8);
}

TYPED_TEST(FallbackTyped, CrossAllocatorFreeIsReportedAndIgnored) {
    STRATA_REQUIRE_CHECKS(1);
    TypeParam f;
    test_heap elsewhere;
    void* foreign = elsewhere.allocate(32);
    strata::test::recording_handler rec;
    f.deallocate(foreign, 32);
    ASSERT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    EXPECT_EQ(rec.last().pointer, foreign);
    EXPECT_EQ(rec.last().allocator, "strata::fallback");
    EXPECT_EQ(f.stats().live_allocations, 0u);
    elsewhere.deallocate(foreign, 32);
}

TYPED_TEST(FallbackTyped, RandomizedLifoAgainstModel) {
    TypeParam f;
    if constexpr (std::is_same_v<typename TypeParam::primary_type, test_heap>) f.primary().set_limit(150);
    strata::test::reference_model model;
    std::vector<std::pair<void*, std::size_t>> stack;
    std::mt19937_64 rng(0xfa11u);
    std::size_t secondary_used = 0;
    for (int op = 0; op < 10000; ++op) {
        if (stack.empty() || rng() % 100 < 52) {
            const std::size_t size = 1 + rng() % 300;
            void* p = f.allocate(size, 16);
            ASSERT_NE(p, nullptr);
            secondary_used += f.primary().owns(p) ? 0 : 1;
            model.add(p, size, 16);
            stack.emplace_back(p, size);
        } else {
            model.remove(stack.back().first);
            f.deallocate(stack.back().first, stack.back().second);
            stack.pop_back();
        }
    }
    EXPECT_GT(secondary_used, 0u);
    model.verify_all();
    while (!stack.empty()) {
        f.deallocate(stack.back().first, stack.back().second);
        stack.pop_back();
    }
    if constexpr (frees_exactly<typename TypeParam::secondary_type>) {
        EXPECT_EQ(f.stats().live_allocations, 0u);
    }
}

TEST(Fallback, OverExistingAllocatorsAndUnsizedFree) {
    small_stack s;
    test_heap h;
    fallback<strata::allocator_ref<small_stack>, strata::allocator_ref<test_heap>> f(s, h);
    void* a = f.allocate(5000);
    void* b = f.allocate(10);
    EXPECT_TRUE(h.owns(a));
    EXPECT_TRUE(s.owns(b));
    f.deallocate(b);
    f.deallocate(a);
    EXPECT_EQ(h.live(), 0u);
    EXPECT_EQ(h.bad_frees(), 0u);
    EXPECT_EQ(s.stats().live_allocations, 0u);
}

// stats(): every count is the sum of both sides; peak the sum of the peaks; largest_free_block the
// larger of the two.
TEST(Fallback, StatsAddBothSides) {
    fallback<small_stack, test_heap> f;
    void* a = f.allocate(100);
    void* b = f.allocate(3000);
    void* c = f.allocate(2000); // no longer fits the 4 KiB stack
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(f.primary().owns(a));
    EXPECT_TRUE(f.primary().owns(b));
    EXPECT_TRUE(f.secondary().owns(c));
    const strata::stats p = f.primary().stats();
    const strata::stats s = f.secondary().stats();
    const strata::stats t = f.stats();
    EXPECT_EQ(t.in_use, p.in_use + s.in_use);
    EXPECT_EQ(t.peak, p.peak + s.peak);
    EXPECT_EQ(t.capacity, p.capacity + s.capacity);
    EXPECT_EQ(t.live_allocations, 3u);
    EXPECT_EQ(t.total_allocations, 3u);
    EXPECT_EQ(t.largest_free_block, std::max(p.largest_free_block, s.largest_free_block));
    f.deallocate(c, 2000);
    f.deallocate(b, 3000);
    f.deallocate(a, 100);
    EXPECT_EQ(f.stats().in_use, 0u);
    EXPECT_EQ(f.stats().live_allocations, 0u);
    EXPECT_EQ(f.stats().total_allocations, 3u);
}

// owns() and claims() answer for a block of either side, and for nothing else.
TEST(Fallback, OwnsAndClaimsCoverBothSides) {
    fallback<small_stack, test_heap> f;
    void* a = f.allocate(64);
    void* b = f.allocate(8000);
    EXPECT_TRUE(f.owns(a));
    EXPECT_TRUE(f.owns(b));
    EXPECT_TRUE(f.claims(a));
    EXPECT_TRUE(f.claims(b));
    EXPECT_FALSE(f.holds(a)) << "neither side holds blocks back";
    int local = 0;
    EXPECT_FALSE(f.owns(&local));
    EXPECT_FALSE(f.claims(&local));
    f.deallocate(b);
    EXPECT_FALSE(f.owns(b)) << "test_heap's owns() means live";
    f.deallocate(a);
}

// reset() resets both sides (only where both are resettable).
TEST(Fallback, ResetEmptiesBothSides) {
    fallback<small_stack, test_arena> f;
    for (int i = 0; i < 10; ++i)
        ASSERT_NE(f.allocate(1000), nullptr);
    EXPECT_GT(f.primary().stats().live_allocations, 0u);
    EXPECT_GT(f.secondary().stats().live_allocations, 0u);
    f.reset();
    EXPECT_EQ(f.primary().stats().in_use, 0u);
    EXPECT_EQ(f.secondary().stats().in_use, 0u);
    EXPECT_EQ(f.stats().live_allocations, 0u);
    void* p = f.allocate(64);
    EXPECT_TRUE(f.primary().owns(p)) << "Primary serves again after the reset";
}

// At checks 0 a pointer neither side owns goes to Secondary, which answers as it does (test_heap
// counts it as a bad free); at checks >= 1 fallback reports it and Secondary never sees it.
TEST(Fallback, ForeignFreeReachesSecondaryOnlyAtChecksZero) {
    fallback<small_stack, test_heap> f;
    test_heap elsewhere;
    void* foreign = elsewhere.allocate(16);
    strata::test::recording_handler rec;
    f.deallocate(foreign, 16);
    if constexpr (STRATA_CHECKS >= 1) {
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
        EXPECT_EQ(f.secondary().bad_frees(), 0u);
    } else {
        EXPECT_EQ(f.secondary().bad_frees(), 1u);
    }
    EXPECT_EQ(elsewhere.live(), 1u);
    elsewhere.deallocate(foreign, 16);
}

// Frees in any order over two general heaps: the primary is limited to 200-byte requests, so both
// sides serve; every block keeps its contents and alignment, and everything is freed at the end.
TEST(Fallback, RandomizedAnyOrderAgainstModel) {
    fallback<test_heap, test_heap> f;
    f.primary().set_limit(200);
    strata::test::any_order_run(
        f, 0xfa12u, 400, [&](void* p, std::size_t size) { ASSERT_EQ(size <= 200, f.primary().owns(p)); });
    if (HasFatalFailure()) return;
    EXPECT_EQ(f.stats().live_allocations, 0u);
    EXPECT_EQ(f.stats().in_use, 0u);
    EXPECT_EQ(f.primary().bad_frees() + f.secondary().bad_frees(), 0u);
}

} // namespace
