// slot_map specifics: dense storage, key_of, swap-and-pop order, allocator use, copy/move.
#include "strata/handle/slot_map.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <new>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "strata/adapt/std_allocator.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/heap_source.hpp"

#include "support/failing_resource.hpp"
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
    EXPECT_EQ(m.key_of_value(*m.get(b)), b);
    ASSERT_TRUE(m.erase(a));
    EXPECT_EQ(m.key_of(std::size_t{0}), c);
    EXPECT_EQ(m.key_of_value(m[1]), b);
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
    EXPECT_TRUE(m.key_of_value(outside).is_null());
    EXPECT_TRUE(rec.saw_one(violation_kind::foreign_pointer));
}

TEST(SlotMap, KeyOfBadInputWithoutChecksStillReturnsNull) {
    strata::slot_map<int, h32> m;
    (void)m.emplace(1);
    recording_handler rec; // keeps the default handler from aborting at checks >= 1
    EXPECT_TRUE(m.key_of(std::size_t{7}).is_null());
    const int outside = 5;
    EXPECT_TRUE(m.key_of_value(outside).is_null());
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

namespace {
// Long enough to live on the heap: a read of a moved-away string is a use after free under ASan.
std::string long_text(int i) { return "value number " + std::to_string(i) + " with no small-string buffer"; }

using pmr_map = strata::slot_map<std::string, h32, std::pmr::polymorphic_allocator<std::string>>;
} // namespace

TEST(SlotMap, InsertingItsOwnElementWhileFullCopiesItBeforeGrowing) {
    strata::slot_map<std::string, h32> m;
    std::vector<h32> hs;
    while (hs.empty() || m.size() < m.capacity())
        hs.push_back(m.insert(long_text(static_cast<int>(hs.size()))));
    ASSERT_EQ(m.size(), m.capacity());
    const h32 copy = m.insert(m[0]); // grows: m[0] must be read before its storage moves
    EXPECT_EQ(*m.get(copy), long_text(0));
    const h32 again = m.emplace(*m.get(hs.back()));
    EXPECT_EQ(*m.get(again), *m.get(hs.back()));
    EXPECT_TRUE(m.check());
}

TEST(SlotMap, AnAllocationFailureWhileGrowingLeavesTheMapAsItWas) {
    // Every allocation an emplace at full capacity makes (slots, values, reverse map) fails once.
    for (long fail = 0;; ++fail) {
        strata::test::failing_resource r;
        pmr_map m{std::pmr::polymorphic_allocator<std::string>(&r)};
        std::vector<h32> hs;
        while (hs.empty() || m.size() < m.capacity())
            hs.push_back(m.insert(long_text(static_cast<int>(hs.size()))));
        const std::size_t size = m.size(), capacity = m.capacity();
        const bool threw = r.throws_when_failing(fail, [&] { hs.push_back(m.insert(long_text(-1))); });
        ASSERT_TRUE(m.check()) << "allocation " << fail;
        if (!threw) break; // this emplace makes fewer allocations than `fail`: all were tried
        EXPECT_EQ(m.size(), size);
        EXPECT_EQ(m.capacity(), capacity) << "allocation " << fail;
        for (std::size_t i = 0; i < hs.size(); ++i)
            EXPECT_EQ(*m.get(hs[i]), long_text(static_cast<int>(i)));
        for (int i = 0; i < 3 * static_cast<int>(capacity); ++i) // the fast path trusts the room
            (void)m.insert(long_text(i));
        EXPECT_TRUE(m.check());
    }
}

TEST(SlotMap, MoveAssignmentBetweenUnequalAllocatorsLeavesBothMapsSound) {
    strata::test::failing_resource ra, rb;
    pmr_map a{std::pmr::polymorphic_allocator<std::string>(&ra)};
    pmr_map b{std::pmr::polymorphic_allocator<std::string>(&rb)};
    for (int i = 0; i < 10; ++i)
        (void)a.insert(long_text(-i));
    std::vector<h32> hs;
    for (int i = 0; i < 40; ++i)
        hs.push_back(b.insert(long_text(i)));
    a = std::move(b);
    EXPECT_TRUE(a.check());
    ASSERT_EQ(a.size(), 40u);
    for (int i = 0; i < 40; ++i)
        EXPECT_EQ(*a.get(hs[static_cast<std::size_t>(i)]), long_text(i)); // b's handles name a's values
    EXPECT_EQ(a.get_allocator().resource(), &ra);                         // not propagated
    // The moved-from map is empty and usable: its arrays must still agree with each other.
    EXPECT_TRUE(b.empty());
    EXPECT_TRUE(b.check());
    std::vector<h32> again;
    for (int i = 0; i < 100; ++i)
        again.push_back(b.insert(long_text(1000 + i)));
    for (std::size_t i = 0; i < again.size(); i += 3)
        ASSERT_TRUE(b.erase(again[i]));
    EXPECT_TRUE(b.check());
    for (std::size_t i = 0; i < again.size(); ++i) {
        if (i % 3 != 0) {
            EXPECT_EQ(*b.get(again[i]), long_text(1000 + static_cast<int>(i)));
        }
    }
}

TEST(SlotMap, AMoveAssignmentThatCannotAllocateChangesNeitherMap) {
    for (long fail = 0;; ++fail) {
        strata::test::failing_resource ra, rb;
        pmr_map a{std::pmr::polymorphic_allocator<std::string>(&ra)};
        pmr_map b{std::pmr::polymorphic_allocator<std::string>(&rb)};
        std::vector<h32> ha, hb;
        for (int i = 0; i < 10; ++i)
            ha.push_back(a.insert(long_text(-i)));
        for (int i = 0; i < 40; ++i)
            hb.push_back(b.insert(long_text(i)));
        // Not noexcept here: a throw must leave both maps as they were.
        const bool threw = ra.throws_when_failing(fail, [&] { a = std::move(b); });
        ASSERT_TRUE(a.check() && b.check()) << "allocation " << fail;
        if (!threw) break;
        ASSERT_EQ(a.size(), 10u);
        ASSERT_EQ(b.size(), 40u);
        for (std::size_t i = 0; i < ha.size(); ++i)
            EXPECT_EQ(*a.get(ha[i]), long_text(-static_cast<int>(i)));
        for (std::size_t i = 0; i < hb.size(); ++i)
            EXPECT_EQ(*b.get(hb[i]), long_text(static_cast<int>(i)));
    }
}

TEST(SlotMap, ClearOrAssignmentInsideItsOwnIterationIsRefused) {
    strata::slot_map<std::string, h32> m, other;
    for (int i = 0; i < 20; ++i)
        (void)m.insert(long_text(i));
    (void)other.insert(long_text(99));
    recording_handler rec;
    int visited = 0;
    m.for_each([&](std::string& v) {
        m.clear();
        m = other;
        m = strata::slot_map<std::string, h32>{};
        EXPECT_FALSE(v.empty()); // still alive: nothing was destroyed under the loop
        ++visited;
    });
    EXPECT_EQ(visited, 20);
    EXPECT_EQ(m.size(), 20u);
    EXPECT_TRUE(m.check());
    if (strata::test::checks_on) {
        EXPECT_EQ(rec.count(), 60u);
        EXPECT_EQ(rec.last().kind, violation_kind::invalid_argument);
    }
    const std::size_t erased = m.erase_if([&](const std::string&) {
        m.clear();
        return true;
    });
    EXPECT_EQ(erased, 20u);
    EXPECT_TRUE(m.empty());
    EXPECT_TRUE(m.check());
    m.clear(); // outside the loop: allowed again
    m = other;
    EXPECT_EQ(m.size(), 1u);
}

TEST(SlotMap, EraseIfInsideItsOwnIterationIsRefused) {
    strata::slot_map<std::string, h32> m;
    for (int i = 0; i < 8; ++i)
        (void)m.insert(long_text(i));
    recording_handler rec;
    int visited = 0;
    m.for_each([&](std::string& v) {
        EXPECT_EQ(m.erase_if([](const std::string&) { return true; }), 0u);
        EXPECT_FALSE(v.empty()); // alive: nothing was erased under the loop
        ++visited;
    });
    EXPECT_EQ(visited, 8);
    std::size_t inner = 0;
    const std::size_t erased = m.erase_if([&](const std::string&) {
        inner += m.erase_if([](const std::string&) { return true; });
        return false;
    });
    EXPECT_EQ(erased, 0u);
    EXPECT_EQ(inner, 0u);
    EXPECT_EQ(m.size(), 8u);
    EXPECT_TRUE(m.check());
    if (strata::test::checks_on) {
        EXPECT_EQ(rec.count(), 16u);
        EXPECT_EQ(rec.last().kind, violation_kind::invalid_argument);
    }
}

TEST(SlotMap, MovingTheMapAwayInsideItsOwnIterationEndsTheLoop) {
    using map = strata::slot_map<std::string, h32>;
    map m;
    std::vector<h32> hs;
    for (int i = 0; i < 8; ++i)
        hs.push_back(m.insert(long_text(i)));
    recording_handler rec;
    // Move assignment from the map is refused like assignment to it.
    map target;
    int visited = 0;
    m.for_each([&](std::string&) {
        target = std::move(m);
        ++visited;
    });
    EXPECT_EQ(visited, 8);
    EXPECT_TRUE(target.empty());
    EXPECT_EQ(m.size(), 8u);
    // Move construction cannot be refused: the new map takes the values, the loop stops reading
    // the emptied one.
    std::vector<map> taken;
    taken.reserve(1);
    visited = 0;
    m.for_each([&](std::string&) {
        if (taken.empty()) taken.emplace_back(std::move(m));
        ++visited;
    });
    EXPECT_EQ(visited, 1);
    ASSERT_EQ(taken.size(), 1u);
    EXPECT_TRUE(m.empty() && m.check());
    EXPECT_EQ(taken[0].size(), 8u);
    EXPECT_TRUE(taken[0].check());
    for (std::size_t i = 0; i < hs.size(); ++i)
        EXPECT_EQ(*taken[0].get(hs[i]), long_text(static_cast<int>(i)));
    visited = 0;
    const std::size_t erased = taken[0].erase_if([&](const std::string&) {
        if (visited++ == 2) map gone(std::move(taken[0]));
        return false;
    });
    EXPECT_EQ(erased, 0u);
    EXPECT_EQ(visited, 3);
    EXPECT_TRUE(taken[0].empty() && taken[0].check());
    if (strata::test::checks_on) {
        EXPECT_EQ(rec.count(), 10u); // 8 refused assignments, 2 moves out of a loop
        EXPECT_EQ(rec.last().kind, violation_kind::invalid_argument);
    }
}

TEST(SlotMap, KeyOfAnIntegerIsAlwaysTheIndexForm) {
    strata::slot_map<int, h32> ints;
    const h32 five = ints.insert(5);
    const h32 zero = ints.insert(0);
    for (int i = 0; i < 2; ++i) // an int counter, as a plain loop over the dense indices has
        EXPECT_EQ(ints.key_of(i), i == 0 ? five : zero);
    EXPECT_EQ(ints.key_of_value(ints[1]), zero);
    strata::slot_map<std::size_t, h32> sizes;
    const h32 seven = sizes.insert(7);
    EXPECT_EQ(sizes.key_of(std::size_t{0}), seven); // compiles: no ambiguity with the value form
    EXPECT_EQ(sizes.key_of_value(sizes[0]), seven);
    strata::slot_map<std::string, h32> strings;
    const h32 s = strings.insert(long_text(1));
    EXPECT_EQ(strings.key_of(strings[0]), s); // the value form stays for types that are not indices
    EXPECT_EQ(strings.key_of(0), s);
}
