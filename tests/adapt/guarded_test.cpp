#include "strata/adapt/guarded.hpp"

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "strata/source/virtual_memory.hpp"

#include "support/adapt_allocators.hpp"
#include "support/recording_handler.hpp"
#include "support/reference_model.hpp"

namespace {

using strata::guard_options;
using strata::guard_page_allocator;
using strata::guarded;
using strata::guarded_options;
using strata::test::test_arena;
using strata::test::test_heap;
using strata::test::test_tlsf;

static_assert(strata::owning_allocator<guard_page_allocator>);
static_assert(strata::unsized_deallocator<guard_page_allocator>);

guard_options small_reservation() {
    guard_options o;
    o.reserve_bytes = std::size_t{64} << 20;
    return o;
}

std::size_t page() { return strata::virtual_memory::page_size(); }

// Writes through a volatile pointer so the compiler cannot drop or move the faulting store.
void poke(void* p, std::ptrdiff_t at) { static_cast<volatile char*>(p)[at] = 1; }
char peek(const void* p, std::ptrdiff_t at) { return static_cast<const volatile char*>(p)[at]; }

TEST(GuardPage, BlockEndsFlushAgainstTheGuardPage) {
    guard_page_allocator g(small_reservation());
    for (std::size_t size : {std::size_t{1}, std::size_t{13}, std::size_t{4096}, std::size_t{5000}}) {
        auto* p = static_cast<char*>(g.allocate(size, 1));
        ASSERT_NE(p, nullptr);
        EXPECT_EQ((reinterpret_cast<std::uintptr_t>(p) + size) % page(), 0u) << size;
        std::memset(p, 0x5A, size); // every byte usable
        g.deallocate(p, size, 1);
    }
    // With an alignment the end lies within align - 1 bytes of the guard.
    auto* q = static_cast<char*>(g.allocate(13, 16));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % 16, 0u);
    const auto gap = page() - (reinterpret_cast<std::uintptr_t>(q) + 13) % page();
    EXPECT_EQ(gap, 3u);
    g.deallocate(q);
}

TEST(GuardPage, UnderrunModeStartsFlushAgainstTheGuardPage) {
    guard_options o = small_reservation();
    o.underrun = true;
    guard_page_allocator g(o);
    auto* p = static_cast<char*>(g.allocate(100, 64));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % page(), 0u);
    std::memset(p, 1, 100);
    g.deallocate(p);
}

TEST(GuardPage, StatsAndBadInput) {
    guard_page_allocator g(small_reservation());
    EXPECT_EQ(g.allocate(8, page() * 2), nullptr); // alignment above a page (other bad input: tests/contract)
    EXPECT_EQ(g.allocate(std::size_t{1} << 40), nullptr);
    void* a = g.allocate(10);
    void* b = g.allocate(5000);
    auto s = g.stats();
    EXPECT_EQ(s.in_use, 5010u);
    EXPECT_EQ(s.live_allocations, 2u);
    EXPECT_EQ(s.capacity, 3 * page());
    EXPECT_TRUE(g.owns(a));
    int local = 0;
    EXPECT_FALSE(g.owns(&local));
    g.deallocate(a);
    g.deallocate(b);
    s = g.stats();
    EXPECT_EQ(s.in_use, 0u);
    EXPECT_EQ(s.peak, 5010u);
    EXPECT_EQ(s.capacity, 0u);
    EXPECT_EQ(s.total_allocations, 2u);
    g.deallocate(nullptr);
}

TEST(GuardPage, BadFreesAreReportedAndIgnored) {
    STRATA_REQUIRE_CHECKS(1);
    guard_page_allocator g(small_reservation());
    void* p = g.allocate(32);
    strata::test::recording_handler rec;
    g.deallocate(static_cast<char*>(p) + 1); // interior
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
    rec.clear();
    int local = 0;
    g.deallocate(&local);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    rec.clear();
    g.deallocate(p);
    g.deallocate(p);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
    EXPECT_EQ(g.stats().live_allocations, 0u);
}

TEST(GuardPage, QuarantineDelaysReuse) {
    guard_options o = small_reservation();
    o.quarantine_bytes = 4 * page(); // two one-page slots (data + guard)
    guard_page_allocator g(o);
    void* a = g.allocate(8);
    g.deallocate(a);
    void* b = g.allocate(8);
    EXPECT_NE(a, b); // a is quarantined
    g.deallocate(b);
    void* c = g.allocate(8);
    g.deallocate(c); // quarantine now over budget: a's range is free again
    EXPECT_LE(g.quarantined_bytes(), o.quarantine_bytes);
    void* d = g.allocate(8);
    EXPECT_EQ(d, a);
    g.deallocate(d);
}

