// strata::buddy: the offset API over memory it never touches, the pointer API, split and merge,
// alignment, exhaustion, bad input, the tree walk, internal waste and a long randomized run.
#include "strata/heap/buddy.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/allocator.hpp"

#include "support/bad_requests.hpp"
#include "support/heap_model.hpp"
#include "support/recording_handler.hpp"
#include "support/test_rng.hpp"

template <>
struct strata::detail::private_access<strata::buddy> {
    static std::uint64_t& free_mask(buddy& b) { return b.free_mask_; }
    static std::uint32_t& head(buddy& b, unsigned k) { return b.heads_[k]; }
};
namespace strata::test {
using buddy_access = detail::private_access<buddy>;
} // namespace strata::test

namespace {

using strata::buddy;
using strata::test::heap_buffer;
using strata::test::heap_model;
using strata::test::test_rng;

static_assert(strata::owning_allocator<buddy>);
static_assert(strata::unsized_deallocator<buddy>);

TEST(Buddy, ConstructionRoundsTheRegionDownToAPowerOfTwo) {
    buddy b(std::size_t{3} << 20, 64);
    EXPECT_EQ(b.region_size(), std::size_t{2} << 20);
    EXPECT_EQ(b.min_block(), 64u);
    EXPECT_EQ(b.orders(), 16u); // 64 B .. 2 MiB
    EXPECT_EQ(b.largest_free_block(), std::size_t{2} << 20);
    EXPECT_EQ(b.base(), nullptr);
    EXPECT_TRUE(b.check());
    EXPECT_THROW(buddy(1024, 48), std::invalid_argument);
    EXPECT_THROW(buddy(32, 64), std::invalid_argument);
    buddy empty;
    EXPECT_EQ(empty.allocate_offset(16), buddy::npos);
    EXPECT_EQ(empty.allocate(16), nullptr);
    EXPECT_TRUE(empty.check());
}

TEST(Buddy, OffsetsSplitAndMergeByXor) {
    buddy b(1024, 16); // offsets only: nothing is ever touched
    const std::size_t a = b.allocate_offset(16);
    EXPECT_EQ(a, 0u);
    EXPECT_EQ(b.block_size(a), 16u);
    // The split left one free block of every order from 16 to 512.
    EXPECT_EQ(b.free_orders(), 0b111111u); // one free block of every order, 16 B to 512 B
    const std::size_t c = b.allocate_offset(16);
    EXPECT_EQ(c, 16u); // a's buddy
    const std::size_t d = b.allocate_offset(100);
    EXPECT_EQ(d, 128u);
    EXPECT_EQ(b.block_size(d), 128u);
    EXPECT_TRUE(b.check());
    b.deallocate_offset(a);
    b.deallocate_offset(c, 16); // merges with a, then with 32.., up to order 3 (128 B)
    EXPECT_TRUE(b.check());
    b.deallocate_offset(d);
    EXPECT_TRUE(b.check());
    EXPECT_EQ(b.free_orders(), std::uint64_t{1} << 6); // everything merged back to one 1 KiB block
    EXPECT_EQ(b.stats().in_use, 0u);
    EXPECT_EQ(b.stats().total_allocations, 3u);
}

TEST(Buddy, TreeWalkTilesTheRegion) {
    buddy b(4096, 16);
    const std::size_t x = b.allocate_offset(40);
    const std::size_t y = b.allocate_offset(1000);
    std::vector<strata::block_info> blocks;
    b.for_each_block([&](const strata::block_info& info) { blocks.push_back(info); });
    std::size_t offset = 0;
    for (const auto& info : blocks) {
        EXPECT_EQ(info.offset, offset);
        EXPECT_TRUE(strata::is_pow2(info.size));
        EXPECT_EQ(info.offset % info.size, 0u);
        offset += info.size;
    }
    EXPECT_EQ(offset, 4096u);
    const auto m = b.metrics();
    EXPECT_EQ(m.used_blocks, 2u);
    EXPECT_EQ(m.used_bytes, 64u + 1024u);
    EXPECT_EQ(m.requested_bytes, 1040u);
    EXPECT_EQ(m.internal_waste(), 48u);
    EXPECT_EQ(m.free_bytes + m.used_bytes, 4096u);
    EXPECT_EQ(m.largest_free_block, 2048u);
    b.deallocate_offset(x);
    b.deallocate_offset(y);
    EXPECT_EQ(b.metrics().free_blocks, 1u);
}

TEST(Buddy, PointerApiAndAlignment) {
    heap_buffer buf(1 << 20, 1 << 16); // base aligned to 64 KiB
    buddy b(buf.span(), 16);
    heap_model model;
    std::vector<void*> ptrs;
    for (std::size_t align = 1; align <= 4096; align *= 2) {
        for (std::size_t size : {std::size_t{1}, std::size_t{17}, std::size_t{100}, std::size_t{4096}}) {
            void* p = b.allocate(size, align);
            ASSERT_TRUE(model.add(p, size, align));
            EXPECT_TRUE(b.owns(p));
            EXPECT_GE(b.usable_size(p), size);
            ptrs.push_back(p);
        }
    }
    EXPECT_EQ(b.allocate(16, 1 << 21), nullptr); // more than the region
    {
        buddy shifted(std::span<std::byte>(buf.data() + 16, 4096), 16); // base aligned to 16 only
        EXPECT_EQ(shifted.allocate(64, 32), nullptr);                   // more than the base's alignment
        void* q = shifted.allocate(64, 16);
        EXPECT_NE(q, nullptr);
        shifted.deallocate(q);
    }
    EXPECT_TRUE(b.check());
    for (void* p : ptrs) {
        ASSERT_TRUE(model.remove(p));
        b.deallocate(p);
    }
    b.deallocate(nullptr);
    EXPECT_TRUE(b.check());
    EXPECT_EQ(b.largest_free_block(), std::size_t{1} << 20);
    EXPECT_FALSE(b.owns(buf.data() + (1 << 20)));
    EXPECT_TRUE(b.owns(buf.data()));
}

TEST(Buddy, ExhaustionAndTheMaxSizeBlock) {
    buddy b(1 << 16, 256);
    std::vector<std::size_t> offs;
    for (std::size_t off; (off = b.allocate_offset(300)) != buddy::npos;)
        offs.push_back(off);
    EXPECT_EQ(offs.size(), 128u); // 300 -> 512 bytes
    const auto before = b.stats();
    EXPECT_EQ(b.allocate_offset(1), buddy::npos);
    EXPECT_EQ(b.stats(), before);
    for (std::size_t off : offs)
        b.deallocate_offset(off);
    EXPECT_TRUE(b.check());
    const std::size_t all = b.allocate_offset(1 << 16);
    EXPECT_EQ(all, 0u);
    EXPECT_EQ(b.allocate_offset(1), buddy::npos);
    b.deallocate_offset(all);
    EXPECT_TRUE(b.check());
}

TEST(Buddy, BadRequestsReturnNposWithoutStateChange) {
    buddy b(1 << 16, 16);
    const std::size_t keep = b.allocate_offset(64);
    const auto before = b.stats();
    // The contract's tables (tests/contract covers the pointer verbs), then the region's limits.
    for (const strata::test::bad_request& r : strata::test::all_bad_requests())
        EXPECT_EQ(b.allocate_offset(r.size, r.align), buddy::npos) << r.size << " " << r.align;
    EXPECT_EQ(b.allocate_offset((1 << 16) + 1), buddy::npos);
    EXPECT_EQ(b.allocate_offset(16, 1 << 17), buddy::npos);
    EXPECT_EQ(b.stats(), before);
    EXPECT_TRUE(b.check());
    b.deallocate_offset(keep);
}

TEST(Buddy, DoubleFreeForeignAndInteriorAreReportedAndIgnored) {
    STRATA_REQUIRE_CHECKS(1);
    heap_buffer buf(1 << 12, 1 << 12);
    buddy b(buf.span(), 16);
    void* x = b.allocate(64);
    void* y = b.allocate(64);
    b.deallocate(y);
    const auto before = b.stats();
    strata::test::recording_handler rec;
    b.deallocate(y);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
    rec.clear();
    b.deallocate(static_cast<std::byte*>(x) + 16); // inside x
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    rec.clear();
    b.deallocate(static_cast<std::byte*>(x) + 3); // not on a min_block boundary
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    rec.clear();
    int outside = 0;
    b.deallocate(&outside);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    rec.clear();
    b.deallocate_offset(1 << 20);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    rec.clear();
    b.deallocate(x, 1000, 16); // 1000 -> order 6, x is order 2
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::size_mismatch));
    EXPECT_EQ(b.stats(), before);
    EXPECT_TRUE(b.check());
    b.deallocate(x, 64, 16);
    EXPECT_TRUE(b.check());
}

