#pragma once
// guard_page_allocator and guarded<A>: every allocation on its own pages, flush against an
// inaccessible guard page (Unreal's MallocStomp, Windows PageHeap), so an overrun, an underrun
// (optional) or a use after free faults at the faulting instruction instead of corrupting a
// neighbour. Costs at least two pages of address space and one committed page per allocation, and
// a system call or two per allocate and free: for hunting one bug, not for shipping.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>

#include "strata/adapt/free_reports.hpp"
#include "strata/adapt/fwd.hpp"
#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/source/virtual_memory.hpp"

namespace strata {

/// Settings of a guard_page_allocator.
struct guard_options {
    /// Address space reserved up front (nothing is committed until used).
    std::size_t reserve_bytes = std::size_t{1} << 30;
    /// false: the block ends flush against a guard page after it (overruns fault).
    /// true: the block starts flush against a guard page before it (underruns fault); a guard page
    /// still follows the block's pages, so a long overrun faults too.
    bool underrun = false;
    /// Freed address space kept inaccessible (and not reused) before it may serve again, so a use
    /// after free faults even after later allocations. 0: reuse at once; max(): never reuse.
    std::size_t quarantine_bytes = std::size_t{64} << 20;
};

/// An allocator that places every block on fresh pages next to a guard page (see guard_options).
///
/// Placement: overrun mode puts the block's end as close to the guard page as `align` allows: for
/// align 1 flush, otherwise the end lies within align - 1 bytes of it (a 13-byte block aligned to
/// 16 has 3 bytes of slack an overrun must cross before it faults). Underrun mode puts the block at
/// the start of its first page, flush against the guard page before it.
///
/// Freeing decommits the block's pages (they fault from then on) and quarantines the address range.
/// A range that leaves the quarantine is merged with the free ranges beside it (and with the
/// never-used tail of the reservation), and a request takes the smallest free range that holds its
/// slot, the rest staying free: address space is reused for any size. A slot still needs one
/// free range (or the tail) that holds it whole, so fragmentation remains: a buffer growing a page
/// at a time, old and new live together, reaches about a third of the reservation. Free ranges stay
/// decommitted and PROT_NONE, so a slot carved from them still has inaccessible guard pages.
/// Complexity per allocate and free: O(log free ranges) (two ordered indexes), plus the system
/// calls.
///
/// Bad input: size 0, non-power-of-two align, align above the page size, reservation exhausted:
/// nullptr. Free of nullptr: ignored. Free of a pointer that is not a live block (double free,
/// foreign, interior): reported at checks >= 1 (double_free when the pointer is in this allocator's
/// range, foreign_pointer otherwise) and ignored at every level. A sized free's size is not needed
/// and not checked. Not thread-safe (wrap in locked<>).
class guard_page_allocator {
public:
    /// Effects: reserves `o.reserve_bytes`. Throws: std::system_error when it cannot.
    explicit guard_page_allocator(const guard_options& o = {});
    guard_page_allocator(const guard_page_allocator&) = delete;
    guard_page_allocator& operator=(const guard_page_allocator&) = delete;
    /// Effects: releases the reservation; outstanding pointers fault from then on.
    ~guard_page_allocator();

    /// Returns: `size` bytes aligned to `align` placed against a guard page, or nullptr (see class
    /// comment). Complexity: O(log free ranges), plus an mprotect.
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept;
    /// Effects: makes the block's pages inaccessible and quarantines them; ranges pushed out of the
    /// quarantine become reusable (see class comment). Complexity: O(log free ranges) per range
    /// released, plus an madvise and an mprotect.
    void deallocate(void* p) noexcept;
    /// Effects: deallocate(p); size and alignment are not needed.
    void deallocate(void* p, std::size_t /*size*/, std::size_t /*align*/) noexcept { deallocate(p); }

    /// Returns: true when `p` lies inside this allocator's reservation. O(1).
    [[nodiscard]] bool owns(const void* p) const noexcept { return vm_.contains(p); }

    /// Returns: in_use (requested bytes), peak, capacity (committed bytes), live and total
    /// allocations, largest_free_block 0 (not tracked).
    [[nodiscard]] strata::stats stats() const noexcept;

