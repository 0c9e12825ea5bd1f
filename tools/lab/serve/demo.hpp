#pragma once
// One live-lab demo: a real allocator (or a measurement) behind a few operations. Each session
// makes its own instance of every demo it uses. See docs/live-lab.md.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api.hpp"

namespace strata::lab::serve {

using json = nlohmann::json;

/// A demo: operations that change (or measure) an allocator, and its state as JSON.
class demo {
public:
    virtual ~demo() = default;
    /// Effects: runs operation `op` with `args` (the request body).
    /// Returns: {"ok": bool, ...result fields}. ok false, with a "reason", means the allocator (or
    /// the demo's own cap on live blocks) said no, or there was nothing to do: out of memory, an
    /// empty stack to pop, nothing held to free, an out-of-order LIFO free, a marker the top fell
    /// below, nothing to flush or to move. The demo is then unchanged. Such answers are HTTP 200:
    /// the page meets them in normal use. Throws: api_error(400) for a malformed request (a
    /// missing, ill-typed or out-of-range argument, an id that is not live and that the page never
    /// sends), api_error(404) for an unknown operation.
    virtual json call(std::string_view op, const json& args) = 0;
    /// Returns: the allocator's state, read from the allocator itself.
    [[nodiscard]] virtual json state() const = 0;
    /// Returns: bytes of memory this demo holds (buffers and bookkeeping), for the session bound.
    [[nodiscard]] virtual std::size_t bytes() const noexcept = 0;
};

/// A demo kind: its route name, what the page calls it, its operations and its factory.
struct demo_kind {
    std::string_view name;
    std::string_view title;
    std::vector<std::string_view> ops; ///< "state" is always accepted as well
    std::unique_ptr<demo> (*make)(const limits&);
};

/// Returns: every demo kind, in page order.
[[nodiscard]] const std::vector<demo_kind>& demo_kinds();

// The factories (one translation unit per demo).
std::unique_ptr<demo> make_arena_demo(const limits&);
std::unique_ptr<demo> make_stack_demo(const limits&);
std::unique_ptr<demo> make_pool_demo(const limits&);
std::unique_ptr<demo> make_buddy_demo(const limits&);
std::unique_ptr<demo> make_tlsf_demo(const limits&);
std::unique_ptr<demo> make_slab_demo(const limits&);
std::unique_ptr<demo> make_handles_demo(const limits&);
std::unique_ptr<demo> make_device_demo(const limits&);
std::unique_ptr<demo> make_race_demo(const limits&);
std::unique_ptr<demo> make_latency_demo(const limits&);
std::unique_ptr<demo> make_layout_demo(const limits&);
std::unique_ptr<demo> make_compare_demo(const limits&);
std::unique_ptr<demo> make_trace_demo(const limits&);

// Argument checks: each throws api_error(400) naming the argument and the accepted range.

/// Returns: args[key] as an integer in [lo, hi]; `fallback` when absent (pass hi + 1 to require it).
[[nodiscard]] std::uint64_t int_arg(const json& args, const char* key, std::uint64_t lo, std::uint64_t hi,
                                    std::uint64_t fallback);
/// Returns: args[key] as a power of two in [1, hi]; `fallback` when absent.
[[nodiscard]] std::size_t align_arg(const json& args, const char* key, std::size_t hi, std::size_t fallback);

/// Returns: the entry of `live` (an id -> block map) named by args["id"]. Throws: api_error(400)
/// when the id is missing, out of range, or not live (stale or never handed out), so a double free
/// never reaches the allocator. The page sends only ids it draws as live (demos/common.js checks a
/// queued click's id against the newest state first), so this is never a refusal of normal use.
template <class Map>
[[nodiscard]] typename Map::iterator live_block(Map& live, const json& args) {
    const std::uint64_t id = int_arg(args, "id", 1, UINT64_MAX >> 1, UINT64_MAX);
    const auto it = live.find(id);
    if (it == live.end())
        throw api_error(400, "block " + std::to_string(id) + " is not live (stale or unknown id)");
    return it;
}

/// Returns: the answer of a refused operation, {"ok": false, "reason": reason}.
[[nodiscard]] inline json refused(std::string reason) {
    return {{"ok", false}, {"reason", std::move(reason)}};
}

/// An unknown operation.
[[noreturn]] void unknown_op(std::string_view demo, std::string_view op);

} // namespace strata::lab::serve
