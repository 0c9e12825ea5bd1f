// The allocator concepts and helpers of core/allocator.hpp: what each concept asks for (noexcept
// verbs, the exact return types), and strata::claims / strata::holds, which fall back to owns()
// and to false where an allocator has no member of its own.
#include "strata/core/allocator.hpp"

#include <cstddef>
#include <type_traits>

#include <gtest/gtest.h>

#include "strata/core/stats.hpp"

namespace {

// The smallest allocator: the three verbs.
struct minimal {
    void* allocate(std::size_t, std::size_t) noexcept { return nullptr; }
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    strata::stats stats() const noexcept { return {}; }
};

// allocate() may throw: not an allocator.
struct throwing_allocate {
    void* allocate(std::size_t, std::size_t) { return nullptr; }
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    strata::stats stats() const noexcept { return {}; }
};

// stats() of another type: not an allocator.
struct wrong_stats {
    void* allocate(std::size_t, std::size_t) noexcept { return nullptr; }
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    int stats() const noexcept { return 0; }
};

// Every optional verb, with owns() answering for one address and claims()/holds() for others.
struct full : minimal {
    const void* live = nullptr;
    const void* remembered = nullptr;
    const void* held = nullptr;
    bool owns(const void* p) const noexcept { return p == live; }
    bool claims(const void* p) const noexcept { return p == live || p == remembered; }
    bool holds(const void* p) const noexcept { return p == held; }
    void deallocate(void*) noexcept {}
    using minimal::deallocate;
    void reset() noexcept {}
    int mark() const noexcept { return 0; }
    void rewind(int) noexcept {}
};

// owns() only: claims() falls back to it, holds() is false.
struct owning_only : minimal {
    const void* live = nullptr;
    bool owns(const void* p) const noexcept { return p == live; }
};

// owns() that may throw: not an owning allocator.
struct throwing_owns : minimal {
    bool owns(const void*) const { return false; }
};

struct self_verifying : minimal {
    static constexpr bool verifies_frees = true;
};
struct not_self_verifying : minimal {
    static constexpr bool verifies_frees = false;
};

static_assert(strata::allocator<minimal>);
static_assert(!strata::allocator<throwing_allocate>);
static_assert(!strata::allocator<wrong_stats>);
static_assert(!strata::allocator<int>);

static_assert(!strata::owning_allocator<minimal>);
static_assert(strata::owning_allocator<owning_only>);
static_assert(!strata::owning_allocator<throwing_owns>);
static_assert(strata::owning_allocator<full>);

static_assert(!strata::unsized_deallocator<minimal>);
static_assert(strata::unsized_deallocator<full>);
static_assert(!strata::resettable_allocator<minimal>);
static_assert(strata::resettable_allocator<full>);
static_assert(!strata::marking_allocator<minimal>);
static_assert(strata::marking_allocator<full>);

static_assert(strata::self_verifying_allocator<self_verifying>);
static_assert(!strata::self_verifying_allocator<not_self_verifying>);
static_assert(!strata::self_verifying_allocator<minimal>);

static_assert(std::is_aggregate_v<strata::block_info>);

TEST(Allocator, ClaimsFallsBackToOwns) {
    int a = 0, b = 0;
    owning_only o;
    o.live = &a;
    EXPECT_TRUE(strata::claims(o, &a));
    EXPECT_FALSE(strata::claims(o, &b));
}

TEST(Allocator, ClaimsUsesTheAllocatorsOwnWhereItHasOne) {
    int a = 0, b = 0, c = 0;
    full f;
    f.live = &a;
    f.remembered = &b;
    EXPECT_TRUE(strata::claims(f, &a));
    EXPECT_TRUE(strata::claims(f, &b)) << "claimed though not owned";
    EXPECT_FALSE(f.owns(&b));
    EXPECT_FALSE(strata::claims(f, &c));
}

TEST(Allocator, HoldsIsFalseWithoutAMemberAndForwardsWithOne) {
    int a = 0, b = 0;
    owning_only o;
    o.live = &a;
    EXPECT_FALSE(strata::holds(o, &a)) << "no holds(): nothing is held back";
    EXPECT_FALSE(strata::holds(minimal{}, &a));
    full f;
    f.held = &b;
    EXPECT_TRUE(strata::holds(f, &b));
    EXPECT_FALSE(strata::holds(f, &a));
}

} // namespace