    /// Returns: bytes of address space in quarantine now.
    [[nodiscard]] std::size_t quarantined_bytes() const noexcept { return quarantined_; }
    [[nodiscard]] const guard_options& options() const noexcept { return opts_; }

private:
    struct state;
    guard_options opts_;
    virtual_memory vm_;
    std::unique_ptr<state> state_;
    std::size_t page_ = 0;
    std::size_t top_ = 0; // offset of the first page of the free tail (never used, or merged back)
    std::size_t quarantined_ = 0;
    std::size_t in_use_ = 0;
    std::size_t peak_ = 0;
    std::size_t committed_ = 0;
    std::size_t live_ = 0;
    std::size_t total_ = 0;
};

/// Settings of a guarded<A>: which allocations go to guard pages.
struct guarded_options {
    guard_options guard{};                                          ///< the guard page allocator's
    std::size_t sample_every = 1;                                   ///< 1: every allocation; N: every Nth
    std::size_t max_size = std::numeric_limits<std::size_t>::max(); ///< larger requests go to `A`
};

/// `A` (owned by value) with some or all allocations moved onto guard pages: every
/// `sample_every`-th allocation of at most `max_size` bytes goes to a guard_page_allocator (the
/// rest, and any it cannot serve, go to `A`). Frees are routed by the guard allocator's owns(),
/// which is exact and O(1), so `A` need not be an owning allocator. Sampling every Nth allocation
/// (as GWP-ASan does) keeps a large program running at near full speed while still catching a
/// fraction of overruns and use-after-frees at the faulting instruction.
/// Bad input: as guard_page_allocator for guarded blocks, as `A` for the others.
template <allocator A>
class guarded {
public:
    using upstream_type = A; ///< the allocator wrapped
    /// As `A`'s (adapt/free_reports.hpp, reporting_allocator): frees of `A`'s blocks pass through
    /// unjudged. Not self-verifying (verifies_frees): the guard allocator reports only at checks >= 1.
    static constexpr bool reports_frees = reporting_allocator<A>;

    /// Effects: constructs `A` from `args`; reserves the guard allocator's address space.
    /// Throws: std::system_error when the reservation fails; what `A`'s constructor throws.
    template <class... Args>
    explicit guarded(const guarded_options& o, Args&&... args)
        : guard_(o.guard), inner_(std::forward<Args>(args)...), every_(o.sample_every ? o.sample_every : 1),
          max_size_(o.max_size), countdown_(every_) {}

    /// Returns: a guarded block when this allocation is sampled and fits max_size (and the guard
    /// allocator can serve it), otherwise inner().allocate(size, align).
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        if (size <= max_size_ && --countdown_ == 0) {
            countdown_ = every_;
            if (void* p = guard_.allocate(size, align)) return p;
        }
        return inner_.allocate(size, align);
    }
    /// Effects: frees `p` to the guard allocator when it owns `p`, otherwise to `A`.
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        if (guard_.owns(p)) {
            guard_.deallocate(p);
        } else {
            inner_.deallocate(p, size, align);
        }
    }
    /// Returns: true when the guard allocator or `A` owns `p` (`A` only where it can answer).
    [[nodiscard]] bool owns(const void* p) const noexcept requires owning_allocator<A> {
        return guard_.owns(p) || inner_.owns(p);
    }
    /// Returns: true when the guard allocator owns `p` or `A` claims it (core/allocator.hpp,
    /// claims): with debug<> inside, a double free reaches it and is reported as one.
    [[nodiscard]] bool claims(const void* p) const noexcept requires owning_allocator<A> {
        return guard_.owns(p) || strata::claims(inner_, p);
    }
    /// Returns: strata::holds(inner(), p): a block debug<> inside still holds back.
    [[nodiscard]] bool holds(const void* p) const noexcept { return strata::holds(inner_, p); }
    /// Returns: the sum of both allocators' stats (peak: the sum of peaks, an upper bound).
    [[nodiscard]] strata::stats stats() const noexcept {
        strata::stats a = guard_.stats();
        const strata::stats b = inner_.stats();
        add_counts(a, b);
        a.largest_free_block = b.largest_free_block;
        return a;
    }

    [[nodiscard]] guard_page_allocator& guard() noexcept { return guard_; }
    [[nodiscard]] A& inner() noexcept { return inner_; }
    [[nodiscard]] const A& inner() const noexcept { return inner_; }

private:
    guard_page_allocator guard_;
    A inner_;
    std::size_t every_;
    std::size_t max_size_;
    std::size_t countdown_;
};

} // namespace strata
