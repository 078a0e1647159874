// The pieces of the JSON Schema compiler, internal to the grammar module:
// dispatch, $ref, enum/const and anyOf/oneOf (json_schema.cc); objects and arrays
// (json_schema_objects.cc); strings, numbers, formats and the plain JSON rules
// (json_schema_scalars.cc).
//
// Thread-safety: used by one thread, through one JsonSchemaCompiler.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "grammar/json_schema.h"

namespace llms {

class JsonSchemaParts {
 public:
  explicit JsonSchemaParts(JsonSchemaCompiler& c) : c_(c), b_(c.b_) {}

  // An expression for the values `s` allows; `path` is its JSON pointer ("#/...").
  Result<GrammarExpr> value(const SchemaJson& s, const std::string& path);

  Result<GrammarExpr> object(const SchemaJson& s, const std::string& path);
  Result<GrammarExpr> array(const SchemaJson& s, const std::string& path);
  Result<GrammarExpr> string(const SchemaJson& s, const std::string& path);
  Result<GrammarExpr> integer(const SchemaJson& s, const std::string& path);
  Result<GrammarExpr> number(const SchemaJson& s, const std::string& path);

  // Shared rules of plain JSON.
  // Whitespace where a JSON formatter puts it (json_schema.h): ws() after '{', '[' and
  // ',' and before '}' and ']'; colon_space() after ':' (nothing or one space); nothing
  // before ':' or ','.
  GrammarExpr ws();
  GrammarExpr colon_space();
  GrammarExpr any_value();
  GrammarExpr any_object();
  GrammarExpr any_string();
  GrammarExpr any_number();
  // The string content of a `format` (date, time, date-time, uuid, email).
  Result<GrammarExpr> format(const std::string& name, const std::string& path);
  // One character of a JSON string, raw or escaped.
  GrammarExpr string_char();

  // A rule made once per name (the builder shares it between uses).
  GrammarExpr shared(const std::string& name, const std::function<GrammarExpr()>& body);
  // A new rule named after `path` whose body is `body`.
  GrammarExpr named(const std::string& path, GrammarExpr body);

  static Status error(const std::string& path, const std::string& what);
  // A non-negative integer keyword, absent → nullopt.
  Result<std::optional<int64_t>> count(const SchemaJson& s, const char* key, const std::string& path);
  // A numeric keyword, absent → nullopt.
  Result<std::optional<double>> bound(const SchemaJson& s, const char* key, const std::string& path);

 private:
  Result<GrammarExpr> ref(const SchemaJson& s, const std::string& path);
  Result<GrammarExpr> literal_values(const SchemaJson& s, const std::string& path);
  Result<GrammarExpr> combination(const SchemaJson& s, const std::string& path);
  Result<GrammarExpr> typed(const SchemaJson& s, const std::string& type, const std::string& path);
  Status check_keywords(const SchemaJson& s, const std::string& path);
  Status check_disjoint(const SchemaJson& branches, const std::string& path);

  JsonSchemaCompiler& c_;
  GrammarBuilder& b_;
};

// Decimal integers in [lo, hi] (canonical: no leading zeros, no "-0").
GrammarExpr integer_range(int64_t lo, int64_t hi);
// The largest magnitude integers are written with (16 digits).
inline constexpr int64_t kMaxJsonInteger = 9'999'999'999'999'999;

}  // namespace llms
