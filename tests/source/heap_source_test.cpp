#include "strata/source/heap_source.hpp"

#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "strata/source/buffer_source.hpp"

namespace {

static_assert(strata::memory_source<strata::heap_source>);
static_assert(strata::memory_source<strata::buffer_source>);
static_assert(strata::memory_source<strata::source_ref>);

TEST(heap_source, blocks_are_aligned_and_counted) {
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

TEST(heap_source, bad_requests_give_empty_blocks) {
    strata::heap_source source;
    EXPECT_TRUE(source.allocate_block(0, 16).empty());
    EXPECT_TRUE(source.allocate_block(64, 24).empty());
    EXPECT_TRUE(source.allocate_block(std::numeric_limits<std::size_t>::max() - 4096, 64).empty());
    EXPECT_EQ(source.outstanding_blocks(), 0u);
    source.deallocate_block({}); // an empty block is ignored
}

TEST(buffer_source, carves_front_to_back_and_undoes_the_last) {
    alignas(64) static std::byte buffer[1024];
    strata::buffer_source source(buffer);
    const auto a = source.allocate_block(100, 8);
    ASSERT_EQ(a.data, buffer);
    const auto b = source.allocate_block(100, 64);
    ASSERT_EQ(b.data, buffer + 128);
    EXPECT_EQ(source.used(), 228u);
    EXPECT_TRUE(source.allocate_block(1000, 8).empty()) << "exhaustion is an empty block";
    EXPECT_EQ(source.used(), 228u);
    source.deallocate_block(b);
    EXPECT_EQ(source.used(), 100u);
    source.deallocate_block(a); // not the last any more: absorbed
    EXPECT_EQ(source.used(), 100u);
    EXPECT_TRUE(source.allocate_block(0, 8).empty());
    EXPECT_TRUE(source.allocate_block(8, 3).empty());
}

TEST(source_ref, erases_the_source_type) {
    strata::heap_source heap;
    const strata::source_ref ref(heap);
    ASSERT_TRUE(ref);
    EXPECT_EQ(ref.get(), &heap);
    const auto b = ref.allocate_block(256, 32);
    ASSERT_FALSE(b.empty());
    EXPECT_EQ(heap.outstanding_blocks(), 1u);
    ref.deallocate_block(b);
    EXPECT_EQ(heap.outstanding_blocks(), 0u);

    const strata::source_ref none;
    EXPECT_FALSE(none);
    EXPECT_TRUE(none.allocate_block(64, 8).empty());
}

TEST(memory_block, contains) {
    std::byte bytes[16] = {};
    const strata::memory_block b{bytes, 16, 1};
    EXPECT_TRUE(b.contains(bytes));
    EXPECT_TRUE(b.contains(bytes + 15));
    EXPECT_FALSE(b.contains(bytes + 16));
    EXPECT_FALSE(strata::memory_block{}.contains(bytes));
}

} // namespace
