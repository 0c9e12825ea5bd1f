// strata-lab serve: refusals against bad requests, in-process through api::handle (no HTTP). An
// allocator that says no, or an operation with nothing to do, is an answer: 200, ok false, a reason
// and the state unchanged. Only a malformed request (or an id the page never sends) is a 400.
// Also: the TLSF search comes with the bitmaps it ran on. (Built as a skipped case without the lab.)
#include <gtest/gtest.h>

#if STRATA_SERVE_AVAILABLE
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "api.hpp"

namespace {

using nlohmann::json;
namespace serve = strata::lab::serve;

class Refusal : public ::testing::Test {
protected:
    void SetUp() override {
        const serve::reply r = api_.handle("POST", "/api/session", "");
        ASSERT_EQ(r.status, 201);
        session_ = json::parse(r.body)["session"];
    }
    // One operation: {status, body}.
    std::pair<int, json> call(const std::string& demo, const std::string& op, json args = json::object()) {
        args["session"] = session_;
        const serve::reply r = api_.handle("POST", "/api/" + demo + "/" + op, args.dump());
        return {r.status, json::parse(r.body, nullptr, false)};
    }
    json state(const std::string& demo) { return call(demo, "state").second["state"]; }
    // Expects a done operation: 200, ok true. Returns its result.
    json done(const std::string& demo, const std::string& op, json args = json::object()) {
        const auto [status, body] = call(demo, op, args);
        EXPECT_EQ(status, 200) << demo << "/" << op << " " << args.dump() << " -> " << body.dump();
        EXPECT_TRUE(body.value("ok", false))
            << demo << "/" << op << " " << args.dump() << " -> " << body.dump();
        return body["result"];
    }
    // Expects a refusal: 200, ok false, a reason, the state as it was. Returns the result.
    json refused(const std::string& demo, const std::string& op, json args = json::object()) {
        const json before = state(demo);
        const auto [status, body] = call(demo, op, args);
        EXPECT_EQ(status, 200) << demo << "/" << op << " " << args.dump() << " -> " << body.dump();
        EXPECT_EQ(body.value("ok", true), false) << demo << "/" << op << " -> " << body.dump();
        EXPECT_TRUE(body["result"].contains("reason") && body["result"]["reason"].is_string() &&
                    !body["result"]["reason"].get<std::string>().empty())
            << demo << "/" << op << " -> " << body.dump();
        EXPECT_EQ(body["state"], before) << demo << "/" << op << ": a refusal changes nothing";
        EXPECT_EQ(state(demo), before);
        return body["result"];
    }
    // Expects a bad request: 400 with an error, the state as it was.
    void bad(const std::string& demo, const std::string& op, json args) {
        const json before = state(demo);
        const auto [status, body] = call(demo, op, args);
        EXPECT_EQ(status, 400) << demo << "/" << op << " " << args.dump() << " -> " << body.dump();
        EXPECT_TRUE(body.is_object() && body.contains("error")) << body.dump();
        EXPECT_EQ(state(demo), before) << demo << "/" << op << ": a bad request changes nothing";
    }

