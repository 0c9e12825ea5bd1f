#include "server.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "assets.hpp"

namespace strata::lab::serve {

std::string_view content_type(std::string_view path) noexcept {
    const auto ends = [&](std::string_view ext) {
        return path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext;
    };
    if (ends(".html")) return "text/html; charset=utf-8";
    if (ends(".js")) return "text/javascript; charset=utf-8";
    if (ends(".css")) return "text/css; charset=utf-8";
    if (ends(".json")) return "application/json";
    return "application/octet-stream";
}

struct http_server::impl {
    serve_options options;
    api the_api;
    httplib::Server server;
    std::thread thread;
    std::atomic<bool> loop_ended{false}; // listen_after_bind returned

    impl(serve_options o, api::clock_fn clock)
        : options(std::move(o)), the_api(options.bounds, assets_have_uplot(), std::move(clock)) {}
};

namespace {

// Where the pre-routing hook moves a request's Content-Encoding, so that httplib does not inflate it.
constexpr const char* encoded_header = "X-Strata-Content-Encoding";

void send(httplib::Response& res, const reply& r) {
    res.status = r.status;
    res.set_content(r.body, "application/json");
}

/// Effects: answers `status` with {"error": message}; `close` ends the connection after it (a body
/// left unread on the wire cannot be skipped).
void fail(httplib::Response& res, int status, const std::string& message, bool close = false) {
    if (close) res.set_header("Connection", "close");
    send(res, {status, "{\"error\":\"" + message + "\"}"});
}

} // namespace

http_server::http_server(serve_options options, api::clock_fn clock)
    : impl_(std::make_unique<impl>(std::move(options), std::move(clock))) {
    auto& s = impl_->server;
    api& a = impl_->the_api;
    const int threads = impl_->options.threads < 1 ? 1 : impl_->options.threads;
    s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
    // httplib answers 413 itself above this; the error handler below gives it a JSON body.
    s.set_payload_max_length(impl_->options.bounds.max_body_bytes);
    s.set_read_timeout(5, 0);
    s.set_write_timeout(5, 0);
    s.set_keep_alive_max_count(100);
    // httplib writes the headers and the body in two sends: without this, Nagle's algorithm and the
    // browser's delayed ACK would hold the body of every reply after the first on a connection ~40 ms.
    s.set_tcp_nodelay(true);
    // httplib's default sets SO_REUSEPORT too: a second server on the same port then started
    // without an error and the kernel split a page's requests between the two (each with its own
    // sessions: 404s). SO_REUSEADDR alone lets a restart bind while old connections linger.
    s.set_socket_options([](socket_t sock) {
        int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });

    // This hook runs after the headers are read and before the body is. The request is httplib's
    // own non-const object, handed to it as const; what it changes, httplib then acts on.
    s.set_pre_routing_handler([](const httplib::Request& creq, httplib::Response& res) {
        auto& req = const_cast<httplib::Request&>(creq);
        // The body limit httplib enforces covers Content-Length only: a chunked body, or one read
        // until the client closes (any other Transfer-Encoding), would be read whole. Chunked
        // bodies are bounded by the POST/PUT route's reader below; nothing else is taken.
        if (req.has_header("Transfer-Encoding")) {
            const bool chunked = req.get_header_value("Transfer-Encoding") == "chunked";
            if (!chunked || (req.method != "POST" && req.method != "PUT")) {
                fail(res, chunked ? 400 : 501,
                     chunked ? "a chunked body is accepted on POST and PUT only"
                             : "the only transfer coding accepted is chunked",
                     true);
                return httplib::Server::HandlerResponse::Handled;
            }
        }
        // httplib builds a multipart body for every range asked for: a few kilobytes of "0-,0-,..."
        // would make it hundreds of megabytes. A server may ignore Range, so a request for several
        // gets the whole content. An API answer is never cut: httplib would send part of it as 200.
        if (req.ranges.size() > 1 || req.path.rfind("/api/", 0) == 0) req.ranges.clear();
        // httplib inflates a gzip or brotli body with no bound (the body limit applies to the
        // compressed bytes): a few hundred bytes became gigabytes. Such a body is read as it came,
        // within the limit, and the route refuses it.
        if (req.has_header("Content-Encoding")) {
            const std::string coding = req.get_header_value("Content-Encoding");
            req.headers.erase("Content-Encoding");
            if (coding != "identity") req.headers.emplace(encoded_header, coding);
        }
        // A request with neither length nor chunked coding has no body (RFC 9112 6.3); httplib
        // refused such a POST as a bad request.
        if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding"))
            req.headers.emplace("Content-Length", "0");
        return httplib::Server::HandlerResponse::Unhandled;
    });

    const auto api_route = [&a](const httplib::Request& req, httplib::Response& res) {
        if (req.has_header(encoded_header)) {
            fail(res, 415, "compressed request bodies are not accepted");
            return;
        }
        send(res, a.handle(req.method, req.path, req.body));
    };
    // POST and PUT read their bodies themselves, so that a chunked one stops at the limit.
    const std::size_t max_body = impl_->options.bounds.max_body_bytes;
    const auto api_body_route = [&a, max_body](const httplib::Request& req, httplib::Response& res,
                                               const httplib::ContentReader& read) {
        std::string body;
        // A declared length is judged before reading (httplib stops at its limit without saying
        // so); a chunked body as it arrives.
        bool too_big = false;
        if (req.has_header("Content-Length")) {
            const std::string declared = req.get_header_value("Content-Length");
            std::uint64_t n = 0;
            const auto [end, ec] = std::from_chars(declared.data(), declared.data() + declared.size(), n);
            too_big = ec != std::errc{} || n > max_body; // httplib refused a malformed one already
        }
        const bool read_ok = too_big || read([&](const char* data, std::size_t n) {
                                 if (n > max_body - body.size()) {
                                     too_big = true;
                                     return false;
                                 }
                                 body.append(data, n);
                                 return true;
                             });
        if (!read_ok && !too_big) {
            fail(res, 400, "the request body could not be read", true);
            return;
        }
        if (too_big) {
            fail(res, 413, "request body too large", true); // the rest of the body is still on the wire
            return;
        }
        if (req.has_header(encoded_header)) {
            fail(res, 415, "compressed request bodies are not accepted");
            return;
        }
        send(res, a.handle(req.method, req.path, body));
    };
    s.Get(R"(/api/.*)", api_route);
    s.Post(R"(/api/.*)", api_body_route);
    s.Put(R"(/api/.*)", api_body_route);
    s.Delete(R"(/api/.*)", api_route);
    s.Get(R"(/.*)", [](const httplib::Request& req, httplib::Response& res) {
        const std::string path = req.path == "/" ? "/index.html" : req.path;
        for (const asset& f : assets()) {
            if (f.path == path) {
                res.set_header("Cache-Control", "no-cache");
                res.set_content(f.data.data(), f.data.size(), std::string(content_type(path)).c_str());
                return;
            }
        }
        if (path == "/favicon.ico") { // browsers ask on their own; no icon, and no error
            res.status = 204;
            return;
        }
        fail(res, 404, "no such file");
    });
    // Whatever httplib answered on its own (404 for other methods, 413, 400 for a broken request)
    // gets a JSON error body when the route set none.
    s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return;
        fail(res, res.status,
             res.status == 413   ? "request body too large"
             : res.status == 404 ? "no such route"
                                 : "bad request");
    });
    s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        fail(res, 500, "internal error");
    });
}

