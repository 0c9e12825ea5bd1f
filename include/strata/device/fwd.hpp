#pragma once
// Forward declarations for the device family: offset heaps, pools of device memory blocks and
// their defragmentation.
#include <cstdint>

namespace strata {
enum class resource_kind : std::uint8_t;
enum class allocation_strategy : std::uint8_t;
struct offset_allocation;
struct offset_block_info;
struct offset_heap_options;
class offset_heap;
struct device_pool_options;
struct device_memory_callbacks;
struct defrag_options;
struct defrag_move;
class device_pool;
} // namespace strata
