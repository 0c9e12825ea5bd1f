#pragma once
// Forward declarations of the adapters, for headers that name an adapter type without using it
// (a subsystem's interface taking `strata::pmr_resource<arena>&`, say) and should not pay for
// <memory_resource> or the allocator headers.
#include "strata/core/allocator.hpp"

namespace strata {

// Bridges to the standard library's allocator models.

/// A std::pmr::memory_resource over a strata allocator (strata/adapt/pmr_resource.hpp).
template <allocator A>
class pmr_resource;

/// A classic (non-polymorphic) STL allocator over a strata allocator (strata/adapt/std_allocator.hpp).
template <class T, allocator A>
class std_allocator;

// Composing adapters, planned (DESIGN.md, "One picture"); each will wrap an allocator and model the
// same contract, so they stack: std_allocator<T, tracked<locked<arena>>>.
//   template <allocator A> class tracked;          budgets and per-tag accounting
//   template <allocator A> class debug;            fences, fill patterns, leak report
//   template <allocator A, class Mutex> class locked;   thread safety by composition
//   template <allocator Primary, allocator Fallback> class fallback;
//   template <std::size_t Threshold, allocator Small, allocator Large> class segregator;

} // namespace strata
