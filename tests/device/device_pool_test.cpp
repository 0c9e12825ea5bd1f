// device_pool: construction limits, routing (shared blocks, the block that served last tried first,
// new blocks, dedicated allocations), every documented bad input and its answer, the budget and
// device refusals (block halving), empty-block retention and trim(), statistics and to_json, and
// incremental defragmentation run against fake device memory: host buffers per memory handle, every
// allocation filled with its own pattern, each move performed by the test with memcpy and every live
// byte verified after each pass; each allocation's size checked against its heap block (slack
// included, the destination's after a move).
#include "strata/device/device_pool.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#if __has_include(<nlohmann/json.hpp>)
#include <nlohmann/json.hpp>
#define STRATA_TEST_HAVE_JSON 1
#else
#define STRATA_TEST_HAVE_JSON 0
#endif

#include "support/heap_model.hpp"
#include "support/recording_handler.hpp"
#include "support/test_rng.hpp"

namespace {

using strata::defrag_move;
using strata::defrag_op;
using strata::defrag_options;
using strata::defrag_stats;
using strata::device_allocation;
using strata::device_allocation_info;
using strata::device_error;
using strata::device_pool;
using strata::device_pool_options;
using strata::resource_kind;
using strata::test::recording_handler;
using strata::test::test_rng;

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

// Device memory as host buffers, one per memory handle; refuses on demand.
struct fake_device {
    std::map<std::uint64_t, std::vector<unsigned char>> memory;
    std::uint64_t next = 100;
    std::uint64_t refuse_above = ~std::uint64_t{0}; // sizes above this are refused
    bool refuse_all = false;
    std::vector<std::uint64_t> asked; // every size asked for, refused or not
    std::uint32_t frees = 0;

    strata::device_memory_callbacks callbacks() {
        return {[this](std::uint64_t size, std::uint64_t* out) {
                    asked.push_back(size);
                    if (refuse_all || size > refuse_above) return false;
                    memory.emplace(next, std::vector<unsigned char>(static_cast<std::size_t>(size), 0xee));
                    *out = next++;
                    return true;
                },
                [this](std::uint64_t m, std::uint64_t size) {
                    auto it = memory.find(m);
                    EXPECT_NE(it, memory.end()) << "free of unknown memory " << m;
                    if (it == memory.end()) return;
                    EXPECT_EQ(it->second.size(), size) << "free with another size";
                    memory.erase(it);
                    ++frees;
                }};
    }
    [[nodiscard]] std::uint64_t bytes() const {
        std::uint64_t b = 0;
        for (const auto& [m, v] : memory)
            b += v.size();
        return b;
    }
    unsigned char* at(std::uint64_t m, std::uint64_t offset) { return memory.at(m).data() + offset; }
};

// What the test knows of each live allocation: its request and its pattern seed.
struct expected_allocation {
    std::uint64_t size;  // requested bytes
    std::uint64_t align; // requested alignment
    resource_kind kind;
    std::uint32_t seed;
};

unsigned char pattern(std::uint32_t seed, std::uint64_t i) {
    return static_cast<unsigned char>(seed * 151u + i * 31u + (i >> 8) * 7u);
}

// A pool over a fake device plus the contents the test wrote into it.
struct pool_fixture {
    fake_device dev;
    device_pool pool;
    std::map<device_allocation, expected_allocation> live;
    std::uint32_t next_seed = 1;

    explicit pool_fixture(const device_pool_options& o) : pool(dev.callbacks(), o) {}
    ~pool_fixture() {
        for (const auto& [h, e] : live)
            pool.deallocate(h);
    }
    pool_fixture(const pool_fixture&) = delete;
    pool_fixture& operator=(const pool_fixture&) = delete;

    // Allocates, checks the answer against the request and fills the allocation with its pattern.
    device_allocation take(std::uint64_t size, std::uint64_t align = 1,
                           resource_kind kind = resource_kind::linear) {
        const device_allocation h = pool.allocate(size, align, kind);
        if (!h) return h;
        EXPECT_EQ(pool.last_error(), device_error::none);
        const device_allocation_info* i = pool.info(h);
        EXPECT_NE(i, nullptr);
        if (i == nullptr) return h;
        EXPECT_GE(i->size, size);
        EXPECT_EQ(i->offset % align, 0u) << "align " << align;
        EXPECT_EQ(i->kind, kind);
        EXPECT_LE(i->offset + i->size, dev.memory.at(i->memory).size());
        const expected_allocation e{size, align, kind, next_seed++};
        unsigned char* p = dev.at(i->memory, i->offset);
        for (std::uint64_t k = 0; k < size; ++k)
            p[k] = pattern(e.seed, k);
        live.emplace(h, e);
        return h;
    }
    void give(device_allocation h) {
        EXPECT_TRUE(verify(h));
        EXPECT_TRUE(pool.deallocate(h));
        live.erase(h);
    }

    ::testing::AssertionResult verify(device_allocation h) {
        const device_allocation_info* i = pool.info(h);
        if (i == nullptr) return ::testing::AssertionFailure() << "no info for a live allocation";
        const expected_allocation& e = live.at(h);
        if (i->offset % e.align != 0) return ::testing::AssertionFailure() << "lost its alignment";
        if (i->kind != e.kind) return ::testing::AssertionFailure() << "lost its kind";
        const unsigned char* p = dev.at(i->memory, i->offset);
        for (std::uint64_t k = 0; k < e.size; ++k)
            if (p[k] != pattern(e.seed, k))
                return ::testing::AssertionFailure() << "byte " << k << " of an allocation of " << e.size
                                                     << " at " << i->offset << " changed";
        return ::testing::AssertionSuccess();
    }
    ::testing::AssertionResult verify_all() {
        std::size_t n = 0;
        pool.for_each_allocation([&](device_allocation, const device_allocation_info&) { ++n; });
        if (n != live.size()) return ::testing::AssertionFailure() << "for_each_allocation saw " << n;
        for (const auto& [h, e] : live) {
            auto r = verify(h);
            if (!r) return r;
        }
        // Live allocations of one memory never overlap. A shared one's size is its heap block's,
        // slack included (also after a move: the destination's block), at least the request.
        std::map<std::uint64_t, std::map<std::uint64_t, std::uint64_t>> ranges;
        std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> used_blocks;
        for (std::uint32_t b = 0; b < pool.block_slots(); ++b)
            if (const strata::offset_heap* heap = pool.block(b))
                heap->for_each_block([&](const strata::offset_block_info& u) {
                    if (u.used) used_blocks[{b, u.offset}] = u.size;
                });
        for (const auto& [h, e] : live) {
            const device_allocation_info* i = pool.info(h);
            ranges[i->memory][i->offset] = i->size;
            if (i->size < e.size)
                return ::testing::AssertionFailure() << "size " << i->size << " below the request " << e.size;
            if (i->dedicated) continue;
            const std::uint64_t unit = pool.options().min_alignment;
            if (i->size % unit != 0)
                return ::testing::AssertionFailure() << "size " << i->size << " off the min_alignment grid";
            auto u = used_blocks.find({i->block, i->offset});
            if (u == used_blocks.end() || u->second != i->size)
                return ::testing::AssertionFailure()
                       << "size " << i->size << " at " << i->offset << " is not its heap block's";
        }
        for (const auto& [m, r] : ranges) {
            std::uint64_t end = 0;
            for (const auto& [off, size] : r) {
                if (off < end) return ::testing::AssertionFailure() << "allocations overlap at " << off;
                end = off + size;
            }
        }
        return ::testing::AssertionSuccess();
    }

