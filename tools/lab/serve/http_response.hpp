#pragma once
// strata-lab serve: an HTTP/1.1 reply as the server sends it: the status line and headers
// (response_head), a JSON error body (error_body) and reason phrases.
#include <cstddef>
#include <string>
#include <string_view>

namespace strata::lab::serve {

/// What the server answers: a status, a body (owned, or a view of an embedded asset) and its type.
struct http_response {
    int status = 200;                                   ///< the status code; 1xx is interim
    std::string_view content_type = "application/json"; ///< the Content-Type (static text)
    std::string body;                                   ///< the body, when owned
    std::string_view static_body; ///< the body, when it lives for ever (an asset); used when `body` is empty
    bool no_cache = false;        ///< adds Cache-Control: no-cache
    bool close = false;           ///< the connection closes after this reply

    /// Returns: the bytes of the body.
    [[nodiscard]] std::string_view payload() const noexcept {
        return body.empty() ? static_body : std::string_view(body);
    }
};

/// Returns: the reason phrase of `status` ("Not Found"), or "Status" for one the lab never sends.
[[nodiscard]] std::string_view reason_phrase(int status) noexcept;

/// Returns: `{"error": message}` with `message` escaped as a JSON string.
[[nodiscard]] std::string error_body(std::string_view message);

/// Returns: an error reply: `status` with error_body(message); `close` ends the connection after it.
[[nodiscard]] http_response error_response(int status, std::string_view message, bool close = false);

/// Returns: the status line and headers of `r` with a body of `content_length` bytes, ending in the
/// empty line. A 1xx or 204 reply has no Content-Length.
[[nodiscard]] std::string response_head(const http_response& r, std::size_t content_length);

} // namespace strata::lab::serve
