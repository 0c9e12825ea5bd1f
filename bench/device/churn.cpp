// strata-device-bench churn: the strata-churn W1/W2 free+allocate pairs (bench/churn/churn.hpp, the
// identical seeded sequences) through offset_heap, tlsf and buddy's offsets API, each keeping its
// own handle. Contenders run interleaved, round by round, so a noisy stretch of the machine hits
// every contender alike; each round runs one throughput pass (no per-call timers) and one latency
// pass (every call timed) per contender. Reported per (contender, workload):
//
//   ns/pair     median over the rounds of the throughput passes (1,000,000 pairs each by default);
//               against tlsf: the median of the per-round ratios, and the ratio of the fastest passes
//   alloc p99.99 filtered: the per-operation minimum over all latency passes, then the percentile
//               (strata-churn's filter: a machine stall hits one pass, not all of them)
//   metadata    bytes per live allocation at steady state (sampled every 10,000 pairs of one pass)
//
//   strata-device-bench churn [--workload w1,w2] [--pairs N] [--rounds R] [--latency-runs K] [--seed S]
//
// The first K rounds (default 5, strata-churn's default) also run the latency pass.
//
// Count mode (bench/callgrind.py): `--strata_count=offset_heap/w1 --strata_fills=K` runs a
// 100,000-pair warm-up then K x 10,000 pairs through churn_alloc_loop<A>, which the timed pass
// shares, and prints "allocations=N".
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device_bench.hpp"

