// strata-lab serve: the JSON API over HTTP, against a server started in-process on a free port
// (http_test_client.hpp talks to it).
// Every demo's main operations, and bad input of every kind: each must answer 4xx with a JSON
// error, never crash. (Built as a skipped case where the lab is not built.)
#include <gtest/gtest.h>

#if STRATA_SERVE_AVAILABLE
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "http_test_client.hpp"
#include "server.hpp"

namespace {

using nlohmann::json;
namespace serve = strata::lab::serve;
namespace th = strata_test_http;
using th::raw_exchange;

struct answer {
    int status = 0;
    json body;
};

class ServeApi : public ::testing::Test {
protected:
    void start(serve::limits l = {}) {
        serve::serve_options o;
        o.port = 0;
        o.bounds = l;
        o.threads = 2;
        server_ = std::make_unique<serve::http_server>(
            o, [this] { return std::chrono::steady_clock::now() + std::chrono::seconds(skew_.load()); });
        port_ = server_->start();
        client_ = std::make_unique<th::client>(port_);
    }
    void SetUp() override { start(); }
    void TearDown() override {
        client_.reset();
        if (server_) server_->stop();
    }

    static answer parse(const std::optional<th::http_reply>& r) {
        answer a;
        if (!r) return a;
        a.status = r->status;
        a.body = json::parse(r->body, nullptr, false);
        return a;
    }
    answer post(const std::string& path, const std::string& body) { return parse(client_->post(path, body)); }
    answer get(const std::string& path) { return parse(client_->get(path)); }
    std::string new_session() {
        const answer a = post("/api/session", "");
        EXPECT_EQ(a.status, 201);
        return a.body.value("session", "");
    }
    // A demo operation in a fresh or given session; expects 200 unless told otherwise.
    json op(const std::string& demo, const std::string& name, json args, int status = 200) {
        if (!args.contains("session")) args["session"] = session_;
        const answer a = post("/api/" + demo + "/" + name, args.dump());
        EXPECT_EQ(a.status, status) << demo << "/" << name << " " << args.dump() << " -> " << a.body.dump();
        EXPECT_TRUE(a.body.is_object()) << "every answer is JSON";
        if (status >= 400) {
            EXPECT_TRUE(a.body.contains("error")) << a.body.dump();
        }
        return a.body;
    }
    void expect_error(const std::string& demo, const std::string& name, json args, int status = 400) {
        (void)op(demo, name, std::move(args), status);
    }

    std::unique_ptr<serve::http_server> server_;
    std::unique_ptr<th::client> client_;
    std::atomic<long> skew_{0};
    int port_ = 0;
    std::string session_;
};

TEST_F(ServeApi, InfoListsEveryDemoAndSessionsAreCreated) {
    const answer info = get("/api/info");
    ASSERT_EQ(info.status, 200);
    std::vector<std::string> names;
    for (const auto& d : info.body["demos"])
        names.push_back(d["name"]);
    for (const char* want : {"arena", "stack", "pool", "buddy", "tlsf", "slab", "handles", "race", "latency",
                             "layout", "device"})
        EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
    session_ = new_session();
    EXPECT_EQ(session_.size(), 32u);
    EXPECT_NE(new_session(), session_);
}

TEST_F(ServeApi, ServesThePage) {
    const auto r = client_->get("/");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->header("content-type").find("text/html"), std::string::npos);
    const auto head = client_->send("HEAD", "/index.html", "");
    ASSERT_TRUE(head);
    EXPECT_EQ(head->status, 200);
    EXPECT_EQ(head->header("content-length"), std::to_string(r->body.size())) << "HEAD: the length, no body";
    EXPECT_EQ(client_->get("/favicon.ico")->status, 204);
    EXPECT_EQ(get("/no/such/file.js").status, 404);
}

