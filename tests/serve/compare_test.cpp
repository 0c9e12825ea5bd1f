// The live lab's compare demo: the request script parser (valid scripts, every error at its place,
// the bounds), the six lanes (blocks inside their buffer, apart, aligned, their contents kept; waste
// and footprint from the allocators' own figures), refusals answered as results through the API, and
// random scripts against a reference model. (Built as a skipped case where the lab is not built.)
#include <gtest/gtest.h>

#if STRATA_SERVE_AVAILABLE
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api.hpp"
#include "api_fuzz.hpp"
#include "compare_lanes.hpp"
#include "compare_sequences.hpp"
#include "request_script.hpp"

namespace {

using nlohmann::json;
namespace serve = strata::lab::serve;
using kind = serve::script_statement::kind;

// --- the parser ------------------------------------------------------------------------------------

TEST(CompareScript, ParsesStatementsNamesAndComments) {
    const auto s = serve::parse_script("a 100; a 30; f 1; a 64 align 16; r");
    ASSERT_EQ(s.statements.size(), 5u);
    EXPECT_EQ(s.statements[0].what, kind::alloc);
    EXPECT_EQ(s.statements[0].size, 100u);
    EXPECT_EQ(s.statements[0].align, 16u);
    EXPECT_EQ(s.statements[0].block, 1u);
    EXPECT_EQ(s.statements[1].block, 2u);
    EXPECT_EQ(s.statements[2].what, kind::free);
    EXPECT_EQ(s.statements[2].block, 1u);
    EXPECT_EQ(s.statements[2].column, 14u);
    EXPECT_EQ(s.statements[2].text, "f 1");
    EXPECT_EQ(s.statements[3].align, 16u);
    EXPECT_EQ(s.statements[3].block, 3u);
    EXPECT_EQ(s.statements[4].what, kind::reset);
    EXPECT_EQ(s.blocks(), 3u);
    EXPECT_EQ(s.largest_size, 100u);

    const auto n =
        serve::parse_script("# a comment\r\nx = a 100 align 64  # trailing\n\n;; y=a 7\nf x\nf 2\nx = a 5\n");
    ASSERT_EQ(n.statements.size(), 5u);
    EXPECT_EQ(n.statements[0].line, 2u);
    EXPECT_EQ(n.statements[0].column, 1u);
    EXPECT_EQ(n.statements[0].text, "x = a 100 align 64");
    EXPECT_EQ(n.statements[0].align, 64u);
    EXPECT_EQ(n.statements[1].line, 4u);
    EXPECT_EQ(n.statements[1].column, 4u);
    EXPECT_EQ(n.statements[2].block, 1u); // f x
    EXPECT_EQ(n.statements[3].block, 2u); // f 2 (y)
    EXPECT_EQ(n.statements[4].block, 3u); // x names a new block once the first is freed
    EXPECT_EQ(n.names, (std::vector<std::string>{"x", "y", "x"}));
    EXPECT_EQ(n.largest_align, 64u);

    EXPECT_TRUE(serve::parse_script("").statements.empty());
    EXPECT_TRUE(serve::parse_script(" ;\n# only a comment\n").statements.empty());
    EXPECT_EQ(serve::parse_script("a 1 align 1; a 65536 align 4096").statements[1].align, 4096u);
}

struct bad_script {
    const char* text;
    std::uint32_t line, column;
    const char* says;
};

TEST(CompareScript, EveryErrorNamesItsPlace) {
    const bad_script cases[] = {
        {"a", 1, 2, "expected a size"},
        {"a 0", 1, 3, "out of range"},
        {"a 65537", 1, 3, "out of range"},
        {"a 99999999999999999999999999", 1, 3, "out of range"},
        {"a -5", 1, 3, "expected a size"},
        {"a 12x", 1, 3, "expected a size"},
        {"a 10 align 3", 1, 12, "power of two"},
        {"a 10 align 8192", 1, 12, "out of range"},
        {"a 10 align", 1, 11, "expected an alignment"},
        {"a 10 b", 1, 6, "expected 'align'"},
        {"r 5", 1, 3, "expected ';' or a new line"},
        {"f 1", 1, 3, "not allocated yet"},
        {"f", 1, 2, "expected a block number or name"},
        {"a 1; f 1; f 1", 1, 13, "not live"},
        {"a 1; r; f 1", 1, 11, "not live"},
        {"f x", 1, 3, "no block is named 'x'"},
        {"x = a 1; x = a 2", 1, 10, "still names live block 1"},
        {"x = f 1", 1, 5, "expected 'a' after 'x ='"},
        {"b 10", 1, 1, "expected a statement"},
        {"= a 1", 1, 1, "expected a statement"},
        {"a 1;\n  a x", 2, 5, "expected a size"},
        {"a 1\n\n@", 3, 1, "expected a statement"},
        {"a 4 align 16 align 16", 1, 14, "found 'align'"},
    };
    for (const auto& c : cases) {
        try {
            (void)serve::parse_script(c.text);
            ADD_FAILURE() << "accepted: " << c.text;
        } catch (const serve::script_error& e) {
            EXPECT_EQ(e.line(), c.line) << c.text << ": " << e.what();
            EXPECT_EQ(e.column(), c.column) << c.text << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << c.text << ": " << e.what();
            EXPECT_EQ(std::string(e.what()).rfind("line " + std::to_string(c.line) + ", column ", 0), 0u);
        }
    }
}

TEST(CompareScript, Bounds) {
    serve::script_bounds b;
    std::string text;
    for (std::size_t i = 0; i < 512; ++i)
        text += "r\n";
    EXPECT_EQ(serve::parse_script(text, b).statements.size(), 512u);
    text += "a 1";
    try {
        (void)serve::parse_script(text, b);
        ADD_FAILURE() << "513 statements accepted";
    } catch (const serve::script_error& e) {
        EXPECT_EQ(e.line(), 513u);
        EXPECT_EQ(e.column(), 1u);
        EXPECT_NE(std::string(e.what()).find("more than 512 statements"), std::string::npos);
    }
    const std::string too_long(4097, ' ');
    try {
        (void)serve::parse_script(too_long, b);
        ADD_FAILURE() << "4097 bytes accepted";
    } catch (const serve::script_error& e) {
        EXPECT_EQ(e.column(), 4097u);
        EXPECT_NE(std::string(e.what()).find("longer than 4096 bytes"), std::string::npos);
    }
    b.max_size = 1024;
    EXPECT_THROW((void)serve::parse_script("a 1025", b), serve::script_error);
    EXPECT_NO_THROW((void)serve::parse_script("a 1024", b));
}

// Text beyond ASCII is refused whole (an error quoting it stays valid UTF-8, so the answer can be
// sent as JSON); numbers past any bound are refused, never wrapped.
TEST(CompareScript, UnicodeAndHugeNumbers) {
    for (const char* text :
         {"a 16 \xc3\xa9", "\xe2\x82\xac", "a 16; f \xf0\x9f\x98\x80", "x = a 1 align \xc3\xa9"}) {
        try {
            (void)serve::parse_script(text);
            ADD_FAILURE() << text << " accepted";
        } catch (const serve::script_error& e) {
            EXPECT_NO_THROW((void)json(e.what()).dump()) << "not UTF-8: " << e.what();
        }
    }
    // Comments may hold any text.
    EXPECT_EQ(serve::parse_script("a 16 # \xc3\xa9 \xe2\x82\xac\na 8").statements.size(), 2u);
    serve::script_bounds wide;
    wide.max_size = SIZE_MAX;
    wide.max_align = std::size_t{1} << 62;
    EXPECT_THROW((void)serve::parse_script("a 18446744073709551617", wide), serve::script_error)
        << "2^64 + 1 wraps to 1";
    EXPECT_THROW((void)serve::parse_script("a 184467440737095516150", wide), serve::script_error);
    EXPECT_EQ(serve::parse_script("a 18446744073709551615", wide).statements[0].size, SIZE_MAX);
    EXPECT_THROW((void)serve::parse_script("a 99999999999999999999999999999999"), serve::script_error);
    EXPECT_THROW((void)serve::parse_script("a 1; f 99999999999999999999"), serve::script_error);
    serve::script_bounds tiny;
    tiny.max_size = 5;
    EXPECT_THROW((void)serve::parse_script("a 9", tiny), serve::script_error);
    EXPECT_EQ(serve::parse_script("a 5", tiny).statements[0].size, 5u);
}

// --- the lanes -------------------------------------------------------------------------------------

// Every lane: blocks inside the buffer, apart, aligned and intact; the map covers the buffer in
// order and agrees with the blocks; waste as the allocator's figures give it; the allocator's check.
void check_lanes(const serve::compare_lanes& lanes, const std::string& where) {
    const std::size_t buffer = lanes.buffer_bytes();
    ASSERT_TRUE(lanes.intact()) << where;
    for (std::size_t i = 0; i < serve::compare_lanes::lane_count; ++i) {
        const std::string at = where + " [" + serve::compare_lanes::names[i] + "]";
        auto blocks = lanes.blocks(i);
        std::sort(blocks.begin(), blocks.end(), [](auto& x, auto& y) { return x.offset < y.offset; });
        std::size_t requested = 0, end = 0;
        for (const auto& b : blocks) {
            EXPECT_GE(b.offset, end) << at << ": block " << b.block << " overlaps the one before";
            EXPECT_LE(b.offset + b.size, buffer) << at << ": block " << b.block << " leaves the buffer";
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.p) % b.align, 0u) << at << ": block " << b.block;
            EXPECT_EQ(b.offset % b.align, 0u) << at;
            for (std::size_t k = 0; k < b.size; ++k)
                if (b.p[k] != serve::compare_lanes::pattern(b.block, k)) {
                    ADD_FAILURE() << at << ": block " << b.block << " byte " << k << " changed";
                    break;
                }
            end = b.offset + b.size;
            requested += b.size;
        }
        EXPECT_EQ(lanes.requested(i), requested) << at;
        EXPECT_LE(end, lanes.footprint(i)) << at;
        EXPECT_LE(lanes.footprint(i), buffer) << at;
        EXPECT_TRUE(lanes.check(i)) << at;

