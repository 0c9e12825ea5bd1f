#include "strata/adapt/debug.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/adapt/free_reports.hpp"
#include "strata/core/poison.hpp"

namespace strata {

namespace {
constinit thread_local std::uint64_t t_not_refusing = 0;
} // namespace

std::uint64_t violations_not_refusing() noexcept { return t_not_refusing; }

void note_violation_not_refusing() noexcept { ++t_not_refusing; }

// One record per address: live, or freed and remembered (for double-free reports) until
// `freed_history` later frees push it out. An address the wrapped allocator hands out again is
// overwritten in place, so a steady allocate/free cycle costs two or three hash lookups and no
// node allocation. The freed history and the quarantine are rings sized at construction: a free
// never allocates (a std::deque here allocated a chunk every 32 frees or so, for good).
struct debug_registry::state {
    struct record {
        debug_block block;
        bool live;
        strata::source_location freed_at;
        bool held = false; // freed and in the quarantine: the wrapped allocator has not had it back
    };
    struct freed_entry {
        const void* address;
        std::uint64_t serial; // of the free it records: a newer free or reuse of the address wins
    };
    std::unordered_map<const void*, record> blocks;
    std::unique_ptr<freed_entry[]> freed_order; // ring, oldest at freed_head
    std::size_t freed_cap = 0;
    std::size_t freed_head = 0;
    std::size_t freed_count = 0;
    std::unique_ptr<debug_quarantined[]> quarantine; // ring, oldest at quarantine_head_
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

debug_registry::debug_registry(const debug_options& o) : opts_(o), state_(std::make_unique<state>()) {
    if (opts_.quarantine_bytes != 0 && opts_.quarantine_blocks != 0) {
        quarantine_cap_ = opts_.quarantine_blocks;
        state_->quarantine = std::make_unique<debug_quarantined[]>(quarantine_cap_);
    }
    // Every quarantined block stays in the history: the quarantine holds a suffix of the frees
    // (oldest out first), at most quarantine_cap_ of them, and the history the last freed_cap.
    state_->freed_cap = std::max(opts_.freed_history, quarantine_cap_);
    if (state_->freed_cap != 0)
        state_->freed_order = std::make_unique<state::freed_entry[]>(state_->freed_cap);
}

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

bool debug_registry::holds(const void* p) const noexcept {
    const auto it = state_->blocks.find(p);
    return it != state_->blocks.end() && (it->second.live || it->second.held);
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
    state& st = *state_;
    if (st.freed_cap == 0) {
        st.blocks.erase(it);
        return;
    }
    if (st.freed_count == st.freed_cap) {
        const state::freed_entry old = st.freed_order[st.freed_head];
        st.freed_head = st.freed_head + 1 == st.freed_cap ? 0 : st.freed_head + 1;
        --st.freed_count;
        // The address may be live again, or freed again since (a newer serial): keep those.
        const auto o = st.blocks.find(old.address);
        if (o != st.blocks.end() && !o->second.live && o->second.block.serial == old.serial)
            st.blocks.erase(o);
    }
    std::size_t tail = st.freed_head + st.freed_count;
    if (tail >= st.freed_cap) tail -= st.freed_cap;
    st.freed_order[tail] = state::freed_entry{p, serial};
    ++st.freed_count;
}

void debug_registry::clear_live() noexcept {
    state_->blocks.clear();
    state_->freed_head = 0;
    state_->freed_count = 0;
    state_->live = 0;
    live_bytes_ = 0;
}

void debug_registry::quarantine_push(const debug_block& b, const strata::source_location& freed_at) noexcept {
    std::size_t tail = quarantine_head_ + quarantine_count_;
    if (tail >= quarantine_cap_) tail -= quarantine_cap_;
    state_->quarantine[tail] = debug_quarantined{b, freed_at};
    ++quarantine_count_;
    // Every quarantined block is in the history (freed_cap >= the quarantine's), so its record is.
    if (const auto it = state_->blocks.find(b.user); it != state_->blocks.end()) it->second.held = true;
    quarantined_bytes_ += footprint(b);
}

debug_quarantined debug_registry::quarantine_pop() noexcept {
    const debug_quarantined q = state_->quarantine[quarantine_head_];
    quarantine_head_ = quarantine_head_ + 1 == quarantine_cap_ ? 0 : quarantine_head_ + 1;
    --quarantine_count_;
    quarantined_bytes_ -= footprint(q.block);
    if (const auto it = state_->blocks.find(q.block.user);
        it != state_->blocks.end() && !it->second.live && it->second.block.serial == q.block.serial)
        it->second.held = false;
    return q;
}

void debug_registry::drop_quarantine(const strata::source_location& where) noexcept {
    while (quarantine_count_ != 0) {
        const debug_quarantined q = quarantine_pop();
        const std::byte* raw = q.block.user - q.block.front;
        unpoison(raw, footprint(q.block));
        check_freed(q, where);
    }
    quarantine_head_ = 0;
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
    note_violation_not_refusing(); // the free (or verify) goes on: nothing is refused
    report(violation_kind::corruption, opts_.name, b.user,
           "block of " + std::to_string(b.size) + " bytes at " + pointer_text(b.user) + ": " + what +
               " overwritten; allocated at " + site_text(b.site),
           where);
    return false;
}

bool debug_registry::check_freed(const debug_quarantined& q, const strata::source_location& where) const {
    if (!opts_.fill) return true; // nothing to compare with
    const debug_block& b = q.block;
    const std::byte* raw = b.user - b.front;
    const std::size_t total = footprint(b);
    const auto freed = static_cast<std::byte>(fill_freed);
    // The common case, an untouched block, a word at a time with no early exit (the loop g++
    // vectorizes): a byte-by-byte compare would dominate the cost of freeing a large block.
    std::uint64_t pattern = 0;
    std::memset(&pattern, fill_freed, sizeof pattern);
    std::uint64_t diff = 0;
    std::size_t k = 0;
    for (; k + sizeof pattern <= total; k += sizeof pattern) {
        std::uint64_t word;
        std::memcpy(&word, raw + k, sizeof word);
        diff |= word ^ pattern;
    }
    for (; k < total; ++k)
        diff |= static_cast<std::uint64_t>(raw[k] ^ freed);
    if (diff == 0) return true;
    std::size_t changed = 0;
    std::size_t first = total;
    for (std::size_t i = 0; i < total; ++i) {
        if (raw[i] != freed) {
            ++changed;
            if (first == total) first = i;
        }
    }
    if (changed == 0) return true;
    // Where the first changed byte lies, relative to the block the caller had.
    std::string at;
    if (first < b.front) {
        at = std::to_string(b.front - first) + " bytes before the block (front fence)";
    } else if (first < b.front + b.size) {
        at = "offset " + std::to_string(first - b.front);
    } else {
        at = std::to_string(first - b.front - b.size) + " bytes past the block's end (back fence)";
    }
    note_violation_not_refusing(); // found while the call goes through: nothing is refused
    report(violation_kind::corruption, opts_.name, b.user,
           "use after free: " + std::to_string(changed) + " bytes of the freed block of " +
               std::to_string(b.size) + " bytes at " + pointer_text(b.user) +
               " were written after it was freed (first at " + at + "); freed at " + site_text(q.freed_at) +
               ", allocated at " + site_text(b.site),
           where);
    return false;
}

std::size_t debug_registry::verify(const strata::source_location& where) const {
    std::size_t broken = 0;
    for_each_live([&](const debug_block& b) { broken += check_fences(b, where) ? 0 : 1; });
    std::size_t at = quarantine_head_;
    for (std::size_t i = 0; i < quarantine_count_; ++i) {
        const debug_quarantined& q = state_->quarantine[at];
        const std::byte* raw = q.block.user - q.block.front;
        const std::size_t total = footprint(q.block);
        unpoison(raw, total); // held blocks are poisoned: read them, then poison them again
        struct repoison {     // even when the violation handler throws out of the report
            const std::byte* raw;
            std::size_t total;
            ~repoison() { poison(raw, total); }
        } guard{raw, total};
        broken += check_freed(q, where) ? 0 : 1;
        at = at + 1 == quarantine_cap_ ? 0 : at + 1;
    }
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
