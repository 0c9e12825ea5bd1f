// The malloc shim: a probe program checks every C and C++ entry point from the inside, once under
// LD_PRELOAD=libstrata_malloc.so and once linked with strata::malloc_replace (tests/engine/probe).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

extern char** environ;

namespace {

#if defined(STRATA_ENGINE_PROBE)
/// Runs `path` with `extra_env` added; returns its exit status (or -1 when it did not exit). With
/// `err`, the child's stderr goes there (a file path).
int run(const char* path, const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
        const char* err = nullptr) {
    std::vector<std::string> env_store(extra_env);
    for (char** e = environ; *e != nullptr; ++e)
        if (std::string(*e).rfind("LD_PRELOAD=", 0) != 0) env_store.emplace_back(*e);
    std::vector<char*> envp;
    for (auto& s : env_store)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> arg_store{path};
    arg_store.insert(arg_store.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : arg_store)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (err != nullptr)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, path, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) return -1;
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(EngineShim, PreloadedProbePasses) {
    EXPECT_EQ(run(STRATA_ENGINE_PROBE, {}, {std::string("LD_PRELOAD=") + STRATA_MALLOC_SO}), 0);
}

TEST(EngineShim, PreloadedThreadedForkProbePasses) {
    EXPECT_EQ(run(STRATA_ENGINE_PROBE, {"fork"}, {std::string("LD_PRELOAD=") + STRATA_MALLOC_SO}), 0);
}

TEST(EngineShim, LinkTimeReplacementProbePasses) {
    EXPECT_EQ(run(STRATA_ENGINE_PROBE_LINKED, {}, {}), 0);
    EXPECT_EQ(run(STRATA_ENGINE_PROBE_LINKED, {"fork"}, {}), 0);
}

TEST(EngineShim, ProbeNoticesWhenTheShimIsAbsent) {
    EXPECT_NE(run(STRATA_ENGINE_PROBE, {}, {}), 0); // plain glibc: the probe must fail
}

TEST(EngineShim, SmallRetentionAndReservationFromTheEnvironment) {
    EXPECT_EQ(run(STRATA_ENGINE_PROBE, {},
                  {std::string("LD_PRELOAD=") + STRATA_MALLOC_SO, "STRATA_MALLOC_RETAIN_MB=0",
                   "STRATA_MALLOC_RESERVE_GB=1"}),
              0);
}

TEST(EngineShim, EndFrameAndThePurgeThreadGiveDecayedMemoryBack) {
    const std::string preload = std::string("LD_PRELOAD=") + STRATA_MALLOC_SO;
    EXPECT_EQ(run(STRATA_ENGINE_PROBE, {"decay"}, {preload, "STRATA_MALLOC_DECAY_MS=10"}), 0);
    EXPECT_EQ(run(STRATA_ENGINE_PROBE_LINKED, {"decay"}, {"STRATA_MALLOC_DECAY_MS=10"}), 0);
    EXPECT_EQ(run(STRATA_ENGINE_PROBE, {"purge-thread"},
                  {preload, "STRATA_MALLOC_DECAY_MS=10", "STRATA_MALLOC_PURGE_THREAD_MS=5"}),
              0);
}

TEST(EngineShim, WhatTheHeapCannotHoldGlibcServes) {
    EXPECT_EQ(run(STRATA_ENGINE_PROBE, {"past-reserve"},
                  {std::string("LD_PRELOAD=") + STRATA_MALLOC_SO, "STRATA_MALLOC_RESERVE_GB=1"}),
              0);
    EXPECT_EQ(run(STRATA_ENGINE_PROBE, {"no-heap"},
                  {std::string("LD_PRELOAD=") + STRATA_MALLOC_SO, "STRATA_MALLOC_RESERVE_GB=0"}),
              0);
}
/// Returns: the probe's exit status under the preload with `env` added; `err` gets its stderr.
int run_capturing(const std::string& mode, const std::vector<std::string>& env, std::string& err) {
    char path[] = "/tmp/strata_shim_stderr_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return -1;
    close(fd);
    std::vector<std::string> all{std::string("LD_PRELOAD=") + STRATA_MALLOC_SO};
    all.insert(all.end(), env.begin(), env.end());
    const int status =
        run(STRATA_ENGINE_PROBE, mode.empty() ? std::vector<std::string>{} : std::vector{mode}, all, path);
    std::ifstream in(path);
    err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    unlink(path);
    return status;
}

// The STRATA_MALLOC_* sizes are whole numbers of their unit, digits only: anything else, or a count
// whose bytes overflow size_t, keeps the default and says so in one line on stderr ("1GB", and
// 17179869184 GiB: 2^64 bytes, which would wrap to 0).
TEST(EngineShim, BadSizesInTheEnvironmentKeepTheDefault) {
    std::string err;
    // The control: a valid 1 GiB reservation cannot hold the probe's 1.5 GiB block.
    EXPECT_NE(run_capturing("default-reserve", {"STRATA_MALLOC_RESERVE_GB=1"}, err), 0);
    for (const char* bad : {"1GB", "17179869184", "99999999999999999999", "-1", " 1", "abc"}) {
        const std::string setting = std::string("STRATA_MALLOC_RESERVE_GB=") + bad;
        EXPECT_EQ(run_capturing("default-reserve", {setting}, err), 0) << setting << ": " << err;
        EXPECT_EQ(err, "strata malloc: ignoring " + setting +
                           " (not a whole number of GiB that fits); using the default\n");
    }
    for (const char* bad :
         {"STRATA_MALLOC_RETAIN_MB=16M", "STRATA_MALLOC_PURGE_KB=1e3",
          "STRATA_MALLOC_MEDIUM_RETAIN_MB=17592186044416", "STRATA_MALLOC_DECAY_MS=500ms",
          "STRATA_MALLOC_PURGE_THREAD_MS=-1", "STRATA_MALLOC_STASH_KB=16k", "STRATA_MALLOC_POPULATE_MB=8 ",
          "STRATA_MALLOC_LARGE_KEEP_MB=0x40", "STRATA_MALLOC_DEPOT_KB=256K"}) {
        EXPECT_EQ(run_capturing("", {bad}, err), 0) << bad << ": " << err;
        EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
        EXPECT_NE(err.find(std::string("ignoring ") + bad), std::string::npos) << err;
    }
    // Valid values and empty ones (unset) say nothing.
    EXPECT_EQ(run_capturing("",
                            {"STRATA_MALLOC_RETAIN_MB=0",
                             "STRATA_MALLOC_PURGE_KB=", "STRATA_MALLOC_MEDIUM_RETAIN_MB=64",
                             "STRATA_MALLOC_STASH_KB=0", "STRATA_MALLOC_POPULATE_MB=0",
                             "STRATA_MALLOC_LARGE_KEEP_MB=0", "STRATA_MALLOC_DEPOT_KB=0"},
                            err),
              0);
    EXPECT_EQ(err, "");
}
#else
TEST(EngineShim, SkippedUnderSanitizers) {
    GTEST_SKIP() << "libstrata_malloc.so is not built with sanitizers";
}
#endif

} // namespace
