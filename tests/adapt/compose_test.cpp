// Adapters stacked on one another: fallback, segregator, debug, guarded and tracked composed, and
// how frees are routed when debug<> sits on one side of a heap both sides share.
#include <cstddef>
#include <functional>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "strata/adapt/allocator_ref.hpp"
#include "strata/adapt/debug.hpp"
#include "strata/adapt/fallback.hpp"
#include "strata/adapt/guarded.hpp"
#include "strata/adapt/segregator.hpp"
#include "strata/adapt/std_allocator.hpp"
#include "strata/adapt/tracked.hpp"
#include "strata/heap/tlsf.hpp"

#include "support/adapt_allocators.hpp"
#include "support/recording_handler.hpp"
#include "support/reference_model.hpp"

namespace {

using strata::fallback;
using strata::segregator;
using strata::test::test_heap;
using strata::test::test_stack;

// debug<> on the small side of one tlsf that both sides share.
using shared_heap_segregator =
    segregator<64, strata::debug<strata::allocator_ref<strata::tlsf>>, strata::allocator_ref<strata::tlsf>>;

// The adapters stack: a tracked, debugged segregator of a stack and a heap.
TEST(Compose, AdaptersStack) {
    strata::tracker t("composed");
    strata::tracked<strata::debug<segregator<64, test_stack, test_heap>>> a(t);
    void* p = a.allocate(16);
    void* q = a.allocate(640);
    EXPECT_EQ(t.in_use(), 656u);
    EXPECT_TRUE(a.inner().inner().small().owns(p));
    EXPECT_TRUE(a.inner().inner().large().owns(q));
    a.deallocate(q, 640);
    a.deallocate(p, 16);
    EXPECT_EQ(t.in_use(), 0u);
    EXPECT_EQ(a.inner().live_blocks(), 0u);
}

// STL containers over the stack of adapters: debug<> checks that every free names the size and
// alignment of its allocation, tracked<> that everything the container took it gave back.
TEST(Compose, ContainersOverTrackedDebug) {
    strata::test::recording_handler rec;
    strata::tracker t("containers");
    {
        strata::tracked<strata::debug<test_heap>> a(t);
        {
            std::vector<int, strata::std_allocator<int, decltype(a)>> v(a);
            for (int i = 0; i < 1000; ++i)
                v.push_back(i);
            std::map<int, int, std::less<>, strata::std_allocator<std::pair<const int, int>, decltype(a)>> m(
                a);
            for (int i = 0; i < 100; ++i)
                m[i] = i;
            EXPECT_GT(t.in_use(), 1000 * sizeof(int));
            EXPECT_EQ(a.inner().live_blocks(), t.totals().live);
        }
        EXPECT_EQ(t.in_use(), 0u);
        EXPECT_EQ(a.inner().live_blocks(), 0u);
        EXPECT_TRUE(a.inner().verify());
    }
    EXPECT_TRUE(rec.empty());
}

} // namespace

// debug<A>'s owns() means "live": a double free of a debug block is routed by claims() to debug,
// which reports it as one at every checks level; the other allocator never sees it.
TEST(Compose, ADoubleFreeOfADebugBlockGoesToDebug) {
    strata::test::recording_handler rec;
    {
        fallback<strata::debug<test_heap>, test_heap> f;
        f.primary().inner().set_limit(64); // larger requests fall back to the secondary
        void* p = f.allocate(32);
        void* big = f.allocate(1000);
        ASSERT_TRUE(f.primary().owns(p));
        ASSERT_TRUE(f.secondary().owns(big));
        f.deallocate(p, 32);
        EXPECT_TRUE(rec.empty());
        f.deallocate(p, 32);
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
        f.deallocate(p);
        EXPECT_EQ(rec.count(), 2u);
        EXPECT_EQ(rec.last().kind, strata::violation_kind::double_free);
        EXPECT_EQ(f.secondary().bad_frees(), 0u);
        EXPECT_EQ(f.secondary().stats().live_allocations, 1u);
        f.deallocate(big, 1000);
        EXPECT_EQ(f.secondary().bad_frees(), 0u);
    }
    rec.clear();
    {
        segregator<64, strata::debug<test_heap>, test_heap> s;
        void* p = s.allocate(32);
        s.deallocate(p);
        s.deallocate(p); // unsized: routed by what Small claims
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
        s.deallocate(p, 32); // sized: routed by size, judged by claims
        EXPECT_EQ(rec.count(), 2u);
        EXPECT_EQ(rec.last().kind, strata::violation_kind::double_free);
        EXPECT_EQ(s.large().bad_frees(), 0u);
    }
}

