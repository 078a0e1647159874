#include "chat/jinja_value.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/utf8.h"

namespace llms::jinja {

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::kInt), i_(i) {}
Value::Value(double d) : kind_(Kind::kFloat), d_(d) {}
Value::Value(std::string s) : kind_(Kind::kString), s_(std::move(s)) {}

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<ValueList>(std::move(items));
  return v;
}

Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

Value Value::dict() {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>();
  return v;
}

Value Value::namespace_object() {
  Value v = dict();
  v.dict_->is_namespace = true;
  return v;
}

Value Value::function(std::string name, Function fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.s_ = std::move(name);
  v.fn_ = std::make_shared<Function>(std::move(fn));
  return v;
}

Value Value::undefined(std::string name) {
  Value v;
  v.s_ = std::move(name);
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      for (const auto& e : j) items.push_back(from_json(e));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = dict();
      for (auto it = j.begin(); it != j.end(); ++it) d.dict_->entries.emplace_back(Value(it.key()), from_json(it.value()));
      return d;
    }
    default: return none();
  }
}

bool Value::is_namespace() const { return kind_ == Kind::kDict && dict_->is_namespace; }

int64_t Value::as_int() const {
  if (kind_ == Kind::kBool) return b_ ? 1 : 0;
  if (kind_ == Kind::kFloat) return static_cast<int64_t>(d_);
  return i_;
}

double Value::as_number() const {
  if (kind_ == Kind::kFloat) return d_;
  return static_cast<double>(as_int());
}

const ValueList& Value::items() const { return *list_; }
ValueList& Value::mutable_items() { return *list_; }
Dict& Value::dict_ref() const { return *dict_; }
const Function& Value::fn() const { return *fn_; }

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return d_ != 0.0;
    case Kind::kString: return !s_.empty();
    case Kind::kList:
    case Kind::kTuple: return !list_->empty();
    case Kind::kDict: return !dict_->entries.empty();
    case Kind::kFunction: return true;
  }
  return false;
}

std::string python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits and the decimal exponent, then Python's layout:
  // positional for 1e-4 <= |d| < 1e16, scientific otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  const int exp = std::stoi(sci.substr(e_pos + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  return out + fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', std::abs(exp));
}

std::string python_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(quote)) out += std::string("\\") + quote;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out + quote;
}

std::string Value::to_string() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return s_;
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return b_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return python_float(d_);
    case Kind::kString: return python_repr(s_);
    case Kind::kList:
    case Kind::kTuple: {
      const bool tuple = kind_ == Kind::kTuple;
      std::string out = tuple ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
      if (tuple && list_->size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case Kind::kDict: {
      if (dict_->is_namespace) return "<Namespace>";
      std::string out = "{";
      for (size_t i = 0; i < dict_->entries.size(); ++i) {
        out += (i ? ", " : "") + dict_->entries[i].first.repr() + ": " + dict_->entries[i].second.repr();
      }
      return out + "}";
    }
    case Kind::kFunction: return "<function " + s_ + ">";
  }
  return "";
}

bool Value::equals(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (kind_ == Kind::kFloat || o.kind_ == Kind::kFloat) return as_number() == o.as_number();
    return as_int() == o.as_int();
  }
  if (is_list() && o.is_list()) {
    if (kind_ != o.kind_ || list_->size() != o.list_->size()) return false;
    for (size_t i = 0; i < list_->size(); ++i) {
      if (!(*list_)[i].equals((*o.list_)[i])) return false;
    }
    return true;
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return s_ == o.s_;
    case Kind::kDict: {
      if (dict_ == o.dict_) return true;
      if (dict_->entries.size() != o.dict_->entries.size()) return false;
      for (const auto& [k, v] : dict_->entries) {
        const Value* other = o.dict_->find(k);
        if (other == nullptr || !v.equals(*other)) return false;
      }
      return true;
    }
    case Kind::kFunction: return fn_ == o.fn_;
    default: return false;
  }
}

bool Value::less_than(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (kind_ == Kind::kFloat || o.kind_ == Kind::kFloat) return as_number() < o.as_number();
    return as_int() < o.as_int();
  }
  if (is_string() && o.is_string()) return to_code_points(s_) < to_code_points(o.s_);
  if (is_list() && o.is_list()) {
    const size_t n = std::min(list_->size(), o.list_->size());
    for (size_t i = 0; i < n; ++i) {
      if (!(*list_)[i].equals((*o.list_)[i])) return (*list_)[i].less_than((*o.list_)[i]);
    }
    return list_->size() < o.list_->size();
  }
  throw TemplateError(fmt::format("'<' not supported between instances of '{}' and '{}'", type_name(), o.type_name()));
}

