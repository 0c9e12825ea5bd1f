#pragma once
// A command-line list argument ("a,b,c") for the bench programs.
//
// Exports (strata_bench): split_list.
#include <sstream>
#include <string>
#include <vector>

namespace strata_bench {

/// Returns: the comma-separated items of `s`, empty ones left out.
inline std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

} // namespace strata_bench