namespace {

// Two allocators handing out the same 256 bytes in turn, each owning them (owns(): live) only while
// it holds them: the way two heaps over one page pool can give one address to both, one after the
// other. Under debug<> with the same fences, both hand the caller the same pointer.
struct shared_cell {
    alignas(64) std::byte bytes[256];
    const void* holder = nullptr;
};

class cell_allocator {
public:
    explicit cell_allocator(shared_cell& c) noexcept : cell_(&c) {}
    cell_allocator(const cell_allocator&) = delete;
    cell_allocator& operator=(const cell_allocator&) = delete;

    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = strata::default_alignment) noexcept {
        if (refuse || cell_->holder != nullptr || size > sizeof cell_->bytes || align > 64) return nullptr;
        cell_->holder = this;
        return cell_->bytes;
    }
    void deallocate(void* p, std::size_t, std::size_t = strata::default_alignment) noexcept {
        if (!owns(p)) {
            ++bad_frees;
            return;
        }
        cell_->holder = nullptr;
    }
    [[nodiscard]] bool owns(const void* p) const noexcept {
        const auto* b = static_cast<const std::byte*>(p);
        return cell_->holder == this && b >= cell_->bytes && b < cell_->bytes + sizeof cell_->bytes;
    }
    [[nodiscard]] strata::stats stats() const noexcept {
        strata::stats s;
        s.live_allocations = cell_->holder == this ? 1 : 0;
        return s;
    }

    bool refuse = false;
    std::size_t bad_frees = 0;

private:
    shared_cell* cell_;
};

// debug<cell_allocator> without a quarantine (the freed block goes straight back to the cell, so
// the other side can get it at once), built from the cell alone so fallback and segregator can
// construct it from one argument.
struct cell_debug : strata::debug<cell_allocator> {
    explicit cell_debug(shared_cell& c) : strata::debug<cell_allocator>(options(), c) {}
    static strata::debug_options options() {
        strata::debug_options o;
        o.quarantine_bytes = 0;
        return o;
    }
};

} // namespace

// A valid free of Secondary's live block goes to Secondary even when debug<Primary> remembers
// freeing a block at that address (no false double_free, no leak): live blocks are asked for
// first, the freed history only for a pointer no side owns.
TEST(Compose, FallbackSendsALiveSecondaryBlockToSecondaryThoughPrimaryRemembersTheAddress) {
    strata::test::recording_handler rec;
    shared_cell cell;
    {
        fallback<cell_debug, cell_debug> f(cell, cell);
        void* p = f.allocate(32);
        ASSERT_TRUE(f.primary().owns(p));
        f.deallocate(p, 32);
        ASSERT_TRUE(f.primary().claims(p)); // remembered
        f.primary().inner().refuse = true;  // Primary exhausted
        void* q = f.allocate(32);
        ASSERT_EQ(q, p); // Secondary's block, at the address Primary remembers
        ASSERT_TRUE(f.secondary().owns(q));
        f.deallocate(q, 32);
        EXPECT_TRUE(rec.empty()) << rec.last().message;
        EXPECT_EQ(f.secondary().live_blocks(), 0u);
        q = f.allocate(32);
        ASSERT_EQ(q, p);
        f.deallocate(q); // unsized: the same routing
        EXPECT_TRUE(rec.empty()) << rec.last().message;
        EXPECT_EQ(f.secondary().live_blocks(), 0u);
        // A true double free still reaches a side that remembers it, and is reported as one.
        f.deallocate(q, 32);
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
        EXPECT_EQ(f.primary().inner().bad_frees + f.secondary().inner().bad_frees, 0u);
    }
    EXPECT_EQ(rec.count(), 1u); // no leak at destruction
}