TEST(GuardPage, RandomizedAgainstModel) {
    guard_options o = small_reservation();
    o.quarantine_bytes = 64 * page();
    guard_page_allocator g(o);
    strata::test::reference_model model;
    std::vector<void*> live;
    std::mt19937_64 rng(0x9a4du);
    for (int op = 0; op < 3000; ++op) {
        if (live.empty() || rng() % 100 < 55) {
            const std::size_t size = 1 + rng() % 9000;
            const std::size_t align = std::size_t{1} << (rng() % 8);
            void* p = g.allocate(size, align);
            ASSERT_NE(p, nullptr);
            model.add(p, size, align);
            live.push_back(p);
        } else {
            const std::size_t i = rng() % live.size();
            model.remove(live[i]);
            g.deallocate(live[i]);
            live[i] = live.back();
            live.pop_back();
        }
        ASSERT_EQ(g.stats().live_allocations, live.size());
    }
    model.verify_all();
    for (void* p : live)
        g.deallocate(p);
    EXPECT_EQ(g.stats().capacity, 0u);
}

// Freed ranges are split and merged, so requests of varying page counts reuse them: a buffer
// growing a page at a time stays within a bounded reservation, with and without a quarantine.
TEST(GuardPage, AGrowingBufferRunsInBoundedAddressSpace) {
    guard_options o;
    o.reserve_bytes = std::size_t{16} << 20;
    o.quarantine_bytes = std::size_t{1} << 20;
    guard_page_allocator g(o);
    void* old = nullptr;
    const std::size_t max_pages = (std::size_t{4} << 20) / page(); // 4 MiB: 8 MiB of slots ever live
    for (std::size_t pages = 1; pages <= max_pages; ++pages) {
        void* p = g.allocate(pages * page(), 16);
        ASSERT_NE(p, nullptr) << pages << " pages";
        static_cast<volatile char*>(p)[pages * page() - 1] = 1;
        g.deallocate(old);
        old = p;
    }
    g.deallocate(old);
    EXPECT_LE(g.quarantined_bytes(), o.quarantine_bytes);
    EXPECT_NE(g.allocate(max_pages * 2 * page(), 1), nullptr); // everything merged back
}

TEST(GuardPage, WithoutQuarantineEverySizeReusesTheSameRange) {
    guard_options o;
    o.reserve_bytes = std::size_t{16} << 20;
    o.quarantine_bytes = 0;
    guard_page_allocator g(o);
    void* first = nullptr;
    for (std::size_t pages = 1; pages < 1000; ++pages) {
        void* p = g.allocate(pages * page(), 1);
        ASSERT_NE(p, nullptr) << pages << " pages";
        if (first == nullptr) first = p;
        EXPECT_EQ(p, first); // the freed range, merged back into the unused tail, serves again
        g.deallocate(p);
    }
}

// Ranges out of quarantine merge with their neighbours whatever the order they are freed in, a
// request takes the smallest range that fits and leaves the rest, and a range still in quarantine
// is neither merged nor reused.
TEST(GuardPage, FreedRangesMergeSplitAndRespectTheQuarantine) {
    guard_options o;
    o.reserve_bytes = 10 * page();
    o.quarantine_bytes = 0;
    guard_page_allocator g(o);
    // Four one-page slots (data + guard: 2 pages each) and a fifth at the top keep the range
    // below it from merging into the unused tail.
    std::vector<char*> s;
    for (int i = 0; i < 5; ++i)
        s.push_back(static_cast<char*>(g.allocate(page(), 1)));
    for (char* p : s)
        ASSERT_NE(p, nullptr);
    EXPECT_EQ(g.allocate(1, 1), nullptr); // full
    g.deallocate(s[1]);
    g.deallocate(s[3]);
    g.deallocate(s[0]);
    g.deallocate(s[2]);
    // 8 pages free below s[4]: one slot of 7 data pages fits, flush against its own guard page.
    auto* big = static_cast<char*>(g.allocate(7 * page(), 1));
    ASSERT_EQ(big, s[0]);
    g.deallocate(big);
    // Split: the smallest range that fits, the rest still free.
    auto* a = static_cast<char*>(g.allocate(page(), 1));
    auto* b = static_cast<char*>(g.allocate(3 * page(), 1));
    auto* c = static_cast<char*>(g.allocate(2 * page(), 1));
    EXPECT_EQ(a, s[0]);
    EXPECT_EQ(b, s[0] + 2 * page());
    EXPECT_EQ(c, nullptr); // 2 pages left, a 2-page block needs 3
    c = static_cast<char*>(g.allocate(page(), 1));
    EXPECT_EQ(c, s[0] + 6 * page());
    g.deallocate(a);
    g.deallocate(b);
    g.deallocate(c);
    g.deallocate(s[4]); // everything free, merged into the tail
    EXPECT_NE(g.allocate(9 * page(), 1), nullptr);
}

TEST(GuardPage, QuarantinedRangesAreNotMergedOrReused) {
    guard_options o;
    o.reserve_bytes = 12 * page();
    o.quarantine_bytes = 2 * page(); // one one-page slot
    guard_page_allocator g(o);
    std::vector<char*> s;
    for (int i = 0; i < 4; ++i)
        s.push_back(static_cast<char*>(g.allocate(page(), 1)));
    g.deallocate(s[0]); // quarantined
    g.deallocate(s[1]); // quarantined, pushes s[0] out: free
    EXPECT_EQ(g.quarantined_bytes(), 2 * page());
    // s[0]'s range alone holds a one-page slot; a two-page slot would need s[1]'s, still held.
    EXPECT_EQ(g.allocate(2 * page(), 1), static_cast<void*>(s[3] + 2 * page())); // from the tail
    EXPECT_EQ(g.allocate(page(), 1), static_cast<void*>(s[0]));
}

