#pragma once
// debug<A>: a debugging allocator for any strata allocator, on in every build type (it does not
// look at STRATA_CHECKS): fences around every block, fill patterns, double free / foreign pointer /
// size mismatch detection, a quarantine that catches writes after free, and a leak report with
// each block's allocation site on destruction.
// Reports go through the violation handler (core/check.hpp), so tests and tools can capture them.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "strata/adapt/free_reports.hpp"
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
    /// quarantine_bytes left to debug<A>: default_quarantine_bytes, or 0 over an allocator with
    /// mark()/rewind() (arena, stack_allocator; see quarantine_bytes).
    static constexpr std::size_t auto_quarantine = static_cast<std::size_t>(-1);
    /// What auto_quarantine means over an allocator without mark()/rewind(): 1 MiB.
    static constexpr std::size_t default_quarantine_bytes = std::size_t{1} << 20;

    std::size_t fence_size = 16;     ///< guard bytes after each block (and at least this many before)
    unsigned char fence_fill = 0xFD; ///< the fence pattern
    bool fill = true;                ///< 0xCD over fresh blocks, 0xDD over freed ones
    /// Freed blocks remembered to tell a double free from a foreign pointer (at least
    /// quarantine_blocks while the quarantine is on, so a quarantined block is always remembered).
    /// A ring of 16 bytes per entry, allocated once at construction.
    std::size_t freed_history = std::size_t{1} << 14;
    /// Freed bytes (fences included) held back from `A`, oldest first, before they go back to it:
    /// filled 0xDD and poisoned for ASan while held, and checked when they leave, so a write after
    /// free is reported (and, under ASan, any touch faults at once). 0: no quarantine, every free
    /// goes straight to `A`. auto_quarantine: 1 MiB, except over an allocator with mark()/rewind()
    /// (arena, stack_allocator), where holding a free back would reorder frees a LIFO allocator
    /// needs in order (a stack reports that as out_of_order_free), and over a frame_allocator (one
    /// with next_frame(), which recycles memory without frees): 0 there. Set 0 by hand over
    /// another LIFO or recycling allocator, or a wrapper that hides mark() (locked<stack_allocator>),
    /// or call drop_quarantine() before recycling `A`'s memory through inner().
    std::size_t quarantine_bytes = auto_quarantine;
    /// At most this many blocks in the quarantine (its ring, 56-88 bytes per entry, is allocated
    /// once at construction, so holding a block never allocates). 0: no quarantine.
    std::size_t quarantine_blocks = std::size_t{1} << 12;
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

/// A freed block debug<A> holds in its quarantine.
struct debug_quarantined {
    debug_block block;                ///< the block as it was while live
    strata::source_location freed_at; ///< where it was freed
};

/// The type-independent half of debug<A> (src/adapt/debug.cpp): the block registry, the freed
/// history and the quarantine (two rings allocated once at construction), and the reports.
/// Each report passes a message built for it; the string lives until the handler returns.
class debug_registry {
public:
    /// Effects: an empty registry with options `o` as given (auto_quarantine resolved by the
    /// caller). Throws: std::bad_alloc when the rings cannot be allocated.
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
    /// Returns: true when `p` is a live block or a freed one still in the quarantine.
    [[nodiscard]] bool holds(const void* p) const noexcept;
    /// Effects: moves the live block `p` to the freed history (the oldest entry drops out of a full
    /// one). Never allocates: the history is a ring sized at construction.
    void retire(const void* p, const strata::source_location& freed_at) noexcept;
    /// Effects: reports a free of `p`, which is not live: double_free when the history knows it,
    /// foreign_pointer otherwise.
    void report_bad_free(const void* p, const strata::source_location& where) const;
    /// Effects: reports size_mismatch for a free of `b` that named `size`/`align`.
    void report_mismatch(const debug_block& b, std::size_t size, std::size_t align,
                         const strata::source_location& where) const;
    /// Returns: true when both fences of `b` are intact; otherwise reports corruption and returns false.
    bool check_fences(const debug_block& b, const strata::source_location& where) const;
    /// Effects: forgets every live and freed block (the wrapped allocator was reset), without
    /// reports. Requires: the quarantine is empty (drop_quarantine()).
    void clear_live() noexcept;
    /// Returns: the number of live blocks with a broken fence plus quarantined blocks written after
    /// they were freed (each reported). Quarantined blocks are unpoisoned to be read, then poisoned
    /// again; none leaves the quarantine.
    std::size_t verify(const strata::source_location& where) const;

