// tlsf-specific behaviour: the class mapping and bitmaps, reallocate in place and moving,
// usable_size, the good-fit bound and O(1) behaviour under adversarial frees.
#include "strata/heap/tlsf.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "support/heap_model.hpp"
#include "support/recording_handler.hpp"
#include "support/test_rng.hpp"

namespace {

using strata::test::heap_buffer;

template <class T>
class TlsfMapping : public ::testing::Test {};
using slis = ::testing::Types<strata::basic_tlsf<4>, strata::basic_tlsf<5>>;
TYPED_TEST_SUITE(TlsfMapping, slis);

TYPED_TEST(TlsfMapping, EverySizeLandsInTheClassThatHoldsIt) {
    using T = TypeParam;
    std::vector<std::size_t> sizes;
    for (std::size_t s = 16; s < 1 << 14; s += 16)
        sizes.push_back(s);
    for (unsigned k = 14; k < 46; ++k) {
        sizes.push_back(std::size_t{1} << k);
        sizes.push_back((std::size_t{1} << k) - 16);
        sizes.push_back((std::size_t{1} << k) + (std::size_t{1} << (k - 3)) + 48);
    }
    for (std::size_t s : sizes) {
        unsigned fl, sl;
        T::mapping(s, fl, sl);
        ASSERT_LT(fl, T::fl_count) << s;
        ASSERT_LT(sl, T::sl_count) << s;
        ASSERT_LE(T::class_floor(fl, sl), s) << s;
        const std::size_t next =
            sl + 1 < T::sl_count ? T::class_floor(fl, sl + 1) : T::class_floor(fl + 1, 0);
        ASSERT_GT(next, s) << s;
    }
    // Small sizes are exact 16-byte classes on level 0.
    unsigned fl, sl;
    T::mapping(48, fl, sl);
    EXPECT_EQ(fl, 0u);
    EXPECT_EQ(sl, 3u);
}

TEST(Tlsf, BitmapsFollowTheFreeLists) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    unsigned fl, sl;
    strata::tlsf::mapping(h.largest_free_block(), fl, sl);
    EXPECT_EQ(h.fl_bitmap(), std::uint64_t{1} << fl);
    EXPECT_EQ(h.sl_bitmap(fl), std::uint32_t{1} << sl);
    void* a = h.allocate(48);
    void* b = h.allocate(48);
    void* c = h.allocate(48);
    h.deallocate(b); // a 48-byte hole (on the 32-byte grid: 32k + 16): class (0, 3)
    EXPECT_TRUE(h.fl_bitmap() & 1u);
    EXPECT_EQ(h.sl_bitmap(0), 1u << 3);
    h.deallocate(a);
    h.deallocate(c);
    EXPECT_EQ(h.sl_bitmap(0), 0u);
    EXPECT_TRUE(h.check());
}

TEST(Tlsf, ReallocateShrinksAndGrowsInPlace) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    auto* p = static_cast<unsigned char*>(h.allocate(1000));
    for (int i = 0; i < 1000; ++i)
        p[i] = static_cast<unsigned char>(i * 7);
    EXPECT_EQ(h.reallocate(p, 400), p); // shrink: the tail goes back
    EXPECT_EQ(h.usable_size(p), 400u);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.reallocate(p, 3000), p); // grow into the free successor
    EXPECT_GE(h.usable_size(p), 3000u);
    EXPECT_TRUE(h.check());
    for (int i = 0; i < 400; ++i)
        ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7));
    EXPECT_EQ(h.metrics().requested_bytes, 3000u);
    EXPECT_EQ(h.reallocate(p, 3000), p); // same size: nothing moves
    h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.metrics().free_blocks, 1u);
}

