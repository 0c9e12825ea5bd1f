// strata::arena's markers: which markers a rewind refuses (another arena's, newer than the top,
// from before a reset or a move-assignment, stale ones lifted over again) and which it accepts,
// and the rewind history that tells them apart.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/core/poison.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/buffer_source.hpp"
#include "strata/source/heap_source.hpp"
#include "strata/source/virtual_memory.hpp"

#include "support/arena_test_util.hpp"
#include "support/bad_requests.hpp"
#include "support/linear_test_util.hpp"
#include "support/recording_handler.hpp"

namespace {

using strata::arena;
using strata::arena_options;
using strata::arena_reset;
using namespace strata::test; // the helpers of tests/support

TEST(ArenaFixed, MarkerFromAnotherArenaIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf1(4096), buf2(4096);
    arena a(buf1.span()), other(buf2.span());
    ASSERT_NE(other.allocate(10), nullptr);
    const arena::marker foreign = other.mark();
    ASSERT_NE(a.allocate(100), nullptr);
    strata::test::recording_handler rec;
    a.rewind(foreign);
    ASSERT_TRUE(rec.saw_one(strata::violation_kind::invalid_marker));
    EXPECT_EQ(rec.last().allocator, "strata::arena");
}

TEST(ArenaFixed, MarkerFromAnotherArenaLeavesStateUnchanged) {
    aligned_buffer buf1(4096), buf2(4096);
    arena a(buf1.span()), other(buf2.span());
    ASSERT_NE(other.allocate(10), nullptr);
    const arena::marker foreign = other.mark();
    ASSERT_NE(a.allocate(100), nullptr);
    const arena_state before = state_of(a);
    const arena_state other_before = state_of(other);
    strata::test::recording_handler rec;
    a.rewind(foreign);
    a.rewind(arena::marker{}); // a default marker belongs to no arena
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_TRUE(unchanged(other, other_before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 2u : 0u);
}

TEST(ArenaFixed, MarkerNewerThanTheTopIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    aligned_buffer buf(4096);
    arena a(buf.span());
    const arena::marker m1 = a.mark();
    ASSERT_NE(a.allocate(100), nullptr);
    const arena::marker m2 = a.mark();
    a.rewind(m1);
    strata::test::recording_handler rec;
    a.rewind(m2);
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::invalid_marker));
}

TEST(ArenaFixed, MarkerNewerThanTheTopLeavesStateUnchanged) {
    aligned_buffer buf(4096);
    arena a(buf.span());
    const arena::marker m1 = a.mark();
    ASSERT_NE(a.allocate(100), nullptr);
    const arena::marker m2 = a.mark();
    a.rewind(m1);
    ASSERT_NE(a.allocate(10), nullptr); // the top is now below m2 again
    const arena_state before = state_of(a);
    strata::test::recording_handler rec;
    a.rewind(m2);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
}

// A marker taken before a move-assignment names this arena but the memory it managed then:
// rewinding to it moved the bump pointer into the old buffer (and on into whatever lay between).
TEST(ArenaFixed, MarkerFromBeforeAMoveAssignmentIsRefused) {
    aligned_buffer buf(4096);
    std::span<std::byte> old_buf = buf.span().subspan(0, 1024), new_buf = buf.span().subspan(2048, 1024);
    std::memset(buf.span().data() + 1024, 0x5A, 1024); // someone else's bytes between the buffers
    arena a(old_buf);
    ASSERT_NE(a.allocate(100), nullptr);
    const arena::marker m = a.mark();
    arena b(new_buf);
    ASSERT_NE(b.allocate(200), nullptr);
    a = std::move(b);
    const arena_state before = state_of(a);
    strata::test::recording_handler rec;
    a.rewind(m);
    EXPECT_TRUE(unchanged(a, before));
    ASSERT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
    if (strata::test::checks_on) {
        EXPECT_EQ(rec.last().kind, strata::violation_kind::invalid_marker);
    }
    while (void* p = a.allocate(64, 1)) {
        EXPECT_TRUE(a.owns(p));
        std::memset(p, 0xEE, 64);
    }
    EXPECT_TRUE(all_bytes(buf.span().data() + 1024, 1024, 0x5A));
    // Taken before, at the same place in the new buffer: still stale (the move forgets every
    // earlier marker).
    arena c(old_buf);
    const arena::marker at_100 = [&] {
        (void)c.allocate(100);
        return c.mark();
    }();
    c = arena(old_buf);
    ASSERT_NE(c.allocate(300), nullptr);
    const arena_state before_c = state_of(c);
    c.rewind(at_100);
    EXPECT_TRUE(unchanged(c, before_c));
}

