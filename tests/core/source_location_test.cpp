// strata::source_location (core/source_location.hpp): std::source_location where the toolchain has
// it, an equivalent otherwise; violations carry one that names the reporting call's site.
#include "strata/core/source_location.hpp"

#include <cstring>
#include <string_view>

#include <gtest/gtest.h>

#include "strata/core/check.hpp"

namespace {

strata::source_location here(strata::source_location where = strata::source_location::current()) {
    return where;
}

TEST(SourceLocation, CurrentNamesTheCallersFileAndLine) {
    const auto line = __LINE__ + 1;
    const strata::source_location loc = here();
    EXPECT_EQ(loc.line(), static_cast<std::uint_least32_t>(line));
    EXPECT_NE(std::strstr(loc.file_name(), "source_location_test.cpp"), nullptr) << loc.file_name();
    EXPECT_NE(std::string_view(loc.function_name()).find("TestBody"), std::string_view::npos)
        << loc.function_name();
}

TEST(SourceLocation, DefaultIsEmptyNotNull) {
    const strata::source_location loc;
    EXPECT_NE(loc.file_name(), nullptr);
    EXPECT_NE(loc.function_name(), nullptr);
    EXPECT_EQ(loc.line(), 0u);
}

// A violation built without a location records where it was built.
TEST(SourceLocation, AViolationRecordsWhereItWasMade) {
    const auto line = __LINE__ + 1;
    const strata::violation v{strata::violation_kind::leak, "test", nullptr, "message"};
    EXPECT_EQ(v.where.line(), static_cast<std::uint_least32_t>(line));
    EXPECT_NE(std::strstr(v.where.file_name(), "source_location_test.cpp"), nullptr);
}

} // namespace
