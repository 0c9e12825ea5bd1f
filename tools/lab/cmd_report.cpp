// strata-lab report: see report_command.hpp and docs/lab-report.md.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "html_report.hpp"
#include "op_commands.hpp"
#include "report_command.hpp"

namespace strata::lab {

namespace {

bool read_file(const std::string& path, std::string& text) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream s;
    s << f.rdbuf();
    text = s.str();
    return static_cast<bool>(f) || f.eof();
}

} // namespace

int report_command(const report_command_options& o) {
    std::string json;
    if (o.from_json.empty()) {
        // Run the race into a temporary JSON file (the race prints its tables on the way).
        const std::filesystem::path tmp = std::filesystem::temp_directory_path() /
                                          ("strata-report-" + std::to_string(::getpid()) + ".json");
        race_command_options r;
        r.quick = o.quick;
        r.workloads = o.workloads;
        r.only = o.only;
        r.json_path = tmp.string();
        const int rc = race_command(r);
        const bool ok = rc == 0 && read_file(tmp.string(), json);
        std::error_code ec;
        std::filesystem::remove(tmp, ec);
        if (rc != 0) return rc;
        if (!ok) {
            std::cerr << "strata-lab: cannot read the race results " << tmp.string() << "\n";
            return 1;
        }
    } else if (!read_file(o.from_json, json)) {
        std::cerr << "strata-lab: cannot read " << o.from_json << "\n";
        return 2;
    }
    std::ofstream out(o.out, std::ios::binary);
    write_html_report(out, json);
    out.close();
    if (!out) {
        std::cerr << "strata-lab: cannot write " << o.out << "\n";
        return 1;
    }
    std::cout << "strata-lab: wrote " << o.out << "\n";
    return 0;
}

} // namespace strata::lab
