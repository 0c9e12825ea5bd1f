// Real programs from Debian (sqlite3, python3, git, g++, Berkeley ABC, z3, a bash script of short
// processes, a Ruby script, a Lua script, ImageMagick), which nobody here wrote, run once
// on the C library's malloc and once with LD_PRELOAD=libstrata_malloc.so: the two runs must exit 0 and print
// byte-identical output. A crash, a hang (past the timeout) or one differing byte fails the test.
// The workloads (input generators and the exact commands) live in tests/programs/gen/workload.sh,
// shared with bench/programs.sh and tests/programs/run-programs.sh; docs/programs.md describes them.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Generous: the machine may be shared. A hang shows up as a timeout, not as a stuck CI job.
constexpr auto run_timeout = 240s;

struct run_result {
    bool started = false;
    bool timed_out = false;
    int exit_code = -1; // -1 unless the process exited normally
    int signal = 0;     // the terminating signal, 0 when it exited
    std::string out;
    std::string err;
};

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The preload library: STRATA_PROGRAMS_PRELOAD in the environment overrides the built one (to try
// the test with another malloc, say Debian's mimalloc, while the engine heap is under construction).
std::string malloc_library() {
    // Absolute: the programs run in their own directories.
    if (const char* env = std::getenv("STRATA_PROGRAMS_PRELOAD"); env != nullptr && *env != '\0')
        return fs::absolute(env).string();
    return STRATA_PROGRAMS_MALLOC_LIB;
}

// Why this build cannot run the programs, or "" when it can.
std::string skip_reason() {
    if (std::string(STRATA_PROGRAMS_SANITIZE) != "")
        return "sanitizer build (" STRATA_PROGRAMS_SANITIZE
               "): libstrata_malloc.so is not built with sanitizers";
    const std::string lib = malloc_library();
    if (lib.empty()) return "libstrata_malloc.so (target strata_malloc) is not part of this build";
    if (access(lib.c_str(), R_OK) != 0) return "the preload library " + lib + " is missing";
    if (access(STRATA_PROGRAMS_BASH, X_OK) != 0) return "bash is not installed";
    if (access(STRATA_PROGRAMS_PYTHON3, X_OK) != 0)
        return "/usr/bin/python3 is not installed (it runs the generators)";
    return "";
}

// The environment of every child: nothing inherited but TMPDIR, so no GIT_DIR, LD_PRELOAD or locale
// from the caller leaks into the output.
std::vector<std::string> child_environment(const fs::path& home, const std::string& preload) {
    std::vector<std::string> env{
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "HOME=" + home.string(),
        "LC_ALL=C",
        "TZ=UTC",
        "STRATA_SCALE=1",
        "STRATA_PYTHONMALLOC=malloc", // every python object through the malloc under test
        "STRATA_PRELOAD=" + preload,
        std::string("SQLITE3=") + STRATA_PROGRAMS_SQLITE3,
        std::string("PYTHON3=") + STRATA_PROGRAMS_PYTHON3,
        std::string("GIT=") + STRATA_PROGRAMS_GIT,
        std::string("GXX=") + STRATA_PROGRAMS_GXX,
        std::string("NM=") + STRATA_PROGRAMS_NM,
        std::string("ABC=") + STRATA_PROGRAMS_ABC,
        std::string("Z3=") + STRATA_PROGRAMS_Z3,
        std::string("RUBY=") + STRATA_PROGRAMS_RUBY,
        std::string("LUA=") + STRATA_PROGRAMS_LUA,
        std::string("CONVERT=") + STRATA_PROGRAMS_CONVERT,
    };
    if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr) env.push_back(std::string("TMPDIR=") + tmp);
    return env;
}

