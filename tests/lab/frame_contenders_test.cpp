// The frame contenders (tools/lab/core/frame_contenders.hpp) on the frame_scratch workload: every
// block aligned as asked and disjoint from the others live in its frame.
#include "frame_contenders.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace {

using namespace strata::lab;

/// Replays `w` through a fresh A; counts null, misaligned and overlapping blocks within a frame.
template <class A>
void expect_aligned_and_disjoint(const op_workload& w) {
    ASSERT_TRUE(A::applies(w));
    A a(w);
    std::vector<void*> ptr(w.slots, nullptr);
    std::vector<std::uint64_t> size(w.slots, 0);
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> frame; // [begin, end) of this frame's blocks
    std::uint64_t null = 0, misaligned = 0, overlapping = 0;
    for (const op& o : w.ops) {
        if (o.kind == op_kind::allocate) {
            void* p = a.allocate(o.size, std::size_t{1} << o.log2_align);
            ptr[o.slot] = p;
            size[o.slot] = o.size;
            if (p == nullptr) {
                ++null;
                continue;
            }
            const auto at = reinterpret_cast<std::uintptr_t>(p);
            if (at % (std::uintptr_t{1} << o.log2_align) != 0) ++misaligned;
            frame.emplace_back(at, at + o.size);
        } else if (o.kind == op_kind::free) {
            a.deallocate(ptr[o.slot], size[o.slot], 0);
        } else if (o.kind == op_kind::frame) {
            std::sort(frame.begin(), frame.end());
            for (std::size_t i = 1; i < frame.size(); ++i)
                overlapping += frame[i].first < frame[i - 1].second ? 1 : 0;
            frame.clear();
            if constexpr (requires { a.end_frame(); }) a.end_frame();
        }
    }
    EXPECT_EQ(null, 0u);
    EXPECT_EQ(misaligned, 0u);
    EXPECT_EQ(overlapping, 0u);
}

TEST(FrameContenders, ServeAlignedDisjointBlocksOnFrameScratch) {
    const op_workload w = gen::frame_scratch(0.02, 7);
    expect_aligned_and_disjoint<pmr_monotonic_replay>(w);
    expect_aligned_and_disjoint<buffer_frame_replay<strata::arena>>(w);
    expect_aligned_and_disjoint<buffer_frame_replay<strata::double_stack>>(w);
    expect_aligned_and_disjoint<frame2_replay>(w);
    expect_aligned_and_disjoint<tracked_arena_replay>(w);
    expect_aligned_and_disjoint<debug_arena_replay>(w);
    expect_aligned_and_disjoint<locked_arena_replay>(w);
    expect_aligned_and_disjoint<slab_classes_replay>(w);
}

TEST(FrameContenders, ApplyOnlyToFrameScopedWorkloads) {
    const op_workload particles = gen::particle_churn(0.02, 7);
    ASSERT_FALSE(particles.frame_scoped);
    EXPECT_FALSE(pmr_monotonic_replay::applies(particles));
    EXPECT_FALSE(buffer_frame_replay<strata::arena>::applies(particles));
    EXPECT_FALSE(frame2_replay::applies(particles));
    EXPECT_TRUE(slab_classes_replay::applies(particles)); // 96 B blocks fit the 128 B class
}

} // namespace
