// GgufFile's typed reads of its metadata keys (get_uint(), get_string_array(), the
// _or forms with a fallback): NOT_FOUND for a missing key, INVALID_ARGUMENT naming the
// key for a value of another type.
#include <fmt/format.h>

#include <limits>

#include "io/gguf_file.h"

namespace llms {

using gguf::Value;
using gguf::ValueType;

namespace {

Status missing(std::string_view key) { return not_found(fmt::format("metadata key '{}' is missing", key)); }

Status wrong_type(std::string_view key, const Value& v, std::string_view expected) {
  return invalid_argument(fmt::format("metadata key '{}' has type {}, expected {}", key, gguf::value_type_name(v.type()),
                                      expected));
}

bool is_signed(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 || t == ValueType::kInt64;
}

}  // namespace

Result<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  if (!gguf::is_integer(v->type())) return wrong_type(key, *v, "an unsigned integer");
  if (is_signed(v->type())) {
    if (v->as_i64() < 0) return invalid_argument(fmt::format("metadata key '{}' is negative ({})", key, v->as_i64()));
    return static_cast<uint64_t>(v->as_i64());
  }
  return v->as_u64();
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  if (!gguf::is_integer(v->type())) return wrong_type(key, *v, "an integer");
  if (is_signed(v->type())) return v->as_i64();
  if (v->as_u64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return invalid_argument(fmt::format("metadata key '{}' is too large", key));
  }
  return static_cast<int64_t>(v->as_u64());
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  if (gguf::is_float(v->type())) return v->as_f64();
  if (gguf::is_integer(v->type())) {
    return is_signed(v->type()) ? static_cast<double>(v->as_i64()) : static_cast<double>(v->as_u64());
  }
  return wrong_type(key, *v, "a number");
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  if (v->type() != ValueType::kBool) return wrong_type(key, *v, "bool");
  return v->as_bool();
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  if (v->type() != ValueType::kString) return wrong_type(key, *v, "string");
  return v->as_string();
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  if (!v->is_array() || v->as_array().elem_type != ValueType::kString) return wrong_type(key, *v, "array of string");
  std::vector<std::string> out;
  out.reserve(v->as_array().items.size());
  for (const auto& item : v->as_array().items) out.push_back(item.as_string());
  return out;
}

Result<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  if (!v->is_array() || !gguf::is_float(v->as_array().elem_type)) return wrong_type(key, *v, "array of f32");
  std::vector<float> out;
  out.reserve(v->as_array().items.size());
  for (const auto& item : v->as_array().items) out.push_back(static_cast<float>(item.as_f64()));
  return out;
}

Result<std::vector<int32_t>> GgufFile::get_i32_array(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  if (!v->is_array() || !gguf::is_integer(v->as_array().elem_type)) return wrong_type(key, *v, "array of integers");
  std::vector<int32_t> out;
  out.reserve(v->as_array().items.size());
  const bool sgn = is_signed(v->as_array().elem_type);
  for (const auto& item : v->as_array().items) {
    const int64_t x = sgn ? item.as_i64() : static_cast<int64_t>(item.as_u64());
    if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
      return invalid_argument(fmt::format("metadata key '{}' holds {} which does not fit in 32 bits", key, x));
    }
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

Result<uint64_t> GgufFile::get_uint_or(std::string_view key, uint64_t fallback) const {
  return has(key) ? get_uint(key) : Result<uint64_t>(fallback);
}
Result<double> GgufFile::get_float_or(std::string_view key, double fallback) const {
  return has(key) ? get_float(key) : Result<double>(fallback);
}
Result<bool> GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : Result<bool>(fallback);
}
Result<std::string> GgufFile::get_string_or(std::string_view key, std::string fallback) const {
  return has(key) ? get_string(key) : Result<std::string>(std::move(fallback));
}

}  // namespace llms
