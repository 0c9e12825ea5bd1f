// `strata-lab [run]`: the embedded default workload through every selected contestant.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "contestants.hpp"
#include "report.hpp"
#include "session.hpp"
#include "timer.hpp"
#include "workload.hpp"

namespace strata::lab {

int list_command() {
    const registry& reg = builtin_registry();
    std::size_t width = 0;
    for (const contestant& c : reg.all())
        width = std::max(width, c.name.size());
    for (const contestant& c : reg.all()) {
        std::cout << "  " << c.name << std::string(width - c.name.size() + 2, ' ') << c.description << "\n";
    }
    return 0;
}

int run_command(const run_options& o) {
    if (o.list) return list_command();

    workload_config config = o.quick ? quick_config() : workload_config{};
    if (o.seed) config.seed = *o.seed;
    if (o.frames) config.frames = *o.frames;
    if (o.allocs_per_frame) config.allocs_per_frame = *o.allocs_per_frame;
    if (o.warmup_frames) config.warmup_frames = *o.warmup_frames;
    session_options session;
    session.repeats = o.repeats ? *o.repeats : (o.quick ? 1 : 5);
    session.progress = isatty(STDERR_FILENO) != 0 && !o.quick;

    std::vector<std::string> unmatched;
    const std::vector<const contestant*> chosen = builtin_registry().select(o.only, &unmatched);
    if (!unmatched.empty()) {
        std::cerr << "strata-lab: no contestant matches";
        for (const auto& u : unmatched)
            std::cerr << " '" << u << "'";
        std::cerr << "; known:";
        for (const contestant& c : builtin_registry().all())
            std::cerr << " " << c.name;
        std::cerr << " (see --list)\n";
        return 2;
    }

    workload w;
    try {
        w = generate_workload(config);
    } catch (const std::invalid_argument& e) {
        std::cerr << "strata-lab: " << e.what() << "\n";
        return 2;
    }

    const calibration timer = calibrate(std::chrono::milliseconds(o.quick ? 10 : 50));
    run_report report = run_session(w, chosen, timer, session);
    report.label = o.quick ? "quick workload" : "default workload";
    report.smoke_test = o.quick;
    if (o.frames || o.allocs_per_frame || o.warmup_frames) report.label += ", resized";

    if (o.json_path != "-") print_report(std::cout, report);
    if (!o.json_path.empty()) {
        if (o.json_path == "-") {
            write_json(std::cout, report);
        } else {
            std::ofstream file(o.json_path);
            if (file) write_json(file, report);
            file.close(); // flushes: a write error shows only then
            if (!file) {
                std::cerr << "strata-lab: cannot write " << o.json_path << "\n";
                return 1;
            }
            std::cout << "  JSON written to " << o.json_path << "\n";
        }
    }
    return 0;
}

} // namespace strata::lab
