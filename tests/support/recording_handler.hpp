#pragma once
// A violation handler for tests: records every report instead of aborting, so a test can assert
// exactly which violation (kind, reporter) an allocator raised for a bad call.
#include <string>
#include <vector>

#include "strata/core/check.hpp"

namespace strata::test {

struct recorded_violation {
    violation_kind kind;
    std::string allocator;
    const void* pointer;
    std::string message;
    std::string file; ///< where the violation says it happened (the allocation site for leaks)
    unsigned line;
};

/// Installs itself for its lifetime; not thread-safe (tests that record run on one thread).
class recording_handler {
public:
    recording_handler() noexcept : previous_(set_violation_handler(&record)) { current() = this; }
    ~recording_handler() {
        set_violation_handler(previous_);
        current() = nullptr;
    }
    recording_handler(const recording_handler&) = delete;
    recording_handler& operator=(const recording_handler&) = delete;

    [[nodiscard]] const std::vector<recorded_violation>& all() const noexcept { return seen_; }
    [[nodiscard]] std::size_t count() const noexcept { return seen_.size(); }
    [[nodiscard]] bool empty() const noexcept { return seen_.empty(); }
    [[nodiscard]] const recorded_violation& last() const { return seen_.back(); }
    [[nodiscard]] const recorded_violation& at(std::size_t i) const { return seen_.at(i); }
    void clear() noexcept { seen_.clear(); }

    /// Returns: true when exactly one violation of `kind` was recorded since the last clear().
    [[nodiscard]] bool saw_one(violation_kind kind) const noexcept {
        return seen_.size() == 1 && seen_.front().kind == kind;
    }

private:
    static recording_handler*& current() noexcept {
        static recording_handler* instance = nullptr;
        return instance;
    }
    static void record(const violation& v) {
        if (recording_handler* self = current()) {
            self->seen_.push_back({v.kind, v.allocator ? v.allocator : "", v.pointer,
                                   v.message ? v.message : "", v.where.file_name(),
                                   static_cast<unsigned>(v.where.line())});
        }
    }

    violation_handler previous_;
    std::vector<recorded_violation> seen_;
};

/// True when this test binary was compiled with checks that report violations.
inline constexpr bool checks_on = STRATA_CHECKS >= 1;

} // namespace strata::test

/// Skips the current test when violations are not reported at this checks level.
#define STRATA_REQUIRE_CHECKS(level)                                                                         \
    do {                                                                                                     \
        if (STRATA_CHECKS < (level)) GTEST_SKIP() << "needs STRATA_CHECKS >= " #level;                       \
    } while (0)
