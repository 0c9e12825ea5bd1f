// engine_heap's decaying purge (src/engine/purge.cpp): free spans and big free medium blocks stay
// resident until they decay or pass a cap, oldest first; the span bins reuse warm memory first;
// end_frame() stops at its budget. A fake clock makes every age exact; mincore tells residency.

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/engine/detail/purge_batch.hpp"
#include "strata/engine/detail/size_class.hpp"
#include "strata/engine/engine_heap.hpp"

#include "support/build_kind.hpp"
#include "support/engine_stash.hpp"
#include "support/residency.hpp"

namespace {

using strata::engine_heap;
using strata::engine_options;

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t page = 4096;

std::atomic<std::uint64_t> fake_ms{1000};
std::uint64_t fake_clock() noexcept { return fake_ms.load(std::memory_order_relaxed); }
void advance(std::uint64_t ms) { fake_ms.fetch_add(ms, std::memory_order_relaxed); }

engine_options decay_options(std::uint32_t decay_ms = 100) {
    engine_options o;
    o.reserve_bytes = std::size_t{2} << 30;
    o.decay_ms = decay_ms;
    o.clock_ms = &fake_clock;
    o.purge_step_us = 1000000; // a slow path's step finishes what decayed: ages decide, not time
    o.retain_bytes = std::size_t{256} << 20;
    o.medium_retain_bytes = std::size_t{256} << 20;
    return o;
}

/// Returns: the resident pages of the whole pages of [p, p + n).
std::size_t resident(const void* p, std::size_t n) { return strata::test::resident_pages(p, n); }

bool filled_with(const char* p, std::size_t n, char v) {
    return std::all_of(p, p + n, [v](char c) { return c == v; });
}

char* written(engine_heap& h, std::size_t n, char fill = 1) {
    auto* p = static_cast<char*>(h.allocate(n));
    if (p != nullptr) std::memset(p, fill, n);
    return p;
}

// -------------------------------------------------------------------------------------------------
// Spans (the large tier and every emptied span)
// -------------------------------------------------------------------------------------------------

TEST(EngineDecay, AFreedSpanStaysResidentUntilItDecays) {
    engine_heap h(decay_options(100));
    const std::size_t n = 12 * mib; // large tier: a span of its own
    char* p = written(h, n);
    ASSERT_NE(p, nullptr);
    const std::size_t all = resident(p, n);
    ASSERT_EQ(all, n / page);
    h.deallocate(p);
    EXPECT_EQ(resident(p, n), all);
    EXPECT_EQ(h.purge_stats().retained_span_bytes, n);
    advance(99);
    EXPECT_EQ(h.end_frame(std::chrono::seconds{1}), 0u);
    EXPECT_EQ(resident(p, n), all) << "purged before it decayed";
    advance(1);
    EXPECT_EQ(h.end_frame(std::chrono::seconds{1}), n);
    EXPECT_EQ(resident(p, n), 0u);
    const strata::engine_purge_stats s = h.purge_stats();
    EXPECT_EQ(s.retained_span_bytes, 0u);
    EXPECT_EQ(s.purged_bytes, n);
    EXPECT_EQ(s.frames, 2u);
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, ASpanReusedBeforeItDecaysStaysWarm) {
    engine_heap h(decay_options(100));
    std::vector<char*> live;
    for (int i = 0; i < 50; ++i) {
        char* p = written(h, 20 * mib);
        ASSERT_NE(p, nullptr);
        h.deallocate(p);
        advance(60); // each reuse comes before the decay
        char* q = static_cast<char*>(h.allocate(18 * mib));
        ASSERT_EQ(q, p) << "round " << i;                  // the warm span, best fit
        EXPECT_EQ(resident(q, 18 * mib), 18 * mib / page); // nothing to fault in
        h.deallocate(q);
        advance(60);
    }
    EXPECT_EQ(h.purge_stats().purged_bytes, 0u);
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, ARequestTakesTheBestFittingFreeSpan) {
    engine_heap h(decay_options(100));
    char* a = written(h, 30 * mib);
    char* spacer1 = written(h, 9 * mib);
    char* b = written(h, 12 * mib);
    char* spacer2 = written(h, 9 * mib);
    ASSERT_TRUE(a && b && spacer1 && spacer2);
    h.deallocate(a);
    h.deallocate(b);
    EXPECT_EQ(h.allocate(11 * mib), b); // 12 MiB fits better than 30
    EXPECT_EQ(h.allocate(29 * mib), a);
    EXPECT_TRUE(h.check());
}

// Runs take the lowest-addressed warm span, not the best fit: the hole a big block left higher up
// stays whole for the next big block. Best fit would put the run in the 2 MiB hole and send the
// 2 MiB block into the 4 MiB one.
TEST(EngineDecay, ARunTakesTheLowestWarmSpanAndLeavesTheBestFitToABigBlock) {
    engine_options o = decay_options(100);
    o.large_keep_bytes = 0; // every freed span goes to the pool
    engine_heap h(o);
    char* low = written(h, 4 * mib);
    char* spacer1 = written(h, 2 * mib);
    char* high = written(h, 2 * mib);
    char* spacer2 = written(h, 2 * mib);
    ASSERT_TRUE(low && spacer1 && high && spacer2);
    ASSERT_LT(low, high);
    h.deallocate(low);
    h.deallocate(high);
    char* small = written(h, 61952); // the first block of a 64 KiB class: a new 1 MiB run
    ASSERT_NE(small, nullptr);
    EXPECT_GE(small, low);
    EXPECT_LT(small, low + 4 * mib) << "the run took the higher hole";
    EXPECT_EQ(h.allocate(2 * mib), high); // still whole: the best fit for the big block
    EXPECT_EQ(h.purge_stats().purged_bytes, 0u);
    EXPECT_TRUE(h.check());
}

// The span cap: dirty free spans hold at most retain_bytes plus the most granules in use within the
// last decay windows, whatever their age; a free past it purges at once, down to at most one batch
// (1 MiB) below the cap, never further. Here nothing decays (the clock barely moves), so the peak in
// use so far bounds the recent one from below, and every purge is a cap purge.
TEST(EngineDecay, DirtySpansStayWithinTheCapUnderChurn) {
    engine_options o = decay_options(100000);
    o.retain_bytes = 8 * mib;
    engine_heap h(o);
    std::mt19937_64 rng(9);
    char* slots[4] = {};
    std::size_t sizes[4] = {};
    std::size_t live = 0, peak = 0;
    int cap_purges = 0;
    for (int op = 0; op < 300; ++op) {
        const unsigned k = static_cast<unsigned>(rng() % 4);
        const std::size_t purged = h.purge_stats().purged_bytes;
        h.deallocate(slots[k]);
        if (h.purge_stats().purged_bytes > purged) {
            ++cap_purges;
            EXPECT_GE(h.purge_stats().retained_span_bytes + mib, o.retain_bytes + peak) << "op " << op;
        }
        live -= sizes[k];
        sizes[k] = 9 * mib + (rng() % 16) * mib; // large blocks: spans of their own, 9-24 MiB
        slots[k] = written(h, sizes[k]);
        ASSERT_NE(slots[k], nullptr);
        live += sizes[k];
        peak = std::max(peak, live);
        advance(1);
        ASSERT_LE(h.purge_stats().retained_span_bytes, o.retain_bytes + peak + mib) << "op " << op;
    }
    EXPECT_GT(cap_purges, 0);
    // Best fit among the warm spans keeps the whole heap within the same bound.
    EXPECT_LE(h.committed_bytes(), o.retain_bytes + 2 * peak + 2 * mib);
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, RetainZeroPurgesEverySpanAtItsFree) {
    engine_options o = decay_options(1000);
    o.retain_bytes = 0;
    engine_heap h(o);
    char* p = written(h, 12 * mib);
    ASSERT_NE(p, nullptr);
    h.deallocate(p);
    EXPECT_EQ(resident(p, 12 * mib), 0u);
    EXPECT_TRUE(h.check());
}

// decay_options for the purges of big calls: a slow path's step purges one 1 MiB piece, and freed
// large blocks go to the span pool (no thread keeps one).
engine_options big_call_options() {
    engine_options o = decay_options(100);
    o.purge_step_us = 1;
    o.large_keep_bytes = 0;
    return o;
}

// A large request that takes fresh pages first gives back as many pages of decayed spans, in a
// program that does not call end_frame(): one that calls malloc seldom would otherwise keep them
// until enough slow paths took their steps.
TEST(EngineDecay, ALargeRequestForFreshPagesPurgesAsManyDecayedOnes) {
    engine_heap h(big_call_options());
    char* a = written(h, 4 * mib);
    char* spacer = written(h, 2 * mib); // a's span cannot merge with the top
    ASSERT_NE(spacer, nullptr);
    h.deallocate(a); // its step had nothing to purge
    advance(100);    // a's span decayed
    const std::size_t before = h.purge_stats().purged_bytes;
    char* b = written(h, 8 * mib); // fits no free span: fresh pages
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(resident(a, 4 * mib), 0u);
    EXPECT_EQ(h.purge_stats().purged_bytes - before, 4 * mib);
    EXPECT_EQ(h.purge_stats().retained_span_bytes, 0u);
    EXPECT_TRUE(h.check());
    h.deallocate(spacer);
    h.deallocate(b);
    EXPECT_TRUE(h.check());
}

// A large free gives back as many pages of decayed spans as it frees; the freed span itself is
// young and stays. With end_frame() calls the purges are the frames' (and the slow paths' steps).
TEST(EngineDecay, ALargeFreePurgesAsManyDecayedPagesUnlessFramesPaceThePurges) {
    for (const bool frames : {false, true}) {
        engine_heap h(big_call_options());
        if (frames) (void)h.end_frame(std::chrono::microseconds{1});
        char* d = written(h, 4 * mib);
        char* s1 = written(h, 2 * mib);
        char* e = written(h, 4 * mib);
        char* s2 = written(h, 2 * mib);
        ASSERT_NE(s2, nullptr);
        h.deallocate(d);
        advance(100);
        h.deallocate(e); // its step (one piece) and, without frames, the purge of d's span
        EXPECT_EQ(resident(e, 4 * mib), 4 * mib / 4096) << "freed just now";
        if (!frames) {
            EXPECT_EQ(resident(d, 4 * mib), 0u);
            EXPECT_EQ(h.purge_stats().retained_span_bytes, 4 * mib);
        } else {
            EXPECT_EQ(h.purge_stats().retained_span_bytes, 7 * mib) << "the step's piece only";
        }
        EXPECT_TRUE(h.check());
        h.deallocate(s1);
        h.deallocate(s2);
        EXPECT_TRUE(h.check());
    }
}

// A program whose fourth large call before this one came decay_ms ago or more (it makes big blocks
// seldom, a few at a time) gives back, at a large request the kept span does not serve, as many
// pages of free spans of any age, oldest first: what it left free would stay resident beside the
// new block while it works. Its frees keep their spans warm as any program's do, and a busier
// program (its fourth large call before the request 53 ms earlier) purges only what decayed. With end_frame()
// calls the frames pace the purges.
TEST(EngineDecay, AQuietProgramsLargeRequestPurgesAsManyPagesOfAnyAge) {
    for (const int mode : {0, 1, 2}) { // quiet, busy, quiet with frames
        engine_options o = decay_options(100);
        o.large_keep_bytes = 0; // every free goes to the pool
        engine_heap h(o);
        if (mode == 2) (void)h.end_frame(std::chrono::microseconds{1});
        char* a = written(h, 4 * mib);
        char* s1 = written(h, 2 * mib); // no two of a, b, c merge, nor c with the top
        char* b = written(h, 4 * mib);
        char* s2 = written(h, 2 * mib);
        char* c = written(h, 4 * mib);
        char* s3 = written(h, 2 * mib);
        ASSERT_NE(s3, nullptr);
        advance(mode == 1 ? 50 : 200); // seconds of work in an image converter
        for (char* p : {a, b, c}) {
            h.deallocate(p); // a free keeps its span warm, quiet or not
            advance(1);
        }
        EXPECT_EQ(resident(a, 4 * mib), 4 * mib / page);
        EXPECT_EQ(h.purge_stats().retained_span_bytes, 12 * mib);
        char* d = written(h, 6 * mib); // fits no free span: fresh pages
        ASSERT_NE(d, nullptr);
        if (mode == 0) { // 6 MiB of any age, oldest first: a, then half of b (from its end)
            EXPECT_EQ(resident(a, 4 * mib), 0u);
            EXPECT_EQ(resident(b, 2 * mib), 2 * mib / page);
            EXPECT_EQ(resident(b + 2 * mib, 2 * mib), 0u);
            EXPECT_EQ(resident(c, 4 * mib), 4 * mib / page) << "the newest stays";
            EXPECT_EQ(h.purge_stats().retained_span_bytes, 6 * mib);
        } else { // busy: only what decayed (nothing: the frees came 1-3 ms before); frames: the frames'
            EXPECT_EQ(resident(a, 4 * mib), 4 * mib / page);
            EXPECT_EQ(h.purge_stats().retained_span_bytes, 12 * mib);
        }
        EXPECT_TRUE(h.check());
        for (char* p : {s1, s2, s3, d})
            h.deallocate(p);
        EXPECT_TRUE(h.check());
    }
}

// A quiet request served from the front of a free span purges the span's young rest (what it leaves
// there would stay resident beside it); one the thread's kept span serves purges nothing.
TEST(EngineDecay, AQuietRequestPurgesTheRestOfTheSpanItTookButNotAKeptOne) {
    engine_heap h(decay_options(100)); // the thread keeps the span of its last large free
    char* a = written(h, 8 * mib);
    char* s1 = written(h, 2 * mib); // a cannot merge with the top
    char* b = written(h, 4 * mib);
    char* s2 = written(h, 2 * mib);
    ASSERT_NE(s2, nullptr);
    advance(200);
    h.deallocate(a); // kept by the thread
    h.deallocate(b); // kept now; a goes to the pool
    advance(1);
    char* c = written(h, 4 * mib); // quiet (the fourth call before it came 201 ms ago): b's kept span
    EXPECT_EQ(c, b);
    EXPECT_EQ(resident(a, 8 * mib), 8 * mib / page) << "the kept span served it: nothing purged";
    char* d = written(h, 5 * mib); // quiet too, no kept span: from a's front (1 ms old), warm
    ASSERT_EQ(d, a);
    EXPECT_EQ(resident(d, 5 * mib), 5 * mib / page);
    EXPECT_EQ(resident(a + 5 * mib, 3 * mib), 0u) << "a's rest, though young, is purged";
    EXPECT_TRUE(h.check());
    for (char* p : {s1, s2, c, d})
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, EndFrameStopsAtItsBudget) {
    engine_heap h(decay_options(100));
    std::vector<char*> blocks, spacers;
    for (int i = 0; i < 3; ++i) {
        blocks.push_back(written(h, 16 * mib));
        spacers.push_back(written(h, 9 * mib));
    }
    for (char* p : blocks)
        h.deallocate(p);
    advance(200);
    // A budget of 1 us: one 1 MiB piece, then the deadline has passed.
    EXPECT_EQ(h.end_frame(std::chrono::microseconds{1}), mib);
    EXPECT_TRUE(h.check());
    std::size_t total = mib;
    int frames = 1;
    while (total < 48 * mib && frames < 1000) {
        const std::size_t got = h.end_frame(std::chrono::microseconds{1});
        ASSERT_GT(got, 0u);
        ASSERT_LE(got, mib);
        total += got;
        ++frames;
        ASSERT_TRUE(h.check()) << "frame " << frames;
    }
    EXPECT_EQ(total, 48 * mib);
    EXPECT_EQ(frames, 48);
    for (char* p : blocks)
        EXPECT_EQ(resident(p, 16 * mib), 0u);
    EXPECT_EQ(h.end_frame(), 0u);
}

// Bad input: a budget of 0 (or less) is a step of one piece; a second purge thread is refused; a
// stop with no thread does nothing.
TEST(EngineDecay, AZeroBudgetStillPurgesOnePiece) {
    engine_heap h(decay_options(100));
    char* p = written(h, 12 * mib);
    ASSERT_NE(p, nullptr);
    h.deallocate(p);
    advance(200);
    EXPECT_EQ(h.end_frame(std::chrono::microseconds{0}), mib);
    EXPECT_EQ(h.end_frame(std::chrono::microseconds{-5}), mib);
    EXPECT_EQ(resident(p + 10 * mib, 2 * mib), 0u); // the pieces come off the span's end
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, OnePurgeThreadAtATime) {
    engine_heap h(decay_options(100));
    h.stop_purge_thread();                                           // none runs: nothing happens
    EXPECT_TRUE(h.start_purge_thread(std::chrono::milliseconds{0})); // counts as 1 ms
    EXPECT_FALSE(h.start_purge_thread());
    h.stop_purge_thread();
    h.stop_purge_thread();
    EXPECT_TRUE(h.start_purge_thread(std::chrono::milliseconds{5}));
} // the destructor stops it

// A budgeted step takes the oldest decayed span first, also when more than 64 wait (a step looks at
// 64 at a time) and the oldest is the last of its bin (a bin is newest first).
TEST(EngineDecay, TheOldestOfManyDecayedSpansGoesFirst) {
    engine_options o = decay_options(100);
    o.large_keep_bytes = 0; // freed spans go straight to the bins
    engine_heap h(o);
    constexpr int n = 70;
    const std::size_t size = 20 * engine_heap::granule; // 1.25 MiB: one bin for all of them
    std::vector<void*> blocks, spacers;
    for (int i = 0; i < n; ++i) {
        blocks.push_back(h.allocate(size));
        spacers.push_back(h.allocate(size)); // live between them: no two free spans merge
        ASSERT_TRUE(blocks.back() != nullptr && spacers.back() != nullptr);
    }
    auto* first = static_cast<char*>(blocks.front());
    std::memset(first, 1, size); // the only one resident
    for (void* p : blocks) {
        h.deallocate(p);
        advance(1);
    }
    advance(200);
    ASSERT_EQ(resident(first, size), size / page);
    EXPECT_EQ(h.end_frame(std::chrono::microseconds{0}), mib); // one piece
    EXPECT_EQ(resident(first, size), (size - mib) / page) << "a newer span's piece went first";
    EXPECT_TRUE(h.check());
    for (void* p : spacers)
        h.deallocate(p);
}

// A step that stops part way through a span leaves it the oldest: the next steps finish it before
// they start on a newer one (it goes back to the front of the oldest list), each a piece off the
// end of its resident part.
TEST(EngineDecay, ASpanAStepLeftPartlyPurgedStaysTheOldest) {
    engine_options o = decay_options(100);
    o.large_keep_bytes = 0; // freed spans go straight to the bins
    engine_heap h(o);
    constexpr std::size_t size = 3 * mib;
    std::vector<char*> blocks, spacers;
    for (int i = 0; i < 3; ++i) {
        blocks.push_back(written(h, size));
        spacers.push_back(written(h, 2 * mib)); // no two freed spans merge
    }
    for (char* p : blocks) { // the first is the oldest
        h.deallocate(p);
        advance(1);
    }
    advance(200);
    for (int frame = 1; frame <= 9; ++frame) {
        ASSERT_EQ(h.end_frame(std::chrono::microseconds{1}), mib) << "frame " << frame;
        for (int i = 0; i < 3; ++i) {
            const int gone = std::clamp(frame - 3 * i, 0, 3); // MiB purged off block i
            EXPECT_EQ(resident(blocks[i], size), (size - gone * mib) / page)
                << "frame " << frame << ", block " << i;
            if (gone != 3) {
                EXPECT_EQ(resident(blocks[i], size - gone * mib), (size - gone * mib) / page)
                    << "its front stays";
            }
        }
        ASSERT_TRUE(h.check()) << "frame " << frame;
    }
    for (char* p : spacers)
        h.deallocate(p);
}

// Steps between frees and allocations take the oldest dirty spans from a list one walk made. A
// span of that list that a request takes or a free merges goes stale in it: the next step walks
// again, and purges neither a live block nor a merged span's interior.
TEST(EngineDecay, TheOldestSpansListFollowsSpansThatLeaveTheBins) {
    engine_options o = decay_options(100);
    o.large_keep_bytes = 0; // freed spans go straight to the bins
    engine_heap h(o);
    constexpr std::size_t size = 2 * mib;
    std::vector<char*> blocks;
    for (int i = 0; i < 12; ++i)
        blocks.push_back(written(h, size, static_cast<char>(i + 1)));
    for (std::size_t i = 0; i < blocks.size(); i += 2) { // six dirty spans, one tick apart
        h.deallocate(blocks[i]);
        advance(1);
    }
    advance(93);                                         // ages 99 to 94
    EXPECT_EQ(h.end_frame(std::chrono::seconds{1}), 0u); // none due: the walk lists them
    char* taken = written(h, size, 99);                  // takes one of them
    h.deallocate(blocks[5]);                             // merges two of them with it
    advance(110);
    EXPECT_GT(h.end_frame(std::chrono::microseconds{0}), 0u); // a piece of the oldest
    EXPECT_TRUE(h.check());
    EXPECT_GT(h.end_frame(std::chrono::seconds{1}), 0u); // the rest
    EXPECT_TRUE(h.check());
    EXPECT_TRUE(filled_with(taken, size, 99));
    for (std::size_t i = 1; i < blocks.size(); i += 2) {
        if (i != 5) {
            EXPECT_TRUE(filled_with(blocks[i], size, static_cast<char>(i + 1))) << i;
        }
    }
    for (std::size_t i = 0; i < blocks.size(); i += 2) {
        if (blocks[i] != taken) {
            EXPECT_EQ(resident(blocks[i] + page, size - 2 * page), 0u) << i;
        }
    }
    h.deallocate(taken);
    for (std::size_t i = 1; i < blocks.size(); i += 2)
        if (i != 5) h.deallocate(blocks[i]);
    EXPECT_TRUE(h.check());
}

/// Returns: the exit status of a forked child that exits with body()'s value, the heaps' fork
/// handlers run around the fork as pthread_atfork runs them; -1 when it did not exit.
template <class F>
int exit_status_of_child(F body) {
    engine_heap::prepare_fork();
    const pid_t child = ::fork();
    if (child == 0) {
        engine_heap::after_fork_child();
        std::_Exit(body());
    }
    engine_heap::after_fork_parent();
    int status = 0;
    if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

// A forked child has no purge thread (only the forking thread is copied): it may start its own, and
// stopping or destroying the heap there joins nothing that is not its own. (ThreadSanitizer does
// not let a child of a multi-threaded process start threads.)
TEST(EngineDecay, AForkedChildStartsAPurgerOfItsOwn) {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "ThreadSanitizer: no new threads after a multi-threaded fork";
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
    GTEST_SKIP() << "ThreadSanitizer: no new threads after a multi-threaded fork";
#endif
#endif
    engine_heap h(decay_options(100));
    ASSERT_TRUE(h.start_purge_thread(std::chrono::milliseconds{1}));
    const int code = exit_status_of_child([&] {
        int code = 0;
        if (!h.start_purge_thread(std::chrono::milliseconds{1})) code = 1;
        h.stop_purge_thread();
        h.deallocate(h.allocate(100));
        if (!h.check()) code = 2;
        return code;
    });
    EXPECT_EQ(code, 0) << "1: the child could not start its purge thread; 2: check()";
} // the destructor stops the parent's thread

// A fork while another thread's purges let their locks go: prepare_fork() waits until no purge
// holds spans or medium blocks out of reach, so every child finds the heap whole and can allocate
// and free (a child of a fork made mid-purge would find them out of the bins for good).
TEST(EngineDecay, AForkWhileAnotherThreadPurgesFindsTheHeapWhole) {
    engine_options o = decay_options(1000);
    o.large_keep_bytes = 0;
    engine_heap h(o);
    std::vector<char*> spacers;
    for (int i = 0; i < 16; ++i)
        spacers.push_back(written(h, 2 * mib)); // the freed blocks land between them
    std::atomic<bool> stop{false};
    std::thread purger([&] {
        std::vector<void*> blocks;
        while (!stop.load()) {
            for (int i = 0; i < 8; ++i) {
                blocks.push_back(written(h, 4 * mib)); // spans
                blocks.push_back(written(h, 1 * mib)); // medium blocks
            }
            for (void* p : blocks)
                h.deallocate(p);
            blocks.clear();
            h.trim(); // purges them with the locks let go
        }
    });
    for (int round = 0; round < 20; ++round) {
        const int code = exit_status_of_child([&] {
            int code = h.check() ? 0 : 1;
            void* p = h.allocate(3 * mib);
            void* q = h.allocate(300 * 1024);
            if (p == nullptr || q == nullptr) code = 2;
            h.deallocate(p);
            h.deallocate(q);
            h.trim();
            if (code == 0 && !h.check()) code = 3;
            return code;
        });
        EXPECT_EQ(code, 0) << "round " << round << " (-1: no exit; 1, 3: check(); 2: a request failed)";
    }
    stop.store(true);
    purger.join();
    for (char* p : spacers)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

// prepare_fork takes the depots' locks too: a child forked while a depot holds batches finds them
// whole, and its trim() sends their blocks home to the forking thread's runs, which hand them out
// again. (A thread turns its stash on by freeing 512 blocks another thread made, then fills the
// depot of 64-byte blocks with four batches: frees 17, 25 and 33 of the 40, and its last free.)
TEST(EngineDecay, AForkedChildFindsTheDepotsWhole) {
    engine_options o = decay_options(1000);
    o.stash_bytes = 1024; // a cap of 16 blocks of 64 bytes, batches of 8
    engine_heap h(o);
    const unsigned c = engine_heap::class_of(64);
    std::vector<void*> blocks;
    for (int i = 0; i < 40; ++i)
        blocks.push_back(h.allocate(64));
    std::thread([&] {
        std::vector<void*> theirs;
        std::thread([&] {
            for (int i = 0; i < 512; ++i)
                theirs.push_back(h.allocate(16));
        }).join();
        void* own = h.allocate(64); // a run of the class: the class is stashed
        for (void* p : theirs)
            h.deallocate(p);
        for (void* p : blocks)
            h.deallocate(p);
        h.deallocate(own);
    }).join();
    ASSERT_EQ(h.class_stats(c).depot_blocks, 32u);
    const int code = exit_status_of_child([&] {
        if (!h.check() || h.class_stats(c).depot_blocks != 32) return 1;
        h.trim();
        if (!h.check() || h.class_stats(c).depot_blocks != 0) return 2;
        std::vector<void*> again;
        for (std::size_t i = 0; i < strata::engine_detail::granule / 64; ++i)
            again.push_back(h.allocate(64));
        std::sort(again.begin(), again.end());
        for (void* p : blocks)
            if (!std::binary_search(again.begin(), again.end(), p)) return 3;
        return 0;
    });
    EXPECT_EQ(code, 0) << "-1: no exit; 1, 2: check() or the depot's count; 3: a block did not come home";
    h.trim();
    EXPECT_EQ(h.class_stats(c).depot_blocks, 0u);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, SlowPathsStepWithoutFrameCalls) {
    engine_heap h(decay_options(100));
    char* p = written(h, 12 * mib);
    char* spacer = written(h, 9 * mib); // keeps p and q apart
    char* q = written(h, 12 * mib);
    ASSERT_TRUE(p && q && spacer);
    h.deallocate(p);
    advance(150);
    h.deallocate(q); // the first step is due (decay_ms after construction): p decayed, q not
    EXPECT_EQ(resident(p, 12 * mib), 0u);
    EXPECT_EQ(resident(q, 12 * mib), 12 * mib / page);
    EXPECT_GE(h.purge_stats().steps, 1u);
}

// The first step waits decay_ms from construction: nothing can have decayed before, and a
// process that lives a few milliseconds (a shell pipeline's tools) never pays for one.
TEST(EngineDecay, TheFirstStepWaitsTheDecayTime) {
    engine_heap h(decay_options(800)); // then a step every 100 ms
    std::vector<void*> blocks;
    const auto churn = [&] { // slow paths of every tier: new runs, medium and large blocks
        for (std::size_t size = 16; size <= 4 * mib; size *= 2)
            blocks.push_back(written(h, size));
        for (void* b : blocks)
            h.deallocate(b);
        blocks.clear();
    };
    churn();
    advance(799);
    churn();
    EXPECT_EQ(h.purge_stats().steps, 0u);
    advance(1);
    churn();
    EXPECT_EQ(h.purge_stats().steps, 1u);
    advance(99);
    churn();
    EXPECT_EQ(h.purge_stats().steps, 1u);
    advance(1);
    churn();
    EXPECT_EQ(h.purge_stats().steps, 2u);
    EXPECT_TRUE(h.check());
}

/// A heap (decay_ms 800: the slow paths step every 100 ms, a backlog's every 25 ms) holding 64 MiB
/// of freed 4 MiB spans between live 2 MiB ones, with a budget of one piece a step: a backlog that
/// lasts 64 steps. `frames`: end_frame() was called once. The destructor frees the spacers and
/// checks the heap.
struct backlog_heap {
    engine_heap heap;
    std::vector<char*> spacers;
    explicit backlog_heap(bool frames, std::size_t stash_bytes = engine_options{}.stash_bytes)
        : heap([&] {
              engine_options o = decay_options(800);
              o.purge_step_us = 1;
              o.stash_bytes = stash_bytes;
              return o;
          }()) {
        std::vector<char*> blocks;
        for (int i = 0; i < 16; ++i) {
            blocks.push_back(written(heap, 4 * mib));
            spacers.push_back(written(heap, 2 * mib));
        }
        for (char* b : blocks)
            heap.deallocate(b);
        if (frames) (void)heap.end_frame(std::chrono::microseconds{1});
    }
    backlog_heap(const backlog_heap&) = delete;
    backlog_heap& operator=(const backlog_heap&) = delete;
    ~backlog_heap() {
        for (char* p : spacers)
            heap.deallocate(p);
        EXPECT_TRUE(heap.check());
    }
    /// Effects: a slow path: a medium block allocated and freed.
    void slow_call() { heap.deallocate(written(heap, 256 * 1024)); }
};

// A slow path's step that spends its budget with more decayed than it could purge brings the next
// step forward to a quarter of the interval, until the backlog is gone; a program that has called
// end_frame() keeps the plain interval once its frames stop.
void backlog_steps(bool frames) {
    backlog_heap b(frames);
    engine_heap& h = b.heap;
    const auto slow_call = [&] { b.slow_call(); };
    advance(800);
    const std::size_t steps = h.purge_stats().steps;
    slow_call(); // a step: 64 MiB decayed, one piece goes
    ASSERT_EQ(h.purge_stats().steps, steps + 1);
    advance(25);
    slow_call();
    EXPECT_EQ(h.purge_stats().steps, steps + (frames ? 1 : 2));
    advance(75);
    slow_call();
    EXPECT_EQ(h.purge_stats().steps, steps + (frames ? 2 : 3));
}

TEST(EngineDecay, ABacklogBringsTheNextStepForward) { backlog_steps(false); }

TEST(EngineDecay, ABacklogKeepsTheIntervalWhenTheProgramCallsEndFrame) { backlog_steps(true); }

// A program that calls in bursts and sleeps between them (a frame loop without end_frame) takes,
// at its next burst, the backlog steps of the last interval it slept through, as one that called
// all the time would have taken them, and no more; one that calls end_frame() takes one step.
void burst_steps(bool frames) {
    backlog_heap b(frames);
    engine_heap& h = b.heap;
    const auto slow_call = [&] { b.slow_call(); };
    advance(800);
    slow_call(); // a step: 64 MiB decayed, one piece goes; the next is due 25 ms later
    const std::size_t steps = h.purge_stats().steps;
    const std::size_t purged = h.purge_stats().purged_bytes;
    advance(500); // asleep for 20 backlog steps' time
    for (int i = 0; i < 20; ++i)
        slow_call();
    // The steps due 100, 75, 50, 25 and 0 ms ago, and the one missed at the sleep's start.
    EXPECT_EQ(h.purge_stats().steps, steps + (frames ? 1 : 6));
    EXPECT_GE(h.purge_stats().purged_bytes, purged + (frames ? 1 : 6) * mib);
    advance(24);
    slow_call();
    EXPECT_EQ(h.purge_stats().steps, steps + (frames ? 1 : 6));
    advance(1);
    slow_call(); // the backlog's pace again
    EXPECT_EQ(h.purge_stats().steps, steps + (frames ? 1 : 7));
}

TEST(EngineDecay, ABurstAfterASleepTakesTheBacklogStepsOfTheLastInterval) { burst_steps(false); }

TEST(EngineDecay, ABurstAfterASleepTakesOneStepWhenTheProgramCallsEndFrame) { burst_steps(true); }

// A loop whose free empties the run it allocates from (one block out at a time) takes no step
// there, due or not: that free reads no clock. A free that empties another run steps.
TEST(EngineDecay, AFreeThatEmptiesTheCurrentRunTakesNoStep) {
    engine_heap h(decay_options(100));
    std::vector<char*> full; // 1 KiB blocks: a run of 64
    while (full.size() < 64)
        full.push_back(written(h, 1024));
    char* x = written(h, 1024); // the first block of the next run, now the current one
    ASSERT_NE(reinterpret_cast<std::uintptr_t>(x) >> 16, reinterpret_cast<std::uintptr_t>(full[63]) >> 16);
    advance(100); // a step is due
    const std::size_t steps = h.purge_stats().steps;
    h.deallocate(x); // the current run empties
    for (int i = 0; i < 3; ++i)
        h.deallocate(written(h, 1024)); // and again
    EXPECT_EQ(h.purge_stats().steps, steps);
    for (char* p : full)
        h.deallocate(p); // the full run empties: a step
    EXPECT_EQ(h.purge_stats().steps, steps + 1);
    EXPECT_TRUE(h.check());
}

// The steps a burst catches up on come microseconds apart, so they leave the depots alone: a
// depot sends home what it held all through the time since its last drain (its low-water mark),
// which needs time to mean that no thread wanted it. The first step of the burst drains as usual.
TEST(EngineDecay, CatchUpStepsLeaveTheDepotsAlone) {
    backlog_heap b(false, 1024); // stashes of 16 blocks of 64 bytes, batches of 8
    engine_heap& h = b.heap;
    std::vector<void*> blocks;
    for (int i = 0; i < 3000; ++i)
        blocks.push_back(h.allocate(64));
    std::thread([&] {
        void* own = h.allocate(64); // a run of the class: the class is stashed
        strata::test::turn_stash_on(h);
        for (void* p : blocks) // a full stash hands batches to the depot
            h.deallocate(p);
        h.deallocate(own);
    }).join();
    const auto in_depots = [&] {
        return h.class_stats(strata::engine_detail::class_of(16)).depot_blocks +
               h.class_stats(strata::engine_detail::class_of(64)).depot_blocks;
    };
    const auto slow_call = [&] { b.slow_call(); };
    advance(800);
    slow_call(); // a step: the backlog starts; the depots' marks start at what they hold
    const std::size_t held = in_depots();
    ASSERT_GT(held, 2500u);
    advance(500);
    const std::size_t steps = h.purge_stats().steps;
    for (int i = 0; i < 20; ++i)
        slow_call();
    ASSERT_EQ(h.purge_stats().steps, steps + 6); // one due, five caught up
    const std::size_t left = in_depots();
    EXPECT_LT(left, held);        // the first step of the burst drained
    EXPECT_GT(left + 1100, held); // and only that one: about 1,024 blocks
    advance(25);
    slow_call(); // a quarter interval later: a step that drains again
    EXPECT_LT(in_depots(), left);
    h.trim();
    EXPECT_EQ(in_depots(), 0u);
}

// A program that calls end_frame paces its purges with it: its slow paths take no step of their
// own, however long its frames (here longer than their interval), until end_frame has not been
// called for decay_ms.
TEST(EngineDecay, SlowPathsTakeNoStepWhileTheProgramCallsEndFrame) {
    engine_heap h(decay_options(800)); // the slow paths' interval: 100 ms
    const auto slow_call = [&] { h.deallocate(written(h, 256 * 1024)); };
    advance(800);
    for (int frame = 0; frame < 10; ++frame) {
        (void)h.end_frame(std::chrono::microseconds{100});
        const std::size_t steps = h.purge_stats().steps;
        advance(150);
        slow_call();
        EXPECT_EQ(h.purge_stats().steps, steps) << frame;
    }
    (void)h.end_frame(std::chrono::microseconds{100}); // the last frame
    const std::size_t steps = h.purge_stats().steps;
    advance(799);
    slow_call();
    EXPECT_EQ(h.purge_stats().steps, steps);
    advance(1);
    slow_call(); // the frames stopped decay_ms ago: the slow paths step again
    EXPECT_EQ(h.purge_stats().steps, steps + 1);
    EXPECT_TRUE(h.check());
}

// A step that had nothing to purge keeps the plain interval, however small its budget.
TEST(EngineDecay, AStepWithNothingDueKeepsTheInterval) {
    engine_options o = decay_options(800);
    o.purge_step_us = 1;
    engine_heap h(o);
    const auto slow_call = [&] { h.deallocate(written(h, 256 * 1024)); };
    slow_call();
    advance(800);
    slow_call();
    ASSERT_EQ(h.purge_stats().steps, 1u);
    EXPECT_EQ(h.purge_stats().purged_bytes, 0u);
    advance(25);
    slow_call();
    EXPECT_EQ(h.purge_stats().steps, 1u);
    advance(75);
    slow_call();
    EXPECT_EQ(h.purge_stats().steps, 2u);
    EXPECT_TRUE(h.check());
}

// With decay_ms = 0 there is no wait: the first slow path steps.
TEST(EngineDecay, WithNoDecayTimeTheFirstSlowPathSteps) {
    engine_heap h(decay_options(0));
    h.deallocate(written(h, 4 * mib));
    EXPECT_GE(h.purge_stats().steps, 1u);
    EXPECT_TRUE(h.check());
}

// -------------------------------------------------------------------------------------------------
// Medium blocks
// -------------------------------------------------------------------------------------------------

// Live spacers keep the blocks apart (merged, a free region is first seen again).
struct medium_setup {
    static constexpr std::size_t big = engine_heap::medium_max;
    std::vector<char*> blocks, spacers;
    explicit medium_setup(engine_heap& h, int n = 3) {
        for (int i = 0; i < n; ++i) {
            blocks.push_back(written(h, big));
            spacers.push_back(written(h, std::size_t{128} << 10));
        }
    }
    // The whole pages past the block's first one (which keeps tlsf's links and the purge mark).
    std::size_t warm(int i) const { return resident(blocks[i] + page, big - 2 * page); }
};

TEST(EngineDecay, MediumBlocksDecayInTheOrderTheyWereFreed) {
    engine_options o = decay_options(100);
    o.medium_retain_bytes = 4 * mib;
    engine_heap h(o);
    medium_setup m(h);
    for (char* p : m.blocks)
        ASSERT_NE(p, nullptr);
    const std::size_t all = m.warm(0);
    const std::chrono::seconds frame{1}; // ages decide here, not the budget (EndFrameStopsAtItsBudget)
    ASSERT_GT(all, medium_setup::big / page - 4);
    h.deallocate(m.blocks[0]);
    (void)h.end_frame(frame); // first seen at t
    advance(10);
    h.deallocate(m.blocks[1]);
    (void)h.end_frame(frame); // t + 10
    EXPECT_EQ(m.warm(0), all);
    EXPECT_EQ(m.warm(1), all);
    advance(10);
    h.deallocate(m.blocks[2]); // within the cap (4 MiB plus the recent peak of big live bytes)
    (void)h.end_frame(frame);  // t + 20
    EXPECT_EQ(m.warm(0), all);
    EXPECT_EQ(m.warm(1), all);
    EXPECT_EQ(m.warm(2), all);
    advance(95); // blocks 0 and 1 have been free 100 ms or more, block 2 for 95
    (void)h.end_frame(frame);
    EXPECT_EQ(m.warm(0), 0u);
    EXPECT_EQ(m.warm(1), 0u);
    EXPECT_EQ(m.warm(2), all);
    advance(5);
    (void)h.end_frame(frame);
    EXPECT_EQ(m.warm(2), 0u);
    EXPECT_EQ(h.purge_stats().retained_medium_bytes, 0u);
    EXPECT_TRUE(h.check());
    // Marked and purged blocks are whole blocks again when reused.
    char* c = static_cast<char*>(h.allocate_zeroed(medium_setup::big));
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(std::all_of(c, c + medium_setup::big, [](char x) { return x == 0; }));
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, AMediumBlockReusedBeforeItDecaysStaysWarm) {
    engine_heap h(decay_options(100));
    medium_setup m(h, 1);
    const std::size_t all = m.warm(0);
    for (int round = 0; round < 20; ++round) {
        h.deallocate(m.blocks[0]);
        (void)h.end_frame();
        advance(60);
        // A little smaller: tlsf rounds a request up to the next class, past a block of its size.
        const std::size_t n = medium_setup::big - medium_setup::big / 8;
        char* again = static_cast<char*>(h.allocate(n));
        ASSERT_EQ(again, m.blocks[0]);
        std::memset(again, 2, n);
        (void)h.end_frame();
        advance(60);
    }
    EXPECT_EQ(m.warm(0), all);
    EXPECT_EQ(h.purge_stats().purged_bytes, 0u);
}

// decay_options with medium arenas of 1, 2 and 4 MiB.
engine_options small_arena_options(std::uint32_t decay_ms) {
    engine_options o = decay_options(decay_ms);
    o.medium_arena_bytes = mib;
    return o;
}

// Twenty 256 KiB blocks in small_arena_options' arenas; empty when one was refused.
std::vector<void*> fill_small_arenas(engine_heap& h) {
    std::vector<void*> v;
    for (int i = 0; i < 20; ++i) {
        v.push_back(h.allocate(std::size_t{256} << 10));
        if (v.back() == nullptr) return {};
    }
    return v;
}

// An arena that empties is whole again, and once no medium block is live the next requests start
// from the first arena: the same requests take the same places. An empty arena other than the first
// stays until it has been empty for decay_ms; then a step hands it to the span pool, where it is
// already that old, and purges it. The last free of an arena is completed though tlsf leaves it in
// flight.
TEST(EngineDecay, AnEmptyMediumArenaStaysUntilItDecays) {
    engine_heap h(small_arena_options(100));
    std::vector<void*> v = fill_small_arenas(h);
    ASSERT_FALSE(v.empty());
    const std::size_t committed = h.committed_bytes();
    const auto free_all = [&](const std::vector<void*>& blocks) {
        for (std::size_t i = 0; i < blocks.size(); ++i)
            h.deallocate(blocks[(i * 7) % blocks.size()]); // 7 and 20 are coprime: each block once
    };
    free_all(v);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.committed_bytes(), committed) << "the empty arenas stay";
    std::vector<void*> again;
    for (std::size_t i = 0; i < v.size(); ++i)
        again.push_back(h.allocate(std::size_t{256} << 10));
    EXPECT_EQ(again, v) << "the same places";
    free_all(again);
    advance(99);
    (void)h.end_frame(std::chrono::seconds{1});
    EXPECT_EQ(h.committed_bytes(), committed) << "handed back before it decayed";
    advance(1);
    (void)h.end_frame(std::chrono::seconds{1});
    EXPECT_LE(h.committed_bytes() + (std::size_t{6} << 20), committed) << "the 2 and 4 MiB arenas";
    EXPECT_TRUE(h.check());
    void* p = h.allocate(std::size_t{256} << 10); // the first arena serves it
    EXPECT_EQ(p, v.front());
    h.deallocate(p);
    EXPECT_TRUE(h.check());
}

// A free into an arena older than the one the last request came from sends the next requests
// there, whose pages were touched first, rather than further into the newest arena.
TEST(EngineDecay, AFreeIntoAnOlderArenaSendsTheNextRequestsThere) {
    engine_heap h(small_arena_options(100));
    const std::vector<void*> v = fill_small_arenas(h);
    ASSERT_FALSE(v.empty());
    // The blocks by arena: inside one, each starts right after the last.
    const auto at = [](void* p) { return reinterpret_cast<std::uintptr_t>(p); };
    const std::uintptr_t stride = at(v[1]) - at(v[0]);
    std::vector<std::vector<void*>> arenas{{v[0]}};
    for (std::size_t i = 1; i < v.size(); ++i) {
        if (at(v[i]) - at(v[i - 1]) != stride) arenas.emplace_back();
        arenas.back().push_back(v[i]);
    }
    ASSERT_EQ(arenas.size(), 3u); // 1, 2 and 4 MiB; the last has room left
    for (void* p : arenas[1])
        h.deallocate(p);
    std::vector<void*> again;
    for (std::size_t i = 0; i < arenas[1].size(); ++i)
        again.push_back(h.allocate(std::size_t{256} << 10));
    std::sort(again.begin(), again.end());
    EXPECT_EQ(again, arenas[1]) << "the middle arena's places, not the newest arena's room";
    EXPECT_TRUE(h.check());
    for (void* p : again)
        h.deallocate(p);
    for (const auto& blocks : {arenas[0], arenas[2]})
        for (void* p : blocks)
            h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().in_use, 0u);
}

// A step reads its clock before it takes the heap's locks; a block freed meanwhile by another
// thread is stamped with a later tick. It is new, not 49 days old: its arena stays. The clock itself
// stands in for the other thread (it frees the block while the step reads the time).
namespace late_free {
std::atomic<std::uint64_t> ms{1000};
engine_heap* heap = nullptr;
void* block = nullptr;
std::uint64_t clock() noexcept {
    if (void* p = std::exchange(block, nullptr)) {
        const std::uint64_t t = ms.fetch_add(1); // the free lands a tick after the step's reading
        heap->deallocate(p);
        return t;
    }
    return ms.load();
}
} // namespace late_free

TEST(EngineDecay, ABlockFreedAfterAStepReadItsClockIsNew) {
    engine_options o = small_arena_options(1000);
    o.clock_ms = &late_free::clock;
    engine_heap h(o);
    late_free::heap = &h;
    const std::vector<void*> v = fill_small_arenas(h);
    ASSERT_FALSE(v.empty());
    for (std::size_t i = 0; i + 1 < v.size(); ++i)
        h.deallocate(v[i]);
    (void)h.end_frame(std::chrono::seconds{1});
    late_free::ms += 10;
    const std::size_t committed = h.committed_bytes();
    const std::size_t spans = h.purge_stats().retained_span_bytes;
    late_free::block = v.back(); // the last block of the last arena, freed inside the next step
    (void)h.end_frame(std::chrono::seconds{1});
    EXPECT_EQ(late_free::block, nullptr) << "the step read the clock";
    EXPECT_EQ(h.purge_stats().retained_span_bytes, spans) << "the arena emptied just now: it stays";
    EXPECT_EQ(h.committed_bytes(), committed) << "nothing purged";
    EXPECT_TRUE(h.check());
}

// trim() hands every empty arena but the first back at once, whatever its age.
TEST(EngineDecay, TrimHandsEmptyMediumArenasBackAtOnce) {
    engine_heap h(small_arena_options(100000));
    std::vector<void*> v = fill_small_arenas(h);
    ASSERT_FALSE(v.empty());
    const std::size_t committed = h.committed_bytes();
    for (void* p : v)
        h.deallocate(p);
    (void)h.end_frame(std::chrono::seconds{1});
    EXPECT_EQ(h.committed_bytes(), committed) << "not decayed: the arenas stay";
    h.trim();
    EXPECT_LE(h.committed_bytes() + (std::size_t{6} << 20), committed) << "the 2 and 4 MiB arenas";
    EXPECT_TRUE(h.check());
    void* p = h.allocate(std::size_t{256} << 10); // the first arena, still there, serves it
    EXPECT_EQ(p, v.front());
    h.deallocate(p);
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, TrimPurgesEverythingWhateverItsAge) {
    engine_heap h(decay_options(1000));
    medium_setup m(h);
    char* big = written(h, 12 * mib);
    for (char* p : m.blocks)
        h.deallocate(p);
    h.deallocate(big);
    h.trim();
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(m.warm(i), 0u);
    EXPECT_EQ(resident(big, 12 * mib), 0u);
    const strata::engine_purge_stats s = h.purge_stats();
    EXPECT_EQ(s.retained_span_bytes, 0u);
    EXPECT_EQ(s.retained_medium_bytes, 0u);
    EXPECT_TRUE(h.check());
}

/// Returns: a block of `n` bytes with one byte a page written: every page resident, and cheap under
/// the sanitizers.
char* touched(engine_heap& h, std::size_t n) {
    auto* p = static_cast<char*>(h.allocate(n));
    for (std::size_t i = 0; p != nullptr && i < n; i += page)
        p[i] = 1;
    return p;
}

/// What a thread allocating and freeing blocks of `request` bytes, and one calling check(), saw
/// while the calling thread ran h.trim().
struct trim_race {
    int during = 0;       // blocks the churning thread allocated and freed within the trim
    bool served = true;   // every one of its requests got a block
    bool checked = false; // the check() during the trim passed
};

trim_race one_trim_race(engine_heap& h, std::size_t request) {
    trim_race out;
    std::atomic<int> ready{0};
    std::atomic<bool> trimming{false}, trimmed{false};
    std::thread churn([&] {
        ready.fetch_add(1);
        while (!trimming.load()) {
        }
        for (int i = 0; !trimmed.load(); ++i) { // two bytes a block: cheap under the sanitizers
            auto* p = static_cast<char*>(h.allocate(request));
            if (p == nullptr) {
                out.served = false;
                break;
            }
            p[0] = p[request - 1] = static_cast<char>(i);
            h.deallocate(p);
            if (!trimmed.load()) ++out.during;
        }
    });
    std::thread checker([&] {
        ready.fetch_add(1);
        while (!trimming.load()) {
        }
        out.checked = h.check();
    });
    while (ready.load() != 2) {
    }
    trimming.store(true);
    h.trim();
    trimmed.store(true);
    churn.join();
    checker.join();
    return out;
}

/// Returns: trim races over the backlogs make_backlog() leaves, until the churning thread got two
/// blocks within one trim (at most three: a loaded machine may not run it during one trim of a
/// few tens of ms; a trim that held its lock throughout would let it finish none), `served` and
/// `checked` over all of them.
template <class F>
trim_race trim_while_other_threads_call(engine_heap& h, std::size_t request, F make_backlog) {
    trim_race all;
    all.checked = true;
    for (int attempt = 0; attempt < 3 && all.during < 2; ++attempt) {
        make_backlog();
        const trim_race r = one_trim_race(h, request);
        all.during = r.during;
        all.served = all.served && r.served;
        all.checked = all.checked && r.checked;
    }
    return all;
}

// A span purge lets span_lock_ go while the OS drops each batch's pages, the batch's spans out of
// the bins: another thread takes and frees large blocks meanwhile (were the lock held for the whole
// purge, it could finish at most the one it began before), and a check() during the trim finds the
// heap whole (lock_all() waits for the purge to file its spans back). The trim drops 256 MiB of
// written pages.
TEST(EngineDecay, OtherThreadsTakeSpansWhileAPurgeDropsPages) {
    engine_options o = decay_options(1000);
    o.retain_bytes = std::size_t{1} << 30;
    o.large_keep_bytes = 0;
    engine_heap h(o);
    std::vector<char*> spacers;
    const auto backlog = [&] {
        std::vector<char*> freed;
        for (int i = 0; i < 64; ++i) {
            freed.push_back(touched(h, 4 * mib));
            if (spacers.size() < 64) spacers.push_back(touched(h, 2 * mib)); // no two freed spans merge
        }
        for (char* p : freed)
            h.deallocate(p);
    };
    const trim_race r = trim_while_other_threads_call(h, 3 * mib, backlog);
    EXPECT_TRUE(r.served);
    EXPECT_TRUE(r.checked);
    EXPECT_GE(r.during, 2);
    for (char* p : spacers) {
        EXPECT_EQ(resident(p, 2 * mib), 2 * mib / page);
        EXPECT_EQ(p[2 * mib - page], 1);
        h.deallocate(p);
    }
    h.trim();
    EXPECT_EQ(h.purge_stats().retained_span_bytes, 0u);
    EXPECT_TRUE(h.check());
}

// A medium purge lets medium_lock_ go while the OS drops a block's pages, the block taken out of its
// arena: another thread allocates and frees medium blocks meanwhile (were the lock held through the
// purge, it could finish at most the one it began before), and a check() during the trim finds the
// heap whole. The trim drops about 200 MiB of free 1 MiB blocks between live ones.
TEST(EngineDecay, OtherThreadsTakeMediumBlocksWhileAPurgeDropsPages) {
    engine_heap h(decay_options(1000));
    std::vector<char*> spacers;
    const auto backlog = [&] {
        std::vector<char*> freed;
        for (int i = 0; i < 200; ++i) {
            freed.push_back(touched(h, mib));
            if (spacers.size() < 200) spacers.push_back(touched(h, 80 * 1024)); // no two freed blocks merge
        }
        for (char* p : freed)
            h.deallocate(p);
    };
    const trim_race r = trim_while_other_threads_call(h, 200 * 1024, backlog);
    EXPECT_TRUE(r.served);
    EXPECT_TRUE(r.checked);
    EXPECT_GE(r.during, 2);
    EXPECT_EQ(h.purge_stats().retained_medium_bytes, 0u);
    for (char* p : spacers) {
        EXPECT_EQ(p[0], 1);
        h.deallocate(p);
    }
    EXPECT_TRUE(h.check());
}

// Pages the program locked (mlock, mlockall) refuse MADV_DONTNEED and keep their contents: once a
// purge has been refused, a purged span is no longer taken to read as zero, and allocate_zeroed
// (calloc) writes its zeros. In a child process: the refusal is noted for the whole process.
TEST(EngineDecay, ALockedRangeRefusesItsPurgeAndZeroedBlocksStayZero) {
    if (strata::test::sanitized) GTEST_SKIP() << "the sanitizers' mlock locks nothing";
    std::vector<char> probe(2 * mib, 1);
    if (::mlock(probe.data(), probe.size()) != 0) GTEST_SKIP() << "mlock refused (RLIMIT_MEMLOCK)";
    ::munlock(probe.data(), probe.size());
    EXPECT_EXIT(
        {
            engine_heap h(decay_options(1000));
            const std::size_t n = 2 * mib;
            char* p = written(h, n);
            char* other = written(h, n); // the thread keeps the span it freed last: p's is not it
            if (::mlock(p, n) != 0) std::_Exit(3);
            h.deallocate(p);
            h.deallocate(other);
            h.trim();
            if (!strata::engine_detail::purge_batch::refused()) std::_Exit(4);
            for (int i = 0; i < 2; ++i) {
                const auto* z = static_cast<const unsigned char*>(h.allocate_zeroed(n));
                if (z == nullptr) std::_Exit(5);
                if (std::any_of(z, z + n, [](unsigned char c) { return c != 0; })) std::_Exit(6);
            }
            std::_Exit(h.check() ? 0 : 7);
        },
        ::testing::ExitedWithCode(0), "");
}

// -------------------------------------------------------------------------------------------------
// Kept spans (a thread's last freed large block)
// -------------------------------------------------------------------------------------------------

/// Runs `f` on a thread of its own and waits for it.
template <class F>
void on_thread(F f) {
    std::thread t(f);
    t.join();
}

TEST(EngineDecay, AThreadGetsBackTheLargeSpanItFreedLast) {
    engine_heap h(decay_options(1000));
    char* mine = written(h, 4 * mib);
    ASSERT_NE(mine, nullptr);
    h.deallocate(mine);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().in_use, 0u);
    EXPECT_EQ(h.purge_stats().retained_span_bytes, 4 * mib);
    // Another thread's request of the same size does not take it.
    char* theirs = nullptr;
    std::thread other([&] {
        theirs = written(h, 4 * mib, 2);
        ASSERT_NE(theirs, nullptr);
        EXPECT_NE(theirs, mine);
    });
    other.join(); // the thread's exit gives its cache back; its block is still live
    // This thread's next request a little smaller takes its own span whole, still resident.
    char* again = static_cast<char*>(h.allocate(4 * mib - 300 * 1024));
    EXPECT_EQ(again, mine);
    EXPECT_EQ(h.usable_size(again), 4 * mib);
    EXPECT_EQ(resident(again, 4 * mib), 4 * mib / page);
    h.deallocate(again);
    h.deallocate(theirs);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().in_use, 0u);
}