// Runs argv with env (no PATH search), stdout and stderr into files under dir, killing the whole
// process group at the timeout.
run_result run(const std::vector<std::string>& argv, const std::vector<std::string>& env, const fs::path& dir,
               const std::string& tag) {
    run_result r;
    const fs::path out_path = dir / (tag + ".out");
    const fs::path err_path = dir / (tag + ".err");
    // Everything the child touches is prepared before fork: the child only calls async-signal-safe
    // functions (the test binary may have threads of its own).
    std::vector<std::string> args = argv, envs = env;
    std::vector<char*> argp, envp;
    for (auto& a : args)
        argp.push_back(a.data());
    argp.push_back(nullptr);
    for (auto& e : envs)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int in_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out_fd < 0 || err_fd < 0 || in_fd < 0) return r;
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        if (::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) ::_exit(126);
        if (::chdir(dir.c_str()) != 0) ::_exit(126);
        ::execve(argp[0], argp.data(), envp.data());
        ::_exit(127);
    }
    ::close(out_fd);
    ::close(err_fd);
    ::close(in_fd);
    if (pid < 0) return r;
    ::setpgid(pid, pid); // also here: whichever of parent and child runs first, the group exists
    r.started = true;
    const auto deadline = std::chrono::steady_clock::now() + run_timeout;
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) return r;
        if (std::chrono::steady_clock::now() > deadline) {
            r.timed_out = true;
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            break;
        }
        std::this_thread::sleep_for(20ms);
    }
    if (!r.timed_out) ::kill(-pid, SIGKILL); // stragglers a crashed program left behind
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    return r;
}

std::string describe(const run_result& r) {
    std::ostringstream s;
    if (!r.started) return "could not start";
    if (r.timed_out) s << "timed out after " << run_timeout.count() << " s; ";
    if (r.signal != 0) s << "killed by signal " << r.signal << " (" << ::strsignal(r.signal) << "); ";
    s << "exit code " << r.exit_code << "; stderr (last 2000 bytes):\n"
      << (r.err.size() > 2000 ? r.err.substr(r.err.size() - 2000) : r.err);
    return s.str();
}

// "identical", or where the two outputs first part (line number and both lines).
std::string first_difference(const std::string& a, const std::string& b) {
    if (a == b) return "identical";
    std::size_t line = 1, start = 0, i = 0;
    for (; i < a.size() && i < b.size() && a[i] == b[i]; ++i)
        if (a[i] == '\n') ++line, start = i + 1;
    auto line_of = [&](const std::string& s) {
        const std::size_t end = s.find('\n', start);
        return s.substr(
            start, std::min<std::size_t>(end == std::string::npos ? s.size() - start : end - start, 300));
    };
    std::ostringstream s;
    s << "outputs differ at byte " << i << ", line " << line << " (sizes " << a.size() << " and " << b.size()
      << ")\n  glibc:   " << line_of(a) << "\n  preload: " << line_of(b);
    return s.str();
}

class Programs : public testing::Test {
protected:
    void SetUp() override {
        if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
        const char* tmp = std::getenv("TMPDIR");
        std::string templ = (tmp != nullptr && *tmp != '\0' ? std::string(tmp) : std::string("/tmp")) +
                            "/strata-programs-XXXXXX";
        std::vector<char> buf(templ.begin(), templ.end());
        buf.push_back('\0');
        const char* made = ::mkdtemp(buf.data());
        ASSERT_NE(made, nullptr) << "mkdtemp " << templ;
        dir_ = made;
        fs::create_directories(dir_ / "home");
    }
    void TearDown() override {
        // A failing run keeps its directory (inputs, both outputs, both stderrs) for a look.
        if (!dir_.empty() && !HasFailure()) {
            std::error_code ec;
            fs::remove_all(dir_, ec);
        } else if (!dir_.empty()) {
            std::cerr << "kept for inspection: " << dir_ << '\n';
        }
    }

    // Prepares workload `name`, runs it on glibc and under the preload library, compares.
    void check_workload(const std::string& name, const char* program) {
        if (access(program, X_OK) != 0) GTEST_SKIP() << name << " is not installed";
        const std::string script = STRATA_PROGRAMS_WORKLOAD;
        const fs::path work = dir_ / "work";
        const auto plain_env = child_environment(dir_ / "home", "");
        const run_result prep =
            run({STRATA_PROGRAMS_BASH, script, name, "prepare", work}, plain_env, dir_, "prepare");
        ASSERT_TRUE(prep.started && prep.exit_code == 0) << "preparing " << name << ": " << describe(prep);
        const run_result plain =
            run({STRATA_PROGRAMS_BASH, script, name, "run", work}, plain_env, dir_, "glibc");
        ASSERT_TRUE(plain.started && plain.exit_code == 0) << name << " on glibc: " << describe(plain);
        ASSERT_FALSE(plain.out.empty()) << name << " printed nothing on glibc";
        const std::string lib = malloc_library();
        const run_result preloaded = run({STRATA_PROGRAMS_BASH, script, name, "run", work},
                                         child_environment(dir_ / "home", lib), dir_, "preload");
        ASSERT_TRUE(preloaded.started && preloaded.exit_code == 0)
            << name << " under LD_PRELOAD=" << lib << ": " << describe(preloaded);
        EXPECT_EQ(first_difference(plain.out, preloaded.out), "identical")
            << name << " under LD_PRELOAD=" << lib << " (outputs in " << dir_ << ")";
    }

