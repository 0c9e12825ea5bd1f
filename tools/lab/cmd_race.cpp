// strata-lab race / replay / record.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <vector>

#include "embedded.hpp"
#include "op_commands.hpp"
#include "op_contenders.hpp"
#include "progress.hpp"
#include "race.hpp"
#include "race_summary.hpp"
#include "registry.hpp" // glob_match
#include "report.hpp"
#include "report_command.hpp" // apply_race_knobs
#include "trace_workload.hpp"

#if defined(STRATA_LAB_HAS_TRACE)
#include "trace_summary.hpp"
#endif

extern char** environ;

namespace strata::lab {

namespace {

int emit(const std::vector<race_section>& sections, const calibration& cal, const std::string& title,
         const std::string& json_path) {
    if (json_path.empty()) return 0;
    if (json_path == "-") {
        write_race_json(std::cout, sections, cal, title);
        return 0;
    }
    std::ofstream f(json_path);
    write_race_json(f, sections, cal, title);
    f.close(); // flushes: a write error (a full disk) shows only then
    if (!f) {
        std::cerr << "strata-lab: cannot write " << json_path << "\n";
        return 1;
    }
    std::cerr << "strata-lab: wrote " << json_path << "\n";
    return 0;
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

// Returns: false (after saying which, and what exists) when a --only pattern names no allocator.
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

} // namespace

void apply_race_knobs(race_command_options& r, const race_knobs& k, bool quick) {
    r.scale = k.scale.value_or(quick ? 0.05 : k.full ? 1.0 : default_race_scale);
    r.seed = k.seed.value_or(42);
    r.repeats = k.repeats.value_or(quick ? 1 : 3);
    r.latency_passes = k.latency_passes.value_or(quick ? 1 : 3);
}

namespace {

// Returns: `given` without repeats (the first of each kept, in order: racing a workload twice only
// doubles the wait), or nullopt after saying which name is unknown and what exists. Checked before
// anything runs, so a bad name at the end of the list does not throw away the others' results.
std::optional<std::vector<std::string>> checked_workloads(const std::vector<std::string>& given) {
    std::vector<std::string> names;
    for (const std::string& n : given) {
        if (std::find(names.begin(), names.end(), n) != names.end()) continue;
        const auto& synthetic = gen::names();
        const bool known =
            n == embedded_trace_name || std::find(synthetic.begin(), synthetic.end(), n) != synthetic.end();
        if (!known) {
            std::cerr << "strata-lab: unknown workload '" << n << "' (known:";
            for (auto k : synthetic)
                std::cerr << ' ' << k;
            std::cerr << ' ' << embedded_trace_name << ")\n";
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
    race_options ro;
    ro.only = o.only;
    ro.replay.repeats = o.repeats;
    ro.replay.latency_passes = o.latency_passes;
    ro.progress = o.json_path != "-" && isatty(2);
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

int replay_command(const replay_command_options& o) {
    if (!only_matches(o.only)) return 2;
    if (!trace_support()) {
        std::cerr << "strata-lab: built without trace support (install libzstd-dev and rebuild)\n";
        return 1;
    }
    // One streaming pass first: the trace's shape tells whether it fits in memory, and heaps size
    // their regions from its peak.
    trace_conversion conv;
    const bool progress = o.json_path != "-" && isatty(2);
    if (progress) std::fprintf(stderr, "\r\033[Kstrata-lab: scanning %s...", o.trace.c_str());
    const op_workload shape = scan_trace(o.trace, o.max_ops, &conv);
    const bool stream = o.stream || shape.memory_ops() > o.hold_ops;
    const op_workload w = stream ? shape : load_trace(o.trace, o.max_ops, &conv);
    if (progress) std::fprintf(stderr, "\r\033[K");
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
    race_options ro;
    ro.only = o.only;
    ro.replay.repeats = o.repeats;
    ro.replay.latency_passes = o.latency_passes;
    ro.progress = progress;
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

/// The mixed test of the reference tables: 10,000 x 16 B, 1,000 x 256 B and 50 x 2 MiB allocated, then all
/// freed newest first, then a frame boundary (a linear allocator's single clear()).
op_workload versus_mixed() {
    op_builder b("vm_mixed", "10k x 16 B + 1k x 256 B + 50 x 2 MiB allocations, then deallocations");
    std::vector<std::uint32_t> slots;
    for (int i = 0; i < 10'000; ++i)
        slots.push_back(b.allocate(16));
    for (int i = 0; i < 1'000; ++i)
        slots.push_back(b.allocate(256));
    for (int i = 0; i < 50; ++i)
        slots.push_back(b.allocate(2u << 20));
    for (auto it = slots.rbegin(); it != slots.rend(); ++it)
        b.free(*it);
    b.frame();
    return b.finish();
}

/// The pool test of the reference tables: 20,000 x 16 B allocated, then freed.
op_workload versus_pool() {
    op_builder b("vm_pool", "20k x 16 B allocations, then deallocations");
    std::vector<std::uint32_t> slots;
    for (int i = 0; i < 20'000; ++i)
        slots.push_back(b.allocate(16));
    for (auto it = slots.rbegin(); it != slots.rend(); ++it)
        b.free(*it);
    b.frame();
    return b.finish();
}

const op_contender* contender_named(const std::string& name) {
    for (const op_contender& c : op_registry())
        if (c.name == name) return &c;
    return nullptr;
}

} // namespace

int versus_malloc_command(const versus_malloc_options& o) {
    struct table {
        const char* title;
        const char* ours;      // our contender
        const char* seed_name; // the seed's name for it
        double seed_malloc, seed_allocator;
        bool pool_workload;
    };
    // The reference tables ("Performance Comparison"): release build, averages of 3 runs, seconds.
    static constexpr table tables[] = {
        {"Malloc vs Linear Allocator", "arena", "Linear", 0.639655, 0.000072, false},
        {"Malloc vs Stack Allocator", "stack", "Stack", 0.650435, 0.000289, false},
        {"Malloc vs FreeList Allocator", "first_fit", "FreeList", 0.673865, 0.000414, false},
        {"Malloc vs Pool Allocator", "pool", "Pool", 1.454934, 0.000193, true},
    };
    const op_workload mixed = versus_mixed(), pooled = versus_pool();
    replay_options ro;
    ro.warmup = 1;
    ro.repeats = o.repeats;
    ro.latency_passes = 0;
    ro.series_points = 1;
    const progress_line progress(o.json_path != "-");
    auto seconds = [&](const std::string& name, const op_workload& w) {
        progress("versus-malloc: " + name + " on " + w.name + "...");
        const op_contender* c = contender_named(name);
        if (c == nullptr || !c->applies(w)) return -1.0;
        const replay_result r = c->run(w, ro);
        if (r.failed != 0) return -1.0;
        return r.ns_per_op() * static_cast<double>(r.memory_ops) * 1e-9;
    };
    const double malloc_mixed = seconds("malloc", mixed), malloc_pool = seconds("malloc", pooled);
    const bool table_out = o.json_path != "-";
    std::string json =
        "{\"title\":\"strata-lab versus-malloc (seed 004's tables)\",\"workloads\":[],\"bars\":[";
    char line[1024];
    if (table_out)
        std::cout << "seed 004's tests (whole run, seconds; the seed: release build, mean of 3 runs; ours: "
                     "median of "
                  << o.repeats << ").\nSpeed-up = malloc time / allocator time.\n";
    for (std::size_t i = 0; i < std::size(tables); ++i) {
        const table& t = tables[i];
        const double m = t.pool_workload ? malloc_pool : malloc_mixed;
        const double a = seconds(t.ours, t.pool_workload ? pooled : mixed);
        progress.clear();
        const double ours_x = a > 0 ? m / a : 0, seed_x = t.seed_malloc / t.seed_allocator;
        if (table_out) {
            std::snprintf(line, sizeof line,
                          "\n### %s (%s)\n%-16s %12s %12s\n%-16s %12.6f %12.6f\n%-16s %12.6f %12.6f\n%-16s "
                          "%11.0fx %11.0fx\n",
                          t.title, t.pool_workload ? pooled.description.c_str() : mixed.description.c_str(),
                          "Allocator", "ours (s)", "seed (s)", "Malloc", m, t.seed_malloc, t.seed_name, a,
                          t.seed_allocator, "speed-up", ours_x, seed_x);
            std::cout << line;
        }
        std::snprintf(line, sizeof line,
                      "%s{\"title\":\"%s\",\"caption\":\"%s; whole-run seconds, ours vs the seed's published "
                      "figures\",\"unit\":\"s\",\"lower_is_better\":true,\"log_scale\":true,\"groups\":[",
                      i ? "," : "", t.title,
                      t.pool_workload ? pooled.description.c_str() : mixed.description.c_str());
        json += line;
        std::snprintf(line, sizeof line,
                      "{\"label\":\"ours\",\"values\":{\"Malloc\":%.9f,\"%s\":%.9f}},"
                      "{\"label\":\"seed 004\",\"values\":{\"Malloc\":%.9f,\"%s\":%.9f}}]}",
                      m, t.seed_name, a, t.seed_malloc, t.seed_name, t.seed_allocator);
        json += line;
    }
    json += "]}\n";
    if (o.json_path.empty()) return 0;
    if (o.json_path == "-") {
        std::cout << json;
        return 0;
    }
    std::ofstream f(o.json_path);
    f << json;
    f.close(); // flushes: a write error shows only then
    if (!f) {
        std::cerr << "strata-lab: cannot write " << o.json_path << "\n";
        return 1;
    }
    return 0;
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
    std::cout << "\n(`strata-lab run --list` lists the game-loop contestants)\n";
    return 0;
}

std::string find_trace_library() {
    if (const char* env = std::getenv("STRATA_TRACE_LIB"); env != nullptr && *env != '\0') return env;
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    for (const char* rel : {"../trace/libstrata_trace.so", "../lib/libstrata_trace.so",
                            "../lib/x86_64-linux-gnu/libstrata_trace.so"}) {
        const auto p = (exe.parent_path() / rel).lexically_normal();
        if (std::filesystem::exists(p, ec)) return p.string();
    }
    return {};
}

int record_command(const record_command_options& o) {
    if (o.argv.empty() || o.out.empty()) {
        std::cerr << "strata-lab record: usage: strata-lab record -o FILE -- PROGRAM [ARGS...]\n";
        return 2;
    }
    const std::string lib = find_trace_library();
    if (lib.empty()) {
        std::cerr << "strata-lab record: libstrata_trace.so not found (set STRATA_TRACE_LIB)\n";
        return 1;
    }
    const std::string out = std::filesystem::absolute(o.out).string();
    // Old files of the same name would make the recorder pick OUT.<pid> (it never overwrites).
    std::error_code ec;
    std::filesystem::remove(out, ec);
    std::vector<std::string> env;
    std::string preload = lib;
    for (char** e = environ; *e != nullptr; ++e) {
        if (std::strncmp(*e, "LD_PRELOAD=", 11) == 0) {
            if ((*e)[11] != '\0') preload += std::string(":") + (*e + 11);
        } else if (std::strncmp(*e, "STRATA_TRACE_OUT=", 17) != 0) {
            env.emplace_back(*e);
        }
    }
    env.push_back("LD_PRELOAD=" + preload);
    env.push_back("STRATA_TRACE_OUT=" + out);
    std::vector<char*> envp, argv;
    for (auto& s : env)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args(o.argv);
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
        std::cerr << "strata-lab record: fork: " << std::strerror(errno) << "\n";
        return 1;
    }
    if (pid == 0) {
        execvpe(argv[0], argv.data(), envp.data());
        std::fprintf(stderr, "strata-lab record: cannot run %s: %s\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
#if defined(STRATA_LAB_HAS_TRACE)
    try {
        std::cerr << "strata-lab record: " << out << "\n" << trace::to_text(trace::summarize(out));
    } catch (const std::exception& e) {
        std::cerr << "strata-lab record: " << e.what() << "\n";
        return rc != 0 ? rc : 1;
    }
#endif
    return rc;
}

} // namespace strata::lab
