#include "server/router.h"

#include <fmt/format.h>

#include "base/log.h"
#include "server/endpoints.h"

namespace llms {

Router::Router(ServerContext& ctx, ApiKeys keys) : ctx_(ctx), keys_(std::move(keys)) {
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
      {"GET", "/v1/stats", handle_stats},
      {"POST", "/v1/feedback", handle_feedback},
      {"GET", "/admin/versions", handle_admin},
      {"POST", "/admin/deploy", handle_admin},
      {"POST", "/admin/promote", handle_admin},
      {"POST", "/admin/abort", handle_admin},
      {"POST", "/admin/rollback", handle_admin},
  };
  if (ctx.config.server.ui) {  // else / and /ui/ answer 404 like any unknown path
    routes_.push_back({"GET", "/", handle_ui});
    routes_.push_back({"GET", "/ui/", handle_ui});
  }
}

bool Router::Route::matches(std::string_view p) const {
  if (path == "/" || path.back() != '/') return p == path;
  return p.size() > path.size() && p.substr(0, path.size()) == path;
}

std::string_view Router::endpoint_label(std::string_view path) const {
  for (const Route& r : routes_) {
    if (!r.matches(path)) continue;
    std::string_view label = r.path;
    if (label.size() > 1 && label.back() == '/') label.remove_suffix(1);
    return label;
  }
  return "other";
}

void Router::handle(HttpRequest req, std::shared_ptr<HttpExchange> ex) const {
  if (keys_.protects(req.path)) {
    if (auto e = keys_.check(req.header("authorization"))) {
      HttpResponse resp = api_error_response(*e);
      resp.headers.emplace_back("WWW-Authenticate", "Bearer");
      return ex->respond(std::move(resp));
    }
  }
  std::string allowed;
  for (const Route& r : routes_) {
    if (!r.matches(req.path)) continue;
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
