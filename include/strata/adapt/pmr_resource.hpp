#pragma once
// pmr_resource: lets std::pmr containers (and std::pmr resources that take an upstream) allocate
// from any strata allocator. The raw strata contract answers failure with nullptr; the pmr contract
// requires an exception, so this is the one place (with std_allocator) where strata throws.
#include <cstddef>
#include <memory>
#include <memory_resource>
#include <new>

#include "strata/adapt/fwd.hpp"
#include "strata/core/allocator.hpp"

namespace strata {

/// A std::pmr::memory_resource that forwards to a strata allocator it refers to (it owns nothing).
///
/// Requires: the allocator outlives the resource and every container or resource that uses it, and
/// is not moved from while the resource refers to it (a moved arena leaves the resource pointing at
/// the empty husk). Not thread-safe beyond what `A` is.
///
/// Mapping of the two contracts:
///  - size 0: pmr permits it, the strata contract rejects it, so 0 bytes are requested (and freed)
///    as 1 byte. The result is a distinct, non-null pointer that must not be dereferenced.
///  - failure: exhaustion, and any request `A` rejects (a non-power-of-two alignment, which pmr
///    makes a precondition, or a size that overflows once aligned), throws std::bad_alloc. `A` is
///    left as it was, since a strata allocator that answers nullptr changes no state.
///  - deallocate passes the size and alignment through, so sized allocators (and an arena's
///    give-back of its most recent allocation) see exactly what they handed out.
///
/// Copies refer to the same allocator and compare equal to the original; assignment is deleted.
template <allocator A>
class pmr_resource : public std::pmr::memory_resource {
public:
    using upstream_type = A; ///< the strata allocator forwarded to

    /// Effects: a resource over `upstream`. Requires: `upstream` outlives the resource.
    explicit pmr_resource(A& upstream) noexcept : upstream_(std::addressof(upstream)) {}

    /// Effects: copies refer to the same allocator (and so compare equal). Nothrow.
    pmr_resource(const pmr_resource&) noexcept = default;
    /// Deleted: containers hold a pointer to their resource, and retargeting it under them would
    /// send their frees to an allocator that never served them.
    pmr_resource& operator=(const pmr_resource&) = delete;
    /// Effects: none; the allocator and its memory are untouched.
    ~pmr_resource() override = default;

    /// Returns: the allocator this resource forwards to.
    [[nodiscard]] A& upstream() const noexcept { return *upstream_; }

protected:
    /// Returns: `bytes` (1 when 0) bytes aligned to `align` from the upstream allocator.
    /// Throws: std::bad_alloc when the upstream answers nullptr (exhaustion or invalid request).
    void* do_allocate(std::size_t bytes, std::size_t align) override {
        void* p = upstream_->allocate(bytes == 0 ? 1 : bytes, align);
        if (p == nullptr) throw std::bad_alloc();
        return p;
    }

    /// Effects: returns `p` to the upstream allocator with the size (1 when 0) and alignment it was
    /// allocated with. Requires: `p` came from `allocate(bytes, align)` of a resource equal to this.
    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
        upstream_->deallocate(p, bytes == 0 ? 1 : bytes, align);
    }

    /// Returns: true iff `other` is a pmr_resource<A> over the same allocator object, so memory from
    /// one may be freed through the other.
    [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
        if (this == &other) return true;
        const auto* same = dynamic_cast<const pmr_resource*>(&other);
        return same != nullptr && same->upstream_ == upstream_;
    }

private:
    A* upstream_; // never null
};

/// Deduces `pmr_resource<A>` from `pmr_resource r(arena)`.
template <allocator A>
pmr_resource(A&) -> pmr_resource<A>;

} // namespace strata
