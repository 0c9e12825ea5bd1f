// strata-mt: multi-threaded malloc workloads on plain malloc/free, for comparing mallocs swapped in
// with LD_PRELOAD (bench/mt/peers.sh runs every Debian malloc and libstrata_malloc.so).
//
//   strata-mt [--workload local,prodcons,larson,big] [--ops N] [--threads T] [--repeats R] [--rounds K]
//             [--label NAME] [--jsonl FILE] [--seed S]
//
// Workloads (block sizes: 60% 8-128 B, 30% 128 B-1 KiB, 9% 1-8 KiB, 1% 8-64 KiB; every block is
// written at both ends, so its pages are really touched):
//   local     T threads (default 2), each replacing random slots of its own 4,096-slot array:
//             free + malloc pairs that never cross threads (the per-thread cache fast path).
//   prodcons  one producer mallocs blocks and hands them through a 1,024-entry ring to one consumer,
//             which frees them: every free is a cross-thread free.
//   larson    K rounds of T threads (default 4) that replace random slots of ONE shared 8,192-slot
//             array (atomic exchange): most blocks are freed by a thread other than the one that
//             allocated them, often after that thread has exited (larson's server pattern).
//   big       T threads (default 2), each replacing random slots of its own 8-slot array with
//             blocks of 1-8 MiB, every page written (streaming buffers, big scratch: what a malloc
//             that gives freed pages back at once pays for in page faults). Not in the default set.
// Each repeat warms up first (slots filled, a quarter of the operations untimed), then times N
// operations per thread (an operation is one malloc + one free; in prodcons one block passed on).
// Reported: ns/op = wall time / N, the time one thread spends per operation (median over repeats);
// Mops/s over all threads; minor page faults in the timed window of the last repeat (ru_minflt,
// whole process) and per million operations; the process's peak RSS (ru_maxrss) at the end. Run one
// workload per process when comparing peak RSS (peers.sh does).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
    std::vector<std::string> workloads{"local", "prodcons", "larson"};
    std::uint64_t ops = 0; // per thread; 0: the workload's default
    unsigned threads = 0;  // 0: the workload's default
    unsigned repeats = 5;
    unsigned rounds = 4;
    std::uint64_t seed = 1;
    std::string label = "malloc";
    std::string jsonl;
};

// xorshift64*: cheap enough not to dominate a malloc + free pair, and seeded per thread.
struct rng {
    std::uint64_t state;
    explicit rng(std::uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull | 1) {}
    std::uint64_t next() {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        return state * 0x2545F4914F6CDD1Dull;
    }
    std::size_t below(std::size_t n) { return static_cast<std::size_t>((next() >> 32) % n); }
};

std::size_t block_size(rng& r) {
    const std::size_t pick = r.below(100);
    if (pick < 60) return 8 + r.below(121);
    if (pick < 90) return 128 + r.below(897);
    if (pick < 99) return 1024 + r.below(7169);
    return 8192 + r.below(57345);
}

// Writes both ends, so the pages are touched and the call cannot be optimized away.
void* make_block(rng& r) {
    const std::size_t size = block_size(r);
    auto* p = static_cast<unsigned char*>(std::malloc(size));
    if (p == nullptr) {
        std::fprintf(stderr, "strata-mt: malloc(%zu) returned null\n", size);
        std::abort();
    }
    p[0] = static_cast<unsigned char>(size);
    p[size - 1] = static_cast<unsigned char>(size >> 8);
    return p;
}

long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

long peak_rss_kib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

struct sample {
    double seconds = 0;
    long faults = 0;
};

// The timed window of one repeat: the workload's threads meet at `start` after their warm-up and at
// `stop` when done; the caller's thread is the third party to both, reads the clock and the fault
// counter, and lets them go.
struct window {
    std::barrier<> start, stop;
    explicit window(unsigned parties) : start(parties + 1), stop(parties + 1) {}
    sample measure() {
        start.arrive_and_wait();
        const long f0 = minor_faults();
        const auto t0 = clock_type::now();
        stop.arrive_and_wait();
        const auto t1 = clock_type::now();
        return {std::chrono::duration<double>(t1 - t0).count(), minor_faults() - f0};
    }
};

