// Layout benchmarks: touching one float field of N 32-byte entities, array of structs
// (std::vector<entity>) vs strata::soa_vector (padded loop, as documented) vs the same SoA loop run
// to size() (the "naive SoA" that g++ -O2 does not vectorize). Default N = 10,000,000.
//   build/release/bench/strata_bench_layout
#include <cstddef>
#include <vector>

#include <benchmark/benchmark.h>

#include "showdown.hpp"

namespace {

namespace sd = strata::lab::showdown;

void bm_aos(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    std::vector<sd::entity> es(n, sd::entity{{1, 2, 3}, {0, 0, 0}, 100.0f, 0});
    for (auto _ : state) {
        sd::aos_pass(es, 0.5f);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

template <void (*Pass)(sd::entity_columns&, float) noexcept>
void bm_soa(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    sd::entity_columns es;
    es.resize(n);
    for (std::size_t i = 0; i < n; ++i)
        es.get<sd::health_column>(i) = 100.0f;
    for (auto _ : state) {
        Pass(es, 0.5f);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

BENCHMARK(bm_aos)->Name("one_field/aos")->Arg(10'000'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_soa<&sd::soa_pass>)
    ->Name("one_field/soa_padded")
    ->Arg(10'000'000)
    ->Arg(100'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_soa<&sd::soa_pass_unpadded>)
    ->Name("one_field/soa_to_size")
    ->Arg(10'000'000)
    ->Arg(100'000)
    ->Unit(benchmark::kMillisecond);

} // namespace
