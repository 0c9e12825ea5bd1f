// handle_table specifics: objects never move, chunked growth, handle_at, allocator use, move.
#include "strata/handle/handle_table.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "strata/adapt/std_allocator.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/heap_source.hpp"

#include "support/recording_handler.hpp"

namespace {
using strata::violation_kind;
using strata::test::recording_handler;
struct tag {};
using h32 = strata::handle<tag>;

struct alignas(64) wide_object {
    std::uint64_t words[10] = {};
};
} // namespace

TEST(HandleTable, ObjectsNeverMove) {
    strata::handle_table<std::uint64_t, h32> t;
    const auto first = t.emplace(std::uint64_t{42});
    const std::uint64_t* p = t.get(first);
    std::vector<h32> hs;
    for (std::uint64_t i = 0; i < 10'000; ++i)
        hs.push_back(t.emplace(i));
    for (std::size_t i = 0; i < hs.size(); i += 2)
        ASSERT_TRUE(t.erase(hs[i]));
    for (std::uint64_t i = 0; i < 5'000; ++i)
        (void)t.emplace(i);
    EXPECT_EQ(t.get(first), p) << "a live object moved";
    EXPECT_EQ(*p, 42u);
    EXPECT_GE(t.capacity(), t.size());
    EXPECT_TRUE(t.check());
}

TEST(HandleTable, OverAlignedObjectsAreAligned) {
    strata::handle_table<wide_object, h32> t;
    for (int i = 0; i < 200; ++i) {
        const auto h = t.emplace();
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.get(h)) % 64, 0u);
    }
}

TEST(HandleTable, HandleAtWalksLiveObjects) {
    strata::handle_table<int, h32> t;
    const auto a = t.emplace(1), b = t.emplace(2), c = t.emplace(3);
    ASSERT_TRUE(t.erase(a));
    std::vector<h32> got;
    for (std::size_t i = 0; i < t.size(); ++i)
        got.push_back(t.handle_at(i));
    EXPECT_EQ(got.size(), 2u);
    EXPECT_TRUE((got[0] == b && got[1] == c) || (got[0] == c && got[1] == b));
    recording_handler rec;
    EXPECT_TRUE(t.handle_at(2).is_null());
    if (strata::test::checks_on) {
        EXPECT_TRUE(rec.saw_one(violation_kind::invalid_argument));
    }
}

TEST(HandleTable, UsesAStrataAllocatorForChunksAndArrays) {
    strata::heap_source heap;
    strata::arena arena(heap);
    using alloc = strata::std_allocator<int, strata::arena>;
    {
        strata::handle_table<int, h32, alloc> t{alloc(arena)};
        for (int i = 0; i < 1000; ++i)
            (void)t.emplace(i);
        EXPECT_GT(arena.stats().in_use, 1000 * sizeof(int));
        EXPECT_TRUE(t.check());
    }
}

TEST(HandleTable, MoveKeepsAddressesAndEmptiesTheSource) {
    strata::handle_table<int, h32> t;
    const auto h = t.emplace(5);
    const int* p = t.get(h);
    strata::handle_table<int, h32> u = std::move(t);
    EXPECT_EQ(u.get(h), p);
    EXPECT_TRUE(u.check());
    EXPECT_TRUE(t.empty()); // NOLINT(bugprone-use-after-move): documented state
    EXPECT_EQ(t.get(h), nullptr);
    EXPECT_TRUE(t.check());
    const auto g = t.emplace(6);
    EXPECT_EQ(*t.get(g), 6);
}

TEST(HandleTable, EraseIfOrMoveInsideItsOwnIterationIsRefusedOrEndsTheLoop) {
    using table = strata::handle_table<std::string, h32>;
    table t;
    std::vector<h32> hs;
    for (int i = 0; i < 6; ++i)
        hs.push_back(t.emplace("object " + std::to_string(i) + " long enough to be on the heap"));
    recording_handler rec;
    int visited = 0;
    t.for_each([&](std::string& s) {
        EXPECT_EQ(t.erase_if([](const std::string&) { return true; }), 0u);
        EXPECT_FALSE(s.empty());
        ++visited;
    });
    EXPECT_EQ(visited, 6);
    std::size_t inner = 0;
    EXPECT_EQ(t.erase_if([&](const std::string&) {
        inner += t.erase_if([](const std::string&) { return true; });
        return false;
    }),
              0u);
    EXPECT_EQ(inner, 0u);
    EXPECT_EQ(t.size(), 6u);
    // A move out of the table inside its loops: the new table takes the objects, the loops end.
    std::vector<table> taken;
    taken.reserve(2);
    visited = 0;
    t.for_each([&](std::string&) {
        if (taken.empty()) taken.emplace_back(std::move(t));
        ++visited;
    });
    EXPECT_EQ(visited, 1);
    EXPECT_TRUE(t.empty() && t.check());
    ASSERT_EQ(taken.size(), 1u);
    EXPECT_EQ(taken[0].size(), 6u);
    for (const h32 h : hs)
        EXPECT_NE(taken[0].get(h), nullptr);
    visited = 0;
    EXPECT_EQ(taken[0].erase_if([&](const std::string&) {
        if (visited++ == 1) taken.emplace_back(std::move(taken[0]));
        return false;
    }),
              0u);
    EXPECT_EQ(visited, 2);
    EXPECT_TRUE(taken[0].empty() && taken[0].check());
    EXPECT_EQ(taken[1].size(), 6u);
    EXPECT_TRUE(taken[1].check());
    if (strata::test::checks_on) {
        EXPECT_EQ(rec.count(), 14u); // 12 refused erase_if calls, 2 moves out of a loop
        EXPECT_EQ(rec.last().kind, violation_kind::invalid_argument);
    }
}

TEST(HandleTable, EraseOrClearInsideItsOwnIterationIsRefused) {
    strata::handle_table<std::string, h32> t;
    std::vector<h32> hs;
    for (int i = 0; i < 10; ++i)
        hs.push_back(t.emplace("object " + std::to_string(i) + " long enough to be on the heap"));
    recording_handler rec;
    // erase_if's predicate erasing the very object it was handed (and others), then asking for it:
    // refused, so nothing is destroyed twice and erase_if's own walk stays exact.
    std::size_t k = 0;
    const std::size_t erased = t.erase_if([&](const std::string&) {
        EXPECT_FALSE(t.erase(hs[k % hs.size()]));
        t.clear();
        ++k;
        return k % 2 == 0;
    });
    EXPECT_EQ(erased, 5u);
    EXPECT_EQ(t.size(), 5u);
    EXPECT_TRUE(t.check());
    if (strata::test::checks_on) {
        EXPECT_EQ(rec.count(), 20u);
        EXPECT_EQ(rec.last().kind, violation_kind::invalid_argument);
    }
    int visited = 0;
    t.for_each([&](std::string& s) {
        t.clear();
        EXPECT_FALSE(s.empty()); // alive: the clear was refused
        ++visited;
    });
    EXPECT_EQ(visited, 5);
    EXPECT_EQ(t.size(), 5u);
    t.clear();
    EXPECT_TRUE(t.empty());
    EXPECT_TRUE(t.check());
}
