#pragma once
// private_access: the one way into an allocator's private state from outside it. An allocator whose
// check() must be shown to catch corruption befriends every specialization; whoever needs the
// access (its tests) specializes the template for the allocator and writes the accessors there.
//
// Exports: strata::detail::private_access.

namespace strata::detail {

/// Declared only: a specialization for `T` is defined by the code that needs it.
template <class T>
struct private_access;

} // namespace strata::detail
