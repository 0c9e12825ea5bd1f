#include "api.hpp"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <random>
#include <unordered_map>

#include "demo.hpp"

namespace strata::lab::serve {

// --- arguments -----------------------------------------------------------------------------------

std::uint64_t int_arg(const json& args, const char* key, std::uint64_t lo, std::uint64_t hi,
                      std::uint64_t fallback) {
    const auto range = [&] {
        return std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " +
               std::to_string(hi) + "]";
    };
    const auto it = args.find(key);
    if (it == args.end() || it->is_null()) {
        if (fallback > hi) throw api_error(400, std::string("missing argument ") + key);
        return fallback;
    }
    // Negative and fractional numbers, strings and huge values are all refused here, before any
    // allocator sees them: a size of -1 would otherwise arrive as SIZE_MAX.
    if (!it->is_number_integer()) throw api_error(400, range());
    if (it->is_number_unsigned()) {
        const auto v = it->get<std::uint64_t>();
        if (v < lo || v > hi) throw api_error(400, range());
        return v;
    }
    const auto v = it->get<std::int64_t>();
    if (v < 0 || static_cast<std::uint64_t>(v) < lo || static_cast<std::uint64_t>(v) > hi)
        throw api_error(400, range());
    return static_cast<std::uint64_t>(v);
}

std::size_t align_arg(const json& args, const char* key, std::size_t hi, std::size_t fallback) {
    const auto v = static_cast<std::size_t>(int_arg(args, key, 1, hi, fallback));
    if ((v & (v - 1)) != 0)
        throw api_error(400, std::string(key) + " must be a power of two in [1, " + std::to_string(hi) + "]");
    return v;
}

void unknown_op(std::string_view demo, std::string_view op) {
    throw api_error(404, "demo " + std::string(demo) + " has no operation '" + std::string(op) + "'");
}

const std::vector<demo_kind>& demo_kinds() {
    static const std::vector<demo_kind> kinds = {
        {"arena", "Arena", {"alloc", "reset"}, &make_arena_demo},
        {"stack", "Stack", {"alloc", "pop", "mark", "rewind", "reset"}, &make_stack_demo},
        {"pool", "Pool", {"alloc", "free"}, &make_pool_demo},
        {"buddy", "Buddy", {"alloc", "free"}, &make_buddy_demo},
        {"tlsf", "TLSF", {"alloc", "free", "probe"}, &make_tlsf_demo},
        {"slab", "Slab + magazines", {"alloc", "free", "flush"}, &make_slab_demo},
        {"handles", "Handles (slot map)", {"spawn", "free", "get"}, &make_handles_demo},
        {"device", "Device memory pool", {"alloc", "free", "fragment", "defrag"}, &make_device_demo},
        {"race", "Fragmentation race", {"run"}, &make_race_demo},
        {"latency", "Latency tail", {"run"}, &make_latency_demo},
        {"layout", "AoS vs SoA", {"run"}, &make_layout_demo},
        {"compare", "Same requests, every allocator", {"run", "step"}, &make_compare_demo},
        {"trace", "Trace player", {"open", "view", "series"}, &make_trace_demo},
    };
    return kinds;
}

// --- sessions ------------------------------------------------------------------------------------

namespace {

struct session {
    std::mutex mutex; // one request of a session at a time
    std::chrono::steady_clock::time_point last_used;
    std::vector<std::unique_ptr<demo>> demos; // by demo_kinds() index, made on first use

