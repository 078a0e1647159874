// Filters and tests (jinja_builtins.h), with Jinja 3's arguments and defaults.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "chat/jinja_builtins.h"
#include "chat/jinja_strings.h"

namespace llms::jinja {
namespace {

// Filter arguments after the filtered value: map('upper') passes ('upper').
Args shift(const Args& a, size_t n) {
  Args out;
  out.positional.assign(a.positional.begin() + static_cast<long>(std::min(n, a.positional.size())), a.positional.end());
  out.keyword = a.keyword;
  return out;
}

// An attribute path "a.b" or an index, as map/sort/sum take it.
Value attribute_path(const Value& v, const Value& attr) {
  if (attr.is_number()) return get_item(v, attr);
  Value cur = v;
  for (const std::string& part : py_split(attr.to_string(), Value("."), -1)) {
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = digits ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part)))) : get_item(cur, Value(part));
  }
  return cur;
}

// Sort/compare key: lower-cased strings unless case-sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(py_lower(v.str()));
  return v;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string indent(const std::string& s, const Value& width, bool first, bool blank) {
  const std::string pad = width.is_string() ? width.str() : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
  std::vector<std::string> lines = py_split(s + "\n", Value("\n"), -1);
  lines.pop_back();  // splitlines() of text ending in "\n"
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i == 0) {
      out = lines[0];
      continue;
    }
    out += "\n" + ((blank || !lines[i].empty()) ? pad : "") + lines[i];
  }
  return first ? pad + out : out;
}

Value sorted(const Value& v, const Args& a) {
  const bool reverse = a.get_or(0, "reverse", Value(false)).truthy();
  const bool cs = a.get_or(1, "case_sensitive", Value(false)).truthy();
  const Value attr = a.get_or(2, "attribute", Value::none());
  ValueList items = v.iterate();
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key(attr.is_none() ? x : attribute_path(x, attr), cs);
    const Value ky = sort_key(attr.is_none() ? y : attribute_path(y, attr), cs);
    return reverse ? ky.less_than(kx) : kx.less_than(ky);
  });
  return Value::list(std::move(items));
}

Value dictsort(const Value& v, const Args& a) {
  if (!v.is_dict()) throw TemplateError("dictsort filter: the value is not a dict");
  const bool cs = a.get_or(0, "case_sensitive", Value(false)).truthy();
  const bool by_value = a.get_or(1, "by", Value("key")).to_string() == "value";
  const bool reverse = a.get_or(2, "reverse", Value(false)).truthy();
  ValueList items;
  for (const auto& [k, x] : v.dict_ref().entries) items.push_back(Value::tuple({k, x}));
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key(x.items()[by_value ? 1 : 0], cs), ky = sort_key(y.items()[by_value ? 1 : 0], cs);
    return reverse ? ky.less_than(kx) : kx.less_than(ky);
  });
  return Value::list(std::move(items));
}

