// allocator_ref<A> (adapt/allocator_ref.hpp): a non-owning reference that forwards every verb A has
// (and only those), carries A's verifies_frees / reports_frees, copies and compares by address.
#include "strata/adapt/allocator_ref.hpp"

#include <cstddef>
#include <type_traits>

#include <gtest/gtest.h>

#include "strata/adapt/debug.hpp"
#include "strata/linear/arena.hpp"

#include "support/adapt_allocators.hpp"

namespace {

using strata::allocator_ref;
using strata::test::test_arena;
using strata::test::test_heap;

// Verbs are there exactly where the allocator referred to has them.
static_assert(strata::owning_allocator<allocator_ref<test_heap>>);
static_assert(strata::unsized_deallocator<allocator_ref<test_heap>>);
static_assert(!strata::resettable_allocator<allocator_ref<test_heap>>);
static_assert(!strata::marking_allocator<allocator_ref<test_heap>>);
static_assert(strata::resettable_allocator<allocator_ref<test_arena>>);
static_assert(strata::marking_allocator<allocator_ref<test_arena>>);
static_assert(!strata::unsized_deallocator<allocator_ref<test_arena>>);
static_assert(strata::marking_allocator<allocator_ref<strata::arena>>);
static_assert(std::is_same_v<allocator_ref<test_heap>::upstream_type, test_heap>);
static_assert(std::is_trivially_copyable_v<allocator_ref<test_heap>>);

// A reference checks nothing itself: it is self-verifying and reporting exactly where A is.
static_assert(!allocator_ref<test_heap>::verifies_frees);
static_assert(allocator_ref<strata::debug<test_heap>>::verifies_frees);
static_assert(strata::self_verifying_allocator<allocator_ref<strata::debug<test_heap>>>);
static_assert(allocator_ref<strata::debug<test_heap>>::reports_frees);
static_assert(!allocator_ref<test_heap>::reports_frees);

TEST(AllocatorRef, ForwardsEveryVerbToTheAllocator) {
    test_heap h;
    allocator_ref<test_heap> r(h);
    EXPECT_EQ(&r.get(), &h);
    void* p = r.allocate(100, 32);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(strata::is_aligned(p, 32));
    EXPECT_TRUE(h.owns(p));
    EXPECT_TRUE(r.owns(p));
    EXPECT_TRUE(r.claims(p));
    EXPECT_FALSE(r.holds(p)) << "test_heap holds nothing back";
    EXPECT_EQ(r.stats(), h.stats());
    r.deallocate(p, 100, 32);
    EXPECT_EQ(h.live(), 0u);
    void* q = r.allocate(8);
    r.deallocate(q); // unsized, where A frees unsized
    EXPECT_EQ(h.live(), 0u);
    EXPECT_EQ(h.bad_frees(), 0u);
}

TEST(AllocatorRef, MarkRewindAndResetReachTheAllocator) {
    test_arena a;
    allocator_ref<test_arena> r(a);
    ASSERT_NE(r.allocate(64), nullptr);
    const auto m = r.mark();
    ASSERT_NE(r.allocate(128), nullptr);
    EXPECT_EQ(a.stats().live_allocations, 2u);
    r.rewind(m);
    EXPECT_EQ(a.stats().live_allocations, 1u);
    r.reset();
    EXPECT_EQ(a.stats().in_use, 0u);
}

// Copies refer to the same allocator and compare equal; references to two allocators do not.
TEST(AllocatorRef, CopiesShareTheAllocatorAndCompareByAddress) {
    test_heap h1, h2;
    allocator_ref<test_heap> a(h1);
    const allocator_ref<test_heap> b = a;
    const allocator_ref<test_heap> c(h2);
    EXPECT_TRUE(a == b);
    EXPECT_FALSE(a == c);
    void* p = a.allocate(16);
    EXPECT_TRUE(b.owns(p));
    EXPECT_FALSE(c.owns(p));
    a = c;
    EXPECT_TRUE(a == c);
    h1.deallocate(p);
}

// holds() and claims() forward to debug<A>: a freed block debug still holds back is held and
// claimed through the reference too.
TEST(AllocatorRef, HoldsAndClaimsForwardToDebug) {
    strata::debug<test_heap> d;
    allocator_ref<strata::debug<test_heap>> r(d);
    void* p = r.allocate(32);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(r.holds(p));
    EXPECT_TRUE(r.claims(p));
    r.deallocate(p, 32);
    EXPECT_EQ(r.holds(p), strata::holds(d, p));
    EXPECT_EQ(r.claims(p), strata::claims(d, p));
    EXPECT_FALSE(r.owns(p)) << "debug's owns() means live";
}

} // namespace
