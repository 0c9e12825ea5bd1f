#include "strata/source/virtual_memory.hpp"

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/align.hpp"
#include "strata/core/poison.hpp"

#include "support/recording_handler.hpp"
#include "support/reference_model.hpp"

namespace {

static_assert(strata::memory_source<strata::virtual_memory_source>);

const std::size_t page = strata::virtual_memory::page_size();

TEST(VirtualMemory, PageSizeIsAPowerOfTwo) {
    EXPECT_GE(page, 4096u);
    EXPECT_TRUE(strata::is_pow2(page));
}

TEST(VirtualMemory, ReserveCommitWriteDecommitRelease) {
    std::error_code ec;
    strata::virtual_memory vm = strata::virtual_memory::reserve(64 * page + 1, ec);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(vm.reserved());
    EXPECT_EQ(vm.size(), 65 * page) << "rounded up to whole pages";
    EXPECT_TRUE(strata::is_aligned(vm.data(), page));

    ASSERT_TRUE(vm.commit(page, 2 * page));
    std::memset(vm.data() + page, 0xAB, 2 * page);
    EXPECT_EQ(vm.data()[page], std::byte{0xAB});
    EXPECT_TRUE(vm.decommit(page, 2 * page));
    ASSERT_TRUE(vm.commit(page, 2 * page));
    EXPECT_EQ(vm.data()[page], std::byte{0}) << "decommitted pages come back zeroed";
    EXPECT_TRUE(vm.contains(vm.data() + vm.size() - 1));
    EXPECT_FALSE(vm.contains(vm.data() + vm.size()));
    vm.release();
    EXPECT_FALSE(vm.reserved());
}

TEST(VirtualMemory, EmptyRangesTouchNoPage) {
    strata::virtual_memory vm = strata::virtual_memory::reserve(4 * page);
    ASSERT_TRUE(vm.commit(0, page));
    std::memset(vm.data(), 0x5A, page);
    EXPECT_TRUE(vm.protect(page - 1, 0)); // rounded out it was the whole first page
    EXPECT_EQ(vm.data()[page - 1], std::byte{0x5A}) << "still readable";
    EXPECT_TRUE(vm.commit(page + 5, 0)); // nor did it commit the second
    EXPECT_TRUE(vm.decommit(5, 0));
    EXPECT_TRUE(vm.hint_huge_pages(7, 0));
    EXPECT_EQ(vm.data()[0], std::byte{0x5A});
}

TEST(VirtualMemory, RangesOutsideTheReservationAreRefused) {
    strata::virtual_memory vm = strata::virtual_memory::reserve(4 * page);
    EXPECT_FALSE(vm.commit(3 * page, 2 * page));
    EXPECT_FALSE(vm.commit(5 * page, 1));
    EXPECT_FALSE(vm.decommit(0, std::numeric_limits<std::size_t>::max()));
    EXPECT_FALSE(vm.protect(4 * page + 1, 0));
    strata::virtual_memory empty;
    EXPECT_FALSE(empty.commit(0, 1));
}

TEST(VirtualMemory, ReserveTooLargeIsAClearError) {
    std::error_code ec;
    const std::size_t huge = std::size_t{1} << 62; // far beyond the 47-bit user address space
    strata::virtual_memory vm = strata::virtual_memory::reserve(huge, ec);
    EXPECT_FALSE(vm.reserved());
    EXPECT_EQ(ec, std::errc::not_enough_memory);

    vm = strata::virtual_memory::reserve(std::numeric_limits<std::size_t>::max(), ec);
    EXPECT_EQ(ec, std::errc::value_too_large);
    vm = strata::virtual_memory::reserve(0, ec);
    EXPECT_EQ(ec, std::errc::invalid_argument);

    try {
        (void)strata::virtual_memory::reserve(huge);
        FAIL() << "expected std::system_error";
    } catch (const std::system_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("cannot reserve 4611686018427387904 bytes"), std::string::npos) << what;
        EXPECT_EQ(e.code(), std::errc::not_enough_memory);
    }
}

#if STRATA_ASAN
// Decommitted pages read back as zero when committed again, and whoever gets them next must not
// inherit the poison an allocator left there.
TEST(VirtualMemory, DecommitAndReleaseClearTheAsanShadow) {
    auto vm = strata::virtual_memory::reserve(4 * page);
    ASSERT_TRUE(vm.commit(0, 2 * page));
    strata::poison(vm.data(), 2 * page);
    ASSERT_TRUE(vm.decommit(0, page));
    ASSERT_TRUE(vm.commit(0, page));
    EXPECT_FALSE(__asan_address_is_poisoned(vm.data()));
    EXPECT_FALSE(__asan_address_is_poisoned(vm.data() + page - 1));
    EXPECT_TRUE(__asan_address_is_poisoned(vm.data() + page)) << "still committed, still poisoned";
    std::byte* const base = vm.data();
    vm.release();
    EXPECT_FALSE(__asan_address_is_poisoned(base + page)) << "release unpoisons what was committed";
}
#endif

