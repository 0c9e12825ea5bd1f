#include "trace_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

namespace strata::trace {

trace_summary summarize(const std::string& path) {
    trace_summary s;
    trace_reader reader(path);
    s.header = reader.header();
    std::unordered_map<std::uint64_t, std::uint64_t> live; // id -> size
    std::set<std::uint32_t> threads;
    std::uint64_t bytes = 0;
    for (record r; reader.next(r);) {
        ++s.by_op[r.kind & 15u];
        threads.insert(r.thread);
        s.duration_ns = std::max(s.duration_ns, r.time_ns);
        if ((r.flags & flag_failed) != 0) {
            ++s.failed;
            continue;
        }
        const auto kind = static_cast<op>(r.kind);
        if (kind == op::free || (kind == op::realloc && r.old_id != 0)) {
            const std::uint64_t gone = kind == op::free ? r.id : r.old_id;
            const auto it = live.find(gone);
            if (it != live.end()) {
                bytes -= it->second;
                live.erase(it);
            } else {
                ++s.unknown_frees;
            }
        }
        if (kind != op::free && r.id != 0) {
            live.emplace(r.id, r.size);
            bytes += r.size;
            s.peak_live_bytes = std::max(s.peak_live_bytes, bytes);
            s.peak_live_blocks = std::max<std::uint64_t>(s.peak_live_blocks, live.size());
        }
    }
    s.reader = reader.stats();
    s.threads = threads.size();
    s.end_live_blocks = live.size();
    std::error_code ec;
    s.file_bytes = std::filesystem::file_size(path, ec);
    return s;
}

std::string to_text(const trace_summary& s) {
    static const char* const names[] = {"?",       "malloc",         "free",     "calloc", "realloc",
                                        "aligned", "posix_memalign", "memalign", "valloc", "pvalloc"};
    std::string out;
    char line[256];
    std::string command(s.header.command, strnlen(s.header.command, sizeof s.header.command));
    for (char& c : command)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    std::snprintf(line, sizeof line, "command   %s\npid       %u\n", command.c_str(), s.header.pid);
    out += line;
    std::snprintf(
        line, sizeof line, "records   %llu in %.3f s, %llu threads, file %llu bytes (%.2f bytes/record)\n",
        static_cast<unsigned long long>(s.reader.records), static_cast<double>(s.duration_ns) * 1e-9,
        static_cast<unsigned long long>(s.threads), static_cast<unsigned long long>(s.file_bytes),
        s.reader.records ? static_cast<double>(s.file_bytes) / static_cast<double>(s.reader.records) : 0.0);
    out += line;
    out += "calls    ";
    for (std::size_t i = 1; i < std::size(names); ++i) {
        if (s.by_op[i] == 0) continue;
        std::snprintf(line, sizeof line, " %s %llu", names[i], static_cast<unsigned long long>(s.by_op[i]));
        out += line;
    }
    out += "\n";
    std::snprintf(
        line, sizeof line,
        "live      peak %llu bytes in %llu blocks; %llu blocks live at the end; %llu failed calls\n",
        static_cast<unsigned long long>(s.peak_live_bytes),
        static_cast<unsigned long long>(s.peak_live_blocks),
        static_cast<unsigned long long>(s.end_live_blocks), static_cast<unsigned long long>(s.failed));
    out += line;
    if (s.reader.gaps != 0 || s.reader.out_of_order != 0 || s.reader.truncated || s.unknown_frees != 0) {
        std::snprintf(line, sizeof line,
                      "warnings  %llu lost records, %llu out of order, %s, %llu frees or reallocs of "
                      "unrecorded blocks\n",
                      static_cast<unsigned long long>(s.reader.gaps),
                      static_cast<unsigned long long>(s.reader.out_of_order),
                      s.reader.truncated ? "truncated" : "complete",
                      static_cast<unsigned long long>(s.unknown_frees));
        out += line;
    }
    return out;
}

} // namespace strata::trace
