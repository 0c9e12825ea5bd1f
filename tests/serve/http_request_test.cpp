// strata-lab serve: the HTTP request parser (http_request.hpp), the Host/Origin policy
// (http_host.hpp) and reply formatting (http_response.hpp), without sockets: every cap is applied
// while the bytes arrive, byte by byte as well as whole.
#include <gtest/gtest.h>

#if STRATA_SERVE_AVAILABLE
#include <string>

#include "http_host.hpp"
#include "http_request.hpp"
#include "http_response.hpp"

namespace {

namespace serve = strata::lab::serve;
using status = serve::request_parser::status;

struct parsed {
    status st = status::need_more;
    std::size_t taken = 0;
    int error = 0;
    serve::http_request request;
};

// Feeds `text` whole, or one byte at a time (keeping what the parser did not take, as the server does).
parsed feed(const std::string& text, bool bytewise, serve::http_limits l = {}) {
    serve::request_parser p(l);
    parsed out;
    if (!bytewise) {
        const auto [st, taken] = p.parse(text);
        out.st = st;
        out.taken = taken;
    } else {
        std::string pending;
        for (std::size_t i = 0; i < text.size() && out.st == status::need_more; ++i) {
            pending += text[i];
            const auto [st, taken] = p.parse(pending);
            pending.erase(0, taken);
            out.st = st;
            out.taken = i + 1 - pending.size();
        }
    }
    out.error = p.error_status();
    if (out.st == status::complete) out.request = std::move(p.request());
    return out;
}

class HttpParse : public ::testing::TestWithParam<bool> {};

TEST_P(HttpParse, ARequestWithHeadersAndABody) {
    const std::string text = "POST /api/arena/alloc?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                             "Content-Type: application/json\r\nX-Space:   padded value \t\r\n"
                             "Content-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n";
    const parsed p = feed(text, GetParam());
    ASSERT_EQ(p.st, status::complete);
    EXPECT_EQ(p.taken, text.find("GET /")) << "the next request's bytes are left";
    EXPECT_EQ(p.request.method, "POST");
    EXPECT_EQ(p.request.path, "/api/arena/alloc");
    EXPECT_EQ(p.request.target, "/api/arena/alloc?x=1");
    EXPECT_EQ(p.request.body, "hello");
    EXPECT_TRUE(p.request.keep_alive);
    ASSERT_NE(p.request.header("x-space"), nullptr);
    EXPECT_EQ(*p.request.header("x-space"), "padded value");
    EXPECT_EQ(*p.request.header("content-type"), "application/json") << "names in lower case";
}

TEST_P(HttpParse, ChunkedBodiesAndTrailers) {
    const parsed p = feed("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n"
                          "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n",
                          GetParam());
    ASSERT_EQ(p.st, status::complete);
    EXPECT_EQ(p.request.body, "abcde");
    EXPECT_EQ(
        feed("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", GetParam())
            .error,
        400)
        << "a chunk longer than its size";
    EXPECT_EQ(
        feed("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", GetParam()).error,
        400);
}

TEST_P(HttpParse, VersionsConnectionAndHost) {
    parsed p = feed("GET / HTTP/1.0\r\n\r\n", GetParam());
    ASSERT_EQ(p.st, status::complete) << "HTTP/1.0 needs no Host";
    EXPECT_FALSE(p.request.keep_alive) << "HTTP/1.0: one request per connection";
    p = feed("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", GetParam());
    EXPECT_FALSE(p.request.keep_alive);
    p = feed("GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, Close\r\n\r\n", GetParam());
    ASSERT_EQ(p.st, status::complete);
    EXPECT_FALSE(p.request.keep_alive);
    EXPECT_EQ(feed("GET / HTTP/1.1\r\n\r\n", GetParam()).error, 400) << "no Host";
    EXPECT_EQ(feed("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", GetParam()).error, 400);
    EXPECT_EQ(feed("GET / HTTP/2.0\r\nHost: h\r\n\r\n", GetParam()).error, 505);
    EXPECT_EQ(feed("GET / HTTP/1.1 x\r\nHost: h\r\n\r\n", GetParam()).error, 400);
    EXPECT_EQ(feed("GET / HTTQ/1.1\r\nHost: h\r\n\r\n", GetParam()).error, 400);
    EXPECT_EQ(feed("GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n", GetParam()).error, 400) << "a path only";
    EXPECT_EQ(feed("G(T / HTTP/1.1\r\nHost: h\r\n\r\n", GetParam()).error, 400);
    EXPECT_EQ(feed("GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n", GetParam()).error, 400);
    p = feed("\r\n\r\nGET /a%20b HTTP/1.1\nHost: h\n\n", GetParam());
    ASSERT_EQ(p.st, status::complete) << "empty lines first, and bare LF line ends";
    EXPECT_EQ(p.request.path, "/a b");
}

TEST_P(HttpParse, MalformedHeadersAreRefused) {
    EXPECT_EQ(feed("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n  folded\r\n\r\n", GetParam()).error, 400)
        << "obs-fold";
    EXPECT_EQ(feed("GET / HTTP/1.1\r\nHost: h\r\nX-A : 1\r\n\r\n", GetParam()).error, 400)
        << "space before ':'";
    EXPECT_EQ(feed("GET / HTTP/1.1\r\nHost: h\r\nno colon\r\n\r\n", GetParam()).error, 400);
    EXPECT_EQ(feed(std::string("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\0b\r\n\r\n", 38), GetParam()).error, 400);
    EXPECT_EQ(feed("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n", GetParam()).error, 400) << "a bare CR";
    EXPECT_EQ(feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", GetParam())
                  .error,
              400);
    EXPECT_EQ(feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", GetParam()).error, 400);
    EXPECT_EQ(feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                   GetParam())
                  .error,
              400)
        << "both lengths";
    EXPECT_EQ(
        feed("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", GetParam()).error,
        501);
    EXPECT_EQ(feed("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", GetParam()).error, 400)
        << "chunked on POST and PUT only";
}

// Every cap fails as soon as it is passed: the test feeds a line that never ends.
TEST_P(HttpParse, CapsApplyBeforeALineEnds) {
    serve::http_limits l;
    const auto unended = [&](const std::string& head, std::size_t filler, bool bytewise) {
        serve::request_parser p(l);
        std::string pending = head;
        std::size_t fed = head.size();
        auto r = p.parse(pending);
        pending.erase(0, r.second);
        const std::string piece = bytewise ? "a" : std::string(1000, 'a');
        while (r.first == status::need_more && fed < filler) {
            pending += piece;
            fed += piece.size();
            r = p.parse(pending);
            pending.erase(0, r.second);
        }
        EXPECT_EQ(r.first, status::failed) << head;
        EXPECT_LE(pending.size(), l.max_header_bytes + piece.size()) << "nothing past the cap is kept";
        return std::pair{p.error_status(), fed};
    };
    auto [code, fed] = unended("GET /", 1 << 20, GetParam());
    EXPECT_EQ(code, 414);
    EXPECT_LE(fed, l.max_request_line + 1003);
    std::tie(code, fed) = unended("GET / HTTP/1.1\r\nHost: h\r\nX-Big: ", 1 << 20, GetParam());
    EXPECT_EQ(code, 431);
    EXPECT_LE(fed, l.max_header_line + 1100);
    std::string many = "GET / HTTP/1.1\r\nHost: h\r\n";
    for (int i = 0; i < 101; ++i)
        many += "X: 1\r\n";
    EXPECT_EQ(feed(many + "\r\n", GetParam()).error, 431);
    std::string block = "GET / HTTP/1.1\r\nHost: h\r\n";
    for (int i = 0; i < 70; ++i)
        block += "X: " + std::string(1000, 'b') + "\r\n";
    EXPECT_EQ(feed(block, GetParam()).error, 431) << "before the headers end";
    EXPECT_EQ(feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 16385\r\n\r\n", GetParam()).error, 413)
        << "a declared length, before any body byte";
    EXPECT_EQ(
        feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", GetParam()).error,
        400);
    std::string chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 20; ++i)
        chunked += "400\r\n" + std::string(1024, 'c') + "\r\n";
    const parsed p = feed(chunked, GetParam());
    EXPECT_EQ(p.error, 413) << "a chunked body, as it arrives";
    EXPECT_LT(p.taken, 17u * 1024 + 200);
    EXPECT_EQ(
        feed("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFF\r\n", GetParam())
            .error,
        400);
}

// Framing a front end could read another way is refused, never guessed: a trailer is held to the
// rules of a header line, a chunk size line to those of a line, and HTTP/1.0 has no transfer codings.
TEST_P(HttpParse, FramingThatCouldBeReadTwoWaysIsRefused) {
    using namespace std::string_literals;
    const bool b = GetParam();
    const std::string chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (const std::string& bad :
         {"0\r\nX\0Y: 1\r\n\r\n"s, "0\r\nX : 1\r\n\r\n"s, "0\r\nX: a\x01b\r\n\r\n"s, "0\r\n folded\r\n\r\n"s,
          "0\r\nno colon\r\n\r\n"s, "1;e\0x\r\na\r\n0\r\n\r\n"s, "1;e=\x7f\r\na\r\n0\r\n\r\n"s,
          "1\ra\r\n0\r\n\r\n"s}) {
        const parsed p = feed(chunked + bad, b);
        EXPECT_EQ(p.st, status::failed) << bad;
        EXPECT_EQ(p.error, 400) << bad;
    }
    const parsed ok = feed(chunked + "1;name=\"v\";x\r\na\r\n0\r\nX-T: 1\r\n\r\n", b);
    ASSERT_EQ(ok.st, status::complete) << "extensions and trailers that follow the rules";
    EXPECT_EQ(ok.request.body, "a");
    EXPECT_EQ(ok.request.header("x-t"), nullptr) << "trailers are dropped";
    EXPECT_EQ(feed("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", b).error, 400)
        << "Transfer-Encoding on HTTP/1.0";
    EXPECT_EQ(feed("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", b)
                  .error,
              400)
        << "both lengths, Transfer-Encoding first";
    EXPECT_EQ(feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 1\r\n\r\n", b).error, 400) << "a list";
    EXPECT_EQ(feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", b).error, 400);
    EXPECT_EQ(feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length:1 1\r\n\r\n", b).error, 400);
    const parsed same =
        feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", b);
    EXPECT_EQ(same.st, status::complete) << "the same length twice is one length (RFC 9110 8.6)";
    EXPECT_EQ(feed(chunked.substr(0, chunked.size() - 2) + "Transfer-Encoding: chunked\r\n\r\n", b).error,
              501)
        << "chunked twice";
    EXPECT_EQ(feed(chunked + "100000000\r\n", b).error, 400) << "a chunk size past 8 hex digits";
    EXPECT_EQ(feed(chunked + "FFFFFFFF\r\n", b).error, 413);
    EXPECT_EQ(feed(chunked + "-1\r\n", b).error, 400);
    for (const char* target : {"http://h/", "*", "h:80", "/a\x01"}) {
        EXPECT_EQ(feed("OPTIONS "s + target + " HTTP/1.1\r\nHost: h\r\n\r\n", b).error, 400) << target;
    }
    EXPECT_EQ(feed("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", b).error, 400) << "no tunnels";
    EXPECT_EQ(feed("GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", b).error, 400);
    EXPECT_EQ(feed("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", b).error, 400);
    EXPECT_EQ(feed("GET / HTTP/1.1\rHost: h\r\n\r\n", b).error, 400) << "a bare CR ends no line";
    EXPECT_EQ(feed("GET /\0 HTTP/1.1\r\nHost: h\r\n\r\n"s, b).error, 400);
}

TEST_P(HttpParse, ExpectContinueIsOfferedOnceHeadersAreIn) {
    serve::request_parser p;
    const std::string head =
        "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
    auto r = p.parse(head);
    EXPECT_EQ(r.first, status::need_more);
    EXPECT_TRUE(p.take_continue());
    EXPECT_FALSE(p.take_continue()) << "once";
    EXPECT_EQ(p.parse("{}").first, status::complete);
    p.reset();
    (void)p.parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 99999\r\n\r\n");
    EXPECT_FALSE(p.take_continue()) << "refused instead";
    EXPECT_EQ(p.error_status(), 413);
}

INSTANTIATE_TEST_SUITE_P(WholeAndBytewise, HttpParse, ::testing::Bool());

TEST(HttpHost, LoopbackWildcardAndOtherAddresses) {
    const serve::host_policy loop("127.0.0.1", 8080);
    for (const char* ok : {"127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080", "[::1]:8080"})
        EXPECT_TRUE(loop.host_allowed(ok)) << ok;
    for (const char* bad : {"127.0.0.1", "127.0.0.1:8081", "evil.example:8080", "127.0.0.2:8080",
                            "10.0.0.1:8080", "localhost:", "localhost:80x", ":8080", "[::1:8080", "::1:8080",
                            "localhost:8080:8080", "127.0.0.1:08080x"})
        EXPECT_FALSE(loop.host_allowed(bad)) << bad;
    EXPECT_TRUE(serve::host_policy("127.0.0.1", 80).host_allowed("localhost")) << "no port: 80";
    EXPECT_TRUE(serve::host_policy("::1", 9000).host_allowed("[::1]:9000"));
    EXPECT_TRUE(serve::host_policy("::1", 9000).host_allowed("localhost:9000"));

    const serve::host_policy any("0.0.0.0", 8080);
    for (const char* ok :
         {"192.168.1.7:8080", "10.0.0.1:8080", "localhost:8080", "[fe80::1]:8080", "[::]:8080"})
        EXPECT_TRUE(any.host_allowed(ok)) << ok;
    for (const char* bad :
         {"evil.example:8080", "192.168.1.7.nip.io:8080", "192.168.1.7:80", "[fe80::zz]:8080"})
        EXPECT_FALSE(any.host_allowed(bad)) << bad;
    EXPECT_TRUE(serve::host_policy("::", 8080).host_allowed("192.168.1.7:8080"));

    const serve::host_policy lan("192.168.1.7", 8080, {"mybox", "MyBox.lan"});
    EXPECT_TRUE(lan.host_allowed("192.168.1.7:8080"));
    EXPECT_TRUE(lan.host_allowed("mybox:8080")) << "--allow-host";
    EXPECT_TRUE(lan.host_allowed("mybox.LAN:8080"));
    EXPECT_FALSE(lan.host_allowed("localhost:8080")) << "localhost does not reach it";
    EXPECT_FALSE(lan.host_allowed("10.0.0.1:8080"));

    EXPECT_TRUE(loop.origin_allowed("http://localhost:8080"));
    EXPECT_TRUE(loop.origin_allowed("HTTP://127.0.0.1:8080"));
    for (const char* bad : {"https://localhost:8080", "http://localhost:8081", "null", "http://",
                            "http://evil.example", "http://localhost:8080/", "file://"})
        EXPECT_FALSE(loop.origin_allowed(bad)) << bad;
}

TEST(HttpHost, RefusalReadsHostOriginAndFetchMetadata) {
    const serve::host_policy loop("127.0.0.1", 8080);
    serve::http_request r;
    r.method = "POST";
    r.headers = {{"host", "127.0.0.1:8080"}};
    EXPECT_EQ(loop.refusal(r), "");
    r.headers.emplace_back("sec-fetch-site", "same-origin");
    EXPECT_EQ(loop.refusal(r), "");
    r.headers = {
        {"host", "127.0.0.1:8080"}, {"sec-fetch-site", "cross-site"}, {"sec-fetch-mode", "navigate"}};
    EXPECT_NE(loop.refusal(r), "") << "a cross-site POST, even as a navigation";
    r.method = "GET";
    EXPECT_EQ(loop.refusal(r), "") << "a link to the page";
    r.headers = {{"host", "127.0.0.1:8080"}, {"sec-fetch-site", "cross-site"}, {"sec-fetch-mode", "cors"}};
    EXPECT_NE(loop.refusal(r), "");
    r.headers = {{"host", "127.0.0.1:8080"}, {"origin", "http://evil.example"}};
    EXPECT_NE(loop.refusal(r), "");
    r.headers = {{"host", "rebound.example:8080"}};
    EXPECT_NE(loop.refusal(r), "");
    r.headers = {};
    EXPECT_EQ(loop.refusal(r), "") << "HTTP/1.0 without a Host (a browser always sends one)";
}

// The forms a Host can take: names compare in any case; a trailing dot makes another name (one a
// resolver may send to DNS), so it is refused; an IPv6 literal is in brackets, written as
// inet_ntop writes it; the port is the bound one, and none means 80.
TEST(HttpHost, HostFormsCaseDotsBracketsAndPorts) {
    const serve::host_policy loop("127.0.0.1", 8080);
    for (const char* ok : {"LOCALHOST:8080", "LocalHost:8080", "[::1]:8080", "127.0.0.1:08080"})
        EXPECT_TRUE(loop.host_allowed(ok)) << ok;
    for (const char* bad :
         {"localhost.:8080", "127.0.0.1.:8080", "[::1].:8080", "[0:0:0:0:0:0:0:1]:8080", "[::1]", "[::1]8080",
          "::1", "[::1%lo]:8080", "localhost :8080", "localhost:+8080", "localhost:", "localhost:99999999",
          "", "localhost:8080/", "user@localhost:8080"})
        EXPECT_FALSE(loop.host_allowed(bad)) << bad;
    const serve::host_policy v6("::1", 9000);
    EXPECT_TRUE(v6.host_allowed("[::1]:9000"));
    EXPECT_TRUE(v6.host_allowed("127.0.0.1:9000"));
    EXPECT_FALSE(v6.host_allowed("[::1]:9001"));
    EXPECT_FALSE(v6.host_allowed("[::2]:9000"));

    // Bound to every address: localhost and IP literals (none can be rebound), no other name.
    for (const char* wildcard : {"0.0.0.0", "::"}) {
        const serve::host_policy any(wildcard, 8080);
        for (const char* ok :
             {"LOCALHOST:8080", "192.168.1.7:8080", "[fe80::1]:8080", "[::ffff:10.0.0.1]:8080"})
            EXPECT_TRUE(any.host_allowed(ok)) << wildcard << " " << ok;
        for (const char* bad : {"localhost.:8080", "192.168.1.7.:8080", "0x7f.0.0.1:8080", "2130706433:8080",
                                "[fe80::1%25eth0]:8080", "mybox:8080", "192.168.1.7", "[::1]:80"})
            EXPECT_FALSE(any.host_allowed(bad)) << wildcard << " " << bad;
    }
    EXPECT_TRUE(serve::host_policy("0.0.0.0", 8080, {"MyBox"}).host_allowed("mybox:8080"));
    EXPECT_FALSE(serve::host_policy("0.0.0.0", 8080, {"mybox"}).host_allowed("mybox.:8080"));

    for (const char* bad : {"null", "NULL", "", " http://localhost:8080", "http://localhost.:8080",
                            "http://localhost:8080?", "http://[::1]:8081", "ws://localhost:8080"})
        EXPECT_FALSE(loop.origin_allowed(bad)) << bad;
    EXPECT_TRUE(loop.origin_allowed("http://[::1]:8080"));
    EXPECT_TRUE(loop.origin_allowed("http://LOCALHOST:8080"));
}

// Every copy of Host, Origin, Sec-Fetch-Site and Sec-Fetch-Mode is judged, not only the first.
TEST(HttpHost, EveryCopyOfAHeaderIsJudged) {
    const serve::host_policy loop("127.0.0.1", 8080);
    serve::http_request r;
    r.method = "POST";
    r.headers = {
        {"host", "127.0.0.1:8080"}, {"origin", "http://127.0.0.1:8080"}, {"origin", "http://evil.example"}};
    EXPECT_NE(loop.refusal(r), "") << "a second Origin";
    r.headers = {
        {"host", "127.0.0.1:8080"}, {"sec-fetch-site", "same-origin"}, {"sec-fetch-site", "cross-site"}};
    EXPECT_NE(loop.refusal(r), "") << "a second Sec-Fetch-Site";
    r.method = "GET";
    r.headers = {{"host", "127.0.0.1:8080"},
                 {"sec-fetch-site", "cross-site"},
                 {"sec-fetch-mode", "navigate"},
                 {"sec-fetch-mode", "cors"}};
    EXPECT_NE(loop.refusal(r), "") << "a navigation that also says cors";
    r.headers = {
        {"host", "127.0.0.1:8080"}, {"sec-fetch-site", "Cross-Site"}, {"sec-fetch-mode", "NAVIGATE"}};
    EXPECT_EQ(loop.refusal(r), "") << "a link, in any case";
    r.headers = {{"host", "127.0.0.1:8080"}, {"sec-fetch-site", "cross-site"}};
    EXPECT_NE(loop.refusal(r), "") << "cross-site with no mode";
    r.headers = {{"host", "127.0.0.1:8080"}, {"origin", "null"}};
    EXPECT_NE(loop.refusal(r), "") << "a sandboxed page or a file:// page";
}

TEST(HttpResponse, HeadsAndErrorBodies) {
    serve::http_response r = serve::error_response(413, "too \"big\"\n", true);
    EXPECT_EQ(r.body, "{\"error\":\"too \\\"big\\\"\\u000a\"}");
    const std::string head = serve::response_head(r, r.body.size());
    EXPECT_EQ(head.rfind("HTTP/1.1 413 Content Too Large\r\n", 0), 0u);
    EXPECT_NE(head.find("Content-Length: " + std::to_string(r.body.size()) + "\r\n"), std::string::npos);
    EXPECT_NE(head.find("Connection: close\r\n"), std::string::npos);
    EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");
    serve::http_response none;
    none.status = 204;
    EXPECT_EQ(serve::response_head(none, 0), "HTTP/1.1 204 No Content\r\n\r\n");
}

} // namespace

#else
TEST(HttpParse, NotBuilt) { GTEST_SKIP() << "strata-lab serve is not part of this build"; }
#endif
