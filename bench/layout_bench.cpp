// Layout benchmarks: touching one float field of N 32-byte entities, array of structs
// (std::vector<entity>) vs strata::soa_vector (padded loop, as documented) vs the same SoA loop run
// to size() (the "naive SoA" that g++ -O2 does not vectorize). Default N = 10,000,000.
//   build/release/bench/strata_bench_layout
#include <cstddef>
#include <vector>

#include <benchmark/benchmark.h>

#include "layout.hpp"

namespace {

using shape = strata::lab::layout::small_entity;

void bm_aos(benchmark::State& state) {
    std::vector<shape::entity> es = shape::make_aos(static_cast<std::size_t>(state.range(0)));
    for (auto _ : state) {
        shape::aos_pass(es, 0.5f);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

template <void (*Pass)(shape::columns&, float) noexcept>
void bm_soa(benchmark::State& state) {
    shape::columns es = shape::make_soa(static_cast<std::size_t>(state.range(0)));
    for (auto _ : state) {
        Pass(es, 0.5f);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

BENCHMARK(bm_aos)->Name("one_field/aos")->Arg(10'000'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_soa<&shape::soa_pass>)
    ->Name("one_field/soa_padded")
    ->Arg(10'000'000)
    ->Arg(100'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_soa<&shape::soa_pass_unpadded>)
    ->Name("one_field/soa_to_size")
    ->Arg(10'000'000)
    ->Arg(100'000)
    ->Unit(benchmark::kMillisecond);

} // namespace
