// The grammar half of tool_calls.h.
#include <fmt/format.h>

#include "grammar/json_schema.h"
#include "server/tool_calls.h"

namespace llms {
namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";

GrammarExpr lit(std::string_view s) { return GrammarExpr::lit(s); }
GrammarExpr seq(std::vector<GrammarExpr> v) { return GrammarExpr::seq(std::move(v)); }

ByteSet all_bytes() {
  ByteSet b;
  b.set_range(0, 255);
  return b;
}

// Any bytes that do not contain `t`: one rule per state of the Knuth-Morris-Pratt
// automaton of `t`, a byte class per state it may move to; reaching the end of `t`
// is the one move left out.
GrammarExpr text_without(GrammarBuilder& b, std::string_view t) {
  const size_t m = t.size();
  std::vector<size_t> fail(m, 0);
  for (size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && t[i] != t[k]) k = fail[k - 1];
    if (t[i] == t[k]) ++k;
    fail[i] = k;
  }
  auto next = [&](size_t j, uint8_t c) {
    while (j > 0 && static_cast<uint8_t>(t[j]) != c) j = fail[j - 1];
    return static_cast<uint8_t>(t[j]) == c ? j + 1 : size_t{0};
  };
  std::vector<int32_t> rules(m);
  for (size_t j = 0; j < m; ++j) rules[j] = b.declare(fmt::format("text-{}", j));
  for (size_t j = 0; j < m; ++j) {
    std::vector<ByteSet> to(m);
    for (int c = 0; c < 256; ++c) {
      const size_t k = next(j, static_cast<uint8_t>(c));
      if (k < m) to[k].set(static_cast<uint8_t>(c));
    }
    std::vector<GrammarExpr> alts{GrammarExpr::empty()};
    for (size_t k = 0; k < m; ++k) {
      if (!to[k].empty()) alts.push_back(seq({GrammarExpr::byte_set(to[k]), GrammarExpr::ref(rules[k])}));
    }
    b.define(rules[j], GrammarExpr::alt(std::move(alts)));
  }
  return GrammarExpr::ref(rules[0]);
}

// {"name": "f", "<args_key>": <arguments>} for each allowed function.
Result<GrammarExpr> any_call(GrammarBuilder& b, JsonSchemaCompiler& c, const ToolRequest& r, std::string_view args_key) {
  const GrammarExpr ws = GrammarExpr::ref(c.whitespace());
  std::vector<GrammarExpr> alts;
  for (const ToolDefinition& t : r.tools) {
    if (r.choice == ToolChoice::kNamed && t.name != r.named) continue;
    SchemaJson params = t.parameters;
    if (params.is_object() && !params.contains("type") && !params.contains("$ref") && !params.contains("anyOf") &&
        !params.contains("oneOf") && !params.contains("enum") && !params.contains("const")) {
      params["type"] = "object";  // OpenAI arguments are always an object
    }
    auto args = c.compile(params, "args-" + t.name);
    if (!args.ok()) return invalid_argument(fmt::format("function '{}': {}", t.name, args.status().message()));
    alts.push_back(seq({lit("{"), ws, lit("\"name\""), ws, lit(":"), ws, lit(SchemaJson(t.name).dump()), ws, lit(","), ws,
                        lit(SchemaJson(std::string(args_key)).dump()), ws, lit(":"), ws, GrammarExpr::ref(*args), ws,
                        lit("}")}));
  }
  const int32_t rule = b.declare("call");
  b.define(rule, GrammarExpr::alt(std::move(alts)));
  return GrammarExpr::ref(rule);
}

// The calls, as two parts: the format's marker and what follows it.
struct CallsExpr {
  std::string marker;  // "" for llama3
  GrammarExpr rest;
};

Result<CallsExpr> calls_expr(GrammarBuilder& b, JsonSchemaCompiler& c, const ToolRequest& r, ToolCallFormat f) {
  const GrammarExpr ws = GrammarExpr::ref(c.whitespace());
  switch (f) {
    case ToolCallFormat::kLlama3: {
      LLMS_ASSIGN_OR_RETURN(GrammarExpr call, any_call(b, c, r, "parameters"));
      return CallsExpr{"", std::move(call)};
    }
    case ToolCallFormat::kMistral: {
      LLMS_ASSIGN_OR_RETURN(GrammarExpr call, any_call(b, c, r, "arguments"));
      std::vector<GrammarExpr> list{GrammarExpr::optional(lit(" ")), lit("["), ws, call};
      if (r.parallel) list.push_back(GrammarExpr::star(seq({ws, lit(","), ws, call})));
      list.push_back(ws);
      list.push_back(lit("]"));
      return CallsExpr{std::string(kMistralMarker), seq(std::move(list))};
    }
    case ToolCallFormat::kHermes: {
      LLMS_ASSIGN_OR_RETURN(GrammarExpr call, any_call(b, c, r, "arguments"));
      const GrammarExpr body = seq({ws, call, ws, lit(kHermesClose)});
      if (!r.parallel) return CallsExpr{std::string(kHermesOpen), body};
      const GrammarExpr more = GrammarExpr::star(seq({ws, lit(kHermesOpen), body}));
      return CallsExpr{std::string(kHermesOpen), seq({body, more})};
    }
  }
  return internal_error("unhandled tool call format");
}

}  // namespace

Result<std::shared_ptr<const Grammar>> tool_call_grammar(const ToolRequest& r, ToolCallFormat f) {
  GrammarBuilder b;
  const int32_t root = b.declare("root");
  JsonSchemaCompiler c(b);
  LLMS_ASSIGN_OR_RETURN(CallsExpr calls, calls_expr(b, c, r, f));
  const GrammarExpr only_calls = seq({lit(calls.marker), calls.rest});
  if (r.choice != ToolChoice::kAuto) {
    b.define(root, only_calls);
  } else if (f == ToolCallFormat::kLlama3) {
    // Free text that does not start with '{', or a call.
    ByteSet not_brace;
    for (int x = 0; x < 256; ++x) {
      if (x != '{') not_brace.set(static_cast<uint8_t>(x));
    }
    const GrammarExpr text = seq({GrammarExpr::byte_set(not_brace), GrammarExpr::star(GrammarExpr::byte_set(all_bytes()))});
    b.define(root, GrammarExpr::alt({GrammarExpr::empty(), text, only_calls}));
  } else {
    const GrammarExpr text = text_without(b, calls.marker);
    b.define(root, seq({text, GrammarExpr::optional(only_calls)}));
  }
  auto g = b.build(root);
  if (!g.ok()) return invalid_argument("tools: " + g.status().message());
  return std::make_shared<const Grammar>(std::move(g).value());
}

}  // namespace llms
