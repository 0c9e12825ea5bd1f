#pragma once
// tracked<A>: per-subsystem memory accounting. A `tracker` is a named node in a hierarchy
// (engine -> renderer -> textures) that counts bytes in use, peak, allocations and per-frame
// traffic, and carries an optional budget with a callback. `tracked<A>` wraps an allocator and
// reports every allocation to one tracker. Cheap enough to leave on: a few adds per allocation.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "strata/adapt/free_reports.hpp"
#include "strata/adapt/fwd.hpp"
#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/core/config.hpp"

namespace strata {

/// Counters of one tracker, or of a tracker and all its descendants (see tracker::totals()).
struct tracker_counters {
    std::size_t in_use = 0;            ///< bytes requested and not yet released
    std::size_t peak = 0;              ///< highest in_use seen (since construction or reset_peak())
    std::size_t live = 0;              ///< allocations not yet released
    std::size_t total = 0;             ///< allocations since construction
    std::size_t frame_allocations = 0; ///< allocations since the last reset_frame()
    std::size_t frame_bytes = 0;       ///< bytes allocated since the last reset_frame()
    std::size_t frame_frees = 0;       ///< frees since the last reset_frame()
};

/// A named accounting node. Trackers form a tree by naming a parent at construction.
///
/// What is eager and what is summed (the hot-path trade-off):
///  - Bytes are eager: an allocation adds its size to in_use of its tracker and of every ancestor,
///    so in_use(), peak() and the budget of every level are exact at all times (a parent's peak is
///    the true peak of its subtree, not the sum of its children's peaks). Cost: O(depth) adds and
///    compares per allocation; engine trees are 2-4 deep.
///  - Counts are summed on report: allocation counts and per-frame counters are kept only by the
///    tracker an allocation was made through (own()); totals() sums them over the subtree. They are
///    additive, so the sum is exact and the hot path touches them once, whatever the depth.
///    Per-frame counters are differences from snapshots reset_frame() takes: free on the hot path.
///  - Every hot counter only grows (in_use = allocated - freed), so a pair costs one store per
///    counter instead of a ++/-- chain through memory. The overhead per depth is measured by
///    bench/adapt_bench.cpp (docs/benchmarks.md, "Adapter overhead").
///
/// Budgets: when an allocation takes in_use from at most budget() to above it, the callback runs
/// once (after the bytes are counted). It does not run again while in_use stays above the budget;
/// it re-arms when a free brings in_use back to or below the budget, and on set_budget(). So it
/// fires exactly once per upward crossing. The allocation itself always succeeds: budgets report,
/// they do not refuse (refuse by wrapping a capped allocator). The callback may allocate. It runs
/// inside the allocation that crossed, under any lock held around that call: behind
/// locked<tracked<A>> it holds the locked<>'s mutex, so it may allocate through unsafe_inner() but
/// must not call the locked<> itself (with std::mutex that relocks a mutex this thread holds: a
/// deadlock); use locked<tracked<A>, std::recursive_mutex> to re-enter it (docs/adapters.md).
///
/// Not thread-safe: a tree is updated by one thread at a time (one tree per thread, or put the
/// allocator behind locked<> and keep the tree private to it). Neither copyable nor movable
/// (children and tracked<> adapters hold its address).
class tracker {
public:
    /// Called as callback(t, bytes): `t` is the tracker whose budget was crossed, `bytes` the size
    /// of the allocation that crossed it.
    using budget_callback = std::function<void(tracker&, std::size_t)>;
    /// budget() when none is set.
    static constexpr std::size_t no_budget = std::numeric_limits<std::size_t>::max();

    /// Effects: a tracker named `name`, the last child of `parent` when given.
    /// Throws: whatever std::string throws copying the name.
    explicit tracker(std::string name, tracker* parent = nullptr);
    tracker(const tracker&) = delete;
    tracker& operator=(const tracker&) = delete;
    /// Effects: unlinks from the parent and takes this subtree's in_use off every ancestor, so a
    /// parent keeps showing the sum of the children it still has. Children become roots.
    ~tracker();

