// Router: method + path → endpoint. With API keys configured, a request without a
// valid key gets 401 first (api_keys.h says which paths are open). Unknown paths get
// 404, a known path with the wrong method 405 (with Allow), all in the OpenAI error shape. Any exception an endpoint
// lets escape becomes a 500 rather than a dead connection. Its route table is the one
// list of the server's paths: the metrics' endpoint labels come from it too.
//
// Thread-safety: immutable after construction; handle() from any I/O thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_keys.h"
#include "server/http_types.h"
#include "server/server_context.h"

namespace llms {

class Router {
 public:
  explicit Router(ServerContext& ctx, ApiKeys keys = {});
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
    bool matches(std::string_view p) const;
  };
  ServerContext& ctx_;
  const ApiKeys keys_;
  std::vector<Route> routes_;
};

}  // namespace llms
