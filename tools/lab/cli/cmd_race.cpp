// strata-lab race, latency, fragmentation and run: the workloads through the replay contenders.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

#include "commands.hpp"
#include "embedded.hpp"
#include "op_contenders.hpp"
#include "progress.hpp"
#include "race.hpp"
#include "race_summary.hpp"
#include "text.hpp"
#include "trace_workload.hpp"

namespace strata::lab {

int emit(const std::vector<race_section>& sections, const calibration& cal, const std::string& title,
         const std::string& json_path) {
    if (json_path.empty()) return 0;
    std::ostringstream doc;
    write_race_json(doc, sections, cal, title);
    const int rc = write_document(json_path, doc.str());
    if (rc == 0 && json_path != "-") std::cerr << "strata-lab: wrote " << json_path << "\n";
    return rc;
}

void print_header(std::ostream& out, const calibration& cal) {
    char line[400]; // the counter's name is one of ours: bounded
    std::snprintf(
        line, sizeof line,
        "strata-lab: latency in ns net of the timer (%s, %.2f GHz, overhead %.0f ns, step %.0f ns).\n"
        "  p99.99f, max f: filtered (per-op minimum over the latency passes); <step: below one step.\n"
        "  footprint: peak held from the OS/source; waste: internal; frag: worst 1 - largest/free.\n",
        cal.counter.c_str(), cal.ghz(), cal.overhead_ns(), cal.resolution_ns());
    out << line;
}

bool only_matches(const std::vector<std::string>& only) {
    std::vector<std::string> unmatched;
    for (const std::string& p : only) {
        const auto& all = op_registry();
        if (std::none_of(all.begin(), all.end(),
                         [&](const op_contender& c) { return glob_match(p, c.name); }))
            unmatched.push_back(p);
    }
    if (unmatched.empty()) return true;
    std::cerr << "strata-lab: no allocator matches";
    for (const auto& u : unmatched)
        std::cerr << " '" << u << "'";
    std::cerr << "; known:";
    for (const op_contender& c : op_registry())
        std::cerr << " " << c.name;
    std::cerr << "\n";
    return false;
}

void apply_race_knobs(race_command_options& r, const race_knobs& k, bool quick) {
    r.scale = k.scale.value_or(quick ? 0.05 : k.full ? 1.0 : default_race_scale);
    r.seed = k.seed.value_or(42);
    r.repeats = k.repeats.value_or(quick ? 1 : 3);
    r.latency_passes = k.latency_passes.value_or(quick ? 1 : 3);
}

namespace {

// Returns: `given` without repeats (the first of each kept, in order: racing a workload twice only
// doubles the wait), or nullopt after saying which name is unknown and what exists. Checked before
// anything runs, so a bad name never costs the others' race.
std::optional<std::vector<std::string>> checked_workloads(const std::vector<std::string>& given) {
    std::vector<std::string> names;
    for (const std::string& n : given) {
        if (std::find(names.begin(), names.end(), n) != names.end()) continue;
        const bool known = n == embedded_trace_name || gen::known(n);
        if (!known) {
            std::cerr << "strata-lab: unknown workload '" << n << "' (known:";
            for (auto k : gen::names())
                std::cerr << ' ' << k;
            std::cerr << ' ' << embedded_trace_name << "; by name only:";
            for (auto k : gen::extra_names())
                std::cerr << ' ' << k;
            std::cerr << ")\n";
            return std::nullopt;
        }
        if (n == embedded_trace_name && embedded_trace().empty()) {
            std::cerr << "strata-lab: this build has no embedded trace (no trace support)\n";
            return std::nullopt;
        }
        names.push_back(n);
    }
    return names;
}

} // namespace

// o.scale, o.repeats and o.latency_passes are used as given: the caller applied --quick's
// defaults to the ones the user left out (apply_race_knobs).
int race_command(const race_command_options& o) {
    if (!only_matches(o.only)) return 2;
    const auto given = checked_workloads(o.workloads);
    if (!given) return 2;
    std::vector<std::string> names = *given;
    if (names.empty() && o.view == race_view::fragmentation) names.emplace_back("bimodal");
    if (names.empty()) {
        for (auto n : gen::names())
            names.emplace_back(n);
        if (!embedded_trace().empty()) names.emplace_back(embedded_trace_name);
    }
    const double scale = o.scale;
    const race_options ro{.only = o.only,
                          .replay = {.repeats = o.repeats, .latency_passes = o.latency_passes},
                          .progress = o.json_path != "-" && isatty(2)};
    const calibration cal = calibrate();
    const bool table = o.json_path != "-";
    if (table) print_header(std::cout, cal);
    std::vector<race_section> sections;
    for (const std::string& n : names) {
        op_workload w;
        if (n == embedded_trace_name) {
            const auto bytes = embedded_trace();
            // The recording's own allocation count scales like the synthetic work does.
            const auto max_ops = static_cast<std::uint64_t>(2'000'000.0 * scale);
            w = load_trace(bytes.data(), bytes.size(), embedded_trace_name, max_ops);
            w.description = "recorded: OpenTTD 13 dedicated server, 12 s of a new game (3 threads, replayed "
                            "serially; tools/lab/data)";
        } else {
            w = gen::make(n, scale, o.seed);
        }
        sections.push_back(race_workload(w, ro, cal));
        if (table) {
            switch (o.view) {
            case race_view::summary: print_section(std::cout, sections.back()); break;
            case race_view::latency: print_latency(std::cout, sections.back(), cal); break;
            case race_view::fragmentation: print_fragmentation(std::cout, sections.back()); break;
            }
        }
    }
    if (table && o.view == race_view::summary)
        print_race_summary(std::cout, summarize_race(sections), cal.resolution_ns());
    char title[160];
    std::snprintf(title, sizeof title, "strata-lab race (scale %g, seed %llu, repeats %d, latency passes %d)",
                  scale, static_cast<unsigned long long>(o.seed), o.repeats, o.latency_passes);
    return emit(sections, cal, title, o.json_path);
}

int list_op_contenders() {
    for (const op_contender& c : op_registry()) {
        std::cout << "  " << c.name << std::string(c.name.size() < 12 ? 12 - c.name.size() : 1, ' ')
                  << c.description;
        if (!c.needs.empty()) std::cout << " [needs: " << c.needs << "]";
        std::cout << "\n";
    }
    std::cout << "workloads: ";
    for (auto n : gen::names())
        std::cout << n << ' ';
    if (!embedded_trace().empty()) std::cout << embedded_trace_name;
    std::cout << "\nby name only (--workload): ";
    for (auto n : gen::extra_names())
        std::cout << n << ' ';
    return 0;
}

namespace {

/// The race views: one workload set, four ways to print it. `run` is `race --workload frame_scratch`.
std::function<int()> add_race_view(CLI::App& app, const shared_options& shared, const char* name,
                                   const char* help, race_view view, const char* workload = nullptr) {
    app.add_subcommand(name, help);
    return [&shared, view, workload] {
        if (shared.list) return list_op_contenders();
        race_command_options race;
        race.view = view;
        race.workloads = shared.workloads;
        if (workload != nullptr && race.workloads.empty()) race.workloads = {workload};
        apply_race_knobs(race, shared.knobs, shared.quick);
        race.only = shared.only;
        race.json_path = shared.json_path;
        return race_command(race);
    };
}

[[maybe_unused]] const bool registered =
    register_command(
        {10, "race", std::nullopt,
         [](CLI::App& app, const shared_options& s, const std::string&) {
             return add_race_view(
                 app, s, "race",
                 "the embedded workload set through every allocator (the default; --full: full size)",
                 race_view::summary);
         }}) &&
    register_command({11, "latency", std::nullopt,
                      [](CLI::App& app, const shared_options& s, const std::string&) {
                          return add_race_view(app, s, "latency",
                                               "the race, printed as latency percentiles p50..p99.999",
                                               race_view::latency);
                      }}) &&
    register_command({12, "fragmentation", std::nullopt,
                      [](CLI::App& app, const shared_options& s, const std::string&) {
                          return add_race_view(app, s, "fragmentation",
                                               "largest free block over a workload (default: bimodal)",
                                               race_view::fragmentation);
                      }}) &&
    register_command(
        {13, "run", std::nullopt, [](CLI::App& app, const shared_options& s, const std::string&) {
             return add_race_view(app, s, "run",
                                  "alias of `race --workload frame_scratch`: frames of blocks that "
                                  "all die at frame end",
                                  race_view::summary, "frame_scratch");
         }});

} // namespace

} // namespace strata::lab
