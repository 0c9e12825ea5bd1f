#include "embedded.hpp"

#if defined(STRATA_LAB_EMBEDDED_TRACE)
// .incbin puts the file's bytes into .rodata as they are: no 6 MB hex literal to compile, and the
// build re-runs when the file changes (OBJECT_DEPENDS in tools/lab/CMakeLists.txt).
__asm__(".pushsection .rodata\n"
        ".balign 16\n"
        "strata_lab_embedded_trace_begin:\n"
        ".incbin \"" STRATA_LAB_EMBEDDED_TRACE "\"\n"
        "strata_lab_embedded_trace_end:\n"
        ".popsection\n");
extern "C" const std::byte strata_lab_embedded_trace_begin[];
extern "C" const std::byte strata_lab_embedded_trace_end[];
#endif

namespace strata::lab {

std::span<const std::byte> embedded_trace() noexcept {
#if defined(STRATA_LAB_EMBEDDED_TRACE)
    return {strata_lab_embedded_trace_begin, strata_lab_embedded_trace_end};
#else
    return {};
#endif
}

} // namespace strata::lab
