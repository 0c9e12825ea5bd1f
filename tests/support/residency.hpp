#pragma once
// What the kernel says of a test's memory: resident pages (mincore) and this process's minor page
// faults (getrusage).
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::test {

/// Returns: the resident pages among the whole pages of [p, p + n); 0 when there are none or the
/// kernel refuses.
inline std::size_t resident_pages(const void* p, std::size_t n) {
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::uintptr_t lo = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
    const std::uintptr_t hi = (reinterpret_cast<std::uintptr_t>(p) + n) & ~(page - 1);
    if (hi <= lo) return 0;
    std::vector<unsigned char> v((hi - lo) / page);
    if (mincore(reinterpret_cast<void*>(lo), hi - lo, v.data()) != 0) return 0;
    return static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [](unsigned char c) { return c & 1; }));
}

/// Returns: this process's minor page faults so far.
inline long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

} // namespace strata::test