    /// Returns: true when freed blocks are held back (quarantine_bytes and quarantine_blocks > 0).
    [[nodiscard]] bool quarantining() const noexcept { return quarantine_cap_ != 0; }
    /// Returns: true when the quarantine holds quarantine_blocks blocks (push needs a pop first).
    [[nodiscard]] bool quarantine_full() const noexcept { return quarantine_count_ == quarantine_cap_; }
    /// Returns: true when the quarantine holds more than quarantine_bytes.
    [[nodiscard]] bool quarantine_over() const noexcept {
        return quarantined_bytes_ > opts_.quarantine_bytes;
    }
    /// Effects: appends the freed block `b` (already retired, filled and poisoned by the caller).
    /// Requires: quarantining() and !quarantine_full(). Never allocates.
    void quarantine_push(const debug_block& b, const strata::source_location& freed_at) noexcept;
    /// Effects: removes the oldest quarantined block. Returns: it. Requires: quarantined_blocks() > 0.
    debug_quarantined quarantine_pop() noexcept;
    /// Returns: true when the freed block `q` still holds the freed fill throughout (or fills are
    /// off); otherwise reports corruption ("use after free: ...", naming where `q` was freed and
    /// allocated; counted as refusing nothing, adapt/free_reports.hpp) and returns false.
    /// Requires: `q`'s bytes are readable (unpoisoned).
    bool check_freed(const debug_quarantined& q, const strata::source_location& where) const;
    /// Effects: checks every quarantined block (check_freed), unpoisons it and forgets it, without
    /// handing it to `A`: for reset(), when `A` is reset next.
    void drop_quarantine(const strata::source_location& where) noexcept;
    /// Returns: blocks and bytes (fences included) in the quarantine now.
    [[nodiscard]] std::size_t quarantined_blocks() const noexcept { return quarantine_count_; }
    [[nodiscard]] std::size_t quarantined_bytes() const noexcept { return quarantined_bytes_; }
    /// Returns: the bytes a block takes inside `A`: front fence, user bytes, back fence.
    [[nodiscard]] std::size_t footprint(const debug_block& b) const noexcept {
        return b.front + b.size + opts_.fence_size;
    }
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
    std::size_t quarantine_cap_ = 0;  // ring entries; 0 when the quarantine is off
    std::size_t quarantine_head_ = 0; // oldest entry
    std::size_t quarantine_count_ = 0;
    std::size_t quarantined_bytes_ = 0;
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
/// Quarantine (debug_options::quarantine_bytes): a freed block is filled with 0xDD, poisoned for
/// ASan and held, oldest first, instead of going straight back to `A`; it goes back when the
/// quarantine holds more than quarantine_bytes or quarantine_blocks, when `A` cannot serve a
/// request (everything held goes back first and the request is retried once, so the quarantine
/// never makes an allocation fail), and on destruction (before the leak report). Each block's fill
/// is checked as it leaves, so a write after free is reported then; under ASan a read or write of
/// a held block faults at once. `A` does not hand a held block's address out again, so a double
/// free of it is always reported as double_free. Off by default over an allocator with
/// mark()/rewind() (see debug_options).
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
/// | quarantined block written after free           | report corruption ("use after free") when it leaves |
/// |                                                | the quarantine or verify() runs; freed all the same |
/// | blocks live at destruction                     | report leak per block (site in message and `where`) |
///
/// The block records live on the global heap (an unordered_map), out of `A`'s memory, so an overrun
/// cannot corrupt them; the freed history and the quarantine are rings allocated at construction.
/// Costs O(1) hash operations and O(size) fills and checks per call: a debugging tool.
template <allocator A>
class debug {
public:
    using upstream_type = A; ///< the allocator wrapped
    /// Every free is checked (at every checks level) and a refused one reported here: wrappers such
    /// as tracked<A> pass frees through instead of judging them by owns() (core/allocator.hpp).
    static constexpr bool verifies_frees = true;

