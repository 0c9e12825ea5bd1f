// strata-lab serve: the measuring demos (race, latency, layout) driven in-process through
// api::handle: the shapes of their results, every allocator present or its absence explained, bad
// arguments refused with 400, and the memory of repeated runs given back to the OS (RSS).
#include <gtest/gtest.h>

#include "strata/core/config.hpp"

#if STRATA_SERVE_AVAILABLE
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "api.hpp"

namespace {

using nlohmann::json;
namespace serve = strata::lab::serve;

struct answer {
    int status = 0;
    json body;
};

/// Returns: this process's resident bytes, from /proc/self/statm.
long long rss_bytes() {
    long long size = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%lld %lld", &size, &resident) != 2) resident = 0;
        std::fclose(f);
    }
    return resident * ::sysconf(_SC_PAGESIZE);
}

class MeasureApi : public ::testing::Test {
protected:
    void SetUp() override {
        const serve::reply r = api_.handle("POST", "/api/session", "");
        ASSERT_EQ(r.status, 201) << r.body;
        session_ = json::parse(r.body)["session"].get<std::string>();
    }
    answer call(const std::string& demo, const std::string& op, json args = json::object()) {
        args["session"] = session_;
        const serve::reply r = api_.handle("POST", "/api/" + demo + "/" + op, args.dump());
        return {r.status, json::parse(r.body, nullptr, false)};
    }
    /// Returns: the state after a successful run of `demo` with `args`.
    json run(const std::string& demo, json args = json::object()) {
        const answer a = call(demo, "run", std::move(args));
        EXPECT_EQ(a.status, 200) << a.body.dump();
        EXPECT_TRUE(a.body.value("ok", false)) << a.body.dump();
        return a.body["state"];
    }

    serve::api api_;
    std::string session_;
};

TEST_F(MeasureApi, StateBeforeAnyRunIsEmpty) {
    for (const char* demo : {"race", "latency", "layout"}) {
        const answer a = call(demo, "state");
        ASSERT_EQ(a.status, 200) << demo;
        EXPECT_TRUE(a.body["state"].empty()) << demo;
    }
}

TEST_F(MeasureApi, RaceSeriesAndSummaries) {
    const json st = run("race", {{"seed", 7}, {"scale_percent", 50}});
    const std::size_t points = st["ops"].size();
    ASSERT_GT(points, 10u);
    for (std::size_t i = 1; i < points; ++i)
        EXPECT_LT(st["ops"][i - 1].get<std::uint64_t>(), st["ops"][i].get<std::uint64_t>());
    const std::uint64_t heap = st["heap_bytes"];
    EXPECT_LT(st["drain_from"].get<std::uint64_t>(), st["operations"].get<std::uint64_t>());
    EXPECT_GT(st["drain_from"].get<std::uint64_t>(), st["operations"].get<std::uint64_t>() / 2);
    std::set<std::string> names;
    ASSERT_EQ(st["runs"].size(), 4u);
    for (const json& r : st["runs"]) {
        names.insert(r["name"].get<std::string>());
        for (const char* k : {"in_use", "free_bytes", "largest_free", "fragmentation"})
            ASSERT_EQ(r[k].size(), points) << r["name"] << " " << k;
        std::uint64_t peak = 0;
        double sum = 0;
        for (std::size_t i = 0; i < points; ++i) {
            const std::uint64_t used = r["in_use"][i], free_b = r["free_bytes"][i],
                                largest = r["largest_free"][i];
            const double f = r["fragmentation"][i];
            EXPECT_EQ(used + free_b, heap);
            EXPECT_LE(largest, free_b);
            EXPECT_GE(f, 0.0);
            EXPECT_LE(f, 1.0);
            EXPECT_DOUBLE_EQ(
                f, free_b == 0 ? 0.0 : 1.0 - static_cast<double>(largest) / static_cast<double>(free_b));
            peak = std::max(peak, used);
            sum += f;
        }
        EXPECT_EQ(r["peak_in_use"].get<std::uint64_t>(), peak);
        EXPECT_NEAR(r["mean_fragmentation"].get<double>(), sum / static_cast<double>(points), 1e-9);
        // "final": the last sample before the drain (the workload's closing frees).
        std::size_t last = 0;
        for (std::size_t i = 0; i < points; ++i)
            if (st["ops"][i].get<std::uint64_t>() <= st["drain_from"].get<std::uint64_t>()) last = i;
        EXPECT_DOUBLE_EQ(r["final_fragmentation"].get<double>(), r["fragmentation"][last].get<double>());
        EXPECT_EQ(r["final_largest_free"], r["largest_free"][last]);
        EXPECT_EQ(r["in_use"].back(), 0) << r["name"] << ": the drain frees everything";
        EXPECT_TRUE(r["failures"].is_number_unsigned());
    }
    EXPECT_EQ(names, (std::set<std::string>{"pool (1 KiB slots)", "buddy", "tlsf", "first-fit"}));
    // The same seed replays the same workload: the same series.
    const json again = run("race", {{"seed", 7}, {"scale_percent", 50}});
    EXPECT_EQ(again["runs"], st["runs"]);
}

