// magazine_depot and magazine_cache<T> (slab/magazine.hpp) on one thread: magazine hits and misses,
// flush(), the depot's limits, the allocator-contract overloads and their bad input, the checks on
// deallocate() and destroy(), stats of the slab layer, and a randomized run against a reference
// model with check(). Threads are in magazine_thread_test.cpp.
#include "strata/slab/magazine.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/source/heap_source.hpp"

#include "support/recording_handler.hpp"
#include "support/reference_model.hpp"
#include "support/stamped_item.hpp"

namespace {

using strata::magazine_cache;
using strata::magazine_depot;
using strata::magazine_options;
using strata::slab_options;
using strata::test::intact;
using strata::test::item;
using strata::test::stamp;

static_assert(strata::allocator<magazine_cache<item>>);

using source = strata::heap_source;

// A backend over a fixed array of objects that counts its calls, for the depot on its own.
class counting_backend {
public:
    explicit counting_backend(std::size_t objects) : storage_(objects) {
        for (item& i : storage_)
            free_.push_back(&i);
    }
    magazine_depot::backend get() noexcept { return {this, &allocate_batch, &deallocate_batch}; }

    std::size_t batches_out = 0; // allocate_batch calls
    std::size_t batches_in = 0;  // deallocate_batch calls
    [[nodiscard]] std::size_t out() const noexcept { return storage_.size() - free_.size(); }
    [[nodiscard]] bool holds(const void* p) const noexcept {
        return p >= storage_.data() && p < storage_.data() + storage_.size();
    }

private:
    static std::size_t allocate_batch(void* context, void** out, std::size_t n) noexcept {
        auto* self = static_cast<counting_backend*>(context);
        ++self->batches_out;
        std::size_t got = 0;
        while (got < n && !self->free_.empty()) {
            out[got++] = self->free_.back();
            self->free_.pop_back();
        }
        return got;
    }
    static void deallocate_batch(void* context, void* const* in, std::size_t n) noexcept {
        auto* self = static_cast<counting_backend*>(context);
        ++self->batches_in;
        for (std::size_t i = 0; i < n; ++i)
            self->free_.push_back(static_cast<item*>(in[i]));
    }

