#pragma once
// strata-lab commands: each cli/cmd_<name>.cpp registers its subcommands with register_command();
// main.cpp declares the shared options, adds every registered command to the CLI11 app, parses the
// command line and runs the chosen command. The option structs and entry points are below.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "race.hpp"

namespace strata::lab {

// ---- registry ----------------------------------------------------------------------------------

/// The default race's work multiplier: every embedded workload through every allocator in about
/// 30 s of CPU on a 2-core machine (`--full` races at 1).
inline constexpr double default_race_scale = 0.5;

/// The race's knobs as the command line gave them; nullopt = not given. Kept apart from a given
/// value so that --quick lowers only the defaults: an explicit --repeats 5 --quick races 5 passes,
/// as `replay` does.
struct race_knobs {
    std::optional<double> scale;       ///< default default_race_scale; --full: 1; --quick: 0.05
    bool full = false;                 ///< --full: scale 1 where --scale is not given
    std::optional<std::uint64_t> seed; ///< default 42
    std::optional<int> repeats;        ///< default 3; --quick: 1
    std::optional<int> latency_passes; ///< default 3; --quick: 1
};

/// The options shared by the commands (declared on the app, so they may come before or after the
/// subcommand's name), as parsed; filled before a command runs.
struct shared_options {
    race_knobs knobs;                    ///< --scale, --seed, --repeats, --latency-passes
    std::vector<std::string> workloads;  ///< --workload: synthetic workload names; empty = all
    std::vector<std::string> only;       ///< --only: allocator name patterns ('*', '?'); empty = all
    std::string json_path;               ///< --json: "" = none, "-" = stdout instead of the table
    bool quick = false;                  ///< --quick: smaller defaults; explicit values still win
    bool list = false;                   ///< --list: list the contenders and exit
    std::vector<std::string_view> given; ///< the shared options given on the command line
};

/// One subcommand of strata-lab.
struct command {
    int order = 0; ///< its place in --help
    std::string_view name;
    /// The shared options it uses (any other given is refused); nullopt: all of them.
    std::optional<std::vector<std::string_view>> uses;
    /// Adds the subcommand to `app` (`uses_note` says which shared options it uses, for its help
    /// line) and returns what runs when it is chosen, once `shared` is filled.
    std::function<std::function<int()>(CLI::App& app, const shared_options& shared,
                                       const std::string& uses_note)>
        add;
};

/// Returns: a validator of a whole number from 0 to 2^64-1 that names `what` when refusing one
/// (CLI11's conversion, strtoull, would take -1 or 2^70 and wrap them).
[[nodiscard]] CLI::Validator whole_number(const char* what, const char* type_name);

/// Effects: registers `c`. Returns: true, for a namespace-scope registrar in the command's file.
bool register_command(command c);
/// Returns: every registered command, in `order`.
[[nodiscard]] std::vector<command> registered_commands();

// ---- race, latency, fragmentation, run (cmd_race.cpp) -------------------------------------------

/// What race_command prints for each workload.
enum class race_view {
    summary,       ///< `race`: speed, tails, footprint, waste, fragmentation, failures
    latency,       ///< `latency`: percentiles p50 .. p99.999, raw and filtered
    fragmentation, ///< `fragmentation`: largest free block over the run (default workload: bimodal)
};

struct race_command_options {
    race_view view = race_view::summary;
    std::vector<std::string> workloads; ///< synthetic workload names; empty = all
    double scale = default_race_scale;  ///< work multiplier (--full: 1; --quick: 0.05)
    std::uint64_t seed = 42;
    std::vector<std::string> only; ///< allocator name patterns
    int repeats = 3;
    int latency_passes = 3;
    std::string json_path; ///< "" none, "-" stdout (no table)
};

/// Effects: fills r.scale, r.seed, r.repeats, r.latency_passes from `k`, the defaults (--quick's
/// where `quick`) standing in for what was not given. The one place these defaults live for
/// `race`, `latency`, `fragmentation`, `run` and `report`.
void apply_race_knobs(race_command_options& r, const race_knobs& k, bool quick);

/// Returns: exit code (0 ok, 1 failure, 2 bad arguments).
int race_command(const race_command_options& o);

/// Effects: prints every replay contender (name, description, what it needs). Returns: 0.
int list_op_contenders();

/// Effects: prints the timer's calibration and what the race columns mean.
void print_header(std::ostream& out, const calibration& cal);
/// Returns: false (after saying which, and what exists) when a --only pattern names no allocator.
bool only_matches(const std::vector<std::string>& only);
/// Effects: writes the race JSON of `sections` to `json_path` ("-": stdout, "": nowhere).
/// Returns: 0, or 1 when the file cannot be written.
int emit(const std::vector<race_section>& sections, const calibration& cal, const std::string& title,
         const std::string& json_path);

// ---- replay (cmd_replay.cpp), record (cmd_record.cpp) -------------------------------------------

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

int replay_command(const replay_command_options& o);

struct record_command_options {
    std::string out;               ///< trace file to write
    std::vector<std::string> argv; ///< the program and its arguments
};

/// Returns: the recorded program's exit code (128 + signal if it was killed), 2 bad arguments.
int record_command(const record_command_options& o);

/// `strata-lab record -o FILE [--] PROGRAM [ARGS...]`, parsed by hand: the program's arguments are
/// not strata-lab's. Returns: as record_command.
int record_main(int argc, char** argv);

/// Returns: the path of libstrata_trace.so for this strata-lab: $STRATA_TRACE_LIB, else next to
/// the build tree (../trace/) or the install (../lib/); "" if none exists.
[[nodiscard]] std::string find_trace_library();

// ---- versus-malloc (cmd_versus_malloc.cpp), layout (cmd_layout.cpp) -----------------------------

struct versus_malloc_options {
    int repeats = 3;       ///< runs per allocator (the published times average 3; the median is reported)
    std::string json_path; ///< "" none, "-" stdout (no table)
};

/// The four "malloc vs ..." tables (linear, stack, free list, pool), beside their published times.
int versus_malloc_command(const versus_malloc_options& o);

struct layout_options {
    std::size_t entities = 10'000'000; ///< --quick: 1,000,000
    int runs = 5;                      ///< best of
    std::string json_path;
};

/// AoS vs SoA: cache lines loaded vs bytes used for touch-one-field and touch-all, and their times.
int layout_command(const layout_options& o);

// ---- showdown (cmd_showdown.cpp) ---------------------------------------------------------------

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

// ---- report (cmd_report.cpp): the HTML report ---------------------------------------------------

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
