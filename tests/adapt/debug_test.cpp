#include "strata/adapt/debug.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "strata/adapt/allocator_ref.hpp"
#include "strata/core/check.hpp"
#include "strata/linear/arena.hpp"

#include "support/adapt_allocators.hpp"
#include "support/byte_patterns.hpp"
#include "support/recording_handler.hpp"
#include "support/reference_model.hpp"

namespace {

using strata::debug;
using strata::violation_kind;
using strata::test::test_arena;
using strata::test::test_heap;
using strata::test::test_pool;
using strata::test::test_stack;
using strata::test::test_tlsf;

static_assert(strata::owning_allocator<debug<test_heap>>);
static_assert(strata::unsized_deallocator<debug<test_arena>>); // debug frees unsized over any allocator

// debug<A> reports at every checks level, so nothing here needs STRATA_REQUIRE_CHECKS.
using recorder = strata::test::recording_handler;
using strata::test::all_bytes;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Default options, but no quarantine over test_stack: it is LIFO yet hides stack_allocator's mark(),
// so debug<> cannot tell, and held-back frees would reach it out of order (debug_options says to
// turn the quarantine off by hand there).
template <class A>
strata::debug_options typed_options() {
    strata::debug_options o;
    if constexpr (std::is_same_v<A, test_stack>) o.quarantine_bytes = 0;
    return o;
}

template <class A>
class DebugTyped : public ::testing::Test {};
using DebugBases = ::testing::Types<test_heap, test_arena, test_stack, test_pool, test_tlsf>;
TYPED_TEST_SUITE(DebugTyped, DebugBases);

TYPED_TEST(DebugTyped, FreshBlocksAreFilledAndAlignedAndFenced) {
    recorder rec;
    debug<TypeParam> d(typed_options<TypeParam>());
    std::vector<std::pair<void*, std::size_t>> blocks;
    for (std::size_t align : {1u, 8u, 16u, 64u, 256u}) {
        void* p = d.allocate(37, align);
        blocks.emplace_back(p, align);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u);
        EXPECT_TRUE(all_bytes(p, 37, 0xCD));
        EXPECT_TRUE(all_bytes(static_cast<std::byte*>(p) + 37, 16, 0xFD)); // back fence
        EXPECT_TRUE(all_bytes(static_cast<std::byte*>(p) - 16, 16, 0xFD)); // front fence
        EXPECT_TRUE(d.owns(p));
    }
    EXPECT_TRUE(d.verify());
    EXPECT_EQ(d.live_blocks(), 5u);
    EXPECT_EQ(d.live_bytes(), 5u * 37u);
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
        d.deallocate(it->first, 37, it->second);
    EXPECT_EQ(rec.count(), 0u);
}

TYPED_TEST(DebugTyped, OverrunIsReportedOnFreeWithTheAllocationSite) {
    recorder rec;
    debug<TypeParam> d(typed_options<TypeParam>());
    const unsigned line = __LINE__ + 1;
    auto* p = static_cast<char*>(d.allocate(24, 8));
    ASSERT_NE(p, nullptr);
    p[24] = 'x'; // one past the end
    p[25] = 'y';
    d.deallocate(p, 24, 8);
    ASSERT_EQ(rec.count(), 1u);
    const strata::test::recorded_violation& v = rec.at(0);
    EXPECT_EQ(v.kind, violation_kind::corruption);
    EXPECT_EQ(v.pointer, p);
    EXPECT_EQ(v.allocator, "strata::debug");
    EXPECT_TRUE(contains(v.message, "2 bytes of the fence after the block (overrun)")) << v.message;
    EXPECT_TRUE(contains(v.message, "debug_test.cpp:" + std::to_string(line))) << v.message;
    EXPECT_EQ(d.live_blocks(), 0u); // freed after the report
}

TYPED_TEST(DebugTyped, UnderrunIsFoundByVerify) {
    recorder rec;
    debug<TypeParam> d(typed_options<TypeParam>());
    auto* a = static_cast<char*>(d.allocate(16, 16));
    auto* b = static_cast<char*>(d.allocate(16, 16));
    ASSERT_NE(b, nullptr);
    b[-1] = 0;
    EXPECT_FALSE(d.verify());
    ASSERT_EQ(rec.count(), 1u);
    EXPECT_EQ(rec.at(0).kind, violation_kind::corruption);
    EXPECT_EQ(rec.at(0).pointer, b);
    EXPECT_TRUE(contains(rec.at(0).message, "fence before the block (underrun)")) << rec.at(0).message;
    b[-1] = static_cast<char>(0xFD); // repaired
    EXPECT_TRUE(d.verify());
    d.deallocate(b, 16, 16);
    d.deallocate(a, 16, 16);
    EXPECT_EQ(rec.count(), 1u);
}