TEST(EngineDecay, AKeptSpanMuchBiggerThanAskedGivesItsFront) {
    engine_heap h(decay_options(1000));
    char* big = written(h, 24 * mib);
    ASSERT_NE(big, nullptr);
    h.deallocate(big);
    char* front = static_cast<char*>(h.allocate(2 * mib));
    EXPECT_EQ(front, big);
    EXPECT_EQ(h.usable_size(front), 2 * mib);
    EXPECT_TRUE(h.check());
    // The rest went to the pool, where another thread's request finds it.
    char* rest = nullptr;
    on_thread([&] { rest = static_cast<char*>(h.allocate(20 * mib)); });
    EXPECT_EQ(rest, big + 2 * mib);
    h.deallocate(front);
    h.deallocate(rest);
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, AKeptSpanTooSmallGoesBackToThePool) {
    engine_heap h(decay_options(1000));
    char* four[4];
    for (char*& p : four)
        ASSERT_NE(p = written(h, 4 * mib), nullptr);
    on_thread([&] { h.deallocate(four[2]); }); // kept by that thread until it exits: then free
    h.deallocate(four[1]);                     // kept by this one
    char* grown = static_cast<char*>(h.allocate(6 * mib));
    EXPECT_EQ(grown, four[1]) << "the kept span, merged with its free neighbour, serves the bigger request";
    EXPECT_TRUE(h.check());
    for (char* p : {four[0], four[3], grown})
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

// A thread that keeps a large span while its runs need memory the pool has no resident pages for
// hands the span to the pool at the fourth such run, which then takes the span's pages.
TEST(EngineDecay, AKeptSpanGoesToTheRunsAtTheFourthThatWouldTakeFreshPages) {
    engine_heap h(decay_options(1000));
    char* big = written(h, 2 * mib);
    ASSERT_NE(big, nullptr);
    h.deallocate(big); // kept
    const auto inside = [&](const void* p) {
        const auto* c = static_cast<const char*>(p);
        return c >= big && c < big + 2 * mib;
    };
    std::vector<void*> blocks;
    for (const std::size_t size : {16, 32, 48}) { // a run each, from fresh pages
        blocks.push_back(h.allocate(size));
        EXPECT_FALSE(inside(blocks.back())) << size;
    }
    blocks.push_back(h.allocate(64));
    EXPECT_TRUE(inside(blocks.back())) << "the fourth run comes from the span the thread no longer keeps";
    EXPECT_TRUE(h.check());
    for (void* p : blocks)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

TEST(EngineDecay, AKeptSpanDecaysLikeAFreeOne) {
    engine_heap h(decay_options(100));
    char* p = written(h, 8 * mib);
    ASSERT_NE(p, nullptr);
    h.deallocate(p);
    advance(99);
    // Another thread's frame: kept spans of every thread age by the same clock.
    std::size_t purged = 1;
    on_thread([&] { purged = h.end_frame(std::chrono::seconds{1}); });
    EXPECT_EQ(purged, 0u);
    EXPECT_EQ(resident(p, 8 * mib), 8 * mib / page);
    advance(1);
    on_thread([&] { purged = h.end_frame(std::chrono::seconds{1}); });
    EXPECT_EQ(purged, 8 * mib);
    EXPECT_EQ(resident(p, 8 * mib), 0u);
    EXPECT_EQ(h.purge_stats().retained_span_bytes, 0u);
    EXPECT_TRUE(h.check());
    // No longer kept: another thread's request takes the span (clean now).
    char* q = nullptr;
    on_thread([&] {
        q = static_cast<char*>(h.allocate(8 * mib));
        h.deallocate(q);
    });
    EXPECT_EQ(q, p);
    EXPECT_TRUE(h.check());
}

// Bad input: a second free of a block whose span is kept is ignored (the span is neither free nor a
// block); the span still serves its thread's next request, and the counts stay exact. An aligned
// request the kept span cannot promise sends it to the pool, where a best fit may take it.
TEST(EngineDecay, ASecondFreeOfAKeptBlockIsIgnored) {
    engine_heap h(decay_options(1000));
    char* p = written(h, 4 * mib);
    ASSERT_NE(p, nullptr);
    h.deallocate(p);
    h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().in_use, 0u);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_EQ(h.purge_stats().retained_span_bytes, 4 * mib);
    EXPECT_EQ(h.allocate(4 * mib), p);
    EXPECT_EQ(h.stats().in_use, 4 * mib);
    h.deallocate(p);
    void* aligned = h.allocate(2 * mib, 2 * mib);
    ASSERT_NE(aligned, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % (2 * mib), 0u);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().in_use, h.usable_size(aligned));
    h.deallocate(aligned);
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, ExitTrimAndTheCapHandKeptSpansBack) {
    {
        engine_heap h(decay_options(1000));
        char* p = nullptr;
        on_thread([&] { h.deallocate(p = written(h, 4 * mib)); }); // kept, until the thread exits
        EXPECT_EQ(h.allocate(4 * mib), p);
        EXPECT_TRUE(h.check());
    }
    {
        engine_heap h(decay_options(1000));
        char* p = written(h, 4 * mib);
        h.deallocate(p);
        h.trim();
        EXPECT_EQ(resident(p, 4 * mib), 0u);
        EXPECT_EQ(h.purge_stats().retained_span_bytes, 0u);
        EXPECT_TRUE(h.check());
    }
    for (const bool off : {false, true}) {
        engine_options o = decay_options(1000);
        if (off)
            o.large_keep_bytes = 0;
        else
            o.retain_bytes = 8 * mib; // kept spans of all threads stay within it
        engine_heap h(o);
        char* p = written(h, 12 * mib);
        h.deallocate(p);
        char* q = nullptr;
        on_thread([&] { q = static_cast<char*>(h.allocate(12 * mib)); });
        EXPECT_EQ(q, p) << (off ? "large_keep_bytes = 0" : "past retain_bytes");
        h.deallocate(q);
        EXPECT_TRUE(h.check());
    }
}

