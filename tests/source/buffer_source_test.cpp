// buffer_source (source/buffer_source.hpp): blocks carved front to back from a caller buffer, exact
// sizes, alignment honoured, bad requests and exhaustion as empty blocks, one level of undo for the
// most recent block; and a randomized run against a reference model.
#include "strata/source/buffer_source.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/align.hpp"

#include "support/bad_requests.hpp"
#include "support/linear_test_util.hpp"

namespace {

using strata::buffer_source;
using strata::memory_block;
using strata::test::aligned_buffer;

static_assert(strata::memory_source<buffer_source>);

TEST(BufferSource, FreshSourceDescribesItsBuffer) {
    aligned_buffer buf(1024);
    buffer_source s(buf.span());
    EXPECT_EQ(s.used(), 0u);
    EXPECT_EQ(s.capacity(), 1024u);
    EXPECT_EQ(s.buffer().data(), buf.data());
    EXPECT_EQ(s.buffer().size(), 1024u);
}

TEST(BufferSource, CarvesFrontToBackAndUndoesTheLast) {
    alignas(64) static std::byte buffer[1024];
    buffer_source source(buffer);
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
}

// A block is exactly the size asked for and records the alignment it was carved with.
TEST(BufferSource, BlocksAreExactAndAligned) {
    aligned_buffer buf(8192);
    buffer_source s(buf.span());
    std::byte* prev_end = buf.data();
    for (std::size_t align = 1; align <= 1024; align *= 2) {
        const memory_block b = s.allocate_block(3, align);
        ASSERT_FALSE(b.empty()) << align;
        EXPECT_EQ(b.size, 3u);
        EXPECT_EQ(b.align, align);
        EXPECT_TRUE(strata::is_aligned(b.data, align));
        EXPECT_GE(b.data, prev_end) << "carved front to back, no overlap";
        EXPECT_LT(b.data, prev_end + align) << "no more padding than the alignment needs";
        prev_end = b.end();
        EXPECT_EQ(s.used(), static_cast<std::size_t>(prev_end - buf.data()));
    }
}

// Bad requests (size 0, a bad alignment, an overflowing size) give an empty block and carve nothing.
TEST(BufferSource, BadRequestsGiveEmptyBlocksAndChangeNothing) {
    aligned_buffer buf(4096);
    buffer_source s(buf.span());
    ASSERT_FALSE(s.allocate_block(5, 1).empty()); // an odd top, so overflow rows need padding
    for (const strata::test::bad_request& r : strata::test::all_bad_requests()) {
        EXPECT_TRUE(s.allocate_block(r.size, r.align).empty()) << "size " << r.size << " align " << r.align;
        EXPECT_EQ(s.used(), 5u);
    }
    EXPECT_TRUE(s.allocate_block(1, std::size_t{1} << 63).empty()) << "an alignment past the buffer";
    EXPECT_EQ(s.used(), 5u);
}

// Exhaustion: a request for exactly the rest fits, one byte more does not; the padding an alignment
// needs counts against what is left.
TEST(BufferSource, ExactFitThenExhaustion) {
    aligned_buffer buf(256);
    buffer_source s(buf.span());
    ASSERT_FALSE(s.allocate_block(1, 1).empty());
    EXPECT_TRUE(s.allocate_block(255, 2).empty()) << "255 bytes fit, but not after a byte of padding";
    EXPECT_TRUE(s.allocate_block(256, 1).empty());
    const memory_block rest = s.allocate_block(255, 1);
    ASSERT_FALSE(rest.empty());
    EXPECT_EQ(rest.end(), buf.end());
    EXPECT_EQ(s.used(), 256u);
    EXPECT_TRUE(s.allocate_block(1, 1).empty());
}

// An empty buffer serves nothing.
TEST(BufferSource, EmptyBufferServesNothing) {
    buffer_source s(std::span<std::byte>{});
    EXPECT_EQ(s.capacity(), 0u);
    EXPECT_TRUE(s.allocate_block(1, 1).empty());
    s.deallocate_block({});
    EXPECT_EQ(s.used(), 0u);
}

// Only the most recent block is taken back, once: a second undo, an older block, an empty block
// and a block of another buffer are absorbed.
TEST(BufferSource, OneLevelOfUndo) {
    aligned_buffer buf(1024);
    buffer_source s(buf.span());
    const memory_block a = s.allocate_block(64, 16);
    const memory_block b = s.allocate_block(32, 16);
    const memory_block c = s.allocate_block(16, 16);
    s.deallocate_block(c);
    EXPECT_EQ(s.used(), 96u);
    s.deallocate_block(b); // b is not the last carve any more: one level only
    EXPECT_EQ(s.used(), 96u);
    s.deallocate_block(c); // a second free of the undone block
    EXPECT_EQ(s.used(), 96u);
    s.deallocate_block(memory_block{});
    aligned_buffer other(64);
    s.deallocate_block({other.data(), 64, 16});
    EXPECT_EQ(s.used(), 96u);
    // The undone bytes are carved again, with the padding of the new request.
    const memory_block d = s.allocate_block(16, 64);
    EXPECT_EQ(d.data, buf.data() + 128);
    s.deallocate_block(d);
    EXPECT_EQ(s.used(), 96u) << "the undo gives back the padding too";
    (void)a;
}

// Randomized: blocks of random sizes and alignments, the latest one sometimes given back. Every
// block is aligned, within the buffer, disjoint from the others and keeps its contents; used() is
// where the last block ends.
TEST(BufferSource, RandomizedAgainstModel) {
    std::mt19937_64 rng(0xB0FF);
    for (int round = 0; round < 20; ++round) {
        aligned_buffer buf(64 * 1024);
        buffer_source s(buf.span());
        strata::test::reference_model model;
        memory_block last{};
        for (int op = 0; op < 2000; ++op) {
            if (!last.empty() && rng() % 4 == 0) {
                model.remove(last.data);
                s.deallocate_block(last);
                last = {};
                continue;
            }
            const std::size_t size = 1 + rng() % 200;
            const std::size_t align = std::size_t{1} << (rng() % 9);
            const memory_block b = s.allocate_block(size, align);
            if (b.empty()) {
                const std::size_t pad =
                    strata::align_padding(reinterpret_cast<std::uintptr_t>(buf.data() + s.used()), align);
                EXPECT_GT(pad + size, s.capacity() - s.used()) << "refused a request that fits";
                break;
            }
            ASSERT_GE(b.data, buf.data());
            ASSERT_LE(b.end(), buf.end());
            model.add(b.data, b.size, align);
            if (HasFatalFailure()) return;
            EXPECT_EQ(s.used(), static_cast<std::size_t>(b.end() - buf.data()));
            last = b;
        }
        model.verify_all();
    }
}

} // namespace
