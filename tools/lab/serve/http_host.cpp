// strata-lab serve: the Host / Origin / Sec-Fetch-Site checks (http_host.hpp).
#include "http_host.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdint>

namespace strata::lab::serve {

namespace {

std::string lowered(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
    return out;
}

bool is_ipv4(std::string_view s) {
    if (s.empty() || s.size() > 15) return false;
    const std::string z(s);
    in_addr a{};
    return inet_pton(AF_INET, z.c_str(), &a) == 1;
}

/// `s` is "[v6 literal]".
bool is_bracketed_ipv6(std::string_view s) {
    if (s.size() < 3 || s.size() > 47 || s.front() != '[' || s.back() != ']') return false;
    const std::string z(s.substr(1, s.size() - 2));
    in6_addr a{};
    return inet_pton(AF_INET6, z.c_str(), &a) == 1;
}

} // namespace

host_policy::host_policy(std::string address, int port, std::vector<std::string> extra) : port_(port) {
    in_addr v4{};
    in6_addr v6{};
    if (inet_pton(AF_INET, address.c_str(), &v4) == 1) {
        const std::uint32_t a = ntohl(v4.s_addr);
        wildcard_ = a == 0;
        loopback_ = (a >> 24) == 127;
        address_ = address;
    } else if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) {
        wildcard_ = IN6_IS_ADDR_UNSPECIFIED(&v6);
        loopback_ = IN6_IS_ADDR_LOOPBACK(&v6);
        address_ = "[" + address + "]";
    } else {
        address_ = address;
    }
    address_ = lowered(address_);
    for (const std::string& e : extra)
        extra_.push_back(lowered(e));
}

bool host_policy::name_allowed(std::string_view name) const {
    const std::string n = lowered(name);
    if (n == address_ || std::find(extra_.begin(), extra_.end(), n) != extra_.end()) return true;
    if (loopback_) return n == "localhost" || n == "127.0.0.1" || n == "[::1]";
    if (wildcard_) return n == "localhost" || is_ipv4(n) || is_bracketed_ipv6(n);
    return false;
}

bool host_policy::host_allowed(std::string_view host) const {
    // name[:port], name an IPv6 literal in brackets or a name without ':'.
    std::string_view name = host, port;
    const std::size_t close = host.rfind(']');
    const std::size_t colon = host.rfind(':');
    if (colon != std::string_view::npos && (close == std::string_view::npos || colon > close)) {
        name = host.substr(0, colon);
        port = host.substr(colon + 1);
        if (port.empty() || port.size() > 5 ||
            !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return false;
    }
    if (name.empty() || (name.front() != '[' && name.find(':') != std::string_view::npos)) return false;
    const int p = port.empty() ? 80 : std::stoi(std::string(port));
    return p == port_ && name_allowed(name);
}

bool host_policy::origin_allowed(std::string_view origin) const {
    constexpr std::string_view scheme = "http://";
    if (origin.size() <= scheme.size() || lowered(origin.substr(0, scheme.size())) != scheme) return false;
    const std::string_view host = origin.substr(scheme.size());
    if (host.find('/') != std::string_view::npos) return false;
    return host_allowed(host);
}

std::string_view host_policy::refusal(const http_request& r) const {
    // Every copy of a header is judged: a second Origin or Sec-Fetch-Site cannot hide behind a
    // first that passes.
    bool cross_site = false, navigation = r.method == "GET" || r.method == "HEAD", has_mode = false;
    for (const auto& [name, value] : r.headers) {
        if (name == "host" && !host_allowed(value)) return "this server does not answer to that Host";
        if (name == "origin" && !origin_allowed(value)) return "cross-origin requests are not accepted";
        if (name == "sec-fetch-site") cross_site = cross_site || lowered(value) == "cross-site";
        if (name == "sec-fetch-mode") {
            has_mode = true;
            navigation = navigation && lowered(value) == "navigate";
        }
    }
    if (cross_site && !(navigation && has_mode)) return "cross-site requests are not accepted";
    return {};
}

} // namespace strata::lab::serve
