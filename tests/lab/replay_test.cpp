// strata-lab op model, synthetic generators and the replay engine (tools/lab/core/ops.hpp, replay.hpp,
// op_contenders.hpp), header-only, included by path.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>

#include "op_contenders.hpp"
#include "race.hpp"

namespace {

using namespace strata::lab;

/// Replays w against a reference model: every free names a live slot, sizes add up.
void expect_consistent(const op_workload& w) {
    std::map<std::uint32_t, std::uint64_t> live;
    std::uint64_t bytes = 0, peak = 0, allocs = 0, frees = 0, reallocs = 0, frames = 0;
    for (const op& o : w.ops) {
        switch (o.kind) {
        case op_kind::allocate:
            ASSERT_EQ(live.count(o.slot), 0u) << w.name;
            ASSERT_LT(o.slot, w.slots);
            live[o.slot] = o.size;
            bytes += o.size;
            ++allocs;
            break;
        case op_kind::free:
            ASSERT_EQ(live.count(o.slot), 1u) << w.name;
            bytes -= live[o.slot];
            live.erase(o.slot);
            ++frees;
            break;
        case op_kind::reallocate:
            ASSERT_EQ(live.count(o.slot), 1u) << w.name;
            bytes = bytes - live[o.slot] + o.size;
            live[o.slot] = o.size;
            ++reallocs;
            break;
        case op_kind::frame: ++frames; break;
        }
        peak = std::max(peak, bytes);
    }
    EXPECT_EQ(allocs, w.allocations);
    EXPECT_EQ(frees, w.frees);
    EXPECT_EQ(reallocs, w.reallocations);
    EXPECT_EQ(frames, w.frames);
    EXPECT_EQ(peak, w.peak_live_bytes);
    EXPECT_EQ(live.size(), w.end_live_blocks);
}

/// Sets a to the generator `name` at scale 0.02, seed 7, and checks that seed 7 again gives the same ops
/// and seed 8 different ones.
void expect_deterministic(std::string_view name, op_workload& a) {
    a = gen::make(name, 0.02, 7);
    const op_workload b = gen::make(name, 0.02, 7), c = gen::make(name, 0.02, 8);
    ASSERT_EQ(a.ops.size(), b.ops.size()) << name;
    EXPECT_EQ(std::memcmp(a.ops.data(), b.ops.data(), a.ops.size() * sizeof(op)), 0) << name;
    EXPECT_TRUE(a.ops.size() != c.ops.size() ||
                std::memcmp(a.ops.data(), c.ops.data(), a.ops.size() * sizeof(op)) != 0)
        << name << ": the seed changes nothing";
}

TEST(LabOps, GeneratorsAreDeterministicAndConsistent) {
    for (auto name : gen::names()) {
        op_workload a;
        ASSERT_NO_FATAL_FAILURE(expect_deterministic(name, a));
        expect_consistent(a);
        EXPECT_GT(a.memory_ops(), 0u) << name;
    }
    EXPECT_THROW((void)gen::make("nope"), std::invalid_argument);
}

TEST(LabOps, WorkloadShapes) {
    const auto fs = gen::frame_scratch(0.05);
    EXPECT_TRUE(fs.frame_scoped);
    EXPECT_EQ(fs.end_live_blocks, 0u);
    EXPECT_FALSE(fs.fixed_size());
    EXPECT_EQ(fs.max_align, 64u);
    const auto w3 = gen::w3(0.01);
    EXPECT_TRUE(w3.fixed_size());
    EXPECT_FALSE(w3.frame_scoped);
    EXPECT_EQ(w3.peak_live_blocks, 10'000u);
    EXPECT_EQ(w3.peak_live_bytes, 960'000u);
    const auto w1 = gen::w1(0.01);
    EXPECT_GE(w1.min_size, 16u);
    EXPECT_LE(w1.max_size, 256u);
    EXPECT_EQ(w1.allocations, 10'000u + 10'000u); // 1 % of 1,000,000 pairs
    const auto p = gen::particle_churn(0.02);
    EXPECT_TRUE(p.fixed_size());
    EXPECT_FALSE(p.frame_scoped); // particles outlive frames
}

TEST(LabOps, ByNameOnlyGeneratorsAreDeterministicAndConsistent) {
    for (auto name : gen::extra_names()) {
        EXPECT_TRUE(gen::known(name));
        EXPECT_EQ(std::count(gen::names().begin(), gen::names().end(), name), 0)
            << name << ": in the default race";
        op_workload a;
        ASSERT_NO_FATAL_FAILURE(expect_deterministic(name, a));
        expect_consistent(a);
        EXPECT_EQ(a.end_live_blocks, 0u) << name << ": every block is freed";
        EXPECT_EQ(a.allocations, a.frees) << name;
        EXPECT_EQ(a.name, std::string(name));
    }
    EXPECT_FALSE(gen::known("nope"));
}

TEST(LabOps, TrickleShape) {
    const op_workload w = gen::trickle(0.25); // 150,000 pairs
    std::uint64_t small = 0, mid = 0, k60 = 0, big = 0;
    for (const op& o : w.ops) {
        if (o.kind != op_kind::allocate) continue;
        if (o.size <= 64)
            ++small;
        else if (o.size <= 4096)
            ++mid;
        else if (o.size == 61'952)
            ++k60;
        else if (o.size >= (1u << 20) && o.size <= (8u << 20))
            ++big;
        else
            ADD_FAILURE() << "trickle: unexpected size " << o.size;
        EXPECT_EQ(o.log2_align, 4);
    }
    const auto n = static_cast<double>(w.allocations);
    EXPECT_EQ(w.allocations, 24'576u + 150'000u + big);
    EXPECT_NEAR(static_cast<double>(small) / n, 0.55, 0.01);
    EXPECT_NEAR(static_cast<double>(mid) / n, 0.44, 0.01);
    EXPECT_NEAR(static_cast<double>(k60) / n, 0.01, 0.002);
    EXPECT_GE(big, 45u); // ~75 expected: 1 in 2,000 pairs
    EXPECT_LE(big, 110u);
    EXPECT_GE(w.min_size, 16u);
    EXPECT_LE(w.max_size, 8u << 20);
    EXPECT_EQ(w.end_live_blocks, 0u);
    // ~26 MiB of small blocks, plus at most a few live buffers.
    EXPECT_GT(w.peak_live_bytes, std::uint64_t{20} << 20);
    EXPECT_LT(w.peak_live_bytes, std::uint64_t{60} << 20);
    EXPECT_FALSE(w.frame_scoped);
}

TEST(LabOps, Xchurn32kShape) {
    const op_workload w = gen::xchurn32k(0.25); // 100,000 pairs
    std::uint64_t k32 = 0, small = 0, prompt = 0;
    for (std::size_t i = 0; i < w.ops.size(); ++i) {
        const op& o = w.ops[i];
        if (o.kind == op_kind::allocate) {
            if (o.size == 32'769)
                ++k32;
            else if (o.size >= 8 && o.size <= 1024)
                ++small;
            else
                ADD_FAILURE() << "xchurn32k: unexpected size " << o.size;
        } else if (o.kind == op_kind::free && i > 0 && w.ops[i - 1].kind == op_kind::allocate) {
            ++prompt; // a pair frees the block it replaced right after allocating its successor
        }
    }
    const auto n = static_cast<double>(w.allocations);
    EXPECT_EQ(w.allocations, 4'096u + 100'000u);
    EXPECT_EQ(k32 + small, w.allocations);
    EXPECT_NEAR(static_cast<double>(k32) / n, 0.10, 0.01);
    EXPECT_EQ(w.max_size, 32'769u);
    EXPECT_GE(w.min_size, 8u);
    EXPECT_EQ(w.frees, w.allocations);
    EXPECT_EQ(w.end_live_blocks, 0u);
    // 7.5% of the pairs free late (a late free right after a deferring pair's allocation reads as
    // prompt here: ~0.5% of pairs).
    const double late_share = 1.0 - static_cast<double>(prompt) / 100'000.0;
    EXPECT_GT(late_share, 0.06);
    EXPECT_LT(late_share, 0.085);
    EXPECT_FALSE(w.frame_scoped);
}

/// A fake allocator whose every figure is known: blocks come from a bump pointer in a fixed
/// buffer, usable size = size rounded up to 32, footprint = 4096 per started page of the bump,
/// probe reports the untouched rest as one free block; allocations above 1000 bytes fail.
class fake_heap {
public:
    static bool applies(const op_workload&) noexcept { return true; }
    explicit fake_heap(const op_workload&) {}
    void* allocate(std::size_t size, std::size_t) noexcept {
        if (size > 1000) return nullptr;
        const std::size_t granted = (size + 31) / 32 * 32;
        void* p = buffer_ + used_;
        used_ += granted;
        return p;
    }
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    void end_frame() noexcept { ++frames_; }
    [[nodiscard]] std::size_t footprint() const noexcept { return (used_ + 4095) / 4096 * 4096; }
    [[nodiscard]] heap_probe probe() const noexcept {
        return {sizeof buffer_ - used_, sizeof buffer_ - used_};
    }
    [[nodiscard]] std::size_t usable_size(const void*) const noexcept { return 32; } // every test block <= 32
    static inline int frames_ = 0;

private:
    alignas(64) std::byte buffer_[1 << 20];
    std::size_t used_ = 0;
};

TEST(LabReplay, MetricsOnAHandComputedWorkload) {
    op_builder b("tiny", "hand-computed");
    const auto s0 = b.allocate(10);   // op 1: live 10
    const auto s1 = b.allocate(20);   // op 2: live 30
    b.free(s0);                       // op 3: live 20
    const auto s2 = b.allocate(2000); // op 4: fails (fake_heap refuses > 1000)
    b.reallocate(s1, 30);             // op 5: live 30 (fallback: allocate + copy + free)
    b.frame();
    b.free(s1); // op 6: live 0
    (void)s2;
    const op_workload w = b.finish();
    EXPECT_EQ(w.memory_ops(), 6u);
    EXPECT_EQ(w.peak_live_bytes, 2030u); // the builder counts requests, failed or not: 20 + 2000 + 10
    fake_heap::frames_ = 0;
    replay_options o;
    o.warmup = 0;
    o.repeats = 1;
    o.latency_passes = 2;
    o.series_points = 6; // one sample per memory op
    const replay_result r = replay<fake_heap>(w, o);
    ASSERT_TRUE(r.applies);
    EXPECT_EQ(r.failed, 1u);
    EXPECT_EQ(r.ticks_raw.size(), 6u);
    EXPECT_EQ(r.ticks_filtered.size(), 6u);
    for (std::size_t i = 0; i < 6; ++i)
        EXPECT_LE(r.ticks_filtered[i], r.ticks_raw[i]);
    ASSERT_EQ(r.series.size(), 6u);
    const std::uint64_t live[] = {10, 30, 20, 20, 30, 0};
    const std::uint64_t granted[] = {32, 64, 32, 32, 32, 0};
    for (std::size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(r.series[i].op, i + 1);
        EXPECT_EQ(r.series[i].live_bytes, live[i]) << i;
        EXPECT_EQ(r.series[i].granted_bytes, granted[i]) << i;
        EXPECT_EQ(r.series[i].footprint % 4096, 0u);
        EXPECT_EQ(r.series[i].free_bytes, r.series[i].largest_free);
    }
    EXPECT_EQ(r.peak_granted, 64u);
    EXPECT_TRUE(r.has_footprint && r.has_probe && r.has_usable_size);
    // 1 throughput + 2 latency + 1 sampling pass: one frame op each, plus one end_frame per pass.
    EXPECT_EQ(fake_heap::frames_, 8);
}

TEST(LabReplay, HostileTracePeaksDoNotSizeRegionsBeyondReason) {
    // A recorded trace can claim any peak: the region sizes saturate instead of wrapping, and buddy
    // (whose bookkeeping is ~12 bytes per 16-byte block) stays out of peaks above 1 GiB.
    op_workload w;
    w.peak_live_bytes = std::uint64_t{1} << 63;
    w.peak_live_blocks = std::uint64_t{1} << 62;
    EXPECT_GE(heap_bytes(w), std::size_t{1} << 46) << "wrapped to a small region";
    EXPECT_FALSE(buddy_replay::applies(w));
    w.peak_live_bytes = std::uint64_t{300} << 20;
    EXPECT_TRUE(buddy_replay::applies(w));
    w.peak_live_bytes = std::uint64_t{2} << 30;
    EXPECT_FALSE(buddy_replay::applies(w));
}

TEST(LabReplay, EveryContenderServesEverySyntheticWorkload) {
    replay_options o;
    o.warmup = 0;
    o.repeats = 1;
    o.latency_passes = 1;
    o.series_points = 10;
    for (auto name : gen::names()) {
        const op_workload w = gen::make(name, 0.01);
        for (const op_contender& c : op_registry()) {
            const replay_result r = c.run(w, o);
            if (!r.applies) {
                EXPECT_FALSE(c.applies(w));
                continue;
            }
            EXPECT_EQ(r.failed, 0u) << c.name << " on " << name;
            EXPECT_EQ(r.ticks_raw.size(), w.memory_ops());
            EXPECT_FALSE(r.series.empty());
            EXPECT_GT(r.ns_per_op(), 0.0);
        }
    }
}

/// Over malloc; every block's usable size is 64; every reallocate fails; each free of a block
/// allocated in a `slow_frees` state sleeps (the blocks a workload leaves live are freed after it).
class refusing_heap {
public:
    static bool applies(const op_workload&) noexcept { return true; }
    explicit refusing_heap(const op_workload&) {}
    void* allocate(std::size_t size, std::size_t) noexcept { return std::malloc(size); }
    void deallocate(void* p, std::size_t, std::size_t) noexcept {
        if (slow_frees) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::free(p);
    }
    void* reallocate(void*, std::size_t, std::size_t, std::size_t) noexcept { return nullptr; }
    [[nodiscard]] std::size_t usable_size(const void*) const noexcept { return 64; }
    static inline bool slow_frees = false;
};

replay_options one_pass(int latency_passes = 0) {
    replay_options o;
    o.warmup = 0;
    o.repeats = 1;
    o.latency_passes = latency_passes;
    o.series_points = 1000;
    return o;
}

// A failed reallocate keeps the old block's usable size in the granted count (its free takes it off).
TEST(LabReplay, AFailedReallocateKeepsTheBlocksGrantedBytes) {
    op_builder b("refused", "a reallocate that fails");
    const auto s = b.allocate(40);
    b.reallocate(s, 500);
    b.free(s);
    const replay_result r = replay<refusing_heap>(b.finish(), one_pass());
    EXPECT_EQ(r.failed, 1u);
    ASSERT_EQ(r.series.size(), 3u);
    EXPECT_EQ(r.series[0].granted_bytes, 64u);
    EXPECT_EQ(r.series[1].granted_bytes, 64u) << "the old block is still live";
    EXPECT_EQ(r.series[2].granted_bytes, 0u);
    EXPECT_EQ(r.peak_granted, 64u);
    EXPECT_EQ(r.live_at_peak_granted, 40u);
}

// Waste is taken at the exact granted peak, not at the highest of the sampled points: with one
// sample (at the end) the burst in between is still what it reports.
TEST(LabReplay, TheGrantedPeakKeepsTheLiveBytesOfItsMoment) {
    op_builder b("burst", "a burst between two samples");
    const auto a = b.allocate(40);
    const auto c = b.allocate(10);
    b.free(c);
    b.free(a);
    replay_options o = one_pass();
    o.series_points = 1;
    const replay_result r = replay<refusing_heap>(b.finish(), o);
    ASSERT_EQ(r.series.size(), 1u);
    EXPECT_EQ(r.peak_granted, 128u);
    EXPECT_EQ(r.live_at_peak_granted, 50u);
}

// The blocks a workload leaves live are released after each pass, untimed: here the four releases
// sleep 20 ms in all; the one allocation pass takes microseconds.
TEST(LabReplay, ReleasingWhatAWorkloadLeftLiveIsNotTimed) {
    op_builder b("leaves", "four blocks never freed");
    for (int i = 0; i < 4; ++i)
        (void)b.allocate(32);
    const op_workload w = b.finish();
    refusing_heap::slow_frees = true;
    const replay_result r = replay<refusing_heap>(w, one_pass());
    refusing_heap::slow_frees = false;
    ASSERT_EQ(r.seconds.size(), 1u);
    EXPECT_LT(r.seconds[0], 0.010) << "20 ms of releases were timed";
}

TEST(LabReplay, NsPerOpIsTheMedianOfThePasses) {
    replay_result r;
    r.memory_ops = 1;
    r.seconds = {3e-9, 1e-9};
    EXPECT_DOUBLE_EQ(r.ns_per_op(), 2.0) << "the mean of the middle two (the upper one was taken)";
    r.seconds = {10e-9, 1e-9, 3e-9, 2e-9};
    EXPECT_DOUBLE_EQ(r.ns_per_op(), 2.5);
    r.seconds = {5e-9, 1e-9, 3e-9};
    EXPECT_DOUBLE_EQ(r.ns_per_op(), 3.0);
}

// --latency-passes 0 measures no latency: the table says - and the JSON null (it said 0 ns).
TEST(LabRace, NoLatencyPassesReportsNoLatency) {
    race_options o;
    o.only = {"malloc"};
    o.replay = one_pass(0);
    o.progress = false;
    calibration cal;
    const race_section s = race_workload(gen::make("bimodal", 0.01), o, cal);
    ASSERT_EQ(s.rows.size(), 1u);
    EXPECT_TRUE(std::isnan(s.rows[0].p50));
    EXPECT_TRUE(std::isnan(s.rows[0].f_max));
    std::ostringstream table, json;
    print_section(table, s);
    EXPECT_NE(table.str().find("malloc"), std::string::npos);
    EXPECT_EQ(table.str().find("nan"), std::string::npos) << table.str();
    write_race_json(json, {s}, cal, "t");
    EXPECT_NE(json.str().find("\"latency_raw\":{\"p50\":null"), std::string::npos)
        << json.str().substr(0, 600);
    EXPECT_EQ(json.str().find("nan"), std::string::npos);
}

} // namespace
