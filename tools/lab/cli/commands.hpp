#pragma once
// strata-lab commands. main.cpp parses the command line into these option structs and calls one.
// A new subcommand (replay, serve, showdown, ...) adds its struct and function here, its own
// cmd_<name>.cpp, and a few lines in main.cpp; contestants come from builtin_registry() for all.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::lab {

/// Options of `strata-lab [run]`, the embedded default workload.
struct run_options {
    std::optional<std::uint64_t> seed;
    std::optional<std::size_t> frames;
    std::optional<std::size_t> allocs_per_frame;
    std::optional<std::size_t> warmup_frames;
    std::optional<int> repeats;
    std::vector<std::string> only; ///< name patterns ('*' and '?' wildcards); empty = all
    std::string json_path;         ///< "" = none, "-" = stdout instead of the table
    bool quick = false;            ///< small workload (tests, CI); explicit sizes still win
    bool list = false;             ///< list contestants and exit
};

/// Returns: the process exit code (0 success, 2 bad arguments, 1 I/O failure).
int run_command(const run_options& options);

/// Options of `strata-lab showdown` (seed 001's handle/pool sets; see cmd_showdown.cpp).
struct showdown_options {
    int set = 0;             ///< 1..4 runs one set; 0 runs all four
    int repeats = 3;         ///< runs per design, best kept
    std::uint64_t seed = 42; ///< victim sequence seed
    bool quick = false;      ///< scaled-down sets (tests, CI)
    bool padded = true;      ///< also run the 32-byte particle
    std::string json_path;   ///< also write the sets as the report's "bars" (docs/lab-report.md)
};

/// Effects: prints the showdown tables. Returns: 0.
int showdown_command(const showdown_options& options);

/// Effects: prints every registered contestant (name and description). Returns: 0.
int list_command();

} // namespace strata::lab
