#pragma once
// Forward declarations of the adapters, for headers that name an adapter type without using it
// (a subsystem's interface taking `strata::pmr_resource<arena>&`, say) and should not pay for
// <memory_resource> or the allocator headers.
#include <cstddef>

#include "strata/core/allocator.hpp"

namespace strata {

// Bridges to the standard library's allocator models.

/// A std::pmr::memory_resource over a strata allocator (strata/adapt/pmr_resource.hpp).
template <allocator A>
class pmr_resource;

/// A classic (non-polymorphic) STL allocator over a strata allocator (strata/adapt/std_allocator.hpp).
template <class T, allocator A>
class std_allocator;

// Composing adapters: each wraps an allocator (by value) and models the same contract, so they
// stack: std_allocator<T, locked<tracked<arena>>>.

/// A non-owning reference that models the contract (strata/adapt/allocator_ref.hpp).
template <allocator A>
class allocator_ref;
/// Per-subsystem accounting node and the adapter that reports to it (strata/adapt/tracked.hpp).
class tracker;
template <allocator A>
class tracked;
/// Fences, fill patterns, double free / foreign / size mismatch, leak report (strata/adapt/debug.hpp).
template <allocator A>
class debug;
/// Every allocation on its own pages next to a guard page (strata/adapt/guarded.hpp).
class guard_page_allocator;
template <allocator A>
class guarded;
/// Thread safety by composition (strata/adapt/locked.hpp); Mutex defaults to std::mutex there.
template <allocator A, class Mutex>
class locked;
/// Primary first, Secondary when it fails; frees routed by owns (strata/adapt/fallback.hpp).
template <owning_allocator Primary, allocator Secondary>
class fallback;
/// Small requests to Small, the rest to Large (strata/adapt/segregator.hpp).
template <std::size_t Threshold, allocator Small, allocator Large>
class segregator;

} // namespace strata