    std::vector<item> storage_;
    std::vector<item*> free_;
};

// A miss refills the loaded magazine from the backend in one call of at most `rounds` objects; the
// allocations it filled it for are hits that do not reach the backend.
TEST(MagazineDepot, AMissRefillsTheMagazineInOneBackendCall) {
    counting_backend b(1000);
    {
        magazine_depot d(b.get(), magazine_options{8, 2});
        void* first = d.allocate();
        ASSERT_NE(first, nullptr);
        EXPECT_TRUE(b.holds(first));
        ASSERT_EQ(b.batches_out, 1u);
        const std::size_t batch = b.out();
        EXPECT_GE(batch, 1u);
        EXPECT_LE(batch, 8u);
        for (std::size_t i = 1; i < batch; ++i)
            ASSERT_NE(d.allocate(), nullptr);
        EXPECT_EQ(b.batches_out, 1u) << "hits";
        ASSERT_NE(d.allocate(), nullptr);
        EXPECT_EQ(b.batches_out, 2u) << "the magazine was empty: a miss";
        EXPECT_EQ(d.attached_threads(), 1u);
        d.deallocate(first);
        EXPECT_TRUE(d.in_thread_magazines(first));
        d.deallocate(nullptr); // no-op
        d.flush();
        EXPECT_FALSE(d.in_thread_magazines(first));
        EXPECT_EQ(b.out(), batch) << "flush() returned everything but the objects still in use";
    }
    EXPECT_EQ(b.batches_in > 0, true);
}

// The depot keeps at most max_full_magazines full magazines; more go back to the backend, and
// flush() returns this thread's magazines and the depot's.
TEST(MagazineDepot, TheDepotKeepsAtMostMaxFullMagazines) {
    counting_backend b(1000);
    magazine_depot d(b.get(), magazine_options{4, 2});
    std::vector<void*> v;
    for (int i = 0; i < 100; ++i)
        v.push_back(d.allocate());
    for (void* p : v)
        d.deallocate(p);
    EXPECT_LE(d.depot_rounds(), 2u * 4u);
    EXPECT_GT(b.batches_in, 0u) << "full magazines beyond the limit went to the backend";
    d.flush();
    EXPECT_EQ(d.depot_rounds(), 0u);
    EXPECT_EQ(b.out(), 0u);
}

// Exhaustion: nullptr once the backend has nothing left, and the objects it gave are distinct.
TEST(MagazineDepot, ExhaustedBackendGivesNull) {
    counting_backend b(10);
    magazine_depot d(b.get(), magazine_options{4, 1});
    std::set<void*> seen;
    for (int i = 0; i < 10; ++i) {
        void* p = d.allocate();
        ASSERT_NE(p, nullptr) << i;
        EXPECT_TRUE(seen.insert(p).second) << "handed out twice";
    }
    EXPECT_EQ(d.allocate(), nullptr);
    for (void* p : seen)
        d.deallocate(p);
    EXPECT_NE(d.allocate(), nullptr) << "serves again once objects come back";
}

// The allocator-contract allocate(size, align) serves 0 < size <= sizeof(T) with a power-of-two
// alignment up to the object alignment (the contract's bad input: tests/contract).
TEST(MagazineCache, ContractAllocateServesWhatFitsAnObject) {
    source src;
    magazine_cache<item> c(src);
    EXPECT_EQ(c.allocate(sizeof(item) + 1, 1), nullptr);
    EXPECT_EQ(c.allocate(1, 2 * strata::slab_cache<item>::object_align), nullptr);
    EXPECT_EQ(c.stats().total_allocations, 0u);
    for (std::size_t align = 1; align <= strata::slab_cache<item>::object_align; align *= 2) {
        void* p = c.allocate(1, align);
        ASSERT_NE(p, nullptr) << align;
        EXPECT_TRUE(strata::is_aligned(p, align));
        c.deallocate(p, 1, align);
    }
    c.flush();
    EXPECT_EQ(c.slab_live(), 0u);
}

TEST(MagazineCache, SingleThreadRoundTripAndFlush) {
    source src;
    {
        magazine_cache<item> c(src, slab_options{}, magazine_options{8, 2});
        std::vector<item*> v;
        for (int i = 0; i < 1000; ++i) {
            item* p = c.allocate();
            ASSERT_NE(p, nullptr);
            stamp(p, 1, static_cast<std::uint64_t>(i));
            v.push_back(p);
        }
        EXPECT_TRUE(c.owns(v.front()));
        for (item* p : v) {
            ASSERT_TRUE(intact(p));
            c.deallocate(p);
        }
        c.deallocate(nullptr);
        EXPECT_TRUE(c.check());
        EXPECT_LE(c.depot().depot_rounds(), 16u) << "at most max_full_magazines full magazines";
        c.flush();
        EXPECT_EQ(c.slab_live(), 0u);
        EXPECT_EQ(c.depot().depot_rounds(), 0u);
        EXPECT_TRUE(c.check());
        item* q = c.create();
        ASSERT_NE(q, nullptr);
        c.destroy(q);
        c.destroy(nullptr);
        EXPECT_EQ(c.allocate(97, 16), nullptr);
        EXPECT_EQ(c.allocate(96, 32), nullptr);
        void* r = c.allocate(96, 16);
        ASSERT_NE(r, nullptr);
        c.deallocate(r, 96, 16);
    }
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

TEST(MagazineCache, MagazineHitReusesTheLastFreedObject) {
    source src;
    magazine_cache<item> c(src);
    item* a = c.allocate();
    c.deallocate(a);
    EXPECT_EQ(c.allocate(), a);
    c.deallocate(a);
}

TEST(MagazineCache, ExhaustedSourceReturnsNull) {
    struct refusing {
        strata::memory_block allocate_block(std::size_t, std::size_t) noexcept { return {}; }
        void deallocate_block(strata::memory_block) noexcept {}
    } src;
    magazine_cache<item> c(src);
    EXPECT_EQ(c.allocate(), nullptr);
}

// A double free into this thread's magazine would let the next two allocate() calls hand the same
// object out twice. At checks >= 1 it is reported and refused at the call.
TEST(MagazineCacheChecks, DoubleFreeIntoThisThreadsMagazineIsRefusedAtTheCall) {
    STRATA_REQUIRE_CHECKS(1);
    strata::test::recording_handler h;
    source src;
    magazine_cache<item> c(src);
    item* a = c.allocate();
    item* b = c.allocate();
    c.deallocate(a);
    c.deallocate(a); // a is in this thread's loaded magazine
    EXPECT_TRUE(h.saw_one(strata::violation_kind::double_free));
    EXPECT_EQ(h.last().allocator, "strata::magazine_cache");
    h.clear();
    // Allocate between the double free and the flush: a comes out once, never twice.
    item* x = c.allocate();
    item* y = c.allocate();
    EXPECT_EQ(x, a);
    EXPECT_NE(y, a);
    EXPECT_NE(y, b);
    c.flush();
    EXPECT_TRUE(h.empty()) << "the refused copy never reached a magazine";
    // destroy() is checked before ~T() runs.
    c.destroy(x);
    c.destroy(x);
    EXPECT_TRUE(h.saw_one(strata::violation_kind::double_free));
    h.clear();
    c.deallocate(b);
    c.deallocate(y);
    c.flush();
    EXPECT_TRUE(h.empty());
    EXPECT_EQ(c.slab_live(), 0u);
    EXPECT_TRUE(c.check());
}

// An object whose first free already went back to the slabs (flushed) is free there: the slab
// layer's live bit answers, at the call.
TEST(MagazineCacheChecks, DoubleFreeOfAnObjectBackInTheSlabsIsRefusedAtTheCall) {
    STRATA_REQUIRE_CHECKS(1);
    strata::test::recording_handler h;
    source src;
    magazine_cache<item> c(src, slab_options{}, magazine_options{4, 1});
    item* a = c.allocate();
    c.deallocate(a);
    c.flush();
    ASSERT_EQ(c.slab_live(), 0u);
    c.deallocate(a);
    EXPECT_TRUE(h.saw_one(strata::violation_kind::double_free));
    h.clear();
    EXPECT_EQ(c.slab_live(), 0u);
    EXPECT_TRUE(c.check());
}

// What the call-time check does not see (documented): the first free was pushed on from this
// thread's magazines into the depot's full ones. The second free is accepted; when both copies
// reach the slabs (flush) the slab layer reports the second and drops it.
TEST(MagazineCacheChecks, DoubleFreeWhoseFirstFreeIsInTheDepotIsCaughtOnlyAtTheSlabs) {
    STRATA_REQUIRE_CHECKS(1);
    strata::test::recording_handler h;
    source src;
    magazine_cache<item> c(src, slab_options{}, magazine_options{4, 16});
    std::vector<item*> v;
    for (int i = 0; i < 13; ++i)
        v.push_back(c.allocate());
    for (item* p : v) // 13 frees, 4 rounds a magazine: v[0]'s magazine goes to the depot
        c.deallocate(p);
    ASSERT_GE(c.depot().depot_rounds(), 4u);
    c.deallocate(v[0]);
    EXPECT_TRUE(h.empty());
    c.flush();
    EXPECT_TRUE(h.saw_one(strata::violation_kind::double_free));
    EXPECT_EQ(h.last().allocator, "strata::slab_cache");
    EXPECT_EQ(c.slab_live(), 0u);
    EXPECT_TRUE(c.check());
}

// A foreign pointer in a magazine would be handed out by the next allocate(). At checks >= 1 it is
// refused at the call and never reaches a magazine; so is a pointer into an object's middle.
TEST(MagazineCacheChecks, ForeignPointerIsRefusedAndNeverHandedOut) {
    STRATA_REQUIRE_CHECKS(1);
    strata::test::recording_handler h;
    source src;
    magazine_cache<item> c(src);
    item outside{};
    c.deallocate(&outside);
    EXPECT_TRUE(h.saw_one(strata::violation_kind::foreign_pointer));
    h.clear();
    item* a = c.allocate();
    c.deallocate(reinterpret_cast<item*>(reinterpret_cast<std::byte*>(a) + 8));
    EXPECT_TRUE(h.saw_one(strata::violation_kind::foreign_pointer));
    h.clear();
    c.destroy(&outside); // refused before ~T() would run on it
    EXPECT_TRUE(h.saw_one(strata::violation_kind::foreign_pointer));
    h.clear();
    std::vector<item*> v;
    for (int i = 0; i < 200; ++i) {
        item* p = c.allocate();
        ASSERT_NE(p, nullptr);
        EXPECT_NE(p, &outside);
        EXPECT_TRUE(c.owns(p));
        v.push_back(p);
    }
    for (item* p : v)
        c.deallocate(p);
    c.deallocate(a);
    c.flush();
    EXPECT_TRUE(h.empty());
    EXPECT_EQ(c.slab_live(), 0u);
    EXPECT_TRUE(c.check());
}

// What the checks do not see (documented): the first free sits in another thread's magazine. The
// second free is accepted at the call; it is reported only if both copies reach the slabs (here:
// ours by flush(), the other thread's at its exit), and that copy is dropped then.
TEST(MagazineCacheChecks, DoubleFreeAcrossThreadsIsCaughtOnlyWhenBothCopiesReachTheSlabs) {
    STRATA_REQUIRE_CHECKS(1);
    strata::test::recording_handler h;
    source src;
    magazine_cache<item> c(src);
    item* a = c.allocate();
    std::mutex m;
    std::condition_variable cv;
    int stage = 0;
    std::thread other([&] {
        c.deallocate(a); // into this thread's magazine
        std::unique_lock lock(m);
        stage = 1;
        cv.notify_all();
        cv.wait(lock, [&] { return stage == 2; });
    }); // exits: its magazine goes back to the slabs
    {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return stage == 1; });
    }
    c.deallocate(a);
    EXPECT_TRUE(h.empty()) << "not visible from this thread";
    c.flush();
    EXPECT_TRUE(h.empty());
    {
        const std::lock_guard lock(m);
        stage = 2;
    }
    cv.notify_all();
    other.join();
    EXPECT_TRUE(h.saw_one(strata::violation_kind::double_free));
    EXPECT_EQ(c.slab_live(), 0u);
    EXPECT_TRUE(c.check());
}

