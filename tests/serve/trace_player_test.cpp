// The live lab's trace player: seeking through keyframes gives the live set a plain replay gives,
// for every heap, on a synthetic workload and on the embedded OpenTTD trace; placements never
// overlap and lie in the heap; they add up to what the heap's own walk reports; refusals are
// counted; the API refuses bad input with 400. Also reports prepare and seek times on the full trace.
#include <gtest/gtest.h>

#if STRATA_SERVE_AVAILABLE
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/build_kind.hpp"

#if STRATA_LAB_HAS_TRACE
#include <zstd.h>

#include <cstring>
#include <fstream>

#include "trace_format.hpp"
#endif

#include "api.hpp"
#include "api_fuzz.hpp"
#include "embedded.hpp"
#include "trace_library.hpp"
#include "trace_player.hpp"
#include "trace_workload.hpp"

namespace {

using nlohmann::json;
namespace serve = strata::lab::serve;
using serve::player_heap;
using serve::trace_player;

constexpr player_heap all_heaps[] = {player_heap::tlsf, player_heap::buddy, player_heap::first_fit,
                                     player_heap::engine};

using strata::test::optimized;
using strata::test::sanitized;

// Every live block lies in the heap and ends before the next one starts (ids sorted by start).
void expect_disjoint(const trace_player& p, const std::vector<std::uint32_t>& live) {
    for (std::size_t i = 0; i < live.size(); ++i) {
        const serve::placed_block& b = p.blocks()[live[i]];
        ASSERT_LE(b.end(), p.heap_bytes()) << "block " << live[i] << " past the heap";
        ASSERT_GE(b.size, b.header);
        if (i > 0) {
            ASSERT_LE(p.blocks()[live[i - 1]].end(), b.start) << "blocks " << live[i - 1] << ", " << live[i];
        }
    }
}

// Keyframe seeks equal plain replays at `count` random positions (and the ends and keyframes).
void expect_seeks_match(const trace_player& p, int count, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::uint32_t> ks{0, p.ops(), p.keyframe_every(), p.keyframe_every() - 1,
                                  std::min(p.ops(), p.keyframe_every() + 1)};
    for (int i = 0; i < count; ++i)
        ks.push_back(static_cast<std::uint32_t>(rng() % (p.ops() + 1)));
    std::vector<std::uint32_t> seek, replay;
    for (const std::uint32_t k : ks) {
        if (k > p.ops()) continue;
        p.live_at(k, seek);
        p.live_by_replay(k, replay);
        ASSERT_EQ(seek, replay) << serve::heap_name(p.heap()) << " at op " << k;
        expect_disjoint(p, seek);
    }
}

// At every sample the placements live then add up to the bytes the heap's own walk counted.
void expect_samples_match(const trace_player& p) {
    std::vector<std::uint32_t> live;
    const auto& s = p.samples();
    for (std::size_t i = 0; i < s.size(); i += std::max<std::size_t>(1, s.size() / 40)) {
        p.live_at(s[i].op, live);
        ASSERT_EQ(live.size(), s[i].live_blocks) << "at op " << s[i].op;
        std::uint64_t payload = 0;
        for (const std::uint32_t id : live)
            payload += p.blocks()[id].size - p.blocks()[id].header;
        if (p.heap() != player_heap::engine) {
            EXPECT_EQ(payload, s[i].used_bytes) << "at op " << s[i].op;
        }
    }
}

// Times 100 seeks to random positions and prints them with the player's figures; the slowest must
// stay under 200 ms (not asserted under sanitizers). The player's memory stays within its bound.
void time_seeks(const trace_player& p, const char* trace, std::uint64_t seed) {
    EXPECT_LE(p.bytes(), std::size_t{64} << 20) << "a player's bound";
    std::mt19937_64 rng(seed);
    std::vector<double> ms;
    std::vector<std::uint32_t> live;
    for (int i = 0; i < 100; ++i) {
        const auto k = static_cast<std::uint32_t>(rng() % (p.ops() + 1));
        const auto s = std::chrono::steady_clock::now();
        p.live_at(k, live);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("[trace] %-8s %-9s %7u ops: prepare %6.0f ms, %7zu placements, %.1f MB, keyframe every "
                "%5u, heap %llu B, refusals %u; seek median %.3f ms, max %.3f ms\n",
                trace, std::string(serve::heap_name(p.heap())).c_str(), p.ops(), p.prepare_ms(),
                p.blocks().size(), static_cast<double>(p.bytes()) / 1e6, p.keyframe_every(),
                static_cast<unsigned long long>(p.heap_bytes()), p.refusals(), ms[ms.size() / 2], ms.back());
    if (!sanitized) {
        EXPECT_LT(ms.back(), 200.0) << serve::heap_name(p.heap());
    }
}

strata::lab::op_workload embedded(std::uint64_t max_ops) {
    const auto t = strata::lab::embedded_trace();
    return strata::lab::load_trace(t.data(), t.size(), strata::lab::embedded_trace_name, max_ops);
}

TEST(TracePlayer, SeeksMatchAPlainReplaySynthetic) {
    const auto w = strata::lab::gen::bimodal(3.0);
    for (const player_heap h : all_heaps) {
        const auto p = trace_player::prepare(w, h);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->ops(), w.ops.size());
        EXPECT_TRUE(p->heap_checked()) << serve::heap_name(h);
        EXPECT_EQ(p->refusals(), 0u) << serve::heap_name(h);
        expect_seeks_match(*p, 60, 1);
        expect_samples_match(*p);
    }
}

TEST(TracePlayer, SeeksMatchAPlainReplayOnTheEmbeddedTrace) {
    if (!strata::lab::trace_support() || strata::lab::embedded_trace().empty())
        GTEST_SKIP() << "no trace support";
    const auto w = embedded(200'000);
    for (const player_heap h : all_heaps) {
        const auto p = trace_player::prepare(w, h);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(p->heap_checked()) << serve::heap_name(h);
        expect_seeks_match(*p, 25, 2);
        expect_samples_match(*p);
        std::printf("[trace] %-9s 200k ops: %zu placements, keyframe every %u, refusals %u, %.0f ms\n",
                    std::string(serve::heap_name(h)).c_str(), p->blocks().size(), p->keyframe_every(),
                    p->refusals(), p->prepare_ms());
    }
}

// Prepare and seek times on the whole embedded trace, per heap (reported; only a generous bound is
// asserted). A timing run: optimized builds only (SeeksMatchAPlainReplayOnTheEmbeddedTrace checks
// the seeks on the same trace everywhere).
TEST(TracePlayer, SeekTimeOnTheFullTrace) {
    if (!strata::lab::trace_support() || strata::lab::embedded_trace().empty())
        GTEST_SKIP() << "no trace support";
    if (sanitized || !optimized) GTEST_SKIP() << "the whole trace into four heaps: a timing run";
    const auto t0 = std::chrono::steady_clock::now();
    const auto w = embedded(trace_player::max_ops);
    const double load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[trace] openttd: %zu ops, peak %llu live bytes in %llu blocks, loaded in %.0f ms\n",
                w.ops.size(), static_cast<unsigned long long>(w.peak_live_bytes),
                static_cast<unsigned long long>(w.peak_live_blocks), load_ms);
    for (const player_heap h : all_heaps) {
        const auto p = trace_player::prepare(w, h);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(p->heap_checked());
        time_seeks(*p, "openttd", 7);
    }
}

// The same on the longest synthetic workload (trickle: about 1.25 million ops, 24,576 blocks live).
TEST(TracePlayer, SeekTimeOnALongSyntheticTrace) {
    if (sanitized || !optimized)
        GTEST_SKIP() << "1.25M ops into four heaps: a timing run, and seconds in an unoptimized build";
    const auto w = strata::lab::gen::trickle(1.0);
    for (const player_heap h : all_heaps) {
        const auto p = trace_player::prepare(w, h);
        ASSERT_NE(p, nullptr);
        time_seeks(*p, "trickle", 8);
        expect_seeks_match(*p, 5, 9);
    }
}

// A heap sized for less than the workload needs: the allocations it cannot place are counted (and
// make no block), and the replay goes on.
TEST(TracePlayer, RefusalsAreCounted) {
    auto w = strata::lab::gen::level_cycle(0.2);
    w.peak_live_bytes /= 8; // the heaps are sized from it
    for (const player_heap h : {player_heap::tlsf, player_heap::buddy, player_heap::first_fit}) {
        const auto p = trace_player::prepare(w, h);
        ASSERT_NE(p, nullptr);
        EXPECT_GT(p->refusals(), 0u) << serve::heap_name(h);
        EXPECT_EQ(p->refusals_before(p->ops()), p->refusals());
        EXPECT_EQ(p->samples().back().refusals, p->refusals());
        EXPECT_TRUE(p->heap_checked());
        expect_seeks_match(*p, 20, 3);
    }
}

// Edge lengths: no ops at all, and a length that is a multiple of the keyframe interval (the end
// position then starts a keyframe of its own).
TEST(TracePlayer, EmptyAndKeyframeAlignedWorkloads) {
    strata::lab::op_builder empty("empty", "no ops");
    const auto w0 = empty.finish();
    strata::lab::op_builder b("aligned", "2,048 ops");
    std::vector<std::uint32_t> slots;
    for (int i = 0; i < 1024; ++i)
        slots.push_back(b.allocate(16 + 8 * static_cast<std::uint64_t>(i % 50)));
    for (std::size_t i = 0; i < slots.size(); i += 2)
        b.free(slots[i]);
    for (std::size_t i = 1; i < slots.size(); i += 2)
        b.free(slots[i]);
    const auto w1 = b.finish();
    ASSERT_EQ(w1.ops.size(), 2048u);
    for (const player_heap h : all_heaps) {
        const auto p0 = trace_player::prepare(w0, h);
        ASSERT_NE(p0, nullptr);
        std::vector<std::uint32_t> live{1};
        p0->live_at(0, live);
        EXPECT_TRUE(live.empty());
        EXPECT_GT(p0->heap_bytes(), 0u);
        const auto p1 = trace_player::prepare(w1, h);
        ASSERT_NE(p1, nullptr);
        ASSERT_EQ(p1->keyframe_every(), 1024u);
        expect_seeks_match(*p1, 20, 4);
        p1->live_at(1024, live);
        EXPECT_EQ(live.size(), 1024u);
        p1->live_at(2048, live);
        EXPECT_TRUE(live.empty());
    }
}

TEST(TracePlayer, CancelStopsPreparing) {
    const auto w = strata::lab::gen::bimodal(4.0);
    std::atomic<bool> cancel{true};
    EXPECT_EQ(trace_player::prepare(w, player_heap::tlsf, {}, &cancel), nullptr);
}

// Reallocations (in place or moved), allocations the heap refuses (too large to ask) that are later
// reallocated or freed, and a failed reallocate that leaves its block, placed on and around the
// keyframe boundaries: the seek equals the plain replay at every position.
TEST(TracePlayer, ReallocsAndRefusalsAtKeyframeBoundaries) {
    constexpr std::uint64_t too_large = std::uint64_t{3} << 30; // past max_heap_bytes: refused unasked
    strata::lab::op_builder b("edges", "reallocs and refusals at keyframe boundaries");
    std::vector<std::uint32_t> slots;
    for (int i = 0; i < 1023; ++i)
        slots.push_back(b.allocate(32 + 16 * static_cast<std::uint64_t>(i % 7)));
    b.reallocate(slots[0], 48);                       // op 1023: the last before keyframe 1
    const std::uint32_t big = b.allocate(too_large);  // op 1024: refused, on the keyframe
    b.reallocate(big, 100);                           // op 1025: realloc of a refused block allocates
    const std::uint32_t big2 = b.allocate(too_large); // op 1026: refused
    b.reallocate(slots[1], too_large);                // op 1027: refused, block 1 stays
    for (int i = 2; i < 1022; ++i)
        b.free(slots[static_cast<std::size_t>(i)]);
    b.reallocate(slots[1022], 4000); // op 2048: a moving realloc on keyframe 2
    b.free(big2);                    // op 2049: the refused block freed (nothing to free)
    b.reallocate(slots[0], 16);      // op 2050: shrink
    b.free(big);
    auto w = b.finish();
    ASSERT_EQ(w.ops.size(), 2052u);
    w.peak_live_bytes = 64 << 10; // the heaps are sized from it, not from the refused requests
    for (const player_heap h : all_heaps) {
        const auto p = trace_player::prepare(w, h);
        ASSERT_NE(p, nullptr);
        ASSERT_EQ(p->keyframe_every(), 1024u);
        EXPECT_TRUE(p->heap_checked()) << serve::heap_name(h);
        EXPECT_EQ(p->refusals(), 3u) << serve::heap_name(h);
        EXPECT_EQ(p->refusals_before(1024), 0u);
        EXPECT_EQ(p->refusals_before(1025), 1u);
        std::vector<std::uint32_t> seek, replay;
        for (std::uint32_t k = 0; k <= p->ops(); ++k) {
            p->live_at(k, seek);
            p->live_by_replay(k, replay);
            ASSERT_EQ(seek, replay) << serve::heap_name(h) << " at op " << k;
            expect_disjoint(*p, seek);
        }
        p->live_at(1028, seek);
        EXPECT_EQ(seek.size(), 1024u) << "1,023 blocks plus the reallocated refusal";
    }
}

// A workload longer than max_ops: the player holds the first max_ops and says it was cut.
TEST(TracePlayer, LongWorkloadsAreCutAndSaySo) {
    strata::lab::op_builder b("long", "max_ops + 2 ops");
    const std::uint32_t keep = b.allocate(64);
    for (std::size_t i = 0; i + 1 < trace_player::max_ops / 2 + 1; ++i)
        b.free(b.allocate(32));
    b.free(keep);
    const auto w = b.finish();
    ASSERT_GT(w.ops.size(), trace_player::max_ops);
    const auto p = trace_player::prepare(w, player_heap::tlsf);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(p->cut());
    EXPECT_EQ(p->ops(), trace_player::max_ops);
    std::vector<std::uint32_t> live;
    p->live_at(p->ops(), live);
    EXPECT_EQ(live.size(), 2u) << "the first block and the last pair's, both freed past the cut";
    EXPECT_FALSE(trace_player::prepare(strata::lab::gen::bimodal(1.0), player_heap::tlsf)->cut());
}

// A player dropped by its last holder gives its memory back to the OS: the resident set returns to
// about where it was (glibc only; not under sanitizers, whose allocators keep memory).
TEST(TracePlayer, ADroppedPlayersMemoryReturns) {
    if (sanitized) GTEST_SKIP() << "sanitizer allocators keep freed memory";
    const auto resident = [] {
        long pages = 0, rss = 0;
        if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
            if (std::fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
            std::fclose(f);
        }
        return static_cast<std::size_t>(rss) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    };
    const auto w = strata::lab::gen::trickle(0.5);
    const std::size_t before = resident();
    auto p = trace_player::prepare(w, player_heap::buddy);
    ASSERT_NE(p, nullptr);
    const std::size_t held = p->bytes();
    EXPECT_GT(held, std::size_t{8} << 20);
    p.reset();
    const std::size_t after = resident();
    std::printf("[trace] resident %.1f MB before, %.1f MB after a %.1f MB player was dropped\n",
                static_cast<double>(before) / 1e6, static_cast<double>(after) / 1e6,
                static_cast<double>(held) / 1e6);
    EXPECT_LT(after, before + held / 4);
}

// --- the cache -------------------------------------------------------------------------------------

serve::trace_source synthetic(const char* name) { return {name, "", ""}; }

// Polls `key` of `cache` until it is ready (or failed), at most `seconds`.
std::shared_ptr<const trace_player> wait_ready(serve::player_cache& cache, const serve::trace_source& t,
                                               player_heap h, int seconds = 60) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < until) {
        const auto s = cache.get(t, h);
        if (s.player || !s.error.empty()) return s.player;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return nullptr;
}

