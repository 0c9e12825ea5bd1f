// Tests of strata_lab_core's small parts: the generator, percentile math, allocator name patterns
// and text hygiene.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "metrics.hpp"
#include "rng.hpp"
#include "text.hpp"

namespace lab = strata::lab;

// ---- generator ---------------------------------------------------------------------------------

TEST(LabSplitmix, MatchesReferenceVector) {
    // Reference outputs of Vigna's splitmix64.c for seed 1234567.
    lab::splitmix64 rng(1234567);
    EXPECT_EQ(rng.next(), 6457827717110365317ull);
    EXPECT_EQ(rng.next(), 3203168211198807973ull);
    EXPECT_EQ(rng.next(), 9817491932198370423ull);
    EXPECT_EQ(rng.next(), 4593380528125082431ull);
    EXPECT_EQ(rng.next(), 16408922859458223821ull);
}

TEST(LabSplitmix, BetweenStaysInRange) {
    lab::splitmix64 rng(7);
    for (int i = 0; i < 10000; ++i) {
        const auto v = rng.between(16, 64);
        ASSERT_GE(v, 16u);
        ASSERT_LE(v, 64u);
    }
    EXPECT_EQ(rng.between(5, 5), 5u);
}

// ---- percentiles -------------------------------------------------------------------------------

TEST(LabPercentile, NearestRankOnOneToHundred) {
    std::vector<int> v(100);
    std::iota(v.begin(), v.end(), 1);
    const std::span<const int> s(v);
    EXPECT_EQ(lab::percentile_sorted(s, 50.0), 50);
    EXPECT_EQ(lab::percentile_sorted(s, 99.0), 99);
    EXPECT_EQ(lab::percentile_sorted(s, 99.9), 100);
    EXPECT_EQ(lab::percentile_sorted(s, 100.0), 100);
    EXPECT_EQ(lab::percentile_sorted(s, 1.0), 1);
    EXPECT_EQ(lab::percentile_sorted(s, 0.0), 1);
    EXPECT_EQ(lab::percentile_sorted(s, 0.5), 1);
    EXPECT_EQ(lab::percentile_sorted(s, 25.0), 25);
}

TEST(LabPercentile, NearestRankOnOneToThousandAndTiny) {
    std::vector<std::uint32_t> v(1000);
    std::iota(v.begin(), v.end(), 1u);
    const std::span<const std::uint32_t> s(v);
    EXPECT_EQ(lab::percentile_sorted(s, 99.9), 999u);
    EXPECT_EQ(lab::percentile_sorted(s, 99.0), 990u);
    EXPECT_EQ(lab::percentile_sorted(s, 50.0), 500u);

    const std::vector<std::uint32_t> one{7};
    EXPECT_EQ(lab::percentile_sorted(std::span<const std::uint32_t>(one), 50.0), 7u);
    EXPECT_EQ(lab::percentile_sorted(std::span<const std::uint32_t>(one), 99.9), 7u);
    const std::vector<std::uint32_t> none;
    EXPECT_EQ(lab::percentile_sorted(std::span<const std::uint32_t>(none), 50.0), 0u);
}

