#include "strata/pool/size_class_pool.hpp"

#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/allocator.hpp"
#include "strata/source/heap_source.hpp"

#include "support/recording_handler.hpp"
#include "support/reference_model.hpp"

namespace {

using strata::size_class_options;
using strata::size_class_pool;
using strata::violation_kind;
using strata::test::recording_handler;

static_assert(strata::owning_allocator<size_class_pool>);

TEST(SizeClassPool, DefaultClassesAreTheDocumentedOnes) {
    strata::heap_source src;
    size_class_pool a(src);
    ASSERT_TRUE(a.valid());
    const std::vector<std::size_t> expect = {16,   32,   48,   64,   80,   96,   112,  128, 160, 192,
                                             224,  256,  320,  384,  448,  512,  640,  768, 896, 1024,
                                             1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096};
    ASSERT_EQ(a.class_count(), expect.size());
    for (std::size_t i = 0; i < expect.size(); ++i)
        EXPECT_EQ(a.class_size(i), expect[i]) << i;
    EXPECT_EQ(a.max_size(), 4096u);
}

// The documented bound (size_class_options): class(s) - s < max(16, s / classes_per_doubling),
// for every size and every spacing. Also: the class is the smallest one that fits.
TEST(SizeClassPool, WorstCaseInternalWasteHoldsForEverySize) {
    strata::heap_source src;
    for (std::size_t per : {1u, 2u, 4u, 8u, 16u}) {
        size_class_pool a(src, size_class_options{std::size_t{64} << 10, per, std::size_t{64} << 10});
        ASSERT_TRUE(a.valid()) << per;
        double worst_ratio = 0;
        for (std::size_t s = 1; s <= a.max_size(); ++s) {
            const std::size_t k = a.class_of(s, 16);
            ASSERT_LT(k, a.class_count());
            const std::size_t c = a.class_size(k);
            ASSERT_GE(c, s);
            if (k > 0) {
                ASSERT_LT(a.class_size(k - 1), s) << "not the smallest class for " << s;
            }
            ASSERT_LT(c - s, a.waste_bound(s)) << "per " << per << " size " << s;
            if (s > 16 * per)
                worst_ratio = std::max(worst_ratio, static_cast<double>(c - s) / static_cast<double>(s));
        }
        EXPECT_LT(worst_ratio, 1.0 / static_cast<double>(per)) << per;
    }
}

// Every size 1..max_size + 1 with every alignment 1..8192 (over 310,000 requests), for the default
// classes and other spacings and limits: served exactly when the size is at most max_size, the
// alignment at most 4096 and the size rounded up to the alignment fits the last class; then
// aligned, from the smallest class that fits. One alignment's blocks are live at once, each
// stamped at both ends, so two blocks sharing bytes would show.
TEST(SizeClassPool, ServesEverySizeAndAlignmentAligned) {
    strata::heap_source src;
    const std::pair<std::size_t, std::size_t> configs[] = {{4096, 4}, {4096, 1}, {4096, 8}, {4096, 16},
                                                           {1000, 4}, {5000, 2}, {17, 4}};
    for (const auto& [max_size, per] : configs) {
        SCOPED_TRACE(testing::Message() << "max_size " << max_size << ", classes_per_doubling " << per);
        size_class_pool a(src, size_class_options{max_size, per, std::size_t{64} << 10});
        ASSERT_TRUE(a.valid());
        const std::size_t last = a.class_size(a.class_count() - 1);
        std::vector<std::pair<unsigned char*, std::size_t>> v;
        v.reserve(a.max_size());
        for (std::size_t align = 1; align <= 2 * size_class_pool::max_alignment; align *= 2) {
            for (std::size_t s = 1; s <= a.max_size() + 1; ++s) {
                void* p = a.allocate(s, align);
                const std::size_t rounded = strata::align_up(s, align).value();
                if (s > a.max_size() || align > size_class_pool::max_alignment || rounded > last) {
                    ASSERT_EQ(p, nullptr) << s << " " << align;
                    continue;
                }
                ASSERT_NE(p, nullptr) << s << " " << align;
                ASSERT_TRUE(strata::is_aligned(p, align)) << s << " " << align;
                const std::size_t k = a.class_of(s, align);
                ASSERT_LT(k, a.class_count());
                ASSERT_GE(a.class_size(k), rounded) << s << " " << align;
                if (k > 0) {
                    ASSERT_LT(a.class_size(k - 1), rounded)
                        << "not the smallest class: " << s << " " << align;
                }
                auto* b = static_cast<unsigned char*>(p);
                b[0] = static_cast<unsigned char>(s);
                b[s - 1] = static_cast<unsigned char>(s >> 4);
                v.emplace_back(b, s);
            }
            for (const auto& [b, s] : v) {
                ASSERT_EQ(b[0], s == 1 ? static_cast<unsigned char>(s >> 4) : static_cast<unsigned char>(s));
                ASSERT_EQ(b[s - 1], static_cast<unsigned char>(s >> 4));
                a.deallocate(b, s, align);
            }
            v.clear();
            ASSERT_EQ(a.stats().live_allocations, 0u) << align;
        }
        EXPECT_TRUE(a.check());
    }
}

// Beyond the largest class, or an alignment above it (other bad input: tests/contract).
TEST(SizeClassPool, RequestsBeyondTheClassesReturnNull) {
    strata::heap_source src;
    size_class_pool a(src);
    EXPECT_EQ(a.allocate(4097, 16), nullptr);
    EXPECT_EQ(a.allocate(16, 8192), nullptr);
    EXPECT_EQ(a.stats().live_allocations, 0u);
    a.deallocate(nullptr, 16, 16);
    a.deallocate(nullptr, 0, 3);
}

// max_size 1000 makes 1024 the last class (aligned to 1024): a small request aligned to 1024 rounds
// to 1024 > max_size, yet that class holds it. One aligned to 2048 fits no class.
TEST(SizeClassPool, AnAlignedRequestPastMaxSizeIsServedByTheLastClassWhenItFits) {
    strata::heap_source src;
    size_class_pool a(src, size_class_options{1000, 4, std::size_t{64} << 10});
    ASSERT_TRUE(a.valid());
    void* p = a.allocate(8, 1024);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(strata::is_aligned(p, 1024));
    void* q = a.allocate(1000, 512);
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(strata::is_aligned(q, 512));
    EXPECT_EQ(a.allocate(8, 2048), nullptr);
    EXPECT_EQ(a.allocate(1001, 1), nullptr); // the size itself still may not pass max_size
    EXPECT_EQ(a.allocate(1001, 1024), nullptr);
    EXPECT_TRUE(a.check());
    a.deallocate(p, 8, 1024);
    a.deallocate(q, 1000, 512);
    EXPECT_EQ(a.stats().live_allocations, 0u);
    EXPECT_TRUE(a.check());

    size_class_pool b(src, size_class_options{4000, 4, std::size_t{64} << 10}); // last class 4096
    void* r = b.allocate(1, 4096);
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(strata::is_aligned(r, 4096));
    b.deallocate(r, 1, 4096);
    EXPECT_TRUE(b.check());
}

TEST(SizeClassPool, InvalidOptionsGiveAnInvalidAllocator) {
    strata::heap_source src;
    for (const size_class_options o : {size_class_options{0, 4, 65536}, size_class_options{1 << 20, 4, 65536},
                                       size_class_options{4096, 3, 65536}, size_class_options{4096, 0, 65536},
                                       size_class_options{4096, 32, 65536}}) {
        size_class_pool a(src, o);
        EXPECT_FALSE(a.valid());
        EXPECT_EQ(a.allocate(16, 16), nullptr);
        EXPECT_TRUE(a.check());
    }
}

TEST(SizeClassPool, SizeInTheSameClassFreesToTheSameClass) {
    strata::heap_source src;
    size_class_pool a(src);
    void* p = a.allocate(100, 16); // class 112
    ASSERT_NE(p, nullptr);
    a.deallocate(p, 112, 16);
    EXPECT_EQ(a.allocate(97, 8), p);
    a.deallocate(p, 97, 8);
}

TEST(SizeClassPool, StatsSumTheClasses) {
    strata::heap_source src;
    size_class_pool a(src);
    void* p = a.allocate(20, 16);  // 32
    void* q = a.allocate(200, 16); // 224
    const strata::stats s = a.stats();
    EXPECT_EQ(s.in_use, 32u + 224u);
    EXPECT_EQ(s.live_allocations, 2u);
#if STRATA_POOL_CHECKED_PATH
    EXPECT_EQ(s.total_allocations, 2u);
#endif
    EXPECT_TRUE(a.owns(p));
    EXPECT_TRUE(a.owns(q));
    int x = 0;
    EXPECT_FALSE(a.owns(&x));
    a.deallocate(p, 20, 16);
    a.deallocate(q, 200, 16);
}

// stats().peak sums the classes' peaks. With counters (checks >= 1 or ASan) each is exact and the
// sum bounds the true peak from above; at checks 0 each is a lower bound and the sum bounds
// nothing (documented): a burst that fit the first chunk leaves it at 0.
TEST(SizeClassPool, StatsPeakIsAnUpperBoundWithCountersOnly) {
    strata::heap_source src;
    size_class_pool a(src);
    std::vector<void*> small, large;
    for (int i = 0; i < 100; ++i)
        small.push_back(a.allocate(16));
    for (int i = 0; i < 50; ++i)
        large.push_back(a.allocate(200)); // class 224
    for (void* p : small)
        a.deallocate(p, 16);
    for (void* p : large)
        a.deallocate(p, 200);
    const std::size_t true_peak = 100 * 16 + 50 * 224;
    const strata::stats s = a.stats();
    EXPECT_EQ(s.in_use, 0u);
#if STRATA_POOL_CHECKED_PATH
    EXPECT_GE(s.peak, true_peak);
#else
    EXPECT_LT(s.peak, true_peak) << "at checks 0 the classes' peaks are lower bounds";
#endif
    EXPECT_TRUE(a.check());
}

TEST(SizeClassPoolChecks, WrongSizeNamingAnotherClassIsReported) {
    STRATA_REQUIRE_CHECKS(1);
    recording_handler h;
    strata::heap_source src;
    size_class_pool a(src);
    void* p = a.allocate(100, 16);
    a.deallocate(p, 1000, 16);
    EXPECT_TRUE(h.saw_one(violation_kind::foreign_pointer));
    EXPECT_TRUE(a.check());
    a.deallocate(p, 100, 16);
    EXPECT_EQ(a.stats().live_allocations, 0u);
}

TEST(SizeClassPool, AMovedFromPoolIsInvalid) {
    strata::heap_source src;
    size_class_pool a(src);
    void* p = a.allocate(32);
    ASSERT_NE(p, nullptr);
    size_class_pool b(std::move(a));
    EXPECT_FALSE(a.valid()); // NOLINT(bugprone-use-after-move): the moved-from state is the point
    EXPECT_EQ(a.allocate(32), nullptr);
    EXPECT_EQ(a.allocate(32, 64), nullptr);
    EXPECT_TRUE(b.valid());
    b.deallocate(p, 32);
    size_class_pool c(src);
    c = std::move(b);
    EXPECT_FALSE(b.valid()); // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(b.allocate(100), nullptr);
    void* q = c.allocate(100);
    ASSERT_NE(q, nullptr);
    c.deallocate(q, 100);
    EXPECT_EQ(c.stats().live_allocations, 0u);
}

TEST(SizeClassPoolChecks, AFreeNoClassServesIsReportedAndFreesNothing) {
    // The same answer at every checks level: nothing freed (reported at checks >= 1).
    recording_handler h;
    strata::heap_source src;
    size_class_pool a(src);
    void* p = a.allocate(64, 16);
    ASSERT_NE(p, nullptr);
    a.deallocate(p, 64, 8192); // no class serves 8 KiB alignment
    a.deallocate(p, 0, 16);    // nor size 0
    EXPECT_EQ(a.stats().live_allocations, 1u);
    if (strata::test::checks_on) {
        EXPECT_EQ(h.count(), 2u);
        for (const auto& v : h.all())
            EXPECT_EQ(v.kind, violation_kind::size_mismatch);
    }
    a.deallocate(p, 64, 16);
    EXPECT_EQ(a.stats().live_allocations, 0u);
}

TEST(SizeClassPoolChecks, DoubleFreeAndForeignPointerAreReported) {
    STRATA_REQUIRE_CHECKS(1);
    recording_handler h;
    strata::heap_source src;
    size_class_pool a(src);
    void* p = a.allocate(64, 16);
    a.deallocate(p, 64, 16);
    a.deallocate(p, 64, 16);
    EXPECT_TRUE(h.saw_one(violation_kind::double_free));
    h.clear();
    alignas(16) char local[64];
    a.deallocate(local, 64, 16);
    EXPECT_TRUE(h.saw_one(violation_kind::foreign_pointer));
    h.clear();
    void* q = a.allocate(64, 16);
    a.deallocate(q, 5000, 16); // no class serves 5000: reported through the owning class
    EXPECT_TRUE(h.saw_one(violation_kind::size_mismatch));
    a.deallocate(q, 64, 16);
    EXPECT_TRUE(a.check());
}

TEST(SizeClassPoolRandomized, MillionOpsAgainstTheReferenceModel) {
    strata::heap_source src;
    size_class_pool a(src, size_class_options{1024, 4, 16 << 10});
    strata::test::reference_model model;
    struct block {
        void* p;
        std::size_t size;
        std::size_t align;
    };
    std::vector<block> live;
    std::mt19937_64 rng(0x5C1A55);
    constexpr std::size_t ops = 1'000'000;
    for (std::size_t i = 0; i < ops; ++i) {
        if (live.empty() || (live.size() < 2000 && rng() % 2 == 0)) {
            const std::size_t size = 1 + rng() % 200;
            const std::size_t align = std::size_t{1} << (rng() % 7);
            void* p = a.allocate(size, align);
            ASSERT_NE(p, nullptr);
            model.add(p, size, align);
            live.push_back({p, size, align});
        } else {
            const std::size_t k = rng() % live.size();
            model.remove(live[k].p);
            a.deallocate(live[k].p, live[k].size, live[k].align);
            live[k] = live.back();
            live.pop_back();
        }
        if (i % 200'000 == 0) {
            ASSERT_TRUE(a.check()) << i;
        }
    }
    ASSERT_TRUE(a.check());
    for (const block& b : live) {
        model.remove(b.p);
        a.deallocate(b.p, b.size, b.align);
    }
    EXPECT_EQ(a.stats().live_allocations, 0u);
    EXPECT_TRUE(a.check());
}

} // namespace