    [[nodiscard]] std::uint64_t live_bytes() const {
        std::uint64_t b = 0;
        for (const auto& [h, e] : live)
            b += pool.info(h)->size;
        return b;
    }
};

bool overlap(std::uint64_t m1, std::uint64_t o1, std::uint64_t s1, std::uint64_t m2, std::uint64_t o2,
             std::uint64_t s2) {
    return m1 == m2 && o1 < o2 + s2 && o2 < o1 + s1;
}

// How a test treats the moves of a pass.
enum class pass_mode { copy_all, ignore_some, cancel };

// Runs one pass: checks every move against the pool and the others, performs the copy moves with
// memcpy (scribbling over each source afterwards: it is freed at end_pass), scribbles over the
// destination of each ignored move, commits (or cancels the defragmentation), and verifies every
// live byte. Returns the number of moves.
std::size_t run_pass(pool_fixture& f, pass_mode mode, test_rng& rng, std::uint64_t max_bytes = 0,
                     std::uint32_t max_moves = 0) {
    std::span<defrag_move> moves = f.pool.begin_pass();
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < moves.size(); ++i) {
        const defrag_move& m = moves[i];
        const device_allocation_info* info = f.pool.info(m.allocation);
        EXPECT_NE(info, nullptr);
        if (info == nullptr) continue;
        const expected_allocation& e = f.live.at(m.allocation);
        EXPECT_EQ(m.op, defrag_op::copy);
        EXPECT_FALSE(info->dedicated);
        EXPECT_EQ(m.src_memory, info->memory);
        EXPECT_EQ(m.src_block, info->block);
        EXPECT_EQ(m.src_offset, info->offset);
        // A move copies the request rounded up to min_alignment (the block's slack is not copied).
        const std::uint64_t unit = f.pool.options().min_alignment;
        EXPECT_EQ(m.size, (e.size + unit - 1) / unit * unit);
        EXPECT_LE(m.size, info->size);
        EXPECT_EQ(m.dst_offset % e.align, 0u) << "a destination loses the alignment";
        EXPECT_EQ(f.dev.memory.count(m.dst_memory), 1u);
        EXPECT_NE(f.pool.block(m.dst_block), nullptr);
        if (f.pool.block(m.dst_block) != nullptr) {
            EXPECT_LE(m.dst_offset + m.size, f.pool.block(m.dst_block)->size());
        }
        EXPECT_FALSE(overlap(m.src_memory, m.src_offset, m.size, m.dst_memory, m.dst_offset, m.size))
            << "a move's source and destination overlap";
        for (std::size_t j = 0; j < i; ++j) {
            const defrag_move& n = moves[j];
            EXPECT_FALSE(overlap(m.src_memory, m.src_offset, m.size, n.dst_memory, n.dst_offset, n.size));
            EXPECT_FALSE(overlap(m.dst_memory, m.dst_offset, m.size, n.src_memory, n.src_offset, n.size));
            EXPECT_FALSE(overlap(m.dst_memory, m.dst_offset, m.size, n.dst_memory, n.dst_offset, n.size));
            EXPECT_FALSE(overlap(m.src_memory, m.src_offset, m.size, n.src_memory, n.src_offset, n.size));
            EXPECT_NE(m.allocation, n.allocation);
        }
        bytes += m.size;
    }
    if (max_bytes != 0) {
        EXPECT_LE(bytes, max_bytes);
    }
    if (max_moves != 0) {
        EXPECT_LE(moves.size(), max_moves);
    }
    EXPECT_TRUE(f.pool.check());
    // The sources are still allocated: the pool's figures count each moved allocation once.
    EXPECT_EQ(f.pool.stats().used_bytes, f.live_bytes());
    if (moves.empty()) return 0;
    for (defrag_move& m : moves) {
        if (mode == pass_mode::ignore_some && rng.between(0, 2) == 0) m.op = defrag_op::ignore;
        if (m.op == defrag_op::copy && mode != pass_mode::cancel) {
            std::memcpy(f.dev.at(m.dst_memory, m.dst_offset), f.dev.at(m.src_memory, m.src_offset), m.size);
        } else {
            std::memset(f.dev.at(m.dst_memory, m.dst_offset), 0xab, m.size);
        }
    }
    std::vector<std::pair<device_allocation, defrag_move>> done(moves.size());
    for (std::size_t i = 0; i < moves.size(); ++i)
        done[i] = {moves[i].allocation, moves[i]};
    if (mode == pass_mode::cancel) {
        (void)f.pool.end_defragmentation();
    } else {
        // The copies are done: scribble over each source before the commit frees it.
        for (const defrag_move& m : moves)
            if (m.op == defrag_op::copy) std::memset(f.dev.at(m.src_memory, m.src_offset), 0xcd, m.size);
        EXPECT_TRUE(f.pool.end_pass());
    }
    for (const auto& [h, m] : done) {
        const device_allocation_info* info = f.pool.info(h);
        if (info == nullptr) continue;
        const bool moved = mode != pass_mode::cancel && m.op == defrag_op::copy;
        EXPECT_EQ(info->memory, moved ? m.dst_memory : m.src_memory);
        EXPECT_EQ(info->block, moved ? m.dst_block : m.src_block);
        EXPECT_EQ(info->offset, moved ? m.dst_offset : m.src_offset);
    }
    EXPECT_TRUE(f.pool.check());
    EXPECT_TRUE(f.verify_all());
    return done.size();
}

// Runs passes until one has no moves (at most `limit`); returns the defragmentation's figures.
defrag_stats defragment(pool_fixture& f, test_rng& rng, pass_mode mode = pass_mode::copy_all,
                        const defrag_options& o = {}, int limit = 1000) {
    EXPECT_TRUE(f.pool.begin_defragmentation(o));
    EXPECT_TRUE(f.pool.defragmenting());
    int passes = 0;
    while (run_pass(f, mode, rng, o.max_bytes_per_pass, o.max_moves_per_pass) != 0 && ++passes < limit) {
    }
    EXPECT_LT(passes, limit) << "defragmentation did not converge";
    const defrag_stats s = f.pool.end_defragmentation();
    EXPECT_FALSE(f.pool.defragmenting());
    EXPECT_TRUE(f.pool.check());
    return s;
}

device_pool_options small_blocks(std::uint64_t block = 1 * MiB) {
    device_pool_options o;
    o.block_size = block;
    o.nodes_per_block = 1024;
    return o;
}

// -- construction -------------------------------------------------------------------------------------

