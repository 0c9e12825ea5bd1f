// detail::lowest_free (policy::compact's free-slot set) against a std::set reference, across the
// sizes where its bitmap has 1, 2, 3 and 4 levels.
#include "strata/handle/detail/lowest_free.hpp"

#include <cstddef>
#include <memory>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace {

using set_type = strata::detail::lowest_free<std::allocator<int>>;

void random_ops_match_std_set(std::size_t capacity, std::size_t ops, unsigned seed) {
    set_type s{std::allocator<int>()};
    s.reserve(capacity / 2 + 1);
    std::set<std::size_t> ref;
    std::mt19937_64 rng(seed);
    std::size_t lowest = set_type::none;
    for (std::size_t op = 0; op < ops; ++op) {
        if (op == ops / 3) s.reserve(capacity); // growth keeps members and summaries
        const std::size_t limit = op < ops / 3 ? capacity / 2 + 1 : capacity;
        if (rng() % 2 == 0 || ref.empty()) {
            const std::size_t i = rng() % limit;
            if (ref.insert(i).second) {
                s.insert(i);
                if (lowest == set_type::none || i < lowest) lowest = i;
            }
        } else {
            ASSERT_EQ(lowest, *ref.begin());
            ref.erase(ref.begin());
            lowest = s.take_lowest(lowest);
            ASSERT_EQ(lowest, ref.empty() ? set_type::none : *ref.begin());
        }
        ASSERT_EQ(s.lowest(), ref.empty() ? set_type::none : *ref.begin());
        if (op % 4096 == 0) {
            ASSERT_TRUE(s.check());
            ASSERT_EQ(s.count(), ref.size());
        }
    }
    ASSERT_TRUE(s.check());
    ASSERT_EQ(s.count(), ref.size());
    for (std::size_t i = 0; i < capacity; ++i)
        ASSERT_EQ(s.contains(i), ref.count(i) == 1) << i;
}

} // namespace

TEST(LowestFree, EmptySetHasNoLowest) {
    set_type s{std::allocator<int>()};
    EXPECT_EQ(s.lowest(), set_type::none);
    EXPECT_EQ(s.count(), 0u);
    EXPECT_FALSE(s.contains(0));
    EXPECT_TRUE(s.check());
    s.reserve(100);
    EXPECT_GE(s.capacity(), 100u);
    EXPECT_EQ(s.lowest(), set_type::none);
}

TEST(LowestFree, OneLevel) { random_ops_match_std_set(60, 20'000, 1); }
TEST(LowestFree, TwoLevels) { random_ops_match_std_set(3'000, 100'000, 2); }
TEST(LowestFree, ThreeLevels) { random_ops_match_std_set(100'000, 200'000, 3); }
TEST(LowestFree, FourLevels) { random_ops_match_std_set(600'000, 200'000, 4); }