TEST(VirtualMemory, MoveTransfersOwnership) {
    strata::virtual_memory a = strata::virtual_memory::reserve(page);
    std::byte* data = a.data();
    strata::virtual_memory b = std::move(a);
    EXPECT_FALSE(a.reserved()); // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    EXPECT_EQ(b.data(), data);
    a = std::move(b);
    EXPECT_EQ(a.data(), data);
}

TEST(VirtualMemory, HugePageHintIsHarmless) {
    strata::virtual_memory vm = strata::virtual_memory::reserve(std::size_t{4} << 20);
    ASSERT_TRUE(vm.commit(0, vm.size()));
    for (std::size_t i = 0; i < vm.size(); i += page)
        vm.data()[i] = static_cast<std::byte>(i / page + 1);
    (void)vm.hint_huge_pages(0, vm.size()); // may be unsupported; must not change contents
    for (std::size_t i = 0; i < vm.size(); i += page)
        ASSERT_EQ(vm.data()[i], static_cast<std::byte>(i / page + 1)) << "page " << i / page;
}

TEST(VirtualMemoryDeathTest, UncommittedAndGuardPagesFault) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            strata::virtual_memory vm = strata::virtual_memory::reserve(2 * page);
            *reinterpret_cast<volatile char*>(vm.data()) = 1; // reserved, never committed
        },
        "");
    EXPECT_DEATH(
        {
            strata::virtual_memory vm = strata::virtual_memory::reserve(2 * page);
            (void)vm.commit(0, 2 * page);
            vm.protect(page, page);
            vm.data()[0] = std::byte{1};                             // still fine
            *reinterpret_cast<volatile char*>(vm.data() + page) = 1; // the guard page
        },
        "");
    EXPECT_DEATH(
        {
            strata::virtual_memory vm = strata::virtual_memory::reserve(2 * page);
            (void)vm.commit(0, page);
            (void)vm.commit(page + 5, 0); // empty: must not round out to the second page
            *reinterpret_cast<volatile char*>(vm.data() + page + 5) = 1;
        },
        "");
}

TEST(VirtualMemorySource, CommitsOnDemandAndReusesTheLastRange) {
    strata::virtual_memory_source source(std::size_t{1} << 20);
    const auto a = source.allocate_block(100, 16);
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a.size, page) << "rounded up to a page";
    EXPECT_EQ(source.committed_bytes(), page);
    std::memset(a.data, 1, a.size);
    const auto b = source.allocate_block(3 * page, 2 * page);
    ASSERT_FALSE(b.empty());
    EXPECT_TRUE(strata::is_aligned(b.data, 2 * page));
    EXPECT_EQ(source.committed_bytes(), 4 * page);
    source.deallocate_block(b);
    EXPECT_EQ(source.committed_bytes(), page);
    const auto c = source.allocate_block(3 * page, 2 * page);
    EXPECT_EQ(c.data, b.data) << "the most recent range is reused";
    source.deallocate_block(c);
    source.deallocate_block(a);
    EXPECT_EQ(source.committed_bytes(), 0u);
}

// A pool frees its chunks in address order. With one level of undo only the highest range came
// back, so create-grow-destroy cycles ran the reservation dry with nothing in use.
TEST(VirtualMemorySource, FreedRangesBelowTheTopComeBackWithIt) {
    strata::virtual_memory_source source(8 * page);
    for (int round = 0; round < 8; ++round) {
        strata::memory_block b[3];
        for (auto& x : b) {
            x = source.allocate_block(page, 8);
            ASSERT_FALSE(x.empty()) << "round " << round;
        }
        for (const auto& x : b) // lowest first, as pool::release_chunks
            source.deallocate_block(x);
        EXPECT_EQ(source.committed_bytes(), 0u);
    }
    // Lower blocks freed while a higher one lives: the top comes down through all of them once it
    // goes, even with a block still live below.
    const auto keep = source.allocate_block(page, 8);
    const auto a = source.allocate_block(page, 8);
    const auto b = source.allocate_block(2 * page, 8);
    const auto c = source.allocate_block(page, 8);
    source.deallocate_block(a);
    source.deallocate_block(b);
    source.deallocate_block(c);
    EXPECT_EQ(source.committed_bytes(), page);
    const auto big = source.allocate_block(7 * page, 8);
    ASSERT_FALSE(big.empty()) << "everything above `keep` is reusable";
    EXPECT_EQ(big.data, a.data);
    source.deallocate_block(big);
    source.deallocate_block(keep);
    EXPECT_FALSE(source.allocate_block(8 * page, 8).empty()) << "all freed: the whole reservation";
}