// stats() describes the slab layer: objects in magazines count as live, total_allocations counts
// objects the slabs handed out (in batches), and flush() brings the figures down to what is in use.
TEST(MagazineCache, StatsDescribeTheSlabLayer) {
    source src;
    magazine_cache<item> c(src, slab_options{4096, 8, 1, false}, magazine_options{8, 2});
    constexpr std::size_t stride = strata::slab_cache<item>::stride;
    strata::stats s = c.stats();
    EXPECT_EQ(s.in_use, 0u);
    EXPECT_EQ(s.live_allocations, 0u);
    EXPECT_EQ(s.capacity, 0u);
    EXPECT_EQ(s.largest_free_block, 0u);
    std::vector<item*> v;
    for (int i = 0; i < 100; ++i)
        v.push_back(c.allocate());
    s = c.stats();
    // Refills take half a magazine (4) at a time: at most 3 left over in the loaded magazine.
    EXPECT_GE(s.live_allocations, 100u);
    EXPECT_LE(s.live_allocations, 103u);
    EXPECT_EQ(s.in_use, s.live_allocations * stride);
    EXPECT_EQ(s.total_allocations, s.live_allocations);
    EXPECT_EQ(s.capacity % 4096, 0u);
    EXPECT_GE(s.capacity, s.in_use);
    EXPECT_EQ(s.live_allocations, c.slab_live());
    c.flush();
    s = c.stats();
    EXPECT_EQ(s.live_allocations, 100u);
    EXPECT_EQ(s.in_use, 100u * stride);
    EXPECT_GE(s.peak, s.in_use);
    for (std::size_t i = 0; i < 50; ++i)
        c.deallocate(v[i]);
    s = c.stats();
    EXPECT_GE(s.live_allocations, 50u) << "freed objects sit in magazines, still live for the slabs";
    c.flush();
    s = c.stats();
    EXPECT_EQ(s.live_allocations, 50u);
    EXPECT_EQ(s.in_use, 50u * stride);
    EXPECT_GE(s.peak, 100u * stride);
    EXPECT_LE(s.peak, 103u * stride);
    EXPECT_EQ(s.largest_free_block, stride);
    const std::size_t total = s.total_allocations;
    for (std::size_t i = 50; i < 100; ++i)
        c.deallocate(v[i]);
    c.flush();
    s = c.stats();
    EXPECT_EQ(s.live_allocations, 0u);
    EXPECT_EQ(s.in_use, 0u);
    EXPECT_EQ(s.total_allocations, total) << "frees hand nothing out";
    EXPECT_EQ(s.capacity, 4096u) << "one empty slab kept (max_empty_slabs 1)";
    EXPECT_TRUE(c.check());
}