TEST(Buddy, LargeBlocksAnswerBadInputLikeSmallOnes) {
    STRATA_REQUIRE_CHECKS(1);
    // Orders from buddy::small_orders up keep their bookkeeping per order, not per min_block: the
    // same bad frees must get the same answers there. 16-byte min_block: order 7 is 2 KiB.
    buddy b(1 << 20, 16);
    const std::size_t big = b.allocate_offset(4096);    // order 8, a large block
    const std::size_t small = b.allocate_offset(64);    // order 2, cut across the boundary
    const std::size_t other = b.allocate_offset(10000); // order 10
    ASSERT_NE(big, buddy::npos);
    ASSERT_NE(small, buddy::npos);
    ASSERT_NE(other, buddy::npos);
    EXPECT_EQ(b.block_size(big), 4096u);
    EXPECT_EQ(b.block_size(other), 16384u);
    EXPECT_TRUE(b.check());
    strata::test::recording_handler rec;
    b.deallocate_offset(big + 2048); // inside a large block, on a boundary of its order's half
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    rec.clear();
    b.deallocate_offset(big, 100, 1); // 100 bytes names order 3, the block is order 8
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::size_mismatch));
    rec.clear();
    b.deallocate_offset(big, 4096, 1);
    EXPECT_TRUE(rec.empty());
    b.deallocate_offset(big); // now a free large block's start
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
    rec.clear();
    EXPECT_TRUE(b.check());
    b.deallocate_offset(small, 64, 1);
    b.deallocate_offset(other);
    EXPECT_TRUE(rec.empty());
    EXPECT_TRUE(b.check());
    EXPECT_EQ(b.largest_free_block(), std::size_t{1} << 20); // merged back across both layouts
}

