#include "server/router.h"

#include <fmt/format.h>

#include "base/log.h"
#include "server/endpoints.h"

namespace llms {
namespace {

constexpr size_t kMaxEcho = 200;  // of a method or path quoted in an error

std::string echo(std::string_view s) { return std::string(s.substr(0, kMaxEcho)); }

}  // namespace

Router::Router(ServerContext& ctx, ApiKeys keys, BrowserPolicy browser)
    : ctx_(ctx), keys_(std::move(keys)), browser_(std::move(browser)) {
  auto completions = [](ServerContext& c, const HttpRequest& r, std::shared_ptr<HttpExchange> ex) {
    handle_completions(c, r, std::move(ex), ApiKind::kCompletion);
  };
  auto chat = [](ServerContext& c, const HttpRequest& r, std::shared_ptr<HttpExchange> ex) {
    handle_completions(c, r, std::move(ex), ApiKind::kChat);
  };
  constexpr bool kJson = true;
  routes_ = {
      {"POST", "/v1/completions", completions, kJson},
      {"POST", "/v1/chat/completions", chat, kJson},
      {"POST", "/v1/embeddings", handle_embeddings, kJson},
      {"POST", "/v1/responses", handle_responses, kJson},
      {"POST", "/v1/messages", handle_messages, kJson},
      {"POST", "/v1/messages/count_tokens", handle_count_tokens, kJson},
      {"GET", "/v1/models", handle_models},
      {"GET", "/v1/models/", handle_models},
      {"POST", "/tokenize", handle_tokenize, kJson},
      {"POST", "/detokenize", handle_detokenize, kJson},
      {"GET", "/health", handle_health},
      {"GET", "/ready", handle_ready},
      {"GET", "/metrics", handle_metrics},
      {"GET", "/v1/stats", handle_stats},
      {"POST", "/v1/feedback", handle_feedback, kJson},
      {"GET", "/admin/versions", handle_admin},
      {"POST", "/admin/deploy", handle_admin, kJson},
      {"POST", "/admin/promote", handle_admin},
      {"POST", "/admin/abort", handle_admin},
      {"POST", "/admin/rollback", handle_admin},
      {"POST", "/v1/load_lora_adapter", handle_load_lora, kJson},
      {"POST", "/v1/unload_lora_adapter", handle_unload_lora, kJson},
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
  if (auto e = browser_.check_host(req)) return ex->respond(api_error_response(*e));
  if (auto r = browser_.preflight(req)) return ex->respond(std::move(*r));
  if (auto e = browser_.check_origin(req)) return ex->respond(api_error_response(*e));
  ex = browser_.with_cors(req, std::move(ex));
  if (keys_.protects(req.path)) {
    // Anthropic's clients send the key as x-api-key.
    std::string authorization = req.header("authorization");
    if (authorization.empty() && !req.header("x-api-key").empty()) authorization = "Bearer " + req.header("x-api-key");
    if (auto e = keys_.check(authorization)) {
      HttpResponse resp = api_error_response(*e);
      resp.headers.emplace_back("WWW-Authenticate", "Bearer");
      return ex->respond(std::move(resp));
    }
  }
  route(req, ex);
}

void Router::route(const HttpRequest& req, const std::shared_ptr<HttpExchange>& ex) const {
  std::string allowed;
  for (const Route& r : routes_) {
    if (!r.matches(req.path)) continue;
    if (r.method != req.method && !(req.method == "HEAD" && r.method == "GET")) {
      if (!allowed.empty()) allowed += ", ";
      allowed += r.method == "GET" ? "GET, HEAD" : r.method;
      continue;
    }
    if (r.json_body && !is_json_content_type(req.header("content-type"))) {
      ApiError e = bad_request(fmt::format("{} {} takes a JSON body: send 'Content-Type: application/json' (not '{}')",
                                           r.method, r.path, echo(req.header("content-type"))),
                               "", "unsupported_media_type");
      e.status = 415;
      return ex->respond(api_error_response(e));
    }
    try {
      r.fn(ctx_, req, ex);
    } catch (const std::exception& e) {
      log_error("{} {} failed: {}", echo(req.method), echo(req.path), e.what());
      ex->respond(api_error_response(internal_api_error("internal error")));
    }
    return;
  }
  if (!allowed.empty()) {
    ApiError e = bad_request(fmt::format("{} is not allowed on {}; use {}", echo(req.method), echo(req.path), allowed));
    e.status = 405;
    HttpResponse resp = api_error_response(e);
    resp.headers.emplace_back("Allow", allowed);
    return ex->respond(std::move(resp));
  }
  ex->respond(
      api_error_response(not_found_error(fmt::format("no route for {} {}", echo(req.method), echo(req.path)))));
}

}  // namespace llms
