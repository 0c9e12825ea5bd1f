#pragma once
// strata-lab race: every replay contender over a set of op workloads, with a terminal table and a
// JSON document (the input of `strata-lab report`). Used by the race and replay commands.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "ops.hpp"
#include "replay.hpp"
#include "timer.hpp"

namespace strata::lab {

/// Summary numbers of one replay (ns, net of the timer's own overhead).
struct race_row {
    replay_result result;
    std::string description;
    double ns_per_op = 0;
    double p50 = 0, p99 = 0, p999 = 0, p9999 = 0, max = 0;           ///< raw pass
    double f_p50 = 0, f_p99 = 0, f_p999 = 0, f_p9999 = 0, f_max = 0; ///< filtered
    double waste = -1;      ///< internal waste at the granted peak, (granted - live) / granted; -1 unknown
    double worst_frag = -1; ///< max over samples of 1 - largest_free / free_bytes; -1 unknown
    double end_largest_free = -1;
};

/// One workload's rows.
struct race_section {
    std::string workload;
    std::string description;
    std::uint64_t memory_ops = 0;
    std::uint64_t peak_live_bytes = 0;
    std::uint64_t peak_live_blocks = 0;
    std::uint32_t threads = 1;
    std::vector<race_row> rows;       ///< contenders that apply, in registry order
    std::vector<std::string> skipped; ///< contenders that do not apply ("name: why")
    bool streamed = false;            ///< replayed batch by batch (race_workload's `stream`)
    double resolution_ns = 0;         ///< the counter's step: tables print smaller latencies "<step"
};

struct race_options {
    std::vector<std::string> only; ///< contender name patterns; empty = all
    replay_options replay;
    bool progress = true;
};

/// Effects: replays `w` through every selected contender; with `stream`, `w` is only the shape of
/// a workload too big to hold (statistics, no ops) and every pass reads its ops from a new
/// stream (replay_streamed). Returns: its section.
[[nodiscard]] race_section race_workload(const op_workload& w, const race_options& o, const calibration& cal,
                                         const op_stream_factory* stream = nullptr);

/// Effects: prints one section as a table that fits 100 columns.
void print_section(std::ostream& out, const race_section& s);

/// Effects: prints one section's latency distribution: raw and filtered percentiles per allocator
/// (p50 .. p99.999 and max), one line each (`strata-lab latency`).
void print_latency(std::ostream& out, const race_section& s, const calibration& cal);

/// Effects: prints, for every allocator that reports its free space, the largest free block and the
/// external fragmentation at ten points of the workload, and its footprint (`strata-lab
/// fragmentation`).
void print_fragmentation(std::ostream& out, const race_section& s);

/// Effects: writes the sections as one JSON document: per row the summary, a log-binned latency
/// histogram (raw and filtered), tail points, and the memory series.
void write_race_json(std::ostream& out, const std::vector<race_section>& sections, const calibration& cal,
                     const std::string& title);

} // namespace strata::lab