TEST(DevicePool, ConstructionRefusesInvalidOptions) {
    fake_device dev;
    auto o = small_blocks();
    EXPECT_THROW(device_pool({}, o), std::invalid_argument);
    EXPECT_THROW(device_pool({dev.callbacks().allocate, {}}, o), std::invalid_argument);
    EXPECT_THROW(device_pool({{}, dev.callbacks().free}, o), std::invalid_argument);
    auto bad = o;
    bad.block_size = 0;
    EXPECT_THROW(device_pool(dev.callbacks(), bad), std::invalid_argument);
    bad = o;
    bad.min_alignment = 24;
    EXPECT_THROW(device_pool(dev.callbacks(), bad), std::invalid_argument);
    bad = o;
    bad.granularity = 0;
    EXPECT_THROW(device_pool(dev.callbacks(), bad), std::invalid_argument);
    bad = o;
    bad.nodes_per_block = 1;
    EXPECT_THROW(device_pool(dev.callbacks(), bad), std::invalid_argument);
    bad = o;
    bad.block_size = std::uint64_t{1} << 36; // 2^32 units of 16 bytes
    EXPECT_THROW(device_pool(dev.callbacks(), bad), std::invalid_argument);
    device_pool p(dev.callbacks(), o);
    EXPECT_EQ(p.options().dedicated_threshold, 512 * KiB); // 0 means half a block
    EXPECT_TRUE(dev.asked.empty());                        // nothing until the first request
    EXPECT_EQ(p.stats().device_bytes, 0u);
    EXPECT_TRUE(p.check());
}

// -- bad input ------------------------------------------------------------------------------------------

TEST(DevicePool, InvalidArgumentsAreRefusedWithNoStateChange) {
    pool_fixture f(small_blocks());
    const device_allocation keep = f.take(100);
    ASSERT_TRUE(keep);
    const std::string before = f.pool.to_json();
    const std::size_t asked = f.dev.asked.size();
    for (auto [size, align] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
             {0, 1}, {64, 0}, {64, 3}, {64, 96}, {~std::uint64_t{0}, 1}, {~std::uint64_t{0} - 8, 16}}) {
        EXPECT_FALSE(f.pool.allocate(size, align)) << size << " " << align;
        EXPECT_EQ(f.pool.last_error(), device_error::invalid_argument);
    }
    EXPECT_EQ(f.dev.asked.size(), asked);
    EXPECT_EQ(f.pool.to_json(), before);
    EXPECT_TRUE(f.pool.check());
    EXPECT_TRUE(f.take(16));
    EXPECT_EQ(f.pool.last_error(), device_error::none);
    EXPECT_STREQ(strata::to_string(device_error::none), "none");
    EXPECT_STREQ(strata::to_string(device_error::invalid_argument), "invalid_argument");
    EXPECT_STREQ(strata::to_string(device_error::budget_exceeded), "budget_exceeded");
    EXPECT_STREQ(strata::to_string(device_error::out_of_device_memory), "out_of_device_memory");
}

TEST(DevicePool, StaleNullAndForgedHandlesAreRefused) {
    pool_fixture f(small_blocks());
    const device_allocation a = f.take(100);
    const device_allocation d = f.take(600 * KiB); // dedicated
    const device_allocation gone = f.pool.allocate(64);
    ASSERT_TRUE(a && d && gone);
    ASSERT_TRUE(f.pool.deallocate(gone));
    const device_allocation reused = f.take(64); // same slot, next generation
    ASSERT_TRUE(reused);
    const std::string before = f.pool.to_json();
    const device_allocation forged = device_allocation::from_parts(12345, 3);
    const device_allocation wrong_generation = device_allocation::from_parts(a.index(), a.generation() + 1);
    for (const device_allocation h : {device_allocation{}, gone, forged, wrong_generation}) {
        EXPECT_EQ(f.pool.info(h), nullptr);
        recording_handler rec;
        EXPECT_FALSE(f.pool.deallocate(h));
        if (strata::test::checks_on) {
            EXPECT_TRUE(rec.saw_one(strata::violation_kind::stale_handle));
            EXPECT_EQ(rec.last().allocator, "strata::device_pool");
        } else {
            EXPECT_TRUE(rec.empty());
        }
    }
    EXPECT_EQ(f.pool.to_json(), before);
    EXPECT_TRUE(f.pool.check());
    EXPECT_TRUE(f.verify_all());
}

// -- routing
// -------------------------------------------------------------------------------------------------

TEST(DevicePool, AllocationsShareBlocksAndHonourEveryAlignment) {
    pool_fixture f(small_blocks(4 * MiB));
    std::vector<device_allocation> hs;
    for (unsigned k = 0; k <= 20; ++k) {
        const device_allocation h =
            f.take(100 + k, std::uint64_t{1} << k, k % 2 ? resource_kind::optimal : resource_kind::linear);
        ASSERT_TRUE(h) << k;
        EXPECT_FALSE(f.pool.info(h)->dedicated);
        EXPECT_EQ(f.pool.info(h)->size, (100 + k + 15) / 16 * 16);
    }
    EXPECT_EQ(f.pool.stats().blocks, 1u);
    EXPECT_EQ(f.dev.memory.size(), 1u);
    // An alignment whose padding no longer fits a block: memory of its own.
    const device_allocation big_align = f.take(100, 4 * MiB);
    ASSERT_TRUE(big_align);
    EXPECT_TRUE(f.pool.info(big_align)->dedicated);
    EXPECT_TRUE(f.pool.check());
    EXPECT_TRUE(f.verify_all());
}

TEST(DevicePool, MinAlignmentRoundsEverySize) {
    auto o = small_blocks();
    o.min_alignment = 256;
    pool_fixture f(o);
    const device_allocation a = f.take(1);
    const device_allocation b = f.take(257, 64);
    EXPECT_EQ(f.pool.info(a)->size, 256u);
    EXPECT_EQ(f.pool.info(b)->size, 512u);
    EXPECT_EQ(f.pool.info(b)->offset % 256, 0u);
    EXPECT_EQ(f.pool.stats().used_bytes, 768u);
}

TEST(DevicePool, DedicatedThresholdSendsLargeRequestsToTheirOwnMemory) {
    pool_fixture f(small_blocks());
    const device_allocation below = f.take(512 * KiB - 1);
    ASSERT_TRUE(below);
    EXPECT_FALSE(f.pool.info(below)->dedicated);
    const device_allocation at = f.take(512 * KiB);
    ASSERT_TRUE(at);
    const device_allocation_info* i = f.pool.info(at);
    EXPECT_TRUE(i->dedicated);
    EXPECT_EQ(i->offset, 0u);
    EXPECT_EQ(i->size, 512 * KiB);
    EXPECT_EQ(f.dev.memory.at(i->memory).size(), 512 * KiB);
    EXPECT_EQ(f.pool.block(i->block), nullptr);     // a dedicated slot has no heap
    const device_allocation huge = f.take(3 * MiB); // larger than a block
    ASSERT_TRUE(huge);
    EXPECT_TRUE(f.pool.info(huge)->dedicated);
    const auto s = f.pool.stats();
    EXPECT_EQ(s.dedicated, 2u);
    EXPECT_EQ(s.blocks, 1u);
    EXPECT_EQ(s.device_bytes, 1 * MiB + 512 * KiB + 3 * MiB);
    EXPECT_EQ(s.device_bytes, f.dev.bytes());
    EXPECT_EQ(s.used_bytes, f.live_bytes());
    EXPECT_EQ(s.allocations, 3u);
    EXPECT_TRUE(f.pool.check());
    const std::uint32_t frees = f.dev.frees;
    f.give(at);
    EXPECT_EQ(f.dev.frees, frees + 1); // its memory goes back at once
    EXPECT_EQ(f.pool.stats().dedicated, 1u);
    EXPECT_TRUE(f.pool.check());

    auto o = small_blocks();
    o.dedicated_threshold = 1000;
    pool_fixture g(o);
    EXPECT_FALSE(g.pool.info(g.take(999))->dedicated);
    EXPECT_TRUE(g.pool.info(g.take(1000))->dedicated);
}

