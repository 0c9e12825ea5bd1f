#pragma once
// strata-lab serve: the JSON API, independent of the HTTP layer so it can be driven directly.
//
//   POST /api/session                       -> 201 {"session": ID, "ttl_s", "limits"}
//   GET  /api/info                          -> {"demos": [...], "uplot": bool, "limits"}
//   POST /api/<demo>/<op>  {"session": ID, ...arguments}
//        -> 200 {"ok": bool, "result": {...}, "state": {...}}   (ok false: the allocator said no,
//           e.g. out of memory; the state is unchanged and still returned)
//        -> 400 {"error": "..."} bad arguments, 404 unknown route or unknown/expired session,
//           409 session memory bound reached, 503 too many sessions.
// See docs/live-lab.md for every demo's operations and state.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace strata::lab::serve {

/// The bounds of the API; every request is validated against them.
struct limits {
    std::size_t max_sessions = 64;             ///< live sessions at once
    std::chrono::seconds session_ttl{15 * 60}; ///< idle time after which a session expires
    /// When max_sessions are live, a new session replaces the least recently used one idle this
    /// long (its page makes itself a new one on its next call), so reloads cannot lock others out.
    std::chrono::seconds evict_idle{60};
    std::size_t max_body_bytes = 16 * 1024;              ///< request bodies above this get 413
    std::size_t session_bytes = std::size_t{1} << 20;    ///< allocator memory one session may hold
    std::size_t max_request_size = std::size_t{1} << 20; ///< largest size argument accepted at all
    std::size_t max_batch = 64;                          ///< operations one request may ask for
};

/// An error the API answers with `status` and {"error": what()}.
class api_error : public std::runtime_error {
public:
    /// Effects: an error with HTTP status `status` and message `message`.
    api_error(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
    /// Returns: the HTTP status to answer with.
    [[nodiscard]] int status() const noexcept { return status_; }

private:
    int status_;
};

/// One answer: an HTTP status and a JSON body.
struct reply {
    int status = 200;
    std::string body;
};

class session_store;

/// The API: routes a request to a session's demo and serializes the answer. Thread-safe: requests
/// of different sessions run in parallel, requests of one session one at a time.
class api {
public:
    /// A clock the store reads; tests substitute one to expire sessions without waiting.
    using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

    /// Effects: an API with no sessions. `uplot` says whether the plotting library is served.
    explicit api(limits l = {}, bool uplot = false, clock_fn clock = {});
    ~api();
    api(const api&) = delete;
    api& operator=(const api&) = delete;

    /// Returns: the answer to `method` `path` with `body`. Never throws: every failure is a reply
    /// with a 4xx/5xx status and {"error": ...}.
    [[nodiscard]] reply handle(std::string_view method, std::string_view path,
                               std::string_view body) noexcept;

    /// Returns: the limits this API enforces.
    [[nodiscard]] const limits& bounds() const noexcept { return limits_; }
    /// Returns: the number of live (unexpired) sessions; expired ones are dropped first.
    [[nodiscard]] std::size_t session_count();

private:
    limits limits_;
    bool uplot_;
    std::unique_ptr<session_store> sessions_;
};

} // namespace strata::lab::serve