// select/reject/selectattr/rejectattr.
Value select(const Value& v, const Args& a, bool keep, bool by_attr) {
  ValueList out;
  const Value attr = by_attr ? a.get("selectattr", 0, "attribute") : Value();
  const size_t test_at = by_attr ? 1 : 0;
  const bool has_test = a.positional.size() > test_at;
  const std::string test = has_test ? a.positional[test_at].to_string() : "";
  const Args test_args = shift(a, test_at + 1);
  for (const Value& item : v.iterate()) {
    const Value x = by_attr ? attribute_path(item, attr) : item;
    const bool pass = has_test ? apply_test(test, x, test_args) : x.truthy();
    if (pass == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value map_filter(const Value& v, const Args& a) {
  ValueList out;
  const Value attr = a.get_or(99, "attribute", Value::none());
  if (!attr.is_none()) {
    const Value def = a.get_or(99, "default", Value());
    for (const Value& item : v.iterate()) {
      Value x = attribute_path(item, attr);
      out.push_back(x.is_undefined() && !def.is_undefined() ? def : x);
    }
    return Value::list(std::move(out));
  }
  const std::string filter = a.get("map", 0, "filter").to_string();
  const Args rest = shift(a, 1);
  for (const Value& item : v.iterate()) out.push_back(apply_filter(filter, item, rest));
  return Value::list(std::move(out));
}

Value min_max(const Value& v, const Args& a, bool want_max) {
  const bool cs = a.get_or(0, "case_sensitive", Value(false)).truthy();
  const Value attr = a.get_or(1, "attribute", Value::none());
  const ValueList items = v.iterate();
  if (items.empty()) return Value::undefined("no items");
  const Value* best = &items[0];
  for (const Value& x : items) {
    const Value kx = sort_key(attr.is_none() ? x : attribute_path(x, attr), cs);
    const Value kb = sort_key(attr.is_none() ? *best : attribute_path(*best, attr), cs);
    if (want_max ? kb.less_than(kx) : kx.less_than(kb)) best = &x;
  }
  return *best;
}

Value to_int(const Value& v, const Value& def) {
  if (v.is_number()) return Value(v.as_int());
  if (v.is_string()) {
    const std::string s = py_strip(v.str(), Value::none(), 'b');
    try {
      size_t used = 0;
      const long long i = std::stoll(s, &used);
      if (used == s.size()) return Value(static_cast<int64_t>(i));
      const double d = std::stod(s, &used);
      if (used == s.size()) return Value(static_cast<int64_t>(d));
    } catch (const std::exception&) {
    }
  }
  return def;
}

Value to_float(const Value& v, const Value& def) {
  if (v.is_number()) return Value(v.as_number());
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string s = py_strip(v.str(), Value::none(), 'b');
      const double d = std::stod(s, &used);
      if (used == s.size()) return Value(d);
    } catch (const std::exception&) {
    }
  }
  return def;
}

Value round_filter(const Value& v, const Args& a) {
  const int64_t precision = a.get_or(0, "precision", Value(int64_t{0})).as_int();
  const std::string method = a.get_or(1, "method", Value("common")).to_string();
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_number() * scale;
  double r;
  if (method == "ceil") r = std::ceil(x);
  else if (method == "floor") r = std::floor(x);
  else r = std::nearbyint(x);  // Python's round: halves to even
  return Value(r / scale);
}

Value unique(const Value& v, const Args& a) {
  const bool cs = a.get_or(0, "case_sensitive", Value(false)).truthy();
  const Value attr = a.get_or(1, "attribute", Value::none());
  ValueList out, seen;
  for (const Value& x : v.iterate()) {
    const Value key = sort_key(attr.is_none() ? x : attribute_path(x, attr), cs);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(key); })) continue;
    seen.push_back(key);
    out.push_back(x);
  }
  return Value::list(std::move(out));
}

}  // namespace

