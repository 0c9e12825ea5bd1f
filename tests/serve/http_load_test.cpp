// strata-lab serve under load: 8 client threads send thousands of requests to a server on
// 127.0.0.1, good ones (sessions, demo operations, the page) mixed with bad input (malformed JSON,
// oversize lines, a foreign Host, garbage bytes, connections dropped mid-request). Every good
// request must get its answer, and the process's resident size must stay flat. The test's name
// says Thread, and this file mentions TSAN_STAGE, so ./test runs it under ThreadSanitizer too.
#include <gtest/gtest.h>

#if STRATA_SERVE_AVAILABLE
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
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

using th::sanitized;

// One client thread's round of `n` requests; counts the good requests that did not get their answer.
void client_round(int port, int seed, int n, std::atomic<int>& good, std::atomic<int>& failed,
                  std::atomic<int>& bad) {
    th::client c(port, 20000);
    const std::string host = "127.0.0.1:" + std::to_string(port);
    const auto s = c.post("/api/session", "");
    if (!s || s->status != 201) {
        ++failed;
        return;
    }
    const std::string id = json::parse(s->body)["session"];
    const std::string alloc = json{{"session", id}, {"size", 24}}.dump();
    const std::string reset = json{{"session", id}}.dump();
    std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(seed + 1);
    for (int i = 0; i < n; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const int kind = static_cast<int>((x >> 33) % 20);
        const auto expect = [&](const std::optional<th::http_reply>& r, int status) {
            ++good;
            if (!r || r->status != status) ++failed;
        };
        switch (kind) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4: expect(c.post("/api/arena/alloc", alloc), 200); break;
        case 5: expect(c.post("/api/arena/reset", reset), 200); break;
        case 6:
        case 7: expect(c.get("/api/info"), 200); break;
        case 8: expect(c.get("/index.html"), 200); break;
        case 9: expect(c.post("/api/pool/state", reset), 200); break;
        case 10:
        case 11: { // malformed JSON: a well-formed request whose answer is 400
            const auto r = c.post("/api/arena/alloc", "{\"session\": \"" + id + "\", size: }");
            ++good;
            if (!r || r->status != 400) ++failed;
            break;
        }
        case 12: // an oversize request line
            ++bad;
            (void)th::raw_exchange(port, "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\nHost: " + host +
                                             "\r\n\r\n");
            break;
        case 13: // a foreign Host
            ++bad;
            (void)th::raw_exchange(
                port, "GET /api/info HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n");
            break;
        case 14: { // garbage bytes
            ++bad;
            std::string junk(64 + (x >> 50) % 2000, '\0');
            for (char& ch : junk)
                ch = static_cast<char>((x = x * 6364136223846793005ull + 1) >> 56);
            (void)th::raw_exchange(port, junk + "\r\n\r\n");
            break;
        }
        case 15: { // a request dropped halfway (its body never comes)
            ++bad;
            const int fd = th::connect_port(port, 5000);
            if (fd >= 0) {
                (void)th::send_all(fd, "POST /api/arena/alloc HTTP/1.1\r\nHost: " + host +
                                           "\r\nContent-Length: 500\r\n\r\n{\"session\"");
                ::close(fd);
            }
            break;
        }
        case 16: // an oversize body, declared
            ++bad;
            (void)th::raw_exchange(port, "POST /api/arena/alloc HTTP/1.1\r\nHost: " + host +
                                             "\r\nContent-Length: 99999999\r\n\r\n");
            break;
        case 17: { // a request sent and the connection dropped before the answer
            ++bad;
            const int fd = th::connect_port(port, 5000);
            if (fd >= 0) {
                (void)th::send_all(fd, th::request_text("POST", "/api/arena/alloc", alloc, {}, port));
                ::close(fd);
            }
            break;
        }
        default: expect(c.post("/api/arena/state", reset), 200); break;
        }
    }
}

TEST(ServeLoad, ThreadsMixGoodAndBadRequests) {
    serve::serve_options o;
    o.port = 0;
    o.threads = 4;
    serve::http_server server(o);
    const int port = server.start();
    const int threads = 8;
    const int per_thread = sanitized ? 400 : 3000;
    std::atomic<int> good{0}, failed{0}, bad{0};
    const auto round = [&](int n, int seed0) {
        std::vector<std::thread> clients;
        for (int t = 0; t < threads; ++t)
            clients.emplace_back([&, t] { client_round(port, seed0 + t, n, good, failed, bad); });
        for (auto& c : clients)
            c.join();
    };
    round(per_thread / 5, 0); // warm-up: the allocator's arenas, the sessions, the connection table
    const std::size_t rss0 = th::resident_bytes();
    const auto t0 = std::chrono::steady_clock::now();
    round(per_thread, 100);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::size_t rss1 = th::resident_bytes();
    std::printf("[ load     ] %d requests (%d good, %d bad) in %.2f s from %d threads; %d good failed; "
                "RSS %.1f -> %.1f MB\n",
                good.load() + bad.load(), good.load(), bad.load(), s, threads, failed.load(), rss0 / 1e6,
                rss1 / 1e6);
    EXPECT_EQ(failed.load(), 0);
    if (!sanitized) {
        EXPECT_LT(rss1, rss0 + (std::size_t{8} << 20)) << "resident size grew";
    }
    // Every session lives on: the bad input touched none of them.
    EXPECT_EQ(server.the_api().session_count(), static_cast<std::size_t>(2 * threads));
    server.stop();
}

} // namespace

#else
TEST(ServeLoad, NotBuilt) { GTEST_SKIP() << "strata-lab serve is not part of this build"; }
#endif
