// strata-lab: races allocators on the same workloads and reports speed, latency tails, footprint
// and fragmentation. See docs/lab.md.
//
//   strata-lab [race]            the embedded workload set through every allocator (the default;
//                                about half a minute; --full: the workloads at full size)
//   strata-lab latency           the same, printed as latency percentiles (raw and filtered)
//   strata-lab fragmentation     largest free block over the bimodal workload
//   strata-lab run               alias of `race --workload frame_scratch`
//   strata-lab replay TRACE      a recorded trace through every allocator that applies
//   strata-lab record -o FILE -- PROGRAM [ARGS...]     record a program's allocations
//   strata-lab versus-malloc     malloc against linear, stack, free-list and pool allocators
//   strata-lab layout            AoS vs SoA: cache lines loaded vs bytes used
//   strata-lab showdown          particle sets (pools, packed array, slot map, colony), published figures
//   strata-lab report            one self-contained HTML report with plots
//   strata-lab serve             the live lab
//
// Each command is a cli/cmd_<name>.cpp that registers itself (commands.hpp); this file declares
// the options the commands share, parses, and runs the chosen command.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace strata::lab {

CLI::Validator whole_number(const char* what, const char* type_name) {
    return CLI::Validator(
        [what](std::string& text) -> std::string {
            std::uint64_t v = 0;
            const char* end = text.data() + text.size();
            const auto [at, ec] = std::from_chars(text.data(), end, v);
            if (text.empty() || ec != std::errc{} || at != end)
                return std::string(what) + " is a whole number from 0 to 18446744073709551615, got '" + text +
                       "'";
            return {};
        },
        type_name);
}

namespace {

std::vector<command>& commands() {
    static std::vector<command> all;
    return all;
}

/// Returns: " (uses --a, --b)" for a command's help line; " (uses no shared option)" for none; ""
/// for a command that uses them all.
std::string uses_note(const std::optional<std::vector<std::string_view>>& uses) {
    if (!uses) return {};
    if (uses->empty()) return " (uses no shared option)";
    std::string s = " (uses ";
    for (std::size_t i = 0; i < uses->size(); ++i)
        s += (i ? ", " : "") + std::string((*uses)[i]);
    return s + ")";
}

} // namespace

bool register_command(command c) {
    commands().push_back(std::move(c));
    return true;
}

std::vector<command> registered_commands() {
    std::vector<command> all = commands();
    std::sort(all.begin(), all.end(), [](const command& a, const command& b) { return a.order < b.order; });
    return all;
}

} // namespace strata::lab

