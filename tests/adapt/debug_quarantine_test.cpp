// debug<A>'s quarantine: freed blocks held back from A, filled 0xDD, poisoned for ASan, and checked
// when they leave, so a write after free is reported (README and docs/heaps.md tell users to wrap
// an allocator in debug<> to catch a use after free).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "strata/adapt/allocator_ref.hpp"
#include "strata/adapt/debug.hpp"
#include "strata/adapt/tracked.hpp"
#include "strata/core/check.hpp"
#include "strata/core/poison.hpp"
#include "strata/heap/buddy.hpp"
#include "strata/linear/frame_allocator.hpp"

#include "support/adapt_allocators.hpp"
#include "support/recording_handler.hpp"

namespace {

using strata::debug;
using strata::debug_options;
using strata::violation_kind;
using strata::test::test_arena;
using strata::test::test_heap;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// A write the sanitizer does not see (uninstrumented code, a DMA engine, a stray pointer ASan
// missed): what the fill check exists to catch in every build. Under ASan a plain write to a
// quarantined block faults at once (see the death test below).
void write_after_free(void* p, std::size_t at, unsigned char v) {
    auto* b = static_cast<unsigned char*>(p) + at;
    strata::unpoison(b, 1);
    *b = v;
    strata::poison(b, 1);
}

debug_options with_quarantine(std::size_t bytes, std::size_t blocks) {
    debug_options o;
    o.quarantine_bytes = bytes;
    o.quarantine_blocks = blocks;
    return o;
}

// An allocator over test_heap that counts what it is given back and resets.
class counting_heap {
public:
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = strata::default_alignment) noexcept {
        if (fail || blocks_.size() >= max_live) return nullptr;
        void* p = heap_.allocate(size, align);
        if (p != nullptr) blocks_.push_back({p, size});
        return p;
    }
    void deallocate(void* p, std::size_t size, std::size_t align = strata::default_alignment) noexcept {
        ++frees;
        for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
            if (it->first == p) {
                blocks_.erase(it);
                break;
            }
        }
        heap_.deallocate(p, size, align);
    }
    void reset() noexcept {
        for (const auto& [p, size] : blocks_)
            heap_.deallocate(p, size);
        blocks_.clear();
    }
    [[nodiscard]] strata::stats stats() const noexcept { return heap_.stats(); }

    std::size_t frees = 0;                               ///< deallocate calls
    std::size_t max_live = static_cast<std::size_t>(-1); ///< allocate fails with this many live
    bool fail = false;                                   ///< allocate fails

private:
    test_heap heap_;
    std::vector<std::pair<void*, std::size_t>> blocks_;
};

TEST(DebugQuarantine, OnByDefaultExceptOverALifoAllocator) {
    debug<test_heap> heap;
    EXPECT_EQ(heap.options().quarantine_bytes, debug_options::default_quarantine_bytes);
    debug<test_arena> arena; // mark()/rewind(): frees must stay in order
    EXPECT_EQ(arena.options().quarantine_bytes, 0u);
    debug<test_arena> asked(with_quarantine(4096, 8)); // asked for: given
    EXPECT_EQ(asked.options().quarantine_bytes, 4096u);
}

TEST(DebugQuarantine, FreedBlocksAreHeldBackFilledAndPoisoned) {
    strata::test::recording_handler rec;
    debug<test_heap> d;
    auto* p = static_cast<unsigned char*>(d.allocate(40, 8));
    ASSERT_NE(p, nullptr);
    d.deallocate(p, 40, 8);
    EXPECT_FALSE(d.owns(p));
    EXPECT_TRUE(d.claims(p));
    EXPECT_EQ(d.quarantined_blocks(), 1u);
    EXPECT_EQ(d.quarantined_bytes(), 16u + 40u + 16u);
    EXPECT_EQ(d.inner().live(), 1u); // not yet back in A
    if (STRATA_ASAN) {
        EXPECT_TRUE(strata::is_poisoned(p, 1));
        EXPECT_TRUE(strata::is_poisoned(p + 39, 1));
    }
    strata::unpoison(p - 16, 72); // look: 0xDD over fences and user bytes
    for (std::size_t i = 0; i < 72; ++i)
        ASSERT_EQ((p - 16)[i], 0xDD) << i;
    strata::poison(p - 16, 72);
    EXPECT_TRUE(d.verify());
    EXPECT_TRUE(rec.empty());
}

