#pragma once
// segregator<Threshold, Small, Large>: requests of at most Threshold bytes go to Small, larger
// ones to Large. A sized free is routed by its size, so neither allocator needs owns().
#include <cstddef>
#include <utility>

#include "strata/adapt/fwd.hpp"
#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"

namespace strata {

/// Both allocators owned by value (wrap allocator_ref<> to refer to existing ones). A typical use:
/// segregator<256, size_class_pool, tlsf>: small objects in pools, the rest in a general heap.
///
/// Cross-allocator free: at checks >= 1, where the allocator the size routes to can answer owns(),
/// a pointer it disowns is reported and ignored: size_mismatch when the other allocator owns it
/// (the free named a size on the wrong side of the threshold), foreign_pointer when neither does.
/// At checks 0 the free goes where its size says. Bad input to allocate: what the chosen allocator
/// answers. The unsized deallocate(p) (where both free unsized and Small can answer owns) routes by
/// Small::owns.
template <std::size_t Threshold, allocator Small, allocator Large>
class segregator {
public:
    using small_type = Small;
    using large_type = Large;
    static constexpr std::size_t threshold = Threshold; ///< the largest size Small serves

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

    /// Effects: frees `p` unsized, to Large unless Small owns it.
    void deallocate(void* p) noexcept requires owning_allocator<Small> && unsized_deallocator<Small> &&
        unsized_deallocator<Large> {
        if (p == nullptr) return;
        if (strata::claims(small_, p)) {
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
        a.in_use += b.in_use;
        a.peak += b.peak;
        a.capacity += b.capacity;
        a.live_allocations += b.live_allocations;
        a.total_allocations += b.total_allocations;
        a.largest_free_block = b.largest_free_block;
        return a;
    }

    [[nodiscard]] Small& small() noexcept { return small_; }
    [[nodiscard]] const Small& small() const noexcept { return small_; }
    [[nodiscard]] Large& large() noexcept { return large_; }
    [[nodiscard]] const Large& large() const noexcept { return large_; }

private:
    // True when `to` may take `p`: it owns it, or it cannot tell, or checks are off.
    template <class To, class Other>
    static bool verify_owner([[maybe_unused]] const To& to, [[maybe_unused]] const Other& other,
                             [[maybe_unused]] void* p) noexcept {
        if constexpr (owning_allocator<To> && STRATA_CHECKS >= 1) {
            if (STRATA_LIKELY(strata::claims(to, p))) return true;
            bool wrong_side = false;
            if constexpr (owning_allocator<Other>) wrong_side = strata::claims(other, p);
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