        // The map: contiguous from 0 to the buffer's end; each block's bytes where the block is.
        std::size_t at_off = 0, shaded = 0;
        std::map<std::uint32_t, std::size_t> drawn; // block -> offset of its 'b' segment
        for (const auto& g : lanes.segments(i)) {
            EXPECT_EQ(g.offset, at_off) << at << ": the map has a gap or an overlap";
            EXPECT_GT(g.size, 0u) << at;
            at_off = g.offset + g.size;
            if (g.kind == 'h' || g.kind == 'p') shaded += g.size;
            if (g.kind == 'b') drawn[g.block] = g.offset;
        }
        EXPECT_EQ(at_off, buffer) << at;
        ASSERT_EQ(drawn.size(), blocks.size()) << at;
        for (const auto& b : blocks)
            EXPECT_EQ(drawn[b.block], b.offset) << at << ": block " << b.block;
        EXPECT_EQ(shaded, lanes.waste(i)) << at << ": headers + padding != waste";

        // Waste from each allocator's own figures.
        const strata::stats st = lanes.stats(i);
        EXPECT_EQ(st.live_allocations, blocks.size()) << at;
        std::size_t expect_waste = st.in_use - requested; // arena, stack, pool, buddy
        if (i == 3 || i == 5) expect_waste = st.in_use + 16 * st.live_allocations - requested; // headers
        EXPECT_EQ(lanes.waste(i), expect_waste) << at;
    }
}

