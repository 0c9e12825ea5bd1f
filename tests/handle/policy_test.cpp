// Generation wrap (retire | wrap) and free-slot reuse (lifo | fifo | compact), tested with tiny handles so
// the generation limit is reached in a few operations; index-space exhaustion.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/handle/handle_table.hpp"
#include "strata/handle/slot_map.hpp"
#include "strata/layout/soa_slot_map.hpp"

namespace {

struct tiny_tag {};
// 4 index bits (16 slots), 2 generation bits (generations 1, 2, 3).
using tiny = strata::handle<tiny_tag, 4, 2>;
namespace policy = strata::policy;

template <template <class, class, class, class, class> class C, class Wrap, class Reuse>
using tiny_of = C<int, tiny, std::allocator<int>, Wrap, Reuse>;

} // namespace

template <class C>
class GenerationRetire : public ::testing::Test {};
using retire_types = ::testing::Types<tiny_of<strata::slot_map, policy::retire, policy::lifo>,
                                      tiny_of<strata::handle_table, policy::retire, policy::lifo>,
                                      tiny_of<strata::slot_map, policy::retire, policy::fifo>,
                                      tiny_of<strata::slot_map, policy::retire, policy::compact>,
                                      tiny_of<strata::handle_table, policy::retire, policy::compact>>;
TYPED_TEST_SUITE(GenerationRetire, retire_types);

TYPED_TEST(GenerationRetire, SlotRetiresInsteadOfWrapping) {
    TypeParam c;
    std::vector<tiny> old;
    // Slot 0 lives through generations 1, 2, 3; then it is retired, never reused.
    for (unsigned gen = 1; gen <= tiny::max_generation; ++gen) {
        const tiny h = c.emplace(static_cast<int>(gen));
        EXPECT_EQ(h.index(), 0u);
        EXPECT_EQ(h.generation(), gen);
        old.push_back(h);
        ASSERT_TRUE(c.erase(h));
    }
    EXPECT_EQ(c.retired_count(), 1u);
    const tiny next = c.emplace(100);
    EXPECT_EQ(next.index(), 1u) << "a retired slot must not be reused";
    EXPECT_EQ(next.generation(), 1u);
    for (const tiny h : old)
        EXPECT_EQ(c.get(h), nullptr) << h;
    EXPECT_TRUE(c.check());
}

TYPED_TEST(GenerationRetire, AllSlotsRetiredExhaustsTheIndexSpace) {
    TypeParam c;
    std::vector<tiny> every;
    for (std::size_t round = 0; round < tiny::max_generation; ++round) {
        std::vector<tiny> hs;
        for (std::size_t i = 0; i < tiny::index_space; ++i)
            hs.push_back(c.emplace(1));
        EXPECT_THROW((void)c.emplace(2), std::length_error); // 16 live: full
        for (const tiny h : hs)
            ASSERT_TRUE(c.erase(h));
        every.insert(every.end(), hs.begin(), hs.end());
    }
    EXPECT_EQ(c.retired_count(), tiny::index_space);
    EXPECT_THROW((void)c.emplace(3), std::length_error); // every slot retired
    EXPECT_TRUE(c.empty());
    for (const tiny h : every)
        EXPECT_EQ(c.get(h), nullptr);
    EXPECT_TRUE(c.check());
}

template <class C>
class GenerationWrap : public ::testing::Test {};
using wrap_types = ::testing::Types<tiny_of<strata::slot_map, policy::wrap, policy::lifo>,
                                    tiny_of<strata::handle_table, policy::wrap, policy::lifo>,
                                    tiny_of<strata::slot_map, policy::wrap, policy::compact>>;
TYPED_TEST_SUITE(GenerationWrap, wrap_types);

TYPED_TEST(GenerationWrap, GenerationRestartsAtOneAndTheDocumentedAbaAppears) {
    TypeParam c;
    const tiny first = c.emplace(1);
    EXPECT_EQ(first.generation(), 1u);
    ASSERT_TRUE(c.erase(first));
    const tiny g2 = c.emplace(2);
    EXPECT_EQ(c.get(first), nullptr);
    ASSERT_TRUE(c.erase(g2));
    const tiny g3 = c.emplace(3);
    EXPECT_EQ(g3.generation(), 3u);
    EXPECT_EQ(c.get(first), nullptr);
    EXPECT_EQ(c.get(g2), nullptr);
    ASSERT_TRUE(c.erase(g3));
    const tiny wrapped = c.emplace(4);
    EXPECT_EQ(wrapped.index(), 0u);
    EXPECT_EQ(wrapped.generation(), 1u); // wrapped: the slot is reused, never retired
    EXPECT_EQ(c.retired_count(), 0u);
    // The price of `wrap`: a handle held across exactly max_generation reuses validates again.
    EXPECT_EQ(first, wrapped);
    EXPECT_EQ(c.get(g2), nullptr);
    EXPECT_EQ(c.get(g3), nullptr);
    EXPECT_TRUE(c.check());
}

