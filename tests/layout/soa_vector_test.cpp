// soa_vector: column alignment and padding, push/erase across columns, consistency after random
// erases, allocator use, copy/move.
#include "strata/layout/soa_vector.hpp"

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "strata/adapt/std_allocator.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/heap_source.hpp"

#include "support/recording_handler.hpp"

namespace {
using strata::violation_kind;
using strata::test::recording_handler;

using entities = strata::soa_vector<float, double, std::uint8_t, std::uint32_t>;

template <class V, std::size_t... I>
bool columns_aligned(V& v, std::index_sequence<I...>) {
    return ((reinterpret_cast<std::uintptr_t>(v.template column_data<I>()) % 64 == 0) && ...);
}
} // namespace

TEST(SoaVector, EmptyHasNoStorage) {
    entities v;
    EXPECT_TRUE(v.empty());
    EXPECT_EQ(v.capacity(), 0u);
    EXPECT_EQ(v.padded_size(), 0u);
    EXPECT_EQ(v.column_data<0>(), nullptr);
    EXPECT_TRUE(v.column<1>().empty());
    EXPECT_TRUE(v.check());
}

TEST(SoaVector, ColumnsAre64ByteAlignedAndCapacityPadded) {
    entities v;
    static_assert(entities::lane_multiple == 64); // 64 bytes of the 1-byte column
    for (std::uint32_t i = 0; i < 1000; ++i) {
        EXPECT_EQ(v.push_back(static_cast<float>(i), i * 2.0, static_cast<std::uint8_t>(i), i), i);
        ASSERT_TRUE(columns_aligned(v, std::make_index_sequence<4>{}));
        ASSERT_EQ(v.capacity() % entities::lane_multiple, 0u);
        ASSERT_EQ(v.padded_size() % entities::lane_multiple, 0u);
        ASSERT_GE(v.padded_size(), v.size());
        ASSERT_LE(v.padded_size(), v.capacity());
        ASSERT_TRUE(v.check());
    }
    static_assert(strata::soa_vector<float>::lane_multiple == 16);
    static_assert(strata::soa_vector<double, float>::lane_multiple == 16);
    static_assert(strata::soa_vector<double>::lane_multiple == 8);
}

TEST(SoaVector, PaddingIsValueInitialized) {
    strata::soa_vector<float, int> v;
    for (int i = 0; i < 5; ++i)
        (void)v.push_back(1.0f, i + 1);
    const auto padded = v.padded_column<1>();
    ASSERT_EQ(padded.size(), 16u);
    for (std::size_t i = 5; i < padded.size(); ++i)
        EXPECT_EQ(padded[i], 0);
    ASSERT_TRUE(v.erase(0)); // the vacated last element becomes padding again
    EXPECT_EQ(v.column_data<1>()[4], 0);
    EXPECT_EQ(v.get<1>(0), 5);
}

TEST(SoaVector, EraseSwapsTheLastInAcrossAllColumns) {
    entities v;
    for (std::uint32_t i = 0; i < 4; ++i)
        (void)v.push_back(static_cast<float>(i), i * 2.0, static_cast<std::uint8_t>(i), i);
    ASSERT_TRUE(v.erase(1));
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v.get<0>(1), 3.0f);
    EXPECT_EQ(v.get<1>(1), 6.0);
    EXPECT_EQ(v.get<2>(1), 3);
    EXPECT_EQ(v.get<3>(1), 3u);
    v.pop_back();
    EXPECT_EQ(v.size(), 2u);
    recording_handler rec;
    EXPECT_FALSE(v.erase(2));
    EXPECT_EQ(v.size(), 2u);
    if (strata::test::checks_on) {
        EXPECT_TRUE(rec.saw_one(violation_kind::invalid_argument));
    }
}

