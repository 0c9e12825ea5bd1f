#pragma once
// A one-line progress indicator on stderr for lab commands that run longer than a couple of
// seconds. It draws only when stderr is a terminal and the command's output is not JSON on stdout,
// so pipes, CI logs and `--json -` stay clean. Each call redraws the line with the seconds elapsed.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace strata::lab {

class progress_line {
public:
    /// Effects: a progress line that draws when `wanted` and stderr is a terminal.
    explicit progress_line(bool wanted) noexcept
        : on_(wanted && isatty(2) != 0), start_(std::chrono::steady_clock::now()) {}
    ~progress_line() { clear(); }
    progress_line(const progress_line&) = delete;
    progress_line& operator=(const progress_line&) = delete;

    /// Effects: replaces the line with "strata-lab: <text> (<s> s)".
    void operator()(const std::string& text) const {
        if (!on_) return;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        std::fprintf(stderr, "\r\033[Kstrata-lab: %s (%.0f s)", text.c_str(), s);
        std::fflush(stderr);
    }
    /// Effects: erases the line (before printing results to a terminal).
    void clear() const {
        if (!on_) return;
        std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
    }
    [[nodiscard]] bool on() const noexcept { return on_; }

private:
    bool on_;
    std::chrono::steady_clock::time_point start_;
};

} // namespace strata::lab
