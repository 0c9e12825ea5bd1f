#include "strata/core/align.hpp"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace {

constexpr std::size_t max_size = std::numeric_limits<std::size_t>::max();

TEST(Align, PaddingAndRoundUp) {
    for (std::size_t a = 1; a <= 4096; a *= 2) {
        for (std::size_t v : {std::size_t{0}, std::size_t{1}, a - 1, a, a + 1, 3 * a + 5}) {
            const auto up = strata::align_up(v, a);
            ASSERT_TRUE(up.has_value());
            EXPECT_EQ(*up % a, 0u);
            EXPECT_GE(*up, v);
            EXPECT_LT(*up - v, a);
            EXPECT_EQ(strata::align_padding(v, a), *up - v);
            EXPECT_EQ(strata::align_down(v, a) % a, 0u);
            EXPECT_LE(strata::align_down(v, a), v);
        }
    }
}

TEST(Align, RoundUpOverflowIsReportedNotWrapped) {
    EXPECT_FALSE(strata::align_up(max_size, 2).has_value());
    EXPECT_FALSE(strata::align_up(max_size - 8, 64).has_value());
    EXPECT_EQ(strata::align_up(max_size, 1), max_size);
    EXPECT_EQ(strata::align_up(max_size - 63, 64), max_size - 63);
}

TEST(Align, CheckedArithmetic) {
    EXPECT_EQ(strata::checked_add(1, 2), 3u);
    EXPECT_FALSE(strata::checked_add(max_size, 1).has_value());
    EXPECT_EQ(strata::checked_add(max_size - 1, 1), max_size);
    EXPECT_EQ(strata::checked_mul(0, max_size), 0u);
    EXPECT_EQ(strata::checked_mul(1u << 20, 1u << 20), std::size_t{1} << 40);
    EXPECT_FALSE(strata::checked_mul(max_size / 2 + 1, 2).has_value());
}

TEST(Align, ValidRequest) {
    EXPECT_TRUE(strata::is_valid_request(1, 1));
    EXPECT_TRUE(strata::is_valid_request(max_size, 4096));
    EXPECT_FALSE(strata::is_valid_request(0, 8));
    EXPECT_FALSE(strata::is_valid_request(8, 0));
    EXPECT_FALSE(strata::is_valid_request(8, 24));
}

TEST(Align, IsAlignedOnPointers) {
    alignas(64) static std::byte buffer[128];
    EXPECT_TRUE(strata::is_aligned(buffer, 64));
    EXPECT_FALSE(strata::is_aligned(buffer + 1, 2));
    EXPECT_TRUE(strata::is_aligned(buffer + 32, 32));
}

} // namespace
