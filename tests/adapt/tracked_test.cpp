#include "strata/adapt/tracked.hpp"

#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "strata/adapt/allocator_ref.hpp"
#include "strata/adapt/debug.hpp"
#include "strata/adapt/locked.hpp"
#include "strata/linear/arena.hpp"

#include "support/adapt_allocators.hpp"
#include "support/recording_handler.hpp"
#include "support/reference_model.hpp"

namespace {

using strata::tracked;
using strata::tracker;
using strata::test::test_arena;
using strata::test::test_heap;
using strata::test::test_pool;
using strata::test::test_stack;
using strata::test::test_tlsf;

static_assert(strata::allocator<tracked<test_heap>>);
static_assert(strata::owning_allocator<tracked<test_heap>>);
static_assert(strata::resettable_allocator<tracked<test_arena>>);
static_assert(strata::marking_allocator<tracked<test_arena>>);
static_assert(strata::self_verifying_allocator<strata::debug<test_heap>>);
static_assert(strata::self_verifying_allocator<strata::allocator_ref<strata::debug<test_heap>>>);
static_assert(strata::self_verifying_allocator<strata::locked<strata::debug<test_heap>>>);
static_assert(!strata::self_verifying_allocator<test_heap>);
static_assert(!strata::self_verifying_allocator<strata::allocator_ref<test_heap>>);

// ---------------------------------------------------------------------------------------------
// tracker: hierarchy, budgets, frames, reports
// ---------------------------------------------------------------------------------------------

TEST(Tracker, HierarchySumsChildren) {
    tracker engine("engine");
    tracker renderer("renderer", &engine);
    tracker textures("textures", &renderer);
    tracker meshes("meshes", &renderer);
    tracker audio("audio", &engine);

    textures.on_allocate(1000);
    textures.on_allocate(24);
    meshes.on_allocate(500);
    audio.on_allocate(7);
    renderer.on_allocate(3); // a parent may allocate itself

    EXPECT_EQ(textures.in_use(), 1024u);
    EXPECT_EQ(meshes.in_use(), 500u);
    EXPECT_EQ(renderer.in_use(), 1527u);
    EXPECT_EQ(engine.in_use(), 1534u);
    EXPECT_EQ(renderer.own().in_use, 3u);
    EXPECT_EQ(engine.own().in_use, 0u);

    EXPECT_EQ(engine.totals().live, 5u);
    EXPECT_EQ(renderer.totals().live, 4u);
    EXPECT_EQ(renderer.own().live, 1u);
    EXPECT_EQ(engine.totals().total, 5u);

    textures.on_deallocate(1000);
    EXPECT_EQ(engine.in_use(), 534u);
    EXPECT_EQ(engine.peak(), 1534u);
    EXPECT_EQ(textures.peak(), 1024u);
    EXPECT_EQ(engine.totals().live, 4u);
    EXPECT_EQ(textures.path(), "engine/renderer/textures");
    EXPECT_EQ(engine.find_child("renderer"), &renderer);
    EXPECT_EQ(renderer.find_child("nope"), nullptr);
}

TEST(Tracker, ParentPeakIsTheSubtreePeakNotTheSumOfPeaks) {
    tracker root("root");
    tracker a("a", &root);
    tracker b("b", &root);
    a.on_allocate(100);
    a.on_deallocate(100);
    b.on_allocate(100);
    EXPECT_EQ(a.peak(), 100u);
    EXPECT_EQ(b.peak(), 100u);
    EXPECT_EQ(root.peak(), 100u); // never 200 at once
    root.reset_peak();
    EXPECT_EQ(a.peak(), 0u);
    EXPECT_EQ(root.peak(), 100u);
}

TEST(Tracker, BudgetCallbackFiresExactlyOncePerCrossing) {
    tracker root("root");
    tracker child("child", &root);
    int fired = 0;
    tracker* who = nullptr;
    std::size_t crossing_size = 0;
    root.set_budget(1000, [&](tracker& t, std::size_t bytes) {
        ++fired;
        who = &t;
        crossing_size = bytes;
    });
    child.on_allocate(600);
    child.on_allocate(400); // exactly at the budget: not over
    EXPECT_EQ(fired, 0);
    EXPECT_FALSE(root.over_budget());
    child.on_allocate(8); // crosses
    EXPECT_EQ(fired, 1);
    EXPECT_EQ(who, &root);
    EXPECT_EQ(crossing_size, 8u);
    EXPECT_TRUE(root.over_budget());
    for (int i = 0; i < 100; ++i)
        child.on_allocate(10); // stays above: no more calls
    EXPECT_EQ(fired, 1);
    // Back to the budget re-arms; the next crossing fires once more.
    for (int i = 0; i < 100; ++i)
        child.on_deallocate(10);
    child.on_deallocate(8);
    EXPECT_FALSE(root.over_budget());
    EXPECT_EQ(fired, 1);
    child.on_allocate(1);
    EXPECT_EQ(fired, 2);
    EXPECT_EQ(root.budget_crossings(), 2u);
}

TEST(Tracker, BudgetSetWhileOverFiresOnNextAllocation) {
    tracker t("t");
    t.on_allocate(100);
    int fired = 0;
    t.set_budget(50, [&](tracker&, std::size_t) { ++fired; });
    EXPECT_EQ(fired, 0);
    t.on_allocate(1);
    t.on_allocate(1);
    EXPECT_EQ(fired, 1);
    t.set_budget(tracker::no_budget);
    t.on_allocate(1);
    EXPECT_EQ(fired, 1);
    EXPECT_EQ(t.budget(), tracker::no_budget);
}

TEST(Tracker, CallbackMayAllocateWithoutReentering) {
    tracker t("t");
    int fired = 0;
    t.set_budget(10, [&](tracker& self, std::size_t) {
        ++fired;
        self.on_allocate(100); // e.g. logging into a tracked buffer
    });
    t.on_allocate(20);
    EXPECT_EQ(fired, 1);
    EXPECT_EQ(t.in_use(), 120u);
}

TEST(Tracker, CallbackMaySetItsOwnBudget) {
    // Re-arming from inside the callback replaces the callback that is running; its captures must
    // outlive the call (ASan: use after free before the tracker kept the running one alive).
    tracker t("t");
    const std::string label(64, 'x'); // a closure too large for std::function's inline buffer
    std::size_t fired = 0;
    tracker::budget_callback cb;
    cb = [label, &cb, &fired](tracker& self, std::size_t) {
        self.set_budget(self.budget() * 2, cb);
        fired += label.size(); // reads the closure after set_budget
    };
    t.set_budget(100, cb);
    t.on_allocate(150);
    EXPECT_EQ(fired, 64u);
    EXPECT_EQ(t.budget(), 200u);
    t.on_allocate(100); // 250 > 200: fires again
    EXPECT_EQ(fired, 128u);
    t.set_budget(10, [](tracker& self, std::size_t) { self.set_budget(tracker::no_budget); });
    t.on_allocate(1); // removes its own budget while running
    EXPECT_EQ(t.budget(), tracker::no_budget);
    t.on_deallocate(251);
}

TEST(Tracker, CallbackSeesTheAllocationCountedOnEveryLevel) {
    tracker engine("engine");
    tracker textures("textures", &engine);
    std::size_t engine_seen = 0, own_seen = 0;
    textures.set_budget(100, [&](tracker&, std::size_t) {
        engine_seen = engine.in_use();
        own_seen = engine.own().in_use;
    });
    textures.on_allocate(150);
    EXPECT_EQ(engine_seen, 150u) << "the parent had not counted the allocation yet";
    EXPECT_EQ(own_seen, 0u);
    // Both levels crossing in one allocation: child first, each once.
    engine.set_budget(200, [&](tracker& t, std::size_t) { engine_seen = t.in_use(); });
    textures.set_budget(160, [&](tracker& t, std::size_t) { own_seen = t.in_use(); });
    textures.on_allocate(100);
    EXPECT_EQ(own_seen, 250u);
    EXPECT_EQ(engine_seen, 250u);
    EXPECT_EQ(engine.budget_crossings(), 1u);
    EXPECT_EQ(textures.budget_crossings(), 2u);
    textures.on_deallocate(250);
}

TEST(Tracked, AFreeTheWrappedAllocatorRefusesIsNotCounted) {
    STRATA_REQUIRE_CHECKS(1);
    strata::test::recording_handler rec;
    tracker t("heap");
    {
        tracked<test_tlsf> a(t);
        void* p = a.allocate(100);
        void* keep = a.allocate(50);
        a.deallocate(p, 100);
        a.deallocate(p, 100); // double free: tlsf reports it and ignores it
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
        EXPECT_EQ(t.in_use(), 50u);
        EXPECT_EQ(t.own().live, 1u);
        a.deallocate(keep, 50);
        EXPECT_EQ(t.in_use(), 0u);
    }
}

// debug<A> judges every free itself, at every checks level (its owns() means "live"): tracked must
// pass a double free through, so it is reported as one (not as a foreign pointer), and count
// nothing debug refused, at checks 0 as well.
template <class Tracked>
void expect_debug_answers_bad_frees(Tracked& a, const tracker& t) {
    strata::test::recording_handler rec;
    void* p = a.allocate(100);
    void* keep = a.allocate(50);
    ASSERT_NE(p, nullptr);
    ASSERT_NE(keep, nullptr);
    a.deallocate(p, 100);
    EXPECT_TRUE(rec.empty());
    a.deallocate(p, 100);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
    EXPECT_EQ(t.in_use(), 50u);
    EXPECT_EQ(t.own().live, 1u);
    rec.clear();
    alignas(16) unsigned char elsewhere[64] = {};
    a.deallocate(elsewhere, 64);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    EXPECT_EQ(t.in_use(), 50u);
    a.deallocate(keep, 50);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer)); // nothing more reported
    EXPECT_EQ(t.in_use(), 0u);
    EXPECT_EQ(t.own().live, 0u);
}