// A shared request goes to the block that served the last one when it fits there, else to the first
// block with enough free bytes that serves it.
TEST(DevicePool, ASharedRequestTriesTheBlockThatServedTheLastOneFirst) {
    auto o = small_blocks();
    o.keep_empty_blocks = 0;
    pool_fixture f(o);
    const device_allocation a = f.take(400 * KiB);
    ASSERT_TRUE(a && f.take(400 * KiB));
    const std::uint32_t first = f.pool.info(a)->block;
    const device_allocation b = f.take(300 * KiB); // 224 KiB left in the first block: a new one
    ASSERT_TRUE(b);
    const std::uint32_t second = f.pool.info(b)->block;
    ASSERT_NE(second, first);
    // The first block fits 100 KiB, but the second served last.
    const device_allocation c = f.take(100 * KiB);
    ASSERT_TRUE(c);
    EXPECT_EQ(f.pool.info(c)->block, second);
    const device_allocation d = f.take(500 * KiB); // the second block: 124 KiB left
    ASSERT_TRUE(d);
    EXPECT_EQ(f.pool.info(d)->block, second);
    // Too large for the second: the first block, which then serves the next request.
    const device_allocation e = f.take(200 * KiB);
    ASSERT_TRUE(e);
    EXPECT_EQ(f.pool.info(e)->block, first);
    const device_allocation g = f.take(10 * KiB);
    ASSERT_TRUE(g);
    EXPECT_EQ(f.pool.info(g)->block, first);
    // 14 KiB left in the first, 124 KiB in the second: the second.
    const device_allocation k = f.take(100 * KiB);
    ASSERT_TRUE(k);
    EXPECT_EQ(f.pool.info(k)->block, second);
    // The block that served last is freed: the next request goes to the first block it fits.
    for (const device_allocation h : {b, c, d, k})
        f.give(h);
    EXPECT_EQ(f.pool.block(second), nullptr);
    const device_allocation m = f.take(10 * KiB);
    ASSERT_TRUE(m);
    EXPECT_EQ(f.pool.info(m)->block, first);
    EXPECT_EQ(f.pool.stats().blocks, 1u);
    EXPECT_TRUE(f.pool.check());
    EXPECT_TRUE(f.verify_all());
}

TEST(DevicePool, ANewBlockIsMadeWhenNoneFits) {
    pool_fixture f(small_blocks());
    std::vector<device_allocation> hs;
    for (int i = 0; i < 12; ++i)
        hs.push_back(f.take(256 * KiB - 16 * static_cast<std::uint64_t>(i)));
    EXPECT_EQ(f.pool.stats().blocks, 3u);
    EXPECT_EQ(f.dev.memory.size(), 3u);
    EXPECT_EQ(f.pool.stats().total_allocations, 12u);
    EXPECT_TRUE(f.pool.check());
    EXPECT_TRUE(f.verify_all());
}

// -- budget and device refusals
// ------------------------------------------------------------------------------

TEST(DevicePool, BudgetHalvesTheBlockThenRefuses) {
    auto o = small_blocks();
    o.budget = 1 * MiB + 600 * KiB;
    pool_fixture f(o);
    const device_allocation a = f.take(400 * KiB);
    const device_allocation b = f.take(400 * KiB);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(f.dev.bytes(), 1 * MiB);
    // A third does not fit the first block: a whole block would pass the budget, half fits it.
    const device_allocation c = f.take(400 * KiB);
    ASSERT_TRUE(c);
    EXPECT_EQ(f.dev.bytes(), 1 * MiB + 512 * KiB);
    EXPECT_EQ(f.dev.memory.at(f.pool.info(c)->memory).size(), 512 * KiB);
    EXPECT_EQ(f.pool.stats().blocks, 2u);
    // Nothing else fits: neither a new block nor dedicated memory.
    const std::string before = f.pool.to_json();
    EXPECT_FALSE(f.pool.allocate(400 * KiB));
    EXPECT_EQ(f.pool.last_error(), device_error::budget_exceeded);
    EXPECT_FALSE(f.pool.allocate(900 * KiB)); // dedicated
    EXPECT_EQ(f.pool.last_error(), device_error::budget_exceeded);
    EXPECT_EQ(f.pool.to_json(), before);
    EXPECT_TRUE(f.pool.check());
    // Space inside the blocks is still served.
    EXPECT_TRUE(f.take(100 * KiB));
    EXPECT_EQ(f.pool.last_error(), device_error::none);
    EXPECT_TRUE(f.verify_all());
}

TEST(DevicePool, DeviceRefusalHalvesTheBlockThenReportsOutOfDeviceMemory) {
    pool_fixture f(small_blocks());
    f.dev.refuse_above = 300 * KiB;
    const device_allocation a = f.take(100 * KiB);
    ASSERT_TRUE(a);
    EXPECT_EQ(f.dev.memory.at(f.pool.info(a)->memory).size(), 256 * KiB);
    EXPECT_EQ((std::vector<std::uint64_t>{1 * MiB, 512 * KiB, 256 * KiB}), f.dev.asked);
    // A request the halved block cannot hold, and dedicated memory the device refuses.
    f.dev.refuse_all = true;
    const std::string before = f.pool.to_json();
    EXPECT_FALSE(f.pool.allocate(200 * KiB));
    EXPECT_EQ(f.pool.last_error(), device_error::out_of_device_memory);
    EXPECT_FALSE(f.pool.allocate(700 * KiB));
    EXPECT_EQ(f.pool.last_error(), device_error::out_of_device_memory);
    EXPECT_EQ(f.pool.to_json(), before);
    EXPECT_TRUE(f.pool.check());
    f.dev.refuse_all = false;
    f.dev.refuse_above = ~std::uint64_t{0};
    const device_allocation d = f.take(700 * KiB);
    ASSERT_TRUE(d);
    EXPECT_TRUE(f.pool.info(d)->dedicated);
    EXPECT_TRUE(f.pool.check());
}

// A block size that is not a multiple of min_alignment: its heap holds less than the block, and a
// request that rounds up past that is not served from a block too small for it.
TEST(DevicePool, ARequestThatRoundsUpPastTheBlockIsNotServedFromIt) {
    auto o = small_blocks(1000);
    o.dedicated_threshold = 4096;
    pool_fixture f(o);
    const device_allocation a = f.take(995); // 1008 bytes rounded: the 992-byte heap cannot hold it
    ASSERT_TRUE(a);
    EXPECT_TRUE(f.pool.info(a)->dedicated);
    EXPECT_EQ(f.pool.stats().blocks, 0u);
    EXPECT_TRUE(f.pool.check());
    // Halving under a budget: 48 bytes pass it, 24 (a 16-byte heap) cannot hold 20 bytes rounded.
    auto h = small_blocks(48);
    h.dedicated_threshold = 1000;
    h.budget = 30;
    pool_fixture g(h);
    const std::string before = g.pool.to_json();
    EXPECT_FALSE(g.pool.allocate(20));
    EXPECT_EQ(g.pool.last_error(), device_error::budget_exceeded);
    EXPECT_EQ(g.pool.to_json(), before);
    EXPECT_TRUE(g.dev.memory.empty());
    EXPECT_TRUE(g.pool.check());
}

