// strata::arena in long seeded randomized runs against a reference model (no overlap, alignment,
// contents preserved, markers and rewinds), over a fixed buffer, heap_source, a flaky source and
// virtual_memory_source.
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

// ---------------------------------------------------------------------------------------------
// Randomized against the reference model
// ---------------------------------------------------------------------------------------------

struct live_block {
    void* p;
    std::size_t size;
};

struct saved_marker {
    arena::marker m;
    std::size_t live;
    std::size_t in_use;
};

/// Runs `ops` random operations on `a` and checks it against the reference model. `base` is the
/// start of the fixed buffer (nullptr for growing arenas, where in_use is checked less exactly);
/// `invariant` is called after every operation with the arena.
template <class Invariant>
void run_random_arena(arena& a, std::byte* base, std::uint64_t seed, int ops, Invariant&& invariant) {
    std::mt19937_64 rng(seed);
    auto pick = [&](std::size_t lo, std::size_t hi) {
        return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
    };
    strata::test::reference_model model;
    std::vector<live_block> lifo; // live allocations, oldest first
    std::vector<saved_marker> markers;
    std::size_t successes = a.stats().total_allocations;
    std::size_t max_in_use = a.stats().peak;
    std::size_t failures = 0, rewinds = 0, gives = 0, stale_tries = 0;

    // Markers the top went below are stale, and stay so when later allocations lift the top above
    // them again: rewinding to one must change nothing. Frees are recorded at checks >= 1 only.
    std::vector<saved_marker> stale;
    auto drop_markers_above = [&](std::size_t in_use, bool record) {
        while (!markers.empty() && markers.back().in_use > in_use) {
            if (record) stale.push_back(markers.back());
            markers.pop_back();
        }
    };
    auto try_stale = [&](int op) {
        if (stale.empty() || pick(0, 2) != 0) {
            stale.clear();
            return;
        }
        const saved_marker sm = stale[pick(0, stale.size() - 1)];
        stale.clear();
        if (a.in_use() <= sm.in_use) { // lift the top past it, as later frame work would
            const std::size_t size = sm.in_use - a.in_use() + pick(1, 64);
            void* p = a.allocate(size, 1);
            if (p == nullptr) return;
            ++successes;
            model.add(p, size, 1);
            lifo.push_back({p, size});
        }
        const arena_state before = state_of(a);
        strata::test::recording_handler rec;
        a.rewind(sm.m);
        ++stale_tries;
        ASSERT_TRUE(unchanged(a, before)) << "op " << op;
        ASSERT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u) << "op " << op;
    };

    for (int op = 0; op < ops; ++op) {
        const std::size_t dice = pick(0, 99);
        if (dice < 55) { // allocate
            const std::size_t size = pick(1, 512);
            const std::size_t align = std::size_t{1} << pick(0, 8);
            const arena_state before = state_of(a);
            void* p = a.allocate(size, align);
            if (p == nullptr) {
                ++failures;
                ASSERT_TRUE(unchanged(a, before)) << "op " << op;
            } else {
                ++successes;
                model.add(p, size, align);
                if (::testing::Test::HasFatalFailure()) return;
                lifo.push_back({p, size});
                ASSERT_TRUE(a.owns(p));
            }
        } else if (dice < 65) { // deallocate the latest
            if (lifo.empty()) continue;
            const live_block b = lifo.back();
            const bool at_top = static_cast<std::byte*>(b.p) + b.size == a.mark().cur;
            const arena_state before = state_of(a);
            model.remove(b.p); // verifies the contents first
            a.deallocate(b.p, b.size, 1);
            if (at_top) {
                ++gives;
                lifo.pop_back();
                ASSERT_EQ(a.in_use(), before.s.in_use - b.size) << "op " << op;
                drop_markers_above(a.in_use(), strata::test::checks_on);
                try_stale(op);
            } else {
                ASSERT_TRUE(unchanged(a, before)) << "op " << op;
                model.add(b.p, b.size, 1); // still live: refill under a new id
            }
        } else if (dice < 70) { // deallocate an older one: nothing happens
            if (lifo.size() < 2) continue;
            const live_block b = lifo[pick(0, lifo.size() - 2)];
            if (static_cast<std::byte*>(b.p) + b.size == a.mark().cur) continue;
            const arena_state before = state_of(a);
            a.deallocate(b.p, b.size, 1);
            ASSERT_TRUE(unchanged(a, before)) << "op " << op;
        } else if (dice < 80) { // mark
            markers.push_back({a.mark(), lifo.size(), a.in_use()});
        } else if (dice < 88) { // rewind, mostly to one of the latest markers
            if (markers.empty()) continue;
            const std::size_t back = pick(0, 9) == 0 ? pick(0, markers.size() - 1)
                                                     : std::min<std::size_t>(pick(0, 2), markers.size() - 1);
            const std::size_t i = markers.size() - 1 - back;
            const saved_marker sm = markers[i];
            while (lifo.size() > sm.live) {
                model.remove(lifo.back().p);
                lifo.pop_back();
            }
            a.rewind(sm.m);
            ++rewinds;
            drop_markers_above(sm.in_use, true);
            markers.resize(i + 1);
            ASSERT_EQ(a.in_use(), sm.in_use) << "op " << op;
            ASSERT_EQ(a.mark().cur, sm.m.cur) << "op " << op;
            try_stale(op);
        } else if (dice < 89 && pick(0, 3) == 0) { // reset
            model.verify_all();
            model.clear();
            lifo.clear();
            drop_markers_above(0, true);
            markers.clear();
            a.reset();
            ASSERT_EQ(a.in_use(), 0u);
            try_stale(op);
        } else if (dice < 91) {
            model.verify_all();
        } else { // a burst of small allocations
            for (int k = 0; k < 8; ++k) {
                const std::size_t size = pick(1, 64);
                void* p = a.allocate(size, 1);
                if (p == nullptr) break;
                ++successes;
                model.add(p, size, 1);
                lifo.push_back({p, size});
            }
        }
        if (::testing::Test::HasFatalFailure()) return;

        const strata::stats s = a.stats();
        max_in_use = std::max(max_in_use, s.in_use);
        ASSERT_EQ(s.live_allocations, model.size()) << "op " << op;
        ASSERT_EQ(s.live_allocations, lifo.size()) << "op " << op;
        ASSERT_EQ(s.total_allocations, successes) << "op " << op;
        ASSERT_EQ(s.peak, max_in_use) << "op " << op;
        ASSERT_EQ(s.largest_free_block, a.remaining()) << "op " << op;
        ASSERT_LE(s.in_use, s.capacity) << "op " << op;
        if (base != nullptr) {
            ASSERT_EQ(s.in_use, static_cast<std::size_t>(a.mark().cur - base)) << "op " << op;
        }
        invariant(a);
        if (::testing::Test::HasFatalFailure()) return;
    }
    model.verify_all();
    EXPECT_GT(failures, 0u) << "the sequence should reach exhaustion";
    EXPECT_GT(rewinds, 100u);
    EXPECT_GT(gives, 100u);
    EXPECT_GT(stale_tries, 50u);
}

