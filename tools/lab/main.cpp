// strata-lab: races allocators on the same workloads and reports speed, latency tails, footprint
// and fragmentation. See docs/lab.md.
//
//   strata-lab [race]            the embedded workload set through every allocator (the default;
//                                about a minute; --full: the workloads at full size)
//   strata-lab latency           the same, printed as latency percentiles (raw and filtered)
//   strata-lab fragmentation     largest free block over the bimodal workload
//   strata-lab replay TRACE      a recorded trace through every allocator that applies
//   strata-lab record -o FILE -- PROGRAM [ARGS...]     record a program's allocations
//   strata-lab showdown          particle sets (pools, packed array, slot map, colony)
//   strata-lab versus-malloc     the reference malloc-vs-allocator tables
//   strata-lab layout            AoS vs SoA: cache lines loaded vs bytes used
//   strata-lab report            one self-contained HTML report with plots
//   strata-lab run               the game-loop benchmark (frame contestants)
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
#include "op_commands.hpp"
#include "report_command.hpp"
#if STRATA_LAB_HAS_SERVE
#include "server.hpp"
#endif

namespace {

// CLI11 fills plain values; the run options keep "not given" apart from a given default.
template <class T>
void keep_if_given(const CLI::Option* opt, const T& value, std::optional<T>& out) {
    if (opt->count() > 0) out = value;
}

/// The shared options (declared on the app, so they may come before or after the subcommand name)
/// that each command uses; a command not listed (race, latency, fragmentation, none) uses them all.
/// Any other shared option given to a command is refused with status 2: ignored, it would run the
/// command with a value other than the one given.
struct shared_use {
    std::string_view command;
    std::vector<std::string_view> options;
};
const std::vector<shared_use>& shared_uses() {
    static const std::vector<shared_use> uses = {
        {"replay", {"--only", "--repeats", "--latency-passes", "--quick", "--json", "--list"}},
        {"versus-malloc", {"--repeats", "--quick", "--json"}},
        {"layout", {"--repeats", "--quick", "--json"}},
        {"showdown", {"--seed", "--repeats", "--quick", "--json"}},
        {"report",
         {"--workload", "--only", "--scale", "--seed", "--repeats", "--latency-passes", "--quick", "--full"}},
        {"run", {"--seed", "--repeats", "--only", "--quick", "--json", "--list"}},
        {"serve", {}},
    };
    return uses;
}

/// Returns: the shared options `command` uses, or nullptr when it uses them all.
const std::vector<std::string_view>* shared_options_of(std::string_view command) {
    for (const shared_use& u : shared_uses()) {
        if (u.command == command) return &u.options;
    }
    return nullptr;
}

/// Returns: " (uses --a, --b)" for `command`'s help line; " (uses no shared option)" for none.
std::string uses_note(std::string_view command) {
    const std::vector<std::string_view>* used = shared_options_of(command);
    if (used == nullptr) return {};
    if (used->empty()) return " (uses no shared option)";
    std::string s = " (uses ";
    for (std::size_t i = 0; i < used->size(); ++i)
        s += (i ? ", " : "") + std::string((*used)[i]);
    return s + ")";
}

/// `record` takes the program's own arguments verbatim after `--`, so it is parsed by hand:
/// strata-lab record -o FILE [--] PROGRAM [ARGS...]
int record_main(int argc, char** argv) {
    strata::lab::record_command_options o;
    int i = 2;
    for (; i < argc; ++i) {
        const std::string a = argv[i];
        if ((a == "-o" || a == "--out") && i + 1 < argc) {
            o.out = argv[++i];
        } else if (a.rfind("--out=", 0) == 0) {
            o.out = a.substr(6);
        } else if (a == "--") {
            ++i;
            break;
        } else if (a == "-h" || a == "--help") {
            std::cout
                << "strata-lab record -o FILE -- PROGRAM [ARGS...]\n"
                   "  Runs PROGRAM under libstrata_trace.so (LD_PRELOAD) and writes its allocation trace\n"
                   "  to FILE (children and exec'd programs: FILE.<pid>); prints the trace's summary.\n"
                   "  Exit code: PROGRAM's. See docs/trace-format.md.\n";
            return 0;
        } else {
            break;
        }
    }
    for (; i < argc; ++i)
        o.argv.emplace_back(argv[i]);
    return strata::lab::record_command(o);
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "record") == 0) return record_main(argc, argv);

    CLI::App app{"strata-lab: races allocators (strata's, malloc, std::pmr) on the same workloads. "
                 "Without a subcommand it runs `race` on the embedded workload set."};
    app.require_subcommand(0, 1);
    app.fallthrough(); // options given after a subcommand name still reach the shared options below

    strata::lab::run_options run;
    std::uint64_t seed = 0;
    std::size_t frames = 0, allocs = 0, warmup = 0;
    int repeats = 0;

    // Options shared by every command.
    // Checked before CLI11 converts it: strtoull would take -1 or 2^70 and wrap them silently.
    const auto whole_number = [](const char* what, const char* name) {
        return CLI::Validator(
            [what](std::string& text) -> std::string {
                std::uint64_t v = 0;
                const char* end = text.data() + text.size();
                const auto [at, ec] = std::from_chars(text.data(), end, v);
                if (text.empty() || ec != std::errc{} || at != end)
                    return std::string(what) + " is a whole number from 0 to 18446744073709551615, got '" +
                           text + "'";
                return {};
            },
            name);
    };
    const CLI::Validator whole_seed = whole_number("a seed", "S");
    const CLI::Validator whole_count = whole_number("a count", "N");
    auto* seed_opt =
        app.add_option("--seed", seed, "workload seed (default 42)")->type_name("S")->check(whole_seed);
    auto* repeats_opt =
        app.add_option("--repeats", repeats,
                       "timed passes: race, replay, run and versus-malloc report the median, showdown and "
                       "layout keep the best (default 3; run, layout: 5; --quick: 1, layout 2)")
            ->type_name("N")
            ->check(CLI::Range(1, 100));
    auto* only_opt = app.add_option("--only", run.only,
                                    "only these allocators (repeatable or comma-separated; '*' and '?' "
                                    "wildcards)")
                         ->delimiter(',')
                         ->type_name("NAME")
                         ->allow_extra_args(false);
    auto* list_opt = app.add_flag("--list", run.list, "list the allocators and exit");
    auto* json_opt = app.add_option("--json", run.json_path,
                                    "also write the results as JSON to FILE ('-': JSON on stdout, no table)")
                         ->type_name("FILE");
    auto* quick_opt = app.add_flag("--quick", run.quick, "smaller defaults for tests and CI");
    bool full = false;
    auto* full_opt = app.add_flag("--full", full,
                                  "race, latency, fragmentation, report: the workloads at their full size "
                                  "(scale 1; the default is scale 0.5, about half a minute for the race)")
                         ->excludes(quick_opt);

    // race / latency / fragmentation (and the default).
    strata::lab::race_command_options race;
    int latency_passes = 3;
    double scale = 1.0;
    [[maybe_unused]] auto* race_cmd =
        app.add_subcommand("race", "the embedded workload set through every allocator (the default)");
    auto* latency_cmd =
        app.add_subcommand("latency", "the race, printed as latency percentiles p50..p99.999");
    auto* frag_cmd =
        app.add_subcommand("fragmentation", "largest free block over a workload (default: bimodal)");
    auto* workload_opt = app.add_option("--workload", race.workloads,
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

    // replay
    strata::lab::replay_command_options replay;
    auto* replay_cmd =
        app.add_subcommand("replay", "replay a recorded trace (strata-lab record) through every allocator" +
                                         uses_note("replay"));
    replay_cmd->add_option("trace", replay.trace, "the trace file")->required();
    replay_cmd
        ->add_option("--max-ops", replay.max_ops, "replay at most N memory operations (default 50,000,000)")
        ->type_name("N")
        ->check(whole_count)
        // 0 replayed nothing and printed a result for it (0 ops, 0.0 ns/op, frag 0%).
        ->check(CLI::Validator(
            [](std::string& text) {
                return text.find_first_not_of('0') == std::string::npos
                           ? std::string("must be at least 1 (0 would replay nothing)")
                           : std::string();
            },
            "N >= 1"));
    replay_cmd
        ->add_option("--hold-ops", replay.hold_ops,
                     "traces with more memory operations than N are streamed in batches instead of "
                     "loaded (default 20,000,000)")
        ->type_name("N")
        ->check(whole_count);
    replay_cmd->add_flag("--stream", replay.stream, "always stream the trace in batches (bounded memory)");
    // Listed for --help; `record` is taken as argv[1] above (its program's arguments are not ours to
    // parse), so reaching the parser with it means it came after other options.
    auto* record_cmd =
        app.add_subcommand("record", "record a program: strata-lab record -o FILE -- PROGRAM [ARGS...]");
    record_cmd->allow_extras();

    // versus-malloc, layout
    auto* versus_cmd =
        app.add_subcommand("versus-malloc", "seed 004's malloc-vs-allocator tables beside its figures" +
                                                uses_note("versus-malloc"));
    strata::lab::layout_options layout;
    auto* layout_cmd = app.add_subcommand(
        "layout", "AoS vs SoA: cache lines loaded vs bytes used, measured; best of --repeats runs" +
                      uses_note("layout"));
    layout_cmd->add_option("--entities", layout.entities, "entities (default 10,000,000; --quick: 1,000,000)")
        ->type_name("N")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 28));

    // showdown
    strata::lab::showdown_options showdown;
    bool showdown_no_padded = false;
    auto* showdown_cmd = app.add_subcommand(
        "showdown", "seed 001's particle sets: pools, packed_array, slot_map, handle_table, plf::colony; "
                    "handle lookup; AoS vs SoA; best of --repeats runs" +
                        uses_note("showdown"));
    showdown_cmd->add_option("--set", showdown.set, "run only set N (1-4; default all)")
        ->type_name("N")
        ->check(CLI::Range(1, 4));
    showdown_cmd->add_flag("--no-padded", showdown_no_padded, "skip the 32-byte particle variant");

    // report
    strata::lab::report_command_options report;
    auto* report_cmd = app.add_subcommand(
        "report", "race the workloads (or read --from JSON) and write one self-contained HTML report" +
                      uses_note("report") + ", all for its race, none with --from; see docs/lab-report.md");
    report_cmd
        ->add_option("--from", report.from_json, "render this race/replay --json document instead of racing")
        ->type_name("FILE");
    report_cmd->add_option("--out,-o", report.out, "the HTML file to write (default strata-report.html)")
        ->type_name("FILE");
    auto* report_workload_opt =
        report_cmd->add_option("--workload", report.workloads, "race only this workload (repeatable)")
            ->type_name("NAME");

    // run: the game loop
    auto* run_cmd = app.add_subcommand(
        "run", "the v1 game-loop benchmark: frames of allocations released at frame end" + uses_note("run"));
    auto* frames_opt =
        run_cmd
            ->add_option("--frames", frames,
                         "frames in the loop, warm-up included (default 600; frames x allocs-per-frame "
                         "at most 2^26)")
            ->type_name("N")
            ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
    auto* allocs_opt =
        run_cmd->add_option("--allocs-per-frame", allocs, "mean allocations per frame (default 2000)")
            ->type_name("N")
            ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
    auto* warmup_opt =
        run_cmd
            ->add_option("--warmup", warmup,
                         "leading frames run but left out of every measured figure (default 2)")
            ->type_name("N")
            ->check(whole_count);

