// The magazine layer under threads: stress with 2-8 threads, producer/consumer with cross-thread
// frees, destruction while other threads hold magazines, thread exit, caches nested in cached
// objects. Single-thread behaviour is in magazine_test.cpp.
// TSAN_STAGE: the CI tsan stage runs the tests of this file whose names contain "Thread".
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/allocator.hpp"
#include "strata/slab/magazine.hpp"
#include "strata/source/heap_source.hpp"

#include "support/stamped_item.hpp"

namespace {

using strata::magazine_cache;
using strata::magazine_options;
using strata::slab_options;

#if defined(__SANITIZE_THREAD__)
constexpr bool under_tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool under_tsan = true;
#else
constexpr bool under_tsan = false;
#endif
#else
constexpr bool under_tsan = false;
#endif

// Operations per thread: halved under TSan (5-15x slower) so the stage stays well under a minute.
constexpr std::size_t ops_per_thread = under_tsan ? 200'000 : 400'000;

using strata::test::intact;
using strata::test::item;
using strata::test::stamp;

static_assert(strata::allocator<magazine_cache<item>>);

// A source shared by one cache; the cache calls it under its depot lock only.
using source = strata::heap_source;

// Each thread churns its own objects: random allocate/free against a private live list, checking
// every object's stamp before it is freed.
void churn_own(magazine_cache<item>& c, std::uint64_t tid, std::size_t ops, std::atomic<int>& errors) {
    std::mt19937_64 rng(tid * 7919 + 1);
    std::vector<item*> live;
    std::uint64_t serial = 0;
    for (std::size_t i = 0; i < ops; ++i) {
        if (live.empty() || (live.size() < 500 && rng() % 2 == 0)) {
            item* p = c.allocate();
            if (p == nullptr) {
                ++errors;
                return;
            }
            stamp(p, tid, ++serial);
            live.push_back(p);
        } else {
            const std::size_t k = rng() % live.size();
            if (!intact(live[k]) || live[k]->owner != tid) ++errors;
            c.deallocate(live[k]);
            live[k] = live.back();
            live.pop_back();
        }
    }
    for (item* p : live) {
        if (!intact(p) || p->owner != tid) ++errors;
        c.deallocate(p);
    }
}

class MagazineThreads : public ::testing::TestWithParam<int> {};

TEST_P(MagazineThreads, ThreadsChurnTheirOwnObjects) {
    const int threads = GetParam();
    source src;
    {
        magazine_cache<item> c(src, slab_options{}, magazine_options{16, 4});
        std::atomic<int> errors{0};
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back(
                [&, t] { churn_own(c, static_cast<std::uint64_t>(t + 1), ops_per_thread / 2, errors); });
        for (std::thread& t : pool)
            t.join();
        EXPECT_EQ(errors.load(), 0);
        EXPECT_EQ(c.depot().attached_threads(), 0u) << "thread exit detached every thread";
        c.flush();
        EXPECT_EQ(c.slab_live(), 0u) << "every object came back to its slab";
        EXPECT_TRUE(c.check());
    }
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

INSTANTIATE_TEST_SUITE_P(TwoToEight, MagazineThreads, ::testing::Values(2, 4, 8));

// A bounded queue guarded by a mutex: the handoff between producer and consumer.
class handoff {
public:
    void push(item* p) {
        std::unique_lock<std::mutex> lock(m_);
        not_full_.wait(lock, [&] { return q_.size() < 256; });
        q_.push_back(p);
        not_empty_.notify_one();
    }
    item* pop() {
        std::unique_lock<std::mutex> lock(m_);
        not_empty_.wait(lock, [&] { return !q_.empty(); });
        item* p = q_.front();
        q_.pop_front();
        not_full_.notify_one();
        return p;
    }

private:
    std::mutex m_;
    std::condition_variable not_full_, not_empty_;
    std::deque<item*> q_;
};

TEST(MagazineThread, ProducerConsumerCrossThreadFrees) {
    source src;
    {
        magazine_cache<item> c(src, slab_options{}, magazine_options{16, 4});
        constexpr int pairs = 2;
        const std::size_t per = ops_per_thread / 4;
        std::atomic<int> errors{0};
        std::vector<handoff> queues(pairs);
        std::vector<std::thread> ts;
        for (int k = 0; k < pairs; ++k) {
            ts.emplace_back([&, k] {
                for (std::size_t i = 0; i < per; ++i) {
                    item* p = c.allocate();
                    if (p == nullptr) {
                        ++errors;
                        queues[static_cast<std::size_t>(k)].push(nullptr);
                        return;
                    }
                    stamp(p, static_cast<std::uint64_t>(k + 100), i);
                    queues[static_cast<std::size_t>(k)].push(p);
                }
                queues[static_cast<std::size_t>(k)].push(nullptr);
            });
            ts.emplace_back([&, k] {
                std::size_t expect = 0;
                while (item* p = queues[static_cast<std::size_t>(k)].pop()) {
                    if (!intact(p) || p->serial != expect++ ||
                        p->owner != static_cast<std::uint64_t>(k + 100))
                        ++errors;
                    c.deallocate(p); // a free on another thread than the allocating one
                }
                if (expect != per) ++errors;
            });
        }
        for (std::thread& t : ts)
            t.join();
        EXPECT_EQ(errors.load(), 0);
        c.flush();
        EXPECT_EQ(c.slab_live(), 0u);
        EXPECT_TRUE(c.check());
    }
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

TEST(MagazineThread, MixedOwnAndCrossThreadFreesWithEightThreads) {
    source src;
    magazine_cache<item> c(src, slab_options{}, magazine_options{8, 2});
    constexpr int threads = 8;
    // Each thread allocates into its own ring and frees what its neighbour left in the shared slots.
    std::vector<std::atomic<item*>> slots(threads * 64);
    for (auto& s : slots)
        s.store(nullptr);
    std::atomic<int> errors{0};
    std::vector<std::thread> ts;
    const std::size_t per = ops_per_thread / 8;
    for (int t = 0; t < threads; ++t) {
        ts.emplace_back([&, t] {
            std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 11);
            for (std::size_t i = 0; i < per; ++i) {
                item* p = c.allocate();
                if (p == nullptr) {
                    ++errors;
                    return;
                }
                stamp(p, static_cast<std::uint64_t>(t), i);
                // Publish into a random slot; whatever was there (anyone's) is freed here.
                item* old = slots[rng() % slots.size()].exchange(p, std::memory_order_acq_rel);
                if (old != nullptr) {
                    if (!intact(old)) ++errors;
                    c.deallocate(old);
                }
            }
        });
    }
    for (std::thread& t : ts)
        t.join();
    for (auto& s : slots)
        if (item* p = s.load()) {
            c.deallocate(p);
        }
    EXPECT_EQ(errors.load(), 0);
    c.flush();
    EXPECT_EQ(c.slab_live(), 0u);
    EXPECT_TRUE(c.check());
}

TEST(MagazineThread, ThreadExitReturnsItsMagazines) {
    source src;
    magazine_cache<item> c(src, slab_options{}, magazine_options{32, 4});
    std::thread t([&] {
        std::vector<item*> v;
        for (int i = 0; i < 100; ++i)
            v.push_back(c.allocate());
        for (item* p : v)
            c.deallocate(p); // they sit in this thread's magazines now
        EXPECT_EQ(c.depot().attached_threads(), 1u);
    });
    t.join();
    EXPECT_EQ(c.depot().attached_threads(), 0u);
    c.flush(); // the depot's full magazines; the exited thread's partial ones already went back
    EXPECT_EQ(c.slab_live(), 0u);
}

TEST(MagazineThread, DestroyingTheCacheWhileOtherThreadsHoldMagazines) {
    source src;
    std::mutex m;
    std::condition_variable cv;
    int stage = 0; // 1: workers hold magazines; 2: cache destroyed, workers may go on
    constexpr int workers = 4;
    int ready = 0;
    std::atomic<int> errors{0};
    auto* c = new magazine_cache<item>(src, slab_options{}, magazine_options{16, 4});
    std::vector<std::thread> ts;
    for (int w = 0; w < workers; ++w) {
        ts.emplace_back([&, w] {
            std::vector<item*> v;
            for (int i = 0; i < 40; ++i)
                v.push_back(c->allocate());
            for (item* p : v)
                c->deallocate(p);
            {
                std::unique_lock<std::mutex> lock(m);
                ++ready;
                cv.notify_all();
                cv.wait(lock, [&] { return stage == 2; });
            }
            // The old cache is gone; a new one (maybe at the same address) must not see old records.
            strata::heap_source local;
            magazine_cache<item> fresh(local, slab_options{}, magazine_options{4, 1});
            item* p = fresh.allocate();
            if (p == nullptr || (w % 2 == 0 && fresh.depot().attached_threads() != 1)) ++errors;
            fresh.deallocate(p);
        });
    }
    {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return ready == workers; });
        EXPECT_EQ(c->depot().attached_threads(), static_cast<std::size_t>(workers));
        delete c; // workers are idle (waiting), still holding magazines for it
        EXPECT_EQ(src.outstanding_blocks(), 0u) << "every magazine emptied into the slabs, slabs released";
        stage = 2;
        cv.notify_all();
    }
    for (std::thread& t : ts)
        t.join();
    EXPECT_EQ(errors.load(), 0);
}

