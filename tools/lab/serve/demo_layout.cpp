// AoS vs SoA: one pass updating a single 4-byte field of every entity, stored as structs and as
// columns (strata::basic_soa_vector), timed as this thread's CPU time (layout.hpp's clock and
// shape) and counted in cache lines. Both stores are mapped from the OS for the run and unmapped
// after, so runs of a million entities leave nothing behind. Exports make_layout_demo.
#include <cstddef>
#include <utility>
#include <vector>

#include "strata/layout/soa_vector.hpp"

#include "layout.hpp"
#include "measure.hpp"

namespace strata::lab::serve {
namespace {

using shape = layout::small_entity;
using entity = shape::entity;
inline constexpr int repeats = 3; // the best of: the least disturbed by other processes

template <class Seq>
struct columns_of;
template <std::size_t... I>
struct columns_of<std::index_sequence<I...>> {
    using type = basic_soa_vector<os_allocator<float>, layout::detail::float_column<I>...>;
};
using columns = columns_of<std::make_index_sequence<shape::fields>>::type;

/// Returns: the best CPU ms of the AoS pass over `n` entities (health -= dt in each).
double time_aos(std::size_t n) {
    std::vector<entity, os_allocator<entity>> es(n);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t k = 0; k < shape::fields; ++k)
            es[i].field[k] = static_cast<float>((i * 31 + k) % 1000);
    return layout::best_ms(repeats, [&] {
        for (entity& e : es)
            e.field[shape::health] -= 0.5f;
        do_not_optimize(es.data());
    });
}

template <std::size_t... I>
void fill(columns& es, std::index_sequence<I...>) {
    for (std::size_t i = 0; i < es.size(); ++i)
        ((es.template get<I>(i) = static_cast<float>((i * 31 + I) % 1000)), ...);
}

/// Returns: the best CPU ms of the SoA pass over `n` entities: the padded loop over the health
/// column that soa_vector intends (layout.hpp's soa_pass).
double time_soa(std::size_t n) {
    columns es;
    es.resize(n);
    fill(es, std::make_index_sequence<shape::fields>{});
    return layout::best_ms(repeats, [&] {
        float* health = es.template column_data<shape::health>();
        const std::size_t m = es.padded_size();
        for (std::size_t i = 0; i < m; ++i)
            health[i] -= 0.5f;
        do_not_optimize(health);
    });
}

json run_layout(const json& args) {
    const std::size_t n = int_arg(args, "entities", 1000, 1'000'000, 200'000);
    std::lock_guard lock(measure_mutex());
    // One store at a time: the peak is one copy.
    const double aos_ms = time_aos(n);
    const double soa_ms = time_soa(n);
    const auto side = [](std::size_t bytes, double ms) {
        const std::size_t loaded = layout::loaded_bytes(bytes);
        return json{{"lines", loaded / layout::cache_line}, {"bytes_loaded", loaded}, {"ms", ms}};
    };
    return {{"entities", n},
            {"entity_bytes", shape::entity_bytes},
            {"field_bytes", layout::field_bytes},
            {"line_bytes", layout::cache_line},
            {"aos", side(n * shape::entity_bytes, aos_ms)},
            {"soa", side(n * layout::field_bytes, soa_ms)},
            {"bytes_used", n * layout::field_bytes}};
}

} // namespace

std::unique_ptr<demo> make_layout_demo(const limits&) {
    return std::make_unique<measuring_demo>("layout", &run_layout, 1024);
}

} // namespace strata::lab::serve