    std::size_t bytes() const noexcept {
        std::size_t n = 0;
        for (const auto& d : demos)
            if (d) n += d->bytes();
        return n;
    }
};

std::string new_id() {
    // Ids are unguessable so one browser cannot drive another's session. Every byte comes from the
    // kernel: a seeded generator (mt19937_64 before) gives its state away after 312 outputs, and
    // sessions can be made and closed at will to collect them.
    unsigned char bytes[16];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n > 0) {
            got += static_cast<std::size_t>(n);
        } else if (n < 0 && errno != EINTR) { // no getrandom (Linux < 3.17): the device behind it
            static std::mutex m;
            static std::random_device rd("/dev/urandom");
            std::lock_guard lock(m);
            for (; got < sizeof bytes; ++got)
                bytes[got] = static_cast<unsigned char>(rd());
        }
    }
    char buf[33];
    for (std::size_t i = 0; i < sizeof bytes; ++i)
        std::snprintf(buf + 2 * i, 3, "%02x", bytes[i]);
    return buf;
}

json limits_json(const limits& l) {
    return {{"max_sessions", l.max_sessions},         {"session_ttl_s", l.session_ttl.count()},
            {"max_body_bytes", l.max_body_bytes},     {"session_bytes", l.session_bytes},
            {"max_request_size", l.max_request_size}, {"max_batch", l.max_batch}};
}

json error_body(const std::string& message) { return {{"error", message}}; }

// Paths echo into messages and may hold invalid UTF-8: replace it rather than throw.
std::string text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

} // namespace

class session_store {
public:
    session_store(const limits& l, api::clock_fn clock) : limits_(l), clock_(std::move(clock)) {}

    std::string create() {
        std::lock_guard lock(mutex_);
        expire_locked();
        if (map_.size() >= limits_.max_sessions) evict_idlest_locked();
        if (map_.size() >= limits_.max_sessions)
            throw api_error(503, "too many sessions (" + std::to_string(limits_.max_sessions) +
                                     "); try again when one expires");
        auto s = std::make_shared<session>();
        s->last_used = now();
        s->demos.resize(demo_kinds().size());
        std::string id = new_id();
        map_.emplace(id, std::move(s));
        return id;
    }

    std::shared_ptr<session> find(const std::string& id) {
        std::lock_guard lock(mutex_);
        expire_locked();
        const auto it = map_.find(id);
        if (it == map_.end()) throw api_error(404, "unknown or expired session");
        it->second->last_used = now();
        return it->second;
    }

    /// Returns: true when `id` was a session (now gone).
    bool close(const std::string& id) {
        std::lock_guard lock(mutex_);
        return map_.erase(id) != 0;
    }

    std::size_t count() {
        std::lock_guard lock(mutex_);
        expire_locked();
        return map_.size();
    }

private:
    std::chrono::steady_clock::time_point now() const {
        return clock_ ? clock_() : std::chrono::steady_clock::now();
    }
    void evict_idlest_locked() {
        const auto t = now();
        auto idlest = map_.end();
        for (auto it = map_.begin(); it != map_.end(); ++it)
            if (idlest == map_.end() || it->second->last_used < idlest->second->last_used) idlest = it;
        if (idlest != map_.end() && t - idlest->second->last_used >= limits_.evict_idle) map_.erase(idlest);
    }
    void expire_locked() {
        const auto t = now();
        // A session in use keeps its shared_ptr alive until its request ends, then goes.
        std::erase_if(map_, [&](const auto& kv) { return t - kv.second->last_used > limits_.session_ttl; });
    }

    limits limits_;
    api::clock_fn clock_;
    std::mutex mutex_;
    std::unordered_map<std::string, std::shared_ptr<session>> map_;
};

// --- routing -------------------------------------------------------------------------------------

api::api(limits l, bool uplot, clock_fn clock)
    : limits_(l), uplot_(uplot), sessions_(std::make_unique<session_store>(l, std::move(clock))) {}

api::~api() = default;

std::size_t api::session_count() { return sessions_->count(); }