TEST(Tlsf, ReallocateMovesWhenTheNeighbourIsUsed) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    auto* p = static_cast<unsigned char*>(h.allocate(100));
    void* wall = h.allocate(16);
    for (int i = 0; i < 100; ++i)
        p[i] = static_cast<unsigned char>(i);
    auto* q = static_cast<unsigned char*>(h.reallocate(p, 5000, 64));
    ASSERT_NE(q, nullptr);
    EXPECT_NE(q, p);
    EXPECT_TRUE(strata::is_aligned(q, 64));
    for (int i = 0; i < 100; ++i)
        ASSERT_EQ(q[i], static_cast<unsigned char>(i));
    EXPECT_EQ(h.stats().live_allocations, 2u);
    EXPECT_TRUE(h.check());
    // Failure leaves the block untouched.
    EXPECT_EQ(h.reallocate(q, 1 << 20), nullptr);
    EXPECT_EQ(h.reallocate(q, 0), nullptr);
    EXPECT_EQ(q[99], 99);
    EXPECT_TRUE(h.check());
    // nullptr reallocates as allocate.
    void* r = h.reallocate(nullptr, 32);
    EXPECT_NE(r, nullptr);
    h.deallocate(r);
    h.deallocate(q);
    h.deallocate(wall);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.metrics().free_blocks, 1u);
}

TEST(Tlsf, ReallocateHonoursTheAlignmentInPlaceToo) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    void* pad = h.allocate(16); // so the next payload is not 256-aligned
    auto* p = static_cast<unsigned char*>(h.allocate(1000));
    ASSERT_FALSE(strata::is_aligned(p, 256));
    for (int i = 0; i < 1000; ++i)
        p[i] = static_cast<unsigned char>(i * 3);
    // Shrinking and growing could both stay in place, but p is not 256-aligned: the block moves.
    auto* q = static_cast<unsigned char*>(h.reallocate(p, 500, 256));
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(strata::is_aligned(q, 256));
    for (int i = 0; i < 500; ++i)
        ASSERT_EQ(q[i], static_cast<unsigned char>(i * 3));
    auto* r = static_cast<unsigned char*>(h.reallocate(q, 2000, 256));
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(strata::is_aligned(r, 256));
    EXPECT_EQ(r[499], static_cast<unsigned char>(499 * 3));
    EXPECT_EQ(h.reallocate(r, 1500, 256), r); // already aligned: in place
    // Bad alignments answer as allocate() does, whether or not the block could stay.
    const auto before = h.stats();
    for (std::size_t align :
         {std::size_t{0}, std::size_t{3}, std::size_t{24}, strata::tlsf::max_request * 2}) {
        EXPECT_EQ(h.allocate(100, align), nullptr) << align;
        EXPECT_EQ(h.reallocate(r, 100, align), nullptr) << align;
        EXPECT_EQ(h.reallocate(r, 1500, align), nullptr) << align;
    }
    EXPECT_EQ(h.stats(), before);
    EXPECT_EQ(r[499], static_cast<unsigned char>(499 * 3));
    h.deallocate(r);
    h.deallocate(pad);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

TEST(Tlsf, ReallocateOfAForeignPointerIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    alignas(16) std::byte outside[32] = {};
    strata::test::recording_handler rec;
    EXPECT_EQ(h.reallocate(outside, 64), nullptr);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    EXPECT_TRUE(h.check());
}

// Overwrites the header word at `at` with `change(word)`: check() must report one corruption, and
// pass again once the word is restored.
template <class Change>
void expect_check_catches(strata::tlsf& h, std::byte* at, Change change) {
    strata::test::recording_handler rec;
    std::uint64_t saved;
    std::memcpy(&saved, at, 8);
    const std::uint64_t broken = change(saved);
    std::memcpy(at, &broken, 8);
    EXPECT_FALSE(h.check());
    ASSERT_EQ(rec.count(), 1u);
    EXPECT_EQ(rec.last().kind, strata::violation_kind::corruption);
    std::memcpy(at, &saved, 8);
    EXPECT_TRUE(h.check());
}

TEST(Tlsf, CheckDetectsCorruption) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    auto* a = static_cast<std::byte*>(h.allocate(64));
    void* b = h.allocate(64);
    // a's size field, as an overflow from below would change it.
    expect_check_catches(h, a - 8, [](std::uint64_t w) { return w + 16; });
    h.deallocate(a);
    h.deallocate(b);
}

