// engine_heap: every verb, bad input, a randomized run against a reference model, retention and
// page faults, frame/tracked integration, instance slots.
#include "strata/engine/engine_heap.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__linux__) && __has_include(<linux/seccomp.h>) && __has_include(<linux/filter.h>)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cstddef>
#define STRATA_TEST_SECCOMP 1
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/residency.hpp"

namespace {

using strata::engine_heap;
using strata::engine_options;
using strata::test::minor_faults;
using strata::test::resident_pages;

engine_options small_options() {
    engine_options o;
    o.reserve_bytes = std::size_t{2} << 30;
    o.retain_bytes = std::size_t{16} << 20;
    return o;
}

bool aligned(const void* p, std::size_t a) { return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0; }

TEST(EngineHeap, ClassTableIsTightAndMonotonic) {
    for (unsigned c = 1; c < engine_heap::class_count; ++c)
        ASSERT_GT(engine_heap::class_size(c), engine_heap::class_size(c - 1));
    EXPECT_EQ(engine_heap::class_size(engine_heap::class_count - 1), engine_heap::small_max);
    for (std::size_t s = 0; s <= engine_heap::small_max; ++s) {
        const unsigned c = engine_heap::class_of(s);
        ASSERT_LT(c, engine_heap::class_count) << s;
        ASSERT_GE(engine_heap::class_size(c), std::max<std::size_t>(s, 1)) << s;
        if (c > 0) {
            ASSERT_LT(engine_heap::class_size(c - 1), s) << s;
        }
        ASSERT_EQ(c, strata::engine_detail::class_of_computed(s)) << s;
        // At most 25% waste above 128 bytes (4 classes per doubling).
        if (s > 128) {
            ASSERT_LE(engine_heap::class_size(c) * 4, s * 5 + 4) << s;
        }
    }
}

TEST(EngineHeap, AllocatesEveryTier) {
    engine_heap h(small_options());
    for (std::size_t size :
         {std::size_t{0}, std::size_t{1}, std::size_t{16}, std::size_t{17}, std::size_t{256},
          std::size_t{1000}, std::size_t{4096}, std::size_t{65536}, std::size_t{65537}, std::size_t{300000},
          std::size_t{8} << 20, (std::size_t{8} << 20) + 1, std::size_t{40} << 20}) {
        void* p = h.allocate(size);
        ASSERT_NE(p, nullptr) << size;
        EXPECT_TRUE(h.owns(p));
        EXPECT_TRUE(aligned(p, 16));
        EXPECT_GE(h.usable_size(p), std::max<std::size_t>(size, 1));
        std::memset(p, 0xab, h.usable_size(p));
        EXPECT_TRUE(h.check()) << size;
        h.deallocate(p, size, 16);
        EXPECT_TRUE(h.check()) << size;
    }
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_EQ(h.stats().in_use, 0u);
}

// allocate_cached answers only from the thread's current run: nullptr before the thread has a
// cache, above small_max and when the run is empty; its blocks are ordinary blocks.
TEST(EngineHeap, AllocateCachedServesOnlyFromTheCurrentRun) {
    engine_heap h(small_options());
    EXPECT_EQ(h.allocate_cached(64), nullptr) << "no cache yet";
    void* first = h.allocate(64); // makes the cache and threads a first piece of a run
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(h.allocate_cached(engine_heap::small_max + 1), nullptr);
    EXPECT_EQ(h.allocate_cached(100000), nullptr);
    std::vector<void*> got{first};
    while (void* p = h.allocate_cached(64)) { // until the threaded piece runs out
        EXPECT_EQ(h.usable_size(p), 64u);
        std::memset(p, 0x3c, 64);
        got.push_back(p);
        ASSERT_LT(got.size(), 1025u);
    }
    EXPECT_GT(got.size(), 1u);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end());
    EXPECT_EQ(h.stats().live_allocations, got.size());
    EXPECT_TRUE(h.check());
    for (void* p : got)
        h.deallocate(p);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

// The owner's frees into full runs wait until the class runs dry; then the run freed into first is
// allocated from first (it had the longest time to gather frees), and a full run that empties
// while it waits leaves the heap consistent.
TEST(EngineHeap, FullRunsFreedIntoAreTakenBackOldestFirst) {
    engine_heap h(small_options());
    constexpr std::size_t per_run = (std::size_t{1} << strata::engine_detail::granule_shift) / 64;
    auto run_of = [](const void* p) {
        return reinterpret_cast<std::uintptr_t>(p) >> strata::engine_detail::granule_shift;
    };
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < 3 * per_run + 8; ++i) { // three full runs and a fourth, current
        void* p = h.allocate(64);
        ASSERT_NE(p, nullptr);
        blocks.push_back(p);
    }
    const auto a = run_of(blocks[0]);
    const auto b = run_of(blocks[per_run]);
    const auto c = run_of(blocks[2 * per_run]);
    ASSERT_NE(a, b);
    ASSERT_EQ(run_of(blocks[per_run - 1]), a);
    ASSERT_EQ(run_of(blocks[3 * per_run - 1]), c);
    void* a1 = blocks[5];
    void* b1 = blocks[per_run + 9];
    void* a2 = blocks[17];
    for (void* p : {a1, b1, a2})
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    // Drain the current run; then a2 and a1 (run a, freed into first; its list is LIFO), then b1.
    std::vector<void*> more;
    for (std::size_t i = 8; i < per_run; ++i)
        more.push_back(h.allocate(64));
    EXPECT_EQ(run_of(more.back()), run_of(blocks.back()));
    EXPECT_EQ(h.allocate(64), a2);
    EXPECT_EQ(h.allocate(64), a1);
    EXPECT_EQ(h.allocate(64), b1);
    void* fresh = h.allocate(64);
    for (auto r : {a, b, c})
        EXPECT_NE(run_of(fresh), r);
    EXPECT_TRUE(h.check());
    // Run c is freed into (it waits), then freed whole: it leaves the waiting list.
    for (std::size_t i = 2 * per_run; i < 3 * per_run; ++i) {
        h.deallocate(blocks[i]);
        blocks[i] = nullptr;
    }
    EXPECT_TRUE(h.check());
    for (void* p : blocks)
        h.deallocate(p);
    for (void* p : more)
        h.deallocate(p);
    h.deallocate(fresh);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

// A run the owner freed into is found however many full runs got no free: it comes back before
// a fresh run, even behind a hundred full runs (a program that leaks or keeps many blocks).
TEST(EngineHeap, AFreedIntoRunBehindManyFullRunsComesBeforeAFreshRun) {
    engine_heap h(small_options());
    const auto granule = std::size_t{1} << strata::engine_detail::granule_shift;
    auto run_of = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) / granule; };
    void* first = h.allocate(1024);
    ASSERT_NE(first, nullptr);
    const std::size_t per_run = granule / h.usable_size(first);
    std::vector<void*> blocks{first};
    for (std::size_t i = 1; i < 100 * per_run + 4; ++i) { // a hundred full runs and a current one
        void* p = h.allocate(1024);
        ASSERT_NE(p, nullptr);
        blocks.push_back(p);
    }
    ASSERT_EQ(run_of(blocks[per_run - 1]), run_of(first));
    ASSERT_NE(run_of(blocks[per_run]), run_of(first));
    void* oldest = blocks[3]; // in the first run to fill: the far end of the full list
    h.deallocate(oldest);
    const auto current = run_of(blocks.back());
    for (std::size_t i = 4; i < per_run; ++i) { // drain the current run
        void* p = h.allocate(1024);
        ASSERT_EQ(run_of(p), current);
        blocks.push_back(p);
    }
    void* next = h.allocate(1024);
    EXPECT_EQ(next, oldest) << "a fresh run was taken while a freed-into run waited";
    blocks[3] = next;
    EXPECT_TRUE(h.check());
    for (void* p : blocks)
        h.deallocate(p);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