namespace strata::device_bench {

namespace {

/// The measured loop: `n` pairs from `ops`, each freeing a slot and refilling it. Out of line and
/// never specialised by IPA, so callgrind counts what is timed.
template <class A>
#if defined(__clang__)
__attribute__((noinline))
#else
__attribute__((noinline, noipa))
#endif
std::size_t
churn_alloc_loop(A& a, const pair_op* ops, std::size_t n, typename A::handle* slots, std::uint32_t* sizes) {
    std::size_t failures = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const pair_op op = ops[i];
        a.deallocate(slots[op.victim], sizes[op.victim]);
        const typename A::handle h = a.allocate(op.size);
        failures += A::ok(h) ? 0 : 1;
        A::touch(h, static_cast<std::uint32_t>(i));
        slots[op.victim] = h;
        sizes[op.victim] = op.size;
    }
    lab::compiler_barrier();
    return failures;
}

/// A contender with the workload's live set in place.
template <class A>
struct live_set {
    live_set(A& a, const workload& w) : a(a), slots(w.live()), sizes(w.initial) {
        for (std::size_t i = 0; i < w.live(); ++i) {
            slots[i] = a.allocate(w.initial[i]);
            if (!A::ok(slots[i])) throw churn::pass_error("allocation of the live set failed");
        }
    }
    ~live_set() {
        for (std::size_t i = 0; i < slots.size(); ++i)
            a.deallocate(slots[i], sizes[i]);
    }
    live_set(const live_set&) = delete;
    live_set& operator=(const live_set&) = delete;
    A& a;
    std::vector<typename A::handle> slots;
    std::vector<std::uint32_t> sizes;
};

/// Returns: seconds of the pair loop over all of `w`'s pairs.
template <class A>
double handle_throughput_pass(A& a, const workload& w) {
    double seconds = 0;
    {
        live_set<A> s(a, w);
        const auto t0 = std::chrono::steady_clock::now();
        const std::size_t failures =
            churn_alloc_loop(a, w.pairs.data(), w.pairs.size(), s.slots.data(), s.sizes.data());
        const auto t1 = std::chrono::steady_clock::now();
        if (failures != 0) throw churn::pass_error(std::to_string(failures) + " allocations failed");
        seconds = std::chrono::duration<double>(t1 - t0).count();
    }
    if (!a.check()) throw churn::pass_error("check() failed after the pass");
    return seconds;
}

/// strata-churn's latency pass with native handles: alloc_ticks[i] / free_ticks[i] keep the minimum
/// of themselves and this pass's raw ticks of pair i's allocate / deallocate.
template <class A>
[[gnu::noinline]] void handle_latency_pass(A& a, const workload& w, std::uint32_t* alloc_ticks,
                                           std::uint32_t* free_ticks) {
    {
        live_set<A> s(a, w);
        std::size_t failures = 0;
        for (std::uint32_t i = 0; i < w.pairs.size(); ++i) {
            const pair_op op = w.pairs[i];
            const typename A::handle victim = s.slots[op.victim];
            const std::uint64_t f0 = lab::tick_begin();
            a.deallocate(victim, s.sizes[op.victim]);
            const std::uint64_t f1 = lab::tick_end();
            const typename A::handle h = a.allocate(op.size);
            lab::do_not_optimize(&h);
            const std::uint64_t a1 = lab::tick_end();
            failures += A::ok(h) ? 0 : 1;
            A::touch(h, i);
            s.slots[op.victim] = h;
            s.sizes[op.victim] = op.size;
            const auto ft = static_cast<std::uint32_t>(std::min<std::uint64_t>(f1 - f0, UINT32_MAX));
            const auto at = static_cast<std::uint32_t>(std::min<std::uint64_t>(a1 - f1, UINT32_MAX));
            free_ticks[i] = std::min(free_ticks[i], ft);
            alloc_ticks[i] = std::min(alloc_ticks[i], at);
        }
        if (failures != 0) throw churn::pass_error(std::to_string(failures) + " allocations failed");
    }
    if (!a.check()) throw churn::pass_error("check() failed after the pass");
}

/// Returns: {mean, max} of metadata_per_live() sampled every 10,000 pairs after the first 100,000.
template <class A>
std::pair<double, double> metadata_pass(A& a, const workload& w) {
    live_set<A> s(a, w);
    double sum = 0, worst = 0;
    int samples = 0;
    constexpr std::size_t step = 10'000;
    for (std::size_t at = 0; at + step <= w.pairs.size(); at += step) {
        (void)churn_alloc_loop(a, w.pairs.data() + at, step, s.slots.data(), s.sizes.data());
        if (at + step < 100'000 && w.pairs.size() > 200'000) continue;
        const double m = a.metadata_per_live();
        sum += m;
        worst = std::max(worst, m);
        ++samples;
    }
    return {samples == 0 ? 0.0 : sum / samples, worst};
}

/// One contender's results on one workload, accumulated over the rounds.
struct result {
    std::string name;
    std::vector<double> seconds;
    std::vector<std::uint32_t> alloc_ticks, free_ticks, raw_alloc, raw_free;
    double meta_mean = 0, meta_max = 0;
};

/// A type-erased contender: made once per workload, then one round at a time.
struct runner {
    virtual ~runner() = default;
    virtual void round(const workload& w, result& r, bool latency) = 0;
    virtual void metadata(const workload& w, result& r) = 0;
};

template <class A>
struct runner_of final : runner {
    explicit runner_of(const workload& w) : a(std::make_unique<A>(w)) {
        (void)handle_throughput_pass(*a, w); // warm-up: faults the memory, reaches the steady layout
    }
    void round(const workload& w, result& r, bool latency) override {
        r.seconds.push_back(handle_throughput_pass(*a, w));
        if (!latency) return;
        if (r.alloc_ticks.empty()) {
            r.alloc_ticks.assign(w.pairs.size(), UINT32_MAX);
            r.free_ticks.assign(w.pairs.size(), UINT32_MAX);
        }
        handle_latency_pass(*a, w, r.alloc_ticks.data(), r.free_ticks.data());
        if (r.raw_alloc.empty()) {
            r.raw_alloc = r.alloc_ticks;
            r.raw_free = r.free_ticks;
        }
    }
    void metadata(const workload& w, result& r) override {
        const auto [mean, worst] = metadata_pass(*a, w);
        r.meta_mean = mean;
        r.meta_max = worst;
    }
    std::unique_ptr<A> a;
};

// Count mode: a contender with its live set, a 100,000-pair warm-up, then fills x 10,000 pairs.
constexpr std::size_t pairs_per_fill = 10'000;

template <class A>
std::size_t count_churn(const workload& w, std::size_t fills) {
    A a(w);
    live_set<A> s(a, w);
    std::size_t done = 0, next = 0;
    const std::size_t total = w.pairs.size() / 10 + fills * pairs_per_fill;
    while (done < total) {
        const std::size_t chunk = std::min(total - done, w.pairs.size() - next);
        (void)churn_alloc_loop(a, w.pairs.data() + next, chunk, s.slots.data(), s.sizes.data());
        next = (next + chunk) % w.pairs.size();
        done += chunk;
    }
    return done;
}

const char* const count_names[] = {"offset_heap/w1", "offset_heap/w2",   "tlsf/w1",
                                   "tlsf/w2",        "buddy_offsets/w1", "buddy_offsets/w2"};

} // namespace