std::array<serve::lane_outcome, 6> apply(serve::compare_lanes& lanes, const serve::request_script& s,
                                         std::size_t i) {
    return lanes.apply(s.statements[i]);
}

TEST(CompareLanes, BlocksApartAlignedAndAccountedInEveryAllocator) {
    serve::compare_lanes lanes;
    const auto s =
        serve::parse_script("a 100; a 30 align 64; x = a 7; a 200 align 256; f 2; a 16; f x; a 1 align 1");
    lanes.start(4096, s.largest_size, 256);
    for (std::size_t i = 0; i < s.statements.size(); ++i) {
        const auto out = apply(lanes, s, i);
        check_lanes(lanes, "step " + std::to_string(i + 1));
        if (s.statements[i].what == kind::alloc) {
            for (std::size_t l = 0; l < 6; ++l)
                EXPECT_TRUE(out[l].ok) << serve::compare_lanes::names[l] << ": " << out[l].reason;
        }
    }
    // The stack and the arena gave back neither block 2 nor x (not their newest); the others did.
    EXPECT_EQ(lanes.blocks(0).size(), 6u);
    EXPECT_EQ(lanes.blocks(1).size(), 6u);
    for (std::size_t l = 2; l < 6; ++l)
        EXPECT_EQ(lanes.blocks(l).size(), 4u) << serve::compare_lanes::names[l];
    // The stack's headers and the heaps' headers are in their maps.
    for (std::size_t l : {1u, 3u, 5u}) {
        const auto segs = lanes.segments(l);
        EXPECT_TRUE(
            std::any_of(segs.begin(), segs.end(), [](auto& g) { return g.kind == 'h' && g.size == 16; }));
    }
    // The buddy rounds 100 up to 128: 28 bytes of waste for block 1 alone.
    EXPECT_GE(lanes.waste(4), 28u);
}