// T threads, each replacing random slots of its own array with blocks from `make` (local, big).
sample run_own_slots(unsigned threads, std::uint64_t ops, std::uint64_t seed, std::size_t slots,
                     void* (*make)(rng&)) {
    window w(threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            rng r(seed * 131 + t);
            std::vector<void*> mine(slots);
            for (auto& p : mine)
                p = make(r);
            auto churn = [&](std::uint64_t n) {
                for (std::uint64_t i = 0; i < n; ++i) {
                    const std::size_t k = r.below(slots);
                    std::free(mine[k]);
                    mine[k] = make(r);
                }
            };
            churn(ops / 4);
            w.start.arrive_and_wait();
            churn(ops);
            w.stop.arrive_and_wait();
            for (void* p : mine)
                std::free(p);
        });
    const sample s = w.measure();
    for (auto& th : pool)
        th.join();
    return s;
}

// A 1-8 MiB block with a byte written on every page.
void* make_big_block(rng& r) {
    const std::size_t size = (std::size_t{1} << 20) + r.below(std::size_t{7} << 20);
    auto* p = static_cast<unsigned char*>(std::malloc(size));
    if (p == nullptr) {
        std::fprintf(stderr, "strata-mt: malloc(%zu) returned null\n", size);
        std::abort();
    }
    for (std::size_t at = 0; at < size; at += 4096)
        p[at] = static_cast<unsigned char>(at >> 12);
    p[size - 1] = 1;
    return p;
}

// A single-producer single-consumer ring of block pointers. Waiting yields: on a machine with fewer
// free cores than threads a spinning waiter would steal the other side's time slice.
class ring {
public:
    static constexpr std::size_t capacity = 1024;
    void push(void* p) {
        const std::size_t h = head_.load(std::memory_order_relaxed);
        while (h - tail_.load(std::memory_order_acquire) == capacity)
            std::this_thread::yield();
        cells_[h % capacity] = p;
        head_.store(h + 1, std::memory_order_release);
    }
    void* pop() {
        const std::size_t t = tail_.load(std::memory_order_relaxed);
        while (head_.load(std::memory_order_acquire) == t)
            std::this_thread::yield();
        void* p = cells_[t % capacity];
        tail_.store(t + 1, std::memory_order_release);
        return p;
    }

private:
    alignas(64) std::atomic<std::size_t> head_{0};
    alignas(64) std::atomic<std::size_t> tail_{0};
    alignas(64) void* cells_[capacity] = {};
};

sample run_prodcons(std::uint64_t ops, std::uint64_t seed) {
    window w(2);
    auto q = std::make_unique<ring>();
    std::thread producer([&] {
        rng r(seed * 131);
        for (std::uint64_t i = 0; i < ops / 4; ++i)
            q->push(make_block(r));
        w.start.arrive_and_wait();
        for (std::uint64_t i = 0; i < ops; ++i)
            q->push(make_block(r));
        w.stop.arrive_and_wait();
    });
    std::thread consumer([&] {
        std::uint64_t sum = 0;
        auto drain = [&](std::uint64_t n) {
            for (std::uint64_t i = 0; i < n; ++i) {
                auto* p = static_cast<unsigned char*>(q->pop());
                sum += p[0];
                std::free(p);
            }
        };
        drain(ops / 4);
        w.start.arrive_and_wait();
        drain(ops);
        w.stop.arrive_and_wait();
        if (sum == 1) std::puts(""); // keeps the reads
    });
    const sample s = w.measure();
    producer.join();
    consumer.join();
    return s;
}

sample run_larson(unsigned threads, std::uint64_t ops, unsigned rounds, std::uint64_t seed) {
    constexpr std::size_t slots = 8192;
    std::vector<std::atomic<void*>> shared(slots);
    rng setup(seed);
    for (auto& s : shared)
        s.store(make_block(setup), std::memory_order_relaxed);
    // One round: `threads` fresh threads replace random shared slots, then exit, leaving their
    // blocks behind for the next round's threads to free.
    auto round = [&](std::uint64_t n, unsigned round_no) {
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                rng r(seed * 7919 + round_no * 131 + t);
                for (std::uint64_t i = 0; i < n; ++i) {
                    void* fresh = make_block(r);
                    std::free(shared[r.below(slots)].exchange(fresh, std::memory_order_acq_rel));
                }
            });
        for (auto& th : pool)
            th.join();
    };
    round(ops / 4, 0);
    const long f0 = minor_faults();
    const auto t0 = clock_type::now();
    for (unsigned k = 1; k <= rounds; ++k)
        round(ops / rounds, k);
    const auto t1 = clock_type::now();
    const sample s{std::chrono::duration<double>(t1 - t0).count(), minor_faults() - f0};
    for (auto& slot : shared)
        std::free(slot.load(std::memory_order_relaxed));
    return s;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