// More sessions than the cache holds, each polling its own (trace, heap) pair in turn until it
// holds its player, as a session does: every one gets its player (an entry still being prepared is
// never dropped for a newer one).
TEST(TraceCache, MoreRequestersThanPlayersAllGetTheirs) {
    serve::player_cache cache;
    const serve::trace_source t = synthetic("bimodal");
    std::array<std::shared_ptr<const trace_player>, std::size(all_heaps)> held{};
    const auto waiting = [&] { return std::count(held.begin(), held.end(), nullptr); };
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (waiting() > 0 && std::chrono::steady_clock::now() < until) {
        for (std::size_t i = 0; i < std::size(all_heaps); ++i)
            if (!held[i]) held[i] = cache.get(t, all_heaps[i]).player;
    }
    for (std::size_t i = 0; i < std::size(all_heaps); ++i)
        EXPECT_NE(held[i], nullptr) << serve::heap_name(all_heaps[i]) << " never ready";
    // Each entry is prepared once, plus again when the cache finished more entries than it keeps
    // while its requester was not polling (a busy machine can stall this thread for several
    // preparations). An entry dropped before its requester could see it, every time, would be
    // prepared hundreds of times in the 20 s.
    EXPECT_LE(cache.prepared(), 4 * std::size(all_heaps))
        << "entries dropped before their requesters saw them";
    EXPECT_LE(cache.players(), serve::player_cache::max_players);
}