// slot_use::first_for_life finds the cache through TLS slot 0 without the epoch: the same blocks
// as the checked path, nothing before the thread has a cache, and another thread's blocks (or a
// thread without a cache) take the remote way: an empty slot's id 0 is in no run tag.
TEST(EngineHeap, FirstForLifeSlotSeesTheSameCache) {
    using slot_use = engine_heap::slot_use;
    engine_options o = small_options();
    o.first_slot = true;
    engine_heap h(o);
    ASSERT_EQ(h.slot_index(), 0u);
    EXPECT_EQ(h.allocate_cached<slot_use::first_for_life>(64), nullptr) << "no cache yet";
    std::vector<void*> theirs;
    std::thread([&] { // a thread without a cache frees nothing of its own
        for (int i = 0; i < 100; ++i)
            theirs.push_back(h.allocate(48));
    })
        .join();
    void* first = h.allocate(64);
    std::vector<void*> got{first};
    while (void* p = h.allocate_cached<slot_use::first_for_life>(64)) {
        got.push_back(p);
        ASSERT_LT(got.size(), 1025u);
    }
    EXPECT_GT(got.size(), 1u);
    for (void* p : got) // the owner's frees: back on the run, so the next pops take them again
        h.deallocate<slot_use::first_for_life>(p);
    EXPECT_EQ(h.allocate_cached<slot_use::first_for_life>(64), got.back());
    h.deallocate<slot_use::first_for_life>(got.back());
    // The static form reads no member: the same block from slot 0, and deallocate_at with the
    // offset a caller computed (the malloc shim's) frees it the same way.
    void* again = engine_heap::allocate_cached_slot0(64);
    EXPECT_EQ(again, got.back());
    h.deallocate_at<slot_use::first_for_life>(again,
                                              reinterpret_cast<std::uintptr_t>(again) - h.data_begin());
    EXPECT_EQ(engine_heap::allocate_cached_slot0(64), again);
    h.deallocate<slot_use::first_for_life>(again);
    EXPECT_EQ(engine_heap::allocate_cached_slot0(engine_heap::small_max + 1), nullptr) << "not a small size";
    void* orphan = theirs.back(); // of a run whose owner exited: its tags say no_owner
    theirs.pop_back();
    for (void* p : theirs) // another thread's (exited) runs: the remote way
        h.deallocate<slot_use::first_for_life>(p);
    void* mine = h.allocate(64);
    std::thread([&] { // a thread without a cache frees a block of this thread's run, and an orphan
        h.deallocate<slot_use::first_for_life>(mine);
        h.deallocate<slot_use::first_for_life>(orphan);
        EXPECT_EQ(h.allocate_cached<slot_use::first_for_life>(64), nullptr) << "its slot 0 is empty";
        EXPECT_EQ(engine_heap::allocate_cached_slot0(64), nullptr);
    })
        .join();
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

// data_begin and data_bytes describe owns() exactly, and deallocate_at frees what deallocate
// does, in every tier.
TEST(EngineHeap, DataRangeDescribesOwnershipAndDeallocateAtFreesEveryTier) {
    engine_heap h(small_options());
    const std::uintptr_t begin = h.data_begin();
    const std::size_t bytes = h.data_bytes();
    EXPECT_GT(bytes, 0u);
    const auto owned = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) - begin < bytes; };
    int local = 0;
    EXPECT_FALSE(owned(&local));
    EXPECT_FALSE(owned(nullptr));
    EXPECT_FALSE(owned(reinterpret_cast<void*>(begin + bytes)));
    EXPECT_TRUE(owned(reinterpret_cast<void*>(begin + bytes - 1)));
    std::vector<void*> blocks;
    for (std::size_t size : {std::size_t{16}, std::size_t{96}, std::size_t{4000}, std::size_t{40000},
                             std::size_t{300000}, std::size_t{3} << 20})
        for (int i = 0; i < 8; ++i) {
            void* p = h.allocate(size);
            ASSERT_NE(p, nullptr);
            EXPECT_TRUE(owned(p));
            EXPECT_EQ(owned(p), h.owns(p));
            blocks.push_back(p);
        }
    EXPECT_EQ(h.stats().live_allocations, blocks.size());
    for (void* p : blocks)
        h.deallocate_at(p, reinterpret_cast<std::uintptr_t>(p) - begin);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

TEST(EngineHeap, SizeZeroGivesUniqueBlocks) {
    engine_heap h(small_options());
    void* a = h.allocate(0);
    void* b = h.allocate(0);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_NE(a, b);
    h.deallocate(a);
    h.deallocate(b);
}

TEST(EngineHeap, AlignmentFrom8To1MiB) {
    engine_heap h(small_options());
    for (std::size_t a = 8; a <= (std::size_t{1} << 20); a *= 2) {
        for (std::size_t size : {std::size_t{1}, std::size_t{24}, std::size_t{1000}, std::size_t{70000},
                                 std::size_t{3} << 20, std::size_t{9} << 20}) {
            void* p = h.allocate(size, a);
            ASSERT_NE(p, nullptr) << size << " " << a;
            EXPECT_TRUE(aligned(p, a)) << size << " " << a;
            EXPECT_GE(h.usable_size(p), size);
            std::memset(p, 1, size);
            h.deallocate(p);
        }
    }
    EXPECT_TRUE(h.check());
    void* big = h.allocate(100, std::size_t{64} << 20);
    ASSERT_NE(big, nullptr);
    EXPECT_TRUE(aligned(big, std::size_t{64} << 20));
    h.deallocate(big);
    EXPECT_TRUE(h.check());
}

TEST(EngineHeap, BadInput) {
    engine_heap h(small_options());
    EXPECT_EQ(h.allocate(16, 3), nullptr);
    EXPECT_EQ(h.allocate(16, 0), nullptr);
    EXPECT_EQ(h.allocate(200000, 48), nullptr);
    EXPECT_EQ(h.allocate(SIZE_MAX), nullptr);
    EXPECT_EQ(h.allocate(std::size_t{4} << 30), nullptr); // beyond the 2 GiB reservation
    h.deallocate(nullptr);
    std::vector<char> elsewhere(4096);
    void* local = elsewhere.data();
    EXPECT_FALSE(h.owns(local));
    h.deallocate(local); // ignored
    EXPECT_EQ(h.usable_size(local), 0u);
    EXPECT_EQ(h.reallocate(local, 10), nullptr);
    EXPECT_TRUE(h.check());
}

TEST(EngineHeap, BadAlignmentOnTheThreadCachedPath) {
    // The inline fast path serves a thread that already has a cache; it must refuse what the slow
    // path refuses (BadInput above runs before the thread has one).
    engine_heap h(small_options());
    void* warm = h.allocate(16);
    ASSERT_NE(warm, nullptr);
    for (std::size_t align : {std::size_t{0}, std::size_t{3}, std::size_t{5}, std::size_t{12}}) {
        EXPECT_EQ(h.allocate(16, align), nullptr) << align;
        EXPECT_EQ(h.allocate(100, align), nullptr) << align;
        EXPECT_EQ(h.allocate_zeroed(16, align), nullptr) << align;
    }
    h.deallocate(warm);
    EXPECT_TRUE(h.check());
}

