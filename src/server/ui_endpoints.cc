// GET / and GET /ui/...: the dashboard and playground (docs/ui.md). Open without an API
// key: the files hold no data, and the page asks for the key to call the API itself.
#include <fmt/format.h>

#include "server/endpoints.h"
#include "server/ui_assets.h"

namespace llms {

const UiAsset* find_ui_asset(std::string_view path) {
  for (const UiAsset& a : ui_assets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

void handle_ui(ServerContext&, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  const std::string_view path = req.path == "/" ? std::string_view("/ui/index.html") : std::string_view(req.path);
  const UiAsset* asset = find_ui_asset(path);
  if (!asset) {
    const std::string why = ui_assets().empty() ? "; this binary was built without the dashboard's files (web/dist)" : "";
    return ex->respond(api_error_response(not_found_error(fmt::format("no file {}{}", req.path, why))));
  }
  HttpResponse resp{200, std::string(asset->content_type), std::string(asset->body), {}};
  resp.headers.emplace_back("Content-Security-Policy", std::string(kUiContentSecurityPolicy));
  resp.headers.emplace_back("X-Content-Type-Options", "nosniff");
  resp.headers.emplace_back("Referrer-Policy", "no-referrer");
  // Bundled files carry a hash of their content in their names: cached for good. The
  // page and the unhashed files are checked on every load, so a new build shows at once.
  const bool hashed = path.starts_with("/ui/assets/");
  resp.headers.emplace_back("Cache-Control", hashed ? "public, max-age=31536000, immutable" : "no-cache");
  ex->respond(std::move(resp));
}

}  // namespace llms