TEST(VirtualMemorySource, AlignsTheAddressNotTheOffset) {
    // A reservation is only page-aligned (a large one is often 2 MiB-aligned): alignments up to
    // 16 MiB go past what the base happens to have. Aligning the offset instead of the address
    // passed the test above only when the base was 2-page aligned.
    strata::virtual_memory_source source(std::size_t{64} << 20);
    for (std::size_t align = 2 * page; align <= (std::size_t{16} << 20); align *= 2) {
        const auto b = source.allocate_block(page, align);
        ASSERT_FALSE(b.empty()) << "align " << align;
        EXPECT_TRUE(strata::is_aligned(b.data, align)) << "align " << align;
        EXPECT_TRUE(source.reservation().contains(b.data));
        source.deallocate_block(b);
        EXPECT_EQ(source.committed_bytes(), 0u);
    }
}

TEST(VirtualMemorySource, ExhaustionAndBadRequestsGiveEmptyBlocks) {
    strata::virtual_memory_source source(4 * page);
    EXPECT_TRUE(source.allocate_block(0, 8).empty());
    EXPECT_TRUE(source.allocate_block(page, 3).empty());
    EXPECT_TRUE(source.allocate_block(5 * page, 8).empty());
    EXPECT_TRUE(source.allocate_block(std::numeric_limits<std::size_t>::max(), 8).empty());
    const auto all = source.allocate_block(4 * page, 8);
    EXPECT_FALSE(all.empty());
    EXPECT_TRUE(source.allocate_block(1, 8).empty());
    EXPECT_EQ(source.committed_bytes(), 4 * page);
}

// The reviewer's case: 34 one-page blocks freed lowest-first under a live one. A 32-entry list
// dropped the 33rd and 34th, and the top then stopped at them: 63 free pages, no 40-page block.
TEST(VirtualMemorySource, EveryFreedRangeIsReusableWhileABlockLives) {
    strata::virtual_memory_source source(64 * page);
    const auto keep = source.allocate_block(page, 8);
    std::vector<strata::memory_block> b;
    for (int i = 0; i < 34; ++i)
        b.push_back(source.allocate_block(page, 8));
    const auto high = source.allocate_block(page, 8);
    for (const auto& x : b) // lowest first: each becomes a hole, merged with the one below
        source.deallocate_block(x);
    EXPECT_EQ(source.holes(), 1u) << "34 adjacent frees are one hole";
    EXPECT_TRUE(source.check());
    const auto big = source.allocate_block(34 * page, 8);
    ASSERT_FALSE(big.empty()) << "the hole is reused below a live block";
    EXPECT_EQ(big.data, b.front().data);
    EXPECT_EQ(source.holes(), 0u);
    source.deallocate_block(big);
    source.deallocate_block(high);
    EXPECT_EQ(source.holes(), 0u) << "the top came down through the hole";
    EXPECT_EQ(source.free_address_space(), 63 * page);
    EXPECT_FALSE(source.allocate_block(63 * page, 8).empty());
    EXPECT_TRUE(source.check());
    EXPECT_EQ(source.committed_bytes(), keep.size + 63 * page);
}

// Alignment padding in front of a block that is not the most recent comes back with the block:
// cycles of three blocks never run the reservation dry.
TEST(VirtualMemorySource, AlignmentPaddingComesBackWithItsBlock) {
    strata::virtual_memory_source source(64 * page);
    const auto keep = source.allocate_block(page, 8);
    const std::size_t free_at_start = source.free_address_space();
    for (int round = 0; round < 200; ++round) {
        const auto a = source.allocate_block(page, 8);
        const auto b = source.allocate_block(page, 4 * page);
        const auto c = source.allocate_block(page, 8);
        ASSERT_FALSE(a.empty() || b.empty() || c.empty()) << "round " << round;
        EXPECT_TRUE(strata::is_aligned(b.data, 4 * page));
        for (const auto& x : {a, b, c})
            source.deallocate_block(x);
        ASSERT_TRUE(source.check()) << "round " << round;
        ASSERT_EQ(source.free_address_space(), free_at_start) << "round " << round;
    }
    EXPECT_EQ(source.holes(), 0u);
    source.deallocate_block(keep);
}