Value apply_filter(const std::string& name, const Value& v, const Args& a) {
  if (name == "tojson") {
    const Value ind = a.get_or(0, "indent", Value::none());
    return Value(v.to_json(ind.is_none() ? -1 : static_cast<int>(ind.as_int()), a.get_or(99, "sort_keys", Value(false)).truthy()));
  }
  if (name == "trim") return Value(py_strip(v.to_string(), a.get_or(0, "chars", Value::none()), 'b'));
  if (name == "length" || name == "count") return Value(v.length());
  if (name == "string") return Value(v.to_string());
  if (name == "safe") return v;
  if (name == "upper") return Value(py_upper(v.to_string()));
  if (name == "lower") return Value(py_lower(v.to_string()));
  if (name == "capitalize") return Value(py_capitalize(v.to_string()));
  if (name == "title") return Value(py_title(v.to_string()));
  if (name == "default" || name == "d") {
    const bool boolean = a.get_or(1, "boolean", Value(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return a.get_or(0, "default_value", Value(std::string()));
    return v;
  }
  if (name == "first" || name == "last") {
    const ValueList items = v.iterate();
    if (items.empty()) return Value::undefined(name);
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    const Value attr = a.get_or(1, "attribute", Value::none());
    std::string out;
    const std::string sep = a.get_or(0, "d", Value(std::string())).to_string();
    const ValueList items = v.iterate();
    for (size_t i = 0; i < items.size(); ++i) {
      out += (i ? sep : "") + (attr.is_none() ? items[i] : attribute_path(items[i], attr)).to_string();
    }
    return Value(std::move(out));
  }
  if (name == "list") return Value::list(v.iterate());
  if (name == "items") return v.is_undefined() ? Value::list() : call_method(v, "items", Args{});
  if (name == "dictsort") return dictsort(v, a);
  if (name == "sort") return sorted(v, a);
  if (name == "reverse") {
    if (v.is_string()) return get_slice(v, Value(), Value(), Value(int64_t{-1}));
    ValueList items = v.iterate();
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "unique") return unique(v, a);
  if (name == "map") return map_filter(v, a);
  if (name == "select" || name == "reject") return select(v, a, name == "select", false);
  if (name == "selectattr" || name == "rejectattr") return select(v, a, name == "selectattr", true);
  if (name == "attr") return get_attribute(v, a.get("attr", 0, "name").to_string());
  if (name == "replace") {
    return Value(py_replace(v.to_string(), a.get("replace", 0, "old").to_string(), a.get("replace", 1, "new").to_string(),
                            a.get_or(2, "count", Value::none()).is_none() ? -1 : a.get_or(2, "count", Value()).as_int()));
  }
  if (name == "indent") {
    return Value(indent(v.to_string(), a.get_or(0, "width", Value(int64_t{4})), a.get_or(1, "first", Value(false)).truthy(),
                        a.get_or(2, "blank", Value(false)).truthy()));
  }
  if (name == "int") return to_int(v, a.get_or(0, "default", Value(int64_t{0})));
  if (name == "float") return to_float(v, a.get_or(0, "default", Value(0.0)));
  if (name == "abs") return v.is_float() ? Value(std::fabs(v.as_number())) : Value(std::abs(v.as_int()));
  if (name == "round") return round_filter(v, a);
  if (name == "escape" || name == "e") return Value(html_escape(v.to_string()));
  if (name == "max" || name == "min") return min_max(v, a, name == "max");
  if (name == "sum") {
    const Value attr = a.get_or(0, "attribute", Value::none());
    Value total = a.get_or(1, "start", Value(int64_t{0}));
    for (const Value& x : v.iterate()) total = binary_op("+", total, attr.is_none() ? x : attribute_path(x, attr));
    return total;
  }
  if (name == "wordcount") return Value(static_cast<int64_t>(py_split(v.to_string(), Value::none(), -1).size()));
  throw TemplateError(fmt::format("no filter named '{}'", name));
}

bool apply_test(const std::string& name, const Value& v, const Args& a) {
  const auto arg = [&]() { return a.get(name.c_str(), 0, "other"); };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict() && !v.is_namespace();
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict();
  if (name == "callable") return v.is_function();
  if (name == "sameas") {
    const Value o = arg();
    return v.kind() == o.kind() && (v.is_none() || v.is_bool() ? v.equals(o) : false);
  }
  if (name == "escaped") return false;
  if (name == "in") return contains(arg(), v);
  if (name == "eq" || name == "equalto" || name == "==") return v.equals(arg());
  if (name == "ne" || name == "!=") return !v.equals(arg());
  if (name == "lt" || name == "lessthan" || name == "<") return v.less_than(arg());
  if (name == "le" || name == "<=") return !arg().less_than(v);
  if (name == "gt" || name == "greaterthan" || name == ">") return arg().less_than(v);
  if (name == "ge" || name == ">=") return !v.less_than(arg());
  if (name == "odd" || name == "even") return (v.as_int() % 2 != 0) == (name == "odd");
  if (name == "divisibleby") return a.get("divisibleby", 0, "num").as_int() != 0 && v.as_int() % arg().as_int() == 0;
  if (name == "lower") return v.is_string() && py_lower(v.str()) == v.str();
  if (name == "upper") return v.is_string() && py_upper(v.str()) == v.str();
  throw TemplateError(fmt::format("no test named '{}'", name));
}

}  // namespace llms::jinja