// Death tests: each statement runs in a forked child that must die. Under ASan the SIGSEGV is
// reported by ASan's handler, which then exits non-zero: still a death, and ".*" matches it.
TEST(GuardPageDeathTest, OverrunFaults) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    guard_page_allocator g(small_reservation());
    auto* p = static_cast<char*>(g.allocate(100, 1));
    ASSERT_NE(p, nullptr);
    poke(p, 99); // the last byte is fine
    EXPECT_DEATH(poke(p, 100), ".*");
    g.deallocate(p);
}

TEST(GuardPageDeathTest, UnderrunFaultsInUnderrunMode) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    guard_options o = small_reservation();
    o.underrun = true;
    guard_page_allocator g(o);
    auto* p = static_cast<char*>(g.allocate(100, 1));
    ASSERT_NE(p, nullptr);
    poke(p, 0);
    EXPECT_DEATH(poke(p, -1), ".*");
    g.deallocate(p);
}

TEST(GuardPageDeathTest, UseAfterFreeFaults) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    guard_page_allocator g(small_reservation());
    auto* p = static_cast<char*>(g.allocate(64, 1));
    ASSERT_NE(p, nullptr);
    g.deallocate(p);
    EXPECT_DEATH(poke(p, 0), ".*");
    EXPECT_DEATH((void)peek(p, 10), ".*");
    // Still faults after more allocations: the range is quarantined, not reused.
    for (int i = 0; i < 10; ++i)
        g.deallocate(g.allocate(64, 1));
    EXPECT_DEATH(poke(p, 0), ".*");
}

// A slot carved out of merged free ranges commits only its data pages: its guard page (which was a
// data page of an older block) still faults.
TEST(GuardPageDeathTest, ASlotFromMergedRangesKeepsItsGuardPage) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    guard_options o = small_reservation();
    o.quarantine_bytes = 0;
    guard_page_allocator g(o);
    auto* wide = static_cast<char*>(g.allocate(3 * page(), 1)); // data pages 0-2, guard 3
    auto* wall = g.allocate(1, 1);                              // keeps the range off the tail
    ASSERT_NE(wall, nullptr);
    std::memset(wide, 1, 3 * page());
    g.deallocate(wide);
    auto* p = static_cast<char*>(g.allocate(page(), 1)); // data page 0, guard page 1 (was data)
    ASSERT_EQ(p, wide);
    poke(p, static_cast<std::ptrdiff_t>(page()) - 1);
    EXPECT_DEATH(poke(p, static_cast<std::ptrdiff_t>(page())), ".*");
    EXPECT_DEATH((void)peek(p, 2 * static_cast<std::ptrdiff_t>(page())), ".*"); // free: decommitted
    g.deallocate(p);
    g.deallocate(wall);
}

TEST(GuardedDeathTest, GuardedOverAnotherAllocatorFaultsOnOverrun) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    guarded_options o;
    o.guard = small_reservation();
    guarded<test_heap> g(o);
    auto* p = static_cast<char*>(g.allocate(24, 8));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(g.guard().owns(p));
    EXPECT_DEATH(poke(p, 24), ".*");
    g.deallocate(p, 24, 8);
}

// guarded<A> typed over two allocators: routing by the guard's owns().
template <class A>
class GuardedTyped : public ::testing::Test {};
using GuardedBases = ::testing::Types<test_heap, test_arena, test_tlsf>;
TYPED_TEST_SUITE(GuardedTyped, GuardedBases);

TYPED_TEST(GuardedTyped, SamplesEveryNthAndRoutesFrees) {
    guarded_options o;
    o.guard = small_reservation();
    o.sample_every = 3;
    o.max_size = 1000;
    guarded<TypeParam> g(o);
    std::vector<void*> ps;
    for (int i = 0; i < 9; ++i)
        ps.push_back(g.allocate(16));
    void* big = g.allocate(2000); // above max_size: never guarded
    std::size_t in_guard = 0;
    for (void* p : ps) {
        ASSERT_NE(p, nullptr);
        in_guard += g.guard().owns(p) ? 1 : 0;
    }
    EXPECT_EQ(in_guard, 3u);
    EXPECT_FALSE(g.guard().owns(big));
    EXPECT_TRUE(g.owns(big));
    EXPECT_EQ(g.stats().live_allocations,
              g.guard().stats().live_allocations + g.inner().stats().live_allocations);
    g.deallocate(big, 2000);
    for (auto it = ps.rbegin(); it != ps.rend(); ++it)
        g.deallocate(*it, 16);
    EXPECT_EQ(g.guard().stats().live_allocations, 0u);
}

} // namespace
