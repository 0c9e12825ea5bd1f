#include "race_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <utility>

#include "peer_contenders.hpp" // is_peer
#include "text.hpp"            // json_quote, json_number

namespace strata::lab {

contender_kind kind_of(const race_row& r) {
    const std::string& name = r.result.allocator;
    if (name == "malloc") return contender_kind::malloc;
    if (is_peer(name)) return contender_kind::peer;
    if (r.description.rfind("strata::", 0) == 0) return contender_kind::strata;
    return contender_kind::other;
}

const char* kind_name(contender_kind k) noexcept {
    switch (k) {
    case contender_kind::strata: return "strata";
    case contender_kind::peer: return "peer";
    case contender_kind::malloc: return "malloc";
    case contender_kind::other: break;
    }
    return "other";
}

std::vector<summary_row> summarize_race(const std::vector<race_section>& sections) {
    constexpr double none = std::numeric_limits<double>::quiet_NaN();
    std::vector<summary_row> rows;
    for (const race_section& s : sections) {
        const race_row* best[3] = {nullptr, nullptr, nullptr}; // strata, peer, malloc
        for (const race_row& r : s.rows) {
            if (r.result.failed != 0 || r.ns_per_op <= 0) continue;
            const contender_kind k = kind_of(r);
            const int i = k == contender_kind::strata   ? 0
                          : k == contender_kind::peer   ? 1
                          : k == contender_kind::malloc ? 2
                                                        : -1;
            if (i >= 0 && (best[i] == nullptr || r.ns_per_op < best[i]->ns_per_op)) best[i] = &r;
        }
        if (best[0] == nullptr) continue;
        summary_row row;
        row.workload = s.workload;
        row.strata = best[0]->result.allocator;
        row.strata_ns = best[0]->ns_per_op;
        row.strata_tail = best[0]->f_p9999;
        row.malloc_ns = best[2] ? best[2]->ns_per_op : none;
        row.malloc_tail = best[2] ? best[2]->f_p9999 : none;
        row.peer = best[1] ? best[1]->result.allocator : "";
        row.peer_ns = best[1] ? best[1]->ns_per_op : none;
        row.peer_tail = best[1] ? best[1]->f_p9999 : none;
        row.vs_malloc = row.malloc_ns / row.strata_ns; // NaN when malloc is absent
        row.vs_peer = row.peer_ns / row.strata_ns;
        rows.push_back(std::move(row));
    }
    return rows;
}

namespace {

std::string cell(const char* fmt, double v) {
    if (std::isnan(v)) return "-";
    char b[64];
    std::snprintf(b, sizeof b, fmt, v);
    return b;
}

std::string tail_cell(double v, double resolution_ns) {
    if (std::isnan(v)) return "-";
    if (v < resolution_ns) return cell("<%.0f", resolution_ns);
    return cell("%.0f", v);
}

} // namespace

void print_race_summary(std::ostream& out, const std::vector<summary_row>& rows, double resolution_ns) {
    if (rows.empty()) return;
    out << "\n== summary: the fastest strata allocator per workload against malloc and the fastest peer\n"
           "   (speed = their ns/op over strata's: above 1x strata is faster; tail = filtered p99.99, ns)\n";
    // The workload column fits the longest name (a trace's file name), at most 40 characters.
    int w = 13;
    for (const summary_row& r : rows)
        w = std::max(w, static_cast<int>(std::min<std::size_t>(r.workload.size(), 40)));
    char line[256];
    std::snprintf(line, sizeof line, "%-*s %-12s %7s %9s %-9s %8s %20s\n", w, "workload", "strata", "ns/op",
                  "vs malloc", "peer", "vs peer", "tail strata/mal/peer");
    out << line;
    for (const summary_row& r : rows) {
        const std::string tails = tail_cell(r.strata_tail, resolution_ns) + "/" +
                                  tail_cell(r.malloc_tail, resolution_ns) + "/" +
                                  tail_cell(r.peer_tail, resolution_ns);
        std::snprintf(line, sizeof line, "%-*.*s %-12s %7.1f %9s %-9s %8s %20s\n", w, w, r.workload.c_str(),
                      r.strata.c_str(), r.strata_ns, cell("%.2fx", r.vs_malloc).c_str(),
                      r.peer.empty() ? "-" : r.peer.c_str(), cell("%.2fx", r.vs_peer).c_str(), tails.c_str());
        out << line;
    }
}

void write_race_summary_json(std::ostream& out, const std::vector<summary_row>& rows) {
    out << '[';
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const summary_row& r = rows[i];
        const std::string peer = r.peer.empty() ? std::string("null") : json_quote(r.peer);
        out << (i ? "," : "") << "{\"workload\":" << json_quote(r.workload)
            << ",\"strata\":" << json_quote(r.strata) << ",\"strata_ns_per_op\":" << json_number{r.strata_ns}
            << ",\"malloc_ns_per_op\":" << json_number{r.malloc_ns} << ",\"peer\":" << peer
            << ",\"peer_ns_per_op\":" << json_number{r.peer_ns}
            << ",\"speed_vs_malloc\":" << json_number{r.vs_malloc}
            << ",\"speed_vs_peer\":" << json_number{r.vs_peer}
            << ",\"strata_p99.99f\":" << json_number{r.strata_tail}
            << ",\"malloc_p99.99f\":" << json_number{r.malloc_tail}
            << ",\"peer_p99.99f\":" << json_number{r.peer_tail} << '}';
    }
    out << ']';
}

std::string skipped_line(const std::vector<std::string>& skipped) {
    if (skipped.empty()) return {};
    // (reason, names) in the order each reason first appears.
    std::vector<std::pair<std::string, std::string>> groups;
    for (const std::string& k : skipped) {
        const std::size_t open = k.find(" (");
        const std::string name = k.substr(0, open);
        std::string why = open == std::string::npos ? std::string() : k.substr(open + 2);
        if (!why.empty() && why.back() == ')') why.pop_back();
        if (why.rfind("needs: ", 0) == 0) why.erase(0, 7);
        auto it = groups.begin();
        while (it != groups.end() && it->first != why)
            ++it;
        if (it == groups.end())
            groups.emplace_back(why, name);
        else
            it->second += ", " + name;
    }
    // Wrapped before 100 columns (the tables' width), between groups.
    std::string text = "   skipped:";
    std::size_t col = text.size();
    for (std::size_t i = 0; i < groups.size(); ++i) {
        std::string item = groups[i].second;
        if (!groups[i].first.empty()) item += " (" + groups[i].first + ")";
        item += i + 1 < groups.size() ? ";" : "";
        if (i > 0 && col + 1 + item.size() > 99) {
            text += "\n     ";
            col = 5;
        } else {
            text += ' ';
            ++col;
        }
        text += item;
        col += item.size();
    }
    return text + "\n";
}

} // namespace strata::lab