TEST(DebugQuarantine, AWriteAfterFreeIsReportedWhenTheBlockLeaves) {
    strata::test::recording_handler rec;
    debug<test_heap> d(with_quarantine(debug_options::default_quarantine_bytes, 1));
    const unsigned alloc_line = __LINE__ + 1;
    void* p = d.allocate(24);
    const unsigned free_line = __LINE__ + 1;
    d.deallocate(p, 24);
    write_after_free(p, 5, 0x42);
    EXPECT_TRUE(rec.empty()); // not seen yet: the block is still held
    void* q = d.allocate(24);
    d.deallocate(q, 24); // pushes p out of the one-block quarantine
    ASSERT_TRUE(rec.saw_one(violation_kind::corruption));
    const std::string& m = rec.last().message;
    EXPECT_TRUE(contains(m, "use after free")) << m;
    EXPECT_TRUE(contains(m, "1 bytes of the freed block of 24 bytes")) << m;
    EXPECT_TRUE(contains(m, "first at offset 5")) << m;
    EXPECT_TRUE(contains(m, "freed at ")) << m;
    EXPECT_TRUE(contains(m, "debug_quarantine_test.cpp:" + std::to_string(free_line))) << m;
    EXPECT_TRUE(contains(m, "allocated at ")) << m;
    EXPECT_TRUE(contains(m, "debug_quarantine_test.cpp:" + std::to_string(alloc_line))) << m;
    EXPECT_EQ(rec.last().pointer, p);
    EXPECT_EQ(d.quarantined_blocks(), 1u);
    EXPECT_EQ(d.inner().live(), 1u); // p went back to A all the same; q is held
}

TEST(DebugQuarantine, ABlockLargerThanTheQuarantineLeavesAtOnce) {
    strata::test::recording_handler rec;
    debug<counting_heap> d(with_quarantine(64, 16)); // one 72-byte block already exceeds 64 bytes
    void* p = d.allocate(40);
    d.deallocate(p, 40); // held, over the byte budget, so out again (checked: clean)
    EXPECT_EQ(d.quarantined_blocks(), 0u);
    EXPECT_EQ(d.inner().frees, 1u);
    EXPECT_TRUE(rec.empty());
}

TEST(DebugQuarantine, VerifyChecksHeldBlocksWithoutReleasingThem) {
    strata::test::recording_handler rec;
    debug<test_heap> d;
    void* p = d.allocate(100);
    d.deallocate(p, 100);
    EXPECT_TRUE(d.verify());
    write_after_free(p, 99, 0);
    write_after_free(p, 100, 0); // the back fence's first byte
    EXPECT_FALSE(d.verify());
    ASSERT_TRUE(rec.saw_one(violation_kind::corruption));
    EXPECT_TRUE(contains(rec.last().message, "use after free: 2 bytes")) << rec.last().message;
    EXPECT_TRUE(contains(rec.last().message, "first at offset 99")) << rec.last().message;
    EXPECT_EQ(d.quarantined_blocks(), 1u); // still held
    if (STRATA_ASAN) {
        EXPECT_TRUE(strata::is_poisoned(p, 1)); // and poisoned again
    }
    rec.clear();
}

TEST(DebugQuarantine, DestructionChecksHeldBlocksBeforeTheLeakReport) {
    strata::test::recording_handler rec;
    {
        debug<counting_heap> d;
        void* p = d.allocate(16);
        (void)d.allocate(8); // leaked
        d.deallocate(p, 16);
        write_after_free(p, 0, 1);
        EXPECT_TRUE(rec.empty());
    }
    ASSERT_EQ(rec.count(), 2u);
    EXPECT_EQ(rec.all()[0].kind, violation_kind::corruption);
    EXPECT_TRUE(contains(rec.all()[0].message, "use after free")) << rec.all()[0].message;
    EXPECT_EQ(rec.all()[1].kind, violation_kind::leak);
}