// The JSON's tail points 100 (1 - 10^-k) each name their own rank.
TEST(LabPercentile, TailPointsKeepTheirDigits) {
    std::vector<std::uint32_t> v(1'000'000);
    std::iota(v.begin(), v.end(), 1u);
    const std::span<const std::uint32_t> s(v);
    const auto at = [&](double k) { return lab::percentile_sorted(s, 100.0 * (1.0 - std::pow(10.0, -k))); };
    EXPECT_EQ(at(5.5), 999'997u);
    EXPECT_EQ(at(5.25), 999'995u);
    EXPECT_EQ(at(4.25), 999'944u);
    EXPECT_EQ(at(6.0), 999'999u);
    EXPECT_EQ(lab::percentile_sorted(s, 99.9), 999'000u);
    EXPECT_EQ(lab::percentile_sorted(s, 99.99), 999'900u);
}

// ---- text ----------------------------------------------------------------------------------------

TEST(LabText, GlobMatch) {
    EXPECT_TRUE(lab::glob_match("arena", "arena"));
    EXPECT_FALSE(lab::glob_match("arena", "arena_buffer"));
    EXPECT_TRUE(lab::glob_match("arena*", "arena_buffer"));
    EXPECT_TRUE(lab::glob_match("arena*", "arena"));
    EXPECT_TRUE(lab::glob_match("*stack*", "double_stack"));
    EXPECT_TRUE(lab::glob_match("frame_allocator?", "frame_allocator2"));
    EXPECT_FALSE(lab::glob_match("?", ""));
    EXPECT_TRUE(lab::glob_match("*", ""));
    EXPECT_FALSE(lab::glob_match("malloc", "mallo"));
}

TEST(LabText, FormatsBytesAndCounts) {
    EXPECT_EQ(lab::format_bytes(512), "512 B");
    EXPECT_EQ(lab::format_bytes(1536), "1.5 KiB");
    EXPECT_EQ(lab::format_bytes(std::size_t{3} << 20), "3.00 MiB");
    EXPECT_EQ(lab::format_bytes(std::size_t{5} << 30), "5.00 GiB");
    EXPECT_EQ(lab::format_count(0), "0");
    EXPECT_EQ(lab::format_count(999), "999");
    EXPECT_EQ(lab::format_count(1200000), "1,200,000");
}

// Names from recorded programs go through text hygiene before they are printed or written as JSON.

TEST(LabText, Utf8SequencesFollowUnicodeTable3_7) {
    using strata::lab::utf8_sequence;
    EXPECT_EQ(utf8_sequence("\xC3\xA9", 0), 2u);         // e acute
    EXPECT_EQ(utf8_sequence("\xE2\x82\xAC", 0), 3u);     // euro sign
    EXPECT_EQ(utf8_sequence("\xF0\x9F\x98\x80", 0), 4u); // U+1F600
    EXPECT_EQ(utf8_sequence("\xC0\xAF", 0), 0u);         // overlong '/'
    EXPECT_EQ(utf8_sequence("\xE0\x80\xAF", 0), 0u);     // overlong, three bytes
    EXPECT_EQ(utf8_sequence("\xED\xA0\x80", 0), 0u);     // a surrogate
    EXPECT_EQ(utf8_sequence("\xF4\x90\x80\x80", 0), 0u); // past U+10FFFF
    EXPECT_EQ(utf8_sequence("\x80", 0), 0u);             // a stray continuation
    EXPECT_EQ(utf8_sequence("\xE2\x82", 0), 0u);         // cut short
    EXPECT_EQ(utf8_sequence("\xE2\x82(", 0), 0u);        // not a continuation
}

TEST(LabText, JsonQuoteEscapesAndReplacesWhatIsNotUtf8) {
    using strata::lab::json_quote;
    EXPECT_EQ(json_quote("plain"), R"("plain")");
    EXPECT_EQ(json_quote(R"(a"b\c)"), R"("a\"b\\c")");
    EXPECT_EQ(json_quote("x\ny\tz"), R"("x\ny\tz")");
    EXPECT_EQ(json_quote("\x1b[2J"), R"("\u001b[2J")");
    EXPECT_EQ(json_quote(std::string("a\0b", 3)), R"("a\u0000b")");
    EXPECT_EQ(json_quote("caf\xC3\xA9"), "\"caf\xC3\xA9\"");        // kept as UTF-8
    EXPECT_EQ(json_quote("bad\xFF\xC3("), R"("bad\ufffd\ufffd(")"); // one U+FFFD per bad byte
}

TEST(LabText, PrintableNeutralisesTerminalControls) {
    using strata::lab::printable;
    EXPECT_EQ(printable("./game --level 3"), "./game --level 3");
    EXPECT_EQ(printable("\x1b]0;owned\x07name"), "?]0;owned?name");
    EXPECT_EQ(printable("a\rb\x7f"), "a?b?");
    EXPECT_EQ(printable("\xFFok\xE2\x82\xAC"), "\xEF\xBF\xBDok\xE2\x82\xAC");
}
