#pragma once
// debug<A>: a debugging allocator for any strata allocator, on in every build type (it does not
// look at STRATA_CHECKS): fences around every block, fill patterns, double free / foreign pointer /
// size mismatch detection, and a leak report with each block's allocation site on destruction.
// Reports go through the violation handler (core/check.hpp), so tests and tools can capture them.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "strata/adapt/fwd.hpp"
#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/core/config.hpp"
#include "strata/core/poison.hpp"
#include "strata/core/source_location.hpp"

namespace strata {

/// Settings of a debug<A>.
struct debug_options {
    std::size_t fence_size = 16;     ///< guard bytes after each block (and at least this many before)
    unsigned char fence_fill = 0xFD; ///< the fence pattern
    bool fill = true;                ///< 0xCD over fresh blocks, 0xDD over freed ones
    std::size_t freed_history =
        1u << 14; ///< freed blocks remembered to tell a double free from a foreign pointer
    const char* name = "strata::debug"; ///< the `allocator` field of every report
};

/// One live block as debug<A> records it.
struct debug_block {
    const std::byte* user = nullptr; ///< what allocate returned
    std::size_t size = 0;            ///< requested size
    std::size_t align = 0;           ///< requested alignment
    std::size_t front = 0;           ///< fence bytes before `user` (a multiple of align)
    std::uint64_t serial = 0;        ///< 1 for the first allocation, 2 for the next, ...
    strata::source_location site;    ///< where allocate was called
};

/// The type-independent half of debug<A> (src/adapt/debug.cpp): the block registry and the reports.
/// Each report passes a message built for it; the string lives until the handler returns.
class debug_registry {
public:
    explicit debug_registry(const debug_options& o);
    ~debug_registry();
    debug_registry(const debug_registry&) = delete;
    debug_registry& operator=(const debug_registry&) = delete;

    /// Returns: false when the record could not be stored (out of memory).
    [[nodiscard]] bool add(const debug_block& b) noexcept;
    /// Returns: the live block starting at `p`, or nullptr.
    [[nodiscard]] const debug_block* find(const void* p) const noexcept;
    /// Returns: true when `p` is a live block or one the freed history still remembers.
    [[nodiscard]] bool known(const void* p) const noexcept;
    /// Effects: moves the live block `p` to the freed history.
    void retire(const void* p, const strata::source_location& freed_at) noexcept;
    /// Effects: reports a free of `p`, which is not live: double_free when the history knows it,
    /// foreign_pointer otherwise.
    void report_bad_free(const void* p, const strata::source_location& where) const;
    /// Effects: reports size_mismatch for a free of `b` that named `size`/`align`.
    void report_mismatch(const debug_block& b, std::size_t size, std::size_t align,
                         const strata::source_location& where) const;
    /// Returns: true when both fences of `b` are intact; otherwise reports corruption and returns false.
    bool check_fences(const debug_block& b, const strata::source_location& where) const;
    /// Effects: forgets every live block (the wrapped allocator was reset), without reports.
    void clear_live() noexcept;
    /// Returns: the number of live blocks with a broken fence (each reported).
    std::size_t verify(const strata::source_location& where) const;
    /// Returns: one line per live block, oldest first: "leak: 24 bytes at 0x... allocated at
    /// file:line in function (allocation #3)", and a summary line; empty when nothing is live.
    [[nodiscard]] std::string leak_report() const;
    /// Effects: reports one `leak` violation per live block, oldest first, with `where` set to the
    /// block's allocation site. When the default (aborting) handler is installed, the full
    /// leak_report() is written to stderr first so every leak is seen. Returns: blocks reported.
    std::size_t report_leaks() const;

    [[nodiscard]] std::size_t live_blocks() const noexcept;
    [[nodiscard]] std::size_t live_bytes() const noexcept { return live_bytes_; }
    [[nodiscard]] std::uint64_t next_serial() noexcept { return ++serial_; }
    [[nodiscard]] const debug_options& options() const noexcept { return opts_; }