TEST(ReusePolicy, LifoReusesTheLastFreedSlot) {
    strata::slot_map<int, tiny, std::allocator<int>, policy::retire, policy::lifo> m;
    const tiny a = m.emplace(1), b = m.emplace(2), c = m.emplace(3);
    (void)c;
    ASSERT_TRUE(m.erase(a));
    ASSERT_TRUE(m.erase(b));
    EXPECT_EQ(m.emplace(4).index(), b.index());
    EXPECT_EQ(m.emplace(5).index(), a.index());
    EXPECT_TRUE(m.check());
}

TEST(ReusePolicy, FifoReusesTheFirstFreedSlot) {
    strata::handle_table<int, tiny, std::allocator<int>, policy::retire, policy::fifo> t;
    const tiny a = t.emplace(1), b = t.emplace(2), c = t.emplace(3);
    ASSERT_TRUE(t.erase(a));
    ASSERT_TRUE(t.erase(b));
    ASSERT_TRUE(t.erase(c));
    EXPECT_EQ(t.emplace(4).index(), a.index());
    EXPECT_EQ(t.emplace(5).index(), b.index());
    EXPECT_EQ(t.emplace(6).index(), c.index());
    EXPECT_TRUE(t.check());
}

TEST(ReusePolicy, CompactReusesTheLowestFreeSlot) {
    strata::slot_map<int, tiny, std::allocator<int>, policy::retire, policy::compact> m;
    std::vector<tiny> hs;
    for (int i = 0; i < 8; ++i)
        hs.push_back(m.emplace(i));
    ASSERT_TRUE(m.erase(hs[5]));
    ASSERT_TRUE(m.erase(hs[2]));
    ASSERT_TRUE(m.erase(hs[6]));
    EXPECT_EQ(m.emplace(10).index(), 2u);
    EXPECT_EQ(m.emplace(11).index(), 5u);
    EXPECT_EQ(m.emplace(12).index(), 6u);
    EXPECT_EQ(m.emplace(13).index(), 8u); // no free slot: a new one
    EXPECT_EQ(m.get(hs[2]), nullptr);
    EXPECT_TRUE(m.check());
}

TEST(ReusePolicy, CompactPacksScatteredLiveSlotsToTheFront) {
    // Set 1's shape, scaled: 4096 values, 95% erased at random, then churn. With compact reuse
    // the live slots migrate to the lowest indices; with LIFO they stay where the erases left them.
    using big = strata::handle<tiny_tag, 20, 12>;
    auto spread_after_churn = [](auto& m) {
        std::vector<big> hs;
        for (int i = 0; i < 4096; ++i)
            hs.push_back(m.emplace(i));
        std::mt19937 rng(7);
        while (hs.size() > 200) {
            const std::size_t k = rng() % hs.size();
            EXPECT_TRUE(m.erase(hs[k]));
            hs[k] = hs.back();
            hs.pop_back();
        }
        for (int frame = 0; frame < 200; ++frame) { // 0.9^200: no first-generation survivor
            for (int i = 0; i < 20; ++i) {
                const std::size_t k = rng() % hs.size();
                EXPECT_TRUE(m.erase(hs[k]));
                hs[k] = hs.back();
                hs.pop_back();
            }
            for (int i = 0; i < 20; ++i)
                hs.push_back(m.emplace(i));
        }
        EXPECT_TRUE(m.check());
        std::uint32_t highest = 0;
        for (const big h : hs)
            highest = std::max<std::uint32_t>(highest, h.index());
        return highest;
    };
    strata::slot_map<int, big, std::allocator<int>, policy::retire, policy::compact> compact;
    strata::slot_map<int, big, std::allocator<int>, policy::retire, policy::lifo> lifo;
    EXPECT_LT(spread_after_churn(compact), 1024u);
    EXPECT_GT(spread_after_churn(lifo), 2048u);
}

