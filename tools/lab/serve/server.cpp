// strata-lab serve: the HTTP/1.1 server (server.hpp). One event-loop thread owns every socket
// (non-blocking accept, read and write over epoll); it parses requests within their caps
// (http_request.hpp), checks Host and Origin (http_host.hpp), answers the page's files and every
// refusal itself, and hands complete API requests to `threads` workers, whose replies come back
// through an eventfd. An idle connection costs a table entry and its socket, never a thread.
#include "server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "assets.hpp"
#include "http_host.hpp"
#include "http_request.hpp"
#include "http_response.hpp"

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

namespace {

using clock = std::chrono::steady_clock;

constexpr std::size_t read_chunk = 16 * 1024; // bytes read from a socket at a time
// After a refusal that closes the connection, what the client still sends is read and dropped
// for a while (so that the close does not reset the connection before the client read the
// refusal), within these bounds.
constexpr std::size_t drain_bytes = std::size_t{1} << 20;
constexpr auto drain_time = std::chrono::seconds(2);
constexpr auto write_timeout = std::chrono::seconds(10); // a reply that makes no progress this long
constexpr auto sweep_every = std::chrono::milliseconds(100);
constexpr std::uint64_t listen_key = 0, wake_key = 1;

enum class phase {
    reading,  ///< waiting for (the rest of) a request
    working,  ///< a worker has the request; the socket is not watched
    writing,  ///< a reply (or a 100 Continue) is being written; nothing is read meanwhile
    draining, ///< the reply was the last: reading and dropping until the client closes
};

struct connection {
    int fd = -1;
    std::uint64_t key = 0;
    phase at = phase::reading;
    std::uint32_t events = 0; // the epoll interest set
    request_parser parser;
    std::string in;             // received and not yet taken by the parser
    bool started = false;       // reading: a request has begun arriving
    bool head_only = false;     // the request was HEAD: the reply has no body
    clock::time_point since;    // reading: idle since, or the request's first byte; draining: since the reply
    clock::time_point progress; // writing: when a byte was last written
    // writing: the status line and headers, then reply's body. The one reply in progress is all
    // the output a connection holds: its next request is not read before the reply is written.
    std::string head;
    http_response reply;
    std::size_t sent = 0; // bytes of head + body written
    std::size_t drained = 0;

    explicit connection(const http_limits& l) : parser(l) {}
};

struct job {
    std::uint64_t key;
    std::string method, path, body;
    bool keep_alive;
};

struct result {
    std::uint64_t key;
    http_response response;
};

bool is_api_method(std::string_view m) noexcept {
    return m == "GET" || m == "HEAD" || m == "POST" || m == "PUT" || m == "DELETE";
}

bool is_identity(std::string_view coding) noexcept {
    constexpr std::string_view id = "identity";
    if (coding.size() != id.size()) return false;
    for (std::size_t i = 0; i < id.size(); ++i)
        if ((coding[i] | 0x20) != id[i]) return false;
    return true;
}

http_response static_file(const http_request& r) {
    const std::string_view path = r.path == "/" ? std::string_view("/index.html") : std::string_view(r.path);
    for (const asset& f : assets()) {
        if (f.path == path) {
            http_response out;
            out.content_type = content_type(path);
            out.static_body = f.data;
            out.no_cache = true;
            return out;
        }
    }
    if (path == "/favicon.ico") { // browsers ask on their own; no icon, and no error
        http_response out;
        out.status = 204;
        return out;
    }
    return error_response(404, "no such file");
}

} // namespace

struct http_server::impl {
    serve_options options;
    api the_api;
    http_limits limits;
    std::optional<host_policy> hosts;
    int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
    std::thread loop;
    std::vector<std::thread> workers;
    std::atomic<bool> stopping{false};

    std::mutex jobs_mutex;
    std::condition_variable jobs_ready;
    std::deque<job> jobs;      // at most one per connection
    bool workers_stop = false; // under jobs_mutex
    std::mutex results_mutex;
    std::vector<result> results;