int main(int argc, char** argv) {
    using namespace strata::lab;
    if (argc > 1 && std::strcmp(argv[1], "record") == 0) return record_main(argc, argv);

    CLI::App app{"strata-lab: races allocators (strata's, malloc, std::pmr) on the same workloads. "
                 "Without a subcommand it runs `race` on the embedded workload set."};
    app.require_subcommand(0, 1);
    app.fallthrough(); // options given after a subcommand name still reach the shared options below

    // The shared options, declared on the app. CLI11 fills plain values; "not given" is kept apart
    // from a given default (race_knobs), so --quick lowers only the defaults.
    shared_options shared;
    std::uint64_t seed = 0;
    int repeats = 0, latency_passes = 3;
    double scale = 1.0;
    auto* seed_opt = app.add_option("--seed", seed, "workload seed (default 42)")
                         ->type_name("S")
                         ->check(whole_number("a seed", "S"));
    auto* repeats_opt =
        app.add_option("--repeats", repeats,
                       "timed passes: race, replay and versus-malloc report the median, showdown and "
                       "layout keep the best (default 3; layout: 5; --quick: 1, layout 2)")
            ->type_name("N")
            ->check(CLI::Range(1, 100));
    auto* only_opt = app.add_option("--only", shared.only,
                                    "only these allocators (repeatable or comma-separated; '*' and '?' "
                                    "wildcards)")
                         ->delimiter(',')
                         ->type_name("NAME")
                         ->allow_extra_args(false);
    auto* list_opt = app.add_flag("--list", shared.list, "list the allocators and exit");
    auto* json_opt = app.add_option("--json", shared.json_path,
                                    "also write the results as JSON to FILE ('-': JSON on stdout, no table)")
                         ->type_name("FILE");
    auto* quick_opt = app.add_flag("--quick", shared.quick, "smaller defaults for tests and CI");
    bool full = false;
    auto* full_opt = app.add_flag("--full", full,
                                  "race, latency, fragmentation, report: the workloads at their full size "
                                  "(scale 1; the default is scale 0.5, about half a minute for the race)")
                         ->excludes(quick_opt);
    auto* workload_opt = app.add_option("--workload", shared.workloads,
                                        "race only this workload (repeatable): frame_scratch, particles, "
                                        "bimodal, w1, w2, w3, levels, openttd")
                             ->type_name("NAME")
                             ->allow_extra_args(false);
    auto* scale_opt =
        app.add_option("--scale", scale,
                       "race, latency, fragmentation, report: work multiplier (default 0.5; --full: 1; "
                       "--quick: 0.05)")
            ->type_name("X")
            // CLI::Range lets NaN through (every comparison with it is false).
            ->check(CLI::Validator(
                [](std::string& v) {
                    const double x = std::strtod(v.c_str(), nullptr);
                    return std::isfinite(x) && x >= 0.0001 && x <= 100.0
                               ? std::string()
                               : "must be a number in [0.0001, 100]";
                },
                "X in [0.0001, 100]"));
    auto* latency_passes_opt =
        app.add_option("--latency-passes", latency_passes,
                       "per-op timed passes; the filtered tail is the per-op minimum (default 3; --quick: "
                       "1; 0: none)")
            ->type_name("N")
            ->check(CLI::Range(0, 20));
    const std::vector<std::pair<std::string_view, const CLI::Option*>> shared_opts = {
        {"--seed", seed_opt},         {"--repeats", repeats_opt}, {"--only", only_opt},
        {"--list", list_opt},         {"--json", json_opt},       {"--quick", quick_opt},
        {"--workload", workload_opt}, {"--scale", scale_opt},     {"--latency-passes", latency_passes_opt},
        {"--full", full_opt},
    };

    struct added {
        command spec;
        CLI::App* app;
        std::function<int()> run;
    };
    std::vector<added> added_commands;
    for (command& c : registered_commands()) {
        std::function<int()> run = c.add(app, shared, uses_note(c.uses));
        added_commands.push_back({c, app.get_subcommand(std::string(c.name)), std::move(run)});
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e); // prints help or the error
        return rc == 0 ? 0 : 2;
    }
    // The parsed subcommand; none: race.
    auto chosen = std::find_if(added_commands.begin(), added_commands.end(),
                               [](const added& a) { return a.app->parsed(); });
    if (chosen == added_commands.end())
        chosen = std::find_if(added_commands.begin(), added_commands.end(),
                              [](const added& a) { return a.spec.name == "race"; });
    // A shared option the command does not use is refused, naming both.
    for (const auto& [name, opt] : shared_opts) {
        if (opt->count() == 0) continue;
        shared.given.push_back(name);
        const auto& uses = chosen->spec.uses;
        if (uses && std::find(uses->begin(), uses->end(), name) == uses->end()) {
            std::cerr << "strata-lab: " << chosen->spec.name << " does not use " << name << uses_note(uses)
                      << "\n";
            return 2;
        }
    }
    if (seed_opt->count() > 0) shared.knobs.seed = seed;
    if (repeats_opt->count() > 0) shared.knobs.repeats = repeats;
    if (scale_opt->count() > 0) shared.knobs.scale = scale;
    if (latency_passes_opt->count() > 0) shared.knobs.latency_passes = latency_passes;
    shared.knobs.full = full;

    try {
        return chosen->run();
    } catch (const std::exception& e) {
        std::cerr << "strata-lab: " << e.what() << "\n";
        return 1;
    }
}
