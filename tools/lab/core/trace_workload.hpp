#pragma once
// Turns a recorded trace (tools/trace) into an op_workload for replay.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops.hpp"

namespace strata::lab {

/// What the conversion dropped or changed, for the report.
struct trace_conversion {
    std::uint64_t records = 0;
    std::uint64_t failed_calls = 0;       ///< calls that failed when recorded: not replayed
    std::uint64_t unknown_blocks = 0;     ///< frees/reallocs of blocks allocated before recording began
    std::uint64_t truncated_ops = 0;      ///< ops past `max_ops` (not replayed)
    std::uint64_t gaps = 0;               ///< records the file lost (reader stats)
    std::uint64_t clamped_alignments = 0; ///< requests aligned past 1 GiB, replayed at 1 GiB
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

/// A trace converted batch by batch, so a multi-GB trace replays in bounded memory: the ops of
/// one batch at a time plus one slot per live block. Produces exactly the ops load_trace would
/// (the same converter), minus the timestamps. Each object is one pass over the trace; open a new
/// one for every pass.
class trace_batches {
public:
    /// Effects: opens the trace at `path`; at most `max_ops` memory ops are produced. Decoding
    /// stops there, unless `count_past_max`: then the rest is read too, to count in conversion()
    /// what was cut. Throws: as load_trace.
    trace_batches(const std::string& path, std::uint64_t max_ops, bool count_past_max = false);
    /// Effects: as above, for a trace held in memory (`data` must outlive this object).
    trace_batches(const void* data, std::size_t size, const std::string& name, std::uint64_t max_ops,
                  bool count_past_max = false);
    ~trace_batches();
    trace_batches(const trace_batches&) = delete;
    trace_batches& operator=(const trace_batches&) = delete;

    /// Effects: replaces `out` with the next batch of about `batch_ops` ops. Returns: false (and
    /// `out` empty) when the trace is exhausted. Throws: std::runtime_error on a corrupt stream.
    bool next(std::vector<op>& out, std::size_t batch_ops);
    /// Returns: the statistics of every op produced so far (the workload's shape once next() has
    /// returned false), with no ops.
    [[nodiscard]] op_workload shape() const;
    /// Returns: what the conversion dropped so far.
    [[nodiscard]] const trace_conversion& conversion() const noexcept;

    struct converter;

private:
    std::unique_ptr<converter> c_;
};

/// Effects: one streaming pass over the trace at `path`. Returns: the shape of its op_workload
/// (every statistic, no ops), in memory bounded by the live blocks. Throws: as load_trace.
[[nodiscard]] op_workload scan_trace(const std::string& path, std::uint64_t max_ops,
                                     trace_conversion* info = nullptr);

/// Returns: true when this build can read traces.
[[nodiscard]] bool trace_support() noexcept;

} // namespace strata::lab