// -------------------------------------------------------------------------------------------------
// Whole runs
// -------------------------------------------------------------------------------------------------

// Random blocks of every tier under random ages and frame budgets: contents survive every purge
// (one byte per page, a tag per block), and the heap checks after every frame.
void random_ages_and_budgets(bool batch_purges, int ops) {
    engine_options o = decay_options(40);
    o.retain_bytes = 48 * mib;
    o.medium_retain_bytes = 24 * mib;
    o.batch_purges = batch_purges;
    engine_heap h(o);
    std::mt19937_64 rng(2026);
    struct block {
        unsigned char* p = nullptr;
        std::size_t n = 0;
        unsigned char tag = 0;
    };
    std::vector<block> slots(24);
    const auto byte_at = [](const block& b, std::size_t at) {
        return static_cast<unsigned char>(b.tag + at / page);
    };
    const auto intact = [&](const block& b) {
        for (std::size_t at = 0; at < b.n - 1; at += page)
            if (b.p[at] != byte_at(b, at)) return false;
        return b.p[b.n - 1] == static_cast<unsigned char>(~b.tag);
    };
    for (int op = 0; op < ops; ++op) {
        block& b = slots[rng() % slots.size()];
        const bool resize = b.p != nullptr && rng() % 4 == 0;
        if (b.p != nullptr) {
            ASSERT_TRUE(intact(b)) << "op " << op;
            if (!resize) {
                h.deallocate(b.p);
                b.p = nullptr;
            }
        }
        const unsigned kind = static_cast<unsigned>(rng() % 10);
        const std::size_t n = kind < 5   ? 16 + rng() % 60000
                              : kind < 9 ? (std::size_t{64} << 10) + rng() % (6 * mib)
                                         : 9 * mib + rng() % (12 * mib);
        if (resize) { // grows and shrinks in place (large spans take a free successor) or moves
            auto* q = static_cast<unsigned char*>(h.reallocate(b.p, n));
            ASSERT_NE(q, nullptr);
            for (std::size_t at = 0; at < std::min(b.n, n) - 1; at += page)
                ASSERT_EQ(q[at], byte_at(b, at)) << "op " << op;
            b.p = q;
        } else {
            b.p = static_cast<unsigned char*>(h.allocate(n));
        }
        b.n = n;
        ASSERT_NE(b.p, nullptr);
        b.tag = static_cast<unsigned char>(rng());
        for (std::size_t at = 0; at < b.n - 1; at += page)
            b.p[at] = byte_at(b, at);
        b.p[b.n - 1] = static_cast<unsigned char>(~b.tag);
        advance(rng() % 12);
        if (op % 16 == 0) {
            (void)h.end_frame(std::chrono::microseconds{1 + rng() % 300});
            ASSERT_TRUE(h.check()) << "op " << op;
        }
    }
    for (block& b : slots) {
        ASSERT_TRUE(intact(b));
        h.deallocate(b.p);
    }
    h.trim();
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

TEST(EngineDecay, RandomAgesAndBudgetsKeepEveryLiveByte) { random_ages_and_budgets(true, 3000); }

// One madvise per range: the path of kernels without the vectored call.
TEST(EngineDecay, RandomAgesAndBudgetsKeepEveryLiveByteUnbatched) { random_ages_and_budgets(false, 800); }

// Three threads churn small, medium and large blocks while a fourth moves the clock and trims: span
// purges (caps at frees, big calls, slow paths' steps, trims) let span_lock_ go with spans out of
// the bins while the others take, free and merge spans. Every live byte stays, and everything
// ends purged and consistent.
TEST(EngineDecay, ThreadsChurningBigBlocksRaceTheSpanPurges) {
    engine_options o = decay_options(20);
    o.retain_bytes = 8 * mib; // the caps purge at frees too
    o.purge_step_us = 100;
    engine_heap h(o);
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0};
    // Every 61st byte and the last: a purged page reads as zero wherever it is.
    const auto sampled = [](const char* p, std::size_t n, char v) {
        for (std::size_t i = 0; i < n; i += 61)
            if (p[i] != v) return false;
        return p[n - 1] == v;
    };
    const auto churn = [&](unsigned seed) {
        std::mt19937 rng(seed);
        struct block {
            char* p;
            std::size_t n;
            char fill;
        };
        std::vector<block> live;
        const int ops = strata::test::sanitized ? 400 : 1500;
        for (int op = 0; op < ops; ++op) {
            if (live.size() < 12 && (live.empty() || rng() % 2 == 0)) {
                const unsigned kind = rng() % 8;
                const std::size_t n = kind < 3   ? 16 + rng() % 4000                // small
                                      : kind < 6 ? 64 * 1024 + rng() % (960 * 1024) // medium
                                                 : mib + 1 + rng() % (3 * mib);     // large
                const auto fill = static_cast<char>(1 + rng() % 250);
                char* p = written(h, n, fill);
                if (p == nullptr) {
                    bad.fetch_add(1);
                    break;
                }
                live.push_back({p, n, fill});
            } else {
                const std::size_t i = rng() % live.size();
                if (!sampled(live[i].p, live[i].n, live[i].fill)) bad.fetch_add(1);
                h.deallocate(live[i].p);
                live[i] = live.back();
                live.pop_back();
            }
        }
        for (const block& b : live) {
            if (!sampled(b.p, b.n, b.fill)) bad.fetch_add(1);
            h.deallocate(b.p);
        }
    };
    std::thread trimmer([&] {
        for (int i = 0; !stop.load(); ++i) {
            advance(3);
            if (i % 8 == 0) h.trim();
            std::this_thread::sleep_for(std::chrono::microseconds{200});
        }
    });
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 3; ++t)
        threads.emplace_back(churn, 17 + t);
    for (std::thread& t : threads)
        t.join();
    stop.store(true);
    trimmer.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_TRUE(h.check());
    h.trim();
    EXPECT_EQ(h.purge_stats().retained_span_bytes, 0u);
    EXPECT_TRUE(h.check());
}

