// The allocator contract (DESIGN.md, core/allocator.hpp) checked once for every linear allocator:
// typed tests over small fixture traits that say how to build each one.
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
#include "strata/linear/double_stack.hpp"
#include "strata/linear/frame_allocator.hpp"
#include "strata/linear/stack_allocator.hpp"
#include "strata/source/heap_source.hpp"
#include "strata/source/virtual_memory.hpp"

#include "support/linear_test_util.hpp"
#include "support/recording_handler.hpp"

namespace {

using strata::test::aligned_buffer;

// --- the concepts each class models ---

static_assert(strata::allocator<strata::arena>);
static_assert(strata::owning_allocator<strata::arena>);
static_assert(strata::marking_allocator<strata::arena>);
static_assert(strata::resettable_allocator<strata::arena>);
static_assert(!strata::unsized_deallocator<strata::arena>);

static_assert(strata::allocator<strata::stack_allocator>);
static_assert(strata::owning_allocator<strata::stack_allocator>);
static_assert(strata::marking_allocator<strata::stack_allocator>);
static_assert(strata::resettable_allocator<strata::stack_allocator>);
static_assert(strata::unsized_deallocator<strata::stack_allocator>);

static_assert(strata::allocator<strata::double_stack>);
static_assert(strata::owning_allocator<strata::double_stack>);
static_assert(strata::marking_allocator<strata::double_stack>);
static_assert(strata::resettable_allocator<strata::double_stack>);
static_assert(!strata::unsized_deallocator<strata::double_stack>);

static_assert(strata::allocator<strata::frame_allocator<2>>);
static_assert(strata::owning_allocator<strata::frame_allocator<2>>);
static_assert(strata::allocator<strata::frame_allocator<3>>);
static_assert(strata::owning_allocator<strata::frame_allocator<3>>);
static_assert(!strata::marking_allocator<strata::frame_allocator<2>>);
static_assert(!strata::resettable_allocator<strata::frame_allocator<2>>); // next_frame() instead

// Sources are what growing arenas are built on.
static_assert(strata::memory_source<strata::heap_source>);
static_assert(strata::memory_source<strata::virtual_memory_source>);
static_assert(strata::memory_source<strata::test::counting_source>);

// --- how to build each allocator ---

constexpr std::size_t kCap = 256 * 1024;

strata::arena_options growing(std::size_t block_size, std::size_t max_capacity) {
    strata::arena_options o;
    o.block_size = block_size;
    o.max_capacity = max_capacity;
    return o;
}

struct arena_fixed_case {
    static constexpr bool odd_top_ok = true;
    struct fixture {
        aligned_buffer buf{kCap};
        strata::arena alloc{buf.span()};
    };
};

struct arena_heap_case {
    static constexpr bool odd_top_ok = true;
    struct fixture {
        strata::heap_source src;
        strata::arena alloc{src, growing(16 * 1024, kCap)};
    };
};

struct arena_vm_case {
    static constexpr bool odd_top_ok = true;
    struct fixture {
        strata::virtual_memory_source src{kCap};
        strata::arena alloc{src, growing(16 * 1024, std::numeric_limits<std::size_t>::max())};
    };
};

struct stack_case {
    // An odd top followed by align < 8 keeps the header aligned (stack_allocator_test.cpp).
    static constexpr bool odd_top_ok = true;
    struct fixture {
        aligned_buffer buf{kCap};
        strata::stack_allocator alloc{buf.span()};
    };
};

struct double_stack_case {
    static constexpr bool odd_top_ok = true;
    struct fixture {
        aligned_buffer buf{kCap};
        strata::double_stack alloc{buf.span()};
    };
};

template <std::size_t N>
struct frame_case {
    static constexpr bool odd_top_ok = true;
    struct fixture {
        aligned_buffer buf{kCap * N};
        strata::frame_allocator<N> alloc{buf.span()};
    };
};

struct frame_heap_case {
    static constexpr bool odd_top_ok = true;
    struct fixture {
        strata::heap_source src;
        strata::frame_allocator<2> alloc{src, growing(16 * 1024, kCap)};
    };
};

template <class T>
class LinearContract : public ::testing::Test {};
using all_linear = ::testing::Types<arena_fixed_case, arena_heap_case, arena_vm_case, stack_case,
                                    double_stack_case, frame_case<2>, frame_case<3>, frame_heap_case>;
TYPED_TEST_SUITE(LinearContract, all_linear);

TYPED_TEST(LinearContract, AllocateReturnsAlignedDistinctWritableMemory) {
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    strata::test::reference_model model;
    for (std::size_t align = 1; align <= 4096; align *= 2) {
        const bool odd = TypeParam::odd_top_ok || align >= 8;
        void* spacer = a.allocate(odd ? 1 : 8, odd ? 1 : 8);
        ASSERT_NE(spacer, nullptr);
        model.add(spacer, odd ? 1 : 8, 1);
        const std::size_t smallest = odd ? 1 : 8; // keeps the stack's top a multiple of 8
        for (const std::size_t size : {smallest, std::size_t{24}, std::size_t{1000}}) {
            void* p = a.allocate(size, align);
            ASSERT_NE(p, nullptr) << "size " << size << " align " << align;
            model.add(p, size, align); // checks alignment and overlap, fills a pattern
            if (::testing::Test::HasFatalFailure()) return;
            EXPECT_TRUE(a.owns(p));
        }
    }
    void* q = a.allocate(100); // default alignment
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(strata::test::aligned_to(q, alignof(std::max_align_t)));
    model.add(q, 100, alignof(std::max_align_t));
    model.verify_all();
    EXPECT_EQ(a.stats().live_allocations, model.size());
}

// Bad input (size 0, bad alignments, overflows) is tests/contract/bad_requests_test.cpp's, over
// every allocator of the library.

TYPED_TEST(LinearContract, ExhaustionReturnsNullAndKeepsState) {
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    int served = 0;
    while (a.allocate(4000, 16) != nullptr)
        ASSERT_LT(++served, 1000) << "never exhausted";
    EXPECT_GT(served, 10);
    const strata::stats before = a.stats();
    EXPECT_EQ(a.allocate(4000, 16), nullptr);
    EXPECT_EQ(a.allocate(std::size_t{1} << 20, 16), nullptr);
    STRATA_EXPECT_SAME_STATS(a.stats(), before);
    EXPECT_LE(before.in_use, before.capacity);
}

TYPED_TEST(LinearContract, StatsCountEveryAllocation) {
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    std::mt19937 rng(7);
    strata::stats prev = a.stats();
    EXPECT_EQ(prev.in_use, 0u);
    EXPECT_EQ(prev.live_allocations, 0u);
    EXPECT_EQ(prev.total_allocations, 0u);
    for (int i = 0; i < 40; ++i) {
        const std::size_t size = std::uniform_int_distribution<std::size_t>(1, 700)(rng);
        const std::size_t align = std::size_t{8} << std::uniform_int_distribution<int>(0, 5)(rng);
        ASSERT_NE(a.allocate(size, align), nullptr);
        const strata::stats s = a.stats();
        EXPECT_EQ(s.total_allocations, prev.total_allocations + 1);
        EXPECT_EQ(s.live_allocations, prev.live_allocations + 1);
        EXPECT_GE(s.in_use, prev.in_use + size);
        EXPECT_GE(s.peak, s.in_use);
        EXPECT_GE(s.peak, prev.peak);
        EXPECT_GE(s.capacity, s.in_use);
        prev = s;
    }
}

TYPED_TEST(LinearContract, OwnsItsMemoryAndNotOthers) {
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    void* p = a.allocate(64);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(a.owns(p));
    EXPECT_TRUE(a.owns(static_cast<std::byte*>(p) + 63));
    int local = 0;
    EXPECT_FALSE(a.owns(&local));
    EXPECT_FALSE(a.owns(nullptr));
    typename TypeParam::fixture other;
    void* q = other.alloc.allocate(64);
    EXPECT_FALSE(a.owns(q));
}

#if STRATA_CHECKS >= 2
TYPED_TEST(LinearContract, FreshAllocationsRead0xCD) {
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    for (int i = 0; i < 10; ++i) {
        void* p = a.allocate(333, 16);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(strata::test::all_bytes(p, 333, strata::fill_allocated));
        std::memset(p, 0, 333);
    }
}
#endif

// --- the marking contract: arena (three ways), stack_allocator, double_stack ---

template <class T>
class MarkingContract : public ::testing::Test {};
using marking_linear =
    ::testing::Types<arena_fixed_case, arena_heap_case, arena_vm_case, stack_case, double_stack_case>;
TYPED_TEST_SUITE(MarkingContract, marking_linear);

TYPED_TEST(MarkingContract, RewindReleasesWhatFollowedTheMarker) {
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    void* keep = a.allocate(100, 16);
    strata::test::fill_pattern(keep, 100, 1);
    const auto m = a.mark();
    const strata::stats at_mark = a.stats();
    void* first = a.allocate(5000, 64);
    ASSERT_NE(first, nullptr);
    for (int i = 0; i < 20; ++i)
        ASSERT_NE(a.allocate(3000, 16), nullptr); // crosses blocks when growing
    const std::size_t high = a.stats().in_use;
    a.rewind(m);
    const strata::stats s = a.stats();
    EXPECT_EQ(s.in_use, at_mark.in_use);
    EXPECT_EQ(s.live_allocations, at_mark.live_allocations);
    EXPECT_EQ(s.total_allocations, at_mark.total_allocations + 21);
    EXPECT_EQ(s.peak, high);
    EXPECT_EQ(s.largest_free_block, at_mark.largest_free_block);
    EXPECT_TRUE(strata::test::holds_pattern(keep, 100, 1));
    EXPECT_EQ(a.allocate(5000, 64), first) << "the released bytes are served again";
}

TYPED_TEST(MarkingContract, RewindingToTheCurrentTopChangesNothing) {
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    ASSERT_NE(a.allocate(100), nullptr);
    const strata::stats before = a.stats();
    strata::test::recording_handler rec;
    a.rewind(a.mark());
    STRATA_EXPECT_SAME_STATS(a.stats(), before);
    EXPECT_TRUE(rec.empty());
}

TYPED_TEST(MarkingContract, NestedScopesUnwindInOrder) {
    using A = std::remove_reference_t<decltype(std::declval<typename TypeParam::fixture&>().alloc)>;
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    ASSERT_NE(a.allocate(64), nullptr);
    const strata::stats s0 = a.stats();
    {
        strata::scope<A> outer(a);
        for (int i = 0; i < 5; ++i)
            ASSERT_NE(a.allocate(2000), nullptr);
        const strata::stats s1 = a.stats();
        {
            strata::scope<A> inner(a);
            for (int i = 0; i < 10; ++i)
                ASSERT_NE(a.allocate(3000), nullptr);
        }
        EXPECT_EQ(a.stats().in_use, s1.in_use);
        EXPECT_EQ(a.stats().live_allocations, s1.live_allocations);
    }
    EXPECT_EQ(a.stats().in_use, s0.in_use);
    EXPECT_EQ(a.stats().live_allocations, s0.live_allocations);
    EXPECT_EQ(a.stats().total_allocations, 16u);
}

TYPED_TEST(MarkingContract, NewerMarkerIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    const auto m1 = a.mark();
    for (int i = 0; i < 10; ++i)
        ASSERT_NE(a.allocate(3000), nullptr);
    const auto m2 = a.mark();
    a.rewind(m1);
    strata::test::recording_handler rec;
    a.rewind(m2);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::invalid_marker));
}

