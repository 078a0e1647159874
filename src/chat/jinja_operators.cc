// Attribute, item and slice access, operators, methods of the built-in types and
// the global functions (jinja_builtins.h).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "chat/jinja_builtins.h"
#include "chat/jinja_strings.h"

namespace llms::jinja {
namespace {

[[noreturn]] void undefined_error(const Value& v) {
  throw TemplateError(fmt::format("'{}' is undefined", v.undefined_name()));
}

[[noreturn]] void type_error(const std::string& op, const Value& a, const Value& b) {
  throw TemplateError(
      fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(), b.type_name()));
}

// Python's floor division and modulo on integers.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

constexpr size_t kMaxRepeat = size_t{1} << 24;  // a template may not build a 16M-item string or list

Value repeat(const Value& seq, int64_t n) {
  if (n <= 0) return seq.is_string() ? Value(std::string()) : Value::list();
  if (seq.is_string()) {
    if (seq.str().size() * static_cast<size_t>(n) > kMaxRepeat) throw TemplateError("string repetition too large");
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value(std::move(out));
  }
  if (seq.items().size() * static_cast<size_t>(n) > kMaxRepeat) throw TemplateError("list repetition too large");
  ValueList out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return Value::list(std::move(out));
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  const bool floats = a.is_float() || b.is_float();
  if (op == "/") {
    if (b.as_number() == 0) throw TemplateError("division by zero");
    return Value(a.as_number() / b.as_number());
  }
  if (op == "**") {
    if (!floats && b.as_int() >= 0) return Value(static_cast<int64_t>(std::pow(a.as_number(), b.as_number())));
    return Value(std::pow(a.as_number(), b.as_number()));
  }
  if (floats) {
    const double x = a.as_number(), y = b.as_number();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (y == 0) throw TemplateError("float division by zero");
    if (op == "//") return Value(std::floor(x / y));
    if (op == "%") return Value(x - std::floor(x / y) * y);
  } else {
    const int64_t x = a.as_int(), y = b.as_int();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (y == 0) throw TemplateError("integer division or modulo by zero");
    if (op == "//") return Value(floor_div(x, y));
    if (op == "%") return Value(x - floor_div(x, y) * y);
  }
  type_error(op, a, b);
}

int64_t normalise_index(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

// Python's slice indices for a sequence of n items.
std::vector<int64_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step) {
  const int64_t st = step.is_undefined() || step.is_none() ? 1 : step.as_int();
  if (st == 0) throw TemplateError("slice step cannot be zero");
  const auto clamp = [&](const Value& v, int64_t def) {
    if (v.is_undefined() || v.is_none()) return def;
    int64_t i = v.as_int();
    if (i < 0) i += n;
    if (st > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t lo = clamp(start, st > 0 ? 0 : n - 1);
  const int64_t hi = clamp(stop, st > 0 ? n : -1);
  std::vector<int64_t> out;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) out.push_back(i);
  return out;
}

Value dict_method(const Value& obj, const std::string& name, const Args& args) {
  const Dict& d = obj.dict_ref();
  if (name == "items") {
    ValueList out;
    for (const auto& [k, v] : d.entries) out.push_back(Value::tuple({k, v}));
    return Value::list(std::move(out));
  }
  if (name == "keys" || name == "values") {
    ValueList out;
    for (const auto& [k, v] : d.entries) out.push_back(name == "keys" ? k : v);
    return Value::list(std::move(out));
  }
  if (name == "get") {
    const Value* v = d.find(args.get("get", 0, "key"));
    return v ? *v : args.get_or(1, "default", Value::none());
  }
  throw TemplateError(fmt::format("'dict' object has no attribute '{}'", name));
}

Value list_method(const Value& obj, const std::string& name, const Args& args) {
  const ValueList& items = obj.items();
  if (name == "index" || name == "count") {
    const Value x = args.get(name.c_str(), 0, "value");
    int64_t count = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].equals(x)) continue;
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++count;
    }
    if (name == "index") throw TemplateError(fmt::format("{} is not in list", x.repr()));
    return Value(count);
  }
  if (name == "append" || name == "pop" || name == "insert" || name == "extend" || name == "remove" ||
      name == "clear" || name == "sort" || name == "reverse") {
    throw TemplateError(fmt::format("access to attribute '{}' of '{}' object is unsafe", name, obj.type_name()));
  }
  throw TemplateError(fmt::format("'{}' object has no attribute '{}'", obj.type_name(), name));
}

