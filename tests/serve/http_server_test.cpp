// strata-lab serve: the HTTP layer over real sockets (server.cpp): which hosts and origins are
// served, the caps applied while a request is read, pipelining, HEAD and 100 Continue, idle, slow
// and non-reading clients, timeouts, the connection limit, running out of descriptors, and stop()
// with requests in flight. TSAN_STAGE: the tests named *Thread* (ServeHttpThread) also run under
// ThreadSanitizer in CI.
#include <gtest/gtest.h>

#if STRATA_SERVE_AVAILABLE
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "assets.hpp"
#include "http_test_client.hpp"
#include "server.hpp"

namespace {

using nlohmann::json;
namespace serve = strata::lab::serve;
namespace th = strata_test_http;
using steady = std::chrono::steady_clock;

using th::sanitized;

constexpr std::size_t mib = std::size_t{1} << 20;

class ServeHttp : public ::testing::Test {
protected:
    void start(serve::serve_options o) {
        o.port = 0;
        server_ = std::make_unique<serve::http_server>(std::move(o));
        port_ = server_->start();
    }
    void SetUp() override {
        serve::serve_options o;
        o.threads = 2;
        start(o);
    }
    void TearDown() override {
        if (server_) server_->stop();
    }
    std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
    // The status of the reply to `request` sent on a new connection (0: none).
    int status_of(const std::string& request) {
        const std::string raw = th::raw_exchange(port_, request);
        return raw.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(raw.c_str() + 9) : 0;
    }
    // The reply to `method path` with these headers (a Host of the server's unless given).
    std::optional<th::http_reply> ask(const std::string& method, const std::string& path,
                                      const th::header_list& headers, const std::string& body = "") {
        th::client c(port_, 10000);
        return c.send(method, path, body, headers);
    }