TEST(ArenaRandom, FixedBufferAgainstReferenceModel) {
    constexpr std::size_t cap = 16 * 1024;
    aligned_buffer buf(cap);
    arena a(buf.span());
    run_random_arena(a, buf.data(), 0xA11CE, 20000, [&](const arena& ar) {
        ASSERT_EQ(ar.capacity(), cap);
        ASSERT_EQ(strata::test::total_size(extents_of(ar)), cap);
        ASSERT_EQ(strata::test::used_size(extents_of(ar)), ar.in_use());
    });
}

TEST(ArenaRandom, HeapSourceAgainstReferenceModel) {
    strata::heap_source src;
    arena_options o = small_blocks(4096, std::size_t{16} << 10);
    o.max_capacity = std::size_t{20} << 10;
    {
        arena a(src, o);
        run_random_arena(a, nullptr, 0xB0B, 20000, [&](const arena& ar) {
            ASSERT_EQ(src.outstanding_blocks(), ar.block_count());
            ASSERT_EQ(src.outstanding_bytes(), ar.capacity());
            ASSERT_LE(ar.capacity(), o.max_capacity);
        });
    }
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

TEST(ArenaRandom, HeapSourceReleaseExtraAgainstReferenceModel) {
    strata::heap_source src;
    arena_options o = small_blocks(2048, std::size_t{8} << 10, arena_reset::release_extra);
    o.max_capacity = std::size_t{24} << 10;
    {
        arena a(src, o);
        run_random_arena(a, nullptr, 0xC0FFEE, 20000, [&](const arena& ar) {
            ASSERT_EQ(src.outstanding_blocks(), ar.block_count());
            ASSERT_EQ(src.outstanding_bytes(), ar.capacity());
        });
    }
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

// A source that refuses about a third of its calls at random: growth steps fall back and back off,
// and failed allocations must change nothing (the harness checks both against the model).
TEST(ArenaRandom, FlakySourceAgainstReferenceModel) {
    struct flaky_source {
        strata::heap_source heap;
        std::mt19937_64 rng{0xF1A4};
        strata::memory_block allocate_block(std::size_t size, std::size_t align) noexcept {
            if (rng() % 3 == 0) return {};
            return heap.allocate_block(size, align);
        }
        void deallocate_block(strata::memory_block b) noexcept { heap.deallocate_block(b); }
    } src;
    arena_options o = small_blocks(1024, std::size_t{16} << 10, arena_reset::release_extra);
    o.max_capacity = std::size_t{24} << 10;
    {
        arena a(src, o);
        run_random_arena(a, nullptr, 0xF1A4, 20000, [&](const arena& ar) {
            ASSERT_EQ(src.heap.outstanding_blocks(), ar.block_count());
            ASSERT_EQ(src.heap.outstanding_bytes(), ar.capacity());
            ASSERT_LE(ar.capacity(), o.max_capacity);
        });
    }
    EXPECT_EQ(src.heap.outstanding_blocks(), 0u);
}

TEST(ArenaRandom, VirtualMemorySourceAgainstReferenceModel) {
    strata::virtual_memory_source src(std::size_t{40} << 10);
    {
        arena a(src, small_blocks(4096, std::size_t{16} << 10));
        run_random_arena(a, nullptr, 0xD00D, 20000,
                         [&](const arena& ar) { ASSERT_EQ(src.committed_bytes(), ar.capacity()); });
    }
    EXPECT_EQ(src.committed_bytes(), 0u);
}

} // namespace
