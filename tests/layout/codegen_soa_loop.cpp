// Compiled by the strata_layout_codegen ctest (tests/layout/family.cmake) with
// `<compiler> -O2 -fopt-info-vec-optimized`: every loop below must report "loop vectorized" (the
// test counts them). Not part of the test binary (the name does not end in _test.cpp).
//
// What g++ 12 -O2 (very-cheap cost model) needs, found by compiling variants of these loops:
//  - a trip count it can prove is a multiple of the vector width: loop to padded_size();
//  - no runtime alias check: `__restrict` on *function parameters* (g++ ignores it on local
//    pointer variables initialized inside the function, and then wants an alias check);
//  - an index loop: a range-for over the padded span did not vectorize.
#include <cstddef>

#include "strata/layout/soa_vector.hpp"

using particles = strata::soa_vector<float, float, float, float, int>;

// One column, read-modify-write: the loop of "touch one field of every entity".
void age(particles& p, float dt) {
    float* life = p.column_data<2>();
    const std::size_t n = p.padded_size();
    for (std::size_t i = 0; i < n; ++i)
        life[i] -= dt;
}

// Two columns, x += vx * dt: the kernel takes __restrict parameters, the caller passes columns.
static inline void integrate_kernel(float* __restrict x, const float* __restrict vx, std::size_t n,
                                    float dt) {
    for (std::size_t i = 0; i < n; ++i)
        x[i] += vx[i] * dt;
}
void integrate(particles& p, float dt) {
    integrate_kernel(p.column_data<0>(), p.column_data<1>(), p.padded_size(), dt);
}

// Through the padded span, with an index loop.
void bump(particles& p) {
    const auto ids = p.padded_column<4>();
    for (std::size_t i = 0; i < ids.size(); ++i)
        ids[i] += 1;
}
