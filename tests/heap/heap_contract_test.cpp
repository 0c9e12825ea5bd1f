// The contract every pointer heap of the family shares (tlsf with SLI 4 and 5, free_list with the
// three fit policies): every verb, alignment 1..4096, exhaustion, several pools, bad input, the
// adversarial patterns and a long seeded randomized run against a reference model with check().
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/allocator.hpp"
#include "strata/core/poison.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"

#include "support/heap_model.hpp"
#include "support/recording_handler.hpp"
#include "support/test_rng.hpp"

namespace {

using strata::test::heap_buffer;
using strata::test::heap_model;
using strata::test::test_rng;

static_assert(strata::owning_allocator<strata::tlsf>);
static_assert(strata::unsized_deallocator<strata::tlsf>);
static_assert(strata::owning_allocator<strata::free_list_best_fit>);
static_assert(strata::unsized_deallocator<strata::free_list_next_fit>);

template <class H>
class HeapContract : public ::testing::Test {};

using heaps = ::testing::Types<strata::basic_tlsf<4>, strata::basic_tlsf<5>, strata::free_list_first_fit,
                               strata::free_list_best_fit, strata::free_list_next_fit>;
TYPED_TEST_SUITE(HeapContract, heaps);

template <class H>
std::size_t free_blocks(const H& h) {
    return h.metrics().free_blocks;
}

TYPED_TEST(HeapContract, AllocateAndFreeOneBlock) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    ASSERT_TRUE(h.check());
    const std::size_t initial = h.largest_free_block();
    EXPECT_EQ(initial, (1u << 16) - TypeParam::pool_overhead - TypeParam::header_size);
    void* p = h.allocate(100);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(strata::is_aligned(p, 16));
    EXPECT_TRUE(h.owns(p));
    EXPECT_GE(h.usable_size(p), 100u);
    EXPECT_EQ(h.stats().live_allocations, 1u);
    EXPECT_EQ(h.stats().in_use, h.usable_size(p));
    EXPECT_EQ(h.metrics().requested_bytes, 100u);
    EXPECT_TRUE(h.check());
    h.deallocate(p, 100, 16);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().in_use, 0u);
    EXPECT_EQ(h.stats().total_allocations, 1u);
    EXPECT_EQ(h.largest_free_block(), initial);
    EXPECT_EQ(free_blocks(h), 1u);
    h.deallocate(nullptr); // no-op
    EXPECT_TRUE(h.check());
}

TYPED_TEST(HeapContract, EveryAlignmentFrom1To4096) {
    heap_buffer buf(1 << 20);
    TypeParam h(buf.span());
    heap_model model;
    std::vector<void*> ptrs;
    for (std::size_t align = 1; align <= 4096; align *= 2) {
        for (std::size_t size : {std::size_t{1}, std::size_t{17}, std::size_t{100}, std::size_t{4096}}) {
            void* p = h.allocate(size, align);
            ASSERT_TRUE(model.add(p, size, align)) << "size " << size << " align " << align;
            ptrs.push_back(p);
            ASSERT_TRUE(h.check());
        }
    }
    ASSERT_TRUE(model.verify_all());
    for (std::size_t i = 0; i < ptrs.size(); i += 2) {
        ASSERT_TRUE(model.remove(ptrs[i]));
        h.deallocate(ptrs[i]);
        ASSERT_TRUE(h.check());
    }
    for (std::size_t i = 1; i < ptrs.size(); i += 2) {
        ASSERT_TRUE(model.remove(ptrs[i]));
        h.deallocate(ptrs[i]);
    }
    EXPECT_TRUE(h.check());
    EXPECT_EQ(free_blocks(h), 1u);
}

