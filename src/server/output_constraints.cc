#include "server/output_constraints.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/clock.h"

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/regex_parser.h"

namespace llms {

namespace {

// The 400 for a front end's or a compile's refusal of `param`'s grammar, and the
// compile's result for metrics.
std::optional<ApiError> refusal(const Status& s, const std::string& param, std::string_view* result) {
  const StatusCode code = s.code();
  *result = code == StatusCode::kCancelled           ? "cancelled"
            : code == StatusCode::kResourceExhausted ? "over_budget"
                                                     : "invalid";
  return bad_request(fmt::format("'{}': {}", param, s.message()), param,
                     code == StatusCode::kResourceExhausted ? "grammar_budget_exceeded" : "");
}

}  // namespace

Result<std::shared_ptr<const Grammar>> constraint_grammar(const OutputConstraint& c, WorkMeter* meter) {
  GrammarLimits limits;
  limits.meter = meter;
  Result<Grammar> g = invalid_argument("no constraint");
  switch (c.kind) {
    case ConstraintKind::kNone: return std::shared_ptr<const Grammar>();
    case ConstraintKind::kJsonObject: g = json_object_grammar(c.whitespace); break;
    case ConstraintKind::kJsonSchema: g = json_schema_grammar(c.schema, limits, c.whitespace); break;
    case ConstraintKind::kGbnf: g = parse_gbnf(c.text, limits); break;
    case ConstraintKind::kRegex: g = parse_regex(c.text, limits); break;
  }
  if (!g.ok()) return g.status();
  return std::make_shared<const Grammar>(std::move(g).value());
}

CompileOutcome compile_spec(const GrammarSpec& spec, Engine& engine, const GrammarBudget& budget) {
  CompileOutcome o;
  const std::string param = spec.tools ? "tools" : spec.constraint.param;
  // The front end and the builder run under the compile budget; the compile gets what
  // they left of it.
  const Stopwatch watch;
  WorkMeter meter(budget.compile_work, budget.compile_seconds, budget.cancel);
  GrammarLimits limits;
  limits.meter = &meter;
  auto g = spec.tools ? tool_call_grammar(*spec.tools, spec.format, limits)
                      : constraint_grammar(spec.constraint, &meter);
  if (!g.ok()) {
    o.error = refusal(g.status(), param, &o.result);
    return o;
  }
  if (!g.value()) return o;
  GrammarBudget rest = budget;
  if (rest.compile_work > 0) rest.compile_work = std::max<int64_t>(1, rest.compile_work - meter.used());
  if (rest.compile_seconds > 0) rest.compile_seconds = std::max(1e-3, rest.compile_seconds - watch.elapsed_s());
  auto compiled = engine.compile_grammar(std::move(g).value(), rest);
  if (compiled.ok()) {
    o.grammar = std::move(compiled).value();
    return o;
  }
  o.error = refusal(compiled.status(), param, &o.result);
  return o;
}

}  // namespace llms
