#pragma once
// The default workload's recorded trace, compiled into strata-lab (tools/lab/data/openttd-server.st;
// tools/lab/data/make-default-trace.sh says how it was made).
#include <cstddef>
#include <span>

namespace strata::lab {

/// Returns: the embedded trace's bytes; empty when this build has none (no trace support).
[[nodiscard]] std::span<const std::byte> embedded_trace() noexcept;

/// The workload name the embedded trace replays under.
inline constexpr const char* embedded_trace_name = "openttd";

} // namespace strata::lab