#ifdef STRATA_TEST_SECCOMP
// What a kernel before 5.14 (or a sandbox) answers for MADV_POPULATE_WRITE: EINVAL. In this process
// only (a seccomp filter, in the death test's child).
void deny_populate_write() {
    sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 23 /* MADV_POPULATE_WRITE */, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EINVAL & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog = {static_cast<unsigned short>(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        std::_Exit(2);
}

// A lazy run whose class grows on after the heap passed populate_after_bytes is faulted in by
// hand when the kernel refuses MADV_POPULATE_WRITE; that must spare the blocks already carved.
[[noreturn]] void populate_by_hand_spares_live_blocks() {
    deny_populate_write();
    engine_options o = small_options();
    o.populate_after_bytes = std::size_t{2} << 16; // two runs
    int bad = 0;
    {
        engine_heap h(o);
        std::vector<std::pair<unsigned char*, std::size_t>> live;
        const auto take = [&](std::size_t n) {
            live.emplace_back(static_cast<unsigned char*>(h.allocate(n)), n);
            std::memset(live.back().first, 0xA5, n);
        };
        for (int i = 0; i < 8; ++i) // the 16-byte class's first run: lazy, below the threshold
            take(16);
        void* other = h.allocate(32);  // another class's run: past the threshold
        for (int i = 0; i < 3000; ++i) // past half the first run: its next carves fault it in
            take(16);
        for (int i = 0; i < 16; ++i) // a 640 KiB run: lazy, then past half, a granule per carve
            take(40 << 10);
        for (const auto& [p, n] : live)
            for (std::size_t k = 0; k < n; ++k)
                bad += p[k] != 0xA5;
        for (const auto& [p, n] : live)
            h.deallocate(p);
        h.deallocate(other);
        bad += h.check() ? 0 : 1;
    }
    std::_Exit(bad == 0 ? 0 : 1);
}

TEST(EngineHeapDeathTest, PopulateByHandSparesLiveBlocks) {
    EXPECT_EXIT(populate_by_hand_spares_live_blocks(), ::testing::ExitedWithCode(0), "");
}
#endif

TEST(EngineHeap, ReallocateToAnImpossibleSizeLeavesTheBlock) {
    // Rounding such sizes up to granules wrapped to 0 once: "fits", and the large block's span
    // was freed under it while the call returned it.
    engine_heap h(small_options());
    std::vector<void*> blocks;
    for (std::size_t size : {std::size_t{10} << 20, std::size_t{200} << 10, std::size_t{1000}}) {
        auto* p = static_cast<unsigned char*>(h.allocate(size));
        ASSERT_NE(p, nullptr);
        std::memset(p, 0x5A, size);
        const auto before = h.stats();
        for (std::size_t n : {SIZE_MAX, SIZE_MAX - 100, SIZE_MAX - 65535, std::size_t{4} << 30}) {
            EXPECT_EQ(h.reallocate(p, n), nullptr) << size << " -> " << n;
            EXPECT_EQ(h.stats().in_use, before.in_use);
            EXPECT_EQ(h.stats().live_allocations, before.live_allocations);
        }
        EXPECT_TRUE(h.check());
        void* q = h.allocate(size);
        ASSERT_NE(q, nullptr);
        EXPECT_NE(q, static_cast<void*>(p)) << "the block is still live";
        for (std::size_t i = 0; i < size; i += 4093)
            ASSERT_EQ(p[i], 0x5A);
        blocks.push_back(p);
        blocks.push_back(q);
    }
    for (void* b : blocks)
        h.deallocate(b);
    EXPECT_TRUE(h.check());
}

TEST(EngineHeap, ReallocateKeepsContentsAcrossTiers) {
    engine_heap h(small_options());
    EXPECT_EQ(h.reallocate(h.allocate(10), 0), nullptr); // realloc(p, 0) frees
    auto* p = static_cast<unsigned char*>(h.reallocate(nullptr, 10));
    ASSERT_NE(p, nullptr);
    for (int i = 0; i < 10; ++i)
        p[i] = static_cast<unsigned char>(i);
    std::size_t have = 10;
    for (std::size_t next : {std::size_t{12}, std::size_t{100}, std::size_t{5000}, std::size_t{70000},
                             std::size_t{200000}, std::size_t{9} << 20, std::size_t{20} << 20,
                             std::size_t{10} << 20, std::size_t{100000}, std::size_t{64}, std::size_t{10}}) {
        auto* q = static_cast<unsigned char*>(h.reallocate(p, next));
        ASSERT_NE(q, nullptr) << next;
        ASSERT_GE(h.usable_size(q), next);
        for (std::size_t i = 0; i < std::min(have, next); ++i)
            ASSERT_EQ(q[i], static_cast<unsigned char>(i)) << next << " " << i;
        for (std::size_t i = have; i < next; ++i)
            q[i] = static_cast<unsigned char>(i);
        have = next;
        p = q;
        ASSERT_TRUE(h.check()) << next;
    }
    h.deallocate(p);
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

TEST(EngineHeap, ReallocateInPlaceWhereTheBlockAllows) {
    engine_heap h(small_options());
    void* p = h.allocate(100); // class 112
    EXPECT_EQ(h.reallocate(p, 110), p);
    EXPECT_EQ(h.reallocate(p, 60), p);
    void* big = h.allocate(std::size_t{16} << 20);
    EXPECT_EQ(h.reallocate(big, std::size_t{12} << 20), big); // shrink gives the tail back
    EXPECT_EQ(h.reallocate(big, std::size_t{14} << 20), big); // and grows back into it
    // A medium block grows into a free successor in its arena (the arena's untouched tail here).
    void* medium = h.allocate(std::size_t{200} << 10);
    EXPECT_EQ(h.reallocate(medium, std::size_t{900} << 10), medium);
    EXPECT_GE(h.usable_size(medium), std::size_t{900} << 10);
    void* next = h.allocate(std::size_t{100} << 10); // now right after it
    void* moved = h.reallocate(medium, engine_heap::medium_max);
    EXPECT_NE(moved, medium); // no room: moved
    h.deallocate(moved);
    h.deallocate(next);
    h.deallocate(big);
    h.deallocate(p);
    EXPECT_TRUE(h.check());
}

// A buffer that realloc grows step by step at the top of the heap is never copied: the last span
// takes fresh granules past the top; once a live block follows it, it moves.
TEST(EngineHeap, ALargeBlockAtTheTopGrowsPastItInPlace) {
    engine_heap h(small_options());
    h.deallocate(h.allocate(64)); // the thread's cache first: its record would land after the block
    constexpr std::size_t mib = std::size_t{1} << 20;
    auto* p = static_cast<unsigned char*>(h.allocate(4 * mib));
    ASSERT_NE(p, nullptr);
    for (std::size_t size = 4 * mib; size < 64 * mib; size += 3 * mib / 2) {
        std::memset(p + size - 64, static_cast<int>(size >> 20), 64);
        ASSERT_EQ(h.reallocate(p, size + 3 * mib / 2), p) << size;
        ASSERT_GE(h.usable_size(p), size + 3 * mib / 2);
        ASSERT_EQ(p[size - 1], static_cast<unsigned char>(size >> 20));
        ASSERT_TRUE(h.check()) << size;
    }
    void* after = h.allocate(8 * mib); // the top now ends after it
    ASSERT_NE(after, nullptr);
    void* moved = h.reallocate(p, 80 * mib);
    ASSERT_NE(moved, nullptr);
    EXPECT_NE(moved, p);
    EXPECT_EQ(static_cast<unsigned char*>(moved)[4 * mib - 1], 4u);
    h.deallocate(moved);
    h.deallocate(after);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// The block before a free span that ends at the top grows through that span and past the top.
TEST(EngineHeap, ALargeBlockGrowsThroughAFreeLastSpanAndPastTheTop) {
    engine_heap h(small_options()); // retain_bytes 16 MiB: a freed 20 MiB span is not kept
    h.deallocate(h.allocate(64));
    constexpr std::size_t mib = std::size_t{1} << 20;
    auto* a = static_cast<unsigned char*>(h.allocate(4 * mib));
    void* b = h.allocate(20 * mib); // right after a, at the top
    ASSERT_TRUE(a != nullptr && b != nullptr);
    ASSERT_EQ(static_cast<unsigned char*>(b), a + 4 * mib);
    std::memset(a, 7, 4 * mib);
    h.deallocate(b);
    EXPECT_EQ(h.reallocate(a, 30 * mib), a);
    EXPECT_GE(h.usable_size(a), 30 * mib);
    EXPECT_EQ(a[4 * mib - 1], 7u);
    EXPECT_TRUE(h.check());
    h.deallocate(a);
    EXPECT_TRUE(h.check());
}

// A block at the top that a resident free span can hold moves there instead: the hole is reused
// and the top stays where it is.
TEST(EngineHeap, ALargeBlockAtTheTopMovesIntoAResidentHole) {
    engine_heap h(small_options());
    h.deallocate(h.allocate(64));
    constexpr std::size_t mib = std::size_t{1} << 20;
    auto* hole = static_cast<unsigned char*>(h.allocate(40 * mib));
    auto* x = static_cast<unsigned char*>(h.allocate(4 * mib)); // at the top, after the hole
    ASSERT_TRUE(hole != nullptr && x != nullptr);
    std::memset(hole, 1, 40 * mib);
    std::memset(x, 9, 4 * mib);
    h.deallocate(hole); // written: a dirty (resident) free span
    void* q = h.reallocate(x, 8 * mib);
    EXPECT_EQ(q, hole);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(static_cast<unsigned char*>(q)[4 * mib - 1], 9u);
    EXPECT_TRUE(h.check());
    h.deallocate(q);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// Every byte up to usable_size() is the caller's: a medium block grown in place keeps them all, also
// where the checks fill fresh bytes with a pattern (STRATA_CHECKS=2).
TEST(EngineHeap, AMediumBlockGrownInPlaceKeepsItsUsableBytes) {
    engine_heap h(small_options());
    auto* p = static_cast<unsigned char*>(h.allocate(70001));
    ASSERT_NE(p, nullptr);
    const std::size_t usable = h.usable_size(p);
    ASSERT_GT(usable, 70002u);
    std::memset(p, 0xAB, usable);
    ASSERT_EQ(h.reallocate(p, usable - 1), p);
    EXPECT_TRUE(std::all_of(p, p + usable - 1, [](unsigned char c) { return c == 0xAB; }));
    h.deallocate(p);
    EXPECT_TRUE(h.check());
}

TEST(EngineHeap, AllocateZeroedIsZeroAfterReuse) {
    engine_heap h(small_options());
    for (std::size_t size :
         {std::size_t{48}, std::size_t{3000}, std::size_t{100000}, std::size_t{12} << 20}) {
        void* dirty = h.allocate(size);
        std::memset(dirty, 0xff, size);
        h.deallocate(dirty);
        auto* z = static_cast<unsigned char*>(h.allocate_zeroed(size));
        ASSERT_NE(z, nullptr);
        EXPECT_TRUE(std::all_of(z, z + size, [](unsigned char c) { return c == 0; })) << size;
        h.deallocate(z);
    }
}

TEST(EngineHeap, RandomizedAgainstReferenceModel) {
    engine_options o = small_options();
    o.reserve_bytes = std::size_t{8} << 30; // the live set reaches about 1 GiB of large blocks
    engine_heap h(o);
    struct block {
        std::size_t size;
        std::size_t align;
        unsigned char tag;
    };
    std::map<std::uintptr_t, block> live;
    std::mt19937_64 rng(0x5eed);
    auto draw_size = [&]() -> std::size_t {
        const unsigned r = static_cast<unsigned>(rng() % 100);
        if (r < 80) return rng() % 512;
        if (r < 97) return rng() % 70000;
        if (r < 99 || rng() % 4 != 0) return rng() % (std::size_t{2} << 20);
        return (std::size_t{8} << 20) + rng() % (std::size_t{4} << 20);
    };
    auto verify = [&](std::uintptr_t at, const block& b) {
        const auto* p = reinterpret_cast<const unsigned char*>(at);
        const std::size_t n = std::min<std::size_t>(b.size, 64);
        for (std::size_t i = 0; i < n; ++i)
            if (p[i] != b.tag) return false;
        return b.size == 0 || p[b.size - 1] == b.tag;
    };
    auto fill = [](void* p, const block& b) {
        auto* c = static_cast<unsigned char*>(p);
        std::memset(c, b.tag, std::min<std::size_t>(b.size, 64));
        if (b.size != 0) c[b.size - 1] = b.tag;
    };
    const int ops = 60000;
    for (int i = 0; i < ops; ++i) {
        const unsigned what = static_cast<unsigned>(rng() % 10);
        if (what < 5 || live.empty()) {
            block b{draw_size(), std::size_t{1} << (rng() % 4 == 0 ? rng() % 13 : 4),
                    static_cast<unsigned char>(rng())};
            void* p = h.allocate(b.size, b.align);
            ASSERT_NE(p, nullptr);
            ASSERT_TRUE(aligned(p, b.align));
            ASSERT_GE(h.usable_size(p), b.size);
            const auto at = reinterpret_cast<std::uintptr_t>(p);
            // No overlap with the neighbours in address order.
            auto next = live.lower_bound(at);
            if (next != live.end()) {
                ASSERT_LE(at + std::max<std::size_t>(b.size, 1), next->first);
            }
            if (next != live.begin()) {
                auto prev = std::prev(next);
                ASSERT_LE(prev->first + std::max<std::size_t>(prev->second.size, 1), at);
            }
            fill(p, b);
            live[at] = b;
        } else {
            auto it = live.begin();
            std::advance(it, static_cast<long>(rng() % std::min<std::size_t>(live.size(), 64)));
            ASSERT_TRUE(verify(it->first, it->second));
            if (what < 8) {
                h.deallocate(reinterpret_cast<void*>(it->first));
                live.erase(it);
            } else {
                block b = it->second;
                const std::size_t old = b.size;
                b.size = draw_size() + 1;
                void* q = h.reallocate(reinterpret_cast<void*>(it->first), b.size, 16);
                ASSERT_NE(q, nullptr);
                auto* c = static_cast<unsigned char*>(q);
                const std::size_t keep = std::min<std::size_t>(std::min(old, b.size), 64);
                for (std::size_t k = 0; k < keep; ++k)
                    ASSERT_EQ(c[k], b.tag);
                live.erase(it);
                fill(q, b);
                b.align = 16;
                live[reinterpret_cast<std::uintptr_t>(q)] = b;
            }
        }
        if (i % 5000 == 0) {
            ASSERT_TRUE(h.check()) << i;
        }
    }
    EXPECT_EQ(h.stats().live_allocations, live.size());
    for (auto& [at, b] : live) {
        ASSERT_TRUE(verify(at, b));
        h.deallocate(reinterpret_cast<void*>(at));
    }
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_EQ(h.stats().in_use, 0u);
}

TEST(EngineHeap, StatisticsPerClassAndThread) {
    engine_heap h(small_options());
    const unsigned c = engine_heap::class_of(100);
    std::vector<void*> v;
    for (int i = 0; i < 1000; ++i)
        v.push_back(h.allocate(100));
    const auto cs = h.class_stats(c);
    EXPECT_EQ(cs.block_size, 112u);
    EXPECT_EQ(cs.allocations, 1000u);
    EXPECT_EQ(cs.frees, 0u);
    EXPECT_EQ(cs.live_bytes, 112000u);
    EXPECT_GE(cs.committed_bytes, 112000u);
    const auto ts = h.thread_stats();
    EXPECT_EQ(ts.allocations, 1000u);
    EXPECT_EQ(ts.live_bytes, 112000u);
    EXPECT_GE(ts.committed_bytes, 112000u);
    for (void* p : v)
        h.deallocate(p);
    EXPECT_EQ(h.class_stats(c).frees, 1000u);
    EXPECT_EQ(h.class_stats(c).live_bytes, 0u);
    const auto s = h.stats();
    EXPECT_EQ(s.total_allocations, 1000u);
    EXPECT_EQ(s.live_allocations, 0u);
    EXPECT_GT(s.capacity, 0u);
}

TEST(EngineHeap, ThreadStatsLiveBytesIsOneNetFigureOverTheClasses) {
    // This thread holds 112-byte blocks and frees a 512-byte block another thread allocated: its
    // live bytes are allocated minus freed over all classes (clamped at 0), not the sum of the
    // classes where it holds more than it freed.
    engine_heap h(small_options());
    void* other = nullptr;
    std::thread([&] { other = h.allocate(500); }).join();
    ASSERT_NE(other, nullptr);
    std::vector<void*> mine{h.allocate(100)};
    h.deallocate(other);
    const std::size_t small = engine_heap::class_size(engine_heap::class_of(100));
    const std::size_t big = engine_heap::class_size(engine_heap::class_of(500));
    ASSERT_GT(10 * small, big); // 112 and 512 here
    ASSERT_GT(big, small);
    EXPECT_EQ(h.thread_stats().live_bytes, 0u); // small - big, clamped
    for (int i = 0; i < 9; ++i)
        mine.push_back(h.allocate(100));
    const auto ts = h.thread_stats();
    EXPECT_EQ(ts.allocations, 10u);
    EXPECT_EQ(ts.frees, 1u);
    EXPECT_EQ(ts.live_bytes, 10 * small - big);
    for (void* p : mine)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

TEST(EngineHeap, RetentionIsBoundedAndTrimReleasesIt) {
    engine_options o = small_options();
    o.retain_bytes = std::size_t{8} << 20;
    engine_heap h(o);
    std::vector<void*> v;
    for (int i = 0; i < 10; ++i)
        v.push_back(h.allocate(std::size_t{16} << 20));
    for (void* p : v)
        h.deallocate(p);
    // The cap: retain_bytes plus the recent peak of live big blocks (160 MiB; they decay later).
    EXPECT_LE(h.retained_bytes(), (std::size_t{8} << 20) + (std::size_t{160} << 20));
    EXPECT_TRUE(h.check());
    h.trim();
    EXPECT_EQ(h.retained_bytes(), 0u);
    EXPECT_TRUE(h.check());
}

// The medium tier has at most engine_heap's 256 TLSF arenas (~16 GiB of medium blocks with the
// default arena size). Past the last arena medium requests get spans of their own, not nullptr.
TEST(EngineHeap, MediumRequestsOutliveTheLastArena) {
    engine_options o = small_options();
    o.medium_arena_bytes = std::size_t{64} << 10; // 64, 128, then 256 KiB arenas
    engine_heap h(o);
    std::vector<void*> v;
    const std::size_t size = std::size_t{200} << 10; // one per 256 KiB arena
    for (int i = 0; i < 300; ++i) {                  // more than 256 arenas could hold
        void* p = h.allocate(size);
        ASSERT_NE(p, nullptr) << "block " << i;
        std::memset(p, i & 0xff, 64);
        v.push_back(p);
    }
    EXPECT_TRUE(h.check());
    for (std::size_t i = 0; i < v.size(); ++i) {
        EXPECT_GE(h.usable_size(v[i]), size);
        EXPECT_EQ(static_cast<unsigned char*>(v[i])[63], i & 0xff);
    }
    void* grown = h.reallocate(v.back(), size * 2);
    ASSERT_NE(grown, nullptr);
    v.back() = grown;
    for (void* p : v)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().in_use, 0u);
}

// A bin is searched only so far (its first 16 spans) while the reservation can grow; once it is
// full every free span is looked at, so a request fails only when no free span fits. Here bin 32
// (32-63 granules) holds seventeen 33-granule spans in front of a 63-granule one, and 50 are asked.
TEST(EngineHeap, AFullReservationStillFindsTheFreeSpanThatFits) {
    engine_options o;
    o.reserve_bytes = std::size_t{64} << 20;
    o.large_keep_bytes = 0; // freed spans go straight to the bins
    engine_heap h(o);
    const std::size_t g = engine_heap::granule;
    std::vector<void*> holes, rest;
    void* big = h.allocate(63 * g);
    ASSERT_NE(big, nullptr);
    rest.push_back(h.allocate(17 * g)); // spacers keep the holes apart
    for (int i = 0; i < 17; ++i) {
        holes.push_back(h.allocate(33 * g));
        rest.push_back(h.allocate(17 * g));
        ASSERT_NE(holes.back(), nullptr);
    }
    while (void* p = h.allocate(17 * g))
        rest.push_back(p);
    while (void* p = h.allocate(2 * g, 2 * g)) // down to the last granules
        rest.push_back(p);
    h.deallocate(big);
    for (void* p : holes)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    void* p = h.allocate(50 * g);
    EXPECT_EQ(p, big) << "the 63-granule span, behind sixteen that are too small";
    h.deallocate(p);
    for (void* q : rest)
        h.deallocate(q);
    EXPECT_TRUE(h.check());
}

// A large block's second free finds a free span where its head was and is ignored, also when its
// span merged into the free one before it (double frees are undefined; this one costs nothing).
TEST(EngineHeap, ASecondFreeOfAMergedLargeBlockIsIgnored) {
    engine_options o = small_options();
    o.large_keep_bytes = 0; // freed spans go straight to the bins
    engine_heap h(o);
    const std::size_t n = std::size_t{2} << 20;
    void* a = h.allocate(n);
    void* b = h.allocate(n);
    void* c = h.allocate(n); // keeps b from merging with the free space past it
    ASSERT_TRUE(a != nullptr && b != nullptr && c != nullptr);
    h.deallocate(a);
    h.deallocate(b); // merges into a's free span
    h.deallocate(b);
    EXPECT_TRUE(h.check());
    auto* x = static_cast<char*>(h.allocate(2 * n));
    auto* y = static_cast<char*>(h.allocate(n));
    ASSERT_TRUE(x != nullptr && y != nullptr);
    EXPECT_TRUE(y + n <= x || x + 2 * n <= y) << "overlapping blocks";
    h.deallocate(x);
    h.deallocate(y);
    h.deallocate(c);
    EXPECT_TRUE(h.check());
}

// populate_after_bytes = 0: every run is faulted in from its first carve (a one-granule run whole),
// a class's first run too, so an engine that asks for it takes no fault from its first frame.
TEST(EngineHeap, PopulateFromTheStartFaultsFirstRunsIn) {
    engine_options o = small_options();
    o.populate_after_bytes = 0;
    engine_heap h(o);
    void* p = h.allocate(96);
    ASSERT_NE(p, nullptr);
    const auto granule = std::uintptr_t{1} << 16;
    const auto* run = reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(p) & ~(granule - 1));
    EXPECT_EQ(resident_pages(run, granule), granule / 4096);
    h.deallocate(p);
    EXPECT_TRUE(h.check());
}

// A run is faulted in a granule at a time, as its carves reach them: the first allocation from a
// 1 MiB run of 64 KiB blocks faults in 64 KiB, not the run, so no single call pays for the run.
TEST(EngineHeap, ARunIsFaultedInAGranuleAtATime) {
    engine_options o = small_options();
    o.populate_after_bytes = 0; // every run faulted in from its first carve
    engine_heap h(o);
    const std::size_t granule = std::size_t{1} << 16;
    std::vector<char*> blocks{static_cast<char*>(h.allocate(granule))};
    ASSERT_NE(blocks[0], nullptr);
    const std::size_t run_bytes = h.class_stats(engine_heap::class_of(granule)).committed_bytes;
    ASSERT_EQ(run_bytes, 16 * granule);
    const char* run = blocks[0]; // a run's first block starts at the run
    EXPECT_EQ(resident_pages(run, granule), granule / 4096);
    EXPECT_EQ(resident_pages(run + granule, run_bytes - granule), 0u) << "the whole run was faulted in";
    for (std::size_t i = 1; i < 16; ++i) { // each carve faults in its block's granule
        blocks.push_back(static_cast<char*>(h.allocate(granule)));
        ASSERT_EQ(blocks.back(), run + i * granule);
        EXPECT_EQ(resident_pages(run, run_bytes), (i + 1) * granule / 4096) << "block " << i;
    }
    for (char* p : blocks)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    // A run made from memory given back (a level loaded again after the last one decayed), which
    // the span pool files as clean, too.
    char* gone = nullptr;
    std::thread([&] {
        gone = static_cast<char*>(h.allocate(granule));
        h.deallocate(gone);
    }).join();
    h.trim(); // sweeps the exited thread's empty run into the span pool and gives its pages back
    ASSERT_EQ(resident_pages(gone, run_bytes), 0u);
    char* again = nullptr;
    std::size_t resident = 0;
    std::thread([&] {
        again = static_cast<char*>(h.allocate(granule));
        resident = resident_pages(again, run_bytes);
        h.deallocate(again);
    }).join();
    ASSERT_EQ(again, gone) << "the new run did not reuse the span given back";
    EXPECT_EQ(resident, granule / 4096) << "a recycled run was faulted in whole";
    EXPECT_TRUE(h.check());
}

// populate_after_bytes counts each thread's runs: a light thread's first run of a class stays lazy
// however much the rest of the process holds (guards: many light threads each faulting runs in whole).
// Past it, a class's first run is faulted in once half carved, its later runs when made.
TEST(EngineHeap, ALightThreadsRunsStayLazyInABigProcess) {
    engine_options o = small_options();
    o.populate_after_bytes = std::size_t{1} << 20; // 1 MiB per thread
    engine_heap h(o);
    std::vector<void*> heavy;
    for (int i = 0; i < 64; ++i) // this thread: 2 MiB of 32 KiB blocks, past its threshold
        heavy.push_back(h.allocate(std::size_t{32} << 10));
    char* light = nullptr;
    std::thread([&] {
        light = static_cast<char*>(h.allocate(48)); // a fresh run of its own
        light[0] = 1;
    }).join();
    ASSERT_NE(light, nullptr);
    const auto granule = std::uintptr_t{1} << 16;
    const auto* run = reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(light) & ~(granule - 1));
    EXPECT_LE(resident_pages(run, granule), 2u) << "the light thread's run was faulted in whole";
    // This thread is past its threshold, yet a new class's first run stays lazy (a rare class
    // holds a few blocks, not a run's pages) until half of it is carved; then it is faulted in.
    std::vector<void*> more{h.allocate(96)};
    const auto* its_run =
        reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(more[0]) & ~(granule - 1));
    EXPECT_LE(resident_pages(its_run, granule), 2u) << "a new class's first run was faulted in whole";
    while (more.size() < granule / 2 / 96 + 64)
        more.push_back(h.allocate(96));
    EXPECT_EQ(resident_pages(its_run, granule), granule / 4096) << "a half-carved run stays lazy";
    // The class's next run is faulted in whole when made.
    void* first_of_next = nullptr;
    while (first_of_next == nullptr) {
        void* p = h.allocate(96);
        more.push_back(p);
        if (reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(its_run) >= granule)
            first_of_next = p;
    }
    const auto* next_run =
        reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(first_of_next) & ~(granule - 1));
    EXPECT_EQ(resident_pages(next_run, granule), granule / 4096) << "a class's second run stays lazy";
    for (void* p : more)
        h.deallocate(p);
    h.deallocate(light);
    for (void* p : heavy)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

// An idle class's mostly faulted-in empty run (640 KiB for 40 KiB blocks) goes back to the span
// pool when another request would otherwise take fresh pages; a lazy one, or one faulted in below
// half (mostly untouched), stays.
TEST(EngineHeap, AnIdleClassesEmptyRunIsReusedBeforeFreshPages) {
    for (const int carved : {8, 1, 0}) { // blocks of 16 carved from a run faulted in as carved; 0: lazy
        engine_options o = small_options();
        o.populate_after_bytes = carved != 0 ? 0 : SIZE_MAX;
        const bool populate = carved == 8;
        engine_heap h(o);
        const unsigned big = engine_heap::class_of(40 << 10);
        std::vector<void*> blocks;
        for (int i = 0; i < std::max(carved, 1); ++i)
            blocks.push_back(h.allocate(40 << 10));
        auto* idle = static_cast<char*>(blocks[0]); // the first block: the run's start
        ASSERT_NE(idle, nullptr);
        for (void* p : blocks)
            h.deallocate(p); // the run is empty and stays this class's current run
        const std::size_t run_bytes = h.class_stats(big).committed_bytes;
        ASSERT_GE(run_bytes, std::size_t{640} << 10);
        // 1 KiB blocks: two per slow call, a new one-granule run every 32 slow calls. Past 1024 slow
        // calls without one of the big class, a new run finds no resident free span but that run.
        std::vector<void*> small;
        bool reused = false;
        for (int i = 0; i < 4000; ++i) {
            auto* p = static_cast<char*>(h.allocate(1000));
            ASSERT_NE(p, nullptr);
            std::memset(p, 1, 1000);
            reused = reused || (p >= idle && p < idle + run_bytes);
            small.push_back(p);
        }
        EXPECT_TRUE(h.check());
        if (populate) {
            EXPECT_TRUE(reused) << "fresh pages were taken while the idle run stayed resident";
            EXPECT_EQ(h.class_stats(big).committed_bytes, 0u);
        } else {
            EXPECT_FALSE(reused) << "a mostly untouched run was handed back (carved " << carved << ")";
            EXPECT_EQ(h.class_stats(big).committed_bytes, run_bytes);
        }
        void* again = h.allocate(40 << 10); // the class makes a run anew
        ASSERT_NE(again, nullptr);
        std::memset(again, 2, 40 << 10);
        h.deallocate(again);
        for (void* p : small)
            h.deallocate(p);
        EXPECT_TRUE(h.check());
    }
}

// medium_retain_bytes 0: a freed medium block of purge_medium_bytes or more is purged at the free.
TEST(EngineHeap, LargeMediumFreesReturnTheirPages) {
    for (const std::size_t threshold : {std::size_t{1} << 20, SIZE_MAX}) {
        engine_options o = small_options();
        o.purge_medium_bytes = threshold;
        o.medium_retain_bytes = 0;
        engine_heap h(o);
        const std::size_t big = engine_heap::medium_max, small = std::size_t{512} << 10;
        char* keep = static_cast<char*>(h.allocate(100)); // the arena outlives the frees below
        void* pin = h.allocate(small);                    // so does the first medium arena
        char* a = static_cast<char*>(h.allocate(big));
        char* b = static_cast<char*>(h.allocate(small));
        ASSERT_TRUE(keep && pin && a && b);
        std::memset(a, 1, big);
        std::memset(b, 2, small);
        ASSERT_GT(resident_pages(a, big), big / 4096 - 2);
        const std::size_t small_before = resident_pages(b + 4096, small - 8192);
        ASSERT_GT(small_before, small / 4096 - 4);
        h.deallocate(a);
        h.deallocate(b);
        EXPECT_TRUE(h.check());
        const std::size_t big_left = resident_pages(a + 4096, big - 8192);
        const std::size_t small_left = resident_pages(b + 4096, small - 8192);
        if (threshold == SIZE_MAX) {
            EXPECT_GT(big_left, 0u); // nothing purged: the pages stay for reuse
        } else {
            EXPECT_EQ(big_left, 0u); // at or above the threshold: given back at once
        }
        EXPECT_EQ(small_left, small_before); // below it: resident (medium churn never faults)
        // The purged block is whole again: reused in place, zeroed by allocate_zeroed, checkable.
        char* c = static_cast<char*>(h.allocate_zeroed(big));
        ASSERT_NE(c, nullptr);
        EXPECT_TRUE(std::all_of(c, c + big, [](char x) { return x == 0; }));
        std::memset(c, 3, big);
        EXPECT_TRUE(h.check());
        h.deallocate(c);
        h.deallocate(pin);
        h.deallocate(keep);
        EXPECT_TRUE(h.check());
    }
}

// A purged free block that is reused and freed again as the same block must be purged again, even
// when the program never writes the bytes after its list links (where the purge mark lives):
// strata-mt's big blocks get one byte per page, at page offsets 0 (guards: a stale "purged" mark).
TEST(EngineHeap, AReusedMediumBlockIsPurgedAgain) {
    engine_options o = small_options();
    o.medium_retain_bytes = std::size_t{4} << 20;
    engine_heap h(o);
    const std::size_t n = engine_heap::medium_max;
    auto* a = static_cast<unsigned char*>(h.allocate(n));
    ASSERT_NE(a, nullptr);
    std::memset(a, 7, n);
    h.deallocate(a);
    h.trim();
    ASSERT_EQ(resident_pages(a + 4096, n - 8192), 0u);
    auto* b = static_cast<unsigned char*>(h.allocate(n));
    ASSERT_EQ(b, a); // the arena's free block starts there again
    for (std::size_t at = 0; at < n; at += 4096)
        b[at] = 1; // bytes 16..31 untouched
    ASSERT_GT(resident_pages(b + 4096, n - 8192), (n - 8192) / 4096 - 2);
    h.deallocate(b);
    h.trim();
    EXPECT_EQ(resident_pages(b + 4096, n - 8192), 0u);
    EXPECT_TRUE(h.check());
}

// A step asks the kernel which pages of a newly seen free block are resident: an arena's
// never-touched tail counts nothing, so warm free blocks well within the cap stay warm (here: three
// 1 MiB blocks below a 64 MiB arena's untouched tail).
TEST(EngineHeap, LateMediumPurgeCountsOnlyResidentPages) {
    engine_options o = small_options();
    o.medium_retain_bytes = std::size_t{16} << 20;
    o.decay_ms = 1u << 30;                        // no decay within the test: only the cap purges
    o.medium_arena_bytes = std::size_t{64} << 20; // one arena, mostly never touched
    engine_heap h(o);
    const std::size_t w = engine_heap::medium_max, guard = std::size_t{128} << 10;
    unsigned char* blocks[3];
    void* guards[3];
    for (int i = 0; i < 3; ++i) {
        blocks[i] = static_cast<unsigned char*>(h.allocate(w));
        guards[i] = h.allocate(guard); // keeps the blocks apart
        ASSERT_TRUE(blocks[i] && guards[i]);
        std::memset(blocks[i], 1, w);
        std::memset(guards[i], 1, guard);
    }
    const std::size_t whole = resident_pages(blocks[0] + 4096, w - 8192); // every page, written
    ASSERT_GE(whole, (w - 8192) / 4096 - 1);
    for (unsigned char* p : blocks)
        h.deallocate(p); // 9 MiB: a sweep
    // 9 more MiB of frees that reuse the warm blocks: a second sweep, 9 MiB still resident.
    const std::size_t reuse = w - (std::size_t{100} << 10);
    for (int k = 0; k < 3; ++k) {
        auto* p = static_cast<unsigned char*>(h.allocate(reuse));
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(p == blocks[0] || p == blocks[1] || p == blocks[2]) << "allocation " << k;
        std::memset(p, 2, reuse);
        h.deallocate(p);
    }
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(resident_pages(blocks[i] + 4096, w - 8192), whole) << "block " << i;
    h.trim();
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(resident_pages(blocks[i] + 4096, w - 8192), 0u) << "block " << i;
    for (void* g : guards)
        h.deallocate(g);
    EXPECT_TRUE(h.check());
}

// The documented bound (docs/engine.md, engine_options::medium_retain_bytes): free medium memory
// resident at most the cap (medium_retain_bytes plus the recent peak of live bytes), plus up to
// purge_medium_bytes (or 3 pages) per free block for what is never purged; free blocks never
// touch, so at most live blocks + 2 per arena of them.
// 8 slots of 256 KiB-1 MiB blocks, a byte per page, purged from 256 KiB (guards: merged and split
// blocks counted as new and kept resident).
TEST(EngineHeap, LateMediumPurgeStaysWithinItsBound) {
    const std::size_t budget = std::size_t{2} << 20, mib = std::size_t{1} << 20, kib = 1024;
    engine_options o = small_options();
    o.medium_retain_bytes = budget;
    o.purge_medium_bytes = 256 * kib;
    o.medium_arena_bytes = 4 * mib; // several arenas, so blocks move between them
    o.retain_bytes = 0;             // an arena emptied goes back to the span pool: purged there, not counted
    engine_heap h(o);
    std::mt19937_64 rng(42);
    struct slot {
        unsigned char* p = nullptr;
        std::size_t n = 0;
    } slots[8];
    // The arenas' pages: from the first block's granule to the furthest block end (nothing else
    // allocates from this heap).
    std::uintptr_t lo = UINTPTR_MAX, hi = 0;
    const auto page_range = [](std::uintptr_t from, std::uintptr_t to) {
        return resident_pages(reinterpret_cast<const void*>(from), to - from);
    };
    // The resident pages of the live blocks, a page two blocks share counted once.
    const auto live_pages = [&] {
        std::vector<std::pair<std::uintptr_t, std::uintptr_t>> spans;
        for (const slot& y : slots) {
            if (y.p == nullptr) continue;
            const auto b = reinterpret_cast<std::uintptr_t>(y.p);
            spans.emplace_back(b & ~std::uintptr_t{4095}, (b + y.n + 4095) & ~std::uintptr_t{4095});
        }
        std::sort(spans.begin(), spans.end());
        std::size_t pages = 0;
        std::uintptr_t done = 0;
        for (auto [from, to] : spans) {
            from = std::max(from, done);
            if (to > from) pages += page_range(from, to);
            done = std::max(done, to);
        }
        return pages;
    };
    std::size_t worst = 0, peak = 0;
    for (int op = 0; op < 1500; ++op) {
        slot& x = slots[rng() % 8];
        h.deallocate(x.p);
        x.n = 256 * kib + rng() % (768 * kib);
        x.p = static_cast<unsigned char*>(h.allocate(x.n));
        ASSERT_NE(x.p, nullptr);
        for (std::size_t at = 0; at < x.n; at += 4096)
            x.p[at] = 1;
        x.p[x.n - 1] = 1;
        const auto at = reinterpret_cast<std::uintptr_t>(x.p);
        lo = std::min(lo, at & ~std::uintptr_t{0xFFFF});
        hi = std::max(hi, (at + x.n + 4095) & ~std::uintptr_t{4095});
        const std::size_t live = live_pages();
        // Free resident pages beyond what the recent peak of live blocks adds to the cap (the
        // peak so far bounds it).
        const std::size_t free_resident = (page_range(lo, hi) - live) * 4096;
        peak = std::max(peak, h.stats().in_use);
        worst = std::max(worst, free_resident > peak ? free_resident - peak : 0);
    }
    const std::size_t arenas = 3; // 4 + 8 + 16 MiB hold 8 blocks of up to 1 MiB
    const std::size_t per_block = std::max<std::size_t>(o.purge_medium_bytes, 3 * 4096);
    EXPECT_LE(worst, budget + (8 + 2 * arenas) * per_block) << "max " << worst / mib << " MiB";
    h.trim();
    const std::size_t live = live_pages();
    // trim(): only the parts never purged remain.
    EXPECT_LE((page_range(lo, hi) - live) * 4096, (8 + 2 * arenas) * per_block);
    for (const slot& y : slots)
        h.deallocate(y.p);
    EXPECT_TRUE(h.check());
}

// realloc shrinking a medium block in place frees its tail: with medium_retain_bytes 0 the tail is
// purged like a plain free of that size; with a cap it stays warm and decays like any free.
TEST(EngineHeap, ShrinkInPlaceGivesTheTailBack) {
    for (const std::size_t budget : {std::size_t{0}, std::size_t{64} << 20}) {
        engine_options o = small_options();
        o.medium_retain_bytes = budget;
        o.purge_medium_bytes = std::size_t{256} << 10; // the tail below is 768 KiB
        engine_heap h(o);
        const std::size_t big = engine_heap::medium_max, small = std::size_t{256} << 10;
        auto* p = static_cast<unsigned char*>(h.allocate(big));
        ASSERT_NE(p, nullptr);
        std::memset(p, 1, big);
        void* guard = h.allocate(std::size_t{128} << 10); // the tail stays a block of its own
        // The tail's pages past its first (tlsf's header and links for the free tail, the mark).
        const auto tail = [&] { return resident_pages(p + small + 4096, big - small - 8192); };
        const std::size_t written = tail();
        ASSERT_GE(written, (big - small - 8192) / 4096 - 1);
        ASSERT_EQ(h.reallocate(p, small), p);
        EXPECT_EQ(tail(), budget == 0 ? 0u : written); // within the budget: warm
        EXPECT_EQ(p[0], 1);
        EXPECT_EQ(p[small - 1], 1);
        EXPECT_TRUE(h.check());
        h.deallocate(guard);
        h.deallocate(p);
        EXPECT_TRUE(h.check());
    }
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST(EngineHeap, SteadyChurnDoesNotFault) {
    engine_options o = small_options();
    o.populate_after_bytes = 0; // every run faulted in as carved (the default waits for 8 MiB)
    o.decay_ms =
        60000; // the layout's reuse is under test, not the clock (a loaded machine's passes are slow)
    engine_heap h(o);
    std::mt19937_64 rng(7);
    std::vector<void*> live(2000);
    std::vector<std::size_t> sizes(live.size());
    auto draw = [&] {
        return static_cast<std::size_t>(16.0 * std::exp2(12.0 * double(rng() % 4096) / 4096.0));
    };
    for (std::size_t i = 0; i < live.size(); ++i)
        live[i] = h.allocate(sizes[i] = draw());
    long faults = 0;
    for (int pass = 0; pass < 7; ++pass) { // the heap reaches its high-water size in 4
        const long f0 = minor_faults();
        for (int i = 0; i < 200000; ++i) {
            const std::size_t k = rng() % live.size();
            h.deallocate(live[k]);
            live[k] = h.allocate(draw());
            static_cast<char*>(live[k])[0] = 1;
        }
        faults = minor_faults() - f0;
    }
    EXPECT_LE(faults, 4); // the last pass: warm
    for (void* p : live)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}
#endif

TEST(EngineHeap, FrameArenaAndTrackedView) {
    engine_heap h(small_options());
    strata::arena& a = h.frame_arena();
    EXPECT_EQ(&a, &h.frame_arena());
    for (int frame = 0; frame < 3; ++frame) {
        for (int i = 0; i < 1000; ++i)
            ASSERT_NE(a.allocate(100), nullptr);
        a.reset();
    }
    strata::tracker renderer("renderer");
    auto view = h.tracked_view(renderer);
    void* p = view.allocate(1000, 16);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(h.owns(p));
    EXPECT_EQ(renderer.in_use(), 1000u);
    view.deallocate(p, 1000, 16);
    EXPECT_EQ(renderer.in_use(), 0u);
    h.flush_thread_cache(); // destroys the frame arena, hands its blocks back
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

// Slot 0 is only for a heap that asks for it (the fast paths of slot_use::first_for_life read it
// with no epoch): other heaps take slots 1-15, and a second heap asking for slot 0 is refused.
TEST(EngineHeap, SlotZeroIsOnlyForAHeapThatAsks) {
    engine_options o = small_options();
    engine_heap plain(o);
    EXPECT_NE(plain.slot_index(), 0u);
    o.first_slot = true;
    engine_heap first(o);
    EXPECT_EQ(first.slot_index(), 0u);
    EXPECT_THROW(engine_heap second(o), std::length_error);
    void* p = plain.allocate(64); // this thread's cache of `plain` is not in slot 0
    EXPECT_EQ(engine_heap::allocate_cached_slot0(64), nullptr);
    void* q = first.allocate(64);
    void* r = engine_heap::allocate_cached_slot0(64);
    EXPECT_TRUE(first.owns(r));
    plain.deallocate(p);
    first.deallocate(q);
    first.deallocate(r);
    EXPECT_TRUE(plain.check());
    EXPECT_TRUE(first.check());
}

TEST(EngineHeap, InstanceSlotsAreLimitedAndReused) {
    std::vector<std::unique_ptr<engine_heap>> heaps;
    engine_options o;
    o.reserve_bytes = std::size_t{64} << 20;
    EXPECT_THROW(
        {
            for (int i = 0; i < 17; ++i)
                heaps.push_back(std::make_unique<engine_heap>(o));
        },
        std::length_error);
    ASSERT_GE(heaps.size(), 1u);
    void* p = heaps.back()->allocate(64); // this thread caches the slot...
    ASSERT_NE(p, nullptr);
    heaps.pop_back(); // ...which a new heap takes over: the stale cache must not be used
    heaps.push_back(std::make_unique<engine_heap>(o));
    void* q = heaps.back()->allocate(64);
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(heaps.back()->owns(q));
    heaps.back()->deallocate(q);
    EXPECT_TRUE(heaps.back()->check());
}

} // namespace
