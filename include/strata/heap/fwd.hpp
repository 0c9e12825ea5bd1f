#pragma once
// Forward declarations for the heap family.
namespace strata {
template <unsigned SLI>
class basic_tlsf;
using tlsf = basic_tlsf<5>;
class buddy;
struct first_fit;
struct best_fit;
struct next_fit;
template <class Policy>
class free_list;
struct heap_metrics;
} // namespace strata