// TSAN_STAGE: the Thread test below also runs under ThreadSanitizer (the tsan preset builds the
// server library for tests/serve), covering the cache's lock, its preparing thread and shared seeks.
// Several threads open the same trace at once (it is prepared once: every thread gets the same
// player) and seek it concurrently, while others make the cache prepare and drop other players.
TEST(TraceCacheThread, ManyThreadsOpenAndSeekOneTrace) {
    serve::player_cache cache;
    const serve::trace_source t = synthetic("bimodal");
    constexpr int readers = 6;
    std::vector<std::shared_ptr<const trace_player>> got(readers);
    std::vector<std::thread> threads;
    std::atomic<int> mismatches{0};
    std::atomic<int> opened{0};
    for (int r = 0; r < readers; ++r) {
        threads.emplace_back([&, r] {
            got[static_cast<std::size_t>(r)] = wait_ready(cache, t, player_heap::tlsf);
            ++opened;
            const auto p = got[static_cast<std::size_t>(r)];
            if (!p) return;
            std::mt19937_64 rng(static_cast<std::uint64_t>(r));
            std::vector<std::uint32_t> seek, replay;
            for (int i = 0; i < 40; ++i) {
                const auto k = static_cast<std::uint32_t>(rng() % (p->ops() + 1));
                p->live_at(k, seek);
                p->live_by_replay(k, replay);
                if (seek != replay) ++mismatches;
                (void)cache.get(t, player_heap::tlsf); // keeps it most recently used
            }
        });
    }
    threads.emplace_back([&] { // churn: other players prepared and dropped while the readers seek
        // Once every reader holds the player: one still starting when it was dropped would have it
        // prepared again, which a busy machine's scheduling, not the cache, would cause.
        while (opened.load() < readers)
            std::this_thread::yield();
        for (const char* name : {"frame_scratch", "bimodal"})
            for (const player_heap h : {player_heap::buddy, player_heap::first_fit, player_heap::engine})
                (void)wait_ready(cache, synthetic(name), h);
        (void)cache.bytes();
        (void)cache.players();
    });
    for (auto& th : threads)
        th.join();
    for (int r = 0; r < readers; ++r) {
        ASSERT_NE(got[static_cast<std::size_t>(r)], nullptr) << "reader " << r;
        EXPECT_EQ(got[static_cast<std::size_t>(r)], got[0]) << "prepared more than once";
    }
    EXPECT_LE(cache.prepared(), 7u) << "one bimodal/tlsf player and six others at most";
    EXPECT_EQ(mismatches.load(), 0);
    EXPECT_LE(cache.players(), serve::player_cache::max_players);
}

