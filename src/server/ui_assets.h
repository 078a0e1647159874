// The dashboard's files (web/dist, built from web/ and committed), compiled into the
// binary by cmake/embed_ui_assets.cmake so that one file serves the page offline, with
// nothing fetched from elsewhere. Paths are those the page is served under: /ui/...
//
// Thread-safety: an immutable table; any thread.
#pragma once

#include <string_view>
#include <vector>

namespace llms {

struct UiAsset {
  std::string_view path;          // "/ui/index.html", "/ui/assets/index-HASH.js", ...
  std::string_view content_type;
  std::string_view body;
};

// The generated table (empty when web/dist was missing at build time).
const std::vector<UiAsset>& ui_assets();
// The asset at `path`, or null.
const UiAsset* find_ui_asset(std::string_view path);

// The Content-Security-Policy every page response carries: scripts, styles and
// requests only from this server; no inline script or <style>, no eval. (uPlot sizes
// its elements through element.style, which style-src does not govern.)
inline constexpr std::string_view kUiContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

}  // namespace llms
