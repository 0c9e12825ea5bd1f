#include "session.hpp"

#include <chrono>
#include <cstdio>
#include <string>

#include "metrics.hpp"

namespace strata::lab {

namespace {

void show_progress(bool on, std::size_t step, std::size_t steps, const std::string& what) {
    if (!on) return;
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", step, steps, what.c_str());
    std::fflush(stderr);
}

void end_progress(bool on) {
    if (!on) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
}

} // namespace

run_report run_session(const workload& w, std::span<const contestant* const> who, const calibration& timer,
                       const session_options& options) {
    run_report report;
    report.config = w.config;
    report.total_allocs = w.total_allocs();
    report.timed_allocs = w.timed_allocs;
    report.min_frame_allocs = w.min_frame_allocs;
    report.max_frame_allocs = w.max_frame_allocs;
    report.max_frame_bytes = w.max_frame_bytes;
    report.repeats = options.repeats < 1 ? 1 : options.repeats;
    report.timer = timer;
    report.build = current_build();

    const auto start = std::chrono::steady_clock::now();
    const std::size_t steps = who.size() * (1 + static_cast<std::size_t>(report.repeats));
    std::size_t step = 0;

    for (const contestant* c : who) {
        show_progress(options.progress, ++step, steps, c->name + ": latency pass");
        pass_result pass = c->run(w, pass_kind::latency);
        contestant_result r;
        r.name = c->name;
        r.description = c->description;
        r.latency_ticks = summarize(pass.latency_ticks);
        r.memory = pass.memory;
        r.failed_allocs = pass.failed_allocs;
        report.results.push_back(std::move(r));
    }
    for (int rep = 0; rep < report.repeats; ++rep) {
        for (std::size_t i = 0; i < who.size(); ++i) {
            show_progress(options.progress, ++step, steps,
                          who[i]->name + ": throughput pass " + std::to_string(rep + 1));
            const pass_result pass = who[i]->run(w, pass_kind::throughput);
            const double ns =
                pass.timed_allocs ? pass.loop_seconds * 1e9 / static_cast<double>(pass.timed_allocs) : 0;
            report.results[i].pass_ns_per_alloc.push_back(ns);
        }
    }
    for (auto& r : report.results)
        r.ns_per_alloc = median(r.pass_ns_per_alloc);
    end_progress(options.progress);
    report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report;
}

} // namespace strata::lab