    // Owned by the loop thread.
    std::unordered_map<std::uint64_t, std::unique_ptr<connection>> conns;
    std::vector<std::uint64_t> dead;  // closed this round, erased at its end
    std::vector<std::uint64_t> ready; // a pipelined request waits in the buffer
    std::uint64_t next_key = 2;
    bool listen_paused = false;
    clock::time_point listen_resume;

    impl(serve_options o, api::clock_fn clock)
        : options(std::move(o)), the_api(options.bounds, assets_have_uplot(), std::move(clock)) {
        limits.max_body = options.bounds.max_body_bytes;
    }

    void run();
    void accept_all(clock::time_point now);
    bool evict_one();
    void on_event(connection& c, std::uint32_t ev, clock::time_point now);
    void read_some(connection& c, clock::time_point now);
    void drain(connection& c);
    void process(connection& c, clock::time_point now);
    void dispatch(connection& c, http_request& r, clock::time_point now);
    void respond(connection& c, http_response r, clock::time_point now);
    void write_some(connection& c, clock::time_point now);
    void after_reply(connection& c, clock::time_point now);
    void deliver(clock::time_point now);
    void sweep(clock::time_point now);
    void watch(connection& c, std::uint32_t events);
    void close(connection& c);
    void work();
    void wake() const noexcept {
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof one);
    }
};

void http_server::impl::watch(connection& c, std::uint32_t events) {
    if (c.events == events) return;
    epoll_event e{};
    e.events = events;
    e.data.u64 = c.key;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &e);
    c.events = events;
}

void http_server::impl::close(connection& c) {
    if (c.fd < 0) return;
    ::close(c.fd); // leaves the epoll set with it
    c.fd = -1;
    dead.push_back(c.key);
}

void http_server::impl::run() {
    epoll_event events[64];
    clock::time_point next_sweep = clock::now() + sweep_every;
    while (!stopping.load(std::memory_order_acquire)) {
        const int n = ::epoll_wait(epoll_fd, events, 64, static_cast<int>(sweep_every.count()));
        const clock::time_point now = clock::now();
        for (int i = 0; i < n; ++i) {
            const std::uint64_t key = events[i].data.u64;
            if (key == listen_key) {
                accept_all(now);
            } else if (key == wake_key) {
                std::uint64_t count;
                [[maybe_unused]] const ssize_t r = ::read(wake_fd, &count, sizeof count);
                deliver(now);
            } else if (const auto it = conns.find(key); it != conns.end() && it->second->fd >= 0) {
                on_event(*it->second, events[i].events, now);
            }
        }
        while (!ready.empty()) { // pipelined requests, one per connection per pass
            std::vector<std::uint64_t> keys;
            keys.swap(ready);
            for (const std::uint64_t key : keys)
                if (const auto it = conns.find(key); it != conns.end() && it->second->fd >= 0)
                    process(*it->second, now);
        }
        if (now >= next_sweep) {
            sweep(now);
            next_sweep = now + sweep_every;
        }
        for (const std::uint64_t key : dead)
            conns.erase(key);
        dead.clear();
    }
    for (auto& [key, c] : conns)
        if (c->fd >= 0) ::close(c->fd);
    conns.clear();
}

bool http_server::impl::evict_one() {
    // The idlest connection that no worker holds: one draining, then one between requests, then the
    // one whose request has been arriving longest, then the one whose reply has stalled longest (a
    // client that does not read cannot hold its place for ever).
    connection* best = nullptr;
    const auto rank = [](const connection& c) {
        switch (c.at) {
        case phase::draining: return 0;
        case phase::reading: return c.started ? 2 : 1;
        default: return 3;
        }
    };
    const auto last = [](const connection& c) { return c.at == phase::writing ? c.progress : c.since; };
    for (auto& [key, c] : conns) {
        if (c->fd < 0 || c->at == phase::working) continue;
        if (!best || rank(*c) < rank(*best) || (rank(*c) == rank(*best) && last(*c) < last(*best)))
            best = c.get();
    }
    if (!best) return false;
    close(*best);
    return true;
}

