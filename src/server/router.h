// Router: method + path → endpoint, behind the checks every request passes first:
//   1. BrowserPolicy: the Host allow-list (403), CORS preflights, the Origin of
//      state-changing requests (403); answers to CORS origins get the CORS headers.
//   2. API keys: with keys configured, a request without a valid key gets 401
//      (api_keys.h says which paths are open). /admin/* is never checked against the
//      API keys: its handler wants the admin token, and an API key never opens it.
//   3. Unknown paths get 404, a known path with the wrong method 405 (with Allow);
//      HEAD is served on every GET route (the transport sends no body).
//   4. Endpoints that read a JSON body want `Content-Type: application/json` (415).
// Everything in the OpenAI error shape. Any exception an endpoint lets escape becomes
// a 500 rather than a dead connection. Its route table is the one list of the
// server's paths: the metrics' endpoint labels come from it too.
//
// Thread-safety: immutable after construction; handle() from any I/O thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_keys.h"
#include "server/browser_policy.h"
#include "server/http_types.h"
#include "server/server_context.h"

namespace llms {

class Router {
 public:
  explicit Router(ServerContext& ctx, ApiKeys keys = {}, BrowserPolicy browser = {});
  void handle(HttpRequest req, std::shared_ptr<HttpExchange> ex) const;
  // The endpoint label of a path for metrics: its route ("/v1/models" for
  // "/v1/models/{id}"), or "other", so that labels stay bounded.
  std::string_view endpoint_label(std::string_view path) const;

 private:
  using Endpoint = std::function<void(ServerContext&, const HttpRequest&, std::shared_ptr<HttpExchange>)>;
  struct Route {
    std::string method;
    std::string path;  // exact, or a prefix when it ends with '/' (but "/" itself is exact)
    Endpoint fn;
    bool json_body = false;  // reads a JSON body: wants Content-Type application/json
    bool matches(std::string_view p) const;
  };
  void route(const HttpRequest& req, const std::shared_ptr<HttpExchange>& ex) const;

  ServerContext& ctx_;
  const ApiKeys keys_;
  const BrowserPolicy browser_;
  std::vector<Route> routes_;
};

}  // namespace llms