TEST(MagazineCacheRandomized, MillionOpsAgainstTheReferenceModel) {
    source src;
    magazine_cache<item> c(src, slab_options{4096, 8, 1, false}, magazine_options{8, 2});
    strata::test::reference_model model;
    std::vector<item*> live;
    std::mt19937_64 rng(0x3A6A);
    constexpr std::size_t ops = 1'000'000;
    for (std::size_t i = 0; i < ops; ++i) {
        const std::size_t target = (i / 50'000) % 2 == 0 ? 2000 : 100;
        if (live.empty() || (live.size() < target ? rng() % 100 < 70 : rng() % 100 < 30)) {
            item* p = c.allocate();
            ASSERT_NE(p, nullptr);
            model.add(p, sizeof(item), alignof(item));
            live.push_back(p);
        } else {
            const std::size_t k = rng() % live.size();
            model.remove(live[k]);
            c.deallocate(live[k]);
            live[k] = live.back();
            live.pop_back();
        }
        if (i % 100'000 == 0) {
            ASSERT_TRUE(c.check()) << i;
        }
    }
    for (item* p : live) {
        model.remove(p);
        c.deallocate(p);
    }
    c.flush();
    EXPECT_EQ(c.slab_live(), 0u);
    EXPECT_TRUE(c.check());
}

TEST(MagazineCache, FlushReturnsThisThreadsMagazinesAfterUsingAnotherCache) {
    // The thread's hint names only the cache it used last; flush() must find its record for this
    // one all the same.
    source src1, src2;
    magazine_cache<item> a(src1);
    magazine_cache<item> b(src2);
    a.deallocate(a.allocate());
    b.deallocate(b.allocate());
    a.flush();
    EXPECT_EQ(a.slab_live(), 0u);
    b.flush();
    EXPECT_EQ(b.slab_live(), 0u);
}

// In caching mode the objects are constructed by the slab and destroyed when it is released.
struct lifetime_counted {
    static inline int alive = 0;
    std::uint64_t state;
    lifetime_counted() noexcept : state(42) { ++alive; }
    ~lifetime_counted() { --alive; }
};

TEST(MagazineCache, CreateAndDestroyAreForPlainModeOnly) {
    source src;
    lifetime_counted::alive = 0;
    {
        slab_options so;
        so.cache_objects = true;
        magazine_cache<lifetime_counted> c(src, so);
        strata::test::recording_handler h;
        EXPECT_EQ(c.create(), nullptr) << "T() would run over a constructed object";
        if (strata::test::checks_on) {
            EXPECT_TRUE(h.saw_one(strata::violation_kind::invalid_argument));
        }
        h.clear();
        lifetime_counted* p = c.allocate();
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->state, 42u);
        const int alive = lifetime_counted::alive;
        c.destroy(p); // a plain deallocate: the slab runs ~T() itself when it is released
        EXPECT_EQ(lifetime_counted::alive, alive);
        if (strata::test::checks_on) {
            EXPECT_TRUE(h.saw_one(strata::violation_kind::invalid_argument));
        }
        c.flush();
        EXPECT_EQ(c.slab_live(), 0u);
    }
    EXPECT_EQ(lifetime_counted::alive, 0) << "every object destroyed exactly once";
}

} // namespace
