#include "io/gguf_value.h"

#include <fmt/format.h>

namespace llms::gguf {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kUint8: return "u8";
    case ValueType::kInt8: return "i8";
    case ValueType::kUint16: return "u16";
    case ValueType::kInt16: return "i16";
    case ValueType::kUint32: return "u32";
    case ValueType::kInt32: return "i32";
    case ValueType::kFloat32: return "f32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kUint64: return "u64";
    case ValueType::kInt64: return "i64";
    case ValueType::kFloat64: return "f64";
  }
  return "?";
}

bool value_type_valid(uint32_t id) { return id <= 12; }

bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kUint16: case ValueType::kInt16:
    case ValueType::kUint32: case ValueType::kInt32: case ValueType::kUint64: case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool is_float(ValueType t) { return t == ValueType::kFloat32 || t == ValueType::kFloat64; }

int scalar_size(ValueType t) {
  switch (t) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kBool: return 1;
    case ValueType::kUint16: case ValueType::kInt16: return 2;
    case ValueType::kUint32: case ValueType::kInt32: case ValueType::kFloat32: return 4;
    case ValueType::kUint64: case ValueType::kInt64: case ValueType::kFloat64: return 8;
    default: return 0;
  }
}

Value Value::string_array(const std::vector<std::string>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (const auto& s : items) v.push_back(Value::string(s));
  return array(ValueType::kString, std::move(v));
}

Value Value::f32_array(const std::vector<float>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (float f : items) v.push_back(Value::f32(f));
  return array(ValueType::kFloat32, std::move(v));
}

Value Value::i32_array(const std::vector<int32_t>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (int32_t i : items) v.push_back(Value::i32(i));
  return array(ValueType::kInt32, std::move(v));
}

std::string Value::summary() const {
  switch (type_) {
    case ValueType::kString: {
      const auto& s = as_string();
      if (s.size() > 60) return fmt::format("\"{}...\" ({} bytes)", s.substr(0, 57), s.size());
      return fmt::format("\"{}\"", s);
    }
    case ValueType::kArray: {
      const auto& a = as_array();
      return fmt::format("[{} x {}]", value_type_name(a.elem_type), a.items.size());
    }
    case ValueType::kBool: return as_bool() ? "true" : "false";
    case ValueType::kFloat32: case ValueType::kFloat64: return fmt::format("{:g}", as_f64());
    case ValueType::kInt8: case ValueType::kInt16: case ValueType::kInt32: case ValueType::kInt64:
      return std::to_string(as_i64());
    default: return std::to_string(as_u64());
  }
}

}  // namespace llms::gguf