namespace {

void json_string(std::string_view s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          *out += fmt::format("\\u{:04x}", c);
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

void json_dump(const Value& v, int indent, bool sort_keys, int depth, std::string* out) {
  const auto newline = [&](int d) {
    if (indent >= 0) *out += "\n" + std::string(static_cast<size_t>(indent * d), ' ');
  };
  const char* item_sep = indent >= 0 ? "," : ", ";
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: *out += "null"; return;
    case Value::Kind::kBool: *out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: *out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: {
      const double d = v.as_number();
      *out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : python_float(d);
      return;
    }
    case Value::Kind::kString: json_string(v.str(), out); return;
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      if (v.items().empty()) {
        *out += "[]";
        return;
      }
      *out += "[";
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) *out += item_sep;
        newline(depth + 1);
        json_dump(v.items()[i], indent, sort_keys, depth + 1, out);
      }
      newline(depth);
      *out += "]";
      return;
    }
    case Value::Kind::kDict: {
      auto entries = v.dict_ref().entries;
      if (entries.empty()) {
        *out += "{}";
        return;
      }
      if (sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first.less_than(b.first); });
      }
      *out += "{";
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) *out += item_sep;
        newline(depth + 1);
        const Value& k = entries[i].first;
        json_string(k.is_string() ? k.str() : k.is_none() ? "null" : k.to_string(), out);
        *out += ": ";
        json_dump(entries[i].second, indent, sort_keys, depth + 1, out);
      }
      newline(depth);
      *out += "}";
      return;
    }
    case Value::Kind::kFunction:
      throw TemplateError("Object of type function is not JSON serializable");
  }
}

}  // namespace

std::string Value::to_json(int indent, bool sort_keys) const {
  std::string out;
  json_dump(*this, indent, sort_keys, 0, &out);
  return out;
}

nlohmann::ordered_json Value::to_json_value() const {
  switch (kind_) {
    case Kind::kBool: return b_;
    case Kind::kInt: return i_;
    case Kind::kFloat: return d_;
    case Kind::kString: return s_;
    case Kind::kList:
    case Kind::kTuple: {
      auto a = nlohmann::ordered_json::array();
      for (const Value& e : *list_) a.push_back(e.to_json_value());
      return a;
    }
    case Kind::kDict: {
      auto o = nlohmann::ordered_json::object();
      for (const auto& [k, e] : dict_->entries) o[k.to_string()] = e.to_json_value();
      return o;
    }
    default: return nullptr;
  }
}

int64_t Value::length() const {
  switch (kind_) {
    case Kind::kString: return static_cast<int64_t>(to_code_points(s_).size());
    case Kind::kList:
    case Kind::kTuple: return static_cast<int64_t>(list_->size());
    case Kind::kDict: return static_cast<int64_t>(dict_->entries.size());
    case Kind::kUndefined: return 0;
    default: throw TemplateError(fmt::format("object of type '{}' has no len()", type_name()));
  }
}

ValueList Value::iterate() const {
  switch (kind_) {
    case Kind::kList:
    case Kind::kTuple: return *list_;
    case Kind::kDict: {
      ValueList keys;
      for (const auto& e : dict_->entries) keys.push_back(e.first);
      return keys;
    }
    case Kind::kString: {
      ValueList chars;
      for (char32_t c : to_code_points(s_)) chars.emplace_back(from_code_points(std::u32string_view(&c, 1)));
      return chars;
    }
    case Kind::kUndefined: return {};
    default: throw TemplateError(fmt::format("'{}' object is not iterable", type_name()));
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kDict: return is_namespace() ? "Namespace" : "dict";
    case Kind::kFunction: return "function";
  }
  return "";
}

const Value* Dict::find(const Value& key) const {
  for (const auto& e : entries) {
    if (e.first.equals(key)) return &e.second;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& e : entries) {
    if (e.first.is_string() && e.first.str() == key) return &e.second;
  }
  return nullptr;
}

void Dict::set(const Value& key, Value v) {
  for (auto& e : entries) {
    if (e.first.equals(key)) {
      e.second = std::move(v);
      return;
    }
  }
  entries.emplace_back(key, std::move(v));
}

Value Args::get_or(size_t index, const char* name, Value fallback) const {
  for (const auto& [k, v] : keyword) {
    if (k == name) return v;
  }
  if (index < positional.size()) return positional[index];
  return fallback;
}

Value Args::get(const char* fn, size_t index, const char* name) const {
  Value v = get_or(index, name, Value::undefined(name));
  if (v.is_undefined() && v.undefined_name() == name) {
    throw TemplateError(fmt::format("{}() missing required argument '{}'", fn, name));
  }
  return v;
}

std::u32string to_code_points(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool valid = n > 0 && i + n <= s.size();
    for (size_t k = 1; valid && k < n; ++k) valid = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (!valid) {
      out += static_cast<char32_t>(0xDC00 + c);  // Python's surrogateescape: round-trips the byte
      ++i;
      continue;
    }
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    out += cp;
    i += n;
  }
  return out;
}

std::string from_code_points(std::u32string_view s) {
  std::string out;
  for (char32_t cp : s) {
    if (cp >= 0xDC80 && cp <= 0xDCFF) {
      out += static_cast<char>(cp - 0xDC00);  // a byte that was not UTF-8, as it came
    } else {
      utf8_append(out, cp);
    }
  }
  return out;
}

}  // namespace llms::jinja