/// A source that hands out one fixed block whenever it is not out: an arena that gets it back
/// after returning it lands on exactly the addresses its old markers name.
class one_block_source {
public:
    [[nodiscard]] strata::memory_block allocate_block(std::size_t size, std::size_t align) noexcept {
        if (out_ || size > mem_.size() || align > 64) return {};
        out_ = true;
        return {mem_.data(), mem_.size(), align};
    }
    void deallocate_block(strata::memory_block) noexcept { out_ = false; }
    [[nodiscard]] bool out() const noexcept { return out_; }

private:
    aligned_buffer mem_{4096};
    bool out_ = false;
};

/// Rewinds `a` to `m`, which must be refused: state unchanged, `live` untouched, one report at
/// checks >= 1.
void expect_refused(arena& a, const arena::marker& m, const std::byte* live, std::size_t n) {
    const arena_state before = state_of(a);
    strata::test::recording_handler rec;
    a.rewind(m);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_TRUE(all_bytes(live, n, 0x5A));
    ASSERT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
    if (strata::test::checks_on) {
        EXPECT_EQ(rec.last().kind, strata::violation_kind::invalid_marker);
    }
    // The next allocation lands above what is live.
    auto* next = bytes(a.allocate(64, 1));
    ASSERT_NE(next, nullptr);
    EXPECT_TRUE(next >= live + n || next + 64 <= live);
}

// A move-assignment lowers the history to 0: a marker from the replaced arena is refused whether its
// epoch (its rewinds) ran above the moved-in arena's or below it.
TEST(ArenaFixed, MarkerFromBeforeAMoveAssignmentIsRefusedWhicheverEpochIsHigher) {
    aligned_buffer buf(1024);
    for (const int replaced_rewinds : {0, 5}) {
        for (const int moved_in_rewinds : {0, 5}) {
            SCOPED_TRACE(::testing::Message() << replaced_rewinds << " / " << moved_in_rewinds);
            arena c(buf.span());
            for (int i = 0; i < replaced_rewinds; ++i) {
                strata::arena_scope s(c);
                ASSERT_NE(c.allocate(16), nullptr);
            }
            ASSERT_NE(c.allocate(100), nullptr);
            const arena::marker at_100 = c.mark();
            arena fresh(buf.span()); // the same buffer, as when an arena is rebuilt over it
            for (int i = 0; i < moved_in_rewinds; ++i) {
                strata::arena_scope s(fresh);
                ASSERT_NE(fresh.allocate(16), nullptr);
            }
            c = std::move(fresh);
            auto* live = bytes(c.allocate(300, 1));
            ASSERT_NE(live, nullptr);
            std::memset(live, 0x5A, 300);
            expect_refused(c, at_100, live, 300);
        }
    }
}

// The replaced arena's block goes back to the source and the new state may get it again.
TEST(ArenaHeap, MarkerFromBeforeAMoveAssignmentIsRefusedInABlockHandedOutAgain) {
    one_block_source src;
    arena c(src, {.block_size = 1024});
    for (int i = 0; i < 3; ++i) {
        strata::arena_scope s(c);
        ASSERT_NE(c.allocate(16), nullptr);
    }
    ASSERT_NE(c.allocate(100), nullptr);
    const arena::marker m = c.mark();
    c = arena(src, {.block_size = 1024});
    auto* live = bytes(c.allocate(300, 1));
    ASSERT_NE(live, nullptr);
    ASSERT_EQ(live, m.cur - m.position) << "the test needs the same block back";
    std::memset(live, 0x5A, 300);
    expect_refused(c, m, live, 300);
}

