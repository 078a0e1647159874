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

CompileOutcome compile_spec(const GrammarSpec& spec, Engine& engine, const GrammarBudget& budget) {
  CompileOutcome o;
  std::shared_ptr<const Grammar> g;
  const std::string param = spec.tools ? "tools" : spec.constraint.param;
  if (spec.tools) {
    auto tg = tool_call_grammar(*spec.tools, spec.format);
    if (!tg.ok()) o.error = bad_request(tg.status().message(), "tools");
    if (tg.ok()) g = std::move(tg).value();
  } else {
    o.error = constraint_grammar(spec.constraint, &g);
  }
  if (o.error || !g) {
    o.result = o.error ? "invalid" : "ok";
    return o;
  }
  auto compiled = engine.compile_grammar(std::move(g), budget);
  if (compiled.ok()) {
    o.grammar = std::move(compiled).value();
    return o;
  }
  const StatusCode code = compiled.status().code();
  o.result = code == StatusCode::kCancelled ? "cancelled" : code == StatusCode::kResourceExhausted ? "over_budget" : "invalid";
  o.error = bad_request(fmt::format("'{}': {}", param, compiled.status().message()), param,
                        code == StatusCode::kResourceExhausted ? "grammar_budget_exceeded" : "");
  return o;
}

}  // namespace llms
