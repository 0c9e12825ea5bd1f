// strata-lab report: runs the race (or reads its JSON) and writes one self-contained HTML page.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "op_commands.hpp"

namespace strata::lab {

/// The default race's work multiplier: every embedded workload through every allocator in about
/// 30 s of CPU on the 2-core development machine (`--full` races at 1).
inline constexpr double default_race_scale = 0.5;

/// The race's knobs as the command line gave them; nullopt = not given. Kept apart from a given
/// value so that --quick lowers only the defaults: an explicit --repeats 5 --quick races 5 passes
/// (as `run` and `replay` do).
struct race_knobs {
    std::optional<double> scale;       ///< default default_race_scale; --full: 1; --quick: 0.05
    bool full = false;                 ///< --full: scale 1 where --scale is not given
    std::optional<std::uint64_t> seed; ///< default 42
    std::optional<int> repeats;        ///< default 3; --quick: 1
    std::optional<int> latency_passes; ///< default 3; --quick: 1
};

/// Effects: fills r.scale, r.seed, r.repeats, r.latency_passes and r.quick from `k`, the defaults
/// (--quick's where `quick`) standing in for what was not given. The one place these defaults live
/// for `race`, `latency`, `fragmentation` and `report`.
void apply_race_knobs(race_command_options& r, const race_knobs& k, bool quick);

struct report_command_options {
    std::string from_json;                  ///< a `race --json` / `replay --json` document; "" = run the race
    std::string out = "strata-report.html"; ///< the HTML file to write
    bool quick = false;                     ///< with no from_json: race at the --quick scale
    std::vector<std::string> workloads;     ///< with no from_json: workload names; empty = all
    std::vector<std::string> only;          ///< with no from_json: allocator name patterns
    race_knobs race; ///< with no from_json: --scale, --seed, --repeats, --latency-passes
};

/// Writes the report; prints its path. 0 on success, 1 on I/O errors, 2 on bad arguments.
int report_command(const report_command_options& o);

} // namespace strata::lab
