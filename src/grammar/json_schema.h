// JSON Schema → grammar (a draft 2020-12 subset), and the json_object grammar.
//
// Supported keywords: type (a name or a list), properties, required,
// additionalProperties (true, false or a schema; absent means allowed, as the
// specification says), enum, const, items (a schema or false), prefixItems,
// minItems, maxItems, anyOf, oneOf (its branches must be provably disjoint: different
// types, different const/enum values, or a required property with different const
// values), $ref to "#" or a JSON pointer inside the document ($defs, definitions, ...),
// pattern (regex_parser.h, a search as the specification says), format (date, time,
// date-time, uuid, email), minLength, maxLength, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum (numbers). Annotations are accepted and carry no constraint:
// title, description, $schema, $id, $comment, default, examples, deprecated,
// readOnly, writeOnly. Every other keyword is refused with its name and where it is.
//
// What the output looks like: properties in the order the schema lists them, extra
// properties (when allowed) after them; whitespace only where a JSON formatter puts it
// (after '{', '[' and ',', before '}' and ']': each gap bounded as llama.cpp's
// json-schema-to-grammar bounds it, `| " " | "\n"{1,2} [ \t]{0,20}`; after ':' nothing or
// one space; before ':' and ',' nothing), or with JsonWhitespace::kCompact nothing at
// all; integers have at
// most 16 digits, fractions at most 16, exponents at most 2 (so output stays finite
// and a double can hold it); numbers with bounds are written without exponent;
// strings with escapes JSON allows (\uXXXX never a surrogate, so every \u escape is
// one character for minLength/maxLength). maxLength, maxItems above 4096 act as 4096.
//
// Thread-safety: pure functions; a JsonSchemaCompiler is used by one thread.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"

namespace llms {

// Schemas keep the order of their keys (properties are written in that order).
using SchemaJson = nlohmann::ordered_json;

// Whitespace between a JSON value's tokens: llama.cpp's bounded rule, or none.
enum class JsonWhitespace { kBounded, kCompact };

// Adds rules for schemas to a GrammarBuilder, so that front ends can embed JSON
// values in a larger grammar (tool calls).
class JsonSchemaCompiler {
 public:
  explicit JsonSchemaCompiler(GrammarBuilder& b, JsonWhitespace whitespace = JsonWhitespace::kBounded)
      : b_(b), whitespace_(whitespace) {}

  // A rule for the JSON values `schema` allows; $refs resolve inside `schema`.
  Result<int32_t> compile(const SchemaJson& schema, std::string_view name);
  // Rules of the plain JSON grammar.
  int32_t any_value();
  int32_t any_object();
  int32_t whitespace();

 private:
  friend class JsonSchemaParts;
  GrammarBuilder& b_;
  JsonWhitespace whitespace_;
  const SchemaJson* doc_ = nullptr;
  std::map<std::string, int32_t> ref_rules_;  // JSON pointer → rule
  std::map<std::string, int32_t> shared_;     // shared helper rules by name
  int depth_ = 0;
};

// A grammar for one JSON value valid under `schema` (no whitespace around it).
Result<Grammar> json_schema_grammar(const SchemaJson& schema, const GrammarLimits& limits = {},
                                    JsonWhitespace whitespace = JsonWhitespace::kBounded);
// A grammar for any JSON object (response_format json_object).
Result<Grammar> json_object_grammar(JsonWhitespace whitespace = JsonWhitespace::kBounded);

}  // namespace llms
