#pragma once
// strata-lab serve: the live lab's HTTP server (cpp-httplib) over the JSON API (api.hpp) and the
// embedded page. See docs/live-lab.md.
#include <memory>
#include <string>

#include "api.hpp"

namespace strata::lab::serve {

/// Options of `strata-lab serve`.
struct serve_options {
    std::string bind = "127.0.0.1"; ///< the address to listen on; another only when asked (--bind)
    int port = 8080;                ///< 0: any free port
    limits bounds;                  ///< the API's limits
    int threads = 4;                ///< worker threads answering requests
};

/// An HTTP server on its own thread. Not copyable; stop() (or the destructor) ends it.
class http_server {
public:
    /// Effects: a server that has not started. `clock` (tests) replaces the session clock.
    explicit http_server(serve_options options, api::clock_fn clock = {});
    ~http_server();
    http_server(const http_server&) = delete;
    http_server& operator=(const http_server&) = delete;

    /// Effects: binds and starts answering on a background thread.
    /// Returns: the bound port. Throws: std::runtime_error when the address cannot be bound.
    int start();
    /// Effects: stops answering and joins the thread. Idempotent.
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
