#pragma once
// strata-lab serve: an HTTP/1.1 request and its incremental parser, which applies every cap while
// the bytes arrive (no sockets: server.cpp feeds it). Exports http_limits, http_request,
// request_parser.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::lab::serve {

/// The caps a request is read within. Each is checked as bytes arrive, so a line or body never
/// grows past its cap in memory.
struct http_limits {
    std::size_t max_request_line = 8 * 1024;  ///< longer: 414
    std::size_t max_header_line = 8 * 1024;   ///< one header line longer: 431
    std::size_t max_header_bytes = 64 * 1024; ///< all header lines (and trailers) together: 431
    std::size_t max_headers = 100;            ///< header lines (and trailers): 431
    std::size_t max_body = 16 * 1024;         ///< a declared or received body above this: 413
};

/// A complete request.
struct http_request {
    std::string method; ///< as sent ("GET")
    std::string target; ///< as sent ("/api/info?x=1")
    std::string path;   ///< the target before '?', percent-decoded ("/api/info")
    int minor = 1;      ///< HTTP/1.minor (0 or 1)
    std::vector<std::pair<std::string, std::string>> headers; ///< names in lower case, values trimmed
    std::string body;                                         ///< the body, de-chunked
    bool keep_alive = true; ///< false for HTTP/1.0 and for `Connection: close`

    /// Returns: the value of the first header named `lower_name` (lower case), or nullptr.
    [[nodiscard]] const std::string* header(std::string_view lower_name) const noexcept;
};

/// Parses one request at a time from the bytes a connection receives.
class request_parser {
public:
    /// Where parse() stopped.
    enum class status {
        need_more, ///< the request is not complete; everything given was taken
        complete,  ///< request() is ready; bytes after it were not taken
        failed     ///< the request is refused: error_status() and error_message() say why
    };

    /// Effects: a parser waiting for a request line, applying `limits`.
    explicit request_parser(http_limits limits = {}) noexcept : limits_(limits) {}

    /// Effects: takes bytes from the front of `data` (parse may be called again with more).
    /// Returns: the status and the number of bytes taken; only whole lines are taken, except body
    /// bytes, so the caller keeps the rest and passes it again with what arrives next. A partial
    /// line longer than its cap fails at once.
    std::pair<status, std::size_t> parse(std::string_view data);

    /// Returns: true when the headers are complete, a body is awaited and the client sent
    /// `Expect: 100-continue`: the server answers "100 Continue" once. Cleared by its first call.
    [[nodiscard]] bool take_continue() noexcept;
    /// Returns: the parsed request (after complete); moved out by the caller.
    [[nodiscard]] http_request& request() noexcept { return request_; }
    /// Returns: the HTTP status for a failed request (400, 413, 414, 431, 501, 505).
    [[nodiscard]] int error_status() const noexcept { return error_status_; }
    /// Returns: why the request was refused.
    [[nodiscard]] const std::string& error_message() const noexcept { return error_message_; }
    /// Effects: ready for the next request.
    void reset() noexcept;

private:
    enum class state {
        request_line,
        headers,
        body,
        chunk_size,
        chunk_data,
        chunk_end,
        trailers,
        done,
        failed
    };

    status fail(int http_status, std::string message);
    status on_request_line(std::string_view line);
    status on_field_line(std::string_view line, bool keep); // a header (kept) or trailer line
    status on_headers_end();
    status on_chunk_size(std::string_view line);

    http_limits limits_;
    state state_ = state::request_line;
    http_request request_;
    std::size_t header_bytes_ = 0; // header (and trailer) lines so far, with their line ends
    std::size_t header_count_ = 0; // header (and trailer) lines so far
    std::size_t body_left_ = 0;    // body or chunk bytes still to come
    std::size_t empty_lines_ = 0;  // empty lines skipped before the request line
    bool want_continue_ = false;
    int error_status_ = 0;
    std::string error_message_;
};

} // namespace strata::lab::serve
