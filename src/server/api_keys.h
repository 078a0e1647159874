// ApiKeys: access control by bearer key. With keys configured (--api-key, and the
// lines of --api-key-file), every request must carry `Authorization: Bearer KEY` except
// the probes GET /health and /ready, the dashboard's files (/ and /ui/...; the page
// sends the key the user types with its API calls), /metrics unless protect_metrics,
// and the admin API /admin/*, which the admin token guards instead (an API key never
// opens it); the answer without a valid key is 401 in the OpenAI error shape. A key
// has at least kMinKeyLength characters. Keys are compared in constant
// time (the time depends on the presented key's length only, never on where it first
// differs or on the keys' lengths), and no key is ever logged.
//
// Thread-safety: immutable after load(); check() from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/api_error.h"
#include "server/server_config.h"

namespace llms {

// The credential of an Authorization header value "Bearer CREDENTIAL" (the scheme in
// any case, surrounding whitespace trimmed); "" when it is not one.
std::string_view bearer_credential(std::string_view authorization);

class ApiKeys {
 public:
  static constexpr size_t kMinKeyLength = 16;

  ApiKeys() = default;  // no keys: everything is open
  // The keys of `c.api_key` and `c.api_key_file` (one per line; blank lines and lines
  // starting with '#' are skipped, surrounding whitespace is trimmed). An unreadable
  // file, a file without keys or a key with whitespace inside is an error naming the
  // option, never the key.
  static Result<ApiKeys> load(const ServerConfig& c);
  static Result<ApiKeys> from_keys(std::vector<std::string> keys, bool protect_metrics);

  bool enabled() const { return !keys_.empty(); }
  size_t size() const { return keys_.size(); }
  // Whether a request for `path` must carry a key.
  bool protects(std::string_view path) const;
  // nullopt when the Authorization header value carries one of the keys, else the 401.
  std::optional<ApiError> check(std::string_view authorization) const;
  // Whether `secret` is one of the keys (for refusing an admin token that is also a key).
  bool contains(std::string_view secret) const;

 private:
  std::vector<std::string> keys_;
  bool protect_metrics_ = false;
};

}  // namespace llms
