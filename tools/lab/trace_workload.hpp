#pragma once
// Turns a recorded trace (tools/trace) into an op_workload for replay.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ops.hpp"

namespace strata::lab {

/// What the conversion dropped or changed, for the report.
struct trace_conversion {
    std::uint64_t records = 0;
    std::uint64_t failed_calls = 0;   ///< calls that failed when recorded: not replayed
    std::uint64_t unknown_blocks = 0; ///< frees/reallocs of blocks allocated before recording began
    std::uint64_t truncated_ops = 0;  ///< ops past `max_ops` (not replayed)
    std::uint64_t gaps = 0;           ///< records the file lost (reader stats)
    bool truncated_file = false;
};

/// Effects: reads the trace at `path` (streaming) and builds its op_workload, at most `max_ops`
/// memory operations. Ops keep the recorded thread numbers (0-based); the order is the recorded
/// global order. Throws: std::runtime_error from the reader; std::logic_error when the lab was
/// built without trace support (libzstd-dev missing).
[[nodiscard]] op_workload load_trace(const std::string& path, std::uint64_t max_ops,
                                     trace_conversion* info = nullptr);

/// Effects: as above, for a trace held in memory (the embedded default trace); `name` names the
/// workload.
[[nodiscard]] op_workload load_trace(const void* data, std::size_t size, const std::string& name,
                                     std::uint64_t max_ops, trace_conversion* info = nullptr);

/// Returns: true when this build can read traces.
[[nodiscard]] bool trace_support() noexcept;

} // namespace strata::lab
