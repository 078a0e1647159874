#include "server/browser_policy.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace llms {
namespace {

constexpr size_t kMaxEcho = 200;  // of a client's header value quoted in an error

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string echo(std::string_view s) { return std::string(s.substr(0, kMaxEcho)); }

// The comma-separated entries of a list setting, trimmed, lower case, none empty.
std::vector<std::string> split_list(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = trim(list.substr(0, comma));
    if (!item.empty()) out.push_back(lower(item));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

bool host_name_chars(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_';
  });
}

// "scheme://authority" with nothing after the authority (a trailing '/' is dropped).
bool valid_origin(std::string& o) {
  if (o == "*") return true;
  if (!o.empty() && o.back() == '/') o.pop_back();
  const size_t sep = o.find("://");
  if (sep == std::string::npos || sep == 0) return false;
  const std::string_view authority = std::string_view(o).substr(sep + 3);
  return !authority.empty() && authority.find_first_of("/?# ") == std::string_view::npos;
}

// The host of a Host header value, lower case, without port, brackets or a final dot.
std::string host_name(std::string_view value) {
  value = trim(value);
  if (!value.empty() && value.front() == '[') {
    const size_t close = value.find(']');
    return lower(value.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1));
  }
  const size_t colon = value.find(':');
  if (colon != std::string_view::npos && value.find(':', colon + 1) == std::string_view::npos) value = value.substr(0, colon);
  std::string h = lower(value);
  if (!h.empty() && h.back() == '.') h.pop_back();
  return h;
}

bool ip_literal(const std::string& h) {
  unsigned char buf[16];
  return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

ApiError forbidden(std::string message, std::string code) {
  ApiError e = bad_request(std::move(message), "", std::move(code));
  e.status = 403;
  return e;
}

// The exchange of a request from a CORS origin: its answer carries the CORS headers.
class CorsExchange : public HttpExchange {
 public:
  CorsExchange(std::shared_ptr<HttpExchange> inner, HttpHeaders headers)
      : inner_(std::move(inner)), headers_(std::move(headers)) {}
  void respond(HttpResponse r) override {
    r.headers.insert(r.headers.end(), headers_.begin(), headers_.end());
    inner_->respond(std::move(r));
  }
  void begin_stream(std::string content_type, HttpHeaders h) override {
    h.insert(h.end(), headers_.begin(), headers_.end());
    inner_->begin_stream(std::move(content_type), std::move(h));
  }
  void write(std::string data) override { inner_->write(std::move(data)); }
  void end_stream() override { inner_->end_stream(); }
  void post(std::function<void()> fn) override { inner_->post(std::move(fn)); }
  void when_writable(std::function<void()> fn) override { inner_->when_writable(std::move(fn)); }
  void set_on_close(std::function<void()> fn) override { inner_->set_on_close(std::move(fn)); }

 private:
  std::shared_ptr<HttpExchange> inner_;
  const HttpHeaders headers_;
};

}  // namespace

Status validate_browser_settings(const ServerConfig& c) {
  for (const std::string& h : split_list(c.allowed_hosts)) {
    const std::string_view name = h.front() == '.' ? std::string_view(h).substr(1) : std::string_view(h);
    if (h != "*" && !host_name_chars(name)) {
      return invalid_argument(fmt::format("allowed_hosts: '{}' is not a host name (give names without scheme or port, "
                                          "'.example.com' for a domain and its subdomains, or '*' for any)",
                                          echo(h)));
    }
  }
  for (std::string o : split_list(c.cors_origins)) {
    if (!valid_origin(o)) {
      return invalid_argument(fmt::format("cors_origins: '{}' is not an origin (scheme://host[:port], e.g. "
                                          "https://app.example.com, or '*' for any)",
                                          echo(o)));
    }
  }
  return ok_status();
}

