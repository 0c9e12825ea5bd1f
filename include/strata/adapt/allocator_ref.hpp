#pragma once
// allocator_ref: a non-owning handle that models the allocator contract by forwarding to an
// allocator that lives elsewhere. The composing adapters (tracked, debug, locked, fallback,
// segregator, guarded) own what they wrap by value; wrap an allocator_ref to compose over an
// allocator you already have: `strata::tracked<strata::allocator_ref<strata::arena>> t(tag, frame_arena);`.
#include <cstddef>
#include <memory>

#include "strata/adapt/free_reports.hpp"
#include "strata/adapt/fwd.hpp"
#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"

namespace strata {

/// Forwards every verb `A` has to the allocator it refers to. Copyable; compares by address.
/// Requires: the allocator outlives the reference and every copy of it.
template <allocator A>
class allocator_ref {
public:
    using upstream_type = A; ///< the allocator referred to
    /// As `A`'s (core/allocator.hpp, self_verifying_allocator): a reference checks nothing itself.
    static constexpr bool verifies_frees = self_verifying_allocator<A>;
    /// As `A`'s (adapt/free_reports.hpp, reporting_allocator).
    static constexpr bool reports_frees = reporting_allocator<A>;

    /// Effects: a reference to `a`. Requires: `a` outlives it.
    allocator_ref(A& a) noexcept : a_(std::addressof(a)) {} // NOLINT(google-explicit-constructor)

    /// Returns: a.allocate(size, align).
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        return a_->allocate(size, align);
    }
    /// Effects: a.deallocate(p, size, align).
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        a_->deallocate(p, size, align);
    }
    /// Effects: a.deallocate(p). Only where `A` frees unsized.
    void deallocate(void* p) noexcept requires unsized_deallocator<A> { a_->deallocate(p); }
    /// Returns: a.owns(p). Only where `A` can answer.
    [[nodiscard]] bool owns(const void* p) const noexcept requires owning_allocator<A> { return a_->owns(p); }
    /// Returns: strata::holds(a, p) (core/allocator.hpp).
    [[nodiscard]] bool holds(const void* p) const noexcept { return strata::holds(*a_, p); }
    /// Returns: strata::claims(a, p) (core/allocator.hpp). Only where `A` can answer owns().
    [[nodiscard]] bool claims(const void* p) const noexcept requires owning_allocator<A> {
        return strata::claims(*a_, p);
    }
    /// Effects: a.reset(). Only where `A` resets.
    void reset() noexcept requires resettable_allocator<A> { a_->reset(); }
    /// Returns: a.mark(). Only where `A` marks.
    [[nodiscard]] auto mark() const noexcept requires marking_allocator<A> { return a_->mark(); }
    /// Effects: a.rewind(m). Only where `A` marks.
    template <class M>
    void rewind(const M& m) noexcept requires marking_allocator<A> {
        a_->rewind(m);
    }
    /// Returns: a.stats().
    [[nodiscard]] strata::stats stats() const noexcept { return a_->stats(); }

    /// Returns: the allocator referred to.
    [[nodiscard]] A& get() const noexcept { return *a_; }

    friend bool operator==(const allocator_ref& x, const allocator_ref& y) noexcept { return x.a_ == y.a_; }

private:
    A* a_; // never null
};

} // namespace strata
