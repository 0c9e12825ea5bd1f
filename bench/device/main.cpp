// strata-device-bench: benchmarks of the device-memory family (offset_heap, device_pool).
//
//   strata-device-bench churn  [options]   W1/W2 pairs: offset_heap vs tlsf vs buddy offsets (churn.cpp)
//   strata-device-bench frag   [options]   fragmentation over a long mixed workload (frag.cpp)
//   strata-device-bench defrag [options]   device_pool defragmentation (defrag.cpp)
//   strata-device-bench all                the three with their defaults
//   strata-device-bench --strata_count=NAME [--strata_fills=K]   bench/callgrind.py's count mode
//   strata-device-bench --strata_list      names for --strata_count
//
// bench/device/run.sh runs everything.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "device_bench.hpp"

namespace {

const char* flag_value(const char* arg, const char* flag) {
    const std::size_t n = std::strlen(flag);
    return std::strncmp(arg, flag, n) == 0 && arg[n] == '=' ? arg + n + 1 : nullptr;
}

int usage() {
    std::fprintf(stderr, "usage: strata-device-bench churn|frag|defrag|all [options] | --strata_count=NAME "
                         "[--strata_fills=K] | --strata_list\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    using namespace strata::device_bench;
    if (argc < 2) return usage();
    const char* count = nullptr;
    std::size_t fills = 1;
    for (int i = 1; i < argc; ++i) {
        if (const char* v = flag_value(argv[i], "--strata_count")) count = v;
        if (const char* v = flag_value(argv[i], "--strata_fills")) fills = std::strtoull(v, nullptr, 10);
        if (std::strcmp(argv[i], "--strata_list") == 0) {
            list_count();
            return 0;
        }
    }
    if (count != nullptr) return run_count(count, fills);
    const std::string mode = argv[1];
    if (mode == "churn") return run_churn(argc - 2, argv + 2);
    if (mode == "frag") return run_frag(argc - 2, argv + 2);
    if (mode == "defrag") return run_defrag(argc - 2, argv + 2);
    if (mode == "all") {
        int status = run_churn(0, nullptr);
        std::printf("\n");
        status |= run_frag(0, nullptr);
        std::printf("\n");
        status |= run_defrag(0, nullptr);
        return status;
    }
    return usage();
}
