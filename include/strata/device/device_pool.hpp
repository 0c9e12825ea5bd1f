#pragma once
// device_pool: many blocks of one device memory type, each sub-allocated by an offset_heap, with
// dedicated allocations, a budget, empty-block retention and incremental defragmentation. Exports
// device_pool, device_allocation, device_allocation_info, device_pool_options,
// device_memory_callbacks, device_error, defrag_options, defrag_move, defrag_op, defrag_stats.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "strata/core/stats.hpp"
#include "strata/device/offset_heap.hpp"
#include "strata/device/policy.hpp"
#include "strata/handle/handle.hpp"
#include "strata/handle/handle_table.hpp"

namespace strata {

struct device_allocation_tag {};
/// A pool allocation: a generational handle (32-bit slot index, 32-bit generation). It stays valid
/// across defragmentation (a move updates the table entry it names, not the handle) and is
/// rejected in O(1) once freed.
using device_allocation = handle<device_allocation_tag, 32, 32>;

/// The application's side of a pool: how a block of device memory is made and given back.
struct device_memory_callbacks {
    /// Allocates `size` bytes of device memory (e.g. vkAllocateMemory); returns true and stores the
    /// application's handle for it in `*memory` (e.g. the VkDeviceMemory), false when the device
    /// refuses. Required.
    std::function<bool(std::uint64_t size, std::uint64_t* memory)> allocate;
    /// Frees what allocate made (e.g. vkFreeMemory). Required.
    std::function<void(std::uint64_t memory, std::uint64_t size)> free;
};

/// Construction parameters of a device_pool.
struct device_pool_options {
    std::uint64_t block_size = std::uint64_t{64} << 20; ///< bytes of each shared block
    /// Requests of at least this many bytes get device memory of their own (0: block_size / 2).
    std::uint64_t dedicated_threshold = 0;
    /// Device bytes (blocks and dedicated allocations) the pool may hold at once.
    std::uint64_t budget = ~std::uint64_t{0};
    /// Empty blocks kept for reuse; an empty block beyond this count is freed at once.
    std::uint32_t keep_empty_blocks = 1;
    std::uint32_t nodes_per_block = 16384; ///< offset_heap node pool of each block
    std::uint64_t min_alignment = 16;      ///< see offset_heap_options
    std::uint64_t granularity = 1;         ///< bufferImageGranularity: see offset_heap_options
    allocation_strategy strategy = allocation_strategy::min_time;
};

/// Why the last allocate() failed.
enum class device_error : std::uint8_t {
    none,             ///< it succeeded
    invalid_argument, ///< size 0 or within min_alignment of 2^64, or an alignment that is 0 or not a power of
                      ///< two
    budget_exceeded,  ///< a new block or dedicated allocation would pass the budget
    out_of_device_memory, ///< the allocate callback refused
};

/// Returns: a stable lower-case name for `e`.
[[nodiscard]] const char* to_string(device_error e) noexcept;

/// Where an allocation lives now.
struct device_allocation_info {
    std::uint64_t memory = 0; ///< the application's handle of the block (from the allocate callback)
    std::uint32_t block = 0;  ///< the pool's index of that block
    std::uint64_t offset = 0; ///< bytes from the block's start (0 for a dedicated allocation)
    /// Bytes reserved: the request rounded up to min_alignment, plus any slack its block keeps
    /// (see offset_heap); for a dedicated allocation, the request itself. A defragmentation move
    /// preserves the request's bytes (defrag_move::size); the slack may change.
    std::uint64_t size = 0;
    resource_kind kind = resource_kind::linear;
    bool dedicated = false;
};

/// Per-pass limits of a defragmentation (0: no limit).
struct defrag_options {
    std::uint64_t max_bytes_per_pass = 0;
    std::uint32_t max_moves_per_pass = 0;
};

/// What end_pass() does with one move.
enum class defrag_op : std::uint8_t {
    copy,   ///< the application copied the bytes: the allocation now lives at the destination
    ignore, ///< the application did not move it: it stays at the source, the destination is freed
};

/// One move of a pass: the application copies `size` bytes from the source to the destination
/// (e.g. vkCmdCopyBuffer into a resource bound at the destination) before end_pass().
/// A move's source and destination never overlap, and no two moves of a pass share bytes.
struct defrag_move {
    device_allocation allocation;
    std::uint64_t src_memory;
    std::uint32_t src_block;
    std::uint64_t src_offset;
    std::uint64_t dst_memory;
    std::uint32_t dst_block;
    std::uint64_t dst_offset;
    std::uint64_t size;             ///< bytes to copy: the request rounded up to min_alignment
    defrag_op op = defrag_op::copy; ///< set to ignore before end_pass() to keep it where it is
};

/// What a defragmentation did.
struct defrag_stats {
    std::uint64_t bytes_moved = 0;
    std::uint32_t allocations_moved = 0;
    std::uint32_t passes = 0;
    std::uint32_t blocks_freed = 0;
    std::uint64_t bytes_freed = 0; ///< device bytes of the blocks freed
};

/// Figures of a whole pool.
struct device_pool_stats {
    std::uint32_t blocks = 0;       ///< shared blocks held (empty ones included)
    std::uint32_t dedicated = 0;    ///< dedicated allocations
    std::uint64_t device_bytes = 0; ///< bytes of device memory held (blocks + dedicated)
    /// Bytes of live allocations (dedicated included). The destinations a pass in flight reserves
    /// are counted in neither used_bytes nor free_bytes.
    std::uint64_t used_bytes = 0;
    std::uint64_t free_bytes = 0;         ///< free bytes inside the shared blocks
    std::uint64_t largest_free_block = 0; ///< over the shared blocks
    std::uint32_t allocations = 0;        ///< live allocations
    std::uint64_t total_allocations = 0;  ///< successful allocate() calls
    /// Returns: 1 - largest_free_block / free_bytes (0 when nothing is free).
    [[nodiscard]] double fragmentation() const noexcept {
        return free_bytes == 0
                   ? 0.0
                   : 1.0 - static_cast<double>(largest_free_block) / static_cast<double>(free_bytes);
    }
};

/// Device memory of one type, sub-allocated.
///
/// - Requests below the dedicated threshold share blocks of block_size bytes, each managed by an
///   offset_heap (no byte of device memory is ever read or written by the pool). A request goes
///   to the block that served the last one when it fits there, else to the first block it fits; when none
///   fits a new block is made through the callback (halving its size down to what the request needs when the
///   budget or the device refuses the full one).
/// - Requests at or above the threshold (or larger than a block) get memory of their own.
/// - An empty block is kept for reuse while at most keep_empty_blocks are; trim() frees them all.
/// - Defragmentation is incremental: begin_defragmentation(), then begin_pass() / end_pass() until
///   a pass has no moves, then end_defragmentation(). A pass plans moves within its byte and move
///   budget: allocations leave the emptiest blocks for fuller ones, or move down inside their own
///   block into the lowest hole that fits. Sources stay allocated until end_pass(), so a source and
///   a destination never overlap. Allocations are named by handles, so a committed move changes one
///   table entry and no pointer of the application.
///
/// Bad input answers (no state change in any case):
/// - allocate: invalid size or alignment, budget exceeded, device refusal -> a null handle, the
///   reason in last_error();
/// - deallocate / info of a null, freed or foreign handle -> false / nullptr; deallocate reports
///   `stale_handle` at checks >= 1;
/// - begin_defragmentation while one runs, begin_pass with a pass in flight, end_pass with none
///   -> refused (false / empty), reported as `invalid_argument` at checks >= 1.
/// Freeing an allocation whose move is in flight is allowed: the move is dropped (its op becomes
/// ignore) and both ranges are freed. The destructor frees every block; live allocations left are
/// reported as `leak` at checks >= 1. Not thread-safe.
class device_pool {
public:
    /// Effects: an empty pool (no device memory is allocated until the first request).
    /// Throws: std::invalid_argument when a callback is missing, block_size is 0, or the heap
    /// options are invalid (see offset_heap).
    device_pool(device_memory_callbacks callbacks, const device_pool_options& options = {});
    device_pool(const device_pool&) = delete;
    device_pool& operator=(const device_pool&) = delete;
    /// Effects: frees every block through the callback.
    ~device_pool();