TEST(Tracked, OverDebugADoubleFreeIsReportedAsOneAtEveryChecksLevel) {
    tracker t("debugged");
    tracked<strata::debug<test_heap>> a(t);
    expect_debug_answers_bad_frees(a, t);
}

TEST(Tracked, OverAReferenceToDebugToo) {
    tracker t("debugged");
    strata::debug<test_heap> d;
    tracked<strata::allocator_ref<strata::debug<test_heap>>> a(t, d);
    expect_debug_answers_bad_frees(a, t);
}

// debug reports a broken fence and frees the block all the same: tracked counts the free (a report
// alone is not a refusal), so the tracker comes back down.
TEST(Tracked, OverDebugAFreeWithABrokenFenceIsCounted) {
    tracker t("debugged");
    tracked<strata::debug<test_heap>> a(t);
    auto* p = static_cast<unsigned char*>(a.allocate(24));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(t.in_use(), 24u);
    strata::test::recording_handler rec;
    p[24] = 0; // one byte past the block: the back fence
    a.deallocate(p, 24);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::corruption));
    EXPECT_EQ(t.in_use(), 0u);
    EXPECT_EQ(t.own().live, 0u);
    EXPECT_EQ(a.inner().live_blocks(), 0u);
    // Freed: held in debug's quarantine (not yet back in the heap).
    EXPECT_EQ(a.inner().quarantined_blocks(), 1u);
    EXPECT_EQ(a.inner().inner().stats().live_allocations, 1u);
}

