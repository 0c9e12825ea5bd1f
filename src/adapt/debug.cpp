#include "strata/adapt/debug.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata {

// One record per address: live, or freed and remembered (for double-free reports) until
// `freed_history` later frees push it out. An address the wrapped allocator hands out again is
// overwritten in place, so a steady allocate/free cycle costs two or three hash lookups and no
// node allocation.
struct debug_registry::state {
    struct record {
        debug_block block;
        bool live;
        strata::source_location freed_at;
    };
    std::unordered_map<const void*, record> blocks;
    std::deque<std::pair<const void*, std::uint64_t>> freed_order; // (address, serial), oldest first
    std::size_t live = 0;
};

namespace {

std::string site_text(const strata::source_location& s) {
    return std::string(s.file_name()) + ":" + std::to_string(s.line()) + " in " + s.function_name();
}

std::string pointer_text(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
}

void report(violation_kind kind, const char* who, const void* p, const std::string& message,
            const strata::source_location& where) {
    report_violation(violation{kind, who, p, message.c_str(), where});
}

} // namespace

debug_registry::debug_registry(const debug_options& o) : opts_(o), state_(std::make_unique<state>()) {}

debug_registry::~debug_registry() = default;

bool debug_registry::add(const debug_block& b) noexcept {
    try {
        auto& r = state_->blocks[b.user]; // a freed record at this address is live again
        r.block = b;
        r.live = true;
    } catch (...) {
        return false;
    }
    ++state_->live;
    live_bytes_ += b.size;
    return true;
}

const debug_block* debug_registry::find(const void* p) const noexcept {
    const auto it = state_->blocks.find(p);
    return it == state_->blocks.end() || !it->second.live ? nullptr : &it->second.block;
}

bool debug_registry::known(const void* p) const noexcept {
    return state_->blocks.find(p) != state_->blocks.end();
}

void debug_registry::retire(const void* p, const strata::source_location& freed_at) noexcept {
    const auto it = state_->blocks.find(p);
    if (it == state_->blocks.end() || !it->second.live) return;
    state::record& r = it->second;
    r.live = false;
    r.freed_at = freed_at;
    --state_->live;
    live_bytes_ -= r.block.size;
    const std::uint64_t serial = r.block.serial;
    if (opts_.freed_history == 0) {
        state_->blocks.erase(it);
        return;
    }
    try {
        state_->freed_order.emplace_back(p, serial);
    } catch (...) {
        state_->blocks.erase(it); // no room to remember it: forget it now
        return;
    }
    while (state_->freed_order.size() > opts_.freed_history) {
        const auto [old, old_serial] = state_->freed_order.front();
        state_->freed_order.pop_front();
        // The address may be live again, or freed again since (a newer serial): keep those.
        const auto o = state_->blocks.find(old);
        if (o != state_->blocks.end() && !o->second.live && o->second.block.serial == old_serial)
            state_->blocks.erase(o);
    }
}

void debug_registry::clear_live() noexcept {
    state_->blocks.clear();
    state_->freed_order.clear();
    state_->live = 0;
    live_bytes_ = 0;
}

void debug_registry::report_bad_free(const void* p, const strata::source_location& where) const {
    const auto it = state_->blocks.find(p);
    if (it != state_->blocks.end() && !it->second.live) {
        report(violation_kind::double_free, opts_.name, p,
               "double free of " + std::to_string(it->second.block.size) + " bytes at " + pointer_text(p) +
                   ", allocated at " + site_text(it->second.block.site) + ", first freed at " +
                   site_text(it->second.freed_at),
               where);
        return;
    }
    report(violation_kind::foreign_pointer, opts_.name, p,
           "free of " + pointer_text(p) + ", which this allocator did not hand out (or freed long ago)",
           where);
}

void debug_registry::report_mismatch(const debug_block& b, std::size_t size, std::size_t align,
                                     const strata::source_location& where) const {
    report(violation_kind::size_mismatch, opts_.name, b.user,
           "sized free of " + pointer_text(b.user) + " names size " + std::to_string(size) + " align " +
               std::to_string(align) + ", but the block has size " + std::to_string(b.size) + " align " +
               std::to_string(b.align) + " (allocated at " + site_text(b.site) + ")",
           where);
}

bool debug_registry::check_fences(const debug_block& b, const strata::source_location& where) const {
    const auto fill = static_cast<std::byte>(opts_.fence_fill);
    const std::byte* front = b.user - b.front;
    const std::byte* back = b.user + b.size;
    std::size_t bad_front = 0, bad_back = 0;
    for (std::size_t i = 0; i < b.front; ++i)
        bad_front += front[i] != fill;
    for (std::size_t i = 0; i < opts_.fence_size; ++i)
        bad_back += back[i] != fill;
    if (bad_front == 0 && bad_back == 0) return true;
    std::string what;
    if (bad_front) what = std::to_string(bad_front) + " bytes of the fence before the block (underrun)";
    if (bad_back) {
        if (!what.empty()) what += " and ";
        what += std::to_string(bad_back) + " bytes of the fence after the block (overrun)";
    }
    report(violation_kind::corruption, opts_.name, b.user,
           "block of " + std::to_string(b.size) + " bytes at " + pointer_text(b.user) + ": " + what +
               " overwritten; allocated at " + site_text(b.site),
           where);
    return false;
}

std::size_t debug_registry::verify(const strata::source_location& where) const {
    std::size_t broken = 0;
    for_each_live([&](const debug_block& b) { broken += check_fences(b, where) ? 0 : 1; });
    return broken;
}

std::size_t debug_registry::live_blocks() const noexcept { return state_->live; }

void debug_registry::for_each_live_impl(void* ctx, void (*fn)(void*, const debug_block&)) const {
    std::vector<const debug_block*> blocks;
    blocks.reserve(state_->live);
    for (const auto& entry : state_->blocks) {
        if (entry.second.live) blocks.push_back(&entry.second.block);
    }
    std::sort(blocks.begin(), blocks.end(),
              [](const debug_block* a, const debug_block* b) { return a->serial < b->serial; });
    for (const debug_block* b : blocks)
        fn(ctx, *b);
}

std::string debug_registry::leak_report() const {
    std::string out;
    for_each_live([&](const debug_block& b) {
        out += "leak: " + std::to_string(b.size) + " bytes at " + pointer_text(b.user) + " allocated at " +
               site_text(b.site) + " (allocation #" + std::to_string(b.serial) + ")\n";
    });
    if (!out.empty()) {
        out += std::string(opts_.name) + ": " + std::to_string(live_blocks()) + " blocks leaked, " +
               std::to_string(live_bytes_) + " bytes\n";
    }
    return out;
}

std::size_t debug_registry::report_leaks() const {
    const std::size_t n = live_blocks();
    if (n == 0) return 0;
    if (get_violation_handler() == &default_violation_handler) {
        // The default handler aborts on the first report: print the whole list before it does.
        const std::string all = leak_report();
        std::fputs(all.c_str(), stderr);
    }
    std::size_t i = 0;
    for_each_live([&](const debug_block& b) {
        ++i;
        report(violation_kind::leak, opts_.name, b.user,
               "leaked " + std::to_string(b.size) + " bytes at " + pointer_text(b.user) + " allocated at " +
                   site_text(b.site) + " (leak " + std::to_string(i) + " of " + std::to_string(n) + ")",
               b.site);
    });
    return n;
}

} // namespace strata
