#pragma once
// std_allocator: a classic STL allocator over a strata allocator, for std::vector, std::map, ...
// without the virtual call of std::pmr. The container's type names the strata allocator type; the
// object holds only a pointer to the allocator instance.
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>

#include "strata/adapt/fwd.hpp"
#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"

namespace strata {

/// An STL allocator of `T` that forwards to a strata allocator `A` it refers to (it owns nothing).
///
/// Requires: the allocator outlives every container and copy of this allocator that uses it, and
/// is not moved from while they refer to it.
///
/// Choices, and why:
///  - No default constructor: the pointer is never null, so a container can never silently fall
///    back to some global arena. Containers must be given one: `std::vector<int, A> v(arena)`.
///    The price: the few standard members that default-construct an allocator do not compile, e.g.
///    C++20 `basic_string::substr`; use `string_type(s, pos, n, s.get_allocator())` instead.
///  - Propagation on move assignment and swap (std::true_type): the allocator travels with the
///    storage it owns, so move assignment is O(1) and never reallocates, and swap is always defined
///    (with unequal allocators and no propagation it would be undefined behaviour).
///  - No propagation on copy assignment (std::false_type): `long_lived = frame_local` copies the
///    elements into long_lived's own arena. Propagating would silently move a long-lived container
///    into a frame arena that is reset next frame; a copy is a request for values, not for storage.
///  - is_always_equal is std::false_type: two instances over different arenas are not
///    interchangeable. operator== compares the allocator addresses, across value types too.
///  - Copy construction of a container copies the allocator (the default
///    select_on_container_copy_construction): the copy lives in the same arena.
///  - Rebinding (containers allocate nodes, not T) goes through allocator_traits::rebind_alloc,
///    which yields std_allocator<U, A>, and the converting constructor below.
///  - Errors: n * sizeof(T) overflowing throws std::bad_array_new_length, as std::allocator does
///    (it derives from std::bad_alloc, so catching that is enough); the upstream answering nullptr
///    throws std::bad_alloc. Either way the upstream is left as it was.
template <class T, allocator A>
class std_allocator {
public:
    using value_type = T;                   ///< what allocate(n) makes room for
    using upstream_type = A;                ///< the strata allocator forwarded to
    using size_type = std::size_t;          ///< element counts
    using difference_type = std::ptrdiff_t; ///< pointer differences
    /// The allocator follows the container's storage on move assignment and swap, not on copy.
    using propagate_on_container_copy_assignment = std::false_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    /// Instances over different allocator objects are not interchangeable.
    using is_always_equal = std::false_type;

    /// Effects: an allocator over `upstream`. Requires: `upstream` outlives it and its copies.
    std_allocator(A& upstream) noexcept // NOLINT(google-explicit-constructor): lets containers take an arena
        : upstream_(std::addressof(upstream)) {}

    /// Effects: the same upstream for another value type (rebinding).
    template <class U>
    std_allocator(const std_allocator<U, A>& other) noexcept // NOLINT(google-explicit-constructor): rebind
        : upstream_(std::addressof(other.upstream())) {}

    /// Returns: storage for `n` objects of T (n == 0 is served as 1 byte), aligned to alignof(T).
    /// Throws: std::bad_array_new_length when n * sizeof(T) overflows; std::bad_alloc when the
    /// upstream cannot serve the request.
    [[nodiscard]] T* allocate(std::size_t n) {
        const auto bytes = checked_mul(n, element_size);
        if (!bytes) throw std::bad_array_new_length();
        void* p = upstream_->allocate(*bytes == 0 ? 1 : *bytes, alignof(T));
        if (p == nullptr) throw std::bad_alloc();
        return static_cast<T*>(p);
    }

    /// Effects: returns storage from `allocate(n)` to the upstream, sized and aligned as allocated.
    void deallocate(T* p, std::size_t n) noexcept {
        // Cannot overflow: allocate(n) succeeded with the same n.
        const std::size_t bytes = n * element_size;
        upstream_->deallocate(p, bytes == 0 ? 1 : bytes, alignof(T));
    }

    /// Returns: the allocator this one forwards to.
    [[nodiscard]] A& upstream() const noexcept { return *upstream_; }

private:
    // Containers rebind to pointer types (bucket arrays), which sizeof-expression checks misread.
    static constexpr std::size_t element_size = sizeof(T); // NOLINT(bugprone-sizeof-expression)

    A* upstream_; // never null
};

/// Returns: true when `a` and `b` forward to the same allocator object, i.e. memory from one may be
/// freed through the other (for any value types T and U).
template <class T, class U, allocator A>
[[nodiscard]] bool operator==(const std_allocator<T, A>& a, const std_allocator<U, A>& b) noexcept {
    return std::addressof(a.upstream()) == std::addressof(b.upstream());
}

} // namespace strata