TEST(CompareLanes, RefusalsAreOutcomes) {
    serve::compare_lanes lanes;
    const auto s = serve::parse_script("a 64; a 64; f 1; a 500; a 5000");
    lanes.start(8192, 64, 16); // the pool's slot: 64 bytes
    auto o = apply(lanes, s, 0);
    o = apply(lanes, s, 1);
    o = apply(lanes, s, 2); // f 1: not the newest
    EXPECT_FALSE(o[0].ok);
    EXPECT_NE(o[0].reason.find("arena frees in bulk"), std::string::npos) << o[0].reason;
    EXPECT_FALSE(o[1].ok);
    EXPECT_NE(o[1].reason.find("out of order"), std::string::npos) << o[1].reason;
    for (std::size_t l = 2; l < 6; ++l)
        EXPECT_TRUE(o[l].ok) << o[l].reason;
    o = apply(lanes, s, 3); // a 500: above the pool's slot
    EXPECT_FALSE(o[2].ok);
    EXPECT_NE(o[2].reason.find("above the pool's slot size"), std::string::npos) << o[2].reason;
    o = apply(lanes, s, 4); // a 5000 in 8 KiB after 500 + 128: the buddy has no 8 KiB block left
    EXPECT_FALSE(o[4].ok);
    EXPECT_NE(o[4].reason.find("out of memory"), std::string::npos) << o[4].reason;
    check_lanes(lanes, "after the refusals");

    // A slot aligned to more than the buffer holds: the pool has no slot at all.
    const auto t = serve::parse_script("a 8 align 4096");
    lanes.start(1024, 8, 4096);
    o = apply(lanes, t, 0);
    EXPECT_FALSE(o[2].ok);
    EXPECT_NE(o[2].reason.find("holds no slot"), std::string::npos) << o[2].reason;
    check_lanes(lanes, "a pool with no slot");
}

