#pragma once
// strata-lab commands over the op model: race (synthetic workloads), replay (a recorded trace) and
// record (run a program under libstrata_trace.so). main.cpp parses into these and calls one.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::lab {

/// What race_command prints for each workload.
enum class race_view {
    summary,       ///< `race`: speed, tails, footprint, waste, fragmentation, failures
    latency,       ///< `latency`: percentiles p50 .. p99.999, raw and filtered
    fragmentation, ///< `fragmentation`: largest free block over the run (default workload: bimodal)
};

struct race_command_options {
    race_view view = race_view::summary;
    std::vector<std::string> workloads; ///< synthetic workload names; empty = all
    double scale = 1.0;                 ///< work multiplier (--quick: 0.05)
    std::uint64_t seed = 42;
    std::vector<std::string> only; ///< allocator name patterns
    int repeats = 3;
    int latency_passes = 3;
    std::string json_path; ///< "" none, "-" stdout (no table)
};

struct replay_command_options {
    std::string trace;
    std::vector<std::string> only;
    int repeats = 3;
    int latency_passes = 3;
    std::uint64_t max_ops = 50'000'000;  ///< replay at most this many memory ops of the trace
    std::uint64_t hold_ops = 20'000'000; ///< more ops than this: stream in batches, do not load
    bool stream = false;                 ///< always stream
    std::size_t batch_ops = 1 << 20;     ///< ops per batch when streaming
    std::string json_path;
};

struct record_command_options {
    std::string out;               ///< trace file to write
    std::vector<std::string> argv; ///< the program and its arguments
};

struct versus_malloc_options {
    int repeats = 3;       ///< runs per allocator (the published times average 3; the median is reported)
    std::string json_path; ///< "" none, "-" stdout (no table)
};

struct layout_options {
    std::size_t entities = 10'000'000; ///< --quick: 1,000,000
    int runs = 5;                      ///< best of
    std::string json_path;
};

/// Returns: exit code (0 ok, 1 failure, 2 bad arguments).
int race_command(const race_command_options& o);
/// AoS vs SoA: cache lines loaded vs bytes used for touch-one-field and touch-all, and their times.
int layout_command(const layout_options& o);
/// The four "malloc vs ..." tables (linear, stack, free list, pool), beside their published times.
int versus_malloc_command(const versus_malloc_options& o);
int replay_command(const replay_command_options& o);
/// Returns: the recorded program's exit code (128 + signal if it was killed), 2 bad arguments.
int record_command(const record_command_options& o);

/// Effects: prints every replay contender (name, description, what it needs). Returns: 0.
int list_op_contenders();

/// Returns: the path of libstrata_trace.so for this strata-lab: $STRATA_TRACE_LIB, else next to
/// the build tree (../trace/) or the install (../lib/); "" if none exists.
[[nodiscard]] std::string find_trace_library();

} // namespace strata::lab
