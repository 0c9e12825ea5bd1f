// strata::arena's fill patterns (checks >= 2: 0xCD on allocation, 0xDD on release) and ASan
// poisoning of released and never-used bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/core/poison.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/buffer_source.hpp"
#include "strata/source/heap_source.hpp"
#include "strata/source/virtual_memory.hpp"

#include "support/arena_test_util.hpp"
#include "support/bad_requests.hpp"
#include "support/linear_test_util.hpp"
#include "support/recording_handler.hpp"

namespace {

using strata::arena;
using strata::arena_options;
using strata::arena_reset;
using namespace strata::test; // the helpers of tests/support

// ---------------------------------------------------------------------------------------------
// Fill patterns (checks >= 2) and ASan poisoning
// ---------------------------------------------------------------------------------------------

// A released range usually holds bytes that were never unpoisoned (alignment padding between
// blocks, a source block's never-used tail): release_bytes must unpoison before its 0xDD fill, or
// ASan with STRATA_CHECKS=2 reports the library's own memset as use-after-poison.
TEST(ArenaFill, RewindAndResetOverAlignmentPadding) {
    aligned_buffer buf(4096);
    arena a(buf.span());
    void* keep = a.allocate(100, 1);
    fill_pattern(keep, 100, 1);
    const arena::marker m = a.mark();
    ASSERT_EQ(a.allocate(200, 64), buf.data() + 128); // 28 bytes of padding before it
    ASSERT_EQ(a.allocate(8, 256), buf.data() + 512);
    a.rewind(m);
    EXPECT_EQ(a.in_use(), 100u);
    EXPECT_TRUE(holds_pattern(keep, 100, 1));
#if STRATA_CHECKS >= 2 && !STRATA_ASAN
    EXPECT_TRUE(all_bytes(buf.data() + 100, 420, strata::fill_freed)) << "padding included";
#endif
    ASSERT_EQ(a.allocate(10, 1024), buf.data() + 1024);
    a.reset();
    EXPECT_EQ(a.in_use(), 0u);
    EXPECT_EQ(a.allocate(1, 1), buf.data());
}

#if STRATA_CHECKS >= 2
TEST(ArenaFill, FreshAllocationsRead0xCD) {
    aligned_buffer buf(4096);
    arena a(buf.span());
    void* p = a.allocate(100, 16);
    EXPECT_TRUE(all_bytes(p, 100, strata::fill_allocated));
    std::memset(p, 0, 100);
    a.reset();
    void* q = a.allocate(100, 16);
    ASSERT_EQ(q, p);
    EXPECT_TRUE(all_bytes(q, 100, strata::fill_allocated)) << "reused bytes are refilled";

    strata::heap_source src;
    arena g(src, small_blocks(1024));
    for (int i = 0; i < 10; ++i) {
        void* r = g.allocate(300, 16);
        ASSERT_NE(r, nullptr);
        EXPECT_TRUE(all_bytes(r, 300, strata::fill_allocated));
        std::memset(r, 0, 300);
    }
}

#if !STRATA_ASAN
TEST(ArenaFill, ResetFillsReleasedBytesWith0xDD) {
    aligned_buffer buf(4096);
    arena a(buf.span());
    void* p = a.allocate(100, 16);
    std::memset(p, 0x11, 100);
    a.reset();
    EXPECT_TRUE(all_bytes(p, 100, strata::fill_freed));
    EXPECT_TRUE(all_bytes(buf.data() + 100, 4096 - 100, strata::test::untouched_byte))
        << "bytes never handed out are not written";
}

TEST(ArenaFill, RewindAndDeallocateFillReleasedBytesWith0xDD) {
    aligned_buffer buf(4096);
    arena a(buf.span());
    void* keep = a.allocate(64, 16);
    std::memset(keep, 0x11, 64);
    const arena::marker m = a.mark();
    void* p = a.allocate(200, 16);
    std::memset(p, 0x22, 200);
    a.rewind(m);
    EXPECT_TRUE(all_bytes(keep, 64, 0x11));
    EXPECT_TRUE(all_bytes(p, 200, strata::fill_freed));
    void* q = a.allocate(32, 16);
    std::memset(q, 0x33, 32);
    a.deallocate(q, 32, 16);
    EXPECT_TRUE(all_bytes(q, 32, strata::fill_freed));
}

TEST(ArenaFill, RewindAcrossBlocksFillsReleasedBlocksWith0xDD) {
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    const arena::marker m = a.mark();
    std::vector<void*> ps;
    for (int i = 0; i < 8; ++i) {
        void* p = a.allocate(400, 16);
        ASSERT_NE(p, nullptr);
        std::memset(p, 0x44, 400);
        ps.push_back(p);
    }
    a.rewind(m);
    for (void* p : ps)
        EXPECT_TRUE(all_bytes(p, 400, strata::fill_freed));
}
#endif // !STRATA_ASAN
#endif // STRATA_CHECKS >= 2

#if STRATA_ASAN
TEST(ArenaAsanDeathTest, TouchingMemoryAfterResetIsUseAfterPoison) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    aligned_buffer buf(4096);
    arena a(buf.span());
    auto* p = static_cast<volatile unsigned char*>(a.allocate(64, 64));
    p[0] = 1;
    EXPECT_EQ(p[0], 1);
    a.reset();
    EXPECT_DEATH({ p[0] = 2; }, "use-after-poison");
}

TEST(ArenaAsanDeathTest, TouchingMemoryAfterRewindInAGrowingArenaIsUseAfterPoison) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    strata::heap_source src;
    arena a(src, small_blocks(1024));
    const arena::marker m = a.mark();
    ASSERT_NE(a.allocate(800, 16), nullptr);
    auto* p = static_cast<volatile unsigned char*>(a.allocate(800, 16)); // second block
    p[0] = 1;
    a.rewind(m);
    EXPECT_DEATH({ (void)p[0]; }, "use-after-poison");
}

TEST(ArenaAsanDeathTest, BytesPastTheTopArePoisoned) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    aligned_buffer buf(4096);
    arena a(buf.span());
    auto* p = static_cast<volatile unsigned char*>(a.allocate(64, 64));
    EXPECT_DEATH({ (void)p[64]; }, "use-after-poison");
}
#endif // STRATA_ASAN

} // namespace