// debug<> on one side of a heap both sides share: a block debug still holds in its quarantine is
// inside the heap, so the other side's owns() says yes, yet no one can have handed it out again.
// A double free of it goes to debug (double_free), not to the heap, which was handed debug's user
// pointer 16 bytes into a block it had not had back (checks 0: a crash).
TEST(Compose, ADoubleFreeOfAQuarantinedBlockGoesToDebugThoughTheSharedHeapOwnsTheAddress) {
    std::vector<std::byte> buf(1 << 20);
    strata::tlsf heap{std::span<std::byte>(buf)};
    {
        strata::test::recording_handler rec;
        shared_heap_segregator s(heap, heap);
        void* p = s.allocate(32);
        s.deallocate(p);
        ASSERT_EQ(s.small().quarantined_blocks(), 1u);
        ASSERT_TRUE(s.large().owns(p));
        s.deallocate(p);     // unsized
        s.deallocate(p, 32); // sized
        ASSERT_EQ(rec.count(), 2u);
        EXPECT_EQ(rec.all()[0].kind, strata::violation_kind::double_free);
        EXPECT_EQ(rec.all()[1].kind, strata::violation_kind::double_free);
        EXPECT_EQ(heap.stats().live_allocations, 1u); // still held by debug
        EXPECT_TRUE(heap.check());
    }
    {
        strata::test::recording_handler rec;
        fallback<strata::debug<strata::allocator_ref<strata::tlsf>>, strata::allocator_ref<strata::tlsf>> f(
            heap, heap);
        void* p = f.allocate(32);
        f.deallocate(p, 32);
        f.deallocate(p, 32);
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
        EXPECT_TRUE(heap.check());
    }
    EXPECT_EQ(heap.stats().live_allocations, 0u);
}

// The same when the debug side is itself a fallback, or guarded<>, behind allocator_ref: both
// forward strata::holds (and guarded forwards claims), so the outer fallback sends the pointer to
// debug rather than to the heap, and tracked<guarded<debug<>>> calls it a double free.
TEST(Compose, ADoubleFreeOfAQuarantinedBlockReachesDebugThroughNestedWrappers) {
    std::vector<std::byte> buf(1 << 20), buf2(1 << 20);
    strata::tlsf heap{std::span<std::byte>(buf)};
    strata::tlsf other{std::span<std::byte>(buf2)};
    using ref = strata::allocator_ref<strata::tlsf>;
    {
        strata::test::recording_handler rec;
        fallback<strata::debug<ref>, ref> inner(heap, other);
        fallback<strata::allocator_ref<fallback<strata::debug<ref>, ref>>, ref> f(inner, heap);
        void* p = f.allocate(32);
        f.deallocate(p, 32);
        ASSERT_EQ(inner.primary().quarantined_blocks(), 1u);
        EXPECT_TRUE(strata::holds(inner, p));
        f.deallocate(p, 32);
        ASSERT_EQ(rec.count(), 1u);
        EXPECT_EQ(rec.all()[0].kind, strata::violation_kind::double_free);
        EXPECT_TRUE(heap.check());
    }
    strata::guarded_options go;
    go.sample_every = 1'000'000; // nothing sampled: every block is debug's
    go.guard.reserve_bytes = 1 << 20;
    {
        strata::test::recording_handler rec;
        strata::guarded<strata::debug<ref>> g(go, heap);
        fallback<strata::allocator_ref<strata::guarded<strata::debug<ref>>>, ref> f(g, heap);
        void* p = f.allocate(32);
        f.deallocate(p, 32);
        EXPECT_TRUE(strata::holds(g, p));
        f.deallocate(p, 32);
        ASSERT_EQ(rec.count(), 1u);
        EXPECT_EQ(rec.all()[0].kind, strata::violation_kind::double_free);
        EXPECT_TRUE(heap.check());
    }
    {
        strata::test::recording_handler rec;
        strata::tracker t("guarded");
        strata::tracked<strata::guarded<strata::debug<ref>>> a(t, go, heap);
        void* p = a.allocate(32);
        a.deallocate(p, 32);
        a.deallocate(p, 32);
        ASSERT_EQ(rec.count(), 1u);
        EXPECT_EQ(rec.all()[0].kind, strata::violation_kind::double_free);
        EXPECT_EQ(t.in_use(), 0u);
    }
    EXPECT_EQ(heap.stats().live_allocations, 0u);
    EXPECT_TRUE(heap.check());
}

