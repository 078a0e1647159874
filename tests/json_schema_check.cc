#include "json_schema_check.h"

#include <cmath>
#include <regex>

namespace llms::test {
namespace {

using Schema = nlohmann::ordered_json;
using Value = nlohmann::json;

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_integral(const Value& v) {
  return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
}

bool has_type(const Value& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") return v.is_number() && is_integral(v);
  return false;
}

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

bool valid_date(const std::string& s) {
  static const std::regex shape(R"(([0-9]{4})-([0-9]{2})-([0-9]{2}))");
  std::smatch m;
  if (!std::regex_match(s, m, shape)) return false;
  const int y = std::stoi(m[1]), mo = std::stoi(m[2]), d = std::stoi(m[3]);
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1) return false;
  return d <= days[mo - 1] + (mo == 2 && leap(y) ? 1 : 0);
}

bool valid_time(const std::string& s) {
  static const std::regex shape(R"(([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?(Z|z|[+-]([0-9]{2}):([0-9]{2})))");
  std::smatch m;
  if (!std::regex_match(s, m, shape)) return false;
  if (std::stoi(m[1]) > 23 || std::stoi(m[2]) > 59 || std::stoi(m[3]) > 60) return false;
  return !m[6].matched || (std::stoi(m[6]) <= 23 && std::stoi(m[7]) <= 59);
}

bool valid_format(const std::string& f, const std::string& s) {
  if (f == "date") return valid_date(s);
  if (f == "time") return valid_time(s);
  if (f == "date-time") {
    const size_t t = s.find_first_of("Tt");
    return t != std::string::npos && valid_date(s.substr(0, t)) && valid_time(s.substr(t + 1));
  }
  if (f == "uuid") {
    static const std::regex uuid("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    return std::regex_match(s, uuid);
  }
  if (f == "email") {
    static const std::regex email(R"([^@\s"]+@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,})");
    return std::regex_match(s, email);
  }
  return false;
}

class Checker {
 public:
  explicit Checker(const Schema& root) : root_(root) {}

  std::string check(const Schema& s, const Value& v, const std::string& at, int depth = 0) {
    if (depth > 64) return at + ": $ref recursion too deep";
    if (s.is_boolean()) return s.get<bool>() ? "" : at + ": schema false";
    if (s.contains("$ref")) return check(resolve(s["$ref"].get<std::string>()), v, at, depth + 1);
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_string()) ok = has_type(v, s["type"]);
      for (const auto& t : s["type"].is_array() ? s["type"] : Schema::array()) ok = ok || has_type(v, t);
      if (!ok) return at + ": not of type " + s["type"].dump();
    }
    if (s.contains("const") && Value::parse(s["const"].dump()) != v) return at + ": not the const";
    if (s.contains("enum")) {
      bool found = false;
      for (const auto& e : s["enum"]) found = found || Value::parse(e.dump()) == v;
      if (!found) return at + ": not in the enum";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      int passing = 0;
      for (const auto& b : s[key]) passing += check(b, v, at, depth + 1).empty();
      if (passing == 0) return at + ": no branch of " + key + " holds";
      if (std::string(key) == "oneOf" && passing > 1) return at + ": more than one branch of oneOf holds";
    }
    if (v.is_string()) return check_string(s, v.get<std::string>(), at);
    if (v.is_number()) return check_number(s, v.get<double>(), at);
    if (v.is_array()) return check_array(s, v, at, depth);
    if (v.is_object()) return check_object(s, v, at, depth);
    return "";
  }

 private:
  const Schema& resolve(const std::string& ref) {
    if (ref == "#") return root_;
    return root_.at(Schema::json_pointer(ref.substr(1)));
  }

  std::string check_string(const Schema& s, const std::string& str, const std::string& at) {
    const size_t n = code_points(str);
    if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return at + ": shorter than minLength";
    if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return at + ": longer than maxLength";
    if (s.contains("pattern") && !std::regex_search(str, std::regex(s["pattern"].get<std::string>(), std::regex::ECMAScript))) {
      return at + ": does not match the pattern";
    }
    if (s.contains("format") && !valid_format(s["format"], str)) return at + ": not a valid " + s["format"].get<std::string>();
    return "";
  }

  std::string check_number(const Schema& s, double x, const std::string& at) {
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return at + ": below minimum";
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return at + ": above maximum";
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return at + ": not above exclusiveMinimum";
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) return at + ": not below exclusiveMaximum";
    return "";
  }

  std::string check_array(const Schema& s, const Value& v, const std::string& at, int depth) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return at + ": fewer than minItems";
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return at + ": more than maxItems";
    const size_t prefix = s.contains("prefixItems") ? s["prefixItems"].size() : 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string where = at + "[" + std::to_string(i) + "]";
      std::string e;
      if (i < prefix) e = check(s["prefixItems"][i], v[i], where, depth + 1);
      else if (s.contains("items")) e = check(s["items"], v[i], where, depth + 1);
      if (!e.empty()) return e;
    }
    return "";
  }

  std::string check_object(const Schema& s, const Value& v, const std::string& at, int depth) {
    for (const auto& r : s.contains("required") ? s["required"] : Schema::array()) {
      if (!v.contains(r.get<std::string>())) return at + ": misses required '" + r.get<std::string>() + "'";
    }
    for (const auto& [k, x] : v.items()) {
      const std::string where = at + "." + k;
      std::string e;
      if (s.contains("properties") && s["properties"].contains(k)) e = check(s["properties"][k], x, where, depth + 1);
      else if (s.contains("additionalProperties")) e = check(s["additionalProperties"], x, where, depth + 1);
      if (!e.empty()) return e;
    }
    return "";
  }

  const Schema& root_;
};

}  // namespace

std::string schema_violation(const nlohmann::ordered_json& schema, const nlohmann::json& value) {
  return Checker(schema).check(schema, value, "$");
}

}  // namespace llms::test