    /// Returns: the handle of a new allocation of `size` bytes aligned to `align` (a power of two,
    /// e.g. VkMemoryRequirements::alignment) holding a resource of `kind`; a null handle on failure
    /// (see last_error()). Throws: what the callbacks throw, std::bad_alloc, std::length_error
    /// (handle space exhausted); the pool is then unchanged.
    [[nodiscard]] device_allocation allocate(std::uint64_t size, std::uint64_t align = 1,
                                             resource_kind kind = resource_kind::linear);

    /// Effects: frees `h`, and the block it was in when that leaves more empty blocks than kept.
    /// Returns: true; false for a null, freed or foreign handle (reported at checks >= 1).
    bool deallocate(device_allocation h);

    /// Returns: where `h` lives now; nullptr for a null, freed or foreign handle. The pointer is
    /// valid until the next call that changes the pool.
    [[nodiscard]] const device_allocation_info* info(device_allocation h) const noexcept;

    /// Returns: why the last allocate() failed (none after a success).
    [[nodiscard]] device_error last_error() const noexcept { return last_error_; }

    /// Effects: frees every empty shared block. Returns: how many were freed.
    std::uint32_t trim();

    [[nodiscard]] device_pool_stats stats() const noexcept;
    [[nodiscard]] const device_pool_options& options() const noexcept { return options_; }
    /// Returns: the number of block slots (live or not); block(i) is valid for i below it.
    [[nodiscard]] std::uint32_t block_slots() const noexcept {
        return static_cast<std::uint32_t>(blocks_.size());
    }
    /// Returns: the heap of shared block `i`, or nullptr when slot i holds no shared block.
    [[nodiscard]] const offset_heap* block(std::uint32_t i) const noexcept {
        return i < blocks_.size() ? blocks_[i].heap.get() : nullptr;
    }