TEST(ReusePolicy, CompactSurvivesCopyMoveAndFourLevelBitmaps) {
    // > 262,144 slots: the free-slot bitmap needs a fourth level.
    using big = strata::handle<tiny_tag, 20, 12>;
    using map = strata::slot_map<int, big, std::allocator<int>, policy::retire, policy::compact>;
    map m;
    std::vector<big> hs;
    for (int i = 0; i < 300'000; ++i)
        hs.push_back(m.emplace(i));
    for (std::size_t i = 1; i < hs.size(); i += 7)
        ASSERT_TRUE(m.erase(hs[i]));
    ASSERT_TRUE(m.erase(hs[299'999]));
    ASSERT_TRUE(m.erase(hs[290'000]));
    EXPECT_TRUE(m.check());
    map copy(m);
    EXPECT_TRUE(copy.check());
    EXPECT_EQ(copy.emplace(-1).index(), 1u);
    EXPECT_EQ(m.emplace(-1).index(), 1u);
    map small;
    (void)small.emplace(1);
    m = small; // the slot array may keep more capacity than the bitmap it copies
    EXPECT_TRUE(m.check());
    for (int i = 0; i < 100'000; ++i)
        (void)m.emplace(i);
    for (std::size_t i = 0; i < m.size(); i += 3)
        (void)m.erase_at(i);
    EXPECT_TRUE(m.check());
    map moved(std::move(copy));
    EXPECT_TRUE(moved.check());
    EXPECT_TRUE(copy.check()); // NOLINT(bugprone-use-after-move): moved-from is empty and usable
    EXPECT_EQ(copy.emplace(5).index(), 0u);
    EXPECT_EQ(moved.emplace(5).index(), 8u);
    EXPECT_TRUE(moved.check());
}

TEST(ReusePolicy, FifoSpreadsReuseSoGenerationsGrowSlower) {
    // Churn one value at a time with 8 other slots free: LIFO reuses one slot and exhausts its
    // generations; FIFO rotates through all of them.
    auto churn = [](auto& m) {
        std::vector<tiny> hs;
        for (int i = 0; i < 9; ++i)
            hs.push_back(m.emplace(i));
        for (std::size_t i = 1; i < hs.size(); ++i)
            (void)m.erase(hs[i]);
        tiny h = hs[0];
        for (int i = 0; i < 9; ++i) {
            (void)m.erase(h);
            h = m.emplace(i);
        }
        return m.retired_count();
    };
    strata::slot_map<int, tiny, std::allocator<int>, policy::retire, policy::lifo> lifo;
    strata::slot_map<int, tiny, std::allocator<int>, policy::retire, policy::fifo> fifo;
    EXPECT_GT(churn(lifo), 0u);
    EXPECT_EQ(churn(fifo), 0u);
}

TEST(SoaSlotMapPolicy, RetireAndWrapApplyToo) {
    strata::basic_soa_slot_map<tiny, std::allocator<std::byte>, policy::retire, policy::lifo, float> r;
    strata::basic_soa_slot_map<tiny, std::allocator<std::byte>, policy::wrap, policy::lifo, float> w;
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(r.erase(r.emplace(1.0f)));
        ASSERT_TRUE(w.erase(w.emplace(1.0f)));
    }
    EXPECT_EQ(r.emplace(2.0f).index(), 1u);
    EXPECT_EQ(w.emplace(2.0f).index(), 0u);
    EXPECT_TRUE(r.check());
    EXPECT_TRUE(w.check());
}

TEST(SoaSlotMapPolicy, CompactReusesTheLowestFreeSlot) {
    strata::basic_soa_slot_map<tiny, std::allocator<std::byte>, policy::retire, policy::compact, float> m;
    std::vector<tiny> hs;
    for (int i = 0; i < 6; ++i)
        hs.push_back(m.emplace(static_cast<float>(i)));
    ASSERT_TRUE(m.erase(hs[4]));
    ASSERT_TRUE(m.erase(hs[1]));
    EXPECT_EQ(m.emplace(7.0f).index(), 1u);
    EXPECT_EQ(m.emplace(8.0f).index(), 4u);
    EXPECT_EQ(m.emplace(9.0f).index(), 6u);
    EXPECT_EQ(m.get<0>(hs[1]), nullptr);
    EXPECT_TRUE(m.check());
}
