#include "html_report.hpp"

#include <ostream>

#include "strata_lab_report_assets.hpp"

namespace strata::lab {

namespace {

constexpr std::string_view css_placeholder = "/*@STRATA_REPORT_CSS@*/";
constexpr std::string_view js_placeholder = "/*@STRATA_REPORT_JS@*/";
constexpr std::string_view json_placeholder = "/*@STRATA_REPORT_JSON@*/";

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

void write_html_report(std::ostream& out, const std::string& json_document) {
    const std::string_view tpl = report_assets::template_html;
    std::size_t pos = 0;
    while (pos < tpl.size()) {
        const std::size_t at = tpl.find("/*@STRATA_REPORT_", pos);
        if (at == std::string_view::npos) {
            out << tpl.substr(pos);
            break;
        }
        out << tpl.substr(pos, at - pos);
        const std::string_view rest = tpl.substr(at);
        if (rest.starts_with(css_placeholder)) {
            out << report_assets::css;
            pos = at + css_placeholder.size();
        } else if (rest.starts_with(js_placeholder)) {
            out << report_assets::js;
            pos = at + js_placeholder.size();
        } else if (rest.starts_with(json_placeholder)) {
            out << escape_json_for_script(json_document);
            pos = at + json_placeholder.size();
        } else {
            out << tpl.substr(at, 2);
            pos = at + 2;
        }
    }
}

} // namespace strata::lab
