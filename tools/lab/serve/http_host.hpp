#pragma once
// strata-lab serve: which requests come from the lab's own page. The Host header must name the
// server (a DNS-rebound name does not), an Origin must be one of those names over http, and a
// browser's Sec-Fetch-Site must not say cross-site. Exports host_policy.
#include <string>
#include <string_view>
#include <vector>

#include "http_request.hpp"

namespace strata::lab::serve {

/// The names the server answers to, from the address it is bound to:
/// - a loopback address (127.0.0.0/8, ::1): `localhost`, `127.0.0.1`, `[::1]` and the address;
/// - a wildcard (0.0.0.0, ::): `localhost` and any IP literal (an IP literal cannot be rebound);
/// - any other address: that address;
/// plus the names given in `extra` (`--allow-host`), each with the bound port. A Host without a
/// port means port 80. Names compare case-insensitively; a trailing dot makes another name.
class host_policy {
public:
    /// Effects: the policy of a server bound to `address` (numeric, as inet_ntop writes it) and
    /// `port`, also accepting the names in `extra`.
    host_policy(std::string address, int port, std::vector<std::string> extra = {});

    /// Returns: true when `host` (a Host header value) names this server.
    [[nodiscard]] bool host_allowed(std::string_view host) const;
    /// Returns: true when `origin` (an Origin header value) is `http://` and an allowed host.
    [[nodiscard]] bool origin_allowed(std::string_view origin) const;
    /// Returns: why `r` is refused (403), or "" when it may be served: a Host that is not this
    /// server's; an Origin that is not this server's; `Sec-Fetch-Site: cross-site`, except on a
    /// top-level navigation (GET or HEAD with `Sec-Fetch-Mode: navigate`: a link to the page).
    /// Every copy of each of these headers is judged, not only the first.
    [[nodiscard]] std::string_view refusal(const http_request& r) const;

private:
    bool name_allowed(std::string_view name) const;

    std::string address_; // as in a Host header: IPv6 in brackets
    int port_;
    bool wildcard_ = false;
    bool loopback_ = false;
    std::vector<std::string> extra_;
};

} // namespace strata::lab::serve
