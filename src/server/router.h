// Router: method + path → endpoint. Unknown paths get 404, a known path with the wrong
// method 405 (with Allow), both in the OpenAI error shape. Any exception an endpoint
// lets escape becomes a 500 rather than a dead connection.
//
// Thread-safety: immutable after construction; handle() from any I/O thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/http_types.h"
#include "server/server_context.h"

namespace llms {

class Router {
 public:
  explicit Router(ServerContext& ctx);
  void handle(HttpRequest req, std::shared_ptr<HttpExchange> ex) const;

 private:
  using Endpoint = std::function<void(ServerContext&, const HttpRequest&, std::shared_ptr<HttpExchange>)>;
  struct Route {
    std::string method;
    std::string path;  // exact, or a prefix when it ends with '/'
    Endpoint fn;
  };
  ServerContext& ctx_;
  std::vector<Route> routes_;
};

}  // namespace llms