TYPED_TEST(HeapContract, ExhaustionThenRecovery) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    std::vector<void*> ptrs;
    for (;;) {
        void* p = h.allocate(1000);
        if (p == nullptr) break;
        ptrs.push_back(p);
    }
    EXPECT_GE(ptrs.size(), 60u);
    EXPECT_TRUE(h.check());
    const auto before = h.stats();
    EXPECT_EQ(h.allocate(1000), nullptr); // exhaustion changes nothing
    EXPECT_EQ(h.stats(), before);
    for (void* p : ptrs)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(free_blocks(h), 1u);
    // The largest free block is exactly servable, one byte more is not.
    const std::size_t largest = h.largest_free_block();
    EXPECT_EQ(h.allocate(largest + 1), nullptr);
    void* all = h.allocate(largest);
    ASSERT_NE(all, nullptr);
    EXPECT_EQ(h.largest_free_block(), 0u);
    EXPECT_TRUE(h.check());
    h.deallocate(all);
    EXPECT_TRUE(h.check());
}

TYPED_TEST(HeapContract, SeveralPools) {
    heap_buffer a(1 << 14), b(1 << 15);
    TypeParam h;
    EXPECT_EQ(h.allocate(16), nullptr); // no pool yet
    EXPECT_TRUE(h.add_pool(a.span()));
    EXPECT_TRUE(h.add_pool(b.span()));
    EXPECT_FALSE(h.add_pool(std::span<std::byte>(b.data(), 40))); // too small: ignored
    EXPECT_FALSE(h.add_pool({}));
    EXPECT_EQ(h.stats().capacity, (1u << 14) + (1u << 15));
    heap_model model;
    std::vector<void*> ptrs;
    for (;;) {
        void* p = h.allocate(500);
        if (p == nullptr) break;
        ASSERT_TRUE(model.add(p, 500, 16));
        ptrs.push_back(p);
    }
    std::size_t in_a = 0, in_b = 0;
    for (void* p : ptrs) {
        const auto* q = static_cast<std::byte*>(p);
        in_a += q >= a.data() && q < a.data() + (1 << 14);
        in_b += q >= b.data() && q < b.data() + (1 << 15);
        EXPECT_TRUE(h.owns(p));
    }
    EXPECT_EQ(in_a + in_b, ptrs.size());
    EXPECT_GT(in_a, 20u);
    EXPECT_GT(in_b, 50u);
    EXPECT_TRUE(h.check());
    // The walk tiles both pools: payloads + headers + per-pool overhead = capacity.
    std::size_t bytes = 0, last = 0;
    bool ordered = true;
    h.for_each_block([&](const strata::block_info& info) {
        bytes += info.size + TypeParam::header_size;
        ordered = ordered && info.offset >= last;
        last = info.offset;
    });
    EXPECT_TRUE(ordered);
    EXPECT_EQ(bytes + 2 * TypeParam::pool_overhead, h.stats().capacity);
    // metrics() counts both pools' records and sentinels, and every block of both.
    const strata::heap_metrics m = h.metrics();
    EXPECT_EQ(m.free_bytes + m.used_bytes + m.overhead_bytes, m.capacity);
    EXPECT_EQ(m.overhead_bytes, m.block_count() * TypeParam::header_size + 2 * TypeParam::pool_overhead);
    EXPECT_EQ(m.used_blocks, ptrs.size());
    // Addresses in neither pool, and inside a pool's record, are not owned.
    EXPECT_FALSE(h.owns(a.data() + (1 << 14)));
    EXPECT_FALSE(h.owns(a.data()));
    for (void* p : ptrs) {
        ASSERT_TRUE(model.remove(p));
        h.deallocate(p);
    }
    EXPECT_TRUE(h.check());
    EXPECT_EQ(free_blocks(h), 2u);
}

// Size 0, bad alignments and overflows are tests/contract/bad_requests_test.cpp's; these are the
// heap's own limits: above max_request, an alignment above it, more than the pool holds.
TYPED_TEST(HeapContract, RequestsBeyondTheHeapsLimitsReturnNullWithoutStateChange) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    void* keep = h.allocate(64);
    const auto before = h.stats();
    EXPECT_EQ(h.allocate(TypeParam::max_request + 1), nullptr);
    EXPECT_EQ(h.allocate(16, std::size_t{1} << 62), nullptr);
    EXPECT_EQ(h.allocate(1 << 17), nullptr);
    EXPECT_EQ(h.stats(), before);
    EXPECT_TRUE(h.check());
    h.deallocate(keep);
}

