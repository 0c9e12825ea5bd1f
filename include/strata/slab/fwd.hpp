#pragma once
// Forward declarations for the slab family.
#include <cstddef>

namespace strata {
struct slab_options;
template <class T>
class slab_cache;
struct magazine_options;
class magazine_depot;
template <class T>
class magazine_cache;
} // namespace strata
