#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "grammar/json_schema_parts.h"

namespace llms {
namespace {

constexpr int kMaxDepth = 64;

constexpr std::array<std::string_view, 10> kAnnotations = {"title",   "description", "$schema",    "$id",      "$comment",
                                                           "default", "examples",    "deprecated", "readOnly", "writeOnly"};
constexpr std::array<std::string_view, 24> kSupported = {
    "type",     "properties", "required",  "additionalProperties", "enum",      "const",
    "items",    "prefixItems", "minItems", "maxItems",             "anyOf",     "oneOf",
    "$ref",     "$defs",      "definitions", "pattern",            "format",    "minLength",
    "maxLength", "minimum",   "maximum",   "exclusiveMinimum",     "exclusiveMaximum", "uniqueItems"};

bool is_annotation(std::string_view key) {
  return std::find(kAnnotations.begin(), kAnnotations.end(), key) != kAnnotations.end();
}
bool is_supported(std::string_view key) {
  return std::find(kSupported.begin(), kSupported.end(), key) != kSupported.end();
}

// Keys besides annotations and definitions, which constrain the value.
std::vector<std::string> constraint_keys(const SchemaJson& s) {
  std::vector<std::string> out;
  for (const auto& [k, v] : s.items()) {
    if (!is_annotation(k) && k != "$defs" && k != "definitions") out.push_back(k);
  }
  return out;
}

// JSON types as bits; integers are numbers.
enum TypeBit : unsigned { kNull = 1, kBool = 2, kObject = 4, kArray = 8, kString = 16, kNumber = 32, kAllTypes = 63 };

unsigned type_bit(const std::string& t) {
  if (t == "null") return kNull;
  if (t == "boolean") return kBool;
  if (t == "object") return kObject;
  if (t == "array") return kArray;
  if (t == "string") return kString;
  if (t == "number" || t == "integer") return kNumber;
  return 0;
}

unsigned type_of_value(const SchemaJson& v) {
  if (v.is_null()) return kNull;
  if (v.is_boolean()) return kBool;
  if (v.is_object()) return kObject;
  if (v.is_array()) return kArray;
  if (v.is_string()) return kString;
  return kNumber;
}

bool is_integer_value(const SchemaJson& v) {
  if (v.is_number_integer()) return true;
  return v.is_number_float() && std::floor(v.get<double>()) == v.get<double>();
}

}  // namespace

Status JsonSchemaParts::error(const std::string& path, const std::string& what) {
  return invalid_argument(fmt::format("json_schema: {} (at {})", what, path));
}

Result<std::optional<int64_t>> JsonSchemaParts::count(const SchemaJson& s, const char* key, const std::string& path) {
  if (!s.contains(key)) return std::optional<int64_t>();
  const SchemaJson& v = s.at(key);
  if (!v.is_number() || !is_integer_value(v) || v.get<double>() < 0 || v.get<double>() > 1e9) {
    return error(path, fmt::format("'{}' must be a non-negative integer", key));
  }
  return std::optional<int64_t>(static_cast<int64_t>(v.get<double>()));
}

Result<std::optional<double>> JsonSchemaParts::bound(const SchemaJson& s, const char* key, const std::string& path) {
  if (!s.contains(key)) return std::optional<double>();
  const SchemaJson& v = s.at(key);
  if (!v.is_number()) return error(path, fmt::format("'{}' must be a number", key));
  return std::optional<double>(v.get<double>());
}

GrammarExpr JsonSchemaParts::shared(const std::string& name, const std::function<GrammarExpr()>& body) {
  auto it = c_.shared_.find(name);
  if (it != c_.shared_.end()) return GrammarExpr::ref(it->second);
  const int32_t rule = b_.declare(name);
  c_.shared_.emplace(name, rule);  // before the body, which may refer to it
  b_.define(rule, body());
  return GrammarExpr::ref(rule);
}

GrammarExpr JsonSchemaParts::named(const std::string& path, GrammarExpr body) {
  std::string name;
  for (const char c : path.size() > 2 ? path.substr(2) : std::string("schema")) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (word) {
      name += c;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  if (name.empty() || name.size() > 60) name = name.empty() ? "schema" : name.substr(name.size() - 60);
  const int32_t rule = b_.declare(name);
  b_.define(rule, std::move(body));
  return GrammarExpr::ref(rule);
}

Status JsonSchemaParts::check_keywords(const SchemaJson& s, const std::string& path) {
  for (const auto& [k, v] : s.items()) {
    if (is_annotation(k)) {
      if (k == "$id" && path != "#") return error(path, "'$id' inside a schema is not supported");
      continue;
    }
    if (!is_supported(k)) return error(path, fmt::format("unsupported JSON Schema keyword '{}'", k));
    if (k == "uniqueItems" && !(v.is_boolean() && !v.get<bool>())) {
      return error(path, "unsupported JSON Schema keyword 'uniqueItems' (only false is accepted)");
    }
  }
  return ok_status();
}

Result<GrammarExpr> JsonSchemaParts::value(const SchemaJson& s, const std::string& path) {
  if (s.is_boolean()) {
    if (s.get<bool>()) return any_value();
    return error(path, "the schema false allows no value");
  }
  if (!s.is_object()) return error(path, "a schema must be an object or a boolean");
  if (!b_.charge(1 + static_cast<int64_t>(s.size()))) return b_.stop_status();
  LLMS_RETURN_IF_ERROR(check_keywords(s, path));
  if (c_.depth_ >= kMaxDepth) return error(path, fmt::format("the schema nests deeper than {} levels", kMaxDepth));
  ++c_.depth_;
  struct Leave {
    int& d;
    ~Leave() { --d; }
  } leave{c_.depth_};
  if (s.contains("$ref")) return ref(s, path);
  if (s.contains("const") || s.contains("enum")) return literal_values(s, path);
  if (s.contains("anyOf") || s.contains("oneOf")) return combination(s, path);
  if (constraint_keys(s).empty()) return any_value();
  std::vector<std::string> types;
  if (s.contains("type")) {
    const SchemaJson& t = s.at("type");
    if (t.is_string()) {
      types.push_back(t.get<std::string>());
    } else if (t.is_array() && !t.empty()) {
      for (const SchemaJson& x : t) {
        if (!x.is_string()) return error(path, "'type' must be a type name or a list of them");
        types.push_back(x.get<std::string>());
      }
    } else {
      return error(path, "'type' must be a type name or a list of them");
    }
  } else {
    // Every keyword constrains only values of its own type: any type may appear.
    types = {"null", "boolean", "object", "array", "string", "number"};
  }
  const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
  std::vector<GrammarExpr> alts;
  for (const std::string& t : types) {
    if (t == "integer" && has_number) continue;  // numbers include the integers
    LLMS_ASSIGN_OR_RETURN(GrammarExpr e, typed(s, t, path));
    alts.push_back(std::move(e));
  }
  return GrammarExpr::alt(std::move(alts));
}

Result<GrammarExpr> JsonSchemaParts::typed(const SchemaJson& s, const std::string& type, const std::string& path) {
  if (type == "null") return GrammarExpr::lit("null");
  if (type == "boolean") return GrammarExpr::alt({GrammarExpr::lit("true"), GrammarExpr::lit("false")});
  if (type == "string") return string(s, path);
  if (type == "integer") return integer(s, path);
  if (type == "number") return number(s, path);
  if (type == "array") return array(s, path);
  if (type == "object") return object(s, path);
  return error(path, fmt::format("unknown type '{}'", type));
}

Result<GrammarExpr> JsonSchemaParts::ref(const SchemaJson& s, const std::string& path) {
  for (const std::string& k : constraint_keys(s)) {
    if (k != "$ref") return error(path, fmt::format("'$ref' together with '{}' is not supported", k));
  }
  if (!s.at("$ref").is_string()) return error(path, "'$ref' must be a string");
  const std::string target = s.at("$ref").get<std::string>();
  if (auto it = c_.ref_rules_.find(target); it != c_.ref_rules_.end()) return GrammarExpr::ref(it->second);
  if (target.empty() || target[0] != '#') {
    return error(path, fmt::format("'$ref' '{}' is not supported: only references inside the schema (#...)", target));
  }
  const SchemaJson* node = nullptr;
  try {
    node = target == "#" ? c_.doc_ : &c_.doc_->at(SchemaJson::json_pointer(target.substr(1)));
  } catch (const std::exception&) {
    node = nullptr;
  }
  if (node == nullptr) return error(path, fmt::format("'$ref' '{}' points to nothing in the schema", target));
  const int32_t rule = b_.declare(target == "#" ? "root-ref" : target.substr(target.rfind('/') + 1));
  c_.ref_rules_.emplace(target, rule);  // before compiling: the target may refer to itself
  LLMS_ASSIGN_OR_RETURN(GrammarExpr body, value(*node, target));
  b_.define(rule, std::move(body));
  return GrammarExpr::ref(rule);
}

Result<GrammarExpr> JsonSchemaParts::literal_values(const SchemaJson& s, const std::string& path) {
  unsigned allowed = kAllTypes;
  for (const std::string& k : constraint_keys(s)) {
    if (k == "type") continue;
    if (k != "const" && k != "enum") return error(path, fmt::format("'{}' together with '{}' is not supported",
                                                                    s.contains("enum") ? "enum" : "const", k));
  }
  if (s.contains("const") && s.contains("enum")) return error(path, "'const' together with 'enum' is not supported");
  if (s.contains("type")) {
    allowed = 0;
    const SchemaJson& t = s.at("type");
    for (const SchemaJson& x : t.is_array() ? t : SchemaJson::array({t})) {
      if (x.is_string()) allowed |= type_bit(x.get<std::string>());
    }
  }
  const bool is_enum = s.contains("enum");
  const SchemaJson values = is_enum ? s.at("enum") : SchemaJson::array({s.at("const")});
  if (!values.is_array()) return error(path, "'enum' must be a list of values");
  if (values.empty()) return error(path, "'enum' is empty, so no value is allowed");
  std::vector<GrammarExpr> alts;
  for (const SchemaJson& v : values) {
    const bool integer_only = s.contains("type") && s.at("type") == "integer";
    if (!(type_of_value(v) & allowed) || (integer_only && !is_integer_value(v))) {
      return error(path, fmt::format("'{}' value {} does not have the schema's type", is_enum ? "enum" : "const", v.dump()));
    }
    alts.push_back(GrammarExpr::lit(v.dump()));
  }
  return GrammarExpr::alt(std::move(alts));
}

Result<GrammarExpr> JsonSchemaParts::combination(const SchemaJson& s, const std::string& path) {
  if (s.contains("anyOf") && s.contains("oneOf")) return error(path, "'anyOf' together with 'oneOf' is not supported");
  const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
  for (const std::string& k : constraint_keys(s)) {
    if (k != key) return error(path, fmt::format("'{}' together with '{}' is not supported", key, k));
  }
  const SchemaJson& branches = s.at(key);
  if (!branches.is_array() || branches.empty()) return error(path, fmt::format("'{}' must be a non-empty list", key));
  if (std::string_view(key) == "oneOf") LLMS_RETURN_IF_ERROR(check_disjoint(branches, path));
  std::vector<GrammarExpr> alts;
  for (size_t i = 0; i < branches.size(); ++i) {
    LLMS_ASSIGN_OR_RETURN(GrammarExpr e, value(branches[i], fmt::format("{}/{}/{}", path, key, i)));
    alts.push_back(std::move(e));
  }
  return GrammarExpr::alt(std::move(alts));
}

}  // namespace llms

namespace llms {

int32_t JsonSchemaCompiler::any_value() {
  JsonSchemaParts p(*this);
  return p.any_value().rule;
}

int32_t JsonSchemaCompiler::any_object() {
  JsonSchemaParts p(*this);
  return p.any_object().rule;
}

int32_t JsonSchemaCompiler::whitespace() {
  JsonSchemaParts p(*this);
  return p.ws().rule;
}

Result<int32_t> JsonSchemaCompiler::compile(const SchemaJson& schema, std::string_view name) {
  doc_ = &schema;
  ref_rules_.clear();
  depth_ = 0;
  const int32_t rule = b_.declare(name);
  ref_rules_.emplace("#", rule);
  JsonSchemaParts p(*this);
  LLMS_ASSIGN_OR_RETURN(GrammarExpr body, p.value(schema, "#"));
  b_.define(rule, std::move(body));
  return rule;
}

Result<Grammar> json_schema_grammar(const SchemaJson& schema, const GrammarLimits& limits, JsonWhitespace whitespace) {
  GrammarBuilder b(limits);
  JsonSchemaCompiler c(b, whitespace);
  LLMS_ASSIGN_OR_RETURN(const int32_t root, c.compile(schema, "root"));
  auto g = b.build(root);
  if (!g.ok()) return g.status().with_context("json_schema");
  return g;
}

Result<Grammar> json_object_grammar(JsonWhitespace whitespace) {
  GrammarBuilder b;
  JsonSchemaCompiler c(b, whitespace);
  const int32_t root = b.declare("root");
  b.define(root, GrammarExpr::ref(c.any_object()));
  return b.build(root);
}

}  // namespace llms