// What slab_cache asks for: blocks aligned to their own size, with guard pages, so every block
// after the first is padded. Freed lowest-first in rounds of three, under a live one.
TEST(VirtualMemorySource, SelfAlignedGuardedBlocksDoNotLeakAddressSpace) {
    const std::size_t slab = 16 * page;
    strata::virtual_memory_source source(64 * slab, {.guard_pages = true});
    const auto keep = source.allocate_block(slab, slab);
    for (int round = 0; round < 300; ++round) {
        strata::memory_block b[3];
        for (auto& x : b) {
            x = source.allocate_block(slab, slab);
            ASSERT_FALSE(x.empty()) << "round " << round;
        }
        for (const auto& x : b)
            source.deallocate_block(x);
        ASSERT_TRUE(source.check()) << "round " << round;
    }
    EXPECT_EQ(source.committed_bytes(), slab);
    source.deallocate_block(keep);
    EXPECT_EQ(source.free_address_space(), source.reserved_bytes());
}

TEST(VirtualMemorySource, TheLowestHoleThatFitsIsUsedFirst) {
    strata::virtual_memory_source source(64 * page);
    const auto a = source.allocate_block(page, 8);
    const auto b = source.allocate_block(3 * page, 8);
    const auto c = source.allocate_block(page, 8);
    const auto d = source.allocate_block(2 * page, 8);
    const auto e = source.allocate_block(page, 8);
    source.deallocate_block(b); // hole of 3 pages
    source.deallocate_block(d); // hole of 2 pages
    EXPECT_EQ(source.holes(), 2u);
    const auto two = source.allocate_block(2 * page, 8);
    EXPECT_EQ(two.data, b.data) << "first fit: the lower hole, its last page stays a hole";
    const auto one = source.allocate_block(page, 8);
    EXPECT_EQ(one.data, b.data + 2 * page);
    const auto aligned = source.allocate_block(page, 2 * page); // d's hole holds one aligned page
    ASSERT_FALSE(aligned.empty());
    EXPECT_TRUE(strata::is_aligned(aligned.data, 2 * page));
    EXPECT_TRUE(aligned.data == d.data || aligned.data == d.data + page);
    EXPECT_EQ(source.holes(), 1u) << "the other page of d's hole";
    EXPECT_TRUE(source.check());
    for (const auto& x : {a, c, e, two, one, aligned})
        source.deallocate_block(x);
    EXPECT_EQ(source.free_address_space(), source.reserved_bytes());
    EXPECT_TRUE(source.check());
}

TEST(VirtualMemorySource, BadBlocksAreReportedAndChangeNothing) {
    strata::test::recording_handler h;
    strata::virtual_memory_source source(16 * page);
    const auto a = source.allocate_block(2 * page, 8);
    const auto b = source.allocate_block(page, 8);
    alignas(64) std::byte outside[64];
    const std::vector<strata::memory_block> foreign = {
        {outside, sizeof outside, 8}, // not from the reservation
        {a.data + 1, page, 8},        // not page-aligned
        {a.data, page + 1, 8},        // not whole pages
        {a.data, 0, 8},               // no size (not an empty block: data is set)
        {b.data, 4 * page, 8},        // past the highest block
        {b.data + page, page, 8},     // at the top
        {b.data + 3 * page, page, 8}, // above the top (the checks once wrapped there)
    };
    for (const auto& x : foreign) {
        h.clear();
        source.deallocate_block(x);
        if (strata::test::checks_on) {
            EXPECT_TRUE(h.saw_one(strata::violation_kind::foreign_pointer));
        }
        EXPECT_EQ(source.committed_bytes(), 3 * page);
        EXPECT_TRUE(source.check());
    }
    source.deallocate_block(a);
    h.clear();
    source.deallocate_block(a); // a is a hole now
    if (strata::test::checks_on) {
        EXPECT_TRUE(h.saw_one(strata::violation_kind::double_free));
    }
    h.clear();
    source.deallocate_block({a.data + page, page, 8}); // half of the hole
    if (strata::test::checks_on) {
        EXPECT_TRUE(h.saw_one(strata::violation_kind::double_free));
    }
    EXPECT_EQ(source.committed_bytes(), page);
    EXPECT_EQ(source.holes(), 1u);
    EXPECT_TRUE(source.check());
    source.deallocate_block(b);
    EXPECT_EQ(source.free_address_space(), source.reserved_bytes());
}

