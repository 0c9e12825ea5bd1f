#pragma once
// The live lab's page (tools/lab/web) and uPlot, embedded at build time (serve.cmake).
#include <span>
#include <string_view>

namespace strata::lab::serve {

/// One embedded file: the path it is served at ("/index.html") and its bytes.
struct asset {
    std::string_view path;
    std::string_view data;
};

/// Returns: every embedded file. (Generated: build/<preset>/generated/strata_lab_serve.)
[[nodiscard]] std::span<const asset> assets() noexcept;

/// Returns: true when uPlot (tools/lab/web/node_modules/uplot) was there to embed.
[[nodiscard]] bool assets_have_uplot() noexcept;

/// Returns: the Content-Type for `path`, by its extension.
[[nodiscard]] std::string_view content_type(std::string_view path) noexcept;

} // namespace strata::lab::serve