TYPED_TEST(HeapContract, DoubleFreeIsReportedAndIgnored) {
    STRATA_REQUIRE_CHECKS(1);
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    void* a = h.allocate(64);
    void* b = h.allocate(64);
    void* c = h.allocate(64);
    h.deallocate(b);
    const auto before = h.stats();
    strata::test::recording_handler rec;
    h.deallocate(b);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
    EXPECT_EQ(h.stats(), before);
    EXPECT_TRUE(h.check());
    h.deallocate(a);
    h.deallocate(c);
    EXPECT_TRUE(h.check());
}

// A use after free writes a freed block's first word: its free-list link, which ASan leaves
// addressable. check() tests the link before following it.
TYPED_TEST(HeapContract, CheckReportsABrokenFreeListLinkWithoutFollowingIt) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    void* a = h.allocate(64);
    auto* b = static_cast<std::byte*>(h.allocate(64));
    void* c = h.allocate(64);
    h.deallocate(b);
    ASSERT_TRUE(h.check()); // completes a free in flight: b is listed now
    std::uint64_t saved;
    std::memcpy(&saved, b, sizeof saved);
    for (const std::uint64_t bad : {std::uint64_t{42}, reinterpret_cast<std::uint64_t>(b + 8),
                                    reinterpret_cast<std::uint64_t>(c), ~std::uint64_t{0} << 4}) {
        std::memcpy(b, &bad, sizeof bad);
        strata::test::recording_handler rec;
        EXPECT_FALSE(h.check()) << bad;
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::corruption)) << bad;
    }
    std::memcpy(b, &saved, sizeof saved);
    EXPECT_TRUE(h.check());
    h.deallocate(a);
    h.deallocate(c);
    EXPECT_TRUE(h.check());
}

// Freeing a block whose neighbours are both free merges all three and leaves two stale headers in
// the merged block: the middle block's ("used") and its successor's, which still names it as its
// predecessor. A second free of the middle block must not pass as a live block (it would free the
// merged block again and grow it over the live block after it).
TYPED_TEST(HeapContract, DoubleFreeAfterAMergeOnBothSidesIsReportedAndIgnored) {
    STRATA_REQUIRE_CHECKS(1);
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    void* a = h.allocate(64);
    void* b = h.allocate(64);
    void* c = h.allocate(64);
    auto* d = static_cast<std::byte*>(h.allocate(64));
    void* wall = h.allocate(64);
    ASSERT_TRUE(a && b && c && d && wall);
    std::memset(d, 0x5A, 64);
    h.deallocate(a);
    h.deallocate(c);
    h.deallocate(b);        // merges a, b and c
    ASSERT_TRUE(h.check()); // also completes a free tlsf left in flight
    const auto before = h.stats();
    strata::test::recording_handler rec;
    h.deallocate(b);
    EXPECT_EQ(rec.count(), 1u);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer) ||
                rec.saw_one(strata::violation_kind::double_free));
    EXPECT_EQ(h.stats(), before);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 2u) << "d and wall are live";
    // Nothing handed out may overlap d.
    std::vector<void*> taken;
    while (void* p = h.allocate(16)) {
        auto* q = static_cast<std::byte*>(p);
        EXPECT_TRUE(q + 16 <= d || q >= d + 64);
        taken.push_back(p);
    }
    for (int i = 0; i < 64; ++i)
        ASSERT_EQ(d[i], std::byte{0x5A});
    for (void* p : taken)
        h.deallocate(p);
    h.deallocate(d);
    h.deallocate(wall);
    EXPECT_TRUE(h.check());
}

TYPED_TEST(HeapContract, ForeignAndInteriorPointersAreReportedAndIgnored) {
    STRATA_REQUIRE_CHECKS(1);
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    void* a = h.allocate(256);
    std::memset(a, 0xAB, 256);
    const auto before = h.stats();
    strata::test::recording_handler rec;
    alignas(16) std::byte outside[64] = {};
    h.deallocate(outside);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    rec.clear();
    h.deallocate(static_cast<std::byte*>(a) + 64); // into the block's middle
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    rec.clear();
    h.deallocate(static_cast<std::byte*>(a) + 8); // misaligned
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    EXPECT_EQ(h.stats(), before);
    EXPECT_TRUE(h.check());
    h.deallocate(a);
    EXPECT_TRUE(h.check());
}