void http_server::impl::accept_all(clock::time_point now) {
    for (int i = 0; i < 64; ++i) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                // Out of descriptors: make room, or stop accepting for a moment (the listening
                // socket would otherwise report ready at once, for ever).
                if (!evict_one()) {
                    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
                    listen_paused = true;
                    listen_resume = now + std::chrono::milliseconds(100);
                }
            }
            return;
        }
        if (conns.size() - dead.size() >= options.max_connections && !evict_one()) {
            ::close(fd);
            continue;
        }
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        auto c = std::make_unique<connection>(limits);
        c->fd = fd;
        c->key = next_key++;
        c->since = now;
        c->events = EPOLLIN;
        epoll_event e{};
        e.events = EPOLLIN;
        e.data.u64 = c->key;
        if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &e) != 0) {
            ::close(fd);
            continue;
        }
        conns.emplace(c->key, std::move(c));
    }
}

void http_server::impl::on_event(connection& c, std::uint32_t ev, clock::time_point now) {
    if (ev & EPOLLERR) return close(c);
    switch (c.at) {
    case phase::draining: return drain(c);
    case phase::reading:
        if (ev & (EPOLLIN | EPOLLHUP)) read_some(c, now);
        return;
    case phase::writing:
        if (ev & (EPOLLOUT | EPOLLHUP)) write_some(c, now);
        return;
    case phase::working:
        if (ev & EPOLLHUP) close(c); // the client is gone; the worker's reply is dropped
        return;
    }
}

void http_server::impl::read_some(connection& c, clock::time_point now) {
    char buf[read_chunk];
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) return close(c); // closed (a partial request is abandoned) or reset
    if (!c.started) {
        c.started = true;
        c.since = now; // the request's clock starts with its first byte
    }
    c.in.append(buf, static_cast<std::size_t>(n));
    process(c, now);
}

void http_server::impl::drain(connection& c) {
    char buf[read_chunk];
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) return close(c);
    c.drained += static_cast<std::size_t>(n);
    if (c.drained > drain_bytes) close(c);
}

void http_server::impl::process(connection& c, clock::time_point now) {
    if (c.at != phase::reading) return;
    const auto [st, taken] = c.parser.parse(c.in);
    c.in.erase(0, taken);
    switch (st) {
    case request_parser::status::need_more:
        // The headers asked for a go-ahead before the body: an interim reply, written like any other.
        if (c.parser.take_continue()) {
            http_response go;
            go.status = 100;
            return respond(c, std::move(go), now);
        }
        return watch(c, EPOLLIN);
    case request_parser::status::failed:
        c.in.clear();
        c.head_only = false;
        return respond(c, error_response(c.parser.error_status(), c.parser.error_message(), true), now);
    case request_parser::status::complete: return dispatch(c, c.parser.request(), now);
    }
}

void http_server::impl::dispatch(connection& c, http_request& r, clock::time_point now) {
    c.head_only = r.method == "HEAD";
    const bool close_after = !r.keep_alive;
    if (const std::string_view why = hosts->refusal(r); !why.empty())
        return respond(c, error_response(403, why, close_after), now);
    http_response out;
    if (r.path.rfind("/api/", 0) == 0) {
        if (!is_api_method(r.method)) {
            out = error_response(404, "no such route");
        } else if (const std::string* coding = r.header("content-encoding");
                   coding && !is_identity(*coding)) {
            // A compressed body is not inflated (a few hundred bytes can inflate to gigabytes).
            out = error_response(415, "compressed request bodies are not accepted");
        } else {
            c.at = phase::working;
            watch(c, 0);
            {
                const std::lock_guard lock(jobs_mutex);
                jobs.push_back({c.key, c.head_only ? std::string("GET") : std::move(r.method),
                                std::move(r.path), std::move(r.body), r.keep_alive});
            }
            jobs_ready.notify_one();
            return;
        }
    } else if (r.method == "GET" || r.method == "HEAD") {
        out = static_file(r);
    } else {
        out = error_response(404, "no such route");
    }
    out.close = out.close || close_after;
    respond(c, std::move(out), now);
}

