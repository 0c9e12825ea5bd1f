// strata-lab report: runs the race (or reads its JSON) and writes one self-contained HTML page.
#pragma once

#include <string>
#include <vector>

namespace strata::lab {

struct report_command_options {
    std::string from_json;                  ///< a `race --json` / `replay --json` document; "" = run the race
    std::string out = "strata-report.html"; ///< the HTML file to write
    bool quick = false;                     ///< with no from_json: race at the --quick scale
    std::vector<std::string> workloads;     ///< with no from_json: workload names; empty = all
    std::vector<std::string> only;          ///< with no from_json: allocator name patterns
};

/// Writes the report; prints its path. 0 on success, 1 on I/O errors, 2 on bad arguments.
int report_command(const report_command_options& o);

} // namespace strata::lab
