// core/config.hpp: the checks level (0, 1 or 2, the same in the headers as in libstrata), ASan
// detection, and the branch-hint macros, which must leave the value of their condition alone.
#include "strata/core/config.hpp"

#include <gtest/gtest.h>

#include "strata/core/check.hpp"

namespace {

static_assert(STRATA_CHECKS >= 0 && STRATA_CHECKS <= 2);
static_assert(strata::checks_level == STRATA_CHECKS);
static_assert(STRATA_ASAN == 0 || STRATA_ASAN == 1);

STRATA_NOINLINE int not_inlined(int x) { return x + 1; }
STRATA_ALWAYS_INLINE int inlined(int x) { return x * 2; }

// The headers and the library must agree on the level: the levels change members of some
// allocators, not only their checks.
TEST(Config, TheLibraryWasBuiltAtTheHeadersChecksLevel) {
    EXPECT_EQ(strata::library_checks_level(), strata::checks_level);
}

TEST(Config, BranchHintsKeepTheirConditionsValue) {
    int volatile v = 7;
    EXPECT_TRUE(STRATA_LIKELY(v == 7));
    EXPECT_FALSE(STRATA_LIKELY(v == 8));
    EXPECT_TRUE(STRATA_UNLIKELY(v != 8));
    EXPECT_FALSE(STRATA_UNLIKELY(v != 7));
    EXPECT_EQ(STRATA_LIKELY(v), 1) << "a non-zero value is true";
    EXPECT_EQ(not_inlined(1), 2);
    EXPECT_EQ(inlined(3), 6);
}

} // namespace