    /// Effects: calls visit(const debug_block&) for each live block, oldest first.
    template <class Visitor>
    void for_each_live(Visitor&& visit) const {
        for_each_live_impl(&visit, [](void* v, const debug_block& b) { (*static_cast<Visitor*>(v))(b); });
    }

private:
    void for_each_live_impl(void* ctx, void (*fn)(void*, const debug_block&)) const;

    struct state;
    debug_options opts_;
    std::unique_ptr<state> state_;
    std::size_t live_bytes_ = 0;
    std::uint64_t serial_ = 0;
};

namespace detail {
template <class... Args>
inline constexpr bool first_is_debug_options = false;
template <class First, class... Rest>
inline constexpr bool first_is_debug_options<First, Rest...> =
    std::is_same_v<std::remove_cvref_t<First>, debug_options>;
} // namespace detail

/// A debugging wrapper around `A` (owned by value; wrap an allocator_ref<A> to refer to one that
/// lives elsewhere). Works at every STRATA_CHECKS level, so a release build can debug one subsystem.
///
/// Layout of each block inside `A`: [front fence][user bytes][back fence], the front fence
/// max(fence_size, align) rounded up to `align` so the user pointer keeps its alignment.
///
/// | bad input                                      | answer                                              |
/// |------------------------------------------------|-----------------------------------------------------|
/// | size 0, non-power-of-two align, overflow       | nullptr, `A` not called                             |
/// | free of nullptr                                | ignored                                             |
/// | double free (within freed_history blocks)      | report double_free, ignored                         |
/// | foreign pointer (never handed out)             | report foreign_pointer, ignored                     |
/// | sized free naming another size or alignment    | report size_mismatch, ignored (the block stays live)|
/// | fence overwritten, seen on free                | report corruption, then the block is freed          |
/// | fence overwritten, seen by verify()            | report corruption per block, verify() returns false |
/// | blocks live at destruction                     | report leak per block (site in message and `where`) |
///
/// The block records live on the global heap (an unordered_map), out of `A`'s memory, so an overrun
/// cannot corrupt them. Costs O(1) hash operations and O(size) fills per call: a debugging tool.
template <allocator A>
class debug {
public:
    using upstream_type = A; ///< the allocator wrapped
    /// Every free is checked (at every checks level) and a refused one reported here: wrappers such
    /// as tracked<A> pass frees through instead of judging them by owns() (core/allocator.hpp).
    static constexpr bool verifies_frees = true;

    /// Effects: constructs `A` from `args`, with default options.
    template <class... Args>
    requires(!detail::first_is_debug_options<Args...>) explicit debug(Args&&... args)
        : registry_(debug_options{}), inner_(std::forward<Args>(args)...) {}
    /// Effects: constructs `A` from `args`, with options `o`.
    template <class... Args>
    explicit debug(const debug_options& o, Args&&... args)
        : registry_(o), inner_(std::forward<Args>(args)...) {}
    debug(const debug&) = delete;
    debug& operator=(const debug&) = delete;
    /// Effects: report_leaks(); then `A` is destroyed.
    ~debug() { registry_.report_leaks(); }

    /// Returns: `size` bytes aligned to `align`, filled with 0xCD, fenced; or nullptr (see table).
    /// `site` records the caller for the leak report; leave it defaulted.
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment,
                                 strata::source_location site = strata::source_location::current()) noexcept {
        if (!is_valid_request(size, align)) return nullptr;
        const debug_options& o = registry_.options();
        const std::size_t front = front_fence(align);
        const auto total = checked_add(front + o.fence_size, size); // front <= fence + align: no overflow
        if (!total) return nullptr;
        auto* raw = static_cast<std::byte*>(inner_.allocate(*total, align));
        if (raw == nullptr) return nullptr;
        std::byte* user = raw + front;
        std::memset(raw, o.fence_fill, front);
        if (o.fill) std::memset(user, fill_allocated, size);
        std::memset(user + size, o.fence_fill, o.fence_size);
        if (!registry_.add(debug_block{user, size, align, front, registry_.next_serial(), site})) {
            inner_.deallocate(raw, *total, align);
            return nullptr;
        }
        return user;
    }