int usage() {
    std::fputs(
        "usage: strata-mt [--workload local,prodcons,larson,big] [--ops N] [--threads T] [--repeats R]\n"
        "                 [--rounds K] [--label NAME] [--jsonl FILE] [--seed S]\n",
        stderr);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "strata-mt: %s needs a value\n", a.c_str());
                std::exit(usage());
            }
            return argv[++i];
        };
        if (a == "--workload")
            o.workloads = split(value());
        else if (a == "--ops")
            o.ops = std::stoull(value());
        else if (a == "--threads")
            o.threads = static_cast<unsigned>(std::stoul(value()));
        else if (a == "--repeats")
            o.repeats = std::max(1u, static_cast<unsigned>(std::stoul(value())));
        else if (a == "--rounds")
            o.rounds = std::max(1u, static_cast<unsigned>(std::stoul(value())));
        else if (a == "--seed")
            o.seed = std::stoull(value());
        else if (a == "--label")
            o.label = value();
        else if (a == "--jsonl")
            o.jsonl = value();
        else
            return usage();
    }
    std::printf("%-10s %-9s %7s %10s %9s %10s %10s %12s %10s\n", "malloc", "workload", "threads",
                "ops/thread", "ns/op", "Mops/s", "minflt", "flt/1M ops", "peak MiB");
    for (const std::string& name : o.workloads) {
        unsigned threads = 0;
        std::uint64_t ops = 0;
        std::function<sample()> body;
        if (name == "local") {
            threads = o.threads ? o.threads : 2;
            ops = o.ops ? o.ops : 2'000'000;
            body = [&] { return run_own_slots(threads, ops, o.seed, 4096, make_block); };
        } else if (name == "prodcons") {
            threads = 2;
            ops = o.ops ? o.ops : 2'000'000;
            body = [&] { return run_prodcons(ops, o.seed); };
        } else if (name == "larson") {
            threads = o.threads ? o.threads : 4;
            ops = o.ops ? o.ops : 1'000'000;
            body = [&] { return run_larson(threads, ops, o.rounds, o.seed); };
        } else if (name == "big") {
            threads = o.threads ? o.threads : 2;
            ops = o.ops ? o.ops : 2'000;
            body = [&] { return run_own_slots(threads, ops, o.seed, 8, make_big_block); };
        } else {
            std::fprintf(stderr, "strata-mt: unknown workload '%s' (local, prodcons, larson, big)\n",
                         name.c_str());
            return 2;
        }
        // Every thread of local and larson performs `ops` operations; prodcons moves `ops` blocks,
        // each one operation shared by the pair. ns/op is wall time / ops either way.
        const double total_ops = static_cast<double>(ops) * (name == "prodcons" ? 1 : threads);
        std::vector<double> seconds;
        sample last;
        for (unsigned rep = 0; rep < o.repeats; ++rep) {
            last = body();
            seconds.push_back(last.seconds);
        }
        std::sort(seconds.begin(), seconds.end());
        const double median_s =
            (seconds[(seconds.size() - 1) / 2] + seconds[seconds.size() / 2]) / 2; // sorted
        const double median_ns = median_s * 1e9 / static_cast<double>(ops);
        const double ops_per_s = total_ops / median_s;
        const double faults_per_m = static_cast<double>(last.faults) * 1e6 / total_ops;
        const long rss = peak_rss_kib();
        std::printf("%-10s %-9s %7u %10llu %9.1f %10.3g %10ld %12.1f %10.1f\n", o.label.c_str(), name.c_str(),
                    threads, static_cast<unsigned long long>(ops), median_ns, ops_per_s / 1e6, last.faults,
                    faults_per_m, static_cast<double>(rss) / 1024.0);
        if (!o.jsonl.empty()) {
            std::ofstream out(o.jsonl, std::ios::app);
            char line[512];
            std::snprintf(line, sizeof line,
                          R"({"malloc":"%s","workload":"%s","threads":%u,"ops_per_thread":%llu,"repeats":%u,)"
                          R"("ns_per_op":%.2f,"ops_per_s":%.0f,"minflt":%ld,"faults_per_mop":%.1f,)"
                          R"("peak_rss_kib":%ld})",
                          o.label.c_str(), name.c_str(), threads, static_cast<unsigned long long>(ops),
                          o.repeats, median_ns, ops_per_s, last.faults, faults_per_m, rss);
            out << line << '\n';
        }
        std::fflush(stdout);
    }
    return 0;
}
