// strata-trace-info FILE...: prints the summary of each strata trace file.
#include <cstdio>
#include <exception>

#include "trace_summary.hpp"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s TRACE...\n", argv[0]);
        return 2;
    }
    int status = 0;
    for (int i = 1; i < argc; ++i) {
        try {
            std::printf("%s%s\n%s", i > 1 ? "\n" : "", argv[i],
                        strata::trace::to_text(strata::trace::summarize(argv[i])).c_str());
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s\n", e.what());
            status = 1;
        }
    }
    return status;
}