std::string strftime_now(const std::string& format) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[256];
  const size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &tm);
  return std::string(buf, n);
}

}  // namespace

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_dict()) {
    const Value* v = obj.dict_ref().find(std::string_view(name));
    if (v) return *v;
  }
  return Value::undefined(name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_dict()) {
    const Value* v = obj.dict_ref().find(key);
    return v ? *v : Value::undefined(key.to_string());
  }
  if ((obj.is_list() || obj.is_string()) && key.is_number() && !key.is_float()) {
    if (obj.is_list()) {
      const int64_t n = static_cast<int64_t>(obj.items().size());
      const int64_t i = normalise_index(key.as_int(), n);
      return i >= 0 && i < n ? obj.items()[static_cast<size_t>(i)] : Value::undefined(key.to_string());
    }
    const std::u32string cps = to_code_points(obj.str());
    const int64_t i = normalise_index(key.as_int(), static_cast<int64_t>(cps.size()));
    if (i < 0 || i >= static_cast<int64_t>(cps.size())) return Value::undefined(key.to_string());
    return Value(from_code_points(std::u32string_view(&cps[static_cast<size_t>(i)], 1)));
  }
  if (key.is_string()) return get_attribute(obj, key.str());
  return Value::undefined(key.to_string());
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_string()) {
    const std::u32string cps = to_code_points(obj.str());
    std::u32string out;
    for (int64_t i : slice_indices(static_cast<int64_t>(cps.size()), start, stop, step)) out += cps[static_cast<size_t>(i)];
    return Value(from_code_points(out));
  }
  if (obj.is_list()) {
    ValueList out;
    for (int64_t i : slice_indices(static_cast<int64_t>(obj.items().size()), start, stop, step)) {
      out.push_back(obj.items()[static_cast<size_t>(i)]);
    }
    return obj.kind() == Value::Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  throw TemplateError(fmt::format("'{}' object is not subscriptable", obj.type_name()));
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value(a.to_string() + b.to_string());
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value(a.str() + b.str());
    if (a.is_list() && b.is_list() && a.kind() == b.kind()) {
      ValueList out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.kind() == Value::Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && b.is_number() && !b.is_float()) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && a.is_number() && !a.is_float()) return repeat(b, a.as_int());
  }
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  type_error(op, a, b);
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) throw TemplateError("'in <string>' requires string as left operand");
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_list()) {
    return std::any_of(container.items().begin(), container.items().end(), [&](const Value& v) { return v.equals(item); });
  }
  if (container.is_dict()) return container.dict_ref().find(item) != nullptr;
  if (container.is_undefined()) undefined_error(container);
  throw TemplateError(fmt::format("argument of type '{}' is not iterable", container.type_name()));
}

bool has_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) return is_string_method(name);
  if (obj.is_dict() && !obj.is_namespace()) return name == "items" || name == "keys" || name == "values" || name == "get";
  if (obj.is_list()) {
    return name == "index" || name == "count" || name == "append" || name == "pop" || name == "insert" ||
           name == "extend" || name == "remove" || name == "clear" || name == "sort" || name == "reverse";
  }
  return false;
}

Value call_method(const Value& obj, const std::string& name, const Args& args) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_string()) return string_method(obj.str(), name, args);
  if (obj.is_dict()) return dict_method(obj, name, args);
  if (obj.is_list()) return list_method(obj, name, args);
  throw TemplateError(fmt::format("'{}' object has no attribute '{}'", obj.type_name(), name));
}

Value global_function(const std::string& name) {
  if (name == "range") {
    return Value::function("range", [](Args& a) {
      int64_t start = 0, stop, step = 1;
      if (a.positional.size() == 1) {
        stop = a.positional[0].as_int();
      } else if (a.positional.size() >= 2) {
        start = a.positional[0].as_int();
        stop = a.positional[1].as_int();
        if (a.positional.size() > 2) step = a.positional[2].as_int();
      } else {
        throw TemplateError("range expected at least 1 argument");
      }
      if (step == 0) throw TemplateError("range() arg 3 must not be zero");
      ValueList out;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (out.size() >= kMaxRepeat) throw TemplateError("range too large");
        out.emplace_back(i);
      }
      return Value::list(std::move(out));
    });
  }
  if (name == "namespace" || name == "dict") {
    const bool ns = name == "namespace";
    return Value::function(name, [ns](Args& a) {
      Value d = ns ? Value::namespace_object() : Value::dict();
      for (const Value& p : a.positional) {
        if (!p.is_dict()) throw TemplateError("namespace() and dict() take a mapping or keyword arguments");
        for (const auto& [k, v] : p.dict_ref().entries) d.dict_ref().set(k, v);
      }
      for (auto& [k, v] : a.keyword) d.dict_ref().set(Value(k), v);
      return d;
    });
  }
  if (name == "raise_exception") {
    return Value::function(name, [](Args& a) -> Value {
      throw TemplateError(a.get_or(0, "message", Value("raise_exception() was called")).to_string());
    });
  }
  if (name == "strftime_now") {
    return Value::function(name, [](Args& a) { return Value(strftime_now(a.get("strftime_now", 0, "format").to_string())); });
  }
  return Value::undefined(name);
}

}  // namespace llms::jinja
