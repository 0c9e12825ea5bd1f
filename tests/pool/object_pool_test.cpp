#include "strata/pool/object_pool.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "strata/source/heap_source.hpp"

#include "support/recording_handler.hpp"
#include "support/reference_model.hpp"

namespace {

using strata::object_pool;
using strata::violation_kind;
using strata::test::recording_handler;

struct counted {
    static inline int alive = 0;
    explicit counted(int v) : value(v) { ++alive; }
    ~counted() { --alive; }
    counted(const counted&) = delete;
    counted& operator=(const counted&) = delete;
    int value;
    std::string name = "particle";
};

struct alignas(64) wide {
    double d[3];
};

struct throws_on_seven {
    explicit throws_on_seven(int v) {
        if (v == 7) throw std::runtime_error("seven");
    }
    char pad[24];
};

TEST(ObjectPool, CreateConstructsAndDestroyDestructs) {
    strata::heap_source src;
    {
        object_pool<counted> pool(src);
        counted* a = pool.create(1);
        counted* b = pool.create(2);
        ASSERT_NE(a, nullptr);
        ASSERT_NE(b, nullptr);
        EXPECT_EQ(a->value, 1);
        EXPECT_EQ(b->name, "particle");
        EXPECT_EQ(counted::alive, 2);
        EXPECT_EQ(pool.live(), 2u);
        EXPECT_TRUE(pool.owns(a));
        pool.destroy(a);
        EXPECT_EQ(counted::alive, 1);
        pool.destroy(b);
        pool.destroy(nullptr);
        EXPECT_EQ(counted::alive, 0);
        EXPECT_EQ(pool.live(), 0u);
        EXPECT_TRUE(pool.check());
    }
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

TEST(ObjectPool, HonoursOverAlignedTypes) {
    strata::heap_source src;
    object_pool<wide> pool(src);
    std::vector<wide*> v;
    for (int i = 0; i < 100; ++i) {
        v.push_back(pool.create());
        ASSERT_TRUE(strata::is_aligned(v.back(), 64));
    }
    for (wide* w : v)
        pool.destroy(w);
}

TEST(ObjectPool, ConstructorExceptionFreesTheSlot) {
    strata::heap_source src;
    object_pool<throws_on_seven> pool(src);
    throws_on_seven* a = pool.create(1);
    EXPECT_THROW((void)pool.create(7), std::runtime_error);
    EXPECT_EQ(pool.live(), 1u);
    EXPECT_TRUE(pool.check());
    pool.destroy(a);
}

TEST(ObjectPool, ExhaustedBufferReturnsNull) {
    alignas(64) std::array<std::byte, 512> buf{};
    object_pool<wide> pool({buf.data(), buf.size()});
    std::vector<wide*> v;
    while (wide* w = pool.create())
        v.push_back(w);
    EXPECT_GT(v.size(), 0u);
    EXPECT_LT(v.size(), 8u);
    for (wide* w : v)
        pool.destroy(w);
}

TEST(ObjectPoolChecks, DestroyingTwiceIsReportedAndTheDestructorRunsOnce) {
    STRATA_REQUIRE_CHECKS(1);
    recording_handler h;
    strata::heap_source src;
    object_pool<counted> pool(src);
    counted* a = pool.create(5);
    pool.destroy(a);
    EXPECT_EQ(counted::alive, 0);
    pool.destroy(a);
    EXPECT_TRUE(h.saw_one(violation_kind::double_free));
    EXPECT_EQ(counted::alive, 0) << "no second destructor call";
    EXPECT_TRUE(pool.check());
}

TEST(ObjectPoolChecks, ForeignObjectIsReportedAndNotDestroyed) {
    STRATA_REQUIRE_CHECKS(1);
    recording_handler h;
    strata::heap_source src;
    object_pool<counted> pool(src);
    counted* a = pool.create(1);
    counted outside(2);
    pool.destroy(&outside);
    EXPECT_TRUE(h.saw_one(violation_kind::foreign_pointer));
    EXPECT_EQ(counted::alive, 2);
    pool.destroy(a);
}

TEST(ObjectPoolChecks, DestroyingThePoolWithLiveObjectsIsALeak) {
    STRATA_REQUIRE_CHECKS(1);
    recording_handler h;
    strata::heap_source src;
    {
        object_pool<counted> pool(src);
        (void)pool.create(1);
        (void)pool.create(2);
    }
    EXPECT_TRUE(h.saw_one(violation_kind::leak));
    EXPECT_EQ(h.last().allocator, "strata::object_pool");
    EXPECT_NE(h.last().message.find("with 2 live objects"), std::string::npos) << h.last().message;
    EXPECT_EQ(src.outstanding_blocks(), 0u) << "the memory still goes back";
    counted::alive = 0; // their destructors did not run, by design
}

TEST(ObjectPoolChecks, EmptyPoolDestructionIsSilent) {
    recording_handler h;
    strata::heap_source src;
    {
        object_pool<counted> pool(src);
        pool.destroy(pool.create(1));
    }
    EXPECT_TRUE(h.empty());
}

struct payload {
    explicit payload(std::uint64_t v) noexcept : value(v) {}
    std::uint64_t value;
    std::byte rest[40];
};

TEST(ObjectPoolRandomized, MillionOpsAgainstTheReferenceModel) {
    strata::heap_source src;
    object_pool<payload> pool(src, strata::pool_options{32, SIZE_MAX});
    strata::test::reference_model model; // covers the bytes after `value`
    std::vector<payload*> live;
    std::mt19937_64 rng(0x0B1EC7);
    constexpr std::size_t ops = 1'000'000;
    for (std::size_t i = 0; i < ops; ++i) {
        if (live.empty() || (live.size() < 2500 && rng() % 2 == 0)) {
            payload* p = pool.create(i);
            ASSERT_NE(p, nullptr);
            model.add(p->rest, sizeof(p->rest), 1);
            live.push_back(p);
        } else {
            const std::size_t k = rng() % live.size();
            model.remove(live[k]->rest);
            pool.destroy(live[k]);
            live[k] = live.back();
            live.pop_back();
        }
        if (i % 200'000 == 0) {
            ASSERT_TRUE(pool.check()) << i;
        }
    }
    EXPECT_EQ(pool.live(), live.size());
    for (payload* p : live) {
        model.remove(p->rest);
        pool.destroy(p);
    }
    EXPECT_TRUE(pool.check());
    EXPECT_EQ(pool.live(), 0u);
}

} // namespace