// A shrunk heap of scattered free runs (each between two live ones): decay gives every free run
// back, batched or one call each, and no live page.
TEST(EngineDecay, ScatteredFreeRunsAllDecay) {
    for (const bool batch : {true, false}) {
        engine_options o = decay_options(100);
        o.batch_purges = batch;
        o.thread_cache_runs = 0;
        engine_heap h(o);
        constexpr std::size_t block = 32 * 1024; // 16 blocks a run: a run is 512 KiB, blocks in a row
        constexpr std::size_t runs = 96;
        std::vector<char*> blocks;
        for (std::size_t i = 0; i < runs * 16; ++i) {
            blocks.push_back(written(h, block, static_cast<char>(1 + i / 16)));
            ASSERT_NE(blocks.back(), nullptr);
        }
        for (std::size_t i = 0; i < blocks.size(); ++i)
            if ((i / 16) % 2 == 1) h.deallocate(blocks[i]); // every other run empties
        advance(200);
        (void)h.end_frame(std::chrono::seconds{10});
        std::size_t resident_runs = 0; // freed runs with a resident page
        for (std::size_t i = 0; i < blocks.size(); ++i) {
            if ((i / 16) % 2 == 1) {
                if (i % 16 == 0) resident_runs += resident(blocks[i], 16 * block) != 0 ? 1 : 0;
            } else
                ASSERT_TRUE(std::all_of(blocks[i], blocks[i] + block,
                                        [&](char c) { return c == static_cast<char>(1 + i / 16); }))
                    << "batch " << batch;
        }
        // The thread keeps the class's current run (the last) and one spare empty run; every
        // other freed run went back to the span pool and decayed.
        EXPECT_LE(resident_runs, 2u) << "batch " << batch;
        EXPECT_TRUE(h.check());
        for (std::size_t i = 0; i < blocks.size(); ++i)
            if ((i / 16) % 2 == 0) h.deallocate(blocks[i]);
    }
}