    /// Effects: constructs `A` from `args`, with default options.
    /// Throws: std::bad_alloc when the history or quarantine ring cannot be allocated.
    template <class... Args>
    requires(!detail::first_is_debug_options<Args...>) explicit debug(Args&&... args)
        : registry_(resolve(debug_options{})), inner_(std::forward<Args>(args)...) {}
    /// Effects: constructs `A` from `args`, with options `o`.
    /// Throws: std::bad_alloc when the history or quarantine ring cannot be allocated.
    template <class... Args>
    explicit debug(const debug_options& o, Args&&... args)
        : registry_(resolve(o)), inner_(std::forward<Args>(args)...) {}
    debug(const debug&) = delete;
    debug& operator=(const debug&) = delete;
    /// Effects: every quarantined block is checked (a write after free reported, `where` its free
    /// site) and given back to `A`; then report_leaks(); then `A` is destroyed.
    ~debug() {
        while (registry_.quarantined_blocks() != 0) {
            const debug_quarantined q = registry_.quarantine_pop();
            give_back(q, q.freed_at);
        }
        registry_.report_leaks();
    }

    /// Returns: `size` bytes aligned to `align`, filled with 0xCD, fenced; or nullptr (see table).
    /// When `A` answers nullptr and the quarantine holds blocks, they all go back to `A` (checked)
    /// and the request is retried once. `site` records the caller for the leak report; leave it
    /// defaulted.
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment,
                                 strata::source_location site = strata::source_location::current()) noexcept {
        if (!is_valid_request(size, align)) return nullptr;
        const debug_options& o = registry_.options();
        const std::size_t front = front_fence(align);
        const auto total = checked_add(front + o.fence_size, size); // front <= fence + align: no overflow
        if (!total) return nullptr;
        auto* raw = static_cast<std::byte*>(inner_.allocate(*total, align));
        if (raw == nullptr) {
            // `A` may be short only of what the quarantine holds: a debugging wrapper must not make
            // a request fail that would succeed without it.
            if (registry_.quarantined_blocks() == 0) return nullptr;
            drain(site);
            raw = static_cast<std::byte*>(inner_.allocate(*total, align));
            if (raw == nullptr) return nullptr;
        }
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
    /// block with 0xDD and quarantines it (or returns it to `A` when the quarantine is off); blocks
    /// pushed out of the quarantine are checked and returned to `A`. `site` names the caller in
    /// reports; leave it defaulted.
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
    /// A quarantined block is not live.
    [[nodiscard]] bool owns(const void* p) const noexcept { return registry_.find(p) != nullptr; }
    /// Returns: true when a free of `p` is this allocator's to answer: a live block, one the freed
    /// history remembers (a double free; quarantined blocks always are), or any pointer into `A`'s
    /// memory where `A` can tell. fallback and segregator route frees by owns() of both sides first
    /// and by claims() only for a pointer no side owns (core/allocator.hpp, claims), so a double
    /// free is reported here as one instead of going to the other allocator, and a live block of
    /// the other allocator at an address this one remembers still goes there.
    /// Returns: true when `p` is a live block or a freed one in the quarantine: an address `A` has
    /// not had back, so no other allocator over the same memory can have handed it out.
    [[nodiscard]] bool holds(const void* p) const noexcept { return registry_.holds(p); }

    [[nodiscard]] bool claims(const void* p) const noexcept {
        if (registry_.known(p)) return true;
        if constexpr (owning_allocator<A>) return inner_.owns(p);
        return false;
    }

    /// Returns: true when every live block's fences are intact and no quarantined block was written
    /// after it was freed; each broken block is reported (corruption). Nothing leaves the
    /// quarantine. Complexity: O(live blocks x fence size + quarantined bytes).
    bool verify(strata::source_location site = strata::source_location::current()) const {
        return registry_.verify(site) == 0;
    }

    /// Effects: checks the quarantined blocks (a write after free is reported) and forgets them
    /// without giving them to `A`; then inner().reset() where `A` resets; every live block is
    /// forgotten (not a leak).
    void reset(strata::source_location site = strata::source_location::current()) noexcept requires
        resettable_allocator<A> {
        registry_.drop_quarantine(site); // before A's reset, which may hand the memory on
        registry_.clear_live();
        inner_.reset();
    }

    /// Effects: checks the quarantined blocks (a write after free is reported) and forgets them
    /// without giving them to `A`. Call it before recycling `A`'s memory through inner() (a
    /// reset, a frame change): a block held across that would be given back later, freeing
    /// whatever `A` has handed out at its address since.
    void drop_quarantine(strata::source_location site = strata::source_location::current()) noexcept {
        registry_.drop_quarantine(site);
    }

    /// Returns: `A`'s stats (fences included in its bytes; quarantined blocks are still in use
    /// there: `A` has not had them back yet).
    [[nodiscard]] strata::stats stats() const noexcept { return inner_.stats(); }

    /// Returns: the leak listing (see debug_registry::leak_report); empty when nothing is live.
    [[nodiscard]] std::string leak_report() const { return registry_.leak_report(); }
    /// Effects: reports every live block as a leak now. Returns: how many.
    std::size_t report_leaks() const { return registry_.report_leaks(); }
    /// Returns: live blocks and the bytes they requested.
    [[nodiscard]] std::size_t live_blocks() const noexcept { return registry_.live_blocks(); }
    [[nodiscard]] std::size_t live_bytes() const noexcept { return registry_.live_bytes(); }
    /// Returns: freed blocks held in the quarantine, and the bytes they take in `A` (fences included).
    [[nodiscard]] std::size_t quarantined_blocks() const noexcept { return registry_.quarantined_blocks(); }
    [[nodiscard]] std::size_t quarantined_bytes() const noexcept { return registry_.quarantined_bytes(); }
    /// Returns: the options in force (auto_quarantine resolved).
    [[nodiscard]] const debug_options& options() const noexcept { return registry_.options(); }
    /// Effects: calls visit(const debug_block&) for each live block, oldest first.
    template <class Visitor>
    void for_each_live(Visitor&& visit) const {
        registry_.for_each_live(std::forward<Visitor>(visit));
    }

    [[nodiscard]] A& inner() noexcept { return inner_; }
    [[nodiscard]] const A& inner() const noexcept { return inner_; }

private:
    // True when B, or an allocator it wraps (upstream_type: allocator_ref, tracked, locked),
    // recycles its memory at next_frame(): debug<allocator_ref<frame_allocator>> is one too.
    template <class B>
    static consteval bool recycles_at_next_frame() {
        if constexpr (requires(B & b) { b.next_frame(); }) {
            return true;
        } else if constexpr (requires { typename B::upstream_type; }) {
            return recycles_at_next_frame<std::remove_cv_t<typename B::upstream_type>>();
        } else {
            return false;
        }
    }

    static debug_options resolve(debug_options o) noexcept {
        if (o.quarantine_bytes == debug_options::auto_quarantine) {
            // A LIFO allocator needs its frees in order; held back, they would come out of order.
            // A frame allocator recycles its memory at next_frame() without any free, so a held
            // block's memory is handed out again while held, and its late give-back would free
            // the new block.
            o.quarantine_bytes = marking_allocator<A> || recycles_at_next_frame<A>()
                                     ? 0
                                     : debug_options::default_quarantine_bytes;
        }
        return o;
    }

    [[nodiscard]] std::size_t front_fence(std::size_t align) const noexcept {
        const std::size_t f = registry_.options().fence_size;
        return f <= align ? align : align_down(f + align - 1, align);
    }

    void release(const debug_block& b, const strata::source_location& site) noexcept {
        const debug_block copy = b; // retire() erases the record
        registry_.check_fences(copy, site);
        std::byte* raw = const_cast<std::byte*>(copy.user) - copy.front;
        const std::size_t total = registry_.footprint(copy);
        if (registry_.options().fill) std::memset(raw, fill_freed, total);
        registry_.retire(copy.user, site);
        if (!registry_.quarantining()) {
            inner_.deallocate(raw, total, copy.align);
            return;
        }
        if (registry_.quarantine_full()) give_back(registry_.quarantine_pop(), site);
        poison(raw, total);
        registry_.quarantine_push(copy, site);
        // A block larger than the whole quarantine leaves at once (checked like any other).
        while (registry_.quarantine_over())
            give_back(registry_.quarantine_pop(), site);
    }

    // A block leaving the quarantine: readable again, its fill checked, back to A.
    void give_back(const debug_quarantined& q, const strata::source_location& where) noexcept {
        std::byte* raw = const_cast<std::byte*>(q.block.user) - q.block.front;
        const std::size_t total = registry_.footprint(q.block);
        unpoison(raw, total);
        registry_.check_freed(q, where);
        inner_.deallocate(raw, total, q.block.align);
    }

    void drain(const strata::source_location& where) noexcept {
        while (registry_.quarantined_blocks() != 0)
            give_back(registry_.quarantine_pop(), where);
    }

    debug_registry registry_;
    A inner_;
};

} // namespace strata