TEST(Buddy, SplitsAndMergesCrossBetweenTheTwoLayouts) {
    // Each order from 0 to 12 of a 64 KiB region: fill it with blocks of that order, free every other
    // one, then the rest; check() walks both layouts at each step.
    for (unsigned order = 0; order <= 12; ++order) {
        buddy b(1 << 16, 16);
        const std::size_t size = std::size_t{16} << order;
        std::vector<std::size_t> offsets;
        for (std::size_t off; (off = b.allocate_offset(size)) != buddy::npos;)
            offsets.push_back(off);
        ASSERT_EQ(offsets.size(), (std::size_t{1} << 16) / size) << "order " << order;
        ASSERT_TRUE(b.check()) << "order " << order;
        std::size_t blocks = 0;
        b.for_each_block([&](const strata::block_info& info) {
            EXPECT_TRUE(info.used);
            EXPECT_EQ(info.size, size);
            ++blocks;
        });
        EXPECT_EQ(blocks, offsets.size());
        for (std::size_t i = 0; i < offsets.size(); i += 2)
            b.deallocate_offset(offsets[i], size, 1);
        ASSERT_TRUE(b.check()) << "order " << order;
        for (std::size_t i = 1; i < offsets.size(); i += 2) {
            EXPECT_EQ(b.block_size(offsets[i]), size);
            b.deallocate_offset(offsets[i]);
        }
        ASSERT_TRUE(b.check()) << "order " << order;
        EXPECT_EQ(b.largest_free_block(), std::size_t{1} << 16);
        EXPECT_EQ(b.metrics().free_blocks, 1u);
    }
}

TEST(Buddy, InternalWasteNearRussellUnderUniformSizes) {
    // Russell (1977): under sizes uniform over a wide range a binary buddy grants ~1.44x (the
    // expectation of 2^ceil(log2 s) / s is 1/ln 2 * ... ~ 1.44 for s uniform in [2^k, 2^(k+1))).
    buddy b(std::size_t{1} << 31, 1024); // offsets only: 2 GiB never touched
    test_rng rng{7};
    std::vector<std::size_t> offs;
    for (int i = 0; i < 10'000; ++i) {
        offs.push_back(b.allocate_offset(rng.between(1024, 65536)));
        ASSERT_NE(offs.back(), buddy::npos);
    }
    const double ratio = b.metrics().waste_ratio();
    EXPECT_GT(ratio, 1.3);
    EXPECT_LT(ratio, 1.5);
    for (std::size_t off : offs)
        b.deallocate_offset(off);
    EXPECT_TRUE(b.check());
}

