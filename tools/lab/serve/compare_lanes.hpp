#pragma once
// The six allocators of the live lab's "compare" demo, side by side: arena, stack, pool, TLSF,
// buddy and first-fit, each over its own buffer of the same size, all given the same statements.
// Exports compare_lanes (apply a statement, read each allocator's map and figures) and lane_segment.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "strata/core/stats.hpp"

#include "request_script.hpp"

namespace strata::lab::serve {

/// One piece of a lane's buffer, as the allocator lays it out. Kinds:
///  'b' the bytes a block's request asked for;
///  'h' a block's header (stack, TLSF, first-fit);
///  'p' padding, rounding or slot slack: bytes a block takes beyond its request (the arena's
///      padding left by a freed top block has block 0);
///  'f' free space;
///  'o' the allocator's own bytes that no block uses: pool records and sentinels, free blocks'
///      headers, the pool's redzone and the tail no slot fits in.
struct lane_segment {
    std::size_t offset = 0;
    std::size_t size = 0;
    char kind = 'f';
    std::uint32_t block = 0; ///< the script's block number, 0 for none
};

/// A block a lane holds: the script's number, where the allocator put it and what was asked.
struct lane_block {
    std::uint32_t block = 0;
    std::size_t offset = 0; ///< from the lane's buffer start
    std::size_t size = 0;   ///< bytes requested
    std::size_t align = 0;  ///< alignment requested
    std::byte* p = nullptr;
};

/// What one statement did in one lane: ok, or refused and why.
struct lane_outcome {
    bool ok = true;
    std::string reason; ///< refused: what the allocator (or its rule) said no to
};

class lane;

/// Six allocators, one per lane, each over its own buffer of `buffer_bytes`; a statement is applied
/// to all six. Every block gets a byte pattern written into its requested bytes, checked again
/// before it is freed and by intact(). Not thread-safe.
class compare_lanes {
public:
    static constexpr std::size_t lane_count = 6;
    static constexpr std::size_t min_buffer = 1024;
    static constexpr std::size_t max_buffer = 64 * 1024;
    /// The lanes' names, in column order.
    static constexpr std::array<const char*, lane_count> names = {"arena", "stack", "pool",
                                                                  "tlsf",  "buddy", "first-fit"};

    /// Effects: six buffers of max_buffer bytes (4096-aligned); every lane starts as start(4096, 16, 16).
    compare_lanes();
    ~compare_lanes();
    compare_lanes(const compare_lanes&) = delete;
    compare_lanes& operator=(const compare_lanes&) = delete;

    /// Effects: new allocators over the first `buffer_bytes` of each buffer, nothing live. The
    /// pool's slots are `pool_slot` bytes aligned to `pool_align`. Requires: buffer_bytes a power
    /// of two in [min_buffer, max_buffer]; pool_slot in [1, buffer_bytes]; pool_align a power of
    /// two in [16, 4096]. Throws: std::invalid_argument otherwise; std::bad_alloc.
    void start(std::size_t buffer_bytes, std::size_t pool_slot, std::size_t pool_align);

    /// Effects: applies `s` to every lane. An `a` writes the block's pattern; an `f` checks the
    /// pattern, then frees; `r` resets (arena, stack, pool) or frees every block (TLSF, buddy,
    /// first-fit). Returns: each lane's outcome. Requires: a statement of a script parsed with
    /// max_size <= buffer_bytes(), applied in order (`f` names a block the script holds).
    std::array<lane_outcome, lane_count> apply(const script_statement& s);

    /// Returns: the buffer size of every lane.
    [[nodiscard]] std::size_t buffer_bytes() const noexcept { return buffer_; }
    /// Returns: the pool lane's slot stride and alignment.
    [[nodiscard]] std::size_t pool_slot() const noexcept;
    [[nodiscard]] std::size_t pool_align() const noexcept { return pool_align_; }
    /// Returns: lane `i`'s map: segments covering [0, buffer_bytes()) in address order.
    [[nodiscard]] std::vector<lane_segment> segments(std::size_t i) const;
    /// Returns: the blocks lane `i` holds, in allocation order.
    [[nodiscard]] const std::vector<lane_block>& blocks(std::size_t i) const noexcept;
    /// Returns: lane `i`'s allocator's stats().
    [[nodiscard]] strata::stats stats(std::size_t i) const;
    /// Returns: the bytes lane `i`'s live blocks take beyond their requests (headers, padding,
    /// rounding, slot slack), from its allocator's figures.
    [[nodiscard]] std::size_t waste(std::size_t i) const;
    /// Returns: the bytes lane `i`'s live blocks requested.
    [[nodiscard]] std::size_t requested(std::size_t i) const noexcept;
    /// Returns: lane `i`'s high-water mark: the highest buffer offset a block (with its header,
    /// padding and rounding) has reached since start().
    [[nodiscard]] std::size_t footprint(std::size_t i) const noexcept;
    /// Returns: lane `i`'s largest free block, as its allocator reports it.
    [[nodiscard]] std::size_t largest_free(std::size_t i) const;
    /// Returns: the allocator's own consistency check (TLSF, buddy, first-fit, pool); true for
    /// arena and stack, which have none.
    [[nodiscard]] bool check(std::size_t i) const;
    /// Returns: true when every live block of every lane still holds its pattern.
    [[nodiscard]] bool intact() const;
    /// Returns: the pattern byte `k` of block `block` holds.
    [[nodiscard]] static std::byte pattern(std::uint32_t block, std::size_t k) noexcept {
        return static_cast<std::byte>((block * 37u + k * 11u + (k >> 8)) & 0xffu);
    }
    /// Returns: bytes held: the buffers, the allocators and their bookkeeping, the block lists.
    [[nodiscard]] std::size_t bytes() const noexcept;

private:
    struct aligned_delete {
        void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{4096}); }
    };
    // lane_count buffers of max_buffer, 4096-aligned; declared before lanes_, so it outlives them.
    std::unique_ptr<std::byte[], aligned_delete> memory_;
    std::byte* base_ = nullptr;
    std::size_t buffer_ = 0;
    std::size_t pool_align_ = 16;
    std::array<std::unique_ptr<lane>, lane_count> lanes_;
};

} // namespace strata::lab::serve
