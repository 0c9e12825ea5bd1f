// detail::iteration_guard (core/iteration_guard.hpp): raises a container's iteration depth for its
// lifetime, nesting, so erase, clear and assignment can refuse while a loop is running.
#include "strata/core/iteration_guard.hpp"

#include <type_traits>

#include <gtest/gtest.h>

namespace {

static_assert(!std::is_copy_constructible_v<strata::detail::iteration_guard>);
static_assert(!std::is_copy_assignable_v<strata::detail::iteration_guard>);
static_assert(std::is_nothrow_destructible_v<strata::detail::iteration_guard>);

TEST(IterationGuard, RaisesTheDepthForItsScopeAndNests) {
    int depth = 0;
    {
        const strata::detail::iteration_guard outer(depth);
        EXPECT_EQ(depth, 1);
        {
            const strata::detail::iteration_guard inner(depth);
            EXPECT_EQ(depth, 2);
        }
        EXPECT_EQ(depth, 1);
    }
    EXPECT_EQ(depth, 0);
}

// The depth comes back down when the loop body leaves by an exception.
TEST(IterationGuard, UnwindsOnAnException) {
    int depth = 0;
    try {
        const strata::detail::iteration_guard g(depth);
        throw 1;
    } catch (int) {
    }
    EXPECT_EQ(depth, 0);
}

} // namespace
