// Handle family benchmarks: the showdown's four particle sets (alloc/free, churn, iteration) for a naive
// flag-scan pool, a free-list pool, packed_array, slot_map (erase by handle and by dense index),
// handle_table and plf::colony, with the 24-byte particle and the 32-byte padded one; valid-handle
// lookup. The workload and designs are tools/lab/core/showdown.hpp, shared with `strata-lab showdown`.
//
// Each set benchmark runs the whole set once per iteration and reports the three phases as
// counters (ms, this thread's CPU time); the benchmark's own time is the whole set.
//   build/release/bench/strata_bench_handle --benchmark_filter='set1'
// Count mode (callgrind): --strata_count=lookup_slot_map counts K x 10,000 valid lookups;
// churn_<design> counts K frames of Set 1's churn (see count_churn).
#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "count_kernel.hpp"
#include "showdown.hpp"

namespace {

namespace sd = strata::lab::showdown;

template <class D>
void bm_set(benchmark::State& state, std::size_t set) {
    const sd::set_config& s = sd::published_sets[set];
    sd::timings sum;
    std::size_t runs = 0;
    for (auto _ : state) {
        const sd::timings t = sd::run_set<D>(s);
        benchmark::DoNotOptimize(t.checksum);
        sum.alloc_free_ms += t.alloc_free_ms;
        sum.churn_ms += t.churn_ms;
        sum.iteration_ms += t.iteration_ms;
        ++runs;
    }
    const double n = static_cast<double>(runs == 0 ? 1 : runs);
    state.counters["alloc_free_ms"] = sum.alloc_free_ms / n;
    state.counters["churn_ms"] = sum.churn_ms / n;
    state.counters["iteration_ms"] = sum.iteration_ms / n;
}

template <class P>
void register_sets(const char* particle_name) {
    using list = sd::design_list<P>;
    for (std::size_t set = 0; set < 4; ++set) {
        // Each design is registered through its runner type, instantiated here per design.
        const std::string prefix = std::string(sd::published_sets[set].name) + "/" + particle_name + "/";
        auto reg = [&](const char* name, void (*fn)(benchmark::State&, std::size_t)) {
            benchmark::RegisterBenchmark((prefix + name).c_str(), fn, set)
                ->Unit(benchmark::kMillisecond)
                ->Iterations(set == 2 || set == 3 ? 1 : 3);
        };
        reg("naive", &bm_set<sd::naive_pool<P>>);
        reg("free_list", &bm_set<sd::free_list_pool<P>>);
        reg("packed_array", &bm_set<sd::packed_design<P>>);
        reg("slot_map", &bm_set<sd::slot_map_design<P>>);
        reg("slot_map_at", &bm_set<sd::slot_map_at_design<P>>);
        reg("handle_table", &bm_set<sd::handle_table_design<P>>);
        reg("plf_colony", &bm_set<sd::colony_design<P>>);
        reg("slot_map_compact", &bm_set<sd::slot_map_design<P, strata::policy::compact>>);
        reg("slot_map_compact_at", &bm_set<sd::slot_map_at_design<P, strata::policy::compact>>);
        reg("soa_slot_map", &bm_set<sd::soa_slot_map_design<P>>);
        static_assert(std::size(list::all) == 10, "register every design of design_list");
    }
}

const bool sets_registered = [] {
    register_sets<sd::particle>("p24");
    register_sets<sd::particle32>("p32");
    return true;
}();

// Valid-handle lookup: 10,000 live particles, handles visited in a shuffled order.
template <class C>
void bm_lookup(benchmark::State& state) {
    constexpr std::size_t live = 10'000;
    C c;
    std::vector<sd::particle_handle> hs;
    for (std::size_t i = 0; i < live; ++i)
        hs.push_back(c.emplace(sd::make_particle<sd::particle>(static_cast<std::uint32_t>(i))));
    strata::lab::splitmix64 rng(7);
    for (std::size_t i = hs.size(); i > 1; --i)
        std::swap(hs[i - 1], hs[static_cast<std::size_t>(rng.next() % i)]);
    for (auto _ : state) {
        float sum = 0;
        for (const sd::particle_handle h : hs)
            sum += c.get(h)->lifetime_remaining;
        benchmark::DoNotOptimize(sum);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * live));
    // Seconds per lookup (a rate, inverted): Google Benchmark prints it scaled (e.g. 1.02ns).
    state.counters["s_per_lookup"] =
        benchmark::Counter(static_cast<double>(state.iterations() * live),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(bm_lookup<strata::slot_map<sd::particle, sd::particle_handle>>)->Name("lookup/slot_map");
BENCHMARK(bm_lookup<strata::handle_table<sd::particle, sd::particle_handle>>)->Name("lookup/handle_table");

std::size_t count_lookup(std::size_t fills) {
    constexpr std::size_t live = 10'000;
    strata::slot_map<sd::particle, sd::particle_handle> m;
    std::vector<sd::particle_handle> hs;
    for (std::size_t i = 0; i < live; ++i)
        hs.push_back(m.emplace(sd::make_particle<sd::particle>(static_cast<std::uint32_t>(i))));
    float sum = 0;
    for (std::size_t f = 0; f < fills; ++f)
        for (const sd::particle_handle h : hs)
            sum += m.get(h)->lifetime_remaining;
    benchmark::DoNotOptimize(sum);
    return fills * live;
}
const bool lookup_counted = strata_bench::register_count_kernel("lookup_slot_map", &count_lookup);

// Count mode for the churn phase of Set 1 (500 live particles among 10,000 slots): the set's
// alloc/free phase, then `fills` frames of 500 kills + 500 spawns, each design killing its own way.
// Allocations reported = kill+spawn pairs, so callgrind.py's "program" column reads as instructions
// per pair: python3 bench/callgrind.py build/release/bench/strata_bench_handle churn_packed_array
// churn_slot_map churn_slot_map_at churn_plf_colony --fills 20 100
template <class D>
std::size_t count_churn(std::size_t fills) {
    const sd::set_config& s = sd::published_sets[0];
    strata::lab::splitmix64 rng(42);
    D d(s.allocs);
    std::uint32_t id = 0;
    for (std::size_t i = 0; i < s.allocs; ++i)
        d.spawn(id++);
    for (std::size_t i = 0; i < s.frees; ++i)
        d.kill(sd::pick(static_cast<std::uint32_t>(rng.next() >> 32), d.live()));
    for (std::size_t f = 0; f < fills; ++f) {
        for (std::size_t i = 0; i < s.churn; ++i)
            d.kill(sd::pick(static_cast<std::uint32_t>(rng.next() >> 32), d.live()));
        for (std::size_t i = 0; i < s.churn; ++i)
            d.spawn(id++);
    }
    const double sum = d.checksum();
    benchmark::DoNotOptimize(sum);
    return fills * s.churn;
}
const bool churn_counted = [] {
    strata_bench::register_count_kernel("churn_packed_array", &count_churn<sd::packed_design<sd::particle>>);
    strata_bench::register_count_kernel("churn_slot_map", &count_churn<sd::slot_map_design<sd::particle>>);
    strata_bench::register_count_kernel("churn_slot_map_at",
                                        &count_churn<sd::slot_map_at_design<sd::particle>>);
    strata_bench::register_count_kernel("churn_plf_colony", &count_churn<sd::colony_design<sd::particle>>);
    strata_bench::register_count_kernel(
        "churn_slot_map_compact", &count_churn<sd::slot_map_design<sd::particle, strata::policy::compact>>);
    strata_bench::register_count_kernel(
        "churn_slot_map_compact_at",
        &count_churn<sd::slot_map_at_design<sd::particle, strata::policy::compact>>);
    return true;
}();

} // namespace