TYPED_TEST(HeapContract, PointersIntoFreeMemoryAreReportedAndIgnored) {
    // The checks read the would-be header in front of the pointer. In free memory that header lies
    // in released bytes (poisoned in ASan builds): reading them stopped the program before.
    STRATA_REQUIRE_CHECKS(1);
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    auto* a = static_cast<std::byte*>(h.allocate(4096));
    void* wall = h.allocate(16);
    h.deallocate(a);
    const auto before = h.stats();
    strata::test::recording_handler rec;
    h.deallocate(a + 1024); // the middle of a free block
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    rec.clear();
    h.deallocate(a + 4096 + 256); // past the wall, in the free rest of the pool
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    EXPECT_EQ(h.stats(), before);
    EXPECT_TRUE(h.check());
    h.deallocate(wall);
    EXPECT_TRUE(h.check());
}

// ASan: only what the caller asked for is addressable: not a free block's first 16 bytes (its
// links) past a smaller request, nor a header and links a merge absorbed, inside the merged block
// or in whatever is carved from it later.
TYPED_TEST(HeapContract, UnderAsanOnlyTheRequestedBytesAreAddressable) {
    if (!STRATA_ASAN) GTEST_SKIP() << "poisoning is compiled in ASan builds only";
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    const auto expect_tail_poisoned = [&](const std::byte* p, std::size_t asked) {
        EXPECT_FALSE(strata::is_poisoned(p, asked)) << asked;
        for (std::size_t i = asked; i < h.usable_size(p); ++i)
            EXPECT_TRUE(strata::is_poisoned(p + i, 1)) << asked << " byte " << i;
    };
    for (std::size_t n : {1u, 5u, 8u, 15u, 17u, 24u, 40u}) {
        auto* p = static_cast<std::byte*>(h.allocate(n));
        expect_tail_poisoned(p, n);
        h.deallocate(p);
    }
    auto* a = static_cast<std::byte*>(h.allocate(48));
    auto* b = static_cast<std::byte*>(h.allocate(48));
    void* guard = h.allocate(16);
    h.deallocate(a);
    h.deallocate(b);        // merges with a
    ASSERT_TRUE(h.check()); // tlsf completes b's free here
    for (std::size_t i = 0; i < TypeParam::header_size + 16; ++i)
        EXPECT_TRUE(strata::is_poisoned(b - TypeParam::header_size + i, 1)) << "absorbed byte " << i;
    auto* c = static_cast<std::byte*>(h.allocate(60)); // carved from the merged block
    expect_tail_poisoned(c, 60);
    h.deallocate(c);
    h.deallocate(guard);
    EXPECT_TRUE(h.check());
}

TYPED_TEST(HeapContract, AllSmallThenFreeEveryOther) {
    heap_buffer buf(1 << 18);
    TypeParam h(buf.span());
    std::vector<void*> ptrs;
    while (void* p = h.allocate(32))
        ptrs.push_back(p);
    // Every other block, the last one kept: a hole next to the pool's end would merge with its
    // leftover bytes.
    for (std::size_t i = 0; i + 1 < ptrs.size(); i += 2)
        h.deallocate(ptrs[i]);
    ASSERT_TRUE(h.check());
    const auto m = h.metrics();
    EXPECT_GE(m.free_blocks, ptrs.size() / 2);
    EXPECT_GT(m.external_fragmentation(), 0.99); // shattered: every hole holds 32 bytes (tlsf: 48)
    EXPECT_EQ(h.allocate(64), nullptr);          // no hole fits 64 although half the heap is free
    void* hole = h.allocate(32);                 // ... but every hole fits 32
    EXPECT_NE(hole, nullptr);
    for (std::size_t i = 1; i < ptrs.size(); i += 2)
        h.deallocate(ptrs[i]);
    h.deallocate(hole);
    ASSERT_TRUE(h.check());
    EXPECT_EQ(free_blocks(h), 1u);
    EXPECT_EQ(h.metrics().external_fragmentation(), 0.0);
}

