// slot_map specifics: dense storage, key_of, swap-and-pop order, allocator use, copy/move.
#include "strata/handle/slot_map.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
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
} // namespace

TEST(SlotMap, ValuesAreDenseAndEraseSwapsTheLastIn) {
    strata::slot_map<int, h32> m;
    std::vector<h32> hs;
    for (int i = 0; i < 5; ++i)
        hs.push_back(m.emplace(i * 10));
    ASSERT_TRUE(m.erase(hs[1]));
    // [0, 40, 20, 30]: the last value moved into the hole.
    const std::vector<int> expect{0, 40, 20, 30};
    EXPECT_EQ(std::vector<int>(m.begin(), m.end()), expect);
    EXPECT_EQ(m.values().size(), 4u);
    EXPECT_EQ(m.data(), &m[0]);
    EXPECT_EQ(*m.get(hs[4]), 40);
    EXPECT_EQ(m.index_of(hs[4]), 1u);
    EXPECT_EQ(m.index_of(hs[1]), m.size());
    EXPECT_TRUE(m.check());
}

TEST(SlotMap, KeyOfIndexAndValue) {
    strata::slot_map<int, h32> m;
    const auto a = m.emplace(1), b = m.emplace(2), c = m.emplace(3);
    EXPECT_EQ(m.key_of(std::size_t{0}), a);
    EXPECT_EQ(m.key_of(std::size_t{2}), c);
    EXPECT_EQ(m.key_of(*m.get(b)), b);
    ASSERT_TRUE(m.erase(a));
    EXPECT_EQ(m.key_of(std::size_t{0}), c);
    EXPECT_EQ(m.key_of(m[1]), b);
}

TEST(SlotMap, KeyOfBadInputReturnsNullAndReports) {
    STRATA_REQUIRE_CHECKS(1);
    strata::slot_map<int, h32> m;
    (void)m.emplace(1);
    recording_handler rec;
    EXPECT_TRUE(m.key_of(std::size_t{1}).is_null());
    EXPECT_TRUE(rec.saw_one(violation_kind::invalid_argument));
    rec.clear();
    const int outside = 5;
    EXPECT_TRUE(m.key_of(outside).is_null());
    EXPECT_TRUE(rec.saw_one(violation_kind::foreign_pointer));
}

TEST(SlotMap, KeyOfBadInputWithoutChecksStillReturnsNull) {
    strata::slot_map<int, h32> m;
    (void)m.emplace(1);
    recording_handler rec; // keeps the default handler from aborting at checks >= 1
    EXPECT_TRUE(m.key_of(std::size_t{7}).is_null());
    const int outside = 5;
    EXPECT_TRUE(m.key_of(outside).is_null());
}

TEST(SlotMap, EraseOfKeyOfOutOfRangeIsRefused) {
    // erase(key_of(i)) is one inlined path (erase takes the handle apart before its checks); an
    // out-of-range i makes key_of's null handle, which erase must still refuse.
    STRATA_REQUIRE_CHECKS(1);
    strata::slot_map<int, h32> m;
    (void)m.emplace(1);
    (void)m.emplace(2);
    recording_handler rec;
    EXPECT_FALSE(m.erase(m.key_of(m.size())));
    EXPECT_EQ(rec.count(), 2u);
    EXPECT_EQ(rec.all()[0].kind, violation_kind::invalid_argument); // key_of
    EXPECT_EQ(rec.all()[1].kind, violation_kind::stale_handle);     // erase(null)
    EXPECT_EQ(m.size(), 2u);
    EXPECT_TRUE(m.check());
}

TEST(SlotMap, EraseByKeyOfMatchesEraseAt) {
    // The churn pattern of the handle showdown: kill the k-th value through its handle in one map
    // and by dense index in a twin; both must stay identical (values, slots, handles).
    strata::slot_map<int, h32> by_handle, by_index;
    std::vector<h32> handles;
    for (int i = 0; i < 200; ++i) {
        handles.push_back(by_handle.emplace(i));
        ASSERT_EQ(by_index.emplace(i), handles.back());
    }
    std::uint32_t state = 12345;
    int next = 200;
    for (int frame = 0; frame < 50; ++frame) {
        for (int i = 0; i < 30; ++i) {
            state = state * 1664525u + 1013904223u;
            const std::size_t k = (static_cast<std::uint64_t>(state) * by_handle.size()) >> 32;
            const h32 h = by_handle.key_of(k);
            ASSERT_TRUE(by_handle.erase(by_handle.key_of(k)));
            ASSERT_TRUE(by_index.erase_at(k));
            EXPECT_FALSE(by_handle.contains(h));
            EXPECT_FALSE(by_index.contains(h));
        }
        for (int i = 0; i < 30; ++i, ++next)
            ASSERT_EQ(by_handle.emplace(next), by_index.emplace(next)) << "spawn " << next;
        ASSERT_TRUE(std::equal(by_handle.begin(), by_handle.end(), by_index.begin(), by_index.end()));
        ASSERT_TRUE(by_handle.check());
        ASSERT_TRUE(by_index.check());
    }
    for (std::size_t i = 0; i < by_handle.size(); ++i)
        EXPECT_EQ(by_handle.key_of(i), by_index.key_of(i));
}

