// The values a chat template computes with, with Python's semantics where Jinja
// borrows them: None prints "None", 7 / 2 is 3.5, [1] + [2] is [1, 2], a string's
// length counts code points, and a dict keeps its insertion order.
//
// Lists and dicts are shared, like Python objects: a namespace() assigned to two
// names is one object, which is what `{% set ns.x = ... %}` inside a loop relies on.
// Values passed in from outside are never modified (the template runs sandboxed, as
// Hugging Face renders it: lists and dicts have no mutating methods).
//
// Thread-safety: a Value is not synchronised; a rendering owns the values it makes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace llms::jinja {

// What a template did wrong (a type error, raise_exception, an undefined name used
// where a value is needed). Thrown inside the interpreter and turned into a Status
// at its boundary.
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value;
using ValueList = std::vector<Value>;
struct Dict;
struct Args;
// A macro, a global function or a bound method.
using Function = std::function<Value(Args&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict, kFunction };

  Value() = default;  // undefined
  static Value none();
  Value(bool b);  // NOLINT: implicit like Python literals
  Value(int64_t i);
  Value(int i) : Value(static_cast<int64_t>(i)) {}
  Value(double d);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  static Value list(ValueList items = {});
  static Value tuple(ValueList items);
  static Value dict();
  static Value namespace_object();
  static Value function(std::string name, Function fn);
  // An undefined value that remembers the name it was looked up by, for errors.
  static Value undefined(std::string name);
  // JSON → value: objects become dicts (order kept), arrays lists.
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_function() const { return kind_ == Kind::kFunction; }
  bool is_namespace() const;

  bool as_bool() const { return b_; }
  int64_t as_int() const;   // ints and bools (Python's bool is an int)
  double as_number() const;  // any number
  const std::string& str() const { return s_; }
  const ValueList& items() const;  // list or tuple
  ValueList& mutable_items();
  Dict& dict_ref() const;
  const Function& fn() const;
  const std::string& undefined_name() const { return s_; }

  // Python's truth value.
  bool truthy() const;
  // str(x) as Jinja prints it ({{ x }}): None → "None", True → "True", lists as repr.
  std::string to_string() const;
  // repr(x): strings quoted as Python quotes them.
  std::string repr() const;
  // Python's ==.
  bool equals(const Value& other) const;
  // Python's <; TemplateError when the types do not order.
  bool less_than(const Value& other) const;
  // json.dumps(x, ensure_ascii=False, indent=..., sort_keys=...): Hugging Face's tojson.
  std::string to_json(int indent, bool sort_keys) const;
  // The value as JSON data (undefined and functions become null).
  nlohmann::ordered_json to_json_value() const;
  // Python's len(): code points of a string, items of a list, keys of a dict.
  int64_t length() const;
  // Iteration as a for loop sees it: list items, dict keys, string characters.
  ValueList iterate() const;
  std::string type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;  // the string, or an undefined value's name, or a function's name
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> fn_;
};

// An insertion-ordered dict. Keys are strings in practice (JSON objects, kwargs); any
// value may be a key, compared with Python's ==.
struct Dict {
  std::vector<std::pair<Value, Value>> entries;
  bool is_namespace = false;  // namespace(): attributes may be assigned

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(const Value& key, Value v);
};

// Arguments of a call: positional, then keyword in the order written.
struct Args {
  ValueList positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or by `name`, else `fallback`; TemplateError naming
  // `fn` when a required argument (no fallback given) is missing.
  Value get(const char* fn, size_t index, const char* name) const;
  Value get_or(size_t index, const char* name, Value fallback) const;
};

// Python's float repr (shortest round trip: 1.0, 0.1, 1e-07, 1e+16).
std::string python_float(double d);
// Python's repr of a string.
std::string python_repr(std::string_view s);
// The string's code points (invalid UTF-8 bytes pass through as U+FFFD-free
// single units, so lengths and slices never throw).
std::u32string to_code_points(std::string_view s);
std::string from_code_points(std::u32string_view s);

}  // namespace llms::jinja
