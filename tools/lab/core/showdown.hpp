#pragma once
// The handle showdown: the particle benchmark's four sets (alloc/free, churn, iteration of a particle
// system) over the designs of design_list, plus handle lookup. Header-only so `strata-lab showdown`,
// bench/handle_bench.cpp and the lab tests share one implementation of every contender and of the
// workload. The AoS-vs-SoA pass the showdown also times is layout.hpp's.
//
// Workload of one set: spawn `allocs` particles, kill `frees` of them (the alloc/free
// phase), then `frames` frames of killing `churn` random live particles and spawning `churn` new
// ones (the churn phase), then `iterations` update passes over every live particle (the iteration
// phase). Victims are the k-th live particle, k drawn from a seeded generator before timing; each
// design finds its k-th live particle its own natural way (packed_array: index k; slot_map:
// key_of(k) then erase(handle); handle_table: handle_at(k) then erase(handle); the pools and
// plf::colony: a side vector of references with swap-and-pop, which is what their users keep).
#include <plf_colony.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/handle/handle_table.hpp"
#include "strata/handle/packed_array.hpp"
#include "strata/handle/slot_map.hpp"
#include "strata/layout/soa_slot_map.hpp"

#include "layout.hpp"
#include "rng.hpp"

namespace strata::lab::showdown {

/// The benchmark's particle: 24 bytes.
struct particle {
    bool is_active = false;
    float position[2] = {};
    float velocity[2] = {};
    float lifetime_remaining = 0;
};
static_assert(sizeof(particle) == 24, "the benchmark's particle is 24 bytes");

/// The 32-byte padded variant.
struct particle32 : particle {
    float pad[2] = {};
};
static_assert(sizeof(particle32) == 32, "the padded particle is 32 bytes");

/// One benchmark set.
struct set_config {
    const char* name;
    const char* title;
    std::size_t allocs;
    std::size_t frees;
    std::size_t iterations;
    std::size_t churn;  ///< kills and spawns per frame
    std::size_t frames; ///< churn frames
};

/// The four sets, as the published benchmark defines them.
inline constexpr set_config published_sets[4] = {
    {"set1", "Set 1: high churn (95% free)", 10'000, 9'500, 1'000, 500, 1'000},
    {"set2", "Set 2: low churn (5% free)", 10'000, 500, 1'000, 500, 1'000},
    {"set3", "Set 3: high alloc/free cost", 100'000, 99'500, 1'000, 500, 1'000},
    {"set4", "Set 4: high iteration cost", 10'000, 9'500, 100'000, 500, 1'000},
};

/// Returns: `s` scaled down for tests and --quick (same shape, ~1/10 to 1/100 of the work).
inline set_config quick(set_config s) {
    s.allocs = std::max<std::size_t>(s.allocs / 10, 100);
    s.frees = s.frees / 10;
    s.iterations = std::max<std::size_t>(s.iterations / 100, 10);
    s.churn = std::max<std::size_t>(s.churn / 10, 5);
    s.frames = std::max<std::size_t>(s.frames / 10, 10);
    return s;
}

/// The three phase times of one run, in milliseconds.
struct timings {
    double alloc_free_ms = 0;
    double churn_ms = 0;
    double iteration_ms = 0;
    double checksum = 0; ///< sum over live particles after the run (keeps the work observable)
    std::size_t live = 0;
};

/// The benchmark's published figures (M4 Pro, ms) for the designs it measured; negative = not measured.
struct published {
    const char* design;
    timings sets[4];
};
inline const published published_figures[] = {
    {"naive", {{12.99, 35.91, 2.79}, {12.94, 613.37, 6.51}, {1244.46, 34.84, 25.13}, {12.78, 35.44, 273.18}}},
    {"free_list", {{0.17, 0.44, 5.48}, {0.13, 0.51, 7.63}, {1.41, 0.46, 32.69}, {0.15, 0.43, 542.18}}},
    {"packed_array", {{0.27, 0.39, 0.31}, {0.15, 0.80, 6.92}, {2.73, 0.39, 0.31}, {0.26, 0.38, 30.79}}},
    {"slot_map", {{0.15, 1.19, 0.31}, {0.15, 1.69, 7.00}, {1.62, 1.19, 0.31}, {0.15, 1.17, 30.62}}},
};

/// Returns: the published figures for `design`, or nullptr when none were published.
inline const published* published_for(std::string_view design) {
    for (const published& p : published_figures)
        if (design == p.design) return &p;
    return nullptr;
}

// ---- the update every design runs per live particle ---------------------------------------------

template <class P>
inline void update(P& p, float dt) noexcept {
    p.position[0] += p.velocity[0] * dt;
    p.position[1] += p.velocity[1] * dt;
    p.lifetime_remaining -= dt;
}

template <class P>
inline P make_particle(std::uint32_t i) noexcept {
    P p;
    p.is_active = true;
    p.position[0] = static_cast<float>(i % 1000);
    p.position[1] = static_cast<float>(i % 333);
    p.velocity[0] = 0.5f;
    p.velocity[1] = -0.25f;
    p.lifetime_remaining = 100.0f;
    return p;
}

// ---- the designs ----------------------------------------------------------------------------------

// Every design's update pass is its own out-of-line function whose loops start on a 64-byte
// boundary: a 500-particle pass is a loop of a few dozen bytes whose speed depends on where it sits
// in its cache line, so identical loops (packed_array's and slot_map's passes are the same machine
// code) time identically in any binary. The call costs one per pass, the same for every design. (GCC:
// optimize("align-loops=64") on these functions only; clang ignores that attribute, so there the function
// entry is aligned.)
#if defined(__GNUC__) && !defined(__clang__)
#define STRATA_SHOWDOWN_PASS __attribute__((noinline, optimize("align-loops=64")))
#elif defined(__clang__)
#define STRATA_SHOWDOWN_PASS __attribute__((noinline, aligned(64)))
#else
#define STRATA_SHOWDOWN_PASS
#endif

// Each offers: explicit D(std::size_t capacity); void spawn(std::uint32_t i); void kill(std::size_t k)
// (k < live()); std::size_t live() const; void iterate(float dt); double checksum() const.

/// Effects: removes v[k], moving the last element into its place. Returns: the removed element.
template <class T>
T swap_pop(std::vector<T>& v, std::size_t k) noexcept {
    const T x = v[k];
    v[k] = v.back();
    v.pop_back();
    return x;
}

/// Returns: the sum of every particle's lifetime in `range` (the designs' checksum).
template <class Range>
double lifetime_sum(const Range& range) noexcept {
    double s = 0;
    for (const auto& p : range)
        s += p.lifetime_remaining;
    return s;
}

/// What the naive and free-list pools share: every slot ever used, a flag per slot, iteration that
/// checks every slot, and a side vector of live slot indices for victims (swap-and-pop).
template <class P>
class flagged_slots {
public:
    explicit flagged_slots(std::size_t capacity) {
        slots_.reserve(capacity);
        refs_.reserve(capacity);
    }
    [[nodiscard]] std::size_t live() const noexcept { return refs_.size(); }
    STRATA_SHOWDOWN_PASS void iterate(float dt) noexcept {
        for (P& p : slots_)
            if (p.is_active) update(p, dt);
    }
    [[nodiscard]] double checksum() const noexcept {
        double s = 0;
        for (const P& p : slots_)
            if (p.is_active) s += p.lifetime_remaining;
        return s;
    }

protected:
    /// Effects: slot s holds a new particle i. Returns: s.
    std::uint32_t place(std::uint32_t s, std::uint32_t i) {
        if (s == slots_.size()) slots_.emplace_back();
        slots_[s] = make_particle<P>(i);
        refs_.push_back(s);
        return s;
    }
    /// Effects: the k-th live particle is dead. Returns: its slot.
    std::uint32_t remove(std::size_t k) noexcept {
        const std::uint32_t s = swap_pop(refs_, k);
        slots_[s].is_active = false;
        return s;
    }
    std::vector<P> slots_;
    std::vector<std::uint32_t> refs_;
};

/// Naive pool: spawn scans from the front for an inactive slot.
template <class P>
class naive_pool : public flagged_slots<P> {
public:
    using flagged_slots<P>::flagged_slots;
    void spawn(std::uint32_t i) {
        std::uint32_t s = 0;
        while (s < this->slots_.size() && this->slots_[s].is_active)
            ++s;
        (void)this->place(s, i);
    }
    void kill(std::size_t k) noexcept { (void)this->remove(k); }
};

/// Free-list pool: a free list threaded through dead particles' bytes.
template <class P>
class free_list_pool : public flagged_slots<P> {
public:
    using flagged_slots<P>::flagged_slots;
    void spawn(std::uint32_t i) {
        std::uint32_t s = static_cast<std::uint32_t>(this->slots_.size());
        if (head_ != none) {
            s = head_;
            std::memcpy(&head_, &this->slots_[s].position, sizeof head_); // the link lives in dead bytes
        }
        (void)this->place(s, i);
    }
    void kill(std::size_t k) noexcept {
        const std::uint32_t s = this->remove(k);
        std::memcpy(&this->slots_[s].position, &head_, sizeof head_);
        head_ = s;
    }

private:
    static constexpr std::uint32_t none = ~std::uint32_t{0};
    std::uint32_t head_ = none;
};

/// What the designs over one dense container C share: iteration over C's range of live particles.
template <class P, class C>
class dense_design {
public:
    explicit dense_design(std::size_t capacity) { c_.reserve(capacity); }
    [[nodiscard]] std::size_t live() const noexcept { return c_.size(); }
    STRATA_SHOWDOWN_PASS void iterate(float dt) noexcept {
        for (P& p : c_)
            update(p, dt);
    }
    [[nodiscard]] double checksum() const noexcept { return lifetime_sum(c_); }

protected:
    C c_;
};

/// strata::packed_array: victims by dense index.
template <class P>
class packed_design : public dense_design<P, strata::packed_array<P>> {
public:
    using dense_design<P, strata::packed_array<P>>::dense_design;
    void spawn(std::uint32_t i) { (void)this->c_.push_back(make_particle<P>(i)); }
    void kill(std::size_t k) noexcept { (void)this->c_.erase(k); }
};

struct particle_tag {};
using particle_handle = strata::handle<particle_tag>;
template <class P, class Reuse>
using slot_map_of = strata::slot_map<P, particle_handle, std::allocator<P>, strata::policy::retire, Reuse>;

/// strata::slot_map: victims by key_of(dense index), erased through the handle. Reuse is the
/// slot_map's free-slot reuse policy (the default, or policy::lifo / policy::compact explicitly).
template <class P, class Reuse = strata::policy::lifo>
class slot_map_design : public dense_design<P, slot_map_of<P, Reuse>> {
public:
    using dense_design<P, slot_map_of<P, Reuse>>::dense_design;
    void spawn(std::uint32_t i) { (void)this->c_.emplace(make_particle<P>(i)); }
    void kill(std::size_t k) noexcept { (void)this->c_.erase(this->c_.key_of(k)); }
};

/// strata::slot_map killing by dense index (erase_at(k)): what a system that walks the dense array
/// and kills as it goes pays, without the handle round trip of slot_map_design.
template <class P, class Reuse = strata::policy::lifo>
class slot_map_at_design : public slot_map_design<P, Reuse> {
public:
    using slot_map_design<P, Reuse>::slot_map_design;
    void kill(std::size_t k) noexcept { (void)this->c_.erase_at(k); }
};

/// strata::handle_table: victims by handle_at(k), erased through the handle; objects never move.
template <class P>
class handle_table_design {
public:
    explicit handle_table_design(std::size_t capacity) { t_.reserve(capacity); }
    void spawn(std::uint32_t i) { (void)t_.emplace(make_particle<P>(i)); }
    void kill(std::size_t k) noexcept { (void)t_.erase(t_.handle_at(k)); }
    [[nodiscard]] std::size_t live() const noexcept { return t_.size(); }
    STRATA_SHOWDOWN_PASS void iterate(float dt) noexcept {
        t_.for_each([dt](P& p) { update(p, dt); });
    }
    [[nodiscard]] double checksum() {
        double s = 0;
        t_.for_each([&s](P& p) { s += p.lifetime_remaining; });
        return s;
    }

private:
    strata::handle_table<P, particle_handle> t_;
};

/// plf::colony (Debian libplf-colony-dev): victims through a side vector of iterators.
template <class P>
class colony_design {
public:
    explicit colony_design(std::size_t capacity) { refs_.reserve(capacity); }
    void spawn(std::uint32_t i) { refs_.push_back(c_.insert(make_particle<P>(i))); }
    void kill(std::size_t k) { c_.erase(swap_pop(refs_, k)); }
    [[nodiscard]] std::size_t live() const noexcept { return refs_.size(); }
    STRATA_SHOWDOWN_PASS void iterate(float dt) noexcept {
        for (P& p : c_)
            update(p, dt);
    }
    [[nodiscard]] double checksum() const noexcept { return lifetime_sum(c_); }

private:
    plf::colony<P> c_;
    std::vector<typename plf::colony<P>::iterator> refs_;
};

/// strata::soa_slot_map: the same handles over structure-of-arrays storage, one column per field the
/// update touches (the `is_active` flag has no column: every dense element is live). Not the same
/// container with another name: the layout changes, so the update becomes five column loops the
/// compiler vectorizes (padded_size(), __restrict parameters; see docs/handles.md). It shows what
/// a system that may change its layout gets on the benchmark's workload; the AoS targets are judged on
/// slot_map. Victims by key_of(dense index), erased through the handle, as slot_map_design.
template <class P>
class soa_slot_map_design {
public:
    enum : std::size_t { px, py, vx, vy, life };
    using map_type = strata::soa_slot_map<particle_handle, float, float, float, float, float>;

    explicit soa_slot_map_design(std::size_t capacity) { m_.reserve(capacity); }
    void spawn(std::uint32_t i) {
        const P p = make_particle<P>(i);
        (void)m_.emplace(p.position[0], p.position[1], p.velocity[0], p.velocity[1], p.lifetime_remaining);
    }
    void kill(std::size_t k) noexcept { (void)m_.erase(m_.key_of(k)); }
    [[nodiscard]] std::size_t live() const noexcept { return m_.size(); }
    void iterate(float dt) noexcept {
        integrate(m_.template column_data<px>(), m_.template column_data<py>(),
                  m_.template column_data<life>(), m_.template column_data<vx>(),
                  m_.template column_data<vy>(), m_.padded_size(), dt);
    }
    [[nodiscard]] double checksum() const noexcept {
        double s = 0;
        for (const float l : m_.template column<life>())
            s += l;
        return s;
    }

private:
    // update() per column, over the padding too (padding elements exist; a loop may write them).
    STRATA_SHOWDOWN_PASS static void integrate(float* __restrict x, float* __restrict y, float* __restrict l,
                                               const float* __restrict vx_, const float* __restrict vy_,
                                               std::size_t padded, float dt) noexcept {
        // Out of line the compiler no longer sees padded_size()'s rounding; the mask restates it
        // (a no-op on the value), so the loop needs no epilogue and -O2 vectorizes it.
        const std::size_t n = padded & ~(map_type::dense_type::lane_multiple - 1);
        for (std::size_t i = 0; i < n; ++i) {
            x[i] += vx_[i] * dt;
            y[i] += vy_[i] * dt;
            l[i] -= dt;
        }
    }
    map_type m_;
};

// ---- the driver ------------------------------------------------------------------------------------

/// Returns: k in [0, n) from a 32-bit draw, without a division.
inline std::size_t pick(std::uint32_t draw, std::size_t n) noexcept {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(draw) * n) >> 32);
}

