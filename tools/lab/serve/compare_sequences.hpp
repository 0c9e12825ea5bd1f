#pragma once
// The compare demo's recorded sequences: request scripts built in, scaled to the buffer, that the
// page loads into its script box. Exports sequence_info, compare_sequences and sequence_script.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace strata::lab::serve {

/// A built-in sequence: its name (the API's `sequence` argument) and what the page calls it.
struct sequence_info {
    std::string_view name;
    std::string_view title;
};

/// Returns: every built-in sequence, in the page's order.
[[nodiscard]] std::span<const sequence_info> compare_sequences() noexcept;

/// Returns: the script of sequence `name` for buffers of `buffer` bytes (a power of two in
/// [1 KiB, 64 KiB]): sizes scale with the buffer so the same story plays at every size. The
/// script parses with parse_script's default bounds and max_size = buffer.
/// Throws: std::invalid_argument for an unknown name; std::runtime_error when the build has no
/// embedded trace and `name` is "openttd".
[[nodiscard]] std::string sequence_script(std::string_view name, std::size_t buffer);

} // namespace strata::lab::serve
