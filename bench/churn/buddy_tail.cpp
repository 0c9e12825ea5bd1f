// strata-buddy-tail: which of buddy's allocations make its filtered W2 tail.
//
//   strata-buddy-tail [--workload w2] [--runs K] [--top N]
//
// Runs the churn workload's pairs through one strata::buddy (set up as strata-churn's buddy
// contender, minus the huge-page hint) K + 1 times, times each allocation with the lab's fenced
// TSC reads, and keeps each allocation's minimum over the last K runs (the first warms up).
// Before each timed allocation it records, untimed, the request's order and how many splits it
// will make: the free-order mask tells which order the allocation will be cut from. Prints the
// filtered p99.99 and how the N slowest allocations spread over orders and split counts, next to
// how all allocations do (docs/heaps.md).
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "strata/core/bit.hpp"
#include "strata/heap/buddy.hpp"

#include "churn.hpp"
#include "timer.hpp"

int main(int argc, char** argv) {
    std::string name = "w2";
    int runs = 5;
    std::size_t top = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--workload")
            name = argv[i + 1];
        else if (a == "--runs")
            runs = std::max(1, std::atoi(argv[i + 1]));
        else if (a == "--top")
            top = std::max<std::size_t>(1, std::strtoull(argv[i + 1], nullptr, 10));
        else {
            std::fprintf(stderr, "usage: %s [--workload w1|w2|w3] [--runs K] [--top N]\n", argv[0]);
            return 2;
        }
    }
    using namespace strata::churn;
    const op_workload ops = make_op_workload(name);
    const workload w = pairs_of(ops);
    constexpr std::size_t alignment = 16;
    constexpr std::size_t min_block = 16;
    const std::size_t bytes = strata::next_pow2(2 * ops.peak_live_bytes + min_block * w.live());
    std::vector<std::byte> memory(bytes + 4096); // zeroed: every page written before timing
    const std::size_t skew = (4096 - reinterpret_cast<std::uintptr_t>(memory.data()) % 4096) % 4096;
    std::byte* base = memory.data() + skew;
    strata::buddy b(std::span<std::byte>(base, bytes), min_block);

    const std::size_t n = w.pairs.size();
    std::vector<std::uint32_t> ticks(n, UINT32_MAX);
    std::vector<std::uint8_t> order(n), splits(n);
    std::vector<void*> slots(w.live());
    for (int run = 0; run <= runs; ++run) {
        std::vector<std::uint32_t> sizes(w.initial);
        for (std::uint32_t i = 0; i < w.live(); ++i)
            slots[i] = b.allocate(w.initial[i], alignment);
        for (std::size_t i = 0; i < n; ++i) {
            const pair_op op = w.pairs[i];
            b.deallocate(slots[op.victim], sizes[op.victim], alignment);
            const unsigned o =
                op.size <= min_block ? 0u : strata::log2_ceil(op.size) - strata::log2_floor(min_block);
            order[i] = static_cast<std::uint8_t>(o);
            splits[i] =
                static_cast<std::uint8_t>(std::countr_zero(b.free_orders() & (~std::uint64_t{0} << o)) - o);
            const std::uint64_t t0 = strata::lab::tick_begin();
            void* p = b.allocate(op.size, alignment);
            const std::uint64_t t1 = strata::lab::tick_end();
            if (p == nullptr) {
                std::fprintf(stderr, "allocation %zu failed\n", i);
                return 1;
            }
            static_cast<unsigned char*>(p)[0] = 1;
            slots[op.victim] = p;
            sizes[op.victim] = op.size;
            if (run > 0) ticks[i] = std::min<std::uint32_t>(ticks[i], static_cast<std::uint32_t>(t1 - t0));
        }
        for (std::uint32_t i = 0; i < w.live(); ++i)
            b.deallocate(slots[i], sizes[i], alignment);
        if (!b.check()) return 1;
    }

    const strata::lab::calibration cal = strata::lab::calibrate();
    std::vector<std::uint32_t> rank(n);
    std::iota(rank.begin(), rank.end(), 0u);
    top = std::min(top, n);
    const std::size_t p9999 = n / 10000; // the (n/10000 + 1)-th slowest is the p99.99
    const std::size_t ranked = std::min(n, std::max(top, p9999 + 1));
    std::partial_sort(rank.begin(), rank.begin() + static_cast<std::ptrdiff_t>(ranked), rank.end(),
                      [&](std::uint32_t x, std::uint32_t y) { return ticks[x] > ticks[y]; });
    std::printf("buddy %s: region %zu MiB, bookkeeping %zu MiB, %zu allocations, filtered over %d runs\n",
                ops.name.c_str(), bytes >> 20, b.bookkeeping_bytes() >> 20, n, runs);
    if (p9999 < n)
        std::printf("filtered allocation p99.99: %.0f ns (timer overhead included: %.0f ns)\n",
                    ticks[rank[p9999]] * cal.ns_per_tick, cal.overhead_ns());
    std::map<unsigned, std::size_t> all_orders, top_orders, all_splits, top_splits;
    for (std::size_t i = 0; i < n; ++i) {
        ++all_orders[order[i]];
        ++all_splits[splits[i]];
    }
    for (std::size_t r = 0; r < top; ++r) {
        ++top_orders[order[rank[r]]];
        ++top_splits[splits[rank[r]]];
    }
    std::printf("the %zu slowest allocations, by splits (all allocations beside):\n", top);
    for (const auto& [k, count] : all_splits)
        std::printf("  %u splits: %5zu of %zu\n", k, top_splits[k], count);
    std::printf("by request order (block = %zu B << order):\n", min_block);
    for (const auto& [k, count] : all_orders)
        std::printf("  order %2u: %5zu of %zu\n", k, top_orders[k], count);
    return 0;
}