TEST(DevicePool, HalvingStopsAtTheRequestSize) {
    pool_fixture f(small_blocks());
    f.dev.refuse_above = 200 * KiB;
    EXPECT_FALSE(f.pool.allocate(300 * KiB)); // 1 MiB and 512 KiB refused; 256 KiB cannot hold it
    EXPECT_EQ(f.pool.last_error(), device_error::out_of_device_memory);
    EXPECT_EQ((std::vector<std::uint64_t>{1 * MiB, 512 * KiB}), f.dev.asked);
    EXPECT_EQ(f.pool.stats().device_bytes, 0u);
    EXPECT_TRUE(f.pool.check());
}

TEST(DevicePool, ACallbackThatThrowsLeavesThePoolUnchanged) {
    fake_device dev;
    bool throw_next = false;
    strata::device_memory_callbacks cb = dev.callbacks();
    cb.allocate = [&throw_next, inner = cb.allocate](std::uint64_t size, std::uint64_t* out) {
        if (throw_next) throw std::runtime_error("device lost");
        return inner(size, out);
    };
    device_pool pool(std::move(cb), small_blocks());
    const device_allocation a = pool.allocate(100);
    const device_allocation d = pool.allocate(700 * KiB); // dedicated: a slot of its own
    ASSERT_TRUE(a && d);
    ASSERT_TRUE(pool.deallocate(d)); // its slot is free for the next one
    const device_allocation fill1 = pool.allocate(500 * KiB);
    const device_allocation fill2 = pool.allocate(500 * KiB); // the block is full
    ASSERT_TRUE(fill1 && fill2);
    ASSERT_EQ(pool.stats().blocks, 1u);
    const std::uint32_t slots = pool.block_slots();
    const std::string before = pool.to_json();
    throw_next = true;
    EXPECT_THROW((void)pool.allocate(700 * KiB), std::runtime_error); // dedicated
    EXPECT_THROW((void)pool.allocate(900 * KiB, 1, resource_kind::optimal), std::runtime_error);
    EXPECT_THROW((void)pool.allocate(500 * KiB), std::runtime_error); // a new block
    EXPECT_EQ(pool.to_json(), before);
    EXPECT_EQ(pool.block_slots(), slots);
    EXPECT_TRUE(pool.check());
    throw_next = false;
    ASSERT_TRUE(pool.deallocate(fill1));
    ASSERT_TRUE(pool.deallocate(fill2));
    // The free slot is still there: a dedicated allocation takes it rather than a new one.
    const device_allocation again = pool.allocate(700 * KiB);
    ASSERT_TRUE(again);
    EXPECT_EQ(pool.block_slots(), slots);
    EXPECT_TRUE(pool.check());
    EXPECT_TRUE(pool.deallocate(again));
    EXPECT_TRUE(pool.deallocate(a));
}

// -- retention
// --------------------------------------------------------------------------------------------------

TEST(DevicePool, EmptyBlocksAreKeptUpToTheOption) {
    for (std::uint32_t keep : {0u, 1u, 2u}) {
        auto o = small_blocks();
        o.keep_empty_blocks = keep;
        pool_fixture f(o);
        std::vector<device_allocation> hs;
        for (int i = 0; i < 9; ++i)
            hs.push_back(f.take(400 * KiB)); // two a block: five blocks
        ASSERT_EQ(f.pool.stats().blocks, 5u);
        for (const device_allocation h : hs)
            f.give(h);
        EXPECT_EQ(f.pool.stats().blocks, keep) << keep;
        EXPECT_EQ(f.dev.memory.size(), keep);
        EXPECT_EQ(f.pool.stats().device_bytes, keep * MiB);
        EXPECT_TRUE(f.pool.check());
        // A kept block is reused: no new device memory.
        const std::size_t asked = f.dev.asked.size();
        const device_allocation again = f.take(100);
        if (keep != 0) {
            EXPECT_EQ(f.dev.asked.size(), asked);
        }
        f.give(again);
        EXPECT_EQ(f.pool.trim(), keep);
        EXPECT_EQ(f.pool.stats().blocks, 0u);
        EXPECT_EQ(f.pool.stats().device_bytes, 0u);
        EXPECT_TRUE(f.dev.memory.empty());
        EXPECT_EQ(f.pool.trim(), 0u);
        EXPECT_TRUE(f.pool.check());
    }
}

TEST(DevicePool, TrimKeepsBlocksInUse) {
    auto o = small_blocks();
    o.keep_empty_blocks = 4;
    pool_fixture f(o);
    const device_allocation a = f.take(500 * KiB);
    const device_allocation b = f.take(500 * KiB);
    const device_allocation c = f.take(400 * KiB); // a second block
    EXPECT_EQ(f.pool.stats().blocks, 2u);
    f.give(c);
    EXPECT_EQ(f.pool.stats().blocks, 2u); // kept
    EXPECT_EQ(f.pool.trim(), 1u);
    EXPECT_EQ(f.pool.stats().blocks, 1u);
    EXPECT_TRUE(f.verify(a));
    EXPECT_TRUE(f.verify(b));
    EXPECT_TRUE(f.pool.check());
}

TEST(DevicePool, DestroyingAPoolFreesItsMemoryAndReportsLeaks) {
    fake_device dev;
    {
        recording_handler rec;
        {
            device_pool p(dev.callbacks(), small_blocks());
            ASSERT_TRUE(p.allocate(100));
            ASSERT_TRUE(p.allocate(700 * KiB));
        }
        if (strata::test::checks_on) {
            EXPECT_TRUE(rec.saw_one(strata::violation_kind::leak));
        } else {
            EXPECT_TRUE(rec.empty());
        }
    }
    EXPECT_TRUE(dev.memory.empty());
}

// -- statistics and JSON
// ------------------------------------------------------------------------------------------

TEST(DevicePool, StatisticsAgreeWithTheBlocks) {
    pool_fixture f(small_blocks());
    test_rng rng{42};
    std::vector<device_allocation> hs;
    for (int i = 0; i < 200; ++i)
        hs.push_back(f.take(rng.between(16, 40 * KiB), std::uint64_t{1} << rng.between(0, 8)));
    hs.push_back(f.take(800 * KiB));
    for (std::size_t i = 0; i < hs.size(); i += 3)
        f.give(hs[i]);
    const auto s = f.pool.stats();
    std::uint64_t free_bytes = 0, largest = 0;
    std::uint32_t blocks = 0;
    for (std::uint32_t i = 0; i < f.pool.block_slots(); ++i) {
        const strata::offset_heap* h = f.pool.block(i);
        if (h == nullptr) continue;
        ++blocks;
        free_bytes += h->free_bytes();
        largest = std::max(largest, h->largest_free_block());
    }
    EXPECT_EQ(s.blocks, blocks);
    EXPECT_EQ(s.free_bytes, free_bytes);
    EXPECT_EQ(s.largest_free_block, largest);
    EXPECT_EQ(s.used_bytes, f.live_bytes());
    EXPECT_EQ(s.device_bytes, f.dev.bytes());
    EXPECT_EQ(s.allocations, f.live.size());
    EXPECT_EQ(s.dedicated, 1u); // the 800 KiB one (index 200) is still live
    EXPECT_EQ(s.total_allocations, 201u);
    EXPECT_DOUBLE_EQ(s.fragmentation(), 1.0 - static_cast<double>(largest) / static_cast<double>(free_bytes));
}