TEST_F(ServeApi, BadRequestsGetJsonErrors) {
    session_ = new_session();
    EXPECT_EQ(get("/api/nothing/here").status, 404);
    EXPECT_EQ(post("/api/arena", "{}").status, 404);
    EXPECT_EQ(post("/api/arena/explode", json{{"session", session_}}.dump()).status, 404);
    EXPECT_EQ(post("/api/%FF%FE/alloc", "{}").status, 404);
    EXPECT_EQ(post("/api/\xff\xfe/alloc", "{}").status, 400)
        << "a target is ASCII: bytes above it are encoded";
    EXPECT_EQ(get("/api/arena/state").status, 405);
    for (const char* garbage : {"", "{", "not json", "[1,2", "{\"session\":}", "\x01\x02"}) {
        const answer a = post("/api/arena/alloc", garbage);
        EXPECT_EQ(a.status, 400) << garbage;
        EXPECT_TRUE(a.body.contains("error"));
    }
    EXPECT_EQ(post("/api/arena/alloc", "[1,2,3]").status, 400);
    EXPECT_EQ(post("/api/arena/alloc", "{\"size\":8}").status, 400);                      // no session
    EXPECT_EQ(post("/api/arena/alloc", "{\"session\":7,\"size\":8}").status, 400);        // not a string
    EXPECT_EQ(post("/api/arena/alloc", "{\"session\":\"feed\",\"size\":8}").status, 404); // unknown
    // Deep nesting is parsed without recursion and refused as not an object.
    EXPECT_EQ(post("/api/arena/alloc", std::string(8000, '[') + std::string(8000, ']')).status, 400);
}

TEST_F(ServeApi, OversizedBodiesAreRefused) {
    session_ = new_session();
    std::string big = json{{"session", session_}, {"size", 8}, {"pad", std::string(64 * 1024, 'x')}}.dump();
    const answer a = post("/api/arena/alloc", big);
    EXPECT_EQ(a.status, 413);
    EXPECT_TRUE(a.body.contains("error")) << a.body.dump();
    EXPECT_EQ(op("arena", "state", json::object())["state"]["in_use"], 0); // still serving
}

TEST_F(ServeApi, ArenaBumpsAlignsResetsAndRunsOut) {
    session_ = new_session();
    json r = op("arena", "alloc", {{"size", 10}, {"align", 8}});
    EXPECT_TRUE(r["ok"].get<bool>());
    EXPECT_EQ(r["result"]["offset"], 0);
    EXPECT_EQ(r["state"]["head"], 10);
    r = op("arena", "alloc", {{"size", 100}, {"align", 64}});
    EXPECT_EQ(r["result"]["offset"], 64);
    EXPECT_EQ(r["result"]["padding"], 54);
    EXPECT_EQ(r["state"]["head"], 164);
    // The blocks the arena reports tile its buffer: used up to the head, free after it.
    std::size_t covered = 0;
    for (const auto& b : r["state"]["blocks"])
        covered += b["size"].get<std::size_t>();
    EXPECT_EQ(covered, r["state"]["capacity"].get<std::size_t>());
    EXPECT_EQ(r["state"]["allocations"].size(), 2u);

    r = op("arena", "alloc", {{"size", 4096}});
    EXPECT_FALSE(r["ok"].get<bool>()) << "2 KiB arena: out of memory, not an error";
    EXPECT_EQ(r["state"]["head"], 164) << "a failed request changes nothing";

    expect_error("arena", "alloc", {{"size", -1}});
    expect_error("arena", "alloc", {{"size", 0}});
    expect_error("arena", "alloc", {{"size", 1.5}});
    expect_error("arena", "alloc", {{"size", "12"}});
    expect_error("arena", "alloc", {{"size", 18446744073709551615ull}});
    expect_error("arena", "alloc", {{"size", -9223372036854775807ll}});
    expect_error("arena", "alloc", {{"size", 1e300}});
    expect_error("arena", "alloc", {{"size", 8}, {"align", 3}});
    expect_error("arena", "alloc", {{"size", 8}, {"align", 0}});
    expect_error("arena", "alloc", {{"size", 8}, {"align", 1 << 20}});
    expect_error("arena", "alloc", json::object());

    r = op("arena", "reset", json::object());
    EXPECT_EQ(r["state"]["head"], 0);
    EXPECT_EQ(r["state"]["allocations"].size(), 0u);
}

TEST_F(ServeApi, PoolFreeListIsLifo) {
    session_ = new_session();
    json st = op("pool", "state", json::object())["state"];
    const std::size_t cap = st["capacity"];
    ASSERT_GE(cap, 8u);
    EXPECT_EQ(st["free_list"].size(), cap);
    EXPECT_TRUE(st["free_list_consistent"].get<bool>());
    std::vector<std::size_t> got;
    for (std::size_t i = 0; i < cap; ++i) {
        json r = op("pool", "alloc", json::object());
        ASSERT_TRUE(r["ok"].get<bool>());
        got.push_back(r["result"]["slot"]);
    }
    EXPECT_FALSE(op("pool", "alloc", json::object())["ok"].get<bool>());
    // Free three slots: the free list is them, newest first; the next allocation takes the newest.
    op("pool", "free", {{"slot", got[2]}});
    op("pool", "free", {{"slot", got[5]}});
    st = op("pool", "free", {{"slot", got[1]}})["state"];
    EXPECT_EQ(st["free_list"], json({got[1], got[5], got[2]}));
    EXPECT_TRUE(st["check"].get<bool>());
    EXPECT_EQ(st["live"], cap - 3);
    json r = op("pool", "alloc", json::object());
    EXPECT_EQ(r["result"]["slot"], got[1]);
    EXPECT_EQ(r["state"]["free_list"], json({got[5], got[2]}));

    expect_error("pool", "free", {{"slot", got[5]}}); // already free: refused, not a double free
    expect_error("pool", "free", {{"slot", cap}});
    expect_error("pool", "free", {{"slot", -1}});
    expect_error("pool", "free", json::object());
}