    serve::api api_;
    std::string session_;
};

TEST_F(Refusal, ArenaOutOfMemoryAndItsCap) {
    refused("arena", "alloc", {{"size", 4096}});
    for (int i = 0; i < 256; ++i)
        done("arena", "alloc", {{"size", 1}, {"align", 1}});
    const json r = refused("arena", "alloc", {{"size", 1}, {"align", 1}});
    EXPECT_NE(r["reason"].get<std::string>().find("256"), std::string::npos) << r.dump();
    done("arena", "reset");
    done("arena", "reset"); // resetting an empty arena is no refusal: reset has no precondition
    bad("arena", "alloc", {{"size", 0}});
    bad("arena", "alloc", {{"size", 8}, {"align", 3}});
    bad("arena", "alloc", json::object());
}

TEST_F(Refusal, StackEmptyPopOutOfOrderFreeAndGoneMarkers) {
    refused("stack", "pop");
    refused("stack", "pop", {{"id", nullptr}});
    const std::uint64_t a = done("stack", "alloc", {{"size", 40}})["id"];
    const std::uint64_t m = done("stack", "mark")["marker"];
    EXPECT_EQ(m, 1u) << "markers count apart from blocks";
    const std::uint64_t b = done("stack", "alloc", {{"size", 40}})["id"];
    // Out of order: a is not the newest.
    const json r = refused("stack", "pop", {{"id", a}});
    EXPECT_NE(r["reason"].get<std::string>().find("out of order"), std::string::npos) << r.dump();
    EXPECT_EQ(done("stack", "pop", {{"id", b}})["id"], b) << "the newest pops by id";
    EXPECT_EQ(done("stack", "pop")["id"], a);
    // The top fell below the marker: rewinding there is refused, the marker is gone.
    refused("stack", "rewind", {{"marker", m}});
    refused("stack", "pop");
    refused("stack", "alloc", {{"size", 4096}});
    for (int i = 0; i < 16; ++i)
        done("stack", "mark");
    refused("stack", "mark");
    bad("stack", "rewind", {{"marker", 99}}); // never saved
    bad("stack", "rewind", json::object());
    bad("stack", "rewind", {{"marker", "1"}});
    bad("stack", "pop", {{"id", b}}); // stale: the page draws live blocks only
    bad("stack", "pop", {{"id", -1}});
}

TEST_F(Refusal, PoolRunsOutAndFreeSlotsAreBadInput) {
    const std::size_t cap = state("pool")["capacity"];
    for (std::size_t i = 0; i < cap; ++i)
        done("pool", "alloc");
    refused("pool", "alloc");
    done("pool", "free", {{"slot", 3}});
    bad("pool", "free", {{"slot", 3}}); // already free: never a double free
    bad("pool", "free", {{"slot", cap}});
    bad("pool", "free", json::object());
}

TEST_F(Refusal, BuddyRunsOutAndHitsItsCap) {
    refused("buddy", "alloc", {{"size", 8192}});
    for (int i = 0; i < 64; ++i)
        done("buddy", "alloc", {{"size", 64}});
    refused("buddy", "alloc", {{"size", 1}});
    const std::uint64_t id = done("buddy", "free", {{"id", 1}})["id"];
    bad("buddy", "free", {{"id", id}});
    bad("buddy", "free", {{"id", 12345}});
}

TEST_F(Refusal, TlsfRunsOutAndStaleIdsAreBadInput) {
    const json r = refused("tlsf", "alloc", {{"size", 9000}});
    EXPECT_TRUE(r.contains("search")) << "a refused allocation still shows its search";
    const std::uint64_t id = done("tlsf", "alloc", {{"size", 100}})["id"];
    done("tlsf", "free", {{"id", id}});
    bad("tlsf", "free", {{"id", id}});
    bad("tlsf", "probe", {{"size", 0}});
}

// The page draws the search on the bitmaps it ran on: those before the allocation, not after it.
TEST_F(Refusal, TlsfSearchCarriesTheBitmapsBeforeTheAllocation) {
    done("tlsf", "alloc", {{"size", 100}});
    const std::uint64_t b = done("tlsf", "alloc", {{"size", 300}})["id"];
    done("tlsf", "alloc", {{"size", 100}});
    done("tlsf", "free", {{"id", b}});
    for (const int size : {90, 200, 5000, 100}) {
        const json before = state("tlsf");
        const json r = done("tlsf", "alloc", {{"size", size}});
        const json& s = r["search"];
        EXPECT_EQ(s["fl_bitmap"], before["fl_bitmap"]) << size;
        EXPECT_EQ(s["sl_bitmaps"], before["sl_bitmaps"]) << size;
        ASSERT_TRUE(s.contains("chosen")) << s.dump();
        const unsigned fl = s["chosen"]["fl"], sl = s["chosen"]["sl"];
        EXPECT_TRUE((s["sl_bitmaps"][fl].get<std::uint32_t>() >> sl) & 1u) << "the chosen list was not empty";
        EXPECT_TRUE(s.value("matched", false)) << s.dump();
    }
    const json p = done("tlsf", "probe", {{"size", 64}})["search"];
    EXPECT_EQ(p["sl_bitmaps"], state("tlsf")["sl_bitmaps"]) << "a probe changes nothing";
}

TEST_F(Refusal, SlabNothingHeldNothingToFlushAndFull) {
    refused("slab", "free");
    refused("slab", "free", {{"count", 5}});
    refused("slab", "flush");
    done("slab", "alloc", {{"count", 4}}); // the magazine was filled from the slabs: 2 rounds left
    done("slab", "flush");
    refused("slab", "flush"); // every object out of the slabs is yours
    const json f = done("slab", "free", {{"count", 6}});
    EXPECT_EQ(f["freed"], 4);
    EXPECT_TRUE(f.contains("reason")) << "fewer freed than asked: said why";
    done("slab", "flush");
    refused("slab", "flush");
    for (int i = 0; i < 8; ++i)
        (void)call("slab", "alloc", {{"count", 64}});
    refused("slab", "alloc", {{"count", 1}});
    bad("slab", "free", {{"id", 987654}});
    bad("slab", "free", {{"count", 0}});
    bad("slab", "alloc", {{"count", 65}});
}

TEST_F(Refusal, HandlesStaleOrNeverIssuedAndFull) {
    const json h = done("handles", "spawn")["handle"];
    done("handles", "free", {{"handle", h}});
    refused("handles", "free", {{"handle", h}});
    refused("handles", "get", {{"handle", h}});
    // A handle is a value anyone may hold: the slot map answers whether it is live.
    refused("handles", "get", {{"handle", {{"index", 5000}, {"generation", 3}}}});
    refused("handles", "free", {{"handle", {{"index", 5000}, {"generation", 3}}}});
    for (int i = 0; i < 24; ++i)
        done("handles", "spawn");
    refused("handles", "spawn");
    bad("handles", "free", json::object());
    bad("handles", "get", {{"handle", {{"index", -1}, {"generation", 0}}}});
}

TEST_F(Refusal, DeviceNothingToFreeNothingToMoveAndFull) {
    refused("device", "free");
    refused("device", "defrag");
    done("device", "alloc", {{"size", 4096}});
    const json r = refused("device", "defrag"); // one allocation at offset 0: already compact
    EXPECT_EQ(r["phase"], "nothing");
    // 1 MiB requests get memory of their own; the fifth would pass the 4 MiB budget.
    bool refusal = false;
    for (int i = 0; i < 5 && !refusal; ++i) {
        const auto [status, body] = call("device", "alloc", {{"size", 1 << 20}});
        ASSERT_EQ(status, 200) << body.dump();
        refusal = !body["ok"].get<bool>();
    }
    EXPECT_TRUE(refusal) << "the budget refuses";
    refused("device", "alloc", {{"size", 1 << 20}});
    bad("device", "free", {{"id", 999999}});
    bad("device", "alloc", {{"kind", "texture"}});
}

TEST_F(Refusal, DeviceCapsItsLiveAllocations) {
    for (int i = 0; i < 96; ++i)
        done("device", "alloc", {{"size", 4096}});
    const json r = refused("device", "alloc", {{"size", 4096}});
    EXPECT_NE(r["reason"].get<std::string>().find("96"), std::string::npos) << r.dump();
}

// A commit's highlight stays through a request that changes nothing; the next done click clears it.
TEST_F(Refusal, DeviceRefusalKeepsTheCommittedHighlight) {
    done("device", "fragment");
    ASSERT_EQ(done("device", "defrag")["phase"], "planned");
    ASSERT_EQ(done("device", "defrag")["phase"], "committed");
    ASSERT_FALSE(state("device")["committed"].empty());
    bad("device", "free", {{"id", 999999}}); // compares the whole state, the highlight included
    EXPECT_FALSE(state("device")["committed"].empty());
    done("device", "free");
    EXPECT_TRUE(state("device")["committed"].empty()) << "a done click clears it";
}

} // namespace

#else
TEST(Refusal, NotBuilt) {
    GTEST_SKIP() << "strata-lab serve is not part of this build (STRATA_BUILD_LAB off)";
}
#endif