TEST(SlotMap, BackwardIndexLoopIsASafeErasePattern) {
    strata::slot_map<int, h32> m;
    for (int i = 0; i < 100; ++i)
        (void)m.emplace(i);
    // Iterating dense indices backward, erase by key_of(i): the value moved into i comes from the
    // end, which was already visited.
    std::vector<int> visited;
    for (std::size_t i = m.size(); i-- > 0;) {
        visited.push_back(m[i]);
        if (m[i] % 4 == 0) {
            ASSERT_TRUE(m.erase(m.key_of(i)));
        }
    }
    EXPECT_EQ(visited.size(), 100u);
    std::sort(visited.begin(), visited.end());
    std::vector<int> all(100);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(visited, all);
    EXPECT_EQ(m.size(), 75u);
    EXPECT_TRUE(m.check());
}

TEST(SlotMap, CopyAndMove) {
    strata::slot_map<int, h32> m;
    const auto a = m.emplace(1), b = m.emplace(2);
    ASSERT_TRUE(m.erase(a));
    strata::slot_map<int, h32> copy = m;
    EXPECT_EQ(*copy.get(b), 2);
    EXPECT_EQ(copy.get(a), nullptr);
    EXPECT_TRUE(copy.check());
    strata::slot_map<int, h32> moved = std::move(m);
    EXPECT_EQ(*moved.get(b), 2);
    EXPECT_TRUE(moved.check());
    // The moved-from map is empty and usable.
    EXPECT_TRUE(m.empty()); // NOLINT(bugprone-use-after-move): documented state
    EXPECT_TRUE(m.check());
    const auto c = m.emplace(3);
    EXPECT_EQ(*m.get(c), 3);
}

TEST(SlotMap, UsesAStrataAllocatorForItsArrays) {
    strata::heap_source heap;
    strata::arena arena(heap);
    using alloc = strata::std_allocator<double, strata::arena>;
    strata::slot_map<double, h32, alloc> m{alloc(arena)};
    EXPECT_EQ(arena.stats().in_use, 0u);
    std::vector<h32> hs;
    for (int i = 0; i < 1000; ++i)
        hs.push_back(m.emplace(i * 0.5));
    EXPECT_GT(arena.stats().in_use, 1000 * sizeof(double));
    for (int i = 0; i < 1000; i += 2)
        ASSERT_TRUE(m.erase(hs[static_cast<std::size_t>(i)]));
    for (int i = 1; i < 1000; i += 2)
        EXPECT_EQ(*m.get(hs[static_cast<std::size_t>(i)]), i * 0.5);
    EXPECT_TRUE(m.check());
}

TEST(SlotMap, SixtyFourBitHandles) {
    using wide = strata::handle<tag, 32, 32>;
    strata::slot_map<int, wide> m;
    const auto h = m.emplace(9);
    static_assert(sizeof(h) == 8);
    EXPECT_EQ(*m.get(h), 9);
    ASSERT_TRUE(m.erase(h));
    EXPECT_EQ(m.get(h), nullptr);
    EXPECT_EQ(m.emplace(1).generation(), 2u);
    EXPECT_EQ(m.max_size(), std::size_t{1} << 32);
}

TEST(SlotMap, EraseAtErasesByDenseIndex) {
    strata::slot_map<int, h32> m;
    const auto a = m.emplace(1), b = m.emplace(2), c = m.emplace(3);
    ASSERT_TRUE(m.erase_at(0));
    EXPECT_EQ(m.get(a), nullptr);
    EXPECT_EQ(*m.get(c), 3);
    EXPECT_EQ(m.index_of(c), 0u);
    EXPECT_EQ(*m.get(b), 2);
    recording_handler rec;
    EXPECT_FALSE(m.erase_at(2));
    EXPECT_EQ(m.size(), 2u);
    if (strata::test::checks_on) {
        EXPECT_TRUE(rec.saw_one(violation_kind::invalid_argument));
    }
    rec.clear();
    m.for_each([&](int&) { EXPECT_FALSE(m.erase_at(0)); });
    EXPECT_EQ(m.size(), 2u);
    EXPECT_TRUE(m.check());
}

TEST(SlotMap, CopyAssignmentIntoALargerMapKeepsTheFastPathSafe) {
    // The destination keeps its larger value capacity through copy assignment; the reverse map
    // must grow with it, or the next emplaces would write past it (ASan sees that).
    strata::slot_map<int, strata::handle<struct assign_tag>> big, small;
    for (int i = 0; i < 1000; ++i)
        (void)big.emplace(i);
    (void)small.emplace(1);
    big = small;
    EXPECT_TRUE(big.check());
    for (int i = 0; i < 2000; ++i)
        (void)big.emplace(i);
    EXPECT_EQ(big.size(), 2001u);
    EXPECT_TRUE(big.check());
    auto moved = std::move(big);
    EXPECT_TRUE(moved.check());
    EXPECT_TRUE(big.check()); // NOLINT(bugprone-use-after-move): moved-from is empty and usable
    EXPECT_TRUE(big.empty());
    (void)big.emplace(3);
    big = std::move(moved);
    EXPECT_EQ(big.size(), 2001u);
    EXPECT_TRUE(big.check());
}
