// soa_slot_map: handles over SoA dense storage; stale handles; >= 1,000,000 random ops against a
// std::unordered_map reference with every column checked.
#include "strata/layout/soa_slot_map.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <new>
#include <random>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "support/failing_resource.hpp"
#include "support/recording_handler.hpp"

namespace {
using strata::violation_kind;
using strata::test::recording_handler;
struct body_tag {};
using body = strata::handle<body_tag>;
using bodies = strata::soa_slot_map<body, float, float, std::uint32_t>;
} // namespace

TEST(SoaSlotMap, InsertGetErase) {
    bodies m;
    const body a = m.emplace(1.0f, 2.0f, 3u);
    const body b = m.emplace(4.0f, 5.0f, 6u);
    ASSERT_NE(m.get<0>(a), nullptr);
    EXPECT_EQ(*m.get<1>(a), 2.0f);
    EXPECT_EQ(*m.get<2>(b), 6u);
    EXPECT_EQ(m.size(), 2u);
    ASSERT_TRUE(m.erase(a));
    EXPECT_EQ(m.get<0>(a), nullptr);
    EXPECT_EQ(m.index_of(a), bodies::npos);
    EXPECT_EQ(m.index_of(b), 0u);
    EXPECT_EQ(m.key_of(0), b);
    EXPECT_EQ(m.column<2>()[0], 6u);
    EXPECT_EQ(m.padded_column<0>().size(), 16u);
    EXPECT_TRUE(m.check());
}

TEST(SoaSlotMap, StaleNullAndForeignHandles) {
    bodies m;
    const body a = m.emplace(1.0f, 1.0f, 1u);
    ASSERT_TRUE(m.erase(a));
    const body reused = m.emplace(2.0f, 2.0f, 2u);
    EXPECT_EQ(reused.index(), a.index());
    EXPECT_EQ(m.get<2>(a), nullptr);
    EXPECT_EQ(m.get<2>(body{}), nullptr);
    EXPECT_EQ(m.get<2>(body::from_parts(500, 1)), nullptr);
    recording_handler rec;
    EXPECT_FALSE(m.erase(a));
    EXPECT_FALSE(m.erase(body{}));
    EXPECT_FALSE(m.erase(body::from_parts(500, 1)));
    EXPECT_TRUE(m.key_of(1).is_null());
    EXPECT_EQ(m.size(), 1u);
    if (strata::test::checks_on) {
        ASSERT_EQ(rec.count(), 4u);
        EXPECT_EQ(rec.all()[0].kind, violation_kind::stale_handle);
        EXPECT_EQ(rec.all()[2].kind, violation_kind::stale_handle);
        EXPECT_EQ(rec.all()[3].kind, violation_kind::invalid_argument);
    }
    m.clear();
    EXPECT_EQ(m.get<0>(reused), nullptr);
    EXPECT_TRUE(m.check());
}

TEST(SoaSlotMap, RandomOpsMatchUnorderedMapReference) {
    // 1,000,000 ops in every build (the floor); O(1) per op keeps ASan within budget.
    bodies m;
    m.reserve(64);
    struct row {
        float x, y;
        std::uint32_t id;
    };
    std::unordered_map<body, row> ref;
    std::vector<body> live, dead;
    std::mt19937_64 rng(0x50a);
    std::uint32_t next = 0;
    for (std::size_t op = 0; op < 1'000'000; ++op) {
        const auto r = rng() % 100;
        if (live.size() < 32 || (live.size() < 3000 && r < 50)) {
            const row v{static_cast<float>(next), static_cast<float>(next) * 2, next};
            ++next;
            const body h = m.emplace(v.x, v.y, v.id);
            ASSERT_FALSE(ref.contains(h));
            ref.emplace(h, v);
            live.push_back(h);
        } else if (r < 88) {
            const std::size_t k = rng() % live.size();
            ASSERT_TRUE(m.erase(live[k]));
            ref.erase(live[k]);
            if (dead.size() < 2048) {
                dead.push_back(live[k]);
            } else {
                dead[rng() % dead.size()] = live[k];
            }
            live[k] = live.back();
            live.pop_back();
        } else if (r < 94 && !dead.empty()) {
            const body h = dead[rng() % dead.size()];
            if (!ref.contains(h)) {
                ASSERT_EQ(m.get<0>(h), nullptr);
            }
        } else {
            const body h = live[rng() % live.size()];
            const row& want = ref.at(h);
            ASSERT_EQ(*m.get<0>(h), want.x);
            ASSERT_EQ(*m.get<1>(h), want.y);
            ASSERT_EQ(*m.get<2>(h), want.id);
        }
        if (op % 100'000 == 0) {
            ASSERT_TRUE(m.check());
            // Columns consistent: each dense row is one element's fields, owned by its key.
            for (std::size_t i = 0; i < m.size(); ++i) {
                const row& want = ref.at(m.key_of(i));
                ASSERT_EQ(m.column<0>()[i], want.x);
                ASSERT_EQ(m.column<1>()[i], want.y);
                ASSERT_EQ(m.column<2>()[i], want.id);
            }
        }
    }
    ASSERT_EQ(m.size(), ref.size());
    ASSERT_TRUE(m.check());
}

