#pragma once
// std::source_location where the toolchain has it; otherwise an equivalent built on the
// __builtin_FILE/LINE/FUNCTION intrinsics (clang 14 with libstdc++ 12 lacks the std one).
#include <version>

#if defined(__cpp_lib_source_location)
#include <source_location>
namespace strata {
using source_location = std::source_location;
} // namespace strata
#else
#include <cstdint>
namespace strata {
class source_location {
public:
    static constexpr source_location current(const char* file = __builtin_FILE(),
                                             const char* function = __builtin_FUNCTION(),
                                             std::uint_least32_t line = __builtin_LINE()) noexcept {
        source_location s;
        s.file_ = file;
        s.function_ = function;
        s.line_ = line;
        return s;
    }
    constexpr source_location() noexcept = default;
    [[nodiscard]] constexpr const char* file_name() const noexcept { return file_; }
    [[nodiscard]] constexpr const char* function_name() const noexcept { return function_; }
    [[nodiscard]] constexpr std::uint_least32_t line() const noexcept { return line_; }
    [[nodiscard]] constexpr std::uint_least32_t column() const noexcept { return 0; }

private:
    const char* file_ = "";
    const char* function_ = "";
    std::uint_least32_t line_ = 0;
};
} // namespace strata
#endif
