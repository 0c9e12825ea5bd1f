// engine_heap under threads: cross-thread frees (and the freeing thread's stash of them),
// producer/consumer, thread exit handing caches back (runs adopted by other threads), a random
// shared-pointer stress.
// TSAN_STAGE: the CI tsan stage runs the *Thread* tests of this file.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <iterator>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "strata/engine/engine_heap.hpp"

#include "support/engine_stash.hpp"

namespace {

using strata::engine_heap;

strata::engine_options options() {
    strata::engine_options o;
    o.reserve_bytes = std::size_t{2} << 30;
    return o;
}

TEST(EngineHeapThreads, CrossThreadFreesReturnToTheOwner) {
    engine_heap h(options());
    std::vector<void*> blocks;
    for (int i = 0; i < 20000; ++i) {
        blocks.push_back(h.allocate(16 + static_cast<std::size_t>(i % 300)));
        std::memset(blocks.back(), 1, 16);
    }
    std::thread([&] {
        for (void* p : blocks)
            h.deallocate(p);
    }).join();
    // The owner finds the frees when its runs run dry; reallocating the same amount must not need
    // much new memory.
    const std::size_t before = h.class_stats(0).committed_bytes + h.class_stats(10).committed_bytes;
    blocks.clear();
    for (int i = 0; i < 20000; ++i)
        blocks.push_back(h.allocate(16 + static_cast<std::size_t>(i % 300)));
    EXPECT_LE(h.class_stats(0).committed_bytes + h.class_stats(10).committed_bytes, before + 4 * 65536);
    for (void* p : blocks)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// Blocks of `blocks` found in `got` (by address).
std::size_t overlap(const std::vector<void*>& blocks, const std::vector<void*>& got) {
    std::vector<void*> a = blocks, b = got;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::vector<void*> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    return both.size();
}

// Allocates `n` blocks of `size`, counts those that are blocks of `blocks`, frees them again.
std::size_t reused(engine_heap& h, const std::vector<void*>& blocks, int n, std::size_t size) {
    std::vector<void*> got;
    for (int i = 0; i < n; ++i)
        got.push_back(h.allocate(size));
    const std::size_t found = overlap(blocks, got);
    for (void* p : got)
        h.deallocate(p);
    return found;
}

// The owner (the calling thread) gets every block of `blocks` back within one run's worth of
// allocations of `size`, and the class still has one run: the blocks came home.
void expect_all_came_home(engine_heap& h, const std::vector<void*>& blocks, std::size_t size) {
    const unsigned c = strata::engine_detail::class_of(size);
    std::vector<void*> again;
    for (std::size_t i = 0; i < strata::engine_detail::granule / size; ++i)
        again.push_back(h.allocate(size));
    EXPECT_EQ(overlap(blocks, again), blocks.size());
    EXPECT_EQ(h.class_stats(c).committed_bytes, strata::engine_detail::granule);
    for (void* p : again)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

using strata::test::turn_stash_on;

// Another thread that allocates `count` blocks of `size` and stays alive until this object is
// destroyed: its run keeps its owner, so the calling thread never adopts it.
class live_owner {
public:
    live_owner(engine_heap& h, std::size_t size, std::size_t count = 1)
        : thread_([this, &h, size, count] {
              for (std::size_t i = 0; i < count; ++i)
                  blocks_.push_back(h.allocate(size));
              allocated_.set_value();
              finished_.get_future().wait();
          }) {
        allocated_.get_future().wait();
    }
    ~live_owner() {
        finished_.set_value();
        thread_.join();
    }
    live_owner(const live_owner&) = delete;
    live_owner& operator=(const live_owner&) = delete;
    [[nodiscard]] void* block() const { return blocks_.front(); }
    [[nodiscard]] const std::vector<void*>& blocks() const { return blocks_; }

private:
    std::vector<void*> blocks_;
    std::promise<void> allocated_, finished_;
    std::thread thread_; // last: it starts once the promises exist
};

// A thread that frees blocks of another thread's runs keeps them (up to stash_bytes per class)
// and its next allocations of that class take them back, newest first; at its exit the blocks it
// still holds go to their runs, so the owner reuses them.
TEST(EngineHeapThreads, RemoteFreesStayWithTheFreeingThread) {
    strata::engine_options o = options();
    o.stash_bytes = 1024; // 16 blocks of 64 bytes
    o.depot_bytes = 0;    // the stash alone: what a full one does not keep goes home
    engine_heap h(o);
    std::vector<void*> blocks;
    for (int i = 0; i < 100; ++i)
        blocks.push_back(h.allocate(64));
    std::vector<void*> got;
    std::thread([&] {
        void* own = h.allocate(64); // this thread's own run, so it has a cache
        turn_stash_on(h);
        for (void* p : blocks)
            h.deallocate(p);
        EXPECT_TRUE(h.check()); // 16 blocks stashed
        for (int i = 0; i < 100; ++i)
            got.push_back(h.allocate(64));
        EXPECT_TRUE(h.check());
        // The first 16 frees were stashed; the other 84 went to the owner's runs.
        EXPECT_EQ(overlap(blocks, got), 16u);
        EXPECT_TRUE(std::equal(got.begin(), got.begin() + 16, blocks.rbegin() + 84));
        for (void* p : got)
            h.deallocate(p); // the 16 remote ones fill the stash again, the 84 own go to their run
        h.deallocate(own);
    }).join();
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
    expect_all_came_home(h, blocks, 64);
}

// The free path of slot_use::first_for_life (the malloc shim's) stashes another thread's blocks as
// the checked path does: the same blocks come back, newest first, and the rest go home.
TEST(EngineHeapThreads, FirstForLifeFreesStashLikeTheCheckedPath) {
    using slot_use = engine_heap::slot_use;
    strata::engine_options o = options();
    o.stash_bytes = 1024; // 16 blocks of 64 bytes
    o.depot_bytes = 0;    // the stash alone: what a full one does not keep goes home
    o.first_slot = true;
    engine_heap h(o);
    ASSERT_EQ(h.slot_index(), 0u);
    std::vector<void*> warm, blocks; // this thread's: it stays alive, so nobody adopts their runs
    for (int i = 0; i < 512; ++i)
        warm.push_back(h.allocate(16));
    for (int i = 0; i < 40; ++i)
        blocks.push_back(h.allocate(64));
    std::vector<void*> got;
    std::thread([&] {
        void* own = h.allocate(64); // a run of its own, so it has a cache
        for (void* p : warm)        // remote frees only: the stash turns on
            h.deallocate<slot_use::first_for_life>(p);
        for (void* p : blocks)
            h.deallocate<slot_use::first_for_life>(p);
        EXPECT_TRUE(h.check());
        while (got.size() < 16)
            got.push_back(h.allocate_cached<slot_use::first_for_life>(64));
        EXPECT_TRUE(std::equal(got.begin(), got.end(), blocks.rbegin() + 24)) << "the stash, newest first";
        for (void* p : got)
            h.deallocate<slot_use::first_for_life>(p);
        h.deallocate<slot_use::first_for_life>(own);
        EXPECT_TRUE(h.check());
    }).join();
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
    expect_all_came_home(h, blocks, 64);
}

// A class's stash holds stash_bytes or 16 blocks, whichever is more; classes of 8 KiB and more
// are not stashed.
TEST(EngineHeapThreads, StashHoldsSixteenBlocksOfBigClassesAndNoneFrom8KiB) {
    strata::engine_options o = options();
    o.stash_bytes = std::size_t{16} << 10; // 4 blocks of 4 KiB, so 16
    o.depot_bytes = 0;                     // the stash alone: what a full one does not keep goes home
    engine_heap h(o);
    for (const std::size_t size : {std::size_t{4096}, std::size_t{8192}}) {
        std::vector<void*> blocks;
        for (int i = 0; i < 40; ++i)
            blocks.push_back(h.allocate(size));
        std::size_t kept = 0;
        std::thread([&] {
            void* own = h.allocate(size); // a run of the class: only such classes are stashed
            turn_stash_on(h);
            for (void* p : blocks)
                h.deallocate(p);
            EXPECT_TRUE(h.check());
            kept = reused(h, blocks, 40, size);
            h.deallocate(own);
        }).join();
        EXPECT_EQ(kept, size == 4096 ? 16u : 0u) << size;
        EXPECT_TRUE(h.check());
    }
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// A thread that only frees (a consumer) gets a cache at its 16th free, and counts its frees in its
// own record from then on. Its stash is on (every free is remote) but takes no block of a class the
// thread does not allocate: those go home while the thread lives on. A class it does allocate is
// stashed, and its allocations take those blocks back.
TEST(EngineHeapThreads, AConsumerStashesOnlyTheClassesItAllocates) {
    engine_heap h(options());
    std::vector<void*> blocks, small;
    for (int i = 0; i < 1000; ++i) // past the stash window: the consumer's stash turns on
        blocks.push_back(h.allocate(64));
    for (int i = 0; i < 40; ++i)
        small.push_back(h.allocate(32));
    std::promise<void> freed, done;
    std::size_t before = 1, counted = 0, taken_back = 0;
    std::thread consumer([&] {
        for (std::size_t i = 0; i < blocks.size(); ++i) {
            if (i == 15) before = h.thread_stats().frees; // still no cache
            h.deallocate(blocks[i]);
        }
        counted = h.thread_stats().frees;
        void* own = h.allocate(32); // a run of the class: from now on the class is stashed
        for (void* p : small)
            h.deallocate(p);
        taken_back = reused(h, small, 40, 32);
        h.deallocate(own);
        freed.set_value();
        done.get_future().wait();
    });
    freed.get_future().wait();
    EXPECT_EQ(before, 0u) << "a thread's first 15 frees make no cache";
    EXPECT_EQ(counted, blocks.size() - 15) << "the consumer counts its frees in its own record";
    EXPECT_EQ(taken_back, small.size()) << "the class it allocates was stashed";
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
    expect_all_came_home(h, blocks, 64); // none stayed on the consumer's stash
    done.set_value();
    consumer.join();
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

// A run that other threads' frees bring back whole hands its blocks out in address order again, not
// in the (reversed, shuffled) order of those frees; check() sees the length the list word carries.
TEST(EngineHeapThreads, ARunOtherThreadsEmptyHandsOutItsBlocksInAddressOrder) {
    strata::engine_options o = options();
    o.stash_bytes = 0;
    engine_heap h(o);
    const std::size_t n = strata::engine_detail::granule / 64; // one run of 64-byte blocks
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < n; ++i)
        blocks.push_back(h.allocate(64));
    std::vector<void*> shuffled = blocks;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
    std::thread([&] {
        for (std::size_t i = 0; i + 1 < n; ++i)
            h.deallocate(shuffled[i]);
        EXPECT_TRUE(h.check()); // n - 1 blocks on the run's list, one still out
        h.deallocate(shuffled.back());
    }).join();
    EXPECT_TRUE(h.check());
    std::vector<void*> again;
    for (std::size_t i = 0; i < n; ++i)
        again.push_back(h.allocate(64));
    std::sort(blocks.begin(), blocks.end());
    EXPECT_EQ(again, blocks) << "the run's blocks, lowest address first";
    for (void* p : again)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

TEST(EngineHeapThreads, StashOffSendsEveryRemoteFreeHome) {
    strata::engine_options o = options();
    o.stash_bytes = 0;
    engine_heap h(o);
    std::vector<void*> blocks;
    for (int i = 0; i < 100; ++i)
        blocks.push_back(h.allocate(64));
    std::thread([&] {
        void* own = h.allocate(64);
        turn_stash_on(h);
        for (void* p : blocks)
            h.deallocate(p);
        EXPECT_EQ(reused(h, blocks, 100, 64), 0u);
        h.deallocate(own);
    }).join();
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
    expect_all_came_home(h, blocks, 64);
}

// A thread whose remote frees are under half of its frees keeps its stash off (on, it would carry
// more and more blocks of the other thread's runs); once they pass it, the stash turns on.
TEST(EngineHeapThreads, StashFollowsTheShareOfRemoteFrees) {
    engine_heap h(options());
    std::vector<void*> mine; // first, so that this thread does not adopt the other's runs
    for (int i = 0; i < 2000; ++i)
        mine.push_back(h.allocate(64));
    std::vector<void*> theirs;
    std::thread([&] {
        for (int i = 0; i < 2000; ++i)
            theirs.push_back(h.allocate(64));
    }).join();
    // 1 remote free in 5: the stash stays off, and the next allocations are not those blocks.
    for (int i = 0; i < 1000; ++i) {
        h.deallocate(theirs[static_cast<std::size_t>(i)]);
        for (int k = 0; k < 4; ++k)
            h.deallocate(h.allocate(64));
    }
    EXPECT_EQ(reused(h, theirs, 16, 64), 0u);
    // Only remote frees now: after the window the stash is on and serves the next allocations.
    for (std::size_t i = 1000; i < 2000; ++i)
        h.deallocate(theirs[i]);
    EXPECT_EQ(reused(h, theirs, 16, 64), 16u);
    EXPECT_TRUE(h.check());
    for (void* p : mine)
        h.deallocate(p);
    h.trim();
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// While the stash serves a class, the thread's own current run waits aside; emptying it then by
// local frees (the stash is full, so they go to the run) must not hand it back: it is still the run
// allocation returns to.
TEST(EngineHeapThreads, ParkedRunOutlivesItsEmptying) {
    strata::engine_options o = options();
    o.stash_bytes = 16 * 48; // a cap of 16 blocks
    o.depot_bytes = 0;       // the stash alone: what a full one does not keep goes home
    engine_heap h(o);
    live_owner other(h, 48, 16);
    // A first run filled and emptied again: it is the class's spare, so the next run to empty
    // would be handed back.
    const std::size_t per_run = strata::engine_detail::granule / 48;
    std::vector<void*> first;
    for (std::size_t i = 0; i < per_run; ++i)
        first.push_back(h.allocate(48));
    std::vector<void*> mine;
    for (int i = 0; i < 10; ++i)
        mine.push_back(h.allocate(48));
    for (void* p : first)
        h.deallocate(p);
    turn_stash_on(h);
    for (void* p : other.blocks())
        h.deallocate(p); // stashed (16, the cap): the stash is this class's current run now
    for (void* p : mine)
        h.deallocate(p); // the stash is full: to their run, which empties while parked
    EXPECT_TRUE(h.check());
    std::vector<void*> next;
    for (int i = 0; i < 16; ++i)
        next.push_back(h.allocate(48));
    EXPECT_TRUE(std::equal(next.begin(), next.end(), other.blocks().rbegin())) << "the stash, newest first";
    for (int i = 0; i < 10; ++i) {
        next.push_back(h.allocate(48));
        std::memset(next.back(), 0x5a, 48);
    }
    EXPECT_EQ(overlap(mine, next), 10u) << "the parked run serves again";
    // A new run of a class nothing here used before must not be that run (were it handed back,
    // it would be reused).
    std::vector<void*> small;
    for (int i = 0; i < 100; ++i) {
        small.push_back(h.allocate(256));
        std::memset(small.back(), 0xa5, 256);
    }
    for (std::size_t i = 16; i < next.size(); ++i)
        EXPECT_EQ(*static_cast<unsigned char*>(next[i]), 0x5a);
    EXPECT_TRUE(h.check());
    for (void* p : small)
        h.deallocate(p);
    for (void* p : next)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// A stash that runs dry while the thread's frees are mostly remote takes the parked run's whole free
// list, even past its cap, and stays current: allocations pop the thread's own blocks, newest first,
// and while the stash holds more than its cap a remote free goes to its run instead.
TEST(EngineHeapThreads, DryStashTakesTheParkedRunsWholeList) {
    strata::engine_options o = options();
    o.stash_bytes = 1024; // a cap of 16 blocks of 64 bytes
    o.depot_bytes = 0;    // the stash alone: what a full one does not keep goes home
    engine_heap h(o);
    live_owner first(h, 64);
    live_owner second(h, 64);
    void* const foreign = first.block();
    std::vector<void*> mine;
    for (int i = 0; i < 32; ++i)
        mine.push_back(h.allocate(64)); // one carve of 2 KiB: the run's list is empty
    for (void* p : mine)
        h.deallocate(p); // the stash is off: the run's free list, mine[31] first
    turn_stash_on(h);
    h.deallocate(foreign); // stashed: the stash is current, the run parked
    EXPECT_EQ(h.allocate(64), foreign);
    void* a = h.allocate(64); // the stash is dry: all 32 move over, the first is returned
    EXPECT_EQ(a, mine[31]);
    EXPECT_TRUE(h.check());
    h.deallocate(second.block()); // 31 stashed, over the cap: it goes to its run
    h.deallocate(a);              // so does the owner's: to the parked run
    std::vector<void*> next;
    for (int i = 0; i < 31; ++i)
        next.push_back(h.allocate(64));
    EXPECT_TRUE(std::equal(next.begin(), next.end(), mine.rbegin() + 1)) << "the stash serves its 31";
    next.push_back(h.allocate(64)); // dry again: the next refill takes the run's list, `a`
    EXPECT_EQ(next.back(), a);
    EXPECT_TRUE(h.check());
    for (void* p : next)
        h.deallocate(p);
    h.deallocate(foreign);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// A parked run with a short free list gives it all: the stash serves every block, newest first, and
// the run is current again only once both are dry.
TEST(EngineHeapThreads, DryStashTakesAShortListWhole) {
    strata::engine_options o = options();
    o.stash_bytes = std::size_t{16} << 10; // 32 blocks of 512 bytes
    engine_heap h(o);
    live_owner other(h, 512);
    void* const foreign = other.block();
    std::vector<void*> mine;
    for (int i = 0; i < 8; ++i)
        mine.push_back(h.allocate(512)); // 8 blocks carved, 2 KiB at a time: the list is empty
    for (void* p : mine)
        h.deallocate(p); // the stash is off: the run's list, the 8, mine[7] first
    turn_stash_on(h);
    h.deallocate(foreign);
    EXPECT_EQ(h.allocate(512), foreign);
    std::vector<void*> next;
    for (int i = 0; i < 8; ++i)
        next.push_back(h.allocate(512));
    EXPECT_TRUE(std::equal(next.begin(), next.end(), mine.rbegin()));
    EXPECT_TRUE(h.check());
    void* fresh = h.allocate(512); // both dry: the run carves its next block
    EXPECT_EQ(std::count(mine.begin(), mine.end(), fresh), 0);
    EXPECT_TRUE(h.check());
    for (void* p : next)
        h.deallocate(p);
    h.deallocate(fresh);
    h.deallocate(foreign);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// While the stash is on, the thread's own blocks go there too, on top of other threads' blocks:
// allocations take them back newest first, whoever's run they are in. Past the cap, own blocks go
// to their run, and the run serves once the stash is dry.
TEST(EngineHeapThreads, OwnFreesShareTheStashWhileItIsOn) {
    strata::engine_options o = options();
    o.stash_bytes = 1024; // a cap of 16 blocks of 64 bytes
    o.depot_bytes = 0;    // the stash alone: what a full one does not keep goes home
    engine_heap h(o);
    live_owner other(h, 64);
    std::vector<void*> mine;
    for (int i = 0; i < 20; ++i)
        mine.push_back(h.allocate(64));
    turn_stash_on(h);
    h.deallocate(other.block());
    for (void* p : mine)
        h.deallocate(p); // 15 stashed over the other thread's block, the last 5 to their run
    EXPECT_TRUE(h.check());
    std::vector<void*> got;
    for (int i = 0; i < 16; ++i)
        got.push_back(h.allocate(64));
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + 15, mine.rbegin() + 5)) << "own blocks, newest first";
    EXPECT_EQ(got[15], other.block());
    got.push_back(h.allocate(64)); // the stash is dry: it takes the run's list, mine[19] first
    EXPECT_EQ(got.back(), mine[19]);
    EXPECT_TRUE(h.check());
    for (void* p : got)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u); // a stashed block counts as freed
}

// A thread whose frees stop being remote turns its stash off after own_window (1,024) frees of its
// own blocks: its frees then go to their runs again, under the blocks still stashed.
TEST(EngineHeapThreads, StashTurnsOffOnceRemoteFreesStop) {
    engine_heap h(options());
    live_owner other(h, 64);
    void* const x = h.allocate(64);
    void* const y = h.allocate(64);
    turn_stash_on(h);
    h.deallocate(other.block());
    h.deallocate(y); // on: stashed over the other thread's block
    EXPECT_EQ(h.allocate(64), y);
    for (int i = 0; i < 1024; ++i)
        h.deallocate(h.allocate(32)); // own frees only, of another class
    h.deallocate(x);                  // off: to its run, under the stash
    EXPECT_EQ(h.allocate(64), other.block()) << "the stash still serves first";
    EXPECT_EQ(h.allocate(64), x) << "then the run";
    EXPECT_TRUE(h.check());
    h.deallocate(x);
    h.deallocate(y);
    h.deallocate(other.block());
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// The stash's blocks of the thread's own runs go straight back to those runs when it is handed
// back (trim, flush_thread_cache): the thread keeps allocating from them, and a flushed cache
// leaves no run behind.
TEST(EngineHeapThreads, OwnStashedBlocksGoBackToTheirRuns) {
    engine_heap h(options());
    const unsigned c = strata::engine_detail::class_of(48);
    std::vector<void*> mine;
    for (int i = 0; i < 100; ++i)
        mine.push_back(h.allocate(48));
    turn_stash_on(h);
    for (void* p : mine)
        h.deallocate(p); // all stashed
    h.trim();
    EXPECT_TRUE(h.check());
    std::vector<void*> again;
    for (int i = 0; i < 100; ++i)
        again.push_back(h.allocate(48));
    EXPECT_EQ(overlap(mine, again), 100u);
    EXPECT_EQ(again.front(), mine.front()) << "from the run's list (the stash would give mine[99])";
    EXPECT_TRUE(h.check());
    for (void* p : again)
        h.deallocate(p);
    h.flush_thread_cache();
    EXPECT_EQ(h.class_stats(c).committed_bytes, 0u);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

// trim() and flush_thread_cache() hand the calling thread's stash back: the owner's runs empty and
// trim returns them.
TEST(EngineHeapThreads, TrimAndFlushHandTheStashBack) {
    for (const bool flush : {false, true}) {
        engine_heap h(options());
        const unsigned c = strata::engine_detail::class_of(32);
        std::vector<void*> blocks;
        std::thread([&] {
            for (int i = 0; i < 100; ++i)
                blocks.push_back(h.allocate(32));
        }).join();              // its run is abandoned with 100 live blocks
        (void)h.allocate(4000); // the main thread gets a cache
        turn_stash_on(h);
        for (void* p : blocks)
            h.deallocate(p); // all 100 stashed (64 KiB holds 2,048 blocks of 32 bytes)
        EXPECT_EQ(h.stats().live_allocations, 1u);
        EXPECT_GT(h.class_stats(c).committed_bytes, 0u);
        if (flush) h.flush_thread_cache();
        h.trim();
        EXPECT_EQ(h.class_stats(c).committed_bytes, 0u);
        EXPECT_TRUE(h.check());
    }
}

// Options for the depot tests: stashes of 16 blocks of 64 bytes (batches of 8), a depot of
// `depot_bytes` a class, and no maintenance step but end_frame's (a step sends batches home).
strata::engine_options depot_options(std::size_t depot_bytes = std::size_t{256} << 10) {
    strata::engine_options o = options();
    o.stash_bytes = 1024;
    o.depot_bytes = depot_bytes;
    o.decay_ms = 1u << 20;
    return o;
}

// `n` blocks of `size` from `h`.
std::vector<void*> blocks_of(engine_heap& h, std::size_t n, std::size_t size) {
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < n; ++i)
        blocks.push_back(h.allocate(size));
    return blocks;
}

// A full stash hands half of itself, its newest blocks with the one just freed on top, to the depot
// as one batch (stash_bytes 1024: a cap of 16 blocks of 64 bytes, batches of 8). Another thread whose
// stash runs dry takes the newest batch and hands its blocks out in order; trim() sends the rest to
// their runs, whose owner gets every block back. (No step runs meanwhile: it would send an idle
// depot home.)
TEST(EngineHeapThreads, AFullStashHandsABatchToTheDepotForADryOne) {
    engine_heap h(depot_options());
    const unsigned c = strata::engine_detail::class_of(64);
    const std::vector<void*> blocks = blocks_of(h, 40, 64);
    // Frees 17, 25 and 33 find the stash full: 3 batches; the stash keeps the first 9 freed and the
    // last 7. The thread waits before it exits, which would hand its stash back.
    std::promise<void> freed, done;
    std::thread freer([&] {
        void* own = h.allocate(64); // a run of the class: the class is stashed
        turn_stash_on(h);
        for (void* p : blocks)
            h.deallocate(p);
        EXPECT_TRUE(h.check());
        freed.set_value();
        done.get_future().wait();
        h.deallocate(own);
    });
    freed.get_future().wait();
    EXPECT_EQ(h.class_stats(c).depot_blocks, 24u);
    EXPECT_TRUE(h.check());
    std::vector<void*> taken;
    std::thread([&] {
        void* own = h.allocate(64);
        turn_stash_on(h);
        h.deallocate(own); // stashed: the stash is current, with one block
        EXPECT_EQ(h.allocate(64), own);
        for (int i = 0; i < 8; ++i) // the stash is dry: the newest batch
            taken.push_back(h.allocate(64));
        EXPECT_TRUE(h.check());
        for (void* p : taken)
            h.deallocate(p);
        h.deallocate(own);
        h.flush_thread_cache();
    }).join();
    EXPECT_TRUE(std::equal(taken.begin(), taken.end(), blocks.rbegin() + 7))
        << "free 33 first, then frees 32 down to 26";
    EXPECT_EQ(h.class_stats(c).depot_blocks, 16u);
    done.set_value();
    freer.join();
    h.trim();
    EXPECT_EQ(h.class_stats(c).depot_blocks, 0u);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
    expect_all_came_home(h, blocks, 64);
}

// A maintenance step sends home, oldest first, the batches a depot held all through the interval
// since the step before (its low-water mark); batches put or taken meanwhile wait for a later step.
TEST(EngineHeapThreads, ADepotSendsHomeWhatNoThreadNeededSinceTheLastStep) {
    engine_heap h(depot_options());
    const unsigned c = strata::engine_detail::class_of(64);
    const std::vector<void*> blocks = blocks_of(h, 56, 64);
    const auto in_depot = [&] { return h.class_stats(c).depot_blocks; };
    std::thread([&] {
        void* own = h.allocate(64);
        turn_stash_on(h);
        for (int i = 0; i < 40; ++i) // frees 17, 25 and 33 make batches
            h.deallocate(blocks[static_cast<std::size_t>(i)]);
        EXPECT_EQ(in_depot(), 24u);
        (void)h.end_frame(); // nothing was there all through: all three stay
        EXPECT_EQ(in_depot(), 24u);
        for (int i = 40; i < 56; ++i) // frees 41 and 49 make batches
            h.deallocate(blocks[static_cast<std::size_t>(i)]);
        EXPECT_EQ(in_depot(), 40u);
        std::vector<void*> got;
        for (int i = 0; i < 17; ++i) // the stash's 16, then the newest batch (free 49's)
            got.push_back(h.allocate(64));
        EXPECT_EQ(got.back(), blocks[48]);
        EXPECT_EQ(in_depot(), 32u);
        (void)h.end_frame(); // the three batches held since the last step go home
        EXPECT_EQ(in_depot(), 8u);
        EXPECT_TRUE(h.check());
        for (int i = 0; i < 8; ++i) // the rest of free 49's batch, then free 41's
            got.push_back(h.allocate(64));
        EXPECT_EQ(got.back(), blocks[40]);
        EXPECT_EQ(in_depot(), 0u);
        EXPECT_EQ(h.class_stats(c).depot_batches, 5u);
        for (void* p : got)
            h.deallocate(p);
        h.deallocate(own);
        h.flush_thread_cache();
    }).join();
    h.trim();
    EXPECT_EQ(in_depot(), 0u);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

// A depot holds depot_bytes of a class, and at least one batch; a free that finds the stash full
// and the depot full goes home. With the depot off, every such free does.
TEST(EngineHeapThreads, AFullDepotSendsTheFreeHome) {
    for (const std::size_t depot : {std::size_t{1}, std::size_t{0}}) { // 1: one batch
        engine_heap h(depot_options(depot));
        const unsigned c = strata::engine_detail::class_of(64);
        const std::vector<void*> blocks = blocks_of(h, 40, 64);
        std::thread([&] {
            void* own = h.allocate(64);
            turn_stash_on(h);
            for (void* p : blocks) // free 17 makes the one batch; frees 25-40 find both full
                h.deallocate(p);
            EXPECT_EQ(h.class_stats(c).depot_blocks, depot != 0 ? 8u : 0u);
            EXPECT_EQ(h.class_stats(c).depot_batches, depot != 0 ? 1u : 0u);
            EXPECT_TRUE(h.check());
            h.deallocate(own);
            h.flush_thread_cache();
        }).join();
        h.trim();
        EXPECT_EQ(h.stats().live_allocations, 0u);
        EXPECT_TRUE(h.check());
        expect_all_came_home(h, blocks, 64);
    }
}

// Big medium blocks churned by two threads: purged before the free outside the medium lock
// (cap 0), by the cap's purges under it (a 4 MiB cap), or decaying after 1 ms under a purge thread
// that steps every millisecond. Contents stay each thread's own throughout: a byte on every page of
// every live block, a pattern per block, so a purge that reached a live page (it would read zero)
// or a block handed to both threads fails.
TEST(EngineHeapThreads, BigMediumChurnPurgesSafely) {
    for (const int mode : {0, 1, 2}) {
        const std::size_t budget = mode == 0 ? 0 : std::size_t{4} << 20;
        strata::engine_options o = options();
        o.medium_retain_bytes = budget;
        o.purge_medium_bytes = std::size_t{256} << 10;
        if (mode == 2) o.decay_ms = 1;
        engine_heap h(o);
        if (mode == 2) {
            ASSERT_TRUE(h.start_purge_thread(std::chrono::milliseconds{1}));
        }
        std::atomic<bool> ok{true};
        auto churn = [&](unsigned seed) {
            std::mt19937 r(seed);
            struct block {
                unsigned char* p = nullptr;
                std::size_t n = 0;
                unsigned char tag = 0;
            };
            std::vector<block> mine(4);
            const auto byte_at = [&](const block& b, std::size_t page) {
                return static_cast<unsigned char>(b.tag + page * 7 + seed * 101);
            };
            const auto intact = [&](const block& b) {
                for (std::size_t at = 0; at < b.n - 1; at += 4096)
                    if (b.p[at] != byte_at(b, at / 4096)) return false;
                return b.p[b.n - 1] == static_cast<unsigned char>(~b.tag);
            };
            for (int i = 0; i < 200; ++i) {
                block& b = mine[r() % mine.size()];
                if (b.p != nullptr) {
                    if (!intact(b)) ok = false;
                    h.deallocate(b.p);
                }
                b.n = (std::size_t{256} << 10) + r() % (std::size_t{768} << 10);
                b.tag = static_cast<unsigned char>(i + 1);
                b.p = static_cast<unsigned char*>(h.allocate(b.n));
                if (b.p == nullptr) {
                    ok = false;
                    return;
                }
                for (std::size_t at = 0; at < b.n - 1; at += 4096)
                    b.p[at] = byte_at(b, at / 4096);
                b.p[b.n - 1] = static_cast<unsigned char>(~b.tag);
                // Every live block of this thread, not only the one just written: the other
                // thread's frees and sweeps ran since they were written.
                for (const block& other : mine)
                    if (other.p != nullptr && !intact(other)) ok = false;
            }
            for (block& b : mine)
                h.deallocate(b.p);
        };
        std::thread a(churn, 1u), b(churn, 2u);
        a.join();
        b.join();
        h.stop_purge_thread();
        EXPECT_TRUE(ok) << "mode " << mode;
        h.trim();
        EXPECT_TRUE(h.check());
        EXPECT_EQ(h.stats().live_allocations, 0u);
    }
}

TEST(EngineHeapThreads, ProducerConsumer) {
    engine_heap h(options());
    constexpr int count = 100000;
    std::mutex m;
    std::vector<void*> queue;
    std::atomic<bool> done{false};
    std::thread producer([&] {
        std::mt19937 rng(1);
        std::vector<void*> batch;
        for (int i = 0; i < count; ++i) {
            const std::size_t size = rng() % 4 == 0 ? rng() % 100000 : rng() % 256;
            void* p = h.allocate(size + 8);
            ASSERT_NE(p, nullptr);
            std::memcpy(p, &i, sizeof i);
            batch.push_back(p);
            if (batch.size() == 64) {
                std::lock_guard<std::mutex> g(m);
                queue.insert(queue.end(), batch.begin(), batch.end());
                batch.clear();
            }
        }
        std::lock_guard<std::mutex> g(m);
        queue.insert(queue.end(), batch.begin(), batch.end());
        done = true;
    });
    std::thread consumer([&] {
        std::size_t freed = 0;
        std::vector<void*> take;
        while (freed < count) {
            {
                std::lock_guard<std::mutex> g(m);
                take.swap(queue);
            }
            for (void* p : take)
                h.deallocate(p);
            freed += take.size();
            take.clear();
            if (take.empty()) std::this_thread::yield();
        }
    });
    producer.join();
    consumer.join();
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
}

TEST(EngineHeapThreads, ThreadExitHandsRunsToOthers) {
    engine_heap h(options());
    std::vector<void*> survivors;
    std::mutex m;
    std::size_t committed_early = 0;
    for (int round = 0; round < 8; ++round) {
        if (round == 2) committed_early = h.committed_bytes();
        std::vector<std::thread> threads;
        for (int t = 0; t < 3; ++t) {
            threads.emplace_back([&, t] {
                std::vector<void*> mine;
                for (int i = 0; i < 3000; ++i)
                    mine.push_back(h.allocate(static_cast<std::size_t>(32 + (i * 7 + t) % 2000)));
                (void)h.frame_arena().allocate(1000); // a frame arena is destroyed at exit too
                // Half die with the thread's cache, half outlive it.
                std::lock_guard<std::mutex> g(m);
                for (std::size_t i = 0; i < mine.size(); ++i) {
                    if (i % 2 == 0)
                        h.deallocate(mine[i]);
                    else
                        survivors.push_back(mine[i]);
                }
            });
        }
        for (auto& th : threads)
            th.join();
        // Free half of the survivors from this thread: into abandoned or adopted runs.
        for (std::size_t i = 0; i < survivors.size() / 2; ++i)
            h.deallocate(survivors[i]);
        survivors.erase(survivors.begin(), survivors.begin() + static_cast<long>(survivors.size() / 2));
        ASSERT_TRUE(h.check()) << round;
    }
    const std::size_t committed = h.committed_bytes();
    for (void* p : survivors)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.stats().live_allocations, 0u);
    // Rounds reuse adopted runs: the heap did not grow by a fresh set of runs per thread.
    EXPECT_LE(committed, committed_early + (std::size_t{16} << 20));
}

// A pthread key destructor that runs after the heap's own (its key was made later) and allocates
// gets no new cache: in pthread's last round of destructors nothing would hand one back, and each
// thread would leave a cache and its runs behind. Here the destructor frees its value and sets a
// new one, every round, as some thread-local frameworks do; its last value is never freed (under
// any malloc), and is all that each thread may leave.
namespace late_key {
engine_heap* heap = nullptr;
pthread_key_t key;
void destroy(void* v) {
    heap->deallocate(v);
    (void)pthread_setspecific(key, heap->allocate(32));
}
} // namespace late_key

TEST(EngineHeapThreads, AKeyDestructorThatAllocatesAfterThreadExitLeavesNoCache) {
    engine_heap h(options());
    late_key::heap = &h;
    std::thread([&] { h.deallocate(h.allocate(16)); }).join(); // the heap's key exists first
    ASSERT_EQ(pthread_key_create(&late_key::key, &late_key::destroy), 0);
    const auto run_threads = [&](int n) {
        for (int i = 0; i < n; ++i) {
            std::thread([&] {
                (void)pthread_setspecific(late_key::key, h.allocate(32));
                h.deallocate(h.allocate(100));
            }).join();
        }
    };
    run_threads(20);
    const std::size_t committed = h.committed_bytes();
    run_threads(300);
    EXPECT_LE(h.committed_bytes(), committed + (std::size_t{1} << 20))
        << "a cache (and its runs) per thread stayed behind";
    EXPECT_LE(h.stats().live_allocations, 320u) << "one 32-byte block per thread";
    EXPECT_TRUE(h.check());
    pthread_key_delete(late_key::key);
}

// The next thread gets the exited thread's cache record, with its owner id. The runs the first
// thread left behind lost that id in their tags when it exited, so the second thread's frees of
// their blocks go to the runs' thread_free lists, as any other thread's would: its own fast path
// would take them into runs it does not own.
TEST(EngineHeapThreads, ARecycledCacheOwnsNoneOfItsPredecessorsRuns) {
    strata::engine_options o = options();
    o.stash_bytes = 0; // every remote free goes to its run
    engine_heap h(o);
    const unsigned c = strata::engine_detail::class_of(64);
    std::vector<void*> blocks;
    std::thread([&] {
        for (int i = 0; i < 3000; ++i) // about 3 runs
            blocks.push_back(h.allocate(64));
    }).join();
    const std::size_t held = h.class_stats(c).committed_bytes;
    std::thread([&] {
        void* own = h.allocate(200); // a cache, and a run of another class
        for (void* p : blocks)
            h.deallocate(p);
        EXPECT_TRUE(h.check()); // tags: the abandoned runs have no owner, this thread's run has it
        EXPECT_EQ(h.class_stats(c).committed_bytes, held) << "the runs were emptied as if owned";
        h.deallocate(own);
    }).join();
    h.trim(); // the emptied abandoned runs go back to the span pool
    EXPECT_EQ(h.class_stats(c).committed_bytes, 0u);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
}

// A thread's runs with live blocks are abandoned when it exits; blocks another thread frees into
// them later wait there for a thread that needs that size class. trim() frees the runs left empty.
TEST(EngineHeapThreads, TrimFreesAbandonedRunsOtherThreadsEmptied) {
    engine_heap h(options());
    const unsigned c = strata::engine_detail::class_of(64);
    std::vector<void*> blocks;
    std::thread([&] {
        for (int i = 0; i < 20000; ++i) // 1.25 MiB of 64-byte blocks: about 20 runs
            blocks.push_back(h.allocate(64));
    }).join();
    const std::size_t held = h.class_stats(c).committed_bytes;
    ASSERT_GE(held, std::size_t{1} << 20);
    for (void* p : blocks) // remote frees: none of these runs has an owner any more
        h.deallocate(p);
    EXPECT_EQ(h.class_stats(c).committed_bytes, held) << "nothing collects them before trim";
    h.trim();
    EXPECT_EQ(h.class_stats(c).committed_bytes, 0u);
    EXPECT_EQ(h.stats().live_allocations, 0u);
    EXPECT_TRUE(h.check());
    // The memory is the span pool's again: other sizes reuse it instead of growing the heap.
    const auto [lo, hi] = std::minmax_element(blocks.begin(), blocks.end(), [](void* a, void* b) {
        return reinterpret_cast<std::uintptr_t>(a) < reinterpret_cast<std::uintptr_t>(b);
    });
    const auto first = reinterpret_cast<std::uintptr_t>(*lo), last = reinterpret_cast<std::uintptr_t>(*hi);
    std::vector<void*> other;
    std::size_t reused = 0;
    for (int i = 0; i < 5000; ++i) { // ~1 MiB of 200-byte blocks
        other.push_back(h.allocate(200));
        const auto at = reinterpret_cast<std::uintptr_t>(other.back());
        reused += at >= first && at <= last;
    }
    EXPECT_GE(reused, other.size() / 2) << "the 64-byte runs' memory was not reused";
    for (void* p : other)
        h.deallocate(p);
    EXPECT_TRUE(h.check());
}

// Four threads replace random slots of one shared array, so most blocks are freed by a thread
// other than the one that allocated them (with the stash on, as such a program turns it on, and
// off). Every block carries a serial and its complement, checked at its free: a block handed out
// twice is freed with a link or the other owner's serial in it.
TEST(EngineHeapThreads, SharedSlotsStress) {
    // 16 KiB stashes; 1 KiB ones, which fill at every few frees and trade through the depots;
    // none.
    for (const std::size_t stash : {std::size_t{16} << 10, std::size_t{1} << 10, std::size_t{0}}) {
        strata::engine_options o = options();
        o.stash_bytes = stash;
        engine_heap h(o);
        constexpr std::size_t slots = 4096;
        std::vector<std::atomic<void*>> shared(slots);
        for (auto& s : shared)
            s.store(nullptr);
        std::atomic<std::size_t> torn{0};
        const auto intact = [&](void* p) {
            std::uint64_t w[2];
            std::memcpy(w, p, sizeof w);
            if (w[1] != ~w[0]) torn.fetch_add(1);
        };
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < 4; ++t) {
            threads.emplace_back([&, t] {
                std::mt19937_64 rng(t + 11);
                for (int i = 0; i < 60000; ++i) {
                    const std::size_t r = rng();
                    std::size_t size = 16 + (r % 100 < 90 ? r % 512 : r % 200000);
                    if (r % 1000 == 0) size = std::size_t{9} << 20;
                    void* p = h.allocate(size, r % 8 == 0 ? 64 : 16);
                    ASSERT_NE(p, nullptr);
                    const std::uint64_t w[2] = {(std::uint64_t{t} << 32) | static_cast<unsigned>(i),
                                                ~((std::uint64_t{t} << 32) | static_cast<unsigned>(i))};
                    std::memcpy(p, w, sizeof w);
                    void* old = shared[(r >> 20) % slots].exchange(p);
                    if (old != nullptr) {
                        intact(old);
                        h.deallocate(old);
                    }
                    if (i % 10000 == 0 && t == 0) h.flush_thread_cache();
                }
            });
        }
        for (auto& th : threads)
            th.join();
        for (auto& s : shared) {
            if (void* p = s.exchange(nullptr)) {
                intact(p);
                h.deallocate(p);
            }
        }
        EXPECT_EQ(torn.load(), 0u) << "stash " << stash;
        EXPECT_TRUE(h.check());
        EXPECT_EQ(h.stats().live_allocations, 0u);
        std::size_t batches = 0;
        for (unsigned c = 0; c < engine_heap::class_count; ++c)
            batches += h.class_stats(c).depot_batches;
        // With 1 KiB stashes the threads trade through the depots (nearly always: a stash must be
        // on and fill, which depends on how the threads interleave); without a stash they cannot.
        if (stash == 0) {
            EXPECT_EQ(batches, 0u);
        }
    }
}

} // namespace
