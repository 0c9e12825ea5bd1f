#include "html_report.hpp"

#include <algorithm>
#include <iterator>
#include <ostream>
#include <span>

#include "strata_lab_report_assets.hpp"

namespace strata::lab {

namespace {

constexpr std::string_view json_placeholder = "/*@STRATA_REPORT_JSON@*/";

// The placeholders the template holds and the asset each one stands for.
struct placeholder {
    std::string_view text;
    std::span<const std::string_view> pieces;
};
constexpr placeholder placeholders[] = {
    {"/*@STRATA_REPORT_CSS@*/", report_assets::css},
    {"/*@STRATA_REPORT_PLOTS_JS@*/", report_assets::plots_js},
    {"/*@STRATA_REPORT_JS@*/", report_assets::js},
    {"/*@STRATA_REPORT_UPLOT_CSS@*/", report_assets::uplot_css},
    {"/*@STRATA_REPORT_UPLOT_JS@*/", report_assets::uplot_js},
};

} // namespace

std::string escape_json_for_script(std::string_view json) {
    std::string out;
    out.reserve(json.size() + json.size() / 64);
    for (std::size_t i = 0; i < json.size(); ++i) {
        const char c = json[i];
        if (c == '<' && i + 1 < json.size() && (json[i + 1] == '/' || json[i + 1] == '!')) {
            // Inside a JSON string (the only place '<' can be) \u003c is '<'.
            out += "\\u003c";
            continue;
        }
        out += c;
    }
    return out;
}

bool html_report_has_uplot() noexcept { return report_assets::has_uplot; }

void write_html_report(std::ostream& out, const std::string& json_document) {
    static_assert(std::size(report_assets::template_html) == 1, "template.html is one piece");
    const std::string_view tpl = report_assets::template_html[0];
    std::size_t pos = 0;
    while (pos < tpl.size()) {
        const std::size_t at = tpl.find("/*@STRATA_REPORT_", pos);
        if (at == std::string_view::npos) {
            out << tpl.substr(pos);
            break;
        }
        out << tpl.substr(pos, at - pos);
        const std::string_view rest = tpl.substr(at);
        if (rest.starts_with(json_placeholder)) {
            out << escape_json_for_script(json_document);
            pos = at + json_placeholder.size();
            continue;
        }
        const auto* hit = std::find_if(std::begin(placeholders), std::end(placeholders),
                                       [&](const placeholder& p) { return rest.starts_with(p.text); });
        if (hit == std::end(placeholders)) {
            out << tpl.substr(at, 2);
            pos = at + 2;
            continue;
        }
        for (const std::string_view piece : hit->pieces)
            out << piece;
        pos = at + hit->text.size();
    }
}

} // namespace strata::lab