    /// Effects: checks `p` against its record (see table), verifies its fences, fills the whole
    /// block with 0xDD and returns it to `A`. `site` names the caller in reports; leave it defaulted.
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment,
                    strata::source_location site = strata::source_location::current()) noexcept {
        if (p == nullptr) return;
        const debug_block* b = registry_.find(p);
        if (b == nullptr) {
            registry_.report_bad_free(p, site);
            return;
        }
        if (b->size != size || b->align != align) {
            registry_.report_mismatch(*b, size, align, site);
            return;
        }
        release(*b, site);
    }

    /// Effects: as deallocate(p, size, align) with the recorded size and alignment: debug<A> frees
    /// unsized whether or not `A` can.
    void deallocate(void* p, strata::source_location site = strata::source_location::current()) noexcept {
        if (p == nullptr) return;
        const debug_block* b = registry_.find(p);
        if (b == nullptr) {
            registry_.report_bad_free(p, site);
            return;
        }
        release(*b, site);
    }

    /// Returns: true when `p` is a live block of this allocator (exact: the registry is consulted).
    [[nodiscard]] bool owns(const void* p) const noexcept { return registry_.find(p) != nullptr; }
    /// Returns: true when a free of `p` is this allocator's to answer: a live block, one the freed
    /// history remembers (a double free), or any pointer into `A`'s memory where `A` can tell.
    /// fallback and segregator route frees by it (core/allocator.hpp, claims), so a double free is
    /// reported here as one instead of going to the other allocator. Where `A` cannot answer owns(),
    /// an address `A` handed back and another allocator then handed out can still be in the
    /// history: freeing it through the wrapper is reported as a double free (and leaks).
    [[nodiscard]] bool claims(const void* p) const noexcept {
        if (registry_.known(p)) return true;
        if constexpr (owning_allocator<A>) return inner_.owns(p);
        return false;
    }

    /// Returns: true when every live block's fences are intact; each broken block is reported
    /// (corruption). Complexity: O(live blocks x fence size).
    bool verify(strata::source_location site = strata::source_location::current()) const {
        return registry_.verify(site) == 0;
    }

    /// Effects: inner().reset() where `A` resets; every live block is forgotten (not a leak).
    void reset() noexcept requires resettable_allocator<A> {
        registry_.clear_live();
        inner_.reset();
    }

    /// Returns: `A`'s stats (fences included in its bytes).
    [[nodiscard]] strata::stats stats() const noexcept { return inner_.stats(); }

    /// Returns: the leak listing (see debug_registry::leak_report); empty when nothing is live.
    [[nodiscard]] std::string leak_report() const { return registry_.leak_report(); }
    /// Effects: reports every live block as a leak now. Returns: how many.
    std::size_t report_leaks() const { return registry_.report_leaks(); }
    /// Returns: live blocks and the bytes they requested.
    [[nodiscard]] std::size_t live_blocks() const noexcept { return registry_.live_blocks(); }
    [[nodiscard]] std::size_t live_bytes() const noexcept { return registry_.live_bytes(); }
    /// Effects: calls visit(const debug_block&) for each live block, oldest first.
    template <class Visitor>
    void for_each_live(Visitor&& visit) const {
        registry_.for_each_live(std::forward<Visitor>(visit));
    }

    [[nodiscard]] A& inner() noexcept { return inner_; }
    [[nodiscard]] const A& inner() const noexcept { return inner_; }

private:
    [[nodiscard]] std::size_t front_fence(std::size_t align) const noexcept {
        const std::size_t f = registry_.options().fence_size;
        return f <= align ? align : align_down(f + align - 1, align);
    }

    void release(const debug_block& b, const strata::source_location& site) noexcept {
        const debug_block copy = b; // retire() erases the record
        registry_.check_fences(copy, site);
        std::byte* raw = const_cast<std::byte*>(copy.user) - copy.front;
        const std::size_t total = copy.front + copy.size + registry_.options().fence_size;
        if (registry_.options().fill) std::memset(raw, fill_freed, total);
        registry_.retire(copy.user, site);
        inner_.deallocate(raw, total, copy.align);
    }

    debug_registry registry_;
    A inner_;
};

} // namespace strata
