#include "tokenizer/hf_json.h"

#include <fmt/format.h>

#include <climits>

namespace llms::hfjson {

Result<Json> parse(std::string_view text, std::string_view file) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument(fmt::format("{}: not valid JSON", file));
  return j;
}

Status type_error(std::string_view where, std::string_view key, std::string_view expected) {
  return invalid_argument(fmt::format("{}{}{}: expected {}", where, where.empty() ? "" : ".", key, expected));
}

const Json* member(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Result<std::string> get_string(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = member(obj, key);
  if (v == nullptr || !v->is_string()) return type_error(where, key, "a string");
  return v->get<std::string>();
}

Result<std::optional<std::string>> get_opt_string(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = member(obj, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return type_error(where, key, "a string or null");
  return std::optional<std::string>(v->get<std::string>());
}

Result<bool> get_bool(const Json& obj, std::string_view key, bool fallback, std::string_view where) {
  const Json* v = member(obj, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return type_error(where, key, "true or false");
  return v->get<bool>();
}

Result<std::optional<int64_t>> get_opt_int(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = member(obj, key);
  if (v == nullptr) return std::optional<int64_t>();
  if (v->is_number_unsigned()) {
    const auto u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return type_error(where, key, "a smaller integer");
    return std::optional<int64_t>(static_cast<int64_t>(u));
  }
  if (!v->is_number_integer()) return type_error(where, key, "an integer");
  return std::optional<int64_t>(v->get<int64_t>());
}

Result<std::optional<double>> get_opt_number(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = member(obj, key);
  if (v == nullptr) return std::optional<double>();
  if (!v->is_number()) return type_error(where, key, "a number");
  return std::optional<double>(v->get<double>());
}

Result<int32_t> to_id(const Json& v, std::string_view where) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u < static_cast<uint64_t>(INT32_MAX)) return static_cast<int32_t>(u);
  } else if (v.is_number_integer()) {
    const auto i = v.get<int64_t>();
    if (i >= 0 && i < INT32_MAX) return static_cast<int32_t>(i);
  }
  return invalid_argument(fmt::format("{}: expected a token id (an integer from 0 to {})", where, INT32_MAX - 1));
}

}  // namespace llms::hfjson
