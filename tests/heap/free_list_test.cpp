// free_list<Policy> (heap/free_list.hpp): what sets it apart from the other heaps of the contract
// (HeapContract runs every verb, bad input and a long randomized run over it): where each fit
// policy places a block, immediate coalescing in every free order, the free block count,
// for_each_block, add_pool's limits, and a fragmenting randomized run against a reference model
// with check() and the counters checked against a walk.
#include "strata/heap/free_list.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "support/heap_model.hpp"
#include "support/recording_handler.hpp"
#include "support/test_rng.hpp"

namespace {

using strata::test::heap_buffer;
using strata::test::heap_model;
using strata::test::test_rng;

template <class H>
class FreeList : public ::testing::Test {};
using free_lists =
    ::testing::Types<strata::free_list_first_fit, strata::free_list_best_fit, strata::free_list_next_fit>;
TYPED_TEST_SUITE(FreeList, free_lists);

template <class H>
std::size_t walked_free_blocks(const H& h) {
    std::size_t n = 0;
    h.for_each_block([&](const strata::block_info& b) { n += b.used ? 0 : 1; });
    return n;
}

TYPED_TEST(FreeList, FreshPoolIsOneFreeBlock) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    EXPECT_EQ(h.free_block_count(), 1u);
    EXPECT_EQ(h.largest_free_block(), (1u << 16) - TypeParam::pool_overhead - TypeParam::header_size);
    EXPECT_EQ(walked_free_blocks(h), 1u);
    EXPECT_TRUE(h.check());
}

// Blocks are 16-aligned with at least 16 usable bytes, rounded to 16.
TYPED_TEST(FreeList, UsableSizeIsRoundedToSixteen) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    for (const std::size_t size : {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17},
                                   std::size_t{100}, std::size_t{1000}}) {
        void* p = h.allocate(size);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(strata::is_aligned(p, 16));
        EXPECT_GE(h.usable_size(p), std::max<std::size_t>(size, TypeParam::min_payload));
        EXPECT_LT(h.usable_size(p), std::max<std::size_t>(size, TypeParam::min_payload) + 16);
        EXPECT_EQ(h.usable_size(p) % 16, 0u);
        h.deallocate(p);
    }
    EXPECT_EQ(h.free_block_count(), 1u);
}

// Three adjacent blocks freed in each of the six orders: a free block never sits next to another,
// and the heap ends as the one block it started as.
TYPED_TEST(FreeList, CoalescesInEveryFreeOrder) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    const std::size_t initial = h.largest_free_block();
    std::array<int, 3> order{0, 1, 2};
    do {
        std::array<void*, 3> p{h.allocate(100), h.allocate(200), h.allocate(300)};
        void* guard = h.allocate(16); // keeps the third block from merging with the tail
        for (void* q : p)
            ASSERT_NE(q, nullptr);
        std::size_t freed = 0;
        for (const int i : order) {
            h.deallocate(p[static_cast<std::size_t>(i)]);
            ++freed;
            ASSERT_TRUE(h.check());
            EXPECT_EQ(h.free_block_count(), walked_free_blocks(h));
        }
        EXPECT_EQ(h.free_block_count(), 2u) << "the three merged into one; the tail is the other";
        h.deallocate(guard);
        EXPECT_EQ(h.free_block_count(), 1u);
        EXPECT_EQ(h.largest_free_block(), initial);
    } while (std::next_permutation(order.begin(), order.end()));
}

// The free block count is the number of holes: freeing every other block of a run adds one each.
TYPED_TEST(FreeList, FreeBlockCountCountsTheHoles) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    std::vector<void*> v;
    for (int i = 0; i < 20; ++i)
        v.push_back(h.allocate(64));
    EXPECT_EQ(h.free_block_count(), 1u) << "the tail";
    for (std::size_t i = 0; i < v.size(); i += 2)
        h.deallocate(v[i]);
    EXPECT_EQ(h.free_block_count(), 11u);
    EXPECT_EQ(h.metrics().free_blocks, 11u);
    EXPECT_EQ(walked_free_blocks(h), 11u);
    for (std::size_t i = 1; i < v.size(); i += 2)
        h.deallocate(v[i]);
    EXPECT_EQ(h.free_block_count(), 1u);
    EXPECT_TRUE(h.check());
}

