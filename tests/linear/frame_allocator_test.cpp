// Tests of strata::frame_allocator<N>: N arenas used round-robin, one per frame.
#include "strata/linear/frame_allocator.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/poison.hpp"
#include "strata/source/heap_source.hpp"

#include "support/linear_test_util.hpp"
#include "support/recording_handler.hpp"

namespace {

using strata::test::aligned_buffer;
using strata::test::all_bytes;
using strata::test::fill_pattern;
using strata::test::holds_pattern;

template <class T>
class FrameAllocator : public ::testing::Test {};

using frame_counts =
    ::testing::Types<std::integral_constant<std::size_t, 2>, std::integral_constant<std::size_t, 3>>;
TYPED_TEST_SUITE(FrameAllocator, frame_counts);

template <std::size_t N>
strata::stats sum_of_frames(const strata::frame_allocator<N>& f) {
    strata::stats s;
    for (std::size_t age = 0; age < N; ++age) {
        const strata::stats t = f.frame(age).stats();
        s.in_use += t.in_use;
        s.peak += t.peak;
        s.capacity += t.capacity;
        s.live_allocations += t.live_allocations;
        s.total_allocations += t.total_allocations;
    }
    s.largest_free_block = f.frame(0).remaining();
    return s;
}

TYPED_TEST(FrameAllocator, FrameNumberCountsStartedFrames) {
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(N * 4096);
    strata::frame_allocator<N> f(buf.span());
    EXPECT_EQ(f.frame_number(), 0u);
    for (std::size_t k = 1; k <= 10; ++k) {
        f.next_frame();
        EXPECT_EQ(f.frame_number(), k);
    }
    EXPECT_EQ(&f.current(), &f.frame(0));
}

TYPED_TEST(FrameAllocator, BufferConstructorSplitsIntoNAlignedSlices) {
    constexpr std::size_t N = TypeParam::value;
    constexpr std::size_t size = 3 * 4096 + 200;
    aligned_buffer buf(size + 8);
    const std::span<std::byte> span = buf.span(8, size); // misaligned by 8: 56 bytes are skipped
    const std::size_t each = (size - 56) / N / 64 * 64;
    strata::frame_allocator<N> f(span);
    for (std::size_t age = 0; age < N; ++age)
        EXPECT_EQ(f.frame(age).capacity(), each) << "age " << age;
    EXPECT_EQ(f.stats().capacity, N * each);
    for (std::size_t k = 0; k < N; ++k) {
        void* p = f.allocate(each, 1); // the whole slice
        ASSERT_NE(p, nullptr) << "frame " << k;
        EXPECT_EQ(p, buf.data() + 64 + k * each)
            << "slice " << k << " starts 64-aligned, right after the previous one";
        EXPECT_TRUE(strata::test::aligned_to(p, 64));
        std::memset(p, static_cast<int>(k), each);
        EXPECT_EQ(f.allocate(1, 1), nullptr) << "the slice is full";
        f.next_frame();
    }
    // The slices never overlapped: each still holds its own byte (the oldest was just reset).
    for (std::size_t k = 1; k < N; ++k) {
        EXPECT_TRUE(all_bytes(buf.data() + 64 + k * each, each, static_cast<unsigned char>(k)))
            << "slice " << k;
    }
}

TYPED_TEST(FrameAllocator, DataLivesForNFramesThenItsArenaIsReset) {
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(N * 4096);
    strata::frame_allocator<N> f(buf.span());
    struct block {
        void* p;
        std::size_t size;
        unsigned seed;
    };
    std::vector<std::vector<block>> frames;
    constexpr std::size_t sizes[] = {100, 37, 500};
    for (std::size_t k = 0; k < 5 * N; ++k) {
        ASSERT_EQ(f.frame_number(), k);
        std::vector<block> mine;
        for (std::size_t i = 0; i < 3; ++i) {
            void* p = f.allocate(sizes[i], 16);
            ASSERT_NE(p, nullptr);
            const auto seed = static_cast<unsigned>(k * 3 + i);
            fill_pattern(p, sizes[i], seed);
            mine.push_back({p, sizes[i], seed});
        }
        if (k >= N) {
            EXPECT_EQ(mine.front().p, frames[k - N].front().p)
                << "frame " << k << " reuses frame " << k - N << "'s arena";
        }
        frames.push_back(mine);
        // Frames k-N+1 .. k are all intact.
        for (std::size_t j = k + 1 >= N ? k + 1 - N : 0; j <= k; ++j) {
            for (const block& b : frames[j]) {
                EXPECT_TRUE(holds_pattern(b.p, b.size, b.seed)) << "frame " << j << " seen from frame " << k;
            }
            EXPECT_EQ(f.frame(k - j).stats().live_allocations, 3u);
            EXPECT_TRUE(f.owns(frames[j].back().p));
        }
        f.next_frame();
        EXPECT_EQ(f.current().in_use(), 0u) << "frame " << k + 1 << " starts with a reset arena";
        EXPECT_EQ(f.current().stats().live_allocations, 0u);
#if STRATA_CHECKS >= 2 && !STRATA_ASAN
        if (k + 1 >= N) {
            for (const block& b : frames[k + 1 - N]) {
                EXPECT_TRUE(all_bytes(b.p, b.size, strata::fill_freed))
                    << "frame " << k + 1 - N << " released";
            }
        }
#endif
    }
}

TYPED_TEST(FrameAllocator, GrowingFramesReachASteadyState) {
    constexpr std::size_t N = TypeParam::value;
    strata::heap_source src;
    {
        strata::arena_options o;
        o.block_size = 1024;
        strata::frame_allocator<N> f(src, o);
        EXPECT_EQ(src.outstanding_blocks(), 0u);
        std::size_t steady = 0;
        std::vector<std::vector<std::pair<void*, unsigned>>> frames;
        for (std::size_t k = 0; k < N + 10; ++k) {
            std::vector<std::pair<void*, unsigned>> mine;
            for (unsigned i = 0; i < 12; ++i) {
                void* p = f.allocate(300, 16);
                ASSERT_NE(p, nullptr);
                fill_pattern(p, 300, static_cast<unsigned>(k * 100 + i));
                mine.emplace_back(p, static_cast<unsigned>(k * 100 + i));
            }
            frames.push_back(mine);
            for (std::size_t j = k + 1 >= N ? k + 1 - N : 0; j <= k; ++j) {
                for (const auto& [p, seed] : frames[j])
                    EXPECT_TRUE(holds_pattern(p, 300, seed));
            }
            if (k == N - 1) steady = src.outstanding_blocks();
            if (k >= N) {
                EXPECT_EQ(src.outstanding_blocks(), steady) << "frame " << k;
            }
            f.next_frame();
        }
        EXPECT_GT(steady, N);
        EXPECT_EQ(f.stats().capacity, src.outstanding_bytes());
    }
    EXPECT_EQ(src.outstanding_blocks(), 0u);
}

TYPED_TEST(FrameAllocator, StatsSumTheFrames) {
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(N * 4096);
    strata::frame_allocator<N> f(buf.span());
    STRATA_EXPECT_SAME_STATS(f.stats(), (strata::stats{0, 0, N * 4096, 0, 0, 4096}));
    std::size_t total = 0;
    for (std::size_t k = 0; k < 2 * N; ++k) {
        for (std::size_t i = 0; i <= k % 3; ++i) {
            ASSERT_NE(f.allocate(64 * (i + 1), 64), nullptr);
            ++total;
        }
        STRATA_EXPECT_SAME_STATS(f.stats(), sum_of_frames(f));
        EXPECT_EQ(f.stats().total_allocations, total);
        EXPECT_EQ(f.stats().largest_free_block, f.current().remaining());
        f.next_frame();
        STRATA_EXPECT_SAME_STATS(f.stats(), sum_of_frames(f));
    }
}

TYPED_TEST(FrameAllocator, DeallocateUndoesOnlyTheLatestAllocationOfThisFrame) {
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(N * 4096);
    strata::frame_allocator<N> f(buf.span());
    void* old = f.allocate(64, 16);
    f.next_frame();
    void* a = f.allocate(64, 16);
    void* b = f.allocate(32, 16);
    f.deallocate(b, 32, 16);
    EXPECT_EQ(f.current().in_use(), 64u);
    EXPECT_EQ(f.stats().live_allocations, 2u);
    EXPECT_EQ(f.allocate(32, 16), b);
    const strata::stats before = f.stats();
    f.deallocate(a, 64, 16);   // older
    f.deallocate(old, 64, 16); // previous frame's
    STRATA_EXPECT_SAME_STATS(f.stats(), before);
}

TYPED_TEST(FrameAllocator, ExhaustionReturnsNullWithoutStateChange) {
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(N * 4096);
    strata::frame_allocator<N> f(buf.span());
    ASSERT_NE(f.allocate(100, 1), nullptr);
    f.next_frame();
    ASSERT_NE(f.allocate(4000, 1), nullptr);
    const strata::stats before = f.stats();
    // Bad requests are LinearContract's (frame_allocator<2> and <3> among them); here the requests
    // that do not fit what is left of the frame.
    const std::size_t cases[][2] = {{97, 1}, {1, 4096}, {4096, 1}};
    for (const auto& c : cases) {
        EXPECT_EQ(f.allocate(c[0], c[1]), nullptr) << "size " << c[0] << " align " << c[1];
        STRATA_EXPECT_SAME_STATS(f.stats(), before);
    }
    EXPECT_NE(f.allocate(96, 1), nullptr) << "exact fit";
    EXPECT_EQ(f.frame(1).in_use(), 100u) << "the previous frame is untouched";
    f.next_frame(); // frame 2 (N = 2: the arena of frame 0, reset)
    EXPECT_NE(f.allocate(4096, 1), nullptr);
}

TYPED_TEST(FrameAllocator, TooSmallABufferServesNothing) {
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(64 * N - 1);
    strata::frame_allocator<N> f(buf.span());
    STRATA_EXPECT_SAME_STATS(f.stats(), strata::stats{});
    EXPECT_EQ(f.allocate(1, 1), nullptr);
    f.next_frame();
    EXPECT_EQ(f.allocate(1, 1), nullptr);
    EXPECT_EQ(f.frame_number(), 1u);
}

TYPED_TEST(FrameAllocator, OwnsEveryFrameSMemory) {
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(N * 4096);
    strata::frame_allocator<N> f(buf.span());
    std::vector<void*> ps;
    for (std::size_t k = 0; k < N; ++k) {
        ps.push_back(f.allocate(10));
        f.next_frame();
    }
    for (std::size_t k = 1; k < N; ++k)
        EXPECT_TRUE(f.owns(ps[k]));
    EXPECT_TRUE(f.owns(buf.data()));
    EXPECT_TRUE(f.owns(buf.end() - 1));
    EXPECT_FALSE(f.owns(buf.end()));
    int local = 0;
    EXPECT_FALSE(f.owns(&local));
}

#if STRATA_CHECKS >= 2
TYPED_TEST(FrameAllocator, FreshAllocationsRead0xCD) {
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(N * 4096);
    strata::frame_allocator<N> f(buf.span());
    for (std::size_t k = 0; k < 2 * N; ++k) {
        void* p = f.allocate(200, 16);
        EXPECT_TRUE(all_bytes(p, 200, strata::fill_allocated)) << "frame " << k;
        std::memset(p, 0, 200);
        f.next_frame();
    }
}
#endif

#if STRATA_ASAN
TYPED_TEST(FrameAllocator, TouchingMemoryNFramesLaterIsUseAfterPoison) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(N * 4096);
    strata::frame_allocator<N> f(buf.span());
    auto* p = static_cast<volatile unsigned char*>(f.allocate(64, 64));
    p[0] = 1;
    for (std::size_t k = 1; k < N; ++k) {
        f.next_frame();
        EXPECT_EQ(p[0], 1) << "still valid in frame " << k;
    }
    f.next_frame();
    EXPECT_DEATH({ (void)p[0]; }, "use-after-poison");
}
#endif

