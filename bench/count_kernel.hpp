#pragma once
// What a bench file needs to take part in main.cpp's count mode (`--strata_count=NAME`): the
// registry of count kernels, and BENCH_KERNEL for the measured loops.
#include <cstddef>

namespace strata_bench {

/// Runs `fills` buffer fills of one benchmark's loop; returns the number of allocations made.
using count_kernel = std::size_t (*)(std::size_t fills);

/// Effects: makes `kernel` runnable as `--strata_count=name` (defined in main.cpp). Returns: true,
/// so a file can register from a namespace-scope initializer.
bool register_count_kernel(const char* name, count_kernel kernel);

} // namespace strata_bench

// The measured loops: never inlined into the caller and never specialised by IPA (GCC's noipa), so
// each contender's loop is one stand-alone function that callgrind and objdump can find by name.
#if defined(__clang__)
#define BENCH_KERNEL __attribute__((noinline))
#else
#define BENCH_KERNEL __attribute__((noinline, noipa))
#endif