// A cached object whose constructor and destructor use another magazine_cache: the slab runs them
// inside the depot's backend, under its lock. The first use of the inner cache from there must not
// take the registry lock under the depot lock (the reverse of thread exit's order, which TSan
// reports), and ~magazine_depot must not hold the registry lock while emptying the other threads'
// magazines (the inner cache's destructor would deadlock on it).
struct inner_part {
    std::uint64_t value[4];
};
magazine_cache<inner_part>* inner_cache = nullptr;
struct outer_part {
    inner_part* part;
    outer_part() noexcept : part(inner_cache->allocate()) {}
    ~outer_part() { inner_cache->deallocate(part); }
};

TEST(MagazineThread, CachedObjectsUsingAnotherCacheDoNotDeadlock) {
    source inner_src, outer_src;
    magazine_cache<inner_part> inner(inner_src);
    inner_cache = &inner;
    {
        slab_options so;
        so.cache_objects = true;
        so.max_empty_slabs = 0; // empty slabs are released (~T() runs) at once
        auto outer = std::make_unique<magazine_cache<outer_part>>(outer_src, so);
        std::mutex m;
        std::condition_variable cv;
        int stage = 0;
        std::thread worker([&] {
            // T() runs on this thread, inside outer's backend: its first use of `inner` is there.
            std::vector<outer_part*> v;
            for (int i = 0; i < 200; ++i)
                v.push_back(outer->allocate());
            for (outer_part* p : v) {
                ASSERT_NE(p, nullptr);
                EXPECT_NE(p->part, nullptr);
                outer->deallocate(p);
            }
            std::unique_lock<std::mutex> l(m);
            stage = 1;
            cv.notify_all();
            cv.wait(l, [&] { return stage == 2; });
        });
        {
            std::unique_lock<std::mutex> l(m);
            cv.wait(l, [&] { return stage == 1; });
        }
        // Allowed: the worker is idle and synchronized, and holds magazines of outer_part objects.
        // Emptying them releases slabs, whose ~T() frees into `inner` from this thread.
        outer.reset();
        {
            const std::lock_guard<std::mutex> l(m);
            stage = 2;
        }
        cv.notify_all();
        worker.join();
    }
    inner.flush();
    EXPECT_EQ(inner.slab_live(), 0u);
    EXPECT_TRUE(inner.check());
    inner_cache = nullptr;
}