// A moved-from arena keeps its source: once it gets the same block back, a marker it handed out
// before the move passes every position check, and must still be refused.
TEST(ArenaHeap, MarkersTakenBeforeBeingMovedFromAreRefused) {
    one_block_source src;
    arena a(src, {.block_size = 1024});
    const arena::marker at_0 = a.mark(); // before any block: position 0
    ASSERT_NE(a.allocate(100), nullptr);
    const arena::marker at_100 = a.mark();
    {
        arena b(std::move(a));
        EXPECT_TRUE(src.out());
    } // b returns the block
    ASSERT_FALSE(src.out());
    auto* live = bytes(a.allocate(300, 1)); // a can grow again: the same block
    ASSERT_NE(live, nullptr);
    ASSERT_EQ(live, at_100.cur - at_100.position) << "the test needs the same block back";
    std::memset(live, 0x5A, 300);
    expect_refused(a, at_100, live, 300);
    expect_refused(a, at_0, live, 300);
    // Markers taken after the move work as usual.
    const arena::marker now = a.mark();
    ASSERT_NE(a.allocate(8), nullptr);
    strata::test::recording_handler rec;
    a.rewind(now);
    EXPECT_EQ(a.in_use(), now.position);
    EXPECT_TRUE(rec.empty());
}

TEST(ArenaHeap, AMovedFromArenaStartsOverLikeANewOne) {
    strata::test::counting_source src;
    arena a(src, {.block_size = 1024});
    while (src.calls() < 3)
        ASSERT_NE(a.allocate(900, 16), nullptr); // 1024, 2048, 4096
    arena b(std::move(a));
    STRATA_EXPECT_SAME_STATS(a.stats(), strata::stats{});
    EXPECT_EQ(a.block_count(), 0u);
    ASSERT_NE(a.allocate(900, 16), nullptr);
    EXPECT_EQ(src.requests().back(), 1024u) << "growth restarts from block_size";
    EXPECT_EQ(src.outstanding_blocks(), b.block_count() + a.block_count());
}

// A scope opened on an empty arena holds a marker at position 0, which no lowering can show stale
// (nothing goes below 0): it survived a move-assignment and then freed what the new state served.
TEST(ArenaFixed, ScopeOpenedBeforeAMoveAssignmentFreesNothingAfterIt) {
    aligned_buffer buf(1024);
    arena a(buf.span());
    void* p = nullptr;
    strata::test::recording_handler rec;
    {
        strata::arena_scope s(a);
        a = arena(buf.span());
        p = a.allocate(200);
        ASSERT_NE(p, nullptr);
    }
    EXPECT_EQ(a.in_use(), 200u);
    EXPECT_EQ(a.stats().live_allocations, 1u);
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
    EXPECT_NE(a.allocate(16), p);
}

// Documented choice: a marker at 0 stays valid through reset() and rewinds, so one taken once may
// end every iteration of a loop (rewinding to it is a reset).
TEST(ArenaFixed, MarkerAtPosition0StaysValidThroughResetsAndRewinds) {
    strata::heap_source src;
    aligned_buffer buf(1024);
    arena fixed(buf.span());
    arena grown(src, {.block_size = 1024});
    for (arena* a : {&fixed, &grown}) {
        strata::test::recording_handler rec;
        const arena::marker start = a->mark();
        for (int iteration = 0; iteration < 20; ++iteration) {
            ASSERT_NE(a->allocate(100 + iteration), nullptr);
            const arena::marker mid = a->mark();
            ASSERT_NE(a->allocate(50), nullptr);
            a->rewind(mid);
            if (iteration % 3 == 0) a->reset();
            ASSERT_NE(a->allocate(30), nullptr);
            a->rewind(start);
            ASSERT_EQ(a->in_use(), 0u);
            ASSERT_EQ(a->stats().live_allocations, 0u);
        }
        EXPECT_TRUE(rec.empty());
    }
}

// A marker the top went below stays stale once later allocations lift the top past it again:
// rewinding to it would free the tail of a live block.
TEST(ArenaFixed, StaleMarkerBelowTheTopAgainIsRefused) {
    aligned_buffer buf(4096);
    arena a(buf.span());
    const arena::marker m1 = a.mark();
    ASSERT_NE(a.allocate(100), nullptr);
    const arena::marker m2 = a.mark(); // at 100
    a.rewind(m1);
    auto* live = bytes(a.allocate(300, 1)); // spans m2's position
    ASSERT_NE(live, nullptr);
    std::memset(live, 0x5A, 300);
    const arena_state before = state_of(a);
    strata::test::recording_handler rec;
    a.rewind(m2);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_TRUE(all_bytes(live, 300, 0x5A));
    ASSERT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
    if (strata::test::checks_on) {
        EXPECT_EQ(rec.last().kind, strata::violation_kind::invalid_marker);
        EXPECT_EQ(rec.last().allocator, "strata::arena");
    }
}