TEST(DevicePool, ToJsonParsesAndAgreesWithTheStatistics) {
    pool_fixture f(small_blocks());
    for (int i = 0; i < 20; ++i)
        f.take(30 * KiB + 100 * static_cast<std::uint64_t>(i), 1,
               i % 2 ? resource_kind::optimal : resource_kind::linear);
    f.take(600 * KiB);
    const auto s = f.pool.stats();
    const std::string json = f.pool.to_json();
#if STRATA_TEST_HAVE_JSON
    const nlohmann::json j = nlohmann::json::parse(json);
    EXPECT_EQ(j.at("blocks").get<std::uint32_t>(), s.blocks);
    EXPECT_EQ(j.at("dedicated").get<std::uint32_t>(), s.dedicated);
    EXPECT_EQ(j.at("device_bytes").get<std::uint64_t>(), s.device_bytes);
    EXPECT_EQ(j.at("used_bytes").get<std::uint64_t>(), s.used_bytes);
    EXPECT_EQ(j.at("free_bytes").get<std::uint64_t>(), s.free_bytes);
    EXPECT_EQ(j.at("allocations").get<std::uint32_t>(), s.allocations);
    EXPECT_EQ(j.at("total_allocations").get<std::uint64_t>(), s.total_allocations);
    const nlohmann::json& list = j.at("block_list");
    ASSERT_EQ(list.size(), s.blocks + s.dedicated);
    std::size_t heaps = 0, blocks_listed = 0;
    for (const nlohmann::json& b : list) {
        if (b.at("dedicated").get<bool>()) continue;
        ++heaps;
        const nlohmann::json& heap = b.at("heap");
        blocks_listed += heap.at("blocks").size();
        EXPECT_EQ(heap.at("blocks").size(),
                  heap.at("allocations").get<std::size_t>() + heap.at("free_blocks").get<std::size_t>());
    }
    EXPECT_EQ(heaps, s.blocks);
    EXPECT_GT(blocks_listed, 20u);
    const nlohmann::json bare = nlohmann::json::parse(f.pool.to_json(false));
    for (const nlohmann::json& b : bare.at("block_list"))
        if (!b.at("dedicated").get<bool>()) {
            EXPECT_FALSE(b.at("heap").contains("blocks"));
        }
#else
    int depth = 0;
    for (char c : json) {
        depth += c == '{' || c == '[';
        depth -= c == '}' || c == ']';
        ASSERT_GE(depth, 0);
    }
    EXPECT_EQ(depth, 0);
    EXPECT_NE(json.find("\"allocations\":" + std::to_string(s.allocations)), std::string::npos);
#endif
}

// -- defragmentation: refusals
// --------------------------------------------------------------------------------------

TEST(DevicePool, DefragmentationCallsOutOfOrderAreRefused) {
    pool_fixture f(small_blocks());
    std::vector<device_allocation> hs;
    for (int i = 0; i < 30; ++i)
        hs.push_back(f.take(50 * KiB));
    for (std::size_t i = 0; i < hs.size(); i += 2)
        f.give(hs[i]);
    auto expect_refusal = [](auto&& call, const char* what) {
        recording_handler rec;
        call();
        if (strata::test::checks_on) {
            EXPECT_TRUE(rec.saw_one(strata::violation_kind::invalid_argument)) << what;
        } else {
            EXPECT_TRUE(rec.empty()) << what;
        }
    };
    expect_refusal([&] { EXPECT_TRUE(f.pool.begin_pass().empty()); }, "begin_pass with no defragmentation");
    expect_refusal([&] { EXPECT_FALSE(f.pool.end_pass()); }, "end_pass with no defragmentation");
    ASSERT_TRUE(f.pool.begin_defragmentation());
    expect_refusal([&] { EXPECT_FALSE(f.pool.begin_defragmentation()); }, "begin_defragmentation twice");
    expect_refusal([&] { EXPECT_FALSE(f.pool.end_pass()); }, "end_pass with no pass");
    const std::span<defrag_move> moves = f.pool.begin_pass();
    ASSERT_FALSE(moves.empty());
    const std::size_t n = moves.size();
    const std::string during = f.pool.to_json();
    expect_refusal([&] { EXPECT_TRUE(f.pool.begin_pass().empty()); }, "begin_pass with a pass in flight");
    expect_refusal([&] { EXPECT_FALSE(f.pool.begin_defragmentation()); }, "begin_defragmentation in a pass");
    EXPECT_EQ(f.pool.to_json(), during);
    EXPECT_TRUE(f.pool.check());
    for (defrag_move& m : moves)
        std::memcpy(f.dev.at(m.dst_memory, m.dst_offset), f.dev.at(m.src_memory, m.src_offset), m.size);
    EXPECT_TRUE(f.pool.end_pass());
    const defrag_stats s = f.pool.end_defragmentation();
    EXPECT_EQ(s.passes, 1u);
    EXPECT_EQ(s.allocations_moved, n);
    EXPECT_TRUE(f.verify_all());
    // The next begin starts afresh.
    ASSERT_TRUE(f.pool.begin_defragmentation());
    EXPECT_EQ(f.pool.end_defragmentation().passes, 0u);
}

TEST(DevicePool, AnEmptyPoolHasNothingToMove) {
    pool_fixture f(small_blocks());
    test_rng rng{1};
    const defrag_stats s = defragment(f, rng);
    EXPECT_EQ(s.passes, 0u);
    EXPECT_EQ(s.bytes_moved, 0u);
    f.take(100);
    EXPECT_EQ(defragment(f, rng).passes, 0u); // one allocation at offset 0: nothing to do
}

// -- defragmentation: contents, limits, ops
// --------------------------------------------------------------------------

// A pool of several blocks, each left sparse by freeing most of its allocations.
void make_sparse(pool_fixture& f, test_rng& rng, int count, std::uint64_t max_size, int keep_one_in) {
    std::vector<device_allocation> hs;
    for (int i = 0; i < count; ++i) {
        const auto kind = rng.between(0, 1) ? resource_kind::optimal : resource_kind::linear;
        const device_allocation h =
            f.take(rng.between(16, max_size), std::uint64_t{1} << rng.between(0, 10), kind);
        ASSERT_TRUE(h);
        hs.push_back(h);
    }
    for (const device_allocation h : hs)
        if (rng.between(0, static_cast<std::size_t>(keep_one_in) - 1) != 0) f.give(h);
}

