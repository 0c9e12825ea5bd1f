#pragma once
// What a wrapper needs to judge a free it passed on (tracked<A> counts a free only when it went
// through; fallback and segregator route it to the allocator that should judge it): which
// allocators report bad frees at every STRATA_CHECKS level, which can claim more than they own,
// and which reports refused nothing.
#include <concepts>
#include <cstdint>

#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"

namespace strata {

// clang-format 14 mangles requires-expressions; keep the concepts as written.
// clang-format off
/// An allocator that reports some bad frees at every STRATA_CHECKS level and ignores them (a
/// refused free changes nothing). It says so with `static constexpr bool reports_frees = true;`.
/// Every self-verifying allocator (core/allocator.hpp) is one; so is a composition with one inside
/// that is not self-verifying as a whole (fallback<debug<A>, B>: frees of debug's blocks are judged
/// at every level, B's only as B judges them). tracked<A> watches the reports across a free of
/// such an A at every checks level, not only at checks >= 1.
template <class A>
concept reporting_allocator = self_verifying_allocator<A> || (allocator<A> && requires {
    requires A::reports_frees;
});

/// An owning allocator with a claims(p) of its own: it may claim pointers its owns() disowns
/// (debug<A>: the blocks its freed history remembers), so a router asks owns() of every side
/// first and claims() only for a pointer no side owns.
template <class A>
concept claiming_allocator = owning_allocator<A> && requires(const A& a, const void* p) {
    { a.claims(p) } noexcept -> std::same_as<bool>;
};
// clang-format on

/// Returns: whether a free of `p` that could go to either of two allocators is `first`'s, the rule
/// fallback and segregator route by (live blocks first): `first` owns `p`, or still holds it back
/// (strata::holds: debug<A>'s quarantine, which A has not had back, so no allocator over A's memory
/// can have handed it out, though a plain heap under both says the address is its own); else not
/// where `second` owns `p` (an address only first's freed history remembers may since be a live
/// block of `second`); else whether `first` claims it (a double free of a block first freed).
template <owning_allocator First, class Second>
[[nodiscard]] bool routes_to_first(const First& first, const Second& second, const void* p) noexcept {
    if (first.owns(p)) return true;
    if constexpr (claiming_allocator<First>) {
        if (strata::holds(first, p)) return true;
        if constexpr (owning_allocator<Second>) {
            if (second.owns(p)) return false;
        }
        return first.claims(p);
    } else {
        (void)second;
        return false;
    }
}

/// Returns: how many of this thread's violations_reported() refused nothing: damage found during a
/// call that went through all the same (debug<A>: a broken fence or a write after free found while
/// freeing; the free still happens). A wrapper comparing violations_reported() across a call to
/// learn whether the call was refused must not count these (report_watch does not).
[[nodiscard]] std::uint64_t violations_not_refusing() noexcept;

/// Effects: counts the report about to be made as one that refuses nothing. Call it just before
/// report_violation(), which counts its report before the handler runs (the handler may throw).
void note_violation_not_refusing() noexcept;

/// This thread's report counters at construction; refused() tells whether a call made since
/// reported a violation that refused it. Two thread-local reads; for wrappers such as tracked<A>.
class report_watch {
public:
    report_watch() noexcept : reported_(violations_reported()), not_refusing_(violations_not_refusing()) {}

    /// Returns: true when a violation reported since construction refused its call (one that
    /// only reported damage, see violations_not_refusing(), does not count).
    [[nodiscard]] bool refused() const noexcept {
        return violations_reported() - reported_ != violations_not_refusing() - not_refusing_;
    }

private:
    std::uint64_t reported_;
    std::uint64_t not_refusing_;
};

} // namespace strata