    /// Effects: counts an allocation of `bytes` (called by tracked<A>; callable by hand for memory
    /// a subsystem obtains elsewhere). Complexity: O(depth).
    STRATA_ALWAYS_INLINE void on_allocate(std::size_t bytes) noexcept {
        // Monotonic counters only: in_use = allocated - freed. A counter that an allocate raises
        // and the matching free lowers would chain two store-to-load forwards per pair through
        // memory; counters that only grow cost one each.
        ++allocs_;
        tracker* t = this;
        bool crossed = false;
        do {
            const std::size_t a = t->allocated_ + bytes;
            t->allocated_ = a;
            const std::size_t u = a - t->freed_;
            if (u > t->peak_) t->peak_ = u;
            crossed |= u > t->alarm_;
            t = t->parent_;
        } while (t != nullptr);
        // Callbacks run once every level has counted the bytes, so one that reports the tree
        // never sees a parent that holds less than its child.
        if (STRATA_UNLIKELY(crossed)) cross_from(bytes);
    }

    /// Effects: counts the release of one allocation of `bytes`. Requires: it was counted by
    /// on_allocate on this tracker. Complexity: O(depth).
    STRATA_ALWAYS_INLINE void on_deallocate(std::size_t bytes) noexcept { on_release(bytes, 1); }

    /// Effects: counts the release of `count` allocations totalling `bytes` at once (reset, rewind).
    STRATA_ALWAYS_INLINE void on_release(std::size_t bytes, std::size_t count) noexcept {
        frees_ += count;
        tracker* t = this;
        do {
            const std::size_t f = t->freed_ + bytes;
            t->freed_ = f;
            // Re-arm a fired budget once in_use is back at or below it.
            if (STRATA_UNLIKELY(t->alarm_ != t->budget_) && t->allocated_ - f <= t->budget_)
                t->alarm_ = t->budget_;
            t = t->parent_;
        } while (t != nullptr);
    }

    /// Effects: sets the budget (no_budget removes it) and the callback, and arms it. When in_use
    /// already exceeds `bytes`, the next allocation fires it. The callback runs inside that
    /// allocation, under whatever lock its caller holds (see class comment).
    void set_budget(std::size_t bytes, budget_callback on_over = {});
    /// Returns: the budget in bytes, or no_budget.
    [[nodiscard]] std::size_t budget() const noexcept { return budget_; }
    /// Returns: true when in_use() exceeds the budget.
    [[nodiscard]] bool over_budget() const noexcept { return in_use() > budget_; }
    /// Returns: how many times the budget callback has fired.
    [[nodiscard]] std::size_t budget_crossings() const noexcept { return crossings_; }

    /// Effects: zeroes the per-frame counters of this tracker and of every descendant.
    void reset_frame() noexcept;
    /// Effects: sets peak to in_use for this tracker and every descendant.
    void reset_peak() noexcept;

    /// Returns: bytes in use by this subtree (eager, exact).
    [[nodiscard]] std::size_t in_use() const noexcept { return allocated_ - freed_; }
    /// Returns: the highest in_use() this subtree reached (eager, exact).
    [[nodiscard]] std::size_t peak() const noexcept { return peak_; }
    /// Returns: this tracker's own counters; in_use and peak are the subtree's (see class comment)
    /// except own().in_use, which is this tracker's bytes without its children's.
    [[nodiscard]] tracker_counters own() const noexcept;
    /// Returns: the counters of the whole subtree: in_use and peak eager, counts summed now.
    /// Complexity: O(subtree).
    [[nodiscard]] tracker_counters totals() const noexcept;

    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    /// Returns: the names from the root down, joined by '/': "engine/renderer/textures".
    [[nodiscard]] std::string path() const;
    [[nodiscard]] tracker* parent() const noexcept { return parent_; }
    [[nodiscard]] tracker* first_child() const noexcept { return first_child_; }
    [[nodiscard]] tracker* next_sibling() const noexcept { return next_sibling_; }
    /// Returns: the child named `name`, or nullptr. Complexity: O(children).
    [[nodiscard]] tracker* find_child(std::string_view name) const noexcept;

