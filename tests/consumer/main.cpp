// Uses strata through its installed (or add_subdirectory) CMake target only.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>

#include <strata/core/align.hpp>
#include <strata/core/check.hpp>

int main() {
    static_assert(strata::is_pow2(64));
    int failures = 0;
    const auto expect = [&failures](bool ok, const char* what) {
        if (!ok) {
            std::fprintf(stderr, "strata_consumer: FAILED %s\n", what);
            ++failures;
        }
    };

    expect(strata::is_pow2(1) && strata::is_pow2(4096), "is_pow2 accepts powers of two");
    expect(!strata::is_pow2(0) && !strata::is_pow2(48), "is_pow2 rejects 0 and 48");
    expect(strata::checked_add(2, 3) == std::size_t{5}, "checked_add(2, 3) == 5");
    expect(!strata::checked_add(std::numeric_limits<std::size_t>::max(), 1), "checked_add overflow");
    // A symbol compiled into libstrata, so the link against the library is exercised too.
    expect(std::strcmp(strata::to_string(strata::violation_kind::double_free), "double_free") == 0,
           "to_string(violation_kind) links");

    if (failures == 0) std::printf("strata_consumer: ok (checks level %d)\n", strata::checks_level);
    return failures == 0 ? 0 : 1;
}
