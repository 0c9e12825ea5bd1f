#pragma once
// Forward declarations of the handle family: generational handles and the containers that hand
// them out (handle_table, slot_map) or keep values dense without them (packed_array).
#include <cstddef>
#include <memory>

namespace strata {

namespace policy {
struct retire;
struct wrap;
struct lifo;
struct fifo;
struct compact;
} // namespace policy

template <class Tag, unsigned IndexBits = 20, unsigned GenerationBits = 12>
class handle;

template <class T, class Handle = handle<T>, class Alloc = std::allocator<T>,
          class WrapPolicy = policy::retire, class ReusePolicy = policy::lifo>
class handle_table;

template <class T, class Handle = handle<T>, class Alloc = std::allocator<T>,
          class WrapPolicy = policy::retire, class ReusePolicy = policy::lifo>
class slot_map;

template <class T, class Alloc = std::allocator<T>>
class packed_array;

template <class Handle>
class save_remap;

template <class Handle>
class load_remap;

} // namespace strata
