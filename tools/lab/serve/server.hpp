#pragma once
// strata-lab serve: the live lab's HTTP/1.1 server over the JSON API (api.hpp) and the embedded
// page: one event-loop thread owns every socket, a worker pool answers complete API requests.
// Exports serve_options, http_server, serve_command. See docs/live-lab.md.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "api.hpp"

namespace strata::lab::serve {

/// Options of `strata-lab serve`.
struct serve_options {
    std::string bind = "127.0.0.1"; ///< the address to listen on; another only when asked (--bind)
    int port = 8080;                ///< 0: any free port
    limits bounds;                  ///< the API's limits
    int threads = 4;                ///< worker threads answering API requests (1-64)
    /// Open connections at most; a new one beyond closes the idlest (an idle keep-alive one first).
    std::size_t max_connections = 128;
    /// A request that has started must be complete within this (else 408 and the connection closes).
    std::chrono::milliseconds request_timeout{10'000};
    /// A connection with no request in progress is closed after this long.
    std::chrono::milliseconds idle_timeout{60'000};
    /// Host names answered to besides the bound address's own (http_host.hpp), e.g. a machine name.
    std::vector<std::string> allowed_hosts;
};

/// An HTTP server on its own threads (an event loop and `threads` workers). Not copyable; stop()
/// (or the destructor) ends it.
class http_server {
public:
    /// Effects: a server that has not started. `clock` (tests) replaces the session clock.
    explicit http_server(serve_options options, api::clock_fn clock = {});
    ~http_server();
    http_server(const http_server&) = delete;
    http_server& operator=(const http_server&) = delete;

    /// Effects: binds and starts answering on background threads.
    /// Returns: the bound port. Throws: std::runtime_error when the address cannot be bound;
    /// std::logic_error when called a second time or after stop() (a server runs once).
    int start();
    /// Effects: closes every connection, waits for the API calls in flight (their replies are
    /// dropped) and joins the threads. Idempotent; also safe when start() was never called or threw.
    void stop() noexcept;
    /// Returns: the API (tests inspect the session count).
    [[nodiscard]] api& the_api() noexcept;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

/// Effects: serves until the process is stopped, printing the URL. Returns: an exit code (1 when
/// the address cannot be bound).
int serve_command(const serve_options& options);

} // namespace strata::lab::serve