namespace {
int allocations_left = -1; // before one throws; -1: never

template <class T>
struct throwing_allocator {
    using value_type = T;
    throwing_allocator() = default;
    template <class U>
    throwing_allocator(const throwing_allocator<U>&) noexcept {} // NOLINT(google-explicit-constructor)
    T* allocate(std::size_t n) {
        if (allocations_left == 0) throw std::bad_alloc();
        if (allocations_left > 0) --allocations_left;
        return std::allocator<T>{}.allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>{}.deallocate(p, n); }
    template <class U>
    bool operator==(const throwing_allocator<U>&) const noexcept {
        return true;
    }
};
} // namespace

TEST(SoaSlotMap, CopyAssignmentThatThrowsLeavesTheMapAsItWas) {
    using map = strata::basic_soa_slot_map<body, throwing_allocator<std::byte>, strata::policy::retire,
                                           strata::policy::lifo, float, int>;
    map small, big;
    const body h = small.emplace(1.0f, 1);
    for (int i = 0; i < 100; ++i)
        (void)big.emplace(2.0f, i);
    for (int fail_after = 0; fail_after < 4; ++fail_after) {
        allocations_left = fail_after;
        bool threw = false;
        try {
            small = big;
        } catch (const std::bad_alloc&) {
            threw = true;
        }
        allocations_left = -1;
        if (!threw) break;
        EXPECT_EQ(small.size(), 1u) << fail_after;
        EXPECT_TRUE(small.check()) << fail_after;
        ASSERT_NE(small.get<1>(h), nullptr);
        EXPECT_EQ(*small.get<1>(h), 1);
    }
    small = big;
    EXPECT_EQ(small.size(), 100u);
    EXPECT_TRUE(small.check());
}

TEST(SoaSlotMap, EmplaceOfAnElementsOwnFieldsWhileGrowing) {
    bodies m;
    const body first = m.emplace(1.5f, 2.5f, 7u);
    for (int i = 0; i < 300; ++i) // several growths, each copying a field of the first element
        (void)m.emplace(*m.get<0>(first), *m.get<1>(first), *m.get<2>(first));
    EXPECT_EQ(m.size(), 301u);
    for (std::size_t i = 0; i < m.size(); ++i)
        EXPECT_EQ(m.dense().get<2>(i), 7u);
    EXPECT_TRUE(m.check());
}

namespace {
using pmr_bodies =
    strata::basic_soa_slot_map<body, std::pmr::polymorphic_allocator<std::byte>, strata::policy::retire,
                               strata::policy::lifo, float, std::uint32_t>;
} // namespace

TEST(SoaSlotMap, MoveAssignmentBetweenUnequalAllocatorsCopiesAsideOrChangesNothing) {
    for (long fail = 0;; ++fail) {
        strata::test::failing_resource ra, rb;
        pmr_bodies a{std::pmr::polymorphic_allocator<std::byte>(&ra)};
        pmr_bodies b{std::pmr::polymorphic_allocator<std::byte>(&rb)};
        std::vector<body> ha, hb;
        for (std::uint32_t i = 0; i < 10; ++i)
            ha.push_back(a.emplace(-1.0f, i));
        for (std::uint32_t i = 0; i < 40; ++i)
            hb.push_back(b.emplace(static_cast<float>(i), i));
        // Not noexcept here: a throw must leave both maps as they were.
        const bool threw = ra.throws_when_failing(fail, [&] { a = std::move(b); });
        ASSERT_TRUE(a.check() && b.check()) << "allocation " << fail;
        if (threw) {
            ASSERT_EQ(a.size(), 10u);
            ASSERT_EQ(b.size(), 40u);
            for (std::uint32_t i = 0; i < 10; ++i)
                EXPECT_EQ(*a.get<1>(ha[i]), i);
            continue;
        }
        ASSERT_EQ(a.size(), 40u);
        for (std::uint32_t i = 0; i < 40; ++i) { // b's handles name a's elements
            EXPECT_EQ(*a.get<0>(hb[i]), static_cast<float>(i));
            EXPECT_EQ(*a.get<1>(hb[i]), i);
        }
        EXPECT_TRUE(b.empty());
        for (std::uint32_t i = 0; i < 50; ++i) // the moved-from map is usable
            (void)b.emplace(1.0f, i);
        EXPECT_TRUE(b.check());
        break;
    }
}
