// tools/lab/core/race_summary.hpp: the closing table of a race and the one skipped line per workload.
#include "race_summary.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

using namespace strata::lab;

race_row row(const std::string& name, const std::string& description, double ns, double tail,
             std::uint64_t failed = 0) {
    race_row r;
    r.result.allocator = name;
    r.result.failed = failed;
    r.description = description;
    r.ns_per_op = ns;
    r.f_p9999 = tail;
    return r;
}

TEST(RaceSummary, SkippedAllocatorsShareOneLineGroupedByReason) {
    EXPECT_EQ(skipped_line({}), "");
    EXPECT_EQ(skipped_line({"arena (needs: every block freed within its frame)",
                            "stack (needs: every block freed within its frame)",
                            "pool (needs: one request size)", "buddy (failed: no memory)"}),
              "   skipped: arena, stack (every block freed within its frame); pool (one request size);\n"
              "     buddy (failed: no memory)\n");
    // Past 99 columns the line goes on below, indented, between two reasons.
    const std::string wrapped =
        skipped_line({"arena (needs: every block freed within its frame)", "pool (needs: one request size)",
                      "first_fit (needs: at most 500,000 operations, alignment <= 4096)"});
    EXPECT_EQ(wrapped, "   skipped: arena (every block freed within its frame); pool (one request size);\n"
                       "     first_fit (at most 500,000 operations, alignment <= 4096)\n");
}

TEST(RaceSummary, FastestStrataAgainstMallocAndTheFastestPeer) {
    race_section s;
    s.workload = "w1";
    s.rows = {row("malloc", "glibc", 20, 300),
              row("mimalloc", "mimalloc", 8, 100),
              row("tcmalloc", "tcmalloc", 5, 90),
              row("pmr_pool", "std::pmr", 1, 10), // not strata's: never the strata column
              row("tlsf", "strata::tlsf", 4, 50),
              row("size_class", "strata::size_class_pool", 2, 40, 1)}; // failed: not counted
    race_section none;
    none.workload = "no strata row";
    none.rows = {row("malloc", "glibc", 20, 300)};
    const auto rows = summarize_race({s, none});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].strata, "tlsf");
    EXPECT_EQ(rows[0].peer, "tcmalloc");
    EXPECT_DOUBLE_EQ(rows[0].vs_malloc, 5.0);
    EXPECT_DOUBLE_EQ(rows[0].vs_peer, 1.25);
    EXPECT_DOUBLE_EQ(rows[0].peer_tail, 90);
    EXPECT_EQ(kind_name(kind_of(s.rows[3])), std::string("other"));

    std::ostringstream json;
    write_race_summary_json(json, rows);
    EXPECT_NE(json.str().find("\"strata\":\"tlsf\""), std::string::npos);
    std::ostringstream table;
    print_race_summary(table, rows, 10);
    EXPECT_NE(table.str().find("5.00x"), std::string::npos);
}

TEST(RaceSummary, AWorkloadWithoutPeersPrintsDashesAndWritesNull) {
    race_section s;
    s.workload = "w3";
    s.rows = {row("pool", "strata::pool", 2, 5)};
    const auto rows = summarize_race({s});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_TRUE(rows[0].peer.empty());
    EXPECT_TRUE(std::isnan(rows[0].vs_malloc));
    std::ostringstream json;
    write_race_summary_json(json, rows);
    EXPECT_NE(json.str().find("\"peer\":null"), std::string::npos);
    EXPECT_NE(json.str().find("\"speed_vs_malloc\":null"), std::string::npos);
}

} // namespace
