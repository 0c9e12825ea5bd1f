// strata-lab serve: the incremental HTTP/1.1 request parser (http_request.hpp), RFC 9112 with the
// lab's caps. Refusals: 400 malformed, 413 body too large, 414 request line too long, 431 header
// lines too long or too many, 501 a transfer coding other than chunked, 505 not HTTP/1.x.
#include "http_request.hpp"

#include <algorithm>

namespace strata::lab::serve {

namespace {

constexpr std::size_t max_chunk_line = 1024; // a chunk's size line with its extensions

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequal(std::string_view a, std::string_view b) noexcept {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

bool is_tchar(char c) noexcept {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) noexcept { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// Returns: `s` percent-decoded into `out`; false on a '%' not followed by two hex digits.
bool percent_decode(std::string_view s, std::string& out) {
    out.clear();
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out.push_back(s[i]);
            continue;
        }
        const int hi = i + 1 < s.size() ? hex_value(s[i + 1]) : -1;
        const int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) return false;
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
    }
    return true;
}

/// Returns: true when a comma-separated header value lists `token` (case-insensitive).
bool lists(std::string_view value, std::string_view token) noexcept {
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        if (iequal(trim(value.substr(0, comma)), token)) return true;
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return false;
}

/// Returns: the line at the front of `data` (without its LF or CRLF) and its length with them, or
/// a length of 0 when no LF has arrived yet.
std::pair<std::string_view, std::size_t> next_line(std::string_view data) noexcept {
    const std::size_t lf = data.find('\n');
    if (lf == std::string_view::npos) return {{}, 0};
    std::string_view line = data.substr(0, lf);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return {line, lf + 1};
}

/// Returns: true when `s` holds a control character (other than tab) or a bare CR.
bool has_ctl(std::string_view s) noexcept {
    return std::any_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return (u < 0x20 && c != '\t') || u == 0x7f;
    });
}

} // namespace

const std::string* http_request::header(std::string_view lower_name) const noexcept {
    for (const auto& [name, value] : headers)
        if (name == lower_name) return &value;
    return nullptr;
}

void request_parser::reset() noexcept {
    state_ = state::request_line;
    request_ = http_request{};
    header_bytes_ = header_count_ = body_left_ = empty_lines_ = 0;
    want_continue_ = false;
    error_status_ = 0;
    error_message_.clear();
}

bool request_parser::take_continue() noexcept {
    const bool c = want_continue_;
    want_continue_ = false;
    return c;
}

request_parser::status request_parser::fail(int http_status, std::string message) {
    state_ = state::failed;
    error_status_ = http_status;
    error_message_ = std::move(message);
    return status::failed;
}

std::pair<request_parser::status, std::size_t> request_parser::parse(std::string_view data) {
    std::size_t taken = 0;
    for (;;) {
        const std::string_view rest = data.substr(taken);
        if (state_ == state::done) return {status::complete, taken};
        if (state_ == state::failed) return {status::failed, taken};
        if (state_ == state::body || state_ == state::chunk_data) {
            if (rest.empty()) return {status::need_more, taken};
            const std::size_t n = std::min(rest.size(), body_left_);
            request_.body.append(rest.substr(0, n));
            taken += n;
            body_left_ -= n;
            if (body_left_ == 0) state_ = state_ == state::body ? state::done : state::chunk_end;
            continue;
        }
        // Every other state takes whole lines, each within its cap even before its end arrives.
        const auto [line, length] = next_line(rest);
        const std::size_t partial = length ? length : rest.size();
        switch (state_) {
        case state::request_line:
            if (partial > limits_.max_request_line + 2)
                return {fail(414, "the request line is longer than " +
                                      std::to_string(limits_.max_request_line) + " bytes"),
                        taken};
            break;
        case state::headers:
        case state::trailers:
            if (partial > limits_.max_header_line + 2)
                return {fail(431, "a header line is longer than " + std::to_string(limits_.max_header_line) +
                                      " bytes"),
                        taken};
            if (header_bytes_ + partial > limits_.max_header_bytes)
                return {fail(431, "the headers are larger than " + std::to_string(limits_.max_header_bytes) +
                                      " bytes"),
                        taken};
            break;
        default:
            if (partial > max_chunk_line) return {fail(400, "a chunk size line is too long"), taken};
            break;
        }
        if (length == 0) return {status::need_more, taken};
        taken += length;
        status st = status::need_more;
        switch (state_) {
        case state::request_line:
            if (line.empty()) { // empty lines before a request line are allowed (a few)
                if (++empty_lines_ > 4) st = fail(400, "empty lines instead of a request line");
                break;
            }
            st = on_request_line(line);
            break;
        case state::headers:
        case state::trailers:
            header_bytes_ += length;
            if (line.empty()) {
                if (state_ == state::trailers) {
                    state_ = state::done;
                    break;
                }
                st = on_headers_end();
                break;
            }
            if (++header_count_ > limits_.max_headers) {
                st = fail(431, "more than " + std::to_string(limits_.max_headers) + " header lines");
                break;
            }
            st = on_field_line(line, state_ == state::headers); // trailers are checked and dropped
            break;
        case state::chunk_size: st = on_chunk_size(line); break;
        case state::chunk_end:
            if (!line.empty())
                st = fail(400, "a chunk does not end where its size says");
            else
                state_ = state::chunk_size;
            break;
        default: break;
        }
        if (st == status::failed) return {st, taken};
    }
}