TEST(DebugQuarantine, ResetChecksAndDropsHeldBlocksWithoutGivingThemToA) {
    strata::test::recording_handler rec;
    debug<counting_heap> d;
    void* p = d.allocate(16);
    void* q = d.allocate(16);
    d.deallocate(p, 16);
    d.deallocate(q, 16);
    write_after_free(q, 15, 7);
    EXPECT_EQ(d.inner().frees, 0u);
    d.reset();
    EXPECT_EQ(d.inner().frees, 0u); // dropped, not freed: A was reset
    EXPECT_EQ(d.quarantined_blocks(), 0u);
    EXPECT_EQ(d.inner().stats().live_allocations, 0u);
    ASSERT_TRUE(rec.saw_one(violation_kind::corruption));
    EXPECT_TRUE(contains(rec.last().message, "use after free")) << rec.last().message;
    rec.clear();
    // The memory went back to the heap with A's reset: not poisoned any more.
    void* r = d.allocate(16);
    ASSERT_NE(r, nullptr);
    std::memset(r, 0, 16);
    d.deallocate(r, 16);
    EXPECT_TRUE(rec.empty());
}

TEST(DebugQuarantine, ADoubleFreeOfAHeldBlockIsADoubleFreeEvenWithNoHistory) {
    strata::test::recording_handler rec;
    debug_options o;
    o.freed_history = 0; // the history still covers every held block
    debug<test_heap> d(o);
    void* p = d.allocate(32);
    void* keep = d.allocate(32);
    d.deallocate(p, 32);
    d.deallocate(p, 32);
    EXPECT_TRUE(rec.saw_one(violation_kind::double_free));
    d.deallocate(p);
    EXPECT_EQ(rec.count(), 2u);
    EXPECT_EQ(rec.last().kind, violation_kind::double_free);
    d.deallocate(keep, 32);
    EXPECT_EQ(d.quarantined_blocks(), 2u);
    EXPECT_EQ(d.inner().bad_frees(), 0u);
}

TEST(DebugQuarantine, BytesAndBlocksBoundWhatIsHeld) {
    strata::test::recording_handler rec;
    debug<test_heap> d(with_quarantine(1000, 4));
    std::vector<void*> ps;
    for (int i = 0; i < 10; ++i)
        ps.push_back(d.allocate(100)); // 132 bytes each inside A
    for (void* p : ps) {
        d.deallocate(p, 100);
        EXPECT_LE(d.quarantined_blocks(), 4u);
        EXPECT_LE(d.quarantined_bytes(), 1000u);
    }
    EXPECT_EQ(d.quarantined_blocks(), 4u);
    EXPECT_EQ(d.inner().live(), 4u);
    for (int i = 0; i < 10; ++i)
        ps[static_cast<std::size_t>(i)] = d.allocate(300); // 332 bytes: three fit in 1000
    for (void* p : ps)
        d.deallocate(p, 300);
    EXPECT_EQ(d.quarantined_blocks(), 3u);
    EXPECT_EQ(d.quarantined_bytes(), 3u * 332u);
    EXPECT_TRUE(rec.empty());
}

// A quarantine must not make a request fail that would succeed without it: when A runs out, held
// blocks go back (checked) and the request is retried once.
TEST(DebugQuarantine, HeldBlocksGoBackWhenTheAllocatorRunsOut) {
    strata::test::recording_handler rec;
    debug<counting_heap> d;
    d.inner().max_live = 1; // room for one block
    void* p = d.allocate(64);
    ASSERT_NE(p, nullptr);
    d.deallocate(p, 64); // held: A still counts it live
    write_after_free(p, 3, 0);
    void* q = d.allocate(64); // A refuses, p goes back, the retry succeeds
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(d.inner().frees, 1u);
    EXPECT_EQ(d.quarantined_blocks(), 0u);
    ASSERT_TRUE(rec.saw_one(violation_kind::corruption)); // checked on the way out
    EXPECT_TRUE(contains(rec.last().message, "first at offset 3")) << rec.last().message;
    rec.clear();
    d.deallocate(q, 64);
    d.inner().fail = true; // out for good: the retry fails too, and that is the answer
    EXPECT_EQ(d.allocate(64), nullptr);
    EXPECT_EQ(d.quarantined_blocks(), 0u);
    EXPECT_EQ(d.inner().frees, 2u);
    EXPECT_TRUE(rec.empty());
}

TEST(DebugQuarantine, OverABuddyAUseAfterFreeIsCaught) {
    strata::test::recording_handler rec;
    alignas(4096) static std::byte region[1 << 16];
    {
        debug<strata::buddy> d(std::span<std::byte>(region), 16);
        auto* p = static_cast<unsigned char*>(d.allocate(64));
        ASSERT_NE(p, nullptr);
        d.deallocate(p, 64);
        write_after_free(p, 0, 0x42);
        auto* q = static_cast<unsigned char*>(d.allocate(64));
        EXPECT_NE(q, p); // p is held: the buddy cannot hand it out again
        d.deallocate(q, 64);
        EXPECT_FALSE(d.verify());
        EXPECT_TRUE(rec.saw_one(violation_kind::corruption));
        rec.clear();
    }
    ASSERT_EQ(rec.count(), 1u); // and once more on the way out at destruction
    EXPECT_TRUE(contains(rec.last().message, "use after free")) << rec.last().message;
}