    /// Returns: a text table of this subtree, one row per tracker (children indented under their
    /// parent): name, in use, peak, budget, live, total, frame allocations, frame bytes, frame frees.
    /// Subtree figures (in use, peak, counts summed). Complexity: O(subtree).
    [[nodiscard]] std::string report_text() const;
    /// Returns: this subtree as JSON for the lab: {"name":..,"in_use":..,"peak":..,"budget":..
    /// (null when none),"live":..,"total":..,"frame_allocations":..,"frame_bytes":..,
    /// "frame_frees":..,"own_in_use":..,"children":[...]}. Complexity: O(subtree).
    [[nodiscard]] std::string report_json() const;

private:
    STRATA_NOINLINE void cross_from(std::size_t bytes) noexcept; // fires every armed level crossed
    void cross(std::size_t bytes) noexcept;
    [[nodiscard]] std::size_t own_allocated() const noexcept; // allocated_ less the children's

    // Hot state first: what on_allocate touches on every level.
    std::size_t allocated_ = 0;     // bytes ever allocated in this subtree
    std::size_t freed_ = 0;         // bytes ever freed in this subtree
    std::size_t peak_ = 0;          // highest allocated_ - freed_
    std::size_t alarm_ = no_budget; // budget_ while armed, no_budget after firing
    tracker* parent_ = nullptr;
    std::size_t allocs_ = 0; // allocations counted through this tracker
    std::size_t frees_ = 0;  // frees counted through this tracker
    // Per-frame counters are differences from these snapshots (taken by reset_frame()).
    std::size_t frame_allocs_base_ = 0;
    std::size_t frame_frees_base_ = 0;
    std::size_t frame_bytes_base_ = 0; // own bytes allocated at the snapshot
    std::size_t budget_ = no_budget;
    std::size_t crossings_ = 0;
    tracker* first_child_ = nullptr;
    tracker* next_sibling_ = nullptr;
    // Shared, so a callback that calls set_budget() on its own tracker (re-arming, or removing the
    // budget) does not destroy the function object while it runs: cross() holds a reference.
    std::shared_ptr<const budget_callback> on_over_;
    std::string name_;
};

/// An allocator that forwards to `A` (owned by value; wrap an allocator_ref<A> to refer to one
/// that lives elsewhere) and counts every allocation on a tracker.
///
/// Counts the size the caller asked for (what a subsystem is responsible for), not `A`'s padding
/// and headers, which `stats()` (forwarded from `A`) shows. A free is counted when the caller makes
/// it, whether or not `A` reclaims the bytes then (an arena reclaims only its top). reset() and
/// rewind() (where `A` has them) release what was counted since, and so does destruction for such an
/// allocator, which is routinely destroyed with live blocks. Any other allocator destroyed with live
/// blocks leaked them: they stay counted on the tracker, so its report shows the leak.
///
/// Bad input: what `A` answers (nullptr is not counted). Freeing nullptr: ignored. Cross-allocator
/// free (a pointer `A` neither owns nor claims, where `A` can answer owns()): reported at checks >= 1 as
/// foreign_pointer and ignored (nothing counted, `A` not called); at checks 0 undefined as for `A`.
/// A free `A` reports and refuses (double free, size mismatch...) is not counted, at checks >= 1,
/// and at every level where `A` is a reporting_allocator (adapt/free_reports.hpp: debug<A>, or a
/// fallback / segregator with one inside); a report of damage that does not refuse the free (debug:
/// a broken fence, a write after free) does not stop it being counted. A self-verifying `A`
/// (debug<A>, core/allocator.hpp) judges every free itself, at every checks level: a double free is
/// then reported as double_free (its owns() means "live", so the check above would have called it
/// foreign), and a free is counted when the block was live before the call and is not after it.
template <allocator A>
class tracked {
public:
    using upstream_type = A; ///< the allocator wrapped
    /// true where `A` releases in bulk (reset() or rewind()): the adapter then keeps its own counts
    /// so it can release them; otherwise the hot path touches the tracker only.
    static constexpr bool keeps_counts = resettable_allocator<A> || marking_allocator<A>;
    /// As `A`'s (core/allocator.hpp, self_verifying_allocator): tracked<debug<B>> inside another
    /// wrapper is judged like debug<B> itself.
    static constexpr bool verifies_frees = self_verifying_allocator<A>;
    /// As `A`'s (adapt/free_reports.hpp, reporting_allocator): a wrapper over this adapter watches
    /// the reports across a free at every checks level, as this adapter does over `A`.
    static constexpr bool reports_frees = reporting_allocator<A>;

