// The malloc shim: a probe program checks every C and C++ entry point from the inside, once under
// LD_PRELOAD=libstrata_malloc.so and once linked with strata::malloc_replace (tests/engine/probe).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

extern char** environ;

namespace {

#if defined(STRATA_ENGINE_PROBE)
/// Runs `path` with `extra_env` added; returns its exit status (or -1 when it did not exit).
int run(const char* path, const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
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
    pid_t pid = 0;
    if (posix_spawn(&pid, path, nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
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

TEST(EngineShim, WhatTheHeapCannotHoldGlibcServes) {
    EXPECT_EQ(run(STRATA_ENGINE_PROBE, {"past-reserve"},
                  {std::string("LD_PRELOAD=") + STRATA_MALLOC_SO, "STRATA_MALLOC_RESERVE_GB=1"}),
              0);
    EXPECT_EQ(run(STRATA_ENGINE_PROBE, {"no-heap"},
                  {std::string("LD_PRELOAD=") + STRATA_MALLOC_SO, "STRATA_MALLOC_RESERVE_GB=0"}),
              0);
}
#else
TEST(EngineShim, SkippedUnderSanitizers) {
    GTEST_SKIP() << "libstrata_malloc.so is not built with sanitizers";
}
#endif

} // namespace
