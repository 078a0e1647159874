// oneOf accepts a value that matches exactly one branch. A grammar can only offer
// the union of the branches, so oneOf is compiled like anyOf when no value can match
// two branches, which is checked conservatively here.
#include <fmt/format.h>

#include <set>

#include "grammar/json_schema_parts.h"

namespace llms {
namespace {

enum : unsigned { kNull = 1, kBool = 2, kObject = 4, kArray = 8, kString = 16, kNumber = 32, kAll = 63 };

// Follows $refs inside the document (bounded, in case of a cycle of references).
const SchemaJson& resolve(const SchemaJson& s, const SchemaJson& doc) {
  const SchemaJson* cur = &s;
  for (int i = 0; i < 16 && cur->is_object() && cur->contains("$ref") && cur->at("$ref").is_string(); ++i) {
    const std::string target = cur->at("$ref").get<std::string>();
    if (target == "#") {
      cur = &doc;
      continue;
    }
    if (target.empty() || target[0] != '#') break;
    try {
      cur = &doc.at(SchemaJson::json_pointer(target.substr(1)));
    } catch (const std::exception&) {
      break;
    }
  }
  return *cur;
}

unsigned value_type(const SchemaJson& v) {
  if (v.is_null()) return kNull;
  if (v.is_boolean()) return kBool;
  if (v.is_object()) return kObject;
  if (v.is_array()) return kArray;
  if (v.is_string()) return kString;
  return kNumber;
}

// The JSON types a schema may produce (an over-approximation).
unsigned types_of(const SchemaJson& raw, const SchemaJson& doc, int depth = 0) {
  const SchemaJson& s = resolve(raw, doc);
  if (!s.is_object() || depth > 16) return kAll;
  if (s.contains("const")) return value_type(s.at("const"));
  if (s.contains("enum") && s.at("enum").is_array()) {
    unsigned t = 0;
    for (const SchemaJson& v : s.at("enum")) t |= value_type(v);
    return t;
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (s.contains(key) && s.at(key).is_array()) {
      unsigned t = 0;
      for (const SchemaJson& b : s.at(key)) t |= types_of(b, doc, depth + 1);
      return t;
    }
  }
  if (!s.contains("type")) return kAll;
  unsigned t = 0;
  const SchemaJson& type = s.at("type");
  for (const SchemaJson& x : type.is_array() ? type : SchemaJson::array({type})) {
    if (!x.is_string()) return kAll;
    const std::string n = x.get<std::string>();
    t |= n == "null" ? kNull : n == "boolean" ? kBool : n == "object" ? kObject : n == "array" ? kArray
         : n == "string" ? kString : kNumber;
  }
  return t;
}

// The values of a const/enum schema, or none.
std::optional<std::vector<SchemaJson>> literal_set(const SchemaJson& raw, const SchemaJson& doc) {
  const SchemaJson& s = resolve(raw, doc);
  if (!s.is_object()) return std::nullopt;
  if (s.contains("const")) return std::vector<SchemaJson>{s.at("const")};
  if (s.contains("enum") && s.at("enum").is_array()) return std::vector<SchemaJson>(s.at("enum").begin(), s.at("enum").end());
  return std::nullopt;
}

bool values_disjoint(const std::vector<SchemaJson>& a, const std::vector<SchemaJson>& b) {
  for (const SchemaJson& x : a) {
    for (const SchemaJson& y : b) {
      if (x == y) return false;
    }
  }
  return true;
}

// Two object schemas that require a property whose literal values differ.
bool discriminated(const SchemaJson& ra, const SchemaJson& rb, const SchemaJson& doc) {
  const SchemaJson& a = resolve(ra, doc);
  const SchemaJson& b = resolve(rb, doc);
  auto required = [](const SchemaJson& s) {
    std::set<std::string> out;
    if (s.is_object() && s.contains("required") && s.at("required").is_array()) {
      for (const SchemaJson& r : s.at("required")) {
        if (r.is_string()) out.insert(r.get<std::string>());
      }
    }
    return out;
  };
  if (!a.is_object() || !b.is_object() || !a.contains("properties") || !b.contains("properties")) return false;
  const std::set<std::string> ra_set = required(a);
  const std::set<std::string> rb_set = required(b);
  for (const std::string& p : ra_set) {
    if (!rb_set.count(p) || !a.at("properties").contains(p) || !b.at("properties").contains(p)) continue;
    const auto va = literal_set(a.at("properties").at(p), doc);
    const auto vb = literal_set(b.at("properties").at(p), doc);
    if (va && vb && values_disjoint(*va, *vb)) return true;
  }
  return false;
}

}  // namespace

Status JsonSchemaParts::check_disjoint(const SchemaJson& branches, const std::string& path) {
  if (!branches.is_array()) return ok_status();
  const SchemaJson& doc = *c_.doc_;
  for (size_t i = 0; i < branches.size(); ++i) {
    for (size_t j = i + 1; j < branches.size(); ++j) {
      const SchemaJson& a = branches[i];
      const SchemaJson& b = branches[j];
      if ((types_of(a, doc) & types_of(b, doc)) == 0) continue;
      const auto la = literal_set(a, doc);
      const auto lb = literal_set(b, doc);
      if (la && lb && values_disjoint(*la, *lb)) continue;
      if (discriminated(a, b, doc)) continue;
      return error(path, fmt::format("'oneOf' branches {} and {} may match the same value, which a grammar cannot "
                                     "exclude; use 'anyOf', or make the branches differ in type, in const/enum "
                                     "values, or in a required property's const",
                                     i, j));
    }
  }
  return ok_status();
}

}  // namespace llms