TEST(ArenaFixed, MarkerFromBeforeAResetIsRefused) {
    aligned_buffer buf(4096);
    arena a(buf.span());
    ASSERT_NE(a.allocate(64), nullptr);
    const arena::marker m = a.mark();
    a.reset();
    ASSERT_NE(a.allocate(256), nullptr);
    const arena_state before = state_of(a);
    strata::test::recording_handler rec;
    a.rewind(m);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
}

TEST(ArenaFixed, MarkerAboveAFreedTopBlockIsRefused) {
    STRATA_REQUIRE_CHECKS(1); // frees are recorded at checks >= 1 only
    aligned_buffer buf(4096);
    arena a(buf.span());
    void* p = a.allocate(64, 1);
    ASSERT_NE(p, nullptr);
    const arena::marker m = a.mark(); // marks p as allocated
    a.deallocate(p, 64);
    ASSERT_NE(a.allocate(256, 1), nullptr);
    const arena_state before = state_of(a);
    strata::test::recording_handler rec;
    a.rewind(m);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_TRUE(rec.saw_one(strata::violation_kind::invalid_marker));
}

TEST(ArenaFixed, MarkersThatStayedValidAreAcceptedAfterOtherRewinds) {
    aligned_buffer buf(4096);
    arena a(buf.span());
    strata::test::recording_handler rec;
    const arena::marker outer = a.mark();
    ASSERT_NE(a.allocate(100, 1), nullptr);
    const arena::marker inner = a.mark();
    for (int frame = 0; frame < 20; ++frame) { // an inner scope used again and again
        ASSERT_NE(a.allocate(50 + 10 * frame, 1), nullptr);
        a.rewind(inner);
        a.rewind(inner); // twice is fine
        ASSERT_EQ(a.in_use(), 100u);
    }
    void* q = a.allocate(40, 1); // freeing the top back to a marker's position keeps it valid
    a.deallocate(q, 40);
    ASSERT_NE(a.allocate(70, 1), nullptr);
    a.rewind(inner);
    EXPECT_EQ(a.in_use(), 100u);
    const arena::marker after = a.mark(); // taken after the lowerings: not stale
    ASSERT_NE(a.allocate(30, 1), nullptr);
    a.rewind(after);
    EXPECT_EQ(a.in_use(), 100u);
    a.rewind(outer);
    EXPECT_EQ(a.in_use(), 0u);
    a.rewind(outer);
    EXPECT_EQ(rec.count(), 0u);
}

TEST(ArenaFixed, StaleMarkerDeeperThanTheHistoryIsNeverAFalseReport) {
    // More nested levels than the history holds: the oldest records drop, so an old stale marker
    // may go unnoticed, but every valid rewind is still accepted.
    aligned_buffer buf(8192);
    arena a(buf.span());
    strata::test::recording_handler rec;
    std::vector<arena::marker> levels;
    for (std::size_t depth = 0; depth < 3 * strata::detail::rewind_history::depth; ++depth) {
        levels.push_back(a.mark());
        ASSERT_NE(a.allocate(16, 1), nullptr);
        const arena::marker scratch = a.mark();
        ASSERT_NE(a.allocate(8, 1), nullptr);
        a.rewind(scratch); // one record per level, targets increasing
    }
    while (!levels.empty()) {
        a.rewind(levels.back());
        levels.pop_back();
    }
    EXPECT_EQ(a.in_use(), 0u);
    EXPECT_EQ(rec.count(), 0u);
}

TEST(ArenaFixed, MarkerFromBeforeAResetStaysStaleThroughManyScopes) {
    // Scratch scopes one after another, each a little higher than the last because of what is
    // kept in between, fill the history; the reset's record must survive them.
    aligned_buffer buf(8192);
    arena a(buf.span());
    ASSERT_NE(a.allocate(200, 1), nullptr);
    const arena::marker m = a.mark(); // at 200
    a.reset();
    auto* live = bytes(a.allocate(300, 1));
    ASSERT_NE(live, nullptr);
    std::memset(live, 0x5A, 300);
    for (std::size_t i = 0; i < 4 * strata::detail::rewind_history::depth; ++i) {
        ASSERT_NE(a.allocate(16, 1), nullptr); // kept
        strata::arena_scope scratch(a);
        ASSERT_NE(a.allocate(8, 1), nullptr);
    }
    const arena_state before = state_of(a);
    strata::test::recording_handler rec;
    a.rewind(m);
    EXPECT_TRUE(unchanged(a, before));
    EXPECT_TRUE(all_bytes(live, 300, 0x5A));
    EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u);
}