    fs::path dir_;
};

// The comparisons are only worth something when the library really replaces malloc in the child:
// the dynamic linker's binding log (LD_DEBUG=bindings, every symbol bound at startup) must bind
// malloc and free to the preloaded library, and never to the C library.
TEST_F(Programs, PreloadReplacesMalloc) {
    const std::string lib = malloc_library();
    std::vector<std::string> env = child_environment(dir_ / "home", "");
    env.insert(env.end(), {"LD_PRELOAD=" + lib, "LD_BIND_NOW=1", "LD_DEBUG=bindings"});
    const run_result r = run({STRATA_PROGRAMS_PYTHON3, "-s", "-c", "pass"}, env, dir_, "probe");
    ASSERT_TRUE(r.started && r.exit_code == 0) << describe(r);
    for (const std::string symbol : {"malloc", "free", "calloc", "realloc"}) {
        const std::string marker = " [0]: normal symbol `" + symbol + "'";
        int to_lib = 0, to_libc = 0;
        std::istringstream log(r.err);
        for (std::string line; std::getline(log, line);) {
            const std::size_t end = line.find(marker), to = line.rfind(" to ", end);
            if (end == std::string::npos || to == std::string::npos) continue;
            const std::string target = line.substr(to + 4, end - to - 4);
            to_lib += target == lib ? 1 : 0;
            to_libc += target.ends_with("/libc.so.6") ? 1 : 0;
        }
        EXPECT_GT(to_lib, 0) << symbol << " is never bound to " << lib;
        EXPECT_EQ(to_libc, 0) << symbol << " is bound to the C library's";
    }
}

TEST_F(Programs, Sqlite3ScriptOutputMatches) { check_workload("sqlite3", STRATA_PROGRAMS_SQLITE3); }

TEST_F(Programs, Python3WorkloadOutputMatches) { check_workload("python3", STRATA_PROGRAMS_PYTHON3); }

TEST_F(Programs, GitRepositoryOutputMatches) { check_workload("git", STRATA_PROGRAMS_GIT); }

TEST_F(Programs, GxxAssemblySymbolsAndProgramMatch) {
    if (access(STRATA_PROGRAMS_NM, X_OK) != 0) GTEST_SKIP() << "nm is not installed";
    check_workload("gxx", STRATA_PROGRAMS_GXX);
}

TEST_F(Programs, AbcSynthesisStatsAndNetlistMatch) { check_workload("abc", STRATA_PROGRAMS_ABC); }

TEST_F(Programs, Z3ModelAndCountersMatch) { check_workload("z3", STRATA_PROGRAMS_Z3); }

// About 1,100 processes (bash, sed, grep, sort, awk, ...), each loading the library, allocating and
// exiting on it.
TEST_F(Programs, ShellScriptOfShortProcessesMatches) { check_workload("shell", STRATA_PROGRAMS_BASH); }

// Garbage-collected runtimes: a Ruby script's strings, arrays and hash tables, and every object of a
// Lua script, are malloc blocks that their collectors free in bursts.
TEST_F(Programs, RubyScriptOutputMatches) { check_workload("ruby", STRATA_PROGRAMS_RUBY); }

TEST_F(Programs, LuaScriptOutputMatches) { check_workload("lua", STRATA_PROGRAMS_LUA); }

// An image converter (ImageMagick, OpenMP threads): pixel buffers of several MiB, a few at a time,
// with stretches of work between them.
TEST_F(Programs, ImageMagickConvertPixelsMatch) { check_workload("convert", STRATA_PROGRAMS_CONVERT); }

} // namespace