// Random scripts against a model of the script (which blocks are live): every step checked in every
// lane, then everything freed, and every allocator back to empty.
TEST(CompareLanes, RandomScriptsAgainstAModel) {
    std::mt19937_64 rng(20261129);
    serve::compare_lanes lanes;
    for (int round = 0; round < 24; ++round) {
        const std::size_t buffer = std::size_t{1024} << (round % 7);
        std::string text;
        std::vector<std::uint32_t> live;
        std::uint32_t blocks = 0;
        const int statements = 40 + static_cast<int>(rng() % 160);
        for (int i = 0; i < statements; ++i) {
            const auto r = rng() % 100;
            if (r < 55 || live.empty()) {
                const std::size_t size = 1 + rng() % std::min<std::size_t>(buffer / 4, 700);
                const std::size_t align = std::size_t{1} << (rng() % 9);
                text += "a " + std::to_string(size) + (align != 16 ? " align " + std::to_string(align) : "") +
                        "\n";
                live.push_back(++blocks);
            } else if (r < 97) {
                const std::size_t k = rng() % live.size();
                text += "f " + std::to_string(live[k]) + "\n";
                live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
            } else {
                text += "r\n";
                live.clear();
            }
        }
        std::shuffle(live.begin(), live.end(), rng);
        for (const auto b : live)
            text += "f " + std::to_string(b) + "\n";
        const auto s = serve::parse_script(text, {4096 * 4, 512, buffer, 4096});
        lanes.start(buffer, std::max<std::size_t>(s.largest_size, 16),
                    std::max<std::size_t>(s.largest_align, 16));
        std::size_t largest[6];
        for (std::size_t l = 0; l < 6; ++l)
            largest[l] = lanes.largest_free(l);
        for (std::size_t i = 0; i < s.statements.size(); ++i) {
            (void)apply(lanes, s, i);
            check_lanes(lanes, "round " + std::to_string(round) + " step " + std::to_string(i + 1));
            if (HasFailure()) return;
        }
        // Every block the script holds is freed: the heaps and the pool are empty and whole again.
        for (std::size_t l = 2; l < 6; ++l) {
            const std::string at =
                std::string(serve::compare_lanes::names[l]) + " round " + std::to_string(round);
            EXPECT_TRUE(lanes.blocks(l).empty()) << at;
            EXPECT_EQ(lanes.stats(l).in_use, 0u) << at;
            EXPECT_EQ(lanes.stats(l).live_allocations, 0u) << at;
            EXPECT_EQ(lanes.largest_free(l), largest[l]) << at << ": the free space did not merge back";
        }
        // The arena and the stack keep what they could not free out of order until a reset.
        serve::script_statement reset;
        (void)lanes.apply(reset);
        for (std::size_t l = 0; l < 6; ++l) {
            EXPECT_EQ(lanes.stats(l).in_use, 0u) << serve::compare_lanes::names[l];
            EXPECT_EQ(lanes.largest_free(l), largest[l]) << serve::compare_lanes::names[l];
        }
        check_lanes(lanes, "after the reset");
    }
}

// --- through the API -------------------------------------------------------------------------------

class CompareApi : public ::testing::Test {
protected:
    serve::api api_{};
    std::string session_;

    void SetUp() override {
        const auto r = api_.handle("POST", "/api/session", "");
        ASSERT_EQ(r.status, 201);
        session_ = json::parse(r.body)["session"];
    }
    std::pair<int, json> post(const std::string& op, json args = json::object()) {
        args["session"] = session_;
        const auto r = api_.handle("POST", "/api/compare/" + op, args.dump());
        return {r.status, json::parse(r.body)};
    }
};