TEST(RewindHistory, KeepsAResetHoweverManyLoweringsFollowAboveIt) {
    strata::detail::rewind_history h;
    const std::uint64_t before_reset = h.epoch();
    h.lowered(0);
    for (std::size_t t = 16; t < 16 * 100; t += 16) {
        const std::uint64_t marker_epoch = h.epoch();
        h.lowered(t); // a scope ending at t, each above the last
        EXPECT_TRUE(h.stale(before_reset, 1)) << t;
        EXPECT_FALSE(h.stale(marker_epoch, t)) << t; // a marker at the scope's start is still good
        EXPECT_TRUE(h.stale(marker_epoch, t + 1)) << t;
    }
}

TEST(RewindHistory, AgreesWithARecordOfEveryLowering) {
    // With at most `depth` distinct targets the history is exact; with more it may only miss.
    using strata::detail::rewind_history;
    for (const std::size_t targets : {rewind_history::depth - 2, 5 * rewind_history::depth}) {
        std::mt19937_64 rng(0x5EED + targets);
        rewind_history h;
        std::vector<std::pair<std::uint64_t, std::size_t>> all; // every (epoch, target)
        std::size_t stale = 0, missed = 0;
        for (int op = 0; op < 50000; ++op) {
            const std::size_t t = 16 * (rng() % targets);
            h.lowered(t);
            all.emplace_back(h.epoch(), t);
            const std::uint64_t back = rng() % 64;
            const std::uint64_t epoch = h.epoch() > back ? h.epoch() - back : 0;
            const std::size_t position = 16 * (rng() % (targets + 1));
            bool truth = false; // some lowering after the marker went below it
            for (auto r = all.rbegin(); r != all.rend() && r->first > epoch && !truth; ++r)
                truth = r->second < position;
            const bool got = h.stale(epoch, position);
            ASSERT_TRUE(truth || !got) << "false report at op " << op;
            if (targets <= rewind_history::depth) {
                ASSERT_EQ(got, truth) << "op " << op;
            }
            stale += truth;
            missed += truth && !got;
        }
        EXPECT_GT(stale, 10000u);
        EXPECT_LT(missed, stale / 4) << "the history should still catch most";
    }
}

} // namespace

// Freeing a chained block's only allocation returns the arena to the previous block's top, so a
// position names one place: a marker taken then stays valid (with the right live count) whether the
// emptied block is kept spare or reused.
TEST(Arena, FreeingAChainedBlocksOnlyAllocationReturnsToThePreviousBlock) {
    strata::heap_source src;
    for (const bool reuse : {false, true}) {
        strata::test::recording_handler rec;
        arena a(src, strata::arena_options{.block_size = 256});
        void* x = a.allocate(200, 16); // block A
        ASSERT_NE(x, nullptr);
        const auto m_a = a.mark();
        void* y = a.allocate(100, 16); // does not fit A: block B
        ASSERT_NE(y, nullptr);
        a.deallocate(y, 100); // B is empty: back to A's top, B to the spare list
        const auto m_b = a.mark();
        EXPECT_EQ(m_b.position, m_a.position);
        EXPECT_EQ(m_b.cur, m_a.cur);
        a.rewind(m_a);
        void* z = a.allocate(8, 8); // into A's tail, after both marks
        ASSERT_NE(z, nullptr);
        if (reuse) {
            void* w = a.allocate(100, 16); // B again, from the spare list
            ASSERT_NE(w, nullptr);
        }
        a.rewind(m_b); // valid: it releases z (and w), taken after it
        EXPECT_TRUE(rec.empty()) << (reuse ? "B reused" : "B spare");
        EXPECT_EQ(a.stats().live_allocations, 1u); // x
        EXPECT_EQ(a.in_use(), m_a.position);
        EXPECT_TRUE(a.owns(x));
        void* again = a.allocate(8, 8);
        EXPECT_EQ(again, z); // A's tail is free again
    }
}