// --- the API ---------------------------------------------------------------------------------------

struct answer {
    int status;
    json body;
};

answer call(serve::api& a, const std::string& path, json body) {
    const serve::reply r = a.handle("POST", path, body.dump());
    return {r.status, json::parse(r.body, nullptr, false)};
}

std::string new_session(serve::api& a) {
    const serve::reply r = a.handle("POST", "/api/session", "");
    return json::parse(r.body)["session"].get<std::string>();
}

// Opens `trace` into `heap` and waits until the player is ready (the state says "preparing" meanwhile).
json open_ready(serve::api& a, const std::string& sid, const std::string& trace, const std::string& heap) {
    answer o = call(a, "/api/trace/open", {{"session", sid}, {"trace", trace}, {"heap", heap}});
    EXPECT_EQ(o.status, 200) << o.body.dump();
    for (int i = 0; i < 6000; ++i) {
        const answer s = call(a, "/api/trace/state", {{"session", sid}});
        EXPECT_EQ(s.status, 200);
        const std::string st = s.body["state"]["status"];
        if (st == "ready") return s.body["state"];
        EXPECT_EQ(st, "preparing") << s.body.dump();
        if (st != "preparing") return s.body["state"];
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "not ready in 60 s";
    return {};
}

TEST(TraceApi, ViewsAndBadInput) {
    serve::api a;
    const std::string sid = new_session(a);
    // Before open: the state says closed; a view is a bad request.
    EXPECT_EQ(call(a, "/api/trace/state", {{"session", sid}}).body["state"]["status"], "closed");
    EXPECT_EQ(call(a, "/api/trace/view", {{"session", sid}}).status, 400);
    EXPECT_EQ(call(a, "/api/trace/open", {{"session", sid}, {"trace", "nope"}, {"heap", "tlsf"}}).status,
              400);
    EXPECT_EQ(call(a, "/api/trace/open", {{"session", sid}, {"trace", "bimodal"}, {"heap", "nope"}}).status,
              400);
    EXPECT_EQ(call(a, "/api/trace/open", {{"session", sid}, {"trace", 3}, {"heap", "tlsf"}}).status, 400);
    EXPECT_EQ(call(a, "/api/trace/open", {{"session", sid}, {"heap", "tlsf"}}).status, 400);

    const json st = open_ready(a, sid, "bimodal", "tlsf");
    ASSERT_EQ(st["status"], "ready");
    const std::uint64_t ops = st["player"]["ops"], total = st["player"]["heap_bytes"];
    EXPECT_TRUE(st["player"]["check"].get<bool>());

    answer v = call(a, "/api/trace/view", {{"session", sid}, {"op", ops / 2}});
    ASSERT_EQ(v.status, 200) << v.body.dump();
    const json& r = v.body["result"];
    EXPECT_EQ(r["op"], ops / 2);
    EXPECT_EQ(r["overview"].size(), 1024u);
    EXPECT_EQ(r["bins"].size(), 512u);
    EXPECT_EQ(r["blocks"].size(), r["in_range"].get<std::size_t>());
    EXPECT_GT(r["blocks"].size(), 0u);
    EXPECT_EQ(v.body["state"]["op"], ops / 2);
    for (const json& b : r["blocks"]) { // [start, size, header, requested, op, bin]
        EXPECT_LE(b[0].get<std::uint64_t>() + b[1].get<std::uint64_t>(), total);
        EXPECT_EQ(b[2], 16);
        EXPECT_GE(b[1].get<std::uint64_t>(), b[2].get<std::uint64_t>() + b[3].get<std::uint64_t>());
        EXPECT_LT(b[4].get<std::uint64_t>(), ops / 2);
        EXPECT_TRUE(r["bin_labels"].contains(std::to_string(b[5].get<int>())));
    }
    // A zoomed range: only the blocks that overlap it.
    const std::uint64_t lo = total / 4, hi = total / 4 + 4096;
    v = call(a, "/api/trace/view", {{"session", sid}, {"op", ops / 2}, {"lo", lo}, {"hi", hi}, {"bins", 64}});
    ASSERT_EQ(v.status, 200);
    EXPECT_EQ(v.body["result"]["bins"].size(), 64u);
    for (const json& b : v.body["result"]["blocks"]) {
        EXPECT_LT(b[0].get<std::uint64_t>(), hi);
        EXPECT_GT(b[0].get<std::uint64_t>() + b[1].get<std::uint64_t>(), lo);
    }
    const answer s = call(a, "/api/trace/series", {{"session", sid}});
    ASSERT_EQ(s.status, 200);
    EXPECT_EQ(s.body["result"]["op"].size(), s.body["result"]["largest_free"].size());
    EXPECT_EQ(s.body["result"]["op"].back(), ops);

    // Out of range: the op, the zoom range, the bin count.
    for (const json& bad :
         {json{{"op", ops + 1}}, json{{"op", -1}}, json{{"op", "3"}}, json{{"lo", total}},
          json{{"hi", total + 1}}, json{{"lo", 100}, {"hi", 100}}, json{{"lo", 200}, {"hi", 100}},
          json{{"hi", 0}}, json{{"bins", 5000}}, json{{"bins", 1}}}) {
        json body = bad;
        body["session"] = sid;
        EXPECT_EQ(call(a, "/api/trace/view", body).status, 400) << bad.dump();
    }
    EXPECT_EQ(call(a, "/api/trace/nope", {{"session", sid}}).status, 404);
    // The shared player is not the session's memory.
    EXPECT_LT(v.body["session_bytes"].get<std::size_t>(), std::size_t{4096});
}

// Two sessions share one player: the second open is ready at once, and each keeps its own cursor.
TEST(TraceApi, SessionsShareAPlayer) {
    serve::api a;
    const std::string s1 = new_session(a), s2 = new_session(a);
    open_ready(a, s1, "frame_scratch", "buddy");
    const answer o =
        call(a, "/api/trace/open", {{"session", s2}, {"trace", "frame_scratch"}, {"heap", "buddy"}});
    ASSERT_EQ(o.status, 200);
    EXPECT_TRUE(o.body["result"]["ready"].get<bool>());
    EXPECT_EQ(call(a, "/api/trace/view", {{"session", s1}, {"op", 100}}).status, 200);
    EXPECT_EQ(call(a, "/api/trace/view", {{"session", s2}, {"op", 200}}).status, 200);
    EXPECT_EQ(call(a, "/api/trace/state", {{"session", s1}}).body["state"]["op"], 100);
    EXPECT_EQ(call(a, "/api/trace/state", {{"session", s2}}).body["state"]["op"], 200);
}

// The cache keeps at most max_players players: opening more drops the least recently used.
TEST(TraceApi, TheCacheIsBounded) {
    serve::api a;
    const std::string sid = new_session(a);
    for (const char* heap : {"tlsf", "buddy", "first_fit", "engine"})
        open_ready(a, sid, "bimodal", heap);
    EXPECT_LE(serve::player_cache::shared().players(), serve::player_cache::max_players);
    EXPECT_LE(serve::player_cache::shared().bytes(),
              serve::player_cache::max_players * (std::size_t{64} << 20));
}

// A trace named on the command line (`serve --trace FILE`): listed under its file name, and played
// like the built-in ones. The embedded trace, written to a file, stands in for a recorded one.
TEST(TraceApi, RegisteredTracesArePlayed) {
    EXPECT_THROW(serve::register_traces({"/nonexistent/trace.st"}), std::invalid_argument);
    if (!strata::lab::trace_support() || strata::lab::embedded_trace().empty())
        GTEST_SKIP() << "no trace support";
    char path[] = "/tmp/strata-trace-test-XXXXXX";
    const int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    const auto t = strata::lab::embedded_trace();
    ASSERT_EQ(::write(fd, t.data(), t.size()), static_cast<ssize_t>(t.size()));
    ::close(fd);
    serve::register_traces({path});
    const std::string name = std::string(path).substr(5);
    serve::api a;
    const std::string sid = new_session(a);
    const json listed = call(a, "/api/trace/state", {{"session", sid}}).body["state"]["traces"];
    EXPECT_TRUE(std::any_of(listed.begin(), listed.end(), [&](const json& x) { return x["name"] == name; }))
        << listed.dump();
    const json st = open_ready(a, sid, name, "first_fit");
    ::unlink(path);
    ASSERT_EQ(st["status"], "ready") << st.dump();
    EXPECT_EQ(st["player"]["ops"], embedded(trace_player::max_ops).ops.size());
    EXPECT_FALSE(st["player"]["cut"].get<bool>());
}

// Random JSON to every trace op: never a crash, never a 500; every answer is JSON. Small traces only
// (bimodal, frame_scratch), so the players the fuzz opens prepare at once.
TEST(TraceApi, RandomJsonIsNeverA500) {
    serve::api a;
    const std::string sid = new_session(a);
    open_ready(a, sid, "bimodal", "tlsf");
    const auto values = serve::test::fuzz_values({"tlsf", "buddy", "first_fit", "engine", "bimodal",
                                                  "frame_scratch", "trickle\n", json{{"trace", "bimodal"}}});
    // A third of the requests in unoptimized and sanitized builds, where each costs several times more.
    const int rounds = sanitized || !optimized ? 1000 : 3000;
    serve::test::fuzz_demo(a, "trace", sid, {"trace", "heap", "op", "lo", "hi", "bins", "session", "x", ""},
                           {"open", "view", "series", "state", "nope", ""}, values, 11, rounds,
                           [&](const std::string& op, const json& body, const serve::reply& r) {
                               if (op == "open" && r.status == 200)
                                   (void)open_ready(a, sid, body["trace"], body["heap"]);
                           });
    for (const char* raw : {"", "{", "[]", "null", "{\"session\": 1}", "\xff\xfe"}) {
        const serve::reply r = a.handle("POST", "/api/trace/view", raw);
        EXPECT_TRUE(r.status == 400 || r.status == 404) << r.status << " " << raw;
    }
    // As deep as the body bound lets it be: arrays nested 8,000 deep in an argument.
    const std::string deep =
        R"({"session":")" + sid + R"(","op":)" + std::string(8000, '[') + std::string(8000, ']') + "}";
    const serve::reply r = a.handle("POST", "/api/trace/view", deep);
    EXPECT_EQ(r.status, 400) << r.body;
}

#if STRATA_LAB_HAS_TRACE
// Writes a recorded trace of `pairs` malloc/free pairs (one thread, 48-byte blocks) to `path`.
void write_pairs_trace(const std::string& path, std::uint64_t pairs) {
    namespace tr = strata::trace;
    std::string plain;
    std::vector<std::uint8_t> payload(tr::max_chunk_records * tr::max_encoded_record);
    for (std::uint64_t seq = 0; seq < 2 * pairs;) {
        tr::chunk_header h{};
        h.magic = tr::chunk_magic;
        h.thread = 1;
        tr::chunk_encoder enc;
        std::uint8_t* end = payload.data();
        for (; h.count < tr::max_chunk_records && seq < 2 * pairs; ++seq, ++h.count) {
            tr::record r{};
            r.seq = seq;
            r.kind = static_cast<std::uint8_t>(seq % 2 == 0 ? tr::op::malloc : tr::op::free);
            r.id = seq / 2 + 1;
            r.size = seq % 2 == 0 ? 48 : 0;
            r.thread = 1;
            if (h.count == 0) enc.begin(h, r);
            end = enc.encode(end, r);
        }
        h.payload_bytes = static_cast<std::uint32_t>(end - payload.data());
        plain.append(reinterpret_cast<const char*>(&h), sizeof h);
        plain.append(reinterpret_cast<const char*>(payload.data()), h.payload_bytes);
    }
    std::string packed(ZSTD_compressBound(plain.size()), '\0');
    packed.resize(ZSTD_compress(packed.data(), packed.size(), plain.data(), plain.size(), 1));
    tr::file_header fh{};
    std::memcpy(fh.magic, tr::file_magic, sizeof fh.magic);
    fh.version = tr::format_version;
    fh.header_bytes = sizeof fh;
    fh.record_bytes = sizeof(tr::record);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&fh), sizeof fh);
    out.write(packed.data(), static_cast<std::streamsize>(packed.size()));
}

// A `--trace` file longer than max_ops: played up to max_ops, and the state says it was cut.
TEST(TraceApi, ALongTraceFileIsCutAndSaysSo) {
    if (sanitized) GTEST_SKIP() << "1.5 million ops: too slow under sanitizers";
    char path[] = "/tmp/strata-long-trace-XXXXXX";
    const int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    write_pairs_trace(path, trace_player::max_ops / 2 + 1000);
    serve::register_traces({path});
    serve::api a;
    const std::string sid = new_session(a);
    const json st = open_ready(a, sid, std::string(path).substr(5), "tlsf");
    ::unlink(path);
    ASSERT_EQ(st["status"], "ready") << st.dump();
    EXPECT_EQ(st["player"]["ops"], trace_player::max_ops);
    EXPECT_TRUE(st["player"]["cut"].get<bool>());
}
#endif

} // namespace

#else
TEST(TracePlayer, NotBuilt) { GTEST_SKIP() << "strata-lab serve is not built"; }
#endif
