#pragma once
// Forward declarations for the core module.
namespace strata {
struct stats;
struct block_info;
struct violation;
enum class violation_kind;
class scoped_violation_handler;
} // namespace strata