using layout::cpu_clock;
using layout::ms_since;

/// Runs one set over design D. Returns: the three phase times and a checksum.
template <class D>
timings run_set(const set_config& s, std::uint64_t seed = 42) {
    // Every random draw is made before timing: the phases time only the designs' own work.
    splitmix64 rng(seed);
    std::vector<std::uint32_t> draws(s.frees + s.churn * s.frames);
    for (auto& d : draws)
        d = static_cast<std::uint32_t>(rng.next() >> 32);
    const std::uint32_t* draw = draws.data();

    timings t;
    D d(s.allocs);
    std::uint32_t id = 0;
    auto t0 = cpu_clock::now();
    for (std::size_t i = 0; i < s.allocs; ++i)
        d.spawn(id++);
    for (std::size_t i = 0; i < s.frees; ++i)
        d.kill(pick(*draw++, d.live()));
    t.alloc_free_ms = ms_since(t0);

    t0 = cpu_clock::now();
    for (std::size_t f = 0; f < s.frames; ++f) {
        for (std::size_t i = 0; i < s.churn; ++i)
            d.kill(pick(*draw++, d.live()));
        for (std::size_t i = 0; i < s.churn; ++i)
            d.spawn(id++);
    }
    t.churn_ms = ms_since(t0);

    t0 = cpu_clock::now();
    for (std::size_t i = 0; i < s.iterations; ++i) {
        d.iterate(0.001f);
        do_not_optimize(&d);
    }
    t.iteration_ms = ms_since(t0);
    t.checksum = d.checksum();
    t.live = d.live();
    return t;
}