TYPED_TEST(DebugTyped, DoubleFreeNamesBothSites) {
    recorder rec;
    debug<TypeParam> d(typed_options<TypeParam>());
    void* keep = d.allocate(8);
    void* p = d.allocate(40, 8);
    const unsigned free_line = __LINE__ + 1;
    d.deallocate(p, 40, 8);
    d.deallocate(p, 40, 8);
    ASSERT_EQ(rec.count(), 1u);
    const strata::test::recorded_violation& v = rec.at(0);
    EXPECT_EQ(v.kind, violation_kind::double_free);
    EXPECT_EQ(v.pointer, p);
    EXPECT_TRUE(contains(v.message, "double free of 40 bytes")) << v.message;
    EXPECT_TRUE(contains(v.message, "first freed at")) << v.message;
    EXPECT_TRUE(contains(v.message, ":" + std::to_string(free_line))) << v.message;
    EXPECT_TRUE(contains(v.file, "debug_test.cpp"));
    EXPECT_EQ(v.line, free_line + 1); // `where` is the second free
    d.deallocate(keep, 8);
    EXPECT_EQ(rec.count(), 1u);
}

TYPED_TEST(DebugTyped, ForeignPointerIsReportedAndIgnored) {
    recorder rec;
    debug<TypeParam> d(typed_options<TypeParam>());
    void* p = d.allocate(32);
    int local = 0;
    d.deallocate(&local, sizeof local);
    ASSERT_EQ(rec.count(), 1u);
    EXPECT_EQ(rec.at(0).kind, violation_kind::foreign_pointer);
    EXPECT_EQ(rec.at(0).pointer, &local);
    // An interior pointer is foreign too.
    d.deallocate(static_cast<char*>(p) + 1, 31);
    ASSERT_EQ(rec.count(), 2u);
    EXPECT_EQ(rec.at(1).kind, violation_kind::foreign_pointer);
    EXPECT_EQ(d.live_blocks(), 1u);
    d.deallocate(p, 32);
    EXPECT_EQ(rec.count(), 2u);
}

TYPED_TEST(DebugTyped, SizeMismatchIsReportedAndTheBlockStaysLive) {
    recorder rec;
    debug<TypeParam> d(typed_options<TypeParam>());
    void* p = d.allocate(48, 16);
    d.deallocate(p, 40, 16);
    ASSERT_EQ(rec.count(), 1u);
    EXPECT_EQ(rec.at(0).kind, violation_kind::size_mismatch);
    EXPECT_EQ(rec.at(0).pointer, p);
    EXPECT_TRUE(contains(rec.at(0).message, "names size 40 align 16, but the block has size 48 align 16"))
        << rec.at(0).message;
    d.deallocate(p, 48, 8); // the alignment is checked too
    ASSERT_EQ(rec.count(), 2u);
    EXPECT_EQ(rec.at(1).kind, violation_kind::size_mismatch);
    EXPECT_EQ(d.live_blocks(), 1u);
    d.deallocate(p, 48, 16);
    EXPECT_EQ(d.live_blocks(), 0u);
    EXPECT_EQ(rec.count(), 2u);
}

TYPED_TEST(DebugTyped, LeakReportListsEachBlockWithItsSite) {
    recorder rec;
    void* first = nullptr;
    void* second = nullptr;
    unsigned line1 = 0, line2 = 0;
    {
        debug<TypeParam> d(typed_options<TypeParam>());
        line1 = __LINE__ + 1;
        first = d.allocate(24);
        void* freed = d.allocate(8);
        d.deallocate(freed, 8);
        line2 = __LINE__ + 1;
        second = d.allocate(100, 32);
        const std::string text = d.leak_report();
        EXPECT_TRUE(contains(text, "leak: 24 bytes")) << text;
        EXPECT_TRUE(contains(text, "leak: 100 bytes")) << text;
        EXPECT_TRUE(contains(text, "2 blocks leaked, 124 bytes")) << text;
        EXPECT_EQ(rec.count(), 0u);
    }
    ASSERT_EQ(rec.count(), 2u);
    const strata::test::recorded_violation& a = rec.at(0);
    const strata::test::recorded_violation& b = rec.at(1);
    EXPECT_EQ(a.kind, violation_kind::leak);
    EXPECT_EQ(a.pointer, first);
    EXPECT_TRUE(contains(a.message, "leaked 24 bytes")) << a.message;
    EXPECT_TRUE(contains(a.message, "debug_test.cpp:" + std::to_string(line1))) << a.message;
    EXPECT_TRUE(contains(a.message, "(leak 1 of 2)")) << a.message;
    EXPECT_TRUE(contains(a.file, "debug_test.cpp"));
    EXPECT_EQ(a.line, line1); // `where` is the allocation site
    EXPECT_EQ(b.kind, violation_kind::leak);
    EXPECT_EQ(b.pointer, second);
    EXPECT_EQ(b.line, line2);
    EXPECT_TRUE(contains(b.message, "leaked 100 bytes")) << b.message;
}

