#pragma once
// Forward declarations of the engine family.

namespace strata {

struct engine_options;
struct engine_class_stats;
struct engine_thread_stats;
class engine_heap;

} // namespace strata