// A sized free naming the wrong side, of a block debug<> on the other side holds, over a heap both
// sides share: the heap's owns() says yes to the address, yet the block is debug's. At checks >= 1
// it is a size_mismatch and nothing is freed (the heap was handed debug's user pointer and
// reported a foreign pointer).
TEST(Compose, SegregatorSizedFreeOnTheWrongSideOfADebugBlockOverASharedHeap) {
    if (!strata::test::checks_on) GTEST_SKIP() << "routed by size at checks 0, as documented";
    std::vector<std::byte> buf(1 << 20);
    strata::tlsf heap{std::span<std::byte>(buf)};
    strata::test::recording_handler rec;
    {
        shared_heap_segregator s(heap, heap);
        void* p = s.allocate(32); // Small: debug's
        ASSERT_TRUE(s.large().owns(p));
        s.deallocate(p, 100); // names Large
        ASSERT_EQ(rec.count(), 1u);
        EXPECT_EQ(rec.all()[0].kind, strata::violation_kind::size_mismatch);
        EXPECT_TRUE(s.small().owns(p)); // still live
        EXPECT_TRUE(heap.check());
        s.deallocate(p, 32);
        EXPECT_EQ(rec.count(), 1u);
    }
    EXPECT_EQ(heap.stats().live_allocations, 0u);
}

TEST(Compose, SegregatorSendsALiveLargeBlockToLargeThoughSmallRemembersTheAddress) {
    strata::test::recording_handler rec;
    shared_cell cell;
    {
        segregator<64, cell_debug, cell_debug> s(cell, cell);
        void* p = s.allocate(32); // Small
        s.deallocate(p);
        ASSERT_TRUE(s.small().claims(p));
        void* q = s.allocate(100); // Large, at the address Small remembers
        ASSERT_EQ(q, p);
        s.deallocate(q); // unsized: routed to Large, which owns it live
        EXPECT_TRUE(rec.empty()) << rec.last().message;
        EXPECT_EQ(s.large().live_blocks(), 0u);
        q = s.allocate(100);
        ASSERT_EQ(q, p);
        s.deallocate(q, 100); // sized: routed by size, judged live first
        EXPECT_TRUE(rec.empty()) << rec.last().message;
        EXPECT_EQ(s.large().live_blocks(), 0u);
        if (strata::test::checks_on) {
            // A sized free naming Small's side for Large's live block: the wrong side, not a double
            // free of Small's old block.
            q = s.allocate(100);
            s.deallocate(q, 32);
            EXPECT_TRUE(rec.saw_one(strata::violation_kind::size_mismatch));
            EXPECT_EQ(s.large().live_blocks(), 1u);
            s.deallocate(q, 100);
            EXPECT_EQ(rec.count(), 1u);
        }
    }
    EXPECT_LE(rec.count(), 1u); // no leak at destruction
}