TEST_F(ServeApi, TlsfSearchAndBitmapsMatchTheBlocks) {
    session_ = new_session();
    json st = op("tlsf", "state", json::object())["state"];
    const std::size_t levels = st["levels"];
    const auto consistent = [&](const json& s) {
        // Every free block sits in a listed class, and a class is listed exactly when its bits are set.
        std::uint64_t fl_bits = 0;
        std::vector<std::uint32_t> sl_bits(levels, 0);
        std::size_t free_blocks = 0, total = 0;
        for (const auto& b : s["blocks"]) {
            total += b["size"].get<std::size_t>() + s["header_size"].get<std::size_t>();
            if (b["used"].get<bool>()) continue;
            ++free_blocks;
            fl_bits |= std::uint64_t{1} << b["fl"].get<unsigned>();
            sl_bits[b["fl"].get<unsigned>()] |= 1u << b["sl"].get<unsigned>();
        }
        std::size_t listed = 0;
        for (const auto& l : s["lists"])
            listed += l["blocks"].size();
        EXPECT_EQ(listed, free_blocks);
        EXPECT_EQ(s["fl_bitmap"].get<std::uint64_t>(), fl_bits);
        for (std::size_t f = 0; f < levels; ++f)
            EXPECT_EQ(s["sl_bitmaps"][f].get<std::uint32_t>(), sl_bits[f]) << f;
        EXPECT_TRUE(s["check"].get<bool>());
        EXPECT_LE(total, s["capacity"].get<std::size_t>());
    };
    consistent(st);

    json r = op("tlsf", "alloc", {{"size", 100}});
    ASSERT_TRUE(r["ok"].get<bool>());
    EXPECT_EQ(r["result"]["search"]["need"], 112);
    EXPECT_EQ(r["result"]["search"]["path"], "first-level")
        << "one big free block: found by the first-level scan";
    const std::uint64_t a = r["result"]["id"];
    const std::uint64_t b = op("tlsf", "alloc", {{"size", 300}})["result"]["id"];
    (void)op("tlsf", "alloc", {{"size", 40}});
    consistent(op("tlsf", "state", json::object())["state"]);
    // Freeing a leaves a 112-byte hole: a request that fits it is found by the second-level scan.
    st = op("tlsf", "free", {{"id", a}})["state"];
    consistent(st);
    r = op("tlsf", "probe", {{"size", 100}});
    EXPECT_EQ(r["result"]["search"]["path"], "second-level");
    const json chosen = r["result"]["search"]["chosen"];
    bool listed = false;
    for (const auto& l : r["state"]["lists"])
        listed = listed || (l["fl"] == chosen["fl"] && l["sl"] == chosen["sl"]);
    EXPECT_TRUE(listed) << "the chosen class is a non-empty list";
    r = op("tlsf", "alloc", {{"size", 100}});
    EXPECT_TRUE(r["result"]["search"].value("matched", false)) << "the block came from the chosen list";
    EXPECT_EQ(r["result"]["offset"], 16 * 3)
        << "the hole is reused (after the 32-byte pool record and a header)";
    op("tlsf", "free", {{"id", b}});
    consistent(op("tlsf", "state", json::object())["state"]);

    EXPECT_FALSE(op("tlsf", "alloc", {{"size", 100000}})["ok"].get<bool>());
    expect_error("tlsf", "free", {{"id", a}});   // stale
    expect_error("tlsf", "free", {{"id", 999}}); // unknown
    expect_error("tlsf", "free", {{"id", -3}});
    expect_error("tlsf", "alloc", {{"size", -5}});
    expect_error("tlsf", "alloc", {{"size", std::uint64_t{1} << 50}});
}

