#include "server/api_keys.h"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "base/constant_time.h"

namespace llms {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// A key must be printable ASCII without spaces (what an Authorization header can
// carry) and long enough not to be guessed; "" when it is, else why not (never the key).
std::string key_problem(std::string_view k) {
  for (unsigned char c : k) {
    if (c <= 0x20 || c >= 0x7f) return "a key must be printable ASCII without spaces";
  }
  if (k.size() < ApiKeys::kMinKeyLength) {
    return fmt::format("a key must have at least {} characters (this one has {}); `openssl rand -hex 24` makes one",
                       ApiKeys::kMinKeyLength, k.size());
  }
  return "";
}

Status read_key_file(const std::string& path, std::vector<std::string>* keys) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(fmt::format("api_key_file: cannot open '{}'", path));
  std::string line;
  size_t found = 0;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string_view k = trim(line);
    if (k.empty() || k.front() == '#') continue;
    if (const std::string why = key_problem(k); !why.empty()) {
      return invalid_argument(fmt::format("api_key_file: '{}' line {}: {}", path, n, why));
    }
    keys->emplace_back(k);
    ++found;
  }
  if (in.bad()) return invalid_argument(fmt::format("api_key_file: cannot read '{}'", path));
  if (found == 0) return invalid_argument(fmt::format("api_key_file: '{}' holds no key", path));
  return ok_status();
}

ApiError unauthorized(std::string message, std::string code) {
  ApiError e = bad_request(std::move(message), "", std::move(code));
  e.status = 401;
  return e;
}

}  // namespace

Result<ApiKeys> ApiKeys::from_keys(std::vector<std::string> keys, bool protect_metrics) {
  for (const auto& k : keys) {
    if (const std::string why = key_problem(k); !why.empty()) return invalid_argument("api_key: " + why);
  }
  ApiKeys a;
  a.keys_ = std::move(keys);
  a.protect_metrics_ = protect_metrics;
  return a;
}

Result<ApiKeys> ApiKeys::load(const ServerConfig& c) {
  std::vector<std::string> keys;
  if (!c.api_key.empty()) keys.push_back(c.api_key);
  if (!c.api_key_file.empty()) LLMS_RETURN_IF_ERROR(read_key_file(c.api_key_file, &keys));
  return from_keys(std::move(keys), c.protect_metrics);
}

std::string_view bearer_credential(std::string_view authorization) {
  const std::string_view value = trim(authorization);
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size()) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (static_cast<char>(std::tolower(static_cast<unsigned char>(value[i]))) != kScheme[i]) return "";
  }
  return trim(value.substr(kScheme.size()));
}

bool ApiKeys::protects(std::string_view path) const {
  if (keys_.empty() || path == "/health" || path == "/ready") return false;
  if (path.starts_with("/admin/")) return false;  // the admin token's, never an API key's
  if (path == "/v1/load_lora_adapter" || path == "/v1/unload_lora_adapter") return false;  // the admin token's too
  if (path == "/" || path.starts_with("/ui/")) return false;  // the dashboard's files; its API calls carry the key
  return path != "/metrics" || protect_metrics_;
}

std::optional<ApiError> ApiKeys::check(std::string_view authorization) const {
  const std::string_view presented = bearer_credential(authorization);
  if (presented.empty()) {
    return unauthorized("You didn't provide an API key. You need to provide your API key in an Authorization header "
                        "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                        "");
  }
  if (contains(presented)) return std::nullopt;
  return unauthorized("Incorrect API key provided.", "invalid_api_key");
}

bool ApiKeys::contains(std::string_view secret) const {
  bool match = false;
  for (const auto& k : keys_) match |= constant_time_equal(secret, k);  // no early exit
  return match;
}

}  // namespace llms
