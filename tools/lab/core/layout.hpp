#pragma once
// AoS vs SoA: passes over many entities stored as structs (std::vector<entity>) and as columns
// (strata::soa_vector, one 64-byte aligned column per four-byte field), timed as this thread's CPU
// time and counted as whole cache lines loaded against bytes used. `strata-lab layout`,
// `strata-lab showdown`, the live lab's layout demo and bench/layout_bench.cpp all measure here.
#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "strata/layout/soa_vector.hpp"

#include "timer.hpp"

namespace strata::lab::layout {

/// The clock of every timed pass: this thread's CPU time, not wall time. On a shared machine wall
/// time counts the slices other processes run in; CPU time does not.
struct cpu_clock {
    using time_point = std::uint64_t; // nanoseconds
    static time_point now() noexcept {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
               static_cast<std::uint64_t>(ts.tv_nsec);
    }
};
inline double ms_since(cpu_clock::time_point t0) { return static_cast<double>(cpu_clock::now() - t0) / 1e6; }

/// Returns: the best (least) CPU milliseconds of `repeats` calls of `f`: the least disturbed by the
/// other processes of a shared machine.
template <class F>
double best_ms(int repeats, F&& f) {
    double best = 1e300;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = cpu_clock::now();
        f();
        best = std::min(best, ms_since(t0));
    }
    return best;
}

inline constexpr std::size_t cache_line = 64;
inline constexpr std::size_t field_bytes = sizeof(float);

/// Returns: the bytes of the whole cache lines that `bytes` contiguous bytes occupy.
constexpr std::size_t loaded_bytes(std::size_t bytes) noexcept {
    return (bytes + cache_line - 1) / cache_line * cache_line;
}

/// Times of one pass over every entity, best of the repeats, in ms.
struct timings {
    double aos_ms = 0;          ///< touch-one-field, AoS
    double soa_ms = 0;          ///< touch-one-field, SoA, the padded loop soa_vector intends
    double soa_unpadded_ms = 0; ///< touch-one-field, SoA, the same loop to size()
    double aos_all_ms = 0;      ///< touch-all, AoS (0 when not measured)
    double soa_all_ms = 0;      ///< touch-all, SoA (0 when not measured)
};

namespace detail {
template <std::size_t>
using float_column = float;
template <class Seq>
struct columns_of;
template <std::size_t... I>
struct columns_of<std::index_sequence<I...>> {
    using type = strata::soa_vector<float_column<I>...>;
};
} // namespace detail

/// Entities of `Fields` four-byte fields; touch-one-field updates field `Health` (health -= dt),
/// touch-all updates every field.
template <std::size_t Fields, std::size_t Health>
struct shape {
    static constexpr std::size_t fields = Fields, health = Health;
    struct entity {
        float field[Fields];
    };
    static constexpr std::size_t entity_bytes = sizeof(entity);
    static constexpr std::size_t health_offset = Health * field_bytes;
    using columns = typename detail::columns_of<std::make_index_sequence<Fields>>::type;

    static void aos_pass(std::vector<entity>& es, float dt) noexcept {
        for (entity& e : es)
            e.field[Health] -= dt;
    }
    /// The SoA pass as soa_vector intends it: an index loop over the padded health column.
    static void soa_pass(columns& es, float dt) noexcept {
        column_pass(es.template column_data<Health>(), es.padded_size(), dt);
    }
    /// The naive SoA pass: the same loop to size(), which g++ -O2 does not vectorize (it would need
    /// an epilogue), to show what the padding buys.
    static void soa_pass_unpadded(columns& es, float dt) noexcept {
        column_pass(es.template column_data<Health>(), es.size(), dt);
    }
    static void aos_all(std::vector<entity>& es, float dt) noexcept {
        for (entity& e : es)
            for (float& f : e.field)
                f -= dt;
    }
    static void soa_all(columns& es, float dt) noexcept {
        soa_all(es, dt, std::make_index_sequence<Fields>{});
    }

    static std::vector<entity> make_aos(std::size_t n) {
        std::vector<entity> es(n);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t k = 0; k < Fields; ++k)
                es[i].field[k] = static_cast<float>((i * 31 + k) % 1000);
        return es;
    }
    static columns make_soa(std::size_t n) {
        columns es;
        es.resize(n);
        fill(es, std::make_index_sequence<Fields>{});
        return es;
    }

    /// Returns: the best of `repeats` of each pass over `n` entities (touch-all too when `all`). AoS
    /// and SoA are built one after the other, so the peak memory is one copy.
    static timings measure(std::size_t n, int repeats, bool all) {
        timings t;
        {
            std::vector<entity> aos = make_aos(n);
            t.aos_ms = best_ms(repeats, [&] { aos_pass(aos, 0.5f), do_not_optimize(aos.data()); });
            if (all)
                t.aos_all_ms = best_ms(repeats, [&] { aos_all(aos, 0.5f), do_not_optimize(aos.data()); });
        }
        columns soa = make_soa(n);
        t.soa_ms = best_ms(repeats,
                           [&] { soa_pass(soa, 0.5f), do_not_optimize(soa.template column_data<Health>()); });
        t.soa_unpadded_ms = best_ms(repeats, [&] {
            soa_pass_unpadded(soa, 0.5f), do_not_optimize(soa.template column_data<Health>());
        });
        if (all)
            t.soa_all_ms =
                best_ms(repeats, [&] { soa_all(soa, 0.5f), do_not_optimize(soa.template column_data<0>()); });
        return t;
    }

private:
    static void column_pass(float* health, std::size_t n, float dt) noexcept {
        for (std::size_t i = 0; i < n; ++i)
            health[i] -= dt;
    }
    template <std::size_t... I>
    static void soa_all(columns& es, float dt, std::index_sequence<I...>) noexcept {
        (column_pass(es.template column_data<I>(), es.padded_size(), dt), ...);
    }
    template <std::size_t... I>
    static void fill(columns& es, std::index_sequence<I...>) {
        for (std::size_t i = 0; i < es.size(); ++i)
            ((es.template get<I>(i) = static_cast<float>((i * 31 + I) % 1000)), ...);
    }
};

/// 32 bytes, health at offset 24 (two entities per cache line): showdown, the live lab, the bench.
using small_entity = shape<8, 6>;
/// 64 bytes, health at offset 40 (one entity per cache line, as engines often round it): layout.
using line_entity = shape<16, 10>;

} // namespace strata::lab::layout