TEST(DebugQuarantineDeathTest, UnderAsanATouchOfAHeldBlockFaultsAtOnce) {
    if (!STRATA_ASAN) GTEST_SKIP() << "needs AddressSanitizer";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    debug<test_heap> d;
    auto* p = static_cast<volatile unsigned char*>(d.allocate(64));
    d.deallocate(const_cast<unsigned char*>(p), 64);
    EXPECT_DEATH(p[10] = 1, "use-after-poison");
    EXPECT_DEATH((void)p[63], "use-after-poison");
}

// A frame allocator recycles a frame's memory at next_frame() without any free: a block held
// across that was given back later, freeing the block handed out at its address since (found by
// review). The quarantine is off over it by default; drop_quarantine() serves a reset via inner().
TEST(DebugQuarantine, IsOffOverAFrameAllocatorAndDropQuarantineServesResetsThroughInner) {
    std::vector<std::byte> buf(1 << 16);
    {
        debug<strata::frame_allocator<2>> d{std::span<std::byte>(buf)};
        EXPECT_EQ(d.options().quarantine_bytes, 0u);
        void* p = d.allocate(64);
        d.deallocate(p, 64);
        EXPECT_EQ(d.quarantined_blocks(), 0u);
    }
    debug<test_heap> d;
    void* p = d.allocate(32);
    d.deallocate(p, 32);
    ASSERT_EQ(d.quarantined_blocks(), 1u);
    d.drop_quarantine();
    EXPECT_EQ(d.quarantined_blocks(), 0u);
    // Forgotten, not given back: the caller recycles A's memory next (here: never; test_heap
    // reports what it still holds at destruction, so free it by hand).
    d.inner().deallocate(static_cast<std::byte*>(p) - 16, 64);
}

// Also through the wrappers that forward to one (allocator_ref, tracked): debug<> looks through
// their upstream_type, so a block held across next_frame() is not reported as written after free
// once its address is handed out again.
TEST(DebugQuarantine, IsOffOverAFrameAllocatorBehindAWrapper) {
    std::vector<std::byte> buf(1 << 16);
    strata::frame_allocator<2> frames{std::span<std::byte>(buf)};
    strata::test::recording_handler rec;
    {
        debug<strata::allocator_ref<strata::frame_allocator<2>>> d(frames);
        EXPECT_EQ(d.options().quarantine_bytes, 0u);
        void* p = d.allocate(64);
        d.deallocate(p, 64);
        EXPECT_EQ(d.quarantined_blocks(), 0u);
        frames.next_frame();
        frames.next_frame(); // p's frame again
        void* q = d.allocate(64);
        std::memset(q, 1, 64);
        void* r = d.allocate(16);
        d.deallocate(r, 16);
        d.deallocate(q, 64);
    }
    strata::tracker t("frames");
    debug<strata::tracked<strata::allocator_ref<strata::frame_allocator<2>>>> dt(t, frames);
    EXPECT_EQ(dt.options().quarantine_bytes, 0u);
    EXPECT_EQ(rec.count(), 0u);
}

// verify() reads each held block, unpoisoned for the read: a handler that throws out of the
// use-after-free report must not leave that block unpoisoned.
TEST(DebugQuarantine, VerifyPoisonsAHeldBlockAgainWhenTheHandlerThrows) {
    debug<test_heap> d;
    auto* p = static_cast<unsigned char*>(d.allocate(32));
    d.deallocate(p, 32);
    strata::unpoison(p, 1);
    p[0] = 1; // a write after free
    strata::poison(p, 1);
    {
        strata::scoped_violation_handler h(
            [](const strata::violation&) { throw std::runtime_error("stop"); });
        EXPECT_THROW((void)d.verify(), std::runtime_error);
    }
    if (STRATA_ASAN) {
        EXPECT_TRUE(strata::is_poisoned(p, 32));
    }
    strata::unpoison(p, 1);
    p[0] = 0xDD; // restored, so the destructor's check is quiet
    strata::poison(p, 1);
}

} // namespace