TEST(SoaVector, ColumnsStayConsistentAfterRandomErases) {
    // Each element's fields are all derived from one id; after any sequence of pushes and erases,
    // every row must still be one id's fields, and the ids must be exactly the model's.
    entities v;
    std::vector<std::uint32_t> model;
    std::mt19937 rng(77);
    std::uint32_t next = 0;
    for (int op = 0; op < 200'000; ++op) {
        if (model.size() < 50 || rng() % 2 == 0) {
            const std::uint32_t id = next++;
            (void)v.push_back(static_cast<float>(id), id * 0.5, static_cast<std::uint8_t>(id * 7), id);
            model.push_back(id);
        } else {
            const std::size_t i = rng() % model.size();
            ASSERT_TRUE(v.erase(i));
            model[i] = model.back();
            model.pop_back();
        }
        if (op % 10'000 == 0) {
            ASSERT_TRUE(v.check());
            ASSERT_EQ(v.size(), model.size());
            for (std::size_t i = 0; i < model.size(); ++i) {
                const std::uint32_t id = v.get<3>(i);
                ASSERT_EQ(id, model[i]);
                ASSERT_EQ(v.get<0>(i), static_cast<float>(id));
                ASSERT_EQ(v.get<1>(i), id * 0.5);
                ASSERT_EQ(v.get<2>(i), static_cast<std::uint8_t>(id * 7));
            }
        }
    }
}

TEST(SoaVector, ResizeReserveClear) {
    strata::soa_vector<float, int> v;
    v.reserve(100);
    EXPECT_EQ(v.capacity(), 112u); // rounded up to 16
    v.resize(20);
    EXPECT_EQ(v.size(), 20u);
    EXPECT_EQ(v.get<0>(19), 0.0f);
    v.get<1>(19) = 5;
    v.resize(10);
    v.resize(20);
    EXPECT_EQ(v.get<1>(19), 0); // shrunk elements were reset
    v.clear();
    EXPECT_TRUE(v.empty());
    EXPECT_EQ(v.capacity(), 112u);
    EXPECT_THROW(v.reserve(v.max_size() + 1), std::length_error);
    EXPECT_TRUE(v.check());
}

TEST(SoaVector, CopyMoveSwap) {
    strata::soa_vector<float, int> a;
    for (int i = 0; i < 40; ++i)
        (void)a.push_back(static_cast<float>(i), i);
    strata::soa_vector<float, int> b = a;
    EXPECT_EQ(b.size(), 40u);
    EXPECT_EQ(b.get<1>(39), 39);
    EXPECT_NE(b.column_data<0>(), a.column_data<0>());
    strata::soa_vector<float, int> c = std::move(a);
    EXPECT_EQ(c.get<0>(10), 10.0f);
    EXPECT_TRUE(a.empty()); // NOLINT(bugprone-use-after-move): documented state
    a = c;
    EXPECT_EQ(a.size(), 40u);
    (void)a.push_back(1.0f, 1);
    EXPECT_EQ(a.size(), 41u);
    EXPECT_TRUE(a.check() && b.check() && c.check());
}

TEST(SoaVector, UsesAStrataAllocator) {
    strata::heap_source heap;
    strata::arena arena(heap);
    using alloc = strata::std_allocator<std::byte, strata::arena>;
    strata::basic_soa_vector<alloc, float, std::uint16_t> v{alloc(arena)};
    for (int i = 0; i < 300; ++i)
        (void)v.push_back(1.0f, static_cast<std::uint16_t>(i));
    EXPECT_GT(arena.stats().in_use, 300 * (sizeof(float) + sizeof(std::uint16_t)));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.column_data<1>()) % 64, 0u);
    EXPECT_TRUE(v.check());
}

TEST(SoaVector, PushBackOfItsOwnElementWhileGrowing) {
    // The values refer into the storage that growing replaces: they are copied first.
    strata::soa_vector<float, int> v;
    for (int i = 0; i < 4; ++i)
        (void)v.push_back(static_cast<float>(i) + 0.5f, i * 10);
    while (v.size() < v.capacity())
        (void)v.push_back(0.0f, 0);
    const std::size_t n = v.size();
    (void)v.push_back(v.get<0>(3), v.get<1>(3)); // at capacity: this push_back grows
    ASSERT_EQ(v.size(), n + 1);
    EXPECT_EQ(v.get<0>(n), 3.5f);
    EXPECT_EQ(v.get<1>(n), 30);
    EXPECT_TRUE(v.check());
}

