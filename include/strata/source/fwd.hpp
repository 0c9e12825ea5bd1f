#pragma once
// Forward declarations for the memory-source module.
namespace strata {
struct memory_block;
class source_ref;
class buffer_source;
class heap_source;
class virtual_memory;
class virtual_memory_source;
} // namespace strata
