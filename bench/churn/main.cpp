// strata-churn: runs the W1/W2/W3 churn workloads (and, when asked, W4) through the lab's
// contenders (strata_lab_core's op_registry()) and this bench's own (bench_contenders.hpp).
//
//   strata-churn [--workload w1,w2,w3,w4] [--only NAME,...] [--label NAME] [--pairs N] [--repeats R]
//                [--latency-runs K] [--warmup W] [--seed S] [--jsonl FILE] [--list]
//
// Per (contender, workload) it prints ns per free+allocate pair (median of R throughput passes, no
// per-call timers; the live set's fill and drain untimed) and per-call latency percentiles: "raw"
// from one timed pass, "filtered" as the per-operation minimum over K identical passes (this VM
// stalls at random; a stall hits one pass, not all K, so the minimum removes it while a tail the
// allocator itself produces survives). A contender's check(), where it has one, runs after every
// pass. `--label` renames the "malloc" contender (bench/churn/peers.sh sets it to the LD_PRELOADed
// malloc).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bench_contenders.hpp"
#include "churn.hpp"

namespace {

using namespace strata::churn;
using strata::lab::op_contender;

std::string tail_json(const tail& t) {
    char buf[256];
    std::snprintf(buf, sizeof buf, R"({"p50":%.1f,"p99":%.1f,"p99.9":%.1f,"p99.99":%.1f,"max":%.1f})", t.p50,
                  t.p99, t.p999, t.p9999, t.max);
    return buf;
}

int usage(const char* argv0) {
    std::fprintf(
        stderr,
        "usage: %s [--workload w1,w2,w3,w4] [--only NAME,...] [--label NAME] [--pairs N] [--repeats R]\n"
        "          [--latency-runs K] [--warmup W] [--seed S] [--jsonl FILE] [--list]\n",
        argv0);
    return 2;
}

const std::vector<op_contender>& contenders() {
    static const std::vector<op_contender> r = strata::lab::with_bench_contenders(strata::lab::op_registry());
    return r;
}

/// Returns: ticks[first], ticks[first + 2], ...: one op of every pair (free: first = live, allocate:
/// first = live + 1).
std::vector<std::uint32_t> every_other(const std::vector<std::uint32_t>& ticks, std::size_t first,
                                       std::size_t pairs) {
    std::vector<std::uint32_t> out;
    out.reserve(pairs);
    for (std::size_t i = 0; i < pairs && first + 2 * i < ticks.size(); ++i)
        out.push_back(ticks[first + 2 * i]);
    return out;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> workloads{"w1", "w2", "w3"};
    std::vector<std::string> only;
    std::string label = "malloc";
    std::string jsonl;
    std::size_t pairs = default_pairs;
    std::uint64_t seed = default_seed;
    int repeats = 5, latency_runs = 5, warmup = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "strata-churn: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--workload")
            workloads = split_list(value());
        else if (a == "--only")
            only = split_list(value());
        else if (a == "--label")
            label = value();
        else if (a == "--pairs")
            pairs = std::stoull(value());
        else if (a == "--repeats")
            repeats = std::stoi(value());
        else if (a == "--latency-runs")
            latency_runs = std::stoi(value());
        else if (a == "--warmup")
            warmup = std::stoi(value());
        else if (a == "--seed")
            seed = std::stoull(value(), nullptr, 0);
        else if (a == "--jsonl")
            jsonl = value();
        else if (a == "--list") {
            for (const auto& c : contenders())
                std::printf("%-22s %s\n", c.name.c_str(), c.description.c_str());
            return 0;
        } else
            return usage(argv[0]);
    }
    if (pairs == 0 || repeats < 1 || latency_runs < 0 || warmup < 0) return usage(argv[0]);

    const auto cal = strata::lab::calibrate();
    std::ofstream json_out;
    if (!jsonl.empty()) json_out.open(jsonl, std::ios::app);

    std::printf("%-16s %-3s %9s %9s | %-38s | %-38s\n", "contender", "wl", "ns/pair", "min",
                "alloc ns p50/p99/p99.99 filt (raw p99.99)", "free ns p50/p99/p99.99 filt (raw p99.99)");
    int status = 0;
    for (const auto& wname : workloads) {
        op_workload w;
        try {
            w = make_op_workload(wname, pairs, seed);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s\n", e.what());
            return 2;
        }
        const std::size_t live = pairs_of(w).live();
        strata::lab::replay_options o;
        o.warmup = warmup;
        o.repeats = repeats;
        o.latency_passes = latency_runs;
        o.sampling = false;
        o.timed_begin = live;
        o.timed_end = live + 2 * pairs;
        for (const auto& c : contenders()) {
            if (!only.empty() && std::find(only.begin(), only.end(), c.name) == only.end()) continue;
            if (!c.applies(w)) continue;
            const std::string name = c.name == "malloc" ? label : c.name;
            strata::lab::replay_result r;
            try {
                r = c.run(w, o);
            } catch (const std::exception& e) {
                std::printf("%-16s %-3s FAILED: %s\n", name.c_str(), w.name.c_str(), e.what());
                status = 1;
                continue;
            }
            if (r.failed != 0 || r.check_failures != 0) {
                std::printf("%-16s %-3s FAILED: %llu allocations failed, check() failed after %llu passes\n",
                            name.c_str(), w.name.c_str(), static_cast<unsigned long long>(r.failed),
                            static_cast<unsigned long long>(r.check_failures));
                status = 1;
                continue;
            }
            std::vector<double> seconds = r.seconds;
            std::sort(seconds.begin(), seconds.end());
            const double per = 1e9 / static_cast<double>(pairs);
            const double median = (seconds[(seconds.size() - 1) / 2] + seconds[seconds.size() / 2]) / 2 * per,
                         best = seconds.front() * per;
            const tail fa = percentiles(every_other(r.ticks_filtered, live + 1, pairs), cal),
                       ff = percentiles(every_other(r.ticks_filtered, live, pairs), cal);
            const tail ra = percentiles(every_other(r.ticks_raw, live + 1, pairs), cal),
                       rf = percentiles(every_other(r.ticks_raw, live, pairs), cal);
            char a_col[64] = "-", f_col[64] = "-"; // --latency-runs 0: no per-call timings were taken
            if (latency_runs > 0) {
                std::snprintf(a_col, sizeof a_col, "%.0f/%.0f/%.0f (%.0f)", fa.p50, fa.p99, fa.p9999,
                              ra.p9999);
                std::snprintf(f_col, sizeof f_col, "%.0f/%.0f/%.0f (%.0f)", ff.p50, ff.p99, ff.p9999,
                              rf.p9999);
            }
            std::printf("%-16s %-3s %9.2f %9.2f | %-38s | %-38s\n", name.c_str(), w.name.c_str(), median,
                        best, a_col, f_col);
            std::fflush(stdout);
            if (json_out) {
                json_out << R"({"contender":")" << name << R"(","workload":")" << w.name << R"(","pairs":)"
                         << pairs << R"(,"ns_per_pair":)" << median << R"(,"ns_per_pair_min":)" << best
                         << R"(,"latency_runs":)" << latency_runs;
                if (latency_runs > 0)
                    json_out << R"(,"alloc_filtered":)" << tail_json(fa) << R"(,"free_filtered":)"
                             << tail_json(ff) << R"(,"alloc_raw":)" << tail_json(ra) << R"(,"free_raw":)"
                             << tail_json(rf);
                json_out << R"(,"timer_overhead_ns":)" << cal.overhead_ns() << "}\n";
            }
        }
    }
    return status;
}
