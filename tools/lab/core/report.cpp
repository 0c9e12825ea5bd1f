#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "strata/core/config.hpp"

#include "text.hpp"
#include "workload.hpp"

namespace strata::lab {

namespace {

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
std::string
format(const char* fmt, ...) {
    char buf[256];
    std::va_list args;
    va_start(args, fmt);
    const int n = std::vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    if (n < 0) return {};
    return std::string(buf, std::min(static_cast<std::size_t>(n), sizeof buf - 1));
}

std::string format_ns(double ns) { return ns >= 1000 ? format("%.0f", ns) : format("%.1f", ns); }

// A latency for the table: net nanoseconds, or "<step" when below the counter's resolution.
std::string latency_cell(const calibration& t, double ticks) {
    const double ns = t.net_ns(ticks);
    if (ns + 1e-9 < t.resolution_ns()) return "<" + format_ns(t.resolution_ns());
    return format_ns(ns);
}

std::string pad_left(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}
std::string pad_right(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string size_mix() {
    std::string s;
    for (const size_bucket& b : default_sizes) {
        if (!s.empty()) s += ", ";
        s += format("%u%% %u-%u", b.percent, b.lo, b.hi);
    }
    s += " B; align ";
    bool first = true;
    for (const align_bucket& b : default_aligns) {
        if (!first) s += " / ";
        first = false;
        s += format("%u (%u%%)", b.align, b.percent);
    }
    return s;
}

// ---- JSON ------------------------------------------------------------------------------------

std::string json_string(std::string_view v) { return json_quote(v); }

std::string json_number(double v) {
    if (!std::isfinite(v)) return "null";
    return format("%.6g", v);
}

std::string json_bytes(const std::optional<std::size_t>& v) {
    return v ? format("%zu", *v) : std::string("null");
}

std::string json_bool(bool b) { return b ? "true" : "false"; }

} // namespace

build_info current_build() {
    build_info b;
#if defined(__clang__)
    b.compiler = format("clang %d.%d.%d", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
    b.compiler = format("g++ %d.%d.%d", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
    b.compiler = "unknown compiler";
#endif
#if defined(__OPTIMIZE__)
    b.optimized = true;
#endif
#if defined(NDEBUG)
    b.ndebug = true;
#endif
    b.checks = STRATA_CHECKS;
    b.asan = STRATA_ASAN != 0;
    return b;
}

std::string format_bytes(std::size_t bytes) {
    const double b = static_cast<double>(bytes);
    if (bytes < 1024) return format("%zu B", bytes);
    if (bytes < (std::size_t{1} << 20)) return format("%.1f KiB", b / 1024.0);
    if (bytes < (std::size_t{1} << 30)) return format("%.2f MiB", b / (1024.0 * 1024.0));
    return format("%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
}

std::string format_count(std::size_t n) {
    std::string digits = std::to_string(n);
    std::string out;
    const std::size_t lead = digits.size() % 3;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (i % 3) == lead % 3) out += ',';
        out += digits[i];
    }
    return out;
}

void print_report(std::ostream& out, const run_report& r) {
    const workload_config& c = r.config;
    const calibration& t = r.timer;
    const std::size_t warmup = std::min(c.warmup_frames, c.frames);

    out << "strata-lab: simulated game loop (" << r.label << ")\n";
    out << "  workload   " << format_count(c.frames) << " frames (" << warmup << " warm-up) x "
        << format_count(c.allocs_per_frame) << " allocs (" << format_count(r.min_frame_allocs) << ".."
        << format_count(r.max_frame_allocs) << " per frame), " << format_count(r.total_allocs)
        << " allocations, seed " << c.seed << "\n";
    out << "  sizes      " << size_mix() << "\n";
    out << "  requested  " << format_bytes(r.max_frame_bytes) << " live at the fullest frame after warm-up ("
        << format_count(r.max_frame_bytes) << " B)\n";
    out << "  timer      " << t.counter;
    if (t.counter == "rdtsc") {
        out << format(", %.3f GHz by steady_clock over %.0f ms; ", t.ghz(), t.window_ms);
    } else {
        out << ", ";
    }
    out << (t.invariant_counter ? "constant rate" : "NOT constant rate") << " (" << t.invariant_reason
        << ")\n";
    out << "             resolution " << format("%.0f", t.resolution_ticks)
        << " ticks = " << format_ns(t.resolution_ns()) << " ns; empty timer "
        << format("%.0f", t.overhead_ticks) << " ticks = " << format_ns(t.overhead_ns())
        << " ns (median, min " << format("%.0f", t.overhead_min_ticks) << ")\n";
    out << "             is subtracted from every latency sample (clamped at 0); under one step prints as <"
        << format_ns(t.resolution_ns()) << "\n";
    out << "  build      " << r.build.compiler << (r.build.optimized ? ", optimized" : ", NOT optimized")
        << ", STRATA_CHECKS=" << r.build.checks << (r.build.asan ? ", ASan" : "");
    if (!r.build.optimized || r.build.checks > 0 || r.build.asan) out << "  (not release numbers)";
    out << "\n";
    if (r.smoke_test) {
        out << "  note       --quick is a smoke test: too few allocations for stable numbers\n";
    }
    if (!t.invariant_counter) {
        out << "  warning    the TSC may not tick at a constant rate here; latency figures are approximate\n";
    }
    out << "\n";

    // ---- the table ----
    const contestant_result* base = r.find("malloc");
    const std::vector<std::string> head = {"allocator", "ns/alloc", "vs malloc", "p50 ns",   "p99 ns",
                                           "p99.9 ns",  "max ns",   "peak used", "peak held"};
    std::vector<std::vector<std::string>> rows;
    bool any_failed = false;
    bool any_approx = false;
    for (const contestant_result& x : r.results) {
        std::vector<std::string> row;
        row.push_back(x.name + (x.failed_allocs ? " !" : ""));
        any_failed = any_failed || x.failed_allocs;
        row.push_back(format("%.2f", x.ns_per_alloc));
        row.push_back(base && x.ns_per_alloc > 0 ? format("%.2fx", base->ns_per_alloc / x.ns_per_alloc)
                                                 : std::string("-"));
        row.push_back(latency_cell(t, x.latency_ticks.p50));
        row.push_back(latency_cell(t, x.latency_ticks.p99));
        row.push_back(latency_cell(t, x.latency_ticks.p999));
        row.push_back(latency_cell(t, x.latency_ticks.max));
        row.push_back(x.memory.used_peak ? format_bytes(*x.memory.used_peak) : std::string("-"));
        std::string held = x.memory.held_peak ? format_bytes(*x.memory.held_peak) : std::string("-");
        if (x.memory.held_peak && x.memory.held_approximate) {
            held = "~" + held;
            any_approx = true;
        }
        row.push_back(held);
        rows.push_back(std::move(row));
    }
    std::vector<std::size_t> width(head.size());
    for (std::size_t i = 0; i < head.size(); ++i) {
        width[i] = head[i].size();
        for (const auto& row : rows)
            width[i] = std::max(width[i], row[i].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string s = "  " + pad_right(cells[0], width[0]);
        for (std::size_t i = 1; i < cells.size(); ++i)
            s += "  " + pad_left(cells[i], width[i]);
        out << s << "\n";
    };
    line(head);
    std::size_t total = 2 + width[0];
    for (std::size_t i = 1; i < width.size(); ++i)
        total += 2 + width[i];
    out << "  " << std::string(total - 2, '-') << "\n";
    for (const auto& row : rows)
        line(row);
    out << "\n";

    // ---- what the columns mean ----
    out << "  ns/alloc   steady-state loop time / allocations (frames " << warmup + 1 << ".." << c.frames
        << (r.repeats == 1 ? std::string(", one pass")
                           : ", median of " + std::to_string(r.repeats) + " passes")
        << "); includes\n"
        << "             touching each block's first and last byte and the per-frame release\n";
    out << "  vs malloc  malloc's ns/alloc / this row's (above 1.00x = faster than malloc)\n";
    out << "  p50..max   one allocate() call timed alone with " << t.counter
        << ", empty-timer overhead subtracted;\n"
        << "             " << format_count(r.timed_allocs)
        << " samples per allocator, warm-up frames excluded\n";
    out << "  peak used  most bytes handed out at once: malloc = sum of malloc_usable_size, strata =\n"
        << "             largest stats().in_use (padding, headers; frame_allocator2 sums both frames),\n"
        << "             pmr: unknown (-); both peaks are read at the fullest point of each frame after\n"
        << "             warm-up\n";
    out << "  peak held  most bytes taken from upstream: strata = largest stats().capacity, pmr = peak\n"
        << "             outstanding in a counting upstream resource";
    if (any_approx) {
        out << ",\n             ~malloc = sum of chunk sizes (usable + 8 B; free lists, top chunk not "
               "counted)";
    }
    out << "\n";
    if (any_failed) {
        out << "\n";
        for (const contestant_result& x : r.results) {
            if (x.failed_allocs) {
                out << "  ! " << x.name << ": " << format_count(x.failed_allocs)
                    << " allocations returned nullptr (not touched; its figures cover fewer bytes)\n";
            }
        }
    }
    out << "\n  measured in " << format("%.2f", r.wall_seconds) << " s\n";
}

void write_json(std::ostream& out, const run_report& r) {
    const workload_config& c = r.config;
    const calibration& t = r.timer;
    const contestant_result* base = r.find("malloc");
    out << "{\n";
    out << "  \"tool\": \"strata-lab\",\n";
    out << "  \"command\": \"run\",\n";
    out << "  \"label\": " << json_string(r.label) << ",\n";
    out << "  \"smoke_test\": " << json_bool(r.smoke_test) << ",\n";
    out << "  \"schema\": 1,\n";
    out << "  \"workload\": {\n";
    out << "    \"seed\": " << c.seed << ",\n";
    out << "    \"frames\": " << c.frames << ",\n";
    out << "    \"warmup_frames\": " << std::min(c.warmup_frames, c.frames) << ",\n";
    out << "    \"allocs_per_frame\": " << c.allocs_per_frame << ",\n";
    out << "    \"jitter_percent\": " << c.jitter_percent << ",\n";
    out << "    \"min_frame_allocs\": " << r.min_frame_allocs << ",\n";
    out << "    \"max_frame_allocs\": " << r.max_frame_allocs << ",\n";
    out << "    \"total_allocs\": " << r.total_allocs << ",\n";
    out << "    \"timed_allocs\": " << r.timed_allocs << ",\n";
    out << "    \"requested_peak_bytes\": " << r.max_frame_bytes << ",\n";
    out << "    \"size_mix\": [";
    bool first = true;
    for (const size_bucket& b : default_sizes) {
        out << (first ? "" : ", ")
            << format("{\"percent\": %u, \"min\": %u, \"max\": %u}", b.percent, b.lo, b.hi);
        first = false;
    }
    out << "],\n    \"align_mix\": [";
    first = true;
    for (const align_bucket& b : default_aligns) {
        out << (first ? "" : ", ") << format("{\"percent\": %u, \"align\": %u}", b.percent, b.align);
        first = false;
    }
    out << "]\n  },\n";
    out << "  \"timer\": {\n";
    out << "    \"counter\": " << json_string(t.counter) << ",\n";
    out << "    \"ns_per_tick\": " << json_number(t.ns_per_tick) << ",\n";
    out << "    \"ghz\": " << json_number(t.ghz()) << ",\n";
    out << "    \"calibration_ms\": " << json_number(t.window_ms) << ",\n";
    out << "    \"resolution_ticks\": " << json_number(t.resolution_ticks) << ",\n";
    out << "    \"overhead_ticks\": " << json_number(t.overhead_ticks) << ",\n";
    out << "    \"overhead_min_ticks\": " << json_number(t.overhead_min_ticks) << ",\n";
    out << "    \"overhead_ns\": " << json_number(t.overhead_ns()) << ",\n";
    out << "    \"invariant\": " << json_bool(t.invariant_counter) << ",\n";
    out << "    \"invariant_reason\": " << json_string(t.invariant_reason) << "\n";
    out << "  },\n";
    out << "  \"build\": {\"compiler\": " << json_string(r.build.compiler)
        << ", \"optimized\": " << json_bool(r.build.optimized)
        << ", \"ndebug\": " << json_bool(r.build.ndebug) << ", \"strata_checks\": " << r.build.checks
        << ", \"asan\": " << json_bool(r.build.asan) << "},\n";
    out << "  \"repeats\": " << r.repeats << ",\n";
    out << "  \"wall_seconds\": " << json_number(r.wall_seconds) << ",\n";
    out << "  \"results\": [";
    first = true;
    for (const contestant_result& x : r.results) {
        out << (first ? "\n" : ",\n");
        first = false;
        out << "    {\n";
        out << "      \"name\": " << json_string(x.name) << ",\n";
        out << "      \"description\": " << json_string(x.description) << ",\n";
        out << "      \"ns_per_alloc\": " << json_number(x.ns_per_alloc) << ",\n";
        out << "      \"ns_per_alloc_passes\": [";
        for (std::size_t i = 0; i < x.pass_ns_per_alloc.size(); ++i) {
            out << (i ? ", " : "") << json_number(x.pass_ns_per_alloc[i]);
        }
        out << "],\n";
        out << "      \"vs_malloc\": "
            << (base && x.ns_per_alloc > 0 ? json_number(base->ns_per_alloc / x.ns_per_alloc)
                                           : std::string("null"))
            << ",\n";
        const latency_summary& l = x.latency_ticks;
        out << "      \"latency_ns\": {\"samples\": " << l.count
            << ", \"min\": " << json_number(t.net_ns(l.min))
            << ", \"mean\": " << json_number(t.net_ns(l.mean))
            << ", \"p50\": " << json_number(t.net_ns(l.p50)) << ", \"p99\": " << json_number(t.net_ns(l.p99))
            << ", \"p99_9\": " << json_number(t.net_ns(l.p999))
            << ", \"max\": " << json_number(t.net_ns(l.max)) << "},\n";
        out << "      \"latency_ticks_raw\": {\"p50\": " << json_number(l.p50)
            << ", \"p99\": " << json_number(l.p99) << ", \"p99_9\": " << json_number(l.p999)
            << ", \"max\": " << json_number(l.max) << "},\n";
        out << "      \"peak_used_bytes\": " << json_bytes(x.memory.used_peak) << ",\n";
        out << "      \"peak_held_bytes\": " << json_bytes(x.memory.held_peak) << ",\n";
        out << "      \"peak_held_approximate\": " << json_bool(x.memory.held_approximate) << ",\n";
        out << "      \"upstream_calls\": " << x.memory.upstream_calls << ",\n";
        out << "      \"failed_allocs\": " << x.failed_allocs << "\n";
        out << "    }";
    }
    out << "\n  ]\n}\n";
}

} // namespace strata::lab