void http_server::impl::respond(connection& c, http_response r, clock::time_point now) {
    c.head = response_head(r, r.payload().size());
    c.reply = std::move(r);
    c.sent = 0;
    c.at = phase::writing;
    c.progress = now;
    write_some(c, now);
}

void http_server::impl::write_some(connection& c, clock::time_point now) {
    const std::string_view body = c.head_only ? std::string_view() : c.reply.payload();
    const std::size_t total = c.head.size() + body.size();
    while (c.sent < total) {
        iovec iov[2];
        int count = 0;
        if (c.sent < c.head.size()) iov[count++] = {c.head.data() + c.sent, c.head.size() - c.sent};
        const std::size_t body_sent = c.sent > c.head.size() ? c.sent - c.head.size() : 0;
        if (body_sent < body.size())
            iov[count++] = {const_cast<char*>(body.data()) + body_sent, body.size() - body_sent};
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = static_cast<std::size_t>(count);
        const ssize_t n = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return watch(c, EPOLLOUT);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return close(c);
        c.sent += static_cast<std::size_t>(n);
        c.progress = now;
    }
    after_reply(c, now);
}

void http_server::impl::after_reply(connection& c, clock::time_point now) {
    const bool interim = c.reply.status < 200, last = c.reply.close;
    c.reply = http_response{};
    c.head.clear();
    if (interim) { // after 100 Continue the same request goes on, on its own clock
        c.at = phase::reading;
        return watch(c, EPOLLIN);
    }
    c.parser.reset();
    c.since = now;
    if (last) {
        // Our side ends here; what the client still sends is dropped until it closes.
        ::shutdown(c.fd, SHUT_WR);
        c.in.clear();
        c.at = phase::draining;
        c.drained = 0;
        return watch(c, EPOLLIN);
    }
    c.at = phase::reading;
    c.started = !c.in.empty(); // a pipelined request's bytes are here already
    if (c.in.empty() && c.in.capacity() > 2 * read_chunk) std::string().swap(c.in);
    if (c.started) ready.push_back(c.key); // parsed by the loop, not here: no recursion
    watch(c, EPOLLIN);
}

void http_server::impl::deliver(clock::time_point now) {
    std::vector<result> done;
    {
        const std::lock_guard lock(results_mutex);
        done.swap(results);
    }
    for (result& r : done) {
        const auto it = conns.find(r.key);
        if (it == conns.end() || it->second->fd < 0 || it->second->at != phase::working) continue;
        respond(*it->second, std::move(r.response), now);
    }
}

void http_server::impl::sweep(clock::time_point now) {
    if (listen_paused && now >= listen_resume) {
        epoll_event e{};
        e.events = EPOLLIN;
        e.data.u64 = listen_key;
        ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &e);
        listen_paused = false;
    }
    std::vector<connection*> late; // a request that has taken too long gets 408 (after the scan)
    for (auto& [key, c] : conns) {
        if (c->fd < 0) continue;
        const auto age = now - c->since;
        switch (c->at) {
        case phase::reading:
            if (c->started && age > options.request_timeout)
                late.push_back(c.get());
            else if (!c->started && age > options.idle_timeout)
                close(*c);
            break;
        case phase::writing:
            if (now - c->progress > write_timeout) close(*c);
            break;
        case phase::draining:
            if (age > drain_time) close(*c);
            break;
        case phase::working: break;
        }
    }
    for (connection* c : late) {
        c->in.clear();
        c->head_only = false;
        respond(*c, error_response(408, "the request took too long to arrive", true), now);
    }
}