// -------------------------------------------------------------------------------------------------
// Free blocks inside runs that still hold live ones (size classes of 8 KiB and more)
// -------------------------------------------------------------------------------------------------

/// How long free blocks inside the runs of a class that has not shrunk wait at decay_options(100).
constexpr std::uint64_t steady_wait_ms = 32 * 100;

/// The whole pages of block [p, p + n) that an in-run purge gives back: past the page of its mark.
std::size_t purgeable_resident(const char* p, std::size_t n) {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t lo = (at + 64 + page - 1) & ~(page - 1);
    const std::uintptr_t hi = (at + n) & ~(page - 1);
    return hi > lo ? resident(reinterpret_cast<const void*>(lo), hi - lo) : 0;
}

/// The byte block i of numbered_blocks() is filled with.
char numbered(std::size_t i) { return static_cast<char>(i % 100 + 1); }

/// Returns: `count` blocks of `n` bytes, block i filled with numbered(i).
std::vector<char*> numbered_blocks(engine_heap& h, std::size_t n, std::size_t count) {
    std::vector<char*> blocks;
    for (std::size_t i = 0; i < count; ++i)
        blocks.push_back(written(h, n, numbered(i)));
    return blocks;
}

TEST(EngineDecay, FreeBlocksInsideUsedRunsDecay) {
    engine_heap h(decay_options(100));
    constexpr std::size_t n = 24 * 1024;
    std::vector<char*> blocks = numbered_blocks(h, n, 64);
    const std::size_t bs = h.usable_size(blocks[0]);
    ASSERT_GE(bs, n);
    std::vector<char*> freed;
    for (std::size_t i = 0; i < blocks.size(); i += 2) { // every other: the runs keep live blocks
        freed.push_back(blocks[i]);
        h.deallocate(blocks[i]);
    }
    for (char* p : freed)
        ASSERT_GT(purgeable_resident(p, bs), 0u);
    EXPECT_EQ(h.end_frame(std::chrono::seconds{1}), 0u); // a walk sees them free
    advance(steady_wait_ms - 1); // blocks inside runs of a steady class wait 32 * decay_ms
    EXPECT_EQ(h.end_frame(std::chrono::seconds{1}), 0u);
    for (char* p : freed)
        EXPECT_GT(purgeable_resident(p, bs), 0u) << "purged before it decayed";
    advance(1);
    EXPECT_GT(h.end_frame(std::chrono::seconds{1}), 0u);
    for (char* p : freed)
        EXPECT_EQ(purgeable_resident(p, bs), 0u);
    for (std::size_t i = 1; i < blocks.size(); i += 2) // the live neighbours keep every byte
        EXPECT_TRUE(filled_with(blocks[i], n, numbered(i))) << i;
    EXPECT_TRUE(h.check());
    // The purged blocks serve again, with zero pages past their first.
    for (std::size_t k = 0; k < freed.size(); ++k) {
        char* p = static_cast<char*>(h.allocate(n));
        ASSERT_NE(p, nullptr);
        EXPECT_NE(std::find(freed.begin(), freed.end(), p), freed.end());
        const std::size_t skip = page - (reinterpret_cast<std::uintptr_t>(p) & (page - 1));
        EXPECT_TRUE(
            filled_with(p + skip, n - skip - (reinterpret_cast<std::uintptr_t>(p + n) & (page - 1)), 0));
        std::memset(p, 7, n);
        blocks[static_cast<std::size_t>(std::find(blocks.begin(), blocks.end(), p) - blocks.begin())] = p;
    }
    for (char* p : blocks)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

/// Frees block i of 64 when freed(i) (every run keeps live blocks) and checks that the free ones
/// give their pages back `wait` ms after a walk first saw them, not a tick before, and that the
/// live ones keep every byte.
template <class Freed>
void in_run_blocks_wait(Freed freed, std::uint64_t wait) {
    engine_heap h(decay_options(100));
    constexpr std::size_t n = 24 * 1024;
    const std::vector<char*> blocks = numbered_blocks(h, n, 64);
    const std::size_t bs = h.usable_size(blocks[0]);
    for (std::size_t i = 0; i < blocks.size(); ++i)
        if (freed(i)) h.deallocate(blocks[i]);
    EXPECT_EQ(h.end_frame(std::chrono::seconds{1}), 0u); // a walk sees them free
    advance(wait - 1);
    EXPECT_EQ(h.end_frame(std::chrono::seconds{1}), 0u) << "purged before it decayed";
    advance(1);
    EXPECT_GT(h.end_frame(std::chrono::seconds{1}), 0u);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        if (freed(i)) {
            EXPECT_EQ(purgeable_resident(blocks[i], bs), 0u) << i;
        } else {
            EXPECT_TRUE(filled_with(blocks[i], n, numbered(i))) << i;
            h.deallocate(blocks[i]);
        }
    }
    EXPECT_TRUE(h.check());
}

