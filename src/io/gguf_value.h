// gguf::Value: one metadata value of a GGUF file (scalar, string or array, arrays may
// nest), shared by the reader and the writer. Type ids match the GGUF specification.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace llms::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

const char* value_type_name(ValueType t);
bool value_type_valid(uint32_t id);
bool is_integer(ValueType t);
bool is_float(ValueType t);
// Bytes of a scalar on disk; 0 for string and array.
int scalar_size(ValueType t);

class Value;

struct Array {
  ValueType elem_type = ValueType::kUint8;
  std::vector<Value> items;
};

class Value {
 public:
  Value() : type_(ValueType::kUint8), v_(uint64_t{0}) {}

  static Value u8(uint8_t v) { return Value(ValueType::kUint8, uint64_t{v}); }
  static Value i8(int8_t v) { return Value(ValueType::kInt8, int64_t{v}); }
  static Value u16(uint16_t v) { return Value(ValueType::kUint16, uint64_t{v}); }
  static Value i16(int16_t v) { return Value(ValueType::kInt16, int64_t{v}); }
  static Value u32(uint32_t v) { return Value(ValueType::kUint32, uint64_t{v}); }
  static Value i32(int32_t v) { return Value(ValueType::kInt32, int64_t{v}); }
  static Value u64(uint64_t v) { return Value(ValueType::kUint64, v); }
  static Value i64(int64_t v) { return Value(ValueType::kInt64, v); }
  static Value f32(float v) { return Value(ValueType::kFloat32, double{v}); }
  static Value f64(double v) { return Value(ValueType::kFloat64, v); }
  static Value boolean(bool v) { return Value(ValueType::kBool, v); }
  static Value string(std::string v) { return Value(ValueType::kString, std::move(v)); }
  static Value array(ValueType elem_type, std::vector<Value> items) {
    return Value(ValueType::kArray, Array{elem_type, std::move(items)});
  }
  // Convenience builders for the common typed arrays.
  static Value string_array(const std::vector<std::string>& items);
  static Value f32_array(const std::vector<float>& items);
  static Value i32_array(const std::vector<int32_t>& items);

  ValueType type() const { return type_; }
  bool is_array() const { return type_ == ValueType::kArray; }

  // Accessors; callers check type() first (the reader's typed getters do).
  uint64_t as_u64() const { return std::get<uint64_t>(v_); }
  int64_t as_i64() const { return std::get<int64_t>(v_); }
  double as_f64() const { return std::get<double>(v_); }
  bool as_bool() const { return std::get<bool>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Array& as_array() const { return std::get<Array>(v_); }

  // Short human text: 42, "llama", [string x 32000], for `inspect`.
  std::string summary() const;

 private:
  template <typename T>
  Value(ValueType t, T v) : type_(t), v_(std::move(v)) {}
  ValueType type_;
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> v_;
};

}  // namespace llms::gguf