TEST(Buddy, RandomizedAgainstReferenceModel) {
    heap_buffer buf(std::size_t{16} << 20, 4096);
    buddy b(buf.span(), 16);
    heap_model model;
    test_rng rng{0xb0dd1e5ull};
    struct entry {
        void* p;
        std::size_t size, align;
    };
    std::vector<entry> live;
    std::size_t failures = 0;
    for (std::size_t op = 0; op < strata::test::long_run_ops; ++op) {
        const std::uint64_t r = rng.next();
        if (live.size() < 64 || (live.size() < 2000 && (r & 0xFF) < 140)) {
            const std::uint64_t kind = (r >> 8) % 100;
            const std::size_t size = kind < 75   ? rng.between(1, 256)
                                     : kind < 97 ? rng.between(257, 4096)
                                                 : rng.between(4097, 65536);
            const std::size_t align = ((r >> 16) & 7) == 0 ? std::size_t{1} << rng.between(0, 10) : 16;
            void* p = b.allocate(size, align);
            if (p == nullptr) {
                ++failures;
                continue;
            }
            ASSERT_TRUE(model.add(p, size, align)) << "op " << op;
            live.push_back({p, size, align});
        } else {
            const std::size_t i = rng.next() % live.size();
            ASSERT_TRUE(model.remove(live[i].p)) << "op " << op;
            if ((r >> 24) & 1) {
                b.deallocate(live[i].p, live[i].size, live[i].align);
            } else {
                b.deallocate(live[i].p);
            }
            live[i] = live.back();
            live.pop_back();
        }
        if ((op & 32767) == 0) { // check() is O(region / min_block): 1 M entries
            ASSERT_TRUE(b.check()) << "op " << op;
        }
    }
    EXPECT_EQ(failures, 0u);
    ASSERT_TRUE(model.verify_all());
    for (const entry& e : live) {
        ASSERT_TRUE(model.remove(e.p));
        b.deallocate(e.p);
    }
    ASSERT_TRUE(b.check());
    EXPECT_EQ(b.metrics().free_blocks, 1u);
}

TEST(Buddy, ManagesMemoryItMustNotTouch) {
    // A 256 GiB "GPU heap" as offsets, 2^22 min_blocks of 64 KiB. The bookkeeping, all outside: a
    // 12-byte record per min_block, and for orders 7..22 an 8-byte record and two bits per block.
    buddy b(std::size_t{1} << 38, std::size_t{1} << 16);
    std::size_t big = 0, words = 0;
    for (unsigned k = buddy::small_orders; k <= 22; ++k) {
        big += std::size_t{1} << (22 - k);
        words += ((std::size_t{1} << (22 - k)) + 63) / 64;
    }
    EXPECT_EQ(b.bookkeeping_bytes(), (std::size_t{1} << 22) * 12 + big * 8 + words * 16);
    const std::size_t tex = b.allocate_offset(std::size_t{3} << 30, std::size_t{1} << 16);
    EXPECT_EQ(tex, 0u);
    EXPECT_EQ(b.block_size(tex), std::size_t{4} << 30);
    const std::size_t vb = b.allocate_offset(1 << 20);
    EXPECT_EQ(vb, std::size_t{4} << 30);
    EXPECT_TRUE(b.check());
    b.deallocate_offset(tex);
    b.deallocate_offset(vb);
    EXPECT_EQ(b.largest_free_block(), std::size_t{1} << 38);
}

} // namespace

namespace {

// check() compares the order mask with the lists above the top order too: a stray bit there would
// make largest_free_block() report more than the region and send an allocation to a list that does
// not exist.
TEST(Buddy, CheckSeesBookkeepingAboveTheTopOrder) {
    using access = strata::test::buddy_access;
    buddy b(4096, 64);
    ASSERT_TRUE(b.check());
    {
        strata::test::recording_handler rec;
        access::free_mask(b) |= std::uint64_t{1} << b.orders();
        EXPECT_FALSE(b.check());
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::corruption));
        access::free_mask(b) &= ~(std::uint64_t{1} << b.orders());
    }
    ASSERT_TRUE(b.check());
    {
        strata::test::recording_handler rec;
        const std::uint32_t saved = access::head(b, b.orders() + 1);
        access::head(b, b.orders() + 1) = 0;
        EXPECT_FALSE(b.check());
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::corruption));
        access::head(b, b.orders() + 1) = saved;
    }
    EXPECT_TRUE(b.check());
}

} // namespace

// An offsets-only buddy hands out no pointers: deallocate(p) takes any pointer as foreign (never
// its value as an offset, which would free the live block there).
TEST(Buddy, AnOffsetsOnlyBuddyCallsEveryPointerForeign) {
    STRATA_REQUIRE_CHECKS(1);
    buddy b(4096, 16);
    const std::size_t first = b.allocate_offset(16);
    const std::size_t second = b.allocate_offset(16);
    ASSERT_EQ(first, 0u);
    ASSERT_EQ(second, 16u);
    strata::test::recording_handler rec;
    b.deallocate(reinterpret_cast<void*>(std::uintptr_t{16}));
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    rec.clear();
    b.deallocate(reinterpret_cast<void*>(std::uintptr_t{16}), 16, 1);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    EXPECT_EQ(b.stats().live_allocations, 2u);
    b.deallocate_offset(second);
    b.deallocate_offset(first);
    EXPECT_TRUE(b.check());
}