TEST(Tlsf, CheckDetectsAFalsePrevFreeFlag) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    void* a = h.allocate(64);
    auto* b = static_cast<std::byte*>(h.allocate(64));
    // b's first header word names its predecessor and, in its low bit, whether that is free:
    // claim "a is free" while a is in use.
    expect_check_catches(h, b - 16, [](std::uint64_t w) { return w | 1; });
    h.deallocate(a);
    h.deallocate(b);
}

TEST(Tlsf, PoppingTheLastBlockOfAClassClearsItsBits) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    unsigned fl, sl;
    strata::tlsf::mapping(48, fl, sl);
    ASSERT_EQ(fl, 0u); // an exact 16-byte class: only freed 48-byte blocks live there
    // Used neighbours keep the freed blocks from merging into anything else.
    void* a = h.allocate(48);
    void* guard1 = h.allocate(16);
    void* b = h.allocate(48);
    void* guard2 = h.allocate(16);
    h.deallocate(a);
    h.deallocate(b);
    EXPECT_EQ(h.sl_bitmap(fl), 1u << sl);
    EXPECT_NE(h.fl_bitmap() & (std::uint64_t{1} << fl), 0u);
    void* c = h.allocate(48); // the class keeps one block: its bits stay
    EXPECT_EQ(c, b);          // LIFO: the block freed last
    EXPECT_EQ(h.sl_bitmap(fl), 1u << sl);
    void* d = h.allocate(48); // the class empties: both levels' bits go
    EXPECT_EQ(d, a);
    EXPECT_EQ(h.sl_bitmap(fl), 0u);
    EXPECT_EQ(h.fl_bitmap() & (std::uint64_t{1} << fl), 0u);
    EXPECT_TRUE(h.check());
    for (void* p : {c, d, guard1, guard2})
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// Where the good-fit search finds nothing, an allocation probes only own_class_probes blocks of
// its own class: a failing request once walked the whole list (0.36 ms with 100,000 blocks; found by
// review). largest_free_block() reports what the probe reaches, so a request of it succeeds.
TEST(Tlsf, TheOwnClassProbeIsBoundedAndLargestFreeBlockStaysReachable) {
    heap_buffer buf(1 << 20);
    strata::tlsf h(buf.span());
    const std::size_t small = 2064, large = 2096; // one class at SLI 5: [2048, 2112)
    unsigned fl_small, sl_small, fl_large, sl_large;
    strata::tlsf::mapping(small, fl_small, sl_small);
    strata::tlsf::mapping(large, fl_large, sl_large);
    ASSERT_TRUE(fl_small == fl_large && sl_small == sl_large);
    void* fit = h.allocate(large);
    std::vector<void*> keep{h.allocate(16)};
    std::vector<void*> smalls;
    for (unsigned i = 0; i < 2 * strata::tlsf::own_class_probes; ++i) {
        smalls.push_back(h.allocate(small));
        keep.push_back(h.allocate(16)); // used neighbours: nothing merges
    }
    keep.push_back(h.allocate(h.largest_free_block())); // the pool's tail: no larger class is left
    h.deallocate(fit);                                  // listed first, so it ends up deepest in its class
    for (void* p : smalls)
        h.deallocate(p);
    ASSERT_TRUE(h.check());
    EXPECT_EQ(h.metrics().largest_free_block, large) << "the large block is free";
    EXPECT_EQ(h.largest_free_block(), small) << "but no probe reaches it";
    EXPECT_EQ(h.allocate(large), nullptr);
    void* got = h.allocate(h.largest_free_block());
    EXPECT_NE(got, nullptr);
    keep.push_back(got);
    EXPECT_TRUE(h.check());
    for (void* p : keep)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

// A tail under 1/16 of the request stays in the block as slack; a larger one is split off. The
// slack can exceed a byte: it is kept exactly. Payloads are 32k + 16 bytes (the 32-byte grid).
TEST(Tlsf, SliversStayInTheBlockAndLargerTailsSplit) {
    heap_buffer buf(1 << 23);
    strata::tlsf h(buf.span());
    auto hole = [&h](std::size_t bytes) { // a free block of `bytes`, walled off by a used block
        void* a = h.allocate(bytes);
        void* wall = h.allocate(16);
        h.deallocate(a);
        h.flush(); // a free completes one deallocate late; the next allocation must see the hole
        return std::pair{a, wall};
    };

    // A 100,016-byte hole, 97,000 asked (97,008 on the grid): the 3,008-byte tail is below
    // 97,008 / 16 = 6,063.
    auto [a, wall] = hole(100'000);
    auto* p = static_cast<unsigned char*>(h.allocate(97'000));
    EXPECT_EQ(p, a);
    EXPECT_EQ(h.usable_size(p), 100'016u);
    auto m = h.metrics();
    EXPECT_EQ(m.requested_bytes, 97'000u + 16u);
    EXPECT_EQ(m.internal_waste(), 3'016u);
    EXPECT_TRUE(h.check());
    std::memset(p, 0x5a, 97'000);
    EXPECT_EQ(h.reallocate(p, 99'000), p); // grows into its own slack
    EXPECT_EQ(h.metrics().requested_bytes, 99'000u + 16u);
    EXPECT_EQ(p[96'999], 0x5a);
    EXPECT_TRUE(h.check());
    h.deallocate(p);
    h.flush();

    // Same hole, 90,000 asked (on the grid already): the 10,016-byte tail (above 90,000 / 16) is a
    // block of its own.
    p = static_cast<unsigned char*>(h.allocate(90'000));
    EXPECT_EQ(p, a);
    EXPECT_EQ(h.usable_size(p), 90'000u);
    EXPECT_EQ(h.metrics().internal_waste(), 0u);
    EXPECT_TRUE(h.check());
    h.deallocate(p);
    h.deallocate(wall);
    EXPECT_EQ(h.metrics().free_blocks, 1u);

    // From 1 MiB up the sixteenth is taken modulo max_sliver (64 KiB), so the slack stays under
    // 64 KiB. 2 MiB - 32 asks 2,097,136 on the grid: 131,071 sixteenths, 65,535 modulo 65,536. An
    // 80 KiB tail is split off, a 40 KiB one stays (slack 40,976).
    constexpr std::size_t big = (std::size_t{2} << 20) - 32;
    static_assert(strata::tlsf::max_sliver == 65'536);
    auto [b, wall2] = hole(big + 80 * 1024);
    void* q = h.allocate(big);
    EXPECT_EQ(q, b);
    EXPECT_EQ(h.usable_size(q), big + 16);
    h.deallocate(q);
    h.deallocate(wall2);
    h.flush();
    auto [c, wall3] = hole(big + 40 * 1024);
    q = h.allocate(big);
    EXPECT_EQ(q, c);
    EXPECT_EQ(h.usable_size(q), big + 40 * 1024 + 16);
    EXPECT_EQ(h.metrics().internal_waste(), 40u * 1024u + 16u);
    EXPECT_TRUE(h.check());
    h.deallocate(q);
    h.deallocate(wall3);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.metrics().free_blocks, 1u);
}

TEST(Tlsf, ResizeInPlaceGrowsIntoAFreeSuccessorOnly) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    auto* a = static_cast<unsigned char*>(h.allocate(1000));
    void* b = h.allocate(1000);
    void* c = h.allocate(1000);
    ASSERT_TRUE(a && b && c);
    std::memset(a, 7, 1000);
    EXPECT_FALSE(h.resize_in_place(a, 3000)); // b is live right after a
    EXPECT_EQ(h.usable_size(a), 1008u);
    h.deallocate(b);
    EXPECT_TRUE(h.resize_in_place(a, 1900)); // b's room
    EXPECT_GE(h.usable_size(a), 1900u);
    EXPECT_TRUE(std::all_of(a, a + 1000, [](unsigned char x) { return x == 7; }));
    EXPECT_FALSE(h.resize_in_place(a, 5000)); // c is live after that
    EXPECT_TRUE(h.resize_in_place(a, 200));   // a shrink always fits
    EXPECT_LT(h.usable_size(a), 1000u);
    EXPECT_FALSE(h.resize_in_place(a, 0));
    EXPECT_FALSE(h.resize_in_place(nullptr, 10));
    EXPECT_TRUE(h.check());
    h.deallocate(a);
    h.deallocate(c);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.live_allocations(), 0u);
}

TEST(Tlsf, UsableSizeAndSlackAccounting) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    void* p = h.allocate(1);
    EXPECT_EQ(h.usable_size(p), 16u);
    void* q = h.allocate(17);
    EXPECT_EQ(h.usable_size(q), 48u); // 32k + 16: the next block starts on the 32-byte grid
    const auto m = h.metrics();
    EXPECT_EQ(m.requested_bytes, 18u);
    EXPECT_EQ(m.used_bytes, 64u);
    EXPECT_EQ(m.internal_waste(), 46u);
    h.deallocate(p);
    h.deallocate(q);
    EXPECT_EQ(h.metrics().requested_bytes, 0u);
}

// for_each_free_block visits exactly the free blocks at least min_bytes big (what the walk of
// every block reports free), the free in flight included, each once.
TEST(Tlsf, ForEachFreeBlockVisitsTheFreeBlocksAtLeastThatBig) {
    heap_buffer buf(1 << 20);
    strata::tlsf h(buf.span());
    std::vector<void*> live;
    std::uint64_t x = 12345;
    for (int i = 0; i < 400; ++i) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        if (void* p = h.allocate(16 + (x >> 33) % 6000)) live.push_back(p);
    }
    for (std::size_t i = 0; i < live.size(); i += 2)
        h.deallocate(live[i]); // the last one stays in flight
    for (const std::size_t min : {std::size_t{0}, std::size_t{16}, std::size_t{100}, std::size_t{4096},
                                  std::size_t{20000}, std::size_t{1} << 19, strata::tlsf::max_request + 1}) {
        SCOPED_TRACE(min);
        std::vector<std::size_t> want, got;
        std::vector<const void*> at;
        h.for_each_block([&](strata::block_info b) {
            if (!b.used && b.size >= min) want.push_back(b.size);
        });
        h.for_each_free_block(min, [&](void* p, std::size_t bytes) {
            got.push_back(bytes);
            at.push_back(p);
            EXPECT_GE(static_cast<std::byte*>(p), buf.span().data());
            EXPECT_LE(static_cast<std::byte*>(p) + bytes, buf.span().data() + buf.span().size());
        });
        std::sort(want.begin(), want.end());
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, want);
        std::sort(at.begin(), at.end());
        EXPECT_EQ(std::adjacent_find(at.begin(), at.end()), at.end()); // each block once
        if (min <= 4096) {
            EXPECT_FALSE(got.empty());
        }
    }
    EXPECT_TRUE(h.check());
    for (std::size_t i = 1; i < live.size(); i += 2)
        h.deallocate(live[i]);
    EXPECT_TRUE(h.check());
}

// A free block taken out (take_out) is out of reach: no request gets it, no free merges with it, and
// it counts as live; put back, it merges with what was freed beside it meanwhile and serves again.
TEST(Tlsf, AFreeBlockTakenOutIsOutOfReachUntilPutBack) {
    heap_buffer buf(1 << 20);
    strata::tlsf h(buf.span());
    void* a = h.allocate(64 * 1024);
    void* b = h.allocate(256 * 1024);
    void* c = h.allocate(64 * 1024);
    void* rest = h.allocate(h.largest_free_block()); // the pool's tail: nothing else is free
    ASSERT_NE(rest, nullptr);
    h.deallocate(b);
    h.flush();
    void* taken = nullptr;
    h.for_each_free_block(0, [&](void* p, std::size_t bytes) {
        EXPECT_EQ(bytes, h.usable_size(b));
        taken = p;
    });
    ASSERT_EQ(taken, b);
    h.take_out(taken);
    EXPECT_EQ(h.live_allocations(), 4u);
    EXPECT_EQ(h.stats().live_allocations, 3u);
    EXPECT_EQ(h.allocate(1024), nullptr) << "the only free block is out";
    h.deallocate(a); // beside it: no merge
    h.deallocate(c);
    h.flush();
    EXPECT_TRUE(h.check());
    std::size_t free_blocks = 0;
    h.for_each_free_block(0, [&](void*, std::size_t) { ++free_blocks; });
    EXPECT_EQ(free_blocks, 2u);
    h.put_back(taken);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.live_allocations(), 1u);
    free_blocks = 0;
    h.for_each_free_block(0, [&](void*, std::size_t) { ++free_blocks; });
    EXPECT_EQ(free_blocks, 1u) << "a, b and c merged into one";
    EXPECT_EQ(h.allocate(380 * 1024), a);
    EXPECT_TRUE(h.check());
}

// Bad input at checks >= 1: take_out of a live block, a foreign pointer or a block already out, and
// put_back of a block that is not out, are reported (invalid_argument) and change nothing.
TEST(Tlsf, TakeOutAndPutBackOfTheWrongBlockAreReported) {
    STRATA_REQUIRE_CHECKS(1);
    heap_buffer buf(1 << 20);
    strata::tlsf h(buf.span());
    void* live = h.allocate(64 * 1024);
    void* freed = h.allocate(64 * 1024);
    void* tail = h.allocate(1024);
    h.deallocate(freed);
    h.flush();
    alignas(16) std::byte outside[64] = {};
    strata::test::recording_handler rec;
    h.take_out(live);
    h.take_out(outside);
    h.put_back(freed); // free, not out
    EXPECT_EQ(rec.count(), 3u);
    for (std::size_t i = 0; i < rec.count(); ++i)
        EXPECT_EQ(rec.at(i).kind, strata::violation_kind::invalid_argument);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.live_allocations(), 2u);
    h.take_out(freed);
    h.take_out(freed); // already out
    EXPECT_EQ(rec.count(), 4u);
    h.put_back(freed);
    h.put_back(live); // live, and nothing is out
    EXPECT_EQ(rec.count(), 5u);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.live_allocations(), 2u);
    h.deallocate(live);
    h.deallocate(tail);
    EXPECT_TRUE(h.check());
}

// deallocate(p) completes the previous call's free and leaves p's in flight. Every query completes
// it first, so what they report is exactly what immediate frees give.
TEST(Tlsf, QueriesSeeAFreeInFlightAsDone) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    void* a = h.allocate(100);
    void* b = h.allocate(200);
    void* c = h.allocate(300);
    const std::size_t uc = h.usable_size(c);
    h.deallocate(b); // in flight
    std::size_t free_seen = 0, used_seen = 0;
    h.for_each_block([&](strata::block_info info) { (info.used ? used_seen : free_seen) += 1; });
    EXPECT_EQ(used_seen, 2u);
    EXPECT_EQ(free_seen, 2u); // b's block, and the rest of the pool
    h.deallocate(a);          // completes b's free, a in flight
    const auto s = h.stats();
    EXPECT_EQ(s.in_use, uc);
    EXPECT_EQ(s.live_allocations, 1u);
    EXPECT_EQ(h.metrics().used_blocks, 1u);
    EXPECT_TRUE(h.check());
    h.deallocate(c);
    EXPECT_EQ(h.stats().in_use, 0u);
    EXPECT_EQ(h.metrics().free_blocks, 1u); // everything merged back
    EXPECT_EQ(h.largest_free_block(), h.stats().capacity - strata::tlsf::pool_overhead - 16);
}

// live_allocations() counts without completing the free in flight; it agrees with stats() at every
// step, nullptr frees (which complete the block in flight and park nothing) included.
TEST(Tlsf, LiveAllocationsLeavesTheFreeInFlight) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    EXPECT_EQ(h.live_allocations(), 0u);
    void* a = h.allocate(100);
    void* b = h.allocate(200);
    EXPECT_EQ(h.live_allocations(), 2u);
    h.deallocate(a); // in flight
    EXPECT_EQ(h.live_allocations(), 1u);
    h.deallocate(nullptr); // completes a's free, nothing in flight
    EXPECT_EQ(h.live_allocations(), 1u);
    EXPECT_EQ(h.stats().live_allocations, 1u);
    h.deallocate(b);
    EXPECT_EQ(h.live_allocations(), 0u);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_EQ(h.live_allocations(), 0u); // after stats() completed it
    EXPECT_TRUE(h.check());
}

// The peak is taken when the bytes in use fall, less the block in flight: it must equal the
// highest sum of usable sizes a model of the live blocks ever held, queried or not in between.
TEST(Tlsf, PeakIsExactWithAFreeInFlight) {
    heap_buffer buf(1 << 20);
    strata::tlsf h(buf.span());
    strata::test::test_rng rng{0x9eaf};
    std::vector<std::pair<void*, std::size_t>> live; // pointer, usable size
    std::size_t used = 0, peak = 0;
    for (int step = 0; step < 20'000; ++step) {
        const std::size_t r = rng.between(0, 9);
        if (r < 5 || live.empty()) {
            void* p = h.allocate(rng.between(1, 3000));
            if (p == nullptr) continue;
            live.emplace_back(p, h.usable_size(p));
            used += live.back().second;
        } else if (r < 9) {
            const std::size_t k = rng.between(0, live.size() - 1);
            h.deallocate(live[k].first);
            used -= live[k].second;
            live[k] = live.back();
            live.pop_back();
        } else {
            const std::size_t k = rng.between(0, live.size() - 1);
            void* q = h.reallocate(live[k].first, rng.between(1, 3000));
            if (q == nullptr) continue;
            if (q != live[k].first) peak = std::max(peak, used + h.usable_size(q)); // both live a moment
            used = used - live[k].second + h.usable_size(q);
            live[k] = {q, h.usable_size(q)};
        }
        peak = std::max(peak, used);
        if (step % 997 == 0) { // a query now and then: it completes the free in flight early
            EXPECT_EQ(h.stats().in_use, used);
            EXPECT_EQ(h.stats().peak, peak);
        }
    }
    EXPECT_EQ(h.stats().in_use, used);
    EXPECT_EQ(h.stats().peak, peak);
    EXPECT_EQ(h.stats().live_allocations, live.size());
    EXPECT_TRUE(h.check());
}

// A block in flight is not listed yet; an allocation that finds nothing else completes it and tries
// again, so freeing the one block that fits and asking again succeeds (any alignment).
TEST(Tlsf, AnAllocationThatNeedsTheBlockInFlightGetsIt) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    const std::size_t all = h.largest_free_block();
    void* p = h.allocate(all);
    ASSERT_NE(p, nullptr);
    h.deallocate(p);
    void* q = h.allocate(all);
    EXPECT_EQ(q, p);
    h.deallocate(q);
    void* r = h.allocate(all / 2, 4096);
    ASSERT_NE(r, nullptr);
    h.deallocate(r);
    void* s = h.allocate(all / 2, 4096);
    EXPECT_EQ(s, r);
    h.deallocate(s);
    void* t = h.reallocate(nullptr, all); // reallocate(nullptr) allocates: the same rule
    EXPECT_EQ(t, p);
    h.deallocate(t);
    h.deallocate(nullptr); // completes t's free: nothing in flight now
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.largest_free_block(), all);
}

// At checks >= 1 a second free of the block still in flight is a double free, like any other.
TEST(Tlsf, ASecondFreeOfTheBlockInFlightIsADoubleFree) {
    STRATA_REQUIRE_CHECKS(1);
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    void* a = h.allocate(64);
    void* b = h.allocate(64);
    h.deallocate(a);
    strata::test::recording_handler rec;
    h.deallocate(a); // a is the free in flight
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
    EXPECT_EQ(h.stats().live_allocations, 1u);
    EXPECT_TRUE(h.check());
    void* c = h.reallocate(b, 32); // completes nothing twice
    EXPECT_EQ(c, b);
    h.deallocate(b);
    h.deallocate(b); // in flight again: reported again
    ASSERT_EQ(rec.count(), 2u);
    EXPECT_EQ(rec.last().kind, strata::violation_kind::double_free);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

} // namespace

template <>
struct strata::detail::private_access<strata::tlsf> {
    template <unsigned SLI>
    static std::uint64_t& fl_bitmap(basic_tlsf<SLI>& h) noexcept {
        return h.fl_bitmap_;
    }
};
namespace strata::test {
using tlsf_access = detail::private_access<tlsf>;
} // namespace strata::test

// check() compares the first-level bitmap with the second level above the top level too: a stray
// bit there would make largest_free_block() read past the arrays.
TEST(Tlsf, CheckSeesAFirstLevelBitAboveTheTopLevel) {
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    ASSERT_TRUE(h.check());
    for (unsigned bit : {strata::tlsf::fl_count, 50u, 63u}) {
        strata::test::recording_handler rec;
        strata::test::tlsf_access::fl_bitmap(h) |= std::uint64_t{1} << bit;
        EXPECT_FALSE(h.check()) << bit;
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::corruption));
        strata::test::tlsf_access::fl_bitmap(h) &= ~(std::uint64_t{1} << bit);
    }
    EXPECT_TRUE(h.check());
}

// ASan: the bytes past a reallocate that grew over its successor (that block's header and links)
// are not the caller's.
TEST(Tlsf, UnderAsanAReallocateGrownInPlaceKeepsItsTailPoisoned) {
    if (!STRATA_ASAN) GTEST_SKIP() << "poisoning is compiled in ASan builds only";
    heap_buffer buf(1 << 16);
    strata::tlsf h(buf.span());
    auto* x = static_cast<std::byte*>(h.allocate(24));
    void* y = h.allocate(64);
    void* guard = h.allocate(16);
    h.deallocate(y);
    ASSERT_TRUE(h.check()); // completes y's free: x's successor is free
    auto* grown = static_cast<std::byte*>(h.reallocate(x, 40));
    ASSERT_EQ(grown, x); // in place
    EXPECT_FALSE(strata::is_poisoned(grown, 40));
    for (std::size_t i = 40; i < h.usable_size(grown); ++i)
        EXPECT_TRUE(strata::is_poisoned(grown + i, 1)) << i;
    h.deallocate(grown);
    h.deallocate(guard);
    EXPECT_TRUE(h.check());
}

// Blocks start on the 32-byte grid (block_granule), so a free block's header and links share a
// cache line: every payload of a request aligned to 16 or less sits at 16 mod 32, whatever the
// pool's own start, and whatever the frees, merges and splits before it.
TEST(Tlsf, PayloadsStayOnTheGrid) {
    heap_buffer buf(1 << 20);
    strata::tlsf h(std::span<std::byte>(buf.data() + 16, (1 << 20) - 16)); // a start at 16 mod 32
    strata::test::test_rng rng{7};
    std::vector<void*> live;
    for (int op = 0; op < 20'000; ++op) {
        if (live.size() < 64 && (live.empty() || rng.next() % 3 != 0)) {
            const std::size_t size = 1 + rng.next() % 3000;
            void* p = h.allocate(size, std::size_t{1} << (rng.next() % 5));
            if (p == nullptr) continue;
            ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % strata::tlsf::block_granule, 16u) << size;
            ASSERT_GE(h.usable_size(p), size);
            live.push_back(p);
        } else {
            const std::size_t k = rng.next() % live.size();
            h.deallocate(live[k]);
            live[k] = live.back();
            live.pop_back();
        }
    }
    for (void* p : live)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.metrics().free_blocks, 1u);
}