TYPED_TEST(MarkingContract, NewerMarkerLeavesStateUnchanged) {
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    ASSERT_NE(a.allocate(10), nullptr);
    const auto m1 = a.mark();
    for (int i = 0; i < 10; ++i)
        ASSERT_NE(a.allocate(3000), nullptr);
    const auto m2 = a.mark();
    a.rewind(m1);
    ASSERT_NE(a.allocate(20), nullptr);
    const strata::stats before = a.stats();
    strata::test::recording_handler rec;
    a.rewind(m2);
    STRATA_EXPECT_SAME_STATS(a.stats(), before);
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
}

TYPED_TEST(MarkingContract, MarkerFromAnotherInstanceIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    typename TypeParam::fixture fx, other;
    ASSERT_NE(other.alloc.allocate(10), nullptr);
    ASSERT_NE(fx.alloc.allocate(100), nullptr);
    strata::test::recording_handler rec;
    fx.alloc.rewind(other.alloc.mark());
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::invalid_marker));
}

TYPED_TEST(MarkingContract, MarkerFromAnotherInstanceLeavesStateUnchanged) {
    typename TypeParam::fixture fx, other;
    ASSERT_NE(other.alloc.allocate(10), nullptr);
    ASSERT_NE(fx.alloc.allocate(100), nullptr);
    const strata::stats before = fx.alloc.stats();
    const strata::stats other_before = other.alloc.stats();
    strata::test::recording_handler rec;
    fx.alloc.rewind(other.alloc.mark());
    STRATA_EXPECT_SAME_STATS(fx.alloc.stats(), before);
    STRATA_EXPECT_SAME_STATS(other.alloc.stats(), other_before);
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
}

TYPED_TEST(MarkingContract, ResetReleasesEverythingAndPeakNeverDrops) {
    typename TypeParam::fixture fx;
    auto& a = fx.alloc;
    std::size_t peak = 0;
    for (int round = 0; round < 3; ++round) {
        const auto m = a.mark();
        for (int i = 0; i < 5 + 5 * round; ++i) {
            ASSERT_NE(a.allocate(1500), nullptr);
            EXPECT_GE(a.stats().peak, peak);
            peak = a.stats().peak;
        }
        a.rewind(m);
        EXPECT_EQ(a.stats().peak, peak);
        for (int i = 0; i < 3; ++i)
            ASSERT_NE(a.allocate(1500), nullptr);
        a.reset();
        const strata::stats s = a.stats();
        EXPECT_EQ(s.in_use, 0u);
        EXPECT_EQ(s.live_allocations, 0u);
        EXPECT_EQ(s.peak, peak);
    }
    EXPECT_EQ(a.stats().total_allocations, 5u + 10u + 15u + 9u);
}

} // namespace
