// The strata-lab HTML report writer (tools/lab/report/html_report.cpp): one self-contained page with the
// race JSON embedded and escaped, and uPlot inlined when the build has it. The charts are tested in
// node (tests/lab/report_plots.mjs) and in a browser (tests/browser).
#include "html_report.hpp"

#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace {

// A small race document in the shape write_race_json emits, with a hostile string in it.
const std::string sample_json =
    R"({"title":"unit </script><script>alert(1)</script> <!-- x","timer":{"counter":"rdtsc",)"
    R"("ns_per_tick":0.5,"overhead_ns":20,"resolution_ns":10},"histogram_bins_per_doubling":8,)"
    R"("workloads":[{"name":"frame_scratch","description":"d","memory_ops":10,)"
    R"("peak_live_bytes":100,"peak_live_blocks":2,"threads":1,"skipped":[],"allocators":[)"
    R"({"name":"malloc","description":"glibc","ns_per_op":20,"failed":0,)"
    R"("latency_raw":{"p50":20,"p99":30,"p99.9":40,"p99.99":50,"max":60},)"
    R"("latency_filtered":{"passes":1,"p50":20,"p99":30,"p99.9":40,"p99.99":50,"max":60},)"
    R"("histogram_raw":[0,1],"histogram_filtered":[0,1],"tail_raw":[[50,20]],)"
    R"("tail_filtered":[[50,20]],"peak_footprint":4096,"internal_waste":0.1,)"
    R"("worst_fragmentation":null,"series":{"op":[0,10],"live_bytes":[0,100],)"
    R"("footprint":[4096,4096],"largest_free":null,"free_bytes":null}},)"
    R"({"name":"tlsf_arena_42","description":"x","ns_per_op":10,"failed":0}]},)"
    R"({"name":"particles","allocators":[{"name":"buddy_pool"}]}]})";

std::string render(const std::string& json) {
    std::ostringstream out;
    strata::lab::write_html_report(out, json);
    return out.str();
}

std::size_t count(const std::string& s, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1))
        ++n;
    return n;
}

} // namespace

TEST(html_report, escapes_the_script_terminator) {
    EXPECT_EQ(strata::lab::escape_json_for_script(R"({"a":"</script>","b":"<!--","c":"a<b"})"),
              R"({"a":"\u003c/script>","b":"\u003c!--","c":"a<b"})");
}

TEST(html_report, is_one_self_contained_page) {
    const std::string html = render(sample_json);
    ASSERT_GT(html.size(), 10'000U);
    EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0U);
    EXPECT_NE(html.find("</html>"), std::string::npos);
    // Nothing fetched: no URL, no reference to another file, no placeholder left over.
    EXPECT_EQ(html.find("http://"), std::string::npos);
    EXPECT_EQ(html.find("https://"), std::string::npos);
    EXPECT_EQ(html.find("src="), std::string::npos);
    EXPECT_EQ(html.find("href="), std::string::npos);
    EXPECT_EQ(html.find("@import"), std::string::npos);
    EXPECT_EQ(html.find("/*@STRATA_REPORT_"), std::string::npos);
    // The CSS and the module are inline.
    EXPECT_NE(html.find("<style>"), std::string::npos);
    EXPECT_NE(html.find("<script type=\"module\">"), std::string::npos);
    EXPECT_NE(html.find("figure.plot"), std::string::npos);
    EXPECT_NE(html.find("function render("), std::string::npos);
    // The live lab's chart helpers (tools/lab/web/plots.js) are in the same module, ahead of the
    // report's code, as plain declarations: no import, no export.
    const auto helpers = html.find("function ninesAxis(");
    ASSERT_NE(helpers, std::string::npos);
    EXPECT_LT(helpers, html.find("function render("));
    EXPECT_EQ(html.find("\nexport "), std::string::npos);
    EXPECT_EQ(html.find("\nimport "), std::string::npos);
}

TEST(html_report, embeds_the_json_escaped) {
    const std::string html = render(sample_json);
    // Only the page's own three </script> tags (data, uPlot, module): none from the JSON.
    EXPECT_EQ(count(html, "</script"), 3U);
    EXPECT_EQ(count(html, "<!--"), 0U);
    const auto start = html.find("<script type=\"application/json\" id=\"strata-data\">");
    ASSERT_NE(start, std::string::npos);
    const auto body = start + std::string("<script type=\"application/json\" id=\"strata-data\">").size();
    const auto end = html.find("</script>", body);
    ASSERT_NE(end, std::string::npos);
    const std::string embedded = html.substr(body, end - body);
    EXPECT_NE(embedded.find(strata::lab::escape_json_for_script(sample_json)), std::string::npos);
    EXPECT_NE(embedded.find(R"(unit \u003c/script><script>alert(1)\u003c/script> \u003c!-- x)"),
              std::string::npos);
}

TEST(html_report, names_every_workload_and_allocator) {
    const std::string html = render(sample_json);
    for (const char* name : {"frame_scratch", "particles", "malloc", "tlsf_arena_42", "buddy_pool"})
        EXPECT_NE(html.find(std::string("\"") + name + "\""), std::string::npos) << name;
}

TEST(html_report, inlines_uplot_when_built_with_it) {
    const std::string html = render(sample_json);
    // uPlot's classic script comes before the module that uses it; its CSS is inline too.
    const auto uplot = html.find("<script>\n");
    const auto module = html.find("<script type=\"module\">");
    ASSERT_NE(uplot, std::string::npos);
    ASSERT_NE(module, std::string::npos);
    EXPECT_LT(uplot, module);
    if (!strata::lab::html_report_has_uplot()) {
        // The page still renders its tables and says the charts need uPlot.
        EXPECT_EQ(html.find("var uPlot="), std::string::npos);
        EXPECT_NE(html.find("The charts need uPlot"), std::string::npos);
        GTEST_SKIP() << "this build has no uPlot (npm ci in tools/lab/web at configure time)";
    }
    const auto iife = html.find("var uPlot=");
    ASSERT_NE(iife, std::string::npos);
    EXPECT_GT(iife, uplot);
    EXPECT_LT(iife, module);
    EXPECT_NE(html.find(".uplot"), std::string::npos);
    EXPECT_GT(html.size(), 50'000U);
    // The module draws with it (uPlot.paths.bars for the comparisons).
    EXPECT_NE(html.find("uPlot.paths.bars"), std::string::npos);
}
