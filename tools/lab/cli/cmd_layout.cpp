// strata-lab layout: AoS vs SoA, as cache lines loaded against bytes used, computed and measured.
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "layout.hpp"
#include "progress.hpp"
#include "text.hpp"

namespace strata::lab {

namespace {

/// Returns: `x` as "16" when whole, else "1.88".
std::string ratio_text(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, x == static_cast<double>(static_cast<long long>(x)) ? "%.0f" : "%.2f", x);
    return buf;
}

/// Returns: the touch-one-field verdict, computed from the numbers: "SoA loads 16x fewer bytes than
/// AoS and runs 7.36x faster", "SoA loads as many bytes as AoS and runs as fast (1.00x)".
std::string one_field_verdict(double aos_loaded, double soa_loaded, double aos_ns, double soa_ns) {
    std::string s = "SoA loads ";
    if (soa_loaded == aos_loaded) {
        s += "as many bytes as AoS";
    } else if (soa_loaded < aos_loaded) {
        s += ratio_text(aos_loaded / soa_loaded) + "x fewer bytes than AoS";
    } else {
        s += ratio_text(soa_loaded / aos_loaded) + "x more bytes than AoS";
    }
    char speed[64];
    const double faster = soa_ns > 0 && aos_ns > 0 ? aos_ns / soa_ns : 1.0;
    if (std::llround(faster * 100) == 100) {
        std::snprintf(speed, sizeof speed, " and runs as fast (%.2fx)", faster);
    } else if (faster > 1) {
        std::snprintf(speed, sizeof speed, " and runs %.2fx faster", faster);
    } else {
        std::snprintf(speed, sizeof speed, " and runs %.2fx SLOWER", 1 / faster);
    }
    return s + speed;
}

} // namespace

int layout_command(const layout_options& o) {
    using shape = layout::line_entity; // 16 four-byte fields, one cache line each
    const std::size_t n = o.entities;
    if (n == 0) return 2;
    const progress_line progress(o.json_path != "-");
    progress("layout: touch-one-field and touch-all over " + std::to_string(n) + " entities, AoS and SoA...");
    const layout::timings t = shape::measure(n, o.runs, true);
    progress.clear();
    const auto per_entity = [n](double ms) { return ms * 1e6 / static_cast<double>(n); };
    const double aos_one = per_entity(t.aos_ms), soa_one = per_entity(t.soa_ms);
    const double aos_all = per_entity(t.aos_all_ms), soa_all = per_entity(t.soa_all_ms);
    // Bytes loaded from memory are whole cache lines: AoS loads every entity's line for either
    // loop; SoA touch-one-field loads only the health column.
    const double aos_loaded = static_cast<double>(layout::loaded_bytes(n * shape::entity_bytes));
    const double soa_one_loaded = static_cast<double>(layout::loaded_bytes(n * layout::field_bytes));
    const double soa_all_loaded = soa_one_loaded * shape::fields;
    const double used_one = static_cast<double>(n * layout::field_bytes);
    const double used_all = static_cast<double>(n * shape::entity_bytes);
    if (o.json_path != "-") {
        std::printf(
            "AoS vs SoA: %zu entities of %zu bytes (%zu four-byte fields, one cache line each).\n"
            "touch-one-field updates the health field; touch-all updates all %zu fields; ns/entity is "
            "this thread's CPU time, the best of %d run%s.\n%-22s %14s %14s %8s %10s\n",
            n, shape::entity_bytes, shape::fields, shape::fields, o.runs, o.runs == 1 ? "" : "s", "loop",
            "bytes loaded", "bytes used", "useful", "ns/entity");
        const auto row = [](const char* name, double loaded, double used, double ns) {
            std::printf("%-22s %14.0f %14.0f %7.1f%% %10.2f\n", name, loaded, used, 100.0 * used / loaded,
                        ns);
        };
        row("AoS touch-one-field", aos_loaded, used_one, aos_one);
        row("SoA touch-one-field", soa_one_loaded, used_one, soa_one);
        row("AoS touch-all", aos_loaded, used_all, aos_all);
        row("SoA touch-all", soa_all_loaded, used_all, soa_all);
        std::printf("touch-one-field: %s.\n",
                    one_field_verdict(aos_loaded, soa_one_loaded, aos_one, soa_one).c_str());
        std::fflush(stdout);
    }
    if (o.json_path.empty()) return 0;
    // The report draws the first 16 entities (docs/lab-report.md, "layout"); the caption carries
    // the measured numbers.
    char caption[600];
    std::snprintf(
        caption, sizeof caption,
        "Measured on %zu entities: touch-one-field AoS %.2f ns/entity vs SoA %.2f (%.1fx); touch-all AoS "
        "%.2f vs SoA %.2f. Loaded bytes per used byte, touch-one-field: AoS %s, SoA %s.",
        n, aos_one, soa_one, soa_one > 0 ? aos_one / soa_one : 0.0, aos_all, soa_all,
        ratio_text(aos_loaded / used_one).c_str(), ratio_text(soa_one_loaded / used_one).c_str());
    const auto side = [](double loaded, double used, double ns) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "{\"bytes_loaded\":%.0f,\"bytes_used\":%.0f,\"ns_per_entity\":%.3f}",
                      loaded, used, ns);
        return std::string(buf);
    };
    char head[900];
    std::snprintf(head, sizeof head,
                  "{\"title\":\"strata-lab layout\",\"workloads\":[],\"layout\":{\"caption\":\"%s\","
                  "\"cache_line\":%zu,\"entity_bytes\":%zu,\"field_bytes\":%zu,\"field_offset\":%zu,"
                  "\"entities\":16,\"measured_entities\":%zu,",
                  caption, layout::cache_line, shape::entity_bytes, layout::field_bytes, shape::health_offset,
                  n);
    return write_document(o.json_path, head + std::string("\"touch_one\":{\"aos\":") +
                                           side(aos_loaded, used_one, aos_one) +
                                           ",\"soa\":" + side(soa_one_loaded, used_one, soa_one) +
                                           "},\"touch_all\":{\"aos\":" + side(aos_loaded, used_all, aos_all) +
                                           ",\"soa\":" + side(soa_all_loaded, used_all, soa_all) + "}}}\n");
}

namespace {

[[maybe_unused]] const bool registered = register_command(
    {40, "layout", std::vector<std::string_view>{"--repeats", "--quick", "--json"},
     [](CLI::App& app, const shared_options& shared, const std::string& uses_note) -> std::function<int()> {
         auto o = std::make_shared<layout_options>();
         auto* cmd = app.add_subcommand(
             "layout",
             "AoS vs SoA: cache lines loaded vs bytes used, measured; best of --repeats runs" + uses_note);
         auto* entities =
             cmd->add_option("--entities", o->entities, "entities (default 10,000,000; --quick: 1,000,000)")
                 ->type_name("N")
                 ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 28));
         return [o, entities, &shared] {
             if (shared.quick && entities->count() == 0) o->entities = 1'000'000;
             o->runs = shared.knobs.repeats.value_or(shared.quick ? 2 : 5); // best of
             o->json_path = shared.json_path;
             return layout_command(*o);
         };
     }});

} // namespace

} // namespace strata::lab