void list_count() {
    for (const char* n : count_names)
        std::printf("%s\n", n);
}

int run_count(const char* name, std::size_t fills) {
    const std::string n = name;
    const auto slash = n.find('/');
    if (slash == std::string::npos) return 2;
    const workload w = churn::make_workload(n.substr(slash + 1));
    const std::string c = n.substr(0, slash);
    std::size_t allocations = 0;
    if (c == "offset_heap")
        allocations = count_churn<offset_heap_contender>(w, fills);
    else if (c == "tlsf")
        allocations = count_churn<tlsf_contender>(w, fills);
    else if (c == "buddy_offsets")
        allocations = count_churn<buddy_offsets_contender>(w, fills);
    else
        return 2;
    std::printf("%s fills=%zu allocations=%zu\n", name, fills, allocations);
    return 0;
}

int run_churn(int argc, char** argv) {
    std::vector<std::string> workloads{"w1", "w2"};
    std::size_t pairs = churn::default_pairs;
    std::uint64_t seed = churn::default_seed;
    int rounds = 7, latency_runs = 5;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (v == nullptr) {
            std::fprintf(stderr, "strata-device-bench churn: %s needs a value\n", a.c_str());
            return 2;
        }
        ++i;
        if (a == "--workload")
            workloads = churn::split_list(v);
        else if (a == "--pairs")
            pairs = std::stoull(v);
        else if (a == "--latency-runs")
            latency_runs = std::stoi(v);
        else if (a == "--rounds")
            rounds = std::stoi(v);
        else if (a == "--seed")
            seed = std::stoull(v, nullptr, 0);
        else {
            std::fprintf(stderr, "strata-device-bench churn: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (rounds < 1 || latency_runs < 1 || pairs == 0) return 2;
    const auto cal = lab::calibrate();
    std::printf("## churn: free+allocate pairs, %zu pairs a pass, %d interleaved rounds (median), "
                "latency filtered over %d passes; timer overhead %.1f ns, %.3f GHz counter\n\n",
                pairs, rounds, std::min(rounds, latency_runs), cal.overhead_ns(), cal.ghz());
    std::printf(
        "| contender | wl | ns/pair median | min | x tlsf (median of rounds) | x tlsf (mins) | alloc ns "
        "p50/p99/p99.9/p99.99 filtered (raw p99.99) | free ns p50/p99/p99.99 filtered | metadata B/live mean "
        "(max) |\n");
    std::printf("|---|---|---:|---:|---:|---:|---|---|---:|\n");
    int status = 0;
    std::vector<std::string> verdicts;
    for (const auto& wname : workloads) {
        const workload w = churn::make_workload(wname, pairs, seed);
        std::vector<std::unique_ptr<runner>> runners;
        std::vector<result> results;
        try {
            runners.push_back(std::make_unique<runner_of<offset_heap_contender>>(w));
            results.push_back({offset_heap_contender::name, {}, {}, {}, {}, {}, 0, 0});
            runners.push_back(std::make_unique<runner_of<tlsf_contender>>(w));
            results.push_back({tlsf_contender::name, {}, {}, {}, {}, {}, 0, 0});
            runners.push_back(std::make_unique<runner_of<buddy_offsets_contender>>(w));
            results.push_back({buddy_offsets_contender::name, {}, {}, {}, {}, {}, 0, 0});
            for (int r = 0; r < rounds; ++r)
                for (std::size_t k = 0; k < runners.size(); ++k) {
                    const std::size_t c =
                        (k + static_cast<std::size_t>(r)) % runners.size(); // rotate the order
                    runners[c]->round(w, results[c], r < latency_runs);
                }
            for (std::size_t c = 0; c < runners.size(); ++c)
                runners[c]->metadata(w, results[c]);
        } catch (const std::exception& e) {
            std::printf("| %s FAILED: %s |\n", w.name.c_str(), e.what());
            status = 1;
            continue;
        }
        const double per = 1e9 / static_cast<double>(w.pairs.size());
        // Against tlsf: the median over the rounds of each round's ratio (the two passes of a round
        // run back to back, so a slow stretch of the machine mostly hits both), and the ratio of the
        // fastest passes.
        auto ratio_to_tlsf = [&](const result& r) {
            std::vector<double> q;
            for (std::size_t i = 0; i < r.seconds.size(); ++i)
                q.push_back(r.seconds[i] / results[1].seconds[i]);
            return median(q);
        };
        auto min_ratio_to_tlsf = [&](const result& r) {
            return *std::min_element(r.seconds.begin(), r.seconds.end()) /
                   *std::min_element(results[1].seconds.begin(), results[1].seconds.end());
        };
        {
            // offset_heap's targets: time against tlsf (W1: <= 1.2x, W2: <= 1x), the
            // filtered allocation p99.99 (<= 200 ns), metadata per live allocation (<= 32 B).
            const result& o = results[0];
            const double ratio = ratio_to_tlsf(o), limit = w.name == "w1" ? 1.2 : 1.0;
            const double p9999 = churn::percentiles(o.alloc_ticks, cal).p9999;
            // The class heads and bitmaps, fixed, over the live set (its size at steady state).
            const double tables = static_cast<double>(sizeof(std::uint32_t) * (offset_heap::class_count +
                                                                               offset_heap::fl_count + 1)) /
                                  static_cast<double>(w.live());
            char line[256];
            std::snprintf(
                line, sizeof line,
                "| %s | %.2fx tlsf (mins: %.2fx; target <= %.1fx): %s | %.0f ns (target <= 200): %s | "
                "%.1f B (target <= 32): %s; nodes %.1f + tables %.2f |",
                w.name.c_str(), ratio, min_ratio_to_tlsf(o), limit, ratio <= limit ? "met" : "MISSED", p9999,
                p9999 <= 200 ? "met" : "MISSED", o.meta_max, o.meta_max <= 32 ? "met" : "MISSED",
                o.meta_max - tables, tables);
            verdicts.emplace_back(line);
        }
        for (const result& r : results) {
            const double ns = median(r.seconds) * per;
            const double best = *std::min_element(r.seconds.begin(), r.seconds.end()) * per;
            const churn::tail fa = churn::percentiles(r.alloc_ticks, cal),
                              ff = churn::percentiles(r.free_ticks, cal);
            const churn::tail ra = churn::percentiles(r.raw_alloc, cal);
            std::printf(
                "| %s | %s | %.2f | %.2f | %.2f | %.2f | %.0f/%.0f/%.0f/%.0f (%.0f) | %.0f/%.0f/%.0f | %.1f "
                "(%.1f) |\n",
                r.name.c_str(), w.name.c_str(), ns, best, ratio_to_tlsf(r), min_ratio_to_tlsf(r), fa.p50,
                fa.p99, fa.p999, fa.p9999, ra.p9999, ff.p50, ff.p99, ff.p9999, r.meta_mean, r.meta_max);
        }
        std::fflush(stdout);
    }
    std::printf(
        "\noffset_heap against the targets (metadata: the worst sample)\n\n| wl | time | alloc p99.99 "
        "filtered | metadata per live allocation |\n|---|---|---|---|\n");
    for (const std::string& v : verdicts)
        std::printf("%s\n", v.c_str());
    return status;
}

} // namespace strata::device_bench
