// heap_source (source/heap_source.hpp): blocks from aligned operator new, counted while outstanding.
#include "strata/source/heap_source.hpp"

#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace {

static_assert(strata::memory_source<strata::heap_source>);

TEST(HeapSource, BlocksAreAlignedAndCounted) {
    strata::heap_source source;
    std::vector<strata::memory_block> blocks;
    for (std::size_t a = 1; a <= 4096; a *= 2) {
        const strata::memory_block b = source.allocate_block(1000, a);
        ASSERT_FALSE(b.empty());
        EXPECT_EQ(b.size, 1000u);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data) % a, 0u);
        EXPECT_GE(b.align, a);
        b.data[0] = std::byte{1};
        b.data[999] = std::byte{2};
        blocks.push_back(b);
    }
    EXPECT_EQ(source.outstanding_blocks(), 13u);
    EXPECT_EQ(source.outstanding_bytes(), 13u * 1000u);
    for (const auto& b : blocks)
        source.deallocate_block(b);
    EXPECT_EQ(source.outstanding_blocks(), 0u);
    EXPECT_EQ(source.outstanding_bytes(), 0u);
}

TEST(HeapSource, BadRequestsGiveEmptyBlocks) {
    strata::heap_source source;
    EXPECT_TRUE(source.allocate_block(0, 16).empty());
    EXPECT_TRUE(source.allocate_block(64, 24).empty());
    EXPECT_TRUE(source.allocate_block(std::numeric_limits<std::size_t>::max() - 4096, 64).empty());
    EXPECT_EQ(source.outstanding_blocks(), 0u);
    source.deallocate_block({}); // an empty block is ignored
}

} // namespace
