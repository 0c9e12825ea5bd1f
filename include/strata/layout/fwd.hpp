#pragma once
// Forward declarations of the layout family: structure-of-arrays storage.
#include <cstddef>
#include <memory>

#include "strata/handle/fwd.hpp"

namespace strata {

template <class Alloc, class... Ts>
class basic_soa_vector;

/// A structure-of-arrays vector of columns Ts... over std::allocator.
template <class... Ts>
using soa_vector = basic_soa_vector<std::allocator<std::byte>, Ts...>;

template <class Handle, class Alloc, class WrapPolicy, class ReusePolicy, class... Ts>
class basic_soa_slot_map;

/// A slot map whose dense storage is an soa_vector of Ts..., over std::allocator, with the default
/// policies (retire on generation wrap, LIFO reuse).
template <class Handle, class... Ts>
using soa_slot_map =
    basic_soa_slot_map<Handle, std::allocator<std::byte>, policy::retire, policy::lifo, Ts...>;

} // namespace strata