// for_each_block: every block in address order, payloads and headers tiling the pool exactly.
TYPED_TEST(FreeList, ForEachBlockWalksThePoolInAddressOrder) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    void* a = h.allocate(100);
    void* b = h.allocate(500);
    void* c = h.allocate(40);
    h.deallocate(b);
    std::vector<strata::block_info> blocks;
    h.for_each_block([&](const strata::block_info& i) { blocks.push_back(i); });
    ASSERT_EQ(blocks.size(), 4u);
    EXPECT_TRUE(blocks[0].used);
    EXPECT_FALSE(blocks[1].used);
    EXPECT_TRUE(blocks[2].used);
    EXPECT_FALSE(blocks[3].used);
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        if (i > 0) {
            EXPECT_EQ(blocks[i].offset, blocks[i - 1].offset + blocks[i - 1].size + TypeParam::header_size);
        }
        bytes += blocks[i].size + TypeParam::header_size;
    }
    EXPECT_EQ(bytes + TypeParam::pool_overhead, std::size_t{1} << 16);
    EXPECT_EQ(blocks[0].size, h.usable_size(a));
    EXPECT_EQ(blocks[2].size, h.usable_size(c));
    h.deallocate(a);
    h.deallocate(c);
}

// add_pool: a pool under 80 bytes is refused; later pools serve when the first is full, and owns()
// answers for each.
TYPED_TEST(FreeList, AddPoolLimitsAndSeveralPools) {
    heap_buffer small(79), first(4096), second(4096);
    TypeParam h;
    EXPECT_FALSE(h.add_pool(small.span()));
    EXPECT_EQ(h.allocate(1), nullptr) << "no pool";
    ASSERT_TRUE(h.add_pool(first.span()));
    void* a = h.allocate(3000);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(h.allocate(3000), nullptr);
    ASSERT_TRUE(h.add_pool(second.span()));
    void* b = h.allocate(3000);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(h.owns(a));
    EXPECT_TRUE(h.owns(b));
    EXPECT_GE(static_cast<std::byte*>(b), second.data());
    EXPECT_LT(static_cast<std::byte*>(b), second.data() + 4096);
    EXPECT_EQ(h.free_block_count(), 2u);
    EXPECT_TRUE(h.check());
    h.deallocate(a);
    h.deallocate(b);
    EXPECT_EQ(h.free_block_count(), 2u) << "pools never merge";
    int local = 0;
    EXPECT_FALSE(h.owns(&local));
}

// At checks >= 1 a free of a pointer outside every pool is reported and ignored.
TYPED_TEST(FreeList, ForeignFreeIsReportedAndIgnored) {
    STRATA_REQUIRE_CHECKS(1);
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    void* p = h.allocate(64);
    const auto before = h.stats();
    strata::test::recording_handler rec;
    heap_buffer other(256);
    h.deallocate(other.data() + 64);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    EXPECT_EQ(h.stats(), before);
    EXPECT_TRUE(h.check());
    h.deallocate(p);
}

