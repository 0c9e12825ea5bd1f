// strata-lab replay: a recorded trace (strata-lab record) through every contender that applies.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "progress.hpp"
#include "race.hpp"
#include "race_summary.hpp"
#include "text.hpp"
#include "trace_workload.hpp"

namespace strata::lab {

int replay_command(const replay_command_options& o) {
    if (!only_matches(o.only)) return 2;
    if (!trace_support()) {
        std::cerr << "strata-lab: built without trace support (install libzstd-dev and rebuild)\n";
        return 1;
    }
    // One streaming pass first: the trace's shape tells whether it fits in memory, and heaps size
    // their regions from its peak.
    trace_conversion conv;
    const progress_line progress(o.json_path != "-");
    progress("scanning " + o.trace + "...");
    const op_workload shape = scan_trace(o.trace, o.max_ops, &conv);
    const bool stream = o.stream || shape.memory_ops() > o.hold_ops;
    const op_workload w = stream ? shape : load_trace(o.trace, o.max_ops, &conv);
    progress.clear();
    struct trace_stream final : op_stream {
        trace_batches batches;
        std::size_t batch_ops;
        trace_stream(const std::string& path, std::uint64_t max_ops, std::size_t n)
            : batches(path, max_ops), batch_ops(n) {}
        bool next(std::vector<op>& out) override { return batches.next(out, batch_ops); }
    };
    const op_stream_factory open = [&] {
        return std::make_unique<trace_stream>(o.trace, o.max_ops, o.batch_ops);
    };
    const race_options ro{.only = o.only,
                          .replay = {.repeats = o.repeats, .latency_passes = o.latency_passes},
                          .progress = progress.on()};
    const calibration cal = calibrate();
    const bool table = o.json_path != "-";
    if (table) {
        print_header(std::cout, cal);
        std::cout << "trace " << o.trace << ": " << format_count(conv.records) << " records";
        if (conv.failed_calls)
            std::cout << ", " << format_count(conv.failed_calls) << " failed calls skipped";
        if (conv.unknown_blocks)
            std::cout << ", " << format_count(conv.unknown_blocks)
                      << " frees of blocks from before recording skipped";
        if (conv.truncated_ops)
            std::cout << ", " << format_count(conv.truncated_ops) << " ops past --max-ops skipped";
        if (conv.clamped_alignments)
            std::cout << ", " << format_count(conv.clamped_alignments)
                      << " requests aligned past 1 GiB replayed at 1 GiB";
        if (conv.gaps) std::cout << " (the file lost " << conv.gaps << " records)";
        if (conv.truncated_file) std::cout << " (the file is truncated)";
        std::cout << "\n";
    }
    std::vector<race_section> sections{race_workload(w, ro, cal, stream ? &open : nullptr)};
    if (table) {
        print_section(std::cout, sections.back());
        print_race_summary(std::cout, summarize_race(sections), cal.resolution_ns());
    }
    return emit(sections, cal, "strata-lab replay " + o.trace, o.json_path);
}

namespace {

[[maybe_unused]] const bool registered = register_command(
    {20, "replay",
     std::vector<std::string_view>{"--only", "--repeats", "--latency-passes", "--quick", "--json", "--list"},
     [](CLI::App& app, const shared_options& shared, const std::string& uses_note) -> std::function<int()> {
         auto o = std::make_shared<replay_command_options>();
         auto* cmd = app.add_subcommand(
             "replay", "replay a recorded trace (strata-lab record) through every allocator" + uses_note);
         cmd->add_option("trace", o->trace, "the trace file")->required();
         const CLI::Validator whole_count = whole_number("a count", "N");
         cmd->add_option("--max-ops", o->max_ops, "replay at most N memory operations (default 50,000,000)")
             ->type_name("N")
             ->check(whole_count)
             ->check(CLI::Validator(
                 [](std::string& text) {
                     return text.find_first_not_of('0') == std::string::npos
                                ? std::string("must be at least 1 (0 would replay nothing)")
                                : std::string();
                 },
                 "N >= 1"));
         cmd->add_option("--hold-ops", o->hold_ops,
                         "traces with more memory operations than N are streamed in batches instead of "
                         "loaded (default 20,000,000)")
             ->type_name("N")
             ->check(whole_count);
         cmd->add_flag("--stream", o->stream, "always stream the trace in batches (bounded memory)");
         return [o, &shared] {
             if (shared.list) return list_op_contenders();
             o->only = shared.only;
             o->repeats = shared.knobs.repeats.value_or(shared.quick ? 1 : 3);
             o->latency_passes = shared.knobs.latency_passes.value_or(shared.quick ? 1 : 3);
             o->json_path = shared.json_path;
             return replay_command(*o);
         };
     }});

} // namespace

} // namespace strata::lab
