#pragma once
// The live lab's trace player: a workload replayed once through a real strata heap (TLSF, buddy,
// first-fit free list or the engine heap), kept as the placement of every block plus live-set
// keyframes, so the live blocks at any op are found without the allocator (a keyframe and at most
// keyframe_every deltas). Exports: player_heap, heap_name, parse_heap, placed_block, heap_sample,
// trace_player. See docs/live-lab.md, "The trace player".
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops.hpp"

namespace strata::lab::serve {

/// The heaps a trace plays into.
enum class player_heap : std::uint8_t { tlsf, buddy, first_fit, engine };

/// Returns: the heap's name as the API spells it ("tlsf", "buddy", "first_fit", "engine").
[[nodiscard]] std::string_view heap_name(player_heap h) noexcept;
/// Returns: the heap named `name`; nullopt for an unknown name.
[[nodiscard]] std::optional<player_heap> parse_heap(std::string_view name) noexcept;

/// One block the allocator placed: where its block lies in the heap and what it holds. 24 bytes.
struct placed_block {
    std::uint64_t start;     ///< the block's first byte (its header, where it has one), from the heap's base
    std::uint32_t size;      ///< the block's bytes: header + payload the allocator granted
    std::uint32_t requested; ///< bytes the op asked for
    std::uint32_t op;        ///< index of the op that made it (an allocate or a reallocate)
    std::uint16_t header;    ///< user pointer - block start
    std::uint16_t bin;       ///< size class / bin (see trace_player::bin_label); no_bin when none
    static constexpr std::uint16_t no_bin = 0xFFFF;
    [[nodiscard]] std::uint64_t end() const noexcept { return start + size; }
    /// Returns: granted payload bytes beyond the request.
    [[nodiscard]] std::uint32_t padding() const noexcept {
        return size - header > requested ? size - header - requested : 0;
    }
};
static_assert(sizeof(placed_block) == 24);

/// The heap's figures after one op, read from the allocator while it replayed.
struct heap_sample {
    std::uint32_t op = 0;           ///< ops done (the sample is the state after op - 1)
    std::uint32_t refusals = 0;     ///< allocations refused so far
    std::uint32_t live_blocks = 0;  ///< live allocations
    std::uint64_t footprint = 0;    ///< end of the highest live block (engine: committed bytes)
    std::uint64_t used_bytes = 0;   ///< bytes of live blocks (what the heap granted)
    std::uint64_t free_bytes = 0;   ///< bytes of free blocks; engine: not known (0)
    std::uint64_t largest_free = 0; ///< the largest free block; engine: not known (0)
    std::uint64_t requested = 0;    ///< bytes the live blocks asked for
};

/// A prepared (workload, heap) pair: immutable once made, shared by every session that plays it.
class trace_player {
public:
    /// Most ops a player takes (the embedded OpenTTD trace has about 1.4 million); more are cut.
    static constexpr std::size_t max_ops = 1'500'000;
    /// Bytes the keyframes may take together; keyframe_every grows to stay within it.
    static constexpr std::size_t keyframe_budget = std::size_t{8} << 20;
    /// Fewest ops between keyframes.
    static constexpr std::uint32_t min_keyframe_every = 1024;
    /// Most series samples.
    static constexpr std::size_t max_samples = 2000;
    /// Largest heap a player replays into (TLSF, first-fit and buddy regions; engine reservation).
    static constexpr std::size_t max_heap_bytes = std::size_t{1} << 31;

    /// Effects: replays the first max_ops ops of `w` through a fresh heap of kind `h` and records
    /// every placement, a keyframe every keyframe_every() ops and a sample every sample_every() ops.
    /// `progress(fraction)` is called now and then (may be empty); when `*cancel` turns true the
    /// replay stops and nullptr is returned. The heap is destroyed before this returns: the player
    /// keeps what the allocator decided, not its memory. The player's own memory goes back to the
    /// OS (malloc_trim) when its last holder lets go.
    /// Throws: std::bad_alloc; std::invalid_argument when the workload needs a heap larger than
    /// max_heap_bytes.
    [[nodiscard]] static std::shared_ptr<const trace_player>
    prepare(const op_workload& w, player_heap h, const std::function<void(double)>& progress = {},
            const std::atomic<bool>* cancel = nullptr);

