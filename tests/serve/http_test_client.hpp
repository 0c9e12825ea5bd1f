#pragma once
// A small blocking HTTP/1.1 client over raw sockets for the live-lab server tests: keep-alive
// requests (`client`), raw exchanges, reading one reply, the process's resident size, and whether
// a sanitizer is on. Exports strata_test_http::*.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/build_kind.hpp"

namespace strata_test_http {

/// True under AddressSanitizer or ThreadSanitizer: timing and resident-size checks are relaxed
/// there, and loads are smaller.
using strata::test::sanitized;

/// One HTTP reply: status, headers (names in lower case) and body.
struct http_reply {
    int status = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;

    /// Returns: the first value of header `name` (lower case), or "".
    [[nodiscard]] std::string header(std::string_view name) const {
        for (const auto& [k, v] : headers)
            if (k == name) return v;
        return {};
    }
};

using header_list = std::vector<std::pair<std::string, std::string>>;

/// Returns: a blocking socket connected to 127.0.0.1:port with `timeout_ms` on every read and
/// write, or -1.
inline int connect_port(int port, int timeout_ms = 10000) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

/// Returns: true when all of `data` was sent.
inline bool send_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n <= 0) return false;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

/// Effects: reads more bytes into `buffer`. Returns: false on close, error or timeout.
inline bool read_more(int fd, std::string& buffer) {
    char chunk[16384];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
    return true;
}

/// Returns: everything the peer sends until it closes (or a read times out).
inline std::string read_to_close(int fd) {
    std::string all;
    while (read_more(fd, all)) {
    }
    return all;
}

/// Returns: one reply read from `fd` (interim 1xx replies skipped), bytes after it left in
/// `buffer`; nothing when the connection closed or timed out first, or the reply is malformed.
inline std::optional<http_reply> read_reply(int fd, std::string& buffer, bool head_request = false) {
    for (;;) {
        std::size_t end;
        while ((end = buffer.find("\r\n\r\n")) == std::string::npos)
            if (!read_more(fd, buffer)) return std::nullopt;
        http_reply r;
        const std::string head = buffer.substr(0, end);
        buffer.erase(0, end + 4);
        if (head.rfind("HTTP/1.", 0) != 0 || head.size() < 12) return std::nullopt;
        r.status = std::atoi(head.c_str() + 9);
        std::size_t pos = head.find("\r\n");
        while (pos != std::string::npos) {
            const std::size_t next = head.find("\r\n", pos + 2);
            const std::string line =
                head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
            const std::size_t colon = line.find(':');
            if (colon != std::string::npos) {
                std::string name = line.substr(0, colon);
                for (char& c : name)
                    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                std::size_t v = colon + 1;
                while (v < line.size() && line[v] == ' ')
                    ++v;
                r.headers.emplace_back(std::move(name), line.substr(v));
            }
            pos = next;
        }
        if (r.status >= 100 && r.status < 200) continue;
        const std::string length = r.header("content-length");
        if (head_request || r.status == 204 || r.status == 304) return r;
        if (length.empty()) { // until the server closes
            r.body = std::move(buffer) + read_to_close(fd);
            buffer.clear();
            return r;
        }
        const std::size_t n = std::strtoull(length.c_str(), nullptr, 10);
        while (buffer.size() < n)
            if (!read_more(fd, buffer)) return std::nullopt;
        r.body = buffer.substr(0, n);
        buffer.erase(0, n);
        return r;
    }
}

/// Returns: the text of a request (Host 127.0.0.1:port unless `headers` name one; a
/// Content-Length when there is a body or the method is POST/PUT).
inline std::string request_text(std::string_view method, std::string_view path, std::string_view body,
                                const header_list& headers, int port) {
    std::string out;
    out.append(method).append(" ").append(path).append(" HTTP/1.1\r\n");
    bool has_host = false, has_length = false;
    for (const auto& [k, v] : headers) {
        std::string lower = k;
        for (char& c : lower)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        has_host = has_host || lower == "host";
        has_length = has_length || lower == "content-length" || lower == "transfer-encoding";
        out.append(k).append(": ").append(v).append("\r\n");
    }
    if (!has_host) out += "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
    if (!has_length && (!body.empty() || method == "POST" || method == "PUT"))
        out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    out += "\r\n";
    out.append(body);
    return out;
}

/// Returns: all the server wrote back after `request` was sent on a new connection, until it closed.
inline std::string raw_exchange(int port, std::string_view request, int timeout_ms = 10000) {
    const int fd = connect_port(port, timeout_ms);
    if (fd < 0) return {};
    std::string reply;
    if (send_all(fd, request)) reply = read_to_close(fd);
    ::close(fd);
    return reply;
}

/// Returns: how many replies `raw` holds, read one after the other by their Content-Length.
inline int count_replies(std::string_view raw) {
    int n = 0;
    while (raw.rfind("HTTP/1.1 ", 0) == 0) {
        ++n;
        const std::size_t end = raw.find("\r\n\r\n");
        if (end == std::string_view::npos) break;
        const std::string_view head = raw.substr(0, end);
        const std::size_t at = head.find("\r\nContent-Length: ");
        const std::size_t length =
            at == std::string_view::npos
                ? 0
                : std::strtoull(std::string(head.substr(at + 18)).c_str(), nullptr, 10);
        raw.remove_prefix(std::min(raw.size(), end + 4 + length));
    }
    return n;
}

/// A keep-alive connection to 127.0.0.1:port that reconnects when the server closed it.
class client {
public:
    /// Effects: a client of 127.0.0.1:port; connects on the first request.
    explicit client(int port, int timeout_ms = 60000) : port_(port), timeout_ms_(timeout_ms) {}
    ~client() { drop(); }
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    /// Returns: the reply to `method path` with `body` and `headers`, or nothing on a failure.
    std::optional<http_reply> send(std::string_view method, std::string_view path, std::string_view body,
                                   const header_list& headers = {}) {
        const std::string text = request_text(method, path, body, headers, port_);
        for (int attempt = 0; attempt < 2; ++attempt) {
            const bool reused = fd_ >= 0;
            if (fd_ < 0 && (fd_ = connect_port(port_, timeout_ms_)) < 0) return std::nullopt;
            std::optional<http_reply> r;
            if (send_all(fd_, text)) r = read_reply(fd_, buffer_, method == "HEAD");
            if (r) {
                if (r->header("connection") == "close") drop();
                return r;
            }
            drop();
            if (!reused) break; // a kept-alive connection may have been closed meanwhile: once more
        }
        return std::nullopt;
    }
    std::optional<http_reply> get(std::string_view path, const header_list& headers = {}) {
        return send("GET", path, "", headers);
    }
    std::optional<http_reply> post(std::string_view path, std::string_view body,
                                   std::string_view content_type = "application/json",
                                   header_list headers = {}) {
        headers.emplace_back("Content-Type", std::string(content_type));
        return send("POST", path, body, headers);
    }
    /// Effects: closes the connection (the next request opens a new one).
    void drop() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        buffer_.clear();
    }

private:
    int port_;
    int timeout_ms_;
    int fd_ = -1;
    std::string buffer_;
};

/// Returns: this process's resident set in bytes (/proc/self/statm).
inline std::size_t resident_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, resident = 0;
    const int got = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    return got == 2 ? resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

} // namespace strata_test_http
