// strata-grow-tail: the time of each malloc while a program grows a class of big blocks.
//
//   [LD_PRELOAD=libX.so] strata-grow-tail [--size S,...] [--blocks N] [--runs R]
//
// Through the process's malloc (run it under each malloc with LD_PRELOAD). Per size (default 65536)
// and run (default 1): 40,000 blocks of 256 B first (10 MiB, past the engine heap's
// populate_after_bytes), then N blocks (default 2,000) of that size, each written whole and kept,
// as a level load grows a pool of buffers; then all of it is freed. Prints per run the 50th, 90th
// and 99th percentile and the worst malloc call in microseconds, the total time in malloc and in
// the writes, and the medians over the runs: a malloc that faults a span in whole at its first
// block shows in p99. Only a process's first run grows into fresh memory: later runs and sizes
// reuse what the earlier ones freed (one process per size and run measures growth alone).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "list_arg.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct result {
    double p50, p90, p99, max, malloc_ms, write_ms;
};

double us(clock_type::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

result run_once(std::size_t size, std::size_t blocks) {
    std::vector<void*> small;
    small.reserve(40000);
    for (int i = 0; i < 40000; ++i) {
        small.push_back(std::malloc(256));
        std::memset(small.back(), 1, 256);
    }
    std::vector<void*> kept;
    std::vector<double> t;
    kept.reserve(blocks); // no untimed calls of the same malloc between the timed ones
    t.reserve(blocks);
    double writes = 0;
    for (std::size_t i = 0; i < blocks; ++i) {
        const auto a = clock_type::now();
        void* p = std::malloc(size);
        const auto b = clock_type::now();
        if (p == nullptr) {
            std::fprintf(stderr, "strata-grow-tail: malloc(%zu) returned null\n", size);
            std::exit(1);
        }
        std::memset(p, 2, size);
        writes += us(clock_type::now() - b);
        t.push_back(us(b - a));
        kept.push_back(p);
    }
    double total = 0;
    for (double x : t)
        total += x;
    std::sort(t.begin(), t.end());
    const auto q = [&](double f) {
        return t[std::min(t.size() - 1, static_cast<std::size_t>(f * t.size()))];
    };
    result r{q(0.5), q(0.9), q(0.99), t.back(), total / 1000, writes / 1000};
    for (void* p : kept)
        std::free(p);
    for (void* p : small)
        std::free(p);
    return r;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::size_t> sizes{65536};
    std::size_t blocks = 2000;
    int runs = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--size" && has_value) {
            sizes.clear();
            for (const std::string& s : strata_bench::split_list(argv[++i]))
                sizes.push_back(std::strtoull(s.c_str(), nullptr, 10));
        } else if (a == "--blocks" && has_value) {
            blocks = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--runs" && has_value) {
            runs = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: strata-grow-tail [--size S,...] [--blocks N] [--runs R]\n");
            return 2;
        }
    }
    if (sizes.empty() || blocks == 0 || runs < 1 ||
        std::any_of(sizes.begin(), sizes.end(), [](std::size_t s) { return s == 0; })) {
        std::fprintf(stderr, "strata-grow-tail: sizes, blocks and runs must be positive\n");
        return 2;
    }
    std::printf("%8s %4s %9s %9s %9s %9s %11s %10s\n", "size", "run", "p50 us", "p90 us", "p99 us", "max us",
                "malloc ms", "write ms");
    for (const std::size_t size : sizes) {
        std::vector<result> rs;
        for (int r = 0; r < runs; ++r) {
            rs.push_back(run_once(size, blocks));
            const result& x = rs.back();
            std::printf("%8zu %4d %9.1f %9.1f %9.1f %9.1f %11.1f %10.1f\n", size, r, x.p50, x.p90, x.p99,
                        x.max, x.malloc_ms, x.write_ms);
        }
        const auto med = [&](double result::*m) {
            std::vector<double> v;
            for (const result& x : rs)
                v.push_back(x.*m);
            return median(v);
        };
        std::printf("%8zu %4s %9.1f %9.1f %9.1f %9.1f %11.1f %10.1f\n", size, "med", med(&result::p50),
                    med(&result::p90), med(&result::p99), med(&result::max), med(&result::malloc_ms),
                    med(&result::write_ms));
    }
}