TEST_F(CompareApi, RunStepAndRefusalsAsResults) {
    auto [status, a] = post("run", {{"script", "a 100; a 30; f 1; a 64 align 16; a 4000; r"}, {"slot", 64}});
    ASSERT_EQ(status, 200) << a.dump();
    EXPECT_TRUE(a["ok"]);
    EXPECT_EQ(a["result"]["steps"], 6);
    EXPECT_EQ(a["result"]["summary"].size(), 6u);
    EXPECT_EQ(a["state"]["step"], 6);
    EXPECT_EQ(a["state"]["lanes"].size(), 6u);
    EXPECT_EQ(a["state"]["pool_slot"], 64);
    EXPECT_TRUE(a["state"]["intact"]);
    // Refusals: the pool (100 > 64), the arena and the stack (f 1), everyone (a 4000: no room left).
    std::set<std::pair<int, std::string>> refused;
    for (const auto& r : a["result"]["refusals"])
        refused.insert({r["step"].get<int>(), serve::compare_lanes::names[r["lane"].get<std::size_t>()]});
    EXPECT_TRUE(refused.count({1, "pool"}));
    EXPECT_TRUE(refused.count({3, "arena"}));
    EXPECT_TRUE(refused.count({3, "stack"}));
    for (const auto* n : serve::compare_lanes::names)
        EXPECT_TRUE(refused.count({5, n})) << n;
    EXPECT_FALSE(refused.count({6, "arena"}));

    std::tie(status, a) = post("step", {{"step", 3}});
    ASSERT_EQ(status, 200) << a.dump();
    EXPECT_EQ(a["state"]["step"], 3);
    const auto& stack = a["state"]["lanes"][1];
    EXPECT_FALSE(stack["outcome"]["ok"]);
    EXPECT_NE(stack["outcome"]["reason"].get<std::string>().find("out of order"), std::string::npos);
    EXPECT_EQ(stack["blocks"].size(), 2u);
    EXPECT_EQ(a["state"]["lanes"][3]["blocks"].size(), 1u); // TLSF freed block 1
    for (const auto& lane : a["state"]["lanes"]) {
        std::size_t covered = 0;
        for (const auto& g : lane["segments"])
            covered += g[1].get<std::size_t>();
        EXPECT_EQ(covered, 4096u) << lane["name"];
        EXPECT_TRUE(lane["check"]) << lane["name"];
    }
    std::tie(status, a) = post("step", {{"step", 0}});
    EXPECT_EQ(status, 200);
    EXPECT_FALSE(a["state"]["lanes"][0].contains("outcome"));
}

TEST_F(CompareApi, MalformedRequestsAre400) {
    auto [status, a] = post("run", {{"script", "a 10\nf 7"}});
    EXPECT_EQ(status, 400);
    EXPECT_NE(a["error"].get<std::string>().find("line 2, column 3"), std::string::npos) << a.dump();
    std::tie(status, a) = post("run", {{"script", "a 10"}, {"buffer", 3000}});
    EXPECT_EQ(status, 400);
    std::tie(status, a) = post("run", {{"script", "a 10"}, {"buffer", 1 << 20}});
    EXPECT_EQ(status, 400);
    std::tie(status, a) = post("run", {{"script", "a 5000"}, {"buffer", 4096}});
    EXPECT_EQ(status, 400) << "a size above the buffer";
    std::tie(status, a) = post("run", {{"script", 5}});
    EXPECT_EQ(status, 400);
    std::tie(status, a) = post("run", {});
    EXPECT_EQ(status, 400);
    std::tie(status, a) = post("run", {{"script", std::string(4097, ' ')}});
    EXPECT_EQ(status, 400);
    std::tie(status, a) = post("run", {{"sequence", "nope"}});
    EXPECT_EQ(status, 400);
    std::tie(status, a) = post("run", {{"script", "a 1"}, {"slot", -1}});
    EXPECT_EQ(status, 400);
    std::tie(status, a) = post("run", {{"script", "a 1; a 2"}});
    ASSERT_EQ(status, 200);
    std::tie(status, a) = post("step", {{"step", 3}});
    EXPECT_EQ(status, 400);
    std::tie(status, a) = post("step", {});
    EXPECT_EQ(status, 400);
    std::tie(status, a) = post("step", {{"step", 1.5}});
    EXPECT_EQ(status, 400);
    std::tie(status, a) = post("nope");
    EXPECT_EQ(status, 404);
    // A failed run leaves the last good one in place.
    std::tie(status, a) = post("state");
    EXPECT_EQ(a["state"]["steps"], 2);
}

