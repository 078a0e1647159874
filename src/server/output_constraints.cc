#include "server/output_constraints.h"

#include <fmt/format.h>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/regex_parser.h"

namespace llms {

std::optional<ApiError> constraint_grammar(const OutputConstraint& c, std::shared_ptr<const Grammar>* out) {
  Result<Grammar> g = invalid_argument("no constraint");
  switch (c.kind) {
    case ConstraintKind::kNone: *out = nullptr; return std::nullopt;
    case ConstraintKind::kJsonObject: g = json_object_grammar(c.whitespace); break;
    case ConstraintKind::kJsonSchema: g = json_schema_grammar(c.schema, {}, c.whitespace); break;
    case ConstraintKind::kGbnf: g = parse_gbnf(c.text); break;
    case ConstraintKind::kRegex: g = parse_regex(c.text); break;
  }
  if (!g.ok()) return bad_request(fmt::format("'{}': {}", c.param, g.status().message()), c.param);
  *out = std::make_shared<const Grammar>(std::move(g).value());
  return std::nullopt;
}

std::optional<ApiError> compile_constraint(const OutputConstraint& c, Engine& engine,
                                           std::shared_ptr<const CompiledGrammar>* out) {
  *out = nullptr;
  std::shared_ptr<const Grammar> g;
  if (auto e = constraint_grammar(c, &g)) return e;
  if (!g) return std::nullopt;
  auto compiled = engine.compile_grammar(std::move(g));
  if (!compiled.ok()) return bad_request(fmt::format("'{}': {}", c.param, compiled.status().message()), c.param);
  *out = std::move(compiled).value();
  return std::nullopt;
}

}  // namespace llms
