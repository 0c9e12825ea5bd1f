// strata-lab report: runs the race (or reads its JSON) and writes one self-contained HTML page
// (docs/lab-report.md).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "commands.hpp"
#include "html_report.hpp"

namespace strata::lab {

namespace {

bool read_file(const std::string& path, std::string& text) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream s;
    s << f.rdbuf();
    text = s.str();
    return static_cast<bool>(f) || f.eof();
}

/// Returns: whether `doc` can be what `race --json` or `replay --json` wrote: an object that names
/// its workloads. Not a parse: the page parses it, and this only turns away the wrong file (an
/// empty one, a trace, another tool's JSON) with a message instead of an empty report.
bool looks_like_results(const std::string& doc) {
    const std::size_t first = doc.find_first_not_of(" \t\r\n");
    const std::size_t last = doc.find_last_not_of(" \t\r\n");
    return first != std::string::npos && doc[first] == '{' && doc[last] == '}' &&
           doc.find("\"workloads\"") != std::string::npos;
}

/// Returns: the text of the JSON value that follows `"key":` at the top level of `doc` (the
/// documents strata-lab writes end with that value, then the closing brace), or "".
std::string tail_value(const std::string& doc, const std::string& key) {
    const std::size_t at = doc.rfind("\"" + key + "\":");
    const std::size_t end = doc.find_last_of('}');
    if (at == std::string::npos || end == std::string::npos || end <= at) return {};
    return doc.substr(at + key.size() + 3, end - (at + key.size() + 3));
}

/// Runs one command into a temporary JSON file, read into `text` ("" when it failed). Returns: the
/// command's exit status.
template <class Run>
int json_of(const char* what, std::string& text, Run run) {
    const std::filesystem::path tmp = std::filesystem::temp_directory_path() /
                                      ("strata-report-" + std::to_string(::getpid()) + "-" + what + ".json");
    const int rc = run(tmp.string());
    if (rc != 0 || !read_file(tmp.string(), text)) text.clear();
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return rc;
}

} // namespace

int report_command(const report_command_options& o) {
    std::string json;
    if (o.from_json.empty()) {
        // Run the race into a temporary JSON file (the race prints its tables on the way).
        const int rc = json_of("race", json, [&](const std::string& path) {
            race_command_options r;
            apply_race_knobs(r, o.race, o.quick); // --scale, --seed, --repeats, --latency-passes as in race
            r.workloads = o.workloads;
            r.only = o.only;
            r.json_path = path;
            return race_command(r);
        });
        if (rc != 0) return rc;
        if (json.empty()) {
            std::cerr << "strata-lab: cannot read the race results\n";
            return 1;
        }
        // The comparisons and the layout picture: versus-malloc, showdown, layout (--quick: small).
        std::cout << "\nstrata-lab report: versus-malloc, showdown, layout...\n";
        std::string versus, showdown, layout;
        (void)json_of("versus", versus, [&](const std::string& path) {
            versus_malloc_options v;
            v.repeats = o.quick ? 1 : 3;
            v.json_path = path;
            return versus_malloc_command(v);
        });
        (void)json_of("showdown", showdown, [&](const std::string& path) {
            showdown_options s;
            s.quick = o.quick;
            s.repeats = o.quick ? 1 : 3;
            s.padded = false;
            s.json_path = path;
            return showdown_command(s);
        });
        (void)json_of("layout", layout, [&](const std::string& path) {
            layout_options l;
            l.entities = o.quick ? 1'000'000 : 10'000'000;
            l.runs = o.quick ? 2 : 5;
            l.json_path = path;
            return layout_command(l);
        });
        std::string bars = tail_value(versus, "bars"), more = tail_value(showdown, "bars");
        // Each is "[...]": concatenate the two arrays.
        if (bars.size() >= 2 && more.size() > 2)
            bars = bars.substr(0, bars.size() - 1) + "," + more.substr(1);
        else if (bars.size() < 2)
            bars = more;
        const std::string layout_value = tail_value(layout, "layout");
        const std::size_t close = json.find_last_of('}');
        if (close != std::string::npos) {
            std::string extra;
            if (bars.size() > 2) extra += ",\"bars\":" + bars;
            if (!layout_value.empty()) extra += ",\"layout\":" + layout_value;
            json.insert(close, extra);
        }
    } else if (!read_file(o.from_json, json)) {
        std::cerr << "strata-lab: cannot read " << o.from_json << "\n";
        return 2;
    } else if (!looks_like_results(json)) {
        std::cerr << "strata-lab: " << o.from_json
                  << " is not a race or replay --json document (a JSON object with \"workloads\")\n";
        return 2;
    }
    std::ofstream out(o.out, std::ios::binary);
    write_html_report(out, json);
    out.close();
    if (!out) {
        std::cerr << "strata-lab: cannot write " << o.out << "\n";
        return 1;
    }
    std::cout << "strata-lab: wrote " << o.out << "\n";
    return 0;
}

namespace {

[[maybe_unused]] const bool registered = register_command(
    {60, "report",
     std::vector<std::string_view>{"--workload", "--only", "--scale", "--seed", "--repeats",
                                   "--latency-passes", "--quick", "--full"},
     [](CLI::App& app, const shared_options& shared, const std::string& uses_note) -> std::function<int()> {
         auto o = std::make_shared<report_command_options>();
         auto* cmd = app.add_subcommand(
             "report", "race the workloads (or read --from JSON) and write one self-contained "
                       "HTML report" +
                           uses_note + ", all for its race, none with --from; see docs/lab-report.md");
         cmd->add_option("--from", o->from_json, "render this race/replay --json document instead of racing")
             ->type_name("FILE");
         cmd->add_option("--out,-o", o->out, "the HTML file to write (default strata-report.html)")
             ->type_name("FILE");
         auto* workload = cmd->add_option("--workload", o->workloads, "race only this workload (repeatable)")
                              ->type_name("NAME");
         return [o, workload, &shared] {
             // --from renders a saved document: the race's options would be ignored.
             if (!o->from_json.empty() && (!shared.given.empty() || workload->count() > 0)) {
                 std::cerr << "strata-lab: report --from does not use "
                           << (shared.given.empty() ? std::string_view("--workload") : shared.given.front())
                           << " (it renders the saved document; the race's options apply without --from)\n";
                 return 2;
             }
             o->quick = shared.quick;
             o->only = shared.only;
             o->race = shared.knobs;
             if (!shared.workloads.empty()) o->workloads = shared.workloads; // either --workload
             return report_command(*o);
         };
     }});

} // namespace

} // namespace strata::lab
