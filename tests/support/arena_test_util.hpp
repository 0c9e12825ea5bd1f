#pragma once
// Helpers shared by the arena tests (tests/linear/arena*_test.cpp): everything observable about an
// arena for "state unchanged" assertions, and arena_options for small growing blocks.
#include <cstddef>

#include <gtest/gtest.h>

#include "strata/linear/arena.hpp"

#include "support/linear_test_util.hpp"

namespace strata::test {

inline std::byte* bytes(void* p) noexcept { return static_cast<std::byte*>(p); }

/// Everything observable about an arena, for "state unchanged" assertions.
struct arena_state {
    strata::stats s;
    std::byte* cur;
    std::size_t remaining;
    std::size_t capacity;
    std::size_t blocks;
    friend bool operator==(const arena_state&, const arena_state&) = default;
};

inline arena_state state_of(const arena& a) {
    return {a.stats(), a.mark().cur, a.remaining(), a.capacity(), a.block_count()};
}

/// Succeeds when `a` is as `before` describes; otherwise says what moved.
inline ::testing::AssertionResult unchanged(const arena& a, const arena_state& before) {
    const arena_state now = state_of(a);
    if (now == before) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "arena state changed: stats " << describe(now.s) << " (was "
                                         << describe(before.s) << "), cur moved " << (now.cur - before.cur)
                                         << ", blocks " << now.blocks << " (was " << before.blocks << ")";
}

/// Options for an arena growing in small blocks: `block_size` first, doubling up to `max_block`.
inline arena_options small_blocks(std::size_t block_size = 1024,
                                  std::size_t max_block = std::size_t{64} << 20,
                                  arena_reset on_reset = arena_reset::keep_blocks) {
    arena_options o;
    o.block_size = block_size;
    o.max_block_size = max_block;
    o.on_reset = on_reset;
    return o;
}

} // namespace strata::test