TYPED_TEST(HeapContract, Sawtooth) {
    heap_buffer buf(1 << 20);
    TypeParam h(buf.span());
    heap_model model;
    for (int tooth = 0; tooth < 8; ++tooth) {
        std::vector<std::pair<void*, std::size_t>> ptrs;
        for (std::size_t size = 16; size <= 4096; size += 48 + 16 * static_cast<std::size_t>(tooth)) {
            void* p = h.allocate(size);
            ASSERT_TRUE(model.add(p, size, 16));
            ptrs.emplace_back(p, size);
        }
        ASSERT_TRUE(h.check());
        // Free the newest half in reverse (the ramp falls), keep the rest into the next tooth.
        for (std::size_t i = ptrs.size(); i-- > ptrs.size() / 2;) {
            ASSERT_TRUE(model.remove(ptrs[i].first));
            h.deallocate(ptrs[i].first, ptrs[i].second, 16);
        }
        ASSERT_TRUE(h.check());
    }
    for (const auto& [p, b] : std::map<std::byte*, heap_model::block>(model.blocks())) {
        ASSERT_TRUE(model.remove(p));
        h.deallocate(p);
    }
    EXPECT_TRUE(h.check());
    EXPECT_EQ(free_blocks(h), 1u);
}

TYPED_TEST(HeapContract, MaxSizeBlock) {
    heap_buffer buf(1 << 20);
    TypeParam h(buf.span());
    const std::size_t largest = h.largest_free_block();
    void* p = h.allocate(largest, 16);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5A, largest);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.allocate(16), nullptr);
    h.deallocate(p);
    EXPECT_TRUE(h.check());
    // A large over-aligned block still fits when the alignment slack is accounted for.
    void* q = h.allocate(largest / 2, 4096);
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(strata::is_aligned(q, 4096));
    EXPECT_TRUE(h.check());
    h.deallocate(q);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(free_blocks(h), 1u);
}

// A pool above max_request: the largest free block reported (stats too) is one a request can have.
// The pool is address space only (MAP_NORESERVE): the heap writes a few headers, never the payload,
// except where every byte is poisoned or filled (ASan, checks >= 2), where the test is skipped.
TYPED_TEST(HeapContract, LargestFreeBlockOfAPoolAboveMaxRequestIsServable) {
#if STRATA_ASAN || STRATA_CHECKS >= 2
    GTEST_SKIP() << "poisons or fills every byte of a 32 TiB pool";
#else
    const std::size_t bytes = TypeParam::max_request + (std::size_t{1} << 20);
    void* m =
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) GTEST_SKIP() << "no 32 TiB of address space here";
    {
        TypeParam h(std::span<std::byte>(static_cast<std::byte*>(m), bytes));
        const std::size_t largest = h.largest_free_block();
        EXPECT_EQ(largest, TypeParam::max_request);
        EXPECT_EQ(h.stats().largest_free_block, largest);
        EXPECT_GT(h.metrics().largest_free_block, largest); // the block itself
        void* p = h.allocate(largest);
        EXPECT_NE(p, nullptr);
        EXPECT_TRUE(h.check());
        h.deallocate(p);
        EXPECT_TRUE(h.check());
    }
    ::munmap(m, bytes);
#endif
}

TYPED_TEST(HeapContract, MetricsDefinitions) {
    heap_buffer buf(1 << 16);
    TypeParam h(buf.span());
    void* a = h.allocate(100);
    void* b = h.allocate(200);
    void* c = h.allocate(300);
    h.deallocate(b);
    const strata::heap_metrics m = h.metrics();
    EXPECT_EQ(m.used_blocks, 2u);
    EXPECT_EQ(m.free_blocks, 2u);
    EXPECT_EQ(m.block_count(), 4u);
    EXPECT_EQ(m.requested_bytes, 400u);
    EXPECT_EQ(m.used_bytes, h.usable_size(a) + h.usable_size(c));
    EXPECT_EQ(m.internal_waste(), m.used_bytes - 400u);
    EXPECT_EQ(m.largest_free_block, h.largest_free_block());
    EXPECT_EQ(m.free_bytes + m.used_bytes + m.overhead_bytes, m.capacity);
    EXPECT_DOUBLE_EQ(m.external_fragmentation(),
                     1.0 - static_cast<double>(m.largest_free_block) / static_cast<double>(m.free_bytes));
    h.deallocate(a);
    h.deallocate(c);
}

