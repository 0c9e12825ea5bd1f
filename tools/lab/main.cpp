// strata-lab: measures strata's allocators against malloc and std::pmr on game-like workloads.
// Usage: strata-lab [run] [--quick] [--frames N] [--allocs-per-frame N] [--seed S] [--only NAME]...
//                   [--list] [--json FILE]
// The default (no subcommand) is `run`. See docs/lab.md.
#include <cstdint>
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace {

// CLI11 fills plain values; the run options keep "not given" apart from a given default.
template <class T>
void keep_if_given(const CLI::Option* opt, const T& value, std::optional<T>& out) {
    if (opt->count() > 0) out = value;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"strata-lab: game-loop allocator measurements (malloc, std::pmr, strata). "
                 "Without a subcommand it runs `run`."};
    app.require_subcommand(0, 1);
    app.fallthrough(); // options given after a subcommand name still reach the shared options below

    strata::lab::run_options run;
    std::uint64_t seed = 0;
    std::size_t frames = 0, allocs = 0, warmup = 0;
    int repeats = 0;

    // Workload and selection options: shared by `run` and the default invocation.
    auto* seed_opt =
        app.add_option("--seed", seed, "workload seed (default 42; printed in the report)")->type_name("S");
    auto* frames_opt =
        app.add_option("--frames", frames, "frames in the loop, warm-up included (default 600)")
            ->type_name("N")
            ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
    auto* allocs_opt =
        app.add_option("--allocs-per-frame", allocs, "mean allocations per frame (default 2000)")
            ->type_name("N")
            ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
    auto* warmup_opt =
        app.add_option("--warmup", warmup, "leading frames excluded from all statistics (default 2)")
            ->type_name("N");
    auto* repeats_opt = app.add_option("--repeats", repeats,
                                       "throughput passes per contestant, median reported "
                                       "(default 5; 1 with --quick)")
                            ->type_name("N")
                            ->check(CLI::Range(1, 100));
    app.add_option("--only", run.only, "run only this contestant (repeatable; '*' and '?' wildcards)")
        ->type_name("NAME")
        ->allow_extra_args(false);
    app.add_flag("--list", run.list, "list the contestants and exit");
    app.add_option("--json", run.json_path,
                   "also write the results as JSON to FILE ('-': JSON on stdout, no table)")
        ->type_name("FILE");
    app.add_flag("--quick", run.quick, "small workload (40 frames x 250 allocs) for tests and CI");

    app.add_subcommand("run", "run the embedded default workload (the default)");
    strata::lab::showdown_options showdown;
    bool showdown_no_padded = false;
    auto* showdown_cmd = app.add_subcommand(
        "showdown", "seed 001's particle sets: pools, packed_array, slot_map, handle_table, plf::colony; "
                    "handle lookup; AoS vs SoA (uses --seed, --repeats, --quick)");
    showdown_cmd->add_option("--set", showdown.set, "run only set N (1-4; default all)")
        ->type_name("N")
        ->check(CLI::Range(1, 4));
    showdown_cmd->add_flag("--no-padded", showdown_no_padded, "skip the 32-byte particle variant");

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

    if (showdown_cmd->parsed()) {
        showdown.quick = run.quick;
        showdown.padded = !showdown_no_padded;
        if (run.seed) showdown.seed = *run.seed;
        showdown.repeats = run.repeats ? *run.repeats : (run.quick ? 1 : 3);
        return strata::lab::showdown_command(showdown);
    }

    try {
        return strata::lab::run_command(run);
    } catch (const std::exception& e) {
        std::cerr << "strata-lab: " << e.what() << "\n";
        return 1;
    }
}
