#pragma once
// segregator<Threshold, Small, Large>: requests of at most Threshold bytes go to Small, larger
// ones to Large. A sized free is routed by its size, so neither allocator needs owns().
#include <cstddef>
#include <utility>

#include "strata/adapt/free_reports.hpp"
#include "strata/adapt/fwd.hpp"
#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"

namespace strata {

/// Both allocators owned by value (wrap allocator_ref<> to refer to existing ones). A typical use:
/// segregator<256, size_class_pool, tlsf>: small objects in pools, the rest in a general heap.
///
/// Cross-allocator free: at checks >= 1, where the allocator the size routes to can answer owns(),
/// a pointer it does not own is judged live blocks first: size_mismatch when the other allocator
/// owns it (the free named a size on the wrong side of the threshold); otherwise the routed-to
/// allocator takes it when it claims it (debug<A>: a block its freed history remembers, so a double
/// free is reported there as one: core/allocator.hpp, claims); size_mismatch when only the other
/// claims it; foreign_pointer when neither does. At checks 0 the free goes where its size says.
/// Bad input to allocate: what the chosen allocator answers. The unsized deallocate(p) (where both
/// free unsized and Small can answer owns) routes the same way, live blocks first: Small when it
/// owns `p` or still holds it back (debug<A>'s quarantine); Large when it owns `p` (where it can
/// answer); Small when it claims `p`; else Large. (A block debug<> holds is the debug side's
/// whatever a heap under both sides says of its address: `strata::holds`.)
/// So a live Large block at an address debug<Small> remembers freeing goes to Large.
template <std::size_t Threshold, allocator Small, allocator Large>
class segregator {
public:
    using small_type = Small;
    using large_type = Large;
    static constexpr std::size_t threshold = Threshold; ///< the largest size Small serves
    /// true when both allocators judge every free themselves (core/allocator.hpp,
    /// self_verifying_allocator): every free, however routed, is then judged at every checks level,
    /// and owns() (where both answer) means "live", as the concept requires.
    static constexpr bool verifies_frees = self_verifying_allocator<Small> && self_verifying_allocator<Large>;
    /// true when either allocator reports bad frees at every checks level (adapt/free_reports.hpp):
    /// tracked<segregator<N, debug<A>, B>> then watches the reports across every free, at checks 0 too.
    static constexpr bool reports_frees = reporting_allocator<Small> || reporting_allocator<Large>;

    /// Effects: default-constructs both (where they can be).
    segregator() = default;
    /// Effects: constructs Small from `s` and Large from `l` (each forwarded as one argument).
    template <class S, class L>
    segregator(S&& s, L&& l) : small_(std::forward<S>(s)), large_(std::forward<L>(l)) {}
    segregator(const segregator&) = delete;
    segregator& operator=(const segregator&) = delete;

    /// Returns: small().allocate(size, align) when size <= Threshold, else large().allocate(...).
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        if (size <= Threshold) return small_.allocate(size, align);
        return large_.allocate(size, align);
    }

    /// Effects: frees `p` to the allocator its size routes to (see class comment). O(1).
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        if (p == nullptr) return;
        if (size <= Threshold) {
            if (!verify_owner(small_, large_, p)) return;
            small_.deallocate(p, size, align);
        } else {
            if (!verify_owner(large_, small_, p)) return;
            large_.deallocate(p, size, align);
        }
    }

    /// Effects: frees `p` unsized, to Small when it owns (or else claims) `p`, otherwise to Large
    /// (see class comment).
    void deallocate(void* p) noexcept requires owning_allocator<Small> && unsized_deallocator<Small> &&
        unsized_deallocator<Large> {
        if (p == nullptr) return;
        if (to_small(p)) {
            small_.deallocate(p);
            return;
        }
        if (!verify_owner(large_, small_, p)) return;
        large_.deallocate(p);
    }

    /// Returns: true when either allocator owns `p`. Only where both can answer.
    [[nodiscard]] bool
    owns(const void* p) const noexcept requires owning_allocator<Small> && owning_allocator<Large> {
        return small_.owns(p) || large_.owns(p);
    }
    /// Returns: true when either allocator claims `p` (core/allocator.hpp, claims). Only where both
    /// can answer owns().
    [[nodiscard]] bool
    claims(const void* p) const noexcept requires owning_allocator<Small> && owning_allocator<Large> {
        return strata::claims(small_, p) || strata::claims(large_, p);
    }
    /// Returns: true when either allocator still holds `p` back (strata::holds), as fallback's.
    [[nodiscard]] bool holds(const void* p) const noexcept {
        return strata::holds(small_, p) || strata::holds(large_, p);
    }

    /// Effects: resets both. Only where both reset.
    void reset() noexcept requires resettable_allocator<Small> && resettable_allocator<Large> {
        small_.reset();
        large_.reset();
    }

    /// Returns: the sum of both stats; peak is the sum of the peaks (an upper bound);
    /// largest_free_block is Large's.
    [[nodiscard]] strata::stats stats() const noexcept {
        strata::stats a = small_.stats();
        const strata::stats b = large_.stats();
        add_counts(a, b);
        a.largest_free_block = b.largest_free_block;
        return a;
    }

    [[nodiscard]] Small& small() noexcept { return small_; }
    [[nodiscard]] const Small& small() const noexcept { return small_; }
    [[nodiscard]] Large& large() noexcept { return large_; }
    [[nodiscard]] const Large& large() const noexcept { return large_; }

private:
    // True when an unsized free of `p` is Small's (class comment; routes_to_first,
    // adapt/free_reports.hpp).
    [[nodiscard]] bool to_small(const void* p) const noexcept { return routes_to_first(small_, large_, p); }

    // True when `to` may take `p`: it owns it, or claims it while `other` does not own it, or it
    // cannot tell, or checks are off.
    template <class To, class Other>
    static bool verify_owner([[maybe_unused]] const To& to, [[maybe_unused]] const Other& other,
                             [[maybe_unused]] void* p) noexcept {
        if constexpr (owning_allocator<To> && STRATA_CHECKS >= 1) {
            // A block `other` holds (live in debug<A>, or in its quarantine) is other's, whatever a
            // plain heap under both sides says of its address (it would take debug's user pointer).
            if (STRATA_UNLIKELY(strata::holds(other, p))) {
                return STRATA_VERIFY(1, false, size_mismatch, "strata::segregator", p,
                                     "sized free names a size on the wrong side of the threshold "
                                     "(the other allocator holds the block)");
            }
            if (STRATA_LIKELY(to.owns(p))) return true;
            // Live blocks first: a live block of `other` is other's even when `to` claims its
            // address (debug<A> remembering a block it freed there).
            // A block `to` still holds back (debug<A>'s quarantine) is to's, whatever a plain heap
            // under both says of the address; one only its history remembers may be other's now.
            if (strata::holds(to, p)) return true;
            bool other_live = false;
            if constexpr (owning_allocator<Other>) other_live = other.owns(p);
            if (!other_live && strata::claims(to, p)) return true;
            bool wrong_side = other_live;
            if constexpr (owning_allocator<Other>) wrong_side = wrong_side || strata::claims(other, p);
            if (wrong_side) {
                return STRATA_VERIFY(1, false, size_mismatch, "strata::segregator", p,
                                     "sized free names a size on the wrong side of the threshold "
                                     "(the other allocator owns the pointer)");
            }
            return STRATA_VERIFY(1, false, foreign_pointer, "strata::segregator", p,
                                 "freed a pointer neither allocator owns (cross-allocator free)");
        } else {
            return true;
        }
    }

    Small small_;
    Large large_;
};

} // namespace strata