// A long seeded sequence of allocate / free (and, for heaps that have it, reallocate) against the
// reference model, check() every 4,096 operations.
template <class H>
void random_run(H& h, heap_model& model, std::uint64_t seed, std::size_t ops, std::size_t max_failures) {
    test_rng rng{seed};
    std::vector<std::pair<void*, std::size_t>> live;
    std::size_t failures = 0;
    for (std::size_t op = 0; op < ops; ++op) {
        const std::uint64_t r = rng.next();
        const bool grow = live.size() < 64 || (live.size() < 2000 && (r & 0xFF) < 140);
        if (grow) {
            const std::uint64_t kind = (r >> 8) % 100;
            const std::size_t size = kind < 75   ? rng.between(1, 256)
                                     : kind < 97 ? rng.between(257, 4096)
                                                 : rng.between(4097, 65536);
            const std::size_t align = ((r >> 16) & 7) == 0 ? std::size_t{1} << rng.between(0, 8) : 16;
            void* p = h.allocate(size, align);
            if (p == nullptr) {
                ++failures;
                continue;
            }
            ASSERT_TRUE(model.add(p, size, align)) << "op " << op;
            live.emplace_back(p, size);
        } else {
            const std::size_t i = rng.next() % live.size();
            if constexpr (requires { h.reallocate(live[i].first, 1); }) {
                if (((r >> 20) & 7) == 0) {
                    const std::size_t size = rng.between(1, 2048);
                    void* q = h.reallocate(live[i].first, size);
                    if (q != nullptr) {
                        ASSERT_TRUE(model.moved(live[i].first, q, size, 16)) << "op " << op;
                        live[i] = {q, size};
                    }
                    continue;
                }
            }
            ASSERT_TRUE(model.remove(live[i].first)) << "op " << op;
            h.deallocate(live[i].first, live[i].second, 16);
            live[i] = live.back();
            live.pop_back();
        }
        if constexpr (requires { h.live_allocations(); }) {
            ASSERT_EQ(h.live_allocations(), live.size()) << "op " << op; // O(1): asked every op
        }
        if ((op & 4095) == 0) {
            ASSERT_TRUE(h.check()) << "op " << op;
        }
    }
    ASSERT_TRUE(h.check());
    ASSERT_TRUE(model.verify_all());
    EXPECT_LE(failures, max_failures);
    for (auto& [p, size] : live) {
        ASSERT_TRUE(model.remove(p));
        h.deallocate(p);
    }
    ASSERT_TRUE(h.check());
}

TYPED_TEST(HeapContract, RandomizedAgainstReferenceModel) {
    // The O(1) heaps run the full long sequence; the O(free blocks) free lists a fifth of it.
    constexpr bool is_tlsf = requires(TypeParam & h) { h.fl_bitmap(); };
    const std::size_t ops = is_tlsf ? strata::test::long_run_ops : strata::test::long_run_ops / 5;
    heap_buffer buf(std::size_t{32} << 20);
    TypeParam h(buf.span());
    heap_model model;
    random_run(h, model, 0x9e3779b97f4a7c15ull, ops, 0);
    EXPECT_EQ(free_blocks(h), 1u);
    EXPECT_EQ(h.stats().in_use, 0u);
}

TYPED_TEST(HeapContract, RandomizedOverSeveralSmallPools) {
    heap_buffer a(1 << 20), b(1 << 19), c(3 << 18);
    TypeParam h;
    ASSERT_TRUE(h.add_pool(a.span()));
    ASSERT_TRUE(h.add_pool(b.span()));
    ASSERT_TRUE(h.add_pool(c.span()));
    heap_model model;
    random_run(h, model, 42, 100'000, 5'000); // 2.3 MiB for ~2 MiB live: some failures expected
    EXPECT_EQ(free_blocks(h), 3u);
}

} // namespace
