// strata-lab report: runs the race (or reads its JSON) and writes one self-contained HTML page
// (docs/lab-report.md).
#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

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

/// A JSON syntax check (the RFC 8259 grammar, no more): keeps a broken line out of the page, where
/// JSON.parse would fail on the whole document. Records the top-level members of an object
/// document (key as written, without quotes or unescaping; value as its source text).
class json_syntax {
public:
    explicit json_syntax(std::string_view text) : s_(text) {}

    /// Returns: whether the whole text is one JSON value (blanks around it allowed).
    bool document() {
        blanks();
        if (!value(0)) return false;
        blanks();
        return i_ == s_.size();
    }
    const std::map<std::string_view, std::string_view>& members() const { return members_; }

private:
    static constexpr int max_depth = 256; // deeper is not strata-mt's JSONL; the guard keeps the stack

    bool value(int depth) {
        if (i_ >= s_.size() || depth > max_depth) return false;
        switch (s_[i_]) {
        case '{': return object(depth);
        case '[': return array(depth);
        case '"': return string();
        case 't': return literal("true");
        case 'f': return literal("false");
        case 'n': return literal("null");
        default: return number();
        }
    }
    bool object(int depth) {
        ++i_; // '{'
        blanks();
        if (eat('}')) return true;
        for (;;) {
            const std::size_t key_at = i_;
            if (!string()) return false;
            const std::string_view key = s_.substr(key_at + 1, i_ - key_at - 2);
            blanks();
            if (!eat(':')) return false;
            blanks();
            const std::size_t value_at = i_;
            if (!value(depth + 1)) return false;
            if (depth == 0) members_[key] = s_.substr(value_at, i_ - value_at);
            blanks();
            if (eat('}')) return true;
            if (!eat(',')) return false;
            blanks();
        }
    }
    bool array(int depth) {
        ++i_; // '['
        blanks();
        if (eat(']')) return true;
        for (;;) {
            if (!value(depth + 1)) return false;
            blanks();
            if (eat(']')) return true;
            if (!eat(',')) return false;
            blanks();
        }
    }
    bool string() {
        if (!eat('"')) return false;
        while (i_ < s_.size()) {
            const auto c = static_cast<unsigned char>(s_[i_++]);
            if (c == '"') return true;
            if (c < 0x20) return false;
            if (c != '\\') continue;
            if (i_ >= s_.size()) return false;
            const char e = s_[i_++];
            if (e == 'u') {
                for (int k = 0; k < 4; ++k, ++i_)
                    if (i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) return false;
            } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
                return false;
            }
        }
        return false;
    }
    bool number() {
        eat('-');
        if (!eat('0') && !digits()) return false; // no leading zeros: "0" alone or 1-9 first
        if (eat('.') && !digits()) return false;
        if (eat('e') || eat('E')) {
            if (!eat('+')) eat('-');
            if (!digits()) return false;
        }
        return true;
    }
    bool digits() {
        const std::size_t from = i_;
        while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9')
            ++i_;
        return i_ > from;
    }
    bool literal(std::string_view word) {
        if (s_.substr(i_, word.size()) != word) return false;
        i_ += word.size();
        return true;
    }
    bool eat(char c) {
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    void blanks() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n'))
            ++i_;
    }

    std::string_view s_;
    std::size_t i_ = 0;
    std::map<std::string_view, std::string_view> members_;
};

/// Reads the strata-mt JSONL at `path` (`strata-mt --jsonl`, bench/mt/peers.sh MT_JSONL) and sets
/// `array` to its "phase" workload lines as one JSON array, in file order. Every non-blank line
/// must be a JSON object; the other workloads' lines are skipped. Returns: "" on success, else
/// what is wrong with the file (at least one phase line is needed: the chart is what was asked for).
std::string read_phase_lines(const std::string& path, std::string& array) {
    std::string text;
    if (!read_file(path, text)) return "cannot read " + path;
    array = "[";
    std::size_t line_no = 0, phases = 0, others = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        ++line_no;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        json_syntax json(line);
        const std::string where = path + ":" + std::to_string(line_no) + ": ";
        if (!json.document() || line[line.find_first_not_of(" \t")] != '{')
            return where + "not a JSON object (strata-mt --jsonl writes one per line)";
        const auto& m = json.members();
        const auto workload = m.find("workload");
        if (workload == m.end()) return where + "no \"workload\" (not a strata-mt --jsonl line)";
        if (workload->second != "\"phase\"") {
            ++others;
            continue;
        }
        for (const char* key :
             {"malloc", "grown_rss_kib", "shrunk_rss_kib", "rss_frames_kib", "final_rss_kib"})
            if (m.find(key) == m.end())
                return where + "a phase line without \"" + key + "\" (written by an older strata-mt?)";
        if (m.at("rss_frames_kib").front() != '[') return where + "\"rss_frames_kib\" is not an array";
        array += (phases++ ? "," : "") + line.substr(0, line.find_last_not_of(" \t\r") + 1);
    }
    array += "]";
    if (phases == 0)
        return path + ": no phase workload line among " + std::to_string(others) +
               " (run strata-mt --workload phase --jsonl FILE)";
    return {};
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

/// The report, with the RSS chart's data from `rss_jsonl` (strata-mt --jsonl; "" = none).
int report_with_rss(const report_command_options& o, const std::string& rss_jsonl) {
    // The RSS lines first: a bad file stops the command before a race runs.
    std::string rss;
    if (!rss_jsonl.empty()) {
        if (const std::string error = read_phase_lines(rss_jsonl, rss); !error.empty()) {
            std::cerr << "strata-lab: report --rss: " << error << "\n";
            return 2;
        }
    }
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
    if (!rss.empty()) json.insert(json.find_last_of('}'), ",\"rss\":" + rss);
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

} // namespace

int report_command(const report_command_options& o) { return report_with_rss(o, {}); }

namespace {

[[maybe_unused]] const bool registered = register_command(
    {60, "report",
     std::vector<std::string_view>{"--workload", "--only", "--scale", "--seed", "--repeats",
                                   "--latency-passes", "--quick", "--full"},
     [](CLI::App& app, const shared_options& shared, const std::string& uses_note) -> std::function<int()> {
         auto o = std::make_shared<report_command_options>();
         auto rss = std::make_shared<std::string>();
         auto* cmd = app.add_subcommand(
             "report", "race the workloads (or read --from JSON) and write one self-contained "
                       "HTML report" +
                           uses_note + ", all for its race, none with --from; see docs/lab-report.md");
         cmd->add_option("--from", o->from_json, "render this race/replay --json document instead of racing")
             ->type_name("FILE");
         cmd->add_option("--rss", *rss,
                         "add the RSS-over-time chart from this strata-mt --jsonl file's phase lines")
             ->type_name("FILE");
         cmd->add_option("--out,-o", o->out, "the HTML file to write (default strata-report.html)")
             ->type_name("FILE");
         auto* workload = cmd->add_option("--workload", o->workloads, "race only this workload (repeatable)")
                              ->type_name("NAME");
         return [o, rss, workload, &shared] {
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
             return report_with_rss(*o, *rss);
         };
     }});

} // namespace

} // namespace strata::lab