// Where each policy places a block. Holes of 400 and 1000 bytes lie below the tail; a request for
// 800 and then one for 100:
// - first_fit takes the lowest hole that fits each time: 800 in the 1000-byte hole, 100 in the
//   400-byte hole;
// - best_fit takes the smallest that fits: 800 in the 1000-byte hole, 100 in what is left of it
//   (184 bytes, smaller than the 400-byte hole);
// - next_fit goes on from where the last search stopped: the 100 lands above the 800, never back
//   in the 400-byte hole below it.
TYPED_TEST(FreeList, FitPolicyPlacesBlocks) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    auto* h400 = static_cast<std::byte*>(h.allocate(400));
    void* s1 = h.allocate(16);
    auto* h1000 = static_cast<std::byte*>(h.allocate(1000));
    void* s2 = h.allocate(16);
    ASSERT_TRUE(h400 && s1 && h1000 && s2);
    h.deallocate(h400);
    h.deallocate(h1000);
    ASSERT_EQ(h.free_block_count(), 3u);
    auto* p800 = static_cast<std::byte*>(h.allocate(800));
    auto* p100 = static_cast<std::byte*>(h.allocate(100));
    ASSERT_TRUE(p800 && p100);
    if constexpr (std::is_same_v<TypeParam, strata::free_list_first_fit>) {
        EXPECT_EQ(p800, h1000);
        EXPECT_EQ(p100, h400);
    } else if constexpr (std::is_same_v<TypeParam, strata::free_list_best_fit>) {
        EXPECT_EQ(p800, h1000);
        EXPECT_EQ(p100, h1000 + 800 + TypeParam::header_size);
    } else {
        EXPECT_GT(p100, p800);
        EXPECT_NE(p100, h400);
    }
    EXPECT_TRUE(h.check());
    for (void* q : {static_cast<void*>(p800), static_cast<void*>(p100), s1, s2})
        h.deallocate(q);
    EXPECT_EQ(h.free_block_count(), 1u);
}

// best_fit stops at an exact fit; first_fit and next_fit do too when it is the first fit they meet.
TYPED_TEST(FreeList, AnExactFitIsTakenWhole) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    void* a = h.allocate(256);
    void* s = h.allocate(16);
    h.deallocate(a);
    const std::size_t holes = h.free_block_count();
    void* b = h.allocate(256);
    if constexpr (!std::is_same_v<TypeParam, strata::free_list_next_fit>) {
        EXPECT_EQ(b, a);
        EXPECT_EQ(h.free_block_count(), holes - 1) << "no split remainder";
    }
    h.deallocate(b);
    h.deallocate(s);
    EXPECT_TRUE(h.check());
}

// A fragmenting run: random sizes and alignments, frees in any order, check() and the counters
// against a walk every few hundred operations; every block keeps its contents, and once everything
// is freed the pool is one block again.
TYPED_TEST(FreeList, RandomizedFragmentationAgainstModel) {
    heap_buffer buf(1 << 20);
    TypeParam h(buf.span());
    const std::size_t initial = h.largest_free_block();
    heap_model model;
    std::vector<void*> live;
    test_rng rng{0xF4EE};
    for (int op = 0; op < 60000; ++op) {
        if (live.empty() || rng.next() % 100 < 52) {
            const std::size_t size = rng.next() % 8 == 0 ? rng.between(1000, 20000) : rng.between(1, 300);
            const std::size_t align = std::size_t{1} << rng.between(0, 7);
            void* p = h.allocate(size, align);
            if (p == nullptr) continue;
            ASSERT_TRUE(model.add(p, size, align)) << "op " << op;
            ASSERT_GE(h.usable_size(p), size);
            live.push_back(p);
        } else {
            const std::size_t i = rng.next() % live.size();
            ASSERT_TRUE(model.remove(live[i])) << "op " << op;
            h.deallocate(live[i]);
            live[i] = live.back();
            live.pop_back();
        }
        if (op % 512 == 0) {
            ASSERT_TRUE(h.check()) << "op " << op;
            ASSERT_EQ(h.free_block_count(), walked_free_blocks(h)) << "op " << op;
            ASSERT_EQ(h.stats().live_allocations, live.size());
            ASSERT_EQ(h.largest_free_block(), h.metrics().largest_free_block);
        }
    }
    ASSERT_TRUE(model.verify_all());
    for (void* p : live) {
        ASSERT_TRUE(model.remove(p));
        h.deallocate(p);
    }
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.free_block_count(), 1u);
    EXPECT_EQ(h.largest_free_block(), initial);
    EXPECT_EQ(h.stats().in_use, 0u);
}

} // namespace