    /// A saved position for rewind(): `A`'s marker and the bytes and count at the time.
    template <class M>
    struct basic_marker {
        M inner;
        std::size_t bytes;
        std::size_t count;
    };

    /// Effects: constructs `A` from `args` and counts on `t`. Requires: `t` outlives this.
    template <class... Args>
    explicit tracked(tracker& t, Args&&... args) : inner_(std::forward<Args>(args)...), tracker_(&t) {}
    tracked(const tracked&) = delete;
    tracked& operator=(const tracked&) = delete;
    /// Effects: where keeps_counts, releases whatever is still counted from the tracker; otherwise
    /// live blocks stay counted (a leak). `A` is destroyed with the adapter.
    ~tracked() {
        if constexpr (keeps_counts) {
            if (own_.allocs != own_.frees) tracker_->on_release(bytes_in_use(), live_allocations());
        }
    }

    /// Returns: inner().allocate(size, align); counts `size` on the tracker when not nullptr.
    /// Complexity: `A`'s, plus O(tracker depth).
    [[nodiscard]] STRATA_ALWAYS_INLINE void* allocate(std::size_t size,
                                                      std::size_t align = default_alignment) noexcept {
        void* p = inner_.allocate(size, align);
        if (STRATA_LIKELY(p != nullptr)) {
            if constexpr (keeps_counts) {
                own_.allocated += size;
                ++own_.allocs;
            }
            tracker_->on_allocate(size);
        }
        return p;
    }

    /// Effects: inner().deallocate(p, size, align) and counts the release. Requires: `p` came from
    /// allocate(size, align) of this adapter (see class comment for what is checked).
    STRATA_ALWAYS_INLINE void deallocate(void* p, std::size_t size,
                                         std::size_t align = default_alignment) noexcept {
        if (p == nullptr) return;
        if constexpr (self_verifying_allocator<A> && owning_allocator<A>) {
            // A answers every bad free itself, at every checks level, and may report yet free all
            // the same (debug<A>: a broken fence): count what happened, not what was reported.
            // Its owns() means live.
            const bool was_live = inner_.owns(p);
            inner_.deallocate(p, size, align);
            if (!was_live || inner_.owns(p)) return;
        } else if constexpr (STRATA_CHECKS >= 1 || reporting_allocator<A>) {
            if constexpr (owning_allocator<A>) {
                // claims, not owns: a fallback with debug<> inside claims the blocks debug freed,
                // so a double free reaches debug and is reported as one.
                if (!STRATA_VERIFY(
                        1, strata::claims(inner_, p), foreign_pointer, "strata::tracked", p,
                        "freed a pointer the wrapped allocator does not own (cross-allocator free)"))
                    return;
            }
            // A free the wrapped allocator refused (double free, size mismatch...) changed nothing
            // there, so it changes nothing here either: counted, it would drive in_use below zero.
            // A report that refused nothing (debug<> inside a fallback found a broken fence and
            // freed the block all the same) is not a refusal: report_watch leaves those out.
            // A reporting A (debug<> somewhere inside) reports at every checks level, so this runs
            // at 0 too.
            const report_watch watch;
            inner_.deallocate(p, size, align);
            if (watch.refused()) return;
        } else {
            inner_.deallocate(p, size, align);
        }
        if constexpr (keeps_counts) {
            own_.freed += size;
            ++own_.frees;
        }
        tracker_->on_deallocate(size);
    }

