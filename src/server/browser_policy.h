// BrowserPolicy: what keeps a web page in someone's browser from driving the server
// (DNS rebinding, cross-site request forgery), and the CORS the operator opts into.
//
//   * Host allow-list. A request whose Host header names a host that is not allowed
//     gets 403 (code host_not_allowed). Allowed: any IP literal (a page can only send
//     one when its own origin is that address, so rebinding cannot produce it), the
//     bound host, `localhost` and `*.localhost`, and the entries of allowed_hosts
//     (exact names, ".example.com" for the domain and its subdomains, "*" for any).
//     The port is not compared. A request without Host (HTTP/1.0) is not a browser's.
//   * Origin on state-changing requests. A method other than GET, HEAD and OPTIONS
//     with an Origin header is refused (403, code origin_not_allowed) unless the
//     origin is the server's own (its host[:port] is the Host header) or a CORS origin.
//   * CORS, off by default. cors_origins lists the origins ("https://app.example.com",
//     or "*") whose pages may call the API: a preflight (OPTIONS with Origin and
//     Access-Control-Request-Method) from one is answered 204 with the allowed methods
//     and headers, from any other 403; their requests' answers carry
//     Access-Control-Allow-Origin.
//
// Thread-safety: immutable after create(); every method from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/api_error.h"
#include "server/http_types.h"
#include "server/server_config.h"

namespace llms {

// INVALID_ARGUMENT naming the key when allowed_hosts or cors_origins is malformed.
Status validate_browser_settings(const ServerConfig& c);

class BrowserPolicy {
 public:
  BrowserPolicy() = default;  // the defaults, bound to 127.0.0.1
  static Result<BrowserPolicy> create(const ServerConfig& c);

  // 403 when the request's Host is not allowed.
  std::optional<ApiError> check_host(const HttpRequest& req) const;
  // The answer to a CORS preflight; nullopt when `req` is not one.
  std::optional<HttpResponse> preflight(const HttpRequest& req) const;
  // 403 when a state-changing request comes from an origin that is not allowed.
  std::optional<ApiError> check_origin(const HttpRequest& req) const;
  // `ex`, or, for a request from a CORS origin, an exchange that adds the CORS headers
  // to its answer.
  std::shared_ptr<HttpExchange> with_cors(const HttpRequest& req, std::shared_ptr<HttpExchange> ex) const;

  bool host_allowed(std::string_view host_header) const;
  bool cors_origin(std::string_view origin) const;

 private:
  std::string bound_host_ = "127.0.0.1";
  std::vector<std::string> hosts_;    // lower case; ".domain" matches the domain and below
  bool any_host_ = false;
  std::vector<std::string> origins_;  // lower case, no trailing '/'
  bool any_origin_ = false;
};

// Whether a Content-Type header value is JSON (application/json, any parameters).
bool is_json_content_type(std::string_view content_type);

}  // namespace llms
