#include "timer.hpp"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <sstream>
#include <vector>

#include "metrics.hpp"

#if STRATA_LAB_HAS_TSC
#include <cpuid.h>
#endif

namespace strata::lab {

namespace {

// Whether the TSC ticks at a constant rate through frequency changes and sleep states: CPUID leaf
// 0x80000007 EDX bit 8 ("invariant TSC"). Hypervisors often hide that bit while still providing a
// stable TSC, so Linux's own judgement (/proc/cpuinfo flags constant_tsc + nonstop_tsc) also counts.
void detect_invariant(calibration& c) {
#if STRATA_LAB_HAS_TSC
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) && (edx & (1u << 8))) {
        c.invariant_counter = true;
        c.invariant_reason = "CPUID invariant TSC";
        return;
    }
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("flags", 0) != 0) continue;
        std::istringstream words(line);
        bool constant = false, nonstop = false;
        for (std::string w; words >> w;) {
            constant = constant || w == "constant_tsc";
            nonstop = nonstop || w == "nonstop_tsc";
        }
        c.invariant_counter = constant && nonstop;
        c.invariant_reason = c.invariant_counter ? "constant_tsc + nonstop_tsc" : "no invariant-TSC flags";
        return;
    }
    c.invariant_counter = false;
    c.invariant_reason = "invariant TSC not reported";
#else
    c.invariant_counter = true;
    c.invariant_reason = "steady_clock";
#endif
}

} // namespace

calibration calibrate(std::chrono::microseconds window, int overhead_samples) {
    using clock = std::chrono::steady_clock;
    calibration c;
#if STRATA_LAB_HAS_TSC
    c.counter = "rdtsc";
    // Warm the path once, then time the window with both clocks.
    (void)tick_begin();
    (void)clock::now();
    const clock::time_point c0 = clock::now();
    const std::uint64_t t0 = tick_begin();
    clock::time_point c1 = c0;
    while ((c1 = clock::now()) - c0 < window) {
    }
    const std::uint64_t t1 = tick_end();
    const double ns = std::chrono::duration<double, std::nano>(c1 - c0).count();
    c.window_ms = ns / 1e6;
    c.ns_per_tick = t1 > t0 ? ns / static_cast<double>(t1 - t0) : 1.0;
#else
    c.counter = "steady_clock";
    c.ns_per_tick = 1.0;
    c.window_ms = 0;
#endif
    detect_invariant(c);

    // Granularity: the gcd of the non-zero steps between back-to-back reads.
    std::uint64_t step_gcd = 0;
    std::uint64_t prev = tick_begin();
    for (int i = 0; i < 20000; ++i) {
        const std::uint64_t now = tick_begin();
        if (now > prev) step_gcd = std::gcd(step_gcd, now - prev);
        prev = now;
    }
    c.resolution_ticks = step_gcd ? static_cast<double>(step_gcd) : 1.0;

    std::vector<std::uint64_t> empty(static_cast<std::size_t>(std::max(overhead_samples, 1)));
    for (auto& e : empty) {
        const std::uint64_t a = tick_begin();
        const std::uint64_t b = tick_end();
        e = b - a;
    }
    std::sort(empty.begin(), empty.end());
    c.overhead_ticks = static_cast<double>(percentile_sorted(std::span<const std::uint64_t>(empty), 50.0));
    c.overhead_min_ticks = static_cast<double>(empty.front());
    return c;
}

} // namespace strata::lab