// tracked<A> passes on debug's "checks its own frees", so an outer tracker judges the inner one
// like debug itself: a double free is reported once, as one, and counted by neither.
TEST(Tracked, NestedTrackersOverDebugCountADoubleFreeNowhere) {
    tracker outer_t("outer");
    tracker inner_t("inner");
    static_assert(strata::self_verifying_allocator<tracked<strata::debug<test_heap>>>);
    tracked<tracked<strata::debug<test_heap>>> a(outer_t, inner_t);
    void* p = a.allocate(40);
    void* keep = a.allocate(8);
    strata::test::recording_handler rec;
    a.deallocate(p, 40);
    a.deallocate(p, 40);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
    EXPECT_EQ(outer_t.in_use(), 8u);
    EXPECT_EQ(inner_t.in_use(), 8u);
    a.deallocate(keep, 8);
    EXPECT_EQ(outer_t.in_use(), 0u);
    EXPECT_EQ(inner_t.own().live, 0u);
}

// A rewind releases bytes and count each down to the mark's, also when blocks from before the mark
// were freed since (the count is then already below the mark's).
TEST(Tracked, RewindReleasesBytesAndCountEachDownToTheMark) {
    tracker t("frame");
    tracked<test_arena> a(t);
    void* x = a.allocate(8);
    void* y = a.allocate(8);
    (void)a.allocate(8);     // the top: freeing x and y below it moves nothing in the arena
    const auto m = a.mark(); // 24 bytes, 3 live
    a.deallocate(x, 8);      // counted frees, which the arena does not reclaim
    a.deallocate(y, 8);
    (void)a.allocate(4000); // 4008 bytes, 2 live
    a.rewind(m);
    // Bytes fall to the mark's 24, the count stays at 2 (never below the mark's 3): 16 bytes and one
    // allocation high, within the freed blocks' sizes and number, as the docs bound it.
    EXPECT_EQ(t.in_use(), 24u);
    EXPECT_EQ(t.own().live, 2u);
    a.reset();
    EXPECT_EQ(t.in_use(), 0u);
    EXPECT_EQ(t.own().live, 0u);
}