void http_server::impl::work() {
    for (;;) {
        job j;
        {
            std::unique_lock lock(jobs_mutex);
            jobs_ready.wait(lock, [&] { return workers_stop || !jobs.empty(); });
            if (workers_stop) return;
            j = std::move(jobs.front());
            jobs.pop_front();
        }
        reply r = the_api.handle(j.method, j.path, j.body);
        http_response out;
        out.status = r.status;
        out.body = std::move(r.body);
        out.close = !j.keep_alive;
        {
            const std::lock_guard lock(results_mutex);
            results.push_back({j.key, std::move(out)});
        }
        wake();
    }
}

http_server::http_server(serve_options options, api::clock_fn clock)
    : impl_(std::make_unique<impl>(std::move(options), std::move(clock))) {}

http_server::~http_server() { stop(); }

int http_server::start() {
    impl& m = *impl_;
    if (m.loop.joinable() || m.stopping.load())
        throw std::logic_error("http_server::start called twice, or after stop");
    const std::string where = m.options.bind + ":" + std::to_string(m.options.port);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (::getaddrinfo(m.options.bind.empty() ? nullptr : m.options.bind.c_str(),
                      std::to_string(m.options.port).c_str(), &hints, &found) != 0)
        throw std::runtime_error("cannot listen on " + where + " (unknown address)");
    for (addrinfo* a = found; a && m.listen_fd < 0; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        // SO_REUSEADDR lets a restart bind while old connections linger. Not SO_REUSEPORT: with it,
        // a second server on the port would start and the kernel would split the page's requests
        // between the two (each with its own sessions).
        const int yes = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0)
            m.listen_fd = fd;
        else
            ::close(fd);
    }
    ::freeaddrinfo(found);
    if (m.listen_fd < 0) throw std::runtime_error("cannot listen on " + where);

    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(m.listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
    char text[INET6_ADDRSTRLEN] = {};
    int port = 0;
    if (bound.ss_family == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&bound);
        ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
        port = ntohs(a->sin6_port);
    } else {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&bound);
        ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
        port = ntohs(a->sin_port);
    }
    m.hosts.emplace(text, port, m.options.allowed_hosts);

    m.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    m.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u64 = listen_key;
    const bool ok =
        m.epoll_fd >= 0 && m.wake_fd >= 0 && ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.listen_fd, &e) == 0;
    e.data.u64 = wake_key;
    if (!ok || ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.wake_fd, &e) != 0) {
        for (int* fd : {&m.listen_fd, &m.epoll_fd, &m.wake_fd})
            if (*fd >= 0) ::close(*fd), *fd = -1;
        throw std::runtime_error("cannot set up the event loop");
    }
    const int threads = m.options.threads < 1 ? 1 : m.options.threads > 64 ? 64 : m.options.threads;
    for (int i = 0; i < threads; ++i)
        m.workers.emplace_back([&m] { m.work(); });
    m.loop = std::thread([&m] { m.run(); });
    return port;
}

void http_server::stop() noexcept {
    if (!impl_) return;
    impl& m = *impl_;
    m.stopping.store(true, std::memory_order_release);
    if (m.loop.joinable()) {
        m.wake();
        m.loop.join();
    }
    {
        const std::lock_guard lock(m.jobs_mutex);
        m.workers_stop = true;
        m.jobs.clear();
    }
    m.jobs_ready.notify_all();
    for (std::thread& w : m.workers)
        w.join();
    m.workers.clear();
    for (int* fd : {&m.listen_fd, &m.epoll_fd, &m.wake_fd})
        if (*fd >= 0) ::close(*fd), *fd = -1;
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
        // stop() waits for the API calls in flight (a measurement can take a second or two); a
        // second Ctrl-C ends the process at once.
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