TEST(VirtualMemorySource, ABlockFreedAgainAfterTheTopCameDownPastItIsRefused) {
    strata::test::recording_handler h;
    strata::virtual_memory_source source(16 * page);
    const auto a = source.allocate_block(page, 8);
    const auto b = source.allocate_block(page, 8);
    const auto c = source.allocate_block(page, 8);
    source.deallocate_block(c); // the top comes down to b's end
    source.deallocate_block(b); // and to a's
    h.clear();
    source.deallocate_block(c); // above the top now: not counted as a live block going back
    if (strata::test::checks_on) {
        EXPECT_TRUE(h.saw_one(strata::violation_kind::foreign_pointer));
    }
    EXPECT_EQ(source.committed_bytes(), page);
    EXPECT_TRUE(source.check());
    const auto d = source.allocate_block(page, 8);
    EXPECT_NE(d.data, a.data) << "a is live: nothing may be handed out over it";
    EXPECT_EQ(source.committed_bytes(), 2 * page);
    source.deallocate_block(d);
    source.deallocate_block(a);
    EXPECT_EQ(source.committed_bytes(), 0u);
    EXPECT_EQ(source.free_address_space(), source.reserved_bytes());
}

TEST(VirtualMemorySource, MovedFromSourceHandsOutNothing) {
    strata::virtual_memory_source a(16 * page);
    const auto x = a.allocate_block(page, 8);
    strata::virtual_memory_source b(std::move(a));
    EXPECT_TRUE(a.allocate_block(page, 8).empty()); // NOLINT(bugprone-use-after-move): by contract
    EXPECT_EQ(b.committed_bytes(), page);
    EXPECT_TRUE(b.reservation().contains(x.data));
    a = std::move(b);
    a.deallocate_block(x);
    EXPECT_EQ(a.committed_bytes(), 0u);
    EXPECT_TRUE(a.check());
}

// Random blocks (1-8 pages, alignments of 1-16 pages, guard pages on and off) against a reference
// model: no overlap, alignment, contents kept, the books balanced after every call.
TEST(VirtualMemorySource, RandomBlocksAgainstAReferenceModel) {
    for (const bool guard : {false, true}) {
        strata::virtual_memory_source source(512 * page, {.guard_pages = guard});
        strata::test::reference_model model;
        std::vector<strata::memory_block> live;
        std::mt19937_64 rng(guard ? 7 : 11);
        std::size_t failures = 0;
        for (int op = 0; op < 6000; ++op) {
            if (live.empty() || rng() % 100 < 55) {
                const std::size_t size = (1 + rng() % 8) * page - rng() % page;
                const std::size_t align = std::size_t{1} << (rng() % 17); // 1 B .. 16 pages
                const auto b = source.allocate_block(size, align);
                if (b.empty()) {
                    ++failures;
                    continue;
                }
                ASSERT_GE(b.size, size);
                ASSERT_TRUE(strata::is_aligned(b.data, std::max(align, page)));
                model.add(b.data, b.size, std::max(align, page));
                live.push_back(b);
            } else {
                const std::size_t k = rng() % live.size();
                model.remove(live[k].data);
                source.deallocate_block(live[k]);
                live[k] = live.back();
                live.pop_back();
            }
            ASSERT_TRUE(source.check()) << "op " << op;
        }
        EXPECT_GT(failures, 0u) << "the reservation was filled at times";
        EXPECT_LT(failures, 1500u);
        model.verify_all();
        std::shuffle(live.begin(), live.end(), rng);
        for (const auto& b : live) {
            model.remove(b.data);
            source.deallocate_block(b);
            ASSERT_TRUE(source.check());
        }
        EXPECT_EQ(source.committed_bytes(), 0u);
        EXPECT_EQ(source.holes(), 0u);
        EXPECT_EQ(source.free_address_space(), source.reserved_bytes());
    }
}

TEST(VirtualMemorySource, ReserveFailureThrows) {
    EXPECT_THROW(strata::virtual_memory_source(std::size_t{1} << 62), std::system_error);
}

TEST(VirtualMemorySourceDeathTest, GuardPageAfterEachBlockFaults) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    strata::virtual_memory_source source(std::size_t{1} << 20, {.guard_pages = true});
    const auto b = source.allocate_block(page, 8);
    ASSERT_FALSE(b.empty());
    b.data[page - 1] = std::byte{1};
    const auto next = source.allocate_block(page, 8);
    EXPECT_EQ(next.data, b.data + 2 * page) << "one guard page between blocks";
    EXPECT_DEATH(*reinterpret_cast<volatile char*>(b.data + page) = 1, "");
}

} // namespace