TEST(Tracker, FrameCountersResetRecursively) {
    tracker root("root");
    tracker child("child", &root);
    child.on_allocate(10);
    child.on_allocate(20);
    child.on_deallocate(10);
    root.on_allocate(5);
    auto c = root.totals();
    EXPECT_EQ(c.frame_allocations, 3u);
    EXPECT_EQ(c.frame_bytes, 35u);
    EXPECT_EQ(c.frame_frees, 1u);
    root.reset_frame();
    c = root.totals();
    EXPECT_EQ(c.frame_allocations, 0u);
    EXPECT_EQ(c.frame_bytes, 0u);
    EXPECT_EQ(c.frame_frees, 0u);
    EXPECT_EQ(child.own().frame_allocations, 0u);
    EXPECT_EQ(c.in_use, 25u); // not a frame counter
    EXPECT_EQ(c.total, 3u);
    child.on_allocate(1);
    EXPECT_EQ(root.totals().frame_allocations, 1u);
}

TEST(Tracker, DestroyedChildLeavesParentConsistent) {
    tracker root("root");
    {
        tracker child("child", &root);
        tracker grandchild("grandchild", &child);
        grandchild.on_allocate(64);
        EXPECT_EQ(root.in_use(), 64u);
    }
    EXPECT_EQ(root.in_use(), 0u);
    EXPECT_EQ(root.first_child(), nullptr);
    // Destroying a parent first leaves the child a root.
    auto parent = std::make_unique<tracker>("p");
    tracker orphan("o", parent.get());
    orphan.on_allocate(8);
    parent.reset();
    EXPECT_EQ(orphan.parent(), nullptr);
    EXPECT_EQ(orphan.path(), "o");
    orphan.on_allocate(8);
    EXPECT_EQ(orphan.in_use(), 16u);
}

TEST(Tracker, TextReportListsEveryTrackerIndented) {
    tracker engine("engine");
    tracker renderer("renderer", &engine);
    tracker textures("textures", &renderer);
    textures.on_allocate(4096);
    renderer.set_budget(1000);
    const std::string r = engine.report_text();
    EXPECT_NE(r.find("tracker"), std::string::npos);
    EXPECT_NE(r.find("\nengine "), std::string::npos) << r;
    EXPECT_NE(r.find("\n  renderer "), std::string::npos) << r;
    EXPECT_NE(r.find("\n    textures "), std::string::npos) << r;
    EXPECT_NE(r.find("4096"), std::string::npos);
    EXPECT_NE(r.find("1000"), std::string::npos);
    EXPECT_NE(r.find("OVER"), std::string::npos);
}

TEST(Tracker, JsonReportHasTheTree) {
    tracker engine("engine");
    tracker renderer("ren\"derer", &engine);
    renderer.set_budget(512);
    renderer.on_allocate(100);
    const std::string j = engine.report_json();
    EXPECT_EQ(j.substr(0, 17), "{\"name\":\"engine\",");
    EXPECT_NE(j.find("\"name\":\"ren\\\"derer\""), std::string::npos) << j;
    EXPECT_NE(j.find("\"budget\":null"), std::string::npos);
    EXPECT_NE(j.find("\"budget\":512"), std::string::npos);
    EXPECT_NE(j.find("\"in_use\":100"), std::string::npos);
    EXPECT_NE(j.find("\"own_in_use\":0"), std::string::npos);
    EXPECT_NE(j.find("\"children\":[]"), std::string::npos);
    EXPECT_EQ(j.back(), '}');
}

