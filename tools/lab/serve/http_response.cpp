// strata-lab serve: formatting HTTP/1.1 replies (http_response.hpp).
#include "http_response.hpp"

#include <cstdio>

namespace strata::lab::serve {

std::string_view reason_phrase(int status) noexcept {
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
    }
}

std::string error_body(std::string_view message) {
    std::string out = "{\"error\":\"";
    for (const char c : message) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", u);
            out += esc;
        } else {
            out += c;
        }
    }
    return out + "\"}";
}

http_response error_response(int status, std::string_view message, bool close) {
    http_response r;
    r.status = status;
    r.body = error_body(message);
    r.close = close;
    return r;
}

std::string response_head(const http_response& r, std::size_t content_length) {
    std::string h = "HTTP/1.1 " + std::to_string(r.status) + " ";
    h += reason_phrase(r.status);
    h += "\r\n";
    if (r.status >= 200 && r.status != 204) {
        h += "Content-Type: ";
        h += r.content_type;
        h += "\r\nContent-Length: " + std::to_string(content_length) + "\r\n";
    }
    if (r.no_cache) h += "Cache-Control: no-cache\r\n";
    if (r.close) h += "Connection: close\r\n";
    h += "\r\n";
    return h;
}

} // namespace strata::lab::serve