request_parser::status request_parser::on_request_line(std::string_view line) {
    const std::size_t sp1 = line.find(' ');
    const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
        return fail(400, "a malformed request line");
    const std::string_view method = line.substr(0, sp1);
    const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string_view version = line.substr(sp2 + 1);
    if (!is_token(method)) return fail(400, "a malformed method");
    if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' || version[5] < '0' ||
        version[5] > '9' || version[7] < '0' || version[7] > '9')
        return fail(400, "a malformed HTTP version");
    if (version[5] != '1') return fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
    if (target.empty() || target.front() != '/' || has_ctl(target) ||
        std::any_of(target.begin(), target.end(),
                    [](char c) { return static_cast<unsigned char>(c) > 0x7e; }))
        return fail(400, "the request target must be a path");
    request_.method.assign(method);
    request_.target.assign(target);
    request_.minor = version[7] - '0';
    request_.keep_alive = request_.minor >= 1;
    if (!percent_decode(target.substr(0, std::min(target.find('?'), target.find('#'))), request_.path))
        return fail(400, "a malformed percent-encoding in the path");
    state_ = state::headers;
    return status::need_more;
}

request_parser::status request_parser::on_field_line(std::string_view line, bool keep) {
    if (line.front() == ' ' || line.front() == '\t') return fail(400, "folded header lines are not accepted");
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
        return fail(400, "a malformed header line");
    const std::string_view value = trim(line.substr(colon + 1));
    if (has_ctl(value)) return fail(400, "a control character in a header value");
    if (!keep) return status::need_more;
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), lower);
    request_.headers.emplace_back(std::move(name), std::string(value));
    return status::need_more;
}

request_parser::status request_parser::on_headers_end() {
    http_request& r = request_;
    std::size_t hosts = 0, lengths = 0;
    const std::string* length = nullptr;
    std::string transfer;
    bool has_transfer = false;
    for (const auto& [name, value] : r.headers) {
        if (name == "host")
            ++hosts;
        else if (name == "content-length") {
            if (length && *length != value) return fail(400, "conflicting Content-Length headers");
            length = &value;
            ++lengths;
        } else if (name == "transfer-encoding") {
            transfer += (has_transfer ? "," : "") + value;
            has_transfer = true;
        } else if (name == "connection") {
            if (lists(value, "close")) r.keep_alive = false;
        }
    }
    if (hosts > 1 || (hosts == 0 && r.minor >= 1))
        return fail(400, "an HTTP/1.1 request needs one Host header");
    if (has_transfer) {
        if (length) return fail(400, "both Content-Length and Transfer-Encoding");
        // HTTP/1.0 has no transfer codings: its framing is not to be trusted (RFC 9112 6.1).
        if (r.minor == 0) return fail(400, "Transfer-Encoding on an HTTP/1.0 request");
        if (!iequal(trim(transfer), "chunked"))
            return fail(501, "the only transfer coding accepted is chunked");
        if (r.method != "POST" && r.method != "PUT")
            return fail(400, "a chunked body is accepted on POST and PUT only");
        state_ = state::chunk_size;
    } else if (length) {
        if (length->empty() || length->size() > 18 ||
            !std::all_of(length->begin(), length->end(), [](char c) { return c >= '0' && c <= '9'; }))
            return fail(400, "a malformed Content-Length");
        const std::size_t n = std::stoull(*length);
        if (n > limits_.max_body) return fail(413, "request body too large");
        body_left_ = n;
        state_ = n ? state::body : state::done;
    } else {
        state_ = state::done; // no length and not chunked: no body (RFC 9112 6.3)
    }
    if (state_ != state::done) {
        const std::string* expect = r.header("expect");
        want_continue_ = expect && iequal(*expect, "100-continue") && r.minor >= 1;
    }
    return status::need_more;
}

request_parser::status request_parser::on_chunk_size(std::string_view line) {
    if (has_ctl(line)) return fail(400, "a control character in a chunk size line");
    const std::string_view digits = trim(line.substr(0, line.find(';')));
    if (digits.empty() || digits.size() > 8 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return hex_value(c) >= 0; }))
        return fail(400, "a malformed chunk size");
    std::size_t n = 0;
    for (char c : digits)
        n = n * 16 + static_cast<std::size_t>(hex_value(c));
    if (n == 0) {
        state_ = state::trailers;
        return status::need_more;
    }
    if (n > limits_.max_body - request_.body.size()) return fail(413, "request body too large");
    body_left_ = n;
    state_ = state::chunk_data;
    return status::need_more;
}

} // namespace strata::lab::serve
