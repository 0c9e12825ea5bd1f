#pragma once
// strata-lab text: numbers and byte counts for the tables, allocator name patterns, and text
// hygiene. Workload names and descriptions can come from a recorded program (a trace's file name and
// command line), so they may hold bytes that are not UTF-8 or that a terminal reads as escape
// sequences. Everything the lab prints or writes as JSON goes through here.
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <ostream>
#include <string>
#include <string_view>

namespace strata::lab {

/// A number for the JSON: written as `null` when it was not measured (NaN).
struct json_number {
    double v;
    friend std::ostream& operator<<(std::ostream& out, json_number n) {
        return std::isnan(n.v) ? out << "null" : out << n.v;
    }
};

/// Returns: `bytes` as "123 B", "12.3 KiB", "1.23 MiB" or "1.23 GiB".
[[nodiscard]] inline std::string format_bytes(std::size_t bytes) {
    char buf[32];
    const double b = static_cast<double>(bytes);
    if (bytes < 1024) {
        std::snprintf(buf, sizeof buf, "%zu B", bytes);
    } else if (bytes < (std::size_t{1} << 20)) {
        std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
    } else if (bytes < (std::size_t{1} << 30)) {
        std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024.0));
    } else {
        std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
    }
    return buf;
}

/// Returns: `n` with thousands separators, e.g. "1,200,000".
[[nodiscard]] inline std::string format_count(std::size_t n) {
    const std::string digits = std::to_string(n);
    std::string out;
    const std::size_t lead = digits.size() % 3;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (i % 3) == lead % 3) out += ',';
        out += digits[i];
    }
    return out;
}

/// Returns: true when `name` matches `pattern`, where '*' matches any run of characters and '?'
/// any one character; without wildcards this is plain equality. (--only's allocator patterns.)
[[nodiscard]] inline bool glob_match(std::string_view pattern, std::string_view name) noexcept {
    std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
    while (n < name.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p;
            ++n;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = n;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            n = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*')
        ++p;
    return p == pattern.size();
}

/// Returns: the length (2 to 4) of the well-formed UTF-8 sequence that starts at `v[i]`, a byte of
/// 0x80 or above; 0 when it is not one (a stray continuation, an overlong form, a surrogate, past
/// U+10FFFF, or cut short).
[[nodiscard]] inline std::size_t utf8_sequence(std::string_view v, std::size_t i) noexcept {
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(v[k]); };
    const unsigned char c = at(i);
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF; // the range of the second byte (Unicode Table 3-7)
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (i + n > v.size() || at(i + 1) < lo || at(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if ((at(i + k) & 0xC0) != 0x80) return 0;
    return n;
}

/// Returns: `v` with each well-formed UTF-8 sequence copied, each other byte of 0x80 or above
/// replaced by `bad`, and each ASCII byte passed to `ascii(out, byte)`.
template <class Ascii>
[[nodiscard]] std::string map_text(std::string_view v, std::string_view bad, Ascii&& ascii) {
    std::string s;
    s.reserve(v.size() + 2);
    for (std::size_t i = 0; i < v.size();) {
        const auto c = static_cast<unsigned char>(v[i]);
        if (c < 0x80) {
            ascii(s, c);
            ++i;
        } else if (const std::size_t n = utf8_sequence(v, i)) {
            s += v.substr(i, n);
            i += n;
        } else {
            s += bad;
            ++i;
        }
    }
    return s;
}

/// Effects: appends ASCII byte `c` to `s` as it must appear inside a JSON string.
inline void json_escape_ascii(std::string& s, unsigned char c) {
    if (c == '"' || c == '\\') {
        s += '\\';
        s += static_cast<char>(c);
    } else if (c == '\n') {
        s += "\\n";
    } else if (c == '\t') {
        s += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
        s += buf;
    } else {
        s += static_cast<char>(c);
    }
}

/// Returns: `v` as a JSON string literal: quotes, backslashes and control characters escaped, each
/// byte that is not part of well-formed UTF-8 replaced by U+FFFD, so the document always parses.
[[nodiscard]] inline std::string json_quote(std::string_view v) {
    return '"' + map_text(v, "\\ufffd", json_escape_ascii) + '"';
}

/// Returns: `v` safe to print: control characters (ESC, CR, ...) as '?', bytes that are not part of
/// well-formed UTF-8 as U+FFFD.
[[nodiscard]] inline std::string printable(std::string_view v) {
    return map_text(v, "\xEF\xBF\xBD", [](std::string& s, unsigned char c) {
        s += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
    });
}

/// Effects: writes `doc` (a command's --json document) to stdout when `path` is "-", else to the
/// file `path`. Returns: 0, or 1 with a message on stderr when the file cannot be written.
inline int write_document(const std::string& path, const std::string& doc) {
    if (path == "-") {
        std::cout << doc;
        return 0;
    }
    std::ofstream f(path);
    f << doc;
    f.close(); // flushes: a write error shows only then
    if (f) return 0;
    std::cerr << "strata-lab: cannot write " << path << "\n";
    return 1;
}

} // namespace strata::lab
