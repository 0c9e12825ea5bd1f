#pragma once
// strata-lab session: runs a set of contestants over one workload and collects a run_report.
#include <span>

#include "registry.hpp"
#include "report.hpp"
#include "timer.hpp"
#include "workload.hpp"

namespace strata::lab {

struct session_options {
    int repeats = 3;       ///< throughput passes per contestant (the median is reported)
    bool progress = false; ///< one-line progress on stderr
};

/// Effects: for every contestant, one latency pass; then `repeats` rounds of throughput passes,
/// each round visiting every contestant (so slow drift in the machine spreads over all of them).
/// Returns: the report (results in the order of `who`).
[[nodiscard]] run_report run_session(const workload& w, std::span<const contestant* const> who,
                                     const calibration& timer, const session_options& options);

} // namespace strata::lab
