// The peer contenders (tools/lab/core/peer_contenders.hpp): mimalloc, jemalloc and tcmalloc in the
// registry when their packages were found, each serving a workload with its usable sizes and
// footprint, and none of them taking over the process's malloc.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <gtest/gtest.h>

#include "op_contenders.hpp"

namespace {

using namespace strata::lab;

std::vector<std::string> compiled_peers() {
    std::vector<std::string> names;
#if defined(STRATA_LAB_HAS_MIMALLOC)
    names.emplace_back("mimalloc");
#endif
#if defined(STRATA_LAB_HAS_JEMALLOC)
    names.emplace_back("jemalloc");
#endif
#if defined(STRATA_LAB_HAS_TCMALLOC)
    names.emplace_back("tcmalloc");
#endif
    return names;
}

TEST(LabPeers, EveryCompiledPeerIsRegisteredAfterMalloc) {
    const auto& r = op_registry();
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(r.front().name, "malloc");
    const std::vector<std::string> peers = compiled_peers();
    for (std::size_t i = 0; i < peers.size(); ++i) {
        ASSERT_GT(r.size(), i + 1);
        EXPECT_EQ(r[i + 1].name, peers[i]);
        EXPECT_TRUE(is_peer(r[i + 1].name));
    }
    const auto peer_rows =
        std::count_if(r.begin(), r.end(), [](const op_contender& c) { return is_peer(c.name); });
    EXPECT_EQ(static_cast<std::size_t>(peer_rows), peers.size());
}

TEST(LabPeers, EachPeerReplaysWorkloadsWithSizesAndFootprint) {
    replay_options o;
    o.warmup = 0;
    o.repeats = 1;
    o.latency_passes = 1;
    o.series_points = 10;
    for (const char* name : {"w2", "levels", "frame_scratch"}) {
        const op_workload w = gen::make(name, 0.02);
        for (const op_contender& c : op_registry()) {
            if (!is_peer(c.name)) continue;
            const replay_result r = c.run(w, o);
            ASSERT_TRUE(r.applies) << c.name;
            EXPECT_EQ(r.failed, 0u) << c.name << " on " << name;
            EXPECT_TRUE(r.has_usable_size && r.has_footprint) << c.name;
            EXPECT_GE(r.peak_granted, r.live_at_peak_granted) << c.name;
            EXPECT_GT(r.peak_granted, 0u) << c.name;
            EXPECT_GT(r.ns_per_op(), 0.0) << c.name;
        }
    }
}

TEST(LabPeers, OverAlignedRequestsAndReallocationsKeepTheirAlignment) {
    op_builder b("aligned", "over-aligned blocks, grown and shrunk");
    std::vector<std::uint32_t> slots;
    for (std::uint32_t align : {32u, 64u, 256u, 4096u})
        slots.push_back(b.allocate(100, align));
    for (auto s : slots)
        b.reallocate(s, 5000);
    for (auto s : slots)
        b.free(s);
    const op_workload w = b.finish();
    replay_options o;
    o.warmup = 0;
    o.repeats = 1;
    o.latency_passes = 0;
    for (const op_contender& c : op_registry()) {
        if (!is_peer(c.name)) continue;
        EXPECT_EQ(c.run(w, o).failed, 0u) << c.name;
    }
#if defined(STRATA_LAB_HAS_JEMALLOC)
    jemalloc_replay je(w);
    void* p = je.allocate(100, 4096);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
    p = je.reallocate(p, 100, 9000, 4096);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
    je.deallocate(p, 9000, 4096);
#endif
#if defined(STRATA_LAB_HAS_TCMALLOC)
    tcmalloc_replay tc(w);
    void* q = tc.allocate(100, 256);
    ASSERT_NE(q, nullptr);
    q = tc.reallocate(q, 100, 9000, 256);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % 256, 0u);
    tc.deallocate(q, 9000, 256);
#endif
#if defined(STRATA_LAB_HAS_MIMALLOC)
    if (mimalloc_replay::applies(w)) {
        mimalloc_replay mi(w);
        void* m = mi.allocate(100, 512);
        ASSERT_NE(m, nullptr);
        m = mi.reallocate(m, 100, 9000, 512);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m) % 512, 0u);
        mi.deallocate(m, 9000, 512);
    }
#endif
}

#if defined(__GLIBC__) && (defined(STRATA_LAB_HAS_MIMALLOC) || defined(STRATA_LAB_HAS_JEMALLOC) ||           \
                           defined(STRATA_LAB_HAS_TCMALLOC))
// A peer's blocks never come from the process's malloc, and the process's malloc is still glibc's:
// the peers' own malloc symbols are renamed or bound locally (tools/lab/peers.cmake).
TEST(LabPeers, TheProcessMallocStaysGlibc) {
    const op_workload w = gen::make("w1", 0.01);
    replay_options o;
    o.warmup = 0;
    o.repeats = 1;
    o.latency_passes = 0;
    const std::size_t before = mallinfo2().uordblks;
    for (const op_contender& c : op_registry())
        if (is_peer(c.name)) (void)c.run(w, o);
    void* p = std::malloc(200);
    ASSERT_NE(p, nullptr);
    EXPECT_GE(malloc_usable_size(p), 200u);
    EXPECT_GT(mallinfo2().uordblks, 0u);
    std::free(p);
    // The replays' blocks (10,000 live at once) went to the peers, not to glibc's heap.
    EXPECT_LT(mallinfo2().uordblks, before + (std::size_t{1} << 20));
}
#endif

} // namespace
