#pragma once
// strata-lab reporting: the results model and its two renderings (terminal table, JSON).
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "metrics.hpp"
#include "registry.hpp"
#include "timer.hpp"
#include "workload.hpp"

namespace strata::lab {

/// How the binary doing the measuring was built (numbers from a checked or unoptimized build are
/// not release numbers, and the report says so).
struct build_info {
    std::string compiler;
    bool optimized = false;
    bool ndebug = false;
    int checks = 0;
    bool asan = false;
};

/// Returns: the build_info of this translation unit's build.
[[nodiscard]] build_info current_build();

/// Everything measured for one contestant.
struct contestant_result {
    std::string name;
    std::string description;
    std::vector<double> pass_ns_per_alloc; ///< one per throughput pass
    double ns_per_alloc = 0;               ///< median of pass_ns_per_alloc
    latency_summary latency_ticks;         ///< raw ticks, timer overhead not yet subtracted
    memory_figures memory;
    std::size_t failed_allocs = 0;
};

/// One run of the default workload over a set of contestants.
struct run_report {
    std::string label = "default workload"; ///< what ran, for the title line
    bool smoke_test = false;                ///< --quick: too small for stable numbers (said in the header)
    workload_config config;
    std::size_t total_allocs = 0;
    std::size_t timed_allocs = 0;
    std::size_t min_frame_allocs = 0;
    std::size_t max_frame_allocs = 0;
    std::size_t max_frame_bytes = 0;
    int repeats = 0;
    double wall_seconds = 0; ///< the whole measurement, calibration and generation excluded
    calibration timer;
    build_info build;
    std::vector<contestant_result> results;

    /// Returns: the result named `name`, or nullptr.
    [[nodiscard]] const contestant_result* find(const std::string& name) const noexcept {
        for (const auto& r : results) {
            if (r.name == name) return &r;
        }
        return nullptr;
    }
};

/// Effects: writes the human report (header, calibration, table, notes) to `out`.
void print_report(std::ostream& out, const run_report& report);

/// Effects: writes `report` as one JSON object to `out`.
void write_json(std::ostream& out, const run_report& report);

/// Returns: `bytes` as "123 B", "12.3 KiB", "1.23 MiB" or "1.23 GiB".
[[nodiscard]] std::string format_bytes(std::size_t bytes);

/// Returns: `n` with thousands separators, e.g. "1,200,000".
[[nodiscard]] std::string format_count(std::size_t n);

} // namespace strata::lab
