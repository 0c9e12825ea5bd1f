#pragma once
// A one-pass summary of a trace: what strata-lab record prints after recording, and what
// strata-trace-info prints for any file.
#include <cstdint>
#include <string>
#include <unordered_map>

#include "trace_reader.hpp"

namespace strata::trace {

struct trace_summary {
    file_header header{};
    reader_stats reader{};
    std::uint64_t by_op[16] = {};      ///< records per `op` value
    std::uint64_t failed = 0;          ///< records with flag_failed
    std::uint64_t threads = 0;         ///< distinct thread numbers
    std::uint64_t peak_live_bytes = 0; ///< most requested bytes live at once (in seq order)
    std::uint64_t peak_live_blocks = 0;
    std::uint64_t end_live_blocks = 0; ///< still live at the end (leaks, or freed after the trace)
    std::uint64_t unknown_frees = 0;   ///< frees or reallocs of blocks allocated before recording began
    std::uint64_t duration_ns = 0;     ///< time of the last record
    std::uint64_t file_bytes = 0;
};

/// Effects: reads the whole trace once. Throws: what trace_reader throws.
[[nodiscard]] trace_summary summarize(const std::string& path);

/// Returns: the summary as a few aligned lines of text.
[[nodiscard]] std::string to_text(const trace_summary& s);

} // namespace strata::trace
