#pragma once
// Forward declarations for the pool family.
#include <cstddef>

namespace strata {
class pool;
struct pool_options;
template <class T>
class object_pool;
class size_class_pool;
struct size_class_options;
} // namespace strata