// A scope opened at the start of a frame holds a marker at position 0, which a reset cannot show
// stale: reusing an arena N frames later refuses every earlier marker, so the scope's rewind frees
// nothing of the new frame.
TYPED_TEST(FrameAllocator, AScopeDoesNotSpanItsArenaSReuse) {
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(N * 1024);
    for (const bool at_start : {true, false}) {
        strata::frame_allocator<N> f(buf.span());
        if (!at_start) {
            ASSERT_NE(f.allocate(64), nullptr);
        }
        void* q = nullptr;
        strata::test::recording_handler rec;
        {
            strata::arena_scope s(f.current());
            for (std::size_t k = 0; k < N; ++k)
                f.next_frame(); // back on the scope's arena, reset for a new frame
            q = f.allocate(300);
            ASSERT_NE(q, nullptr);
            std::memset(q, 0x5A, 300);
        }
        EXPECT_EQ(rec.count(), strata::test::checks_on ? 1u : 0u) << at_start;
        EXPECT_EQ(f.current().in_use(), 300u) << at_start;
        void* r = f.allocate(300);
        ASSERT_NE(r, nullptr);
        EXPECT_NE(r, q) << at_start;
        EXPECT_TRUE(all_bytes(q, 300, 0x5A)) << at_start;
    }
}

