#include "strata/core/bit.hpp"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace {

constexpr std::size_t max_size = std::numeric_limits<std::size_t>::max();

TEST(Bit, IsPow2) {
    EXPECT_FALSE(strata::is_pow2(0));
    for (unsigned i = 0; i < 64; ++i)
        EXPECT_TRUE(strata::is_pow2(std::size_t{1} << i)) << i;
    for (std::size_t x : {3u, 5u, 6u, 24u, 100u, 4095u})
        EXPECT_FALSE(strata::is_pow2(x)) << x;
    EXPECT_FALSE(strata::is_pow2(max_size));
}

TEST(Bit, log2) {
    EXPECT_EQ(strata::log2_floor(1), 0u);
    EXPECT_EQ(strata::log2_floor(2), 1u);
    EXPECT_EQ(strata::log2_floor(3), 1u);
    EXPECT_EQ(strata::log2_floor(4096), 12u);
    EXPECT_EQ(strata::log2_floor(max_size), 63u);
    EXPECT_EQ(strata::log2_ceil(0), 0u);
    EXPECT_EQ(strata::log2_ceil(1), 0u);
    EXPECT_EQ(strata::log2_ceil(3), 2u);
    EXPECT_EQ(strata::log2_ceil(4096), 12u);
    EXPECT_EQ(strata::log2_ceil(4097), 13u);
}

TEST(Bit, NextPow2SaturatesToZeroOnOverflow) {
    EXPECT_EQ(strata::next_pow2(0), 1u);
    EXPECT_EQ(strata::next_pow2(1), 1u);
    EXPECT_EQ(strata::next_pow2(5), 8u);
    EXPECT_EQ(strata::next_pow2(4096), 4096u);
    EXPECT_EQ(strata::next_pow2((std::size_t{1} << 63) + 1), 0u);
    EXPECT_EQ(strata::next_pow2(max_size), 0u);
}

TEST(Bit, scans) {
    EXPECT_EQ(strata::lowest_bit(1), 0u);
    EXPECT_EQ(strata::lowest_bit(0b1011000), 3u);
    EXPECT_EQ(strata::highest_bit(0b1011000), 6u);
    EXPECT_EQ(strata::highest_bit(~std::uint64_t{0}), 63u);
    static_assert(strata::highest_bit(1) == 0);
}

} // namespace
