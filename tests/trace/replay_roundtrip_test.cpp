// Record -> convert -> replay: a program whose allocations are known is recorded under
// libstrata_trace.so, converted to the lab's op model, and replayed through every lab contender.
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#if defined(STRATA_TRACE_LIB) && defined(STRATA_TRACE_HAVE_IO)
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "op_contenders.hpp"
#include "trace_workload.hpp"

extern char** environ;

namespace {

using namespace strata::lab;

int record(const std::string& mode, const std::string& out) {
    std::vector<std::string> env{std::string("LD_PRELOAD=") + STRATA_TRACE_LIB, "STRATA_TRACE_OUT=" + out};
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0 && std::strncmp(*e, "STRATA_TRACE_OUT=", 17) != 0)
            env.emplace_back(*e);
    std::vector<char*> envp;
    for (auto& s : env)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string exe = STRATA_TRACE_VICTIM;
    std::vector<char*> argv{exe.data(), const_cast<char*>(mode.c_str()), nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(TraceReplay, RecordedProgramConvertsToItsKnownOps) {
    const std::string out = testing::TempDir() + "strata_replay_" + std::to_string(getpid()) + ".st";
    std::remove(out.c_str());
    ASSERT_EQ(record("basic", out), 0);
    trace_conversion conv;
    const op_workload w = load_trace(out, UINT64_MAX, &conv);
    EXPECT_EQ(conv.failed_calls, 0u);
    EXPECT_EQ(conv.gaps, 0u);
    EXPECT_FALSE(conv.truncated_file);
    // The victim's own calls, in order: sizes 1000xx, the realloc turned into a reallocate of the
    // slot malloc(100001) got, the 4096 alignment kept.
    std::vector<op> mine;
    for (const op& o : w.ops)
        if (o.size >= 100000 && o.size < 101000) mine.push_back(o);
    ASSERT_EQ(mine.size(), 8u);
    EXPECT_EQ(mine[0].kind, op_kind::allocate);
    EXPECT_EQ(mine[0].size, 100001u);
    EXPECT_EQ(mine[2].kind, op_kind::reallocate);
    EXPECT_EQ(mine[2].slot, mine[0].slot);
    EXPECT_EQ(mine[2].size, 100003u);
    EXPECT_EQ(mine[3].log2_align, 6u);          // aligned_alloc(64, ...)
    EXPECT_EQ(mine[4].log2_align, 12u);         // posix_memalign(4096, ...)
    EXPECT_EQ(mine[7].kind, op_kind::allocate); // realloc(nullptr, n) is an allocation
    // Each of the victim's seven surviving blocks is freed after it is allocated.
    for (std::size_t i = 1; i < mine.size(); ++i) {
        if (i == 2) continue; // the reallocate: its slot is mine[0]'s
        const std::uint32_t slot = mine[i].slot;
        bool seen_alloc = false, freed = false;
        for (const op& o : w.ops) {
            if (o.slot != slot) continue;
            if (o.kind == op_kind::allocate && o.size == mine[i].size) seen_alloc = true;
            if (seen_alloc && o.kind == op_kind::free) {
                freed = true;
                break;
            }
        }
        EXPECT_TRUE(freed) << "block of " << mine[i].size << " bytes";
    }

    // The replay: every contender that applies serves it without a failure.
    replay_options ro;
    ro.warmup = 0;
    ro.repeats = 1;
    ro.latency_passes = 2;
    for (const op_contender& c : op_registry()) {
        const replay_result r = c.run(w, ro);
        if (!r.applies) continue;
        EXPECT_EQ(r.failed, 0u) << c.name;
        EXPECT_EQ(r.ticks_raw.size(), w.memory_ops()) << c.name;
    }
    // Recorded times come along, one per op, never decreasing within a thread.
    ASSERT_EQ(w.times_ns.size(), w.ops.size());
    // Determinism: the same trace converts to the same ops.
    const op_workload again = load_trace(out, UINT64_MAX);
    ASSERT_EQ(again.ops.size(), w.ops.size());
    EXPECT_EQ(std::memcmp(again.ops.data(), w.ops.data(), w.ops.size() * sizeof(op)), 0);
    // max_ops cuts the replay.
    trace_conversion cut;
    const op_workload small = load_trace(out, 3, &cut);
    EXPECT_EQ(small.memory_ops(), 3u);
    EXPECT_GT(cut.truncated_ops, 0u);
    std::remove(out.c_str());
}

TEST(TraceReplay, ThreadedTraceKeepsEachThreadsOrder) {
    const std::string out = testing::TempDir() + "strata_replay_t_" + std::to_string(getpid()) + ".st";
    std::remove(out.c_str());
    ASSERT_EQ(record("threads", out), 0);
    const op_workload w = load_trace(out, UINT64_MAX);
    EXPECT_GE(w.threads, 7u); // main + 4 workers + producer + consumer
    // The builder asserts consistency as it goes; a replay through malloc must not fail.
    replay_options ro;
    ro.warmup = 0;
    ro.repeats = 1;
    ro.latency_passes = 1;
    const replay_result r = op_registry().front().run(w, ro);
    EXPECT_EQ(r.failed, 0u);
    std::remove(out.c_str());
}

} // namespace
#else
TEST(TraceReplay, NotBuilt) {
    GTEST_SKIP() << "libstrata_trace.so is not built here (sanitizer build or no libzstd)";
}
#endif
