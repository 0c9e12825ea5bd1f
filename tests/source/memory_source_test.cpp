// memory_block, the memory_source concept and source_ref (source/memory_source.hpp).
#include "strata/source/memory_source.hpp"

#include <cstddef>
#include <vector>

#include <gtest/gtest.h>

#include "strata/source/buffer_source.hpp"
#include "strata/source/heap_source.hpp"

namespace {

// A source that records every call, to see what source_ref forwards.
struct recording_source {
    struct call {
        std::size_t size;
        std::size_t align;
    };
    std::vector<call> allocations;
    std::vector<strata::memory_block> frees;
    alignas(64) std::byte storage[256] = {};

    strata::memory_block allocate_block(std::size_t size, std::size_t align) noexcept {
        allocations.push_back({size, align});
        if (size > sizeof storage) return {};
        return {storage, size, align};
    }
    void deallocate_block(strata::memory_block b) noexcept { frees.push_back(b); }
};

struct not_a_source {
    strata::memory_block allocate_block(std::size_t, std::size_t) { return {}; } // not noexcept
    void deallocate_block(strata::memory_block) noexcept {}
};

static_assert(strata::memory_source<strata::heap_source>);
static_assert(strata::memory_source<strata::buffer_source>);
static_assert(strata::memory_source<strata::source_ref>);
static_assert(strata::memory_source<recording_source>);
static_assert(!strata::memory_source<not_a_source>);
static_assert(!strata::memory_source<int>);

TEST(MemoryBlock, ContainsItsBytesOnly) {
    std::byte bytes[16] = {};
    const strata::memory_block b{bytes, 16, 1};
    EXPECT_TRUE(b.contains(bytes));
    EXPECT_TRUE(b.contains(bytes + 15));
    EXPECT_FALSE(b.contains(bytes + 16));
    EXPECT_FALSE(strata::memory_block{}.contains(bytes));
    EXPECT_FALSE(strata::memory_block{}.contains(nullptr));
}

TEST(MemoryBlock, EmptyMeansNoData) {
    constexpr strata::memory_block none{};
    static_assert(none.empty());
    std::byte bytes[8] = {};
    const strata::memory_block b{bytes, 8, 8};
    EXPECT_FALSE(b.empty());
    EXPECT_EQ(b.end(), bytes + 8);
}

TEST(SourceRef, ErasesTheSourceType) {
    strata::heap_source heap;
    const strata::source_ref ref(heap);
    ASSERT_TRUE(ref);
    EXPECT_EQ(ref.get(), &heap);
    const auto b = ref.allocate_block(256, 32);
    ASSERT_FALSE(b.empty());
    EXPECT_EQ(heap.outstanding_blocks(), 1u);
    ref.deallocate_block(b);
    EXPECT_EQ(heap.outstanding_blocks(), 0u);
}

TEST(SourceRef, ForwardsEveryArgumentAndResult) {
    recording_source src;
    const strata::source_ref ref(src);
    const strata::memory_block b = ref.allocate_block(100, 64);
    ASSERT_EQ(src.allocations.size(), 1u);
    EXPECT_EQ(src.allocations[0].size, 100u);
    EXPECT_EQ(src.allocations[0].align, 64u);
    EXPECT_EQ(b.data, src.storage);
    EXPECT_EQ(b.size, 100u);
    EXPECT_EQ(b.align, 64u);
    EXPECT_TRUE(ref.allocate_block(1000, 8).empty()) << "the source's empty block comes back as is";
    ref.deallocate_block(b);
    ASSERT_EQ(src.frees.size(), 1u);
    EXPECT_EQ(src.frees[0].data, b.data);
    EXPECT_EQ(src.frees[0].size, 100u);
    EXPECT_EQ(src.frees[0].align, 64u);
}

// An empty block is never passed on: a source need not handle it.
TEST(SourceRef, EmptyBlocksAreNotForwarded) {
    recording_source src;
    const strata::source_ref ref(src);
    ref.deallocate_block({});
    EXPECT_TRUE(src.frees.empty());
}

// A default-constructed reference has no source: it serves nothing and ignores frees.
TEST(SourceRef, EmptyReferenceServesNothing) {
    const strata::source_ref none;
    EXPECT_FALSE(none);
    EXPECT_EQ(none.get(), nullptr);
    EXPECT_TRUE(none.allocate_block(64, 8).empty());
    std::byte bytes[8] = {};
    none.deallocate_block({bytes, 8, 8}); // no source to call: nothing happens
}

// Copies refer to the same source.
TEST(SourceRef, CopiesReferToTheSameSource) {
    recording_source src;
    const strata::source_ref a(src);
    const strata::source_ref b = a; // NOLINT(performance-unnecessary-copy-initialization)
    EXPECT_EQ(b.get(), &src);
    (void)b.allocate_block(8, 8);
    EXPECT_EQ(src.allocations.size(), 1u);
}

} // namespace
