// strata-lab: races allocators on the same workloads and reports speed, latency tails, footprint
// and fragmentation. See docs/lab.md.
//
//   strata-lab [race]            the embedded workload set through every allocator (the default)
//   strata-lab latency           the same, printed as latency percentiles (raw and filtered)
//   strata-lab fragmentation     largest free block over the bimodal workload (seed 000's race)
//   strata-lab replay TRACE      a recorded trace through every allocator that applies
//   strata-lab record -o FILE -- PROGRAM [ARGS...]     record a program's allocations
//   strata-lab showdown          seed 001's particle sets (pools, packed array, slot map, colony)
//   strata-lab versus-malloc     seed 004's malloc-vs-allocator tables
//   strata-lab layout            AoS vs SoA: cache lines loaded vs bytes used
//   strata-lab report            one self-contained HTML report with plots
//   strata-lab run               the v1 game-loop benchmark (frame contestants)
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
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
    auto* repeats_opt = app.add_option("--repeats", repeats,
                                       "timed passes per allocator, median reported "
                                       "(default 3, run: 5; 1 with --quick)")
                            ->type_name("N")
                            ->check(CLI::Range(1, 100));
    app.add_option("--only", run.only,
                   "only these allocators (repeatable or comma-separated; '*' and '?' wildcards)")
        ->delimiter(',')
        ->type_name("NAME")
        ->allow_extra_args(false);
    app.add_flag("--list", run.list, "list the allocators and exit");
    app.add_option("--json", run.json_path,
                   "also write the results as JSON to FILE ('-': JSON on stdout, no table)")
        ->type_name("FILE");
    app.add_flag("--quick", run.quick, "small workloads for tests and CI (a few seconds)");

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
    app.add_option("--workload", race.workloads,
                   "race only this workload (repeatable): frame_scratch, particles, bimodal, w1, w2, w3, "
                   "levels, openttd")
        ->type_name("NAME")
        ->allow_extra_args(false);
    auto* scale_opt =
        app.add_option("--scale", scale, "race, report: work multiplier (default 1; --quick: 0.05)")
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
                       "per-op timed passes; the filtered tail is the per-op minimum (default 3; --quick: 1)")
            ->type_name("N")
            ->check(CLI::Range(0, 20));

    // replay
    strata::lab::replay_command_options replay;
    auto* replay_cmd =
        app.add_subcommand("replay", "replay a recorded trace (strata-lab record) through every allocator");
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
        app.add_subcommand("versus-malloc", "seed 004's malloc-vs-allocator tables beside its figures");
    strata::lab::layout_options layout;
    auto* layout_cmd = app.add_subcommand("layout", "AoS vs SoA: cache lines loaded vs bytes used, measured");
    layout_cmd->add_option("--entities", layout.entities, "entities (default 10,000,000; --quick: 1,000,000)")
        ->type_name("N")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 28));

    // showdown
    strata::lab::showdown_options showdown;
    bool showdown_no_padded = false;
    auto* showdown_cmd = app.add_subcommand(
        "showdown", "seed 001's particle sets: pools, packed_array, slot_map, handle_table, plf::colony; "
                    "handle lookup; AoS vs SoA (uses --seed, --repeats, --quick)");
    showdown_cmd->add_option("--set", showdown.set, "run only set N (1-4; default all)")
        ->type_name("N")
        ->check(CLI::Range(1, 4));
    showdown_cmd->add_flag("--no-padded", showdown_no_padded, "skip the 32-byte particle variant");

    // report
    strata::lab::report_command_options report;
    auto* report_cmd = app.add_subcommand(
        "report", "race the workloads (or read --from JSON) and write one self-contained HTML report "
                  "(uses --quick, --only, --scale, --seed, --repeats, --latency-passes); see "
                  "docs/lab-report.md");
    report_cmd
        ->add_option("--from", report.from_json, "render this race/replay --json document instead of racing")
        ->type_name("FILE");
    report_cmd->add_option("--out,-o", report.out, "the HTML file to write (default strata-report.html)")
        ->type_name("FILE");
    report_cmd->add_option("--workload", report.workloads, "race only this workload (repeatable)")
        ->type_name("NAME");

    // run: the v1 game loop
    auto* run_cmd =
        app.add_subcommand("run", "the v1 game-loop benchmark: frames of allocations released at frame end");
    auto* frames_opt =
        run_cmd->add_option("--frames", frames, "frames in the loop, warm-up included (default 600)")
            ->type_name("N")
            ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
    auto* allocs_opt =
        run_cmd->add_option("--allocs-per-frame", allocs, "mean allocations per frame (default 2000)")
            ->type_name("N")
            ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
    auto* warmup_opt =
        run_cmd->add_option("--warmup", warmup, "leading frames excluded from all statistics (default 2)")
            ->type_name("N")
            ->check(whole_count);

#if STRATA_LAB_HAS_SERVE
    // serve: the live lab (docs/live-lab.md)
    strata::lab::serve::serve_options serve;
    auto* serve_cmd =
        app.add_subcommand("serve", "the live lab: a page and JSON API driving the real allocators");
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

    try {
#if STRATA_LAB_HAS_SERVE
        if (serve_cmd->parsed()) return strata::lab::serve::serve_command(serve);
#endif
        if (run_cmd->parsed()) return strata::lab::run_command(run);
        if (record_cmd->parsed()) {
            std::cerr
                << "strata-lab: record must come first: strata-lab record -o FILE -- PROGRAM [ARGS...]\n";
            return 2;
        }
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
            v.repeats = run.repeats ? *run.repeats : 3;
            v.json_path = run.json_path;
            return strata::lab::versus_malloc_command(v);
        }
        if (layout_cmd->parsed()) {
            if (run.quick && layout_cmd->count("--entities") == 0) layout.entities = 1'000'000;
            if (run.quick) layout.runs = 2;
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