TEST_F(CompareApi, EverySequenceAtEveryBufferSize) {
    for (std::size_t buffer = 1024; buffer <= 65536; buffer *= 2) {
        for (const auto& q : serve::compare_sequences()) {
            auto [status, a] = post("run", {{"sequence", q.name}, {"buffer", buffer}});
            ASSERT_EQ(status, 200) << q.name << " " << buffer << ": " << a.dump().substr(0, 300);
            EXPECT_GT(a["result"]["steps"].get<int>(), 5) << q.name;
            EXPECT_TRUE(a["state"]["intact"]);
            EXPECT_EQ(a["state"]["buffer"], buffer);
            EXPECT_EQ(a["state"]["script"], serve::sequence_script(q.name, buffer));
            for (const auto& lane : a["state"]["lanes"])
                EXPECT_TRUE(lane["check"]) << q.name << " " << lane["name"];
            EXPECT_LE(a["session_bytes"].get<std::size_t>(), std::size_t{1} << 20);
        }
    }
    // The fragmenting sequence's big block: refused by the arena, the stack, the buddy and the
    // first-fit heap at 4 KiB (holes everywhere, none big enough).
    auto [status, a] = post("run", {{"sequence", "fragmenting"}, {"buffer", 4096}});
    ASSERT_EQ(status, 200);
    const auto last = a["result"]["summary"].back();
    EXPECT_EQ(last[0][0], 0);
    EXPECT_EQ(last[4][0], 0);
    EXPECT_EQ(last[5][0], 0);
    // The LIFO frame: nothing refused by the stack.
    std::tie(status, a) = post("run", {{"sequence", "lifo"}, {"buffer", 4096}});
    for (const auto& r : a["result"]["refusals"])
        EXPECT_NE(r["lane"], 1) << r.dump();
}

// A script with text beyond ASCII is a 400 whose message is JSON, not a 500.
TEST_F(CompareApi, UnicodeScriptIs400) {
    for (const char* text : {"a 16 \xc3\xa9", "\xe2\x82\xac", "f \xf0\x9f\x98\x80"}) {
        json args{{"script", text}, {"session", session_}};
        const auto r = api_.handle("POST", "/api/compare/run", args.dump());
        EXPECT_EQ(r.status, 400) << text << " -> " << r.body;
        const std::string error = json::parse(r.body)["error"];
        EXPECT_EQ(error.find("\xef\xbf\xbd"), std::string::npos) << "a character cut in two: " << error;
    }
}

// Random JSON to every compare op: never a crash, never a 500; every answer is JSON.
TEST_F(CompareApi, RandomJsonIsNeverA500) {
    const auto values = serve::test::fuzz_values({3, "a 16", "a 100; a 30; f 1; r", "a 65536 align 4096; f 1",
                                                  "x = a 1; f x; x = a 2", "a 16 \xc3\xa9", "\xe2\x82\xac",
                                                  "a 99999999999999999999999", "f 0", "openttd", "mixed",
                                                  std::string(4097, 'r')});
    serve::test::fuzz_demo(api_, "compare", session_,
                           {"script", "sequence", "buffer", "slot", "step", "session", "x"},
                           {"run", "step", "state", "nope"}, values, 12);
    const auto [status, a] = post("state");
    EXPECT_EQ(status, 200);
    EXPECT_TRUE(a["state"]["intact"].get<bool>());
}

TEST_F(CompareApi, FitsTheSessionBoundWithEveryOtherDemo) {
    // The compare demo first, at its largest buffer, then every other demo of the same session.
    auto [status, a] = post("run", {{"sequence", "openttd"}, {"buffer", 65536}});
    ASSERT_EQ(status, 200) << a.dump().substr(0, 300);
    const auto alone = a["session_bytes"].get<std::size_t>();
    EXPECT_GT(alone, 6u * 65536);
    const auto info = json::parse(api_.handle("GET", "/api/info", "").body);
    std::size_t bytes = 0;
    for (const auto& d : info["demos"]) {
        const auto r = api_.handle("POST", "/api/" + d["name"].get<std::string>() + "/state",
                                   json{{"session", session_}}.dump());
        ASSERT_EQ(r.status, 200) << d["name"] << ": " << r.body;
        bytes = json::parse(r.body)["session_bytes"];
    }
    EXPECT_GE(bytes, alone);
    EXPECT_LE(bytes, serve::limits{}.session_bytes);
}

} // namespace
#else
TEST(CompareApi, Skipped) { GTEST_SKIP() << "strata-lab serve is not built"; }
#endif