// ---------------------------------------------------------------------------------------------
// tracked<A>: typed over several allocators
// ---------------------------------------------------------------------------------------------

template <class A>
class TrackedTyped : public ::testing::Test {};
using TrackedBases = ::testing::Types<test_heap, test_arena, test_stack, test_pool, test_tlsf>;
TYPED_TEST_SUITE(TrackedTyped, TrackedBases);

TYPED_TEST(TrackedTyped, CountsWhatTheCallerAsked) {
    tracker root("root");
    tracker sub("sub", &root);
    tracked<TypeParam> a(sub);
    void* p = a.allocate(100, 16);
    void* q = a.allocate(28, 4);
    ASSERT_NE(p, nullptr);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(sub.in_use(), 128u);
    EXPECT_EQ(root.in_use(), 128u);
    if constexpr (tracked<TypeParam>::keeps_counts) {
        EXPECT_EQ(a.live_allocations(), 2u);
    }
    EXPECT_EQ(sub.totals().live, 2u);
    EXPECT_GE(a.stats().in_use, 128u); // the wrapped allocator's own view
    a.deallocate(q, 28, 4);
    a.deallocate(p, 100, 16);
    EXPECT_EQ(root.in_use(), 0u);
    EXPECT_EQ(root.peak(), 128u);
    EXPECT_EQ(root.totals().total, 2u);
    if constexpr (tracked<TypeParam>::keeps_counts) {
        EXPECT_EQ(a.bytes_in_use(), 0u);
    }
}

TYPED_TEST(TrackedTyped, FailuresAreNotCounted) {
    tracker t("t");
    tracked<TypeParam> a(t);
    EXPECT_EQ(a.allocate(0, 8), nullptr);
    EXPECT_EQ(a.allocate(8, 3), nullptr);
    EXPECT_EQ(a.allocate(static_cast<std::size_t>(-1), 8), nullptr);
    EXPECT_EQ(t.in_use(), 0u);
    EXPECT_EQ(t.totals().total, 0u);
    a.deallocate(nullptr, 8, 8);
    EXPECT_EQ(t.totals().frame_frees, 0u);
}

TYPED_TEST(TrackedTyped, CrossAllocatorFreeIsReportedAndIgnored) {
    STRATA_REQUIRE_CHECKS(1);
    tracker t("t");
    tracked<TypeParam> a(t);
    tracked<TypeParam> b(t);
    void* p = a.allocate(64, 16);
    void* keep = b.allocate(64, 16);
    ASSERT_NE(p, nullptr);
    strata::test::recording_handler rec;
    b.deallocate(p, 64, 16);
    ASSERT_TRUE(rec.saw_one(strata::violation_kind::foreign_pointer));
    EXPECT_EQ(rec.last().pointer, p);
    EXPECT_EQ(rec.last().allocator, "strata::tracked");
    EXPECT_EQ(t.in_use(), 128u);
    EXPECT_EQ(t.totals().live, 2u);
    b.deallocate(keep, 64, 16);
    a.deallocate(p, 64, 16);
    EXPECT_EQ(t.in_use(), 0u);
}

TYPED_TEST(TrackedTyped, DestructionReleasesBulkAllocatorsAndShowsLeaksOfOthers) {
    tracker t("t");
    {
        tracked<TypeParam> a(t);
        ASSERT_NE(a.allocate(10), nullptr);
        ASSERT_NE(a.allocate(20), nullptr);
        EXPECT_EQ(t.in_use(), 30u);
    }
    if constexpr (tracked<TypeParam>::keeps_counts) { // arena, stack, pool: reset/rewind allocators
        EXPECT_EQ(t.in_use(), 0u);
        EXPECT_EQ(t.totals().live, 0u);
    } else { // a heap destroyed with live blocks leaked them
        EXPECT_EQ(t.in_use(), 30u);
        EXPECT_EQ(t.totals().live, 2u);
    }
}

