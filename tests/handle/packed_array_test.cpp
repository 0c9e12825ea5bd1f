// packed_array: dense swap-and-pop without handles.
#include "strata/handle/packed_array.hpp"

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "strata/adapt/std_allocator.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/heap_source.hpp"

#include "support/recording_handler.hpp"

using strata::violation_kind;
using strata::test::recording_handler;

TEST(PackedArray, PushEraseSwapsTheLastIn) {
    strata::packed_array<std::string> a;
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.push_back("zero"), 0u);
    EXPECT_EQ(a.push_back(std::string("one")), 1u);
    EXPECT_EQ(a.emplace_back(3, 'x'), 2u);
    ASSERT_TRUE(a.erase(0));
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0], "xxx");
    EXPECT_EQ(a[1], "one");
    ASSERT_TRUE(a.erase(1)); // the last: just popped
    EXPECT_EQ(a.values().size(), 1u);
    EXPECT_EQ(a.data()[0], "xxx");
    a.clear();
    EXPECT_TRUE(a.empty());
}

TEST(PackedArray, EraseOutOfRangeIsRefused) {
    strata::packed_array<int> a;
    (void)a.push_back(1);
    recording_handler rec;
    EXPECT_FALSE(a.erase(1));
    EXPECT_FALSE(a.erase(static_cast<std::size_t>(-1)));
    EXPECT_EQ(a.size(), 1u);
    if (strata::test::checks_on) {
        EXPECT_EQ(rec.count(), 2u);
        EXPECT_EQ(rec.last().kind, violation_kind::invalid_argument);
    }
}

TEST(PackedArray, EraseIfVisitsEachOnce) {
    strata::packed_array<int> a;
    for (int i = 0; i < 1000; ++i)
        (void)a.push_back(i);
    std::vector<int> asked;
    EXPECT_EQ(a.erase_if([&](int v) {
        asked.push_back(v);
        return v % 3 == 0;
    }),
              334u);
    std::sort(asked.begin(), asked.end());
    ASSERT_EQ(asked.size(), 1000u);
    for (int i = 0; i < 1000; ++i)
        EXPECT_EQ(asked[static_cast<std::size_t>(i)], i);
    for (int v : a)
        EXPECT_NE(v % 3, 0);
    EXPECT_EQ(a.size(), 666u);
}

TEST(PackedArray, EraseIfWhosePredicateErasesNeverReadsPastTheEnd) {
    // Against erase_if's requirement, but memory-safe: the walk stops at the shrunken end.
    strata::packed_array<std::string> a;
    for (int i = 0; i < 16; ++i)
        (void)a.push_back("value " + std::to_string(i) + " long enough to live on the heap");
    std::size_t calls = 0;
    (void)a.erase_if([&](const std::string& v) {
        EXPECT_FALSE(v.empty());
        ++calls;
        if (a.size() > 2) {
            (void)a.erase(0);
            (void)a.erase(0);
        }
        return false;
    });
    EXPECT_EQ(calls, 1u); // the first call shrank the array below the walk's next index
    EXPECT_EQ(a.size(), 14u);
}

TEST(PackedArray, RandomOpsMatchTheSwapAndPopModel) {
    strata::heap_source heap;
    strata::arena arena(heap);
    using alloc = strata::std_allocator<int, strata::arena>;
    strata::packed_array<int, alloc> a{alloc(arena)};
    std::vector<int> ref;
    std::mt19937 rng(11);
    for (int op = 0; op < 200'000; ++op) {
        if (ref.size() < 10 || rng() % 2 == 0) {
            (void)a.push_back(op);
            ref.push_back(op);
        } else {
            const std::size_t i = rng() % a.size();
            ASSERT_EQ(a[i], ref[i]);
            ASSERT_TRUE(a.erase(i));
            ref[i] = ref.back(); // the model of swap-and-pop
            ref.pop_back();
        }
        if (op % 20000 == 0) {
            ASSERT_EQ(std::vector<int>(a.begin(), a.end()), ref);
        }
    }
}