TEST(SoaVector, ResizeGivesNewElementsDefaultValuesEvenAfterPaddingWasWritten) {
    strata::soa_vector<float, int> v;
    (void)v.push_back(1.0f, 1);
    for (float& f : v.padded_column<0>()) // loops may write the padding
        f = 5.0f;
    v.resize(4);
    EXPECT_EQ(v.get<0>(0), 5.0f);
    for (std::size_t i = 1; i < 4; ++i) {
        EXPECT_EQ(v.get<0>(i), 0.0f) << i;
        EXPECT_EQ(v.get<1>(i), 0) << i;
    }
}

TEST(SoaVector, CopyAssignmentKeepsTheTargetsAllocator) {
    // std_allocator does not propagate on copy assignment: the elements are copied into the
    // target's own arena, which outlives the frame arena the source lived in.
    alignas(64) static std::byte long_buf[1 << 14];
    alignas(64) static std::byte frame_buf[1 << 14];
    strata::arena long_arena{std::span<std::byte>(long_buf)};
    strata::arena frame_arena{std::span<std::byte>(frame_buf)};
    using alloc = strata::std_allocator<std::byte, strata::arena>;
    using vec = strata::basic_soa_vector<alloc, float, int>;
    vec long_lived{alloc(long_arena)};
    (void)long_lived.push_back(1.0f, 1);
    {
        vec frame_local{alloc(frame_arena)};
        for (int i = 0; i < 20; ++i)
            (void)frame_local.push_back(2.0f, i);
        long_lived = frame_local;
        EXPECT_TRUE(frame_arena.owns(frame_local.column_data<0>()));
    }
    EXPECT_TRUE(long_arena.owns(long_lived.column_data<0>()));
    EXPECT_FALSE(frame_arena.owns(long_lived.column_data<0>()));
    frame_arena.reset();
    EXPECT_EQ(long_lived.get<1>(5), 5);
    // Move assignment propagates std_allocator (as std::vector would): the storage moves with it.
    vec other{alloc(frame_arena)};
    (void)other.push_back(3.0f, 7);
    const void* moved = other.column_data<0>();
    long_lived = std::move(other);
    EXPECT_EQ(static_cast<const void*>(long_lived.column_data<0>()), moved);
    EXPECT_EQ(long_lived.size(), 1u);
    EXPECT_EQ(long_lived.get<1>(0), 7);
    EXPECT_TRUE(other.empty()); // NOLINT(bugprone-use-after-move): documented state
}

TEST(SoaVector, WorksWithAPolymorphicAllocator) {
    std::pmr::monotonic_buffer_resource resource;
    strata::basic_soa_vector<std::pmr::polymorphic_allocator<std::byte>, float, int> v{&resource};
    for (int i = 0; i < 100; ++i)
        (void)v.push_back(static_cast<float>(i), i);
    EXPECT_EQ(v.get<1>(99), 99);
    auto w = v;
    w = v;
    EXPECT_EQ(w.size(), 100u);
    EXPECT_TRUE(v.check() && w.check());
    // Moving between unequal allocators that do not propagate copies into the target's storage.
    std::pmr::monotonic_buffer_resource other_resource;
    strata::basic_soa_vector<std::pmr::polymorphic_allocator<std::byte>, float, int> x{&other_resource};
    x = std::move(w);
    EXPECT_EQ(x.get_allocator().resource(), &other_resource);
    EXPECT_EQ(x.size(), 100u);
    EXPECT_EQ(x.get<1>(42), 42);
    EXPECT_TRUE(w.empty()); // NOLINT(bugprone-use-after-move): documented state
    EXPECT_TRUE(x.check() && w.check());
}