http_server::~http_server() { stop(); }

int http_server::start() {
    auto& s = impl_->server;
    const int port =
        impl_->options.port == 0
            ? s.bind_to_any_port(impl_->options.bind)
            : (s.bind_to_port(impl_->options.bind, impl_->options.port) ? impl_->options.port : -1);
    if (port < 0)
        throw std::runtime_error("cannot listen on " + impl_->options.bind + ":" +
                                 std::to_string(impl_->options.port));
    // The socket listens from here on: connections queue until the loop accepts them.
    std::atomic<bool>& ended = impl_->loop_ended;
    impl_->thread = std::thread([&s, &ended] {
        s.listen_after_bind();
        ended = true;
    });
    // httplib's stop() does nothing until the loop has marked itself running: a stop() right
    // after start() left the loop blocked in accept() and the join waiting for ever.
    while (!s.is_running() && !ended)
        std::this_thread::yield();
    return port;
}

void http_server::stop() noexcept {
    if (!impl_ || !impl_->thread.joinable()) return;
    impl_->server.stop();
    impl_->thread.join();
}

api& http_server::the_api() noexcept { return impl_->the_api; }

int serve_command(const serve_options& options) {
    // SIGINT and SIGTERM are taken by sigwait below, so they are blocked before any thread starts
    // (threads inherit the mask) and the server stops cleanly.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    try {
        http_server server(options);
        const int port = server.start();
        const std::string host =
            options.bind.find(':') != std::string::npos ? "[" + options.bind + "]" : options.bind;
        std::printf("strata-lab serve: http://%s:%d/  (Ctrl-C stops it)\n", host.c_str(), port);
        if (!assets_have_uplot())
            std::printf("strata-lab serve: built without uPlot (npm was missing): the page has no plots\n");
        std::fflush(stdout);
        int sig = 0;
        sigwait(&set, &sig);
        // stop() waits for requests in flight, and a client sending one byte at a time holds its
        // worker until the read times out, again and again. A second Ctrl-C ends the process.
        std::signal(SIGINT, SIG_DFL);
        std::signal(SIGTERM, SIG_DFL);
        pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
        std::printf("strata-lab serve: stopping (Ctrl-C again to quit at once)\n");
        std::fflush(stdout);
        server.stop();
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strata-lab serve: %s\n", e.what());
        return 1;
    }
}

} // namespace strata::lab::serve
