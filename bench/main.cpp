// strata_bench entry point.
//
// Two modes:
//   strata_bench [--benchmark_* flags]            Google Benchmark, as usual.
//   strata_bench --strata_count=NAME [--strata_fills=K]
//                                                 "count mode": runs the loop of benchmark NAME for K
//                                                 buffer fills (default 100) outside the benchmark
//                                                 framework and prints how many allocations it made,
//                                                 so `valgrind --tool=callgrind` can count the
//                                                 instructions of exactly that loop (bench/callgrind.py).
//   strata_bench --strata_list                    names usable with --strata_count.
//
// Bench files register count kernels with strata_bench::register_count_kernel (count_kernel.hpp).
// Only this file defines main(): other bench files must not use BENCHMARK_MAIN().
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include <benchmark/benchmark.h>

#include "count_kernel.hpp"

namespace strata_bench {

namespace {
std::map<std::string, count_kernel>& count_registry() {
    static std::map<std::string, count_kernel> registry;
    return registry;
}
} // namespace

bool register_count_kernel(const char* name, count_kernel kernel) {
    count_registry()[name] = kernel;
    return true;
}

} // namespace strata_bench

namespace {

const char* flag_value(const char* arg, const char* flag) {
    const std::size_t n = std::strlen(flag);
    return std::strncmp(arg, flag, n) == 0 && arg[n] == '=' ? arg + n + 1 : nullptr;
}

int count_mode(int argc, char** argv) {
    const char* name = nullptr;
    std::size_t fills = 100;
    for (int i = 1; i < argc; ++i) {
        if (const char* v = flag_value(argv[i], "--strata_count")) {
            name = v;
        } else if (const char* f = flag_value(argv[i], "--strata_fills")) {
            fills = static_cast<std::size_t>(std::strtoull(f, nullptr, 10));
        } else {
            std::fprintf(stderr, "strata_bench: count mode: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    const auto& registry = strata_bench::count_registry();
    const auto it = registry.find(name);
    if (it == registry.end()) {
        std::fprintf(stderr, "strata_bench: no count kernel named '%s' (see --strata_list)\n", name);
        return 2;
    }
    const std::size_t allocations = it->second(fills);
    std::printf("%s fills=%zu allocations=%zu\n", name, fills, allocations);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--strata_list") == 0) {
            for (const auto& entry : strata_bench::count_registry())
                std::printf("%s\n", entry.first.c_str());
            return 0;
        }
        if (flag_value(argv[i], "--strata_count")) return count_mode(argc, argv);
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
