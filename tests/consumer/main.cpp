// Uses strata through its installed (or add_subdirectory) CMake target only.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>

#include <strata/core/align.hpp>
#include <strata/core/check.hpp>
#include <strata/linear/arena.hpp>
#include <strata/source/heap_source.hpp>

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

    // The headers must see the level the library was built with (a Debug consumer of a Release
    // install compiled them at level 1 against a level-0 library: members differ between levels).
    expect(strata::library_checks_level() == strata::checks_level,
           "the headers see the library's checks level");

    // An allocator whose growth path is compiled into libstrata.
    {
        strata::heap_source source;
        strata::arena arena(source, strata::arena_options{.block_size = 1024});
        bool all = true;
        for (int i = 0; i < 100; ++i) {
            void* p = arena.allocate(100, 64);
            all = all && p != nullptr && strata::is_aligned(p, 64);
        }
        expect(all, "arena serves 100 aligned blocks while growing");
        expect(arena.block_count() > 1 && source.outstanding_blocks() == arena.block_count(), "arena grew");
        arena.reset();
        expect(arena.stats().in_use == 0, "reset releases everything");
    }

    if (failures == 0) std::printf("strata_consumer: ok (checks level %d)\n", strata::checks_level);
    return failures == 0 ? 0 : 1;
}