// fallback and segregator are self-verifying exactly when both sides are, and reporting when either
// side is (adapt/free_reports.hpp): that is what tracked<> over them goes by.
static_assert(strata::self_verifying_allocator<fallback<strata::debug<test_heap>, strata::debug<test_heap>>>);
static_assert(!strata::self_verifying_allocator<fallback<strata::debug<test_heap>, test_heap>>);
static_assert(strata::reporting_allocator<fallback<strata::debug<test_heap>, test_heap>>);
static_assert(strata::reporting_allocator<fallback<test_heap, strata::debug<test_heap>>>);
static_assert(!strata::reporting_allocator<fallback<test_heap, test_heap>>);
static_assert(
    strata::self_verifying_allocator<segregator<64, strata::debug<test_heap>, strata::debug<test_heap>>>);
static_assert(!strata::self_verifying_allocator<segregator<64, strata::debug<test_heap>, test_heap>>);
static_assert(strata::reporting_allocator<segregator<64, test_heap, strata::debug<test_heap>>>);
static_assert(strata::reporting_allocator<strata::tracked<fallback<strata::debug<test_heap>, test_heap>>>);

namespace {

// A free where debug<> (inside a fallback or segregator) finds a broken fence: reported, and the
// block freed all the same, so tracked<> counts the free (in_use and live go back to 0). Runs at
// every checks level.
template <class Composed, class Debug>
void expect_broken_fence_free_counted(Debug& (*debug_of)(Composed&)) {
    strata::test::recording_handler rec;
    strata::tracker t("composed");
    strata::tracked<Composed> a(t);
    auto* p = static_cast<unsigned char*>(a.allocate(24));
    ASSERT_NE(p, nullptr);
    ASSERT_TRUE(debug_of(a.inner()).owns(p));
    p[24] = 0; // one byte past the block: debug's back fence
    a.deallocate(p, 24);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::corruption));
    EXPECT_EQ(debug_of(a.inner()).live_blocks(), 0u);
    EXPECT_EQ(t.in_use(), 0u);
    EXPECT_EQ(t.own().live, 0u);
}

// A double free of debug's block: debug reports it and ignores it; tracked<> sees it reported as a
// double free and counts the block's free once, at every checks level.
template <class Composed>
void expect_double_free_counted_once() {
    strata::test::recording_handler rec;
    strata::tracker t("composed");
    strata::tracked<Composed> a(t);
    void* keep = a.allocate(40);
    void* p = a.allocate(24);
    a.deallocate(p, 24);
    EXPECT_TRUE(rec.empty());
    a.deallocate(p, 24);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
    EXPECT_EQ(t.in_use(), 40u);
    EXPECT_EQ(t.own().live, 1u);
    a.deallocate(keep, 40);
    EXPECT_EQ(t.in_use(), 0u);
    EXPECT_EQ(rec.count(), 1u);
}

using debug_first = fallback<strata::debug<test_heap>, test_heap>;
using debug_both = fallback<strata::debug<test_heap>, strata::debug<test_heap>>;
using debug_small = segregator<64, strata::debug<test_heap>, test_heap>;
using debug_sides = segregator<64, strata::debug<test_heap>, strata::debug<test_heap>>;

} // namespace

TEST(Compose, TrackedCountsAFreeWithABrokenFenceInsideAFallbackOrSegregator) {
    expect_broken_fence_free_counted<debug_first>(+[](debug_first & f) -> auto& { return f.primary(); });
    expect_broken_fence_free_counted<debug_both>(+[](debug_both & f) -> auto& { return f.primary(); });
    expect_broken_fence_free_counted<debug_small>(+[](debug_small & s) -> auto& { return s.small(); });
    expect_broken_fence_free_counted<debug_sides>(+[](debug_sides & s) -> auto& { return s.small(); });
}

TEST(Compose, TrackedCountsADoubleFreeInsideAFallbackOrSegregatorOnce) {
    expect_double_free_counted_once<debug_first>();
    expect_double_free_counted_once<debug_both>();
    expect_double_free_counted_once<debug_small>();
    expect_double_free_counted_once<debug_sides>();
}
