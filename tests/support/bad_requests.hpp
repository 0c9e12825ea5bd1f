#pragma once
// The requests every allocator must refuse (core/allocator.hpp, is_valid_request): size 0, an
// alignment that is not a power of two, and sizes that overflow once padded or aligned. One table
// per rule, shared by the contract tests (LinearContract, HeapContract) and the per-header tests.
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/stats.hpp"

namespace strata::test {

struct bad_request {
    std::size_t size;
    std::size_t align;
};

inline constexpr std::size_t max_size = std::numeric_limits<std::size_t>::max();

/// Size 0: nullptr whatever the alignment.
inline constexpr bad_request zero_size_requests[] = {{0, 1}, {0, 8}, {0, 16}, {0, 64}, {0, 4096}};

/// An alignment of 0 or one that is not a power of two: nullptr whatever the size.
inline constexpr bad_request bad_alignment_requests[] = {
    {16, 0},  {16, 3},  {16, 5},  {16, 6},   {16, 7},    {16, 12},
    {16, 24}, {16, 48}, {16, 96}, {16, 100}, {16, 1000}, {16, 4097},
};

/// Sizes whose padding or alignment overflows std::size_t: nullptr, never a wrapped-around block.
inline constexpr bad_request overflow_requests[] = {
    {max_size, 1},       {max_size, 16},         {max_size - 8, 64},
    {max_size - 15, 16}, {max_size - 100, 4096}, {max_size - 1, 2},
};

/// Every row of the three tables.
inline std::vector<bad_request> all_bad_requests() {
    std::vector<bad_request> v;
    for (std::span<const bad_request> t : {std::span<const bad_request>(zero_size_requests),
                                           std::span<const bad_request>(bad_alignment_requests),
                                           std::span<const bad_request>(overflow_requests)})
        v.insert(v.end(), t.begin(), t.end());
    return v;
}

/// Succeeds when `a` answers nullptr to every request in `table` and its stats() stay as they were.
template <class A>
::testing::AssertionResult refuses(A& a, std::span<const bad_request> table) {
    const strata::stats before = a.stats();
    for (const bad_request& r : table) {
        if (void* p = a.allocate(r.size, r.align); p != nullptr)
            return ::testing::AssertionFailure() << "served size " << r.size << " align " << r.align;
        if (!(a.stats() == before))
            return ::testing::AssertionFailure()
                   << "stats changed refusing size " << r.size << " align " << r.align;
    }
    return ::testing::AssertionSuccess();
}

/// Succeeds when `a` refuses every request of the three tables without changing its stats().
template <class A>
::testing::AssertionResult refuses_bad_requests(A& a) {
    const std::vector<bad_request> all = all_bad_requests();
    return refuses(a, std::span<const bad_request>(all));
}

} // namespace strata::test