#if STRATA_LAB_HAS_SERVE
    // serve: the live lab (docs/live-lab.md)
    strata::lab::serve::serve_options serve;
    auto* serve_cmd = app.add_subcommand(
        "serve", "the live lab: a page and JSON API driving the real allocators" + uses_note("serve"));
    serve_cmd->add_option("--port", serve.port, "port (default 8080; 0: any free port)")
        ->check(CLI::Range(0, 65535));
    serve_cmd->add_option("--bind", serve.bind, "address to listen on (default 127.0.0.1)")
        ->type_name("ADDR");
#endif

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e); // prints help or the error
        return rc == 0 ? 0 : 2;
    }
    if (record_cmd->parsed()) {
        std::cerr << "strata-lab: record must come first: strata-lab record -o FILE -- PROGRAM [ARGS...]\n";
        return 2;
    }
    // A shared option the command does not use is refused, naming both (see shared_uses).
    const std::vector<std::pair<std::string_view, const CLI::Option*>> shared = {
        {"--seed", seed_opt},         {"--repeats", repeats_opt}, {"--only", only_opt},
        {"--list", list_opt},         {"--json", json_opt},       {"--quick", quick_opt},
        {"--workload", workload_opt}, {"--scale", scale_opt},     {"--latency-passes", latency_passes_opt},
        {"--full", full_opt},
    };
    const std::vector<CLI::App*> chosen = app.get_subcommands();
    const std::string command = chosen.empty() ? "race" : chosen.front()->get_name();
    if (const auto* used = shared_options_of(command)) {
        for (const auto& [name, opt] : shared) {
            if (opt->count() == 0 || std::find(used->begin(), used->end(), name) != used->end()) continue;
            std::cerr << "strata-lab: " << command << " does not use " << name << uses_note(command) << "\n";
            return 2;
        }
    }
    // report --from renders a saved document: the race's options would be ignored.
    if (report_cmd->parsed() && !report.from_json.empty()) {
        for (const auto& [name, opt] : shared) {
            if (opt->count() == 0 && !(name == "--workload" && report_workload_opt->count() > 0)) continue;
            std::cerr << "strata-lab: report --from does not use " << name
                      << " (it renders the saved document; the race's options apply without --from)\n";
            return 2;
        }
    }
    keep_if_given(seed_opt, seed, run.seed);
    keep_if_given(frames_opt, frames, run.frames);
    keep_if_given(allocs_opt, allocs, run.allocs_per_frame);
    keep_if_given(warmup_opt, warmup, run.warmup_frames);
    keep_if_given(repeats_opt, repeats, run.repeats);
    // The race's knobs, with "not given" kept: --quick lowers only those (race, latency,
    // fragmentation, report; replay and run treat it the same way).
    strata::lab::race_knobs knobs;
    knobs.seed = run.seed;
    knobs.repeats = run.repeats;
    keep_if_given(scale_opt, scale, knobs.scale);
    keep_if_given(latency_passes_opt, latency_passes, knobs.latency_passes);
    knobs.full = full;

    try {
#if STRATA_LAB_HAS_SERVE
        if (serve_cmd->parsed()) return strata::lab::serve::serve_command(serve);
#endif
        if (run_cmd->parsed()) return strata::lab::run_command(run);
        if (showdown_cmd->parsed()) {
            showdown.quick = run.quick;
            showdown.padded = !showdown_no_padded;
            if (run.seed) showdown.seed = *run.seed;
            showdown.repeats = run.repeats ? *run.repeats : (run.quick ? 1 : 3);
            showdown.json_path = run.json_path;
            if (showdown.json_path == "-") { // its tables go to stdout as it measures
                std::cerr << "strata-lab: showdown --json needs a file name, not -\n";
                return 2;
            }
            return strata::lab::showdown_command(showdown);
        }
        if (report_cmd->parsed()) {
            report.quick = run.quick;
            report.only = run.only;
            report.race = knobs;
            if (!race.workloads.empty()) report.workloads = race.workloads; // either --workload
            return strata::lab::report_command(report);
        }
        if (versus_cmd->parsed()) {
            strata::lab::versus_malloc_options v;
            v.repeats = run.repeats ? *run.repeats : (run.quick ? 1 : 3); // as report's versus-malloc
            v.json_path = run.json_path;
            return strata::lab::versus_malloc_command(v);
        }
        if (layout_cmd->parsed()) {
            if (run.quick && layout_cmd->count("--entities") == 0) layout.entities = 1'000'000;
            layout.runs = run.repeats ? *run.repeats : (run.quick ? 2 : 5); // best of
            layout.json_path = run.json_path;
            return strata::lab::layout_command(layout);
        }
        if (run.list) return strata::lab::list_op_contenders();
        if (replay_cmd->parsed()) {
            replay.only = run.only;
            replay.repeats = run.repeats ? *run.repeats : (run.quick ? 1 : 3);
            replay.latency_passes = knobs.latency_passes.value_or(run.quick ? 1 : 3);
            replay.json_path = run.json_path;
            return strata::lab::replay_command(replay);
        }
        // race, latency, fragmentation, or no subcommand at all.
        race.view = latency_cmd->parsed() ? strata::lab::race_view::latency
                    : frag_cmd->parsed()  ? strata::lab::race_view::fragmentation
                                          : strata::lab::race_view::summary;
        strata::lab::apply_race_knobs(race, knobs, run.quick);
        race.only = run.only;
        race.json_path = run.json_path;
        return strata::lab::race_command(race);
    } catch (const std::exception& e) {
        std::cerr << "strata-lab: " << e.what() << "\n";
        return 1;
    }
}