// The search the page shows is the heap's own on every request: the size the heap asks its free
// lists for is on its 32-byte block grid (1024 needs 1040), the search starts at that size's class,
// and the list it chooses is the one the heap takes from (matched).
TEST_F(ServeApi, TlsfSearchMatchesTheHeapOnEveryRequest) {
    session_ = new_session();
    json r = op("tlsf", "alloc", {{"size", 1024}});
    EXPECT_EQ(r["result"]["search"]["need"], 1040) << "32k + 16";
    const std::uint64_t first = r["result"]["id"];
    (void)op("tlsf", "alloc", {{"size", 16}});
    (void)op("tlsf", "free", {{"id", first}});
    r = op("tlsf", "alloc", {{"size", 1024}});
    EXPECT_TRUE(r["result"]["search"].value("matched", false)) << r["result"]["search"].dump();
    EXPECT_EQ(op("tlsf", "probe", {{"size", 17}})["result"]["search"]["need"], 48);

    // Random sizes, frees and allocations: every allocation came from the list the search chose.
    std::vector<std::uint64_t> live;
    int searched = 0;
    std::uint64_t x = 12345;
    const auto next = [&x] { return x = x * 6364136223846793005u + 1442695040888963407u; };
    for (int i = 0; i < 300; ++i) {
        if (!live.empty() && next() % 3 == 0) {
            const std::size_t k = (next() >> 33) % live.size();
            (void)op("tlsf", "free", {{"id", live[k]}});
            live[k] = live.back();
            live.pop_back();
            continue;
        }
        const std::size_t size = 1 + (next() >> 40) % 700;
        r = op("tlsf", "alloc", {{"size", size}});
        if (!r["ok"].get<bool>()) continue; // full
        live.push_back(r["result"]["id"]);
        // No list chosen, yet a block: the last resort took the one free block that fits only
        // without the grid's rounding (tlsf.hpp, allocate_last_resort).
        if (!r["result"]["search"].contains("chosen")) continue;
        ++searched;
        EXPECT_TRUE(r["result"]["search"].value("matched", false))
            << size << ": " << r["result"]["search"].dump();
    }
    EXPECT_GT(searched, 100);
}

TEST_F(ServeApi, StackMarkersRewindAndGoStale) {
    session_ = new_session();
    op("stack", "alloc", {{"size", 40}});
    const std::uint64_t m = op("stack", "mark", json::object())["result"]["marker"];
    const std::size_t top = op("stack", "state", json::object())["state"]["top"];
    op("stack", "alloc", {{"size", 100}, {"align", 64}});
    json r = op("stack", "alloc", {{"size", 8}});
    EXPECT_GT(r["state"]["top"].get<std::size_t>(), top);
    EXPECT_EQ(r["state"]["allocations"].size(), 3u);
    r = op("stack", "rewind", {{"marker", m}});
    EXPECT_EQ(r["state"]["top"], top);
    EXPECT_EQ(r["state"]["allocations"].size(), 1u);
    r = op("stack", "pop", json::object());
    EXPECT_EQ(r["state"]["top"], 0);
    // Refusals, not bad requests: the top fell below the marker; the stack is empty.
    EXPECT_FALSE(op("stack", "rewind", {{"marker", m}})["ok"].get<bool>());
    EXPECT_FALSE(op("stack", "pop", json::object())["ok"].get<bool>());
    EXPECT_FALSE(op("stack", "alloc", {{"size", 5000}})["ok"].get<bool>());
    expect_error("stack", "alloc", {{"size", -1}});
}

TEST_F(ServeApi, BuddySplitsAndCoalesces) {
    session_ = new_session();
    json r = op("buddy", "alloc", {{"size", 50}});
    EXPECT_EQ(r["result"]["block_size"], 64);
    const std::uint64_t a = r["result"]["id"];
    const std::uint64_t b = op("buddy", "alloc", {{"size", 64}})["result"]["id"];
    r = op("buddy", "state", json::object());
    // 4096 split down to 64: one free block per order from 64 to 2048 beside the two used ones.
    EXPECT_EQ(r["state"]["blocks"].size(), 2u + 5u);
    op("buddy", "free", {{"id", a}});
    r = op("buddy", "free", {{"id", b}});
    EXPECT_EQ(r["result"]["merged_size"], 4096) << "merged all the way up";
    EXPECT_EQ(r["result"]["merges"], 6);
    EXPECT_EQ(r["state"]["blocks"].size(), 1u);
    EXPECT_TRUE(r["state"]["check"].get<bool>());
    expect_error("buddy", "free", {{"id", a}});
    EXPECT_FALSE(op("buddy", "alloc", {{"size", 8192}})["ok"].get<bool>());
}

