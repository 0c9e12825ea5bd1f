#pragma once
// fallback<Primary, Secondary>: try Primary; what it cannot serve, Secondary serves. Frees go to
// whichever allocator owns the pointer, so Primary must be able to answer owns().
#include <cstddef>
#include <utility>

#include "strata/adapt/free_reports.hpp"
#include "strata/adapt/fwd.hpp"
#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"

namespace strata {

/// Both allocators owned by value (wrap allocator_ref<> to refer to existing ones). A typical use:
/// fallback<arena, tlsf>: a fixed scratch buffer first, a general heap when it fills up.
///
/// Routing of frees, live blocks first: Primary when Primary owns `p` or still holds it back
/// (debug<A>'s quarantine: A has not had it back, so no allocator over A's memory can have handed
/// it out, though a plain heap's owns() says "mine"); else Secondary when it owns `p` (where it
/// can answer); only then, for a pointer neither owns, Primary when it claims `p`
/// (debug<A>: a block its freed history remembers, so a double free is reported there as one:
/// core/allocator.hpp, claims), else Secondary. The order matters where Primary is debug<A>: an
/// address A took back and Secondary then handed out is a live Secondary block, even while debug
/// still remembers freeing it. (Where Secondary cannot answer owns(), such a free goes to Primary,
/// which reports a double free and ignores it: the block leaks. debug's quarantine keeps its freed
/// blocks from A for a while, which makes that rarer.) Cross-allocator free: at checks >= 1, where
/// Secondary can answer owns(), a pointer neither claims is reported (foreign_pointer) and ignored;
/// otherwise it goes to Secondary, which answers as it does.
/// Bad input to allocate: each allocator answers (an invalid request is nullptr from both).
template <owning_allocator Primary, allocator Secondary>
class fallback {
public:
    using primary_type = Primary;
    using secondary_type = Secondary;
    /// true when both allocators judge every free themselves (core/allocator.hpp,
    /// self_verifying_allocator: fallback<debug<A>, debug<B>>): every free is then judged at every
    /// checks level (routed by what each claims) and owns() means "live", as the concept requires.
    static constexpr bool verifies_frees =
        self_verifying_allocator<Primary> && self_verifying_allocator<Secondary>;
    /// true when either allocator reports bad frees at every checks level (adapt/free_reports.hpp):
    /// tracked<fallback<debug<A>, B>> then watches the reports across every free, at checks 0 too.
    static constexpr bool reports_frees = reporting_allocator<Primary> || reporting_allocator<Secondary>;

    /// Effects: default-constructs both (where they can be).
    fallback() = default;
    /// Effects: constructs Primary from `p` and Secondary from `s` (each forwarded as one argument).
    template <class P, class S>
    fallback(P&& p, S&& s) : primary_(std::forward<P>(p)), secondary_(std::forward<S>(s)) {}
    fallback(const fallback&) = delete;
    fallback& operator=(const fallback&) = delete;

    /// Returns: primary().allocate(size, align), or when that is nullptr secondary().allocate(...).
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        if (void* p = primary_.allocate(size, align)) return p;
        return secondary_.allocate(size, align);
    }

    /// Effects: frees `p` to the allocator that owns it (see class comment). O(Primary::owns), plus
    /// Secondary's owns() and Primary's claims() for a pointer Primary does not own, where Primary
    /// claims more than it owns.
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        if (p == nullptr) return;
        if (to_primary(p)) {
            primary_.deallocate(p, size, align);
            return;
        }
        if (!verify_secondary(p)) return;
        secondary_.deallocate(p, size, align);
    }

    /// Effects: frees `p` unsized to its owner. Only where both allocators free unsized.
    void
    deallocate(void* p) noexcept requires unsized_deallocator<Primary> && unsized_deallocator<Secondary> {
        if (p == nullptr) return;
        if (to_primary(p)) {
            primary_.deallocate(p);
            return;
        }
        if (!verify_secondary(p)) return;
        secondary_.deallocate(p);
    }

    /// Returns: true when either allocator owns `p`. Only where Secondary can answer too.
    [[nodiscard]] bool owns(const void* p) const noexcept requires owning_allocator<Secondary> {
        return primary_.owns(p) || secondary_.owns(p);
    }
    /// Returns: true when either allocator claims `p` (core/allocator.hpp, claims): a free of `p` is
    /// this fallback's to judge. Only where Secondary can answer owns().
    [[nodiscard]] bool claims(const void* p) const noexcept requires owning_allocator<Secondary> {
        return strata::claims(primary_, p) || strata::claims(secondary_, p);
    }
    /// Returns: true when either allocator still holds `p` back (strata::holds): a fallback nested
    /// in another wrapper routes a free of a block its debug<> holds to it, not to a heap both share.
    [[nodiscard]] bool holds(const void* p) const noexcept {
        return strata::holds(primary_, p) || strata::holds(secondary_, p);
    }

    /// Effects: resets both. Only where both reset.
    void reset() noexcept requires resettable_allocator<Primary> && resettable_allocator<Secondary> {
        primary_.reset();
        secondary_.reset();
    }

    /// Returns: the sum of both stats; peak is the sum of the peaks (an upper bound: the two need
    /// not have peaked together); largest_free_block the larger of the two.
    [[nodiscard]] strata::stats stats() const noexcept {
        strata::stats a = primary_.stats();
        const strata::stats b = secondary_.stats();
        add_counts(a, b);
        if (b.largest_free_block > a.largest_free_block) a.largest_free_block = b.largest_free_block;
        return a;
    }

    [[nodiscard]] Primary& primary() noexcept { return primary_; }
    [[nodiscard]] const Primary& primary() const noexcept { return primary_; }
    [[nodiscard]] Secondary& secondary() noexcept { return secondary_; }
    [[nodiscard]] const Secondary& secondary() const noexcept { return secondary_; }

private:
    // True when a free of `p` is Primary's (class comment; routes_to_first, adapt/free_reports.hpp).
    [[nodiscard]] bool to_primary(const void* p) const noexcept {
        return routes_to_first(primary_, secondary_, p);
    }

    // True when Secondary may take `p`: it claims it, or it cannot tell, or checks are off.
    [[nodiscard]] bool verify_secondary([[maybe_unused]] void* p) const noexcept {
        if constexpr (owning_allocator<Secondary>) {
            return STRATA_VERIFY(1, strata::claims(secondary_, p), foreign_pointer, "strata::fallback", p,
                                 "freed a pointer neither allocator owns (cross-allocator free)");
        } else {
            return true;
        }
    }

    Primary primary_;
    Secondary secondary_;
};

} // namespace strata
