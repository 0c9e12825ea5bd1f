#pragma once
// strata-lab contestants for the adapters (issue 6): the frame arena wrapped in tracked<>, debug<>
// and locked<>, so the lab shows what each costs on a frame workload next to the plain "arena"
// contestant (tools/lab/contestants.hpp). Wire in with add_adapt_contestants(reg).
#include <algorithm>
#include <cstddef>
#include <span>

#include "strata/adapt/debug.hpp"
#include "strata/adapt/locked.hpp"
#include "strata/adapt/tracked.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/heap_source.hpp"

#include "contestants.hpp"
#include "registry.hpp"

namespace strata::lab {

/// tracked<arena> growing from a heap_source, counting on a tracker; reset() and reset_frame() each
/// frame. used_peak is the tracker's in_use (bytes requested) at the fullest point of each sampled
/// frame, held_peak the arena's capacity. (The tracker's own peak() would include warm-up frames.)
class tracked_arena_adapter {
public:
    explicit tracked_arena_adapter(const workload&) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return arena_.allocate(size, align); }
    void end_frame(std::span<void* const>) noexcept {
        arena_.reset();
        frame_.reset_frame();
    }
    void sample(std::span<void* const>) noexcept {
        used_ = std::max(used_, frame_.in_use());
        held_ = std::max(held_, arena_.stats().capacity);
    }
    [[nodiscard]] memory_figures memory() const noexcept { return {used_, held_, source_.calls(), false}; }

private:
    counting_source<heap_source> source_;
    tracker frame_{"frame"};
    tracked<arena> arena_{frame_, source_};
    std::size_t used_ = 0;
    std::size_t held_ = 0;
};

/// debug<arena> growing from a heap_source: fences, fills and a block record per allocation;
/// reset() each frame (forgets the records, no leak report).
using debug_arena_adapter = heap_arena_adapter<debug<arena>>;

/// locked<arena> (std::mutex, uncontended) growing from a heap_source; reset() each frame.
using locked_arena_adapter = heap_arena_adapter<locked<arena>>;

/// Effects: adds the adapter contestants to `reg`.
inline void add_adapt_contestants(registry& reg) {
    reg.add(make_contestant<tracked_arena_adapter>(
        "tracked_arena",
        "strata::tracked<arena> (heap_source, keeps blocks) on a tracker; reset() each frame"));
    reg.add(make_contestant<debug_arena_adapter>(
        "debug_arena",
        "strata::debug<arena>: 16 B fences, 0xCD/0xDD fills, block records; reset() each frame"));
    reg.add(make_contestant<locked_arena_adapter>(
        "locked_arena", "strata::locked<arena, std::mutex>, uncontended; reset() each frame"));
}

} // namespace strata::lab
