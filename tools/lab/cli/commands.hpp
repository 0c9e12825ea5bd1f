#pragma once
// strata-lab commands: the options every command shares, and showdown's.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::lab {

/// The options shared by the commands (declared on the app, so they may come before or after the
/// subcommand's name); nullopt = not given, so --quick lowers only the defaults.
struct shared_options {
    std::optional<std::uint64_t> seed;
    std::optional<int> repeats;
    std::vector<std::string> only; ///< allocator name patterns ('*' and '?' wildcards); empty = all
    std::string json_path;         ///< "" = none, "-" = stdout instead of the table
    bool quick = false;            ///< smaller defaults (tests, CI); explicit values still win
    bool list = false;             ///< list the contenders and exit
};

/// Options of `strata-lab showdown` (the particle sets over handle and pool designs; cmd_showdown.cpp).
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

} // namespace strata::lab
