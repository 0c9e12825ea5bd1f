// strata-lab record: runs a program under libstrata_trace.so (LD_PRELOAD) and writes its
// allocation trace (docs/trace-format.md).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"

#if defined(STRATA_LAB_HAS_TRACE)
#include "trace_summary.hpp"
#endif

extern char** environ;

namespace strata::lab {

std::string find_trace_library() {
    if (const char* env = std::getenv("STRATA_TRACE_LIB"); env != nullptr && *env != '\0') return env;
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    for (const char* rel : {"../trace/libstrata_trace.so", "../lib/libstrata_trace.so",
                            "../lib/x86_64-linux-gnu/libstrata_trace.so"}) {
        const auto p = (exe.parent_path() / rel).lexically_normal();
        if (std::filesystem::exists(p, ec)) return p.string();
    }
    return {};
}

int record_command(const record_command_options& o) {
    if (o.argv.empty() || o.out.empty()) {
        std::cerr << "strata-lab record: usage: strata-lab record -o FILE -- PROGRAM [ARGS...]\n";
        return 2;
    }
    const std::string lib = find_trace_library();
    if (lib.empty()) {
        std::cerr << "strata-lab record: libstrata_trace.so not found (set STRATA_TRACE_LIB)\n";
        return 1;
    }
    const std::string out = std::filesystem::absolute(o.out).string();
    // Old files of the same name would make the recorder pick OUT.<pid> (it never overwrites).
    std::error_code ec;
    std::filesystem::remove(out, ec);
    std::vector<std::string> env;
    std::string preload = lib;
    for (char** e = environ; *e != nullptr; ++e) {
        if (std::strncmp(*e, "LD_PRELOAD=", 11) == 0) {
            if ((*e)[11] != '\0') preload += std::string(":") + (*e + 11);
        } else if (std::strncmp(*e, "STRATA_TRACE_OUT=", 17) != 0) {
            env.emplace_back(*e);
        }
    }
    env.push_back("LD_PRELOAD=" + preload);
    env.push_back("STRATA_TRACE_OUT=" + out);
    std::vector<char*> envp, argv;
    for (auto& s : env)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args(o.argv);
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
        std::cerr << "strata-lab record: fork: " << std::strerror(errno) << "\n";
        return 1;
    }
    if (pid == 0) {
        execvpe(argv[0], argv.data(), envp.data());
        std::fprintf(stderr, "strata-lab record: cannot run %s: %s\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
#if defined(STRATA_LAB_HAS_TRACE)
    try {
        std::cerr << "strata-lab record: " << out << "\n" << trace::to_text(trace::summarize(out));
    } catch (const std::exception& e) {
        std::cerr << "strata-lab record: " << e.what() << "\n";
        return rc != 0 ? rc : 1;
    }
#endif
    return rc;
}

int record_main(int argc, char** argv) {
    record_command_options o;
    int i = 2;
    for (; i < argc; ++i) {
        const std::string a = argv[i];
        if ((a == "-o" || a == "--out") && i + 1 < argc) {
            o.out = argv[++i];
        } else if (a.rfind("--out=", 0) == 0) {
            o.out = a.substr(6);
        } else if (a == "--") {
            ++i;
            break;
        } else if (a == "-h" || a == "--help") {
            std::cout
                << "strata-lab record -o FILE -- PROGRAM [ARGS...]\n"
                   "  Runs PROGRAM under libstrata_trace.so (LD_PRELOAD) and writes its allocation trace\n"
                   "  to FILE (children and exec'd programs: FILE.<pid>); prints the trace's summary.\n"
                   "  Exit code: PROGRAM's. See docs/trace-format.md.\n";
            return 0;
        } else {
            break;
        }
    }
    for (; i < argc; ++i)
        o.argv.emplace_back(argv[i]);
    return record_command(o);
}

namespace {

// Listed for --help; main() hands `record` given first to record_main, so reaching the parser
// with it means it came after other options.
[[maybe_unused]] const bool registered = register_command(
    {21, "record", std::nullopt,
     [](CLI::App& app, const shared_options&, const std::string&) -> std::function<int()> {
         app.add_subcommand("record", "record a program: strata-lab record -o FILE -- PROGRAM [ARGS...]")
             ->allow_extras();
         return [] {
             std::cerr
                 << "strata-lab: record must come first: strata-lab record -o FILE -- PROGRAM [ARGS...]\n";
             return 2;
         };
     }});

} // namespace

} // namespace strata::lab