TEST_F(ServeApi, DeviceKeepsKindsApartAndDefragments) {
    session_ = new_session();
    json r = op("device", "alloc", {{"kind", "linear"}, {"size", 5000}, {"align", 256}});
    ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
    const std::uint64_t buffer_end =
        r["result"]["offset"].get<std::uint64_t>() + r["result"]["size"].get<std::uint64_t>();
    const std::uint64_t buffer_block = r["result"]["block"];
    r = op("device", "alloc", {{"kind", "optimal"}, {"size", 5000}, {"align", 256}});
    ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
    if (r["result"]["block"] == buffer_block) { // an image never shares the buffer's last granularity page
        const std::uint64_t page = op("device", "state", json::object())["state"]["granularity"];
        EXPECT_NE((buffer_end - 1) / page, r["result"]["offset"].get<std::uint64_t>() / page);
    }
    EXPECT_TRUE(op("device", "fragment", json::object())["ok"].get<bool>());
    r = op("device", "state", json::object());
    const double before = r["state"]["fragmentation"];
    const std::uint64_t live = r["state"]["live_allocations"];
    bool done = false;
    for (int click = 0; click < 200 && !done; ++click) {
        r = op("device", "defrag", json::object());
        done = r["result"]["phase"] == "done";
        EXPECT_TRUE(r["state"]["check"].get<bool>()) << "click " << click;
    }
    EXPECT_TRUE(done) << "defragmentation ends";
    EXPECT_FALSE(r["state"]["defragmenting"].get<bool>());
    EXPECT_GT(r["state"]["bytes_moved"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(r["state"]["live_allocations"].get<std::uint64_t>(), live) << "moves keep every allocation";
    EXPECT_LE(r["state"]["fragmentation"].get<double>(), before);
    expect_error("device", "alloc", {{"kind", "texture"}});
    expect_error("device", "alloc", {{"size", 0}});
    expect_error("device", "free", {{"id", 999999}});
}

TEST_F(ServeApi, SlabRowsAndTheMagazineColumn) {
    session_ = new_session();
    json r = op("slab", "alloc", {{"count", 10}});
    ASSERT_TRUE(r["ok"].get<bool>());
    json st = r["state"];
    EXPECT_EQ(st["yours"], 10);
    std::size_t yours = 0, live = 0;
    for (const auto& row : st["slabs"]) {
        live += row["live"].get<std::size_t>();
        for (const auto& o : row["objects"]) {
            yours += o["holder"] == "yours";
            EXPECT_LT(o["index"].get<std::size_t>(), st["objects_per_slab"].get<std::size_t>());
        }
    }
    EXPECT_EQ(yours, 10u);
    EXPECT_EQ(live, st["slab_live"].get<std::size_t>()) << "the rows add up to the slab layer's live count";
    EXPECT_GE(live, 10u) << "magazines hold objects out of the slabs too";
    // Freeing goes into this thread's magazine, not the slab: the slab layer's count stays.
    st = op("slab", "free", {{"count", 3}})["state"];
    EXPECT_EQ(st["yours"], 7);
    EXPECT_EQ(st["slab_live"], live);
    ASSERT_TRUE(st["magazine"]["loaded"].is_object());
    EXPECT_GE(st["magazine"]["loaded"]["count"].get<int>(), 1);
    EXPECT_TRUE(st["check"].get<bool>());
    // Flush returns the magazines: only your objects stay out of the slabs.
    st = op("slab", "flush", json::object())["state"];
    EXPECT_EQ(st["slab_live"], 7);
    // Exhaustion is an answer, not an error; bad counts and stale ids are errors.
    for (int i = 0; i < 6; ++i)
        (void)op("slab", "alloc", {{"count", 64}});
    EXPECT_FALSE(op("slab", "alloc", {{"count", 64}})["ok"].get<bool>());
    expect_error("slab", "alloc", {{"count", 0}});
    expect_error("slab", "alloc", {{"count", 65}});
    expect_error("slab", "free", {{"id", 987654}});
    expect_error("slab", "free", {{"count", -1}});
}

TEST_F(ServeApi, HandlesRejectAKeptStaleHandle) {
    session_ = new_session();
    json a = op("handles", "spawn", json::object())["result"]["handle"];
    json b = op("handles", "spawn", json::object())["result"]["handle"];
    json c = op("handles", "spawn", json::object())["result"]["handle"];
    json r = op("handles", "free", {{"handle", a}});
    EXPECT_TRUE(r["ok"].get<bool>());
    // Swap-and-pop: the last value (c) moved into a's dense place.
    EXPECT_EQ(r["state"]["dense"][0]["handle"], c);
    EXPECT_EQ(r["state"]["dense"].size(), 2u);
    r = op("handles", "get", {{"handle", a}});
    EXPECT_FALSE(r["ok"].get<bool>()) << "the kept handle is stale";
    EXPECT_FALSE(op("handles", "free", {{"handle", a}})["ok"].get<bool>());
    // The slot is reused with a new generation; the old handle stays rejected.
    json d = op("handles", "spawn", json::object())["result"]["handle"];
    EXPECT_EQ(d["index"], a["index"]);
    EXPECT_NE(d["generation"], a["generation"]);
    EXPECT_FALSE(op("handles", "get", {{"handle", a}})["ok"].get<bool>());
    EXPECT_TRUE(op("handles", "get", {{"handle", d}})["ok"].get<bool>());
    EXPECT_TRUE(op("handles", "get", {{"handle", b}})["ok"].get<bool>());
    EXPECT_TRUE(op("handles", "state", json::object())["state"]["check"].get<bool>());
    expect_error("handles", "get", json::object());
    expect_error("handles", "get", {{"handle", {{"index", -1}, {"generation", 1}}}});
    expect_error("handles", "get", {{"handle", {{"index", 1 << 21}, {"generation", 1}}}});
    expect_error("handles", "get", {{"handle", "7"}});
    EXPECT_FALSE(op("handles", "get", {{"handle", {{"index", 5000}, {"generation", 3}}}})["ok"].get<bool>());
}

TEST_F(ServeApi, MeasurementsAreBoundedAndReturnSeries) {
    session_ = new_session();
    json st = op("race", "run", {{"seed", 7}, {"scale_percent", 20}})["state"];
    ASSERT_EQ(st["runs"].size(), 4u);
    for (const auto& r : st["runs"]) {
        EXPECT_GT(r["largest_free"].size(), 10u) << r["name"];
        EXPECT_EQ(r["largest_free"].size(), st["runs"][0]["largest_free"].size());
    }
    expect_error("race", "run", {{"scale_percent", 100000}});
    expect_error("race", "run", {{"seed", -1}});

    st = op("latency", "run", {{"samples", 500}})["state"];
    ASSERT_GE(st["runs"].size(), 4u); // malloc, engine heap, TLSF, arena; the peers where built
    for (const auto& r : st["runs"]) {
        std::uint64_t total = 0;
        for (const auto& c : r["counts"])
            total += c.get<std::uint64_t>();
        EXPECT_EQ(total, 500u) << r["name"];
        EXPECT_LE(r["p50"].get<double>(), r["max"].get<double>());
    }
    expect_error("latency", "run", {{"samples", 10'000'000}});

    st = op("layout", "run", {{"entities", 4096}})["state"];
    EXPECT_EQ(st["aos"]["lines"], 4096 * 32 / 64);
    EXPECT_EQ(st["soa"]["lines"], 4096 * 4 / 64);
    expect_error("layout", "run", {{"entities", 1'000'000'000}});
}

TEST_F(ServeApi, SessionsExpire) {
    session_ = new_session();
    op("arena", "alloc", {{"size", 10}});
    skew_ = 10 * 60; // within the idle time
    op("arena", "state", json::object());
    skew_ = 40 * 60; // 30 idle minutes later
    expect_error("arena", "state", json::object(), 404);
    EXPECT_EQ(server_->the_api().session_count(), 0u);
}

TEST_F(ServeApi, ASessionClosesAndTheIdlestGivesWayWhenFull) {
    session_ = new_session();
    op("arena", "alloc", {{"size", 10}});
    EXPECT_EQ(post("/api/session/close", json{{"session", session_}}.dump()).status, 200);
    expect_error("arena", "state", json::object(), 404);
    EXPECT_EQ(post("/api/session/close", json{{"session", session_}}.dump()).status, 404);
    EXPECT_EQ(post("/api/session/close", "{}").status, 400);
    EXPECT_EQ(server_->the_api().session_count(), 0u);

    // Full: a new session replaces the least recently used one, once it has been idle a minute.
    client_.reset();
    server_->stop();
    serve::limits l;
    l.max_sessions = 2;
    start(l);
    const std::string a = new_session();
    const std::string b = new_session();
    EXPECT_EQ(post("/api/session", "").status, 503) << "both in use just now";
    skew_ = 30;
    session_ = b;
    op("arena", "state", json::object()); // b is used; a stays idle
    skew_ = 90;
    const std::string c = new_session(); // a, idle 90 s, gives way
    EXPECT_EQ(server_->the_api().session_count(), 2u);
    session_ = a;
    expect_error("arena", "state", json::object(), 404);
    session_ = b;
    op("arena", "state", json::object());
    session_ = c;
    op("arena", "state", json::object());
}

// Range is ignored (RFC 9110 allows it): every request gets the whole content, once, with 200.
TEST_F(ServeApi, RangesGetTheWholeContent) {
    std::string ranges = "bytes=0-";
    for (int i = 0; i < 2000; ++i)
        ranges += ",0-";
    const auto whole = client_->get("/index.html");
    ASSERT_TRUE(whole);
    const auto r = client_->get("/index.html", {{"Range", ranges}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << "several ranges: the whole content, once";
    EXPECT_EQ(r->body, whole->body);
    const auto one = client_->get("/index.html", {{"Range", "bytes=0-9"}});
    ASSERT_TRUE(one);
    EXPECT_EQ(one->status, 200);
    EXPECT_EQ(one->body, whole->body);
}

// A gzip member holding `text` in one stored (uncompressed) deflate block.
std::string gzip_stored(const std::string& text) {
    std::uint32_t crc = 0xFFFFFFFFu;
    for (unsigned char c : text) {
        crc ^= c;
        for (int k = 0; k < 8; ++k)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    crc = ~crc;
    const auto le = [](std::string& out, std::uint32_t v, int bytes) {
        for (int i = 0; i < bytes; ++i)
            out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    };
    std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
    const auto n = static_cast<std::uint32_t>(text.size());
    out.push_back('\x01'); // final block, stored
    le(out, n, 2);
    le(out, ~n & 0xFFFFu, 2);
    out += text;
    le(out, crc, 4);
    le(out, n, 4);
    return out;
}

// A compressed body is refused, uninflated (a 460-byte brotli body can inflate to 2 GB); the
// operation it names does not run.
TEST_F(ServeApi, CompressedBodiesAreRefusedUninflated) {
    session_ = new_session();
    const std::string alloc = json{{"session", session_}, {"size", 8}}.dump();
    const auto r = client_->post("/api/arena/alloc", gzip_stored(alloc), "application/json",
                                 {{"Content-Encoding", "gzip"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 415);
    EXPECT_TRUE(json::parse(r->body, nullptr, false).contains("error")) << r->body;
    EXPECT_EQ(op("arena", "state", json::object())["state"]["in_use"], 0) << "the operation did not run";
    const auto close =
        client_->post("/api/session/close", "\x0b\x02\x80", "application/json", {{"Content-Encoding", "br"}});
    ASSERT_TRUE(close);
    EXPECT_EQ(close->status, 415);
    const auto plain =
        client_->post("/api/arena/alloc", alloc, "application/json", {{"Content-Encoding", "identity"}});
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->status, 200) << "identity is no encoding";
    EXPECT_EQ(server_->the_api().handle("POST", "/api/session/close", std::string(64 * 1024, ' ')).status,
              413)
        << "the close route is bounded like the others";
}

// An API answer is never cut by a range.
TEST_F(ServeApi, ApiAnswersAreNeverCutByARange) {
    const auto whole = client_->get("/api/info");
    ASSERT_TRUE(whole);
    const auto r = client_->get("/api/info", {{"Range", "bytes=0-5"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, whole->body);
    EXPECT_TRUE(json::parse(r->body, nullptr, false).is_object());
}

// A POST with neither Content-Length nor chunked coding has no body (RFC 9112 6.3).
TEST_F(ServeApi, APostWithoutALengthHasNoBody) {
    const std::string reply =
        raw_exchange(port_, "POST /api/session HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                                "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(reply.rfind("HTTP/1.1 201", 0), 0u) << reply;
    EXPECT_NE(reply.find("\"session\""), std::string::npos) << reply;
}

// A chunked body stops at the limit as it arrives (here it never ends, and the answer still comes
// at once), and a body in another transfer coding is refused.
TEST_F(ServeApi, AChunkedBodyIsCutAtTheLimitAndOtherCodingsAreRefused) {
    // (Connection: close, so the exchange ends with the answer instead of the keep-alive timeout.)
    std::string request = "POST /api/session HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                          "\r\nConnection: "
                          "close\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 64; ++i)
        request += "400\r\n" + std::string(1024, ' ') + "\r\n"; // 64 KiB, and no last chunk
    std::string reply = raw_exchange(port_, request);
    EXPECT_EQ(reply.rfind("HTTP/1.1 413", 0), 0u) << reply.substr(0, 200);
    EXPECT_NE(reply.find("too large"), std::string::npos);

    reply = raw_exchange(port_, "POST /api/session HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                                    "\r\nConnection: close\r\n"
                                    "Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n");
    EXPECT_EQ(reply.rfind("HTTP/1.1 501", 0), 0u) << reply.substr(0, 200);
    reply = raw_exchange(port_, "GET /api/info HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                                    "\r\nConnection: close\r\n"
                                    "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply.substr(0, 200);

    // A small chunked body is read and served like any other.
    const std::string body = "{}";
    reply = raw_exchange(port_, "POST /api/session HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                                    "\r\nConnection: close\r\n"
                                    "Transfer-Encoding: chunked\r\n\r\n2\r\n" +
                                    body + "\r\n0\r\n\r\n");
    EXPECT_EQ(reply.rfind("HTTP/1.1 201", 0), 0u) << reply.substr(0, 200);
}

// The port is bound without SO_REUSEPORT: a second server on it would take half of the page's
// requests (each server has its own sessions).
TEST_F(ServeApi, ASecondServerCannotTakeTheSamePort) {
    serve::serve_options o;
    o.port = port_;
    o.threads = 1;
    serve::http_server second(o);
    EXPECT_THROW((void)second.start(), std::runtime_error);
}

TEST(ServeLimits, TooManySessionsAndTheMemoryBound) {
    serve::serve_options o;
    o.port = 0;
    o.bounds.max_sessions = 3;
    o.bounds.session_bytes = 6 * 1024; // room for the arena and the pool, not the 8 KiB TLSF too
    serve::http_server server(o);
    th::client c(server.start());
    std::string id;
    for (int i = 0; i < 3; ++i) {
        auto r = c.post("/api/session", "", "application/json");
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 201);
        id = json::parse(r->body)["session"];
    }
    auto r = c.post("/api/session", "", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    const std::string body = json{{"session", id}}.dump();
    r = c.post("/api/arena/state", body, "application/json");
    EXPECT_EQ(r->status, 200);
    const std::size_t after_arena = json::parse(r->body)["session_bytes"];
    EXPECT_LE(after_arena, o.bounds.session_bytes);
    EXPECT_EQ(c.post("/api/pool/state", body, "application/json")->status, 200);
    r = c.post("/api/tlsf/state", body, "application/json");
    EXPECT_EQ(r->status, 409);
    EXPECT_TRUE(json::parse(r->body).contains("error"));
    EXPECT_EQ(
        c.post("/api/arena/alloc", json{{"session", id}, {"size", 8}}.dump(), "application/json")->status,
        200);
}

TEST_F(ServeApi, EveryDemoFitsTheDefaultBound) {
    session_ = new_session();
    std::size_t bytes = 0;
    for (const char* d : {"arena", "stack", "pool", "buddy", "tlsf", "slab", "handles", "race", "latency",
                          "layout", "device"}) {
        const json r = op(d, "state", json::object());
        bytes = r["session_bytes"];
    }
    EXPECT_LE(bytes, serve::limits{}.session_bytes);
}

TEST_F(ServeApi, SessionsAreServedInParallel) {
    std::vector<std::string> ids;
    for (int i = 0; i < 4; ++i)
        ids.push_back(new_session());
    std::vector<std::thread> workers;
    std::atomic<int> failures{0};
    for (const std::string& id : ids) {
        workers.emplace_back([&, id] {
            th::client c(port_);
            for (int k = 0; k < 20; ++k) {
                const auto r = c.post("/api/tlsf/alloc", json{{"session", id}, {"size", 16 + k * 8}}.dump(),
                                      "application/json");
                if (!r || r->status != 200) ++failures;
            }
        });
    }
    for (auto& w : workers)
        w.join();
    EXPECT_EQ(failures.load(), 0);
    for (const std::string& id : ids) {
        const json st = op("tlsf", "state", {{"session", id}})["state"];
        EXPECT_EQ(st["live_allocations"], 20);
        EXPECT_TRUE(st["check"].get<bool>());
    }
}

} // namespace

#else
TEST(ServeApi, NotBuilt) {
    GTEST_SKIP() << "strata-lab serve is not part of this build (STRATA_BUILD_LAB off)";
}
#endif
