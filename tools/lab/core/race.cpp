#include "race.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <iostream>
#include <ostream>

#include "metrics.hpp"
#include "op_contenders.hpp"
#include "race_summary.hpp"
#include "text.hpp"

namespace strata::lab {

namespace {

struct tail5 {
    double p50, p99, p999, p9999, max;
};

// No samples (--latency-passes 0) is "not measured": NaN, printed as - and written as null.
tail5 tail_of(std::vector<std::uint32_t> ticks, const calibration& cal) {
    if (ticks.empty()) {
        const double none = std::nan("");
        return {none, none, none, none, none};
    }
    std::sort(ticks.begin(), ticks.end());
    const std::span<const std::uint32_t> s(ticks);
    auto at = [&](double q) { return cal.net_ns(static_cast<double>(percentile_sorted(s, q))); };
    return {at(50), at(99), at(99.9), at(99.99), cal.net_ns(static_cast<double>(s.back()))};
}

bool selected(const std::string& name, const std::vector<std::string>& only) {
    if (only.empty()) return true;
    return std::any_of(only.begin(), only.end(), [&](const std::string& p) { return glob_match(p, name); });
}

// printf into a string of whatever length it takes: a section header holds a trace's file name
// and its recorded command line, which no fixed buffer bounds.
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
std::string
format(const char* fmt, ...) {
    std::va_list args;
    va_start(args, fmt);
    std::va_list again;
    va_copy(again, args);
    const int n = std::vsnprintf(nullptr, 0, fmt, args);
    va_end(args);
    std::string s(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
    if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, again);
    va_end(again);
    return s;
}

// A latency for the tables: net ns, "<step" below the counter's resolution (a clamped 0 is not a
// measured 0 ns), "-" when not measured (NaN). The widest, "<10.0", fits
// the narrowest column (6).
std::string latency_cell(double ns, double resolution_ns) {
    if (std::isnan(ns)) return "-";
    if (ns + 1e-9 < resolution_ns) return format(resolution_ns >= 100 ? "<%.0f" : "<%.1f", resolution_ns);
    return format("%.0f", ns);
}

void progress(bool on, const std::string& text) {
    if (!on) return;
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    std::fflush(stderr);
}

} // namespace

race_section race_workload(const op_workload& w, const race_options& o, const calibration& cal,
                           const op_stream_factory* stream) {
    race_section s;
    s.streamed = stream != nullptr;
    s.workload = w.name;
    s.description = w.description;
    s.memory_ops = w.memory_ops();
    s.peak_live_bytes = w.peak_live_bytes;
    s.peak_live_blocks = w.peak_live_blocks;
    s.threads = w.threads;
    s.resolution_ns = cal.resolution_ns();
    for (const op_contender& c : op_registry()) {
        if (!selected(c.name, o.only)) continue;
        if (!c.applies(w)) {
            s.skipped.push_back(c.name +
                                " (needs: " + (c.needs.empty() ? "another kind of workload" : c.needs) + ")");
            continue;
        }
        progress(o.progress, "strata-lab: " + w.name + ": " + c.name + "...");
        race_row row;
        row.description = c.description;
        try {
            row.result = stream != nullptr ? c.run_streamed(w, *stream, o.replay) : c.run(w, o.replay);
        } catch (const std::exception& e) {
            // One contender that cannot run this workload (a reservation the machine refuses, a
            // region too large) must not take the others' results with it.
            s.skipped.push_back(c.name + " (failed: " + e.what() + ")");
            continue;
        }
        // A streamed replay keeps no per-op minimum: its "filtered" columns repeat the raw pass.
        if (row.result.streamed && row.result.ticks_filtered.empty())
            row.result.ticks_filtered = row.result.ticks_raw;
        row.result.allocator = c.name;
        row.ns_per_op = row.result.ns_per_op();
        const tail5 raw = tail_of(row.result.ticks_raw, cal), filt = tail_of(row.result.ticks_filtered, cal);
        row.p50 = raw.p50, row.p99 = raw.p99, row.p999 = raw.p999, row.p9999 = raw.p9999, row.max = raw.max;
        row.f_p50 = filt.p50, row.f_p99 = filt.p99, row.f_p999 = filt.p999, row.f_p9999 = filt.p9999,
        row.f_max = filt.max;
        if (row.result.has_usable_size && row.result.peak_granted > 0) {
            // At the exact granted peak (the sampling pass keeps the live bytes of that moment): the
            // highest of the 200 samples can miss a burst between two of them.
            const std::uint64_t granted_peak = row.result.peak_granted;
            const std::uint64_t live_at_peak = std::min(row.result.live_at_peak_granted, granted_peak);
            row.waste = static_cast<double>(granted_peak - live_at_peak) / static_cast<double>(granted_peak);
        }
        // No samples (a trace with no memory operation left): unknown, printed "-" and written null,
        // not a measured 0%.
        if (row.result.has_probe && !row.result.series.empty()) {
            row.worst_frag = 0;
            for (const memory_sample& m : row.result.series) {
                if (m.free_bytes == 0) continue;
                row.worst_frag = std::max(row.worst_frag, 1.0 - static_cast<double>(m.largest_free) /
                                                                    static_cast<double>(m.free_bytes));
            }
            row.end_largest_free = static_cast<double>(row.result.series.back().largest_free);
        }
        s.rows.push_back(std::move(row));
    }
    progress(o.progress, "");
    return s;
}

void print_section(std::ostream& out, const race_section& s) {
    out << "\n== " << s.workload << ": " << s.description << "\n   " << format_count(s.memory_ops)
        << " memory ops, peak live " << format_bytes(s.peak_live_bytes) << " in "
        << format_count(s.peak_live_blocks) << " blocks";
    if (s.threads > 1) out << ", " << s.threads << " threads (replayed serially)";
    out << "\n";
    if (s.streamed && !s.rows.empty() && s.rows.front().result.latency_passes == 0)
        out << "   streamed in batches (too big to hold): no latency pass (--latency-passes 0)\n";
    else if (s.streamed)
        out << "   streamed in batches (too big to hold): one latency pass, percentiles from a sample;\n"
               "   the p99.99f / max f columns show that raw pass (no per-op minimum over passes)\n";
    // 16 + 8 + 6*4 + 8 + 11 + 7 + 7 + 8 = 89 columns
    out << format("%-16s %7s %6s %6s %6s %7s %8s %10s %6s %6s %6s\n", "allocator", "ns/op", "p50", "p99",
                  "p99.9", "p99.99f", "max f", "footprint", "waste", "frag", "failed");
    const double base = s.rows.empty() ? 0 : s.rows.front().ns_per_op;
    for (const race_row& r : s.rows) {
        const std::string fp = r.result.has_footprint ? format_bytes(r.result.peak_footprint) : "-";
        const std::string waste = r.waste >= 0 ? format("%.0f%%", r.waste * 100) : "-";
        const std::string frag = r.worst_frag >= 0 ? format("%.0f%%", r.worst_frag * 100) : "-";
        const auto ns = [&](double v) { return latency_cell(v, s.resolution_ns); };
        out << format("%-16s %7.1f %6s %6s %6s %7s %8s %10s %6s %6s %6llu\n", r.result.allocator.c_str(),
                      r.ns_per_op, ns(r.p50).c_str(), ns(r.p99).c_str(), ns(r.p999).c_str(),
                      ns(r.f_p9999).c_str(), ns(r.f_max).c_str(), fp.c_str(), waste.c_str(), frag.c_str(),
                      static_cast<unsigned long long>(r.result.failed));
    }
    if (base > 0 && s.rows.size() > 1) {
        std::string text = "   speed vs " + s.rows.front().result.allocator + ":";
        std::size_t col = text.size();
        for (std::size_t i = 1; i < s.rows.size(); ++i) {
            const std::string item = format(" %s %.2fx", s.rows[i].result.allocator.c_str(),
                                            s.rows[i].ns_per_op > 0 ? base / s.rows[i].ns_per_op : 0.0);
            if (col + item.size() > 99) {
                text += "\n     ";
                col = 5;
            }
            text += item;
            col += item.size();
        }
        out << text << "\n";
    }
    out << skipped_line(s.skipped);
}

void print_latency(std::ostream& out, const race_section& s, const calibration& cal) {
    out << "\n== " << s.workload << ": " << s.description << "\n   " << format_count(s.memory_ops)
        << " memory ops; ns per call, net of the timer\n";
    out << format("%-16s %-4s %7s %7s %7s %7s %8s %8s %9s\n", "allocator", "pass", "p50", "p90", "p99",
                  "p99.9", "p99.99", "p99.999", "max");
    static constexpr double qs[] = {50, 90, 99, 99.9, 99.99, 99.999};
    for (const race_row& r : s.rows) {
        for (int filtered = 0; filtered < 2; ++filtered) {
            std::vector<std::uint32_t> t = filtered ? r.result.ticks_filtered : r.result.ticks_raw;
            if (t.empty()) continue;
            std::sort(t.begin(), t.end());
            const std::span<const std::uint32_t> sorted(t);
            std::string v[6];
            for (int i = 0; i < 6; ++i)
                v[i] = latency_cell(cal.net_ns(static_cast<double>(percentile_sorted(sorted, qs[i]))),
                                    cal.resolution_ns());
            out << format(
                "%-16s %-4s %7s %7s %7s %7s %8s %8s %9s\n", filtered ? "" : r.result.allocator.c_str(),
                filtered ? "filt" : "raw", v[0].c_str(), v[1].c_str(), v[2].c_str(), v[3].c_str(),
                v[4].c_str(), v[5].c_str(),
                latency_cell(cal.net_ns(static_cast<double>(t.back())), cal.resolution_ns()).c_str());
        }
    }
    out << skipped_line(s.skipped);
}

void print_fragmentation(std::ostream& out, const race_section& s) {
    out << "\n== " << s.workload << ": " << s.description
        << "\n   largest free block (external fragmentation) at ten points of the run\n";
    bool any = false;
    for (const race_row& r : s.rows) {
        const auto& ser = r.result.series;
        if (!r.result.has_probe || ser.empty()) continue;
        any = true;
        out << "  " << r.result.allocator << "\n   ";
        for (int k = 1; k <= 10; ++k) {
            // Fewer than ten samples repeat some (the index must not fall below 0).
            const memory_sample& m =
                ser[std::max<std::size_t>(1, (ser.size() * static_cast<std::size_t>(k)) / 10) - 1];
            const double frag =
                m.free_bytes ? 1.0 - static_cast<double>(m.largest_free) / static_cast<double>(m.free_bytes)
                             : 0.0;
            out << format(" %s(%.0f%%)", format_bytes(m.largest_free).c_str(), frag * 100)
                << (k == 5 ? "\n   " : "");
        }
        out << format("\n    footprint peak %s, worst fragmentation %.0f%%\n",
                      format_bytes(r.result.peak_footprint).c_str(), r.worst_frag * 100);
    }
    if (!any) out << "   (no allocator here reports its free space)\n";
    out << skipped_line(s.skipped);
}

namespace {

/// Log-binned histogram: 8 bins per doubling from 1 ns; bin i covers [2^(i/8), 2^((i+1)/8)) ns.
std::vector<std::uint64_t> histogram(const std::vector<std::uint32_t>& ticks, const calibration& cal) {
    std::vector<std::uint64_t> bins;
    for (const std::uint32_t t : ticks) {
        const double ns = std::max(1.0, cal.net_ns(t));
        const auto i = static_cast<std::size_t>(std::floor(std::log2(ns) * 8));
        if (i >= bins.size()) bins.resize(i + 1, 0);
        ++bins[i];
    }
    return bins;
}

template <class T>
void json_array(std::ostream& out, const std::vector<T>& v) {
    out << '[';
    for (std::size_t i = 0; i < v.size(); ++i)
        out << (i ? "," : "") << v[i];
    out << ']';
}

/// Writes `v`, or null when `known` is false.
template <class T>
void or_null(std::ostream& out, bool known, const T& v) {
    if (known)
        out << v;
    else
        out << "null";
}

/// Writes one field of every sample as an array, or null when `known` is false.
template <class T>
void series(std::ostream& out, bool known, const std::vector<memory_sample>& ser, T memory_sample::*field) {
    if (!known) {
        out << "null";
        return;
    }
    out << '[';
    for (std::size_t i = 0; i < ser.size(); ++i)
        out << (i ? "," : "") << ser[i].*field;
    out << ']';
}

void tail_points(std::ostream& out, std::vector<std::uint32_t> ticks, const calibration& cal) {
    // The CDF's tail: latency at 1 - 10^-k for k = 0.5 .. 6 in steps of 0.25, as [fraction, ns].
    std::sort(ticks.begin(), ticks.end());
    out << '[';
    bool first = true;
    for (double k = 0.25; k <= 6.0001 && !ticks.empty(); k += 0.25) {
        const double q = 100.0 * (1.0 - std::pow(10.0, -k));
        if (static_cast<double>(ticks.size()) * std::pow(10.0, -k) < 1.0) break; // past the data
        out << (first ? "" : ",") << '[' << q << ','
            << cal.net_ns(static_cast<double>(percentile_sorted(std::span<const std::uint32_t>(ticks), q)))
            << ']';
        first = false;
    }
    out << ']';
}

} // namespace

void write_race_json(std::ostream& out, const std::vector<race_section>& sections, const calibration& cal,
                     const std::string& title) {
    out << "{\"title\":" << json_quote(title) << ",\"timer\":{\"counter\":" << json_quote(cal.counter)
        << ",\"ns_per_tick\":" << cal.ns_per_tick << ",\"overhead_ns\":" << cal.overhead_ns()
        << ",\"resolution_ns\":" << cal.resolution_ns()
        << "},\"histogram_bins_per_doubling\":8,\"workloads\":[";
    for (std::size_t si = 0; si < sections.size(); ++si) {
        const race_section& s = sections[si];
        out << (si ? "," : "") << "{\"name\":" << json_quote(s.workload)
            << ",\"description\":" << json_quote(s.description) << ",\"memory_ops\":" << s.memory_ops
            << ",\"peak_live_bytes\":" << s.peak_live_bytes << ",\"peak_live_blocks\":" << s.peak_live_blocks
            << ",\"threads\":" << s.threads << ",\"streamed\":" << (s.streamed ? "true" : "false")
            << ",\"skipped\":[";
        for (std::size_t i = 0; i < s.skipped.size(); ++i)
            out << (i ? "," : "") << json_quote(s.skipped[i]);
        out << "],\"allocators\":[";
        for (std::size_t ri = 0; ri < s.rows.size(); ++ri) {
            const race_row& r = s.rows[ri];
            out << (ri ? "," : "") << "{\"name\":" << json_quote(r.result.allocator)
                << ",\"description\":" << json_quote(r.description) << ",\"kind\":\"" << kind_name(kind_of(r))
                << "\",\"ns_per_op\":" << r.ns_per_op << ",\"failed\":" << r.result.failed
                << ",\"latency_raw\":{\"p50\":" << json_number{r.p50} << ",\"p99\":" << json_number{r.p99}
                << ",\"p99.9\":" << json_number{r.p999} << ",\"p99.99\":" << json_number{r.p9999}
                << ",\"max\":" << json_number{r.max}
                << "},\"latency_filtered\":{\"passes\":" << r.result.latency_passes
                << ",\"p50\":" << json_number{r.f_p50} << ",\"p99\":" << json_number{r.f_p99}
                << ",\"p99.9\":" << json_number{r.f_p999} << ",\"p99.99\":" << json_number{r.f_p9999}
                << ",\"max\":" << json_number{r.f_max} << "},\"histogram_raw\":";
            json_array(out, histogram(r.result.ticks_raw, cal));
            out << ",\"histogram_filtered\":";
            json_array(out, histogram(r.result.ticks_filtered, cal));
            out << ",\"tail_raw\":";
            tail_points(out, r.result.ticks_raw, cal);
            out << ",\"tail_filtered\":";
            tail_points(out, r.result.ticks_filtered, cal);
            out << ",\"peak_footprint\":";
            or_null(out, r.result.has_footprint, r.result.peak_footprint);
            out << ",\"internal_waste\":";
            or_null(out, r.waste >= 0, r.waste);
            out << ",\"worst_fragmentation\":";
            or_null(out, r.worst_frag >= 0, r.worst_frag);
            const auto& ser = r.result.series;
            out << ",\"series\":{\"op\":";
            series(out, true, ser, &memory_sample::op);
            out << ",\"live_bytes\":";
            series(out, true, ser, &memory_sample::live_bytes);
            out << ",\"footprint\":";
            series(out, r.result.has_footprint, ser, &memory_sample::footprint);
            out << ",\"largest_free\":";
            series(out, r.result.has_probe, ser, &memory_sample::largest_free);
            out << ",\"free_bytes\":";
            series(out, r.result.has_probe, ser, &memory_sample::free_bytes);
            out << "}}";
        }
        out << "]}";
    }
    out << "],\"summary\":";
    write_race_summary_json(out, summarize_race(sections));
    out << "}\n";
}

} // namespace strata::lab