// A class whose free blocks outnumber its live ones more than twice over has shrunk, beyond the
// swings of a steady live count: its free blocks decay after decay_ms, as spans do.
TEST(EngineDecay, FreeBlocksOfAShrunkClassDecayAfterTheDecayTime) {
    in_run_blocks_wait([](std::size_t i) { return i % 4 != 3; }, 100); // 48 free, 16 live
}

// Fewer than twice as many free blocks as live ones is a swing of a steady class: they wait
// 32 * decay_ms.
TEST(EngineDecay, FreeBlocksOfAClassThatHasNotShrunkWaitLonger) {
    in_run_blocks_wait([](std::size_t i) { return i % 8 < 5; }, steady_wait_ms); // 40 free, 24 live
}

// A step with a tiny budget walks few runs. A run whose blocks are not due yet is not walked again
// until every other run has been, so each step goes on where the last stopped: without that, every
// step would walk the same first runs (their waiting blocks) and run out of time before the due
// blocks behind them.
TEST(EngineDecay, RunsWithBlocksNotYetDueDoNotHoldTheWalkBack) {
    engine_heap h(decay_options(100));
    constexpr std::size_t n = 24 * 1024;
    constexpr int count = 1024; // dozens of runs
    const std::vector<char*> blocks = numbered_blocks(h, n, count);
    const std::size_t bs = h.usable_size(blocks[0]);
    for (std::size_t i = 0; i < blocks.size(); i += 2)
        h.deallocate(blocks[i]);
    (void)h.end_frame(std::chrono::seconds{1}); // a walk sees them free
    advance(steady_wait_ms);                    // and now they are due
    for (std::size_t i = 1; i < blocks.size(); i += 4)
        h.deallocate(blocks[i]);                 // new free blocks, not due, in every run
    for (int step = 0; step < count / 4; ++step) // at least one run a step
        (void)h.end_frame(std::chrono::microseconds{0});
    for (std::size_t i = 0; i < blocks.size(); i += 2)
        ASSERT_EQ(purgeable_resident(blocks[i], bs), 0u) << i;
    for (std::size_t i = 1; i < blocks.size(); i += 4)
        EXPECT_GT(purgeable_resident(blocks[i], bs), 0u) << i;
    for (std::size_t i = 3; i < blocks.size(); i += 4) {
        EXPECT_TRUE(filled_with(blocks[i], n, numbered(i))) << i;
        h.deallocate(blocks[i]);
    }
    EXPECT_TRUE(h.check());
}

