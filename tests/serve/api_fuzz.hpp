#pragma once
// Random-JSON fuzzing of one live-lab demo through api::handle, shared by the demos' API tests:
// every answer must be 200, 400 or 404 with a JSON body, never a crash or a 500.
//
// Exports: fuzz_values, fuzz_demo.
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api.hpp"

namespace strata::lab::serve::test {

/// Returns: argument values of every JSON type and the integers at the edges of every range, then
/// `extra` (a demo's own names and near-misses).
inline std::vector<nlohmann::json> fuzz_values(std::vector<nlohmann::json> extra) {
    using nlohmann::json;
    std::vector<json> v{nullptr,
                        true,
                        false,
                        0,
                        1,
                        -1,
                        2,
                        16,
                        1024,
                        4096,
                        65536,
                        std::uint64_t{1} << 31,
                        std::uint64_t{1} << 32,
                        std::uint64_t{1} << 53,
                        std::uint64_t{1} << 63,
                        UINT64_MAX,
                        INT64_MIN,
                        0.5,
                        -0.0,
                        1e300,
                        -1e300,
                        "",
                        "\xc3\xa9\xe2\x82\xac",
                        std::string(300, 'x'),
                        json::array(),
                        json::object(),
                        json::array({1, 2})};
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
}

/// Effects: posts `rounds` bodies of up to four random `keys` set to random `values`, with
/// `session` in seven of eight, to random `ops` of `demo`; fails the test on any answer but 200,
/// 400 or 404, or a body that is not JSON. `after(op, body, reply)`, when given, runs after each.
inline void
fuzz_demo(api& a, const std::string& demo, const std::string& session, const std::vector<std::string>& keys,
          const std::vector<std::string>& ops, const std::vector<nlohmann::json>& values, std::uint64_t seed,
          int rounds = 3000,
          const std::function<void(const std::string&, const nlohmann::json&, const reply&)>& after = {}) {
    using nlohmann::json;
    std::mt19937_64 rng(seed);
    for (int i = 0; i < rounds; ++i) {
        json body = json::object();
        const auto n = rng() % 5;
        for (std::uint64_t j = 0; j < n; ++j)
            body[keys[rng() % keys.size()]] = values[rng() % values.size()];
        if (rng() % 8 != 0) body["session"] = session;
        const std::string op = ops[rng() % ops.size()];
        const reply r = a.handle("POST", "/api/" + demo + "/" + op, body.dump());
        ASSERT_TRUE(r.status == 200 || r.status == 400 || r.status == 404)
            << r.status << " " << op << " " << body.dump() << " -> " << r.body;
        ASSERT_FALSE(json::parse(r.body, nullptr, false).is_discarded()) << r.body;
        if (after) after(op, body, r);
    }
}

} // namespace strata::lab::serve::test