TYPED_TEST(DebugTyped, InvalidRequestsAreNullAndDoNotReachTheAllocator) {
    recorder rec;
    debug<TypeParam> d(typed_options<TypeParam>());
    const auto before = d.stats().total_allocations;
    EXPECT_EQ(d.allocate(0), nullptr);
    EXPECT_EQ(d.allocate(8, 3), nullptr);
    EXPECT_EQ(d.allocate(static_cast<std::size_t>(-1)), nullptr);
    EXPECT_EQ(d.allocate(static_cast<std::size_t>(-1) - 20), nullptr);
    EXPECT_EQ(d.stats().total_allocations, before);
    d.deallocate(nullptr, 8);
    d.deallocate(nullptr);
    EXPECT_EQ(rec.count(), 0u);
    EXPECT_EQ(d.live_blocks(), 0u);
}

TYPED_TEST(DebugTyped, RandomizedLifoAgainstModelStaysClean) {
    recorder rec;
    debug<TypeParam> d(typed_options<TypeParam>());
    strata::test::reference_model model;
    std::vector<std::pair<void*, std::size_t>> stack;
    std::vector<std::size_t> aligns;
    std::mt19937_64 rng(0xdeb6u);
    for (int op = 0; op < 5000; ++op) {
        if (stack.empty() || rng() % 100 < 55) {
            const std::size_t size = 1 + rng() % 200;
            const std::size_t align = std::size_t{1} << (rng() % 7);
            void* p = d.allocate(size, align);
            ASSERT_NE(p, nullptr);
            model.add(p, size, align);
            stack.emplace_back(p, size);
            aligns.push_back(align);
        } else {
            model.remove(stack.back().first);
            d.deallocate(stack.back().first, stack.back().second, aligns.back());
            stack.pop_back();
            aligns.pop_back();
        }
        if (op % 500 == 0) {
            ASSERT_TRUE(d.verify());
        }
    }
    model.verify_all();
    EXPECT_EQ(d.live_blocks(), stack.size());
    while (!stack.empty()) {
        d.deallocate(stack.back().first);
        stack.pop_back();
    }
    EXPECT_EQ(rec.count(), 0u);
}

TEST(Debug, FreedBlocksAreFilledWithDD) {
    recorder rec;
    debug<test_arena> d; // an arena keeps non-top bytes where they are after a free
    auto* p = static_cast<unsigned char*>(d.allocate(32, 16));
    void* top = d.allocate(16);
    std::memset(p, 0x11, 32);
    d.deallocate(p, 32, 16);
    EXPECT_TRUE(all_bytes(p - 16, 16 + 32 + 16, 0xDD)); // fences too
    d.deallocate(top, 16);
    EXPECT_EQ(rec.count(), 0u);
}

TEST(Debug, OptionsChangeFencesAndFills) {
    recorder rec;
    strata::debug_options o;
    o.fence_size = 64;
    o.fence_fill = 0xAB;
    o.fill = false;
    o.name = "textures";
    debug<test_heap> d(o);
    auto* p = static_cast<unsigned char*>(d.allocate(10, 8));
    EXPECT_TRUE(all_bytes(p + 10, 64, 0xAB));
    EXPECT_TRUE(all_bytes(p - 64, 64, 0xAB));
    p[10 + 63] = 0;
    d.deallocate(p, 10, 8);
    ASSERT_EQ(rec.count(), 1u);
    EXPECT_EQ(rec.at(0).allocator, "textures");
}

TEST(Debug, ResetForgetsBlocksWithoutLeakReports) {
    recorder rec;
    {
        debug<test_arena> d;
        ASSERT_NE(d.allocate(100), nullptr);
        ASSERT_NE(d.allocate(100), nullptr);
        d.reset();
        EXPECT_EQ(d.live_blocks(), 0u);
        EXPECT_EQ(d.inner().stats().in_use, 0u);
    }
    EXPECT_EQ(rec.count(), 0u);
}

TEST(Debug, ReusedAddressIsLiveAgainNotADoubleFree) {
    recorder rec;
    debug<test_stack> d(typed_options<test_stack>()); // no quarantine: the address comes back at once
    void* p = d.allocate(64);
    d.deallocate(p, 64);
    void* q = d.allocate(64); // the stack hands the same address back
    ASSERT_EQ(p, q);
    d.deallocate(q, 64);
    EXPECT_EQ(rec.count(), 0u);
}

TEST(Debug, OverAnExistingArena) {
    recorder rec;
    strata::heap_source src;
    strata::arena a(src);
    {
        debug<strata::allocator_ref<strata::arena>> d(a);
        void* p = d.allocate(16);
        EXPECT_TRUE(a.owns(p));
        d.deallocate(p, 16);
    }
    EXPECT_EQ(rec.count(), 0u);
}

TEST(DebugDeathTest, DefaultHandlerPrintsEveryLeakThenAborts) {
    EXPECT_DEATH(
        {
            debug<test_heap> d;
            (void)d.allocate(11);
            (void)d.allocate(22);
        },
        "leak: 11 bytes.*debug_test.cpp.*leak: 22 bytes.*2 blocks leaked, 33 bytes");
}

} // namespace
