// adapt/free_reports.hpp: which allocators count as reporting and claiming, the routing rule
// fallback and segregator share (routes_to_first: live blocks first, then what is held back, then
// what a freed history remembers), and report_watch, which tells a refused call from one that only
// reported damage.
#include "strata/adapt/free_reports.hpp"

#include <cstddef>

#include <gtest/gtest.h>

#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/core/stats.hpp"

#include "support/recording_handler.hpp"

namespace {

struct minimal {
    void* allocate(std::size_t, std::size_t) noexcept { return nullptr; }
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    strata::stats stats() const noexcept { return {}; }
};
struct owner : minimal {
    const void* live = nullptr;
    bool owns(const void* p) const noexcept { return p == live; }
};
// Like debug<A>: owns() means live, claims() also what it freed, holds() what it holds back.
struct claimer : owner {
    const void* remembered = nullptr;
    const void* held = nullptr;
    bool claims(const void* p) const noexcept { return p == live || p == remembered || p == held; }
    bool holds(const void* p) const noexcept { return p == live || p == held; }
};
struct reporting : minimal {
    static constexpr bool reports_frees = true;
};
struct verifying : minimal {
    static constexpr bool verifies_frees = true;
};

static_assert(!strata::reporting_allocator<minimal>);
static_assert(strata::reporting_allocator<reporting>);
static_assert(strata::reporting_allocator<verifying>); // every self-verifying allocator reports
static_assert(!strata::claiming_allocator<owner>);
static_assert(strata::claiming_allocator<claimer>);
static_assert(!strata::claiming_allocator<minimal>);

TEST(FreeReports, RoutesToFirstWhenFirstOwnsThePointer) {
    int a = 0;
    owner first, second;
    first.live = &a;
    second.live = &a; // both say "mine": the first asked wins
    EXPECT_TRUE(strata::routes_to_first(first, second, &a));
}

TEST(FreeReports, AFirstThatCannotClaimMoreThanItOwnsGetsOnlyItsOwn) {
    int a = 0, b = 0;
    owner first;
    first.live = &a;
    minimal second; // cannot answer owns()
    EXPECT_TRUE(strata::routes_to_first(first, second, &a));
    EXPECT_FALSE(strata::routes_to_first(first, second, &b));
}

TEST(FreeReports, LiveBlocksOfSecondComeBeforeWhatFirstRemembers) {
    int a = 0, b = 0;
    claimer first;
    first.remembered = &a;
    owner second;
    second.live = &a; // a live block of second at an address first's history remembers
    EXPECT_FALSE(strata::routes_to_first(first, second, &a));
    first.remembered = &b; // no side owns b: first claims it (a double free of first's block)
    EXPECT_TRUE(strata::routes_to_first(first, second, &b));
}

TEST(FreeReports, ABlockFirstHoldsBackIsFirstsWhateverSecondSays) {
    int a = 0;
    claimer first;
    first.held = &a; // in first's quarantine
    owner second;
    second.live = &a; // a heap under both says the address is its own
    EXPECT_TRUE(strata::routes_to_first(first, second, &a));
}

TEST(FreeReports, APointerNoSideKnowsIsNotFirsts) {
    int a = 0;
    claimer first;
    owner second;
    EXPECT_FALSE(strata::routes_to_first(first, second, &a));
    minimal blind;
    EXPECT_FALSE(strata::routes_to_first(first, blind, &a));
}

TEST(FreeReports, ReportWatchSeesARefusingReport) {
    strata::test::recording_handler rec;
    const strata::report_watch watch;
    EXPECT_FALSE(watch.refused());
    strata::report_violation({strata::violation_kind::double_free, "test", nullptr, "refused"});
    EXPECT_TRUE(watch.refused());
    EXPECT_EQ(rec.count(), 1u);
}

TEST(FreeReports, ReportWatchIgnoresAReportThatRefusedNothing) {
    strata::test::recording_handler rec;
    const strata::report_watch watch;
    const std::uint64_t before = strata::violations_not_refusing();
    strata::note_violation_not_refusing();
    strata::report_violation({strata::violation_kind::corruption, "test", nullptr, "damage found"});
    EXPECT_EQ(strata::violations_not_refusing(), before + 1);
    EXPECT_FALSE(watch.refused()) << "the call went through";
    strata::report_violation({strata::violation_kind::double_free, "test", nullptr, "refused"});
    EXPECT_TRUE(watch.refused());
}

} // namespace
