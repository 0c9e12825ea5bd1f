#pragma once
// A randomized run for allocators that take frees in any order, sized or unsized (the composing
// adapters): random allocations and frees checked against reference_model, then everything freed.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "support/reference_model.hpp"

namespace strata::test {

/// Effects: `ops` calls on `a`, 55% allocations of 1..max_size bytes at alignments 1..128, the rest
/// frees of a random live block, sized or unsized at random; `served(p, size)` runs after each
/// allocation (it asserts which side served it). Every block keeps its contents and alignment
/// (reference_model), and the blocks still live at the end are freed with their size.
/// Requires: the caller checks HasFatalFailure() afterwards.
template <class A, class Served>
void any_order_run(A& a, std::uint64_t seed, std::size_t max_size, Served served, int ops = 20000) {
    reference_model model;
    struct live_block {
        void* p;
        std::size_t size;
        std::size_t align;
    };
    std::vector<live_block> live;
    std::mt19937_64 rng(seed);
    for (int op = 0; op < ops; ++op) {
        if (live.empty() || rng() % 100 < 55) {
            const std::size_t size = 1 + rng() % max_size;
            const std::size_t align = std::size_t{1} << (rng() % 8);
            void* p = a.allocate(size, align);
            ASSERT_NE(p, nullptr);
            served(p, size);
            model.add(p, size, align);
            if (::testing::Test::HasFatalFailure()) return;
            live.push_back({p, size, align});
        } else {
            const std::size_t i = rng() % live.size();
            model.remove(live[i].p);
            if (rng() % 2 == 0) {
                a.deallocate(live[i].p, live[i].size, live[i].align);
            } else {
                a.deallocate(live[i].p);
            }
            live[i] = live.back();
            live.pop_back();
        }
        if (op % 4096 == 0) model.verify_all();
    }
    model.verify_all();
    for (const live_block& b : live)
        a.deallocate(b.p, b.size, b.align);
}

} // namespace strata::test