    std::unique_ptr<serve::http_server> server_;
    int port_ = 0;
};

// Any page the user visits could POST to the server (a "simple" cross-origin request needs no
// preflight), and a DNS-rebound name reaches it with its own Host: both are refused, and the
// refusal is JSON.
TEST_F(ServeHttp, CrossOriginRequestsAndForeignHostsAreRefused) {
    const std::string p = std::to_string(port_);
    auto r = ask("POST", "/api/session", {{"Origin", "http://evil.example"}, {"Content-Type", "text/plain"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 403);
    EXPECT_TRUE(json::parse(r->body, nullptr, false).contains("error")) << r->body;
    EXPECT_EQ(server_->the_api().session_count(), 0u) << "no session was made";
    for (const char* bad :
         {"evil.example", "evil.example:", "127.0.0.1.evil.example", "localhost.evil.example"}) {
        r = ask("GET", "/api/info", {{"Host", std::string(bad) + ":" + p}});
        ASSERT_TRUE(r) << bad;
        EXPECT_EQ(r->status, 403) << bad;
        r = ask("GET", "/index.html", {{"Host", std::string(bad) + ":" + p}});
        ASSERT_TRUE(r) << bad;
        EXPECT_EQ(r->status, 403) << bad;
    }
    EXPECT_EQ(ask("POST", "/api/session", {{"Host", "evil.example:" + p}})->status, 403);
    EXPECT_EQ(ask("GET", "/api/info", {{"Host", "127.0.0.1:" + std::to_string(port_ + 1)}})->status, 403)
        << "another port is another origin";
    EXPECT_EQ(ask("GET", "/api/info", {{"Host", "127.0.0.1"}})->status, 403) << "no port: port 80";
    EXPECT_EQ(server_->the_api().session_count(), 0u);

    // The server's own names, in any case, with or without an Origin of one of them.
    for (const std::string& good :
         std::vector<std::string>{"127.0.0.1:" + p, "localhost:" + p, "LocalHost:" + p, "[::1]:" + p}) {
        r = ask("GET", "/api/info", {{"Host", good}});
        ASSERT_TRUE(r) << good;
        EXPECT_EQ(r->status, 200) << good;
    }
    EXPECT_EQ(ask("POST", "/api/session", {{"Origin", "http://127.0.0.1:" + p}})->status, 201);
    EXPECT_EQ(ask("POST", "/api/session", {{"Host", "localhost:" + p}, {"Origin", "http://localhost:" + p}})
                  ->status,
              201);
    EXPECT_EQ(ask("POST", "/api/session", {{"Sec-Fetch-Site", "same-origin"}})->status, 201);
    // Other origins: another scheme, port or name; a sandboxed page's "null".
    for (const std::string& bad :
         std::vector<std::string>{"https://127.0.0.1:" + p, "http://127.0.0.1:" + std::to_string(port_ + 1),
                                  "http://evil.example", "null", "http://127.0.0.1:" + p + "/x"}) {
        EXPECT_EQ(ask("POST", "/api/session", {{"Origin", bad}})->status, 403) << bad;
    }
    // A cross-site fetch without an Origin (Sec-Fetch-Site says where it came from).
    EXPECT_EQ(ask("POST", "/api/session", {{"Sec-Fetch-Site", "cross-site"}})->status, 403);
    EXPECT_EQ(ask("GET", "/api/info", {{"Sec-Fetch-Site", "cross-site"}})->status, 403);
    EXPECT_EQ(server_->the_api().session_count(), 3u);
}

// A link from another site opens the page: a top-level navigation (GET, Sec-Fetch-Mode navigate)
// is served though it is cross-site; the page's own calls are then same-origin.
TEST_F(ServeHttp, ALinkFromAnotherSiteOpensThePage) {
    const auto r = ask(
        "GET", "/",
        {{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Mode", "navigate"}, {"Sec-Fetch-Dest", "document"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(ask("POST", "/api/session", {{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Mode", "navigate"}})
                  ->status,
              403)
        << "a cross-site form post is no link";
}

// The peak resident size while `send` runs (sampled every millisecond).
template <class F>
std::size_t peak_rss_during(F&& send) {
    std::atomic<bool> done{false};
    std::size_t peak = th::resident_bytes();
    std::thread sampler([&] {
        while (!done.load()) {
            peak = std::max(peak, th::resident_bytes());
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    });
    send();
    done = true;
    sampler.join();
    return std::max(peak, th::resident_bytes());
}

// Sends `head` then `filler` bytes (in 64 KiB pieces) until `total` are sent or the server stops
// taking them; returns the reply (or "").
std::string send_flood(int port, const std::string& head, char filler, std::size_t total, std::size_t* sent) {
    const int fd = th::connect_port(port, 10000);
    if (fd < 0) return {};
    std::size_t n = 0;
    if (th::send_all(fd, head)) {
        const std::string piece(64 * 1024, filler);
        while (n < total && th::send_all(fd, piece))
            n += piece.size();
    }
    if (sent) *sent = n;
    std::string reply = th::read_to_close(fd);
    ::close(fd);
    return reply;
}

// A request line or header line is refused as soon as it passes its cap, not after the whole line
// arrived (a 64 MiB line is never held in memory), and the connection is closed.
TEST_F(ServeHttp, LinesAndHeadersAreCappedWhileReading) {
    EXPECT_EQ(status_of("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: " + host() + "\r\n\r\n"), 414);
    EXPECT_EQ(
        status_of("GET / HTTP/1.1\r\nHost: " + host() + "\r\nX-Long: " + std::string(9000, 'a') + "\r\n\r\n"),
        431);
    std::string many = "GET / HTTP/1.1\r\nHost: " + host() + "\r\n";
    for (int i = 0; i < 200; ++i)
        many += "X-H" + std::to_string(i) + ": 1\r\n";
    EXPECT_EQ(status_of(many + "\r\n"), 431) << "more than 100 header lines";
    std::string block = "GET / HTTP/1.1\r\nHost: " + host() + "\r\n";
    for (int i = 0; i < 80; ++i)
        block += "X-H" + std::to_string(i) + ": " + std::string(1000, 'b') + "\r\n";
    EXPECT_EQ(status_of(block + "\r\n"), 431) << "more than 64 KiB of headers";
    std::string request_line_flood;
    const std::size_t before = th::resident_bytes();
    std::size_t sent = 0;
    const std::size_t peak =
        peak_rss_during([&] { request_line_flood = send_flood(port_, "GET /", 'a', 64 * mib, &sent); });
    EXPECT_EQ(request_line_flood.rfind("HTTP/1.1 414", 0), 0u) << request_line_flood.substr(0, 100);
    std::string header_flood;
    const std::size_t peak2 = peak_rss_during([&] {
        header_flood =
            send_flood(port_, "GET / HTTP/1.1\r\nHost: " + host() + "\r\nX-Big: ", 'a', 64 * mib, &sent);
    });
    EXPECT_EQ(header_flood.rfind("HTTP/1.1 431", 0), 0u) << header_flood.substr(0, 100);
    std::printf(
        "[ rss      ] 64 MiB header line: %.1f MB before, %.1f MB peak (%.1f MiB sent before the close)\n",
        before / 1e6, peak2 / 1e6, sent / double(mib));
    if (!sanitized) {
        EXPECT_LT(peak, before + 8 * mib) << "the request line was buffered";
        EXPECT_LT(peak2, before + 8 * mib) << "the header line was buffered";
    }
    EXPECT_LT(sent, 64 * mib) << "the server stopped reading";
    EXPECT_EQ(ask("GET", "/api/info", {})->status, 200) << "still serving";
}

// A declared length above the limit is refused before the body is read, on any method; a body on
// a GET within the limit is read and dropped: it is never taken for the next request.
TEST_F(ServeHttp, BodiesAreCappedBeforeReadingAndNeverParsedAsRequests) {
    const std::string smuggled = "GET /api/info HTTP/1.1\r\nHost: " + host() + "\r\n\r\n";
    std::string raw = th::raw_exchange(port_, "GET /index.html HTTP/1.1\r\nHost: " + host() +
                                                  "\r\nConnection: close\r\nContent-Length: " +
                                                  std::to_string(smuggled.size()) + "\r\n\r\n" + smuggled);
    EXPECT_EQ(th::count_replies(raw), 1) << raw.substr(0, 300);
    EXPECT_EQ(raw.rfind("HTTP/1.1 200", 0), 0u);

    std::string body;
    while (body.size() < 10'000'000)
        body += smuggled;
    std::size_t sent = 0;
    const std::size_t before = th::resident_bytes();
    std::string reply;
    const std::size_t peak = peak_rss_during([&] {
        reply = send_flood(port_,
                           "GET /index.html HTTP/1.1\r\nHost: " + host() + "\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body.substr(0, 1 << 20),
                           'x', 0, &sent);
    });
    EXPECT_EQ(reply.rfind("HTTP/1.1 413", 0), 0u) << reply.substr(0, 200);
    EXPECT_EQ(th::count_replies(reply), 1) << reply.substr(0, 600);
    std::printf("[ rss      ] 10 MB GET body: %.1f MB before, %.1f MB peak\n", before / 1e6, peak / 1e6);
    if (!sanitized) {
        EXPECT_LT(peak, before + 8 * mib);
    }

    // The refusal comes before the body is sent: the client waits for it with nothing sent.
    const int fd = th::connect_port(port_, 5000);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(th::send_all(fd, "POST /api/session HTTP/1.1\r\nHost: " + host() +
                                     "\r\nContent-Length: 10485760\r\n\r\n"));
    std::string buffer;
    const auto r = th::read_reply(fd, buffer);
    ::close(fd);
    ASSERT_TRUE(r) << "no answer before the body";
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(r->header("connection"), "close");
    EXPECT_EQ(server_->the_api().session_count(), 0u);
}

// Milliseconds of one GET /api/info on a new connection.
double request_ms(int port) {
    const auto t0 = steady::now();
    th::client c(port, 10000);
    const auto r = c.get("/api/info");
    const double ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();
    return r && r->status == 200 ? ms : 1e9;
}

// The median and the longest of 9 GET /api/info on new connections, in ms.
std::pair<double, double> nine_requests(int port) {
    std::vector<double> ms;
    for (int i = 0; i < 9; ++i)
        ms.push_back(request_ms(port));
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms.back()};
}

// Idle connections (open browser tabs, preconnected sockets) hold no worker: a request on a new
// connection is answered at once with 5 or 50 of them open and 2 workers, whether they never sent
// a byte or were used once and kept alive.
TEST_F(ServeHttp, IdleConnectionsHoldNoWorker) {
    // The median shows the loop is free; the longest only that no request waited for an idle
    // connection's timeout (seconds), with room for a machine busy with other work.
    const double limit_ms = 1000.0;
    for (const int idle : {5, 50}) {
        std::vector<int> fds;
        for (int i = 0; i < idle; ++i) {
            fds.push_back(th::connect_port(port_, 10000));
            ASSERT_GE(fds.back(), 0);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        double median = 0, max = 0;
        std::tie(median, max) = nine_requests(port_);
        std::printf("[ idle     ] %d connected, silent: median %.2f ms, max %.2f ms over 9 requests\n", idle,
                    median, max);
        EXPECT_LT(median, 100.0) << idle << " silent connections";
        EXPECT_LT(max, limit_ms) << idle << " silent connections";
        // Each is used once, at once, and stays open.
        for (const int fd : fds) {
            const auto t0 = steady::now();
            std::string buffer;
            ASSERT_TRUE(th::send_all(fd, "GET /api/info HTTP/1.1\r\nHost: " + host() + "\r\n\r\n"));
            const auto r = th::read_reply(fd, buffer);
            ASSERT_TRUE(r);
            EXPECT_EQ(r->status, 200);
            const double ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();
            EXPECT_LT(ms, limit_ms);
        }
        std::tie(median, max) = nine_requests(port_);
        std::printf(
            "[ idle     ] %d kept alive after a request: median %.2f ms, max %.2f ms over 9 requests\n", idle,
            median, max);
        EXPECT_LT(median, 100.0) << idle << " kept-alive connections";
        EXPECT_LT(max, limit_ms) << idle << " kept-alive connections";
        for (const int fd : fds)
            ::close(fd);
    }
}

// Pipelined requests are answered in order; HTTP/1.0 and `Connection: close` end the connection
// after the reply; a client that half-closes its side still gets its answer; a client that sends
// `Expect: 100-continue` is told to go on; a malformed request is answered and the connection closed.
TEST_F(ServeHttp, ConnectionsFollowHttp11) {
    const std::string h = "Host: " + host() + "\r\n";
    std::string raw =
        th::raw_exchange(port_, "GET /api/info HTTP/1.1\r\n" + h + "\r\nGET /nope HTTP/1.1\r\n" + h +
                                    "\r\nPOST /api/session HTTP/1.1\r\n" + h +
                                    "Content-Length: 0\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(th::count_replies(raw), 3) << raw.substr(0, 400);
    const std::size_t a = raw.find("HTTP/1.1 200"), b = raw.find("HTTP/1.1 404"),
                      c = raw.find("HTTP/1.1 201");
    EXPECT_TRUE(a < b && b < c) << "in order";

    raw = th::raw_exchange(port_, "GET /api/info HTTP/1.0\r\n\r\n"); // ends: the server closes
    EXPECT_EQ(raw.rfind("HTTP/1.1 200", 0), 0u) << raw.substr(0, 200);
    EXPECT_NE(raw.find("Connection: close"), std::string::npos);

    int fd = th::connect_port(port_, 5000);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(th::send_all(fd, "POST /api/session HTTP/1.1\r\n" + h + "Content-Length: 0\r\n\r\n"));
    ::shutdown(fd, SHUT_WR);
    raw = th::read_to_close(fd);
    ::close(fd);
    EXPECT_EQ(raw.rfind("HTTP/1.1 201", 0), 0u)
        << "a half-closed client gets its answer: " << raw.substr(0, 200);

    fd = th::connect_port(port_, 5000);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(th::send_all(fd, "POST /api/session HTTP/1.1\r\n" + h +
                                     "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n"));
    std::string got;
    ASSERT_TRUE(th::read_more(fd, got));
    EXPECT_EQ(got, "HTTP/1.1 100 Continue\r\n\r\n");
    ASSERT_TRUE(th::send_all(fd, "{}"));
    std::string buffer;
    const auto r = th::read_reply(fd, buffer);
    ::close(fd);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 201);

    for (const std::string& bad : std::vector<std::string>{
             std::string("GET / HTTP/1.1\r\n") + h + "X: 1\r\n folded\r\n\r\n",
             std::string("GET / HTTP/3.0\r\n") + h + "\r\n", std::string("\x16\x03\x01\x02\x00", 5),
             std::string("GET / HTTP/1.1\r\n\r\n")}) {
        raw = th::raw_exchange(port_, bad + "GET /api/info HTTP/1.1\r\n" + h + "\r\n");
        EXPECT_EQ(th::count_replies(raw), 1) << "refused and closed: " << raw.substr(0, 200);
        EXPECT_TRUE(raw.rfind("HTTP/1.1 400", 0) == 0 || raw.rfind("HTTP/1.1 505", 0) == 0)
            << raw.substr(0, 200);
        EXPECT_NE(raw.find("{\"error\":"), std::string::npos);
    }
    EXPECT_EQ(ask("PATCH", "/api/info", {})->status, 404);
    EXPECT_EQ(ask("DELETE", "/index.html", {})->status, 404);
}

// Sends `text` in pieces of 1 to 7 bytes, each its own packet (TCP_NODELAY, a pause every few).
bool send_in_pieces(int fd, const std::string& text) {
    std::size_t at = 0, i = 0;
    while (at < text.size()) {
        const std::size_t n = std::min<std::size_t>(1 + i++ % 7, text.size() - at);
        if (!th::send_all(fd, std::string_view(text).substr(at, n))) return false;
        at += n;
        if (i % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}

// Pipelined requests (in one packet, and split into packets of a few bytes) are each answered
// once, in order: the loop's own answers (files, refusals) and the workers' (API) interleaved, HEAD
// answers without a body, and nothing after the last.
TEST_F(ServeHttp, PipelinedRequestsAreEachAnsweredOnceInOrder) {
    const std::string h = "Host: " + host() + "\r\n";
    struct one {
        std::string text;
        int status;
        bool head;
    };
    const std::vector<one> kinds = {
        {"GET /api/info HTTP/1.1\r\n" + h + "\r\n", 200, false},
        {"GET /index.html HTTP/1.1\r\n" + h + "\r\n", 200, false},
        {"HEAD /index.html HTTP/1.1\r\n" + h + "\r\n", 200, true},
        {"POST /api/session HTTP/1.1\r\n" + h + "Content-Length: 0\r\n\r\n", 201, false},
        {"GET /nope HTTP/1.1\r\n" + h + "\r\n", 404, false},
        {"HEAD /api/info HTTP/1.1\r\n" + h + "\r\n", 200, true},
        {"POST /api/arena/alloc HTTP/1.1\r\n" + h + "Content-Length: 2\r\n\r\n{}", 400, false},
        {"TRACE / HTTP/1.1\r\n" + h + "\r\n", 404, false},
        {"GET /api/info HTTP/1.1\r\nHost: evil.example\r\n\r\n", 403, false},
        {"PUT /api/info HTTP/1.1\r\n" + h + "Transfer-Encoding: chunked\r\n\r\n1;x\r\n{\r\n0\r\nT: 1\r\n\r\n",
         405, false},
    };
    for (const bool tiny : {false, true}) {
        std::string text;
        std::vector<one> sent;
        for (int i = 0; i < 40; ++i) {
            sent.push_back(kinds[static_cast<std::size_t>(i * 7) % kinds.size()]);
            text += sent.back().text;
        }
        text += "GET /api/info HTTP/1.1\r\n" + h + "Connection: close\r\n\r\n";
        sent.push_back({"", 200, false});
        const int fd = th::connect_port(port_, 10000);
        ASSERT_GE(fd, 0);
        ASSERT_TRUE(tiny ? send_in_pieces(fd, text) : th::send_all(fd, text));
        std::string buffer;
        for (std::size_t i = 0; i < sent.size(); ++i) {
            const auto r = th::read_reply(fd, buffer, sent[i].head);
            ASSERT_TRUE(r) << "reply " << i << (tiny ? " (tiny packets)" : "");
            EXPECT_EQ(r->status, sent[i].status) << "reply " << i << ": " << sent[i].text;
            if (sent[i].head) {
                EXPECT_NE(r->header("content-length"), "") << "HEAD: the length GET would have";
            }
        }
        EXPECT_EQ(buffer + th::read_to_close(fd), "") << "nothing more: no reply twice, no HEAD body";
        ::close(fd);
    }
    EXPECT_GT(server_->the_api().session_count(), 0u);
}

// 100 Continue is written in order after the replies still being written to a pipelining client,
// and only while the body is still to come.
TEST_F(ServeHttp, ContinueComesInOrderAfterPipelinedReplies) {
    const std::string h = "Host: " + host() + "\r\n";
    const int fd = th::connect_port(port_, 5000);
    ASSERT_GE(fd, 0);
    std::string text;
    for (int i = 0; i < 20; ++i)
        text += "GET /index.html HTTP/1.1\r\n" + h + "\r\n";
    ASSERT_TRUE(th::send_all(fd, text + "POST /api/session HTTP/1.1\r\n" + h +
                                     "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n"));
    std::string buffer;
    for (int i = 0; i < 20; ++i) {
        const auto r = th::read_reply(fd, buffer);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
    while (buffer.size() < 25 && th::read_more(fd, buffer)) {
    }
    EXPECT_EQ(buffer, "HTTP/1.1 100 Continue\r\n\r\n");
    buffer.clear();
    ASSERT_TRUE(th::send_all(fd, "{}"));
    const auto r = th::read_reply(fd, buffer);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 201);
    // A body sent with the headers needs no go-ahead.
    ASSERT_TRUE(
        th::send_all(fd, "POST /api/session HTTP/1.1\r\n" + h +
                             "Expect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"));
    const std::string rest = buffer + th::read_to_close(fd);
    ::close(fd);
    EXPECT_EQ(rest.rfind("HTTP/1.1 201", 0), 0u) << rest.substr(0, 100);
}

// A client that resets its connection in the middle of a reply, or half-closes with requests still
// pipelined, costs the server nothing: the others are still served.
TEST_F(ServeHttp, ResetsMidReplyAndHalfClosedClients) {
    const std::string h = "Host: " + host() + "\r\n";
    for (int i = 0; i < 20; ++i) {
        const int fd = th::connect_port(port_, 5000);
        ASSERT_GE(fd, 0);
        std::string text;
        for (int k = 0; k < 50; ++k)
            text += (k % 2 ? "GET /index.html HTTP/1.1\r\n" : "GET /api/info HTTP/1.1\r\n") + h + "\r\n";
        ASSERT_TRUE(th::send_all(fd, text));
        std::string some;
        (void)th::read_more(fd, some);
        const linger reset{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        ::close(fd); // RST
    }
    const int fd = th::connect_port(port_, 5000);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(
        th::send_all(fd, "GET /api/info HTTP/1.1\r\n" + h + "\r\nGET /index.html HTTP/1.1\r\n" + h + "\r\n"));
    ::shutdown(fd, SHUT_WR);
    const std::string raw = th::read_to_close(fd);
    ::close(fd);
    EXPECT_EQ(th::count_replies(raw), 2) << "both pipelined requests of a half-closed client";
    EXPECT_EQ(ask("GET", "/api/info", {})->status, 200);
}

// A server runs once: start() after stop() throws instead of answering nothing.
TEST_F(ServeHttp, StartAfterStopThrows) {
    server_->stop();
    EXPECT_THROW((void)server_->start(), std::logic_error);
    serve::http_server never_started(serve::serve_options{});
    never_started.stop();
}

// The open descriptors of this process.
std::size_t open_fds() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
        ++n;
    return n;
}

// Seconds of CPU this process used.
double cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// With no descriptor left, accept fails (EMFILE) while the listening socket stays readable: the
// server makes room by closing an idle connection, or stops accepting for a moment, instead of
// spinning. The waiting client is served once a descriptor is free.
TEST_F(ServeHttp, RunningOutOfDescriptorsDoesNotSpin) {
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
    const std::string request = "GET /api/info HTTP/1.1\r\nHost: " + host() + "\r\n\r\n";
    // Served once with descriptors to spare: the sanitizers' first check of a type opens a pipe.
    {
        const auto warm = ask("GET", "/api/info", {});
        ASSERT_TRUE(warm);
        ASSERT_EQ(warm->status, 200);
    }
    std::vector<int> idle, filler;
    for (int i = 0; i < 3; ++i)
        idle.push_back(th::connect_port(port_, 5000));
    std::this_thread::sleep_for(std::chrono::milliseconds(100)); // accepted
    rlimit low = old;
    low.rlim_cur = open_fds() + 16;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    for (int fd; (fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0;)
        filler.push_back(fd);
    // The last descriptor for a client: the server has none left for it and closes an idle one.
    ::close(filler.back());
    filler.pop_back();
    int fd = th::connect_port(port_, 5000);
    ASSERT_GE(fd, 0);
    std::string buffer;
    ASSERT_TRUE(th::send_all(fd, request));
    auto r = th::read_reply(fd, buffer);
    ASSERT_TRUE(r) << "served: an idle connection made room";
    ::close(fd);
    for (const int f : idle)
        ::close(f);
    std::this_thread::sleep_for(std::chrono::milliseconds(200)); // the server closes its sides
    // Now every descriptor is taken by this side: nothing to close, so the server waits.
    for (int f; (f = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0;)
        filler.push_back(f);
    ::close(filler.back());
    filler.pop_back();
    fd = th::connect_port(port_, 5000);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(th::send_all(fd, request));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const double c0 = cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const double busy = cpu_seconds() - c0;
    std::printf("[ emfile   ] %.1f ms of CPU in 500 ms with no descriptor left\n", busy * 1e3);
    EXPECT_LT(busy, 0.1) << "the loop spins on a listening socket it cannot accept from";
    for (const int f : filler)
        ::close(f);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
    buffer.clear();
    errno = 0;
    r = th::read_reply(fd, buffer);
    const int read_errno = errno;
    ::close(fd);
    ASSERT_TRUE(r) << "accepted once a descriptor is free (read " << buffer.size() << " bytes: \""
                   << buffer.substr(0, 80) << "\", errno " << read_errno << ")";
    EXPECT_EQ(r->status, 200);
}

class ServeHttpTimeouts : public ServeHttp {
protected:
    void SetUp() override {
        serve::serve_options o;
        o.threads = 1;
        o.request_timeout = std::chrono::milliseconds(400);
        o.idle_timeout = std::chrono::milliseconds(800);
        o.max_connections = 8;
        start(o);
    }
};

// A request must arrive within the request timeout once it has started (a client trickling bytes
// gets 408), a connection between requests is closed after the idle timeout, and beyond
// max_connections the idlest connection gives way to the new one.
TEST_F(ServeHttpTimeouts, SlowRequestsIdleConnectionsAndTheConnectionLimit) {
    int fd = th::connect_port(port_, 5000);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(th::send_all(fd, "GET /api/info HTTP/1.1\r\nHost: "));
    const auto t0 = steady::now();
    std::string raw = th::read_to_close(fd);
    const double s = std::chrono::duration<double>(steady::now() - t0).count();
    ::close(fd);
    EXPECT_EQ(raw.rfind("HTTP/1.1 408", 0), 0u) << raw.substr(0, 200);
    EXPECT_GT(s, 0.3);
    EXPECT_LT(s, 2.0);

    fd = th::connect_port(port_, 5000);
    ASSERT_GE(fd, 0);
    std::string buffer;
    ASSERT_TRUE(th::send_all(fd, "GET /api/info HTTP/1.1\r\nHost: " + host() + "\r\n\r\n"));
    ASSERT_TRUE(th::read_reply(fd, buffer));
    const auto t1 = steady::now();
    EXPECT_EQ(th::read_to_close(fd), "") << "closed without a word";
    const double idle = std::chrono::duration<double>(steady::now() - t1).count();
    ::close(fd);
    EXPECT_GT(idle, 0.7);
    EXPECT_LT(idle, 2.5);

    // Eight idle connections, the first the idlest; a ninth is served and the first is closed.
    std::vector<int> fds;
    for (int i = 0; i < 8; ++i) {
        fds.push_back(th::connect_port(port_, 3000));
        ASSERT_GE(fds.back(), 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_LT(request_ms(port_), 1000.0) << "the ninth is served";
    char byte;
    EXPECT_EQ(::recv(fds[0], &byte, 1, 0), 0) << "the idlest was closed";
    ASSERT_TRUE(th::send_all(fds[7], "GET /api/info HTTP/1.1\r\nHost: " + host() + "\r\n\r\n"));
    buffer.clear();
    const auto r = th::read_reply(fds[7], buffer);
    ASSERT_TRUE(r) << "the newest still works";
    EXPECT_EQ(r->status, 200);
    for (const int f : fds)
        ::close(f);
}

// A request trickled in one byte at a time (slowloris), in its request line, its headers or its
// body, gets 408 when the request timeout passes since its first byte.
TEST_F(ServeHttpTimeouts, TrickledRequestsGet408) {
    const std::string whole =
        "POST /api/session HTTP/1.1\r\nHost: " + host() + "\r\nContent-Length: 40\r\n\r\n{}";
    for (const std::size_t from : {std::size_t{0}, whole.find("Host"), whole.find("{}")}) {
        const int fd = th::connect_port(port_, 5000);
        ASSERT_GE(fd, 0);
        ASSERT_TRUE(th::send_all(fd, whole.substr(0, from)));
        const auto t0 = steady::now();
        std::string got;
        for (std::size_t i = from; i < whole.size() && got.empty(); ++i) {
            if (!th::send_all(fd, whole.substr(i, 1))) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            char c;
            if (::recv(fd, &c, 1, MSG_DONTWAIT) == 1) got += c;
        }
        got += th::read_to_close(fd);
        const double s = std::chrono::duration<double>(steady::now() - t0).count();
        ::close(fd);
        EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << from << ": " << got.substr(0, 100);
        EXPECT_LT(s, 2.0) << from;
    }
}

// Clients that pipeline requests and never read the replies: each holds one reply at most (its
// next request is not read meanwhile), and when every place is taken by such clients, a new
// connection still gets in: the one whose reply stalled longest is closed for it.
TEST_F(ServeHttpTimeouts, ClientsThatNeverReadHoldOneReplyAndNoPlace) {
    std::string_view biggest = "/index.html";
    std::size_t size = 0;
    for (const serve::asset& a : serve::assets())
        if (a.data.size() > size) std::tie(biggest, size) = std::pair{a.path, a.data.size()};
    std::string text;
    for (std::size_t sent = 0; sent < (std::size_t{32} << 20); sent += size)
        text += "GET " + std::string(biggest) + " HTTP/1.1\r\nHost: " + host() + "\r\n\r\n";
    const std::size_t before = th::resident_bytes();
    std::vector<int> stalled;
    for (int i = 0; i < 8; ++i) { // max_connections
        const int fd = th::connect_port(port_, 5000);
        ASSERT_GE(fd, 0);
        const int small = 4096;
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        (void)::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        stalled.push_back(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::size_t after = th::resident_bytes();
    std::printf("[ no-read  ] 8 clients pipelining %zu x %s, reading nothing: RSS %.1f -> %.1f MB\n",
                text.size() / (biggest.size() + host().size() + 28), std::string(biggest).c_str(),
                before / 1e6, after / 1e6);
    if (!sanitized) {
        EXPECT_LT(after, before + 8 * mib);
    }
    const auto t0 = steady::now();
    th::client c(port_, 3000);
    const auto r = c.get("/api/info");
    ASSERT_TRUE(r) << "a new connection gets in";
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(std::chrono::duration<double>(steady::now() - t0).count(), 1.0);
    for (const int fd : stalled)
        ::close(fd);
}

// stop() with API calls in flight, workers busy and requests queued returns once the calls in
// flight end: no hang, and no reply is written to a connection after it closed.
TEST(ServeHttpThread, StopWhileRequestsAreInFlight) {
    for (int round = 0; round < 3; ++round) {
        serve::serve_options o;
        o.port = 0;
        o.threads = 2;
        serve::http_server server(o);
        const int port = server.start();
        std::atomic<bool> go{true};
        std::atomic<int> answered{0};
        std::vector<std::thread> clients;
        for (int t = 0; t < 6; ++t) {
            clients.emplace_back([&, t] {
                th::client c(port, 10000);
                const auto s = c.post("/api/session", "");
                if (!s || s->status != 201) return;
                const std::string id = json::parse(s->body)["session"];
                const std::string body = t % 2 ? json{{"session", id}, {"entities", 20000}}.dump()
                                               : json{{"session", id}, {"size", 24}}.dump();
                while (go.load()) {
                    const auto r = c.post(t % 2 ? "/api/layout/run" : "/api/arena/alloc", body);
                    if (!r) break;
                    ++answered;
                }
            });
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100 + 50 * round));
        const auto t0 = steady::now();
        server.stop();
        const double s = std::chrono::duration<double>(steady::now() - t0).count();
        go = false;
        for (auto& c : clients)
            c.join();
        EXPECT_GT(answered.load(), 0);
        EXPECT_LT(s, sanitized ? 20.0 : 5.0) << "stop() waits only for the calls in flight";
    }
}

// Connections that close (reset) while a worker serves their request, mixed with clients that
// wait for their answers: the loop drops the late replies, and every waiting client is answered.
TEST(ServeHttpThread, ConnectionsThatCloseWhileTheirRequestIsServed) {
    serve::serve_options o;
    o.port = 0;
    o.threads = 3;
    serve::http_server server(o);
    const int port = server.start();
    std::atomic<int> failed{0};
    std::vector<std::thread> clients;
    const int rounds = sanitized ? 60 : 300;
    for (int t = 0; t < 6; ++t) {
        clients.emplace_back([&, t] {
            th::client c(port, 10000);
            const auto s = c.post("/api/session", "");
            if (!s || s->status != 201) {
                ++failed;
                return;
            }
            const std::string id = json::parse(s->body)["session"];
            const std::string alloc = json{{"session", id}, {"size", 8}}.dump();
            const std::string reset = json{{"session", id}}.dump();
            for (int i = 0; i < rounds; ++i) {
                if (t % 2 == 0) { // send, and reset before the answer
                    const int fd = th::connect_port(port, 5000);
                    if (fd < 0) continue;
                    (void)th::send_all(fd, th::request_text("POST", "/api/arena/alloc", alloc, {}, port));
                    if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
                    const linger rst{1, 0};
                    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
                    ::close(fd);
                } else {
                    const auto r =
                        c.post(i % 10 ? "/api/arena/alloc" : "/api/arena/reset", i % 10 ? alloc : reset);
                    if (!r || r->status != 200) ++failed;
                }
            }
        });
    }
    for (auto& c : clients)
        c.join();
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(server.the_api().session_count(), 6u);
    server.stop();
}

} // namespace

#else
TEST(ServeHttp, NotBuilt) { GTEST_SKIP() << "strata-lab serve is not part of this build"; }
#endif