// The same nesting on a thread that used the inner cache before: the inner cache's slow path, run
// from inside the outer depot's backend, points the thread's hint at its own record, and the outer
// slow path must not store its magazine into that hint under the inner cache's id (the inner cache
// would hand out the outer cache's objects). Both slow paths: the
// allocation (T() while a slab is built) and the free (~T() while a flushed slab is released).
TEST(MagazineCache, CachedObjectsUsingACacheThisThreadUsedKeepTheCachesApart) {
    source inner_src, outer_src;
    magazine_cache<inner_part> inner(inner_src);
    inner_cache = &inner;
    {
        slab_options so;
        so.cache_objects = true;
        so.max_empty_slabs = 0; // emptied slabs are released at once: ~T() runs in the free path
        so.slab_bytes = 4096;
        magazine_options mo;
        mo.rounds = 4;
        mo.max_full_magazines = 0; // every full magazine is flushed back to the slabs
        magazine_cache<outer_part> outer(outer_src, so, mo);
        inner.deallocate(inner.allocate()); // this thread's hint names `inner` first
        std::vector<outer_part*> v;
        for (int i = 0; i < 500; ++i) {
            outer_part* o = outer.allocate();
            ASSERT_NE(o, nullptr);
            ASSERT_TRUE(outer.owns(o));
            inner_part* q = inner.allocate(); // an ordinary inner allocation right after
            ASSERT_TRUE(inner.owns(q)) << "allocation " << i;
            ASSERT_FALSE(outer.owns(q));
            inner.deallocate(q);
            v.push_back(o);
        }
        for (std::size_t i = 0; i < v.size(); ++i) {
            outer.deallocate(v[i]);
            inner_part* q = inner.allocate();
            ASSERT_TRUE(inner.owns(q)) << "free " << i;
            ASSERT_FALSE(outer.owns(q));
            inner.deallocate(q);
        }
        outer.flush();
        EXPECT_TRUE(outer.check());
    }
    inner.flush();
    EXPECT_EQ(inner.slab_live(), 0u);
    EXPECT_TRUE(inner.check());
    inner_cache = nullptr;
}

TEST(MagazineThread, ThreadUsingTwoCachesAlternately) {
    source src1, src2;
    magazine_cache<item> a(src1);
    magazine_cache<item> b(src2);
    std::thread t([&] {
        for (int i = 0; i < 10'000; ++i) {
            item* p = a.allocate();
            item* q = b.allocate();
            a.deallocate(p);
            b.deallocate(q);
        }
    });
    t.join();
    a.flush();
    b.flush();
    EXPECT_EQ(a.slab_live(), 0u);
    EXPECT_EQ(b.slab_live(), 0u);
}

} // namespace