TEST(DevicePool, DefragmentationEmptiesBlocksAndKeepsEveryByte) {
    auto o = small_blocks();
    o.keep_empty_blocks = 0;
    o.granularity = 1024;
    pool_fixture f(o);
    test_rng rng{7};
    make_sparse(f, rng, 400, 64 * KiB, 4);
    const auto before = f.pool.stats();
    ASSERT_GE(before.blocks, 4u);
    const std::uint64_t live = f.live_bytes();
    const std::uint32_t frees = f.dev.frees;
    const defrag_stats s = defragment(f, rng);
    const auto after = f.pool.stats();
    EXPECT_GT(s.passes, 0u);
    EXPECT_GT(s.blocks_freed, 0u);
    EXPECT_LT(after.blocks, before.blocks);
    EXPECT_EQ(before.blocks - after.blocks, s.blocks_freed);
    EXPECT_EQ(s.bytes_freed, std::uint64_t{s.blocks_freed} * MiB);
    EXPECT_EQ(f.dev.frees - frees, s.blocks_freed);
    EXPECT_EQ(after.device_bytes, f.dev.bytes());
    EXPECT_EQ(after.used_bytes, live);
    EXPECT_LE(after.blocks, live / MiB + 2);
    EXPECT_TRUE(f.verify_all());
}

TEST(DevicePool, IgnoredMovesStayInPlace) {
    auto o = small_blocks();
    o.keep_empty_blocks = 0;
    pool_fixture f(o);
    test_rng rng{11};
    make_sparse(f, rng, 300, 48 * KiB, 3);
    const defrag_stats s = defragment(f, rng, pass_mode::ignore_some);
    EXPECT_GT(s.passes, 0u);
    EXPECT_TRUE(f.verify_all());
}

TEST(DevicePool, PassLimitsAreHonoured) {
    auto o = small_blocks();
    pool_fixture f(o);
    test_rng rng{13};
    make_sparse(f, rng, 300, 48 * KiB, 3);
    defrag_options limits;
    limits.max_moves_per_pass = 3;
    const defrag_stats a = defragment(f, rng, pass_mode::copy_all, limits);
    EXPECT_GT(a.passes, 1u);
    EXPECT_LE(a.allocations_moved, a.passes * 3);
    make_sparse(f, rng, 300, 48 * KiB, 3);
    limits = {};
    limits.max_bytes_per_pass = 100 * KiB;
    const defrag_stats b = defragment(f, rng, pass_mode::copy_all, limits);
    EXPECT_GT(b.passes, 1u);
    EXPECT_LE(b.bytes_moved, b.passes * 100 * KiB);
}

TEST(DevicePool, EndDefragmentationCancelsAPassInFlight) {
    auto o = small_blocks();
    o.keep_empty_blocks = 0;
    pool_fixture f(o);
    test_rng rng{17};
    make_sparse(f, rng, 300, 48 * KiB, 3);
    const auto before = f.pool.stats();
    ASSERT_TRUE(f.pool.begin_defragmentation());
    EXPECT_GT(run_pass(f, pass_mode::cancel, rng), 0u);
    EXPECT_FALSE(f.pool.defragmenting());
    const auto after = f.pool.stats();
    EXPECT_EQ(after.used_bytes, before.used_bytes);
    EXPECT_EQ(after.free_bytes, before.free_bytes);
    EXPECT_EQ(after.blocks, before.blocks);
    EXPECT_EQ(after.device_bytes, before.device_bytes);
    EXPECT_TRUE(f.pool.check());
    EXPECT_TRUE(f.verify_all());
}

TEST(DevicePool, FreeingAnAllocationWhoseMoveIsInFlightDropsTheMove) {
    for (std::uint32_t keep : {0u, 1u}) {
        auto o = small_blocks();
        o.keep_empty_blocks = keep;
        pool_fixture f(o);
        test_rng rng{19 + keep};
        make_sparse(f, rng, 300, 48 * KiB, 3);
        ASSERT_TRUE(f.pool.begin_defragmentation());
        std::span<defrag_move> moves = f.pool.begin_pass();
        ASSERT_GE(moves.size(), 4u);
        std::vector<device_allocation> dropped;
        for (std::size_t i = 0; i < moves.size(); i += 2)
            dropped.push_back(moves[i].allocation);
        const auto used_before = f.pool.stats().used_bytes;
        std::uint64_t dropped_bytes = 0;
        for (const device_allocation h : dropped) {
            dropped_bytes += f.pool.info(h)->size;
            f.give(h);
            EXPECT_TRUE(f.pool.check());
        }
        EXPECT_EQ(f.pool.stats().used_bytes, used_before - dropped_bytes);
        for (std::size_t i = 0; i < moves.size(); ++i) {
            if (i % 2 == 0) {
                EXPECT_EQ(moves[i].op, defrag_op::ignore);
                continue;
            }
            std::memcpy(f.dev.at(moves[i].dst_memory, moves[i].dst_offset),
                        f.dev.at(moves[i].src_memory, moves[i].src_offset), moves[i].size);
        }
        // Allocations made during a pass land anywhere free.
        const device_allocation during = f.take(1000);
        ASSERT_TRUE(during);
        const std::vector<defrag_move> kept(moves.begin(), moves.end());
        EXPECT_TRUE(f.pool.end_pass());
        EXPECT_TRUE(f.pool.check());
        EXPECT_TRUE(f.verify_all());
        for (std::size_t i = 1; i < kept.size(); i += 2)
            EXPECT_EQ(f.pool.info(kept[i].allocation)->offset, kept[i].dst_offset);
        f.pool.end_defragmentation();
        defragment(f, rng);
        EXPECT_TRUE(f.verify_all());
    }
}

// The defragmentation goal: one 64 MiB block holding ~3000 allocations of 16 B to 20 KiB, half of
// them freed at random, ends with its free space nearly in one piece, each byte moved about once.
TEST(DevicePool, DefragmentationReachesItsGoalInOneBlock) {
    device_pool_options o;
    o.block_size = 64 * MiB;
    pool_fixture f(o);
    test_rng rng{2024};
    std::vector<device_allocation> hs;
    for (int i = 0; i < 3000; ++i) {
        const device_allocation h = f.take(rng.between(16, 20 * KiB), std::uint64_t{1} << rng.between(0, 8));
        ASSERT_TRUE(h);
        hs.push_back(h);
    }
    ASSERT_EQ(f.pool.stats().blocks, 1u);
    for (std::size_t i = hs.size(); i-- > 1;)
        std::swap(hs[i], hs[rng.between(0, i)]);
    for (std::size_t i = 0; i < hs.size() / 2; ++i)
        f.give(hs[i]);
    const double before = f.pool.stats().fragmentation();
    EXPECT_GT(before, 0.2);
    const std::uint64_t live = f.live_bytes();
    const defrag_stats s = defragment(f, rng);
    const auto after = f.pool.stats();
    EXPECT_LE(after.fragmentation(), 0.10) << "before " << before << ", " << s.passes << " passes";
    EXPECT_LE(s.bytes_moved, live);
    // A moved allocation asks for its request again and takes its destination's slack.
    EXPECT_EQ(after.used_bytes, f.live_bytes());
    EXPECT_GE(after.used_bytes, live - live / 16);
    EXPECT_LE(after.used_bytes, live + live / 16);
    EXPECT_EQ(after.blocks, 1u);
    EXPECT_TRUE(f.verify_all());
}

// -- randomized run
// ----------------------------------------------------------------------------------------------