/// Returns: the best (minimum) of each phase over `repeats` runs: the least disturbed by the
/// other processes of a shared machine.
template <class D>
timings best_of(const set_config& s, int repeats, std::uint64_t seed = 42) {
    timings best = run_set<D>(s, seed);
    for (int r = 1; r < repeats; ++r) {
        const timings t = run_set<D>(s, seed);
        best.alloc_free_ms = std::min(best.alloc_free_ms, t.alloc_free_ms);
        best.churn_ms = std::min(best.churn_ms, t.churn_ms);
        best.iteration_ms = std::min(best.iteration_ms, t.iteration_ms);
    }
    return best;
}

/// The designs, by name, for one particle type.
template <class P>
struct design_list {
    using runner = timings (*)(const set_config&, int, std::uint64_t);
    struct entry {
        const char* name;
        runner run;
    };
    static constexpr entry all[] = {
        {"naive", &best_of<naive_pool<P>>},
        {"free_list", &best_of<free_list_pool<P>>},
        {"packed_array", &best_of<packed_design<P>>},
        {"slot_map", &best_of<slot_map_design<P>>},
        {"slot_map_at", &best_of<slot_map_at_design<P>>},
        {"handle_table", &best_of<handle_table_design<P>>},
        {"plf_colony", &best_of<colony_design<P>>},
        {"slot_map_compact", &best_of<slot_map_design<P, strata::policy::compact>>},
        {"slot_map_compact_at", &best_of<slot_map_at_design<P, strata::policy::compact>>},
        {"soa_slot_map", &best_of<soa_slot_map_design<P>>},
    };
};

// ---- handle lookup ----------------------------------------------------------------------------------

/// Returns: nanoseconds per valid-handle lookup (get(h) and a read of the value) in a container of
/// `live` particles with handles visited in a shuffled order, best of `repeats`.
template <class Container>
double lookup_ns(std::size_t live, std::size_t lookups, int repeats, std::uint64_t seed = 7) {
    Container c;
    std::vector<particle_handle> hs;
    hs.reserve(live);
    for (std::size_t i = 0; i < live; ++i)
        hs.push_back(c.emplace(make_particle<particle>(static_cast<std::uint32_t>(i))));
    splitmix64 rng(seed);
    for (std::size_t i = hs.size(); i > 1; --i)
        std::swap(hs[i - 1], hs[static_cast<std::size_t>(rng.next() % i)]);
    const std::size_t rounds = std::max<std::size_t>(1, lookups / live);
    const double ms = layout::best_ms(repeats, [&] {
        float sum = 0;
        for (std::size_t round = 0; round < rounds; ++round)
            for (const particle_handle h : hs)
                sum += c.get(h)->lifetime_remaining;
        do_not_optimize(&sum);
    });
    return ms * 1e6 / static_cast<double>(rounds * live);
}

} // namespace strata::lab::showdown
