#include "strata/core/check.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "support/recording_handler.hpp"

namespace {

TEST(Check, NamesAreStable) {
    EXPECT_STREQ(strata::to_string(strata::violation_kind::double_free), "double_free");
    EXPECT_STREQ(strata::to_string(strata::violation_kind::out_of_order_free), "out_of_order_free");
    EXPECT_STREQ(strata::to_string(strata::violation_kind::invalid_marker), "invalid_marker");
    EXPECT_STREQ(strata::to_string(strata::violation_kind::stale_handle), "stale_handle");
}

TEST(Check, HandlerIsReplaceableAndRestored) {
    const strata::violation_handler original = strata::get_violation_handler();
    EXPECT_EQ(original, &strata::default_violation_handler);
    {
        strata::test::recording_handler rec;
        EXPECT_NE(strata::get_violation_handler(), original);
        strata::report_violation({strata::violation_kind::foreign_pointer, "unit", &rec, "a message"});
        ASSERT_EQ(rec.count(), 1u);
        EXPECT_EQ(rec.last().kind, strata::violation_kind::foreign_pointer);
        EXPECT_EQ(rec.last().allocator, "unit");
        EXPECT_EQ(rec.last().pointer, &rec);
        EXPECT_EQ(rec.last().message, "a message");
    }
    EXPECT_EQ(strata::get_violation_handler(), original);
    // nullptr restores the default.
    strata::set_violation_handler(nullptr);
    EXPECT_EQ(strata::get_violation_handler(), &strata::default_violation_handler);
}

TEST(Check, ViolationRecordsTheCallSite) {
    static strata::source_location seen;
    strata::scoped_violation_handler h([](const strata::violation& v) { seen = v.where; });
    const int line = __LINE__ + 1;
    strata::report_violation({strata::violation_kind::leak, "unit", nullptr, "leak"});
    EXPECT_EQ(static_cast<int>(seen.line()), line);
    EXPECT_NE(std::strstr(seen.file_name(), "check_test.cpp"), nullptr);
}

TEST(Check, VerifyMacroReportsOnlyWhenEnabledAndFalse) {
    strata::test::recording_handler rec;
    int evaluated = 0;
    const bool ok = STRATA_VERIFY(1, (++evaluated, true), double_free, "unit", nullptr, "never");
    EXPECT_TRUE(ok);
    EXPECT_TRUE(rec.empty());
    const bool bad = STRATA_VERIFY(1, false, double_free, "unit", nullptr, "freed twice");
    if (STRATA_CHECKS >= 1) {
        EXPECT_FALSE(bad);
        EXPECT_TRUE(rec.saw_one(strata::violation_kind::double_free));
        EXPECT_EQ(evaluated, 1);
    } else {
        EXPECT_TRUE(bad); // compiled out: the condition is not even evaluated
        EXPECT_TRUE(rec.empty());
        EXPECT_EQ(evaluated, 0);
    }
    // A level above the build's checks is compiled out.
    EXPECT_TRUE(STRATA_VERIFY(3, false, corruption, "unit", nullptr, "level 3 does not exist"));
}

TEST(Check, HandlerMayThrow) {
    strata::scoped_violation_handler h(
        [](const strata::violation& v) { throw std::runtime_error(v.message); });
    EXPECT_THROW(strata::report_violation({strata::violation_kind::corruption, "unit", nullptr, "boom"}),
                 std::runtime_error);
}

TEST(CheckDeathTest, DefaultHandlerPrintsAndAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        strata::report_violation({strata::violation_kind::double_free, "strata::unit", nullptr, "twice"}),
        "strata: double_free in strata::unit .*twice");
}

} // namespace