/// Returns: `count` blocks of `n` bytes, written; the even-numbered ones freed (so their runs keep
/// live blocks).
std::vector<char*> every_other_freed(engine_heap& h, std::size_t n, int count) {
    std::vector<char*> blocks;
    for (int i = 0; i < count; ++i)
        blocks.push_back(written(h, n));
    for (std::size_t i = 0; i < blocks.size(); i += 2)
        h.deallocate(blocks[i]);
    return blocks;
}

/// Effects: expects the blocks every_other_freed() freed purged and the live ones whole, then
/// frees the live ones.
void expect_freed_purged_then_free_live(engine_heap& h, const std::vector<char*>& blocks, std::size_t n) {
    for (std::size_t i = 0; i < blocks.size(); i += 2)
        EXPECT_EQ(purgeable_resident(blocks[i], n), 0u) << i;
    for (std::size_t i = 1; i < blocks.size(); i += 2) {
        EXPECT_TRUE(filled_with(blocks[i], n, 1)) << i;
        h.deallocate(blocks[i]);
    }
}

TEST(EngineDecay, RunBlockPurgeCanBeTurnedOff) {
    engine_options o = decay_options(100);
    o.purge_run_blocks = false;
    engine_heap h(o);
    constexpr std::size_t n = 24 * 1024;
    const std::vector<char*> blocks = every_other_freed(h, n, 32);
    (void)h.end_frame(std::chrono::seconds{1});
    advance(1000);
    EXPECT_EQ(h.end_frame(std::chrono::seconds{1}), 0u);
    for (std::size_t i = 0; i < blocks.size(); i += 2)
        EXPECT_GT(purgeable_resident(blocks[i], n), 0u);
    for (std::size_t i = 1; i < blocks.size(); i += 2)
        h.deallocate(blocks[i]);
}

// A step that a medium or large call takes walks the calling thread's runs too: a program whose
// slow paths are mostly medium or large frees still gives back the free blocks inside its runs.
void run_blocks_decay_when_steps_free(std::size_t other) {
    engine_heap h(decay_options(100));
    constexpr std::size_t n = 24 * 1024;
    const std::vector<char*> blocks = every_other_freed(h, n, 32);
    const auto other_call = [&] { h.deallocate(written(h, other)); };
    advance(100); // the first step comes decay_ms after the heap was made
    other_call(); // a step: its walk sees the blocks free
    advance(steady_wait_ms);
    other_call(); // a step: they decayed (32 * decay_ms)
    expect_freed_purged_then_free_live(h, blocks, n);
    EXPECT_TRUE(h.check());
}

TEST(EngineDecay, FreeBlocksInsideUsedRunsDecayWhenMediumFreesTakeTheSteps) {
    run_blocks_decay_when_steps_free(256 * 1024);
}

TEST(EngineDecay, FreeBlocksInsideUsedRunsDecayWhenLargeFreesTakeTheSteps) {
    run_blocks_decay_when_steps_free(8 * mib);
}

// A free that empties a run (not the one the thread allocates from) takes a step that walks the
// thread's runs: a program that shrinks, whose allocations pop what it freed and never refill,
// still gives back the free blocks inside its runs without frame calls.
TEST(EngineDecay, FreeBlocksInsideUsedRunsDecayWhenFreesThatEmptyRunsTakeTheSteps) {
    engine_heap h(decay_options(100));
    constexpr std::size_t n = 24 * 1024;
    const std::vector<char*> blocks = every_other_freed(h, n, 32);
    // Runs of 1 KiB blocks, whole (64 blocks in a run's 64 KiB), grouped by run; the last one made
    // is the thread's current run and stays.
    constexpr std::size_t small = 1024;
    std::vector<std::vector<char*>> runs;
    std::uintptr_t last = 0;
    while (runs.size() < 4) {
        char* p = written(h, small);
        ASSERT_NE(p, nullptr);
        const std::uintptr_t run = reinterpret_cast<std::uintptr_t>(p) >> 16;
        if (runs.empty() || run != last) runs.emplace_back();
        runs.back().push_back(p);
        last = run;
    }
    ASSERT_EQ(runs[1].size(), 64u);
    ASSERT_EQ(runs[2].size(), 64u);
    const std::size_t steps = h.purge_stats().steps;
    const auto empty_run = [&](std::vector<char*>& run) {
        for (char* p : run)
            h.deallocate(p);
        run.clear();
    };
    advance(100);       // the first step comes decay_ms after the heap was made
    empty_run(runs[1]); // its last free: a step, whose walk sees the 24 KiB blocks free
    EXPECT_EQ(h.purge_stats().steps, steps + 1);
    advance(steady_wait_ms);
    empty_run(runs[2]); // a step: they decayed (32 * decay_ms)
    EXPECT_EQ(h.purge_stats().steps, steps + 2);
    expect_freed_purged_then_free_live(h, blocks, n);
    empty_run(runs[0]);
    empty_run(runs[3]);
    EXPECT_TRUE(h.check());
}

// Only a run's owner walks its free list: another thread's end_frame leaves the blocks alone.
TEST(EngineDecay, OnlyTheOwnerThreadPurgesInsideItsRuns) {
    engine_heap h(decay_options(100));
    constexpr std::size_t n = 16 * 1024;
    const std::vector<char*> blocks = every_other_freed(h, n, 32);
    std::thread other([&] {
        (void)h.end_frame(std::chrono::seconds{1});
        advance(steady_wait_ms + 200);
        EXPECT_EQ(h.end_frame(std::chrono::seconds{1}), 0u);
    });
    other.join();
    EXPECT_GT(purgeable_resident(blocks[0], n), 0u);
    (void)h.end_frame(std::chrono::seconds{1}); // the owner's first walk marks them
    advance(steady_wait_ms);
    EXPECT_GT(h.end_frame(std::chrono::seconds{1}), 0u);
    EXPECT_EQ(purgeable_resident(blocks[0], n), 0u);
    for (std::size_t i = 1; i < blocks.size(); i += 2)
        h.deallocate(blocks[i]);
    EXPECT_TRUE(h.check());
}

