// Streamed replay and replay determinism, on the lab's embedded real trace (openttd -D, 557k ops):
// - the batch stream produces exactly the ops the whole-file load does, whatever the batch size;
// - a replay streamed in small batches measures the same memory series as the in-memory replay;
// - the same trace replayed twice leaves every walkable heap in an identical state, block by block.
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#if defined(STRATA_TRACE_HAVE_IO) && defined(STRATA_LAB_DEFAULT_TRACE)
#include <strata/heap/buddy.hpp>
#include <strata/heap/free_list.hpp>
#include <strata/heap/tlsf.hpp>

#include "op_contenders.hpp"
#include "trace_workload.hpp"

namespace {

using namespace strata::lab;

const std::string trace_path = STRATA_LAB_DEFAULT_TRACE;

bool same_op(const op& a, const op& b) {
    return a.size == b.size && a.slot == b.slot && a.kind == b.kind && a.log2_align == b.log2_align &&
           a.thread == b.thread;
}

void expect_same_shape(const op_workload& a, const op_workload& b) {
    EXPECT_EQ(a.slots, b.slots);
    EXPECT_EQ(a.allocations, b.allocations);
    EXPECT_EQ(a.frees, b.frees);
    EXPECT_EQ(a.reallocations, b.reallocations);
    EXPECT_EQ(a.frames, b.frames);
    EXPECT_EQ(a.peak_live_bytes, b.peak_live_bytes);
    EXPECT_EQ(a.peak_live_blocks, b.peak_live_blocks);
    EXPECT_EQ(a.max_size, b.max_size);
    EXPECT_EQ(a.min_size, b.min_size);
    EXPECT_EQ(a.max_align, b.max_align);
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_EQ(a.end_live_blocks, b.end_live_blocks);
    EXPECT_EQ(a.frame_scoped, b.frame_scoped);
}

TEST(TraceStream, BatchesAreExactlyTheLoadedOps) {
    trace_conversion loaded_conv;
    const op_workload whole = load_trace(trace_path, UINT64_MAX, &loaded_conv);
    ASSERT_GT(whole.ops.size(), 100'000u);
    for (std::size_t batch : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{1} << 20}) {
        SCOPED_TRACE("batch " + std::to_string(batch));
        trace_batches t(trace_path, UINT64_MAX);
        std::vector<op> b;
        std::size_t at = 0, batches = 0;
        bool all_same = true;
        while (t.next(b, batch)) {
            ++batches;
            EXPECT_LE(b.size(), batch == 1 ? 1 : batch);
            for (const op& o : b)
                all_same = all_same && at < whole.ops.size() && same_op(o, whole.ops[at++]);
        }
        EXPECT_TRUE(all_same);
        EXPECT_EQ(at, whole.ops.size());
        EXPECT_GE(batches, (whole.ops.size() + batch - 1) / batch);
        EXPECT_FALSE(t.next(b, batch)); // stays exhausted
        expect_same_shape(t.shape(), whole);
        EXPECT_EQ(t.conversion().records, loaded_conv.records);
        EXPECT_EQ(t.conversion().unknown_blocks, loaded_conv.unknown_blocks);
    }
    trace_conversion scan_conv;
    expect_same_shape(scan_trace(trace_path, UINT64_MAX, &scan_conv), whole);
    EXPECT_EQ(scan_conv.records, loaded_conv.records);
}

TEST(TraceStream, MaxOpsCutsTheStreamLikeTheLoad) {
    const op_workload cut = load_trace(trace_path, 10'000);
    trace_batches t(trace_path, 10'000);
    std::vector<op> b, all;
    while (t.next(b, 999))
        all.insert(all.end(), b.begin(), b.end());
    ASSERT_EQ(all.size(), cut.ops.size());
    EXPECT_EQ(t.shape().memory_ops(), 10'000u);
    expect_same_shape(t.shape(), cut);
}

struct batch_stream final : op_stream {
    trace_batches t;
    std::size_t n;
    explicit batch_stream(std::size_t batch) : t(trace_path, UINT64_MAX), n(batch) {}
    bool next(std::vector<op>& out) override { return t.next(out, n); }
};

TEST(TraceStream, StreamedReplayMeasuresWhatTheInMemoryReplayMeasures) {
    const op_workload whole = load_trace(trace_path, UINT64_MAX);
    const op_workload shape = scan_trace(trace_path, UINT64_MAX);
    replay_options ro;
    ro.warmup = 0;
    ro.repeats = 1;
    ro.latency_passes = 1;
    ro.series_points = 64;
    ro.stream_sample = 1000; // much smaller than the trace: the reservoir path is exercised
    const op_stream_factory open = [] { return std::make_unique<batch_stream>(5000); };
    for (const op_contender& c : op_registry()) {
        if (c.name != "tlsf" && c.name != "buddy" && c.name != "tlsf_sli4") continue;
        SCOPED_TRACE(c.name);
        ASSERT_TRUE(c.applies(whole));
        const replay_result held = c.run(whole, ro);
        const replay_result streamed = c.run_streamed(shape, open, ro);
        EXPECT_TRUE(streamed.streamed);
        EXPECT_EQ(streamed.memory_ops, held.memory_ops);
        EXPECT_EQ(streamed.failed, held.failed);
        EXPECT_EQ(streamed.peak_footprint, held.peak_footprint);
        EXPECT_EQ(streamed.peak_granted, held.peak_granted);
        ASSERT_EQ(streamed.series.size(), held.series.size());
        for (std::size_t i = 0; i < held.series.size(); ++i) {
            EXPECT_EQ(streamed.series[i].op, held.series[i].op);
            EXPECT_EQ(streamed.series[i].live_bytes, held.series[i].live_bytes);
            EXPECT_EQ(streamed.series[i].granted_bytes, held.series[i].granted_bytes);
            EXPECT_EQ(streamed.series[i].free_bytes, held.series[i].free_bytes);
            EXPECT_EQ(streamed.series[i].largest_free, held.series[i].largest_free);
        }
        // The latency sample is bounded and keeps the exact maximum of the pass.
        EXPECT_EQ(streamed.ticks_raw.size(), 1000u);
        EXPECT_EQ(held.ticks_raw.size(), held.memory_ops);
    }
}

TEST(TraceStream, ReservoirKeepsAUniformSampleAndTheMaximum) {
    detail::tick_reservoir r(100);
    for (std::uint32_t i = 0; i < 100'000; ++i)
        r.add(i == 31'337 ? 1'000'000 : i % 1000);
    std::vector<std::uint32_t> v = r.take();
    ASSERT_EQ(v.size(), 100u);
    EXPECT_EQ(*std::max_element(v.begin(), v.end()), 1'000'000u);
    double mean = 0;
    for (std::uint32_t x : v)
        mean += x == 1'000'000 ? 500 : x;
    mean /= 100;
    EXPECT_GT(mean, 300); // uniform over 0..999: mean 500, sd of the mean ~29
    EXPECT_LT(mean, 700);
}

// ---------------------------------------------------------------------------------------------
// Determinism: two heaps of the same kind, each over its own buffer, fed the same trace, must agree
// block for block (offsets from their own base, sizes, used/free) at every checkpoint.
// ---------------------------------------------------------------------------------------------

struct buffer {
    std::byte* p;
    std::size_t n;
    explicit buffer(std::size_t bytes)
        : p(static_cast<std::byte*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096))), n(bytes) {}
    ~buffer() { std::free(p); }
    buffer(const buffer&) = delete;
    buffer& operator=(const buffer&) = delete;
    [[nodiscard]] std::span<std::byte> span() const noexcept { return {p, n}; }
};

template <class H>
std::vector<strata::block_info> blocks_of(const H& h) {
    std::vector<strata::block_info> v;
    h.for_each_block([&](const strata::block_info& b) { v.push_back(b); });
    return v;
}

bool same_blocks(const std::vector<strata::block_info>& a, const std::vector<strata::block_info>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].offset != b[i].offset || a[i].size != b[i].size || a[i].used != b[i].used) return false;
    return true;
}

template <class H>
void replay_twice_and_compare(std::uint64_t max_ops, std::size_t bytes) {
    const op_workload w = load_trace(trace_path, max_ops);
    buffer b1(bytes), b2(bytes);
    H h1(b1.span()), h2(b2.span());
    detail::slot_table t1(w.slots), t2(w.slots);
    detail::pass_state s1, s2;
    const std::span<const op> all(w.ops);
    constexpr std::size_t step = 20'000;
    int checkpoints = 0;
    for (std::size_t at = 0; at < all.size(); at += step) {
        const auto part = all.subspan(at, std::min(step, all.size() - at));
        detail::run_batch<H, detail::pass::throughput>(h1, part, t1, s1, nullptr, nullptr, 1, 0, nullptr,
                                                       nullptr);
        detail::run_batch<H, detail::pass::throughput>(h2, part, t2, s2, nullptr, nullptr, 1, 0, nullptr,
                                                       nullptr);
        ASSERT_TRUE(h1.check());
        ASSERT_TRUE(h2.check());
        const auto a = blocks_of(h1), b = blocks_of(h2);
        ASSERT_TRUE(same_blocks(a, b)) << "heaps diverged by op " << at + part.size();
        ++checkpoints;
    }
    EXPECT_GT(checkpoints, 2);
    EXPECT_EQ(s1.failed, 0u);
    EXPECT_EQ(s1.failed, s2.failed);
    EXPECT_EQ(s1.live, s2.live);
    // Both end with the same live blocks; releasing them leaves two empty, identical heaps.
    detail::release_all(h1, t1);
    detail::release_all(h2, t2);
    EXPECT_TRUE(same_blocks(blocks_of(h1), blocks_of(h2)));
    EXPECT_EQ(h1.metrics().free_bytes, h2.metrics().free_bytes);
}

TEST(TraceReplay, SameTraceTwiceGivesIdenticalTlsfStates) {
    replay_twice_and_compare<strata::tlsf>(UINT64_MAX, std::size_t{48} << 20);
}

TEST(TraceReplay, SameTraceTwiceGivesIdenticalBuddyStates) {
    replay_twice_and_compare<strata::buddy>(UINT64_MAX, std::size_t{64} << 20);
}

TEST(TraceReplay, SameTraceTwiceGivesIdenticalFreeListStates) {
    // A free list scans: 60k ops of the trace are enough to fragment it.
    replay_twice_and_compare<strata::free_list<strata::best_fit>>(60'000, std::size_t{48} << 20);
}

} // namespace
#else
TEST(TraceStream, NotBuilt) { GTEST_SKIP() << "built without trace support or without the lab's data"; }
#endif
