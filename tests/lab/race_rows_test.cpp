// strata-lab race rows (tools/lab/core/race.cpp): what a row says when there was nothing to measure.
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "op_contenders.hpp"
#include "race.hpp"

namespace {

using namespace strata::lab;

race_options tlsf_once() {
    race_options o;
    o.only = {"tlsf"};
    o.replay.warmup = 0;
    o.replay.repeats = 1;
    o.replay.latency_passes = 0;
    o.progress = false;
    return o;
}

// A row with no memory sample (a workload with no operation left) has no fragmentation figure:
// "-" in the table and null in the JSON. It printed "0%", a measurement that never happened.
TEST(LabRaceRows, NoMemorySampleIsNoFragmentationFigure) {
    op_builder b("empty", "no operations");
    const calibration cal;
    const race_section s = race_workload(b.finish(), tlsf_once(), cal);
    ASSERT_EQ(s.rows.size(), 1u);
    ASSERT_TRUE(s.rows[0].result.series.empty());
    EXPECT_LT(s.rows[0].worst_frag, 0);
    std::ostringstream table, json;
    print_section(table, s);
    EXPECT_EQ(table.str().find("0%"), std::string::npos) << table.str();
    write_race_json(json, {s}, cal, "t");
    EXPECT_NE(json.str().find("\"worst_fragmentation\":null"), std::string::npos) << json.str();
}

// A row with samples keeps its figure (0 % when the free space is one block).
TEST(LabRaceRows, SampledRowHasAFragmentationFigure) {
    const calibration cal;
    const race_section s = race_workload(gen::make("bimodal", 0.01), tlsf_once(), cal);
    ASSERT_EQ(s.rows.size(), 1u);
    ASSERT_FALSE(s.rows[0].result.series.empty());
    EXPECT_GE(s.rows[0].worst_frag, 0);
}

// A section header is written whole, however long the workload's name and description (a trace
// file's name and its recorded command line were cut at 256 bytes, and the line after went too).
TEST(LabRaceRows, SectionHeaderIsNotCut) {
    race_section s;
    s.workload = std::string(300, 'n');
    s.description = "recorded: " + std::string(300, 'd');
    s.memory_ops = 20'000;
    for (const auto print : {+[](std::ostream&out, const race_section&x) { print_section(out, x); },
                             +[](std::ostream&out, const race_section&x) { print_fragmentation(out, x); }}) {
        std::ostringstream out;
        print(out, s);
        EXPECT_NE(out.str().find("== " + s.workload + ": " + s.description + "\n"), std::string::npos);
    }
    std::ostringstream out;
    print_section(out, s);
    EXPECT_NE(out.str().find("\n   20,000 memory ops, peak live"), std::string::npos) << out.str();
    std::ostringstream lat;
    print_latency(lat, s, calibration{});
    EXPECT_NE(lat.str().find(s.description + "\n   20,000 memory ops; ns per call"), std::string::npos);
}

} // namespace
