// strata-lab report: one self-contained HTML file (inline CSS, uPlot inlined as a classic script, an
// inline ES module that draws the charts with it, and the race JSON embedded in a
// <script type="application/json">). Exports write_html_report, html_report_has_uplot,
// escape_json_for_script. See docs/lab-report.md.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

namespace strata::lab {

// The JSON made safe inside <script>: every "<" followed by "/" or "!" becomes "\u003c" (a JSON escape, valid
// inside strings, and "</" cannot occur outside strings in JSON); "<!" likewise, so "<!--" cannot open a
// comment.
std::string escape_json_for_script(std::string_view json);

// Writes the report page for `json_document` (the output of write_race_json, optionally with the
// "bars" and "layout" sections) to `out`. Nothing in the page refers to another file or the network.
void write_html_report(std::ostream& out, const std::string& json_document);

// Returns whether uPlot was found at build time and is inlined into every page. Without it the page
// shows its tables and a line saying the charts need uPlot.
bool html_report_has_uplot() noexcept;

} // namespace strata::lab
