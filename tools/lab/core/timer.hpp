#pragma once
// strata-lab timing: a cycle-counter read around single calls, and its calibration to nanoseconds.
//
// The reads (tick_begin/tick_end) are inline here so a timed loop pays only for them; the
// calibration lives in timer.cpp. On x86 the counter is the TSC read with `lfence; rdtsc; lfence`
// (rdtscp is not assumed: some virtual machines hide it). Elsewhere it is std::chrono::steady_clock
// in nanoseconds (one tick = 1 ns), which is coarser and slower but honest.
#include <chrono>
#include <cstdint>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define STRATA_LAB_HAS_TSC 1
#else
#define STRATA_LAB_HAS_TSC 0
#endif

namespace strata::lab {

/// Keeps the compiler from moving memory accesses across this point.
inline void compiler_barrier() noexcept {
#if defined(__GNUC__) || defined(__clang__)
    __asm__ __volatile__("" ::: "memory");
#endif
}

/// Makes `p` count as used, so the call that produced it cannot be dropped or sunk past a timer read.
inline void do_not_optimize(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    __asm__ __volatile__("" : : "r"(p) : "memory");
#else
    static const void* volatile sink;
    sink = p;
#endif
}

/// Returns: the counter, read after every earlier instruction has completed and before any later
/// one starts (lfence before and after rdtsc).
inline std::uint64_t tick_begin() noexcept {
#if STRATA_LAB_HAS_TSC
    _mm_lfence();
    const std::uint64_t t = __rdtsc();
    _mm_lfence();
#else
    const auto t = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
    compiler_barrier();
    return t;
}

/// Returns: the counter, read after the timed code has completed.
inline std::uint64_t tick_end() noexcept {
    compiler_barrier();
#if STRATA_LAB_HAS_TSC
    _mm_lfence();
    const std::uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
#else
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

/// The result of calibrate(): how to turn tick differences into nanoseconds.
struct calibration {
    std::string counter;           ///< "rdtsc" or "steady_clock"
    double ns_per_tick = 1.0;      ///< measured against steady_clock
    double window_ms = 0;          ///< how long the calibration ran
    double overhead_ticks = 0;     ///< median of an empty tick_begin/tick_end pair
    double overhead_min_ticks = 0; ///< minimum of the same
    double resolution_ticks = 1;   ///< counter granularity: gcd of the steps between consecutive
                                   ///< reads (some CPUs, e.g. AMD Zen in VMs, step by 20+ ticks)
    bool invariant_counter = true; ///< false: the TSC may change rate (frequency scaling)
    std::string invariant_reason;  ///< where the answer came from

    [[nodiscard]] double ghz() const noexcept { return ns_per_tick > 0 ? 1.0 / ns_per_tick : 0; }
    [[nodiscard]] double overhead_ns() const noexcept { return overhead_ticks * ns_per_tick; }
    [[nodiscard]] double resolution_ns() const noexcept { return resolution_ticks * ns_per_tick; }
    /// Returns: `ticks` less the empty-timer overhead, clamped at 0, in nanoseconds.
    [[nodiscard]] double net_ns(double ticks) const noexcept {
        const double net = ticks - overhead_ticks;
        return net > 0 ? net * ns_per_tick : 0.0;
    }
};

/// Effects: spins for about `window` comparing the counter with steady_clock, measures the
/// counter's granularity, then times `overhead_samples` empty tick_begin/tick_end pairs.
/// Defined in timer.cpp.
[[nodiscard]] calibration calibrate(std::chrono::microseconds window = std::chrono::milliseconds(50),
                                    int overhead_samples = 200000);

} // namespace strata::lab