Result<BrowserPolicy> BrowserPolicy::create(const ServerConfig& c) {
  LLMS_RETURN_IF_ERROR(validate_browser_settings(c));
  BrowserPolicy p;
  p.bound_host_ = host_name(c.host);
  for (const std::string& h : split_list(c.allowed_hosts)) {
    if (h == "*") p.any_host_ = true;
    p.hosts_.push_back(h);
  }
  for (std::string o : split_list(c.cors_origins)) {
    valid_origin(o);  // drops a trailing '/'
    if (o == "*") p.any_origin_ = true;
    p.origins_.push_back(std::move(o));
  }
  return p;
}

bool BrowserPolicy::host_allowed(std::string_view host_header) const {
  if (any_host_) return true;
  const std::string h = host_name(host_header);
  if (h.empty() || ip_literal(h) || h == bound_host_ || h == "localhost" || h.ends_with(".localhost")) return true;
  for (const std::string& a : hosts_) {
    if (a == h || (a.front() == '.' && (h == a.substr(1) || h.ends_with(a)))) return true;
  }
  return false;
}

bool BrowserPolicy::cors_origin(std::string_view origin) const {
  if (origin.empty()) return false;
  if (any_origin_) return true;
  const std::string o = lower(trim(origin));
  return std::find(origins_.begin(), origins_.end(), o) != origins_.end();
}

std::optional<ApiError> BrowserPolicy::check_host(const HttpRequest& req) const {
  const std::string host = req.header("host");
  if (host.empty() || host_allowed(host)) return std::nullopt;
  return forbidden(fmt::format("the host '{}' is not served here; a server reached by a name sets it in "
                               "allowed_hosts (--allowed-hosts)",
                               echo(host_name(host))),
                   "host_not_allowed");
}

std::optional<HttpResponse> BrowserPolicy::preflight(const HttpRequest& req) const {
  const std::string origin = req.header("origin");
  if (req.method != "OPTIONS" || origin.empty() || req.header("access-control-request-method").empty()) {
    return std::nullopt;
  }
  if (!cors_origin(origin)) {
    return api_error_response(forbidden(
        fmt::format("the origin '{}' may not call this server from a browser (cors_origins)", echo(origin)),
        "origin_not_allowed"));
  }
  HttpResponse r{204, "text/plain", "", {}};
  r.headers = {{"Access-Control-Allow-Origin", origin},
               {"Access-Control-Allow-Methods", "GET, HEAD, POST"},
               {"Access-Control-Allow-Headers", "Authorization, Content-Type, X-LLMServe-Version"},
               {"Access-Control-Max-Age", "600"},
               {"Vary", "Origin"}};
  return r;
}

std::optional<ApiError> BrowserPolicy::check_origin(const HttpRequest& req) const {
  if (req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS") return std::nullopt;
  const std::string origin = req.header("origin");
  if (origin.empty() || cors_origin(origin)) return std::nullopt;
  const size_t sep = origin.find("://");
  if (sep != std::string::npos && lower(trim(origin.substr(sep + 3))) == lower(trim(req.header("host")))) {
    return std::nullopt;  // the server's own page (the dashboard)
  }
  return forbidden(fmt::format("a {} from the origin '{}' is refused: only the server's own pages and "
                               "cors_origins may change state",
                               echo(req.method), echo(origin)),
                   "origin_not_allowed");
}

std::shared_ptr<HttpExchange> BrowserPolicy::with_cors(const HttpRequest& req, std::shared_ptr<HttpExchange> ex) const {
  const std::string origin = req.header("origin");
  if (!cors_origin(origin)) return ex;
  return std::make_shared<CorsExchange>(
      std::move(ex), HttpHeaders{{"Access-Control-Allow-Origin", origin},
                                 {"Access-Control-Expose-Headers", "X-LLMServe-Model-Version, Retry-After"},
                                 {"Vary", "Origin"}});
}

bool is_json_content_type(std::string_view content_type) {
  const std::string_view media = trim(content_type.substr(0, content_type.find(';')));
  return lower(media) == "application/json";
}

}  // namespace llms
