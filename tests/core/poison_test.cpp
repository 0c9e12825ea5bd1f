// core/poison.hpp: the fill patterns (0xCD on acquire, 0xDD on release, at checks >= 2 only) and
// ASan poisoning (is_poisoned sees it in ASan builds; everything is a no-op elsewhere).
#include "strata/core/poison.hpp"

#include <cstddef>
#include <cstring>

#include <gtest/gtest.h>

#include "strata/core/config.hpp"

#include "support/byte_patterns.hpp"

namespace {

using strata::test::all_bytes;

static_assert(strata::fill_allocated == 0xCD);
static_assert(strata::fill_freed == 0xDD);

TEST(Poison, AcquireFillsWithTheAllocatedPatternAtChecks2) {
    alignas(16) unsigned char buf[64];
    std::memset(buf, 0x11, sizeof buf);
    strata::acquire_bytes(buf + 8, 32);
    EXPECT_TRUE(all_bytes(buf, 8, 0x11)) << "bytes before the range untouched";
    EXPECT_TRUE(all_bytes(buf + 40, 24, 0x11)) << "bytes after the range untouched";
    EXPECT_TRUE(all_bytes(buf + 8, 32, STRATA_CHECKS >= 2 ? strata::fill_allocated : 0x11));
}

TEST(Poison, ReleaseFillsWithTheFreedPatternAtChecks2AndPoisons) {
    alignas(16) unsigned char buf[64];
    std::memset(buf, 0x11, sizeof buf);
    strata::release_bytes(buf + 16, 32);
    EXPECT_EQ(strata::is_poisoned(buf + 16, 32), STRATA_ASAN != 0);
    EXPECT_FALSE(strata::is_poisoned(buf, 16));
    strata::unpoison(buf + 16, 32); // to read the pattern back
    EXPECT_TRUE(all_bytes(buf + 16, 32, STRATA_CHECKS >= 2 ? strata::fill_freed : 0x11));
    EXPECT_TRUE(all_bytes(buf, 16, 0x11));
    EXPECT_TRUE(all_bytes(buf + 48, 16, 0x11));
}

// A released range may include bytes that were poisoned already (padding never handed out):
// release_bytes unpoisons before it fills, so its own write is not a use after poison.
TEST(Poison, ReleaseOverAnAlreadyPoisonedRange) {
    alignas(16) unsigned char buf[64] = {};
    strata::poison(buf + 16, 16);
    strata::release_bytes(buf, 64);
    EXPECT_EQ(strata::is_poisoned(buf, 64), STRATA_ASAN != 0);
    strata::acquire_bytes(buf, 64);
    EXPECT_FALSE(strata::is_poisoned(buf, 64));
}

TEST(Poison, ZeroLengthRangesAreNoOps) {
    alignas(16) unsigned char buf[16] = {};
    strata::poison(buf, 0);
    strata::release_bytes(buf, 0);
    strata::acquire_bytes(buf, 0);
    EXPECT_FALSE(strata::is_poisoned(buf, 0));
    EXPECT_FALSE(strata::is_poisoned(buf, 16));
    EXPECT_TRUE(all_bytes(buf, 16, 0));
}

} // namespace