// Only the reuse ends a frame's markers: a scope that spans next_frame() calls before its arena
// comes round again rewinds that arena as usual (a marker at 0 stays valid through a plain
// arena::reset() too, see arena_test).
TYPED_TEST(FrameAllocator, AScopeOnAnOlderFrameStillRewindsIt) {
    constexpr std::size_t N = TypeParam::value;
    aligned_buffer buf(N * 1024);
    strata::frame_allocator<N> f(buf.span());
    strata::arena& first = f.current();
    strata::test::recording_handler rec;
    {
        strata::arena_scope s(first);
        ASSERT_NE(f.allocate(100), nullptr);
        for (std::size_t k = 0; k + 1 < N; ++k)
            f.next_frame();
    }
    EXPECT_TRUE(rec.empty());
    EXPECT_EQ(first.in_use(), 0u);
}

TYPED_TEST(FrameAllocator, RandomizedAgainstReferenceModel) {
    constexpr std::size_t N = TypeParam::value;
    constexpr std::size_t slice = 8 * 1024;
    aligned_buffer buf(N * slice);
    strata::frame_allocator<N> f(buf.span());
    std::mt19937_64 rng(0xF00 + N);
    auto pick = [&](std::size_t lo, std::size_t hi) {
        return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
    };
    strata::test::reference_model model;
    struct live_block {
        void* p;
        std::size_t size;
    };
    std::vector<std::vector<live_block>> by_frame(N); // indexed by frame_number % N
    std::size_t successes = 0, failures = 0, frames = 0;
    for (int op = 0; op < 20000; ++op) {
        auto& mine = by_frame[f.frame_number() % N];
        const std::size_t dice = pick(0, 99);
        if (dice < 80) {
            const std::size_t size = pick(1, 512);
            const std::size_t align = std::size_t{1} << pick(0, 8);
            const strata::stats before = f.stats();
            void* p = f.allocate(size, align);
            if (p == nullptr) {
                ++failures;
                STRATA_ASSERT_SAME_STATS(f.stats(), before);
            } else {
                ++successes;
                model.add(p, size, align);
                mine.push_back({p, size});
            }
        } else if (dice < 88) { // undo the latest allocation of this frame
            if (mine.empty()) continue;
            const live_block b = mine.back();
            if (static_cast<std::byte*>(b.p) + b.size != f.current().mark().cur) continue;
            model.remove(b.p);
            mine.pop_back();
            f.deallocate(b.p, b.size, 1);
        } else if (dice < 98) { // next frame: the oldest frame's blocks die
            auto& dying = by_frame[(f.frame_number() + 1) % N];
            for (const live_block& b : dying)
                model.remove(b.p);
            dying.clear();
            f.next_frame();
            ++frames;
        } else {
            model.verify_all();
        }
        if (::testing::Test::HasFatalFailure()) return;
        const strata::stats s = f.stats();
        ASSERT_EQ(s.live_allocations, model.size()) << "op " << op;
        ASSERT_EQ(s.total_allocations, successes) << "op " << op;
        ASSERT_EQ(s.capacity, N * slice);
        ASSERT_EQ(s.largest_free_block, f.current().remaining());
        STRATA_ASSERT_SAME_STATS(s, sum_of_frames(f));
    }
    model.verify_all();
    EXPECT_GT(failures, 0u);
    EXPECT_GT(frames, 1000u);
}

} // namespace
