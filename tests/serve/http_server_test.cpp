// strata-lab serve: the HTTP layer over real sockets (server.cpp): which hosts and origins are
// served, the caps applied while a request is read, idle connections, timeouts, the connection
// limit, and a bounded load of good and bad requests in parallel (ServeLoad; its name says Thread,
// so the TSAN_STAGE of ./test runs it under ThreadSanitizer too).
#include <gtest/gtest.h>

#if STRATA_SERVE_AVAILABLE
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "http_test_client.hpp"
#include "server.hpp"

namespace {

using nlohmann::json;
namespace serve = strata::lab::serve;
namespace th = strata_test_http;
using steady = std::chrono::steady_clock;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif
#else
constexpr bool sanitized = false;
#endif

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
// arrived (a 64 MiB header line grew the server by over 100 MB), and the connection is closed.
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
    const double limit_ms = sanitized ? 1000.0 : 100.0;
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

} // namespace

#else
TEST(ServeHttp, NotBuilt) { GTEST_SKIP() << "strata-lab serve is not part of this build"; }
#endif