TEST(DevicePool, RandomizedRunKeepsContentsAndInvariants) {
    auto o = small_blocks(512 * KiB);
    o.granularity = 4096;
    o.keep_empty_blocks = 1;
    o.budget = 6 * MiB;
    pool_fixture f(o);
    test_rng rng{99};
    for (int op = 0; op < 3000; ++op) {
        const std::size_t roll = rng.between(0, 99);
        if (roll < 55 || f.live.empty()) {
            const std::uint64_t size =
                rng.between(0, 19) == 0 ? rng.between(1, 400 * KiB) : rng.between(1, 16 * KiB);
            const auto kind = rng.between(0, 1) ? resource_kind::optimal : resource_kind::linear;
            const device_allocation h = f.take(size, std::uint64_t{1} << rng.between(0, 12), kind);
            if (!h) {
                EXPECT_EQ(f.pool.last_error(), device_error::budget_exceeded);
            }
        } else if (roll < 97) {
            auto it = f.live.begin();
            std::advance(it, static_cast<long>(rng.between(0, f.live.size() - 1)));
            f.give(it->first);
        } else {
            const defrag_options lim{rng.between(0, 1) ? 0 : 256 * KiB,
                                     static_cast<std::uint32_t>(rng.between(0, 20))};
            ASSERT_TRUE(f.pool.begin_defragmentation(lim));
            for (int p = rng.between(1, 4); p > 0; --p)
                if (run_pass(f, rng.between(0, 1) ? pass_mode::ignore_some : pass_mode::copy_all, rng) == 0)
                    break;
            if (rng.between(0, 1) != 0) (void)f.pool.begin_pass(); // left in flight: cancelled below
            f.pool.end_defragmentation();
        }
        if (op % 50 == 0) {
            ASSERT_TRUE(f.pool.check()) << "op " << op;
            ASSERT_TRUE(f.verify_all()) << "op " << op;
            ASSERT_LE(f.pool.stats().device_bytes, o.budget);
            ASSERT_EQ(f.pool.stats().device_bytes, f.dev.bytes());
        }
    }
    ASSERT_TRUE(f.verify_all());
    while (!f.live.empty())
        f.give(f.live.begin()->first);
    EXPECT_LE(f.pool.stats().blocks, 1u);
    EXPECT_TRUE(f.pool.check());
}

// Frees what a test leaves in its pool (an ASSERT that returns early included), so that the pool's
// destructor reports no leak.
struct drain {
    device_pool& pool;
    ~drain() {
        if (pool.defragmenting()) pool.end_defragmentation();
        std::vector<device_allocation> all;
        pool.for_each_allocation(
            [&](device_allocation h, const strata::device_allocation_info&) { all.push_back(h); });
        for (device_allocation h : all)
            pool.deallocate(h);
    }
};

device_pool_options one_block(std::uint64_t block_size) {
    device_pool_options o;
    o.block_size = block_size;
    o.dedicated_threshold = std::uint64_t{1} << 30; // everything shares the block
    o.min_alignment = 16;
    return o;
}

const defrag_move* move_of(std::span<defrag_move> moves, device_allocation h) {
    for (const defrag_move& m : moves)
        if (m.allocation == h) return &m;
    return nullptr;
}

// A pass moves an allocation that keeps slack into a hole of its request's size.
TEST(DevicePool, ADefragPassMovesAnAllocationWithSlackIntoAHoleOfItsRequestSize) {
    fake_device dev;
    device_pool pool(dev.callbacks(), one_block(320)); // 20 units of 16 bytes
    drain cleanup{pool};
    const device_allocation a0 = pool.allocate(144); // [0, 144)
    const device_allocation a1 = pool.allocate(16);  // [144, 160)
    const device_allocation u = pool.allocate(144);  // the 160-byte tail: 16 bytes of slack
    ASSERT_TRUE(a0 && a1 && u);
    ASSERT_EQ(pool.info(u)->offset, 160u);
    ASSERT_EQ(pool.info(u)->size, 160u); // slack kept
    ASSERT_TRUE(pool.deallocate(a0));    // a 144-byte hole at 0: u's request fits it exactly
    ASSERT_TRUE(pool.begin_defragmentation());
    const std::span<defrag_move> moves = pool.begin_pass();
    const defrag_move* m = move_of(moves, u);
    ASSERT_NE(m, nullptr) << "u (144 bytes asked) is not moved into the 144-byte hole at 0";
    EXPECT_EQ(m->dst_offset, 0u);
    EXPECT_EQ(m->size, 144u);
    EXPECT_TRUE(pool.check());
}

// A move of the pass that lands past a hole's start leaves a gap in front of it that a later move
// of the same pass can take.
TEST(DevicePool, ADefragPassUsesTheFrontGapAnEarlierMoveOfThePassLeft) {
    fake_device dev;
    device_pool pool(dev.callbacks(), one_block(256)); // 16 units of 16 bytes
    drain cleanup{pool};
    const device_allocation a0 = pool.allocate(32);     // [0, 32)
    const device_allocation hole = pool.allocate(128);  // [32, 160)
    const device_allocation u1 = pool.allocate(32);     // [160, 192)
    const device_allocation u2 = pool.allocate(64, 64); // [192, 256)
    ASSERT_TRUE(a0 && hole && u1 && u2);
    ASSERT_EQ(pool.info(u1)->offset, 160u);
    ASSERT_EQ(pool.info(u2)->offset, 192u);
    ASSERT_TRUE(pool.deallocate(hole)); // the hole [32, 160)
    ASSERT_TRUE(pool.begin_defragmentation());
    const std::span<defrag_move> moves = pool.begin_pass();
    // u2 (walked first, from the top) goes to 64 (its alignment), leaving [32, 64) free below it.
    const defrag_move* m2 = move_of(moves, u2);
    ASSERT_NE(m2, nullptr);
    EXPECT_EQ(m2->dst_offset, 64u);
    // u1 (32 bytes) fits the lowest hole [32, 64).
    const defrag_move* m1 = move_of(moves, u1);
    ASSERT_NE(m1, nullptr) << "u1 is not moved into the 32-byte hole at 32 below it";
    EXPECT_EQ(m1->dst_offset, 32u);
    EXPECT_TRUE(pool.check());
}

// defrag_stats counts the blocks its passes emptied, not those the application emptied meanwhile.
TEST(DevicePool, BlocksTheApplicationFreesDuringADefragmentationAreNotItsFigures) {
    fake_device dev;
    device_pool_options o;
    o.block_size = 4096;
    o.keep_empty_blocks = 0;
    device_pool pool(dev.callbacks(), o);
    drain cleanup{pool};
    const device_allocation a = pool.allocate(1000);
    const device_allocation b = pool.allocate(1000);
    const device_allocation c = pool.allocate(1500); // a second block
    const device_allocation d = pool.allocate(1500);
    ASSERT_TRUE(a && b && c && d);
    ASSERT_EQ(pool.stats().blocks, 2u);
    ASSERT_TRUE(pool.begin_defragmentation());
    ASSERT_TRUE(pool.deallocate(c));
    ASSERT_TRUE(pool.deallocate(d)); // the application empties the second block: it is freed
    ASSERT_EQ(pool.stats().blocks, 1u);
    const strata::defrag_stats s = pool.end_defragmentation();
    EXPECT_EQ(s.passes, 0u);
    EXPECT_EQ(s.allocations_moved, 0u);
    EXPECT_EQ(s.blocks_freed, 0u) << "a defragmentation that ran no pass reports a block freed";
    EXPECT_EQ(s.bytes_freed, 0u);
}

} // namespace
