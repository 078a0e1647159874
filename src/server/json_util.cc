#include "server/json_util.h"

#include <fmt/format.h>

#include <cmath>

namespace llms {

std::string dump_json(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::optional<ApiError> parse_json_object(const std::string& body, Json* out) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad_request("the request body is not valid JSON");
  if (!j.is_object()) return bad_request("the request body must be a JSON object");
  *out = std::move(j);
  return std::nullopt;
}

bool has_field(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

std::string string_field(const Json& obj, const char* key, const std::string& fallback) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  return it->is_string() ? it->get<std::string>() : std::string();
}

bool bool_field(const Json& obj, const char* key) {
  if (!obj.is_object()) return false;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

std::optional<ApiError> read_bool(const Json& obj, const char* key, bool* out) {
  if (!has_field(obj, key)) return std::nullopt;
  const Json& v = obj.at(key);
  if (!v.is_boolean()) return bad_request(fmt::format("'{}' must be a boolean", key), key);
  *out = v.get<bool>();
  return std::nullopt;
}

std::optional<ApiError> read_int(const Json& obj, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  if (!has_field(obj, key)) return std::nullopt;
  const Json& v = obj.at(key);
  int64_t x = 0;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return bad_request(fmt::format("'{}' is out of range", key), key);
    }
    x = v.get<int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
             std::fabs(v.get<double>()) < 9e15) {
    x = static_cast<int64_t>(v.get<double>());  // 16.0 is an integer in JSON's eyes
  } else {
    return bad_request(fmt::format("'{}' must be an integer", key), key);
  }
  if (x < lo || x > hi) return bad_request(fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, x), key);
  *out = x;
  return std::nullopt;
}

std::optional<ApiError> read_number(const Json& obj, const char* key, double lo, double hi, double* out) {
  if (!has_field(obj, key)) return std::nullopt;
  const Json& v = obj.at(key);
  if (!v.is_number()) return bad_request(fmt::format("'{}' must be a number", key), key);
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    return bad_request(fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, x), key);
  }
  *out = x;
  return std::nullopt;
}

std::optional<ApiError> read_string(const Json& obj, const char* key, std::string* out) {
  if (!has_field(obj, key)) return std::nullopt;
  const Json& v = obj.at(key);
  if (!v.is_string()) return bad_request(fmt::format("'{}' must be a string", key), key);
  *out = v.get<std::string>();
  return std::nullopt;
}

}  // namespace llms