TEST_F(MeasureApi, LatencyEveryAllocatorOrItsAbsence) {
    const json st = run("latency", {{"samples", 5000}, {"seed", 3}});
    EXPECT_EQ(st["samples"], 5000);
    const std::size_t bins = st["edges_ns"].size() - 1;
    for (std::size_t i = 1; i < st["edges_ns"].size(); ++i)
        EXPECT_LT(st["edges_ns"][i - 1].get<double>(), st["edges_ns"][i].get<double>());
    std::set<std::string> names;
    for (const json& r : st["runs"]) {
        const std::string name = r["name"];
        names.insert(name);
        ASSERT_EQ(r["counts"].size(), bins) << name;
        std::uint64_t total = 0;
        for (const json& c : r["counts"])
            total += c.get<std::uint64_t>();
        EXPECT_EQ(total, 5000u) << name;
        const json& cdf = r["cdf"];
        ASSERT_EQ(cdf.size(), 200u) << name;
        for (std::size_t i = 1; i < cdf.size(); ++i) {
            EXPECT_LT(cdf[i - 1][0].get<double>(), cdf[i][0].get<double>()) << name << " point " << i;
            EXPECT_LE(cdf[i - 1][1].get<double>(), cdf[i][1].get<double>()) << name << " point " << i;
        }
        EXPECT_DOUBLE_EQ(cdf.front()[0].get<double>(), 0.0);
        EXPECT_DOUBLE_EQ(cdf.back()[0].get<double>(), 100.0);
        EXPECT_DOUBLE_EQ(cdf.back()[1].get<double>(), r["max"].get<double>());
        // Dense in the tail: more than half the points above p99.
        std::size_t tail = 0;
        for (const json& p : cdf)
            tail += p[0].get<double>() >= 99.0;
        EXPECT_GT(tail, 80u) << name;
        const double p50 = r["p50"], p99 = r["p99"], p999 = r["p999"], mx = r["max"], mean = r["mean"];
        EXPECT_LE(0.0, p50);
        EXPECT_LE(p50, p99);
        EXPECT_LE(p99, p999);
        EXPECT_LE(p999, mx);
        EXPECT_LE(mean, mx);
    }
    for (const json& s : st["skipped"]) {
        names.insert(s["name"].get<std::string>());
        EXPECT_FALSE(s["reason"].get<std::string>().empty());
    }
    for (const char* n : {"malloc", "mimalloc", "engine heap", "tlsf", "arena"})
        EXPECT_TRUE(names.count(n)) << n << " neither measured nor explained";
    for (const char* n : {"malloc", "engine heap", "tlsf", "arena"}) // strata's own are always there
        EXPECT_TRUE(std::any_of(st["runs"].begin(), st["runs"].end(), [&](const json& r) {
            return r["name"] == n;
        })) << n;
}

TEST_F(MeasureApi, LayoutCountsLines) {
    const json st = run("layout", {{"entities", 10000}});
    EXPECT_EQ(st["entities"], 10000);
    EXPECT_EQ(st["aos"]["lines"].get<std::uint64_t>(), 10000u * 32 / 64);
    EXPECT_EQ(st["soa"]["lines"].get<std::uint64_t>(), 10000u * 4 / 64); // 40000 B: 625 lines
    EXPECT_GE(st["aos"]["ms"].get<double>(), 0.0);
    EXPECT_GE(st["soa"]["ms"].get<double>(), 0.0);
}

TEST_F(MeasureApi, BadArgumentsAre400) {
    const std::pair<const char*, json> bad[] = {
        {"race", {{"seed", -1}}},           {"race", {{"seed", "x"}}},
        {"race", {{"scale_percent", 5}}},   {"race", {{"scale_percent", 201}}},
        {"latency", {{"samples", 99}}},     {"latency", {{"samples", 50001}}},
        {"latency", {{"samples", 1.5}}},    {"latency", {{"seed", std::uint64_t{1} << 40}}},
        {"layout", {{"entities", 999}}},    {"layout", {{"entities", 1'000'001}}},
        {"layout", {{"entities", "many"}}},
    };
    for (const auto& [demo, args] : bad) {
        const answer a = call(demo, "run", args);
        EXPECT_EQ(a.status, 400) << demo << " " << args.dump();
        EXPECT_TRUE(a.body.contains("error")) << a.body.dump();
    }
    EXPECT_EQ(call("latency", "reset").status, 404);
}

// RSS is a process-wide number: these runs must give back what they take, whatever ran before.
TEST_F(MeasureApi, LayoutRunsGiveTheirMemoryBack) {
    run("layout", {{"entities", 1000}}); // the first run's one-time costs (code pages, statics)
    const long long start = rss_bytes();
    long long peak = start;
    for (int i = 0; i < 30; ++i) {
        run("layout", {{"entities", 1'000'000}});
        peak = std::max(peak, rss_bytes());
    }
    const long long end = rss_bytes();
    std::printf("layout x30: RSS %lld MiB at the start, %lld MiB at the end, %lld MiB highest seen\n",
                start >> 20, end >> 20, peak >> 20);
    EXPECT_LT(end - start, 20ll << 20);
}

TEST_F(MeasureApi, RaceAndLatencyRunsGiveTheirMemoryBack) {
#if STRATA_ASAN || defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "the sanitizer's malloc keeps freed blocks in quarantine: RSS says nothing here";
#endif
    run("race", {{"scale_percent", 200}});
    run("latency", {{"samples", 50000}});
    const long long start = rss_bytes();
    for (int i = 0; i < 10; ++i) {
        run("race", {{"seed", i}, {"scale_percent", 200}});
        run("latency", {{"seed", i}, {"samples", 50000}});
    }
    const long long end = rss_bytes();
    std::printf("race + latency x10: RSS %lld MiB at the start, %lld MiB at the end\n", start >> 20,
                end >> 20);
    EXPECT_LT(end - start, 20ll << 20);
}

} // namespace

#else
TEST(MeasureApi, SkippedWithoutTheLab) { GTEST_SKIP() << "strata-lab serve is not built"; }
#endif