TYPED_TEST(TrackedTyped, RandomizedLifoAgainstModel) {
    tracker root("root");
    tracker t("t", &root);
    tracked<TypeParam> a(t);
    strata::test::reference_model model;
    std::vector<std::pair<void*, std::size_t>> stack; // LIFO: every base allocator frees its top
    std::mt19937_64 rng(0xadab7u);
    std::size_t expected = 0, peak = 0;
    for (int op = 0; op < 20000; ++op) {
        if (stack.empty() || rng() % 100 < 55) {
            const std::size_t size = 1 + rng() % 300;
            const std::size_t align = std::size_t{1} << (rng() % 7);
            void* p = a.allocate(size, align);
            ASSERT_NE(p, nullptr);
            model.add(p, size, align);
            stack.emplace_back(p, size);
            expected += size;
            peak = std::max(peak, expected);
        } else {
            auto [p, size] = stack.back();
            stack.pop_back();
            model.remove(p);
            a.deallocate(p, size, 1); // the base allocators ignore the alignment of a free
            expected -= size;
        }
        ASSERT_EQ(root.in_use(), expected);
    }
    EXPECT_EQ(root.peak(), peak);
    EXPECT_EQ(root.totals().live, stack.size());
    while (!stack.empty()) {
        a.deallocate(stack.back().first, stack.back().second, 1);
        stack.pop_back();
    }
    EXPECT_EQ(root.in_use(), 0u);
}

TEST(Tracked, ResetAndRewindReleaseCounts) {
    tracker t("t");
    tracked<test_arena> a(t);
    ASSERT_NE(a.allocate(100), nullptr);
    const auto m = a.mark();
    ASSERT_NE(a.allocate(50), nullptr);
    ASSERT_NE(a.allocate(25), nullptr);
    EXPECT_EQ(t.in_use(), 175u);
    a.rewind(m);
    EXPECT_EQ(t.in_use(), 100u);
    EXPECT_EQ(t.totals().live, 1u);
    EXPECT_EQ(a.stats().in_use, a.inner().stats().in_use);
    a.rewind(m); // again: nothing more to release
    EXPECT_EQ(t.in_use(), 100u);
    a.reset();
    EXPECT_EQ(t.in_use(), 0u);
    EXPECT_EQ(t.totals().live, 0u);
    EXPECT_EQ(t.totals().frame_frees, 3u);
}

TEST(Tracked, ARewindTheArenaRefusesReleasesNothing) {
    STRATA_REQUIRE_CHECKS(1);
    tracker t("t");
    tracked<test_arena> a(t);
    const auto outer = a.mark();
    ASSERT_NE(a.allocate(100), nullptr);
    const auto inner = a.mark();
    a.rewind(outer);
    ASSERT_NE(a.allocate(300), nullptr); // live across inner's position: inner is stale
    strata::test::recording_handler rec;
    a.rewind(inner);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::invalid_marker));
    EXPECT_EQ(t.in_use(), 300u);
    EXPECT_EQ(t.totals().live, 1u);
    EXPECT_EQ(a.inner().stats().live_allocations, 1u);
}

TEST(Tracked, OverAnExistingAllocatorThroughAllocatorRef) {
    strata::heap_source src;
    strata::arena frame(src);
    tracker t("frame");
    tracked<strata::allocator_ref<strata::arena>> a(t, frame);
    void* p = a.allocate(64);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(frame.owns(p));
    EXPECT_EQ(t.in_use(), 64u);
    a.reset();
    EXPECT_EQ(frame.in_use(), 0u);
    EXPECT_EQ(t.in_use(), 0u);
}

TEST(Tracked, BudgetOnASubsystemSeesItsAllocators) {
    tracker engine("engine");
    tracker textures("textures", &engine);
    int over = 0;
    engine.set_budget(4096, [&](tracker&, std::size_t) { ++over; });
    tracked<test_heap> tex(textures);
    tracked<test_heap> misc(engine);
    void* a = tex.allocate(4000);
    void* b = misc.allocate(96);
    EXPECT_EQ(over, 0);
    void* c = misc.allocate(1);
    EXPECT_EQ(over, 1);
    misc.deallocate(c, 1);
    misc.deallocate(b, 96);
    tex.deallocate(a, 4000);
}

} // namespace
