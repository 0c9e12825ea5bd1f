#pragma once
// Small tag enums shared by the device family: what a block holds (for Vulkan's
// bufferImageGranularity) and how a request trades search time for memory.
#include <cstdint>

namespace strata {

/// What a device allocation holds. Vulkan requires linear resources (buffers, linear images) and
/// optimal ones (tiled images) that share a `bufferImageGranularity` page to be on different pages;
/// the heaps keep used blocks of different kinds apart by that granularity.
enum class resource_kind : std::uint8_t {
    linear,  ///< buffers and VK_IMAGE_TILING_LINEAR images
    optimal, ///< VK_IMAGE_TILING_OPTIMAL images
};

/// How a heap picks among the free blocks that fit.
enum class allocation_strategy : std::uint8_t {
    min_time,   ///< good fit: the head of the first size class whose every block fits (O(1))
    min_memory, ///< probe the request's own class for the smallest block that fits first
};

/// Returns: "linear" or "optimal".
[[nodiscard]] constexpr const char* to_string(resource_kind kind) noexcept {
    return kind == resource_kind::optimal ? "optimal" : "linear";
}

} // namespace strata
