#include "strata/slab/slab_cache.hpp"

#include <algorithm>
#include <iterator>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/allocator.hpp"
#include "strata/source/heap_source.hpp"

#include "support/recording_handler.hpp"
#include "support/reference_model.hpp"

namespace {

using strata::slab_cache;
using strata::slab_options;
using strata::violation_kind;
using strata::test::recording_handler;

struct alignas(16) particle {
    float pos[3];
    float vel[3];
    float life;
    int id;
    std::byte pad[64];
};
static_assert(sizeof(particle) == 96);

static_assert(strata::owning_allocator<slab_cache<particle>>);

struct counted {
    static inline int constructed = 0;
    static inline int destroyed = 0;
    counted() noexcept { ++constructed; }
    ~counted() { ++destroyed; }
    int state = 42;
};

TEST(SlabCache, DefaultLayoutAndBasicVerbs) {
    strata::heap_source src;
    {
        slab_cache<particle> c(src);
        ASSERT_TRUE(c.valid());
        EXPECT_EQ(c.slab_bytes(), 16384u);
        EXPECT_GE(c.objects_per_slab(), 160u);
        EXPECT_LE(c.objects_per_slab() * 96, 16384u);
        particle* a = c.allocate();
        particle* b = c.allocate();
        ASSERT_NE(a, nullptr);
        EXPECT_TRUE(strata::is_aligned(a, 16));
        EXPECT_EQ(reinterpret_cast<std::byte*>(b) - reinterpret_cast<std::byte*>(a), 96);
        EXPECT_TRUE(c.owns(a));
        EXPECT_EQ(c.live(), 2u);
        EXPECT_EQ(c.slab_count(), 1u);
        EXPECT_EQ(src.outstanding_blocks(), 1u);
        EXPECT_TRUE(c.check());
        c.deallocate(a);
        c.deallocate(b);
        c.deallocate(nullptr);
        EXPECT_EQ(c.live(), 0u);
        EXPECT_EQ(c.empty_slab_count(), 1u) << "one empty slab is kept by default";
        EXPECT_TRUE(c.check());
    }
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

TEST(SlabCache, ListsMovePartialFullEmptyAndEmptiesBeyondTheLimitGoBack) {
    strata::heap_source src;
    slab_cache<particle> c(src, slab_options{4096, 8, 2, false});
    const std::size_t n = c.objects_per_slab();
    ASSERT_GT(n, 10u);
    std::vector<particle*> v;
    for (std::size_t i = 0; i < 5 * n; ++i)
        v.push_back(c.allocate());
    EXPECT_EQ(c.slab_count(), 5u);
    EXPECT_TRUE(c.check());
    // Free all: 5 slabs become empty, 2 are kept.
    for (particle* p : v)
        c.deallocate(p);
    EXPECT_EQ(c.empty_slab_count(), 2u);
    EXPECT_EQ(c.slab_count(), 2u);
    EXPECT_EQ(src.outstanding_blocks(), 2u);
    EXPECT_TRUE(c.check());
    c.shrink();
    EXPECT_EQ(src.outstanding_blocks(), 0u);
    EXPECT_TRUE(c.check());
}

TEST(SlabCache, AllocationPrefersPartialSlabs) {
    strata::heap_source src;
    slab_cache<particle> c(src, slab_options{4096, 8, 4, false});
    const std::size_t n = c.objects_per_slab();
    std::vector<particle*> v;
    for (std::size_t i = 0; i < 3 * n; ++i)
        v.push_back(c.allocate());
    // Empty slab 0 entirely and free one object of slab 2.
    for (std::size_t i = 0; i < n; ++i)
        c.deallocate(v[i]);
    c.deallocate(v[2 * n]);
    EXPECT_EQ(c.empty_slab_count(), 1u);
    // The next allocation comes from the partial slab, not from the empty one.
    EXPECT_EQ(c.allocate(), v[2 * n]);
    EXPECT_EQ(c.empty_slab_count(), 1u);
    for (std::size_t i = n; i < 3 * n; ++i)
        c.deallocate(v[i]);
    EXPECT_TRUE(c.check());
}

TEST(SlabCache, IterationVisitsExactlyTheLiveObjects) {
    strata::heap_source src;
    slab_cache<particle> c(src, slab_options{4096, 8, 1, false});
    std::vector<particle*> v;
    for (int i = 0; i < 100; ++i) {
        particle* p = c.create();
        p->id = i;
        v.push_back(p);
    }
    for (int i = 0; i < 100; i += 3)
        c.destroy(v[static_cast<std::size_t>(i)]);
    std::set<int> ids;
    c.for_each_live([&](particle& p) { EXPECT_TRUE(ids.insert(p.id).second); });
    EXPECT_EQ(ids.size(), 66u);
    for (int id : ids)
        EXPECT_NE(id % 3, 0);
    std::size_t slabs = 0, live = 0;
    c.for_each_slab([&](const slab_cache<particle>::slab_view& s) {
        ++slabs;
        live += s.live();
        EXPECT_LE(s.live(), s.capacity());
        const particle* prev = nullptr;
        s.for_each_live([&](particle& p) {
            EXPECT_LT(prev, &p) << "address order";
            prev = &p;
        });
    });
    EXPECT_EQ(live, 66u);
    EXPECT_EQ(slabs, c.slab_count() - c.empty_slab_count());
    for (int i = 0; i < 100; ++i)
        if (i % 3 != 0) {
            c.destroy(v[static_cast<std::size_t>(i)]);
        }
}

// The docs/pools.md pattern "update, and destroy the dead ones" written with a free inside a walk:
// the free could release the slab being walked (use after free with max_empty_slabs 0) or move it
// to another list (objects skipped). It is refused at every checks level and reported at >= 1.
TEST(SlabCache, AFreeInsideAWalkIsRefusedAndLeavesTheCacheIntact) {
    for (const std::size_t keep : {std::size_t{0}, std::size_t{1}}) {
        strata::heap_source src;
        slab_cache<particle> c(src, slab_options{0, 8, keep, false});
        std::vector<particle*> v;
        for (int i = 0; i < 400; ++i) {
            particle* p = c.create();
            ASSERT_NE(p, nullptr);
            p->id = i;
            v.push_back(p);
        }
        ASSERT_GT(c.slab_count(), 2u);
        recording_handler h;
        int visited = 0;
        c.for_each_live([&](particle& q) {
            ++visited;
            c.destroy(&q);
            c.deallocate(&q);
        });
        EXPECT_EQ(visited, 400);
        c.for_each_slab([&](const slab_cache<particle>::slab_view& s) {
            s.for_each_live(
                [&](particle& q) { c.deallocate(static_cast<void*>(&q), sizeof q, alignof(particle)); });
        });
        EXPECT_EQ(c.live(), 400u);
        EXPECT_TRUE(c.check());
        if (strata::test::checks_on) {
            ASSERT_EQ(h.count(), 3u * 400u);
            for (const auto& r : h.all())
                EXPECT_EQ(r.kind, violation_kind::invalid_argument);
            EXPECT_NE(h.last().message.find("destroy_if"), std::string::npos) << h.last().message;
        } else {
            EXPECT_TRUE(h.empty());
        }
        // A nested destroy_if / deallocate_if is a free inside the walk too.
        h.clear();
        c.for_each_live([&](particle& q) {
            if (q.id == 0) {
                EXPECT_EQ(c.destroy_if([](particle&) { return true; }), 0u);
                EXPECT_EQ(c.deallocate_if([](particle&) { return true; }), 0u);
            }
        });
        EXPECT_EQ(c.live(), 400u);
        if (strata::test::checks_on) {
            EXPECT_EQ(h.count(), 2u);
        }
        // And a free inside destroy_if's predicate (the predicate says what to free instead).
        h.clear();
        EXPECT_EQ(c.destroy_if([&](particle& q) {
            c.destroy(&q);
            return false;
        }),
                  0u);
        EXPECT_EQ(c.live(), 400u);
        EXPECT_TRUE(c.check());
        if (strata::test::checks_on) {
            EXPECT_EQ(h.count(), 400u);
        }
        // Once the walk is over, frees work again.
        h.clear();
        for (particle* p : v)
            c.destroy(p);
        EXPECT_TRUE(h.empty());
        EXPECT_EQ(c.live(), 0u);
        EXPECT_TRUE(c.check());
    }
}

struct alignas(16) mortal {
    static inline int destroyed = 0;
    int id = 0;
    int life = 0;
    std::byte pad[40];
    ~mortal() { ++destroyed; }
};

// destroy_if frees exactly the objects its predicate picks, across many slabs, whether freed slabs
// go straight back to the source (max_empty_slabs 0), one is kept (the default) or several are.
TEST(SlabCache, DestroyIfFreesExactlyThePickedObjects) {
    for (const std::size_t keep : {std::size_t{0}, std::size_t{1}, std::size_t{4}}) {
        for (const std::size_t slab : {std::size_t{0}, std::size_t{4096}}) {
            SCOPED_TRACE(testing::Message() << "max_empty_slabs " << keep << ", slab_bytes " << slab);
            strata::heap_source src;
            slab_cache<mortal> c(src, slab_options{slab, 8, keep, false});
            ASSERT_TRUE(c.valid());
            constexpr int n = 10000;
            std::set<int> model;
            for (int i = 0; i < n; ++i) {
                mortal* p = c.create();
                ASSERT_NE(p, nullptr);
                p->id = i;
                p->life = i % 7;
                model.insert(i);
            }
            ASSERT_GT(c.slab_count(), 30u);
            auto expect_model = [&] {
                std::set<int> seen;
                c.for_each_live([&](mortal& m) { EXPECT_TRUE(seen.insert(m.id).second) << m.id; });
                EXPECT_EQ(seen, model);
                EXPECT_EQ(c.live(), model.size());
                EXPECT_TRUE(c.check());
                EXPECT_LE(c.empty_slab_count(), keep);
            };
            mortal::destroyed = 0;
            // Scattered: every third object (every slab goes full -> partial).
            std::size_t freed = c.destroy_if([](const mortal& m) { return m.id % 3 == 0; });
            std::erase_if(model, [](int id) { return id % 3 == 0; });
            EXPECT_EQ(freed, static_cast<std::size_t>(n - static_cast<int>(model.size())));
            EXPECT_EQ(mortal::destroyed, static_cast<int>(freed));
            expect_model();
            // Update and cull in one pass: the predicate may modify the object.
            freed = c.destroy_if([](mortal& m) { return --m.life <= 0; });
            std::size_t culled = 0;
            for (auto it = model.begin(); it != model.end();)
                if (*it % 7 <= 1) {
                    it = model.erase(it);
                    ++culled;
                } else {
                    ++it;
                }
            EXPECT_EQ(freed, culled);
            expect_model();
            // Whole slabs at once: a contiguous range of ids empties slabs (released past the limit).
            const std::size_t slabs_before = c.slab_count();
            freed = c.destroy_if([](const mortal& m) { return m.id >= 1000 && m.id < 4000; });
            culled =
                static_cast<std::size_t>(std::distance(model.lower_bound(1000), model.lower_bound(4000)));
            model.erase(model.lower_bound(1000), model.lower_bound(4000));
            EXPECT_EQ(freed, culled);
            EXPECT_LT(c.slab_count(), slabs_before);
            expect_model();
            // Nothing picked: nothing changes.
            EXPECT_EQ(c.destroy_if([](const mortal&) { return false; }), 0u);
            expect_model();
            // Everything.
            const std::size_t rest = model.size();
            mortal::destroyed = 0;
            EXPECT_EQ(c.destroy_if([](const mortal&) { return true; }), rest);
            EXPECT_EQ(mortal::destroyed, static_cast<int>(rest));
            model.clear();
            expect_model();
            EXPECT_EQ(c.slab_count(), c.empty_slab_count());
            EXPECT_EQ(c.empty_slab_count(), keep) << "the rest went back to the source";
        }
    }
}

// A walk may allocate: objects live throughout are visited exactly once, whatever the new objects
// do to the lists, and destroy_if's predicate may allocate too.
TEST(SlabCache, WalksMayAllocate) {
    strata::heap_source src;
    slab_cache<particle> c(src, slab_options{4096, 8, 0, false});
    std::vector<particle*> spawned;
    int next_id = 0;
    for (int i = 0; i < 500; ++i) {
        particle* p = c.create();
        p->id = next_id++;
    }
    // Free a scattered half so that allocations inside the walk fill partial slabs and move them
    // to the full list while the walk runs.
    EXPECT_EQ(c.destroy_if([](const particle& p) { return p.id % 2 == 1; }), 250u);
    std::set<int> visited;
    c.for_each_live([&](particle& q) {
        if (q.id < 500) {
            EXPECT_TRUE(visited.insert(q.id).second) << "visited twice: " << q.id;
            particle* p = c.create();
            ASSERT_NE(p, nullptr);
            p->id = 1000 + q.id;
        }
    });
    EXPECT_EQ(visited.size(), 250u);
    EXPECT_EQ(c.live(), 500u);
    EXPECT_TRUE(c.check());
    visited.clear();
    const std::size_t freed = c.destroy_if([&](particle& q) {
        if (q.id < 500) {
            EXPECT_TRUE(visited.insert(q.id).second) << "visited twice: " << q.id;
            particle* p = c.create();
            EXPECT_NE(p, nullptr);
            if (p != nullptr) p->id = 2000 + q.id;
            return true;
        }
        return q.id >= 2000 ? false : q.id % 4 == 0;
    });
    EXPECT_EQ(visited.size(), 250u);
    EXPECT_GE(freed, 250u);
    EXPECT_TRUE(c.check());
    std::size_t old = 0;
    c.for_each_live([&](particle& q) { old += q.id < 500 ? 1 : 0; });
    EXPECT_EQ(old, 0u);
    const std::size_t left = c.live();
    EXPECT_EQ(c.destroy_if([](const particle&) { return true; }), left);
    EXPECT_EQ(c.live(), 0u);
    EXPECT_EQ(c.slab_count(), 0u);
    EXPECT_TRUE(c.check());
}

struct picky {
    explicit picky(int v) : value(v) {
        if (v < 0) throw std::invalid_argument("picky");
    }
    int value;
};

TEST(SlabCache, CreateWhoseConstructorThrowsInsideAWalkGivesTheSlotBack) {
    // create() returns the storage before rethrowing, inside a walk too (where the walk refuses
    // the caller's frees): from a partial slab, and from a slab the failed create took from the
    // source (max_empty_slabs 0: it goes straight back).
    for (const std::size_t max_empty : {std::size_t{0}, std::size_t{1}}) {
        strata::heap_source src;
        slab_cache<picky> c(src, slab_options{4096, 8, max_empty, false});
        const std::size_t per_slab = c.objects_per_slab();
        std::vector<picky*> kept;
        for (std::size_t i = 0; i < per_slab; ++i) // one full slab: the partial list is empty
            kept.push_back(c.create(static_cast<int>(i)));
        recording_handler rec;
        const auto throwing_create = [&] { EXPECT_THROW((void)c.create(-1), std::invalid_argument); };
        std::size_t visited = 0;
        c.for_each_live([&](picky&) {
            ++visited;
            throwing_create(); // a fresh slab from the source, emptied again
        });
        EXPECT_EQ(visited, per_slab);
        EXPECT_EQ(c.live(), per_slab);
        EXPECT_EQ(c.slab_count(), max_empty == 0 ? 1u : 2u);
        EXPECT_TRUE(c.check());
        c.destroy(kept.back()); // now a partial slab
        kept.pop_back();
        visited = 0;
        EXPECT_EQ(c.destroy_if([&](const picky&) {
            ++visited;
            throwing_create(); // from the partial slab being walked
            return false;
        }),
                  0u);
        EXPECT_EQ(visited, per_slab - 1);
        EXPECT_EQ(c.live(), per_slab - 1);
        EXPECT_TRUE(c.check());
        EXPECT_EQ(rec.count(), 0u);
        std::size_t live = 0;
        c.for_each_live([&](picky& p) {
            EXPECT_GE(p.value, 0); // no slot without an object is walked
            ++live;
        });
        EXPECT_EQ(live, per_slab - 1);
        for (picky* p : kept)
            c.destroy(p);
        EXPECT_EQ(c.live(), 0u);
        EXPECT_TRUE(c.check());
    }
}

TEST(SlabCache, DestroyIfLeavesTheCacheConsistentWhenThePredicateThrows) {
    strata::heap_source src;
    slab_cache<particle> c(src, slab_options{4096, 8, 0, false});
    for (int i = 0; i < 300; ++i)
        c.create()->id = i;
    int calls = 0;
    std::set<int> picked;
    EXPECT_THROW((void)c.destroy_if([&](const particle& p) {
        if (++calls == 200) throw std::runtime_error("stop");
        if (p.id % 4 == 0 || (p.id >= 40 && p.id < 120)) {
            picked.insert(p.id);
            return true;
        }
        return false;
    }),
                 std::runtime_error);
    EXPECT_TRUE(c.check());
    EXPECT_FALSE(picked.empty());
    std::size_t live = 0;
    c.for_each_live([&](particle& p) {
        ++live;
        EXPECT_EQ(picked.count(p.id), 0u) << "picked before the throw, so freed: " << p.id;
    });
    EXPECT_EQ(live, 300u - picked.size());
    EXPECT_EQ(live, c.live());
    // A walk after the throw is not refused (the walk depth went back down).
    EXPECT_EQ(c.destroy_if([](const particle&) { return true; }), live);
    EXPECT_EQ(c.live(), 0u);
    EXPECT_TRUE(c.check());
}

TEST(SlabCache, DeallocateIfIsTheRawAndCachingCounterpart) {
    strata::heap_source src;
    counted::constructed = counted::destroyed = 0;
    {
        slab_cache<counted> c(src, slab_options{4096, 8, 0, true});
        std::vector<counted*> v;
        for (int i = 0; i < 200; ++i) {
            counted* p = c.allocate();
            p->state = i;
            v.push_back(p);
        }
        const int constructed = counted::constructed;
        // Caching mode: the predicate restores the constructed state of what it frees.
        EXPECT_EQ(c.deallocate_if([](counted& q) {
            if (q.state % 2 != 0) return false;
            q.state = 42;
            return true;
        }),
                  100u);
        EXPECT_EQ(counted::destroyed, 0) << "no ~T() while the slabs stay";
        EXPECT_EQ(c.live(), 100u);
        EXPECT_TRUE(c.check());
        // destroy_if in caching mode frees without ~T(), as destroy() does, and says so.
        recording_handler h;
        EXPECT_EQ(c.destroy_if([](counted& q) {
            q.state = 42;
            return true;
        }),
                  100u);
        if (strata::test::checks_on) {
            EXPECT_TRUE(h.saw_one(violation_kind::invalid_argument));
        }
        EXPECT_EQ(c.live(), 0u);
        EXPECT_EQ(c.slab_count(), 0u);
        EXPECT_EQ(counted::destroyed, constructed) << "~T() ran once, when each slab was released";
        EXPECT_TRUE(c.check());
    }
    // Raw mode: storage only, the caller ran (or never needed) ~T().
    slab_cache<particle> raw(src);
    for (int i = 0; i < 10; ++i)
        (void)raw.allocate();
    EXPECT_EQ(raw.deallocate_if([](particle&) { return true; }), 10u);
    EXPECT_EQ(raw.live(), 0u);
    EXPECT_TRUE(raw.check());
}

TEST(SlabCache, ObjectCachingConstructsOncePerSlabLifetime) {
    strata::heap_source src;
    counted::constructed = counted::destroyed = 0;
    {
        slab_cache<counted> c(src, slab_options{4096, 8, 1, true});
        ASSERT_TRUE(c.valid());
        const int n = static_cast<int>(c.objects_per_slab());
        counted* a = c.allocate();
        EXPECT_EQ(counted::constructed, n) << "the whole slab is constructed when it is created";
        EXPECT_EQ(a->state, 42);
        a->state = 7; // the caller must restore the constructed state before freeing; here it does not
        c.deallocate(a);
        counted* b = c.allocate();
        EXPECT_EQ(b, a);
        EXPECT_EQ(b->state, 7) << "objects come back as they were left, no constructor call";
        EXPECT_EQ(counted::constructed, n);
        EXPECT_EQ(counted::destroyed, 0);
        // create() and destroy() are for plain mode: create() is refused, destroy() frees without
        // ~T() (the slab destroys its objects when released; a second ~T() would be a double one).
        recording_handler h;
        EXPECT_EQ(c.create(), nullptr);
        if (strata::test::checks_on) {
            EXPECT_TRUE(h.saw_one(violation_kind::invalid_argument));
        }
        h.clear();
        c.destroy(b);
        EXPECT_EQ(counted::destroyed, 0);
        EXPECT_EQ(c.live(), 0u);
        if (strata::test::checks_on) {
            EXPECT_TRUE(h.saw_one(violation_kind::invalid_argument));
        }
        EXPECT_TRUE(c.check());
    }
    EXPECT_EQ(counted::destroyed, counted::constructed) << "destructors run when slabs are released";
}

struct not_default {
    explicit not_default(int) {}
};

TEST(SlabCache, InvalidOptionsGiveAnInvalidCache) {
    strata::heap_source src;
    slab_cache<particle> odd(src, slab_options{5000, 8, 1, false});
    EXPECT_FALSE(odd.valid());
    EXPECT_EQ(odd.allocate(), nullptr);
    slab_cache<particle> tiny(src, slab_options{64, 8, 1, false});
    EXPECT_FALSE(tiny.valid());
    EXPECT_EQ(tiny.allocate(), nullptr);
    slab_cache<not_default> caching(src, slab_options{4096, 8, 1, true});
    EXPECT_FALSE(caching.valid());
    EXPECT_TRUE(odd.check());
}

// The slab size is capped at max_slab_bytes (1 GiB): a larger power of two is invalid, and so is
// slab_bytes 0 with a min_objects that not even a 1 GiB slab holds (rather than a cache that quietly
// holds fewer per slab than asked for). Constructing takes no memory: slabs come on allocate().
TEST(SlabCache, SlabSizeIsCappedAtOneGibibyte) {
    static_assert(slab_cache<particle>::max_slab_bytes == std::size_t{1} << 30);
    strata::heap_source src;
    const slab_cache<particle> largest(src, slab_options{std::size_t{1} << 30, 8, 1, false});
    ASSERT_TRUE(largest.valid());
    EXPECT_EQ(largest.slab_bytes(), std::size_t{1} << 30);
    const std::size_t most = largest.objects_per_slab();
    EXPECT_GT(most, (std::size_t{1} << 30) / 101); // 96 bytes + a 4-byte stack entry + a bit each
    const slab_cache<particle> too_large(src, slab_options{std::size_t{1} << 31, 8, 1, false});
    EXPECT_FALSE(too_large.valid());
    const slab_cache<particle> fits(src, slab_options{0, most, 1, false});
    ASSERT_TRUE(fits.valid());
    EXPECT_EQ(fits.slab_bytes(), std::size_t{1} << 30);
    EXPECT_GE(fits.objects_per_slab(), most);
    slab_cache<particle> unmet(src, slab_options{0, most + 1, 1, false});
    EXPECT_FALSE(unmet.valid());
    EXPECT_EQ(unmet.allocate(), nullptr);
    const slab_cache<particle> absurd(src, slab_options{0, std::size_t{1} << 40, 1, false});
    EXPECT_FALSE(absurd.valid());
    // min_objects 0 counts as 1: the default 16 KiB slab.
    const slab_cache<particle> zero(src, slab_options{0, 0, 1, false});
    EXPECT_EQ(zero.slab_bytes(), 16384u);
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

TEST(SlabCache, BigObjectsGetBiggerSlabs) {
    struct big {
        std::byte b[5000];
    };
    strata::heap_source src;
    slab_cache<big> c(src);
    EXPECT_GE(c.objects_per_slab(), 8u);
    EXPECT_EQ(c.slab_bytes(), 65536u);
    c.deallocate(c.allocate());
}

TEST(SlabCache, ContractAllocateChecksSizeAndAlignment) {
    strata::heap_source src;
    slab_cache<particle> c(src);
    EXPECT_EQ(c.allocate(97, 16), nullptr);
    EXPECT_EQ(c.allocate(96, 32), nullptr); // other bad input: tests/contract
    void* p = c.allocate(96, 16);
    ASSERT_NE(p, nullptr);
    c.deallocate(p, 96, 16);
    EXPECT_EQ(c.live(), 0u);
}

TEST(SlabCache, StatsAccounting) {
    strata::heap_source src;
    slab_cache<particle> c(src);
    particle* a = c.allocate();
    particle* b = c.allocate();
    c.deallocate(a);
    const strata::stats s = c.stats();
    EXPECT_EQ(s.in_use, 96u);
    EXPECT_EQ(s.peak, 192u);
    EXPECT_EQ(s.capacity, c.slab_bytes());
    EXPECT_EQ(s.live_allocations, 1u);
    EXPECT_EQ(s.total_allocations, 2u);
    EXPECT_EQ(s.largest_free_block, 96u);
    c.deallocate(b);
}

TEST(SlabCache, SourceExhaustionReturnsNull) {
    struct refusing {
        strata::memory_block allocate_block(std::size_t, std::size_t) noexcept { return {}; }
        void deallocate_block(strata::memory_block) noexcept {}
    } src;
    slab_cache<particle> c(src);
    EXPECT_EQ(c.allocate(), nullptr);
    EXPECT_TRUE(c.check());
}

TEST(SlabCacheChecks, DoubleFreeForeignAndMiddlePointersAreReported) {
    STRATA_REQUIRE_CHECKS(1);
    recording_handler h;
    strata::heap_source src;
    slab_cache<particle> c(src);
    particle* a = c.allocate();
    particle* b = c.allocate();
    c.deallocate(a);
    c.deallocate(a);
    EXPECT_TRUE(h.saw_one(violation_kind::double_free));
    h.clear();
    particle outside{};
    c.deallocate(&outside);
    EXPECT_TRUE(h.saw_one(violation_kind::foreign_pointer));
    h.clear();
    c.deallocate(reinterpret_cast<particle*>(reinterpret_cast<std::byte*>(b) + 8));
    EXPECT_TRUE(h.saw_one(violation_kind::foreign_pointer));
    h.clear();
    // The slab header area is inside the slab but is not an object.
    c.deallocate(reinterpret_cast<particle*>(reinterpret_cast<std::uintptr_t>(b) & ~std::uintptr_t{16383}));
    EXPECT_TRUE(h.saw_one(violation_kind::foreign_pointer));
    EXPECT_EQ(c.live(), 1u);
    EXPECT_TRUE(c.check());
    c.deallocate(b);
}

TEST(SlabCacheChecks, DestroyedWithLiveObjectsIsALeak) {
    STRATA_REQUIRE_CHECKS(1);
    recording_handler h;
    strata::heap_source src;
    {
        slab_cache<particle> c(src);
        (void)c.allocate();
        (void)c.allocate();
        (void)c.allocate();
    }
    EXPECT_TRUE(h.saw_one(violation_kind::leak));
    EXPECT_NE(h.last().message.find("with 3 live objects"), std::string::npos) << h.last().message;
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

#if STRATA_ASAN
TEST(SlabCacheAsan, FreedObjectsArePoisoned) {
    strata::heap_source src;
    slab_cache<particle> c(src);
    particle* a = c.allocate();
    particle* b = c.allocate();
    EXPECT_TRUE(__asan_address_is_poisoned(b + 1));
    c.deallocate(a);
    EXPECT_TRUE(__asan_address_is_poisoned(a));
    c.deallocate(b);
}
#endif

TEST(SlabCacheRandomized, MillionOpsAgainstTheReferenceModel) {
    strata::heap_source src;
    slab_cache<particle> c(src, slab_options{4096, 8, 1, false});
    strata::test::reference_model model;
    std::vector<particle*> live;
    std::mt19937_64 rng(0x51AB);
    constexpr std::size_t ops = 1'000'000;
    for (std::size_t i = 0; i < ops; ++i) {
        // Phases that grow and shrink the live set, so slabs cycle through every list.
        const std::size_t target = (i / 50'000) % 2 == 0 ? 3000 : 200;
        const bool alloc = live.empty() || (live.size() < target ? rng() % 100 < 70 : rng() % 100 < 30);
        if (alloc) {
            particle* p = c.allocate();
            ASSERT_NE(p, nullptr);
            model.add(p, sizeof(particle), alignof(particle));
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
    EXPECT_EQ(c.live(), live.size());
    ASSERT_TRUE(c.check());
    std::size_t visited = 0;
    c.for_each_live([&](particle&) { ++visited; });
    EXPECT_EQ(visited, live.size());
    for (particle* p : live) {
        model.remove(p);
        c.deallocate(p);
    }
    EXPECT_TRUE(c.check());
    EXPECT_LE(c.slab_count(), 1u);
}

} // namespace