    /// Returns: inner().owns(p). Only where `A` can answer.
    [[nodiscard]] bool owns(const void* p) const noexcept requires owning_allocator<A> {
        return inner_.owns(p);
    }
    /// Returns: strata::holds(inner(), p) (core/allocator.hpp).
    [[nodiscard]] bool holds(const void* p) const noexcept { return strata::holds(inner_, p); }
    /// Returns: strata::claims(inner(), p) (core/allocator.hpp). Only where `A` can answer owns().
    [[nodiscard]] bool claims(const void* p) const noexcept requires owning_allocator<A> {
        return strata::claims(inner_, p);
    }

    /// Effects: inner().reset(); releases everything counted through this adapter.
    void reset() noexcept requires resettable_allocator<A> {
        inner_.reset();
        release_all();
    }

    /// Returns: a marker for inner().mark() and the counts now.
    [[nodiscard]] auto mark() const noexcept requires marking_allocator<A> {
        using M = decltype(inner_.mark());
        return basic_marker<M>{inner_.mark(), bytes_in_use(), live_allocations()};
    }

    /// Effects: inner().rewind(m.inner); releases what was counted after the mark, net: a block from
    /// before the mark freed since is netted against it (docs/adapters.md). A marker newer than the
    /// counts (already rewound past) releases nothing more, nor, at checks >= 1, one `A` reported
    /// and ignored (foreign or stale).
    template <class M>
    void rewind(const basic_marker<M>& m) noexcept requires marking_allocator<A> {
#if STRATA_CHECKS >= 1
        // A refused marker released nothing in A; released here, the counts would fall below
        // what is still live.
        const std::uint64_t reported = violations_reported();
        inner_.rewind(m.inner);
        if (violations_reported() != reported) return;
#else
        inner_.rewind(m.inner);
#endif
        // Bytes and count each fall to the mark's, never below: blocks from before the mark that
        // were freed since can leave one of them under the mark's while the other is above it
        // (released together, or not at all, a large rewind left everything counted).
        const std::size_t bytes = bytes_in_use();
        const std::size_t count = live_allocations();
        const std::size_t bytes_back = bytes > m.bytes ? bytes - m.bytes : 0;
        const std::size_t count_back = count > m.count ? count - m.count : 0;
        if (bytes_back != 0 || count_back != 0) {
            tracker_->on_release(bytes_back, count_back);
            own_.freed += bytes_back;
            own_.frees += count_back;
        }
    }

    /// Returns: inner().stats() (the wrapped allocator's view: padding and headers included).
    [[nodiscard]] strata::stats stats() const noexcept { return inner_.stats(); }

    /// Returns: bytes and allocations this adapter has counted and not released.
    /// Only where `A` releases in bulk (reset or rewind): those are the allocators that need them.
    [[nodiscard]] std::size_t bytes_in_use() const noexcept requires keeps_counts {
        return own_.allocated - own_.freed;
    }
    [[nodiscard]] std::size_t live_allocations() const noexcept requires keeps_counts {
        return own_.allocs - own_.frees;
    }

    [[nodiscard]] A& inner() noexcept { return inner_; }
    [[nodiscard]] const A& inner() const noexcept { return inner_; }
    [[nodiscard]] tracker& get_tracker() const noexcept { return *tracker_; }

private:
    void release_all() noexcept {
        tracker_->on_release(bytes_in_use(), live_allocations());
        own_.freed = own_.allocated;
        own_.frees = own_.allocs;
    }

    A inner_;
    tracker* tracker_; // never null
    // What this adapter counted, for reset/rewind/destruction; monotonic, as in tracker.
    struct counts {
        std::size_t allocated = 0;
        std::size_t freed = 0;
        std::size_t allocs = 0;
        std::size_t frees = 0;
    };
    struct no_counts {};
    [[no_unique_address]] std::conditional_t<keeps_counts, counts, no_counts> own_;
};

} // namespace strata
