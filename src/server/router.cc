#include "server/router.h"

#include <fmt/format.h>

#include "base/log.h"
#include "server/endpoints.h"

namespace llms {

Router::Router(ServerContext& ctx) : ctx_(ctx) {
  auto completions = [](ServerContext& c, const HttpRequest& r, std::shared_ptr<HttpExchange> ex) {
    handle_completions(c, r, std::move(ex), ApiKind::kCompletion);
  };
  auto chat = [](ServerContext& c, const HttpRequest& r, std::shared_ptr<HttpExchange> ex) {
    handle_completions(c, r, std::move(ex), ApiKind::kChat);
  };
  routes_ = {
      {"POST", "/v1/completions", completions},
      {"POST", "/v1/chat/completions", chat},
      {"GET", "/v1/models", handle_models},
      {"GET", "/v1/models/", handle_models},
      {"POST", "/tokenize", handle_tokenize},
      {"POST", "/detokenize", handle_detokenize},
      {"GET", "/health", handle_health},
      {"GET", "/ready", handle_ready},
      {"GET", "/metrics", handle_metrics},
  };
}

void Router::handle(HttpRequest req, std::shared_ptr<HttpExchange> ex) const {
  std::string allowed;
  for (const Route& r : routes_) {
    const bool prefix = r.path.back() == '/';
    const bool match = prefix ? req.path.size() > r.path.size() && req.path.compare(0, r.path.size(), r.path) == 0
                              : req.path == r.path;
    if (!match) continue;
    if (r.method != req.method) {
      allowed = r.method;
      continue;
    }
    try {
      r.fn(ctx_, req, ex);
    } catch (const std::exception& e) {
      log_error("{} {} failed: {}", req.method, req.path, e.what());
      ex->respond(api_error_response(internal_api_error("internal error")));
    }
    return;
  }
  if (!allowed.empty()) {
    ApiError e = bad_request(fmt::format("{} is not allowed on {}; use {}", req.method, req.path, allowed));
    e.status = 405;
    HttpResponse resp = api_error_response(e);
    resp.headers.emplace_back("Allow", allowed);
    return ex->respond(std::move(resp));
  }
  ex->respond(api_error_response(not_found_error(fmt::format("no route for {} {}", req.method, req.path))));
}

}  // namespace llms