    /// Effects: calls visit(handle, info) for every live allocation. Requires: visit does not
    /// change the pool.
    template <class Visitor>
    void for_each_allocation(Visitor&& visit) const {
        for (std::size_t i = 0; i < table_.size(); ++i) {
            const device_allocation h = table_.handle_at(i);
            visit(h, table_.get(h)->info);
        }
    }

    /// Returns: the pool as JSON: its totals, and each block's offset_heap JSON (blocks listed
    /// when `blocks`). Throws: std::bad_alloc.
    [[nodiscard]] std::string to_json(bool blocks = true) const;

    /// Returns: true when every block's heap passes check() and the handle table, the heaps' used
    /// nodes and the counters agree (every live allocation is described by exactly one used node,
    /// plus the reserved destinations of a pass in flight). Reports `corruption` for the first
    /// broken invariant. Complexity: O(blocks * nodes_per_block + allocations).
    [[nodiscard]] bool check() const;

    // -- defragmentation -----------------------------------------------------------------------------

    /// Effects: starts a defragmentation with these per-pass limits. Returns: false (refused) when
    /// one is already running.
    bool begin_defragmentation(const defrag_options& options = {});

    /// Returns: the moves of the next pass (each destination reserved); empty when nothing is left
    /// to move (or no defragmentation runs, or a pass is in flight: refused). The span is valid
    /// until end_pass() or end_defragmentation(); set a move's op to ignore to keep it in place.
    /// Complexity: O(allocations * blocks per allocation considered) at worst: the in-block
    /// placement walks the block's nodes.
    [[nodiscard]] std::span<defrag_move> begin_pass();

    /// Effects: commits the pass in flight: each copy move's allocation now lives at its
    /// destination and its source is freed; each ignored move's destination is freed. Empty blocks
    /// beyond keep_empty_blocks are freed. Returns: false when no pass was in flight (refused).
    bool end_pass();

    /// Effects: ends the defragmentation; a pass in flight is cancelled (its destinations freed,
    /// every allocation left at its source). Returns: what it did.
    defrag_stats end_defragmentation();

    /// Returns: true between begin_defragmentation() and end_defragmentation().
    [[nodiscard]] bool defragmenting() const noexcept { return defrag_active_; }

private:
    static constexpr std::uint32_t no_move = ~std::uint32_t{0};

    struct entry {
        device_allocation_info info;
        offset_allocation where;      // in blocks_[info.block].heap; unused for dedicated
        std::uint64_t align = 1;      // as requested: a move keeps it
        std::uint64_t asked = 0;      // the request rounded up to min_alignment: what a move copies
        std::uint32_t move = no_move; // index in moves_ while a pass moves it
    };
    struct block_slot {
        std::uint64_t memory = 0;
        std::uint64_t size = 0;               // 0: a free slot
        std::unique_ptr<offset_heap> heap;    // null for a dedicated allocation or a free slot
        std::vector<device_allocation> owner; // by heap node: the allocation it holds
    };

    [[nodiscard]] bool make_block(std::uint64_t size, std::uint64_t at_least, std::uint32_t& index);
    [[nodiscard]] std::uint32_t new_slot();
    void free_slot(std::uint32_t index);
    std::uint64_t release_if_unneeded(std::uint32_t index); // the bytes freed (0: kept)
    [[nodiscard]] std::uint32_t empty_blocks() const noexcept;
    void finish_pass(bool commit);

    device_memory_callbacks callbacks_;
    device_pool_options options_;
    handle_table<entry, device_allocation> table_;
    std::vector<block_slot> blocks_;
    std::vector<std::uint32_t> free_slots_;
    std::uint64_t device_bytes_ = 0;
    std::uint64_t dedicated_bytes_ = 0;
    std::uint32_t dedicated_count_ = 0;
    std::uint64_t total_ = 0;
    std::uint32_t hint_ = 0; // the block that served the last shared request
    device_error last_error_ = device_error::none;
    // Defragmentation.
    bool defrag_active_ = false;
    bool pass_active_ = false;
    defrag_options defrag_options_;
    defrag_stats defrag_stats_;
    std::vector<defrag_move> moves_;
    std::vector<offset_allocation> move_dst_; // the reserved destination of each move
};

} // namespace strata