// The purge thread cannot walk another thread's runs either: after each of its steps, every thread
// walks its own at its first small refill, so a program without frame calls gives back the free
// blocks inside its runs as one with them does.
TEST(EngineDecay, APurgeThreadHasOwnersWalkTheirRunsAtTheirNextRefill) {
    engine_heap h(decay_options(100));
    constexpr std::size_t n = 16 * 1024;
    const std::vector<char*> blocks = every_other_freed(h, n, 32);
    // A refill: the first block of a class this thread has not allocated yet (16 B steps to 128 B).
    std::vector<void*> firsts;
    const auto refill = [&] { firsts.push_back(h.allocate(16 * (firsts.size() + 1))); };
    const auto next_thread_step = [&] { // false when the purge thread took no step in 5 s
        const std::size_t before = h.purge_stats().steps;
        for (int i = 0; i < 5000 && h.purge_stats().steps == before; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds{1});
        return h.purge_stats().steps > before;
    };
    ASSERT_TRUE(h.start_purge_thread(std::chrono::milliseconds{1}));
    ASSERT_TRUE(next_thread_step());
    refill(); // a walk sees the blocks free
    advance(steady_wait_ms);
    ASSERT_TRUE(next_thread_step());
    refill(); // a walk: they decayed (32 * decay_ms)
    h.stop_purge_thread();
    expect_freed_purged_then_free_live(h, blocks, n);
    for (void* p : firsts)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

// A purge thread's steps do not bring the slow paths' steps back while the program calls
// end_frame: a step of any kind restarts their interval, but end_frame's pacing lasts decay_ms.
TEST(EngineDecay, APurgeThreadLeavesTheSlowPathsPacedByEndFrame) {
    engine_heap h(decay_options(800)); // the slow paths' interval: 100 ms
    const auto slow_call = [&] { h.deallocate(written(h, 256 * 1024)); };
    advance(800);
    (void)h.end_frame(std::chrono::microseconds{100});
    const std::size_t before = h.purge_stats().steps;
    ASSERT_TRUE(h.start_purge_thread(std::chrono::milliseconds{1}));
    for (int i = 0; i < 5000 && h.purge_stats().steps == before; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
    h.stop_purge_thread();
    ASSERT_GT(h.purge_stats().steps, before);
    const std::size_t steps = h.purge_stats().steps;
    advance(100); // the interval since the thread's last step, within decay_ms of the frame
    slow_call();
    EXPECT_EQ(h.purge_stats().steps, steps);
    advance(700); // decay_ms since the frame: the slow paths step again
    slow_call();
    EXPECT_EQ(h.purge_stats().steps, steps + 1);
    EXPECT_TRUE(h.check());
}

// The free blocks inside another thread's runs are that thread's to walk: end_frame asks it (at
// most every decay_ms) to walk them at its next slow call, since that call takes no step of
// its own while the program calls end_frame.
TEST(EngineDecay, EndFrameHasOtherThreadsWalkTheirRunsAtTheirNextSlowCall) {
    engine_heap h(decay_options(100)); // asks at most every 100 ms
    constexpr std::size_t n = 24 * 1024;
    std::vector<char*> blocks;
    std::atomic<int> go{0};
    std::atomic<int> done{0};
    const auto wait_for = [](const std::atomic<int>& a, int v) {
        while (a.load() < v)
            std::this_thread::yield();
    };
    std::thread worker([&] {
        blocks = numbered_blocks(h, n, 64);
        for (std::size_t i = 0; i < blocks.size(); ++i)
            if (i % 4 != 3) h.deallocate(blocks[i]); // 48 free, 16 live: the class shrank
        done = 1;
        for (int call = 1; call <= 2; ++call) {
            wait_for(go, call);
            h.deallocate(written(h, 256 * 1024)); // a slow call: a medium free
            done = call + 1;
        }
    });
    wait_for(done, 1);
    const std::size_t bs = h.usable_size(blocks[0]);
    advance(100);
    (void)h.end_frame(std::chrono::seconds{1});
    go = 1; // the worker's walk sees the blocks free
    wait_for(done, 2);
    advance(100);
    (void)h.end_frame(std::chrono::seconds{1});
    go = 2; // its walk: they decayed (decay_ms, a shrunk class)
    worker.join();
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        if (i % 4 != 3) {
            EXPECT_EQ(purgeable_resident(blocks[i], bs), 0u) << i;
        } else {
            EXPECT_TRUE(filled_with(blocks[i], n, numbered(i))) << i;
            h.deallocate(blocks[i]);
        }
    }
    EXPECT_TRUE(h.check());
}

/// Returns: the bytes a purge of the free block [p, p + n) inside a run gives back (its whole pages
/// past the one holding its first cache line).
std::size_t purgeable_bytes(const char* p, std::size_t n) {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t lo = (at + 64 + page - 1) & ~(page - 1);
    const std::uintptr_t hi = (at + n) & ~(page - 1);
    return hi > lo ? hi - lo : 0;
}

/// A live block of 8-64 KiB and the byte it is filled with.
struct filled_block {
    char* p;
    std::size_t n;
    char v;
};

/// Effects: one random step of a churn of 8-64 KiB blocks: a new filled block while fewer than
/// `cap` live (two steps in three), else a random one checked and freed; every `frame`-th step
/// advances the clock and calls end_frame with a random budget under `budget_us`.
/// Returns: false when an allocation failed or a freed block had lost its fill.
bool churn_step(engine_heap& h, std::mt19937_64& rng, std::vector<filled_block>& live, int step,
                std::size_t cap, int frame, unsigned budget_us) {
    bool ok = true;
    if (live.size() < cap && (live.empty() || rng() % 3 != 0)) {
        const std::size_t n = 8192 + rng() % (56 * 1024);
        const auto v = static_cast<char>(1 + rng() % 250);
        char* p = written(h, n, v);
        if (p == nullptr) return false;
        live.push_back({p, n, v});
    } else {
        const std::size_t k = rng() % live.size();
        ok = filled_with(live[k].p, live[k].n, live[k].v);
        h.deallocate(live[k].p);
        live[k] = live.back();
        live.pop_back();
    }
    if (step % frame == 0) {
        advance(rng() % 15);
        (void)h.end_frame(std::chrono::microseconds{1 + rng() % budget_us});
    }
    return ok;
}

/// Effects: checks and frees the blocks of `live` from the back until `keep` are left.
/// Returns: whether each had kept its fill.
bool free_checked(engine_heap& h, std::vector<filled_block>& live, std::size_t keep = 0) {
    bool ok = true;
    for (; live.size() > keep; live.pop_back()) {
        ok = filled_with(live.back().p, live.back().n, live.back().v) && ok;
        h.deallocate(live.back().p);
    }
    return ok;
}

// While a purge thread runs, a walk costs its owner no system call: it hands the due blocks to the
// thread, which purges them and frees them back to their runs. A thread that steps once an hour
// holds them until it stops (stop_purge_thread purges what it was handed).
TEST(EngineDecay, AWalkHandsDueBlocksToThePurgeThreadWhichFreesThemBack) {
    engine_heap h(decay_options(100));
    constexpr std::size_t n = 16 * 1024;
    const std::vector<char*> blocks = every_other_freed(h, n, 32);
    std::size_t due = 0;
    for (std::size_t i = 0; i < blocks.size(); i += 2)
        due += purgeable_bytes(blocks[i], n);
    ASSERT_GT(due, 0u);
    ASSERT_TRUE(h.start_purge_thread(std::chrono::hours{1}));
    (void)h.end_frame(std::chrono::seconds{1}); // a walk sees the blocks free
    advance(steady_wait_ms);
    EXPECT_EQ(h.end_frame(std::chrono::seconds{1}), 0u) << "purged at the walk";
    EXPECT_EQ(h.purge_stats().handed_bytes, due);
    EXPECT_EQ(h.purge_stats().purged_bytes, 0u);
    for (std::size_t i = 0; i < blocks.size(); i += 2)
        EXPECT_GT(purgeable_resident(blocks[i], n), 0u) << i;
    EXPECT_TRUE(h.check()); // handed blocks count as out in their runs
    h.stop_purge_thread();
    EXPECT_EQ(h.purge_stats().purged_bytes, due);
    expect_freed_purged_then_free_live(h, blocks, n);
    EXPECT_TRUE(h.check());
    // Every block went home: the runs hand out the same 32 blocks again, and no new run is made.
    const std::size_t committed = h.class_stats(engine_heap::class_of(n)).committed_bytes;
    std::vector<char*> again;
    for (int i = 0; i < 32; ++i)
        again.push_back(written(h, n, 2));
    EXPECT_EQ(h.class_stats(engine_heap::class_of(n)).committed_bytes, committed);
    std::vector<char*> before = blocks;
    std::sort(before.begin(), before.end());
    std::sort(again.begin(), again.end());
    EXPECT_EQ(again, before);
    for (char* p : again)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

// Blocks handed to the purge thread by a thread that has exited since go to its abandoned runs,
// which trim() frees once their last live block is freed.
TEST(EngineDecay, BlocksHandedByAThreadThatExitedGoToItsAbandonedRuns) {
    engine_heap h(decay_options(100));
    constexpr std::size_t n = 16 * 1024;
    ASSERT_TRUE(h.start_purge_thread(std::chrono::hours{1}));
    std::vector<char*> blocks;
    std::thread worker([&] {
        blocks = every_other_freed(h, n, 32);
        (void)h.end_frame(std::chrono::seconds{1});
        advance(steady_wait_ms);
        (void)h.end_frame(std::chrono::seconds{1}); // hands them off, and exits
    });
    worker.join();
    EXPECT_GT(h.purge_stats().handed_bytes, 0u);
    h.stop_purge_thread();
    EXPECT_EQ(h.purge_stats().purged_bytes, h.purge_stats().handed_bytes);
    for (std::size_t i = 1; i < blocks.size(); i += 2) {
        EXPECT_TRUE(filled_with(blocks[i], n, 1)) << i;
        h.deallocate(blocks[i]);
    }
    h.trim();
    EXPECT_EQ(h.class_stats(engine_heap::class_of(n)).committed_bytes, 0u);
    EXPECT_TRUE(h.check());
}

// Threads churn 8-64 KiB blocks and walk their runs while a purge thread purges what they hand it
// (under TSan too): no live byte changes, and every handed byte is purged once it stops.
TEST(EngineDecay, HandedBlocksGoHomeWhileTheirOwnerThreadsChurn) {
    engine_heap h(decay_options(20));
    ASSERT_TRUE(h.start_purge_thread(std::chrono::milliseconds{1}));
    std::atomic<bool> bad{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(100 + t);
            std::vector<filled_block> live;
            for (int step = 0; step < 3000; ++step) {
                if (!churn_step(h, rng, live, step, 150, 40, 300)) bad = true;
                if (step == 2000 && !free_checked(h, live, 10)) bad = true; // a shrink
            }
            if (!free_checked(h, live)) bad = true;
        });
    for (std::thread& t : threads)
        t.join();
    h.stop_purge_thread();
    EXPECT_FALSE(bad.load());
    const strata::engine_purge_stats s = h.purge_stats();
    EXPECT_GT(s.handed_bytes, 0u);
    EXPECT_GE(s.purged_bytes, s.handed_bytes);
    h.trim(); // the exited threads' runs: every block came home, so every run is empty and goes
    for (unsigned c = engine_heap::class_of(8192); c <= engine_heap::class_of(64 * 1024); ++c)
        EXPECT_EQ(h.class_stats(c).committed_bytes, 0u) << c;
    EXPECT_TRUE(h.check());
}

// A run whose free blocks a walk handed off does not empty at its owner's last free (they count as
// out); the owner's next walk collects them once the thread freed them back, and the run is then
// relisted as an emptied run is: the heap commits what it would without a purge thread.
TEST(EngineDecay, RunsEmptiedByHandedBlocksComingHomeAreGivenUpAsWithoutAPurgeThread) {
    constexpr std::size_t n = 16 * 1024;
    const auto committed_after = [&](bool thread) {
        engine_heap h(decay_options(100));
        if (thread) {
            EXPECT_TRUE(h.start_purge_thread(std::chrono::hours{1}));
        }
        const std::vector<char*> blocks = every_other_freed(h, n, 1280);
        (void)h.end_frame(std::chrono::seconds{1}); // a walk sees the blocks free
        advance(steady_wait_ms);
        (void)h.end_frame(std::chrono::seconds{1}); // handed off, or purged here
        for (std::size_t i = 1; i < blocks.size(); i += 2)
            h.deallocate(blocks[i]);
        h.stop_purge_thread();                      // the handed blocks go home
        (void)h.end_frame(std::chrono::seconds{1}); // a walk collects them
        EXPECT_TRUE(h.check());
        return h.class_stats(engine_heap::class_of(n)).committed_bytes;
    };
    const std::size_t without = committed_after(false);
    EXPECT_EQ(committed_after(true), without);
    EXPECT_LT(without, 1280 * n / 4);
}

// Random sizes of 8-64 KiB, random frees and frames: no live byte ever changes.
TEST(EngineDecay, RunBlockPurgeKeepsEveryLiveByte) {
    engine_heap h(decay_options(20));
    std::mt19937_64 rng(11);
    std::vector<filled_block> live;
    for (int step = 0; step < 4000; ++step)
        ASSERT_TRUE(churn_step(h, rng, live, step, 200, 50, 500)) << "step " << step;
    EXPECT_TRUE(free_checked(h, live));
    EXPECT_GT(h.purge_stats().purged_bytes, 0u);
    EXPECT_TRUE(h.check());
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
using strata::test::minor_faults;

// Big buffers of 2-25 MiB, written whole, two alive at a time: once the heap has seen the sizes,
// they are served from warm memory (medium arenas and the span bins), so nothing faults.
TEST(EngineDecay, BigBufferChurnDoesNotFaultOnceWarm) {
    engine_heap h(decay_options(500)); // the fake clock stands still: nothing decays
    std::mt19937_64 rng(5);
    char* live[2] = {};
    long faults = 0;
    for (int round = 0; round < 3; ++round) {
        const long f0 = minor_faults();
        for (int i = 0; i < 60; ++i) {
            char*& slot = live[rng() % 2];
            h.deallocate(slot);
            const std::size_t n = 2 * mib + rng() % (23 * mib);
            slot = static_cast<char*>(h.allocate(n));
            ASSERT_NE(slot, nullptr);
            for (std::size_t at = 0; at < n; at += page)
                slot[at] = 1;
        }
        faults = minor_faults() - f0;
    }
    // The last round: a 25 MiB block is 6,400 pages; a cold one would fault that many.
    EXPECT_LE(faults, 64) << "faults in the last round";
    h.deallocate(live[0]);
    h.deallocate(live[1]);
    EXPECT_TRUE(h.check());
}
#endif

} // namespace
