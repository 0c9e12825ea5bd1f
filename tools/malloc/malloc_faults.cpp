// strata-malloc-faults: minor page faults (getrusage ru_minflt) and ns/pair of the strata-churn
// workloads W1/W2/W3 after warm-up, through malloc/free (whatever LD_PRELOAD puts in front) and
// through a strata::engine_heap directly.
//
//   strata-malloc-faults [--pairs N] [--label NAME] [--only malloc|engine_heap]
//   LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 strata-malloc-faults --only malloc --label mimalloc
//
// Each measurement: two warm-up passes, then one pass whose pair loop is bracketed by getrusage.
// A pass allocates the live set, runs every pair (free slot i, allocate into it) and frees all.
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "strata/engine/engine_heap.hpp"

#include "churn.hpp"

namespace {

using strata::churn::workload;

long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

struct result {
    long faults = 0;
    double seconds = 0;
};

template <class Alloc, class Free>
result pass(const workload& w, Alloc alloc, Free release) {
    std::vector<void*> slots(w.live());
    for (std::size_t i = 0; i < w.live(); ++i) {
        slots[i] = alloc(w.initial[i]);
        static_cast<unsigned char*>(slots[i])[0] = 1;
    }
    const long f0 = minor_faults();
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint32_t i = 0; i < w.pairs.size(); ++i) {
        const auto op = w.pairs[i];
        release(slots[op.victim]);
        void* p = alloc(op.size);
        static_cast<unsigned char*>(p)[0] = static_cast<unsigned char>(i);
        slots[op.victim] = p;
        strata::lab::do_not_optimize(p);
    }
    const auto t1 = std::chrono::steady_clock::now();
    const long f1 = minor_faults();
    for (void* p : slots)
        release(p);
    return {f1 - f0, std::chrono::duration<double>(t1 - t0).count()};
}

template <class Alloc, class Free>
void measure(const char* label, const workload& w, Alloc alloc, Free release) {
    for (int i = 0; i < 2; ++i)
        (void)pass(w, alloc, release);
    const result r = pass(w, alloc, release);
    const double per_million = static_cast<double>(r.faults) * 1e6 / static_cast<double>(w.pairs.size());
    std::printf("%-14s %-3s %9.2f ns/pair %10.1f faults/1M pairs\n", label, w.name.c_str(),
                r.seconds * 1e9 / static_cast<double>(w.pairs.size()), per_million);
}

} // namespace

int main(int argc, char** argv) {
    std::size_t pairs = strata::churn::default_pairs;
    std::string label = "malloc";
    std::string only;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--pairs") == 0 && i + 1 < argc) {
            // A whole number of at least 1: 0 (or "abc", which strtoull reads as 0) divided by zero.
            const char* text = argv[++i];
            char* end = nullptr;
            errno = 0;
            pairs = std::strtoull(text, &end, 10);
            if (*text < '0' || *text > '9' || *end != '\0' || errno != 0 || pairs == 0) {
                std::fprintf(stderr, "%s: --pairs takes a whole number of at least 1, got '%s'\n", argv[0],
                             text);
                return 2;
            }
        } else if (std::strcmp(argv[i], "--label") == 0 && i + 1 < argc)
            label = argv[++i];
        else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--pairs N] [--label NAME] [--only malloc|engine_heap]\n",
                         argv[0]);
            return 2;
        }
    }
    for (const char* name : {"w1", "w2", "w3"}) {
        const workload w = strata::churn::make_workload(name, pairs);
        if (only.empty() || only == "malloc")
            measure(
                label.c_str(), w, [](std::size_t n) { return std::malloc(n); },
                [](void* p) { std::free(p); });
        if (only.empty() || only == "engine_heap") {
            strata::engine_options o;
            o.reserve_bytes = std::size_t{4} << 30;
            strata::engine_heap heap(o);
            measure(
                "engine_heap", w, [&](std::size_t n) { return heap.allocate(n); },
                [&](void* p) { heap.deallocate(p); });
        }
    }
    return 0;
}
