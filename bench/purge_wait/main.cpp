// strata-purge-wait: how long one thread's frame purges make another thread's calls wait.
//
//   strata-purge-wait [--tier span,medium] [--budget-us U,...] [--runs N] [--mib M]
//
// For each tier and budget, N runs (default 5) of: an engine_heap holding M MiB (default 400) of
// freed, written, decayed blocks between live ones (span: 4 MiB large blocks beside 2 MiB ones;
// medium: 1 MiB blocks beside 80 KiB ones), then a main thread calling end_frame(budget) every
// 500 us until the backlog is purged, while a second thread mallocs and frees blocks of that tier
// (2-3 MiB, or 128-512 KiB) and times each pair. Prints per run the frames, the pairs, their
// 99.9th percentile and the worst one, and the median of the worst over the runs: a purge that
// holds a lock through its madvise shows up here as pairs as long as the budget.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "strata/engine/engine_heap.hpp"

#include "list_arg.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::size_t mib = std::size_t{1} << 20;

struct tier {
    const char* name;
    std::size_t freed_bytes;  // each block of the backlog
    std::size_t spacer_bytes; // the live block after it
    std::size_t call_min;     // the other thread's blocks: call_min + [0, call_span)
    std::size_t call_span;
};

constexpr tier tiers[] = {
    {"span", 4 * mib, 2 * mib, 2 * mib, mib},
    {"medium", mib, 80 * 1024, 128 * 1024, 384 * 1024},
};

struct run_result {
    unsigned frames = 0;
    std::size_t pairs = 0;
    double p999_us = 0;
    double worst_us = 0;
};

// Fills n bytes: every page resident.
char* written(strata::engine_heap& h, std::size_t n) {
    auto* p = static_cast<char*>(h.allocate(n));
    if (p != nullptr) std::memset(p, 1, n);
    return p;
}

run_result run_once(const tier& t, unsigned budget_us, std::size_t backlog_mib, unsigned seed) {
    strata::engine_options o;
    o.reserve_bytes = std::size_t{8} << 30;
    o.decay_ms = 50;
    o.retain_bytes = std::size_t{4} << 30; // no cap: the frames purge it all
    o.medium_retain_bytes = std::size_t{4} << 30;
    o.large_keep_bytes = 0; // the other thread's big blocks go through the span pool
    strata::engine_heap h(o);
    std::vector<char*> freed, spacers;
    for (std::size_t done = 0; done < backlog_mib * mib; done += t.freed_bytes) {
        freed.push_back(written(h, t.freed_bytes));
        spacers.push_back(written(h, t.spacer_bytes));
    }
    for (char* p : freed)
        h.deallocate(p);
    std::this_thread::sleep_for(std::chrono::milliseconds(2 * o.decay_ms)); // all of it decayed
    std::atomic<bool> done{false};
    std::vector<double> us;
    us.reserve(std::size_t{1} << 22);
    std::thread other([&] {
        std::uint64_t x = seed * 0x9E3779B97F4A7C15ull | 1;
        while (!done.load(std::memory_order_relaxed)) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            const std::size_t n = t.call_min + (x >> 20) % t.call_span;
            const auto t0 = clock_type::now();
            auto* p = static_cast<volatile char*>(h.allocate(n));
            if (p != nullptr) p[0] = 1;
            h.deallocate(const_cast<char*>(p));
            us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
        }
    });
    run_result r;
    const std::size_t left = 16 * mib;
    while (r.frames < 5000) {
        (void)h.end_frame(std::chrono::microseconds(budget_us));
        ++r.frames;
        const strata::engine_purge_stats s = h.purge_stats();
        if (r.frames > 1 && s.retained_span_bytes + s.retained_medium_bytes <= left) break;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    done.store(true);
    other.join();
    std::sort(us.begin(), us.end());
    r.pairs = us.size();
    if (!us.empty()) {
        r.p999_us = us[std::min(us.size() - 1, us.size() * 999 / 1000)];
        r.worst_us = us.back();
    }
    for (char* p : spacers)
        h.deallocate(p);
    return r;
}

using strata_bench::split_list;

int usage() {
    std::fprintf(stderr,
                 "usage: strata-purge-wait [--tier span,medium] [--budget-us U,...] [--runs N] [--mib M]\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> names{"span", "medium"};
    std::vector<unsigned> budgets{2000, 500};
    unsigned runs = 5;
    std::size_t backlog = 400;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        const std::string v = argv[++i];
        if (a == "--tier") {
            names = split_list(v);
        } else if (a == "--budget-us") {
            budgets.clear();
            for (const std::string& b : split_list(v))
                budgets.push_back(static_cast<unsigned>(std::stoul(b)));
        } else if (a == "--runs") {
            runs = std::max(1u, static_cast<unsigned>(std::stoul(v)));
        } else if (a == "--mib") {
            backlog = std::max<std::size_t>(1, std::stoull(v));
        } else {
            return usage();
        }
    }
    std::printf("%-7s %9s %7s %9s %10s %10s\n", "tier", "budget_us", "frames", "pairs", "p99.9_us",
                "worst_us");
    for (const std::string& name : names) {
        const tier* t = nullptr;
        for (const tier& c : tiers)
            if (name == c.name) t = &c;
        if (t == nullptr) return usage();
        for (const unsigned budget : budgets) {
            std::vector<double> worst;
            for (unsigned k = 0; k < runs; ++k) {
                const run_result r = run_once(*t, budget, backlog, k + 1);
                std::printf("%-7s %9u %7u %9zu %10.1f %10.1f\n", t->name, budget, r.frames, r.pairs,
                            r.p999_us, r.worst_us);
                worst.push_back(r.worst_us);
            }
            std::sort(worst.begin(), worst.end());
            std::printf("%-7s %9u   median of the worst over %u runs: %.1f us\n", t->name, budget, runs,
                        worst[worst.size() / 2]);
            std::fflush(stdout);
        }
    }
    return 0;
}