    /// Returns: true when the workload had more than max_ops ops: the player holds the first max_ops.
    [[nodiscard]] bool cut() const noexcept { return cut_; }
    /// Returns: ops in the player; positions run 0..ops() (position k: the first k ops done).
    [[nodiscard]] std::uint32_t ops() const noexcept { return static_cast<std::uint32_t>(steps_.size()); }
    [[nodiscard]] player_heap heap() const noexcept { return heap_; }
    /// Returns: the bytes the map spans: the heap's region (TLSF, first-fit, buddy) or, for the
    /// engine heap, the highest block end the replay reached, rounded up to the engine's 64 KiB granule.
    [[nodiscard]] std::uint64_t heap_bytes() const noexcept { return heap_bytes_; }
    [[nodiscard]] std::uint32_t keyframe_every() const noexcept { return keyframe_every_; }
    [[nodiscard]] std::uint32_t sample_every() const noexcept { return sample_every_; }
    [[nodiscard]] const std::vector<heap_sample>& samples() const noexcept { return samples_; }
    [[nodiscard]] const std::vector<placed_block>& blocks() const noexcept { return blocks_; }
    /// Returns: total refusals over the whole replay.
    [[nodiscard]] std::uint32_t refusals() const noexcept {
        return static_cast<std::uint32_t>(refused_.size());
    }
    /// Returns: refusals among the first k ops.
    [[nodiscard]] std::uint32_t refusals_before(std::uint32_t k) const noexcept;
    /// Returns: the allocator's own check() at the end of the replay.
    [[nodiscard]] bool heap_checked() const noexcept { return checked_; }
    /// Returns: the milliseconds prepare() took (the replay and its sampling).
    [[nodiscard]] double prepare_ms() const noexcept { return prepare_ms_; }
    /// Returns: the bytes this player holds.
    [[nodiscard]] std::size_t bytes() const noexcept;

    /// Effects: `out` = ids (indexes into blocks()) of the blocks live after the first k ops,
    /// sorted by start; found from the keyframe at or below k plus the ops after it.
    /// Requires: k <= ops().
    void live_at(std::uint32_t k, std::vector<std::uint32_t>& out) const;

    /// Effects: `out` = the same set by a plain pass over every op from 0 (tests compare the two).
    void live_by_replay(std::uint32_t k, std::vector<std::uint32_t>& out) const;

    /// Returns: what a block's bin means for this heap ("fl 7 sl 3", "order 2", "class 12 (192 B)",
    /// "medium (TLSF arena)", "large (span)"); empty when the heap has no bins (first-fit).
    [[nodiscard]] std::string bin_label(const placed_block& b) const;

    /// Returns: how the map's offsets relate to the heap (one sentence for the page).
    [[nodiscard]] std::string_view layout_note() const noexcept;

private:
    struct step {
        std::uint32_t born; ///< block made by this op; none
        std::uint32_t died; ///< block freed (or moved away by a reallocate) by this op; none
    };
    static constexpr std::uint32_t none = ~std::uint32_t{0};
    template <class Heap>
    friend struct replayer;

    player_heap heap_ = player_heap::tlsf;
    std::uint64_t heap_bytes_ = 0;
    std::uint32_t keyframe_every_ = min_keyframe_every;
    std::uint32_t sample_every_ = 1;
    std::vector<placed_block> blocks_;
    std::vector<step> steps_;
    std::vector<std::uint32_t> keyframe_at_; ///< keyframe j's first id in keyframe_ids_ (+ one end entry)
    std::vector<std::uint32_t> keyframe_ids_;
    std::vector<heap_sample> samples_;
    std::vector<std::uint32_t> refused_; ///< op indexes of refused allocations, ascending
    bool checked_ = false;
    bool cut_ = false;
    double prepare_ms_ = 0;
};

} // namespace strata::lab::serve