reply api::handle(std::string_view method, std::string_view path, std::string_view body) noexcept {
    try {
        // Every route, /api/session/close included: the HTTP server bounds the bytes it reads, but api is
        // also called directly (tests, other front ends).
        if (body.size() > limits_.max_body_bytes) throw api_error(413, "request body too large");
        if (path == "/api/info") {
            if (method != "GET") throw api_error(405, "use GET for /api/info");
            json demos = json::array();
            for (const auto& k : demo_kinds()) {
                json ops = json::array();
                for (auto op : k.ops)
                    ops.push_back(op);
                demos.push_back({{"name", k.name}, {"title", k.title}, {"ops", ops}});
            }
            return {200, text(json{{"demos", demos}, {"uplot", uplot_}, {"limits", limits_json(limits_)}})};
        }
        if (path == "/api/session/close") { // the page sends it as it goes (a beacon)
            if (method != "POST") throw api_error(405, "use POST for /api/session/close");
            const json args = json::parse(body.begin(), body.end(), nullptr, false);
            const auto sid = args.is_object() ? args.find("session") : args.end();
            if (args.is_discarded() || !args.is_object() || sid == args.end() || !sid->is_string())
                throw api_error(400, "missing \"session\" (a string)");
            if (!sessions_->close(sid->get<std::string>()))
                throw api_error(404, "unknown or expired session");
            return {200, text(json{{"ok", true}})};
        }
        if (path == "/api/session") {
            if (method != "POST") throw api_error(405, "use POST for /api/session");
            const std::string id = sessions_->create();
            return {201, text(json{{"session", id},
                                   {"ttl_s", limits_.session_ttl.count()},
                                   {"limits", limits_json(limits_)}})};
        }
        constexpr std::string_view prefix = "/api/";
        if (path.substr(0, prefix.size()) != prefix) throw api_error(404, "no such route");
        const std::string_view rest = path.substr(prefix.size());
        const auto slash = rest.find('/');
        if (slash == std::string_view::npos) throw api_error(404, "no such route");
        const std::string_view name = rest.substr(0, slash);
        const std::string_view op = rest.substr(slash + 1);
        const auto& kinds = demo_kinds();
        const auto kind =
            std::find_if(kinds.begin(), kinds.end(), [&](const demo_kind& k) { return k.name == name; });
        if (kind == kinds.end()) throw api_error(404, "no demo named '" + std::string(name) + "'");
        if (op != "state" && std::find(kind->ops.begin(), kind->ops.end(), op) == kind->ops.end())
            unknown_op(name, op);
        if (method != "POST") throw api_error(405, "use POST for demo operations");

        const json args = json::parse(body.begin(), body.end(), nullptr, false);
        if (args.is_discarded()) throw api_error(400, "malformed JSON");
        if (!args.is_object()) throw api_error(400, "the body must be a JSON object");
        const auto sid = args.find("session");
        if (sid == args.end() || !sid->is_string()) throw api_error(400, "missing \"session\" (a string)");
        const std::shared_ptr<session> s = sessions_->find(sid->get<std::string>());

        std::lock_guard lock(s->mutex);
        const auto index = static_cast<std::size_t>(kind - kinds.begin());
        auto& d = s->demos[index];
        if (!d) {
            auto made = kind->make(limits_);
            if (s->bytes() + made->bytes() > limits_.session_bytes)
                throw api_error(409, "session memory bound reached (" +
                                         std::to_string(limits_.session_bytes) + " bytes)");
            d = std::move(made);
        }
        json result = op == "state" ? json{{"ok", true}} : d->call(op, args);
        const bool ok = result.value("ok", true);
        json out{
            {"ok", ok}, {"result", std::move(result)}, {"state", d->state()}, {"session_bytes", s->bytes()}};
        return {200, text(out)};
    } catch (const api_error& e) {
        return {e.status(), text(error_body(e.what()))};
    } catch (const std::bad_alloc&) {
        return {503, text(error_body("out of memory"))};
    } catch (const std::exception& e) {
        return {500, text(error_body(std::string("internal error: ") + e.what()))};
    } catch (...) {
        return {500, R"({"error":"internal error"})"};
    }
}

} // namespace strata::lab::serve
