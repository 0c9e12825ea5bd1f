#pragma once
// Forward declarations for the linear family.
#include <cstddef>

namespace strata {
class arena;
struct arena_options;
enum class arena_reset;
template <class A>
class scope;
class stack_allocator;
class double_stack;
enum class stack_end;
template <std::size_t N>
class frame_allocator;
} // namespace strata
